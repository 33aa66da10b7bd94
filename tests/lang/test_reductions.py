"""Reductions through an atomic on one address (docs/reductions.md): every parallel iteration
updates the same field element, ndarray element or kernel-scope variable. The compiler gives
such a target a per-thread accumulator; the results must be those of the atomics: integers
exact, float sums within a tolerance scaled by n (only the grouping of the terms changes)."""

import numpy as np
import pytest

import quadrants as qd

from .helpers import NP, rng

NDArray = qd.types.NDArray

# Enough iterations for the CPU to split the loop over threads and the GPU over many warps.
N = 300_000


def float_close(got, values):
    """got is a float32 sum of `values` in some grouping. Rounding errors of a sum of n terms grow
    like sqrt(n) * eps * sum|x| (each addition rounds once, the errors are independent), so that
    scaled by 2 is the tolerance against the exact sum."""
    exact = float(np.sum(values.astype(np.float64)))
    eps = float(np.finfo(np.float32).eps)
    tol = 2 * np.sqrt(max(len(values), 1)) * eps * float(np.sum(np.abs(values), dtype=np.float64))
    assert abs(float(got) - exact) <= tol, (got, exact, tol)


def test_sum_into_field():
    s = qd.field(qd.f32, shape=())

    @qd.kernel
    def k(x: NDArray[qd.f32, 1]):
        for i in range(x.shape[0]):
            s[None] += x[i]

    x = rng.standard_normal(N).astype(np.float32)
    s[None] = 1.5
    k(x)
    float_close(s[None], np.append(x, np.float32(1.5)))


@pytest.mark.parametrize("dtype", [qd.i32, qd.u32, qd.i64, qd.u64, qd.i8])
def test_integer_sum_exact(dtype):
    t = qd.field(dtype, shape=(3,))

    @qd.kernel
    def k(x: NDArray[dtype, 1]):
        for i in range(x.shape[0]):
            t[1] += x[i]

    info = np.iinfo(NP[dtype])
    x = rng.integers(info.min, info.max, N, dtype=NP[dtype], endpoint=True)
    start = rng.integers(info.min, info.max, dtype=NP[dtype], endpoint=True)
    t[1] = start
    k(x)
    with np.errstate(over="ignore"):
        expect = np.sum(x, dtype=NP[dtype]) + start  # wraps like the kernel
    assert t[1] == expect
    assert t[0] == 0 and t[2] == 0


def test_sum_into_ndarray_element():
    @qd.kernel
    def k(x: NDArray[qd.f64, 1], out: NDArray[qd.f64, 1], j: qd.i32):
        for i in range(x.shape[0]):
            out[j] += x[i]
            out[0] += 1.0

    x = rng.random(N)
    out = np.zeros(4)
    k(x, out, 2)
    assert out[0] == N
    np.testing.assert_allclose(out[2], np.sum(x), rtol=1e-12)
    assert out[1] == 0 and out[3] == 0


def test_sum_into_kernel_variable():
    @qd.kernel
    def k(x: NDArray[qd.f32, 1]) -> qd.f32:
        acc = 0.0
        for i in range(x.shape[0]):
            acc += x[i]
        return acc

    x = rng.random(N).astype(np.float32)
    float_close(k(x), x)


def test_count_into_kernel_variable():
    @qd.kernel
    def k(x: NDArray[qd.i32, 1]) -> qd.i32:
        count = 0
        for i in range(x.shape[0]):
            if x[i] % 3 == 0:
                count += 1
        return count

    x = rng.integers(-1000, 1000, N).astype(np.int32)
    assert k(x) == int(np.sum(x % 3 == 0))


def _min_max_kernel(dtype):
    """0-d fields lo, hi and a kernel reducing an ndarray into them with atomic_min / max."""
    lo = qd.field(dtype, shape=())
    hi = qd.field(dtype, shape=())

    @qd.kernel
    def k(x: NDArray[dtype, 1]):
        for i in range(x.shape[0]):
            qd.atomic_min(lo[None], x[i])
            qd.atomic_max(hi[None], x[i])

    return lo, hi, k


