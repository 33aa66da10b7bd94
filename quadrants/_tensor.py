"""``qd.tensor``, ``qd.Vector.tensor``, ``qd.Matrix.tensor``, ``qd.wrap`` and the wrapper classes
``qd.Tensor``, ``qd.VectorTensor``, ``qd.MatrixTensor``.

A tensor is a field or an ndarray behind one interface. The allocators pick the storage with
``backend=qd.Backend.FIELD | NDARRAY`` (NDARRAY when not given) and return a wrapper of it:
``qd.Tensor`` for scalar elements, ``VectorTensor`` / ``MatrixTensor`` for vector / matrix
elements. The wrapper is a class of its own, not a base of ``qd.Field`` or ``qd.Ndarray``
(``isinstance(qd.field(...), qd.Tensor)`` is False), so programs that accept either kind of
storage test ``isinstance(x, qd.Tensor | qd.Field | qd.Ndarray)``. ``qd.Tensor(impl)`` and
``qd.wrap(impl)`` wrap an existing field or ndarray (TypeError for anything else, a wrapper
included); ``_unwrap()`` gives it back.

``layout=`` (scalar tensors only) is a permutation of the axes: ``layout[p]`` is the canonical
axis stored at physical position ``p``, outermost first. A field gets it as ``order=`` (``(1, 0)``
is ``"ji"``); an ndarray allocates its memory at the permuted shape and keeps the permutation
(quadrants/_ndarray.py). Shapes, indices, NumPy/torch/DLPack views stay canonical everywhere.

``qd.Tensor`` is also a kernel parameter annotation: the argument may be a field, an ndarray or a
wrapper of either (quadrants/_kernel.py): a field is passed like a ``qd.template()`` argument,
an ndarray like a ``qd.types.ndarray()`` one whose dtype and dimensions are taken from the value.
"""

import operator
from typing import Any

from quadrants._annotations import Backend
from quadrants._field import Field
from quadrants._matrix_field import MatrixField, MatrixNdarray, VectorNdarray
from quadrants._ndarray import Ndarray


class Tensor:
    """A field or ndarray behind one interface (see the module docstring)."""

    __slots__ = ("_impl", "_grad")
    # What a wrapper wraps is bound once, in __init__, and never rebound (__setattr__): the
    # launch fast path reads it once per wrapper object (csrc/python/dispatch.c,
    # is_frozen_dataclass)
    _qd_frozen = True

    def __init__(self, impl):
        if not isinstance(impl, (Ndarray, Field)):
            raise TypeError(f"Tensor(impl) requires an Ndarray or Field; got {type(impl).__name__}")
        object.__setattr__(self, "_impl", impl)
        self._grad = None

    def __setattr__(self, name, value):
        if name == "_impl":
            raise AttributeError("a qd.Tensor wraps one field or ndarray for its whole life")
        object.__setattr__(self, name, value)

    def _unwrap(self):
        """The wrapped field or ndarray."""
        return self._impl

    @property
    def _qd_tensor_impl(self):
        """The marker by which the compiler sees a wrapper as what it wraps (python/host.c)."""
        return self._impl

    def _backend(self):
        return Backend.NDARRAY if isinstance(self._impl, Ndarray) else Backend.FIELD

    # --- introspection ---

    @property
    def shape(self):
        return tuple(self._impl.shape)

    @property
    def dtype(self):
        return self._impl.dtype

    @property
    def layout(self):
        """The physical axis order (a tuple of canonical axes), or None for the identity."""
        return self._impl.layout

    @property
    def grad(self):
        """A wrapper of the gradient storage (the same object on every access), or None."""
        if self._grad is None:
            grad = getattr(self._impl, "grad", None)
            if grad is not None:
                self._grad = wrap(grad)
        return self._grad

    def has_grad(self):
        """Whether gradient storage is allocated."""
        return self._impl.has_grad()

    def has_dual(self):
        """Whether dual (forward-mode) storage is allocated."""
        return self._impl.has_dual()

    # --- element access (canonical indices) ---

    def __getitem__(self, key) -> Any:
        if self._impl.layout is not None and isinstance(self._impl, Ndarray):
            _check_full_key(key, len(self._impl.shape))
        return self._impl[key]

    def __setitem__(self, key, value):
        if self._impl.layout is not None and isinstance(self._impl, Ndarray):
            _check_full_key(key, len(self._impl.shape))
        self._impl[key] = value

    # --- bulk access and interop ---

    def to_numpy(self, dtype=None, *, copy=True) -> Any:
        return self._impl.to_numpy(dtype=dtype, copy=copy)

    def from_numpy(self, arr):
        self._impl.from_numpy(arr)

    def to_torch(self, device=None, *, copy=True):
        return self._impl.to_torch(device=device, copy=copy)

    def from_torch(self, tensor):
        self._impl.from_torch(tensor)

    def to_dlpack(self, versioned=False):
        return self._impl.to_dlpack(versioned=versioned)

    def __dlpack__(self, **kwargs):
        return self._impl.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._impl.__dlpack_device__()

    def fill(self, value):
        self._impl.fill(value)

    def copy_from(self, other):
        """Copies `other` (a wrapper, a field or an ndarray of the same backend and shape)."""
        self._impl.copy_from(other._impl if isinstance(other, Tensor) else other)

    # --- pickle: rebuilt by the allocator from the canonical data ---

    def __reduce__(self):
        impl = self._impl
        element = tuple(getattr(impl, "element_shape", ()))
        return (
            _rebuild,
            (int(self._backend()), impl.dtype, self.shape, element, self.layout,
             impl.to_numpy()),
        )

    def __repr__(self):
        layout = self.layout
        return (
            f"{type(self).__name__}(shape={self.shape}, dtype={self.dtype}, "
            f"backend={self._backend().name}" + ("" if layout is None else f", layout={layout}")
            + ")"
        )


