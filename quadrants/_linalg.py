"""Per-thread linear algebra of small matrices in kernels (spec 1.6): ``qd.svd``,
``qd.polar_decompose``, ``qd.eig``, ``qd.sym_eig``, ``qd.make_spd``, ``qd.solve``.

The C core compiles each call into the IR template of the routine (quadrants/templates): the
matrix stays in registers and the routine is unrolled for its size. The functions are for
kernels and ``@qd.func``s; called in Python scope they raise QuadrantsSyntaxError.
"""

from quadrants import _core
from quadrants._builtins import _kernel_only

svd = _kernel_only(
    "svd",
    "svd(A, dt=None) -> (U, S, V): A = U @ S @ V.transpose(), S diagonal with the singular "
    "values in descending order; 2x2 and 3x3 matrices. For 3x3, det(U) = det(V) = +1 and the "
    "sign of det(A) goes into the last singular value.",
)
polar_decompose = _kernel_only(
    "polar_decompose",
    "polar_decompose(A, dt=None) -> (R, S): A = R @ S with R orthogonal and S symmetric; 2x2 "
    "and 3x3 matrices.",
)
eig = _kernel_only(
    "eig",
    "eig(A, dt=None) -> (values, vectors) of a real 2x2 matrix: values a 2x2 matrix of rows "
    "[real, imaginary], vectors a 4x2 matrix whose column k holds eigenvector k as "
    "(re0, im0, re1, im1).",
)
sym_eig = _kernel_only(
    "sym_eig",
    "sym_eig(A, dt=None) -> (values, vectors) of a symmetric n x n matrix, n <= 6: values in "
    "ascending order, vectors as the columns of a matrix (Jacobi rotations).",
)
make_spd = _kernel_only(
    "make_spd",
    "make_spd(A, dt=None): the nearest symmetric positive semi-definite matrix, Q "
    "diag(max(lambda, 0)) Q^T from the eigen decomposition of A (symmetric, n <= 6).",
)
solve = _kernel_only(
    "solve",
    "solve(A, b, dt=None) -> x with A @ x = b, by Gaussian elimination with partial pivoting; "
    "2x2 and 3x3 matrices.",
)

# The rows of csrc/frontend/builtins.def flagged exported and linalg, in the table's order.
__all__ = [name for name, flags in _core.BUILTINS if "exported" in flags and "linalg" in flags]
