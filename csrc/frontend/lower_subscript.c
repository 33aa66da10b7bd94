/* frontend/lower_subscript.c -- `x[i, j]`: indices, bounds checks, field and ndarray elements.
 *
 * lw_subscript hands `base[index]` to the base's kind (ExprOps.subscript). The machinery shared
 * by the kinds is here: flattening an index into scalar indices (tuples and vectors expand),
 * index values (32-bit, or 64-bit into a wide container), debug bounds checks, the element
 * address of a field or ndarray (ELEM_PTR in physical axis order) and reads of ndarray extents.
 */
#include "lower.h"

#include <stdlib.h>
#include <string.h>

/* The physical axis of ndarray e (EX_NDARRAY or EX_SHAPE) that holds canonical axis `axis`. */
static uint32_t
ndarray_axis(const Expr *e, uint32_t axis)
{
    for (uint32_t p = 0; e->layout && p < e->ndim; p++) {
        if (e->layout[p] == axis) {
            return p;
        }
    }
    return axis;
}

uint32_t
lw_ndarray_extent(Lowerer *lw, const Expr *e, uint32_t axis)
{
    QdInst *inst = lw_emit(lw, QD_OP_SHAPE, 1);
    if (!inst) {
        return QD_NO_VALUE;
    }
    inst->args[0] = e->id;
    inst->imm.i = ndarray_axis(e, axis);
    return qd_inst_set_result(lw->f, inst, qd_type_scalar(QD_TY_I32), NULL);
}

int
lw_shape_axis(Lowerer *lw, const Expr *shape, uint32_t d, Expr *out)
{
    const QdType *i32 = qd_type_scalar(QD_TY_I32);
    *out = lw_value(lw_ndarray_extent(lw, shape, d), i32);
    return out->id == QD_NO_VALUE ? -1 : 0;
}

/* Flattens the index of x[...] into a list of Exprs (tuples and grouped vectors expand). */
static int
collect_indices(Lowerer *lw, const QdAst *index, Expr *out, uint32_t *n)
{
    Expr e;
    *n = 0;
    if (index->kind == QD_AST_CONSTANT && index->cst.kind == QD_CONST_NONE) {
        return 0;
    }
    RETURN_IF_ERROR(lw_expr(lw, index, &e));
    if (e.kind == EX_NONE) {
        return 0;
    }
    /* A vector index (a runtime `(i, j) if c else (j, i)`, a qd.Vector) is one index per
     * component, like a tuple. */
    if (e.kind != EX_TUPLE && !lw_matrix_is_vector(&e)) {
        out[(*n)++] = e;
        return 0;
    }
    for (uint32_t i = 0; i < e.nitems; i++) {
        const Expr *item = &e.items[i];
        bool expands = item->kind == EX_TUPLE || lw_matrix_is_vector(item);
        uint32_t count = expands ? item->nitems : 1;
        if (*n + count > 16) {
            return lw_error(lw, index, QD_ERR_SYNTAX, "too many indices");
        }
        for (uint32_t k = 0; k < count; k++) {
            out[(*n)++] = expands ? item->items[k] : *item;
        }
    }
    return 0;
}

/* Whether a field or ndarray is addressed with 64-bit indices: a field of 2^31 elements or
 * more, and every ndarray (its extents are only known at launch; its linear index is 64-bit
 * anyway). Fields below 2^31 elements keep 32-bit indices, the GPU's fast path. */
static bool
is_wide_container(const Expr *base)
{
    return base->kind == EX_NDARRAY || (base->kind == EX_FIELD && qd_field_is_wide(base->field));
}

/* The value of index e as an i32, or as an i64 when `wide` and the index may need more than 32
 * bits (an i64, u64 or u32 value). A constant outside the i32 range is an i64 whatever `wide`
 * says: it is out of bounds of a 32-bit container, and stays so rather than wrapping. Into a
 * narrow container a 64-bit value narrows, which keeps every in-bounds index exact. */
