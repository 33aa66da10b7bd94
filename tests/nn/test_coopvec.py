"""qd.nn.CoopVec in kernels: construction (flattening, concatenation, dtype), unpacking (starred
targets, static iteration, len, qd.Vector), the elementwise operations against NumPy models of
their rounding (fresh random inputs, every element checked, f16 and f32, lengths 1..128), use
as a variable, loop state and func argument, and the errors, with their messages and lines."""

import warnings

import numpy as np
import pytest

import quadrants as qd

from . import model

rng = np.random.default_rng()
BATCH = 37  # not a multiple of any block size
WIDTHS = (1, 7, 16, 33, 128)


@pytest.fixture(autouse=True)
def qd_arch(arch):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        qd.init(arch=getattr(qd, arch))
    yield arch
    qd.reset()


def vec_array(n):
    return qd.types.ndarray(qd.types.vector(n, qd.f32), 1)


def inputs(n, dt, lo=-4.0, hi=4.0, count=3):
    """`count` random (BATCH, n) float32 arrays whose values are exact in dt, and their float64."""
    out = []
    for _ in range(count):
        a = model.rounded(rng.uniform(lo, hi, size=(BATCH, n)), dt).astype(np.float32)
        out.append(a)
    return out


def run_elementwise(n, dt, fn, arrays):
    """Y[i] = qd.Vector(fn(a, b, c)) with a, b, c CoopVecs of dtype dt made from the rows of the
    three arrays; fn is a @qd.func."""
    T = model.QD[dt]

    @qd.kernel
    def k(A: vec_array(n), B: vec_array(n), C: vec_array(n), Y: vec_array(n)):
        for i in range(A.shape[0]):
            a = qd.nn.CoopVec(A[i], dtype=T)
            b = qd.nn.CoopVec(B[i], dtype=T)
            c = qd.nn.CoopVec(C[i], dtype=T)
            Y[i] = qd.Vector(fn(a, b, c))

    y = np.zeros((BATCH, n), dtype=np.float32)
    k(*arrays, y)
    return y.astype(np.float64)


@qd.func
def arith(a, b, c):
    return -(a + b) * c - a * 2.0 + 0.5


@qd.func
def minmax(a, b, c):
    return qd.max(qd.min(a, b), c) + qd.min(a, 0.25) * qd.max(-1.5, b)


@qd.func
def fma_abs(a, b, c):
    return qd.nn.fma(a, b, c) + abs(c)


@qd.func
def step_op(a, b, c):
    return qd.nn.step(a, b) + qd.nn.step(c, 0.0) * 2.0



# Elementwise results are compared with the float64 value of the expression on the rounded
# inputs. Each operation may round to the vector's type (or keep more precision, as fused or
# widened code does), so a check allows, per rounding on the way, the unit roundoff times the
# magnitude of what was rounded, plus one ulp of the result.


@pytest.mark.parametrize("dt", ["f16", "f32"])
@pytest.mark.parametrize("n", WIDTHS)
def test_arithmetic(n, dt):
    arrays = inputs(n, dt)
    a, b, c = (x.astype(np.float64) for x in arrays)
    ref = -(a + b) * c - a * 2.0 + 0.5
    mag = 3 * np.abs(a + b) * np.abs(c) + 2 * (2 * np.abs(a)) + 0.5 + np.abs(ref)
    got = run_elementwise(n, dt, arith, arrays)
    model.check(got, ref, 3 * model.eps(dt) * mag + model.ulp(ref, dt), "-(a + b) * c - a * 2 + 0.5")


@pytest.mark.parametrize("dt", ["f16", "f32"])
@pytest.mark.parametrize("n", WIDTHS)
def test_min_max(n, dt):
    arrays = inputs(n, dt)
    a, b, c = (x.astype(np.float64) for x in arrays)
    ref = np.maximum(np.minimum(a, b), c) + np.minimum(a, 0.25) * np.maximum(-1.5, b)
    mag = 2 * np.abs(np.minimum(a, 0.25) * np.maximum(-1.5, b)) + np.abs(ref)
    got = run_elementwise(n, dt, minmax, arrays)
    model.check(got, ref, 2 * model.eps(dt) * mag + model.ulp(ref, dt),
                "max(min(a, b), c) + min(a, .25) * max(-1.5, b)")


@pytest.mark.parametrize("dt", ["f16", "f32"])
@pytest.mark.parametrize("n", WIDTHS)
def test_fma_abs(n, dt):
    arrays = inputs(n, dt)
    a, b, c = (x.astype(np.float64) for x in arrays)
    ref = (a * b + c) + np.abs(c)  # fma: computed in f32, rounded once; then one add
    mag = np.abs(a * b) + 2 * np.abs(c) + np.abs(ref)
    got = run_elementwise(n, dt, fma_abs, arrays)
    model.check(got, ref, 2 * model.eps(dt) * mag + model.ulp(ref, dt), "fma(a, b, c) + abs(c)")


