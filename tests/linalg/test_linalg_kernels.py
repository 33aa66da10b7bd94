"""Per-thread linear algebra in kernels (qd.svd, qd.polar_decompose, qd.eig, qd.sym_eig,
qd.make_spd, qd.solve, Matrix.determinant/inverse): fresh random matrices, one per thread,
checked against NumPy with the tolerances of checks.py; the size errors of spec 1.6."""

import warnings

import numpy as np
import pytest

import quadrants as qd

from . import checks

rng = np.random.default_rng()
BATCH = 64
DTYPES = {"f32": (qd.f32, np.float32), "f64": (qd.f64, np.float64)}


@pytest.fixture(autouse=True)
def qd_arch(arch):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        qd.init(arch=getattr(qd, arch))
    yield arch
    qd.reset()


def mat(n, m, dt):
    return qd.types.ndarray(qd.types.matrix(n, m, dt), 1)


def vec(n, dt):
    return qd.types.ndarray(qd.types.vector(n, dt), 1)


def inputs(n, np_dt, batch=BATCH, specials=()):
    """Random matrices rounded to the precision the kernel sees, and that rounding as float64."""
    a = checks.random_matrices(rng, batch, n, specials).astype(np_dt)
    return a, a.astype(np.float64)


def well_conditioned(n, np_dt, batch=BATCH):
    a = rng.standard_normal((batch, n, n)) + n * np.eye(n) * rng.choice([-1, 1], (batch, 1, 1))
    a = a.astype(np_dt)
    return a, a.astype(np.float64)


@pytest.mark.parametrize("ty", DTYPES)
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_determinant(ty, n):
    dt, np_dt = DTYPES[ty]

    @qd.kernel
    def det(a: mat(n, n, dt), out: qd.types.ndarray(dt, 1)):
        for i in range(a.shape[0]):
            out[i] = a[i].determinant()

    a, a64 = inputs(n, np_dt, specials=[np.zeros((n, n)), np.eye(n), np.ones((n, n))])
    out = np.zeros(BATCH, np_dt)
    det(a, out)
    checks.check_det(a64, out.astype(np.float64), checks.EPS[np_dt])


def test_determinant_of_integer_matrices():
    @qd.kernel
    def det(a: mat(3, 3, qd.i32), out: qd.types.ndarray(qd.i32, 1)):
        for i in range(a.shape[0]):
            out[i] = a[i].determinant()

    a = rng.integers(-9, 10, (BATCH, 3, 3)).astype(np.int32)
    out = np.zeros(BATCH, np.int32)
    det(a, out)
    np.testing.assert_array_equal(out, np.round(np.linalg.det(a.astype(np.float64))).astype(np.int32))


@pytest.mark.parametrize("ty", DTYPES)
@pytest.mark.parametrize("n", list(range(1, 13)))
def test_inverse(ty, n):
    dt, np_dt = DTYPES[ty]

    @qd.kernel
    def inv(a: mat(n, n, dt), out: mat(n, n, dt)):
        for i in range(a.shape[0]):
            out[i] = a[i].inverse()

    a, a64 = well_conditioned(n, np_dt)
    out = np.zeros_like(a)
    inv(a, out)
    checks.check_inverse(a64, out.astype(np.float64), checks.EPS[np_dt])


@pytest.mark.parametrize("ty", DTYPES)
@pytest.mark.parametrize("n", [2, 3])
def test_solve(ty, n):
    dt, np_dt = DTYPES[ty]

    @qd.kernel
    def solve(a: mat(n, n, dt), b: vec(n, dt), x: vec(n, dt)):
        for i in range(a.shape[0]):
            x[i] = qd.solve(a[i], b[i], dt)

    a, a64 = well_conditioned(n, np_dt)
    b = rng.standard_normal((BATCH, n)).astype(np_dt)
    x = np.zeros_like(b)
    solve(a, b, x)
    checks.check_solve(a64, b.astype(np.float64), x.astype(np.float64), checks.EPS[np_dt])


@pytest.mark.parametrize("ty", DTYPES)
@pytest.mark.parametrize("n", [2, 3])
def test_svd_and_polar(ty, n):
    dt, np_dt = DTYPES[ty]

    @qd.kernel
    def decompose(a: mat(n, n, dt), u: mat(n, n, dt), s: mat(n, n, dt), v: mat(n, n, dt),
                  r: mat(n, n, dt), p: mat(n, n, dt)):
        for i in range(a.shape[0]):
            U, S, V = qd.svd(a[i], dt)
            u[i], s[i], v[i] = U, S, V
            R, P = qd.polar_decompose(a[i], dt=dt)
            r[i] = R
            p[i] = P

    a, a64 = inputs(n, np_dt, specials=[np.eye(n), -np.eye(n), np.diag(np.arange(1.0, n + 1))])
    u, s, v, r, p = (np.zeros_like(a) for _ in range(5))
    decompose(a, u, s, v, r, p)
    eps = checks.EPS[np_dt]
    checks.check_svd(a64, u.astype(np.float64), s.astype(np.float64), v.astype(np.float64), eps)
    checks.check_polar(a64, r.astype(np.float64), p.astype(np.float64), eps)


@pytest.mark.parametrize("ty", DTYPES)
def test_eig(ty):
    dt, np_dt = DTYPES[ty]

    @qd.kernel
    def eig(a: mat(2, 2, dt), vals: mat(2, 2, dt), vecs: mat(4, 2, dt)):
        for i in range(a.shape[0]):
            w, q = qd.eig(a[i], dt)
            vals[i] = w
            vecs[i] = q

    a = rng.standard_normal((BATCH, 2, 2)).astype(np_dt)
    vals = np.zeros((BATCH, 2, 2), np_dt)
    vecs = np.zeros((BATCH, 4, 2), np_dt)
    eig(a, vals, vecs)
    checks.check_eig2(a.astype(np.float64), vals.astype(np.float64), vecs.astype(np.float64),
                      checks.EPS[np_dt])


