"""Math on the Vulkan backend against NumPy on fresh random inputs (no fixed seed): the double
helpers of codegen/glsl/glsl_math.c (exp, log, pow, sin, cos, tan, tanh, asin, acos, atan,
atan2), over their whole ranges with special values (inf, NaN, -0.0, subnormals, huge arguments
of sin / cos / tan), in f64 within 2 ulp of NumPy's float64 result and in f32 within 1 ulp of it
rounded to f32; f32 and f64 division and f32 sqrt correctly rounded, with and without fast_math.
A device may flush f32 subnormal operands to zero (NVIDIA's driver does, with or without
fast_math, and cannot promise otherwise); where a probe shows it, the f32 expectations are those
of the same math on flushed arguments (docs/vulkan.md)."""

import warnings

import numpy as np
import pytest

import quadrants as qd
from quadrants import _core

pytestmark = pytest.mark.skipif(
    not getattr(_core, "vulkan_available", lambda: False)()
    or not _core.vulkan_device_info().get("float64", True),
    reason="no Vulkan device with float64",
)

rng = np.random.default_rng()
N = 20000
NDArray = qd.types.NDArray
SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 2.2250738585072014e-308,
                     1.0, -1.0, 0.5, -0.5, 2.0, 1e-300, -1e-300, 1e300, 1.7976931348623157e308])


