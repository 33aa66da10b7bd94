"""qd.math (spec/api.md 0.15): every scalar function in kernels against NumPy on fresh random
inputs (no fixed seed), f32 and f64 (and integers where the function takes them); bit operations
on i32/u32/i64/u64 with edge cases; isinf/isnan on inf/NaN with and without fast_math; the
Python-scope forms on plain numbers; and the vector/matrix items, which must raise
NotImplementedError until qd.Vector exists."""

import inspect
import math

import numpy as np
import pytest
from qd_helpers import requires_compiler

import quadrants as qd

rng = np.random.default_rng()
N = 10_000

FLOATS = [qd.f32, qd.f64]
INTS = [qd.i32, qd.u32, qd.i64, qd.u64]
NP = {qd.f32: np.float32, qd.f64: np.float64, qd.i32: np.int32, qd.u32: np.uint32}
NP.update({qd.i64: np.int64, qd.u64: np.uint64})


@pytest.fixture(autouse=True)
def init(arch):
    qd.init(arch=getattr(qd, arch))
    yield
    qd.reset()


def ids(types):
    return [str(t) for t in types]


def floats(dtype, n=N, scales=(1e-3, 1.0, 1e3)):
    """n random floats of mixed sign and magnitude."""
    values = rng.standard_normal(n) * rng.choice(scales, size=n)
    return values.astype(NP[dtype])


def ints(dtype, n=N):
    """n random integers over the whole range of `dtype`."""
    info = np.iinfo(NP[dtype])
    return rng.integers(info.min, info.max, size=n, dtype=NP[dtype], endpoint=True)


def eps(dtype):
    return float(np.finfo(NP[dtype]).eps)


def approx_f32_math(dtype):
    """On CUDA under fast_math (the default), f32 division, rsqrt, log, sin and cos are the GPU's
    approximate instructions, as in the reference (docs/language.md gives the bounds)."""
    return dtype is qd.f32 and qd.cfg.arch is qd.cuda and qd.cfg.fast_math


# lg2.approx / sin.approx / cos.approx: absolute error at most 2**-21.41 (log for x in [0.5, 2],
# sin / cos for x in [-pi, pi]); beyond, log's stays absolute and sin's / cos's grows in
# proportion to |x|
APPROX_ABS = 2.0**-21


def assert_close(got, want, bound, what):
    """|got - want| <= bound, element by element, with the worst offender in the message."""
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    err = np.abs(got - want)
    bad = ~(err <= bound)
    if bad.any():
        i = int(np.argmax(np.where(bad, err, -1.0)))
        raise AssertionError(
            f"{what}: {int(bad.sum())} of {bad.size} elements off; e.g. [{i}] got {got[i]!r} "
            f"want {want[i]!r} (bound {np.broadcast_to(bound, got.shape)[i]!r})"
        )


# --- kernels: one per function, specialised on the arrays' dtypes ---

Arr = qd.types.ndarray(ndim=1)
Arr2 = qd.types.ndarray(ndim=2)


@qd.kernel
def k_mix(x: Arr, y: Arr, a: Arr, out: Arr):
    for i in range(x.shape[0]):
        out[i] = qd.math.mix(x[i], y[i], a[i])


@qd.kernel
def k_clamp(x: Arr, lo: Arr, hi: Arr, out: Arr):
    for i in range(x.shape[0]):
        out[i] = qd.math.clamp(x[i], lo[i], hi[i])


@qd.kernel
def k_step(edge: Arr, x: Arr, out: Arr):
    for i in range(x.shape[0]):
        out[i] = qd.math.step(edge[i], x[i])


@qd.kernel
def k_fract(x: Arr, out: Arr):
    for i in range(x.shape[0]):
        out[i] = qd.math.fract(x[i])


@qd.kernel
def k_smoothstep(e0: Arr, e1: Arr, x: Arr, out: Arr):
    for i in range(x.shape[0]):
        out[i] = qd.math.smoothstep(e0[i], e1[i], x[i])


@qd.kernel
def k_sign(x: Arr, out: Arr):
    for i in range(x.shape[0]):
        out[i] = qd.math.sign(x[i])


@qd.kernel
def k_log2(x: Arr, out: Arr):
    for i in range(x.shape[0]):
        out[i] = qd.math.log2(x[i])


@qd.kernel
def k_degrees(x: Arr, out: Arr):
    for i in range(x.shape[0]):
        out[i] = qd.math.degrees(x[i])


@qd.kernel
def k_radians(x: Arr, out: Arr):
    for i in range(x.shape[0]):
        out[i] = qd.math.radians(x[i])


@qd.kernel
def k_mod(x: Arr, y: Arr, out: Arr):
    for i in range(x.shape[0]):
        out[i] = qd.math.mod(x[i], y[i])


