"""Errors of vector/matrix code in kernels: the reference's exception classes, the message, and
the source line of the offending statement."""

import inspect
import warnings

import pytest

import quadrants as qd
from quadrants import _core

vec3 = qd.types.vector(3, qd.f32)


def line_of(kernel, text):
    """The file line number of the first source line of `kernel` containing `text`."""
    lines, first = inspect.getsourcelines(kernel._function)
    for offset, line in enumerate(lines):
        if text in line:
            return first + offset
    raise AssertionError(text)


def check(kernel, exc, message, marker, *args):
    with pytest.raises(exc) as info:
        kernel(*args)
    text = str(info.value)
    assert message in text, text
    assert f":{line_of(kernel, marker)}:" in text, text


def test_matmul_shape_mismatch():
    @qd.kernel
    def k():
        a = qd.Matrix([[1.0, 2.0], [3.0, 4.0]])
        v = qd.Vector([1.0, 2.0, 3.0])
        w = a @ v  # here

    check(k, qd.QuadrantsTypeError, "Dimension mismatch", "# here")


def test_elementwise_shape_mismatch():
    @qd.kernel
    def k():
        a = qd.Vector([1.0, 2.0])
        b = qd.Vector([1.0, 2.0, 3.0])
        c = a + b  # here

    check(k, qd.QuadrantsTypeError, "Dimension mismatch", "# here")


def test_constant_index_out_of_range():
    @qd.kernel
    def k() -> qd.f32:
        v = qd.Vector([1.0, 2.0, 3.0])
        return v[3]  # here

    with pytest.raises(qd.QuadrantsCompilationError) as info:
        k()
    assert isinstance(info.value, IndexError)
    assert "out of range" in str(info.value)
    assert f":{line_of(k, '# here')}:" in str(info.value)


def test_negative_index():
    @qd.kernel
    def k() -> qd.f32:
        v = qd.Vector([1.0, 2.0, 3.0])
        return v[-1]  # here

    check(k, qd.QuadrantsSyntaxError, "Negative indices", "# here")


def test_variable_in_slice():
    @qd.kernel
    def k(n: qd.i32) -> qd.f32:
        v = qd.Vector([1.0, 2.0, 3.0])
        w = v[0:n]  # here
        return w[0]

    check(k, qd.QuadrantsCompilationError, "Quadrants does not support variables in slice now", "# here", 2)


def test_swizzle_beyond_size():
    @qd.kernel
    def k() -> qd.f32:
        v = qd.Vector([1.0, 2.0])
        return v.z  # here

    check(k, qd.QuadrantsSyntaxError, "vec2 only has attributes=('x', 'y'), got=('z',)", "# here")


def test_swizzle_beyond_size_message():
    @qd.kernel
    def k() -> qd.f32:
        v = qd.Vector([1.0, 2.0])
        return v.xyz[0]  # here

    check(k, qd.QuadrantsSyntaxError, "vec2 only has attributes=('x', 'y'), got=('x', 'y', 'z')", "# here")

    @qd.kernel
    def k2() -> qd.f32:
        v = qd.Vector([1.0, 2.0])
        return v.rgb[0]  # here

    check(k2, qd.QuadrantsSyntaxError, "vec2 only has attributes=('g', 'r'), got=('r', 'g', 'b')", "# here")


@pytest.mark.parametrize(
    "name, message",
    [
        ("xyz", "vec2 only has attributes=('x', 'y'), got=('x', 'y', 'z')"),
        ("rgb", "vec2 only has attributes=('g', 'r'), got=('r', 'g', 'b')"),
        ("xxw", "vec2 only has attributes=('x', 'y'), got=('x', 'x', 'w')"),
    ],
)
def test_swizzle_beyond_size_message_python_scope(name, message):
    with pytest.raises(qd.QuadrantsSyntaxError) as info:
        getattr(qd.Vector([1.0, 2.0]), name)
    assert message in str(info.value)


def test_matrix_needs_both_indices():
    @qd.kernel
    def k() -> qd.f32:
        m = qd.Matrix([[1.0, 2.0], [4.0, 5.0]])
        return m[0][1]  # here

    check(k, _core.QuadrantsIndexError, "Expected 2 indices, got 1.", "# here")


