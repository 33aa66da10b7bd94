"""``qd.types.primitive_types``: the primitive types, and the sets of them the reference names.

Programs written against the reference test membership in these sets
(``dtype in qd.types.primitive_types.real_types``), so the sets hold the same members: the
Quadrants types and the Python type that stands for them in annotations (``float`` among the
real types; ``int`` and ``bool`` among the integer types). The ``*_ids`` sets hold ``id()`` of
each member. The types themselves are those of quadrants/_types.py: ``qd.types.primitive_types.f32
is qd.f32``.
"""

from quadrants._types import (
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

real_types = {f16, f32, f64, float}
real_type_ids = {id(t) for t in real_types}

integer_types = {i8, i16, i32, i64, u1, u8, u16, u32, u64, int, bool}
integer_type_ids = {id(t) for t in integer_types}

all_types = real_types | integer_types
type_ids = {id(t) for t in all_types}

__all__ = [
    "real_types",
    "real_type_ids",
    "integer_types",
    "integer_type_ids",
    "all_types",
    "type_ids",
    "f16", "f32", "f64", "float16", "float32", "float64",
    "i8", "i16", "i32", "i64", "int8", "int16", "int32", "int64",
    "u1", "u8", "u16", "u32", "u64", "uint1", "uint8", "uint16", "uint32", "uint64",
]
