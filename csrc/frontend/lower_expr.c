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

static const char *
type_name(const QdType *ty)
{
    return ty ? qd_type_scalar_name(ty->kind) : "?";
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

bool
lw_int_fits(const QdType *ty, int64_t v)
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

static Expr
value_expr(uint32_t id, const QdType *ty)
{
    Expr e = {0};
    e.kind = EX_VALUE;
    e.id = id;
    e.ty = ty;
    return e;
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
                    text, type_name(qd_type_scalar(lw->opt->default_ip)), text);
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
            /* Implicit conversion of a float literal to an integer type truncates. */
            id = lw_const_int(lw, ty, (int64_t)lit->fval);
        } else {
            id = lw_const_float(lw, ty, lit->fval);
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
            if (lit->is_big || !lw_int_fits(ty, v)) {
                const char *text = int_text(lw, lit);
                if (explicit_type) {
                    return lw_error(lw, node, QD_ERR_TYPE,
                                    "Integer literal %s exceeded the range of specified dtype: %s", text,
                                    type_name(ty));
                }
                if (ty->kind == lw->opt->default_ip) {
                    return default_ip_error(lw, node, text);
                }
                return lw_error(lw, node, QD_ERR_TYPE, "Integer literal %s exceeded the range of %s", text,
                                type_name(ty));
            }
            id = lw_const_int(lw, ty, v);
        }
    }
    if (id == QD_NO_VALUE) {
        return -1;
    }
    *out = value_expr(id, ty);
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
        *out = value_expr(id, e->ty);
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
        if (e->kind == EX_INT && !qd_type_is_float(ty) && !lw_int_fits(ty, e->ival)) {
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
    uint32_t id = lw_emit_value(lw, QD_OP_CAST, ty, v.id, 0);
    if (id == QD_NO_VALUE) {
        return -1;
    }
    *out = value_expr(id, ty);
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
                                type_name(target->ty), type_name(from)));
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
                        "instead of `if x` for float values.", type_name(v.ty));
    }
    *cond = v.id;
    return 0;
}

/***** compile-time values through the host *****/

int
lw_from_handle(Lowerer *lw, const QdAst *node, QdHandle h, Expr *out)
{
    QdHostValue hv;
    RETURN_IF_ERROR(lw->host->describe(lw->host->self, lw->ctx, h, &hv));
    Expr e = {0};
    e.h = h;
    switch (hv.kind) {
    case QD_HOST_NONE:
        e.kind = EX_NONE;
        break;
    case QD_HOST_BOOL:
        e.kind = EX_BOOL;
        e.ival = hv.ival;
        break;
    case QD_HOST_INT:
        e.kind = EX_INT;
        e.ival = hv.ival;
        if (hv.is_big) {
            e.is_big = true;
            e.str = qd_arena_strdup(lw->arena, hv.str);
            e.fval = hv.fval;
            e.big_u64 = hv.big_u64;
            e.ubits = hv.ubits;
        }
        break;
    case QD_HOST_FLOAT:
        e.kind = EX_FLOAT;
        e.fval = hv.fval;
        break;
    case QD_HOST_STR:
        e.kind = EX_STR;
        e.str = hv.str;
        break;
    case QD_HOST_TUPLE:
    case QD_HOST_LIST:
        e.kind = EX_TUPLE;
        e.nitems = hv.len;
        e.items = QD_NEW_ARRAY(lw->arena, Expr, hv.len ? hv.len : 1);
        if (!e.items) {
            return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
        }
        for (uint32_t i = 0; i < hv.len; i++) {
            QdHandle item;
            RETURN_IF_ERROR(lw->host->getitem(lw->host->self, lw->ctx, h, i, &item));
            RETURN_IF_ERROR(lw_from_handle(lw, node, item, &e.items[i]));
        }
        break;
    case QD_HOST_FIELD: {
        char name[32];
        FieldView *view = QD_NEW(lw->arena, FieldView);
        if (!view) {
            return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
        }
        view->ndim = (uint32_t)hv.ndim;
        int64_t physical[16];
        for (uint32_t k = 0; k < view->ndim; k++) {
            view->shape[k] = hv.shape[k];
            view->order[k] = hv.order[k];
            view->offset[k] = hv.offset[k];
            physical[k] = hv.shape[hv.order[k] < view->ndim ? hv.order[k] : k];
        }
        snprintf(name, sizeof(name), "f%u", hv.field_id);
        QdField *fd = qd_module_find_field(lw->m, name);
        if (!fd) {
            fd = qd_field_new(lw->m, name, qd_type_scalar(hv.dtype), view->ndim, physical);
            if (!fd) {
                return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
            }
        }
        e.kind = EX_FIELD;
        e.field = fd;
        e.view = view;
        break;
    }
    case QD_HOST_QD_FUNC:
        e.kind = EX_FUNC;
        break;
    case QD_HOST_STRUCT:
        return lw_struct_from_instance(lw, node, h, out);
    case QD_HOST_MATRIX:
        return lw_matrix_from_instance(lw, node, h, out);
    case QD_HOST_RUNTIME:
        return lw_static_value(lw, node, hv.ival, out); /* a stand-in back from Python */
    case QD_HOST_RUNTIME_OP:
        return lw_static_op(lw, node, h, hv.str, out); /* an operation on stand-ins */
    case QD_HOST_BUILTIN:
        e.kind = EX_BUILTIN;
        e.str = hv.str;
        break;
    case QD_HOST_DTYPE:
        e.kind = EX_PYOBJ;
        e.hkind = hv.kind;
        e.ty = qd_type_scalar(hv.dtype);
        e.str = hv.str; /* "int", "float", "bool" for Python's own types */
        break;
    default:
        e.kind = EX_PYOBJ;
        e.hkind = hv.kind;
        break;
    }
    *out = e;
    return 0;
}

