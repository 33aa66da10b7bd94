"""heat2d: heat spreading over a periodic 2-D plate, an explicit finite-difference stencil.

What it shows:

- `qd.field`: global 2-D arrays that kernels use without taking them as parameters;
- `qd.ndrange(N, N)`: a 2-D loop flattened into one parallel loop;
- `qd.template()` parameters: `step(src, dst)` is compiled once per (src, dst) pair of fields,
  so the two fields can swap roles every step without copying ("ping-pong");
- a kernel returning a value: `total_heat()` sums the plate into a kernel-scope variable
  (`total += ...` inside a parallel loop is an atomic add) and returns it;
- `field.from_numpy()` / `field.to_numpy()` and element access from Python (`T[i, j]`).

Each step replaces every cell by itself plus `ALPHA` times the discrete Laplacian of its four
neighbours; the plate wraps around at the edges, so no heat leaves it and the total stays
constant. The script checks that, and compares the final field with the same computation in
NumPy.

    .venv/bin/python examples/heat2d.py [--steps STEPS]
"""

import argparse
import time

import numpy as np

import quadrants as qd

N = 256  # the plate is N x N cells
ALPHA = 0.2  # diffusion number; the explicit scheme is stable for ALPHA <= 0.25

qd.init(arch=qd.gpu)

T_a = qd.field(qd.f32, shape=(N, N))
T_b = qd.field(qd.f32, shape=(N, N))


@qd.kernel
def initialize(T: qd.template()):
    for i, j in qd.ndrange(N, N):
        T[i, j] = 20.0  # room temperature everywhere...
        if N // 4 <= i < N // 2 and N // 4 <= j < N // 2:
            T[i, j] = 100.0  # ...but a hot square


@qd.kernel
def step(src: qd.template(), dst: qd.template()):
    for i, j in qd.ndrange(N, N):
        # Python's % keeps the result in [0, N): (0 - 1) % N == N - 1.
        up, down = (i - 1) % N, (i + 1) % N
        left, right = (j - 1) % N, (j + 1) % N
        laplacian = src[up, j] + src[down, j] + src[i, left] + src[i, right] - 4.0 * src[i, j]
        dst[i, j] = src[i, j] + ALPHA * laplacian


@qd.kernel
def total_heat(T: qd.template()) -> qd.f64:
    total = qd.f64(0.0)
    for i, j in T:
        total += T[i, j]
    return total


def numpy_reference(steps):
    T = np.full((N, N), 20.0, dtype=np.float32)
    T[N // 4 : N // 2, N // 4 : N // 2] = 100.0
    alpha = np.float32(ALPHA)
    for _ in range(steps):
        neighbours = np.roll(T, 1, 0) + np.roll(T, -1, 0) + np.roll(T, 1, 1) + np.roll(T, -1, 1)
        T = T + alpha * (neighbours - np.float32(4.0) * T)
    return T


def main():
    parser = argparse.ArgumentParser(description="2-D heat diffusion on a periodic plate")
    parser.add_argument("--steps", type=int, default=500)
    args = parser.parse_args()

    initialize(T_a)
    heat_before = total_heat(T_a)

    # The first two steps compile step(T_a, T_b) and step(T_b, T_a); the rest reuse them.
    src, dst = T_a, T_b
    timings = []
    for _ in range(args.steps):
        start = time.perf_counter()
        step(src, dst)
        qd.sync()
        timings.append(time.perf_counter() - start)
        src, dst = dst, src
    heat_after = total_heat(src)

    compile_ms = sum(timings[:2]) * 1e3
    per_step_us = float(np.median(timings[2:])) * 1e6 if len(timings) > 2 else float("nan")
    print(f"{args.steps} steps on a {N} x {N} plate: first two steps (with compilation) "
          f"{compile_ms:.1f} ms, then {per_step_us:.1f} us per step (median)")
    for i, j, where in [
        (3 * N // 8, 3 * N // 8, "centre of the hot square"),
        (N // 4, N // 4, "corner of the hot square"),
        (N // 2 + 8, 3 * N // 8, "8 cells outside it"),
        (3 * N // 4, 3 * N // 4, "far from it"),
    ]:
        print(f"  T[{i:3d}, {j:3d}] = {src[i, j]:8.4f}   ({where})")

    drift = abs(heat_after - heat_before) / heat_before
    print(f"total heat before: {heat_before:.6e}")
    print(f"total heat after:  {heat_after:.6e}   (relative change {drift:.1e})")

    reference = numpy_reference(args.steps)
    difference = float(np.max(np.abs(src.to_numpy() - reference)))
    print(f"max |T - NumPy|:   {difference:.2e}")

    if drift > 1e-5 or difference > 1e-3:
        raise SystemExit("FAILED")
    print("OK")


if __name__ == "__main__":
    main()