@pytest.fixture(autouse=True)
def vulkan(request):
    fast_math = getattr(request, "param", True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        qd.init(arch=qd.vulkan, offline_cache=False, fast_math=fast_math)
    yield
    qd.reset()


_flushes = {}  # (device, fast_math) -> whether f32 subnormals are flushed


def f32_flushes():
    """Whether this runtime's f32 arithmetic flushes subnormals to zero (probed once per device
    and fast_math setting)."""
    key = (qd._core.vulkan_device_info()["name"], bool(qd.cfg.fast_math))
    if key not in _flushes:

        @qd.kernel
        def halve(x: NDArray[qd.f32, 1]):
            for i in range(x.shape[0]):
                x[i] = x[i] * 0.5

        x = np.full(4, 2e-39, np.float32)
        halve(x)
        _flushes[key] = bool(x[0] == 0)
    return _flushes[key]


def flush32(v):
    """v (any float array) with what are f32 subnormals replaced by zeros of their sign."""
    tiny = float(np.finfo(np.float32).tiny)
    return np.where(np.abs(v) < tiny, np.copysign(0.0, v), v)


def expect(ref, dtype, *args):
    """ref over args in float64: NumPy's results, or where f32 subnormals are flushed, those of
    flushed f32 arguments. Results stay as computed: f32 math goes through double helpers, and
    the conversion of their results to float keeps subnormals (NVIDIA's driver)."""
    args = [a.astype(np.float64) for a in args]
    if dtype is np.float32 and f32_flushes():
        args = [flush32(a) for a in args]
    with np.errstate(all="ignore"):
        return ref(*args)


def log_uniform(lo, hi, n=N, signed=True):
    """n values spread evenly over the exponents of [lo, hi] (either sign when signed)."""
    v = np.exp(rng.uniform(np.log(lo), np.log(hi), n))
    return v * rng.choice([-1.0, 1.0], n) if signed else v


def ulps(got, want, dtype):
    """|got - want| in ulps of want in dtype; 0 where both are NaN or both are the same zero or
    infinity, inf where only one is NaN or a zero's sign differs."""
    got = got.astype(np.float64)
    want = want.astype(dtype).astype(np.float64)
    with np.errstate(invalid="ignore"):
        err = np.abs(got - want) / np.spacing(np.abs(want).astype(dtype)).astype(np.float64)
    err = np.where(got == want, 0.0, err)
    err = np.where(np.isnan(got) & np.isnan(want), 0.0, err)
    err = np.where(np.isnan(got) != np.isnan(want), np.inf, err)
    zero_sign = (got == 0) & (want == 0) & (np.signbit(got) != np.signbit(want))
    return np.where(zero_sign, np.inf, err)


def check(name, got, want, dtype, bound):
    err = ulps(got, want, dtype)
    i = int(np.argmax(err))
    assert err.max() <= bound, f"{name} {dtype.__name__}: {err.max()} ulp at [{i}]: got {got[i]!r} want {want[i]!r}"


@qd.func
def atan_of(v):
    return qd.atan2(v, 1.0)  # 1.0 takes v's type (v * 0 + 1 would be NaN for infinite v)


UNARY = {
    "exp": (qd.exp, np.exp, lambda: np.concatenate([
        rng.uniform(-746.0, 710.0, N), log_uniform(1e-300, 1.0), rng.uniform(-745.2, -708.0, 1000),
        [709.782712893384, 709.7827128933841, -745.1332191019411, -745.1332191019412]])),
    "log": (qd.log, np.log, lambda: np.concatenate([
        log_uniform(5e-324, 1.7e308, signed=False), 1.0 + log_uniform(1e-16, 1e-2),
        rng.uniform(0.5, 2.0, N), -log_uniform(1e-10, 1e10, 100, signed=False)])),
    "sin": (qd.sin, np.sin, lambda: np.concatenate([rng.uniform(-10.0, 10.0, N), log_uniform(1e-300, 1e22)])),
    "cos": (qd.cos, np.cos, lambda: np.concatenate([rng.uniform(-10.0, 10.0, N), log_uniform(1e-300, 1e22)])),
    "tan": (qd.tan, np.tan, lambda: np.concatenate([rng.uniform(-10.0, 10.0, N), log_uniform(1e-300, 1e22)])),
    "tanh": (qd.tanh, np.tanh, lambda: np.concatenate([rng.uniform(-25.0, 25.0, N), log_uniform(1e-300, 40.0)])),
    "asin": (qd.asin, np.arcsin, lambda: np.concatenate([
        rng.uniform(-1.0, 1.0, N), log_uniform(1e-300, 1.0), 1.0 - log_uniform(1e-16, 0.1, signed=False),
        rng.uniform(-3.0, 3.0, 100)])),
    "acos": (qd.acos, np.arccos, lambda: np.concatenate([
        rng.uniform(-1.0, 1.0, N), log_uniform(1e-300, 1.0), 1.0 - log_uniform(1e-16, 0.1, signed=False),
        -1.0 + log_uniform(1e-16, 0.1, signed=False), rng.uniform(-3.0, 3.0, 100)])),
    "atan": (atan_of, np.arctan, lambda: np.concatenate([rng.uniform(-10.0, 10.0, N), log_uniform(1e-300, 1e300)])),
    "sqrt": (qd.sqrt, np.sqrt, lambda: log_uniform(5e-324, 1.7e308, signed=False)),
}
TRIG = ("sin", "cos", "tan")
# f64 bounds in ulps of NumPy's result (itself within about half an ulp); f32 results are those
# of the f64 helpers rounded, so within an ulp of NumPy's float64 result rounded to f32
F64_BOUND = {"tan": 2, "tanh": 2, "asin": 2, "acos": 2, "atan": 2}


def _unary(fn):
    @qd.kernel
    def k(x: NDArray, out: NDArray):
        for i in range(x.shape[0]):
            out[i] = fn(x[i])

    return k


def _binary(fn):
    @qd.kernel
    def k(x: NDArray, y: NDArray, out: NDArray):
        for i in range(x.shape[0]):
            out[i] = fn(x[i], y[i])

    return k


@qd.func
def power(a, b):
    return a**b


@qd.func
def quotient(a, b):
    return a / b


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("name", list(UNARY))
def test_unary_against_numpy(name, dtype):
    fn, ref, inputs = UNARY[name]
    specials = SPECIALS[np.abs(SPECIALS) < 1e22] if name in TRIG else SPECIALS
    with np.errstate(over="ignore"):
        x = np.concatenate([inputs(), specials]).astype(dtype)
    out = np.zeros_like(x)
    _unary(fn)(x, out)
    want = expect(ref, dtype, x)
    bound = F64_BOUND.get(name, 1) if dtype is np.float64 else 1
    if name == "sqrt" and dtype is np.float32:
        bound = 0  # correctly rounded
    check(name, out, want, dtype, bound)


def special_grid(values):
    y, x = np.meshgrid(values, values)
    return y.ravel(), x.ravel()


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
def test_atan2_against_numpy(dtype):
    y = np.concatenate([rng.uniform(-10.0, 10.0, N), log_uniform(1e-300, 1e300)])
    x = np.concatenate([rng.uniform(-10.0, 10.0, N), log_uniform(1e-300, 1e300)])
    sy, sx = special_grid(np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 5e-324, -3e-310]))
    with np.errstate(over="ignore"):
        y, x = np.concatenate([y, sy]).astype(dtype), np.concatenate([x, sx]).astype(dtype)
    out = np.zeros_like(x)
    _binary(qd.atan2)(y, x, out)
    check("atan2", out, expect(np.arctan2, dtype, y, x), dtype,
          2 if dtype is np.float64 else 1)


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
def test_pow_against_numpy(dtype):
    x = np.concatenate([log_uniform(1e-5, 1e5, signed=False), rng.uniform(0.0, 3.0, N),
                        -rng.uniform(0.0, 3.0, N)])
    y = np.concatenate([rng.uniform(-60.0, 60.0, N), rng.uniform(-800.0, 800.0, N),
                        np.round(rng.uniform(-60.0, 60.0, N))])
    sy, sx = special_grid(np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.0, -2.0, 0.5,
                                    -0.5, 3.0, -3.0, 1e308, -1e308, 5e-324]))
    with np.errstate(over="ignore"):
        x, y = np.concatenate([x, sx]).astype(dtype), np.concatenate([y, sy]).astype(dtype)
    out = np.zeros_like(x)
    _binary(power)(x, y, out)
    check("pow", out, expect(np.power, dtype, x, y), dtype, 1)