def _check_full_key(key, ndim):
    """TypeError unless `key` has one index per axis (a permuted ndarray's wrapper, as in the
    reference)."""
    if isinstance(key, int):
        if ndim != 1:
            raise TypeError(
                f"layout-tagged Tensor requires a full tuple key; got int for rank {ndim}"
            )
    elif len(tuple(key)) != ndim:
        raise TypeError(
            f"layout-tagged Tensor key has {len(tuple(key))} entries but rank is {ndim}"
        )


def _is_vector_field(impl):
    return isinstance(impl, MatrixField) and impl.ndim == 1


def _is_matrix_field(impl):
    return isinstance(impl, MatrixField) and impl.ndim == 2


class VectorTensor(Tensor):
    """A Tensor whose elements are vectors."""

    __slots__ = ()

    def __init__(self, impl):
        if not (isinstance(impl, VectorNdarray) or _is_vector_field(impl)):
            raise TypeError(
                f"VectorTensor requires a vector-element impl; got {type(impl).__name__}"
            )
        super().__init__(impl)

    @property
    def element_shape(self):
        return (self._impl.n,)


class MatrixTensor(Tensor):
    """A Tensor whose elements are matrices."""

    __slots__ = ()

    def __init__(self, impl):
        if not (isinstance(impl, MatrixNdarray) or _is_matrix_field(impl)):
            raise TypeError(
                f"MatrixTensor requires a matrix-element impl; got {type(impl).__name__}"
            )
        super().__init__(impl)

    @property
    def element_shape(self):
        return (self._impl.n, self._impl.m)


def wrap(impl):
    """The most specific wrapper of field or ndarray `impl` (``qd.wrap``)."""
    if isinstance(impl, VectorNdarray) or _is_vector_field(impl):
        return VectorTensor(impl)
    if isinstance(impl, MatrixNdarray) or _is_matrix_field(impl):
        return MatrixTensor(impl)
    return Tensor(impl)


# The exact wrapper types, for the launch path's cheap ``type(x) in`` test.
TENSOR_TYPES = frozenset((Tensor, VectorTensor, MatrixTensor))


# --- the allocators ---

_SCALAR_KWARGS = frozenset(("backend", "needs_grad", "layout"))
_ELEMENT_KWARGS = frozenset(("backend", "needs_grad"))


def _check_kwargs(kwargs, factory, accepted):
    """TypeError for a keyword the allocator does not take (``order=`` gets its own message)."""
    if "order" in kwargs:
        if "layout" in accepted:
            raise TypeError(f"{factory}(...) does not accept order=; pass layout=(...) instead")
        raise TypeError(
            f"{factory}(...) does not accept order= (or layout=); use the underlying "
            "qd.Vector.field / qd.Matrix.field for non-default storage order"
        )
    extra = set(kwargs) - accepted
    if extra:
        names = ", ".join(sorted(accepted | {"dtype", "shape"}))
        raise TypeError(
            f"{factory}() got unexpected keyword argument(s) {sorted(extra)!r}; accepted: {names}"
        )


