"""`break` and `continue`: in the parallel outermost loop, in serial loops, in `qd.static` loops
(compile time), and the statements after them (never run, never compiled)."""

import os

import numpy as np
import pytest

import quadrants as qd

from .helpers import rng

NDArray = qd.types.NDArray


THIS_FILE = os.path.abspath(__file__)


def check_names_line(exc, marker):
    """The error text names this file and the line holding `marker`, and shows that line."""
    with open(THIS_FILE) as f:
        hits = [n for n, text in enumerate(f, 1) if marker in text and "check_names_line" not in text]
    assert len(hits) == 1, (marker, hits)
    text = str(exc)
    assert f"{THIS_FILE}:{hits[0]}" in text, text
    assert marker in text, text


# --- the outermost (parallel) loop ---


def test_continue_in_outermost_range_loop():
    @qd.kernel
    def k(a: NDArray[qd.i32, 1], out: NDArray[qd.i32, 1]):
        for i in range(a.shape[0]):
            if a[i] % 3 == 0:
                continue
            out[i] = a[i] * 2

    a = rng.integers(-1000, 1000, 3001).astype(np.int32)
    out = np.full(a.shape, -7, np.int32)
    k(a, out)
    np.testing.assert_array_equal(out, np.where(a % 3 == 0, -7, a * 2))


def test_continue_in_outermost_field_ndrange_and_grouped_loops():
    a = qd.field(qd.i32, shape=(13, 17))

    @qd.kernel
    def k(s: qd.i32):
        for i, j in a:
            if (i + j + s) % 2 == 0:
                continue
            a[i, j] = i * 100 + j
        for i, j in qd.ndrange(13, (1, 17)):
            if j % 4 == s % 4:
                continue
            a[i, j] += 10000
        for I in qd.grouped(a):
            if I[0] == s % 13:
                continue
            a[I] += 100000

    s = int(rng.integers(0, 50))
    k(s)
    i, j = np.meshgrid(np.arange(13), np.arange(17), indexing="ij")
    expect = np.where((i + j + s) % 2 == 0, 0, i * 100 + j)
    expect += np.where((j >= 1) & (j % 4 != s % 4), 10000, 0)
    expect += np.where(i != s % 13, 100000, 0)
    np.testing.assert_array_equal(a.to_numpy(), expect)


def test_continue_in_outermost_loop_skips_the_rest_of_the_iteration():
    @qd.kernel
    def k(a: NDArray[qd.f32, 1]) -> qd.f32:
        total = 0.0
        for i in range(a.shape[0]):
            x = a[i]
            if x < 0:
                continue
            total += x
        return total

    a = rng.normal(size=500).astype(np.float32)
    np.testing.assert_allclose(k(a), a[a >= 0].sum(dtype=np.float64), rtol=1e-4)


def test_break_in_outermost_loop_is_syntax_error():
    @qd.kernel
    def k(out: NDArray[qd.i32, 1]):
        for i in range(out.shape[0]):
            if i > 5:
                break  # outermost break
            out[i] = i

    with pytest.raises(qd.QuadrantsSyntaxError, match="Cannot break in the outermost loop") as e:
        k(np.zeros(10, np.int32))
    check_names_line(e.value, "# outermost break")


def test_break_in_serialized_outermost_loop():
    @qd.kernel
    def k(a: NDArray[qd.i32, 1]) -> qd.i32:
        n = 0
        qd.loop_config(serialize=True)
        for i in range(a.shape[0]):
            if a[i] == 0:
                break
            n += 1
        return n

    a = rng.integers(0, 20, 300).astype(np.int32)
    zeros = np.nonzero(a == 0)[0]
    assert k(a) == (int(zeros[0]) if zeros.size else a.size)


# --- qd.static loops ---


def test_static_break_and_continue_under_static_if():
    @qd.kernel
    def k(n: qd.i32) -> qd.i32:
        s = 0
        for i in qd.static(range(10)):
            if qd.static(i == 7):
                break
            if qd.static(i % 3 == 0):
                continue
            s += i * n
        return s

    n = int(rng.integers(1, 100))
    assert k(n) == sum(i * n for i in range(7) if i % 3)


def test_static_break_ends_the_unrolled_copy():
    @qd.kernel
    def k() -> qd.i32:
        s = 0
        for i in qd.static(range(10)):
            s += i + 1
            break
            s += 100
        return s

    assert k() == 1


