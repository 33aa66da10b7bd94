/* codegen/llvm/llvm_types.c -- QIR types as LLVM types, constants, and the argument layout.
 *
 * Two views of every scalar: in registers u1 is i1 (what comparisons produce and branches
 * take); in memory it is one byte holding 0 or 1, so u1 fields, ndarrays, arguments and locals
 * have a defined byte representation that Python and NumPy (bool) share. All other scalars
 * look the same in both views; f16 and bf16 are LLVM's half and bfloat.
 *
 * qd_arg_layout is the one definition of the packed argument buffer (codegen.h, KERNEL ABI):
 * the emitter reads parameters at these offsets and launchers write them there.
 */
#include "llvm_internal.h"

#include <stdlib.h>

/***** types *****/

LLVMTypeRef
qd_llvm_reg_type(const Emitter *e, const QdType *ty)
{
    switch (ty->kind) {
    case QD_TY_VOID:
        return e->t_void;
    case QD_TY_U1:
        return e->t_i1;
    case QD_TY_I8:
    case QD_TY_U8:
        return e->t_i8;
    case QD_TY_I16:
    case QD_TY_U16:
        return e->t_i16;
    case QD_TY_I32:
    case QD_TY_U32:
        return e->t_i32;
    case QD_TY_I64:
    case QD_TY_U64:
        return e->t_i64;
    case QD_TY_F16:
        return LLVMHalfTypeInContext(e->llctx);
    case QD_TY_BF16:
        return LLVMBFloatTypeInContext(e->llctx);
    case QD_TY_F32:
        return e->t_f32;
    case QD_TY_F64:
        return e->t_f64;
    case QD_TY_ARRAY:
        return qd_llvm_mem_type(e, ty);
    default: /* pointers; ndarrays only appear as parameters, read field by field */
        return e->t_ptr;
    }
}

LLVMTypeRef
qd_llvm_mem_type(const Emitter *e, const QdType *ty)
{
    if (ty->kind == QD_TY_U1) {
        return e->t_i8;
    }
    if (ty->kind == QD_TY_ARRAY) {
        return LLVMArrayType2(qd_llvm_mem_type(e, ty->elem), ty->count);
    }
    return qd_llvm_reg_type(e, ty);
}

LLVMTypeRef
qd_llvm_bits_type(const Emitter *e, const QdType *ty)
{
    return LLVMIntTypeInContext(e->llctx, qd_llvm_scalar_size(ty) * 8);
}

uint32_t
qd_llvm_scalar_size(const QdType *ty)
{
    uint32_t bits = qd_type_bits(ty);
    return bits <= 8 ? 1 : bits / 8;
}

/***** constants *****/

LLVMValueRef
qd_llvm_const(const Emitter *e, const QdType *ty, const QdConst *c)
{
    LLVMTypeRef t = qd_llvm_reg_type(e, ty);
    if (qd_type_is_float(ty)) {
        return LLVMConstReal(t, c->f);
    }
    return LLVMConstInt(t, c->u, qd_type_is_signed(ty));
}

/***** memory views *****/

LLVMValueRef
qd_llvm_from_mem(Emitter *e, const QdType *ty, LLVMValueRef v)
{
    if (ty->kind == QD_TY_U1) {
        return LLVMBuildICmp(e->b, LLVMIntNE, v, LLVMConstInt(e->t_i8, 0, 0), "");
    }
    return v;
}

LLVMValueRef
qd_llvm_to_mem(Emitter *e, const QdType *ty, LLVMValueRef v)
{
    if (ty->kind == QD_TY_U1) {
        return LLVMBuildZExt(e->b, v, e->t_i8, "");
    }
    return v;
}

LLVMValueRef
qd_llvm_load(Emitter *e, const QdType *ty, LLVMValueRef ptr)
{
    LLVMValueRef v = LLVMBuildLoad2(e->b, qd_llvm_mem_type(e, ty), ptr, "");
    LLVMSetAlignment(v, qd_llvm_scalar_size(ty));
    return qd_llvm_from_mem(e, ty, v);
}

void
qd_llvm_store(Emitter *e, const QdType *ty, LLVMValueRef ptr, LLVMValueRef v)
{
    LLVMValueRef st = LLVMBuildStore(e->b, qd_llvm_to_mem(e, ty, v), ptr);
    LLVMSetAlignment(st, qd_llvm_scalar_size(ty));
}

LLVMValueRef
qd_llvm_int_resize(Emitter *e, const QdType *ty, LLVMValueRef v, LLVMTypeRef to)
{
    unsigned from_bits = LLVMGetIntTypeWidth(LLVMTypeOf(v));
    unsigned to_bits = LLVMGetIntTypeWidth(to);
    if (from_bits == to_bits) {
        return v;
    }
    if (from_bits > to_bits) {
        return LLVMBuildTrunc(e->b, v, to, "");
    }
    /* u1 is unsigned: true widens to 1, never to -1. */
    if (qd_type_is_signed(ty)) {
        return LLVMBuildSExt(e->b, v, to, "");
    }
    return LLVMBuildZExt(e->b, v, to, "");
}

/***** argument layout *****/

/* Size and alignment of one parameter in the packed buffer. */
static void
param_size_align(const QdType *ty, uint32_t *size, uint32_t *align)
{
    if (ty->kind == QD_TY_NDARRAY) {
        /* the ndarray record (abi.h) */
        *size = qd_ndarray_record_size(ty->ndim);
        *align = QD_NDARRAY_RECORD_ALIGN;
        return;
    }
    if (ty->kind == QD_TY_PTR) {
        *size = *align = 8;
        return;
    }
    *size = *align = qd_llvm_scalar_size(ty);
}

/* Which values the instructions read: one flag per value id. */
typedef struct QdArgRead {
    bool *read;
    uint32_t nvalues;
} QdArgRead;

/* Marks the values an instruction reads. */
static int
note_operands(QdInst *inst, void *data)
{
    QdArgRead *state = data;
    for (uint32_t k = 0; k < inst->nargs; k++) {
        if (inst->args[k] < state->nvalues) {
            state->read[inst->args[k]] = true;
        }
    }
    return 0;
}

void
qd_arg_layout(const QdFunc *kernel, uint32_t *offsets, uint32_t *total_size)
{
    /* Parameters no instruction reads take no room (QD_ARG_UNUSED): a kernel taking a dataclass
     * of many arrays passes only those it uses. Without memory for the flags, none is pruned. */
    bool *read = calloc(kernel->nvalues + 1, sizeof(bool));
    if (read != NULL) {
        QdArgRead state = {read, kernel->nvalues};
        qd_region_walk(kernel->body, note_operands, &state);
    }
    uint32_t at = 0;
    for (uint32_t i = 0; i < kernel->nparams; i++) {
        if (read != NULL && !read[kernel->params[i]]) {
            offsets[i] = QD_ARG_UNUSED;
            continue;
        }
        uint32_t size, align;
        param_size_align(qd_value_type(kernel, kernel->params[i]), &size, &align);
        at = (at + align - 1) & ~(align - 1);
        offsets[i] = at;
        at += size;
    }
    *total_size = (at + QD_ARGS_ALIGN - 1) & ~(uint32_t)(QD_ARGS_ALIGN - 1);
    free(read);
}
