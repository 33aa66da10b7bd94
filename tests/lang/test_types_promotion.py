"""Spec 0.4: literal typing, promoted_type, per-operator result types and semantics, casts.

Result types are checked by value: integer results through an all-ones probe (`~(r ^ r)` is -1
for a signed type, 2**w - 1 for an unsigned one, and `bit_shr` of it by one gives the width),
float results through a precision probe (`1 + 2**-12` survives in f32 but not in f16, `1 + 2**-30`
only in f64), and everything against NumPy computed in the expected type."""

import itertools
import warnings

import numpy as np
import pytest

import quadrants as qd

from .helpers import ALL_TYPES, BITS, FLOAT_TYPES, INT_TYPES, NP, approx_f32_math, is_float, is_signed, name, promoted, rand, rng

NDArray = qd.types.NDArray

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


# --- probes: the dtype of a kernel value, read back through its behaviour ---


def int_probe_expected(t):
    """(all-ones, all-ones logically shifted right by one) of integer type t."""
    w = BITS[t]
    ones = -1 if is_signed(t) else (1 << w) - 1
    return ones, (1 << (w - 1)) - 1


def float_probe_expected(t):
    """(1 + 2**-12, 1 + 2**-30) computed in float type t."""
    d = NP[t]
    one = d(1)
    return float(one + d(2.0**-12)), float(one + d(2.0**-30))


@qd.kernel
def _int_probe(a: NDArray, b: NDArray, out: NDArray):
    r = a[0] + b[0]
    z = r ^ r
    m = ~z
    out[0] = m
    out[1] = qd.bit_shr(m, 1)


@qd.kernel
def _float_probe(a: NDArray, b: NDArray, out: NDArray):
    r = a[0] + b[0]
    z = r - r
    one = z + 1
    t1 = z
    t1 = 0.000244140625  # 2**-12, converted to r's type
    t2 = z
    t2 = 9.313225746154785e-10  # 2**-30
    out[0] = one + t1
    out[1] = one + t2


# --- literal typing ---


def test_int_literal_is_i32():
    @qd.kernel
    def k() -> qd.i64:
        x = 2147483647
        return x + 1

    assert k() == -(2**31)


def test_int_literal_sum_wraps_in_i32():
    @qd.kernel
    def k() -> qd.i64:
        x = 2147483647
        y = 1
        return x + y

    assert k() == -(2**31)


def test_float_literal_is_f32():
    @qd.kernel
    def k() -> qd.f64:
        x = 0.1
        return x

    assert k() == float(np.float32(0.1))


def test_float_literal_arith_is_f32():
    @qd.kernel
    def k() -> qd.f64:
        x = 1.0
        return x + 0.000000001

    assert k() == 1.0


def test_bool_literal_is_u1():
    # u1 + u8 -> u8 (more bits): True + 255 wraps to 0 in u8; an i32 `True` would give 256.
    @qd.kernel
    def k() -> qd.i64:
        b = True
        return b + qd.u8(255)

    assert k() == 0


def test_numpy_int_literal_is_default_ip():
    N = np.int64(2147483647)

    @qd.kernel
    def k() -> qd.i64:
        x = N
        return x + 1

    assert k() == -(2**31)


def test_numpy_float_literal_is_default_fp():
    F = np.float64(0.1)

    @qd.kernel
    def k() -> qd.f64:
        x = F
        return x

    assert k() == float(np.float32(0.1))


def test_python_folding_before_typing():
    @qd.kernel
    def k() -> qd.f64:
        return 7 // 2 + 7 / 2

    assert k() == 6.5


def test_literal_consequences():
    """f16*2.0 -> f32; u8+1 -> i32; u32+1 -> u32; i64+1 -> i64; f64*0.5 -> f64."""

    @qd.kernel
    def k(h: NDArray[qd.f16, 1], u: NDArray[qd.u8, 1], w: NDArray[qd.u32, 1], l: NDArray[qd.i64, 1],
          d: NDArray[qd.f64, 1], fo: NDArray[qd.f64, 1], io: NDArray[qd.i64, 1]):
        r = h[0] * 2.0  # f32
        t = r - r
        t = 0.000244140625
        fo[0] = (r - r + 1) + t
        s = u[0] + 1  # i32: 255 + 1 = 256, no u8 wrap
        io[0] = s
        io[1] = ~(s ^ s)
        v = w[0] + 1  # u32: wraps to 0
        io[2] = v
        io[3] = ~(v ^ v)
        x = l[0] + 1  # i64
        io[4] = x
        y = d[0] * 0.5  # f64
        q = y - y
        q = 9.313225746154785e-10
        fo[1] = (y - y + 1) + q

    h = np.array([1.5], np.float16)
    u = np.array([255], np.uint8)
    w = np.array([2**32 - 1], np.uint32)
    l = np.array([2**40], np.int64)
    d = np.array([3.0], np.float64)
    fo = np.zeros(2, np.float64)
    io = np.zeros(5, np.int64)
    k(h, u, w, l, d, fo, io)
    assert fo[0] == 1.0 + 2.0**-12  # f32, not f16
    assert fo[1] == 1.0 + 2.0**-30  # f64
    assert io[0] == 256
    assert io[1] == -1  # signed
    assert io[2] == 0
    assert io[3] == 2**32 - 1  # unsigned 32-bit
    assert io[4] == 2**40 + 1


# --- promoted_type of every pair through `a + b` ---

PAIRS = list(itertools.product(ALL_TYPES, ALL_TYPES))


def _pair_id(p):
    return f"{name(p[0])}-{name(p[1])}"


