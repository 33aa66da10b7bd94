"""qd.BufferView: a window [offset, offset + size) of a 1-D ndarray, passed to kernels.

Spec (the reference's buffer_view guide and quadrants 1.3.3): ``data[a:b]`` (step 1; negative and
open bounds as in Python) or ``qd.BufferView(data, offset, size)``; ``view.subview(o, s)`` and
``view[a:b]`` narrow a view (relative offsets); ``shape == (size,)``. Kernel and func
parameters annotated ``qd.BufferView`` or ``qd.BufferView[dtype]`` take one: ``v[i]`` is
``data[offset + i]``, ``v.size``, ``v.shape``, ``v.offset``, ``v.subview(o, s)``; windows of any
position share one compiled kernel. With ``debug=True`` out-of-window indices raise
QuadrantsAssertionError ("BufferView Out Of Range: ... got index 16 (offset=0, size=16)").
Host-side errors: see ``test_host_errors``.
"""

import numpy as np
import pytest

import quadrants as qd
from quadrants import BufferView


@pytest.fixture(autouse=True)
def init(arch):
    qd.init(arch=getattr(qd, arch))
    yield
    qd.reset()


@qd.kernel
def scale(v: BufferView[qd.f32], factor: qd.f32):
    for i in range(v.size):
        v[i] = v[i] * factor


@qd.kernel
def add_index(v: BufferView):
    for i in range(v.shape[0]):
        v[i] += i


def _data(n=64, dtype=np.float32):
    values = np.random.default_rng().standard_normal(n).astype(dtype)
    data = qd.ndarray(qd.f32 if dtype == np.float32 else qd.f64, (n,))
    data.from_numpy(values)
    return data, values


def test_windows_share_one_kernel():
    data, expected = _data()
    rng = np.random.default_rng()
    for _ in range(6):
        start = int(rng.integers(0, 60))
        stop = int(rng.integers(start, 65))
        factor = float(rng.uniform(-2, 2))
        scale(data[start:stop], factor)
        expected[start:stop] *= np.float32(factor)
        np.testing.assert_allclose(data.to_numpy(), expected, rtol=1e-6)
    assert len(scale._compiled) == 1


def test_fresh_windows_launch_through_the_fast_path():
    """Every launch value of a view is read from it by the C dispatcher (array, offset, size):
    views made anew at each call, of any window, hit one registered launch."""
    data, expected = _data(200)
    rng = np.random.default_rng()
    for k in range(8):
        start = int(rng.integers(0, 190))
        stop = int(rng.integers(start, 201))
        view = data[start:stop] if k % 2 else BufferView(data, start, stop - start)
        scale(view, 1.5)
        expected[start:stop] *= np.float32(1.5)
        np.testing.assert_allclose(data.to_numpy(), expected, rtol=1e-6)
    assert scale._dispatch_size() == 1
    other, other_expected = _data(50)  # another array of the same kind: the same launch
    scale(other[3:40], -1.0)
    other_expected[3:40] *= -1.0
    np.testing.assert_allclose(other.to_numpy(), other_expected, rtol=1e-6)
    assert scale._dispatch_size() == 1


def test_any_dtype_annotation_and_forms():
    data, expected = _data(32, np.float64)
    for view, (start, stop) in [
        (data[:8], (0, 8)),
        (data[24:], (24, 32)),
        (data[-4:], (28, 32)),
        (BufferView(data, offset=10, size=5), (10, 15)),
        (data[4:20].subview(2, 6), (6, 12)),
        (data[4:20][1:3], (5, 7)),
        (qd.wrap(data)[3:9], (3, 9)),
    ]:
        assert (view.offset, view.size, view.shape) == (start, stop - start, (stop - start,))
        add_index(view)
        expected[start:stop] += np.arange(stop - start)
    np.testing.assert_allclose(data.to_numpy(), expected)
    assert len(add_index._compiled) == 1


def test_members_func_and_subview_in_kernel():
    data, expected = _data(40)

    @qd.func
    def put(v: BufferView[qd.f32], i: qd.i32, x: qd.f32):
        v[i] = x

    @qd.kernel
    def k(v: BufferView[qd.f32]) -> qd.i32:
        put(v, 0, 7.0)
        w = v.subview(2, 3)
        for i in range(w.size):
            w[i] = 100.0 + i
        return v.offset * 1000 + v.size * 10 + w.size

    assert k(data[5:15]) == 5 * 1000 + 10 * 10 + 3
    expected[5] = 7
    expected[7:10] = [100, 101, 102]
    np.testing.assert_array_equal(data.to_numpy(), expected)


def test_empty_window():
    data, expected = _data(8)
    scale(data[5:2], 3.0)
    np.testing.assert_array_equal(data.to_numpy(), expected)


