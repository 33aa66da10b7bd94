/* codegen/llvm/llvm_emit.c -- a QIR kernel as LLVM functions: regions, control flow, kernel.
 *
 * Input: a concrete kernel (no templates or unroll; calls only of recursive funcs, which
 * llvm_emit_call.c compiles as functions). Output, in the emitter's module:
 * the functions of every task (llvm_emit_task.c says which, per target; codegen.h has the
 * ABIs), and in QdCompiledKernel the layout of tmps and results.
 *
 * Shape of every emitted function:
 *     entry:   loads of the launch context (CPU) or of the parameter buffer's tail (NVPTX),
 *              then hoisted code (allocas, parameter loads, tmp slot addresses) inserted by
 *              e->hoist before ...
 *              br body
 *     body:    the task's instructions, in program order
 * Structured regions map one to one onto blocks: `if` to then / else / merge, `for` to a
 * header with an induction phi, a body and a latch (continue target), `loop` to a header that
 * is also its continue target; `break` branches to the exit. A region that ended with a
 * terminator leaves its block closed, and nothing is added after it. QIR values become LLVM
 * SSA values directly (e->values), with parameters and tmp slots created on first use in the
 * entry block so that loops see loop-invariant values and mem2reg / LICM have nothing to undo.
 * SIMT instructions go to llvm_emit_simt.c on NVPTX and are an error on the CPU.
 */
#include "llvm_internal.h"

#include <llvm-c/DebugInfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

QdLoc
qd_llvm_loc(const QdInst *inst)
{
    if (inst->text_line != 0) {
        QdLoc at = {NULL, inst->text_line, 0};
        return at;
    }
    return inst->loc;
}

/* Whether the block being filled still lacks its terminator (a region that ended in break,
 * continue or a returning branch leaves it closed). */
bool
qd_llvm_block_is_open(Emitter *e)
{
    return LLVMGetBasicBlockTerminator(LLVMGetInsertBlock(e->b)) == NULL;
}

LLVMBasicBlockRef
qd_llvm_new_block(Emitter *e, const char *name)
{
    return LLVMAppendBasicBlockInContext(e->llctx, e->fn, name);
}

/***** regions and control flow *****/


/* if / else / merge; an empty else region branches straight to the merge block. A branch
 * that ends in break or continue leaves the merge block with fewer predecessors (possibly
 * none: the code after the `if` is then dead and LLVM drops it). */
static int
emit_if(Emitter *e, const QdInst *inst, const LoopTargets *loop)
{
    LLVMValueRef cond = qd_llvm_truth(e, qd_llvm_value(e, inst->args[0]));
    bool has_else = !qd_region_is_empty(inst->regions[1]);
    LLVMBasicBlockRef then_bb = qd_llvm_new_block(e, "then");
    LLVMBasicBlockRef else_bb = has_else ? qd_llvm_new_block(e, "else") : NULL;
    LLVMBasicBlockRef merge = qd_llvm_new_block(e, "endif");

    LLVMBuildCondBr(e->b, cond, then_bb, has_else ? else_bb : merge);
    LLVMPositionBuilderAtEnd(e->b, then_bb);
    RETURN_IF_ERROR(qd_llvm_emit_region(e, inst->regions[0], loop));
    if (qd_llvm_block_is_open(e)) {
        LLVMBuildBr(e->b, merge);
    }
    if (has_else) {
        LLVMPositionBuilderAtEnd(e->b, else_bb);
        RETURN_IF_ERROR(qd_llvm_emit_region(e, inst->regions[1], loop));
        if (qd_llvm_block_is_open(e)) {
            LLVMBuildBr(e->b, merge);
        }
    }
    LLVMPositionBuilderAtEnd(e->b, merge);
    return 0;
}

/* Marks the loop whose latch ends with `latch_br` as not worth runtime unrolling. Runtime
 * unrolling of loops with unknown trip counts (mostly the scalar remainders of vectorized
 * loops) doubles the machine code and the time of loop strength reduction, for little gain;
 * full unrolling of constant-trip loops and vectorization are unaffected. The loop ID must be
 * a node whose first operand is itself: a temporary placeholder is replaced by the node. */
