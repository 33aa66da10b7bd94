/* frontend/lower_matrix_linalg.c -- determinant() and inverse() of a square matrix in kernels.
 *
 * These two methods are the entry point for the per-thread linear algebra of matrices: the
 * closed forms (n <= 4) and the unrolled Gauss elimination (inverse, n <= 12) come from the
 * per-thread linalg IR templates. lower_matrix.c calls lw_matrix_linalg_method after checking
 * that `m` is a square matrix of at most 4x4 (determinant) or 12x12 (inverse); the implementation
 * receives the matrix with its items loaded (row-major runtime values or typed constants of type
 * m->ty, see lower_matrix.c) and returns a scalar (determinant) or a matrix Expr of the same shape
 * (inverse), e.g. built with lw_matrix_from_scalars.
 */
#include "lower.h"

#include <string.h>

int
lw_matrix_linalg_method(Lowerer *lw, const QdAst *node, const char *name, const Expr *m, Expr *out)
{
    (void)m;
    (void)out;
    return lw_error(lw, node, QD_ERR_COMPILATION,
                    "Matrix.%s() is not available in kernels in this build (per-thread linear "
                    "algebra of matrices is not built in)", name);
}