@pytest.mark.parametrize("ty", DTYPES)
@pytest.mark.parametrize("n", list(range(1, 7)))
def test_sym_eig_and_make_spd(ty, n):
    dt, np_dt = DTYPES[ty]

    @qd.kernel
    def eigh(a: mat(n, n, dt), vals: vec(n, dt), vecs: mat(n, n, dt), spd: mat(n, n, dt)):
        for i in range(a.shape[0]):
            w, q = qd.sym_eig(a[i], dt)
            vals[i] = w
            vecs[i] = q
            spd[i] = qd.make_spd(a[i], dt)

    a = rng.standard_normal((BATCH, n, n))
    a = (a + a.transpose(0, 2, 1)).astype(np_dt)
    vals = np.zeros((BATCH, n), np_dt)
    vecs, spd = np.zeros_like(a), np.zeros_like(a)
    eigh(a, vals, vecs, spd)
    a64, eps = a.astype(np.float64), checks.EPS[np_dt]
    checks.check_sym_eig(a64, vals.astype(np.float64), vecs.astype(np.float64), eps)
    checks.check_make_spd(a64, spd.astype(np.float64), eps)


def test_results_in_dt():
    """f32 input, f64 computation: the results are f64 matrices."""

    @qd.kernel
    def k(a: mat(3, 3, qd.f32), x: vec(3, qd.f64)):
        for i in range(a.shape[0]):
            x[i] = qd.solve(a[i], qd.Vector([1.0, 2.0, 3.0], dt=qd.f32), dt=qd.f64)

    a, a64 = well_conditioned(3, np.float32)
    x = np.zeros((BATCH, 3), np.float64)
    k(a, x)
    b = np.broadcast_to([1.0, 2.0, 3.0], (BATCH, 3))
    checks.check_solve(a64, b, x, checks.EPS[np.float64])


@pytest.mark.parametrize(
    "which, n, message",
    [
        ("svd", 4, "SVD only supports 2×2 and 3×3 matrices."),
        ("polar_decompose", 4, "Polar decomposition only supports 2×2 and 3×3 matrices."),
        ("eig", 3, "Eigen solver only supports 2×2 matrices."),
        ("sym_eig", 7, "Symmetric eigen solver currently supports sizes up to 6×6."),
        ("make_spd", 7, "Symmetric eigen solver currently supports sizes up to 6×6."),
        ("solve", 4, "Solver only supports 2×2 and 3×3 matrices."),
    ],
)
def test_size_errors(which, n, message):
    @qd.kernel
    def k(a: mat(n, n, qd.f32)):
        for i in range(a.shape[0]):
            m = a[i]
            if qd.static(which == "solve"):
                qd.solve(m, qd.Vector([1.0] * n))
            else:
                getattr(qd, which)(m)  # the line the error names

    with pytest.raises(qd.QuadrantsCompilationError, match=message.replace(".", r"\.")) as info:
        k(np.zeros((2, n, n), np.float32))
    assert "the line the error names" in str(info.value) or "qd.solve(m" in str(info.value)


def test_python_scope_is_an_error():
    with pytest.raises(qd.QuadrantsSyntaxError, match="inside Quadrants kernels"):
        qd.svd(qd.Matrix([[1.0, 0.0], [0.0, 1.0]]))


def test_cuda_code_keeps_the_matrices_in_registers(arch, monkeypatch):
    """The PTX of a kernel running a 3x3 SVD, a 3x3 inverse, a 6x6 symmetric eigen decomposition
    and a 6x6 inverse (generated without a GPU from the kernel's final QIR) assembles with
    ptxas for sm_90 with no stack frame and no spills."""
    import os
    import re
    import subprocess

    from quadrants import _runtime
    from quadrants._core import _testing
    from quadrants._toolkit import find_ptxas

    if arch != "cpu":
        pytest.skip("PTX from the CPU compile's QIR")
    ptxas = find_ptxas()
    if ptxas is None:
        pytest.skip("ptxas (CUDA toolkit) is not installed")
    original = _runtime.compile_options
    monkeypatch.setattr(_runtime, "compile_options", lambda: dict(original(), keep_qir=1))

    @qd.kernel
    def k(a: mat(3, 3, qd.f32), b: mat(6, 6, qd.f32)):
        for i in range(a.shape[0]):
            U, S, V = qd.svd(a[i])
            a[i] = U @ S @ V.transpose() + a[i].inverse()
            w, Q = qd.sym_eig(b[i])
            b[i] = Q @ qd.Matrix.diag(6, w.sum()) @ Q.transpose() + b[i].inverse()

    a, _ = well_conditioned(3, np.float32, 4)
    b, _ = well_conditioned(6, np.float32, 4)
    k(a, b)
    qir = next(item.qir for entry in k._compiled.values()
               for item in (entry if isinstance(entry, tuple) else (entry,))
               if type(item).__name__ == "CompiledKernel")
    ptx = _testing.qir_to_ptx(qir, re.search(r"kernel @([\w.$]+)", qir).group(1))["ptx"]
    info = subprocess.run([ptxas, "-v", "-arch=sm_90", "-", "-o", os.devnull], input=ptx,
                          capture_output=True, text=True, check=True).stderr
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in info, info
