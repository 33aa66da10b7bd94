/* ir/ir_verify_call.c -- the verifier's rules for `call` and `ret` (sigs SIG_CALL, SIG_RET).
 *
 * A call must name a func or template of the module (never a kernel: kernels are launched by
 * the runtime, not called). Its arguments and result must match the callee's signature. For a
 * template the call also carries template arguments, written in the callee's parameter order,
 * which must fit the parameters' kinds (`T: float` takes a float type, `N: int` an integer
 * expression); parameters whose types are generic are not compared with the arguments: that
 * needs the substitution `instantiate` performs, and it checks them then.
 *
 * The callee may appear later in the module than the call, so it may not be verified yet: only
 * what the call needs of it is read, with guards.
 */
#include "verify_internal.h"

#include <stdio.h>

/* Template arguments, in the callee's parameter order, must fit the parameters' kinds. */
static int
check_template_args(Verifier *v, const QdInst *inst, const QdFunc *callee)
{
    const QdCallee *call = &inst->imm.call;
    uint32_t n = call->ntype_args + call->nint_args;
    uint32_t ti = 0, ii = 0;
    char what[160];

    if (n != callee->ntparams) {
        return verify_fail(v, inst, "@%s takes %u template arguments, got %u", callee->name,
                           callee->ntparams, n);
    }
    for (uint32_t k = 0; k < n; k++) {
        const QdTParam *tp = &callee->tparams[k];
        bool is_int =
            call->args_order != NULL ? call->args_order[k] != 0 : tp->kind == QD_TPARAM_INT;
        if (is_int != (tp->kind == QD_TPARAM_INT) ||
            (is_int ? ii >= call->nint_args : ti >= call->ntype_args)) {
            return verify_fail(v, inst, "template argument %s of @%s must be %s", tp->name,
                               callee->name, tp->kind == QD_TPARAM_INT ? "an integer" : "a type");
        }
        if (is_int) {
            RETURN_IF_ERROR(verify_cexpr(v, inst, call->int_args[ii++]));
            continue;
        }
        const QdType *ty = call->type_args[ti++];
        TyClass cls = tp->kind == QD_TPARAM_FLOAT      ? TC_FLOAT
                      : tp->kind == QD_TPARAM_INTEGRAL ? TC_INT
                                                       : TC_SCALAR;
        RETURN_IF_ERROR(verify_type(v, inst, ty));
        snprintf(what, sizeof(what), "template argument %s of @%s", tp->name, callee->name);
        RETURN_IF_ERROR(verify_need_class(v, inst, what, ty, cls));
    }
    return 0;
}

/* A call names a func or template of the module; arguments and result match its signature,
 * except where a template's parameter types are generic. */
int
verify_call(Verifier *v, const QdInst *inst)
{
    const QdCallee *call = &inst->imm.call;
    QdFunc *callee = qd_module_find_func(v->m, call->name);

    if (callee == NULL) {
        return verify_fail(v, inst, "unknown function @%s", call->name);
    }
    if (callee->kind == QD_FUNC_KERNEL) {
        return verify_fail(v, inst, "cannot call kernel @%s", callee->name);
    }
    bool is_template = callee->kind == QD_FUNC_TEMPLATE;
    if (is_template && (v->flags & QD_VERIFY_CONCRETE)) {
        return verify_fail(v, inst, "call of template @%s in a codegen-ready module (run `instantiate`)",
                           callee->name);
    }
    if (is_template) {
        RETURN_IF_ERROR(check_template_args(v, inst, callee));
    } else if (call->ntype_args + call->nint_args != 0) {
        return verify_fail(v, inst, "@%s is not a template but gets template arguments",
                           callee->name);
    }
    if (inst->nargs != callee->nparams) {
        return verify_fail(v, inst, "@%s takes %u arguments, got %u", callee->name, callee->nparams,
                           inst->nargs);
    }
    for (uint32_t k = 0; k < inst->nargs; k++) {
        /* The callee may come later in the module, not verified yet: guard its tables. */
        uint32_t id = callee->params[k];
        const QdType *want = id < callee->nvalues ? callee->values[id].type : NULL;
        if (want != NULL && is_template && qd_type_is_generic(want)) {
            continue;
        }
        if (want == NULL || !qd_type_equal(verify_arg_type(v, inst, k), want)) {
            return verify_fail(v, inst, "argument %u of @%s has type %s, expected %s", k,
                               callee->name, verify_type_name(v, 0, verify_arg_type(v, inst, k)),
                               verify_type_name(v, 1, want));
        }
    }
    if (callee->ret == NULL || callee->ret->kind == QD_TY_VOID) {
        if (inst->result != QD_NO_VALUE) {
            return verify_fail(v, inst, "@%s returns nothing, but the call defines %s",
                               callee->name, verify_value_name(v, 0, inst->result));
        }
        return 0;
    }
    if (inst->result == QD_NO_VALUE) {
        return verify_fail(v, inst, "@%s returns %s, but the call defines no value", callee->name,
                           verify_type_name(v, 0, callee->ret));
    }
    RETURN_IF_ERROR(verify_value_type(v, inst, inst->type));
    if (is_template && qd_type_is_generic(callee->ret)) {
        return 0;
    }
    return verify_need_equal(v, inst, "result and callee's return types", inst->type, callee->ret);
}

/* `ret` carries a value exactly when the function has a result type, of that type. */
int
verify_ret(Verifier *v, const QdInst *inst)
{
    const QdType *ret = v->f->ret;

    if (ret->kind == QD_TY_VOID) {
        if (inst->nargs != 0) {
            return verify_fail(v, inst, "@%s returns nothing, but `ret` has a value", v->f->name);
        }
        return 0;
    }
    if (inst->nargs != 1) {
        return verify_fail(v, inst, "@%s returns %s: `ret` needs exactly one value", v->f->name,
                           verify_type_name(v, 0, ret));
    }
    return verify_need_equal(v, inst, "returned and declared types", verify_arg_type(v, inst, 0),
                             ret);
}
