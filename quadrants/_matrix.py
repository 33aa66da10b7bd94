"""``qd.Matrix``, ``qd.Vector`` and the compound types ``qd.types.vector`` / ``qd.types.matrix``.

In kernels a vector or matrix is a compile-time shaped group of scalars that the compiler
(csrc/frontend/lower_matrix.c) unrolls: ``qd.Vector(...)``, ``qd.Matrix.zero(...)`` and the
methods are recognised by name (``Matrix``/``Vector`` carry ``_qd_builtin`` on their metaclass,
so instances do not; the class methods carry ``_qd_builtin = "Matrix.<name>"``). A type object
made by ``qd.types.vector(n, dt)`` / ``qd.types.matrix(n, m, dt)`` carries ``_qd_matrix_type``
and ``n``, ``m``, ``ndim``, ``dtype``; calling it in a kernel builds a value of that type.

In Python scope a ``Matrix`` is a small NumPy-backed value (``entries``: a 1-D array for a
vector, 2-D for a matrix, of ``dt``'s type when given, else of NumPy's: float64, int64, bool) that
prints as NumPy does; ``dtype`` is the type a kernel gives it. Operators, comparisons and the
qd math builtins work elementwise (``elementwise``) and give a ``Matrix``. A ``Matrix`` captured by a kernel (a global, a template argument)
becomes a constant of the kernel: it carries ``_qd_matrix_value``, ``_qd_entries`` (the
row-major Python scalars), ``n``, ``m``, ``ndim`` and ``dtype``.
"""

import numbers
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from quadrants import _types
from quadrants._core import QuadrantsRuntimeError, QuadrantsSyntaxError, QuadrantsTypeError

MAX_ENTRIES = 144


def _warn_size(count):
    if count > MAX_ENTRIES:
        warnings.warn(
            f"Matrix with {count} > {MAX_ENTRIES} entries are not suggested: they are unrolled "
            "into scalar registers, which makes compilation slow and may spill; use a field for "
            "large matrices",
            UserWarning,
            stacklevel=3,
        )


def _is_matrix(x):
    return isinstance(x, Matrix)


def _flatten_args(args):
    """The scalars of a type-object call's arguments (lists, vectors, matrices, scalars)."""
    out = []
    for a in args:
        if isinstance(a, Matrix):
            out.extend(a.entries.reshape(-1).tolist())
        elif isinstance(a, np.ndarray):
            out.extend(a.reshape(-1).tolist())
        elif isinstance(a, (list, tuple)):
            out.extend(_flatten_args(a))
        else:
            out.append(a)
    return out


def _infer_dtype(values):
    if any(isinstance(v, (float, np.floating)) for v in values):
        return _types.default_fp()
    if values and all(isinstance(v, (bool, np.bool_)) for v in values):
        return _types.default_ip()
    return _types.default_ip()


class _MatrixMeta(type):
    """Metaclass of Matrix/Vector: the kernel builtin marker lives here so that instances
    (Python-scope values) are not taken for the constructor."""

    @property
    def _qd_builtin(cls):
        return cls._qd_builtin_name


def _builtin(name):
    def mark(function):
        function._qd_builtin = name
        return function

    return mark


