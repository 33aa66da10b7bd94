"""Kernel-side hints and index helpers: qd.assume_in_range, qd.block_local, qd.cache_read_only
(no effect on results, arguments checked as in the reference) and qd.rescale_index."""

import numpy as np
import pytest

import quadrants as qd

from .helpers import rng


# --- assume_in_range ---


def test_assume_in_range_is_its_value():
    n = int(rng.integers(8, 64))
    data = rng.integers(-1000, 1000, n).astype(np.int32)
    x = qd.field(qd.i32, n)
    out = qd.field(qd.i32, n)
    x.from_numpy(data)

    @qd.kernel
    def k(shift: qd.i32) -> qd.i32:
        total = 0
        for i in range(n):
            j = qd.assume_in_range(i + shift, shift, 0, n)
            out[j - shift] = x[j - shift] * 2
            total += qd.assume_in_range(x[i], 0, -1000, 1000)
        return total

    shift = int(rng.integers(-50, 50))
    assert k(shift) == int(data.sum())
    np.testing.assert_array_equal(out.to_numpy(), data * 2)


def test_assume_in_range_floats_and_literals():
    @qd.kernel
    def f(a: qd.f64) -> qd.f64:
        v = qd.assume_in_range(a, a, -1, 1)
        return v

    @qd.kernel
    def lit() -> qd.i32:
        v = qd.assume_in_range(3, 0, 0, 4)
        return v

    value = float(rng.standard_normal())
    assert f(value) == value
    assert lit() == 3


def test_assume_in_range_promise_is_not_a_clamp():
    @qd.kernel
    def k(a: qd.i32) -> qd.i32:
        v = qd.assume_in_range(a, 0, 0, 4)
        return v

    assert k(100) == 100


def test_assume_in_range_errors():
    @qd.kernel
    def mixed(a: qd.i64) -> qd.i64:
        v = qd.assume_in_range(a, 0, 0, 4)
        return v

    with pytest.raises(qd.QuadrantsTypeError, match="range_assumption"):
        mixed(1)

    @qd.kernel
    def runtime_bound(a: qd.i32, b: qd.i32) -> qd.i32:
        v = qd.assume_in_range(a, 0, b, 4)
        return v

    with pytest.raises(qd.QuadrantsTypeError, match="compile-time integer"):
        runtime_bound(1, 0)

    @qd.kernel
    def float_bound(a: qd.i32) -> qd.i32:
        v = qd.assume_in_range(a, 0, 0.5, 4)
        return v

    with pytest.raises(qd.QuadrantsTypeError):
        float_bound(1)

    @qd.kernel
    def three_args(a: qd.i32) -> qd.i32:
        v = qd.assume_in_range(a, 0, 4)
        return v

    with pytest.raises(qd.QuadrantsCompilationError):
        three_args(1)

    with pytest.raises(qd.QuadrantsSyntaxError):
        qd.assume_in_range(1, 0, 0, 4)


# --- block_local / cache_read_only ---


def test_cache_hints_leave_results_alone():
    n = int(rng.integers(16, 128))
    x = qd.field(qd.f32, n)
    y = qd.field(qd.f32, n)
    v = qd.Vector.field(3, qd.f32, n)
    data = rng.standard_normal(n).astype(np.float32)
    vdata = rng.standard_normal((n, 3)).astype(np.float32)
    y.from_numpy(data)
    v.from_numpy(vdata)

    @qd.func
    def hint_in_func():
        qd.block_local(y)

    @qd.kernel
    def k(flag: qd.i32):
        qd.block_local(y, v)
        qd.cache_read_only(y, v)
        qd.block_local()
        hint_in_func()
        if flag > 0:
            qd.cache_read_only(y)
        for i in x:
            qd.block_local(y)
            qd.cache_read_only(v)
            x[i] = y[i] * 2 + v[i][1]

    k(1)
    np.testing.assert_allclose(x.to_numpy(), data * 2 + vdata[:, 1], rtol=1e-6)


