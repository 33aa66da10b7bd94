"""Float math (intrinsics and libm calls), casts, bitcasts, and f16 / bf16 arithmetic.

Math functions are compared with NumPy within a few ulps (fast math allows approximate
functions); casts exactly: integer narrowing wraps, float -> integer truncates toward zero and
saturates (NaN -> 0), integer -> float rounds to nearest.
"""

import numpy as np
import pytest

from qir_helpers import (
    DTYPES,
    FLOAT_TYPES,
    INT_TYPES,
    bits,
    elementwise,
    is_float,
    is_signed,
    random_array,
    run,
    wrap,
)

N = 1000


def round_half_away(x):
    return np.sign(x) * np.floor(np.abs(x.astype(np.float64)) + 0.5)


# op -> (reference, input generator); inputs stay inside each function's domain.
MATH = {
    "sqrt": (np.sqrt, lambda r: r.uniform(0, 100, N)),
    "rsqrt": (lambda x: 1 / np.sqrt(x), lambda r: r.uniform(0.01, 100, N)),
    "exp": (np.exp, lambda r: r.uniform(-20, 20, N)),
    "log": (np.log, lambda r: r.uniform(1e-3, 1e3, N)),
    "sin": (np.sin, lambda r: r.uniform(-10, 10, N)),
    "cos": (np.cos, lambda r: r.uniform(-10, 10, N)),
    "tan": (np.tan, lambda r: r.uniform(-1.4, 1.4, N)),
    "tanh": (np.tanh, lambda r: r.uniform(-5, 5, N)),
    "asin": (np.arcsin, lambda r: r.uniform(-1, 1, N)),
    "acos": (np.arccos, lambda r: r.uniform(-1, 1, N)),
    "atan": (np.arctan, lambda r: r.uniform(-50, 50, N)),
    "floor": (np.floor, lambda r: r.uniform(-50, 50, N)),
    "ceil": (np.ceil, lambda r: r.uniform(-50, 50, N)),
    "round": (round_half_away, lambda r: np.concatenate(
        [np.arange(-5.5, 5.5, 0.5), r.uniform(-50, 50, N - 22)])),
}


@pytest.mark.parametrize("ty", FLOAT_TYPES)
@pytest.mark.parametrize("op", sorted(MATH))
def test_math(op, ty):
    ref, gen = MATH[op]
    x = gen(np.random.default_rng(2)).astype(DTYPES[ty])
    out = np.zeros_like(x)
    run(elementwise(op, ty, nargs=1), "k", [x, out])
    want = ref(x.astype(np.float64))
    if op in ("floor", "ceil", "round"):
        np.testing.assert_array_equal(out, want)
    else:
        rtol = 4e-6 if ty == "f32" else 1e-13
        np.testing.assert_allclose(out, want, rtol=rtol, atol=rtol)


def cast_reference(value, src, dst):
    """The value `value` (Python int / float) of type src, cast to dst per ops.def."""
    if not is_float(src) and not is_float(dst):
        return wrap(int(value), dst)
    if is_float(dst):
        return float(np.array(value).astype(DTYPES[dst]))  # round to nearest
    # float -> integer: truncate toward zero, saturate, NaN -> 0
    if np.isnan(value):
        return 0
    width = bits(dst)
    lo, hi = (-(1 << (width - 1)), (1 << (width - 1)) - 1) if is_signed(dst) else (0, (1 << width) - 1)
    if np.isinf(value):
        return lo if value < 0 else hi
    return min(max(int(value), lo), hi)


CAST_TYPES = ["u1"] + INT_TYPES + FLOAT_TYPES


