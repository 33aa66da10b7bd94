/* ir/ir_verify_types.c -- typing rules of the IR verifier, one case per QdSig.
 *
 * ir_verify.c has checked where an instruction sits and that its operands are visible values;
 * this file checks, in order: its immediate (the imm column of ops.def), its operand count, the
 * presence and well-formedness of its result, and the typing rule of its sig column. Rules are
 * written once per sig, never per opcode: adding an opcode with an existing sig needs no code
 * here.
 *
 * Templates: a type parameter stands for a scalar of its declared kind (`T: float` passes where
 * a float is needed, `T: type` passes any scalar check, `T: integral` fails a float check);
 * equality between types is always checked, parameters being equal when they share a name.
 * Calls and `ret` have their own file, ir_verify_call.c.
 */
#include "verify_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const class_names[] = {"a scalar", "an integer", "a float"};
static const char *const space_names[] = {"global", "shared", "local"};

/* Whether each sig defines a result: 1 always, 0 never, -1 decided by its own rule (a call
 * has one when the callee returns something). SIG_FOR's result is the induction variable. */
static const int8_t sig_has_result[] = {
    [SIG_NONE] = 0,       [SIG_CONST] = 1,     [SIG_ARITH] = 1,      [SIG_INT2] = 1,
    [SIG_FLOAT2] = 1,     [SIG_SHIFT] = 1,     [SIG_UNARY] = 1,      [SIG_INT1] = 1,
    [SIG_FLOAT1] = 1,     [SIG_BITCOUNT] = 1,  [SIG_CMP] = 1,        [SIG_SELECT] = 1,
    [SIG_CAST] = 1,       [SIG_BITCAST] = 1,   [SIG_ALLOC] = 1,      [SIG_FIELD_PTR] = 1,
    [SIG_ELEM_PTR] = 1,   [SIG_ARRAY_PTR] = 1, [SIG_SHAPE] = 1,      [SIG_LOAD] = 1,
    [SIG_STORE] = 0,      [SIG_ATOMIC] = 1,    [SIG_ATOMIC_INT] = 1, [SIG_CAS] = 1,
    [SIG_IF] = 0,         [SIG_FOR] = 1,       [SIG_CALL] = -1,      [SIG_RET] = 0,
    [SIG_KERNEL_RET] = 0, [SIG_I32] = 1,       [SIG_I64] = 1,        [SIG_PTR_TO_INT] = 1,
    [SIG_SYNC_PRED] = 1,  [SIG_SYNC_MASK] = 0, [SIG_SHUFFLE] = 1,    [SIG_BALLOT] = 1,
    [SIG_MATCH] = 1,      [SIG_VOTE] = 1,      [SIG_PRINT] = 0,      [SIG_ASSERT] = 0,
    [SIG_PARTIAL] = 1,    [SIG_PARTIAL_INT] = 1,  [SIG_NN_MATVEC] = 0,  [SIG_MMA] = 0,
    [SIG_FIELD_ARRAY] = 1,
};

/***** type classes *****/

/* Whether ty belongs to the class; a type parameter belongs when its kind allows it. */
static bool
in_class(const Verifier *v, const QdType *ty, TyClass cls)
{
    if (ty == NULL) {
        return false;
    }
    if (ty->kind == QD_TY_PARAM) {
        const QdTParam *tp = verify_find_tparam(v, ty->name);
        if (tp == NULL || !qd_tparam_is_type(tp->kind)) {
            return false;
        }
        return tp->kind == QD_TPARAM_TYPE || (tp->kind == QD_TPARAM_FLOAT && cls != TC_INT) ||
               (tp->kind == QD_TPARAM_INTEGRAL && cls != TC_FLOAT);
    }
    if (!qd_type_is_scalar(ty) || ty->kind == QD_TY_VOID) {
        return false;
    }
    return cls == TC_SCALAR || (cls == TC_INT && qd_type_is_int(ty)) ||
           (cls == TC_FLOAT && qd_type_is_float(ty));
}

/* Whether ty is the scalar `kind`, or a type parameter that may stand for it. */
static bool
is_kind(const Verifier *v, const QdType *ty, QdTypeKind kind)
{
    if (ty != NULL && ty->kind == QD_TY_PARAM) {
        return in_class(v, ty, qd_type_is_float(qd_type_scalar(kind)) ? TC_FLOAT : TC_INT);
    }
    return ty != NULL && ty->kind == kind;
}