static int
index_value(Lowerer *lw, const QdAst *node, const Expr *e, bool wide, uint32_t *id)
{
    const QdType *i32 = qd_type_scalar(QD_TY_I32);
    const QdType *i64 = qd_type_scalar(QD_TY_I64);
    if (e->kind == EX_INT || e->kind == EX_BOOL) {
        /* as the reference: an untyped index literal is a default_ip value */
        RETURN_IF_ERROR(lw_check_literal(lw, node, e)); /* also: beyond 64 bits */
        bool fits = e->ival >= INT32_MIN && e->ival <= INT32_MAX;
        *id = lw_const_int(lw, fits ? i32 : i64, e->ival);
        return *id == QD_NO_VALUE ? -1 : 0;
    }
    Expr v;
    RETURN_IF_ERROR(lw_rvalue(lw, node, e, &v));
    if (!qd_type_is_int(v.ty)) {
        return lw_error(lw, node, QD_ERR_TYPE, "indices must be integers, not %s", lw_type_name(v.ty));
    }
    bool is_long = qd_type_bits(v.ty) > 32 || v.ty->kind == QD_TY_U32;
    const QdType *want = wide && is_long ? i64 : i32;
    if (v.ty->kind != want->kind) {
        RETURN_IF_ERROR(lw_convert(lw, node, &v, want, &v));
    }
    *id = v.id;
    return 0;
}

int
lw_collect_indices(Lowerer *lw, const QdAst *index, Expr *out, uint32_t *n)
{
    return collect_indices(lw, index, out, n);
}

int
lw_index_value(Lowerer *lw, const QdAst *node, const Expr *e, uint32_t *id)
{
    return index_value(lw, node, e, false, id);
}

/* Debug bounds checks: asserts that every index lies in its axis, then clamps out-of-range
 * indices to the axis start so that the access after a failed check stays inside the memory
 * (the launch reports the failure once it ends). Indices are rewritten in place. Each check
 * runs in 64 bits where the index or the axis bounds need it, so that an index is checked
 * before a narrow container narrows it (index_value). */
static int
check_bounds(Lowerer *lw, const QdAst *node, const Expr *base, Expr *idx, uint32_t n)
{
    const QdType *u1 = qd_type_scalar(QD_TY_U1);
    bool is_field = base->kind == EX_FIELD;
    uint32_t all_ok = QD_NO_VALUE;
    QdSbuf shape;
    qd_sbuf_init(&shape);
    for (uint32_t i = 0; i < n; i++) {
        int64_t lo = is_field ? base->view->offset[i] : 0;
        int64_t hi = is_field ? lo + base->view->shape[i] : 0;
        uint32_t v, lo_id, hi_id;
        RETURN_IF_ERROR(index_value(lw, node, &idx[i], true, &v));
        const QdType *ty = qd_value_type(lw->f, v);
        if (hi > INT32_MAX || lo < INT32_MIN) {
            ty = qd_type_scalar(QD_TY_I64);
            RETURN_IF_ERROR(lw_convert_id(lw, node, &v, ty));
        }
        lo_id = lw_const_int(lw, ty, lo);
        if (is_field) {
            hi_id = lw_const_int(lw, ty, hi);
            qd_sbuf_printf(&shape, "%s%lld", i ? ", " : "", (long long)base->view->shape[i]);
        } else {
            hi_id = lw_ndarray_extent(lw, base, i);
            if (hi_id == QD_NO_VALUE) {
                qd_sbuf_free(&shape);
                return -1;
            }
            if (ty->kind != QD_TY_I32) {
                RETURN_IF_ERROR(lw_convert_id(lw, node, &hi_id, ty));
            }
        }
        uint32_t ge = lw_emit_value(lw, QD_OP_GE, u1, v, lo_id);
        uint32_t lt = lw_emit_value(lw, QD_OP_LT, u1, v, hi_id);
        uint32_t ok = lw_emit_value(lw, QD_OP_AND, u1, ge, lt);
        QdInst *sel = lw_emit(lw, QD_OP_SELECT, 3);
        if (!sel || ok == QD_NO_VALUE) {
            qd_sbuf_free(&shape);
            return -1;
        }
        sel->args[0] = ok;
        sel->args[1] = v;
        sel->args[2] = lo_id;
        memset(&idx[i], 0, sizeof(idx[i]));
        idx[i] = lw_value(qd_inst_set_result(lw->f, sel, ty, NULL), ty);
        all_ok = all_ok == QD_NO_VALUE ? ok : lw_emit_value(lw, QD_OP_AND, u1, all_ok, ok);
    }
    char *dims = qd_sbuf_take(&shape);
    int rc = 0;
    if (all_ok != QD_NO_VALUE) {
        rc = lw_debug_assert(lw, node, all_ok,
                             qd_arena_printf(lw->arena, "Out of bound access to %s%s%s%s",
                                             is_field ? "a field of shape (" : "an ndarray",
                                             is_field && dims ? dims : "", is_field && n == 1 ? "," : "",
                                             is_field ? ")" : ""),
                             NULL, 0);
    }
    free(dims);
    return rc;
}

