"""Kernels on the Vulkan backend end to end (Mesa's lavapipe on a machine without a GPU), against
NumPy on fresh random inputs, every element checked."""

import warnings

import numpy as np
import pytest

import quadrants as qd
from quadrants import _core

pytestmark = pytest.mark.skipif(
    not getattr(_core, "vulkan_available", lambda: False)(), reason="no Vulkan device"
)


@pytest.fixture(autouse=True)
def vulkan():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        qd.init(arch=qd.vulkan, offline_cache=False)
    assert qd.lang.impl.current_cfg().arch is qd.vulkan
    yield
    qd.reset()


@pytest.fixture
def rng():
    return np.random.default_rng()


def test_saxpy_on_ndarrays(rng):
    @qd.kernel
    def saxpy(a: qd.f32, x: qd.types.ndarray(qd.f32, 1), y: qd.types.ndarray(qd.f32, 1)):
        for i in range(x.shape[0]):
            y[i] = a * x[i] + y[i]

    n = 10007
    x_np = rng.standard_normal(n).astype(np.float32)
    y_np = rng.standard_normal(n).astype(np.float32)
    x = qd.ndarray(qd.f32, n)
    y = qd.ndarray(qd.f32, n)
    x.from_numpy(x_np)
    y.from_numpy(y_np)
    saxpy(2.5, x, y)
    np.testing.assert_allclose(y.to_numpy(), 2.5 * x_np + y_np, rtol=1e-6, atol=1e-6)


def test_numpy_arrays_are_copied_in_and_back(rng):
    @qd.kernel
    def scale(x: qd.types.ndarray(qd.f32, 2), s: qd.f32):
        for i, j in x:
            x[i, j] = x[i, j] * s + i - j

    x = rng.standard_normal((37, 53)).astype(np.float32)
    expect = x * 3.0 + np.arange(37)[:, None] - np.arange(53)[None, :]
    scale(x, 3.0)
    np.testing.assert_allclose(x, expect, rtol=1e-6, atol=1e-5)


def test_fields_and_kernel_returns(rng):
    f = qd.field(qd.i32, shape=(16, 24))
    g = qd.field(qd.f32, shape=100)

    @qd.kernel
    def fill(k: qd.i32):
        for i, j in f:
            f[i, j] = i * 100 + j * k

    @qd.kernel
    def total() -> qd.i32:
        s = 0
        for i, j in f:
            s += f[i, j]
        return s

    fill(7)
    ii, jj = np.meshgrid(np.arange(16), np.arange(24), indexing="ij")
    expect = ii * 100 + jj * 7
    np.testing.assert_array_equal(f.to_numpy(), expect)
    assert total() == int(expect.sum())
    g_np = rng.standard_normal(100).astype(np.float32)
    g.from_numpy(g_np)
    np.testing.assert_array_equal(g.to_numpy(), g_np)
    assert g[5] == g_np[5]


def test_control_flow_and_math(rng):
    @qd.kernel
    def k(x: qd.types.ndarray(qd.f32, 1), out: qd.types.ndarray(qd.f32, 1), n: qd.i32):
        for i in range(n):
            v = x[i]
            acc = 0.0
            j = 0
            while j < 10:
                if j % 3 == 0:
                    j += 1
                    continue
                acc += qd.sin(v * j) + qd.sqrt(qd.abs(v)) - qd.exp(-v * v)
                if acc > 5.0:
                    break
                j += 1
            out[i] = acc

    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    k(x, out, n)
    expect = np.zeros(n)
    for i in range(n):
        v = np.float64(x[i])
        acc = 0.0
        j = 0
        while j < 10:
            if j % 3 == 0:
                j += 1
                continue
            acc += np.sin(v * j) + np.sqrt(abs(v)) - np.exp(-v * v)
            if acc > 5.0:
                break
            j += 1
        expect[i] = acc
    np.testing.assert_allclose(out, expect, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [qd.i32, qd.f32])
def test_atomics(dtype, rng):
    np_dtype = np.int32 if dtype == qd.i32 else np.float32
    x = rng.integers(-50, 50, 5000).astype(np_dtype)
    out = np.zeros(4, np_dtype)

    @qd.kernel
    def k(x: qd.types.ndarray(dtype, 1), out: qd.types.ndarray(dtype, 1)):
        for i in range(x.shape[0]):
            qd.atomic_add(out[0], x[i])
            qd.atomic_min(out[1], x[i])
            qd.atomic_max(out[2], x[i])
            qd.atomic_sub(out[3], x[i])

    k(x, out)
    assert out[0] == x.sum() and out[1] == x.min() and out[2] == x.max() and out[3] == -x.sum()