def _operand_values(t, other_float, n):
    """(edge values, n random values) of t; when the other operand is a float, integers stay in
    the range the float type represents exactly, so only the arithmetic's type matters."""
    if t is qd.u1:
        return np.array([False, True]), rand(t, n)
    if is_float(t):
        edge = np.array([1.0, 2.0**-12, 2.0**-20, 2.0**-30, -1.0, 0.0], np.float64).astype(NP[t])
        return edge, rand(t, n)
    d = NP[t]
    info = np.iinfo(d)
    if other_float is not None:
        lim = {qd.f16: 2048, qd.f32: 2**24, qd.f64: 2**53}[other_float]
        lo, hi = max(int(info.min), -lim), min(int(info.max), lim)
        return np.array([1, 0, lo, hi], d), rand(t, n, lo, hi)
    edge = [int(info.min), int(info.max), 0, 1] + ([-1] if info.min < 0 else [])
    return np.array(edge, d), rand(t, n)


@qd.kernel
def _add_arrays(a: NDArray, b: NDArray, out: NDArray):
    for i in range(a.shape[0]):
        out[i] = a[i] + b[i]


@pytest.mark.parametrize("ta,tb", PAIRS, ids=[_pair_id(p) for p in PAIRS])
def test_promoted_type_add(ta, tb):
    t = promoted(ta, tb)
    assert t is promoted(tb, ta)
    n = 500
    fa = tb if is_float(tb) and not is_float(ta) else None
    fb = ta if is_float(ta) and not is_float(tb) else None
    ea, ra = _operand_values(ta, fa, n)
    eb, rb = _operand_values(tb, fb, n)
    # every combination of edge values, then the random values
    a = np.ascontiguousarray(np.concatenate([np.repeat(ea, len(eb)), ra]))
    b = np.ascontiguousarray(np.concatenate([np.tile(eb, len(ea)), rb]))

    if is_float(t):
        out_d = np.float64
        expect = (a.astype(NP[t]) + b.astype(NP[t])).astype(np.float64)
    elif t is qd.u1:
        out_d = np.int64
        expect = (a.astype(np.int64) + b.astype(np.int64)) & 1
    else:
        out_d = np.uint64 if t is qd.u64 else np.int64
        with np.errstate(over="ignore"):
            expect = (a.astype(NP[t]) + b.astype(NP[t])).astype(out_d)
    out = np.zeros(len(a), out_d)
    _add_arrays(a, b, out)
    bad = np.nonzero(out != expect)[0]
    assert bad.size == 0, (
        f"{name(ta)}+{name(tb)} expected {name(t)}: first mismatches "
        f"{[(a[i], b[i], out[i], expect[i]) for i in bad[:5]]}"
    )

    # the type itself
    one_a = np.ones(1, NP[ta])
    one_b = np.ones(1, NP[tb])
    if is_float(t):
        po = np.zeros(2, np.float64)
        _float_probe(one_a, one_b, po)
        assert tuple(po) == float_probe_expected(t), f"{name(ta)}+{name(tb)} is not {name(t)}"
    elif t is not qd.u1:
        po = np.zeros(2, np.uint64 if t is qd.u64 else np.int64)
        _int_probe(one_a, one_b, po)
        assert tuple(int(v) for v in po) == int_probe_expected(t), f"{name(ta)}+{name(tb)} is not {name(t)}"


@pytest.mark.parametrize("ta,tb", [(qd.i8, qd.u8), (qd.i32, qd.u32), (qd.i64, qd.f32), (qd.u16, qd.f64),
                                   (qd.f16, qd.f32), (qd.i16, qd.i64), (qd.u1, qd.i8)],
                         ids=lambda t: name(t))
def test_promoted_type_scalar_args(ta, tb):
    """Typed scalar kernel arguments follow the same rule as array elements."""
    t = promoted(ta, tb)
    out_d = np.float64 if is_float(t) else (np.uint64 if t is qd.u64 else np.int64)

    @qd.kernel
    def k(a: ta, b: tb, out: NDArray):
        out[0] = a + b

    for _ in range(20):
        if is_float(t):
            a = rand(ta, 1)[0] if is_float(ta) else rand(ta, 1, max(-1000, int(np.iinfo(NP[ta]).min)), 1000)[0]
            b = rand(tb, 1)[0] if is_float(tb) else rand(tb, 1, max(-1000, int(np.iinfo(NP[tb]).min)), 1000)[0]
            expect = float(NP[t](a) + NP[t](b))
        else:
            a = rand(ta, 1)[0]
            b = rand(tb, 1)[0]
            with np.errstate(over="ignore"):
                expect = int(NP[t](a) + NP[t](b))
        out = np.zeros(1, out_d)
        k(bool(a) if ta is qd.u1 else (float(a) if is_float(ta) else int(a)),
          float(b) if is_float(tb) else int(b), out)
        assert out[0] == expect, (a, b)


# --- true division ---

DIV_CASES = [
    (qd.i32, qd.i32, qd.f32),
    (qd.i64, qd.i64, qd.f32),
    (qd.i32, qd.f64, qd.f64),
    (qd.f16, qd.i32, qd.f32),
    (qd.f16, qd.f16, qd.f16),
    (qd.u8, qd.u8, qd.f32),
    (qd.f32, qd.f32, qd.f32),
    (qd.f64, qd.i64, qd.f64),
]


@qd.kernel
def _div_arrays(a: NDArray, b: NDArray, out: NDArray, probe: NDArray):
    for i in range(a.shape[0]):
        out[i] = a[i] / b[i]
    r = a[0] / b[0]
    z = r - r
    t1 = z
    t1 = 0.000244140625
    t2 = z
    t2 = 9.313225746154785e-10
    probe[0] = (z + 1) + t1
    probe[1] = (z + 1) + t2


@pytest.mark.parametrize("ta,tb,t", DIV_CASES, ids=lambda t: name(t))
def test_truediv_types(ta, tb, t):
    n = 1000
    a = rand(ta, n)
    b = rand(tb, n)
    b[b == 0] = 1
    a[0], b[0] = 1, 3  # finite first element for the type probe
    out = np.zeros(n, np.float64)
    probe = np.zeros(2, np.float64)
    _div_arrays(a, b, out, probe)
    d = NP[t]

    def operand(x, tx):
        # an integer operand is a default_fp (f32) value first, then widened
        return (x if is_float(tx) else x.astype(np.float32)).astype(d)

    with np.errstate(over="ignore", divide="ignore"):
        expect = (operand(a, ta) / operand(b, tb)).astype(np.float64)
    if approx_f32_math(t):
        # CUDA under fast_math: div.approx, within 2 ulp, as in the reference (docs/language.md)
        assert f32_ulp_distance(out, expect).max() <= 2
    else:
        np.testing.assert_array_equal(out, expect)
    assert tuple(probe) == float_probe_expected(t)


