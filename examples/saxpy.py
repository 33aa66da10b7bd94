"""saxpy: the first kernel to run. y = a * x + y over a few million floats.

What it shows:

- a @qd.kernel taking a scalar and two array parameters (`qd.types.ndarray`);
- NumPy arrays passed straight to a kernel: on the CPU the kernel works on the arrays' own
  memory, so the result is visible in `y` as soon as the call returns;
- a top-level `for` loop: its iterations run in parallel (on the CPU, across a thread pool);
- the first call compiles the kernel, later calls with the same argument types reuse it;
- checking the result against NumPy and timing both.

`qd.init(arch=qd.gpu)` picks a GPU when there is one and otherwise falls back to the CPU with a
warning. Run it with `make run`, or `.venv/bin/python examples/saxpy.py [--n N]`.
"""

import argparse
import statistics
import time

import numpy as np

import quadrants as qd


@qd.kernel
def saxpy(
    a: qd.f32,
    x: qd.types.ndarray(dtype=qd.f32, ndim=1),
    y: qd.types.ndarray(dtype=qd.f32, ndim=1),
):
    for i in range(x.shape[0]):
        y[i] = a * x[i] + y[i]


def median_ms(fn, runs):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description="y = a * x + y, checked against NumPy")
    parser.add_argument("--n", type=int, default=1 << 23, help="number of elements")
    parser.add_argument("--runs", type=int, default=20, help="timed calls")
    args = parser.parse_args()

    qd.init(arch=qd.gpu)

    rng = np.random.default_rng(0)
    a = 2.5
    x = rng.standard_normal(args.n).astype(np.float32)
    y0 = rng.standard_normal(args.n).astype(np.float32)

    # First call: compiles, then runs.
    y = y0.copy()
    start = time.perf_counter()
    saxpy(a, x, y)
    qd.sync()
    first_ms = (time.perf_counter() - start) * 1e3

    expected = np.float32(a) * x + y0
    max_error = float(np.max(np.abs(y - expected)))
    y_checked = y.copy()
    print(f"n = {args.n}, a = {a}")
    print(f"y[:4]            = {y[:4]}")
    print(f"expected[:4]     = {expected[:4]}")
    # The CPU backend may fuse a * x + y into one FMA instruction (one rounding instead of two),
    # so the last bit can differ from NumPy's.
    print(f"max |y - NumPy|  = {max_error:.3g} (largest |y| is {np.max(np.abs(expected)):.3g})")

    # Later calls reuse the compiled kernel. Each call updates y in place.
    def run_kernel():
        saxpy(a, x, y)
        qd.sync()

    kernel_ms = median_ms(run_kernel, args.runs)
    a32 = np.float32(a)
    numpy_ms = median_ms(lambda: np.add(a32 * x, y, out=y), args.runs)
    gbytes = 3 * 4 * args.n / 1e9  # read x and y, write y
    print(f"first call (compile + run): {first_ms:8.2f} ms")
    bandwidth = gbytes / kernel_ms * 1e3
    print(f"kernel, median of {args.runs}:     {kernel_ms:8.2f} ms  ({bandwidth:.1f} GB/s)")
    print(f"NumPy a * x + y, median:    {numpy_ms:8.2f} ms")

    if not np.allclose(y_checked, expected, rtol=1e-6, atol=1e-6):
        raise SystemExit("FAILED: the kernel's result differs from NumPy's")
    print("OK")


if __name__ == "__main__":
    main()