int
lw_to_handle(Lowerer *lw, const QdAst *node, const Expr *e, QdHandle *out)
{
    const QdHost *host = lw->host;
    if (e->h) {
        *out = e->h;
        return 0;
    }
    switch (e->kind) {
    case EX_INT:
    case EX_BOOL:
        return host->make_int(host->self, lw->ctx, e->ival, out);
    case EX_FLOAT:
        return host->make_float(host->self, lw->ctx, e->fval, out);
    case EX_STR:
        return host->make_str(host->self, lw->ctx, e->str, out);
    case EX_NONE:
        return host->make_str(host->self, lw->ctx, NULL, out); /* NULL: None */
    case EX_TUPLE: {
        QdHandle *items = QD_NEW_ARRAY(lw->arena, QdHandle, e->nitems ? e->nitems : 1);
        if (!items) {
            return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
        }
        for (uint32_t i = 0; i < e->nitems; i++) {
            RETURN_IF_ERROR(lw_to_handle(lw, node, &e->items[i], &items[i]));
        }
        return host->make_tuple(host->self, lw->ctx, items, e->nitems, out);
    }
    default:
        return lw_error(lw, node, QD_ERR_COMPILATION,
                        "this value exists only at run time; Python code evaluated at compile time "
                        "(qd.static, plain Python functions) cannot use it");
    }
}

/* An integer literal meeting a runtime value is a default_ip value first (spec 0.4): one out of
 * that range is an error even next to a wider operand. */
int
lw_check_literal(Lowerer *lw, const QdAst *node, const Expr *e)
{
    if (e->kind != EX_INT || e->ty) { /* a typed constant is in its type's range already */
        return 0;
    }
    if (e->is_big || !lw_int_fits(qd_type_scalar(lw->opt->default_ip), e->ival)) {
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
        *out = value_expr(one, base->ty);
        return one == QD_NO_VALUE ? -1 : 0;
    }
    uint32_t acc = base->id;
    for (int64_t k = 1; k < n; k++) {
        acc = lw_emit_value(lw, QD_OP_MUL, base->ty, acc, base->id);
        if (acc == QD_NO_VALUE) {
            return -1;
        }
    }
    *out = value_expr(acc, base->ty);
    return 0;
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
                        lw_binop_symbol(op), type_name(ta), type_name(tb));
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
    RETURN_IF_ERROR(lw_convert(lw, node, a, ty, &x));
    if (op == QD_BIN_LSHIFT || op == QD_BIN_RSHIFT) {
        RETURN_IF_ERROR(lw_convert(lw, node, b, tb, &y));
    } else {
        RETURN_IF_ERROR(lw_convert(lw, node, b, ty, &y));
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
    *out = value_expr(id, ty);
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
                            type_name(v.ty));
        }
        id = lw_emit_value(lw, QD_OP_NOT, v.ty, v.id, 0);
        break;
    default: { /* not */
        if (!qd_type_is_int(v.ty)) {
            return lw_error(lw, node, QD_ERR_TYPE,
                            "'logic_not' takes integral inputs only, however '%s' is provided",
                            type_name(v.ty));
        }
        uint32_t zero = lw_const_int(lw, v.ty, 0);
        id = zero == QD_NO_VALUE ? zero
                                 : lw_emit_value(lw, QD_OP_EQ, qd_type_scalar(QD_TY_U1), v.id, zero);
        *out = value_expr(id, qd_type_scalar(QD_TY_U1));
        return id == QD_NO_VALUE ? -1 : 0;
    }
    }
    if (id == QD_NO_VALUE) {
        return -1;
    }
    *out = value_expr(id, v.ty);
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
    *out = value_expr(id, u1);
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

