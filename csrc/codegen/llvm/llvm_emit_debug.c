/* codegen/llvm/llvm_emit_debug.c -- `print` and `assert`: calls into the CPU runtime, or
 * vprintf and the device assert flag on NVPTX.
 *
 * On the CPU both become calls of runtime functions the JIT resolves (codegen.h lists them):
 *   print "fmt", %a, %b   -> qd_rt_print(fmt, kinds, values, n): the values are widened into a
 *                            stack array of 64-bit slots (signed ints sign-extended, unsigned
 *                            zero-extended, floats as doubles), `kinds` says which is which;
 *   assert %c, "msg"      -> if (!c) qd_rt_assert_fail(ctx, msg), in a cold block.
 * The format is validated at compile time with the rules the runtime applies, so a bad
 * format is a compile error with the user's location rather than odd output.
 *
 * On NVPTX (codegen.h, NVPTX KERNEL ABI):
 *   print  -> vprintf(format', buffer): format' is the format with every integer conversion
 *             given the `ll` length modifier; the buffer holds one argument per conversion,
 *             aligned to its size as C varargs are: an i64 for integer conversions (%c: an
 *             i32), a double for float conversions, each value converted to what its
 *             conversion asks for, exactly as the CPU runtime converts;
 *   assert -> if (!c) atomic compare-and-swap of the assert flag from 0 to id + 1; the thread
 *             that wins stores the message's values after the flag (the launcher formats
 *             them into the message as the CPU runtime does).
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

/***** NVPTX *****/

/* Rewrites the printf format for vprintf (every integer conversion with `ll`) and records the
 * conversion letter of each argument in `letters`. The format was validated by
 * count_conversions. Returns the new format in the emitter's scratch arena, or NULL. */
static char *
rewrite_format(Emitter *e, const char *fmt, char *letters)
{
    size_t len = strlen(fmt);
    char *out = qd_arena_alloc(e->scratch, 2 * len + 1);
    size_t n = 0;
    int k = 0;
    if (out == NULL) {
        return NULL;
    }
    for (const char *p = fmt; *p != '\0'; p++) {
        out[n++] = *p;
        if (*p != '%') {
            continue;
        }
        p++;
        if (*p == '%') {
            out[n++] = '%';
            continue;
        }
        size_t spec = strspn(p, "-+ #0");
        spec += strspn(p + spec, "0123456789.");
        memcpy(out + n, p, spec);
        n += spec;
        p += spec;
        p += strspn(p, "hlzjtLq"); /* the length modifier is replaced */
        if (strchr("diouxX", *p) != NULL) {
            out[n++] = 'l';
            out[n++] = 'l';
        }
        out[n++] = *p;
        letters[k++] = *p;
    }
    out[n] = '\0';
    return out;
}

/* One print argument converted to what its conversion letter asks for: double for float
 * conversions, i32 for %c, i64 otherwise. */
static LLVMValueRef
vprintf_value(Emitter *e, const QdType *ty, LLVMValueRef v, char letter)
{
    const QdType *f64 = qd_type_scalar(QD_TY_F64);
    if (strchr("fFeEgGaA", letter) != NULL) {
        if (qd_type_is_float(ty)) {
            return qd_llvm_cast(e, ty, f64, v);
        }
        return qd_type_is_signed(ty) ? LLVMBuildSIToFP(e->b, v, e->t_f64, "")
                                     : LLVMBuildUIToFP(e->b, v, e->t_f64, "");
    }
    LLVMValueRef wide;
    if (qd_type_is_float(ty)) {
        wide = qd_llvm_cast(e, ty, qd_type_scalar(QD_TY_I64), v);
    } else {
        wide = qd_llvm_int_resize(e, ty, v, e->t_i64);
    }
    if (letter == 'c') {
        /* (int)(unsigned char)v */
        return LLVMBuildZExt(e->b, LLVMBuildTrunc(e->b, wide, e->t_i8, ""), e->t_i32, "");
    }
    return wide;
}

