/* frontend/lower_cond.c -- conditional values: `a and b`, `a or b`, `x if c else y`.
 *
 * With a compile-time deciding operand the value is chosen at compile time. Otherwise a runtime
 * `if` computes each side in its own region and the two values meet in a slot of their promoted
 * type (Python's value semantics: `x or y` is x when x is true); with short_circuit off both
 * operands of and/or are evaluated and combined bitwise. A vector/matrix operand makes and/or
 * element-wise (ExprOps.logical), and tuple/matrix branches of `x if c else y` merge element by
 * element (lw_matrix_merge_branches).
 */
#include "lower.h"

#include <string.h>

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
                        is_and ? "and" : "or", lw_type_name(lv.ty));
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

int
lw_ifexp(Lowerer *lw, const QdAst *node, Expr *out)
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

int
lw_boolop(Lowerer *lw, const QdAst *node, Expr *out)
{
    return lower_boolop_from(lw, node, 0, out);
}
