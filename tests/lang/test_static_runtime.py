"""qd.static(...) over expressions that name runtime values: their compile-time facts (a vector's n,
a matrix's n and m, an ndarray's number of axes), and runtime values carried through static tuples,
enumerate and zip back into the kernel (Genesis unrolls `for k, i in qd.static(enumerate((i_x, i_y)))`)."""

import dataclasses

import numpy as np
import pytest

import quadrants as qd

from .helpers import rng

NDArray = qd.types.NDArray


def test_static_n_of_a_vector_parameter():
    @qd.func
    def rev_cumsum(v):
        n_rows = qd.static(v.n)
        out = qd.Vector.zero(qd.f32, qd.static(v.n))
        acc = 0.0
        for i in qd.static(range(n_rows)):
            acc += v[n_rows - 1 - i]
            out[i] = acc
        return out

    @qd.kernel
    def k(a: NDArray[qd.f32, 1], out: NDArray[qd.f32, 1]):
        r = rev_cumsum(qd.Vector([a[0], a[1], a[2], a[3], a[4]]))
        for i in qd.static(range(5)):
            out[i] = r[i]

    a = rng.standard_normal(5).astype(np.float32)
    out = np.zeros(5, np.float32)
    k(a, out)
    np.testing.assert_allclose(out, np.cumsum(a[::-1]), rtol=1e-5)


def test_static_facts_of_matrices_and_vectors():
    @qd.kernel
    def k(x: qd.f32) -> qd.i32:
        m = qd.Matrix([[x, x, x], [x, x, x]])
        v = qd.Vector([x, x, x, x])
        facts = qd.static(
            m.n * 1000000 + m.m * 100000 + len(m) * 10000 + v.get_shape()[0] * 1000 + len(v) * 100
            + m.ndim * 10 + v.ndim
        )
        return facts

    assert k(1.0) == 2 * 1000000 + 3 * 100000 + 2 * 10000 + 4 * 1000 + 4 * 100 + 21


def test_static_dtype_of_runtime_values():
    @qd.kernel
    def k(a: qd.i32, b: qd.f64) -> qd.i32:
        v = qd.Vector([b, b])
        return qd.static((a.dtype == qd.i32) * 100 + (b.dtype == qd.f64) * 10 + (v.dtype == qd.f64))

    assert k(1, 2.0) == 111


