/* codegen/llvm/llvm_emit_simt.c -- SIMT instructions and fences on NVPTX.
 *
 * Every op is one NVVM intrinsic or a short sequence of them:
 *   thread_idx / block_idx / block_dim / grid_dim   sreg tid.x / ctaid.x / ntid.x / nctaid.x
 *   lane_id / subgroup_size                         sreg laneid / the constant 32
 *   block_sync, block_sync_{all,any,count}          barrier0, barrier0.{and,or,popc}
 *   subgroup_sync %mask                             bar.warp.sync(mask)
 *   shuffle{,_xor,_up,_down}                        shfl.sync.{idx,bfly,up,down}.i32
 *   ballot, vote_all, vote_any                      vote.{ballot,all,any}.sync
 *   match_any                                       match.any.sync.{b32,b64}
 *   mma_m16n8k16                                    mma.sync.aligned.m16n8k16.row.col.f32.f16
 *   shared_alloc                                    an addrspace(3) global of the block
 *   fence_block / fence_device / fence_system       membar.cta / membar.gl / membar.sys
 * Subgroup operations other than subgroup_sync take the mask of the lanes active at the call
 * (activemask): in uniform code that is the whole warp, and a lane that left a loop early never
 * makes the others wait forever. subgroup_sync is __syncwarp(mask): it waits for every lane of
 * its operand (0xffffffff for qd.simt.subgroup.sync), so lanes that diverged (left a loop on
 * different trips, say) reconverge there, which a barrier over the active lanes would not do.
 * Shuffles move 32 bits: narrower values travel zero-extended, 64-bit values as two
 * halves, floats as their bits. The out-of-range rules of ops.def (shuffle_up / _down keep
 * the lane's own value) are PTX's own with the clamp operands used here.
 * The CPU backend rejects these ops before they get here (llvm_emit.c).
 */
#include "llvm_internal.h"

#include <stdio.h>
#include <string.h>

/* Width of a warp on every NVIDIA GPU so far; PTX's WARP_SZ. */
#define WARP_SIZE 32

LLVMValueRef
qd_llvm_sreg(Emitter *e, LLVMBuilderRef b, const char *name)
{
    char intrinsic[64];
    snprintf(intrinsic, sizeof(intrinsic), "llvm.nvvm.read.ptx.sreg.%s", name);
    unsigned id = LLVMLookupIntrinsicID(intrinsic, strlen(intrinsic));
    LLVMValueRef fn = LLVMGetIntrinsicDeclaration(e->mod, id, NULL, 0);
    LLVMTypeRef fn_type = LLVMIntrinsicGetType(e->llctx, id, NULL, 0);
    return LLVMBuildCall2(b, fn_type, fn, NULL, 0, name);
}

/* Calls a non-overloaded NVVM intrinsic. */
static LLVMValueRef
nvvm(Emitter *e, const char *name, LLVMValueRef *args, unsigned nargs)
{
    return qd_llvm_intrinsic(e, name, NULL, 0, args, nargs);
}

LLVMValueRef
qd_llvm_active_mask(Emitter *e)
{
    return nvvm(e, "llvm.nvvm.activemask", NULL, 0);
}

/* An integer predicate as i32 0 / 1 or as i1. */
static LLVMValueRef
predicate_i1(Emitter *e, const QdInst *inst)
{
    return qd_llvm_truth(e, qd_llvm_value(e, inst->args[0]));
}

/* One 32-bit shuffle of kind `mode` (idx, bfly, up, down). */
static LLVMValueRef
shuffle32(Emitter *e, const char *mode, LLVMValueRef mask, LLVMValueRef v, LLVMValueRef lane)
{
    char name[64];
    /* clamp operand c: 0x1f clamps to the warp for idx / bfly / down, 0 for up */
    unsigned clamp = mode[0] == 'u' ? 0 : WARP_SIZE - 1;
    LLVMValueRef args[4] = {mask, v, lane, LLVMConstInt(e->t_i32, clamp, 0)};
    snprintf(name, sizeof(name), "llvm.nvvm.shfl.sync.%s.i32", mode);
    return nvvm(e, name, args, 4);
}

