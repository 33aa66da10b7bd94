"""reduce_{add,min,max} and exclusive_scan_{add,min,max} against NumPy: every op and dtype, the
capacity levels, over-specified depths, n = 0, and the tensor kinds the ops accept."""

import numpy as np
import pytest

import quadrants as qd

from ._util import (
    NP,
    SCALARS,
    SIMT_MAX_N,
    assert_untouched,
    check_exclusive_scan,
    check_reduce,
    count,
    compiled_kernels,
    guarded_scratch,
    kernel_tasks,
    nd1,
    pick_n,
    plain,
    random_values,
    scratch_dtype,
    sentinel,
    skip_big,
)

OPS = ("add", "min", "max")
KINDS = ("reduce", "exclusive_scan")


@qd.kernel
def run_op(arr: nd1, out: nd1, scratch: nd1, cnt: nd1, name: qd.template(), dtype: qd.template(),
           D: qd.template()):
    qd.static(getattr(qd.algorithms, name))(arr, out, scratch, cnt[0], dtype, D)


def run_and_check(kind, op, dt, n, D, rng, extra=7):
    """Run kind_op on n live elements of an array `extra` elements longer (the extra ones must
    not count) with scratch of exactly the helper's size (plus a guard), and check everything:
    the result, the untouched tail of out, the untouched guard of scratch."""
    t = NP[dt]
    a = random_values(rng, dt, n + extra)
    out = sentinel(t, n + extra)
    slots = getattr(qd.algorithms, f"{kind}_scratch_slots")(n, D)
    scratch = guarded_scratch(slots, scratch_dtype(dt))
    run_op(a, out, scratch, count(n), f"{kind}_{op}", dt, D)
    what = f"{kind}_{op} {dt} n={n} D={D}"
    if kind == "reduce":
        check_reduce(op, dt, a[:n], out[0], what)
        assert_untouched(out, 1, f"{what}: out")
    else:
        check_exclusive_scan(op, dt, a[:n], out[:n], what)
        assert_untouched(out, n, f"{what}: out")
    assert_untouched(scratch, slots, f"{what}: scratch")


@pytest.mark.parametrize("dt", SCALARS, ids=str)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("kind", KINDS)
def test_every_op_and_dtype(kind, op, dt, rng):
    """One kernel (D = 2) relaunched with several live counts, n = 0 (the identity for reduce,
    nothing written for the scan) included."""
    for n in (0, 1, 255, 257, pick_n("rand", rng, 256**2)):
        run_and_check(kind, op, dt, n, 2, rng)


CAPACITY = (
    [(1, n) for n in (0, 1, 255, 256, "rand")]
    + [(2, n) for n in (0, 1, 255, 256, 257, 2048, 2049, 4096, 4097, 8192, 8193, 16385, 65535,
                        65536, "rand")]
    + [(3, n) for n in (0, 1, 5, 257, 65536, 65537, "rand", 200_000, 524_289)]
    + [(4, n) for n in (1, 5, 65537)]
)


@pytest.mark.parametrize("D,n", CAPACITY, ids=[f"D{d}-n{n}" for d, n in CAPACITY])
@pytest.mark.parametrize(
    "kind,op,dt",
    [("reduce", "add", qd.i32), ("reduce", "min", qd.f64),
     ("exclusive_scan", "add", qd.i64), ("exclusive_scan", "max", qd.f32)],
    ids=["reduce_add-i32", "reduce_min-f64", "exclusive_scan_add-i64", "exclusive_scan_max-f32"],
)
def test_capacity_levels(kind, op, dt, D, n, mode, rng):
    """Every capacity level at the counts around its tile boundaries (the staircase's tiles of 2048
    and 256, the GPU reduce's 4096, the look-back scan's 8192 and 4096 for 8-byte types), and
    over-specified depths
    (n much smaller than 256**D) with scratch sized exactly for the live n."""
    hi = min(256**D, SIMT_MAX_N if mode == "cpu-simt" else 300_000)
    n = pick_n(n, rng, hi)
    skip_big(mode, n)
    run_and_check(kind, op, dt, n, D, rng)


def test_float_specials(rng):
    """min / max see infinities and signed zeros; add of huge magnitudes stays finite."""
    n = 700
    a = np.zeros(n + 3, np.float32)
    a[:n] = rng.standard_normal(n)
    a[rng.integers(0, n, 5)] = -np.inf
    a[rng.integers(0, n, 5)] = np.inf
    a[n:] = np.nan  # past the live count: must not be read
    for op in OPS[1:]:
        out = sentinel(np.float32, n + 3)
        scratch = guarded_scratch(qd.algorithms.exclusive_scan_scratch_slots(n, 2))
        run_op(a, out, scratch, count(n), f"exclusive_scan_{op}", qd.f32, 2)
        check_exclusive_scan(op, qd.f32, a[:n], out[:n], f"exclusive_scan_{op} with infs")
        run_op(a, out, scratch, count(n), f"reduce_{op}", qd.f32, 2)
        check_reduce(op, qd.f32, a[:n], out[0], f"reduce_{op} with infs")


def test_qd_ndarrays(rng):
    n, D = 3000, 2
    a = random_values(rng, qd.u64, n)
    arr, out = qd.ndarray(qd.u64, shape=n), qd.ndarray(qd.u64, shape=n)
    scratch = qd.ndarray(qd.u64, shape=qd.algorithms.exclusive_scan_scratch_slots(n, D))
    cnt = qd.ndarray(qd.i32, shape=1)
    arr.from_numpy(a)
    cnt.from_numpy(count(n))
    run_op(arr, out, scratch, cnt, "exclusive_scan_add", qd.u64, D)
    check_exclusive_scan("add", qd.u64, a, out.to_numpy(), "qd.ndarray exclusive_scan_add u64")
    run_op(arr, out, scratch, cnt, "reduce_max", qd.u64, D)
    check_reduce("max", qd.u64, a, out.to_numpy()[0], "qd.ndarray reduce_max u64")


