/* codegen/llvm/target_cpu.c -- the host CPU as an LLVM target: machine, optimizer, object.
 *
 * One QdCpuTarget per JIT: the target machine is created once (host CPU name and features,
 * position-independent code, small code model) and reused for every kernel, since creating one
 * costs about as much as compiling a small kernel. Per kernel:
 *     qd_cpu_target_optimize  LLVM's new pass manager, `default<O3>` (or the configured level),
 *                             with the machine's TargetTransformInfo, so the vectorizer knows
 *                             the vector width of this CPU;
 *     qd_cpu_target_emit      an ELF object in memory, linked by ORC in llvm_jit.c.
 * PIC matters: JIT-linked code may land anywhere in the address space, and fields and runtime
 * functions are external symbols reached through the GOT and PLT stubs the linker builds.
 *
 * Dumps (QdLlvmOptions.print_kernel_*) go to files named like the reference implementation's,
 * numbered by a process-wide counter per kind.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* strdup */
#endif
#include "llvm_internal.h"

#include <llvm-c/Support.h>

#include <llvm-c/Target.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The names of the dump files, by QdLlvmDump (llvm_internal.h). */
static const char *const dump_names[QD_DUMP_KINDS_] = {
    [QD_DUMP_CPU_IR] = "quadrants_kernel_cpu_llvm_ir_%04u.ll",
    [QD_DUMP_CPU_IR_OPTIMIZED] = "quadrants_kernel_cpu_llvm_ir_optimized_%04u.ll",
    [QD_DUMP_CPU_ASM] = "quadrants_kernel_cpu_llvm_ir_optimized_asm_%04u.s",
    [QD_DUMP_CUDA_IR] = "quadrants_kernel_cuda_llvm_ir_%04u.ll",
    [QD_DUMP_CUDA_IR_OPTIMIZED] = "quadrants_kernel_cuda_llvm_ir_optimized_%04u.ll",
    [QD_DUMP_PTX] = "quadrants_kernel_nvptx_%04u.ptx",
};
static atomic_uint dump_counters[QD_DUMP_KINDS_];

static pthread_once_t llvm_once = PTHREAD_ONCE_INIT;
static bool llvm_ready; /* native target and asm printer registered */
static bool libmvec;    /* loops may call glibc's vector math library */

static void
init_llvm(void)
{
    llvm_ready = !LLVMInitializeNativeTarget() && !LLVMInitializeNativeAsmPrinter();
#if defined(__x86_64__) && defined(__linux__)
    /* Vectorized loops may call glibc's vector math library (libmvec: _ZGVdN8v_expf and
     * friends) for exp, log, sin, cos, pow... instead of one scalar call per element. The
     * library must be loaded globally so that the JIT resolves those symbols; without it the
     * loops keep scalar calls. */
    if (dlopen("libmvec.so.1", RTLD_NOW | RTLD_GLOBAL) != NULL) {
        libmvec = true;
        const char *argv[] = {"quadrants", "-vector-library=LIBMVEC-X86"};
        LLVMParseCommandLineOptions(2, argv, NULL);
    }
#endif
}

/* Reports an LLVMErrorRef (consumed) as a diag; returns -1. */
static int
llvm_error(QdCtx *ctx, QdErrKind kind, const char *what, LLVMErrorRef err)
{
    char *msg = LLVMGetErrorMessage(err);
    qd_error(ctx, (QdLoc){0}, kind, "%s: %s", what, msg);
    LLVMDisposeErrorMessage(msg);
    return -1;
}

int
qd_llvm_message_error(QdCtx *ctx, QdErrKind kind, const char *what, char *msg)
{
    qd_error(ctx, (QdLoc){0}, kind, "%s: %s", what, msg ? msg : "unknown error");
    LLVMDisposeMessage(msg);
    return -1;
}

int
qd_cpu_target_init(QdCtx *ctx, QdCpuTarget *target, int opt_level)
{
    static const LLVMCodeGenOptLevel levels[4] = {LLVMCodeGenLevelNone, LLVMCodeGenLevelLess,
                                                  LLVMCodeGenLevelDefault,
                                                  LLVMCodeGenLevelAggressive};
    LLVMTargetRef llvm_target = NULL;
    LLVMTargetDataRef layout = NULL;
    char *error = NULL;
    char *cpu = NULL;
    char *features = NULL;
    char *layout_text = NULL;
    int rc = -1;

    memset(target, 0, sizeof(*target));
    pthread_once(&llvm_once, init_llvm);
    if (!llvm_ready) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_COMPILATION,
                        "LLVM has no code generator for this machine");
    }
    target->opt_level = opt_level < 0 ? 0 : opt_level > 3 ? 3 : opt_level;
    target->triple = LLVMGetDefaultTargetTriple();
    if (LLVMGetTargetFromTriple(target->triple, &llvm_target, &error)) {
        qd_llvm_message_error(ctx, QD_ERR_COMPILATION, "no LLVM target for the host", error);
        goto done;
    }
    cpu = LLVMGetHostCPUName();
    features = LLVMGetHostCPUFeatures();
    target->tm =
        LLVMCreateTargetMachine(llvm_target, target->triple, cpu, features,
                                levels[target->opt_level], LLVMRelocPIC, LLVMCodeModelSmall);
    if (target->tm == NULL) {
        qd_error(ctx, (QdLoc){0}, QD_ERR_COMPILATION, "cannot create a target machine for %s", cpu);
        goto done;
    }
    layout = LLVMCreateTargetDataLayout(target->tm);
    layout_text = LLVMCopyStringRepOfTargetData(layout);
    target->data_layout = layout_text ? strdup(layout_text) : NULL;
    size_t id_size = strlen(target->triple) + strlen(cpu) + strlen(features) + 64;
    target->identity = malloc(id_size);
    if (target->identity != NULL) {
        snprintf(target->identity, id_size, "%s|%s|%s|O%d|%s", target->triple, cpu, features,
                 target->opt_level, libmvec ? "libmvec" : "-");
    }
    if (target->data_layout == NULL || target->identity == NULL) {
        qd_error(ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory");
        goto done;
    }
    rc = 0;
done:
    LLVMDisposeMessage(layout_text);
    if (layout != NULL) {
        LLVMDisposeTargetData(layout);
    }
    LLVMDisposeMessage(features);
    LLVMDisposeMessage(cpu);
    if (rc < 0) {
        qd_cpu_target_release(target);
    }
    return rc;
}

