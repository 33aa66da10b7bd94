"""qd.algorithms beside what a user would call instead, in one process.

On a GPU (default when CUDA is present): 16M elements (--log2 24) in qd.ndarrays, device time per
call (median of CUDA events around 10 calls queued back to back on the default stream that
quadrants launches on) of
  reduce_add f32, exclusive_scan_add i32, sort i32 keys, sort f32 keys with i32 values, select
  f32, reduce_by_key_add i32 (runs of 4 on average)
beside torch (sum, cumsum, sort), CuPy (cumsum, sort) and the copy bandwidth floor of each op
(the bytes it must read and write once, at torch's measured copy bandwidth).
On the CPU (--arch cpu): 1M elements, wall time per call (median), beside NumPy (np.sum,
np.cumsum, np.sort kind="stable", boolean-mask compaction).

    python benchmarks/algorithms_bench.py [--arch cpu|cuda] [--log2 N] [--json PATH]
"""

import argparse
import json
import statistics
import time

import numpy as np

import quadrants as qd

A = qd.algorithms


def depth_for(n):
    d = 1
    while 256**d < n:
        d += 1
    return d


def wall_us(fn, warm=3, iters=15):
    for _ in range(warm):
        fn()
    qd.sync()
    ts = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        qd.sync()
        ts.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(ts)


def device_us(fn, warm=5, iters=30, reps=10):
    """Device time per call: CUDA events around `reps` calls queued back to back (so the time
    the host takes to launch them overlaps the GPU's work), median over `iters`."""
    import torch

    for _ in range(warm):
        fn()
    qd.sync()
    torch.cuda.synchronize()
    ts = []
    for _ in range(iters):
        st, en = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        st.record()
        for _ in range(reps):
            fn()
        en.record()
        en.synchronize()
        ts.append(st.elapsed_time(en) * 1e3 / reps)
    return statistics.median(ts)


