"""qd.ndarray: shapes, Python-scope access with fresh random data for every dtype, errors,
kernel arguments (qd.ndarray and NumPy arrays), and qd.reset."""

import copy

import numpy as np
import pytest
from qd_helpers import DTYPE_NAMES, random_array, random_scalar, requires_compiler

import quadrants as qd
from quadrants import _core, _ndarray


@pytest.fixture(autouse=True)
def init(arch):
    qd.init(arch=getattr(qd, arch))
    yield
    qd.reset()


@pytest.mark.parametrize(
    "shape, expected",
    [
        (5, (5,)),
        ((2, 3), (2, 3)),
        ((), ()),
        (np.int32(3), (3,)),
        ((np.int64(2), 4), (2, 4)),
        ([3, 1], (3, 1)),
    ],
)
def test_shapes(shape, expected):
    a = qd.ndarray(qd.f32, shape)
    assert a.shape == expected and a.ndim == len(expected)
    assert a.element_shape == () and a.layout is None
    assert a._qd_ndarray is True
    # the host memory (on CUDA the mirror of the DeviceBuffer in _qd_array)
    assert isinstance(a._data(), np.ndarray) and a._data().flags.c_contiguous
    assert a._data().shape == expected and a._data().dtype == np.float32
    np.testing.assert_array_equal(a.to_numpy(), np.zeros(expected, np.float32))


@pytest.mark.parametrize("shape", [0, -1, (2, 0), 1.5, (2, 2.0), 2**31, (1, 2**31), "ab", None])
def test_invalid_shapes(shape):
    with pytest.raises(qd.QuadrantsRuntimeError, match="is not a valid shape for ndarray"):
        qd.ndarray(qd.f32, shape)


def test_largest_dimension_is_valid():
    assert _ndarray._ndarray_shape((2**31 - 1,)) == (2**31 - 1,)


def test_element_types():
    assert qd.ndarray(float, 2).dtype is qd.f32
    assert qd.ndarray(int, 2).dtype is qd.i32
    assert qd.ndarray(np.uint16, 2).dtype is qd.u16
    with pytest.raises(qd.QuadrantsRuntimeError, match="not supported as ndarray element type"):
        qd.ndarray("f32", 2)
    assert qd.ndarray(qd.types.vector(3, qd.f32), 2).to_numpy().shape == (2, 3)


def test_needs_grad():
    a = qd.ndarray(qd.f64, (2, 3), needs_grad=True)
    assert a.grad.shape == (2, 3) and a.grad.dtype is qd.f64
    assert qd.ndarray(qd.f64, 2).grad is None
    with pytest.raises(qd.QuadrantsRuntimeError, match="needs_grad"):
        qd.ndarray(qd.i32, 2, needs_grad=True)


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_numpy_round_trip(name):
    dtype = getattr(qd, name)
    a = qd.ndarray(dtype, (6, 5))
    data = random_array(dtype, (6, 5))
    a.from_numpy(data)
    out = a.to_numpy()
    assert out.dtype == dtype.np_dtype and not np.shares_memory(out, a._qd_array)
    np.testing.assert_array_equal(out, data)
    np.testing.assert_array_equal(a._pull(), data)  # the memory itself (CUDA: copied down)
    for i in range(6):
        for j in range(5):
            value = a[i, j]
            assert type(value) is (float if dtype.is_real else int)
            assert value == data[i, j]


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_element_access(name):
    dtype = getattr(qd, name)
    a = qd.ndarray(dtype, (3, 4))
    expected = np.zeros((3, 4), dtype.np_dtype)
    for i in range(3):
        for j in range(4):
            value = random_scalar(dtype)
            a[i, j] = value
            expected[i, j] = value
    np.testing.assert_array_equal(a.to_numpy(), expected)


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_fill_and_copy_from(name):
    dtype = getattr(qd, name)
    a = qd.ndarray(dtype, 9)
    value = random_scalar(dtype)
    a.fill(value)
    np.testing.assert_array_equal(a.to_numpy(), np.full(9, value, dtype.np_dtype))
    b = qd.ndarray(dtype, 9)
    data = random_array(dtype, (9,))
    b.from_numpy(data)
    a.copy_from(b)
    np.testing.assert_array_equal(a.to_numpy(), data)
    duplicate = copy.deepcopy(a)
    assert duplicate is not a and duplicate.dtype is dtype
    np.testing.assert_array_equal(duplicate.to_numpy(), data)


