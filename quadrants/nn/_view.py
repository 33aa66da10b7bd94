"""Matrix views of ``qd.nn``: where a matrix or a bias vector lives, and in which order.

A ``MatrixView`` names a matrix (or vector) inside a buffer: the buffer (a 1-D ``qd.ndarray``
made by ``qd.nn.pack``, or the array ``qd.nn.view`` was given), the element offset, the stride
and the storage order. Kernels take views as arguments annotated ``qd.nn.MatrixView``: the
buffer is the only runtime value; dtype, shape, storage order, offset, stride and the transpose
flag are compile-time (part of the kernel's specialization), so ``nn_matvec`` sees constant
addresses.

Storage orders (``MatrixView.order``):

- ``"row_major"``: element (r, c) at ``offset + r * stride + c`` (``qd.nn.view``);
- ``"col_major"``: element (r, c) at ``offset + c * stride + r``, the columns padded to a multiple
  of 8 elements; what ``qd.nn.pack`` writes for 'inference' and 'training' on the CPU and on
  Vulkan (the per-thread loops then read consecutive outputs from consecutive addresses);
- ``"mma_fragments"``: 16 x 16 tiles in the order of the B fragments of CUDA's
  ``mma.sync.m16n8k16`` (for y = A x), rows and columns zero-padded to multiples of 16 (stride:
  the padded columns): tile (r // 16, c // 16) at ``offset + (r // 16 * stride // 16 + c // 16) *
  256``, and in it the 8 elements of lane ``r % 8 * 4 + c % 8 // 2``, element ``c % 2 + 2 * (c %
  16 // 8) + 4 * (r % 16 // 8)`` of them; what ``pack`` writes on CUDA (and on the CPU with
  ``cpu_simt=True``, which emulates the tensor cores): each lane reads its B fragments of two
  output tiles with one 16-byte load.

The user-facing ``layout`` ('inference', 'training', 'row_major') is kept apart from the order:
``pack`` picks the order for the arch, the view records it and ``unpack`` inverts it.
"""

import numpy as np

from quadrants import _types

LAYOUTS = ("inference", "training")
# Alignment of every matrix and vector that pack places: 64 bytes (what hardware
# matrix loads want), and columns padded to 8 elements.
_ALIGN_BYTES = 64
_COLUMN_PAD = 8
# key-part letter and compile-time members of a view argument (csrc/frontend/lower_nn.c)
MEMBERS = ("ndim", "rows", "cols", "order", "offset", "stride", "transpose")


def _round_up(n, k):
    return (n + k - 1) // k * k


def _dtype_name(dtype):
    return getattr(dtype, "name", str(dtype))


