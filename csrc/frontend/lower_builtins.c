/* frontend/lower_builtins.c -- the kernel-scope builtins: qd.sqrt, range, qd.atomic_add, ...
 *
 * The host names every builtin it recognizes (qd.sqrt -> "sqrt", Python's range -> "range", ...);
 * `builtins[]` below maps each name to its lowering. Typing follows spec/api.md 0.4 and 0.15:
 * sqrt/exp/log of an integer give default_fp, trigonometric functions reject integers, atan2
 * gives f64 only when an operand is f64, min/max/select promote. print() is lower_print.c's;
 * builtins taking vectors/matrices go to lower_matrix*.c first (lower_call.c), qd.simt.* to
 * lower_simt.c.
 */
#include "lower.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef QdIdVec IdVec;

typedef int (*BuiltinFn)(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out);

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

static int
expect_args(Lowerer *lw, const CallArgs *c, const char *name, uint32_t lo, uint32_t hi)
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
static const QdType *
dtype_arg(const Expr *e)
{
    if (e && e->kind == EX_PYOBJ && e->hkind == QD_HOST_DTYPE) {
        return e->ty;
    }
    return NULL;
}

/***** compile-time evaluation *****/

static int
b_static(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
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

static int
b_static_assert(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    RETURN_IF_ERROR(expect_args(lw, c, "static_assert", 1, 2));
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

static int
b_static_print(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
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
    if (e->kind == EX_FLOAT) {
        return lw_error(lw, node, QD_ERR_TYPE, "%s bounds must be integers, got a float", what);
    }
    if (e->kind == EX_INT || e->kind == EX_BOOL) {
        return e->is_big ? lw_check_literal(lw, node, e) : 0; /* bounds are 64-bit at most */
    }
    const QdType *ty = lw_dtype_of(lw, e);
    if (!ty) {
        return lw_error(lw, node, QD_ERR_SYNTAX, "invalid %s bound", what);
    }
    if (!qd_type_is_int(ty)) {
        return lw_error(lw, node, QD_ERR_TYPE, "%s bounds must be integers, got %s", what, lw_type_name(ty));
    }
    return 0;
}

static int
b_range(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    if (c->npos == 3) {
        return lw_error(lw, c->node, QD_ERR_SYNTAX,
                        "Range should have 1 or 2 arguments, found 3 (no step argument)");
    }
    RETURN_IF_ERROR(expect_args(lw, c, "range", 1, 2));
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

static int
b_ndrange(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
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
        if (axes->kind != EX_TUPLE || axes->nitems != c->npos) {
            return lw_error(lw, c->node, QD_ERR_SYNTAX, "axes must be a permutation of range(%u)", c->npos);
        }
        bool seen[16] = {false};
        for (uint32_t k = 0; k < c->npos; k++) {
            const Expr *a = &axes->items[k];
            if (a->kind != EX_INT) {
                return lw_error(lw, c->node, QD_ERR_TYPE, "axes entries must be integers");
            }
            if (a->ival < 0 || a->ival >= (int64_t)c->npos || seen[a->ival]) {
                return lw_error(lw, c->node, QD_ERR_SYNTAX, "axes must be a permutation of range(%u)", c->npos);
            }
            seen[a->ival] = true;
            it->axes[k] = (uint32_t)a->ival;
        }
    }
    memset(out, 0, sizeof(*out));
    out->kind = EX_ITER;
    out->iter = it;
    return 0;
}

static int
b_grouped(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    RETURN_IF_ERROR(expect_args(lw, c, "grouped", 1, 1));
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

static int
b_loop_config(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
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
            return lw_error(lw, c->node, QD_ERR_SYNTAX, "qd.loop_config() got an unexpected keyword '%s'", k);
        }
    }
    lw->loop_config = cfg;
    out->kind = EX_VOID;
    return 0;
}

/***** conversions *****/

/* int(x) / float(x) / qd.cast(x, T) / qd.i32(x) on compile-time scalars: Python semantics. */
static int
b_cast(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    RETURN_IF_ERROR(expect_args(lw, c, "cast", 2, 2));
    const QdType *ty = dtype_arg(&c->pos[1]);
    if (!ty) {
        return lw_error(lw, c->node, QD_ERR_TYPE, "qd.cast() needs a scalar type as its second argument");
    }
    return lw_convert(lw, c->node, &c->pos[0], ty, out);
}

static int
b_bit_cast(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    RETURN_IF_ERROR(expect_args(lw, c, "bit_cast", 2, 2));
    const QdType *ty = dtype_arg(&c->pos[1]);
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

static int
b_py_int(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    RETURN_IF_ERROR(expect_args(lw, c, "int", 1, 1));
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

static int
b_py_float(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    RETURN_IF_ERROR(expect_args(lw, c, "float", 1, 1));
    const Expr *x = &c->pos[0];
    if (lw_is_compile_time_scalar(x)) {
        memset(out, 0, sizeof(*out));
        out->kind = EX_FLOAT;
        out->fval = x->kind == EX_FLOAT || x->is_big ? x->fval : (double)x->ival;
        return 0;
    }
    return lw_convert(lw, c->node, x, qd_type_scalar(lw->opt->default_fp), out);
}

static int
b_py_bool(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    RETURN_IF_ERROR(expect_args(lw, c, "bool", 1, 1));
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

/***** math *****/

/* Unary math: op is the QIR opcode; the sig column of ops.def tells float-only from numeric. */
static int
b_unary_math(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    const char *name = qd_op_info[op].text;
    bool rounding = op == QD_OP_FLOOR || op == QD_OP_CEIL || op == QD_OP_ROUND;
    RETURN_IF_ERROR(expect_args(lw, c, name, 1, rounding ? 2 : 1));
    const Expr *x = &c->pos[0];
    bool float_only = qd_op_info[op].sig == SIG_FLOAT1;
    bool int_to_fp = op == QD_OP_SQRT || op == QD_OP_RSQRT || op == QD_OP_EXP || op == QD_OP_LOG;
    const QdType *ty = lw_dtype_of(lw, x);
    if (!ty) {
        Expr tmp;
        return lw_rvalue(lw, c->node, x, &tmp);
    }
    if (float_only && !qd_type_is_float(ty)) {
        if (!int_to_fp) {
            return lw_error(lw, c->node, QD_ERR_TYPE, "'%s' takes real inputs only, got %s", name, lw_type_name(ty));
        }
        ty = qd_type_scalar(lw->opt->default_fp);
    }
    Expr v;
    RETURN_IF_ERROR(lw_convert(lw, c->node, x, ty, &v));
    uint32_t id = lw_emit_value(lw, op, ty, v.id, 0);
    if (id == QD_NO_VALUE) {
        return -1;
    }
    *out = lw_value(id, ty);
    /* floor/ceil/round(x, dtype=T) (or positionally) convert the result. */
    const Expr *dt = c->npos > 1 ? &c->pos[1] : lw_call_keyword(c, "dtype");
    if (dt && dt->kind != EX_NONE) {
        const QdType *target = dtype_arg(dt);
        if (!target) {
            return lw_error(lw, c->node, QD_ERR_TYPE, "dtype must be a scalar type");
        }
        return lw_convert(lw, c->node, out, target, out);
    }
    return 0;
}

/* popcnt / clz of an integer: i32 on every backend (spec 0.15). */
static int
b_bitcount(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    const char *name = qd_op_info[op].text;
    RETURN_IF_ERROR(expect_args(lw, c, name, 1, 1));
    Expr v;
    RETURN_IF_ERROR(lw_rvalue(lw, c->node, &c->pos[0], &v));
    if (!qd_type_is_int(v.ty) || v.ty->kind == QD_TY_U1) {
        return lw_error(lw, c->node, QD_ERR_TYPE, "%s() takes an integer, got %s", name, lw_type_name(v.ty));
    }
    const QdType *i32 = qd_type_scalar(QD_TY_I32);
    uint32_t id = lw_emit_value(lw, op, i32, v.id, 0);
    *out = lw_value(id, i32);
    return id == QD_NO_VALUE ? -1 : 0;
}

static int
b_abs(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    RETURN_IF_ERROR(expect_args(lw, c, "abs", 1, 1));
    const Expr *x = &c->pos[0];
    if (x->is_big || (x->kind == EX_INT && x->ival == INT64_MIN)) {
        return lw_python_number_op(lw, c->node, "abs", x, NULL, out);
    }
    if (lw_is_compile_time_scalar(x)) {
        *out = *x;
        out->h = 0;
        if (x->kind == EX_FLOAT) {
            out->fval = fabs(x->fval);
        } else {
            out->kind = EX_INT;
            out->ival = x->ival < 0 ? -x->ival : x->ival;
        }
        return 0;
    }
    Expr v;
    RETURN_IF_ERROR(lw_rvalue(lw, c->node, x, &v));
    uint32_t id = lw_emit_value(lw, QD_OP_ABS, v.ty, v.id, 0);
    *out = lw_value(id, v.ty);
    return id == QD_NO_VALUE ? -1 : 0;
}

/* Binary math with promotion: raw_div, raw_mod, atan2, bit_shr, pow. */
static int
b_binary_math(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    const char *name = qd_op_info[op].text;
    RETURN_IF_ERROR(expect_args(lw, c, name, 2, 2));
    if (op == QD_OP_POW) {
        return lw_binary(lw, c->node, QD_BIN_POW, &c->pos[0], &c->pos[1], out);
    }
    const QdType *ta = lw_dtype_of(lw, &c->pos[0]), *tb = lw_dtype_of(lw, &c->pos[1]);
    if (!ta || !tb) {
        return lw_error(lw, c->node, QD_ERR_TYPE, "%s() takes scalar arguments", name);
    }
    const QdType *ty = lw_promote(ta, tb);
    if (op == QD_OP_ATAN2) {
        bool f64 = ta->kind == QD_TY_F64 || tb->kind == QD_TY_F64;
        ty = qd_type_scalar(f64 ? QD_TY_F64 : QD_TY_F32);
    } else if (op == QD_OP_LSHR) {
        if (!qd_type_is_int(ta) || !qd_type_is_int(tb)) {
            return lw_error(lw, c->node, QD_ERR_TYPE, "bit_shr needs integer operands");
        }
        ty = ta;
    }
    Expr a, b;
    RETURN_IF_ERROR(lw_convert(lw, c->node, &c->pos[0], ty, &a));
    RETURN_IF_ERROR(lw_convert(lw, c->node, &c->pos[1], op == QD_OP_LSHR ? tb : ty, &b));
    uint32_t id = lw_emit_value(lw, op, ty, a.id, b.id);
    *out = lw_value(id, ty);
    return id == QD_NO_VALUE ? -1 : 0;
}

static int
b_minmax(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    const char *name = qd_op_info[op].text;
    const Expr *args = c->pos;
    uint32_t n = c->npos;
    if (n == 1 && args[0].kind == EX_TUPLE) {
        args = args[0].items;
        n = c->pos[0].nitems;
    }
    if (n == 0) {
        return lw_error(lw, c->node, QD_ERR_SYNTAX, "%s() needs at least one argument", name);
    }
    Expr acc = args[0];
    for (uint32_t i = 1; i < n; i++) {
        const Expr *b = &args[i];
        if (lw_is_python_scalar(&acc) && lw_is_python_scalar(b)) {
            double x = acc.kind == EX_FLOAT ? acc.fval : (double)acc.ival;
            double y = b->kind == EX_FLOAT ? b->fval : (double)b->ival;
            bool take_b = op == QD_OP_MIN ? y < x : y > x;
            if (acc.kind != EX_FLOAT && b->kind != EX_FLOAT) {
                take_b = op == QD_OP_MIN ? b->ival < acc.ival : b->ival > acc.ival;
            }
            if (take_b) {
                acc = *b;
            }
            continue;
        }
        const QdType *ta = lw_dtype_of(lw, &acc), *tb = lw_dtype_of(lw, b);
        if (!ta || !tb) {
            return lw_error(lw, c->node, QD_ERR_TYPE, "%s() takes scalar arguments", name);
        }
        const QdType *ty = lw_promote(ta, tb);
        Expr x, y;
        RETURN_IF_ERROR(lw_convert(lw, c->node, &acc, ty, &x));
        RETURN_IF_ERROR(lw_convert(lw, c->node, b, ty, &y));
        uint32_t id = lw_emit_value(lw, op, ty, x.id, y.id);
        if (id == QD_NO_VALUE) {
            return -1;
        }
        acc = lw_value(id, ty);
    }
    *out = acc;
    return 0;
}

static int
b_select(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    RETURN_IF_ERROR(expect_args(lw, c, "select", 3, 3));
    Expr cond;
    RETURN_IF_ERROR(lw_rvalue(lw, c->node, &c->pos[0], &cond));
    if (!qd_type_is_int(cond.ty)) {
        return lw_error(lw, c->node, QD_ERR_TYPE, "select() conditions must be integers");
    }
    const QdType *ta = lw_dtype_of(lw, &c->pos[1]), *tb = lw_dtype_of(lw, &c->pos[2]);
    if (!ta || !tb) {
        return lw_error(lw, c->node, QD_ERR_TYPE, "select() takes scalar values");
    }
    const QdType *ty = lw_promote(ta, tb);
    Expr a, b;
    RETURN_IF_ERROR(lw_convert(lw, c->node, &c->pos[1], ty, &a));
    RETURN_IF_ERROR(lw_convert(lw, c->node, &c->pos[2], ty, &b));
    QdInst *inst = lw_emit(lw, QD_OP_SELECT, 3);
    if (!inst) {
        return -1;
    }
    inst->args[0] = cond.id;
    inst->args[1] = a.id;
    inst->args[2] = b.id;
    *out = lw_value(qd_inst_set_result(lw->f, inst, ty, NULL), ty);
    return out->id == QD_NO_VALUE ? -1 : 0;
}

/***** frexp *****/

static uint32_t
select_value(Lowerer *lw, const QdType *ty, uint32_t c, uint32_t a, uint32_t b)
{
    QdInst *inst = lw_emit(lw, QD_OP_SELECT, 3);
    if (!inst) {
        return QD_NO_VALUE;
    }
    inst->args[0] = c;
    inst->args[1] = a;
    inst->args[2] = b;
    return qd_inst_set_result(lw->f, inst, ty, NULL);
}

/* Mantissa and exponent of x's bits (x = m * 2^e, 0.5 <= |m| < 1) for a normal number;
 * `extra` is subtracted from the exponent (for pre-scaled subnormals). */
static void
split_float(Lowerer *lw, const QdType *ty, uint32_t x, int64_t extra, uint32_t *m, uint32_t *e)
{
    bool f64 = ty->kind == QD_TY_F64;
    const QdType *u = qd_type_scalar(f64 ? QD_TY_U64 : QD_TY_U32);
    const QdType *i32 = qd_type_scalar(QD_TY_I32);
    int mant = f64 ? 52 : 23;
    int64_t emask = f64 ? 0x7ff : 0xff, bias = f64 ? 1023 : 127;
    uint32_t bits = lw_emit_value(lw, QD_OP_BITCAST, u, x, 0);
    uint32_t ef = lw_emit_value(lw, QD_OP_LSHR, u, bits, lw_const_int(lw, u, mant));
    ef = lw_emit_value(lw, QD_OP_AND, u, ef, lw_const_int(lw, u, emask));
    uint32_t ei = lw_emit_value(lw, QD_OP_CAST, i32, ef, 0);
    *e = lw_emit_value(lw, QD_OP_SUB, i32, ei, lw_const_int(lw, i32, bias - 1 + extra));
    uint32_t keep = lw_const_int(lw, u, (int64_t)~((uint64_t)emask << mant));
    uint32_t mb = lw_emit_value(lw, QD_OP_AND, u, bits, keep);
    mb = lw_emit_value(lw, QD_OP_OR, u, mb, lw_const_int(lw, u, (bias - 1) << mant));
    *m = lw_emit_value(lw, QD_OP_BITCAST, ty, mb, 0);
}

/* qd.frexp(x) -> (m, e) with x = m * 2^e, 0.5 <= |m| < 1, as numpy.frexp; zero, infinities
 * and NaN give (x, 0). */
static int
b_frexp(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    RETURN_IF_ERROR(expect_args(lw, c, "frexp", 1, 1));
    const QdType *ty = lw_dtype_of(lw, &c->pos[0]);
    if (!ty || !qd_type_is_float(ty) || (ty->kind != QD_TY_F32 && ty->kind != QD_TY_F64)) {
        return lw_error(lw, c->node, QD_ERR_TYPE, "frexp() takes an f32 or f64 value");
    }
    bool f64 = ty->kind == QD_TY_F64;
    const QdType *i32 = qd_type_scalar(QD_TY_I32);
    const QdType *u1 = qd_type_scalar(QD_TY_U1);
    Expr xv;
    RETURN_IF_ERROR(lw_convert(lw, c->node, &c->pos[0], ty, &xv));
    uint32_t x = xv.id;
    uint32_t m, e, sm, se;
    split_float(lw, ty, x, 0, &m, &e);
    /* Subnormals: scale into the normal range first. */
    int scale = f64 ? 54 : 25;
    uint32_t xs = lw_emit_value(lw, QD_OP_MUL, ty, x, lw_const_float(lw, ty, ldexp(1.0, scale)));
    split_float(lw, ty, xs, scale, &sm, &se);
    uint32_t ax = lw_emit_value(lw, QD_OP_ABS, ty, x, 0);
    double tiny = f64 ? 2.2250738585072014e-308 : 1.1754943508222875e-38;
    uint32_t sub = lw_emit_value(lw, QD_OP_LT, u1, ax, lw_const_float(lw, ty, tiny));
    m = select_value(lw, ty, sub, sm, m);
    e = select_value(lw, i32, sub, se, e);
    /* Zero, infinities, NaN: (x, 0). */
    uint32_t zero = lw_emit_value(lw, QD_OP_EQ, u1, x, lw_const_float(lw, ty, 0.0));
    uint32_t fin = lw_emit_value(lw, QD_OP_LT, u1, ax, lw_const_float(lw, ty, INFINITY));
    uint32_t ok = lw_emit_value(lw, QD_OP_AND, u1, fin, lw_emit_value(lw, QD_OP_NOT, u1, zero, 0));
    m = select_value(lw, ty, ok, m, x);
    e = select_value(lw, i32, ok, e, lw_const_int(lw, i32, 0));
    if (m == QD_NO_VALUE || e == QD_NO_VALUE) {
        return -1;
    }
    memset(out, 0, sizeof(*out));
    out->kind = EX_TUPLE;
    out->nitems = 2;
    out->items = QD_NEW_ARRAY(lw->arena, Expr, 2);
    if (!out->items) {
        return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
    }
    out->items[0] = lw_value(m, ty);
    out->items[1] = lw_value(e, i32);
    return 0;
}

/***** random numbers *****/

/* A random value of type ty from 64 random bits: floats uniform in [0, 1) (every value a
 * multiple of 2^-mantissa bits), integers over their type's whole range. */
static int
random_value(Lowerer *lw, const QdAst *node, const QdType *ty, Expr *out)
{
    const QdType *u64 = qd_type_scalar(QD_TY_U64);
    uint32_t bits;
    RETURN_IF_ERROR(lw_random_bits(lw, node, &bits));
    if (!qd_type_is_float(ty)) {
        uint32_t id = bits;
        if (ty->kind == QD_TY_U1) {
            id = lw_emit_value(lw, QD_OP_LSHR, u64, bits, lw_const_int(lw, u64, 63));
        }
        id = lw_emit_value(lw, QD_OP_CAST, ty, id, 0);
        *out = lw_value(id, ty);
        return id == QD_NO_VALUE ? -1 : 0;
    }
    /* Mantissa-sized integers scaled by a power of two are exact in the target type. */
    int keep = ty->kind == QD_TY_F64 ? 53 : ty->kind == QD_TY_F32 ? 24 : ty->kind == QD_TY_F16 ? 11 : 8;
    const QdType *wide = ty->kind == QD_TY_F64 ? ty : qd_type_scalar(QD_TY_F32);
    uint32_t top = lw_emit_value(lw, QD_OP_LSHR, u64, bits, lw_const_int(lw, u64, 64 - keep));
    uint32_t f = lw_emit_value(lw, QD_OP_CAST, wide, top, 0);
    uint32_t scale = lw_const_float(lw, wide, ldexp(1.0, -keep));
    uint32_t id = lw_emit_value(lw, QD_OP_MUL, wide, f, scale);
    if (wide != ty) {
        id = lw_emit_value(lw, QD_OP_CAST, ty, id, 0);
    }
    *out = lw_value(id, ty);
    return id == QD_NO_VALUE ? -1 : 0;
}

static const QdType *
random_dtype(const CallArgs *c, const char *kw, const QdType *dflt)
{
    const Expr *d = c->npos ? &c->pos[0] : lw_call_keyword(c, kw);
    if (!d || d->kind == EX_NONE) {
        return dflt;
    }
    return dtype_arg(d);
}

static int
b_random(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    RETURN_IF_ERROR(expect_args(lw, c, "random", 0, 1));
    const QdType *ty = random_dtype(c, "dtype", qd_type_scalar(lw->opt->default_fp));
    if (!ty) {
        return lw_error(lw, c->node, QD_ERR_TYPE, "qd.random() takes a scalar type");
    }
    return random_value(lw, c->node, ty, out);
}

/* Standard normal numbers by the Box-Muller transform. */
static int
b_randn(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    RETURN_IF_ERROR(expect_args(lw, c, "randn", 0, 1));
    const QdType *ty = random_dtype(c, "dt", qd_type_scalar(lw->opt->default_fp));
    if (!ty || !qd_type_is_float(ty)) {
        return lw_error(lw, c->node, QD_ERR_TYPE, "qd.randn() takes a floating-point type");
    }
    Expr u1, u2;
    RETURN_IF_ERROR(random_value(lw, c->node, ty, &u1));
    RETURN_IF_ERROR(random_value(lw, c->node, ty, &u2));
    /* 1 - u1 lies in (0, 1]: the logarithm stays finite. */
    uint32_t one = lw_const_float(lw, ty, 1.0);
    uint32_t v1 = lw_emit_value(lw, QD_OP_SUB, ty, one, u1.id);
    uint32_t lg = lw_emit_value(lw, QD_OP_LOG, ty, v1, 0);
    uint32_t m2 = lw_emit_value(lw, QD_OP_MUL, ty, lg, lw_const_float(lw, ty, -2.0));
    uint32_t r = lw_emit_value(lw, QD_OP_SQRT, ty, m2, 0);
    uint32_t ang = lw_emit_value(lw, QD_OP_MUL, ty, u2.id, lw_const_float(lw, ty, 6.283185307179586));
    uint32_t cs = lw_emit_value(lw, QD_OP_COS, ty, ang, 0);
    uint32_t id = lw_emit_value(lw, QD_OP_MUL, ty, r, cs);
    *out = lw_value(id, ty);
    return id == QD_NO_VALUE ? -1 : 0;
}

/***** atomics *****/

static int
b_atomic(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    const char *name = qd_op_info[op].text;
    uint32_t want = op == QD_OP_ATOMIC_CAS ? 3 : 2;
    RETURN_IF_ERROR(expect_args(lw, c, name, want, want));
    const Expr *target = &c->pos[0];
    if (target->kind != EX_LVALUE) {
        return lw_error(lw, c->node, QD_ERR_SYNTAX,
                        "cannot use a non-writable target as the first operand of '%s'", name);
    }
    bool int_only = qd_op_info[op].sig == SIG_ATOMIC_INT || op == QD_OP_ATOMIC_CAS;
    if (int_only && !qd_type_is_int(target->ty)) {
        return lw_error(lw, c->node, QD_ERR_TYPE, "'%s' needs an integer target, got %s", name,
                        lw_type_name(target->ty));
    }
    Expr v[2];
    for (uint32_t i = 1; i < want; i++) {
        const QdType *from = lw_dtype_of(lw, &c->pos[i]);
        if (int_only && from && qd_type_is_float(from)) {
            return lw_error(lw, c->node, QD_ERR_TYPE, "'%s' needs integer operands", name);
        }
        if (from && !lw_is_compile_time_scalar(&c->pos[i]) &&
            ((qd_type_is_float(from) && !qd_type_is_float(target->ty)) ||
             (qd_type_is_float(from) == qd_type_is_float(target->ty) &&
              qd_type_bits(from) > qd_type_bits(target->ty)))) {
            RETURN_IF_ERROR(lw_warn(lw, c->node, "QuadrantsCastWarning",
                                    "Atomic %s may lose precision: %s <- %s", name + 7,
                                    lw_type_name(target->ty), lw_type_name(from)));
        }
        RETURN_IF_ERROR(lw_convert(lw, c->node, &c->pos[i], target->ty, &v[i - 1]));
    }
    if (!target->is_global && op != QD_OP_ATOMIC_CAS) {
        /* A thread's own variable: no other thread sees it, a plain update is exact. */
        static const QdOp plain[] = {[QD_OP_ATOMIC_ADD] = QD_OP_ADD, [QD_OP_ATOMIC_SUB] = QD_OP_SUB,
                                     [QD_OP_ATOMIC_MUL] = QD_OP_MUL, [QD_OP_ATOMIC_MIN] = QD_OP_MIN,
                                     [QD_OP_ATOMIC_MAX] = QD_OP_MAX, [QD_OP_ATOMIC_AND] = QD_OP_AND,
                                     [QD_OP_ATOMIC_OR] = QD_OP_OR, [QD_OP_ATOMIC_XOR] = QD_OP_XOR,
                                     [QD_OP_ATOMIC_XCHG] = QD_OP_COUNT_};
        Expr old;
        RETURN_IF_ERROR(lw_rvalue(lw, c->node, target, &old));
        Expr nv = v[0];
        if (plain[op] != QD_OP_COUNT_) {
            nv = lw_value(lw_emit_value(lw, plain[op], target->ty, old.id, v[0].id), target->ty);
        }
        RETURN_IF_ERROR(lw_store(lw, c->node, target, &nv));
        *out = old;
        return 0;
    }
    QdInst *inst = lw_emit(lw, op, want);
    if (!inst) {
        return -1;
    }
    inst->args[0] = target->id;
    for (uint32_t i = 1; i < want; i++) {
        inst->args[i] = v[i - 1].id;
    }
    *out = lw_value(qd_inst_set_result(lw->f, inst, target->ty, NULL), target->ty);
    return out->id == QD_NO_VALUE ? -1 : 0;
}

/* tuple(x) / list(x) of a kernel-scope sequence (or of a compile-time Python iterable). */
static int
b_sequence(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    if (c->npos == 0) {
        memset(out, 0, sizeof(*out));
        out->kind = EX_TUPLE;
        return 0;
    }
    RETURN_IF_ERROR(expect_args(lw, c, "tuple", 1, 1));
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

static int
b_len(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    RETURN_IF_ERROR(expect_args(lw, c, "len", 1, 1));
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
    RETURN_IF_ERROR(expect_args(lw, c, name, 1, 1));
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

static int
b_zero(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    return zero_one(lw, c, 0, out);
}

static int
b_one(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
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
static int
b_assume_in_range(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    RETURN_IF_ERROR(no_keywords(lw, c, "assume_in_range"));
    RETURN_IF_ERROR(expect_args(lw, c, "assume_in_range", 4, 4));
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

static int
b_block_local(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    return field_hint(lw, c, "block_local", out);
}

static int
b_cache_read_only(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
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
static int
b_rescale_index(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    RETURN_IF_ERROR(no_keywords(lw, c, "rescale_index"));
    RETURN_IF_ERROR(expect_args(lw, c, "rescale_index", 3, 3));
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
} Builtin;

static const Builtin builtins[] = {
    {"static", b_static, QD_OP_COUNT_},
    {"static_assert", b_static_assert, QD_OP_COUNT_},
    {"static_print", b_static_print, QD_OP_COUNT_},
    {"range", b_range, QD_OP_COUNT_},
    {"ndrange", b_ndrange, QD_OP_COUNT_},
    {"grouped", b_grouped, QD_OP_COUNT_},
    {"loop_config", b_loop_config, QD_OP_COUNT_},
    {"cast", b_cast, QD_OP_COUNT_},
    {"bit_cast", b_bit_cast, QD_OP_COUNT_},
    {"int", b_py_int, QD_OP_COUNT_},
    {"float", b_py_float, QD_OP_COUNT_},
    {"bool", b_py_bool, QD_OP_COUNT_},
    {"sqrt", b_unary_math, QD_OP_SQRT},
    {"rsqrt", b_unary_math, QD_OP_RSQRT},
    {"exp", b_unary_math, QD_OP_EXP},
    {"log", b_unary_math, QD_OP_LOG},
    {"sin", b_unary_math, QD_OP_SIN},
    {"cos", b_unary_math, QD_OP_COS},
    {"tan", b_unary_math, QD_OP_TAN},
    {"tanh", b_unary_math, QD_OP_TANH},
    {"asin", b_unary_math, QD_OP_ASIN},
    {"acos", b_unary_math, QD_OP_ACOS},
    {"atan", b_unary_math, QD_OP_ATAN},
    {"floor", b_unary_math, QD_OP_FLOOR},
    {"ceil", b_unary_math, QD_OP_CEIL},
    {"round", b_unary_math, QD_OP_ROUND},
    {"abs", b_abs, QD_OP_ABS},
    {"popcnt", b_bitcount, QD_OP_POPCNT},
    {"clz", b_bitcount, QD_OP_CLZ},
    {"atan2", b_binary_math, QD_OP_ATAN2},
    {"pow", b_binary_math, QD_OP_POW},
    {"raw_div", b_binary_math, QD_OP_DIV},
    {"raw_mod", b_binary_math, QD_OP_REM},
    {"bit_shr", b_binary_math, QD_OP_LSHR},
    {"min", b_minmax, QD_OP_MIN},
    {"max", b_minmax, QD_OP_MAX},
    {"select", b_select, QD_OP_COUNT_},
    {"atomic_add", b_atomic, QD_OP_ATOMIC_ADD},
    {"atomic_sub", b_atomic, QD_OP_ATOMIC_SUB},
    {"atomic_mul", b_atomic, QD_OP_ATOMIC_MUL},
    {"atomic_min", b_atomic, QD_OP_ATOMIC_MIN},
    {"atomic_max", b_atomic, QD_OP_ATOMIC_MAX},
    {"atomic_and", b_atomic, QD_OP_ATOMIC_AND},
    {"atomic_or", b_atomic, QD_OP_ATOMIC_OR},
    {"atomic_xor", b_atomic, QD_OP_ATOMIC_XOR},
    {"atomic_exchange", b_atomic, QD_OP_ATOMIC_XCHG},
    {"atomic_cas", b_atomic, QD_OP_ATOMIC_CAS},
    {"print", lw_builtin_print, QD_OP_COUNT_},
    {"random", b_random, QD_OP_COUNT_},
    {"frexp", b_frexp, QD_OP_COUNT_},
    {"randn", b_randn, QD_OP_COUNT_},
    {"len", b_len, QD_OP_COUNT_},
    {"zero", b_zero, QD_OP_COUNT_},
    {"one", b_one, QD_OP_COUNT_},
    {"tuple", b_sequence, QD_OP_COUNT_},
    {"list", b_sequence, QD_OP_COUNT_},
    {"assume_in_range", b_assume_in_range, QD_OP_COUNT_},
    {"block_local", b_block_local, QD_OP_COUNT_},
    {"cache_read_only", b_cache_read_only, QD_OP_COUNT_},
    {"rescale_index", b_rescale_index, QD_OP_COUNT_},
};

/***** vectors and matrices *****/

int
lw_minmax(Lowerer *lw, const QdAst *node, QdOp op, const Expr *a, const Expr *b, Expr *out)
{
    Expr args[2] = {*a, *b};
    CallArgs c = {node, args, 2, NULL, NULL, 0};
    return b_minmax(lw, &c, op, out);
}

/* Calls builtin `name` with the given arguments (for element-wise vector/matrix calls). */
int
lw_call_builtin(Lowerer *lw, const QdAst *node, const char *name, const MatrixCall *mc, Expr *out)
{
    for (size_t i = 0; i < QD_ARRAY_LEN(builtins); i++) {
        if (strcmp(builtins[i].name, name) == 0) {
            CallArgs c = {node, (Expr *)mc->pos, mc->npos, (const QdAst **)mc->kw, (Expr *)mc->kwv,
                          mc->nkw};
            return builtins[i].fn(lw, &c, builtins[i].op, out);
        }
    }
    return lw_error(lw, node, QD_ERR_SYNTAX, "qd.%s is not supported in kernels yet", name);
}

int
lw_builtin(Lowerer *lw, const char *name, const CallArgs *c, Expr *out)
{
    for (size_t i = 0; i < QD_ARRAY_LEN(builtins); i++) {
        if (strcmp(builtins[i].name, name) == 0) {
            return builtins[i].fn(lw, c, builtins[i].op, out);
        }
    }
    return lw_error(lw, c->node, QD_ERR_SYNTAX, "qd.%s is not supported in kernels yet", name);
}
