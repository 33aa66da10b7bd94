"""Spec 0.15 / 0.4: the top-level math surface against NumPy on random inputs, result types, errors."""

import warnings

import numpy as np
import pytest

import quadrants as qd

from .helpers import INT_TYPES, NP, approx_f32_math, name, rand, rng

NDArray = qd.types.NDArray

RTOL = {qd.f32: 2e-6, qd.f64: 1e-14}
N = 10000


def _unary(fn):
    @qd.kernel
    def k(x: NDArray, out: NDArray):
        for i in range(x.shape[0]):
            out[i] = fn(x[i])

    return k


UNARY = [
    ("sqrt", qd.sqrt, np.sqrt, (0.0, 1e4)),
    ("rsqrt", qd.rsqrt, lambda x: 1 / np.sqrt(x), (1e-3, 1e4)),
    ("exp", qd.exp, np.exp, (-50.0, 50.0)),
    ("log", qd.log, np.log, (1e-6, 1e6)),
    ("sin", qd.sin, np.sin, (-10.0, 10.0)),
    ("cos", qd.cos, np.cos, (-10.0, 10.0)),
    ("tan", qd.tan, np.tan, (-1.5, 1.5)),
    ("tanh", qd.tanh, np.tanh, (-10.0, 10.0)),
    ("asin", qd.asin, np.arcsin, (-1.0, 1.0)),
    ("acos", qd.acos, np.arccos, (-1.0, 1.0)),
    ("abs", qd.abs, np.abs, (-1e6, 1e6)),
]


@pytest.mark.parametrize("t", [qd.f32, qd.f64], ids=name)
@pytest.mark.parametrize("fname,fn,ref,dom", UNARY, ids=[u[0] for u in UNARY])
def test_unary_math(fname, fn, ref, dom, t):
    d = NP[t]
    x = rng.uniform(dom[0], dom[1], N).astype(d)
    out = np.zeros(N, d)
    _unary(fn)(x, out)
    expect = ref(x.astype(np.float64))
    # sin/cos/tan near a zero of the function: compare absolutely there
    atol = {qd.f32: 1e-6, qd.f64: 1e-14}[t] if fname in ("sin", "cos", "tan", "asin", "tanh") else 0
    rtol = RTOL[t] * (4 if fname in ("tan", "exp", "acos") else 1)
    if fname == "acos":
        atol = {qd.f32: 1e-6, qd.f64: 1e-14}[t]
    if fname in ("sin", "cos") and approx_f32_math(t):
        # sin.approx / cos.approx on CUDA under fast_math, as in the reference: absolute error at
        # most 2**-21.41 in [-pi, pi], growing in proportion to |x| beyond (docs/language.md)
        atol = 2.0**-21 * (1.0 + np.abs(x.astype(np.float64)))
    err = np.abs(out.astype(np.float64) - expect)
    assert (err <= atol + rtol * np.abs(expect)).all(), (fname, err.max())


@pytest.mark.parametrize("t", [qd.f32, qd.f64], ids=name)
def test_unary_math_keeps_float_type(t):
    """A real input keeps its type: exp(f64) is f64 (computed in f64 precision)."""

    @qd.kernel
    def k(x: NDArray, out: NDArray[qd.f64, 1]):
        out[0] = qd.sqrt(x[0])
        out[1] = qd.exp(x[0])
        out[2] = qd.log(x[0])
        out[3] = qd.sin(x[0])

    x = np.array([2.0], NP[t])
    out = np.zeros(4)
    k(x, out)
    d = NP[t]
    expect = np.array([np.sqrt(d(2)), np.exp(d(2)), np.log(d(2)), np.sin(d(2))]).astype(np.float64)
    if t is qd.f32:
        np.testing.assert_allclose(out, expect, rtol=2e-7)
        assert out[0] == float(np.float32(np.sqrt(np.float32(2))))
    else:
        np.testing.assert_allclose(out, expect, rtol=1e-15)
        assert out[0] == np.sqrt(2.0)


@pytest.mark.parametrize("fn", [qd.sqrt, qd.exp, qd.log], ids=["sqrt", "exp", "log"])
@pytest.mark.parametrize("t", [qd.i32, qd.i64, qd.u8], ids=name)
def test_int_input_gives_default_fp(fn, t):
    @qd.kernel
    def k(x: NDArray, out: NDArray[qd.f64, 1]):
        r = fn(x[0])
        out[0] = r
        q = r - r
        q = 0.000244140625
        out[1] = (r - r + 1) + q
        p = r - r
        p = 9.313225746154785e-10
        out[2] = (r - r + 1) + p

    x = np.array([7], NP[t])
    out = np.zeros(3)
    k(x, out)
    f32 = np.float32
    ref = {qd.sqrt: np.sqrt, qd.exp: np.exp, qd.log: np.log}[fn]
    assert out[0] == pytest.approx(float(ref(f32(7))), rel=2e-7)
    assert out[1] == 1.0 + 2.0**-12  # f32 (not f16)
    assert out[2] == 1.0  # not f64


