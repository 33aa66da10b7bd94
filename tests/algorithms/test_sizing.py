"""The *_scratch_slots helpers: the exact values of the spec's table, the formulas at many more
points, the default depth, and the same numbers from inside a kernel (runtime n, compile-time D)."""

import numpy as np
import pytest

import quadrants as qd

A = qd.algorithms


# ---- the formulas, transcribed


def _ceil(x):
    return (x + 255) // 256


def _atleast1(s):
    return s + (s < 1)


def _depth(n):
    d = 1
    while 256**d < n:
        d += 1
    return d


def ref_reduce(n, D):
    s, c = 0, n
    for _ in range(D - 1):
        c = _ceil(c)
        s += c
    return _atleast1(s)


def ref_scan(n, D):
    if D <= 1:
        return 1
    s = c = _ceil(n)
    for _ in range(D - 2):
        c = _ceil(c)
        s += c
    return _atleast1(s)


def ref_sort(n, D):
    s = c = _ceil(n) * 256
    for _ in range(D - 1):
        c = _ceil(c)
        s += c
    return _atleast1(s)


def _levels(t, cur):
    for _ in range(8):
        t = _ceil(t)
        cur += t * (t > 1)
    return cur


def ref_select(n):
    if n <= 0:
        return 1
    b0 = _ceil(n)
    return _atleast1(_levels(b0, n + b0))


def ref_rbk(n):
    if n <= 0:
        return 1
    if n <= 256:
        return n
    b0 = _ceil(n)
    return _levels(b0, n + b0)


# n, D, reduce = scan, select, reduce_by_key, sort
TABLE = [
    (0, 1, 1, 1, 1, 1),
    (1, 1, 1, 2, 1, 256),
    (8, 1, 1, 9, 8, 256),
    (257, 2, 2, 259, 259, 514),
    (1000, 2, 4, 1004, 1004, 1028),
    (65536, 2, 256, 65792, 65792, 65792),
    (1_000_000, 3, 3923, 1_003_923, 1_003_923, 1_004_115),
    (1 << 20, 3, 4112, 1_052_688, 1_052_688, 1_052_688),
    (1 << 20, 4, 4113, 1_052_688, 1_052_688, 1_052_689),
]


@pytest.mark.parametrize("n,D,red,sel,rbk,srt", TABLE, ids=[f"n{r[0]}-D{r[1]}" for r in TABLE])
def test_table(n, D, red, sel, rbk, srt):
    assert A.reduce_scratch_slots(n, D) == red
    assert A.exclusive_scan_scratch_slots(n, D) == red
    assert A.select_scratch_slots(n) == sel
    assert A.reduce_by_key_scratch_slots(n) == rbk
    assert A.sort_scratch_slots(n, D) == srt
    if D == _depth(n):  # the depth derived from n when it is omitted
        assert A.reduce_scratch_slots(n) == red
        assert A.exclusive_scan_scratch_slots(n) == red
        assert A.sort_scratch_slots(n) == srt


def _points(rng):
    pts = {0, 1, 2, 255, 256, 257, 511, 512, 513, 65535, 65536, 65537, 256**3 - 1, 256**3,
           256**3 + 1, 2**31 - 1, 2**32}
    pts |= {int(x) for x in rng.integers(0, 2**32, 40)}
    pts |= {int(x) for x in rng.integers(0, 70000, 40)}
    return sorted(pts)


def test_formulas_everywhere(rng):
    for n in _points(rng):
        assert A.select_scratch_slots(n) == ref_select(n), n
        assert A.reduce_by_key_scratch_slots(n) == ref_rbk(n), n
        d = _depth(n)
        assert A.reduce_scratch_slots(n) == ref_reduce(n, d), n
        assert A.exclusive_scan_scratch_slots(n) == ref_scan(n, d), n
        assert A.sort_scratch_slots(n) == ref_sort(n, d), n
        for D in range(d, 5):  # exact and over-specified depths
            assert A.reduce_scratch_slots(n, D) == ref_reduce(n, D), (n, D)
            assert A.exclusive_scan_scratch_slots(n, D) == ref_scan(n, D), (n, D)
            assert A.sort_scratch_slots(n, D) == ref_sort(n, D), (n, D)


def test_results_are_positive_ints():
    for n in (0, 1, 300):
        for v in (A.reduce_scratch_slots(n, 1), A.exclusive_scan_scratch_slots(n, 1),
                  A.sort_scratch_slots(n, 1), A.select_scratch_slots(n),
                  A.reduce_by_key_scratch_slots(n), A.reduce_scratch_slots(n),
                  A.exclusive_scan_scratch_slots(n), A.sort_scratch_slots(n)):
            assert type(v) is int and v >= 1, (n, v)


def test_scan_equals_reduce_from_depth_2(rng):
    for n in _points(rng):
        for D in range(max(2, _depth(n)), 5):
            assert A.exclusive_scan_scratch_slots(n, D) == A.reduce_scratch_slots(n, D)


# every result fits an i32 up to n = 2e9 (the kernel computes in i32)
KERNEL_N = [0, 1, 8, 255, 256, 257, 1000, 65535, 65536, 65537, 1_000_000, 1 << 20, 2_000_000_000]


@pytest.mark.parametrize("D", [1, 2, 3, 4])
def test_in_kernel(D, rng):
    """Runtime n, compile-time D: the same numbers as the host for every n the depth covers."""
    ns = [n for n in KERNEL_N + [int(x) for x in rng.integers(0, 2_000_000_000, 5)] if 256**D >= n]

    @qd.kernel
    def sizes(ns: qd.types.ndarray(qd.i32, ndim=1), out: qd.types.ndarray(qd.i64, ndim=2)):
        for i in range(ns.shape[0]):
            n = ns[i]
            out[i, 0] = A.reduce_scratch_slots(n, D)
            out[i, 1] = A.exclusive_scan_scratch_slots(n, D)
            out[i, 2] = A.sort_scratch_slots(n, D)
            out[i, 3] = A.select_scratch_slots(n)
            out[i, 4] = A.reduce_by_key_scratch_slots(n)

    out = np.full((len(ns), 5), -1, np.int64)
    sizes(np.array(ns, np.int32), out)
    for i, n in enumerate(ns):
        exp = [A.reduce_scratch_slots(n, D), A.exclusive_scan_scratch_slots(n, D),
               A.sort_scratch_slots(n, D), A.select_scratch_slots(n),
               A.reduce_by_key_scratch_slots(n)]
        assert list(out[i]) == exp, (n, D)


def test_in_kernel_checks_scratch_capacity():
    """The intended use: compare the requirement for a device-side n with scratch.shape[0]."""
    D = 2

    @qd.kernel
    def enough(scratch: qd.types.ndarray(qd.u32, ndim=1), cnt: qd.types.ndarray(qd.i32, ndim=1),
               ok: qd.types.ndarray(qd.i32, ndim=1)):
        for _ in range(1):
            ok[0] = A.sort_scratch_slots(cnt[0], D) <= scratch.shape[0]

    scratch = np.zeros(A.sort_scratch_slots(1000, D), np.uint32)
    ok = np.zeros(1, np.int32)
    for n, exp in ((1000, 1), (999, 1), (1024, 1), (1025, 0), (65536, 0)):
        enough(scratch, np.array([n], np.int32), ok)
        assert ok[0] == exp, n
