"""qd.Matrix / qd.Vector in Python scope (NumPy-backed values)."""

import numpy as np
import pytest

import quadrants as qd

rng = np.random.default_rng()


def test_construction_shape_and_access():
    v = qd.Vector([1, 2, 3])
    assert v.n == 3 and v.ndim == 1 and len(v) == 3 and v.dtype == qd.i32
    m = qd.Matrix([[1.0, 2.0], [3.0, 4.0]])
    assert (m.n, m.m, m.ndim) == (2, 2, 2) and m.dtype == qd.f32
    assert m[1, 0] == 3.0 and m.get_shape() == (2, 2)
    m[0, 1] = 7
    assert m.to_list() == [[1.0, 7.0], [3.0, 4.0]]
    assert qd.Matrix([0, 1, 2], qd.i32).to_list() == [0, 1, 2]
    assert qd.Vector([1, 2], dt=qd.f64).dtype == qd.f64
    assert v.to_numpy().shape == (3,)
    assert str(v) == repr(v) == "[1 2 3]"


def test_arithmetic_against_numpy():
    a, b = rng.standard_normal((3, 3)), rng.standard_normal((3, 3))
    v = rng.standard_normal(3)
    A, B, V = qd.Matrix(a.tolist(), dt=qd.f64), qd.Matrix(b.tolist(), dt=qd.f64), qd.Vector(v.tolist(), dt=qd.f64)
    np.testing.assert_allclose((A + B).to_numpy(), a + b)
    np.testing.assert_allclose((A * 2 - 1).to_numpy(), a * 2 - 1)
    np.testing.assert_allclose((2 / (B * 0 + 4)).to_numpy(), 2 / (b * 0 + 4))
    np.testing.assert_allclose((A @ B).to_numpy(), a @ b)
    np.testing.assert_allclose((A @ V).to_numpy(), a @ v)
    assert V @ V == pytest.approx(v @ v)
    np.testing.assert_allclose((-A).to_numpy(), -a)
    assert (V == V).all() == 1


def test_methods():
    v, w = rng.standard_normal(3), rng.standard_normal(3)
    m = rng.standard_normal((3, 3))
    V, W, M = qd.Vector(v.tolist(), dt=qd.f64), qd.Vector(w.tolist(), dt=qd.f64), qd.Matrix(m.tolist(), dt=qd.f64)
    assert V.dot(W) == pytest.approx(v @ w)
    np.testing.assert_allclose(V.cross(W).to_numpy(), np.cross(v, w))
    assert V.norm() == pytest.approx(np.linalg.norm(v))
    np.testing.assert_allclose(V.normalized().to_numpy(), v / np.linalg.norm(v))
    np.testing.assert_allclose(M.transpose().to_numpy(), m.T)
    assert M.trace() == pytest.approx(np.trace(m))
    assert M.sum() == pytest.approx(m.sum()) and M.max() == pytest.approx(m.max())
    np.testing.assert_allclose(V.outer_product(W).to_numpy(), np.outer(v, w))
    assert M.determinant() == pytest.approx(np.linalg.det(m))
    np.testing.assert_allclose(M.inverse().to_numpy(), np.linalg.inv(m))


def test_class_constructors():
    assert qd.Matrix.zero(qd.f32, 2, 3).to_numpy().shape == (2, 3)
    assert qd.Vector.one(qd.i32, 3).to_list() == [1, 1, 1]
    assert qd.Matrix.identity(qd.f32, 2).to_list() == [[1.0, 0.0], [0.0, 1.0]]
    assert qd.Matrix.unit(3, 1).to_list() == [0, 1, 0]
    assert qd.Matrix.diag(2, 3.0).to_list() == [[3.0, 0.0], [0.0, 3.0]]
    assert qd.Matrix.rows([[1, 2], [3, 4]]).to_list() == [[1, 2], [3, 4]]
    assert qd.Matrix.cols([qd.Vector([1, 2]), qd.Vector([3, 4])]).to_list() == [[1, 3], [2, 4]]


def test_swizzles():
    v = qd.Vector([1.0, 2.0, 3.0, 4.0])
    assert v.x == 1.0 and v.w == 4.0
    assert v.zyx.to_list() == [3.0, 2.0, 1.0]
    assert v.bgr.to_list() == [3.0, 2.0, 1.0]
    v.xy = [9.0, 8.0]
    assert v.to_list() == [9.0, 8.0, 3.0, 4.0]
    with pytest.raises(qd.QuadrantsSyntaxError, match="vec2 only has"):
        qd.Vector([1.0, 2.0]).z