/***** conditional values: and / or / x if c else y *****/

/* Emits `if cond { then_value } else { else_value }` where each side is computed by lowering
 * into its region, and merges both values through a local slot of their promoted type. */
typedef int (*SideFn)(Lowerer *lw, const QdAst *node, int side, Expr *out, void *data);

static int
merge_branches(Lowerer *lw, const QdAst *node, uint32_t cond, SideFn side, void *data, Expr *out)
{
    QdInst *ifi = lw_emit(lw, QD_OP_IF, 1);
    if (!ifi) {
        return -1;
    }
    ifi->args[0] = cond;
    QdRegion *saved = lw->cur;
    bool saved_top = lw->at_top;
    lw->at_top = false;
    Expr vals[2];
    int rc = 0;
    for (int s = 0; s < 2 && rc == 0; s++) {
        lw->cur = ifi->regions[s];
        rc = side(lw, node, s, &vals[s], data);
    }
    if (rc == 0) { /* tuples, vectors, matrices: element by element */
        int mrc = lw_matrix_merge_branches(lw, node, ifi, vals, out);
        if (mrc != LW_DECLINED) {
            lw->cur = saved;
            lw->at_top = saved_top;
            return mrc;
        }
    }
    const QdType *t0 = rc == 0 ? lw_dtype_of(lw, &vals[0]) : NULL;
    const QdType *t1 = rc == 0 ? lw_dtype_of(lw, &vals[1]) : NULL;
    if (rc == 0 && (!t0 || !t1)) {
        rc = lw_error(lw, node, QD_ERR_TYPE, "both branches must be scalar values");
    }
    Expr slot;
    if (rc == 0) {
        rc = lw_new_slot(lw, lw_promote(t0, t1), &slot);
    }
    for (int s = 0; s < 2 && rc == 0; s++) {
        lw->cur = ifi->regions[s];
        rc = lw_store(lw, node, &slot, &vals[s]);
    }
    lw->cur = saved;
    lw->at_top = saved_top;
    if (rc < 0) {
        return -1;
    }
    return lw_rvalue(lw, node, &slot, out);
}

typedef struct BoolOpData {
    uint32_t from;       /* index of the first value of the right side */
    Expr left;           /* the left operand's value */
    bool is_and;         /* `and` (else `or`) */
    bool elementwise;    /* the right side is a vector/matrix: the result is element-wise logical */
} BoolOpData;

static int lower_boolop_from(Lowerer *lw, const QdAst *node, uint32_t from, Expr *out);

/* Side 0 (the `if` taken when the left operand does not decide) evaluates the rest of the
 * operands; side 1 yields the left operand itself (Python's value semantics). */
static int
boolop_side(Lowerer *lw, const QdAst *node, int side, Expr *out, void *data)
{
    BoolOpData *d = data;
    if (side == 0) {
        RETURN_IF_ERROR(lower_boolop_from(lw, node, d->from, out));
        /* A list here is the vector it spells (the matrix kind's logical takes lists). */
        d->elementwise = lw_expr_ops(out)->logical || out->kind == EX_TUPLE;
        if (d->elementwise) { /* `x and v`: (x != 0) and v, element by element */
            Expr right = *out;
            return lw_matrix_logical(lw, node, d->is_and, &d->left, &right, out);
        }
        return 0;
    }
    if (d->elementwise) { /* the left operand decided: x != 0, broadcast */
        Expr zero = {0};
        zero.kind = EX_INT;
        return lw_compare(lw, node, QD_CMP_NE, &d->left, &zero, out);
    }
    *out = d->left;
    return 0;
}