def f32_ulp_distance(x, y):
    """How many f32 values lie between x and y (f32 values held in f64), element by element."""

    def ordered(v):
        bits = v.astype(np.float32).view(np.int32).astype(np.int64)
        return np.where(bits < 0, -(bits & 0x7FFFFFFF), bits)

    return np.abs(ordered(x) - ordered(y))


def test_f32_division_correctly_rounded_without_fast_math(arch):
    qd.init(arch=getattr(qd, arch), fast_math=False)
    a, b = rand(qd.f32, 1000), rand(qd.f32, 1000)
    b[b == 0] = 1
    out = np.zeros(1000, np.float64)
    _div_arrays(a, b, out, np.zeros(2, np.float64))
    np.testing.assert_array_equal(out, (a / b).astype(np.float64))


def test_div_examples():
    @qd.kernel
    def k(a: qd.i32, b: qd.i32) -> qd.f64:
        return a / b

    assert k(7, 2) == 3.5
    assert k(-7, 2) == -3.5
    assert k(16777217, 1) == 16777216.0  # computed in f32


# --- floor division and modulo (Python semantics) ---


@qd.kernel
def _floordiv_mod(a: NDArray, b: NDArray, q: NDArray, r: NDArray):
    for i in range(a.shape[0]):
        q[i] = a[i] // b[i]
        r[i] = a[i] % b[i]


@pytest.mark.parametrize("t", INT_TYPES, ids=name)
def test_int_floordiv_mod_random(t):
    n = 2000
    a = rand(t, n)
    b = rand(t, n)
    info = np.iinfo(NP[t])
    b[b == 0] = 3
    if info.min < 0:
        b[(a == info.min) & (b == -1)] = 2
    # small divisors too, so quotients are not mostly 0/-1
    b[: n // 2] = rand(t, n // 2, max(info.min, -20), 20)
    b[b == 0] = -7 if info.min < 0 else 7
    if info.min < 0:
        b[(a == info.min) & (b == -1)] = 2
    q = np.zeros(n, NP[t])
    r = np.zeros(n, NP[t])
    _floordiv_mod(a, b, q, r)
    np.testing.assert_array_equal(q, np.floor_divide(a, b))
    np.testing.assert_array_equal(r, np.mod(a, b))


def test_int_floordiv_mod_examples():
    @qd.kernel
    def k(a: qd.i32, b: qd.i32) -> (qd.i32, qd.i32):
        return a // b, a % b

    assert k(-10, 3) == (-4, 2)
    assert k(10, -3) == (-4, -2)
    assert k(-10, -3) == (3, -1)
    assert k(10, 3) == (3, 1)
    assert k(-9, 3) == (-3, 0)


@pytest.mark.parametrize("t", [qd.f32, qd.f64], ids=name)
def test_float_floordiv_mod_random(t):
    n = 2000
    d = NP[t]
    a = (rng.standard_normal(n) * 100).astype(d)
    b = (rng.standard_normal(n) * 10).astype(d)
    b[np.abs(b) < 0.01] = d(0.5)
    q = np.zeros(n, d)
    r = np.zeros(n, d)
    _floordiv_mod(a, b, q, r)
    expect_q = np.floor(a / b)  # computed in t
    np.testing.assert_array_equal(q, expect_q)
    expect_r = a - expect_q * b
    eps = np.finfo(d).eps
    np.testing.assert_allclose(r, expect_r, rtol=0, atol=8 * eps * float(np.max(np.abs(a))))
    # sign of the divisor (or zero)
    assert np.all((r == 0) | (np.sign(r) == np.sign(b)) | (np.abs(r) <= 8 * eps * np.abs(a)))


def test_float_floordiv_mod_examples():
    @qd.kernel
    def k(a: qd.f64, b: qd.f64) -> (qd.f64, qd.f64):
        return a // b, a % b

    assert k(7.0, 2.0) == (3.0, 1.0)
    assert k(-7.5, 2.0) == (-4.0, 0.5)
    assert k(0.5, 1.0) == (0.0, 0.5)
    assert k(-0.5, 1.0) == (-1.0, 0.5)
    assert k(7.5, -2.0) == (-4.0, -0.5)


def test_floordiv_types():
    @qd.kernel
    def k(a: NDArray[qd.i32, 1], b: NDArray[qd.f32, 1], out: NDArray[qd.f64, 1]):
        r = a[0] // b[0]  # promoted: f32
        t = r - r
        t = 0.000244140625
        out[0] = r
        out[1] = (r - r + 1) + t

    out = np.zeros(2)
    k(np.array([7], np.int32), np.array([2.0], np.float32), out)
    assert out[0] == 3.0
    assert out[1] == 1.0 + 2.0**-12


# --- raw_div / raw_mod (C semantics) ---


@qd.kernel
def _raw(a: NDArray, b: NDArray, q: NDArray, r: NDArray):
    for i in range(a.shape[0]):
        q[i] = qd.raw_div(a[i], b[i])
        r[i] = qd.raw_mod(a[i], b[i])


@pytest.mark.parametrize("t", INT_TYPES, ids=name)
def test_raw_div_mod_int(t):
    n = 2000
    info = np.iinfo(NP[t])
    a = rand(t, n, info.min + 1 if info.min < 0 else 0, info.max)
    b = rand(t, n, max(info.min + 1, -50), 50)
    b[b == 0] = 3
    q = np.zeros(n, NP[t])
    r = np.zeros(n, NP[t])
    _raw(a, b, q, r)
    ai = [int(x) for x in a]
    bi = [int(x) for x in b]
    eq = [abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1) for x, y in zip(ai, bi)]
    er = [x - qq * y for x, y, qq in zip(ai, bi, eq)]
    assert [int(x) for x in q] == eq
    assert [int(x) for x in r] == er


