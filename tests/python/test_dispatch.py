"""The launch fast path (quadrants._core.Dispatcher, csrc/python/dispatch.c): a repeated call of a
compiled kernel launches from C and must behave exactly as the Python launch path does -- same
results for every scalar dtype, NumPy arrays, qd.ndarrays and templates, re-specialisation when an
argument's dtype changes, the same errors for bad arguments, and nothing left after qd.reset.

`slow_calls` counts the calls that take the Python path (Kernel._launch); `_launch_fallback(k,
*args)` forces that path, as a reference for what the fast path returns."""

import gc
import math
import sys

import numpy as np
import pytest
from qd_helpers import DTYPE_NAMES, random_array, random_scalar, requires_compiler

import quadrants as qd
from quadrants import _core, _kernel

pytestmark = requires_compiler

NDArray = qd.types.NDArray


@pytest.fixture(autouse=True)
def init(arch):
    qd.init(arch=getattr(qd, arch))
    yield
    qd.reset()


def slow(kernel, *args, **kwargs):
    """The result of the Python launch path."""
    return _kernel._launch_fallback(kernel, *args, **kwargs)


def same_number(a, b):
    if type(a) is not type(b):
        return False
    return a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b))


def error_of(call):
    """(type, message) of the exception `call()` raises."""
    with pytest.raises(Exception) as info:
        call()
    return type(info.value), str(info.value)


# --- scalars ---


def scalar_values(dtype):
    """Random values of `dtype` plus the Python numbers its conversion rules accept: bools, and
    for integer types values that wrap; for real types ints."""
    values = [random_scalar(dtype) for _ in range(6)] + [True, False, 0, 1]
    if dtype.is_real:
        values += [3, -(2**60), 2.5, -0.0, float("inf"), float("nan")]
    else:
        values += [2**70 + 5, -1, -(2**63), 2**64 - 1, 255, 256]
    return values


# The dtype of the kernel in test_scalars_every_dtype (the compiler resolves annotations by name).
scalar_dtype = None


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_scalars_every_dtype(name, slow_calls):
    global scalar_dtype
    dtype = scalar_dtype = getattr(qd, name)

    @qd.kernel
    def echo(v: scalar_dtype) -> scalar_dtype:
        return v

    values = scalar_values(dtype)
    echo(values[0])
    assert echo._dispatch_size() == 1
    # an int outside int64 (signed types) or uint64 (unsigned ones) is a TypeError on both paths
    lo, hi = (0, 2**64) if not dtype.is_real and not dtype.is_signed else (-(2**63), 2**63)
    bad = [v for v in values if not dtype.is_real and dtype is not qd.u1 and type(v) is int and not lo <= v < hi]
    values = [v for v in values if v not in bad or type(v) is not int]
    del slow_calls[:]
    fast = [echo(v) for v in values]
    assert slow_calls == []
    for value, result in zip(values, fast):
        assert same_number(result, slow(echo, value)), (value, result)
    for v in bad:
        for call in (lambda: echo(v), lambda: slow(echo, v)):
            cls, msg = error_of(call)
            assert cls is TypeError and "does not fit the 64-bit" in msg, (v, cls, msg)


NUMPY_INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
NUMPY_FLOATS = [np.float16, np.float32, np.float64, np.longdouble]


def numpy_scalars(dtype):
    """NumPy scalars of every integer type (and float type, for a real dtype) with random values
    over the type's range, plus edge values."""
    values = []
    for t in NUMPY_INTS:
        info = np.iinfo(t)
        values += list(np.random.default_rng().integers(info.min, info.max, 3, dtype=t, endpoint=True))
        values += [t(info.min), t(info.max)]
    if dtype.is_real:
        for t in NUMPY_FLOATS:
            values += [t(v) for v in np.random.default_rng().standard_normal(3) * 1e3]
        values += [np.float64(1e300), np.float32("nan"), np.float64("-inf")]
    return values


