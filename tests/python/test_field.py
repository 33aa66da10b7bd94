"""qd.field and qd.root: shapes, 0-d fields, order, offset, layouts, Python-scope access with
fresh random data for every dtype, errors, registration with the core, and qd.reset."""

import warnings

import numpy as np
import pytest
from qd_helpers import DTYPE_NAMES, random_array, random_scalar, requires_compiler

import quadrants as qd
from quadrants import _core


@pytest.fixture(autouse=True)
def init(arch):
    qd.init(arch=getattr(qd, arch))
    yield
    qd.reset()


def dtypes():
    return [getattr(qd, name) for name in DTYPE_NAMES]


@pytest.mark.parametrize(
    "shape, expected",
    [
        (5, (5,)),
        ((3,), (3,)),
        ((2, 3), (2, 3)),
        ((), ()),
        (np.int64(4), (4,)),
        ((2, 1, 3, 1), (2, 1, 3, 1)),
    ],
)
def test_shapes(shape, expected):
    x = qd.field(qd.f32, shape=shape)
    assert x.shape == expected
    assert x._qd_field_ndim == len(expected)
    assert x._qd_field_order == tuple(range(len(expected)))
    assert x._qd_field_offset == (0,) * len(expected)
    assert x.layout is None
    assert x.dtype is qd.f32
    assert isinstance(x._qd_field_id, int)
    np.testing.assert_array_equal(x.to_numpy(), np.zeros(expected, np.float32))


def test_max_dims():
    x = qd.field(qd.i8, shape=(1, 2) * 6)
    assert x.shape == (1, 2) * 6
    with pytest.raises(qd.QuadrantsRuntimeError, match="at most 12"):
        qd.field(qd.i8, shape=(1,) * 13)


@pytest.mark.parametrize("shape", [0, -1, (2, 0), 1.5, (2, 2.0), "abc", (True,)])
def test_invalid_shapes(shape):
    with pytest.raises(qd.QuadrantsRuntimeError, match="not a valid shape for field"):
        qd.field(qd.f32, shape=shape)


def test_field_ids_are_unique():
    ids = {qd.field(qd.i32, shape=2)._qd_field_id for _ in range(20)}
    assert len(ids) == 20


def test_python_types_as_dtype():
    assert qd.field(float, shape=1).dtype is qd.f32
    assert qd.field(int, shape=1).dtype is qd.i32
    assert qd.field(bool, shape=1).dtype is qd.u1
    assert qd.field(np.float64, shape=1).dtype is qd.f64
    with pytest.raises(ValueError):
        qd.field("f32", shape=1)
    assert qd.field(qd.types.vector(3, qd.f32), shape=1).to_numpy().shape == (1, 3)


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_numpy_round_trip(name):
    dtype = getattr(qd, name)
    x = qd.field(dtype, shape=(7, 5))
    data = random_array(dtype, (7, 5))
    x.from_numpy(data)
    out = x.to_numpy()
    assert out.dtype == dtype.np_dtype and out.shape == (7, 5) and out.flags.c_contiguous
    np.testing.assert_array_equal(out, data)
    for i in range(7):
        for j in range(5):
            value = x[i, j]
            assert type(value) is (float if dtype.is_real else int)
            assert value == data[i, j]


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_element_access(name):
    dtype = getattr(qd, name)
    x = qd.field(dtype, shape=(4, 3))
    expected = np.zeros((4, 3), dtype.np_dtype)
    for i in range(4):
        for j in range(3):
            value = random_scalar(dtype)
            x[i, j] = value
            expected[i, j] = value
    np.testing.assert_array_equal(x.to_numpy(), expected)
    np.testing.assert_array_equal([[x[i, j] for j in range(3)] for i in range(4)], expected)


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_fill(name):
    dtype = getattr(qd, name)
    x = qd.field(dtype, shape=(3, 4))
    value = random_scalar(dtype)
    x.fill(value)
    np.testing.assert_array_equal(x.to_numpy(), np.full((3, 4), value, dtype.np_dtype))


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_copy_from(name):
    dtype = getattr(qd, name)
    source = qd.field(dtype, shape=(6,))
    data = random_array(dtype, (6,))
    source.from_numpy(data)
    target = qd.field(dtype, shape=6)
    target.copy_from(source)
    np.testing.assert_array_equal(target.to_numpy(), data)


