"""Kernel results: structs and vectors/matrices inside tuple return types, results beyond 16
scalars (up to QD_MAX_RESULTS), and the error for a returned value that does not fit a struct
(or scalar) return type."""

import os

import numpy as np
import pytest

import quadrants as qd

from .helpers import check_line, rng

THIS_FILE = os.path.abspath(__file__)

St = qd.types.struct(a=qd.f32, b=qd.i32)
Same = qd.types.struct(a=qd.f32, b=qd.i32)  # the same members as St
Other = qd.types.struct(a=qd.i32, b=qd.i32)


@qd.kernel
def _tuple_subscript(x: qd.f32, n: qd.i32) -> tuple[St, qd.i32]:
    return St(a=x, b=n), n * 3


@qd.kernel
def _tuple_plain(x: qd.f32, n: qd.i32) -> (St, qd.i32):
    return St(a=x, b=n), n + 1


@qd.kernel
def _mixed(x: qd.f32) -> tuple[qd.types.vector(3, qd.f32), St, qd.types.matrix(2, 2, qd.i32), qd.f32]:
    return qd.Vector([x, 2 * x, 3 * x]), Same(a=x, b=4), qd.Matrix([[1, 2], [3, 4]]), x + 1


def test_tuple_with_struct():
    x, n = float(np.float32(rng.random())), int(rng.integers(-100, 100))
    s, m = _tuple_subscript(x, n)
    assert isinstance(s, St) and s.a == pytest.approx(x) and s.b == n and m == 3 * n
    s, m = _tuple_plain(x, n)
    assert s.to_dict() == {"a": pytest.approx(x), "b": n} and m == n + 1


def test_tuple_with_vectors_matrices_and_structs():
    x = float(np.float32(rng.random()))
    v, s, m, y = _mixed(x)
    np.testing.assert_allclose(v.to_numpy(), [x, 2 * x, 3 * x], rtol=1e-6)
    assert isinstance(s, St) and s.b == 4
    assert m.to_list() == [[1, 2], [3, 4]]
    assert y == pytest.approx(x + 1)


def test_vector_of_20():
    @qd.kernel
    def k() -> qd.types.vector(20, qd.i32):
        v = qd.Vector([i for i in range(20)])
        return v

    assert k().sum() == 190


def test_matrix_5x5_and_many_scalars():
    values = rng.random((5, 5)).astype(np.float32)
    arr = qd.ndarray(qd.f32, (5, 5))
    arr.from_numpy(values)

    @qd.kernel
    def mat(a: qd.types.ndarray(dtype=qd.f32, ndim=2)) -> qd.types.matrix(5, 5, qd.f32):
        m = qd.Matrix.zero(qd.f32, 5, 5)
        for i, j in qd.static(qd.ndrange(5, 5)):
            m[i, j] = a[i, j] * 2
        return m

    np.testing.assert_allclose(mat(arr).to_numpy(), values * 2, rtol=1e-6)

    @qd.kernel
    def scalars(x: qd.i32) -> tuple[
        qd.i32, qd.i32, qd.i32, qd.i32, qd.i32, qd.i32, qd.i32, qd.i32, qd.i32, qd.i32,
        qd.i32, qd.i32, qd.i32, qd.i32, qd.i32, qd.i32, qd.i32, qd.i32, qd.i32, qd.f64,
    ]:
        return (x, x + 1, x + 2, x + 3, x + 4, x + 5, x + 6, x + 7, x + 8, x + 9, x + 10,
                x + 11, x + 12, x + 13, x + 14, x + 15, x + 16, x + 17, x + 18, x * 0.5)

    x = int(rng.integers(-1000, 1000))
    result = scalars(x)
    assert list(result[:19]) == [x + i for i in range(19)] and result[19] == x * 0.5


def test_large_struct_and_limit():
    Big = qd.types.struct(v=qd.types.vector(40, qd.f32), w=qd.types.vector(40, qd.i32))

    @qd.kernel
    def big(x: qd.f32) -> Big:
        return Big(v=qd.Vector([x * i for i in range(40)]), w=qd.Vector([i for i in range(40)]))

    x = float(np.float32(rng.random()))
    b = big(x)
    np.testing.assert_allclose(b.v.to_numpy(), [np.float32(x) * i for i in range(40)], rtol=1e-6)
    assert b.w.to_list() == list(range(40))

    with pytest.warns(UserWarning, match="not suggested"):
        too_many_type = qd.types.vector(1025, qd.i32)

    @qd.kernel
    def too_many() -> too_many_type:
        return qd.Vector([1] * 1025)  # the limit line

    with pytest.warns(UserWarning), pytest.raises(
        qd.QuadrantsSyntaxError, match="a kernel returns at most 1024 values"
    ) as info:
        too_many()
    check_line(info.value, THIS_FILE, "# the limit line")


def _return_error(kernel, marker, value, required):
    with pytest.raises(qd.QuadrantsCompilationError) as info:
        kernel()
    text = str(info.value)
    assert type(info.value) is qd.QuadrantsCompilationError, type(info.value)
    assert (
        f"QuadrantsRuntimeTypeError: Return (type={value}) cannot be converted into required type "
        f"{required}" in text
    ), text
    check_line(info.value, THIS_FILE, marker)


ST_TEXT = "<qd.StructType a=f32, b=i32, struct_methods={}>"


def test_vector_returned_as_struct():
    @qd.kernel
    def k() -> St:
        return qd.Vector([1.0, 2.0])  # vector as struct

    _return_error(k, "# vector " + "as struct", "<qd.Expr>", ST_TEXT)


def test_other_struct_type_returned():
    @qd.kernel
    def k() -> St:
        return Other(a=1, b=2)  # other struct

    _return_error(k, "# other " + "struct", "<qd.Struct a=<qd.Expr>, b=<qd.Expr>, struct_methods={}>", ST_TEXT)

    @qd.kernel
    def same() -> St:
        return Same(a=2.5, b=3)  # same members: fine

    assert same().to_dict() == {"a": 2.5, "b": 3}


def test_scalar_returned_as_struct_and_struct_as_scalar():
    @qd.kernel
    def k() -> St:
        return 1.5  # scalar as struct

    _return_error(k, "# scalar " + "as struct", "1.5", ST_TEXT)

    @qd.kernel
    def k2() -> qd.f32:
        return St(a=1.0, b=2)  # struct as scalar

    _return_error(k2, "# struct " + "as scalar", "<qd.Struct a=<qd.Expr>, b=<qd.Expr>, struct_methods={}>", "f32")

    @qd.kernel
    def k3() -> St:
        return St(a=1.0, b=2), 1  # tuple as struct

    _return_error(k3, "# tuple " + "as struct", "({'a': <qd.Expr>, 'b': <qd.Expr>}, 1)", ST_TEXT)
