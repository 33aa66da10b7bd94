/* codegen/llvm/llvm_emit_ops.c -- value instructions: arithmetic, math, casts, print, assert.
 *
 * Each QIR op becomes a short, branch-free LLVM sequence wherever one exists, so that loops
 * built from them still vectorize. Where ops.def leaves a case open (division by zero, shift
 * amounts past the width, float -> int overflow, negative integer exponents) the choice is the
 * one documented in codegen.h, and it never involves LLVM undefined behaviour or poison:
 *   - integer division: the divisor is replaced by 1 when it is 0 or -1 (signed), and the
 *     result selected afterwards (0 for a zero divisor, -a or 0 for -1);
 *   - shifts: the amount is masked with width - 1;
 *   - casts use llvm.fpto[su]i.sat.
 * Float math goes through llvm_intrinsics.def: an LLVM intrinsic where there is one, else a
 * call of the libm function of the type (f16 / bf16 operands are widened to f32 for it). On
 * NVPTX the rows marked LIBDEVICE call libdevice's __nv_<libm name> instead, f16 / bf16 always
 * computed in f32.
 * print and assert are in llvm_emit_debug.c.
 */
#include "llvm_internal.h"

#include <stdio.h>
#include <string.h>

/* One row of llvm_intrinsics.def. */
typedef struct MathEntry {
    const char *intrinsic; /* overloaded LLVM intrinsic, or NULL for a libm call */
    const char *f32_fn;    /* libm function for f32 (NULL: not a math op) */
    const char *f64_fn;    /* libm function for f64 */
    bool is_gpu_native;    /* NVPTX lowers the intrinsic (else: libdevice) */
    const char *gpu_fast;  /* libdevice function of f32 under fast math (after __nv_), or "NONE" */
} MathEntry;

#define NATIVE    true
#define LIBDEVICE false
static const MathEntry math_table[QD_OP_COUNT_] = {
#define QD_MATH(name, intrinsic, f32_fn, f64_fn, on_gpu, gpu_fast)                                 \
    [QD_OP_##name] = {intrinsic, #f32_fn, #f64_fn, on_gpu, #gpu_fast},
#include "llvm_intrinsics.def"
#undef QD_MATH
};
#undef NATIVE
#undef LIBDEVICE

/***** helpers *****/

/* The fast-math flags of the target: QD_FAST_MATH_FLAGS, without reassociation on NVPTX (as
 * nvcc's --use_fast_math: a chain of updates keeps its order, so each shuffle feeding it is
 * consumed before the next one is issued). */
static LLVMFastMathFlags
fast_math_flags(const Emitter *e)
{
    LLVMFastMathFlags flags = QD_FAST_MATH_FLAGS;
    return e->target == QD_LLVM_TARGET_NVPTX ? flags & ~LLVMFastMathAllowReassoc : flags;
}

LLVMValueRef
qd_llvm_fast(Emitter *e, LLVMValueRef v)
{
    if (e->opts->fast_math && LLVMIsAInstruction(v) && LLVMCanValueUseFastMathFlags(v)) {
        LLVMSetFastMathFlags(v, fast_math_flags(e));
    }
    return v;
}

LLVMValueRef
qd_llvm_truth(Emitter *e, LLVMValueRef v)
{
    LLVMTypeRef t = LLVMTypeOf(v);
    if (LLVMGetIntTypeWidth(t) == 1) {
        return v;
    }
    return LLVMBuildICmp(e->b, LLVMIntNE, v, LLVMConstInt(t, 0, 0), "");
}

LLVMValueRef
qd_llvm_declare(Emitter *e, const char *name, LLVMTypeRef ret, LLVMTypeRef *params,
                unsigned nparams, LLVMTypeRef *fn_type)
{
    *fn_type = LLVMFunctionType(ret, params, nparams, 0);
    LLVMValueRef fn = LLVMGetNamedFunction(e->mod, name);
    if (fn == NULL) {
        unsigned nounwind = LLVMGetEnumAttributeKindForName("nounwind", 8);
        fn = LLVMAddFunction(e->mod, name, *fn_type);
        LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                                LLVMCreateEnumAttribute(e->llctx, nounwind, 0));
    }
    return fn;
}

