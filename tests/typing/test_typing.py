"""Type checkers accept a typical kernel file (tests/typing/typical_kernels.py).

mypy runs with quadrants.mypy_plugin and with the package's own modules silenced, as for an
installed package; the mypy tests are skipped when mypy is not installed (`make setup` installs
it into .venv). The file itself is also run, so every
annotation it uses is one the compiler accepts.
"""

import importlib.util
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TYPICAL = os.path.join("tests", "typing", "typical_kernels.py")

MYPY_CONFIG = """\
[mypy]
plugins = quadrants.mypy_plugin
[mypy-quadrants.*]
follow_imports = silent
"""


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_typical_file_runs():
    result = subprocess.run(
        [sys.executable, TYPICAL], cwd=ROOT, env=_env(), capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed")
def test_mypy_accepts_typical_file(tmp_path):
    config = tmp_path / "mypy.ini"
    config.write_text(MYPY_CONFIG)
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(config), "--no-incremental",
         "--cache-dir", str(tmp_path / "cache"), TYPICAL],
        cwd=ROOT, env=_env(), capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success: no issues found" in result.stdout


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed")
def test_mypy_names_the_call_form_annotation(tmp_path):
    """A call in an annotation (``x: qd.types.ndarray(...)``) is rejected by mypy, as
    docs/typing.md says; the subscript form of the same type is accepted."""
    source = tmp_path / "call_form.py"
    source.write_text(
        "import quadrants as qd\n\n\n"
        "@qd.kernel\n"
        "def k(x: qd.types.ndarray(dtype=qd.f32, ndim=1)) -> None:\n"
        "    x[0] = 1.0\n\n\n"
        "@qd.kernel\n"
        "def j(x: qd.types.NDArray[qd.f32, 1]) -> None:\n"
        "    x[0] = 1.0\n"
    )
    config = tmp_path / "mypy.ini"
    config.write_text(MYPY_CONFIG)
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(config), "--no-incremental",
         "--cache-dir", str(tmp_path / "cache"), str(source)],
        cwd=ROOT, env=_env(), capture_output=True, text=True,
    )
    assert "call_form.py:5: error: Invalid type comment or annotation" in result.stdout
    assert "Found 1 error" in result.stdout, result.stdout
