/* codegen/llvm/llvm_emit_simt_cpu.c -- SIMT instructions on the CPU (cpu_simt).
 *
 * Each op is a call into the emulation runtime (runtime/cpu/simt.c), which the JIT resolves:
 *   thread_idx / block_idx / block_dim / grid_dim / lane_id   qd_simt_geom(0..4)
 *   subgroup_size                                             the constant 32
 *   block_sync, block_sync_{all,any,count}                    qd_simt_block_sync(_pred)
 *   subgroup_sync %mask                                       qd_simt_subgroup_sync
 *   shuffle{,_xor,_up,_down}                                  qd_simt_shuffle(bits, arg, mode)
 *   ballot, vote_all, vote_any                                qd_simt_ballot(pred, mode)
 *   match_any                                                 qd_simt_match_any(value)
 *   shared_alloc                                              qd_simt_shared(offset, size)
 *   mma_m16n8k16 %d, %a, %b                                   qd_simt_mma(d, a, b)
 * Shuffled values travel as 64-bit patterns (zero-extended integers, float bits). Each
 * shared_alloc of a task gets its own offset in the block's shared buffer (16-byte aligned).
 */
#include "llvm_internal.h"

#include <string.h>

#define SUBGROUP_SIZE 32

static LLVMValueRef
call_rt(Emitter *e, const char *name, LLVMTypeRef ret, LLVMValueRef *args, unsigned nargs)
{
    LLVMTypeRef params[3];
    for (unsigned k = 0; k < nargs; k++) {
        params[k] = LLVMTypeOf(args[k]);
    }
    LLVMTypeRef fn_type;
    LLVMValueRef fn = qd_llvm_declare(e, name, ret, params, nargs, &fn_type);
    return LLVMBuildCall2(e->b, fn_type, fn, args, nargs, "");
}

static LLVMValueRef
i32c(Emitter *e, int64_t v)
{
    return LLVMConstInt(e->t_i32, (unsigned long long)v, 1);
}

/* The predicate operand as an i32 0 / 1. */
static LLVMValueRef
predicate(Emitter *e, const QdInst *inst)
{
    return LLVMBuildZExt(e->b, qd_llvm_truth(e, qd_llvm_value(e, inst->args[0])), e->t_i32, "");
}

static LLVMValueRef
emit_shuffle(Emitter *e, const QdInst *inst)
{
    int mode = inst->op == QD_OP_SHUFFLE       ? 0
               : inst->op == QD_OP_SHUFFLE_XOR ? 1
               : inst->op == QD_OP_SHUFFLE_UP  ? 2
                                               : 3;
    const QdType *ty = inst->type;
    LLVMTypeRef t = qd_llvm_reg_type(e, ty);
    unsigned bits = ty->kind == QD_TY_U1 ? 1 : qd_type_bits(ty);
    LLVMTypeRef bits_type = LLVMIntTypeInContext(e->llctx, bits);
    LLVMValueRef v = qd_llvm_value(e, inst->args[0]);
    LLVMValueRef x = qd_type_is_float(ty) ? LLVMBuildBitCast(e->b, v, bits_type, "") : v;
    if (bits < 64) {
        x = LLVMBuildZExt(e->b, x, e->t_i64, "");
    }
    LLVMValueRef args[3] = {x, qd_llvm_value(e, inst->args[1]), i32c(e, mode)};
    LLVMValueRef r = call_rt(e, "qd_simt_shuffle", e->t_i64, args, 3);
    if (bits < 64) {
        r = LLVMBuildTrunc(e->b, r, bits_type, "");
    }
    return qd_type_is_float(ty) ? LLVMBuildBitCast(e->b, r, t, "") : r;
}

static LLVMValueRef
emit_shared(Emitter *e, const QdInst *inst)
{
    LLVMTypeRef t = qd_llvm_mem_type(e, inst->type->elem);
    uint64_t size = LLVMABISizeOfType(LLVMGetModuleDataLayout(e->mod), t);
    uint64_t offset = e->shared_offset;
    e->shared_offset = (offset + size + 15) & ~(uint64_t)15;
    LLVMValueRef args[2] = {LLVMConstInt(e->t_i64, offset, 0), LLVMConstInt(e->t_i64, size, 0)};
    return call_rt(e, "qd_simt_shared", e->t_ptr, args, 2);
}

