/* codegen/llvm/target_nvptx.c -- NVIDIA GPUs as an LLVM target: QIR kernel -> PTX text.
 *
 * Pipeline of qd_nvptx_compile (codegen.h, NVPTX KERNEL ABI, says what comes out):
 *     verify (concrete), argument layout
 *     -> llvm_emit*.c with Emitter.target = NVPTX: one kernel per task, in a fresh context
 *     -> LLVM verifier
 *     -> libdevice linked when a __nv_* function is called: only the functions called and
 *        what they call (its call graph is read once per process), from a lazily loaded
 *        module (LLVMLinkModules2)
 *     -> everything but the task kernels and the field globals internalized, fast-math
 *        attributes and the nvvm-reflect-ftz flag set
 *     -> default<On> with the NVPTX target machine (its pipeline runs NVVMReflect, so
 *        libdevice's __nvvm_reflect branches fold; global DCE drops the unused rest of it)
 *     -> cheap lane-dependent values recomputed where they are used (nvptx_remat.c)
 *     -> PTX from the NVPTX asm printer.
 * The target machine is nvptx64-nvidia-cuda for sm_XY, XY the device's compute capability
 * capped at the newest sm LLVM 19 knows (sm_90); its PTX ISA is LLVM's default for that sm
 * (7.8 for sm_90), which every driver able to run sm_90 accepts. PTX for sm_90 also runs on
 * later GPUs: the driver's linker JIT-compiles it for the device at hand.
 *
 * libdevice (libdevice.10.bc, NVIDIA's bitcode math library) is searched in the order of
 * QdNvptxOptions.libdevice_paths (the Python layer builds it: $QD_LIBDEVICE_PATH,
 * $CUDA_HOME/nvvm/libdevice, $CUDA_PATH/..., /usr/local/cuda/..., then Python packages that
 * ship it); the first readable file is read once per process and parsed into each compile
 * that needs it. A kernel that needs it when none is found fails with the list of places
 * searched. Compiles are serialized by one mutex (the libdevice cache and LLVM's target
 * registration are process-wide).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* strdup */
#endif
#include "llvm_internal.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/BitReader.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Support.h>
#include <llvm-c/Target.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NVPTX_TRIPLE "nvptx64-nvidia-cuda"

/* The sm versions LLVM 19's NVPTX backend knows, ascending. */
static const int known_sms[] = {20, 21, 30, 32, 35, 37, 50, 52, 53, 60, 61, 62,
                                70, 72, 75, 80, 86, 87, 89, 90};

static pthread_mutex_t nvptx_lock = PTHREAD_MUTEX_INITIALIZER;
static bool is_target_ready;   /* NVPTX target registered (under nvptx_lock) */
static char *libdevice_bytes;  /* the libdevice file, read once (under nvptx_lock) */
static size_t libdevice_size;  /* its size */

void
qd_nvptx_options_default(QdNvptxOptions *opts)
{
    memset(opts, 0, sizeof(*opts));
    qd_llvm_options_default(&opts->llvm);
    opts->sm = 90;
    opts->default_block_dim = 128;
}

int
qd_nvptx_target_sm(int sm)
{
    int best = 0;
    for (size_t i = 0; i < QD_ARRAY_LEN(known_sms); i++) {
        if (known_sms[i] <= sm) {
            best = known_sms[i];
        }
    }
    return best;
}

void
qd_nvptx_kernel_release(QdNvptxKernel *kernel)
{
    qd_compiled_kernel_release(&kernel->layout);
    free(kernel->ptx);
    for (uint32_t i = 0; i < kernel->nfields; i++) {
        free(kernel->fields[i]);
    }
    free(kernel->fields);
    for (uint32_t i = 0; i < kernel->nasserts; i++) {
        free(kernel->asserts[i]);
        free(kernel->assert_kinds[i]);
    }
    free(kernel->asserts);
    free(kernel->assert_kinds);
    memset(kernel, 0, sizeof(*kernel));
}

/***** target machine and libdevice *****/

