"""Spec 0.14: atomics return the old value, are exact under contention, augmented assignment is
atomic (+= -= &= |= ^=), *= is plain read-modify-write, error cases."""

import warnings

import numpy as np
import pytest

import quadrants as qd

from .helpers import INT_TYPES, NP, name, rand, rng

NDArray = qd.types.NDArray


def test_histogram_exact_counts():
    hist = qd.field(qd.i32, shape=16)

    @qd.kernel
    def k(x: NDArray[qd.i32, 1]):
        for i in range(x.shape[0]):
            qd.atomic_add(hist[x[i]], 1)

    x = rng.integers(0, 16, 1000000).astype(np.int32)
    k(x)
    np.testing.assert_array_equal(hist.to_numpy(), np.bincount(x, minlength=16))


def test_histogram_augassign_ndarray():
    @qd.kernel
    def k(x: NDArray[qd.i32, 1], hist: NDArray[qd.i64, 1]):
        for i in range(x.shape[0]):
            hist[x[i]] += 1

    x = rng.integers(0, 16, 1000000).astype(np.int32)
    hist = np.zeros(16, np.int64)
    k(x, hist)
    np.testing.assert_array_equal(hist, np.bincount(x, minlength=16))


def test_single_counter_contention():
    c = qd.field(qd.i64, shape=())

    @qd.kernel
    def k(n: qd.i32):
        for i in range(n):
            c[None] += i

    k(1000000)
    assert c[None] == 1000000 * 999999 // 2


def test_atomic_add_returns_old_values_unique():
    c = qd.field(qd.i32, shape=())

    @qd.kernel
    def k(out: NDArray[qd.i32, 1]):
        for i in range(out.shape[0]):
            out[i] = qd.atomic_add(c[None], 1)

    n = 200000
    out = np.zeros(n, np.int32)
    k(out)
    assert c[None] == n
    np.testing.assert_array_equal(np.sort(out), np.arange(n))


def test_atomic_sub_returns_old():
    c = qd.field(qd.i32, shape=())

    @qd.kernel
    def k(out: NDArray[qd.i32, 1]):
        for i in range(out.shape[0]):
            out[i] = qd.atomic_sub(c[None], 2)

    n = 100000
    out = np.zeros(n, np.int32)
    k(out)
    assert c[None] == -2 * n
    np.testing.assert_array_equal(np.sort(out), -2 * np.arange(n)[::-1])


@pytest.mark.parametrize("t", INT_TYPES, ids=name)
def test_integer_atomics_serial_semantics(t):
    """Each atomic returns the old value and stores the op's result (checked element by element)."""

    @qd.kernel
    def k(x: NDArray, y: NDArray, old: NDArray, new: NDArray):
        for i in range(x.shape[0]):
            for op in qd.static(range(9)):
                new[i, op] = x[i]
            old[i, 0] = qd.atomic_add(new[i, 0], y[i])
            old[i, 1] = qd.atomic_sub(new[i, 1], y[i])
            old[i, 2] = qd.atomic_mul(new[i, 2], y[i])
            old[i, 3] = qd.atomic_min(new[i, 3], y[i])
            old[i, 4] = qd.atomic_max(new[i, 4], y[i])
            old[i, 5] = qd.atomic_and(new[i, 5], y[i])
            old[i, 6] = qd.atomic_or(new[i, 6], y[i])
            old[i, 7] = qd.atomic_xor(new[i, 7], y[i])
            old[i, 8] = qd.atomic_exchange(new[i, 8], y[i])

    n = 1000
    x = rand(t, n)
    y = rand(t, n)
    old = np.zeros((n, 9), NP[t])
    new = np.zeros((n, 9), NP[t])
    k(x, y, old, new)
    np.testing.assert_array_equal(old, np.repeat(x[:, None], 9, axis=1))
    with np.errstate(over="ignore"):
        expect = np.stack([x + y, x - y, x * y, np.minimum(x, y), np.maximum(x, y), x & y, x | y, x ^ y, y], axis=1)
    np.testing.assert_array_equal(new, expect)


