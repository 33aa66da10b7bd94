"""``qd.types.primitive_types``: the primitive types, and the sets of them the reference names.

Programs written against the reference test membership in these sets
(``dtype in qd.types.primitive_types.real_types``), so the sets hold the same members: the
Quadrants types and the Python type that stands for them in annotations (``float`` among the
real types; ``int`` and ``bool`` among the integer types). The ``*_ids`` sets hold ``id()`` of
each member. The types themselves are those of quadrants/_types.py: ``qd.types.primitive_types.f32
is qd.f32``.

``ref(T)`` (also ``qd.ref`` and ``qd.types.ref``) annotates a ``@qd.func`` / ``@qd.real_func``
parameter passed by reference: the argument must be a variable of type T (a local, or an element
of a field or ndarray), and assignments to the parameter in the function change it. Kernels do not
take such parameters.
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



class RefType:
    """The annotation ``qd.ref(T)``: a parameter of type T passed by reference (``tp`` is T)."""

    _qd_ref_annotation = True  # evaluated in kernels as a compile-time object

    def __init__(self, tp):
        self.tp = tp

    @property
    def _qd_ref_tp(self):
        return self.tp

    def __repr__(self):
        return f"qd.ref({self.tp!r})"


def ref(tp):
    """``qd.ref(T)``: annotation of a func parameter passed by reference."""
    return RefType(tp)


ref._qd_ref_annotation = True

real_types = {f16, f32, f64, float}
real_type_ids = {id(t) for t in real_types}

integer_types = {i8, i16, i32, i64, u1, u8, u16, u32, u64, int, bool}
integer_type_ids = {id(t) for t in integer_types}

all_types = real_types | integer_types
type_ids = {id(t) for t in all_types}

__all__ = [
    "RefType",
    "ref",
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