int
qd_llvm_emit_simt_cpu(Emitter *e, const QdInst *inst)
{
    LLVMValueRef r = NULL;
    LLVMValueRef args[2];

    switch (inst->op) {
    case QD_OP_THREAD_IDX:
    case QD_OP_BLOCK_IDX:
    case QD_OP_BLOCK_DIM:
    case QD_OP_GRID_DIM:
    case QD_OP_LANE_ID:
        args[0] = i32c(e, inst->op == QD_OP_THREAD_IDX  ? 0
                          : inst->op == QD_OP_BLOCK_IDX ? 1
                          : inst->op == QD_OP_BLOCK_DIM ? 2
                          : inst->op == QD_OP_GRID_DIM  ? 3
                                                        : 4);
        r = call_rt(e, "qd_simt_geom", e->t_i32, args, 1);
        break;
    case QD_OP_SUBGROUP_SIZE:
        r = i32c(e, SUBGROUP_SIZE);
        break;
    case QD_OP_BLOCK_SYNC:
        call_rt(e, "qd_simt_block_sync", e->t_void, NULL, 0);
        return 0;
    case QD_OP_BLOCK_SYNC_ALL:
    case QD_OP_BLOCK_SYNC_ANY:
    case QD_OP_BLOCK_SYNC_COUNT:
        args[0] = predicate(e, inst);
        args[1] = i32c(e, inst->op == QD_OP_BLOCK_SYNC_ALL ? 0 : inst->op == QD_OP_BLOCK_SYNC_ANY ? 1 : 2);
        r = call_rt(e, "qd_simt_block_sync_pred", e->t_i32, args, 2);
        break;
    case QD_OP_SUBGROUP_SYNC:
        /* The mask operand is unused: the emulation runs every lane until it waits or finishes
         * before it releases a subgroup operation, so the lanes still running meet here
         * whatever the mask (the full mask's behaviour, runtime/cpu/simt.c). */
        call_rt(e, "qd_simt_subgroup_sync", e->t_void, NULL, 0);
        return 0;
    case QD_OP_SHUFFLE:
    case QD_OP_SHUFFLE_XOR:
    case QD_OP_SHUFFLE_UP:
    case QD_OP_SHUFFLE_DOWN:
        r = emit_shuffle(e, inst);
        break;
    case QD_OP_BALLOT:
    case QD_OP_VOTE_ALL:
    case QD_OP_VOTE_ANY:
        args[0] = predicate(e, inst);
        args[1] = i32c(e, inst->op == QD_OP_BALLOT ? 0 : inst->op == QD_OP_VOTE_ALL ? 1 : 2);
        r = call_rt(e, "qd_simt_ballot", e->t_i32, args, 2);
        if (inst->op != QD_OP_BALLOT) {
            r = LLVMBuildICmp(e->b, LLVMIntNE, r, i32c(e, 0), "");
        }
        break;
    case QD_OP_MATCH_ANY: {
        LLVMValueRef v = qd_llvm_value(e, inst->args[0]);
        if (qd_type_bits(qd_value_type(e->kernel, inst->args[0])) < 64) {
            v = LLVMBuildZExt(e->b, v, e->t_i64, "");
        }
        r = call_rt(e, "qd_simt_match_any", e->t_i32, &v, 1);
        break;
    }
    case QD_OP_SHARED_ALLOC:
        r = emit_shared(e, inst);
        break;
    case QD_OP_MMA_M16N8K16: {
        LLVMValueRef ptrs[3] = {qd_llvm_value(e, inst->args[0]), qd_llvm_value(e, inst->args[1]),
                                qd_llvm_value(e, inst->args[2])};
        call_rt(e, "qd_simt_mma", e->t_void, ptrs, 3);
        return 0;
    }
    default:
        return qd_error(e->ctx, qd_llvm_loc(inst), QD_ERR_INTERNAL,
                        "cannot emulate `%s` on the CPU", qd_op_info[inst->op].text);
    }
    if (inst->result != QD_NO_VALUE) {
        e->values[inst->result] = r;
    }
    return 0;
}
