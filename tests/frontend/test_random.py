"""qd.random / qd.randn: ranges, distribution, per-launch freshness and seeding."""

import numpy as np
import pytest

import quadrants as qd


def _draw(arch, seed, n, dtype=qd.f32):
    qd.init(arch=getattr(qd, arch), random_seed=seed)

    @qd.kernel
    def k(a: qd.types.ndarray(ndim=1)):
        for i in range(a.shape[0]):
            a[i] = qd.random(dtype)

    a = np.zeros(n, dtype.np_dtype)
    k(a)
    return a, k


@pytest.mark.parametrize("dtype", [qd.f32, qd.f64])
def test_uniform_floats(arch, dtype):
    n = 1 << 18
    a, _ = _draw(arch, 0, n, dtype)
    assert a.min() >= 0.0 and a.max() < 1.0
    # Mean and variance of U[0, 1) within 6 standard errors.
    assert abs(a.mean() - 0.5) < 6 * np.sqrt(1 / 12 / n)
    assert abs(a.var() - 1 / 12) < 6 * np.sqrt(1 / 180 / n)
    hist, _ = np.histogram(a, bins=16, range=(0, 1))
    expected = n / 16
    assert np.all(np.abs(hist - expected) < 6 * np.sqrt(expected))


def test_integers_cover_the_range(arch):
    a, _ = _draw(arch, 3, 1 << 16, qd.i32)
    assert (a < 0).mean() == pytest.approx(0.5, abs=0.02)
    assert len(np.unique(a)) > 0.99 * a.size
    b, _ = _draw(arch, 3, 1 << 16, qd.u8)
    assert b.min() == 0 and b.max() == 255


def test_normal(arch):
    qd.init(arch=getattr(qd, arch))

    @qd.kernel
    def k(a: qd.types.ndarray(dtype=qd.f64, ndim=1)):
        for i in range(a.shape[0]):
            a[i] = qd.randn(qd.f64)

    n = 1 << 18
    a = np.zeros(n)
    k(a)
    assert abs(a.mean()) < 6 / np.sqrt(n)
    assert abs(a.std() - 1) < 6 / np.sqrt(2 * n)
    assert np.all(np.isfinite(a))


def test_new_numbers_every_launch_and_seed_repeats(arch):
    a, k = _draw(arch, 11, 4096)
    b = np.zeros_like(a)
    k(b)
    assert (a != b).mean() > 0.99
    c, _ = _draw(arch, 11, 4096)
    np.testing.assert_array_equal(a, c)
    d, _ = _draw(arch, 12, 4096)
    assert (a != d).mean() > 0.99


def test_monte_carlo_pi_in_serial_and_parallel(arch):
    qd.init(arch=getattr(qd, arch))

    @qd.kernel
    def estimate(n: qd.i32) -> qd.f64:
        hits = 0
        for i in range(n):
            x = qd.random(qd.f64)
            y = qd.random(qd.f64)
            if x * x + y * y < 1.0:
                hits += 1
        return 4.0 * hits / n

    n = 1 << 20
    assert estimate(n) == pytest.approx(np.pi, abs=6 * np.sqrt(np.pi * (4 - np.pi) / n))
