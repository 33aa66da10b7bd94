"""Recursive @qd.real_func: a real_func that calls itself (directly or through others) is compiled
as a function called at run time. Scalars, vectors, matrices and structs cross the call by value
(parameters and results), ndarrays by reference; template arguments are compile-time values, one
function per distinct set of them."""

import numpy as np
import pytest

import quadrants as qd

from .helpers import marker_line, rng

NDArray = qd.types.NDArray



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


def test_vector_early_return_inside_if():
    @qd.real_func
    def g(n: qd.i32, x: qd.f32) -> qd.types.vector(2, qd.f32):
        if n <= 0:
            return qd.Vector([x, 1])  # the int 1 converted to f32
        v = g(n - 1, x)
        return v * 2.0 + qd.Vector([0.0, n])

    @qd.kernel
    def k(x: NDArray[qd.f32, 1], m: NDArray[qd.i32, 1], out: NDArray[qd.f32, 2]):
        for i in range(x.shape[0]):
            v = g(m[i], x[i])
            out[i, 0] = v[0]
            out[i, 1] = v[1]

    def g_np(n, x):
        if n <= 0:
            return np.array([x, 1], np.float32)
        return g_np(n - 1, x) * np.float32(2) + np.array([0, n], np.float32)

    x = rng.uniform(-2, 2, 64).astype(np.float32)
    m = rng.integers(-1, 12, 64).astype(np.int32)
    out = np.zeros((64, 2), np.float32)
    k(x, m, out)
    np.testing.assert_allclose(out, [g_np(int(n), v) for n, v in zip(m, x)], rtol=1e-6)


def test_vector_early_return_from_the_kernel():
    @qd.real_func
    def g(n: qd.i32) -> qd.types.vector(2, qd.f32):
        if n <= 0:
            return qd.Vector([1.0, 2.0])
        v = g(n - 1)
        return v * 2.0

    @qd.kernel
    def k(n: qd.i32) -> qd.types.vector(2, qd.f32):
        return g(n)

    n = int(rng.integers(0, 20))
    np.testing.assert_array_equal(k(n), np.array([1.0, 2.0], np.float32) * 2.0**n)


