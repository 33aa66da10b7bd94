"""qd.simt.block on the GPU: shared arrays, barriers with predicates, thread indices, atomics on
shared memory; fresh random data checked element by element against NumPy."""

import numpy as np
import pytest

import quadrants as qd

rng = np.random.default_rng()
block = qd.simt.block


@pytest.mark.parametrize("bd", [32, 64, 128, 256])
def test_shared_memory_block_sums(gpu, bd):
    @qd.kernel
    def sums(x: qd.types.ndarray(qd.f32, 1), out: qd.types.ndarray(qd.f32, 1)):
        qd.loop_config(block_dim=bd)
        for i in range(x.shape[0]):
            s = block.SharedArray((bd,), qd.f32)
            t = block.thread_idx()
            s[t] = x[i]
            block.sync()
            stride = bd // 2
            while stride > 0:
                if t < stride:
                    s[t] += s[t + stride]
                block.sync()
                stride //= 2
            if t == 0:
                out[i // bd] = s[0]

    nblocks = int(rng.integers(1, 300))
    x = rng.standard_normal(nblocks * bd).astype(np.float32)
    out = np.zeros(nblocks, np.float32)
    sums(x, out)
    np.testing.assert_allclose(out, x.reshape(nblocks, bd).astype(np.float64).sum(1), rtol=1e-4,
                               atol=1e-4)


def test_thread_indices(gpu):
    @qd.kernel
    def ids(t: qd.types.ndarray(qd.i32, 1), g: qd.types.ndarray(qd.i32, 1)):
        qd.loop_config(block_dim=128)
        for i in range(t.shape[0]):
            t[i] = block.thread_idx()
            g[i] = block.global_thread_idx() - qd.global_thread_idx()

    n = 128 * int(rng.integers(1, 50))
    t = np.zeros(n, np.int32)
    g = np.ones(n, np.int32)
    ids(t, g)
    np.testing.assert_array_equal(t, np.arange(n) % 128)
    np.testing.assert_array_equal(g, 0)


def test_sync_with_predicates(gpu):
    @qd.kernel
    def votes(x: qd.types.ndarray(qd.i32, 1), out: qd.types.ndarray(qd.i32, 2)):
        qd.loop_config(block_dim=64)
        for i in range(x.shape[0]):
            a = block.sync_all_nonzero(x[i])
            b = block.sync_any_nonzero(x[i])
            c = block.sync_count_nonzero(x[i])
            out[i, 0] = a
            out[i, 1] = b
            out[i, 2] = c

    nblocks = 40
    x = (rng.random(nblocks * 64) < rng.random((nblocks, 1)).repeat(64, 1).reshape(-1)).astype(np.int32)
    x[:64] = 1
    x[64:128] = 0
    out = np.zeros((nblocks * 64, 3), np.int32)
    votes(x, out)
    per = x.reshape(nblocks, 64)
    want = np.stack([per.all(1), per.any(1), per.sum(1)], 1).astype(np.int32)
    np.testing.assert_array_equal(out, np.repeat(want, 64, axis=0))


def test_two_dimensional_shared_array_and_atomics(gpu):
    @qd.kernel
    def transpose_and_count(a: qd.types.ndarray(qd.f32, 2), out: qd.types.ndarray(qd.f32, 2),
                            hits: qd.types.ndarray(qd.f32, 1)):
        qd.loop_config(block_dim=256)
        for i in range(a.shape[0] * 256):
            tile = block.SharedArray((16, 17), qd.f32)
            total = block.SharedArray(1, qd.f32)
            b = i // 256
            t = block.thread_idx()
            r, c = t // 16, t % 16
            if t == 0:
                total[0] = 0.0
            tile[r, c] = a[b, t]
            block.sync()
            out[b, c * 16 + r] = tile[r, c]
            total[0] += a[b, t]
            block.sync()
            block.mem_fence()
            if t == 0:
                hits[b] = total[0]

    nb = int(rng.integers(1, 60))
    a = rng.standard_normal((nb, 256)).astype(np.float32)
    out = np.zeros_like(a)
    hits = np.zeros(nb, np.float32)
    transpose_and_count(a, out, hits)
    np.testing.assert_array_equal(out, a.reshape(nb, 16, 16).transpose(0, 2, 1).reshape(nb, 256))
    np.testing.assert_allclose(hits, a.astype(np.float64).sum(1), rtol=1e-4, atol=1e-4)


def test_grid_fence_and_deprecated_aliases(gpu):
    @qd.kernel
    def k(x: qd.types.ndarray(qd.i32, 1)):
        for i in range(x.shape[0]):
            x[i] = i
            qd.simt.grid.mem_fence()
            block.mem_sync()

    x = np.zeros(1000, np.int32)
    with pytest.warns(DeprecationWarning):
        k(x)
    np.testing.assert_array_equal(x, np.arange(1000))


def test_shared_array_shape_errors(gpu):
    @qd.kernel
    def bad(x: qd.types.ndarray(qd.f32, 1)):
        for i in range(x.shape[0]):
            s = block.SharedArray((4, 0), qd.f32)
            x[i] = s[0, 0]

    with pytest.raises(qd.QuadrantsCompilationError, match="SharedArray.*shape must be"):
        bad(np.zeros(4, np.float32))


def test_primitives_need_a_gpu(arch):
    if arch != "cpu":
        pytest.skip("the CPU's error")
    qd.init(arch=qd.cpu)  # without cpu_simt

    @qd.kernel
    def k(x: qd.types.ndarray(qd.f32, 1)):
        for i in range(x.shape[0]):
            block.sync()  # names this line

    with pytest.raises(qd.QuadrantsCompilationError, match="not supported for arch") as info:
        k(np.zeros(4, np.float32))
    assert "names this line" in str(info.value)
    assert qd.simt.subgroup.group_size() == 32 and qd.simt.subgroup.log2_group_size() == 5
    with pytest.raises(qd.QuadrantsSyntaxError, match="inside Quadrants kernels"):
        block.sync()
