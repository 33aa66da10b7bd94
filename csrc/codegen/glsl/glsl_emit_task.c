/* codegen/glsl/glsl_emit_task.c -- one task as one compute shader.
 *
 * What each task becomes (glsl.h, VULKAN KERNEL ABI):
 *   serial      local_size_x = 1, dispatched as one workgroup: the body once
 *   range_for   local_size_x = B: the prologue on every invocation, then the parallel loop,
 *               then the partial_* accumulators flushed with one atomic per subgroup or
 *               invocation
 * The parallel loop is a grid-stride loop, as on NVPTX: iteration begin + j on global
 * invocation j, then j + gl_NumWorkGroups.x * B, ...; the trip count is computed in 32 bits
 * for bounds of 32 bits or fewer, in 64 bits otherwise, and the step never wraps past it.
 * A body with barriers, subgroup operations or shared memory gets a block-stride loop
 * instead: every invocation of a workgroup makes the same number of trips (virtual blocks
 * b, b + gl_NumWorkGroups.x, ...), so each barrier is reached by the whole workgroup; in the
 * last, partial virtual block the invocations past the end leave the loop, as CUDA threads
 * exit (llvm_emit_task.c: emit_block_stride_loop).
 */
#include "glsl_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool
qd_glsl_has_block_ops(const QdRegion *r)
{
    return qd_region_has_op(r, QD_CONVERGENT | QD_SIMT);
}