/* The resident blocks per SM of compute capability sm (CUDA's occupancy tables), 0 where
 * not listed. */
static uint32_t
max_blocks_per_sm(int sm)
{
    switch (sm) {
    case 70:
    case 80:
    case 90:
        return 32;
    case 89:
        return 24;
    case 75:
    case 86:
        return 16;
    default:
        return 0;
    }
}

/* A target machine for sm_<sm> (caller holds nvptx_lock). */
static LLVMTargetMachineRef
create_machine(QdCtx *ctx, int sm, int opt_level)
{
    static const LLVMCodeGenOptLevel levels[4] = {LLVMCodeGenLevelNone, LLVMCodeGenLevelLess,
                                                  LLVMCodeGenLevelDefault,
                                                  LLVMCodeGenLevelAggressive};
    LLVMTargetRef target = NULL;
    char *error = NULL;
    char cpu[16];

    if (!is_target_ready) {
        LLVMInitializeNVPTXTargetInfo();
        LLVMInitializeNVPTXTarget();
        LLVMInitializeNVPTXTargetMC();
        LLVMInitializeNVPTXAsmPrinter();
        /* 32-bit pointers to shared, constant and local memory (the data layout's p3/p4/p5),
         * as nvcc's code has: shared-memory addressing in 32-bit registers and arithmetic. */
        const char *argv[] = {"quadrants", "-nvptx-short-ptr"};
        LLVMParseCommandLineOptions(2, argv, NULL);
        is_target_ready = true;
    }
    if (LLVMGetTargetFromTriple(NVPTX_TRIPLE, &target, &error)) {
        qd_llvm_message_error(ctx, QD_ERR_COMPILATION, "LLVM has no NVPTX target", error);
        return NULL;
    }
    snprintf(cpu, sizeof(cpu), "sm_%d", sm);
    LLVMTargetMachineRef tm = LLVMCreateTargetMachine(
        target, NVPTX_TRIPLE, cpu, "", levels[opt_level], LLVMRelocDefault, LLVMCodeModelDefault);
    if (tm == NULL) {
        qd_error(ctx, (QdLoc){0}, QD_ERR_COMPILATION, "cannot create an NVPTX machine for %s",
                 cpu);
    }
    return tm;
}

/* Reads the first readable candidate into libdevice_bytes (caller holds nvptx_lock). */
static int
load_libdevice(QdCtx *ctx, const QdNvptxOptions *opts)
{
    char searched[768] = "";
    size_t used = 0;

    if (libdevice_bytes != NULL) {
        return 0;
    }
    for (uint32_t i = 0; i < opts->nlibdevice_paths; i++) {
        const char *path = opts->libdevice_paths[i];
        FILE *f = path && path[0] ? fopen(path, "rb") : NULL;
        if (path && path[0] && used < sizeof(searched)) {
            used += (size_t)snprintf(searched + used, sizeof(searched) - used, "%s%s",
                                     used ? ", " : "", path);
        }
        if (f == NULL) {
            continue;
        }
        long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
        char *bytes = size > 0 ? malloc((size_t)size) : NULL;
        bool ok = bytes != NULL && fseek(f, 0, SEEK_SET) == 0 &&
                  fread(bytes, 1, (size_t)size, f) == (size_t)size;
        fclose(f);
        if (ok) {
            libdevice_bytes = bytes;
            libdevice_size = (size_t)size;
            return 0;
        }
        free(bytes);
    }
    return qd_error(ctx, (QdLoc){0}, QD_ERR_COMPILATION,
                    "this kernel needs libdevice (libdevice.10.bc, CUDA's math library) and it "
                    "was not found; searched: %s. Set QD_LIBDEVICE_PATH or CUDA_HOME.",
                    searched[0] ? searched : "(no candidate paths)");
}

/* libdevice's call graph, built once per process (under nvptx_lock): for each function it
 * defines, its name and the functions it calls directly. A compile links only the functions its
 * kernel calls and what they call in turn; the rest of libdevice's ~350 functions are never read
 * (the module is loaded lazily) nor optimized. */
