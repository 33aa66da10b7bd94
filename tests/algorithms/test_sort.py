"""sort (stable LSB radix sort) against NumPy's stable sort: every key dtype and value dtype,
keys-only, the capacity levels, end_bit below the key width, float specials, the forms of n and
of the buffers."""

import numpy as np
import pytest

import quadrants as qd

from ._util import (
    NP,
    SIMT_MAX_N,
    assert_equal_exact,
    assert_untouched,
    compiled_kernels,
    guarded_scratch,
    kernel_tasks,
    nd1,
    pick_n,
    plain,
    random_keys,
    random_values,
    sentinel,
    skip_big,
)

nd0 = qd.types.ndarray(ndim=0)


@qd.kernel
def run_sort(keys: nd1, tmp_keys: nd1, values: nd1, tmp_values: nd1, scratch: nd1, n: nd0,
             key_dtype: qd.template(), has_values: qd.template(), end_bit: qd.template(),
             D: qd.template()):
    qd.algorithms.sort(keys, tmp_keys, values, tmp_values, scratch, n, key_dtype, has_values,
                       end_bit, D)


def stable_order(k):
    """The permutation of a stable ascending sort, -0.0 before 0.0 (their bit patterns differ),
    NaNs last as in NumPy."""
    if np.issubdtype(k.dtype, np.floating):
        return np.lexsort((~np.signbit(k), k))
    return np.argsort(k, kind="stable")


def sort_and_check(k, v, n, D, kdt, end_bit=None, extra=5, kernel=None):
    """Sort the first n of k (and v; None: keys-only) with scratch of exactly
    sort_scratch_slots(n, D) plus a guard (with `kernel`, a kernel like run_sort); the elements
    past n must stay where they are."""
    run_sort_ = kernel or run_sort
    end_bit = end_bit or 8 * k.dtype.itemsize
    keys = np.concatenate([k[:n], sentinel(k.dtype, extra)])
    tmp_keys = sentinel(k.dtype, n + extra)
    slots = qd.algorithms.sort_scratch_slots(n, D)
    scratch = guarded_scratch(slots)
    what = (f"sort {kdt} keys, {'no' if v is None else v.dtype} values, n={n} D={D} "
            f"end_bit={end_bit}")
    if v is None:
        run_sort_(keys, tmp_keys, keys, tmp_keys, scratch, np.array(n, np.int32), kdt, False,
                  end_bit, D)
    else:
        values = np.concatenate([v[:n], sentinel(v.dtype, extra)])
        run_sort_(keys, tmp_keys, values, sentinel(v.dtype, n + extra), scratch,
                  np.array(n, np.int32), kdt, True, end_bit, D)
    order = stable_order(k[:n])
    assert_equal_exact(keys[:n], k[:n][order], f"{what}: keys")
    np.testing.assert_array_equal(keys[:n], np.sort(k[:n], kind="stable"))
    assert_untouched(keys, n, f"{what}: keys")
    if v is not None:
        assert_equal_exact(values[:n], v[:n][order], f"{what}: values")
        assert_untouched(values, n, f"{what}: values")
    assert_untouched(scratch, slots, f"{what}: scratch")


def check_counts(kdt, vdt, rng, D=2):
    """One kernel (D = 2) relaunched with several counts (the capacity test has the large ones),
    on keys with many repeats (stability) and on mostly distinct keys."""
    for n in (0, 1, 255, 257, pick_n("rand", rng, 5000)):
        for distinct in (20, 4 * n + 1):
            k = random_keys(rng, kdt, n, distinct)
            v = None if vdt is None else random_values(rng, vdt, n)
            sort_and_check(k, v, n, D, kdt)


# every key dtype and every value dtype, each once, with 32- and 64-bit mixed
PAIRS = [(qd.u32, qd.i64), (qd.i32, qd.f32), (qd.f32, qd.i32), (qd.u64, qd.u32),
         (qd.i64, qd.f64), (qd.f64, qd.u64)]


@pytest.mark.parametrize("kdt,vdt", PAIRS, ids=[f"{k}-{v}" for k, v in PAIRS])
def test_key_value_dtypes(kdt, vdt, rng):
    check_counts(kdt, vdt, rng)


@pytest.mark.parametrize("kdt", [qd.u32, qd.f32, qd.i64], ids=str)
def test_keys_only(kdt, rng):
    check_counts(kdt, None, rng)


CAPACITY = (
    [(1, n) for n in (0, 1, 255, 256, "rand")]
    + [(2, n) for n in (257, 2047, 2048, 2049, 4095, 4096, 4097, 12289, 65535, 65536, "rand")]
    + [(3, n) for n in (1, 5, 65537, "rand", 200_000)]
    + [(4, n) for n in (5, 1000)]
)


