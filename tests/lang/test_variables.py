"""Spec 0.5 / 0.10: declaration by first assignment, implicit conversion, scoping, immutable kernel
arguments, unpacking, compile-time containers, walrus, captured globals, qd.static."""

import warnings

import numpy as np
import pytest

import quadrants as qd

from .helpers import rng

NDArray = qd.types.NDArray


# --- declaration and conversion ---


def test_declared_type_is_rhs_type():
    @qd.kernel
    def k(out: NDArray[qd.f64, 1]):
        x = 1  # i32
        x = 2.75  # converted to i32 -> 2
        out[0] = x
        y = 1.0  # f32
        y = 16777217  # converted to f32 -> 16777216
        out[1] = y

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = np.zeros(2)
        k(out)
    assert list(out) == [2.0, 16777216.0]


def test_literal_assigned_to_narrow_var_is_i32_then_converted():
    """`z = 300` on a u8 variable: the literal is an i32 (in range), converted to u8 -> 44."""

    @qd.kernel
    def k() -> qd.i32:
        z = qd.u8(250)
        z = 300
        return z

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert k() == 44


def test_narrowing_assign_warns():
    @qd.kernel
    def k(v: qd.f32) -> qd.i32:
        x = 1
        x = v
        return x

    with pytest.warns(UserWarning, match=r"Assign may lose precision: i32 <- f32"):
        r = k(-2.9)
    assert r == -2


def test_narrowing_int_assign_warns():
    @qd.kernel
    def k(v: qd.i64) -> qd.i64:
        x = qd.i16(0)
        x = v
        return x

    with pytest.warns(UserWarning, match=r"may lose precision: i16 <- i64"):
        r = k(70000)
    assert r == 70000 - 65536


def test_widening_assign_does_not_warn():
    @qd.kernel
    def k(v: qd.i32) -> qd.f64:
        x = qd.f64(0.0)
        x = qd.f32(1.5)
        y = qd.i64(0)
        y = v
        return x + y

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert k(5) == 6.5


def test_store_into_field_converts():
    f = qd.field(qd.i32, shape=4)

    @qd.kernel
    def k(v: qd.f32):
        f[0] = v
        f[1] = -v
        f[2] = v * 3

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        k(1.5)
    assert [f[0], f[1], f[2]] == [1, -1, 4]


def test_annotated_assignment():
    @qd.kernel
    def k(out: NDArray[qd.f64, 1]):
        x: qd.f32 = 1
        x += 0.25
        out[0] = x
        y: qd.i64 = 2147483647
        y += 1
        out[1] = y
        z: qd.f16 = 0.1
        out[2] = z
        w: qd.u8 = 255
        w += 1
        out[3] = w

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = np.zeros(4)
        k(out)
    assert out[0] == 1.25
    assert out[1] == 2147483648.0
    assert out[2] == float(np.float16(0.1))
    assert out[3] == 0.0


def test_reannotation_with_other_type_is_syntax_error():
    @qd.kernel
    def k() -> qd.i32:
        x: qd.i32 = 1
        x: qd.f32 = 2.0
        return 0

    with pytest.raises(qd.QuadrantsSyntaxError):
        k()


def test_augmented_assign_on_local_keeps_type():
    @qd.kernel
    def k(v: qd.f32) -> qd.i32:
        x = 10
        x += v
        x *= 3
        x -= 1
        x //= 2
        return x

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert k(2.5) == ((10 + 2) * 3 - 1) // 2


# --- scoping ---


def test_inner_block_variable_not_visible_after_if():
    @qd.kernel
    def k(c: qd.i32) -> qd.i32:
        if c > 0:
            y = 1
        return y

    with pytest.raises(qd.QuadrantsNameError, match='"y" is not defined'):
        k(1)


def test_inner_block_variable_not_visible_after_for():
    @qd.kernel
    def k(out: NDArray[qd.i32, 1]):
        for i in range(3):
            t = i
        out[0] = t

    with pytest.raises(qd.QuadrantsNameError):
        k(np.zeros(1, np.int32))


def test_inner_block_variable_not_visible_after_while():
    @qd.kernel
    def k() -> qd.i32:
        i = 0
        while i < 3:
            t = i
            i += 1
        return t

    with pytest.raises(qd.QuadrantsNameError):
        k()


def test_outer_variable_updated_in_block():
    @qd.kernel
    def k(c: qd.i32) -> qd.i32:
        y = 0
        if c > 0:
            y = 1
        else:
            y = 2
        return y

    assert k(1) == 1
    assert k(-1) == 2


