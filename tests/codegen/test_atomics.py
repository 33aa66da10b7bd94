"""Atomics on the CPU under real contention (several pool threads on one element).

Results that do not depend on the interleaving are checked exactly: counts, extremes,
products of doublings, bit masks, and for atomic_xchg the multiset of values seen.
"""

import threading

import numpy as np
import pytest

from qir_helpers import load
from quadrants._core import _testing


@pytest.mark.parametrize("nthreads", [1, 2, 4])
def test_atomic_add_and_cas_count(nthreads):
    fields = {"counter": np.array(5, np.int32), "cas_counter": np.array(0, np.int32)}
    h = _testing.compile_qir(load("atomics.qir"), "count", fields=fields, nthreads=nthreads)
    assert h.info["nthreads"] == nthreads
    h.launch(100000)
    assert int(fields["counter"]) == 100005
    assert int(fields["cas_counter"]) == 100000
    h.launch(100000)
    assert int(fields["counter"]) == 200005
    assert int(fields["cas_counter"]) == 200000


def test_atomic_min_max():
    rng = np.random.default_rng(0)
    n = 200000
    x = rng.standard_normal(n).astype(np.float32) * 1000
    y = rng.integers(-2**40, 2**40, n, dtype=np.int64)
    fields = {
        "lo": np.array(np.inf, np.float32),
        "hi": np.array(-np.inf, np.float32),
        "ilo": np.array(2**62, np.int64),
        "ihi": np.array(0, np.uint32),
    }
    _testing.run_qir(load("atomics.qir"), "extremes", [x, y], fields=fields, nthreads=2)
    assert float(fields["lo"]) == float(x.min())
    assert float(fields["hi"]) == float(x.max())
    assert int(fields["ilo"]) == int(y.min())
    assert int(fields["ihi"]) == int(y.astype(np.uint32).max())


def test_atomic_mul_and_or_xchg():
    fields = {
        "iprod": np.array(3, np.int64),
        "fprod": np.array(0.75, np.float64),
        "bits_and": np.array(2**64 - 1, np.uint64),
        "bits_or": np.array(0, np.uint64),
        "swap": np.array(-1, np.int32),
    }
    old = np.zeros(64, dtype=np.int32)
    _testing.run_qir(load("atomics.qir"), "misc", [old], fields=fields, nthreads=2)
    assert int(fields["iprod"]) == 3 * 2**40
    assert float(fields["fprod"]) == 0.75 * 2.0**40
    assert int(fields["bits_and"]) == 0
    assert int(fields["bits_or"]) == 2**64 - 1
    # every exchange returned the previous value: the olds plus the final value are the
    # initial value plus every stored index, each exactly once
    seen = sorted(old.tolist() + [int(fields["swap"])])
    assert seen == [-1] + list(range(64))


def test_atomic_narrow_types():
    h = np.zeros(4, dtype=np.float16)
    b = np.zeros(5, dtype=np.uint8)
    n = 4000
    _testing.run_qir(load("atomics.qir"), "narrow", [h, b, n], nthreads=2)
    np.testing.assert_array_equal(h, np.full(4, n // 4, dtype=np.float16))
    np.testing.assert_array_equal(b[:4], np.full(4, (n // 4) % 256, dtype=np.uint8))
    assert int(b[4]) == (-n) % 256


def test_concurrent_launches_from_python_threads():
    """Launches of one kernel from several Python threads (GIL released while they run) are
    serialized on the pool and all counted."""
    fields = {"counter": np.array(0, np.int32), "cas_counter": np.array(0, np.int32)}
    h = _testing.compile_qir(load("atomics.qir"), "count", fields=fields, nthreads=2)

    def work():
        for i in range(50):
            h.launch(1000 + i)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    want = 3 * sum(1000 + i for i in range(50))
    assert int(fields["counter"]) == want
    assert int(fields["cas_counter"]) == want
