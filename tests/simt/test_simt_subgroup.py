"""qd.simt.subgroup and qd.simt.warp primitives vs NumPy models of a 32-lane subgroup."""

import numpy as np
import pytest

import quadrants as qd

W = 32
BLOCK_DIMS = [32, 64, 128, 256]
DTYPES = [(qd.i32, np.int32), (qd.u32, np.uint32), (qd.f32, np.float32), (qd.f64, np.float64),
          (qd.i64, np.int64), (qd.u64, np.uint64)]


def random_values(rng, np_dtype, n):
    if np.issubdtype(np_dtype, np.floating):
        return (rng.random(n) * 200 - 100).astype(np_dtype)
    info = np.iinfo(np_dtype)
    return rng.integers(info.min, info.max, n, dtype=np_dtype, endpoint=True)


def lanes(n):
    return np.arange(n) % W


def test_group_size_is_a_python_int(qd_arch):
    lanes = qd._core.vulkan_device_info()["subgroup_size"] if qd_arch == "vulkan" else 32
    assert qd.simt.subgroup.group_size() == lanes
    assert 1 << qd.simt.subgroup.log2_group_size() == lanes

    @qd.kernel
    def k(y: qd.types.ndarray(qd.i32, ndim=1)):
        qd.loop_config(block_dim=32)
        for i in range(32):
            y[i] = qd.static(qd.simt.subgroup.group_size()) * 10 + qd.simt.subgroup.log2_group_size()

    y = qd.ndarray(qd.i32, 32)
    k(y)
    np.testing.assert_array_equal(y.to_numpy(), np.full(32, lanes * 10 + lanes.bit_length() - 1))


@pytest.mark.parametrize("dtype,np_dtype", DTYPES, ids=[d[1].__name__ for d in DTYPES])
@pytest.mark.parametrize("block_dim", BLOCK_DIMS)
def test_shuffles(dtype, np_dtype, block_dim):
    n = block_dim * 3
    rng = np.random.default_rng(block_dim)
    x_np = random_values(rng, np_dtype, n)
    src_np = rng.integers(0, W, n).astype(np.uint32)
    mask = 5
    off = 3

    @qd.kernel
    def k(x: qd.types.ndarray(dtype, ndim=1), src: qd.types.ndarray(qd.u32, ndim=1),
          out: qd.types.ndarray(dtype, ndim=2)):
        qd.loop_config(block_dim=block_dim)
        for i in range(n):
            v = x[i]
            out[i, 0] = qd.simt.subgroup.shuffle(v, src[i])
            out[i, 1] = qd.simt.subgroup.shuffle_xor(v, qd.u32(mask))
            out[i, 2] = qd.simt.subgroup.shuffle_up(v, qd.u32(off))
            out[i, 3] = qd.simt.subgroup.shuffle_down(v, qd.u32(off))
            out[i, 4] = qd.simt.subgroup.broadcast(v, qd.u32(7))
            out[i, 5] = qd.simt.subgroup.broadcast_first(v)

    x, src = qd.ndarray(dtype, n), qd.ndarray(qd.u32, n)
    out = qd.ndarray(dtype, (n, 6))
    x.from_numpy(x_np)
    src.from_numpy(src_np)
    k(x, src, out)
    got = out.to_numpy()
    base = np.arange(n) - lanes(n)
    lane = lanes(n)
    np.testing.assert_array_equal(got[:, 0], x_np[base + src_np])
    np.testing.assert_array_equal(got[:, 1], x_np[base + (lane ^ mask)])
    up_ok = lane >= off
    np.testing.assert_array_equal(got[up_ok, 2], x_np[np.arange(n)[up_ok] - off])
    down_ok = lane + off < W
    np.testing.assert_array_equal(got[down_ok, 3], x_np[np.arange(n)[down_ok] + off])
    np.testing.assert_array_equal(got[:, 4], x_np[base + 7])
    np.testing.assert_array_equal(got[:, 5], x_np[base])


