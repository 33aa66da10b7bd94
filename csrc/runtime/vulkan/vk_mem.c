/* runtime/vulkan/vk_mem.c -- device memory: buffers addressed by device address, copies to and
 * from the host, fills.
 *
 * Every buffer is a VkBuffer of its own with STORAGE_BUFFER | SHADER_DEVICE_ADDRESS |
 * TRANSFER_SRC | TRANSFER_DST usage, bound to a dedicated allocation made with the
 * DEVICE_ADDRESS allocate flag; kernels know it only by its address. Sizes are rounded up to
 * whole 32-bit words (an atomic on an 8- or 16-bit element is a compare-and-swap of the word
 * that holds it, which must lie inside the buffer; vkCmdFillBuffer works in words too).
 *
 * Memory comes from the first DEVICE_LOCAL type the buffer accepts. Where that type is also
 * HOST_VISIBLE and HOST_COHERENT (lavapipe, integrated GPUs, discrete GPUs with resizable BAR)
 * the buffer is mapped once, for its lifetime, and copies are memcpy; elsewhere copies go
 * through one host-visible staging buffer of QD_VK_STAGING_BYTES, in chunks, each chunk a
 * vkCmdCopyBuffer submitted and waited for. QD_VULKAN_STAGING=1 forces the staging path for
 * buffers allocated while it is set (read at every allocation), so tests cover it on devices
 * whose memory is all mappable. Fresh buffers are zero-filled (memset or vkCmdFillBuffer).
 *
 * Copies through a mapping first wait for the launches in flight (qd_vk_sync), then copy
 * without the lock (a copy racing another thread's launch on the same buffer is the caller's
 * race, as on CUDA). Everything else holds qd_vk.lock, and waits for the launches in flight
 * before it records commands (qd_vk_begin) or frees memory.
 */
#include "vk_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether $QD_VULKAN_STAGING asks for staged copies. */
static bool
force_staging(void)
{
    const char *env = getenv("QD_VULKAN_STAGING");
    return env != NULL && env[0] != '\0' && strcmp(env, "0") != 0;
}

/* The first memory type among `bits` with all of `need` and all of `want`, else the first with
 * all of `need`; -1 when none has `need`. */
static int
find_memory_type(uint32_t bits, VkMemoryPropertyFlags need, VkMemoryPropertyFlags want)
{
    const VkPhysicalDeviceMemoryProperties *mem = &qd_vk.memory;
    for (int pass = 0; pass < 2; pass++) {
        VkMemoryPropertyFlags flags = pass == 0 ? need | want : need;
        for (uint32_t i = 0; i < mem->memoryTypeCount; i++) {
            if ((bits & (1u << i)) && (mem->memoryTypes[i].propertyFlags & flags) == flags) {
                return (int)i;
            }
        }
    }
    return -1;
}

/* A buffer of `bytes` with `usage` and its dedicated memory of a type with `need` (preferring
 * `want`); `address` adds the DEVICE_ADDRESS allocate flag. *flags receives the type's
 * property flags. Out of memory is a diag naming the size; nothing is left behind on error. */
