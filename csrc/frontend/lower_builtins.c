/* frontend/lower_builtins.c -- the kernel-scope builtins: the table and the general ones.
 *
 * The host names every builtin it recognizes (qd.sqrt -> "sqrt", Python's range -> "range", ...);
 * builtins.def maps each name to its lowering, and `builtins[]` below is built from it. Here are
 * the compile-time ones (qd.static, static_assert), the iteration builtins (range, ndrange,
 * grouped, loop_config), conversions (cast, bit_cast, int/float/bool), len/tuple/list,
 * qd.zero/one and the optimisation hints. Math and atomics are lower_math.c's, random numbers
 * lower_random.c's, print() lower_print.c's. Builtins taking vectors/matrices reach
 * lower_matrix*.c first (lower_call.c), qd.simt.* lower_simt.c.
 */
#include "lower.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef QdIdVec IdVec;

const Expr *
lw_call_keyword(const CallArgs *c, const char *name)
{
    for (uint32_t i = 0; i < c->nkw; i++) {
        if (c->kw[i]->name && strcmp(c->kw[i]->name, name) == 0) {
            return &c->kwv[i];
        }
    }
    return NULL;
}

int
lw_expect_args(Lowerer *lw, const CallArgs *c, const char *name, uint32_t lo, uint32_t hi)
{
    if (c->npos < lo || c->npos > hi) {
        if (lo == hi) {
            return lw_error(lw, c->node, QD_ERR_SYNTAX, "%s() takes %u argument%s, %u given", name, lo,
                            lo == 1 ? "" : "s", c->npos);
        }
        return lw_error(lw, c->node, QD_ERR_SYNTAX, "%s() takes %u to %u arguments, %u given", name, lo,
                        hi, c->npos);
    }
    return 0;
}

/* The dtype named by an argument (qd.f32, float, int, bool), or NULL. */
const QdType *
lw_dtype_arg(const Expr *e)
{
    if (e && e->kind == EX_PYOBJ && e->hkind == QD_HOST_DTYPE) {
        return e->ty;
    }
    return NULL;
}

/***** compile-time evaluation *****/

int
lw_builtin_static(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    if (c->npos == 0) {
        return lw_error(lw, c->node, QD_ERR_SYNTAX, "qd.static() takes at least one argument");
    }
    if (c->npos == 1) {
        return lw_static_eval(lw, c->node->a.items[0], out);
    }
    memset(out, 0, sizeof(*out));
    out->kind = EX_TUPLE;
    out->nitems = c->npos;
    out->items = QD_NEW_ARRAY(lw->arena, Expr, c->npos);
    if (!out->items) {
        return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
    }
    for (uint32_t i = 0; i < c->npos; i++) {
        RETURN_IF_ERROR(lw_static_eval(lw, c->node->a.items[i], &out->items[i]));
    }
    return 0;
}

int
lw_builtin_static_assert(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    RETURN_IF_ERROR(lw_expect_args(lw, c, "static_assert", 1, 2));
    const Expr *cond = &c->pos[0];
    bool truth;
    if (lw_is_compile_time_scalar(cond)) {
        truth = cond->kind == EX_FLOAT ? cond->fval != 0 : cond->ival != 0;
    } else if (cond->kind == EX_NONE) {
        truth = false;
    } else if (lw_is_runtime(cond)) {
        return lw_error(lw, c->node, QD_ERR_TYPE, "Static assert with non-static condition");
    } else {
        QdHandle h;
        RETURN_IF_ERROR(lw_to_handle(lw, c->node, cond, &h));
        RETURN_IF_ERROR(lw->host->truth(lw->host->self, lw->ctx, h, &truth));
    }
    if (!truth) {
        const char *msg = c->npos > 1 && c->pos[1].kind == EX_STR ? c->pos[1].str : "";
        return lw_error(lw, c->node, QD_ERR_COMPILATION, "AssertionError: %s", msg);
    }
    out->kind = EX_VOID;
    return 0;
}

