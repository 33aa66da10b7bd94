"""Speed of kernels written in Python: run time against NumPy, compile time, call overhead.

Everything goes through the public API (`@qd.kernel`, `qd.ndarray`, NumPy arrays):

  elementwise  kernels over 2**24 float32 against the equivalent NumPy expressions, median of
               --runs calls each (qd.sync() after every kernel call); the ratio is NumPy time /
               kernel time, so above 1 means the kernel is faster. Both results are checked
               against a float64 computation.
                 affine+math   y = sqrt(|a*x + b|) + min(x, b)
                 exp           y = a * exp(-x*x) + b   (a transcendental function)
  compile      cold compile of a ~20-line kernel: --kernels distinct kernels, each generated
               into its own module with different constants (nothing can be reused from an
               earlier compilation), timed as first call minus second call; median. The code
               generator's split comes from the compiled kernel's `compile_ms` (LLVM IR emission,
               the O3 pipeline, machine code, JIT linking); "frontend and rest" is the remainder
               (Python AST capture, lowering to QIR, passes). The first kernel of the process is
               compiled before and reported on its own (it also creates the JIT and thread pool).
  call         host overhead of calling an already compiled kernel (a scalar and two 16-element
               arrays) from Python: median over --repeats batches of --calls calls, per call;
               with qd.ndarray arguments, with NumPy arrays, and the compiled kernel object
               called directly (no argument checks or specialisation lookup in Python).

    python benchmarks/cpu_lang_bench.py [--arch cpu] [--threads T] [--runs R] [--kernels K]
                                        [--calls C] [--repeats B] [--json PATH]
"""

import argparse
import importlib.util
import json
import os
import platform
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import quadrants as qd  # noqa: E402

N_ELEMENTWISE = 1 << 24


# --- element-wise kernels ---


@qd.kernel
def affine_math(
    a: qd.f32,
    b: qd.f32,
    x: qd.types.ndarray(dtype=qd.f32, ndim=1),
    y: qd.types.ndarray(dtype=qd.f32, ndim=1),
):
    for i in range(x.shape[0]):
        y[i] = qd.sqrt(qd.abs(a * x[i] + b)) + qd.min(x[i], b)


@qd.kernel
def gaussian(
    a: qd.f32,
    b: qd.f32,
    x: qd.types.ndarray(dtype=qd.f32, ndim=1),
    y: qd.types.ndarray(dtype=qd.f32, ndim=1),
):
    for i in range(x.shape[0]):
        y[i] = a * qd.exp(-x[i] * x[i]) + b


def median_ms(fn, runs):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def bench_elementwise(runs):
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal(N_ELEMENTWISE).astype(np.float32)
    x = qd.ndarray(qd.f32, shape=N_ELEMENTWISE)
    y = qd.ndarray(qd.f32, shape=N_ELEMENTWISE)
    x.from_numpy(x_np)
    a, b = 1.5, 0.25
    a32, b32 = np.float32(a), np.float32(b)
    x64 = x_np.astype(np.float64)
    # name: (kernel, the NumPy expression that is timed, a float64 reference for checking)
    cases = {
        "affine_math": (
            affine_math,
            lambda: np.sqrt(np.abs(a32 * x_np + b32)) + np.minimum(x_np, b32),
            lambda: np.sqrt(np.abs(a * x64 + b)) + np.minimum(x64, b),
        ),
        "exp": (
            gaussian,
            lambda: a32 * np.exp(-x_np * x_np) + b32,
            lambda: a * np.exp(-x64 * x64) + b,
        ),
    }
    results = {}
    for name, (kernel, numpy_fn, reference_fn) in cases.items():
        kernel(a, b, x, y)  # compile
        qd.sync()

        def run_kernel(kernel=kernel):
            kernel(a, b, x, y)
            qd.sync()

        kernel_ms = median_ms(run_kernel, runs)
        numpy_ms = median_ms(numpy_fn, runs)
        # Both float32 results against a float64 reference. They differ in the last bits (the
        # kernel may fuse a*x + b into one FMA, with one rounding instead of two), and sqrt near
        # zero magnifies that; the kernel must be about as close to the reference as NumPy.
        reference = reference_fn()
        kernel_error = float(np.max(np.abs(y.to_numpy() - reference)))
        numpy_error = float(np.max(np.abs(numpy_fn() - reference)))
        if kernel_error > 4 * numpy_error + 1e-6 * float(np.max(np.abs(reference))):
            raise SystemExit(f"{name}: the kernel's result is off by {kernel_error} "
                             f"(NumPy's by {numpy_error})")
        results[name] = {
            "n": N_ELEMENTWISE,
            "kernel_ms": kernel_ms,
            "numpy_ms": numpy_ms,
            "numpy_over_kernel": numpy_ms / kernel_ms,
            "kernel_max_abs_error": kernel_error,
            "numpy_max_abs_error": numpy_error,
        }
    return results


