"""What an installation reports about itself, and what the build says when LLVM is missing."""

import os
import subprocess
import sys

import pytest

import quadrants
from quadrants import _core

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(*args, env=None):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, **(env or {})}, timeout=120)


def test_diagnose_names_version_llvm_and_archs():
    result = run("-m", "quadrants")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert f"quadrants {quadrants.__version__}" in out
    assert f"llvm      {_core.build_info()['llvm_version']}" in out
    assert _core.build_info()["llvm_version"].startswith("19.")
    assert "  cpu     yes:" in out
    cuda_line = next(line for line in out.splitlines() if line.startswith("  cuda"))
    assert ("yes:" in cuda_line) == _core.cuda_available()


def test_unknown_subcommand_prints_usage():
    result = run("-m", "quadrants", "nonsense")
    assert result.returncode == 2 and "usage: python -m quadrants" in result.stderr


def test_build_without_llvm_19_says_what_is_missing(tmp_path):
    fake = tmp_path / "llvm-config"
    fake.write_text("#!/bin/sh\necho 14.0.6\n")
    fake.chmod(0o755)
    result = run("setup.py", "--name", env={"LLVM_CONFIG": str(fake)})
    assert result.returncode != 0
    assert "needs LLVM 19" in result.stderr and "LLVM 14" in result.stderr
    assert "apt-get install llvm-19-dev" in result.stderr


def test_runtime_dependencies_are_declared():
    tomllib = pytest.importorskip("tomllib")
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    assert any(dep.startswith("numpy") for dep in project["dependencies"])
    assert {"torch", "cupy"} <= set(project["optional-dependencies"])
    assert os.path.exists(os.path.join(ROOT, "quadrants", "py.typed"))