def make_kernels(D):
    nd = qd.types.ndarray

    @qd.kernel
    def k_reduce(a: nd(qd.f32, 1), o: nd(qd.f32, 1), s: nd(qd.u32, 1), c: nd(qd.i32, 1)):
        A.reduce_add(a, o, s, c[0], qd.f32, D)

    @qd.kernel
    def k_scan(a: nd(qd.i32, 1), o: nd(qd.i32, 1), s: nd(qd.u32, 1), c: nd(qd.i32, 1)):
        A.exclusive_scan_add(a, o, s, c[0], qd.i32, D)

    @qd.kernel
    def k_sort(k: nd(qd.i32, 1), tk: nd(qd.i32, 1), s: nd(qd.u32, 1), n: nd(qd.i32, 0)):
        A.sort(k, tk, k, tk, s, n, qd.i32, False, 32, D)

    @qd.kernel
    def k_sort_kv(k: nd(qd.f32, 1), tk: nd(qd.f32, 1), v: nd(qd.i32, 1), tv: nd(qd.i32, 1),
                  s: nd(qd.u32, 1), n: nd(qd.i32, 0)):
        A.sort(k, tk, v, tv, s, n, qd.f32, True, 32, D)

    @qd.kernel
    def k_select(a: nd(qd.f32, 1), f: nd(qd.i32, 1), o: nd(qd.f32, 1), no: nd(qd.i32, 1),
                 s: nd(qd.u32, 1), c: nd(qd.i32, 1)):
        A.select(a, f, o, no, s, c[0], D)

    @qd.kernel
    def k_rbk(k: nd(qd.i32, 1), v: nd(qd.i32, 1), ko: nd(qd.i32, 1), vo: nd(qd.i32, 1),
              nr: nd(qd.i32, 1), s: nd(qd.u32, 1), c: nd(qd.i32, 1)):
        A.reduce_by_key_add(k, v, ko, vo, nr, s, c[0], qd.i32, D)

    @qd.kernel
    def k_copy_i32(a: nd(qd.i32, 1), b: nd(qd.i32, 1)):
        for i in range(a.shape[0]):
            b[i] = a[i]

    @qd.kernel
    def k_copy_f32_i32(a: nd(qd.f32, 1), b: nd(qd.f32, 1), c: nd(qd.i32, 1), d: nd(qd.i32, 1)):
        for i in range(a.shape[0]):
            b[i] = a[i]
            d[i] = c[i]

    return k_reduce, k_scan, k_sort, k_sort_kv, k_select, k_rbk, k_copy_i32, k_copy_f32_i32


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", choices=["cpu", "cuda"])
    ap.add_argument("--log2", type=int)
    ap.add_argument("--json")
    args = ap.parse_args()
    arch = args.arch or ("cuda" if qd._core.cuda_available() else "cpu")
    qd.init(arch=getattr(qd, arch))
    n = 1 << (args.log2 or (24 if arch == "cuda" else 20))
    D = depth_for(n)
    timer = device_us if arch == "cuda" else wall_us
    rng = np.random.default_rng(1)

    def nda(x):
        dt = {np.dtype(np.float32): qd.f32, np.dtype(np.int32): qd.i32,
              np.dtype(np.uint32): qd.u32}[x.dtype]
        a = qd.ndarray(dt, shape=x.shape)
        a.from_numpy(x)
        return a

    f32 = rng.standard_normal(n).astype(np.float32)
    i32 = rng.integers(0, 2**31 - 1, n, dtype=np.int32)
    small = rng.integers(0, 8, n, dtype=np.int32)
    flags = rng.integers(0, 2, n, dtype=np.int32)
    rk = np.repeat(np.arange(n // 4 + 1, dtype=np.int32), 4)[:n]
    count = nda(np.array([n], np.int32))
    n0 = qd.ndarray(qd.i32, shape=())
    n0.fill(n)
    k_reduce, k_scan, k_sort, k_sort_kv, k_select, k_rbk, k_copy_i32, k_copy_kv = make_kernels(D)

    a_f, a_i, a_s, a_fl, a_rk = nda(f32), nda(i32), nda(small), nda(flags), nda(rk)
    o_f, o_i, o1 = nda(np.zeros(n, np.float32)), nda(np.zeros(n, np.int32)), nda(np.zeros(1, np.float32))
    o1i = nda(np.zeros(1, np.int32))
    s_red = nda(np.zeros(A.reduce_scratch_slots(n, D), np.uint32))
    s_scan = nda(np.zeros(A.exclusive_scan_scratch_slots(n, D), np.uint32))
    s_sort = nda(np.zeros(A.sort_scratch_slots(n, D), np.uint32))
    s_sel = nda(np.zeros(A.select_scratch_slots(n) + 8, np.uint32))
    s_rbk = nda(np.zeros(A.reduce_by_key_scratch_slots(n) + 8, np.uint32))
    keys, tkeys = nda(i32), nda(np.zeros(n, np.int32))
    fkeys, tfkeys = nda(f32), nda(np.zeros(n, np.float32))
    vals, tvals = nda(np.arange(n, dtype=np.int32)), nda(np.zeros(n, np.int32))
    ko, vo = nda(np.zeros(n, np.int32)), nda(np.zeros(n, np.int32))

    # correctness of what is timed
    k_reduce(a_f, o1, s_red, count)
    assert abs(o1.to_numpy()[0] - f32.astype(np.float64).sum()) < 1e-3 * n ** 0.5
    k_scan(a_s, o_i, s_scan, count)
    assert np.array_equal(o_i.to_numpy()[1:], np.cumsum(small)[:-1].astype(np.int32))
    k_sort(keys, tkeys, s_sort, n0)
    assert np.array_equal(keys.to_numpy(), np.sort(i32))

    # sorts run on fresh random keys: each timed call copies them in from a pristine array first
    # (CuPy's sort copies too); the net figure subtracts the copy's own median
    orig_i, orig_f, orig_v = nda(i32), nda(f32), nda(np.arange(n, dtype=np.int32))
    res = {"arch": arch, "n": n, "log256_max_n": D}
    res["qd_reduce_add_f32_us"] = timer(lambda: k_reduce(a_f, o1, s_red, count))
    res["qd_exclusive_scan_add_i32_us"] = timer(lambda: k_scan(a_i, o_i, s_scan, count))
    copy_i = timer(lambda: k_copy_i32(orig_i, keys))
    copy_kv = timer(lambda: k_copy_kv(orig_f, fkeys, orig_v, vals))
    res["qd_copy_then_sort_i32_us"] = timer(
        lambda: (k_copy_i32(orig_i, keys), k_sort(keys, tkeys, s_sort, n0)))
    res["qd_sort_i32_us"] = res["qd_copy_then_sort_i32_us"] - copy_i
    res["qd_copy_then_sort_f32_kv_i32_us"] = timer(
        lambda: (k_copy_kv(orig_f, fkeys, orig_v, vals),
                 k_sort_kv(fkeys, tfkeys, vals, tvals, s_sort, n0)))
    res["qd_sort_f32_kv_i32_us"] = res["qd_copy_then_sort_f32_kv_i32_us"] - copy_kv
    res["qd_select_f32_us"] = timer(lambda: k_select(a_f, a_fl, o_f, o1i, s_sel, count))
    res["qd_reduce_by_key_add_i32_us"] = timer(lambda: k_rbk(a_rk, a_i, ko, vo, o1i, s_rbk, count))

    if arch == "cuda":
        import torch

        tf = torch.from_numpy(f32).cuda()
        ti = torch.from_numpy(i32).cuda()
        res["torch_sum_f32_us"] = device_us(lambda: tf.sum())
        res["torch_cumsum_i32_us"] = device_us(lambda: torch.cumsum(ti, 0, dtype=torch.int32))
        res["torch_sort_i32_us"] = device_us(lambda: torch.sort(ti))
        res["torch_sort_f32_kv_us"] = device_us(lambda: torch.sort(tf))
        tfl = torch.from_numpy(flags).cuda().bool()
        res["torch_masked_select_f32_us"] = device_us(lambda: tf[tfl])
        big = torch.empty(2**28, dtype=torch.float32, device="cuda")
        big2 = torch.empty_like(big)
        bw = 2 * big.numel() * 4 / device_us(lambda: big2.copy_(big)) / 1e3  # GB/s
        res["copy_GBps"] = bw
        res["floor_reduce_us"] = n * 4 / bw / 1e3
        res["floor_scan_us"] = 2 * n * 4 / bw / 1e3
        try:
            import cupy as cp

            ck = cp.asarray(i32)
            res["cupy_sort_i32_us"] = device_us(lambda: cp.sort(ck))
            res["cupy_cumsum_i32_us"] = device_us(lambda: cp.cumsum(ck))
        except Exception as e:  # CuPy is optional
            print("cupy:", e)
    else:
        res["numpy_sum_f32_us"] = wall_us(lambda: f32.sum())
        res["numpy_cumsum_i32_us"] = wall_us(lambda: np.cumsum(i32))
        res["numpy_sort_i32_us"] = wall_us(lambda: np.sort(i32, kind="stable"))
        res["numpy_argsort_f32_us"] = wall_us(lambda: np.argsort(f32, kind="stable"))
        fb = flags.astype(bool)
        res["numpy_mask_select_f32_us"] = wall_us(lambda: f32[fb])

    for k, v in res.items():
        print(f"{k:34s} {v:.1f}" if isinstance(v, float) else f"{k:34s} {v}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
