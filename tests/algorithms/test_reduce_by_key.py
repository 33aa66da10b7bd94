"""reduce_by_key_add against NumPy: key and value dtypes, the capacity levels, run patterns (all
distinct, one long run across many tiles, NaN keys), and fields as globals."""

import numpy as np
import pytest

import quadrants as qd

from ._util import (
    NP,
    SCALARS_32,
    SIMT_MAX_N,
    assert_equal_exact,
    assert_sum_close,
    assert_untouched,
    count,
    guarded_scratch,
    is_float,
    nd1,
    pick_n,
    random_keys,
    sentinel,
    skip_big,
)


@qd.kernel
def run_rbk(keys_in: nd1, values_in: nd1, keys_out: nd1, values_out: nd1, num_runs: nd1,
            scratch: nd1, cnt: nd1, value_dtype: qd.template(), D: qd.template()):
    qd.algorithms.reduce_by_key_add(keys_in, values_in, keys_out, values_out, num_runs, scratch,
                                    cnt[0], value_dtype, D)


def expected_runs(k, v, vdt):
    """(run keys, run sums in float64 or wrapped in the value dtype, run sums of |v|)."""
    if k.size == 0:
        return k, v, v.astype(np.float64)
    heads = np.flatnonzero(np.concatenate([[True], k[1:] != k[:-1]]))  # NaN != NaN: own run
    if is_float(vdt):
        sums = np.add.reduceat(v.astype(np.float64), heads)
    else:
        sums = np.add.reduceat(v, heads, dtype=v.dtype)  # integers wrap as on the device
    return k[heads], sums, np.add.reduceat(np.abs(v.astype(np.float64)), heads)


def random_run_values(rng, vdt, n):
    t = NP[vdt]
    if is_float(vdt):
        return (rng.standard_normal(n) * 100).astype(t)
    info = np.iinfo(t)
    return rng.integers(info.min, info.max, n, dtype=t, endpoint=True)


def rbk_and_check(k, v, n, D, vdt, extra=5):
    """reduce_by_key_add over the first n of k / v (longer; the rest must not count), scratch of
    exactly reduce_by_key_scratch_slots(n) plus a guard."""
    keys_out, values_out = sentinel(k.dtype, n + extra), sentinel(v.dtype, n + extra)
    num_runs = sentinel(np.int32, 2)
    slots = qd.algorithms.reduce_by_key_scratch_slots(n)
    scratch = guarded_scratch(slots)
    run_rbk(k, v, keys_out, values_out, num_runs, scratch, count(n), vdt, D)
    what = f"reduce_by_key_add {k.dtype} keys, {v.dtype} values, n={n} D={D}"
    rk, rs, scale = expected_runs(k[:n], v[:n], vdt)
    r = len(rk)
    assert num_runs[0] == r, f"{what}: num_runs {num_runs[0]}, expected {r}"
    assert_untouched(num_runs, 1, f"{what}: num_runs")
    assert_equal_exact(keys_out[:r], rk, f"{what}: keys_out")
    assert_untouched(keys_out, r, f"{what}: keys_out")
    if is_float(vdt):
        assert_sum_close(values_out[:r], rs, scale, vdt, f"{what}: values_out")
    else:
        assert_equal_exact(values_out[:r], rs, f"{what}: values_out")
    assert_untouched(values_out, r, f"{what}: values_out")  # only the runs' slots are written
    assert_untouched(scratch, slots, f"{what}: scratch")


DTYPE_PAIRS = [(kd, vd) for kd in SCALARS_32 for vd in SCALARS_32]


@pytest.mark.parametrize("kdt,vdt", DTYPE_PAIRS, ids=[f"{k}-{v}" for k, v in DTYPE_PAIRS])
def test_key_value_dtypes(kdt, vdt, rng):
    for n in (0, 1, 256, 257, pick_n("rand", rng, 256**2)):
        for distinct in (3, 1000):  # long runs, then mostly short ones
            k = random_keys(rng, kdt, n + 5, distinct)
            rbk_and_check(k, random_run_values(rng, vdt, n + 5), n, 2, vdt)


CAPACITY = (
    [(1, n) for n in (0, 1, 255, 256, "rand")]
    + [(2, n) for n in (1, 5, 255, 256, 257, 2048, 2049, 65535, 65536, "rand")]
    + [(3, n) for n in (1, 5, 256, 257, 65537, "rand", 200_000, 524_289)]
    + [(4, n) for n in (5, 65537)]
)