/* Rejects prologue instructions that write memory: every invocation runs the prologue. */
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
            return qd_error(e->ctx, qd_glsl_loc(inst), QD_ERR_COMPILATION,
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

/***** the parallel loop *****/

/* Names of the loop's counting types: 32 or 64 bits, signed and unsigned. */
typedef struct LoopTypes {
    const char *u;     /* "uint" or "uint64_t" */
    const char *s;     /* "int" or "int64_t" */
    const char *index; /* the bound type */
} LoopTypes;

/* Declares qd_begin (signed wide), qd_n (the trip count, unsigned wide). */
static int
loop_count(Emitter *e, const QdInst *pfor, LoopTypes *lt)
{
    const QdType *ty = qd_value_type(e->kernel, pfor->result);
    bool wide = qd_type_bits(ty) > 32;
    const QdType *s = qd_type_scalar(wide ? QD_TY_I64 : QD_TY_I32);
    lt->u = wide ? "uint64_t" : "uint";
    lt->s = wide ? "int64_t" : "int";
    lt->index = qd_glsl_type(e, ty->kind);
    const char *begin = qd_glsl_value(e, pfor->args[0]);
    const char *end = qd_glsl_value(e, pfor->args[1]);
    const char *begin_w = begin ? qd_glsl_cast(e, ty, s, begin) : NULL;
    const char *end_w = end ? qd_glsl_cast(e, ty, s, end) : NULL;
    if (begin_w == NULL || end_w == NULL) {
        return qd_glsl_nomem(e, pfor);
    }
    qd_glsl_line(e, "%s qd_begin = %s;", lt->s, begin_w);
    qd_glsl_line(e, "%s qd_n = %s < %s ? %s(%s) - %s(qd_begin) : %s(0);", lt->u, begin, end, lt->u,
                 end_w, lt->u, lt->u);
    return 0;
}

/* The loop variable of iteration j (unsigned wide `j`), as the bound type. */
static int
define_index(Emitter *e, const QdInst *pfor, const LoopTypes *lt, const char *j)
{
    const QdType *ty = qd_value_type(e->kernel, pfor->result);
    bool wide = qd_type_bits(ty) > 32;
    const QdType *s = qd_type_scalar(wide ? QD_TY_I64 : QD_TY_I32);
    const char *sum = qd_glsl_str(e, "(qd_begin + %s(%s))", lt->s, j);
    const char *v = sum ? qd_glsl_cast(e, s, ty, sum) : NULL;
    const char *name = qd_glsl_str(e, "v%u", pfor->result);
    if (v == NULL || name == NULL) {
        return qd_glsl_nomem(e, pfor);
    }
    qd_glsl_line(e, "%s %s = %s;", lt->index, name, v);
    e->values[pfor->result].name = name;
    return 0;
}

static int
emit_grid_stride_loop(Emitter *e, const QdInst *pfor)
{
    LoopTypes lt;
    RETURN_IF_ERROR(loop_count(e, pfor, &lt));
    qd_glsl_line(e, "%s qd_stride = %s(gl_NumWorkGroups.x) * %s(%u);", lt.u, lt.u, lt.u,
                 e->block_dim);
    qd_glsl_line(e,
                 "for (%s qd_j = %s(gl_GlobalInvocationID.x); qd_j < qd_n; "
                 "qd_j += min(qd_stride, qd_n - qd_j)) {",
                 lt.u, lt.u);
    e->indent++;
    RETURN_IF_ERROR(define_index(e, pfor, &lt, "qd_j"));
    RETURN_IF_ERROR(qd_glsl_emit_region(e, pfor->regions[0]));
    e->indent--;
    qd_glsl_line(e, "}");
    return 0;
}

static int
emit_block_stride_loop(Emitter *e, const QdInst *pfor)
{
    LoopTypes lt;
    RETURN_IF_ERROR(loop_count(e, pfor, &lt));
    const char *u = lt.u;
    qd_glsl_line(e, "%s qd_nblocks = qd_n / %s(%u) + (qd_n %% %s(%u) != %s(0) ? %s(1) : %s(0));", u,
                 u, e->block_dim, u, e->block_dim, u, u, u);
    qd_glsl_line(e,
                 "for (%s qd_vb = %s(gl_WorkGroupID.x); qd_vb < qd_nblocks; "
                 "qd_vb += %s(gl_NumWorkGroups.x)) {",
                 u, u, u);
    e->indent++;
    qd_glsl_line(e, "%s qd_j = qd_vb * %s(%u) + %s(gl_LocalInvocationID.x);", u, u, e->block_dim,
                 u);
    qd_glsl_line(e, "if (qd_j >= qd_n) {");
    qd_glsl_line(e, "    break;");
    qd_glsl_line(e, "}");
    RETURN_IF_ERROR(define_index(e, pfor, &lt, "qd_j"));
    RETURN_IF_ERROR(qd_glsl_emit_region(e, pfor->regions[0]));
    e->indent--;
    qd_glsl_line(e, "}");
    return 0;
}

/***** partial_* accumulators *****/

/* The subgroup reduction of the atomic `op` on ty, or NULL when it has none worth using
 * (subgroup arithmetic on 8-, 16- and 64-bit integers needs extended-types features). */
static const char *
subgroup_reduce(QdOp op, const QdType *ty)
{
    QdTypeKind k = ty->kind;
    bool is_float = k == QD_TY_F32 || k == QD_TY_F64;
    if (k != QD_TY_I32 && k != QD_TY_U32 && !is_float) {
        return NULL;
    }
    switch (op) {
    case QD_OP_ATOMIC_ADD:
        return "subgroupAdd";
    case QD_OP_ATOMIC_MIN:
        return "subgroupMin";
    case QD_OP_ATOMIC_MAX:
        return "subgroupMax";
    case QD_OP_ATOMIC_AND:
        return is_float ? NULL : "subgroupAnd";
    case QD_OP_ATOMIC_OR:
        return is_float ? NULL : "subgroupOr";
    case QD_OP_ATOMIC_XOR:
        return is_float ? NULL : "subgroupXor";
    default:
        return NULL;
    }
}

/* After the loop: each accumulator goes into its target with the matching atomic. Where the
 * subgroup can combine the values first (the accumulators never hold a NaN: the loop updates
 * them with the NaN-dropping min / max), one elected invocation per subgroup issues it. */
static int
flush_partials(Emitter *e)
{
    for (uint32_t i = 0; i < e->partials.len; i++) {
        const QdInst *inst = e->partials.data[i];
        const QdType *ty = inst->type->elem;
        QdOp op = qd_op_partial_atomic(inst->op);
        const char *acc = e->values[inst->result].name;
        const char *reduce = subgroup_reduce(op, ty);
        if (reduce == NULL) {
            RETURN_IF_ERROR(qd_glsl_atomic(e, inst, op, ty, inst->args[0], acc, NULL, NULL));
            continue;
        }
        e->ext |= X_SG_ARITH;
        qd_glsl_line(e, "{");
        e->indent++;
        qd_glsl_line(e, "%s qd_sum = %s(%s);", qd_glsl_type(e, ty->kind), reduce, acc);
        qd_glsl_line(e, "if (subgroupElect()) {");
        e->indent++;
        RETURN_IF_ERROR(qd_glsl_atomic(e, inst, op, ty, inst->args[0], "qd_sum", NULL, NULL));
        e->indent--;
        qd_glsl_line(e, "}");
        e->indent--;
        qd_glsl_line(e, "}");
    }
    return 0;
}

/***** the shader *****/

/* Walk callback: stops at fences and volatile loads (the task's refs become coherent). */
static int
find_coherent(QdInst *inst, void *data)
{
    (void)data;
    QdOp op = inst->op;
    return op == QD_OP_FENCE_BLOCK || op == QD_OP_FENCE_DEVICE || op == QD_OP_FENCE_SYSTEM ||
                   op == QD_OP_LOAD_VOLATILE
               ? -1
               : 0;
}

/* Clears the per-task state. */
static void
begin_task(Emitter *e, const QdInst *task)
{
    qd_sbuf_free(&e->body);
    qd_sbuf_free(&e->hoist);
    qd_sbuf_free(&e->globals);
    qd_sbuf_init(&e->body);
    qd_sbuf_init(&e->hoist);
    qd_sbuf_init(&e->globals);
    e->indent = 1;
    e->ext = 0;
    memset(e->refs, 0, sizeof(e->refs));
    memset(e->vrefs, 0, sizeof(e->vrefs));
    memset(e->helpers, 0, sizeof(e->helpers));
    memset(e->values, 0, sizeof(*e->values) * e->kernel->nvalues);
    memset(e->nd_hoisted, 0, sizeof(*e->nd_hoisted) * e->kernel->nparams);
    memset(e->field_hoisted, 0, sizeof(*e->field_hoisted) * e->nfields);
    memset(e->tail_hoisted, 0, sizeof(e->tail_hoisted));
    e->coherent = qd_region_walk(task->regions[0], find_coherent, NULL) != 0;
    e->sync_counter = false;
    e->partials.len = 0;
    e->ntemps = 0;
}

/* The shader's text (malloc), or NULL when out of memory. */
static char *
write_shader(Emitter *e)
{
    QdSbuf out;
    qd_sbuf_init(&out);
    QdSbuf helpers;
    qd_sbuf_init(&helpers);
    qd_glsl_write_helpers(e, &helpers); /* first: helpers may use more types and refs */
    qd_glsl_write_preamble(e, &out);
    if (e->globals.len > 0) {
        qd_sbuf_putc(&out, '\n');
        qd_sbuf_puts(&out, e->globals.data);
    }
    if (helpers.len > 0) {
        qd_sbuf_putc(&out, '\n');
        qd_sbuf_puts(&out, helpers.data);
    }
    qd_sbuf_free(&helpers);
    qd_sbuf_puts(&out, "\nvoid main() {\n");
    if (e->hoist.len > 0) {
        qd_sbuf_puts(&out, e->hoist.data);
    }
    qd_sbuf_puts(&out, e->body.data ? e->body.data : "");
    qd_sbuf_puts(&out, "}\n");
    bool failed = out.failed || e->body.failed || e->hoist.failed || e->globals.failed;
    char *text = qd_sbuf_take(&out);
    if (failed) {
        free(text);
        return NULL;
    }
    return text;
}

/* "<kernel>_t<i>[_<task name>]" with the characters outside [A-Za-z0-9_] of the task name
 * replaced by '_'. */
static void
task_name(const char *kernel, uint32_t index, const char *name, char *out, size_t size)
{
    int n = snprintf(out, size, "%s_t%u", kernel, index);
    if (name == NULL || name[0] == '\0' || n < 0 || (size_t)n + 2 >= size) {
        return;
    }
    size_t at = (size_t)n;
    out[at++] = '_';
    for (const char *c = name; *c != '\0' && at + 1 < size; c++) {
        bool ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9');
        out[at++] = ok ? *c : '_';
    }
    out[at] = '\0';
}

int
qd_glsl_emit_task(Emitter *e, const QdInst *task, uint32_t index, QdGlslTask *out)
{
    bool is_serial = task->imm.task.kind == QD_TASK_SERIAL;
    const QdRegion *body = task->regions[0];

    begin_task(e, task);
    task_name(e->kernel->name, index, task->imm.task.name, out->name, sizeof(out->name));
    out->is_serial = is_serial;
    e->is_range = !is_serial;
    e->block_dim = is_serial                  ? 1
                   : task->imm.task.block_dim ? task->imm.task.block_dim
                                              : e->opts->default_block_dim;
    if (e->block_dim == 0 || e->block_dim > 1024) {
        return qd_error(e->ctx, task->loc, QD_ERR_COMPILATION,
                        "block_dim %u is not a workgroup size the Vulkan backend can use "
                        "(1 to 1024)",
                        e->block_dim);
    }
    out->block_dim = e->block_dim;
    if (e->has_asserts) {
        /* an earlier task failed an assert: the launch stops (as on the CPU and CUDA) */
        const char *rt = qd_glsl_tail(e, 2);
        const char *flag = rt ? qd_glsl_ref(e, QD_TY_I32, rt, false) : NULL;
        if (flag == NULL) {
            return qd_glsl_nomem(e, task);
        }
        qd_glsl_line(e, "if (%s != 0) {", flag);
        qd_glsl_line(e, "    return;");
        qd_glsl_line(e, "}");
    }
    if (is_serial) {
        RETURN_IF_ERROR(qd_glsl_emit_region(e, body));
    } else {
        const QdInst *pfor = body->last;
        if (pfor == NULL || pfor->op != QD_OP_PARALLEL_FOR) {
            return qd_error(e->ctx, task->loc, QD_ERR_INTERNAL,
                            "a range_for task must end with its parallel_for");
        }
        RETURN_IF_ERROR(check_prologue(e, body, pfor));
        qd_glsl_mark_bits_storage(e, body);
        for (const QdInst *inst = body->first; inst != pfor; inst = inst->next) {
            RETURN_IF_ERROR(qd_glsl_emit_inst(e, inst));
        }
        bool blocks = qd_glsl_has_block_ops(pfor->regions[0]);
        RETURN_IF_ERROR(blocks ? emit_block_stride_loop(e, pfor) : emit_grid_stride_loop(e, pfor));
        out->reduces = e->partials.len > 0;
        RETURN_IF_ERROR(flush_partials(e));
    }
    out->source = write_shader(e);
    if (out->source == NULL) {
        return qd_glsl_nomem(e, task);
    }
    return 0;
}