class Matrix(metaclass=_MatrixMeta):
    """A vector (1-D) or matrix (2-D, row-major) of scalars. See the module docstring."""

    _qd_builtin_name = "Matrix"
    _qd_matrix_value = True
    __array_priority__ = 1000

    if TYPE_CHECKING:
        # Type checkers see one permissive constructor, so that the vector and matrix types of
        # quadrants.math (aliases of Vector and Matrix for them) are callable with components:
        # ``qd.math.vec3(x, y, z)``, ``qd.math.vec3(0)``.
        def __init__(self, *args: Any, **kwargs: Any) -> None: ...

    else:

        def __init__(self, arr, dt=None, ndim=None):
            if isinstance(arr, Matrix):
                if dt is None and ndim in (None, arr.ndim):
                    self.dtype = arr.dtype
                    self.entries = arr.entries.copy()
                    return
                data = arr.entries.tolist()
                dt = dt or arr.dtype
            elif isinstance(arr, np.ndarray):
                data = arr.tolist()
            else:
                data = list(arr)
            if ndim is None:
                ndim = 2 if data and isinstance(data[0], (list, tuple, np.ndarray, Matrix)) else 1
            if ndim == 2:
                rows = [r.entries.tolist() if isinstance(r, Matrix) else list(r) for r in data]
                if rows and any(len(r) != len(rows[0]) for r in rows):
                    raise QuadrantsTypeError("matrix rows must have the same length")
                flat = [v for r in rows for v in r]
                shape = (len(rows), len(rows[0]) if rows else 0)
            else:
                if any(isinstance(v, Matrix) for v in data):
                    raise QuadrantsSyntaxError(
                        "cols/rows required when using list of vectors (use qd.Matrix.rows or "
                        "qd.Matrix.cols)"
                    )
                flat = data
                shape = (len(data),)
            _warn_size(len(flat))
            self.dtype = _types.cook_dtype(dt) if dt is not None else _infer_dtype(flat)
            self.entries = _host_entries(flat, self.dtype, dt is not None).reshape(shape)

    # --- shape ---
    @property
    def n(self):
        return self.entries.shape[0]

    @property
    def m(self):
        return self.entries.shape[1] if self.entries.ndim == 2 else 1

    @property
    def ndim(self):
        return self.entries.ndim

    def get_shape(self):
        return self.entries.shape

    def __len__(self):
        return self.n

    def _qd_cache_key(self):
        return ("matrix", self.entries.shape, self.dtype.name, self._qd_entries)

    @property
    def _qd_entries(self):
        return tuple(_types.to_python_value(v, self.dtype) for v in self.entries.reshape(-1))

    # --- access ---
    def __getitem__(self, index) -> Any:
        result = self.entries[index]
        if isinstance(result, np.ndarray):
            return _wrap(result, self.dtype)
        return _types.to_python_value(result, self.dtype)

    def __setitem__(self, index, value):
        if isinstance(value, Matrix):
            value = value.entries
        self.entries[index] = value

    def __iter__(self):
        for i in range(self.n):
            yield self[i]

    def __getattr__(self, name):
        indices = _swizzle_indices(name, self)
        if indices is None:
            raise AttributeError(name)
        if len(indices) == 1:
            return _types.to_python_value(self.entries[indices[0]], self.dtype)
        return _wrap(self.entries[indices], self.dtype)

    def __setattr__(self, name, value):
        if name in ("entries", "dtype") or _swizzle_indices(name, self) is None:
            object.__setattr__(self, name, value)
            return
        indices = _swizzle_indices(name, self)
        values = _flatten_args([value]) if not isinstance(value, numbers.Number) else [value]
        if len(values) == 1:
            values = values * len(indices)
        elif len(values) != len(indices):
            raise QuadrantsRuntimeError(f"value len does not match the swizzle pattern={name}")
        for i, v in zip(indices, values):
            self.entries[i] = v

    # --- conversion ---
    def to_numpy(self, keep_dims=False) -> np.ndarray:
        return self.entries.copy()

    def to_list(self):
        return self.entries.tolist()

    def fill(self, value):
        self.entries[...] = value

    def cast(self, dtype):
        dtype = _types.cook_dtype(dtype)
        flat = _host_entries(self.entries.reshape(-1).tolist(), dtype, True)
        return _wrap(flat.reshape(self.entries.shape), dtype)

    def __repr__(self):
        return str(self.entries)

    __str__ = __repr__

    # --- comparisons (elementwise: a Matrix of bools) ---
    def __eq__(self, other) -> Any:
        return self._binary(other, np.equal)

    def __ne__(self, other) -> Any:
        return self._binary(other, np.not_equal)

    def __lt__(self, other) -> Any:
        return self._binary(other, np.less)

    def __le__(self, other) -> Any:
        return self._binary(other, np.less_equal)

    def __gt__(self, other) -> Any:
        return self._binary(other, np.greater)

    def __ge__(self, other) -> Any:
        return self._binary(other, np.greater_equal)

    __hash__ = None

    # --- arithmetic (NumPy; the in-place forms rebind to a new value) ---
    def _binary(self, other, fn, reverse=False):
        if isinstance(other, Matrix) and self.entries.shape != other.entries.shape:
            raise QuadrantsTypeError(
                f"shape mismatch: {self.entries.shape} and {other.entries.shape}"
            )
        return elementwise(fn, other, self) if reverse else elementwise(fn, self, other)

    def __add__(self, o) -> Any:
        return self._binary(o, np.add)

    def __radd__(self, o) -> Any:
        return self._binary(o, np.add, True)

    def __sub__(self, o) -> Any:
        return self._binary(o, np.subtract)

    def __rsub__(self, o) -> Any:
        return self._binary(o, np.subtract, True)

    def __mul__(self, o) -> Any:
        return self._binary(o, np.multiply)

    def __rmul__(self, o) -> Any:
        return self._binary(o, np.multiply, True)

    def __truediv__(self, o) -> Any:
        return self._binary(o, np.true_divide)

    def __rtruediv__(self, o) -> Any:
        return self._binary(o, np.true_divide, True)

    def __floordiv__(self, o) -> Any:
        return self._binary(o, np.floor_divide)

    def __rfloordiv__(self, o) -> Any:
        return self._binary(o, np.floor_divide, True)

    def __mod__(self, o) -> Any:
        return self._binary(o, np.mod)

    def __rmod__(self, o) -> Any:
        return self._binary(o, np.mod, True)

    def __pow__(self, o) -> Any:
        return self._binary(o, np.power)

    def __rpow__(self, o) -> Any:
        return self._binary(o, np.power, True)

    def __lshift__(self, o) -> Any:
        return self._binary(o, np.left_shift)

    def __rlshift__(self, o) -> Any:
        return self._binary(o, np.left_shift, True)

    def __rshift__(self, o) -> Any:
        return self._binary(o, np.right_shift)

    def __rrshift__(self, o) -> Any:
        return self._binary(o, np.right_shift, True)

    def __and__(self, o) -> Any:
        return self._binary(o, np.bitwise_and)

    def __rand__(self, o) -> Any:
        return self._binary(o, np.bitwise_and, True)

    def __or__(self, o) -> Any:
        return self._binary(o, np.bitwise_or)

    def __ror__(self, o) -> Any:
        return self._binary(o, np.bitwise_or, True)

    def __xor__(self, o) -> Any:
        return self._binary(o, np.bitwise_xor)

    def __rxor__(self, o) -> Any:
        return self._binary(o, np.bitwise_xor, True)

    def __neg__(self) -> Any:
        return elementwise(np.negative, self)

    def __pos__(self) -> Any:
        return elementwise(np.positive, self)

    def __invert__(self) -> Any:
        return elementwise(np.invert, self)

    def __abs__(self) -> Any:
        return elementwise(np.abs, self)

    def __matmul__(self, o) -> Any:
        a, b = self.entries, _arr(o)
        result = a @ b
        if np.ndim(result) == 0:
            return _types.to_python_value(result, _result_dtype(self, o, result))
        return _wrap(result, _result_dtype(self, o, result))

    # --- methods ---
    def dot(self, o) -> Any:
        return self @ o if self.ndim == 1 else float(np.sum(self.entries * _arr(o)))

    def cross(self, o) -> Any:
        a, b = self.entries, _arr(o)
        if self.n == 2:
            return _types.to_python_value(a[0] * b[1] - a[1] * b[0], self.dtype)
        return _wrap(np.cross(a, b), self.dtype)

    def outer_product(self, o) -> Any:
        return _wrap(np.outer(self.entries, _arr(o)), self.dtype)

    def norm(self, eps=0):
        return float(np.sqrt(np.sum(self.entries.astype(np.float64) ** 2) + eps))

    def norm_sqr(self) -> Any:
        return _types.to_python_value(np.sum(self.entries**2), self.dtype)

    def norm_inv(self, eps=0):
        return 1.0 / self.norm(eps)

    def normalized(self, eps=0) -> Any:
        return _wrap(self.entries * (1.0 / (self.norm() + eps)), self.dtype)

    def transpose(self) -> Any:
        if self.ndim != 2:
            raise QuadrantsSyntaxError("transpose() of a vector: use a.outer_product(b)")
        return _wrap(self.entries.T.copy(), self.dtype)

    @property
    def T(self):
        return self.transpose()

    def trace(self) -> Any:
        return _types.to_python_value(np.trace(self.entries), self.dtype)

    def determinant(self):
        return float(np.linalg.det(self.entries.astype(np.float64)))

    def inverse(self) -> Any:
        inverse = np.linalg.inv(self.entries.astype(np.float64))
        if self.entries.dtype.kind == "f":
            return _wrap(inverse.astype(self.entries.dtype), self.dtype)
        return _wrap(inverse, _types.default_fp())

    def frobenius_inner(self, o) -> Any:
        return _types.to_python_value(np.sum(self.entries * _arr(o)), self.dtype)

    def sum(self) -> Any:
        return _types.to_python_value(np.sum(self.entries), self.dtype)

    def max(self) -> Any:
        return _types.to_python_value(np.max(self.entries), self.dtype)

    def min(self) -> Any:
        return _types.to_python_value(np.min(self.entries), self.dtype)

    def any(self):
        return bool(np.any(self.entries))

    def all(self):
        return bool(np.all(self.entries))

    # --- constructors ---
    @classmethod
    @_builtin("Matrix.zero")
    def zero(cls, dt, n, m=None):
        return Matrix(np.zeros((n,) if m is None else (n, m)), dt=dt, ndim=1 if m is None else 2)

    @classmethod
    @_builtin("Matrix.one")
    def one(cls, dt, n, m=None):
        return Matrix(np.ones((n,) if m is None else (n, m)), dt=dt, ndim=1 if m is None else 2)

    @classmethod
    @_builtin("Matrix.identity")
    def identity(cls, dt, n):
        return Matrix(np.eye(n), dt=dt, ndim=2)

    @classmethod
    @_builtin("Matrix.unit")
    def unit(cls, n, i, dt=None):
        assert 0 <= i < n, "unit vector index out of range"
        return Vector([1 if k == i else 0 for k in range(n)], dt=dt or int)

    @classmethod
    @_builtin("Matrix.diag")
    def diag(cls, dim, val):
        if not isinstance(dim, int):
            raise QuadrantsSyntaxError("qd.Matrix.diag: dim must be a Python int")
        return Matrix([[val if i == j else 0 for j in range(dim)] for i in range(dim)])

    @classmethod
    @_builtin("Matrix.rows")
    def rows(cls, rows):
        return Matrix([_flatten_args([r]) for r in rows], ndim=2)

    @classmethod
    @_builtin("Matrix.cols")
    def cols(cls, cols):
        return Matrix([_flatten_args([c]) for c in cols], ndim=2).transpose()

    @classmethod
    def field(cls, n, m, dtype, shape=None, order=None, name="", offset=None, needs_grad=False,
              needs_dual=False, layout=None, ndim=None):
        from quadrants import _matrix_field

        return _matrix_field.MatrixField.make(n, m, 2, dtype, shape, order, name, offset,
                                              needs_grad, needs_dual)

    @classmethod
    def ndarray(cls, n, m, dtype, shape, needs_grad=False):
        from quadrants import _matrix_field

        return _matrix_field.matrix_ndarray(MatrixType(n, m, 2, dtype), shape, needs_grad)

    @classmethod
    def tensor(cls, n, m, dtype, shape, **kwargs):
        """A tensor of n x m matrices on the backend chosen by ``backend=`` (quadrants/_tensor.py)."""
        from quadrants import _tensor

        return _tensor.matrix_tensor(n, m, dtype, shape, **kwargs)


