"""Kernel-side hints: ``qd.assume_in_range``, ``qd.block_local``, ``qd.cache_read_only`` and the
index helper ``qd.rescale_index``.

The hints change no result. ``assume_in_range(val, base, low, high)`` is ``val`` (the program
promises ``base + low <= val < base + high``); ``block_local(*fields)`` and
``cache_read_only(*fields)`` name fields worth caching. They are compiled by the core (their
``_qd_builtin`` names, csrc/frontend/builtins.def), which checks their arguments as the reference
does; no backend of this package uses them for code generation yet.

``rescale_index(a, b, I)`` maps index ``I`` of field/SNode ``a`` onto the index space of ``b``:
on each axis that ``I``, ``a`` and ``b`` all have, ``I[k] // (a.shape[k] // b.shape[k])`` where
``a`` is the larger, ``I[k] * (b.shape[k] // a.shape[k])`` where it is the smaller. It works in
kernels and in Python scope (a ``qd.Vector`` there).
"""

from typing import Any as _Any

from quadrants import _core
from quadrants._core import QuadrantsRuntimeError as _QuadrantsRuntimeError
from quadrants._core import QuadrantsSyntaxError as _QuadrantsSyntaxError


def _mark(name):
    def mark(function):
        function._qd_builtin = name
        return function

    return mark


@_mark("assume_in_range")
def assume_in_range(val, base, low, high) -> _Any:
    """``val``, with the promise that ``base + low <= val < base + high`` (kernel scope only)."""
    raise _QuadrantsSyntaxError(
        "qd.assume_in_range() can only be called inside Quadrants kernels and functions"
    )


@_mark("block_local")
def block_local(*args) -> _Any:
    """Hint: the fields in `args` are worth caching in block-local memory (kernel scope only)."""
    raise _QuadrantsRuntimeError(
        "qd.block_local() can only be called inside Quadrants kernels and functions"
    )


@_mark("cache_read_only")
def cache_read_only(*args) -> _Any:
    """Hint: the fields in `args` are only read by the kernel (kernel scope only)."""
    raise _QuadrantsRuntimeError(
        "qd.cache_read_only() can only be called inside Quadrants kernels and functions"
    )


def _shape_of(x, which):
    from quadrants._field import Field, SNode

    if not isinstance(x, (Field, SNode)):
        raise AssertionError(f"The {which} argument must be a field or an SNode")
    return tuple(x.shape)


@_mark("rescale_index")
def rescale_index(a, b, I) -> _Any:  # noqa: E741 (the reference's name)
    """Index `I` of field/SNode `a` mapped onto field/SNode `b` (see the module docstring)."""
    from quadrants._matrix import Matrix, Vector

    shape_a = _shape_of(a, "first")
    shape_b = _shape_of(b, "second")
    if isinstance(I, Matrix) and I.ndim == 1:
        entries = I.entries.tolist()
    elif isinstance(I, list):
        entries = list(I)
    else:
        raise AssertionError(
            "The third argument must be an index (list, qd.Vector, or Expr with TensorType)"
        )
    for k in range(min(len(entries), len(shape_a), len(shape_b))):
        if shape_a[k] > shape_b[k]:
            entries[k] = entries[k] // (shape_a[k] // shape_b[k])
        elif shape_a[k] < shape_b[k]:
            entries[k] = entries[k] * (shape_b[k] // shape_a[k])
    return Vector(entries)


# The rows of csrc/frontend/builtins.def flagged exported and hint, in the table's order.
__all__ = [name for name, flags in _core.BUILTINS if "exported" in flags and "hint" in flags]
