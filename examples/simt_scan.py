"""simt_scan: a prefix sum of a large array with SIMT block operations.

What it shows:

- `qd.loop_config(block_dim=B)` before a parallel loop: iteration i runs on thread i % B of
  block i // B, so the threads of a block hold B consecutive elements;
- `qd.simt.block.inclusive_add`: the block's inclusive prefix sum (built from subgroup
  shuffles and a `SharedArray` of the subgroups' totals), and `qd.simt.block.thread_idx()`;
- `qd.simt.subgroup.reduce_all_max`: the largest element of each 32-lane subgroup;
- three kernels for the whole scan: scan each block, scan the block totals, add the offsets;
- on the CPU, `qd.init(arch=qd.cpu, cpu_simt=True)` emulates the GPU's blocks (--cpu).

The result is checked against NumPy's cumsum.

    .venv/bin/python examples/simt_scan.py [--n N] [--cpu]
"""

import argparse

import numpy as np

import quadrants as qd

B = 256  # threads per block


@qd.kernel
def scan_blocks(x: qd.types.ndarray(qd.i32, ndim=1), out: qd.types.ndarray(qd.i32, ndim=1),
                totals: qd.types.ndarray(qd.i32, ndim=1), peaks: qd.types.ndarray(qd.i32, ndim=1)):
    qd.loop_config(block_dim=B)
    for i in range(x.shape[0]):
        s = qd.simt.block.inclusive_add(x[i], B, qd.i32)
        out[i] = s
        if qd.simt.block.thread_idx() == B - 1:
            totals[i // B] = s
        peak = qd.simt.subgroup.reduce_all_max(x[i])
        if qd.simt.subgroup.elect():
            peaks[i // 32] = peak


@qd.kernel
def scan_totals(totals: qd.types.ndarray(qd.i32, ndim=1)):
    running = 0
    qd.loop_config(serialize=True)  # a loop carrying a value: one thread, in order
    for b in range(totals.shape[0]):
        t = totals[b]
        totals[b] = running
        running += t


@qd.kernel
def add_offsets(out: qd.types.ndarray(qd.i32, ndim=1), offsets: qd.types.ndarray(qd.i32, ndim=1)):
    for i in range(out.shape[0]):
        out[i] += offsets[i // B]


def main():
    parser = argparse.ArgumentParser(description="a prefix sum with SIMT block operations")
    parser.add_argument("--n", type=int, default=1 << 20, help="elements (a multiple of 256)")
    parser.add_argument("--cpu", action="store_true", help="emulate SIMT on the CPU")
    args = parser.parse_args()
    n = args.n // B * B
    if args.cpu:
        qd.init(arch=qd.cpu, cpu_simt=True)
    else:
        qd.init(arch=qd.gpu)

    x_np = np.random.default_rng(0).integers(0, 100, n).astype(np.int32)
    x, out = qd.ndarray(qd.i32, n), qd.ndarray(qd.i32, n)
    totals, peaks = qd.ndarray(qd.i32, n // B), qd.ndarray(qd.i32, n // 32)
    x.from_numpy(x_np)
    scan_blocks(x, out, totals, peaks)
    scan_totals(totals)
    add_offsets(out, totals)

    want = np.cumsum(x_np, dtype=np.int64).astype(np.int32)
    assert np.array_equal(out.to_numpy(), want), "prefix sum differs from NumPy"
    assert np.array_equal(peaks.to_numpy(), x_np.reshape(-1, 32).max(1)), "subgroup maxima differ"
    print(f"prefix sum of {n} elements: ok (last = {want[-1]})")


if __name__ == "__main__":
    main()
