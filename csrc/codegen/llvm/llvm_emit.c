/* codegen/llvm/llvm_emit.c -- a QIR kernel as LLVM functions: tasks, regions, control flow.
 *
 * Input: a concrete kernel (no calls, templates or unroll). Output, in the emitter's module:
 * for task i, `K.t<i>` and, for a range_for task, `K.t<i>.bounds` (codegen.h, KERNEL ABI).
 *
 * Shape of every emitted function:
 *     entry:   loads of ctx->args / ctx->results / ctx->tmps, then hoisted code (allocas,
 *              parameter loads, tmp slot addresses) inserted by e->hoist before ...
 *              br body
 *     body:    the task's instructions, in program order
 * Structured regions map one to one onto blocks: `if` to then / else / merge, `for` to a
 * header with an induction phi, a body and a latch (continue target), `loop` to a header that
 * is also its continue target; `break` branches to the exit. A region that ended with a
 * terminator leaves its block closed, and nothing is added after it. QIR values become LLVM
 * SSA values directly (e->values), with parameters and tmp slots created on first use in the
 * entry block so that loops see loop-invariant values and mem2reg / LICM have nothing to undo.
 *
 * The range_for prologue is emitted twice: once into the bounds function (which stores the
 * bounds) and once into the task function (whose parallel loop runs [lo, hi) given by the
 * runtime). That is only sound when the prologue writes no memory; check_prologue enforces it.
 */
#include "llvm_internal.h"

#include <llvm-c/DebugInfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Work, in QIR instructions, that a thread should get before another thread is worth waking:
 * the runtime's grain is this divided by the estimated cost of one iteration. */
#define GRAIN_WORK 16384
/* Assumed trip count of a serial loop inside a parallel loop body, for the cost estimate. */
#define INNER_TRIPS 16

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
static bool
block_is_open(Emitter *e)
{
    return LLVMGetBasicBlockTerminator(LLVMGetInsertBlock(e->b)) == NULL;
}

static LLVMBasicBlockRef
new_block(Emitter *e, const char *name)
{
    return LLVMAppendBasicBlockInContext(e->llctx, e->fn, name);
}

/***** regions and control flow *****/

static int emit_region(Emitter *e, const QdRegion *r, const LoopTargets *loop);

/* if / else / merge; an empty else region branches straight to the merge block. A branch
 * that ends in break or continue leaves the merge block with fewer predecessors (possibly
 * none: the code after the `if` is then dead and LLVM drops it). */
