"""qd.tensor, qd.Vector.tensor, qd.Matrix.tensor, qd.Backend, qd.wrap and the qd.Tensor surface.

Spec (the reference, quadrants 1.3.3):
- ``qd.Backend`` is an IntEnum: FIELD = 0, NDARRAY = 1. ``qd.tensor(dtype, shape, *,
  backend=qd.Backend.NDARRAY, layout=None, needs_grad=False)`` returns a wrapper: ``qd.Tensor``
  for scalar dtypes, ``VectorTensor`` / ``MatrixTensor`` for vector / matrix dtypes; so do
  ``qd.Vector.tensor(n, dtype, shape, ...)`` and ``qd.Matrix.tensor(n, m, dtype, shape, ...)``
  (which take no ``layout=``). ``_unwrap()`` is the field or ndarray.
- The wrapper has ``shape``, ``dtype``, ``layout``, ``grad`` (a wrapper, the same object every
  time, or None), ``has_grad()``, ``has_dual()``, host indexing, ``fill``, ``to_numpy`` /
  ``from_numpy``, ``to_torch`` / ``from_torch``, ``copy_from`` (same backend only) and pickles
  on both backends (data, shape, dtype, layout, element shape kept).
- Errors: see ``test_errors``.
"""

import pickle

import numpy as np
import pytest

import quadrants as qd

BACKENDS = [qd.Backend.FIELD, qd.Backend.NDARRAY]


@pytest.fixture(autouse=True)
def init(arch):
    qd.init(arch=getattr(qd, arch))
    yield
    qd.reset()


def _random(shape, dtype=np.float32, seed=None):
    rng = np.random.default_rng(seed)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-1000, 1000, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def test_backend_enum():
    import enum

    assert issubclass(qd.Backend, enum.IntEnum)
    assert [m.name for m in qd.Backend] == ["FIELD", "NDARRAY"]
    assert qd.Backend.FIELD == 0 and qd.Backend.NDARRAY == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_tensor_returns_wrapper(backend):
    t = qd.tensor(qd.f32, shape=(4, 5), backend=backend)
    assert type(t) is qd.Tensor and isinstance(t, qd.Tensor)
    impl = t._unwrap()
    if backend is qd.Backend.FIELD:
        assert isinstance(impl, qd.ScalarField)
    else:
        assert isinstance(impl, qd.ScalarNdarray)
    assert t.shape == (4, 5) and t.dtype == qd.f32 and t.layout is None
    assert f"backend={backend.name}" in repr(t)
    np.testing.assert_array_equal(t.to_numpy(), np.zeros((4, 5), np.float32))


def test_default_backend_is_ndarray():
    assert isinstance(qd.tensor(qd.i32, 3)._unwrap(), qd.Ndarray)
    assert isinstance(qd.Vector.tensor(2, qd.i32, 3)._unwrap(), qd.VectorNdarray)
    assert isinstance(qd.Matrix.tensor(2, 2, qd.i32, 3)._unwrap(), qd.MatrixNdarray)
    # the integer value of the enum is accepted
    assert isinstance(qd.tensor(qd.i32, 3, backend=0)._unwrap(), qd.ScalarField)


@pytest.mark.parametrize("backend", BACKENDS)
def test_vector_and_matrix_tensors(backend):
    v = qd.Vector.tensor(3, qd.f32, shape=(4,), backend=backend)
    m = qd.Matrix.tensor(2, 3, qd.f32, shape=(5, 2), backend=backend)
    assert type(v) is qd.VectorTensor and v.element_shape == (3,) and v.shape == (4,)
    assert type(m) is qd.MatrixTensor and m.element_shape == (2, 3) and m.shape == (5, 2)
    data = _random((5, 2, 2, 3))
    m.from_numpy(data)
    np.testing.assert_array_equal(m.to_numpy(), data)
    np.testing.assert_array_equal(np.asarray(m[4, 1].to_numpy()), data[4, 1])
    vdata = _random((4, 3))
    v.from_numpy(vdata)
    np.testing.assert_array_equal(v.to_numpy(), vdata)
    # a vector / matrix dtype given to qd.tensor picks the same wrappers
    assert type(qd.tensor(qd.types.vector(3, qd.f32), 4, backend=backend)) is qd.VectorTensor
    assert type(qd.tensor(qd.types.matrix(2, 2, qd.f32), 4, backend=backend)) is qd.MatrixTensor