LLVMValueRef
qd_llvm_intrinsic(Emitter *e, const char *name, LLVMTypeRef *types, unsigned ntypes,
                  LLVMValueRef *args, unsigned nargs)
{
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMValueRef fn = LLVMGetIntrinsicDeclaration(e->mod, id, types, ntypes);
    LLVMTypeRef fn_type = LLVMIntrinsicGetType(e->llctx, id, types, ntypes);
    return LLVMBuildCall2(e->b, fn_type, fn, args, nargs, "");
}

/* Calls an intrinsic overloaded on the type of its first argument. */
static LLVMValueRef
intrinsic1(Emitter *e, const char *name, LLVMValueRef *args, unsigned nargs)
{
    LLVMTypeRef t = LLVMTypeOf(args[0]);
    return qd_llvm_intrinsic(e, name, &t, 1, args, nargs);
}

/* f16 and bf16: the types libm has no functions for, computed in f32 where we call libm. */
static bool
is_narrow_float(const QdType *ty)
{
    return ty->kind == QD_TY_F16 || ty->kind == QD_TY_BF16;
}

/***** float math *****/

/* f32 on the GPU under fast math: division, rsqrt, log, sin and cos use the approximate
 * instructions (div.approx, rsqrt.approx, lg2.approx, sin.approx, cos.approx), as the reference
 * implementation and nvcc --use_fast_math do; sqrt, exp and the rest stay as accurate as
 * libdevice makes them. */
static bool
is_fast_gpu_f32(const Emitter *e, const QdType *ty)
{
    return qd_llvm_is_gpu(e) && ty->kind == QD_TY_F32 && e->opts->fast_math;
}

/* A float math op of llvm_intrinsics.def on nargs operands of type ty. */
static LLVMValueRef
emit_math(Emitter *e, QdOp op, const QdType *ty, LLVMValueRef *args, unsigned nargs)
{
    const MathEntry *entry = &math_table[op];
    LLVMTypeRef t = qd_llvm_reg_type(e, ty);
    bool is_gpu = qd_llvm_is_gpu(e);
    bool is_narrow = is_narrow_float(ty);

    if (entry->intrinsic != NULL && (!is_gpu || (entry->is_gpu_native && !is_narrow))) {
        return qd_llvm_fast(e, qd_llvm_intrinsic(e, entry->intrinsic, &t, 1, args, nargs));
    }
    if (is_gpu && entry->is_gpu_native) {
        /* f16 / bf16 on the GPU: the f32 instruction, rounded back */
        LLVMValueRef wide[2];
        LLVMTypeRef ft = e->t_f32;
        for (unsigned k = 0; k < nargs; k++) {
            wide[k] = LLVMBuildFPExt(e->b, args[k], ft, "");
        }
        LLVMValueRef r = qd_llvm_fast(e, qd_llvm_intrinsic(e, entry->intrinsic, &ft, 1, wide, nargs));
        return LLVMBuildFPTrunc(e->b, r, t, "");
    }
    /* libm (CPU) or libdevice (GPU): computed in f32 for f16 / bf16 */
    LLVMTypeRef ct = ty->kind == QD_TY_F64 ? e->t_f64 : e->t_f32;
    LLVMValueRef cargs[2];
    LLVMTypeRef params[2] = {ct, ct};
    LLVMTypeRef fn_type;
    for (unsigned k = 0; k < nargs; k++) {
        cargs[k] = is_narrow ? LLVMBuildFPExt(e->b, args[k], ct, "") : args[k];
    }
    const char *name = ty->kind == QD_TY_F64 ? entry->f64_fn : entry->f32_fn;
    if (is_fast_gpu_f32(e, ty) && strcmp(entry->gpu_fast, "NONE") != 0) {
        name = entry->gpu_fast;
    }
    char gpu_name[32];
    if (is_gpu) {
        snprintf(gpu_name, sizeof(gpu_name), "__nv_%s", name);
        name = gpu_name;
        e->uses_libdevice = true;
    }
    LLVMValueRef fn = qd_llvm_declare(e, name, ct, params, nargs, &fn_type);
    LLVMValueRef r = qd_llvm_fast(e, LLVMBuildCall2(e->b, fn_type, fn, cargs, nargs, ""));
    return is_narrow ? LLVMBuildFPTrunc(e->b, r, t, "") : r;
}

