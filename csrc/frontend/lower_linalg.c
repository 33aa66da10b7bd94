/* frontend/lower_linalg.c -- per-thread linear algebra in kernels (spec 1.6, and the
 * determinant() / inverse() methods of 1.3).
 *
 * Every routine is a template of the IR library (quadrants/templates/linalg_*.qir) called
 * through lower_template.c: the matrix operands go into local arrays, the template runs, and
 * its output arrays come back as the elements of new matrix values. Which template:
 *   determinant   n = 1 directly; 2..4: @linalg_det<n><T> (closed form)
 *   inverse       n = 1 directly; 2..4: @linalg_inverse<n><T> (cofactors);
 *                 5..12: @linalg_inverse_gj<T, n> (Gauss-Jordan with partial pivoting)
 *   svd           2, 3: @linalg_svd<n><T> -> (U, S, V), A = U S V^T, S diagonal
 *   polar_decompose 2, 3: @linalg_polar<n><T> -> (R, S), A = R S
 *   eig           2: @linalg_eig2<T> -> (values n x 2 [re, im], vectors 2n x n)
 *   sym_eig       1..6: @linalg_sym_eig<T, n> -> (values ascending, vectors as columns)
 *   make_spd      1..6: @linalg_make_spd<T, n>
 *   solve         2, 3: @linalg_solve<T, n> -> x with A x = b
 * The routines compute in `dt` (default: the default float type) and return matrices of it;
 * determinant keeps the matrix's element type, inverse computes integer matrices in dt. Size
 * errors are the reference's plain exceptions, reported as QuadrantsCompilationError.
 */
#include "lower.h"

#include <stdio.h>
#include <string.h>

/* The routines of the builtins.def rows flagged BI_LINALG. */
typedef enum LinalgRoutine {
    LA_SVD,
    LA_POLAR_DECOMPOSE,
    LA_EIG,
    LA_SYM_EIG,
    LA_MAKE_SPD,
    LA_SOLVE,
} LinalgRoutine;

static const QdType *
default_fp(Lowerer *lw)
{
    return qd_type_scalar(lw->opt->default_fp);
}

/* Runs template `name` on matrix `in` (as type ty) with `nout` output arrays of the given
 * sizes; outs[k] receives the values of output k. */
static int
run(Lowerer *lw, const QdAst *node, const char *name, const LwTemplateArg *targs,
    uint32_t ntargs, const Expr *const *ins, uint32_t nins, const QdType *ty,
    const uint32_t *out_sizes, uint32_t nout, Expr **outs)
{
    uint32_t args[8];
    for (uint32_t k = 0; k < nins; k++) {
        RETURN_IF_ERROR(lw_array_of(lw, node, ins[k]->items, ins[k]->nitems, ty, &args[k]));
    }
    for (uint32_t k = 0; k < nout; k++) {
        RETURN_IF_ERROR(lw_local_array(lw, ty, out_sizes[k], &args[nins + k]));
    }
    RETURN_IF_ERROR(lw_call_template(lw, name, targs, ntargs, args, nins + nout, NULL, NULL));
    for (uint32_t k = 0; k < nout; k++) {
        if (!(outs[k] = QD_NEW_ARRAY(lw->arena, Expr, out_sizes[k]))) {
            return lw_nomem(lw);
        }
        RETURN_IF_ERROR(lw_array_items(lw, args[nins + k], ty, 0, out_sizes[k], outs[k]));
    }
    return 0;
}

static int
tuple_of(Lowerer *lw, Expr *items, uint32_t n, Expr *out)
{
    memset(out, 0, sizeof(*out));
    out->kind = EX_TUPLE;
    out->nitems = n;
    if (!(out->items = QD_NEW_ARRAY(lw->arena, Expr, n))) {
        return lw_nomem(lw);
    }
    memcpy(out->items, items, n * sizeof(Expr));
    return 0;
}

static int
square_matrix(Lowerer *lw, const QdAst *node, const Expr *a, const char *what)
{
    if (a == NULL || a->kind != EX_MATRIX) {
        return lw_error(lw, node, QD_ERR_TYPE, "qd.%s takes a matrix", what);
    }
    return 0;
}

/***** Matrix.determinant() / inverse() *****/