def outcome(call):
    try:
        return call()
    except Exception as exc:  # noqa: BLE001 -- the class and message are what is compared
        return (type(exc), str(exc))


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_numpy_scalars_every_dtype(name, slow_calls):
    """NumPy integer scalars (and floating ones, for a real parameter) launch from C, with the
    results and errors of the Python path; numpy.bool_, and floats for an integer parameter,
    take the Python path, which refuses them."""
    global scalar_dtype
    dtype = scalar_dtype = getattr(qd, name)

    @qd.kernel
    def echo(v: scalar_dtype) -> scalar_dtype:
        return v

    echo(1)
    values = numpy_scalars(dtype)
    del slow_calls[:]
    fast = [outcome(lambda: echo(v)) for v in values]
    assert slow_calls == []
    for value, got in zip(values, fast):
        want = outcome(lambda: slow(echo, value))
        assert got == want or (same_number(got, want)), (value, got, want)
    refused = [np.bool_(True)] + ([np.float32(1.0), np.float64(2.0)] if not dtype.is_real else [])
    for v in refused:
        got, want = outcome(lambda: echo(v)), outcome(lambda: slow(echo, v))
        assert got == want and isinstance(got, tuple), (v, got)
    assert echo._dispatch_size() == 1


def test_several_return_values():
    @qd.kernel
    def k(a: qd.i32, b: qd.f64) -> tuple[qd.i32, qd.f64]:
        return a + 1, b * 2

    assert k(1, 2.0) == (2, 4.0)
    assert k(3, 4) == (4, 8.0) == slow(k, 3, 4)


# --- arrays ---


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_numpy_arrays_every_dtype(name, slow_calls):
    dtype = getattr(qd, name)

    @qd.kernel
    def copy(src: qd.types.ndarray(), dst: qd.types.ndarray()):
        for i in range(src.shape[0]):
            dst[i] = src[i]

    src = random_array(dtype, (17,))
    dst = np.zeros_like(src)
    copy(src, dst)
    del slow_calls[:]
    for _ in range(3):
        src = random_array(dtype, (23,))
        dst = np.zeros_like(src)
        copy(src, dst)
        np.testing.assert_array_equal(dst, src)
    assert slow_calls == []


def test_qd_ndarrays_and_numpy_arrays(slow_calls):
    @qd.kernel
    def saxpy(a: qd.f32, x: NDArray[qd.f32, 1], y: NDArray[qd.f32, 1]):
        for i in range(x.shape[0]):
            y[i] = a * x[i] + y[i]

    x, y = qd.ndarray(qd.f32, 8), qd.ndarray(qd.f32, 8)
    x.from_numpy(np.arange(8, dtype=np.float32))
    nx, ny = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
    saxpy(2.0, x, y)
    saxpy(2.0, nx, ny)
    saxpy(1.0, x, ny)
    assert saxpy._dispatch_size() == 3
    del slow_calls[:]
    saxpy(1.0, x, y)
    saxpy(3, nx, ny)
    saxpy(0.5, x, ny)
    assert slow_calls == []
    np.testing.assert_array_equal(y.to_numpy(), np.arange(8) * 3.0)
    np.testing.assert_array_equal(ny, np.arange(8) * 6.5)
    # A fresh qd.ndarray of the same dtype and ndim is a repeat of the same launch.
    z = qd.ndarray(qd.f32, 3)
    saxpy(1.0, z, z)
    assert slow_calls == []


def test_dtype_change_respecializes(slow_calls):
    @qd.kernel
    def double(a: qd.types.ndarray()):
        for i in range(a.shape[0]):
            a[i] = a[i] * 2

    arrays = [np.arange(5, dtype=t) for t in (np.float32, np.float64, np.int32, np.int64)]
    for a in arrays:
        double(a)
    assert len(slow_calls) == 4 and double._dispatch_size() == 4
    assert len(double._compiled) == 4
    del slow_calls[:]
    for _ in range(2):
        for a in reversed(arrays):
            double(a)
    assert slow_calls == []
    for a in arrays:
        np.testing.assert_array_equal(a, np.arange(5) * 8)
    # ndim is part of the specialisation too.
    b = np.ones((2, 3), np.float32)

    @qd.kernel
    def fill(a: qd.types.ndarray(), v: qd.f32):
        for I in qd.grouped(a):
            a[I] = v

    fill(np.zeros(4, np.float32), 1.0)
    fill(b, 7.0)
    np.testing.assert_array_equal(b, np.full((2, 3), 7.0, np.float32))
    assert len(fill._compiled) == 2 and fill._dispatch_size() == 2


