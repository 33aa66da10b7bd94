"""``qd.types.is_integral``, ``is_signed``, ``is_real``, ``is_tensor``: questions about a data type.

They take a Quadrants primitive type (``qd.i32``, ``qd.f64``, ...); anything else (Python's
``int``/``float``, a vector or struct type, ``None``, ...) raises TypeError, as in the reference.
``is_signed`` of a real type raises RuntimeError (it is a question about integer types only).
``is_tensor`` is False for every primitive type. They are plain Python functions, usable in
``qd.static(...)`` inside kernels (``qd.static(qd.types.is_real(x.dtype))``).
"""

from quadrants._types import DataType


def _check(function, dt):
    if not isinstance(dt, DataType):
        raise TypeError(
            f"{function}() expects a Quadrants data type such as qd.i32 or qd.f32, "
            f"got {type(dt).__name__} ({dt!r})"
        )


def is_integral(dt):
    """Whether `dt` is an integer type (u1 included)."""
    _check("is_integral", dt)
    return not dt.is_real


def is_signed(dt):
    """Whether integer type `dt` is signed. A real type raises RuntimeError."""
    _check("is_signed", dt)
    if dt.is_real:
        raise RuntimeError(f"is_signed() is only defined for integer types, got {dt}")
    return dt.is_signed


def is_real(dt):
    """Whether `dt` is a floating-point type."""
    _check("is_real", dt)
    return dt.is_real


def is_tensor(dt):
    """Whether `dt` is a tensor (vector/matrix element) type: never for a primitive type."""
    _check("is_tensor", dt)
    return False


__all__ = ["is_integral", "is_signed", "is_real", "is_tensor"]