@pytest.mark.parametrize("dtype", [qd.f32, qd.f64])
@pytest.mark.parametrize("case", ["nan_runs", "all_nan", "infinities", "one_element"])
def test_float_min_max_ignore_nans(dtype, case):
    """Float min / max reductions keep the non-NaN operand whatever the order the elements are
    combined in (the CPU combines them in vector lanes): NaNs anywhere, only NaNs (the target
    keeps its value), infinities, a single element."""
    lo, hi, k = _min_max_kernel(dtype)
    t = NP[dtype]
    n = int(rng.integers(1000, 5000))
    x = (rng.standard_normal(n) * 1e3).astype(t)
    if case == "nan_runs":
        x[rng.integers(0, n, n // 3)] = np.nan
        x[:17] = np.nan
        x[-9:] = np.nan
    elif case == "all_nan":
        x[:] = np.nan
    elif case == "infinities":
        x[rng.integers(0, n, 5)] = np.inf
        x[rng.integers(0, n, 5)] = -np.inf
        x[rng.integers(0, n, 50)] = np.nan
    else:
        x = np.array([rng.standard_normal()], t)
    first_lo, first_hi = t(7.5), t(-7.5)
    lo[None], hi[None] = first_lo, first_hi
    k(x)
    finite = x[~np.isnan(x)]
    want_lo = min(finite.min(), first_lo) if finite.size else first_lo
    want_hi = max(finite.max(), first_hi) if finite.size else first_hi
    assert lo[None] == want_lo and hi[None] == want_hi


@pytest.mark.parametrize("dtype", [qd.f32, qd.i32, qd.u64])
def test_min_max(dtype):
    lo, hi, k = _min_max_kernel(dtype)
    if dtype == qd.f32:
        x = rng.standard_normal(N).astype(np.float32)
        x[rng.integers(0, N, 10)] = np.nan  # the non-NaN operand wins, as for the atomics
        first_lo, first_hi = 0.0, 0.0
    else:
        info = np.iinfo(NP[dtype])
        x = rng.integers(info.min, info.max, N, dtype=NP[dtype], endpoint=True)
        first_lo, first_hi = info.max // 2, info.min // 2 + 1
    lo[None] = first_lo
    hi[None] = first_hi
    k(x)
    assert lo[None] == min(np.nanmin(x), NP[dtype](first_lo))
    assert hi[None] == max(np.nanmax(x), NP[dtype](first_hi))


def test_bitwise():
    a = qd.field(qd.u32, shape=())
    o = qd.field(qd.u32, shape=())
    x_ = qd.field(qd.u32, shape=())

    @qd.kernel
    def k(v: NDArray[qd.u32, 1]):
        for i in range(v.shape[0]):
            qd.atomic_and(a[None], v[i])
            qd.atomic_or(o[None], v[i])
            x_[None] ^= v[i]

    v = rng.integers(0, 2**32, 1000, dtype=np.uint32) | np.uint32(0x80000001)
    a[None] = 0xFFFF_FFFF
    o[None] = 0
    x_[None] = 0x1234
    k(v)
    assert a[None] == np.bitwise_and.reduce(v)
    assert o[None] == np.bitwise_or.reduce(v)
    assert x_[None] == np.bitwise_xor.reduce(v) ^ 0x1234


def test_if_around_atomic():
    s = qd.field(qd.f64, shape=())
    c = qd.field(qd.i32, shape=())

    @qd.kernel
    def k(x: NDArray[qd.f64, 1], cut: qd.f64):
        for i in range(x.shape[0]):
            if x[i] > cut:
                s[None] += x[i]
                c[None] += 1
            else:
                c[None] += 1000

    x = rng.random(N)
    k(x, 0.3)
    big = x > 0.3
    np.testing.assert_allclose(s[None], np.sum(x[big]), rtol=1e-12)
    assert c[None] == int(np.sum(big)) + 1000 * int(np.sum(~big))


def test_used_old_value_stays_atomic():
    c = qd.field(qd.i32, shape=())

    @qd.kernel
    def k(out: NDArray[qd.i32, 1]):
        for i in range(out.shape[0]):
            out[i] = qd.atomic_add(c[None], 1)

    out = np.zeros(N, np.int32)
    k(out)
    assert c[None] == N
    np.testing.assert_array_equal(np.sort(out), np.arange(N))


def test_read_of_target_stays_atomic():
    s = qd.field(qd.i32, shape=())

    @qd.kernel
    def k(n: qd.i32) -> qd.i32:
        ok = 1
        for i in range(n):
            s[None] += 1
            if s[None] < 1:  # reads the target: every update must be visible to this thread
                ok = 0
        return ok

    assert k(N) == 1
    assert s[None] == N


def test_two_targets_in_one_loop():
    s = qd.field(qd.f32, shape=())
    m = qd.field(qd.f32, shape=())

    @qd.kernel
    def k(x: NDArray[qd.f32, 1], t: NDArray[qd.i64, 1]):
        for i in range(x.shape[0]):
            s[None] += x[i]
            qd.atomic_max(m[None], x[i])
            t[0] += i

    x = rng.random(N).astype(np.float32)
    t = np.zeros(1, np.int64)
    m[None] = -1.0
    k(x, t)
    float_close(s[None], x)
    assert m[None] == np.max(x)
    assert t[0] == N * (N - 1) // 2


def test_nested_loops():
    s = qd.field(qd.f64, shape=())
    c = qd.field(qd.i64, shape=())

    @qd.kernel
    def k(x: NDArray[qd.f64, 2]):
        for i in range(x.shape[0]):
            for j in range(x.shape[1]):
                s[None] += x[i, j]
                c[None] += j

    x = rng.random((3000, 37))
    k(x)
    np.testing.assert_allclose(s[None], np.sum(x), rtol=1e-12)
    assert c[None] == 3000 * (37 * 36 // 2)


def test_ndrange_and_struct_for():
    s = qd.field(qd.i64, shape=())
    f = qd.field(qd.i32, shape=(64, 50))

    @qd.kernel
    def fill():
        for i, j in f:
            f[i, j] = i * 100 + j

    @qd.kernel
    def k():
        for i, j in f:
            s[None] += f[i, j]

    fill()
    k()
    assert s[None] == int(np.sum(f.to_numpy(), dtype=np.int64))


@pytest.mark.parametrize("n", [0, 1, 7])
def test_empty_and_tiny_ranges(n):
    s = qd.field(qd.f32, shape=())
    lo = qd.field(qd.i32, shape=())

    @qd.kernel
    def k(x: NDArray[qd.f32, 1]):
        for i in range(x.shape[0]):
            s[None] += x[i]
            qd.atomic_min(lo[None], qd.i32(x[i] * 100))

    x = rng.random(n).astype(np.float32)
    s[None] = 2.5
    lo[None] = 77
    k(x)
    float_close(s[None], np.append(x, np.float32(2.5)))
    assert lo[None] == min([77] + [int(v * 100) for v in x])


def test_repeated_calls_accumulate():
    s = qd.field(qd.i64, shape=())

    @qd.kernel
    def k(x: NDArray[qd.i64, 1]):
        for i in range(x.shape[0]):
            s[None] += x[i]

    x = rng.integers(-(2**40), 2**40, N)
    for _ in range(3):
        k(x)
    assert s[None] == 3 * int(np.sum(x))


def test_reducing_task_gets_a_small_grid(qd_arch):
    """On the GPU a loop that reduces into memory ends with one atomic per warp, all on one
    address: its grid is a few blocks per SM instead of the saturating grid of other loops."""
    if qd_arch != "cuda":
        pytest.skip("grids are a CUDA matter")
    s = qd.field(qd.f32, shape=())

    @qd.kernel
    def total(x: NDArray[qd.f32, 1]):
        for i in range(x.shape[0]):
            s[None] += x[i]

    @qd.kernel
    def scale(x: NDArray[qd.f32, 1]):
        for i in range(x.shape[0]):
            x[i] = 2 * x[i]

    x = rng.standard_normal(N).astype(np.float32)
    total(x)
    float_close(s[None], x)
    scale(x)
    ((reducing, _),) = total._compiled.values()
    ((plain, _),) = scale._compiled.values()
    (_, _, reducing_blocks, _), = reducing.tasks
    (_, block_dim, plain_blocks, _), = plain.tasks
    assert reducing_blocks * 8 <= plain_blocks
    assert reducing_blocks * block_dim >= 32 * 1024  # still thousands of threads on any GPU