@pytest.mark.parametrize("src", CAST_TYPES)
@pytest.mark.parametrize("dst", CAST_TYPES)
def test_cast(src, dst):
    rng = np.random.default_rng(4)
    if src == "u1":
        x = rng.integers(0, 2, N).astype(np.bool_)
    elif is_float(src):
        x = (rng.standard_normal(N) * 10.0 ** rng.integers(0, 21, N)).astype(DTYPES[src])
        x[:6] = [np.nan, np.inf, -np.inf, 0.999, -0.999, -0.0]
    else:
        x = random_array(src, N, rng)
    out = np.zeros(N, dtype=DTYPES[dst])
    run(elementwise("cast", src, out_ty=dst, nargs=1), "k", [x, out])
    pyvals = x.tolist()
    want = [cast_reference(v, src, dst) for v in pyvals]
    got = out.tolist()
    if is_float(dst):
        np.testing.assert_array_equal(np.array(got), np.array(want))
    else:
        assert [int(g) for g in got] == want


@pytest.mark.parametrize("src,dst", [("f32", "i32"), ("i32", "f32"), ("f64", "u64"),
                                     ("u64", "f64"), ("f16", "u16"), ("i16", "f16")])
def test_bitcast(src, dst):
    x = random_array(src, N, np.random.default_rng(9), special=False)
    out = np.zeros(N, dtype=DTYPES[dst])
    run(elementwise("bitcast", src, out_ty=dst, nargs=1), "k", [x, out])
    np.testing.assert_array_equal(out, x.view(DTYPES[dst]))


def bf16_to_f32(b):
    return (b.astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16(f):
    """Round to nearest even on the bits (the inputs here are finite)."""
    u = f.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "min", "max"])
def test_f16(op):
    rng = np.random.default_rng(6)
    x = (rng.standard_normal(N) * 8).astype(np.float16)
    y = (rng.standard_normal(N) * 8).astype(np.float16)
    out = np.zeros_like(x)
    run(elementwise(op, "f16"), "k", [x, y, out])
    ref = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
           "min": np.fmin, "max": np.fmax}[op]
    np.testing.assert_array_equal(out, ref(x, y))


@pytest.mark.parametrize("op", ["add", "mul", "div"])
def test_bf16(op):
    rng = np.random.default_rng(8)
    x = f32_to_bf16(rng.standard_normal(N).astype(np.float32) * 8)
    y = f32_to_bf16(rng.standard_normal(N).astype(np.float32) * 8)
    out = np.zeros_like(x)
    run(elementwise(op, "bf16"), "k", [x, y, out])
    ref = {"add": np.add, "mul": np.multiply, "div": np.divide}[op]
    want = f32_to_bf16(ref(bf16_to_f32(x), bf16_to_f32(y)))
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("src,dst", [("f64", "f16"), ("f32", "bf16"), ("f64", "bf16"),
                                     ("f16", "f64"), ("bf16", "f32"), ("f16", "bf16")])
def test_narrow_float_casts(src, dst):
    rng = np.random.default_rng(12)
    wide = rng.standard_normal(N) * 10.0 ** rng.integers(-8, 6, N)
    with np.errstate(over="ignore"):  # values past the f16 range become infinities
        check_narrow_cast(wide, src, dst)


def check_narrow_cast(wide, src, dst):
    if src == "bf16":
        x = f32_to_bf16(wide.astype(np.float32))
        as_f64 = bf16_to_f32(x).astype(np.float64)
    else:
        x = wide.astype(DTYPES[src])
        as_f64 = x.astype(np.float64)
    out = np.zeros(N, dtype=DTYPES[dst])
    run(elementwise("cast", src, out_ty=dst, nargs=1), "k", [x, out])
    if dst == "bf16":
        want = f32_to_bf16(as_f64.astype(np.float32))  # f64 -> bf16 rounds through f32
    else:
        want = as_f64.astype(DTYPES[dst])
    np.testing.assert_array_equal(out, want)


def test_scalar_half_arguments_and_results():
    """f16 / bf16 / u1 scalars through the argument buffer and kernel_ret."""
    text = """\
kernel @k(%h: f16, %b: bf16, %c: u1) {
  task serial {
    %two = const 2 : f16
    %h2 = mul %h, %two : f16
    kernel_ret %h2, 0
    %b2 = add %b, %b : bf16
    kernel_ret %b2, 1
    %nc = not %c : u1
    kernel_ret %nc, 2
  }
}
"""
    assert run(text, "k", [1.5, 3.25, True]) == [3.0, 6.5, False]
