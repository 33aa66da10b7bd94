"""qd.simt.Tile16x16 / Tile32x32: register tiles of N rows, one per lane, in kernels (on the CPU
under cpu_simt): eye/zeros, loads and stores through slices of fields, ndarrays and shared
arrays (2-D, 3-D with a batch index, partial tiles), outer-product updates, cholesky_ and
solve_triangular_, checked against NumPy in float64; and the errors of misuse."""

import numpy as np
import pytest

import quadrants as qd

rng = np.random.default_rng()


def spd(batch, n, dtype):
    r = rng.standard_normal((batch, n, n))
    return (r @ r.transpose(0, 2, 1) + n * np.eye(n)).astype(dtype)


TILES = [(16, qd.f32, np.float32, 2e-5), (16, qd.f64, np.float64, 1e-12),
         (32, qd.f32, np.float32, 5e-5)]


@pytest.mark.parametrize("n, dt, np_dt, tol", TILES)
def test_cholesky_and_solve(n, dt, np_dt, tol):
    tile = qd.simt.Tile16x16 if n == 16 else qd.simt.Tile32x32

    @qd.kernel
    def k(a: qd.types.ndarray(dt, 3), b: qd.types.ndarray(dt, 3), l: qd.types.ndarray(dt, 3),
          x: qd.types.ndarray(dt, 3)):
        qd.loop_config(block_dim=n)
        for idx in range(a.shape[0] * n):
            env = idx // n
            t = tile.zeros(dtype=dt)
            t[:] = a[env, 0:n, 0:n]
            t.cholesky_(1e-30)
            l[env, 0:n, 0:n] = t
            rhs = tile.zeros(dtype=dt)
            rhs[:] = b[env, 0:n, 0:n]
            t.solve_triangular_(rhs)
            x[env, 0:n, 0:n] = rhs

    batch = 3
    a = spd(batch, n, np_dt)
    b = rng.standard_normal((batch, n, n)).astype(np_dt)
    l = np.zeros_like(a)
    x = np.zeros_like(b)
    k(a, b, l, x)
    ref = np.linalg.cholesky(a.astype(np.float64))
    got = np.tril(l.astype(np.float64))
    scale = np.abs(ref).max()
    np.testing.assert_allclose(got, ref, atol=tol * scale * n, rtol=0)
    want = np.linalg.solve(ref, b.astype(np.float64).transpose(0, 2, 1)).transpose(0, 2, 1)
    np.testing.assert_allclose(x, want, atol=tol * np.abs(want).max() * n * 10, rtol=0)


def test_partial_tiles_eye_and_shared_memory():
    """A 16 x 16 tile over a 10 x 12 corner of a field: rows and columns past the slice or the
    array keep the identity of eye(); stores write only the slice; a SharedArray round trip."""
    f = qd.field(qd.f32, shape=(10, 12))
    out = qd.field(qd.f32, shape=(16, 16))
    g = qd.field(qd.f32, shape=(10, 12))

    @qd.kernel
    def k():
        qd.loop_config(block_dim=16)
        for i in range(16):
            t = qd.simt.Tile16x16.eye(dtype=qd.f32)
            t[:] = f[2:16, 3:9]
            s = qd.simt.block.SharedArray((16, 16), qd.f32)
            s[0:16, 0:16] = t
            u = qd.simt.Tile16x16.zeros()
            u[:] = s[0:16, 0:16]
            out[0:16, 0:16] = u
            g[2:16, 3:9] = t

    data = rng.standard_normal((10, 12)).astype(np.float32)
    f.from_numpy(data)
    k()
    want = np.eye(16, dtype=np.float32)
    want[:8, :6] = data[2:10, 3:9]
    np.testing.assert_array_equal(out.to_numpy(), want)
    g_want = np.zeros((10, 12), np.float32)
    g_want[2:10, 3:9] = data[2:10, 3:9]
    np.testing.assert_array_equal(g.to_numpy(), g_want)


def test_outer_updates_with_columns():
    """t -= qd.outer(u, v) with column slices of a 3-D array (the same column twice too)."""

    @qd.kernel
    def k(a: qd.types.ndarray(qd.f64, 3), out: qd.types.ndarray(qd.f64, 3)):
        qd.loop_config(block_dim=16)
        for idx in range(a.shape[0] * 16):
            env = idx // 16
            t = qd.simt.Tile16x16.zeros(dtype=qd.f64)
            for c in range(3):
                u = a[env, 0:16, c]
                w = a[env, 4:20, c + 1]
                t -= qd.outer(u, u)
                t -= qd.outer(u, w)
            out[env, 0:16, 0:16] = t

    a = rng.standard_normal((2, 20, 5))
    out = np.zeros((2, 16, 16))
    k(a, out)
    want = np.zeros_like(out)
    for c in range(3):
        u = a[:, 0:16, c]
        w = a[:, 4:20, c + 1]
        want -= u[:, :, None] * u[:, None, :] + u[:, :, None] * w[:, None, :]
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)


def test_the_demo_at_a_small_size(arch):
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[2] / "misc" / "demos" / "cholesky_blocked.py"
    spec = importlib.util.spec_from_file_location("cholesky_blocked", path)
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    rows = demo.run(demo.parse_args(["--arch", arch, "--n", "40", "--n-envs", "3",
                                     "--num-warmup", "0", "--num-iters", "1"]))
    assert [r[0] for r in rows] == ["baseline", "crout16", "tile16"]
    assert all(r[3] < 1e-5 for r in rows), rows



