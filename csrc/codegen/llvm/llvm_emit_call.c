/* codegen/llvm/llvm_emit_call.c -- funcs that stay called (recursion) as LLVM functions.
 *
 * The inline pass leaves a `call` only where a function reaches itself. Such a func @g becomes
 * the internal LLVM function `<kernel symbol>.fn.g`, of type
 *     ret (ptr state, params...)
 * where `state` is what the body's print and assert need of the launch: the launch context on
 * the CPU, the runtime-state pointer (assert flag) on NVPTX. A call passes its own state on.
 * Functions are declared at their first call and emitted after the kernel's tasks, each with
 * the entry / body blocks of a task (llvm_emit.c); fields are module globals, reachable from
 * any function. Each call has a frame of its own on the thread's stack, so every thread of a
 * parallel loop recurses independently.
 *
 * NVPTX: a `ptr<.., local>` parameter (an aggregate result, a struct or ndarray record in the
 * caller's frame) is an addrspace(5) pointer in the signature, made generic in the callee's entry
 * block, so that the address crosses the call as a local one. Passed as a generic pointer, the
 * caller read it back through cvta.to.local, which faulted under ptxas when the threads of a
 * warp recursed to different depths.
 */
#include "llvm_internal.h"

#include <stdio.h>
#include <string.h>

/* The LLVM type of parameter ty of a function: an addrspace(5) pointer for a local pointer on
 * NVPTX (see the file comment), else its register type. */
static LLVMTypeRef
param_type(Emitter *e, const QdType *ty)
{
    if (qd_llvm_is_gpu(e) && ty->kind == QD_TY_PTR && ty->space == QD_SPACE_LOCAL) {
        return LLVMPointerTypeInContext(e->llctx, 5);
    }
    return qd_llvm_reg_type(e, ty);
}

/* The LLVM function of func g, declared on first use. NULL with a diag. */
static LlvmFunc *
func_of(Emitter *e, const QdInst *inst, QdFunc *g)
{
    for (uint32_t i = 0; i < e->funcs.len; i++) {
        if (e->funcs.data[i].func == g) {
            return &e->funcs.data[i];
        }
    }
    LLVMTypeRef *params = QD_NEW_ARRAY(e->scratch, LLVMTypeRef, g->nparams + 1);
    char *name = qd_arena_printf(e->scratch, "%s.fn.%s", e->symbol ? e->symbol : "qd", g->name);
    if (params == NULL || name == NULL) {
        qd_error(e->ctx, qd_llvm_loc(inst), QD_ERR_NOMEM, "out of memory");
        return NULL;
    }
    params[0] = e->t_ptr;
    for (uint32_t i = 0; i < g->nparams; i++) {
        params[i + 1] = param_type(e, qd_value_type(g, g->params[i]));
    }
    LlvmFunc lf = {g, NULL, NULL, false};
    lf.type = LLVMFunctionType(qd_llvm_reg_type(e, g->ret), params, g->nparams + 1, 0);
    lf.fn = LLVMAddFunction(e->mod, name, lf.type);
    LLVMSetLinkage(lf.fn, LLVMInternalLinkage);
    unsigned nounwind = LLVMGetEnumAttributeKindForName("nounwind", 8);
    LLVMAddAttributeAtIndex(lf.fn, LLVMAttributeFunctionIndex,
                            LLVMCreateEnumAttribute(e->llctx, nounwind, 0));
    if (qd_vec_push(e->scratch, &e->funcs, lf) < 0) {
        qd_error(e->ctx, qd_llvm_loc(inst), QD_ERR_NOMEM, "out of memory");
        return NULL;
    }
    return &qd_vec_last(&e->funcs);
}

/* The state pointer a call passes on (see the file comment). */
static LLVMValueRef
state_arg(Emitter *e)
{
    LLVMValueRef s = qd_llvm_is_gpu(e) ? e->rt_ptr : e->ctx_arg;
    return s != NULL ? s : LLVMConstPointerNull(e->t_ptr);
}

int
qd_llvm_emit_call(Emitter *e, const QdInst *inst)
{
    QdFunc *g = qd_module_find_func(e->m, inst->imm.call.name);
    if (g == NULL || g->kind != QD_FUNC_FUNC || g->nparams != inst->nargs) {
        return qd_error(e->ctx, qd_llvm_loc(inst), QD_ERR_COMPILATION,
                        "`call @%s` cannot be compiled (not a concrete func of the module)",
                        inst->imm.call.name);
    }
    LlvmFunc *lf = func_of(e, inst, g);
    if (lf == NULL) {
        return -1;
    }
    LLVMValueRef *args = QD_NEW_ARRAY(e->scratch, LLVMValueRef, inst->nargs + 1);
    if (args == NULL) {
        return qd_error(e->ctx, qd_llvm_loc(inst), QD_ERR_NOMEM, "out of memory");
    }
    args[0] = state_arg(e);
    for (uint32_t i = 0; i < inst->nargs; i++) {
        args[i + 1] = qd_llvm_value(e, inst->args[i]);
        LLVMTypeRef want = LLVMTypeOf(LLVMGetParam(lf->fn, i + 1));
        if (want != LLVMTypeOf(args[i + 1])) {
            args[i + 1] = LLVMBuildAddrSpaceCast(e->b, args[i + 1], want, "");
        }
    }
    LLVMValueRef v = LLVMBuildCall2(e->b, lf->type, lf->fn, args, inst->nargs + 1, "");
    if (inst->result != QD_NO_VALUE) {
        e->values[inst->result] = v;
    }
    return 0;
}