class Vector(Matrix):
    """A 1-D Matrix: ``qd.Vector([x, y, z], dt=None)``."""

    _qd_builtin_name = "Vector"

    if TYPE_CHECKING:
        def __init__(self, *args: Any, **kwargs: Any) -> None: ...

    else:

        def __init__(self, arr, dt=None):
            super().__init__(arr, dt=dt, ndim=1)

    @classmethod
    def field(cls, n, dtype, shape=None, order=None, name="", offset=None, needs_grad=False,
              needs_dual=False, layout=None):
        from quadrants import _matrix_field

        return _matrix_field.MatrixField.make(n, 1, 1, dtype, shape, order, name, offset,
                                              needs_grad, needs_dual)

    @classmethod
    def ndarray(cls, n, dtype, shape, needs_grad=False):
        from quadrants import _matrix_field

        return _matrix_field.matrix_ndarray(MatrixType(n, 1, 1, dtype), shape, needs_grad)

    @classmethod
    def tensor(cls, n, dtype, shape, **kwargs):
        """A tensor of n-vectors on the backend chosen by ``backend=`` (quadrants/_tensor.py)."""
        from quadrants import _tensor

        return _tensor.vector_tensor(n, dtype, shape, **kwargs)


def _arr(x):
    """The NumPy operand of `x`: a Matrix's entries; Python numbers stay as they are so that
    NumPy types the result by the array (``f32 vector * 2`` stays f32)."""
    if isinstance(x, Matrix):
        return x.entries
    if isinstance(x, (bool, int, float)):
        return x
    return np.asarray(x)