int
lw_builtin_static_print(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    QdSbuf sb;
    qd_sbuf_init(&sb);
    for (uint32_t i = 0; i < c->npos; i++) {
        const Expr *e = &c->pos[i];
        if (i) {
            qd_sbuf_putc(&sb, ' ');
        }
        switch (e->kind) {
        case EX_INT: qd_sbuf_printf(&sb, "%lld", (long long)e->ival); break;
        case EX_BOOL: qd_sbuf_puts(&sb, e->ival ? "True" : "False"); break;
        case EX_FLOAT: qd_sbuf_printf(&sb, "%.17g", e->fval); break;
        case EX_STR: qd_sbuf_puts(&sb, e->str); break;
        case EX_NONE: qd_sbuf_puts(&sb, "None"); break;
        default: qd_sbuf_puts(&sb, "<expr>"); break;
        }
    }
    char *text = qd_sbuf_take(&sb);
    int rc = text ? lw->host->print(lw->host->self, lw->ctx, text) : -1;
    free(text);
    out->kind = EX_VOID;
    return rc;
}

/***** iteration builtins *****/

static IterSpec *
new_iter(Lowerer *lw, IterKind kind, uint32_t ndim)
{
    IterSpec *it = QD_NEW(lw->arena, IterSpec);
    if (it) {
        it->kind = kind;
        it->ndim = ndim;
        for (uint32_t d = 0; d < 16; d++) {
            it->axes[d] = d;
        }
    }
    return it;
}

static int
check_bound(Lowerer *lw, const QdAst *node, const Expr *e, const char *what)
{
    bool is_range = strcmp(what, "range") == 0; /* range truncates float bounds (lower_loop.c) */
    const QdType *ty = e->kind == EX_INT || e->kind == EX_BOOL ? NULL : lw_dtype_of(lw, e);
    if (!is_range && (e->kind == EX_FLOAT || (ty && !qd_type_is_int(ty)))) {
        return lw_error(lw, node, QD_ERR_TYPE,
                        "TypeError when calling `ndrange`: Every argument of ndrange should be an "
                        "integer scalar or a tuple/list of (int, int).");
    }
    if (e->kind == EX_INT || e->kind == EX_BOOL) {
        return e->is_big ? lw_check_literal(lw, node, e) : 0; /* bounds are 64-bit at most */
    }
    if (!ty) {
        return lw_error(lw, node, QD_ERR_SYNTAX, "invalid %s bound", what);
    }
    if (!qd_type_is_int(ty) && !(is_range && qd_type_is_float(ty))) {
        return lw_error(lw, node, QD_ERR_TYPE, "%s bounds must be integers, got %s", what, lw_type_name(ty));
    }
    return 0;
}

int
lw_builtin_range(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    if (c->npos == 3) {
        return lw_error(lw, c->node, QD_ERR_SYNTAX,
                        "Range should have 1 or 2 arguments, found 3 (no step argument)");
    }
    RETURN_IF_ERROR(lw_expect_args(lw, c, "range", 1, 2));
    IterSpec *it = new_iter(lw, IT_RANGE, 1);
    if (!it) {
        return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
    }
    if (c->npos == 1) {
        it->begin[0].kind = EX_INT;
        it->end[0] = c->pos[0];
    } else {
        it->begin[0] = c->pos[0];
        it->end[0] = c->pos[1];
    }
    RETURN_IF_ERROR(check_bound(lw, c->node, &it->begin[0], "range"));
    RETURN_IF_ERROR(check_bound(lw, c->node, &it->end[0], "range"));
    memset(out, 0, sizeof(*out));
    out->kind = EX_ITER;
    out->iter = it;
    return 0;
}

#define QD_SBUF_TEXT(sb) ((sb).data ? (sb).data : "?")

/* The Python repr of compile-time value e (an axes entry), and its Python type name. */
static const char *
put_axis_repr(QdSbuf *sb, const Expr *e)
{
    switch (e->kind) {
    case EX_INT:
        qd_sbuf_printf(sb, "%lld", (long long)e->ival);
        return "int";
    case EX_BOOL:
        qd_sbuf_puts(sb, e->ival ? "True" : "False");
        return "bool";
    case EX_FLOAT:
        lw_put_float_repr(sb, e->fval);
        return "float";
    case EX_STR:
        qd_sbuf_printf(sb, "'%s'", e->str);
        return "str";
    case EX_NONE:
        qd_sbuf_puts(sb, "None");
        return "NoneType";
    default:
        qd_sbuf_puts(sb, "<qd.Expr>");
        return "Expr";
    }
}