@pytest.mark.parametrize("backend", BACKENDS)
def test_scalar_tensor_0d(backend):
    t = qd.tensor(qd.i32, (), backend=backend)
    assert t.shape == ()
    t[None] = 7
    assert t[None] == 7 and t.to_numpy().shape == ()


@pytest.mark.parametrize("backend", BACKENDS)
def test_host_access_fill_copy(backend):
    a = qd.tensor(qd.f64, (3, 7), backend=backend)
    b = qd.tensor(qd.f64, (3, 7), backend=backend)
    data = _random((3, 7), np.float64)
    a.from_numpy(data)
    for i, j in [(0, 0), (2, 6), (1, 3)]:
        assert a[i, j] == data[i, j]
    a[2, 5] = 1.5
    data[2, 5] = 1.5
    np.testing.assert_array_equal(a.to_numpy(), data)
    b.copy_from(a)
    np.testing.assert_array_equal(b.to_numpy(), data)
    b.copy_from(a._unwrap())  # a bare impl of the same backend
    b.fill(-2)
    np.testing.assert_array_equal(b.to_numpy(), np.full((3, 7), -2.0))
    assert a.to_numpy(dtype=np.int32).dtype == np.int32


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("maker", ["scalar", "vector", "matrix"])
def test_needs_grad(backend, maker):
    if maker == "scalar":
        t = qd.tensor(qd.f32, (4,), backend=backend, needs_grad=True)
        plain = qd.tensor(qd.f32, (4,), backend=backend)
    elif maker == "vector":
        t = qd.Vector.tensor(3, qd.f32, (4,), backend=backend, needs_grad=True)
        plain = qd.Vector.tensor(3, qd.f32, (4,), backend=backend)
    else:
        t = qd.Matrix.tensor(2, 2, qd.f32, (4,), backend=backend, needs_grad=True)
        plain = qd.Matrix.tensor(2, 2, qd.f32, (4,), backend=backend)
    assert t.has_grad() and not t.has_dual() and not plain.has_grad()
    grad = t.grad
    assert type(grad) is type(t) and grad is t.grad and grad.shape == t.shape
    assert type(grad._unwrap()) is type(t._unwrap())
    data = _random(t.to_numpy().shape)
    grad.from_numpy(data)
    np.testing.assert_array_equal(t.grad.to_numpy(), data)
    np.testing.assert_array_equal(t.to_numpy(), np.zeros_like(data))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", [None, (1, 0)])
def test_pickle(backend, layout):
    t = qd.tensor(qd.f32, (3, 4), backend=backend, layout=layout)
    data = _random((3, 4))
    t.from_numpy(data)
    restored = pickle.loads(pickle.dumps(t))
    assert type(restored) is qd.Tensor and restored._backend() is backend
    assert restored.shape == (3, 4) and restored.layout == layout and restored.dtype == qd.f32
    np.testing.assert_array_equal(restored.to_numpy(), data)
    v = qd.Matrix.tensor(2, 3, qd.i32, (5,), backend=backend)
    vdata = _random((5, 2, 3), np.int32)
    v.from_numpy(vdata)
    restored = pickle.loads(pickle.dumps(v))
    assert type(restored) is qd.MatrixTensor and restored.element_shape == (2, 3)
    np.testing.assert_array_equal(restored.to_numpy(), vdata)


def test_wrap():
    a = qd.ndarray(qd.f32, (4, 5))
    t = qd.wrap(a)
    assert type(t) is qd.Tensor and t._unwrap() is a
    assert type(qd.wrap(qd.Vector.field(3, qd.f32, 4))) is qd.VectorTensor
    assert type(qd.wrap(qd.Matrix.ndarray(2, 2, qd.f32, 4))) is qd.MatrixTensor


