/* frontend/lower_matrix_access.c -- element access of vectors and matrices in kernels.
 *
 * Indexing a matrix Expr with compile-time indices selects its items: the result keeps what the
 * items are, so an element or a slice of a variable (items are slots) or of a field element
 * (items are global pointers) can be assigned to, and `v[0] += x` on a field is atomic. Slices
 * (`m[:, 2]`, `v[1:3]`, `m[0:2, 1]`) need compile-time start/stop/step and give a new vector or
 * matrix of the selected items. Swizzles (`v.xyz`, `v.bgr`, `v.st`) are slices by letters.
 *
 * A runtime index reads through a chain of selects (`i == k ? v[k] : ...`): the elements stay in
 * registers, which is what matters for the small sizes these types have. A runtime-indexed
 * store writes every element with a select between the old and the new value.
 */
#include "lower.h"

#include <stdio.h>
#include <string.h>

/* One index of a subscript: a compile-time int, a runtime value, or a slice. */
typedef struct MatIndex {
    bool is_slice;
    bool is_runtime;
    int64_t k;          /* compile-time index */
    Expr value;         /* runtime index */
    int64_t start, stop, step; /* slice (resolved against the axis length) */
} MatIndex;

static int
slice_part(Lowerer *lw, const QdAst *node, const QdAst *part, bool *given, int64_t *v)
{
    *given = false;
    if (!part) {
        return 0;
    }
    Expr e;
    RETURN_IF_ERROR(lw_expr(lw, part, &e));
    if (e.kind == EX_NONE) {
        return 0;
    }
    if (e.kind != EX_INT && e.kind != EX_BOOL) {
        return lw_error(lw, node, QD_ERR_COMPILATION, "Quadrants does not support variables in slice now");
    }
    *given = true;
    *v = e.ival;
    return 0;
}

/* Index `ix` (a SLICE node), or the evaluated index *val of node ix, against an axis of len. */
static int
parse_index(Lowerer *lw, const QdAst *node, const QdAst *ix, const Expr *val, uint32_t len,
            MatIndex *out)
{
    memset(out, 0, sizeof(*out));
    if (!val) {
        bool gs, ge, gp;
        int64_t s = 0, e = 0, p = 1;
        RETURN_IF_ERROR(slice_part(lw, node, ix->x, &gs, &s));
        RETURN_IF_ERROR(slice_part(lw, node, ix->y, &ge, &e));
        RETURN_IF_ERROR(slice_part(lw, node, ix->z, &gp, &p));
        if (!gp) {
            p = 1;
        }
        if (p == 0) {
            return lw_error(lw, node, QD_ERR_COMPILATION, "slice step cannot be zero");
        }
        int64_t n = len;
        if (!gs) {
            s = p > 0 ? 0 : n - 1;
        } else if (s < 0) {
            s += n;
        }
        if (!ge) {
            e = p > 0 ? n : -n - 1;
        } else if (e < 0) {
            e += n;
        }
        /* Clamp as Python does. */
        if (p > 0) {
            s = s < 0 ? 0 : s > n ? n : s;
            e = e < 0 ? 0 : e > n ? n : e;
        } else {
            s = s < -1 ? -1 : s > n - 1 ? n - 1 : s;
            e = e < -1 ? -1 : e > n - 1 ? n - 1 : e;
        }
        out->is_slice = true;
        out->start = s;
        out->stop = e;
        out->step = p;
        return 0;
    }
    Expr e = *val;
    if (e.is_big) {
        return lw_check_literal(lw, node, &e);
    }
    if (e.kind == EX_INT || e.kind == EX_BOOL) {
        if (e.ival < 0) {
            return lw_error(lw, node, QD_ERR_SYNTAX,
                            "Negative indices are not supported in Quadrants kernels (index %lld)",
                            (long long)e.ival);
        }
        if (e.ival >= (int64_t)len) {
            return lw_error(lw, node, QD_ERR_INDEX, "matrix index %lld out of range [0, %u)",
                            (long long)e.ival, len);
        }
        out->k = e.ival;
        return 0;
    }
    Expr v;
    RETURN_IF_ERROR(lw_rvalue(lw, ix, &e, &v));
    if (!qd_type_is_int(v.ty)) {
        return lw_error(lw, node, QD_ERR_TYPE, "matrix indices must be integers");
    }
    out->is_runtime = true;
    out->value = v;
    return 0;
}

