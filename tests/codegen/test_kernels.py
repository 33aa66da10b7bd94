"""Whole kernels on the CPU: ndarrays, fields, kernel temporaries, results, loops, threads.

The kernels are tests/codegen/qir/*.qir; the references are NumPy or plain Python.
"""

import numpy as np
import pytest

from qir_helpers import HAVE_RUN_QIR, load, run
from quadrants._core import _testing


def test_run_qir_is_registered():
    assert HAVE_RUN_QIR, "csrc/python/testing.c must call qd_py_testing_add_run"


@pytest.mark.parametrize("nthreads", [1, 2, 0])
@pytest.mark.parametrize("n", [0, 1, 7, 1000, 100003])
def test_saxpy(n, nthreads):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    want = np.float32(2.5) * x + y
    assert run(load("saxpy.qir"), "saxpy", [2.5, x, y], nthreads=nthreads) == []
    # fast math lets LLVM fuse the multiply-add, so compare within one rounding
    np.testing.assert_allclose(y, want, rtol=1e-6, atol=1e-6)


def test_saxpy_launched_many_times():
    h = _testing.compile_qir(load("saxpy.qir"), "saxpy", nthreads=2)
    x = np.ones(5000, dtype=np.float32)
    y = np.zeros(5000, dtype=np.float32)
    for _ in range(100):
        h.launch(1.0, x, y)
    np.testing.assert_array_equal(y, np.full(5000, 100, dtype=np.float32))


def test_argument_layout():
    """Packed arguments: scalars at their size and alignment, ndarrays {ptr, i32 shape[n]}
    aligned to 8 with the size rounded up to 8, total rounded up to 8."""
    text = """\
kernel @k(%a: u1, %b: i16, %c: f64, %d: ndarray<f32, 3>, %e: i8, %f: ndarray<i8, 1>, %g: f16) {
  task serial {
    %d0 = shape %d, 0 : i32
    %f0 = shape %f, 0 : i32
    kernel_ret %a, 0
    kernel_ret %b, 1
    kernel_ret %c, 2
    kernel_ret %d0, 3
    kernel_ret %e, 4
    kernel_ret %f0, 5
    kernel_ret %g, 6
  }
}
"""
    info = _testing.compile_qir(text, "k").info
    assert info["arg_offsets"] == [0, 2, 8, 16, 40, 48, 64]
    assert info["args_size"] == 72


def test_unread_parameters_take_no_room():
    """A parameter no instruction reads gets the offset QD_ARG_UNUSED (2^32 - 1) and no bytes;
    its argument is neither converted nor checked at launch."""
    text = """\
kernel @k(%a: i32, %unused: ndarray<f32, 2>, %b: f64, %skip: i64, %out: ndarray<f64, 1>) {
  task serial {
    %i = const 0 : i32
    %p = elem_ptr %out, %i : ptr<f64, global>
    %x = cast %a : f64
    %y = add %x, %b : f64
    store %p, %y
  }
}
"""
    h = _testing.compile_qir(text, "k")
    unused = 2**32 - 1
    assert h.info["arg_offsets"] == [0, unused, 8, unused, 16]
    assert h.info["args_size"] == 32
    out = np.zeros(1, np.float64)
    h.launch(3, "not an array", 0.5, None, out)
    assert out[0] == 3.5


def test_fields():
    grid = np.zeros((64, 48), dtype=np.float32)
    launches = np.array(10, dtype=np.int32)
    fields = {"grid": grid, "launches": launches}
    h = _testing.compile_qir(load("fields.qir"), "fill", fields=fields)
    assert h.launch(0.5) == [11]
    assert h.launch(2.0) == [12]
    assert int(launches) == 12
    i, j = np.meshgrid(np.arange(64), np.arange(48), indexing="ij")
    np.testing.assert_array_equal(grid, ((100 * i + j) * 2.0).astype(np.float32))
    row = run(load("fields.qir"), "row_sum", [5], fields={"grid": grid})
    assert row == [float(grid[5].astype(np.float64).sum())]


def test_field_checks():
    text = load("fields.qir")
    with pytest.raises(ValueError, match="extent"):
        run(text, "row_sum", [0], fields={"grid": np.zeros((64, 47), dtype=np.float32)})
    with pytest.raises(ValueError, match="f32"):
        run(text, "row_sum", [0], fields={"grid": np.zeros((64, 48), dtype=np.float64)})
    with pytest.raises(ValueError, match="not a field"):
        run(text, "row_sum", [0], fields={"nope": np.zeros(3)})
    with pytest.raises(Exception, match="no memory"):
        run(text, "row_sum", [0])