def test_fortran_order_arrays_copy_in_and_out(slow_calls):
    @qd.kernel
    def mark(a: NDArray[qd.i32, 2]):
        for i, j in qd.ndrange(a.shape[0], a.shape[1]):
            a[i, j] = i * 100 + j

    expected = np.array([[i * 100 + j for j in range(5)] for i in range(3)], np.int32)
    for _ in range(3):
        fortran = np.zeros((3, 5), dtype=np.int32, order="F")
        mark(fortran)
        np.testing.assert_array_equal(fortran, expected)
    assert len(slow_calls) == 3 and mark._dispatch_size() == 0
    c_order = np.zeros((3, 5), np.int32)
    mark(c_order)
    fortran = np.zeros((3, 5), dtype=np.int32, order="F")
    mark(fortran)  # the C-ordered launch is registered; this one must still copy back
    np.testing.assert_array_equal(fortran, expected)
    assert len(slow_calls) == 5


# --- templates ---


def test_fields_compile_different_specializations(slow_calls):
    @qd.kernel
    def fill(f: qd.template(), v: qd.f32):
        for i in f:
            f[i] = v

    a, b = qd.field(qd.f32, shape=4), qd.field(qd.f32, shape=6)
    fill(a, 1.0)
    fill(b, 2.0)
    assert len(fill._compiled) == 2 and fill._dispatch_size() == 2
    del slow_calls[:]
    fill(a, 3.0)
    fill(b, 4.0)
    assert slow_calls == []
    np.testing.assert_array_equal(a.to_numpy(), np.full(4, 3.0, np.float32))
    np.testing.assert_array_equal(b.to_numpy(), np.full(6, 4.0, np.float32))


def test_int_and_str_templates_by_value(slow_calls):
    @qd.kernel
    def scaled(a: qd.i64, n: qd.template(), tag: qd.template()) -> qd.i64:
        r = a * n
        if qd.static(tag == "neg"):
            r = -r
        return r

    big = 10**6 + 7
    assert scaled(3, big, "neg") == -3 * big
    assert scaled(3, 5, "pos") == 15
    del slow_calls[:]
    # Equal values in new objects are repeats; True is not the int 1 (its key differs).
    assert scaled(2, int(str(big)), "".join(["n", "eg"])) == -2 * big
    assert scaled(2, 5, "pos") == 10
    assert slow_calls == []
    assert scaled(2, True, "pos") == 2
    assert scaled(2, 6, "pos") == 12
    assert len(slow_calls) == 2
    assert len(scaled._compiled) == 4


def test_float_templates_take_the_python_path(slow_calls):
    @qd.kernel
    def k(x: qd.template()) -> qd.f64:
        return x * 2

    assert k(1.5) == 3.0
    assert k(1.5) == 3.0
    assert len(slow_calls) == 2 and k._dispatch_size() == 0


def test_data_oriented_methods(slow_calls):
    @qd.data_oriented
    class Model:
        def __init__(self, n):
            self.x = qd.field(qd.i32, shape=n)

        @qd.kernel
        def step(self, v: qd.i32):
            for i in self.x:
                self.x[i] += v

    m1, m2 = Model(3), Model(5)
    m1.step(1)
    m2.step(2)
    del slow_calls[:]
    m1.step(10)
    Model.step(m2, 20)
    assert slow_calls == []
    np.testing.assert_array_equal(m1.x.to_numpy(), np.full(3, 11))
    np.testing.assert_array_equal(m2.x.to_numpy(), np.full(5, 22))
    bound = m1.step
    assert bound._qd_kernel is True and bound.__self__ is m1 and bound.__func__ is Model.step

    class Plain:
        step = Model.step

    with pytest.raises(qd.QuadrantsSyntaxError, match="data_oriented"):
        Plain().step(1)