def _backend(backend):
    try:
        return Backend(backend)
    except (ValueError, TypeError):
        names = ", ".join(f"qd.Backend.{member.name}" for member in Backend)
        raise ValueError(
            f"backend={backend!r} is not a valid qd.Backend; expected one of {names}"
        ) from None


def _layout(layout, ndim):
    """`layout` checked against `ndim` dimensions, as a tuple; None for the identity."""
    layout = tuple(operator.index(axis) for axis in layout)
    if len(layout) != ndim:
        raise ValueError(
            f"layout has {len(layout)} entries but shape has {ndim} dimensions; they must match"
        )
    if sorted(layout) != list(range(ndim)):
        raise ValueError(f"layout={layout!r} is not a permutation of range({ndim})")
    return None if layout == tuple(range(ndim)) else layout


def _shape_tuple(shape):
    try:
        return (operator.index(shape),)
    except TypeError:
        return tuple(shape)


def tensor(dtype, shape, *, backend=Backend.NDARRAY, layout=None, **kwargs):
    """A new zero-filled tensor of `dtype` (a scalar, vector or matrix type) and canonical
    `shape`, stored as a field or an ndarray (`backend`), with physical axis order `layout`
    (scalar dtypes only); ``needs_grad=True`` allocates gradient storage of the same kind."""
    from quadrants import _field, _ndarray

    if isinstance(dtype, (Ndarray, Field, Tensor)):
        raise TypeError(
            f"qd.tensor() allocates a new tensor; to wrap an existing {type(dtype).__name__}, "
            "use qd.wrap(impl) instead"
        )
    if layout is not None and getattr(dtype, "_qd_matrix_type", False):
        raise TypeError(
            "layout= is not supported with compound dtypes (vector/matrix). "
            "Use qd.Vector.tensor(...) or qd.Matrix.tensor(...) without layout= instead."
        )
    _check_kwargs(kwargs, "qd.tensor", _SCALAR_KWARGS)
    backend = _backend(backend)
    needs_grad = kwargs.get("needs_grad", False)
    ndim = len(_shape_tuple(shape))  # TypeError for a shape that is neither an int nor a tuple
    if layout is not None:
        layout = _layout(layout, ndim)
    if backend is Backend.FIELD:
        order = None if layout is None else "".join(chr(ord("i") + axis) for axis in layout)
        return wrap(_field.field(dtype, shape, order=order, needs_grad=needs_grad))
    array = _ndarray.ndarray(dtype, shape, needs_grad=needs_grad)
    if layout is not None:
        # the same checks made, allocate again with the memory in physical order
        array = _ndarray.scalar_ndarray(array.dtype, array.shape, needs_grad, layout)
    return wrap(array)


def vector_tensor(n, dtype, shape, *, backend=Backend.NDARRAY, **kwargs):
    """``qd.Vector.tensor``: a tensor of n-vectors (no ``layout=``)."""
    from quadrants._matrix import Vector

    _check_kwargs(kwargs, "qd.Vector.tensor", _ELEMENT_KWARGS)
    if _backend(backend) is Backend.FIELD:
        return VectorTensor(Vector.field(n, dtype, shape, **kwargs))
    return VectorTensor(Vector.ndarray(n, dtype, shape, **kwargs))


def matrix_tensor(n, m, dtype, shape, *, backend=Backend.NDARRAY, **kwargs):
    """``qd.Matrix.tensor``: a tensor of n x m matrices (no ``layout=``)."""
    from quadrants._matrix import Matrix

    _check_kwargs(kwargs, "qd.Matrix.tensor", _ELEMENT_KWARGS)
    if _backend(backend) is Backend.FIELD:
        return MatrixTensor(Matrix.field(n, m, dtype, shape, **kwargs))
    return MatrixTensor(Matrix.ndarray(n, m, dtype, shape, **kwargs))


def _rebuild(backend, dtype, shape, element_shape, layout, data):
    """Unpickles a wrapper: a new tensor of the same kind holding `data` (canonical order)."""
    if len(element_shape) == 1:
        result = vector_tensor(element_shape[0], dtype, shape, backend=backend)
    elif len(element_shape) == 2:
        result = matrix_tensor(*element_shape, dtype, shape, backend=backend)
    else:
        result = tensor(dtype, shape, backend=backend, layout=layout)
    result.from_numpy(data)
    return result