void
qd_cpu_target_release(QdCpuTarget *target)
{
    if (target->tm != NULL) {
        LLVMDisposeTargetMachine(target->tm);
    }
    LLVMDisposeMessage(target->triple);
    free(target->data_layout);
    free(target->identity);
    memset(target, 0, sizeof(*target));
}

/***** dumps *****/

void
qd_llvm_dump_path(const QdLlvmOptions *opts, QdLlvmDump kind, char *out, size_t size)
{
    char name[96];
    unsigned n = atomic_fetch_add(&dump_counters[kind], 1);
    snprintf(name, sizeof(name), dump_names[kind], n);
    if (opts->dump_dir != NULL && opts->dump_dir[0] != '\0') {
        snprintf(out, size, "%s/%s", opts->dump_dir, name);
    } else {
        snprintf(out, size, "%s", name);
    }
}

int
qd_llvm_dump_ir(QdCtx *ctx, LLVMModuleRef mod, const QdLlvmOptions *opts, QdLlvmDump kind)
{
    char path[1024];
    char *error = NULL;
    qd_llvm_dump_path(opts, kind, path, sizeof(path));
    if (LLVMPrintModuleToFile(mod, path, &error)) {
        return qd_llvm_message_error(ctx, QD_ERR_COMPILATION, "cannot write the LLVM IR dump",
                                     error);
    }
    return 0;
}

/* Native assembly of a copy of the module (emission rewrites the IR it is given). */
static int
dump_asm(QdCtx *ctx, QdCpuTarget *target, LLVMModuleRef mod, const QdLlvmOptions *opts)
{
    char path[1024];
    char *error = NULL;
    LLVMModuleRef copy = LLVMCloneModule(mod);
    int rc = 0;

    qd_llvm_dump_path(opts, QD_DUMP_CPU_ASM, path, sizeof(path));
    if (LLVMTargetMachineEmitToFile(target->tm, copy, path, LLVMAssemblyFile, &error)) {
        rc = qd_llvm_message_error(ctx, QD_ERR_COMPILATION, "cannot write the assembly dump",
                                   error);
    }
    LLVMDisposeModule(copy);
    return rc;
}

/***** per kernel *****/

int
qd_cpu_target_optimize(QdCtx *ctx, QdCpuTarget *target, LLVMModuleRef mod,
                       const QdLlvmOptions *opts)
{
    char pipeline[32];
    LLVMPassBuilderOptionsRef pass_opts = NULL;
    LLVMErrorRef err;
    int rc = -1;

    if (opts->print_kernel_llvm_ir && qd_llvm_dump_ir(ctx, mod, opts, QD_DUMP_CPU_IR) < 0) {
        return -1;
    }
    snprintf(pipeline, sizeof(pipeline), "default<O%d>", target->opt_level);
    qd_llvm_limit_vectorizers(mod);
    pass_opts = LLVMCreatePassBuilderOptions();
    LLVMPassBuilderOptionsSetLoopVectorization(pass_opts, target->opt_level >= 2);
    LLVMPassBuilderOptionsSetSLPVectorization(pass_opts, target->opt_level >= 2);
    LLVMPassBuilderOptionsSetLoopInterleaving(pass_opts, target->opt_level >= 2);
    LLVMPassBuilderOptionsSetLoopUnrolling(pass_opts, target->opt_level >= 2);
    err = LLVMRunPasses(mod, pipeline, target->tm, pass_opts);
    if (err != NULL) {
        llvm_error(ctx, QD_ERR_INTERNAL, "LLVM optimizer", err);
        goto done;
    }
    if (opts->print_kernel_llvm_ir_optimized &&
        qd_llvm_dump_ir(ctx, mod, opts, QD_DUMP_CPU_IR_OPTIMIZED) < 0) {
        goto done;
    }
    rc = 0;
done:
    LLVMDisposePassBuilderOptions(pass_opts);
    return rc;
}

int
qd_cpu_target_emit(QdCtx *ctx, QdCpuTarget *target, LLVMModuleRef mod, const QdLlvmOptions *opts,
                   LLVMMemoryBufferRef *object)
{
    char *error = NULL;

    *object = NULL;
    if (opts->print_kernel_asm && dump_asm(ctx, target, mod, opts) < 0) {
        return -1;
    }
    if (LLVMTargetMachineEmitToMemoryBuffer(target->tm, mod, LLVMObjectFile, &error, object)) {
        *object = NULL;
        return qd_llvm_message_error(ctx, QD_ERR_INTERNAL, "LLVM code generation", error);
    }
    return 0;
}
