/* runtime/vulkan/vk_device.c -- choosing the physical device, creating the logical device with
 * the features kernels may use, and the one command buffer every submission goes through.
 *
 * A physical device is suitable when it offers Vulkan 1.2, a queue family with compute, and the
 * three features every kernel needs: bufferDeviceAddress (all memory is reached through 64-bit
 * addresses), shaderInt64 (those addresses are integers) and storageBuffer8BitAccess (u1, i8 and
 * u8 elements). Among suitable devices a discrete GPU beats an integrated one, which beats a
 * virtual one, which beats a CPU implementation (lavapipe); ties go to the first enumerated.
 * $QD_VULKAN_DEVICE (an index into vkEnumeratePhysicalDevices) picks one instead, and is an
 * error when that device is unsuitable.
 *
 * Every optional feature the code generator may use (int8/int16/float16/float64 arithmetic,
 * 16-bit storage, 64-bit and float atomics, scalar block layout, the Vulkan memory model,
 * subgroup size control) is enabled exactly when the device supports it and reported in
 * QdVkDeviceInfo. Nothing costly is enabled: no robustBufferAccess, no capture/replay.
 *
 * Submissions: qd_vk_begin / qd_vk_submit bracket the recording of the single command buffer,
 * under qd_vk.lock. Each submission starts with a full memory barrier (earlier submissions'
 * writes are visible to it; the host's writes to coherent mapped memory are, by vkQueueSubmit)
 * and ends with one towards the host (its writes are visible to mapped reads), and is waited
 * for; so the runtime's work is strictly ordered and no two submissions overlap. Asynchronous
 * launches (vk_launch.c) end with the barrier towards the host only when they are waited for
 * at once; otherwise the next drain submits it, before the host can read anything.
 */
#include "vk_internal.h"

_Static_assert(QD_VK_DEVICE_TYPE_CPU == VK_PHYSICAL_DEVICE_TYPE_CPU,
               "vulkan.h: the CPU device type");

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What examining one physical device found. The feature structs form a pNext chain through
 * their own fields, so a Candidate is never copied. */
typedef struct Candidate {
    VkPhysicalDevice handle;            /* the device */
    VkPhysicalDeviceProperties props;   /* name, type, API version, limits */
    uint32_t queue_family;              /* first family with compute */
    uint32_t timestamp_bits;            /* that family's timestampValidBits */
    bool has_atomic_float;              /* VK_EXT_shader_atomic_float listed */
    bool has_atomic_float2;             /* VK_EXT_shader_atomic_float2 listed */
    bool has_size_control_ext;          /* VK_EXT_subgroup_size_control listed */
    bool has_size_control;              /* its features are queried and enabled */
    VkPhysicalDeviceFeatures2 features; /* head of the chain below */
    VkPhysicalDeviceVulkan11Features v11;
    VkPhysicalDeviceVulkan12Features v12;
    VkPhysicalDeviceShaderAtomicFloatFeaturesEXT atomic_float;   /* when has_atomic_float */
    VkPhysicalDeviceShaderAtomicFloat2FeaturesEXT atomic_float2; /* when has_atomic_float2 */
    VkPhysicalDeviceSubgroupSizeControlFeaturesEXT size_control; /* when has_size_control */
} Candidate;

/* Preference of a device type: higher wins. */
static int
rank_of(VkPhysicalDeviceType type)
{
    switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
        return 4;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
        return 3;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
        return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
        return 0;
    default:
        return 1;
    }
}

/* Which of the optional extensions the device lists. */
static void
find_extensions(Candidate *c)
{
    uint32_t n = 0;
    if (qd_vk.api.vkEnumerateDeviceExtensionProperties(c->handle, NULL, &n, NULL) != VK_SUCCESS ||
        n == 0) {
        return;
    }
    VkExtensionProperties *ext = calloc(n, sizeof(*ext));
    if (ext == NULL) {
        return;
    }
    if (qd_vk.api.vkEnumerateDeviceExtensionProperties(c->handle, NULL, &n, ext) >= 0) {
        for (uint32_t i = 0; i < n; i++) {
            const char *name = ext[i].extensionName;
            c->has_atomic_float |= strcmp(name, VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME) == 0;
            c->has_atomic_float2 |= strcmp(name, VK_EXT_SHADER_ATOMIC_FLOAT_2_EXTENSION_NAME) == 0;
            c->has_size_control_ext |=
                strcmp(name, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME) == 0;
        }
    }
    free(ext);
    /* float2 extends float: without the first, the second's features cannot be enabled. */
    c->has_atomic_float2 &= c->has_atomic_float;
}