void
qd_llvm_mark_loop(Emitter *e, LLVMValueRef latch_br)
{
    static const char property[] = "llvm.loop.unroll.runtime.disable";
    LLVMMetadataRef name = LLVMMDStringInContext2(e->llctx, property, sizeof(property) - 1);
    LLVMMetadataRef prop = LLVMMDNodeInContext2(e->llctx, &name, 1);
    LLVMMetadataRef self = LLVMTemporaryMDNode(e->llctx, NULL, 0);
    LLVMMetadataRef ops[2] = {self, prop};
    LLVMMetadataRef id = LLVMMDNodeInContext2(e->llctx, ops, 2);
    LLVMMetadataReplaceAllUsesWith(self, id);
    LLVMSetMetadata(latch_br, LLVMGetMDKindIDInContext(e->llctx, "llvm.loop", 9),
                    LLVMMetadataAsValue(e->llctx, id));
}

/* The back edge of a loop whose body is `body`: marked against runtime unrolling
 * (qd_llvm_mark_loop), except an innermost loop on the GPU, where LLVM's runtime unrolling by
 * 4 lets ptxas issue the loads of several iterations together (the dot products of a
 * shared-memory factorization run 1.5x faster so, like nvcc's code). */
static void
emit_back_edge(Emitter *e, const QdRegion *body, LLVMBasicBlockRef header)
{
    LLVMValueRef br = LLVMBuildBr(e->b, header);
    if (!qd_llvm_is_gpu(e) || qd_region_has_op(body, QD_LOOP)) {
        qd_llvm_mark_loop(e, br);
    }
}

/* `for` and the parallel loop of a task: iv runs over [lo, hi) of the bound type. The step
 * never overflows (iv < hi), so the increment carries nsw / nuw, which lets SCEV see the
 * sign-extended index of an i32 loop as affine and the vectorizer work on it. */
int
qd_llvm_emit_counted_loop(Emitter *e, const QdInst *inst, LLVMValueRef lo, LLVMValueRef hi)
{
    const QdType *ty = qd_value_type(e->kernel, inst->result);
    bool is_signed = qd_type_is_signed(ty);
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(e->b);
    LLVMBasicBlockRef header = qd_llvm_new_block(e, "for");
    LLVMBasicBlockRef body = qd_llvm_new_block(e, "for.body");
    LLVMBasicBlockRef latch = qd_llvm_new_block(e, "for.next");
    LLVMBasicBlockRef exit = qd_llvm_new_block(e, "for.end");
    LoopTargets targets = {latch, exit};

    LLVMBuildBr(e->b, header);
    LLVMPositionBuilderAtEnd(e->b, header);
    LLVMValueRef iv = LLVMBuildPhi(e->b, LLVMTypeOf(lo), "i");
    LLVMValueRef more = LLVMBuildICmp(e->b, is_signed ? LLVMIntSLT : LLVMIntULT, iv, hi, "");
    LLVMBuildCondBr(e->b, more, body, exit);

    LLVMPositionBuilderAtEnd(e->b, body);
    e->values[inst->result] = iv;
    RETURN_IF_ERROR(qd_llvm_emit_region(e, inst->regions[0], &targets));
    if (qd_llvm_block_is_open(e)) {
        LLVMBuildBr(e->b, latch);
    }

    LLVMPositionBuilderAtEnd(e->b, latch);
    LLVMValueRef one = LLVMConstInt(LLVMTypeOf(lo), 1, 0);
    LLVMValueRef next =
        is_signed ? LLVMBuildNSWAdd(e->b, iv, one, "") : LLVMBuildNUWAdd(e->b, iv, one, "");
    emit_back_edge(e, inst->regions[0], header);
    LLVMValueRef incoming[2] = {lo, next};
    LLVMBasicBlockRef from[2] = {pre, latch};
    LLVMAddIncoming(iv, incoming, from, 2);

    LLVMPositionBuilderAtEnd(e->b, exit);
    return 0;
}

/* `loop { }`: the header is both the body's start and the continue target; only `break`
 * leaves it. */
