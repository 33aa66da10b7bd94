"""Arguments that must never let a kernel touch memory outside the buffers it was given.

Every array a launch passes is checked against what the kernel was compiled for -- element type,
number of axes and the extents of a vector/matrix element -- on both launch paths (the C fast
path of quadrants._core.Dispatcher and the Python path), and by the compiled kernel itself when it
is called directly. Each test first calls with a good argument, so that the fast path has an
entry, then with a bad one, and checks that the bad call raises what the Python path raises and
that no byte outside the arguments changed."""

import numpy as np
import pytest
from qd_helpers import requires_compiler

import quadrants as qd
from quadrants import _kernel

pytestmark = requires_compiler

rng = np.random.default_rng()


@pytest.fixture(autouse=True)
def init(arch):
    qd.init(arch=getattr(qd, arch))
    yield
    qd.reset()


def raised(call):
    """The exception `call()` raises (None when it returns)."""
    try:
        call()
    except Exception as exc:  # noqa: BLE001 - the test compares what was raised
        return exc
    return None


def make_fill_mat3():
    @qd.kernel
    def fill(arr: qd.types.ndarray(dtype=qd.math.mat3, ndim=2)):
        for i, j in arr:
            for a in qd.static(range(3)):
                for b in qd.static(range(3)):
                    arr[i, j][a, b] = 1.0

    return fill


def make_fill_vec3():
    @qd.kernel
    def fill(arr: qd.types.ndarray(dtype=qd.math.vec3, ndim=1)):
        for i in arr:
            arr[i] = qd.math.vec3(1.0, 2.0, 3.0)

    return fill


def test_matrix_elements_of_the_wrong_shape_are_refused_after_a_good_call():
    fill = make_fill_mat3()
    good = np.zeros((2, 2, 3, 3), np.float32)
    fill(good)
    fill(good)  # now launched from the fast path's table
    np.testing.assert_array_equal(good, np.ones_like(good))

    base = rng.standard_normal(40).astype(np.float32)
    before = base.copy()
    bad = base[:24].reshape(2, 2, 2, 3)  # elements of shape (2, 3)
    fast = raised(lambda: fill(bad))
    slow = raised(lambda: _kernel._launch_fallback(fill, bad))
    assert isinstance(fast, ValueError) and type(fast) is type(slow)
    assert str(fast) == str(slow)
    assert "(3, 3)" in str(fast)
    np.testing.assert_array_equal(base, before)


def test_a_huge_last_axis_is_refused_not_written():
    fill = make_fill_mat3()
    fill(np.zeros((2, 2, 3, 3), np.float32))
    bad = np.zeros((1, 1, 1, 2**22), np.float32)
    with pytest.raises(ValueError, match="elements of shape"):
        fill(bad)
    assert not bad.any()


def test_vector_ndarray_of_the_wrong_width_is_refused_after_a_good_call():
    fill = make_fill_vec3()
    good = qd.ndarray(qd.f32, shape=(4, 3))
    fill(good)
    fill(good)
    np.testing.assert_array_equal(good.to_numpy(), np.tile([1.0, 2.0, 3.0], (4, 1)))

    bad = qd.ndarray(qd.f32, shape=(4, 2))
    bad.from_numpy(np.full((4, 2), 5.0, np.float32))
    fast = raised(lambda: fill(bad))
    slow = raised(lambda: _kernel._launch_fallback(fill, bad))
    assert fast is not None and type(fast) is type(slow) and str(fast) == str(slow)
    np.testing.assert_array_equal(bad.to_numpy(), np.full((4, 2), 5.0, np.float32))


def test_numpy_vector_array_of_the_wrong_width_is_refused_after_a_good_call():
    fill = make_fill_vec3()
    fill(np.zeros((5, 3), np.float32))
    fill(np.zeros((5, 3), np.float32))
    base = np.zeros(20, np.float32)
    with pytest.raises(ValueError, match=r"\(3,\)"):
        fill(base[:10].reshape(5, 2))
    assert not base.any()


def test_the_compiled_kernel_checks_element_axes_itself(arch):
    """The packer refuses an array whose element axes differ from the compiled ones, whichever
    path handed it over."""
    fill = make_fill_vec3()
    fill(np.zeros((3, 3), np.float32))
    (compiled, _pins), = fill._compiled.values()
    bad = np.zeros((3, 2), np.float32)
    with pytest.raises(ValueError, match="compiled for vector elements of 3 components"):
        compiled(bad if arch == "cpu" else _device_array(bad))
    assert not bad.any()


