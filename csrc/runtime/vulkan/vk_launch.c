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

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Seconds of the monotonic clock. */
static double
now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Records the dispatches into `cmd` (being recorded). */
static void
record(VkCommandBuffer cmd, const QdVkDispatch *dispatches, uint32_t n, uint64_t params, bool timed)
{
    const QdVkApi *vk = &qd_vk.api;
    const QdVkPipeline *bound = NULL;

    if (timed) {
        vk->vkCmdResetQueryPool(cmd, qd_vk.timestamps, 0, 2);
        vk->vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, qd_vk.timestamps, 0);
    }
    vk->vkCmdPushConstants(cmd, qd_vk.pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                           QD_VK_PUSH_BYTES, &params);
    for (uint32_t i = 0; i < n; i++) {
        if (i > 0) {
            VkMemoryBarrier b = {
                .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
                .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT,
            };
            vk->vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                                     VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &b, 0, NULL, 0,
                                     NULL);
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

/* Every step has a pipeline and a workgroup count within the device's limit. 0, or -1 with a
 * diag. */
static int
check_dispatches(QdCtx *ctx, const QdVkDispatch *dispatches, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        if (dispatches[i].pipeline == NULL) {
            return qd_error(ctx, (QdLoc){0}, QD_ERR_INTERNAL,
                            "qd_vk_run: step %u has no pipeline", i);
        }
        if (dispatches[i].groups > qd_vk.max_workgroup_count) {
            return qd_error(ctx, (QdLoc){0}, QD_ERR_RUNTIME,
                            "%s: %u workgroups exceed the device's limit of %u",
                            dispatches[i].pipeline->what, dispatches[i].groups,
                            qd_vk.max_workgroup_count);
        }
    }
    return 0;
}

/* The name of the first pipeline of a launch, for errors. */
static const char *
launch_name(const QdVkDispatch *dispatches, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        if (dispatches[i].pipeline != NULL) {
            return dispatches[i].pipeline->what;
        }
    }
    return "a Vulkan launch";
}

/* The seconds a timed submission took, from its timestamps (the caller waited for it). */
static void
read_timestamps(double *seconds)
{
    uint64_t stamps[2] = {0, 0};
    if (qd_vk.api.vkGetQueryPoolResults(qd_vk.device, qd_vk.timestamps, 0, 2, sizeof(stamps),
                                        stamps, sizeof(stamps[0]),
                                        VK_QUERY_RESULT_64_BIT) == VK_SUCCESS) {
        uint64_t ticks = (stamps[1] - stamps[0]) & qd_vk.timestamp_mask;
        *seconds = ticks * qd_vk.timestamp_period_ns * 1e-9;
    }
}

int
qd_vk_run(QdCtx *ctx, const QdVkDispatch *dispatches, uint32_t n, uint64_t params, double *seconds)
{
    bool timed = seconds != NULL && qd_vk.timestamps != VK_NULL_HANDLE;
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
    RETURN_IF_ERROR(check_dispatches(ctx, dispatches, n));
    const char *what = launch_name(dispatches, n);
    pthread_mutex_lock(&qd_vk.lock);
    double start = now_seconds();
    rc = qd_vk_begin(ctx, what);
    if (rc == 0) {
        record(qd_vk.commands, dispatches, n, params, timed);
        rc = qd_vk_submit(ctx, what);
    }
    if (rc == 0 && seconds != NULL) {
        *seconds = now_seconds() - start;
        if (timed) {
            read_timestamps(seconds);
        }
    }
    pthread_mutex_unlock(&qd_vk.lock);
    return rc;
}

/***** asynchronous launches *****/

/* The launch slots and their parameter buffer, made once. */
static QdVkBuffer slot_params;

static int
ensure_slots(QdCtx *ctx)
{
    if (qd_vk.params_map != NULL) {
        return 0;
    }
    QdVkBuffer params;
    RETURN_IF_ERROR(qd_vk_alloc_mapped(ctx, QD_VK_SLOTS * QD_VK_PARAM_SLOT_BYTES, &params));
    pthread_mutex_lock(&qd_vk.lock);
    int rc = 0;
    if (qd_vk.params_map == NULL) {
        VkCommandBufferAllocateInfo info = {
            .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
            .commandPool = qd_vk.command_pool,
            .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
            .commandBufferCount = QD_VK_SLOTS,
        };
        rc = qd_vk_check(
            ctx, qd_vk.api.vkAllocateCommandBuffers(qd_vk.device, &info, qd_vk.slot_commands),
            "allocating the Vulkan launch command buffers");
        VkFenceCreateInfo fence = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
        for (uint32_t i = 0; rc == 0 && i < QD_VK_SLOTS; i++) {
            rc = qd_vk_check(
                ctx, qd_vk.api.vkCreateFence(qd_vk.device, &fence, NULL, &qd_vk.slot_fences[i]),
                "creating a Vulkan launch fence");
        }
        if (rc == 0) {
            slot_params = params;
            qd_vk.params_address = params.address;
            qd_vk.params_map = ((QdVkMemory *)params.impl)->mapped;
            params.impl = NULL;
        }
    }
    pthread_mutex_unlock(&qd_vk.lock);
    if (params.impl != NULL) {
        qd_vk_free(&params); /* another thread made them first, or a failure */
    }
    return rc;
}

