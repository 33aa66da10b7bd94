"""Vectors and matrices crossing boundaries: @qd.func arguments and results, kernel arguments
and results, fields, ndarrays (also NumPy arrays), atomics."""

import numpy as np
import pytest

import quadrants as qd

rng = np.random.default_rng()
vec3 = qd.types.vector(3, qd.f32)
mat3 = qd.types.matrix(3, 3, qd.f32)


def test_func_arguments_are_copies_and_results():
    @qd.func
    def scale(v: vec3, s: qd.f32) -> vec3:
        v *= s
        return v

    @qd.func
    def rot(m, v):
        return m @ v

    @qd.kernel
    def k(v: vec3, m: mat3) -> qd.types.vector(6, qd.f32):
        w = v
        a = scale(w, 2.0)
        b = rot(m, w)
        return qd.Vector([a[0], a[2], w[0], b[0], b[1], b[2]])

    v, m = rng.standard_normal(3), rng.standard_normal((3, 3))
    r = k(v.tolist(), qd.Matrix(m.tolist())).to_numpy()
    b = m @ v
    np.testing.assert_allclose(r, [2 * v[0], 2 * v[2], v[0], b[0], b[1], b[2]], rtol=1e-5, atol=1e-5)


def test_kernel_arguments_and_results():
    @qd.kernel
    def k(v: qd.math.vec3, m: qd.types.matrix(2, 3, qd.f32), i: qd.types.vector(2, qd.i32)) -> qd.types.matrix(2, 2, qd.f32):
        return qd.Matrix([[v[0] * m[0, 0], m[1, 2]], [qd.f32(i[0]), qd.f32(i[1])]])

    v, m = rng.standard_normal(3), rng.standard_normal((2, 3))
    r = k(qd.Vector(v.tolist()), m.tolist(), (3, -4))
    assert isinstance(r, qd.Matrix) and r.n == 2 and r.m == 2
    np.testing.assert_allclose(r.to_numpy(), [[v[0] * m[0, 0], m[1, 2]], [3, -4]], rtol=1e-5, atol=1e-5)


def test_vector_result_type():
    @qd.kernel
    def k(x: qd.f32) -> qd.types.vector(3, qd.f32):
        return qd.Vector([x, x * 2, x * 3])

    r = k(1.5)
    assert isinstance(r, qd.Vector)
    assert r.to_list() == [1.5, 3.0, 4.5]


@pytest.mark.parametrize("make", ["field", "Vector.field", "type.field"])
def test_vector_field_round_trip(make):
    n = 37
    vec3f = qd.types.vector(3, qd.f32)
    if make == "field":
        f = qd.field(vec3f, shape=(n,))
    elif make == "Vector.field":
        f = qd.Vector.field(3, qd.f32, shape=n)
    else:
        f = vec3f.field(shape=(n,))
    data = rng.standard_normal((n, 3)).astype(np.float32)
    f.from_numpy(data)
    assert f.to_numpy().shape == (n, 3)
    assert f.shape == (n,) and f.n == 3

    @qd.kernel
    def k():
        for i in f:
            f[i] = f[i] * 2.0 + qd.Vector([1.0, 0.0, 0.0])

    k()
    expect = data * 2 + [1, 0, 0]
    np.testing.assert_allclose(f.to_numpy(), expect, rtol=1e-6, atol=1e-5)
    assert f[3].to_list() == pytest.approx(expect[3].tolist())
    f[2] = [1, 2, 3]
    assert f[2].to_list() == [1.0, 2.0, 3.0]


def test_matrix_field_seed_initialize():
    vec3f = qd.types.vector(3, qd.f32)
    mat3f = qd.types.matrix(3, 3, qd.f32)
    positions = qd.field(vec3f, shape=(100,))
    rotations = qd.field(mat3f, shape=(100,))

    @qd.kernel
    def initialize(pos: qd.Template, rot: qd.Template) -> None:
        for i in range(100):
            pos[i] = qd.Vector([0.0, 0.0, 0.0])
            rot[i] = qd.Matrix.diag(3, 1.0)

    rotations.fill(5.0)
    positions.fill(1.0)
    initialize(positions, rotations)
    assert rotations.to_numpy().shape == (100, 3, 3)
    np.testing.assert_array_equal(rotations.to_numpy(), np.broadcast_to(np.eye(3), (100, 3, 3)))
    np.testing.assert_array_equal(positions.to_numpy(), 0)


