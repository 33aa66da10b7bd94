"""The linalg IR templates (quadrants/templates/linalg_*.qir) run directly as QIR kernels on the
CPU backend, on fresh random matrices and on special ones, checked against NumPy (checks.py)."""

import numpy as np
import pytest

from quadrants._core import _testing

from . import checks
from .qir_templates import TEMPLATE_DIR, run, templates_text

rng = np.random.default_rng()
BATCH = 500
TYPES = {"f32": np.float32, "f64": np.float64}


def inputs(ty, n, specials=(), batch=BATCH):
    """Random matrices rounded to ty, as float64 (what the routine really saw)."""
    a = checks.random_matrices(rng, batch, n, specials)
    return a.astype(TYPES[ty]).astype(np.float64)


def square(x, n):
    return x.reshape(len(x), n, n).astype(np.float64)


@pytest.mark.parametrize("path", sorted(TEMPLATE_DIR.glob("*.qir")), ids=lambda p: p.name)
def test_template_file_round_trips(path):
    text = path.read_text()
    assert _testing.parse_print(text, filename=path.name) == text


def test_templates_verify():
    _testing.verify(templates_text(), filename="linalg.qir")


@pytest.mark.parametrize("ty", ["f32", "f64"])
@pytest.mark.parametrize("n", [2, 3, 4])
def test_determinant(ty, n):
    specials = [np.zeros((n, n)), np.eye(n), -np.eye(n), np.ones((n, n)), np.eye(n)[::-1]]
    a = inputs(ty, n, specials)
    (d,) = run(f"linalg_det{n}", [ty], ty, [a], [], returns=True)
    checks.check_det(a, d, checks.EPS[TYPES[ty]])
    assert d[0] == 0 and d[1] == 1 and d[2] == (-1) ** n and d[3] == 0


@pytest.mark.parametrize("ty", ["i32", "i64"])
@pytest.mark.parametrize("n", [2, 3, 4])
def test_determinant_of_integers_is_exact(ty, n):
    a = rng.integers(-50, 50, (BATCH, n, n))
    (d,) = run(f"linalg_det{n}", [ty], ty, [a], [], returns=True)
    np.testing.assert_array_equal(d, np.round(np.linalg.det(a)).astype(np.int64))


def pivoting_specials(n):
    """Matrices that need row exchanges (zero leading pivots)."""
    perm = np.eye(n)[np.roll(np.arange(n), 1)]
    shifted = np.triu(np.ones((n, n)), 1) + np.tril(np.ones((n, n)), -1) * 2
    return [perm, shifted, np.diag(np.arange(1.0, n + 1)), -np.eye(n)]


@pytest.mark.parametrize("ty", ["f32", "f64"])
@pytest.mark.parametrize("n", [2, 3, 4])
def test_inverse_closed_form(ty, n):
    a = inputs(ty, n, pivoting_specials(n))
    (x,) = run(f"linalg_inverse{n}", [ty], ty, [a], [n * n])
    checks.check_inverse(a, square(x, n), checks.EPS[TYPES[ty]])


@pytest.mark.parametrize("ty", ["f32", "f64"])
@pytest.mark.parametrize("n", [2, 3, 5, 8, 12])
def test_inverse_gauss_jordan(ty, n):
    a = inputs(ty, n, pivoting_specials(n), batch=200)
    (x,) = run("linalg_inverse_gj", [ty, str(n)], ty, [a], [n * n])
    checks.check_inverse(a, square(x, n), checks.EPS[TYPES[ty]])
    np.testing.assert_array_equal(square(x, n)[0], np.linalg.inv(a[0]))  # a permutation


@pytest.mark.parametrize("ty", ["f32", "f64"])
def test_inverse_of_singular_matrix_is_not_finite(ty):
    a = np.zeros((4, 5, 5))
    a[1] = np.ones((5, 5))
    (x,) = run("linalg_inverse_gj", [ty, "5"], ty, [a], [25])
    assert not np.isfinite(x).all(axis=1).any()


@pytest.mark.parametrize("ty", ["f32", "f64"])
@pytest.mark.parametrize("n", [2, 3])
def test_solve(ty, n):
    a = inputs(ty, n, pivoting_specials(n))
    b = rng.standard_normal((BATCH, n)).astype(TYPES[ty]).astype(np.float64)
    (x,) = run("linalg_solve", [ty, str(n)], ty, [a, b], [n])
    checks.check_solve(a, b, x, checks.EPS[TYPES[ty]])