def _host_entries(values, dtype, explicit):
    """The NumPy array of Python-scope values `values`: converted to `dtype` like C casts when
    the dtype was given, else of the type NumPy gives them (float64, int64, bool), as the
    reference keeps an untyped host vector; `dtype` then only types the value in kernels."""
    if not explicit:
        array = np.array(values)
        if array.dtype.kind in "biuf":
            return array
    return np.array(
        [_types.to_dtype_value(v, dtype) for v in values], dtype=dtype.np_dtype
    )


def elementwise(function, *args):
    """NumPy function `function` applied elementwise to Matrix/scalar arguments (broadcast):
    the Python-scope value of an operator or math builtin on vectors and matrices, a Matrix
    whose element type follows NumPy's promotion."""
    arrays = [_arr(a) for a in args]
    with np.errstate(all="ignore"):
        result = np.asarray(function(*arrays))
    matrices = [a for a in args if isinstance(a, Matrix)]
    dtype = _result_dtype(matrices[0], matrices[1] if len(matrices) > 1 else None, result)
    return _wrap(result, dtype, Matrix)


def _result_dtype(a, b, result):
    if result.dtype == np.bool_:
        return _types.u1
    da = a.dtype if isinstance(a, Matrix) else None
    db = b.dtype if isinstance(b, Matrix) else None
    found = _types.from_numpy_dtype(result.dtype)
    if found is not None and (found is da or found is db):
        return found
    if np.issubdtype(result.dtype, np.floating):
        real = [d for d in (da, db) if d is not None and d.is_real]
        return real[0] if real else _types.default_fp()
    return da or db or found


