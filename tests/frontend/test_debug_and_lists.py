"""Debug bounds checks, kernel-scope lists (comprehensions) and data-oriented methods.

Each test compiles real kernels on the selected archs and compares with NumPy.
"""

import numpy as np
import pytest

import quadrants as qd

rng = np.random.default_rng()


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4)])
def test_field_out_of_bounds_is_reported_in_debug(arch, shape):
    qd.init(arch=getattr(qd, arch), debug=True)
    f = qd.field(qd.i32, shape=shape)
    values = rng.integers(-1000, 1000, size=shape).astype(np.int32)
    f.from_numpy(values)
    ndim = len(shape)

    @qd.kernel
    def read(i: qd.i32) -> qd.i32:
        return f[(i,) * ndim] if qd.static(ndim == 1) else f[tuple([i] * ndim)]

    for i in range(min(shape)):
        assert read(i) == values[(i,) * ndim]
    with pytest.raises(qd.QuadrantsAssertionError, match="Out of bound access to a field"):
        read(max(shape))
    with pytest.raises(qd.QuadrantsAssertionError, match="test_debug_and_lists.py"):
        read(-1)


def test_ndarray_out_of_bounds_in_parallel_loop(arch):
    qd.init(arch=getattr(qd, arch), check_out_of_bound=True)

    @qd.kernel
    def write(a: qd.types.ndarray(dtype=qd.f32, ndim=1), n: qd.i32):
        for i in range(n):
            a[i] = 2.0 * i

    a = np.zeros(16, np.float32)
    write(a, 16)
    np.testing.assert_array_equal(a, 2.0 * np.arange(16, dtype=np.float32))
    with pytest.raises(qd.QuadrantsAssertionError, match="Out of bound access to an ndarray"):
        write(a, 17)


def test_no_bounds_check_without_debug(arch):
    qd.init(arch=getattr(qd, arch))
    f = qd.field(qd.i32, shape=8)

    @qd.kernel
    def read(i: qd.i32) -> qd.i32:
        return f[i]

    assert read(3) == 0  # in range; out of range is not checked (and not called here)


def test_list_comprehension_and_static_loops(arch):
    qd.init(arch=getattr(qd, arch))
    x = rng.integers(-50, 50, size=8).astype(np.int32)

    @qd.kernel
    def k(a: qd.types.ndarray(dtype=qd.i32, ndim=1), out: qd.types.ndarray(dtype=qd.i32, ndim=1)):
        for i in range(a.shape[0]):
            terms = [a[i] * j for j in range(5) if j % 2 == 1]
            s = 0
            for t in qd.static(terms):
                s += t
            out[i] = s + len(terms) * 1000

    out = np.zeros(8, np.int32)
    k(x, out)
    np.testing.assert_array_equal(out, x * (1 + 3) + 2000)


def test_data_oriented_methods_and_funcs(arch):
    qd.init(arch=getattr(qd, arch))

    @qd.data_oriented
    class Particles:
        def __init__(self, n):
            self.x = qd.field(qd.f32, shape=n)
            self.gain = 1.5

        @qd.func
        def force(self, i):
            return self.gain * i

        @qd.kernel
        def step(self, dt: qd.f32):
            for i in self.x:
                self.x[i] += self.force(i) * dt

    p = Particles(16)
    p.step(0.25)
    p.step(0.25)
    np.testing.assert_allclose(p.x.to_numpy(), 2 * 0.25 * 1.5 * np.arange(16), rtol=1e-6)
