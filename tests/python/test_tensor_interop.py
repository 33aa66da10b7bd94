"""Zero-copy interop: ``to_numpy(copy=...)``, ``to_torch(copy=...)``, ``to_dlpack()``,
``__dlpack__`` / ``__dlpack_device__`` of fields, ndarrays and their ``qd.Tensor`` wrappers.

Spec (the reference's interop guide and quadrants 1.3.3, plus the DLPack protocol):
- ``copy=True`` (default) is an independent copy; ``copy=False`` a view sharing the memory with
  kernels, or ValueError; ``copy=None`` a view when possible, else a copy.
- ``to_numpy`` views exist on the CPU only ("Zero-copy numpy requires a CPU backend (numpy arrays
  cannot reference GPU memory)"); a dtype conversion cannot be a view ("copy=False is
  incompatible with dtype conversion ...").
- ``to_torch(copy=False)`` aliases i32, i64, f32, f64 and u1 data of every field and ndarray but
  a 0-d field ("Zero-copy not available for arch=..., dtype=..." otherwise), on the device where
  the memory is.
- DLPack exports describe the canonical axes (permuted strides for a ``layout=``); the
  capsule is "dltensor" (or "dltensor_versioned" with ``versioned=True``); the device is
  (1, 0) on the CPU, (2, ordinal) on CUDA. Vector/matrix fields export on the CPU (their element
  fields share one block of memory; strided, element axes last), not on CUDA.
Tests that need torch skip without it; CUDA cases run with ``--arch cuda`` on a GPU machine.
"""

import gc

import numpy as np
import pytest

import quadrants as qd

BACKENDS = [qd.Backend.FIELD, qd.Backend.NDARRAY]
LAYOUTS = [None, (1, 0)]


@pytest.fixture(autouse=True)
def init(arch):
    qd.init(arch=getattr(qd, arch))
    yield
    qd.reset()


def _torch():
    return pytest.importorskip("torch")


def _filled(backend, layout, dtype=qd.f32, shape=(5, 7)):
    t = qd.tensor(dtype, shape, backend=backend, layout=layout)
    data = np.random.default_rng().standard_normal(shape).astype(t.to_numpy().dtype)
    t.from_numpy(data)
    return t, data


@qd.kernel
def scale(x: qd.Tensor, s: qd.f32):
    for i, j in x:
        x[i, j] = x[i, j] * s


@pytest.mark.cpu_only  # NumPy cannot view device memory
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_numpy_view_aliases_kernel_memory(backend, layout):
    t, data = _filled(backend, layout)
    view = t.to_numpy(copy=False)
    assert view.shape == (5, 7) and view.flags.writeable
    np.testing.assert_array_equal(view, data)
    scale(t, 2.0)  # a kernel write is seen through the view
    np.testing.assert_array_equal(view, data * 2)
    view[4, 6] = 123.0  # a write through the view is seen by kernels and Python access
    scale(t, 1.0)
    assert t[4, 6] == 123.0
    assert np.shares_memory(t.to_numpy(copy=None), view)
    copied = t.to_numpy()
    copied[0, 0] += 1
    assert t[0, 0] != copied[0, 0]
    with pytest.raises(ValueError, match="copy=False is incompatible with dtype conversion"):
        t.to_numpy(dtype=np.float64, copy=False)
    converted = t.to_numpy(dtype=np.float64, copy=None)
    assert converted.dtype == np.float64 and not np.shares_memory(converted, view)


@pytest.mark.parametrize("backend", BACKENDS)
def test_numpy_view_on_cuda_is_refused(backend, arch):
    if arch == "cpu":
        pytest.skip("CUDA only")
    t, data = _filled(backend, None)
    with pytest.raises(ValueError, match="Zero-copy numpy requires a CPU backend"):
        t.to_numpy(copy=False)
    np.testing.assert_array_equal(t.to_numpy(copy=None), data)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_dlpack_capsules_and_device(backend, layout, arch):
    t, _ = _filled(backend, layout)
    impl = t._unwrap()
    if arch == "vulkan":
        assert impl.__dlpack_device__() == (7, 0) == t.__dlpack_device__()
        with pytest.raises(BufferError, match="Vulkan memory cannot be exported"):
            t.to_dlpack()
        return
    expected_device = (1, 0) if arch == "cpu" else (2, qd._core.cuda_device_info()["ordinal"])
    assert impl.__dlpack_device__() == expected_device == t.__dlpack_device__()
    assert "dltensor" in repr(t.to_dlpack()) and "versioned" not in repr(t.to_dlpack())
    assert "dltensor_versioned" in repr(t.to_dlpack(versioned=True))
    assert "dltensor_versioned" in repr(impl.__dlpack__(max_version=(1, 0)))
    for _ in range(3):  # capsules never consumed are released
        impl.to_dlpack()
        impl.to_dlpack(versioned=True)
    gc.collect()


