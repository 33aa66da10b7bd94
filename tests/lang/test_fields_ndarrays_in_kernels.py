"""Spec 0.6 / 0.11 / 0.12 / 0.13: fields and ndarrays read and written by kernels, every dtype and
ndim 0..4, order/offset fields, external NumPy arrays, template specialisation, argument errors."""

import warnings

import numpy as np
import pytest

import quadrants as qd

from .helpers import ALL_TYPES, FLOAT_TYPES, INT_TYPES, NP, is_float, marker_line, name, rand, rng

NDArray = qd.types.NDArray

SHAPES = {0: (), 1: (37,), 2: (9, 7), 3: (4, 5, 6), 4: (3, 2, 5, 4)}


def transform(t, x):
    """What the kernels below compute, in NumPy: ~x on ints, -2x on floats, not x on u1."""
    if t is qd.u1:
        return np.logical_not(x)
    if is_float(t):
        return (x * NP[t](-2)).astype(NP[t])
    return np.invert(x)


def _random(t, shape):
    return np.asarray(rand(t, int(np.prod(shape, dtype=np.int64)))).reshape(shape)


@qd.kernel
def _field_int(src: qd.template(), dst: qd.template()):
    for I in qd.grouped(src):
        dst[I] = ~src[I]


@qd.kernel
def _field_float(src: qd.template(), dst: qd.template()):
    for I in qd.grouped(src):
        dst[I] = src[I] * -2


@qd.kernel
def _field_bool(src: qd.template(), dst: qd.template()):
    for I in qd.grouped(src):
        dst[I] = not src[I]


@qd.kernel
def _field_0d_int(src: qd.template(), dst: qd.template()):
    dst[None] = ~src[None]


@qd.kernel
def _field_0d_float(src: qd.template(), dst: qd.template()):
    dst[()] = src[()] * -2


@qd.kernel
def _field_0d_bool(src: qd.template(), dst: qd.template()):
    dst[None] = not src[None]


