"""Errors of qd.simt: class, message and the source line they point at."""

import inspect
import warnings

import numpy as np
import pytest

import quadrants as qd


def line_of(fn, needle):
    lines, first = inspect.getsourcelines(fn)
    for k, text in enumerate(lines):
        if needle in text:
            return first + k
    raise AssertionError(needle)


def test_cpu_without_emulation_rejects_simt(arch):
    if arch != "cpu":
        pytest.skip("the CPU's own rule")
    qd.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        qd.init(arch=qd.cpu)

    @qd.kernel
    def k(y: qd.types.ndarray(qd.i32, ndim=1)):
        for i in range(32):
            qd.simt.block.sync()
            y[i] = 1

    y = qd.ndarray(qd.i32, 32)
    with pytest.raises(qd.QuadrantsSyntaxError, match=r"qd.simt.block.sync is not supported for arch (x64|arm64)") as info:
        k(y)
    assert f":{line_of(test_cpu_without_emulation_rejects_simt, 'block.sync()')}:" in str(info.value)


def test_python_scope_call():
    with pytest.raises(qd.QuadrantsSyntaxError, match=r"qd.simt.block.sync\(\) can only be called"):
        qd.simt.block.sync()
    with pytest.raises(qd.QuadrantsSyntaxError, match="qd.simt.subgroup.shuffle"):
        qd.simt.subgroup.shuffle(1, 2)


@pytest.mark.parametrize("shape", [2.5, (4, "a"), (0,), (), None, (4, 2.0)])
def test_shared_array_bad_shape(shape):
    @qd.kernel
    def k(y: qd.types.ndarray(qd.i32, ndim=1)):
        for i in range(32):
            s = qd.simt.block.SharedArray(shape, qd.i32)
            y[i] = 1

    with pytest.raises(qd.QuadrantsCompilationError, match="shape must be an int or a tuple/list") as info:
        k(qd.ndarray(qd.i32, 32))
    assert f":{line_of(test_shared_array_bad_shape, 'SharedArray(shape')}:" in str(info.value)


def test_shared_array_outside_parallel_loop():
    @qd.kernel
    def k(y: qd.types.ndarray(qd.i32, ndim=1)):
        s = qd.simt.block.SharedArray((4,), qd.i32)
        y[0] = 1

    with pytest.raises(qd.QuadrantsSyntaxError, match="inside the body of a parallel for loop"):
        k(qd.ndarray(qd.i32, 4))


def test_shared_array_wrong_index_count_and_constant_out_of_bounds():
    @qd.kernel
    def k(y: qd.types.ndarray(qd.i32, ndim=1)):
        for i in range(32):
            s = qd.simt.block.SharedArray((4, 8), qd.i32)
            y[i] = s[1]

    with pytest.raises(qd.QuadrantsSyntaxError, match="2 dimensions is indexed with 1 indices"):
        k(qd.ndarray(qd.i32, 32))

    @qd.kernel
    def k2(y: qd.types.ndarray(qd.i32, ndim=1)):
        for i in range(32):
            s = qd.simt.block.SharedArray((4, 8), qd.i32)
            y[i] = s[1, 8]

    with pytest.raises(qd.QuadrantsCompilationError, match="out of bounds for axis 1 of size 8"):
        k2(qd.ndarray(qd.i32, 32))


def test_wrong_argument_count():
    @qd.kernel
    def k(y: qd.types.ndarray(qd.i32, ndim=1)):
        for i in range(32):
            y[i] = qd.simt.subgroup.shuffle(y[i])

    with pytest.raises(qd.QuadrantsSyntaxError, match=r"shuffle\(\) takes 2 arguments, 1 given"):
        k(qd.ndarray(qd.i32, 32))


def test_simt_outside_parallel_loop():
    @qd.kernel
    def k(y: qd.types.ndarray(qd.i32, ndim=1)):
        y[0] = qd.simt.block.thread_idx()

    with pytest.raises(qd.QuadrantsSyntaxError, match="inside the body of a parallel for loop"):
        k(qd.ndarray(qd.i32, 4))


def test_float_predicate():
    @qd.kernel
    def k(y: qd.types.ndarray(qd.f32, ndim=1)):
        for i in range(32):
            y[i] = qd.simt.subgroup.all_true(y[i])

    with pytest.raises(qd.QuadrantsTypeError, match="predicate must be an integer"):
        k(qd.ndarray(qd.f32, 32))


def test_ballot_first_n_needs_compile_time_n():
    @qd.kernel
    def k(y: qd.types.ndarray(qd.u32, ndim=1), n: qd.i32):
        for i in range(32):
            y[i] = qd.simt.subgroup.ballot_first_n(1, n)

    with pytest.raises(qd.QuadrantsCompilationError, match="n must be a compile-time int"):
        k(qd.ndarray(qd.u32, 32), 3)


def test_warp_match_all_is_not_supported():
    @qd.kernel
    def k(y: qd.types.ndarray(qd.u32, ndim=1)):
        for i in range(32):
            y[i] = qd.simt.warp.match_all(qd.u32(0xFFFFFFFF), i)

    with pytest.raises(qd.QuadrantsSyntaxError, match="qd.simt.warp.match_all is not supported"):
        k(qd.ndarray(qd.u32, 32))


