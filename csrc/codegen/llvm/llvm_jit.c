/* codegen/llvm/llvm_jit.c -- the CPU JIT: compile a kernel, link it, hand back entry points.
 *
 * A QdCpuJit is one ORC LLJIT with its main JITDylib, plus the host target of target_cpu.c.
 * Symbols the generated code may reference, in the order the dylib resolves them:
 *   1. absolute symbols defined at creation: the runtime functions the caller passes (print,
 *      assert, half / bfloat16 conversions) and the libm functions of llvm_intrinsics.def;
 *   2. `qd_field_<name>`, defined the first time a compiled kernel references the field, from
 *      the caller's resolver (field memory never moves while the JIT lives);
 *   3. anything else the optimizer introduced (sincosf, ...) from the host process.
 *
 * qd_cpu_jit_compile is the whole per-kernel pipeline (see codegen.h): verify, emit into a
 * fresh LLVMContext, LLVM-verify, optimize, emit an object, drop the context, link, look up.
 * Compiles on one JIT are serialized by its mutex; the target machine is not thread-safe.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* strdup, clock_gettime */
#endif
#include "llvm_internal.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A growable set of heap strings (kernel symbols and field names defined so far). Linear
 * search: a JIT holds at most a few thousand names and looks one up per compile. */
typedef struct NameSet {
    char **names; /* heap copies */
    uint32_t len; /* names in use */
    uint32_t cap; /* names allocated */
} NameSet;

struct QdCpuJit {
    QdLlvmOptions opts;       /* options; opts.dump_dir points at dump_dir below */
    char *dump_dir;           /* heap copy, or NULL */
    QdCpuTarget target;       /* host target machine */
    LLVMOrcLLJITRef lljit;    /* the ORC JIT */
    LLVMOrcJITDylibRef dylib; /* its main dylib (owned by lljit) */
    pthread_mutex_t lock;     /* serializes compiles */
    NameSet kernels;          /* kernel symbol prefixes in use */
    NameSet fields;           /* fields with a defined qd_field_<name> */
    char *identity;           /* qd_cpu_jit_identity (heap) */
};

/* x to the integer power n, by repeated squaring (compiler-rt's __powidf2 contract: a
 * negative n gives 1 / x^-n). */
static double
qd_powi_f64(double x, int n)
{
    bool is_negative = n < 0;
    double r = 1.0;
    for (unsigned m = is_negative ? 0u - (unsigned)n : (unsigned)n; m; m >>= 1, x *= x) {
        if (m & 1) {
            r *= x;
        }
    }
    return is_negative ? 1.0 / r : r;
}

static float
qd_powi_f32(float x, int n)
{
    bool is_negative = n < 0;
    float r = 1.0f;
    for (unsigned m = is_negative ? 0u - (unsigned)n : (unsigned)n; m; m >>= 1, x *= x) {
        if (m & 1) {
            r *= x;
        }
    }
    return is_negative ? 1.0f / r : r;
}

