/* frontend/lower_static.c -- `qd.static(expr)`: Python evaluation at compile time.
 *
 * The host evaluates the expression's Python AST in the function's globals, with the kernel's
 * variables that the expression names bound as locals. A compile-time variable is bound to its
 * Python value. A runtime one is bound to a stand-in (host make_runtime) that knows the facts the
 * compiler knows -- a vector's n, a matrix's n and m, the element dtype, an ndarray's shape as
 * stand-ins of its extents, a struct's members -- so that `qd.static(v.n)` and
 * `qd.static(len(arr.shape))` work, as in the reference, where such values are Python objects of
 * the tracer. A stand-in passes through tuples, lists, enumerate and zip unchanged and turns back
 * into its runtime value when the result comes back (lw_from_handle -> lw_static_value):
 * `for k, x in qd.static(enumerate((a, b)))` binds x to a, then b. Arithmetic on stand-ins comes
 * back as an operation (lw_static_op) done with the kernel's operators. Each stand-in is an index
 * into lw->statics, valid for the whole compilation. The result itself must be compile-time (or
 * an ndarray, an alias): a bare runtime value is the reference's ValueError.
 */
#include "lower.h"

#include <string.h>

/* The names of NAME nodes under `node` (interned, duplicates allowed): the only variables the
 * expression can read. */
typedef QdVec(const char *) NameVec;

static int
collect_names(Lowerer *lw, const QdAst *node, NameVec *names)
{
    if (!node) {
        return 0;
    }
    if (node->kind == QD_AST_NAME && node->name) {
        const char *name = qd_intern(lw->m, node->name);
        if (!name || qd_vec_push(lw->arena, names, name) < 0) {
            return lw_nomem(lw);
        }
    }
    RETURN_IF_ERROR(collect_names(lw, node->x, names));
    RETURN_IF_ERROR(collect_names(lw, node->y, names));
    RETURN_IF_ERROR(collect_names(lw, node->z, names));
    for (uint32_t i = 0; i < node->a.len; i++) {
        RETURN_IF_ERROR(collect_names(lw, node->a.items[i], names));
    }
    for (uint32_t i = 0; i < node->b.len; i++) {
        RETURN_IF_ERROR(collect_names(lw, node->b.items[i], names));
    }
    return 0;
}

static bool
names_contain(const NameVec *names, const char *name)
{
    for (uint32_t i = 0; i < names->len; i++) {
        if (names->data[i] == name) {
            return true;
        }
    }
    return false;
}

/***** stand-ins *****/

static int static_handle(Lowerer *lw, const QdAst *node, const Expr *e, const char *name,
                         QdHandle *out);

/* A new stand-in for runtime value e (or extent `axis` of its shape when axis >= 0). */
static int
make_stand_in(Lowerer *lw, const Expr *e, int32_t axis, const char *name, QdHandle *out)
{
    QdRuntimeFacts facts = {0};
    facts.index = lw->statics.len;
    facts.kind = QD_RUNTIME_OTHER;
    facts.dtype = QD_TY_COUNT_;
    facts.name = name;
    StaticValue sv = {*e, axis};
    if (qd_vec_push(lw->arena, &lw->statics, sv) < 0) {
        return lw_nomem(lw);
    }
    if (axis >= 0) {
        facts.kind = QD_RUNTIME_SCALAR;
        facts.dtype = QD_TY_I32;
    } else if (e->kind == EX_VALUE || e->kind == EX_LVALUE) {
        facts.kind = QD_RUNTIME_SCALAR;
        facts.dtype = e->ty ? e->ty->kind : QD_TY_COUNT_;
    } else if (e->kind == EX_MATRIX) {
        facts.kind = e->is_vector ? QD_RUNTIME_VECTOR : QD_RUNTIME_MATRIX;
        facts.dtype = e->ty ? e->ty->kind : QD_TY_COUNT_;
        facts.n = e->rows;
        facts.m = e->cols;
    } else if (e->kind == EX_NDARRAY) {
        facts.kind = QD_RUNTIME_NDARRAY;
        facts.dtype = e->ty ? e->ty->kind : QD_TY_COUNT_;
        QdHandle *axes = QD_NEW_ARRAY(lw->arena, QdHandle, e->ndim ? e->ndim : 1);
        if (!axes) {
            return lw_nomem(lw);
        }
        for (uint32_t d = 0; d < e->ndim; d++) {
            RETURN_IF_ERROR(make_stand_in(lw, e, (int32_t)d, name, &axes[d]));
        }
        RETURN_IF_ERROR(lw->host->make_tuple(lw->host->self, lw->ctx, axes, e->ndim, &facts.shape));
    } else if (e->kind == EX_STRUCT || e->kind == EX_DICT) {
        /* `qd.static(state.vel)`: each member named by its key, a stand-in or a Python value. */
        const char **names = QD_NEW_ARRAY(lw->arena, const char *, e->nitems ? e->nitems : 1);
        QdHandle *values = QD_NEW_ARRAY(lw->arena, QdHandle, e->nitems ? e->nitems : 1);
        if (!names || !values) {
            return lw_nomem(lw);
        }
        facts.kind = QD_RUNTIME_STRUCT;
        for (uint32_t i = 0; i < e->nitems; i++) {
            if (e->keys[i].kind != EX_STR) {
                continue;
            }
            names[facts.nmembers] = e->keys[i].str;
            RETURN_IF_ERROR(static_handle(lw, NULL, &e->items[i], e->keys[i].str,
                                          &values[facts.nmembers]));
            facts.nmembers++;
        }
        facts.member_names = names;
        facts.member_values = values;
    }
    return lw->host->make_runtime(lw->host->self, lw->ctx, &facts, out);
}