def test_zero_d_field():
    x = qd.field(qd.f64, shape=())
    assert x[None] == 0.0
    value = random_scalar(qd.f64)
    x[None] = value
    assert x[None] == value and x[()] == value
    x[()] = 2.5
    assert x[None] == 2.5
    assert x.to_numpy().shape == () and x.to_numpy()[()] == 2.5
    x.fill(-1)
    assert x[None] == -1.0
    with pytest.raises(AssertionError, match="Slicing is not supported on qd.field"):
        x[0]


def test_zero_d_vector_and_matrix_fields():
    v = qd.Vector.field(3, qd.f32, shape=())
    data = random_array(qd.f32, (3,))
    v.from_numpy(data)
    assert v.shape == () and v.to_numpy().shape == (3,)
    np.testing.assert_array_equal(v.to_numpy(), data)
    np.testing.assert_array_equal(v[None].to_numpy(), data)
    assert v.to_numpy(keep_dims=True).shape == (3, 1)
    m = qd.Matrix.field(2, 3, qd.i32, shape=())
    mdata = random_array(qd.i32, (2, 3))
    m.from_numpy(mdata)
    assert m.to_numpy().shape == (2, 3)
    np.testing.assert_array_equal(m.to_numpy(), mdata)
    with pytest.raises(ValueError, match="Mismatch shape"):
        v.from_numpy(np.zeros(4, np.float32))

    @qd.kernel
    def double():
        v[None] = v[None] * 2
        m[None] += 1

    double()
    np.testing.assert_allclose(v.to_numpy(), data * 2)
    np.testing.assert_array_equal(m.to_numpy(), mdata + 1)


def test_values_converted_like_c_casts():
    ints = qd.field(qd.i32, shape=4)
    ints[0] = -1.5
    ints[1] = 2.9
    ints[2] = 2**31
    ints[3] = True
    assert [ints[i] for i in range(4)] == [-1, 2, -(2**31), 1]
    small = qd.field(qd.u8, shape=2)
    small[0] = 300
    small[1] = -1
    assert small[0] == 44 and small[1] == 255
    flags = qd.field(qd.u1, shape=3)
    flags[0] = 2
    flags[1] = 0.0
    flags[2] = -0.5
    assert [flags[i] for i in range(3)] == [1, 0, 1]
    assert type(flags[0]) is int
    floats = qd.field(qd.f32, shape=1)
    floats[0] = 0.1
    assert floats[0] == float(np.float32(0.1))
    with pytest.raises(TypeError):
        floats[0] = "1.0"
    with pytest.raises(ValueError):
        ints[0] = float("nan")


def test_from_numpy_converts_dtype():
    x = qd.field(qd.i32, shape=4)
    x.from_numpy(np.array([-1.7, 2.9, 0.5, -0.5]))
    np.testing.assert_array_equal(x.to_numpy(), [-1, 2, 0, 0])
    y = qd.field(qd.f32, shape=3)
    y.from_numpy(np.array([1, 2, 3], dtype=np.int64))
    np.testing.assert_array_equal(y.to_numpy(), [1.0, 2.0, 3.0])


def test_from_numpy_non_contiguous():
    x = qd.field(qd.f64, shape=(4, 3))
    data = random_array(qd.f64, (8, 3))[::2]
    assert not data.flags.c_contiguous
    x.from_numpy(data)
    np.testing.assert_array_equal(x.to_numpy(), data)
    fortran = np.asfortranarray(random_array(qd.f64, (4, 3)))
    x.from_numpy(fortran)
    np.testing.assert_array_equal(x.to_numpy(), fortran)


def test_from_numpy_errors():
    x = qd.field(qd.f32, shape=(2, 3))
    with pytest.raises(ValueError, match="does not match"):
        x.from_numpy(np.zeros((3, 2), np.float32))
    with pytest.raises(ValueError):
        x.from_numpy(np.zeros(6, np.float32))
    with pytest.raises(TypeError):
        x.from_numpy([[0, 0, 0], [0, 0, 0]])