static int
make_buffer(QdCtx *ctx, VkDeviceSize bytes, VkBufferUsageFlags usage, VkMemoryPropertyFlags need,
            VkMemoryPropertyFlags want, bool address, VkBuffer *buffer, VkDeviceMemory *memory,
            VkMemoryPropertyFlags *flags)
{
    const QdVkApi *vk = &qd_vk.api;
    VkMemoryRequirements req;

    *buffer = VK_NULL_HANDLE;
    *memory = VK_NULL_HANDLE;
    VkBufferCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = bytes,
        .usage = usage,
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
    };
    VkResult r = vk->vkCreateBuffer(qd_vk.device, &info, NULL, buffer);
    if (r != VK_SUCCESS) {
        *buffer = VK_NULL_HANDLE;
    }
    RETURN_IF_ERROR(
        qd_vk_check(ctx, r, "creating a Vulkan buffer of %llu bytes", (unsigned long long)bytes));
    vk->vkGetBufferMemoryRequirements(qd_vk.device, *buffer, &req);
    int type = find_memory_type(req.memoryTypeBits, need, want);
    if (type < 0) {
        type = find_memory_type(req.memoryTypeBits, 0, 0);
    }
    if (type < 0) {
        vk->vkDestroyBuffer(qd_vk.device, *buffer, NULL);
        *buffer = VK_NULL_HANDLE;
        return qd_error(ctx, (QdLoc){0}, QD_ERR_RUNTIME,
                        "no Vulkan memory type can hold a buffer (memoryTypeBits 0x%x)",
                        req.memoryTypeBits);
    }
    VkMemoryAllocateFlagsInfo flag_info = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO,
        .flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT,
    };
    VkMemoryAllocateInfo alloc = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .pNext = address ? &flag_info : NULL,
        .allocationSize = req.size,
        .memoryTypeIndex = (uint32_t)type,
    };
    r = vk->vkAllocateMemory(qd_vk.device, &alloc, NULL, memory);
    if (r != VK_SUCCESS) {
        vk->vkDestroyBuffer(qd_vk.device, *buffer, NULL);
        *buffer = VK_NULL_HANDLE;
        *memory = VK_NULL_HANDLE;
        uint32_t heap = qd_vk.memory.memoryTypes[type].heapIndex;
        if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY) {
            return qd_error(ctx, (QdLoc){0}, QD_ERR_RUNTIME,
                            "Vulkan out of memory: cannot allocate %llu bytes (%.1f MiB) of "
                            "device memory (heap %u of %.1f MiB): %s",
                            (unsigned long long)req.size, req.size / 1048576.0, heap,
                            qd_vk.memory.memoryHeaps[heap].size / 1048576.0, qd_vk_result_name(r));
        }
        return qd_vk_check(ctx, r, "allocating %llu bytes of Vulkan memory",
                           (unsigned long long)req.size);
    }
    r = vk->vkBindBufferMemory(qd_vk.device, *buffer, *memory, 0);
    if (r != VK_SUCCESS) {
        vk->vkDestroyBuffer(qd_vk.device, *buffer, NULL);
        vk->vkFreeMemory(qd_vk.device, *memory, NULL);
        *buffer = VK_NULL_HANDLE;
        *memory = VK_NULL_HANDLE;
        return qd_vk_check(ctx, r, "binding Vulkan memory to a buffer");
    }
    *flags = qd_vk.memory.memoryTypes[type].propertyFlags;
    return 0;
}

/* The staging buffer, made on first use (the caller holds the lock). */
static int
ensure_staging(QdCtx *ctx)
{
    VkMemoryPropertyFlags flags = 0;
    VkMemoryPropertyFlags host =
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    void *map = NULL;

    if (qd_vk.staging != VK_NULL_HANDLE) {
        return 0;
    }
    RETURN_IF_ERROR(make_buffer(ctx, QD_VK_STAGING_BYTES,
                                VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                host, VK_MEMORY_PROPERTY_HOST_CACHED_BIT, false, &qd_vk.staging,
                                &qd_vk.staging_memory, &flags));
    VkResult r = (flags & host) == host ? qd_vk.api.vkMapMemory(qd_vk.device, qd_vk.staging_memory,
                                                                0, VK_WHOLE_SIZE, 0, &map)
                                        : VK_ERROR_MEMORY_MAP_FAILED;
    if (r != VK_SUCCESS) {
        qd_vk.api.vkDestroyBuffer(qd_vk.device, qd_vk.staging, NULL);
        qd_vk.api.vkFreeMemory(qd_vk.device, qd_vk.staging_memory, NULL);
        qd_vk.staging = VK_NULL_HANDLE;
        qd_vk.staging_memory = VK_NULL_HANDLE;
        return qd_vk_check(ctx, r, "mapping the Vulkan staging buffer");
    }
    qd_vk.staging_map = map;
    return 0;
}

/* vkCmdFillBuffer of [offset, offset + bytes) with `value`, submitted and waited for (the caller
 * holds the lock). */
static int
fill_locked(QdCtx *ctx, const QdVkMemory *m, VkDeviceSize offset, VkDeviceSize bytes,
            uint32_t value)
{
    RETURN_IF_ERROR(qd_vk_begin(ctx, "filling Vulkan memory"));
    qd_vk.api.vkCmdFillBuffer(qd_vk.commands, m->buffer, offset, bytes, value);
    return qd_vk_submit(ctx, "filling Vulkan memory");
}