/* Fills *c for device `handle`; true when it is suitable, else false with the reason in why. */
static bool
examine(VkPhysicalDevice handle, Candidate *c, char *why, size_t why_size)
{
    VkQueueFamilyProperties families[32];
    uint32_t nfamilies = QD_ARRAY_LEN(families);

    memset(c, 0, sizeof(*c));
    c->handle = handle;
    qd_vk.api.vkGetPhysicalDeviceProperties(handle, &c->props);
    uint32_t api = c->props.apiVersion;
    if (api < VK_API_VERSION_1_2) {
        snprintf(why, why_size, "Vulkan %u.%u (1.2 is needed)", VK_API_VERSION_MAJOR(api),
                 VK_API_VERSION_MINOR(api));
        return false;
    }
    qd_vk.api.vkGetPhysicalDeviceQueueFamilyProperties(handle, &nfamilies, families);
    c->queue_family = UINT32_MAX;
    for (uint32_t i = 0; i < nfamilies && c->queue_family == UINT32_MAX; i++) {
        if ((families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && families[i].queueCount > 0) {
            c->queue_family = i;
            c->timestamp_bits = families[i].timestampValidBits;
        }
    }
    if (c->queue_family == UINT32_MAX) {
        snprintf(why, why_size, "no queue family with compute");
        return false;
    }
    find_extensions(c);
    /* Only the extension: subgroup size control is core in 1.3, but the instance asks for 1.2,
     * which makes 1.3 core structures invalid. */
    c->has_size_control = c->has_size_control_ext;

    void **tail = &c->features.pNext;
    c->features.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    c->v11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
    c->v12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
    *tail = &c->v11;
    c->v11.pNext = &c->v12;
    tail = &c->v12.pNext;
    if (c->has_atomic_float) {
        c->atomic_float.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT;
        *tail = &c->atomic_float;
        tail = &c->atomic_float.pNext;
    }
    if (c->has_atomic_float2) {
        c->atomic_float2.sType =
            VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_2_FEATURES_EXT;
        *tail = &c->atomic_float2;
        tail = &c->atomic_float2.pNext;
    }
    if (c->has_size_control) {
        c->size_control.sType =
            VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES_EXT;
        *tail = &c->size_control;
    }
    qd_vk.api.vkGetPhysicalDeviceFeatures2(handle, &c->features);

    char missing[128] = "";
    if (!c->v12.bufferDeviceAddress) {
        strcat(missing, ", bufferDeviceAddress");
    }
    if (!c->features.features.shaderInt64) {
        strcat(missing, ", shaderInt64");
    }
    if (!c->v12.storageBuffer8BitAccess) {
        strcat(missing, ", storageBuffer8BitAccess");
    }
    if (missing[0] != '\0') {
        snprintf(why, why_size, "lacks %s", missing + 2);
        return false;
    }
    return true;
}

/* The device to use: $QD_VULKAN_DEVICE's, else the best suitable one. Fills *out (whose
 * chain points into itself: it is written in place). */
static int
choose_device(QdCtx *ctx, Candidate *out)
{
    VkPhysicalDevice handles[16];
    uint32_t n = QD_ARRAY_LEN(handles);
    char why[256];
    char rejected[1024] = "";
    int best = -1, best_rank = -1;

    VkResult r = qd_vk.api.vkEnumeratePhysicalDevices(qd_vk.instance, &n, handles);
    if (r != VK_INCOMPLETE) {
        RETURN_IF_ERROR(qd_vk_check(ctx, r, "listing the Vulkan devices"));
    }
    if (n == 0) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_RUNTIME,
                        "no Vulkan device (the loader found no driver with a device)");
    }
    const char *env = getenv("QD_VULKAN_DEVICE");
    if (env != NULL && env[0] != '\0') {
        char *end = NULL;
        long index = strtol(env, &end, 10);
        if (*end != '\0' || index < 0 || index >= (long)n) {
            return qd_error(ctx, (QdLoc){0}, QD_ERR_RUNTIME,
                            "$QD_VULKAN_DEVICE is %s, but the Vulkan devices are 0 to %u", env,
                            n - 1);
        }
        if (!examine(handles[index], out, why, sizeof(why))) {
            return qd_error(ctx, (QdLoc){0}, QD_ERR_RUNTIME,
                            "Vulkan device %ld (%s), chosen by $QD_VULKAN_DEVICE, cannot be "
                            "used: %s",
                            index, out->props.deviceName, why);
        }
        return 0;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (examine(handles[i], out, why, sizeof(why))) {
            if (rank_of(out->props.deviceType) > best_rank) {
                best = (int)i;
                best_rank = rank_of(out->props.deviceType);
            }
        } else {
            size_t used = strlen(rejected);
            snprintf(rejected + used, sizeof(rejected) - used, "%s%u (%s): %s", used ? "; " : "", i,
                     out->props.deviceName, why);
        }
    }
    if (best < 0) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_RUNTIME, "no suitable Vulkan device: %s", rejected);
    }
    examine(handles[best], out, why, sizeof(why));
    return 0;
}

