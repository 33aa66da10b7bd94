"""Runs the whole pytest suite several times in one interpreter, as a long-lived process would.

    .venv/bin/python scripts/long_session.py            # three rounds of `pytest tests`
    .venv/bin/python scripts/long_session.py --rounds 2 -- tests/lang -x

Every round is a fresh pytest.main() call; the quadrants package, the extension and everything it
keeps between qd.init()/qd.reset() calls stay loaded, while the test modules are dropped from
sys.modules so that each round imports them again and defines (and compiles) every kernel anew.
Prints the resident set size and the time after each round; exits with the first non-zero pytest
status, so a failing test, an error or a crash in any round fails the run.
"""

import argparse
import os
import sys
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = os.path.join(REPO_ROOT, "tests")


def rss_mb():
    """The resident set size of this process in MiB, from /proc/self/statm."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / (1 << 20)


def forget_test_modules():
    """Drops the modules imported from tests/ (test files, conftests, helpers) from sys.modules."""
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None) or ""
        if os.path.abspath(path).startswith(TESTS + os.sep):
            del sys.modules[name]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("pytest_args", nargs="*", default=["tests", "-q"],
                        help="arguments for pytest (after --); default: tests -q")
    args = parser.parse_args()

    os.chdir(REPO_ROOT)
    sys.path.insert(0, REPO_ROOT)
    import pytest

    # No cache directory: a round must not change what the next one runs (--last-failed etc.).
    pytest_args = ["-p", "no:cacheprovider", *args.pytest_args]
    figures = []
    start = time.perf_counter()
    for round_number in range(1, args.rounds + 1):
        forget_test_modules()
        status = pytest.main(pytest_args)
        figures.append((rss_mb(), time.perf_counter() - start))
        print(f"long session: round {round_number} of {args.rounds}: pytest exit status "
              f"{int(status)}, RSS {figures[-1][0]:.1f} MiB, {figures[-1][1]:.0f} s elapsed",
              flush=True)
        if status != 0:
            return int(status)
    print("long session: RSS after each round: "
          + ", ".join(f"{rss:.1f} MiB" for rss, _ in figures)
          + f"; {figures[-1][1]:.0f} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
