"""qd.nn.matvec and A @ x: every output element against a float64 NumPy product of the rounded
operands (fp16 inputs and weights, f32 accumulation, one rounding of the result), for widths
8..128 (multiples of 16 and not), with and without a bias, transposed, for packed views of both
layouts and row-major views, f16 and f32; under divergent control flow, as loop state, in a func
called from two sites, a whole 4-layer MLP with ReLU, and the errors."""

import warnings

import numpy as np
import pytest

import quadrants as qd

from . import model

rng = np.random.default_rng()
BATCH = 45  # not a multiple of any block size


@pytest.fixture(autouse=True)
def qd_arch(arch):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        qd.init(arch=getattr(qd, arch))
    yield arch
    qd.reset()


def vec_array(n):
    return qd.types.ndarray(qd.types.vector(n, qd.f32), 1)


def make_views(kind, A, b, wdt):
    """Views of A and b: packed ('inference' / 'training') or row-major views of ndarrays."""
    if kind in ("inference", "training"):
        _, Av, bv = qd.nn.pack(A, b, layout=kind, dtype=model.QD[wdt])
        return Av, bv
    Aa = qd.ndarray(model.QD[wdt], shape=A.shape)
    Aa.from_numpy(A.astype(model.NP[wdt]))
    ba = qd.ndarray(model.QD[wdt], shape=b.shape)
    ba.from_numpy(b.astype(model.NP[wdt]))
    return qd.nn.view(Aa), qd.nn.view(ba)


def product_kernel(m, k, dt, bias, transpose, form):
    """A kernel computing Y[i] = op(W) X[i] (+ B) with CoopVecs of dtype dt; `form` is 'call'
    (qd.nn.matvec) or 'matmul' (the @ operator)."""
    T = model.QD[dt]
    n_in, n_out = (m, k) if transpose else (k, m)

    @qd.kernel
    def kern(W: qd.nn.MatrixView, B: qd.nn.MatrixView, X: vec_array(n_in), Y: vec_array(n_out)):
        for i in range(X.shape[0]):
            x = qd.nn.CoopVec(X[i], dtype=T)
            if qd.static(form == "matmul"):
                if qd.static(transpose):
                    y = W.T @ x
                else:
                    y = W @ x
            else:
                y = qd.nn.matvec(W, x, B if qd.static(bias) else None, transpose=transpose)
            Y[i] = qd.Vector(y)

    return kern


SHAPES = [(2, 8), (5, 2), (3, 16), (16, 16), (17, 33), (33, 17), (64, 64), (128, 64), (64, 128),
          (128, 128), (8, 8), (48, 24)]


