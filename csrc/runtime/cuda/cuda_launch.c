/* runtime/cuda/cuda_launch.c -- the grid of a task and its launch.
 *
 * Grid policy (DESIGN.md, Performance principles): a range_for task whose trip count n is
 * known on the host gets exactly ceil(n / block_dim) blocks, capped at a saturating grid; one
 * whose trip count is not known (it is computed on the device, as the phases of qd.algorithms
 * are) gets two waves of the blocks that fit on the SMs at once: such a loop is as often empty
 * or short as long, and scheduling the saturating grid's 128 blocks per SM for an empty loop
 * costs about 10 us on an H100. Either way the generated kernel is a grid-stride loop, so any
 * grid covers every iteration. The saturating grid keeps the whole
 * device busy and balanced: SMs times GRID_BLOCKS_PER_SM blocks, or SMs times the blocks that
 * fit on one SM at once (the occupancy calculator's answer) if that is more. Several waves of
 * blocks rather than one resident wave: on an H100, saxpy over 2**26 floats (bandwidth bound,
 * each thread running its iterations interleaved by 4) reached 2820 GB/s with 128 blocks of
 * 128 threads per SM, 2720 with 32 and 2620 with the 16 that are resident at once, and only
 * 2260 with one iteration per thread (the exact grid).
 *
 * A task that reduces into memory (its partial_* accumulators are combined over each warp and
 * added with one atomic per warp after the loop, llvm_emit_reduce.c) is the exception: the
 * atomics on one address are serialized where that address lives, so their number, one per
 * warp of the grid, bounds its time. Such a task gets REDUCE_THREADS_PER_SM threads per SM,
 * each running more iterations. On an H100, `s[None] += x[i]` over 2**24 floats took 124 us with
 * the saturating grid (16896 blocks of 128 threads), 36 us with one resident wave (16
 * blocks of 128 per SM), 31 us with 8 and 28 us with 4 (2376 GB/s; torch.sum 30 us).
 *
 * A launch is one cuLaunchKernel on the legacy default stream with a single by-value
 * parameter, the packed argument buffer (codegen.h: NVPTX KERNEL ABI), so kernelParams holds
 * one pointer: to the buffer. The driver copies the bytes at launch time; the buffer may be
 * reused as soon as cuLaunchKernel returns.
 *
 * On sm_90 and newer, where the driver has cuLaunchKernelEx, the second and later tasks of a
 * kernel launch, and a serial first task, are programmatic dependent launches: their blocks may
 * be scheduled while the kernel before is still running (once every block of that one has
 * started). Each task kernel begins with griddepcontrol.launch_dependents and
 * griddepcontrol.wait (llvm_emit_task.c, QD_NVPTX_DEPENDENT_LAUNCH_SM), which waits until the
 * kernel before it has finished and its memory is visible (both are no-ops in a plain launch).
 * A task's start-up then overlaps the tail of the one before instead of following it. On an
 * H200, with every task a dependent launch, 16M-element qd.algorithms calls (two to nine tasks)
 * took 2-14% less time, but back-to-back launches of the one-task Tile16x16 Cholesky kernel
 * 433.5 us against 427 (its thousands of 16-thread blocks each wait): a first task that is a
 * parallel loop is therefore a plain launch. A serial first task (one block, as
 * in every qd.algorithms call that is given a count) keeps the overlap with the launch before.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* strnlen */
#endif
#include "cuda.h"

#include "../../abi/abi.h"

#include <stdio.h>
#include <string.h>

/* Blocks per SM of the saturating grid (see the file comment). */
#define GRID_BLOCKS_PER_SM 128
/* Waves of resident blocks in the grid of a loop whose trip count only the device knows. */
#define UNKNOWN_COUNT_WAVES 2
/* Threads per SM in the grid of a task that reduces into memory (see the file comment). */
#define REDUCE_THREADS_PER_SM 512

/* The last kernel launched on this thread, for errors that surface later. */
static _Thread_local char last_kernel[160];

/* Whether launches are programmatic dependent launches: -1 until the first launch decides. */
static int dependent_launches = -1;

/* Blocks of `function` at `block_dim` threads that one SM holds at once (occupancy calculator;
 * the SM's thread budget if that fails). */
static int
resident_per_sm(const QdCudaDevice *device, QdCuFunction function, uint32_t block_dim)
{
    QdCtx scratch;
    int per_sm = 0;
    qd_ctx_init(&scratch);
    const QdCudaApi *cu = qd_cuda_load(&scratch);
    block_dim = block_dim ? block_dim : 1;
    if (cu == NULL ||
        cu->cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, function, (int)block_dim, 0) != 0 ||
        per_sm < 1) {
        per_sm = device->max_threads_per_sm / (int)block_dim;
        per_sm = per_sm < 1 ? 1 : per_sm;
    }
    return per_sm;
}

