/* codegen/glsl/glsl_emit.c -- a QIR kernel as GLSL compute shaders, one per task.
 *
 * Input: a concrete kernel (the pass pipeline ran: no templates, no unroll; a `call` is left
 * only where a func reaches itself, which GLSL cannot express). Output: QdGlslKernel, whose
 * ABI glsl.h describes.
 *
 * Shape of every shader (assembled by write_shader):
 *     #version 460, the extensions it uses
 *     layout(local_size_x = B) in;
 *     the buffer reference types it uses (glsl_types.c), the push constant block
 *     shared variables, helper functions (glsl_emit_ops.c)
 *     void main() {
 *         [return when an earlier task failed an assert]
 *         hoisted statements: parameter reads, local variables (allocas)
 *         the task's body (glsl_emit_task.c)
 *     }
 * Every QIR value with a result becomes one variable `v<id>`, defined where the instruction
 * is; structured regions map one to one onto GLSL blocks (if / else, `for` for `for`,
 * `while (true)` for `loop`, break and continue as they are), so a value's variable is in
 * scope wherever QIR's dominance rule lets the value be used. Local and shared memory cannot
 * be addressed in GLSL: a pointer into it is an lvalue known at compile time (`v12[v9]`),
 * which is why such pointers cannot be selected, converted to integers or passed on.
 *
 * Before any text is produced, check_features walks the kernel and fails on what the device
 * (QdGlslOptions) or GLSL cannot do, naming the feature or the construct.
 */
#include "glsl_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
qd_glsl_options_default(QdGlslOptions *opts)
{
    memset(opts, 0, sizeof(*opts));
    opts->default_block_dim = 128;
    opts->subgroup_size = 32;
    opts->fast_math = true;
#define QD_VK_FEATURE(name, bit, dflt, source) opts->features.name = (dflt);
#include "../../abi/vk_features.def"
#undef QD_VK_FEATURE
}

/***** small helpers *****/

QdLoc
qd_glsl_loc(const QdInst *inst)
{
    if (inst->text_line != 0) {
        QdLoc at = {NULL, inst->text_line, 0};
        return at;
    }
    return inst->loc;
}

void
qd_glsl_line(Emitter *e, const char *fmt, ...)
{
    va_list ap;
    char stack[512];
    for (int i = 0; i < e->indent; i++) {
        qd_sbuf_puts(&e->body, "    ");
    }
    va_start(ap, fmt);
    int n = vsnprintf(stack, sizeof(stack), fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < sizeof(stack)) {
        qd_sbuf_puts(&e->body, stack);
    } else if (n >= 0) {
        char *big = malloc((size_t)n + 1);
        if (big == NULL) {
            e->body.failed = true;
        } else {
            va_start(ap, fmt);
            vsnprintf(big, (size_t)n + 1, fmt, ap);
            va_end(ap);
            qd_sbuf_puts(&e->body, big);
            free(big);
        }
    }
    qd_sbuf_putc(&e->body, '\n');
}