@pytest.mark.parametrize("kind", ["inference", "training", "row_major"])
@pytest.mark.parametrize("transpose", [False, True], ids=["A", "AT"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize("shape", SHAPES, ids=[f"{m}x{k}" for m, k in SHAPES])
def test_matvec_f16(shape, bias, transpose, kind):
    m, k = shape
    check_product(m, k, "f16", "f16", bias, transpose, kind, "call")


@pytest.mark.parametrize("dt, wdt", [("f32", "f32"), ("f32", "f16"), ("f16", "f32")])
@pytest.mark.parametrize("shape", [(17, 33), (64, 64)], ids=["17x33", "64x64"])
def test_matvec_dtypes(shape, dt, wdt):
    m, k = shape
    for transpose in (False, True):
        check_product(m, k, dt, wdt, True, transpose, "inference", "call")


@pytest.mark.parametrize("transpose", [False, True], ids=["A", "AT"])
@pytest.mark.parametrize("kind", ["inference", "row_major"])
def test_matmul_operator(kind, transpose):
    check_product(24, 40, "f16", "f16", False, transpose, kind, "matmul")


def check_product(m, k, dt, wdt, bias, transpose, kind, form):
    A = rng.standard_normal((m, k)) / np.sqrt(k)
    n_in, n_out = (m, k) if transpose else (k, m)
    b = rng.standard_normal(n_out if not transpose else m)
    if transpose:
        # the bias has the output's length: A.T x has k elements
        b = rng.standard_normal(k)
        # a transposed product with a bias needs a vector view of k elements
    Av, bv = make_views(kind, A, b, wdt)
    x = model.rounded(rng.uniform(-2, 2, size=(BATCH, n_in)), dt).astype(np.float32)
    y = np.zeros((BATCH, n_out), dtype=np.float32)
    product_kernel(m, k, dt, bias, transpose, form)(Av, bv, x, y)
    w = model.rounded(A, wdt)
    wb = model.rounded(b, wdt)
    op = w.T if transpose else w
    ref, acc = model.matvec_ref(op, x.astype(np.float64).T, wb[:, None] if bias else None)
    ref, acc = ref.T, acc.T
    model.check(y, ref, model.ulp(ref, dt) + acc, f"{m}x{k} {kind} bias={bias} T={transpose}")


def test_divergent_if_and_tail():
    """A product under an `if` on the thread index (two different matrices on the two paths),
    over a range that is not a multiple of any block size."""
    m, k = 24, 40
    A1 = rng.standard_normal((m, k))
    A2 = rng.standard_normal((m, k))
    b1 = rng.standard_normal(m)
    _, V1, V2, C1 = qd.nn.pack(A1, A2, b1)

    @qd.kernel
    def kern(W1: qd.nn.MatrixView, W2: qd.nn.MatrixView, B1: qd.nn.MatrixView,
             X: vec_array(k), Y: vec_array(m)):
        for i in range(X.shape[0]):
            x = qd.nn.CoopVec(X[i], dtype=qd.f16)
            y = qd.nn.CoopVec(qd.Vector([0.0] * m), dtype=qd.f16)
            if i % 3 == 1:
                y = qd.nn.matvec(W1, x, B1)
            elif i % 3 == 2:
                y = qd.max(W2 @ x, 0.0)
            Y[i] = qd.Vector(y)

    n = 101
    x = model.rounded(rng.uniform(-1, 1, size=(n, k)), "f16").astype(np.float32)
    y = np.full((n, m), 7.0, dtype=np.float32)
    kern(V1, V2, C1, x, y)
    w1, w2, c1 = model.rounded(A1, "f16"), model.rounded(A2, "f16"), model.rounded(b1, "f16")
    xd = x.astype(np.float64)
    r1, e1 = model.matvec_ref(w1, xd.T, c1[:, None])
    r2, e2 = model.matvec_ref(w2, xd.T)
    sel = np.arange(n) % 3
    ref = np.where(sel[:, None] == 1, r1.T, np.where(sel[:, None] == 2, np.maximum(r2.T, 0), 0.0))
    acc = np.where(sel[:, None] == 1, e1.T, np.where(sel[:, None] == 2, e2.T, 0.0))
    model.check(y, ref, model.ulp(ref, "f16") + acc, "divergent")


def test_loop_state_and_per_thread_trip_counts():
    """A CoopVec updated by a product in a `while` loop whose trip count differs per thread."""
    n_ = 32
    A = rng.standard_normal((n_, n_)) / np.sqrt(n_)
    _, Av = qd.nn.pack(A, dtype=qd.f32)

    @qd.kernel
    def kern(W: qd.nn.MatrixView, X: vec_array(n_), steps: qd.types.ndarray(qd.i32, 1),
             Y: vec_array(n_)):
        for i in range(X.shape[0]):
            v = qd.nn.CoopVec(X[i])
            t = 0
            while t < steps[i]:
                v = qd.tanh(W @ v)
                t += 1
            Y[i] = qd.Vector(v)

    x = rng.uniform(-1, 1, size=(BATCH, n_)).astype(np.float32)
    steps = rng.integers(0, 5, size=BATCH).astype(np.int32)
    y = np.zeros_like(x)
    kern(Av, x, steps, y)
    w = A.astype(np.float32).astype(np.float64)
    ref = x.astype(np.float64).copy()
    for i in range(BATCH):
        for _ in range(steps[i]):
            ref[i] = np.tanh(w @ ref[i])
    model.check(y, ref, 1e-5 * (1 + np.abs(ref)), "loop state")


@qd.func
def layer(W: qd.template(), B: qd.template(), x):
    return qd.max(qd.nn.matvec(W, x, B), 0.0)


def mlp_params(width, n_in, n_out, layers):
    dims = [n_in] + [width] * (layers - 1) + [n_out]
    Ws = [rng.standard_normal((dims[i + 1], dims[i])) * np.sqrt(2.0 / dims[i]) for i in range(layers)]
    bs = [rng.standard_normal(dims[i + 1]) * 0.1 for i in range(layers)]
    return Ws, bs


def mlp_ref(Ws, bs, x, wdt, dt):
    """The network in float64 on rounded weights, rounding each layer's output to dt as the
    kernel does; returns (output, per-element error allowance)."""
    h = x.astype(np.float64).T
    err = np.zeros_like(h)
    for li, (W, b) in enumerate(zip(Ws, bs)):
        w, bb = model.rounded(W, wdt), model.rounded(b, wdt)[:, None]
        ref, acc = model.matvec_ref(w, h, bb)
        # error carried from the previous layer, through |w|
        err = np.abs(w) @ err + acc + model.ulp(ref, dt)
        if li < len(Ws) - 1:
            ref = np.maximum(ref, 0.0)
        h = model.rounded(ref, dt)
    return h.T, err.T


@pytest.mark.parametrize("width", [16, 64])
def test_mlp_4_layers(width):
    """in -> width -> width -> width -> out, ReLU between layers, biases, f16, one kernel; the
    layer is a @qd.func called from four sites, the views passed through qd.template()."""
    n_in, n_out = 7, 3
    Ws, bs = mlp_params(width, n_in, n_out, 4)
    _, (W0, W1, W2, W3), (B0, B1, B2, B3) = qd.nn.pack(Ws, bs)

    @qd.kernel
    def net(W0: qd.nn.MatrixView, B0: qd.nn.MatrixView, W1: qd.nn.MatrixView,
            B1: qd.nn.MatrixView, W2: qd.nn.MatrixView, B2: qd.nn.MatrixView,
            W3: qd.nn.MatrixView, B3: qd.nn.MatrixView, X: vec_array(n_in), Y: vec_array(n_out)):
        for i in range(X.shape[0]):
            h = qd.nn.CoopVec(X[i], dtype=qd.f16)
            h = layer(W0, B0, h)
            h = layer(W1, B1, h)
            h = layer(W2, B2, h)
            Y[i] = qd.Vector(qd.nn.matvec(W3, h, B3))

    n = 1000
    x = model.rounded(rng.uniform(-1, 1, size=(n, n_in)), "f16").astype(np.float32)
    y = np.zeros((n, n_out), dtype=np.float32)
    net(W0, B0, W1, B1, W2, B2, W3, B3, x, y)
    ref, err = mlp_ref(Ws, bs, x, "f16", "f16")
    model.check(y, ref, err, f"MLP width {width}")
    rel = np.linalg.norm(y - ref) / np.linalg.norm(ref)
    assert rel < 1e-3, rel


def test_views_are_compile_time():
    """Views of the same shape, dtype, layout, offset and stride share one compiled kernel; a
    different offset is another specialization, and both compute their own product."""
    m, k = 8, 8
    A1, A2 = rng.standard_normal((m, k)), rng.standard_normal((m, k))
    _, V1, V2 = qd.nn.pack(A1, A2)
    _, V3 = qd.nn.pack(A2)
    assert V1.offset != V2.offset and V3.offset == V1.offset

    @qd.kernel
    def kern(W: qd.nn.MatrixView, X: vec_array(k), Y: vec_array(m)):
        for i in range(X.shape[0]):
            Y[i] = qd.Vector(W @ qd.nn.CoopVec(X[i], dtype=qd.f16))

    x = model.rounded(rng.uniform(-1, 1, size=(4, k)), "f16").astype(np.float32)
    for view, A in ((V1, A1), (V2, A2), (V3, A2)):
        y = np.zeros((4, m), dtype=np.float32)
        kern(view, x, y)
        ref, acc = model.matvec_ref(model.rounded(A, "f16"), x.astype(np.float64).T)
        model.check(y, ref.T, model.ulp(ref.T, "f16") + acc.T, "view")
    assert len(kern._compiled) == 2


# --- errors ---


def test_shape_mismatch_error():
    A = rng.standard_normal((3, 16))
    _, Av = qd.nn.pack(A)

    @qd.kernel
    def kern(W: qd.nn.MatrixView, Y: qd.types.ndarray(qd.f32, 1)):
        for i in range(1):
            y = qd.nn.matvec(W, qd.nn.CoopVec(qd.Vector([1.0] * 8)))  # shape-site
            a, *_ = y
            Y[i] = a

    with pytest.raises(qd.QuadrantsTypeError) as info:
        kern(Av, np.zeros(1, dtype=np.float32))
    msg = str(info.value)
    assert "Attempted to multiply a 3x16 matrix by a vector with 8 elements" in msg
    assert f"{__file__}:{model.line_of(__file__, '# shape-site')}:" in msg


def test_bias_shape_error():
    A, b = rng.standard_normal((3, 4)), rng.standard_normal(4)
    _, Av, bv = qd.nn.pack(A, b)

    @qd.kernel
    def kern(W: qd.nn.MatrixView, B: qd.nn.MatrixView, Y: qd.types.ndarray(qd.f32, 1)):
        for i in range(1):
            y = qd.nn.matvec(W, qd.nn.CoopVec(1.0, 2.0, 3.0, 4.0), B)  # bias-site
            a, *_ = y
            Y[i] = a

    with pytest.raises(qd.QuadrantsTypeError, match=r"the bias must be a vector view of 3 elements"):
        kern(Av, bv, np.zeros(1, dtype=np.float32))


def test_matrix_must_be_a_view():
    @qd.kernel
    def kern(Y: qd.types.ndarray(qd.f32, 1)):
        for i in range(1):
            y = qd.nn.matvec(qd.Matrix([[1.0, 2.0]]), qd.nn.CoopVec(1.0, 2.0))
            a, *_ = y
            Y[i] = a

    with pytest.raises(qd.QuadrantsTypeError, match="the matrix must be a qd.nn.MatrixView"):
        kern(np.zeros(1, dtype=np.float32))


def test_view_argument_type_error():
    @qd.kernel
    def kern(W: qd.nn.MatrixView, Y: qd.types.ndarray(qd.f32, 1)):
        for i in range(1):
            Y[i] = 0.0

    with pytest.raises(qd.QuadrantsRuntimeTypeError, match="expects a qd.nn.MatrixView"):
        kern(np.zeros((2, 2), dtype=np.float32), np.zeros(1, dtype=np.float32))


def test_views_through_annotated_func_parameters():
    """A func parameter annotated qd.nn.MatrixView takes a view as it is (like qd.template())."""
    A, b = rng.standard_normal((4, 3)), rng.standard_normal(4)
    _, Av, bv = qd.nn.pack(A, b, dtype=qd.f32)

    @qd.func
    def affine(W: qd.nn.MatrixView, B: qd.nn.MatrixView, x):
        return qd.nn.matvec(W, x, B)

    @qd.kernel
    def kern(W: qd.nn.MatrixView, B: qd.nn.MatrixView, X: vec_array(3), Y: vec_array(4)):
        for i in range(X.shape[0]):
            Y[i] = qd.Vector(affine(W, B, qd.nn.CoopVec(X[i])))

    x = rng.uniform(-1, 1, size=(BATCH, 3)).astype(np.float32)
    y = np.zeros((BATCH, 4), dtype=np.float32)
    kern(Av, bv, x, y)
    ref, acc = model.matvec_ref(model.rounded(A, "f32"), x.astype(np.float64).T,
                                model.rounded(b, "f32")[:, None])
    model.check(y, ref.T, model.ulp(ref.T, "f32") + acc.T, "annotated func parameters")


def test_product_at_kernel_scope():
    """A product outside any loop: the kernel's serial task."""
    A = rng.standard_normal((2, 3))
    _, Av = qd.nn.pack(A, dtype=qd.f32)

    @qd.kernel
    def kern(W: qd.nn.MatrixView, X: qd.types.ndarray(qd.f32, 1), Y: qd.types.ndarray(qd.f32, 1)):
        v = qd.nn.CoopVec(X[0], X[1], X[2])
        a, b = W @ v
        Y[0] = a
        Y[1] = b

    x = rng.uniform(-1, 1, 3).astype(np.float32)
    y = np.zeros(2, dtype=np.float32)
    kern(Av, x, y)
    ref, acc = model.matvec_ref(model.rounded(A, "f32"), x.astype(np.float64))
    model.check(y, ref, model.ulp(ref, "f32") + acc, "kernel scope")