@pytest.mark.cpu_only  # copy=False: a live view, which device memory cannot give
def test_to_numpy_options():
    x = qd.field(qd.i16, shape=(3, 2))
    data = random_array(qd.i16, (3, 2))
    x.from_numpy(data)
    as_float = x.to_numpy(dtype=np.float64)
    assert as_float.dtype == np.float64
    np.testing.assert_array_equal(as_float, data.astype(np.float64))
    np.testing.assert_array_equal(x.to_numpy(dtype=qd.f32), data.astype(np.float32))
    copied = x.to_numpy()
    copied[0, 0] += 1
    assert x[0, 0] == data[0, 0]
    view = x.to_numpy(copy=False)
    view[0, 0] = 7
    assert x[0, 0] == 7
    assert np.shares_memory(x.to_numpy(copy=None), view)
    assert not np.shares_memory(x.to_numpy(dtype=np.int32, copy=None), view)
    with pytest.raises(ValueError, match="copy=False"):
        x.to_numpy(dtype=np.int32, copy=False)


def test_copy_from_errors_and_conversion():
    x = qd.field(qd.f32, shape=3)
    with pytest.raises(TypeError, match="non-field"):
        x.copy_from(np.zeros(3))
    with pytest.raises(ValueError, match="does not match"):
        x.copy_from(qd.field(qd.f32, shape=4))
    source = qd.field(qd.f64, shape=3)
    source.from_numpy(np.array([-1.5, 0.25, 3.75]))
    ints = qd.field(qd.i32, shape=3)
    ints.copy_from(source)
    np.testing.assert_array_equal(ints.to_numpy(), [-1, 0, 3])


def test_element_access_errors():
    x = qd.field(qd.f32, shape=(4, 3))
    with pytest.raises(AssertionError, match="Slicing is not supported on qd.field"):
        x[1]
    with pytest.raises(AssertionError, match="Slicing is not supported on qd.field"):
        x[1, 2, 0] = 1.0
    with pytest.raises(AssertionError, match="Slicing is not supported on qd.field"):
        x[1, :]
    with pytest.raises(AssertionError, match="Slicing is not supported on qd.field"):
        x[None]
    with pytest.raises(TypeError, match="illegal element"):
        x[1, 1.0]
    with pytest.raises(TypeError):
        x["a", 0] = 1
    with pytest.raises(AssertionError, match="out of bounds"):
        x[4, 0]
    with pytest.raises(AssertionError, match="out of bounds"):
        x[0, -1] = 1.0
    assert x[np.int64(3), np.int32(2)] == 0.0
    assert x[[3, 2]] == 0.0


@pytest.mark.parametrize("name", ["f32", "i64", "u8"])
def test_order(name):
    dtype = getattr(qd, name)
    x = qd.field(dtype, shape=(4, 8), order="ji")
    assert x.shape == (4, 8)
    assert x._qd_field_order == (1, 0) and x.layout == (1, 0)
    physical = x._array
    assert physical.shape == (8, 4) and physical.flags.c_contiguous
    data = random_array(dtype, (4, 8))
    x.from_numpy(data)
    np.testing.assert_array_equal(x.to_numpy(), data)
    np.testing.assert_array_equal(physical, data.T)
    assert all(x[i, j] == data[i, j] for i in range(4) for j in range(8))
    x[1, 6] = 3
    assert physical[6, 1] == 3


def test_order_three_dims():
    x = qd.field(qd.i32, shape=(2, 3, 4), order="kij")
    assert x._qd_field_order == (2, 0, 1)
    assert x._array.shape == (4, 2, 3)
    data = random_array(qd.i32, (2, 3, 4))
    x.from_numpy(data)
    np.testing.assert_array_equal(x._array, data.transpose(2, 0, 1))
    np.testing.assert_array_equal(x.to_numpy(), data)
    assert x[1, 2, 3] == data[1, 2, 3]


def test_order_errors():
    with pytest.raises(qd.QuadrantsSyntaxError, match="dimensionality of shape and order"):
        qd.field(qd.f32, shape=(2, 2), order="i")
    with pytest.raises(qd.QuadrantsSyntaxError, match="must be different"):
        qd.field(qd.f32, shape=(2, 2), order="ii")
    with pytest.raises(qd.QuadrantsSyntaxError, match="Invalid axis"):
        qd.field(qd.f32, shape=(2, 2), order="ik")
    with pytest.raises(qd.QuadrantsSyntaxError, match="shape cannot be None when order is set"):
        qd.field(qd.f32, order="ij")


