/* frontend/lower_container.c -- compile-time tuples, lists and dicts in kernels.
 *
 * A tuple or list literal (EX_TUPLE) and a dict literal (EX_DICT) are compile-time containers of
 * Exprs: indexing needs compile-time keys, assigning to an element rebinds it, `+` and `*` on
 * tuples build new ones. A qd.BufferView argument is a dict too (lower_buffer_view.c): the dict
 * operations hand it over before treating it as a container. Here are their ExprOps.
 */
#include "lower.h"

#include <string.h>

/* Whether two compile-time keys are equal, as Python compares them. */
static bool
same_key(const Expr *a, const Expr *b)
{
    bool na = a->kind == EX_INT || a->kind == EX_BOOL || a->kind == EX_FLOAT;
    bool nb = b->kind == EX_INT || b->kind == EX_BOOL || b->kind == EX_FLOAT;
    if (na && nb) {
        double x = a->kind == EX_FLOAT ? a->fval : (double)a->ival;
        double y = b->kind == EX_FLOAT ? b->fval : (double)b->ival;
        return a->kind != EX_FLOAT && b->kind != EX_FLOAT ? a->ival == b->ival : x == y;
    }
    if (a->kind == EX_STR && b->kind == EX_STR) {
        return strcmp(a->str, b->str) == 0;
    }
    return a->kind == EX_NONE && b->kind == EX_NONE;
}

/* The item of a compile-time tuple, list or dict selected by compile-time indices. */
static Expr *
find_item(Lowerer *lw, const QdAst *node, const Expr *base, const Expr *idx, uint32_t n)
{
    if (base->kind == EX_DICT) {
        for (uint32_t i = 0; n == 1 && i < base->nitems; i++) {
            if (same_key(&base->keys[i], &idx[0])) {
                return &base->items[i];
            }
        }
        lw_error(lw, node, QD_ERR_COMPILATION, "KeyError: the key is not in the dict");
        return NULL;
    }
    if (n != 1 || (idx[0].kind != EX_INT && idx[0].kind != EX_BOOL)) {
        lw_error(lw, node, QD_ERR_SYNTAX, "a tuple or list in a kernel is indexed with a compile-time integer");
        return NULL;
    }
    int64_t i = idx[0].ival < 0 ? idx[0].ival + base->nitems : idx[0].ival;
    if (i < 0 || i >= (int64_t)base->nitems) {
        lw_error(lw, node, QD_ERR_COMPILATION, "IndexError: tuple index out of range");
        return NULL;
    }
    return &base->items[i];
}

/* The slot of a compile-time container (tuple, list, dict) that `index` selects, or NULL with a
 * diag; assignments rebind it. */
static Expr *
container_item(Lowerer *lw, const QdAst *node, const Expr *base, const QdAst *index)
{
    Expr idx[16];
    uint32_t n = 0;
    if (lw_collect_indices(lw, index, idx, &n) < 0) {
        return NULL;
    }
    return find_item(lw, node, base, idx, n);
}

/* `t[i]`, `d[k]` (both are also how `t[i] = v` finds the slot it rebinds). */
static int
container_subscript(Lowerer *lw, const QdAst *node, const Expr *base, const QdAst *index, Expr *out)
{
    Expr *item = container_item(lw, node, base, index);
    if (!item) {
        return -1;
    }
    *out = *item;
    return 0;
}

/* An element of a kernel-scope list or dict: rebound to the new value. An augmented assignment
 * to one goes on as to any compile-time value. */
static int
container_store_subscript(Lowerer *lw, const QdAst *node, const Expr *base, const QdAst *index,
                          const Expr *value, const QdAst *aug)
{
    if (aug) {
        return LW_DECLINED;
    }
    Expr *item = container_item(lw, node, base, index);
    if (!item) {
        return -1;
    }
    *item = *value;
    return 0;
}

/***** tuples and lists *****/