/* A buffer of memory with `need` (preferring `want`), mapped when the type is host-visible
 * (and staging is not forced on a buffer that may use it). */
static int
alloc_buffer(QdCtx *ctx, size_t bytes, VkMemoryPropertyFlags need, VkMemoryPropertyFlags want,
             QdVkBuffer *out)
{
    const QdVkApi *vk = &qd_vk.api;
    VkMemoryPropertyFlags flags = 0;
    VkMemoryPropertyFlags host =
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    int rc = -1;

    memset(out, 0, sizeof(*out));
    if (qd_vk_device(ctx) == NULL) {
        return -1;
    }
    QdVkMemory *m = calloc(1, sizeof(*m));
    if (m == NULL) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory");
    }
    m->bytes = bytes ? ((VkDeviceSize)bytes + 3) & ~(VkDeviceSize)3 : 4;
    pthread_mutex_lock(&qd_vk.lock);
    if (make_buffer(ctx, m->bytes,
                    VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT |
                        VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                    need, want, true, &m->buffer, &m->memory, &flags) < 0) {
        goto done;
    }
    if ((flags & host) == host && ((need & host) == host || !force_staging())) {
        void *map = NULL;
        if (qd_vk_check(ctx, vk->vkMapMemory(qd_vk.device, m->memory, 0, VK_WHOLE_SIZE, 0, &map),
                        "mapping %llu bytes of Vulkan memory", (unsigned long long)m->bytes) < 0) {
            goto done;
        }
        m->mapped = map;
        memset(m->mapped, 0, m->bytes);
    } else if (fill_locked(ctx, m, 0, m->bytes, 0) < 0) {
        goto done;
    }
    VkBufferDeviceAddressInfo info = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO,
        .buffer = m->buffer,
    };
    out->address = vk->vkGetBufferDeviceAddress(qd_vk.device, &info);
    out->size = bytes ? bytes : 1;
    out->impl = m;
    rc = 0;
done:
    if (rc < 0 && m->buffer != VK_NULL_HANDLE) {
        vk->vkDestroyBuffer(qd_vk.device, m->buffer, NULL);
        vk->vkFreeMemory(qd_vk.device, m->memory, NULL);
    }
    pthread_mutex_unlock(&qd_vk.lock);
    if (rc < 0) {
        free(m);
    }
    return rc;
}

int
qd_vk_alloc(QdCtx *ctx, size_t bytes, QdVkBuffer *out)
{
    return alloc_buffer(ctx, bytes, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0, out);
}

int
qd_vk_alloc_mapped(QdCtx *ctx, size_t bytes, QdVkBuffer *out)
{
    VkMemoryPropertyFlags host =
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    return alloc_buffer(ctx, bytes, host, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, out);
}

void
qd_vk_free(QdVkBuffer *buffer)
{
    QdVkMemory *m = buffer->impl;
    if (m != NULL) {
        /* The lock also waits for a launch under way on another thread; a launch in flight
         * may still use the buffer. An error of one surfaces at the next wait. */
        QdCtx ctx;
        qd_ctx_init(&ctx);
        pthread_mutex_lock(&qd_vk.lock);
        (void)qd_vk_drain_locked(&ctx);
        qd_vk.api.vkDestroyBuffer(qd_vk.device, m->buffer, NULL);
        qd_vk.api.vkFreeMemory(qd_vk.device, m->memory, NULL); /* unmaps it too */
        pthread_mutex_unlock(&qd_vk.lock);
        free(m);
    }
    memset(buffer, 0, sizeof(*buffer));
}

/* The checks every copy makes: a live buffer and a range inside it. */
static int
check_range(QdCtx *ctx, const QdVkBuffer *b, size_t offset, size_t bytes, const char *what)
{
    if (b->impl == NULL) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_RUNTIME, "%s: the Vulkan buffer was freed", what);
    }
    if (offset > b->size || bytes > b->size - offset) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_RUNTIME,
                        "%s: bytes [%zu, %zu) are outside the Vulkan buffer of %llu bytes", what,
                        offset, offset + bytes, (unsigned long long)b->size);
    }
    return 0;
}