class MatrixView:
    """A matrix (2-D) or vector (1-D) inside a buffer; see the module docstring.

    Attributes: ``dtype`` (qd.f16 / qd.f32), ``layout`` ('inference', 'training' or
    'row_major'), ``order`` (the storage order), ``shape`` (after ``.T``), ``offset`` and
    ``stride`` (in elements), ``size`` (elements spanned in the buffer), ``buffer``,
    ``transpose``; ``.T`` is the transposed view of the same data."""

    __slots__ = ("buffer", "dtype", "layout", "order", "_shape", "offset", "stride", "transpose")

    def __init__(self, buffer, dtype, layout, order, shape, offset, stride, transpose=False):
        # Immutable: a kernel launched with a view recognises the same view object again
        # without reading its members (quadrants/_kernel.py, the launch fast path).
        init = object.__setattr__
        init(self, "buffer", buffer)
        init(self, "dtype", dtype)
        init(self, "layout", layout)
        init(self, "order", order)
        init(self, "_shape", tuple(int(s) for s in shape))
        init(self, "offset", int(offset))
        init(self, "stride", int(stride))
        init(self, "transpose", bool(transpose))

    def __setattr__(self, name, value):
        raise AttributeError(
            f"qd.nn.MatrixView is immutable: cannot set {name!r} (make a new view with "
            "qd.nn.view, or .T for the transpose)"
        )

    def __delattr__(self, name):
        raise AttributeError(f"qd.nn.MatrixView is immutable: cannot delete {name!r}")

    @property
    def shape(self):
        """(rows, cols) of the matrix it stands for (transposed with ``.T``), (n,) for a vector."""
        if len(self._shape) == 2 and self.transpose:
            return (self._shape[1], self._shape[0])
        return self._shape

    @property
    def size(self):
        """Elements of the buffer from ``offset`` to the last element of the view."""
        if len(self._shape) == 1:
            return self._shape[0]
        rows, cols = self._shape
        if self.order == "mma_fragments":
            return _round_up(rows, 16) * self.stride
        major = rows if self.order == "row_major" else cols
        minor = cols if self.order == "row_major" else rows
        return (major - 1) * self.stride + minor

    @property
    def T(self):
        """The transposed view: ``A.T @ x`` multiplies by the transpose of A."""
        if len(self._shape) != 2:
            raise TypeError("a vector view has no transpose")
        return MatrixView(self.buffer, self.dtype, self.layout, self.order, self._shape,
                          self.offset, self.stride, not self.transpose)

    def __getitem__(self, key):
        raise TypeError(
            "MatrixView elements are not indexable; use qd.nn.unpack(view) for a NumPy copy"
        )

    def __repr__(self):
        return (
            f"MatrixView[dtype={_dtype_name(self.dtype)}, layout={self.layout}, "
            f"order={self.order}, shape={self.shape}, offset={self.offset}, "
            f"stride={self.stride}, size={self.size}{', transpose' if self.transpose else ''}]"
        )

    # --- kernel arguments ---

    def _ndim(self):
        return len(self._shape)

    def _members(self):
        """The compile-time members (MEMBERS order) of the kernel argument."""
        rows = self._shape[0]
        cols = self._shape[1] if len(self._shape) == 2 else 1
        return (len(self._shape), rows, cols, self.order, self.offset, self.stride, self.transpose)


def _as_numpy(a):
    """A NumPy copy of an array-like input of pack: NumPy, qd.ndarray, torch tensor, a view."""
    if isinstance(a, MatrixView):
        return unpack(a)
    if isinstance(a, np.ndarray):
        return a
    to_numpy = getattr(a, "to_numpy", None)
    if callable(to_numpy):
        return to_numpy()
    if hasattr(a, "detach") and hasattr(a, "cpu"):  # a torch tensor
        return a.detach().cpu().numpy()
    return np.asarray(a)