typedef struct LibFunction {
    char *name;       /* e.g. "__nv_expf" */
    uint32_t *callees; /* indices into lib_functions */
    uint32_t ncallees;
} LibFunction;

static LibFunction *lib_functions; /* sorted by name (under nvptx_lock) */
static uint32_t lib_nfunctions;

static int
compare_lib_names(const void *a, const void *b)
{
    return strcmp(((const LibFunction *)a)->name, ((const LibFunction *)b)->name);
}

/* Index of function `name` in lib_functions, or -1. */
static int64_t
lib_find(const char *name)
{
    LibFunction key = {.name = (char *)name};
    const LibFunction *hit =
        bsearch(&key, lib_functions, lib_nfunctions, sizeof(LibFunction), compare_lib_names);
    return hit ? hit - lib_functions : -1;
}

/* Builds lib_functions from libdevice_bytes (caller holds nvptx_lock). */
static int
build_lib_graph(QdCtx *ctx)
{
    if (lib_functions != NULL) {
        return 0;
    }
    LLVMContextRef llctx = LLVMContextCreate();
    LLVMMemoryBufferRef buffer =
        LLVMCreateMemoryBufferWithMemoryRange(libdevice_bytes, libdevice_size, "libdevice", 0);
    LLVMModuleRef lib = NULL;
    bool bad = LLVMParseBitcodeInContext2(llctx, buffer, &lib);
    LLVMDisposeMemoryBuffer(buffer);
    if (bad) {
        LLVMContextDispose(llctx);
        return qd_error(ctx, (QdLoc){0}, QD_ERR_COMPILATION,
                        "libdevice.10.bc is not valid LLVM bitcode");
    }
    uint32_t n = 0;
    for (LLVMValueRef f = LLVMGetFirstFunction(lib); f; f = LLVMGetNextFunction(f)) {
        n += !LLVMIsDeclaration(f);
    }
    LibFunction *fns = calloc(n ? n : 1, sizeof(LibFunction));
    uint32_t k = 0;
    for (LLVMValueRef f = LLVMGetFirstFunction(lib); fns && f; f = LLVMGetNextFunction(f)) {
        if (!LLVMIsDeclaration(f)) {
            size_t len = 0;
            const char *name = LLVMGetValueName2(f, &len);
            fns[k++].name = strndup(name, len);
        }
    }
    bool ok = fns != NULL;
    for (uint32_t i = 0; ok && i < n; i++) {
        ok = fns[i].name != NULL;
    }
    if (ok) {
        lib_functions = fns;
        lib_nfunctions = n;
        qsort(lib_functions, n, sizeof(LibFunction), compare_lib_names);
    }
    /* the callees of each function: direct calls to functions libdevice defines */
    for (uint32_t i = 0; ok && i < n; i++) {
        LLVMValueRef f = LLVMGetNamedFunction(lib, lib_functions[i].name);
        uint32_t cap = 0;
        for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); ok && bb;
             bb = LLVMGetNextBasicBlock(bb)) {
            for (LLVMValueRef in = LLVMGetFirstInstruction(bb); ok && in;
                 in = LLVMGetNextInstruction(in)) {
                if (LLVMGetInstructionOpcode(in) != LLVMCall) {
                    continue;
                }
                LLVMValueRef callee = LLVMGetCalledValue(in);
                size_t len = 0;
                const char *name = callee && LLVMIsAFunction(callee)
                                       ? LLVMGetValueName2(callee, &len) : NULL;
                int64_t j = name ? lib_find(name) : -1;
                if (j < 0) {
                    continue;
                }
                if (lib_functions[i].ncallees == cap) {
                    cap = cap ? 2 * cap : 8;
                    uint32_t *grown = realloc(lib_functions[i].callees, cap * sizeof(uint32_t));
                    ok = grown != NULL;
                    if (!ok) {
                        break;
                    }
                    lib_functions[i].callees = grown;
                }
                lib_functions[i].callees[lib_functions[i].ncallees++] = (uint32_t)j;
            }
        }
    }
    LLVMDisposeModule(lib);
    LLVMContextDispose(llctx);
    if (!ok) {
        if (lib_functions == NULL) {
            for (uint32_t i = 0; fns && i < n; i++) {
                free(fns[i].name);
            }
            free(fns);
        }
        /* a partial graph would drop needed functions: forget it (and leak what it holds) */
        lib_functions = NULL;
        lib_nfunctions = 0;
        return qd_error(ctx, (QdLoc){0}, QD_ERR_INTERNAL, "out of memory reading libdevice");
    }
    return 0;
}

