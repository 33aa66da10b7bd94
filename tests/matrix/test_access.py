"""Element access of vectors and matrices in kernels: constant and runtime indices, slices,
swizzles, reads and writes."""

import numpy as np
import pytest

import quadrants as qd
from quadrants import _core

rng = np.random.default_rng()
vec4 = qd.types.vector(4, qd.f32)
mat3 = qd.types.matrix(3, 3, qd.f32)


def test_runtime_index_read_and_write():
    @qd.kernel
    def k(v: vec4, m: mat3, out: qd.types.NDArray[qd.f32, 1]):
        w = v
        for i in range(4):
            out[i] = v[i]
            w[i] = v[i] * 2.0 + i
        for i in range(4):
            out[4 + i] = w[i]
        a = m
        for i, j in qd.ndrange(3, 3):
            out[8 + i * 3 + j] = m[i, j]
            a[i, j] += 1.0
        for i in range(3):
            for j in range(3):
                out[17 + i * 3 + j] = a[i, j]

    v, m = rng.standard_normal(4), rng.standard_normal((3, 3))
    out = np.zeros(26, np.float32)
    k(v.tolist(), qd.Matrix(m.tolist()), out)
    np.testing.assert_allclose(out[:4], v, rtol=1e-6, atol=1e-5)
    np.testing.assert_allclose(out[4:8], v * 2 + np.arange(4), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[8:17], m.reshape(-1), rtol=1e-6, atol=1e-5)
    np.testing.assert_allclose(out[17:26], m.reshape(-1) + 1, rtol=1e-5, atol=1e-6)


def test_slices_read():
    @qd.kernel
    def k(m: mat3, v: vec4, out: qd.types.NDArray[qd.f32, 1]):
        c = m[:, 2]
        r = m[1, :]
        s = m[0:2, 1]
        t = v[1:3]
        u = v[::2]
        b = m[1::, :]
        q = v[:3:2]
        vals = qd.Vector([c[0], c[1], c[2], r[0], r[1], r[2], s[0], s[1], t[0], t[1], u[0], u[1],
                          b[0, 0], b[1, 2], q[1]])
        for i in qd.static(range(15)):
            out[i] = vals[i]

    m, v = rng.standard_normal((3, 3)), rng.standard_normal(4)
    out = np.zeros(15, np.float32)
    k(qd.Matrix(m.tolist()), v.tolist(), out)
    expect = np.concatenate([m[:, 2], m[1, :], m[0:2, 1], v[1:3], v[::2], [m[1, 0], m[2, 2]], [v[:3:2][1]]])
    np.testing.assert_allclose(out, expect, rtol=1e-6, atol=1e-5)


def test_slice_with_runtime_row_index():
    @qd.kernel
    def k(m: mat3, out: qd.types.NDArray[qd.f32, 2]):
        for i in range(3):
            r = m[i, :]
            c = m[:, i]
            for j in qd.static(range(3)):
                out[i, j] = r[j] + 10.0 * c[j]

    m = rng.standard_normal((3, 3))
    out = np.zeros((3, 3), np.float32)
    k(qd.Matrix(m.tolist()), out)
    np.testing.assert_allclose(out, m + 10 * m.T, rtol=1e-5, atol=1e-5)


def test_slice_writes():
    @qd.kernel
    def k(m: mat3, v: qd.types.vector(3, qd.f32)) -> mat3:
        a = m
        a[:, 0] = v
        a[1, 1:3] = qd.Vector([7.0, 8.0])
        a[:2, :] += qd.Matrix([[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]])
        a[:, 2] *= -1.0
        return a

    m, v = rng.standard_normal((3, 3)), rng.standard_normal(3)
    a = m.copy()
    a[:, 0] = v
    a[1, 1:3] = [7, 8]
    a[:2, :] += [[1, 1, 1], [2, 2, 2]]
    a[:, 2] *= -1
    np.testing.assert_allclose(k(qd.Matrix(m.tolist()), v.tolist()).to_numpy(), a, rtol=1e-5, atol=1e-5)


