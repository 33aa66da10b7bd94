"""The deprecated host-side APIs: qd.algorithms.parallel_sort and PrefixSumExecutor."""

import numpy as np
import pytest

import quadrants as qd

from ._util import random_values


def _field(a):
    f = qd.field({np.int32: qd.i32, np.float32: qd.f32, np.float64: qd.f64,
                  np.int64: qd.i64}[a.dtype.type], a.shape[0])
    f.from_numpy(a)
    return f


@pytest.mark.parametrize("n", [1, 2, 7, 256, 1000, 4097])
def test_parallel_sort_keys(n, rng):
    a = random_values(rng, qd.i32, n)
    a[: n // 3] = a[n // 3 : 2 * (n // 3)]  # duplicates
    keys = _field(a)
    with pytest.warns(DeprecationWarning, match="parallel_sort"):
        qd.algorithms.parallel_sort(keys)
    np.testing.assert_array_equal(keys.to_numpy(), np.sort(a))


@pytest.mark.parametrize("kdt", [np.float32, np.int64])
def test_parallel_sort_key_value(kdt, rng):
    """Distinct keys: the values follow their keys exactly."""
    n = 1500
    k = rng.permutation(n * 3)[:n].astype(kdt) - n
    v = rng.standard_normal(n)
    keys, values = _field(k), _field(v)
    with pytest.warns(DeprecationWarning):
        qd.algorithms.parallel_sort(keys, values)
    order = np.argsort(k)
    np.testing.assert_array_equal(keys.to_numpy(), k[order])
    np.testing.assert_array_equal(values.to_numpy(), v[order])


def test_parallel_sort_equal_keys_keep_their_pairs(rng):
    """Not stable, but every (key, value) pair survives."""
    n = 777
    k = rng.integers(0, 10, n).astype(np.int32)
    v = np.arange(n, dtype=np.int32)
    keys, values = _field(k), _field(v)
    with pytest.warns(DeprecationWarning):
        qd.algorithms.parallel_sort(keys, values)
    got_k, got_v = keys.to_numpy(), values.to_numpy()
    np.testing.assert_array_equal(got_k, np.sort(k))
    np.testing.assert_array_equal(k[got_v], got_k)  # each value still sits with its own key
    np.testing.assert_array_equal(np.sort(got_v), v)


@pytest.mark.parametrize("n", [1, 63, 64, 65, 4096, 4097, 70_000])
def test_prefix_sum_executor(n, rng):
    a = random_values(rng, qd.i32, n)
    f = _field(a)
    with pytest.warns(DeprecationWarning, match="PrefixSumExecutor"):
        psum = qd.algorithms.PrefixSumExecutor(n)
    psum.run(f)
    np.testing.assert_array_equal(f.to_numpy(), np.cumsum(a, dtype=np.int32))
    b = rng.integers(-100, 100, n).astype(np.int32)  # the executor runs again on new data
    f.from_numpy(b)
    psum.run(f)
    np.testing.assert_array_equal(f.to_numpy(), np.cumsum(b, dtype=np.int32))


@pytest.mark.parametrize("dt", [qd.f32, qd.i64, qd.u32], ids=str)
def test_prefix_sum_executor_rejects_other_dtypes(dt):
    with pytest.warns(DeprecationWarning):
        psum = qd.algorithms.PrefixSumExecutor(16)
    with pytest.raises(RuntimeError, match=r"Only qd\.i32 type is supported for prefix sum\."):
        psum.run(qd.field(dt, 16))