/* axes=(...) of qd.ndrange: a permutation of range(ndim), checked with the reference's messages. */
static int
ndrange_axes(Lowerer *lw, const CallArgs *c, const Expr *axes, IterSpec *it, Expr *out)
{
    uint32_t n = axes->kind == EX_TUPLE ? axes->nitems : 1;
    const Expr *items = axes->kind == EX_TUPLE ? axes->items : axes;
    QdSbuf text;
    qd_sbuf_init(&text);
    qd_sbuf_putc(&text, '(');
    for (uint32_t k = 0; k < n; k++) {
        qd_sbuf_puts(&text, k ? ", " : "");
        put_axis_repr(&text, &items[k]);
    }
    qd_sbuf_puts(&text, n == 1 ? ",)" : ")");
    int rc = 0;
    bool seen[16] = {false};
    if (n != c->npos) {
        rc = lw_error(lw, c->node, QD_ERR_SYNTAX,
                      "qd.ndrange(axes=%s) has %u entries but ndrange was called with %u dimension "
                      "argument(s); they must match", QD_SBUF_TEXT(text), n, c->npos);
    }
    for (uint32_t k = 0; k < n && rc == 0; k++) {
        if (items[k].kind != EX_INT) {
            QdSbuf got;
            qd_sbuf_init(&got);
            const char *type = put_axis_repr(&got, &items[k]);
            rc = lw_error(lw, c->node, QD_ERR_TYPE,
                          "TypeError when calling `ndrange`: qd.ndrange(axes=%s) entries must be "
                          "Python ints; got %s (%s).", QD_SBUF_TEXT(text), type, QD_SBUF_TEXT(got));
            qd_sbuf_free(&got);
        }
    }
    for (uint32_t k = 0; k < n && rc == 0; k++) {
        int64_t a = items[k].ival;
        if (a < 0 || a >= (int64_t)c->npos || seen[a]) {
            rc = lw_error(lw, c->node, QD_ERR_SYNTAX, "qd.ndrange(axes=%s) is not a permutation of range(%u)",
                          QD_SBUF_TEXT(text), c->npos);
            break;
        }
        seen[a] = true;
        it->axes[k] = (uint32_t)a;
    }
    qd_sbuf_free(&text);
    RETURN_IF_ERROR(rc);
    memset(out, 0, sizeof(*out));
    out->kind = EX_ITER;
    out->iter = it;
    return 0;
}

int
lw_builtin_ndrange(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    if (c->npos > 16) {
        return lw_error(lw, c->node, QD_ERR_SYNTAX, "qd.ndrange supports at most 16 dimensions");
    }
    IterSpec *it = new_iter(lw, IT_NDRANGE, c->npos);
    if (!it) {
        return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
    }
    for (uint32_t d = 0; d < c->npos; d++) {
        const Expr *e = &c->pos[d];
        if (e->kind == EX_TUPLE) {
            if (e->nitems != 2) {
                return lw_error(lw, c->node, QD_ERR_SYNTAX,
                                "Every argument of ndrange should be a scalar or a tuple/list like (begin, end)");
            }
            it->begin[d] = e->items[0];
            it->end[d] = e->items[1];
        } else {
            it->begin[d].kind = EX_INT;
            it->end[d] = *e;
        }
        RETURN_IF_ERROR(check_bound(lw, c->node, &it->begin[d], "ndrange"));
        RETURN_IF_ERROR(check_bound(lw, c->node, &it->end[d], "ndrange"));
    }
    const Expr *axes = lw_call_keyword(c, "axes");
    if (axes && axes->kind != EX_NONE) {
        return ndrange_axes(lw, c, axes, it, out);
    }
    memset(out, 0, sizeof(*out));
    out->kind = EX_ITER;
    out->iter = it;
    return 0;
}

