/* frontend/lower_expr.c -- expressions: literals, names, operators, typing and promotion.
 *
 * Compile-time operands are folded with Python's semantics (the reference folds pure-Python
 * sub-expressions before typing: `7 // 2` is 3, `7 / 2` is 3.5). As soon as an operand is a
 * runtime value, literals take their default types (int -> default_ip, float -> default_fp,
 * bool -> u1; spec/api.md 0.4) and the operation is typed with promoted_type:
 * a float beats any integer, more bits win, and unsigned wins at equal width.
 */
#include "lower.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/***** types *****/

bool
lw_is_runtime(const Expr *e)
{
    return e->kind == EX_VALUE || e->kind == EX_LVALUE || e->kind == EX_NDARRAY;
}

bool
lw_is_compile_time_scalar(const Expr *e)
{
    return e->kind == EX_INT || e->kind == EX_FLOAT || e->kind == EX_BOOL;
}

bool
lw_is_python_scalar(const Expr *e)
{
    return lw_is_compile_time_scalar(e) && !e->ty;
}

const QdType *
lw_literal_type(Lowerer *lw, const Expr *e)
{
    if (lw_is_compile_time_scalar(e) && e->ty) {
        return e->ty; /* a constant bound to an annotated func parameter */
    }
    switch (e->kind) {
    case EX_INT:
        return qd_type_scalar(lw->opt->default_ip);
    case EX_FLOAT:
        return qd_type_scalar(lw->opt->default_fp);
    case EX_BOOL:
        return qd_type_scalar(QD_TY_U1);
    default:
        return e->ty;
    }
}

const QdType *
lw_promote(const QdType *a, const QdType *b)
{
    bool fa = qd_type_is_float(a), fb = qd_type_is_float(b);
    if (fa != fb) {
        return fa ? a : b;
    }
    uint32_t ba = qd_type_bits(a), bb = qd_type_bits(b);
    if (ba != bb) {
        return ba > bb ? a : b;
    }
    if (!fa && qd_type_is_signed(a) != qd_type_is_signed(b)) {
        return qd_type_is_signed(a) ? b : a;
    }
    return a;
}

const QdType *
lw_dtype_of(Lowerer *lw, const Expr *e)
{
    if (lw_is_compile_time_scalar(e)) {
        return lw_literal_type(lw, e);
    }
    return (e->kind == EX_VALUE || e->kind == EX_LVALUE) ? e->ty : NULL;
}

/***** constants *****/

uint32_t
lw_const_int(Lowerer *lw, const QdType *ty, int64_t v)
{
    QdInst *inst = lw_emit(lw, QD_OP_CONST, 0);
    if (!inst) {
        return QD_NO_VALUE;
    }
    if (qd_type_is_float(ty)) {
        inst->imm.cst.f = (double)v;
    } else if (ty->kind == QD_TY_U1) {
        inst->imm.cst.u = v != 0;
    } else {
        uint32_t bits = qd_type_bits(ty);
        uint64_t u = (uint64_t)v;
        if (bits < 64) {
            u &= ((uint64_t)1 << bits) - 1;
            if (qd_type_is_signed(ty) && (u >> (bits - 1))) {
                u |= ~(((uint64_t)1 << bits) - 1); /* sign-extend */
            }
        }
        inst->imm.cst.u = u;
    }
    return qd_inst_set_result(lw->f, inst, ty, NULL);
}

uint32_t
lw_const_float(Lowerer *lw, const QdType *ty, double v)
{
    QdInst *inst = lw_emit(lw, QD_OP_CONST, 0);
    if (!inst) {
        return QD_NO_VALUE;
    }
    inst->imm.cst.f = ty->kind == QD_TY_F32 ? (double)(float)v : v;
    return qd_inst_set_result(lw->f, inst, ty, NULL);
}

/* The value of a Python float once it is a kernel value: a constant of the default float type
 * (converted from there to any other type), as in the reference: with default_fp f32,
 * `x_f64 * 0.1` multiplies by 0.1 rounded to f32. */
double
lw_python_float(const Lowerer *lw, double v)
{
    return lw->opt->default_fp == QD_TY_F32 ? (double)(float)v : v;
}

/* Whether integer v is representable in integer type ty (u1: 0 or 1). */
static bool
int_fits(const QdType *ty, int64_t v)
{
    uint32_t bits = qd_type_bits(ty);
    if (ty->kind == QD_TY_U1) {
        return v == 0 || v == 1;
    }
    if (qd_type_is_signed(ty)) {
        return bits >= 64 || (v >= -((int64_t)1 << (bits - 1)) && v < ((int64_t)1 << (bits - 1)));
    }
    return v >= 0 && (bits >= 64 || v < ((int64_t)1 << bits));
}