/* Two-operand float ops; every instruction carries the fast-math flags when enabled. f16 and
 * bf16 use LLVM's half / bfloat directly: LLVM widens them to f32 for the arithmetic and
 * rounds back (through the runtime's conversion helpers where the CPU has no instruction). */
static LLVMValueRef
float_binary(Emitter *e, QdOp op, const QdType *ty, LLVMValueRef a, LLVMValueRef b)
{
    LLVMValueRef args[2] = {a, b};
    switch (op) {
    case QD_OP_ADD:
        return qd_llvm_fast(e, LLVMBuildFAdd(e->b, a, b, ""));
    case QD_OP_SUB:
        return qd_llvm_fast(e, LLVMBuildFSub(e->b, a, b, ""));
    case QD_OP_MUL:
        return qd_llvm_fast(e, LLVMBuildFMul(e->b, a, b, ""));
    case QD_OP_DIV:
        if (is_fast_gpu_f32(e, ty)) {
            /* div.approx (2 ulp), what the reference implementation emits under fast math */
            const char *name = e->ftz ? "llvm.nvvm.div.approx.ftz.f" : "llvm.nvvm.div.approx.f";
            return qd_llvm_intrinsic(e, name, NULL, 0, args, 2);
        }
        return qd_llvm_fast(e, LLVMBuildFDiv(e->b, a, b, ""));
    case QD_OP_REM:
        return qd_llvm_fast(e, LLVMBuildFRem(e->b, a, b, ""));
    case QD_OP_FLOORDIV:
    case QD_OP_FLOORMOD: {
        /* a // b = floor(a / b); a % b = a - floor(a / b) * b (Python semantics). The quotient
         * is a true division even under fast math: with arcp, 6 / 3 may become 6 * (1/3),
         * land just below 2 and floor to 1. */
        LLVMValueRef q = LLVMBuildFDiv(e->b, a, b, "");
        if (e->opts->fast_math) {
            LLVMSetFastMathFlags(q, fast_math_flags(e) & ~LLVMFastMathAllowReciprocal);
        }
        LLVMValueRef fl = emit_math(e, QD_OP_FLOOR, ty, &q, 1);
        if (op == QD_OP_FLOORDIV) {
            return fl;
        }
        LLVMValueRef p = qd_llvm_fast(e, LLVMBuildFMul(e->b, fl, b, ""));
        return qd_llvm_fast(e, LLVMBuildFSub(e->b, a, p, ""));
    }
    default: /* MIN MAX POW ATAN2 */
        return emit_math(e, op, ty, args, 2);
    }
}

/***** integer arithmetic *****/

