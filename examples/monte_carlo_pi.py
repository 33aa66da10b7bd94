"""monte_carlo_pi: estimate pi by throwing random points at a square.

A point (x, y) drawn uniformly from the unit square falls inside the quarter circle
x^2 + y^2 < 1 with probability pi / 4; counting the hits among many points estimates pi.

What it shows:

- `qd.random()`: a uniform float in [0, 1), drawn independently by every iteration of a
  parallel loop (the numbers depend on `qd.init(random_seed=...)` and on the launch, not on how
  the loop is split between threads);
- a reduction: `hits += 1` on a variable declared at the kernel's top level, from inside the
  parallel loop, is an atomic add; the kernel returns the total;
- `@qd.func` helpers, inlined into the kernel, with integer arithmetic on `qd.u32`
  (multiplication wraps around modulo 2^32, `>>` on unsigned values shifts in zeros): the
  second kernel makes its own random numbers by hashing the point's index, so that the same
  few lines of NumPy can reproduce its count exactly, which the script checks.

    .venv/bin/python examples/monte_carlo_pi.py [--points N] [--seed S]
"""

import argparse
import math
import time

import numpy as np

import quadrants as qd


@qd.func
def mix32(h):
    # An integer hash with good avalanche: every input bit affects every output bit.
    h ^= h >> 16
    h *= qd.u32(0x7FEB352D)
    h ^= h >> 15
    h *= qd.u32(0x846CA68B)
    h ^= h >> 16
    return h


@qd.func
def uniform(seed, k):
    # A float in [0, 1) from the top 24 bits of the hash (a float32 holds 24 bits exactly).
    h = mix32(qd.cast(seed, qd.u32) * qd.u32(0x9E3779B9) + qd.cast(k, qd.u32))
    return qd.cast(h >> 8, qd.f32) * (1.0 / 16777216.0)


@qd.kernel
def count_hits(n: qd.i32) -> qd.i32:
    hits = 0
    for _ in range(n):
        x = qd.random()
        y = qd.random()
        if x * x + y * y < 1.0:
            hits += 1
    return hits


@qd.kernel
def count_hits_hashed(n: qd.i32, seed: qd.i32) -> qd.i32:
    hits = 0
    for k in range(n):
        x = uniform(seed, 2 * k)
        y = uniform(seed, 2 * k + 1)
        if x * x + y * y < 1.0:
            hits += 1
    return hits


def numpy_hits(n, seed):
    """The same computation with NumPy arrays (uint32 arithmetic wraps like the kernel's)."""
    k = np.arange(2 * n, dtype=np.uint32)
    h = np.uint32(seed) * np.uint32(0x9E3779B9) + k
    h ^= h >> np.uint32(16)
    h *= np.uint32(0x7FEB352D)
    h ^= h >> np.uint32(15)
    h *= np.uint32(0x846CA68B)
    h ^= h >> np.uint32(16)
    u = (h >> np.uint32(8)).astype(np.float32) * np.float32(1.0 / 16777216.0)
    x, y = u[0::2], u[1::2]
    return int(np.count_nonzero(x * x + y * y < np.float32(1.0)))


def main():
    parser = argparse.ArgumentParser(description="estimate pi with random points")
    parser.add_argument("--points", type=int, default=1 << 24)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    qd.init(arch=qd.gpu, random_seed=args.seed)
    n = args.points
    # The standard deviation of an estimate: 4 * sqrt(p (1 - p) / n) with p = pi / 4.
    sigma = 4.0 * math.sqrt(math.pi / 4 * (1 - math.pi / 4) / n)
    print(f"{n} points; an estimate should be within a few times +-{sigma:.6f} of pi")

    results = {}
    for name, kernel, kernel_args in [
        ("qd.random()", count_hits, (n,)),
        ("hashed index", count_hits_hashed, (n, args.seed)),
    ]:
        kernel(16, *kernel_args[1:])  # compile once, so the timing below is the run alone
        start = time.perf_counter()
        hits = kernel(*kernel_args)
        elapsed_ms = (time.perf_counter() - start) * 1e3
        estimate = 4.0 * hits / n
        results[name] = (hits, estimate)
        print(f"{name:13s} {hits} inside, pi ~ {estimate:.6f}, "
              f"error {estimate - math.pi:+.6f} ({elapsed_ms:.1f} ms)")

    expected_hits = numpy_hits(n, args.seed)
    print(f"NumPy, same hashed numbers: {expected_hits} inside")

    hashed_hits = results["hashed index"][0]
    if hashed_hits != expected_hits:
        raise SystemExit("FAILED: the hashed kernel and NumPy disagree")
    if any(abs(estimate - math.pi) > 6 * sigma for _, estimate in results.values()):
        raise SystemExit("FAILED: an estimate is too far from pi")
    print("OK")


if __name__ == "__main__":
    main()