@pytest.mark.parametrize("dt", ["f16", "f32"])
@pytest.mark.parametrize("n", WIDTHS)
def test_step(n, dt):
    arrays = inputs(n, dt)
    a, b, c = arrays
    b[:, ::3] = a[:, ::3]  # ties: step(x, edge) is 1 where x == edge
    ref = np.where(a < b, 0.0, 1.0) + 2.0 * np.where(c < 0.0, 0.0, 1.0)
    got = run_elementwise(n, dt, step_op, arrays)
    model.check(got, ref, 0.0, "step(a, b) + 2 step(c, 0)")


@qd.func
def tanh_op(v):
    return qd.tanh(v)


@qd.func
def exp2_op(v):
    return qd.nn.exp2(v)


@qd.func
def log2_op(v):
    return qd.nn.log2(v)


@pytest.mark.parametrize("dt", ["f16", "f32"])
@pytest.mark.parametrize("which", ["tanh", "exp2", "log2"])
def test_math(which, dt):
    n = 33
    T = model.QD[dt]
    lo, hi = (0.01, 8.0) if which == "log2" else (-6.0, 6.0)
    (a,) = inputs(n, dt, lo, hi, count=1)
    fn = {"tanh": tanh_op, "exp2": exp2_op, "log2": log2_op}[which]

    @qd.kernel
    def k(A: vec_array(n), Y: vec_array(n)):
        for i in range(A.shape[0]):
            Y[i] = qd.Vector(fn(qd.nn.CoopVec(A[i], dtype=T)))

    y = np.zeros_like(a)
    k(a, y)
    exact = {"tanh": np.tanh, "exp2": np.exp2, "log2": np.log2}[which](a.astype(np.float64))
    # computed in f32 (relative error a few ulps of f32), rounded to dt once
    tol = model.ulp(exact, dt) + 8 * 2.0**-23 * (np.abs(exact) + np.abs(a))
    model.check(y, exact, tol, which)


@pytest.mark.parametrize("dt", ["f16", "f32"])
def test_nan_min_max(dt):
    """min and max on floats take the non-NaN operand (ops.def)."""
    n = 4
    T = model.QD[dt]

    @qd.kernel
    def k(A: vec_array(n), Y: vec_array(n)):
        for i in range(A.shape[0]):
            v = qd.nn.CoopVec(A[i], dtype=T)
            Y[i] = qd.Vector(qd.max(v, 0.0) + qd.min(v, 1.0))

    a = np.array([[np.nan, -2.0, 0.5, 3.0]], dtype=np.float32)
    y = np.zeros_like(a)
    k(a, y)
    np.testing.assert_array_equal(y, [[1.0, -2.0, 1.0, 4.0]])


def test_construct_flatten_concat():
    """Scalars, literals, vectors, matrices and tuples flatten in order; *v concatenates;
    unpacking with a starred target, static iteration, len and qd.Vector give the elements."""

    @qd.kernel
    def k(Y: qd.types.ndarray(qd.f32, 2)):
        for i in range(Y.shape[0]):
            s = qd.cast(i, qd.f32)
            m = qd.Matrix([[2.0, 3.0], [4.0, 5.0]])
            v = qd.nn.CoopVec(s, 1.0, m, (6.0, qd.Vector([7.0, 8.0])))  # 9 elements
            w = qd.nn.CoopVec(*v, *v)  # 18
            a, b, *rest = w
            *head, last = v
            total = 0.0
            for e in qd.static(w):
                total += e
            u = qd.Vector(w)
            Y[i, 0] = a
            Y[i, 1] = b
            Y[i, 2] = len(rest)
            Y[i, 3] = len(w)
            Y[i, 4] = last
            Y[i, 5] = len(head)
            Y[i, 6] = total
            Y[i, 7] = u[10]
            Y[i, 8] = rest[0]

    y = np.zeros((5, 9), dtype=np.float32)
    k(y)
    i = np.arange(5, dtype=np.float64)
    elems = [i, 1, 2, 3, 4, 5, 6, 7, 8]
    total = 2 * (i + 36)
    expect = np.stack(
        [i, np.ones(5), 16 + 0 * i, 18 + 0 * i, 8 + 0 * i, 8 + 0 * i, total, 1 + 0 * i, 2 + 0 * i],
        axis=1,
    )
    del elems
    np.testing.assert_array_equal(y, expect)


