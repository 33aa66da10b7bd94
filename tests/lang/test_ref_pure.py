"""qd.ref(T) func parameters (passed by reference) and the deprecated @qd.pure decorator."""

import warnings

import numpy as np
import pytest

import quadrants as qd

from .helpers import rng


@qd.func
def _add_to(x: qd.ref(qd.f32), d: qd.f32):
    x += d


@qd.func
def _overwrite(x: qd.ref(qd.i32), v: qd.i32):
    x = v


@qd.real_func
def _overwrite_real(x: qd.ref(qd.i32), v: qd.i32) -> None:
    x = v


@qd.func
def _scale_vec(v: qd.ref(qd.types.vector(3, qd.f64)), s: qd.f64):
    v[0] = v[0] + 1.0
    v = v * s


def test_ref_annotation_objects():
    r = qd.ref(qd.f32)
    assert isinstance(r, qd.types.RefType) and r.tp is qd.f32
    assert qd.types.ref is qd.ref
    assert qd.types.primitive_types.ref is qd.ref


def test_ref_assignment_changes_the_callers_variable():
    @qd.kernel
    def k(a: qd.f32, d: qd.f32, v: qd.i32, w: qd.i32) -> qd.types.vector(3, qd.f32):
        y = a
        _add_to(y, d)
        z = 0
        _overwrite(z, v)
        u = 0
        _overwrite_real(u, w)
        return qd.Vector([y, z, u])

    a, d = (float(t) for t in rng.standard_normal(2).astype(np.float32))
    v, w = (int(t) for t in rng.integers(-1000, 1000, 2))
    got = k(a, d, v, w)
    np.testing.assert_allclose(got[0], np.float32(a) + np.float32(d), rtol=1e-6)
    assert got[1] == v and got[2] == w


def test_ref_to_field_and_ndarray_elements():
    n = int(rng.integers(8, 64))
    x = qd.field(qd.f32, n)
    base = rng.standard_normal(n).astype(np.float32)
    x.from_numpy(base)
    counts = np.zeros(n, dtype=np.int32)

    @qd.kernel
    def k(c: qd.types.ndarray(qd.i32, 1), d: qd.f32):
        for i in x:
            _add_to(x[i], d)
            _overwrite(c[i], i * 3)

    d = float(rng.standard_normal())
    k(counts, d)
    np.testing.assert_allclose(x.to_numpy(), base + np.float32(d), rtol=1e-6)
    np.testing.assert_array_equal(counts, np.arange(n) * 3)


def test_ref_vector_variable():
    @qd.kernel
    def k(a: qd.types.vector(3, qd.f64), s: qd.f64) -> qd.types.vector(3, qd.f64):
        v = a
        _scale_vec(v, s)
        return v

    a = rng.standard_normal(3)
    s = float(rng.standard_normal())
    expected = a.copy()
    expected[0] += 1.0
    np.testing.assert_allclose(k(a, s).to_numpy(), expected * s, rtol=1e-12)


def test_plain_parameters_stay_by_value():
    @qd.func
    def bump(x: qd.f32):
        x += 1.0

    @qd.kernel
    def k(a: qd.f32) -> qd.f32:
        y = a
        bump(y)
        return y

    assert k(2.5) == 2.5


def test_ref_errors():
    @qd.kernel
    def value_arg(a: qd.f32) -> qd.f32:
        _add_to(a + 1.0, 1.0)
        return a

    with pytest.raises(qd.QuadrantsSyntaxError, match="must be a variable"):
        value_arg(1.0)

    @qd.kernel
    def kernel_arg(a: qd.f32) -> qd.f32:
        _add_to(a, 1.0)
        return a

    with pytest.raises(qd.QuadrantsSyntaxError, match="must be a variable"):
        kernel_arg(1.0)

    @qd.kernel
    def literal_arg() -> qd.f32:
        _add_to(1.0, 1.0)
        return 0.0

    with pytest.raises(qd.QuadrantsSyntaxError, match="must be a variable"):
        literal_arg()

    @qd.kernel
    def wrong_type() -> qd.f32:
        b = 1
        _add_to(b, 1.0)
        return 0.0

    with pytest.raises(qd.QuadrantsTypeError, match="must be a f32 variable"):
        wrong_type()

    with pytest.raises(qd.QuadrantsSyntaxError, match="Invalid type annotation"):

        @qd.kernel
        def ref_kernel_param(a: qd.ref(qd.f32)):
            pass


def test_pure_marks_kernels_fastcache():
    with pytest.warns(UserWarning, match="@qd.pure is deprecated"):

        @qd.pure
        @qd.kernel
        def outer(a: qd.f32) -> qd.f32:
            return a * 2

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")

        @qd.kernel
        @qd.pure
        def inner(a: qd.f32) -> qd.f32:
            return a * 3

        def plain():
            return 1

        assert qd.pure(plain) is plain and plain.is_pure is True

    @qd.kernel
    def unmarked(a: qd.f32) -> qd.f32:
        return a

    @qd.kernel(fastcache=True)
    def cached(a: qd.f32) -> qd.f32:
        return a

    assert outer.is_pure and inner.is_pure and cached.is_pure
    assert not unmarked.is_pure
    assert outer.fastcache and inner.fastcache
    a = float(np.float32(rng.standard_normal()))
    assert outer(a) == pytest.approx(2 * a, rel=1e-6)
    assert inner(a) == pytest.approx(3 * a, rel=1e-6)
