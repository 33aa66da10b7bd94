"""Cold compile time per kernel: --kernels distinct kernels (default 50) of a dozen lines with
sqrt, sin and exp, each compiled at its first call with the offline cache off. Prints the median
wall time of a first call (compile, load, one launch on 8 elements, synchronize), and with this
package also the median of each stage the compiled kernel reports (on CUDA: frontend to PTX,
the driver's PTX to cubin, module load; on the CPU: LLVM IR emission, optimization, machine
code, linking). Runs unchanged under the reference package (put it first on PYTHONPATH), which
reports the wall time only.

    python benchmarks/compile_bench.py [--arch cpu|cuda] [--kernels K]
"""

import argparse
import statistics
import time

import quadrants as qd


def make(k):
    scale = 1.0 + k  # a different constant in every kernel: nothing can be shared

    @qd.kernel
    def step(x: qd.types.ndarray(qd.f32, 1), y: qd.types.ndarray(qd.f32, 1), dt: qd.f32):
        for i in range(x.shape[0]):
            v = x[i] * scale
            if v > 0.5:
                v = qd.sqrt(v) + 1.0
            else:
                v = v * v - 0.25
            u = qd.exp(-v) * 0.5 + qd.sin(v)
            w = 0.0
            for j in range(3):
                w += v * j
            y[i] = u * dt + qd.min(v, 2.0) + w
            if y[i] > 10.0:
                y[i] = 10.0

    return step


def stages(kernel):
    """This package's per-stage milliseconds of the kernel's one compiled form, else {}."""
    compiled = getattr(kernel, "_compiled", None)
    if not isinstance(compiled, dict) or not compiled:
        return {}
    entry = next(iter(compiled.values()))
    for item in entry if isinstance(entry, (tuple, list)) else (entry,):
        ms = getattr(item, "compile_ms", None)
        if isinstance(ms, dict):
            return ms
    return {}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--arch", choices=["cpu", "cuda"], default="cuda")
    ap.add_argument("--kernels", type=int, default=50)
    args = ap.parse_args()
    qd.init(arch=getattr(qd, args.arch), offline_cache=False)
    x, y = qd.ndarray(qd.f32, 8), qd.ndarray(qd.f32, 8)
    make(-1)(x, y, 0.1)  # the first compile of a process also loads the compiler's libraries
    qd.sync()
    walls, per_stage = [], {}
    for k in range(args.kernels):
        kernel = make(k)
        t0 = time.perf_counter()
        kernel(x, y, 0.1)
        qd.sync()
        walls.append((time.perf_counter() - t0) * 1e3)
        for name, ms in stages(kernel).items():
            per_stage.setdefault(name, []).append(ms)
    print(f"quadrants {getattr(qd, '__version__', '?')} from {qd.__file__}")
    line = (f"cold compile {args.arch}, {args.kernels} kernels: "
            f"{statistics.median(walls):.1f} ms per kernel")
    if per_stage:
        parts = (f"{name} {statistics.median(v):.1f}" for name, v in per_stage.items())
        line += " (" + ", ".join(parts) + ")"
    print(line)


if __name__ == "__main__":
    main()