def test_int_input_gives_default_fp_f64(arch):
    qd.init(arch=getattr(qd, arch), default_fp=qd.f64)

    @qd.kernel
    def k(x: qd.i32) -> qd.f64:
        return qd.sqrt(x)

    assert k(2) == np.sqrt(2.0)


@pytest.mark.parametrize("fn", [qd.sin, qd.cos, qd.tan, qd.tanh, qd.asin, qd.acos, qd.floor, qd.ceil, qd.round],
                         ids=["sin", "cos", "tan", "tanh", "asin", "acos", "floor", "ceil", "round"])
def test_trig_on_int_is_type_error(fn):
    @qd.kernel
    def k(x: qd.i32) -> qd.f32:
        return fn(x)

    with pytest.raises(qd.QuadrantsTypeError, match="real inputs only"):
        k(1)


# --- atan2 ---


@pytest.mark.parametrize("t", [qd.f32, qd.f64], ids=name)
def test_atan2_random(t):
    @qd.kernel
    def k(y: NDArray, x: NDArray, out: NDArray):
        for i in range(y.shape[0]):
            out[i] = qd.atan2(y[i], x[i])

    d = NP[t]
    y = (rng.standard_normal(N) * 10).astype(d)
    x = (rng.standard_normal(N) * 10).astype(d)
    out = np.zeros(N, d)
    k(y, x, out)
    np.testing.assert_allclose(out.astype(np.float64), np.arctan2(y.astype(np.float64), x.astype(np.float64)),
                               rtol=RTOL[t] * 2, atol=RTOL[t])


@pytest.mark.parametrize("ta,tb,t", [(qd.f16, qd.f16, qd.f32), (qd.i32, qd.i32, qd.f32), (qd.f64, qd.f32, qd.f64),
                                     (qd.i32, qd.f64, qd.f64), (qd.f16, qd.f32, qd.f32)], ids=lambda v: name(v))
def test_atan2_types(ta, tb, t):
    @qd.kernel
    def k(a: NDArray, b: NDArray, out: NDArray[qd.f64, 1]):
        r = qd.atan2(a[0], b[0])
        out[0] = r
        q = r - r
        q = 0.000244140625
        out[1] = (r - r + 1) + q
        p = r - r
        p = 9.313225746154785e-10
        out[2] = (r - r + 1) + p

    a = np.array([1], NP[ta])
    b = np.array([3], NP[tb])
    out = np.zeros(3)
    k(a, b, out)
    assert out[0] == pytest.approx(np.arctan2(1.0, 3.0), rel=RTOL[t])
    assert out[1] == 1.0 + 2.0**-12
    assert out[2] == (1.0 + 2.0**-30 if t is qd.f64 else 1.0)


# --- floor / ceil / round ---


@pytest.mark.parametrize("t", [qd.f32, qd.f64], ids=name)
def test_floor_ceil_round(t):
    @qd.kernel
    def k(x: NDArray, out: NDArray):
        for i in range(x.shape[0]):
            out[i, 0] = qd.floor(x[i])
            out[i, 1] = qd.ceil(x[i])
            out[i, 2] = qd.round(x[i])

    d = NP[t]
    x = (rng.standard_normal(N) * 100).astype(d)
    x[:8] = [0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.0, -3.0]
    x[8:1000] = (np.round(x[8:1000] * 2) / 2).astype(d)  # many exact halves
    out = np.zeros((N, 3), d)
    k(x, out)
    r = np.trunc(x)
    half_away = r + np.sign(x) * (np.abs(x - r) >= 0.5)  # x - trunc(x) is exact
    np.testing.assert_array_equal(out[:, 0], np.floor(x))
    np.testing.assert_array_equal(out[:, 1], np.ceil(x))
    np.testing.assert_array_equal(out[:, 2].astype(np.float64), half_away)


def test_round_half_away_from_zero_examples():
    @qd.kernel
    def k(x: qd.f64) -> qd.f64:
        return qd.round(x)

    for v, r in [(0.5, 1.0), (-0.5, -1.0), (1.5, 2.0), (2.5, 3.0), (-2.5, -3.0), (2.4, 2.0), (-2.6, -3.0)]:
        assert k(v) == r, v


