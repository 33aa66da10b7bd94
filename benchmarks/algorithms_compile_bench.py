"""Cold compile time of kernels holding one qd.algorithms op, on the CPU.

Each op is compiled once in a fresh process with the offline cache off (the first compile of
the process pays for nothing else: the runtime is started before the clock starts), for the
plain CPU and for cpu_simt=True (the block form of the GPUs, which unrolls more).

    python benchmarks/algorithms_compile_bench.py [--reps N]

prints, per op and mode, the median over N processes of the time of the first call (compile
and one run on 1000 elements) in ms.
"""

import argparse
import json
import statistics
import subprocess
import sys
import time

def child(op, simt):
    """One compile in this process; prints its time in ms."""
    import numpy as np

    import quadrants as qd

    qd.init(arch=qd.cpu, cpu_simt=simt, offline_cache=False)
    A = qd.algorithms
    nd1, nd0 = qd.types.ndarray(ndim=1), qd.types.ndarray(ndim=0)
    N = 1000

    @qd.kernel
    def start(x: nd1):
        for i in range(1):
            x[i] = 1.0

    start(np.zeros(1, np.float32))  # the runtime's first-kernel costs, before the clock

    @qd.kernel
    def ksort(k: nd1, tk: nd1, v: nd1, tv: nd1, s: nd1, n: nd0):
        A.sort(k, tk, v, tv, s, n, qd.f32, True, 32, 2)

    @qd.kernel
    def kred(x: nd1, o: nd1, s: nd1, c: nd1):
        A.reduce_add(x, o, s, c[0], qd.f32, 2)

    @qd.kernel
    def kscan(x: nd1, o: nd1, s: nd1, c: nd1):
        A.exclusive_scan_add(x, o, s, c[0], qd.i32, 2)

    @qd.kernel
    def ksel(x: nd1, f: nd1, o: nd1, no: nd1, s: nd1, c: nd1):
        A.select(x, f, o, no, s, c[0], 2)

    k = np.random.rand(N).astype(np.float32)
    cnt = np.array([N], np.int32)
    t0 = time.perf_counter()
    if op == "sort":
        ksort(k, np.empty_like(k), np.arange(N, dtype=np.int32), np.empty(N, np.int32),
              np.zeros(A.sort_scratch_slots(N, 2), np.uint32), np.array(N, np.int32))
    elif op == "reduce":
        kred(k, np.zeros(1, np.float32), np.zeros(64, np.uint32), cnt)
    elif op == "scan":
        kscan(np.arange(N, dtype=np.int32), np.zeros(N, np.int32), np.zeros(64, np.uint32), cnt)
    else:
        ksel(k, np.ones(N, np.int32), np.zeros(N, np.float32), np.zeros(1, np.int32),
             np.zeros(A.select_scratch_slots(N), np.uint32), cnt)
    print(json.dumps((time.perf_counter() - t0) * 1e3))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--child", nargs=2, metavar=("OP", "MODE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], args.child[1] == "simt")
        return
    for mode in ("plain", "simt"):
        for op in ("reduce", "scan", "select", "sort"):
            ms = []
            for _ in range(args.reps):
                out = subprocess.run([sys.executable, __file__, "--child", op, mode],
                                     check=True, capture_output=True, text=True).stdout
                ms.append(json.loads(out.strip().splitlines()[-1]))
            print(f"{op:8s} {mode:6s} {statistics.median(ms):8.1f} ms")


if __name__ == "__main__":
    main()
