"""Arithmetic, bitwise, comparison and select ops on the CPU, element by element.

Each case compiles a one-op kernel (qir_helpers.elementwise) for one type, runs it on random
inputs with edge values mixed in (0, -1, the extremes), and compares every element with a
pure-Python reference of the semantics in ops.def / codegen.h: wrapping integer arithmetic,
C and Python division (nothing traps: x / 0 == 0, MIN / -1 == MIN), shift amounts taken modulo
the width, integer pow with a negative exponent == 1, minnum / maxnum on floats.
"""

import math

import numpy as np
import pytest

from qir_helpers import (
    DTYPES,
    FLOAT_TYPES,
    INT_TYPES,
    bits,
    elementwise,
    is_signed,
    random_array,
    run,
    wrap,
)

N = 1000


def trunc_div(a, b):
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def int_reference(op, ty, a, b):
    """ops.def semantics of `op` on Python ints a, b of type ty."""
    width = bits(ty)
    if op in ("div", "rem", "floordiv", "floormod") and b == 0:
        return 0
    if op == "add":
        r = a + b
    elif op == "sub":
        r = a - b
    elif op == "mul":
        r = a * b
    elif op == "div":
        r = trunc_div(a, b)
    elif op == "rem":
        r = a - trunc_div(a, b) * b
    elif op == "floordiv":
        r = a // b
    elif op == "floormod":
        r = a % b
    elif op == "min":
        r = min(a, b)
    elif op == "max":
        r = max(a, b)
    elif op == "pow":
        r = 1 if b < 0 else pow(a, b, 1 << 64)
    elif op == "and":
        r = a & b
    elif op == "or":
        r = a | b
    elif op == "xor":
        r = a ^ b
    elif op == "shl":
        r = a << (b & (width - 1))
    elif op == "shr":
        r = a >> (b & (width - 1))  # Python >> is arithmetic; unsigned a is non-negative
    elif op == "lshr":
        r = (a & ((1 << width) - 1)) >> (b & (width - 1))
    else:
        raise ValueError(op)
    return wrap(r, ty)


INT_OPS = ["add", "sub", "mul", "div", "rem", "floordiv", "floormod", "min", "max", "pow",
           "and", "or", "xor", "shl", "shr", "lshr"]


@pytest.mark.parametrize("ty", INT_TYPES)
@pytest.mark.parametrize("op", INT_OPS)
def test_int_binary(op, ty):
    rng = np.random.default_rng(hash((op, ty)) & 0xFFFF)
    x = random_array(ty, N, rng)
    y = random_array(ty, N, rng)
    if op == "pow":
        y = (rng.integers(-2, 12, N) if is_signed(ty) else rng.integers(0, 12, N)).astype(x.dtype)
    if op in ("shl", "shr", "lshr"):
        y[8:] = rng.integers(0, 2 * bits(ty) + 3, N - 8).astype(x.dtype)  # past the width too
    if op in ("div", "rem", "floordiv", "floormod"):
        y[8:40] = 0  # division by zero must not trap
        if is_signed(ty):
            x[40:48] = np.iinfo(x.dtype).min
            y[40:48] = -1
    out = np.zeros_like(x)
    run(elementwise(op, ty), "k", [x, y, out])
    want = [int_reference(op, ty, int(a), int(b)) for a, b in zip(x, y)]
    assert [int(v) for v in out] == want


def float_reference(op, a, b, dtype):
    """NumPy reference of a float op, computed in the operand type."""
    with np.errstate(all="ignore"):
        if op == "add":
            return a + b
        if op == "sub":
            return a - b
        if op == "mul":
            return a * b
        if op == "div":
            return a / b
        if op == "rem":
            return np.fmod(a, b)
        if op == "floordiv":
            return np.floor(a / b)
        if op == "floormod":
            return a - np.floor(a / b) * b
        if op == "min":
            return np.fmin(a, b)
        if op == "max":
            return np.fmax(a, b)
        if op == "pow":
            return np.power(a, b)
        if op == "atan2":
            return np.arctan2(a, b)
    raise ValueError(op)


