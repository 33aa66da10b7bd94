"""Recursive @qd.real_func: a real_func that calls itself (directly or through others) is compiled
as a function called at run time, with scalar parameters and a scalar result."""

import numpy as np
import pytest

import quadrants as qd

from .helpers import rng

NDArray = qd.types.NDArray


def _line_of(marker):
    with open(__file__) as f:
        hits = [n for n, text in enumerate(f, 1) if marker in text and "_line_of(" not in text]
    assert len(hits) == 1, (marker, hits)
    return f"{__file__}:{hits[0]}"


def _fib(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


@qd.real_func
def fib(n: qd.i32) -> qd.i32:
    r = n
    if n >= 2:
        r = fib(n - 1) + fib(n - 2)
    return r


def test_fib():
    @qd.kernel
    def k(n: qd.i32) -> qd.i32:
        return fib(n)

    for n in [0, 1, 2, 10, 17]:
        assert k(n) == _fib(n)


@qd.real_func
def is_even(n: qd.i32) -> qd.i32:
    r = 1
    if n > 0:
        r = is_odd(n - 1)
    return r


@qd.real_func
def is_odd(n: qd.i32) -> qd.i32:
    r = 0
    if n > 0:
        r = is_even(n - 1)
    return r


def test_mutual_recursion():
    @qd.kernel
    def k(n: qd.i32) -> qd.i32:
        return is_even(n) * 10 + is_odd(n)

    for n in rng.integers(0, 200, 6).tolist():
        assert k(n) == (10 if n % 2 == 0 else 1)


def test_early_return_inside_if():
    @qd.real_func
    def fact(n: qd.i32) -> qd.f64:
        if n <= 1:
            return 1.0
        return n * fact(n - 1)

    @qd.kernel
    def k(n: qd.i32) -> qd.f64:
        return fact(n)

    assert k(1) == 1.0
    assert k(12) == float(np.prod(np.arange(1, 13, dtype=np.float64)))


def test_reads_a_global_field():
    g = qd.field(qd.f32, shape=16)

    @qd.real_func
    def prefix(n: qd.i32) -> qd.f32:
        r = 0.0
        if n >= 0:
            r = g[n] + prefix(n - 1)
        return r

    @qd.kernel
    def k(n: qd.i32) -> qd.f32:
        return prefix(n)

    a = rng.standard_normal(16).astype(np.float32)
    g.from_numpy(a)
    np.testing.assert_allclose(k(15), a.sum(dtype=np.float64), rtol=1e-5)


def test_writes_a_global_field_without_result():
    out = qd.field(qd.i32, shape=32)

    @qd.real_func
    def fill(n: qd.i32, v: qd.i32):
        if n >= 0:
            out[n] = v
            fill(n - 1, v * 2)

    @qd.kernel
    def k():
        fill(9, 1)

    k()
    expect = np.zeros(32, np.int32)
    expect[:10] = 2 ** np.arange(9, -1, -1)
    np.testing.assert_array_equal(out.to_numpy(), expect)


def test_deep_recursion():
    @qd.real_func
    def depth(n: qd.i32) -> qd.i32:
        r = 0
        if n > 0:
            r = depth(n - 1) + 1
        return r

    @qd.kernel
    def k(n: qd.i32) -> qd.i32:
        return depth(n)

    assert k(1000) == 1000


def test_recursion_in_parallel_loop():
    @qd.kernel
    def k(a: NDArray[qd.i32, 1], out: NDArray[qd.i32, 1]):
        for i in range(a.shape[0]):
            out[i] = fib(a[i])

    a = rng.integers(0, 20, 256).astype(np.int32)
    out = np.zeros_like(a)
    k(a, out)
    np.testing.assert_array_equal(out, [_fib(int(n)) for n in a])


def test_print_and_assert_inside_recursion(arch, capfd):
    qd.init(arch=getattr(qd, arch), debug=True)

    @qd.real_func
    def down(n: qd.i32) -> qd.i32:
        print("at", n)
        assert n >= 1, "reached zero"  # assert in recursion
        r = 0
        if n > 1:
            r = down(n - 1) + n
        return r

    @qd.kernel
    def k(n: qd.i32) -> qd.i32:
        return down(n)

    capfd.readouterr()
    assert k(3) == 5
    qd.sync()
    assert capfd.readouterr().out.split() == ["at", "3", "at", "2", "at", "1"]
    with pytest.raises(qd.QuadrantsAssertionError, match="reached zero"):
        k(0)


def test_arguments_converted_and_keywords():
    @qd.real_func
    def power(x: qd.f32, n: qd.i32 = 2) -> qd.f32:
        r = 1.0
        if n > 0:
            r = x * power(x, n=n - 1)
        return r

    @qd.kernel
    def k(x: qd.f32, n: qd.i32) -> qd.f32:
        return power(x, n) + power(x)

    x = float(rng.uniform(0.5, 1.5))
    np.testing.assert_allclose(k(x, 5), np.float32(x) ** 5 + np.float32(x) ** 2, rtol=1e-5)


def test_vector_and_matrix_parameters():
    @qd.real_func
    def walk(p: qd.types.vector(3, qd.f32), m: qd.types.matrix(2, 2, qd.f64), n: qd.i32) -> qd.f32:
        p[1] += 1.0  # a copy: the caller's vector is unchanged
        r = p.sum() + m[0, 1] * 2 + m[1, 0]
        if n > 0:
            r += walk(p * 0.5, m + 1, n - 1)
        return r

    @qd.kernel
    def k(x: qd.f32, y: qd.f32) -> qd.f32:
        v = qd.Vector([x, y, 3])
        return walk(v, qd.Matrix([[1, 2], [3, 4]]), 4) + v[1]

    def walk_np(p, m, n):
        p = p.copy()
        p[1] += 1
        r = np.float32(p.sum() + m[0, 1] * 2 + m[1, 0])
        if n > 0:
            r += walk_np((p * 0.5).astype(np.float32), m + 1, n - 1)
        return r

    x, y = rng.uniform(-2, 2, 2).astype(np.float32)
    v = np.array([x, y, 3], np.float32)
    np.testing.assert_allclose(k(x, y), walk_np(v, np.array([[1.0, 2], [3, 4]]), 4) + y, rtol=1e-5)


def test_template_parameter_is_refused():
    @qd.real_func
    def f(s: qd.template(), n: qd.i32) -> qd.i32:  # template parameter
        r = 0
        if n > 0:
            r = f(s, n - 1)
        return r

    @qd.kernel
    def k() -> qd.i32:
        return f(1, 3)

    with pytest.raises(qd.QuadrantsSyntaxError) as e:
        k()
    assert "recursive @qd.real_func f: the type of parameter 's' must be a scalar type" in str(e.value)
    assert _line_of("# template parameter") in str(e.value)


def test_vector_return_type_is_refused():
    @qd.real_func
    def f(n: qd.i32) -> qd.types.vector(2, qd.f32):  # vector result
        r = qd.Vector([1.0, 2.0])
        if n > 0:
            r = f(n - 1) * 2
        return r

    @qd.kernel
    def k() -> qd.f32:
        return f(3)[0]

    with pytest.raises(qd.QuadrantsSyntaxError) as e:
        k()
    assert "recursive @qd.real_func f: the return type must be a scalar type" in str(e.value)
    assert _line_of("# vector result") in str(e.value)