/* Creates the logical device with the required features and every supported optional one. */
static int
create_device(QdCtx *ctx, const Candidate *c)
{
    const char *extensions[3];
    uint32_t nextensions = 0;
    float priority = 1.0f;

    VkPhysicalDeviceFeatures2 features = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    features.features.shaderInt64 = VK_TRUE;
    features.features.shaderInt16 = c->features.features.shaderInt16;
    features.features.shaderFloat64 = c->features.features.shaderFloat64;

    VkPhysicalDeviceVulkan11Features v11 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
        .storageBuffer16BitAccess = c->v11.storageBuffer16BitAccess,
        .uniformAndStorageBuffer16BitAccess = c->v11.uniformAndStorageBuffer16BitAccess,
    };
    VkPhysicalDeviceVulkan12Features v12 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
        .bufferDeviceAddress = VK_TRUE,
        .storageBuffer8BitAccess = VK_TRUE,
        .uniformAndStorageBuffer8BitAccess = c->v12.uniformAndStorageBuffer8BitAccess,
        .shaderInt8 = c->v12.shaderInt8,
        .shaderFloat16 = c->v12.shaderFloat16,
        .shaderBufferInt64Atomics = c->v12.shaderBufferInt64Atomics,
        .shaderSharedInt64Atomics = c->v12.shaderSharedInt64Atomics,
        .scalarBlockLayout = c->v12.scalarBlockLayout,
        .vulkanMemoryModel = c->v12.vulkanMemoryModel,
        .vulkanMemoryModelDeviceScope = c->v12.vulkanMemoryModelDeviceScope,
    };
    /* The float atomics on buffers and shared memory as queried; none of the image ones. */
    VkPhysicalDeviceShaderAtomicFloatFeaturesEXT atomic_float = c->atomic_float;
    atomic_float.shaderImageFloat32Atomics = VK_FALSE;
    atomic_float.shaderImageFloat32AtomicAdd = VK_FALSE;
    atomic_float.sparseImageFloat32Atomics = VK_FALSE;
    atomic_float.sparseImageFloat32AtomicAdd = VK_FALSE;
    VkPhysicalDeviceShaderAtomicFloat2FeaturesEXT atomic_float2 = c->atomic_float2;
    atomic_float2.shaderImageFloat32AtomicMinMax = VK_FALSE;
    atomic_float2.sparseImageFloat32AtomicMinMax = VK_FALSE;
    VkPhysicalDeviceSubgroupSizeControlFeaturesEXT size_control = c->size_control;

    features.pNext = &v11;
    v11.pNext = &v12;
    void **tail = &v12.pNext;
    *tail = NULL;
    if (c->has_atomic_float) {
        extensions[nextensions++] = VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME;
        *tail = &atomic_float;
        tail = &atomic_float.pNext;
        *tail = NULL;
    }
    if (c->has_atomic_float2) {
        extensions[nextensions++] = VK_EXT_SHADER_ATOMIC_FLOAT_2_EXTENSION_NAME;
        *tail = &atomic_float2;
        tail = &atomic_float2.pNext;
        *tail = NULL;
    }
    if (c->has_size_control) {
        if (c->has_size_control_ext) {
            extensions[nextensions++] = VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME;
        }
        *tail = &size_control;
        size_control.pNext = NULL;
    }

    VkDeviceQueueCreateInfo queue = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
        .queueFamilyIndex = c->queue_family,
        .queueCount = 1,
        .pQueuePriorities = &priority,
    };
    VkDeviceCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .pNext = &features,
        .queueCreateInfoCount = 1,
        .pQueueCreateInfos = &queue,
        .enabledExtensionCount = nextensions,
        .ppEnabledExtensionNames = extensions,
    };
    return qd_vk_check(ctx, qd_vk.api.vkCreateDevice(c->handle, &info, NULL, &qd_vk.device),
                       "creating the Vulkan device (%s)", c->props.deviceName);
}

