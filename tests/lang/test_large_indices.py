"""Indices and loop counters past 2^31: a field of 2^31 elements or more is addressed in 64
bits, a 64-bit index is never narrowed into a wrong address, and a loop with 64-bit bounds
counts in 64 bits (exact trip counts and loop variables past 2^32)."""

import warnings

import numpy as np
import pytest

import quadrants as qd

NDArray = qd.types.NDArray

BIG = 2**31 + 16  # elements of the large u8 field (2 GiB)
AT = 2**31 + 3  # the element the tests write


@pytest.fixture
def big_u8():
    """A zeroed u8 field of 2^31 + 16 elements."""
    return qd.field(qd.u8, shape=BIG)


def test_field_past_2_31_runtime_index(big_u8):
    f = big_u8

    @qd.kernel
    def write(i: qd.i64):
        f[i] = 7

    @qd.kernel
    def read(i: qd.i64) -> qd.i32:
        return f[i]

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "casted into i32" warning either
        write(AT)
        assert read(AT) == 7
    assert [read(AT + d) for d in (-2, -1, 1, 2)] == [0, 0, 0, 0]
    assert read(AT - 2**31) == 0  # where a truncated index would have landed
    assert read(BIG - 1) == 0
    assert f[AT] == 7


def test_field_past_2_31_constant_and_u32_index(big_u8):
    f = big_u8

    @qd.kernel
    def write():
        f[2**31 + 3] = 7

    @qd.kernel
    def write_u32(i: qd.u32):
        f[i] = 9

    @qd.kernel
    def read(i: qd.i64) -> qd.i32:
        return f[i]

    write()
    write_u32(AT + 2)
    assert [read(AT + d) for d in range(-1, 4)] == [0, 7, 0, 9, 0]
    assert f[3] == 0 and f[5] == 0


def test_field_past_2_31_to_numpy(big_u8):
    f = big_u8

    @qd.kernel
    def write(i: qd.i64):
        f[i] = 7

    write(AT)
    a = f.to_numpy()
    np.testing.assert_array_equal(a[AT - 3 : AT + 4], [0, 0, 0, 7, 0, 0, 0])
    assert int(a.sum(dtype=np.int64)) == 7


def test_2d_field_past_2_31_elements():
    # 2 x (2^30 + 8) u8: each axis fits in i32, the linear index does not
    f = qd.field(qd.u8, shape=(2, 2**30 + 8))

    @qd.kernel
    def write(j: qd.i32):
        f[1, j] = 5

    @qd.kernel
    def read(i: qd.i32, j: qd.i32) -> qd.i32:
        return f[i, j]

    write(2**30 + 3)
    assert read(1, 2**30 + 3) == 5
    assert read(1, 2**30 + 2) == 0
    assert read(0, 2**30 + 3) == 0


def test_ndarray_i64_index():
    @qd.kernel
    def write(x: NDArray[qd.i32, 1], i: qd.i64, u: qd.u32):
        x[i] = 3
        x[u] = 4

    x = np.zeros(10, np.int32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        write(x, 6, 2)
    np.testing.assert_array_equal(x, [0, 0, 4, 0, 0, 0, 3, 0, 0, 0])


def test_i64_index_out_of_bounds_is_an_error_in_debug(arch):
    qd.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        qd.init(arch=getattr(qd, arch), debug=True)
    f = qd.field(qd.i32, shape=8)

    @qd.kernel
    def write(i: qd.i64):
        f[i] = 5

    write(7)
    # 2^32 + 1 would pass a check made after narrowing to i32 (it narrows to 1)
    with pytest.raises(qd.QuadrantsAssertionError, match="Out of bound"):
        write(2**32 + 1)
    # the failed access went to the axis start (clamped) rather than to element 1
    assert f.to_numpy().tolist()[1:] == [0] * 6 + [5]
