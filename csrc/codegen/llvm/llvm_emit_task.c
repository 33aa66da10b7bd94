/* codegen/llvm/llvm_emit_task.c -- the functions of one offloaded task, per target.
 *
 * What each task becomes (codegen.h, KERNEL ABI and NVPTX KERNEL ABI):
 *   CPU serial      K.t<i>(ctx, lo, hi): the body once
 *   CPU range_for   K.t<i>.bounds(ctx, out) and K.t<i>(ctx, lo, hi): the prologue, then the
 *                   loop over [lo, hi); plus the grain estimate for the runtime
 *   bounds-only     K.t<i>.bounds alone, for range_for tasks whose prologue needs no device
 *                   memory (the CUDA launcher sizes its grids with them)
 *   NVPTX serial    kernel K_t<i>[_name]: the body, on one thread
 *   NVPTX range     kernel K_t<i>[_name]: the prologue, then a grid-stride loop over
 *                   [begin, end), iteration begin + j on global thread j first
 * Every function starts with an entry block that reads the launch context (CPU) or the launch
 * tail of the parameter buffer (NVPTX) and that e->hoist fills with loop-invariant values.
 */
#include "llvm_internal.h"

#include <llvm-c/DebugInfo.h>
#include <llvm-c/IRReader.h>

#include <stdio.h>
#include <string.h>

/* Work, in QIR instructions, that a thread should get before another thread is worth waking:
 * the runtime's grain is this divided by the estimated cost of one iteration. */
#define GRAIN_WORK 16384
/* Threads per block of an emulated SIMT task without a block_dim (the GPU default). */
#define QD_CPU_SIMT_BLOCK_DIM 128
/* Assumed trip count of a serial loop inside a parallel loop body, for the cost estimate. */
#define INNER_TRIPS 16

/***** functions *****/
/* The kinds of functions the emitter makes. */
typedef enum FunctionKind {
    FN_TASK,   /* CPU: void (ptr ctx, i64 lo, i64 hi) */
    FN_BOUNDS, /* CPU: void (ptr ctx, ptr out) */
    FN_KERNEL, /* NVPTX: void (ptr byval([P x i8]) align 8 params) */
} FunctionKind;

/* Loads the pointer at byte `offset` of `base` (in the entry block). */
static LLVMValueRef
load_ptr_at(Emitter *e, LLVMValueRef base, unsigned offset, const char *name)
{
    LLVMValueRef at = LLVMConstInt(e->t_i64, offset, 0);
    LLVMValueRef field = LLVMBuildInBoundsGEP2(e->b, e->t_i8, base, &at, 1, "");
    LLVMValueRef v = LLVMBuildLoad2(e->b, e->t_ptr, field, name);
    LLVMSetAlignment(v, 8);
    return v;
}

/* An NVPTX kernel: the by-value parameter buffer and the `kernel` annotation. */
static LLVMValueRef
add_gpu_kernel(Emitter *e, const char *name)
{
    LLVMTypeRef buffer = LLVMArrayType2(e->t_i8, e->args_size + QD_NVPTX_TAIL_BYTES);
    LLVMTypeRef fn_type = LLVMFunctionType(e->t_void, &e->t_ptr, 1, 0);
    LLVMValueRef fn = LLVMAddFunction(e->mod, name, fn_type);
    unsigned byval = LLVMGetEnumAttributeKindForName("byval", 5);
    unsigned align = LLVMGetEnumAttributeKindForName("align", 5);
    unsigned noalias = LLVMGetEnumAttributeKindForName("noalias", 7);

    LLVMAddAttributeAtIndex(fn, 1, LLVMCreateTypeAttribute(e->llctx, byval, buffer));
    LLVMAddAttributeAtIndex(fn, 1, LLVMCreateEnumAttribute(e->llctx, align, 8));
    LLVMAddAttributeAtIndex(fn, 1, LLVMCreateEnumAttribute(e->llctx, noalias, 0));
    LLVMValueRef ops[3] = {fn, LLVMMDStringInContext(e->llctx, "kernel", 6),
                           LLVMConstInt(e->t_i32, 1, 0)};
    LLVMAddNamedMetadataOperand(e->mod, "nvvm.annotations", LLVMMDNodeInContext(e->llctx, ops, 3));
    return fn;
}

/* An inline PTX instruction without operands at e->b, ordered with every memory access. */
static void
entry_asm(Emitter *e, const char *text)
{
    LLVMTypeRef fnty = LLVMFunctionType(e->t_void, NULL, 0, false);
    LLVMValueRef fn = LLVMGetInlineAsm(fnty, (char *)text, strlen(text), "~{memory}", 9, true,
                                       false, LLVMInlineAsmDialectATT, false);
    LLVMBuildCall2(e->b, fnty, fn, NULL, 0, "");
}

/* Starts function `name` of `kind`. Leaves e->b in the body block and e->hoist before the
 * entry block's branch. */