/* qd_vk.info from the candidate's properties and features, as enabled by create_device. */
static void
describe(const Candidate *c)
{
    QdVkDeviceInfo *info = &qd_vk.info;
    VkPhysicalDeviceVulkan12Properties props12 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_PROPERTIES,
    };
    VkPhysicalDeviceSubgroupProperties subgroup = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES,
        .pNext = &props12,
    };
    VkPhysicalDeviceProperties2 props = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
        .pNext = &subgroup,
    };
    qd_vk.api.vkGetPhysicalDeviceProperties2(c->handle, &props);
    const VkPhysicalDeviceLimits *limits = &c->props.limits;

    snprintf(info->name, sizeof(info->name), "%s", c->props.deviceName);
    info->api_version = c->props.apiVersion;
    info->driver_version = c->props.driverVersion;
    info->vendor_id = c->props.vendorID;
    info->device_type = (uint32_t)c->props.deviceType;
    info->subgroup_size = subgroup.subgroupSize;
    info->subgroup_ops =
        (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) ? subgroup.supportedOperations : 0;
    info->max_workgroup_size =
        limits->maxComputeWorkGroupSize[0] < limits->maxComputeWorkGroupInvocations
            ? limits->maxComputeWorkGroupSize[0]
            : limits->maxComputeWorkGroupInvocations;
    info->max_workgroup_count = limits->maxComputeWorkGroupCount[0];
    info->max_shared_bytes = limits->maxComputeSharedMemorySize;
    info->max_push_bytes = limits->maxPushConstantsSize;
#define QD_VK_FEATURE(name, bit, dflt, source) info->features.name = (source);
#include "../../abi/vk_features.def"
#undef QD_VK_FEATURE
    qd_vk.max_workgroup_count = limits->maxComputeWorkGroupCount[0];
}

