"""Kernel-scope builtins seen from Python scope: the `_qd_builtin` markers the compiler keys on,
compile-time helpers (static, ndrange, ...) and the math helpers' values."""

import math

import numpy as np
import pytest

import quadrants as qd
from quadrants import _builtins

MARKED = [
    "static",
    "static_assert",
    "static_print",
    "ndrange",
    "grouped",
    "loop_config",
    "cast",
    "bit_cast",
    "sqrt",
    "rsqrt",
    "exp",
    "log",
    "sin",
    "cos",
    "tan",
    "tanh",
    "asin",
    "acos",
    "atan2",
    "floor",
    "ceil",
    "round",
    "abs",
    "pow",
    "min",
    "max",
    "select",
    "raw_div",
    "raw_mod",
    "bit_shr",
    "frexp",
    "atomic_add",
    "atomic_sub",
    "atomic_mul",
    "atomic_min",
    "atomic_max",
    "atomic_and",
    "atomic_or",
    "atomic_xor",
    "atomic_exchange",
    "atomic_cas",
    "random",
    "randn",
    "zero",
    "one",
    "global_thread_idx",
    "volatile_load",
    "clock_counter",
]
KERNEL_ONLY = [
    "loop_config",
    "atomic_add",
    "atomic_sub",
    "atomic_mul",
    "atomic_min",
    "atomic_max",
    "atomic_and",
    "atomic_or",
    "atomic_xor",
    "atomic_exchange",
    "atomic_cas",
    "random",
    "randn",
    "global_thread_idx",
    "volatile_load",
    "clock_counter",
]


@pytest.mark.parametrize("name", MARKED)
def test_marker(name):
    builtin = getattr(qd, name)
    assert builtin._qd_builtin == name
    assert builtin.__doc__


@pytest.mark.parametrize("name", KERNEL_ONLY)
def test_kernel_only_in_python_scope(name):
    with pytest.raises(qd.QuadrantsSyntaxError, match=f"qd.{name}"):
        getattr(qd, name)(1, 2)


def test_not_at_top_level():
    for name in ("mod", "log2", "exp2", "atan", "dot", "cross", "bool"):
        assert not hasattr(qd, name)


def test_static():
    assert qd.static(3) == 3 and qd.static(None) is None and qd.static(True) is True
    for value in (range(4), [1, 2], (1,), np.float32(1.5), np.int64(3)):
        assert qd.static(value) is value
    assert qd.static(1, 2, 3) == [1, 2, 3]
    assert qd.static(math.sqrt) is math.sqrt
    grid = qd.ndrange(2, 3)
    assert qd.static(grid) is grid
    with pytest.raises(ValueError, match="must be compile-time constants"):
        qd.static(object())
    with pytest.raises(ValueError):
        qd.static(np.zeros(3))


def test_static_of_quadrants_objects():
    qd.init()
    x = qd.field(qd.f32, shape=2)
    a = qd.ndarray(qd.f32, 2)

    @qd.func
    def helper():
        pass

    @qd.kernel
    def k():
        pass

    for value in (x, a, helper, k):
        assert qd.static(value) is value
    qd.reset()


def test_static_assert_and_print(capsys):
    qd.static_assert(True)
    qd.static_assert(1 + 1 == 2, "fine")
    with pytest.raises(AssertionError, match="the year must be a lunar year"):
        qd.static_assert(2001 % 4 == 0, "the year must be a lunar year")
    with pytest.raises(AssertionError):
        qd.static_assert(0)
    qd.static_print("hello", 3)
    assert capsys.readouterr().out == "hello 3\n"


def test_ndrange():
    assert list(qd.ndrange(2, 3)) == [(i, j) for i in range(2) for j in range(3)]
    assert list(qd.ndrange(3)) == [(0,), (1,), (2,)]
    assert list(qd.ndrange((1, 3), (2, 4))) == [(1, 2), (1, 3), (2, 2), (2, 3)]
    assert list(qd.ndrange((3, 1))) == []  # end clamped to begin
    assert list(qd.ndrange()) == [()]
    assert list(qd.ndrange(np.int32(2))) == [(0,), (1,)]
    assert len(qd.ndrange(4, 5)) == 20
    assert list(qd.static(qd.ndrange(2, 2))) == [(0, 0), (0, 1), (1, 0), (1, 1)]


def test_ndrange_axes():
    # axes: iteration order, outermost first; the yielded tuples keep argument positions.
    assert list(qd.ndrange(2, 3, axes=(1, 0))) == [(i, j) for j in range(3) for i in range(2)]
    assert list(qd.ndrange(2, 3, axes=[0, 1])) == list(qd.ndrange(2, 3))


