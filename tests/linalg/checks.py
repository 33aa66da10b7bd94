"""Checks of linalg results against NumPy, shared by the template tests (test_templates.py) and
the kernel-language tests. Every function takes a batch: arrays of shape (batch, n, n) (vectors
(batch, n)), the inputs as float64, and the machine epsilon of the precision the routine ran in;
tolerances scale with that epsilon, the size and the magnitude (or condition) of the input.
"""

import numpy as np

EPS = {np.float32: float(np.finfo(np.float32).eps), np.float64: float(np.finfo(np.float64).eps)}


def random_matrices(rng, batch, n, specials=()):
    """batch random n x n float64 matrices, standard normal at varied scales, with the given
    special matrices placed first."""
    a = rng.standard_normal((batch, n, n)) * 10.0 ** rng.uniform(-3, 3, (batch, 1, 1))
    for k, s in enumerate(specials):
        a[k] = s
    return a


def close(got, want, tol, what):
    """Every element of got within tol (broadcast per batch entry) of want."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    err = np.abs(got - want)
    tol = np.broadcast_to(np.reshape(tol, np.shape(tol) + (1,) * (err.ndim - np.ndim(tol))), err.shape)
    bad = ~(err <= tol)
    if bad.any():
        k = np.argwhere(bad)[0]
        raise AssertionError(
            f"{what}: {bad.sum()} elements off, first at {tuple(k)}: got {got[tuple(k)]!r}, "
            f"want {want[tuple(k)]!r} (tol {tol[tuple(k)]:.3g})"
        )


def mag(a):
    """Largest |entry| per batch entry (at least the smallest normal, for all-zero inputs)."""
    return np.maximum(np.abs(a).reshape(len(a), -1).max(axis=1), 1e-300)


def eye_like(a):
    return np.broadcast_to(np.eye(a.shape[-1]), a.shape)


def check_orthogonal(q, eps, what):
    n = q.shape[-1]
    close(q.transpose(0, 2, 1) @ q, eye_like(q), 40 * n * eps, what + " orthogonal")


def check_svd(a, u, s, v, eps):
    """A = U S V^T, U and V rotations, S diagonal with s0 >= s1 >= |s2| as the spec says."""
    n = a.shape[-1]
    m = mag(a)
    tol = 60 * n * eps * m
    close(u @ s @ v.transpose(0, 2, 1), a, tol, "U S V^T")
    check_orthogonal(u, eps, "U")
    check_orthogonal(v, eps, "V")
    close(np.linalg.det(u), 1.0, 40 * n * eps, "det U")
    close(np.linalg.det(v), 1.0, 40 * n * eps, "det V")
    sig = np.diagonal(s, axis1=1, axis2=2)
    off = s - sig[:, :, None] * np.eye(n)
    assert (off == 0).all(), "S must be diagonal"
    close(np.abs(sig), np.linalg.svd(a, compute_uv=False), tol, "singular values")
    assert (sig[:, :-1] >= -tol[:, None]).all(), "all but the last singular value >= 0"
    assert (np.diff(sig, axis=1) <= tol[:, None]).all(), "singular values descending"
    sign = np.linalg.slogdet(a)[0]
    clear = np.abs(sig[:, -1]) > tol
    assert (np.sign(sig[clear, -1]) == sign[clear]).all(), "sign of det A on s[-1]"


def check_polar(a, r, p, eps):
    """A = R S with R orthogonal and S symmetric."""
    n = a.shape[-1]
    m = mag(a)
    close(r @ p, a, 80 * n * eps * m, "R S")
    check_orthogonal(r, eps, "R")
    close(p, p.transpose(0, 2, 1), 40 * n * eps * m, "S symmetric")


def check_sym_eig(a, vals, vecs, eps):
    """Ascending eigenvalues, unit eigenvector columns, A V = V diag(vals)."""
    n = a.shape[-1]
    m = mag(a)
    tol = 40 * n * eps * m
    assert (np.diff(vals, axis=1) >= 0).all(), "eigenvalues ascending"
    close(vals, np.linalg.eigvalsh(a), tol, "eigenvalues")
    close(a @ vecs, vecs * vals[:, None, :], tol, "A V = V diag(vals)")
    check_orthogonal(vecs, eps, "eigenvectors")


def make_spd_reference(a):
    w, q = np.linalg.eigh(a)
    return (q * np.maximum(w, 0)[:, None, :]) @ q.transpose(0, 2, 1)


def check_make_spd(a, out, eps):
    n = a.shape[-1]
    close(out, make_spd_reference(a), 60 * n * eps * mag(a), "make_spd")


def check_eig2(a, vals, vecs, eps):
    """vals (batch, 2, 2) rows (re, im); vecs (batch, 4, 2) unit complex columns, rows (re, im)
    per component; A v = lambda v; the larger real eigenvalue (or positive imaginary part) first."""
    m = mag(a)
    lam = vals[:, :, 0] + 1j * vals[:, :, 1]
    vc = vecs[:, 0::2, :] + 1j * vecs[:, 1::2, :]
    tol = 40 * eps * m
    close(lam.sum(axis=1).real, np.trace(a, axis1=1, axis2=2), tol, "sum of eigenvalues")
    close(np.abs(lam.prod(axis=1) - np.linalg.det(a)), 0, 40 * eps * m * m, "product of eigenvalues")
    close(np.linalg.norm(vc, axis=1), 1.0, 20 * eps, "unit eigenvectors")
    close(np.abs(a @ vc - vc * lam[:, None, :]), 0, 200 * eps * m[:, None, None], "A v = lambda v")
    real = vals[:, :, 1] == 0
    both_real = real.all(axis=1)
    assert (vals[both_real, 0, 0] >= vals[both_real, 1, 0]).all(), "larger real eigenvalue first"
    cplx = ~both_real
    assert (vals[cplx, 0, 1] > 0).all() and (vals[cplx, 1, 1] == -vals[cplx, 0, 1]).all()
    assert (vals[cplx, 0, 0] == vals[cplx, 1, 0]).all(), "conjugate pair"


def cond(a):
    return np.linalg.cond(a)


def check_inverse(a, x, eps):
    """X close to inv(A), relative to cond(A)."""
    n = a.shape[-1]
    ref = np.linalg.inv(a)
    close(x, ref, 20 * n * eps * cond(a) * mag(ref), "inverse")


def check_solve(a, b, x, eps):
    n = a.shape[-1]
    ref = np.linalg.solve(a, b[..., None])[..., 0]
    tol = 20 * n * eps * cond(a) * np.maximum(np.abs(ref).max(axis=1), 1e-300)
    close(x, ref, tol, "solve")


def check_det(a, d, eps):
    """Within n eps times the Hadamard bound (product of the row norms)."""
    n = a.shape[-1]
    bound = np.prod(np.linalg.norm(a, axis=2), axis=1)
    close(d, np.linalg.det(a), 20 * n * eps * bound, "determinant")