def test_enumerate_runtime_scalars():
    @qd.kernel
    def k(idx: NDArray[qd.i32, 1], src: NDArray[qd.f32, 1], out: NDArray[qd.f32, 2]):
        for b in range(idx.shape[0] // 2):
            i_x = idx[2 * b]
            i_y = idx[2 * b + 1]
            for i_k, i_c in qd.static(enumerate((i_x, i_y))):
                out[b, i_k] = src[i_c] * (i_k + 1)

    n = 64
    src = rng.standard_normal(n).astype(np.float32)
    idx = rng.integers(0, n, 2 * 40).astype(np.int32)
    out = np.zeros((40, 2), np.float32)
    k(idx, src, out)
    np.testing.assert_allclose(out[:, 0], src[idx[0::2]])
    np.testing.assert_allclose(out[:, 1], 2 * src[idx[1::2]])


def test_enumerate_and_zip_runtime_vectors():
    @qd.kernel
    def k(a: NDArray[qd.f32, 1]) -> qd.f32:
        v = qd.Vector([a[0], a[1], a[2]])
        w = qd.Vector([a[3], a[4]])
        t = 0.0
        for k_, x in qd.static(enumerate([v, w])):
            t += x.sum() * (k_ + 1)
        a5, a6 = a[5], a[6]
        for x, s in qd.static(zip((a5, a6), (10.0, 100.0))):
            t += x * s
        return t

    a = rng.standard_normal(7).astype(np.float32)
    expected = a[:3].sum() + 2 * a[3:5].sum() + 10 * a[5] + 100 * a[6]
    assert k(a) == pytest.approx(expected, rel=1e-5, abs=1e-5)


def test_static_tuple_holding_runtime_values():
    @qd.kernel
    def k(a: qd.i32) -> qd.i32:
        pair = qd.static((a, 3))
        t = 0
        for x in qd.static([a, a]):
            t += x
        return pair[0] * pair[1] + t

    a = int(rng.integers(-1000, 1000))
    assert k(a) == 5 * a


def test_static_over_ndarray_shape():
    @qd.kernel
    def k(x: NDArray[qd.f32, 3]) -> qd.i32:
        t = 0
        for d, s in qd.static(enumerate(x.shape)):
            t += s * 10 ** (2 * d)
        if qd.static(len(x.shape) == 3):
            t += 1000000
        for d in qd.static(range(len(x.shape))):
            t += x.shape[d] * 0
        return t

    assert k(np.zeros((3, 5, 7), np.float32)) == 1070503


def test_runtime_value_as_the_static_result_is_an_error():
    @qd.kernel
    def k(a: qd.i32) -> qd.i32:
        return qd.static(a)

    with pytest.raises(qd.QuadrantsCompilationError, match="Input to qd.static must be compile-time"):
        k(1)


def test_operations_on_runtime_values_in_static_tuples():
    """`a + 1` on a stand-in is done at run time, with the kernel's typing, where it is used."""

    @qd.kernel
    def k(a: qd.i32, x: qd.f32) -> qd.f32:
        t = 0.0
        for v in qd.static((a, a + 1, 2 * a - 3, -x, x / 2, a // 2, a % 3, a < 4)):
            t = t * 10 + v
        return t

    for a, x in ((5, 1.5), (-7, -2.25), (3, 0.5)):
        items = (a, a + 1, 2 * a - 3, -x, x / 2, a // 2, a % 3, float(a < 4))
        t = 0.0
        for v in items:
            t = t * 10 + v
        assert k(a, x) == pytest.approx(t, rel=1e-6)


def test_runtime_results_and_truth_in_static_are_errors():
    @qd.kernel
    def arithmetic(a: qd.i32) -> qd.i32:
        return qd.static(a + 1)

    @qd.kernel
    def truth(a: qd.i32) -> qd.i32:
        return qd.static(1 if a > 0 else 2)

    @qd.kernel
    def conversion(a: qd.i32) -> qd.i32:
        return qd.static(range(a))[0]

    with pytest.raises(qd.QuadrantsCompilationError, match="Input to qd.static must be compile-time"):
        arithmetic(1)
    with pytest.raises(qd.QuadrantsCompilationError, match="no truth value at compile time"):
        truth(1)
    with pytest.raises(qd.QuadrantsCompilationError, match="exists only at run time"):
        conversion(1)


def test_m_of_a_vector_is_an_error():
    @qd.kernel
    def k(x: qd.f32) -> qd.i32:
        v = qd.Vector([x, x])
        return qd.static(v.m)

    with pytest.raises(qd.QuadrantsCompilationError, match="Getting m of tensor type < 2D"):
        k(1.0)


def test_static_len_of_ndarray_parameter_shape_in_func():
    """Genesis picks the index of an offset array by its number of axes this way."""

    @qd.func
    def offset(i: int, b: int, off: qd.types.ndarray()):
        index = [b, i] if qd.static(len(off.shape) == 2) else i
        return off[index]

    @qd.kernel
    def k2(off: NDArray[qd.f32, 2]) -> qd.f32:
        return offset(2, 1, off)

    @qd.kernel
    def k1(off: NDArray[qd.f32, 1]) -> qd.f32:
        return offset(2, 1, off)

    x2 = rng.standard_normal((3, 4)).astype(np.float32)
    x1 = rng.standard_normal(4).astype(np.float32)
    assert k2(x2) == x2[1, 2]
    assert k1(x1) == x1[2]


@dataclasses.dataclass
class State:
    vel: NDArray[qd.f32, 2]
    pos: NDArray[qd.f32, 1]


def test_static_member_of_a_dataclass_argument():
    @qd.func
    def read(st: State, i: int):
        v = qd.static(st.vel)  # an alias of the ndarray member
        return v[i, 0] * qd.static(len(st.pos.shape) * 10)

    @qd.kernel
    def k(st: State, out: NDArray[qd.f32, 1]):
        for i in range(out.shape[0]):
            out[i] = read(st, i)

    vel = rng.standard_normal((5, 2)).astype(np.float32)
    out = np.zeros(5, np.float32)
    k(State(vel=vel, pos=np.zeros(3, np.float32)), out)
    np.testing.assert_allclose(out, vel[:, 0] * 10)
