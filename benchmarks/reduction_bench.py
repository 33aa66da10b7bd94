"""Reductions through an atomic on one address, against NumPy.

Each case reduces 2**24 elements (--n) with a kernel whose parallel loop updates one address
in every iteration, the way users write reductions, and compares with the NumPy call computing
the same thing (on a GPU arch: the same torch call on the device). Times are medians of --runs
timings of --batch calls each (qd.sync() / torch.cuda.synchronize() after the batch); GB/s counts
the bytes of the input read once. Results are checked against the NumPy value (exact for
integers, within a tolerance scaled by n for floats).

  sum_field     s[None] += x[i]             (0-d f32 field, x an f32 ndarray)   vs np.sum
  sum_ndarray   out[0] += x[i]              (f32 ndarray element)               vs np.sum
  sum_local     acc = 0.0; acc += x[i]; return acc  (kernel-scope variable)     vs np.sum
  max_field     qd.atomic_max(m[None], x[i])                                    vs np.max
  sum_i32       t[None] += k[i]             (i32 field and ndarray)             vs np.sum

    OPENBLAS_NUM_THREADS=1 python benchmarks/reduction_bench.py [--arch cpu] [--n N] [--runs R]
    python benchmarks/reduction_bench.py --arch cuda     # beside torch.sum / torch.max
"""

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import quadrants as qd  # noqa: E402


def median_ms(fn, runs, batch, sync):
    fn()
    sync()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        for _ in range(batch):
            fn()
        sync()
        times.append((time.perf_counter() - t0) * 1e3 / batch)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="cpu")
    parser.add_argument("--n", type=int, default=1 << 24)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--batch", type=int, default=0, help="calls per timing (default: 1 on the CPU, 20 on a GPU)")
    args = parser.parse_args()
    gpu = args.arch != "cpu"
    batch = args.batch or (20 if gpu else 1)
    qd.init(arch=getattr(qd, args.arch))
    n = args.n
    rng = np.random.default_rng(0)
    xs = rng.random(n, dtype=np.float32)
    ks = rng.integers(-1000, 1000, n, dtype=np.int32)
    x = qd.ndarray(qd.f32, shape=(n,))
    x.from_numpy(xs)
    k = qd.ndarray(qd.i32, shape=(n,))
    k.from_numpy(ks)
    out = qd.ndarray(qd.f32, shape=(1,))
    s = qd.field(qd.f32, shape=())
    m = qd.field(qd.f32, shape=())
    t = qd.field(qd.i32, shape=())

    @qd.kernel
    def sum_field(x: qd.types.ndarray(dtype=qd.f32, ndim=1)):
        for i in range(x.shape[0]):
            s[None] += x[i]

    @qd.kernel
    def sum_ndarray(x: qd.types.ndarray(dtype=qd.f32, ndim=1), out: qd.types.ndarray(dtype=qd.f32, ndim=1)):
        for i in range(x.shape[0]):
            out[0] += x[i]

    @qd.kernel
    def sum_local(x: qd.types.ndarray(dtype=qd.f32, ndim=1)) -> qd.f32:
        acc = 0.0
        for i in range(x.shape[0]):
            acc += x[i]
        return acc

    @qd.kernel
    def max_field(x: qd.types.ndarray(dtype=qd.f32, ndim=1)):
        for i in range(x.shape[0]):
            qd.atomic_max(m[None], x[i])

    @qd.kernel
    def sum_i32(k: qd.types.ndarray(dtype=qd.i32, ndim=1)):
        for i in range(k.shape[0]):
            t[None] += k[i]

    def run(kernel, *a):
        return kernel(*a)

    peer_name, peer_sum, peer_max, peer_isum, peer_sync = "numpy", np.sum, np.max, np.sum, lambda: None
    px, pk = xs, ks
    if gpu:
        import torch

        peer_name, peer_sum, peer_max, peer_isum = "torch", torch.sum, torch.max, torch.sum
        px, pk = torch.from_numpy(xs).cuda(), torch.from_numpy(ks).cuda()
        peer_sync = torch.cuda.synchronize

    def close(got, expect):
        # f32 accumulation in any order: a relative error far below 1e-4 at these sizes
        assert abs(float(got) - expect) <= 1e-4 * abs(expect) + 1e-3, (got, expect)

    ref = float(np.sum(xs, dtype=np.float64))
    cases = []

    s[None] = 0
    run(sum_field, x)
    close(s[None], ref)
    cases.append(("sum_field", lambda: run(sum_field, x), lambda: peer_sum(px), 4 * n))

    out.from_numpy(np.zeros(1, np.float32))
    run(sum_ndarray, x, out)
    close(out.to_numpy()[0], ref)
    cases.append(("sum_ndarray", lambda: run(sum_ndarray, x, out), lambda: peer_sum(px), 4 * n))

    got = run(sum_local, x)
    close(got, ref)
    cases.append(("sum_local", lambda: run(sum_local, x), lambda: peer_sum(px), 4 * n))

    m[None] = -1.0
    run(max_field, x)
    assert m[None] == np.max(xs)
    cases.append(("max_field", lambda: run(max_field, x), lambda: peer_max(px), 4 * n))

    t[None] = 0
    run(sum_i32, k)
    expect = np.sum(ks, dtype=np.int32)  # wraps like the kernel
    assert t[None] == expect, (t[None], expect)
    cases.append(("sum_i32", lambda: run(sum_i32, k), lambda: peer_isum(pk), 4 * n))

    print(f"arch={args.arch} n={n} runs={args.runs} batch={batch} (medians; GB/s of input read)")
    head = f"{peer_name} ms", f"{peer_name} GB/s", f"ours/{peer_name} speed"
    print(f"{'case':<12} {'ours ms':>9} {'ours GB/s':>10} {head[0]:>9} {head[1]:>11} {head[2]:>17}")
    for name, ours, theirs, nbytes in cases:
        a = median_ms(ours, args.runs, batch, qd.sync)
        b = median_ms(theirs, args.runs, batch, peer_sync)
        print(f"{name:<12} {a:9.3f} {nbytes / a / 1e6:10.2f} {b:9.3f} {nbytes / b / 1e6:11.2f} {b / a:17.2f}")


if __name__ == "__main__":
    main()
