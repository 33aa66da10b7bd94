"""Kernels whose lowering to QIR is checked against golden files (test_lowering_golden.py).

Each case is a function that initializes qd, defines its kernel and calls it once; the test
captures the QIR the frontend produced for that call. Keep the kernels small and the source
stable: the golden files quote their line numbers.
"""

import numpy as np

import quadrants as qd

NDARRAY_F32 = qd.types.ndarray(dtype=qd.f32, ndim=1)
CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


@case
def saxpy():
    @qd.kernel
    def k(a: qd.f32, x: NDARRAY_F32, y: NDARRAY_F32):
        for i in range(x.shape[0]):
            y[i] = a * x[i] + y[i]

    k(2.0, np.zeros(4, np.float32), np.zeros(4, np.float32))
    return k


@case
def ndrange_field():
    f = qd.field(qd.i32, shape=(4, 6))

    @qd.kernel
    def k():
        for i, j in qd.ndrange((1, 4), 6):
            f[i, j] = i * 10 + j

    k()
    return k


@case
def kernel_scope_reduction():
    @qd.kernel
    def k(x: NDARRAY_F32) -> qd.f32:
        total = 0.0
        for i in range(x.shape[0]):
            total += x[i]
        return total

    k(np.zeros(4, np.float32))
    return k


@case
def serial_while_break():
    @qd.kernel
    def k(n: qd.i32) -> qd.i32:
        s = 0
        i = 0
        while i < n:
            i += 1
            if i % 7 == 0:
                break
            s += i
        return s

    k(3)
    return k


@case
def static_unroll_and_funcs():
    @qd.func
    def scaled(v, s: qd.f32):
        v = v * s
        return v

    @qd.kernel
    def k(x: NDARRAY_F32):
        for i in range(x.shape[0]):
            acc = 0.0
            for j in qd.static(range(3)):
                acc += scaled(x[i], j + 1)
            x[i] = acc

    k(np.zeros(4, np.float32))
    return k


@case
def promotion_and_conditionals():
    @qd.kernel
    def k(a: qd.i32, b: qd.u8, c: qd.f64) -> qd.f64:
        d = a // 3 + b % 4
        e = c if d > 2 else a / 2
        return e + (a and b)

    k(1, 2, 3.0)
    return k


@case
def offset_order_struct_for():
    f = qd.field(qd.f32, shape=(3, 5), order="ji", offset=(-1, 2))

    @qd.kernel
    def k():
        for i, j in f:
            f[i, j] = i - j

    k()
    return k


@case
def wide_loops():
    # An i64 bound gives an i64 loop; a 2-d ndrange of runtime i32 extents counts in i64 (the
    # product may pass 2^31) while i and j stay i32; a field of 2^31 elements takes i64 indices.
    big = qd.field(qd.u8, shape=2**31 + 16)
    out = qd.field(qd.i32, shape=4)

    @qd.kernel
    def k(n: qd.i64, m: qd.i32):
        for i in range(n - 4, n):
            big[i] = 1
        for i, j in qd.ndrange(m, m):
            out[0] += i + j

    k(2**31 + 16, 2)
    return k


@qd.dataclass
class _Pair:
    a: qd.f32
    n: qd.i32


@qd.real_func
def _walk(p: _Pair, x: NDARRAY_F32, d: qd.i32) -> qd.types.vector(2, qd.f32):
    r = qd.Vector([p.a, 0.0])
    if d > 0:
        r = _walk(_Pair(a=p.a + x[d], n=p.n + 1), x, d - 1) + qd.Vector([0.0, p.n])
    return r


@case
def recursive_real_func_aggregates():
    # A recursive real_func with a struct parameter (one scalar parameter per member), an
    # ndarray parameter (passed on) and a vector result (through a result array of the caller).
    @qd.kernel
    def k(x: NDARRAY_F32, y: NDARRAY_F32):
        for i in range(x.shape[0]):
            y[i] = _walk(_Pair(a=0.0, n=i), x, i)[1]

    k(np.zeros(4, np.float32), np.zeros(4, np.float32))
    return k


@qd.real_func
def _seek(w: qd.template(), x: NDARRAY_F32, d: qd.i32) -> qd.types.vector(2, qd.f32):
    for j in range(d):
        if x[j] > w[j]:
            return qd.Vector([j, x[j]])
    if d <= 0:
        return qd.Vector([-1.0, 0.0])
    return _seek(w, x, d - 1) * 0.5


@case
def recursive_real_func_early_return_template():
    # A recursive real_func with a template (field) parameter, which is no parameter of the
    # function, and vector results returned from inside a loop and an if: each return stores
    # the result's variables and leaves the function's one-trip loop, the end fills the result
    # array.
    w = qd.field(qd.f32, shape=4)

    @qd.kernel
    def k(x: NDARRAY_F32, y: NDARRAY_F32):
        for i in range(x.shape[0]):
            y[i] = _seek(w, x, i)[0]

    k(np.zeros(4, np.float32), np.zeros(4, np.float32))
    return k


@case
def nn_matvec():
    """A cooperative vector through a packed layer with a bias and ReLU: the frontend stores x,
    emits one nn_matvec and reads y back; nn_lower turns it into loops."""
    _, w, b = qd.nn.pack(np.ones((3, 2)), np.ones(3))

    @qd.kernel
    def k(W: qd.nn.MatrixView, B: qd.nn.MatrixView, x: NDARRAY_F32, y: NDARRAY_F32):
        for i in range(x.shape[0]):
            v = qd.nn.CoopVec(x[i], 1.0, dtype=qd.f16)
            r0, r1, r2 = qd.max(qd.nn.matvec(W, v, B), 0.0)
            y[i] = r0 + r1 + r2

    k(w, b, np.zeros(4, np.float32), np.zeros(4, np.float32))
    return k
