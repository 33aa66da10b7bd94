"""Spec 0.4: a Python float becomes a kernel value as a default_fp (f32) constant, converted from
there (so an f64 context sees it rounded to f32, unless written `qd.f64(0.1)`); true division
makes an integer operand a default_fp value first; conversion to u1 is a truth value."""

import numpy as np
import pytest

import quadrants as qd

from .helpers import rng

NDArray = qd.types.NDArray

F32_TENTH = float(np.float32(0.1))  # 0.10000000149011612


def test_float_literal_in_f64_return():
    @qd.kernel
    def k() -> qd.f64:
        return 0.1

    assert k() == F32_TENTH


def test_float_literal_in_f64_product():
    @qd.kernel
    def k(a: NDArray[qd.f64, 1], out: NDArray[qd.f64, 1]):
        for i in range(a.shape[0]):
            out[i] = a[i] * 0.1

    a = rng.standard_normal(1000)
    out = np.zeros_like(a)
    k(a, out)
    np.testing.assert_array_equal(out, a * F32_TENTH)


def test_float_literal_rounded_in_f64_contexts():
    @qd.kernel
    def ret_big() -> qd.f64:
        return 16777217.0

    @qd.kernel
    def add_big(x: qd.f64) -> qd.f64:
        return x + 16777217.0

    @qd.kernel
    def huge() -> qd.f64:
        v = 1e300
        return v

    @qd.kernel
    def aug() -> qd.f64:
        v = qd.f64(0.0)
        v += 0.1
        return v

    @qd.kernel
    def store(x: NDArray[qd.f64, 1]):
        x[0] = 0.1

    @qd.kernel
    def compare(x: qd.f64) -> qd.i32:
        return x == 0.1

    @qd.kernel
    def folded(x: qd.f64) -> qd.f64:
        return x + 0.1 * 3  # folded in Python first, then rounded once

    assert ret_big() == 16777216.0
    assert add_big(0.0) == 16777216.0
    assert huge() == float("inf")
    assert aug() == F32_TENTH
    arr = np.zeros(1)
    store(arr)
    assert arr[0] == F32_TENTH
    assert compare(0.1) == 0
    assert compare(F32_TENTH) == 1
    assert folded(0.0) == float(np.float32(0.1 * 3))


def test_float_literal_cast_and_explicit_f64():
    @qd.kernel
    def explicit() -> qd.f64:
        return qd.f64(0.1)

    @qd.kernel
    def cast() -> qd.f64:
        return qd.cast(0.1, qd.f64)

    assert explicit() == 0.1
    assert cast() == F32_TENTH


def test_float_constant_bound_to_f64_parameter():
    @qd.func
    def ident(p: qd.f64):
        return p

    @qd.kernel
    def k() -> qd.f64:
        return ident(0.1)

    assert k() == F32_TENTH


def test_float_literal_in_f64_vector_and_struct():
    S = qd.types.struct(x=qd.f64)

    @qd.kernel
    def vec() -> qd.f64:
        v = qd.Vector([0.1, 0.2], dt=qd.f64)
        return v[0]

    @qd.kernel
    def member() -> qd.f64:
        s = S(x=0.1)
        return s.x

    assert vec() == F32_TENTH
    assert member() == F32_TENTH


@pytest.mark.parametrize("ti", [qd.i32, qd.i64], ids=["i32", "i64"])
def test_int_true_division_by_f64_goes_through_f32(ti):
    @qd.kernel
    def k(a: NDArray[ti, 1], b: NDArray[qd.f64, 1], q: NDArray[qd.f64, 1], r: NDArray[qd.f64, 1]):
        for i in range(a.shape[0]):
            q[i] = a[i] / b[i]
            r[i] = b[i] / a[i]

    info = np.iinfo(np.int32 if ti is qd.i32 else np.int64)
    a = rng.integers(info.min, info.max, size=1000, dtype=info.dtype)
    a[a == 0] = 1
    b = rng.standard_normal(1000) + 3.0
    q = np.zeros(1000)
    r = np.zeros(1000)
    k(a, b, q, r)
    af = a.astype(np.float32).astype(np.float64)
    np.testing.assert_array_equal(q, af / b)
    np.testing.assert_array_equal(r, b / af)


def test_int_literal_true_division_by_f64():
    @qd.kernel
    def k(x: qd.f64) -> qd.f64:
        return 16777217 / x

    assert k(1.0) == 16777216.0


def test_cast_to_u1_is_truth_value():
    @qd.kernel
    def const_int() -> qd.i32:
        return qd.cast(2, qd.u1)

    @qd.kernel
    def const_float() -> qd.i32:
        return qd.cast(0.5, qd.u1)

    @qd.kernel
    def ret_u1() -> qd.u1:
        return 2

    assert const_int() == 1
    assert const_float() == 1
    assert ret_u1() == 1


@pytest.mark.parametrize("t", [qd.i32, qd.i64, qd.u8, qd.f32, qd.f64], ids=["i32", "i64", "u8", "f32", "f64"])
def test_runtime_cast_to_u1_is_truth_value(t):
    @qd.kernel
    def k(a: NDArray[t, 1], out: NDArray[qd.i32, 1], assigned: NDArray[qd.i32, 1]):
        for i in range(a.shape[0]):
            out[i] = qd.cast(a[i], qd.u1)
            v = qd.cast(0, qd.u1)
            v = a[i]
            assigned[i] = v

    if t in (qd.f32, qd.f64):
        a = (rng.standard_normal(1000) * rng.choice([0.0, 0.3, 1e3], size=1000)).astype(
            np.float32 if t is qd.f32 else np.float64
        )
    else:
        d = {qd.i32: np.int32, qd.i64: np.int64, qd.u8: np.uint8}[t]
        a = rng.integers(np.iinfo(d).min, np.iinfo(d).max, size=1000, dtype=d)
        a[::3] = 0
        a[1::7] = 256 if t is not qd.u8 else 2
    out = np.zeros(1000, np.int32)
    assigned = np.zeros(1000, np.int32)
    with pytest.warns(UserWarning):
        k(a, out, assigned)
    np.testing.assert_array_equal(out, (a != 0).astype(np.int32))
    np.testing.assert_array_equal(assigned, (a != 0).astype(np.int32))