@qd.kernel
def k_mod_low_bit(x: Arr, y: Arr, out: Arr):
    # `& 1` compiles only when mod of integers stays an integer.
    for i in range(x.shape[0]):
        out[i] = qd.math.mod(x[i], y[i]) & 1


@qd.kernel
def k_inf_nan(x: Arr, is_inf: Arr, is_nan: Arr):
    for i in range(x.shape[0]):
        is_inf[i] = qd.math.isinf(x[i])
        is_nan[i] = qd.math.isnan(x[i])


@qd.kernel
def k_unary_builtins(x: Arr, out: Arr2):
    # Columns of `out` (2-D): sqrt exp log sin cos tan tanh asin acos atan2 floor ceil round pow.
    for i in range(x.shape[0]):
        v = x[i]
        out[i, 0] = qd.math.sqrt(qd.abs(v))
        out[i, 1] = qd.math.exp(v)
        out[i, 2] = qd.math.log(qd.abs(v))
        out[i, 3] = qd.math.sin(v)
        out[i, 4] = qd.math.cos(v)
        out[i, 5] = qd.math.tan(v)
        out[i, 6] = qd.math.tanh(v)
        out[i, 7] = qd.math.asin(qd.math.clamp(v, -1.0, 1.0))
        out[i, 8] = qd.math.acos(qd.math.clamp(v, -1.0, 1.0))
        out[i, 9] = qd.math.atan2(v, 0.5)
        out[i, 10] = qd.math.floor(v)
        out[i, 11] = qd.math.ceil(v)
        out[i, 12] = qd.math.round(v)
        out[i, 13] = qd.math.pow(qd.abs(v), 1.5)
        out[i, 14] = qd.math.min(v, 0.25)
        out[i, 15] = qd.math.max(v, 0.25)


@qd.kernel
def k_bits(x: Arr, pop: Arr, lead: Arr, first: Arr, type_probe: Arr2):
    for i in range(x.shape[0]):
        pop[i] = qd.math.popcnt(x[i])
        lead[i] = qd.math.clz(x[i])
        first[i] = qd.math.ffs(x[i])
        # (r << 31) >> 31 is -(r & 1) only for an i32 r: 64-bit results keep the bit positive,
        # u32 results shift it back logically.
        p = qd.math.popcnt(x[i])
        c = qd.math.clz(x[i])
        f = qd.math.ffs(x[i])
        type_probe[i, 0] = (p << 31) >> 31
        type_probe[i, 1] = (c << 31) >> 31
        type_probe[i, 2] = (f << 31) >> 31


@qd.kernel
def k_fns(mask: Arr, base: Arr, offset: Arr, out: Arr, probe: Arr2):
    for i in range(mask.shape[0]):
        r = qd.math.fns(mask[i], base[i], offset[i])
        out[i] = r
        probe[i, 0] = r >> 31  # 1 for 0xFFFFFFFF when r is u32 (logical shift), -1 for i32
        probe[i, 1] = r + 1  # 0 for 0xFFFFFFFF when r is 32-bit, 2**32 when 64-bit


# --- scalar functions ---


@requires_compiler
@pytest.mark.parametrize("fast_math", [True, False])
@pytest.mark.parametrize("dtype", FLOATS, ids=ids(FLOATS))
def test_mix(dtype, fast_math):
    qd.init(arch=qd.cfg.arch, fast_math=fast_math)
    x, y = floats(dtype), floats(dtype)
    a = rng.uniform(-0.5, 1.5, N).astype(NP[dtype])
    a[:4] = [0.0, 1.0, 0.5, 0.25]
    out = np.zeros(N, NP[dtype])
    k_mix(x, y, a, out)
    xd, yd, ad = (v.astype(np.float64) for v in (x, y, a))
    # fast_math may reassociate x*(1-a) + y*a (e.g. into x + a*(y-x)): allow a few ulps of
    # every intermediate term
    bound = 4 * eps(dtype) * (np.abs(xd) + np.abs(yd)) * (1.0 + np.abs(ad))
    assert_close(out, xd * (1.0 - ad) + yd * ad, bound, f"mix {dtype}")
    if not fast_math:  # exact ends: a = 0 gives x, a = 1 gives y (reassociation may lose them)
        np.testing.assert_array_equal(out[:2], [x[0], y[1]])


@requires_compiler
@pytest.mark.parametrize("dtype", FLOATS + INTS, ids=ids(FLOATS + INTS))
def test_clamp(dtype):
    make = floats if dtype in FLOATS else ints
    x, p, q = make(dtype), make(dtype), make(dtype)
    lo, hi = np.minimum(p, q), np.maximum(p, q)
    x[:3] = [lo[0], hi[1], lo[2]]
    out = np.zeros(N, NP[dtype])
    k_clamp(x, lo, hi, out)
    np.testing.assert_array_equal(out, np.minimum(np.maximum(x, lo), hi))