@pytest.mark.parametrize("name", ["block_local", "cache_read_only"])
def test_cache_hints_reject_non_fields(name):
    hint = getattr(qd, name)
    arr = qd.ndarray(qd.f32, 4)

    @qd.kernel
    def on_ndarray(a: qd.types.ndarray()):
        hint(a)
        for i in a:
            a[i] = 1

    with pytest.raises(qd.QuadrantsCompilationError, match="takes fields"):
        on_ndarray(arr)

    @qd.kernel
    def on_int():
        hint(3)

    with pytest.raises(qd.QuadrantsCompilationError, match="takes fields"):
        on_int()

    x = qd.field(qd.f32, 4)
    with pytest.raises(qd.QuadrantsRuntimeError, match="inside Quadrants kernels"):
        hint(x)


# --- rescale_index ---


def _rescale_np(shape_a, shape_b, index):
    out = list(index)
    for k in range(min(len(index), len(shape_a), len(shape_b))):
        if shape_a[k] > shape_b[k]:
            out[k] = index[k] // (shape_a[k] // shape_b[k])
        elif shape_a[k] < shape_b[k]:
            out[k] = index[k] * (shape_b[k] // shape_a[k])
    return out


def test_rescale_index_coarsens_in_a_kernel():
    fine = (int(rng.integers(1, 5)) * 4, int(rng.integers(1, 5)) * 6)
    coarse = (fine[0] // 4, fine[1] // 3)
    a = qd.field(qd.f32, fine)
    b = qd.field(qd.f32, coarse)
    data = rng.standard_normal(fine).astype(np.float32)
    a.from_numpy(data)

    @qd.kernel
    def pool():
        for I in qd.grouped(a):
            b[qd.rescale_index(a, b, I)] += a[I]

    pool()
    expected = data.reshape(coarse[0], 4, coarse[1], 3).sum(axis=(1, 3))
    np.testing.assert_allclose(b.to_numpy(), expected, rtol=1e-5, atol=1e-5)


def test_rescale_index_refines_and_takes_snodes_and_matrix_fields():
    a = qd.field(qd.i32, (3, 5))
    big = qd.Vector.field(2, qd.i32, (6, 20))
    out = qd.Vector.field(2, qd.i32, (3, 5))

    @qd.kernel
    def k():
        for i, j in a:
            out[i, j] = qd.rescale_index(a, big, [i, j])
        for i, j in a:
            J = qd.rescale_index(a.snode, big, qd.Vector([i, j]))
            out[i, j] += J * 100

    k()
    got = out.to_numpy()
    for i in range(3):
        for j in range(5):
            exp = _rescale_np((3, 5), (6, 20), [i, j])
            np.testing.assert_array_equal(got[i, j], np.array(exp) * 101)


def test_rescale_index_python_scope_matches_rule():
    for _ in range(20):
        shape_a = tuple(int(s) for s in rng.integers(1, 30, 2))
        shape_b = tuple(int(s) for s in rng.integers(1, 30, int(rng.integers(1, 3))))
        a = qd.field(qd.f32, shape_a)
        b = qd.field(qd.f32, shape_b)
        index = [int(rng.integers(0, s)) for s in shape_a]
        got = qd.rescale_index(a, b, index)
        assert isinstance(got, qd.Vector)
        assert got.to_list() == _rescale_np(shape_a, shape_b, index)
        assert qd.rescale_index(a, b, qd.Vector(index)).to_list() == got.to_list()


def test_rescale_index_errors():
    a = qd.field(qd.f32, (4, 4))
    nd = qd.ndarray(qd.f32, (4, 4))
    with pytest.raises(AssertionError, match="first argument"):
        qd.rescale_index(nd, a, [1, 1])
    with pytest.raises(AssertionError, match="second argument"):
        qd.rescale_index(a, 3, [1, 1])
    with pytest.raises(AssertionError, match="third argument"):
        qd.rescale_index(a, a, (1, 1))

    @qd.kernel
    def bad_first(arr: qd.types.ndarray()):
        for i, j in arr:
            arr[i, j] = qd.rescale_index(arr, a, [i, j])[0]

    with pytest.raises(qd.QuadrantsCompilationError, match="first argument"):
        bad_first(nd)

    @qd.kernel
    def bad_index():
        for i, j in a:
            a[i, j] = qd.rescale_index(a, a, 1.5)[0]

    with pytest.raises(qd.QuadrantsCompilationError, match="third argument"):
        bad_index()
