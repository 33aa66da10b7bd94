"""``qd.field``, ``qd.root`` and the axes ``qd.i``, ``qd.ij``, ...

On the CPU a field's memory is a zero-initialised, C-contiguous NumPy array owned by the
``ScalarField`` object. Indices are canonical (the order of ``shape``); ``order="ji"`` (or nested
``qd.root.dense`` levels) permutes the *physical* layout only: the array is stored with its axes
in physical order, outermost first, and ``_qd_field_order[p]`` is the canonical axis at physical
position ``p``. ``offset`` shifts the index origin: canonical index ``I`` of axis ``k`` lives at
``I - offset[k]``. Each field has a process-unique ``_qd_field_id`` and, once it has memory,
registers its physical array with the core (``quadrants._core.register_field(id, array)``).
On CUDA the memory is a ``DeviceBuffer`` registered with ``cuda_register_field`` and the array
is its host mirror (``_device.py`` says when data moves).

Layouts: ``qd.root.dense(axes, shape)`` levels may be nested (``qd.root.dense(qd.i, 4).dense(qd.j,
8)`` makes (4, 8) fields). A field has one dimension per axis named along the chain, in axis
order (``qd.root.dense(qd.k, 5)`` makes a (5,) field); an axis divided over several levels has
the product of their extents (``dense(qd.i, 4).dense(qd.i, 3)``: shape (12,)). Several fields
placed in one SNode get one array each (structure of arrays). Sparse
SNodes (``pointer``, ``bitmasked``, ``dynamic``, ``hash``) raise NotImplementedError.

Python-scope element access checks bounds always (AssertionError, as the reference does with
``debug=True``), and converts values to the field's dtype with C cast semantics. After
``qd.reset()`` (or a new ``qd.init()``) every older field raises QuadrantsRuntimeError when used.
"""

import itertools
import numbers
import warnings
import weakref
from typing import Any

import numpy as np

from quadrants import _core, _device, _dlpack, _external, _runtime, _types
from quadrants._core import QuadrantsRuntimeError, QuadrantsSyntaxError

MAX_FIELD_DIMS = 12

_field_ids = itertools.count(1)
_live_fields = weakref.WeakSet()


class Axes:
    """A set of index axes: ``qd.i`` is axis 0, ``qd.ij`` axes 0 and 1, ``qd.axes(1, 0)``..."""

    __slots__ = ("indices",)

    def __init__(self, *indices):
        for index in indices:
            if (
                isinstance(index, bool)
                or not isinstance(index, int)
                or not 0 <= index < MAX_FIELD_DIMS
            ):
                raise ValueError(f"an axis is an int in [0, {MAX_FIELD_DIMS}), got {index!r}")
        self.indices = tuple(indices)

    def __repr__(self):
        return f"qd.axes({', '.join(map(str, self.indices))})"


def axes(*indices):
    """The axes object for the given axis numbers (``qd.axes(0, 1)`` is ``qd.ij``)."""
    return Axes(*indices)


i, j, k, l = Axes(0), Axes(1), Axes(2), Axes(3)
_AXIS_NAMES = "ijklmnopqrst"
ij, ik, il, jk, jl, kl = Axes(0, 1), Axes(0, 2), Axes(0, 3), Axes(1, 2), Axes(1, 3), Axes(2, 3)
ijk, ijl, ikl, jkl = Axes(0, 1, 2), Axes(0, 1, 3), Axes(0, 2, 3), Axes(1, 2, 3)
ijkl = Axes(0, 1, 2, 3)


def _check_alive(obj, what):
    if obj._generation != _runtime.generation():
        raise QuadrantsRuntimeError(
            f"this {what} was created before the last qd.reset() or qd.init() and can no longer be "
            "used"
        )


def _sparse_unsupported(kind):
    def method(self, *args, **kwargs):
        raise NotImplementedError(
            f"qd.root.{kind}: sparse SNodes (pointer, bitmasked, dynamic, hash) are not supported; "
            "use dense"
        )

    method.__name__ = kind
    return method