def test_swizzle_assignment_length_must_match():
    x = rng.random(3)
    v = qd.Vector(list(x))
    v.zx = qd.Vector([x[1], x[2]])
    assert list(v) == [x[2], x[1], x[1]]
    with pytest.raises(qd.QuadrantsRuntimeError, match="value len does not match the swizzle pattern=xy"):
        v.xy = (1.0, 2.0, 3.0)
    assert list(v) == [x[2], x[1], x[1]]  # unchanged


def test_type_objects():
    vec4f = qd.types.vector(4, qd.f32)
    mat2f = qd.types.matrix(2, 2, qd.f32)
    v = qd.Vector([1.0, 2.0, 3.0])
    assert vec4f(v, 1.0).to_list() == [1.0, 2.0, 3.0, 1.0]
    assert vec4f(0).to_list() == [0.0] * 4
    assert mat2f(1, 2, 3, 4).to_list() == [[1.0, 2.0], [3.0, 4.0]]
    assert mat2f([[1, 2], [3, 4]]).dtype == qd.f32
    with pytest.raises(qd.QuadrantsSyntaxError):
        mat2f()
    assert qd.math.vec3(1, 2, 3).dtype == qd.f32


def test_size_warning_in_python_scope():
    with pytest.warns(UserWarning, match="> 144 entries"):
        qd.Matrix([[0.0] * 13] * 12)


def test_field_and_ndarray_elements_write_back():
    f = qd.Vector.field(3, qd.f32, shape=4)
    f[1][2] = 5.0
    f[2].y = 7.0
    assert f.to_numpy()[1, 2] == 5.0 and f.to_numpy()[2, 1] == 7.0
    m = qd.Matrix.field(2, 2, qd.i32, shape=(2, 3))
    m[1, 2][0, 1] = 9
    assert m.to_numpy()[1, 2, 0, 1] == 9
    a = qd.Matrix.ndarray(2, 2, qd.f32, shape=(3,))
    a[1][1, 0] = 4.0
    assert a.to_numpy()[1, 1, 0] == 4.0
    v = qd.Vector.ndarray(3, qd.i32, shape=(2,))
    v[0].z = 3
    assert v.to_numpy().tolist() == [[0, 0, 3], [0, 0, 0]]
    assert isinstance(f[0], qd.Vector) and isinstance(m[0, 0], qd.Matrix)


def test_printing_like_numpy():
    assert str(qd.Vector([1.0, 2.0, 3.0])) == "[1. 2. 3.]"
    assert repr(qd.Matrix([[1, 2], [3, 4]])) == "[[1 2]\n [3 4]]"
    assert str(qd.Vector([True, False])) == "[ True False]"
    assert qd.Vector([1.0, 2.0]).to_numpy().dtype == np.float64
    assert qd.Vector([1, 2]).to_numpy().dtype == np.int64
    assert qd.Vector([1, 2], dt=qd.f32).to_numpy().dtype == np.float32


@pytest.mark.parametrize("op", ["<", "<=", ">", ">=", "==", "!="])
def test_comparisons_are_elementwise(op):
    a, b = rng.integers(-3, 3, 5).astype(np.float64), rng.integers(-3, 3, 5).astype(np.float64)
    A, B = qd.Vector(a.tolist()), qd.Vector(b.tolist())
    for got, want in [
        (eval(f"A {op} B"), eval(f"a {op} b")),
        (eval(f"A {op} 1"), eval(f"a {op} 1")),
        (eval(f"1 {op} A"), eval(f"1 {op} a")),
    ]:
        assert type(got) is qd.Matrix and got.to_numpy().dtype == np.bool_
        np.testing.assert_array_equal(got.to_numpy(), want)
    m = rng.standard_normal((2, 3))
    np.testing.assert_array_equal(eval(f"qd.Matrix(m) {op} 0").to_numpy(), eval(f"m {op} 0"))
    assert str(qd.Vector([1.0, 2.0, 3.0]) < qd.Vector([3.0, 2.0, 1.0])) == "[ True False False]"


