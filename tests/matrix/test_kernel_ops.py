"""qd.Vector / qd.Matrix values in kernels: construction, operators, methods, against NumPy."""

import numpy as np
import pytest

import quadrants as qd

rng = np.random.default_rng()


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64),
                               rtol=tol, atol=tol)


vec3 = qd.types.vector(3, qd.f32)
mat3 = qd.types.matrix(3, 3, qd.f32)
mat23 = qd.types.matrix(2, 3, qd.f32)


def test_constructors():
    @qd.kernel
    def k(x: qd.f32) -> mat3:
        v = qd.Vector([1.0, 2.0, x])
        w = qd.Vector([1, 2, 3], dt=qd.f32)
        m = qd.Matrix([[x, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
        return m + qd.Matrix.rows([v, w, v]) + qd.Matrix.cols([w, w, v]) + qd.Matrix.diag(3, x)

    x = float(rng.standard_normal())
    v, w = np.array([1, 2, x]), np.array([1, 2, 3.0])
    m = np.diag([x, 1, 1])
    expect = m + np.stack([v, w, v]) + np.stack([w, w, v], axis=1) + np.eye(3) * x
    close(k(x).to_numpy(), expect)


def test_zero_one_identity_unit():
    @qd.kernel
    def k() -> qd.types.matrix(4, 4, qd.f32):
        a = qd.Matrix.zero(qd.f32, 4, 4) + qd.Matrix.identity(qd.f32, 4) * 2
        b = qd.Matrix.one(qd.f32, 4, 4)
        u = qd.Matrix.unit(4, 2, qd.f32)
        return a + b + u.outer_product(qd.Vector.one(qd.f32, 4))

    expect = np.eye(4) * 2 + np.ones((4, 4)) + np.outer(np.eye(4)[2], np.ones(4))
    close(k().to_numpy(), expect)


def test_type_objects_as_constructors():
    vec4 = qd.types.vector(4, qd.f32)

    @qd.kernel
    def k(x: qd.f32) -> vec4:
        v = vec3(1, 2, x)
        w = vec3(0.5)
        return vec4(v.xyz * w, 1.0) + vec4([1, 1, 1, 1]) + qd.math.vec4(x)

    x = float(rng.standard_normal())
    close(k(x).to_numpy(), np.array([0.5, 1, 0.5 * x, 1]) + 1 + x)


def test_elementwise_operators_and_broadcast():
    @qd.kernel
    def k(a: vec3, b: vec3, s: qd.f32, out: qd.types.NDArray[qd.types.matrix(6, 3, qd.f32), 0]):
        out[None] = qd.Matrix.rows([a + b, a - s, a * b, a / b, s * a + 1.0, -a])

    a, b = rng.standard_normal(3), rng.standard_normal(3) + 3
    s = float(rng.standard_normal())
    out = np.zeros((6, 3), np.float32)
    k(a.tolist(), b.tolist(), s, out)
    r = out
    close(r, np.stack([a + b, a - s, a * b, a / b, s * a + 1, -a]), 1e-4)


def test_integer_ops_and_comparisons():
    ivec4 = qd.types.vector(4, qd.i32)

    @qd.kernel
    def k(a: ivec4, b: ivec4, out: qd.types.NDArray[qd.types.matrix(7, 4, qd.i32), 0]):
        out[None] = qd.Matrix.rows([a // b, a % b, a & b, a | b, a ^ b, (a < b).cast(qd.i32),
                                    qd.cast(a == b, qd.i32)])

    a = rng.integers(-50, 50, 4)
    b = rng.integers(1, 9, 4)
    out = np.zeros((7, 4), np.int32)
    k(a.tolist(), b.tolist(), out)
    r = out
    expect = np.stack([a // b, a % b, a & b, a | b, a ^ b, (a < b).astype(int), (a == b).astype(int)])
    np.testing.assert_array_equal(r, expect)


def test_matmul_forms():
    @qd.kernel
    def k(a: mat3, b: mat3, v: vec3, w: vec3) -> qd.types.matrix(5, 3, qd.f32):
        c = a @ b
        return qd.Matrix.rows([c[0, :], c[2, :], a @ v, v @ a, qd.Vector([v @ w, 0.0, 0.0])])

    a, b = rng.standard_normal((3, 3)), rng.standard_normal((3, 3))
    v, w = rng.standard_normal(3), rng.standard_normal(3)
    r = k(qd.Matrix(a.tolist()), qd.Matrix(b.tolist()), v.tolist(), w.tolist()).to_numpy()
    c = a @ b
    close(r, np.stack([c[0], c[2], a @ v, v @ a, [v @ w, 0, 0]]), 1e-4)


def test_rect_matmul():
    @qd.kernel
    def k(a: mat23, v: vec3) -> qd.types.vector(2, qd.f32):
        return a @ v

    a, v = rng.standard_normal((2, 3)), rng.standard_normal(3)
    close(k(qd.Matrix(a.tolist()), v.tolist()).to_numpy(), a @ v, 1e-4)


def test_methods():
    @qd.kernel
    def k(a: mat3, v: vec3, w: vec3) -> qd.types.vector(12, qd.f32):
        c = v.cross(w)
        n = v.normalized()
        return qd.Vector([v.dot(w), c[0], c[1], c[2], v.norm(), v.norm_sqr(), v.norm_inv(),
                          n[1], a.trace(), a.sum(), a.max(), a.min()])

    a = rng.standard_normal((3, 3))
    v, w = rng.standard_normal(3), rng.standard_normal(3)
    r = k(qd.Matrix(a.tolist()), v.tolist(), w.tolist()).to_numpy()
    c = np.cross(v, w)
    nv = np.linalg.norm(v)
    expect = [v @ w, c[0], c[1], c[2], nv, nv**2, 1 / nv, v[1] / nv, np.trace(a), a.sum(), a.max(), a.min()]
    close(r, expect, 1e-4)


def test_more_methods():
    @qd.kernel
    def k(a: mat3, b: mat3, v: vec3) -> qd.types.matrix(3, 3, qd.f32):
        t = a.transpose()
        o = v.outer_product(v)
        f = a.frobenius_inner(b)
        z = qd.Matrix.zero(qd.f32, 3, 3)
        z.fill(f)
        return t + o + z

    a, b, v = rng.standard_normal((3, 3)), rng.standard_normal((3, 3)), rng.standard_normal(3)
    r = k(qd.Matrix(a.tolist()), qd.Matrix(b.tolist()), v.tolist()).to_numpy()
    close(r, a.T + np.outer(v, v) + np.sum(a * b), 1e-4)


def test_cross_2d_any_all():
    @qd.kernel
    def k(x: qd.f32) -> qd.types.vector(3, qd.i32):
        a = qd.Vector([x, 2.0])
        b = qd.Vector([3.0, x])
        c = a.cross(b)
        return qd.Vector([qd.i32(c), (a > 0).any(), (a > 0).all()])

    r = k(-1.5).to_numpy()
    np.testing.assert_array_equal(r, [int(-1.5 * -1.5 - 6), 1, 0])


def test_math_functions_elementwise():
    @qd.kernel
    def k(v: vec3, w: vec3) -> qd.types.matrix(5, 3, qd.f32):
        return qd.Matrix.rows([qd.sqrt(qd.abs(v)), qd.max(v, w), qd.min(v, 0.0), qd.sin(v),
                               qd.pow(qd.abs(v), 2.0)])

    v, w = rng.standard_normal(3), rng.standard_normal(3)
    r = k(v.tolist(), w.tolist()).to_numpy()
    close(r, np.stack([np.sqrt(np.abs(v)), np.maximum(v, w), np.minimum(v, 0), np.sin(v), v**2]), 1e-4)


def test_cast_and_promotion():
    @qd.kernel
    def k() -> qd.types.vector(3, qd.f32):
        i = qd.Vector([1, 2, 3])
        f = i / 2
        return f + i.cast(qd.f32)

    close(k().to_numpy(), np.array([1, 2, 3]) / 2 + np.array([1, 2, 3]))


def test_len_n_m_shape_static_iteration():
    @qd.kernel
    def k() -> qd.i32:
        v = qd.Vector([1, 2, 3, 4])
        m = qd.Matrix([[1, 2, 3], [4, 5, 6]])
        s = 0
        for x in qd.static(v):
            s += x
        return s * 1000 + len(v) * 100 + m.n * 10 + m.m + m.get_shape()[0] * 0

    assert k() == 10 * 1000 + 400 + 20 + 3


def test_captured_python_matrix_is_constant():
    m = qd.Matrix([[1.0, 2.0], [3.0, 4.0]])

    @qd.kernel
    def k() -> qd.types.vector(2, qd.f32):
        return m @ qd.Vector([1.0, 1.0])

    close(k().to_numpy(), [3, 7])


def test_more_operators():
    ivec3 = qd.types.vector(3, qd.i32)

    @qd.kernel
    def k(a: ivec3, out: qd.types.NDArray[qd.types.matrix(9, 3, qd.i32), 0]):
        out[None] = qd.Matrix.rows([~a, abs(a), a**2, a << 2, a >> 1, (a <= 0).cast(qd.i32),
                                    qd.cast(a != 1, qd.i32), qd.cast(a >= 1, qd.i32),
                                    qd.cast(a > -2, qd.i32)])

    a = rng.integers(-20, 20, 3)
    out = np.zeros((9, 3), np.int32)
    k(a.tolist(), out)
    expect = np.stack([~a, np.abs(a), a**2, a << 2, a >> 1, a <= 0, a != 1, a >= 1, a > -2]).astype(np.int32)
    np.testing.assert_array_equal(out, expect)


def test_positional_dtype_unit_default_and_norm_eps():
    @qd.kernel
    def k() -> qd.types.vector(4, qd.f32):
        a = qd.Matrix([0, 1, 2], qd.f32)
        u = qd.Matrix.unit(3, 0)
        v = qd.Vector([3.0, 4.0])
        return qd.Vector([a[2] + qd.f32(u[0]), v.norm(1.0), v.norm_inv(), v.normalized(1.0)[0]])

    r = k().to_numpy()
    np.testing.assert_allclose(r, [3.0, np.sqrt(26.0), 0.2, 3.0 / 6.0], rtol=1e-6)


def test_top_level_vector_shared_by_tasks():
    f = qd.field(qd.f32, shape=8)

    @qd.kernel
    def k(s: qd.f32):
        v = qd.Vector([s, 2 * s])
        v.y += 1.0
        for i in range(8):
            f[i] = v.x * i + v.y
        w = v * 2.0
        for i in range(8):
            f[i] += w[1]

    s = float(rng.standard_normal())
    k(s)
    np.testing.assert_allclose(f.to_numpy(), s * np.arange(8) + (2 * s + 1) * 3, rtol=1e-5, atol=1e-5)


def test_matrix_in_runtime_control_flow():
    @qd.kernel
    def k(n: qd.i32) -> qd.types.vector(2, qd.f32):
        acc = qd.Vector([0.0, 0.0])
        rot = qd.Matrix([[0.0, -1.0], [1.0, 0.0]])
        p = qd.Vector([1.0, 0.0])
        qd.loop_config(serialize=True)  # a top-level loop is parallel otherwise
        for i in range(n):
            if i % 2 == 0:
                acc += p
            p = rot @ p
        return acc

    n = int(rng.integers(1, 20))
    p, acc = np.array([1.0, 0.0]), np.zeros(2)
    rot = np.array([[0, -1], [1, 0.0]])
    for i in range(n):
        if i % 2 == 0:
            acc += p
        p = rot @ p
    np.testing.assert_allclose(k(n).to_numpy(), acc, atol=1e-6)


def test_empty_matrix():
    @qd.kernel
    def k() -> qd.i32:
        m = qd.Matrix([])
        return m.n + len(m)

    assert k() == 0


@pytest.mark.parametrize("dt, np_dt", [(qd.f64, np.float64), (qd.i64, np.int64), (qd.u8, np.uint8),
                                       (qd.f16, np.float16), (qd.i16, np.int16)])
def test_element_types(dt, np_dt):
    vt = qd.types.vector(3, dt)

    @qd.kernel
    def k(a: vt, b: vt, out: qd.types.NDArray[vt, 1]):
        out[0] = a + b
        out[1] = a * b
        out[2] = qd.max(a, b)

    if np.issubdtype(np_dt, np.integer):
        a, b = rng.integers(0, 10, 3).astype(np_dt), rng.integers(0, 10, 3).astype(np_dt)
    else:
        a, b = rng.standard_normal(3).astype(np_dt), rng.standard_normal(3).astype(np_dt)
    out = np.zeros((3, 3), np_dt)
    k(a.tolist(), b.tolist(), out)
    tol = 1e-2 if np_dt == np.float16 else 1e-12
    np.testing.assert_allclose(out, np.stack([a + b, a * b, np.maximum(a, b)]).astype(np_dt), rtol=tol, atol=tol)


def test_f64_precision_kept():
    v2 = qd.types.vector(2, qd.f64)

    @qd.kernel
    def k(a: v2) -> v2:
        return a * 3.0 + qd.Vector([1e-12, 0.0], dt=qd.f64)

    r = k([1.0 / 3.0, 2.0 / 3.0]).to_numpy()
    assert r.dtype == np.float64
    np.testing.assert_allclose(r, [1.0 + 1e-12, 2.0], rtol=0, atol=1e-15)


def test_list_literals_as_operands():
    """A list or tuple literal next to a vector/matrix is the vector (list of lists: matrix) it
    spells, on either side, in operators, comparisons, augmented assignments and element-wise
    calls."""
    f = qd.Vector.field(3, qd.f32, shape=())
    m = qd.Matrix.field(2, 2, qd.f32, shape=(2,))
    x = rng.standard_normal(3).astype(np.float32)

    @qd.kernel
    def k(a: vec3) -> qd.i32:
        v = a
        f[None] = v + [1, 1, 1]
        m[0] += [[1, 2], [3, 4]]
        m[1] = [[0.5, 1.5], [2.5, 3.5]] - m[0]
        v.zxy += [10, 20, 30]
        f[None] += [1, 2, 3] * v
        w = qd.max(v, (0.0, 0.0, 0.0))
        return (v == [a[0] + 20, a[1] + 30, a[2] + 10]).all() + (w >= [0, 0, 0]).all() * 10

    assert k(qd.Vector(x.tolist())) == 11
    v = x + np.array([20, 30, 10], np.float32)
    close(f[None], x + 1 + np.array([1, 2, 3]) * v)
    close(m.to_numpy()[0], [[1, 2], [3, 4]])
    close(m.to_numpy()[1], [[-0.5, -0.5], [-0.5, -0.5]])


def test_list_literals_facing_quadrants_scalars():
    """A list or tuple literal facing a Quadrants scalar (a kernel value, `qd.f64(x)`) is the
    vector it spells, element by element, as in the reference; facing a Python int it stays a
    Python list (`[1, 2] * 3` repeats it)."""
    s = float(rng.uniform(1.0, 4.0))

    @qd.kernel
    def k(a: qd.f32, n: qd.i32) -> vec3:
        x = [1, 2, 3] * a                  # elementwise
        y = qd.f64(2.0) - (4, 5, 6)        # elementwise, the scalar on the left
        z = [1, 2, 3] < a                  # an elementwise comparison
        w = [1, 2, 3] * n                  # a kernel int: elementwise too
        r = [7, 8] * 3                     # a Python int: the list repeated
        zi = qd.i32(z[0]) + qd.i32(z[1]) + qd.i32(z[2])
        return qd.Vector([x.sum() + y.sum(), zi + 10 * w.sum(), qd.static(len(r))])

    got = k(s, 2).to_numpy()
    close(got, [6 * s + (6 - 15), sum(v < s for v in (1, 2, 3)) + 10 * 12, 6])


def test_list_operand_errors():
    @qd.kernel
    def k() -> qd.i32:
        v = qd.Vector([1, 2])
        return (v + [1, 1, 1]).sum()

    with pytest.raises(qd.QuadrantsTypeError, match="Dimension mismatch"):
        k()

    @qd.kernel
    def k2() -> qd.i32:
        v = qd.Vector([1, 2])
        return (v + [1, [1]]).sum()

    with pytest.raises(qd.QuadrantsTypeError, match="Element type of the matrix is invalid."):
        k2()


def test_logical_operators_on_vectors():
    """and / or / not on vectors are element-wise and give 0 or 1; a scalar operand broadcasts."""
    vec3i = qd.types.vector(3, qd.i32)

    @qd.kernel
    def k(a: vec3i, b: vec3i, s: qd.i32, out: qd.types.ndarray(qd.i32, ndim=2)):
        r0 = a and b
        r1 = a or b
        r2 = not a
        r3 = s and a
        r4 = a or s
        r5 = 2 and (a and b and [1, 0, 1])
        rows = qd.Matrix.rows([r0, r1, r2, r3, r4, r5])
        for i, j in qd.static(qd.ndrange(6, 3)):
            out[i, j] = rows[i, j]

    for s in (0, 3):
        a = rng.integers(0, 3, 3).astype(np.int32)
        b = rng.integers(0, 3, 3).astype(np.int32)
        r = np.zeros((6, 3), np.int32)
        k(qd.Vector(a.tolist()), qd.Vector(b.tolist()), s, r)
        ab = (a != 0) & (b != 0)
        expect = [ab, (a != 0) | (b != 0), a == 0, (a != 0) & (s != 0), (a != 0) | (s != 0),
                  ab & np.array([True, False, True])]
        np.testing.assert_array_equal(r, np.array(expect, np.int32))


def test_logical_operator_result_is_zero_or_one():
    @qd.kernel
    def k() -> qd.types.vector(3, qd.i32):
        a = qd.Vector([1, 0, 1])
        b = qd.Vector([1, 1, 0])
        return (a and b) + (a or b) * 10 + (not a) * 100

    np.testing.assert_array_equal(k().to_numpy(), [11, 110, 10])


def test_logical_operator_result_types():
    """and / or give the operands' promoted type, not gives u1 (as comparisons do)."""

    @qd.kernel
    def k(b: qd.i32, out: qd.types.ndarray(qd.i64, ndim=1)):
        u8 = qd.Vector([b, 0], qd.u8)
        one8 = qd.Vector([1, 1], qd.u8)
        w64 = qd.Vector([1, 1], qd.i64)
        r0 = (u8 and one8) - qd.u8(2)  # u8: wraps
        r1 = (qd.Vector([b, 0], qd.u16) or w64) - qd.u32(2)  # i64
        r2 = (not u8) - qd.u8(2)  # u1 meets u8: u8
        out[0], out[1] = r0[0], r0[1]
        out[2], out[3] = r1[0], r1[1]
        out[4], out[5] = r2[0], r2[1]

    out = np.zeros(6, np.int64)
    k(3, out)
    np.testing.assert_array_equal(out, [255, 254, -1, -1, 254, 255])


def test_logical_operators_need_integral_vectors():
    @qd.kernel
    def k() -> qd.i32:
        a = qd.Vector([1, 0])
        return (a and qd.Vector([1.5, 2.5])).sum()

    with pytest.raises(qd.QuadrantsTypeError,
                       match=r"unsupported operand type\(s\) for '&&': '\[Tensor \(2\) i32\]' and '\[Tensor \(2\) f32\]'"):
        k()

    @qd.kernel
    def k2() -> qd.i32:
        a = qd.Vector([1.5, 0.0])
        return (not a).sum()

    with pytest.raises(qd.QuadrantsTypeError, match="'logic_not' takes integral inputs only, however 'f32' is provided"):
        k2()


def test_zero_one_of_values():
    @qd.kernel
    def k(x: qd.f32, i: qd.i32) -> qd.f32:
        v = qd.Vector([x, 2.0])
        m = qd.Matrix([[i, 1], [2, 3]])
        return (qd.zero(x) + qd.one(x) * 2 + qd.one(v).sum() * 10 + qd.zero(v).sum() + qd.one(i) * 100
                + qd.one(m).sum() * 1000 + qd.zero(3) + qd.one(2.5) * 10000)

    x = float(rng.standard_normal())
    assert k(x, 7) == 2 + 20 + 100 + 4000 + 10000

    @qd.kernel
    def types(i: qd.u8, x: qd.f64) -> qd.f64:
        a = qd.one(i) - qd.u8(2)  # typed as i * 1: i32, no u8 wrap-around
        v = qd.zero(qd.Vector([i, i]))
        w = qd.one(qd.Vector([x, x]))
        return a * 10 + (v[0] - qd.u8(2)) + (w[0] + 1e-12 - 1) * 1e12  # f64 keeps 1e-12

    assert abs(types(5, 0.5) - (-10 - 2 + 1)) < 1e-3
