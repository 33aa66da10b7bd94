"""Kernels on the GPU through the Python API: qd.init(arch=qd.cuda), device memory of fields and
ndarrays, NumPy arguments copied in and back, results, grids, asserts, prints, dumps, sync and
errors. Every test needs a CUDA device (the `gpu` fixture skips it otherwise); the whole
language is also covered by running tests/lang and tests/python with --arch cuda."""

import os

import numpy as np
import pytest

import quadrants as qd
from quadrants import _core


@pytest.fixture
def cuda(gpu):
    qd.init(arch=qd.cuda, enable_fallback=False)
    yield
    qd.reset()


@qd.kernel
def saxpy(a: qd.f32, x: qd.types.ndarray(qd.f32, 1), y: qd.types.ndarray(qd.f32, 1)):
    for i in range(x.shape[0]):
        y[i] = a * x[i] + y[i]


def test_device_info(cuda):
    info = _core.cuda_device_info()
    assert info["sm_count"] > 0 and info["compute_capability"][0] >= 5
    assert info["target_sm"] <= 90 and qd.cfg.arch is qd.cuda


def test_launch_after_foreign_context_change(cuda):
    """Launches trust the context this thread entered last; when other code on the thread made
    another (here: no) context current, the launch enters the device's context and succeeds."""
    from quadrants._core import _testing

    rng = np.random.default_rng()
    x = qd.ndarray(qd.f32, 1000)
    y = qd.ndarray(qd.f32, 1000)
    xs = rng.standard_normal(1000).astype(np.float32)
    ys = rng.standard_normal(1000).astype(np.float32)
    x.from_numpy(xs)
    y.from_numpy(ys)
    saxpy(2.0, x, y)
    for _ in range(3):
        _testing.cuda_clear_current_context()
        saxpy(2.0, x, y)
    qd.sync()
    want = ys.astype(np.float64)
    for _ in range(4):
        want = 2.0 * xs.astype(np.float64) + want
    np.testing.assert_allclose(y.to_numpy(), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n", [0, 1, 127, 128, 129, 100003, 1 << 22])
def test_saxpy_numpy_arrays(cuda, n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    want = np.float32(2.5) * x + y
    saxpy(2.5, x, y)  # copied in and back
    np.testing.assert_allclose(y, want, rtol=1e-6, atol=1e-6)


def test_saxpy_ndarrays_stay_on_the_device(cuda):
    n = 1 << 20
    x = qd.ndarray(qd.f32, n)
    y = qd.ndarray(qd.f32, n)
    x.from_numpy(np.arange(n, dtype=np.float32))
    y.fill(1.0)
    for _ in range(10):
        saxpy(0.5, x, y)
    qd.sync()
    want = 1.0 + 10 * 0.5 * np.arange(n, dtype=np.float32)
    np.testing.assert_allclose(y.to_numpy(), want, rtol=1e-6)
    assert y[3] == pytest.approx(16.0)
    y[3] = -1.0
    assert y.to_numpy()[3] == -1.0


def test_fields_in_device_memory(cuda):
    grid = qd.field(qd.f32, shape=(64, 48))
    total = qd.field(qd.i64, shape=())

    @qd.kernel
    def fill(scale: qd.f32):
        for i, j in grid:
            grid[i, j] = (100 * i + j) * scale
            total[None] += 1

    fill(2.0)
    i, j = np.meshgrid(np.arange(64), np.arange(48), indexing="ij")
    np.testing.assert_array_equal(grid.to_numpy(), ((100 * i + j) * 2.0).astype(np.float32))
    assert total[None] == 64 * 48
    grid[1, 2] = 7.0
    assert grid[1, 2] == 7.0 and grid.to_numpy()[1, 2] == 7.0
    other = qd.field(qd.f32, shape=(64, 48))
    other.copy_from(grid)
    assert other[1, 2] == 7.0


def test_field_with_order_and_offset(cuda):
    x = qd.field(qd.i32, shape=(3, 5), order="ji", offset=(-1, 2))

    @qd.kernel
    def fill():
        for i, j in x:
            x[i, j] = 10 * i + j

    fill()
    for i in range(-1, 2):
        for j in range(2, 7):
            assert x[i, j] == 10 * i + j


def test_return_values(cuda):
    @qd.kernel
    def stats(x: qd.types.ndarray(qd.f64, 1)) -> qd.f64:
        s = 0.0
        for i in range(x.shape[0]):
            s += x[i]
        return s

    x = np.arange(1000, dtype=np.float64)
    assert stats(x) == pytest.approx(x.sum())

    @qd.kernel
    def pair(a: qd.i32) -> tuple[qd.i32, qd.f32]:
        return a + 1, a * 0.5

    assert pair(41) == (42, pytest.approx(20.5))


def test_serial_and_parallel_tasks_share_kernel_locals(cuda):
    @qd.kernel
    def count(x: qd.types.ndarray(qd.i32, 1), limit: qd.i32) -> qd.i32:
        n = 0
        for i in range(x.shape[0]):
            if x[i] < limit:
                n += 1
        return n

    x = np.arange(10000, dtype=np.int32)
    assert count(x, 1234) == 1234


def test_bounds_from_device_memory_use_a_saturating_grid(cuda):
    n = qd.field(qd.i32, shape=())
    out = qd.field(qd.i32, shape=100000)

    @qd.kernel
    def fill():
        for i in range(n[None]):
            out[i] = i

    n[None] = 77777
    fill()
    got = out.to_numpy()
    np.testing.assert_array_equal(got[:77777], np.arange(77777))
    assert not got[77777:].any()


def test_math_functions(cuda):
    @qd.kernel
    def f(x: qd.types.ndarray(qd.f32, 1), out: qd.types.ndarray(qd.f32, 1)):
        for i in range(x.shape[0]):
            out[i] = qd.sin(x[i]) + qd.exp(x[i] * 0.1) + qd.sqrt(qd.abs(x[i])) + qd.atan2(x[i], 2.0)

    x = np.linspace(-3, 3, 1001).astype(np.float32)
    out = np.zeros_like(x)
    f(x, out)
    want = np.sin(x) + np.exp(x * 0.1) + np.sqrt(np.abs(x)) + np.arctan2(x, 2.0)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_atomics(cuda):
    hist = qd.field(qd.i32, shape=16)
    mx = qd.field(qd.f32, shape=())

    @qd.kernel
    def bins(x: qd.types.ndarray(qd.i32, 1), v: qd.types.ndarray(qd.f32, 1)):
        for i in range(x.shape[0]):
            hist[x[i] % 16] += 1
            qd.atomic_max(mx[None], v[i])

    x = np.arange(100000, dtype=np.int32)
    v = np.random.default_rng(0).standard_normal(100000).astype(np.float32)
    bins(x, v)
    np.testing.assert_array_equal(hist.to_numpy(), np.bincount(x % 16, minlength=16))
    assert mx[None] == v.max()


def test_launches_are_asynchronous_and_sync_waits(cuda):
    x = qd.ndarray(qd.f32, 1 << 24)
    y = qd.ndarray(qd.f32, 1 << 24)
    for _ in range(20):
        saxpy(1.0, x, y)
    qd.sync()
    assert y[5] == 0.0


def test_print(cuda, capfd):
    @qd.kernel
    def show(a: qd.i32, b: qd.f64):
        print("a =", a, "b =", b)

    show(42, 0.25)
    qd.sync()
    assert "a = 42 b = 0.25" in capfd.readouterr().out


def test_debug_assert(gpu):
    qd.init(arch=qd.cuda, debug=True)
    try:
        @qd.kernel
        def check(x: qd.types.ndarray(qd.i32, 1)):
            for i in range(x.shape[0]):
                assert x[i] < 5, "too big"

        check(np.arange(5, dtype=np.int32))
        with pytest.raises(qd.QuadrantsAssertionError, match="too big"):
            check(np.arange(10, dtype=np.int32))
        check(np.arange(3, dtype=np.int32))  # the flag was cleared

        @qd.kernel
        def check_values(x: qd.types.ndarray(qd.i32, 1), limit: qd.f64):
            for i in range(x.shape[0]):
                assert x[i] < limit, f"x[{i}] = {x[i]} >= {limit}"

        with pytest.raises(qd.QuadrantsAssertionError, match=r"x\[\d+\] = \d+ >= 7"):
            check_values(np.arange(100, dtype=np.int32), 7.0)
    finally:
        qd.reset()


def test_dumps(gpu, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    qd.init(
        arch=qd.cuda,
        print_kernel_asm=True,
        print_kernel_llvm_ir_optimized=True,
        offline_cache=False,  # a cached kernel is not compiled again, so writes no dumps
    )
    try:
        saxpy(1.0, np.ones(8, np.float32), np.ones(8, np.float32))
    finally:
        qd.reset()
    names = os.listdir(tmp_path)
    assert any(n.startswith("quadrants_kernel_nvptx_") and n.endswith(".ptx") for n in names)
    assert any(n.startswith("quadrants_kernel_cuda_llvm_ir_optimized_") for n in names)


def test_out_of_memory_names_the_size(cuda):
    with pytest.raises(qd.QuadrantsRuntimeError, match="out of memory.*bytes"):
        _core.DeviceBuffer((1 << 30, 1 << 20), 4)  # 4 PiB


def test_kernels_of_an_old_runtime_refuse_to_run(cuda):
    compiled = []

    @qd.kernel
    def one(x: qd.types.ndarray(qd.i32, 1)):
        for i in range(x.shape[0]):
            x[i] = 1

    a = np.zeros(4, np.int32)
    one(a)
    qd.init(arch=qd.cuda)
    one(a)  # recompiled for the new runtime
    assert a.tolist() == [1, 1, 1, 1] and not compiled


def test_gpu_prefers_cuda(gpu):
    qd.init(arch=qd.gpu)
    try:
        assert qd.cfg.arch is qd.cuda
    finally:
        qd.reset()


def test_cuda_error_carries_the_driver_name(cuda):
    buf = _core.DeviceBuffer((4,), 4)
    with pytest.raises(IndexError):
        buf.read(8, 16)
    with pytest.raises(ValueError):
        buf.upload(np.zeros(3, np.float32))
