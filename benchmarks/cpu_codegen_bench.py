"""Speed of the CPU backend: compile time, launch overhead, and an element-wise kernel.

Three measurements through quadrants._core._testing (compile_qir / CompiledQir.launch):

  compile   a ~20-line kernel compiled with a fresh JIT each time (median of --runs), with the
            split reported by the code generator: LLVM IR emission, the O3 pipeline, machine
            code emission, JIT linking; "other" is parsing, passes, JIT and pool creation.
  launch    a tiny kernel (two 16-element ndarrays and a scalar) launched --launches times
            after one compile; the per-call time includes argument conversion (two buffer
            exports), releasing the GIL and running the task.
  saxpy-ish an element-wise kernel over 2**24 float32 (out = sqrt(x*x + y*y) * a) against the
            same NumPy expression; best of --runs each.

    python benchmarks/cpu_codegen_bench.py [--runs R] [--launches L] [--json PATH]
"""

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from quadrants._core import _testing  # noqa: E402

# About 20 lines of body: a 2-D stencil-ish update with a branch and a serial inner loop.
COMPILE_KERNEL = """\
kernel @relax(%a: f32, %x: ndarray<f32, 2>, %y: ndarray<f32, 2>) {
  task range_for "relax" {
    %zero = const 0 : i32
    %one = const 1 : i32
    %rows = shape %x, 0 : i32
    %cols = shape %x, 1 : i32
    parallel_for %i = %zero to %rows {
      for %j = %one to %cols {
        %jm = sub %j, %one : i32
        %pl = elem_ptr %x, %i, %jm : ptr<f32, global>
        %pc = elem_ptr %x, %i, %j : ptr<f32, global>
        %vl = load %pl : f32
        %vc = load %pc : f32
        %d = sub %vc, %vl : f32
        %m = mul %a, %d : f32
        %neg = lt %m, %a : u1
        %r = select %neg, %m, %vc : f32
        %s = sqrt %r : f32
        %py = elem_ptr %y, %i, %j : ptr<f32, global>
        %vy = load %py : f32
        %t = add %vy, %s : f32
        store %py, %t
      }
    }
  }
}
"""

TINY_KERNEL = """\
kernel @tiny(%a: f32, %x: ndarray<f32, 1>, %y: ndarray<f32, 1>) {
  task range_for {
    %zero = const 0 : i32
    %n = shape %x, 0 : i32
    parallel_for %i = %zero to %n {
      %px = elem_ptr %x, %i : ptr<f32, global>
      %py = elem_ptr %y, %i : ptr<f32, global>
      %vx = load %px : f32
      %vy = load %py : f32
      %m = mul %a, %vx : f32
      %s = add %m, %vy : f32
      store %py, %s
    }
  }
}
"""

HYPOT_KERNEL = """\
kernel @hypot(%a: f32, %x: ndarray<f32, 1>, %y: ndarray<f32, 1>, %out: ndarray<f32, 1>) {
  task range_for {
    %zero = const 0 : i32
    %n = shape %x, 0 : i32
    parallel_for %i = %zero to %n {
      %px = elem_ptr %x, %i : ptr<f32, global>
      %py = elem_ptr %y, %i : ptr<f32, global>
      %vx = load %px : f32
      %vy = load %py : f32
      %xx = mul %vx, %vx : f32
      %yy = mul %vy, %vy : f32
      %s = add %xx, %yy : f32
      %r = sqrt %s : f32
      %v = mul %r, %a : f32
      %po = elem_ptr %out, %i : ptr<f32, global>
      store %po, %v
    }
  }
}
"""


def bench_compile(runs):
    totals, parts = [], {"ms_emit": [], "ms_optimize": [], "ms_codegen": [], "ms_link": []}
    for _ in range(runs):
        t0 = time.perf_counter()
        handle = _testing.compile_qir(COMPILE_KERNEL, "relax", nthreads=1)
        totals.append((time.perf_counter() - t0) * 1e3)
        info = handle.info
        for key in parts:
            parts[key].append(info[key])
        del handle
    result = {"total_ms": statistics.median(totals)}
    for key, values in parts.items():
        result[key] = statistics.median(values)
    result["other_ms"] = result["total_ms"] - sum(result[k] for k in parts)
    return result


def bench_launch(launches):
    handle = _testing.compile_qir(TINY_KERNEL, "tiny")
    x = np.ones(16, dtype=np.float32)
    y = np.zeros(16, dtype=np.float32)
    launch = handle.launch
    for _ in range(1000):
        launch(1.0, x, y)
    batches = []
    per_batch = max(1, launches // 20)
    for _ in range(20):
        t0 = time.perf_counter()
        for _ in range(per_batch):
            launch(1.0, x, y)
        batches.append((time.perf_counter() - t0) / per_batch * 1e6)
    return {"launch_us": statistics.median(batches), "launches": per_batch * 20}


def bench_elementwise(runs):
    n = 1 << 24
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = np.empty_like(x)
    a = np.float32(1.5)
    handle = _testing.compile_qir(HYPOT_KERNEL, "hypot")
    handle.launch(1.5, x, y, out)
    kernel_times, numpy_times = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        handle.launch(1.5, x, y, out)
        kernel_times.append((time.perf_counter() - t0) * 1e3)
        t0 = time.perf_counter()
        want = np.sqrt(x * x + y * y) * a
        numpy_times.append((time.perf_counter() - t0) * 1e3)
    np.testing.assert_allclose(out, want, rtol=1e-5)
    return {
        "n": n,
        "threads": handle.info["nthreads"],
        "kernel_ms": min(kernel_times),
        "numpy_ms": min(numpy_times),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--launches", type=int, default=20000)
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()

    compile_result = bench_compile(args.runs)
    launch_result = bench_launch(args.launches)
    elementwise_result = bench_elementwise(max(5, args.runs // 2))

    rows = [
        ("compile ~20-line kernel, total (fresh JIT)", compile_result["total_ms"], "ms"),
        ("  emit LLVM IR", compile_result["ms_emit"], "ms"),
        ("  optimize (default<O3>)", compile_result["ms_optimize"], "ms"),
        ("  machine code", compile_result["ms_codegen"], "ms"),
        ("  JIT link + lookup", compile_result["ms_link"], "ms"),
        ("  other (parse, passes, JIT/pool creation)", compile_result["other_ms"], "ms"),
        ("launch tiny kernel (2 ndarrays + scalar)", launch_result["launch_us"], "us"),
        ("hypot 2^24 f32: kernel ({} threads)".format(elementwise_result["threads"]),
         elementwise_result["kernel_ms"], "ms"),
        ("hypot 2^24 f32: NumPy expression", elementwise_result["numpy_ms"], "ms"),
    ]
    width = max(len(name) for name, _, _ in rows)
    print("{:<{w}}  {:>10}".format("measurement", "median/min", w=width))
    for name, value, unit in rows:
        print("{:<{w}}  {:>10.3f} {}".format(name, value, unit, w=width))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"compile": compile_result, "launch": launch_result,
                       "elementwise": elementwise_result}, f, indent=2)


if __name__ == "__main__":
    main()