def test_offset():
    x = qd.field(qd.i32, shape=4, offset=-2)
    assert x._qd_field_offset == (-2,)
    for index in range(-2, 2):
        x[index] = index * 10
    np.testing.assert_array_equal(x.to_numpy(), [-20, -10, 0, 10])
    assert x[-2] == -20 and x[1] == 10
    with pytest.raises(AssertionError, match="out of bounds"):
        x[2]
    with pytest.raises(AssertionError, match="out of bounds"):
        x[-3]
    y = qd.field(qd.f32, shape=(2, 3), offset=(1, -1))
    y[2, 1] = 5.0
    assert y.to_numpy()[1, 2] == 5.0
    with pytest.raises(qd.QuadrantsSyntaxError, match="dimensionality of shape and offset"):
        qd.field(qd.f32, shape=(2, 3), offset=1)
    with pytest.raises(qd.QuadrantsSyntaxError, match="shape cannot be None when offset is set"):
        qd.field(qd.f32, offset=1)


def test_offset_and_order():
    x = qd.field(qd.i32, shape=(2, 3), order="ji", offset=(10, 20))
    data = random_array(qd.i32, (2, 3))
    x.from_numpy(data)
    assert x[11, 22] == data[1, 2]
    np.testing.assert_array_equal(x._array, data.T)


def test_root_dense():
    x = qd.field(qd.f32)
    assert repr(x) == "<qd.field>"
    node = qd.root.dense(qd.ij, (4, 8))
    assert node.place(x) is node
    assert x.shape == (4, 8) and x._qd_field_order == (0, 1)
    assert x.parent() is node and x.parent(2) is qd.root and node.parent() is qd.root
    data = random_array(qd.f32, (4, 8))
    x.from_numpy(data)
    np.testing.assert_array_equal(x.to_numpy(), data)


def test_root_nested_dense():
    a, b, c = qd.field(qd.i32), qd.field(qd.i32), qd.field(qd.f64)
    qd.root.dense(qd.i, 4).dense(qd.j, 8).place(a)
    assert a.shape == (4, 8) and a._qd_field_order == (0, 1)
    qd.root.dense(qd.j, 8).dense(qd.i, 4).place(b, c)
    assert b.shape == (4, 8) and b._qd_field_order == (1, 0) and b._array.shape == (8, 4)
    assert c.shape == (4, 8)
    data = random_array(qd.i32, (4, 8))
    b.from_numpy(data)
    np.testing.assert_array_equal(b.to_numpy(), data)
    assert b[3, 7] == data[3, 7]


def test_root_levels_and_shapes():
    top = qd.root.dense(qd.i, 3)
    x, y = qd.field(qd.u8), qd.field(qd.u8)
    top.place(x)
    top.dense(qd.j, 5).place(y)
    assert x.shape == (3,) and y.shape == (3, 5)
    skipped = qd.field(qd.f32)
    qd.root.dense(qd.j, 8).place(skipped)
    assert skipped.shape == (8,)  # one dimension per axis named, as in the reference
    square = qd.field(qd.f32)
    qd.root.dense(qd.ij, 3).place(square)
    assert square.shape == (3, 3)
    scalar = qd.field(qd.f32)
    qd.root.place(scalar)
    assert scalar.shape == ()
    scalar[None] = 4.0
    assert scalar[None] == 4.0
    shifted = qd.field(qd.i32)
    qd.root.dense(qd.i, 4).place(shifted, offset=-2)
    shifted[-2] = 9
    assert shifted.to_numpy()[0] == 9


def test_root_errors():
    x = qd.field(qd.f32)
    with pytest.raises(qd.QuadrantsRuntimeError, match="has not been placed"):
        x[0]
    with pytest.raises(qd.QuadrantsRuntimeError, match="has not been placed"):
        x.shape
    with pytest.raises(qd.QuadrantsRuntimeError, match="has not been placed"):
        x.to_numpy()
    qd.root.dense(qd.i, 4).place(x)
    with pytest.raises(qd.QuadrantsRuntimeError, match="already placed"):
        qd.root.dense(qd.i, 4).place(x)
    with pytest.raises(TypeError):
        qd.root.dense(qd.i, 4).place(np.zeros(4))
    with pytest.raises(ValueError, match="twice"):
        qd.root.dense(qd.axes(0, 0), 4)
    with pytest.raises(ValueError):
        qd.root.dense(qd.ij, (2, 3, 4))
    with pytest.raises(ValueError):
        qd.root.dense(qd.i, 0)
    with pytest.raises(TypeError):
        qd.root.dense(0, 4)