static int
tuple_subscript(Lowerer *lw, const QdAst *node, const Expr *base, const QdAst *index, Expr *out)
{
    if (index->kind == QD_AST_SLICE) {
        /* t[1:]: a shorter tuple, as Python slices it. */
        return lw_slice_items(lw, node, index, base->items, base->nitems, out);
    }
    return container_subscript(lw, node, base, index, out);
}

/* Whether e is a Quadrants scalar rather than a Python number: a kernel value, or a constant of a
 * Quadrants type (`qd.f64(2)`, an annotated func parameter bound to a constant). */
static bool
quadrants_scalar(const Expr *e)
{
    return e->kind == EX_VALUE || e->kind == EX_LVALUE || (lw_is_compile_time_scalar(e) && e->ty);
}

/* `t + u` of two tuples, `t * n` / `n * t` with compile-time int n. A kind with arithmetic of its
 * own (a vector facing a list) takes the operation instead, and so does a Quadrants scalar: as
 * in the reference, `[1, 2] * qd.f64(x)` is the vector [1, 2] times x, while `[1, 2] * 3` repeats
 * the list as Python does. */
static int
tuple_binary(Lowerer *lw, const QdAst *node, int op, const Expr *a, const Expr *b, Expr *out)
{
    uint64_t total;
    const Expr *seq = a->kind == EX_TUPLE ? a : b;
    const Expr *other = seq == a ? b : a;
    if (other->kind != EX_TUPLE && lw_expr_ops(other)->binary) {
        return LW_DECLINED;
    }
    if (quadrants_scalar(other)) {
        return lw_matrix_ops.binary(lw, node, op, a, b, out);
    }
    if (op == QD_BIN_ADD && a->kind == EX_TUPLE && b->kind == EX_TUPLE) {
        total = (uint64_t)a->nitems + b->nitems;
    } else if (op == QD_BIN_MUL && other->kind == EX_INT) {
        total = other->ival > 0 ? (uint64_t)seq->nitems * (uint64_t)other->ival : 0;
    } else {
        return lw_error(lw, node, QD_ERR_TYPE, "unsupported operand types for a tuple or list");
    }
    if (total > (1u << 20)) {
        return lw_error(lw, node, QD_ERR_SYNTAX, "tuple or list too long in a kernel");
    }
    Expr *items = QD_NEW_ARRAY(lw->arena, Expr, total ? total : 1);
    if (!items) {
        return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
    }
    for (uint64_t i = 0; i < total; i++) {
        if (op == QD_BIN_ADD) {
            items[i] = i < a->nitems ? a->items[i] : b->items[i - a->nitems];
        } else {
            items[i] = seq->items[i % seq->nitems];
        }
    }
    memset(out, 0, sizeof(*out));
    out->kind = EX_TUPLE;
    out->items = items;
    out->nitems = (uint32_t)total;
    return 0;
}

/* Each item read before anything is stored. */
static int
tuple_snapshot(Lowerer *lw, const QdAst *node, const Expr *e, Expr *out)
{
    *out = *e;
    out->items = QD_NEW_ARRAY(lw->arena, Expr, e->nitems ? e->nitems : 1);
    if (!out->items) {
        return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
    }
    for (uint32_t i = 0; i < e->nitems; i++) {
        RETURN_IF_ERROR(lw_snapshot(lw, node, &e->items[i], &out->items[i]));
    }
    return 0;
}

static int
tuple_unpack(Lowerer *lw, const QdAst *target, const Expr *value, Expr *out)
{
    (void)lw;
    (void)target;
    *out = *value;
    return 0;
}

/* A tuple or list compared with a Quadrants scalar: the vector it spells, element by element
 * (the reference's expressions take it so). */
static int
tuple_compare(Lowerer *lw, const QdAst *node, int op, const Expr *a, const Expr *b, Expr *out)
{
    const Expr *other = a->kind == EX_TUPLE ? b : a;
    bool ordering = op >= QD_CMP_EQ && op <= QD_CMP_GE;
    if (!ordering || !quadrants_scalar(other)) {
        return LW_DECLINED;
    }
    return lw_matrix_ops.compare(lw, node, op, a, b, out);
}