int
lw_slice_items(Lowerer *lw, const QdAst *node, const QdAst *slice, const Expr *items, uint32_t len,
               Expr *out)
{
    MatIndex ix;
    RETURN_IF_ERROR(parse_index(lw, node, slice, NULL, len, &ix));
    memset(out, 0, sizeof(*out));
    out->kind = EX_TUPLE;
    out->items = QD_NEW_ARRAY(lw->arena, Expr, len ? len : 1);
    if (!out->items) {
        return lw_nomem(lw);
    }
    for (int64_t k = ix.start; ix.step > 0 ? k < ix.stop : k > ix.stop; k += ix.step) {
        out->items[out->nitems++] = items[k];
    }
    return 0;
}

/* The positions an index selects on an axis of `len`: count and list. */
static uint32_t
positions(const MatIndex *ix, uint32_t *out)
{
    if (!ix->is_slice) {
        out[0] = (uint32_t)ix->k;
        return 1;
    }
    uint32_t n = 0;
    for (int64_t i = ix->start; ix->step > 0 ? i < ix->stop : i > ix->stop; i += ix->step) {
        out[n++] = (uint32_t)i;
    }
    return n;
}

/* items[base + stride * k] selected by runtime index `idx` (k in [0, len)), as one value. */
static int
select_chain(Lowerer *lw, const QdAst *node, const Expr *m, uint32_t base, uint32_t stride,
             uint32_t len, const Expr *idx, Expr *out)
{
    const QdType *ty = m->ty;
    Expr acc;
    RETURN_IF_ERROR(lw_matrix_item(lw, node, &m->items[base], ty, &acc));
    RETURN_IF_ERROR(lw_convert(lw, node, &acc, ty, &acc));
    for (uint32_t k = 1; k < len; k++) {
        Expr kk = {0}, cond, item;
        kk.kind = EX_INT;
        kk.ival = k;
        RETURN_IF_ERROR(lw_compare(lw, node, QD_CMP_EQ, idx, &kk, &cond));
        RETURN_IF_ERROR(lw_convert(lw, node, &m->items[base + stride * k], ty, &item));
        QdInst *sel = lw_emit(lw, QD_OP_SELECT, 3);
        if (!sel) {
            return -1;
        }
        sel->args[0] = cond.id;
        sel->args[1] = item.id;
        sel->args[2] = acc.id;
        uint32_t id = qd_inst_set_result(lw->f, sel, ty, NULL);
        if (id == QD_NO_VALUE) {
            return lw_nomem(lw);
        }
        acc.id = id;
    }
    *out = acc;
    return 0;
}

/* Debug builds: asserts that the runtime indices select an element inside the matrix. The
 * message names the shape and the flattened index, as the reference's does. */
static int
debug_check_index(Lowerer *lw, const QdAst *node, const Expr *base, const MatIndex *ix, uint32_t n)
{
    if (!lw->opt->debug || !(ix[0].is_runtime || (n == 2 && ix[1].is_runtime))) {
        return 0;
    }
    const QdType *i32 = qd_type_scalar(QD_TY_I32), *u1 = qd_type_scalar(QD_TY_U1);
    uint32_t ok = QD_NO_VALUE, flat = QD_NO_VALUE;
    for (uint32_t a = 0; a < n; a++) {
        uint32_t extent = a == 0 ? base->rows : base->cols;
        uint32_t v;
        if (ix[a].is_runtime) {
            v = ix[a].value.id;
            RETURN_IF_ERROR(lw_convert_id(lw, node, &v, i32));
            uint32_t ge = lw_emit_value(lw, QD_OP_GE, u1, v, lw_const_int(lw, i32, 0));
            uint32_t lt = lw_emit_value(lw, QD_OP_LT, u1, v, lw_const_int(lw, i32, extent));
            uint32_t in = lw_emit_value(lw, QD_OP_AND, u1, ge, lt);
            ok = ok == QD_NO_VALUE ? in : lw_emit_value(lw, QD_OP_AND, u1, ok, in);
        } else {
            v = lw_const_int(lw, i32, ix[a].is_slice ? ix[a].start : ix[a].k);
        }
        if (a == 0) {
            flat = v;
        } else {
            flat = lw_emit_value(lw, QD_OP_MUL, i32, flat, lw_const_int(lw, i32, base->cols));
            flat = lw_emit_value(lw, QD_OP_ADD, i32, flat, v);
        }
    }
    if (ok == QD_NO_VALUE || flat == QD_NO_VALUE) {
        return -1;
    }
    char shape[40];
    if (base->is_vector) {
        snprintf(shape, sizeof(shape), "[%u]", base->rows);
    } else {
        snprintf(shape, sizeof(shape), "[%u, %u]", base->rows, base->cols);
    }
    return lw_debug_assert(lw, node, ok, qd_arena_printf(lw->arena, "Out of bound access to a %s matrix "
                                                         "with index [%%d]", shape), &flat, 1);
}

