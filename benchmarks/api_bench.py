"""Three workloads written with the public API only, so that the same file times this package and
the reference (put it first on PYTHONPATH) on one machine:

  saxpy      y = a * x + y over 2**26 f32 qd.ndarrays: time per call (--batch calls queued, then
             qd.sync(); median of --runs), and the bandwidth it implies (12 bytes per element);
  launch     host time of one call of the same kernel on 256 elements (--calls calls, then one
             qd.sync(); median of --runs): what a program pays per launch;
  reduce     s[None] += x[i] over 2**24 f32 (a 0-d field, x an ndarray): time per call and the
             bandwidth of reading x once, the result checked against NumPy.

With --torch (CUDA only) the same saxpy and sum run through torch beside them. Prints one JSON
object.

    python benchmarks/api_bench.py [--arch cuda|cpu] [--torch]
"""

import argparse
import json
import statistics
import time

import numpy as np

import quadrants as qd


def median_s(fn, sync, runs, batch):
    fn()
    sync()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        for _ in range(batch):
            fn()
        sync()
        times.append((time.perf_counter() - t0) / batch)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--batch", type=int, default=20)
    ap.add_argument("--calls", type=int, default=5000)
    ap.add_argument("--torch", action="store_true")
    args = ap.parse_args()
    qd.init(arch=getattr(qd, args.arch), offline_cache=False)
    res = {"package": getattr(qd, "__version__", "?"), "arch": args.arch}

    @qd.kernel
    def saxpy(a: qd.f32, x: qd.types.ndarray(dtype=qd.f32, ndim=1),
              y: qd.types.ndarray(dtype=qd.f32, ndim=1)):
        for i in range(x.shape[0]):
            y[i] = a * x[i] + y[i]

    n = 1 << 26
    x = qd.ndarray(qd.f32, n)
    y = qd.ndarray(qd.f32, n)
    x.from_numpy(np.ones(n, dtype=np.float32))
    t = median_s(lambda: saxpy(2.0, x, y), qd.sync, args.runs, args.batch)
    res["saxpy_us"] = t * 1e6
    res["saxpy_GBps"] = 12 * n / t / 1e9

    xs = qd.ndarray(qd.f32, 256)
    ys = qd.ndarray(qd.f32, 256)
    res["launch_us"] = median_s(lambda: saxpy(2.0, xs, ys), qd.sync, args.runs, args.calls) * 1e6

    m = 1 << 24
    s = qd.field(qd.f32, shape=())
    xr = qd.ndarray(qd.f32, m)
    values = np.random.default_rng(1).random(m, dtype=np.float32)
    xr.from_numpy(values)

    @qd.kernel
    def total(x: qd.types.ndarray(dtype=qd.f32, ndim=1)):
        for i in range(x.shape[0]):
            s[None] += x[i]

    t = median_s(lambda: total(xr), qd.sync, args.runs, args.batch)
    s[None] = 0.0
    total(xr)
    got, want = float(s[None]), float(values.astype(np.float64).sum())
    assert abs(got - want) <= 1e-3 * want, (got, want)
    res["reduce_us"] = t * 1e6
    res["reduce_GBps"] = 4 * m / t / 1e9

    if args.torch and args.arch == "cuda":
        import torch

        tx = torch.ones(n, device="cuda")
        ty = torch.zeros(n, device="cuda")
        t = median_s(lambda: ty.add_(tx, alpha=2.0), torch.cuda.synchronize, args.runs,
                     args.batch)
        res["torch_saxpy_GBps"] = 12 * n / t / 1e9
        tr = torch.from_numpy(values).cuda()
        t = median_s(lambda: tr.sum(), torch.cuda.synchronize, args.runs, args.batch)
        res["torch_sum_GBps"] = 4 * m / t / 1e9
    print(json.dumps(res))


if __name__ == "__main__":
    main()