/* div / rem / floordiv / floormod without traps: see the file comment. */
static LLVMValueRef
int_divide(Emitter *e, QdOp op, const QdType *ty, LLVMValueRef a, LLVMValueRef b)
{
    LLVMTypeRef t = LLVMTypeOf(a);
    LLVMValueRef zero = LLVMConstInt(t, 0, 0);
    LLVMValueRef one = LLVMConstInt(t, 1, 0);
    LLVMValueRef is_zero = LLVMBuildICmp(e->b, LLVMIntEQ, b, zero, "");

    if (!qd_type_is_signed(ty)) {
        LLVMValueRef safe = LLVMBuildSelect(e->b, is_zero, one, b, "");
        bool is_div = op == QD_OP_DIV || op == QD_OP_FLOORDIV;
        LLVMValueRef r =
            is_div ? LLVMBuildUDiv(e->b, a, safe, "") : LLVMBuildURem(e->b, a, safe, "");
        return LLVMBuildSelect(e->b, is_zero, zero, r, "");
    }
    LLVMValueRef minus_one = LLVMConstAllOnes(t);
    LLVMValueRef is_m1 = LLVMBuildICmp(e->b, LLVMIntEQ, b, minus_one, "");
    LLVMValueRef is_bad = LLVMBuildOr(e->b, is_zero, is_m1, "");
    LLVMValueRef safe = LLVMBuildSelect(e->b, is_bad, one, b, "");
    LLVMValueRef q = LLVMBuildSDiv(e->b, a, safe, "");
    LLVMValueRef r = LLVMBuildSRem(e->b, a, safe, "");
    /* Floor adjustment: a nonzero remainder whose sign differs from the divisor's. */
    LLVMValueRef r_nonzero = LLVMBuildICmp(e->b, LLVMIntNE, r, zero, "");
    LLVMValueRef signs_differ =
        LLVMBuildICmp(e->b, LLVMIntSLT, LLVMBuildXor(e->b, r, safe, ""), zero, "");
    LLVMValueRef adjust = LLVMBuildAnd(e->b, r_nonzero, signs_differ, "");
    LLVMValueRef res;

    switch (op) {
    case QD_OP_DIV:
    case QD_OP_FLOORDIV:
        if (op == QD_OP_FLOORDIV) {
            q = LLVMBuildSub(e->b, q, LLVMBuildZExt(e->b, adjust, t, ""), "");
        }
        /* a / -1 = -a, wrapping for the minimum */
        res = LLVMBuildSelect(e->b, is_m1, LLVMBuildNeg(e->b, a, ""), q, "");
        return LLVMBuildSelect(e->b, is_zero, zero, res, "");
    case QD_OP_FLOORMOD:
        r = LLVMBuildAdd(e->b, r, LLVMBuildSelect(e->b, adjust, safe, zero, ""), "");
        return LLVMBuildSelect(e->b, is_bad, zero, r, "");
    default: /* REM */
        return LLVMBuildSelect(e->b, is_bad, zero, r, "");
    }
}

/* `qd.ipow.<T>`: base ** exp by squaring, wrapping; 1 for a negative exponent. An internal
 * function per type, which the optimizer inlines. */
static LLVMValueRef
ipow_function(Emitter *e, const QdType *ty)
{
    if (e->ipow_fns[ty->kind] != NULL) {
        return e->ipow_fns[ty->kind];
    }
    LLVMTypeRef t = qd_llvm_reg_type(e, ty);
    LLVMTypeRef params[2] = {t, t};
    LLVMTypeRef fn_type = LLVMFunctionType(t, params, 2, 0);
    char name[64];
    snprintf(name, sizeof(name), "qd.ipow.%s", qd_type_scalar_name(ty->kind));
    LLVMValueRef fn = LLVMAddFunction(e->mod, name, fn_type);
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    LLVMBuilderRef b = LLVMCreateBuilderInContext(e->llctx);
    LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(e->llctx, fn, "entry");
    LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(e->llctx, fn, "head");
    LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(e->llctx, fn, "body");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(e->llctx, fn, "done");
    LLVMValueRef base = LLVMGetParam(fn, 0);
    LLVMValueRef exp = LLVMGetParam(fn, 1);
    LLVMValueRef zero = LLVMConstInt(t, 0, 0);
    LLVMValueRef one = LLVMConstInt(t, 1, 0);

    LLVMPositionBuilderAtEnd(b, entry);
    if (qd_type_is_signed(ty)) {
        LLVMBasicBlockRef negative = LLVMAppendBasicBlockInContext(e->llctx, fn, "negative");
        LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, exp, zero, ""), negative, head);
        LLVMPositionBuilderAtEnd(b, negative);
        LLVMBuildRet(b, one);
    } else {
        LLVMBuildBr(b, head);
    }
    LLVMPositionBuilderAtEnd(b, head);
    LLVMValueRef r = LLVMBuildPhi(b, t, "r");
    LLVMValueRef x = LLVMBuildPhi(b, t, "x");
    LLVMValueRef n = LLVMBuildPhi(b, t, "n");
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntNE, n, zero, ""), body, done);

    LLVMPositionBuilderAtEnd(b, body);
    LLVMValueRef odd = LLVMBuildTrunc(b, n, e->t_i1, "");
    LLVMValueRef r2 = LLVMBuildSelect(b, odd, LLVMBuildMul(b, r, x, ""), r, "");
    LLVMValueRef x2 = LLVMBuildMul(b, x, x, "");
    LLVMValueRef n2 = LLVMBuildLShr(b, n, one, "");
    LLVMBuildBr(b, head);

    LLVMValueRef r_in[2] = {one, r2}, x_in[2] = {base, x2}, n_in[2] = {exp, n2};
    LLVMBasicBlockRef from[2] = {entry, body};
    LLVMAddIncoming(r, r_in, from, 2);
    LLVMAddIncoming(x, x_in, from, 2);
    LLVMAddIncoming(n, n_in, from, 2);
    LLVMPositionBuilderAtEnd(b, done);
    LLVMBuildRet(b, r);
    LLVMDisposeBuilder(b);
    e->ipow_fns[ty->kind] = fn;
    return fn;
}