/***** checks that report *****/

/* Each need_* helper returns 0 when the type passes and otherwise reports "`op`: <what> must
 * be ..., got <type>" or "<what> differ (a, b)". `what` names the part of the instruction, so
 * one helper serves every sig. */

/* Type of operand k, or NULL when there is no such operand. */
const QdType *
verify_arg_type(const Verifier *v, const QdInst *inst, uint32_t k)
{
    return k < inst->nargs ? v->f->values[inst->args[k]].type : NULL;
}

/* ty is in the class (scalar, integer, float). */
int
verify_need_class(Verifier *v, const QdInst *inst, const char *what, const QdType *ty, TyClass cls)
{
    if (in_class(v, ty, cls)) {
        return 0;
    }
    return verify_fail(v, inst, "%s must be %s, got %s", what, class_names[cls],
                       verify_type_name(v, 0, ty));
}

/* ty is exactly one scalar type (i32 for indices and lanes, u1 for comparisons ...). */
static int
need_kind(Verifier *v, const QdInst *inst, const char *what, const QdType *ty, QdTypeKind kind)
{
    if (is_kind(v, ty, kind)) {
        return 0;
    }
    return verify_fail(v, inst, "%s must be %s, got %s", what, qd_type_scalar_name(kind),
                       verify_type_name(v, 0, ty));
}

/* "what differ (a, b)" unless the two types are equal. */
int
verify_need_equal(Verifier *v, const QdInst *inst, const char *what, const QdType *a,
                  const QdType *b)
{
    if (a != NULL && b != NULL && qd_type_equal(a, b)) {
        return 0;
    }
    return verify_fail(v, inst, "%s differ (%s, %s)", what, verify_type_name(v, 0, a),
                       verify_type_name(v, 1, b));
}

/* The result must be ptr<elem, space>. */
static int
need_ptr_to(Verifier *v, const QdInst *inst, const QdType *elem, QdSpace space)
{
    const QdType *ty = inst->type;

    if (ty->kind == QD_TY_PTR && ty->space == space && qd_type_equal(ty->elem, elem)) {
        return 0;
    }
    return verify_fail(v, inst, "result must be ptr<%s, %s>, got %s", verify_type_name(v, 0, elem),
                       space_names[space], verify_type_name(v, 1, ty));
}

/* The scalar pointee of pointer type `ty`, or NULL after reporting why there is none. */
static const QdType *
scalar_pointee(Verifier *v, const QdInst *inst, const QdType *ty)
{
    if (ty == NULL || ty->kind != QD_TY_PTR) {
        verify_fail(v, inst, "first operand must be a pointer, got %s", verify_type_name(v, 0, ty));
        return NULL;
    }
    if (!in_class(v, ty->elem, TC_SCALAR)) {
        verify_fail(v, inst, "pointee must be a scalar, got %s", verify_type_name(v, 0, ty->elem));
        return NULL;
    }
    return ty->elem;
}

/***** immediates, operand count, result *****/

/* The immediate of the op's imm kind is present and well formed. Compile-time expressions
 * (template constants, unroll bounds) are the only immediates that can refer to values, so
 * they are checked for visibility here, before the instruction defines anything. */