/* The decimal text of compile-time integer e. */
static const char *
int_text(Lowerer *lw, const Expr *e)
{
    return e->is_big ? e->str : qd_arena_printf(lw->arena, "%lld", (long long)e->ival);
}

static int
default_ip_error(Lowerer *lw, const QdAst *node, const char *text)
{
    return lw_error(lw, node, QD_ERR_TYPE,
                    "Integer literal %s exceeded the range of default_ip: %s, please specify the dtype "
                    "via e.g. `qd.u64(%s)` or set a different `default_ip` in `qd.init()`",
                    text, lw_type_name(qd_type_scalar(lw->opt->default_ip)), text);
}

/* A literal as a typed constant of `ty`, checking the range as the reference does. */
static int
typed_literal(Lowerer *lw, const QdAst *node, const Expr *lit, const QdType *ty, bool explicit_type,
              Expr *out)
{
    uint32_t id;
    if (lit->kind == EX_FLOAT) {
        if (!qd_type_is_float(ty)) {
            if (explicit_type) {
                return lw_error(lw, node, QD_ERR_TYPE,
                                "Floating-point literals must be annotated with a floating-point type. "
                                "For type casting, use `qd.cast`.");
            }
            /* Implicit conversion of a float literal to an integer type truncates; to u1 it
             * is whether the value is nonzero. */
            id = lw_const_int(lw, ty, ty->kind == QD_TY_U1 ? lit->fval != 0 : (int64_t)lit->fval);
        } else {
            /* An explicit type (`qd.f64(0.1)`) or a typed constant keeps the value as given. */
            id = lw_const_float(lw, ty, explicit_type || lit->ty ? lit->fval : lw_python_float(lw, lit->fval));
        }
    } else {
        int64_t v = lit->ival;
        if (qd_type_is_float(ty)) {
            if (explicit_type && lit->kind == EX_INT) {
                return lw_error(lw, node, QD_ERR_TYPE,
                                "Integer literals must be annotated with a integer type. "
                                "For type casting, use `qd.cast`.");
            }
            id = lw_const_float(lw, ty, lit->is_big ? lit->fval : (double)v);
        } else if (lit->is_big && lit->big_u64 && ty->kind == QD_TY_U64) {
            id = lw_const_int(lw, ty, (int64_t)lit->ubits);
        } else {
            if (lit->is_big || !int_fits(ty, v)) {
                const char *text = int_text(lw, lit);
                if (explicit_type) {
                    return lw_error(lw, node, QD_ERR_TYPE,
                                    "Integer literal %s exceeded the range of specified dtype: %s", text,
                                    lw_type_name(ty));
                }
                if (ty->kind == lw->opt->default_ip) {
                    return default_ip_error(lw, node, text);
                }
                return lw_error(lw, node, QD_ERR_TYPE, "Integer literal %s exceeded the range of %s", text,
                                lw_type_name(ty));
            }
            id = lw_const_int(lw, ty, v);
        }
    }
    if (id == QD_NO_VALUE) {
        return -1;
    }
    *out = lw_value(id, ty);
    return 0;
}

int
lw_rvalue(Lowerer *lw, const QdAst *node, const Expr *e, Expr *out)
{
    switch (e->kind) {
    case EX_VALUE:
        *out = *e;
        return 0;
    case EX_LVALUE: {
        uint32_t id = lw_emit_value(lw, QD_OP_LOAD, e->ty, e->id, 0);
        if (id == QD_NO_VALUE) {
            return -1;
        }
        *out = lw_value(id, e->ty);
        return 0;
    }
    case EX_INT:
    case EX_FLOAT:
    case EX_BOOL:
        return typed_literal(lw, node, e, lw_literal_type(lw, e), false, out);
    case EX_NDARRAY:
    case EX_FIELD:
        return lw_error(lw, node, QD_ERR_TYPE, "a %s is not a scalar value; index it first",
                        e->kind == EX_FIELD ? "field" : "ndarray");
    case EX_PYOBJ:
        if (e->hkind == QD_HOST_NDARRAY) {
            return lw_error(lw, node, QD_ERR_COMPILATION,
                            "The ndarray is not registered as a kernel parameter; pass it as an "
                            "argument annotated with qd.types.ndarray()");
        }
        return lw_error(lw, node, QD_ERR_TYPE, "this Python object is not a scalar value");
    case EX_TUPLE:
        return lw_error(lw, node, QD_ERR_TYPE, "a tuple or list is not a scalar value");
    case EX_TILE:
        return lw_tile_misuse(lw, node, e);
    default:
        return lw_error(lw, node, QD_ERR_TYPE, "this expression has no scalar value");
    }
}

