/* driver/compile.c -- the whole pipeline of one kernel, as straight-line code.
 *
 *     Python AST (python/host_ast.c)
 *       -> frontend: names, compile-time evaluation, types, inlining, tasks  -> QIR
 *       -> passes:   every pass of passes/passes.def, in its order          -> QIR
 *       -> verify (codegen-ready)
 *       -> codegen:  LLVM IR, O3, machine code in the JIT                     -> task entry points
 *          or, for CUDA: LLVM IR, libdevice, O3, PTX                         -> PTX text
 *                        + the host-evaluable bounds in the CPU JIT          -> grid sizes
 *
 * One compilation owns one QdModule (one arena); it is freed when the machine code exists.
 * QD_DUMP=frontend,passes prints the QIR after the frontend and after the passes to stderr
 * (QD_DUMP=ptx the PTX of CUDA kernels),
 * QD_VERIFY=1 verifies after every pass.
 */
#include "driver.h"

#include "../passes/passes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether QD_DUMP lists `stage`. */
static bool
dump_enabled(const char *stage)
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

QdFunc *
qd_driver_lower(QdCtx *ctx, QdModule *m, QdCompileRequest *req, QdKernelInfo *info)
{
    bool verify = req->verify || getenv("QD_VERIFY") != NULL;
    QdFunc *kernel = qd_frontend_lower_kernel(ctx, m, req->host, req->scope, req->def, req->name,
                                              req->args, req->nargs, req->ret_annotation,
                                              &req->frontend, info);
    if (!kernel) {
        return NULL;
    }
    if (dump_enabled("frontend")) {
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
    if (dump_enabled("passes")) {
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

int
qd_compile_kernel_cpu(QdCtx *ctx, QdCpuJit *jit, QdCompileRequest *req,
                      QdCompiledKernel *out, QdKernelInfo *info)
{
    int rc = -1;
    QdModule *m = qd_module_new();
    if (!m) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory");
    }
    QdFunc *kernel = qd_driver_lower(ctx, m, req, info);
    if (kernel && req->cache) {
        rc = qd_cache_compile_cpu(ctx, jit, req, m, kernel->name, out, info);
    } else if (kernel) {
        rc = qd_cpu_jit_compile(ctx, jit, m, kernel->name, req->resolve_field, req->resolve_user,
                                out);
    }
    qd_module_free(m);
    return rc;
}

int
qd_driver_codegen_cuda(QdCtx *ctx, QdCpuJit *jit, QdModule *m, const char *kernel_name,
                       const QdNvptxOptions *opts, const char *host_symbol, QdNvptxKernel *out,
                       QdCompiledKernel *host, QdCpuArtifact *host_artifact)
{
    memset(host, 0, sizeof(*host));
    if (qd_nvptx_compile(ctx, m, kernel_name, opts, out) < 0) {
        return -1;
    }
    if (dump_enabled("ptx")) {
        fprintf(stderr, "--- PTX of %s ---\n%s", kernel_name, out->ptx);
    }
    int rc = host_artifact != NULL
                 ? qd_cpu_jit_compile_bounds_artifact(ctx, jit, m, kernel_name, host_symbol, host,
                                                      host_artifact)
                 : qd_cpu_jit_compile_bounds(ctx, jit, m, kernel_name, host);
    if (rc < 0) {
        qd_nvptx_kernel_release(out);
    }
    return rc;
}

int
qd_compile_kernel_cuda(QdCtx *ctx, QdCpuJit *jit, QdCompileRequest *req,
                       const QdNvptxOptions *opts, QdNvptxKernel *out, QdCompiledKernel *host,
                       QdKernelInfo *info)
{
    int rc = -1;
    QdModule *m = qd_module_new();
    memset(host, 0, sizeof(*host));
    if (!m) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory");
    }
    QdFunc *kernel = qd_driver_lower(ctx, m, req, info);
    if (kernel) {
        rc = qd_driver_codegen_cuda(ctx, jit, m, kernel->name, opts, NULL, out, host, NULL);
    }
    qd_module_free(m);
    return rc;
}