/* A shuffle of kind `mode` of v, a scalar of type ty (any width), among the lanes of mask. */
static LLVMValueRef
shuffle_value(Emitter *e, const char *mode, const QdType *ty, LLVMValueRef v, LLVMValueRef lane,
              LLVMValueRef mask)
{
    LLVMTypeRef t = qd_llvm_reg_type(e, ty);
    unsigned bits = ty->kind == QD_TY_U1 ? 1 : qd_type_bits(ty);
    LLVMTypeRef bits_type = LLVMIntTypeInContext(e->llctx, bits);
    LLVMValueRef x = qd_type_is_float(ty) ? LLVMBuildBitCast(e->b, v, bits_type, "") : v;
    LLVMValueRef r;

    if (bits <= 32) {
        LLVMValueRef wide = bits < 32 ? LLVMBuildZExt(e->b, x, e->t_i32, "") : x;
        r = shuffle32(e, mode, mask, wide, lane);
        r = bits < 32 ? LLVMBuildTrunc(e->b, r, bits_type, "") : r;
    } else {
        LLVMValueRef lo = LLVMBuildTrunc(e->b, x, e->t_i32, "");
        LLVMValueRef hi =
            LLVMBuildTrunc(e->b, LLVMBuildLShr(e->b, x, LLVMConstInt(e->t_i64, 32, 0), ""),
                           e->t_i32, "");
        lo = LLVMBuildZExt(e->b, shuffle32(e, mode, mask, lo, lane), e->t_i64, "");
        hi = LLVMBuildZExt(e->b, shuffle32(e, mode, mask, hi, lane), e->t_i64, "");
        r = LLVMBuildOr(e->b, lo, LLVMBuildShl(e->b, hi, LLVMConstInt(e->t_i64, 32, 0), ""), "");
    }
    return qd_type_is_float(ty) ? LLVMBuildBitCast(e->b, r, t, "") : r;
}

LLVMValueRef
qd_llvm_shuffle_xor(Emitter *e, const QdType *ty, LLVMValueRef v, LLVMValueRef mask,
                    unsigned lane_mask)
{
    return shuffle_value(e, "bfly", ty, v, LLVMConstInt(e->t_i32, lane_mask, 0), mask);
}

/* shuffle, shuffle_xor, shuffle_up, shuffle_down of a scalar of any type. */
static LLVMValueRef
emit_shuffle(Emitter *e, const QdInst *inst)
{
    static const char *const modes[] = {"idx", "bfly", "up", "down"};
    const char *mode = modes[inst->op == QD_OP_SHUFFLE       ? 0
                             : inst->op == QD_OP_SHUFFLE_XOR ? 1
                             : inst->op == QD_OP_SHUFFLE_UP  ? 2
                                                             : 3];
    return shuffle_value(e, mode, inst->type, qd_llvm_value(e, inst->args[0]),
                         qd_llvm_value(e, inst->args[1]), qd_llvm_active_mask(e));
}

/* shared_alloc: one block-shared variable of the pointee type per instruction. */
static LLVMValueRef
emit_shared_alloc(Emitter *e, const QdInst *inst)
{
    char name[48];
    LLVMTypeRef t = qd_llvm_mem_type(e, inst->type->elem);
    snprintf(name, sizeof(name), "qd_shared_%u", inst->result);
    LLVMValueRef g = LLVMAddGlobalInAddressSpace(e->mod, t, name, 3);
    LLVMSetInitializer(g, LLVMGetUndef(t));
    LLVMSetLinkage(g, LLVMInternalLinkage);
    LLVMSetAlignment(g, 16);
    return LLVMConstAddrSpaceCast(g, e->t_ptr);
}

/* mma_m16n8k16 %d, %a, %b: the fragments loaded from the lane's local arrays, f16 elements in
 * pairs (<2 x half>, the lower index in the low half), D = A B + D stored back. */
static void
emit_mma(Emitter *e, const QdInst *inst)
{
    LLVMTypeRef h = LLVMHalfTypeInContext(e->llctx), f = LLVMFloatTypeInContext(e->llctx);
    LLVMTypeRef h2 = LLVMVectorType(h, 2);
    LLVMValueRef pd = qd_llvm_value(e, inst->args[0]), pa = qd_llvm_value(e, inst->args[1]);
    LLVMValueRef pb = qd_llvm_value(e, inst->args[2]);
    LLVMValueRef args[10], slots[4];
    const QdType *bty = qd_value_type(e->kernel, inst->args[2]);
    bool b_in_memory = bty->space == QD_SPACE_GLOBAL;
    if (b_in_memory) { /* 4 consecutive f16, 8-byte aligned: one vector load */
        LLVMValueRef v = LLVMBuildLoad2(e->b, LLVMVectorType(h, 4), pb, "");
        LLVMSetAlignment(v, 8);
        for (unsigned k = 0; k < 2; k++) {
            LLVMValueRef lanes[2] = {LLVMConstInt(e->t_i32, 2 * k, 0),
                                     LLVMConstInt(e->t_i32, 2 * k + 1, 0)};
            args[4 + k] = LLVMBuildShuffleVector(e->b, v, LLVMGetUndef(LLVMVectorType(h, 4)),
                                                 LLVMConstVector(lanes, 2), "");
        }
    }
    for (unsigned k = 0; k < (b_in_memory ? 4u : 6u); k++) { /* a: 4 pairs, b: 2 pairs */
        LLVMValueRef base = k < 4 ? pa : pb;
        unsigned first = k < 4 ? 2 * k : 2 * (k - 4);
        LLVMValueRef pair = LLVMGetUndef(h2);
        for (unsigned j = 0; j < 2; j++) {
            LLVMValueRef idx = LLVMConstInt(e->t_i32, first + j, 0);
            LLVMValueRef x = LLVMBuildLoad2(e->b, h, LLVMBuildGEP2(e->b, h, base, &idx, 1, ""), "");
            pair = LLVMBuildInsertElement(e->b, pair, x, LLVMConstInt(e->t_i32, j, 0), "");
        }
        args[k] = pair;
    }
    for (unsigned k = 0; k < 4; k++) {
        LLVMValueRef idx = LLVMConstInt(e->t_i32, k, 0);
        slots[k] = LLVMBuildGEP2(e->b, f, pd, &idx, 1, "");
        args[6 + k] = LLVMBuildLoad2(e->b, f, slots[k], "");
    }
    LLVMValueRef r = nvvm(e, "llvm.nvvm.mma.m16n8k16.row.col.f32.f32", args, 10);
    for (unsigned k = 0; k < 4; k++) {
        LLVMBuildStore(e->b, LLVMBuildExtractValue(e->b, r, k, ""), slots[k]);
    }
}