/* The indices of base[index]: one per axis (a vector of indices counts as its elements). */
static int
index_list(Lowerer *lw, const QdAst *node, const Expr *base, const QdAst *index, MatIndex *ix,
           uint32_t *n)
{
    const QdAst *parts[2];
    Expr vals[2];
    uint32_t want = base->is_vector ? 1 : 2;
    uint32_t got = index->kind == QD_AST_TUPLE ? index->a.len : 1;
    if (got > want) {
        return lw_error(lw, node, QD_ERR_INDEX, "Expected %u indices, got %u.", want, got);
    }
    for (uint32_t i = 0; i < got; i++) {
        parts[i] = index->kind == QD_AST_TUPLE ? index->a.items[i] : index;
        if (parts[i]->kind != QD_AST_SLICE) {
            RETURN_IF_ERROR(lw_expr(lw, parts[i], &vals[i]));
        }
    }
    if (got == 1 && parts[0]->kind != QD_AST_SLICE &&
        (vals[0].kind == EX_TUPLE || (vals[0].kind == EX_MATRIX && vals[0].is_vector))) {
        /* m[I] with I a vector (a grouped loop index) or tuple of indices */
        Expr v = vals[0];
        got = v.nitems;
        if (got != want) {
            return lw_error(lw, node, QD_ERR_INDEX, "Expected %u indices, got %u.", want, got);
        }
        for (uint32_t i = 0; i < got; i++) {
            vals[i] = v.items[i];
            parts[i] = index;
        }
    }
    *n = got;
    for (uint32_t i = 0; i < *n; i++) {
        const Expr *val = parts[i]->kind == QD_AST_SLICE ? NULL : &vals[i];
        RETURN_IF_ERROR(parse_index(lw, node, parts[i], val, i == 0 ? base->rows : base->cols, &ix[i]));
    }
    if (*n == 1 && !base->is_vector) {
        if (!ix[0].is_slice) { /* a single element needs both indices; m[a:b] selects rows */
            return lw_error(lw, node, QD_ERR_INDEX, "Expected %u indices, got %u.", want, got);
        }
        /* m[a:b]: those rows (all columns). */
        memset(&ix[1], 0, sizeof(ix[1]));
        ix[1].is_slice = true;
        ix[1].start = 0;
        ix[1].stop = base->cols;
        ix[1].step = 1;
        *n = 2;
    }
    return debug_check_index(lw, node, base, ix, *n);
}

int
lw_matrix_subscript(Lowerer *lw, const QdAst *node, const Expr *base, const QdAst *index, Expr *out)
{
    MatIndex ix[2];
    uint32_t n;
    RETURN_IF_ERROR(index_list(lw, node, base, index, ix, &n));
    uint32_t cols = base->cols;
    if (n == 1) {
        if (ix[0].is_runtime) {
            return select_chain(lw, node, base, 0, 1, base->rows, &ix[0].value, out);
        }
        if (!ix[0].is_slice) {
            *out = base->items[ix[0].k];
            return 0;
        }
    }
    if (n == 2 && !ix[0].is_slice && !ix[1].is_slice) {
        if (ix[0].is_runtime || ix[1].is_runtime) {
            /* Flattened runtime index r * cols + c. */
            Expr r = ix[0].value, c = ix[1].value, cc = {0}, flat;
            if (!ix[0].is_runtime) {
                r.kind = EX_INT;
                r.ival = ix[0].k;
            }
            if (!ix[1].is_runtime) {
                c.kind = EX_INT;
                c.ival = ix[1].k;
            }
            cc.kind = EX_INT;
            cc.ival = cols;
            RETURN_IF_ERROR(lw_binary(lw, node, QD_BIN_MUL, &r, &cc, &flat));
            RETURN_IF_ERROR(lw_binary(lw, node, QD_BIN_ADD, &flat, &c, &flat));
            return select_chain(lw, node, base, 0, 1, base->nitems, &flat, out);
        }
        *out = base->items[ix[0].k * cols + ix[1].k];
        return 0;
    }
    /* Slices: the selected items (a runtime non-slice index selects through a chain). */
    uint32_t *pr = QD_NEW_ARRAY(lw->arena, uint32_t, base->rows + 1);
    uint32_t *pc = QD_NEW_ARRAY(lw->arena, uint32_t, cols + 1);
    if (!pr || !pc) {
        return lw_nomem(lw);
    }
    uint32_t nr = ix[0].is_runtime ? 1 : positions(&ix[0], pr);
    uint32_t nc = n == 1 ? 1 : ix[1].is_runtime ? 1 : positions(&ix[1], pc);
    if (n == 1) {
        pc[0] = 0;
    }
    bool vec = n == 1 || !ix[0].is_slice || !ix[1].is_slice;
    uint32_t rows = vec ? nr * nc : nr;
    RETURN_IF_ERROR(lw_matrix_new(lw, rows, vec ? 1 : nc, vec, base->ty, out));
    for (uint32_t i = 0; i < nr; i++) {
        for (uint32_t j = 0; j < nc; j++) {
            Expr *dst = &out->items[i * nc + j];
            if (ix[0].is_runtime) {
                RETURN_IF_ERROR(select_chain(lw, node, base, pc[j], cols, base->rows, &ix[0].value, dst));
            } else if (n == 2 && ix[1].is_runtime) {
                RETURN_IF_ERROR(select_chain(lw, node, base, pr[i] * cols, 1, cols, &ix[1].value, dst));
            } else {
                *dst = base->items[pr[i] * cols + pc[j]];
            }
        }
    }
    return 0;
}