def _device_array(host):
    array = qd.ndarray(qd.f32, shape=host.shape)
    array.from_numpy(host)
    return array._qd_array


def test_unannotated_element_type_is_part_of_the_specialisation():
    @qd.kernel
    def total(arr: qd.types.ndarray()) -> qd.f32:
        s = 0.0
        for i in arr:
            s += arr[i].sum()
        return s

    v3 = qd.Vector.ndarray(3, qd.f32, shape=4)
    v3.from_numpy(np.ones((4, 3), np.float32))
    v2 = qd.Vector.ndarray(2, qd.f32, shape=4)
    v2.from_numpy(np.ones((4, 2), np.float32))
    for _ in range(3):
        assert total(v3) == pytest.approx(12.0)
        assert total(v2) == pytest.approx(8.0)


def test_reset_waits_for_launches_running_on_another_thread(arch):
    """qd.reset() while another thread is inside a launch (the GIL is released while a kernel
    runs): the launch finishes on the old runtime, and later calls on that thread either run on
    the new runtime or raise QuadrantsRuntimeError -- never execute freed code."""
    @qd.kernel
    def busy(a: qd.types.ndarray(dtype=qd.f32, ndim=1)):
        for i in a:
            x = a[i]
            for _ in range(500):
                x = x * 0.999 + 0.001
            a[i] = x

    a = np.zeros(4096, np.float32)
    assert _reset_while_calling(arch, lambda: busy(a), resets=15, pause=0.01) > 0


def _reset_while_calling(arch, call, resets, pause):
    """Calls `call()` in a loop on another thread while this thread runs `resets` rounds of
    qd.reset() / qd.init(), `pause` seconds apart, from the first call that succeeded. Returns how
    many calls succeeded; QuadrantsRuntimeError (a call that raced a reset) is expected, anything
    else a call raised is raised here."""
    import threading

    stop = threading.Event()
    succeeded = threading.Event()
    outcome = {"ran": 0, "error": None}

    def worker():
        while not stop.is_set():
            try:
                call()
                outcome["ran"] += 1
                succeeded.set()
            except qd.QuadrantsRuntimeError:
                pass
            except BaseException as exc:  # noqa: BLE001 - raised again on the test's thread
                outcome["error"] = exc
                succeeded.set()
                return

    thread = threading.Thread(target=worker)
    thread.start()
    try:
        assert succeeded.wait(120), "the worker never completed a call"
        for _ in range(resets):
            if outcome["error"] is not None:
                break
            stop.wait(pause)
            qd.reset()
            qd.init(arch=getattr(qd, arch), offline_cache=False)
    finally:
        stop.set()
        thread.join()
    assert not thread.is_alive()
    if outcome["error"] is not None:
        raise outcome["error"]
    return outcome["ran"]


# Every bad input of docs/reliability.md's table and the exception it gets (the table is written
# from this list).
def _kernel_ai():
    @qd.kernel
    def k(a: qd.types.ndarray(dtype=qd.f32, ndim=1), s: qd.i32):
        for i in a:
            a[i] += s

    k(np.zeros(4, np.float32), 1)  # registered with the fast path
    return k


def _read_only():
    array = np.zeros(4, np.float32)
    array.flags.writeable = False
    return array


BAD_CALLS = {
    "dtype": (lambda k: k(np.zeros(4), 1), ValueError, "dtype=f32"),
    "ndim": (lambda k: k(np.zeros((2, 2), np.float32), 1), ValueError, "ndim=1"),
    "0-d array": (lambda k: k(np.float32(1.0), 1), ValueError, "ndim=1"),
    "non-contiguous": (lambda k: k(np.zeros(8, np.float32)[::2], 1), ValueError, "contiguous"),
    "read-only": (lambda k: k(_read_only(), 1), ValueError, "read-only"),
    "object dtype": (lambda k: k(np.array([None] * 4), 1), ValueError, "object"),
    "None for an array": (lambda k: k(None, 1), qd.QuadrantsRuntimeTypeError,
                          "Invalid type for argument .*, got None"),
    "list for an array": (lambda k: k([1.0], 1), qd.QuadrantsRuntimeTypeError,
                          r"Invalid type for argument .*, got \[1.0\]"),
    "str for a scalar": (lambda k: k(np.zeros(4, np.float32), "x"), qd.QuadrantsRuntimeTypeError,
                         "cannot be converted"),
    "float for an int": (lambda k: k(np.zeros(4, np.float32), 1.5), qd.QuadrantsRuntimeTypeError,
                         "cannot be converted"),
    "missing argument": (lambda k: k(np.zeros(4, np.float32)), qd.QuadrantsSyntaxError,
                         "Missing argument 's'"),
    "too many arguments": (lambda k: k(np.zeros(4, np.float32), 1, 2), qd.QuadrantsSyntaxError,
                           "Too many arguments"),
    "unknown keyword": (lambda k: k(np.zeros(4, np.float32), t=1), qd.QuadrantsSyntaxError,
                        "Unexpected argument 't'"),
}


