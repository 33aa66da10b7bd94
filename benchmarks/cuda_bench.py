"""CUDA backend benchmarks, beside what a user would use instead (torch, CuPy), in one process.

  saxpy        y = a * x + y over 2**26 float32 in qd.ndarrays: device time per call (CUDA
               events on the default stream, which quadrants launches on) and the bandwidth it
               implies (12 bytes per element), against torch's y.add_(x, alpha=a)
  compile      cold compile + load of compile_bench.py's kernel: frontend to PTX (core), PTX to cubin
               (driver linker) and module load, medians over distinct kernels
  launch       host time of launching an already-compiled kernel with two ndarrays and a
               scalar (median of 9 alternating rounds of 5000 calls): through the qd.kernel
               object (the normal path), through the compiled DeviceKernel directly, a bare
               cuLaunchKernel loop in C on the same kernel and arguments, CuPy's RawKernel
               of the same saxpy, and a Python function that does nothing, called the same way
               (the part of every Python-side figure that is the interpreter's)

Needs a CUDA device, torch for the timing events (wall-clock timing otherwise) and optionally
CuPy. Prints a table; --json PATH writes the numbers.

    python benchmarks/cuda_bench.py [--json PATH] [--n LOG2] [--sweep]
"""

import argparse
import json
import statistics
import sys
import time

import numpy as np

import compile_bench  # beside this script
import quadrants as qd
from quadrants import _core
from quadrants._core import _testing


@qd.kernel
def saxpy(a: qd.f32, x: qd.types.ndarray(qd.f32, 1), y: qd.types.ndarray(qd.f32, 1)):
    for i in range(x.shape[0]):
        y[i] = a * x[i] + y[i]


def device_time_us(fn, warm=5, iters=50):
    """Median device time of fn() in microseconds (torch CUDA events; wall clock + sync when
    torch is missing)."""
    for _ in range(warm):
        fn()
    qd.sync()
    try:
        import torch

        times = []
        for _ in range(iters):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1e3)
        return statistics.median(times)
    except ImportError:
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        qd.sync()
        return (time.perf_counter() - t0) / iters * 1e6


def bench_saxpy(res, n):
    x = qd.ndarray(qd.f32, n)
    y = qd.ndarray(qd.f32, n)
    x.fill(1.0)
    y.fill(2.0)
    t = device_time_us(lambda: saxpy(2.0, x, y))
    res["qd_saxpy_us"] = t
    res["qd_saxpy_GBps"] = 12 * n / t / 1e3
    check = y.to_numpy()[:4]
    assert np.all(check == check[0]), check
    try:
        import torch

        tx = torch.rand(n, device="cuda")
        ty = torch.rand(n, device="cuda")
        tt = device_time_us(lambda: ty.add_(tx, alpha=2.0))
        res["torch_saxpy_us"] = tt
        res["torch_saxpy_GBps"] = 12 * n / tt / 1e3
        res["qd_vs_torch_bandwidth"] = res["qd_saxpy_GBps"] / res["torch_saxpy_GBps"]
    except ImportError:
        print("torch missing: no torch baseline")


def sweep_saxpy(res, n):
    """saxpy bandwidth per block size and grid cap: the occupancy-based saturating grid (the
    default), 32 or 128 blocks per SM, and exact grids (one iteration per thread)."""
    for block_dim in (128, 256, 512):
        sms = _core.cuda_device_info()["sm_count"]
        for grid, cap in (("saturating", 0), ("sm_x32", 32 * sms), ("sm_x128", 128 * sms),
                          ("exact", 2**31 - 1)):
            qd.init(arch=qd.cuda, default_gpu_block_dim=block_dim, saturating_grid_dim=cap,
                    offline_cache=False)
            x = qd.ndarray(qd.f32, n)
            y = qd.ndarray(qd.f32, n)
            t = device_time_us(lambda: saxpy(2.0, x, y))
            res[f"sweep_saxpy_GBps_b{block_dim}_{grid}"] = 12 * n / t / 1e3
    qd.init(arch=qd.cuda, enable_fallback=False, offline_cache=False)