/* print on NVPTX: vprintf with the rewritten format (see the file comment). */
static int
emit_gpu_print(Emitter *e, const QdInst *inst)
{
    uint32_t n = inst->nargs;
    char *letters = qd_arena_alloc(e->scratch, n + 1);
    char *format = letters ? rewrite_format(e, inst->imm.str, letters) : NULL;
    uint32_t offsets[256];
    uint32_t size = 0;

    if (format == NULL) {
        return qd_error(e->ctx, qd_llvm_loc(inst), QD_ERR_NOMEM, "out of memory");
    }
    if (n > QD_ARRAY_LEN(offsets)) {
        return qd_error(e->ctx, qd_llvm_loc(inst), QD_ERR_COMPILATION,
                        "print: more than %zu values", QD_ARRAY_LEN(offsets));
    }
    for (uint32_t k = 0; k < n; k++) {
        uint32_t bytes = letters[k] == 'c' ? 4 : 8;
        size = (size + bytes - 1) & ~(bytes - 1);
        offsets[k] = size;
        size += bytes;
    }
    LLVMTypeRef buffer_type = LLVMArrayType2(e->t_i64, size ? (size + 7) / 8 : 1);
    LLVMValueRef buffer = LLVMBuildAlloca(e->hoist, buffer_type, "vprintf.args");
    LLVMSetAlignment(buffer, 8);
    for (uint32_t k = 0; k < n; k++) {
        const QdType *ty = qd_value_type(e->kernel, inst->args[k]);
        LLVMValueRef v = vprintf_value(e, ty, qd_llvm_value(e, inst->args[k]), letters[k]);
        LLVMValueRef at = LLVMConstInt(e->t_i64, offsets[k], 0);
        LLVMValueRef slot = LLVMBuildInBoundsGEP2(e->b, e->t_i8, buffer, &at, 1, "");
        LLVMSetAlignment(LLVMBuildStore(e->b, v, slot), letters[k] == 'c' ? 4 : 8);
    }
    LLVMTypeRef params[2] = {e->t_ptr, e->t_ptr};
    LLVMTypeRef fn_type;
    LLVMValueRef fn = qd_llvm_declare(e, "vprintf", e->t_i32, params, 2, &fn_type);
    LLVMValueRef args[2] = {LLVMBuildGlobalString(e->b, format, "fmt"), buffer};
    LLVMBuildCall2(e->b, fn_type, fn, args, 2, "");
    e->has_print = true;
    return 0;
}

/* Records assert `inst` in e->asserts (its format and the kind letters of its values) and
 * returns its id, or -1 with a diag. */
static int
note_gpu_assert(Emitter *e, const QdInst *inst)
{
    uint32_t n = inst->nargs - 1;
    QdLlvmAssert *grown = qd_arena_realloc(e->scratch, e->asserts,
                                           sizeof(QdLlvmAssert) * e->nasserts,
                                           sizeof(QdLlvmAssert) * (e->nasserts + 1));
    char *kinds = qd_arena_alloc(e->scratch, n + 1);
    if (grown == NULL || kinds == NULL) {
        return qd_error(e->ctx, qd_llvm_loc(inst), QD_ERR_NOMEM, "out of memory");
    }
    if (n > QD_NVPTX_ASSERT_VALUES) {
        return qd_error(e->ctx, qd_llvm_loc(inst), QD_ERR_COMPILATION,
                        "assert: more than %d values in the message", QD_NVPTX_ASSERT_VALUES);
    }
    for (uint32_t k = 0; k < n; k++) {
        const QdType *ty = qd_value_type(e->kernel, inst->args[1 + k]);
        kinds[k] = qd_type_is_float(ty) ? 'f' : qd_type_is_signed(ty) ? 'i' : 'u';
    }
    e->asserts = grown;
    e->asserts[e->nasserts].format = inst->imm.str;
    e->asserts[e->nasserts].kinds = kinds;
    return (int)e->nasserts++;
}

/* assert on NVPTX: the failing thread tries to move the flag from 0 to id + 1; the thread that
 * succeeds stores the message's values, as 64-bit slots (integers widened, floats as doubles),
 * after the flag in the runtime state (codegen.h), for the launcher to format. */
static int
emit_gpu_assert(Emitter *e, const QdInst *inst)
{
    LLVMValueRef cond = qd_llvm_truth(e, qd_llvm_value(e, inst->args[0]));
    LLVMBasicBlockRef fail = LLVMAppendBasicBlockInContext(e->llctx, e->fn, "assert.fail");
    LLVMBasicBlockRef first = LLVMAppendBasicBlockInContext(e->llctx, e->fn, "assert.first");
    LLVMBasicBlockRef cont = LLVMAppendBasicBlockInContext(e->llctx, e->fn, "assert.ok");
    int id = note_gpu_assert(e, inst);
    if (id < 0) {
        return -1;
    }

    LLVMBuildCondBr(e->b, cond, cont, fail);
    LLVMPositionBuilderAtEnd(e->b, fail);
    LLVMValueRef pair = LLVMBuildAtomicCmpXchg(
        e->b, e->rt_ptr, LLVMConstInt(e->t_i32, 0, 0), LLVMConstInt(e->t_i32, (unsigned)id + 1, 0),
        LLVMAtomicOrderingMonotonic, LLVMAtomicOrderingMonotonic, 0);
    LLVMBuildCondBr(e->b, LLVMBuildExtractValue(e->b, pair, 1, "won"), first, cont);
    LLVMPositionBuilderAtEnd(e->b, first);
    for (uint32_t k = 0; k + 1 < inst->nargs; k++) {
        const QdType *ty = qd_value_type(e->kernel, inst->args[1 + k]);
        LLVMValueRef v = qd_llvm_value(e, inst->args[1 + k]);
        if (qd_type_is_float(ty)) {
            v = LLVMBuildBitCast(e->b, qd_llvm_cast(e, ty, qd_type_scalar(QD_TY_F64), v),
                                 e->t_i64, "");
        } else {
            v = qd_llvm_int_resize(e, ty, v, e->t_i64);
        }
        LLVMValueRef at = LLVMConstInt(e->t_i64, 8 + 8 * (uint64_t)k, 0);
        LLVMValueRef slot = LLVMBuildInBoundsGEP2(e->b, e->t_i8, e->rt_ptr, &at, 1, "");
        LLVMSetAlignment(LLVMBuildStore(e->b, v, slot), 8);
    }
    LLVMBuildBr(e->b, cont);
    LLVMPositionBuilderAtEnd(e->b, cont);
    return 0;
}