@pytest.mark.parametrize("D,n", CAPACITY, ids=[f"D{d}-n{n}" for d, n in CAPACITY])
def test_capacity_levels(D, n, mode, rng):
    """Every capacity level around its tile boundaries, and over-specified depths (n <= 256 with
    D >= 2 included) with scratch sized exactly for the live n."""
    n = pick_n(n, rng, min(256**D, SIMT_MAX_N if mode == "cpu-simt" else 300_000))
    skip_big(mode, n)
    k = np.repeat(rng.integers(0, 50, n + 5, dtype=np.int32), rng.integers(1, 40, n + 5))[: n + 5]
    rbk_and_check(k, rng.integers(-1000, 1000, n + 5, dtype=np.int32), n, D, qd.i32)


@pytest.mark.parametrize("pattern", ["distinct", "one-run", "alternating", "nan-keys"])
def test_run_patterns(pattern, mode, rng):
    n = 65537 if mode == "cpu-simt" else 200_000
    if pattern == "distinct":
        k = np.arange(n, dtype=np.float32)
    elif pattern == "one-run":  # one run across every tile: its sum gathers all of them
        k = np.full(n, -2.5, np.float32)
    elif pattern == "alternating":
        k = (np.arange(n) % 2).astype(np.float32)
    else:  # NaN != NaN: every NaN is a run of its own, even next to another NaN
        k = np.repeat(rng.integers(0, 5, n), 3)[:n].astype(np.float32)
        k[rng.random(n) < 0.1] = np.nan
    rbk_and_check(k, rng.integers(-100, 100, n).astype(np.float32), n, 3, qd.f32, extra=0)


def test_fields_as_globals(rng):
    N, D = 5000, 2
    n = N - 17
    k = np.repeat(rng.integers(0, 9, N, dtype=np.uint32), 4)[:N]
    v = rng.integers(0, 2**32, N, dtype=np.uint32)
    keys_in, values_in = qd.field(qd.u32, N), qd.field(qd.u32, N)
    keys_out, values_out = qd.field(qd.u32, N), qd.field(qd.u32, N)
    num_runs, cnt = qd.field(qd.i32, 1), qd.field(qd.i32, 1)
    scratch = qd.field(qd.u32, qd.algorithms.reduce_by_key_scratch_slots(N))
    keys_in.from_numpy(k)
    values_in.from_numpy(v)
    keys_out.from_numpy(sentinel(np.uint32, N))
    cnt.from_numpy(count(n))

    @qd.kernel
    def run():
        qd.algorithms.reduce_by_key_add(keys_in, values_in, keys_out, values_out, num_runs,
                                        scratch, cnt[0], qd.u32, D)

    run()
    rk, rs, _ = expected_runs(k[:n], v[:n], qd.u32)
    r = int(num_runs.to_numpy()[0])
    assert r == len(rk)
    got_k = keys_out.to_numpy()
    assert_equal_exact(got_k[:r], rk, "field reduce_by_key_add: keys_out")
    assert_untouched(got_k, r, "field reduce_by_key_add: keys_out")
    assert_equal_exact(values_out.to_numpy()[:r], rs, "field reduce_by_key_add: values_out")


@pytest.mark.parametrize("backend", ["FIELD", "NDARRAY"])
def test_qd_tensor(backend, rng):
    n, D = 3000, 2
    be = getattr(qd.Backend, backend)
    k = np.repeat(rng.integers(-3, 3, n, dtype=np.int32), 5)[:n]
    v = (rng.standard_normal(n) * 10).astype(np.float32)
    t = {name: qd.tensor(dt, (n,), backend=be) for name, dt in
         (("ki", qd.i32), ("vi", qd.f32), ("ko", qd.i32), ("vo", qd.f32))}
    num_runs, cnt = qd.tensor(qd.i32, (1,), backend=be), qd.tensor(qd.i32, (1,), backend=be)
    scratch = qd.tensor(qd.u32, (qd.algorithms.reduce_by_key_scratch_slots(n),), backend=be)
    t["ki"].from_numpy(k)
    t["vi"].from_numpy(v)
    cnt.from_numpy(count(n))

    @qd.kernel
    def run(ki: qd.Tensor, vi: qd.Tensor, ko: qd.Tensor, vo: qd.Tensor, num_runs: qd.Tensor,
            scratch: qd.Tensor, cnt: qd.Tensor):
        qd.algorithms.reduce_by_key_add(ki, vi, ko, vo, num_runs, scratch, cnt[0], qd.f32, D)

    run(t["ki"], t["vi"], t["ko"], t["vo"], num_runs, scratch, cnt)
    rk, rs, scale = expected_runs(k, v, qd.f32)
    r = int(num_runs.to_numpy()[0])
    assert r == len(rk)
    assert_equal_exact(t["ko"].to_numpy()[:r], rk, f"{backend} tensor: keys_out")
    assert_sum_close(t["vo"].to_numpy()[:r], rs, scale, qd.f32, f"{backend} tensor: values_out")