def symmetric_specials(n):
    d = np.diag(np.arange(n, 0, -1.0))
    repeated = np.diag([2.0] * (n - 1) + [-1.0]) if n > 1 else np.ones((1, 1))
    return [np.zeros((n, n)), np.eye(n), d, repeated, np.ones((n, n))]


@pytest.mark.parametrize("ty", ["f32", "f64"])
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6])
def test_sym_eig(ty, n):
    a = checks.random_matrices(rng, BATCH, n)
    a = a + a.transpose(0, 2, 1)
    for k, s in enumerate(symmetric_specials(n)):
        a[k] = s
    a = a.astype(TYPES[ty]).astype(np.float64)
    vals, vecs = run("linalg_sym_eig", [ty, str(n)], ty, [a], [n, n * n])
    checks.check_sym_eig(a, vals.astype(np.float64), square(vecs, n), checks.EPS[TYPES[ty]])


@pytest.mark.parametrize("ty", ["f32", "f64"])
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6])
def test_make_spd(ty, n):
    a = checks.random_matrices(rng, BATCH, n)
    a = (a + a.transpose(0, 2, 1)).astype(TYPES[ty]).astype(np.float64)
    (out,) = run("linalg_make_spd", [ty, str(n)], ty, [a], [n * n])
    checks.check_make_spd(a, square(out, n), checks.EPS[TYPES[ty]])


def svd_specials(n):
    rank1 = np.outer(np.arange(1.0, n + 1), np.ones(n))
    reflection = np.diag([1.0] * (n - 1) + [-1.0])
    rotation = np.eye(n)[np.roll(np.arange(n), 1)] * (1 if n == 3 else [[1], [-1]])
    return [np.zeros((n, n)), np.eye(n), reflection, rank1, rotation, np.diag(np.arange(1.0, n + 1)),
            np.diag([3.0] * n), -np.eye(n)]


@pytest.mark.parametrize("ty", ["f32", "f64"])
@pytest.mark.parametrize("n", [2, 3])
def test_svd(ty, n):
    a = inputs(ty, n, svd_specials(n))
    u, s, v = run(f"linalg_svd{n}", [ty], ty, [a], [n * n] * 3)
    checks.check_svd(a, square(u, n), square(s, n), square(v, n), checks.EPS[TYPES[ty]])


@pytest.mark.parametrize("ty", ["f32", "f64"])
@pytest.mark.parametrize("n", [2, 3])
def test_svd_of_huge_and_tiny_matrices(ty, n):
    big = 1e30 if ty == "f32" else 1e250
    a = inputs(ty, n, batch=50)
    a = np.concatenate([a / checks.mag(a)[:, None, None] * big, a / checks.mag(a)[:, None, None] / big])
    a = a.astype(TYPES[ty]).astype(np.float64)
    u, s, v = run(f"linalg_svd{n}", [ty], ty, [a], [n * n] * 3)
    checks.check_svd(a, square(u, n), square(s, n), square(v, n), checks.EPS[TYPES[ty]])


@pytest.mark.parametrize("ty", ["f32", "f64"])
@pytest.mark.parametrize("n", [2, 3])
def test_polar_decompose(ty, n):
    a = inputs(ty, n, svd_specials(n))
    r, p = run(f"linalg_polar{n}", [ty], ty, [a], [n * n] * 2)
    checks.check_polar(a, square(r, n), square(p, n), checks.EPS[TYPES[ty]])


@pytest.mark.parametrize("ty", ["f32", "f64"])
def test_eig2(ty):
    specials = [np.zeros((2, 2)), np.eye(2), [[1.0, 1.0], [0.0, 1.0]], [[0.0, -1.0], [1.0, 0.0]],
                [[2.0, 0.0], [0.0, -3.0]], [[1.0, 0.0], [5.0, 1.0]]]
    a = inputs(ty, 2, specials)
    vals, vecs = run("linalg_eig2", [ty], ty, [a], [4, 8])
    vals = vals.reshape(-1, 2, 2).astype(np.float64)
    vecs = vecs.reshape(-1, 4, 2).astype(np.float64)
    checks.check_eig2(a, vals, vecs, checks.EPS[TYPES[ty]])
    np.testing.assert_array_equal(vals[3], [[0, 1], [0, -1]])
