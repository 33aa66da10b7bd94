"""Spec 0.7 / 0.9: @qd.func inlining, argument passing, defaults and keywords, returns, recursion,
top-level loops inside funcs, kernels calling kernels, plain Python helpers."""

import warnings

import numpy as np
import pytest

import quadrants as qd

from .helpers import marker_line, rng

NDArray = qd.types.NDArray


@qd.func
def _square(x):
    return x * x


@qd.func
def _poly(x, a=1, b=2, c=3):
    return a * x * x + b * x + c


def test_func_inlined_in_parallel_loop():
    @qd.kernel
    def k(a: NDArray[qd.f64, 1], out: NDArray[qd.f64, 1]):
        for i in range(a.shape[0]):
            out[i] = _square(a[i]) + _poly(a[i])

    a = rng.standard_normal(10000)
    out = np.zeros_like(a)
    k(a, out)
    np.testing.assert_allclose(out, a * a + (a * a + 2 * a + 3), rtol=1e-15, atol=1e-15)


def test_scalar_by_value():
    @qd.func
    def bump(x):
        x += 10
        return x

    @qd.kernel
    def k(v: qd.i32) -> qd.i32:
        y = v
        z = bump(y)
        return y * 1000 + z

    assert k(3) == 3 * 1000 + 13


def test_scalar_by_value_annotated_is_cast():
    @qd.func
    def half(x: qd.i32):
        return x / 2

    @qd.kernel
    def k(v: qd.f32) -> qd.f32:
        return half(v)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert k(7.9) == 3.5


def test_constant_argument_of_annotated_param_has_the_type_semantics():
    # A Python int bound to an annotated parameter is a value of that type, as a runtime
    # argument would be: its arithmetic wraps instead of folding in Python's unbounded ints.
    @qd.func
    def shifted(p: qd.i32) -> qd.i32:
        return (p << 29) + (p * 2147483647)

    @qd.func
    def unsigned(p: qd.u32) -> qd.i64:
        return qd.cast(-p, qd.i64) + qd.cast(p > -1, qd.i64)

    @qd.kernel
    def k(n: qd.i32) -> qd.i32:
        return shifted(-5) - shifted(n)

    @qd.kernel
    def ku() -> qd.i64:
        return unsigned(1)

    wrapped = ((-5 << 29) + (-5 * 2147483647)) % 2**32
    assert k(0) == wrapped - 2**32 * (wrapped >= 2**31)
    assert ku() == 4294967295  # -1 as u32; and 1 > -1 is false in u32


def test_field_by_reference():
    f = qd.field(qd.i32, shape=16)

    @qd.func
    def fill(x: qd.template(), v):
        for i in range(16):
            x[i] = v + i

    @qd.kernel
    def k():
        fill(f, 100)

    k()
    assert list(f.to_numpy()) == [100 + i for i in range(16)]


def test_ndarray_by_reference():
    @qd.func
    def write(arr, i, v):
        arr[i] = v

    @qd.kernel
    def k(a: NDArray[qd.f32, 1]):
        for i in range(a.shape[0]):
            write(a, i, i * 0.5)

    a = np.zeros(1000, np.float32)
    k(a)
    np.testing.assert_array_equal(a, np.arange(1000, dtype=np.float32) * 0.5)



def test_ndarray_annotations_of_a_func():
    """`NDArray[dtype, ndim]` and `qd.types.ndarray(dtype=..., ndim=...)` annotate func parameters
    as they do kernel parameters."""

    @qd.func
    def pick(a: NDArray[qd.f32, 1], i: qd.i32) -> qd.f32:
        return a[i]

    @qd.func
    def pick2(b: qd.types.ndarray(dtype=qd.f32, ndim=2), i: qd.i32) -> qd.f32:
        return b[i, 1] + b.shape[1]

    @qd.kernel
    def k(a: NDArray[qd.f32, 1], b: NDArray[qd.f32, 2], out: NDArray[qd.f32, 1]):
        for i in range(out.shape[0]):
            out[i] = pick(a, i) * 10 + pick2(b, i)

    a = rng.standard_normal(64).astype(np.float32)
    b = rng.standard_normal((64, 3)).astype(np.float32)
    out = np.zeros(64, np.float32)
    k(a, b, out)
    # f32 arithmetic (contracted to fma or not): within a few ulp of the terms' magnitude
    a64, b64 = a.astype(np.float64), b[:, 1].astype(np.float64)
    scale = np.abs(a64) * 10 + np.abs(b64) + 3
    assert np.all(np.abs(out - (a64 * 10 + b64 + 3)) <= 4 * np.finfo(np.float32).eps * scale)


