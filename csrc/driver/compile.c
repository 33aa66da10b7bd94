/* driver/compile.c -- the whole pipeline of one kernel, as straight-line code, for every target.
 *
 *     Python AST (python/host_ast.c)
 *       -> frontend: names, compile-time evaluation, types, inlining, tasks  -> QIR
 *       -> passes:   every pass of passes/passes.def, in its order          -> QIR
 *       -> verify (codegen-ready)
 *       -> [offline cache: code key = tag + compiler + target identity + QIR; a hit skips on to
 *           the load] (cache_io.c)
 *       -> codegen, by the target's row of targets.def (target_<name>.c):
 *            cpu:  LLVM IR, O3, machine code in the JIT                    -> task entry points
 *            cuda: LLVM IR, libdevice, O3, PTX                             -> PTX text
 *                  + the host-evaluable bounds in the CPU JIT              -> grid sizes
 *       -> load: cpu: nothing more (the JIT holds it); cuda: PTX -> cubin -> module, field
 *                pointers set                                            -> launchable code
 *       -> [offline cache: the target's payload stored, the source key linked to it]
 *
 * One compilation owns one QdModule (one arena); it is freed when the machine code exists.
 * QD_DUMP=frontend,passes prints the QIR after the frontend and after the passes to stderr
 * (QD_DUMP=ptx the PTX of CUDA kernels),
 * QD_VERIFY=1 verifies after every pass.
 */
#include "driver.h"

#include "../passes/passes.h"
#include "../runtime/cpu/cpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

bool
qd_driver_dump_enabled(const char *stage)
{
    const char *env = getenv("QD_DUMP");
    if (!env) {
        return false;
    }
    size_t n = strlen(stage);
    for (const char *p = env; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if ((len == n && strncmp(p, stage, n) == 0) || (len == 3 && strncmp(p, "all", 3) == 0)) {
            return true;
        }
        p += len + (end ? 1 : 0);
    }
    return false;
}

static void
dump_module(const char *stage, const QdModule *m)
{
    char *text = qd_module_print(m);
    if (text) {
        fprintf(stderr, "--- QIR after %s ---\n%s", stage, text);
        free(text);
    }
}

/* The frontend, the pass pipeline and the codegen-ready verification: the kernel in m, or NULL
 * with a diag. */
static QdFunc *
lower(QdCtx *ctx, QdModule *m, QdCompileRequest *req, QdKernelInfo *info)
{
    bool verify = req->verify || getenv("QD_VERIFY") != NULL;
    QdFunc *kernel = qd_frontend_lower_kernel(ctx, m, req->host, req->scope, req->def, req->name,
                                              req->args, req->nargs, req->ret_annotation,
                                              &req->frontend, info);
    if (!kernel) {
        return NULL;
    }
    if (qd_driver_dump_enabled("frontend")) {
        dump_module("frontend", m);
    }
    if (req->keep_qir) {
        req->qir_frontend = qd_module_print(m);
    }
    if (verify && qd_module_verify(ctx, m, QD_VERIFY_DEFAULT) < 0) {
        return NULL;
    }
    if (qd_run_pipeline(ctx, m, verify) < 0) {
        return NULL;
    }
    if (qd_driver_dump_enabled("passes")) {
        dump_module("passes", m);
    }
    if (qd_module_verify(ctx, m, QD_VERIFY_CONCRETE) < 0) {
        return NULL;
    }
    if (req->keep_qir) {
        req->qir_final = qd_module_print(m);
    }
    return kernel;
}

QdCpuJit *
qd_driver_jit_new(QdCtx *ctx, const QdLlvmOptions *opts)
{
    uint32_t nsyms = 0;
    const QdCpuSymbol *syms = qd_cpu_runtime_symbols(&nsyms);
    _Static_assert(sizeof(QdCpuSymbol) == sizeof(QdJitSymbol), "runtime symbols match the JIT's");
    return qd_cpu_jit_new(ctx, opts, (const QdJitSymbol *)syms, nsyms);
}

int
qd_driver_run_passes(QdCtx *ctx, QdModule *m, const char *pass_list, bool verify_each)
{
    return qd_run_passes(ctx, m, pass_list, verify_each);
}

const char *const *
qd_driver_pass_names(void)
{
    return qd_pass_names();
}

/***** the targets *****/

static const QdTargetInfo target_table[QD_NTARGETS] = {
#define QD_TARGET(name, tag, entry, descr)                                                         \
    [QD_TARGET_##name] = {tag,                                                                     \
                          entry,                                                                   \
                          qd_target_##name##_identity,                                             \
                          qd_target_##name##_codegen,                                              \
                          qd_target_##name##_load,                                                 \
                          qd_target_##name##_write,                                                \
                          qd_target_##name##_read,                                                 \
                          qd_target_##name##_release},
#include "targets.def"
#undef QD_TARGET
};

const QdTargetInfo *
qd_target_info(QdTarget target)
{
    return &target_table[target];
}

void
qd_driver_kernel_release(QdDriverKernel *k)
{
    if ((unsigned)k->target < QD_NTARGETS) {
        target_table[k->target].release(k);
    }
}

static double
ms_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) * 1e-6;
}

int
qd_driver_generate(QdCtx *ctx, QdTarget target, const QdTargetEnv *env, QdModule *m,
                   const char *kernel_name, const char *symbol, const struct timespec *since,
                   QdDriverKernel *out, QdDriverArtifact *artifact)
{
    const QdTargetInfo *t = &target_table[target];
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    if (t->codegen(ctx, env, m, kernel_name, symbol, out, artifact) < 0) {
        return -1;
    }
    out->ms_codegen = ms_since(since ? since : &start);
    return t->load(ctx, env, out, artifact, false);
}

int
qd_driver_compile(QdCtx *ctx, QdCompileRequest *req, QdTarget target, const QdTargetEnv *env,
                  QdDriverKernel *out)
{
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    memset(out, 0, sizeof(*out));
    out->target = target;
    QdModule *m = qd_module_new();
    if (!m) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory");
    }
    int rc = -1;
    QdFunc *kernel = lower(ctx, m, req, &out->info);
    if (kernel && req->cache) {
        rc = qd_cache_compile(ctx, req, target, env, m, kernel->name, out);
    } else if (kernel) {
        rc = qd_driver_generate(ctx, target, env, m, kernel->name, NULL, &start, out, NULL);
    }
    qd_module_free(m);
    if (rc < 0) {
        qd_driver_kernel_release(out);
    }
    return rc;
}

int
qd_driver_compile_module(QdCtx *ctx, QdModule *m, const char *kernel_name, QdTarget target,
                         const QdTargetEnv *env, QdDriverKernel *out)
{
    memset(out, 0, sizeof(*out));
    out->target = target;
    int rc = qd_driver_generate(ctx, target, env, m, kernel_name, NULL, NULL, out, NULL);
    if (rc < 0) {
        qd_driver_kernel_release(out);
    }
    return rc;
}

int
qd_driver_load_cached(QdCache *cache, const QdDigest *source_key, QdTarget target,
                      const QdTargetEnv *env, QdDriverKernel *out)
{
    QdDigest code_key;
    memset(out, 0, sizeof(*out));
    out->target = target;
    if (cache == NULL) {
        return 0;
    }
    const QdTargetInfo *t = qd_target_info(target);
    char buf[4096];
    const char *identity = t->identity(env, buf, sizeof(buf));
    if (!qd_cache_follow(cache, source_key, t->tag, identity, &code_key)) {
        return 0;
    }
    return qd_cache_load_entry(cache, &code_key, target, env, out);
}