int
lw_explicit_literal(Lowerer *lw, const QdAst *node, const Expr *x, const QdType *ty, Expr *out)
{
    return typed_literal(lw, node, x, ty, true, out);
}

int
lw_convert(Lowerer *lw, const QdAst *node, const Expr *e, const QdType *ty, Expr *out)
{
    if (lw_is_compile_time_scalar(e)) {
        /* A literal has its default type (range-checked there); it becomes a constant of ty
         * directly when it fits, else it is converted like a runtime value (wrapping). A Python
         * int is a default_ip literal before it becomes a value of any type (spec 0.4). */
        RETURN_IF_ERROR(lw_check_literal(lw, node, e));
        if (e->kind == EX_INT && !qd_type_is_float(ty) && !int_fits(ty, e->ival)) {
            Expr lit;
            RETURN_IF_ERROR(typed_literal(lw, node, e, lw_literal_type(lw, e), false, &lit));
            return lw_convert(lw, node, &lit, ty, out);
        }
        return typed_literal(lw, node, e, ty, false, out);
    }
    Expr v;
    RETURN_IF_ERROR(lw_rvalue(lw, node, e, &v));
    if (qd_type_equal(v.ty, ty)) {
        *out = v;
        return 0;
    }
    uint32_t id;
    if (ty->kind == QD_TY_U1) {
        /* Conversion to u1 is a truth value: any nonzero value is 1. */
        uint32_t zero = qd_type_is_float(v.ty) ? lw_const_float(lw, v.ty, 0.0) : lw_const_int(lw, v.ty, 0);
        id = zero == QD_NO_VALUE ? QD_NO_VALUE : lw_emit_value(lw, QD_OP_NE, ty, v.id, zero);
    } else {
        id = lw_emit_value(lw, QD_OP_CAST, ty, v.id, 0);
    }
    if (id == QD_NO_VALUE) {
        return -1;
    }
    *out = lw_value(id, ty);
    return 0;
}

/* Whether converting from `from` to `to` may lose information (QuadrantsCastWarning). */
static bool
is_narrowing(const QdType *from, const QdType *to)
{
    if (qd_type_is_float(from) && !qd_type_is_float(to)) {
        return true;
    }
    if (qd_type_is_float(from) == qd_type_is_float(to)) {
        return qd_type_bits(from) > qd_type_bits(to);
    }
    return false;
}

int
lw_store(Lowerer *lw, const QdAst *node, const Expr *target, const Expr *value)
{
    if (target->kind != EX_LVALUE) {
        return lw_error(lw, node, QD_ERR_SYNTAX, "cannot assign to this expression");
    }
    const QdType *from = lw_dtype_of(lw, value);
    if (from && !lw_is_compile_time_scalar(value) && is_narrowing(from, target->ty)) {
        RETURN_IF_ERROR(lw_warn(lw, node, "QuadrantsCastWarning", "Assign may lose precision: %s <- %s",
                                lw_type_name(target->ty), lw_type_name(from)));
    }
    Expr v;
    RETURN_IF_ERROR(lw_convert(lw, node, value, target->ty, &v));
    QdInst *st = lw_emit(lw, QD_OP_STORE, 2);
    if (!st) {
        return -1;
    }
    st->args[0] = target->id;
    st->args[1] = v.id;
    return 0;
}

int
lw_truth(Lowerer *lw, const QdAst *node, const Expr *e, uint32_t *cond)
{
    Expr v;
    RETURN_IF_ERROR(lw_rvalue(lw, node, e, &v));
    if (!qd_type_is_int(v.ty)) {
        return lw_error(lw, node, QD_ERR_TYPE,
                        "`if` conditions must be an integer; got %s. Consider using `if x != 0` "
                        "instead of `if x` for float values.", lw_type_name(v.ty));
    }
    *cond = v.id;
    return 0;
}

/* An integer literal meeting a runtime value is a default_ip value first (spec 0.4): one out of
 * that range is an error even next to a wider operand. */
int
lw_check_literal(Lowerer *lw, const QdAst *node, const Expr *e)
{
    if (e->kind != EX_INT || e->ty) { /* a typed constant is in its type's range already */
        return 0;
    }
    if (e->is_big || !int_fits(qd_type_scalar(lw->opt->default_ip), e->ival)) {
        return default_ip_error(lw, node, int_text(lw, e));
    }
    return 0;
}

/***** runtime binary operators *****/

