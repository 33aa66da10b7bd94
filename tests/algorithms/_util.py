"""Helpers shared by the qd.algorithms tests: dtypes, inputs, NumPy references, guarded buffers."""

import numpy as np

import quadrants as qd

NP = {
    qd.i8: np.int8, qd.i16: np.int16, qd.i32: np.int32, qd.i64: np.int64,
    qd.u8: np.uint8, qd.u16: np.uint16, qd.u32: np.uint32, qd.u64: np.uint64,
    qd.f16: np.float16, qd.f32: np.float32, qd.f64: np.float64,
}
SCALARS_32 = (qd.i32, qd.u32, qd.f32)
SCALARS_64 = (qd.i64, qd.u64, qd.f64)
SCALARS = SCALARS_32 + SCALARS_64

GUARD = 16  # slots past a buffer's required size that must keep their sentinel
SIMT_MAX_N = 65537  # the CPU SIMT emulation runs 256-fiber blocks: no larger n there

nd1 = qd.types.ndarray(ndim=1)


def is_float(dt):
    return np.issubdtype(NP[dt], np.floating)


def scratch_dtype(dt):
    """The scratch element type of reduce / scan for element type dt."""
    return qd.u64 if dt in SCALARS_64 else qd.u32


def compiled_kernels(kernel):
    """The compiled code of each specialization of a kernel (CompiledKernel on the CPU,
    DeviceKernel on a GPU), in the order they were compiled."""
    return [x for e in kernel._compiled.values() for x in (e if isinstance(e, tuple) else (e,))
            if type(x).__name__ in ("CompiledKernel", "DeviceKernel")]


def kernel_tasks(qir):
    """The kinds of the tasks of the kernel in a compiled module's QIR (the first declaration;
    the template library after it has tasks of its own)."""
    tasks = []
    for line in qir.splitlines()[1:]:
        if line == "}":
            break
        if line.startswith("  task "):
            tasks.append(line.split()[1])
    return tasks


def plain(mode):
    """Whether the mode runs the plain code (one thread per tile): the plain CPU, and Vulkan
    devices whose subgroups are not the 32 lanes the block code is written for."""
    return mode == "cpu-plain" or qd.simt.subgroup.group_size() != 32


def skip_big(mode, n):
    import pytest

    if mode == "cpu-simt" and n > SIMT_MAX_N:
        pytest.skip(f"n={n} is too slow for the CPU SIMT emulation")


def pick_n(n, rng, hi):
    """n itself, or for n == "rand" a random count in [2, hi]."""
    return int(rng.integers(2, hi, endpoint=True)) if n == "rand" else n


def count(n):
    """A live count as ops with an `n: i32` parameter read it: count[0]."""
    return np.array([n], np.int32)


# ---- buffers whose untouched parts can be checked


def sentinel(np_dtype, size):
    """An array of `size` elements, every byte 0xA5 (never an identity or a likely result)."""
    return np.full(size * np.dtype(np_dtype).itemsize, 0xA5, np.uint8).view(np_dtype).copy()


def guarded_scratch(slots, dt=qd.u32):
    """A scratch array of exactly `slots` slots plus GUARD sentinel slots after them."""
    return sentinel(NP[dt], slots + GUARD)


def assert_untouched(a, start, what="buffer"):
    """Every element of a[start:] still holds the sentinel bytes."""
    tail = np.ascontiguousarray(a[start:]).view(np.uint8)
    bad = np.flatnonzero(tail != 0xA5)
    assert bad.size == 0, (
        f"{what}: wrote past its {start} elements (first bad element "
        f"{start + bad[0] // a.dtype.itemsize} of {len(a)})"
    )


# ---- inputs