def test_matrix_field_2d_and_elements():
    f = qd.Matrix.field(2, 3, qd.i32, shape=(4, 5))
    data = rng.integers(-100, 100, (4, 5, 2, 3)).astype(np.int32)
    f.from_numpy(data)

    @qd.kernel
    def k(out: qd.types.NDArray[qd.i32, 2]):
        for i, j in f:
            out[i, j] = f[i, j].sum() + f[i, j][1, 2]

    out = np.zeros((4, 5), np.int32)
    k(out)
    np.testing.assert_array_equal(out, data.sum(axis=(2, 3)) + data[..., 1, 2])
    assert isinstance(f[1, 2], qd.Matrix)
    np.testing.assert_array_equal(f[1, 2].to_numpy(), data[1, 2])


def test_transform_ndarrays():
    vec3f = qd.types.vector(3, qd.f32)
    mat3f = qd.types.matrix(3, 3, qd.f32)
    n = 100

    @qd.kernel
    def transform(
        positions: qd.types.NDArray[vec3f, 1],
        matrices: qd.types.NDArray[mat3f, 1],
        out: qd.types.NDArray[vec3f, 1],
    ) -> None:
        for i in range(n):
            out[i] = matrices[i] @ positions[i]

    p = qd.ndarray(vec3f, shape=(n,))
    m = qd.Matrix.ndarray(3, 3, qd.f32, shape=(n,))
    o = qd.Vector.ndarray(3, qd.f32, shape=(n,))
    assert p.shape == (n,) and o.to_numpy().shape == (n, 3) and m.to_numpy().shape == (n, 3, 3)
    pn = rng.standard_normal((n, 3)).astype(np.float32)
    mn = rng.standard_normal((n, 3, 3)).astype(np.float32)
    p.from_numpy(pn)
    m.from_numpy(mn)
    transform(p, m, o)
    np.testing.assert_allclose(o.to_numpy(), np.einsum("nij,nj->ni", mn.astype(np.float64), pn), rtol=1e-4, atol=1e-5)
    # NumPy arrays of shape + element shape are accepted too.
    on = np.zeros((n, 3), np.float32)
    transform(pn, mn, on)
    np.testing.assert_allclose(on, o.to_numpy())
    assert o[5].to_list() == pytest.approx(on[5].tolist())


def test_ndarray_host_access():
    a = qd.ndarray(qd.types.matrix(2, 2, qd.f32), (3,))
    a[1] = [[1, 2], [3, 4]]
    assert a[1].to_list() == [[1.0, 2.0], [3.0, 4.0]]
    a.fill(7.0)
    assert a.to_numpy().sum() == 7 * 12


def test_atomics_per_component():
    f = qd.Vector.field(3, qd.f32, shape=())
    g = qd.Vector.field(2, qd.i32, shape=4)

    @qd.kernel
    def k(n: qd.i32):
        for i in range(n):
            f[None] += qd.Vector([1.0, 2.0, 3.0])
            qd.atomic_add(f[None][0], 0.5)
            qd.atomic_add(g[i % 4], qd.Vector([1, i]))
            g[i % 4][1] += 1

    k(100)
    np.testing.assert_allclose(f.to_numpy(), [150.0, 200.0, 300.0])
    gn = g.to_numpy()
    np.testing.assert_array_equal(gn[:, 0], [25] * 4)
    np.testing.assert_array_equal(gn[:, 1], [sum(i for i in range(100) if i % 4 == r) + 25 for r in range(4)])


def test_struct_for_over_vector_ndarray():
    vec2i = qd.types.vector(2, qd.i32)

    @qd.kernel
    def k(a: qd.types.NDArray[vec2i, 2]):
        for i, j in a:
            a[i, j] = qd.Vector([i, j])

    a = qd.ndarray(vec2i, (3, 4))
    k(a)
    r = a.to_numpy()
    assert r.shape == (3, 4, 2)
    np.testing.assert_array_equal(r[..., 0], np.arange(3)[:, None] + 0 * np.arange(4))
    np.testing.assert_array_equal(r[..., 1], np.arange(4)[None, :] + 0 * np.arange(3)[:, None])


ivec2 = qd.types.vector(2, qd.i32)


def test_func_annotations_convert():
    @qd.func
    def half(v: qd.types.vector(2, qd.f32)) -> ivec2:
        return v / 2

    @qd.kernel
    def k() -> ivec2:
        return half(qd.Vector([3, 5]))

    assert k().to_list() == [1, 2]


