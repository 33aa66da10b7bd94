/* frontend/lower_field.c -- fields, ndarrays and ndarray shapes as values in kernels.
 *
 * A scalar field (EX_FIELD) and an ndarray parameter (EX_NDARRAY) are indexed into lvalues of
 * global memory (lw_subscript_indices, lower_subscript.c), iterated by a struct-for over their shape,
 * and have a `shape` (a compile-time tuple for a field, an EX_SHAPE read at run time for an
 * ndarray). An ndarray of vectors/matrices is indexed element-wise by lower_matrix_field.c. The
 * slice syntax of register tiles (`a[r0:r1, c0:c1]`, `a[...] = t`) is lower_tile_slice.c's.
 * Here are their ExprOps.
 */
#include "lower.h"

#include <string.h>

/* `f[i, j]`, `a[i, j]`: an lvalue (for an ndarray of vectors/matrices, a matrix of lvalues). */
static int
indexed_subscript(Lowerer *lw, const QdAst *node, const Expr *base, const QdAst *index, Expr *out)
{
    int rc = lw_tile_subscript(lw, node, base, index, out); /* a[r0:r1, c0:c1] */
    if (rc != LW_DECLINED) {
        return rc;
    }
    Expr idx[16];
    uint32_t n = 0;
    RETURN_IF_ERROR(lw_collect_indices(lw, index, idx, &n));
    return lw_subscript_indices(lw, node, index, base, idx, n, out);
}

/* Struct-for: one index per dimension over the shape; canonical indices, a permuted ndarray is
 * walked in its physical order. */
static int
indexed_iterate(Lowerer *lw, const QdAst *node, const Expr *e, IterSpec *it)
{
    (void)node;
    it->kind = IT_NDRANGE;
    it->ndim = e->kind == EX_FIELD ? e->view->ndim : e->ndim;
    for (uint32_t d = 0; d < it->ndim; d++) {
        it->axes[d] = e->kind == EX_NDARRAY && e->layout ? e->layout[d] : d;
        it->begin[d].kind = EX_INT;
        if (e->kind == EX_FIELD) {
            it->begin[d].ival = e->view->offset[d];
            it->end[d].kind = EX_INT;
            it->end[d].ival = e->view->offset[d] + e->view->shape[d];
        } else {
            uint32_t extent = lw_ndarray_extent(lw, e, d);
            if (extent == QD_NO_VALUE) {
                return -1;
            }
            memset(&it->end[d], 0, sizeof(it->end[d]));
            it->end[d].kind = EX_VALUE;
            it->end[d].id = extent;
            it->end[d].ty = qd_type_scalar(QD_TY_I32);
        }
    }
    return 0;
}

/***** fields *****/

/* `f.shape`: a compile-time tuple; any other attribute is the Python object's. */
static int
field_attribute(Lowerer *lw, const QdAst *node, const Expr *base, Expr *out)
{
    if (strcmp(node->name, "shape") != 0) {
        return LW_DECLINED;
    }
    const FieldView *view = base->view;
    memset(out, 0, sizeof(*out));
    out->kind = EX_TUPLE;
    out->nitems = view->ndim;
    out->items = QD_NEW_ARRAY(lw->arena, Expr, view->ndim ? view->ndim : 1);
    if (!out->items) {
        return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
    }
    for (uint32_t i = 0; i < view->ndim; i++) {
        out->items[i].kind = EX_INT;
        out->items[i].ival = view->shape[i];
    }
    return 0;
}

const ExprOps lw_field_ops = {
    .name = "field",
    .attribute = field_attribute,
    .subscript = indexed_subscript,
    .store_subscript = lw_tile_store_subscript,
    .iterate = indexed_iterate,
};

/***** ndarrays *****/

static int
ndarray_attribute(Lowerer *lw, const QdAst *node, const Expr *base, Expr *out)
{
    const char *attr = node->name;
    if (strcmp(attr, "shape") == 0) {
        memset(out, 0, sizeof(*out));
        out->kind = EX_SHAPE;
        out->id = base->id;
        out->ndim = base->ndim;
        out->layout = base->layout;
        return 0;
    }
    if (strcmp(attr, "grad") == 0) {
        if (!base->grad) {
            return lw_error(lw, node, QD_ERR_SYNTAX,
                            "this ndarray has no gradient: create it with needs_grad=True");
        }
        *out = *base->grad;
        return 0;
    }
    return lw_error(lw, node, QD_ERR_SYNTAX,
                    "ndarray attribute '%s' is not available in kernels (only .shape, .grad)", attr);
}

static int
ndarray_subscript(Lowerer *lw, const QdAst *node, const Expr *base, const QdAst *index, Expr *out)
{
    if (base->rows) { /* an ndarray of vectors/matrices */
        return lw_matrix_field_subscript(lw, node, base, index, out);
    }
    return indexed_subscript(lw, node, base, index, out);
}

const ExprOps lw_ndarray_ops = {
    .name = "ndarray",
    .attribute = ndarray_attribute,
    .subscript = ndarray_subscript,
    .store_subscript = lw_tile_store_subscript,
    .iterate = indexed_iterate,
};

/***** ndarray shapes *****/

static int
shape_subscript(Lowerer *lw, const QdAst *node, const Expr *base, const QdAst *index, Expr *out)
{
    if (index->kind == QD_AST_SLICE) {
        /* arr.shape[:-1]: a shorter tuple, as Python slices the reference's list. */
        Expr seq;
        RETURN_IF_ERROR(lw_shape_tuple(lw, base, &seq));
        return lw_slice_items(lw, node, index, seq.items, seq.nitems, out);
    }
    Expr idx[16];
    uint32_t n = 0;
    RETURN_IF_ERROR(lw_collect_indices(lw, index, idx, &n));
    /* A negative index counts from the end, as on the tuple the reference makes. */
    int64_t d = n == 1 && idx[0].kind == EX_INT ? idx[0].ival : INT64_MIN;
    if (d < 0 && d != INT64_MIN) {
        d += base->ndim;
    }
    if (d == INT64_MIN) {
        return lw_error(lw, node, QD_ERR_SYNTAX,
                        "a shape index must be a compile-time integer");
    }
    if (d < 0 || d >= (int64_t)base->ndim) {
        return lw_error(lw, node, QD_ERR_COMPILATION,
                        "IndexError: shape index out of range (the ndarray has %u axes)",
                        base->ndim);
    }
    return lw_shape_axis(lw, base, (uint32_t)d, out);
}

/* `n, m = arr.shape`: the extents. */
static int
shape_unpack(Lowerer *lw, const QdAst *target, const Expr *value, Expr *out)
{
    (void)target;
    return lw_shape_tuple(lw, value, out);
}

const ExprOps lw_shape_ops = {
    .name = "shape",
    .subscript = shape_subscript,
    .unpack = shape_unpack,
};
