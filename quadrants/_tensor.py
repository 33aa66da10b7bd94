"""``qd.Tensor``, ``qd.VectorTensor``, ``qd.MatrixTensor``: a wrapper over one field or ndarray.

The reference names its storage-neutral wrapper ``qd.Tensor``: it is a class of its own, not a
base of ``qd.Field`` or ``qd.Ndarray`` (``isinstance(qd.field(...), qd.Tensor)`` is False), so
programs that accept either kind of storage test ``isinstance(x, qd.Tensor | qd.Field |
qd.Ndarray)``. ``qd.Tensor(impl)`` wraps a field or an ndarray (TypeError otherwise) and passes
element access, NumPy/torch conversion, ``fill`` and ``copy_from`` through to it; a kernel
argument that is a wrapper is replaced by what it wraps (quadrants/_kernel.py).

``VectorTensor`` accepts only vector elements (a ``VectorNdarray`` or a vector field),
``MatrixTensor`` only matrix elements; both add ``element_shape``.

Not here: the ``qd.tensor(dtype, shape, backend=, layout=)`` allocator and custom physical
layouts.
"""

from quadrants._field import Field
from quadrants._matrix_field import MatrixField, MatrixNdarray, VectorNdarray
from quadrants._ndarray import Ndarray


class Tensor:
    """A field or ndarray behind one interface (see the module docstring)."""

    __slots__ = ("_impl",)

    def __init__(self, impl):
        if not isinstance(impl, (Ndarray, Field)):
            raise TypeError(f"Tensor(impl) requires an Ndarray or Field; got {type(impl).__name__}")
        self._impl = impl

    def _unwrap(self):
        """The wrapped field or ndarray."""
        return self._impl

    @property
    def _backend_name(self):
        return "NDARRAY" if isinstance(self._impl, Ndarray) else "FIELD"

    @property
    def shape(self):
        return tuple(self._impl.shape)

    @property
    def dtype(self):
        return self._impl.dtype

    @property
    def grad(self):
        grad = getattr(self._impl, "grad", None)
        return None if grad is None else wrap(grad)

    def __getitem__(self, key):
        return self._impl[key]

    def __setitem__(self, key, value):
        self._impl[key] = value

    def to_numpy(self, *args, **kwargs):
        return self._impl.to_numpy(*args, **kwargs)

    def from_numpy(self, arr):
        self._impl.from_numpy(arr)

    def to_torch(self, *args, **kwargs):
        return self._impl.to_torch(*args, **kwargs)

    def from_torch(self, tensor):
        self._impl.from_torch(tensor)

    def fill(self, value):
        self._impl.fill(value)

    def copy_from(self, other):
        self._impl.copy_from(other._impl if isinstance(other, Tensor) else other)

    def __repr__(self):
        return (
            f"{type(self).__name__}(shape={self.shape}, dtype={self.dtype}, "
            f"backend={self._backend_name})"
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
    """The most specific wrapper of field or ndarray `impl`."""
    if isinstance(impl, VectorNdarray) or _is_vector_field(impl):
        return VectorTensor(impl)
    if isinstance(impl, MatrixNdarray) or _is_matrix_field(impl):
        return MatrixTensor(impl)
    return Tensor(impl)


# The exact wrapper types, for the launch path's cheap ``type(x) in`` test.
TENSOR_TYPES = frozenset((Tensor, VectorTensor, MatrixTensor))