def bench_launch(res, rounds=9, calls=5000):
    """Host time per launch of each contender, measured in alternating rounds of `calls`
    launches each (a sync after every round, so no contender inherits another's queue), and
    reported as the median over the rounds: the contenders see the same machine state."""
    n = 1024
    x = qd.ndarray(qd.f32, n)
    y = qd.ndarray(qd.f32, n)
    saxpy(1.0, x, y)
    compiled = next(iter(saxpy._compiled.values()))[0]
    xa, ya = x._qd_array, y._qd_array
    contenders = {
        "qd_kernel_call_host_us": lambda k: loop_us(lambda: saxpy(1.0, x, y), k),
        "qd_compiled_call_host_us": lambda k: loop_us(lambda: compiled(1.0, xa, ya), k),
        "raw_culaunchkernel_host_us": lambda k: _testing.cuda_raw_launch_us(
            compiled, (1.0, xa, ya), k),
        # the harness alone: the Python loop and call that the qd contenders pay and the raw C
        # loop does not (the floor of any launch from Python)
        "python_call_floor_host_us": lambda k: loop_us(lambda: _noop(1.0, x, y), k),
    }
    try:
        import cupy as cp

        src = r"""extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
            for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
                y[i] = a * x[i] + y[i];
        }"""
        kern = cp.RawKernel(src, "saxpy")
        cx = cp.zeros(n, cp.float32)
        cy = cp.zeros(n, cp.float32)
        a = np.float32(1.0)
        nn = np.int32(n)
        contenders["cupy_rawkernel_host_us"] = lambda k: loop_us(
            lambda: kern((8,), (128,), (a, cx, cy, nn)), k)
    except Exception as exc:  # CuPy missing or broken: report without it
        print("cupy baseline skipped:", exc)
    times = {name: [] for name in contenders}
    for name, run in contenders.items():  # warm-up
        run(500)
        qd.sync()
    for _ in range(rounds):
        for name, run in contenders.items():
            times[name].append(run(calls))
            qd.sync()
    for name, values in times.items():
        res[name] = statistics.median(values)
    res["qd_kernel_vs_raw_launch"] = res["qd_kernel_call_host_us"] / res["raw_culaunchkernel_host_us"]


def _noop(*args):
    return None


def loop_us(fn, calls):
    """Host microseconds per call of `calls` calls of fn (no sync inside)."""
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls * 1e6


def bench_compile(res, count=10):
    """Cold compile + load of compile_bench.py's kernel (median over distinct kernels): the core's
    frontend-to-PTX time, the driver's PTX-to-cubin link and the module load, separately."""
    stages = {"ptx": [], "link": [], "load": []}
    x = qd.ndarray(qd.f32, 8)
    y = qd.ndarray(qd.f32, 8)
    for k in range(count):
        step = compile_bench.make(k)
        step(x, y, 0.1)
        for key, value in compile_bench.stages(step).items():
            stages[key].append(value)
    for key, values in stages.items():
        res[f"cold_compile_{key}_ms"] = statistics.median(values)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--n", type=int, default=26, help="log2 of the saxpy size")
    parser.add_argument("--sweep", action="store_true", help="saxpy per block size and grid")
    args = parser.parse_args()
    if not _core.cuda_available():
        print("no CUDA device:", _core.cuda_unavailable_reason())
        return 1
    qd.init(arch=qd.cuda, enable_fallback=False, offline_cache=False)
    info = _core.cuda_device_info()
    res = {"device": info["name"], "sm_count": info["sm_count"]}
    bench_saxpy(res, 1 << args.n)
    bench_launch(res)
    bench_compile(res)
    if args.sweep:
        sweep_saxpy(res, 1 << args.n)
    for key, value in res.items():
        print(f"{key:32s} {value:12.3f}" if isinstance(value, float) else f"{key:32s} {value}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