@pytest.mark.parametrize("case", list(BAD_CALLS))
def test_bad_arguments_raise_on_both_paths(case):
    call, exc_type, text = BAD_CALLS[case]
    k = _kernel_ai()
    for _ in range(2):  # fast path tried first after the registering call
        with pytest.raises(exc_type, match=text):
            call(k)


def test_objects_of_a_previous_runtime_are_refused(arch):
    f = qd.field(qd.f32, shape=4)
    nd = qd.ndarray(qd.f32, shape=4)

    @qd.kernel
    def touch(x: qd.template()):
        for i in x:
            x[i] += 1

    @qd.kernel
    def touch_nd(a: qd.types.ndarray(dtype=qd.f32, ndim=1)):
        for i in a:
            a[i] += 1

    touch(f)
    touch_nd(nd)
    qd.reset()
    qd.init(arch=getattr(qd, arch))
    for call in (lambda: touch(f), lambda: touch_nd(nd), f.to_numpy, nd.to_numpy):
        with pytest.raises((qd.QuadrantsRuntimeError, qd.QuadrantsCompilationError),
                           match="created before the last qd.reset"):
            call()


@pytest.mark.parametrize("dims", [(7,), (-1,)])
def test_host_indices_out_of_range_raise(dims):
    f = qd.field(qd.f32, shape=4)
    nd = qd.ndarray(qd.f32, shape=4)
    with pytest.raises(AssertionError, match="out of bounds"):
        f[dims]
    with pytest.raises(IndexError, match="out of bounds"):
        nd[dims]


def test_debug_mode_checks_kernel_indices(arch):
    qd.reset()
    qd.init(arch=getattr(qd, arch), debug=True)
    h = qd.field(qd.f32, shape=4)

    @qd.kernel
    def read_field(i: qd.i32) -> qd.f32:
        return h[i]

    @qd.kernel
    def read_array(a: qd.types.ndarray(dtype=qd.f32, ndim=1), i: qd.i32) -> qd.f32:
        return a[i]

    for i in (4, -1, 2**31 - 1):
        with pytest.raises(qd.QuadrantsAssertionError, match="Out of bound access"):
            read_field(i)
        with pytest.raises(qd.QuadrantsAssertionError, match="Out of bound access"):
            read_array(np.zeros(4, np.float32), i)


def test_an_ndarray_axis_past_2_31_is_refused_at_the_launch(arch):
    @qd.kernel
    def first(a: qd.types.ndarray(dtype=qd.u8, ndim=1)) -> qd.i32:
        return qd.i32(a[0])

    big = np.zeros(2**31 + 1, np.uint8)  # calloc'd: never touched, never copied
    for _ in range(2):
        with pytest.raises(ValueError, match="exceeds 2\\^31-1"):
            first(big)


def test_reset_waits_for_compiles_running_on_another_thread(arch):
    """The frontend runs Python code (name lookups, qd.static), where the interpreter may switch
    to a thread that calls qd.reset(): the reset waits for the compile, which then raises
    QuadrantsRuntimeError instead of returning code the reset freed."""
    @qd.kernel
    def fill(a: qd.types.ndarray(dtype=qd.f32, ndim=1), k: qd.template()):
        for i in a:
            a[i] = qd.static(k) + i

    a = np.zeros(8, np.float32)
    k = [0]

    def compile_and_run():
        k[0] += 1  # a new template value: a new compile every call
        fill(a, k[0])
        assert a[3] == k[0] + 3

    assert _reset_while_calling(arch, compile_and_run, resets=10, pause=0.005) > 0