/* The Python value a variable is bound to for static evaluation. */
static int
static_handle(Lowerer *lw, const QdAst *node, const Expr *e, const char *name, QdHandle *out)
{
    if (e->h) {
        *out = e->h;
        return 0;
    }
    if (lw_is_compile_time_scalar(e) || e->kind == EX_NONE || e->kind == EX_STR) {
        return lw_to_handle(lw, node, e, out);
    }
    if (e->kind == EX_TUPLE || e->kind == EX_SHAPE) {
        /* A list of values (some runtime), or an ndarray's shape: a tuple of stand-ins. */
        uint32_t n = e->kind == EX_TUPLE ? e->nitems : e->ndim;
        QdHandle *items = QD_NEW_ARRAY(lw->arena, QdHandle, n ? n : 1);
        if (!items) {
            return lw_nomem(lw);
        }
        for (uint32_t i = 0; i < n; i++) {
            RETURN_IF_ERROR(e->kind == EX_TUPLE
                                ? static_handle(lw, node, &e->items[i], name, &items[i])
                                : make_stand_in(lw, e, (int32_t)i, name, &items[i]));
        }
        return lw->host->make_tuple(lw->host->self, lw->ctx, items, n, out);
    }
    return make_stand_in(lw, e, -1, name, out);
}

int
lw_static_value(Lowerer *lw, const QdAst *node, int64_t index, Expr *out)
{
    if (index < 0 || index >= (int64_t)lw->statics.len) {
        return lw_error(lw, node, QD_ERR_INTERNAL, "stand-in %lld of an earlier compilation",
                        (long long)index);
    }
    const StaticValue *sv = &lw->statics.data[index];
    if (sv->axis >= 0) {
        return lw_shape_axis(lw, &sv->e, (uint32_t)sv->axis, out); /* read here, when used */
    }
    *out = sv->e;
    return 0;
}

/* The operations a RuntimeOp may name (quadrants/_static_value.py), as the kernel's operators. */
static const struct {
    const char *name; /* RuntimeOp._op */
    int arity;        /* 1 unary, 2 binary, 3 comparison */
    int op;           /* QdAstOp */
} static_ops[] = {
    {"add", 2, QD_BIN_ADD},       {"sub", 2, QD_BIN_SUB},          {"mul", 2, QD_BIN_MUL},
    {"truediv", 2, QD_BIN_DIV},   {"floordiv", 2, QD_BIN_FLOORDIV}, {"mod", 2, QD_BIN_MOD},
    {"pow", 2, QD_BIN_POW},       {"matmul", 2, QD_BIN_MATMUL},    {"and", 2, QD_BIN_BITAND},
    {"or", 2, QD_BIN_BITOR},      {"xor", 2, QD_BIN_BITXOR},       {"lshift", 2, QD_BIN_LSHIFT},
    {"rshift", 2, QD_BIN_RSHIFT}, {"lt", 3, QD_CMP_LT},            {"le", 3, QD_CMP_LE},
    {"gt", 3, QD_CMP_GT},         {"ge", 3, QD_CMP_GE},            {"eq", 3, QD_CMP_EQ},
    {"ne", 3, QD_CMP_NE},         {"neg", 1, QD_UNARY_MINUS},      {"pos", 1, QD_UNARY_PLUS},
    {"invert", 1, QD_UNARY_INVERT},
};