static QdOp
arith_op(int op)
{
    switch (op) {
    case QD_BIN_ADD: return QD_OP_ADD;
    case QD_BIN_SUB: return QD_OP_SUB;
    case QD_BIN_MUL: return QD_OP_MUL;
    case QD_BIN_DIV: return QD_OP_DIV;
    case QD_BIN_FLOORDIV: return QD_OP_FLOORDIV;
    case QD_BIN_MOD: return QD_OP_FLOORMOD;
    case QD_BIN_POW: return QD_OP_POW;
    case QD_BIN_BITAND: return QD_OP_AND;
    case QD_BIN_BITOR: return QD_OP_OR;
    case QD_BIN_BITXOR: return QD_OP_XOR;
    case QD_BIN_LSHIFT: return QD_OP_SHL;
    case QD_BIN_RSHIFT: return QD_OP_SHR;
    default: return QD_OP_COUNT_;
    }
}

static const char neg_pow_message[] = "Negative exponent in pow(int, int) is not allowed.";

/* x ** n for a compile-time n in 0..8: repeated multiplication (exact, and what users expect). */
static int
small_power(Lowerer *lw, const Expr *base, int64_t n, Expr *out)
{
    if (n == 0) {
        uint32_t one = qd_type_is_float(base->ty) ? lw_const_float(lw, base->ty, 1.0)
                                                  : lw_const_int(lw, base->ty, 1);
        *out = lw_value(one, base->ty);
        return one == QD_NO_VALUE ? -1 : 0;
    }
    uint32_t acc = base->id;
    for (int64_t k = 1; k < n; k++) {
        acc = lw_emit_value(lw, QD_OP_MUL, base->ty, acc, base->id);
        if (acc == QD_NO_VALUE) {
            return -1;
        }
    }
    *out = lw_value(acc, base->ty);
    return 0;
}

/* An operand of true division as a value of the operation's float type ty: an integer is a
 * default_fp value first, then widened (with f64, an i32 above 2**24 is rounded to f32 on the way). */
static int
div_operand(Lowerer *lw, const QdAst *node, const Expr *e, const QdType *te, const QdType *ty, Expr *out)
{
    if (!qd_type_is_int(te)) {
        return lw_convert(lw, node, e, ty, out);
    }
    Expr f;
    RETURN_IF_ERROR(lw_convert(lw, node, e, qd_type_scalar(lw->opt->default_fp), &f));
    return lw_convert(lw, node, &f, ty, out);
}

int
lw_binary(Lowerer *lw, const QdAst *node, int op, const Expr *a, const Expr *b, Expr *out)
{
    const ExprOps *oa = lw_expr_ops(a), *ob = lw_expr_ops(b);
    int rc = oa->binary ? oa->binary(lw, node, op, a, b, out) : LW_DECLINED;
    if (rc == LW_DECLINED && ob->binary && ob != oa) {
        rc = ob->binary(lw, node, op, a, b, out);
    }
    if (rc != LW_DECLINED) {
        return rc;
    }
    if (lw_is_python_scalar(a) && lw_is_python_scalar(b)) {
        return lw_fold_binary(lw, node, op, a, b, out);
    }
    if (op == QD_BIN_MATMUL) {
        return lw_error(lw, node, QD_ERR_TYPE, "unsupported operand type(s) for @: scalars");
    }
    const QdType *ta = lw_dtype_of(lw, a), *tb = lw_dtype_of(lw, b);
    if (!ta || !tb) {
        Expr tmp;
        RETURN_IF_ERROR(lw_rvalue(lw, node, ta ? b : a, &tmp));
        return lw_error(lw, node, QD_ERR_TYPE, "unsupported operand for '%s'", lw_binop_symbol(op));
    }
    RETURN_IF_ERROR(lw_check_literal(lw, node, a));
    RETURN_IF_ERROR(lw_check_literal(lw, node, b));
    bool bitwise = op == QD_BIN_BITAND || op == QD_BIN_BITOR || op == QD_BIN_BITXOR ||
                   op == QD_BIN_LSHIFT || op == QD_BIN_RSHIFT;
    if (bitwise && (qd_type_is_float(ta) || qd_type_is_float(tb))) {
        return lw_error(lw, node, QD_ERR_TYPE, "unsupported operand type(s) for '%s': '%s' and '%s'",
                        lw_binop_symbol(op), lw_type_name(ta), lw_type_name(tb));
    }
    const QdType *ty = lw_promote(ta, tb);
    if (op == QD_BIN_DIV) {
        const QdType *fp = qd_type_scalar(lw->opt->default_fp);
        ty = lw_promote(qd_type_is_float(ta) ? ta : fp, qd_type_is_float(tb) ? tb : fp);
    } else if (op == QD_BIN_LSHIFT || op == QD_BIN_RSHIFT) {
        ty = ta;
    } else if (op == QD_BIN_POW && qd_type_is_int(tb)) {
        ty = ta; /* an integer exponent keeps the base's type */
        if (b->kind == EX_INT && b->ival < 0 && qd_type_is_int(ta)) {
            return lw_error(lw, node, QD_ERR_RUNTIME, "%s", neg_pow_message);
        }
        if (b->kind == EX_INT && b->ival >= 0 && b->ival <= 8) {
            Expr base;
            RETURN_IF_ERROR(lw_convert(lw, node, a, ty, &base));
            return small_power(lw, &base, b->ival, out);
        }
    }
    Expr x, y;
    if (op == QD_BIN_DIV) {
        RETURN_IF_ERROR(div_operand(lw, node, a, ta, ty, &x));
        RETURN_IF_ERROR(div_operand(lw, node, b, tb, ty, &y));
    } else {
        RETURN_IF_ERROR(lw_convert(lw, node, a, ty, &x));
        RETURN_IF_ERROR(lw_convert(lw, node, b, op == QD_BIN_LSHIFT || op == QD_BIN_RSHIFT ? tb : ty, &y));
    }
    if (op == QD_BIN_POW && lw->opt->debug && qd_type_is_int(ty) && qd_type_is_signed(y.ty) &&
        !lw_is_compile_time_scalar(b)) {
        uint32_t ok = lw_emit_value(lw, QD_OP_GE, qd_type_scalar(QD_TY_U1), y.id, lw_const_int(lw, y.ty, 0));
        RETURN_IF_ERROR(ok == QD_NO_VALUE ? -1 : lw_debug_assert(lw, node, ok, neg_pow_message, NULL, 0));
    }
    uint32_t id = lw_emit_value(lw, arith_op(op), ty, x.id, y.id);
    if (id == QD_NO_VALUE) {
        return -1;
    }
    *out = lw_value(id, ty);
    return 0;
}