def test_loop_target_shadowing_outer_is_syntax_error():
    @qd.kernel
    def k() -> qd.i32:
        i = 5
        s = 0
        for i in range(3):
            s += i
        return s

    with pytest.raises(qd.QuadrantsSyntaxError):
        k()


# --- kernel arguments are immutable ---


def test_assign_to_kernel_arg_is_syntax_error():
    @qd.kernel
    def k(n: qd.i32) -> qd.i32:
        n = 3
        return n

    with pytest.raises(qd.QuadrantsSyntaxError):
        k(1)


def test_augassign_to_kernel_arg_is_syntax_error():
    @qd.kernel
    def k(n: qd.i32) -> qd.i32:
        n += 3
        return n

    with pytest.raises(qd.QuadrantsSyntaxError):
        k(1)


def test_copy_of_kernel_arg_is_mutable():
    @qd.kernel
    def k(n: qd.i32) -> qd.i32:
        m = n
        m += 3
        return m

    assert k(4) == 7


# --- unpacking ---


def test_tuple_unpack_and_swap():
    @qd.kernel
    def k(a: qd.i32, b: qd.f32, out: NDArray[qd.f64, 1]):
        x, y = a, b
        x, y = y, x  # x stays i32, y f32
        out[0] = x
        out[1] = y
        p, q, r = 1, 2, 3
        p, q, r = r, p, q
        out[2] = p * 100 + q * 10 + r

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = np.zeros(3)
        k(7, 2.5, out)
    assert list(out) == [2.0, 7.0, 312.0]


def test_swap_in_parallel_loop():
    @qd.kernel
    def k(a: NDArray[qd.i32, 1], b: NDArray[qd.i32, 1]):
        for i in range(a.shape[0]):
            a[i], b[i] = b[i], a[i]

    a = rng.integers(-100, 100, 1000).astype(np.int32)
    b = rng.integers(-100, 100, 1000).astype(np.int32)
    a0, b0 = a.copy(), b.copy()
    k(a, b)
    np.testing.assert_array_equal(a, b0)
    np.testing.assert_array_equal(b, a0)