/* The queue, command pool and buffer, fence, pipeline cache and layout, timestamp pool. */
static int
create_objects(QdCtx *ctx, const Candidate *c)
{
    VkDevice dev = qd_vk.device;

    qd_vk.api.vkGetDeviceQueue(dev, c->queue_family, 0, &qd_vk.queue);
    VkCommandPoolCreateInfo pool = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
        .queueFamilyIndex = c->queue_family,
    };
    RETURN_IF_ERROR(
        qd_vk_check(ctx, qd_vk.api.vkCreateCommandPool(dev, &pool, NULL, &qd_vk.command_pool),
                    "creating the Vulkan command pool"));
    VkCommandBufferAllocateInfo commands = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = qd_vk.command_pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    RETURN_IF_ERROR(qd_vk_check(ctx,
                                qd_vk.api.vkAllocateCommandBuffers(dev, &commands, &qd_vk.commands),
                                "allocating the Vulkan command buffer"));
    VkFenceCreateInfo fence = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    RETURN_IF_ERROR(qd_vk_check(ctx, qd_vk.api.vkCreateFence(dev, &fence, NULL, &qd_vk.fence),
                                "creating the Vulkan fence"));
    VkPipelineCacheCreateInfo cache = {.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
    RETURN_IF_ERROR(
        qd_vk_check(ctx, qd_vk.api.vkCreatePipelineCache(dev, &cache, NULL, &qd_vk.pipeline_cache),
                    "creating the Vulkan pipeline cache"));
    VkPushConstantRange push = {
        .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
        .offset = 0,
        .size = QD_VK_PUSH_BYTES,
    };
    VkPipelineLayoutCreateInfo layout = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
        .pushConstantRangeCount = 1,
        .pPushConstantRanges = &push,
    };
    RETURN_IF_ERROR(qd_vk_check(
        ctx, qd_vk.api.vkCreatePipelineLayout(dev, &layout, NULL, &qd_vk.pipeline_layout),
        "creating the Vulkan pipeline layout"));
    if (c->timestamp_bits > 0 && c->props.limits.timestampPeriod > 0) {
        VkQueryPoolCreateInfo queries = {
            .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
            .queryType = VK_QUERY_TYPE_TIMESTAMP,
            .queryCount = 2,
        };
        RETURN_IF_ERROR(
            qd_vk_check(ctx, qd_vk.api.vkCreateQueryPool(dev, &queries, NULL, &qd_vk.timestamps),
                        "creating the Vulkan timestamp queries"));
        qd_vk.timestamp_period_ns = c->props.limits.timestampPeriod;
        qd_vk.timestamp_mask =
            c->timestamp_bits >= 64 ? UINT64_MAX : ((uint64_t)1 << c->timestamp_bits) - 1;
    }
    qd_vk.api.vkGetPhysicalDeviceMemoryProperties(c->handle, &qd_vk.memory);
    return 0;
}

int
qd_vk_open_device(QdCtx *ctx)
{
    Candidate *c = calloc(1, sizeof(*c));
    int rc = -1;

    if (c == NULL) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory");
    }
    if (choose_device(ctx, c) == 0 && create_device(ctx, c) == 0 &&
        qd_vk_resolve(ctx, QD_VK_DEVICE) == 0 && create_objects(ctx, c) == 0) {
        qd_vk.physical = c->handle;
        qd_vk.queue_family = c->queue_family;
        describe(c);
        rc = 0;
    }
    free(c);
    return rc;
}

void
qd_vk_close_device(void)
{
    const QdVkApi *vk = &qd_vk.api;
    VkDevice dev = qd_vk.device;

    if (dev == VK_NULL_HANDLE) {
        return;
    }
    if (vk->vkDestroyDevice == NULL) {
        return; /* not even vkDestroyDevice resolved: the device is left behind (a broken
                   driver; this happens once per process at most) */
    }
    qd_vk_release_slots();
    if (qd_vk.staging != VK_NULL_HANDLE) {
        vk->vkDestroyBuffer(dev, qd_vk.staging, NULL);
        vk->vkFreeMemory(dev, qd_vk.staging_memory, NULL);
    }
    if (qd_vk.timestamps != VK_NULL_HANDLE) {
        vk->vkDestroyQueryPool(dev, qd_vk.timestamps, NULL);
    }
    if (qd_vk.pipeline_layout != VK_NULL_HANDLE) {
        vk->vkDestroyPipelineLayout(dev, qd_vk.pipeline_layout, NULL);
    }
    if (qd_vk.pipeline_cache != VK_NULL_HANDLE) {
        vk->vkDestroyPipelineCache(dev, qd_vk.pipeline_cache, NULL);
    }
    if (qd_vk.fence != VK_NULL_HANDLE) {
        vk->vkDestroyFence(dev, qd_vk.fence, NULL);
    }
    if (qd_vk.command_pool != VK_NULL_HANDLE) {
        vk->vkDestroyCommandPool(dev, qd_vk.command_pool, NULL);
    }
    vk->vkDestroyDevice(dev, NULL);
    qd_vk.device = VK_NULL_HANDLE;
}

/***** submissions *****/

/* A global memory barrier in `cmd`: `src` accesses of `src_stage` before `dst` accesses of
 * `dst_stage`. */
static void
barrier(VkCommandBuffer cmd, VkPipelineStageFlags src_stage, VkAccessFlags src,
        VkPipelineStageFlags dst_stage, VkAccessFlags dst)
{
    VkMemoryBarrier b = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = src,
        .dstAccessMask = dst,
    };
    qd_vk.api.vkCmdPipelineBarrier(cmd, src_stage, dst_stage, 0, 1, &b, 0, NULL, 0, NULL);
}

