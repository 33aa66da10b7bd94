"""Unpacking assignments of vectors and ndarray shapes: `w, x, y, z = quat`, `n, m = arr.shape`,
`qd.ndrange(*arr.shape)`, len(arr.shape), and the reference's errors for what cannot be unpacked."""

import warnings

import numpy as np
import pytest

import quadrants as qd

from .helpers import rng

NDArray = qd.types.NDArray


def test_unpack_vector_value():
    @qd.kernel
    def k(q: NDArray[qd.f32, 1], out: NDArray[qd.f32, 1]):
        quat = qd.Vector([q[0], q[1], q[2], q[3]])
        q_w, q_x, q_y, q_z = quat
        out[0] = q_w * 1.0 - q_z
        out[1] = q_x * q_y

    q = rng.standard_normal(4).astype(np.float32)
    out = np.zeros(2, np.float32)
    k(q, out)
    np.testing.assert_allclose(out, [q[0] - q[3], q[1] * q[2]], rtol=1e-6)


def test_unpack_vector_returned_by_func():
    @qd.func
    def normalized(v):
        return v / v.norm()

    @qd.kernel
    def k(a: NDArray[qd.f64, 1], out: NDArray[qd.f64, 1]):
        x, y, z = normalized(qd.Vector([a[0], a[1], a[2]]))
        out[0], out[1], out[2] = z, y, x

    a = rng.standard_normal(3)
    out = np.zeros(3)
    k(a, out)
    np.testing.assert_allclose(out, (a / np.linalg.norm(a))[::-1], rtol=1e-12)


def test_unpack_vector_element_of_ndarray_keeps_a_copy():
    @qd.kernel
    def k(x: qd.types.ndarray(dtype=qd.math.vec3, ndim=1)) -> qd.f32:
        a, b, c = x[0]
        x[0][0] = 7.0  # the unpacked variables hold the values read before
        return a + b * c

    x = rng.standard_normal((2, 3)).astype(np.float32)
    expected = x[0, 0] + x[0, 1] * x[0, 2]
    assert k(x) == pytest.approx(expected, rel=1e-6)
    assert x[0, 0] == 7.0


def test_unpacked_variables_keep_the_element_type():
    @qd.kernel
    def k() -> qd.f32:
        a, b, c = qd.Vector([1, 2, 3])
        a = 1.5  # an i32 variable: truncated
        return a + b + c

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert k() == 6.0


def test_unpack_matrix_is_an_error():
    @qd.kernel
    def k() -> qd.f32:
        a, b = qd.Matrix([[1.0, 2.0], [3.0, 4.0]])
        return a[0]

    with pytest.raises(qd.QuadrantsCompilationError, match="more than one columns cannot be unpacked"):
        k()


def test_unpack_length_mismatch():
    @qd.kernel
    def vector() -> qd.f32:
        a, b = qd.Vector([1.0, 2.0, 3.0])
        return a

    @qd.kernel
    def tuple_() -> qd.f32:
        a, b = (1.0, 2.0, 3.0)
        return a

    for k in (vector, tuple_):
        with pytest.raises(qd.QuadrantsSyntaxError, match="number of targets is not equal to value length"):
            k()


def test_unpack_scalar_is_an_error():
    @qd.kernel
    def k(x: qd.f32) -> qd.f32:
        y = x
        a, b = y
        return a

    with pytest.raises(qd.QuadrantsSyntaxError, match="Cannot unpack"):
        k(1.0)


# --- ndarray shapes ---


def test_unpack_ndarray_shape():
    @qd.kernel
    def k(x: NDArray[qd.f32, 2]) -> qd.i32:
        n_links, _B = x.shape
        return n_links * 1000 + _B

    n, m = rng.integers(1, 50, 2)
    assert k(np.zeros((n, m), np.float32)) == n * 1000 + m


def test_shape_bound_to_a_name_then_unpacked():
    @qd.kernel
    def k(x: NDArray[qd.f32, 3]) -> qd.i32:
        sh = x.shape
        a, b, c = sh
        return a * 10000 + b * 100 + c + sh[-1] * 0

    assert k(np.zeros((3, 5, 7), np.float32)) == 30507


