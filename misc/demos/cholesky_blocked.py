"""Batched Cholesky factorization of many small SPD matrices, three ways:

  baseline  scalar Cholesky-Crout, 64 threads per matrix, the matrix in shared memory
            (qd.simt.block.SharedArray): for each column, thread 0 computes the diagonal
            element, then the threads compute the column's rows below it in parallel, block
            barriers between the steps;
  crout16   left-looking (Crout) scalar Cholesky, 16 threads per matrix, the matrix in shared
            memory;
  tile16    blocked Cholesky on 16x16 register tiles (qd.simt.Tile16x16), 16 threads per
            matrix, no shared memory: diagonal blocks factored in registers, off-diagonal blocks
            solved against them, updates as outer products of columns read back from L.

Each result is checked by reconstruction (tril(L) @ tril(L).T against A); the table gives the
time per factorization of the whole batch and the speed-up over the baseline.

    python misc/demos/cholesky_blocked.py [--n 92] [--n-envs 4096] [--num-warmup 50]
        [--num-iters 200] [--arch gpu|cuda|vulkan|cpu] [--cuda-ref PATH] [--torch]

--cuda-ref runs a binary built from the same tile algorithm hand-written in CUDA C (arguments
N ENVS; it prints "block16 <us> us") and prints its time beside ours; --torch times
torch.linalg.cholesky on the same batch. On the CPU the SIMT parts run under the emulation
(qd.init(arch=qd.cpu, cpu_simt=True)); use small sizes there (--n 40 --n-envs 8 --num-iters 2).
"""

import argparse
import re
import subprocess
import sys
import time

import numpy as np

import quadrants as qd

TILE = 16
EPS = 1e-12


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=92, help="matrix size (default 92)")
    p.add_argument("--n-envs", type=int, default=4096, help="matrices in the batch (4096)")
    p.add_argument("--num-warmup", type=int, default=50, help="untimed runs first (50)")
    p.add_argument("--num-iters", type=int, default=200, help="timed runs (200)")
    p.add_argument("--arch", default="gpu", help="gpu (default), cuda, vulkan or cpu")
    p.add_argument("--cuda-ref", help="binary of the hand-written CUDA tile16 Cholesky")
    p.add_argument("--torch", action="store_true", help="also time torch.linalg.cholesky")
    return p.parse_args(argv)


def build(n, n_envs):
    """The fields and the three kernels for n x n matrices, n_envs of them."""
    n_blocks = (n + TILE - 1) // TILE
    a_field = qd.field(dtype=qd.f32, shape=(n_envs, n, n))
    l_base = qd.field(dtype=qd.f32, shape=(n_envs, n, n))
    l_crout = qd.field(dtype=qd.f32, shape=(n_envs, n, n))
    l_tile = qd.field(dtype=qd.f32, shape=(n_envs, n, n))

    @qd.kernel
    def chol_baseline():
        qd.loop_config(name="chol_baseline", block_dim=64)
        for idx in range(n_envs * 64):
            env = idx // 64
            tid = idx % 64
            h = qd.simt.block.SharedArray((n, n + 1), qd.f32)
            row = tid
            while row < n:
                for c in range(n):
                    h[row, c] = a_field[env, row, c]
                row += 64
            qd.simt.block.sync()
            for j in range(n):
                # column j of L from the columns before it (Crout): thread 0 the diagonal,
                # then every thread its rows below it
                if tid == 0:
                    d = h[j, j]
                    for k in range(j):
                        d -= h[j, k] * h[j, k]
                    h[j, j] = qd.sqrt(qd.max(d, qd.f32(EPS)))
                qd.simt.block.sync()
                inv = qd.f32(1.0) / h[j, j]
                i = j + 1 + tid
                while i < n:
                    s = h[i, j]
                    for k in range(j):
                        s -= h[i, k] * h[j, k]
                    h[i, j] = s * inv
                    i += 64
                qd.simt.block.sync()
            row = tid
            while row < n:
                for c in range(row + 1):
                    l_base[env, row, c] = h[row, c]
                row += 64

    @qd.kernel
    def chol_crout16():
        qd.loop_config(name="chol_crout16", block_dim=TILE)
        for idx in range(n_envs * TILE):
            env = idx // TILE
            tid = idx % TILE
            h = qd.simt.block.SharedArray((n, n + 1), qd.f32)
            row = tid
            while row < n:
                for c in range(row + 1):
                    h[row, c] = a_field[env, row, c]
                row += TILE
            qd.simt.block.sync()
            for j in range(n):
                i = j + tid
                while i < n:
                    s = h[i, j]
                    for k in range(j):
                        s -= h[i, k] * h[j, k]
                    h[i, j] = s
                    i += TILE
                qd.simt.block.sync()
                d = qd.sqrt(qd.max(h[j, j], qd.f32(EPS)))
                inv = qd.f32(1.0) / d
                i = j + 1 + tid
                while i < n:
                    h[i, j] = h[i, j] * inv
                    i += TILE
                qd.simt.block.sync()  # every thread has read the pivot
                if tid == 0:
                    h[j, j] = d
                qd.simt.block.sync()
            row = tid
            while row < n:
                for c in range(row + 1):
                    l_crout[env, row, c] = h[row, c]
                row += TILE

    @qd.kernel
    def chol_tile16():
        qd.loop_config(name="chol_tile16", block_dim=TILE)
        for idx in range(n_envs * TILE):
            env = idx // TILE
            for kb in range(n_blocks):
                k0 = kb * TILE
                k1 = qd.min(k0 + TILE, n)
                l_kk = qd.simt.Tile16x16.eye(dtype=qd.f32)
                l_kk[:] = a_field[env, k0:k1, k0:k1]
                for jb in range(kb):
                    j0 = jb * TILE
                    for t in range(TILE):
                        v = l_tile[env, k0:k1, j0 + t]
                        l_kk -= qd.outer(v, v)
                l_kk.cholesky_(qd.f32(EPS))
                l_tile[env, k0:k1, k0:k1] = l_kk
                for ib in range(kb + 1, n_blocks):
                    i0 = ib * TILE
                    i1 = qd.min(i0 + TILE, n)
                    l_ik = qd.simt.Tile16x16.zeros(dtype=qd.f32)
                    l_ik[:] = a_field[env, i0:i1, k0:k1]
                    for jb in range(kb):
                        j0 = jb * TILE
                        for t in range(TILE):
                            v_own = l_tile[env, i0:i1, j0 + t]
                            v_diag = l_tile[env, k0:k1, j0 + t]
                            l_ik -= qd.outer(v_own, v_diag)
                    l_kk.solve_triangular_(l_ik)
                    l_tile[env, i0:i1, k0:k1] = l_ik

    kernels = [("baseline", 64, chol_baseline, l_base), ("crout16", TILE, chol_crout16, l_crout),
               ("tile16", TILE, chol_tile16, l_tile)]
    return a_field, kernels