char *
qd_glsl_str(Emitter *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        return NULL;
    }
    char *s = qd_arena_alloc(&e->arena, (size_t)n + 1);
    if (s != NULL) {
        va_start(ap, fmt);
        vsnprintf(s, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    return s;
}

int
qd_glsl_nomem(Emitter *e, const QdInst *inst)
{
    return qd_error(e->ctx, inst ? qd_glsl_loc(inst) : e->kernel->loc, QD_ERR_NOMEM,
                    "out of memory");
}

int
qd_glsl_unsupported(Emitter *e, const QdInst *inst, const char *what, const char *why)
{
    return qd_error(e->ctx, inst ? qd_glsl_loc(inst) : e->kernel->loc, QD_ERR_SYNTAX,
                    "%s is not supported on the Vulkan backend%s%s", what, why ? ": " : "",
                    why ? why : "");
}

int
qd_glsl_define(Emitter *e, const QdInst *inst, const char *expr)
{
    const char *name = qd_glsl_str(e, "v%u", inst->result);
    if (expr == NULL || name == NULL) {
        return qd_glsl_nomem(e, inst);
    }
    const char *type =
        inst->type->kind == QD_TY_PTR ? "uint64_t" : qd_glsl_type(e, inst->type->kind);
    qd_glsl_line(e, "%s %s = %s;", type, name, expr);
    e->values[inst->result].name = name;
    return 0;
}

/***** feature checks *****/

/* The device feature a scalar type needs, or NULL when every device has it; *flag says
 * whether this device has it. */
static const char *
type_feature(const Emitter *e, QdTypeKind k, bool *has)
{
    switch (k) {
    case QD_TY_I8:
    case QD_TY_U8:
        *has = e->opts->features.int8;
        return "8-bit integers (shaderInt8)";
    case QD_TY_I16:
    case QD_TY_U16:
        *has = e->opts->features.int16;
        return "16-bit integers (shaderInt16)";
    case QD_TY_F16:
        *has = e->opts->features.float16;
        return "16-bit floats (shaderFloat16)";
    case QD_TY_F64:
        *has = e->opts->features.float64;
        return "64-bit floats (shaderFloat64)";
    default:
        *has = true;
        return NULL;
    }
}

/* Checks one type an instruction uses (pointees and array elements included). */
static int
check_type(Emitter *e, const QdInst *inst, const QdType *ty, bool in_memory)
{
    while (ty->kind == QD_TY_PTR || ty->kind == QD_TY_ARRAY || ty->kind == QD_TY_NDARRAY) {
        in_memory = in_memory || ty->kind != QD_TY_ARRAY;
        ty = ty->elem;
    }
    if (ty->kind == QD_TY_BF16) {
        return qd_glsl_unsupported(e, inst, "bf16", "no GLSL type holds it");
    }
    bool has;
    const char *feature = type_feature(e, ty->kind, &has);
    if (feature != NULL && !has) {
        char what[160];
        snprintf(what, sizeof(what), "the type %s", qd_type_scalar_name(ty->kind));
        return qd_glsl_unsupported(e, inst, what, qd_glsl_str(e, "the device lacks %s", feature));
    }
    bool is16 = qd_type_bits(ty) == 16;
    if (in_memory && is16 && !e->opts->features.storage16) {
        char what[160];
        snprintf(what, sizeof(what), "%s in memory", qd_type_scalar_name(ty->kind));
        return qd_glsl_unsupported(e, inst, what,
                                   "the device lacks 16-bit storage (storageBuffer16BitAccess)");
    }
    return 0;
}

/* What an atomic on type ty needs of the device (64-bit atomics). */
static int
check_atomic(Emitter *e, const QdInst *inst)
{
    const QdType *ty = inst->type;
    QdOp op = inst->op;
    bool wide = qd_type_bits(ty) == 64;
    if (!wide || e->opts->features.atomic_int64) {
        return 0;
    }
    bool native_f64 = ty->kind == QD_TY_F64 && e->opts->features.atomic_f64_add &&
                      (op == QD_OP_ATOMIC_ADD || op == QD_OP_ATOMIC_SUB);
    if (native_f64) {
        return 0;
    }
    char what[160];
    snprintf(what, sizeof(what), "`%s` on %s", qd_op_info[op].text, qd_type_scalar_name(ty->kind));
    return qd_glsl_unsupported(e, inst, what,
                               "the device lacks 64-bit atomics (shaderBufferInt64Atomics)");
}

/* Walk callback: fails on the first instruction the device or GLSL cannot run. */
static int
check_inst(QdInst *inst, void *data)
{
    Emitter *e = data;
    QdSig sig = qd_op_info[inst->op].sig;
    if (inst->op == QD_OP_CALL) {
        char what[200];
        snprintf(what, sizeof(what), "the recursive function @%s", inst->imm.call.name);
        return qd_glsl_unsupported(e, inst, what, "GLSL has no recursion");
    }
    if (inst->result != QD_NO_VALUE && inst->type != NULL) {
        RETURN_IF_ERROR(check_type(e, inst, inst->type, false));
    }
    QdFunc *f = inst->parent->func;
    for (uint32_t k = 0; k < inst->nargs; k++) {
        RETURN_IF_ERROR(check_type(e, inst, qd_value_type(f, inst->args[k]), false));
    }
    if (sig == SIG_ATOMIC || sig == SIG_ATOMIC_INT || sig == SIG_CAS) {
        RETURN_IF_ERROR(check_atomic(e, inst));
    }
    return 0;
}

static int
check_features(Emitter *e)
{
    for (uint32_t i = 0; i < e->kernel->nparams; i++) {
        uint32_t id = e->kernel->params[i];
        if (e->arg_offsets[i] != QD_ARG_UNUSED) {
            RETURN_IF_ERROR(check_type(e, NULL, qd_value_type(e->kernel, id), true));
        }
    }
    return qd_region_walk(e->kernel->body, check_inst, e);
}

/***** regions and control flow *****/

/* if / else; the else branch is left out when empty. */
static int
emit_if(Emitter *e, const QdInst *inst)
{
    const QdType *ty = qd_value_type(e->kernel, inst->args[0]);
    const char *cond = qd_glsl_truth(e, ty, qd_glsl_value(e, inst->args[0]));
    if (cond == NULL) {
        return qd_glsl_nomem(e, inst);
    }
    qd_glsl_line(e, "if (%s) {", cond);
    e->indent++;
    RETURN_IF_ERROR(qd_glsl_emit_region(e, inst->regions[0]));
    e->indent--;
    if (!qd_region_is_empty(inst->regions[1])) {
        qd_glsl_line(e, "} else {");
        e->indent++;
        RETURN_IF_ERROR(qd_glsl_emit_region(e, inst->regions[1]));
        e->indent--;
    }
    qd_glsl_line(e, "}");
    return 0;
}

/* `for %i = lo to hi`: a GLSL for loop, whose increment is the continue target. */
static int
emit_for(Emitter *e, const QdInst *inst)
{
    const char *type = qd_glsl_type(e, inst->type->kind);
    const char *i = qd_glsl_str(e, "v%u", inst->result);
    const char *lo = qd_glsl_value(e, inst->args[0]);
    const char *hi = qd_glsl_value(e, inst->args[1]);
    if (i == NULL || lo == NULL || hi == NULL) {
        return qd_glsl_nomem(e, inst);
    }
    e->values[inst->result].name = i;
    qd_glsl_line(e, "for (%s %s = %s; %s < %s; %s++) {", type, i, lo, i, hi, i);
    e->indent++;
    RETURN_IF_ERROR(qd_glsl_emit_region(e, inst->regions[0]));
    e->indent--;
    qd_glsl_line(e, "}");
    return 0;
}

static int
emit_loop(Emitter *e, const QdInst *inst)
{
    qd_glsl_line(e, "while (true) {");
    e->indent++;
    RETURN_IF_ERROR(qd_glsl_emit_region(e, inst->regions[0]));
    e->indent--;
    qd_glsl_line(e, "}");
    return 0;
}

int
qd_glsl_emit_inst(Emitter *e, const QdInst *inst)
{
    QdOp op = inst->op;
    if (qd_op_has(op, QD_SIMT) || op == QD_OP_FENCE_BLOCK || op == QD_OP_FENCE_DEVICE ||
        op == QD_OP_FENCE_SYSTEM) {
        return qd_glsl_emit_simt(e, inst);
    }
    switch (op) {
    case QD_OP_IF:
        return emit_if(e, inst);
    case QD_OP_FOR:
        return emit_for(e, inst);
    case QD_OP_LOOP:
        return emit_loop(e, inst);
    case QD_OP_BREAK:
        qd_glsl_line(e, "break;");
        return 0;
    case QD_OP_CONTINUE:
        qd_glsl_line(e, "continue;");
        return 0;
    case QD_OP_CALL:
        return check_inst((QdInst *)inst, e);
    case QD_OP_PRINT:
        return qd_glsl_emit_print(e, inst);
    case QD_OP_RET:
    case QD_OP_UNROLL:
    case QD_OP_TASK:
    case QD_OP_PARALLEL_FOR:
    case QD_OP_TMP_ALLOC:
    case QD_OP_NN_MATVEC:
        return qd_error(e->ctx, qd_glsl_loc(inst), QD_ERR_INTERNAL,
                        "`%s` cannot be compiled here (run the pass pipeline before code "
                        "generation)",
                        qd_op_info[op].text);
    case QD_OP_ASSERT:
        return qd_glsl_emit_assert(e, inst);
    default: {
        QdSig sig = qd_op_info[op].sig;
        bool is_mem = op == QD_OP_ALLOCA || op == QD_OP_FIELD_PTR || op == QD_OP_ELEM_PTR ||
                      op == QD_OP_ARRAY_PTR || op == QD_OP_SHAPE || op == QD_OP_LOAD ||
                      op == QD_OP_LOAD_VOLATILE || op == QD_OP_STORE || op == QD_OP_KERNEL_RET ||
                      op == QD_OP_PTR_TO_INT || op == QD_OP_CLOCK || sig == SIG_ATOMIC ||
                      sig == SIG_ATOMIC_INT || sig == SIG_CAS || sig == SIG_PARTIAL ||
                      sig == SIG_PARTIAL_INT;
        return is_mem ? qd_glsl_emit_mem(e, inst) : qd_glsl_emit_op(e, inst);
    }
    }
}

int
qd_glsl_emit_region(Emitter *e, const QdRegion *r)
{
    for (const QdInst *inst = r->first; inst != NULL; inst = inst->next) {
        RETURN_IF_ERROR(qd_glsl_emit_inst(e, inst));
    }
    return 0;
}

/***** kernel layout *****/

/* Offsets of the tmp_alloc slots, each 8-byte aligned, in instruction order (the LLVM
 * emitter's layout_tmps). */
static void
layout_tmps(Emitter *e)
{
    uint32_t at = 0;
    for (const QdInst *inst = e->kernel->body->first; inst != NULL; inst = inst->next) {
        if (inst->op == QD_OP_TMP_ALLOC) {
            const QdType *pointee = inst->type->elem;
            uint32_t size = qd_type_is_scalar(pointee) ? qd_glsl_size(pointee) : 8;
            e->tmp_offsets[inst->result] = at;
            at += (size + 7) & ~7u;
        }
    }
    e->tmps_size = at;
}

/* State of the walks over kernel_ret and field_ptr. */
typedef struct KernelWalk {
    uint64_t nresults; /* 1 + the highest kernel_ret index */
    QdTypeKind *types; /* second walk: the type of each result */
    bool *field_used;  /* per module field */
    QdModule *m;
} KernelWalk;

static int
note_kernel_inst(QdInst *inst, void *data)
{
    KernelWalk *walk = data;
    if (inst->op == QD_OP_KERNEL_RET) {
        uint64_t index = (uint64_t)inst->imm.i;
        if (walk->types == NULL) {
            walk->nresults = index + 1 > walk->nresults ? index + 1 : walk->nresults;
        } else if (index < walk->nresults) {
            const QdType *ty = qd_value_type(inst->parent->func, inst->args[0]);
            walk->types[index] = qd_type_is_scalar(ty) ? ty->kind : QD_TY_VOID;
        }
    }
    if (inst->op == QD_OP_FIELD_PTR && walk->field_used != NULL) {
        for (uint32_t i = 0; i < walk->m->fields.len; i++) {
            if (walk->m->fields.data[i] == inst->imm.field) {
                walk->field_used[i] = true;
            }
        }
    }
    return 0;
}

/* Walk callback that stops (-1) at the first assert. */
static int
find_assert(QdInst *inst, void *data)
{
    (void)data;
    return inst->op == QD_OP_ASSERT ? -1 : 0;
}

/* Results (nresults, result_types) and the field table. */
static int
layout_kernel(Emitter *e, QdGlslKernel *out)
{
    QdModule *m = e->m;
    KernelWalk walk = {0, NULL, NULL, m};
    walk.field_used = QD_NEW_ARRAY(&e->arena, bool, m->fields.len + 1);
    if (walk.field_used == NULL) {
        return qd_glsl_nomem(e, NULL);
    }
    qd_region_walk(e->kernel->body, note_kernel_inst, &walk);
    if (walk.nresults > QD_MAX_RESULTS) {
        return qd_error(e->ctx, e->kernel->loc, QD_ERR_COMPILATION,
                        "kernel_ret index %llu is too large",
                        (unsigned long long)walk.nresults - 1);
    }
    out->result_types = calloc(walk.nresults ? walk.nresults : 1, sizeof(QdTypeKind));
    out->fields = calloc(m->fields.len + 1, sizeof(char *));
    e->fields = QD_NEW_ARRAY(&e->arena, QdField *, m->fields.len + 1);
    if (out->result_types == NULL || out->fields == NULL || e->fields == NULL) {
        return qd_glsl_nomem(e, NULL);
    }
    for (uint64_t i = 0; i < walk.nresults; i++) {
        out->result_types[i] = QD_TY_VOID;
    }
    bool *field_used = walk.field_used;
    walk.types = out->result_types;
    walk.field_used = NULL;
    qd_region_walk(e->kernel->body, note_kernel_inst, &walk);
    out->nresults = (uint32_t)walk.nresults;
    for (uint32_t i = 0; i < m->fields.len; i++) {
        if (field_used[i]) {
            out->fields[e->nfields] = strdup(m->fields.data[i]->name);
            if (out->fields[e->nfields] == NULL) {
                return qd_glsl_nomem(e, NULL);
            }
            e->fields[e->nfields++] = m->fields.data[i];
            out->nfields = e->nfields;
        }
    }
    e->has_asserts = qd_region_walk(e->kernel->body, find_assert, NULL) != 0;
    return 0;
}

/* Copies the messages and kinds of asserts or prints into malloc'd arrays. */
static int
copy_formats(Emitter *e, const GlslAssert *items, uint32_t n, char ***formats, char ***kinds,
             uint32_t *count)
{
    *formats = calloc(n + 1, sizeof(char *));
    *kinds = calloc(n + 1, sizeof(char *));
    if (*formats == NULL || *kinds == NULL) {
        return qd_glsl_nomem(e, NULL);
    }
    *count = n;
    for (uint32_t i = 0; i < n; i++) {
        (*formats)[i] = strdup(items[i].format);
        (*kinds)[i] = strdup(items[i].kinds);
        if ((*formats)[i] == NULL || (*kinds)[i] == NULL) {
            return qd_glsl_nomem(e, NULL);
        }
    }
    return 0;
}

/***** entry points *****/

int
qd_glsl_emit(QdCtx *ctx, QdModule *m, const char *kernel_name, const uint32_t *arg_offsets,
             uint32_t args_size, const QdGlslOptions *opts, QdGlslKernel *out)
{
    Emitter e;
    uint32_t ntasks = 0;
    int rc = -1;

    memset(out, 0, sizeof(*out));
    memset(&e, 0, sizeof(e));
    e.ctx = ctx;
    e.m = m;
    e.opts = opts;
    e.arg_offsets = arg_offsets;
    e.args_size = args_size;
    qd_arena_init(&e.arena);
    e.kernel = qd_module_find_func(m, kernel_name);
    if (e.kernel == NULL || e.kernel->kind != QD_FUNC_KERNEL) {
        qd_error(ctx, (QdLoc){0}, QD_ERR_INTERNAL, "no kernel @%s in the module", kernel_name);
        goto done;
    }
    uint32_t nvalues = e.kernel->nvalues ? e.kernel->nvalues : 1;
    e.values = QD_NEW_ARRAY(&e.arena, GlslValue, nvalues);
    e.tmp_offsets = QD_NEW_ARRAY(&e.arena, uint32_t, nvalues);
    e.nd_hoisted = QD_NEW_ARRAY(&e.arena, uint32_t, e.kernel->nparams + 1);
    if (e.values == NULL || e.tmp_offsets == NULL || e.nd_hoisted == NULL) {
        qd_glsl_nomem(&e, NULL);
        goto done;
    }
    if (check_features(&e) < 0 || layout_kernel(&e, out) < 0) {
        goto done;
    }
    e.field_hoisted = QD_NEW_ARRAY(&e.arena, bool, e.nfields + 1);
    if (e.field_hoisted == NULL) {
        qd_glsl_nomem(&e, NULL);
        goto done;
    }
    layout_tmps(&e);
    out->tmps_size = e.tmps_size;
    for (const QdInst *inst = e.kernel->body->first; inst != NULL; inst = inst->next) {
        ntasks += inst->op == QD_OP_TASK;
    }
    out->tasks = calloc(ntasks ? ntasks : 1, sizeof(QdGlslTask));
    if (out->tasks == NULL) {
        qd_glsl_nomem(&e, NULL);
        goto done;
    }
    for (const QdInst *inst = e.kernel->body->first; inst != NULL; inst = inst->next) {
        if (inst->op != QD_OP_TASK) {
            continue;
        }
        if (qd_glsl_emit_task(&e, inst, out->ntasks, &out->tasks[out->ntasks]) < 0) {
            goto done;
        }
        out->ntasks++;
    }
    if (copy_formats(&e, e.asserts.data, e.asserts.len, &out->asserts, &out->assert_kinds,
                     &out->nasserts) < 0 ||
        copy_formats(&e, e.prints.data, e.prints.len, &out->prints, &out->print_kinds,
                     &out->nprints) < 0) {
        goto done;
    }
    rc = 0;
done:
    qd_sbuf_free(&e.body);
    qd_sbuf_free(&e.hoist);
    qd_sbuf_free(&e.globals);
    qd_arena_free(&e.arena);
    if (rc < 0) {
        qd_glsl_kernel_release(out);
    }
    return rc;
}

/* Frees an array of n malloc'd strings and the array. */
static void
free_strings(char **strings, uint32_t n)
{
    for (uint32_t i = 0; strings != NULL && i < n; i++) {
        free(strings[i]);
    }
    free(strings);
}

void
qd_glsl_kernel_release(QdGlslKernel *k)
{
    if (k == NULL) {
        return;
    }
    for (uint32_t i = 0; k->tasks != NULL && i < k->ntasks; i++) {
        free(k->tasks[i].source);
    }
    free(k->tasks);
    free(k->result_types);
    free_strings(k->fields, k->nfields);
    free_strings(k->asserts, k->nasserts);
    free_strings(k->assert_kinds, k->nasserts);
    free_strings(k->prints, k->nprints);
    free_strings(k->print_kinds, k->nprints);
    memset(k, 0, sizeof(*k));
}