static int
lower_unary(Lowerer *lw, const QdAst *node, Expr *out)
{
    Expr a;
    RETURN_IF_ERROR(lw_expr(lw, node->x, &a));
    return lw_unary(lw, node, node->op, &a, out);
}

int
lw_unary(Lowerer *lw, const QdAst *node, int op, const Expr *operand, Expr *out)
{
    Expr a = *operand;
    const ExprOps *ops = lw_expr_ops(&a);
    if (ops->unary) {
        return ops->unary(lw, node, op, &a, out);
    }
    if (lw_is_python_scalar(&a)) {
        Expr e = a;
        switch (op) {
        case QD_UNARY_PLUS:
            *out = a;
            return 0;
        case QD_UNARY_MINUS:
            if (a.is_big || (a.kind == EX_INT && a.ival == INT64_MIN)) {
                return lw_python_number_op(lw, node, "neg", &a, NULL, out);
            }
            if (a.kind == EX_FLOAT) {
                e.fval = -a.fval;
            } else {
                e.kind = EX_INT;
                e.ival = -a.ival;
            }
            break;
        case QD_UNARY_NOT:
            e.kind = EX_BOOL;
            e.ival = a.kind == EX_FLOAT ? a.fval == 0 : (!a.is_big && a.ival == 0);
            e.is_big = false;
            break;
        case QD_UNARY_INVERT:
            if (a.kind == EX_FLOAT) {
                return lw_error(lw, node, QD_ERR_TYPE, "bad operand type for unary ~: 'float'");
            }
            if (a.is_big) {
                return lw_python_number_op(lw, node, "~", &a, NULL, out);
            }
            e.kind = EX_INT;
            e.ival = ~a.ival;
            break;
        }
        e.h = 0;
        *out = e;
        return 0;
    }
    Expr v;
    RETURN_IF_ERROR(lw_rvalue(lw, node, &a, &v));
    uint32_t id;
    switch (op) {
    case QD_UNARY_PLUS:
        *out = v;
        return 0;
    case QD_UNARY_MINUS:
        id = lw_emit_value(lw, QD_OP_NEG, v.ty, v.id, 0);
        break;
    case QD_UNARY_INVERT:
        if (!qd_type_is_int(v.ty)) {
            return lw_error(lw, node, QD_ERR_TYPE,
                            "'bit_not' takes integral inputs only, however '%s' is provided",
                            lw_type_name(v.ty));
        }
        id = lw_emit_value(lw, QD_OP_NOT, v.ty, v.id, 0);
        break;
    default: { /* not */
        if (!qd_type_is_int(v.ty)) {
            return lw_error(lw, node, QD_ERR_TYPE,
                            "'logic_not' takes integral inputs only, however '%s' is provided",
                            lw_type_name(v.ty));
        }
        uint32_t zero = lw_const_int(lw, v.ty, 0);
        id = zero == QD_NO_VALUE ? zero
                                 : lw_emit_value(lw, QD_OP_EQ, qd_type_scalar(QD_TY_U1), v.id, zero);
        *out = lw_value(id, qd_type_scalar(QD_TY_U1));
        return id == QD_NO_VALUE ? -1 : 0;
    }
    }
    if (id == QD_NO_VALUE) {
        return -1;
    }
    *out = lw_value(id, v.ty);
    return 0;
}