# --- cold compile time ---

# About 20 lines of kernel: two parallel loops, a serial inner loop, a branch, math calls.
# {c1}..{c4} differ between the generated kernels.
COMPILE_TEMPLATE = '''\
import quadrants as qd


@qd.kernel
def relax(
    a: qd.f32,
    x: qd.types.ndarray(dtype=qd.f32, ndim=2),
    y: qd.types.ndarray(dtype=qd.f32, ndim=2),
) -> qd.f32:
    total = 0.0
    for i in range(x.shape[0]):
        acc = 0.0
        for j in range(1, x.shape[1]):
            d = x[i, j] - x[i, j - 1]
            m = a * d + {c1}
            if m < a:
                m = qd.sqrt(qd.abs(m)) * {c2}
            else:
                m = qd.min(m, {c3})
            acc += m
            y[i, j] = y[i, j] + acc
        y[i, 0] = acc * {c4}
    for i, j in qd.ndrange(x.shape[0], x.shape[1]):
        total += y[i, j]
    return total
'''


def load_module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def compile_once(directory, index, salt, x, y):
    """(first call ms, second call ms, compile_ms dict) of a freshly generated kernel."""
    constants = {
        "c1": f"{salt + index * 0.001:.6f}",
        "c2": f"{1.0 + index * 0.01:.4f}",
        "c3": f"{2.0 + index:.1f}",
        "c4": f"{0.5 + salt:.6f}",
    }
    name = f"qd_bench_relax_{os.getpid()}_{index}"
    path = os.path.join(directory, name + ".py")
    with open(path, "w") as f:
        f.write(COMPILE_TEMPLATE.format(**constants))
    kernel = load_module(path, name).relax
    start = time.perf_counter()
    kernel(1.5, x, y)
    first = (time.perf_counter() - start) * 1e3
    start = time.perf_counter()
    kernel(1.5, x, y)
    second = (time.perf_counter() - start) * 1e3
    (compiled, _pins), = kernel._compiled.values()
    return first, second, dict(compiled.compile_ms)