static int
emit_if(Emitter *e, const QdInst *inst, const LoopTargets *loop)
{
    LLVMValueRef cond = qd_llvm_truth(e, qd_llvm_value(e, inst->args[0]));
    bool has_else = !qd_region_is_empty(inst->regions[1]);
    LLVMBasicBlockRef then_bb = new_block(e, "then");
    LLVMBasicBlockRef else_bb = has_else ? new_block(e, "else") : NULL;
    LLVMBasicBlockRef merge = new_block(e, "endif");

    LLVMBuildCondBr(e->b, cond, then_bb, has_else ? else_bb : merge);
    LLVMPositionBuilderAtEnd(e->b, then_bb);
    RETURN_IF_ERROR(emit_region(e, inst->regions[0], loop));
    if (block_is_open(e)) {
        LLVMBuildBr(e->b, merge);
    }
    if (has_else) {
        LLVMPositionBuilderAtEnd(e->b, else_bb);
        RETURN_IF_ERROR(emit_region(e, inst->regions[1], loop));
        if (block_is_open(e)) {
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
static void
mark_loop(Emitter *e, LLVMValueRef latch_br)
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

/* `for` and the parallel loop of a task: iv runs over [lo, hi) of the bound type. The step
 * never overflows (iv < hi), so the increment carries nsw / nuw, which lets SCEV see the
 * sign-extended index of an i32 loop as affine and the vectorizer work on it. */
static int
emit_counted_loop(Emitter *e, const QdInst *inst, LLVMValueRef lo, LLVMValueRef hi)
{
    const QdType *ty = qd_value_type(e->kernel, inst->result);
    bool is_signed = qd_type_is_signed(ty);
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(e->b);
    LLVMBasicBlockRef header = new_block(e, "for");
    LLVMBasicBlockRef body = new_block(e, "for.body");
    LLVMBasicBlockRef latch = new_block(e, "for.next");
    LLVMBasicBlockRef exit = new_block(e, "for.end");
    LoopTargets targets = {latch, exit};

    LLVMBuildBr(e->b, header);
    LLVMPositionBuilderAtEnd(e->b, header);
    LLVMValueRef iv = LLVMBuildPhi(e->b, LLVMTypeOf(lo), "i");
    LLVMValueRef more = LLVMBuildICmp(e->b, is_signed ? LLVMIntSLT : LLVMIntULT, iv, hi, "");
    LLVMBuildCondBr(e->b, more, body, exit);

    LLVMPositionBuilderAtEnd(e->b, body);
    e->values[inst->result] = iv;
    RETURN_IF_ERROR(emit_region(e, inst->regions[0], &targets));
    if (block_is_open(e)) {
        LLVMBuildBr(e->b, latch);
    }

    LLVMPositionBuilderAtEnd(e->b, latch);
    LLVMValueRef one = LLVMConstInt(LLVMTypeOf(lo), 1, 0);
    LLVMValueRef next =
        is_signed ? LLVMBuildNSWAdd(e->b, iv, one, "") : LLVMBuildNUWAdd(e->b, iv, one, "");
    mark_loop(e, LLVMBuildBr(e->b, header));
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
    LLVMBasicBlockRef header = new_block(e, "loop");
    LLVMBasicBlockRef exit = new_block(e, "loop.end");
    LoopTargets targets = {header, exit};

    LLVMBuildBr(e->b, header);
    LLVMPositionBuilderAtEnd(e->b, header);
    RETURN_IF_ERROR(emit_region(e, inst->regions[0], &targets));
    if (block_is_open(e)) {
        mark_loop(e, LLVMBuildBr(e->b, header));
    }
    LLVMPositionBuilderAtEnd(e->b, exit);
    return 0;
}

/* One instruction of a task body (never `task`, `tmp_alloc` or `parallel_for`, which the task
 * emitters handle). */
static int
emit_inst(Emitter *e, const QdInst *inst, const LoopTargets *loop)
{
    QdOp op = inst->op;

    if (qd_op_has(op, QD_SIMT)) {
        return qd_error(e->ctx, qd_llvm_loc(inst), QD_ERR_SYNTAX,
                        "%s is not supported on the CPU backend", qd_op_info[op].text);
    }
    switch (op) {
    case QD_OP_IF:
        return emit_if(e, inst, loop);
    case QD_OP_FOR:
        return emit_counted_loop(e, inst, qd_llvm_value(e, inst->args[0]),
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
    case QD_OP_RET:
    case QD_OP_UNROLL:
    case QD_OP_TASK:
    case QD_OP_PARALLEL_FOR:
    case QD_OP_TMP_ALLOC:
        return qd_error(e->ctx, qd_llvm_loc(inst), QD_ERR_COMPILATION,
                        "`%s` cannot be compiled here (run the passes "
                        "instantiate,inline,constfold,dce before code generation)",
                        qd_op_info[op].text);
    case QD_OP_ALLOCA:
    case QD_OP_FIELD_PTR:
    case QD_OP_ELEM_PTR:
    case QD_OP_ARRAY_PTR:
    case QD_OP_SHAPE:
    case QD_OP_LOAD:
    case QD_OP_STORE:
    case QD_OP_KERNEL_RET:
        return qd_llvm_emit_mem(e, inst);
    default: {
        QdSig sig = qd_op_info[op].sig;
        if (sig == SIG_ATOMIC || sig == SIG_ATOMIC_INT || sig == SIG_CAS) {
            return qd_llvm_emit_mem(e, inst);
        }
        return qd_llvm_emit_op(e, inst);
    }
    }
}

/* The instructions of a region in order; `loop` is the innermost serial loop (NULL outside
 * of one). The verifier guarantees a terminator only ever ends a region. */
static int
emit_region(Emitter *e, const QdRegion *r, const LoopTargets *loop)
{
    for (const QdInst *inst = r->first; inst != NULL; inst = inst->next) {
        RETURN_IF_ERROR(emit_inst(e, inst, loop));
    }
    return 0;
}

/***** functions *****/

/* Loads the pointer at byte `offset` of the launch context (in the entry block). */
static LLVMValueRef
load_ctx_ptr(Emitter *e, unsigned offset, const char *name)
{
    LLVMValueRef at = LLVMConstInt(e->t_i64, offset, 0);
    LLVMValueRef field = LLVMBuildInBoundsGEP2(e->b, e->t_i8, e->ctx_arg, &at, 1, "");
    LLVMValueRef v = LLVMBuildLoad2(e->b, e->t_ptr, field, name);
    LLVMSetAlignment(v, 8);
    return v;
}

/* Starts function `name`: void (ptr ctx, i64 lo, i64 hi) for a task, void (ptr ctx, ptr out)
 * for bounds. Leaves e->b in the body block and e->hoist before the entry block's branch. */
static void
begin_function(Emitter *e, const char *name, bool is_bounds)
{
    LLVMTypeRef task_params[3] = {e->t_ptr, e->t_i64, e->t_i64};
    LLVMTypeRef bounds_params[2] = {e->t_ptr, e->t_ptr};
    LLVMTypeRef fn_type = is_bounds ? LLVMFunctionType(e->t_void, bounds_params, 2, 0)
                                    : LLVMFunctionType(e->t_void, task_params, 3, 0);
    unsigned nounwind = LLVMGetEnumAttributeKindForName("nounwind", 8);

    e->fn = LLVMAddFunction(e->mod, name, fn_type);
    LLVMAddAttributeAtIndex(e->fn, LLVMAttributeFunctionIndex,
                            LLVMCreateEnumAttribute(e->llctx, nounwind, 0));
    e->ctx_arg = LLVMGetParam(e->fn, 0);
    memset(e->values, 0, sizeof(*e->values) * e->kernel->nvalues);
    memset(e->nd_data, 0, sizeof(*e->nd_data) * (e->kernel->nparams + 1));
    memset(e->nd_shape, 0, sizeof(*e->nd_shape) * (e->kernel->nparams + 1));

    LLVMBasicBlockRef entry = new_block(e, "entry");
    LLVMBasicBlockRef body = new_block(e, "body");
    LLVMPositionBuilderAtEnd(e->b, entry);
    e->args_ptr = load_ctx_ptr(e, QD_LAUNCH_CTX_ARGS_OFFSET, "args");
    e->results_ptr = load_ctx_ptr(e, QD_LAUNCH_CTX_RESULTS_OFFSET, "results");
    e->tmps_ptr = load_ctx_ptr(e, QD_LAUNCH_CTX_TMPS_OFFSET, "tmps");
    LLVMValueRef br = LLVMBuildBr(e->b, body);
    LLVMPositionBuilderBefore(e->hoist, br);
    LLVMPositionBuilderAtEnd(e->b, body);
}

/* Returns from the function if the last block is still open. */
static void
end_function(Emitter *e)
{
    if (block_is_open(e)) {
        LLVMBuildRetVoid(e->b);
    }
}

/* Rejects prologue instructions with effects the second evaluation would repeat. */
static int
check_prologue(Emitter *e, const QdRegion *r, const QdInst *stop)
{
    for (const QdInst *inst = r->first; inst != NULL && inst != stop; inst = inst->next) {
        QdOp op = inst->op;
        QdSig sig = qd_op_info[op].sig;
        bool writes = op == QD_OP_PRINT || op == QD_OP_ASSERT || op == QD_OP_KERNEL_RET ||
                      sig == SIG_ATOMIC || sig == SIG_ATOMIC_INT || sig == SIG_CAS;
        if (op == QD_OP_STORE) {
            writes = qd_value_type(e->kernel, inst->args[0])->space != QD_SPACE_LOCAL;
        }
        if (writes) {
            return qd_error(e->ctx, qd_llvm_loc(inst), QD_ERR_COMPILATION,
                            "`%s` in the prologue of a range_for task (before its parallel_for): "
                            "the prologue must not write memory",
                            qd_op_info[op].text);
        }
        for (int k = 0; k < qd_op_info[op].nregions; k++) {
            RETURN_IF_ERROR(check_prologue(e, inst->regions[k], NULL));
        }
    }
    return 0;
}

/* Cost of one run of region r in QIR instructions, counting serial loop bodies INNER_TRIPS
 * times. Saturates instead of overflowing. */
static uint64_t
region_cost(const QdRegion *r)
{
    uint64_t cost = 0;
    for (const QdInst *inst = r->first; inst != NULL && cost < GRAIN_WORK; inst = inst->next) {
        uint64_t inner = 0;
        for (int k = 0; k < qd_op_info[inst->op].nregions; k++) {
            inner += region_cost(inst->regions[k]);
        }
        inner = inner > GRAIN_WORK ? GRAIN_WORK : inner;
        cost += 1 + (qd_op_has(inst->op, QD_LOOP) ? inner * INNER_TRIPS : inner);
    }
    return cost;
}

/* A serial task: its body once; grain 0 tells the launcher there is no bounds function. */
static int
emit_serial_task(Emitter *e, const QdInst *task, const char *name, QdCompiledTask *out)
{
    begin_function(e, name, false);
    RETURN_IF_ERROR(emit_region(e, task->regions[0], NULL));
    end_function(e);
    out->grain = 0;
    return 0;
}

/* A range_for task: the bounds function and the task function (see the file comment), plus
 * the grain estimate the runtime uses to decide how many threads the range is worth. */
static int
emit_range_task(Emitter *e, const QdInst *task, const char *name, QdCompiledTask *out)
{
    const QdRegion *body = task->regions[0];
    const QdInst *pfor = body->last;
    const QdType *ty = qd_value_type(e->kernel, pfor->result);
    char bounds_name[160];

    RETURN_IF_ERROR(check_prologue(e, body, pfor));
    uint64_t cost = region_cost(pfor->regions[0]);
    out->grain = (int64_t)(GRAIN_WORK / (cost ? cost : 1));
    out->grain = out->grain < 1 ? 1 : out->grain;

    /* bounds(ctx, out): the prologue, then out[0..1] = begin, end as i64 */
    snprintf(bounds_name, sizeof(bounds_name), "%s.bounds", name);
    begin_function(e, bounds_name, true);
    for (const QdInst *inst = body->first; inst != pfor; inst = inst->next) {
        RETURN_IF_ERROR(emit_inst(e, inst, NULL));
    }
    LLVMValueRef dest = LLVMGetParam(e->fn, 1);
    for (unsigned k = 0; k < 2; k++) {
        LLVMValueRef v = qd_llvm_int_resize(e, ty, qd_llvm_value(e, pfor->args[k]), e->t_i64);
        LLVMValueRef idx = LLVMConstInt(e->t_i64, k, 0);
        LLVMValueRef slot = LLVMBuildInBoundsGEP2(e->b, e->t_i64, dest, &idx, 1, "");
        LLVMSetAlignment(LLVMBuildStore(e->b, v, slot), 8);
    }
    end_function(e);

    /* task(ctx, lo, hi): the prologue again, then the loop over [lo, hi) */
    begin_function(e, name, false);
    for (const QdInst *inst = body->first; inst != pfor; inst = inst->next) {
        RETURN_IF_ERROR(emit_inst(e, inst, NULL));
    }
    /* [lo, hi) lies inside [begin, end), so narrowing to the bound type is exact (the builder
     * returns an i64 as it is). */
    LLVMTypeRef t = qd_llvm_reg_type(e, ty);
    LLVMValueRef lo = LLVMBuildTrunc(e->b, LLVMGetParam(e->fn, 1), t, "lo");
    LLVMValueRef hi = LLVMBuildTrunc(e->b, LLVMGetParam(e->fn, 2), t, "hi");
    RETURN_IF_ERROR(emit_counted_loop(e, pfor, lo, hi));
    end_function(e);
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
    if (!e->values || !e->tmp_offsets || !e->nd_data || !e->nd_shape || !e->field_globals) {
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
    e->b = LLVMCreateBuilderInContext(e->llctx);
    e->hoist = LLVMCreateBuilderInContext(e->llctx);
    if (alloc_tables(e) < 0 || collect_results(e, out) < 0) {
        goto done;
    }
    layout_tmps(e, out);
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
        char name[150];
        QdCompiledTask *task = &out->tasks[index];
        snprintf(name, sizeof(name), "%s.t%u", symbol, index);
        task->block_dim = inst->imm.task.block_dim;
        int status = inst->imm.task.kind == QD_TASK_SERIAL ? emit_serial_task(e, inst, name, task)
                                                           : emit_range_task(e, inst, name, task);
        if (status < 0) {
            goto done;
        }
        index++;
    }
    rc = 0;
done:
    LLVMDisposeBuilder(e->hoist);
    LLVMDisposeBuilder(e->b);
    return rc;
}
