"""Spec 0.16: print of scalars, strings and f-strings from kernels; assert under debug=True."""

import numpy as np
import pytest

import quadrants as qd

NDArray = qd.types.NDArray


def _out(capfd):
    return capfd.readouterr().out


def test_print_scalars(capfd):
    @qd.kernel
    def k(a: qd.i32, b: qd.f32, c: qd.i64, d: qd.u8, e: qd.f64):
        print(a, b, c, d, e)

    _out(capfd)
    k(-42, 1.5, 2**40, 200, 0.25)
    line = _out(capfd).strip().splitlines()[-1]
    parts = line.split()
    assert parts[0] == "-42"
    assert float(parts[1]) == 1.5
    assert parts[2] == str(2**40)
    assert parts[3] == "200"
    assert float(parts[4]) == 0.25


def test_print_string_and_sep_end(capfd):
    @qd.kernel
    def k(a: qd.i32):
        print("value:", a)
        print("x", a, sep="|", end="!\n")
        print("plain string")

    _out(capfd)
    k(7)
    out = _out(capfd)
    assert "value: 7\n" in out
    assert "x|7!\n" in out
    assert "plain string\n" in out


def test_print_fstring_format_specs(capfd):
    @qd.kernel
    def k(a: qd.i32, b: qd.f32, c: qd.f64):
        print(f"a={a} b={b:.3f} c={c:.2e} w={a:5d} z={a:05d}")

    _out(capfd)
    k(42, 3.14159, 12345.678)
    out = _out(capfd)
    assert "a=42 b=3.142 c=1.23e+04 w=   42 z=00042" in out


def test_print_fstring_constant_parts(capfd):
    n = 3

    @qd.kernel
    def k(a: qd.i32):
        print(f"n={n} a={a} sum={a + n}")

    _out(capfd)
    k(4)
    assert "n=3 a=4 sum=7" in _out(capfd)


def test_print_in_parallel_loop(capfd):
    @qd.kernel
    def k():
        for i in range(20):
            print("item", i)

    _out(capfd)
    k()
    lines = [ln for ln in _out(capfd).splitlines() if ln.startswith("item")]
    assert sorted(int(ln.split()[1]) for ln in lines) == list(range(20))


def test_print_bad_conversion_rejected():
    @qd.kernel
    def k(a: qd.f32):
        print(f"{a:d}")

    with pytest.raises(qd.QuadrantsCompilationError):
        k(1.0)


def test_print_after_each_launch(capfd):
    @qd.kernel
    def k(a: qd.i32):
        if a > 0:
            print("positive", a)

    _out(capfd)
    for v in [1, -1, 2]:
        k(v)
    out = _out(capfd)
    assert out.count("positive") == 2
    assert "positive 1" in out and "positive 2" in out


# --- assert ---


def test_assert_debug_raises(arch):
    qd.init(arch=getattr(qd, arch), debug=True)

    @qd.kernel
    def k(a: qd.i32):
        assert a > 0, "a must be positive"

    k(1)
    with pytest.raises(qd.QuadrantsAssertionError, match="a must be positive"):
        k(-1)


def test_assert_error_is_assertion_error(arch):
    qd.init(arch=getattr(qd, arch), debug=True)

    @qd.kernel
    def k(a: qd.i32):
        assert a > 0

    with pytest.raises(AssertionError):
        k(0)
    with pytest.raises(RuntimeError):
        k(0)


def test_assert_in_parallel_loop(arch):
    qd.init(arch=getattr(qd, arch), debug=True)

    @qd.kernel
    def k(x: NDArray[qd.i32, 1]):
        for i in range(x.shape[0]):
            assert x[i] < 100, "too big"

    x = np.arange(1000, dtype=np.int32) % 100
    k(x)
    x[567] = 100
    with pytest.raises(qd.QuadrantsAssertionError, match="too big"):
        k(x)


def test_assert_fstring_message(arch):
    qd.init(arch=getattr(qd, arch), debug=True)

    @qd.kernel
    def k(a: qd.i32):
        assert a != 3, f"a was {a}"

    with pytest.raises(qd.QuadrantsAssertionError, match="a was 3"):
        k(3)


def test_assert_percent_message(arch):
    qd.init(arch=getattr(qd, arch), debug=True)

    @qd.kernel
    def k(a: qd.i32):
        assert a != 5, "bad value %d" % a

    with pytest.raises(qd.QuadrantsAssertionError, match="bad value 5"):
        k(5)


def test_assert_ignored_without_debug():
    @qd.kernel
    def k(a: qd.i32) -> qd.i32:
        assert a > 0, "never checked"
        return a * 2

    assert k(-3) == -6


def test_kernel_usable_after_assert_failure(arch):
    qd.init(arch=getattr(qd, arch), debug=True)

    @qd.kernel
    def k(a: qd.i32) -> qd.i32:
        assert a >= 0
        return a + 1

    with pytest.raises(qd.QuadrantsAssertionError):
        k(-1)
    assert k(4) == 5


def test_float_assert_condition_is_type_error(arch):
    qd.init(arch=getattr(qd, arch), debug=True)

    @qd.kernel
    def k(a: qd.f32):
        assert a

    with pytest.raises(qd.QuadrantsTypeError):
        k(1.0)


def test_float_assert_condition_is_type_error_without_debug():
    @qd.kernel
    def k(a: qd.f32):
        assert a

    with pytest.raises(qd.QuadrantsTypeError):
        k(1.0)
