"""Spec 0.9 and seed 004: top-level parallel loops, ranges, ndrange, grouped, struct-for, serial
loops, break/continue, loop_config, kernel-scope locals shared across parallel loops."""

import numpy as np
import pytest

import quadrants as qd

from .helpers import rng

NDArray = qd.types.NDArray


def test_parallel_range_large():
    @qd.kernel
    def k(out: NDArray[qd.i32, 1]):
        for i in range(1000000):
            out[i] = i

    out = np.full(1000000, -1, np.int32)
    k(out)
    np.testing.assert_array_equal(out, np.arange(1000000, dtype=np.int32))


def test_parallel_range_field_large():
    f = qd.field(qd.i64, shape=1000000)

    @qd.kernel
    def k():
        for i in range(1000000):
            f[i] = i * 3 - 7

    k()
    np.testing.assert_array_equal(f.to_numpy(), np.arange(1000000, dtype=np.int64) * 3 - 7)


def test_range_begin_end():
    @qd.kernel
    def k(out: NDArray[qd.i32, 1], b: qd.i32, e: qd.i32):
        for i in range(b, e):
            out[i] = i + 1

    n = 1000
    b, e = sorted(int(v) for v in rng.integers(0, n, 2))
    out = np.zeros(n, np.int32)
    k(out, b, e)
    expect = np.zeros(n, np.int32)
    expect[b:e] = np.arange(b, e) + 1
    np.testing.assert_array_equal(out, expect)


def test_range_runtime_bound_from_ndarray_shape():
    @qd.kernel
    def k(a: NDArray[qd.f32, 1], out: NDArray[qd.f32, 1]):
        for i in range(a.shape[0]):
            out[i] = a[i] * 2

    for n in [1, 7, 1000, 12345]:
        a = rng.standard_normal(n).astype(np.float32)
        out = np.zeros(n, np.float32)
        k(a, out)
        np.testing.assert_array_equal(out, a * 2)


def test_range_runtime_bound_from_field_value():
    n = qd.field(qd.i32, shape=())
    out = qd.field(qd.i32, shape=100)

    @qd.kernel
    def k():
        for i in range(n[None]):
            out[i] = 1

    m = int(rng.integers(1, 100))
    n[None] = m
    k()
    assert out.to_numpy().sum() == m
    assert np.all(out.to_numpy()[:m] == 1)


def test_range_runtime_bound_from_0d_ndarray():
    @qd.kernel
    def k(n: NDArray[qd.i32, 0], out: NDArray[qd.i32, 1]):
        for i in range(n[()]):
            out[i] = i

    n = qd.ndarray(qd.i32, shape=())
    n[()] = 37
    out = np.full(50, -1, np.int32)
    k(n, out)
    np.testing.assert_array_equal(out[:37], np.arange(37))
    assert np.all(out[37:] == -1)


def test_range_bound_from_shape_with_a_kernel_variable_read_in_the_loop(qd_arch):
    """The loop reads the kernel-scope `o` (device memory, written by the serial task); the bounds
    need only the shape, so a GPU launcher knows the trip count (and sizes the grid to it)."""
    off = qd.field(qd.i32, shape=())

    @qd.kernel
    def k(x: NDArray[qd.i32, 1]):
        o = off[None] * 2
        for i in range(x.shape[0]):
            x[i] = o + i

    for n in [1, 300, 5000]:
        v = int(rng.integers(-1000, 1000))
        off[None] = v
        x = np.zeros(n, np.int32)
        k(x)
        np.testing.assert_array_equal(x, 2 * v + np.arange(n, dtype=np.int32))
    for entry in k._compiled.values():
        compiled = entry[0] if isinstance(entry, tuple) else entry
        if type(compiled).__name__ == "DeviceKernel":
            assert [t[3] for t in compiled.tasks] == [False, True]  # (serial, range_for)


@pytest.mark.parametrize("b,e", [(0, 0), (5, 5), (10, 3), (0, -4)])
def test_empty_ranges(b, e):
    cnt = qd.field(qd.i32, shape=())

    @qd.kernel
    def k(b: qd.i32, e: qd.i32):
        for i in range(b, e):
            cnt[None] += 1

    k(b, e)
    assert cnt[None] == 0


def test_empty_range_static_bounds():
    cnt = qd.field(qd.i32, shape=())

    @qd.kernel
    def k():
        for i in range(0):
            cnt[None] += 1
        for i in range(7, 2):
            cnt[None] += 1

    k()
    assert cnt[None] == 0


