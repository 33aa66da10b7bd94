"""``qd.Tensor`` as a kernel parameter annotation.

Spec (the reference, quadrants 1.3.3): a parameter annotated ``qd.Tensor`` takes a field, an
ndarray, a ``qd.Tensor`` wrapper of either, a NumPy array, or None; calls may alternate among
them. A wrapper stands for what it wraps. A field is passed like a ``qd.template()`` argument
(the kernel specialises on the field), an ndarray like a ``qd.types.ndarray()`` argument whose
dtype, dimensions and vector/matrix element come from the value (an ndarray of other
extents reuses the compiled kernel). None (or any other Python value) is a compile-time value:
guard its uses with ``qd.static(x is not None)``. ``qd.Tensor`` also annotates ``@qd.func``
parameters (by reference).
"""

import dataclasses

import numpy as np
import pytest

import quadrants as qd

BACKENDS = [qd.Backend.FIELD, qd.Backend.NDARRAY]


@dataclasses.dataclass
class TwoTensors:
    a: qd.Tensor
    b: qd.Tensor


@pytest.fixture(autouse=True)
def init(arch):
    qd.init(arch=getattr(qd, arch))
    yield
    qd.reset()


@qd.kernel
def add_into(x: qd.Tensor, y: qd.Tensor, s: qd.f32):
    for i in range(x.shape[0]):
        x[i] = x[i] + y[i] * s


def _makers(dtype, shape):
    return {
        "field": lambda: qd.field(dtype, shape),
        "ndarray": lambda: qd.ndarray(dtype, shape),
        "field wrapper": lambda: qd.tensor(dtype, shape, backend=qd.Backend.FIELD),
        "ndarray wrapper": lambda: qd.tensor(dtype, shape),
    }


@pytest.mark.parametrize("xkind", sorted(_makers(qd.f32, 1)))
@pytest.mark.parametrize("ykind", sorted(_makers(qd.f32, 1)))
def test_every_kind_of_argument(xkind, ykind):
    rng = np.random.default_rng()
    n = 37
    x, y = _makers(qd.f32, n)[xkind](), _makers(qd.f32, n)[ykind]()
    xs, ys = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    x.from_numpy(xs)
    y.from_numpy(ys)
    for _ in range(2):  # the second call may take the registered fast path
        add_into(x, y, 0.5)
        xs = xs + ys * np.float32(0.5)
    np.testing.assert_allclose(x.to_numpy(), xs, rtol=1e-6)


def test_numpy_array_argument(arch):
    y = np.random.default_rng().standard_normal(8).astype(np.float32)
    x = qd.tensor(qd.f32, 8)
    add_into(x, y, 2.0)
    np.testing.assert_allclose(x.to_numpy(), 2 * y, rtol=1e-6)


def test_ndarray_extents_do_not_recompile():
    @qd.kernel
    def total(x: qd.Tensor) -> qd.f32:
        s = 0.0
        for i in range(x.shape[0]):
            s += x[i]
        return s

    for n in (3, 10, 64):
        data = np.random.default_rng().standard_normal(n).astype(np.float32)
        t = qd.tensor(qd.f32, n)
        t.from_numpy(data)
        assert total(t) == pytest.approx(float(data.sum()), rel=1e-5, abs=1e-5)
    assert len(total._compiled) == 1
    f = qd.tensor(qd.f32, 5, backend=qd.Backend.FIELD)
    f.fill(2)
    assert total(f) == 10
    assert len(total._compiled) == 2  # a field is a specialisation of its own


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_dimensional(backend):
    @qd.kernel
    def index_sum(x: qd.Tensor):
        for i, j in x:
            x[i, j] = i * 100 + j

    t = qd.tensor(qd.i32, (5, 7), backend=backend)
    index_sum(t)
    i, j = np.indices((5, 7))
    np.testing.assert_array_equal(t.to_numpy(), i * 100 + j)


@pytest.mark.parametrize("backend", BACKENDS)
def test_vector_and_matrix_elements(backend):
    @qd.kernel
    def vfill(x: qd.Tensor):
        for i in range(x.shape[0]):
            x[i] = [i, 2 * i, 3]

    @qd.kernel
    def mfill(m: qd.Tensor):
        for i in range(m.shape[0]):
            m[i] = [[i, 1], [2, i * i]]

    v = qd.Vector.tensor(3, qd.f32, 4, backend=backend)
    vfill(v)
    np.testing.assert_array_equal(v.to_numpy(), [[i, 2 * i, 3] for i in range(4)])
    m = qd.Matrix.tensor(2, 2, qd.i32, 5, backend=backend)
    mfill(m)
    np.testing.assert_array_equal(m.to_numpy(), [[[i, 1], [2, i * i]] for i in range(5)])


def test_none_with_static_guard():
    @qd.kernel
    def maybe(x: qd.Tensor, y: qd.Tensor) -> qd.i32:
        r = 0
        if qd.static(y is not None):
            r = y[0]
        return r + x[0]

    x = qd.tensor(qd.i32, 2)
    x[0] = 5
    y = qd.tensor(qd.i32, 2, backend=qd.Backend.FIELD)
    y[0] = 7
    assert maybe(x, None) == 5
    assert maybe(x, y) == 12
    assert maybe(x._unwrap(), None) == 5