/* libm functions and compiler-rt helpers defined as JIT symbols. */
static const QdJitSymbol libm_symbols[] = {
#define QD_MATH(name, intrinsic, f32_fn, f64_fn, on_gpu, gpu_fast)                                 \
    {#f32_fn, (QdJitFunction)f32_fn}, {#f64_fn, (QdJitFunction)f64_fn},
#define QD_LIBCALL(fn) {#fn, (QdJitFunction)fn},
#define QD_LIBCALL_AS(symbol, fn) {#symbol, (QdJitFunction)fn},
#include "llvm_intrinsics.def"
#undef QD_LIBCALL_AS
#undef QD_LIBCALL
#undef QD_MATH
};

void
qd_llvm_options_default(QdLlvmOptions *opts)
{
    memset(opts, 0, sizeof(*opts));
    opts->opt_level = 3;
    opts->fast_math = true;
}

/* Monotonic time in milliseconds, for the compile-time split in QdCompiledKernel. */
static double
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/***** name sets *****/

/* Whether `name` is in the set. */
static bool
name_set_has(const NameSet *set, const char *name)
{
    for (uint32_t i = 0; i < set->len; i++) {
        if (strcmp(set->names[i], name) == 0) {
            return true;
        }
    }
    return false;
}

/* Adds a copy of `name`; -1 when out of memory. */
static int
name_set_add(NameSet *set, const char *name)
{
    if (set->len == set->cap) {
        uint32_t cap = set->cap ? set->cap * 2 : 16;
        char **grown = realloc(set->names, cap * sizeof(*grown));
        if (grown == NULL) {
            return -1;
        }
        set->names = grown;
        set->cap = cap;
    }
    set->names[set->len] = strdup(name);
    if (set->names[set->len] == NULL) {
        return -1;
    }
    set->len++;
    return 0;
}

static void
name_set_free(NameSet *set)
{
    for (uint32_t i = 0; i < set->len; i++) {
        free(set->names[i]);
    }
    free(set->names);
    memset(set, 0, sizeof(*set));
}

/***** symbols *****/

/* Reports an LLVMErrorRef (consumed) as a diag of `kind`; returns -1. */
static int
jit_error(QdCtx *ctx, QdErrKind kind, const char *what, LLVMErrorRef err)
{
    char *msg = LLVMGetErrorMessage(err);
    qd_error(ctx, (QdLoc){0}, kind, "%s: %s", what, msg);
    LLVMDisposeErrorMessage(msg);
    return -1;
}

/* Defines absolute symbols names[i] = addresses[i] in the main dylib. */
static int
define_absolute(QdCtx *ctx, QdCpuJit *jit, const char *const *names, const uintptr_t *addresses,
                uint32_t n)
{
    LLVMOrcCSymbolMapPairs pairs = calloc(n ? n : 1, sizeof(*pairs));
    LLVMJITSymbolFlags flags = {
        LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable, 0};
    LLVMOrcMaterializationUnitRef unit;
    LLVMErrorRef err;

    if (pairs == NULL) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory");
    }
    for (uint32_t i = 0; i < n; i++) {
        pairs[i].Name = LLVMOrcLLJITMangleAndIntern(jit->lljit, names[i]);
        pairs[i].Sym.Address = (LLVMOrcExecutorAddress)addresses[i];
        pairs[i].Sym.Flags = flags;
    }
    /* The unit takes over the name references; the array stays ours. */
    unit = LLVMOrcAbsoluteSymbols(pairs, n);
    free(pairs);
    err = LLVMOrcJITDylibDefine(jit->dylib, unit);
    if (err != NULL) {
        LLVMOrcDisposeMaterializationUnit(unit);
        return jit_error(ctx, QD_ERR_COMPILATION, "cannot define JIT symbols", err);
    }
    return 0;
}

/* One absolute symbol (a field's base address). */
static int
define_address(QdCtx *ctx, QdCpuJit *jit, const char *name, uintptr_t address)
{
    return define_absolute(ctx, jit, &name, &address, 1);
}