static int
check_imm(Verifier *v, const QdInst *inst)
{
    bool concrete = (v->flags & QD_VERIFY_CONCRETE) != 0;

    switch (qd_op_info[inst->op].imm) {
    case IMM_CONST:
        if (inst->imm.cst.expr == NULL) {
            return 0;
        }
        if (concrete) {
            return verify_fail(v, inst, "constant expression left in a codegen-ready module");
        }
        return verify_cexpr(v, inst, inst->imm.cst.expr);
    case IMM_FIELD:
        if (inst->imm.field == NULL ||
            qd_module_find_field(v->m, inst->imm.field->name) != inst->imm.field) {
            return verify_fail(v, inst, "names no field declared in the module");
        }
        return 0;
    case IMM_CALLEE:
        if (inst->imm.call.name == NULL) {
            return verify_fail(v, inst, "names no callee");
        }
        return 0;
    case IMM_UNROLL:
        if (concrete) {
            return verify_fail(v, inst, "left in a codegen-ready module (instantiate first)");
        }
        RETURN_IF_ERROR(verify_cexpr(v, inst, inst->imm.unroll.lo));
        return verify_cexpr(v, inst, inst->imm.unroll.hi);
    case IMM_TASK:
        if (inst->imm.task.kind != QD_TASK_SERIAL && inst->imm.task.kind != QD_TASK_RANGE_FOR) {
            return verify_fail(v, inst, "invalid task kind");
        }
        return 0;
    case IMM_STRING:
        if (inst->imm.str == NULL) {
            return verify_fail(v, inst, "missing string");
        }
        return 0;
    case IMM_MATVEC: {
        const QdMatvec *mv = &inst->imm.matvec;
        if ((unsigned)mv->layout >= QD_MAT_LAYOUT_COUNT_) {
            return verify_fail(v, inst, "invalid matrix layout");
        }
        if (mv->rows == 0 || mv->cols == 0) {
            return verify_fail(v, inst, "empty matrix (%u x %u)", mv->rows, mv->cols);
        }
        if (mv->offset < 0 || mv->bias_offset < 0 || mv->stride < 0) {
            return verify_fail(v, inst, "negative offset or stride");
        }
        if (mv->layout == QD_MAT_MMA) {
            if (mv->stride % 16 != 0 || mv->stride < ((int64_t)mv->cols + 15) / 16 * 16) {
                return verify_fail(v, inst, "stride %" PRId64 " of mma_fragments is not the %u "
                                   "columns padded to a multiple of 16", mv->stride, mv->cols);
            }
            return mv->has_bias != (inst->nargs == 4)
                       ? verify_fail(v, inst, "the bias immediate and the bias operand go together")
                       : 0;
        }
        uint32_t inner = mv->layout == QD_MAT_ROW_MAJOR ? mv->cols : mv->rows;
        if (mv->stride < (int64_t)inner) {
            return verify_fail(v, inst, "stride %" PRId64 " is less than the %u elements of a %s",
                               mv->stride, inner, mv->layout == QD_MAT_ROW_MAJOR ? "row" : "column");
        }
        if (mv->has_bias != (inst->nargs == 4)) {
            return verify_fail(v, inst, "the bias immediate and the bias operand go together");
        }
        return 0;
    }
    case IMM_NONE:
    case IMM_INT:
        return 0;
    }
    return 0;
}

/* Fixed counts come from ops.def; variable ones from the field, the ndarray or (in their own
 * rules) the callee and the function's result type. */
static int
check_arity(Verifier *v, const QdInst *inst)
{
    int64_t want = qd_op_info[inst->op].nargs;

    switch (qd_op_info[inst->op].sig) {
    case SIG_FIELD_PTR:
        want = inst->imm.field->ndim;
        break;
    case SIG_ELEM_PTR: {
        const QdType *nd = verify_arg_type(v, inst, 0);
        if (nd == NULL || nd->kind != QD_TY_NDARRAY) {
            return verify_fail(v, inst, "first operand must be an ndarray, got %s",
                               verify_type_name(v, 0, nd));
        }
        want = 1 + (int64_t)nd->ndim;
        break;
    }
    case SIG_CALL:
    case SIG_RET:
    case SIG_PRINT:
        return 0;
    case SIG_NN_MATVEC:
        if (inst->nargs != 3 && inst->nargs != 4) {
            return verify_fail(v, inst, "expects 3 or 4 operands (y, x, weights[, bias]), got %u",
                               inst->nargs);
        }
        return 0;
    case SIG_ASSERT:
        if (inst->nargs < 1) {
            return verify_fail(v, inst, "expects a condition");
        }
        return 0;
    default:
        break;
    }
    if ((int64_t)inst->nargs != want) {
        return verify_fail(v, inst, "expects %" PRId64 " operand%s, got %u", want,
                           want == 1 ? "" : "s", inst->nargs);
    }
    return 0;
}

