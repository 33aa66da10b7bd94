/* frontend/lower_matrix_linalg.c -- determinant() and inverse() of a square matrix in kernels.
 *
 * These two methods are the entry point for the per-thread linear algebra of matrices: the
 * closed forms (n <= 4) and the unrolled Gauss elimination (inverse, n <= 12) come from the
 * per-thread linalg IR templates. lower_matrix.c calls lw_matrix_linalg_method after checking
 * that `m` is a square matrix of at most 4x4 (determinant) or 12x12 (inverse); the implementation
 * receives the matrix with its items loaded (row-major runtime values or typed constants of type
 * m->ty, see lower_matrix.c) and returns a scalar (determinant) or a matrix Expr of the same shape
 * (inverse); lower_linalg.c computes both with the IR templates.
 */
#include "lower.h"

#include <string.h>

int
lw_matrix_linalg_method(Lowerer *lw, const QdAst *node, const char *name, const Expr *m, Expr *out)
{
    if (strcmp(name, "determinant") == 0) {
        return lw_linalg_determinant(lw, node, m, out);
    }
    return lw_linalg_inverse(lw, node, m, out);
}
