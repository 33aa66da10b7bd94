"""Compile-time integers are Python ints: any size while they are folded, range-checked when a
type is applied (an explicit dtype, or default_ip for an untyped literal that becomes a value)."""

import os
import random

import pytest

import quadrants as qd

THIS_FILE = os.path.abspath(__file__)


def default_ip_message(v, ip="i32"):
    return (f"Integer literal {v} exceeded the range of default_ip: {ip}, please specify the dtype via e.g. "
            f"`qd.u64({v})` or set a different `default_ip` in `qd.init()`")


def test_explicit_64_bit_extremes():
    @qd.kernel
    def umax() -> qd.u64:
        return qd.u64(2**64 - 1)

    @qd.kernel
    def imax() -> qd.i64:
        return qd.i64(2**63 - 1)

    @qd.kernel
    def imin() -> qd.i64:
        return qd.i64(-(2**63))

    @qd.kernel
    def ulit() -> qd.u64:
        return qd.u64(18446744073709551615)

    assert umax() == 18446744073709551615
    assert imax() == 9223372036854775807
    assert imin() == -9223372036854775808
    assert ulit() == 18446744073709551615


def test_folding_beyond_64_bits_matches_python():
    a = random.randrange(2**64, 2**100)
    b = random.randrange(2**40, 2**60)

    @qd.kernel
    def k() -> qd.i64:
        return qd.i64(a // b + (a % b) - (a >> 40) + (2**200 // 2**190))

    @qd.kernel
    def big_compare() -> qd.i32:
        r = 0
        if 2**70 > 2**69 and -(2**80) < 3 and 2**64 == 2**32 * 2**32 and not (2**65 != 2**65):
            r = 1
        return r

    @qd.kernel
    def unary() -> qd.u64:
        return qd.u64(-(-(2**64)) - 1) + qd.u64(~(-(2**64)) - 2**64 + 1)

    @qd.kernel
    def big_variable() -> qd.u64:
        x = 2**64  # a variable is a value: the literal must fit default_ip
        return qd.u64(x - 1)

    assert k() == a // b + (a % b) - (a >> 40) + 1024
    assert big_compare() == 1
    assert unary() == 2**64 - 1
    with pytest.raises(qd.QuadrantsTypeError) as ei:
        big_variable()
    assert default_ip_message(2**64) in str(ei.value)


def test_untyped_literal_must_fit_default_ip():
    @qd.kernel
    def bare() -> qd.i64:
        return 2**63 - 1  # <bare>

    with pytest.raises(qd.QuadrantsTypeError) as ei:
        bare()
    assert default_ip_message(9223372036854775807) in str(ei.value)
    assert f"{THIS_FILE}:" in str(ei.value)

    @qd.kernel
    def wide_var() -> qd.i64:
        x: qd.i64 = 2**40
        return x

    with pytest.raises(qd.QuadrantsTypeError) as ei:
        wide_var()
    assert default_ip_message(1099511627776) in str(ei.value)

    @qd.kernel
    def huge() -> qd.i32:
        return 99999999999999999999999999

    with pytest.raises(qd.QuadrantsTypeError) as ei:
        huge()
    assert default_ip_message(99999999999999999999999999) in str(ei.value)


@pytest.mark.parametrize(
    "dtype, value",
    [(qd.u64, 2**64), (qd.i64, 2**63), (qd.i32, 2**40), (qd.u8, 256), (qd.u8, -1), (qd.u64, -1)],
)
def test_explicit_dtype_range(dtype, value):
    @qd.kernel
    def k() -> qd.i32:
        x = dtype(value)
        return 0

    with pytest.raises(qd.QuadrantsTypeError) as ei:
        k()
    name = {qd.u64: "u64", qd.i64: "i64", qd.i32: "i32", qd.u8: "u8"}[dtype]
    assert f"Integer literal {value} exceeded the range of specified dtype: {name}" in str(ei.value)


def test_wider_default_ip(arch):
    qd.init(arch=getattr(qd, arch), default_ip=qd.i64)

    @qd.kernel
    def k() -> qd.i64:
        return 2**63 - 1

    @qd.kernel
    def over() -> qd.i64:
        return 2**63

    assert k() == 2**63 - 1
    with pytest.raises(qd.QuadrantsTypeError) as ei:
        over()
    assert default_ip_message(2**63, "i64") in str(ei.value)


def test_big_int_through_static():
    big = 2**80 + 12345

    @qd.kernel
    def k() -> qd.i64:
        return qd.i64(qd.static(big % 2**40) + big // 2**80)

    assert k() == 12345 + 1


def test_python_builtins_on_big_ints():
    @qd.kernel
    def k() -> qd.i32:
        return qd.i32(abs(-(2**70)) // 2**69 + int(2**70) // 2**68 + (float(2**70) > 1e21) * 100)

    assert k() == 2 + 4 + 100


def test_big_int_where_a_64_bit_value_is_needed():
    f = qd.field(qd.i32, shape=4)

    @qd.kernel
    def index() -> qd.i32:
        return f[2**64]

    @qd.kernel
    def vector_index() -> qd.i32:
        return qd.Vector([1, 2])[2**70]

    @qd.kernel
    def loop() -> qd.i32:
        s = 0
        for i in range(2**64, 2**64 + 3):
            s += 1
        return s

    for k, v in ((index, 2**64), (vector_index, 2**70), (loop, 2**64)):
        with pytest.raises(qd.QuadrantsTypeError) as ei:
            k()
        assert default_ip_message(v) in str(ei.value)

    @qd.kernel
    def static_loop() -> qd.i32:
        s = 0
        for i in qd.static(range(2**64, 2**64 + 3)):
            s += 1
        return s

    assert static_loop() == 3
