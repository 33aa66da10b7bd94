/* driver/driver.h -- the compile pipeline of one kernel, in one place.
 *
 * The driver wires the layers together: frontend (Python AST -> QIR), our passes, the code
 * generator. Only the Python layer calls it; it knows nothing of Python objects itself (the
 * frontend reaches them through the QdHost the caller provides).
 */
#ifndef QD_DRIVER_H
#define QD_DRIVER_H

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

#endif /* QD_DRIVER_H */