@requires_compiler
@pytest.mark.parametrize("dtype", FLOATS + [qd.i32, qd.i64], ids=ids(FLOATS + [qd.i32, qd.i64]))
def test_step(dtype):
    make = floats if dtype in FLOATS else ints
    edge, x = make(dtype), make(dtype)
    x[:5] = edge[:5]  # x == edge gives 1
    out = np.zeros(N, np.float64)
    k_step(edge, x, out)
    np.testing.assert_array_equal(out, np.where(x >= edge, 1.0, 0.0))


@requires_compiler
@pytest.mark.parametrize("dtype", FLOATS, ids=ids(FLOATS))
def test_fract(dtype):
    x = floats(dtype)
    x[:8] = [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 1e-30, -1e-30]
    out = np.zeros(N, NP[dtype])
    k_fract(x, out)
    np.testing.assert_array_equal(out, x - np.floor(x))
    assert ((out >= 0) & (out <= 1)).all()


@requires_compiler
@pytest.mark.parametrize("dtype", FLOATS, ids=ids(FLOATS))
def test_smoothstep(dtype):
    e0 = floats(dtype)
    e1 = (e0 + np.abs(floats(dtype)) + 0.5).astype(NP[dtype])
    x = (e0 + (e1 - e0) * rng.uniform(-0.5, 1.5, N)).astype(NP[dtype])
    x[:2], x[2:4] = e0[:2], e1[2:4]
    out = np.zeros(N, NP[dtype])
    k_smoothstep(e0, e1, x, out)
    e0d, e1d, xd = (v.astype(np.float64) for v in (e0, e1, x))
    t = np.clip((xd - e0d) / (e1d - e0d), 0.0, 1.0)
    want = t * t * (3.0 - 2.0 * t)
    # the quotient is computed from operands rounded to dtype: allow a few ulps of t's argument
    rel = 16 * eps(dtype) * (1.0 + (np.abs(xd) + np.abs(e0d)) / (e1d - e0d))
    assert_close(out, want, rel, f"smoothstep {dtype}")
    assert ((out >= 0) & (out <= 1)).all()
    np.testing.assert_array_equal(out[:4], [0.0, 0.0, 1.0, 1.0])


@requires_compiler
@pytest.mark.parametrize("dtype", FLOATS + [qd.i32, qd.i64], ids=ids(FLOATS + [qd.i32, qd.i64]))
def test_sign(dtype):
    if dtype in FLOATS:
        x = floats(dtype)
        x[:4] = [0.0, -0.0, np.inf, -np.inf]
    else:
        x = ints(dtype)
        x[:3] = [0, 1, -1]
    out = np.zeros(N, np.float64)
    k_sign(x, out)
    np.testing.assert_array_equal(out, np.sign(x).astype(np.float64))


@requires_compiler
def test_sign_of_nan_is_zero():
    out = np.zeros(2, np.float64)
    k_sign(np.array([np.nan, -np.nan], np.float32), out)
    np.testing.assert_array_equal(out, [0.0, 0.0])


@requires_compiler
@pytest.mark.parametrize("dtype", FLOATS, ids=ids(FLOATS))
def test_log2(dtype):
    x = np.abs(floats(dtype, scales=(1e-20, 1e-3, 1.0, 1e3, 1e20)))
    powers = np.array([2.0**k for k in range(-60, 61)], NP[dtype])
    x[: powers.size] = powers
    x[powers.size] = 1.0
    out = np.zeros(N, NP[dtype])
    k_log2(x, out)
    want = np.log2(x.astype(np.float64))
    # log(x) / ln 2 with ln 2 a Python float: a default_fp (f32) constant even in f64 code, as in
    # the reference (docs/language.md), so f64 results are within f32 rounding of the constant
    bound = 4 * max(eps(dtype), float(np.finfo(np.float32).eps)) * np.abs(want)
    if approx_f32_math(dtype):
        bound = bound + APPROX_ABS / math.log(2)
    assert_close(out, want, bound, f"log2 {dtype}")


@requires_compiler
@pytest.mark.parametrize("dtype", FLOATS + [qd.i32], ids=ids(FLOATS + [qd.i32]))
def test_degrees_radians(dtype):
    if dtype in FLOATS:
        x = floats(dtype)
    else:
        x = rng.integers(-100000, 100000, N, dtype=np.int32)
    out_type = NP[dtype] if dtype in FLOATS else np.float32  # integers give default_fp
    deg, rad = np.zeros(N, np.float64), np.zeros(N, np.float64)
    k_degrees(x, deg)
    k_radians(x, rad)
    xd = x.astype(np.float64)
    # the factor 180/pi is a Python float: a default_fp (f32) constant in f64 code too, as in
    # the reference (docs/language.md)
    e = float(np.finfo(np.float32).eps)
    assert_close(deg, np.degrees(xd), 2 * e * np.abs(np.degrees(xd)), f"degrees {dtype}")
    assert_close(rad, np.radians(xd), 2 * e * np.abs(np.radians(xd)), f"radians {dtype}")


