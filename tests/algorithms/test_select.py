"""select (stable stream compaction) against NumPy: capacity levels, element dtypes, flag
patterns, and scalar / vector / struct elements in ndarrays, fields and qd.Tensor."""

import numpy as np
import pytest

import quadrants as qd

from ._util import (
    SCALARS,
    SIMT_MAX_N,
    assert_equal_exact,
    assert_untouched,
    count,
    guarded_scratch,
    nd1,
    pick_n,
    random_values,
    sentinel,
    skip_big,
)


@qd.kernel
def run_select(arr: nd1, flags: nd1, out: nd1, num_out: nd1, scratch: nd1, cnt: nd1,
               D: qd.template()):
    qd.algorithms.select(arr, flags, out, num_out, scratch, cnt[0], D)


def random_flags(rng, n, p=0.5):
    return (rng.random(n) < p).astype(np.int32)


def run_and_check(a, flags, n, D, extra=7):
    """select over the first n of a / flags (both longer; the elements past n must not count),
    scratch of exactly select_scratch_slots(n) plus a guard, out and num_out pre-filled."""
    out = sentinel(a.dtype, n + extra)
    num_out = sentinel(np.int32, 2)
    slots = qd.algorithms.select_scratch_slots(n)
    scratch = guarded_scratch(slots)
    run_select(a, flags, out, num_out, scratch, count(n), D)
    what = f"select {a.dtype} n={n} D={D}"
    exp = a[:n][flags[:n] == 1]
    k = len(exp)
    assert num_out[0] == k, f"{what}: num_out {num_out[0]}, expected {k}"
    assert_untouched(num_out, 1, f"{what}: num_out")
    assert_equal_exact(out[:k], exp, what)
    assert_untouched(out, k, f"{what}: out")
    assert_untouched(scratch, slots, f"{what}: scratch")


CAPACITY = (
    [(1, n) for n in (0, 1, 255, 256, "rand")]
    + [(2, n) for n in (0, 1, 255, 256, 257, 2048, 2049, 65535, 65536, "rand")]
    + [(3, n) for n in (1, 5, 257, 65536, 65537, "rand", 200_000, 524_289)]
    + [(4, n) for n in (1, 5, 65537)]
)


@pytest.mark.parametrize("D,n", CAPACITY, ids=[f"D{d}-n{n}" for d, n in CAPACITY])
def test_capacity_levels(D, n, mode, rng):
    """Every capacity level around its tile boundaries; over-specified depths (n much smaller
    than 256**D) with scratch sized for the live n."""
    n = pick_n(n, rng, min(256**D, SIMT_MAX_N if mode == "cpu-simt" else 300_000))
    skip_big(mode, n)
    a = random_values(rng, qd.i32, n + 7)
    flags = random_flags(rng, n + 7)
    flags[n:] = 1  # past the live count: must not be selected or counted
    run_and_check(a, flags, n, D)


@pytest.mark.parametrize("dt", SCALARS + (qd.u8, qd.i16, qd.f16), ids=str)
def test_element_dtypes(dt, rng):
    """The scatter does not depend on the element type: one kernel per dtype, several counts."""
    for n in (0, 1, 256, 257, pick_n("rand", rng, 256**2)):
        run_and_check(random_values(rng, dt, n + 7), random_flags(rng, n + 7), n, 2)


@pytest.mark.parametrize("pattern", ["none", "all", "first", "last", "alternate", "sparse"])
def test_flag_patterns(pattern, mode, rng):
    n = 65537 if mode == "cpu-simt" else 200_000
    flags = {
        "none": np.zeros(n, np.int32),
        "all": np.ones(n, np.int32),
        "first": np.eye(1, n, 0, np.int32)[0],
        "last": np.eye(1, n, n - 1, np.int32)[0],
        "alternate": np.arange(n, dtype=np.int32) % 2,
        "sparse": random_flags(rng, n, 0.001),
    }[pattern]
    run_and_check(np.arange(n, dtype=np.int64) * 3 - n, flags, n, 3, extra=0)


def test_qd_ndarrays(rng):
    n, D = 5000, 2
    a, flags = random_values(rng, qd.f64, n), random_flags(rng, n)
    arr, fl, out = qd.ndarray(qd.f64, n), qd.ndarray(qd.i32, n), qd.ndarray(qd.f64, n)
    num_out = qd.ndarray(qd.i32, 1)
    scratch = qd.ndarray(qd.u32, qd.algorithms.select_scratch_slots(n))
    cnt = qd.ndarray(qd.i32, 1)
    arr.from_numpy(a)
    fl.from_numpy(flags)
    cnt.from_numpy(count(n))
    run_select(arr, fl, out, num_out, scratch, cnt, D)
    k = int(num_out.to_numpy()[0])
    assert k == flags.sum()
    assert_equal_exact(out.to_numpy()[:k], a[flags == 1], "select qd.ndarray f64")


def _globals_kernel(arr, flags, out, num_out, scratch, cnt, D):
    @qd.kernel
    def run():
        qd.algorithms.select(arr, flags, out, num_out, scratch, cnt[0], D)

    return run


def _fields(n, rng):
    flags = random_flags(rng, n + 3)
    fl, num_out, cnt = qd.field(qd.i32, n + 3), qd.field(qd.i32, 1), qd.field(qd.i32, 1)
    scratch = qd.field(qd.u32, qd.algorithms.select_scratch_slots(n + 3))
    fl.from_numpy(flags)
    cnt.from_numpy(count(n))
    return flags, fl, num_out, scratch, cnt


