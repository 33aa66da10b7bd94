"""A bounded run of the differential fuzzer (scripts/diff_reference.py) against the reference
implementation: fixed-seed generated kernels run under the reference package and under
Quadrants, and every disagreement that is not a documented difference (docs/language.md,
"Differences from the reference") fails the test, as does a crash or a hang on our side.

The reference runs in its own Python: QD_REFERENCE_PYTHON names it, else /tmp/refvenv/bin/python
when it exists (`python3 -m venv /tmp/refvenv && /tmp/refvenv/bin/pip install quadrants==1.3.3`);
without one the test is skipped. QD_DIFF_CASES sets the number of cases (default 200).
`make diff-reference` installs the reference into build/refvenv and runs this test."""

import importlib.util
import os

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(os.path.dirname(os.path.dirname(HERE)), "scripts", "diff_reference.py")


def reference_python():
    path = os.environ.get("QD_REFERENCE_PYTHON") or "/tmp/refvenv/bin/python"
    return path if os.access(path, os.X_OK) else None


@pytest.mark.skipif(reference_python() is None, reason="no reference implementation (QD_REFERENCE_PYTHON)")
def test_no_undocumented_disagreement():
    spec = importlib.util.spec_from_file_location("diff_reference", SCRIPT)
    diff = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(diff)
    cases = int(os.environ.get("QD_DIFF_CASES", "200"))
    counts = diff.run(reference_python(), os.sys.executable, [3 * 1000003 + k for k in range(cases)],
                      timeout=60.0)
    summary = diff.summary(counts)
    assert sum(counts.values()) == cases, summary
    assert not any(cat.startswith("ours-") for cat in counts), summary
    assert diff.undocumented(counts) == 0, summary + "\nreplay: python scripts/diff_reference.py --seed 3"