@pytest.mark.parametrize("ndim", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("t", ALL_TYPES, ids=name)
def test_field_every_dtype_ndim(t, ndim):
    shape = SHAPES[ndim]
    src = qd.field(t, shape=shape)
    dst = qd.field(t, shape=shape)
    x = _random(t, shape)
    src.from_numpy(x)
    kind = "bool" if t is qd.u1 else ("float" if is_float(t) else "int")
    if ndim == 0:
        kern = {"int": _field_0d_int, "float": _field_0d_float, "bool": _field_0d_bool}[kind]
    else:
        kern = {"int": _field_int, "float": _field_float, "bool": _field_bool}[kind]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kern(src, dst)
    got = dst.to_numpy()
    np.testing.assert_array_equal(got, transform(t, x))


@pytest.mark.parametrize("ndim", [1, 2, 3, 4])
def test_field_explicit_indices(ndim):
    shape = SHAPES[ndim]
    src = qd.field(qd.i32, shape=shape)
    dst = qd.field(qd.i32, shape=shape)
    x = rng.integers(-1000, 1000, shape).astype(np.int32)
    src.from_numpy(x)
    kern = {1: _explicit1, 2: _explicit2, 3: _explicit3, 4: _explicit4}[ndim]
    kern(src, dst)
    np.testing.assert_array_equal(dst.to_numpy(), x * 3 + 1)


@qd.kernel
def _explicit1(src: qd.template(), dst: qd.template()):
    for i in range(src.shape[0]):
        dst[i] = src[i] * 3 + 1


@qd.kernel
def _explicit2(src: qd.template(), dst: qd.template()):
    for i, j in qd.ndrange(src.shape[0], src.shape[1]):
        dst[i, j] = src[i, j] * 3 + 1


@qd.kernel
def _explicit3(src: qd.template(), dst: qd.template()):
    for i, j, l in src:
        dst[i, j, l] = src[i, j, l] * 3 + 1


@qd.kernel
def _explicit4(src: qd.template(), dst: qd.template()):
    for i, j, l, m in src:
        dst[i, j, l, m] = src[i, j, l, m] * 3 + 1


def test_global_field_0d_none_and_empty_tuple():
    x = qd.field(qd.f32, shape=())

    @qd.kernel
    def k() -> qd.f32:
        x[None] = 2.5
        x[()] += 1.0
        return x[None]

    assert k() == 3.5
    assert x[None] == 3.5


def test_field_order_ji():
    f = qd.field(qd.i32, shape=(5, 8), order="ji")
    g = qd.field(qd.i32, shape=(5, 8))

    @qd.kernel
    def k2():
        for i, j in f:
            f[i, j] = i * 100 + j
        for i, j in qd.ndrange(5, 8):
            g[i, j] = f[i, j] + 1

    k2()
    i, j = np.indices((5, 8))
    np.testing.assert_array_equal(f.to_numpy(), i * 100 + j)
    np.testing.assert_array_equal(g.to_numpy(), i * 100 + j + 1)
    assert f[3, 7] == 307


def test_field_order_3d():
    f = qd.field(qd.f64, shape=(3, 4, 5), order="kij")
    x = rng.standard_normal((3, 4, 5))
    f.from_numpy(x)

    @qd.kernel
    def k(out: NDArray[qd.f64, 3]):
        for i, j, l in qd.ndrange(3, 4, 5):
            out[i, j, l] = f[i, j, l]

    out = np.zeros((3, 4, 5))
    k(out)
    np.testing.assert_array_equal(out, x)


def test_field_offset_negative_indices():
    f = qd.field(qd.i32, shape=(6, 4), offset=(-3, -10))

    @qd.kernel
    def k():
        for i in range(-3, 3):
            for j in range(-10, -6):
                f[i, j] = i * 100 + j

    @qd.kernel
    def read(i: qd.i32, j: qd.i32) -> qd.i32:
        return f[i, j]

    k()
    assert f[-3, -10] == -310
    assert read(-3, -10) == -310
    assert read(2, -7) == 193
    i, j = np.indices((6, 4))
    np.testing.assert_array_equal(f.to_numpy(), (i - 3) * 100 + (j - 10))


def test_field_offset_1d_struct_for():
    f = qd.field(qd.f32, shape=10, offset=-5)

    @qd.kernel
    def k():
        for i in f:
            f[i] = i * 0.5

    k()
    np.testing.assert_array_equal(f.to_numpy(), (np.arange(10) - 5) * np.float32(0.5))
    assert f[-5] == -2.5


def test_field_shape_is_compile_time_tuple():
    f = qd.field(qd.i32, shape=(3, 7))

    @qd.kernel
    def k() -> qd.i32:
        qd.static_assert(f.shape[1] == 7)
        s = 0
        for d in qd.static(f.shape):
            s = s * 10 + d
        return s

    assert k() == 37


def test_field_non_i32_index_is_cast():
    f = qd.field(qd.i32, shape=10)

    @qd.kernel
    def k(i: qd.i64, v: qd.i32):
        f[i] = v

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        k(4, 11)
    assert f[4] == 11


# --- ndarrays ---


@qd.kernel
def _nd_int(src: NDArray, dst: NDArray):
    for I in qd.grouped(src):
        dst[I] = ~src[I]


@qd.kernel
def _nd_float(src: NDArray, dst: NDArray):
    for I in qd.grouped(src):
        dst[I] = src[I] * -2


@qd.kernel
def _nd_bool(src: NDArray, dst: NDArray):
    for I in qd.grouped(src):
        dst[I] = not src[I]


@qd.kernel
def _nd0_int(src: NDArray, dst: NDArray):
    dst[()] = ~src[()]


@qd.kernel
def _nd0_float(src: NDArray, dst: NDArray):
    dst[()] = src[()] * -2


@qd.kernel
def _nd0_bool(src: NDArray, dst: NDArray):
    dst[()] = not src[()]


def _nd_kernel(t, ndim):
    kind = "bool" if t is qd.u1 else ("float" if is_float(t) else "int")
    if ndim == 0:
        return {"int": _nd0_int, "float": _nd0_float, "bool": _nd0_bool}[kind]
    return {"int": _nd_int, "float": _nd_float, "bool": _nd_bool}[kind]


@pytest.mark.parametrize("ndim", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("t", ALL_TYPES, ids=name)
def test_numpy_arrays_in_place(t, ndim):
    shape = SHAPES[ndim]
    x = _random(t, shape)
    out = np.zeros(shape, NP[t])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _nd_kernel(t, ndim)(x, out)
    np.testing.assert_array_equal(out, transform(t, x))


@pytest.mark.parametrize("ndim", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("t", ALL_TYPES, ids=name)
def test_qd_ndarrays(t, ndim):
    shape = SHAPES[ndim]
    x = _random(t, shape)
    src = qd.ndarray(t, shape=shape)
    dst = qd.ndarray(t, shape=shape)
    src.from_numpy(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _nd_kernel(t, ndim)(src, dst)
    np.testing.assert_array_equal(dst.to_numpy(), transform(t, x))


def test_ndarray_typed_annotation_and_shape():
    @qd.kernel
    def k(a: NDArray[qd.f32, 2], out: NDArray[qd.i32, 1]):
        out[0] = a.shape[0]
        out[1] = a.shape[1]
        for i, j in qd.ndrange(a.shape[0], a.shape[1]):
            a[i, j] = a[i, j] + (i - j)

    for shape in [(3, 4), (17, 1), (1, 100)]:
        a = rng.standard_normal(shape).astype(np.float32)
        a0 = a.copy()
        out = np.zeros(2, np.int32)
        k(a, out)
        assert tuple(out) == shape
        i, j = np.indices(shape)
        np.testing.assert_array_equal(a, a0 + (i - j).astype(np.float32))


def test_ndarray_keyword_annotation():
    @qd.kernel
    def k(a: qd.types.ndarray(dtype=qd.i64, ndim=1)) -> qd.i64:
        s = qd.i64(0)
        for i in range(a.shape[0]):
            s += a[i]
        return s

    a = rng.integers(-(2**40), 2**40, 1000).astype(np.int64)
    assert k(a) == int(a.sum())
    nd = qd.ndarray(qd.i64, shape=1000)
    nd.from_numpy(a)
    assert k(nd) == int(a.sum())


def test_fortran_order_numpy_array():
    @qd.kernel
    def k(a: NDArray[qd.i32, 2]):
        for i, j in a:
            a[i, j] = a[i, j] * 2 + i * 100 + j

    x = np.asfortranarray(rng.integers(-50, 50, (6, 9)).astype(np.int32))
    x0 = np.array(x)
    k(x)
    i, j = np.indices(x.shape)
    np.testing.assert_array_equal(x, x0 * 2 + i * 100 + j)


def test_ndarray_results_visible_after_call_and_reused():
    @qd.kernel
    def inc(a: NDArray[qd.i32, 1]):
        for i in a:
            a[i] += 1

    nd = qd.ndarray(qd.i32, shape=100)
    for _ in range(5):
        inc(nd)
    assert np.all(nd.to_numpy() == 5)
    assert nd[7] == 5


# --- specialisation ---


def test_template_field_recompiles_per_field(capsys):
    a = qd.field(qd.i32, shape=4)
    b = qd.field(qd.i32, shape=4)

    @qd.kernel
    def k(f: qd.template(), v: qd.i32):
        qd.static_print("trace")
        for i in f:
            f[i] = v

    k(a, 1)
    k(a, 2)
    k(b, 3)
    k(b, 4)
    k(a, 5)
    assert capsys.readouterr().out.count("trace") == 2
    assert list(a.to_numpy()) == [5] * 4
    assert list(b.to_numpy()) == [4] * 4


def test_template_field_shapes_differ():
    a = qd.field(qd.f32, shape=3)
    b = qd.field(qd.f32, shape=(2, 2))

    @qd.kernel
    def k(f: qd.template()) -> qd.i32:
        return len(f.shape) * 10 + f.shape[0]

    assert k(a) == 13
    assert k(b) == 22


def test_ndarray_specialisation_per_dtype_ndim(capsys):
    @qd.kernel
    def k(a: NDArray):
        qd.static_print("trace")
        for I in qd.grouped(a):
            a[I] = 1

    k(np.zeros(3, np.int32))
    k(np.zeros(17, np.int32))  # same dtype/ndim: reused
    k(qd.ndarray(qd.i32, shape=5))  # same
    assert capsys.readouterr().out.count("trace") == 1
    k(np.zeros(3, np.float32))  # new dtype
    k(np.zeros((3, 2), np.int32))  # new ndim
    assert capsys.readouterr().out.count("trace") == 2
    a = np.zeros((4, 5), np.float64)
    k(a)
    assert np.all(a == 1)


# --- argument errors (spec 0.6) ---


def test_ndarray_wrong_scalar_dtype_qd_ndarray():
    @qd.kernel
    def k(a: NDArray[qd.f32, 1]):
        a[0] = 1

    with pytest.raises(TypeError):
        k(qd.ndarray(qd.i32, shape=4))


def test_ndarray_wrong_ndim_qd_ndarray():
    @qd.kernel
    def k(a: NDArray[qd.f32, 1]):
        a[0] = 1

    with pytest.raises(ValueError):
        k(qd.ndarray(qd.f32, shape=(4, 2)))


def test_ndarray_wrong_dtype_numpy():
    @qd.kernel
    def k(a: NDArray[qd.f32, 1]):
        a[0] = 1

    with pytest.raises(ValueError):
        k(np.zeros(4, np.float64))


def test_ndarray_wrong_ndim_numpy():
    @qd.kernel
    def k(a: NDArray[qd.f32, 1]):
        a[0] = 1

    with pytest.raises(ValueError):
        k(np.zeros((4, 4), np.float32))


def test_non_contiguous_numpy_is_value_error():
    @qd.kernel
    def k(a: NDArray[qd.f32, 1]):
        a[0] = 1

    with pytest.raises(ValueError):
        k(np.zeros(8, np.float32)[::2])


def test_non_array_to_ndarray_param():
    @qd.kernel
    def k(a: NDArray[qd.f32, 1]):
        a[0] = 1

    with pytest.raises(qd.QuadrantsRuntimeTypeError):
        k([1.0, 2.0])


def test_qd_ndarray_to_template_param():
    @qd.kernel
    def k(a: qd.template()):
        a[0] = 1

    with pytest.raises(qd.QuadrantsRuntimeTypeError):
        k(qd.ndarray(qd.f32, shape=4))


def test_float_to_int_scalar_param():
    @qd.kernel
    def k(a: qd.i32) -> qd.i32:
        return a

    with pytest.raises(qd.QuadrantsRuntimeTypeError):
        k(1.5)


def test_int_to_float_scalar_param_ok():
    @qd.kernel
    def k(a: qd.f32) -> qd.f32:
        return a

    assert k(3) == 3.0
    assert k(np.int64(4)) == 4.0


def test_global_ndarray_is_compilation_error():
    nd = qd.ndarray(qd.f32, shape=4)

    @qd.kernel
    def k():
        nd[0] = 1

    with pytest.raises(qd.QuadrantsCompilationError):
        k()


def test_store_float_into_int_field_converts():
    f = qd.field(qd.i32, shape=3)

    @qd.kernel
    def k():
        f[0] = -1.5
        f[1] = 2.9

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        k()
    assert [f[0], f[1]] == [-1, 2]


def test_wrong_index_count_in_kernel():
    f = qd.field(qd.i32, shape=(3, 3))

    @qd.kernel
    def k():
        f[1] = 2

    with pytest.raises(qd.QuadrantsCompilationError):
        k()


def test_vector_valued_index():
    """A vector index -- a runtime `(i, j) if c else (j, i)`, a qd.Vector -- is one index per
    component, like a tuple (Genesis indexes its collision-pair table so)."""
    n = 7
    table = np.random.default_rng().integers(-100, 100, (n, n)).astype(np.int32)
    f = qd.field(qd.i32, shape=(n, n))
    f.from_numpy(table)

    @qd.kernel
    def k(a: qd.types.ndarray(dtype=qd.i32, ndim=2), out: qd.types.ndarray(dtype=qd.i32, ndim=2)):
        for i, j in qd.ndrange(n, n):
            out[i, j] = a[(i, j) if i > j else (j, i)] * 1000 + f[qd.Vector([j, i])]

    out = np.zeros((n, n), np.int32)
    k(table, out)
    i, j = np.indices((n, n))
    np.testing.assert_array_equal(out, np.where(i > j, table, table.T) * 1000 + table.T)


# --- field.fill() inside kernels ---



def test_fill_in_a_kernel_runs_at_every_call():
    f = qd.field(qd.f32, shape=(5, 3))
    z = qd.field(qd.i32, shape=())
    v = qd.Vector.field(3, qd.f64, shape=7)
    m = qd.Matrix.field(2, 2, qd.i32, shape=(2, 3))

    @qd.kernel
    def k(a: qd.f32, b: qd.i32, c: qd.f64):
        f.fill(a)
        z.fill(b)
        v.fill(c)
        m.fill(b)

    for _ in range(2):
        a, c = rng.standard_normal(2)
        b = int(rng.integers(-1000, 1000))
        for x in (f, z, v, m):
            x.fill(0)  # Python scope, between the calls
        k(a, b, c)
        np.testing.assert_array_equal(f.to_numpy(), np.full((5, 3), np.float32(a)))
        assert z[None] == b
        np.testing.assert_array_equal(v.to_numpy(), np.full((7, 3), c))
        np.testing.assert_array_equal(m.to_numpy(), np.full((2, 3, 2, 2), b, np.int32))


def test_fill_with_a_vector_and_inside_funcs_and_loops():
    v = qd.Vector.field(2, qd.f32, shape=(4, 4))
    f = qd.field(qd.i32, shape=6)

    @qd.func
    def reset(x: qd.template(), value):
        x.fill(value)

    @qd.kernel
    def k(p: qd.f32, q: qd.f32, n: qd.i32):
        reset(v, qd.Vector([p, q]))
        for i in range(n):  # a nested fill is a serial loop of each thread
            f.fill(i)

    p, q = rng.standard_normal(2).astype(np.float32)
    n = int(rng.integers(1, 9))
    k(p, q, n)
    np.testing.assert_array_equal(v.to_numpy(), np.broadcast_to([p, q], (4, 4, 2)))
    assert set(f.to_numpy()) <= set(range(n))


def test_python_scope_field_methods_are_refused_in_kernels():
    S = qd.types.struct(a=qd.f32, b=qd.i32)
    s = S.field(shape=3)
    f = qd.field(qd.f32, shape=3)

    @qd.kernel
    def struct_fill(w: qd.f32):
        s.fill(w)  # <struct fill>

    with pytest.raises(qd.QuadrantsSyntaxError, match="fill cannot be called in Quadrants-scope") as e:
        struct_fill(1.0)
    assert marker_line(__file__, "# <struct fill>") in str(e.value)

    @qd.kernel
    def to_numpy():
        print(f.to_numpy())  # <to_numpy>

    with pytest.raises(qd.QuadrantsSyntaxError, match="to_numpy cannot be called in Quadrants-scope") as e:
        to_numpy()
    assert marker_line(__file__, "# <to_numpy>") in str(e.value)
