"""The subgroup size is the arch's: 32 on CUDA and in the CPU's SIMT emulation, the device's on
Vulkan (lavapipe: 8). qd.simt.subgroup.group_size() gives it on the host and in kernels, the
collectives work over it, and code that needs more lanes says so."""

import numpy as np
import pytest

import quadrants as qd
from quadrants import _core

sg = qd.simt.subgroup


def expected_size(arch):
    return _core.vulkan_device_info()["subgroup_size"] if arch == "vulkan" else 32


def test_group_size_on_the_host_and_in_kernels(gpu):
    lanes = expected_size(gpu)
    assert sg.group_size() == lanes
    assert 1 << sg.log2_group_size() == lanes

    @qd.kernel
    def k(y: qd.types.ndarray(qd.i32, ndim=2)):
        qd.loop_config(block_dim=64)
        for i in range(64):
            y[i, 0] = sg.group_size()
            y[i, 1] = sg.log2_group_size()

    y = np.zeros((64, 2), np.int32)
    k(y)
    np.testing.assert_array_equal(y[:, 0], lanes)
    np.testing.assert_array_equal(y[:, 1], sg.log2_group_size())


def test_collectives_span_one_subgroup(gpu):
    """reduce_add(1) counts the lanes of a subgroup; the scans and the block reduction agree."""
    lanes = expected_size(gpu)
    n = 256
    rng = np.random.default_rng()
    x = rng.integers(-100, 100, n).astype(np.int32)

    @qd.kernel
    def k(x: qd.types.ndarray(qd.i32, ndim=1), y: qd.types.ndarray(qd.i32, ndim=2)):
        qd.loop_config(block_dim=128)
        for i in range(n):
            y[i, 0] = sg.reduce_all_add(1)
            y[i, 1] = sg.reduce_all_add(x[i])
            y[i, 2] = sg.inclusive_add(x[i])
            y[i, 3] = sg.exclusive_max(x[i])
            y[i, 4] = qd.simt.block.reduce_all_add(x[i], 128, qd.i32)
            y[i, 5] = sg.invocation_id()

    y = np.zeros((n, 6), np.int32)
    k(x, y)
    groups = x.reshape(-1, lanes)
    np.testing.assert_array_equal(y[:, 0], lanes)
    np.testing.assert_array_equal(y[:, 1], np.repeat(groups.sum(1), lanes))
    np.testing.assert_array_equal(y[:, 2], np.cumsum(groups, 1).ravel())
    excl = np.maximum.accumulate(groups, 1)
    first = np.full((groups.shape[0], 1), np.iinfo(np.int32).min, np.int32)
    np.testing.assert_array_equal(y[:, 3], np.concatenate([first, excl[:, :-1]], 1).ravel())
    np.testing.assert_array_equal(y[:, 4], np.repeat(x.reshape(-1, 128).sum(1), 128))
    np.testing.assert_array_equal(y[:, 5], np.arange(n) % lanes)


@pytest.mark.parametrize("size", [16, 32])
def test_tile_needs_a_lane_per_row(gpu, size):
    """A TileNxN holds one row per lane: on subgroups of fewer lanes it is a compile error."""
    lanes = expected_size(gpu)

    @qd.kernel
    def k(a: qd.types.ndarray(qd.f32, ndim=2)):
        qd.loop_config(block_dim=32)
        for _ in range(32):
            if qd.static(size == 16):
                t = qd.simt.Tile16x16.eye()
                a[0:16, 0:16] = t
            else:
                t = qd.simt.Tile32x32.eye()
                a[0:32, 0:32] = t

    a = np.zeros((size, size), np.float32)
    if lanes >= size:
        k(a)
        np.testing.assert_array_equal(a, np.eye(size, dtype=np.float32))
    else:
        with pytest.raises(qd.QuadrantsSyntaxError,
                           match=f"Tile{size}x{size} .* needs subgroups of at least {size} lanes; "
                                 f"this device's subgroups have {lanes}"):
            k(a)