FLOAT_OPS = ["add", "sub", "mul", "div", "rem", "floordiv", "floormod", "min", "max", "pow",
             "atan2"]


@pytest.mark.parametrize("fast_math", [False, True])
@pytest.mark.parametrize("ty", FLOAT_TYPES)
@pytest.mark.parametrize("op", FLOAT_OPS)
def test_float_binary(op, ty, fast_math):
    rng = np.random.default_rng(7)
    x = random_array(ty, N, rng)
    y = random_array(ty, N, rng)
    if op == "pow":
        x = np.abs(x) / 10
        y = (y / 40).astype(x.dtype)
    if op in ("div", "rem", "floordiv", "floormod"):
        y[8:12] = 0
    if op in ("min", "max"):
        x[20:24] = np.nan  # the non-NaN operand wins
        y[22:26] = np.nan
    out = np.zeros_like(x)
    run(elementwise(op, ty), "k", [x, y, out], options={"fast_math": fast_math})
    want = float_reference(op, x, y, x.dtype)
    exact = op in ("add", "sub", "mul", "div", "rem", "floordiv", "min", "max")
    if exact and not (fast_math and op == "div"):
        np.testing.assert_array_equal(out, want)
    else:
        # pow / atan2 come from libm; floormod may be contracted into an fma under fast math.
        rtol = 1e-5 if ty == "f32" else 1e-12
        np.testing.assert_allclose(out, want, rtol=rtol, atol=rtol * np.abs(y).max())


COMPARES = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
            "gt": np.greater, "ge": np.greater_equal}


@pytest.mark.parametrize("ty", INT_TYPES + FLOAT_TYPES)
@pytest.mark.parametrize("op", sorted(COMPARES))
def test_compare(op, ty):
    rng = np.random.default_rng(3)
    x = random_array(ty, N, rng)
    y = random_array(ty, N, rng)
    y[100:200] = x[100:200]  # equal operands
    if ty in FLOAT_TYPES:
        x[20:30] = np.nan  # ordered comparisons are false on NaN, ne is true
    out = np.zeros(N, dtype=np.bool_)
    run(elementwise(op, ty, out_ty="u1"), "k", [x, y, out])
    np.testing.assert_array_equal(out, COMPARES[op](x, y))


def test_select():
    text = """\
kernel @k(%c: ndarray<i32, 1>, %x: ndarray<f64, 1>, %y: ndarray<f64, 1>, %out: ndarray<f64, 1>) {
  task range_for {
    %zero = const 0 : i32
    %n = shape %c, 0 : i32
    parallel_for %i = %zero to %n {
      %pc = elem_ptr %c, %i : ptr<i32, global>
      %px = elem_ptr %x, %i : ptr<f64, global>
      %py = elem_ptr %y, %i : ptr<f64, global>
      %vc = load %pc : i32
      %vx = load %px : f64
      %vy = load %py : f64
      %r = select %vc, %vx, %vy : f64
      %po = elem_ptr %out, %i : ptr<f64, global>
      store %po, %r
    }
  }
}
"""
    rng = np.random.default_rng(1)
    c = rng.integers(-3, 3, N).astype(np.int32)
    x, y = rng.standard_normal(N), rng.standard_normal(N)
    out = np.zeros(N)
    run(text, "k", [c, x, y, out])
    np.testing.assert_array_equal(out, np.where(c != 0, x, y))


def unary_int_reference(op, ty, a):
    width = bits(ty)
    u = a & ((1 << width) - 1)
    if op == "neg":
        return wrap(-a, ty)
    if op == "abs":
        return wrap(abs(a), ty)
    if op == "not":
        return wrap(~a, ty)
    if op == "popcnt":
        return bin(u).count("1")
    if op == "clz":
        return width - u.bit_length()
    raise ValueError(op)


