"""@dataclasses.dataclass kernel parameters: flattened into one argument per member, so scalar
members are runtime values (no recompilation per value) and ndarray members work."""

import dataclasses

import numpy as np

import quadrants as qd

rng = np.random.default_rng()


@dataclasses.dataclass(frozen=True)
class Params:
    scale: qd.f32
    offset: qd.i32
    data: qd.types.ndarray(dtype=qd.f32, ndim=1)


@dataclasses.dataclass(frozen=True)
class Outer:
    p: Params
    out: qd.types.ndarray(dtype=qd.f32, ndim=1)


def test_scalar_and_ndarray_members(arch):
    qd.init(arch=getattr(qd, arch))

    @qd.kernel
    def k(p: Params, out: qd.types.ndarray(dtype=qd.f32, ndim=1)):
        for i in range(p.data.shape[0]):
            out[i] = p.data[i] * p.scale + p.offset

    data = rng.standard_normal(100).astype(np.float32)
    out = np.zeros(100, np.float32)
    for scale, offset in [(2.0, 3), (-0.5, 7)]:
        k(Params(scale, offset, data), out)
        np.testing.assert_allclose(out, data * np.float32(scale) + offset, rtol=1e-6)
    # Different scalar values reuse one compiled kernel.
    assert len(k._compiled) == 1


def test_nested_dataclasses(arch):
    qd.init(arch=getattr(qd, arch))

    @qd.kernel
    def k(o: Outer) -> qd.f32:
        total = 0.0
        for i in range(o.p.data.shape[0]):
            o.out[i] = o.p.data[i] + o.p.offset
            total += o.out[i]
        return total

    data = rng.integers(-10, 10, 64).astype(np.float32)
    out = np.zeros(64, np.float32)
    total = k(Outer(Params(1.0, 5, data), out))
    np.testing.assert_array_equal(out, data + 5)
    assert total == float((data + 5).sum())