@requires_compiler
@pytest.mark.parametrize("dtype", FLOATS, ids=ids(FLOATS))
def test_mod_floats(dtype):
    y = floats(dtype)
    y[y == 0] = 1
    # |x / y| stays below 1000 so that floor(x / y) is meaningful in the type
    x = (y * rng.uniform(-1000, 1000, N)).astype(NP[dtype])
    edge_x = [-10.0, 10.0, -0.5, 0.5, 7.0, -7.0, 0.0, 6.0]
    edge_y = [3.0, -3.0, 1.0, 1.0, 2.0, 2.0, 5.0, 3.0]
    x[:8], y[:8] = edge_x, edge_y
    out = np.zeros(N, NP[dtype])
    k_mod(x, y, out)
    np.testing.assert_array_equal(out[:8], [2.0, -2.0, 0.5, 0.5, 1.0, 1.0, 0.0, 0.0])
    # x - y * floor(x / y): equal to np.mod up to rounding, and up to one period y where x / y
    # rounds across an integer
    xd, yd, od = (v.astype(np.float64) for v in (x, y, out))
    diff = od - np.mod(xd, yd)
    diff -= yd * np.round(diff / yd)
    assert_close(diff, 0.0, 8 * eps(dtype) * (np.abs(xd) + np.abs(yd)), f"mod {dtype}")
    # the result takes the sign of y (Python semantics), within rounding
    slack = 8 * eps(dtype) * (np.abs(xd) + np.abs(yd))
    assert (od * np.sign(yd) >= -slack).all()