def test_dtype_rules():
    """The first typed element gives the dtype; Python numbers alone give f32; dtype= converts;
    a scalar operand takes the vector's dtype (f16 * 2.0 stays f16)."""

    @qd.kernel
    def k(Y: qd.types.ndarray(qd.f32, 1)):
        for i in range(1):
            h = qd.nn.CoopVec(qd.f16(1.0), 3.0)
            f = qd.nn.CoopVec(1.0, 2.0)
            c = qd.nn.CoopVec(1, 2, dtype=qd.f16)
            x = h * 2049.0  # rounds to f16: 2048 or 2050, never 2049
            x0, _ = x
            a, b = qd.nn.cast(c, qd.f32) + f
            Y[0] = x0
            Y[1] = a + b

    y = np.zeros(2, dtype=np.float32)
    k(y)
    assert y[0] == np.float32(np.float16(2049.0))
    assert y[1] == 6.0


def test_dot_and_cast():
    n = 33
    a32, b32 = inputs(n, "f16", count=2)

    @qd.kernel
    def k(A: vec_array(n), B: vec_array(n), Y: qd.types.ndarray(qd.f32, 1), Z: vec_array(n)):
        for i in range(A.shape[0]):
            a = qd.nn.CoopVec(A[i], dtype=qd.f16)
            b = qd.nn.CoopVec(B[i], dtype=qd.f16)
            Y[i] = qd.nn.dot(a, b)
            Z[i] = qd.Vector(qd.nn.cast(qd.nn.cast(b, qd.f32) * 0.001, qd.f16))

    y = np.zeros(BATCH, dtype=np.float32)
    z = np.zeros_like(b32)
    k(a32, b32, y, z)
    a, b = a32.astype(np.float64), b32.astype(np.float64)
    ref = (a * b).sum(axis=1)
    tol = model.ulp(ref, "f16") + n * 2.0**-23 * (np.abs(a) * np.abs(b)).sum(axis=1)
    model.check(y, ref, tol, "dot")
    zref = model.rounded((b32 * np.float32(0.001)).astype(np.float64), "f16")
    model.check(z, zref, model.ulp(zref, "f16"), "cast")


def test_rebinding_to_another_length():
    """In straight-line code a CoopVec name may be rebound to a vector of another length or
    dtype, as `h = layer(h)` does through layers of different widths."""

    @qd.kernel
    def k(Y: qd.types.ndarray(qd.f32, 1)):
        for i in range(1):
            v = qd.nn.CoopVec(1.0, 2.0)
            v = qd.nn.CoopVec(*v, 3.0, dtype=qd.f16)
            a, b, c = v
            Y[0] = a + b + c + len(v)

    y = np.zeros(1, dtype=np.float32)
    k(y)
    assert y[0] == 9.0


def test_conditional_expression():
    """`a if c else b` of two CoopVecs is a CoopVec (still not subscriptable); a CoopVec facing
    a plain vector is an error."""
    n = 5

    @qd.kernel
    def k(A: vec_array(n), B: vec_array(n), Y: vec_array(n)):
        for i in range(A.shape[0]):
            a = qd.nn.CoopVec(A[i])
            b = qd.nn.CoopVec(B[i])
            c = a if i % 2 == 0 else b
            Y[i] = qd.Vector(c * 2.0)

    a, b = inputs(n, "f32", count=2)
    y = np.zeros_like(a)
    k(a, b, y)
    ref = np.where((np.arange(BATCH) % 2 == 0)[:, None], a, b) * 2
    np.testing.assert_array_equal(y, ref)

    @qd.kernel
    def mixed(Y: qd.types.ndarray(qd.f32, 1)):
        for i in range(2):
            c = qd.nn.CoopVec(1.0, 2.0) if i == 0 else qd.Vector([1.0, 2.0])  # mixed-site
            x, y = c
            Y[i] = x + y

    err = compile_error(mixed, np.zeros(2, dtype=np.float32))
    assert_at(err, qd.QuadrantsTypeError, "both branches must be qd.nn.CoopVecs", "# mixed-site")


def test_loop_state_and_branches():
    """A CoopVec variable updated in a runtime loop and in a branch keeps its slots."""
    n = 16

    @qd.kernel
    def k(A: vec_array(n), steps: qd.types.ndarray(qd.i32, 1), Y: vec_array(n)):
        for i in range(A.shape[0]):
            v = qd.nn.CoopVec(A[i])
            for _ in range(steps[i]):
                v = v * 0.5 + 1.0
            if i % 2 == 0:
                v = -v
            v += v
            Y[i] = qd.Vector(v)

    a, = inputs(n, "f32", count=1)
    steps = rng.integers(0, 6, size=BATCH).astype(np.int32)
    y = np.zeros_like(a)
    k(a, steps, y)
    ref = a.astype(np.float32).copy()
    for i in range(BATCH):
        for _ in range(steps[i]):
            ref[i] = ref[i] * np.float32(0.5) + np.float32(1.0)
        if i % 2 == 0:
            ref[i] = -ref[i]
    ref = ref + ref
    model.check(y, ref.astype(np.float64), model.ulp(ref, "f32"), "loop state")