/* Runs `target op= value` (aug) or `target = value` inside `if cond`. */
static int
guarded_update(Lowerer *lw, const QdAst *node, uint32_t cond, const Expr *target, const Expr *value,
               const QdAst *aug)
{
    QdInst *ifi = lw_emit(lw, QD_OP_IF, 1);
    if (!ifi) {
        return -1;
    }
    ifi->args[0] = cond;
    QdRegion *saved = lw->cur;
    bool saved_top = lw->at_top;
    lw->at_top = false;
    lw->cur = ifi->regions[0];
    int rc = aug ? lw_aug_assign(lw, aug, target, value) : lw_store(lw, node, target, value);
    lw->cur = saved;
    lw->at_top = saved_top;
    return rc;
}

/* `base[index] = value` (aug NULL) or `base[index] op= value` for a matrix base. A runtime index
 * stores into local elements through selects (they stay in registers); global elements and
 * augmented assignments are updated under a guard per element, so that only the selected element
 * is written (atomically where `op=` is atomic). */
int
lw_matrix_store_subscript(Lowerer *lw, const QdAst *node, const Expr *base, const QdAst *index,
                          const Expr *value, const QdAst *aug)
{
    MatIndex ix[2];
    uint32_t n;
    RETURN_IF_ERROR(index_list(lw, node, base, index, ix, &n));
    bool runtime = ix[0].is_runtime || (n == 2 && ix[1].is_runtime);
    if (!runtime && aug) {
        Expr target;
        RETURN_IF_ERROR(lw_matrix_subscript(lw, node, base, index, &target));
        return lw_aug_assign(lw, aug, &target, value);
    }
    if (!runtime) {
        Expr target;
        RETURN_IF_ERROR(lw_matrix_subscript(lw, node, base, index, &target));
        if (target.kind == EX_MATRIX) {
            return lw_matrix_store(lw, node, &target, value);
        }
        if (target.kind != EX_LVALUE) {
            return lw_error(lw, node, QD_ERR_SYNTAX,
                            "cannot assign to an element of a temporary matrix value (assign it to "
                            "a variable first)");
        }
        return lw_store(lw, node, &target, value);
    }
    /* Position of every row / column of base in the selection (-1: not selected); a runtime
     * index selects position 0 of its axis under a condition. */
    uint32_t naxes[2] = {base->rows, n == 2 ? base->cols : 1}, nsel[2] = {1, 1};
    int32_t *pos[2];
    for (int axis = 0; axis < 2; axis++) {
        pos[axis] = QD_NEW_ARRAY(lw->arena, int32_t, naxes[axis] + 1);
        if (!pos[axis]) {
            return lw_nomem(lw);
        }
        for (uint32_t k = 0; k < naxes[axis]; k++) {
            pos[axis][k] = axis == 1 && n == 1 ? 0 : ix[axis].is_runtime ? 0 : -1;
        }
        if ((axis == 1 && n == 1) || ix[axis].is_runtime) {
            continue;
        }
        uint32_t *list = QD_NEW_ARRAY(lw->arena, uint32_t, naxes[axis] + 1);
        if (!list) {
            return lw_nomem(lw);
        }
        nsel[axis] = positions(&ix[axis], list);
        for (uint32_t p = 0; p < nsel[axis]; p++) {
            pos[axis][list[p]] = (int32_t)p;
        }
    }
    Expr v, src;
    if (value->kind == EX_MATRIX) {
        if (value->nitems != nsel[0] * nsel[1]) {
            return lw_error(lw, node, QD_ERR_TYPE, "cannot assign %u values to %u elements",
                            value->nitems, nsel[0] * nsel[1]);
        }
        RETURN_IF_ERROR(lw_struct_load(lw, node, value, &src));
    } else {
        RETURN_IF_ERROR(lw_matrix_scalar(lw, node, value, &src));
    }
    bool guarded = aug != NULL;
    for (uint32_t k = 0; k < base->nitems; k++) {
        guarded |= base->items[k].kind == EX_LVALUE && base->items[k].is_global;
    }
    for (uint32_t r = 0; r < naxes[0]; r++) {
        for (uint32_t c = 0; c < naxes[1]; c++) {
            if (pos[0][r] < 0 || pos[1][c] < 0) {
                continue;
            }
            const Expr *t = &base->items[r * base->cols + c];
            if (t->kind != EX_LVALUE) {
                return lw_error(lw, node, QD_ERR_SYNTAX,
                                "cannot assign to an element of a temporary matrix value");
            }
            const Expr *x = src.kind == EX_MATRIX ? &src.items[pos[0][r] * nsel[1] + pos[1][c]] : &src;
            if (guarded) {
                RETURN_IF_ERROR(lw_rvalue(lw, node, x, &v));
            } else {
                RETURN_IF_ERROR(lw_matrix_item(lw, node, x, base->ty, &v));
                RETURN_IF_ERROR(lw_convert(lw, node, &v, base->ty, &v));
            }
            Expr cond = {0}, here = {0}, eq, old;
            for (int axis = 0; axis < 2; axis++) {
                if (axis == 1 && n == 1) {
                    break;
                }
                if (!ix[axis].is_runtime) {
                    continue;
                }
                here.kind = EX_INT;
                here.ival = axis == 0 ? r : c;
                RETURN_IF_ERROR(lw_compare(lw, node, QD_CMP_EQ, &ix[axis].value, &here, &eq));
                if (cond.kind == EX_VOID) {
                    cond = eq;
                } else {
                    RETURN_IF_ERROR(lw_binary(lw, node, QD_BIN_BITAND, &cond, &eq, &cond));
                }
            }
            if (guarded) {
                RETURN_IF_ERROR(guarded_update(lw, node, cond.id, t, &v, aug));
                continue;
            }
            RETURN_IF_ERROR(lw_rvalue(lw, node, t, &old));
            QdInst *sel = lw_emit(lw, QD_OP_SELECT, 3);
            if (!sel) {
                return -1;
            }
            sel->args[0] = cond.id;
            sel->args[1] = v.id;
            sel->args[2] = old.id;
            Expr nv = {0};
            nv.kind = EX_VALUE;
            nv.ty = base->ty;
            nv.id = qd_inst_set_result(lw->f, sel, base->ty, NULL);
            if (nv.id == QD_NO_VALUE) {
                return lw_nomem(lw);
            }
            RETURN_IF_ERROR(lw_store(lw, node, t, &nv));
        }
    }
    return 0;
}