def test_raw_examples():
    @qd.kernel
    def k(a: qd.i32, b: qd.i32) -> (qd.i32, qd.i32):
        return qd.raw_div(a, b), qd.raw_mod(a, b)

    assert k(-4, 3) == (-1, -1)
    assert k(4, -3) == (-1, 1)
    assert k(-7, -2) == (3, -1)
    assert k(7, 2) == (3, 1)


def test_raw_float():
    @qd.kernel
    def k(a: qd.f64, b: qd.f64) -> (qd.f64, qd.f64):
        return qd.raw_div(a, b), qd.raw_mod(a, b)

    for _ in range(50):
        a, b = rng.standard_normal(2) * 10
        qv, rv = k(a, b)
        assert qv == a / b
        assert rv == pytest.approx(np.fmod(a, b), rel=1e-12, abs=1e-12)


# --- shifts ---


@qd.kernel
def _shifts(x: NDArray, s: NDArray, l: NDArray, r: NDArray, lr: NDArray):
    for i in range(x.shape[0]):
        l[i] = x[i] << s[i]
        r[i] = x[i] >> s[i]
        lr[i] = qd.bit_shr(x[i], s[i])


@pytest.mark.parametrize("t", INT_TYPES, ids=name)
@pytest.mark.parametrize("ts", [qd.i32, qd.i64, qd.u8], ids=name)
def test_shifts(t, ts):
    n = 1000
    w = BITS[t]
    x = rand(t, n)
    s = rng.integers(0, w, size=n).astype(NP[ts])
    l = np.zeros(n, NP[t])
    r = np.zeros(n, NP[t])
    lr = np.zeros(n, NP[t])
    _shifts(x, s, l, r, lr)
    mask = (1 << w) - 1

    def to_t(v):
        v &= mask
        if is_signed(t) and v >> (w - 1):
            v -= 1 << w
        return v

    xi = [int(v) for v in x]
    si = [int(v) for v in s]
    assert [int(v) for v in l] == [to_t(a << b) for a, b in zip(xi, si)]
    assert [int(v) for v in r] == [a >> b for a, b in zip(xi, si)]  # arithmetic on signed (Python)
    assert [int(v) for v in lr] == [to_t((a & mask) >> b) for a, b in zip(xi, si)]


def test_shift_result_is_lhs_type():
    @qd.kernel
    def k(out: NDArray[qd.i64, 1]):
        a = qd.i8(100)
        out[0] = a << 3  # i8: 800 wraps to 32
        b = qd.u8(200)
        n = qd.i64(2)
        out[1] = b >> n  # u8 logical
        c = qd.i8(-128)
        out[2] = c >> 2  # arithmetic
        d = qd.u32(2147483648)
        out[3] = d >> 4
        e = -1
        out[4] = qd.bit_shr(e, 28)  # logical even for signed
        f = e >> 28
        out[5] = ~(f ^ f)  # i32
        g = qd.u8(3) << 7  # u8: 384 wraps to 128
        out[6] = g

    out = np.zeros(7, np.int64)
    k(out)
    assert list(out) == [32, 50, -32, 0x08000000, 15, -1, 128]


# --- pow ---


def test_pow_int_exponent_keeps_base_type():
    @qd.kernel
    def k(out: NDArray[qd.i64, 1], fo: NDArray[qd.f64, 1]):
        a = 3
        out[0] = a**5
        out[1] = a**25  # wraps in i32
        b = qd.u8(3)
        out[2] = b**6  # u8: 729 wraps to 217
        c = qd.i64(3)
        out[3] = c**25
        h = qd.f16(1.5)
        p = h**2  # f16
        t = p - p
        t = 0.000244140625
        fo[0] = p
        fo[1] = (p - p + 1) + t
        f = 2.5
        fo[2] = f**3

    out = np.zeros(4, np.int64)
    fo = np.zeros(3)
    k(out, fo)
    assert out[0] == 243
    assert out[1] == ((3**25 + 2**31) % 2**32) - 2**31
    assert out[2] == 729 % 256
    assert out[3] == 3**25
    assert fo[0] == 2.25
    assert fo[1] == 1.0  # f16
    assert fo[2] == 15.625


@pytest.mark.parametrize("t", [qd.f32, qd.f64], ids=name)
def test_pow_float_random(t):
    @qd.kernel
    def k(a: NDArray, b: NDArray, out: NDArray):
        for i in range(a.shape[0]):
            out[i] = a[i] ** b[i]

    n = 1000
    d = NP[t]
    a = rng.uniform(0.01, 10, n).astype(d)
    b = rng.uniform(-5, 5, n).astype(d)
    out = np.zeros(n, d)
    k(a, b, out)
    np.testing.assert_allclose(out, np.power(a, b), rtol=1e-5 if t is qd.f32 else 1e-13)


def test_pow_float_exponent_promotes():
    @qd.kernel
    def k(out: NDArray[qd.f64, 1]):
        a = 2
        p = a**0.5  # i32 ** f32 -> f32
        t = p - p
        t = 0.000244140625
        out[0] = p
        out[1] = (p - p + 1) + t
        q = qd.f64(2.0) ** qd.f32(0.5)  # f64
        out[2] = q

    out = np.zeros(3)
    k(out)
    assert out[0] == float(np.float32(np.sqrt(np.float32(2))))
    assert out[1] == 1.0 + 2.0**-12
    assert out[2] == pytest.approx(np.sqrt(2.0), rel=1e-15)


# --- comparisons ---


@qd.kernel
def _compare(a: NDArray, b: NDArray, out: NDArray):
    for i in range(a.shape[0]):
        out[i, 0] = a[i] < b[i]
        out[i, 1] = a[i] <= b[i]
        out[i, 2] = a[i] > b[i]
        out[i, 3] = a[i] >= b[i]
        out[i, 4] = a[i] == b[i]
        out[i, 5] = a[i] != b[i]