static void
begin_function(Emitter *e, const char *name, FunctionKind kind)
{
    LLVMTypeRef task_params[3] = {e->t_ptr, e->t_i64, e->t_i64};
    LLVMTypeRef bounds_params[2] = {e->t_ptr, e->t_ptr};
    unsigned nounwind = LLVMGetEnumAttributeKindForName("nounwind", 8);

    if (kind == FN_KERNEL) {
        e->fn = add_gpu_kernel(e, name);
    } else {
        LLVMTypeRef fn_type = kind == FN_BOUNDS ? LLVMFunctionType(e->t_void, bounds_params, 2, 0)
                                                : LLVMFunctionType(e->t_void, task_params, 3, 0);
        e->fn = LLVMAddFunction(e->mod, name, fn_type);
    }
    LLVMAddAttributeAtIndex(e->fn, LLVMAttributeFunctionIndex,
                            LLVMCreateEnumAttribute(e->llctx, nounwind, 0));
    e->ctx_arg = LLVMGetParam(e->fn, 0);
    memset(e->values, 0, sizeof(*e->values) * e->kernel->nvalues);
    e->shared_offset = 0;
    e->partials.len = 0;
    memset(e->nd_data, 0, sizeof(*e->nd_data) * (e->kernel->nparams + 1));
    memset(e->nd_shape, 0, sizeof(*e->nd_shape) * (e->kernel->nparams + 1));
    memset(e->field_bases, 0, sizeof(*e->field_bases) * (e->m->fields.len + 1));

    LLVMBasicBlockRef entry = qd_llvm_new_block(e, "entry");
    LLVMBasicBlockRef body = qd_llvm_new_block(e, "body");
    LLVMPositionBuilderAtEnd(e->b, entry);
    if (kind == FN_KERNEL && e->sm >= QD_NVPTX_DEPENDENT_LAUNCH_SM) {
        /* Programmatic dependent launch (runtime/cuda/cuda_launch.c): the next kernel of the
         * stream may start its blocks once all of this one's have started, and this one waits
         * here, before any memory access, until the kernel before it has finished. Both are
         * no-ops in a kernel launched without the attribute. */
        entry_asm(e, "griddepcontrol.launch_dependents;");
        entry_asm(e, "griddepcontrol.wait;");
    }
    if (kind == FN_KERNEL) {
        /* the packed arguments, then the tail: results, tmps, runtime state */
        e->args_ptr = e->ctx_arg;
        e->results_ptr = qd_llvm_global_ptr(
            e, e->b, load_ptr_at(e, e->ctx_arg, e->args_size + QD_NVPTX_TAIL_RESULTS, "results"));
        e->tmps_ptr = qd_llvm_global_ptr(
            e, e->b, load_ptr_at(e, e->ctx_arg, e->args_size + QD_NVPTX_TAIL_TMPS, "tmps"));
        e->rt_ptr = qd_llvm_global_ptr(
            e, e->b, load_ptr_at(e, e->ctx_arg, e->args_size + QD_NVPTX_TAIL_RUNTIME, "rt"));
    } else {
        e->args_ptr = load_ptr_at(e, e->ctx_arg, QD_LAUNCH_CTX_ARGS_OFFSET, "args");
        e->results_ptr = load_ptr_at(e, e->ctx_arg, QD_LAUNCH_CTX_RESULTS_OFFSET, "results");
        e->tmps_ptr = load_ptr_at(e, e->ctx_arg, QD_LAUNCH_CTX_TMPS_OFFSET, "tmps");
        e->rt_ptr = NULL;
    }
    LLVMValueRef br = LLVMBuildBr(e->b, body);
    LLVMPositionBuilderBefore(e->hoist, br);
    LLVMPositionBuilderAtEnd(e->b, body);
    if (kind == FN_KERNEL && e->has_asserts) {
        /* an earlier task failed an assert: the launch stops (as on the CPU) */
        LLVMValueRef flag = LLVMBuildLoad2(e->b, e->t_i32, e->rt_ptr, "assert_flag");
        LLVMSetAlignment(flag, 4);
        LLVMSetVolatile(flag, 1);
        LLVMBasicBlockRef stop = qd_llvm_new_block(e, "stop");
        LLVMBasicBlockRef go = qd_llvm_new_block(e, "go");
        LLVMValueRef failed = LLVMBuildICmp(e->b, LLVMIntNE, flag, LLVMConstInt(e->t_i32, 0, 0), "");
        LLVMBuildCondBr(e->b, failed, stop, go);
        LLVMPositionBuilderAtEnd(e->b, stop);
        LLVMBuildRetVoid(e->b);
        LLVMPositionBuilderAtEnd(e->b, go);
    }
}