def test_ndrange_errors():
    with pytest.raises(qd.QuadrantsTypeError):
        qd.ndrange(2.0)
    with pytest.raises(qd.QuadrantsTypeError):
        qd.ndrange((0, 1.5))
    with pytest.raises(qd.QuadrantsSyntaxError):
        qd.ndrange((0, 1, 2))
    with pytest.raises(qd.QuadrantsSyntaxError):
        qd.ndrange(2, 3, axes=(0,))
    with pytest.raises(qd.QuadrantsSyntaxError):
        qd.ndrange(2, 3, axes=(0, 0))
    with pytest.raises(qd.QuadrantsTypeError):
        qd.ndrange(2, 3, axes=(True, 0))


def test_grouped():
    grouped = qd.grouped(qd.ndrange(2, 2))
    assert list(grouped) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert list(qd.static(grouped)) == list(grouped)
    values = [1, 2]
    assert qd.grouped(values) is values


def test_casts():
    assert qd.cast(-1.7, qd.i32) == -1 and isinstance(qd.cast(-1.7, qd.i32), int)
    assert qd.cast(300, qd.u8) == 44
    assert qd.cast(1, qd.f32) == 1.0 and isinstance(qd.cast(1, qd.f32), float)
    assert qd.cast(0.1, float) == float(np.float32(0.1))
    assert qd.bit_cast(1.0, qd.i32) == 0x3F800000
    assert qd.bit_cast(0x3F800000, qd.f32) == 1.0
    assert qd.bit_cast(np.int64(-1), qd.u64) == 2**64 - 1
    assert qd.bit_cast(np.float16(1.0), qd.u16) == 0x3C00
    with pytest.raises(ValueError, match="same width"):
        qd.bit_cast(np.int8(1), qd.f32)


def test_math():
    assert qd.sqrt(4.0) == 2.0 and qd.rsqrt(4.0) == 0.5
    assert qd.exp(0.0) == 1.0 and qd.log(1.0) == 0.0
    assert qd.atan2(1.0, 1.0) == pytest.approx(math.pi / 4)
    assert qd.abs(-3) == 3 and qd.abs(-2.5) == 2.5
    assert qd.pow(2, 10) == 1024
    assert qd.min(3, 1, 2) == 1 and qd.max(3, 1, 2) == 3 and qd.min(7) == 7
    assert qd.select(True, 1, 2) == 1 and qd.select(0, 1, 2) == 2
    assert qd.zero(5) == 0 and qd.one(5.0) == 1.0
    assert qd.frexp(8.0) == (0.5, 4)


def test_rounding_keeps_floats():
    assert qd.floor(1.5) == 1.0 and isinstance(qd.floor(1.5), float)
    assert qd.ceil(-1.5) == -1.0 and isinstance(qd.ceil(-1.5), float)
    assert qd.floor(1.5, qd.i32) == 1 and isinstance(qd.floor(1.5, qd.i32), int)
    # round: halves away from zero (LLVM round), unlike Python's banker's rounding.
    assert [qd.round(x) for x in (0.5, 1.5, 2.5, -0.5, -2.5, 2.4, -2.6)] == [
        1.0,
        2.0,
        3.0,
        -1.0,
        -3.0,
        2.0,
        -3.0,
    ]
    assert qd.round(0.49999999999999994) == 0.0


def test_c_division():
    assert qd.raw_div(-7, 2) == -3 and qd.raw_div(7, -2) == -3 and qd.raw_div(7, 2) == 3
    assert qd.raw_mod(-4, 3) == -1 and qd.raw_mod(4, -3) == 1 and qd.raw_mod(7, 3) == 1
    assert qd.raw_div(7.0, 2.0) == 3.5
    assert qd.raw_mod(-4.5, 2.0) == -0.5
    assert (-4) % 3 == 2  # Python's % (the kernel's `%`) differs


def test_bit_shr_is_logical():
    assert qd.bit_shr(-1, 28) == 15  # default_ip i32
    assert qd.bit_shr(np.int8(-128), 7) == 1
    assert qd.bit_shr(np.uint32(0x80000000), 31) == 1
    assert qd.bit_shr(-8, 0) == -8
    assert qd.bit_shr(np.int64(-1), 60) == 15


def test_builtins_module_exports_all():
    for name in _builtins.__all__:
        assert getattr(qd, name) is getattr(_builtins, name)
