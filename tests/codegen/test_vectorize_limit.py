"""LLVM's vectorizers skip functions of more than QD_LLVM_VECTORIZE_MAX_INSTS (20000) IR
instructions (csrc/codegen/llvm/llvm_internal.h): such a task is marked `noimplicitfloat` before
the optimizer, while a small task's loop is still vectorized. Both compute the right values."""

import glob
import re
import warnings

import numpy as np

import quadrants as qd

STEPS = 4500  # unrolled: about 27000 LLVM instructions in one task


def _largest_function_attributes(text):
    """The attribute text of the function with the longest body in LLVM IR `text`."""
    bodies = re.findall(r"^define [^\n]*#(\d+) \{\n(.*?)^\}", text, re.M | re.S)
    group_id = max(bodies, key=lambda b: len(b[1]))[0]
    return re.search(r"^attributes #" + group_id + r" = \{([^}]*)\}", text, re.M).group(1)


def test_large_task_skips_vectorizers(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    qd.init(arch=qd.cpu, print_kernel_llvm_ir_optimized=True)

    @qd.kernel
    def small(x: qd.types.ndarray(dtype=qd.f32, ndim=1), y: qd.types.ndarray(dtype=qd.f32, ndim=1)):
        for i in range(x.shape[0]):
            y[i] = x[i] * 2.0 + 1.0

    @qd.kernel
    def large(x: qd.types.ndarray(dtype=qd.f32, ndim=1)) -> qd.f32:
        acc = 0.0
        for _ in range(1):
            for j in qd.static(range(STEPS)):
                acc = acc * 0.5 + x[j % 16]
        return acc

    rng = np.random.default_rng()
    x = rng.standard_normal(1 << 12).astype(np.float32)
    y = np.zeros_like(x)
    small(x, y)
    np.testing.assert_allclose(y, x.astype(np.float64) * 2 + 1, rtol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the static loop is longer than unrolling_limit
        got = large(x[:16])
    want = 0.0
    for j in range(STEPS):
        want = want * 0.5 + float(x[j % 16])
    assert abs(got - want) <= 1e-4 * max(1.0, abs(want))

    dumps = sorted(glob.glob("quadrants_kernel_cpu_llvm_ir_optimized_*.ll"))
    assert len(dumps) == 2
    small_ir, large_ir = (open(path).read() for path in dumps)
    assert "noimplicitfloat" not in _largest_function_attributes(small_ir)
    assert re.search(r"<\d+ x float>", small_ir)  # the loop is vectorized
    assert "noimplicitfloat" in _largest_function_attributes(large_ir)
