/* runtime/cuda/cuda_module.c -- PTX to a loaded module: the driver's linker, entry points and
 * the field pointers.
 *
 * One module per compiled kernel (the code generator's one PTX per kernel). The PTX goes
 * through cuLinkCreate / cuLinkAddData / cuLinkComplete, which JIT-compiles it for the current
 * device (so PTX for sm_90 also runs on later architectures), then cuModuleLoadData loads the
 * cubin and the link state is destroyed. The linker's error log is kept and appended to the
 * diag: a PTX that the driver rejects is a bug of ours, and the log says which line.
 *
 * Field pointers: generated code reads the base address of field @f from the module global
 * `qd_field_f` (an 8-byte pointer, codegen.h); qd_cuda_module_set_pointer writes it once after
 * loading, so launches carry no parameter per field.
 */
#include "cuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LOG_BYTES 8192

/* Stage times of the last module load of this thread (qd_cuda_module_load_times). */
static _Thread_local double last_link_ms, last_load_ms;

static double
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

void
qd_cuda_module_load_times(double *link_ms, double *load_ms)
{
    *link_ms = last_link_ms;
    *load_ms = last_load_ms;
}

int
qd_cuda_module_load(QdCtx *ctx, const char *ptx, size_t bytes, const char *what, QdCuModule *out)
{
    return qd_cuda_module_load_keep(ctx, ptx, bytes, what, out, NULL, NULL);
}

int
qd_cuda_module_load_cubin(QdCtx *ctx, const void *cubin, const char *what, QdCuModule *out)
{
    const QdCudaApi *cu = qd_cuda_load(ctx);
    *out = NULL;
    if (cu == NULL || qd_cuda_enter(ctx) < 0) {
        return -1;
    }
    double t0 = now_ms();
    QdCuResult r = cu->cuModuleLoadData(out, cubin);
    last_link_ms = 0;
    last_load_ms = now_ms() - t0;
    if (qd_cuda_check(ctx, r, "loading the cached module of kernel %s", what) < 0) {
        *out = NULL;
        return -1;
    }
    return 0;
}

int
qd_cuda_module_load_keep(QdCtx *ctx, const char *ptx, size_t bytes, const char *what,
                         QdCuModule *out, void **cubin_copy, size_t *cubin_copy_size)
{
    const QdCudaApi *cu = qd_cuda_load(ctx);
    static _Thread_local char error_log[LOG_BYTES];
    QdCuLinkState link = NULL;
    void *cubin = NULL;
    size_t cubin_size = 0;
    int rc = -1;

    *out = NULL;
    if (cu == NULL || qd_cuda_enter(ctx) < 0) {
        return -1;
    }
    error_log[0] = '\0';
    int options[] = {QD_CU_JIT_ERROR_LOG_BUFFER, QD_CU_JIT_ERROR_LOG_BUFFER_BYTES};
    void *values[] = {error_log, (void *)(uintptr_t)sizeof(error_log)};
    if (qd_cuda_check(ctx, cu->cuLinkCreate(2, options, values, &link),
                      "creating a CUDA linker for kernel %s", what) < 0) {
        return -1;
    }
    double t0 = now_ms();
    QdCuResult r = cu->cuLinkAddData(link, QD_CU_JIT_INPUT_PTX, (void *)ptx, bytes, what, 0, NULL,
                                     NULL);
    if (r == 0) {
        r = cu->cuLinkComplete(link, &cubin, &cubin_size);
    }
    double t1 = now_ms();
    last_link_ms = t1 - t0;
    if (r != 0) {
        qd_cuda_check(ctx, r, "compiling the PTX of kernel %s", what);
        if (error_log[0] != '\0') {
            /* the first error wins: replace its message by one with the log */
            size_t n = strlen(ctx->diag.message);
            snprintf(ctx->diag.message + n, sizeof(ctx->diag.message) - n, "\n%s", error_log);
        }
        goto done;
    }
    if (cubin_copy != NULL) {
        *cubin_copy = malloc(cubin_size ? cubin_size : 1);
        *cubin_copy_size = cubin_size;
        if (*cubin_copy != NULL) {
            memcpy(*cubin_copy, cubin, cubin_size);
        }
    }
    QdCuResult lr = cu->cuModuleLoadData(out, cubin);
    last_load_ms = now_ms() - t1;
    if (qd_cuda_check(ctx, lr, "loading the module of kernel %s", what) < 0) {
        *out = NULL;
        goto done;
    }
    rc = 0;
done:
    cu->cuLinkDestroy(link);
    return rc;
}

void
qd_cuda_module_unload(QdCuModule module)
{
    QdCtx scratch;
    if (module == NULL) {
        return;
    }
    qd_ctx_init(&scratch);
    const QdCudaApi *cu = qd_cuda_load(&scratch);
    if (cu != NULL && qd_cuda_enter(&scratch) == 0) {
        cu->cuModuleUnload(module);
    }
}

int
qd_cuda_module_function(QdCtx *ctx, QdCuModule module, const char *name, QdCuFunction *out)
{
    const QdCudaApi *cu = qd_cuda_load(ctx);
    *out = NULL;
    if (cu == NULL) {
        return -1;
    }
    return qd_cuda_check(ctx, cu->cuModuleGetFunction(out, module, name),
                         "finding entry point %s in its module", name);
}

int
qd_cuda_module_set_pointer(QdCtx *ctx, QdCuModule module, const char *name, QdCuDeviceptr value)
{
    const QdCudaApi *cu = qd_cuda_load(ctx);
    QdCuDeviceptr where = 0;
    size_t size = 0;

    if (cu == NULL) {
        return -1;
    }
    RETURN_IF_ERROR(qd_cuda_check(ctx, cu->cuModuleGetGlobal(&where, &size, module, name),
                                  "finding global %s in its module", name));
    if (size != sizeof(value)) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_INTERNAL, "module global %s has %zu bytes, not 8",
                        name, size);
    }
    return qd_cuda_upload(ctx, where, &value, sizeof(value));
}