def _as_offset(offset, ndim):
    if offset is None:
        return (0,) * ndim
    if isinstance(offset, numbers.Integral):
        offset = (offset,)
    offset = tuple(offset)
    if len(offset) != ndim:
        raise QuadrantsSyntaxError(
            f"The dimensionality of shape and offset must be the same ({ndim} != {len(offset)})"
        )
    for value in offset:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise TypeError(f"field offsets must be ints, got {offset!r}")
    return tuple(int(value) for value in offset)


class SNode:
    """A dense layout level: ``qd.root.dense(axes, shape)`` and its children."""

    _qd_snode = True  # for the compiler (qd.rescale_index takes fields or SNodes)

    def __init__(self, parent, axes_seq, sizes):
        self._parent = parent
        self._axes = axes_seq  # axis numbers of this level
        self._sizes = sizes  # extent of each of them
        self._generation = _runtime.generation()

    def _chain(self):
        """(axis, size) of every level from the root down to this one."""
        levels = []
        node = self
        while node is not None:
            levels[:0] = list(zip(node._axes, node._sizes))
            node = node._parent
        return levels

    def dense(self, axes, dimensions):
        """A child level of extent `dimensions` (an int for every axis, or one int each)."""
        _runtime.require_init()
        _check_alive(self, "SNode")
        if not isinstance(axes, Axes):
            raise TypeError(f"dense() expects axes such as qd.i or qd.ij, got {axes!r}")
        indices = axes.indices
        if isinstance(dimensions, numbers.Integral):
            dimensions = (dimensions,) * len(indices)
        dimensions = tuple(dimensions)
        if len(dimensions) != len(indices):
            raise ValueError(f"dense(): {len(indices)} axes but {len(dimensions)} dimensions")
        for size in dimensions:
            if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 1:
                raise ValueError(
                    f"dense(): every dimension must be a positive int, got {dimensions!r}"
                )
        if len(set(indices)) != len(indices):
            raise ValueError(f"dense(): axes {indices} name an axis twice")
        used = {axis for axis, _ in self._chain()}
        for axis, size in zip(indices, dimensions):
            if axis in used and size & (size - 1):
                warnings.warn(
                    f"Shape {size} is detected on non-first division of axis "
                    f"{_AXIS_NAMES[axis]}. For best performance, we recommend that you set it "
                    "to a power of two.",
                    stacklevel=3 if isinstance(self, _Root) else 2,
                )
        return SNode(self, indices, tuple(int(size) for size in dimensions))

    pointer = _sparse_unsupported("pointer")
    bitmasked = _sparse_unsupported("bitmasked")
    dynamic = _sparse_unsupported("dynamic")
    hash = _sparse_unsupported("hash")

    def _layout(self):
        """(canonical shape, physical order) of fields placed here. The field has one dimension
        per axis named along the chain, in axis-number order (``dense(qd.k, 5)`` makes a 1-D
        field); an axis divided over several levels has the product of their extents, and its
        index runs over the levels row-major (``dense(qd.i, 4).dense(qd.i, 3)``: i in [0, 12)).
        Such an axis is stored as one contiguous extent at the place of its outermost level."""
        chain = self._chain()
        present = sorted({axis for axis, _ in chain})
        dim_of = {axis: d for d, axis in enumerate(present)}
        extent = [1] * len(present)
        order = []
        for axis, size in chain:
            extent[dim_of[axis]] *= size
            if dim_of[axis] not in order:
                order.append(dim_of[axis])
        return tuple(extent), tuple(order)

    @property
    def shape(self):
        return self._layout()[0]

    def place(self, *fields, offset=None):
        """Gives every field in `fields` memory laid out by this level. Returns self."""
        _runtime.require_init()
        _check_alive(self, "SNode")
        shape, order = self._layout()
        offset = _as_offset(offset, len(shape))
        # A struct field places its member fields; a vector/matrix field placed by itself
        # places its element fields as one block (_qd_element_block).
        groups = [
            field._place_fields()
            for field in fields
            if getattr(field, "_qd_element_block", False)
        ]
        fields = [
            member
            for field in fields
            for member in (field._place_fields() if hasattr(field, "_place_fields") else (field,))
        ]
        for field in fields:
            if not isinstance(field, ScalarField):
                raise TypeError(f"place() expects qd.field objects, got {type(field).__name__}")
        # The element fields of one vector/matrix field share one block of memory, element
        # by element (see _place_block); every other field gets memory of its own.
        blocks = {id(f): group for group in groups for f in group}
        placed = set()
        for field in fields:
            group = blocks.get(id(field))
            if group is None:
                field._place(shape, order, offset, self)
            elif id(group[0]) not in placed:
                placed.add(id(group[0]))
                _place_block(group, shape, order, offset, self)
        return self

    def parent(self, n=1):
        """The level `n` steps up (the root's parent is None)."""
        node = self
        for _ in range(n):
            if node is None:
                return None
            node = node._parent
        return node

    def __repr__(self):
        return f"<qd.SNode shape={self.shape}>"


