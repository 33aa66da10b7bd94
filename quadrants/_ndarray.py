"""``qd.ndarray``: an n-d array passed to kernels as an argument.

On the CPU the memory is a zero-initialised, C-contiguous NumPy array owned by the object and
exposed as ``_qd_array`` (what a kernel launch hands to the core). On CUDA ``_qd_array`` is a
zero-filled ``quadrants._core.DeviceBuffer`` and the NumPy array its host mirror (``_device.py``
says when data moves). ``_qd_ndarray = True`` marks
the objects for the compiler. Every dimension must be an int in 1..2**31-1 (``shape=()`` makes a
0-d array, indexed ``a[()]``). Python-scope element access raises QuadrantsIndexError for a wrong
number of indices and IndexError out of bounds; values are converted to the element type with C
cast semantics. After ``qd.reset()`` an older ndarray raises QuadrantsRuntimeError when used.
"""

import numbers
import weakref
from typing import TYPE_CHECKING, Any

import numpy as np

from quadrants import _device, _dlpack, _external, _runtime, _types
from quadrants._core import NdarrayBase, QuadrantsIndexError, QuadrantsRuntimeError
from quadrants._field import _check_alive, _inverse, _to_numpy

MAX_DIM_SIZE = 2**31 - 1

_live_ndarrays = weakref.WeakSet()