const ExprOps lw_tuple_ops = {
    .name = "tuple",
    .subscript = tuple_subscript,
    .store_subscript = container_store_subscript,
    .binary = tuple_binary,
    .compare = tuple_compare,
    .snapshot = tuple_snapshot,
    .unpack = tuple_unpack,
};

/***** dicts (and the buffer views that are dicts) *****/

/* A member of a (flattened) dataclass argument, or of a buffer view. */
static int
dict_attribute(Lowerer *lw, const QdAst *node, const Expr *base, Expr *out)
{
    const char *attr = node->name;
    if (lw_is_buffer_view(base)) {
        return lw_buffer_view_attribute(lw, node, base, attr, out);
    }
    if (lw_is_matrix_view(base)) {
        return lw_matrix_view_attribute(lw, node, base, attr, out);
    }
    for (uint32_t i = 0; i < base->nitems; i++) {
        if (base->keys[i].kind == EX_STR && strcmp(base->keys[i].str, attr) == 0) {
            *out = base->items[i];
            return 0;
        }
    }
    return lw_error(lw, node, QD_ERR_SYNTAX, "no member '%s'", attr);
}

static int
dict_subscript(Lowerer *lw, const QdAst *node, const Expr *base, const QdAst *index, Expr *out)
{
    if (lw_is_buffer_view(base)) {
        return lw_buffer_view_subscript(lw, node, base, index, out);
    }
    return container_subscript(lw, node, base, index, out);
}

/* A buffer view's element is stored through the lvalue its subscript gives. */
static int
dict_store_subscript(Lowerer *lw, const QdAst *node, const Expr *base, const QdAst *index,
                     const Expr *value, const QdAst *aug)
{
    if (lw_is_buffer_view(base)) {
        return LW_DECLINED;
    }
    return container_store_subscript(lw, node, base, index, value, aug);
}

const ExprOps lw_dict_ops = {
    .name = "dict",
    .attribute = dict_attribute,
    .subscript = dict_subscript,
    .store_subscript = dict_store_subscript,
};

/***** literals *****/

/* `(a, b)`, `[a, b]`: a compile-time tuple of the evaluated items. */
int
lw_sequence_literal(Lowerer *lw, const QdAst *node, Expr *out)
{
    memset(out, 0, sizeof(*out));
    out->kind = EX_TUPLE;
    out->nitems = node->a.len;
    out->items = QD_NEW_ARRAY(lw->arena, Expr, node->a.len ? node->a.len : 1);
    if (!out->items) {
        return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
    }
    for (uint32_t i = 0; i < node->a.len; i++) {
        if (node->a.items[i]->kind == QD_AST_STARRED) {
            return lw_error(lw, node->a.items[i], QD_ERR_SYNTAX, "Unsupported node \"Starred\"");
        }
        RETURN_IF_ERROR(lw_expr(lw, node->a.items[i], &out->items[i]));
    }
    return 0;
}

/* Entry `key: value` into dict d, which has room: a key already there takes the new value in its
 * place (Python's order and last-wins rule). */
static void
dict_put(Expr *d, const Expr *key, const Expr *value)
{
    for (uint32_t i = 0; i < d->nitems; i++) {
        if (same_key(&d->keys[i], key)) {
            d->items[i] = *value;
            return;
        }
    }
    d->keys[d->nitems] = *key;
    d->items[d->nitems++] = *value;
}

/* A Python object e with an `items()` method (a dict the kernel names) as an EX_DICT of its
 * entries; e unchanged when it has none. */