def test_range_three_args_is_syntax_error():
    @qd.kernel
    def k(out: NDArray[qd.i32, 1]):
        for i in range(0, 10, 2):
            out[i] = i

    with pytest.raises(qd.QuadrantsSyntaxError):
        k(np.zeros(10, np.int32))


def test_loop_var_is_i32():
    @qd.kernel
    def k(out: NDArray[qd.i64, 1]):
        for i in range(1):
            out[0] = ~(i ^ i)
            out[1] = qd.bit_shr(~(i ^ i), 1)

    out = np.zeros(2, np.int64)
    k(out)
    assert list(out) == [-1, 2**31 - 1]


# --- ndrange ---


def test_ndrange_ints():
    @qd.kernel
    def k(out: NDArray[qd.i32, 3]):
        for i, j, c in qd.ndrange(out.shape[0], out.shape[1], 3):
            out[i, j, c] = i * 100 + j * 10 + c

    out = np.zeros((13, 9, 3), np.int32)
    k(out)
    i, j, c = np.indices(out.shape)
    np.testing.assert_array_equal(out, i * 100 + j * 10 + c)


def test_ndrange_pairs():
    @qd.kernel
    def k(a: NDArray[qd.i32, 2]):
        for i, j in qd.ndrange((2, 10), 5):
            a[i, j] = i * 10 + j

    a = np.full((12, 6), -1, np.int32)
    k(a)
    expect = np.full((12, 6), -1, np.int32)
    for i in range(2, 10):
        for j in range(5):
            expect[i, j] = i * 10 + j
    np.testing.assert_array_equal(a, expect)


def test_ndrange_runtime_pairs_and_negative():
    f = qd.field(qd.i32, shape=(20, 20), offset=(-10, -10))

    @qd.kernel
    def k(b0: qd.i32, e0: qd.i32, b1: qd.i32, e1: qd.i32):
        for i, j in qd.ndrange((b0, e0), (b1, e1)):
            f[i, j] = i * 100 + j + 1

    k(-10, 3, -5, 10)
    got = f.to_numpy()
    expect = np.zeros((20, 20), np.int32)
    for i in range(-10, 3):
        for j in range(-5, 10):
            expect[i + 10, j + 10] = i * 100 + j + 1
    np.testing.assert_array_equal(got, expect)


def test_ndrange_empty_dims_clamped():
    cnt = qd.field(qd.i32, shape=())

    @qd.kernel
    def k(e: qd.i32):
        for i, j in qd.ndrange((5, e), 4):
            cnt[None] += 1

    k(2)  # end < begin: clamped to empty
    assert cnt[None] == 0
    k(7)
    assert cnt[None] == 8


def test_ndrange_each_iteration_once():
    cnt = qd.field(qd.i32, shape=(7, 11, 5))

    @qd.kernel
    def k():
        for i, j, l in qd.ndrange(7, 11, 5):
            cnt[i, j, l] += 1

    k()
    assert np.all(cnt.to_numpy() == 1)


def test_ndrange_last_axis_fastest():
    order = qd.field(qd.i32, shape=(3, 4))
    counter = qd.field(qd.i32, shape=())

    @qd.kernel
    def k():
        qd.loop_config(serialize=True)
        for i, j in qd.ndrange(3, 4):
            order[i, j] = qd.atomic_add(counter[None], 1)

    k()
    np.testing.assert_array_equal(order.to_numpy(), np.arange(12).reshape(3, 4))


@pytest.mark.parametrize("axes", [(0, 1, 2), (2, 1, 0), (1, 0, 2), (0, 2, 1)])
def test_ndrange_axes_permutation(axes):
    order = qd.field(qd.i32, shape=(2, 3, 4))
    counter = qd.field(qd.i32, shape=())

    @qd.kernel
    def k():
        qd.loop_config(serialize=True)
        for i, j, l in qd.ndrange(2, 3, 4, axes=axes):
            order[i, j, l] = qd.atomic_add(counter[None], 1)

    k()
    # iteration order: axes[0] outermost
    shape = (2, 3, 4)
    expect = np.zeros(shape, np.int32)
    perm_shape = tuple(shape[a] for a in axes)
    for n, idx in enumerate(np.ndindex(*perm_shape)):
        full = [0, 0, 0]
        for pos, a in enumerate(axes):
            full[a] = idx[pos]
        expect[tuple(full)] = n
    np.testing.assert_array_equal(order.to_numpy(), expect)


