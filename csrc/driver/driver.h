/* driver/driver.h -- the compile pipeline of one kernel, in one place.
 *
 * The driver wires the layers together: frontend (Python AST -> QIR), our passes, the code
 * generator. Only the Python layer calls it; it knows nothing of Python objects itself (the
 * frontend reaches them through the QdHost the caller provides).
 */
#ifndef QD_DRIVER_H
#define QD_DRIVER_H

#include "../cache/cache.h"
#include "../codegen/llvm/codegen.h"
#include "../frontend/frontend.h"

/* Everything that decides the code of one kernel specialization. */
typedef struct QdCompileRequest {
    const QdHost *host;            /* Python callbacks */
    QdHandle scope;                /* the kernel's Python function */
    const QdAst *def;              /* its AST */
    const char *name;              /* kernel name (QIR and symbol prefix) */
    const QdKernelArg *args;       /* one per kernel parameter */
    uint32_t nargs;                /* how many */
    QdHandle ret_annotation;       /* evaluated return annotation, 0 = from the AST */
    QdFrontendOptions frontend;    /* typing options */
    bool verify;                   /* verify the IR after every pass (tests, QD_VERIFY=1) */
    QdFieldResolver resolve_field; /* base addresses of fields */
    void *resolve_user;            /* its argument */
    bool keep_qir;                 /* fill qir_frontend / qir_final (tests, debugging) */
    char *qir_frontend;            /* out: the QIR the frontend produced (free()) */
    char *qir_final;               /* out: the QIR handed to the code generator (free()) */
    QdCache *cache;                /* offline cache, or NULL */
    const char *compiler_id;       /* identifies this compiler build in cache keys */
    const QdDigest *source_key;    /* the caller's pre-lowering key, linked to the code entry
                                      (NULL: none) */
    bool cache_hit;                /* out: the machine code came from the cache */
} QdCompileRequest;

/* Compiles a kernel for the CPU JIT: on success fills *out (release with
 * qd_compiled_kernel_release) and *info and returns 0; -1 with a diag otherwise. */
int qd_compile_kernel_cpu(QdCtx *ctx, QdCpuJit *jit, QdCompileRequest *req,
                          QdCompiledKernel *out, QdKernelInfo *info);

/* Compiles a kernel for CUDA: the PTX in *out (release with qd_nvptx_kernel_release) and, in
 * *host, the bounds functions the launcher evaluates on the host, compiled by the CPU JIT
 * (codegen.h: qd_cpu_jit_compile_bounds; release with qd_compiled_kernel_release). 0, or -1
 * with a diag (and nothing to release). */
int qd_compile_kernel_cuda(QdCtx *ctx, QdCpuJit *jit, QdCompileRequest *req,
                           const QdNvptxOptions *opts, QdNvptxKernel *out, QdCompiledKernel *host,
                           QdKernelInfo *info);

/* The steps the functions above chain, for callers that put the offline cache between them
 * (python/cuda_compile.c): the frontend, passes and codegen-ready verification (the kernel in
 * m, or NULL with a diag), and the CUDA code generation of a lowered kernel, optionally with
 * the host bounds functions under `host_symbol` kept as an artifact. */
QdFunc *qd_driver_lower(QdCtx *ctx, QdModule *m, QdCompileRequest *req, QdKernelInfo *info);
int qd_driver_codegen_cuda(QdCtx *ctx, QdCpuJit *jit, QdModule *m, const char *kernel_name,
                           const QdNvptxOptions *opts, const char *host_symbol,
                           QdNvptxKernel *out, QdCompiledKernel *host,
                           QdCpuArtifact *host_artifact);

/***** cache_io.c: offline cache entries of compiled kernels *****/

/* The code key of a kernel: tag ("cpu", "cuda"), compiler build, target identity, kernel name
 * and the final QIR. */
QdDigest qd_cache_code_key(const char *tag, const char *compiler_id, const char *target,
                           const char *name, const char *qir);
/* Records source_key -> code_key (no-op when either cache or source_key is NULL). */
void qd_cache_link(QdCache *cache, const QdDigest *source_key, const QdDigest *code_key);
/* 1 with *code_key when source_key has a link entry, else 0. */
int qd_cache_follow(QdCache *cache, const QdDigest *source_key, QdDigest *code_key);

/* The warm path: loads the CPU kernel that source key `source_key` compiled to, without the
 * frontend. 1 with *out, *info filled; 0 on a miss (nothing to release). */
int qd_cache_load_cpu(QdCache *cache, const QdDigest *source_key, QdCpuJit *jit,
                      QdFieldResolver resolve, void *resolve_user, QdCompiledKernel *out,
                      QdKernelInfo *info);
/* Code generation of a lowered kernel through the cache: loads the entry of its code key, or
 * compiles and stores it; links req->source_key to it either way. */
int qd_cache_compile_cpu(QdCtx *ctx, QdCpuJit *jit, QdCompileRequest *req, QdModule *m,
                         const char *kernel_name, QdCompiledKernel *out, QdKernelInfo *info);

/* Payload pieces shared by the CPU and CUDA entries. The readers return -1 on malformed input,
 * leaving what they allocated for the caller to release. */
void qd_cache_write_layout(QdBytesOut *out, const QdCompiledKernel *k);
int qd_cache_read_layout(QdBytesIn *in, QdCompiledKernel *k);
void qd_cache_write_info(QdBytesOut *out, const QdKernelInfo *info);
int qd_cache_read_info(QdBytesIn *in, QdKernelInfo *info);
void qd_cache_write_strings(QdBytesOut *out, char *const *strings, uint32_t n);
int qd_cache_read_strings(QdBytesIn *in, char ***strings, uint32_t *n);

#endif /* QD_DRIVER_H */
