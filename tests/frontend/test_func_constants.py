"""Constants passed to annotated @qd.func parameters keep their annotated type and may be used
in a later task (the func's own top-level loop)."""

import numpy as np

import quadrants as qd


def test_constant_argument_used_in_funcs_parallel_loop(arch):
    qd.init(arch=getattr(qd, arch))
    f = qd.field(qd.f64, shape=8)

    @qd.func
    def fill(v: qd.f64, n: qd.i32):
        for i in range(n):
            f[i] = v / 3

    @qd.kernel
    def k():
        fill(1, 8)

    k()
    np.testing.assert_array_equal(f.to_numpy(), np.full(8, 1 / 3))


def test_constant_argument_wraps_to_annotation(arch):
    qd.init(arch=getattr(qd, arch))

    @qd.func
    def as_u8(v: qd.u8) -> qd.i32:
        return v

    @qd.kernel
    def k() -> qd.i32:
        return as_u8(300) + as_u8(7)

    assert k() == 44 + 7


def test_rounding_with_positional_dtype(arch):
    qd.init(arch=getattr(qd, arch))

    @qd.kernel
    def k(x: qd.f32) -> qd.i32:
        return qd.floor(x, qd.i32) + qd.ceil(x, qd.i32) * 10 + qd.round(x, qd.i32) * 100

    assert k(2.5) == 2 + 30 + 300
    assert k(-2.5) == -3 - 20 - 300