CMP_PAIRS = [(qd.i32, qd.i32), (qd.i32, qd.f32), (qd.i32, qd.u32), (qd.i8, qd.u8), (qd.f64, qd.f32),
             (qd.i64, qd.u64), (qd.u16, qd.i16), (qd.f16, qd.i8)]


@pytest.mark.parametrize("ta,tb", CMP_PAIRS, ids=lambda t: name(t))
def test_comparisons_random(ta, tb):
    n = 1000
    t = promoted(ta, tb)
    if is_float(t):
        a = rand(ta, n, -100, 100) if not is_float(ta) else rand(ta, n)
        b = rand(tb, n, -100, 100) if not is_float(tb) else rand(tb, n)
    else:
        a = rand(ta, n)
        b = rand(tb, n)
    a[:50] = b[:50].astype(NP[ta])  # some equal pairs
    out = np.zeros((n, 6), np.int32)
    _compare(a, b, out)
    # compared in the promoted type (so -1 < u32(1) is False)
    A = a.astype(NP[t])
    B = b.astype(NP[t])
    expect = np.stack([A < B, A <= B, A > B, A >= B, A == B, A != B], axis=1).astype(np.int32)
    np.testing.assert_array_equal(out, expect)


def test_comparison_is_u1():
    @qd.kernel
    def k(a: qd.i32, b: qd.i32) -> qd.i64:
        c = a < b
        return c + qd.u8(255)  # u1 + u8 -> u8

    assert k(1, 2) == 0
    assert k(2, 1) == 255


def test_signed_unsigned_compare():
    @qd.kernel
    def k(a: qd.i32, b: qd.u32) -> qd.i32:
        return a < b

    assert k(-1, 1) == 0  # -1 becomes 0xFFFFFFFF
    assert k(1, 2) == 1


def test_chained_comparisons():
    @qd.kernel
    def k(a: NDArray[qd.i32, 1], b: NDArray[qd.i32, 1], c: NDArray[qd.i32, 1], out: NDArray[qd.i32, 2]):
        for i in range(a.shape[0]):
            out[i, 0] = a[i] < b[i] < c[i]
            out[i, 1] = a[i] <= b[i] > c[i]
            out[i, 2] = a[i] == b[i] == c[i]
            out[i, 3] = a[i] < b[i] <= c[i] != a[i]

    n = 2000
    a, b, c = (rng.integers(-3, 4, n).astype(np.int32) for _ in range(3))
    out = np.zeros((n, 4), np.int32)
    k(a, b, c, out)
    expect = np.array([[x < y < z, x <= y > z, x == y == z, x < y <= z != x] for x, y, z in zip(a, b, c)],
                      np.int32)
    np.testing.assert_array_equal(out, expect)


# --- and / or / not / ~ ---


def test_and_or_value_semantics():
    @qd.kernel
    def k(a: NDArray[qd.i32, 1], b: NDArray[qd.i32, 1], out: NDArray[qd.i32, 2]):
        for i in range(a.shape[0]):
            out[i, 0] = a[i] and b[i]
            out[i, 1] = a[i] or b[i]
            out[i, 2] = not a[i]
            out[i, 3] = a[i] and b[i] or 7

    n = 2000
    a = rng.integers(-3, 4, n).astype(np.int32)
    b = rng.integers(-3, 4, n).astype(np.int32)
    out = np.zeros((n, 4), np.int32)
    k(a, b, out)
    expect = np.array([[int(x) and int(y), int(x) or int(y), int(not x), (int(x) and int(y)) or 7]
                       for x, y in zip(a, b)], np.int32)
    np.testing.assert_array_equal(out, expect)


def test_and_or_promoted_type():
    @qd.kernel
    def k(out: NDArray[qd.i64, 1]):
        a = qd.u8(5)
        b = qd.i16(-3)
        r = a and b  # promoted i16
        out[0] = r
        out[1] = ~(r ^ r)
        out[2] = qd.bit_shr(~(r ^ r), 1)
        s = qd.u32(0) or qd.i32(-1)  # u32
        out[3] = s

    out = np.zeros(4, np.int64)
    k(out)
    assert list(out) == [-3, -1, 2**15 - 1, 2**32 - 1]


def test_and_short_circuit():
    cnt = qd.field(qd.i32, shape=())

    @qd.kernel
    def k(a: NDArray[qd.i32, 1], out: NDArray[qd.i32, 1]):
        for i in range(a.shape[0]):
            out[i] = a[i] and qd.atomic_add(cnt[None], 1) + 100

    n = 1000
    a = rng.integers(0, 2, n).astype(np.int32)
    out = np.zeros(n, np.int32)
    k(a, out)
    assert cnt[None] == int(np.count_nonzero(a))
    assert np.all(out[a == 0] == 0)
    assert np.all(out[a != 0] >= 100)
    assert sorted(out[a != 0] - 100) == list(range(int(np.count_nonzero(a))))


def test_or_short_circuit():
    cnt = qd.field(qd.i32, shape=())

    @qd.kernel
    def k(a: NDArray[qd.i32, 1], out: NDArray[qd.i32, 1]):
        for i in range(a.shape[0]):
            out[i] = a[i] or qd.atomic_add(cnt[None], 1) + 100

    n = 1000
    a = rng.integers(0, 2, n).astype(np.int32) * rng.integers(1, 50, n).astype(np.int32)
    out = np.zeros(n, np.int32)
    k(a, out)
    assert cnt[None] == int(np.count_nonzero(a == 0))
    np.testing.assert_array_equal(out[a != 0], a[a != 0])


def test_short_circuit_serial_side_effect():
    x = qd.field(qd.i32, shape=4)

    @qd.kernel
    def k(c: qd.i32) -> qd.i32:
        r = c > 0 and qd.atomic_add(x[0], 5) >= 0
        q = c > 0 or qd.atomic_add(x[1], 7) >= 0
        return r + 10 * q

    assert k(0) == 10
    assert x[0] == 0 and x[1] == 7
    assert k(1) == 11
    assert x[0] == 5 and x[1] == 7


