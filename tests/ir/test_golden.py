"""IR golden tests: every tests/ir/**/NAME.qir is one case.

A case file is textual IR with directives in comment lines:

    # RUN: instantiate,inline     (first line only) passes to run, in order; absent = none
    # ERROR: 7: substring         the case must fail: a Quadrants compilation error whose
                                  lineno is 7 and whose message contains `substring`

A case without ERROR lines runs the passes (verifying before and after each) or, without RUN,
verifies and reprints the text. When NAME.expected exists, the output must equal it exactly
(`pytest --update-golden` rewrites it instead); otherwise the case is a round trip and the output
must equal the input. Every .expected file must itself round-trip through the parser and printer.
"""

import pathlib
import re

import pytest

import quadrants as qd
from quadrants._core import _testing

IR_DIR = pathlib.Path(__file__).resolve().parent
RUN_RE = re.compile(r"#\s*RUN:\s*(.*?)\s*$")
ERROR_RE = re.compile(r"^\s*#\s*ERROR:\s*(\d+):\s*(.*?)\s*$", re.MULTILINE)

CASES = sorted(IR_DIR.rglob("*.qir"))
EXPECTED = sorted(IR_DIR.rglob("*.expected"))


def case_id(path):
    return path.relative_to(IR_DIR).as_posix()


def read_text(path):
    # newline="" keeps the bytes as they are: the comparison is exact.
    with open(path, encoding="utf-8", newline="") as f:
        return f.read()


def write_text(path, text):
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)


def run_case(text, passes, filename):
    """What the case produces: the printed module after the passes (or after verification)."""
    if passes:
        return _testing.run_passes(text, passes, filename=filename, verify=True)
    _testing.verify(text, filename=filename)
    return _testing.parse_print(text, filename=filename)


@pytest.mark.parametrize("path", CASES, ids=case_id)
def test_golden(path, update_golden):
    text = read_text(path)
    name = case_id(path)
    lines = text.splitlines()
    run = RUN_RE.fullmatch(lines[0]) if lines else None
    passes = run.group(1) if run else ""
    errors = [(int(line), substring) for line, substring in ERROR_RE.findall(text)]

    if errors:
        with pytest.raises(qd.QuadrantsCompilationError) as info:
            run_case(text, passes, name)
        for line, substring in errors:
            assert info.value.lineno == line, str(info.value)
            assert substring in str(info.value)
        return

    output = run_case(text, passes, name)
    expected_path = path.with_suffix(".expected")
    if expected_path.exists():
        if update_golden:
            write_text(expected_path, output)
        else:
            assert output == read_text(expected_path)
    elif passes and update_golden:
        write_text(expected_path, output)
    else:
        assert output == text, f"{name} does not round-trip (add {expected_path.name}?)"


@pytest.mark.parametrize("path", EXPECTED, ids=case_id)
def test_expected_round_trips(path):
    text = read_text(path)
    assert _testing.parse_print(text, filename=case_id(path)) == text