static int
lower_boolop_from(Lowerer *lw, const QdAst *node, uint32_t from, Expr *out)
{
    Expr left;
    RETURN_IF_ERROR(lw_expr(lw, node->a.items[from], &left));
    if (from + 1 == node->a.len) {
        *out = left;
        return 0;
    }
    bool is_and = node->op == QD_BOOL_AND;
    const ExprOps *lops = lw_expr_ops(&left);
    if (lops->logical) { /* element-wise, every operand evaluated */
        Expr right;
        RETURN_IF_ERROR(lower_boolop_from(lw, node, from + 1, &right));
        return lops->logical(lw, node, is_and, &left, &right, out);
    }
    if (lw_is_compile_time_scalar(&left)) {
        bool truth = left.kind == EX_FLOAT ? left.fval != 0 : left.ival != 0;
        if (truth != is_and) {
            *out = left; /* decided by the left operand */
            return 0;
        }
        RETURN_IF_ERROR(lower_boolop_from(lw, node, from + 1, out));
        const ExprOps *rops = lw_expr_ops(out);
        if (rops->logical) { /* `2 and v`: element-wise */
            Expr right = *out;
            return rops->logical(lw, node, is_and, &left, &right, out);
        }
        return 0;
    }
    Expr lv;
    RETURN_IF_ERROR(lw_rvalue(lw, node, &left, &lv));
    if (!qd_type_is_int(lv.ty)) {
        return lw_error(lw, node, QD_ERR_TYPE, "'%s' requires integer operands; got %s",
                        is_and ? "and" : "or", type_name(lv.ty));
    }
    if (!lw->opt->short_circuit) {
        Expr right;
        RETURN_IF_ERROR(lower_boolop_from(lw, node, from + 1, &right));
        const ExprOps *rops = lw_expr_ops(&right);
        if (rops->logical) { /* `x and v`: element-wise */
            return rops->logical(lw, node, is_and, &lv, &right, out);
        }
        return lw_binary(lw, node, is_and ? QD_BIN_BITAND : QD_BIN_BITOR, &lv, &right, out);
    }
    uint32_t zero = lw_const_int(lw, lv.ty, 0);
    uint32_t cond = lw_emit_value(lw, is_and ? QD_OP_NE : QD_OP_EQ, qd_type_scalar(QD_TY_U1), lv.id, zero);
    if (cond == QD_NO_VALUE) {
        return -1;
    }
    BoolOpData d = {from + 1, lv, is_and, false};
    return merge_branches(lw, node, cond, boolop_side, &d, out);
}

static int
ifexp_side(Lowerer *lw, const QdAst *node, int side, Expr *out, void *data)
{
    (void)data;
    return lw_expr(lw, side == 0 ? node->y : node->z, out);
}

static int
lower_ifexp(Lowerer *lw, const QdAst *node, Expr *out)
{
    Expr c;
    RETURN_IF_ERROR(lw_expr(lw, node->x, &c));
    if (lw_is_compile_time_scalar(&c) || c.kind == EX_NONE) {
        bool truth = c.kind == EX_FLOAT ? c.fval != 0 : (c.kind != EX_NONE && c.ival != 0);
        return lw_expr(lw, truth ? node->y : node->z, out);
    }
    uint32_t cond;
    RETURN_IF_ERROR(lw_truth(lw, node->x, &c, &cond));
    return merge_branches(lw, node, cond, ifexp_side, NULL, out);
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

static int
lower_sequence(Lowerer *lw, const QdAst *node, Expr *out)
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

/***** subscripts *****/

uint32_t
lw_ndarray_axis(const Expr *e, uint32_t axis)
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
    inst->imm.i = lw_ndarray_axis(e, axis);
    return qd_inst_set_result(lw->f, inst, qd_type_scalar(QD_TY_I32), NULL);
}