int
qd_llvm_emit_ret(Emitter *e, const QdInst *inst)
{
    if (e->kernel->kind != QD_FUNC_FUNC) {
        return qd_error(e->ctx, qd_llvm_loc(inst), QD_ERR_COMPILATION, "`ret` outside of a func");
    }
    if (inst->nargs == 1) {
        LLVMBuildRet(e->b, qd_llvm_value(e, inst->args[0]));
    } else {
        LLVMBuildRetVoid(e->b);
    }
    return 0;
}

/* The body of one declared function. The emitter's per-function state is the function's while
 * it is emitted, and the kernel's again after. */
static int
emit_func(Emitter *e, LlvmFunc *lf)
{
    QdFunc *g = lf->func;
    /* the per-function state, the kernel's again after */
    QdFunc *kernel = e->kernel;
    LLVMValueRef fn = e->fn, ctx_arg = e->ctx_arg, rt_ptr = e->rt_ptr, args_ptr = e->args_ptr;
    LLVMValueRef results_ptr = e->results_ptr, tmps_ptr = e->tmps_ptr;
    LLVMValueRef *values = e->values, *nd_data = e->nd_data, *field_bases = e->field_bases;
    LLVMValueRef **nd_shape = e->nd_shape;
    LLVMMetadataRef access_group = e->access_group;
    int rc = 0;

    e->kernel = g;
    e->fn = lf->fn;
    e->values = QD_NEW_ARRAY(e->scratch, LLVMValueRef, g->nvalues ? g->nvalues : 1);
    e->nd_data = QD_NEW_ARRAY(e->scratch, LLVMValueRef, g->nparams + 1);
    e->nd_shape = QD_NEW_ARRAY(e->scratch, LLVMValueRef *, g->nparams + 1);
    e->field_bases = QD_NEW_ARRAY(e->scratch, LLVMValueRef, e->m->fields.len + 1);
    if (!e->values || !e->nd_data || !e->nd_shape || !e->field_bases) {
        rc = qd_error(e->ctx, g->loc, QD_ERR_NOMEM, "out of memory");
    } else {
        LLVMValueRef state = LLVMGetParam(lf->fn, 0);
        e->ctx_arg = qd_llvm_is_gpu(e) ? NULL : state;
        e->rt_ptr = qd_llvm_is_gpu(e) ? state : NULL;
        e->args_ptr = e->results_ptr = e->tmps_ptr = NULL;
        e->access_group = NULL;
        LLVMBasicBlockRef entry = qd_llvm_new_block(e, "entry");
        LLVMBasicBlockRef body = qd_llvm_new_block(e, "body");
        LLVMPositionBuilderAtEnd(e->b, entry);
        LLVMPositionBuilderBefore(e->hoist, LLVMBuildBr(e->b, body));
        for (uint32_t i = 0; i < g->nparams; i++) {
            LLVMValueRef p = LLVMGetParam(lf->fn, i + 1);
            const QdType *ty = qd_value_type(g, g->params[i]);
            bool local = param_type(e, ty) != qd_llvm_reg_type(e, ty);
            e->values[g->params[i]] = local ? LLVMBuildAddrSpaceCast(e->hoist, p, e->t_ptr, "") : p;
        }
        LLVMPositionBuilderAtEnd(e->b, body);
        rc = qd_llvm_emit_region(e, g->body, NULL);
        if (rc == 0 && qd_llvm_block_is_open(e)) {
            rc = qd_error(e->ctx, g->loc, QD_ERR_COMPILATION, "@%s does not end with `ret`",
                          g->name);
        }
    }
    e->kernel = kernel;
    e->fn = fn;
    e->ctx_arg = ctx_arg;
    e->rt_ptr = rt_ptr;
    e->args_ptr = args_ptr;
    e->results_ptr = results_ptr;
    e->tmps_ptr = tmps_ptr;
    e->values = values;
    e->nd_data = nd_data;
    e->nd_shape = nd_shape;
    e->field_bases = field_bases;
    e->access_group = access_group;
    return rc;
}

int
qd_llvm_emit_funcs(Emitter *e)
{
    for (uint32_t i = 0; i < e->funcs.len; i++) {
        if (!e->funcs.data[i].emitted) {
            e->funcs.data[i].emitted = true;
            RETURN_IF_ERROR(emit_func(e, &e->funcs.data[i]));
        }
    }
    return 0;
}
