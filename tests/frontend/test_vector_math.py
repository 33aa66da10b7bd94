"""Loops calling exp/log/sin are vectorized on x86-64 Linux through glibc's vector math
library (libmvec), instead of one scalar libm call per element."""

import ctypes.util
import glob
import platform

import numpy as np
import pytest

import quadrants as qd

pytestmark = pytest.mark.skipif(
    platform.machine() != "x86_64" or platform.system() != "Linux" or not ctypes.util.find_library("mvec"),
    reason="libmvec is a glibc x86-64 library",
)


def test_exp_loop_calls_vector_math(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    qd.init(arch=qd.cpu, print_kernel_llvm_ir_optimized=True)

    @qd.kernel
    def k(x: qd.types.ndarray(dtype=qd.f32, ndim=1), y: qd.types.ndarray(dtype=qd.f32, ndim=1)):
        for i in range(x.shape[0]):
            y[i] = qd.exp(-x[i] * x[i]) + qd.log(x[i] + 2.0)

    x = np.random.default_rng().standard_normal(1 << 12).astype(np.float32)
    y = np.zeros_like(x)
    k(x, y)
    np.testing.assert_allclose(y, np.exp(-x * x) + np.log(x + 2), rtol=2e-6, atol=1e-6)
    dumps = glob.glob("quadrants_kernel_cpu_llvm_ir_optimized_*.ll")
    assert dumps
    text = "".join(open(path).read() for path in dumps)
    assert "_ZGV" in text  # a libmvec vector variant (e.g. _ZGVdN8v_expf) is called