@pytest.mark.parametrize("t", [qd.i32, qd.u32, qd.i64, qd.u64], ids=name)
def test_atomic_cas(t):
    @qd.kernel
    def k(x: NDArray, e: NDArray, d: NDArray, old: NDArray):
        for i in range(x.shape[0]):
            old[i] = qd.atomic_cas(x[i], e[i], d[i])

    n = 1000
    x = rand(t, n)
    e = rand(t, n)
    e[::2] = x[::2]  # half succeed
    d = rand(t, n)
    x0 = x.copy()
    old = np.zeros(n, NP[t])
    k(x, e, d, old)
    np.testing.assert_array_equal(old, x0)
    np.testing.assert_array_equal(x, np.where(x0 == e, d, x0))


def test_cas_lock_free_counter():
    c = qd.field(qd.i32, shape=())

    @qd.kernel
    def k(n: qd.i32):
        for i in range(n):
            done = 0
            while done == 0:
                cur = c[None]
                if qd.atomic_cas(c[None], cur, cur + 1) == cur:
                    done = 1

    k(100000)
    assert c[None] == 100000


@pytest.mark.parametrize("t", [qd.f32, qd.f64], ids=name)
def test_float_atomics_serial_semantics(t):
    @qd.kernel
    def k(x: NDArray, y: NDArray, old: NDArray, new: NDArray):
        for i in range(x.shape[0]):
            for op in qd.static(range(6)):
                new[i, op] = x[i]
            old[i, 0] = qd.atomic_add(new[i, 0], y[i])
            old[i, 1] = qd.atomic_sub(new[i, 1], y[i])
            old[i, 2] = qd.atomic_mul(new[i, 2], y[i])
            old[i, 3] = qd.atomic_min(new[i, 3], y[i])
            old[i, 4] = qd.atomic_max(new[i, 4], y[i])
            old[i, 5] = qd.atomic_exchange(new[i, 5], y[i])

    n = 1000
    x = rand(t, n)
    y = rand(t, n)
    old = np.zeros((n, 6), NP[t])
    new = np.zeros((n, 6), NP[t])
    k(x, y, old, new)
    np.testing.assert_array_equal(old, np.repeat(x[:, None], 6, axis=1))
    expect = np.stack([x + y, x - y, x * y, np.minimum(x, y), np.maximum(x, y), y], axis=1)
    np.testing.assert_array_equal(new, expect)


def test_float_atomic_add_contention():
    s = qd.field(qd.f64, shape=())

    @qd.kernel
    def k(x: NDArray[qd.f64, 1]):
        for i in range(x.shape[0]):
            s[None] += x[i]

    # integers held exactly in f64: the sum is exact whatever the order
    x = rng.integers(-1000, 1000, 1000000).astype(np.float64)
    k(x)
    assert s[None] == x.sum()


def test_float_atomic_min_max_contention():
    lo = qd.field(qd.f32, shape=())
    hi = qd.field(qd.f32, shape=())

    @qd.kernel
    def k(x: NDArray[qd.f32, 1]):
        lo[None] = 1e30
        hi[None] = -1e30
        for i in range(x.shape[0]):
            qd.atomic_min(lo[None], x[i])
            qd.atomic_max(hi[None], x[i])

    x = rng.standard_normal(1000000).astype(np.float32)
    k(x)
    assert lo[None] == x.min()
    assert hi[None] == x.max()


def test_int_atomic_min_max_contention():
    @qd.kernel
    def k(x: NDArray[qd.i64, 1], r: NDArray[qd.i64, 1]):
        for i in range(x.shape[0]):
            qd.atomic_min(r[0], x[i])
            qd.atomic_max(r[1], x[i])

    x = rand(qd.i64, 1000000)
    r = np.array([np.iinfo(np.int64).max, np.iinfo(np.int64).min], np.int64)
    k(x, r)
    assert r[0] == x.min() and r[1] == x.max()


def test_bitwise_augassign_contention():
    @qd.kernel
    def k(x: NDArray[qd.u32, 1], r: NDArray[qd.u32, 1]):
        for i in range(x.shape[0]):
            r[0] |= x[i]
            r[1] &= x[i]
            r[2] ^= x[i]

    x = (np.uint32(1) << rng.integers(0, 32, 100000).astype(np.uint32)) | rng.integers(0, 2**32, 100000,
                                                                                           dtype=np.uint32)
    r = np.array([0, 0xFFFFFFFF, 0], np.uint32)
    k(x, r)
    assert r[0] == np.bitwise_or.reduce(x)
    assert r[1] == np.bitwise_and.reduce(x)
    assert r[2] == np.bitwise_xor.reduce(x)


