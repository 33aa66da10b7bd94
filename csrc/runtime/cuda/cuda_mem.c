/* runtime/cuda/cuda_mem.c -- device memory: allocation (zero-filled), copies, synchronization.
 *
 * Thin, checked wrappers over the driver. Every function makes the device's context current
 * first (qd_cuda_enter), so it works from any thread. Copies are the synchronous driver copies
 * on the legacy default stream: a download waits for every kernel launched before it, which is
 * what Python-scope reads of fields and ndarrays rely on. Allocations are zero-filled, as the
 * language promises for fresh fields and ndarrays; an allocation failure names the size and
 * what the device has left.
 */
#include "cuda.h"

#include <stdio.h>

int
qd_cuda_alloc(QdCtx *ctx, size_t bytes, QdCuDeviceptr *out)
{
    const QdCudaApi *cu = qd_cuda_load(ctx);
    *out = 0;
    if (cu == NULL || qd_cuda_enter(ctx) < 0) {
        return -1;
    }
    /* Whole 32-bit words: an atomic on an 8- or 16-bit element is a compare-and-swap of the
     * aligned word that holds it, which must lie inside the allocation. */
    bytes = bytes ? (bytes + 3) & ~(size_t)3 : 4;
    QdCuResult r = cu->cuMemAlloc(out, bytes);
    if (r == QD_CU_ERROR_OUT_OF_MEMORY) {
        size_t free_bytes = 0, total = 0;
        cu->cuMemGetInfo(&free_bytes, &total);
        *out = 0;
        return qd_error(ctx, (QdLoc){0}, QD_ERR_RUNTIME,
                        "CUDA out of memory: cannot allocate %zu bytes (%.1f MiB) of device "
                        "memory; %.1f MiB of %.1f MiB free",
                        bytes, bytes / 1048576.0, free_bytes / 1048576.0, total / 1048576.0);
    }
    if (qd_cuda_check(ctx, r, "allocating %zu bytes of device memory", bytes) < 0) {
        *out = 0;
        return -1;
    }
    if (qd_cuda_check(ctx, cu->cuMemsetD8Async(*out, 0, bytes, NULL), "zeroing %zu bytes", bytes) <
        0) {
        cu->cuMemFree(*out);
        *out = 0;
        return -1;
    }
    return 0;
}

void
qd_cuda_free(QdCuDeviceptr ptr)
{
    QdCtx scratch;
    if (ptr == 0) {
        return;
    }
    qd_ctx_init(&scratch);
    const QdCudaApi *cu = qd_cuda_load(&scratch);
    if (cu != NULL && qd_cuda_enter(&scratch) == 0) {
        cu->cuMemFree(ptr);
    }
}

int
qd_cuda_upload(QdCtx *ctx, QdCuDeviceptr dst, const void *src, size_t bytes)
{
    const QdCudaApi *cu = qd_cuda_load(ctx);
    if (cu == NULL || qd_cuda_enter(ctx) < 0) {
        return -1;
    }
    if (bytes == 0) {
        return 0;
    }
    return qd_cuda_check(ctx, cu->cuMemcpyHtoD(dst, src, bytes), "copying %zu bytes to the device",
                         bytes);
}

int
qd_cuda_download(QdCtx *ctx, void *dst, QdCuDeviceptr src, size_t bytes)
{
    const QdCudaApi *cu = qd_cuda_load(ctx);
    if (cu == NULL || qd_cuda_enter(ctx) < 0) {
        return -1;
    }
    if (bytes == 0) {
        return 0;
    }
    return qd_cuda_check(ctx, cu->cuMemcpyDtoH(dst, src, bytes),
                         "copying %zu bytes from the device", bytes);
}

int
qd_cuda_copy(QdCtx *ctx, QdCuDeviceptr dst, QdCuDeviceptr src, size_t bytes)
{
    const QdCudaApi *cu = qd_cuda_load(ctx);
    if (cu == NULL || qd_cuda_enter(ctx) < 0) {
        return -1;
    }
    if (bytes == 0) {
        return 0;
    }
    return qd_cuda_check(ctx, cu->cuMemcpyDtoD(dst, src, bytes),
                         "copying %zu bytes on the device", bytes);
}

int
qd_cuda_sync(QdCtx *ctx)
{
    const QdCudaApi *cu = qd_cuda_load(ctx);
    if (cu == NULL || qd_cuda_enter(ctx) < 0) {
        return -1;
    }
    return qd_cuda_check(ctx, cu->cuCtxSynchronize(), "synchronizing with the device");
}
