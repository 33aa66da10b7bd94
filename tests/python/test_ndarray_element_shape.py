"""``qd.types.ndarray(element_dim=..., element_shape=...)``: the older spelling of vector and
matrix element types.

Spec, from the reference (quadrants 1.3.3):

    arguments (with dtype=qd.f32)          element type
    -------------------------------------  ---------------------------------------------------
    element_dim=0, or element_shape=()     qd.f32 (scalars)
    element_shape=(3,)                     qd.types.vector(3, qd.f32)
    element_shape=(2, 2)                   qd.types.matrix(2, 2, qd.f32)
    element_dim=3 or -1, element_shape     ValueError ("Only scalars, vectors, and matrices
      of 3 axes                              are allowed ...")
    element_dim=1, element_shape=(2, 2)    ValueError (shape doesn't match dim: 2!=1)
    dtype=qd.types.vector(3, qd.f32) with  TypeError ("Cannot specify matrix dtype ...")
      element_dim or element_shape

In kernels such a parameter is indexed ``a[i][k]`` / ``a[i][r, c]`` and ``a[i]`` is a vector or
matrix; it takes NumPy arrays of ``shape + element_shape`` and vector/matrix ndarrays.

``element_dim=1`` / ``2`` alone (``qd.types.ndarray(element_dim=1)``) means vector / matrix
elements whose size each argument gives: a vector/matrix ndarray's own, or the last axes of a
NumPy array; the kernel is specialized per element shape, and an argument whose elements are of
the other kind raises ValueError.

Where we differ: the reference fails with an internal TypeError for ``element_dim=1`` or ``2``
with a dtype, even with a matching ``element_shape``; here that combination means the same as
``element_shape`` alone, and ``element_dim`` with a dtype but no shape works as without one.
"""

import numpy as np
import pytest

import quadrants as qd


@pytest.fixture(autouse=True)
def init(arch):
    qd.init(arch=getattr(qd, arch))
    yield
    qd.reset()


@pytest.mark.parametrize(
    "kwargs, ndim, shape",
    [
        (dict(element_dim=0), 0, None),
        (dict(element_shape=()), 0, None),
        (dict(element_shape=(3,)), 1, (3, 1)),
        (dict(element_shape=[3]), 1, (3, 1)),
        (dict(element_dim=1, element_shape=(3,)), 1, (3, 1)),
        (dict(element_shape=(2, 4)), 2, (2, 4)),
        (dict(element_dim=2, element_shape=(2, 4)), 2, (2, 4)),
    ],
)
def test_element_types(kwargs, ndim, shape):
    a = qd.types.ndarray(dtype=qd.f32, ndim=1, **kwargs)
    assert a.dtype is qd.f32 and a.ndim == 1 and a.element_ndim == ndim
    if shape:
        assert (a._raw_dtype.n, a._raw_dtype.m) == shape


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(element_dim=3), ValueError, "Only scalars, vectors, and matrices"),
        (dict(element_dim=-1), ValueError, "Only scalars, vectors, and matrices"),
        (dict(element_shape=(1, 2, 3)), ValueError, "Only scalars, vectors, and matrices"),
        (dict(element_dim=1, element_shape=(2, 2)), ValueError, "doesn't match"),
        (dict(element_dim=0, element_shape=(2,)), ValueError, "doesn't match"),
        (dict(element_shape=(0,)), ValueError, "positive ints"),
    ],
)
def test_element_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        qd.types.ndarray(dtype=qd.f32, ndim=1, **kwargs)


def test_compound_dtype_with_element_arguments():
    with pytest.raises(TypeError, match="Cannot specify matrix dtype"):
        qd.types.ndarray(dtype=qd.types.vector(3, qd.f32), ndim=1, element_dim=1)
    with pytest.raises(TypeError, match="Cannot specify matrix dtype"):
        qd.types.ndarray(dtype=qd.types.matrix(2, 2, qd.f32), element_shape=(2, 2))


def test_vector_elements_in_kernel():
    @qd.kernel
    def k(a: qd.types.ndarray(dtype=qd.f32, ndim=1, element_shape=(3,))):
        for i in range(a.shape[0]):
            a[i][1] = a[i][0] + 1.0
            a[i] = a[i] * 2

    x = np.zeros((4, 3), np.float32)
    x[:, 0] = np.arange(4)
    k(x)
    np.testing.assert_array_equal(x, [[0, 2, 0], [2, 4, 0], [4, 6, 0], [6, 8, 0]])
    v = qd.Vector.ndarray(3, qd.f32, shape=4)
    v[1] = (1, 2, 3)
    k(v)
    np.testing.assert_array_equal(v.to_numpy()[1], [2, 4, 6])
    with pytest.raises(ValueError, match="elements of shape"):
        k(np.zeros((4, 2), np.float32))


def test_element_dim_with_shape_in_kernel():
    @qd.kernel
    def k(a: qd.types.ndarray(dtype=qd.f32, ndim=1, element_dim=2, element_shape=(2, 2))):
        for i in range(a.shape[0]):
            a[i][0, 1] = 7.0 + i

    x = np.zeros((4, 2, 2), np.float32)
    k(x)
    np.testing.assert_array_equal(x[1], [[0, 8], [0, 0]])
    m = qd.Matrix.ndarray(2, 2, qd.f32, shape=3)
    k(m)
    np.testing.assert_array_equal(m.to_numpy()[:, 0, 1], [7, 8, 9])


def test_scalar_element_dim_in_kernel():
    @qd.kernel
    def k(a: qd.types.ndarray(dtype=qd.f32, ndim=1, element_dim=0)):
        for i in range(a.shape[0]):
            a[i] = 7.0

    x = np.zeros(4, np.float32)
    k(x)
    np.testing.assert_array_equal(x, [7, 7, 7, 7])


@pytest.mark.parametrize("dtype", [None, qd.f32])
def test_element_dim_alone_takes_the_size_from_the_argument(dtype):
    kwargs = {} if dtype is None else {"dtype": dtype}

    @qd.kernel
    def vec(a: qd.types.ndarray(element_dim=1, **kwargs)):
        for i in range(a.shape[0]):
            a[i][0] += 1.0

    @qd.kernel
    def mat(a: qd.types.ndarray(element_dim=2, ndim=1, **kwargs)):
        for i in range(a.shape[0]):
            a[i][0, 1] += a[i].n + a[i].m * 10

    rng = np.random.default_rng()
    x = qd.Vector.ndarray(3, qd.f32, shape=(4,))
    start = rng.standard_normal((4, 3)).astype(np.float32)
    x.from_numpy(start)
    vec(x)
    np.testing.assert_array_equal(x.to_numpy()[:, 0], start[:, 0] + 1)
    np.testing.assert_array_equal(x.to_numpy()[:, 1:], start[:, 1:])
    y = rng.standard_normal((5, 2)).astype(np.float32)
    want = y.copy()
    want[:, 0] += 1
    vec(y)
    np.testing.assert_array_equal(y, want)
    assert len(vec._compiled) == 2  # vectors of 3 and of 2
    m = qd.Matrix.ndarray(2, 3, qd.f32, shape=(4,))
    mat(m)
    np.testing.assert_array_equal(m.to_numpy()[:, 0, 1], np.full(4, 32, np.float32))
    with pytest.raises(ValueError):
        mat(x)
