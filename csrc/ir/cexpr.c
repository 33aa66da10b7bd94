/* ir/cexpr.c -- compile-time integer expressions of templates.
 *
 * Templates write array counts, unroll bounds and constants as small expressions of their integer
 * parameters, literals and enclosing unroll variables (`[N x T]`, `unroll %j = %k + 1 to N`,
 * `const N * N : i32`). They are trees in the module arena; instantiation evaluates them in an
 * environment that binds the parameters and the unroll variables in scope. Arithmetic is int64
 * with C semantics; overflow and division by zero are errors, never undefined behaviour.
 */
#include "ir.h"

#include <string.h>

QdCexpr *
qd_cexpr_int(QdModule *m, int64_t v)
{
    QdCexpr *e = QD_NEW(&m->arena, QdCexpr);
    if (e) {
        e->kind = QD_CEXPR_INT;
        e->value = v;
    }
    return e;
}

QdCexpr *
qd_cexpr_param(QdModule *m, const char *name)
{
    QdCexpr *e = QD_NEW(&m->arena, QdCexpr);
    if (e) {
        e->kind = QD_CEXPR_PARAM;
        e->name = qd_intern(m, name);
    }
    return e;
}

QdCexpr *
qd_cexpr_var(QdModule *m, uint32_t var)
{
    QdCexpr *e = QD_NEW(&m->arena, QdCexpr);
    if (e) {
        e->kind = QD_CEXPR_VAR;
        e->var = var;
    }
    return e;
}

int
qd_cexpr_prec(char op)
{
    switch (op) {
    case QD_CEXPR_EQ:
        return 1;
    case QD_CEXPR_SHL:
        return 2;
    case '+':
    case '-':
        return 3;
    case '*':
    case '/':
    case '%':
        return QD_CEXPR_TIGHTEST;
    default:
        return 0;
    }
}

QdCexpr *
qd_cexpr_binop(QdModule *m, char op, QdCexpr *lhs, QdCexpr *rhs)
{
    QdCexpr *e = QD_NEW(&m->arena, QdCexpr);
    if (e) {
        e->kind = QD_CEXPR_BINOP;
        e->op = op;
        e->lhs = lhs;
        e->rhs = rhs;
    }
    return e;
}

int
qd_cexpr_eval(QdCtx *ctx, QdLoc loc, const QdCexpr *e, const QdCexprEnv *env, int64_t *out)
{
    switch (e->kind) {
    case QD_CEXPR_INT:
        *out = e->value;
        return 0;
    case QD_CEXPR_PARAM:
        for (uint32_t i = 0; env && i < env->count; i++) {
            if (env->names[i] == e->name || strcmp(env->names[i], e->name) == 0) {
                *out = env->values[i];
                return 0;
            }
        }
        return qd_error(ctx, loc, QD_ERR_COMPILATION, "`%s` is not an integer template parameter",
                        e->name);
    case QD_CEXPR_VAR:
        /* Innermost binding wins: search from the end. */
        for (uint32_t i = env ? env->nvars : 0; i-- > 0;) {
            if (env->vars[i] == e->var) {
                *out = env->var_values[i];
                return 0;
            }
        }
        return qd_error(ctx, loc, QD_ERR_COMPILATION,
                        "unroll variable used outside its unroll (value %u)", e->var);
    case QD_CEXPR_BINOP: {
        int64_t a, b, r;
        RETURN_IF_ERROR(qd_cexpr_eval(ctx, loc, e->lhs, env, &a));
        RETURN_IF_ERROR(qd_cexpr_eval(ctx, loc, e->rhs, env, &b));
        bool overflow = false;
        switch (e->op) {
        case '+':
            overflow = __builtin_add_overflow(a, b, &r);
            break;
        case '-':
            overflow = __builtin_sub_overflow(a, b, &r);
            break;
        case '*':
            overflow = __builtin_mul_overflow(a, b, &r);
            break;
        case '/':
        case '%':
            if (b == 0) {
                return qd_error(ctx, loc, QD_ERR_COMPILATION,
                                "division by zero in a compile-time expression");
            }
            if (a == INT64_MIN && b == -1) {
                overflow = true;
                break;
            }
            r = e->op == '/' ? a / b : a % b;
            break;
        case QD_CEXPR_SHL:
            if (b < 0 || b > 62 || a < 0 || a > (INT64_MAX >> b)) {
                overflow = true;
                break;
            }
            r = a << b;
            break;
        case QD_CEXPR_EQ:
            r = a == b;
            break;
        default:
            return qd_error(ctx, loc, QD_ERR_INTERNAL, "bad compile-time operator '%c'", e->op);
        }
        if (overflow) {
            return qd_error(ctx, loc, QD_ERR_COMPILATION,
                            "overflow in a compile-time expression");
        }
        *out = r;
        return 0;
    }
    }
    return qd_error(ctx, loc, QD_ERR_INTERNAL, "bad compile-time expression");
}

bool
qd_cexpr_equal(const QdCexpr *a, const QdCexpr *b)
{
    if (a == b) {
        return true;
    }
    if (!a || !b || a->kind != b->kind) {
        return false;
    }
    switch (a->kind) {
    case QD_CEXPR_INT:
        return a->value == b->value;
    case QD_CEXPR_PARAM:
        return strcmp(a->name, b->name) == 0;
    case QD_CEXPR_VAR:
        return a->var == b->var;
    case QD_CEXPR_BINOP:
        return a->op == b->op && qd_cexpr_equal(a->lhs, b->lhs) && qd_cexpr_equal(a->rhs, b->rhs);
    }
    return false;
}