def test_fields_as_globals_composed(rng):
    """Fields closed over by a kernel that takes no arguments, the ops composed with a phase of
    the caller before them and one after them, sharing one scratch buffer."""
    N, D = 70_000, 3
    n = int(rng.integers(1, N))
    a = random_values(rng, qd.i32, N)
    arr, scan_out = qd.field(qd.i32, shape=N), qd.field(qd.i32, shape=N)
    red_out, mx = qd.field(qd.i32, shape=1), qd.field(qd.f32, shape=1)
    scratch = qd.field(qd.u32, shape=qd.algorithms.exclusive_scan_scratch_slots(N, D))
    cnt = qd.field(qd.i32, shape=1)
    last = qd.field(qd.i32, shape=1)
    arr.from_numpy(a)
    scan_out.from_numpy(sentinel(np.int32, N))
    cnt.from_numpy(count(n))

    @qd.kernel
    def run():
        for i in range(N):
            arr[i] = arr[i] ^ 0x55  # a phase of the caller: the ops must see its writes
        qd.algorithms.reduce_add(arr, red_out, scratch, cnt[0], qd.i32, D)
        qd.algorithms.exclusive_scan_add(arr, scan_out, scratch, cnt[0], qd.i32, D)
        for _ in range(1):
            last[0] = scan_out[cnt[0] - 1] + arr[cnt[0] - 1]  # and this one the ops' results

    run()
    b = a ^ 0x55
    check_reduce("add", qd.i32, b[:n], red_out.to_numpy()[0], "field reduce_add")
    got = scan_out.to_numpy()
    check_exclusive_scan("add", qd.i32, b[:n], got[:n], "field exclusive_scan_add")
    assert_untouched(got, n, "field exclusive_scan_add: out")
    assert last.to_numpy()[0] == np.add.reduce(b[:n], dtype=np.int32)


@pytest.mark.parametrize("backend", ["FIELD", "NDARRAY"])
def test_qd_tensor(backend, rng):
    n, D = 1000, 2
    be = getattr(qd.Backend, backend)
    a = random_values(rng, qd.f64, n)
    arr, out = qd.tensor(qd.f64, (n,), backend=be), qd.tensor(qd.f64, (n,), backend=be)
    red = qd.tensor(qd.f64, (1,), backend=be)
    scratch = qd.tensor(qd.u64, (qd.algorithms.exclusive_scan_scratch_slots(n, D),), backend=be)
    cnt = qd.tensor(qd.i32, (1,), backend=be)
    arr.from_numpy(a)
    cnt.from_numpy(count(n))

    @qd.kernel
    def run(arr: qd.Tensor, out: qd.Tensor, red: qd.Tensor, scratch: qd.Tensor, cnt: qd.Tensor):
        qd.algorithms.exclusive_scan_min(arr, out, scratch, cnt[0], qd.f64, D)
        qd.algorithms.reduce_add(arr, red, scratch, cnt[0], qd.f64, D)

    run(arr, out, red, scratch, cnt)
    check_exclusive_scan("min", qd.f64, a, out.to_numpy(), f"{backend} tensor exclusive_scan_min")
    check_reduce("add", qd.f64, a, red.to_numpy()[0], f"{backend} tensor reduce_add")


@pytest.mark.parametrize("op", ["add", "max"])
def test_gpu_reduce_is_one_loop(op, mode, keep_qir, rng):
    """On a GPU (and with cpu_simt) a reduce is one parallel loop: the last block to finish
    combines the partials. The serial code before it evaluates the count and zeroes the
    counter of finished blocks (the scratch holds garbage here)."""
    if plain(mode):
        pytest.skip("the plain code reduces with the staircase")
    N, D = 300_000, 3
    n = int(rng.integers(2 * 8192, N))
    a = random_values(rng, qd.f32, N)
    out = sentinel(np.float32, 1)
    scratch = guarded_scratch(qd.algorithms.reduce_scratch_slots(n, D))
    run_op(a, out, scratch, count(n), f"reduce_{op}", qd.f32, D)
    check_reduce(op, qd.f32, a[:n], out[0], f"reduce_{op} f32 n={n}")
    compiled = compiled_kernels(run_op)[-1]
    # the count and the zeroed counter: one serial task (merge_serial joins the kernel's and the
    # op's), then the loop
    assert kernel_tasks(compiled.qir) == ["serial", "range_for"]


def test_gpu_scan_clears_its_tile_states_in_a_grid_sized_on_the_host(mode, rng):
    """The block-form scan's first task clears the tile states over a fixed 8192 threads: a trip
    count the launcher computes on the host, so the grid is sized to it even though the task
    reads the count from device memory for its loop body. The scan itself needs the count."""
    if plain(mode):
        pytest.skip("the plain code scans with the staircase")
    N, D = 200_000, 3
    n = int(rng.integers(3 * 8192, N))
    a = random_values(rng, qd.i32, N)
    out = sentinel(np.int32, N)
    scratch = guarded_scratch(qd.algorithms.exclusive_scan_scratch_slots(n, D))
    run_op(a, out, scratch, count(n), "exclusive_scan_add", qd.i32, D)
    check_exclusive_scan("add", qd.i32, a[:n], out[:n], f"exclusive_scan_add i32 n={n}")
    compiled = compiled_kernels(run_op)[-1]
    if type(compiled).__name__ == "DeviceKernel":
        # (serial count, clear, scan): only the clear's bounds are known on the host
        assert [t[3] for t in compiled.tasks] == [False, True, False]