def test_shape_len_and_negative_index():
    @qd.kernel
    def k(x: NDArray[qd.f32, 3]) -> qd.i32:
        return len(x.shape) * 100 + x.shape[-1] * 10 + x.shape[-3]

    assert k(np.zeros((2, 4, 6), np.float32)) == 362


def test_ndrange_of_starred_shape():
    @qd.kernel
    def k(x: NDArray[qd.f32, 2], out: NDArray[qd.f32, 2]):
        for i, j in qd.ndrange(*x.shape):
            out[i, j] = x[i, j] * 2.0

    x = rng.standard_normal((rng.integers(1, 20), rng.integers(1, 20))).astype(np.float32)
    out = np.zeros_like(x)
    k(x, out)
    np.testing.assert_allclose(out, 2 * x)


def test_starred_tuple_and_vector_arguments():
    @qd.func
    def f(a, b, c):
        return a * 100 + b * 10 + c

    @qd.kernel
    def k(x: NDArray[qd.i32, 1]) -> qd.i32:
        t = (x[0], x[1])
        v = qd.Vector([x[1], x[2]])
        return f(*t, x[2]) * 1000 + f(x[0], *v)

    x = rng.integers(0, 9, 3).astype(np.int32)
    a, b, c = (int(v) for v in x)
    assert k(x) == (a * 100 + b * 10 + c) * 1000 + (a * 100 + b * 10 + c)


def test_shape_unpack_count_mismatch():
    @qd.kernel
    def k(x: NDArray[qd.f32, 2]) -> qd.i32:
        n, m, o = x.shape
        return n

    with pytest.raises(qd.QuadrantsSyntaxError, match="number of targets"):
        k(np.zeros((2, 2), np.float32))


def test_shape_index_out_of_range():
    @qd.kernel
    def k(x: NDArray[qd.f32, 2]) -> qd.i32:
        return x.shape[2]

    with pytest.raises(qd.QuadrantsCompilationError, match="IndexError: shape index out of range"):
        k(np.zeros((2, 2), np.float32))


def test_slices_of_tuples_and_shapes():
    @qd.kernel
    def k(x: NDArray[qd.f32, 4], out: NDArray[qd.i32, 1]):
        t = (x.shape[0], 20, 30, 40, 50)
        parts = (t[::-1], t[1:-1], t[::2], t[-2:], t[3:1:-1], x.shape[1:], x.shape[:-1][::-2])
        i = 0
        for p in qd.static(parts):
            out[i] = len(p)
            i += 1
            for v in qd.static(p):
                out[i] = v
                i += 1

    x = np.zeros((2, 3, 4, 5), np.float32)
    out = np.zeros(40, np.int32)
    k(x, out)
    t = (2, 20, 30, 40, 50)
    expected = []
    for p in (t[::-1], t[1:-1], t[::2], t[-2:], t[3:1:-1], x.shape[1:], x.shape[:-1][::-2]):
        expected += [len(p), *p]
    assert list(out[: len(expected)]) == expected


def test_starred_target():
    """`a, *rest, z = value` takes the items the other targets leave as a list (Python's rule),
    for vectors and tuples; one starred target at most; too few items is an error."""

    @qd.kernel
    def k(x: NDArray[qd.f32, 1]) -> qd.f32:
        a, *mid, z = qd.Vector([x[0], x[1], x[2], x[3]])
        *none, last = (x[0],)
        first, *rest = (x[1], x[2])
        return a * 1000 + len(mid) * 100 + mid[1] * 10 + z + len(none) + last * 0 + len(rest) * 0.5

    x = np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32)
    assert k(x) == 1000 + 200 + 30 + 4 + 0 + 0.5

    @qd.kernel
    def short() -> qd.f32:
        a, b, *rest = qd.Vector([1.0])
        return a

    with pytest.raises(qd.QuadrantsSyntaxError, match="number of targets is not equal to value length"):
        short()
