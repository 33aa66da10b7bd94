"""Per-thread 3x3 SVD: qd.svd of 2**20 f32 matrices in a qd.ndarray of mat3, the factors
written to three more (device time per call: the median over --runs of --batch calls queued back
to back then synchronized, divided by --batch). Prints matrices per second and the largest
reconstruction error |U S V^T - A| over the batch. Runs unchanged under the reference package
(put it first on PYTHONPATH) to compare the two on one machine.

    python benchmarks/svd_bench.py [--arch cpu|cuda] [--n N] [--runs R] [--batch B]
"""

import argparse
import statistics
import time

import numpy as np

import quadrants as qd


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--arch", choices=["cpu", "cuda"], default="cuda")
    ap.add_argument("--n", type=int, default=1 << 20)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--batch", type=int, default=20)
    args = ap.parse_args()
    qd.init(arch=getattr(qd, args.arch), offline_cache=False)
    n = args.n
    mat = qd.types.ndarray(dtype=qd.math.mat3, ndim=1)

    @qd.kernel
    def svd(a: mat, u: mat, s: mat, v: mat):
        for i in range(a.shape[0]):
            uu, ss, vv = qd.svd(a[i])
            u[i] = uu
            s[i] = ss
            v[i] = vv

    rng = np.random.default_rng(0)
    host = rng.standard_normal((n, 3, 3)).astype(np.float32)
    a, u, s, v = (qd.ndarray(qd.math.mat3, shape=(n,)) for _ in range(4))
    a.from_numpy(host)
    svd(a, u, s, v)
    qd.sync()
    un, sn, vn = u.to_numpy().astype(np.float64), s.to_numpy(), v.to_numpy().astype(np.float64)
    err = np.abs(un @ sn.astype(np.float64) @ np.swapaxes(vn, 1, 2) - host).max()
    times = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        for _ in range(args.batch):
            svd(a, u, s, v)
        qd.sync()
        times.append((time.perf_counter() - t0) / args.batch)
    t = statistics.median(times)
    print(f"quadrants {getattr(qd, '__version__', '?')} from {qd.__file__}")
    print(f"svd3 f32 {args.arch} n={n}: {t * 1e6:.1f} us per call, {n / t / 1e6:.0f} M matrices/s, "
          f"max |U S V^T - A| = {err:.2e}")


if __name__ == "__main__":
    main()