def test_tiles_are_values():
    """A tile passed to a @qd.func is a copy, a func returns one, assigning a tile to a variable
    copies it (also inside a runtime loop), and t.r is this lane's row."""
    tile = qd.simt.Tile16x16

    @qd.func
    def scaled_eye(t, s: qd.f32):
        u = tile.eye(dtype=qd.f32)
        for j in qd.static(range(16)):
            u.r[j] = u.r[j] * s + t.r[j]
        return u

    @qd.func
    def clobber(t):
        t.eye_()

    @qd.kernel
    def k(a: qd.types.ndarray(qd.f32, 2), out: qd.types.ndarray(qd.f32, 2),
          same: qd.types.ndarray(qd.f32, 2), n: qd.i32):
        qd.loop_config(block_dim=16)
        for i in range(16):
            t = tile.zeros(dtype=qd.f32)
            t[:] = a[0:16, 0:16]
            clobber(t)
            u = scaled_eye(t, 2.0)
            w = tile.zeros(dtype=qd.f32)
            for _ in range(n):
                w = u
            out[0:16, 0:16] = w
            v = t
            v.eye_()
            same[0:16, 0:16] = t

    a = rng.standard_normal((16, 16)).astype(np.float32)
    out = np.zeros((16, 16), np.float32)
    same = np.zeros_like(out)
    k(a, out, same, 1)
    np.testing.assert_allclose(out, a + 2 * np.eye(16), rtol=1e-6)
    np.testing.assert_array_equal(same, a)
    k(a, out, same, 0)
    np.testing.assert_array_equal(out, 0)



def test_slices_need_start_and_stop():
    f = qd.field(qd.f32, shape=(16, 16))

    @qd.kernel
    def k():
        qd.loop_config(block_dim=16)
        for i in range(16):
            t = qd.simt.Tile16x16.zeros(dtype=qd.f32)
            t[:] = f[:16, 0:16]

    with pytest.raises(qd.QuadrantsSyntaxError, match="both start and stop indices are required"):
        k()


def test_outer_only_with_subtraction():
    f = qd.field(qd.f32, shape=(16, 16))

    @qd.kernel
    def k():
        qd.loop_config(block_dim=16)
        for i in range(16):
            t = qd.simt.Tile16x16.zeros(dtype=qd.f32)
            v = f[0:16, 0]
            t += qd.outer(v, v)

    with pytest.raises(TypeError, match="only with -="):
        k()


def test_outer_does_not_compose_and_lower_must_be_true():
    f = qd.field(qd.f32, shape=(16, 16))

    @qd.kernel
    def composed():
        qd.loop_config(block_dim=16)
        for i in range(16):
            t = qd.simt.Tile16x16.zeros(dtype=qd.f32)
            v = f[0:16, 0]
            t -= qd.outer(v, v) + qd.outer(v, v)

    @qd.kernel
    def upper():
        qd.loop_config(block_dim=16)
        for i in range(16):
            t = qd.simt.Tile16x16.eye(dtype=qd.f32)
            b = qd.simt.Tile16x16.zeros(dtype=qd.f32)
            t.solve_triangular_(b, lower=False)

    with pytest.raises(TypeError, match="does not support composition"):
        composed()
    with pytest.raises(TypeError, match="lower=True"):
        upper()
    with pytest.raises(TypeError):
        qd.outer(1, 2)
    assert qd.simt.Tile16x16.SIZE == 16 and qd.simt.Tile32x32.SIZE == 32


def test_column_slices_only_go_to_outer():
    f = qd.field(qd.f32, shape=(16, 16))
    out = qd.field(qd.f32, shape=16)

    @qd.kernel
    def as_value():
        qd.loop_config(block_dim=16)
        for i in range(16):
            t = qd.simt.Tile16x16.zeros(dtype=qd.f32)
            v = f[0:16, 0]
            out[i] = v * 2.0 + t.r[0]

    @qd.kernel
    def indexed():
        qd.loop_config(block_dim=16)
        for i in range(16):
            t = qd.simt.Tile16x16.zeros(dtype=qd.f32)
            v = f[0:16, 0]
            t -= qd.outer(v, v)
            out[i] = v[0]

    for kernel in (as_value, indexed):
        with pytest.raises(TypeError, match="column slice 'v' can only be used as an argument "
                                            r"of qd.outer\(...\)"):
            kernel()


def test_tiles_need_a_gpu_or_the_emulation(arch):
    if arch != "cpu":
        pytest.skip("the CPU's error")
    qd.init(arch=qd.cpu)

    @qd.kernel
    def k(x: qd.types.ndarray(qd.f32, 2)):
        qd.loop_config(block_dim=16)
        for i in range(16):
            t = qd.simt.Tile16x16.zeros(dtype=qd.f32)
            x[0:16, 0:16] = t

    with pytest.raises(qd.QuadrantsCompilationError, match="requires a GPU backend"):
        k(np.zeros((16, 16), np.float32))


def test_syntax_errors_come_before_the_backend_error(arch):
    """Misuses of the tile syntax are reported before the target is found unable to run tiles
    (the CPU without cpu_simt here)."""
    if arch != "cpu":
        pytest.skip("the CPU's error")
    qd.init(arch=qd.cpu)
    f = qd.field(qd.f32, shape=(16, 16))

    @qd.kernel
    def no_start():
        qd.loop_config(block_dim=16)
        for i in range(16):
            t = qd.simt.Tile16x16.zeros(dtype=qd.f32)
            t[:] = f[:16, 0:16]

    @qd.kernel
    def plus():
        qd.loop_config(block_dim=16)
        for i in range(16):
            t = qd.simt.Tile16x16.zeros(dtype=qd.f32)
            v = f[0:16, 0]
            t += qd.outer(v, v)

    with pytest.raises(qd.QuadrantsSyntaxError, match="both start and stop indices are required"):
        no_start()
    with pytest.raises(TypeError, match="only with -="):
        plus()