/* One staged copy of up to QD_VK_STAGING_BYTES between the staging buffer and `m` at `offset`
 * (to_device: staging -> m), submitted and waited for (the caller holds the lock). */
static int
staged_copy(QdCtx *ctx, const QdVkMemory *m, VkDeviceSize offset, VkDeviceSize bytes,
            bool to_device)
{
    const char *what = to_device ? "copying to Vulkan memory" : "copying from Vulkan memory";
    VkBufferCopy region = {
        .srcOffset = to_device ? 0 : offset,
        .dstOffset = to_device ? offset : 0,
        .size = bytes,
    };
    RETURN_IF_ERROR(qd_vk_begin(ctx, what));
    qd_vk.api.vkCmdCopyBuffer(qd_vk.commands, to_device ? qd_vk.staging : m->buffer,
                              to_device ? m->buffer : qd_vk.staging, 1, &region);
    return qd_vk_submit(ctx, what);
}

int
qd_vk_upload(QdCtx *ctx, const QdVkBuffer *dst, size_t offset, const void *src, size_t bytes)
{
    const QdVkMemory *m = dst->impl;
    int rc = 0;

    RETURN_IF_ERROR(check_range(ctx, dst, offset, bytes, "copying to the device"));
    if (bytes == 0) {
        return 0;
    }
    if (m->mapped != NULL) {
        RETURN_IF_ERROR(qd_vk_sync(ctx)); /* no kernel in flight reads what is overwritten */
        memcpy(m->mapped + offset, src, bytes);
        return 0;
    }
    pthread_mutex_lock(&qd_vk.lock);
    rc = ensure_staging(ctx);
    for (size_t done = 0; rc == 0 && done < bytes; done += QD_VK_STAGING_BYTES) {
        size_t n = bytes - done < QD_VK_STAGING_BYTES ? bytes - done : QD_VK_STAGING_BYTES;
        memcpy(qd_vk.staging_map, (const uint8_t *)src + done, n);
        rc = staged_copy(ctx, m, offset + done, n, true);
    }
    pthread_mutex_unlock(&qd_vk.lock);
    return rc;
}

int
qd_vk_download(QdCtx *ctx, void *dst, const QdVkBuffer *src, size_t offset, size_t bytes)
{
    const QdVkMemory *m = src->impl;
    int rc = 0;

    RETURN_IF_ERROR(check_range(ctx, src, offset, bytes, "copying from the device"));
    if (bytes == 0) {
        return 0;
    }
    if (m->mapped != NULL) {
        RETURN_IF_ERROR(qd_vk_sync(ctx)); /* every kernel launched before has written it */
        memcpy(dst, m->mapped + offset, bytes);
        return 0;
    }
    pthread_mutex_lock(&qd_vk.lock);
    rc = ensure_staging(ctx);
    for (size_t done = 0; rc == 0 && done < bytes; done += QD_VK_STAGING_BYTES) {
        size_t n = bytes - done < QD_VK_STAGING_BYTES ? bytes - done : QD_VK_STAGING_BYTES;
        rc = staged_copy(ctx, m, offset + done, n, false);
        if (rc == 0) {
            memcpy((uint8_t *)dst + done, qd_vk.staging_map, n);
        }
    }
    pthread_mutex_unlock(&qd_vk.lock);
    return rc;
}

int
qd_vk_fill(QdCtx *ctx, const QdVkBuffer *dst, size_t offset, size_t bytes, uint32_t value)
{
    const QdVkMemory *m = dst->impl;
    int rc;

    if (offset % 4 != 0 || bytes % 4 != 0) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_INTERNAL,
                        "qd_vk_fill: offset %zu and size %zu must be multiples of 4", offset,
                        bytes);
    }
    if (m == NULL) {
        return check_range(ctx, dst, offset, bytes, "filling device memory");
    }
    if (offset > m->bytes || bytes > m->bytes - offset) {
        return check_range(ctx, dst, offset, bytes, "filling device memory");
    }
    if (bytes == 0) {
        return 0;
    }
    pthread_mutex_lock(&qd_vk.lock);
    rc = fill_locked(ctx, m, offset, bytes, value);
    pthread_mutex_unlock(&qd_vk.lock);
    return rc;
}
