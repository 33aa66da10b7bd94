"""Arrays of other libraries as kernel arguments (spec 0.13): objects describing host memory
through ``__array_interface__`` on every arch; torch tensors (host and CUDA) and CuPy arrays
where those libraries are installed. Kernels write them in place; CUDA tensors on CUDA are
launched without a copy."""

import numpy as np
import pytest

import quadrants as qd


@pytest.fixture(autouse=True)
def init(arch):
    qd.init(arch=getattr(qd, arch))
    yield
    qd.reset()


@qd.kernel
def axpy(a: qd.f32, x: qd.types.ndarray(qd.f32, 1), y: qd.types.ndarray(qd.f32, 1)):
    for i in range(x.shape[0]):
        y[i] = a * x[i] + y[i]


@qd.kernel
def fill_rows(out: qd.types.ndarray(qd.i32, 2)):
    for i, j in qd.ndrange(out.shape[0], out.shape[1]):
        out[i, j] = i * 1000 + j


class HostArray:
    """A minimal foreign array: host memory described by ``__array_interface__``."""

    def __init__(self, array):
        self.array = array
        self.__array_interface__ = array.__array_interface__


class DeviceArrayLike:
    """An object claiming CUDA memory (``__cuda_array_interface__``) at a bogus address."""

    __cuda_array_interface__ = {"shape": (4,), "typestr": "<f4", "data": (16, False),
                                "version": 3, "strides": None}


def axpy_expected(a, x, y):
    return (np.float64(np.float32(a)) * x.astype(np.float64) + y.astype(np.float64))


def test_array_interface_written_in_place():
    rng = np.random.default_rng()
    n = int(rng.integers(1, 5000))
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    want = axpy_expected(1.5, x, y)
    hy = HostArray(y)
    axpy(1.5, HostArray(x), hy)
    np.testing.assert_allclose(y, want, rtol=1e-6, atol=1e-6)


def test_array_interface_errors():
    with pytest.raises(ValueError, match="dtype"):
        axpy(1.0, HostArray(np.zeros(4, np.float64)), HostArray(np.zeros(4, np.float32)))
    with pytest.raises(ValueError, match="ndim=1"):
        axpy(1.0, HostArray(np.zeros((2, 2), np.float32)), HostArray(np.zeros(4, np.float32)))
    with pytest.raises(ValueError, match="Non contiguous"):
        axpy(1.0, HostArray(np.zeros(8, np.float32)[::2]), HostArray(np.zeros(4, np.float32)))


def test_device_memory_on_cpu_is_an_error(arch):
    if arch != "cpu":
        pytest.skip("the CPU's error")
    with pytest.raises(ValueError, match="CUDA device memory"):
        axpy(1.0, DeviceArrayLike(), np.zeros(4, np.float32))


def test_torch_host_tensors():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng()
    n = int(rng.integers(1, 5000))
    x = torch.from_numpy(rng.standard_normal(n).astype(np.float32))
    y = torch.from_numpy(rng.standard_normal(n).astype(np.float32))
    want = axpy_expected(-0.5, x.numpy(), y.numpy())
    axpy(-0.5, x, y)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-6, atol=1e-6)
    out = torch.zeros((3, 7), dtype=torch.int32)
    fill_rows(out)
    i, j = np.indices((3, 7))
    np.testing.assert_array_equal(out.numpy(), i * 1000 + j)
    with pytest.raises(ValueError, match="Non contiguous"):
        fill_rows(torch.zeros((7, 3), dtype=torch.int32).t())


def test_torch_cuda_tensors(arch):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    rng = np.random.default_rng()
    n = int(rng.integers(1, 1 << 20))
    xs = rng.standard_normal(n).astype(np.float32)
    ys = rng.standard_normal(n).astype(np.float32)
    x = torch.from_numpy(xs).cuda()
    y = torch.from_numpy(ys).cuda()
    address = y.data_ptr()
    axpy(2.0, x, y)  # CUDA: the tensor's memory itself; CPU: a host copy written back
    qd.sync()
    assert y.data_ptr() == address
    np.testing.assert_allclose(y.cpu().numpy(), axpy_expected(2.0, xs, ys), rtol=1e-6, atol=1e-6)
    out = torch.zeros((5, 9), dtype=torch.int32, device="cuda")
    fill_rows(out)
    qd.sync()
    i, j = np.indices((5, 9))
    np.testing.assert_array_equal(out.cpu().numpy(), i * 1000 + j)
    with pytest.raises(ValueError, match="dtype"):
        axpy(1.0, torch.zeros(4, dtype=torch.float64, device="cuda"), y)


def test_empty_device_tensor_beside_host_arrays(arch):
    """An empty CUDA tensor (data pointer 0) beside NumPy arrays in one launch: the host arrays
    are the ones copied to the device and back, whatever the device pointers are."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")

    @qd.kernel
    def k(e: qd.types.ndarray(qd.f32, 1), x: qd.types.ndarray(qd.f32, 1),
          y: qd.types.ndarray(qd.f32, 1)):
        for i in range(x.shape[0]):
            y[i] = x[i] * 2.0 + e.shape[0]

    rng = np.random.default_rng()
    x = rng.standard_normal(33).astype(np.float32)
    y = np.zeros(33, np.float32)
    empty = torch.empty(0, dtype=torch.float32, device="cuda")
    for _ in range(2):  # the Python path, then the fast path
        k(empty, x, y)
        np.testing.assert_array_equal(y, x * 2)


def test_cupy_arrays(arch):
    if arch != "cuda":
        pytest.skip("CuPy arrays live in CUDA memory")
    cp = pytest.importorskip("cupy")
    rng = np.random.default_rng()
    n = int(rng.integers(1, 1 << 20))
    xs = rng.standard_normal(n).astype(np.float32)
    ys = rng.standard_normal(n).astype(np.float32)
    x, y = cp.asarray(xs), cp.asarray(ys)
    axpy(0.25, x, y)
    qd.sync()
    np.testing.assert_allclose(cp.asnumpy(y), axpy_expected(0.25, xs, ys), rtol=1e-6, atol=1e-6)


def test_to_and_from_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng()
    data = rng.standard_normal((4, 6)).astype(np.float32)
    a = qd.ndarray(qd.f32, (4, 6))
    a.from_torch(torch.from_numpy(data))
    t = a.to_torch()
    assert isinstance(t, torch.Tensor) and tuple(t.shape) == (4, 6)
    np.testing.assert_array_equal(t.numpy(), data)
    f = qd.field(qd.f32, shape=(4, 6))
    f.from_torch(torch.from_numpy(data * 2))
    np.testing.assert_array_equal(f.to_torch().numpy(), data * 2)