static int
host_dict(Lowerer *lw, const QdAst *node, Expr *e)
{
    QdHandle method, items, tuple;
    int rc = lw->host->getattr(lw->host->self, lw->ctx, e->h, "items", &method);
    if (rc != 0) {
        return rc < 0 ? -1 : 0;
    }
    RETURN_IF_ERROR(lw->host->call(lw->host->self, lw->ctx, method, NULL, 0, &items));
    RETURN_IF_ERROR(lw->host->to_tuple(lw->host->self, lw->ctx, items, &tuple));
    Expr entries;
    RETURN_IF_ERROR(lw_from_handle(lw, node, tuple, &entries));
    if (entries.kind != EX_TUPLE) {
        return 0;
    }
    Expr d = {.kind = EX_DICT};
    d.keys = QD_NEW_ARRAY(lw->arena, Expr, entries.nitems ? entries.nitems : 1);
    d.items = QD_NEW_ARRAY(lw->arena, Expr, entries.nitems ? entries.nitems : 1);
    if (!d.keys || !d.items) {
        return lw_nomem(lw);
    }
    for (uint32_t i = 0; i < entries.nitems; i++) {
        const Expr *kv = &entries.items[i];
        if (kv->kind != EX_TUPLE || kv->nitems != 2) {
            return 0;
        }
        dict_put(&d, &kv->items[0], &kv->items[1]);
    }
    *e = d;
    return 0;
}

/* `{k: v, **other}` with compile-time keys; `**` takes a compile-time dict's entries. */
int
lw_dict_literal(Lowerer *lw, const QdAst *node, Expr *out)
{
    uint32_t n = node->a.len;
    Expr *unpacked = QD_NEW_ARRAY(lw->arena, Expr, n ? n : 1);
    if (!unpacked) {
        return lw_nomem(lw);
    }
    uint32_t room = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (node->a.items[i]) {
            room++;
            continue;
        }
        RETURN_IF_ERROR(lw_expr(lw, node->b.items[i], &unpacked[i]));
        if (unpacked[i].kind == EX_PYOBJ) {
            RETURN_IF_ERROR(host_dict(lw, node->b.items[i], &unpacked[i]));
        }
        if (unpacked[i].kind != EX_DICT) {
            return lw_error(lw, node->b.items[i], QD_ERR_SYNTAX,
                            "'**' in a dict literal takes a compile-time dict");
        }
        room += unpacked[i].nitems;
    }
    memset(out, 0, sizeof(*out));
    out->kind = EX_DICT;
    out->keys = QD_NEW_ARRAY(lw->arena, Expr, room ? room : 1);
    out->items = QD_NEW_ARRAY(lw->arena, Expr, room ? room : 1);
    if (!out->keys || !out->items) {
        return lw_nomem(lw);
    }
    for (uint32_t i = 0; i < n; i++) {
        if (!node->a.items[i]) {
            for (uint32_t j = 0; j < unpacked[i].nitems; j++) {
                dict_put(out, &unpacked[i].keys[j], &unpacked[i].items[j]);
            }
            continue;
        }
        Expr key, value;
        RETURN_IF_ERROR(lw_expr(lw, node->a.items[i], &key));
        if (!lw_is_compile_time_scalar(&key) && key.kind != EX_STR && key.kind != EX_NONE) {
            return lw_error(lw, node->a.items[i], QD_ERR_SYNTAX, "dict keys in kernels must be compile-time values");
        }
        RETURN_IF_ERROR(lw_expr(lw, node->b.items[i], &value));
        if (value.kind == EX_LVALUE) {
            RETURN_IF_ERROR(lw_rvalue(lw, node->b.items[i], &value, &value));
        }
        dict_put(out, &key, &value);
    }
    return 0;
}

/***** comprehensions (compile-time) *****/

typedef QdVec(Expr) ExprVec;

/* The items of a compile-time iterable: a range with constant bounds, a tuple or list, or any
 * Python iterable. */
