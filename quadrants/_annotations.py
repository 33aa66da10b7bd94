"""Annotation objects for kernel and function parameters, and small enums.

- ``Template`` (``qd.template`` / ``qd.Template``, the same class): a compile-time parameter.
  Both the class and its instances are accepted as annotations; both carry
  ``_qd_template = True``.
- ``NdarrayType`` (``qd.types.ndarray`` / ``qd.types.NDArray``): an array parameter taking
  ``qd.ndarray`` objects and NumPy arrays. ``NDArray[qd.f32, 2]`` equals
  ``ndarray(dtype=qd.f32, ndim=2)``. Instances carry ``_qd_ndarray_annotation = True``,
  ``dtype`` (a DataType, or None when free; ``float``/``int`` resolve at use time) and ``ndim``.
- ``Layout`` (``AOS``, ``SOA``) and ``Backend`` (``FIELD``, ``NDARRAY``).
- Placeholders for the quantized types (quant), which raise
  NotImplementedError until they exist.
"""

import enum
import types as _pytypes
from typing import TYPE_CHECKING, Any

from quadrants import _types
from quadrants._matrix import MatrixType, matrix, vector

if TYPE_CHECKING:
    # For type checkers a compile-time parameter may hold any value (a field, a number, an
    # object), so ``x: qd.Template`` is Any; ``qd.template()`` is a call, which no checker
    # accepts in an annotation (docs/typing.md).
    Template = Any

    def template(tensor: Any = None, dim: Any = None) -> Any: ...

else:

    class Template:
        """Annotation of a compile-time parameter: ``x: qd.template()`` or ``x: qd.Template``.

        The kernel is specialised on the value: Python ints/floats/bools by value, fields by
        identity, other objects by identity. The constructor's arguments are accepted for
        compatibility and ignored.
        """

        _qd_template = True

        def __init__(self, tensor=None, dim=None):
            self.tensor = tensor
            self.dim = dim

        def __repr__(self):
            return "qd.template()"

    template = Template


_BOUNDARIES = ("unsafe", "clamp")


_ELEMENT_KINDS_MESSAGE = (
    "Only scalars, vectors, and matrices are allowed as elements of qd.types.ndarray()"
)


def _element_type(dtype, element_dim, element_shape):
    """The element type that the older ``element_dim``/``element_shape`` arguments of
    ``qd.types.ndarray`` spell: `dtype` itself for scalar elements (``element_dim=0`` or
    ``element_shape=()``), else the vector or matrix type of shape `element_shape` over `dtype`.
    ``element_dim`` alone names vectors or matrices without their size: `dtype` is returned and
    the size comes from each argument (NdarrayType._element_dim)."""
    if isinstance(dtype, MatrixType):
        raise TypeError(
            f'Cannot specify matrix dtype "{dtype}" and element shape or dim at the same time.'
        )
    if element_shape is not None:
        element_shape = tuple(element_shape)
    if element_dim == 0 or element_shape == ():
        if element_shape not in (None, ()) or element_dim not in (None, 0):
            raise ValueError(
                "Both element_shape and element_dim are specified, but shape doesn't match "
                f"specified dim: {len(element_shape or ())}!={element_dim or 0}"
            )
        return dtype
    if element_dim is not None:
        if isinstance(element_dim, bool) or element_dim not in (1, 2):
            raise ValueError(_ELEMENT_KINDS_MESSAGE)
        if element_shape is None:
            return dtype
        if len(element_shape) != element_dim:
            raise ValueError(
                "Both element_shape and element_dim are specified, but shape doesn't match "
                f"specified dim: {len(element_shape)}!={element_dim}"
            )
    if len(element_shape) > 2:
        raise ValueError(_ELEMENT_KINDS_MESSAGE)
    for size in element_shape:
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"element_shape must hold positive ints, got {element_shape!r}")
    if len(element_shape) == 1:
        return vector(element_shape[0], dtype)
    return matrix(element_shape[0], element_shape[1], dtype)