/* Marks function i and everything it calls. */
static void
mark_needed(uint8_t *needed, uint32_t i)
{
    if (needed[i]) {
        return;
    }
    needed[i] = 1;
    for (uint32_t c = 0; c < lib_functions[i].ncallees; c++) {
        mark_needed(needed, lib_functions[i].callees[c]);
    }
}

/* Links the part of libdevice that mod calls into mod (caller holds nvptx_lock). */
static int
link_libdevice(QdCtx *ctx, LLVMModuleRef mod, const QdNvptxOptions *opts)
{
    LLVMModuleRef lib = NULL;

    RETURN_IF_ERROR(load_libdevice(ctx, opts));
    RETURN_IF_ERROR(build_lib_graph(ctx));
    uint8_t *needed = calloc(lib_nfunctions ? lib_nfunctions : 1, 1);
    if (needed == NULL) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_INTERNAL, "out of memory linking libdevice");
    }
    for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
        size_t len = 0;
        const char *name = LLVMGetValueName2(f, &len);
        int64_t i = LLVMIsDeclaration(f) ? lib_find(name) : -1;
        if (i >= 0) {
            mark_needed(needed, (uint32_t)i);
        }
    }
    /* Lazily loaded: only the bodies of the functions kept below are ever read (by the linker).
     * On success the module owns the buffer (not the bytes, which stay for the process). */
    LLVMMemoryBufferRef buffer =
        LLVMCreateMemoryBufferWithMemoryRange(libdevice_bytes, libdevice_size, "libdevice", 0);
    if (LLVMGetBitcodeModuleInContext2(LLVMGetModuleContext(mod), buffer, &lib)) {
        LLVMDisposeMemoryBuffer(buffer);
        free(needed);
        return qd_error(ctx, (QdLoc){0}, QD_ERR_COMPILATION,
                        "libdevice.10.bc is not valid LLVM bitcode");
    }
    LLVMValueRef f = LLVMGetFirstFunction(lib);
    while (f != NULL) {
        LLVMValueRef next = LLVMGetNextFunction(f);
        size_t len = 0;
        int64_t i = lib_find(LLVMGetValueName2(f, &len));
        /* bodies not yet read hold no uses: an unneeded function is referenced by nothing */
        if (i >= 0 && !needed[i] && LLVMGetFirstUse(f) == NULL) {
            LLVMDeleteFunction(f);
        }
        f = next;
    }
    free(needed);
    /* libdevice says nvptx64-nvidia-gpulibs; take ours so the linker does not warn */
    LLVMSetTarget(lib, LLVMGetTarget(mod));
    LLVMSetDataLayout(lib, LLVMGetDataLayoutStr(mod));
    if (LLVMLinkModules2(mod, lib)) { /* consumes lib */
        return qd_error(ctx, (QdLoc){0}, QD_ERR_INTERNAL, "linking libdevice failed");
    }
    return 0;
}

/***** module finishing *****/

/* Whether any value of the kernel is, holds or points to a 16-bit float. */
static bool
uses_half_floats(const QdFunc *kernel)
{
    for (uint32_t i = 0; i < kernel->nvalues; i++) {
        const QdType *t = kernel->values[i].type;
        while (t != NULL && t->elem != NULL) {
            t = t->elem;
        }
        if (t != NULL && (t->kind == QD_TY_BF16 || t->kind == QD_TY_F16)) {
            return true;
        }
    }
    return false;
}

