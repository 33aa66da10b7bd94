"""Dataclass kernel parameters whose members are vector/matrix ndarrays, fields (scalar and
vector), ``qd.Tensor`` wrappers and nested dataclasses of them: every member kind works where a
parameter of that kind works (the reference 1.3.3 gives the same results for these programs).

A dataclass argument is flattened into one kernel argument per leaf member: an ndarray member
carries its element shape like an ndarray parameter does (from the member's annotation, or from
the value when the annotation names no element type), and a field member is a compile-time
argument like a ``qd.template()`` parameter.
"""

import dataclasses

import numpy as np
import pytest

import quadrants as qd

rng = np.random.default_rng()


@dataclasses.dataclass
class Arrays:
    a: qd.types.ndarray(dtype=qd.math.vec3, ndim=1)
    m: qd.types.ndarray(dtype=qd.math.mat2, ndim=1)
    n: qd.i32


@dataclasses.dataclass
class Fields:
    f: qd.template()
    v: qd.template()


@dataclasses.dataclass
class State:
    arrays: Arrays
    fields: Fields
    untyped: qd.types.ndarray()


def _vec_ndarray(n):
    a = qd.Vector.ndarray(3, qd.f32, shape=(n,))
    a.from_numpy(rng.standard_normal((n, 3)).astype(np.float32))
    return a


def _mat_ndarray(n):
    m = qd.Matrix.ndarray(2, 2, qd.f32, shape=(n,))
    m.from_numpy(rng.standard_normal((n, 2, 2)).astype(np.float32))
    return m


def test_vector_and_matrix_ndarray_members(arch):
    qd.init(arch=getattr(qd, arch))

    @qd.kernel
    def k(s: Arrays, out: qd.types.ndarray(dtype=qd.f32, ndim=2)):
        for i in range(s.n):
            out[i, 0] = s.a[i][1] + s.m[i][1, 0]
            out[i, 1] = s.a[i].dot(s.a[i]) + s.m[i].trace()

    n = 37
    a, m = _vec_ndarray(n), _mat_ndarray(n)
    out = np.zeros((n, 2), np.float32)
    k(Arrays(a, m, n), out)
    an, mn = a.to_numpy().astype(np.float64), m.to_numpy().astype(np.float64)
    want = np.stack([an[:, 1] + mn[:, 1, 0], (an * an).sum(1) + mn[:, 0, 0] + mn[:, 1, 1]], 1)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    # New arrays of the same kinds reuse the compiled kernel.
    a2, m2 = _vec_ndarray(n), _mat_ndarray(n)
    k(Arrays(a2, m2, n), out)
    np.testing.assert_allclose(out[:, 0], a2.to_numpy()[:, 1] + m2.to_numpy()[:, 1, 0], rtol=1e-5)
    assert len(k._compiled) == 1


def test_numpy_array_for_a_vector_member(arch):
    qd.init(arch=getattr(qd, arch))

    @qd.kernel
    def k(s: Arrays) -> qd.f32:
        total = 0.0
        for i in range(s.n):
            total += s.a[i][2] * s.m[i][0, 1]
        return total

    n = 16
    a = rng.standard_normal((n, 3)).astype(np.float32)
    m = rng.standard_normal((n, 2, 2)).astype(np.float32)
    got = k(Arrays(a, m, n))
    assert got == pytest.approx(float((a[:, 2].astype(np.float64) * m[:, 0, 1]).sum()), rel=1e-4,
                                abs=1e-4)
    with pytest.raises(ValueError, match="elements of shape"):
        k(Arrays(rng.standard_normal((n, 4)).astype(np.float32), m, n))


def test_field_members(arch):
    qd.init(arch=getattr(qd, arch))
    n = 19
    f = qd.field(qd.f32, shape=(n,))
    v = qd.Vector.field(2, qd.f32, shape=(n,))

    @qd.kernel
    def k(s: Arrays, fl: Fields):
        for i in range(s.n):
            fl.f[i] = s.a[i][0] * 2.0
            fl.v[i] = qd.Vector([s.a[i].sum(), s.m[i].determinant()])

    a, m = _vec_ndarray(n), _mat_ndarray(n)
    k(Arrays(a, m, n), Fields(f, v))
    an, mn = a.to_numpy().astype(np.float64), m.to_numpy().astype(np.float64)
    np.testing.assert_allclose(f.to_numpy(), 2 * an[:, 0], rtol=1e-6)
    want = np.stack([an.sum(1), np.linalg.det(mn)], 1)
    np.testing.assert_allclose(v.to_numpy(), want, rtol=1e-4, atol=1e-5)
    # Other fields: another specialization, which writes them and not the first ones.
    f2 = qd.field(qd.f32, shape=(n,))
    v2 = qd.Vector.field(2, qd.f32, shape=(n,))
    before = f.to_numpy().copy()
    k(Arrays(a, m, n), Fields(f2, v2))
    np.testing.assert_allclose(f2.to_numpy(), 2 * an[:, 0], rtol=1e-6)
    np.testing.assert_array_equal(f.to_numpy(), before)
    assert len(k._compiled) == 2
    k(Arrays(a, m, n), Fields(f, v))
    assert len(k._compiled) == 2


def test_nested_members_of_every_kind_and_tensor_wrappers(arch):
    qd.init(arch=getattr(qd, arch))
    n = 11
    f = qd.field(qd.f32, shape=(n,))
    v = qd.Vector.field(2, qd.f32, shape=(n,))

    @qd.kernel
    def k(s: State):
        for i in range(s.arrays.n):
            s.untyped[i][1] = s.arrays.a[i][0] + 1.0
            s.fields.f[i] = s.untyped[i][1] * 3.0
            s.fields.v[i][1] = s.arrays.m[i][0, 0]

    a, m = _vec_ndarray(n), _mat_ndarray(n)
    untyped = qd.Vector.ndarray(2, qd.f32, shape=(n,))
    state = State(Arrays(qd.Tensor(a), m, n), Fields(qd.Tensor(f), v), qd.Tensor(untyped))
    k(state)
    an = a.to_numpy()
    np.testing.assert_allclose(untyped.to_numpy()[:, 1], an[:, 0] + 1.0, rtol=1e-6)
    np.testing.assert_allclose(f.to_numpy(), (an[:, 0] + 1.0) * 3.0, rtol=1e-5)
    np.testing.assert_array_equal(v.to_numpy()[:, 1], m.to_numpy()[:, 0, 0])


def test_untyped_member_takes_its_element_from_the_value(arch):
    """A member annotated ``qd.types.ndarray()`` is specialized on the element of the array
    passed: a vector ndarray and a scalar ndarray give two kernels."""
    qd.init(arch=getattr(qd, arch))

    @dataclasses.dataclass
    class Holder:
        x: qd.types.ndarray()

    @qd.kernel
    def vec(h: Holder):
        for i in range(h.x.shape[0]):
            h.x[i][0] += 1.0

    @qd.kernel
    def scal(h: Holder):
        for i in range(h.x.shape[0]):
            h.x[i] += 1.0

    x = _vec_ndarray(8)
    before = x.to_numpy()
    vec(Holder(x))
    np.testing.assert_array_equal(x.to_numpy()[:, 0], before[:, 0] + 1.0)
    np.testing.assert_array_equal(x.to_numpy()[:, 1:], before[:, 1:])
    s = qd.ndarray(qd.f32, shape=(8,))
    scal(Holder(s))
    np.testing.assert_array_equal(s.to_numpy(), np.ones(8, np.float32))
