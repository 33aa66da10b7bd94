/* frontend/lower_nn_matvec.c -- qd.nn matrix views and the matrix-vector product.
 *
 * A matrix view argument (quadrants/nn/_view.py) arrives as a dict of members: `buffer` (the
 * ndarray), the compile-time `ndim` (2: a matrix, 1: a vector), `rows`, `cols`, `order`
 * ("row_major" / "col_major": how the elements are stored), `offset`, `stride`, `transpose`, and
 * the marker `__qd_matrix_view`. `A.T` is the same dict with `transpose` flipped.
 *
 * A product stores the input CoopVec into a local array, emits one nn_matvec (ops.def) with the
 * view's facts as its immediate and reads the result back into a new CoopVec;
 * passes/nn_lower.c turns the instruction into loops. Where the options say the target has
 * tensor cores, a product of an f16 vector by an f16 matrix is marked `tensor_cores`.
 */
#include "lower.h"

#include <string.h>

#define MATRIX_VIEW_MARKER "__qd_matrix_view"

/* Member `name` of dict e, or NULL. */
static const Expr *
member(const Expr *e, const char *name)
{
    for (uint32_t i = 0; i < e->nitems; i++) {
        if (e->keys[i].kind == EX_STR && strcmp(e->keys[i].str, name) == 0) {
            return &e->items[i];
        }
    }
    return NULL;
}

bool
lw_is_matrix_view(const Expr *e)
{
    return e->kind == EX_DICT && member(e, MATRIX_VIEW_MARKER) != NULL;
}

/***** matrix-vector products *****/

/* The facts of a matrix view dict. */
typedef struct View {
    const Expr *buffer; /* EX_NDARRAY */
    int64_t ndim, rows, cols, offset, stride;
    QdMatLayout order;
    bool transpose;
} View;

static int
int_member(Lowerer *lw, const QdAst *node, const Expr *d, const char *name, int64_t *out)
{
    const Expr *m = member(d, name);
    if (!m || (m->kind != EX_INT && m->kind != EX_BOOL)) {
        return lw_error(lw, node, QD_ERR_INTERNAL, "malformed qd.nn.MatrixView argument (%s)", name);
    }
    *out = m->ival;
    return 0;
}

static int
read_view(Lowerer *lw, const QdAst *node, const Expr *d, const char *what, View *v)
{
    if (!lw_is_matrix_view(d)) {
        return lw_error(lw, node, QD_ERR_TYPE,
                        "%s must be a qd.nn.MatrixView (a kernel argument made by qd.nn.pack or "
                        "qd.nn.view)", what);
    }
    int64_t t = 0;
    const Expr *order = member(d, "order");
    v->buffer = member(d, "buffer");
    if (!v->buffer || v->buffer->kind != EX_NDARRAY || !order || order->kind != EX_STR) {
        return lw_error(lw, node, QD_ERR_INTERNAL, "malformed qd.nn.MatrixView argument");
    }
    RETURN_IF_ERROR(int_member(lw, node, d, "ndim", &v->ndim));
    RETURN_IF_ERROR(int_member(lw, node, d, "rows", &v->rows));
    RETURN_IF_ERROR(int_member(lw, node, d, "cols", &v->cols));
    RETURN_IF_ERROR(int_member(lw, node, d, "offset", &v->offset));
    RETURN_IF_ERROR(int_member(lw, node, d, "stride", &v->stride));
    RETURN_IF_ERROR(int_member(lw, node, d, "transpose", &t));
    v->transpose = t != 0;
    v->order = strcmp(order->str, "row_major") == 0       ? QD_MAT_ROW_MAJOR
               : strcmp(order->str, "mma_fragments") == 0 ? QD_MAT_MMA
                                                          : QD_MAT_COL_MAJOR;
    if (!qd_type_is_float(v->buffer->ty)) {
        return lw_error(lw, node, QD_ERR_TYPE, "%s holds %s elements; matvec needs f16 or f32", what,
                        lw_type_name(v->buffer->ty));
    }
    return 0;
}