def _wrap(array, dtype, cls=None):
    """A Matrix (a Vector for 1-D `array` unless `cls` says) holding `array` as it is, typed
    `dtype` in kernels."""
    array = np.asarray(array)
    result = Matrix.__new__(cls or (Vector if array.ndim == 1 else Matrix))
    object.__setattr__(result, "dtype", dtype)
    object.__setattr__(result, "entries", array.copy() if array.base is not None else array)
    return result


_SWIZZLE_GROUPS = ("xyzw", "rgba", "stpq")


def swizzle_letters(name):
    """The element indices of swizzle `name` ('xzy', 'bgr', ...), or None if it is not one."""
    if not 1 <= len(name) <= 4:
        return None
    for group in _SWIZZLE_GROUPS:
        if all(c in group for c in name):
            return [group.index(c) for c in name]
    return None


def _swizzle_indices(name, value):
    indices = swizzle_letters(name)
    if indices is None or name.startswith("_"):
        return None
    if value.__dict__.get("entries") is None or value.entries.ndim != 1:
        return None
    if max(indices) >= value.n:
        group = next(g for g in _SWIZZLE_GROUPS if all(c in g for c in name))
        raise QuadrantsSyntaxError(
            f"vec{value.n} only has attributes={tuple(sorted(group[: value.n]))}, got={tuple(name)}"
        )
    return indices


