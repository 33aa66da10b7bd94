"""tests/cuda: the CUDA backend. Tests that need a GPU take the `gpu` fixture and are skipped
where `quadrants._core.cuda_available()` is false (CI); the fallback and error-path tests run
everywhere. tests/codegen is put on sys.path so test_codegen_gpu.py can rerun its tests."""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
CODEGEN = os.path.join(os.path.dirname(HERE), "codegen")
if CODEGEN not in sys.path:
    sys.path.insert(0, CODEGEN)


def _cuda_available():
    try:
        from quadrants import _core

        return bool(_core.cuda_available())
    except Exception:
        return False


HAVE_GPU = _cuda_available()


@pytest.fixture
def gpu():
    """Skips the test without a usable CUDA device."""
    if not HAVE_GPU:
        pytest.skip("no CUDA device")
