"""Physical layouts: ``qd.tensor(dtype, shape, layout=...)``.

Spec (the reference's tensor guide and quadrants 1.3.3): ``layout`` is a permutation of
``range(len(shape))`` giving the canonical axis stored at each physical nesting level, outermost
first. The memory holds the axes in that order (a field: ``order=``, ``(1, 0)`` is ``"ji"``; an
ndarray: an allocation of shape ``tuple(shape[a] for a in layout)``). Everything a program sees
is canonical: ``shape``, Python-scope indices, ``to_numpy``/``from_numpy``, and in kernels
``x[i, j]``, ``x.shape[k]``, ``for i, j in x`` and ``qd.grouped(x)``. ``layout=None`` and the
identity are the same (``t.layout is None``). Gradients share the primal's layout.
"""

import itertools

import numpy as np
import pytest

import quadrants as qd

BACKENDS = [qd.Backend.FIELD, qd.Backend.NDARRAY]
LAYOUTS_3D = list(itertools.permutations(range(3)))


@pytest.fixture(autouse=True)
def init(arch):
    qd.init(arch=getattr(qd, arch))
    yield
    qd.reset()


def _physical(t):
    """The memory of tensor `t` (CPU: the arrays the kernels use), in physical order."""
    impl = t._unwrap()
    return impl._array if isinstance(impl, qd.Field) else impl._host


def _expected(shape):
    """A value per canonical index: i * 10000 + j * 100 + k."""
    grids = np.indices(shape)
    weights = [10 ** (2 * (len(shape) - 1 - d)) for d in range(len(shape))]
    return sum(w * g for w, g in zip(weights, grids)).astype(np.int32)


@qd.kernel
def write_struct_for(x: qd.Tensor):
    for i, j, k in x:
        x[i, j, k] = i * 10000 + j * 100 + k


@qd.kernel
def write_grouped(x: qd.Tensor):
    for I in qd.grouped(x):
        x[I] = I[0] * 10000 + I[1] * 100 + I[2]


@qd.kernel
def write_ranges(x: qd.Tensor):
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            for k in range(x.shape[2]):
                x[i, j, k] = i * 10000 + j * 100 + k


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", LAYOUTS_3D)
@pytest.mark.parametrize("writer", [write_struct_for, write_grouped, write_ranges])
def test_kernel_indices_are_canonical(backend, layout, writer, arch):
    shape = (3, 4, 5)
    t = qd.tensor(qd.i32, shape, backend=backend, layout=layout)
    assert t.shape == shape and t._unwrap().shape == shape
    assert t.layout == (None if layout == (0, 1, 2) else layout)
    writer(t)
    expected = _expected(shape)
    np.testing.assert_array_equal(t.to_numpy(), expected)
    for index in [(0, 0, 0), (2, 3, 4), (1, 2, 3), (2, 0, 1)]:
        assert t[index] == expected[index]
    if arch == "cpu":
        physical = _physical(t)
        assert physical.shape == tuple(shape[a] for a in layout)
        np.testing.assert_array_equal(physical, expected.transpose(layout))


@pytest.mark.parametrize("backend", BACKENDS)
def test_host_data_reaches_kernel(backend):
    @qd.kernel
    def scaled_copy(src: qd.Tensor, dst: qd.Tensor, s: qd.f32):
        for i, j in src:
            dst[i, j] = src[i, j] * s

    shape = (6, 9)
    data = np.random.default_rng().standard_normal(shape).astype(np.float32)
    src = qd.tensor(qd.f32, shape, backend=backend, layout=(1, 0))
    dst = qd.tensor(qd.f32, shape, backend=backend)
    src.from_numpy(data)
    scaled_copy(src, dst, 3.0)
    np.testing.assert_allclose(dst.to_numpy(), data * 3, rtol=1e-6)
    src[5, 8] = 2.5
    data[5, 8] = 2.5
    np.testing.assert_array_equal(src.to_numpy(), data)
    np.testing.assert_array_equal(src.to_numpy(dtype=np.float64), data.astype(np.float64))


def test_kernel_shape_is_canonical():
    @qd.kernel
    def extents(x: qd.Tensor) -> qd.i32:
        return x.shape[0] * 10000 + x.shape[1] * 100 + x.shape[2]

    for backend in BACKENDS:
        for layout in LAYOUTS_3D:
            assert extents(qd.tensor(qd.i32, (3, 4, 5), backend=backend, layout=layout)) == 30405