int
qd_vk_begin_on(QdCtx *ctx, VkCommandBuffer cmd, const char *what)
{
    if (qd_vk.lost[0] != '\0') {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_RUNTIME,
                        "%s: the Vulkan device cannot be used any more: %s", what, qd_vk.lost);
    }
    VkCommandBufferBeginInfo begin = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
    };
    RETURN_IF_ERROR(qd_vk_check(ctx, qd_vk.api.vkBeginCommandBuffer(cmd, &begin),
                                "%s: vkBeginCommandBuffer", what));
    barrier(cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_ACCESS_MEMORY_WRITE_BIT,
            VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
            VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT);
    return 0;
}

int
qd_vk_begin(QdCtx *ctx, const char *what)
{
    RETURN_IF_ERROR(qd_vk_drain_locked(ctx));
    return qd_vk_begin_on(ctx, qd_vk.commands, what);
}

void
qd_vk_abandon(void)
{
    qd_vk.api.vkEndCommandBuffer(qd_vk.commands);
    qd_vk.api.vkResetCommandBuffer(qd_vk.commands, 0);
}

int
qd_vk_end_submit(QdCtx *ctx, VkCommandBuffer cmd, VkFence fence, bool host_read,
                 const char *what)
{
    const QdVkApi *vk = &qd_vk.api;

    if (host_read) {
        barrier(cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_ACCESS_MEMORY_WRITE_BIT,
                VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
    }
    VkResult r = vk->vkEndCommandBuffer(cmd);
    if (r != VK_SUCCESS) {
        vk->vkResetCommandBuffer(cmd, 0);
        return qd_vk_check(ctx, r, "%s: recording the commands", what);
    }
    VkSubmitInfo submit = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .commandBufferCount = 1,
        .pCommandBuffers = &cmd,
    };
    r = vk->vkResetFences(qd_vk.device, 1, &fence);
    if (r == VK_SUCCESS) {
        r = vk->vkQueueSubmit(qd_vk.queue, 1, &submit, fence);
    }
    if (r != VK_SUCCESS) {
        vk->vkResetCommandBuffer(cmd, 0);
        if (r == VK_ERROR_DEVICE_LOST) {
            snprintf(qd_vk.lost, sizeof(qd_vk.lost), "%s: VK_ERROR_DEVICE_LOST", what);
        }
        return qd_vk_check(ctx, r, "%s: vkQueueSubmit", what);
    }
    return 0;
}

int
qd_vk_wait(QdCtx *ctx, VkFence fence, const char *what)
{
    VkResult r =
        qd_vk.api.vkWaitForFences(qd_vk.device, 1, &fence, VK_TRUE, QD_VK_FENCE_TIMEOUT_NS);
    if (r == VK_TIMEOUT) {
        /* The command buffer is still pending: it can be neither reset nor reused. */
        snprintf(qd_vk.lost, sizeof(qd_vk.lost), "%s did not finish within %llu s", what,
                 QD_VK_FENCE_TIMEOUT_NS / 1000000000ull);
        return qd_error(ctx, (QdLoc){0}, QD_ERR_RUNTIME,
                        "%s did not finish within %llu s (a kernel that never ends?)", what,
                        QD_VK_FENCE_TIMEOUT_NS / 1000000000ull);
    }
    if (r != VK_SUCCESS) {
        snprintf(qd_vk.lost, sizeof(qd_vk.lost), "%s: %s", what, qd_vk_result_name(r));
        return qd_vk_check(ctx, r, "%s: waiting for the device", what);
    }
    return 0;
}

int
qd_vk_submit(QdCtx *ctx, const char *what)
{
    RETURN_IF_ERROR(qd_vk_end_submit(ctx, qd_vk.commands, qd_vk.fence, true, what));
    RETURN_IF_ERROR(qd_vk_wait(ctx, qd_vk.fence, what));
    return qd_vk_check(ctx, qd_vk.api.vkResetCommandBuffer(qd_vk.commands, 0),
                       "%s: vkResetCommandBuffer", what);
}
