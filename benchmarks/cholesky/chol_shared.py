"""The shared-memory Cholesky kernels of the reference's Cholesky demo, timed beside their
hand-written CUDA C (chol_shared.cu) and checked by reconstruction.

  baseline  64 threads per 64x64 matrix, the matrix in shared memory: for each column, thread 0
            computes the diagonal element, then the threads the rows below it (Crout);
  blocked   16 threads per matrix: the same on a 4 x 4 grid of 16 x 16 blocks.

The kernels use only the public API both implementations share, so the script runs unchanged
under the reference package too (times from its Python beside ours, same GPU):

    python benchmarks/cholesky/chol_shared.py [--envs 4096] [--iters 200] [--cuda-ref BINARY]

--cuda-ref runs chol_shared.cu built with `nvcc -O3 -arch=sm_90 -o BINARY chol_shared.cu` and
prints its times beside ours (CUDA events around each launch, median). Our times: --iters
launches back to back and one qd.sync(), per launch, the median of 5 such runs, after --warmup
launches (the way the demo times).
"""

import argparse
import re
import statistics
import subprocess
import time

import numpy as np

import quadrants as qd

N = 64
TILE = 16
NB = N // TILE
EPS = 1e-12


def build(envs):
    a = qd.field(dtype=qd.f32, shape=(envs, N, N))
    l_base = qd.field(dtype=qd.f32, shape=(envs, N, N))
    l_block = qd.field(dtype=qd.f32, shape=(envs, N, N))

    @qd.kernel
    def baseline():
        qd.loop_config(block_dim=64)
        for idx in range(envs * 64):
            env = idx // 64
            tid = idx % 64
            h = qd.simt.block.SharedArray((N, N + 1), qd.f32)
            for row in range(N):
                if row % 64 == tid:
                    for col in range(row + 1):
                        h[row, col] = a[env, row, col]
            qd.simt.block.sync()
            for c in range(N):
                if tid == 0:
                    d = h[c, c]
                    for k in range(c):
                        d -= h[c, k] * h[c, k]
                    h[c, c] = qd.sqrt(qd.max(d, qd.f32(EPS)))
                qd.simt.block.sync()
                inv = qd.f32(1.0) / h[c, c]
                j = c + 1 + tid
                while j < N:
                    dot = qd.f32(0.0)
                    for k in range(c):
                        dot += h[j, k] * h[c, k]
                    h[j, c] = (h[j, c] - dot) * inv
                    j += 64
                qd.simt.block.sync()
            for row in range(N):
                if row % 64 == tid:
                    for col in range(row + 1):
                        l_base[env, row, col] = h[row, col]

    @qd.kernel
    def blocked():
        qd.loop_config(block_dim=TILE)
        for idx in range(envs * TILE):
            env = idx // TILE
            tid = idx % TILE
            h = qd.simt.block.SharedArray((N, N + 1), qd.f32)
            for row in range(N):
                c = tid
                while c <= row:
                    h[row, c] = a[env, row, c]
                    c += TILE
            qd.simt.block.sync()
            for kb in range(NB):
                k0 = kb * TILE
                for r in range(TILE):  # the diagonal block minus the blocks left of it
                    if tid <= r:
                        s = qd.f32(0.0)
                        for j in range(k0):
                            s += h[k0 + r, j] * h[k0 + tid, j]
                        h[k0 + r, k0 + tid] -= s
                qd.simt.block.sync()
                for col in range(TILE):  # scalar Crout inside it
                    if tid == 0:
                        d = h[k0 + col, k0 + col]
                        for j in range(col):
                            d -= h[k0 + col, k0 + j] * h[k0 + col, k0 + j]
                        h[k0 + col, k0 + col] = qd.sqrt(qd.max(d, qd.f32(EPS)))
                    qd.simt.block.sync()
                    row = col + 1 + tid
                    if row < TILE:
                        inv = qd.f32(1.0) / h[k0 + col, k0 + col]
                        dot = qd.f32(0.0)
                        for j in range(col):
                            dot += h[k0 + row, k0 + j] * h[k0 + col, k0 + j]
                        h[k0 + row, k0 + col] = (h[k0 + row, k0 + col] - dot) * inv
                    qd.simt.block.sync()
                for ib in range(kb + 1, NB):  # the blocks below: update, then solve
                    i0 = ib * TILE
                    for r in range(TILE):
                        s = qd.f32(0.0)
                        for j in range(k0):
                            s += h[i0 + r, j] * h[k0 + tid, j]
                        h[i0 + r, k0 + tid] -= s
                    qd.simt.block.sync()
                    for c in range(TILE):
                        dot = qd.f32(0.0)
                        for j in range(c):
                            dot += h[i0 + tid, k0 + j] * h[k0 + c, k0 + j]
                        h[i0 + tid, k0 + c] = (h[i0 + tid, k0 + c] - dot) / h[k0 + c, k0 + c]
                        qd.simt.block.sync()
            for row in range(N):
                c = tid
                while c <= row:
                    l_block[env, row, c] = h[row, c]
                    c += TILE

    return a, [("baseline", baseline, l_base), ("blocked", blocked, l_block)]


def reconstruction_error(l, a, count=8):
    lo = np.tril(l[:count]).astype(np.float64)
    return float(np.max(np.abs(lo @ lo.transpose(0, 2, 1) - a[:count])))


def time_us(fn, warmup, iters, repeats=5):
    """Per launch: the median over `repeats` of `iters` back-to-back launches and one sync."""
    for _ in range(warmup):
        fn()
    qd.sync()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        qd.sync()
        times.append((time.perf_counter() - t0) * 1e6 / iters)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--envs", type=int, default=4096)
    p.add_argument("--warmup", type=int, default=50)
    p.add_argument("--iters", type=int, default=200)
    p.add_argument("--arch", default="cuda")
    p.add_argument("--cuda-ref", help="binary built from chol_shared.cu")
    args = p.parse_args()
    if args.arch == "cpu":
        qd.init(arch=qd.cpu, cpu_simt=True)
    else:
        qd.init(arch=getattr(qd, args.arch))
    rng = np.random.default_rng(42)
    r = rng.standard_normal((args.envs, N, N)).astype(np.float32)
    a_np = np.einsum("bij,bik->bjk", r, r) + np.eye(N, dtype=np.float32)
    a, kernels = build(args.envs)
    a.from_numpy(a_np)
    ref = {}
    if args.cuda_ref:
        out = subprocess.run([args.cuda_ref, str(args.envs), str(args.warmup), str(args.iters)],
                             capture_output=True, text=True, check=True).stdout
        ref = {m.group(1): float(m.group(2)) for m in re.finditer(r"(\w+) ([\d.]+) us", out)}
    print(f"{args.envs} Cholesky factorizations of {N}x{N}, f32, {qd.__name__} {getattr(qd, '__version__', '')}")
    print(f"{'kernel':<10} {'time (us)':>10} {'nvcc (us)':>10} {'vs nvcc':>8} {'max err':>9}")
    for name, kernel, l_field in kernels:
        kernel()
        qd.sync()
        err = reconstruction_error(l_field.to_numpy(), a_np)
        assert err < 1e-2 * float(np.abs(a_np[:8]).max()), (name, err)
        t = time_us(kernel, args.warmup, args.iters)
        nv = ref.get(name)
        ratio = f"{t / nv:8.2f}" if nv else f"{'-':>8}"
        nvs = f"{nv:10.1f}" if nv else f"{'-':>10}"
        print(f"{name:<10} {t:10.1f} {nvs} {ratio} {err:9.2e}")


if __name__ == "__main__":
    main()
