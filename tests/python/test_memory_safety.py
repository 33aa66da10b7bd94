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
    import threading

    stop = threading.Event()
    started = threading.Event()
    outcomes = {"ran": 0, "errors": set()}

    def worker():
        @qd.kernel
        def busy(a: qd.types.ndarray(dtype=qd.f32, ndim=1)):
            for i in a:
                x = a[i]
                for _ in range(500):
                    x = x * 0.999 + 0.001
                a[i] = x

        a = np.zeros(4096, np.float32)
        while not stop.is_set():
            try:
                busy(a)
                outcomes["ran"] += 1
                started.set()
            except qd.QuadrantsRuntimeError as exc:
                outcomes["errors"].add(str(exc).strip().splitlines()[0][:40])

    thread = threading.Thread(target=worker)
    thread.start()
    try:
        assert started.wait(120), "the worker never launched"
        for _ in range(15):
            stop.wait(0.01)
            qd.reset()
            qd.init(arch=getattr(qd, arch), offline_cache=False)
    finally:
        stop.set()
        thread.join()
    assert outcomes["ran"] > 0 and thread.is_alive() is False
