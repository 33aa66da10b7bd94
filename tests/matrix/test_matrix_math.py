"""qd.math vector/matrix helpers, in Python scope and in kernels, against NumPy."""

import cmath

import numpy as np
import pytest

import quadrants as qd

rng = np.random.default_rng()
vec2 = qd.types.vector(2, qd.f32)
vec3 = qd.types.vector(3, qd.f32)


def c(z):
    return complex(z[0], z[1])


def test_complex_helpers_in_kernels_and_python():
    @qd.kernel
    def k(a: vec2, b: vec2, out: qd.types.NDArray[qd.f32, 2]):
        r = qd.Matrix.rows([qd.math.cmul(a, b), qd.math.cconj(a), qd.math.cdiv(a, b),
                            qd.math.cexp(a), qd.math.cinv(a), qd.math.clog(a),
                            qd.math.cpow(a, 2.0), qd.math.csqrt(a)])
        for i, j in qd.static(qd.ndrange(8, 2)):
            out[i, j] = r[i, j]

    a, b = rng.standard_normal(2), rng.standard_normal(2)
    za, zb = complex(*a), complex(*b)
    expect = [za * zb, za.conjugate(), za / zb, cmath.exp(za), 1 / za, cmath.log(za), za**2, cmath.sqrt(za)]
    out = np.zeros((8, 2), np.float32)
    k(a.tolist(), b.tolist(), out)
    np.testing.assert_allclose(out[:, 0] + 1j * out[:, 1], expect, rtol=1e-4, atol=1e-4)
    A, B = qd.Vector(a.tolist(), dt=qd.f64), qd.Vector(b.tolist(), dt=qd.f64)
    assert c(qd.math.cmul(A, B)) == pytest.approx(za * zb)
    assert c(qd.math.csqrt(A)) == pytest.approx(cmath.sqrt(za))


def test_geometry_helpers():
    @qd.kernel
    def k(x: vec3, n: vec3, ang: qd.f32) -> qd.types.matrix(4, 4, qd.f32):
        r = qd.math.refract(x, n, 0.5)
        d = qd.math.vdir(ang)
        m = qd.math.rotation2d(ang) @ d
        return (qd.math.translate(r[0], r[1], r[2]) + qd.math.scale(m[0], m[1], 1.0)
                + qd.math.eye(4))

    x = rng.standard_normal(3)
    x /= np.linalg.norm(x)
    n = np.array([0.0, 0.0, 1.0])
    ang = float(rng.standard_normal())
    dxn = x @ n
    kk = 1 - 0.25 * (1 - dxn * dxn)
    r = 0.5 * x - (0.5 * dxn + np.sqrt(kk)) * n if kk >= 0 else np.zeros(3)
    rot = np.array([[np.cos(ang), -np.sin(ang)], [np.sin(ang), np.cos(ang)]])
    m = rot @ np.array([np.cos(ang), np.sin(ang)])
    t = np.eye(4)
    t[:3, 3] = r
    expect = t + np.diag([m[0], m[1], 1.0, 1.0]) + np.eye(4)
    np.testing.assert_allclose(k(x.tolist(), n.tolist(), ang).to_numpy(), expect, rtol=1e-5, atol=1e-5)


def test_vector_types_of_qd_math():
    @qd.kernel
    def k() -> qd.math.ivec3:
        a = qd.math.ivec3(1, 2, 3)
        b = qd.math.vec3(0.5)
        return a + qd.cast(b * 2, qd.i32)

    assert k().to_list() == [2, 3, 4]
    assert qd.math.uvec2(1, 2).dtype == qd.u32
    assert qd.math.mat3(0).to_numpy().shape == (3, 3)