class _Root(SNode):
    """``qd.root``: the top of every layout; placing directly under it makes 0-d fields."""

    def __init__(self):
        super().__init__(None, (), ())

    def _check_generation(self):
        self._generation = _runtime.generation()

    def dense(self, axes, dimensions):
        self._check_generation()
        return super().dense(axes, dimensions)

    def place(self, *fields, offset=None):
        self._check_generation()
        return super().place(*fields, offset=offset)

    def __repr__(self):
        return "qd.root"


root = _Root()


def _inverse(order):
    inverse = [0] * len(order)
    for position, axis in enumerate(order):
        inverse[axis] = position
    return tuple(inverse)


class Field:
    """The base of every field (``qd.Field``): ``qd.ScalarField`` below, ``qd.MatrixField``
    (quadrants/_matrix_field.py, vector fields included) and ``qd.StructField``
    (quadrants/_struct.py). It carries no state; code that needs the memory of one scalar field
    tests for ``ScalarField``."""

    __slots__ = ()

    @property
    def _qd_kernel_fill(self):
        """The kernel form of fill (quadrants/_field_methods.py)."""
        from quadrants import _field_methods

        return _field_methods.fill


class ScalarField(Field, _dlpack.Exportable):
    """A scalar field: an n-d array living in Quadrants memory, indexed ``x[i, j]``.

    Attributes for the compiler: ``_qd_field_id`` (unique in the process), ``dtype``, ``shape``,
    ``_qd_field_ndim``, ``_qd_field_order``, ``_qd_field_offset``.
    """

    def __init__(self, dtype, name, needs_grad=False, needs_dual=False):
        self.dtype = _types.cook_dtype(dtype)
        self.name = name
        self._qd_field_id = next(_field_ids)
        self._generation = _runtime.generation()
        self._array = None  # physical-order memory (on CUDA: the host mirror, see _device.py)
        self._view = None  # the same memory, canonical axis order
        self._device = None  # CUDA: the DeviceBuffer holding the field
        self._shape = None
        self._order = None
        self._offset = None
        self._snode = None
        self._tree_destroyed = False  # set by SNodeTree.destroy() (quadrants/_fields_builder.py)
        self.grad = None
        self.dual = None
        if (needs_grad or needs_dual) and not self.dtype.is_real:
            raise QuadrantsRuntimeError(
                f"{self.dtype} is not supported for field with `needs_grad=True` or "
                "`needs_dual=True`."
            )
        if needs_grad:
            self.grad = ScalarField(self.dtype, name + ".grad")
        if needs_dual:
            self.dual = ScalarField(self.dtype, name + ".dual")
        _live_fields.add(self)

    # --- memory ---

    def _place(self, shape, order, offset, snode, memory=None):
        """Gives the field its memory: `memory` (a zeroed C-contiguous array of the physical
        shape, part of a larger block) or a new array."""
        _check_alive(self, "qd.field")
        if self._array is not None:
            raise QuadrantsRuntimeError(f"field {self._label()} is already placed")
        if len(shape) > MAX_FIELD_DIMS:
            raise QuadrantsRuntimeError(
                f"fields have at most {MAX_FIELD_DIMS} dimensions, got shape {shape}"
            )
        physical = memory
        if physical is None:
            physical = np.zeros(tuple(shape[axis] for axis in order), dtype=self.dtype.np_dtype)
        identity = order == tuple(range(len(order)))
        self._array = physical
        self._view = physical if identity else physical.transpose(_inverse(order))
        self._shape, self._order, self._offset, self._snode = (
            tuple(shape),
            tuple(order),
            offset,
            snode,
        )
        self._device = _device.allocate(physical)
        _device.register_field(self._qd_field_id, physical, self._device)
        for gradient in (self.grad, self.dual):
            if gradient is not None:
                gradient._place(shape, order, offset, snode)

    def _release(self):
        self._array = self._view = self._device = None
        self.grad = self.dual = None

    def _label(self):
        return f"'{self.name}'" if self.name else f"#{self._qd_field_id}"

    def _data(self):
        """The canonical-order view of the memory, after the usual checks."""
        _check_alive(self, "qd.field")
        if self._view is None and self._tree_destroyed:
            raise QuadrantsRuntimeError(
                f"field {self._label()} belongs to an SNode tree that has been destroyed"
            )
        if self._view is None:
            raise QuadrantsRuntimeError(
                f"field {self._label()} has not been placed: give it a shape, or place it with "
                "qd.root.dense(...).place(x)"
            )
        return self._view

    def _pull(self):
        """_data() with the device's data copied into it first (CUDA)."""
        view = self._data()
        _device.pull(self._device, self._array)
        return view

    def _push(self):
        """Copies the memory written through _data() to the device (CUDA)."""
        _device.push(self._device, self._array)

    @property
    def shape(self):
        self._data()
        return self._shape

    @property
    def _qd_field_ndim(self):
        return len(self.shape)

    @property
    def _qd_field_order(self):
        self._data()
        return self._order

    @property
    def _qd_field_offset(self):
        self._data()
        return self._offset

    @property
    def layout(self):
        """The physical axis order as a tuple of canonical axes, or None when it is the identity."""
        order = self._qd_field_order
        return None if order == tuple(range(len(order))) else order

    def has_grad(self):
        """Whether gradient storage is allocated (``needs_grad=True``, placed)."""
        return self.grad is not None and self.grad._view is not None

    def has_dual(self):
        """Whether dual storage is allocated (``needs_dual=True``, placed)."""
        return self.dual is not None and self.dual._view is not None

    @property
    def snode(self):
        """The layout level the field is placed in."""
        self._data()
        return self._snode

    def parent(self, n=1):
        """The layout level `n` steps up from the field (1: the level it is placed in)."""
        return self.snode.parent(n - 1)

    # --- bulk Python-scope access ---

    def fill(self, value):
        """Sets every element to `value` (converted to the field's dtype)."""
        view = self._data()
        view[...] = _types.to_dtype_value(value, self.dtype)
        self._push()

    def to_numpy(self, dtype=None, *, copy=True) -> np.ndarray:
        """The elements as a NumPy array of ``shape``. ``copy=False`` returns a view of the
        field's memory (CPU only, no dtype conversion possible); ``copy=None`` a view when
        possible."""
        copy = _dlpack.numpy_copy(self._device, copy)
        return _to_numpy(self._pull(), dtype, copy)

    def _dlpack_view(self):
        """(canonical NumPy view, DeviceBuffer or None): what a DLPack export describes."""
        return self._data(), self._device

    def from_numpy(self, arr):
        """Copies a NumPy array of exactly ``shape`` into the field, converting its dtype."""
        view = self._data()
        if not isinstance(arr, np.ndarray):
            raise TypeError(f"{np.ndarray} expected, but {type(arr)} provided")
        if tuple(arr.shape) != view.shape:
            raise ValueError(
                f"qd.field shape {view.shape} does not match the numpy array shape "
                f"{tuple(arr.shape)}"
            )
        _types.copy_converting(view, arr)
        self._push()

    def to_torch(self, device=None, *, copy=True):
        """The elements as a torch tensor, on `device` when given: a copy, or with ``copy=False``
        a view of the memory through DLPack (``copy=None``: a view when possible; never for a
        0-d field, as in the reference)."""
        return _dlpack.to_torch(
            self._data(), self._device, self.dtype, device, copy,
            lambda: _external.to_torch(self.to_numpy(), device), is_0d_field=not self.shape,
        )

    def from_torch(self, tensor):
        """Copies torch tensor `tensor` (same shape) into the field, converting its dtype."""
        self.from_numpy(_external.torch_to_numpy(tensor))

    def copy_from(self, other):
        """Copies all elements of field `other` (same shape) into this field."""
        if not isinstance(other, ScalarField):
            raise TypeError("Cannot copy from a non-field object")
        view, source = self._data(), other._pull()
        if view.shape != source.shape:
            raise ValueError(
                f"qd.field shape {view.shape} does not match the source field shape {source.shape}"
            )
        _types.copy_converting(view, source)
        self._push()

    # --- element access ---

    def _index(self, key):
        """(canonical view, NumPy index) of element `key`; AssertionError for a slice, a wrong
        number of indices or an index out of bounds, TypeError for a non-integer index."""
        view = self._data()
        if key is None:
            key = ()
        elif not isinstance(key, (tuple, list)):
            key = (key,)
        key = tuple(key)
        if len(key) != view.ndim or any(isinstance(index, slice) for index in key):
            raise AssertionError("Slicing is not supported on qd.field")
        position = []
        for index, size, origin in zip(key, view.shape, self._offset):
            if not isinstance(index, (numbers.Integral, np.integer)):
                raise TypeError(
                    f"Detected illegal element of type: {type(index)}. Please be aware that "
                    "slicing a qd.field is not supported so far."
                )
            local = int(index) - origin
            if not 0 <= local < size:
                raise AssertionError(
                    f"index {key} is out of bounds for qd.field {self._label()} of shape "
                    f"{view.shape}" + (f" and offset {self._offset}" if any(self._offset) else "")
                )
            position.append(local)
        return view, tuple(position)

    def __getitem__(self, key) -> Any:
        view, position = self._index(key)
        return _types.to_python_value(_device.read_item(self._device, view, position), self.dtype)

    def __setitem__(self, key, value):
        view, position = self._index(key)
        view[position] = _types.to_dtype_value(value, self.dtype)
        _device.write_item(self._device, view, position)

    def __iter__(self):
        raise NotImplementedError("Struct for is only available in Quadrants scope.")

    def __repr__(self):
        return "<qd.field>"

    def __str__(self):
        if self._generation != _runtime.generation() or self._view is None:
            return "<Field: Definition of this field is incomplete>"
        return str(self.to_numpy())


