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

from quadrants import _types
from quadrants._matrix import MatrixType, matrix, vector


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


class NdarrayType:
    """Annotation of an array parameter: ``qd.types.ndarray(dtype=None, ndim=None,
    needs_grad=None, boundary="unsafe")``, also spelled ``qd.types.NDArray[dtype, ndim]``.

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
        if element_dim not in (None, 0) or element_shape not in (None, ()):
            raise NotImplementedError(
                "vector and matrix elements of qd.types.ndarray are not supported yet"
            )
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
        return raw.ndim if isinstance(raw, MatrixType) else 0

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


class Backend(enum.Enum):
    """What ``qd.tensor`` allocates."""

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
