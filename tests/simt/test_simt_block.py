"""qd.simt.block: barriers, predicates, thread indices, SharedArray (vs NumPy models)."""

import numpy as np
import pytest

import quadrants as qd

BLOCK_DIMS = [32, 64, 128, 256]


@pytest.mark.parametrize("block_dim", BLOCK_DIMS)
def test_thread_and_block_indices(block_dim):
    n = block_dim * 5

    @qd.kernel
    def k(t: qd.types.ndarray(qd.i32, ndim=1), g: qd.types.ndarray(qd.i32, ndim=1),
          g2: qd.types.ndarray(qd.i32, ndim=1)):
        qd.loop_config(block_dim=block_dim)
        for i in range(n):
            t[i] = qd.simt.block.thread_idx()
            g[i] = qd.simt.block.global_thread_idx()
            g2[i] = qd.global_thread_idx()

    t, g, g2 = (qd.ndarray(qd.i32, n) for _ in range(3))
    k(t, g, g2)
    idx = np.arange(n)
    np.testing.assert_array_equal(t.to_numpy(), idx % block_dim)
    np.testing.assert_array_equal(g.to_numpy(), idx)
    np.testing.assert_array_equal(g2.to_numpy(), idx)


@pytest.mark.parametrize("block_dim", BLOCK_DIMS)
def test_shared_array_reverse(block_dim):
    nblocks = 7
    n = block_dim * nblocks
    rng = np.random.default_rng(block_dim)
    x_np = rng.integers(-1000, 1000, n).astype(np.int32)

    @qd.kernel
    def k(x: qd.types.ndarray(qd.i32, ndim=1), y: qd.types.ndarray(qd.i32, ndim=1)):
        qd.loop_config(block_dim=block_dim)
        for i in range(n):
            s = qd.simt.block.SharedArray((block_dim,), qd.i32)
            tid = qd.simt.block.thread_idx()
            s[tid] = x[i]
            qd.simt.block.sync()
            y[i] = s[block_dim - 1 - tid]

    x, y = qd.ndarray(qd.i32, n), qd.ndarray(qd.i32, n)
    x.from_numpy(x_np)
    k(x, y)
    np.testing.assert_array_equal(y.to_numpy(), x_np.reshape(nblocks, block_dim)[:, ::-1].ravel())


@pytest.mark.parametrize("block_dim", BLOCK_DIMS)
def test_shared_array_2d_and_atomics(block_dim):
    nblocks = 4
    n = block_dim * nblocks
    bins = 8
    rng = np.random.default_rng(7 + block_dim)
    x_np = rng.integers(0, bins, n).astype(np.int32)
    w_np = rng.random(n).astype(np.float32)

    @qd.kernel
    def k(x: qd.types.ndarray(qd.i32, ndim=1), w: qd.types.ndarray(qd.f32, ndim=1),
          hist: qd.types.ndarray(qd.i32, ndim=2), neg: qd.types.ndarray(qd.f32, ndim=2)):
        qd.loop_config(block_dim=block_dim)
        for i in range(n):
            h = qd.simt.block.SharedArray((2, bins), qd.i32)
            f = qd.simt.block.SharedArray([1, bins], qd.f32)
            tid = qd.simt.block.thread_idx()
            if tid < bins:
                h[0, tid] = 0
                h[1, tid] = 0
                f[0, tid] = 0.0
            qd.simt.block.sync()
            qd.atomic_add(h[0, x[i]], 1)
            h[1, x[i]] += 2
            f[0, x[i]] -= w[i]
            qd.simt.block.sync()
            b = i // block_dim
            if tid < bins:
                hist[b, tid] = h[0, tid] + h[1, tid]
                neg[b, tid] = f[0, tid]

    x, w = qd.ndarray(qd.i32, n), qd.ndarray(qd.f32, n)
    hist, neg = qd.ndarray(qd.i32, (nblocks, bins)), qd.ndarray(qd.f32, (nblocks, bins))
    x.from_numpy(x_np)
    w.from_numpy(w_np)
    k(x, w, hist, neg)
    xb, wb = x_np.reshape(nblocks, block_dim), w_np.reshape(nblocks, block_dim)
    want = np.stack([np.bincount(xb[b], minlength=bins) * 3 for b in range(nblocks)])
    want_neg = np.stack([-np.bincount(xb[b], weights=wb[b], minlength=bins) for b in range(nblocks)])
    np.testing.assert_array_equal(hist.to_numpy(), want)
    np.testing.assert_allclose(neg.to_numpy(), want_neg, rtol=1e-5, atol=1e-5)


