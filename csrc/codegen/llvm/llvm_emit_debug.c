/* codegen/llvm/llvm_emit_debug.c -- `print` and `assert` as calls into the CPU runtime.
 *
 * Both become calls of runtime functions the JIT resolves (codegen.h lists them):
 *   print "fmt", %a, %b   -> qd_rt_print(fmt, kinds, values, n): the values are widened into a
 *                            stack array of 64-bit slots (signed ints sign-extended, unsigned
 *                            zero-extended, floats as doubles), `kinds` says which is which;
 *   assert %c, "msg"      -> if (!c) qd_rt_assert_fail(ctx, msg), in a cold block.
 * The format is validated at compile time with the rules the runtime applies, so a bad
 * format is a compile error with the user's location rather than odd output.
 */
#include "llvm_internal.h"

#include <string.h>

/* Number of conversions of a printf format, or -1 when it holds one the runtime does not
 * format (%s %n %p, `*` widths, unknown letters); *bad receives the offending letter. */
static int
count_conversions(const char *fmt, char *bad)
{
    int count = 0;
    for (const char *p = fmt; *p != '\0'; p++) {
        if (*p != '%') {
            continue;
        }
        p++;
        if (*p == '%') {
            continue;
        }
        p += strspn(p, "-+ #0");
        p += strspn(p, "0123456789.");
        p += strspn(p, "hlzjtLq");
        if (*p == '\0' || strchr("diouxXcfFeEgGaA", *p) == NULL) {
            *bad = *p == '\0' ? '%' : *p;
            return -1;
        }
        count++;
    }
    return count;
}

/* print "fmt", args: the format is checked here (conversions the runtime formats, one per
 * value), the values go to a stack array of 64-bit slots, widened to i64 / u64 / double, and
 * qd_rt_print formats them (codegen.h). */
int
qd_llvm_emit_print(Emitter *e, const QdInst *inst)
{
    char bad = 0;
    uint32_t n = inst->nargs;
    int count = count_conversions(inst->imm.str, &bad);

    if (count < 0) {
        return qd_error(e->ctx, qd_llvm_loc(inst), QD_ERR_COMPILATION,
                        "print: unsupported conversion '%%%c' in the format", bad);
    }
    if ((uint32_t)count != n) {
        return qd_error(e->ctx, qd_llvm_loc(inst), QD_ERR_COMPILATION,
                        "print: the format has %d conversions for %u values", count, n);
    }
    char *kinds = qd_arena_alloc(e->scratch, n + 1);
    if (kinds == NULL) {
        return qd_error(e->ctx, qd_llvm_loc(inst), QD_ERR_NOMEM, "out of memory");
    }
    LLVMTypeRef slots_type = LLVMArrayType2(e->t_i64, n ? n : 1);
    LLVMValueRef slots = LLVMBuildAlloca(e->hoist, slots_type, "print.args");
    for (uint32_t k = 0; k < n; k++) {
        const QdType *ty = qd_value_type(e->kernel, inst->args[k]);
        LLVMValueRef v = qd_llvm_value(e, inst->args[k]);
        LLVMValueRef idx[2] = {LLVMConstInt(e->t_i64, 0, 0), LLVMConstInt(e->t_i64, k, 0)};
        LLVMValueRef slot = LLVMBuildInBoundsGEP2(e->b, slots_type, slots, idx, 2, "");
        if (qd_type_is_float(ty)) {
            v = qd_llvm_cast(e, ty, qd_type_scalar(QD_TY_F64), v);
            kinds[k] = 'f';
        } else {
            v = qd_llvm_int_resize(e, ty, v, e->t_i64);
            kinds[k] = qd_type_is_signed(ty) ? 'i' : 'u';
        }
        LLVMSetAlignment(LLVMBuildStore(e->b, v, slot), 8);
    }
    LLVMTypeRef params[4] = {e->t_ptr, e->t_ptr, e->t_ptr, e->t_i32};
    LLVMTypeRef fn_type;
    LLVMValueRef fn = qd_llvm_declare(e, "qd_rt_print", e->t_void, params, 4, &fn_type);
    LLVMValueRef args[4] = {
        LLVMBuildGlobalString(e->b, inst->imm.str, "fmt"),
        LLVMBuildGlobalString(e->b, kinds, "kinds"),
        slots,
        LLVMConstInt(e->t_i32, n, 0),
    };
    LLVMBuildCall2(e->b, fn_type, fn, args, 4, "");
    return 0;
}

/* assert %c, "msg": a branch to a cold block that reports the message through
 * qd_rt_assert_fail; execution then goes on (the launch stops at the end of the task). */
int
qd_llvm_emit_assert(Emitter *e, const QdInst *inst)
{
    LLVMValueRef cond = qd_llvm_truth(e, qd_llvm_value(e, inst->args[0]));
    LLVMBasicBlockRef fail = LLVMAppendBasicBlockInContext(e->llctx, e->fn, "assert.fail");
    LLVMBasicBlockRef cont = LLVMAppendBasicBlockInContext(e->llctx, e->fn, "assert.ok");
    LLVMTypeRef params[2] = {e->t_ptr, e->t_ptr};
    LLVMTypeRef fn_type;
    LLVMValueRef fn = qd_llvm_declare(e, "qd_rt_assert_fail", e->t_void, params, 2, &fn_type);
    unsigned cold = LLVMGetEnumAttributeKindForName("cold", 4);

    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                            LLVMCreateEnumAttribute(e->llctx, cold, 0));
    LLVMBuildCondBr(e->b, cond, cont, fail);
    LLVMPositionBuilderAtEnd(e->b, fail);
    LLVMValueRef args[2] = {e->ctx_arg, LLVMBuildGlobalString(e->b, inst->imm.str, "msg")};
    LLVMBuildCall2(e->b, fn_type, fn, args, 2, "");
    LLVMBuildBr(e->b, cont);
    LLVMPositionBuilderAtEnd(e->b, cont);
    return 0;
}