def test_unpack_func_tuple_return():
    @qd.func
    def divmod_(a, b):
        return a // b, a % b

    @qd.kernel
    def k(a: qd.i32, b: qd.i32) -> qd.i32:
        q, r = divmod_(a, b)
        return q * 1000 + r

    assert k(-17, 5) == (-17 // 5) * 1000 + (-17 % 5)


# --- compile-time containers ---


def test_compile_time_list_and_tuple():
    @qd.kernel
    def k(a: qd.i32) -> qd.i32:
        lst = [a, a * 2, a * 3]
        tup = (10, 20, 30)
        s = 0
        for j in qd.static(range(3)):
            s += lst[j] * tup[j]
        return s + lst[-1] + len(lst)

    assert k(2) == 2 * 10 + 4 * 20 + 6 * 30 + 6 + 3


def test_compile_time_dict():
    @qd.kernel
    def k(a: qd.f32) -> qd.f32:
        d = {"x": a, "y": a * 2.0}
        return d["x"] + d["y"]

    assert k(1.5) == 4.5


DICT_DEFAULTS = {"a": 5, "c": 1.5}


def test_dict_unpacking_and_repeated_keys():
    # Python's rules: entries in order, a later key replaces an earlier one in its place
    @qd.kernel
    def k(x: qd.f32) -> qd.f32:
        d = {"a": 1, **DICT_DEFAULTS, "b": x, "a": 7}
        e = {**d, "c": 2.0}
        return d["a"] * 100.0 + d["b"] + d["c"] * 10.0 + e["c"] * 1000.0 + len(e) * 10000.0

    x = int(rng.integers(-400, 400)) * 0.25  # every partial sum exact in f32
    assert k(x) == 700 + x + 15 + 2000 + 30000

    @qd.kernel
    def bad(x: qd.f32) -> qd.f32:
        d = {**x}
        return d["a"]

    with pytest.raises(qd.QuadrantsSyntaxError, match="takes a compile-time dict"):
        bad(1.0)


def test_list_comprehension():
    @qd.kernel
    def k(a: qd.i32) -> qd.i32:
        lst = [a * j for j in range(4)]
        return lst[0] + lst[1] + lst[2] + lst[3]

    assert k(3) == 18


def test_ellipsis_statement_does_nothing():
    @qd.kernel
    def k(a: qd.i32) -> qd.i32:
        ...
        b = a * 2
        if b > 0:
            ...
        return b

    @qd.func
    def stub(): ...

    @qd.kernel
    def calls_stub(a: qd.i32) -> qd.i32:
        stub()
        return a

    a = int(rng.integers(-1000, 1000))
    assert k(a) == 2 * a
    assert calls_stub(a) == a


def test_list_element_assignment_is_local():
    @qd.kernel
    def k(a: qd.i32) -> qd.i32:
        lst = [a, a]
        lst[0] = 5
        return lst[0] + lst[1]

    assert k(3) == 8


def test_walrus():
    @qd.kernel
    def k(a: qd.i32) -> qd.i32:
        r = 0
        if (b := a * 2) > 5:
            r = b
        return r + b

    assert k(4) == 16
    assert k(1) == 2


# --- globals and closures ---

G_INT = 7
G_FLOAT = 0.5


def test_global_captured_at_first_compilation():
    global G_INT

    @qd.kernel
    def k() -> qd.i32:
        return G_INT

    G_INT = 7
    assert k() == 7
    G_INT = 100
    try:
        assert k() == 7  # baked in; no recompilation
    finally:
        G_INT = 7


def test_closure_captured_at_first_compilation():
    c = 3.5

    @qd.kernel
    def k() -> qd.f32:
        return c * 2

    assert k() == 7.0
    c = 10.0
    assert k() == 7.0


def test_global_field_by_reference():
    f = qd.field(qd.i32, shape=())

    @qd.kernel
    def k() -> qd.i32:
        return f[None]

    f[None] = 3
    assert k() == 3
    f[None] = 9
    assert k() == 9


def test_closure_type_annotation_for_return():
    """The return annotation is an evaluated object (inspect.signature), even when the body does
    not reference the annotation's name."""

    def make(t):
        @qd.kernel
        def k() -> t:
            return 5

        return k

    assert make(qd.i64)() == 5
    assert make(qd.f32)() == 5.0


def test_global_captured_by_func():
    def make(n):
        @qd.func
        def f():
            return n

        @qd.kernel
        def k() -> qd.i32:
            return f()

        return k

    assert make(4)() == 4
    assert make(9)() == 9


# --- qd.static ---


def test_static_if_keeps_one_branch():
    @qd.kernel
    def k(flag: qd.template()) -> qd.i32:
        r = 0
        if qd.static(flag):
            r = 1
        else:
            r = undefined_name_never_compiled  # noqa: F821
        return r

    assert k(True) == 1
    with pytest.raises(qd.QuadrantsNameError):
        k(False)


def test_static_for_unrolls_with_python_values():
    @qd.kernel
    def k(out: NDArray[qd.i32, 1]):
        for j in qd.static(range(5)):
            out[j] = j * j
        for j, v in qd.static(enumerate([10, 20, 30])):
            out[5 + j] = v

    out = np.zeros(8, np.int32)
    k(out)
    assert list(out) == [0, 1, 4, 9, 16, 10, 20, 30]


def test_static_value_and_template():
    @qd.kernel
    def k(n: qd.template()) -> qd.i32:
        s = 0
        for j in qd.static(range(n)):
            s += j
        return s + qd.static(n * 100)

    assert k(4) == 6 + 400
    assert k(6) == 15 + 600


def test_static_multiple_values():
    @qd.kernel
    def k() -> qd.i32:
        a, b = qd.static(1, 2)
        return a * 10 + b

    assert k() == 12


def test_static_of_runtime_value_is_compilation_error():
    @qd.kernel
    def k(v: qd.f32) -> qd.i32:
        r = 0
        if qd.static(v > 0.5):
            r = 1
        return r

    with pytest.raises(qd.QuadrantsCompilationError):
        k(1.0)


def test_static_assert_pass_and_fail():
    @qd.kernel
    def k(n: qd.template()) -> qd.i32:
        qd.static_assert(n > 2, "n too small")
        return n

    assert k(3) == 3
    with pytest.raises(qd.QuadrantsCompilationError, match="n too small"):
        k(1)


def test_static_assert_runtime_condition_is_type_error():
    @qd.kernel
    def k(n: qd.i32) -> qd.i32:
        qd.static_assert(n > 2)
        return n

    with pytest.raises(qd.QuadrantsTypeError, match="non-static"):
        k(3)


def test_static_print(capsys):
    @qd.kernel
    def k(n: qd.template()) -> qd.i32:
        qd.static_print("value is", n, n * 2)
        return n

    k(21)
    assert "value is 21 42" in capsys.readouterr().out
    k(21)  # cached: no trace, no print
    assert "value is" not in capsys.readouterr().out
