"""The tensor-core form of qd.nn products (f16 vectors by f16 matrices): on CUDA (sm_80 and later)
and under the CPU's SIMT emulation (cpu_simt=True), whose mma_m16n8k16 gathers the warp's
fragments. Every output element against a float64 NumPy product of the rounded operands, for
shapes that are and are not multiples of the 16 x 8 tiles, both layouts, 2-D row-major views,
with and without a bias, transposed; warps that reach a product together use tensor cores, the
others (a partial last warp, a divergent call site) the per-thread loops. Under the emulation the
two forms add the same f32 terms in the same order (without fast math, which would let LLVM
reassociate the loops), so their results are compared bit for bit;
the QIR shows which products got the tensor-core form."""

import warnings

import numpy as np
import pytest

import quadrants as qd
from quadrants import _runtime

from . import model

rng = np.random.default_rng()
BATCH = 100  # three whole warps and a partial one in a block of 128


@pytest.fixture(autouse=True)
def qd_arch(arch, monkeypatch):
    if arch == "vulkan":
        pytest.skip("Vulkan runs qd.nn products as per-thread loops")
    original = _runtime.compile_options
    monkeypatch.setattr(_runtime, "compile_options", lambda: dict(original(), keep_qir=1))
    yield arch
    qd.reset()


