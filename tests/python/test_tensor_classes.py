"""The public tensor class names and their isinstance relations.

Spec: the answers of the reference (quadrants 1.3.3) to ``isinstance(obj, cls)``; a row lists
every public class the object is an instance of (all other names answer False).

    object                                           isinstance True for
    -----------------------------------------------  -----------------------------------------
    qd.field(qd.f32, shape)                           Field, ScalarField
    qd.Vector.field(3, qd.f32, shape)                 Field, MatrixField
    qd.Matrix.field(2, 2, qd.f32, shape)              Field, MatrixField
    qd.Struct.field({...}, shape)                     Field, StructField
    struct field member: scalar / vector              ScalarField / MatrixField (+ Field)
    field created with needs_grad: .grad              Field, ScalarField
    qd.ndarray(qd.f32, shape)                         Ndarray, ScalarNdarray
    qd.Vector.ndarray(3, qd.f32, shape)               Ndarray, VectorNdarray
    qd.ndarray(qd.types.vector(3, qd.f32), shape)     Ndarray, VectorNdarray
    qd.Matrix.ndarray(2, 2, qd.f32, shape)            Ndarray, MatrixNdarray
    qd.Tensor(any field or ndarray)                   Tensor
    qd.VectorTensor(vector ndarray / vector field)    Tensor, VectorTensor
    qd.MatrixTensor(matrix ndarray / matrix field)    Tensor, MatrixTensor

Classes: ``Tensor`` is a class (a wrapper), not a union and not a base of Field or Ndarray:
``isinstance(qd.field(...), qd.Tensor)`` is False, so callers accepting any storage test
``isinstance(x, qd.Tensor | qd.Field | qd.Ndarray)``. ``qd.Tensor(impl)`` raises TypeError for
anything but a field or an ndarray; ``VectorTensor`` for anything but vector elements,
``MatrixTensor`` for anything but matrix elements. ``VectorNdarray`` and ``MatrixNdarray`` are
siblings (neither derives from the other); a vector field is a ``MatrixField``.
"""

import numpy as np
import pytest

import quadrants as qd

NAMES = [
    "Field", "ScalarField", "MatrixField", "StructField",
    "Ndarray", "ScalarNdarray", "VectorNdarray", "MatrixNdarray",
    "Tensor", "VectorTensor", "MatrixTensor",
]


@pytest.fixture(autouse=True)
def init(arch):
    qd.init(arch=getattr(qd, arch))
    yield
    qd.reset()


def _struct_field():
    return qd.Struct.field({"a": qd.f32, "b": qd.types.vector(3, qd.f32)}, shape=4)


def _grad_field():
    return qd.field(qd.f32, shape=4, needs_grad=True).grad


MAKERS = {
    "scalar field": (lambda: qd.field(qd.f32, shape=4), {"Field", "ScalarField"}),
    "vector field": (lambda: qd.Vector.field(3, qd.f32, shape=4), {"Field", "MatrixField"}),
    "matrix field": (lambda: qd.Matrix.field(2, 2, qd.f32, shape=4), {"Field", "MatrixField"}),
    "struct field": (_struct_field, {"Field", "StructField"}),
    "struct scalar member": (lambda: _struct_field().a, {"Field", "ScalarField"}),
    "struct vector member": (lambda: _struct_field().b, {"Field", "MatrixField"}),
    "grad field": (_grad_field, {"Field", "ScalarField"}),
    "scalar ndarray": (lambda: qd.ndarray(qd.f32, shape=4), {"Ndarray", "ScalarNdarray"}),
    "vector ndarray": (lambda: qd.Vector.ndarray(3, qd.f32, shape=4), {"Ndarray", "VectorNdarray"}),
    "vector-typed ndarray": (
        lambda: qd.ndarray(qd.types.vector(3, qd.f32), shape=4),
        {"Ndarray", "VectorNdarray"},
    ),
    "matrix ndarray": (
        lambda: qd.Matrix.ndarray(2, 2, qd.f32, shape=4),
        {"Ndarray", "MatrixNdarray"},
    ),
    "Tensor of a field": (lambda: qd.Tensor(qd.field(qd.f32, shape=4)), {"Tensor"}),
    "Tensor of a vector ndarray": (
        lambda: qd.Tensor(qd.Vector.ndarray(3, qd.f32, shape=4)),
        {"Tensor"},
    ),
    "VectorTensor": (
        lambda: qd.VectorTensor(qd.Vector.ndarray(3, qd.f32, shape=4)),
        {"Tensor", "VectorTensor"},
    ),
    "VectorTensor of a field": (
        lambda: qd.VectorTensor(qd.Vector.field(3, qd.f32, shape=4)),
        {"Tensor", "VectorTensor"},
    ),
    "MatrixTensor": (
        lambda: qd.MatrixTensor(qd.Matrix.ndarray(2, 2, qd.f32, shape=4)),
        {"Tensor", "MatrixTensor"},
    ),
}