@requires_compiler
@pytest.mark.parametrize("dtype", [qd.i32, qd.i64], ids=ids([qd.i32, qd.i64]))
def test_mod_ints(dtype):
    x, y = ints(dtype), ints(dtype)
    small = rng.integers(-20, 20, N).astype(NP[dtype])
    y[: N // 2] = small[: N // 2]  # small divisors too
    y[y == 0] = 7
    info = np.iinfo(NP[dtype])
    edges = [(-10, 3, 2), (10, -3, -2), (-10, -3, -1), (10, 3, 1), (0, 5, 0), (info.min, -1, 0)]
    edges += [(info.min, 3, int(info.min) % 3), (info.max, -7, int(info.max) % -7)]
    for i, (a, b, _) in enumerate(edges):
        x[i], y[i] = a, b
    out = np.zeros(N, NP[dtype])
    k_mod(x, y, out)
    want = np.array([int(a) % int(b) for a, b in zip(x, y)], NP[dtype])  # Python's %
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(out[: len(edges)], [r for _, _, r in edges])
    low = np.zeros(N, NP[dtype])
    k_mod_low_bit(x, y, low)
    np.testing.assert_array_equal(low, want & 1)


SPECIAL = [np.inf, -np.inf, np.nan, -np.nan, 0.0, -0.0, 1.0, -1.0]


def special_floats(dtype):
    info = np.finfo(NP[dtype])
    edge = SPECIAL + [float(info.max), float(-info.max), float(info.tiny)]
    edge += [float(info.smallest_subnormal)]
    x = floats(dtype, scales=(1e-30, 1.0, 1e30))
    x[: len(edge)] = edge
    # NaNs with other payloads and signs
    bits = np.array([0x7FC00001, 0xFFC00000, 0x7F800001, 0xFFFFFFFF], np.uint32)
    if dtype is qd.f64:
        bits = np.array([0x7FF8000000000001, 0xFFF8000000000000, 0x7FF0000000000001], np.uint64)
    x[len(edge) : len(edge) + bits.size] = bits.view(NP[dtype])
    # inf and nan scattered at random places
    where = rng.integers(0, N, 200)
    x[where] = rng.choice([np.inf, -np.inf, np.nan], 200)
    return x


@requires_compiler
@pytest.mark.parametrize("fast_math", [True, False])
@pytest.mark.parametrize("dtype", FLOATS, ids=ids(FLOATS))
def test_isinf_isnan(dtype, fast_math):
    qd.init(arch=qd.cfg.arch, fast_math=fast_math)
    x = special_floats(dtype)
    is_inf, is_nan = np.zeros(N, np.int32), np.zeros(N, np.int32)
    k_inf_nan(x, is_inf, is_nan)
    np.testing.assert_array_equal(is_inf, np.isinf(x).astype(np.int32))
    np.testing.assert_array_equal(is_nan, np.isnan(x).astype(np.int32))


@requires_compiler
def test_isinf_of_large_f64_is_false():
    # tested in the value's own type: a finite f64 beyond the f32 range is not infinite
    x = np.array([1e300, -1e300, 3.5e38, np.inf], np.float64)
    is_inf, is_nan = np.zeros(4, np.int32), np.zeros(4, np.int32)
    k_inf_nan(x, is_inf, is_nan)
    np.testing.assert_array_equal(is_inf, [0, 0, 0, 1])
    np.testing.assert_array_equal(is_nan, [0, 0, 0, 0])


@requires_compiler
@pytest.mark.parametrize("dtype", INTS, ids=ids(INTS))
def test_isinf_isnan_of_integers(dtype):
    x = ints(dtype, 1000)
    is_inf, is_nan = np.ones(1000, np.int32), np.ones(1000, np.int32)
    k_inf_nan(x, is_inf, is_nan)
    assert not is_inf.any() and not is_nan.any()


REEXPORTED = "sqrt exp log sin cos tan tanh asin acos atan2 floor ceil round pow min max".split()


@requires_compiler
@pytest.mark.parametrize("dtype", FLOATS, ids=ids(FLOATS))
def test_reexported_builtins(dtype):
    x = floats(dtype, scales=(1e-3, 0.1, 1.0, 5.0))
    out = np.zeros((N, 16), NP[dtype])
    k_unary_builtins(x, out)
    xd = x.astype(np.float64)
    c = np.clip(xd, -1.0, 1.0)
    want = [
        np.sqrt(np.abs(xd)),
        np.exp(xd),
        np.log(np.abs(xd)),
        np.sin(xd),
        np.cos(xd),
        np.tan(xd),
        np.tanh(xd),
        np.arcsin(c),
        np.arccos(c),
        np.arctan2(xd, 0.5),
        np.floor(xd),
        np.ceil(xd),
        np.sign(xd) * np.floor(np.abs(xd) + 0.5),  # round: halves away from zero
        np.abs(xd) ** 1.5,
        np.minimum(xd, 0.25),
        np.maximum(xd, 0.25),
    ]
    for col, (name, w) in enumerate(zip(REEXPORTED, want)):
        # tan near its poles: the error scales with its derivative 1 + tan^2
        scale = np.abs(w)
        if name == "tan":
            scale = scale + w * w + 1
        if name in ("sin", "cos"):
            scale = scale + 1
        bound = 8 * eps(dtype) * scale
        if approx_f32_math(dtype) and name == "log":
            bound = bound + APPROX_ABS
        if approx_f32_math(dtype) and name in ("sin", "cos"):
            bound = bound + APPROX_ABS * (1.0 + np.abs(xd))
        assert_close(out[:, col], w, bound, f"qd.math.{name} {dtype}")


def test_reexports_are_the_builtins():
    for name in REEXPORTED:
        assert getattr(qd.math, name) is getattr(qd, name)
    assert qd.math.popcnt._qd_builtin == "popcnt" and qd.math.clz._qd_builtin == "clz"
    assert not hasattr(qd, "popcnt") and not hasattr(qd, "mod") and not hasattr(qd, "log2")


@requires_compiler
@pytest.mark.parametrize("dtype", FLOATS, ids=ids(FLOATS))
def test_constants_in_kernels(dtype):
    @qd.kernel
    def constants(out: qd.types.ndarray(ndim=1)):
        out[0] = qd.math.pi
        out[1] = qd.math.e
        out[2] = qd.math.inf
        out[3] = -qd.math.inf
        out[4] = qd.math.nan

    out = np.zeros(5, NP[dtype])
    constants(out)
    # Python floats are default_fp (f32) constants in kernels, f64 stores included (reference)
    constants_f32 = np.array([math.pi, math.e, np.inf, -np.inf], np.float32)
    np.testing.assert_array_equal(out[:4], constants_f32.astype(NP[dtype]))
    assert np.isnan(out[4])


def test_constants():
    assert qd.math.pi == math.pi and qd.math.e == math.e
    assert qd.math.inf == math.inf and math.isnan(qd.math.nan)


# --- bit operations ---


def as_dtype(values, dtype):
    """Python ints wrapped into the range of integer `dtype` (two's complement), as an array."""
    info = np.iinfo(NP[dtype])
    wrapped = []
    for v in values:
        v = int(v) & ((1 << info.bits) - 1)
        if info.min < 0 and v >> (info.bits - 1):
            v -= 1 << info.bits
        wrapped.append(v)
    return np.array(wrapped, dtype=NP[dtype])


def bit_inputs(dtype):
    """Random values of `dtype` plus 0, 1, -1, every power of two and its neighbours, the
    extremes, and values with only two bits set (so that ffs sees high positions too)."""
    info = np.iinfo(NP[dtype])
    width = info.bits
    edges = [0, 1, -1, 2, 3, info.max, info.min, info.max - 1, info.min + 1]
    edges += [1 << k for k in range(width)]
    edges += [(1 << k) - 1 for k in range(1, width + 1)]
    edges += [(1 << k) + 1 for k in range(1, width)]
    edges += [-(1 << k) for k in range(width)]
    few = rng.integers(0, width, (1000, 2))
    edges += [(1 << int(a)) | (1 << int(b)) for a, b in few]
    x = ints(dtype, 4096)
    x[: len(edges)] = as_dtype(edges, dtype)
    return x


def reference_bits(dtype, x):
    width = np.iinfo(NP[dtype]).bits
    mask = (1 << width) - 1
    u = [int(v) & mask for v in x]
    pop = [bin(v).count("1") for v in u]
    lead = [width - v.bit_length() for v in u]
    first = [(v & -v).bit_length() for v in u]
    return np.array(pop), np.array(lead), np.array(first)


@requires_compiler
@pytest.mark.parametrize("dtype", INTS, ids=ids(INTS))
def test_popcnt_clz_ffs(dtype):
    x = bit_inputs(dtype)
    n = x.size
    pop, lead, first = (np.full(n, -7, np.int64) for _ in range(3))
    probe = np.zeros((n, 3), np.int64)
    k_bits(x, pop, lead, first, probe)
    want_pop, want_lead, want_first = reference_bits(dtype, x)
    np.testing.assert_array_equal(pop, want_pop)
    np.testing.assert_array_equal(lead, want_lead)
    np.testing.assert_array_equal(first, want_first)
    # results are i32 whatever the input width
    np.testing.assert_array_equal(probe[:, 0], -(want_pop & 1))
    np.testing.assert_array_equal(probe[:, 1], -(want_lead & 1))
    np.testing.assert_array_equal(probe[:, 2], -(want_first & 1))
    width = np.iinfo(NP[dtype]).bits
    assert lead[0] == width and first[0] == 0 and pop[0] == 0  # x = 0


@pytest.mark.parametrize("dtype", INTS, ids=ids(INTS))
def test_bit_ops_python_scope(dtype):
    x = bit_inputs(dtype)[:600]
    want_pop, want_lead, want_first = reference_bits(dtype, x)
    assert [qd.math.popcnt(v) for v in x] == list(want_pop)
    assert [qd.math.clz(v) for v in x] == list(want_lead)
    assert [qd.math.ffs(v) for v in x] == list(want_first)


def test_bit_ops_python_ints():
    # Python ints: 32 bits when they fit i32 or u32, else 64
    assert qd.math.popcnt(-1) == 32 and qd.math.popcnt(0xFFFFFFFF) == 32
    assert qd.math.popcnt(-(2**40)) == 24 and qd.math.popcnt(2**64 - 1) == 64
    assert qd.math.clz(0) == 32 and qd.math.clz(1) == 31 and qd.math.clz(-1) == 0
    assert qd.math.clz(2**32) == 31 and qd.math.clz(np.int64(0)) == 64
    assert qd.math.ffs(0) == 0 and qd.math.ffs(-(2**31)) == 32 and qd.math.ffs(12) == 3
    assert qd.math.ffs(2**63) == 64 and qd.math.ffs(np.uint64(2**63)) == 64
    with pytest.raises(TypeError):
        qd.math.popcnt(1.0)
    with pytest.raises(TypeError):
        qd.math.clz(True)


def fns_reference(mask, base, offset):
    """__fns: the |offset|-th set bit walking from `base` (inclusive) up (offset > 0) or down
    (offset < 0); offset 0: `base` if that bit is set. 0xFFFFFFFF if none (and for base > 31)."""
    mask, base, offset = int(mask) & 0xFFFFFFFF, int(base) & 0xFFFFFFFF, int(offset)
    if base > 31:
        return 0xFFFFFFFF
    bits = [p for p in range(32) if mask >> p & 1]
    if offset == 0:
        return base if base in bits else 0xFFFFFFFF
    if offset > 0:
        found = [p for p in bits if p >= base]
    else:
        found = [p for p in reversed(bits) if p <= base]
    n = abs(offset)
    return found[n - 1] if n <= len(found) else 0xFFFFFFFF


def fns_inputs(n=4096):
    mask = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    sparse = rng.integers(0, 32, (n // 4, 3))
    mask[: n // 4] = [(1 << int(a)) | (1 << int(b)) | (1 << int(c)) for a, b, c in sparse]
    mask[:4] = [0, 0xFFFFFFFF, 0x80000000, 1]
    base = rng.integers(0, 32, n).astype(np.uint32)
    base[4:20] = rng.choice([32, 33, 100, 2**31, 2**32 - 1], 16)  # out of range: not found
    offset = rng.integers(-34, 35, n).astype(np.int32)
    offset[20:40] = rng.choice([0, 1, -1, 32, -32, 2**31 - 1, -(2**31)], 20)
    return mask, base, offset


@requires_compiler
def test_fns():
    mask, base, offset = fns_inputs()
    out = np.zeros(mask.size, np.int64)
    probe = np.zeros((mask.size, 2), np.int64)
    k_fns(mask, base, offset, out, probe)
    want = np.array([fns_reference(m, b, o) for m, b, o in zip(mask, base, offset)], np.int64)
    np.testing.assert_array_equal(out, want)
    # the result is u32: 0xFFFFFFFF >> 31 is 1 (logical) and 0xFFFFFFFF + 1 wraps to 0
    np.testing.assert_array_equal(probe[:, 0], want >> 31)
    np.testing.assert_array_equal(probe[:, 1], (want + 1) & 0xFFFFFFFF)
    assert (want == 0xFFFFFFFF).any() and (want != 0xFFFFFFFF).any()


@requires_compiler
def test_fns_literal_arguments():
    @qd.kernel
    def f(out: qd.types.ndarray(ndim=1)):
        out[0] = qd.math.fns(0b1011, 0, 3)
        out[1] = qd.math.fns(0b1011, 3, -2)
        out[2] = qd.math.fns(0b1011, 2, 0)
        out[3] = qd.math.fns(0b1011, 3, 0)
        out[4] = qd.math.fns(qd.u32(0xFFFFFFFF), 31, 1)
        out[5] = qd.math.fns(qd.u32(0xFFFFFFFF), 31, 2)

    out = np.zeros(6, np.uint32)
    f(out)
    np.testing.assert_array_equal(out, [3, 1, 0xFFFFFFFF, 3, 31, 0xFFFFFFFF])


def test_fns_python_scope():
    mask, base, offset = fns_inputs(2000)
    for m, b, o in zip(mask, base, offset):
        assert qd.math.fns(m, b, o) == fns_reference(m, b, o)
    assert qd.math.fns(0b1011, 0, 3) == 3 and qd.math.fns(0, 0, 1) == 0xFFFFFFFF


# --- Python scope (plain numbers) ---


def test_scalar_functions_python_scope():
    m = qd.math
    assert m.mix(1.0, 3.0, 0.25) == 1.5
    assert m.clamp(5, 0, 3) == 3 and m.clamp(-1.5, -1.0, 1.0) == -1.0 and m.clamp(0.5, 0, 1) == 0.5
    assert m.step(0.5, 0.7) == 1.0 and m.step(0.5, 0.2) == 0.0 and m.step(1, 1) == 1.0
    assert m.fract(-1.25) == 0.75 and m.fract(2.5) == 0.5
    assert m.smoothstep(0.0, 1.0, 0.5) == 0.5 and m.smoothstep(0.0, 1.0, -3.0) == 0.0
    assert m.smoothstep(0.0, 2.0, 1.5) == pytest.approx(0.84375)
    assert [m.sign(v) for v in (-3.0, 0.0, 2.5, -2, 0, 7)] == [-1.0, 0.0, 1.0, -1.0, 0.0, 1.0]
    assert m.sign(math.nan) == 0.0
    assert m.log2(8.0) == pytest.approx(3.0) and m.log2(0.5) == pytest.approx(-1.0)
    assert m.degrees(math.pi) == pytest.approx(180.0)
    assert m.radians(90) == pytest.approx(math.pi / 2)
    assert m.mod(-10, 3) == 2 and m.mod(10, -3) == -2 and m.mod(-0.5, 1.0) == 0.5
    assert m.isinf(math.inf) and m.isinf(-math.inf) and not m.isinf(math.nan) and not m.isinf(1e308)
    assert m.isnan(math.nan) and not m.isnan(math.inf) and not m.isnan(3)
    assert m.isinf(np.float32(np.inf)) and m.isnan(np.float64(np.nan))


@pytest.mark.parametrize("dtype", FLOATS, ids=ids(FLOATS))
def test_python_scope_matches_kernels(dtype):
    x = floats(dtype, 200)
    out = np.zeros(200, np.float64)
    k_sign(x, out)
    assert [qd.math.sign(float(v)) for v in x] == list(out)
    k_fract(x, out)
    fract = [qd.math.fract(float(v)) for v in x]
    np.testing.assert_allclose(fract, out, rtol=0, atol=eps(dtype) * 4)


# --- vector and matrix items: NotImplementedError until qd.Vector exists ---

VECTOR_TYPES = []  # the vector/matrix types exist (tests/matrix)
VECTOR_FUNCS = "rot_by_axis rot_yaw_pitch_roll rotation3d".split()
NEEDS = "needs vector/matrix support"


def arity(name):
    fn = getattr(qd.math, name)
    if name in VECTOR_TYPES:
        return 3
    return len(inspect.signature(fn._qd_func).parameters)


@pytest.mark.parametrize("name", VECTOR_TYPES + VECTOR_FUNCS)
def test_vector_items_raise_in_python_scope(name):
    with pytest.raises(NotImplementedError, match=f"qd.math.{name} {NEEDS}"):
        getattr(qd.math, name)(*([1.0] * arity(name)))


def test_vector_types_and_functions():
    assert qd.math.vec3.n == 3 and qd.math.mat2.m == 2
    v, w = qd.Vector([1.0, 2.0, 2.0]), qd.Vector([0.0, 1.0, 0.0])
    assert qd.math.length(v) == 3.0
    assert qd.math.dot(v, w) == 2.0
    assert qd.math.cross(v, w).to_list() == [-2.0, 0.0, 1.0]
    assert qd.math.distance(v, v) == 0.0
    assert qd.math.normalize(v).to_list() == pytest.approx([1 / 3, 2 / 3, 2 / 3])
    assert qd.math.reflect(v, w).to_list() == [1.0, -2.0, 2.0]


@qd.kernel
def k_use(fn: qd.template(), nargs: qd.template(), x: Arr):
    for i in range(x.shape[0]):
        if qd.static(nargs == 1):
            x[i] = fn(x[i])
        if qd.static(nargs == 2):
            x[i] = fn(x[i], 1.0)
        if qd.static(nargs == 3):
            x[i] = fn(x[i], 1.0, 2.0)


@requires_compiler
@pytest.mark.parametrize("name", VECTOR_TYPES + VECTOR_FUNCS)
def test_vector_items_raise_in_kernels(name):
    message = f"NotImplementedError: qd.math.{name} {NEEDS}"
    with pytest.raises(qd.QuadrantsCompilationError, match=message):
        k_use(getattr(qd.math, name), arity(name), np.zeros(4, np.float32))


def test_namespace():
    spec = (
        "vec2 vec3 vec4 ivec2 ivec3 ivec4 uvec2 uvec3 uvec4 mat2 mat3 mat4 e pi inf nan mix clamp "
        "step fract smoothstep sign normalize log2 reflect refract degrees radians distance dot "
        "cross mod length determinant inverse eye isinf isnan translate scale rot_by_axis "
        "rot_yaw_pitch_roll rotation2d rotation3d vdir popcnt clz ffs fns cmul cconj cdiv cexp "
        "cinv clog cpow csqrt"
    ).split()
    for name in spec:
        assert name in qd.math.__all__ and hasattr(qd.math, name), name
    for name in qd.math.__all__:
        assert hasattr(qd.math, name), name


@requires_compiler
def test_literal_arguments():
    # compile-time arguments go through the same functions (folded or materialised)
    @qd.kernel
    def f(out: qd.types.ndarray(ndim=1)):
        out[0] = qd.math.ffs(12)
        out[1] = qd.math.popcnt(7)
        out[2] = qd.math.clz(1)
        out[3] = qd.math.clamp(3, 0, 2)
        out[4] = qd.math.mod(-7, 3)
        out[5] = qd.math.log2(8.0)
        out[6] = qd.math.isnan(1.0)
        out[7] = qd.math.isinf(qd.math.inf)
        out[8] = qd.math.sign(-2)
        out[9] = qd.math.step(1.0, 2.0)
        out[10] = qd.math.fract(2.75)
        out[11] = qd.math.mix(2.0, 4.0, 0.5)
        out[12] = qd.math.smoothstep(0.0, 1.0, 0.5)
        out[13] = qd.math.degrees(qd.math.pi)
        out[14] = qd.math.ffs(0)
        out[15] = qd.math.ffs(qd.i64(-(2**40)))

    out = np.zeros(16, np.float64)
    f(out)
    want = [3, 3, 31, 2, 2, 3.0, 0, 1, -1.0, 1.0, 0.75, 3.0, 0.5, 180.0, 0, 41]
    np.testing.assert_allclose(out, want, rtol=1e-6)


@requires_compiler
@pytest.mark.parametrize("fp", [qd.f32, qd.f64], ids=["f32", "f64"])
def test_step_sign_give_default_fp(fp):
    # 1 + 1e-10 is 1 in f32 and not in f64: the sum has the type of step / sign
    qd.init(arch=qd.cfg.arch, default_fp=fp)

    @qd.kernel
    def f(x: qd.f64, out: qd.types.ndarray(dtype=qd.f64, ndim=1)):
        out[0] = qd.math.step(0.0, x) + 1e-10
        out[1] = qd.math.sign(x) + 1e-10

    out = np.zeros(2, np.float64)
    f(2.0, out)
    want = float(np.float32(1.0) + np.float32(1e-10)) if fp is qd.f32 else 1.0 + 1e-10
    np.testing.assert_array_equal(out, [want, want])