int
lw_shape_axis(Lowerer *lw, const Expr *shape, uint32_t d, Expr *out)
{
    const QdType *i32 = qd_type_scalar(QD_TY_I32);
    *out = value_expr(lw_ndarray_extent(lw, shape, d), i32);
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
        if (e->is_big) {
            return lw_check_literal(lw, node, e);
        }
        bool fits = e->ival >= INT32_MIN && e->ival <= INT32_MAX;
        *id = lw_const_int(lw, fits ? i32 : i64, e->ival);
        return *id == QD_NO_VALUE ? -1 : 0;
    }
    Expr v;
    RETURN_IF_ERROR(lw_rvalue(lw, node, e, &v));
    if (!qd_type_is_int(v.ty)) {
        return lw_error(lw, node, QD_ERR_TYPE, "indices must be integers, not %s", type_name(v.ty));
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

int
lw_convert_id(Lowerer *lw, const QdAst *node, uint32_t *id, const QdType *ty)
{
    if (*id == QD_NO_VALUE) {
        return -1;
    }
    Expr v = value_expr(*id, qd_value_type(lw->f, *id));
    RETURN_IF_ERROR(lw_convert(lw, node, &v, ty, &v));
    *id = v.id;
    return 0;
}

int
lw_debug_assert(Lowerer *lw, const QdAst *node, uint32_t ok, const char *message, const uint32_t *vals,
                uint32_t nvals)
{
    if (lw->task && lw->task->imm.task.kind == QD_TASK_RANGE_FOR && lw->cur == lw->task->regions[0]) {
        return 0; /* the prologue of a range_for task computes bounds; it has no checks */
    }
    QdSbuf fmt;
    qd_sbuf_init(&fmt);
    for (const char *f = lw->frame->file ? lw->frame->file : "?"; *f; f++) {
        qd_sbuf_putn(&fmt, *f == '%' && nvals ? "%%" : f, *f == '%' && nvals ? 2 : 1);
    }
    qd_sbuf_printf(&fmt, ":%u: %s", node->line, message);
    char *text = qd_sbuf_take(&fmt);
    QdInst *as = text ? lw_emit(lw, QD_OP_ASSERT, 1 + nvals) : NULL;
    if (as) {
        as->args[0] = ok;
        for (uint32_t i = 0; i < nvals; i++) {
            as->args[1 + i] = vals[i];
        }
        as->imm.str = qd_arena_strdup(lw->arena, text);
    }
    free(text);
    return as && as->imm.str ? 0 : -1;
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
        idx[i] = value_expr(qd_inst_set_result(lw->f, sel, ty, NULL), ty);
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

static int
lower_dict(Lowerer *lw, const QdAst *node, Expr *out)
{
    memset(out, 0, sizeof(*out));
    out->kind = EX_DICT;
    out->nitems = node->a.len;
    out->keys = QD_NEW_ARRAY(lw->arena, Expr, node->a.len ? node->a.len : 1);
    out->items = QD_NEW_ARRAY(lw->arena, Expr, node->a.len ? node->a.len : 1);
    if (!out->keys || !out->items) {
        return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
    }
    for (uint32_t i = 0; i < node->a.len; i++) {
        if (!node->a.items[i]) {
            return lw_error(lw, node, QD_ERR_SYNTAX, "'**' in a dict literal is not supported in kernels");
        }
        RETURN_IF_ERROR(lw_expr(lw, node->a.items[i], &out->keys[i]));
        const Expr *k = &out->keys[i];
        if (!lw_is_compile_time_scalar(k) && k->kind != EX_STR && k->kind != EX_NONE) {
            return lw_error(lw, node->a.items[i], QD_ERR_SYNTAX, "dict keys in kernels must be compile-time values");
        }
        RETURN_IF_ERROR(lw_expr(lw, node->b.items[i], &out->items[i]));
        if (out->items[i].kind == EX_LVALUE) {
            RETURN_IF_ERROR(lw_rvalue(lw, node->b.items[i], &out->items[i], &out->items[i]));
        }
    }
    return 0;
}

/* base[idx[0], ..., idx[n-1]] of a field or ndarray `base`, as an lvalue; `where` is the index
 * expression, blamed for bad indices. */
int
lw_subscript_indices(Lowerer *lw, const QdAst *node, const QdAst *where, const Expr *base,
                     Expr *idx, uint32_t n, Expr *out)
{
    uint32_t ndim = base->kind == EX_FIELD ? base->field->ndim : base->ndim;
    if (n != ndim) {
        return lw_error(lw, node, QD_ERR_SYNTAX,
                        "%s with %u dimensions is indexed with %u indices%s",
                        base->kind == EX_FIELD ? "Field" : "Ndarray", ndim, n,
                        ndim == 0 ? " (use x[None] for a 0-d value)" : "");
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

static int
lower_listcomp(Lowerer *lw, const QdAst *node, Expr *out)
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
        return lower_boolop_from(lw, node, 0, out);
    case QD_AST_COMPARE:
        return lower_compare(lw, node, out);
    case QD_AST_IF_EXP:
        return lower_ifexp(lw, node, out);
    case QD_AST_CALL:
        return lw_call(lw, node, out);
    case QD_AST_TUPLE:
    case QD_AST_LIST:
        return lower_sequence(lw, node, out);
    case QD_AST_LIST_COMP:
        return lower_listcomp(lw, node, out);
    case QD_AST_DICT:
        return lower_dict(lw, node, out);
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
