"""A bounded run of the call fuzzer (tests/python/call_fuzz.py): random arguments for a set of
kernels, each call made through the fast path and the Python path, which must agree with each
other and with NumPy, and leave the memory around every NumPy argument untouched. A fresh seed
every run; a failure names it, and `python tests/python/call_fuzz.py --seed S` replays it."""

import random
import warnings

import call_fuzz
import quadrants as qd
from qd_helpers import requires_compiler

pytestmark = requires_compiler


def test_fast_and_python_launch_paths_agree_on_random_arguments(arch):
    seed = random.randrange(2**32)
    qd.init(arch=getattr(qd, arch), offline_cache=False)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            counts, failures = call_fuzz.fuzz(2000, seed)
    finally:
        qd.reset()
    assert not failures, f"seed {seed}:\n" + "\n".join(failures[:20])
    assert counts["fast"] > 100 and counts["ok"] > 300 and counts["raised"] > 300, counts
