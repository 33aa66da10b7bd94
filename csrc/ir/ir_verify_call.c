/* ir/ir_verify_call.c -- the verifier's rules for `call` and `ret` (sigs SIG_CALL, SIG_RET).
 *
 * A call must name a func or template of the module (never a kernel: kernels are launched by
 * the runtime, not called). Its arguments and result must match the callee's signature. For a
 * template the call also carries template arguments, written in the callee's parameter order,
 * which must fit the parameters' kinds (`T: float` takes a float type, `N: int` an integer
 * expression, `F: func` a function); parameters whose types are generic are not compared with
 * the arguments: that needs the substitution `instantiate` performs, and it checks them then.
 * Inside a template, a call of one of its `func` parameters is checked when it is instantiated.
 *
 * The callee may appear later in the module than the call, so it may not be verified yet: only
 * what the call needs of it is read, with guards.
 */
#include "verify_internal.h"

#include <stdio.h>

static int check_template_args(Verifier *v, const QdInst *inst, const QdCallee *call,
                               const QdFunc *callee);

/* A function argument of a template names a func, a template's instance (`@t<args>`, whose
 * arguments are checked in turn) or, inside a template, one of its own `func` parameters. */
static int
check_func_arg(Verifier *v, const QdInst *inst, const QdCallee *fa)
{
    const QdTParam *tp = verify_find_tparam(v, fa->name);
    if (tp != NULL && tp->kind == QD_TPARAM_FUNC && qd_callee_ntargs(fa) == 0) {
        return 0;
    }
    const QdFunc *f = qd_module_find_func(v->m, fa->name);
    if (f == NULL || f->kind == QD_FUNC_KERNEL) {
        return verify_fail(v, inst, "function argument @%s is not a func or template",
                           fa->name);
    }
    if (f->kind == QD_FUNC_TEMPLATE) {
        return check_template_args(v, inst, fa, f);
    }
    if (qd_callee_ntargs(fa) != 0) {
        return verify_fail(v, inst, "@%s is not a template but gets template arguments", f->name);
    }
    return 0;
}

/* Template arguments, in the callee's parameter order, must fit the parameters' kinds. */
static int
check_template_args(Verifier *v, const QdInst *inst, const QdCallee *call, const QdFunc *callee)
{
    uint32_t n = qd_callee_ntargs(call);
    uint32_t ti = 0, ii = 0, fi = 0;
    char what[160];

    if (n != callee->ntparams) {
        return verify_fail(v, inst, "@%s takes %u template arguments, got %u", callee->name,
                           callee->ntparams, n);
    }
    for (uint32_t k = 0; k < n; k++) {
        const QdTParam *tp = &callee->tparams[k];
        QdTArgKind want = qd_tparam_arg_kind(tp->kind);
        QdTArgKind kind = call->args_order != NULL ? (QdTArgKind)call->args_order[k] : want;
        bool missing = kind == QD_TARG_INT    ? ii >= call->nint_args
                       : kind == QD_TARG_FUNC ? fi >= call->nfunc_args
                                              : ti >= call->ntype_args;
        if (kind != want || missing) {
            return verify_fail(v, inst, "template argument %s of @%s must be %s", tp->name,
                               callee->name, qd_targ_kind_wanted[want]);
        }
        if (kind == QD_TARG_INT) {
            RETURN_IF_ERROR(verify_cexpr(v, inst, call->int_args[ii++]));
            continue;
        }
        if (kind == QD_TARG_FUNC) {
            RETURN_IF_ERROR(check_func_arg(v, inst, &call->func_args[fi++]));
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
    const QdTParam *tp = verify_find_tparam(v, call->name);

    if (tp != NULL && tp->kind == QD_TPARAM_FUNC) {
        /* the function bound at instantiation, whose signature `instantiate` checks */
        if (qd_callee_ntargs(call) != 0) {
            return verify_fail(v, inst, "function parameter %s takes no template arguments",
                               tp->name);
        }
        return inst->result == QD_NO_VALUE ? 0 : verify_value_type(v, inst, inst->type);
    }
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
        RETURN_IF_ERROR(check_template_args(v, inst, call, callee));
    } else if (qd_callee_ntargs(call) != 0) {
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