@pytest.mark.parametrize("ty", INT_TYPES)
@pytest.mark.parametrize("op", ["neg", "abs", "not", "popcnt", "clz"])
def test_int_unary(op, ty):
    rng = np.random.default_rng(11)
    x = random_array(ty, N, rng)
    out_ty = "i32" if op in ("popcnt", "clz") else ty
    out = np.zeros(N, dtype=DTYPES[out_ty])
    run(elementwise(op, ty, out_ty=out_ty, nargs=1), "k", [x, out])
    assert [int(v) for v in out] == [unary_int_reference(op, ty, int(a)) for a in x]


@pytest.mark.parametrize("ty", FLOAT_TYPES)
def test_float_neg_abs(ty):
    rng = np.random.default_rng(5)
    x = random_array(ty, N, rng)
    for op, ref in (("neg", np.negative), ("abs", np.abs)):
        out = np.zeros_like(x)
        run(elementwise(op, ty, nargs=1), "k", [x, out])
        np.testing.assert_array_equal(out, ref(x))


@pytest.mark.parametrize("op", ["div", "rem", "floordiv", "floormod"])
@pytest.mark.parametrize("divisor", [0, -1])
def test_constant_divisor(op, divisor):
    """A constant divisor of 0 or -1: LLVM folds the guarded sequence without trapping."""
    text = elementwise(op, "i32", nargs=1).replace(
        "%r = {0} %a : i32".format(op),
        "%d = const {0} : i32\n      %r = {1} %a, %d : i32".format(divisor, op))
    x = np.array([0, 1, -7, 7, 2**31 - 1, -2**31], dtype=np.int32)
    out = np.zeros_like(x)
    run(text, "k", [x, out])
    assert [int(v) for v in out] == [int_reference(op, "i32", int(a), divisor) for a in x]


def test_python_floor_semantics():
    """The examples of the spec: -10 // 3 == -4, 10 // -3 == -4, -10 % 3 == 2, 10 % -3 == -2."""
    x = np.array([-10, 10, -10, 10, 7, -7], dtype=np.int32)
    y = np.array([3, -3, 3, -3, 7, 7], dtype=np.int32)
    q, r = np.zeros_like(x), np.zeros_like(x)
    run(elementwise("floordiv", "i32"), "k", [x, y, q])
    run(elementwise("floormod", "i32"), "k", [x, y, r])
    assert list(q) == [-4, -4, -4, -4, 1, -1]
    assert list(r) == [2, -2, 2, -2, 0, 0]
    xf, yf = x.astype(np.float64) + 0.5, y.astype(np.float64)
    qf, rf = np.zeros_like(xf), np.zeros_like(xf)
    run(elementwise("floordiv", "f64"), "k", [xf, yf, qf], options={"fast_math": False})
    run(elementwise("floormod", "f64"), "k", [xf, yf, rf], options={"fast_math": False})
    assert list(qf) == [a // b for a, b in zip(xf.tolist(), yf.tolist())]
    assert all(math.isclose(a, b) for a, b in zip(rf.tolist(), [a % b for a, b in zip(xf, yf)]))


@pytest.mark.parametrize("ty,divisor", [("f32", 7), ("f64", 49)])
def test_floordiv_exact_under_fast_math(ty, divisor):
    """k * d // d == k even with fast math: the quotient is a true division, not a product with
    the inexact reciprocal 1/d (which misses for these divisors)."""
    text = elementwise("floordiv", ty, nargs=1).replace(
        "%r = floordiv %a : {0}".format(ty),
        "%d = const {1}.0 : {0}\n      %r = floordiv %a, %d : {0}".format(ty, divisor))
    k = np.arange(-300000, 300000).astype(DTYPES[ty])
    out = np.zeros_like(k)
    run(text, "k", [k * divisor, out])
    np.testing.assert_array_equal(out, k)
