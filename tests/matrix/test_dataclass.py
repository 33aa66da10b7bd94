"""Packed vector/matrix members of qd.types.struct / @qd.dataclass."""

import numpy as np
import pytest

import quadrants as qd

rng = np.random.default_rng()


@qd.dataclass
class Particle:
    pos: qd.math.vec3
    vel: qd.types.vector(3, qd.f32)
    rot: qd.types.matrix(2, 2, qd.f32)
    mass: qd.f32


def test_dataclass_vector_members_in_kernels():
    @qd.func
    def step(p: Particle, dt: qd.f32) -> Particle:
        q = p
        q.pos += q.vel * dt
        q.rot = q.rot @ q.rot
        return q

    @qd.kernel
    def k(x: qd.f32) -> qd.types.vector(4, qd.f32):
        p = Particle(pos=qd.Vector([1.0, 2.0, 3.0]), vel=[x, 0.0, 1.0], mass=2.0)
        p.rot = qd.Matrix([[1.0, 1.0], [0.0, 1.0]])
        q = step(p, 0.5)
        return qd.Vector([q.pos.x, q.pos[2], q.rot[0, 1], p.mass + Particle().vel.sum()])

    x = float(rng.standard_normal())
    np.testing.assert_allclose(k(x).to_numpy(), [1 + 0.5 * x, 3.5, 2.0, 2.0], rtol=1e-6, atol=1e-5)


def test_dataclass_with_vector_members_as_kernel_argument():
    @qd.kernel
    def k(p: Particle) -> qd.f32:
        return p.pos.dot(p.vel) + p.rot.trace() + p.mass

    p = Particle(pos=[1.0, 2.0, 3.0], vel=[4.0, 5.0, 6.0], rot=[[1.0, 0.0], [0.0, 2.0]], mass=0.5)
    assert k(p) == pytest.approx(32 + 3 + 0.5)


def test_struct_field_with_vector_members():
    f = Particle.field(shape=8)

    @qd.kernel
    def k():
        for i in f:
            f[i].pos = qd.Vector([i, 2 * i, 3 * i])
            f[i].vel += 1.0
            f[i].mass = f[i].pos.sum()

    k()
    d = f.to_numpy()
    np.testing.assert_allclose(d["pos"], np.arange(8)[:, None] * [1, 2, 3])
    np.testing.assert_allclose(d["vel"], np.ones((8, 3)))
    np.testing.assert_allclose(d["mass"], np.arange(8) * 6)


@qd.dataclass
class Body:
    x: qd.types.vector(2, qd.f32)
    v: qd.types.vector(2, qd.f32)

    @qd.func
    def step(self, dt: qd.f32):
        self.x += self.v * dt
        self.v.y -= 9.8 * dt


def test_method_updates_vector_members_in_place():
    @qd.kernel
    def k(n: qd.i32) -> qd.types.vector(4, qd.f32):
        b = Body(x=[0.0, 0.0], v=qd.Vector([1.0, 5.0]))
        qd.loop_config(serialize=True)  # a top-level loop is parallel otherwise
        for _ in range(n):
            b.step(0.1)
        return qd.Vector([b.x.x, b.x.y, b.v[0], b.v[1]])

    x, v = np.zeros(2), np.array([1.0, 5.0])
    for _ in range(7):
        x += v * 0.1
        v[1] -= 9.8 * 0.1
    np.testing.assert_allclose(k(7).to_numpy(), np.concatenate([x, v]), rtol=1e-5, atol=1e-5)


def test_list_comprehension_and_repetition_constructors():
    @qd.kernel
    def k(s: qd.f32) -> qd.types.vector(4, qd.f32):
        a = qd.Vector([s * i for i in range(4)])
        b = qd.Vector([1.0] * 4)
        return a + b

    np.testing.assert_allclose(k(2.0).to_numpy(), [1, 3, 5, 7])
