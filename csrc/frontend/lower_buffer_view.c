/* frontend/lower_buffer_view.c -- qd.BufferView parameters: a 1-D window [offset, offset + size)
 * of an ndarray.
 *
 * The Python layer (quadrants/_buffer_view.py) passes a BufferView argument `v` as four
 * flattened members: `v.arr` (the 1-D ndarray), `v.offset` and `v.size` (i32 scalars, so views
 * of other windows reuse the compiled kernel) and `v.__qd_buffer_view` (compile-time True, the
 * marker). Bound like a dataclass argument, `v` is an EX_DICT of those members; `v.arr`,
 * `v.offset` and `v.size` are plain member reads. Here:
 *   v[i]      -> v.arr[v.offset + i] (a vector/matrix of element pointers for an ndarray of
 *               vector/matrix elements); with debug=True, 0 <= i < v.size is asserted first
 *               (QuadrantsAssertionError "BufferView Out Of Range: got index ...");
 *   v.shape   -> (v.size,)
 *   v.subview(o, s) -> the view [v.offset + o, v.offset + o + s); with debug=True,
 *               0 <= o, 0 <= s and o + s <= v.size are asserted
 * A view passed to a @qd.func travels by reference like any dict.
 */
#include "lower.h"

#include <string.h>

#define MARKER "__qd_buffer_view"

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
lw_is_buffer_view(const Expr *e)
{
    return e->kind == EX_DICT && member(e, MARKER) != NULL;
}

/* The members of view e; -1 (internal error) when one is missing. */
static int
view_members(Lowerer *lw, const QdAst *node, const Expr *e, const Expr **arr, const Expr **offset,
             const Expr **size)
{
    *arr = member(e, "arr");
    *offset = member(e, "offset");
    *size = member(e, "size");
    if (!*arr || !*offset || !*size || (*arr)->kind != EX_NDARRAY) {
        return lw_error(lw, node, QD_ERR_INTERNAL, "malformed BufferView argument");
    }
    return 0;
}

/* Emits `assert ok, what (a, b, c)`: `what` is a format of three %d (i32 value ids a, b, c),
 * prefixed with the source location. */
static int
emit_assert(Lowerer *lw, const QdAst *node, uint32_t ok, const char *what, uint32_t a, uint32_t b,
            uint32_t c)
{
    QdInst *as = ok == QD_NO_VALUE ? NULL : lw_emit(lw, QD_OP_ASSERT, 4);
    if (!as) {
        return -1;
    }
    as->args[0] = ok;
    as->args[1] = a;
    as->args[2] = b;
    as->args[3] = c;
    /* the message is a format: a '%' of the file name is doubled */
    const char *file = lw->frame->file ? lw->frame->file : "?";
    size_t len = strlen(file);
    char *escaped = qd_arena_alloc(lw->arena, 2 * len + 1);
    if (!escaped) {
        return lw_nomem(lw);
    }
    for (size_t k = 0, j = 0; k <= len; k++) {
        escaped[j++] = file[k];
        if (file[k] == '%') {
            escaped[j++] = '%';
        }
    }
    as->imm.str = qd_arena_printf(lw->arena, "%s:%u: %s", escaped, node->line, what);
    return as->imm.str ? 0 : lw_nomem(lw);
}

/* Asserts 0 <= i < size (i32 value ids), reporting i, offset and size. */
static int
check_index(Lowerer *lw, const QdAst *node, uint32_t i, uint32_t offset, uint32_t size)
{
    const QdType *i32 = qd_type_scalar(QD_TY_I32);
    const QdType *u1 = qd_type_scalar(QD_TY_U1);
    uint32_t zero = lw_const_int(lw, i32, 0);
    uint32_t ge = lw_emit_value(lw, QD_OP_GE, u1, i, zero);
    uint32_t lt = lw_emit_value(lw, QD_OP_LT, u1, i, size);
    uint32_t ok = lw_emit_value(lw, QD_OP_AND, u1, ge, lt);
    return emit_assert(lw, node, ok, "BufferView Out Of Range: got index %d (offset=%d, size=%d).",
                       i, offset, size);
}

/* An i32 value id of runtime or compile-time integer e. */
static int
i32_id(Lowerer *lw, const QdAst *node, const Expr *e, uint32_t *id)
{
    RETURN_IF_ERROR(lw_index_value(lw, node, e, id));
    return lw_convert_id(lw, node, id, qd_type_scalar(QD_TY_I32));
}

int
lw_buffer_view_subscript(Lowerer *lw, const QdAst *node, const Expr *base, const QdAst *index,
                         Expr *out)
{
    const Expr *arr, *offset, *size;
    Expr idx[16];
    uint32_t n = 0;
    RETURN_IF_ERROR(view_members(lw, node, base, &arr, &offset, &size));
    RETURN_IF_ERROR(lw_collect_indices(lw, index, idx, &n));
    if (n != 1) {
        return lw_error(lw, node, QD_ERR_SYNTAX, "a BufferView is indexed with one index, got %u",
                        n);
    }
    if (idx[0].kind == EX_INT && idx[0].ival < 0) {
        return lw_error(lw, node, QD_ERR_SYNTAX,
                        "Negative indices are not supported on BufferViews (index %lld)",
                        (long long)idx[0].ival);
    }
    uint32_t i, off, sz;
    RETURN_IF_ERROR(i32_id(lw, index, &idx[0], &i));
    RETURN_IF_ERROR(i32_id(lw, index, offset, &off));
    if (lw->opt->debug) {
        RETURN_IF_ERROR(i32_id(lw, index, size, &sz));
        RETURN_IF_ERROR(check_index(lw, index, i, off, sz));
    }
    Expr position = {0};
    position.kind = EX_VALUE;
    position.ty = qd_type_scalar(QD_TY_I32);
    position.id = lw_emit_value(lw, QD_OP_ADD, position.ty, i, off);
    if (position.id == QD_NO_VALUE) {
        return -1;
    }
    if (arr->rows) { /* vector/matrix elements */
        uint32_t outer[2] = {arr->id, position.id};
        return lw_ndarray_element(lw, arr, outer, 2, out);
    }
    return lw_subscript_indices(lw, node, index, arr, &position, 1, out);
}