def _filled_with_linear_index(build, ndim):
    """A field laid out by `build`, filled in a kernel (struct-for) with its row-major linear
    index; returns (shape, to_numpy())."""
    x = qd.field(qd.i32)
    build(x)

    @qd.kernel
    def fill():
        for I in qd.grouped(x):
            linear = 0
            for d in qd.static(range(ndim)):
                linear = linear * x.shape[d] + I[d]
            x[I] = linear

    fill()
    return x.shape, x.to_numpy()


@pytest.mark.parametrize(
    "build, shape",
    [
        (lambda x: qd.root.dense(qd.i, 4).dense(qd.i, 3).place(x), (12,)),
        (lambda x: qd.root.dense(qd.i, 2).dense(qd.i, 2).dense(qd.i, 2).place(x), (8,)),
        (lambda x: qd.root.dense(qd.k, 5).place(x), (5,)),
        (lambda x: qd.root.dense(qd.j, 8).place(x), (8,)),
        (lambda x: qd.root.dense(qd.ik, (2, 3)).place(x), (2, 3)),
        (lambda x: qd.root.dense(qd.k, 2).dense(qd.i, 3).place(x), (3, 2)),
        (lambda x: qd.root.dense(qd.ij, (2, 3)).dense(qd.j, 4).place(x), (2, 12)),
        (lambda x: qd.root.dense(qd.i, 4).dense(qd.j, 3).dense(qd.i, 2).place(x), (8, 3)),
        (lambda x: qd.root.dense(qd.jk, (3, 2)).dense(qd.i, 2).place(x), (2, 3, 2)),
    ],
)
def test_root_axis_split_over_levels_and_skipped_axes(build, shape):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got_shape, data = _filled_with_linear_index(build, len(shape))
    assert got_shape == shape
    np.testing.assert_array_equal(data, np.arange(int(np.prod(shape))).reshape(shape))


def test_root_axis_split_access_and_offset():
    with pytest.warns(UserWarning, match="Shape 3 is detected on non-first division of axis i"):
        node = qd.root.dense(qd.i, 4).dense(qd.i, 3)
    assert node.shape == (12,)
    y, z = qd.field(qd.f32), qd.field(qd.f32)
    node.place(y)
    qd.root.dense(qd.i, 4).dense(qd.i, 4).place(z, offset=-2)
    y[7] = 5.0
    values = random_array(qd.f32, (12,))

    @qd.kernel
    def add(v: qd.types.ndarray()):
        for i in range(12):
            y[i] += v[i]
        for i in z:
            z[i] = i

    add(values)
    expected = values.copy()
    expected[7] += 5.0
    np.testing.assert_allclose(y.to_numpy(), expected)
    assert y[7] == pytest.approx(expected[7])
    assert z.shape == (16,)
    np.testing.assert_array_equal(z.to_numpy(), np.arange(-2, 14))
    w = qd.Vector.field(2, qd.f32)
    qd.root.dense(qd.i, 2).dense(qd.i, 4).place(w)
    assert w.shape == (8,) and w.to_numpy().shape == (8, 2)


@pytest.mark.parametrize("kind", ["pointer", "bitmasked", "dynamic", "hash"])
def test_sparse_not_supported(kind):
    with pytest.raises(NotImplementedError, match="sparse SNodes"):
        getattr(qd.root, kind)(qd.i, 4)
    with pytest.raises(NotImplementedError):
        getattr(qd.root.dense(qd.i, 2), kind)(qd.j, 4)


def test_axes():
    assert (
        qd.i.indices == (0,)
        and qd.j.indices == (1,)
        and qd.k.indices == (2,)
        and qd.l.indices == (3,)
    )
    assert (
        qd.ij.indices == (0, 1) and qd.ijk.indices == (0, 1, 2) and qd.ijkl.indices == (0, 1, 2, 3)
    )
    assert qd.jk.indices == (1, 2) and qd.ikl.indices == (0, 2, 3)
    assert qd.axes(1, 0).indices == (1, 0)