int
lw_linalg_determinant(Lowerer *lw, const QdAst *node, const Expr *m, Expr *out)
{
    uint32_t n = m->rows;
    if (n == 1) {
        return lw_matrix_item(lw, node, &m->items[0], m->ty, out);
    }
    char name[32];
    snprintf(name, sizeof(name), "linalg_det%u", n);
    LwTemplateArg t = {.type = m->ty};
    uint32_t a, r = QD_NO_VALUE;
    RETURN_IF_ERROR(lw_array_of(lw, node, m->items, m->nitems, m->ty, &a));
    RETURN_IF_ERROR(lw_call_template(lw, name, &t, 1, &a, 1, m->ty, &r));
    memset(out, 0, sizeof(*out));
    out->kind = EX_VALUE;
    out->id = r;
    out->ty = m->ty;
    return 0;
}

int
lw_linalg_inverse(Lowerer *lw, const QdAst *node, const Expr *m, Expr *out)
{
    uint32_t n = m->rows;
    const QdType *ty = qd_type_is_float(m->ty) ? m->ty : default_fp(lw);
    if (n == 1) {
        Expr one = {0}, x;
        one.kind = EX_FLOAT;
        one.fval = 1.0;
        RETURN_IF_ERROR(lw_matrix_item(lw, node, &m->items[0], ty, &x));
        Expr inv;
        RETURN_IF_ERROR(lw_binary(lw, node, QD_BIN_DIV, &one, &x, &inv));
        return lw_matrix_from_scalars(lw, node, &inv, 1, 1, m->is_vector, ty, out);
    }
    char name[32];
    LwTemplateArg targs[2] = {{.type = ty}, {.value = n}};
    uint32_t ntargs = 2;
    if (n <= 4) {
        snprintf(name, sizeof(name), "linalg_inverse%u", n);
        ntargs = 1;
    } else {
        snprintf(name, sizeof(name), "linalg_inverse_gj");
    }
    const Expr *ins[1] = {m};
    uint32_t size = n * n;
    Expr *res = NULL;
    RETURN_IF_ERROR(run(lw, node, name, targs, ntargs, ins, 1, ty, &size, 1, &res));
    return lw_matrix_from_scalars(lw, node, res, n, n, false, ty, out);
}

/***** qd.svd, qd.polar_decompose, qd.eig, qd.sym_eig, qd.make_spd, qd.solve *****/

/* The element type a routine computes in: its `dt` argument (position dt_pos or keyword), or
 * the default float type. */
static int
routine_type(Lowerer *lw, const QdAst *node, const MatrixCall *c, uint32_t dt_pos,
             const QdType **ty)
{
    const Expr *dt = lw_matrix_arg(c, dt_pos, "dt");
    *ty = default_fp(lw);
    if (dt == NULL || dt->kind == EX_NONE) {
        return 0;
    }
    RETURN_IF_ERROR(lw_matrix_dtype_arg(lw, node, dt, ty));
    if (!qd_type_is_float(*ty)) {
        return lw_error(lw, node, QD_ERR_TYPE, "dt must be a floating-point type");
    }
    return 0;
}