@pytest.mark.cpu_only  # np.from_dlpack takes host memory only
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_numpy_from_dlpack(backend, layout):
    t, data = _filled(backend, layout)
    for source in (t, t._unwrap()):
        array = np.from_dlpack(source)
        np.testing.assert_array_equal(array, data)
        assert np.shares_memory(array, t.to_numpy(copy=False))
    if layout is not None:  # canonical shape, permuted strides
        array = np.from_dlpack(t)
        assert array.strides == (4, 4 * 5)


@pytest.mark.cpu_only
def test_export_outlives_the_ndarray():
    t, data = _filled(qd.Backend.NDARRAY, None)
    capsule_owner = t._unwrap()
    array = np.from_dlpack(capsule_owner)
    del t, capsule_owner
    gc.collect()
    np.testing.assert_array_equal(array, data)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_torch_view_aliases_kernel_memory(backend, layout, arch):
    torch = _torch()
    if arch == "cuda" and not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    t, data = _filled(backend, layout)
    if arch == "vulkan":  # no torch device holds Vulkan memory: only copies
        with pytest.raises(ValueError, match="Zero-copy not available"):
            t.to_torch(copy=False)
        np.testing.assert_array_equal(t.to_torch(copy=None).numpy(), data)
        return
    view = t.to_torch(copy=False)
    assert tuple(view.shape) == (5, 7) and view.device.type == ("cpu" if arch == "cpu" else "cuda")
    np.testing.assert_array_equal(view.cpu().numpy(), data)
    view.mul_(3.0)  # a torch write is seen by kernels
    if arch == "cuda":
        torch.cuda.synchronize()
    np.testing.assert_allclose(t.to_numpy(), data * 3, rtol=1e-6)
    scale(t, 2.0)  # a kernel write is seen through the view
    again = t.to_torch(copy=False)  # waits for the kernel
    np.testing.assert_allclose(again.cpu().numpy(), data * 6, rtol=1e-6)
    assert again.data_ptr() == view.data_ptr()
    if layout is not None:
        assert view.stride() == (1, 5)
    copied = t.to_torch()
    assert copied.data_ptr() != view.data_ptr()


def test_torch_view_refusals(arch):
    torch = _torch()
    name = "x64" if arch == "cpu" else "cuda"
    half = qd.tensor(qd.f16, 4)
    with pytest.raises(ValueError, match=f"Zero-copy not available for arch={name}, dtype=f16"):
        half.to_torch(copy=False)
    assert half.to_torch(copy=None).dtype == torch.float16
    scalar = qd.tensor(qd.f32, (), backend=qd.Backend.FIELD)
    with pytest.raises(ValueError, match="Zero-copy not available"):
        scalar.to_torch(copy=False)
    if arch == "cpu":
        with pytest.raises(ValueError, match="copy=False is incompatible with device transfer"):
            qd.tensor(qd.f32, 4).to_torch(device="meta", copy=False)


@pytest.mark.parametrize("backend", BACKENDS)
def test_torch_round_trip(backend):
    torch = _torch()
    t, data = _filled(backend, (1, 0))
    out = t.to_torch()
    assert tuple(out.shape) == (5, 7)
    u = qd.tensor(qd.f32, (5, 7), backend=backend)
    u.from_torch(out)
    np.testing.assert_array_equal(u.to_numpy(), data)
    v = qd.Vector.tensor(3, qd.f32, 4, backend=backend)
    v.from_torch(torch.arange(12, dtype=torch.float32).reshape(4, 3))
    np.testing.assert_array_equal(v.to_torch().numpy(), np.arange(12).reshape(4, 3))