def test_func_parameter():
    @qd.func
    def put(x: qd.Tensor, i: qd.i32, v: qd.i32):
        x[i] = v

    @qd.kernel
    def k(x: qd.Tensor):
        put(x, 1, 9)

    for backend in BACKENDS:
        t = qd.tensor(qd.i32, 3, backend=backend)
        k(t)
        np.testing.assert_array_equal(t.to_numpy(), [0, 9, 0])


def test_dataclass_member_annotation():
    import dataclasses

    @dataclasses.dataclass
    class State:
        a: qd.Tensor

    @qd.kernel
    def k(s: qd.template()):
        for i in range(3):
            s.a[i] = i + 1

    state = State(a=qd.tensor(qd.i32, 3, backend=qd.Backend.FIELD))
    k(state)
    np.testing.assert_array_equal(state.a.to_numpy(), [1, 2, 3])


def test_wrapper_captured_by_kernel():
    """A field wrapper read as a global / closure value, or given to a qd.template() parameter
    (an ndarray, wrapped or not, reaches a kernel only as an argument)."""
    t = qd.tensor(qd.i32, 4, backend=qd.Backend.FIELD)

    @qd.kernel
    def from_closure():
        for i in range(4):
            t[i] = t.shape[0] - i

    from_closure()
    np.testing.assert_array_equal(t.to_numpy(), [4, 3, 2, 1])

    @qd.kernel
    def as_template(x: qd.template()):
        for i in range(4):
            x[i] += 10

    as_template(t)
    np.testing.assert_array_equal(t.to_numpy(), [14, 13, 12, 11])


@pytest.mark.parametrize("backend", BACKENDS)
def test_scalar_tensor_0d(backend):
    @qd.kernel
    def bump(x: qd.Tensor):
        x[None] += 5

    t = qd.tensor(qd.i32, (), backend=backend)
    t[None] = 7
    bump(t)
    assert t[None] == 12


@pytest.mark.parametrize("backend", BACKENDS)
def test_kernel_reaches_grad(backend):
    """``x.grad`` in a kernel: the gradient field (a template), or the gradient ndarray launched
    beside the ndarray."""
    a = qd.tensor(qd.f32, (4,), backend=backend, needs_grad=True)

    @qd.kernel
    def write_grad(x: qd.Tensor):
        for i in range(4):
            x.grad[i] = i * 100.0
            x[i] = x.grad[i] + 1

    write_grad(a)
    write_grad(a)
    np.testing.assert_array_equal(a.grad.to_numpy(), [0, 100, 200, 300])
    np.testing.assert_array_equal(a.to_numpy(), [1, 101, 201, 301])


def test_ndarray_grad_variants():
    rng = np.random.default_rng()

    @qd.kernel
    def axpy_into_grad(x: qd.types.ndarray(), s: qd.f32):
        for I in qd.grouped(x):
            x.grad[I] = x[I] * s

    for layout in (None, (1, 0)):
        t = qd.tensor(qd.f32, (3, 5), layout=layout, needs_grad=True)
        data = rng.standard_normal((3, 5)).astype(np.float32)
        t.from_numpy(data)
        axpy_into_grad(t, 2.0)
        np.testing.assert_allclose(t.grad.to_numpy(), data * 2, rtol=1e-6)

    @qd.kernel
    def vec_grad(x: qd.Tensor):
        for i in range(x.shape[0]):
            x.grad[i] = [i, 2 * i, 3]

    v = qd.Vector.tensor(3, qd.f32, 4, needs_grad=True)
    vec_grad(v)
    np.testing.assert_array_equal(v.grad.to_numpy(), [[i, 2 * i, 3] for i in range(4)])

    @qd.kernel
    def fill(x: qd.types.ndarray(dtype=qd.f32, ndim=1), value: qd.f32):
        for i in x:
            x[i] = value

    plain, with_grad = qd.ndarray(qd.f32, 4), qd.ndarray(qd.f32, 4, needs_grad=True)
    for value in (1.0, 2.0):  # calls alternating with and without a gradient
        fill(plain, value)
        fill(with_grad, value + 10)
    np.testing.assert_array_equal(plain.to_numpy(), [2] * 4)
    np.testing.assert_array_equal(with_grad.to_numpy(), [12] * 4)
    with pytest.raises(qd.QuadrantsSyntaxError, match="has no gradient: create it with needs_grad"):
        vec_grad(qd.Vector.tensor(3, qd.f32, 4))


def test_wrong_element_type_through_tensor():
    @qd.kernel
    def k(x: qd.Tensor):
        x[0] = 1

    with pytest.raises(qd.QuadrantsCompilationError):
        k(3)  # a Python int is a compile-time value: it cannot be indexed


@pytest.mark.parametrize("backend", BACKENDS)
def test_dataclass_parameter_member(backend):
    """qd.Tensor members of a dataclass kernel parameter: ndarrays are flattened into ndarray
    arguments, fields are compile-time members."""

    @qd.kernel
    def k(s: TwoTensors):
        for i in range(s.a.shape[0]):
            s.a[i] = s.b[i] * 2

    a, b = qd.tensor(qd.f32, 5, backend=backend), qd.tensor(qd.f32, 5, backend=backend)
    data = np.random.default_rng().standard_normal(5).astype(np.float32)
    b.from_numpy(data)
    k(TwoTensors(a=a, b=b))
    np.testing.assert_array_equal(a.to_numpy(), data * 2)