@pytest.mark.parametrize("what", sorted(MAKERS))
def test_isinstance_table(what):
    make, expected = MAKERS[what]
    obj = make()
    answers = {name for name in NAMES if isinstance(obj, getattr(qd, name))}
    assert answers == expected


def test_names_are_classes():
    for name in NAMES:
        assert isinstance(getattr(qd, name), type), name
        assert name in qd.__all__
    assert issubclass(qd.ScalarField, qd.Field) and issubclass(qd.MatrixField, qd.Field)
    assert issubclass(qd.StructField, qd.Field) and not issubclass(qd.Field, qd.Ndarray)
    assert not issubclass(qd.VectorNdarray, qd.MatrixNdarray)
    assert not issubclass(qd.MatrixNdarray, qd.VectorNdarray)
    assert not issubclass(qd.Field, qd.Tensor) and not issubclass(qd.Ndarray, qd.Tensor)


def test_union_isinstance():
    union = qd.Tensor | qd.Field | qd.Ndarray
    for obj in (qd.field(qd.i32, 3), qd.ndarray(qd.i32, 3), qd.Tensor(qd.ndarray(qd.i32, 3))):
        assert isinstance(obj, union)
    assert not isinstance(np.zeros(3), union)


def test_wrapper_errors():
    with pytest.raises(TypeError, match="requires an Ndarray or Field; got ndarray"):
        qd.Tensor(np.zeros(3))
    with pytest.raises(TypeError, match="vector-element impl; got ScalarNdarray"):
        qd.VectorTensor(qd.ndarray(qd.f32, 4))
    with pytest.raises(TypeError, match="vector-element impl; got MatrixField"):
        qd.VectorTensor(qd.Matrix.field(2, 2, qd.f32, shape=3))
    with pytest.raises(TypeError, match="matrix-element impl; got VectorNdarray"):
        qd.MatrixTensor(qd.Vector.ndarray(3, qd.f32, shape=4))


def test_wrapper_passes_through():
    t = qd.Tensor(qd.ndarray(qd.f32, (2, 3)))
    assert t.shape == (2, 3) and t.dtype == qd.f32 and t.grad is None
    t[1, 2] = 5
    t.fill(1)
    t[0, 0] = 2
    np.testing.assert_array_equal(t.to_numpy(), [[2, 1, 1], [1, 1, 1]])
    t.from_numpy(np.full((2, 3), 4, np.float32))
    assert t[1, 1] == 4
    f = qd.Tensor(qd.field(qd.f32, shape=(2, 3), needs_grad=True))
    g = qd.Tensor(qd.field(qd.f32, shape=(2, 3)))
    g.fill(4)
    f.copy_from(g)
    assert f[0, 2] == 4 and type(f.grad) is qd.Tensor
    vt = qd.VectorTensor(qd.Vector.field(3, qd.f32, shape=5))
    mt = qd.MatrixTensor(qd.Matrix.ndarray(2, 4, qd.f32, shape=5))
    assert vt.element_shape == (3,) and mt.element_shape == (2, 4) and mt.shape == (5,)
    assert "backend=NDARRAY" in repr(t) and "backend=FIELD" in repr(f)


def test_wrapped_kernel_arguments():
    @qd.kernel
    def k(a: qd.types.ndarray(dtype=qd.f32, ndim=1), f: qd.template()):
        for i in range(4):
            a[i] = i
            f[i] = 2 * i

    n = qd.ndarray(qd.f32, 4)
    f = qd.field(qd.f32, shape=4)
    for _ in range(2):  # the second call may take the registered fast path
        k(qd.Tensor(n), qd.Tensor(f))
        np.testing.assert_array_equal(n.to_numpy(), [0, 1, 2, 3])
        np.testing.assert_array_equal(f.to_numpy(), [0, 2, 4, 6])
        n.fill(0)
        f.fill(0)
    k(n, f)
    assert n[3] == 3 and f[3] == 6


def test_vector_ndarray_copy_keeps_class():
    import copy

    v = qd.Vector.ndarray(3, qd.f32, shape=2)
    v[1] = (1, 2, 3)
    m = qd.Matrix.ndarray(2, 2, qd.f32, shape=2)
    assert type(copy.deepcopy(v)) is qd.VectorNdarray and type(copy.deepcopy(m)) is qd.MatrixNdarray
    np.testing.assert_array_equal(copy.deepcopy(v).to_numpy(), v.to_numpy())