/***** attributes: shape, swizzles, methods *****/

static const char *const swizzle_groups[] = {"xyzw", "rgba", "stpq"};

/* The letters of s as a Python tuple of one-character strings ("('x', 'y')", "('w',)"),
 * sorted when `sorted` is set, as error messages name them. */
static const char *
char_tuple(Lowerer *lw, const char *s, bool sorted)
{
    char letters[5] = {0}, buf[40];
    size_t n = strlen(s) < 4 ? strlen(s) : 4, len = 0;
    memcpy(letters, s, n);
    for (size_t i = 1; sorted && i < n; i++) { /* insertion sort of at most four letters */
        for (size_t j = i; j > 0 && letters[j - 1] > letters[j]; j--) {
            char t = letters[j];
            letters[j] = letters[j - 1];
            letters[j - 1] = t;
        }
    }
    buf[len++] = '(';
    for (size_t i = 0; i < n; i++) {
        len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s'%c'", i ? ", " : "", letters[i]);
    }
    snprintf(buf + len, sizeof(buf) - len, "%s)", n == 1 ? "," : "");
    return qd_arena_strdup(lw->arena, buf);
}

/* Element indices of swizzle `name`; 0 when it is not a swizzle, -1 with a diag when it names an
 * element beyond the vector. */
static int
swizzle(Lowerer *lw, const QdAst *node, const Expr *base, const char *name, uint32_t *idx, uint32_t *n)
{
    size_t len = strlen(name);
    if (len < 1 || len > 4) {
        return 0;
    }
    for (size_t g = 0; g < 3; g++) {
        bool all = true;
        for (size_t i = 0; i < len && all; i++) {
            const char *p = strchr(swizzle_groups[g], name[i]);
            all = p != NULL && name[i] != '\0';
            if (all) {
                idx[i] = (uint32_t)(p - swizzle_groups[g]);
            }
        }
        if (!all) {
            continue;
        }
        if (!base->is_vector) {
            return lw_error(lw, node, QD_ERR_SYNTAX, "swizzles ('%s') need a vector", name);
        }
        for (size_t i = 0; i < len; i++) {
            if (idx[i] >= base->rows) {
                char have[5] = {0};
                memcpy(have, swizzle_groups[g], base->rows < 4 ? base->rows : 4);
                return lw_error(lw, node, QD_ERR_SYNTAX, "vec%u only has attributes=%s, got=%s",
                                base->rows, char_tuple(lw, have, true), char_tuple(lw, name, false));
            }
        }
        *n = (uint32_t)len;
        return 1;
    }
    return 0;
}

