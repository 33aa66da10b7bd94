"""qd.volatile_load (a read never merged, moved or removed) and qd.clock_counter (the cycle
counter) in kernels."""

import numpy as np
import pytest

import quadrants as qd

from .helpers import rng

NDArray = qd.types.NDArray


def test_volatile_load_reads_the_element():
    f = qd.field(qd.f32, shape=7)
    values = rng.standard_normal(7).astype(np.float32)
    f.from_numpy(values)

    @qd.kernel
    def k(a: NDArray[qd.i64, 1], out: NDArray[qd.f64, 1]):
        for i in range(a.shape[0]):
            out[i] = qd.volatile_load(f[i]) + qd.volatile_load(a[i])

    a = rng.integers(-(2**40), 2**40, 7)
    out = np.zeros(7)
    k(a, out)
    # f32 + i64 is f32 (the float type wins)
    np.testing.assert_array_equal(out, (values + a.astype(np.float32)).astype(np.float64))


def test_volatile_load_sees_the_store_before_it():
    @qd.kernel
    def k(x: NDArray[qd.i32, 1]) -> qd.i32:
        x[0] = 5
        s = 0
        qd.loop_config(serialize=True)
        for _ in range(3):
            x[0] += 1
            s += qd.volatile_load(x[0])
        return s

    x = np.zeros(1, np.int32)
    assert k(x) == 6 + 7 + 8 and x[0] == 8


def test_volatile_load_takes_an_element():
    @qd.kernel
    def k(a: qd.i32) -> qd.i32:
        return qd.volatile_load(a)  # <not an element>

    with pytest.raises(qd.QuadrantsSyntaxError, match="element of a field or ndarray"):
        k(1)


def test_clock_counter_is_an_increasing_i64():
    @qd.kernel
    def k(n: qd.i32) -> qd.i64:
        t0 = qd.clock_counter()
        s = 0.0
        for i in range(n):
            s += qd.sqrt(qd.cast(i, qd.f32))
        t1 = qd.clock_counter()
        return t1 - t0 + qd.cast(s * 0.0, qd.i64)

    ticks = k(100000)
    assert isinstance(ticks, int) and ticks > 0


def test_get_addr_of_field_elements():
    f = qd.field(qd.f64, shape=(5, 3))
    m = qd.Vector.field(2, qd.i32, shape=4)

    @qd.kernel
    def k(i: qd.i32, j: qd.i32, out: NDArray[qd.u64, 1]):
        out[0] = qd.get_addr(f, [i, j]) - qd.get_addr(f, [0, 0])
        out[1] = qd.get_addr(f, qd.Vector([i, j])) - qd.get_addr(f, (0, 0))
        out[2] = qd.get_addr(m, i) - qd.get_addr(m, 0)
        out[3] = qd.get_addr(f, [0, 0])

    i, j = int(rng.integers(0, 5)), int(rng.integers(0, 3))
    out = np.zeros(4, np.uint64)
    k(i, j, out)
    assert out[0] == out[1] == (i * 3 + j) * 8  # row-major f64
    assert out[2] == i * 4  # component 0 of each element: one i32 field
    assert out[3] != 0 and out[3] % 8 == 0
