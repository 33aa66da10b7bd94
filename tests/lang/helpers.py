"""Shared data helpers of the kernel-language tests: fresh random inputs (no fixed seed)."""

import numpy as np

import quadrants as qd

rng = np.random.default_rng()

INT_TYPES = [qd.i8, qd.i16, qd.i32, qd.i64, qd.u8, qd.u16, qd.u32, qd.u64]
FLOAT_TYPES = [qd.f16, qd.f32, qd.f64]
ALL_TYPES = INT_TYPES + FLOAT_TYPES + [qd.u1]

NP = {
    qd.i8: np.int8,
    qd.i16: np.int16,
    qd.i32: np.int32,
    qd.i64: np.int64,
    qd.u8: np.uint8,
    qd.u16: np.uint16,
    qd.u32: np.uint32,
    qd.u64: np.uint64,
    qd.f16: np.float16,
    qd.f32: np.float32,
    qd.f64: np.float64,
    qd.u1: np.bool_,
}

BITS = {
    qd.i8: 8,
    qd.i16: 16,
    qd.i32: 32,
    qd.i64: 64,
    qd.u8: 8,
    qd.u16: 16,
    qd.u32: 32,
    qd.u64: 64,
    qd.f16: 16,
    qd.f32: 32,
    qd.f64: 64,
    qd.u1: 1,
}


def name(t):
    for k, v in vars(qd).items():
        if v is t and len(k) <= 3:
            return k
    return str(t)


def is_float(t):
    return t in FLOAT_TYPES


def is_signed(t):
    return t in (qd.i8, qd.i16, qd.i32, qd.i64)


def rand(t, n, lo=None, hi=None):
    """n random values of qd type t: ints over the whole range (or [lo, hi]), floats of mixed
    magnitude and sign."""
    d = NP[t]
    if t is qd.u1:
        return rng.integers(0, 2, size=n).astype(np.bool_)
    if np.issubdtype(d, np.integer):
        info = np.iinfo(d)
        lo = info.min if lo is None else lo
        hi = info.max if hi is None else hi
        return rng.integers(lo, hi, size=n, dtype=d, endpoint=True)
    scale = 100.0 if t is qd.f16 else 1e6
    v = rng.standard_normal(size=n) * rng.choice([1e-3, 1.0, scale], size=n)
    return v.astype(d)


def promoted(a, b):
    """Spec 0.4 promoted_type."""
    fa, fb = is_float(a), is_float(b)
    if fa and not fb:
        return a
    if fb and not fa:
        return b
    if fa and fb:
        return a if BITS[a] >= BITS[b] else b
    if BITS[a] != BITS[b]:
        return a if BITS[a] > BITS[b] else b
    if a is b:
        return a
    return a if not is_signed(a) else b


def marker_line(path, marker):
    """`path:line` of the one line of file `path` that holds `marker` (a comment on the line an
    error should name); lines calling marker_line are not counted."""
    with open(path) as f:
        hits = [n for n, text in enumerate(f, 1) if marker in text and "marker_line(" not in text]
    assert len(hits) == 1, (marker, hits)
    return f"{path}:{hits[0]}"


def approx_f32_math(dtype):
    """Whether f32 division, rsqrt, log, sin and cos of `dtype` are the GPU's approximate
    instructions: f32 on CUDA under fast_math (the default), as in the reference
    (docs/language.md gives the bounds)."""
    return dtype is qd.f32 and qd.cfg.arch is qd.cuda and qd.cfg.fast_math
