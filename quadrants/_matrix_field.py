"""Vector/matrix fields and ndarrays: ``qd.Vector.field``, ``qd.Matrix.field``,
``qd.field(vec3f, ...)``, ``qd.Vector.ndarray``, ``qd.ndarray(mat3f, ...)``.

A vector/matrix field is one scalar field per element (``_qd_fields``, row-major), all of the
same shape: in kernels ``f[i]`` is the vector of the element fields at i
(csrc/frontend/lower_matrix_field.c). ``to_numpy()`` stacks them into ``shape + (n,)`` or
``shape + (n, m)``. The element fields are placed as one block of memory, one after the other
(quadrants/_field.py ``_place_block``), so on the CPU ``to_numpy(copy=False)``, ``to_torch`` and
DLPack alias the whole field with strided element axes.

A vector/matrix ndarray is a scalar ndarray whose memory has the element axes last
(``shape + (n,)`` / ``shape + (n, m)``, the NumPy layout); ``shape`` is the outer shape and
``element_shape`` the element's. Kernel parameters annotated with a vector/matrix element type
take these, or NumPy arrays of ``shape + element_shape``.
"""

import numbers
from typing import Any

import numpy as np

from quadrants import _dlpack, _field, _ndarray, _types
from quadrants._core import QuadrantsRuntimeError
from quadrants._matrix import Matrix, MatrixType, Vector, _flatten_args


def _element(owner, key, values, dtype, shape):
    """A Vector/Matrix of `values` whose writes (``e[j] = x``, ``e.x = x``) go back to
    ``owner[key]`` (a field or ndarray element read in Python scope)."""
    if len(shape) == 1:
        e = _ElementVector(values, dt=dtype)
    else:
        e = _ElementMatrix([values[r * shape[1]:(r + 1) * shape[1]] for r in range(shape[0])],
                           dt=dtype)
    object.__setattr__(e, "_qd_owner", owner)
    object.__setattr__(e, "_qd_key", key)
    return e


class _WritesBack:
    def __setitem__(self, index, value):
        Matrix.__setitem__(self, index, value)
        self._qd_owner[self._qd_key] = self.entries.reshape(-1).tolist()

    def __setattr__(self, name, value):
        Matrix.__setattr__(self, name, value)
        if not name.startswith("_") and name not in ("entries", "dtype"):
            self._qd_owner[self._qd_key] = self.entries.reshape(-1).tolist()


class _ElementVector(_WritesBack, Vector):
    pass


class _ElementMatrix(_WritesBack, Matrix):
    pass