def test_scalar_fields_as_globals(rng):
    n, D = 3000, 2
    flags, fl, num_out, scratch, cnt = _fields(n, rng)
    a = random_values(rng, qd.u32, n + 3)
    arr, out = qd.field(qd.u32, n + 3), qd.field(qd.u32, n + 3)
    arr.from_numpy(a)
    out.from_numpy(sentinel(np.uint32, n + 3))
    _globals_kernel(arr, fl, out, num_out, scratch, cnt, D)()
    exp = a[:n][flags[:n] == 1]
    k = int(num_out.to_numpy()[0])
    assert k == len(exp)
    got = out.to_numpy()
    assert_equal_exact(got[:k], exp, "select u32 field")
    assert_untouched(got, k, "select u32 field: out")


def test_vector_fields_as_globals(rng):
    n, D = 3000, 2
    flags, fl, num_out, scratch, cnt = _fields(n, rng)
    a = random_values(rng, qd.i32, 3 * (n + 3)).reshape(n + 3, 3)
    arr, out = qd.Vector.field(3, qd.i32, n + 3), qd.Vector.field(3, qd.i32, n + 3)
    arr.from_numpy(a)
    out.from_numpy(sentinel(np.int32, 3 * (n + 3)).reshape(n + 3, 3))
    _globals_kernel(arr, fl, out, num_out, scratch, cnt, D)()
    exp = a[:n][flags[:n] == 1]
    k = int(num_out.to_numpy()[0])
    assert k == len(exp)
    got = out.to_numpy()
    assert_equal_exact(got[:k], exp, "select vec3 i32 field")
    assert_untouched(got.reshape(-1), 3 * k, "select vec3 i32 field: out")


def test_struct_fields_as_globals(rng):
    n, D = 3000, 2
    flags, fl, num_out, scratch, cnt = _fields(n, rng)
    members = {"a": qd.i32, "b": qd.f64, "v": qd.types.vector(2, qd.f32)}
    arr, out = qd.Struct.field(members, shape=n + 3), qd.Struct.field(members, shape=n + 3)
    a = {"a": random_values(rng, qd.i32, n + 3), "b": random_values(rng, qd.f64, n + 3),
         "v": random_values(rng, qd.f32, 2 * (n + 3)).reshape(n + 3, 2)}
    arr.from_numpy(a)
    out.from_numpy({"a": sentinel(np.int32, n + 3), "b": sentinel(np.float64, n + 3),
                    "v": sentinel(np.float32, 2 * (n + 3)).reshape(n + 3, 2)})
    _globals_kernel(arr, fl, out, num_out, scratch, cnt, D)()
    sel = np.flatnonzero(flags[:n] == 1)
    k = int(num_out.to_numpy()[0])
    assert k == len(sel)
    got = out.to_numpy()
    for m in members:
        assert_equal_exact(got[m][:k], a[m][sel], f"select struct field, member {m}")
        assert_untouched(got[m].reshape(-1), k * (2 if m == "v" else 1), f"struct member {m}")


def test_vector_ndarrays(rng):
    n, D = 3000, 2
    a = random_values(rng, qd.f32, 2 * n).reshape(n, 2)
    flags = random_flags(rng, n)
    arr, out = qd.Vector.ndarray(2, qd.f32, n), qd.Vector.ndarray(2, qd.f32, n)
    arr.from_numpy(a)
    vec1 = qd.types.ndarray(dtype=qd.types.vector(2, qd.f32), ndim=1)

    @qd.kernel
    def run(arr: vec1, flags: nd1, out: vec1, num_out: nd1, scratch: nd1, cnt: nd1):
        qd.algorithms.select(arr, flags, out, num_out, scratch, cnt[0], D)

    num_out = np.zeros(1, np.int32)
    run(arr, flags, out, num_out, np.zeros(qd.algorithms.select_scratch_slots(n), np.uint32),
        count(n))
    k = int(num_out[0])
    assert k == flags.sum()
    assert_equal_exact(out.to_numpy()[:k], a[flags == 1], "select vec2 f32 ndarray")


@pytest.mark.parametrize("backend", ["FIELD", "NDARRAY"])
def test_qd_tensor(backend, rng):
    n, D = 1000, 2
    be = getattr(qd.Backend, backend)
    a, flags = random_values(rng, qd.i64, n), random_flags(rng, n)
    arr, out = qd.tensor(qd.i64, (n,), backend=be), qd.tensor(qd.i64, (n,), backend=be)
    fl, num_out = qd.tensor(qd.i32, (n,), backend=be), qd.tensor(qd.i32, (1,), backend=be)
    scratch = qd.tensor(qd.u32, (qd.algorithms.select_scratch_slots(n),), backend=be)
    cnt = qd.tensor(qd.i32, (1,), backend=be)
    arr.from_numpy(a)
    fl.from_numpy(flags)
    cnt.from_numpy(count(n))

    @qd.kernel
    def run(arr: qd.Tensor, fl: qd.Tensor, out: qd.Tensor, num_out: qd.Tensor, scratch: qd.Tensor,
            cnt: qd.Tensor):
        qd.algorithms.select(arr, fl, out, num_out, scratch, cnt[0], D)

    run(arr, fl, out, num_out, scratch, cnt)
    k = int(num_out.to_numpy()[0])
    assert k == flags.sum()
    assert_equal_exact(out.to_numpy()[:k], a[flags == 1], f"select {backend} tensor")