static int
emit_loop(Emitter *e, const QdInst *inst)
{
    LLVMBasicBlockRef header = qd_llvm_new_block(e, "loop");
    LLVMBasicBlockRef exit = qd_llvm_new_block(e, "loop.end");
    LoopTargets targets = {header, exit};

    LLVMBuildBr(e->b, header);
    LLVMPositionBuilderAtEnd(e->b, header);
    RETURN_IF_ERROR(qd_llvm_emit_region(e, inst->regions[0], &targets));
    if (qd_llvm_block_is_open(e)) {
        emit_back_edge(e, inst->regions[0], header);
    }
    LLVMPositionBuilderAtEnd(e->b, exit);
    return 0;
}

/* One instruction of a task body (never `task`, `tmp_alloc` or `parallel_for`, which the task
 * emitters handle). */
int
qd_llvm_emit_inst(Emitter *e, const QdInst *inst, const LoopTargets *loop)
{
    QdOp op = inst->op;

    if (qd_op_has(op, QD_SIMT)) {
        if (!qd_llvm_is_gpu(e) && e->opts != NULL && e->opts->cpu_simt) {
            return qd_llvm_emit_simt_cpu(e, inst);
        }
        if (!qd_llvm_is_gpu(e)) {
            return qd_error(e->ctx, qd_llvm_loc(inst), QD_ERR_SYNTAX,
                            "`%s` (qd.simt) is not supported for arch cpu; use a GPU arch, or "
                            "qd.init(arch=qd.cpu, cpu_simt=True) to emulate it",
                            qd_op_info[op].text);
        }
        return qd_llvm_emit_simt(e, inst);
    }
    switch (op) {
    case QD_OP_IF:
        return emit_if(e, inst, loop);
    case QD_OP_FOR:
        return qd_llvm_emit_counted_loop(e, inst, qd_llvm_value(e, inst->args[0]),
                                 qd_llvm_value(e, inst->args[1]));
    case QD_OP_LOOP:
        return emit_loop(e, inst);
    case QD_OP_BREAK:
    case QD_OP_CONTINUE:
        if (loop == NULL) {
            return qd_error(e->ctx, qd_llvm_loc(inst), QD_ERR_COMPILATION, "%s outside of a loop",
                            qd_op_info[op].text);
        }
        LLVMBuildBr(e->b, op == QD_OP_BREAK ? loop->exit : loop->cont);
        return 0;
    case QD_OP_CALL:
        return qd_llvm_emit_call(e, inst);
    case QD_OP_RET:
        return qd_llvm_emit_ret(e, inst);
    case QD_OP_UNROLL:
    case QD_OP_TASK:
    case QD_OP_PARALLEL_FOR:
    case QD_OP_TMP_ALLOC:
    case QD_OP_NN_MATVEC:
        return qd_error(e->ctx, qd_llvm_loc(inst), QD_ERR_COMPILATION,
                        "`%s` cannot be compiled here (run the passes "
                        "instantiate,inline,nn_lower,constfold,dce before code generation)",
                        qd_op_info[op].text);
    case QD_OP_ALLOCA:
    case QD_OP_FIELD_PTR:
    case QD_OP_ELEM_PTR:
    case QD_OP_ARRAY_PTR:
    case QD_OP_SHAPE:
    case QD_OP_LOAD:
    case QD_OP_LOAD_VOLATILE:
    case QD_OP_STORE:
    case QD_OP_KERNEL_RET:
        return qd_llvm_emit_mem(e, inst);
    case QD_OP_PTR_TO_INT:
        e->values[inst->result] =
            LLVMBuildPtrToInt(e->b, qd_llvm_value(e, inst->args[0]), e->t_i64, "");
        return 0;
    case QD_OP_CLOCK:
        /* the CPU's time-stamp counter; %clock64 on NVPTX */
        e->values[inst->result] = qd_llvm_intrinsic(
            e, qd_llvm_is_gpu(e) ? "llvm.nvvm.read.ptx.sreg.clock64" : "llvm.readcyclecounter",
            NULL, 0, NULL, 0);
        return e->values[inst->result] ? 0 : -1;
    default: {
        QdSig sig = qd_op_info[op].sig;
        if (sig == SIG_ATOMIC || sig == SIG_ATOMIC_INT || sig == SIG_CAS) {
            return qd_llvm_emit_mem(e, inst);
        }
        if (sig == SIG_PARTIAL || sig == SIG_PARTIAL_INT) {
            return qd_llvm_emit_partial(e, inst);
        }
        return qd_llvm_emit_op(e, inst);
    }
    }
}