/* Two-operand integer ops on register values of type ty. add / sub / mul carry no nsw / nuw:
 * QIR integers wrap. NULL for an op that is not integer arithmetic. */
static LLVMValueRef
int_binary(Emitter *e, QdOp op, const QdType *ty, LLVMValueRef a, LLVMValueRef b)
{
    bool is_signed = qd_type_is_signed(ty);
    LLVMValueRef args[2] = {a, b};
    LLVMTypeRef t = LLVMTypeOf(a);

    switch (op) {
    case QD_OP_ADD:
        return LLVMBuildAdd(e->b, a, b, "");
    case QD_OP_SUB:
        return LLVMBuildSub(e->b, a, b, "");
    case QD_OP_MUL:
        return LLVMBuildMul(e->b, a, b, "");
    case QD_OP_AND:
        return LLVMBuildAnd(e->b, a, b, "");
    case QD_OP_OR:
        return LLVMBuildOr(e->b, a, b, "");
    case QD_OP_XOR:
        return LLVMBuildXor(e->b, a, b, "");
    case QD_OP_MIN:
        return intrinsic1(e, is_signed ? "llvm.smin" : "llvm.umin", args, 2);
    case QD_OP_MAX:
        return intrinsic1(e, is_signed ? "llvm.smax" : "llvm.umax", args, 2);
    case QD_OP_DIV:
    case QD_OP_REM:
    case QD_OP_FLOORDIV:
    case QD_OP_FLOORMOD:
        return int_divide(e, op, ty, a, b);
    case QD_OP_POW: {
        LLVMTypeRef params[2] = {t, t};
        LLVMTypeRef fn_type = LLVMFunctionType(t, params, 2, 0);
        return LLVMBuildCall2(e->b, fn_type, ipow_function(e, ty), args, 2, "");
    }
    case QD_OP_SHL:
    case QD_OP_SHR:
    case QD_OP_LSHR: {
        /* b has a's type here (emit_op converts it); masked with width - 1 */
        unsigned width = LLVMGetIntTypeWidth(t);
        LLVMValueRef amount = LLVMBuildAnd(e->b, b, LLVMConstInt(t, width - 1, 0), "");
        if (op == QD_OP_SHL) {
            return LLVMBuildShl(e->b, a, amount, "");
        }
        if (op == QD_OP_SHR && is_signed) {
            return LLVMBuildAShr(e->b, a, amount, "");
        }
        return LLVMBuildLShr(e->b, a, amount, "");
    }
    default:
        return NULL;
    }
}

LLVMValueRef
qd_llvm_binary(Emitter *e, QdOp op, const QdType *ty, LLVMValueRef a, LLVMValueRef b)
{
    if (qd_type_is_float(ty)) {
        return float_binary(e, op, ty, a, b);
    }
    return int_binary(e, op, ty, a, b);
}

/***** one-operand ops *****/

/* Resizes an integer treated as unsigned (counts and shift amounts). */
static LLVMValueRef
resize_unsigned(Emitter *e, LLVMValueRef v, LLVMTypeRef to)
{
    unsigned from = LLVMGetIntTypeWidth(LLVMTypeOf(v));
    unsigned width = LLVMGetIntTypeWidth(to);
    if (from == width) {
        return v;
    }
    return from > width ? LLVMBuildTrunc(e->b, v, to, "") : LLVMBuildZExt(e->b, v, to, "");
}