def test_shared_array_vector_dtype():
    block_dim = 64
    n = block_dim * 3
    rng = np.random.default_rng(3)
    x_np = rng.random((n, 3)).astype(np.float32)

    @qd.kernel
    def k(x: qd.types.ndarray(qd.f32, ndim=2), y: qd.types.ndarray(qd.f32, ndim=2)):
        qd.loop_config(block_dim=block_dim)
        for i in range(n):
            s = qd.simt.block.SharedArray(block_dim, qd.types.vector(3, qd.f32))
            tid = qd.simt.block.thread_idx()
            s[tid] = qd.Vector([x[i, 0], x[i, 1], x[i, 2]])
            qd.simt.block.sync()
            v = s[(tid + 1) % block_dim]
            for c in qd.static(range(3)):
                y[i, c] = v[c]

    x, y = qd.ndarray(qd.f32, (n, 3)), qd.ndarray(qd.f32, (n, 3))
    x.from_numpy(x_np)
    k(x, y)
    want = np.roll(x_np.reshape(3, block_dim, 3), -1, axis=1).reshape(n, 3)
    np.testing.assert_array_equal(y.to_numpy(), want)


@pytest.mark.parametrize("block_dim", BLOCK_DIMS)
def test_sync_predicates(block_dim):
    nblocks = 6
    n = block_dim * nblocks
    rng = np.random.default_rng(11 + block_dim)
    p_np = (rng.random(n) < 0.5).astype(np.int32)
    p_np[:block_dim] = 1  # an all-true block
    p_np[block_dim:2 * block_dim] = 0  # an all-false block

    @qd.kernel
    def k(p: qd.types.ndarray(qd.i32, ndim=1), out: qd.types.ndarray(qd.i32, ndim=2)):
        qd.loop_config(block_dim=block_dim)
        for i in range(n):
            a = qd.simt.block.sync_all_nonzero(p[i])
            b = qd.simt.block.sync_any_nonzero(p[i])
            c = qd.simt.block.sync_count_nonzero(p[i])
            out[i, 0] = a
            out[i, 1] = b
            out[i, 2] = c

    p, out = qd.ndarray(qd.i32, n), qd.ndarray(qd.i32, (n, 3))
    p.from_numpy(p_np)
    k(p, out)
    pb = p_np.reshape(nblocks, block_dim)
    want = np.stack([pb.all(1), pb.any(1), pb.sum(1)], axis=1).astype(np.int32)
    np.testing.assert_array_equal(out.to_numpy(), np.repeat(want, block_dim, axis=0))


def test_fences_compile_and_run():
    block_dim = 32
    n = 64

    @qd.kernel
    def k(y: qd.types.ndarray(qd.i32, ndim=1)):
        qd.loop_config(block_dim=block_dim)
        for i in range(n):
            y[i] = i
            qd.simt.block.mem_fence()
            qd.simt.grid.mem_fence()
            qd.simt.subgroup.mem_fence()

    y = qd.ndarray(qd.i32, n)
    k(y)
    np.testing.assert_array_equal(y.to_numpy(), np.arange(n))


def test_deprecated_aliases_warn():
    @qd.kernel
    def k(y: qd.types.ndarray(qd.i32, ndim=1)):
        qd.loop_config(block_dim=32)
        for i in range(32):
            qd.simt.block.mem_sync()
            qd.simt.grid.memfence()
            qd.simt.subgroup.barrier()
            qd.simt.subgroup.memory_barrier()
            y[i] = qd.cast(qd.simt.subgroup.ballot_full_subgroup(1) != 0, qd.i32)

    y = qd.ndarray(qd.i32, 32)
    with pytest.warns(DeprecationWarning) as record:
        k(y)
    text = " ".join(str(w.message) for w in record)
    for name in ("mem_sync", "memfence", "barrier", "memory_barrier", "ballot_full_subgroup"):
        assert name in text
    np.testing.assert_array_equal(y.to_numpy(), np.ones(32))


def test_partial_last_block():
    # The range is not a multiple of block_dim: the threads past the end skip the body and
    # count as arrived at the barrier.
    block_dim = 64
    n = block_dim * 2 + 10

    @qd.kernel
    def k(y: qd.types.ndarray(qd.i32, ndim=1)):
        qd.loop_config(block_dim=block_dim)
        for i in range(n):
            c = qd.simt.block.sync_count_nonzero(1)
            y[i] = c

    y = qd.ndarray(qd.i32, n)
    k(y)
    want = np.array([block_dim] * (2 * block_dim) + [10] * 10)
    np.testing.assert_array_equal(y.to_numpy(), want)