def test_template_param_binds_the_callers_variable():
    """A `qd.template()` parameter is the caller's variable itself: assigning to it, to its elements
    or members changes the caller's (Genesis's lane-buffer helpers write a local matrix this way);
    a plain parameter is a copy."""

    S = qd.types.struct(a=qd.f32)

    @qd.func
    def set_row(values: qd.template(), i_k: int, row):
        for j in qd.static(range(values.m)):
            values[i_k, j] = row[j]

    @qd.func
    def bump(x: qd.template(), s: qd.template()):
        x += 1
        x = x * 10
        s.a = 5.0

    @qd.func
    def bump_copy(x, v):
        x += 100
        v[0] = -1.0

    @qd.kernel
    def k(i: qd.i32, a: NDArray[qd.f32, 2], out: NDArray[qd.f32, 1]):
        m = qd.Matrix([[a[0, 0], a[0, 1]], [a[1, 0], a[1, 1]], [a[2, 0], a[2, 1]]])
        set_row(m, i, qd.Vector([-a[i, 1], -a[i, 0]]))
        y = i
        s = S(a=1.0)
        bump(y, s)
        v = qd.Vector([2.0, 3.0])
        bump_copy(y, v)
        for r in qd.static(range(3)):
            for c in qd.static(range(2)):
                out[2 * r + c] = m[r, c]
        out[6] = y
        out[7] = s.a
        out[8] = v[0]

    a = rng.standard_normal((3, 2)).astype(np.float32)
    for i in range(3):
        out = np.zeros(9, np.float32)
        k(i, a, out)
        expected = a.copy()
        expected[i] = [-a[i, 1], -a[i, 0]]
        np.testing.assert_array_equal(out[:6], expected.ravel())
        assert list(out[6:]) == [(i + 1) * 10, 5.0, 2.0]


def test_template_value_param():
    @qd.func
    def times(x, n: qd.template()):
        r = x
        for _ in qd.static(range(n - 1)):
            r = r * x
        return r

    @qd.kernel
    def k(v: qd.i32) -> qd.i32:
        return times(v, 3) + times(v, 2)

    assert k(5) == 125 + 25


def test_default_arguments():
    @qd.kernel
    def k(x: qd.i32) -> qd.i32:
        return _poly(x) * 1000000 + _poly(x, 2) * 1000 + _poly(x, 2, 0, 0)

    x = 4
    assert k(x) == (x * x + 2 * x + 3) * 1000000 + (2 * x * x + 2 * x + 3) * 1000 + 2 * x * x


def test_keyword_arguments():
    @qd.kernel
    def k(x: qd.i32) -> qd.i32:
        return _poly(x, c=0) * 1000 + _poly(b=0, x=x, a=0)

    x = 5
    assert k(x) == (x * x + 2 * x) * 1000 + 3


def test_nested_funcs():
    @qd.func
    def inner(x):
        return x + 1

    @qd.func
    def middle(x):
        return inner(x) * 2

    @qd.func
    def outer(x):
        return middle(x) + inner(x)

    @qd.kernel
    def k(x: qd.i32) -> qd.i32:
        return outer(x)

    assert k(10) == 22 + 11


def test_tuple_return():
    @qd.func
    def minmax(a, b):
        lo = a
        hi = b
        if a > b:
            lo = b
            hi = a
        return lo, hi

    @qd.kernel
    def k(a: NDArray[qd.i32, 1], b: NDArray[qd.i32, 1], lo: NDArray[qd.i32, 1], hi: NDArray[qd.i32, 1]):
        for i in range(a.shape[0]):
            l, h = minmax(a[i], b[i])
            lo[i] = l
            hi[i] = h

    a = rng.integers(-100, 100, 1000).astype(np.int32)
    b = rng.integers(-100, 100, 1000).astype(np.int32)
    lo = np.zeros_like(a)
    hi = np.zeros_like(a)
    k(a, b, lo, hi)
    np.testing.assert_array_equal(lo, np.minimum(a, b))
    np.testing.assert_array_equal(hi, np.maximum(a, b))


