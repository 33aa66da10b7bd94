"""GLSL golden tests: every tests/codegen/glsl/golden/NAME.qir holds one kernel; the shaders
qir_to_glsl makes of it, one section per task, must equal NAME.expected exactly (`pytest
--update-golden` rewrites the expected files), and each must pass glslangValidator when it is on
PATH. The options are the defaults of QdGlslOptions except the device features that a first
line `# OPTIONS: name=0, ...` sets."""

import pathlib
import re

import pytest

from quadrants._core import _testing

from glsl_helpers import assert_valid, kernel_name

GOLDEN_DIR = pathlib.Path(__file__).resolve().parent / "golden"
CASES = sorted(GOLDEN_DIR.glob("*.qir"))
OPTIONS_RE = re.compile(r"#\s*OPTIONS:\s*(.*?)\s*$")


def read_text(path):
    with open(path, encoding="utf-8", newline="") as f:
        return f.read()


def render(result):
    """The text compared with the expected file: the kernel's facts, then each shader."""
    parts = [
        f"// fields: {result['fields']}\n// tmps_size: {result['tmps_size']}\n"
        f"// nresults: {result['nresults']}\n// asserts: {result['asserts']}\n"
    ]
    for task in result["tasks"]:
        parts.append(
            f"// ===== task {task['name']}: block_dim {task['block_dim']}, serial "
            f"{task['is_serial']}, reduces {task['reduces']}\n{task['source']}"
        )
    return "\n".join(parts)


def options_of(text):
    first = text.splitlines()[0] if text else ""
    m = OPTIONS_RE.fullmatch(first)
    if not m:
        return None
    return {k.strip(): int(v) for k, v in (item.split("=") for item in m.group(1).split(","))}


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.name)
def test_glsl_golden(path, update_golden):
    text = read_text(path)
    result = _testing.qir_to_glsl(text, kernel_name(text), options_of(text))
    assert_valid(result)
    got = render(result)
    expected = path.with_suffix(".expected")
    if update_golden or not expected.exists():
        with open(expected, "w", encoding="utf-8", newline="") as f:
            f.write(got)
        return
    assert got == read_text(expected)