def test_not_is_u1():
    @qd.kernel
    def k(a: qd.i32) -> qd.i64:
        return (not a) + qd.u8(255)

    assert k(0) == 0
    assert k(5) == 255


@pytest.mark.parametrize("t", INT_TYPES, ids=name)
def test_invert(t):
    @qd.kernel
    def k(a: NDArray, out: NDArray):
        for i in range(a.shape[0]):
            out[i] = ~a[i]

    a = rand(t, 1000)
    out = np.zeros(1000, NP[t])
    k(a, out)
    np.testing.assert_array_equal(out, np.invert(a))


@pytest.mark.parametrize("t", INT_TYPES, ids=name)
def test_bitwise_ops(t):
    @qd.kernel
    def k(a: NDArray, b: NDArray, out: NDArray):
        for i in range(a.shape[0]):
            out[i, 0] = a[i] & b[i]
            out[i, 1] = a[i] | b[i]
            out[i, 2] = a[i] ^ b[i]
            out[i, 3] = -a[i]

    a = rand(t, 1000)
    b = rand(t, 1000)
    out = np.zeros((1000, 4), NP[t])
    k(a, b, out)
    with np.errstate(over="ignore"):
        neg = (np.zeros(1, NP[t]) - a).astype(NP[t])
    np.testing.assert_array_equal(out, np.stack([a & b, a | b, a ^ b, neg], axis=1))


def test_float_bitwise_is_type_error():
    @qd.kernel
    def k(a: qd.f32) -> qd.i32:
        return a & 1

    with pytest.raises(qd.QuadrantsTypeError):
        k(1.0)


def test_float_not_is_type_error():
    @qd.kernel
    def k(a: qd.f32) -> qd.i32:
        return not a

    with pytest.raises(qd.QuadrantsTypeError):
        k(1.0)


def test_float_invert_is_type_error():
    @qd.kernel
    def k(a: qd.f32) -> qd.f32:
        return ~a

    with pytest.raises(qd.QuadrantsTypeError):
        k(1.0)


def test_float_and_is_type_error():
    @qd.kernel
    def k(a: qd.f32, b: qd.f32) -> qd.f32:
        return a and b

    with pytest.raises(qd.QuadrantsTypeError):
        k(1.0, 2.0)


def test_float_if_condition_is_type_error():
    @qd.kernel
    def k(a: qd.f32) -> qd.i32:
        r = 0
        if a:
            r = 1
        return r

    with pytest.raises(qd.QuadrantsTypeError, match="if"):
        k(1.0)


def test_float_while_condition_is_type_error():
    @qd.kernel
    def k(a: qd.f32) -> qd.i32:
        r = 0
        while a:
            r = 1
            a2 = 0
        return r

    with pytest.raises(qd.QuadrantsTypeError):
        k(1.0)


# --- ternary and select ---


def test_ternary_evaluates_one_branch():
    c1 = qd.field(qd.i32, shape=())
    c2 = qd.field(qd.i32, shape=())

    @qd.kernel
    def k(a: NDArray[qd.i32, 1], out: NDArray[qd.i32, 1]):
        for i in range(a.shape[0]):
            out[i] = (qd.atomic_add(c1[None], 1) * 0 + 1) if a[i] > 0 else (qd.atomic_add(c2[None], 1) * 0 + 2)

    n = 1000
    a = rng.integers(-5, 6, n).astype(np.int32)
    out = np.zeros(n, np.int32)
    k(a, out)
    assert c1[None] == int(np.count_nonzero(a > 0))
    assert c2[None] == int(np.count_nonzero(a <= 0))
    np.testing.assert_array_equal(out, np.where(a > 0, 1, 2))


def test_ternary_promoted_type():
    @qd.kernel
    def k(c: qd.i32, out: NDArray[qd.f64, 1]):
        r = qd.i32(3) if c else qd.f16(0.5)  # f16
        t = r - r
        t = 0.000244140625
        out[0] = r
        out[1] = (r - r + 1) + t
        s = qd.f32(2.5) if c else qd.f64(1.0)  # f64
        q = s - s
        q = 9.313225746154785e-10
        out[2] = (s - s + 1) + q

    out = np.zeros(3)
    k(1, out)
    assert list(out) == [3.0, 1.0, 1.0 + 2.0**-30]
    k(0, out)
    assert out[0] == 0.5


def test_ternary_of_tuples_unpacked():
    """`a, b = (x, y) if c else (z, w)`: element by element, one branch evaluated (Genesis's
    narrowphase swaps a pair this way)."""

    @qd.kernel
    def k(c: NDArray[qd.i32, 1], x: NDArray[qd.f32, 1], y: NDArray[qd.f32, 1], out: NDArray[qd.f32, 2]):
        for i in range(c.shape[0]):
            a, b = (x[i], y[i]) if c[i] > 0 else (y[i], -x[i])
            out[i, 0] = a
            out[i, 1] = b

    n = 500
    c = rng.integers(-3, 4, n).astype(np.int32)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = np.zeros((n, 2), np.float32)
    k(c, x, y, out)
    np.testing.assert_array_equal(out[:, 0], np.where(c > 0, x, y))
    np.testing.assert_array_equal(out[:, 1], np.where(c > 0, y, -x))


def test_ternary_of_tuples_promotes_to_one_type():
    """As in the reference the tuples become vectors, of one promoted element type (f32 here)."""

    @qd.kernel
    def k(c: qd.i32, x: qd.f32, y: qd.i32) -> qd.i32:
        t = (x, y) if c else (y, x)
        a, b = t
        return b + t[0] * 0

    assert k(1, 2.5, 3) == 3
    assert k(0, 2.5, 3) == 2  # 2.5 read back as i32