int
lw_builtin_grouped(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    RETURN_IF_ERROR(lw_expect_args(lw, c, "grouped", 1, 1));
    Expr leaf; /* a struct or vector/matrix field: the index space of its leaves */
    RETURN_IF_ERROR(lw_shape_leaf(lw, c->node, &c->pos[0], &leaf));
    const Expr *e = &leaf;
    IterSpec *it = new_iter(lw, IT_NDRANGE, 0);
    if (!it) {
        return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
    }
    if (e->kind == EX_ITER) {
        if (e->iter->grouped) {
            return lw_error(lw, c->node, QD_ERR_SYNTAX, "qd.grouped cannot be nested");
        }
        *it = *e->iter;
        if (it->kind == IT_RANGE) {
            it->kind = IT_NDRANGE;
            it->axes[0] = 0;
        }
    } else if (e->kind == EX_FIELD) {
        it->ndim = e->view->ndim;
        for (uint32_t d = 0; d < it->ndim; d++) {
            it->begin[d].kind = EX_INT;
            it->begin[d].ival = e->view->offset[d];
            it->end[d].kind = EX_INT;
            it->end[d].ival = e->view->offset[d] + e->view->shape[d];
        }
    } else if (e->kind == EX_NDARRAY) {
        /* Canonical indices; a permuted ndarray is walked in its physical order. */
        it->ndim = e->ndim;
        for (uint32_t d = 0; d < it->ndim; d++) {
            uint32_t extent = lw_ndarray_extent(lw, e, d);
            if (extent == QD_NO_VALUE) {
                return -1;
            }
            it->axes[d] = e->layout ? e->layout[d] : d;
            it->begin[d].kind = EX_INT;
            it->end[d] = lw_value(extent, qd_type_scalar(QD_TY_I32));
        }
    } else {
        return lw_error(lw, c->node, QD_ERR_SYNTAX, "qd.grouped takes qd.ndrange(...), a field or an ndarray");
    }
    it->grouped = true;
    memset(out, 0, sizeof(*out));
    out->kind = EX_ITER;
    out->iter = it;
    return 0;
}

int
lw_builtin_loop_config(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    if (c->npos) {
        return lw_error(lw, c->node, QD_ERR_SYNTAX, "qd.loop_config() takes keyword arguments only");
    }
    LoopConfig cfg = {0};
    cfg.set = true;
    for (uint32_t i = 0; i < c->nkw; i++) {
        const char *k = c->kw[i]->name ? c->kw[i]->name : "";
        const Expr *v = &c->kwv[i];
        if (strcmp(k, "block_dim") == 0) {
            if (v->kind == EX_NONE) {
                continue;
            }
            if (v->kind != EX_INT || v->ival <= 0 || v->ival > 1024) {
                return lw_error(lw, c->node, QD_ERR_SYNTAX, "block_dim must be an integer from 1 to 1024");
            }
            cfg.block_dim = (uint32_t)v->ival;
        } else if (strcmp(k, "min_blocks_per_sm") == 0) {
            if (v->kind == EX_NONE) {
                continue;
            }
            if (v->kind != EX_INT || v->ival <= 0 || v->ival > 32) {
                return lw_error(lw, c->node, QD_ERR_SYNTAX, "min_blocks_per_sm must be an integer from 1 to 32");
            }
            cfg.min_blocks_per_sm = (uint32_t)v->ival;
        } else if (strcmp(k, "serialize") == 0) {
            cfg.serialize = (v->kind == EX_BOOL || v->kind == EX_INT) && v->ival != 0;
        } else if (strcmp(k, "parallelize") == 0) {
            cfg.serialize |= v->kind == EX_INT && v->ival == 1;
        } else if (strcmp(k, "name") == 0) {
            if (v->kind == EX_STR) {
                cfg.name = qd_intern(lw->m, v->str);
            } else if (v->kind != EX_NONE) {
                return lw_error(lw, c->node, QD_ERR_SYNTAX, "loop_config name must be a string");
            }
        } else if (strcmp(k, "block_dim_adaptive") != 0 && strcmp(k, "bit_vectorize") != 0) {
            return lw_error(lw, c->node, QD_ERR_TYPE,
                            "TypeError when calling `loop_config`: loop_config() got an unexpected keyword "
                            "argument '%s'.", k);
        }
    }
    lw->loop_config = cfg;
    out->kind = EX_VOID;
    return 0;
}

/***** conversions *****/

/* int(x) / float(x) / qd.cast(x, T) / qd.i32(x) on compile-time scalars: Python semantics. */
int
lw_builtin_cast(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    RETURN_IF_ERROR(lw_expect_args(lw, c, "cast", 2, 2));
    const QdType *ty = lw_dtype_arg(&c->pos[1]);
    if (!ty) {
        return lw_error(lw, c->node, QD_ERR_TYPE, "qd.cast() needs a scalar type as its second argument");
    }
    return lw_convert(lw, c->node, &c->pos[0], ty, out);
}