def test_struct_matrix_and_tuple_early_returns_inside_for_and_while():
    @qd.real_func
    def search(a: NDArray[qd.f32, 1], lo: qd.i32, t: qd.f32) -> _State:
        for j in range(lo, lo + 4):
            if j >= a.shape[0]:
                return _State(a=-1.0, b=j, v=qd.Vector([0.0, 0.0]))
            if a[j] > t:
                return _State(a=a[j], b=j, v=qd.Vector([lo, t]))
        return search(a, lo + 4, t)

    @qd.real_func
    def steps(x: qd.f64, n: qd.i32) -> qd.types.matrix(2, 2, qd.f64):
        k = 0
        while k < n:
            if x * k > 3.0:
                return qd.Matrix([[x, k], [n, 1.0]], dt=qd.f64)
            k += 1
        r = qd.Matrix([[0.0, 0.0], [0.0, 0.0]], dt=qd.f64)
        if n > 0:
            r = steps(x * 2.0, n - 1) + 1.0
        return r

    @qd.real_func
    def count_down(n: qd.i32, acc: qd.f32) -> (qd.i32, qd.f32):
        if n <= 0:
            return 0, acc
        c, s = count_down(n - 1, acc * 0.5)
        return c + 1, s + n

    @qd.kernel
    def k(a: NDArray[qd.f32, 1], t: NDArray[qd.f32, 1], out: NDArray[qd.f64, 2]):
        for i in range(t.shape[0]):
            s = search(a, 0, t[i])
            m = steps(qd.cast(t[i], qd.f64), i % 5)
            c, acc = count_down(i % 7, t[i])
            out[i, 0] = s.a
            out[i, 1] = s.b
            out[i, 2] = s.v[0]
            out[i, 3] = s.v[1]
            for p in qd.static(range(4)):
                out[i, 4 + p] = m[p // 2, p % 2]
            out[i, 8] = c
            out[i, 9] = acc

    def search_py(a, lo, t):
        for j in range(lo, lo + 4):
            if j >= len(a):
                return [-1.0, j, 0.0, 0.0]
            if a[j] > t:
                return [a[j], j, lo, t]
        return search_py(a, lo + 4, t)

    def steps_py(x, n):
        for k in range(n):
            if x * k > 3.0:
                return [x, k, n, 1.0]
        if n > 0:
            return [v + 1.0 for v in steps_py(x * 2.0, n - 1)]
        return [0.0] * 4

    def count_down_py(n, acc):
        if n <= 0:
            return [0, acc]
        c, s = count_down_py(n - 1, np.float32(acc * np.float32(0.5)))
        return [c + 1, np.float32(s + np.float32(n))]

    a = rng.uniform(0, 1, 37).astype(np.float32)
    t = rng.uniform(0.5, 1.2, 48).astype(np.float32)
    out = np.zeros((48, 10), np.float64)
    k(a, t, out)
    for i in range(48):
        expect = search_py(a, 0, t[i]) + steps_py(float(t[i]), i % 5) + count_down_py(i % 7, t[i])
        np.testing.assert_allclose(out[i], expect, rtol=1e-6)


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


def test_template_field_parameter():
    n_cells = int(rng.integers(6, 20))
    f_ = qd.field(qd.f32, shape=n_cells)

    @qd.real_func
    def f(s: qd.template(), n: qd.i32) -> qd.i32:
        r = 0
        if n > 0:
            r = f(s, n - 1) + 1
            s[n] = r * 1.5
        return r

    @qd.kernel
    def k(n: qd.i32) -> qd.i32:
        return f(f_, n)

    n = int(rng.integers(1, n_cells))
    assert k(n) == n
    expect = np.zeros(n_cells, np.float32)
    expect[1 : n + 1] = np.arange(1, n + 1) * 1.5
    np.testing.assert_array_equal(f_.to_numpy(), expect)


def test_template_python_values_make_one_instance_each():
    @qd.real_func
    def h(c: qd.template(), n: qd.i32, scale: qd.template() = 1.0) -> qd.f32:
        r = c * scale
        if n > 0:
            r = h(c, n - 1, scale) + c * scale
        if qd.static(isinstance(c, int) and c > 2):  # a compile-time branch per instance
            r += 0.25
        return r

    @qd.kernel
    def k(n: qd.i32, m: qd.i32) -> qd.f32:
        return h(5, n) * 100 + h(2, m) + h(2, m, scale=0.5) * 1000 + h(qd.Vector([1, 2])[1], n)

    def h_py(c, n, scale=1.0):
        return c * scale * (n + 1) + (0.25 * (n + 1) if c > 2 else 0)

    n, m = (int(v) for v in rng.integers(0, 9, 2))
    expect = h_py(5, n) * 100 + h_py(2, m) + h_py(2, m, 0.5) * 1000 + 2 * (n + 1)
    np.testing.assert_allclose(k(n, m), expect, rtol=1e-6)


def test_template_fields_change_at_inner_calls():
    a = qd.field(qd.i32, shape=16)
    b = qd.field(qd.i32, shape=16)

    @qd.real_func
    def swap(x: qd.template(), y: qd.template(), n: qd.i32) -> qd.i32:
        r = 0
        if n > 0:
            x[n] = n
            r = swap(y, x, n - 1) + 1  # the fields change places: a second instance
        return r

    @qd.real_func
    def hand_on(x: qd.template(), n: qd.i32) -> qd.i32:
        r = 0
        if n > 0:
            x[n] += 100
            r = hand_on(b, n - 1) + 1  # the first instance calls the one of field b
        return r

    @qd.kernel
    def k(n: qd.i32, m: qd.i32) -> qd.i32:
        return swap(a, b, n) * 100 + hand_on(a, m)

    n, m = (int(v) for v in rng.integers(1, 16, 2))
    assert k(n, m) == n * 100 + m
    ea, eb = np.zeros(16, np.int32), np.zeros(16, np.int32)
    for i in range(n, 0, -1):
        (ea if (n - i) % 2 == 0 else eb)[i] = i
    ea[m] += 100
    eb[1:m] += 100
    np.testing.assert_array_equal(a.to_numpy(), ea)
    np.testing.assert_array_equal(b.to_numpy(), eb)


def test_template_counting_down_at_compile_time():
    @qd.real_func
    def chain(c: qd.template(), n: qd.i32) -> qd.i32:
        r = c * 100 + n
        if qd.static(c > 0):
            if n > 0:
                r = chain(c - 1, n - 1) * 2 + chain(c, n - 1)
        return r

    @qd.kernel
    def k(n: NDArray[qd.i32, 1], out: NDArray[qd.i32, 1]):
        for i in range(n.shape[0]):
            out[i] = chain(3, n[i])

    def chain_py(c, n):
        r = c * 100 + n
        if c > 0 and n > 0:
            r = chain_py(c - 1, n - 1) * 2 + chain_py(c, n - 1)
        return r

    n = rng.integers(0, 10, 32).astype(np.int32)
    out = np.zeros_like(n)
    k(n, out)
    np.testing.assert_array_equal(out, [chain_py(3, int(v)) for v in n])


def test_template_ndarray_parameter():
    @qd.real_func
    def total(a: qd.template(), n: qd.i32) -> qd.f32:
        r = 0.0
        if n >= 0:
            r = total(a, n - 1) + a[n]
        return r

    @qd.kernel
    def k(x: NDArray[qd.f32, 1]) -> qd.f32:
        return total(x, x.shape[0] - 1)

    x = rng.standard_normal(23).astype(np.float32)
    np.testing.assert_allclose(k(x), x.sum(dtype=np.float64), rtol=1e-5, atol=1e-5)


def test_template_argument_known_only_at_run_time_is_refused():
    @qd.real_func
    def f(s: qd.template(), n: qd.i32) -> qd.i32:
        r = s
        if n > 0:
            r = f(s, n - 1) + 1  # runtime template argument
        return r

    @qd.kernel
    def k(x: qd.i32) -> qd.i32:
        return f(x, 4)

    with pytest.raises(qd.QuadrantsSyntaxError) as e:
        k(3)
    assert (
        "recursive @qd.real_func f: the argument of template parameter 's' must be known at "
        "compile time (a Python value, a field or an ndarray), not a runtime value"
    ) in str(e.value)
    assert marker_line(__file__, "# runtime template argument") in str(e.value)


def test_template_argument_changing_at_every_call_is_refused():
    @qd.real_func
    def h(c: qd.template(), n: qd.i32) -> qd.i32:
        r = c
        if n > 0:
            r = h(c + 1, n - 1)  # a new instance per call
        return r

    @qd.kernel
    def k() -> qd.i32:
        return h(1, 3)

    with pytest.raises(qd.QuadrantsSyntaxError) as e:
        k()
    assert "recursive @qd.real_func h: more than 100 instances lowered one inside another" in str(
        e.value
    )
    assert marker_line(__file__, "# a new instance per call") in str(e.value)


def test_template_parameter_is_immutable_inside_recursion():
    @qd.real_func
    def f(s: qd.template(), n: qd.i32) -> qd.i32:
        r = 0
        if n > 0:
            r = f(s, n - 1)
        if n == 1:
            s = 5  # assigned inside the recursive function
        return r

    @qd.kernel
    def k() -> qd.i32:
        return f(2, 3)

    with pytest.raises(qd.QuadrantsSyntaxError) as e:
        k()
    assert 'Kernel argument "s" is immutable in the kernel' in str(e.value)
    assert marker_line(__file__, "# assigned inside the recursive function") in str(e.value)


def test_vector_result():
    @qd.real_func
    def f(n: qd.i32, x: qd.f32) -> qd.types.vector(3, qd.f32):
        r = qd.Vector([x, 2.0 * x, 3.0])
        if n > 0:
            r = f(n - 1, x) * 0.5 + qd.Vector([1.0, 0.0, n])
        return r

    @qd.kernel
    def k(a: NDArray[qd.f32, 1], m: NDArray[qd.i32, 1], out: NDArray[qd.f32, 2]):
        for i in range(a.shape[0]):
            v = f(m[i], a[i])
            for j in qd.static(range(3)):
                out[i, j] = v[j]

    def f_np(n, x):
        r = np.array([x, 2 * x, 3], np.float32)
        if n > 0:
            r = f_np(n - 1, x) * np.float32(0.5) + np.array([1, 0, n], np.float32)
        return r

    a = rng.uniform(-2, 2, 64).astype(np.float32)
    m = rng.integers(0, 12, 64).astype(np.int32)
    out = np.zeros((64, 3), np.float32)
    k(a, m, out)
    np.testing.assert_allclose(out, [f_np(int(n), x) for n, x in zip(m, a)], rtol=1e-5)


def test_matrix_result_and_kernel_return():
    @qd.real_func
    def power(m: qd.types.matrix(2, 2, qd.f64), n: qd.i32) -> qd.types.matrix(2, 2, qd.f64):
        r = qd.Matrix([[1.0, 0.0], [0.0, 1.0]], dt=qd.f64)
        if n > 0:
            r = power(m, n - 1) @ m
        return r

    @qd.kernel
    def k(a: qd.f64, b: qd.f64, n: qd.i32) -> qd.types.matrix(2, 2, qd.f64):
        return power(qd.Matrix([[a, b], [b, 0.5]]), n)

    a, b = rng.uniform(-1, 1, 2)
    n = int(rng.integers(3, 12))
    expect = np.linalg.matrix_power(np.array([[a, b], [b, 0.5]]), n)
    np.testing.assert_allclose(k(a, b, n), expect, rtol=1e-12)


def test_tuple_result():
    @qd.real_func
    def t(n: qd.i32) -> (qd.i32, qd.f32):
        a = n
        b = 1.0
        if n > 0:
            a, b = t(n - 1)
            a += n
            b *= 2.0
        return a, b

    @qd.kernel
    def k(n: qd.i32) -> qd.f32:
        a, b = t(n)
        return a * 100 + b

    n = int(rng.integers(1, 20))
    assert k(n) == n * (n + 1) // 2 * 100 + 2.0**n


@qd.dataclass
class _State:
    a: qd.f32
    b: qd.i32
    v: qd.types.vector(2, qd.f32)


def test_struct_parameter_and_result():
    @qd.real_func
    def f(s: _State, n: qd.i32) -> _State:
        r = s
        if n > 0:
            t = _State(a=s.a * 2.0, b=s.b + 1, v=s.v + 1.0)
            r = f(t, n - 1)
            r.a += 1.0
        s.b = -7  # a copy: the caller's struct is unchanged
        return r

    @qd.kernel
    def k(x: NDArray[qd.f32, 1], m: NDArray[qd.i32, 1], out: NDArray[qd.f32, 2]):
        for i in range(x.shape[0]):
            s = _State(a=x[i], b=i, v=qd.Vector([x[i], 0.5]))
            r = f(s, m[i])
            out[i, 0] = r.a
            out[i, 1] = r.b
            out[i, 2] = r.v[0]
            out[i, 3] = r.v[1]
            out[i, 4] = s.b

    def f_py(a, b, v, n):
        if n == 0:
            return a, b, v
        a2, b2, v2 = f_py(np.float32(a * 2), b + 1, (v + np.float32(1)).astype(np.float32), n - 1)
        return np.float32(a2 + 1), b2, v2

    x = rng.uniform(-2, 2, 48).astype(np.float32)
    m = rng.integers(0, 8, 48).astype(np.int32)
    out = np.zeros((48, 5), np.float32)
    k(x, m, out)
    for i in range(48):
        a, b, v = f_py(x[i], i, np.array([x[i], 0.5], np.float32), int(m[i]))
        np.testing.assert_allclose(out[i], [a, b, v[0], v[1], i], rtol=1e-5)


def test_struct_result_returned_by_the_kernel():
    @qd.real_func
    def h(x: qd.f32, n: qd.i32) -> _State:
        r = _State(a=x, b=n, v=qd.Vector([x, -x]))
        if n > 0:
            r = h(x + 1.0, n - 1)
            r.b += 10
        return r

    @qd.kernel
    def k(x: qd.f32, n: qd.i32) -> _State:
        return h(x, n)

    x = float(rng.uniform(-2, 2))
    n = int(rng.integers(1, 9))
    r = k(x, n)
    end = np.float32(x)
    for _ in range(n):  # n f32 additions of 1.0, each rounded
        end = np.float32(end + np.float32(1.0))
    assert r.a == end and r.b == 10 * n
    np.testing.assert_allclose(r.v, [end, -end])


def test_ndarray_parameters():
    @qd.real_func
    def total(a: qd.types.ndarray(), n: qd.i32) -> qd.f32:
        r = 0.0
        if n >= 0:
            r = a[n] + total(a, n - 1)
            a[n] = 1.0 * n  # by reference: the caller's array changes
        return r

    @qd.real_func
    def rows(b: NDArray[qd.f32, 2], n: qd.i32) -> qd.f32:
        r = 0.0
        if n >= 0:
            r = b[n, 1] + rows(b, n - 1) + b.shape[1]
        return r

    @qd.real_func
    def twice(b: qd.types.ndarray(dtype=qd.f32, ndim=2), n: qd.i32) -> qd.f32:
        r = 0.0
        if n >= 0:
            r = b[n, 0] * 2 + twice(b, n - 1)
        return r

    @qd.kernel
    def k(a: qd.types.ndarray(), b: NDArray[qd.f32, 2]) -> qd.f32:
        return total(a, a.shape[0] - 1) * 1000 + rows(b, b.shape[0] - 1) + twice(b, 3)

    a = rng.standard_normal(40).astype(np.float32)
    b = rng.standard_normal((9, 3)).astype(np.float32)
    a0 = a.copy()
    got = k(a, b)
    expect = a0.sum(dtype=np.float64) * 1000 + b[:, 1].sum() + 3 * 9 + 2 * b[:4, 0].sum()
    np.testing.assert_allclose(got, expect, rtol=1e-4, atol=1e-3)
    np.testing.assert_array_equal(a, np.arange(40, dtype=np.float32))


def test_ndarrays_of_two_types():
    @qd.real_func
    def total(a: qd.types.ndarray(), n: qd.i32) -> qd.f64:
        r = qd.cast(0, qd.f64)
        if n >= 0:
            r = a[n] + total(a, n - 1)
        return r

    @qd.kernel
    def k(x: NDArray[qd.f32, 1], y: NDArray[qd.i32, 1], z: NDArray[qd.f32, 1]) -> qd.f64:
        return total(x, x.shape[0] - 1) + total(y, y.shape[0] - 1) * 10 + total(z, 2) * 1000

    x = rng.standard_normal(30).astype(np.float32)
    y = rng.integers(-50, 50, 20).astype(np.int32)
    z = rng.standard_normal(5).astype(np.float32)
    expect = x.astype(np.float64).sum() + y.sum() * 10 + z[:3].astype(np.float64).sum() * 1000
    np.testing.assert_allclose(k(x, y, z), expect, rtol=1e-9)