def test_ndrange_axes_parallel_values():
    @qd.kernel
    def k(a: NDArray[qd.i32, 2]):
        for i, j in qd.ndrange(a.shape[0], a.shape[1], axes=(1, 0)):
            a[i, j] = i * 1000 + j

    a = np.zeros((37, 53), np.int32)
    k(a)
    i, j = np.indices(a.shape)
    np.testing.assert_array_equal(a, i * 1000 + j)


@pytest.mark.parametrize("axes", [(0,), (0, 1, 2), (0, 0), (1, 2)])
def test_ndrange_bad_axes_is_syntax_error(axes):
    @qd.kernel
    def k(a: NDArray[qd.i32, 2]):
        for i, j in qd.ndrange(3, 4, axes=axes):
            a[i, j] = 1

    with pytest.raises(qd.QuadrantsSyntaxError):
        k(np.zeros((3, 4), np.int32))


@pytest.mark.parametrize("axes", [(0.0, 1), (True, False)])
def test_ndrange_non_int_axes_is_type_error(axes):
    @qd.kernel
    def k(a: NDArray[qd.i32, 2]):
        for i, j in qd.ndrange(3, 4, axes=axes):
            a[i, j] = 1

    with pytest.raises(qd.QuadrantsTypeError):
        k(np.zeros((3, 4), np.int32))


def test_ndrange_float_bound_is_type_error():
    @qd.kernel
    def k(a: NDArray[qd.i32, 2]):
        for i, j in qd.ndrange(3.0, 4):
            a[i, j] = 1

    with pytest.raises(qd.QuadrantsTypeError):
        k(np.zeros((3, 4), np.int32))


def test_ndrange_malformed_bound_is_syntax_error():
    @qd.kernel
    def k(a: NDArray[qd.i32, 2]):
        for i, j in qd.ndrange((0, 1, 2), 4):
            a[i, j] = 1

    with pytest.raises(qd.QuadrantsSyntaxError):
        k(np.zeros((3, 4), np.int32))


@pytest.mark.parametrize("ntargets", [1, 3])
def test_ndrange_target_count_mismatch(ntargets):
    if ntargets == 1:

        @qd.kernel
        def k(a: NDArray[qd.i32, 2]):
            for i in qd.ndrange(3, 4):
                a[i, 0] = 1

    else:

        @qd.kernel
        def k(a: NDArray[qd.i32, 2]):
            for i, j, l in qd.ndrange(3, 4):
                a[i, j] = l

    with pytest.raises(qd.QuadrantsSyntaxError):
        k(np.zeros((3, 4), np.int32))


# --- grouped ---


def test_grouped_ndrange():
    @qd.kernel
    def k(a: NDArray[qd.i32, 3]):
        for I in qd.grouped(qd.ndrange(4, 8, 16)):
            a[I] = I[0] * 10000 + I[1] * 100 + I[2]

    a = np.zeros((4, 8, 16), np.int32)
    k(a)
    i, j, l = np.indices(a.shape)
    np.testing.assert_array_equal(a, i * 10000 + j * 100 + l)


def test_grouped_ndrange_pairs():
    f = qd.field(qd.i32, shape=(10, 10))

    @qd.kernel
    def k():
        for I in qd.grouped(qd.ndrange((2, 5), (3, 9))):
            f[I] = I[0] + I[1] * 100

    k()
    expect = np.zeros((10, 10), np.int32)
    for i in range(2, 5):
        for j in range(3, 9):
            expect[i, j] = i + j * 100
    np.testing.assert_array_equal(f.to_numpy(), expect)


def test_grouped_field():
    f = qd.field(qd.f32, shape=(6, 7))

    @qd.kernel
    def k():
        for I in qd.grouped(f):
            f[I] = I[0] * 7 + I[1]

    k()
    np.testing.assert_array_equal(f.to_numpy(), np.arange(42, dtype=np.float32).reshape(6, 7))


def test_grouped_ndarray():
    @qd.kernel
    def k(a: NDArray[qd.i32, 2]):
        for I in qd.grouped(a):
            a[I] = I[0] - I[1]

    a = np.zeros((9, 5), np.int32)
    k(a)
    i, j = np.indices(a.shape)
    np.testing.assert_array_equal(a, i - j)