def test_ndarray_layouts_share_a_kernel_safely():
    """Calls alternating between layouts (and the identity) of the same dtype and rank each get
    code for their own layout, also on the launch fast path."""

    @qd.kernel
    def fill(x: qd.types.ndarray(dtype=qd.i32, ndim=2)):
        for i, j in x:
            x[i, j] = i * 100 + j

    expected = _expected((4, 7))
    for _ in range(3):
        for layout in (None, (1, 0)):
            t = qd.tensor(qd.i32, (4, 7), layout=layout)
            fill(t)
            np.testing.assert_array_equal(t.to_numpy(), expected)
            fill(t._unwrap())
            np.testing.assert_array_equal(t.to_numpy(), expected)
    assert len(fill._compiled) == 2
    assert type(qd.tensor(qd.i32, (4, 7), layout=(1, 0))._unwrap()) is not qd.ScalarNdarray
    assert isinstance(qd.tensor(qd.i32, (4, 7), layout=(1, 0))._unwrap(), qd.ScalarNdarray)


def test_func_and_dataclass_member():
    import dataclasses

    @qd.func
    def put(x, i, j, v):
        x[i, j] = v

    @qd.kernel
    def k(x: qd.Tensor):
        put(x, 1, 2, 7)

    t = qd.tensor(qd.i32, (2, 3), layout=(1, 0))
    k(t)
    assert t[1, 2] == 7 and t.to_numpy().sum() == 7

    @dataclasses.dataclass
    class Holder:
        x: qd.types.ndarray(dtype=qd.i32, ndim=2)

    @qd.kernel
    def via_member(h: Holder):
        h.x[0, 2] = 5

    globals()["Holder"] = Holder
    try:
        via_member(Holder(x=t._unwrap()))
    finally:
        del globals()["Holder"]
    assert t[0, 2] == 5 and t.to_numpy().sum() == 12


@pytest.mark.parametrize("backend", BACKENDS)
def test_bounds_checks_use_canonical_extents(backend, arch):
    qd.init(arch=getattr(qd, arch), debug=True)

    @qd.kernel
    def corner(x: qd.Tensor):
        x[2, 4] = 1

    t = qd.tensor(qd.i32, (3, 5), backend=backend, layout=(1, 0))
    corner(t)  # in bounds canonically, out of bounds if read physically
    assert t[2, 4] == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_grad_shares_layout(backend):
    t = qd.tensor(qd.f32, (3, 4), backend=backend, layout=(1, 0), needs_grad=True)
    assert t.grad.layout == (1, 0) and t.grad.shape == (3, 4)
    data = np.random.default_rng().standard_normal((3, 4)).astype(np.float32)
    t.grad.from_numpy(data)
    np.testing.assert_array_equal(t.grad.to_numpy(), data)


def test_host_index_errors():
    t = qd.tensor(qd.f32, (3, 4), layout=(1, 0))
    with pytest.raises(TypeError, match="requires a full tuple key; got int for rank 2"):
        t[1]
    with pytest.raises(TypeError, match="key has 3 entries but rank is 2"):
        t[1, 2, 3] = 0
    with pytest.raises(IndexError):
        t[3, 0]
    f = qd.tensor(qd.f32, (3, 4), layout=(1, 0), backend=qd.Backend.FIELD)
    with pytest.raises(AssertionError):
        f[0, 4]


def test_offline_cache_keeps_layouts_apart(arch):
    """Kernels loaded from the offline cache after a re-init still index each layout right (the
    layout is part of the cache key)."""

    @qd.kernel
    def fill(x: qd.types.ndarray(dtype=qd.i32, ndim=2)):
        for i, j in x:
            x[i, j] = i * 100 + j

    expected = _expected((4, 7))
    for _ in range(2):  # the second round loads both specialisations from the cache
        for layout in ((1, 0), None):
            t = qd.tensor(qd.i32, (4, 7), layout=layout)
            fill(t)
            np.testing.assert_array_equal(t.to_numpy(), expected)
        qd.reset()
        qd.init(arch=getattr(qd, arch), offline_cache=True)


def test_permuted_ndarrays_take_the_fast_path_by_layout(slow_calls):
    """Repeat calls with permuted ndarrays launch from C; an ndarray of the same class, dtype and
    physical shape but another axis order matches no entry made for the first (3-D: several
    permutations share a class)."""

    @qd.kernel
    def fill(x: qd.types.ndarray(dtype=qd.i32, ndim=3)):
        for i, j, k in x:
            x[i, j, k] = i * 10000 + j * 100 + k

    expected = _expected((3, 3, 3))
    a = qd.tensor(qd.i32, (3, 3, 3), layout=(1, 0, 2))
    b = qd.tensor(qd.i32, (3, 3, 3), layout=(0, 2, 1))
    for _ in range(3):
        for t in (a, b):
            fill(t)
            np.testing.assert_array_equal(t.to_numpy(), expected)
    assert len(slow_calls) == 2 and len(fill._compiled) == 2