def test_ternary_broadcasts_a_scalar_against_a_tuple_or_vector():
    @qd.kernel
    def k(c: NDArray[qd.i32, 1], x: NDArray[qd.f32, 1], out: NDArray[qd.f32, 2]):
        for i in range(c.shape[0]):
            a, b = (x[i], 2 * x[i]) if c[i] > 0 else x[i] - 1
            v = qd.Vector([x[i], -x[i]]) if c[i] > 1 else 0.5
            w = (x[i], 3.0) if c[i] > 0 else qd.Vector([4.0, 5.0])
            out[i, 0], out[i, 1] = a, b
            out[i, 2], out[i, 3] = v
            out[i, 4], out[i, 5] = w

    n = 300
    c = rng.integers(-1, 3, n).astype(np.int32)
    x = rng.standard_normal(n).astype(np.float32)
    out = np.zeros((n, 6), np.float32)
    k(c, x, out)
    np.testing.assert_array_equal(out[:, 0], np.where(c > 0, x, x - 1))
    np.testing.assert_array_equal(out[:, 1], np.where(c > 0, 2 * x, x - 1))
    np.testing.assert_array_equal(out[:, 2], np.where(c > 1, x, 0.5))
    np.testing.assert_array_equal(out[:, 3], np.where(c > 1, -x, 0.5))
    np.testing.assert_array_equal(out[:, 4], np.where(c > 0, x, 4.0))
    np.testing.assert_array_equal(out[:, 5], np.where(c > 0, 3.0, 5.0))


def test_ternary_of_tuples_errors():
    @qd.kernel
    def lengths(c: qd.i32, x: qd.f32) -> qd.f32:
        a, b = (x, x) if c else (x, x, x)
        return a

    @qd.kernel
    def nested(c: qd.i32, x: qd.f32) -> qd.f32:
        a, b = (x, (x, 1)) if c else (x, (x, 2))
        return a

    with pytest.raises(qd.QuadrantsTypeError, match="tuples or vectors of one length"):
        lengths(1, 1.0)
    with pytest.raises(qd.QuadrantsTypeError, match="must hold scalars"):
        nested(1, 1.0)


def test_select_random():
    @qd.kernel
    def k(c: NDArray[qd.i32, 1], a: NDArray[qd.f32, 1], b: NDArray[qd.i32, 1], out: NDArray[qd.f64, 1]):
        for i in range(c.shape[0]):
            out[i] = qd.select(c[i], a[i], b[i])

    n = 1000
    c = rng.integers(-2, 3, n).astype(np.int32)
    a = rand(qd.f32, n)
    b = rng.integers(-(2**24), 2**24, n).astype(np.int32)
    out = np.zeros(n)
    k(c, a, b, out)
    np.testing.assert_array_equal(out, np.where(c != 0, a.astype(np.float64), b.astype(np.float32).astype(np.float64)))


def test_select_evaluates_both():
    c1 = qd.field(qd.i32, shape=())
    c2 = qd.field(qd.i32, shape=())

    @qd.kernel
    def k(a: NDArray[qd.i32, 1], out: NDArray[qd.i32, 1]):
        for i in range(a.shape[0]):
            out[i] = qd.select(a[i] > 0, qd.atomic_add(c1[None], 1) * 0 + 1, qd.atomic_add(c2[None], 1) * 0 + 2)

    n = 500
    a = rng.integers(-5, 6, n).astype(np.int32)
    out = np.zeros(n, np.int32)
    k(a, out)
    assert c1[None] == n and c2[None] == n
    np.testing.assert_array_equal(out, np.where(a > 0, 1, 2))


def test_select_promoted_type():
    @qd.kernel
    def k(out: NDArray[qd.i64, 1]):
        r = qd.select(1, qd.i16(-1), qd.u16(5))  # u16
        out[0] = r
        out[1] = ~(r ^ r)

    out = np.zeros(2, np.int64)
    k(out)
    assert list(out) == [65535, 65535]


# --- casts ---


@pytest.mark.parametrize("tf", [qd.f32, qd.f64], ids=name)
@pytest.mark.parametrize("ti", [qd.i8, qd.i32, qd.i64, qd.u8, qd.u32], ids=name)
def test_cast_float_to_int_truncates(tf, ti):
    @qd.kernel
    def k(a: NDArray, out: NDArray):
        for i in range(a.shape[0]):
            out[i] = qd.cast(a[i], ti)

    info = np.iinfo(NP[ti])
    n = 1000
    lo = max(float(info.min), -1e6)
    hi = min(float(info.max), 1e6)
    a = rng.uniform(lo, hi, n)
    a[:10] = [0.5, -0.5, 0.9999, -0.9999, 1.5, -1.5, 2.5, -2.5, 0.0, -0.0]
    if info.min == 0:
        a = np.abs(a)
    a = a.astype(NP[tf])
    out = np.zeros(n, NP[ti])
    k(a, out)
    np.testing.assert_array_equal(out, np.trunc(a).astype(NP[ti]))


def test_cast_forms():
    @qd.kernel
    def k(x: qd.f64, out: NDArray[qd.f64, 1]):
        a = qd.i32(x)
        out[0] = a
        out[1] = int(x)
        f = float(x)  # default_fp: f32
        t = f - f
        t = 0.000244140625
        out[2] = f
        out[3] = (f - f + 1) + t
        b = qd.cast(x, qd.f16)
        q = b - b
        q = 0.000244140625
        out[4] = (b - b + 1) + q
        u = qd.u8(qd.i32(x))
        out[5] = u
        g = int(x)
        out[6] = ~(g ^ g)
        out[7] = qd.bit_shr(~(g ^ g), 1)

    out = np.zeros(8)
    x = -1234.56789
    k(x, out)
    assert out[0] == -1234
    assert out[1] == -1234
    assert out[2] == float(np.float32(x))
    assert out[3] == 1.0 + 2.0**-12
    assert out[4] == 1.0  # f16
    assert out[5] == (-1234) % 256
    assert out[6] == -1
    assert out[7] == 2**31 - 1