/* Internal linkage for everything but the task kernels and the field globals, so that the
 * optimizer may inline and drop the rest (libdevice), and the fast-math attributes. FTZ is not
 * requested for kernels that use f16 or bf16: f16 arithmetic runs in f32 and cvt.ftz would
 * flush f16 subnormals, and LLVM 19 puts .ftz on bf16 instructions (setp, sub, min, ...),
 * which ptxas rejects. */
static void
finish_module(Emitter *e, const QdCompiledKernel *layout)
{
    size_t prefix = strlen(layout->symbol);
    bool is_ftz = e->ftz;
    LLVMAttributeRef ftz = LLVMCreateStringAttribute(e->llctx, "denormal-fp-math-f32", 20,
                                                     "preserve-sign,preserve-sign", 27);
    for (LLVMValueRef fn = LLVMGetFirstFunction(e->mod); fn; fn = LLVMGetNextFunction(fn)) {
        size_t len = 0;
        const char *name = LLVMGetValueName2(fn, &len);
        if (LLVMIsDeclaration(fn)) {
            continue;
        }
        bool is_task = len > prefix + 2 && strncmp(name, layout->symbol, prefix) == 0 &&
                       strncmp(name + prefix, "_t", 2) == 0;
        if (!is_task) {
            LLVMSetLinkage(fn, LLVMInternalLinkage);
        }
        if (is_ftz) {
            LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, ftz);
        }
    }
    for (LLVMValueRef g = LLVMGetFirstGlobal(e->mod); g; g = LLVMGetNextGlobal(g)) {
        size_t len = 0;
        const char *name = LLVMGetValueName2(g, &len);
        if (!LLVMIsDeclaration(g) && strncmp(name, "qd_field_", 9) != 0) {
            LLVMSetLinkage(g, LLVMInternalLinkage);
        }
    }
    LLVMAddModuleFlag(e->mod, LLVMModuleFlagBehaviorOverride, "nvvm-reflect-ftz", 16,
                      LLVMValueAsMetadata(LLVMConstInt(e->t_i32, e->opts->fast_math ? 1 : 0, 0)));
}

/* default<On> with the NVPTX machine, with the dumps around it. */
static int
optimize(QdCtx *ctx, LLVMTargetMachineRef tm, LLVMModuleRef mod, const QdLlvmOptions *opts)
{
    char pipeline[32];
    int level = opts->opt_level < 0 ? 0 : opts->opt_level > 3 ? 3 : opts->opt_level;
    LLVMPassBuilderOptionsRef pass_opts = LLVMCreatePassBuilderOptions();
    int rc = -1;

    snprintf(pipeline, sizeof(pipeline), "default<O%d>", level);
    qd_llvm_limit_vectorizers(mod);
    LLVMPassBuilderOptionsSetLoopVectorization(pass_opts, level >= 2);
    LLVMPassBuilderOptionsSetSLPVectorization(pass_opts, level >= 2);
    LLVMPassBuilderOptionsSetLoopUnrolling(pass_opts, level >= 2);
    LLVMErrorRef err = LLVMRunPasses(mod, pipeline, tm, pass_opts);
    if (err != NULL) {
        char *msg = LLVMGetErrorMessage(err);
        qd_error(ctx, (QdLoc){0}, QD_ERR_INTERNAL, "LLVM optimizer (NVPTX): %s", msg);
        LLVMDisposeErrorMessage(msg);
        goto done;
    }
    if (level > 0) {
        qd_nvptx_rematerialize(mod);
    }
    if (opts->print_kernel_llvm_ir_optimized &&
        qd_llvm_dump_ir(ctx, mod, opts, QD_DUMP_CUDA_IR_OPTIMIZED) < 0) {
        goto done;
    }
    rc = 0;
done:
    LLVMDisposePassBuilderOptions(pass_opts);
    return rc;
}