def test_swizzles():
    @qd.kernel
    def k(v: vec4) -> qd.types.matrix(4, 4, qd.f32):
        a = v.xyz
        b = v.bgra
        c = v.xxz
        d = v
        d.x = 1.0
        d.zy = qd.Vector([5.0, 6.0])
        d.brg += 1.0
        e = qd.Vector([v.s, v.t, v.p, v.q])
        return qd.Matrix.rows([qd.Vector([a[0], a[1], a[2], c[2]]), b, d, e])

    v = rng.standard_normal(4)
    d = v.copy()
    d[0] = 1
    d[2], d[1] = 5, 6
    d[[2, 0, 1]] += 1
    expect = np.stack([[v[0], v[1], v[2], v[2]], v[[2, 1, 0, 3]], d, v])
    np.testing.assert_allclose(k(v.tolist()).to_numpy(), expect, rtol=1e-6, atol=1e-5)


def test_swapping_through_swizzle():
    @qd.kernel
    def k() -> qd.types.vector(2, qd.i32):
        v = qd.Vector([1, 2])
        v.xy = v.yx
        return v

    assert k().to_list() == [2, 1]


def test_matrix_variables_copy_semantics():
    @qd.kernel
    def k() -> qd.types.vector(2, qd.f32):
        a = qd.Vector([1.0, 2.0])
        b = a
        b[0] = 5.0
        a = a * 2
        return qd.Vector([a[0] + b[0], a[1] + b[1]])

    assert k().to_list() == [7.0, 6.0]


def test_single_index_of_matrix_is_an_error():
    """As in the reference, a matrix element takes both indices; a row is m[i, :]."""

    @qd.kernel
    def k(m: mat3) -> qd.types.vector(3, qd.f32):
        return m[1]

    @qd.kernel
    def row(m: mat3) -> qd.types.vector(3, qd.f32):
        return m[1, :]

    m = rng.standard_normal((3, 3))
    with pytest.raises(_core.QuadrantsIndexError, match="Expected 2 indices, got 1."):
        k(qd.Matrix(m.tolist()))
    np.testing.assert_allclose(row(qd.Matrix(m.tolist())).to_numpy(), m[1], rtol=1e-6, atol=1e-5)


def test_nested_subscript_of_vector_field():
    f = qd.Vector.field(3, qd.f32, shape=4)

    @qd.kernel
    def k():
        for i in range(4):
            f[i][1] = i * 1.5
            f[i].z = -i

    k()
    r = f.to_numpy()
    np.testing.assert_allclose(r[:, 1], np.arange(4) * 1.5)
    np.testing.assert_allclose(r[:, 2], -np.arange(4))


def test_conditional_expression_of_vectors():
    @qd.kernel
    def k(x: qd.f32) -> qd.types.vector(2, qd.f32):
        a = qd.Vector([1.0, 2.0])
        b = qd.Vector([3, 4])
        return a * 2.0 if x > 0 else b

    assert k(1.0).to_list() == [2.0, 4.0]
    assert k(-1.0).to_list() == [3.0, 4.0]


def test_slice_writes_with_runtime_index():
    f = qd.Matrix.field(3, 3, qd.f32, shape=2)

    @qd.kernel
    def k(m: mat3, v: qd.types.vector(3, qd.f32), i: qd.i32, j: qd.i32) -> mat3:
        a = m
        a[i, :] = v
        a[:, j] += 1.0
        f[1][:, i] = v
        f[1][j, :] += v
        return a

    m, v = rng.standard_normal((3, 3)), rng.standard_normal(3)
    i, j = int(rng.integers(0, 3)), int(rng.integers(0, 3))
    a = m.copy()
    a[i, :] = v
    a[:, j] += 1
    np.testing.assert_allclose(k(qd.Matrix(m.tolist()), v.tolist(), i, j).to_numpy(), a, rtol=1e-5, atol=1e-5)
    g = np.zeros((3, 3))
    g[:, i] = v
    g[j, :] += v
    np.testing.assert_allclose(f.to_numpy()[1], g, rtol=1e-5, atol=1e-5)