def test_tmps_shared_between_tasks():
    h = _testing.compile_qir(load("tmps.qir"), "k", fields={"limit": np.array(900, np.int32)})
    x = np.arange(1000, dtype=np.int64)
    # every launch starts from its own init task
    for launch in range(3):
        before = x.copy()
        s, t = h.launch(x, 7)
        assert t == 14
        assert s == int(before[:900].sum()) + 900 * 14
        np.testing.assert_array_equal(x[:900], before[:900] + 14)
        np.testing.assert_array_equal(x[900:], before[900:])


def test_pointer_bitcast_reads_the_same_bytes():
    h = _testing.compile_qir(load("pointer_bitcast.qir"), "k")
    x = np.zeros(6, dtype=np.uint32)
    v = (7 << 32) | 5
    (old,) = h.launch(x, v)
    assert old == v
    np.testing.assert_array_equal(x, [0, 0, 6, 7, 0, 0])


def test_kernel_ret_types():
    text = """\
kernel @k(%a: i8, %b: u64, %c: f32, %d: f64) {
  task serial {
    kernel_ret %a, 0
    kernel_ret %b, 1
    %e = const -1 : i64
    kernel_ret %e, 3
    kernel_ret %c, 4
    kernel_ret %d, 5
    %t = const true : u1
    kernel_ret %t, 6
  }
}
"""
    assert run(text, "k", [-5, 2**64 - 1, 0.25, 1e300]) == [-5, 2**64 - 1, None, -1, 0.25,
                                                            1e300, True]


def test_loops():
    n = 300
    out = np.zeros(n, dtype=np.int32)
    steps = np.zeros(n, dtype=np.int32)
    run(load("loops.qir"), "loops", [out, steps])

    def collatz(x):
        count = 0
        while x != 1:
            x = 3 * x + 1 if x % 2 else x // 2
            count += 1
        return count

    assert out.tolist() == [sum(1 for j in range(min(i, 50)) if j % 3) for i in range(n)]
    assert steps.tolist() == [collatz(i + 1) for i in range(n)]


def test_3d_indexing_and_local_array():
    out = np.zeros((5, 7, 11), dtype=np.int32)
    run(load("loops.qir"), "index3", [out])
    i, j, k = np.meshgrid(np.arange(5), np.arange(7), np.arange(11), indexing="ij")
    np.testing.assert_array_equal(out, i * 10000 + j * 100 + k)


def test_argument_checks():
    text = load("saxpy.qir")
    x = np.zeros(10, dtype=np.float32)
    with pytest.raises(ValueError, match="f32"):
        run(text, "saxpy", [1.0, x, np.zeros(10, dtype=np.float64)])
    with pytest.raises(ValueError, match="dimension"):
        run(text, "saxpy", [1.0, x, np.zeros((2, 5), dtype=np.float32)])
    with pytest.raises(ValueError, match="contiguous"):
        run(text, "saxpy", [1.0, x, np.zeros(20, dtype=np.float32)[::2]])
    with pytest.raises(TypeError):
        run(text, "saxpy", [1.0, x])
    with pytest.raises(TypeError):
        run(text, "saxpy", ["a", x, x])


def test_range_bounds_not_starting_at_zero():
    """[begin, end) with begin != 0, and an empty range (end < begin)."""
    text = """\
kernel @k(%out: ndarray<i32, 1>, %lo: i32, %hi: i32) {
  task range_for {
    parallel_for %i = %lo to %hi {
      %p = elem_ptr %out, %i : ptr<i32, global>
      store %p, %i
    }
  }
}
"""
    out = np.full(100000, -1, dtype=np.int32)
    h = _testing.compile_qir(text, "k", nthreads=3)
    h.launch(out, 17, 99001)
    want = np.full(100000, -1, dtype=np.int32)
    want[17:99001] = np.arange(17, 99001)
    np.testing.assert_array_equal(out, want)
    h.launch(out, 50, 10)
    np.testing.assert_array_equal(out, want)


def _fib(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


def test_recursive_func():
    out = np.zeros(64, dtype=np.int32)
    run(load("recursion.qir"), "fibs", [], fields={"out": out}, nthreads=4)
    np.testing.assert_array_equal(out, [_fib(i % 20) for i in range(64)])
    n = int(np.random.default_rng().integers(0, 25))
    assert run(load("recursion.qir"), "fib1", [n], fields={"out": out}) == [_fib(n)]


def test_recursive_func_with_ndarray_and_result_array():
    a = np.random.default_rng().standard_normal(300).astype(np.float32)
    out = np.zeros((300, 2), dtype=np.float32)
    run(load("recursion_aggregate.qir"), "prefix_sums", [a, out], nthreads=4)
    np.testing.assert_allclose(out[:, 0], np.cumsum(a, dtype=np.float64), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(out[:, 1], np.cumsum(a.astype(np.float64) ** 2), rtol=1e-4)