@pytest.mark.cpu_only  # on CUDA fields register a DeviceBuffer (cuda_register_field)
def test_registers_its_memory_with_the_core(monkeypatch):
    calls = []
    monkeypatch.setattr(
        _core, "register_field", lambda field_id, array: calls.append((field_id, array))
    )
    x = qd.field(qd.f32, shape=(3, 2), order="ji")
    y = qd.field(qd.i8)
    assert [call[0] for call in calls] == [x._qd_field_id]
    qd.root.dense(qd.i, 5).place(y)
    assert [call[0] for call in calls] == [x._qd_field_id, y._qd_field_id]
    array = calls[0][1]
    assert array is x._array and array.shape == (2, 3) and array.flags.c_contiguous
    assert np.shares_memory(array, x.to_numpy(copy=False))


def test_needs_grad():
    x = qd.field(qd.f32, shape=(2, 3), needs_grad=True, needs_dual=True)
    assert x.grad.shape == (2, 3) and x.grad.dtype is qd.f32
    assert x.dual.shape == (2, 3)
    np.testing.assert_array_equal(x.grad.to_numpy(), np.zeros((2, 3)))
    assert qd.field(qd.f32, shape=2).grad is None
    with pytest.raises(qd.QuadrantsRuntimeError, match="needs_grad"):
        qd.field(qd.i32, shape=2, needs_grad=True)
    late = qd.field(qd.f64, needs_grad=True)
    qd.root.dense(qd.i, 3).place(late)
    assert late.grad.shape == (3,)


def test_str_and_iteration():
    x = qd.field(qd.i32, shape=3)
    x[1] = 5
    assert str(x) == str(np.array([0, 5, 0]))
    with pytest.raises(NotImplementedError, match="Struct for"):
        iter(x)


def test_unusable_after_reset():
    x = qd.field(qd.f32, shape=4)
    node = qd.root.dense(qd.i, 2)
    qd.reset()
    for use in (
        lambda: x[0],
        lambda: x.to_numpy(),
        lambda: x.fill(1),
        lambda: x.shape,
        lambda: x.from_numpy(np.zeros(4, np.float32)),
    ):
        with pytest.raises(qd.QuadrantsRuntimeError, match="qd.reset"):
            use()
    qd.init()
    with pytest.raises(qd.QuadrantsRuntimeError, match="qd.reset"):
        x[0] = 1.0
    with pytest.raises(qd.QuadrantsRuntimeError, match="qd.reset"):
        node.place(qd.field(qd.f32))
    fresh = qd.field(qd.f32)
    qd.root.dense(qd.i, 2).place(fresh)
    assert fresh.shape == (2,)
    assert str(x) == "<Field: Definition of this field is incomplete>"


@requires_compiler
def test_kernel_writes_global_field():
    x = qd.field(qd.i32, shape=(3, 4))

    @qd.kernel
    def fill():
        for i, j in qd.ndrange(3, 4):
            x[i, j] = i * 10 + j

    fill()
    np.testing.assert_array_equal(x.to_numpy(), np.add.outer(np.arange(3) * 10, np.arange(4)))


@requires_compiler
@pytest.mark.parametrize("name", ["i32", "i64", "f32", "f64", "u8"])
def test_kernel_reads_and_writes_field_template(name):
    dtype = getattr(qd, name)
    source = qd.field(dtype, shape=16)
    target = qd.field(dtype, shape=16)
    data = random_array(dtype, (16,))
    source.from_numpy(data)

    @qd.kernel
    def copy(dst: qd.template(), src: qd.template()):
        for i in range(16):
            dst[i] = src[i]

    copy(target, source)
    np.testing.assert_array_equal(target.to_numpy(), data)


def test_snode_class_is_public():
    """qd.SNode is the class of the layout levels: dense children of qd.root and the level of
    every field, whether placed by hand or made with shape=."""
    x = qd.field(qd.f32)
    block = qd.root.dense(qd.i, 8)
    block.place(x)
    y = qd.field(qd.f32, shape=(4, 5))
    assert isinstance(block, qd.SNode)
    assert isinstance(x.snode, qd.SNode) and isinstance(y.snode, qd.SNode)
    assert y.snode.shape == (4, 5) and block.shape == (8,)