/* Returns from the function if the last block is still open. */
static void
end_function(Emitter *e)
{
    if (qd_llvm_block_is_open(e)) {
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

/* Counts the operands naming each value in r and below it. */
static void
count_uses(const QdRegion *r, uint32_t *uses)
{
    for (const QdInst *inst = r->first; inst != NULL; inst = inst->next) {
        for (uint32_t k = 0; k < inst->nargs; k++) {
            uses[inst->args[k]]++;
        }
        for (int k = 0; k < qd_op_info[inst->op].nregions; k++) {
            count_uses(inst->regions[k], uses);
        }
    }
}

/* Whether every prologue instruction is one a bounds function may leave out when the bounds
 * do not need its result: a pure computation, a load of global memory or a partial_*
 * accumulator (no stores, no local memory, no regions, nothing without a result). */
static bool
is_sliceable(const QdRegion *body, const QdInst *pfor, const QdFunc *f)
{
    for (const QdInst *inst = body->first; inst != pfor; inst = inst->next) {
        QdOp op = inst->op;
        bool global_load =
            op == QD_OP_LOAD && qd_value_type(f, inst->args[0])->space != QD_SPACE_LOCAL;
        if (inst->result == QD_NO_VALUE || qd_op_info[op].nregions > 0 ||
            !(qd_op_has(op, QD_PURE) || global_load || qd_op_partial_atomic(op) != QD_OP_COUNT_)) {
            return false;
        }
    }
    return true;
}

/* The prologue instructions the loop bounds do not need, by result id. The bounds functions
 * leave them out, so that a prologue whose bounds depend only on arguments can run on the host
 * (the launcher then sizes the grid to the trip count) even when the loop body needs values the
 * prologue loads from device memory, and a reduction into a field does not make the prologue
 * read device memory. A straight-line prologue (is_sliceable) keeps only what the bounds are
 * computed from; otherwise only the partial_* accumulators and the pure computations that feed
 * nothing else are left out (NULL when there are none). */
static const bool *
bounds_skip(Emitter *e, const QdRegion *body, const QdInst *pfor)
{
    if (is_sliceable(body, pfor, e->kernel)) {
        uint32_t nv = e->kernel->nvalues;
        bool *needed = QD_NEW_ARRAY(e->scratch, bool, nv);
        bool *cut = QD_NEW_ARRAY(e->scratch, bool, nv);
        if (needed == NULL || cut == NULL) {
            return NULL;
        }
        needed[pfor->args[0]] = needed[pfor->args[1]] = true;
        for (const QdInst *inst = pfor->prev; inst != NULL; inst = inst->prev) {
            if (!needed[inst->result]) {
                cut[inst->result] = true;
                continue;
            }
            for (uint32_t k = 0; k < inst->nargs; k++) {
                needed[inst->args[k]] = true;
            }
        }
        return cut;
    }
    bool any = false;
    for (const QdInst *inst = body->first; inst != pfor; inst = inst->next) {
        any = any || qd_op_partial_atomic(inst->op) != QD_OP_COUNT_;
    }
    uint32_t n = e->kernel->nvalues;
    uint32_t *uses = any ? QD_NEW_ARRAY(e->scratch, uint32_t, n) : NULL;
    uint32_t *dropped = any ? QD_NEW_ARRAY(e->scratch, uint32_t, n) : NULL;
    bool *skip = any ? QD_NEW_ARRAY(e->scratch, bool, n) : NULL;
    if (uses == NULL || dropped == NULL || skip == NULL) {
        return NULL;
    }
    count_uses(body, uses);
    for (const QdInst *inst = pfor->prev; inst != NULL; inst = inst->prev) {
        uint32_t r = inst->result;
        bool drop = r != QD_NO_VALUE &&
                    (qd_op_partial_atomic(inst->op) != QD_OP_COUNT_ ||
                     (qd_op_has(inst->op, QD_PURE) && qd_op_info[inst->op].nregions == 0 &&
                      uses[r] == dropped[r]));
        if (drop) {
            skip[r] = true;
            for (uint32_t k = 0; k < inst->nargs; k++) {
                dropped[inst->args[k]]++;
            }
        }
    }
    return skip;
}

/* Whether a prologue instruction is left out of the bounds functions. */
static bool
skipped(const bool *skip, const QdInst *inst)
{
    return skip != NULL && inst->result != QD_NO_VALUE && skip[inst->result];
}

/* Whether a prologue can run on the host before the launch: it reads only arguments (values,
 * ndarray shapes) and its own locals, never device memory or GPU state. */
static bool
is_host_evaluable(Emitter *e, const QdRegion *r, const QdInst *stop, const bool *skip)
{
    for (const QdInst *inst = r->first; inst != NULL && inst != stop; inst = inst->next) {
        QdOp op = inst->op;
        if (skipped(skip, inst)) {
            continue;
        }
        if (qd_op_has(op, QD_SIMT) || op == QD_OP_FIELD_PTR || op == QD_OP_ELEM_PTR) {
            return false;
        }
        if (op == QD_OP_LOAD &&
            qd_value_type(e->kernel, inst->args[0])->space != QD_SPACE_LOCAL) {
            return false;
        }
        for (int k = 0; k < qd_op_info[op].nregions; k++) {
            if (!is_host_evaluable(e, inst->regions[k], NULL, NULL)) {
                return false;
            }
        }
    }
    return true;
}

/* A serial task: its body once; grain 0 tells the launcher there is no bounds function. On
 * NVPTX a kernel that the launcher runs on one thread. */
static int
emit_serial_task(Emitter *e, const QdInst *task, const char *name, QdCompiledTask *out)
{
    out->grain = 0;
    if (e->bounds_only) {
        return 0;
    }
    begin_function(e, name, qd_llvm_is_gpu(e) ? FN_KERNEL : FN_TASK);
    RETURN_IF_ERROR(qd_llvm_emit_region(e, task->regions[0], NULL));
    end_function(e);
    return 0;
}

/* The bounds function of a range_for task (CPU): the prologue, then out[0..1] = begin, end as
 * i64, an empty range as end = begin (end is at least begin by the bound type's signedness), so
 * that end - begin, in unsigned 64-bit arithmetic, is the exact trip count for u64 bounds too. */
static int
emit_bounds_function(Emitter *e, const QdRegion *body, const QdInst *pfor, const char *name,
                     const bool *skip)
{
    const QdType *ty = qd_value_type(e->kernel, pfor->result);
    char bounds_name[160];

    snprintf(bounds_name, sizeof(bounds_name), "%s.bounds", name);
    begin_function(e, bounds_name, FN_BOUNDS);
    for (const QdInst *inst = body->first; inst != pfor; inst = inst->next) {
        if (!skipped(skip, inst)) {
            RETURN_IF_ERROR(qd_llvm_emit_inst(e, inst, NULL));
        }
    }
    LLVMValueRef dest = LLVMGetParam(e->fn, 1);
    LLVMValueRef bounds[2];
    for (unsigned k = 0; k < 2; k++) {
        bounds[k] = qd_llvm_int_resize(e, ty, qd_llvm_value(e, pfor->args[k]), e->t_i64);
    }
    LLVMIntPredicate lt = qd_type_is_signed(ty) ? LLVMIntSLT : LLVMIntULT;
    bounds[1] = LLVMBuildSelect(e->b, LLVMBuildICmp(e->b, lt, bounds[1], bounds[0], ""), bounds[0],
                                bounds[1], "");
    for (unsigned k = 0; k < 2; k++) {
        LLVMValueRef v = bounds[k];
        LLVMValueRef idx = LLVMConstInt(e->t_i64, k, 0);
        LLVMValueRef slot = LLVMBuildInBoundsGEP2(e->b, e->t_i64, dest, &idx, 1, "");
        LLVMSetAlignment(LLVMBuildStore(e->b, v, slot), 8);
    }
    end_function(e);
    return 0;
}

/* Iterations of one thread's grid-stride loop interleaved by the loop vectorizer: their loads
 * are issued together, which is what keeps enough memory requests in flight per SM for
 * streaming kernels to reach the device's bandwidth. Only for light bodies (region_cost at
 * most GPU_INTERLEAVE_MAX_COST): a heavy body already has many independent loads per
 * iteration, and copies of it multiply the registers it needs until they spill (a body
 * holding two 32-element vectors took all 255 registers and spilled when interleaved). Heavy
 * bodies also get no unrolling, which the NVPTX target would otherwise apply to the loop. */
#define GPU_INTERLEAVE 4
#define GPU_INTERLEAVE_MAX_COST 96

/* A new distinct metadata node without operands: what an access group must be. The LLVM-C API
 * has no call for distinct nodes, so one is parsed from IR text into the emitter's context
 * (the node belongs to the context and outlives the scratch module). NULL on failure. */
static LLVMMetadataRef
new_access_group(Emitter *e)
{
    static const char text[] = "!qd.group = !{!0}\n!0 = distinct !{}\n";
    LLVMMemoryBufferRef buffer =
        LLVMCreateMemoryBufferWithMemoryRangeCopy(text, sizeof(text) - 1, "qd.group");
    LLVMModuleRef scratch = NULL;
    char *error = NULL;
    LLVMMetadataRef group = NULL;

    if (LLVMParseIRInContext(e->llctx, buffer, &scratch, &error) == 0) {
        LLVMValueRef node = NULL;
        if (LLVMGetNamedMetadataNumOperands(scratch, "qd.group") == 1) {
            LLVMGetNamedMetadataOperands(scratch, "qd.group", &node);
            group = LLVMValueAsMetadata(node);
        }
        LLVMDisposeModule(scratch);
    }
    LLVMDisposeMessage(error);
    return group;
}

/* The loop metadata of the grid-stride loop: interleave by GPU_INTERLEAVE at vector width 1,
 * and the iterations' global memory accesses (access group `group`) independent of each other
 * (parallel_accesses), so no run-time alias checks are needed. Legal because iterations of a
 * parallel_for are unordered: a program whose result depends on their order has a data race. */
static void
mark_parallel_loop(Emitter *e, LLVMValueRef latch_br, LLVMMetadataRef group, bool interleave)
{
    LLVMContextRef c = e->llctx;
    LLVMMetadataRef props[4];
    const char *names[3] = {"llvm.loop.vectorize.width", "llvm.loop.interleave.count",
                            "llvm.loop.vectorize.enable"};
    uint64_t values[3] = {1, interleave ? GPU_INTERLEAVE : 1, 1};
    for (int k = 0; k < 3; k++) {
        LLVMTypeRef t = k == 2 ? e->t_i1 : e->t_i32;
        LLVMMetadataRef ops[2] = {
            LLVMMDStringInContext2(c, names[k], strlen(names[k])),
            LLVMValueAsMetadata(LLVMConstInt(t, values[k], 0)),
        };
        props[k] = LLVMMDNodeInContext2(c, ops, 2);
    }
    if (!interleave) {
        /* a heavy body: neither interleaved nor unrolled (see GPU_INTERLEAVE) */
        LLVMMetadataRef disable = LLVMMDStringInContext2(c, "llvm.loop.unroll.disable", 24);
        props[2] = LLVMMDNodeInContext2(c, &disable, 1);
    }
    LLVMMetadataRef parallel[2] = {
        LLVMMDStringInContext2(c, "llvm.loop.parallel_accesses", 27),
        group,
    };
    props[3] = LLVMMDNodeInContext2(c, parallel, 2);
    LLVMMetadataRef self = LLVMTemporaryMDNode(c, NULL, 0);
    LLVMMetadataRef ops[5] = {self, props[0], props[1], props[2], props[3]};
    LLVMMetadataRef id = LLVMMDNodeInContext2(c, ops, 5);
    LLVMMetadataReplaceAllUsesWith(self, id);
    LLVMSetMetadata(latch_br, LLVMGetMDKindIDInContext(c, "llvm.loop", 9),
                    LLVMMetadataAsValue(c, id));
}

/* The grid-stride loop of an NVPTX range_for kernel over [begin, end) of the bound type, in
 * i64. Thread g (global index) runs iterations begin + g + t * stride for t in [0, count),
 * stride the grid's thread count and count = ceil((end - begin - g) / stride): a counted loop,
 * which the loop vectorizer can interleave (mark_parallel_loop). */
static int
emit_grid_stride_loop(Emitter *e, const QdInst *pfor)
{
    const QdType *ty = qd_value_type(e->kernel, pfor->result);
    LLVMValueRef begin = qd_llvm_int_resize(e, ty, qd_llvm_value(e, pfor->args[0]), e->t_i64);
    LLVMValueRef end = qd_llvm_int_resize(e, ty, qd_llvm_value(e, pfor->args[1]), e->t_i64);
    LLVMValueRef tid = LLVMBuildZExt(e->b, qd_llvm_sreg(e, e->b, "tid.x"), e->t_i64, "");
    LLVMValueRef ntid = LLVMBuildZExt(e->b, qd_llvm_sreg(e, e->b, "ntid.x"), e->t_i64, "");
    LLVMValueRef ctaid = LLVMBuildZExt(e->b, qd_llvm_sreg(e, e->b, "ctaid.x"), e->t_i64, "");
    LLVMValueRef nctaid = LLVMBuildZExt(e->b, qd_llvm_sreg(e, e->b, "nctaid.x"), e->t_i64, "");
    LLVMValueRef first = LLVMBuildNUWAdd(e->b, LLVMBuildNUWMul(e->b, ctaid, ntid, ""), tid, "");
    LLVMValueRef stride = LLVMBuildNUWMul(e->b, nctaid, ntid, "stride");
    LLVMValueRef start = LLVMBuildNSWAdd(e->b, begin, first, "start");
    /* count = start < end ? (end - start - 1) / stride + 1 : 0 */
    LLVMValueRef one = LLVMConstInt(e->t_i64, 1, 0);
    LLVMValueRef zero = LLVMConstInt(e->t_i64, 0, 0);
    LLVMValueRef left = LLVMBuildSub(e->b, LLVMBuildSub(e->b, end, start, ""), one, "");
    LLVMValueRef count = LLVMBuildAdd(e->b, LLVMBuildUDiv(e->b, left, stride, ""), one, "");
    LLVMIntPredicate lt = qd_type_is_signed(ty) ? LLVMIntSLT : LLVMIntULT; /* u64 bounds */
    count = LLVMBuildSelect(e->b, LLVMBuildICmp(e->b, lt, start, end, ""), count, zero, "count");
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(e->b);
    LLVMBasicBlockRef header = qd_llvm_new_block(e, "grid");
    LLVMBasicBlockRef body = qd_llvm_new_block(e, "grid.body");
    LLVMBasicBlockRef latch = qd_llvm_new_block(e, "grid.next");
    LLVMBasicBlockRef exit = qd_llvm_new_block(e, "grid.end");
    LoopTargets targets = {latch, exit};

    LLVMBuildBr(e->b, header);
    LLVMPositionBuilderAtEnd(e->b, header);
    LLVMValueRef t = LLVMBuildPhi(e->b, e->t_i64, "t");
    LLVMBuildCondBr(e->b, LLVMBuildICmp(e->b, LLVMIntULT, t, count, ""), body, exit);

    LLVMPositionBuilderAtEnd(e->b, body);
    LLVMValueRef j = LLVMBuildNSWAdd(e->b, start, LLVMBuildNUWMul(e->b, t, stride, ""), "j");
    e->values[pfor->result] = LLVMBuildTrunc(e->b, j, qd_llvm_reg_type(e, ty), "i");
    e->access_group = new_access_group(e);
    int status = qd_llvm_emit_region(e, pfor->regions[0], &targets);
    LLVMMetadataRef group = e->access_group;
    e->access_group = NULL;
    RETURN_IF_ERROR(status);
    if (qd_llvm_block_is_open(e)) {
        LLVMBuildBr(e->b, latch);
    }
    LLVMPositionBuilderAtEnd(e->b, latch);
    LLVMValueRef next = LLVMBuildNUWAdd(e->b, t, one, "");
    LLVMValueRef latch_br = LLVMBuildBr(e->b, header);
    if (group != NULL) {
        mark_parallel_loop(e, latch_br, group,
                           region_cost(pfor->regions[0]) <= GPU_INTERLEAVE_MAX_COST);
    }
    LLVMValueRef incoming[2] = {zero, next};
    LLVMBasicBlockRef from[2] = {pre, latch};
    LLVMAddIncoming(t, incoming, from, 2);
    LLVMPositionBuilderAtEnd(e->b, exit);
    return 0;
}

/* Whether region r holds an instruction every thread of a block must reach together (barriers,
 * subgroup operations) or block-shared memory. */
static bool
has_block_ops(const QdRegion *r)
{
    return qd_region_has_op(r, QD_CONVERGENT | QD_SIMT);
}

/* The block-stride loop of an NVPTX range_for kernel whose body uses barriers, subgroup
 * operations or shared memory. Iteration begin + i runs on thread i % B of virtual block i / B
 * (B = block_dim); block b of the grid takes virtual blocks b, b + nctaid, ... Every thread of
 * a block makes the same number of trips (the count depends on the block only), so barriers
 * in the body are reached by the whole block on each trip; the bounds check sits inside the
 * trip: in a last, partial virtual block the threads past `end` skip the body and leave the
 * kernel (an exited thread does not hold a barrier back). */
static int
emit_block_stride_loop(Emitter *e, const QdInst *pfor)
{
    const QdType *ty = qd_value_type(e->kernel, pfor->result);
    LLVMValueRef begin = qd_llvm_int_resize(e, ty, qd_llvm_value(e, pfor->args[0]), e->t_i64);
    LLVMValueRef end = qd_llvm_int_resize(e, ty, qd_llvm_value(e, pfor->args[1]), e->t_i64);
    LLVMValueRef tid32 = qd_llvm_sreg(e, e->b, "tid.x");
    LLVMValueRef ntid32 = qd_llvm_sreg(e, e->b, "ntid.x");
    LLVMValueRef ctaid32 = qd_llvm_sreg(e, e->b, "ctaid.x");
    LLVMValueRef nctaid32 = qd_llvm_sreg(e, e->b, "nctaid.x");
    LLVMValueRef tid = LLVMBuildZExt(e->b, tid32, e->t_i64, "");
    LLVMValueRef ntid = LLVMBuildZExt(e->b, ntid32, e->t_i64, "");
    LLVMValueRef ctaid = LLVMBuildZExt(e->b, ctaid32, e->t_i64, "");
    LLVMValueRef nctaid = LLVMBuildZExt(e->b, nctaid32, e->t_i64, "");
    LLVMValueRef one = LLVMConstInt(e->t_i64, 1, 0);
    LLVMValueRef zero = LLVMConstInt(e->t_i64, 0, 0);
    /* nblocks = ceil((end - begin) / B); count = ctaid < nblocks ? (nblocks - ctaid - 1) /
     * nctaid + 1 : 0 */
    LLVMIntPredicate lt = qd_type_is_signed(ty) ? LLVMIntSLT : LLVMIntULT; /* u64 bounds */
    LLVMValueRef n = LLVMBuildSub(e->b, end, begin, "");
    n = LLVMBuildSelect(e->b, LLVMBuildICmp(e->b, lt, begin, end, ""), n, zero, "n");
    LLVMValueRef nblocks =
        LLVMBuildUDiv(e->b, LLVMBuildSub(e->b, LLVMBuildAdd(e->b, n, ntid, ""), one, ""), ntid, "");
    LLVMValueRef left = LLVMBuildSub(e->b, LLVMBuildSub(e->b, nblocks, ctaid, ""), one, "");
    LLVMValueRef count = LLVMBuildAdd(e->b, LLVMBuildUDiv(e->b, left, nctaid, ""), one, "");
    count = LLVMBuildSelect(e->b, LLVMBuildICmp(e->b, LLVMIntULT, ctaid, nblocks, ""), count, zero,
                            "count");
    /* A loop over a 32-bit index counts in 32 bits: trips, virtual blocks and the offset of an
     * iteration are below n < 2^32, so the values the loop keeps live take one register each.
     * An iteration is in range when its virtual block is one of the n / B full ones, or the
     * partial one after them and its thread is below n % B. */
    bool narrow = LLVMGetIntTypeWidth(qd_llvm_reg_type(e, ty)) <= 32;
    LLVMTypeRef ct = narrow ? e->t_i32 : e->t_i64;
    LLVMValueRef full = NULL, rem = NULL;
    if (narrow) {
        full = LLVMBuildTrunc(e->b, LLVMBuildUDiv(e->b, n, ntid, ""), ct, "full");
        rem = LLVMBuildTrunc(e->b, LLVMBuildURem(e->b, n, ntid, ""), ct, "rem");
        count = LLVMBuildTrunc(e->b, count, ct, "");
        begin = LLVMBuildTrunc(e->b, begin, ct, "");
        tid = tid32;
        ntid = ntid32;
        ctaid = ctaid32;
        nctaid = nctaid32;
        one = LLVMConstInt(ct, 1, 0);
        zero = LLVMConstInt(ct, 0, 0);
    }
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(e->b);
    LLVMBasicBlockRef header = qd_llvm_new_block(e, "blocks");
    LLVMBasicBlockRef check = qd_llvm_new_block(e, "blocks.check");
    LLVMBasicBlockRef body = qd_llvm_new_block(e, "blocks.body");
    LLVMBasicBlockRef latch = qd_llvm_new_block(e, "blocks.next");
    LLVMBasicBlockRef exit = qd_llvm_new_block(e, "blocks.end");
    LoopTargets targets = {latch, exit};

    LLVMBuildBr(e->b, header);
    LLVMPositionBuilderAtEnd(e->b, header);
    LLVMValueRef t = LLVMBuildPhi(e->b, ct, "t");
    LLVMBuildCondBr(e->b, LLVMBuildICmp(e->b, LLVMIntULT, t, count, ""), check, exit);

    LLVMPositionBuilderAtEnd(e->b, check);
    LLVMValueRef vblock = LLVMBuildAdd(e->b, ctaid, LLVMBuildMul(e->b, t, nctaid, ""), "");
    LLVMValueRef j, in_range;
    if (narrow) {
        LLVMValueRef is_full = LLVMBuildICmp(e->b, LLVMIntULT, vblock, full, "");
        LLVMValueRef in_rest = LLVMBuildICmp(e->b, LLVMIntULT, tid, rem, "");
        in_range = LLVMBuildOr(e->b, is_full, in_rest, "");
        LLVMValueRef rel = LLVMBuildAdd(e->b, LLVMBuildMul(e->b, vblock, ntid, ""), tid, "");
        j = LLVMBuildAdd(e->b, begin, rel, "j");
    } else {
        j = LLVMBuildAdd(e->b, begin,
                         LLVMBuildAdd(e->b, LLVMBuildMul(e->b, vblock, ntid, ""), tid, ""), "j");
        in_range = LLVMBuildICmp(e->b, lt, j, end, "");
    }
    LLVMBuildCondBr(e->b, in_range, body, exit);

    LLVMPositionBuilderAtEnd(e->b, body);
    LLVMTypeRef index_type = qd_llvm_reg_type(e, ty);
    e->values[pfor->result] = narrow ? LLVMBuildTruncOrBitCast(e->b, j, index_type, "i")
                                     : LLVMBuildTrunc(e->b, j, index_type, "i");
    RETURN_IF_ERROR(qd_llvm_emit_region(e, pfor->regions[0], &targets));
    if (qd_llvm_block_is_open(e)) {
        LLVMBuildBr(e->b, latch);
    }
    LLVMPositionBuilderAtEnd(e->b, latch);
    LLVMValueRef next = LLVMBuildAdd(e->b, t, one, "");
    LLVMBuildBr(e->b, header);
    LLVMValueRef incoming[2] = {zero, next};
    LLVMBasicBlockRef from[2] = {pre, latch};
    LLVMAddIncoming(t, incoming, from, 2);
    LLVMPositionBuilderAtEnd(e->b, exit);
    return 0;
}

/* A range_for task. CPU: the bounds function and the task function (see the file comment),
 * plus the grain estimate the runtime uses to decide how many threads the range is worth.
 * Bounds-only: the bounds function when the prologue is host-evaluable (grain 1), else
 * nothing (grain 0). NVPTX: one kernel with the grid-stride loop. */
static int
emit_range_task(Emitter *e, const QdInst *task, const char *name, QdCompiledTask *out)
{
    const QdRegion *body = task->regions[0];
    const QdInst *pfor = body->last;
    const QdType *ty = qd_value_type(e->kernel, pfor->result);

    RETURN_IF_ERROR(check_prologue(e, body, pfor));
    const bool *skip = bounds_skip(e, body, pfor);
    if (e->bounds_only) {
        out->grain = is_host_evaluable(e, body, pfor, skip) ? 1 : 0;
        return out->grain ? emit_bounds_function(e, body, pfor, name, skip) : 0;
    }
    if (qd_llvm_is_gpu(e)) {
        out->grain = 1; /* marks a range_for kernel for the launcher */
        begin_function(e, name, FN_KERNEL);
        for (const QdInst *inst = body->first; inst != pfor; inst = inst->next) {
            RETURN_IF_ERROR(qd_llvm_emit_inst(e, inst, NULL));
        }
        RETURN_IF_ERROR(has_block_ops(pfor->regions[0]) ? emit_block_stride_loop(e, pfor)
                                                         : emit_grid_stride_loop(e, pfor));
        out->reduces = e->partials.len > 0;
        qd_llvm_flush_partials(e);
        end_function(e);
        return 0;
    }
    uint64_t cost = region_cost(pfor->regions[0]);
    out->grain = (int64_t)(GRAIN_WORK / (cost ? cost : 1));
    out->grain = out->grain < 1 ? 1 : out->grain;
    RETURN_IF_ERROR(emit_bounds_function(e, body, pfor, name, skip));

    /* task(ctx, lo, hi): the prologue again, then the loop over [lo, hi) */
    begin_function(e, name, FN_TASK);
    for (const QdInst *inst = body->first; inst != pfor; inst = inst->next) {
        RETURN_IF_ERROR(qd_llvm_emit_inst(e, inst, NULL));
    }
    /* [lo, hi) lies inside [begin, end), so narrowing to the bound type is exact (the builder
     * returns an i64 as it is). */
    LLVMTypeRef t = qd_llvm_reg_type(e, ty);
    LLVMValueRef lo = LLVMBuildTrunc(e->b, LLVMGetParam(e->fn, 1), t, "lo");
    LLVMValueRef hi = LLVMBuildTrunc(e->b, LLVMGetParam(e->fn, 2), t, "hi");
    RETURN_IF_ERROR(qd_llvm_emit_counted_loop(e, pfor, lo, hi));
    qd_llvm_flush_partials(e);
    end_function(e);
    return 0;
}

/* NVPTX: the entry point of task `index`: "<symbol>_t<index>", then "_<task name>" with the
 * characters PTX identifiers cannot hold replaced by '_' (codegen.h, NVPTX KERNEL ABI). */
static void
gpu_entry_name(const char *symbol, uint32_t index, const char *task_name, char *out, size_t size)
{
    int n = snprintf(out, size, "%s_t%u", symbol, index);
    if (task_name == NULL || task_name[0] == '\0' || n < 0 || (size_t)n + 2 >= size) {
        return;
    }
    size_t at = (size_t)n;
    out[at++] = '_';
    for (const char *c = task_name; *c != '\0' && at + 1 < size; c++) {
        bool ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9');
        out[at++] = ok ? *c : '_';
    }
    out[at] = '\0';
}

/* The nvvm.annotations entry `key` = value for kernel fn. */
static void
annotate(Emitter *e, LLVMValueRef fn, const char *key, uint32_t value)
{
    LLVMValueRef ops[3] = {fn, LLVMMDStringInContext(e->llctx, key, (unsigned)strlen(key)),
                           LLVMConstInt(e->t_i32, value, 0)};
    LLVMAddNamedMetadataOperand(e->mod, "nvvm.annotations", LLVMMDNodeInContext(e->llctx, ops, 3));
}

/* NVPTX: the largest block the kernel of a task is launched with (`maxntid`), which lets
 * ptxas budget registers for it. A parallel task of blocks of one warp or less also asks for
 * as many blocks per SM as the device holds (`minnctapersm`): an SM runs at most that many
 * blocks however small, so each one-warp block may use 65536 / (32 * blocks) registers (64 on
 * sm_70/80/90) and a launch of many small blocks fills every SM in one wave; past that count
 * of registers only part of the blocks fit at once and the launch takes two waves (the tile
 * Cholesky demo: 920 us with 79 registers, 629 us with 64 and a few spills, on an H100). */
static void
annotate_block_dim(Emitter *e, const char *name, uint32_t threads, bool is_serial,
                   uint32_t min_blocks)
{
    LLVMValueRef fn = LLVMGetNamedFunction(e->mod, name);
    if (fn == NULL) {
        return;
    }
    annotate(e, fn, "maxntidx", threads);
    if (!is_serial && min_blocks > 0) { /* qd.loop_config(min_blocks_per_sm=) */
        annotate(e, fn, "minctasm", min_blocks);
    } else if (!is_serial && threads <= 32 && e->max_blocks_per_sm > 0) {
        annotate(e, fn, "minctasm", e->max_blocks_per_sm);
    }
}

int
qd_llvm_emit_task(Emitter *e, const QdInst *inst, uint32_t index, const char *symbol,
                  QdCompiledTask *task)
{
    char name[160];
    bool is_serial = inst->imm.task.kind == QD_TASK_SERIAL;

    task->block_dim = inst->imm.task.block_dim;
    if (qd_llvm_is_gpu(e)) {
        gpu_entry_name(symbol, index, inst->imm.task.name, name, sizeof(name));
        snprintf(task->entry, sizeof(task->entry), "%s", name);
        task->block_dim = is_serial ? 1 : task->block_dim ? task->block_dim : e->default_block_dim;
        if (task->block_dim > 1024) {
            return qd_error(e->ctx, inst->loc, QD_ERR_COMPILATION,
                            "block_dim %u is larger than the 1024 threads a CUDA block can have",
                            task->block_dim);
        }
    } else {
        snprintf(name, sizeof(name), "%s.t%u", symbol, index);
        /* CPU: block_dim > 0 marks a task the runtime runs as emulated SIMT blocks */
        bool simt = !is_serial && e->opts != NULL && e->opts->cpu_simt &&
                    has_block_ops(inst->regions[0]->last->regions[0]);
        task->block_dim = simt ? (task->block_dim ? task->block_dim : QD_CPU_SIMT_BLOCK_DIM) : 0;
    }
    RETURN_IF_ERROR(is_serial ? emit_serial_task(e, inst, name, task)
                              : emit_range_task(e, inst, name, task));
    if (qd_llvm_is_gpu(e)) {
        annotate_block_dim(e, name, task->block_dim, is_serial, inst->imm.task.min_blocks);
    }
    return 0;
}