@pytest.mark.parametrize("D,n", CAPACITY, ids=[f"D{d}-n{n}" for d, n in CAPACITY])
def test_capacity_levels(D, n, mode, rng):
    n = pick_n(n, rng, min(256**D, SIMT_MAX_N if mode == "cpu-simt" else 300_000))
    skip_big(mode, n)
    k = random_keys(rng, qd.i32, n, max(n // 4, 1))
    sort_and_check(k, np.arange(n, dtype=np.float32), n, D, qd.i32)


@pytest.mark.parametrize("kdt,vdt", [(qd.i32, None), (qd.f64, qd.u64)], ids=["i32", "f64-u64"])
def test_counts_beside_status_words(kdt, vdt, mode, monkeypatch, rng):
    """From 2**29 keys on, the GPU sort keeps the tiles' counts beside their status words (the
    flag and parity bits leave 29 bits for a count in one word): that path, taken here from 0
    keys on (counts that keep the three arrays within the scratch of sort_scratch_slots)."""
    if plain(mode):
        pytest.skip("the plain sort has no look-back")
    monkeypatch.setattr(qd.algorithms.sort, "_qd_packed_limit", 0, raising=False)

    # a kernel of its own, compiled here (run_sort's code may come from the offline cache)
    @qd.kernel
    def unpacked(keys: nd1, tmp_keys: nd1, values: nd1, tmp_values: nd1, scratch: nd1, n: nd0,
                 key_dtype: qd.template(), has_values: qd.template(), end_bit: qd.template(),
                 D: qd.template()):
        qd.algorithms.sort(keys, tmp_keys, values, tmp_values, scratch, n, key_dtype,
                           has_values, end_bit, D)

    for n in (1, 4097, 9000, 4097 + pick_n("rand", rng, 30_000)):
        k = random_keys(rng, kdt, n, max(n // 3, 1))
        v = None if vdt is None else np.arange(n).astype(NP[vdt])
        sort_and_check(k, v, n, 3, kdt, kernel=unpacked)


@pytest.mark.parametrize(
    "kdt,end_bit", [(qd.u32, 16), (qd.i32, 16), (qd.u64, 48), (qd.i64, 32)],
    ids=["u32-16", "i32-16", "u64-48", "i64-32"],
)
def test_end_bit_below_key_width(kdt, end_bit, rng):
    """Keys below 2**end_bit need only end_bit // 8 passes."""
    n = 3000
    k = rng.integers(0, 2**end_bit, n, dtype=NP[kdt])
    k[:200] = k[200:400]  # equal keys: stability
    sort_and_check(k, np.arange(n, dtype=np.int32), n, 2, kdt, end_bit)


@pytest.mark.parametrize("kdt,vdt", [(qd.f32, qd.i32), (qd.f64, qd.u64)], ids=["f32", "f64"])
def test_float_specials(kdt, vdt, rng):
    t = NP[kdt]
    info = np.finfo(t)
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, info.max, -info.max, info.tiny,
                         -info.tiny, info.smallest_subnormal, -info.smallest_subnormal, 1.0, -1.0],
                        dtype=t)
    n = 4000
    k = np.where(rng.random(n) < 0.5, specials[rng.integers(0, len(specials), n)],
                 rng.standard_normal(n).astype(t))
    sort_and_check(k, np.arange(n, dtype=NP[vdt]), n, 2, kdt)


@pytest.mark.parametrize("shape", ["sorted", "reversed", "equal"])
def test_presorted_inputs(shape, mode):
    n = 20_000 if mode == "cpu-simt" else 100_000
    k = {"sorted": np.arange(n), "reversed": np.arange(n)[::-1],
         "equal": np.full(n, 7)}[shape].astype(np.int32) - n // 2
    sort_and_check(k, np.arange(n, dtype=np.float32), n, 3, qd.i32)


def test_qd_ndarrays(rng):
    """qd.ndarray buffers and a qd.ndarray 0-d count; relaunched with a smaller count."""
    N, D = 5000, 2
    k, v = random_keys(rng, qd.f32, N, 500), random_values(rng, qd.i32, N)
    keys, tmp_keys = qd.ndarray(qd.f32, N), qd.ndarray(qd.f32, N)
    values, tmp_values = qd.ndarray(qd.i32, N), qd.ndarray(qd.i32, N)
    scratch = qd.ndarray(qd.u32, qd.algorithms.sort_scratch_slots(N, D))
    n = qd.ndarray(qd.i32, ())
    for live in (N, 1234):
        keys.from_numpy(k)
        values.from_numpy(v)
        n.fill(live)
        run_sort(keys, tmp_keys, values, tmp_values, scratch, n, qd.f32, True, 32, D)
        order = stable_order(k[:live])
        got_k, got_v = keys.to_numpy(), values.to_numpy()
        assert_equal_exact(got_k[:live], k[:live][order], f"qd.ndarray sort n={live}: keys")
        assert_equal_exact(got_v[:live], v[:live][order], f"qd.ndarray sort n={live}: values")
        assert_equal_exact(got_k[live:], k[live:], f"qd.ndarray sort n={live}: keys tail")


def test_fields_as_globals(rng):
    """Fields closed over by a kernel without arguments, the count a 0-d field."""
    N, D = 3000, 2
    k, v = random_keys(rng, qd.i64, N, 100), random_values(rng, qd.f32, N)
    keys, tmp_keys = qd.field(qd.i64, N), qd.field(qd.i64, N)
    values, tmp_values = qd.field(qd.f32, N), qd.field(qd.f32, N)
    scratch = qd.field(qd.u32, qd.algorithms.sort_scratch_slots(N, D))
    n = qd.field(qd.i32, ())
    keys.from_numpy(k)
    values.from_numpy(v)
    n[None] = N

    @qd.kernel
    def run():
        qd.algorithms.sort(keys, tmp_keys, values, tmp_values, scratch, n, qd.i64, True, 64, D)

    run()
    order = stable_order(k)
    assert_equal_exact(keys.to_numpy(), k[order], "field sort: keys")
    assert_equal_exact(values.to_numpy(), v[order], "field sort: values")


@pytest.mark.parametrize("backend", ["FIELD", "NDARRAY"])
def test_qd_tensor(backend, rng):
    N, D = 2000, 2
    be = getattr(qd.Backend, backend)
    k = random_keys(rng, qd.u32, N, 300)
    keys, tmp_keys = qd.tensor(qd.u32, (N,), backend=be), qd.tensor(qd.u32, (N,), backend=be)
    scratch = qd.tensor(qd.u32, (qd.algorithms.sort_scratch_slots(N, D),), backend=be)
    n = qd.tensor(qd.i32, (), backend=be)
    keys.from_numpy(k)
    n.fill(N)

    @qd.kernel
    def run(keys: qd.Tensor, tmp_keys: qd.Tensor, scratch: qd.Tensor, n: qd.Tensor):
        qd.algorithms.sort(keys, tmp_keys, keys, tmp_keys, scratch, n, qd.u32, False, 32, D)

    run(keys, tmp_keys, scratch, n)
    assert_equal_exact(keys.to_numpy(), np.sort(k), f"{backend} tensor sort")


def test_sort_then_reduce_by_key(rng):
    """The composition the guide suggests for per-key sums: sort, then reduce_by_key_add, in one
    kernel."""
    N, D = 20_000, 2
    k = random_keys(rng, qd.i32, N, 300)
    v = rng.integers(-1000, 1000, N).astype(np.int32)
    tmp_k, tmp_v = np.zeros_like(k), np.zeros_like(v)
    keys_out, values_out = np.zeros_like(k), np.zeros_like(v)
    num_runs = np.zeros(1, np.int32)
    slots = max(qd.algorithms.sort_scratch_slots(N, D),
                qd.algorithms.reduce_by_key_scratch_slots(N))

    @qd.kernel
    def run(k: nd1, v: nd1, tmp_k: nd1, tmp_v: nd1, keys_out: nd1, values_out: nd1,
            num_runs: nd1, scratch: nd1, n: nd0):
        qd.algorithms.sort(k, tmp_k, v, tmp_v, scratch, n, qd.i32, True, 32, D)
        qd.algorithms.reduce_by_key_add(k, v, keys_out, values_out, num_runs, scratch, n[()],
                                        qd.i32, D)

    k_in, v_in = k.copy(), v.copy()
    run(k, v, tmp_k, tmp_v, keys_out, values_out, num_runs, np.zeros(slots, np.uint32),
        np.array(N, np.int32))
    uniq, inverse = np.unique(k_in, return_inverse=True)
    sums = np.zeros(len(uniq), np.int64)
    np.add.at(sums, inverse, v_in)
    r = int(num_runs[0])
    assert r == len(uniq)
    assert_equal_exact(keys_out[:r], uniq, "per-key sums: keys")
    assert_equal_exact(values_out[:r], sums.astype(np.int32), "per-key sums: values")


@pytest.mark.parametrize("end_bit", [16, 32])
def test_parallel_tasks_per_pass(end_bit, mode, keep_qir, rng):
    """The count is read inside every phase: a sort is a fixed list of parallel loops and no
    serial task. On a GPU (and with cpu_simt): per 8-bit digit the scatter, and before every
    fourth digit a loop clearing the scratch and one counting the digits of four passes (the
    tile states of a pass tell themselves from the last pass's by their parity); on the plain
    CPU three per digit (histogram, scan of the table, scatter)."""
    @qd.kernel
    def k(keys: qd.types.ndarray(qd.u32, 1), tmp: qd.types.ndarray(qd.u32, 1),
          scratch: qd.types.ndarray(qd.u32, 1), n: qd.types.ndarray(qd.i32, 0)):
        qd.algorithms.sort(keys, tmp, keys, tmp, scratch, n, qd.u32, False, end_bit, 2)

    a = rng.integers(0, 2**16, 5000, dtype=np.uint32)
    keys = a.copy()
    k(keys, np.zeros_like(a), np.zeros(qd.algorithms.sort_scratch_slots(5000, 2), np.uint32),
      np.array(5000, np.int32))
    np.testing.assert_array_equal(keys, np.sort(a))
    (compiled,) = compiled_kernels(k)
    tasks = kernel_tasks(compiled.qir)
    passes = end_bit // 8
    expected = 3 * passes if plain(mode) else passes + 2 * ((passes + 3) // 4)
    assert tasks == ["range_for"] * expected
