"""qd.simt.subgroup and qd.simt.warp on the GPU: shuffles, broadcasts, votes, ballots and lane
masks over warps of 32 lanes, checked against a NumPy model of each warp."""

import numpy as np
import pytest

import quadrants as qd

rng = np.random.default_rng()
sg = qd.simt.subgroup
W = 32


@pytest.mark.parametrize("dtype", [qd.i32, qd.f32, qd.f64, qd.i64, qd.u32])
def test_shuffles(gpu, dtype):
    @qd.kernel
    def k(x: qd.types.ndarray(dtype, 1), idx: qd.types.ndarray(qd.u32, 1),
          out: qd.types.ndarray(dtype, 2)):
        qd.loop_config(block_dim=128)
        for i in range(x.shape[0]):
            v = x[i]
            out[i, 0] = sg.shuffle(v, idx[i])
            out[i, 1] = sg.shuffle_xor(v, qd.u32(5))
            out[i, 2] = sg.shuffle_up(v, qd.u32(3))
            out[i, 3] = sg.shuffle_down(v, qd.u32(7))
            out[i, 4] = sg.broadcast(v, qd.u32(9))
            out[i, 5] = sg.broadcast_first(v)

    n = 128 * int(rng.integers(1, 20))
    np_dt = dtype.np_dtype if hasattr(dtype, "np_dtype") else np.dtype(str(dtype))
    x = (rng.standard_normal(n) * 1000).astype(np_dt)
    idx = rng.integers(0, W, n).astype(np.uint32)
    out = np.zeros((n, 6), np_dt)
    k(x, idx, out)
    lane = np.arange(n) % W
    base = np.arange(n) - lane
    up = np.where(lane >= 3, base + lane - 3, np.arange(n))
    down = np.where(lane + 7 < W, base + lane + 7, np.arange(n))
    want = np.stack([x[base + idx], x[base + (lane ^ 5)], x[up], x[down], x[base + 9], x[base]], 1)
    np.testing.assert_array_equal(out, want)


def test_lane_ids_votes_and_ballots(gpu):
    @qd.kernel
    def k(p: qd.types.ndarray(qd.i32, 1), out: qd.types.ndarray(qd.i64, 2)):
        qd.loop_config(block_dim=64)
        for i in range(p.shape[0]):
            lane = sg.invocation_id()
            out[i, 0] = lane
            out[i, 1] = sg.elect()
            out[i, 2] = sg.all_true(p[i])
            out[i, 3] = sg.any_true(p[i])
            out[i, 4] = qd.cast(sg.ballot(p[i]), qd.i64)
            out[i, 5] = qd.cast(sg.ballot_first_n(p[i], 8), qd.i64)
            out[i, 6] = sg.all_equal(p[i])
            out[i, 7] = qd.cast(sg.lanemask_lt(lane), qd.i64)
            out[i, 8] = qd.cast(sg.lanemask_ge(lane), qd.i64)
            out[i, 9] = qd.cast(sg.lanemask_eq(lane), qd.i64)
            sg.sync()

    nw = 24
    p = (rng.random(nw * W) < rng.random((nw, 1)).repeat(W, 1).reshape(-1)).astype(np.int32)
    p[:W] = 1
    p[W:2 * W] = 0
    out = np.zeros((nw * W, 10), np.int64)
    k(p, out)
    per = p.reshape(nw, W)
    bits = (per.astype(np.int64) << np.arange(W)).sum(1)
    lane = np.arange(nw * W) % W
    want = np.zeros_like(out)
    want[:, 0] = lane
    want[:, 1] = lane == 0
    want[:, 2] = np.repeat(per.all(1), W)
    want[:, 3] = np.repeat(per.any(1), W)
    want[:, 4] = np.repeat(bits, W)
    want[:, 5] = np.repeat(bits & 0xFF, W)
    want[:, 6] = np.repeat((per == per[:, :1]).all(1), W)
    want[:, 7] = (1 << lane) - 1
    want[:, 8] = 0xFFFFFFFF ^ ((1 << lane) - 1)
    want[:, 9] = 1 << lane
    np.testing.assert_array_equal(out, want)


def test_warp_intrinsics(gpu):
    @qd.kernel
    def k(x: qd.types.ndarray(qd.i32, 1), out: qd.types.ndarray(qd.i32, 2)):
        qd.loop_config(block_dim=32)
        for i in range(x.shape[0]):
            m = qd.u32(0xFFFFFFFF)
            out[i, 0] = qd.simt.warp.shfl_sync_i32(m, x[i], 4)
            out[i, 1] = qd.simt.warp.shfl_down_i32(m, x[i], 1)
            out[i, 2] = qd.simt.warp.shfl_xor_i32(m, x[i], 16)
            out[i, 3] = qd.simt.warp.any_nonzero(m, x[i] > 100)
            out[i, 4] = qd.simt.warp.all_nonzero(m, x[i] > -1000)

    n = W * 8
    x = rng.integers(-999, 200, n).astype(np.int32)
    out = np.zeros((n, 5), np.int32)
    k(x, out)
    lane = np.arange(n) % W
    base = np.arange(n) - lane
    down = np.where(lane + 1 < W, np.arange(n) + 1, np.arange(n))
    want = np.stack([x[base + 4], x[down], x[base + (lane ^ 16)],
                     np.repeat((x.reshape(-1, W) > 100).any(1), W),
                     np.ones(n)], 1).astype(np.int32)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("dtype", [qd.i32, qd.u32, qd.i64, qd.u8])
def test_warp_match_any(gpu, dtype):
    """Bit l of match_any(mask, v) is set when lane l's v equals this lane's; lanes outside the
    `if` are inactive and in nobody's mask."""
    @qd.kernel
    def k(x: qd.types.ndarray(dtype, 1), active: qd.types.ndarray(qd.i32, 1),
          out: qd.types.ndarray(qd.u32, 1)):
        qd.loop_config(block_dim=64)
        for i in range(x.shape[0]):
            if active[i] != 0:
                out[i] = qd.simt.warp.match_any(qd.u32(0xFFFFFFFF), x[i])

    n = 64 * int(rng.integers(1, 8))
    np_dt = {qd.i32: np.int32, qd.u32: np.uint32, qd.i64: np.int64, qd.u8: np.uint8}[dtype]
    x = rng.integers(0, 5, n).astype(np_dt)
    if dtype == qd.i64:
        x = x * np.int64(1 << 40)  # equal low halves: the whole 64 bits are compared
    active = (rng.random(n) < 0.8).astype(np.int32)
    out = np.zeros(n, np.uint32)
    k(x, active, out)
    for w in range(n // W):
        lanes = slice(w * W, (w + 1) * W)
        xw, aw = x[lanes], active[lanes]
        for lane in np.nonzero(aw)[0]:
            want = sum(1 << j for j in range(W) if aw[j] and xw[j] == xw[lane])
            assert out[w * W + lane] == want, (w, lane)


def test_warp_match_any_takes_integers(gpu):
    @qd.kernel
    def k(x: qd.types.ndarray(qd.f32, 1), out: qd.types.ndarray(qd.u32, 1)):
        for i in range(x.shape[0]):
            out[i] = qd.simt.warp.match_any(qd.u32(0xFFFFFFFF), x[i])

    with pytest.raises(qd.QuadrantsTypeError, match="match_any takes an integer value, got f32"):
        k(np.zeros(32, np.float32), np.zeros(32, np.uint32))