def _map_leaves(tree, fn):
    """The pytree `tree` (lists, tuples, dicts of arrays) with every leaf replaced by fn(leaf)."""
    if isinstance(tree, dict):
        return {k: _map_leaves(v, fn) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(_map_leaves(v, fn) for v in tree)
    return fn(tree)


def _cook_dtype(dtype):
    dtype = _types.cook_dtype(dtype)
    if dtype not in (_types.f16, _types.f32):
        raise TypeError(f"qd.nn.pack stores f16 or f32, got {_dtype_name(dtype)}")
    return dtype


def _fragment_order():
    """Whether pack writes matrices in mma_fragments order: on CUDA, and on the CPU with
    cpu_simt (whose qd.nn products emulate the tensor cores)."""
    from quadrants import _runtime

    cfg = _runtime.current_cfg()
    if cfg is None:
        return False
    return cfg.arch is _runtime.cuda or (cfg.arch is _runtime.cpu and bool(cfg.cpu_simt))


def _mma_index(rows, cols, stride):
    """The element index (relative to the offset) of every (r, c) in mma_fragments order."""
    r = np.arange(rows)[:, None]
    c = np.arange(cols)[None, :]
    tile = (r // 16) * (stride // 16) + c // 16
    lane = (r % 8) * 4 + (c % 8) // 2
    return (tile * 32 + lane) * 8 + c % 2 + 2 * (c % 16 // 8) + 4 * (r % 16 // 8)


def pack(*arrays, layout="inference", dtype=_types.f16):
    """Copies matrices (2-D) and vectors (1-D) into one new 1-D ``qd.ndarray`` of `dtype`.

    Returns ``(buffer, *views)``: one ``MatrixView`` per input, in the structure the inputs had
    (a list or dict of arrays gives a list or dict of views). `arrays` are NumPy arrays,
    ``qd.ndarray``s, torch tensors or views. Matrices are stored column-major (columns padded to
    8 elements), or on CUDA in the tensor cores' fragment order (module docstring); every matrix
    and vector starts on a 64-byte boundary, and the padding is zero. `layout` is 'inference' or
    'training' (the same order today)."""
    from quadrants import _ndarray

    if layout not in LAYOUTS:
        raise ValueError(f"layout must be 'inference' or 'training', got {layout!r}")
    dtype = _cook_dtype(dtype)
    itemsize = dtype.np_dtype.itemsize
    align = _ALIGN_BYTES // itemsize
    placed = []  # (array, offset, stride)
    cursor = [0]
    fragments = _fragment_order()

    def place(leaf):
        a = np.asarray(_as_numpy(leaf), dtype=np.float64)
        if a.ndim not in (1, 2) or a.size == 0:
            raise ValueError(
                f"qd.nn.pack takes 2-D matrices and 1-D vectors, got shape {a.shape}"
            )
        offset = _round_up(cursor[0], align)
        if a.ndim == 2 and fragments:
            stride = _round_up(a.shape[1], 16)
            cursor[0] = offset + _round_up(a.shape[0], 16) * stride
        elif a.ndim == 2:
            stride = _round_up(a.shape[0], _COLUMN_PAD)
            cursor[0] = offset + stride * a.shape[1]
        else:
            stride = 1
            cursor[0] = offset + _round_up(a.shape[0], _COLUMN_PAD)
        placed.append((a, offset, stride))
        return len(placed) - 1

    indices = _map_leaves(list(arrays), place)
    total = max(_round_up(cursor[0], align), 1)
    host = np.zeros(total, dtype=dtype.np_dtype)
    for a, offset, stride in placed:
        if a.ndim == 2 and fragments:
            rows, cols = a.shape
            host[offset + _mma_index(rows, cols, stride)] = a
        elif a.ndim == 2:
            rows, cols = a.shape
            block = np.zeros((cols, stride), dtype=np.float64)
            block[:, :rows] = a.T
            host[offset:offset + cols * stride] = block.reshape(-1)
        else:
            host[offset:offset + a.shape[0]] = a
    buffer = _ndarray.ndarray(dtype, shape=(total,))
    buffer.from_numpy(host)

    def view_of(index):
        a, offset, stride = placed[index]
        order = ("mma_fragments" if fragments else "col_major") if a.ndim == 2 else "row_major"
        return MatrixView(buffer, dtype, layout, order, a.shape, offset, stride)

    views = _map_leaves(indices, view_of)
    return (buffer, *views)


def view(array):
    """A row-major view of `array` without copying it: a 2-D or 1-D ``qd.ndarray`` (f16/f32) or
    NumPy array (float16/float32), used in place as the view's buffer."""
    from quadrants._ndarray import Ndarray

    if isinstance(array, Ndarray):
        dtype = array.dtype
        if getattr(array, "element_shape", ()):
            raise TypeError("qd.nn.view takes an ndarray of scalars")
    elif isinstance(array, np.ndarray):
        if array.dtype not in (np.float16, np.float32):
            raise TypeError(f"qd.nn.view takes float16 or float32 arrays, got {array.dtype}")
        if not array.flags.c_contiguous:
            raise ValueError("qd.nn.view takes a C-contiguous array")
        dtype = _types.f16 if array.dtype == np.float16 else _types.f32
    else:
        raise TypeError(f"qd.nn.view takes a qd.ndarray or a NumPy array, got {type(array).__name__}")
    if dtype not in (_types.f16, _types.f32):
        raise TypeError(f"qd.nn.view takes f16 or f32 arrays, got {_dtype_name(dtype)}")
    shape = tuple(array.shape)
    if len(shape) not in (1, 2) or 0 in shape:
        raise ValueError(f"qd.nn.view takes a 2-D matrix or a 1-D vector, got shape {shape}")
    stride = shape[1] if len(shape) == 2 else 1
    return MatrixView(array, dtype, "row_major", "row_major", shape, 0, stride)


def _unpack_one(v):
    if not isinstance(v, MatrixView):
        raise TypeError(f"qd.nn.unpack takes MatrixViews, got {type(v).__name__}")
    data = v.buffer.to_numpy() if hasattr(v.buffer, "to_numpy") else np.asarray(v.buffer)
    if data.ndim == 2:  # a view of a 2-D array
        out = data.copy()
    else:
        flat = data.reshape(-1)
        if len(v._shape) == 1:
            out = flat[v.offset:v.offset + v._shape[0]].copy()
        else:
            rows, cols = v._shape
            r = np.arange(rows)[:, None]
            c = np.arange(cols)[None, :]
            if v.order == "row_major":
                index = v.offset + r * v.stride + c
            elif v.order == "mma_fragments":
                index = v.offset + _mma_index(rows, cols, v.stride)
            else:
                index = v.offset + c * v.stride + r
            out = flat[index]
    return out.T.copy() if v.transpose and out.ndim == 2 else out


def unpack(*views):
    """Row-major NumPy copies of the views (transposed views give the transpose), in the
    structure given: one view gives one array, several a tuple, lists and dicts their like."""
    result = _map_leaves(list(views), _unpack_one)
    return result[0] if len(views) == 1 else tuple(result)


# --- kernel arguments (quadrants/_kernel.py) ---

LAUNCH_VALUES = 1 + len(MEMBERS) + 1  # the buffer, the compile-time members, the marker


def is_annotation(annotation):
    return annotation is MatrixView


def launch(param, value, launch_values, callbacks, array_value):
    """Appends the launch values of view argument `value` (its buffer, then None for each
    compile-time member) and returns its key part ("m", dtype id, members...)."""
    from quadrants._annotations import NdarrayType
    from quadrants._core import QuadrantsRuntimeTypeError
    from quadrants._kernel import NDARRAY, Param

    if not isinstance(value, MatrixView):
        raise QuadrantsRuntimeTypeError(
            f"Argument {param.name} expects a qd.nn.MatrixView, got {type(value).__name__}"
        )
    ndim = getattr(value.buffer, "ndim", None) or len(value.buffer.shape)
    ndarray_type = NdarrayType(dtype=value.dtype, ndim=ndim)
    dtype, array = array_value(Param(param.name, NDARRAY, ndarray_type, None), value.buffer,
                               callbacks)
    launch_values.append(array)
    launch_values.extend(None for _ in range(LAUNCH_VALUES - 1))
    return ("m", dtype._qd_dtype, ndim) + value._members()


def descs(name, part):
    """The compile_kernel descriptors of view parameter `name` with key part `part`: the buffer
    ndarray and the compile-time members, flattened like a dataclass's."""
    from quadrants import _core

    kinds = _core.ARG_KINDS
    out = [(f"{name}.buffer", (kinds["NDARRAY"], part[1], part[2], ()))]
    for member, value in zip(MEMBERS, part[3:]):
        out.append((f"{name}.{member}", (kinds["TEMPLATE"], value)))
    out.append((f"{name}.__qd_matrix_view", (kinds["TEMPLATE"], True)))
    return out