/* y = op(A) x (+ b): one nn_matvec between local arrays. */
int
lw_nn_matvec(Lowerer *lw, const QdAst *node, const Expr *a, const Expr *x, const Expr *b, bool transpose,
       Expr *out)
{
    View A, B = {0};
    RETURN_IF_ERROR(read_view(lw, node, a, "the matrix", &A));
    if (A.ndim != 2) {
        return lw_error(lw, node, QD_ERR_TYPE,
                        "the matrix of a matvec must be 2-D, got a vector view of %lld elements",
                        (long long)A.rows);
    }
    if (!lw_is_coopvec(x)) {
        return lw_error(lw, node, QD_ERR_TYPE, "the vector of a matvec must be a qd.nn.CoopVec");
    }
    QdMatvec mv = {0};
    mv.rows = (uint32_t)A.rows;
    mv.cols = (uint32_t)A.cols;
    mv.layout = A.order;
    mv.transpose = A.transpose != transpose;
    mv.offset = A.offset;
    mv.stride = A.stride;
    uint32_t in = qd_matvec_in_len(&mv), n_out = qd_matvec_out_len(&mv);
    if (x->nitems != in) {
        return lw_error(lw, node, QD_ERR_TYPE,
                        "Attempted to multiply a %ux%u matrix by a vector with %u elements",
                        mv.transpose ? mv.cols : mv.rows, in, x->nitems);
    }
    if (b) {
        RETURN_IF_ERROR(read_view(lw, node, b, "the bias", &B));
        if (B.ndim != 1 || B.rows != n_out) {
            return lw_error(lw, node, QD_ERR_TYPE,
                            "the bias must be a vector view of %u elements (the matvec's output), "
                            "got shape %s", n_out,
                            B.ndim == 1 ? qd_arena_printf(lw->arena, "(%lld,)", (long long)B.rows)
                                        : qd_arena_printf(lw->arena, "(%lld, %lld)",
                                                           (long long)B.rows, (long long)B.cols));
        }
        if (B.buffer->ndim != 1) {
            return lw_error(lw, node, QD_ERR_TYPE, "the bias must live in a 1-D buffer");
        }
        mv.has_bias = true;
        mv.bias_offset = B.offset;
    }
    mv.tensor_cores = lw->opt->tensor_cores && x->ty->kind == QD_TY_F16 &&
                      A.buffer->ty->kind == QD_TY_F16;
    uint32_t xs, ys;
    RETURN_IF_ERROR(lw_local_array(lw, x->ty, in, &xs));
    RETURN_IF_ERROR(lw_local_array(lw, x->ty, n_out, &ys));
    const QdType *pty = qd_type_ptr(lw->m, x->ty, QD_SPACE_LOCAL);
    if (!pty) {
        return lw_nomem(lw);
    }
    const QdType *i32 = qd_type_scalar(QD_TY_I32);
    for (uint32_t i = 0; i < in; i++) {
        Expr item;
        RETURN_IF_ERROR(lw_convert(lw, node, &x->items[i], x->ty, &item));
        uint32_t v = item.id;
        uint32_t p = lw_emit_value(lw, QD_OP_ARRAY_PTR, pty, xs, lw_const_int(lw, i32, i));
        QdInst *st = lw_emit(lw, QD_OP_STORE, 2);
        if (!st || p == QD_NO_VALUE) {
            return -1;
        }
        st->args[0] = p;
        st->args[1] = v;
    }
    QdInst *inst = lw_emit(lw, QD_OP_NN_MATVEC, b ? 4 : 3);
    if (!inst) {
        return -1;
    }
    inst->args[0] = ys;
    inst->args[1] = xs;
    inst->args[2] = A.buffer->id;
    if (b) {
        inst->args[3] = B.buffer->id;
    }
    inst->imm.matvec = mv;
    RETURN_IF_ERROR(lw_coopvec_new(lw, n_out, x->ty, out));
    for (uint32_t i = 0; i < n_out; i++) {
        uint32_t p = lw_emit_value(lw, QD_OP_ARRAY_PTR, pty, ys, lw_const_int(lw, i32, i));
        uint32_t v = p == QD_NO_VALUE ? p : lw_emit_value(lw, QD_OP_LOAD, x->ty, p, 0);
        if (v == QD_NO_VALUE) {
            return -1;
        }
        out->items[i] = lw_value(v, x->ty);
    }
    return 0;
}

/* `A.T`, `A.shape`, and the plain members of a matrix view. */
int
lw_matrix_view_attribute(Lowerer *lw, const QdAst *node, const Expr *base, const char *attr,
                         Expr *out)
{
    if (strcmp(attr, "T") == 0) {
        View v;
        RETURN_IF_ERROR(read_view(lw, node, base, "A", &v));
        Expr copy = *base;
        copy.items = QD_NEW_ARRAY(lw->arena, Expr, base->nitems);
        if (!copy.items) {
            return lw_nomem(lw);
        }
        memcpy(copy.items, base->items, sizeof(Expr) * base->nitems);
        for (uint32_t i = 0; i < copy.nitems; i++) {
            if (copy.keys[i].kind == EX_STR && strcmp(copy.keys[i].str, "transpose") == 0) {
                memset(&copy.items[i], 0, sizeof(Expr));
                copy.items[i].kind = EX_BOOL;
                copy.items[i].ival = !v.transpose;
            }
        }
        *out = copy;
        return 0;
    }
    if (strcmp(attr, "shape") == 0) {
        View v;
        RETURN_IF_ERROR(read_view(lw, node, base, "A", &v));
        int64_t dims[2] = {v.transpose ? v.cols : v.rows, v.transpose ? v.rows : v.cols};
        memset(out, 0, sizeof(*out));
        out->kind = EX_TUPLE;
        out->nitems = (uint32_t)v.ndim;
        out->items = QD_NEW_ARRAY(lw->arena, Expr, 2);
        if (!out->items) {
            return lw_nomem(lw);
        }
        for (uint32_t i = 0; i < out->nitems; i++) {
            out->items[i].kind = EX_INT;
            out->items[i].ival = v.ndim == 1 ? v.rows : dims[i];
        }
        return 0;
    }
    const Expr *m = member(base, attr);
    if (!m || strncmp(attr, "__", 2) == 0) {
        return lw_error(lw, node, QD_ERR_SYNTAX, "qd.nn.MatrixView has no attribute '%s' in kernels",
                        attr);
    }
    *out = *m;
    return 0;
}