def test_grouped_index_is_an_integer_vector():
    """The index of qd.grouped is a qd.Vector of integers: arithmetic, comparisons, casts,
    reductions and other vector methods, unpacking, and indexing fields, ndarrays and matrices."""
    f = qd.Vector.field(3, qd.f32, shape=(4, 5))
    w = rng.standard_normal((4, 5)).astype(np.float32)
    wl = w.tolist()

    @qd.kernel
    def k(a: NDArray[qd.f32, 2], out: NDArray[qd.i32, 3]):
        for I in qd.grouped(f):
            m = qd.Matrix([[wl[r][c] for c in range(5)] for r in range(4)])
            f[I] = qd.Vector([I[0], I[1], (I * 2).sum()]) + I.cast(qd.f32).sum() + a[I] + m[I]
            i, j = I
            out[I, 0] = (I >= 1).all() + (I == 0).any() * 10
            out[i, j, 1] = I.max() * 100 + I.min() + I.dot(I) * 1000
            out[I[0], I[1], 2] = (-I).sum() + (I % 2).sum() * 100 + len(I) * 1000 + I.n * 10000
            out[I, 3] = qd.max(I, 2).sum() + abs(I - 2).sum() * 100

    a = rng.standard_normal((4, 5)).astype(np.float32)
    out = np.zeros((4, 5, 4), np.int32)
    k(a, out)
    i, j = np.indices((4, 5))
    expect = np.stack([i, j, 2 * (i + j)], axis=-1) + (i + j + a + w)[..., None]
    np.testing.assert_allclose(f.to_numpy(), expect, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(out[..., 0], ((i >= 1) & (j >= 1)) + ((i == 0) | (j == 0)) * 10)
    np.testing.assert_array_equal(out[..., 1], np.maximum(i, j) * 100 + np.minimum(i, j) + (i * i + j * j) * 1000)
    np.testing.assert_array_equal(out[..., 2], -(i + j) + (i % 2 + j % 2) * 100 + 2000 + 20000)
    np.testing.assert_array_equal(out[..., 3], np.maximum(i, 2) + np.maximum(j, 2) + (abs(i - 2) + abs(j - 2)) * 100)


def test_grouped_vector_and_matrix_fields():
    """qd.grouped over a vector/matrix field iterates over its shape (not its elements)."""
    v = qd.Vector.field(3, qd.f32, shape=(4, 5))
    m = qd.Matrix.field(2, 2, qd.f32, shape=(6,))
    seen = qd.field(qd.i32, shape=(4, 5))

    @qd.kernel
    def k():
        for I in qd.grouped(v):
            v[I] = qd.Vector([I[0], I[1], I[0] * I[1]])
            seen[I] += 1
        for J in qd.grouped(m):
            m[J][0, 1] = J[0] + 0.5

    k()
    i, j = np.indices((4, 5))
    np.testing.assert_array_equal(v.to_numpy(), np.stack([i, j, i * j], -1).astype(np.float32))
    np.testing.assert_array_equal(seen.to_numpy(), np.ones((4, 5), np.int32))
    np.testing.assert_array_equal(m.to_numpy()[:, 0, 1], np.arange(6) + 0.5)


def test_grouped_struct_field_and_vector_ndarray():
    s = qd.Struct.field({"a": qd.f32, "b": qd.math.vec2}, shape=(3, 4))

    @qd.kernel
    def k(x: NDArray[qd.math.vec2, 1]):
        for I in qd.grouped(s):
            s[I].a = I[0] * 10 + I[1]
            s[I].b = qd.Vector([I[0], I[1]])
        for J in qd.grouped(x):
            x[J] = qd.Vector([J[0], -J[0]])

    x = qd.Vector.ndarray(2, qd.f32, shape=(7,))
    k(x)
    i, j = np.indices((3, 4))
    np.testing.assert_array_equal(s.a.to_numpy(), (i * 10 + j).astype(np.float32))
    np.testing.assert_array_equal(s.b.to_numpy(), np.stack([i, j], -1).astype(np.float32))
    n = np.arange(7, dtype=np.float32)
    np.testing.assert_array_equal(x.to_numpy(), np.stack([n, -n], -1))


def test_grouped_index_is_i32_vector():
    @qd.kernel
    def k(out: NDArray[qd.i64, 1]):
        for I in qd.grouped(qd.ndrange(1, 1)):
            v = I[1]
            out[0] = qd.bit_shr(~(v ^ v), 1)

    out = np.zeros(1, np.int64)
    k(out)
    assert out[0] == 2**31 - 1


def test_static_grouped_unrolls():
    @qd.kernel
    def k(a: NDArray[qd.i32, 2]):
        for I in qd.static(qd.grouped(qd.ndrange(2, 3))):
            a[I] = I[0] * 3 + I[1] + 1

    a = np.zeros((2, 3), np.int32)
    k(a)
    np.testing.assert_array_equal(a, np.arange(1, 7).reshape(2, 3))


def test_nested_grouped_is_syntax_error():
    @qd.kernel
    def k(a: NDArray[qd.i32, 2]):
        for I in qd.grouped(qd.grouped(qd.ndrange(2, 3))):
            a[I] = 1

    with pytest.raises(qd.QuadrantsSyntaxError):
        k(np.zeros((2, 3), np.int32))


# --- struct-for ---


def test_struct_for_field_2d():
    f = qd.field(qd.i32, shape=(31, 17))

    @qd.kernel
    def k():
        for i, j in f:
            f[i, j] = i * 17 + j

    k()
    np.testing.assert_array_equal(f.to_numpy(), np.arange(31 * 17).reshape(31, 17))


def test_struct_for_field_3d():
    f = qd.field(qd.f64, shape=(5, 6, 7))

    @qd.kernel
    def k():
        for i, j, l in f:
            f[i, j, l] = i * 0.5 + j * 10 + l * 1000

    k()
    i, j, l = np.indices((5, 6, 7))
    np.testing.assert_array_equal(f.to_numpy(), i * 0.5 + j * 10 + l * 1000)


def test_struct_for_field_offset():
    f = qd.field(qd.i32, shape=(4, 5), offset=(-2, 3))

    @qd.kernel
    def k():
        for i, j in f:
            f[i, j] = i * 100 + j

    k()
    i, j = np.indices((4, 5))
    np.testing.assert_array_equal(f.to_numpy(), (i - 2) * 100 + (j + 3))


def test_struct_for_ndarray_2d_3d():
    @qd.kernel
    def k2(a: NDArray[qd.i32, 2]):
        for i, j in a:
            a[i, j] = i * 1000 + j

    @qd.kernel
    def k3(a: NDArray[qd.f32, 3]):
        for i, j, l in a:
            a[i, j, l] = i + j * 0.5 + l * 0.25

    a = np.zeros((23, 41), np.int32)
    k2(a)
    i, j = np.indices(a.shape)
    np.testing.assert_array_equal(a, i * 1000 + j)
    b = np.zeros((3, 8, 5), np.float32)
    k3(b)
    i, j, l = np.indices(b.shape)
    np.testing.assert_array_equal(b, (i + j * 0.5 + l * 0.25).astype(np.float32))


def test_struct_for_1d_large():
    f = qd.field(qd.i32, shape=1000000)

    @qd.kernel
    def k():
        for i in f:
            f[i] = i

    k()
    np.testing.assert_array_equal(f.to_numpy(), np.arange(1000000, dtype=np.int32))


def test_struct_for_wrong_target_count():
    f = qd.field(qd.i32, shape=(3, 4))

    @qd.kernel
    def k():
        for i in f:
            f[i, 0] = 1

    with pytest.raises(qd.QuadrantsSyntaxError):
        k()


# --- serial loops ---


def test_while_loop():
    @qd.kernel
    def k(n: qd.i32) -> qd.i32:
        i = 0
        s = 0
        while i < n:
            s += i * i
            i += 1
        return s

    n = int(rng.integers(0, 500))
    assert k(n) == sum(i * i for i in range(n))


def test_collatz_while_in_parallel_loop():
    @qd.kernel
    def k(a: NDArray[qd.i64, 1], steps: NDArray[qd.i32, 1]):
        for i in range(a.shape[0]):
            x = a[i]
            s = 0
            while x != 1:
                if x % 2 == 0:
                    x = x // 2
                else:
                    x = 3 * x + 1
                s += 1
            steps[i] = s

    a = rng.integers(1, 100000, 2000).astype(np.int64)
    steps = np.zeros(2000, np.int32)
    k(a, steps)

    def collatz(x):
        s = 0
        while x != 1:
            x = x // 2 if x % 2 == 0 else 3 * x + 1
            s += 1
        return s

    assert list(steps) == [collatz(int(x)) for x in a]


def test_break_continue_in_inner_loop():
    @qd.kernel
    def k(a: NDArray[qd.i32, 2], out: NDArray[qd.i32, 1]):
        for i in range(a.shape[0]):
            s = 0
            for j in range(a.shape[1]):
                if a[i, j] < 0:
                    break
                if a[i, j] % 2 == 1:
                    continue
                s += a[i, j]
            out[i] = s

    a = rng.integers(-3, 20, (500, 30)).astype(np.int32)
    out = np.zeros(500, np.int32)
    k(a, out)
    expect = []
    for row in a:
        s = 0
        for v in row:
            if v < 0:
                break
            if v % 2 == 1:
                continue
            s += v
        expect.append(s)
    assert list(out) == expect


def test_break_continue_in_while():
    @qd.kernel
    def k(n: qd.i32) -> qd.i32:
        i = 0
        s = 0
        while True:
            i += 1
            if i > n:
                break
            if i % 3 == 0:
                continue
            s += i
        return s

    assert k(100) == sum(i for i in range(1, 101) if i % 3)


def test_loop_config_serialize_with_break():
    @qd.kernel
    def k(a: NDArray[qd.i32, 1]) -> qd.i32:
        first = -1
        qd.loop_config(serialize=True)
        for i in range(a.shape[0]):
            if a[i] > 50:
                first = i
                break
        return first

    for _ in range(5):
        a = rng.integers(0, 60, 1000).astype(np.int32)
        idx = np.nonzero(a > 50)[0]
        assert k(a) == (int(idx[0]) if idx.size else -1)


def test_loop_config_serialize_order():
    @qd.kernel
    def k(out: NDArray[qd.i32, 1]):
        prev = 0
        qd.loop_config(serialize=True)
        for i in range(out.shape[0]):
            out[i] = prev
            prev = prev + i

    out = np.zeros(1000, np.int32)
    k(out)
    np.testing.assert_array_equal(out, np.concatenate([[0], np.cumsum(np.arange(999))]).astype(np.int32))


def test_loop_config_applies_to_next_loop_only():
    @qd.kernel
    def k(out: NDArray[qd.i32, 1]):
        qd.loop_config(serialize=True)
        for i in range(10):
            out[i] = i
        for i in range(10, out.shape[0]):
            out[i] = i

    out = np.zeros(100000, np.int32)
    k(out)
    np.testing.assert_array_equal(out, np.arange(100000))


def test_nested_loops_serial_inside():
    @qd.kernel
    def k(out: NDArray[qd.i64, 1]):
        for i in range(out.shape[0]):
            s = qd.i64(0)
            for j in range(i):
                for l in range(j):
                    s += l
            out[i] = s

    out = np.zeros(60, np.int64)
    k(out)
    expect = [sum(l for j in range(i) for l in range(j)) for i in range(60)]
    assert list(out) == expect


def test_runtime_if_around_loop_is_serial():
    @qd.kernel
    def k(a: NDArray[qd.f64, 1], n: qd.i32) -> qd.f64:
        acc = qd.f64(0.0)
        if n > 0:
            for i in range(n):
                acc = acc * 0.5 + a[i]  # order dependent: exact only if serial
        return acc

    a = rng.standard_normal(10000)
    expect = 0.0
    for v in a:
        expect = expect * 0.5 + v
    assert k(a, 10000) == expect


def test_runtime_if_around_loop_plain_assign():
    if qd.cfg.arch is qd.vulkan and qd._core.vulkan_device_info()["device_type"] == "cpu":
        pytest.skip("lavapipe (llvmpipe) ends every shader loop after 65535 iterations")

    @qd.kernel
    def k(n: qd.i32) -> qd.i32:
        last = -1
        if n > 0:
            for i in range(n):
                last = i  # serial: the last iteration wins
        return last

    assert k(100000) == 99999
    assert k(0) == -1


def test_static_if_keeps_loop_parallel():
    @qd.kernel
    def k(out: NDArray[qd.i32, 1]):
        if qd.static(True):
            for i in range(out.shape[0]):
                out[i] = i * 2

    out = np.zeros(100000, np.int32)
    k(out)
    np.testing.assert_array_equal(out, np.arange(100000) * 2)


# --- kernel-scope locals shared across parallel loops ---


def test_kernel_scope_local_reduction_int():
    @qd.kernel
    def k(x: NDArray[qd.i32, 1]) -> qd.i32:
        total = 0
        for i in range(x.shape[0]):
            total += x[i]
        return total

    x = rng.integers(-1000, 1000, 1000000).astype(np.int32)
    assert k(x) == int(x.astype(np.int64).sum())


def test_kernel_scope_local_reduction_float():
    @qd.kernel
    def k(x: NDArray[qd.f64, 1]) -> qd.f64:
        total = qd.f64(0.0)
        for i in range(x.shape[0]):
            total += x[i]
        return total

    x = rng.standard_normal(100000)
    assert k(x) == pytest.approx(x.sum(), rel=1e-9, abs=1e-9)


def test_kernel_scope_local_used_in_later_loop():
    @qd.kernel
    def k(x: NDArray[qd.i32, 1], out: NDArray[qd.i32, 1]):
        total = 0
        for i in range(x.shape[0]):
            total += x[i]
        for i in range(x.shape[0]):
            out[i] = x[i] * 0 + total

    x = rng.integers(-100, 100, 50000).astype(np.int32)
    out = np.zeros_like(x)
    k(x, out)
    assert np.all(out == x.sum())


def test_multiple_tasks_in_order():
    f = qd.field(qd.i32, shape=100000)

    @qd.kernel
    def k() -> qd.i32:
        for i in range(100000):
            f[i] = i
        for i in range(100000):
            f[i] = f[99999 - i] * 2 if i < 50000 else f[i]
        s = 0
        s = f[3] + f[99999]
        for i in range(100000):
            f[i] += 1
        return s

    r = k()
    expect = np.arange(100000)
    expect[:50000] = (99999 - np.arange(50000)) * 2
    assert r == expect[3] + expect[99999]
    np.testing.assert_array_equal(f.to_numpy(), expect + 1)


def test_serial_statements_between_loops():
    f = qd.field(qd.i32, shape=10)

    @qd.kernel
    def k():
        f[0] = 5
        for i in range(1, 10):
            f[i] = f[0] + i
        f[0] = f[9] * 2

    k()
    assert list(f.to_numpy()) == [28] + [5 + i for i in range(1, 10)]


def test_static_range_unrolls_at_top_level():
    f = qd.field(qd.i32, shape=8)

    @qd.kernel
    def k():
        acc = 0
        for i in qd.static(range(8)):
            acc += i
            f[i] = acc

    k()
    assert list(f.to_numpy()) == [0, 1, 3, 6, 10, 15, 21, 28]


def test_for_else_is_syntax_error():
    @qd.kernel
    def k(n: qd.i32) -> qd.i32:
        s = 0
        for i in range(n):
            s += i
        else:
            s = -1
        return s

    with pytest.raises(qd.QuadrantsSyntaxError):
        k(3)


def test_while_else_is_syntax_error():
    @qd.kernel
    def k(n: qd.i32) -> qd.i32:
        s = 0
        while s < n:
            s += 1
        else:
            s = -1
        return s

    with pytest.raises(qd.QuadrantsSyntaxError):
        k(3)


def test_break_in_static_for_under_runtime_if_is_syntax_error():
    @qd.kernel
    def k(n: qd.i32) -> qd.i32:
        s = 0
        if n > 0:
            for i in qd.static(range(4)):
                s += i
                if i == n:
                    break
        return s

    with pytest.raises(qd.QuadrantsSyntaxError):
        k(2)


@pytest.mark.parametrize("use_range", [False, True])
def test_iterable_chosen_by_static_conditional_expression(use_range):
    N = 6

    @qd.kernel
    def k(n: qd.i32) -> qd.i32:
        s = 0
        for j in range(1):
            # range(n) when use_range, else the unrolled range(N)
            for i in range(n) if qd.static(use_range) else qd.static(range(N)):
                s += i * i
        for i in (qd.static(range(N)) if qd.static(not use_range) else range(n)):  # top level
            s += 1000
        return s

    n = int(rng.integers(0, 20))
    m = n if use_range else N
    assert k(n) == sum(i * i for i in range(m)) + 1000 * m


RANGE_FLOAT_WARNING = "Casting range_for boundary values from {} to i32, which may cause numerical issues"


def test_range_float_literal_bounds_truncate_with_warning():
    @qd.kernel
    def k(out: NDArray[qd.i32, 1]):
        for i in range(0.5, 3.7):  # range(0, 3)
            out[i] = i + 1
        s = 0
        for j in range(2.5):
            s += 1
        out[3] = s
        t = 0
        for j in range(-2.5):
            t += 1
        out[4] = t

    out = np.zeros(5, np.int32)
    with pytest.warns(Warning) as record:
        k(out)
    msgs = {(w.category, str(w.message)) for w in record}
    assert msgs == {(Warning, RANGE_FLOAT_WARNING.format("f32"))}
    assert all(w.filename == __file__ for w in record)
    np.testing.assert_array_equal(out, [1, 2, 3, 2, 0])


@pytest.mark.parametrize("t", [qd.f32, qd.f64], ids=["f32", "f64"])
def test_range_runtime_float_bound_truncates_with_warning(t):
    @qd.kernel
    def k(x: t, out: NDArray[qd.i32, 1]):
        for i in range(x, 10):
            out[i] += 1
        for n in range(1):
            s = 0
            for j in range(x):
                s += 1
            out[10] = s

    x = float(rng.uniform(0.0, 9.0))
    out = np.zeros(11, np.int32)
    with pytest.warns(Warning, match=RANGE_FLOAT_WARNING.format("f32" if t is qd.f32 else "f64")):
        k(x, out)
    expect = np.zeros(11, np.int32)
    expect[int(np.float32(x)) if t is qd.f32 else int(x) : 10] = 1
    expect[10] = int(np.float32(x)) if t is qd.f32 else int(x)
    np.testing.assert_array_equal(out, expect)


def test_ndrange_float_bound_is_an_error():
    @qd.kernel
    def k() -> qd.i32:
        s = 0
        for i, j in qd.ndrange(2.5, 2):
            s += 1
        return s

    with pytest.raises(qd.QuadrantsTypeError, match=r"Every argument of ndrange should be an integer scalar"):
        k()


def _ndrange_kernel(dims, axes, nvars):
    """A kernel looping over qd.ndrange(*dims, axes=axes) with nvars loop variables."""
    if nvars == 2:

        @qd.kernel
        def k(x: qd.f32) -> qd.i32:
            s = 0
            for i, j in qd.ndrange(*[x if qd.static(d == "x") else d for d in qd.static(dims)], axes=qd.static(axes)):
                s += i + j
            return s

    else:

        @qd.kernel
        def k(x: qd.f32) -> qd.i32:
            s = 0
            for i, j, l in qd.ndrange(*[x if qd.static(d == "x") else d for d in qd.static(dims)], axes=qd.static(axes)):
                s += i + j + l
            return s

    return k


NDRANGE_ERRORS = [
    ((2, 3), (0,), 2, qd.QuadrantsSyntaxError,
     "qd.ndrange(axes=(0,)) has 1 entries but ndrange was called with 2 dimension argument(s); they must match"),
    ((2, 3), (0, 0), 2, qd.QuadrantsSyntaxError, "qd.ndrange(axes=(0, 0)) is not a permutation of range(2)"),
    ((2, 3), (0, 1.0), 2, qd.QuadrantsTypeError,
     "TypeError when calling `ndrange`: qd.ndrange(axes=(0, 1.0)) entries must be Python ints; got float (1.0)."),
    ((2, "x"), None, 2, qd.QuadrantsTypeError,
     "TypeError when calling `ndrange`: Every argument of ndrange should be an integer scalar or a tuple/list of "
     "(int, int)."),
    ((2, 3), None, 3, qd.QuadrantsSyntaxError,
     "Ndrange for loop with number of the loop variables not equal to the dimension of the ndrange is not "
     "supported. Please check if the number of arguments of qd.ndrange() is equal to the number of the loop "
     "variables."),
]


@pytest.mark.parametrize("dims, axes, nvars, cls, message", NDRANGE_ERRORS)
def test_ndrange_errors_in_reference_words(dims, axes, nvars, cls, message):
    k = _ndrange_kernel(dims, axes, nvars)
    with pytest.raises(cls) as ei:
        k(1.0)
    text = str(ei.value)
    assert message in text, text
    assert "for i, j" in text and "in qd.ndrange(" in text, text  # the source line is shown


@pytest.mark.parametrize(
    "args, kwargs, cls, message",
    [
        (((1, 2, 3),), {}, qd.QuadrantsSyntaxError,
         "Every argument of ndrange should be a scalar or a tuple/list like (begin, end)"),
        ((2.5,), {}, qd.QuadrantsTypeError,
         "Every argument of ndrange should be an integer scalar or a tuple/list of (int, int)"),
        ((2, 3), {"axes": (0,)}, qd.QuadrantsSyntaxError,
         "qd.ndrange(axes=(0,)) has 1 entries but ndrange was called with 2 dimension argument(s); they must match"),
        ((2, 3), {"axes": (1, 1)}, qd.QuadrantsSyntaxError, "qd.ndrange(axes=(1, 1)) is not a permutation of range(2)"),
        ((2, 3), {"axes": (0, "a")}, qd.QuadrantsTypeError,
         "qd.ndrange(axes=(0, 'a')) entries must be Python ints; got str ('a')"),
    ],
)
def test_ndrange_errors_in_python_scope(args, kwargs, cls, message):
    with pytest.raises(cls) as ei:
        qd.ndrange(*args, **kwargs)
    assert message in str(ei.value)
