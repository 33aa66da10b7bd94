"""The code generator tests of tests/codegen (arithmetic, math, casts, atomics, kernels, print and
assert), run on the GPU: quadrants._core._testing.run_qir / compile_qir are replaced by versions
that compile the same QIR for CUDA (`compile_qir_cuda`) and launch it there with the same
arguments, so every reference check of those tests holds for the CUDA backend too. Fields are
NumPy arrays in the tests: they are copied to DeviceBuffers before a launch and back after it.
Skipped without a CUDA device."""

import numpy as np
import pytest

from quadrants import _core
from quadrants._core import _testing

HAVE_GPU = _core.cuda_available()

# The tests that check semantics; the others test CPU specifics (thread counts, the CPU
# layout info, x86 vectorization, CPU dump file names).
from test_arith import *  # noqa: F401,F403
from test_math import *  # noqa: F401,F403
from test_atomics import (  # noqa: F401
    test_atomic_add_and_cas_count,
    test_atomic_min_max,
    test_atomic_mul_and_or_xchg,
    test_atomic_narrow_types,
)
from test_kernels import test_saxpy, test_saxpy_launched_many_times, test_fields  # noqa: F401
from test_debug import (  # noqa: F401
    test_assert_parallel,
    test_assert_serial,
    test_print,
    test_print_bad_format,
)

pytestmark = pytest.mark.skipif(not HAVE_GPU, reason="no CUDA device")


class CudaQir:
    """What compile_qir returns, on the GPU: launch(*args) -> list of results."""

    def __init__(self, text, kernel, fields=None, passes=None, options=None, nthreads=None):
        self.host_fields = dict(fields or {})
        self.device_fields = {}
        for name, array in self.host_fields.items():
            buf = _core.DeviceBuffer(np.shape(array), np.asarray(array).itemsize)
            self.device_fields[name] = buf
        kwargs = {"fields": self.device_fields, "options": options}
        if passes is not None:
            kwargs["passes"] = passes
        self.kernel = _testing.compile_qir_cuda(text, kernel, **kwargs)
        self.info = {"nthreads": nthreads}

    def launch(self, *args):
        for name, array in self.host_fields.items():
            self.device_fields[name].upload(np.ascontiguousarray(array))
        try:
            result = self.kernel(*args)
        finally:
            for name, array in self.host_fields.items():
                self.device_fields[name].download(array)
        if result is None:
            return []
        return list(result) if isinstance(result, tuple) else [result]


def run_qir_cuda(text, kernel, args, fields=None, passes=None, nthreads=None, options=None):
    return CudaQir(text, kernel, fields, passes, options, nthreads).launch(*args)


@pytest.fixture(autouse=True)
def on_the_gpu(monkeypatch):
    monkeypatch.setattr(_testing, "run_qir", run_qir_cuda)
    monkeypatch.setattr(_testing, "compile_qir", CudaQir)


SIMT = """\
kernel @simt(%a: ndarray<i32, 1>, %b: ndarray<i32, 1>, %c: ndarray<u32, 1>, %d: ndarray<f64, 1>) {
  task range_for block_dim 64 {
    %zero = const 0 : i32
    %n = shape %a, 0 : i32
    parallel_for %i = %zero to %n {
      %tile = shared_alloc : ptr<[64 x i32], shared>
      %t = thread_idx : i32
      %one = const 1 : i32
      %slot = array_ptr %tile, %t : ptr<i32, shared>
      store %slot, %i
      block_sync
      %bd = block_dim : i32
      %next = add %t, %one : i32
      %wrap = rem %next, %bd : i32
      %nslot = array_ptr %tile, %wrap : ptr<i32, shared>
      %nv = load %nslot : i32
      %pa = elem_ptr %a, %i : ptr<i32, global>
      store %pa, %nv
      %x = shuffle_xor %i, %one : i32
      %up = shuffle_up %i, %one : i32
      %down = shuffle_down %i, %one : i32
      %ten = const 10 : i32
      %small = lt %t, %ten : u1
      %cnt = block_sync_count %small : i32
      %five = const 5 : i32
      %is5 = eq %t, %five : u1
      %any = block_sync_any %is5 : i32
      %all = block_sync_all %small : i32
      %k = const 100 : i32
      %m0 = mul %x, %k : i32
      %s0 = add %m0, %cnt : i32
      %m1 = mul %any, %k : i32
      %m2 = mul %m1, %k : i32
      %s1 = add %s0, %all : i32
      %pb = elem_ptr %b, %i : ptr<i32, global>
      store %pb, %s1
      %two = const 2 : i32
      %odd = rem %i, %two : i32
      %bal = ballot %odd : u32
      %lane = lane_id : i32
      %ul = cast %lane : u32
      %ud = cast %down : u32
      %uu = cast %up : u32
      %first = eq %lane, %zero : u1
      %sel = select %first, %bal, %ud : u32
      %pc = elem_ptr %c, %i : ptr<u32, global>
      store %pc, %sel
      %fi = cast %i : f64
      %half = const 1.5 : f64
      %fv = mul %fi, %half : f64
      %fx = shuffle_xor %fv, %one : f64
      %pd = elem_ptr %d, %i : ptr<f64, global>
      store %pd, %fx
    }
  }
}
"""


def test_simt_semantics():
    n = 256
    a = np.zeros(n, np.int32)
    b = np.zeros(n, np.int32)
    c = np.zeros(n, np.uint32)
    d = np.zeros(n, np.float64)
    _testing.compile_qir_cuda(SIMT, "simt")(a, b, c, d)
    i = np.arange(n)
    t = i % 64
    lane = i % 32
    np.testing.assert_array_equal(a, i - t + (t + 1) % 64)  # shared memory + block_sync
    # shuffle_xor by 1, block_sync_count(t < 10) == 10, block_sync_all(t < 10) == 0
    np.testing.assert_array_equal(b, (i ^ 1) * 100 + 10)
    down = np.where(lane == 31, i, i + 1)
    np.testing.assert_array_equal(c, np.where(lane == 0, 0xAAAAAAAA, down).astype(np.uint32))
    np.testing.assert_array_equal(d, (i ^ 1) * 1.5)