class NdarrayType:
    """Annotation of an array parameter: ``qd.types.ndarray(dtype=None, ndim=None,
    needs_grad=None, boundary="unsafe")``, also spelled ``qd.types.NDArray[dtype, ndim]``.
    ``element_shape=(n,)`` / ``(n, m)`` (with ``element_dim`` 1 / 2 or alone) is another
    spelling of ``dtype=qd.types.vector(n, dtype)`` / ``qd.types.matrix(n, m, dtype)``.

    Accepts ``qd.ndarray`` objects and C- or Fortran-contiguous NumPy arrays. A None dtype or
    ndim matches any; the kernel is specialised on the argument's element type and ndim.
    """

    _qd_ndarray_annotation = True

    def __init__(
        self,
        dtype=None,
        ndim=None,
        needs_grad=None,
        boundary="unsafe",
        element_dim=None,
        element_shape=None,
        field_dim=None,
    ):
        if field_dim is not None:
            raise ValueError(
                "The field_dim argument for ndarray type is already deprecated. Please use ndim "
                "instead."
            )
        # element_dim alone: vector (1) or matrix (2) elements whose size each argument gives.
        self._element_dim = 0
        if element_dim is not None or element_shape is not None:
            dtype = _element_type(dtype, element_dim, element_shape)
            if element_shape is None and element_dim in (1, 2) and element_dim is not True:
                self._element_dim = element_dim
        if (
            dtype is not None
            and not isinstance(dtype, (_types.DataType, MatrixType))
            and dtype not in (int, float, bool)
        ):
            try:
                _types.cook_dtype(dtype)
            except ValueError:
                raise TypeError(f"Invalid element type {dtype!r} for qd.types.ndarray") from None
        if ndim is not None and (isinstance(ndim, bool) or not isinstance(ndim, int) or ndim < 0):
            raise TypeError(
                f"ndim of qd.types.ndarray must be a non-negative int or None, got {ndim!r}"
            )
        if boundary not in _BOUNDARIES:
            raise ValueError(
                f"boundary of qd.types.ndarray must be one of {_BOUNDARIES}, got {boundary!r}"
            )
        self._raw_dtype = dtype
        self.ndim = ndim
        self.needs_grad = needs_grad
        self.boundary = boundary
        self.layout = Layout.AOS

    @classmethod
    def __class_getitem__(cls, args):
        if not isinstance(args, tuple):
            args = (args,)
        return cls(*args)

    @property
    def dtype(self):
        """The element DataType, or None when any element type matches."""
        raw = self._raw_dtype
        if isinstance(raw, MatrixType):
            return raw.dtype  # vector/matrix elements: the scalar type (element axes last)
        return None if raw is None else _types.cook_dtype(raw)

    @property
    def element_ndim(self):
        """1 for vector elements, 2 for matrix elements, 0 for scalars."""
        raw = self._raw_dtype
        return raw.ndim if isinstance(raw, MatrixType) else self._element_dim

    def __repr__(self):
        return (
            f"NdarrayType(dtype={self._raw_dtype}, ndim={self.ndim}, needs_grad={self.needs_grad}, "
            f"boundary={self.boundary!r})"
        )


ndarray = NdarrayType
NDArray = NdarrayType


class Layout(enum.Enum):
    """Memory layout of compound elements: array of structures or structure of arrays."""

    AOS = 0
    SOA = 1


class Backend(enum.IntEnum):
    """What ``qd.tensor`` allocates: ``FIELD`` (a ``qd.field``) or ``NDARRAY`` (a
    ``qd.ndarray``, the default)."""

    FIELD = 0
    NDARRAY = 1


def _not_yet(name):
    def unsupported(*args, **kwargs):
        raise NotImplementedError(f"qd.types.{name} is not supported yet")

    unsupported.__name__ = unsupported.__qualname__ = name
    unsupported.__doc__ = f"qd.types.{name}: not supported yet (raises NotImplementedError)."
    return unsupported


quant = _pytypes.SimpleNamespace(
    int=_not_yet("quant.int"), fixed=_not_yet("quant.fixed"), float=_not_yet("quant.float")
)