/* A result exactly when the sig produces one (for loops and unroll: the body variable). */
static int
check_result(Verifier *v, const QdInst *inst)
{
    const QdOpInfo *info = &qd_op_info[inst->op];
    int want = info->imm == IMM_UNROLL ? 1 : sig_has_result[info->sig];
    bool has = inst->result != QD_NO_VALUE;

    if (want < 0) {
        return 0;
    }
    if (want && !has) {
        return verify_fail(v, inst, "must define a value");
    }
    if (!want && has) {
        return verify_fail(v, inst, "produces no value but defines %s",
                           verify_value_name(v, 0, inst->result));
    }
    if (!has) {
        if (inst->type != NULL && inst->type->kind != QD_TY_VOID) {
            return verify_fail(v, inst, "produces no value but has type %s",
                               verify_type_name(v, 0, inst->type));
        }
        return 0;
    }
    RETURN_IF_ERROR(verify_value_type(v, inst, inst->type));
    if (info->imm == IMM_UNROLL) {
        return need_kind(v, inst, "unroll variable", inst->type, QD_TY_I32);
    }
    return 0;
}

/***** rules needing more than a line *****/

/* Operand k of nn_matvec points to a local array of n floats; the element type, or NULL. */
static const QdType *
matvec_vector(Verifier *v, const QdInst *inst, uint32_t k, const char *what, uint32_t n)
{
    const QdType *p = verify_arg_type(v, inst, k);
    if (p->kind != QD_TY_PTR || p->space != QD_SPACE_LOCAL || p->elem == NULL ||
        p->elem->kind != QD_TY_ARRAY || !in_class(v, p->elem->elem, TC_FLOAT)) {
        verify_fail(v, inst, "%s must point to a local array of floats, got %s", what,
                    verify_type_name(v, 0, p));
        return NULL;
    }
    if (p->elem->count_expr == NULL && p->elem->count != n) {
        verify_fail(v, inst, "%s has %u elements, the %u x %u matrix%s needs %u", what,
                    p->elem->count, inst->imm.matvec.rows, inst->imm.matvec.cols,
                    inst->imm.matvec.transpose ? " (transposed)" : "", n);
        return NULL;
    }
    return p->elem->elem;
}

/* Operand k of mma_m16n8k16 points to a local array of n elements of kind `kind`. */
static int
fragment(Verifier *v, const QdInst *inst, uint32_t k, const char *what, QdTypeKind kind, uint32_t n)
{
    const QdType *p = verify_arg_type(v, inst, k);
    if (p == NULL || p->kind != QD_TY_PTR || p->space != QD_SPACE_LOCAL || p->elem == NULL ||
        p->elem->kind != QD_TY_ARRAY || p->elem->elem == NULL || p->elem->elem->kind != kind ||
        p->elem->count_expr != NULL || p->elem->count != n) {
        return verify_fail(v, inst, "%s must point to a local array of %u %s, got %s", what, n,
                           kind == QD_TY_F32 ? "f32" : "f16", verify_type_name(v, 0, p));
    }
    return 0;
}

/* nn_matvec %y, %x, %w[, %b]: y and x local arrays of one float type and of the lengths the
 * matrix gives them; weights a float ndarray of 1 dimension (2 for a row-major view of a 2-D
 * ndarray); the bias a 1-D float ndarray. */
static int
check_matvec(Verifier *v, const QdInst *inst)
{
    const QdMatvec *mv = &inst->imm.matvec;
    const QdType *ty = matvec_vector(v, inst, 0, "the result", qd_matvec_out_len(mv));
    if (ty == NULL) {
        return -1;
    }
    const QdType *tx = matvec_vector(v, inst, 1, "the input", qd_matvec_in_len(mv));
    if (tx == NULL) {
        return -1;
    }
    RETURN_IF_ERROR(verify_need_equal(v, inst, "input and result element types", tx, ty));
    for (uint32_t k = 2; k < inst->nargs; k++) {
        const QdType *nd = verify_arg_type(v, inst, k);
        const char *what = k == 2 ? "weights" : "bias";
        if (nd->kind != QD_TY_NDARRAY || !in_class(v, nd->elem, TC_FLOAT)) {
            return verify_fail(v, inst, "%s must be an ndarray of floats, got %s", what,
                               verify_type_name(v, 0, nd));
        }
        bool two_d = k == 2 && nd->ndim == 2 && mv->layout == QD_MAT_ROW_MAJOR;
        if (nd->ndim != 1 && !two_d) {
            return verify_fail(v, inst, "%s must be a 1-D ndarray%s, got %s", what,
                               k == 2 ? " (or a 2-D one, row-major)" : "",
                               verify_type_name(v, 0, nd));
        }
    }
    return 0;
}