/* base[idx[0], ..., idx[n-1]] of a field or ndarray `base`, as an lvalue; `where` is the index
 * expression, blamed for bad indices. */
int
lw_subscript_indices(Lowerer *lw, const QdAst *node, const QdAst *where, const Expr *base,
                     Expr *idx, uint32_t n, Expr *out)
{
    uint32_t ndim = base->kind == EX_FIELD ? base->field->ndim : base->ndim;
    if (n != ndim) {
        return lw_error(lw, node, QD_ERR_INDEX, "%s with dim %u accessed with indices of dim %u",
                        base->kind == EX_FIELD ? "Field" : "Array", ndim, n);
    }
    bool is_field = base->kind == EX_FIELD;
    uint32_t ids[17];
    uint32_t k = 0;
    for (uint32_t i = 0; i < n && !is_field; i++) {
        if (idx[i].kind == EX_INT && idx[i].ival < 0) {
            return lw_error(lw, node, QD_ERR_SYNTAX,
                            "Negative indices are not supported on ndarrays (index %lld)",
                            (long long)idx[i].ival);
        }
    }
    if (lw->opt->bounds_check) {
        RETURN_IF_ERROR(check_bounds(lw, node, base, idx, n));
    }
    if (!is_field) {
        /* Canonical indices, in the physical order of a permuted ndarray. */
        ids[k++] = base->id;
        for (uint32_t p = 0; p < n; p++) {
            uint32_t axis = base->layout ? base->layout[p] : p;
            RETURN_IF_ERROR(index_value(lw, where, &idx[axis], true, &ids[k++]));
        }
    } else {
        /* Canonical indices, shifted by the field's offsets, in physical order. */
        const FieldView *view = base->view;
        bool wide = is_wide_container(base);
        uint32_t canon[16];
        for (uint32_t i = 0; i < n; i++) {
            Expr ix = idx[i];
            if (view->offset[i]) {
                Expr off = {0};
                off.kind = EX_INT;
                off.ival = view->offset[i];
                RETURN_IF_ERROR(lw_binary(lw, where, QD_BIN_SUB, &ix, &off, &ix));
            }
            RETURN_IF_ERROR(index_value(lw, where, &ix, wide, &canon[i]));
        }
        for (uint32_t i = 0; i < n; i++) {
            ids[k++] = canon[view->order[i] < n ? view->order[i] : i];
        }
    }
    QdInst *inst = lw_emit(lw, is_field ? QD_OP_FIELD_PTR : QD_OP_ELEM_PTR, k);
    if (!inst) {
        return -1;
    }
    if (k) {
        memcpy(inst->args, ids, sizeof(uint32_t) * k); /* a 0-d field has no operands */
    }
    if (is_field) {
        inst->imm.field = base->field;
    }
    const QdType *elem = is_field ? base->field->elem : base->ty;
    const QdType *pty = qd_type_ptr(lw->m, elem, QD_SPACE_GLOBAL);
    if (!pty || qd_inst_set_result(lw->f, inst, pty, NULL) == QD_NO_VALUE) {
        return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
    }
    memset(out, 0, sizeof(*out));
    out->kind = EX_LVALUE;
    out->id = inst->result;
    out->ty = elem;
    out->space = QD_SPACE_GLOBAL;
    out->is_global = true;
    return 0;
}

int
lw_not_indexable(Lowerer *lw, const QdAst *node)
{
    return lw_error(lw, node, QD_ERR_SYNTAX, "this value cannot be indexed in a kernel");
}

int
lw_subscript(Lowerer *lw, const QdAst *node, const Expr *base, const QdAst *index, Expr *out)
{
    const ExprOps *ops = lw_expr_ops(base);
    if (ops->subscript) {
        return ops->subscript(lw, node, base, index, out);
    }
    Expr idx[16];
    uint32_t n = 0;
    RETURN_IF_ERROR(collect_indices(lw, index, idx, &n)); /* its errors come first */
    return lw_not_indexable(lw, node);
}

int
lw_shape_tuple(Lowerer *lw, const Expr *shape, Expr *out)
{
    Expr t = {0};
    t.kind = EX_TUPLE;
    t.nitems = shape->ndim;
    t.items = QD_NEW_ARRAY(lw->arena, Expr, shape->ndim ? shape->ndim : 1);
    if (!t.items) {
        return lw_nomem(lw);
    }
    for (uint32_t d = 0; d < shape->ndim; d++) {
        RETURN_IF_ERROR(lw_shape_axis(lw, shape, d, &t.items[d]));
    }
    *out = t;
    return 0;
}
