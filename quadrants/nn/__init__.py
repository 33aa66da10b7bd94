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

from quadrants._builtins import _kernel_only
from quadrants.nn._view import MatrixView, pack, unpack, view

__all__ = [
    "CoopVec",
    "MatrixView",
    "cast",
    "dot",
    "exp2",
    "fma",
    "log2",
    "matvec",
    "pack",
    "step",
    "unpack",
    "view",
]


def _nn_builtin(name, doc, signature="*args, **kwargs"):
    builtin = _kernel_only(f"nn.{name}", doc, signature)
    builtin.__name__ = builtin.__qualname__ = name
    return builtin


CoopVec = _nn_builtin(
    "CoopVec",
    "CoopVec(*values, dtype=None): a cooperative vector of the scalars, vectors, matrices and "
    "tuples given, flattened in order (at most 128 elements). The element dtype is `dtype`, or "
    "the dtype of the first typed value (f32 for Python numbers alone); it must be f16 or f32.",
)
matvec = _nn_builtin(
    "matvec",
    "matvec(A, x, b=None, transpose=False): A @ x + b (A.T @ x + b with transpose=True) for a "
    "MatrixView A, a CoopVec x and an optional vector view b. Products accumulate in f32 and the "
    "result, a CoopVec of x's dtype, is rounded once.",
    "A, x, b=None, transpose=False",
)
exp2 = _nn_builtin("exp2", "exp2(v): 2 ** v, element by element (computed in f32).", "v")
log2 = _nn_builtin("log2", "log2(v): base-2 logarithm, element by element (computed in f32).", "v")
fma = _nn_builtin(
    "fma", "fma(a, b, c): a * b + c, element by element, computed in f32 and rounded once.",
    "a, b, c",
)
step = _nn_builtin(
    "step",
    "step(x, edge): 0 where x < edge, else 1, element by element. The argument order is "
    "Dr.Jit's (x first), the reverse of GLSL's step(edge, x).",
    "x, edge",
)
cast = _nn_builtin("cast", "cast(v, dtype): the CoopVec converted to dtype (f16 or f32).", "v, dtype")
dot = _nn_builtin(
    "dot", "dot(a, b): the sum of a[i] * b[i], accumulated in f32, as a scalar of a's dtype.",
    "a, b",
)