def test_zero_d():
    a = qd.ndarray(qd.i32, ())
    a[()] = 7
    assert a[()] == 7 and a[None] == 7
    a.fill(-3)
    assert a[()] == -3 and a.to_numpy().shape == ()


def test_zero_d_vector_and_matrix_ndarrays():
    v = qd.Vector.ndarray(3, qd.f32, shape=())
    assert v.shape == () and v.to_numpy().shape == (3,)
    data = random_array(qd.f32, (3,))
    v.from_numpy(data)
    np.testing.assert_array_equal(v[None].to_numpy(), data)
    m = qd.ndarray(qd.types.matrix(2, 2, qd.i32), shape=())
    assert m.shape == () and m.to_numpy().shape == (2, 2)

    @qd.kernel
    def bump(a: qd.types.ndarray(), b: qd.types.ndarray()):
        a[()] = a[()] * 2
        b[()] += qd.Matrix([[1, 2], [3, 4]])

    bump(v, m)
    np.testing.assert_allclose(v.to_numpy(), data * 2)
    np.testing.assert_array_equal(m.to_numpy(), [[1, 2], [3, 4]])


def test_conversions():
    a = qd.ndarray(qd.i16, 3)
    a[0] = -2.7
    a[1] = 40000
    a[2] = np.float32(9.99)
    assert [a[i] for i in range(3)] == [-2, 40000 - 65536, 9]
    a.from_numpy(np.array([1.9, -1.9, 0.0]))
    np.testing.assert_array_equal(a.to_numpy(), [1, -1, 0])
    np.testing.assert_array_equal(a.to_numpy(dtype=np.float64), [1.0, -1.0, 0.0])
    b = qd.ndarray(qd.f32, (4, 2))
    data = random_array(qd.f64, (2, 4)).T
    b.from_numpy(data)
    np.testing.assert_array_equal(b.to_numpy(), data.astype(np.float32))


@pytest.mark.cpu_only  # device memory has no NumPy view
def test_to_numpy_without_copy():
    a = qd.ndarray(qd.f32, 4)
    view = a.to_numpy(copy=False)
    assert view is a._qd_array
    view[2] = 1.5
    assert a[2] == 1.5
    with pytest.raises(ValueError, match="copy=False"):
        a.to_numpy(dtype=np.float64, copy=False)


def test_from_numpy_and_copy_from_errors():
    a = qd.ndarray(qd.f32, (2, 3))
    with pytest.raises(TypeError):
        a.from_numpy([[1, 2, 3], [4, 5, 6]])
    with pytest.raises(ValueError, match="Mismatch shape"):
        a.from_numpy(np.zeros((3, 2), np.float32))
    with pytest.raises(TypeError):
        a.copy_from(np.zeros((2, 3)))
    with pytest.raises(ValueError):
        a.copy_from(qd.ndarray(qd.f32, (3, 2)))


def test_element_access_errors():
    a = qd.ndarray(qd.f32, (4, 3))
    with pytest.raises(_core.QuadrantsIndexError, match="2d ndarray indexed with 1d indices"):
        a[1]
    with pytest.raises(IndexError):
        a[1, 2, 3] = 0.0
    assert not hasattr(qd, "QuadrantsIndexError")
    with pytest.raises(IndexError, match="out of bounds"):
        a[4, 0]
    with pytest.raises(IndexError, match="out of bounds"):
        a[0, -1]
    with pytest.raises(TypeError):
        a[0, 1.0]
    view = qd.ndarray(qd.f32, 8)[2:4]  # a slice is a window (tests/python/test_buffer_view.py)
    assert isinstance(view, qd.BufferView) and (view.offset, view.size) == (2, 2)
    with pytest.raises(TypeError, match="a slice of an ndarray is a qd.BufferView"):
        a[0:1] = 0
    with pytest.raises(TypeError):
        a[0, 0] = "x"