def test_func_no_return_value():
    f = qd.field(qd.i32, shape=())

    @qd.func
    def side(v):
        f[None] = v

    @qd.kernel
    def k(v: qd.i32):
        side(v)

    k(42)
    assert f[None] == 42


def test_return_annotation_casts():
    @qd.func
    def g(x) -> qd.i32:
        return x * 1.5

    @qd.kernel
    def k(x: qd.f32) -> qd.f32:
        return g(x)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert k(3.0) == 4.0


def test_return_in_static_if_is_allowed():
    @qd.func
    def g(x, flag: qd.template()):
        if qd.static(flag):
            return x + 1
        else:
            return x - 1

    @qd.kernel
    def k(x: qd.i32) -> qd.i32:
        return g(x, True) * 100 + g(x, False)

    assert k(5) == 600 + 4


def test_return_inside_runtime_if_is_syntax_error():
    @qd.func
    def g(x):
        if x > 0:
            return 1
        return 0

    @qd.kernel
    def k(x: qd.i32) -> qd.i32:
        return g(x)

    with pytest.raises(qd.QuadrantsSyntaxError):
        k(1)


def test_return_inside_runtime_for_is_syntax_error():
    @qd.func
    def g(x):
        for i in range(x):
            return i
        return 0

    @qd.kernel
    def k(x: qd.i32) -> qd.i32:
        return g(x)

    with pytest.raises(qd.QuadrantsSyntaxError):
        k(1)


def test_return_inside_runtime_while_is_syntax_error():
    @qd.func
    def g(x):
        i = 0
        while i < x:
            return i
        return 0

    @qd.kernel
    def k(x: qd.i32) -> qd.i32:
        return g(x)

    with pytest.raises(qd.QuadrantsSyntaxError):
        k(1)


def test_recursion_is_error():
    @qd.func
    def fact(n):
        r = 1
        if n > 1:
            r = n * fact(n - 1)
        return r

    @qd.kernel
    def k(n: qd.i32) -> qd.i32:
        return fact(n)

    with pytest.raises(qd.QuadrantsCompilationError):
        k(5)


def test_static_recursion_terminates():
    @qd.func
    def fact(n: qd.template()):
        r = 1
        if qd.static(n > 1):
            r = n * fact(n - 1)
        return r

    @qd.kernel
    def k() -> qd.i32:
        return fact(6)

    assert k() == 720


def test_top_level_for_in_func_is_parallel():
    """A loop at the top of a func called at kernel top level is a top-level parallel loop: the
    kernel-scope local `total` is then shared (an atomic reduction) and the result is exact."""

    @qd.func
    def accumulate(x, n):
        total = 0
        for i in range(n):
            total += x[i]
        return total

    @qd.func
    def fill(out):
        for i in range(out.shape[0]):
            out[i] = i

    @qd.kernel
    def k(x: NDArray[qd.i32, 1], out: NDArray[qd.i32, 1]) -> qd.i32:
        fill(out)
        return accumulate(x, x.shape[0])

    x = rng.integers(-1000, 1000, 1000000).astype(np.int32)
    out = np.zeros(1000000, np.int32)
    assert k(x, out) == int(x.astype(np.int64).sum())
    np.testing.assert_array_equal(out, np.arange(1000000))


def test_kernel_calling_kernel_is_syntax_error():
    @qd.kernel
    def inner() -> qd.i32:
        return 1

    @qd.kernel
    def outer() -> qd.i32:
        return inner()

    with pytest.raises(qd.QuadrantsSyntaxError, match="Kernels cannot call other kernels"):
        outer()


def test_func_called_from_python_scope_is_error():
    with pytest.raises(Exception):
        _square(3)


def test_plain_python_helper_runs_at_trace_time():
    calls = []

    def helper(n):
        calls.append(n)
        return n * 3

    @qd.kernel
    def k(x: qd.i32) -> qd.i32:
        return x + helper(7)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert k(1) == 22
        assert k(2) == 23
    assert calls == [7]  # traced once


def test_plain_python_helper_warns():
    def helper():
        return 5

    @qd.kernel
    def k() -> qd.i32:
        return helper()

    with pytest.warns(SyntaxWarning):
        assert k() == 5


