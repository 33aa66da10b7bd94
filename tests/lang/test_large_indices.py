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
        f[qd.i64(2**31 + 3)] = 7  # an untyped literal must fit default_ip (i32)

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


N33 = 2**33


def test_parallel_range_i64_bounds_past_2_32():
    out = qd.field(qd.i64, shape=8)
    hits = qd.field(qd.i32, shape=8)

    @qd.kernel
    def k(n: qd.i64):
        for i in range(n - 4, n):
            out[i - (n - 4)] = i
            hits[i - (n - 4)] += 1

    k(N33)
    assert out.to_numpy().tolist() == [N33 - 4, N33 - 3, N33 - 2, N33 - 1, 0, 0, 0, 0]
    assert hits.to_numpy().tolist() == [1, 1, 1, 1, 0, 0, 0, 0]


def test_parallel_range_constant_bounds_past_2_31():
    out = qd.field(qd.i64, shape=8)

    @qd.kernel
    def k():
        for i in range(2**31 + 5, 2**31 + 10):
            out[i - qd.i64(2**31 + 5)] = i

    k()
    assert out.to_numpy().tolist() == [2**31 + 5 + d for d in range(5)] + [0, 0, 0]


def test_serial_range_i64_trip_count_with_break():
    @qd.kernel
    def k(n: qd.i64) -> qd.i64:
        last = qd.i64(-1)
        qd.loop_config(serialize=True)  # a top-level loop may break only when serial
        for i in range(n):
            if i >= 3:
                break
            last = i
        count = qd.i64(0)
        for _ in range(1):
            for j in range(n - 3, n):
                count += j - (n - 3) + 1
        return last * 100 + count

    # not zero trips: last = 2, count = 1 + 2 + 3
    assert k(N33) == 206


def test_range_loop_variable_is_i64():
    @qd.kernel
    def k(n: qd.i64) -> qd.i64:
        s = qd.i64(0)
        for _ in range(1):
            for i in range(n - 2, n):
                s += i * 2  # would wrap in i32
        return s

    assert k(N33) == 2 * (N33 - 2) + 2 * (N33 - 1)


def test_u32_bound_counts_past_2_31():
    out = qd.field(qd.i64, shape=4)

    @qd.kernel
    def k(n: qd.u32):
        for i in range(n - 3, n):
            out[i - (n - 3)] = i

    k(2**32 - 1)
    assert out.to_numpy().tolist() == [2**32 - 4, 2**32 - 3, 2**32 - 2, 0]


def test_ndrange_i64_bounds():
    out = qd.field(qd.i64, shape=(3, 4))

    @qd.kernel
    def k(n: qd.i64):
        for i, j in qd.ndrange((n - 3, n), 4):
            out[i - (n - 3), j] = i * 10 + j

    k(N33)
    expected = [[(N33 - 3 + a) * 10 + b for b in range(4)] for a in range(3)]
    assert out.to_numpy().tolist() == expected


def test_ndrange_runtime_extents_near_2_16():
    # a 2-d ndrange of runtime i32 extents counts in i64 (2^16 x 2^16 would wrap an i32 counter;
    # tests/frontend/golden/wide_loops.qir shows the form); the coordinates stay exact
    hits = qd.field(qd.i32, shape=4)

    @qd.kernel
    def k(n: qd.i32):
        for i, j in qd.ndrange((n - 1, n), (n - 4, n)):
            hits[j - (n - 4)] += i - (n - 2)

    k(2**16)
    assert hits.to_numpy().tolist() == [1, 1, 1, 1]


def test_grouped_i64_bounds():
    out = qd.field(qd.i64, shape=(2, 3))

    @qd.kernel
    def k(n: qd.i64):
        for I in qd.grouped(qd.ndrange((n - 2, n), 3)):
            out[I[0] - (n - 2), I[1]] = I[0] + I[1]

    k(N33)
    assert out.to_numpy().tolist() == [[N33 - 2 + b for b in range(3)], [N33 - 1 + b for b in range(3)]]


def test_struct_for_over_field_past_2_31(big_u8):
    f = big_u8

    @qd.kernel
    def k():
        for i in f:  # a plain store per element: vectorizes, so 2^31 iterations stay cheap
            f[i] = qd.u8(i >= qd.i64(BIG - 4)) + qd.u8(i == qd.i64(3))

    k()
    assert [f[BIG - 5 + d] for d in range(5)] == [0, 1, 1, 1, 1]
    assert [f[d] for d in range(2, 5)] == [0, 1, 0]
    assert f[BIG - 4 - 2**31] == 0


def test_u64_bounds_across_2_63():
    out = qd.field(qd.u64, shape=4)

    @qd.kernel
    def par(n: qd.u64):
        for i in range(n - 3, n):
            out[qd.i32(i - (n - 3))] = i

    @qd.kernel
    def serial(n: qd.u64) -> qd.u64:
        t = qd.u64(0)
        for _ in range(1):
            for i in range(n - 3, n):
                t += i - (n - 3) + 1
        return t

    par(2**63 + 1)
    assert out.to_numpy().tolist() == [2**63 - 2, 2**63 - 1, 2**63, 0]
    assert serial(2**63 + 1) == 6
    assert serial(2**64 - 1) == 6


def test_u64_bound_with_signed_bound_is_an_error():
    out = qd.field(qd.u64, shape=1)

    @qd.kernel
    def k(n: qd.u64, b: qd.i32):
        for i in range(b, n):
            out[0] = i

    with pytest.raises(qd.QuadrantsTypeError, match="mix u64 with a signed"):
        k(3, 1)


def test_untyped_index_literal_must_fit_default_ip():
    """As in the reference, an index literal is a default_ip (i32) value: 2**31 + 3 raises at
    compile time, naming the line (a typed qd.i64(...) constant is the way to write it)."""
    f = qd.field(qd.f32, shape=4)

    @qd.kernel
    def read() -> qd.f32:
        return f[2**40]

    with pytest.raises(qd.QuadrantsTypeError) as info:
        read()
    message = str(info.value)
    assert "Integer literal 1099511627776 exceeded the range of default_ip: i32" in message
    assert "return f[2**40]" in message
