"""histogram: count samples into bins with atomic operations, and find their range.

What it shows:

- `counts[b] += 1` on an array element, from a parallel loop: `+=` (and `-=`, `&=`, `|=`,
  `^=`) on global data is an atomic read-modify-write, so threads that hit the same bin at the
  same time do not lose counts;
- the explicit atomics `qd.atomic_min` / `qd.atomic_max` on kernel-scope variables;
- a kernel that returns several values (`-> (qd.f32, qd.f32)`);
- `qd.ndarray`, an array allocated by Quadrants, next to a plain NumPy array argument;
- `qd.cast` to turn a float into a bin index (truncation toward zero).

The samples are normally distributed; the script draws the histogram as text and checks the
counts against NumPy's `bincount` of the same bin indices.

    .venv/bin/python examples/histogram.py [--samples N] [--bins B]
"""

import argparse

import numpy as np

import quadrants as qd

LOW, HIGH = -4.0, 4.0  # the range covered by the bins; samples outside it are not counted


@qd.kernel
def value_range(x: qd.types.ndarray(dtype=qd.f32, ndim=1)) -> (qd.f32, qd.f32):
    lo = x[0]
    hi = x[0]
    for i in range(x.shape[0]):
        qd.atomic_min(lo, x[i])
        qd.atomic_max(hi, x[i])
    return lo, hi


@qd.kernel
def fill_histogram(
    x: qd.types.ndarray(dtype=qd.f32, ndim=1),
    counts: qd.types.ndarray(dtype=qd.i32, ndim=1),
):
    nbins = counts.shape[0]
    scale = nbins / (HIGH - LOW)
    for i in range(x.shape[0]):
        if LOW <= x[i] < HIGH:
            b = qd.cast((x[i] - LOW) * scale, qd.i32)
            counts[b] += 1


def main():
    parser = argparse.ArgumentParser(description="a histogram with atomics")
    parser.add_argument("--samples", type=int, default=1_000_000)
    parser.add_argument("--bins", type=int, default=32)
    args = parser.parse_args()

    qd.init(arch=qd.gpu)

    rng = np.random.default_rng(7)
    x = rng.standard_normal(args.samples).astype(np.float32)

    lo, hi = value_range(x)
    print(f"{args.samples} samples, from {lo:.4f} to {hi:.4f} "
          f"(NumPy: {x.min():.4f} to {x.max():.4f})")

    counts = qd.ndarray(qd.i32, shape=args.bins)
    fill_histogram(x, counts)
    result = counts.to_numpy()

    # Draw it: one row per bin, the bar proportional to the count.
    width = 50
    scale = result.max() if result.max() > 0 else 1
    bin_width = (HIGH - LOW) / args.bins
    for b, count in enumerate(result):
        left = LOW + b * bin_width
        bar = "#" * round(width * count / scale)
        print(f"[{left:+5.2f}, {left + bin_width:+5.2f})  {count:7d}  {bar}")

    # NumPy: the same bin index, computed with the same float32 arithmetic.
    inside = x[(x >= LOW) & (x < HIGH)]
    scale32 = np.float32(args.bins / (HIGH - LOW))
    indices = ((inside - np.float32(LOW)) * scale32).astype(np.int32)
    expected = np.bincount(indices, minlength=args.bins)
    print(f"counted {result.sum()} of {args.samples} samples; "
          f"bins that differ from NumPy: {int(np.count_nonzero(result != expected))}")

    if not np.array_equal(result, expected) or (lo, hi) != (x.min(), x.max()):
        raise SystemExit("FAILED")
    print("OK")


if __name__ == "__main__":
    main()