/***** comparisons *****/

static int compare_pair(Lowerer *lw, const QdAst *node, QdAstOp op, const Expr *a, const Expr *b,
                        Expr *out);

int
lw_compare(Lowerer *lw, const QdAst *node, int op, const Expr *a, const Expr *b, Expr *out)
{
    return compare_pair(lw, node, (QdAstOp)op, a, b, out);
}

static int
compare_pair(Lowerer *lw, const QdAst *node, QdAstOp op, const Expr *a, const Expr *b, Expr *out)
{
    const ExprOps *oa = lw_expr_ops(a), *ob = lw_expr_ops(b);
    int rc = oa->compare ? oa->compare(lw, node, op, a, b, out) : LW_DECLINED;
    if (rc == LW_DECLINED && ob->compare && ob != oa) {
        rc = ob->compare(lw, node, op, a, b, out);
    }
    if (rc != LW_DECLINED) {
        return rc;
    }
    if (op == QD_CMP_IS || op == QD_CMP_IS_NOT || op == QD_CMP_IN || op == QD_CMP_NOT_IN) {
        if (op == QD_CMP_IN || op == QD_CMP_NOT_IN) {
            return lw_error(lw, node, QD_ERR_SYNTAX, "\"%s\" is only supported inside `qd.static`.",
                            op == QD_CMP_IN ? "In" : "NotIn");
        }
        return lw_error(lw, node, QD_ERR_SYNTAX, "Operator \"%s\" in Quadrants scope is not supported.",
                        op == QD_CMP_IS ? "is" : "is not");
    }
    if (lw_is_python_scalar(a) && lw_is_python_scalar(b) && (a->is_big || b->is_big)) {
        static const char *const cmp_symbols[] = {"==", "!=", "<", "<=", ">", ">="};
        return lw_python_number_op(lw, node, cmp_symbols[op - QD_CMP_EQ], a, b, out);
    }
    if (lw_is_python_scalar(a) && lw_is_python_scalar(b)) {
        double x = a->kind == EX_FLOAT ? a->fval : (double)a->ival;
        double y = b->kind == EX_FLOAT ? b->fval : (double)b->ival;
        bool both_int = a->kind != EX_FLOAT && b->kind != EX_FLOAT;
        int c = both_int ? (a->ival > b->ival) - (a->ival < b->ival) : (x > y) - (x < y);
        bool r;
        switch (op) {
        case QD_CMP_EQ: r = both_int ? a->ival == b->ival : x == y; break;
        case QD_CMP_NE: r = both_int ? a->ival != b->ival : x != y; break;
        case QD_CMP_LT: r = c < 0 && (both_int || x < y); break;
        case QD_CMP_LE: r = both_int ? c <= 0 : x <= y; break;
        case QD_CMP_GT: r = c > 0 && (both_int || x > y); break;
        default: r = both_int ? c >= 0 : x >= y; break;
        }
        memset(out, 0, sizeof(*out));
        out->kind = EX_BOOL;
        out->ival = r;
        return 0;
    }
    const QdType *ta = lw_dtype_of(lw, a), *tb = lw_dtype_of(lw, b);
    if (!ta || !tb) {
        return lw_error(lw, node, QD_ERR_TYPE, "comparison of non-scalar values");
    }
    RETURN_IF_ERROR(lw_check_literal(lw, node, a));
    RETURN_IF_ERROR(lw_check_literal(lw, node, b));
    const QdType *ty = lw_promote(ta, tb);
    Expr x, y;
    RETURN_IF_ERROR(lw_convert(lw, node, a, ty, &x));
    RETURN_IF_ERROR(lw_convert(lw, node, b, ty, &y));
    static const QdOp ops[] = {QD_OP_EQ, QD_OP_NE, QD_OP_LT, QD_OP_LE, QD_OP_GT, QD_OP_GE};
    const QdType *u1 = qd_type_scalar(QD_TY_U1);
    uint32_t id = lw_emit_value(lw, ops[op - QD_CMP_EQ], u1, x.id, y.id);
    *out = lw_value(id, u1);
    return id == QD_NO_VALUE ? -1 : 0;
}

