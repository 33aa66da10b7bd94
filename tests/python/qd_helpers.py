"""Helpers of the Python-layer tests: fresh random data for every primitive type (no fixed seed:
each run sees new values) and the `requires_compiler` marker."""

import numpy as np
import pytest

import quadrants as qd
from quadrants import _core

# Tests that compile kernels; skipped only with a core that has no compile_kernel.
requires_compiler = pytest.mark.skipif(
    not hasattr(_core, "compile_kernel"), reason="quadrants._core.compile_kernel is not available"
)

DTYPE_NAMES = ["u1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "f32", "f64"]

rng = np.random.default_rng()


def random_array(dtype, shape):
    """A NumPy array of `shape` holding random values of qd dtype `dtype`: integers over the
    type's whole range, floats of mixed magnitude and sign."""
    np_dtype = dtype.np_dtype
    if dtype is qd.u1:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if np.issubdtype(np_dtype, np.integer):
        info = np.iinfo(np_dtype)
        return rng.integers(info.min, info.max, size=shape, dtype=np_dtype, endpoint=True)
    scale = 100.0 if dtype is qd.f16 else 1e6
    values = rng.standard_normal(size=shape) * rng.choice([1e-3, 1.0, scale], size=shape)
    return values.astype(np_dtype)


def random_scalar(dtype):
    """One random value of `dtype` as the Python number a Python-scope read returns."""
    value = random_array(dtype, ())[()]
    return float(value) if dtype.is_real else int(value)