def init(arch, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if arch == "cpu":
            qd.init(arch=qd.cpu, cpu_simt=True, offline_cache=False, fast_math=False, **kw)
        else:
            qd.init(arch=getattr(qd, arch), offline_cache=False, **kw)


def final_qir(kernel):
    for entry in kernel._compiled.values():
        for item in entry if isinstance(entry, tuple) else (entry,):
            if hasattr(item, "qir") and item.qir:
                return item.qir
    raise AssertionError("no compiled kernel kept its QIR")


def vec_array(n):
    return qd.types.ndarray(qd.types.vector(n, qd.f32), 1)


def views(kind, A, b):
    if kind == "packed":
        _, Av, bv = qd.nn.pack(A, b)
        return Av, bv
    Aa = qd.ndarray(qd.f16, shape=A.shape)  # a row-major view of a 2-D ndarray
    Aa.from_numpy(A.astype(np.float16))
    ba = qd.ndarray(qd.f16, shape=b.shape)
    ba.from_numpy(b.astype(np.float16))
    return qd.nn.view(Aa), qd.nn.view(ba)


def product_kernel(m, k, bias, transpose, divergent=False, block_dim=None):
    n_in, n_out = (m, k) if transpose else (k, m)

    @qd.kernel
    def f(A: qd.nn.MatrixView, b: qd.nn.MatrixView, X: vec_array(n_in), Y: vec_array(n_out)):
        if qd.static(block_dim is not None):
            qd.loop_config(block_dim=block_dim)
        for i in range(X.shape[0]):
            x = qd.nn.CoopVec(X[i], dtype=qd.f16)
            go = True
            if qd.static(divergent):
                go = i % 3 != 1
            if go:
                op = A.T if qd.static(transpose) else A
                y = qd.nn.matvec(op, x, b) if qd.static(bias) else qd.nn.matvec(op, x)
                Y[i] = qd.Vector(qd.nn.cast(y, qd.f32))

    return f


def run_product(arch, m, k, bias, transpose, kind, **kw):
    """Y of the product under the options, the reference, the tolerance and the QIR."""
    A = rng.standard_normal((m, k))
    b = rng.standard_normal(m if not transpose else k)
    n_in, n_out = (m, k) if transpose else (k, m)
    x = rng.standard_normal((BATCH, n_in)).astype(np.float32)
    results = []
    for tc in (True, False):
        init(arch, nn_tensor_cores=tc)
        Av, bv = views(kind, A, b)
        f = product_kernel(m, k, bias, transpose, **{a: v for a, v in kw.items() if a != "skip"})
        Y = np.zeros((BATCH, n_out), np.float32)
        f(Av, bv, x, Y)
        results.append((Y, final_qir(f)))
        qd.reset()
    w = model.rounded(A.T if transpose else A, "f16")
    ref, acc = model.matvec_ref(w, model.rounded(x, "f16").T, model.rounded(b, "f16")[:, None]
                                if bias else None)
    ref = ref.T
    tol = model.ulp(ref, "f16") + acc.T * 2
    return results, ref, tol


SHAPES = [(16, 16), (8, 16), (16, 8), (17, 33), (33, 17), (64, 64), (5, 7), (40, 128), (128, 24)]


@pytest.mark.parametrize("kind", ["packed", "row_major_2d"])
@pytest.mark.parametrize("transpose", [False, True], ids=["A", "AT"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize("shape", SHAPES, ids=[f"{m}x{k}" for m, k in SHAPES])
def test_product(arch, shape, bias, transpose, kind):
    m, k = shape
    if kind == "row_major_2d" and not bias:
        pytest.skip("the 2-D view form is covered with a bias")
    (tc, loops), ref, tol = run_product(arch, m, k, bias, transpose, kind)
    assert tc[1].count("mma_m16n8k16") > 0, "the product did not get the tensor-core form"
    assert "mma_m16n8k16" not in loops[1]
    model.check(tc[0], ref, tol, "tensor cores")
    model.check(loops[0], ref, tol, "per-thread loops")
    if arch == "cpu":
        np.testing.assert_array_equal(tc[0], loops[0])


def test_divergent_call_site(arch):
    (tc, loops), ref, tol = run_product(arch, 33, 40, True, False, "packed", divergent=True)
    assert tc[1].count("mma_m16n8k16") > 0
    ran = np.arange(BATCH) % 3 != 1
    model.check(tc[0][ran], ref[ran], tol[ran], "divergent")
    assert not tc[0][~ran].any()
    if arch == "cpu":
        np.testing.assert_array_equal(tc[0], loops[0])


def test_blocks_over_128_threads_use_loops(arch):
    (tc, _), ref, tol = run_product(arch, 16, 16, True, False, "packed", block_dim=256)
    assert "mma_m16n8k16" not in tc[1]
    model.check(tc[0], ref, tol, "block_dim 256")


def test_small_block(arch):
    (tc, _), ref, tol = run_product(arch, 24, 48, True, True, "packed", block_dim=32)
    assert tc[1].count("mma_m16n8k16") > 0
    model.check(tc[0], ref, tol, "block_dim 32")


@pytest.mark.parametrize("dt, wdt", [("f32", "f16"), ("f16", "f32")])
def test_f32_operands_use_loops(arch, dt, wdt):
    init(arch)
    A = rng.standard_normal((16, 16))
    _, Av, bv = qd.nn.pack(A, np.zeros(16), dtype=model.QD[wdt])
    vdt = model.QD[dt]

    @qd.kernel
    def f(A: qd.nn.MatrixView, X: vec_array(16), Y: vec_array(16)):
        for i in range(X.shape[0]):
            Y[i] = qd.Vector(qd.nn.cast(qd.nn.matvec(A, qd.nn.CoopVec(X[i], dtype=vdt)),
                                        qd.f32))

    Y = np.zeros((BATCH, 16), np.float32)
    f(Av, np.ones((BATCH, 16), np.float32), Y)
    assert "mma_m16n8k16" not in final_qir(f)


def test_mlp_matches_the_loops(arch):
    """A 4-layer ReLU MLP with widths 20 -> 48 -> 48 -> 9: both forms against the model."""
    dims = [20, 48, 48, 9]
    Ws = [rng.standard_normal((dims[i + 1], dims[i])) / np.sqrt(dims[i]) for i in range(3)]
    bs = [0.1 * rng.standard_normal(dims[i + 1]) for i in range(3)]
    x = rng.uniform(-1, 1, (BATCH, dims[0])).astype(np.float32)
    out = []
    for tc in (True, False):
        init(arch, nn_tensor_cores=tc)
        _, Wv, Bv = qd.nn.pack(Ws, bs)

        @qd.kernel
        def mlp(W0: qd.nn.MatrixView, B0: qd.nn.MatrixView, W1: qd.nn.MatrixView,
                B1: qd.nn.MatrixView, W2: qd.nn.MatrixView, B2: qd.nn.MatrixView,
                X: vec_array(dims[0]), Y: vec_array(dims[3])):
            for i in range(X.shape[0]):
                h = qd.nn.CoopVec(X[i], dtype=qd.f16)
                h = qd.max(qd.nn.matvec(W0, h, B0), 0.0)
                h = qd.max(qd.nn.matvec(W1, h, B1), 0.0)
                Y[i] = qd.Vector(qd.nn.cast(qd.nn.matvec(W2, h, B2), qd.f32))

        Y = np.zeros((BATCH, dims[3]), np.float32)
        mlp(Wv[0], Bv[0], Wv[1], Bv[1], Wv[2], Bv[2], x, Y)
        assert (final_qir(mlp).count("mma_m16n8k16") > 0) == tc
        out.append(Y)
        qd.reset()
    h = model.rounded(x, "f16")
    for i in range(3):
        h = h @ model.rounded(Ws[i], "f16").T + model.rounded(bs[i], "f16")
        h = model.rounded(np.maximum(h, 0) if i < 2 else h, "f16")
    for Y in out:
        model.check(Y, h, 2e-2 * np.abs(h).max(), "mlp")
    if arch == "cpu":
        np.testing.assert_array_equal(out[0], out[1])


def two_layer(arch, link, seed, tc=True):
    """y = W1 link(W0 x, i, s) for widths 24 -> 40 -> 12: the output, h, the QIR and the
    model's y and h (link applied in float64 to the rounded first product)."""
    rng = np.random.default_rng(seed)
    W0, b0 = rng.standard_normal((40, 24)) / 5, rng.standard_normal(40) / 5
    W1, b1 = rng.standard_normal((12, 40)) / 6, rng.standard_normal(12) / 6
    x = rng.uniform(-1, 1, (BATCH, 24)).astype(np.float32)
    init(arch, nn_tensor_cores=tc)
    _, (V0, V1), (C0, C1) = qd.nn.pack([W0, W1], [b0, b1])

    @qd.kernel
    def f(V0: qd.nn.MatrixView, C0: qd.nn.MatrixView, V1: qd.nn.MatrixView,
          C1: qd.nn.MatrixView, s: qd.f32, X: vec_array(24), Y: vec_array(12), H: vec_array(40)):
        for i in range(X.shape[0]):
            h = qd.nn.matvec(V0, qd.nn.CoopVec(X[i], dtype=qd.f16), C0)
            if qd.static(link == "uniform"):
                h = qd.max(h, 0.0) * s
            elif qd.static(link == "per_thread"):
                h = qd.max(h, 0.0) * qd.f16(i % 3)
            else:
                h = qd.max(h, 0.0)
            Y[i] = qd.Vector(qd.nn.cast(qd.nn.matvec(V1, h, C1), qd.f32))
            if qd.static(link == "h_used_after"):
                H[i] = qd.Vector(qd.nn.cast(h, qd.f32))

    Y = np.zeros((BATCH, 12), np.float32)
    H = np.zeros((BATCH, 40), np.float32)
    f(V0, C0, V1, C1, 1.5, x, Y, H)
    qir = final_qir(f)
    qd.reset()
    h = model.rounded(model.rounded(x, "f16") @ model.rounded(W0, "f16").T
                      + model.rounded(b0, "f16"), "f16")
    h = np.maximum(h, 0)
    if link == "uniform":
        h = model.rounded(h * 1.5, "f16")
    elif link == "per_thread":
        h = h * (np.arange(BATCH) % 3)[:, None]
    y = h @ model.rounded(W1, "f16").T + model.rounded(b1, "f16")
    return Y, H, qir, y, h


@pytest.mark.parametrize("link, branches", [("relu", 1), ("uniform", 1), ("per_thread", 2),
                                            ("h_used_after", 2)])
def test_links(arch, link, branches):
    """A link of ReLU, or times a kernel argument, keeps the activations in fragments (one
    whole-warp branch for both products); one that multiplies by a per-thread value, or whose
    activation is read after the second product, stages them through the lanes (two)."""
    seed = int(np.random.default_rng().integers(1 << 31))
    Y, H, qir, y, h = two_layer(arch, link, seed)
    assert qir.count("ballot") == branches, qir.count("ballot")
    model.check(Y, y, 1e-2 * np.abs(y).max(), link)
    if link == "h_used_after":
        model.check(H, h, 1e-2 * np.abs(h).max(), "h")
    if arch == "cpu":
        Y2, H2, _, _, _ = two_layer(arch, link, seed, tc=False)
        np.testing.assert_array_equal(Y, Y2)
        np.testing.assert_array_equal(H, H2)
