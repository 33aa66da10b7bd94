"""The GPU forms size their tiles to the shared memory one block of the device may use (the
frontend's max_shared_bytes: a Vulkan device's maxComputeSharedMemorySize, a CUDA block's static
limit). A cpu_simt compile stands in for a smaller device through a test-only compile option:
every task's shared arrays fit the budget and results stay exact; a sort whose smallest tile
does not fit runs the plain form, as a device with subgroups of another width does."""

import re

import numpy as np
import pytest

import quadrants as qd
from quadrants import _runtime

from ._util import compiled_kernels

A = qd.algorithms
nd = qd.types.ndarray
BYTES = {"i8": 1, "u8": 1, "i16": 2, "u16": 2, "f16": 2, "i32": 4, "u32": 4, "f32": 4, "i64": 8,
         "u64": 8, "f64": 8}
SHARED = re.compile(r"shared_alloc : ptr<\[(\d+) x (\w+)\], shared>")


@pytest.fixture
def budget(mode, monkeypatch, request):
    """Compiles the test's kernels as for a device with `request.param` bytes per block."""
    if mode != "cpu-simt":
        pytest.skip("the budget is a cpu_simt compile option")
    original = _runtime.compile_options
    monkeypatch.setattr(_runtime, "compile_options",
                        lambda: dict(original(), keep_qir=1, max_shared_bytes=request.param))
    return request.param


def task_shared_bytes(kernel):
    """The bytes of shared memory of each task of the kernel's compiled QIR."""
    (compiled,) = compiled_kernels(kernel)
    sizes = []
    for line in compiled.qir.splitlines()[1:]:
        if line == "}":
            break
        if line.startswith("  task "):
            sizes.append(0)
        for count, ty in SHARED.findall(line):
            sizes[-1] += int(count) * BYTES[ty]
    return sizes


BUDGETS = [49152, 32768, 24576]


@pytest.mark.parametrize("budget", BUDGETS, indirect=True)
@pytest.mark.parametrize("kdt,vdt", [(qd.i32, None), (qd.u64, None), (qd.f32, qd.i32),
                                     (qd.f64, qd.u32)], ids=["i32", "u64", "f32-i32", "f64-u32"])
def test_sort_tiles_fit(budget, kdt, vdt, mode, rng):
    np_k = {qd.i32: np.int32, qd.u64: np.uint64, qd.f32: np.float32, qd.f64: np.float64}[kdt]
    bits = 8 * np.dtype(np_k).itemsize

    @qd.kernel
    def keys_only(k: nd(kdt, 1), tk: nd(kdt, 1), s: nd(qd.u32, 1), c: nd(qd.i32, 0)):
        A.sort(k, tk, k, tk, s, c, kdt, False, bits, 2)

    @qd.kernel
    def pairs(k: nd(kdt, 1), tk: nd(kdt, 1), v: nd(ndim=1), tv: nd(ndim=1), s: nd(qd.u32, 1),
              c: nd(qd.i32, 0)):
        A.sort(k, tk, v, tv, s, c, kdt, True, bits, 2)

    n = 20000
    keys = (rng.integers(0, 2**62, n).astype(np_k) if kdt == qd.u64
            else rng.standard_normal(n).astype(np_k) if kdt in (qd.f32, qd.f64)
            else rng.integers(-2**31, 2**31 - 1, n).astype(np_k))
    k = keys.copy()
    scratch = np.zeros(A.sort_scratch_slots(n, 2), np.uint32)
    order = np.argsort(keys, kind="stable")
    if vdt is None:
        keys_only(k, np.zeros_like(k), scratch, np.array(n, np.int32))
        run = keys_only
    else:
        values = np.arange(n).astype({qd.i32: np.int32, qd.u32: np.uint32}[vdt])
        v = values.copy()
        pairs(k, np.zeros_like(k), v, np.zeros_like(v), scratch, np.array(n, np.int32))
        np.testing.assert_array_equal(v, values[order])
        run = pairs
    np.testing.assert_array_equal(k, keys[order])
    assert max(task_shared_bytes(run)) <= budget


@pytest.mark.parametrize("budget", BUDGETS, indirect=True)
@pytest.mark.parametrize("dt", [qd.i32, qd.f64], ids=["i32", "f64"])
def test_scan_tiles_fit(budget, dt, mode, rng):
    np_dt = {qd.i32: np.int32, qd.f64: np.float64}[dt]

    @qd.kernel
    def run(a: nd(dt, 1), o: nd(dt, 1), s: nd(ndim=1), n: qd.i32):
        A.exclusive_scan_add(a, o, s, n, dt, 2)

    n = 30000
    a = rng.integers(-1000, 1000, n).astype(np_dt)
    o = np.zeros_like(a)
    sdt = np.uint32 if dt == qd.i32 else np.uint64
    run(a, o, np.zeros(A.exclusive_scan_scratch_slots(n, 2), sdt), n)
    np.testing.assert_array_equal(o, np.concatenate([[0], np.cumsum(a)[:-1]]).astype(np_dt))
    assert max(task_shared_bytes(run)) <= budget


@pytest.mark.parametrize("budget", [24576], indirect=True)
def test_sort_without_a_tile_that_fits_runs_the_plain_form(budget, mode, rng):
    """8-byte keys with 8-byte values need 44 KiB for the smallest block-form tile (256 threads
    of 8 keys): with 24 KiB the sort is the plain form, three loops per pass and no shared
    memory, and still exact."""
    @qd.kernel
    def run(k: nd(qd.u64, 1), tk: nd(qd.u64, 1), v: nd(qd.f64, 1), tv: nd(qd.f64, 1),
            s: nd(qd.u32, 1), c: nd(qd.i32, 0)):
        A.sort(k, tk, v, tv, s, c, qd.u64, True, 64, 2)

    n = 3000
    keys = rng.integers(0, 2**63, n, dtype=np.uint64)
    values = rng.standard_normal(n)
    k, v = keys.copy(), values.copy()
    run(k, np.zeros_like(k), v, np.zeros_like(v), np.zeros(A.sort_scratch_slots(n, 2), np.uint32),
        np.array(n, np.int32))
    order = np.argsort(keys, kind="stable")
    np.testing.assert_array_equal(k, keys[order])
    np.testing.assert_array_equal(v, values[order])
    assert task_shared_bytes(run) == [0] * 24