@pytest.mark.parametrize("block_dim", BLOCK_DIMS)
def test_ids_and_votes(block_dim):
    n = block_dim * 4
    rng = np.random.default_rng(100 + block_dim)
    p_np = (rng.random(n) < 0.6).astype(np.int32)
    p_np[:W] = 1
    p_np[W:2 * W] = 0
    v_np = rng.integers(0, 2, n).astype(np.int32)
    v_np[2 * W:3 * W] = 9  # an all-equal subgroup

    @qd.kernel
    def k(p: qd.types.ndarray(qd.i32, ndim=1), v: qd.types.ndarray(qd.i32, ndim=1),
          out: qd.types.ndarray(qd.i32, ndim=2), bal: qd.types.ndarray(qd.u64, ndim=1),
          first: qd.types.ndarray(qd.u32, ndim=1)):
        qd.loop_config(block_dim=block_dim)
        for i in range(n):
            out[i, 0] = qd.simt.subgroup.invocation_id()
            out[i, 1] = qd.simt.subgroup.elect()
            out[i, 2] = qd.simt.subgroup.all_true(p[i])
            out[i, 3] = qd.simt.subgroup.any_true(p[i])
            out[i, 4] = qd.simt.subgroup.all_equal(v[i])
            qd.simt.subgroup.sync()
            bal[i] = qd.simt.subgroup.ballot(p[i])
            first[i] = qd.simt.subgroup.ballot_first_n(p[i], 8)

    p, v = qd.ndarray(qd.i32, n), qd.ndarray(qd.i32, n)
    out, bal, first = qd.ndarray(qd.i32, (n, 5)), qd.ndarray(qd.u64, n), qd.ndarray(qd.u32, n)
    p.from_numpy(p_np)
    v.from_numpy(v_np)
    k(p, v, out, bal, first)
    got = out.to_numpy()
    lane = lanes(n)
    pg, vg = p_np.reshape(-1, W), v_np.reshape(-1, W)
    weights = (np.uint64(1) << np.arange(W, dtype=np.uint64))
    ballots = (pg.astype(np.uint64) * weights).sum(1).astype(np.uint64)
    np.testing.assert_array_equal(got[:, 0], lane)
    np.testing.assert_array_equal(got[:, 1], (lane == 0).astype(np.int32))
    np.testing.assert_array_equal(got[:, 2], np.repeat(pg.all(1), W))
    np.testing.assert_array_equal(got[:, 3], np.repeat(pg.any(1), W))
    np.testing.assert_array_equal(got[:, 4], np.repeat((vg == vg[:, :1]).all(1), W))
    np.testing.assert_array_equal(bal.to_numpy(), np.repeat(ballots, W))
    np.testing.assert_array_equal(first.to_numpy(), np.repeat(ballots & np.uint64(0xff), W))


@pytest.mark.parametrize("which", ["subgroup", "warp"])
def test_sync_reconverges_lanes_that_left_a_loop_apart(which):
    # Each lane leaves the loop after its own number of trips. subgroup.sync() and
    # warp.sync(0xFFFFFFFF) are barriers of all 32 lanes (__syncwarp with the full mask), so
    # after them every lane is back: the shuffle sees the whole subgroup, and each lane reads
    # what its neighbour wrote to shared memory before the barrier.
    n = 128

    @qd.kernel
    def k(out: qd.types.ndarray(qd.i32, ndim=2)):
        qd.loop_config(block_dim=64)
        for i in range(n):
            s = qd.simt.block.SharedArray((64,), qd.i32)
            t = qd.simt.block.thread_idx()
            lane = qd.simt.subgroup.invocation_id()
            acc = 0
            for j in range(lane % 7 + 1):
                acc += i + j
            s[t] = acc
            if qd.static(which == "subgroup"):
                qd.simt.subgroup.sync()
            else:
                qd.simt.warp.sync(qd.u32(0xFFFFFFFF))
            out[i, 0] = qd.simt.subgroup.shuffle(acc, qd.u32((lane + 1) % 32))
            out[i, 1] = s[t - lane + (lane + 5) % 32]

    out = qd.ndarray(qd.i32, (n, 2))
    k(out)
    idx = np.arange(n)
    lane = lanes(n)
    trips = lane % 7 + 1
    acc = trips * idx + trips * (trips - 1) // 2
    got = out.to_numpy()
    np.testing.assert_array_equal(got[:, 0], acc[idx - lane + (lane + 1) % W])
    np.testing.assert_array_equal(got[:, 1], acc[idx - lane + (lane + 5) % W])