def random_values(rng, dt, n):
    """n values of dt: integers over the whole range, floats of mixed sign and magnitude."""
    t = NP[dt]
    if np.issubdtype(t, np.integer):
        info = np.iinfo(t)
        return rng.integers(info.min, info.max, size=n, dtype=t, endpoint=True)
    return (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(t)


def random_keys(rng, dt, n, distinct):
    """n keys of dt drawn from `distinct` values spread over the type's range (floats: with
    negatives, -0.0, 0.0, +-inf), so that equal keys are common."""
    t = NP[dt]
    if np.issubdtype(t, np.integer):
        info = np.iinfo(t)
        pool = rng.integers(info.min, info.max, size=distinct, dtype=t, endpoint=True)
        pool[: min(3, distinct)] = np.array([info.min, 0, info.max], dtype=t)[: min(3, distinct)]
    else:
        pool = (rng.standard_normal(distinct) * 10.0 ** rng.integers(-3, 4, distinct)).astype(t)
        special = np.array([-np.inf, -0.0, 0.0, np.inf, -1.0, 1.0], dtype=t)
        pool[: min(len(special), distinct)] = special[: min(len(special), distinct)]
    return pool[rng.integers(0, distinct, n)]


# ---- NumPy references


def identity(op, np_dtype):
    t = np.dtype(np_dtype)
    if op == "add":
        return t.type(0)
    if np.issubdtype(t, np.floating):
        return t.type(np.inf if op == "min" else -np.inf)
    info = np.iinfo(t)
    return t.type(info.max if op == "min" else info.min)


def assert_sum_close(got, exact, scale, dt, what):
    """Float sums: the device adds in another order, so allow a relative error against the sum
    of the magnitudes (`scale`), the bound every summation order meets."""
    rtol = 1e-5 if dt in (qd.f32, qd.f16) else 1e-12
    err = np.abs(np.asarray(got, np.float64) - exact)
    bad = np.flatnonzero(err > rtol * scale)
    assert bad.size == 0, (
        f"{what}: {bad.size} wrong, first at {bad[0]}: got {np.asarray(got).reshape(-1)[bad[0]]}, "
        f"expected {np.asarray(exact).reshape(-1)[bad[0]]}"
    )


def assert_equal_exact(got, expected, what):
    """Element-wise equality of the bits (so -0.0 != 0.0 and NaN == the same NaN)."""
    got, expected = np.ascontiguousarray(got), np.ascontiguousarray(expected)
    assert got.shape == expected.shape and got.dtype == expected.dtype, (got, expected)
    gb, eb = got.view(f"u{got.dtype.itemsize}"), expected.view(f"u{got.dtype.itemsize}")
    bad = np.flatnonzero(gb != eb)
    assert bad.size == 0, (
        f"{what}: {bad.size} of {got.size} wrong, first at {bad[0]}: got {got[bad[0]]!r}, "
        f"expected {expected[bad[0]]!r}"
    )


def check_reduce(op, dt, a, got, what):
    """got (a scalar) == op over a (the live elements), the identity for an empty a."""
    t = NP[dt]
    if op == "add" and is_float(dt):
        assert_sum_close([got], np.sum(a, dtype=np.float64),
                         np.sum(np.abs(a), dtype=np.float64), dt, what)
        return
    if a.size == 0:
        exp = identity(op, t)
    elif op == "add":
        exp = np.add.reduce(a, dtype=t)  # integers wrap as on the device
    else:
        exp = getattr(np, op)(a)
    assert_equal_exact(np.array([got], t), np.array([exp], t), what)


def check_exclusive_scan(op, dt, a, got, what):
    """got[i] == op over a[0:i] for every i < len(a); got[0] the identity."""
    t = NP[dt]
    n = a.size
    if n == 0:
        return
    if op == "add" and is_float(dt):
        exact = np.concatenate([[0.0], np.cumsum(a, dtype=np.float64)[:-1]])
        scale = np.concatenate([[0.0], np.cumsum(np.abs(a), dtype=np.float64)[:-1]])
        assert got[0] == 0, f"{what}: out[0] = {got[0]}, not 0"
        assert_sum_close(got, exact, scale, dt, what)
        return
    ufunc = {"add": np.add, "min": np.minimum, "max": np.maximum}[op]
    incl = ufunc.accumulate(a, dtype=t)
    exp = np.concatenate([np.array([identity(op, t)], t), incl[:-1]])
    assert_equal_exact(got, exp, what)