class MatrixType:
    """``qd.types.vector(n, dtype)`` (ndim 1) or ``qd.types.matrix(n, m, dtype)`` (ndim 2)."""

    _qd_matrix_type = True
    _qd_compound = True

    def __init__(self, n, m, ndim, dtype, unpacked=False):
        self.n = int(n)
        self.m = int(m)
        self.ndim = ndim
        self._raw_dtype = dtype
        self.unpacked = bool(unpacked)
        _warn_size(self.n * self.m)

    @property
    def dtype(self):
        return None if self._raw_dtype is None else _types.cook_dtype(self._raw_dtype)

    def get_shape(self):
        return (self.n,) if self.ndim == 1 else (self.n, self.m)

    def __call__(self, *args):
        if self.unpacked:
            from quadrants._struct import unpacked_error

            raise unpacked_error("calling the type")
        if not args:
            raise QuadrantsSyntaxError("a vector/matrix type needs at least one argument")
        values = _flatten_args(args)
        count = self.n * self.m
        if len(values) == 1:
            values = values * count
        if len(values) != count:
            raise QuadrantsTypeError(f"{self!r} takes {count} entries, got {len(values)}")
        dt = self._raw_dtype
        if dt is None:
            dt = _infer_dtype(values)
        if self.ndim == 1:
            return Vector(values, dt=dt)
        return Matrix([values[r * self.m:(r + 1) * self.m] for r in range(self.n)], dt=dt)

    def field(self, **kwargs):
        if self.unpacked:
            from quadrants._struct import unpacked_error

            raise unpacked_error("T.field()")
        from quadrants import _matrix_field

        shape = kwargs.pop("shape", None)
        return _matrix_field.MatrixField.make(
            self.n, self.m, self.ndim, self.dtype, shape, kwargs.get("order"),
            kwargs.get("name", ""), kwargs.get("offset"), kwargs.get("needs_grad", False),
            kwargs.get("needs_dual", False),
        )

    def ndarray(self, shape=None, **kwargs):
        if self.unpacked:
            from quadrants._struct import unpacked_error

            raise unpacked_error("T.ndarray()")
        from quadrants import _matrix_field

        return _matrix_field.matrix_ndarray(self, shape, kwargs.get("needs_grad", False))

    def __eq__(self, other):
        return (
            isinstance(other, MatrixType)
            and (self.n, self.m, self.ndim, self._raw_dtype)
            == (other.n, other.m, other.ndim, other._raw_dtype)
        )

    def __hash__(self):
        return hash((self.n, self.m, self.ndim, str(self._raw_dtype)))

    def __repr__(self):
        if self.ndim == 1:
            return f"VectorType[{self.n}, {self._raw_dtype}]"
        return f"MatrixType[{self.n},{self.m}, {self._raw_dtype}]"

    def _qd_cache_key(self):
        return ("matrix_type", self.n, self.m, self.ndim, str(self._raw_dtype), self.unpacked)