def test_struct_result_with_vector_member():
    @qd.dataclass
    class Ray:
        origin: qd.types.vector(3, qd.f32)
        t: qd.f32

    @qd.kernel
    def k(x: qd.f32) -> Ray:
        return Ray(origin=qd.Vector([x, 2 * x, 3.0]), t=x + 1)

    r = k(1.5)
    assert r.origin.to_list() == [1.5, 3.0, 3.0] and r.t == 2.5


def test_runtime_index_updates_of_global_elements():
    f = qd.Vector.field(4, qd.i32, shape=3)

    @qd.kernel
    def k(n: qd.i32):
        for i in range(n):
            j = i % 4
            f[i % 3][j] += 1
            f[(i + 1) % 3][j] -= 0

    k(120)
    np.testing.assert_array_equal(f.to_numpy(), np.full((3, 4), 10))


def test_print_vectors(capfd):
    @qd.kernel
    def k():
        v = qd.Vector([1, 2])
        m = qd.Matrix([[1, 2], [3, 4]])
        print(v, m, qd.zero(v), qd.one(m), any(v > 1), all(v > 1))

    k()
    qd.sync()
    out = capfd.readouterr().out
    assert "[1, 2] [[1, 2], [3, 4]] [0, 0] [[1, 1], [1, 1]] 1 0" in out


def test_ndarray_element_shape_is_checked():
    @qd.kernel
    def k(a: qd.types.NDArray[vec3, 1]):
        for i in range(a.shape[0]):
            a[i] = qd.Vector([1.0, 2.0, 3.0])

    with pytest.raises(ValueError, match="elements of shape"):
        k(np.zeros((4, 4), np.float32))
    with pytest.raises(ValueError, match="elements of shape"):
        k(qd.Vector.ndarray(2, qd.f32, shape=(4,)))
    a = np.zeros((4, 3), np.float32)
    k(a)
    np.testing.assert_array_equal(a, np.tile([1, 2, 3], (4, 1)))


def test_untyped_ndarray_annotation_takes_vector_ndarrays():
    @qd.kernel
    def k(a: qd.types.ndarray(), b: qd.types.ndarray()):
        for i in range(a.shape[0]):
            b[i] = a[i] * 2.0

    a = qd.Vector.ndarray(3, qd.f32, shape=(5,))
    b = qd.Vector.ndarray(3, qd.f32, shape=(5,))
    data = rng.standard_normal((5, 3)).astype(np.float32)
    a.from_numpy(data)
    k(a, b)
    np.testing.assert_allclose(b.to_numpy(), data * 2, rtol=1e-6)
    # A plain 2-D array of the same shape is another specialization: scalar elements.

    @qd.kernel
    def s(a: qd.types.ndarray()) -> qd.f32:
        return a[1, 2]

    assert s(data) == pytest.approx(float(data[1, 2]))


def test_placed_vector_field_and_struct_field():
    f = qd.Vector.field(3, qd.f32)
    qd.root.dense(qd.i, 6).place(f)

    @qd.dataclass
    class P:
        pos: qd.types.vector(2, qd.f32)
        w: qd.f32

    s = P.field()
    qd.root.dense(qd.i, 6).place(s)

    @qd.kernel
    def k():
        for i in f:
            f[i] = qd.Vector([i, 1.0, 2.0])
            s[i].pos = f[i].xy
            s[i].w = 1.0

    k()
    assert f.shape == (6,) and f.to_numpy()[5].tolist() == [5.0, 1.0, 2.0]
    assert s.to_numpy()["pos"][4].tolist() == [4.0, 1.0]


def test_kernels_differing_only_in_element_shape_are_distinct():
    """Two kernels of the same source whose ndarray annotations differ only in the vector
    length each get their own code (the compile and offline-cache keys include it)."""

    def make(n):
        @qd.kernel
        def total(a: qd.types.NDArray[qd.types.vector(n, qd.f32), 1], out: qd.types.NDArray[qd.f32, 1]):
            for i in range(a.shape[0]):
                out[i] = a[i].sum()

        return total

    for n in (1, 2, 3):
        a = rng.standard_normal((5, n)).astype(np.float32)
        out = np.zeros(5, np.float32)
        make(n)(a, out)
        np.testing.assert_allclose(out, a.sum(axis=1), rtol=1e-6, atol=1e-6)