def test_func_with_template_field_specialises():
    a = qd.field(qd.i32, shape=4)
    b = qd.field(qd.f32, shape=4)

    @qd.func
    def put(x: qd.template(), v):
        x[1] = v

    @qd.kernel
    def k():
        put(a, 3)
        put(b, 2.5)

    k()
    assert a[1] == 3 and b[1] == 2.5


def test_pyfunc_both_scopes():
    @qd.pyfunc
    def add3(x):
        return x + 3

    @qd.kernel
    def k(x: qd.i32) -> qd.i32:
        return add3(x)

    assert k(4) == 7
    assert add3(4) == 7


def test_func_local_names_do_not_leak():
    @qd.func
    def g(x):
        tmp = x * 2
        return tmp

    @qd.kernel
    def k(x: qd.i32) -> qd.i32:
        y = g(x)
        return tmp  # noqa: F821

    with pytest.raises(qd.QuadrantsNameError):
        k(1)


def test_func_same_name_as_caller_local():
    @qd.func
    def g(x):
        y = x + 1
        return y

    @qd.kernel
    def k(x: qd.i32) -> qd.i32:
        y = 100
        z = g(x)
        return y + z

    assert k(1) == 102



def test_func_with_return_type_and_no_return_is_syntax_error():
    @qd.func
    def f(a: qd.i32) -> qd.i32:
        b = a  # noqa: F841

    @qd.kernel
    def k() -> qd.i32:
        return f(1)  # call of f without return

    with pytest.raises(
        qd.QuadrantsSyntaxError, match="Function has a return type but does not have a return statement"
    ) as e:
        k()
    assert marker_line(__file__, "# call of f without return") in str(e.value)


def test_real_func_returning_a_value_needs_a_return_annotation():
    @qd.real_func
    def f(a: qd.i32):
        return a  # unannotated real_func return

    @qd.kernel
    def k() -> qd.i32:
        return f(1)

    with pytest.raises(qd.QuadrantsSyntaxError) as e:
        k()
    assert (
        "A function with a return value must be annotated with a return type, e.g. def func() -> qd.f32"
        in str(e.value)
    )
    assert marker_line(__file__, "# unannotated real_func return") in str(e.value)


def test_func_returning_none_annotation_needs_no_return():
    a = qd.field(qd.i32, shape=())

    @qd.func
    def f(x: qd.i32) -> None:
        a[None] = x

    @qd.kernel
    def k(x: qd.i32):
        f(x)

    x = int(rng.integers(-1000, 1000))
    k(x)
    assert a[None] == x


def test_real_func_early_return_inside_if_for_while():
    @qd.real_func
    def first_below(a: qd.types.ndarray(), i: qd.i32, t: qd.f32) -> qd.f32:
        for j in range(a.shape[1]):
            k = 1
            while k < 3:
                if a[i, j] * k < t:
                    return a[i, j] * k
                k += 1
        return 7.5

    @qd.real_func
    def sgn(x: qd.i32) -> qd.i32:
        if x > 0:
            return 1
        elif x < 0:
            return -1
        return 0

    @qd.kernel
    def k(a: qd.types.NDArray[qd.f32, 2], out: qd.types.NDArray[qd.f32, 1], x: qd.i32) -> qd.i32:
        for i in range(a.shape[0]):
            out[i] = first_below(a, i, -1.0)
        return sgn(x)

    a = rng.normal(size=(64, 5)).astype(np.float32)
    out = np.zeros(64, np.float32)
    x = int(rng.integers(-3, 4))
    assert k(a, out, x) == int(np.sign(x))
    expect = []
    for row in a:
        found = 7.5
        for v in row:
            hits = [v * m for m in (1, 2) if v * m < -1.0]
            if hits:
                found = hits[0]
                break
        expect.append(found)
    np.testing.assert_allclose(out, np.array(expect, np.float32), rtol=1e-6)