void
qd_llvm_emit_gpu_fence(Emitter *e, QdOp op)
{
    const char *name = op == QD_OP_FENCE_BLOCK    ? "llvm.nvvm.membar.cta"
                       : op == QD_OP_FENCE_DEVICE ? "llvm.nvvm.membar.gl"
                                                  : "llvm.nvvm.membar.sys";
    nvvm(e, name, NULL, 0);
}

int
qd_llvm_emit_simt(Emitter *e, const QdInst *inst)
{
    LLVMValueRef r = NULL;
    LLVMValueRef args[2];

    switch (inst->op) {
    case QD_OP_THREAD_IDX:
        r = qd_llvm_sreg(e, e->b, "tid.x");
        break;
    case QD_OP_BLOCK_IDX:
        r = qd_llvm_sreg(e, e->b, "ctaid.x");
        break;
    case QD_OP_BLOCK_DIM:
        r = qd_llvm_sreg(e, e->b, "ntid.x");
        break;
    case QD_OP_GRID_DIM:
        r = qd_llvm_sreg(e, e->b, "nctaid.x");
        break;
    case QD_OP_LANE_ID:
        r = qd_llvm_sreg(e, e->b, "laneid");
        break;
    case QD_OP_SUBGROUP_SIZE:
        r = LLVMConstInt(e->t_i32, WARP_SIZE, 0);
        break;
    case QD_OP_BLOCK_SYNC:
        nvvm(e, "llvm.nvvm.barrier0", NULL, 0);
        return 0;
    case QD_OP_BLOCK_SYNC_ALL:
    case QD_OP_BLOCK_SYNC_ANY:
    case QD_OP_BLOCK_SYNC_COUNT:
        args[0] = LLVMBuildZExt(e->b, predicate_i1(e, inst), e->t_i32, "");
        r = nvvm(e,
                 inst->op == QD_OP_BLOCK_SYNC_ALL   ? "llvm.nvvm.barrier0.and"
                 : inst->op == QD_OP_BLOCK_SYNC_ANY ? "llvm.nvvm.barrier0.or"
                                                    : "llvm.nvvm.barrier0.popc",
                 args, 1);
        if (inst->op != QD_OP_BLOCK_SYNC_COUNT) {
            /* and / or give nonzero for true: normalise to 0 / 1 */
            r = LLVMBuildZExt(e->b, qd_llvm_truth(e, r), e->t_i32, "");
        }
        break;
    case QD_OP_SUBGROUP_SYNC:
        args[0] = qd_llvm_value(e, inst->args[0]);
        nvvm(e, "llvm.nvvm.bar.warp.sync", args, 1);
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
        args[0] = qd_llvm_active_mask(e);
        args[1] = predicate_i1(e, inst);
        r = nvvm(e,
                 inst->op == QD_OP_BALLOT     ? "llvm.nvvm.vote.ballot.sync"
                 : inst->op == QD_OP_VOTE_ALL ? "llvm.nvvm.vote.all.sync"
                                              : "llvm.nvvm.vote.any.sync",
                 args, 2);
        break;
    case QD_OP_MATCH_ANY: { /* match.any.sync.b32 / .b64 (sm_70 and later) */
        args[0] = qd_llvm_active_mask(e);
        args[1] = qd_llvm_value(e, inst->args[0]);
        bool wide = qd_type_bits(qd_value_type(e->kernel, inst->args[0])) == 64;
        r = nvvm(e, wide ? "llvm.nvvm.match.any.sync.i64" : "llvm.nvvm.match.any.sync.i32", args, 2);
        break;
    }
    case QD_OP_SHARED_ALLOC:
        r = emit_shared_alloc(e, inst);
        break;
    case QD_OP_MMA_M16N8K16:
        emit_mma(e, inst);
        return 0;
    default:
        return qd_error(e->ctx, qd_llvm_loc(inst), QD_ERR_INTERNAL,
                        "cannot compile `%s` for the GPU", qd_op_info[inst->op].text);
    }
    if (inst->result != QD_NO_VALUE) {
        e->values[inst->result] = r;
    }
    return 0;
}
