"""Cold start against warm start of a program with many distinct kernels (the offline cache).

Writes a program with --kernels distinct kernels (each a small element-wise loop with its own
constants and a helper @qd.func) and runs it in fresh processes sharing one cache directory:

  cold   an empty cache: every kernel is lowered and compiled
  warm   the second process: every kernel is loaded from the cache (no frontend, no LLVM)
  code   the cache holds the machine code but the source keys are gone (the frontend runs,
         LLVM does not): what a program gets when its kernels capture values the source key
         cannot describe

Each process measures, around each kernel's first call, the time to compile or load it and
launch it once, minus the time of a second (already compiled) call; the table shows the total
over all kernels and the mean per kernel, median of --repeat runs of each mode.

    python benchmarks/cache_bench.py [--arch cpu|cuda] [--kernels 200] [--repeat 3] [--json PATH]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PROGRAM_HEAD = """
import json, sys, time
import numpy as np
import quadrants as qd

qd.init(arch=getattr(qd, sys.argv[1]))
N = 1024
"""

KERNEL = """
@qd.func
def helper_{i}(x):
    return x * {a} + {b}

@qd.kernel
def kernel_{i}(x: qd.types.ndarray(dtype=qd.f32, ndim=1), y: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    for j in range(N):
        v = helper_{i}(x[j])
        if v > {c}:
            v = qd.sqrt(v) - {d}
        y[j] = v * {e} + x[j]
"""

PROGRAM_TAIL = """
x = qd.ndarray(qd.f32, shape=N)
y = qd.ndarray(qd.f32, shape=N)
x.from_numpy(np.linspace(0, 4, N, dtype=np.float32))
first = 0.0
second = 0.0
for k in KERNELS:
    t0 = time.perf_counter()
    k(x, y)
    qd.sync()
    t1 = time.perf_counter()
    k(x, y)
    qd.sync()
    t2 = time.perf_counter()
    first += t1 - t0
    second += t2 - t1
print(json.dumps({"compile_s": first - second}))
"""


def write_program(path, count):
    parts = [PROGRAM_HEAD]
    for i in range(count):
        parts.append(
            KERNEL.format(
                i=i, a=1.0 + i / 97, b=i % 7, c=2.0 + i % 5, d=0.5 + i % 3, e=1.0 + i % 11
            )
        )
    parts.append("KERNELS = [" + ", ".join(f"kernel_{i}" for i in range(count)) + "]\n")
    parts.append(PROGRAM_TAIL)
    with open(path, "w") as f:
        f.write("".join(parts))


def run(program, arch, cache):
    # The package the program imports: this repository's, unless PYTHONPATH names another (the
    # reference's, to compare the two on one machine).
    env = dict(os.environ, QD_OFFLINE_CACHE_FILE_PATH=cache,
               PYTHONPATH=os.environ.get("PYTHONPATH") or REPO_ROOT)
    out = subprocess.run(
        [sys.executable, program, arch], env=env, capture_output=True, text=True, check=True
    ).stdout
    line = [line for line in out.splitlines() if line.startswith("{")][-1]
    return json.loads(line)["compile_s"]


def drop_links(cache):
    """Removes the source-key entries, keeping the machine code (see the docstring)."""
    sys.path.insert(0, REPO_ROOT)
    for name in os.listdir(cache):
        path = os.path.join(cache, name)
        if not os.path.isfile(path):
            continue  # names/: the Python layer's memo of source analyses
        with open(path, "rb") as f:
            header = f.read(16)
        if header[12:16] == b"link":
            os.remove(path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="cpu")
    parser.add_argument("--kernels", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="qd_cache_bench_")
    try:
        program = os.path.join(work, "many_kernels.py")
        write_program(program, args.kernels)
        times = {"cold": [], "warm": [], "code": []}
        for r in range(args.repeat):
            cache = os.path.join(work, f"cache{r}")
            times["cold"].append(run(program, args.arch, cache))
            times["warm"].append(run(program, args.arch, cache))
            drop_links(cache)
            times["code"].append(run(program, args.arch, cache))
        med = {mode: statistics.median(values) for mode, values in times.items()}
        n = args.kernels
        print(f"offline cache, {n} distinct kernels, arch={args.arch} (median of {args.repeat})")
        print(f"{'start':<8}{'total ms':>12}{'ms/kernel':>12}{'vs cold':>10}")
        for mode in ("cold", "code", "warm"):
            total = med[mode] * 1e3
            print(f"{mode:<8}{total:>12.1f}{total / n:>12.3f}{med[mode] / med['cold']:>10.3f}")
        result = {
            "arch": args.arch,
            "kernels": n,
            "median_total_ms": {mode: med[mode] * 1e3 for mode in med},
            "all_total_ms": {mode: [t * 1e3 for t in v] for mode, v in times.items()},
        }
        if args.json:
            with open(args.json, "w") as f:
                json.dump(result, f, indent=1)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
