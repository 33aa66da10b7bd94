/* frontend/lower_math.c -- the math and atomic builtins: qd.sqrt, qd.atan2, min, max, qd.select,
 * qd.frexp, qd.atomic_add, ...
 *
 * Rows of builtins.def whose op column is the QIR opcode each family emits. Typing follows
 * spec/api.md 0.4 and 0.15: sqrt/exp/log of an integer give default_fp, trigonometric functions
 * reject integers, atan2 gives f64 only when an operand is f64, min/max/select promote. Vector
 * and matrix arguments are taken element by element before these run (BI_ELEMENTWISE).
 */
#include "lower.h"

#include <math.h>
#include <string.h>

/***** math *****/

/* Unary math: op is the QIR opcode; the sig column of ops.def tells float-only from numeric. */
int
lw_builtin_unary_math(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    const char *name = qd_op_info[op].text;
    bool rounding = op == QD_OP_FLOOR || op == QD_OP_CEIL || op == QD_OP_ROUND;
    RETURN_IF_ERROR(lw_expect_args(lw, c, name, 1, rounding ? 2 : 1));
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
            return lw_error(lw, c->node, QD_ERR_TYPE, "'%s' takes real inputs only, however '%s' is provided.",
                            name, lw_type_name(ty));
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
        const QdType *target = lw_dtype_arg(dt);
        if (!target) {
            return lw_error(lw, c->node, QD_ERR_TYPE, "dtype must be a scalar type");
        }
        return lw_convert(lw, c->node, out, target, out);
    }
    return 0;
}

/* popcnt / clz of an integer: i32 on every backend (spec 0.15). */
int
lw_builtin_bitcount(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    const char *name = qd_op_info[op].text;
    RETURN_IF_ERROR(lw_expect_args(lw, c, name, 1, 1));
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

int
lw_builtin_abs(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    RETURN_IF_ERROR(lw_expect_args(lw, c, "abs", 1, 1));
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
int
lw_builtin_binary_math(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    const char *name = qd_op_info[op].text;
    RETURN_IF_ERROR(lw_expect_args(lw, c, name, 2, 2));
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

int
lw_builtin_minmax(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
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

int
lw_builtin_select(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    RETURN_IF_ERROR(lw_expect_args(lw, c, "select", 3, 3));
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
int
lw_builtin_frexp(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    RETURN_IF_ERROR(lw_expect_args(lw, c, "frexp", 1, 1));
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

/***** atomics *****/

int
lw_builtin_atomic(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    const char *name = qd_op_info[op].text;
    uint32_t want = op == QD_OP_ATOMIC_CAS ? 3 : 2;
    RETURN_IF_ERROR(lw_expect_args(lw, c, name, want, want));
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

/* min / max of two scalars for the element-wise reductions. */
int
lw_minmax(Lowerer *lw, const QdAst *node, QdOp op, const Expr *a, const Expr *b, Expr *out)
{
    Expr args[2] = {*a, *b};
    CallArgs c = {node, args, 2, NULL, NULL, 0};
    return lw_builtin_minmax(lw, &c, op, out);
}