def test_errors():
    with pytest.raises(ValueError, match=r"backend=7 is not a valid qd.Backend; expected one of "
                       r"qd.Backend.FIELD, qd.Backend.NDARRAY"):
        qd.tensor(qd.f32, 5, backend=7)
    with pytest.raises(ValueError, match="backend='field' is not a valid qd.Backend"):
        qd.tensor(qd.f32, 5, backend="field")
    with pytest.raises(TypeError, match=r"qd.tensor\(...\) does not accept order=; pass layout="):
        qd.tensor(qd.f32, (4, 5), order="ji")
    with pytest.raises(ValueError, match="layout has 3 entries but shape has 2 dimensions"):
        qd.tensor(qd.f32, (4, 5), layout=(0, 1, 2))
    with pytest.raises(ValueError, match=r"layout=\(0, 0\) is not a permutation of range\(2\)"):
        qd.tensor(qd.f32, (4, 5), layout=(0, 0))
    with pytest.raises(TypeError, match="'float' object cannot be interpreted as an integer"):
        qd.tensor(qd.f32, (4, 5), layout=(1.0, 0))
    with pytest.raises(TypeError, match=r"qd.tensor\(\) got unexpected keyword argument\(s\) "
                       r"\['offset'\]; accepted: backend, dtype, layout, needs_grad, shape"):
        qd.tensor(qd.f32, (4, 5), offset=(1, 1))
    with pytest.raises(TypeError, match=r"qd.Vector.tensor\(\) got unexpected keyword "
                       r"argument\(s\) \['layout'\]; accepted: backend, dtype, needs_grad, shape"):
        qd.Vector.tensor(3, qd.f32, (4,), layout=(0,))
    with pytest.raises(TypeError, match=r"does not accept order= \(or layout=\)"):
        qd.Matrix.tensor(2, 2, qd.f32, (4,), order="i")
    with pytest.raises(TypeError, match="layout= is not supported with compound dtypes"):
        qd.tensor(qd.types.vector(3, qd.f32), (4, 5), layout=(1, 0))
    with pytest.raises(TypeError, match="to wrap an existing ScalarNdarray, use qd.wrap"):
        qd.tensor(qd.ndarray(qd.f32, 3), 3)
    with pytest.raises(TypeError, match="requires an Ndarray or Field; got Tensor"):
        qd.Tensor(qd.tensor(qd.f32, 3))
    with pytest.raises(TypeError, match="requires an Ndarray or Field; got ndarray"):
        qd.wrap(np.zeros(3))
    with pytest.raises(qd.QuadrantsRuntimeError, match="i32 is not supported for ndarray with"):
        qd.tensor(qd.i32, 4, needs_grad=True)
    with pytest.raises(qd.QuadrantsRuntimeError, match="i32 is not supported for field with"):
        qd.tensor(qd.i32, 4, needs_grad=True, backend=qd.Backend.FIELD)
    with pytest.raises(TypeError, match="Cannot copy from a non-field object"):
        qd.tensor(qd.f32, 4, backend=qd.Backend.FIELD).copy_from(qd.tensor(qd.f32, 4))
    with pytest.raises(TypeError, match="Cannot copy from a non-ndarray object"):
        qd.tensor(qd.f32, 4).copy_from(qd.tensor(qd.f32, 4, backend=qd.Backend.FIELD))
    with pytest.raises(ValueError, match=r"Mismatch shape: \(3,\) expected, but \(4,\) provided"):
        qd.tensor(qd.f32, 3).from_numpy(np.zeros(4))
    with pytest.raises(ValueError, match=r"qd.field shape \(3,\) does not match the numpy array"):
        qd.tensor(qd.f32, 3, backend=qd.Backend.FIELD).from_numpy(np.zeros(4))
    with pytest.raises(qd.QuadrantsRuntimeError, match=r"\(0,\) is not a valid shape for ndarray"):
        qd.tensor(qd.f32, (0,))
    with pytest.raises(TypeError, match="'NoneType' object is not iterable"):
        qd.tensor(qd.f32, None)