@pytest.mark.parametrize("vulkan", [True, False], ids=["fast_math", "no_fast_math"], indirect=True)
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
def test_division_correctly_rounded(dtype):
    scale = 1e-30 if dtype is np.float32 else 1e-300
    a = np.concatenate([log_uniform(scale, 1 / scale), rng.standard_normal(N)])
    b = np.concatenate([log_uniform(scale, 1 / scale), rng.standard_normal(N)])
    sa, sb = special_grid(np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -3.0,
                                    float(np.finfo(dtype).smallest_subnormal), float(np.finfo(dtype).max)]))
    a, b = np.concatenate([a, sa]).astype(dtype), np.concatenate([b, sb]).astype(dtype)
    out = np.zeros_like(a)
    _binary(quotient)(a, b, out)
    check("division", out, expect(np.divide, dtype, a, b), dtype, 0)


@pytest.mark.parametrize("vulkan", [True, False], ids=["fast_math", "no_fast_math"], indirect=True)
def test_f32_sqrt_correctly_rounded():
    x = np.concatenate([log_uniform(1e-45, 3e38, signed=False), rng.uniform(0.0, 4.0, N),
                        np.array([0.0, -0.0, np.inf, -1.0, np.nan])]).astype(np.float32)
    out = np.zeros_like(x)
    _unary(qd.sqrt)(x, out)
    check("sqrt", out, expect(np.sqrt, np.float32, x), np.float32, 0)


@pytest.mark.parametrize("name", ["sin", "cos"])
def test_huge_trig_arguments_stay_in_range(name):
    """Past about 1e26 (docs/internals-glsl.md) the reduction by pi/2 is no longer exact, but
    sin and cos still give values in [-1, 1]."""
    x = np.concatenate([log_uniform(1e22, 1.7e308), [1.7976931348623157e308, -1e300]])
    out = np.zeros_like(x)
    _unary(UNARY[name][0])(x, out)
    assert np.all(np.abs(out) <= 1.0)


def test_f64_to_f16_rounds_once():
    """f64 -> f16 near the midpoints of f16 values (where rounding through f32 first goes wrong)."""
    h = rng.standard_normal(N).astype(np.float16).astype(np.float64)
    mid = h + np.spacing(np.abs(h).astype(np.float16)).astype(np.float64) / 2
    a = np.concatenate([mid * (1 + 2.0**-40), mid * (1 - 2.0**-40), mid, rng.standard_normal(N) * 100,
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 65520.0, 65519.99, 1e-9, 7e-8]])

    @qd.kernel
    def k(a: NDArray[qd.f64, 1], out: NDArray[qd.f16, 1]):
        for i in range(a.shape[0]):
            out[i] = qd.cast(a[i], qd.f16)

    out = np.zeros(a.size, np.float16)
    k(a, out)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out, a.astype(np.float16))