/* One-operand ops; `ty` is the operand's type (popcnt and clz produce i32 whatever it is). */
static LLVMValueRef
emit_unary(Emitter *e, QdOp op, const QdType *ty, LLVMValueRef a)
{
    bool is_float = qd_type_is_float(ty);
    LLVMValueRef args[2] = {a, LLVMConstInt(e->t_i1, 0, 0)};

    switch (op) {
    case QD_OP_NEG:
        return is_float ? qd_llvm_fast(e, LLVMBuildFNeg(e->b, a, "")) : LLVMBuildNeg(e->b, a, "");
    case QD_OP_ABS:
        if (is_float) {
            return emit_math(e, op, ty, args, 1);
        }
        /* llvm.abs(x, false): the minimum stays itself instead of becoming poison */
        return qd_type_is_signed(ty) ? intrinsic1(e, "llvm.abs", args, 2) : a;
    case QD_OP_NOT:
        return LLVMBuildNot(e->b, a, "");
    case QD_OP_POPCNT:
        return resize_unsigned(e, intrinsic1(e, "llvm.ctpop", args, 1), e->t_i32);
    case QD_OP_CLZ:
        /* is_zero_poison = false: clz(0) is the width */
        return resize_unsigned(e, intrinsic1(e, "llvm.ctlz", args, 2), e->t_i32);
    case QD_OP_RSQRT: {
        if (is_fast_gpu_f32(e, ty)) {
            const char *name = e->ftz ? "llvm.nvvm.rsqrt.approx.ftz.f" : "llvm.nvvm.rsqrt.approx.f";
            return qd_llvm_intrinsic(e, name, NULL, 0, args, 1);
        }
        LLVMValueRef root = emit_math(e, QD_OP_SQRT, ty, args, 1);
        LLVMValueRef one = LLVMConstReal(LLVMTypeOf(a), 1.0);
        return qd_llvm_fast(e, LLVMBuildFDiv(e->b, one, root, ""));
    }
    default: /* the math table: SQRT EXP LOG SIN COS TAN TANH ASIN ACOS ATAN FLOOR CEIL ROUND */
        return emit_math(e, op, ty, args, 1);
    }
}

/* The LLVM predicates of a comparison op: float (ordered, except ne, which is true when
 * either operand is NaN), signed and unsigned integer. */
static void
compare_predicates(QdOp op, LLVMRealPredicate *fp, LLVMIntPredicate *sp, LLVMIntPredicate *up)
{
    switch (op) {
    case QD_OP_EQ:
        *fp = LLVMRealOEQ, *sp = *up = LLVMIntEQ;
        return;
    case QD_OP_NE:
        *fp = LLVMRealUNE, *sp = *up = LLVMIntNE;
        return;
    case QD_OP_LT:
        *fp = LLVMRealOLT, *sp = LLVMIntSLT, *up = LLVMIntULT;
        return;
    case QD_OP_LE:
        *fp = LLVMRealOLE, *sp = LLVMIntSLE, *up = LLVMIntULE;
        return;
    case QD_OP_GT:
        *fp = LLVMRealOGT, *sp = LLVMIntSGT, *up = LLVMIntUGT;
        return;
    default: /* GE */
        *fp = LLVMRealOGE, *sp = LLVMIntSGE, *up = LLVMIntUGE;
        return;
    }
}

static LLVMValueRef
emit_compare(Emitter *e, QdOp op, const QdType *ty, LLVMValueRef a, LLVMValueRef b)
{
    LLVMRealPredicate fp;
    LLVMIntPredicate sp, up;
    compare_predicates(op, &fp, &sp, &up);
    if (qd_type_is_float(ty)) {
        return LLVMBuildFCmp(e->b, fp, a, b, "");
    }
    return LLVMBuildICmp(e->b, qd_type_is_signed(ty) ? sp : up, a, b, "");
}