int
lw_builtin_bit_cast(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    RETURN_IF_ERROR(lw_expect_args(lw, c, "bit_cast", 2, 2));
    const QdType *ty = lw_dtype_arg(&c->pos[1]);
    Expr v;
    if (!ty) {
        return lw_error(lw, c->node, QD_ERR_TYPE, "qd.bit_cast() needs a scalar type as its second argument");
    }
    RETURN_IF_ERROR(lw_rvalue(lw, c->node, &c->pos[0], &v));
    if (qd_type_bits(v.ty) != qd_type_bits(ty)) {
        return lw_error(lw, c->node, QD_ERR_COMPILATION,
                        "ValueError: qd.bit_cast needs types of the same width (%s -> %s)", lw_type_name(v.ty), lw_type_name(ty));
    }
    uint32_t id = lw_emit_value(lw, QD_OP_BITCAST, ty, v.id, 0);
    *out = lw_value(id, ty);
    return id == QD_NO_VALUE ? -1 : 0;
}

int
lw_builtin_py_int(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    RETURN_IF_ERROR(lw_expect_args(lw, c, "int", 1, 1));
    const Expr *x = &c->pos[0];
    if (x->is_big) {
        *out = *x; /* already a Python int */
        return 0;
    }
    if (lw_is_compile_time_scalar(x)) {
        memset(out, 0, sizeof(*out));
        out->kind = EX_INT;
        out->ival = x->kind == EX_FLOAT ? (int64_t)x->fval : x->ival;
        return 0;
    }
    return lw_convert(lw, c->node, x, qd_type_scalar(lw->opt->default_ip), out);
}

int
lw_builtin_py_float(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    RETURN_IF_ERROR(lw_expect_args(lw, c, "float", 1, 1));
    const Expr *x = &c->pos[0];
    if (lw_is_compile_time_scalar(x)) {
        memset(out, 0, sizeof(*out));
        out->kind = EX_FLOAT;
        out->fval = x->kind == EX_FLOAT || x->is_big ? x->fval : (double)x->ival;
        return 0;
    }
    return lw_convert(lw, c->node, x, qd_type_scalar(lw->opt->default_fp), out);
}

int
lw_builtin_py_bool(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    RETURN_IF_ERROR(lw_expect_args(lw, c, "bool", 1, 1));
    const Expr *x = &c->pos[0];
    if (lw_is_compile_time_scalar(x)) {
        memset(out, 0, sizeof(*out));
        out->kind = EX_BOOL;
        out->ival = x->kind == EX_FLOAT ? x->fval != 0 : x->ival != 0;
        return 0;
    }
    Expr v;
    RETURN_IF_ERROR(lw_rvalue(lw, c->node, x, &v));
    uint32_t zero = qd_type_is_float(v.ty) ? lw_const_float(lw, v.ty, 0) : lw_const_int(lw, v.ty, 0);
    const QdType *u1 = qd_type_scalar(QD_TY_U1);
    uint32_t id = lw_emit_value(lw, QD_OP_NE, u1, v.id, zero);
    *out = lw_value(id, u1);
    return id == QD_NO_VALUE ? -1 : 0;
}

/* tuple(x) / list(x) of a kernel-scope sequence (or of a compile-time Python iterable). */
int
lw_builtin_sequence(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    if (c->npos == 0) {
        memset(out, 0, sizeof(*out));
        out->kind = EX_TUPLE;
        return 0;
    }
    RETURN_IF_ERROR(lw_expect_args(lw, c, "tuple", 1, 1));
    const Expr *x = &c->pos[0];
    if (x->kind == EX_TUPLE) {
        *out = *x;
        out->h = 0;
        return 0;
    }
    if (x->kind == EX_PYOBJ || (x->kind == EX_STR && x->h)) {
        QdHandle t;
        RETURN_IF_ERROR(lw->host->to_tuple(lw->host->self, lw->ctx, x->h, &t));
        return lw_from_handle(lw, c->node, t, out);
    }
    return lw_error(lw, c->node, QD_ERR_SYNTAX, "tuple()/list() of this value is not supported in kernels");
}

int
lw_builtin_len(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    RETURN_IF_ERROR(lw_expect_args(lw, c, "len", 1, 1));
    const Expr *x = &c->pos[0];
    memset(out, 0, sizeof(*out));
    out->kind = EX_INT;
    if (x->kind == EX_TUPLE || x->kind == EX_DICT) {
        out->ival = x->nitems;
    } else if (x->kind == EX_SHAPE) {
        out->ival = x->ndim;
    } else if (x->kind == EX_FIELD && x->view->ndim > 0) {
        out->ival = x->view->shape[0];
    } else if (x->kind == EX_STR) {
        out->ival = (int64_t)strlen(x->str);
    } else {
        return lw_error(lw, c->node, QD_ERR_SYNTAX, "len() of this value is not supported in kernels");
    }
    return 0;
}