def _cached_simt_kernel():
    @qd.kernel
    def cached_simt(y: qd.types.ndarray(qd.i32, ndim=1)):
        qd.loop_config(block_dim=32)
        for i in range(32):
            y[i] = qd.simt.subgroup.shuffle_xor(i, qd.u32(1))

    return cached_simt


def test_cpu_simt_is_part_of_the_cache_key(arch):
    if arch != "cpu":
        pytest.skip("the CPU's own option")
    y = qd.ndarray(qd.i32, 32)
    _cached_simt_kernel()(y)  # compiled with cpu_simt=True (and cached on disk)
    np.testing.assert_array_equal(y.to_numpy(), np.arange(32) ^ 1)
    qd.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        qd.init(arch=qd.cpu)
    with pytest.raises(qd.QuadrantsSyntaxError, match=r"qd.simt.subgroup.shuffle_xor is not supported for arch (x64|arm64)"):
        _cached_simt_kernel()(qd.ndarray(qd.i32, 32))


def test_collective_bitwise_scan_needs_integers():
    @qd.kernel
    def k(y: qd.types.ndarray(qd.f32, ndim=1)):
        for i in range(32):
            y[i] = qd.simt.subgroup.inclusive_xor(y[i])

    with pytest.raises(qd.QuadrantsTypeError, match="inclusive_xor takes integers, got f32") as info:
        k(qd.ndarray(qd.f32, 32))
    line = line_of(test_collective_bitwise_scan_needs_integers, "inclusive_xor(y[i])")
    assert f":{line}:" in str(info.value)


@pytest.mark.parametrize("log2_size", [6, -1, "n"])
def test_collective_log2_size_is_a_compile_time_int_in_range(log2_size):
    @qd.kernel
    def k(y: qd.types.ndarray(qd.i32, ndim=1), n: qd.i32):
        for i in range(32):
            if qd.static(log2_size == "n"):
                y[i] = qd.simt.subgroup.reduce_all_add_tiled(y[i], n)
            else:
                y[i] = qd.simt.subgroup.reduce_all_add_tiled(y[i], log2_size)

    lanes = qd.simt.subgroup.group_size()
    log2 = qd.simt.subgroup.log2_group_size()
    with pytest.raises(qd.QuadrantsCompilationError,
                       match=rf"reduce_all_add_tiled: log2_size must be a compile-time int in "
                             rf"\[0, {log2}\] \(the subgroups of this target have {lanes} lanes\)"):
        k(qd.ndarray(qd.i32, 32), 3)


def test_collective_argument_count_and_kinds():
    @qd.kernel
    def too_many(y: qd.types.ndarray(qd.i32, ndim=1)):
        for i in range(32):
            y[i] = qd.simt.subgroup.exclusive_add(y[i], 1)

    with pytest.raises(qd.QuadrantsSyntaxError, match=r"subgroup.exclusive_add\(\) takes 1 argument, 2 given"):
        too_many(qd.ndarray(qd.i32, 32))

    @qd.kernel
    def vector(y: qd.types.ndarray(qd.f32, ndim=1)):
        for i in range(32):
            v = qd.Vector([y[i], y[i]])
            y[i] = qd.simt.subgroup.reduce_add(v)[0]

    with pytest.raises(qd.QuadrantsTypeError, match="SIMT operations take scalars"):
        vector(qd.ndarray(qd.f32, 32))

    @qd.kernel
    def outside(y: qd.types.ndarray(qd.i32, ndim=1)):
        y[0] = qd.simt.subgroup.reduce_add(y[0])

    with pytest.raises(qd.QuadrantsSyntaxError, match="inside the body of a parallel for loop"):
        outside(qd.ndarray(qd.i32, 32))


def test_block_collective_arguments():
    @qd.kernel
    def runtime_block_dim(y: qd.types.ndarray(qd.i32, ndim=1), b: qd.i32):
        qd.loop_config(block_dim=64)
        for i in range(64):
            y[i] = qd.simt.block.reduce_add(y[i], b, qd.i32)

    with pytest.raises(qd.QuadrantsCompilationError, match="block_dim must be a positive multiple"):
        runtime_block_dim(qd.ndarray(qd.i32, 64), 64)

    @qd.kernel
    def not_a_dtype(y: qd.types.ndarray(qd.i32, ndim=1)):
        qd.loop_config(block_dim=64)
        for i in range(64):
            y[i] = qd.simt.block.inclusive_add(y[i], 64, 3)

    with pytest.raises(qd.QuadrantsTypeError, match="must be a data type"):
        not_a_dtype(qd.ndarray(qd.i32, 64))

    @qd.kernel
    def not_a_func(y: qd.types.ndarray(qd.i32, ndim=1)):
        qd.loop_config(block_dim=64)
        for i in range(64):
            y[i] = qd.simt.block.reduce(y[i], 64, 7, qd.i32)

    with pytest.raises(qd.QuadrantsTypeError, match="the operator must be a @qd.func"):
        not_a_func(qd.ndarray(qd.i32, 64))
