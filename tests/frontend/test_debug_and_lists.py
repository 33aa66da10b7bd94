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


def test_local_matrix_out_of_bounds_in_debug(arch):
    qd.init(arch=getattr(qd, arch), debug=True)
    vals = rng.standard_normal(6).astype(np.float32)

    @qd.kernel
    def read_vec(i: qd.i32) -> qd.f32:
        v = qd.Vector([vals[0], vals[1], vals[2]])
        return v[i]  # <vec-read>

    @qd.kernel
    def read_mat(i: qd.i32, j: qd.i32) -> qd.f32:
        m = qd.Matrix([[vals[0], vals[1], vals[2]], [vals[3], vals[4], vals[5]]])
        return m[i, j]

    @qd.kernel
    def write_vec(i: qd.i32) -> qd.f32:
        v = qd.Vector([0.0, 0.0])
        v[i] = 1.0
        return v.sum()

    for i in range(3):
        assert read_vec(i) == vals[i]
    for i in range(2):
        for j in range(3):
            assert read_mat(i, j) == vals[i * 3 + j]
    assert write_vec(1) == 1.0
    with pytest.raises(qd.QuadrantsAssertionError, match=r"Out of bound access to a \[3\] matrix with index \[3\]") as ei:
        read_vec(3)
    assert "test_debug_and_lists.py" in str(ei.value)
    with pytest.raises(qd.QuadrantsAssertionError, match=r"Out of bound access to a \[2, 3\] matrix with index \[7\]"):
        read_mat(2, 1)
    with pytest.raises(qd.QuadrantsAssertionError, match=r"Out of bound access to a \[2, 3\] matrix with index \[-1\]"):
        read_mat(0, -1)
    with pytest.raises(qd.QuadrantsAssertionError, match=r"a \[2\] matrix with index \[-1\]"):
        write_vec(-1)


def test_negative_integer_exponent(arch):
    qd.init(arch=getattr(qd, arch), debug=True)

    @qd.kernel
    def power(x: qd.i32, n: qd.i32) -> qd.i32:
        return x ** n

    @qd.kernel
    def vpower(x: qd.i32, n: qd.i32) -> qd.i32:
        return (qd.Vector([x, x]) ** n).sum()

    @qd.kernel
    def fpower(x: qd.f32, n: qd.i32) -> qd.f32:
        return x**n

    base = int(rng.integers(2, 5))
    assert power(base, 3) == base**3
    assert vpower(base, 2) == 2 * base**2
    assert fpower(2.0, -1) == 0.5
    with pytest.raises(qd.QuadrantsAssertionError, match=r"Negative exponent in pow\(int, int\) is not allowed."):
        power(base, -1)
    with pytest.raises(qd.QuadrantsAssertionError, match=r"Negative exponent in pow\(int, int\) is not allowed."):
        vpower(base, -2)


def test_negative_literal_integer_exponent_is_rejected(arch):
    qd.init(arch=getattr(qd, arch))

    @qd.kernel
    def power(x: qd.i32) -> qd.i32:
        return x**-1

    with pytest.raises(RuntimeError, match=r"Negative exponent in pow\(int, int\) is not allowed."):
        power(2)


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