int
lw_matrix_attribute(Lowerer *lw, const QdAst *node, const Expr *base, Expr *out)
{
    const char *name = node->name;
    uint32_t idx[4], n = 0;
    if (strcmp(name, "n") == 0 || strcmp(name, "m") == 0) {
        memset(out, 0, sizeof(*out));
        out->kind = EX_INT;
        out->ival = name[0] == 'n' ? base->rows : base->cols;
        return 0;
    }
    if (lw_matrix_is_method(name)) {
        memset(out, 0, sizeof(*out));
        out->kind = EX_BUILTIN;
        char buf[64];
        snprintf(buf, sizeof(buf), "matrix.%s", name);
        out->str = qd_arena_strdup(lw->arena, buf);
        out->items = QD_NEW(lw->arena, Expr);
        if (!out->str || !out->items) {
            return lw_nomem(lw);
        }
        out->items[0] = *base;
        out->nitems = 1;
        return 0;
    }
    int rc = swizzle(lw, node, base, name, idx, &n);
    if (rc < 0) {
        return -1;
    }
    if (rc == 0) {
        return lw_error(lw, node, QD_ERR_SYNTAX, "a vector/matrix has no attribute '%s'", name);
    }
    if (n == 1) {
        *out = base->items[idx[0]];
        return 0;
    }
    RETURN_IF_ERROR(lw_matrix_new(lw, n, 1, true, base->ty, out));
    for (uint32_t i = 0; i < n; i++) {
        out->items[i] = base->items[idx[i]];
    }
    return 0;
}

int
lw_matrix_store_attribute(Lowerer *lw, const QdAst *target, const Expr *base, const Expr *value)
{
    Expr t;
    RETURN_IF_ERROR(lw_matrix_attribute(lw, target, base, &t));
    if (t.kind == EX_MATRIX) {
        return lw_matrix_store(lw, target, &t, value);
    }
    if (t.kind != EX_LVALUE) {
        return lw_error(lw, target, QD_ERR_SYNTAX, "cannot assign to this attribute of a matrix");
    }
    return lw_store(lw, target, &t, value);
}

/* The items of a vector, or the rows of a matrix (as vectors), as a tuple (qd.static(v)). */
int
lw_matrix_as_tuple(Lowerer *lw, const Expr *m, Expr *out)
{
    memset(out, 0, sizeof(*out));
    out->kind = EX_TUPLE;
    out->nitems = m->rows;
    out->items = QD_NEW_ARRAY(lw->arena, Expr, m->rows ? m->rows : 1);
    if (!out->items) {
        return lw_nomem(lw);
    }
    for (uint32_t r = 0; r < m->rows; r++) {
        if (m->is_vector) {
            out->items[r] = m->items[r];
            continue;
        }
        RETURN_IF_ERROR(lw_matrix_new(lw, m->cols, 1, true, m->ty, &out->items[r]));
        memcpy(out->items[r].items, &m->items[r * m->cols], sizeof(Expr) * m->cols);
    }
    return 0;
}
