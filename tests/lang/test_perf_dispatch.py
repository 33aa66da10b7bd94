"""qd.perf_dispatch: registration checks, compatibility filtering, choice of the fastest implementation per
geometry, re-measuring, and QD_PERFDISPATCH_FORCE."""

import time

import numpy as np
import pytest

import quadrants as qd

from .helpers import rng

NDArray = qd.types.NDArray


def _dispatcher(calls, delays, **options):
    """A prototype f(x) with Python implementations named after `delays` (seconds each sleeps)."""
    options.setdefault("get_geometry_hash", lambda x: 0)

    @qd.perf_dispatch(**options)
    def f(x): ...

    def make(name, delay):
        def impl(x):
            calls.append(name)
            time.sleep(delay)
            return (name, x)

        impl.__name__ = name
        return impl

    for name, delay in delays.items():
        f.register(make(name, delay))
    return f


def test_kernel_implementations_give_the_same_results():
    @qd.perf_dispatch(get_geometry_hash=lambda a, out: a.shape)
    def scale(a: NDArray[qd.f32, 1], out: NDArray[qd.f32, 1]): ...

    @scale.register
    @qd.kernel
    def scale_parallel(a: NDArray[qd.f32, 1], out: NDArray[qd.f32, 1]):
        for i in range(a.shape[0]):
            out[i] = a[i] * 3.0

    @scale.register
    @qd.kernel
    def scale_serial(a: NDArray[qd.f32, 1], out: NDArray[qd.f32, 1]):
        qd.loop_config(serialize=True)
        for i in range(a.shape[0]):
            out[i] = 3.0 * a[i]

    for _ in range(6):
        a = rng.standard_normal(int(rng.integers(1, 100))).astype(np.float32)
        out = np.zeros_like(a)
        scale(a, out)
        np.testing.assert_allclose(out, 3 * a, rtol=1e-6)


def test_fastest_is_chosen_after_warmup_and_timed_calls():
    calls = []
    f = _dispatcher(calls, {"slow": 0.02, "fast": 0.0}, first_warmup=1, active=2)
    for i in range(6):  # 2 x (1 warm-up + 2 timed)
        assert f(i)[1] == i
    assert sorted(calls) == ["fast"] * 3 + ["slow"] * 3
    calls.clear()
    for i in range(10):
        assert f(i) == ("fast", i)
    assert calls == ["fast"] * 10


def test_geometries_are_measured_separately():
    calls = []
    f = _dispatcher(calls, {"a": 0.0, "b": 0.0}, get_geometry_hash=lambda x: x % 2, first_warmup=0)
    f(0)
    f(0)  # geometry 0 is measured: a and b once each
    assert sorted(calls) == ["a", "b"]
    calls.clear()
    f(1)
    f(1)  # geometry 1 starts its own measurement
    assert sorted(calls) == ["a", "b"]


def test_is_compatible_filters_implementations():
    calls = []

    @qd.perf_dispatch(get_geometry_hash=lambda n: n)
    def f(n): ...

    @f.register(is_compatible=lambda n: n < 10)
    def small(n):
        calls.append("small")
        return n

    @f.register(is_compatible=lambda n: n >= 10)
    def large(n):
        calls.append("large")
        return -n

    assert [f(3), f(30), f(4), f(40)] == [3, -30, 4, -40]
    assert calls == ["small", "large", "small", "large"]


def test_the_same_arguments_skip_the_geometry_when_one_implementation_fits():
    # As in the reference: with one compatible implementation, a call with the very same argument
    # objects runs it without asking get_geometry_hash (costly for large argument structures).
    asked = []

    def geometry(data, scale=1.0):
        asked.append(1)
        return len(data)

    @qd.perf_dispatch(get_geometry_hash=geometry)
    def f(data, scale=1.0): ...

    @f.register(is_compatible=lambda data, scale=1.0: len(data) < 100)
    def small(data, scale=1.0):
        return sum(data) * scale

    @f.register(is_compatible=lambda data, scale=1.0: len(data) >= 100)
    def large(data, scale=1.0):
        return -1.0

    data = tuple(rng.integers(0, 10, 5).tolist())
    assert f(data) == sum(data) and len(asked) == 1
    assert f(data) == sum(data) and len(asked) == 1  # the same object: no geometry asked
    assert f(data, scale=2.0) == 2 * sum(data) and len(asked) == 2  # a new keyword
    assert f(data, scale=2.0) == 2 * sum(data) and len(asked) == 2
    other = tuple(range(200))
    assert f(other) == -1.0 and len(asked) == 3  # other objects: measured as before
    assert f(tuple(data)) == sum(data) and len(asked) >= 3


def test_no_compatible_implementation():
    @qd.perf_dispatch(get_geometry_hash=lambda n: n)
    def f(n): ...

    f.register(lambda n: n, is_compatible=lambda n: False)
    with pytest.raises(qd.QuadrantsRuntimeError, match="No suitable functions"):
        f(1)


def test_register_checks_parameters():
    @qd.perf_dispatch(get_geometry_hash=lambda a, b: 0)
    def f(a, b): ...

    with pytest.raises(qd.QuadrantsSyntaxError, match="not in perf_dispatch function prototype"):

        @f.register
        def wrong_name(a, c): ...

    with pytest.raises(qd.QuadrantsSyntaxError, match="doesn't match number of parameters"):

        @f.register
        def too_few(a): ...


def test_remeasures_after_count():
    calls = []
    f = _dispatcher(calls, {"a": 0.0, "b": 0.0}, first_warmup=0, warmup=1, repeat_after_count=3)
    f(0)
    f(0)  # measured; one chosen
    calls.clear()
    f(0)
    f(0)  # the chosen one, twice
    assert len(set(calls)) == 1
    calls.clear()
    for _ in range(4):  # third call re-measures: 1 warm-up + 1 timed call each
        f(0)
    assert sorted(calls) == ["a", "a", "b", "b"]


def test_remeasures_after_seconds():
    calls = []
    f = _dispatcher(calls, {"a": 0.0, "b": 0.0}, first_warmup=0, repeat_after_seconds=0.05)
    f(0)
    f(0)
    calls.clear()
    f(0)
    time.sleep(0.06)
    f(0)
    f(0)
    assert sorted(calls[1:]) == ["a", "b"]


def test_force_by_environment(monkeypatch, capsys):
    monkeypatch.setenv("QD_PERFDISPATCH_FORCE", "f:b, other:x")
    calls = []
    f = _dispatcher(calls, {"a": 0.0, "b": 0.02})
    for i in range(5):
        assert f(i) == ("b", i)
    assert calls == ["b"] * 5
    assert "forced to 'b'" in capsys.readouterr().out


def test_force_of_unknown_implementation_falls_back(monkeypatch, capsys):
    monkeypatch.setenv("QD_PERFDISPATCH_FORCE", "f:missing")
    calls = []
    f = _dispatcher(calls, {"a": 0.0})
    assert f(1) == ("a", 1)
    assert "no such implementation" in capsys.readouterr().out