def test_vector_ndarray_exports_element_axes(arch):
    v = qd.Vector.tensor(3, qd.i32, 4)
    v.from_numpy(np.arange(12, dtype=np.int32).reshape(4, 3))
    assert v.__dlpack_device__()[0] == {"cpu": 1, "cuda": 2, "vulkan": 7}[arch]
    if arch == "cpu":
        np.testing.assert_array_equal(np.from_dlpack(v), np.arange(12).reshape(4, 3))


def test_vector_field_exports_element_axes(arch):
    """A vector/matrix field's element fields share one block of memory: on the CPU
    to_numpy(copy=False), DLPack and to_torch(copy=False) alias it with the element axes last
    (strided), as the reference's one-SNode layout does; on CUDA (one device buffer per element)
    they raise ValueError and the copies work."""
    rng = np.random.default_rng()
    v = qd.Vector.tensor(3, qd.f32, (4, 5), backend=qd.Backend.FIELD)
    m = qd.Matrix.field(2, 3, qd.f32, shape=6)
    values = rng.standard_normal((4, 5, 3)).astype(np.float32)
    v.from_numpy(values)
    if arch != "cpu":
        with pytest.raises(ValueError, match="Zero-copy not available"):
            v.to_numpy(copy=False)
        assert v.to_numpy(copy=None).shape == (4, 5, 3)
        return
    view = v.to_numpy(copy=False)
    np.testing.assert_array_equal(view, values)
    view[1, 2] = [7, 8, 9]  # writes through
    np.testing.assert_array_equal(v.to_numpy()[1, 2], [7, 8, 9])
    np.testing.assert_array_equal(np.from_dlpack(v), v.to_numpy())
    mview = m.to_numpy(copy=False)
    assert mview.shape == (6, 2, 3)
    mview[:] = rng.standard_normal((6, 2, 3))

    @qd.kernel
    def trace_sum() -> qd.f32:
        s = 0.0
        for i in m:
            s += m[i][0, 0] + m[i][1, 1]
        return s

    assert trace_sum() == pytest.approx(float((mview[:, 0, 0] + mview[:, 1, 1]).sum()), rel=1e-5)
    torch = pytest.importorskip("torch")
    t = v.to_torch(copy=False)
    assert t.shape == (4, 5, 3)
    t.zero_()
    assert not v.to_numpy().any()
    assert isinstance(m.to_torch(copy=None), torch.Tensor)


def test_permuted_vector_field_copies(arch):
    """A vector field with a permuted layout (order="ji") has no view with the element axes
    last: copy=False raises ValueError, copies work; a struct field's vector member aliases its
    memory like any vector field."""
    v = qd.Vector.field(2, qd.f32, shape=(3, 4), order="ji")
    values = np.random.default_rng().standard_normal((3, 4, 2)).astype(np.float32)
    v.from_numpy(values)
    with pytest.raises(ValueError, match="Zero-copy not available"):
        v.to_numpy(copy=False)
    np.testing.assert_array_equal(v.to_numpy(), values)
    s = qd.Struct.field({"a": qd.types.vector(2, qd.f32), "b": qd.f32}, shape=4)
    if arch == "cpu":
        s.a.to_numpy(copy=False)[2] = [5, 6]
    else:
        s.a.from_numpy(np.array([[0, 0], [0, 0], [5, 6], [0, 0]], dtype=np.float32))
    np.testing.assert_array_equal(s.a.to_numpy()[2], [5, 6])


def test_device_buffer_export_checks(arch):
    """DeviceBuffer.to_dlpack (CUDA) describes only memory inside the buffer."""
    if arch != "cuda":
        pytest.skip("CUDA only")
    buf = qd._core.DeviceBuffer((4, 3), 4)
    assert "dltensor" in repr(buf.to_dlpack(2, 32, (4, 3), (3, 1), False))
    assert "dltensor" in repr(buf.to_dlpack(2, 32, (3, 4), (1, 3), False))  # transposed
    with pytest.raises(ValueError, match="reach outside the buffer"):
        buf.to_dlpack(2, 32, (4, 4), (4, 1), False)
    with pytest.raises(ValueError, match="bad dtype"):
        buf.to_dlpack(2, 64, (4, 3), (3, 1), False)  # 8-byte elements in a 4-byte buffer
    with pytest.raises(ValueError, match="must have 2 items"):
        buf.to_dlpack(2, 32, (4, 3), (3,), False)
    del buf
    gc.collect()
