/* codegen/llvm/llvm_emit_reduce.c -- partial_* accumulators (ops.def, passes/aggregate_atomics.c).
 *
 * `%acc = partial_add %p` in a range_for task's prologue becomes an alloca holding the
 * operation's identity; the loop body updates it with plain loads and stores, which LLVM keeps
 * in a register (and, for float sums with reassociation allowed, vectorizes on the CPU). After
 * the loop:
 *   CPU     one atomic of the accumulator into *p per call of the task function, i.e. per
 *           chunk of iterations a worker runs;
 *   NVPTX   when the whole warp is there (activemask is all ones: the threads of a full warp
 *           meet after the grid-stride loop) the lanes combine their values with five
 *           shuffle_xor steps and lane 0 issues the atomic; in a partial warp every lane issues
 *           its own. Either way one atomic per thread at most instead of one per iteration.
 */
#include "llvm_internal.h"

/* Lanes of a warp (PTX's WARP_SZ). */
#define WARP_SIZE 32

/* The identity of the atomic `op` on type ty, as a register value. */
static LLVMValueRef
identity(Emitter *e, QdOp op, const QdType *ty)
{
    LLVMTypeRef t = qd_llvm_reg_type(e, ty);
    if (qd_type_is_float(ty)) {
        /* -0.0 + x is x for every x, -0.0 included */
        double v = op == QD_OP_ATOMIC_ADD ? -0.0 : op == QD_OP_ATOMIC_MIN ? 1.0 / 0.0 : -1.0 / 0.0;
        return LLVMConstReal(t, v);
    }
    unsigned bits = qd_type_bits(ty);
    uint64_t ones = bits >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << bits) - 1;
    uint64_t sign = (uint64_t)1 << (bits - 1);
    bool is_signed = qd_type_is_signed(ty);
    switch (op) {
    case QD_OP_ATOMIC_MIN:
        return LLVMConstInt(t, is_signed ? sign - 1 : ones, 0);
    case QD_OP_ATOMIC_MAX:
        return LLVMConstInt(t, is_signed ? sign : 0, 0);
    case QD_OP_ATOMIC_AND:
        return LLVMConstInt(t, ones, 0);
    default: /* add, or, xor */
        return LLVMConstInt(t, 0, 0);
    }
}

int
qd_llvm_emit_partial(Emitter *e, const QdInst *inst)
{
    const QdType *ty = inst->type->elem;
    LLVMValueRef slot = LLVMBuildAlloca(e->hoist, qd_llvm_mem_type(e, ty), "partial");
    qd_llvm_store(e, ty, slot, identity(e, qd_op_partial_atomic(inst->op), ty));
    e->values[inst->result] = slot;
    if (qd_vec_push(e->scratch, &e->partials, inst) < 0) {
        return qd_error(e->ctx, qd_llvm_loc(inst), QD_ERR_NOMEM, "out of memory");
    }
    return 0;
}

/* NVPTX: the accumulators' values vals[0..n) combined over the warp when it is full (one
 * activemask test for all of them, so that no shuffle follows a divergent branch); returns the
 * predicate of the lane that issues the atomics (lane 0 of a full warp, every lane of a partial
 * one). */
static LLVMValueRef
combine_warp(Emitter *e, LLVMValueRef *vals)
{
    uint32_t n = e->partials.len;
    LLVMValueRef mask = qd_llvm_active_mask(e);
    LLVMValueRef full = LLVMBuildICmp(e->b, LLVMIntEQ, mask, LLVMConstAllOnes(e->t_i32), "full");
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(e->b);
    LLVMBasicBlockRef warp = qd_llvm_new_block(e, "partial.warp");
    LLVMBasicBlockRef join = qd_llvm_new_block(e, "partial.join");
    LLVMBuildCondBr(e->b, full, warp, join);

    LLVMPositionBuilderAtEnd(e->b, warp);
    LLVMValueRef *combined = QD_NEW_ARRAY(e->scratch, LLVMValueRef, n);
    for (uint32_t i = 0; i < n && combined != NULL; i++) {
        const QdInst *inst = e->partials.data[i];
        const QdType *ty = inst->type->elem;
        QdOp plain = qd_op_atomic_plain(qd_op_partial_atomic(inst->op));
        LLVMValueRef x = vals[i];
        for (unsigned step = WARP_SIZE / 2; step > 0; step /= 2) {
            x = qd_llvm_binary(e, plain, ty, x, qd_llvm_shuffle_xor(e, ty, x, mask, step));
        }
        combined[i] = x;
    }
    LLVMValueRef lane = qd_llvm_sreg(e, e->b, "laneid");
    LLVMValueRef first = LLVMBuildICmp(e->b, LLVMIntEQ, lane, LLVMConstInt(e->t_i32, 0, 0), "");
    LLVMBasicBlockRef warp_end = LLVMGetInsertBlock(e->b);
    LLVMBuildBr(e->b, join);

    LLVMPositionBuilderAtEnd(e->b, join);
    LLVMBasicBlockRef from[2] = {pre, warp_end};
    for (uint32_t i = 0; i < n && combined != NULL; i++) {
        LLVMValueRef phi = LLVMBuildPhi(e->b, LLVMTypeOf(vals[i]), "");
        LLVMValueRef incoming[2] = {vals[i], combined[i]};
        LLVMAddIncoming(phi, incoming, from, 2);
        vals[i] = phi;
    }
    /* out of scratch memory: no lane combined anything, every lane issues its own atomics */
    LLVMValueRef yes = LLVMConstInt(e->t_i1, 1, 0);
    LLVMValueRef leader = LLVMBuildPhi(e->b, e->t_i1, "");
    LLVMValueRef leads[2] = {yes, combined != NULL ? first : yes};
    LLVMAddIncoming(leader, leads, from, 2);
    return leader;
}

/* The atomic of each accumulator with its value vals[i]. */
static void
issue_atomics(Emitter *e, const LLVMValueRef *vals)
{
    for (uint32_t i = 0; i < e->partials.len; i++) {
        const QdInst *inst = e->partials.data[i];
        qd_llvm_atomic_rmw(e, qd_op_partial_atomic(inst->op), inst->type->elem,
                           qd_llvm_value(e, inst->args[0]), vals[i]);
    }
}

void
qd_llvm_flush_partials(Emitter *e)
{
    uint32_t n = e->partials.len;
    LLVMValueRef *vals = n ? QD_NEW_ARRAY(e->scratch, LLVMValueRef, n) : NULL;
    if (vals == NULL) {
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        const QdInst *inst = e->partials.data[i];
        vals[i] = qd_llvm_load(e, inst->type->elem, e->values[inst->result]);
    }
    if (!qd_llvm_is_gpu(e)) {
        issue_atomics(e, vals);
    } else {
        LLVMValueRef leader = combine_warp(e, vals);
        LLVMBasicBlockRef issue = qd_llvm_new_block(e, "partial.atomics");
        LLVMBasicBlockRef done = qd_llvm_new_block(e, "partial.done");
        LLVMBuildCondBr(e->b, leader, issue, done);
        LLVMPositionBuilderAtEnd(e->b, issue);
        issue_atomics(e, vals);
        LLVMBuildBr(e->b, done);
        LLVMPositionBuilderAtEnd(e->b, done);
    }
    e->partials.len = 0;
}