def test_sub_augassign_contention():
    @qd.kernel
    def k(x: NDArray[qd.i32, 1], r: NDArray[qd.i32, 1]):
        for i in range(x.shape[0]):
            r[x[i] % 4] -= 1

    x = rng.integers(0, 1000, 500000).astype(np.int32)
    r = np.zeros(4, np.int32)
    k(x, r)
    np.testing.assert_array_equal(r, -np.bincount(x % 4, minlength=4))


def test_mul_augassign_is_plain_rmw():
    @qd.kernel
    def k(a: NDArray[qd.i32, 1]):
        for i in range(a.shape[0]):
            a[i] *= 3
            a[i] //= 2
            a[i] %= 1000
            a[i] <<= 1
            a[i] >>= 1

    a = rng.integers(-10000, 10000, 1000).astype(np.int32)
    expect = (((a * 3) // 2) % 1000 << 1) >> 1
    k(a)
    np.testing.assert_array_equal(a, expect)


def test_augassign_local_serial():
    @qd.kernel
    def k(n: qd.i32) -> qd.i32:
        s = 0
        p = 1
        # `*=` and `%=` are plain read-modify-writes: the loop must run on one thread.
        qd.loop_config(serialize=True)
        for i in range(1, n):
            s += i
            p *= 3
            p %= 1000003
        return s * 0 + p

    p = 1
    for i in range(1, 50):
        p = p * 3 % 1000003
    assert k(50) == p


def test_atomic_on_local_returns_old():
    @qd.kernel
    def k() -> qd.i32:
        x = 5
        old = qd.atomic_add(x, 3)
        return old * 100 + x

    assert k() == 508


def test_atomic_add_converts_value():
    f = qd.field(qd.i32, shape=())

    @qd.kernel
    def k():
        qd.atomic_add(f[None], 2.7)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        k()
    assert f[None] == 2


def test_atomic_add_narrowing_warns():
    f = qd.field(qd.i32, shape=())

    @qd.kernel
    def k(v: qd.f32):
        qd.atomic_add(f[None], v)

    with pytest.warns(UserWarning, match="may lose precision"):
        k(1.0)


def test_non_writable_target_is_syntax_error():
    @qd.kernel
    def k(a: qd.i32) -> qd.i32:
        return qd.atomic_add(a + 1, 1)

    with pytest.raises(qd.QuadrantsSyntaxError, match="non-writable target"):
        k(1)


def test_atomic_on_literal_is_syntax_error():
    @qd.kernel
    def k() -> qd.i32:
        return qd.atomic_add(3, 1)

    with pytest.raises(qd.QuadrantsSyntaxError):
        k()


def test_float_atomic_and_is_type_error():
    f = qd.field(qd.f32, shape=())

    @qd.kernel
    def k():
        qd.atomic_and(f[None], 1.0)

    with pytest.raises(qd.QuadrantsTypeError):
        k()


@pytest.mark.parametrize("op", ["atomic_or", "atomic_xor"])
def test_float_atomic_or_xor_is_type_error(op):
    f = qd.field(qd.f64, shape=())
    fn = getattr(qd, op)

    @qd.kernel
    def k():
        fn(f[None], 1.0)

    with pytest.raises(qd.QuadrantsTypeError):
        k()


def test_float_atomic_cas_is_type_error():
    f = qd.field(qd.f32, shape=())

    @qd.kernel
    def k():
        qd.atomic_cas(f[None], 1.0, 2.0)

    with pytest.raises(qd.QuadrantsTypeError):
        k()


def test_float_bitwise_augassign_is_type_error():
    f = qd.field(qd.f32, shape=())

    @qd.kernel
    def k():
        f[None] |= 1

    with pytest.raises(qd.QuadrantsTypeError):
        k()


def test_atomic_cas_on_raw_field_is_syntax_error():
    f = qd.field(qd.i32, shape=4)

    @qd.kernel
    def k():
        qd.atomic_cas(f, 1, 2)

    with pytest.raises(qd.QuadrantsSyntaxError):
        k()


def test_augassign_on_kernel_scope_local_from_parallel_loop():
    @qd.kernel
    def k(x: NDArray[qd.i64, 1]) -> qd.i64:
        a = qd.i64(0)
        b = qd.i64(-1)
        for i in range(x.shape[0]):
            a += x[i]
            b &= x[i] | 1
        return a + b * 0 + (b & 1)

    x = rng.integers(-(2**30), 2**30, 100000).astype(np.int64)
    assert k(x) == int(x.sum()) + 1