/* qd.zero(x) / qd.one(x) of a scalar: k (0 or 1) of the type of `x * k` (x's type promoted with
 * an integer literal's: a u8 gives an i32); of a Python number, the Python number. Vectors and
 * matrices are lw_matrix_call's. */
static int
zero_one(Lowerer *lw, const CallArgs *c, int64_t k, Expr *out)
{
    const char *name = k ? "one" : "zero";
    RETURN_IF_ERROR(lw_expect_args(lw, c, name, 1, 1));
    const Expr *x = &c->pos[0];
    memset(out, 0, sizeof(*out));
    out->kind = x->kind == EX_FLOAT ? EX_FLOAT : EX_INT;
    out->ival = k;
    out->fval = (double)k;
    if (lw_is_python_scalar(x)) {
        return 0;
    }
    const QdType *ty = lw_dtype_of(lw, x);
    if (!ty) {
        return lw_error(lw, c->node, QD_ERR_TYPE, "qd.%s takes a scalar, vector or matrix", name);
    }
    Expr lit = *out;
    return lw_convert(lw, c->node, &lit, lw_promote(ty, lw_literal_type(lw, &lit)), out);
}

int
lw_builtin_zero(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    return zero_one(lw, c, 0, out);
}

int
lw_builtin_one(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    return zero_one(lw, c, 1, out);
}

/***** optimisation hints *****/

static int
no_keywords(Lowerer *lw, const CallArgs *c, const char *name)
{
    if (c->nkw) {
        return lw_error(lw, c->node, QD_ERR_SYNTAX, "qd.%s() takes no keyword arguments", name);
    }
    return 0;
}

/* qd.assume_in_range(val, base, low, high): the program promises base + low <= val < base + high.
 * The value is val itself. val and base are scalars of one type (a literal takes default_ip /
 * default_fp), low and high compile-time integers, as the reference requires. */
int
lw_builtin_assume_in_range(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    RETURN_IF_ERROR(no_keywords(lw, c, "assume_in_range"));
    RETURN_IF_ERROR(lw_expect_args(lw, c, "assume_in_range", 4, 4));
    const QdType *tv = lw_dtype_of(lw, &c->pos[0]);
    const QdType *tb = lw_dtype_of(lw, &c->pos[1]);
    if (!tv || !tb || c->pos[0].kind == EX_MATRIX || c->pos[1].kind == EX_MATRIX) {
        return lw_error(lw, c->node, QD_ERR_TYPE, "qd.assume_in_range(val, base, low, high): val and "
                                                  "base must be scalars");
    }
    for (uint32_t k = 2; k < 4; k++) {
        if (c->pos[k].kind != EX_INT) {
            return lw_error(lw, c->node, QD_ERR_TYPE, "qd.assume_in_range(val, base, low, high): %s "
                                                      "must be a compile-time integer",
                            k == 2 ? "low" : "high");
        }
    }
    if (tv->kind != tb->kind) {
        return lw_error(lw, c->node, QD_ERR_TYPE,
                        "unsupported operand type(s) for 'range_assumption': '%s' and '%s'", lw_type_name(tv),
                        lw_type_name(tb));
    }
    return lw_rvalue(lw, c->node, &c->pos[0], out);
}

/* Whether e is a field (scalar, vector/matrix or struct field). */
static bool
is_field_arg(const Expr *e)
{
    return e->kind == EX_FIELD ||
           (e->kind == EX_PYOBJ && (e->hkind == QD_HOST_MATRIX_FIELD || e->hkind == QD_HOST_STRUCT_FIELD));
}

/* qd.block_local(*fields) / qd.cache_read_only(*fields): caching hints that leave results as they
 * are; every argument must be a field. */
static int
field_hint(Lowerer *lw, const CallArgs *c, const char *name, Expr *out)
{
    RETURN_IF_ERROR(no_keywords(lw, c, name));
    for (uint32_t i = 0; i < c->npos; i++) {
        if (!is_field_arg(&c->pos[i])) {
            return lw_error(lw, c->node, QD_ERR_TYPE, "qd.%s() takes fields (argument %u is not a field)",
                            name, i + 1);
        }
    }
    out->kind = EX_VOID;
    return 0;
}

int
lw_builtin_block_local(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    return field_hint(lw, c, "block_local", out);
}