class MatrixField(_field.Field):
    """A field of vectors or matrices (see the module docstring); vector fields are
    MatrixFields too, as in the reference."""

    _qd_matrix_field = True
    _qd_element_block = True  # SNode.place gives its element fields one block of memory

    @classmethod
    def make(cls, n, m, ndim, dtype, shape, order=None, name="", offset=None, needs_grad=False,
             needs_dual=False):
        self = cls.__new__(cls)
        self.n, self.m, self.ndim = int(n), int(m), ndim
        self.dtype = _types.cook_dtype(dtype)
        self.name = name
        # Unplaced element fields (checking order/offset without a shape as qd.field does),
        # then, given a shape, placed as one block of memory (_field._place_block).
        self._qd_fields = tuple(
            _field.field(self.dtype, name=f"{name}[{k}]", needs_grad=needs_grad,
                         needs_dual=needs_dual, order=None if shape is not None else order,
                         offset=None if shape is not None else offset)
            for k in range(self.n * self.m)
        )
        if shape is not None:
            shape, physical, offset, level = _field._dense_level(shape, order, offset)
            _field._place_block(list(self._qd_fields), shape, physical, offset, level)
        # The gradient (dual) of every element field, gathered into a vector/matrix field.
        self.grad = self._companion("grad")
        self.dual = self._companion("dual")
        return self

    def _companion(self, which):
        parts = tuple(getattr(f, which) for f in self._qd_fields)
        if any(part is None for part in parts):
            return None
        other = type(self).__new__(type(self))
        other.n, other.m, other.ndim, other.dtype = self.n, self.m, self.ndim, self.dtype
        other.name = f"{self.name}.{which}"
        other._qd_fields = parts
        other.grad = other.dual = None
        return other

    @property
    def layout(self):
        """The physical axis order of the element fields, or None when it is the identity."""
        return self._qd_fields[0].layout

    def has_grad(self):
        """Whether gradient storage exists (the field was made with ``needs_grad=True``)."""
        return self.grad is not None

    def has_dual(self):
        """Whether dual storage exists (the field was made with ``needs_dual=True``)."""
        return self.dual is not None

    @property
    def shape(self):
        return self._qd_fields[0].shape

    @property
    def element_shape(self):
        return (self.n,) if self.ndim == 1 else (self.n, self.m)

    def _element_shape(self, keep_dims):
        if self.ndim == 1 and not keep_dims:
            return (self.n,)
        if self.m == 1 and not keep_dims:
            return (self.n,)
        return (self.n, self.m)

    def _place_fields(self):
        """The scalar fields to place (qd.root.dense(...).place(vector_field))."""
        return list(self._qd_fields)

    def _leaves(self):
        """For struct fields holding this one as a member."""
        return iter(self._qd_fields)

    def get_scalar_field(self, i, j=0):
        return self._qd_fields[i * self.m + j]

    def _block(self):
        """The memory block the element fields share (_field._place_block) as an array
        ``shape + element axes`` aliasing it, or None when they do not share one (placed among a
        struct field's members, a permuted layout) or the memory lives on a GPU."""
        first = self._qd_fields[0]
        block = first._data().base
        if (
            block is None
            or first._device is not None
            or first.layout is not None
            or block.shape[0] != len(self._qd_fields)
            or any(f._array.base is not block or f._array.ctypes.data != block[k, ...].ctypes.data
                   for k, f in enumerate(self._qd_fields))
        ):
            return None
        elements = block.reshape((self.n, self.m) + block.shape[1:])
        moved = np.moveaxis(elements, (0, 1), (-2, -1))
        return moved[..., 0] if self.ndim == 1 else moved

    def to_numpy(self, keep_dims=False, dtype=None, *, copy=True) -> np.ndarray:
        """The elements as one NumPy array ``shape + element_shape``. ``copy=False`` returns a
        view of the field's memory (element axes last, strided: the element fields lie one
        after the other), which writes through; ValueError where there is no such view (see
        _block)."""
        if copy is False:
            view = self._block() if dtype is None and not keep_dims else None
            if view is None:
                raise ValueError(
                    "Zero-copy not available for this vector/matrix field (its elements do not "
                    "share one block of host memory)"
                )
            return view
        parts = [f.to_numpy(dtype=dtype) for f in self._qd_fields]
        stacked = np.stack(parts, axis=-1)
        return stacked.reshape(tuple(self.shape) + self._element_shape(keep_dims))

    def to_torch(self, device=None, *, copy=True):
        """The elements as a torch tensor ``shape + element_shape``: a new one, or with
        ``copy=False`` (``None``: when possible) one aliasing the field's memory through DLPack,
        where ``to_numpy(copy=False)`` has a view."""
        from quadrants import _external

        def to_copy():
            return _external.to_torch(self.to_numpy(), device)

        view = self._block() if copy is not True else None
        if view is None:
            if copy is False:
                self.to_numpy(copy=False)  # raises ValueError, saying why
            return to_copy()
        return _dlpack.to_torch(view, None, self.dtype, device, copy, to_copy)

    def from_torch(self, tensor):
        from quadrants import _external

        self.from_numpy(_external.torch_to_numpy(tensor))

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of the elements (``shape + element_shape``) aliasing the field's
        memory, where ``to_numpy(copy=False)`` has a view; BufferError otherwise."""
        view = self._block()
        if view is None:
            raise BufferError("vector/matrix field without one block of host memory")
        return _dlpack.export(view, None, max_version=max_version, copy=copy)

    def to_dlpack(self):
        return self.__dlpack__()

    def __dlpack_device__(self):
        return _dlpack.device_of(self._qd_fields[0]._device)

    def from_numpy(self, arr):
        arr = np.asarray(arr)
        count = self.n * self.m
        expected = tuple(self.shape) + self.element_shape
        if arr.shape != expected and arr.shape != tuple(self.shape) + (self.n, self.m):
            raise ValueError(f"Mismatch shape: {expected} expected, but {arr.shape} provided")
        flat = arr.reshape(tuple(self.shape) + (count,))
        for k, f in enumerate(self._qd_fields):
            f.from_numpy(flat[..., k].copy())

    def fill(self, value):
        if isinstance(value, numbers.Number):
            values = [value] * (self.n * self.m)
        else:
            values = _flatten_args([value])
        for f, v in zip(self._qd_fields, values):
            f.fill(v)

    def copy_from(self, other):
        if not isinstance(other, MatrixField):
            raise TypeError("Cannot copy from a non-field object")
        if other.shape != self.shape or other.element_shape != self.element_shape:
            raise ValueError(
                f"qd.field shape {self.shape + self.element_shape} does not match the source "
                f"field shape {other.shape + other.element_shape}"
            )
        for a, b in zip(self._qd_fields, other._qd_fields):
            a.copy_from(b)

    def __getitem__(self, key) -> Any:
        values = [f[key] for f in self._qd_fields]
        return _element(self, key, values, self.dtype, self.element_shape)

    def __setitem__(self, key, value):
        values = _flatten_args([value]) if not isinstance(value, numbers.Number) else [value]
        if len(values) == 1:
            values = values * (self.n * self.m)
        if len(values) != self.n * self.m:
            raise ValueError(f"expected {self.n * self.m} values, got {len(values)}")
        for f, v in zip(self._qd_fields, values):
            f[key] = v

    def __len__(self):
        return self.shape[0]

    def __repr__(self):
        return f"<qd.{'Vector' if self.ndim == 1 else 'Matrix'} field {self.shape}>"


class _ElementNdarray(_ndarray.Ndarray):
    """What vector and matrix ndarrays share (see the module docstring); the classes users see
    are its two subclasses below, which are siblings as in the reference: a vector ndarray is a
    ``qd.VectorNdarray`` and not a ``qd.MatrixNdarray``."""

    def __init__(self, mtype, shape, needs_grad=False):
        element = (mtype.n,) if mtype.ndim == 1 else (mtype.n, mtype.m)
        super().__init__(_types.cook_dtype(mtype.dtype), tuple(shape) + element)
        if needs_grad:
            self.grad = type(self)(mtype, shape)
        self.shape = tuple(shape)
        self.element_shape = element
        self.n, self.m = mtype.n, mtype.m
        self._matrix_type = mtype

    @property
    def ndim(self):
        return len(self.shape)

    def to_numpy(self, dtype=None, *, copy=True) -> np.ndarray:
        return super().to_numpy(dtype, copy=copy)

    def from_numpy(self, arr):
        data = self._data()
        if not isinstance(arr, np.ndarray):
            raise TypeError(f"{np.ndarray} expected, but {type(arr)} provided")
        if arr.shape != data.shape:
            raise ValueError(f"Mismatch shape: {data.shape} expected, but {arr.shape} provided")
        _types.copy_converting(data, arr)
        self._push()

    def fill(self, value):
        data = self._data()
        if isinstance(value, numbers.Number):
            data[...] = _types.to_dtype_value(value, self.dtype)
        else:
            data[...] = np.asarray(_flatten_args([value])).reshape(self.element_shape)
        self._push()

    def _outer(self, key):
        if key is None:
            key = ()
        elif not isinstance(key, (tuple, list)):
            key = (key,)
        key = tuple(int(k) for k in key)
        if len(key) != len(self.shape):
            from quadrants._core import QuadrantsIndexError

            raise QuadrantsIndexError(
                f"{len(self.shape)}d ndarray indexed with {len(key)}d indices: {key}"
            )
        for k, size in zip(key, self.shape):
            if not 0 <= k < size:
                raise IndexError(f"index {key} is out of bounds for qd.ndarray of shape {self.shape}")
        return key

    def __getitem__(self, key) -> Any:
        if isinstance(key, slice):  # a[2:6]: a qd.BufferView of a 1-D ndarray
            from quadrants._buffer_view import slice_ndarray

            return slice_ndarray(self, key)
        key = self._outer(key)
        values = self._pull()[key].reshape(-1).tolist()
        return _element(self, key, values, self.dtype, self.element_shape)

    def __setitem__(self, key, value):
        key = self._outer(key)
        data = self._pull()
        values = _flatten_args([value]) if not isinstance(value, numbers.Number) else [value]
        if len(values) == 1:
            values = values * int(np.prod(self.element_shape))
        data[key] = np.asarray(values).reshape(self.element_shape)
        self._push()

    def __deepcopy__(self, memo=None):
        result = type(self)(self._matrix_type, self.shape)
        result.copy_from(self)
        return result

    def __repr__(self):
        return f"<qd.ndarray of {self._matrix_type!r}>"


class VectorNdarray(_ElementNdarray):
    """An ndarray of vectors: ``qd.Vector.ndarray(n, dtype, shape)``."""


class MatrixNdarray(_ElementNdarray):
    """An ndarray of matrices: ``qd.Matrix.ndarray(n, m, dtype, shape)``."""


def matrix_ndarray(mtype, shape, needs_grad=False):
    """A new zero-filled ndarray of vector/matrix type `mtype` (with a gradient ndarray of the
    same kind when `needs_grad`)."""
    from quadrants import _runtime

    _runtime.require_init()
    if not isinstance(mtype, MatrixType):
        raise TypeError(f"expected a vector or matrix type, got {mtype!r}")
    cls = VectorNdarray if mtype.ndim == 1 else MatrixNdarray
    dtype = _types.cook_dtype(mtype.dtype)
    if needs_grad and not dtype.is_real:
        raise QuadrantsRuntimeError(
            f"{dtype} is not supported for ndarray with `needs_grad=True` or `needs_dual=True`."
        )
    return cls(mtype, _ndarray._ndarray_shape(shape), needs_grad)