void
qd_vk_release_slots(void)
{
    for (uint32_t i = 0; i < QD_VK_SLOTS; i++) {
        if (qd_vk.slot_fences[i] != VK_NULL_HANDLE) {
            qd_vk.api.vkDestroyFence(qd_vk.device, qd_vk.slot_fences[i], NULL);
            qd_vk.slot_fences[i] = VK_NULL_HANDLE;
        }
    }
    if (slot_params.impl != NULL) {
        QdVkMemory *m = slot_params.impl;
        qd_vk.api.vkDestroyBuffer(qd_vk.device, m->buffer, NULL);
        qd_vk.api.vkFreeMemory(qd_vk.device, m->memory, NULL);
        free(m);
        memset(&slot_params, 0, sizeof(slot_params));
    }
    qd_vk.params_map = NULL;
}

/* Waits for slot i when it is in flight and makes it reusable. */
static int
retire(QdCtx *ctx, uint32_t i)
{
    if (!qd_vk.slot_pending[i]) {
        return 0;
    }
    qd_vk.slot_pending[i] = false;
    RETURN_IF_ERROR(qd_vk_wait(ctx, qd_vk.slot_fences[i], "a Vulkan launch"));
    return qd_vk_check(ctx, qd_vk.api.vkResetCommandBuffer(qd_vk.slot_commands[i], 0),
                       "vkResetCommandBuffer");
}

int
qd_vk_drain_locked(QdCtx *ctx)
{
    int rc = 0;
    /* oldest first, so that the first error reported is the first launch's */
    for (uint32_t k = 0; k < QD_VK_SLOTS; k++) {
        uint32_t i = (qd_vk.next_slot + k) % QD_VK_SLOTS;
        if (retire(ctx, i) < 0 && rc == 0) {
            rc = -1;
        }
    }
    if (rc == 0 && qd_vk.host_barrier_owed) {
        /* the launches' writes made visible to mapped reads: one empty submission whose
         * barrier comes after them in the queue */
        qd_vk.host_barrier_owed = false;
        rc = qd_vk_begin_on(ctx, qd_vk.commands, "a Vulkan launch");
        if (rc == 0) {
            rc = qd_vk_submit(ctx, "making the launches' writes visible to the host");
        }
    }
    return rc;
}

int
qd_vk_sync(QdCtx *ctx)
{
    if (qd_vk.params_map == NULL) {
        return 0; /* nothing was ever launched */
    }
    pthread_mutex_lock(&qd_vk.lock);
    int rc = qd_vk_drain_locked(ctx);
    pthread_mutex_unlock(&qd_vk.lock);
    return rc;
}

int
qd_vk_launch(QdCtx *ctx, const QdVkDispatch *dispatches, uint32_t n, const void *params,
             size_t nbytes, bool wait, double *seconds)
{
    if (seconds != NULL) {
        *seconds = 0;
    }
    if (n == 0) {
        return wait ? qd_vk_sync(ctx) : 0;
    }
    if (qd_vk_device(ctx) == NULL) {
        return -1;
    }
    RETURN_IF_ERROR(check_dispatches(ctx, dispatches, n));
    if (nbytes > QD_VK_PARAM_SLOT_BYTES) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_RUNTIME,
                        "%s: %zu bytes of arguments exceed the %llu a Vulkan launch takes",
                        launch_name(dispatches, n), nbytes,
                        (unsigned long long)QD_VK_PARAM_SLOT_BYTES);
    }
    RETURN_IF_ERROR(ensure_slots(ctx));
    const char *what = launch_name(dispatches, n);
    bool timed = seconds != NULL && qd_vk.timestamps != VK_NULL_HANDLE;
    pthread_mutex_lock(&qd_vk.lock);
    double start = now_seconds();
    uint32_t slot = qd_vk.next_slot;
    int rc = retire(ctx, slot);
    if (rc == 0) {
        VkDeviceSize at = slot * QD_VK_PARAM_SLOT_BYTES;
        memcpy(qd_vk.params_map + at, params, nbytes);
        VkCommandBuffer cmd = qd_vk.slot_commands[slot];
        rc = qd_vk_begin_on(ctx, cmd, what);
        if (rc == 0) {
            record(cmd, dispatches, n, qd_vk.params_address + at, timed);
            /* the barrier towards the host costs the GPU a flush of its caches: only for a
             * launch waited for here; the next drain owes it to the others */
            bool host_read = wait || seconds != NULL;
            rc = qd_vk_end_submit(ctx, cmd, qd_vk.slot_fences[slot], host_read, what);
            qd_vk.host_barrier_owed |= rc == 0 && !host_read;
        }
        if (rc == 0) {
            qd_vk.slot_pending[slot] = true;
            qd_vk.next_slot = (slot + 1) % QD_VK_SLOTS;
        }
    }
    if (rc == 0 && (wait || seconds != NULL)) {
        rc = qd_vk_drain_locked(ctx);
        if (rc == 0 && seconds != NULL) {
            *seconds = now_seconds() - start;
            if (timed) {
                read_timestamps(seconds);
            }
        }
    }
    pthread_mutex_unlock(&qd_vk.lock);
    return rc;
}