def _ndarray_shape(shape):
    if isinstance(shape, (numbers.Integral, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        dims = tuple(shape)
    except TypeError:
        raise QuadrantsRuntimeError(f"{shape!r} is not a valid shape for ndarray") from None
    if not all(isinstance(d, (int, np.integer)) and 0 < d <= MAX_DIM_SIZE for d in dims):
        raise QuadrantsRuntimeError(f"{shape} is not a valid shape for ndarray")
    return tuple(int(d) for d in dims)


class Ndarray(NdarrayBase, _dlpack.Exportable):
    """The base of every ndarray (``qd.Ndarray``): ``qd.ScalarNdarray`` here,
    ``qd.VectorNdarray`` and ``qd.MatrixNdarray`` in quadrants/_matrix_field.py. It holds the
    memory of ``shape`` scalars of ``dtype``: ``dtype``, ``shape``, ``element_shape``
    (``()`` for scalar elements), ``layout``, ``grad`` (when created with ``needs_grad=True``).
    ``dtype`` and ``_qd_array`` live in the C base (NdarrayBase), where a kernel launch reads
    them.

    ``layout`` (``qd.tensor(..., layout=)``, scalar ndarrays only) is None or a permutation of
    the axes: ``layout[p]`` is the canonical axis stored at physical position ``p``, outermost
    first. The memory (``_host``, ``_qd_array``) then has the physical shape
    ``tuple(shape[a] for a in layout)``; ``shape``, ``_data()`` and every Python-scope access
    are canonical (``_data()`` is a transposed view of the memory), and kernels index it with
    canonical indices (the compiler permutes them)."""

    _qd_ndarray = True
    shape: Any

    if TYPE_CHECKING:
        # ``qd.types.NDArray[dtype, ndim]`` is this class for type checkers (quadrants/types):
        # the subscript is accepted and ignored.
        def __class_getitem__(cls, item: Any) -> Any: ...

    # Annotated so that pyright does not take the class for a generic one (it does so for a
    # class whose __init__ has no annotation), which would make it reject NDArray[dtype, ndim].
    def __init__(self, dtype: Any, shape: Any, needs_grad: bool = False, layout: Any = None) -> None:
        if layout is not None and tuple(layout) == tuple(range(len(shape))):
            layout = None
        self.dtype = dtype
        self.shape = shape
        self.element_shape = ()
        self.layout = None if layout is None else tuple(layout)
        self._generation = _runtime.generation()
        physical = shape if layout is None else tuple(shape[axis] for axis in layout)
        self._host = np.zeros(physical, dtype=dtype.np_dtype)
        # the canonical view of the memory
        self._view = self._host if layout is None else self._host.transpose(_inverse(layout))
        self._device = _device.allocate(self._host)  # CUDA: the memory; _host its mirror
        # what a launch passes: the NumPy array on the CPU, the DeviceBuffer on CUDA
        self._qd_array = self._host if self._device is None else self._device
        self.grad = scalar_ndarray(dtype, shape, layout=layout) if needs_grad else None
        _live_ndarrays.add(self)

    def _data(self):
        """The canonical view of the memory (on CUDA its host mirror), after the usual checks."""
        _check_alive(self, "qd.ndarray")
        return self._view

    def _pull(self):
        """_data() with the device's data copied into it first (CUDA)."""
        data = self._data()
        _device.pull(self._device, self._host)
        return data

    def has_grad(self):
        """Whether gradient storage exists (the ndarray was made with ``needs_grad=True``)."""
        return self.grad is not None

    def has_dual(self):
        """Whether dual storage exists (never, for ndarrays)."""
        return False

    def _push(self):
        """Copies the memory written through _data() to the device (CUDA)."""
        _device.push(self._device, self._host)

    def _release(self):
        self._qd_array = self._host = self._view = self._device = None
        self.grad = None

    @property
    def ndim(self):
        return len(self.shape)

    def fill(self, value):
        """Sets every element to `value` (converted to the element type)."""
        self._data()[...] = _types.to_dtype_value(value, self.dtype)
        self._push()

    def to_numpy(self, dtype=None, *, copy=True) -> np.ndarray:
        """The elements as a NumPy array (canonical axes). ``copy=False`` returns a view of the
        memory (CPU only; ValueError otherwise), ``copy=None`` a view when possible."""
        copy = _dlpack.numpy_copy(self._device, copy)
        return _to_numpy(self._pull(), dtype, copy)

    def _dlpack_view(self):
        """(canonical NumPy view, DeviceBuffer or None): what a DLPack export describes."""
        return self._data(), self._device

    def from_numpy(self, arr):
        """Copies NumPy array `arr` (same shape) into the ndarray, converting its dtype."""
        data = self._data()
        if not isinstance(arr, np.ndarray):
            raise TypeError(f"{np.ndarray} expected, but {type(arr)} provided")
        if tuple(arr.shape) != self.shape:
            raise ValueError(
                f"Mismatch shape: {self.shape} expected, but {tuple(arr.shape)} provided"
            )
        _types.copy_converting(data, arr)
        self._push()

    def to_torch(self, device=None, *, copy=True):
        """The elements as a torch tensor, on `device` when given: a copy, or with ``copy=False``
        a view of the memory through DLPack (``copy=None``: a view when possible)."""
        return _dlpack.to_torch(
            self._data(), self._device, self.dtype, device, copy,
            lambda: _external.to_torch(self.to_numpy(), device),
        )

    def from_torch(self, tensor):
        """Copies torch tensor `tensor` (same shape) into the ndarray, converting its dtype."""
        self.from_numpy(_external.torch_to_numpy(tensor))

    def copy_from(self, other):
        """Copies all elements of ndarray `other` (same shape) into this one."""
        if not isinstance(other, Ndarray):
            raise TypeError("Cannot copy from a non-ndarray object")
        data, source = self._data(), other._pull()
        if data.shape != source.shape:
            raise ValueError(f"Mismatch shape: {data.shape} expected, but {source.shape} provided")
        _types.copy_converting(data, source)
        self._push()

    def _index(self, key):
        data = self._data()
        if key is None:
            key = ()
        elif isinstance(key, slice):
            raise TypeError("a slice of an ndarray is a qd.BufferView, not an element")
        elif not isinstance(key, (tuple, list)):
            key = (key,)
        key = tuple(key)
        if len(key) != data.ndim:
            raise QuadrantsIndexError(
                f"{data.ndim}d ndarray indexed with {len(key)}d indices: {key}"
            )
        for index, size in zip(key, data.shape):
            if not isinstance(index, (numbers.Integral, np.integer)):
                raise TypeError(f"ndarray indices must be integers, got {type(index).__name__}")
            if not 0 <= index < size:
                raise IndexError(
                    f"index {key} is out of bounds for qd.ndarray of shape {data.shape}"
                )
        return data, tuple(int(index) for index in key)

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, slice):
            from quadrants import _buffer_view

            return _buffer_view.slice_ndarray(self, key)
        data, position = self._index(key)
        return _types.to_python_value(_device.read_item(self._device, data, position), self.dtype)

    def __setitem__(self, key: Any, value: Any) -> None:
        data, position = self._index(key)
        data[position] = _types.to_dtype_value(value, self.dtype)
        _device.write_item(self._device, data, position)

    def __deepcopy__(self, memo=None):
        result = scalar_ndarray(self.dtype, self.shape, layout=self.layout)
        result.copy_from(self)
        return result

    def __repr__(self):
        return "<qd.ndarray>"


class ScalarNdarray(Ndarray):
    """An ndarray of scalars: what ``qd.ndarray(qd.f32, shape)`` returns."""


class _PermutedNdarray(ScalarNdarray):
    """A scalar ndarray with a physical layout (its ``layout``, a C member of NdarrayBase, is what
    the launch fast path compares; the class of its own keeps ``type(x) is ScalarNdarray``
    meaning the canonical order)."""


def scalar_ndarray(dtype, shape, needs_grad=False, layout=None):
    """A ScalarNdarray, or a _PermutedNdarray when `layout` is not the identity (checked)."""
    if layout is None or tuple(layout) == tuple(range(len(shape))):
        return ScalarNdarray(dtype, shape, needs_grad)
    return _PermutedNdarray(dtype, shape, needs_grad, layout)


def ndarray(dtype, shape, needs_grad=False):
    """A new zero-filled ndarray of `dtype` (a scalar type) and `shape` (an int or a tuple)."""
    _runtime.require_init()
    if getattr(dtype, "_qd_matrix_type", False):
        # vector/matrix elements (quadrants/_matrix_field.py)
        return dtype.ndarray(shape, needs_grad=needs_grad)
    shape = _ndarray_shape(shape)
    try:
        dtype = _types.cook_dtype(dtype)
    except ValueError:
        raise QuadrantsRuntimeError(f"{dtype} is not supported as ndarray element type") from None
    if needs_grad and not dtype.is_real:
        raise QuadrantsRuntimeError(
            f"{dtype} is not supported for ndarray with `needs_grad=True` or `needs_dual=True`."
        )
    return ScalarNdarray(dtype, shape, needs_grad)


@_runtime.register_reset_hook
def _release_all_ndarrays():
    for live in list(_live_ndarrays):
        live._release()
    _live_ndarrays.clear()