def test_integer_division_matches_the_cpu(rng):
    a = rng.integers(-1000, 1000, 4096).astype(np.int32)
    b = rng.integers(-7, 8, 4096).astype(np.int32)
    out = np.zeros((4, 4096), np.int32)

    @qd.kernel
    def k(a: qd.types.ndarray(qd.i32, 1), b: qd.types.ndarray(qd.i32, 1),
          out: qd.types.ndarray(qd.i32, 2)):
        for i in range(a.shape[0]):
            out[0, i] = a[i] // b[i] if b[i] != 0 else 0
            out[1, i] = a[i] % b[i] if b[i] != 0 else 0
            out[2, i] = a[i] << (b[i] & 7)
            out[3, i] = a[i] >> (b[i] & 7)

    k(a, b, out)
    nz = b != 0
    safe_b = np.where(nz, b, 1)
    np.testing.assert_array_equal(out[0], np.where(nz, a // safe_b, 0))
    np.testing.assert_array_equal(out[1], np.where(nz, a % safe_b, 0))
    np.testing.assert_array_equal(out[2], a << (b & 7))
    np.testing.assert_array_equal(out[3], a >> (b & 7))


def test_assert_fails_the_launch():
    qd.init(arch=qd.vulkan, debug=True, offline_cache=False)

    @qd.kernel
    def k(x: qd.types.ndarray(qd.i32, 1)):
        for i in range(x.shape[0]):
            assert x[i] < 10, "too big"

    k(np.arange(10, dtype=np.int32))
    with pytest.raises(AssertionError, match="too big"):
        k(np.arange(20, dtype=np.int32))


def test_print_from_parallel_loops(capfd):
    @qd.kernel
    def k(n: qd.i32, x: qd.f32):
        for i in range(n):
            print("item", i, "of", n, x * i)
        print(f"done {n} {x:.2f}")

    k(100, 0.5)
    lines = capfd.readouterr().out.splitlines()
    assert lines[-1] == "done 100 0.50"
    items = sorted(lines[:-1], key=lambda line: int(line.split()[1]))
    assert items == [f"item {i} of 100 {0.5 * i:.6f}" for i in range(100)]


def test_warm_start_from_the_offline_cache(tmp_path):
    qd.init(arch=qd.vulkan, offline_cache=True, offline_cache_file_path=str(tmp_path))

    @qd.kernel
    def k(x: qd.types.ndarray(qd.f32, 1)):
        for i in range(x.shape[0]):
            x[i] = x[i] * 2 + 1

    x = np.arange(64, dtype=np.float32)
    k(x)
    qd.init(arch=qd.vulkan, offline_cache=True, offline_cache_file_path=str(tmp_path))

    @qd.kernel
    def k(x: qd.types.ndarray(qd.f32, 1)):  # noqa: F811 -- the same source again
        for i in range(x.shape[0]):
            x[i] = x[i] * 2 + 1

    k(x)
    np.testing.assert_array_equal(x, (np.arange(64) * 2 + 1) * 2 + 1)


def test_gpu_list_picks_a_vulkan_gpu_when_there_is_no_cuda(monkeypatch):
    """qd.gpu takes a Vulkan GPU; a CPU implementation (lavapipe) is passed over for the CPU
    backend, which is faster there. Asked for by name it is used."""
    monkeypatch.setattr(_core, "cuda_available", lambda: False)
    on_cpu = _core.vulkan_device_info()["device_type"] == "cpu"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        qd.init(arch=qd.gpu)
    assert qd.cfg.arch is (qd.cpu if on_cpu else qd.vulkan)
    qd.init(arch=qd.vulkan)
    assert qd.cfg.arch is qd.vulkan
    x = qd.ndarray(qd.i32, 5)

    @qd.kernel
    def k(x: qd.types.ndarray(qd.i32, 1)):
        for i in x:
            x[i] = i * i

    k(x)
    np.testing.assert_array_equal(x.to_numpy(), np.arange(5) ** 2)


def test_asynchronous_launches_run_in_order(rng):
    """Launches without results return before the device finishes; each runs after the one
    before it, and reading the memory waits for all of them."""
    x = qd.ndarray(qd.f32, 4096)
    start = rng.standard_normal(4096).astype(np.float32)
    x.from_numpy(start)
    s = qd.field(qd.f32, shape=())

    @qd.kernel
    def step(x: qd.types.ndarray(qd.f32, 1), k: qd.f32):
        for i in x:
            x[i] = x[i] * 0.5 + k

    @qd.kernel
    def total(x: qd.types.ndarray(qd.f32, 1)):
        for i in x:
            s[None] += x[i]

    expect = start.astype(np.float64)
    for k in range(200):
        step(x, float(k % 7))
        expect = expect * 0.5 + (k % 7)
    total(x)
    qd.sync()
    np.testing.assert_allclose(x.to_numpy(), expect, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(s[None], expect.sum(), rtol=1e-4)


def test_compiled_kernel_is_a_vulkan_device_kernel(rng):
    """The launcher of both GPU backends is one type; a CUDA buffer (where CUDA exists too) is
    refused, not read."""

    @qd.kernel
    def fill(x: qd.types.ndarray(qd.f32, 1), v: qd.f32):
        for i in range(x.shape[0]):
            x[i] = v + i

    x = qd.ndarray(qd.f32, 40)
    fill(x, 1.5)
    np.testing.assert_array_equal(x.to_numpy(), 1.5 + np.arange(40, dtype=np.float32))
    (compiled, _), = fill._compiled.values()
    assert type(compiled).__name__ == "DeviceKernel" and compiled.arch == "vulkan"
    assert compiled.ptx is None and set(compiled.compile_ms) == {"spirv"}
    assert compiled.task_kinds == ("range_for",)
    if not _core.cuda_available():
        return
    cuda_memory = _core.DeviceBuffer((40,), 4)  # CUDA memory: made without vulkan=True
    with pytest.raises(ValueError, match="another backend cannot be passed to a kernel on Vulkan"):
        compiled(cuda_memory, 1.0)