def test_real_func_parameters_are_immutable():
    @qd.real_func
    def scalar(s: qd.i32) -> qd.i32:
        s = s + 1  # assigns a scalar parameter
        return s

    @qd.real_func
    def vector(p: qd.types.vector(2, qd.f32)) -> qd.f32:
        p += 1.0  # augments a vector parameter
        return p[0]

    @qd.real_func
    def template(t: qd.template(), n: qd.i32) -> qd.i32:
        t = 2  # assigns a template parameter
        return t + n

    @qd.kernel
    def k1() -> qd.i32:
        return scalar(1)

    @qd.kernel
    def k2() -> qd.f32:
        return vector(qd.Vector([1.0, 2.0]))

    @qd.kernel
    def k3() -> qd.i32:
        return template(1, 2)

    for k, name, what in [(k1, "s", "assigns a scalar"), (k2, "p", "augments a vector"),
                          (k3, "t", "assigns a template")]:
        marker = f"# {what} parameter"
        with pytest.raises(qd.QuadrantsSyntaxError) as e:
            k()
        assert (
            f'Kernel argument "{name}" is immutable in the kernel. If you want to change its '
            "value, please create a new variable."
        ) in str(e.value)
        assert marker_line(__file__, marker) in str(e.value)


_Found = qd.types.struct(j=qd.i32, v=qd.f32)


def test_real_func_early_return_of_vector_matrix_struct_tuple():
    @qd.real_func
    def first_above(a: NDArray[qd.f32, 2], i: qd.i32, t: qd.f32) -> qd.types.vector(2, qd.f32):
        for j in range(a.shape[1]):
            if a[i, j] > t:
                return qd.Vector([j, a[i, j]])  # the int j converted to f32
        return qd.Vector([-1.0, 0.0])

    @qd.real_func
    def last_below(a: NDArray[qd.f32, 2], i: qd.i32, t: qd.f32) -> _Found:
        j = a.shape[1] - 1
        while j >= 0:
            if a[i, j] < t:
                return _Found(j=j, v=a[i, j])
            j -= 1
        return _Found(j=-1, v=0.0)

    @qd.real_func
    def diag_or_swap(x: qd.f32) -> qd.types.matrix(2, 2, qd.f32):
        if x > 0:
            return qd.Matrix([[x, 0], [0, x]])
        return qd.Matrix([[0, 1], [1, 0]])

    @qd.real_func
    def sign_and_abs(x: qd.f32) -> (qd.i32, qd.f32):
        if x < 0:
            return -1, -x
        return 1, x

    @qd.kernel
    def k(a: NDArray[qd.f32, 2], out: NDArray[qd.f32, 2]):
        for i in range(a.shape[0]):
            v = first_above(a, i, 1.0)
            s = last_below(a, i, -1.0)
            m = diag_or_swap(a[i, 0])
            g, b = sign_and_abs(a[i, 1])
            out[i, 0] = v[0]
            out[i, 1] = v[1]
            out[i, 2] = s.j
            out[i, 3] = s.v
            out[i, 4] = m[0, 0] * 10 + m[0, 1]
            out[i, 5] = g * b

    a = rng.normal(size=(64, 6)).astype(np.float32)
    out = np.zeros((64, 6), np.float32)
    k(a, out)
    for i, row in enumerate(a):
        above = [j for j in range(6) if row[j] > 1.0]
        below = [j for j in range(6) if row[j] < -1.0]
        v = (above[0], row[above[0]]) if above else (-1, 0.0)
        s = (below[-1], row[below[-1]]) if below else (-1, 0.0)
        m = row[0] * 10 if row[0] > 0 else 1.0
        np.testing.assert_allclose(out[i], [*v, *s, m, row[1]], rtol=1e-6)


def _two_param_func(real):
    if real:

        @qd.real_func
        def f(a: qd.i32, b: qd.i32) -> qd.i32:
            return a * 10 + b

    else:

        @qd.func
        def f(a, b):
            return a * 10 + b

    return f


@pytest.mark.parametrize("real", [False, True])
def test_func_argument_errors_in_reference_words(real):
    f = _two_param_func(real)

    @qd.kernel
    def missing(x: qd.i32) -> qd.i32:
        return f(x)  # <missing>

    @qd.kernel
    def unexpected(x: qd.i32) -> qd.i32:
        return f(x, c=2)  # <unexpected>

    @qd.kernel
    def twice(x: qd.i32) -> qd.i32:
        return f(x, a=2)  # <twice>

    @qd.kernel
    def too_many(x: qd.i32) -> qd.i32:
        return f(x, 2, 3)  # <too-many>

    for k, message, line in [
        (missing, "Missing argument 'b'.", "return f(x)  # <missing>"),
        (unexpected, "Unexpected argument 'c'.", "return f(x, c=2)  # <unexpected>"),
        (twice, "Multiple values for argument 'a'.", "return f(x, a=2)  # <twice>"),
        (too_many, "Too many arguments.", "return f(x, 2, 3)  # <too-many>"),
    ]:
        with pytest.raises(qd.QuadrantsSyntaxError) as e:
            k(1)
        assert message in str(e.value), str(e.value)
        assert line in str(e.value), str(e.value)


