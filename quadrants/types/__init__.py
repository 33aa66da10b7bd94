"""``qd.types``: annotation types for kernel and function parameters.

- ``ndarray`` / ``NDArray`` (the same class): ``qd.types.ndarray(dtype=None, ndim=None,
  needs_grad=None, boundary="unsafe")`` or ``qd.types.NDArray[dtype, ndim]``;
- ``template``: the same class as ``qd.template`` / ``qd.Template``;
- the primitive types (``qd.types.f32`` is ``qd.f32``);
- ``struct(**members)``: a struct type (quadrants/_struct.py);
- ``vector(n, dtype)`` and ``matrix(n, m, dtype)``: vector/matrix types (quadrants/_matrix.py);
- ``quant``: not supported yet (NotImplementedError);
- ``primitive_types``: the primitive types and the reference's sets of them (``real_types``...);
- ``ref(T)``: annotation of a func parameter passed by reference (primitive_types.py);
- ``is_integral``, ``is_signed``, ``is_real``, ``is_tensor``: questions about a primitive type
  (quadrants/types/utils.py).
"""

from typing import TYPE_CHECKING

from quadrants._annotations import (
    NdarrayType,
    Template,
    matrix,
    quant,
    template,
    vector,
)

from quadrants._annotations import ndarray

if TYPE_CHECKING:
    # For type checkers ``x: qd.types.NDArray[qd.f32, 1]`` declares x an ndarray (qd.Ndarray),
    # which is what the parameter holds in a kernel and in a dataclass member: pyright ignores
    # the subscript of a class with __class_getitem__, mypy needs quadrants.mypy_plugin for it
    # (docs/typing.md). ``qd.types.ndarray(dtype=..., ndim=...)`` stays the annotation class
    # (the same class as NDArray at run time), so the call type-checks where it is a value.
    from quadrants._ndarray import Ndarray as NDArray
else:
    from quadrants._annotations import NDArray
from quadrants._struct import StructType, struct
from quadrants.types import primitive_types, utils
from quadrants.types.primitive_types import RefType, ref
from quadrants.types.utils import is_integral, is_real, is_signed, is_tensor
from quadrants._types import (
    DataType,
    f16,
    f32,
    f64,
    float16,
    float32,
    float64,
    i8,
    i16,
    i32,
    i64,
    int8,
    int16,
    int32,
    int64,
    u1,
    u8,
    u16,
    u32,
    u64,
    uint1,
    uint8,
    uint16,
    uint32,
    uint64,
)

__all__ = [
    "primitive_types",
    "utils",
    "ref",
    "RefType",
    "is_integral",
    "is_signed",
    "is_real",
    "is_tensor",
    "NdarrayType",
    "NDArray",
    "ndarray",
    "Template",
    "template",
    "vector",
    "matrix",
    "struct",
    "StructType",
    "quant",
    "DataType",
    "u1",
    "i8",
    "i16",
    "i32",
    "i64",
    "u8",
    "u16",
    "u32",
    "u64",
    "f16",
    "f32",
    "f64",
    "uint1",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
]