static int
lower_compare(Lowerer *lw, const QdAst *node, Expr *out)
{
    Expr left, right, result = {0};
    RETURN_IF_ERROR(lw_expr(lw, node->x, &left));
    for (uint32_t i = 0; i < node->b.len; i++) {
        Expr r;
        RETURN_IF_ERROR(lw_expr(lw, node->b.items[i], &right));
        RETURN_IF_ERROR(compare_pair(lw, node, node->ops[i], &left, &right, &r));
        if (i == 0) {
            result = r;
        } else {
            /* a < b < c is (a < b) and (b < c), both evaluated (as in the reference). */
            RETURN_IF_ERROR(lw_binary(lw, node, QD_BIN_BITAND, &result, &r, &result));
        }
        left = right;
    }
    *out = result;
    return 0;
}

/***** names, attributes, containers *****/

static int
lower_name(Lowerer *lw, const QdAst *node, Expr *out)
{
    const char *name = qd_intern(lw->m, node->name);
    Var *v = name ? lw_lookup_local(lw, name) : NULL;
    if (v) {
        *out = v->e;
        return 0;
    }
    QdHandle h;
    int rc = lw->host->lookup(lw->host->self, lw->ctx, lw->frame->scope, node->name, &h);
    if (rc < 0) {
        return -1;
    }
    if (rc > 0) {
        return lw_error(lw, node, QD_ERR_NAME, "Name \"%s\" is not defined", node->name);
    }
    return lw_from_handle(lw, node, h, out);
}

static int
lower_attribute(Lowerer *lw, const QdAst *node, Expr *out)
{
    Expr base;
    RETURN_IF_ERROR(lw_expr(lw, node->x, &base));
    return lw_attribute(lw, node, &base, out);
}

/* `f.name` of a field (scalar, vector/matrix or struct) where `name` is a method. A method with
 * a kernel form (the field's `_qd_kernel_<name>`, a @qd.func taking the field first: fill) is
 * that func bound to the field; any other method runs in Python scope only, and calling it in
 * a kernel is an error, as in the reference. LW_DECLINED for data attributes (shape, dtype, n). */
static int
field_method(Lowerer *lw, const QdAst *node, const Expr *base, Expr *out)
{
    char name[128];
    QdHandle h;
    snprintf(name, sizeof(name), "_qd_kernel_%s", node->name);
    int rc = lw->host->getattr(lw->host->self, lw->ctx, base->h, name, &h);
    if (rc < 0) {
        return -1;
    }
    if (rc == 0) {
        RETURN_IF_ERROR(lw_from_handle(lw, node, h, out));
        if (out->kind == EX_FUNC) {
            return lw_bind_self(lw, base, out);
        }
    }
    rc = lw->host->getattr(lw->host->self, lw->ctx, base->h, node->name, &h);
    if (rc != 0) {
        return rc < 0 ? -1 : LW_DECLINED;
    }
    Expr attr;
    RETURN_IF_ERROR(lw_from_handle(lw, node, h, &attr));
    if (attr.kind == EX_PYOBJ && attr.hkind == QD_HOST_CALLABLE) {
        return lw_error(lw, node, QD_ERR_SYNTAX, "%s cannot be called in Quadrants-scope",
                        node->name);
    }
    *out = attr;
    return 0;
}

int
lw_attribute(Lowerer *lw, const QdAst *node, const Expr *base_expr, Expr *out)
{
    Expr base = *base_expr;
    const ExprOps *ops = lw_expr_ops(&base);
    if (ops->attribute) {
        int rc = ops->attribute(lw, node, &base, out);
        if (rc != LW_DECLINED) {
            return rc;
        }
    }
    if (base.h && (base.kind == EX_FIELD || (base.kind == EX_PYOBJ &&
                                             (base.hkind == QD_HOST_MATRIX_FIELD ||
                                              base.hkind == QD_HOST_STRUCT_FIELD)))) {
        int rc = field_method(lw, node, &base, out);
        if (rc != LW_DECLINED) {
            return rc;
        }
    }
    /* Any other value Python knows (an object, a field, a func, a builtin, a constant it handed
     * in): Python's attribute. */
    if (base.kind == EX_PYOBJ || base.kind == EX_FIELD || base.kind == EX_FUNC || base.kind == EX_BUILTIN ||
        ((base.kind == EX_INT || base.kind == EX_FLOAT || base.kind == EX_STR ||
          base.kind == EX_TUPLE) && base.h)) {
        return lw_host_getattr(lw, node, base.h, out);
    }
    return lw_error(lw, node, QD_ERR_SYNTAX, "attribute '%s' of a runtime value is not supported",
                    node->name);
}

int
lw_convert_id(Lowerer *lw, const QdAst *node, uint32_t *id, const QdType *ty)
{
    if (*id == QD_NO_VALUE) {
        return -1;
    }
    Expr v = lw_value(*id, qd_value_type(lw->f, *id));
    RETURN_IF_ERROR(lw_convert(lw, node, &v, ty, &v));
    *id = v.id;
    return 0;
}