def _to_numpy(view, dtype, copy):
    """Shared by fields and ndarrays: a copy or a view of `view`, optionally converted."""
    target = view.dtype if dtype is None else _types.to_numpy_type(dtype)
    converts = target != view.dtype
    if copy is False:
        if converts:
            raise ValueError(
                f"copy=False is incompatible with dtype conversion ({view.dtype} -> {target})"
            )
        return view
    if copy is None and not converts:
        return view
    result = np.empty(view.shape, dtype=target)
    _types.copy_converting(result, view)
    return result


def _normalize_shape(shape, what):
    if isinstance(shape, (numbers.Integral, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        shape = tuple(shape)
    except TypeError:
        raise QuadrantsRuntimeError(f"{shape!r} is not a valid shape for {what}") from None
    for size in shape:
        if (
            isinstance(size, bool)
            or not isinstance(size, (numbers.Integral, np.integer))
            or size < 1
        ):
            raise QuadrantsRuntimeError(f"{shape} is not a valid shape for {what}")
    return tuple(int(size) for size in shape)


def field(dtype, shape=None, order=None, name="", offset=None, needs_grad=False, needs_dual=False):
    """A new field of `dtype`. `shape` is an int or a tuple (``()``: a 0-d field); without a
    shape the field gets memory when placed (``qd.root.dense(qd.ij, (4, 8)).place(x)``).
    `order` is a permutation of ``"ijkl..."`` giving the physical axis order, `offset` the index
    origin of every axis."""
    _runtime.require_init()
    if getattr(dtype, "_qd_matrix_type", False):
        # A vector/matrix type: one scalar field per element (quadrants/_matrix_field.py).
        return dtype.field(shape=shape, order=order, name=name, offset=offset,
                           needs_grad=needs_grad, needs_dual=needs_dual)
    if getattr(dtype, "_qd_struct_type", False):
        # A struct type: a struct field (quadrants/_struct.py).
        return dtype.field(
            shape=shape, order=order, name=name, offset=offset, needs_grad=needs_grad,
            needs_dual=needs_dual,
        )
    result = ScalarField(dtype, name, needs_grad, needs_dual)
    if shape is None:
        if offset is not None:
            raise QuadrantsSyntaxError("shape cannot be None when offset is set")
        if order is not None:
            raise QuadrantsSyntaxError("shape cannot be None when order is set")
        return result
    shape, physical_order, offset, level = _dense_level(shape, order, offset)
    result._place(shape, physical_order, offset, level)
    return result


def _dense_level(shape, order, offset):
    """(shape, physical order, offset, level) of a field made with `shape`, `order` (a string
    of axis letters or None) and `offset`: a dense level under the root, checked."""
    shape = _normalize_shape(shape, "field")
    ndim = len(shape)
    if ndim > MAX_FIELD_DIMS:
        raise QuadrantsRuntimeError(
            f"fields have at most {MAX_FIELD_DIMS} dimensions, got shape {shape}"
        )
    offset = _as_offset(offset, ndim)
    if order is None:
        physical_order = tuple(range(ndim))
    else:
        if len(order) != ndim:
            raise QuadrantsSyntaxError(
                f"The dimensionality of shape and order must be the same ({ndim} != {len(order)})"
            )
        if len(set(order)) != ndim:
            raise QuadrantsSyntaxError("The axes in order must be different")
        physical_order = []
        for letter in order:
            axis = ord(letter) - ord("i") if isinstance(letter, str) and len(letter) == 1 else -1
            if not 0 <= axis < ndim:
                raise QuadrantsSyntaxError(f"Invalid axis {letter}")
            physical_order.append(axis)
        physical_order = tuple(physical_order)
    level = SNode(root, physical_order, tuple(shape[axis] for axis in physical_order))
    return shape, physical_order, offset, level


def _place_block(fields, shape, order, offset, snode):
    """Places scalar fields of one dtype (the elements of a vector/matrix field) in one block of
    memory of physical shape ``(len(fields),) + physical``: field k is the contiguous slice
    ``block[k]``, so every field is laid out as if it were alone, and the block, its first axis
    moved last, is the vector/matrix field as one array (``to_numpy(copy=False)``)."""
    physical = tuple(shape[axis] for axis in order)
    block = np.zeros((len(fields),) + physical, dtype=fields[0].dtype.np_dtype)
    for k, field in enumerate(fields):
        field._place(shape, order, offset, snode, memory=block[k, ...])  # a view, also 0-d
    return block


@_runtime.register_reset_hook
def _release_all_fields():
    for live in list(_live_fields):
        live._release()
    _live_fields.clear()