int
lw_builtin_cache_read_only(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    return field_hint(lw, c, "cache_read_only", out);
}

/* The shape of a field or SNode argument of qd.rescale_index (which: "first" / "second"). */
static int
rescale_shape(Lowerer *lw, const CallArgs *c, const Expr *e, const char *which, int64_t *shape,
              uint32_t *ndim)
{
    if (e->kind == EX_FIELD) {
        *ndim = e->view->ndim;
        memcpy(shape, e->view->shape, sizeof(int64_t) * e->view->ndim);
        return 0;
    }
    bool ok = is_field_arg(e);
    QdHandle h;
    if (!ok && e->kind == EX_PYOBJ) {
        int rc = lw->host->getattr(lw->host->self, lw->ctx, e->h, "_qd_snode", &h);
        if (rc < 0) {
            return rc;
        }
        ok = rc == 0;
    }
    Expr t;
    if (ok) {
        int rc = lw->host->getattr(lw->host->self, lw->ctx, e->h, "shape", &h);
        if (rc < 0) {
            return rc;
        }
        ok = rc == 0;
    }
    if (ok) {
        RETURN_IF_ERROR(lw_from_handle(lw, c->node, h, &t));
        ok = t.kind == EX_TUPLE && t.nitems <= 16;
        for (uint32_t i = 0; ok && i < t.nitems; i++) {
            ok = t.items[i].kind == EX_INT;
            shape[i] = t.items[i].ival;
        }
        *ndim = ok ? t.nitems : 0;
    }
    if (!ok) {
        return lw_error(lw, c->node, QD_ERR_COMPILATION,
                        "AssertionError: The %s argument must be a field or an SNode", which);
    }
    return 0;
}

/* qd.rescale_index(a, b, I): index I of a's index space mapped onto b's, axis by axis over the
 * axes all three have: divided by a.shape[k] // b.shape[k] where a is larger, multiplied by
 * b.shape[k] // a.shape[k] where it is smaller. A vector of the same length as I. */
int
lw_builtin_rescale_index(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    RETURN_IF_ERROR(no_keywords(lw, c, "rescale_index"));
    RETURN_IF_ERROR(lw_expect_args(lw, c, "rescale_index", 3, 3));
    int64_t sa[16], sb[16];
    uint32_t na = 0, nb = 0;
    RETURN_IF_ERROR(rescale_shape(lw, c, &c->pos[0], "first", sa, &na));
    RETURN_IF_ERROR(rescale_shape(lw, c, &c->pos[1], "second", sb, &nb));
    const Expr *index = &c->pos[2];
    Expr loaded;
    bool ok = index->kind == EX_TUPLE || (index->kind == EX_MATRIX && index->cols == 1);
    if (ok) {
        RETURN_IF_ERROR(lw_matrix_loaded(lw, c->node, &index, &loaded));
    }
    for (uint32_t k = 0; ok && k < index->nitems; k++) {
        const Expr *x = &index->items[k];
        const QdType *ty = lw_dtype_of(lw, x);
        ok = x->kind != EX_MATRIX && ty && qd_type_is_int(ty);
    }
    if (!ok || index->nitems == 0) {
        return lw_error(lw, c->node, QD_ERR_COMPILATION,
                        "AssertionError: The third argument must be an index (list, qd.Vector, or "
                        "Expr with TensorType)");
    }
    uint32_t n = index->nitems;
    Expr *items = QD_NEW_ARRAY(lw->arena, Expr, n);
    if (!items) {
        return lw_nomem(lw);
    }
    for (uint32_t k = 0; k < n; k++) {
        items[k] = index->items[k];
        if (k >= na || k >= nb || sa[k] == sb[k]) {
            continue;
        }
        Expr factor = {0};
        factor.kind = EX_INT;
        factor.ival = sa[k] > sb[k] ? sa[k] / sb[k] : sb[k] / sa[k];
        int bin = sa[k] > sb[k] ? QD_BIN_FLOORDIV : QD_BIN_MUL;
        RETURN_IF_ERROR(lw_binary(lw, c->node, bin, &index->items[k], &factor, &items[k]));
    }
    return lw_matrix_from_scalars(lw, c->node, items, n, 1, true, NULL, out);
}

/***** the table *****/

typedef struct Builtin {
    const char *name; /* as the host reports it */
    BuiltinFn fn;     /* lowering */
    QdOp op;          /* opcode for table-driven families */
    unsigned flags;   /* BI_* */
} Builtin;

