"""``qd.nn``: cooperative vectors, for small matrix-vector products inside kernels (MLPs).

In a kernel or func, ``qd.nn.CoopVec(...)`` makes a per-thread vector of up to 128 f16/f32
values that supports ``+ - *``, unary ``-``, ``qd.max``/``qd.min``, ``abs``, ``qd.tanh``,
``qd.nn.exp2``/``log2``/``fma``/``step``/``cast``/``dot`` and ``qd.nn.matvec(A, x, b)`` /
``A @ x`` with a ``MatrixView`` argument. Its elements cannot be indexed: unpack it
(``a, b, *rest = v``), iterate it at compile time (``for e in qd.static(v)``) or convert it
(``qd.Vector(v)``). On the host, ``qd.nn.pack`` copies matrices and bias vectors into one buffer
and returns their views, ``qd.nn.view`` views an array in place and ``qd.nn.unpack`` reads
views back. docs/nn.md has the details; csrc/frontend/lower_nn.c lowers the kernel side.
"""

from typing import TYPE_CHECKING, Any

from quadrants import _core
from quadrants._builtins import _kernel_only
from quadrants.nn._view import MatrixView, pack, unpack, view

if TYPE_CHECKING:
    # The kernel-scope functions are defined from a table at import time (csrc/frontend/nn.def),
    # which type checkers cannot see.
    def __getattr__(name: str) -> Any: ...


def _define(namespace):
    """Defines the kernel-scope functions of qd.nn (the rows of csrc/frontend/nn.def); returns
    their names."""
    names = []
    for name, signature, doc in _core.NN_BUILTINS:
        builtin = _kernel_only(f"nn.{name}", doc, signature)
        builtin.__name__ = builtin.__qualname__ = name
        namespace[name] = builtin
        names.append(name)
    return names


__all__ = sorted(_define(globals()) + ["MatrixView", "pack", "unpack", "view"])