def test_debug_bounds(arch):
    qd.init(arch=getattr(qd, arch), debug=True)

    @qd.func
    def writer(v: BufferView[qd.f32], idx: qd.i32):
        v[idx] = 99.0

    @qd.kernel
    def kernel(v: BufferView[qd.f32]):
        for i in range(v.size):
            if i == 0:
                writer(v, v.size)

    data = qd.ndarray(qd.f32, (32,))
    with pytest.raises(qd.QuadrantsAssertionError,
                       match=r"BufferView Out Of Range: got index 16 \(offset=0, size=16\)"):
        kernel(data[:16])

    @qd.kernel
    def bad_subview(v: BufferView[qd.f32]):
        w = v.subview(3, 5)
        w[0] = 1.0

    with pytest.raises(qd.QuadrantsAssertionError, match="BufferView subview Out Of Range"):
        bad_subview(data[0:6])
    scale(data[:16], 2.0)  # in range: no error


def test_host_errors():
    d = qd.ndarray(qd.f32, 16)
    with pytest.raises(TypeError, match=r"Cannot nest BufferView\(view, ...\); use view.subview"):
        BufferView(d[2:4], 0, 1)
    with pytest.raises(TypeError, match=r"does not support ndarrays with gradients"):
        BufferView(qd.ndarray(qd.f32, 4, needs_grad=True), 0, 1)
    with pytest.raises(TypeError, match=r"requires a 1D ndarray, got shape \(4, 4\)"):
        BufferView(qd.ndarray(qd.f32, (4, 4)), 0, 1)
    with pytest.raises(ValueError, match="out of range: offset=10, size=7, ndarray length=16"):
        BufferView(d, 10, 7)
    with pytest.raises(ValueError, match="out of range: offset=-1, size=2"):
        BufferView(d, -1, 2)
    with pytest.raises(TypeError, match=r"slice to BufferView requires a 1D array, got shape"):
        qd.ndarray(qd.f32, (4, 4))[1:2]
    with pytest.raises(ValueError, match="BufferView slice requires step=1, got step=2"):
        d[0:8:2]
    with pytest.raises(ValueError, match="subview out of range: offset=4, size=5, parent size=8"):
        d[0:8].subview(4, 5)
    with pytest.raises(TypeError, match="host-side indexing requires a slice, got int"):
        d[0:8][3]

    @qd.kernel
    def k(v: BufferView[qd.f32]):
        v[0] = 1

    with pytest.raises(TypeError, match="Expect element type f32 for argument v, but get i32"):
        k(qd.ndarray(qd.i32, 8)[0:2])
    with pytest.raises(qd.QuadrantsRuntimeTypeError,
                       match="Argument v expects a BufferView, got ScalarNdarray"):
        k(qd.ndarray(qd.f32, 8))


@qd.kernel
def axpy_rows(v: BufferView, a: qd.f32):
    for i in range(v.size):
        v[i] = v[i] * a + i


@qd.func
def bump_diagonal(v: BufferView, i):
    v[i][1, 1] += 1.0


@qd.kernel
def bump_matrix_window(v: BufferView[qd.types.matrix(2, 2, qd.f32)]):
    w = v.subview(1, 2)
    for i in range(w.size):
        bump_diagonal(w, i)


def test_vector_elements():
    rng = np.random.default_rng()
    host = rng.standard_normal((12, 3)).astype(np.float32)
    d = qd.Vector.ndarray(3, qd.f32, 12)
    d.from_numpy(host)
    view = d[3:9]
    assert (view.offset, view.size, view.shape) == (3, 6, (6,))
    axpy_rows(view, 2.0)
    expected = host.astype(np.float64)
    expected[3:9] = expected[3:9] * 2 + np.arange(6)[:, None]
    np.testing.assert_allclose(d.to_numpy(), expected, rtol=1e-6)
    np.testing.assert_allclose(view.to_numpy(), expected[3:9], rtol=1e-6)
    axpy_rows(qd.BufferView(d, 0, 2), 1.0)  # another window, the same kernel
    expected[0:2] += np.arange(2)[:, None]
    np.testing.assert_allclose(d.to_numpy(), expected, rtol=1e-6)


def test_matrix_elements_through_a_func():
    rng = np.random.default_rng()
    host = rng.standard_normal((6, 2, 2)).astype(np.float32)
    d = qd.Matrix.ndarray(2, 2, qd.f32, 6)
    d.from_numpy(host)
    bump_matrix_window(d[1:5])  # elements 2 and 3
    expected = host.copy()
    expected[2:4, 1, 1] += 1
    np.testing.assert_allclose(d.to_numpy(), expected, rtol=1e-6)


def test_vector_element_type_errors():
    d = qd.Vector.ndarray(3, qd.f32, 8)

    @qd.kernel
    def scalars(v: BufferView[qd.f32]):
        v[0] = 1

    @qd.kernel
    def vec3s(v: BufferView[qd.types.vector(3, qd.f32)]):
        v[0] = [1.0, 2.0, 3.0]

    with pytest.raises(TypeError, match="Expect element type f32 for argument v"):
        scalars(d[0:2])
    with pytest.raises(ValueError, match=r"elements of shape \(3,\)"):
        vec3s(qd.ndarray(qd.f32, 8)[0:2])
    with pytest.raises(ValueError, match=r"elements of shape \(3,\)"):
        vec3s(qd.Vector.ndarray(2, qd.f32, 8)[0:2])
    vec3s(d[2:4])
    np.testing.assert_array_equal(d.to_numpy()[2], [1, 2, 3])