def test_repr():
    assert repr(qd.ndarray(qd.f32, 2)) == "<qd.ndarray>"


def test_unusable_after_reset():
    a = qd.ndarray(qd.f32, 3)
    qd.reset()
    for use in (
        lambda: a[0],
        lambda: a.to_numpy(),
        lambda: a.fill(1.0),
        lambda: a.from_numpy(np.zeros(3)),
    ):
        with pytest.raises(qd.QuadrantsRuntimeError, match="qd.reset"):
            use()
    assert a._qd_array is None


@requires_compiler
@pytest.mark.filterwarnings("ignore:Assign may lose precision")
@pytest.mark.parametrize("name", ["i8", "i32", "i64", "u16", "u64", "f32", "f64"])
def test_kernel_argument(name):
    dtype = getattr(qd, name)

    @qd.kernel
    def double(src: qd.types.ndarray(), dst: qd.types.ndarray()):
        for i in range(src.shape[0]):
            dst[i] = src[i] * 2

    data = random_array(dtype, (33,)) // 4 if not dtype.is_real else random_array(dtype, (33,))
    source = qd.ndarray(dtype, 33)
    source.from_numpy(data)
    target = qd.ndarray(dtype, 33)
    double(source, target)
    np.testing.assert_array_equal(target.to_numpy(), (data * 2).astype(dtype.np_dtype))
    as_numpy = np.zeros(33, dtype.np_dtype)
    double(data, as_numpy)
    np.testing.assert_array_equal(as_numpy, (data * 2).astype(dtype.np_dtype))


@requires_compiler
def test_fortran_array_is_copied_back():
    @qd.kernel
    def mark(a: qd.types.NDArray[qd.i32, 2]):
        for i, j in qd.ndrange(a.shape[0], a.shape[1]):
            a[i, j] = i * 100 + j

    fortran = np.zeros((3, 5), dtype=np.int32, order="F")
    mark(fortran)
    np.testing.assert_array_equal(fortran, np.add.outer(np.arange(3) * 100, np.arange(5)))


@pytest.mark.parametrize(
    "make, outer",
    [
        (lambda shape: qd.Vector.ndarray(2, qd.f32, shape=shape), (3, 4)),
        (lambda shape: qd.Matrix.ndarray(2, 3, qd.i32, shape=shape), (5,)),
        (lambda shape: qd.ndarray(qd.f32, shape), (3, 4)),
    ],
)
def test_untyped_ndim_counts_array_axes_only(make, outer):
    """ndarray(ndim=N) without an element type takes the argument's elements; N is the number of
    array axes (the element axes come on top)."""
    a = make(outer)
    data = (np.random.default_rng().standard_normal(a.to_numpy().shape) * 10).astype(
        a.to_numpy().dtype
    )
    a.from_numpy(data)

    @qd.kernel
    def twice(x: qd.types.ndarray(ndim=len(outer))):
        for I in qd.grouped(x):
            x[I] = x[I] * 2

    twice(a)
    twice(a)  # the second call takes the launch fast path
    np.testing.assert_array_equal(a.to_numpy(), data * 4)

    @qd.kernel
    def wrong(x: qd.types.ndarray(ndim=len(outer) + 1)):
        pass

    with pytest.raises(ValueError) as info:
        wrong(a)
    assert str(info.value) == (
        f"Invalid value for argument x - required ndim={len(outer) + 1}, but {len(outer)}d "
        f"ndarray with shape {outer} is provided"
    )


def test_scalar_dtype_rejects_vector_ndarray():
    @qd.kernel
    def k(x: qd.types.ndarray(qd.i32, ndim=1)):
        pass

    with pytest.raises(TypeError) as info:
        k(qd.Matrix.ndarray(2, 3, qd.i32, shape=(3,)))
    assert str(info.value) == "Expect element type i32 for argument x, but get [Tensor (2, 3) i32]"
    with pytest.raises(TypeError, match=r"but get \[Tensor \(2\) f32\]"):
        k(qd.Vector.ndarray(2, qd.f32, shape=(3,)))
