/* runtime/vulkan/vk_launch.c -- launches: the dispatches of one kernel in one command buffer.
 *
 * qd_vk_run records, under qd_vk.lock:
 *     [timestamp 0]  push constant `params`
 *     bind pipeline 0, dispatch 0
 *     barrier (compute shader writes -> compute shader reads and writes)
 *     bind pipeline 1, dispatch 1        (the bind is skipped when the pipeline repeats)
 *     ...
 *     [timestamp 1]
 * then submits it and waits (qd_vk_submit, which also brackets the buffer with the barriers
 * that order it after earlier copies and make its writes visible to the host). Push constants
 * stay valid across pipeline binds because every pipeline shares one layout. Everything that
 * can fail is checked before recording starts, so an invalid launch records nothing.
 */
#include "vk_internal.h"

#include <time.h>

/* Seconds of the monotonic clock. */
static double
now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Records the dispatches (the command buffer is being recorded). */
static void
record(const QdVkDispatch *dispatches, uint32_t n, uint64_t params, bool timed)
{
    const QdVkApi *vk = &qd_vk.api;
    VkCommandBuffer cmd = qd_vk.commands;
    const QdVkPipeline *bound = NULL;

    if (timed) {
        vk->vkCmdResetQueryPool(cmd, qd_vk.timestamps, 0, 2);
        vk->vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, qd_vk.timestamps, 0);
    }
    vk->vkCmdPushConstants(cmd, qd_vk.pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                           QD_VK_PUSH_BYTES, &params);
    for (uint32_t i = 0; i < n; i++) {
        if (i > 0) {
            /* after a fill (a transfer) or before one, every stage; else compute to compute */
            bool transfer = dispatches[i].pipeline == NULL || dispatches[i - 1].pipeline == NULL;
            VkPipelineStageFlags stages =
                transfer ? VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
                         : VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
            VkMemoryBarrier b = {
                .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                 VK_ACCESS_TRANSFER_WRITE_BIT,
            };
            vk->vkCmdPipelineBarrier(cmd, stages, stages, 0, 1, &b, 0, NULL, 0, NULL);
        }
        if (dispatches[i].pipeline == NULL) {
            const QdVkMemory *m = dispatches[i].fill->impl;
            vk->vkCmdFillBuffer(cmd, m->buffer, 0, dispatches[i].fill_bytes, 0);
            continue;
        }
        if (dispatches[i].pipeline != bound) {
            bound = dispatches[i].pipeline;
            vk->vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, bound->pipeline);
        }
        if (dispatches[i].groups > 0) {
            vk->vkCmdDispatch(cmd, dispatches[i].groups, 1, 1);
        }
    }
    if (timed) {
        vk->vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, qd_vk.timestamps, 1);
    }
}

int
qd_vk_run(QdCtx *ctx, const QdVkDispatch *dispatches, uint32_t n, uint64_t params, double *seconds)
{
    const QdVkApi *vk = &qd_vk.api;
    bool timed = seconds != NULL && qd_vk.timestamps != VK_NULL_HANDLE;
    uint64_t stamps[2] = {0, 0};
    int rc;

    if (seconds != NULL) {
        *seconds = 0;
    }
    if (n == 0) {
        return 0;
    }
    if (qd_vk_device(ctx) == NULL) {
        return -1;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (dispatches[i].pipeline == NULL &&
            (dispatches[i].fill == NULL || dispatches[i].fill->impl == NULL ||
             dispatches[i].fill_bytes % 4 != 0 ||
             dispatches[i].fill_bytes > ((const QdVkMemory *)dispatches[i].fill->impl)->bytes)) {
            return qd_error(ctx, (QdLoc){0}, QD_ERR_INTERNAL,
                            "qd_vk_run: step %u has neither a pipeline nor a valid fill", i);
        }
        if (dispatches[i].pipeline == NULL) {
            continue;
        }
        if (dispatches[i].groups > qd_vk.max_workgroup_count) {
            return qd_error(ctx, (QdLoc){0}, QD_ERR_RUNTIME,
                            "%s: %u workgroups exceed the device's limit of %u",
                            dispatches[i].pipeline->what, dispatches[i].groups,
                            qd_vk.max_workgroup_count);
        }
    }
    const char *what = "a Vulkan launch";
    for (uint32_t i = 0; i < n; i++) {
        if (dispatches[i].pipeline != NULL) {
            what = dispatches[i].pipeline->what;
            break;
        }
    }
    pthread_mutex_lock(&qd_vk.lock);
    double start = now_seconds();
    rc = qd_vk_begin(ctx, what);
    if (rc == 0) {
        record(dispatches, n, params, timed);
        rc = qd_vk_submit(ctx, what);
    }
    if (rc == 0 && seconds != NULL) {
        *seconds = now_seconds() - start;
        if (timed &&
            vk->vkGetQueryPoolResults(qd_vk.device, qd_vk.timestamps, 0, 2, sizeof(stamps), stamps,
                                      sizeof(stamps[0]), VK_QUERY_RESULT_64_BIT) == VK_SUCCESS) {
            uint64_t ticks = (stamps[1] - stamps[0]) & qd_vk.timestamp_mask;
            *seconds = ticks * qd_vk.timestamp_period_ns * 1e-9;
        }
    }
    pthread_mutex_unlock(&qd_vk.lock);
    return rc;
}