def test_table_keeps_a_bounded_number_of_launches(slow_calls):
    @qd.kernel
    def k(n: qd.template()) -> qd.i32:
        return n + 1

    for round_ in range(3):
        for n in range(12):
            assert k(n) == n + 1
    assert k._dispatch_size() == 8
    assert len(k._compiled) == 12


# --- calls the fast path leaves to Python ---


def test_keywords_and_qd_stream(slow_calls):
    """Keyword arguments bound to the kernel's parameters launch from C like positional ones;
    qd_stream= and anything unknown, repeated or missing takes the Python path (which raises)."""

    @qd.kernel
    def sub(a: qd.i32, b: qd.i32) -> qd.i32:
        return a - b

    assert sub(5, 3) == 2
    del slow_calls[:]
    assert sub(b=3, a=5) == 2
    assert sub(5, b=1) == 4
    assert len(slow_calls) == 0
    assert sub(5, 3, qd_stream=None) == 2
    assert len(slow_calls) == 1
    assert sub(7, 3) == 4
    assert len(slow_calls) == 1
    for bad in (lambda: sub(5, a=1), lambda: sub(5, c=1), lambda: sub(b=1)):
        with pytest.raises(qd.QuadrantsSyntaxError):
            bad()
    assert len(slow_calls) == 4


def bad_calls(saxpy, x, y):
    """Calls that the Python layer rejects, once a good launch is registered."""
    return {
        "int param given a float": lambda: saxpy(1.5, x, y),
        "int param given a str": lambda: saxpy("1", x, y),
        "wrong dtype": lambda: saxpy(1, x.astype(np.float64), y),
        "wrong ndim": lambda: saxpy(1, x.reshape(2, 4), y),
        "not an array": lambda: saxpy(1, [1, 2], y),
        "non-contiguous": lambda: saxpy(1, np.zeros(16, np.int32)[::2], y),
        "unsupported dtype": lambda: saxpy(1, x.astype(np.complex64), y),
        "too many": lambda: saxpy(1, x, y, y),
        "too few": lambda: saxpy(1, x),
        "unknown keyword": lambda: saxpy(1, x, y=y, z=2),
        "read-only": lambda: saxpy(1, x, np.frombuffer(bytes(32), np.int32)),
    }


def test_errors_identical_on_bad_arguments():
    @qd.kernel
    def saxpy(a: qd.i32, x: NDArray[qd.i32, 1], y: NDArray[qd.i32, 1]):
        for i in range(x.shape[0]):
            y[i] = a * x[i] + y[i]

    def through_python(*args, **kwargs):
        return slow(saxpy, *args, **kwargs)

    x, y = np.arange(8, dtype=np.int32), np.zeros(8, np.int32)
    saxpy(2, x, y)
    assert saxpy._dispatch_size() == 1
    expected = {what: error_of(call) for what, call in bad_calls(through_python, x, y).items()}
    for what, call in bad_calls(saxpy, x, y).items():
        assert error_of(call) == expected[what], what


def test_huge_int_for_a_float_param():
    @qd.kernel
    def k(a: qd.f64) -> qd.f64:
        return a

    assert k(2) == 2.0
    assert error_of(lambda: k(10**400)) == error_of(lambda: float(10**400))


def test_runtime_errors_restyled_on_the_fast_path(arch):
    qd.init(arch=getattr(qd, arch), debug=True)

    @qd.kernel
    def k(a: qd.i32):
        assert a > 0, "a must be positive"

    messages = []
    for _ in range(3):
        k(1)
        with pytest.raises(qd.QuadrantsAssertionError) as info:
            k(-1)
        messages.append(str(info.value))
    assert k._dispatch_size() == 1
    assert messages[0] == messages[1] == messages[2]
    assert "a must be positive" in messages[0]