static const Builtin builtins[] = {
#define QD_BUILTIN(name, fn, op, flags) {name, fn, op, flags},
#include "builtins.def"
#undef QD_BUILTIN
};

static const Builtin *
find_builtin(const char *name)
{
    for (size_t i = 0; i < QD_ARRAY_LEN(builtins); i++) {
        if (strcmp(builtins[i].name, name) == 0) {
            return &builtins[i];
        }
    }
    return NULL;
}

unsigned
lw_builtin_flags(const char *name)
{
    const Builtin *b = find_builtin(name);
    return b ? b->flags : 0;
}

bool
lw_builtin_is_elementwise(const char *name)
{
    return (lw_builtin_flags(name) & BI_ELEMENTWISE) != 0;
}

/* qd.volatile_load(x[i]): the element, read by a load that is never merged, moved or removed. */
int
lw_builtin_volatile_load(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    RETURN_IF_ERROR(lw_expect_args(lw, c, "volatile_load", 1, 1));
    const Expr *target = &c->pos[0];
    if (target->kind != EX_LVALUE || target->space != QD_SPACE_GLOBAL) {
        return lw_error(lw, c->node, QD_ERR_SYNTAX,
                        "qd.volatile_load takes an element of a field or ndarray (x[i])");
    }
    uint32_t id = lw_emit_value(lw, QD_OP_LOAD_VOLATILE, target->ty, target->id, 0);
    if (id == QD_NO_VALUE) {
        return -1;
    }
    *out = lw_value(id, target->ty);
    return 0;
}

/* qd.get_addr(f, indices): the address of element f[indices] (indices: an int, a list or tuple,
 * or an integer vector), as a u64; for a vector/matrix field, of the element's component 0. */
int
lw_builtin_get_addr(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    RETURN_IF_ERROR(lw_expect_args(lw, c, "get_addr", 2, 2));
    Expr elem = {0};
    if (c->node->a.len == 2) {
        RETURN_IF_ERROR(lw_subscript(lw, c->node, &c->pos[0], c->node->a.items[1], &elem));
    }
    if (elem.kind == EX_MATRIX && elem.nitems > 0) {
        elem = elem.items[0];
    }
    if (elem.kind != EX_LVALUE || elem.space != QD_SPACE_GLOBAL) {
        return lw_error(lw, c->node, QD_ERR_SYNTAX,
                        "qd.get_addr takes a field and the indices of one of its elements");
    }
    const QdType *ty = qd_type_scalar(QD_TY_U64);
    uint32_t id = lw_emit_value(lw, QD_OP_PTR_TO_INT, ty, elem.id, 0);
    if (id == QD_NO_VALUE) {
        return -1;
    }
    *out = lw_value(id, ty);
    return 0;
}

/* qd.clock_counter(): the processor's cycle counter, an i64. */
int
lw_builtin_clock_counter(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    RETURN_IF_ERROR(lw_expect_args(lw, c, "clock_counter", 0, 0));
    const QdType *ty = qd_type_scalar(QD_TY_I64);
    uint32_t id = lw_emit_value(lw, QD_OP_CLOCK, ty, QD_NO_VALUE, QD_NO_VALUE);
    if (id == QD_NO_VALUE) {
        return -1;
    }
    *out = lw_value(id, ty);
    return 0;
}

/***** vectors and matrices *****/


/* Calls builtin `name` with the given arguments (for element-wise vector/matrix calls). */
int
lw_call_builtin(Lowerer *lw, const QdAst *node, const char *name, const MatrixCall *mc, Expr *out)
{
    const Builtin *b = find_builtin(name);
    if (b) {
        CallArgs c = {node, (Expr *)mc->pos, mc->npos, (const QdAst **)mc->kw, (Expr *)mc->kwv,
                      mc->nkw};
        return b->fn(lw, &c, b->op, out);
    }
    return lw_error(lw, node, QD_ERR_SYNTAX, "qd.%s is not supported in kernels yet", name);
}

int
lw_builtin(Lowerer *lw, const char *name, const CallArgs *c, Expr *out)
{
    const Builtin *b = find_builtin(name);
    if (b) {
        return b->fn(lw, c, b->op, out);
    }
    return lw_error(lw, c->node, QD_ERR_SYNTAX, "qd.%s is not supported in kernels yet", name);
}