/* A literal constant must be representable in its integer type (u1: 0 or 1). A constant
 * expression (integer-valued) may have any scalar type: instantiation converts its value, and
 * checks that it fits an integer type. */
static int
check_const(Verifier *v, const QdInst *inst)
{
    const QdType *ty = inst->type;
    const QdConst *cst = &inst->imm.cst;

    RETURN_IF_ERROR(verify_need_class(v, inst, "constant type", ty, TC_SCALAR));
    if (cst->expr != NULL) {
        return 0;
    }
    if (ty->kind == QD_TY_PARAM || !qd_type_is_int(ty)) {
        return 0;
    }
    uint32_t bits = qd_type_bits(ty);
    if (qd_type_is_signed(ty)) {
        int64_t lim = bits < 64 ? INT64_C(1) << (bits - 1) : 0;
        if (bits < 64 && (cst->i < -lim || cst->i >= lim)) {
            return verify_fail(v, inst, "value %" PRId64 " does not fit in %s", cst->i,
                               verify_type_name(v, 0, ty));
        }
    } else if (bits < 64 && cst->u >= (UINT64_C(1) << bits)) {
        return verify_fail(v, inst, "value %" PRIu64 " does not fit in %s", cst->u,
                           verify_type_name(v, 0, ty));
    }
    return 0;
}

/* alloca gives local memory, shared_alloc shared memory, tmp_alloc global memory. */
static int
check_alloc(Verifier *v, const QdInst *inst)
{
    QdSpace space = inst->op == QD_OP_ALLOCA         ? QD_SPACE_LOCAL
                    : inst->op == QD_OP_SHARED_ALLOC ? QD_SPACE_SHARED
                                                     : QD_SPACE_GLOBAL;

    if (inst->type->kind != QD_TY_PTR || inst->type->space != space) {
        return verify_fail(v, inst, "result must be a %s pointer, got %s", space_names[space],
                           verify_type_name(v, 0, inst->type));
    }
    return 0;
}

/* field_ptr and elem_ptr: i32 or i64 indices from operand `first` on (i64 where an index may
 * pass 2^31); a global pointer to elem. */
static int
check_indexing(Verifier *v, const QdInst *inst, uint32_t first, const QdType *elem)
{
    for (uint32_t k = first; k < inst->nargs; k++) {
        const QdType *ty = verify_arg_type(v, inst, k);
        if (!is_kind(v, ty, QD_TY_I32) && !is_kind(v, ty, QD_TY_I64)) {
            return verify_fail(v, inst, "index must be i32 or i64, got %s",
                               verify_type_name(v, 0, ty));
        }
    }
    return need_ptr_to(v, inst, elem, QD_SPACE_GLOBAL);
}

/* (ptr<[N x T], s>, integer) -> ptr<T, s>. */
static int
check_array_ptr(Verifier *v, const QdInst *inst)
{
    const QdType *p = verify_arg_type(v, inst, 0);

    if (p->kind != QD_TY_PTR || p->elem == NULL || p->elem->kind != QD_TY_ARRAY) {
        return verify_fail(v, inst, "first operand must point to an array, got %s",
                           verify_type_name(v, 0, p));
    }
    RETURN_IF_ERROR(verify_need_class(v, inst, "index", verify_arg_type(v, inst, 1), TC_INT));
    return need_ptr_to(v, inst, p->elem->elem, p->space);
}

/* Atomics: a global or shared pointer to a scalar (an integer for the bitwise ones and cas);
 * the other operands and the result have the pointee's type. */
