"""Runs the benchmarks, each in a fresh process, and collects their results into one JSON file.

  cpu_lang_bench     kernels written in Python: run time against NumPy, cold compile time, call
                     overhead (on --arch)
  cpu_codegen_bench  the CPU code generator on hand-written QIR: compile time, launch overhead,
                     an element-wise kernel (CPU only; skipped for other archs)
  ir_parse_bench     the QIR parser, printer and verifier (no arch)
  cache_bench        cold against warm start of 200 kernels through the offline cache (on --arch)
  matrix_bench       a 3x3-matrix-times-vec3 kernel over 2^22 positions against a saxpy of the
                     same bytes (on --arch)

Each benchmark prints its own table. `make bench` runs this script.

    python benchmarks/run.py [--arch cpu] [--threads T] [--only NAME[,NAME...]] [--json PATH]
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# name -> (script, archs it runs on (None: any, its result does not depend on the arch),
#          whether it takes --arch)
BENCHMARKS = {
    "cpu_lang_bench": ("cpu_lang_bench.py", None, True),
    "cpu_codegen_bench": ("cpu_codegen_bench.py", ("cpu",), False),
    "ir_parse_bench": ("ir_parse_bench.py", None, False),
    "cache_bench": ("cache_bench.py", None, "arch-only"),
    "matrix_bench": ("matrix_bench.py", None, "arch-only"),
}


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
        "system": f"{platform.system()} {platform.release()} {platform.machine()}",
        "python": platform.python_version(),
    }


def run_one(name, arch, threads, directory):
    """(exit status, result dict or None, seconds) of one benchmark script."""
    script, archs, takes_arch = BENCHMARKS[name]
    out = os.path.join(directory, name + ".json")
    command = [sys.executable, os.path.join(HERE, script), "--json", out]
    if takes_arch == "arch-only":
        command += ["--arch", arch]
    elif takes_arch:
        command += ["--arch", arch, "--threads", str(threads)]
    start = time.perf_counter()
    status = subprocess.call(command)
    seconds = time.perf_counter() - start
    result = None
    if status == 0 and os.path.exists(out):
        with open(out) as f:
            result = json.load(f)
    return status, result, seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="cpu", help="cpu (default); cuda, gpu when available")
    parser.add_argument("--threads", type=int, default=0,
                        help="CPU threads for kernels written in Python; 0 (default): all cores")
    parser.add_argument("--only", help="comma-separated benchmark names: " + ", ".join(BENCHMARKS))
    parser.add_argument("--json", help="write all results to this file")
    args = parser.parse_args()

    names = list(BENCHMARKS)
    if args.only:
        names = [name.strip() for name in args.only.split(",") if name.strip()]
        unknown = [name for name in names if name not in BENCHMARKS]
        if unknown:
            parser.error(f"unknown benchmark(s): {', '.join(unknown)}")

    report = {"arch": args.arch, "threads": args.threads, "machine": machine(), "results": {},
              "skipped": [], "failed": []}
    with tempfile.TemporaryDirectory(prefix="qd_bench_") as directory:
        for name in names:
            _, archs, _ = BENCHMARKS[name]
            if archs is not None and args.arch not in archs:
                print(f"== {name}: skipped (runs on {', '.join(archs)} only)\n")
                report["skipped"].append(name)
                continue
            print(f"== {name}", flush=True)
            status, result, seconds = run_one(name, args.arch, args.threads, directory)
            print(f"   ({seconds:.1f} s)\n", flush=True)
            if status != 0 or result is None:
                print(f"== {name} FAILED (exit status {status})\n")
                report["failed"].append(name)
            else:
                report["results"][name] = result

    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
        print(f"results written to {args.json}")
    if report["failed"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
