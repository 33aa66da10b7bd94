"""``qd.BufferView``: a window ``[offset, offset + size)`` of a 1-D ndarray, passed to kernels.

``data[8:24]`` (a 1-D ndarray sliced with step 1) or ``qd.BufferView(data, offset=8, size=16)``
makes one; ``view.subview(offset, size)`` and ``view[2:6]`` narrow it (offsets relative to the
view). A kernel or func parameter annotated ``qd.BufferView`` (any dtype) or
``qd.BufferView[qd.f32]`` takes one; in the kernel ``v[i]`` is ``data[offset + i]``,
``v.size`` / ``v.shape`` / ``v.offset`` / ``v.arr`` read the window, and with ``debug=True`` every
``v[i]`` checks ``0 <= i < v.size`` (QuadrantsAssertionError).

A view argument is launched as three values: the ndarray, the offset and the size (the last two
i32 scalars), so windows of any position and size share one compiled kernel
(csrc/frontend/lower_buffer_view.c rebuilds the view from them).
"""

import operator

from quadrants import _types
from quadrants._annotations import NdarrayType
from quadrants._ndarray import Ndarray
from quadrants._matrix import MatrixType


class BufferViewType:
    """The annotation ``qd.BufferView[dtype]``: a view whose ndarray has element type `dtype`
    (None: any)."""

    def __init__(self, dtype=None, boundary="unsafe"):
        self.dtype = dtype
        self.boundary = boundary
        self.ndarray_type = NdarrayType(dtype=dtype, ndim=1)

    @staticmethod
    def _qd_cache_key(annotation):
        dtype = annotation.dtype
        if dtype is None or isinstance(dtype, MatrixType):
            return ("BufferViewType", dtype)
        return ("BufferViewType", _types.cook_dtype(dtype)._qd_dtype)

    def __repr__(self):
        return f"BufferViewType(dtype={self.dtype}, boundary={self.boundary})"


class BufferView:
    """A window of a 1-D ndarray (see the module docstring): ``arr``, ``offset``, ``size``."""

    __slots__ = ("arr", "offset", "size")
    # The launch value of the view's marker leaf, read by the launcher's fast path
    # (quadrants/_kernel.py) like the members: a repeat needs no identity of the view.
    _qd_marker = None

    def __class_getitem__(cls, dtype):
        if isinstance(dtype, tuple):
            return BufferViewType(*dtype)
        return BufferViewType(dtype)

    def __init__(self, arr, offset, size):
        offset, size = operator.index(offset), operator.index(size)
        if isinstance(arr, BufferView):
            raise TypeError(
                "Cannot nest BufferView(view, ...); use view.subview(offset, size) instead"
            )
        arr = getattr(arr, "_qd_tensor_impl", arr)  # a qd.Tensor wrapper: what it wraps
        if not isinstance(arr, Ndarray):
            raise TypeError(f"BufferView requires a qd.ndarray, got {type(arr).__name__}")
        if arr.grad is not None:
            raise TypeError("BufferView does not support ndarrays with gradients (needs_grad=True)")
        if len(arr.shape) != 1:
            raise TypeError(f"BufferView requires a 1D ndarray, got shape {arr.shape}")
        if offset < 0 or size < 0 or offset + size > arr.shape[0]:
            raise ValueError(
                f"BufferView out of range: offset={offset}, size={size}, "
                f"ndarray length={arr.shape[0]}"
            )
        self.arr, self.offset, self.size = arr, offset, size

    @property
    def shape(self):
        return (self.size,)

    def subview(self, offset, size):
        """The window [offset, offset + size) of this view (offsets relative to it)."""
        offset, size = operator.index(offset), operator.index(size)
        if offset < 0 or size < 0 or offset + size > self.size:
            raise ValueError(
                f"subview out of range: offset={offset}, size={size}, parent size={self.size}"
            )
        return BufferView(self.arr, self.offset + offset, size)

    def __getitem__(self, key):
        if not isinstance(key, slice):
            raise TypeError(
                f"BufferView host-side indexing requires a slice, got {type(key).__name__}"
            )
        start, stop, step = key.indices(self.size)
        if step != 1:
            raise ValueError(f"BufferView slice requires step=1, got step={step}")
        return self.subview(start, max(stop - start, 0))

    def get_ndarray(self):
        """The ndarray the view looks into."""
        return self.arr

    def to_numpy(self):
        """A copy of the elements in the window."""
        return self.arr.to_numpy()[self.offset:self.offset + self.size].copy()

    def __repr__(self):
        return f"BufferView(offset={self.offset}, size={self.size}, dtype={self.arr.dtype})"


def slice_ndarray(arr, key):
    """``arr[start:stop]`` of a 1-D ndarray: the BufferView of that window."""
    if len(arr.shape) != 1:
        raise TypeError(f"ndarray slice to BufferView requires a 1D array, got shape {arr.shape}")
    start, stop, step = key.indices(arr.shape[0])
    if step != 1:
        raise ValueError(f"BufferView slice requires step=1, got step={step}")
    return BufferView(arr, start, max(stop - start, 0))


def is_annotation(annotation):
    """Whether `annotation` declares a BufferView parameter."""
    return annotation is BufferView or isinstance(annotation, BufferViewType)


# launch values of one BufferView argument: the ndarray, the offset, the size, the marker


def launch(param, value, launch_values, callbacks, array_value):
    """Appends the launch values of BufferView argument `value` (ndarray, offset, size, None
    for the marker) and returns its key part ("v", dtype id). `array_value` is the launch
    path's ndarray check (_kernel._array_value)."""
    from quadrants._core import QuadrantsRuntimeTypeError
    from quadrants._kernel import NDARRAY, Param

    if not isinstance(value, BufferView):
        raise QuadrantsRuntimeTypeError(
            f"Argument {param.name} expects a BufferView, got {type(value).__name__}"
        )
    annotation = param.annotation
    wanted = annotation.dtype if isinstance(annotation, BufferViewType) else None
    element = getattr(value.arr, "_matrix_type", None)  # vector/matrix elements, or None
    if wanted is None:
        ndarray_type = NdarrayType(dtype=element, ndim=1)
    elif element is not None and not isinstance(wanted, MatrixType):
        raise TypeError(
            f"Expect element type {wanted} for argument {param.name}, but get {element}"
        )
    else:
        ndarray_type = annotation.ndarray_type
    dtype, array = array_value(Param(param.name, NDARRAY, ndarray_type, None), value.arr, callbacks)
    launch_values.extend((array, value.offset, value.size, None))
    return ("v", dtype._qd_dtype, tuple(value.arr.element_shape or ()))


def descs(name, part):
    """The compile_kernel descriptors of BufferView parameter `name` with key part `part`: its
    members, flattened like a dataclass's (kinds of csrc/abi/args.def)."""
    from quadrants import _core

    kinds = _core.ARG_KINDS
    i32 = _types.i32._qd_dtype
    return [
        (f"{name}.arr", (kinds["NDARRAY"], part[1], 1 + len(part[2]), part[2])),
        (f"{name}.offset", (kinds["SCALAR"], i32)),
        (f"{name}.size", (kinds["SCALAR"], i32)),
        (f"{name}.__qd_buffer_view", (kinds["TEMPLATE"], True)),
    ]