/* The PTX text of the module into out->ptx (and the .ptx dump). */
static int
emit_ptx(QdCtx *ctx, LLVMTargetMachineRef tm, LLVMModuleRef mod, const QdLlvmOptions *opts,
         QdNvptxKernel *out)
{
    LLVMMemoryBufferRef buffer = NULL;
    char *error = NULL;

    if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMAssemblyFile, &error, &buffer)) {
        return qd_llvm_message_error(ctx, QD_ERR_INTERNAL, "NVPTX code generation", error);
    }
    size_t size = LLVMGetBufferSize(buffer);
    out->ptx = malloc(size + 1);
    if (out->ptx == NULL) {
        LLVMDisposeMemoryBuffer(buffer);
        return qd_error(ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory");
    }
    memcpy(out->ptx, LLVMGetBufferStart(buffer), size);
    out->ptx[size] = '\0';
    out->ptx_size = size + 1;
    LLVMDisposeMemoryBuffer(buffer);
    if (opts->print_kernel_asm) {
        char path[1024];
        qd_llvm_dump_path(opts, QD_DUMP_PTX, path, sizeof(path));
        FILE *f = fopen(path, "w");
        if (f == NULL || fputs(out->ptx, f) < 0) {
            if (f) {
                fclose(f);
            }
            return qd_error(ctx, (QdLoc){0}, QD_ERR_COMPILATION, "cannot write %s", path);
        }
        fclose(f);
    }
    return 0;
}