/***** CPU (and the shared checks) *****/

/* The arguments of qd_rt_print for the format inst->imm.str and the operands from `first`
 * on: format, one kind letter per value ('i' signed, 'u' unsigned, 'f' float), a stack array
 * of 64-bit slots (integers widened, floats as doubles), and the count (out[0..3]). */
static int
marshal_values(Emitter *e, const QdInst *inst, uint32_t first, LLVMValueRef out[4])
{
    uint32_t n = inst->nargs - first;
    char *kinds = qd_arena_alloc(e->scratch, n + 1);
    if (kinds == NULL) {
        return qd_error(e->ctx, qd_llvm_loc(inst), QD_ERR_NOMEM, "out of memory");
    }
    LLVMTypeRef slots_type = LLVMArrayType2(e->t_i64, n ? n : 1);
    LLVMValueRef slots = LLVMBuildAlloca(e->hoist, slots_type, "print.args");
    for (uint32_t k = 0; k < n; k++) {
        const QdType *ty = qd_value_type(e->kernel, inst->args[first + k]);
        LLVMValueRef v = qd_llvm_value(e, inst->args[first + k]);
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
    out[0] = LLVMBuildGlobalString(e->b, inst->imm.str, "fmt");
    out[1] = LLVMBuildGlobalString(e->b, kinds, "kinds");
    out[2] = slots;
    out[3] = LLVMConstInt(e->t_i32, n, 0);
    return 0;
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
    if (qd_llvm_is_gpu(e)) {
        return emit_gpu_print(e, inst);
    }
    LLVMTypeRef params[4] = {e->t_ptr, e->t_ptr, e->t_ptr, e->t_i32};
    LLVMTypeRef fn_type;
    LLVMValueRef fn = qd_llvm_declare(e, "qd_rt_print", e->t_void, params, 4, &fn_type);
    LLVMValueRef args[4];
    RETURN_IF_ERROR(marshal_values(e, inst, 0, args));
    LLVMBuildCall2(e->b, fn_type, fn, args, 4, "");
    return 0;
}

/* assert %c, "msg": a branch to a cold block that reports the message through
 * qd_rt_assert_fail; execution then goes on (the launch stops at the end of the task). */
int
qd_llvm_emit_assert(Emitter *e, const QdInst *inst)
{
    if (qd_llvm_is_gpu(e)) {
        return emit_gpu_assert(e, inst);
    }
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
    if (inst->nargs > 1) {
        /* assert %c, "fmt", values...: the message is formatted when the assert fails. */
        LLVMTypeRef fparams[5] = {e->t_ptr, e->t_ptr, e->t_ptr, e->t_ptr, e->t_i32};
        LLVMTypeRef ftype;
        LLVMValueRef ffn = qd_llvm_declare(e, "qd_rt_assert_fail_fmt", e->t_void, fparams, 5, &ftype);
        LLVMAddAttributeAtIndex(ffn, LLVMAttributeFunctionIndex,
                                LLVMCreateEnumAttribute(e->llctx, cold, 0));
        LLVMValueRef m[4];
        RETURN_IF_ERROR(marshal_values(e, inst, 1, m));
        LLVMValueRef fargs[5] = {e->ctx_arg, m[0], m[1], m[2], m[3]};
        LLVMBuildCall2(e->b, ftype, ffn, fargs, 5, "");
    } else {
        LLVMValueRef args[2] = {e->ctx_arg, LLVMBuildGlobalString(e->b, inst->imm.str, "msg")};
        LLVMBuildCall2(e->b, fn_type, fn, args, 2, "");
    }
    LLVMBuildBr(e->b, cont);
    LLVMPositionBuilderAtEnd(e->b, cont);
    return 0;
}
