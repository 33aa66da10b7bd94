"""Growth test: many qd.init / compile / launch / qd.reset cycles in one process must not grow it.

Each cycle initializes the CPU backend with the offline cache off, builds a kernel whose
constant changes with the cycle (so every cycle really runs the frontend, the passes and LLVM),
launches it on a field and on an ndarray, checks the results, and resets. The resident set size
is read after the warm-up cycles and at the end; the run fails when it grew by more than the
bound (the larger of --max-growth-mb and --max-growth-percent of the warm-up figure).

    .venv/bin/python tests/soak/compile_launch_reset.py              # 1000 cycles
    .venv/bin/python tests/soak/compile_launch_reset.py --cycles 20 --warmup 5 --no-bound

`make valgrind` runs a few cycles under Memcheck with --leak-check=full, where the growth bound
is left off (Valgrind's own bookkeeping grows) and the leak report is what counts.
"""

import argparse
import contextlib
import io
import os
import sys
import time

import numpy as np

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)

import quadrants as qd  # noqa: E402

N = 64


def rss_mb():
    """The resident set size of this process in MiB, from /proc/self/statm."""
    with open("/proc/self/statm") as f:
        resident_pages = int(f.read().split()[1])
    return resident_pages * os.sysconf("SC_PAGE_SIZE") / (1 << 20)


def make_kernels(scale):
    """Two kernels that fold `scale` in as a compile-time constant: a new value, a new compile."""

    @qd.kernel
    def fill_field(x: qd.template()):
        for i in x:
            x[i] = i * scale + 1

    @qd.kernel
    def fill_ndarray(a: qd.types.ndarray(dtype=qd.f32, ndim=1), offset: qd.f32) -> qd.f32:
        total = 0.0
        for i in range(a.shape[0]):
            a[i] = i * scale + offset
            total += a[i]
        return total

    return fill_field, fill_ndarray


def one_cycle(cycle):
    with contextlib.redirect_stdout(io.StringIO()):  # the "[Quadrants] Starting" line
        qd.init(arch=qd.cpu, offline_cache=False)
    scale = cycle % 97 + 2
    fill_field, fill_ndarray = make_kernels(scale)
    x = qd.field(qd.i32, shape=N)
    fill_field(x)
    expected = np.arange(N) * scale + 1
    if not np.array_equal(x.to_numpy(), expected):
        raise AssertionError(f"cycle {cycle}: field holds wrong values")
    a = np.zeros(N, dtype=np.float32)
    total = fill_ndarray(a, 0.5)
    expected = np.arange(N, dtype=np.float32) * scale + 0.5
    if not np.allclose(a, expected) or not np.isclose(total, expected.sum()):
        raise AssertionError(f"cycle {cycle}: ndarray holds wrong values")
    qd.reset()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=100,
                        help="cycles run before the first RSS reading")
    parser.add_argument("--max-growth-mb", type=float, default=8.0)
    parser.add_argument("--max-growth-percent", type=float, default=10.0)
    parser.add_argument("--no-bound", action="store_true",
                        help="report the RSS figures but do not fail on growth")
    args = parser.parse_args(argv)
    if not 0 < args.warmup < args.cycles:
        parser.error("need 0 < --warmup < --cycles")

    start = time.perf_counter()
    for cycle in range(args.warmup):
        one_cycle(cycle)
    warm = rss_mb()
    for cycle in range(args.warmup, args.cycles):
        one_cycle(cycle)
    end = rss_mb()
    seconds = time.perf_counter() - start

    bound = max(args.max_growth_mb, warm * args.max_growth_percent / 100)
    growth = end - warm
    print(f"{args.cycles} cycles in {seconds:.1f} s; RSS after {args.warmup} cycles "
          f"{warm:.1f} MiB, at the end {end:.1f} MiB (growth {growth:+.1f} MiB, "
          f"bound {bound:.1f} MiB)")
    if not args.no_bound and growth > bound:
        print("FAIL: the process grew beyond the bound", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