def test_floor_ceil_round_dtype():
    @qd.kernel
    def k(x: qd.f32, out: NDArray[qd.i64, 1]):
        a = qd.floor(x, dtype=qd.i32)
        b = qd.ceil(x, dtype=qd.i64)
        c = qd.round(x, dtype=qd.i16)
        out[0] = a
        out[1] = b
        out[2] = c
        out[3] = qd.bit_shr(~(a ^ a), 1)
        out[4] = qd.bit_shr(~(b ^ b), 1)
        out[5] = qd.bit_shr(~(c ^ c), 1)

    out = np.zeros(6, np.int64)
    k(-2.5, out)
    assert list(out) == [-3, -2, -3, 2**31 - 1, 2**63 - 1, 2**15 - 1]


def test_floor_keeps_type():
    @qd.kernel
    def k(x: qd.f64) -> qd.f64:
        return qd.floor(x)

    assert k(16777217.5) == 16777217.0  # f32 would give 16777218
    assert k(123456789.75) == 123456789.0


# --- min / max / abs ---


def test_min_max_variadic():
    @qd.kernel
    def k(a: NDArray[qd.f64, 1], b: NDArray[qd.f64, 1], c: NDArray[qd.f64, 1], out: NDArray[qd.f64, 2]):
        for i in range(a.shape[0]):
            out[i, 0] = qd.min(a[i], b[i])
            out[i, 1] = qd.max(a[i], b[i], c[i])
            out[i, 2] = qd.min(a[i], b[i], c[i], 0.0)
            out[i, 3] = min(a[i], b[i])
            out[i, 4] = max(a[i], c[i])
            out[i, 5] = qd.max(a[i])

    a, b, c = (rng.standard_normal(N) for _ in range(3))
    out = np.zeros((N, 6))
    k(a, b, c, out)
    f32zero = 0.0
    np.testing.assert_array_equal(out[:, 0], np.minimum(a, b))
    np.testing.assert_array_equal(out[:, 1], np.maximum(np.maximum(a, b), c))
    np.testing.assert_array_equal(out[:, 2], np.minimum(np.minimum(np.minimum(a, b), c), f32zero))
    np.testing.assert_array_equal(out[:, 3], np.minimum(a, b))
    np.testing.assert_array_equal(out[:, 4], np.maximum(a, c))
    np.testing.assert_array_equal(out[:, 5], a)


@pytest.mark.parametrize("t", INT_TYPES, ids=name)
def test_min_max_int(t):
    @qd.kernel
    def k(a: NDArray, b: NDArray, out: NDArray):
        for i in range(a.shape[0]):
            out[i, 0] = qd.min(a[i], b[i])
            out[i, 1] = qd.max(a[i], b[i])

    a = rand(t, N)
    b = rand(t, N)
    out = np.zeros((N, 2), NP[t])
    k(a, b, out)
    np.testing.assert_array_equal(out[:, 0], np.minimum(a, b))
    np.testing.assert_array_equal(out[:, 1], np.maximum(a, b))


def test_min_max_promoted_type():
    @qd.kernel
    def k(out: NDArray[qd.i64, 1]):
        r = qd.min(qd.i32(-1), qd.u32(5))  # u32: -1 -> 0xFFFFFFFF, min is 5
        out[0] = r
        s = qd.max(qd.i8(-1), qd.i16(-2))  # i16
        out[1] = s
        out[2] = qd.bit_shr(~(s ^ s), 1)

    out = np.zeros(3, np.int64)
    k(out)
    assert list(out) == [5, -1, 2**15 - 1]


def test_min_max_with_python_ints():
    @qd.kernel
    def k(x: qd.i32) -> qd.i32:
        return qd.min(x + 0, 10) + qd.max(3, 5) * 100

    assert k(4) == 504
    assert k(40) == 510


@pytest.mark.parametrize("t", [qd.i8, qd.i32, qd.i64, qd.f32, qd.f64], ids=name)
def test_abs(t):
    @qd.kernel
    def k(a: NDArray, out: NDArray):
        for i in range(a.shape[0]):
            out[i, 0] = abs(a[i])
            out[i, 1] = qd.abs(a[i])

    a = rand(t, N)
    out = np.zeros((N, 2), NP[t])
    k(a, out)
    with np.errstate(over="ignore"):
        e = np.abs(a)
    np.testing.assert_array_equal(out[:, 0], e)
    np.testing.assert_array_equal(out[:, 1], e)


