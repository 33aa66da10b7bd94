"""The Vulkan backend beside the CUDA backend on the same GPU, each in its own process.

  saxpy        y = a * x + y over 2**26 float32 in qd.ndarrays: device time per call (Vulkan:
               the kernel profiler's timestamp queries around the dispatch; CUDA: CUDA events
               from torch, else the kernel profiler's synchronized wall clock) and the bandwidth it implies
               (12 bytes per element); also the wall-clock time per call of back-to-back calls
  launch       host time per call of a kernel with two ndarrays and a scalar over one element
               (median of 9 rounds of 2000 calls): on Vulkan every call records, submits and
               waits for its command buffer; on CUDA the launch is asynchronous
  compile      cold compile of compile_bench.py's kernels (offline cache off), median per kernel

Prints one table; --json PATH writes the numbers. Archs without a device are skipped.

    python benchmarks/vulkan_bench.py [--json PATH] [--n LOG2] [--archs vulkan,cuda]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def cuda_event_us(fn, fallback):
    """Median device time of fn() from CUDA events (torch), or `fallback` without torch."""
    try:
        import torch
    except ImportError:
        return fallback
    times = []
    for _ in range(50):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)


def measure(arch, log2n, grid=0):
    """The figures of one arch, in this process."""
    import numpy as np

    import quadrants as qd
    from quadrants import _core

    sys.path.insert(0, HERE)
    import compile_bench

    if not getattr(_core, f"{arch}_available")():
        return None
    qd.init(arch=getattr(qd, arch), offline_cache=False, kernel_profiler=True,
            saturating_grid_dim=grid)

    @qd.kernel
    def saxpy(a: qd.f32, x: qd.types.ndarray(qd.f32, 1), y: qd.types.ndarray(qd.f32, 1)):
        for i in range(x.shape[0]):
            y[i] = a * x[i] + y[i]

    n = 1 << log2n
    x = qd.ndarray(qd.f32, n)
    y = qd.ndarray(qd.f32, n)
    x.from_numpy(np.ones(n, np.float32))
    y.from_numpy(np.zeros(n, np.float32))
    for _ in range(5):
        saxpy(2.0, x, y)
    qd.sync()
    qd.profiler.clear_kernel_profiler_info()
    for _ in range(50):
        saxpy(2.0, x, y)
    qd.sync()
    records = _core.kernel_profiler_records()
    device_us = statistics.median(ms * 1e3 for _, ms in records) if records else float("nan")
    qd.init(arch=getattr(qd, arch), offline_cache=False, saturating_grid_dim=grid)  # no profiler
    xs = qd.ndarray(qd.f32, n)
    ys = qd.ndarray(qd.f32, n)
    saxpy(2.0, xs, ys)
    qd.sync()
    if arch == "cuda":
        device_us = cuda_event_us(lambda: saxpy(2.0, xs, ys), device_us)
    t0 = time.perf_counter()
    for _ in range(20):
        saxpy(2.0, xs, ys)
    qd.sync()
    wall_us = (time.perf_counter() - t0) / 20 * 1e6
    check = ys.to_numpy()
    assert np.all(check == 0.0), "saxpy on zeros"

    one_x = qd.ndarray(qd.f32, 1)
    one_y = qd.ndarray(qd.f32, 1)
    saxpy(1.0, one_x, one_y)
    qd.sync()
    rounds = []
    for _ in range(9):
        t0 = time.perf_counter()
        for _ in range(2000):
            saxpy(1.0, one_x, one_y)
        qd.sync()
        rounds.append((time.perf_counter() - t0) / 2000 * 1e6)
    launch_us = statistics.median(rounds)

    compile_ms = []
    for i in range(8):
        kernel = compile_bench.make(100 + i)
        a = qd.ndarray(qd.f32, 64)
        b = qd.ndarray(qd.f32, 64)
        t0 = time.perf_counter()
        kernel(a, b, 0.5)
        qd.sync()
        compile_ms.append((time.perf_counter() - t0) * 1e3)
    return {
        "saxpy_device_us": device_us,
        "saxpy_gbs": 12.0 * n / (device_us * 1e-6) / 1e9,
        "saxpy_wall_us": wall_us,
        "launch_us": launch_us,
        "compile_ms": statistics.median(compile_ms),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", help="write the numbers here")
    parser.add_argument("--n", type=int, default=26, help="log2 of the saxpy size")
    parser.add_argument("--archs", default="vulkan,cuda")
    parser.add_argument("--grid", type=int, default=0,
                        help="saturating_grid_dim: workgroups of every parallel loop (0: default)")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one, args.n, args.grid)))
        return 0
    results = {}
    for arch in args.archs.split(","):
        proc = subprocess.run(
            [sys.executable, __file__, "--one", arch, "--n", str(args.n), "--grid", str(args.grid)],
            capture_output=True, text=True,
        )
        lines = proc.stdout.strip().splitlines()
        if proc.returncode != 0 or not lines:
            print(f"{arch}: failed\n{proc.stderr[-2000:]}", file=sys.stderr)
            continue
        results[arch] = json.loads(lines[-1])
    print(f"{'':10} {'saxpy us':>10} {'GB/s':>8} {'wall us':>9} {'launch us':>10} {'compile ms':>11}")
    for arch, r in results.items():
        if r is None:
            print(f"{arch:10} no device")
            continue
        print(f"{arch:10} {r['saxpy_device_us']:10.1f} {r['saxpy_gbs']:8.0f} "
              f"{r['saxpy_wall_us']:9.1f} {r['launch_us']:10.2f} {r['compile_ms']:11.1f}")
    if "vulkan" in results and "cuda" in results and results["vulkan"] and results["cuda"]:
        ratio = results["vulkan"]["saxpy_gbs"] / results["cuda"]["saxpy_gbs"]
        print(f"saxpy bandwidth, Vulkan / CUDA: {ratio:.3f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