static int
linalg_call(Lowerer *lw, const QdAst *node, LinalgRoutine routine, const char *name,
            const MatrixCall *c, Expr *out)
{
    const Expr *a = lw_matrix_arg(c, 0, "A");
    RETURN_IF_ERROR(square_matrix(lw, node, a, name));
    uint32_t n = a->rows;
    bool square = a->cols == n && !a->is_vector;
    const QdType *ty;
    char tname[32];
    const Expr *ins[2] = {a, NULL};
    Expr *res[3] = {NULL, NULL, NULL};
    Expr values[3];

    if (routine == LA_SVD || routine == LA_POLAR_DECOMPOSE) {
        bool svd = routine == LA_SVD;
        if (!square || n < 2 || n > 3) {
            return lw_error(lw, node, QD_ERR_COMPILATION,
                            svd ? "SVD only supports 2\u00d72 and 3\u00d73 matrices."
                                : "Polar decomposition only supports 2\u00d72 and 3\u00d73 matrices.");
        }
        RETURN_IF_ERROR(routine_type(lw, node, c, 1, &ty));
        snprintf(tname, sizeof(tname), svd ? "linalg_svd%u" : "linalg_polar%u", n);
        LwTemplateArg t = {.type = ty};
        uint32_t sizes[3] = {n * n, n * n, n * n};
        uint32_t nout = svd ? 3 : 2;
        RETURN_IF_ERROR(run(lw, node, tname, &t, 1, ins, 1, ty, sizes, nout, res));
        for (uint32_t k = 0; k < nout; k++) {
            RETURN_IF_ERROR(lw_matrix_from_scalars(lw, node, res[k], n, n, false, ty, &values[k]));
        }
        return tuple_of(lw, values, nout, out);
    }
    if (routine == LA_EIG) {
        if (!square || n != 2) {
            return lw_error(lw, node, QD_ERR_COMPILATION, "Eigen solver only supports 2\u00d72 matrices.");
        }
        RETURN_IF_ERROR(routine_type(lw, node, c, 1, &ty));
        LwTemplateArg t = {.type = ty};
        uint32_t sizes[2] = {4, 8};
        RETURN_IF_ERROR(run(lw, node, "linalg_eig2", &t, 1, ins, 1, ty, sizes, 2, res));
        RETURN_IF_ERROR(lw_matrix_from_scalars(lw, node, res[0], 2, 2, false, ty, &values[0]));
        RETURN_IF_ERROR(lw_matrix_from_scalars(lw, node, res[1], 4, 2, false, ty, &values[1]));
        return tuple_of(lw, values, 2, out);
    }
    if (routine == LA_SYM_EIG || routine == LA_MAKE_SPD) {
        bool eig = routine == LA_SYM_EIG;
        if (!square || n < 1 || n > 6) {
            return lw_error(lw, node, QD_ERR_COMPILATION,
                            "Symmetric eigen solver currently supports sizes up to 6\u00d76.");
        }
        RETURN_IF_ERROR(routine_type(lw, node, c, 1, &ty));
        LwTemplateArg targs[2] = {{.type = ty}, {.value = n}};
        if (eig) {
            uint32_t sizes[2] = {n, n * n};
            RETURN_IF_ERROR(
                run(lw, node, "linalg_sym_eig", targs, 2, ins, 1, ty, sizes, 2, res));
            RETURN_IF_ERROR(lw_matrix_from_scalars(lw, node, res[0], n, 1, true, ty, &values[0]));
            RETURN_IF_ERROR(lw_matrix_from_scalars(lw, node, res[1], n, n, false, ty, &values[1]));
            return tuple_of(lw, values, 2, out);
        }
        uint32_t size = n * n;
        RETURN_IF_ERROR(run(lw, node, "linalg_make_spd", targs, 2, ins, 1, ty, &size, 1, res));
        return lw_matrix_from_scalars(lw, node, res[0], n, n, false, ty, out);
    }
    /* solve(A, b) */
    const Expr *b = lw_matrix_arg(c, 1, "b");
    if (!square || n < 2 || n > 3) {
        return lw_error(lw, node, QD_ERR_COMPILATION, "Solver only supports 2\u00d72 and 3\u00d73 matrices.");
    }
    if (b == NULL || b->kind != EX_MATRIX || !b->is_vector || b->rows != n) {
        return lw_error(lw, node, QD_ERR_COMPILATION,
                        "qd.solve(A, b): b must be a vector of %u elements (A.m == b.n)", n);
    }
    RETURN_IF_ERROR(routine_type(lw, node, c, 2, &ty));
    LwTemplateArg targs[2] = {{.type = ty}, {.value = n}};
    ins[1] = b;
    RETURN_IF_ERROR(run(lw, node, "linalg_solve", targs, 2, ins, 2, ty, &n, 1, res));
    return lw_matrix_from_scalars(lw, node, res[0], n, 1, true, ty, out);
}

/* The lowerings of the BI_LINALG rows of builtins.def: the matrix arguments arrive whole
 * (lw_matrix_call leaves these calls to the table). */
#define LINALG_LOWERING(fn, routine, name)                                                         \
    int fn(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)                                     \
    {                                                                                              \
        (void)op;                                                                                  \
        MatrixCall mc = {c->pos, c->npos, c->kw, c->kwv, c->nkw};                                  \
        return linalg_call(lw, c->node, routine, name, &mc, out);                                  \
    }
LINALG_LOWERING(lw_builtin_svd, LA_SVD, "svd")
LINALG_LOWERING(lw_builtin_polar_decompose, LA_POLAR_DECOMPOSE, "polar_decompose")
LINALG_LOWERING(lw_builtin_eig, LA_EIG, "eig")
LINALG_LOWERING(lw_builtin_sym_eig, LA_SYM_EIG, "sym_eig")
LINALG_LOWERING(lw_builtin_make_spd, LA_MAKE_SPD, "make_spd")
LINALG_LOWERING(lw_builtin_solve, LA_SOLVE, "solve")
#undef LINALG_LOWERING