int
lw_static_op(Lowerer *lw, const QdAst *node, QdHandle h, const char *name, Expr *out)
{
    for (size_t i = 0; i < QD_ARRAY_LEN(static_ops); i++) {
        if (strcmp(static_ops[i].name, name) != 0) {
            continue;
        }
        uint32_t n = static_ops[i].arity == 1 ? 1 : 2;
        QdHandle operands, item;
        Expr e[2];
        if (lw->host->getattr(lw->host->self, lw->ctx, h, "_operands", &operands) != 0) {
            return lw_error(lw, node, QD_ERR_INTERNAL, "a runtime operation without operands");
        }
        for (uint32_t k = 0; k < n; k++) {
            RETURN_IF_ERROR(lw->host->getitem(lw->host->self, lw->ctx, operands, k, &item));
            RETURN_IF_ERROR(lw_from_handle(lw, node, item, &e[k]));
        }
        switch (static_ops[i].arity) {
        case 1: return lw_unary(lw, node, static_ops[i].op, &e[0], out);
        case 2: return lw_binary(lw, node, static_ops[i].op, &e[0], &e[1], out);
        default: return lw_compare(lw, node, static_ops[i].op, &e[0], &e[1], out);
        }
    }
    return lw_error(lw, node, QD_ERR_INTERNAL, "unknown runtime operation '%s'", name);
}

/***** evaluation *****/

int
lw_static_eval(Lowerer *lw, const QdAst *node, Expr *out)
{
    if (!node->pynode) {
        return lw_expr(lw, node, out);
    }
    if (node->kind == QD_AST_NAME) {
        /* A kernel-scope list or tuple (possibly of runtime values) stays what it is. */
        const char *name = qd_intern(lw->m, node->name);
        Var *v = name ? lw_lookup_local(lw, name) : NULL;
        if (v && v->e.kind == EX_TUPLE) {
            *out = v->e;
            return 0;
        }
        if (v && v->e.kind == EX_MATRIX) {
            return lw_matrix_as_tuple(lw, &v->e, out); /* for x in qd.static(v) */
        }
    }
    NameVec used = {0};
    RETURN_IF_ERROR(collect_names(lw, node, &used));
    uint32_t base = lw->frame->vars_base;
    uint32_t cap = used.len;
    const char **names = QD_NEW_ARRAY(lw->arena, const char *, cap ? cap : 1);
    QdHandle *values = QD_NEW_ARRAY(lw->arena, QdHandle, cap ? cap : 1);
    if (!names || !values) {
        return lw_nomem(lw);
    }
    uint32_t n = 0;
    for (uint32_t i = lw->vars.len; i-- > base && n < cap;) {
        const Var *v = &lw->vars.data[i];
        bool seen = false;
        for (uint32_t k = 0; k < n; k++) {
            seen |= names[k] == v->name;
        }
        if (seen || !names_contain(&used, v->name)) {
            continue; /* shadowed by an inner binding, or not read by the expression */
        }
        RETURN_IF_ERROR(static_handle(lw, node, &v->e, v->name, &values[n]));
        names[n] = v->name;
        n++;
    }
    QdHandle result;
    RETURN_IF_ERROR(lw->host->eval(lw->host->self, lw->ctx, lw->frame->scope, node->pynode, names,
                                   values, n, &result));
    QdHostValue hv;
    RETURN_IF_ERROR(lw->host->describe(lw->host->self, lw->ctx, result, &hv));
    bool is_array = hv.kind == QD_HOST_RUNTIME && hv.ival >= 0 && hv.ival < lw->statics.len &&
                    lw->statics.data[hv.ival].axis < 0 &&
                    lw->statics.data[hv.ival].e.kind == EX_NDARRAY;
    if ((hv.kind == QD_HOST_RUNTIME && !is_array) || hv.kind == QD_HOST_RUNTIME_OP) {
        /* An ndarray may be the result (an alias, as in the reference); no other runtime value. */
        return lw_error(lw, node, QD_ERR_COMPILATION,
                        "ValueError: Input to qd.static must be compile-time constants or global "
                        "pointers, instead of a runtime value");
    }
    return lw_from_handle(lw, node, result, out);
}