# --- reset and the Dispatcher itself ---


def test_reset_clears_the_table(arch):
    @qd.kernel
    def inc(a: NDArray[qd.f32, 1]):
        for i in range(a.shape[0]):
            a[i] += 1

    a = np.zeros(4, np.float32)
    inc(a)
    inc(a)
    assert inc._dispatch_size() == 1
    qd.reset()
    assert inc._dispatch_size() == 0 and len(inc._compiled) == 0
    with pytest.raises(qd.QuadrantsRuntimeError, match="not initialized"):
        inc(a)
    qd.init(arch=getattr(qd, arch))
    inc(a)
    inc(a)
    np.testing.assert_array_equal(a, np.full(4, 4.0, np.float32))
    assert inc._dispatch_size() == 1


def test_qd_ndarray_from_before_reset(arch):
    @qd.kernel
    def inc(a: NDArray[qd.f32, 1]):
        for i in range(a.shape[0]):
            a[i] += 1

    old = qd.ndarray(qd.f32, 4)
    inc(old)
    qd.init(arch=getattr(qd, arch))
    inc(qd.ndarray(qd.f32, 4))
    with pytest.raises(qd.QuadrantsRuntimeError, match="before the last qd.reset"):
        inc(old)


def test_dispatcher_guards():
    @qd.kernel
    def k(a: qd.types.ndarray(), t: qd.template()):
        pass

    a = np.zeros(3, np.float32)
    k(a, 1)
    ((compiled, _),) = k._compiled.values()
    # Arguments that are not what their kind letter says are not registered.
    assert k._dispatch_add(compiled, "nv", (object(), 1)) is False
    assert k._dispatch_add(compiled, "nv", (a, 1.5)) is False
    assert k._dispatch_add(compiled, "no", (a, (1, 2))) is False
    assert k._dispatch_add(lambda *args: None, "nv", (a, 2)) is False
    assert k._dispatch_add(compiled, "nv", (a, 1)) is False  # already covered
    with pytest.raises(ValueError):
        k._dispatch_add(compiled, "nz", (a, 2))
    with pytest.raises(ValueError):
        k._dispatch_add(compiled, "n", (a, 2))
    with pytest.raises(TypeError):
        k._dispatch_add(compiled, "nv")
    assert k._dispatch_size() == 1
    bare = _core.Dispatcher.__new__(_core.Dispatcher)
    with pytest.raises(TypeError, match="__init__"):
        bare(1)
    with pytest.raises(TypeError):
        _core.Dispatcher(1, 2)


def test_fast_path_keeps_reference_counts(slow_calls):
    @qd.kernel
    def k(
        a: qd.f32, x: qd.types.ndarray(), y: NDArray[qd.f32, 1], f: qd.template(), n: qd.template()
    ):
        for i in range(y.shape[0]):
            y[i] = a + x[i] + f[i] + n

    a, x, y = 1.5, np.ones(4, np.float32), qd.ndarray(qd.f32, 4)
    f, n = qd.field(qd.f32, 4), 10**6 + 7
    readonly = np.frombuffer(np.ones(4, np.float32).tobytes(), np.float32)
    k(a, x, y, f, n)
    with pytest.raises(ValueError, match="read-only"):  # registered; the launch fails
        k(a, readonly, y, f, n)
    ((compiled, _),) = k._compiled.values()
    objects = [a, x, y, y._qd_array, y.dtype, f, n, compiled, readonly]

    def launches():
        for _ in range(1000):
            k(a, x, y, f, n)
            with pytest.raises(ValueError, match="read-only"):
                k(a, readonly, y, f, n)
        gc.collect()  # tracebacks hold frames in cycles

    launches()
    before = [sys.getrefcount(o) for o in objects]
    del slow_calls[:]
    launches()
    assert slow_calls == []
    assert [sys.getrefcount(o) for o in objects] == before
