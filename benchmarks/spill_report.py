"""Registers and spills of packed against unpacked vector dataclass members on CUDA.

Builds two kernels that hold two 32-element f32 vectors per thread and keep both live through
an unrolled update loop:

  unpacked  a @qd.dataclass with members `a, b: qd.types.vector(32, qd.f32, unpacked=True)`
  packed    the same with `a, b: qd.types.vector(32, qd.f32)`

Quadrants keeps every element of a vector value, packed or not, in a scalar slot of its own
(LLVM promotes each to a register on its own), so both layouts should report the same figures:
the packed layout does not spill as a unit.

The PTX is generated without a GPU: each kernel is compiled once on the CPU, its final QIR is
handed to the CUDA code generator (quadrants._core._testing.qir_to_ptx, sm_90), and
`ptxas -v -arch=sm_90` reports registers, stack frame and spill bytes for both. Needs ptxas (a
CUDA toolkit: $CUDA_HOME/bin, /usr/local/cuda/bin or PATH); without it the script prints the
count of local-memory instructions in the PTX only.

    python benchmarks/spill_report.py [--n 32] [--keep DIR]
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

import quadrants as qd
from quadrants import _runtime
from quadrants._core import _testing
from quadrants._toolkit import find_ptxas


def make_kernels(n):
    @qd.dataclass
    class Unpacked:
        a: qd.types.vector(n, qd.f32, unpacked=True)
        b: qd.types.vector(n, qd.f32, unpacked=True)

    @qd.dataclass
    class Packed:
        a: qd.types.vector(n, qd.f32)
        b: qd.types.vector(n, qd.f32)

    def kernel_of(Holder):
        """The same kernel over either struct (one compiled kernel per struct type)."""

        @qd.kernel
        def kernel(x: qd.types.NDArray[qd.f32, 2], y: qd.types.NDArray[qd.f32, 2]):
            for i in range(x.shape[0]):
                t = Holder()
                for j in qd.static(range(n)):
                    t.a[j] = x[i, j]
                    t.b[j] = x[i, n + j]
                for k in qd.static(range(n)):
                    for j in qd.static(range(n)):
                        t.a[j] = t.a[j] * t.b[(j + k) % n] + t.b[j]
                for j in qd.static(range(n)):
                    y[i, j] = t.a[j] + t.b[j]

        return kernel

    return {"unpacked": kernel_of(Unpacked), "packed": kernel_of(Packed)}


def final_qir(kernel, n):
    x = np.zeros((4, 2 * n), np.float32)
    y = np.zeros((4, n), np.float32)
    kernel(x, y)
    for entry in kernel._compiled.values():
        for item in entry if isinstance(entry, tuple) else (entry,):
            if type(item).__name__ == "CompiledKernel":
                return item.qir
    raise RuntimeError("kernel not compiled")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=32, help="vector length (default 32)")
    parser.add_argument("--keep", help="write the PTX files into this directory")
    args = parser.parse_args()

    original = _runtime.compile_options

    def with_qir():
        options = dict(original())
        options["keep_qir"] = 1
        return options

    _runtime.compile_options = with_qir
    qd.init(arch=qd.cpu, offline_cache=False)
    ptxas = find_ptxas()
    directory = args.keep or tempfile.mkdtemp(prefix="qd_spill_")
    os.makedirs(directory, exist_ok=True)
    print(f"two {args.n}-element f32 vectors per thread, sm_90")
    print(f"{'layout':<10} {'registers':>9} {'stack':>7} {'spill st':>9} {'spill ld':>9} {'ld/st.local':>12}")
    for name, kernel in make_kernels(args.n).items():
        qir = final_qir(kernel, args.n)
        entry = re.search(r"kernel @([\w.$]+)", qir).group(1)
        ptx = _testing.qir_to_ptx(qir, entry)["ptx"]
        path = os.path.join(directory, f"{name}.ptx")
        with open(path, "w") as f:
            f.write(ptx)
        local = len(re.findall(r"\b(?:ld|st)\.local", ptx))
        regs = stack = spill_st = spill_ld = "-"
        if ptxas:
            proc = subprocess.run([ptxas, "-v", "-arch=sm_90", path, "-o", os.devnull],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                print(proc.stderr, file=sys.stderr)
                sys.exit(1)
            info = proc.stderr
            regs = re.search(r"Used (\d+) registers", info).group(1)
            stack = re.search(r"(\d+) bytes stack frame", info).group(1)
            spill_st = re.search(r"(\d+) bytes spill stores", info).group(1)
            spill_ld = re.search(r"(\d+) bytes spill loads", info).group(1)
        print(f"{name:<10} {regs:>9} {stack:>7} {spill_st:>9} {spill_ld:>9} {local:>12}")
    if not ptxas:
        print("ptxas not found: registers and spills not reported (install a CUDA toolkit)")
    if args.keep:
        print(f"PTX written to {directory}")
    else:
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