def spd_batch(n, n_envs, seed=42):
    rng = np.random.default_rng(seed)
    r = rng.standard_normal((n_envs, n, n)).astype(np.float32)
    return (np.einsum("bij,bik->bjk", r, r) + np.eye(n, dtype=np.float32)).astype(np.float32)


def reconstruction_error(l, a):
    """Largest |tril(L) tril(L)^T - A| relative to max |A| (inf when L holds NaN or inf)."""
    lt = np.tril(l.astype(np.float64))
    if not np.isfinite(lt).all():
        return float("inf")
    return float(np.abs(lt @ lt.transpose(0, 2, 1) - a).max() / np.abs(a).max())


def time_us(fn, warmup, iters):
    for _ in range(warmup):
        fn()
    qd.sync()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    qd.sync()
    return (time.perf_counter() - t0) / max(iters, 1) * 1e6


def cuda_reference_us(path, n, n_envs):
    out = subprocess.run([path, str(n), str(n_envs)], capture_output=True, text=True,
                         check=True).stdout
    match = re.search(r"block16\s+([0-9.]+)\s*us", out)
    return float(match.group(1)) if match else None


def torch_us(a, warmup, iters):
    import torch

    t = torch.from_numpy(a).cuda()
    for _ in range(warmup):
        torch.linalg.cholesky(t)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(iters):
        torch.linalg.cholesky(t)
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / max(iters, 1) * 1e6


def run(args):
    """Builds, checks and times the kernels; returns the rows of the table."""
    arch = {"gpu": qd.gpu, "cuda": qd.cuda, "vulkan": qd.vulkan, "cpu": qd.cpu}[args.arch]
    if arch == qd.cpu:
        qd.init(arch=arch, cpu_simt=True)  # the SIMT parts under the emulation
    else:
        qd.init(arch=arch)  # as the reference package takes it too
    a = spd_batch(args.n, args.n_envs)
    a_field, kernels = build(args.n, args.n_envs)
    a_field.from_numpy(a)
    a64 = a.astype(np.float64)
    rows = []
    for name, threads, kernel, out in kernels:
        kernel()
        qd.sync()
        err = reconstruction_error(out.to_numpy(), a64)
        us = time_us(kernel, args.num_warmup, args.num_iters)
        rows.append((name, threads, us, err))
    return rows


def main(argv=None):
    args = parse_args(argv)
    rows = run(args)
    base = rows[0][2]
    print(f"Cholesky of {args.n_envs} SPD matrices of {args.n}x{args.n}, float32, "
          f"arch={qd.cfg.arch.name}")
    print(f"{'kernel':<24}{'threads':>8}{'time (us)':>12}{'speed-up':>10}{'max rel err':>14}")
    ok = True
    for name, threads, us, err in rows:
        ok &= err < 1e-3
        print(f"{name:<24}{threads:>8}{us:>12.1f}{base / us:>10.2f}{err:>14.2e}")
    if args.cuda_ref:
        ref = cuda_reference_us(args.cuda_ref, args.n, args.n_envs)
        if ref:
            print(f"{'CUDA C tile16 (nvcc)':<24}{16:>8}{ref:>12.1f}{base / ref:>10.2f}")
            print(f"tile16 / CUDA C tile16: {rows[-1][2] / ref:.2f}x")
    if args.torch:
        try:
            t = torch_us(spd_batch(args.n, args.n_envs), args.num_warmup, args.num_iters)
            print(f"{'torch.linalg.cholesky':<24}{'':>8}{t:>12.1f}{base / t:>10.2f}")
        except Exception as exc:  # torch missing or without CUDA
            print("torch baseline skipped:", exc)
    if not ok:
        print("FAILED: a factorization is wrong (error above 1e-3, NaN or inf)")
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
