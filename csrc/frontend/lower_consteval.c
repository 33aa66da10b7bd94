/* frontend/lower_consteval.c -- arithmetic on compile-time Python numbers.
 *
 * Operations whose operands are all compile-time Python numbers (no type applied yet) fold with
 * Python semantics while the kernel is lowered: `7 // 2` is 3, `7 / 2` is 3.5, `-7 % 3` is 2.
 * Python ints have no range. Those that fit int64 are folded here; an operand outside int64
 * (Expr.is_big, held by the host as a Python int) or a result leaving it is computed by the host
 * in Python arithmetic (QdHost.number_op), so `2**100 // 2**60` is exact and `qd.u64(2**64 - 1)`
 * sees 18446744073709551615. Ranges are checked only when a type is applied (lower_expr.c).
 */
#include "lower.h"

#include <math.h>
#include <string.h>

static int64_t
py_floordiv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) {
        q--;
    }
    return q;
}

static int64_t
py_mod(int64_t a, int64_t b)
{
    int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) {
        r += b;
    }
    return r;
}

/* Python operator `op` on two compile-time numbers (b NULL: unary), carried out by the host:
 * for ints outside int64, and for results that leave it. */
int
lw_python_number_op(Lowerer *lw, const QdAst *node, const char *op, const Expr *a, const Expr *b,
                    Expr *out)
{
    QdHandle ha, hb = 0, r;
    RETURN_IF_ERROR(lw_to_handle(lw, node, a, &ha));
    if (b) {
        RETURN_IF_ERROR(lw_to_handle(lw, node, b, &hb));
    }
    RETURN_IF_ERROR(lw->host->number_op(lw->host->self, lw->ctx, op, ha, hb, &r));
    return lw_from_handle(lw, node, r, out);
}

static const char *const binop_symbols[] = {"+", "-", "*", "@", "/", "%", "**", "<<", ">>", "|",
                                             "^", "&", "//"};

const char *
lw_binop_symbol(int op)
{
    return binop_symbols[op];
}

int
lw_fold_binary(Lowerer *lw, const QdAst *node, int op, const Expr *a, const Expr *b, Expr *out)
{
    if (a->is_big || b->is_big) {
        return lw_python_number_op(lw, node, binop_symbols[op], a, b, out);
    }
    Expr e = {0};
    bool is_float = a->kind == EX_FLOAT || b->kind == EX_FLOAT;
    double x = a->kind == EX_FLOAT ? a->fval : (double)a->ival;
    double y = b->kind == EX_FLOAT ? b->fval : (double)b->ival;
    int64_t i = a->ival, j = b->ival;
    bool overflow = false;
    if (op == QD_BIN_DIV) {
        if (y == 0) {
            return lw_error(lw, node, QD_ERR_COMPILATION, "ZeroDivisionError: division by zero");
        }
        e.kind = EX_FLOAT;
        e.fval = x / y;
        *out = e;
        return 0;
    }
    if (is_float) {
        e.kind = EX_FLOAT;
        switch (op) {
        case QD_BIN_ADD: e.fval = x + y; break;
        case QD_BIN_SUB: e.fval = x - y; break;
        case QD_BIN_MUL: e.fval = x * y; break;
        case QD_BIN_POW: e.fval = pow(x, y); break;
        case QD_BIN_FLOORDIV:
        case QD_BIN_MOD:
            if (y == 0) {
                return lw_error(lw, node, QD_ERR_COMPILATION, "ZeroDivisionError: float modulo");
            }
            e.fval = op == QD_BIN_FLOORDIV ? floor(x / y) : x - floor(x / y) * y;
            break;
        default:
            return lw_error(lw, node, QD_ERR_TYPE, "unsupported operand type(s) for this operator: float");
        }
        *out = e;
        return 0;
    }
    e.kind = EX_INT;
    switch (op) {
    case QD_BIN_ADD: overflow = __builtin_add_overflow(i, j, &e.ival); break;
    case QD_BIN_SUB: overflow = __builtin_sub_overflow(i, j, &e.ival); break;
    case QD_BIN_MUL: overflow = __builtin_mul_overflow(i, j, &e.ival); break;
    case QD_BIN_FLOORDIV:
    case QD_BIN_MOD:
        if (j == 0) {
            return lw_error(lw, node, QD_ERR_COMPILATION,
                            "ZeroDivisionError: integer division or modulo by zero");
        }
        if (i == INT64_MIN && j == -1) {
            overflow = true;
            break;
        }
        e.ival = op == QD_BIN_FLOORDIV ? py_floordiv(i, j) : py_mod(i, j);
        break;
    case QD_BIN_POW:
        if (j < 0) {
            e.kind = EX_FLOAT;
            e.fval = pow(x, y);
            break;
        }
        e.ival = 1;
        for (int64_t k = 0; k < j && !overflow; k++) {
            overflow = __builtin_mul_overflow(e.ival, i, &e.ival);
        }
        break;
    case QD_BIN_LSHIFT:
        if (j < 0) {
            return lw_error(lw, node, QD_ERR_COMPILATION, "ValueError: negative shift count");
        }
        overflow = j >= 63 || (i != 0 && (i > (INT64_MAX >> j) || i < (INT64_MIN >> j)));
        e.ival = overflow ? 0 : (int64_t)((uint64_t)i << j);
        break;
    case QD_BIN_RSHIFT:
        if (j < 0) {
            return lw_error(lw, node, QD_ERR_COMPILATION, "ValueError: negative shift count");
        }
        e.ival = j >= 63 ? (i < 0 ? -1 : 0) : (i >> j);
        break;
    case QD_BIN_BITAND: e.ival = i & j; break;
    case QD_BIN_BITOR: e.ival = i | j; break;
    case QD_BIN_BITXOR: e.ival = i ^ j; break;
    default:
        return lw_error(lw, node, QD_ERR_TYPE, "unsupported operator for Python integers");
    }
    if (overflow) { /* Python ints have no range: the host computes it */
        return lw_python_number_op(lw, node, binop_symbols[op], a, b, out);
    }
    if (a->kind == EX_BOOL && b->kind == EX_BOOL &&
        (op == QD_BIN_BITAND || op == QD_BIN_BITOR || op == QD_BIN_BITXOR)) {
        e.kind = EX_BOOL;
    }
    *out = e;
    return 0;
}