/* `cast` per ops.def and codegen.h: ints wrap or extend, floats -> ints saturate. */
LLVMValueRef
qd_llvm_cast(Emitter *e, const QdType *from, const QdType *to, LLVMValueRef v)
{
    LLVMTypeRef t = qd_llvm_reg_type(e, to);
    bool from_float = qd_type_is_float(from);
    bool to_float = qd_type_is_float(to);

    if (from->kind == to->kind) {
        return v;
    }
    if (!from_float && !to_float) {
        return qd_llvm_int_resize(e, from, v, t);
    }
    if (!from_float) {
        /* f16 / bf16 from an integer: through f32, exact for every value they can hold */
        LLVMTypeRef via = is_narrow_float(to) ? e->t_f32 : t;
        LLVMValueRef r = qd_type_is_signed(from) ? LLVMBuildSIToFP(e->b, v, via, "")
                                                 : LLVMBuildUIToFP(e->b, v, via, "");
        return via == t ? r : LLVMBuildFPTrunc(e->b, r, t, "");
    }
    if (is_narrow_float(from)) {
        v = LLVMBuildFPExt(e->b, v, e->t_f32, "");
        from = qd_type_scalar(QD_TY_F32);
        if (from->kind == to->kind) {
            return v;
        }
    }
    if (!to_float && to->kind == QD_TY_U1) {
        /* saturating to u8, then nonzero: the same as saturating to u1, and avoids the
         * fptoui.sat.i1 that LLVM 19's NVPTX backend gets wrong (NaN, inf, negatives) */
        LLVMTypeRef types[2] = {e->t_i8, LLVMTypeOf(v)};
        LLVMValueRef byte = qd_llvm_intrinsic(e, "llvm.fptoui.sat", types, 2, &v, 1);
        return LLVMBuildICmp(e->b, LLVMIntNE, byte, LLVMConstInt(e->t_i8, 0, 0), "");
    }
    if (!to_float) {
        LLVMTypeRef types[2] = {t, LLVMTypeOf(v)};
        const char *name = qd_type_is_signed(to) ? "llvm.fptosi.sat" : "llvm.fptoui.sat";
        return qd_llvm_intrinsic(e, name, types, 2, &v, 1);
    }
    if (to->kind == QD_TY_BF16 && from->kind == QD_TY_F64) {
        v = LLVMBuildFPTrunc(e->b, v, e->t_f32, "");
    }
    if (qd_type_bits(to) > qd_type_bits(from)) {
        return LLVMBuildFPExt(e->b, v, t, "");
    }
    return LLVMBuildFPTrunc(e->b, v, t, "");
}

/***** dispatch *****/

/* Whether value id is a load of a partial_* accumulator of the task being emitted. */
static bool
is_partial_load(const Emitter *e, uint32_t id)
{
    const QdInst *def = e->kernel->values[id].def;
    if (def == NULL || def->op != QD_OP_LOAD) {
        return false;
    }
    for (uint32_t k = 0; k < e->partials.len; k++) {
        if (e->partials.data[k]->result == def->args[0]) {
            return true;
        }
    }
    return false;
}

/* CPU: the update `max %acc, %v` (min) of a float partial accumulator (aggregate_atomics makes
 * one of every atomic_max / atomic_min on one address in a loop). A NaN v is replaced by the
 * identity, which leaves the accumulator as maxnum would: no operand can then be a NaN (the
 * accumulator starts at the identity), the maxnum carries nnan and nsz (maxnum's sign of equal
 * zeros is unspecified anyway) and LLVM vectorizes the reduction. NULL when inst is not such an
 * update. */