/* Copies the emitter's findings (fields read, assert messages) into out. */
static int
collect_facts(Emitter *e, QdNvptxKernel *out)
{
    out->fields = calloc(e->m->fields.len + 1, sizeof(char *));
    out->asserts = calloc(e->nasserts + 1, sizeof(char *));
    out->assert_kinds = calloc(e->nasserts + 1, sizeof(char *));
    if (out->fields == NULL || out->asserts == NULL || out->assert_kinds == NULL) {
        return qd_error(e->ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory");
    }
    for (uint32_t i = 0; i < e->m->fields.len; i++) {
        if (e->field_globals[i] != NULL) {
            out->fields[out->nfields] = strdup(e->m->fields.data[i]->name);
            if (out->fields[out->nfields++] == NULL) {
                return qd_error(e->ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory");
            }
        }
    }
    for (uint32_t i = 0; i < e->nasserts; i++) {
        const QdLlvmAssert *a = &e->asserts[i];
        out->asserts[i] = strdup(a->format ? a->format : "");
        out->assert_kinds[i] = strdup(a->kinds ? a->kinds : "");
        out->nasserts++;
        if (out->asserts[i] == NULL || out->assert_kinds[i] == NULL) {
            return qd_error(e->ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory");
        }
    }
    out->has_print = e->has_print;
    return 0;
}

/* "qd_" + the kernel name with characters PTX identifiers cannot hold replaced by '_'. */
static void
make_symbol(const char *name, char *out, size_t size)
{
    size_t n = (size_t)snprintf(out, size, "qd_%.100s", name);
    for (size_t i = 3; i < n && i < size; i++) {
        char c = out[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        out[i] = ok ? c : '_';
    }
}

/* LLVM diagnostics of an NVPTX compile: warnings and remarks are dropped (the grid-stride
 * loop asks for interleaving, and LLVM warns on stderr about every loop it cannot interleave,
 * which is expected for loops with calls or atomics); errors are printed as LLVM would. */
static void
on_diagnostic(LLVMDiagnosticInfoRef info, void *user)
{
    (void)user;
    if (LLVMGetDiagInfoSeverity(info) == LLVMDSError) {
        char *text = LLVMGetDiagInfoDescription(info);
        fprintf(stderr, "LLVM error (NVPTX): %s\n", text);
        LLVMDisposeMessage(text);
    }
}

/***** the pipeline *****/

int
qd_nvptx_compile(QdCtx *ctx, QdModule *m, const char *kernel_name, const QdNvptxOptions *opts,
                 QdNvptxKernel *out)
{
    Emitter e = {0};
    QdArena scratch;
    LLVMContextRef llctx = NULL;
    LLVMTargetMachineRef tm = NULL;
    LLVMTargetDataRef layout = NULL;
    char *layout_text = NULL;
    char *error = NULL;
    int rc = -1;

    memset(out, 0, sizeof(*out));
    qd_arena_init(&scratch);
    pthread_mutex_lock(&nvptx_lock);
    out->sm = qd_nvptx_target_sm(opts->sm);
    if (out->sm == 0) {
        qd_error(ctx, (QdLoc){0}, QD_ERR_COMPILATION,
                 "GPUs of compute capability %d.%d are too old for this compiler", opts->sm / 10,
                 opts->sm % 10);
        goto done;
    }
    e.kernel = qd_llvm_prepare_kernel(ctx, m, kernel_name, &out->layout);
    if (e.kernel == NULL) {
        goto done;
    }
    make_symbol(kernel_name, out->layout.symbol, sizeof(out->layout.symbol));
    tm = create_machine(ctx, out->sm, opts->llvm.opt_level < 0   ? 0
                                      : opts->llvm.opt_level > 3 ? 3
                                                                 : opts->llvm.opt_level);
    if (tm == NULL) {
        goto done;
    }
    llctx = LLVMContextCreate();
    LLVMContextSetDiagnosticHandler(llctx, on_diagnostic, NULL);
    e.ctx = ctx;
    e.target = QD_LLVM_TARGET_NVPTX;
    e.opts = &opts->llvm;
    e.scratch = &scratch;
    e.m = m;
    e.llctx = llctx;
    e.arg_offsets = out->layout.arg_offsets;
    e.args_size = out->layout.args_size;
    e.default_block_dim = opts->default_block_dim ? opts->default_block_dim : 128;
    e.max_blocks_per_sm = max_blocks_per_sm(opts->sm);
    e.sm = out->sm;
    e.ftz = opts->llvm.fast_math && !uses_half_floats(e.kernel);
    e.mod = LLVMModuleCreateWithNameInContext(out->layout.symbol, llctx);
    layout = LLVMCreateTargetDataLayout(tm);
    layout_text = LLVMCopyStringRepOfTargetData(layout);
    LLVMSetTarget(e.mod, NVPTX_TRIPLE);
    LLVMSetDataLayout(e.mod, layout_text);
    if (qd_llvm_emit_kernel(&e, out->layout.symbol, &out->layout) < 0) {
        goto done;
    }
    if (LLVMVerifyModule(e.mod, LLVMReturnStatusAction, &error)) {
        qd_error(ctx, e.kernel->loc, QD_ERR_INTERNAL, "invalid LLVM IR for @%s (NVPTX): %s",
                 e.kernel->name, error);
        goto done;
    }
    if (collect_facts(&e, out) < 0) {
        goto done;
    }
    if (opts->llvm.print_kernel_llvm_ir &&
        qd_llvm_dump_ir(ctx, e.mod, &opts->llvm, QD_DUMP_CUDA_IR) < 0) {
        goto done;
    }
    if (e.uses_libdevice && link_libdevice(ctx, e.mod, opts) < 0) {
        goto done;
    }
    finish_module(&e, &out->layout);
    if (optimize(ctx, tm, e.mod, &opts->llvm) < 0 || emit_ptx(ctx, tm, e.mod, &opts->llvm, out) < 0) {
        goto done;
    }
    rc = 0;
done:
    LLVMDisposeMessage(error);
    LLVMDisposeMessage(layout_text);
    if (layout != NULL) {
        LLVMDisposeTargetData(layout);
    }
    if (e.mod != NULL) {
        LLVMDisposeModule(e.mod);
    }
    if (llctx != NULL) {
        LLVMContextDispose(llctx);
    }
    if (tm != NULL) {
        LLVMDisposeTargetMachine(tm);
    }
    pthread_mutex_unlock(&nvptx_lock);
    qd_arena_free(&scratch);
    if (rc < 0) {
        qd_nvptx_kernel_release(out);
    }
    return rc;
}