@pytest.mark.parametrize("real", [False, True])
def test_func_keyword_arguments_bind(real):
    f = _two_param_func(real)

    @qd.kernel
    def k(x: qd.i32, y: qd.i32) -> qd.i32:
        return f(b=x, a=y) + f(y, b=x) * 1000

    x, y = (int(v) for v in rng.integers(-9, 9, 2))
    assert k(x, y) == (y * 10 + x) * 1001


def _compiled_qir(kernel):
    for entry in kernel._compiled.values():
        for item in entry if isinstance(entry, tuple) else (entry,):
            if type(item).__name__ in ("CompiledKernel", "DeviceKernel"):
                return item.qir
    raise AssertionError("no compiled kernel")


@qd.func
def _fill_upto(out: qd.template(), n, v):
    for i in range(n):
        out[i] = v


@qd.func
def _fill_then_count(out: qd.template(), n):
    for i in range(out.shape[0]):
        out[i] = 7
    m = 0
    for i in range(n):
        m += 1
    out[0] = m


@qd.func
def _bump_then_fill(out: qd.template(), n):
    n += 2
    for i in range(n):
        out[i] = 1


def test_top_level_scalar_variables_are_not_copied(keep_qir):
    """A scalar variable passed to a func that never assigns its parameter is read where it
    lives: at the top level no serial task copies it between the loops."""
    @qd.kernel
    def k(out: NDArray[qd.i32, 1], out2: NDArray[qd.i32, 1], c: NDArray[qd.i32, 1]):
        n = c[0]
        v = c[1] * 2
        _fill_upto(out, n, v)
        _fill_upto(out2, n, v)

    out, out2 = np.zeros(8, np.int32), np.zeros(8, np.int32)
    k(out, out2, np.array([5, 4], np.int32))
    np.testing.assert_array_equal(out, [8, 8, 8, 8, 8, 0, 0, 0])
    np.testing.assert_array_equal(out2, out)
    tasks = [line.split()[1] for line in _compiled_qir(k).splitlines() if line.startswith("  task ")]
    assert tasks == ["serial", "range_for", "range_for"]


def test_argument_read_in_place_sees_no_later_change_of_an_element():
    """An element of an ndarray is copied when passed (the callee changes the ndarray before
    reading its parameter)."""
    @qd.kernel
    def k(out: NDArray[qd.i32, 1]):
        _fill_then_count(out, out[1])

    out = np.array([0, 3, 0, 0], np.int32)
    k(out)
    np.testing.assert_array_equal(out, [3, 7, 7, 7])


def test_assigned_parameter_is_a_copy():
    @qd.kernel
    def k(out: NDArray[qd.i32, 1], c: NDArray[qd.i32, 1]) -> qd.i32:
        n = c[0]
        _bump_then_fill(out, n)
        return n

    out = np.zeros(6, np.int32)
    assert k(out, np.array([2], np.int32)) == 2
    np.testing.assert_array_equal(out, [1, 1, 1, 1, 0, 0])


@qd.func
def _add_five(y: qd.template()):
    y = y + 5


@qd.func
def _bump_through_template(x):
    _add_five(x)
    return x


@qd.func
def _bump_through_atomic(x):
    qd.atomic_add(x, 3)
    return x


@qd.func
def _read_through_builtins(x):
    return qd.max(x, 0) + min(x, 100) + qd.cast(x, qd.i32)


def test_parameter_changed_through_a_call_is_a_copy():
    """A parameter the callee passes to a qd.template() parameter or an atomic is its own
    variable: the caller's variable keeps its value; passing it to builtins that only read it
    keeps the argument read in place."""
    @qd.kernel
    def k() -> qd.i32:
        v = 1
        r = _bump_through_template(v)
        s = _bump_through_atomic(v)
        t = _read_through_builtins(v)
        return v * 1000000 + r * 10000 + s * 100 + t

    assert k() == 1 * 1000000 + 6 * 10000 + 4 * 100 + 3