/* The instructions of a region in order; `loop` is the innermost serial loop (NULL outside
 * of one). The verifier guarantees a terminator only ever ends a region. */
int
qd_llvm_emit_region(Emitter *e, const QdRegion *r, const LoopTargets *loop)
{
    for (const QdInst *inst = r->first; inst != NULL; inst = inst->next) {
        RETURN_IF_ERROR(qd_llvm_emit_inst(e, inst, loop));
    }
    return 0;
}

/***** kernel *****/

/* Offsets of the tmp_alloc slots in ctx->tmps, each slot 8-byte aligned. */
static void
layout_tmps(Emitter *e, QdCompiledKernel *out)
{
    uint32_t at = 0;
    for (const QdInst *inst = e->kernel->body->first; inst != NULL; inst = inst->next) {
        if (inst->op == QD_OP_TMP_ALLOC) {
            const QdType *pointee = inst->type->elem;
            uint32_t size = qd_type_is_scalar(pointee) ? qd_llvm_scalar_size(pointee) : 8;
            e->tmp_offsets[inst->result] = at;
            at += (size + 7) & ~7u;
        }
    }
    out->tmps_size = at;
}

/* State of the walk over the kernel's kernel_ret instructions. */
typedef struct ResultWalk {
    uint64_t count;    /* 1 + the highest index seen */
    QdTypeKind *types; /* second walk: the type of each index (count entries) */
} ResultWalk;

static int
note_result(QdInst *inst, void *data)
{
    ResultWalk *walk = data;
    if (inst->op != QD_OP_KERNEL_RET) {
        return 0;
    }
    uint64_t index = (uint64_t)inst->imm.i;
    if (walk->types == NULL) {
        walk->count = index + 1 > walk->count ? index + 1 : walk->count;
    } else if (index < walk->count) {
        const QdType *ty = qd_value_type(inst->parent->func, inst->args[0]);
        walk->types[index] = qd_type_is_scalar(ty) ? ty->kind : QD_TY_VOID;
    }
    return 0;
}

/* Walk callback that stops the walk (returns -1) at the first assert. */
static int
find_assert(QdInst *inst, void *data)
{
    (void)data;
    return inst->op == QD_OP_ASSERT ? -1 : 0;
}

/* Fills nresults and result_types (malloc'd; VOID for an index no kernel_ret sets). */
static int
collect_results(Emitter *e, QdCompiledKernel *out)
{
    ResultWalk walk = {0, NULL};

    qd_region_walk(e->kernel->body, note_result, &walk);
    if (walk.count > (1u << 16)) {
        return qd_error(e->ctx, e->kernel->loc, QD_ERR_COMPILATION,
                        "kernel_ret index %llu is too large", (unsigned long long)walk.count - 1);
    }
    walk.types = calloc(walk.count ? walk.count : 1, sizeof(QdTypeKind));
    if (walk.types == NULL) {
        return qd_error(e->ctx, e->kernel->loc, QD_ERR_NOMEM, "out of memory");
    }
    for (uint64_t i = 0; i < walk.count; i++) {
        walk.types[i] = QD_TY_VOID;
    }
    qd_region_walk(e->kernel->body, note_result, &walk);
    out->nresults = (uint32_t)walk.count;
    out->result_types = walk.types;
    return 0;
}

