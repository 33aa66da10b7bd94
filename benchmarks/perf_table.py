"""The performance table of this package against the reference implementation and the peers, in
one run on one machine: every workload runs in a fresh process under this package and, with
--reference PATH (a directory holding the reference's `quadrants` package, put first on
PYTHONPATH), under the reference too.

  Cholesky      misc/demos/cholesky_blocked.py (baseline, crout16, tile16; --nvcc-tile16: the
                hand-written CUDA C tile kernel beside tile16) and benchmarks/cholesky/
                chol_shared.py (the demo's two shared-memory kernels on 64x64 matrices;
                --nvcc-shared: their CUDA C)
  reduction     s[None] += x[i] over 2**24 f32 (api_bench.py), beside torch.sum
  SVD           qd.svd of 2**20 3x3 f32 matrices (svd_bench.py)
  compile       cold compile per kernel, 50 distinct kernels, offline cache off
                (compile_bench.py), on CUDA and on the CPU
  saxpy         2**26 f32 (api_bench.py), beside torch
  launch        host time per call of a 2-ndarray + scalar kernel (api_bench.py), beside a bare
                cuLaunchKernel and CuPy's RawKernel (cuda_bench.py, this package only)
  warm start    per kernel, through the offline cache (cache_bench.py, 50 kernels)

Times are medians as each script takes them. A workload that fails under a package prints
"failed" in its cell and its error below the table.

    python benchmarks/perf_table.py [--reference DIR] [--nvcc-tile16 BIN] [--nvcc-shared BIN]
        [--arch cuda|cpu]
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

errors = []


def run(package, args, what):
    """stdout of `python args...` with `package` (a directory) first on PYTHONPATH, or None
    (the error kept for the report)."""
    env = dict(os.environ, PYTHONPATH=package)
    proc = subprocess.run([sys.executable] + args, env=env, capture_output=True, text=True,
                          cwd=ROOT)
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-6:]
        errors.append(f"{what}: exit {proc.returncode}\n    " + "\n    ".join(tail))
        return None
    return proc.stdout


def json_of(text):
    if text is None:
        return None
    lines = [line for line in text.splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else None


def rows_of(text, pattern):
    """{name: (numbers...)} of the lines matching `pattern` (name, then numbers)."""
    out = {}
    for m in re.finditer(pattern, text or "", re.M):
        out[m.group(1)] = tuple(float(g) if g not in (None, "-") else None for g in m.groups()[1:])
    return out


def measure(package, tag, arch, opts):
    """Every workload under one package: {row: value}."""
    res = {}
    gpu = arch == "cuda"
    if gpu:
        cmd = ["misc/demos/cholesky_blocked.py", "--arch", "cuda"]
        if opts.nvcc_tile16 and tag == "ours":
            cmd += ["--cuda-ref", opts.nvcc_tile16]
        out = run(package, cmd, f"{tag}: cholesky_blocked.py")
        for name, nums in rows_of(out, r"^(baseline|crout16|tile16)\s+\d+\s+([\d.]+)").items():
            res[f"demo {name}"] = nums[0]
        m = re.search(r"^CUDA C tile16 \(nvcc\)\s+\d+\s+([\d.]+)", out or "", re.M)
        if m:
            res["nvcc demo tile16"] = float(m.group(1))
        cmd = ["benchmarks/cholesky/chol_shared.py"]
        if opts.nvcc_shared and tag == "ours":
            cmd += ["--cuda-ref", opts.nvcc_shared]
        out = run(package, cmd, f"{tag}: chol_shared.py")
        for name, nums in rows_of(out, r"^(baseline|blocked)\s+([\d.]+)\s+([\d.]+|-)").items():
            res[f"shared {name}"] = nums[0]
            if nums[1] is not None:
                res[f"nvcc shared {name}"] = nums[1]
    api = json_of(run(package, ["benchmarks/api_bench.py", "--arch", arch]
                      + (["--torch"] if gpu and tag == "ours" else []), f"{tag}: api_bench.py"))
    if api:
        for key in ("reduce_GBps", "saxpy_GBps", "launch_us", "torch_sum_GBps",
                    "torch_saxpy_GBps"):
            if key in api:
                res[key] = api[key]
    out = run(package, ["benchmarks/svd_bench.py", "--arch", arch], f"{tag}: svd_bench.py")
    m = re.search(r"([\d.]+) M matrices/s", out or "")
    if m:
        res["svd_Gps"] = float(m.group(1)) / 1e3
    for where in ([arch, "cpu"] if gpu else [arch]):
        out = run(package, ["benchmarks/compile_bench.py", "--arch", where, "--kernels", "50"],
                  f"{tag}: compile_bench.py --arch {where}")
        m = re.search(r"([\d.]+) ms per kernel", out or "")
        if m:
            res[f"compile_{where}_ms"] = float(m.group(1))
    if gpu and tag == "ours":
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "cuda.json")
            if run(package, ["benchmarks/cuda_bench.py", "--json", path],
                   f"{tag}: cuda_bench.py") is not None:
                with open(path) as f:
                    cuda = json.load(f)
                res["raw_launch_us"] = cuda.get("raw_culaunchkernel_host_us")
                res["cupy_launch_us"] = cuda.get("cupy_rawkernel_host_us")
    out = run(package, ["benchmarks/cache_bench.py", "--arch", arch, "--kernels", "50",
                        "--repeat", "1"], f"{tag}: cache_bench.py")
    rows = rows_of(out, r"^(cold|warm)\s+([\d.]+)\s+([\d.]+)")
    if "warm" in rows:
        res["warm_ms"] = rows["warm"][1]
    return res


# (label, row key, unit, lower is better, the peer's key and label)
ROWS = [
    ("Cholesky demo baseline (64 threads)", "demo baseline", "us", True, None),
    ("Cholesky demo crout16 (16 threads)", "demo crout16", "us", True, None),
    ("Cholesky demo tile16", "demo tile16", "us", True, ("nvcc demo tile16", "nvcc")),
    ("shared-memory Cholesky 64x64, baseline", "shared baseline", "us", True,
     ("nvcc shared baseline", "nvcc")),
    ("shared-memory Cholesky 64x64, blocked", "shared blocked", "us", True,
     ("nvcc shared blocked", "nvcc")),
    ("s[None] += x[i], 2^24 f32", "reduce_GBps", "GB/s", False, ("torch_sum_GBps", "torch.sum")),
    ("3x3 SVD, 2^20 f32", "svd_Gps", "G/s", False, None),
    ("cold compile per kernel (this arch)", None, "ms", True, None),
    ("cold compile per kernel (CPU)", "compile_cpu_ms", "ms", True, None),
    ("saxpy 2^26 f32", "saxpy_GBps", "GB/s", False, ("torch_saxpy_GBps", "torch")),
    ("launch, 2 ndarrays + scalar", "launch_us", "us", True, ("raw_launch_us", "cuLaunchKernel")),
    ("warm start per kernel (offline cache)", "warm_ms", "ms", True, None),
]


def fmt(v):
    if v is None:
        return "failed"
    return f"{v:.3g}" if v < 10 else f"{v:.1f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reference", help="directory holding the reference's quadrants package")
    ap.add_argument("--nvcc-tile16", help="binary of misc/demos' hand-written CUDA C tile16")
    ap.add_argument("--nvcc-shared", help="binary of benchmarks/cholesky/chol_shared.cu")
    ap.add_argument("--arch", choices=["cuda", "cpu"], default="cuda")
    opts = ap.parse_args()
    ours = measure(ROOT, "ours", opts.arch, opts)
    ref = measure(opts.reference, "reference", opts.arch, opts) if opts.reference else {}
    print(f"\n{'workload':<44}{'reference':>11}{'ours':>11}{'ours/ref':>10}  peer")
    for label, key, unit, lower, peer in ROWS:
        if key is None and opts.arch == "cpu":
            continue  # the CPU row says it
        key = key or f"compile_{opts.arch}_ms"
        if key not in ours and key not in ref:
            continue
        o, r = ours.get(key), ref.get(key)
        ratio = ""
        if o is not None and r is not None:
            ratio = f"{o / r:.2f}x" if lower else f"{r / o:.2f}x"  # time of ours / time of ref
        peer_text = ""
        if peer and ours.get(peer[0]) is not None:
            p = ours[peer[0]]
            vs = o / p if (o is not None and lower) else (p / o if o else None)
            peer_text = f"{peer[1]} {fmt(p)} {unit}" + (f" (ours {vs:.2f}x its time)" if vs else "")
        rtext = fmt(r) if opts.reference else "-"
        print(f"{label + ' (' + unit + ')':<44}{rtext:>11}{fmt(o):>11}{ratio:>10}  {peer_text}")
    if errors:
        print("\nerrors:")
        for e in errors:
            print("  " + e)
    return 0


if __name__ == "__main__":
    sys.exit(main())