int
lw_expr(Lowerer *lw, const QdAst *node, Expr *out)
{
    lw_set_loc(lw, node);
    memset(out, 0, sizeof(*out));
    switch (node->kind) {
    case QD_AST_CONSTANT:
        switch (node->cst.kind) {
        case QD_CONST_NONE:
            out->kind = EX_NONE;
            return 0;
        case QD_CONST_BOOL:
            out->kind = EX_BOOL;
            out->ival = node->cst.ival;
            return 0;
        case QD_CONST_INT:
            if (node->cst.is_big) { /* a Python int outside int64: held by the host */
                QdHandle h;
                RETURN_IF_ERROR(lw->host->parse_int(lw->host->self, lw->ctx, node->cst.sval, &h));
                return lw_from_handle(lw, node, h, out);
            }
            out->kind = EX_INT;
            out->ival = node->cst.ival;
            return 0;
        case QD_CONST_FLOAT:
            out->kind = EX_FLOAT;
            out->fval = node->cst.fval;
            return 0;
        case QD_CONST_STR:
            out->kind = EX_STR;
            out->str = node->cst.sval;
            return 0;
        default:
            return lw_error(lw, node, QD_ERR_SYNTAX, "unsupported constant in a kernel");
        }
    case QD_AST_NAME:
        return lower_name(lw, node, out);
    case QD_AST_ATTRIBUTE:
        return lower_attribute(lw, node, out);
    case QD_AST_SUBSCRIPT: {
        Expr base;
        int rc = lw_subscript_base(lw, node, &base, out);
        if (rc != 0) {
            return rc < 0 ? -1 : 0; /* obj.r[i] of an unpacked vector: the member */
        }
        return lw_subscript(lw, node, &base, node->y, out);
    }
    case QD_AST_BIN_OP: {
        Expr a, b;
        RETURN_IF_ERROR(lw_expr(lw, node->x, &a));
        RETURN_IF_ERROR(lw_expr(lw, node->y, &b));
        lw_set_loc(lw, node);
        return lw_binary(lw, node, node->op, &a, &b, out);
    }
    case QD_AST_UNARY_OP:
        return lower_unary(lw, node, out);
    case QD_AST_BOOL_OP:
        return lw_boolop(lw, node, out);
    case QD_AST_COMPARE:
        return lower_compare(lw, node, out);
    case QD_AST_IF_EXP:
        return lw_ifexp(lw, node, out);
    case QD_AST_CALL:
        return lw_call(lw, node, out);
    case QD_AST_TUPLE:
    case QD_AST_LIST:
        return lw_sequence_literal(lw, node, out);
    case QD_AST_LIST_COMP:
        return lw_listcomp(lw, node, out);
    case QD_AST_DICT:
        return lw_dict_literal(lw, node, out);
    case QD_AST_NAMED_EXPR: {
        /* (x := v): assigns like `x = v` and evaluates to the value. */
        RETURN_IF_ERROR(lw_expr(lw, node->y, out));
        const char *name = node->x->name ? qd_intern(lw->m, node->x->name) : NULL;
        Var *v = name ? lw_lookup_local(lw, name) : NULL;
        if (v && v->e.kind == EX_LVALUE) {
            return lw_store(lw, node, &v->e, out);
        }
        Expr rv, slot;
        RETURN_IF_ERROR(lw_rvalue(lw, node, out, &rv));
        RETURN_IF_ERROR(lw_new_slot(lw, rv.ty, &slot));
        RETURN_IF_ERROR(lw_store(lw, node, &slot, &rv));
        *out = rv;
        return lw_bind(lw, node->x->name ? node->x->name : "", &slot, NULL);
    }
    case QD_AST_JOINED_STR:
        /* print() and assert messages read f-strings themselves; anywhere else the string is a
         * value, which kernels have no type for (the reference's message) */
        return lw_error(lw, node, QD_ERR_TYPE, "Invalid constant scalar data type: <class 'str'>");
    case QD_AST_UNSUPPORTED:
        return lw_error(lw, node, QD_ERR_SYNTAX, "Unsupported node \"%s\"", node->name ? node->name : "?");
    default: {
        static const char *const pynames[] = {
#define QD_AST(name, pyname) pyname,
#include "ast.def"
#undef QD_AST
        };
        return lw_error(lw, node, QD_ERR_SYNTAX, "Unsupported node \"%s\"",
                        (size_t)node->kind < QD_ARRAY_LEN(pynames) ? pynames[node->kind] : "?");
    }
    }
}