/* The LLVM types every emitter function uses, created once per module. */
static void
init_types(Emitter *e)
{
    e->t_void = LLVMVoidTypeInContext(e->llctx);
    e->t_i1 = LLVMInt1TypeInContext(e->llctx);
    e->t_i8 = LLVMInt8TypeInContext(e->llctx);
    e->t_i16 = LLVMInt16TypeInContext(e->llctx);
    e->t_i32 = LLVMInt32TypeInContext(e->llctx);
    e->t_i64 = LLVMInt64TypeInContext(e->llctx);
    e->t_f32 = LLVMFloatTypeInContext(e->llctx);
    e->t_f64 = LLVMDoubleTypeInContext(e->llctx);
    e->t_ptr = LLVMPointerTypeInContext(e->llctx, 0);
}

/* Scratch tables sized by the kernel. */
static int
alloc_tables(Emitter *e)
{
    QdFunc *k = e->kernel;
    uint32_t nvalues = k->nvalues ? k->nvalues : 1;
    uint32_t nfields = e->m->fields.len ? e->m->fields.len : 1;

    e->values = QD_NEW_ARRAY(e->scratch, LLVMValueRef, nvalues);
    e->tmp_offsets = QD_NEW_ARRAY(e->scratch, uint32_t, nvalues);
    e->nd_data = QD_NEW_ARRAY(e->scratch, LLVMValueRef, k->nparams + 1);
    e->nd_shape = QD_NEW_ARRAY(e->scratch, LLVMValueRef *, k->nparams + 1);
    e->field_globals = QD_NEW_ARRAY(e->scratch, LLVMValueRef, nfields);
    e->field_bases = QD_NEW_ARRAY(e->scratch, LLVMValueRef, nfields + 1);
    if (!e->values || !e->tmp_offsets || !e->nd_data || !e->nd_shape || !e->field_globals ||
        !e->field_bases) {
        return qd_error(e->ctx, k->loc, QD_ERR_NOMEM, "out of memory");
    }
    return 0;
}

int
qd_llvm_emit_kernel(Emitter *e, const char *symbol, QdCompiledKernel *out)
{
    QdFunc *k = e->kernel;
    uint32_t ntasks = 0;
    int rc = -1;

    init_types(e);
    e->symbol = symbol;
    e->b = LLVMCreateBuilderInContext(e->llctx);
    e->hoist = LLVMCreateBuilderInContext(e->llctx);
    if (alloc_tables(e) < 0 || collect_results(e, out) < 0) {
        goto done;
    }
    layout_tmps(e, out);
    e->has_asserts = qd_llvm_is_gpu(e) && qd_region_walk(k->body, find_assert, NULL) != 0;
    for (const QdInst *inst = k->body->first; inst != NULL; inst = inst->next) {
        ntasks += inst->op == QD_OP_TASK;
    }
    out->tasks = calloc(ntasks ? ntasks : 1, sizeof(QdCompiledTask));
    if (out->tasks == NULL) {
        qd_error(e->ctx, k->loc, QD_ERR_NOMEM, "out of memory");
        goto done;
    }
    out->ntasks = ntasks;
    uint32_t index = 0;
    for (const QdInst *inst = k->body->first; inst != NULL; inst = inst->next) {
        if (inst->op != QD_OP_TASK) {
            continue;
        }
        if (qd_llvm_emit_task(e, inst, index, symbol, &out->tasks[index]) < 0) {
            goto done;
        }
        index++;
    }
    if (qd_llvm_emit_funcs(e) < 0) {
        goto done;
    }
    rc = 0;
done:
    LLVMDisposeBuilder(e->hoist);
    LLVMDisposeBuilder(e->b);
    return rc;
}

void
qd_llvm_limit_vectorizers(LLVMModuleRef mod)
{
    unsigned kind = LLVMGetEnumAttributeKindForName("noimplicitfloat", 15);
    for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
        uint32_t n = 0;
        for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb && n <= QD_LLVM_VECTORIZE_MAX_INSTS;
             bb = LLVMGetNextBasicBlock(bb)) {
            for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) {
                n++;
            }
        }
        if (n > QD_LLVM_VECTORIZE_MAX_INSTS) {
            LLVMContextRef llctx = LLVMGetModuleContext(mod);
            LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                                    LLVMCreateEnumAttribute(llctx, kind, 0));
        }
    }
}