def bench_compile(kernels):
    x = np.ones((8, 8), dtype=np.float32)
    y = np.zeros((8, 8), dtype=np.float32)
    # Different constants in every process, so an on-disk cache could not serve them either.
    salt = (time.time_ns() // 1000 + os.getpid()) % 100000 / 100000.0
    with tempfile.TemporaryDirectory(prefix="qd_bench_") as directory:
        first_first, first_second, _ = compile_once(directory, 0, salt, x, y)
        totals, parts = [], {"emit": [], "optimize": [], "codegen": [], "link": []}
        for index in range(1, kernels + 1):
            first, second, split = compile_once(directory, index, salt, x, y)
            totals.append(first - second)
            for key in parts:
                parts[key].append(split[key])
    result = {
        "kernels": kernels,
        "first_in_process_ms": first_first - first_second,
        "total_ms": statistics.median(totals),
        "min_ms": min(totals),
        "max_ms": max(totals),
    }
    for key, values in parts.items():
        result[key + "_ms"] = statistics.median(values)
    result["frontend_and_rest_ms"] = result["total_ms"] - sum(
        result[key + "_ms"] for key in parts
    )
    return result


# --- call overhead ---


@qd.kernel
def tiny(
    a: qd.f32,
    x: qd.types.ndarray(dtype=qd.f32, ndim=1),
    y: qd.types.ndarray(dtype=qd.f32, ndim=1),
):
    for i in range(x.shape[0]):
        y[i] = a * x[i] + y[i]


def per_call_us(fn, args, calls, repeats):
    for _ in range(1000):
        fn(*args)
    batches = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn(*args)
        batches.append((time.perf_counter() - start) / calls * 1e6)
    qd.sync()
    return statistics.median(batches)


def bench_call(calls, repeats):
    x_nd = qd.ndarray(qd.f32, shape=16)
    y_nd = qd.ndarray(qd.f32, shape=16)
    x_np = np.ones(16, dtype=np.float32)
    y_np = np.zeros(16, dtype=np.float32)
    result = {"calls": calls, "repeats": repeats}
    result["ndarray_us"] = per_call_us(tiny, (1.0, x_nd, y_nd), calls, repeats)
    result["numpy_us"] = per_call_us(tiny, (1.0, x_np, y_np), calls, repeats)
    # The compiled kernel the Python layer launches: it takes the launch values directly.
    (compiled, _pins), = tiny._compiled.values()
    result["compiled_kernel_us"] = per_call_us(compiled, (1.0, x_np, y_np), calls, repeats)
    return result


# --- report ---


def machine():
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "system": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "numpy": np.__version__,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="cpu", help="cpu (default), cuda, gpu, ...")
    parser.add_argument("--runs", type=int, default=20, help="element-wise: calls per median")
    parser.add_argument("--kernels", type=int, default=20, help="compile: distinct kernels")
    parser.add_argument("--calls", type=int, default=20000, help="call: calls per batch")
    parser.add_argument("--repeats", type=int, default=7, help="call: batches")
    parser.add_argument("--threads", type=int, default=0,
                        help="CPU threads (cpu_max_num_threads); 0: all cores")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()

    arch = qd.gpu if args.arch == "gpu" else getattr(qd, args.arch)
    options = {"offline_cache": False}
    if args.threads > 0:
        options["cpu_max_num_threads"] = args.threads
    qd.init(arch=arch, **options)
    arch_name = qd.cfg.arch.name
    threads = qd.cfg.cpu_max_num_threads

    compile_result = bench_compile(args.kernels)
    call_result = bench_call(args.calls, args.repeats)
    elementwise = bench_elementwise(args.runs)

    rows = []
    for name, label in (("affine_math", "sqrt(|a*x+b|) + min(x,b)"), ("exp", "a*exp(-x*x) + b")):
        r = elementwise[name]
        rows += [
            (f"2^24 f32 {label}: kernel", r["kernel_ms"], "ms"),
            (f"2^24 f32 {label}: NumPy", r["numpy_ms"], "ms"),
            ("  NumPy time / kernel time", r["numpy_over_kernel"], "x"),
        ]
    c = compile_result
    rows += [
        (f"cold compile, ~20-line kernel (median of {c['kernels']})", c["total_ms"], "ms"),
        ("  frontend and rest (AST, QIR, passes)", c["frontend_and_rest_ms"], "ms"),
        ("  emit LLVM IR", c["emit_ms"], "ms"),
        ("  optimize (O3)", c["optimize_ms"], "ms"),
        ("  machine code", c["codegen_ms"], "ms"),
        ("  JIT link", c["link_ms"], "ms"),
        ("first compile in the process (creates the JIT)", c["first_in_process_ms"], "ms"),
        ("call: kernel(a, qd.ndarray, qd.ndarray)", call_result["ndarray_us"], "us"),
        ("call: kernel(a, np.ndarray, np.ndarray)", call_result["numpy_us"], "us"),
        ("call: compiled kernel object directly", call_result["compiled_kernel_us"], "us"),
    ]
    width = max(len(name) for name, _, _ in rows)
    m = machine()
    print(f"arch={arch_name}, {threads} CPU threads; {m['cpu']}, {m['cores']} cores; "
          f"Python {m['python']}, NumPy {m['numpy']}")
    print("{:<{w}}  {:>10}".format("measurement", "median", w=width))
    for name, value, unit in rows:
        print("{:<{w}}  {:>10.3f} {}".format(name, value, unit, w=width))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"arch": arch_name, "cpu_threads": threads, "machine": m,
                       "elementwise": elementwise,
                       "compile": compile_result, "call": call_result}, f, indent=2)


if __name__ == "__main__":
    main()