@_builtin("types.vector")
def vector(n=None, dtype=None, *, unpacked=False):
    """The vector type of `n` elements of `dtype`."""
    return MatrixType(n, 1, 1, dtype, unpacked=unpacked)


@_builtin("types.matrix")
def matrix(n=None, m=None, dtype=None):
    """The n x m matrix type of `dtype`."""
    return MatrixType(n, m, 2, dtype)


def is_matrix_type(x):
    return isinstance(x, MatrixType)


def flatten_argument(path, mtype, value, launch):
    """Appends the launch values of vector/matrix kernel argument `value` (one scalar per
    element, row-major) to `launch`; returns the (path, key part, value) members, named
    "param.0", "param.1", ... as the compiler expects."""
    from quadrants._core import QuadrantsRuntimeTypeError

    dtype = _types.cook_dtype(mtype.dtype if mtype.dtype is not None else float)
    try:
        values = _flatten_args([value])
    except TypeError:
        values = None
    if values is None or len(values) != mtype.n * mtype.m:
        raise QuadrantsRuntimeTypeError(
            f"Argument {path} (type={type(value)}) cannot be converted into required type {mtype}"
        )
    members = []
    for k, v in enumerate(values):
        scalar = _types.to_python_value(_types.to_dtype_value(v, dtype), dtype)
        if dtype is _types.u1:
            scalar = bool(scalar)
        launch.append(scalar)
        members.append((f"{path}.{k}", ("s", dtype._qd_dtype), v))
    return members


def from_results(mtype, results):
    """The Vector/Matrix a kernel returns from its per-element results."""
    values = list(results) if isinstance(results, (tuple, list)) else [results]
    dt = mtype.dtype
    if mtype.ndim == 1:
        return Vector(values, dt=dt)
    return Matrix([values[r * mtype.m:(r + 1) * mtype.m] for r in range(mtype.n)], dt=dt)


def check_element_shape(annotation, name, shape):
    """Raises ValueError when an array passed for an ndarray parameter annotated with a
    vector/matrix element type does not end in that element's shape."""
    raw = getattr(annotation, "_raw_dtype", None)
    if not isinstance(raw, MatrixType):
        return
    element = (raw.n,) if raw.ndim == 1 else (raw.n, raw.m)
    if len(shape) < len(element) or tuple(shape[len(shape) - len(element):]) != element:
        raise ValueError(
            f"Invalid value for argument {name} - elements of shape {element} ({raw!r}) expected, "
            f"but the array has shape {tuple(shape)}"
        )


def element_shape_of(annotation, value):
    """The shape of one element of an ndarray argument `value` passed for a parameter annotated
    `annotation`: (n,) or (n, m) for vector/matrix elements, from the annotation's element type
    or, when it names none, from the value's (a vector/matrix ndarray); () for scalar elements.
    The kernel is compiled for this shape and every launch checks it."""
    mtype = getattr(annotation, "_raw_dtype", None)
    if isinstance(mtype, MatrixType):
        return (mtype.n,) if mtype.ndim == 1 else (mtype.n, mtype.m)
    wanted = getattr(annotation, "element_ndim", 0)  # element_dim=1 / 2 without a size
    mtype = getattr(value, "_matrix_type", None)
    if isinstance(mtype, MatrixType):
        if wanted and mtype.ndim != wanted:
            kind = "vector" if wanted == 1 else "matrix"
            raise ValueError(
                f"Invalid value for argument - required element type: {kind}, but {mtype!r} "
                "is provided"
            )
        return (mtype.n,) if mtype.ndim == 1 else (mtype.n, mtype.m)
    if wanted:
        # A plain array (NumPy, torch, ...): its last `wanted` axes form the element.
        return tuple(int(n) for n in value.shape[len(value.shape) - wanted:])
    return ()
