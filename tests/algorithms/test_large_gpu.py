"""qd.algorithms at sizes where every block of the grid loops over many tiles (more tiles than
the grid has blocks): the collectives of one tile must not race with the next. GPU only (the CPU
modes run these sizes in test_sort.py / test_reduce_scan.py where they are fast enough)."""

import numpy as np
import pytest

import quadrants as qd

N = 1 << 23
D = 3


@pytest.fixture(autouse=True)
def gpu_only(mode):
    if mode.startswith("cpu"):
        pytest.skip("GPU sizes")
    if mode == "vulkan" and qd._core.vulkan_device_info()["device_type"] == "cpu":
        # lavapipe runs the plain path (8-lane subgroups), whose one-thread table scan of these
        # sizes is longer than the 65535 iterations lavapipe lets a shader loop run
        pytest.skip("past lavapipe's loop limit")


def test_sort_many_tiles_per_block():
    @qd.kernel
    def run(keys: qd.types.ndarray(qd.i32, 1), tmp: qd.types.ndarray(qd.i32, 1),
            vals: qd.types.ndarray(qd.i32, 1), tmp_vals: qd.types.ndarray(qd.i32, 1),
            scratch: qd.types.ndarray(qd.u32, 1), n: qd.types.ndarray(qd.i32, 0)):
        qd.algorithms.sort(keys, tmp, vals, tmp_vals, scratch, n, qd.i32, True, 32, D)

    rng = np.random.default_rng()
    k = rng.integers(-(2**31), 2**31 - 1, N, dtype=np.int32)
    keys, tmp = qd.ndarray(qd.i32, (N,)), qd.ndarray(qd.i32, (N,))
    vals, tmp_vals = qd.ndarray(qd.i32, (N,)), qd.ndarray(qd.i32, (N,))
    keys.from_numpy(k)
    vals.from_numpy(np.arange(N, dtype=np.int32))
    scratch = qd.ndarray(qd.u32, (qd.algorithms.sort_scratch_slots(N, D),))
    n = qd.ndarray(qd.i32, ())
    n.fill(N)
    run(keys, tmp, vals, tmp_vals, scratch, n)
    perm = np.argsort(k, kind="stable")
    np.testing.assert_array_equal(keys.to_numpy(), k[perm])
    np.testing.assert_array_equal(vals.to_numpy(), perm.astype(np.int32))


# i64: 2048 tiles of 4096 (more tiles than the grid has blocks); i32: 1025 tiles of 8192, whose
# look-backs cross many windows of 32 tiles
@pytest.mark.parametrize(
    "dtype,scratch_dtype,n", [(qd.i64, qd.u64, N), (qd.i32, qd.u32, 8192 * 1024 + 77)],
    ids=["i64-many-tiles-per-block", "i32-long-lookback"],
)
def test_scan(dtype, scratch_dtype, n):
    @qd.kernel
    def run(a: qd.types.ndarray(dtype, 1), out: qd.types.ndarray(dtype, 1),
            scratch: qd.types.ndarray(scratch_dtype, 1), c: qd.types.ndarray(qd.i32, 1)):
        qd.algorithms.exclusive_scan_add(a, out, scratch, c[0], dtype, D)

    np_dtype = np.int64 if dtype == qd.i64 else np.int32
    rng = np.random.default_rng()
    a = rng.integers(-1000, 1000, n).astype(np_dtype)
    out = np.zeros(n, np_dtype)
    scratch = np.zeros(qd.algorithms.exclusive_scan_scratch_slots(n, D),
                       np.uint64 if scratch_dtype == qd.u64 else np.uint32)
    run(a, out, scratch, np.array([n], np.int32))
    np.testing.assert_array_equal(out[1:], np.cumsum(a)[:-1].astype(np_dtype))
    assert out[0] == 0


def test_reduce_more_tiles_than_blocks():
    """More than 1024 tiles of 4096: each block of the grid reduce combines several."""
    n = 1024 * 4096 * 2 + 4099

    @qd.kernel
    def run(a: qd.types.ndarray(qd.f32, 1), out: qd.types.ndarray(qd.f32, 1),
            scratch: qd.types.ndarray(qd.u32, 1), c: qd.types.ndarray(qd.i32, 1)):
        qd.algorithms.reduce_add(a, out, scratch, c[0], qd.f32, D)

    rng = np.random.default_rng()
    a = rng.random(n, dtype=np.float32)
    out = np.zeros(1, np.float32)
    scratch = np.zeros(qd.algorithms.reduce_scratch_slots(n, D), np.uint32)
    run(a, out, scratch, np.array([n], np.int32))
    assert abs(float(out[0]) - a.astype(np.float64).sum()) <= 1e-5 * n