static LLVMValueRef
partial_min_max(Emitter *e, const QdInst *inst)
{
    if ((inst->op != QD_OP_MIN && inst->op != QD_OP_MAX) || !qd_type_is_float(inst->type) ||
        qd_llvm_is_gpu(e)) {
        return NULL;
    }
    int acc = is_partial_load(e, inst->args[0]) ? 0 : is_partial_load(e, inst->args[1]) ? 1 : -1;
    if (acc < 0) {
        return NULL;
    }
    LLVMValueRef a = qd_llvm_value(e, inst->args[acc]);
    LLVMValueRef v = qd_llvm_value(e, inst->args[1 - acc]);
    LLVMValueRef ident = LLVMConstReal(LLVMTypeOf(v), inst->op == QD_OP_MAX ? -1.0 / 0.0 : 1.0 / 0.0);
    LLVMValueRef nan = LLVMBuildFCmp(e->b, LLVMRealUNO, v, v, "");
    LLVMValueRef args[2] = {a, LLVMBuildSelect(e->b, nan, ident, v, "")};
    LLVMValueRef r = intrinsic1(e, inst->op == QD_OP_MAX ? "llvm.maxnum" : "llvm.minnum", args, 2);
    LLVMFastMathFlags flags = LLVMFastMathNoNaNs | LLVMFastMathNoSignedZeros;
    LLVMSetFastMathFlags(r, e->opts->fast_math ? flags | fast_math_flags(e) : flags);
    return r;
}

/* Dispatch on the typing rule of ops.def: the sig says how many operands there are and which
 * type decides the operation (the result's for arithmetic, the operand's for comparisons,
 * unary ops and casts). */
int
qd_llvm_emit_op(Emitter *e, const QdInst *inst)
{
    const QdFunc *k = e->kernel;
    QdSig sig = qd_op_info[inst->op].sig;
    LLVMValueRef a = inst->nargs > 0 ? qd_llvm_value(e, inst->args[0]) : NULL;
    LLVMValueRef b = inst->nargs > 1 ? qd_llvm_value(e, inst->args[1]) : NULL;
    const QdType *ta = inst->nargs > 0 ? qd_value_type(k, inst->args[0]) : NULL;
    LLVMValueRef r = NULL;

    switch (sig) {
    case SIG_CONST:
        r = qd_llvm_const(e, inst->type, &inst->imm.cst);
        break;
    case SIG_ARITH:
    case SIG_INT2:
    case SIG_FLOAT2:
        r = partial_min_max(e, inst);
        if (r == NULL) {
            r = qd_llvm_binary(e, inst->op, inst->type, a, b);
        }
        break;
    case SIG_SHIFT:
        r = qd_llvm_binary(e, inst->op, inst->type, a, resize_unsigned(e, b, LLVMTypeOf(a)));
        break;
    case SIG_UNARY:
    case SIG_INT1:
    case SIG_FLOAT1:
    case SIG_BITCOUNT:
        r = emit_unary(e, inst->op, ta, a);
        break;
    case SIG_CMP:
        r = emit_compare(e, inst->op, ta, a, b);
        break;
    case SIG_SELECT:
        r = LLVMBuildSelect(e->b, qd_llvm_truth(e, a), b, qd_llvm_value(e, inst->args[2]), "");
        break;
    case SIG_CAST:
        r = qd_llvm_cast(e, ta, inst->type, a);
        break;
    case SIG_BITCAST:
        /* pointers are opaque: a pointer bitcast is the same value */
        r = ta->kind == QD_TY_PTR
                ? a
                : LLVMBuildBitCast(e->b, a, qd_llvm_reg_type(e, inst->type), "");
        break;
    case SIG_PRINT:
        return qd_llvm_emit_print(e, inst);
    case SIG_ASSERT:
        return qd_llvm_emit_assert(e, inst);
    default:
        if (inst->op == QD_OP_FENCE_BLOCK || inst->op == QD_OP_FENCE_DEVICE ||
            inst->op == QD_OP_FENCE_SYSTEM) {
            if (qd_llvm_is_gpu(e)) {
                qd_llvm_emit_gpu_fence(e, inst->op);
            } else {
                LLVMBuildFence(e->b, LLVMAtomicOrderingSequentiallyConsistent, 0, "");
            }
            return 0;
        }
        break;
    }
    if (r == NULL || inst->result == QD_NO_VALUE) {
        return qd_error(e->ctx, qd_llvm_loc(inst), QD_ERR_INTERNAL,
                        "cannot compile `%s` for the %s", qd_op_info[inst->op].text,
                        qd_llvm_is_gpu(e) ? "GPU" : "CPU");
    }
    e->values[inst->result] = r;
    return 0;
}