static int
check_atomic(Verifier *v, const QdInst *inst, QdSig sig)
{
    const QdType *p = verify_arg_type(v, inst, 0);
    const QdType *elem = scalar_pointee(v, inst, p);

    if (elem == NULL) {
        return -1;
    }
    if (p->space != QD_SPACE_GLOBAL && p->space != QD_SPACE_SHARED) {
        return verify_fail(v, inst, "needs a global or shared pointer, got %s",
                           verify_type_name(v, 0, p));
    }
    if (sig != SIG_ATOMIC) {
        RETURN_IF_ERROR(verify_need_class(v, inst, "pointee", elem, TC_INT));
    }
    for (uint32_t k = 1; k < inst->nargs; k++) {
        const QdType *ty = verify_arg_type(v, inst, k);
        RETURN_IF_ERROR(verify_need_equal(v, inst, "operand and pointee types", ty, elem));
    }
    return verify_need_equal(v, inst, "result and pointee types", inst->type, elem);
}

/* partial_*: a global pointer to a scalar (an integer for the bitwise ones); the result is a
 * local pointer to the same type. */
static int
check_partial(Verifier *v, const QdInst *inst, QdSig sig)
{
    const QdType *p = verify_arg_type(v, inst, 0);
    const QdType *elem = scalar_pointee(v, inst, p);

    if (elem == NULL) {
        return -1;
    }
    if (p->space != QD_SPACE_GLOBAL) {
        return verify_fail(v, inst, "needs a global pointer, got %s", verify_type_name(v, 0, p));
    }
    if (sig == SIG_PARTIAL_INT) {
        RETURN_IF_ERROR(verify_need_class(v, inst, "pointee", elem, TC_INT));
    }
    return need_ptr_to(v, inst, elem, QD_SPACE_LOCAL);
}

/***** the rules, by sig *****/

/* Class of the sigs whose operands and result share one type. */
static TyClass
shared_class(QdSig sig)
{
    if (sig == SIG_INT2 || sig == SIG_INT1) {
        return TC_INT;
    }
    if (sig == SIG_FLOAT2 || sig == SIG_FLOAT1) {
        return TC_FLOAT;
    }
    return TC_SCALAR;
}

/* The typing rule of the instruction's sig column: one case per QdSig, shared by every op
 * with that sig. */