def test_static_loop_inside_parallel_and_serial_loops():
    @qd.kernel
    def k(n: qd.i32) -> qd.i32:
        s = 0
        for _ in range(n):  # parallel
            for i in qd.static(range(10)):
                if qd.static(i == 5):
                    break
                if qd.static(i % 2 == 0):
                    continue
                s += i
        for _ in range(1):
            for r in range(n):  # serial
                for i in qd.static(range(10)):
                    if qd.static(i == 3):
                        break
                    s += 100 * i
        return s

    n = int(rng.integers(1, 20))
    assert k(n) == 4 * n + 300 * n


def test_runtime_loop_inside_static_loop():
    @qd.kernel
    def k(n: qd.i32) -> qd.i32:
        s = 0
        for _ in range(1):
            for i in qd.static(range(4)):
                for r in range(20):
                    if r >= n + i:
                        break
                    if r % 2 == 0:
                        continue
                    s += r
                if qd.static(i == 2):
                    continue
                s += 1000
        return s

    n = int(rng.integers(0, 10))
    expect = 0
    for i in range(4):
        expect += sum(r for r in range(min(20, n + i)) if r % 2)
        expect += 0 if i == 2 else 1000
    assert k(n) == expect


def test_while_inside_static_loop():
    @qd.kernel
    def k(n: qd.i32) -> qd.i32:
        s = 0
        for i in qd.static(range(6)):
            m = n
            while m > 0:
                if qd.static(i == 2):
                    break
                m -= 1
                s += 1
        return s

    n = int(rng.integers(0, 10))
    assert k(n) == 5 * n


@pytest.mark.parametrize("jump", ["break", "continue"])
def test_static_jump_under_runtime_if_is_syntax_error(jump):
    @qd.kernel
    def k_break(n: qd.i32) -> qd.i32:
        s = 0
        for i in qd.static(range(10)):
            if i == n:  # static break under if
                break
            s += i
        return s

    @qd.kernel
    def k_continue(n: qd.i32) -> qd.i32:
        s = 0
        for i in qd.static(range(10)):
            if i < n:  # static continue under if
                continue
            s += i
        return s

    k = k_break if jump == "break" else k_continue
    message = (
        f"You are trying to `{jump}` a static `for` loop, but the `{jump}` statement is inside a "
        "non-static `if`."
    )
    with pytest.raises(qd.QuadrantsSyntaxError) as e:
        k(5)
    assert message in str(e.value)
    check_names_line(e.value, f"# static {jump} under if")


@pytest.mark.parametrize("jump", ["break", "continue"])
def test_static_jump_under_runtime_if_inside_runtime_loop_is_syntax_error(jump):
    # The jump must not silently leave the runtime loop around the static one.
    @qd.kernel
    def k_break(n: qd.i32) -> qd.i32:
        s = 0
        qd.loop_config(serialize=True)
        for j in range(3):
            for i in qd.static(range(10)):
                if i < n:  # break marker
                    break
                s += i
        return s

    @qd.kernel
    def k_continue(n: qd.i32) -> qd.i32:
        s = 0
        for j in range(1):
            for i in qd.static(range(10)):
                if i < n:  # continue marker
                    continue
                s += i
        return s

    k = k_break if jump == "break" else k_continue
    with pytest.raises(qd.QuadrantsSyntaxError, match=f"You are trying to `{jump}` a static") as e:
        k(5)
    assert "inside a non-static `if`" in str(e.value)
    check_names_line(e.value, f"# {jump} marker")


# --- statements after break / continue / return ---


def test_statements_after_break_and_continue_are_dropped():
    a = qd.field(qd.i32, shape=2)

    @qd.kernel
    def k(n: qd.i32) -> qd.i32:
        s = 0
        for j in range(1):
            for i in range(n):
                break
                s += 1
            for i in range(n):
                s += 10
                continue
                s += 1000
        for i in range(n):
            a[0] += 1
            continue
            a[0] += 100
        return s

    n = int(rng.integers(1, 30))
    assert k(n) == 10 * n
    assert a.to_numpy()[0] == n


def test_statements_after_return_are_dropped():
    a = qd.field(qd.i32, shape=3)

    @qd.func
    def f(x):
        return x + 1
        a[0] = 5

    @qd.real_func
    def g(x: qd.i32) -> qd.i32:
        return x + 2
        a[1] = 5

    @qd.kernel
    def k(x: qd.i32) -> qd.i32:
        return f(x) * 10 + g(x)
        a[2] = 5

    x = int(rng.integers(-100, 100))
    assert k(x) == (x + 1) * 10 + x + 2
    assert a.to_numpy().tolist() == [0, 0, 0]