@pytest.mark.parametrize("op", ["+", "-", "*", "//", "%", "<<", ">>", "&", "|", "^", "**"])
def test_integer_operators_and_in_place_forms(op):
    a = rng.integers(1, 8, 4).astype(np.int32)
    b = rng.integers(1, 4, 4).astype(np.int32)
    v = qd.Vector(a.tolist(), dt=qd.i32)
    scope = {"w": v, "qd": qd, "b": b}
    exec(f"w {op}= qd.Vector(b.tolist(), dt=qd.i32)", scope)
    w = scope["w"]
    np.testing.assert_array_equal(w.to_numpy(), eval(f"a {op} b"))
    assert w.to_numpy().dtype == np.int32 and v.to_list() == a.tolist()  # rebinds, v unchanged
    np.testing.assert_array_equal(eval(f"v {op} 2").to_numpy(), eval(f"a {op} 2"))
    np.testing.assert_array_equal(eval(f"3 {op} v").to_numpy(), eval(f"3 {op} a"))
    np.testing.assert_array_equal((~v).to_numpy(), ~a)


def test_float_in_place_division():
    a = rng.standard_normal(3)
    v = qd.Vector(a.tolist())
    v /= 2
    np.testing.assert_allclose(v.to_numpy(), a / 2)


@pytest.mark.parametrize(
    "name, ref",
    [("sin", np.sin), ("cos", np.cos), ("tan", np.tan), ("tanh", np.tanh), ("exp", np.exp),
     ("floor", np.floor), ("ceil", np.ceil), ("round", np.round), ("abs", np.abs)],
)
def test_math_functions_are_elementwise(name, ref):
    a = rng.uniform(-3, 3, (2, 3)).astype(np.float32)
    got = getattr(qd, name)(qd.Matrix(a.tolist(), dt=qd.f32))
    assert type(got) is qd.Matrix and got.to_numpy().dtype == np.float32
    np.testing.assert_allclose(got.to_numpy(), ref(a), rtol=1e-6)


def test_math_functions_on_vectors():
    a, b = rng.uniform(0.1, 1, 4), rng.uniform(0.1, 1, 4)
    A, B = qd.Vector(a.tolist()), qd.Vector(b.tolist())
    np.testing.assert_allclose(qd.sqrt(A).to_numpy(), np.sqrt(a))
    np.testing.assert_allclose(qd.log(A).to_numpy(), np.log(a))
    np.testing.assert_allclose(qd.asin(A).to_numpy(), np.arcsin(a))
    np.testing.assert_allclose(qd.acos(A).to_numpy(), np.arccos(a))
    np.testing.assert_allclose(qd.rsqrt(A).to_numpy(), 1 / np.sqrt(a))
    np.testing.assert_allclose(qd.atan2(A, B).to_numpy(), np.arctan2(a, b))
    np.testing.assert_allclose(qd.max(A, B).to_numpy(), np.maximum(a, b))
    np.testing.assert_allclose(qd.min(A, 0.5).to_numpy(), np.minimum(a, 0.5))
    np.testing.assert_allclose(qd.max(A, B, 0.5).to_numpy(), np.maximum(np.maximum(a, b), 0.5))
    np.testing.assert_allclose(qd.select(A < B, A, B).to_numpy(), np.where(a < b, a, b))
    np.testing.assert_allclose(qd.pow(A, 2).to_numpy(), a**2)
    # integers keep their type through floor/ceil/max; sqrt of integers is real
    i = qd.Vector([3, 2, 1], dt=qd.i32)
    assert qd.floor(i).to_numpy().dtype == np.int32 and qd.floor(i).to_list() == [3, 2, 1]
    assert qd.max(i, 2).to_list() == [3, 2, 2] and qd.max(i, 2).to_numpy().dtype == np.int32
    assert str(qd.cos(qd.Vector([1.0, 2.0, 3.0]))) == "[ 0.54030231 -0.41614684 -0.9899925 ]"
    assert qd.floor(qd.Vector([1.5, -1.5]), qd.i32).to_list() == [1, -2]


def test_kernel_vector_returns_print_like_numpy():
    @qd.kernel
    def vec() -> qd.types.vector(3, qd.f32):
        return qd.Vector([1.0, 2.0, 3.0])

    @qd.kernel
    def mat() -> qd.types.matrix(2, 2, qd.i32):
        return qd.Matrix([[1, 2], [3, 4]])

    v = vec()
    assert type(v) is qd.Vector and str(v) == repr(v) == "[1. 2. 3.]"
    assert v.to_numpy().dtype == np.float32
    m = mat()
    assert type(m) is qd.Matrix and str(m) == "[[1 2]\n [3 4]]"