def test_runtime_single_index_of_matrix():
    @qd.kernel
    def k(i: qd.i32) -> qd.f32:
        m = qd.Matrix([[1.0, 2.0], [4.0, 5.0]])
        return m[i].sum()  # here

    check(k, _core.QuadrantsIndexError, "Expected 2 indices, got 1.", "# here", 0)


def test_vector_two_indices():
    @qd.kernel
    def k() -> qd.f32:
        v = qd.Vector([1.0, 2.0])
        return v[0, 0]  # here

    check(k, _core.QuadrantsIndexError, "Expected 1 indices, got 2.", "# here")


def test_matrix_three_indices():
    @qd.kernel
    def k() -> qd.f32:
        m = qd.Matrix([[1.0, 2.0], [4.0, 5.0]])
        return m[0, 0, 0]  # here

    check(k, _core.QuadrantsIndexError, "Expected 2 indices, got 3.", "# here")


@pytest.mark.parametrize("method", ["trace", "determinant", "inverse"])
def test_square_only_methods(method):
    @qd.kernel
    def k() -> qd.f32:
        m = qd.Matrix([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        if qd.static(method == "trace"):
            m.trace()  # here-trace
        elif qd.static(method == "determinant"):
            m.determinant()  # here-determinant
        else:
            m.inverse()  # here-inverse
        return 0.0

    check(k, qd.QuadrantsCompilationError, "expected a square matrix, got shape (2, 3)", f"# here-{method}")


def test_transpose_of_vector():
    @qd.kernel
    def k():
        v = qd.Vector([1.0, 2.0])
        w = v.transpose()  # here

    check(k, qd.QuadrantsCompilationError, "outer_product", "# here")


def test_trace_of_non_square():
    @qd.kernel
    def k():
        m = qd.Matrix([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        t = m.trace()  # here

    check(k, qd.QuadrantsCompilationError, "square", "# here")


def test_cross_wrong_size():
    @qd.kernel
    def k():
        a = qd.Vector([1.0, 2.0, 3.0, 4.0])
        c = a.cross(a)  # here

    check(k, qd.QuadrantsCompilationError, "cross()", "# here")


def test_list_of_vectors_needs_rows_or_cols():
    @qd.kernel
    def k():
        a = qd.Vector([1.0, 2.0])
        m = qd.Matrix([a, a])  # here

    check(k, qd.QuadrantsSyntaxError, "cols/rows required", "# here")


def test_type_object_wrong_count_and_no_args():
    @qd.kernel
    def k():
        v = vec3(1.0, 2.0)  # here

    check(k, qd.QuadrantsTypeError, "takes 3 entries", "# here")

    @qd.kernel
    def k2():
        v = vec3()  # here

    check(k2, qd.QuadrantsSyntaxError, "at least one argument", "# here")


def test_assign_wrong_shape():
    @qd.kernel
    def k():
        v = qd.Vector([1.0, 2.0, 3.0])
        v = qd.Vector([1.0, 2.0])  # here

    check(k, qd.QuadrantsTypeError, "cannot assign", "# here")


def test_determinant_and_inverse_hook():
    @qd.kernel
    def k():
        m = qd.Matrix([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        d = m.determinant()  # here

    check(k, qd.QuadrantsCompilationError, "square", "# here")


def test_more_than_144_entries_warns():
    @qd.kernel
    def k() -> qd.f32:
        m = qd.Matrix.zero(qd.f32, 13, 12)  # here
        return m[0, 0]

    with pytest.warns(UserWarning, match="> 144 entries"):
        assert k() == 0.0
    with pytest.warns(UserWarning, match="> 144 entries"):
        qd.Matrix.zero(qd.f32, 13, 12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        qd.Matrix.zero(qd.f32, 12, 12)


def test_wrong_kernel_argument():
    @qd.kernel
    def k(v: vec3) -> qd.f32:
        return v[0]

    with pytest.raises(qd.QuadrantsRuntimeTypeError):
        k([1.0, 2.0])


def test_linalg_size_limits():
    @qd.kernel
    def k():
        m = qd.Matrix.identity(qd.f32, 5)
        d = m.determinant()  # here

    check(k, qd.QuadrantsCompilationError, "up to 4x4", "# here")

    @qd.kernel
    def k2():
        m = qd.Matrix.identity(qd.f32, 13)
        d = m.inverse()  # here

    with pytest.warns(UserWarning):
        check(k2, qd.QuadrantsCompilationError, "up to 12x12", "# here")
