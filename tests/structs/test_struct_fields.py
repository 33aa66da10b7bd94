"""Spec 1.4: struct fields (MyStruct.field, qd.Struct.field, qd.field(MyStruct)): element access
in kernels and in Python scope, methods on elements, struct-for, to_numpy/from_numpy dicts, fill,
copy_from, layouts."""

import numpy as np
import pytest

import quadrants as qd

from .helpers import rng


@qd.dataclass
class Inner:
    x: qd.i32
    y: qd.f64


@qd.dataclass
class Body:
    pos: qd.f32
    vel: qd.f32
    inner: Inner

    @qd.func
    def step(self, dt):
        self.pos += self.vel * dt
        self.inner.x += 1

    @qd.func
    def energy(self):
        return 0.5 * self.vel * self.vel

    def momentum(self):
        return self.vel * 2


def random_body_data(shape):
    return {
        "pos": rng.standard_normal(shape).astype(np.float32),
        "vel": rng.standard_normal(shape).astype(np.float32),
        "inner": {
            "x": rng.integers(-1000, 1000, size=shape).astype(np.int32),
            "y": rng.standard_normal(shape),
        },
    }


def assert_dict_equal(a, b):
    assert a.keys() == b.keys()
    for key in a:
        if isinstance(a[key], dict):
            assert_dict_equal(a[key], b[key])
        else:
            np.testing.assert_array_equal(a[key], b[key])


@pytest.mark.parametrize("layout", [qd.Layout.AOS, qd.Layout.SOA])
def test_from_numpy_kernel_methods_to_numpy(layout):
    n = 1000
    f = Body.field(shape=n, layout=layout)
    data = random_body_data(n)
    f.from_numpy(data)
    energy = qd.field(qd.f32, shape=n)

    @qd.kernel
    def k(dt: qd.f32):
        for i in f:
            energy[i] = f[i].energy()
            f[i].step(dt)
            f[i].inner.y = f[i].inner.y * 2 + f[i].inner.x

    k(0.5)
    f32 = np.float32
    got = f.to_numpy()
    np.testing.assert_array_equal(energy.to_numpy(), f32(0.5) * data["vel"] * data["vel"])
    np.testing.assert_array_equal(got["pos"], data["pos"] + data["vel"] * f32(0.5))
    np.testing.assert_array_equal(got["vel"], data["vel"])
    np.testing.assert_array_equal(got["inner"]["x"], data["inner"]["x"] + 1)
    np.testing.assert_allclose(  # a fused multiply-add may round once
        got["inner"]["y"], data["inner"]["y"] * 2 + data["inner"]["x"] + 1, rtol=1e-15, atol=1e-15
    )


def test_whole_element_copies_between_fields_and_variables():
    n = 64
    a = Body.field(shape=n)
    b = qd.field(Body, shape=n)
    data = random_body_data(n)
    a.from_numpy(data)

    @qd.kernel
    def k():
        for i in range(n):
            tmp = a[i]  # a copy: writing it leaves a[i] alone
            tmp.vel = 0.0
            b[i] = a[(i + 1) % n]
            b[i].vel = tmp.vel + b[i].vel

    k()
    shifted = {
        "pos": np.roll(data["pos"], -1),
        "vel": np.roll(data["vel"], -1),
        "inner": {key: np.roll(value, -1) for key, value in data["inner"].items()},
    }
    assert_dict_equal(a.to_numpy(), data)
    assert_dict_equal(b.to_numpy(), shifted)


def test_python_scope_element_access():
    f = Body.field(shape=(3, 4))
    assert f.shape == (3, 4)
    f[1, 2].pos = 1.5
    f[1, 2].inner.x = 7
    f[2, 3] = Body(2.0, 3.0, Inner(4, 0.25))
    f[0, 0] = {"vel": 9.0}
    assert f[1, 2].pos == 1.5 and f[1, 2].inner.x == 7
    assert f[2, 3].to_dict() == {"pos": 2.0, "vel": 3.0, "inner": {"x": 4, "y": 0.25}}
    assert f[0, 0].vel == 9.0
    assert f[2, 3].momentum() == 6.0
    assert f.pos[1, 2] == 1.5  # member fields
    data = f.to_numpy()
    assert data["pos"].shape == (3, 4) and data["inner"]["x"][1, 2] == 7


def test_fill_and_copy_from():
    a = Body.field(shape=10)
    b = Body.field(shape=10)
    a.fill(3)
    got = a.to_numpy()
    assert (got["pos"] == 3).all() and (got["inner"]["x"] == 3).all() and (got["inner"]["y"] == 3).all()
    data = random_body_data(10)
    b.from_numpy(data)
    a.copy_from(b)
    assert_dict_equal(a.to_numpy(), data)


def test_struct_field_from_dict_and_offset():
    f = qd.Struct.field({"a": qd.i32, "b": qd.f64}, shape=(4,), offset=(10,))
    values = rng.integers(-100, 100, size=4).astype(np.int32)

    @qd.kernel
    def k():
        for i in f:
            f[i].b = f[i].a * 0.5 + i

    f.a.from_numpy(values)
    k()
    np.testing.assert_array_equal(f.to_numpy()["b"], values * 0.5 + np.arange(10, 14))
    assert f[12].a == values[2]


def test_placed_struct_field_2d():
    f = Body.field()
    qd.root.dense(qd.ij, (5, 6)).place(f)
    assert f.shape == (5, 6)

    @qd.kernel
    def k():
        for i, j in f:
            f[i, j].inner.x = i * 10 + j

    k()
    i, j = np.indices((5, 6))
    np.testing.assert_array_equal(f.to_numpy()["inner"]["x"], i * 10 + j)


def test_struct_field_as_template_argument():
    f = Body.field(shape=100)
    data = random_body_data(100)
    f.from_numpy(data)

    @qd.kernel
    def total(g: qd.template()) -> qd.f64:
        s = 0.0
        for i in g:
            s += g[i].inner.y
        return s

    np.testing.assert_allclose(total(f), data["inner"]["y"].astype(np.float32).sum(), rtol=1e-4)


def test_from_numpy_missing_member():
    f = Body.field(shape=3)
    with pytest.raises(ValueError, match="missing members"):
        f.from_numpy({"pos": np.zeros(3)})