# --- pow, frexp, random ---


@pytest.mark.parametrize("t", [qd.f32, qd.f64], ids=name)
def test_qd_pow(t):
    @qd.kernel
    def k(a: NDArray, b: NDArray, out: NDArray):
        for i in range(a.shape[0]):
            out[i, 0] = qd.pow(a[i], b[i])
            out[i, 1] = pow(a[i], b[i])

    d = NP[t]
    a = rng.uniform(0.01, 10, N).astype(d)
    b = rng.uniform(-4, 4, N).astype(d)
    out = np.zeros((N, 2), d)
    k(a, b, out)
    e = np.power(a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(out[:, 0], e, rtol=RTOL[t] * 8)
    np.testing.assert_allclose(out[:, 1], e, rtol=RTOL[t] * 8)


@pytest.mark.parametrize("t", [qd.f32, qd.f64], ids=name)
def test_float_base_runtime_int_exponent(t):
    # pow(x, float(n)) with a runtime integer n: the optimizer turns it into llvm.powi, a call of
    # a compiler-rt helper the kernel must still link against.
    @qd.kernel
    def k(a: NDArray, b: NDArray[qd.i32, 1], out: NDArray):
        for i in range(a.shape[0]):
            out[i] = a[i] ** b[i] + qd.pow(a[i], b[i] + 1)

    d = NP[t]
    a = rng.uniform(0.5, 2, 100).astype(d)
    b = rng.integers(-6, 7, 100).astype(np.int32)
    out = np.zeros(100, d)
    k(a, b, out)
    a64 = a.astype(np.float64)
    np.testing.assert_allclose(out, a64**b + a64 ** (b + 1), rtol=RTOL[t] * 8)


def test_qd_pow_int():
    @qd.kernel
    def k(a: NDArray[qd.i64, 1], b: NDArray[qd.i32, 1], out: NDArray[qd.i64, 1]):
        for i in range(a.shape[0]):
            out[i] = qd.pow(a[i], b[i])

    a = rng.integers(-20, 20, 1000).astype(np.int64)
    b = rng.integers(0, 12, 1000).astype(np.int32)
    out = np.zeros(1000, np.int64)
    k(a, b, out)
    assert [int(v) for v in out] == [int(x) ** int(y) for x, y in zip(a, b)]


@pytest.mark.parametrize("t", [qd.f32, qd.f64], ids=name)
def test_frexp(t):
    @qd.kernel
    def k(a: NDArray, m: NDArray, e: NDArray[qd.i32, 1]):
        for i in range(a.shape[0]):
            mm, ee = qd.frexp(a[i])
            m[i] = mm
            e[i] = ee

    d = NP[t]
    a = (rng.standard_normal(1000) * 10.0 ** rng.integers(-10, 10, 1000)).astype(d)
    m = np.zeros(1000, d)
    e = np.zeros(1000, np.int32)
    k(a, m, e)
    em, ee = np.frexp(a)
    np.testing.assert_array_equal(m, em)
    np.testing.assert_array_equal(e, ee)


def test_random_uniform():
    @qd.kernel
    def k(out: NDArray[qd.f32, 1]):
        for i in range(out.shape[0]):
            out[i] = qd.random()

    out = np.zeros(1000000, np.float32)
    k(out)
    assert out.min() >= 0.0 and out.max() < 1.0
    assert abs(out.mean() - 0.5) < 0.01
    assert abs(out.var() - 1 / 12) < 0.01
    assert len(np.unique(out)) > 100000


def test_random_dtypes():
    @qd.kernel
    def k(f: NDArray[qd.f64, 1], i: NDArray[qd.i32, 1]):
        for j in range(f.shape[0]):
            f[j] = qd.random(qd.f64)
            i[j] = qd.random(qd.i32)

    f = np.zeros(100000)
    i = np.zeros(100000, np.int32)
    k(f, i)
    assert f.min() >= 0 and f.max() < 1
    assert (i < 0).any() and (i > 0).any()  # full 32-bit pattern range


def test_randn():
    @qd.kernel
    def k(out: NDArray[qd.f32, 1]):
        for i in range(out.shape[0]):
            out[i] = qd.randn()

    out = np.zeros(1000000, np.float32)
    k(out)
    assert abs(out.mean()) < 0.01
    assert abs(out.std() - 1) < 0.01


def test_not_top_level_names():
    for nm in ["mod", "log2", "exp2", "atan", "dot", "cross", "bool"]:
        assert not hasattr(qd, nm), nm