uint32_t
qd_cuda_saturating_blocks(const QdCudaDevice *device, QdCuFunction function, uint32_t block_dim)
{
    int per_sm = resident_per_sm(device, function, block_dim);
    int sms = device->sm_count > 0 ? device->sm_count : 1;
    per_sm = per_sm > GRID_BLOCKS_PER_SM ? per_sm : GRID_BLOCKS_PER_SM;
    return (uint32_t)sms * (uint32_t)per_sm;
}

uint32_t
qd_cuda_unknown_count_blocks(const QdCudaDevice *device, QdCuFunction function, uint32_t block_dim)
{
    int per_sm = resident_per_sm(device, function, block_dim);
    int sms = device->sm_count > 0 ? device->sm_count : 1;
    return (uint32_t)sms * (uint32_t)per_sm * UNKNOWN_COUNT_WAVES;
}

uint32_t
qd_cuda_reducing_blocks(const QdCudaDevice *device, uint32_t block_dim)
{
    uint32_t sms = device->sm_count > 0 ? (uint32_t)device->sm_count : 1;
    uint32_t per_sm = REDUCE_THREADS_PER_SM / (block_dim ? block_dim : 1);
    return sms * (per_sm ? per_sm : 1);
}

uint32_t
qd_cuda_grid_blocks(uint64_t n, uint32_t block_dim, uint32_t cap)
{
    block_dim = block_dim ? block_dim : 1;
    uint64_t blocks = n / block_dim + (n % block_dim != 0);
    if (blocks < 1) {
        blocks = 1;
    }
    return blocks > cap ? cap : (uint32_t)blocks;
}

/* One launch on the legacy default stream (see the file comment). */
static QdCuResult
launch(const QdCudaApi *cu, QdCuFunction function, uint32_t blocks, uint32_t threads,
       void **param_ptrs, bool overlap)
{
    if (!overlap || dependent_launches <= 0) {
        return cu->cuLaunchKernel(function, blocks, 1, 1, threads, 1, 1, 0, NULL, param_ptrs,
                                  NULL);
    }
    QdCuLaunchAttribute attr = {.id = QD_CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION};
    attr.value.flag = 1;
    QdCuLaunchConfig config = {.grid_x = blocks, .grid_y = 1, .grid_z = 1, .block_x = threads,
                               .block_y = 1, .block_z = 1, .attrs = &attr, .nattrs = 1};
    return cu->cuLaunchKernelEx(&config, function, param_ptrs, NULL);
}

int
qd_cuda_launch(QdCtx *ctx, QdCuFunction function, uint32_t blocks, uint32_t threads, void *params,
               const char *kernel, bool overlap)
{
    const QdCudaApi *cu = qd_cuda_load(ctx);
    void *param_ptrs[1] = {params};

    if (cu == NULL || qd_cuda_enter_cached(ctx) < 0) {
        return -1;
    }
    size_t len = strnlen(kernel, sizeof(last_kernel) - 1);
    memcpy(last_kernel, kernel, len);
    last_kernel[len] = '\0';
    if (dependent_launches < 0) {
        const QdCudaDevice *device = qd_cuda_device(ctx);
        if (device == NULL) {
            return -1;
        }
        int sm = 10 * device->cc_major + device->cc_minor;
        dependent_launches = cu->cuLaunchKernelEx != NULL && sm >= QD_NVPTX_DEPENDENT_LAUNCH_SM;
    }
    QdCuResult r = launch(cu, function, blocks, threads, param_ptrs, overlap);
    if (r == QD_CU_ERROR_INVALID_CONTEXT || r == QD_CU_ERROR_INVALID_HANDLE ||
        r == QD_CU_ERROR_CONTEXT_IS_DESTROYED) {
        /* Something on this thread changed the current context since it last entered ours:
         * enter again (a driver call) and retry once. */
        qd_cuda_forget_entry();
        if (qd_cuda_enter(ctx) < 0) {
            return -1;
        }
        r = launch(cu, function, blocks, threads, param_ptrs, overlap);
    }
    if (r == 0) {
        return 0;
    }
    return qd_cuda_check(ctx, r, "launching kernel %s (%u blocks of %u threads)", kernel, blocks,
                         threads);
}

const char *
qd_cuda_last_kernel(void)
{
    return last_kernel;
}