static int
check_sig(Verifier *v, const QdInst *inst)
{
    QdSig sig = qd_op_info[inst->op].sig;
    const QdType *res = inst->type;
    const QdType *a = verify_arg_type(v, inst, 0);
    const QdType *b = verify_arg_type(v, inst, 1);
    const QdType *c, *p;

    /* Operand counts were checked by check_arity, so a, b and verify_arg_type(v, inst, 2) are
     * non-NULL wherever the sig has that many operands; res is non-NULL when there is a result. */
    switch (sig) {
    case SIG_NONE:
        return 0;
    case SIG_CONST:
        return check_const(v, inst);
    case SIG_ARITH:
    case SIG_INT2:
    case SIG_FLOAT2:
    case SIG_UNARY:
    case SIG_INT1:
    case SIG_FLOAT1:
        /* One type throughout: the operand(s) and the result. */
        if (inst->nargs == 2) {
            RETURN_IF_ERROR(verify_need_equal(v, inst, "operand types", a, b));
        }
        RETURN_IF_ERROR(verify_need_class(v, inst, "operand type", a, shared_class(sig)));
        return verify_need_equal(v, inst, "operand and result types", a, res);
    case SIG_SHIFT:
        /* The amount may have another integer type than the shifted value. */
        RETURN_IF_ERROR(verify_need_class(v, inst, "shifted operand", a, TC_INT));
        RETURN_IF_ERROR(verify_need_class(v, inst, "shift amount", b, TC_INT));
        return verify_need_equal(v, inst, "operand and result types", a, res);
    case SIG_BITCOUNT:
        RETURN_IF_ERROR(verify_need_class(v, inst, "operand type", a, TC_INT));
        return need_kind(v, inst, "result type", res, QD_TY_I32);
    case SIG_CMP:
        RETURN_IF_ERROR(verify_need_equal(v, inst, "operand types", a, b));
        RETURN_IF_ERROR(verify_need_class(v, inst, "operand type", a, TC_SCALAR));
        return need_kind(v, inst, "result type", res, QD_TY_U1);
    case SIG_SELECT:
        /* select %c, %a, %b: any integer condition, like `if`. */
        RETURN_IF_ERROR(verify_need_class(v, inst, "condition", a, TC_INT));
        c = verify_arg_type(v, inst, 2);
        RETURN_IF_ERROR(verify_need_equal(v, inst, "operand types", b, c));
        RETURN_IF_ERROR(verify_need_class(v, inst, "operand type", b, TC_SCALAR));
        return verify_need_equal(v, inst, "operand and result types", b, res);
    case SIG_CAST:
    case SIG_BITCAST:
        if (sig == SIG_BITCAST && a->kind == QD_TY_PTR) {
            /* The same global address, read as another scalar type. */
            if (a->space != QD_SPACE_GLOBAL || res->kind != QD_TY_PTR ||
                res->space != QD_SPACE_GLOBAL || !in_class(v, a->elem, TC_SCALAR) ||
                !in_class(v, res->elem, TC_SCALAR)) {
                return verify_fail(v, inst,
                                   "a pointer bitcast takes and gives global pointers to scalars "
                                   "(%s, %s)",
                                   verify_type_name(v, 0, a), verify_type_name(v, 1, res));
            }
            return 0;
        }
        /* Any scalar to any scalar; a bitcast keeps the width (unknown for a parameter). */
        RETURN_IF_ERROR(verify_need_class(v, inst, "operand type", a, TC_SCALAR));
        RETURN_IF_ERROR(verify_need_class(v, inst, "result type", res, TC_SCALAR));
        if (sig == SIG_BITCAST && a->kind != QD_TY_PARAM && res->kind != QD_TY_PARAM &&
            qd_type_bits(a) != qd_type_bits(res)) {
            return verify_fail(v, inst, "operand and result widths differ (%s, %s)",
                               verify_type_name(v, 0, a), verify_type_name(v, 1, res));
        }
        return 0;
    case SIG_ALLOC:
        return check_alloc(v, inst);
    case SIG_FIELD_PTR:
        return check_indexing(v, inst, 0, inst->imm.field->elem);
    case SIG_FIELD_ARRAY:
        if (res->kind != QD_TY_NDARRAY || res->elem->kind != inst->imm.field->elem->kind ||
            res->ndim != inst->imm.field->ndim) {
            return verify_fail(v, inst, "result must be the field's ndarray<%s, %u>, got %s",
                               qd_type_scalar_name(inst->imm.field->elem->kind),
                               inst->imm.field->ndim, verify_type_name(v, 0, res));
        }
        return 0;
    case SIG_ELEM_PTR:
        return check_indexing(v, inst, 1, a->elem);
    case SIG_ARRAY_PTR:
        return check_array_ptr(v, inst);
    case SIG_SHAPE:
        /* shape %x, axis: the immediate axis must name a dimension of the ndarray. */
        if (a->kind != QD_TY_NDARRAY) {
            return verify_fail(v, inst, "operand must be an ndarray, got %s",
                               verify_type_name(v, 0, a));
        }
        if (inst->imm.i < 0 || inst->imm.i >= (int64_t)a->ndim) {
            return verify_fail(v, inst, "axis %" PRId64 " out of range for %s", inst->imm.i,
                               verify_type_name(v, 0, a));
        }
        return need_kind(v, inst, "result type", res, QD_TY_I32);
    case SIG_LOAD:
    case SIG_STORE:
        /* Memory is accessed one scalar at a time: arrays go through array_ptr first. */
        if ((p = scalar_pointee(v, inst, a)) == NULL) {
            return -1;
        }
        if (sig == SIG_STORE) {
            return verify_need_equal(v, inst, "stored and pointee types", b, p);
        }
        return verify_need_equal(v, inst, "result and pointee types", res, p);
    case SIG_ATOMIC:
    case SIG_ATOMIC_INT:
    case SIG_CAS:
        return check_atomic(v, inst, sig);
    case SIG_PARTIAL:
    case SIG_PARTIAL_INT:
        return check_partial(v, inst, sig);
    case SIG_IF:
    case SIG_ASSERT:
        /* Conditions are any integer (nonzero = true), not only u1; values after the message
         * are scalars formatted into it. */
        RETURN_IF_ERROR(verify_need_class(v, inst, "condition", a, TC_INT));
        for (uint32_t k = 1; k < inst->nargs; k++) {
            c = verify_arg_type(v, inst, k);
            RETURN_IF_ERROR(verify_need_class(v, inst, "message value", c, TC_SCALAR));
        }
        return 0;
    case SIG_FOR:
        /* for / parallel_for %i = %lo to %hi: %i (the result) has the bounds' integer type. */
        RETURN_IF_ERROR(verify_need_class(v, inst, "loop bound", a, TC_INT));
        RETURN_IF_ERROR(verify_need_equal(v, inst, "loop bound types", a, b));
        return verify_need_equal(v, inst, "bound and induction variable types", a, res);
    case SIG_CALL:
        return verify_call(v, inst);
    case SIG_RET:
        return verify_ret(v, inst);
    case SIG_KERNEL_RET:
        if (inst->imm.i < 0) {
            return verify_fail(v, inst, "result index %" PRId64 " is negative", inst->imm.i);
        }
        return verify_need_class(v, inst, "returned value", a, TC_SCALAR);
    case SIG_I32:
        return need_kind(v, inst, "result type", res, QD_TY_I32);
    case SIG_I64:
        return need_kind(v, inst, "result type", res, QD_TY_I64);
    case SIG_PTR_TO_INT:
        if (scalar_pointee(v, inst, a) == NULL) {
            return -1;
        }
        return need_kind(v, inst, "result type", res, QD_TY_U64);
    case SIG_SYNC_PRED:
    case SIG_BALLOT:
    case SIG_VOTE:
        /* Integer predicate; the result type depends on the reduction. */
        RETURN_IF_ERROR(verify_need_class(v, inst, "predicate", a, TC_INT));
        return need_kind(v, inst, "result type", res,
                         sig == SIG_SYNC_PRED ? QD_TY_I32
                         : sig == SIG_BALLOT  ? QD_TY_U32
                                              : QD_TY_U1);
    case SIG_SYNC_MASK:
        /* subgroup_sync %mask: the lanes taking part, one bit per lane of the 32. */
        return need_kind(v, inst, "lane mask", a, QD_TY_U32);
    case SIG_MATCH:
        if (a == NULL || !in_class(v, a, TC_INT) || (qd_type_bits(a) != 32 && qd_type_bits(a) != 64)) {
            return verify_fail(v, inst, "match_any takes an integer of 32 or 64 bits");
        }
        return need_kind(v, inst, "result type", res, QD_TY_U32);
    case SIG_SHUFFLE:
        /* shuffle %v, %lane: the lane (or xor mask, or delta) is an i32. */
        RETURN_IF_ERROR(verify_need_class(v, inst, "shuffled value", a, TC_SCALAR));
        RETURN_IF_ERROR(need_kind(v, inst, "lane", b, QD_TY_I32));
        return verify_need_equal(v, inst, "operand and result types", a, res);
    case SIG_PRINT:
        for (uint32_t k = 0; k < inst->nargs; k++) {
            c = verify_arg_type(v, inst, k);
            RETURN_IF_ERROR(verify_need_class(v, inst, "printed value", c, TC_SCALAR));
        }
        return 0;
    case SIG_NN_MATVEC:
        return check_matvec(v, inst);
    case SIG_MMA:
        RETURN_IF_ERROR(fragment(v, inst, 0, "the accumulator", QD_TY_F32, 4));
        RETURN_IF_ERROR(fragment(v, inst, 1, "the A fragment", QD_TY_F16, 8));
        c = verify_arg_type(v, inst, 2);
        if (c && c->kind == QD_TY_PTR && c->space == QD_SPACE_GLOBAL && c->elem &&
            c->elem->kind == QD_TY_F16) {
            return 0; /* four consecutive elements in memory */
        }
        return fragment(v, inst, 2, "the B fragment", QD_TY_F16, 4);
    }
    return verify_fail(v, inst, "unknown typing rule");
}

/* The order matters: the immediate first (field_ptr's arity needs its field), then the
 * operand count (the sig rules index operands), then the result, then the rule itself. */
int
verify_inst_types(Verifier *v, QdInst *inst)
{
    RETURN_IF_ERROR(check_imm(v, inst));
    RETURN_IF_ERROR(check_arity(v, inst));
    RETURN_IF_ERROR(check_result(v, inst));
    return check_sig(v, inst);
}