static int
static_items(Lowerer *lw, const QdAst *node, const Expr *it, Expr *out)
{
    if (it->kind == EX_TUPLE) {
        *out = *it;
        return 0;
    }
    if (it->kind == EX_ITER && it->iter->kind == IT_RANGE && it->iter->begin[0].kind == EX_INT &&
        it->iter->end[0].kind == EX_INT) {
        int64_t lo = it->iter->begin[0].ival, hi = it->iter->end[0].ival;
        uint32_t n = hi > lo ? (uint32_t)(hi - lo) : 0;
        if (hi - lo > 1 << 20) {
            return lw_error(lw, node, QD_ERR_SYNTAX, "comprehension over more than 2^20 items");
        }
        memset(out, 0, sizeof(*out));
        out->kind = EX_TUPLE;
        out->nitems = n;
        out->items = QD_NEW_ARRAY(lw->arena, Expr, n ? n : 1);
        if (!out->items) {
            return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
        }
        for (uint32_t i = 0; i < n; i++) {
            out->items[i].kind = EX_INT;
            out->items[i].ival = lo + (int64_t)i;
        }
        return 0;
    }
    if (it->kind == EX_PYOBJ) {
        QdHandle t;
        RETURN_IF_ERROR(lw->host->to_tuple(lw->host->self, lw->ctx, it->h, &t));
        return lw_from_handle(lw, node, t, out);
    }
    return lw_error(lw, node, QD_ERR_SYNTAX,
                    "comprehensions in kernels iterate over compile-time values (range of Python "
                    "ints, tuples, lists)");
}

static int
bind_comp_target(Lowerer *lw, const QdAst *target, const Expr *value)
{
    if (target->kind == QD_AST_NAME) {
        return lw_bind(lw, target->name, value, NULL);
    }
    if ((target->kind == QD_AST_TUPLE || target->kind == QD_AST_LIST) && value->kind == EX_TUPLE &&
        value->nitems == target->a.len) {
        for (uint32_t i = 0; i < target->a.len; i++) {
            RETURN_IF_ERROR(bind_comp_target(lw, target->a.items[i], &value->items[i]));
        }
        return 0;
    }
    return lw_error(lw, target, QD_ERR_SYNTAX, "unsupported comprehension target");
}

static int
comprehension(Lowerer *lw, const QdAst *node, uint32_t gen, ExprVec *out)
{
    if (gen == node->a.len) {
        Expr e;
        RETURN_IF_ERROR(lw_expr(lw, node->x, &e));
        if (e.kind == EX_LVALUE) {
            RETURN_IF_ERROR(lw_rvalue(lw, node->x, &e, &e));
        }
        return qd_vec_push(lw->arena, out, e) < 0 ? qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory") : 0;
    }
    const QdAst *g = node->a.items[gen];
    Expr it, items;
    RETURN_IF_ERROR(lw_expr(lw, g->y, &it));
    RETURN_IF_ERROR(static_items(lw, g->y, &it, &items));
    for (uint32_t i = 0; i < items.nitems; i++) {
        lw_push_scope(lw);
        int rc = bind_comp_target(lw, g->x, &items.items[i]);
        bool keep = true;
        for (uint32_t k = 0; rc == 0 && k < g->a.len && keep; k++) {
            Expr c;
            rc = lw_expr(lw, g->a.items[k], &c);
            if (rc == 0 && !lw_is_compile_time_scalar(&c)) {
                rc = lw_error(lw, g->a.items[k], QD_ERR_SYNTAX,
                              "comprehension conditions must be compile-time values");
            }
            keep = rc == 0 && (c.kind == EX_FLOAT ? c.fval != 0 : c.ival != 0);
        }
        if (rc == 0 && keep) {
            rc = comprehension(lw, node, gen + 1, out);
        }
        lw_pop_scope(lw);
        RETURN_IF_ERROR(rc);
    }
    return 0;
}

int
lw_listcomp(Lowerer *lw, const QdAst *node, Expr *out)
{
    ExprVec items = {0};
    RETURN_IF_ERROR(comprehension(lw, node, 0, &items));
    memset(out, 0, sizeof(*out));
    out->kind = EX_TUPLE;
    out->items = items.data;
    out->nitems = items.len;
    return 0;
}

/***** dispatch *****/