# --- errors ---


def compile_error(kernel, *args):
    with pytest.raises(Exception) as info:
        kernel(*args)
    return info.value


def assert_at(err, cls, text, snippet):
    assert isinstance(err, cls), repr(err)
    msg = str(err)
    assert text in msg, msg
    assert f"{__file__}:{model.line_of(__file__, snippet)}:" in msg, msg
    assert snippet in msg, msg


def test_subscript_is_an_error():
    @qd.kernel
    def k(Y: qd.types.ndarray(qd.f32, 1)):
        for i in range(1):
            v = qd.nn.CoopVec(1.0, 2.0)
            Y[i] = v[1]  # subscript-site

    err = compile_error(k, np.zeros(1, dtype=np.float32))
    assert_at(err, qd.QuadrantsTypeError, "'CoopVec' object is not subscriptable", "v[1]  # subscript-site")
    assert "cannot be indexed" in str(err)


def test_subscript_after_func_return_is_an_error():
    @qd.func
    def twice(v):
        return v + v

    @qd.kernel
    def k(Y: qd.types.ndarray(qd.f32, 1)):
        for i in range(1):
            w = twice(qd.nn.CoopVec(1.0, 2.0))
            Y[i] = w[0]  # after-func-site

    err = compile_error(k, np.zeros(1, dtype=np.float32))
    assert_at(err, qd.QuadrantsTypeError, "not subscriptable", "w[0]  # after-func-site")


@pytest.mark.parametrize(
    "which, text",
    [
        ("div", "division is not supported on a qd.nn.CoopVec; multiply by a reciprocal"),
        ("cmp", "comparison is not supported on a qd.nn.CoopVec"),
        ("sqrt", "qd.sqrt is not supported on a qd.nn.CoopVec"),
        ("pow", "the '**' operator is not supported"),
        ("attr", "'CoopVec' object has no attribute 'x'"),
        ("mix", "a qd.nn.CoopVec combines with CoopVecs and scalars only"),
        ("len", "different lengths (2 and 3)"),
        ("dtype", "different dtypes (f32 and f16)"),
        ("elems", "must share one dtype, got f16 and f32"),
        ("int", "elements are f16 or f32, got i32"),
        ("assign", "changes its length or dtype only where it was defined"),
        ("iter", "for x in qd.static(v)"),
    ],
)
def test_unsupported_operations(which, text):
    @qd.kernel
    def k(Y: qd.types.ndarray(qd.f32, 1)):
        for i in range(1):
            v = qd.nn.CoopVec(1.0, 2.0)
            if qd.static(which == "div"):
                v = v / 2.0  # error-site
            if qd.static(which == "cmp"):
                v = v < 1.0  # error-site
            if qd.static(which == "sqrt"):
                v = qd.sqrt(v)  # error-site
            if qd.static(which == "pow"):
                v = v ** 2  # error-site
            if qd.static(which == "attr"):
                Y[0] = v.x  # error-site
            if qd.static(which == "mix"):
                v = v + qd.Vector([1.0, 2.0])  # error-site
            if qd.static(which == "len"):
                v = v + qd.nn.CoopVec(1.0, 2.0, 3.0)  # error-site
            if qd.static(which == "dtype"):
                v = v * qd.nn.CoopVec(1.0, 2.0, dtype=qd.f16)  # error-site
            if qd.static(which == "elems"):
                v = qd.nn.CoopVec(qd.f16(1.0), qd.cast(i, qd.f32))  # error-site
            if qd.static(which == "int"):
                v = qd.nn.CoopVec(i, i)  # error-site
            if qd.static(which == "assign"):
                for _ in range(2):
                    v = qd.nn.CoopVec(1.0, 2.0, 3.0)  # error-site
            if qd.static(which == "iter"):
                for e in v:  # error-site
                    Y[0] = e

    err = compile_error(k, np.zeros(1, dtype=np.float32))
    assert isinstance(err, (qd.QuadrantsTypeError, qd.QuadrantsSyntaxError)), repr(err)
    assert text in str(err), str(err)
    assert "# error-site" in str(err)


def test_length_limit():
    @qd.kernel
    def k(Y: qd.types.ndarray(qd.f32, 1)):
        for i in range(1):
            v = qd.nn.CoopVec(qd.Vector([1.0] * 100), qd.Vector([2.0] * 29))  # too-long-site
            a, *_ = v
            Y[i] = a

    err = compile_error(k, np.zeros(1, dtype=np.float32))
    assert_at(err, qd.QuadrantsSyntaxError, "qd.nn.CoopVec holds at most 128 elements, got 129",
              "# too-long-site")


def test_host_call_is_an_error():
    with pytest.raises(qd.QuadrantsSyntaxError, match="only be called inside Quadrants kernels"):
        qd.nn.CoopVec(1.0)