int
lw_buffer_view_subview(Lowerer *lw, const QdAst *node, const Expr *view, const Expr *args,
                       uint32_t nargs, Expr *out)
{
    const Expr *arr, *offset, *size;
    RETURN_IF_ERROR(view_members(lw, node, view, &arr, &offset, &size));
    if (nargs != 2) {
        return lw_error(lw, node, QD_ERR_SYNTAX,
                        "subview() takes offset and size, got %u arguments", nargs);
    }
    const QdType *i32 = qd_type_scalar(QD_TY_I32);
    const QdType *u1 = qd_type_scalar(QD_TY_U1);
    uint32_t o, s, off, sz;
    RETURN_IF_ERROR(i32_id(lw, node, &args[0], &o));
    RETURN_IF_ERROR(i32_id(lw, node, &args[1], &s));
    RETURN_IF_ERROR(i32_id(lw, node, offset, &off));
    RETURN_IF_ERROR(i32_id(lw, node, size, &sz));
    if (lw->opt->debug) {
        uint32_t zero = lw_const_int(lw, i32, 0);
        uint32_t end = lw_emit_value(lw, QD_OP_ADD, i32, o, s);
        uint32_t o_ok = lw_emit_value(lw, QD_OP_GE, u1, o, zero);
        uint32_t s_ok = lw_emit_value(lw, QD_OP_GE, u1, s, zero);
        uint32_t end_ok = lw_emit_value(lw, QD_OP_LE, u1, end, sz);
        uint32_t ok = lw_emit_value(lw, QD_OP_AND, u1, o_ok, s_ok);
        ok = lw_emit_value(lw, QD_OP_AND, u1, ok, end_ok);
        RETURN_IF_ERROR(emit_assert(lw, node, ok,
                                    "BufferView subview Out Of Range: subview offset=%d, subview "
                                    "size=%d, parent size=%d.",
                                    o, s, sz));
    }
    /* the same members, with the new window held in slots: a view made at the kernel's top
     * level is used by the tasks after it (tmp_alloc slots are shared by every task) */
    *out = *view;
    out->keys = QD_NEW_ARRAY(lw->arena, Expr, view->nitems);
    out->items = QD_NEW_ARRAY(lw->arena, Expr, view->nitems);
    if (!out->keys || !out->items) {
        return lw_nomem(lw);
    }
    memcpy(out->keys, view->keys, sizeof(Expr) * view->nitems);
    memcpy(out->items, view->items, sizeof(Expr) * view->nitems);
    for (uint32_t i = 0; i < out->nitems; i++) {
        bool is_offset = strcmp(out->keys[i].str, "offset") == 0;
        if (is_offset || strcmp(out->keys[i].str, "size") == 0) {
            Expr value = {0};
            value.kind = EX_VALUE;
            value.ty = i32;
            value.id = is_offset ? lw_emit_value(lw, QD_OP_ADD, i32, off, o) : s;
            if (value.id == QD_NO_VALUE) {
                return -1;
            }
            RETURN_IF_ERROR(lw_new_slot(lw, i32, &out->items[i]));
            RETURN_IF_ERROR(lw_store(lw, node, &out->items[i], &value));
        }
    }
    return 0;
}

int
lw_buffer_view_attribute(Lowerer *lw, const QdAst *node, const Expr *base, const char *attr,
                         Expr *out)
{
    const Expr *arr, *offset, *size;
    RETURN_IF_ERROR(view_members(lw, node, base, &arr, &offset, &size));
    if (strcmp(attr, "shape") == 0) {
        memset(out, 0, sizeof(*out));
        out->kind = EX_TUPLE;
        out->nitems = 1;
        out->items = QD_NEW_ARRAY(lw->arena, Expr, 1);
        if (!out->items) {
            return lw_nomem(lw);
        }
        out->items[0] = *size;
        return 0;
    }
    if (strcmp(attr, "subview") == 0) {
        /* a method: called through lw_matrix_call, the view in items[0] */
        memset(out, 0, sizeof(*out));
        out->kind = EX_BUILTIN;
        out->str = "buffer_view.subview";
        out->items = QD_NEW_ARRAY(lw->arena, Expr, 1);
        if (!out->items) {
            return lw_nomem(lw);
        }
        out->items[0] = *base;
        out->nitems = 1;
        return 0;
    }
    const Expr *m = member(base, attr);
    if (!m || strcmp(attr, MARKER) == 0) {
        return lw_error(lw, node, QD_ERR_SYNTAX,
                        "BufferView has no attribute '%s' in kernels (arr, offset, size, shape)",
                        attr);
    }
    *out = *m;
    return 0;
}