def test_lanemasks():
    n = 64

    @qd.kernel
    def k(out: qd.types.ndarray(qd.u32, ndim=2)):
        qd.loop_config(block_dim=32)
        for i in range(n):
            lane = i % 32
            out[i, 0] = qd.simt.subgroup.lanemask_lt(lane)
            out[i, 1] = qd.simt.subgroup.lanemask_le(lane)
            out[i, 2] = qd.simt.subgroup.lanemask_eq(lane)
            out[i, 3] = qd.simt.subgroup.lanemask_gt(lane)
            out[i, 4] = qd.simt.subgroup.lanemask_ge(lane)

    out = qd.ndarray(qd.u32, (n, 5))
    k(out)
    lane = (np.arange(n) % 32).astype(np.uint64)
    full = np.uint64(0xFFFFFFFF)
    eq = np.uint64(1) << lane
    lt = eq - np.uint64(1)
    le = lt | eq
    want = np.stack([lt, le, eq, full & ~le, full & ~lt], axis=1).astype(np.uint32)
    np.testing.assert_array_equal(out.to_numpy(), want)


def test_warp_intrinsics():
    n = 96
    rng = np.random.default_rng(5)
    x_np = rng.integers(-50, 50, n).astype(np.int32)
    f_np = rng.random(n).astype(np.float32)
    p_np = (rng.random(n) < 0.5).astype(np.int32)
    p_np[:W] = 1

    @qd.kernel
    def k(x: qd.types.ndarray(qd.i32, ndim=1), f: qd.types.ndarray(qd.f32, ndim=1),
          p: qd.types.ndarray(qd.i32, ndim=1), out: qd.types.ndarray(qd.i32, ndim=2),
          fo: qd.types.ndarray(qd.f32, ndim=2)):
        qd.loop_config(block_dim=32)
        for i in range(n):
            m = qd.u32(0xFFFFFFFF)
            out[i, 0] = qd.simt.warp.shfl_sync_i32(m, x[i], 3)
            out[i, 1] = qd.simt.warp.shfl_xor_i32(m, x[i], 1)
            out[i, 2] = qd.simt.warp.shfl_down_i32(m, x[i], 1)
            out[i, 3] = qd.simt.warp.shfl_up_i32(m, x[i], 1)
            out[i, 4] = qd.simt.warp.all_nonzero(m, p[i])
            out[i, 5] = qd.simt.warp.any_nonzero(m, p[i])
            out[i, 6] = qd.simt.warp.unique(m, p[i])
            out[i, 7] = qd.cast(qd.simt.warp.ballot(p[i]), qd.i32)
            out[i, 8] = qd.cast(qd.simt.warp.active_mask(), qd.i32)
            qd.simt.warp.sync(m)
            fo[i, 0] = qd.simt.warp.shfl_sync_f32(m, f[i], 0)
            fo[i, 1] = qd.simt.warp.shfl_down_f32(m, f[i], 2)
            fo[i, 2] = qd.simt.warp.shfl_up_f32(m, f[i], 2)

    x, f, p = qd.ndarray(qd.i32, n), qd.ndarray(qd.f32, n), qd.ndarray(qd.i32, n)
    out, fo = qd.ndarray(qd.i32, (n, 9)), qd.ndarray(qd.f32, (n, 3))
    x.from_numpy(x_np)
    f.from_numpy(f_np)
    p.from_numpy(p_np)
    k(x, f, p, out, fo)
    got, fgot = out.to_numpy(), fo.to_numpy()
    idx = np.arange(n)
    lane = lanes(n)
    base = idx - lane
    pg = p_np.reshape(-1, W)
    weights = (np.uint64(1) << np.arange(W, dtype=np.uint64))
    ballots = (pg.astype(np.uint64) * weights).sum(1).astype(np.uint32).view(np.int32)
    np.testing.assert_array_equal(got[:, 0], x_np[base + 3])
    np.testing.assert_array_equal(got[:, 1], x_np[base + (lane ^ 1)])
    ok = lane < W - 1
    np.testing.assert_array_equal(got[ok, 2], x_np[idx[ok] + 1])
    ok = lane >= 1
    np.testing.assert_array_equal(got[ok, 3], x_np[idx[ok] - 1])
    np.testing.assert_array_equal(got[:, 4], np.repeat(pg.all(1), W))
    np.testing.assert_array_equal(got[:, 5], np.repeat(pg.any(1), W))
    np.testing.assert_array_equal(got[:, 6], np.repeat(pg.all(1) | ~pg.any(1), W))
    np.testing.assert_array_equal(got[:, 7], np.repeat(ballots, W))
    np.testing.assert_array_equal(got[:, 8], np.full(n, -1))
    np.testing.assert_array_equal(fgot[:, 0], f_np[base])
    ok = lane < W - 2
    np.testing.assert_array_equal(fgot[ok, 1], f_np[idx[ok] + 2])
    ok = lane >= 2
    np.testing.assert_array_equal(fgot[ok, 2], f_np[idx[ok] - 2])