/* Absolute symbols for functions of this process (runtime and libm). */
static int
define_functions(QdCtx *ctx, QdCpuJit *jit, const QdJitSymbol *symbols, uint32_t n)
{
    const char **names = calloc(n ? n : 1, sizeof(*names));
    uintptr_t *addresses = calloc(n ? n : 1, sizeof(*addresses));
    int rc = -1;

    if (names == NULL || addresses == NULL) {
        qd_error(ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (uint32_t i = 0; i < n; i++) {
        names[i] = symbols[i].name;
        addresses[i] = (uintptr_t)symbols[i].address;
    }
    rc = define_absolute(ctx, jit, names, addresses, n);
done:
    free(addresses);
    free(names);
    return rc;
}

QdCpuJit *
qd_cpu_jit_new(QdCtx *ctx, const QdLlvmOptions *opts, const QdJitSymbol *symbols, uint32_t nsymbols)
{
    QdCpuJit *jit = calloc(1, sizeof(*jit));
    LLVMOrcDefinitionGeneratorRef process = NULL;
    LLVMErrorRef err;

    if (jit == NULL) {
        qd_error(ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&jit->lock, NULL);
    jit->opts = *opts;
    if (opts->dump_dir != NULL) {
        jit->dump_dir = strdup(opts->dump_dir);
        if (jit->dump_dir == NULL) {
            qd_error(ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory");
            goto error;
        }
    }
    jit->opts.dump_dir = jit->dump_dir;
    if (qd_cpu_target_init(ctx, &jit->target, opts->opt_level) < 0) {
        goto error;
    }
    size_t id_size = strlen(jit->target.identity) + 32;
    if ((jit->identity = malloc(id_size)) == NULL) {
        qd_error(ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory");
        goto error;
    }
    snprintf(jit->identity, id_size, "%s|fast_math=%d|simt=%d", jit->target.identity,
             jit->opts.fast_math ? 1 : 0, jit->opts.cpu_simt ? 1 : 0);
    err = LLVMOrcCreateLLJIT(&jit->lljit, NULL);
    if (err != NULL) {
        jit_error(ctx, QD_ERR_COMPILATION, "cannot create the LLVM JIT", err);
        goto error;
    }
    jit->dylib = LLVMOrcLLJITGetMainJITDylib(jit->lljit);
    err = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
        &process, LLVMOrcLLJITGetGlobalPrefix(jit->lljit), NULL, NULL);
    if (err != NULL) {
        jit_error(ctx, QD_ERR_COMPILATION, "cannot search the process for symbols", err);
        goto error;
    }
    LLVMOrcJITDylibAddGenerator(jit->dylib, process);
    if (define_functions(ctx, jit, libm_symbols, QD_ARRAY_LEN(libm_symbols)) < 0 ||
        define_functions(ctx, jit, symbols, nsymbols) < 0) {
        goto error;
    }
    return jit;
error:
    qd_cpu_jit_free(jit);
    return NULL;
}

void
qd_cpu_jit_free(QdCpuJit *jit)
{
    if (jit == NULL) {
        return;
    }
    if (jit->lljit != NULL) {
        LLVMErrorRef err = LLVMOrcDisposeLLJIT(jit->lljit);
        if (err != NULL) {
            LLVMConsumeError(err);
        }
    }
    qd_cpu_target_release(&jit->target);
    name_set_free(&jit->kernels);
    name_set_free(&jit->fields);
    pthread_mutex_destroy(&jit->lock);
    free(jit->dump_dir);
    free(jit->identity);
    free(jit);
}

void
qd_compiled_kernel_release(QdCompiledKernel *kernel)
{
    free(kernel->tasks);
    free(kernel->arg_offsets);
    free(kernel->result_types);
    memset(kernel, 0, sizeof(*kernel));
}

/***** one compile *****/

/* A symbol prefix for the kernel that no earlier compile on this JIT used: the kernel name, or
 * the name with ".<n>". */
static int
reserve_symbol(QdCtx *ctx, QdCpuJit *jit, const char *name, char *out, size_t size)
{
    snprintf(out, size, "%.100s", name);
    for (unsigned n = 1; name_set_has(&jit->kernels, out); n++) {
        snprintf(out, size, "%.100s.%u", name, n);
    }
    if (name_set_add(&jit->kernels, out) < 0) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory");
    }
    return 0;
}

/* Defines qd_field_<name> for each of the `n` field names the JIT lacks. */
static int
define_field_names(QdCtx *ctx, QdCpuJit *jit, char *const *names, uint32_t n,
                   QdFieldResolver resolve, void *user)
{
    for (uint32_t i = 0; i < n; i++) {
        char symbol[300];
        if (name_set_has(&jit->fields, names[i])) {
            continue;
        }
        const void *address = resolve ? resolve(user, names[i]) : NULL;
        if (address == NULL) {
            return qd_error(ctx, (QdLoc){0}, QD_ERR_COMPILATION,
                            "field @%s has no memory (not resolved)", names[i]);
        }
        snprintf(symbol, sizeof(symbol), "qd_field_%s", names[i]);
        RETURN_IF_ERROR(define_address(ctx, jit, symbol, (uintptr_t)address));
        if (name_set_add(&jit->fields, names[i]) < 0) {
            return qd_error(ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory");
        }
    }
    return 0;
}

/* The names of the fields the emitter referenced (malloc'd array of heap strings). */
static int
referenced_fields(QdCtx *ctx, const Emitter *e, char ***names, uint32_t *n)
{
    *n = 0;
    *names = calloc(e->m->fields.len + 1, sizeof(char *));
    if (*names == NULL) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory");
    }
    for (uint32_t i = 0; i < e->m->fields.len; i++) {
        if (e->field_globals[i] == NULL) {
            continue;
        }
        if (((*names)[*n] = strdup(e->m->fields.data[i]->name)) == NULL) {
            return qd_error(ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory");
        }
        (*n)++;
    }
    return 0;
}

void
qd_cpu_artifact_release(QdCpuArtifact *artifact)
{
    for (uint32_t i = 0; i < artifact->nfields; i++) {
        free(artifact->fields[i]);
    }
    free(artifact->fields);
    free(artifact->object);
    memset(artifact, 0, sizeof(*artifact));
}

const char *
qd_llvm_version(void)
{
    static char text[48];
    if (!text[0]) {
        unsigned major = 0, minor = 0, patch = 0;
        LLVMGetVersion(&major, &minor, &patch);
        snprintf(text, sizeof(text), "%u.%u.%u", major, minor, patch);
    }
    return text;
}

const char *
qd_llvm_host_cpu(void)
{
    static char text[64];
    if (!text[0]) {
        char *name = LLVMGetHostCPUName();
        snprintf(text, sizeof(text), "%s", name ? name : "unknown");
        LLVMDisposeMessage(name);
    }
    return text;
}

const char *
qd_cpu_jit_identity(const QdCpuJit *jit)
{
    return jit->identity;
}

/* Looks up the task entry points of `out` (linking the object on the first lookup). With
 * `bounds_only`, only the bounds functions the emitter produced (grain > 0). */
static int
lookup_tasks(QdCtx *ctx, QdCpuJit *jit, QdCompiledKernel *out, bool bounds_only)
{
    for (uint32_t i = 0; i < out->ntasks; i++) {
        char name[160];
        LLVMOrcExecutorAddress address = 0;
        LLVMErrorRef err;
        snprintf(name, sizeof(name), "%s.t%u", out->symbol, i);
        if (!bounds_only) {
            err = LLVMOrcLLJITLookup(jit->lljit, &address, name);
            if (err != NULL) {
                return jit_error(ctx, QD_ERR_COMPILATION, "cannot link the kernel", err);
            }
            out->tasks[i].run = (QdTaskEntry)(uintptr_t)address;
        }
        if (out->tasks[i].grain == 0) {
            continue; /* a serial task, or no bounds function */
        }
        strcat(name, ".bounds");
        err = LLVMOrcLLJITLookup(jit->lljit, &address, name);
        if (err != NULL) {
            return jit_error(ctx, QD_ERR_COMPILATION, "cannot link the kernel", err);
        }
        out->tasks[i].bounds = (QdTaskBounds)(uintptr_t)address;
    }
    return 0;
}

QdFunc *
qd_llvm_prepare_kernel(QdCtx *ctx, QdModule *m, const char *kernel_name, QdCompiledKernel *out)
{
    QdFunc *f = qd_module_find_func(m, kernel_name);
    if (f == NULL || f->kind != QD_FUNC_KERNEL) {
        qd_error(ctx, (QdLoc){0}, QD_ERR_COMPILATION, "no kernel @%s in the module", kernel_name);
        return NULL;
    }
    if (qd_module_verify(ctx, m, QD_VERIFY_CONCRETE) < 0) {
        return NULL;
    }
    out->nparams = f->nparams;
    out->arg_offsets = calloc(f->nparams ? f->nparams : 1, sizeof(uint32_t));
    if (out->arg_offsets == NULL) {
        qd_error(ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory");
        return NULL;
    }
    qd_arg_layout(f, out->arg_offsets, &out->args_size);
    return f;
}

/* Emits, verifies, optimizes and turns into an object; *object is the caller's. */
static int
build_object(QdCtx *ctx, QdCpuJit *jit, Emitter *e, QdCompiledKernel *out,
             LLVMMemoryBufferRef *object)
{
    char *error = NULL;
    double t0 = now_ms();

    LLVMSetTarget(e->mod, jit->target.triple);
    LLVMSetDataLayout(e->mod, jit->target.data_layout);
    RETURN_IF_ERROR(qd_llvm_emit_kernel(e, out->symbol, out));
    if (LLVMVerifyModule(e->mod, LLVMReturnStatusAction, &error)) {
        qd_error(ctx, e->kernel->loc, QD_ERR_INTERNAL, "invalid LLVM IR for @%s: %s",
                 e->kernel->name, error);
        LLVMDisposeMessage(error);
        return -1;
    }
    LLVMDisposeMessage(error);
    double t1 = now_ms();
    RETURN_IF_ERROR(qd_cpu_target_optimize(ctx, &jit->target, e->mod, &jit->opts));
    double t2 = now_ms();
    RETURN_IF_ERROR(qd_cpu_target_emit(ctx, &jit->target, e->mod, &jit->opts, object));
    out->ms_emit = t1 - t0;
    out->ms_optimize = t2 - t1;
    out->ms_codegen = now_ms() - t2;
    return 0;
}

/* qd_cpu_jit_compile and qd_cpu_jit_compile_bounds: the same pipeline, the latter with the
 * emitter in bounds-only mode. */
static int
jit_compile(QdCtx *ctx, QdCpuJit *jit, QdModule *m, const char *kernel_name, const char *symbol,
            QdFieldResolver resolve, void *resolve_user, bool bounds_only, QdCompiledKernel *out,
            QdCpuArtifact *artifact)
{
    Emitter e = {0};
    QdArena scratch;
    LLVMContextRef llctx = NULL;
    LLVMMemoryBufferRef object = NULL;
    LLVMErrorRef err;
    int rc = -1;

    memset(out, 0, sizeof(*out));
    qd_arena_init(&scratch);
    pthread_mutex_lock(&jit->lock);
    char **fields = NULL;
    uint32_t nfields = 0;
    e.kernel = qd_llvm_prepare_kernel(ctx, m, kernel_name, out);
    if (e.kernel == NULL ||
        reserve_symbol(ctx, jit, symbol ? symbol : kernel_name, out->symbol,
                       sizeof(out->symbol)) < 0) {
        goto done;
    }
    llctx = LLVMContextCreate();
    e.ctx = ctx;
    e.target = QD_LLVM_TARGET_CPU;
    e.bounds_only = bounds_only;
    e.opts = &jit->opts;
    e.scratch = &scratch;
    e.m = m;
    e.llctx = llctx;
    e.arg_offsets = out->arg_offsets;
    e.mod = LLVMModuleCreateWithNameInContext(out->symbol, llctx);
    if (build_object(ctx, jit, &e, out, &object) < 0 ||
        referenced_fields(ctx, &e, &fields, &nfields) < 0 ||
        define_field_names(ctx, jit, fields, nfields, resolve, resolve_user) < 0) {
        goto done;
    }
    if (artifact != NULL) {
        artifact->object_size = LLVMGetBufferSize(object);
        artifact->object = malloc(artifact->object_size + 1);
        if (artifact->object == NULL) {
            qd_error(ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory");
            goto done;
        }
        memcpy(artifact->object, LLVMGetBufferStart(object), artifact->object_size);
        artifact->fields = fields;
        artifact->nfields = nfields;
        fields = NULL;
    }
    double t0 = now_ms();
    err = LLVMOrcLLJITAddObjectFile(jit->lljit, jit->dylib, object);
    object = NULL; /* owned by the JIT now, whatever the outcome */
    if (err != NULL) {
        jit_error(ctx, QD_ERR_COMPILATION, "cannot add the kernel to the JIT", err);
        goto done;
    }
    if (lookup_tasks(ctx, jit, out, bounds_only) < 0) {
        goto done;
    }
    out->ms_link = now_ms() - t0;
    rc = 0;
done:
    if (fields != NULL) {
        QdCpuArtifact tmp = {.fields = fields, .nfields = nfields};
        qd_cpu_artifact_release(&tmp);
    }
    if (object != NULL) {
        LLVMDisposeMemoryBuffer(object);
    }
    if (e.mod != NULL) {
        LLVMDisposeModule(e.mod);
    }
    if (llctx != NULL) {
        LLVMContextDispose(llctx);
    }
    pthread_mutex_unlock(&jit->lock);
    qd_arena_free(&scratch);
    if (rc < 0) {
        qd_compiled_kernel_release(out);
        if (artifact != NULL) {
            qd_cpu_artifact_release(artifact);
        }
    }
    return rc;
}

int
qd_cpu_jit_compile(QdCtx *ctx, QdCpuJit *jit, QdModule *m, const char *kernel_name,
                   QdFieldResolver resolve, void *resolve_user, QdCompiledKernel *out)
{
    return jit_compile(ctx, jit, m, kernel_name, NULL, resolve, resolve_user, false, out, NULL);
}

int
qd_cpu_jit_compile_artifact(QdCtx *ctx, QdCpuJit *jit, QdModule *m, const char *kernel_name,
                            const char *symbol, QdFieldResolver resolve, void *resolve_user,
                            QdCompiledKernel *out, QdCpuArtifact *artifact)
{
    return jit_compile(ctx, jit, m, kernel_name, symbol, resolve, resolve_user, false, out,
                       artifact);
}

int
qd_cpu_jit_load(QdCtx *ctx, QdCpuJit *jit, const QdCpuArtifact *artifact,
                QdFieldResolver resolve, void *resolve_user, bool bounds_only,
                QdCompiledKernel *kernel)
{
    int rc = -1;
    double t0 = now_ms();
    pthread_mutex_lock(&jit->lock);
    if (!name_set_has(&jit->kernels, kernel->symbol)) {
        if (define_field_names(ctx, jit, artifact->fields, artifact->nfields, resolve,
                               resolve_user) < 0) {
            goto done;
        }
        LLVMMemoryBufferRef object = LLVMCreateMemoryBufferWithMemoryRangeCopy(
            artifact->object, artifact->object_size, kernel->symbol);
        LLVMErrorRef err = LLVMOrcLLJITAddObjectFile(jit->lljit, jit->dylib, object);
        if (err != NULL) {
            jit_error(ctx, QD_ERR_COMPILATION, "cannot add the cached kernel to the JIT", err);
            goto done;
        }
        if (name_set_add(&jit->kernels, kernel->symbol) < 0) {
            qd_error(ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory");
            goto done;
        }
    }
    rc = lookup_tasks(ctx, jit, kernel, bounds_only);
    kernel->ms_link = now_ms() - t0;
done:
    pthread_mutex_unlock(&jit->lock);
    return rc;
}

int
qd_cpu_jit_compile_bounds(QdCtx *ctx, QdCpuJit *jit, QdModule *m, const char *kernel_name,
                          QdCompiledKernel *out)
{
    return jit_compile(ctx, jit, m, kernel_name, NULL, NULL, NULL, true, out, NULL);
}

int
qd_cpu_jit_compile_bounds_artifact(QdCtx *ctx, QdCpuJit *jit, QdModule *m,
                                   const char *kernel_name, const char *symbol,
                                   QdCompiledKernel *out, QdCpuArtifact *artifact)
{
    return jit_compile(ctx, jit, m, kernel_name, symbol, NULL, NULL, true, out, artifact);
}