def test_bool_builtin():
    @qd.kernel
    def k(x: qd.i32) -> qd.i64:
        return bool(x) + qd.u8(255)

    assert k(7) == 0
    assert k(0) == 255


def test_cast_int_narrowing_and_sign():
    @qd.kernel
    def k(a: NDArray[qd.i64, 1], out: NDArray[qd.i64, 2]):
        for i in range(a.shape[0]):
            out[i, 0] = qd.cast(a[i], qd.i8)
            out[i, 1] = qd.cast(a[i], qd.u16)
            out[i, 2] = qd.cast(a[i], qd.i32)
            out[i, 3] = qd.cast(a[i], qd.u32)

    a = rand(qd.i64, 1000)
    out = np.zeros((1000, 4), np.int64)
    k(a, out)
    expect = np.stack([a.astype(np.int8), a.astype(np.uint16), a.astype(np.int32), a.astype(np.uint32)],
                      axis=1).astype(np.int64)
    np.testing.assert_array_equal(out, expect)


def test_cast_float_narrowing():
    @qd.kernel
    def k(a: NDArray[qd.f64, 1], out: NDArray[qd.f64, 2]):
        for i in range(a.shape[0]):
            out[i, 0] = qd.cast(a[i], qd.f32)
            out[i, 1] = qd.cast(a[i], qd.f16)

    a = rng.standard_normal(1000) * 100
    out = np.zeros((1000, 2))
    k(a, out)
    np.testing.assert_array_equal(out[:, 0], a.astype(np.float32).astype(np.float64))
    np.testing.assert_array_equal(out[:, 1], a.astype(np.float16).astype(np.float64))


# --- default_fp / default_ip ---


def test_default_fp_ip_64(arch):
    qd.init(arch=getattr(qd, arch), default_fp=qd.f64, default_ip=qd.i64)

    @qd.kernel
    def k(a: qd.i32, b: qd.i32, out: NDArray[qd.f64, 1]):
        x = 0.1
        out[0] = x
        y = 2147483647
        out[1] = y + 1
        out[2] = a / b  # default_fp = f64
        z = 1099511627776  # 2**40 fits i64
        out[3] = z
        out[4] = float(a) / 3

    out = np.zeros(5)
    k(16777217, 3, out)
    assert out[0] == 0.1
    assert out[1] == 2147483648
    assert out[2] == 16777217 / 3
    assert out[3] == 2.0**40
    assert out[4] == pytest.approx(16777217 / 3, rel=4e-16)  # f64 (fast_math may use a reciprocal)


def test_int_float_builtins_on_python_values():
    """int()/float() of pure-Python values are folded by Python (spec 0.4: pure-Python sub-expressions
    are folded before typing)."""

    @qd.kernel
    def k() -> qd.f64:
        return int(2.5) + float(1)

    assert k() == 3.0


def test_default_ip_64_int_type(arch):
    qd.init(arch=getattr(qd, arch), default_ip=qd.i64)

    @qd.kernel
    def k(out: NDArray[qd.i64, 1]):
        y = 5
        out[0] = ~(y ^ y)
        out[1] = qd.bit_shr(~(y ^ y), 1)

    out = np.zeros(2, np.int64)
    k(out)
    assert list(out) == [-1, 2**63 - 1]


# --- literal range errors ---


def test_out_of_range_int_literal():
    @qd.kernel
    def k() -> qd.i64:
        b = 0x80000000
        return b

    with pytest.raises(qd.QuadrantsTypeError):
        k()


def test_out_of_range_folded_literal():
    @qd.kernel
    def k() -> qd.i64:
        b = 2**40
        return b

    with pytest.raises(qd.QuadrantsTypeError):
        k()


def test_negative_out_of_range_literal():
    @qd.kernel
    def k(a: qd.i64) -> qd.i64:
        return a + -2147483649

    with pytest.raises(qd.QuadrantsTypeError):
        k(1)


def test_out_of_range_literal_next_to_i64():
    """A Python int meeting an Expr is typed default_ip whatever the other operand's width."""

    @qd.kernel
    def k(a: qd.i64) -> qd.i64:
        return a + 2147483649

    with pytest.raises(qd.QuadrantsTypeError, match="exceeded the range"):
        k(1)


def test_min_i32_literal_ok():
    @qd.kernel
    def k() -> qd.i64:
        return -2147483648

    assert k() == -(2**31)


def test_typed_f32_of_int_literal():
    @qd.kernel
    def k() -> qd.f32:
        return qd.f32(0)

    with pytest.raises(qd.QuadrantsTypeError):
        k()


def test_typed_u16_of_negative():
    @qd.kernel
    def k() -> qd.i32:
        return qd.u16(-1)

    with pytest.raises(qd.QuadrantsTypeError):
        k()


def test_typed_i32_of_float_literal():
    @qd.kernel
    def k() -> qd.i32:
        return qd.i32(0.0)

    with pytest.raises(qd.QuadrantsTypeError):
        k()


def test_typed_u32_large_ok():
    @qd.kernel
    def k() -> qd.u32:
        return qd.u32(2891336453)

    assert k() == 2891336453


def test_typed_u8_overflow():
    @qd.kernel
    def k() -> qd.i32:
        return qd.u8(256)

    with pytest.raises(qd.QuadrantsTypeError):
        k()


def test_typed_i64_literal_ok():
    @qd.kernel
    def k() -> qd.i64:
        return qd.i64(2**40) + 1

    assert k() == 2**40 + 1


def test_typed_constant_wraps():
    @qd.kernel
    def k() -> qd.i64:
        return qd.u8(200) + qd.u8(100)

    assert k() == 44


def test_dtype_call_two_args_is_syntax_error():
    @qd.kernel
    def k() -> qd.i32:
        return qd.i32(1, 2)

    with pytest.raises(qd.QuadrantsSyntaxError):
        k()


def test_dtype_call_outside_kernel():
    with pytest.raises(Exception, match="cannot be called outside"):
        qd.f32(1.0)
