/* runtime/vulkan/vulkan.h -- the Vulkan runtime: the loader opened with dlopen, one compute
 * device, device memory addressed by buffer device address, compute pipelines made from SPIR-V,
 * and launches.
 *
 * Depends on base/ only (the layer rules); nothing here knows the IR or GLSL. Nothing links
 * libvulkan: vk_load.c opens libvulkan.so.1 (or $QD_VULKAN_LOADER) on first use and resolves
 * the entry points of vulkan_api.def (vkGetInstanceProcAddr / vkGetDeviceProcAddr), so a machine
 * without a loader or a device imports the extension and runs the other backends;
 * qd_vk_available() then says false and qd_vk_device's diag says why.
 *
 * Model (one process, one device):
 *   - the device is the first physical device that is Vulkan 1.2+ and has what every kernel
 *     needs (compute queue, bufferDeviceAddress, shaderInt64, storageBuffer8BitAccess); a
 *     discrete GPU is preferred to an integrated one, either to a CPU implementation;
 * $QD_VULKAN_DEVICE (an index into vkEnumeratePhysicalDevices) overrides the choice;
 *   - every buffer is created with SHADER_DEVICE_ADDRESS usage, so generated code reaches all
 *     memory through 64-bit addresses (GL_EXT_buffer_reference) and a kernel's only binding is
 *     one push constant: the address of its parameter buffer;
 *   - launches (qd_vk_launch) are asynchronous: each is a command buffer of its own submitted to
 *     the one queue, starting with a full barrier so it runs after everything before it; a
 *     copy, fill or free first waits for every launch in flight, so the host never sees or
 *     frees memory a kernel may still use (qd_vk_run is the synchronous form of tests);
 *   - every failing call becomes a QD_ERR_RUNTIME diag naming the call's purpose and the
 *     VkResult's name.
 * Thread safety: one lock serializes every call that submits work or allocates.
 */
#ifndef QD_RUNTIME_VULKAN_H
#define QD_RUNTIME_VULKAN_H

#include "../../abi/abi.h"
#include "../../base/base.h"

/* The device in use and what it can do, queried once. */
typedef struct QdVkDeviceInfo {
    char name[256];               /* VkPhysicalDeviceProperties.deviceName */
    uint32_t api_version;         /* VK_MAKE_API_VERSION of the device */
    uint32_t driver_version;      /* as the driver reports it */
    uint32_t vendor_id;           /* PCI vendor (0x10de NVIDIA, 0x10005 Mesa's lavapipe) */
    uint32_t device_type;         /* VkPhysicalDeviceType (QD_VK_DEVICE_TYPE_CPU: lavapipe) */
    uint32_t subgroup_size;       /* VkPhysicalDeviceSubgroupProperties.subgroupSize */
    uint32_t subgroup_ops;        /* its supportedOperations (VkSubgroupFeatureFlags) in compute */
    uint32_t max_workgroup_size;  /* maxComputeWorkGroupSize[0] and ...Invocations, the smaller */
    uint32_t max_workgroup_count; /* maxComputeWorkGroupCount[0] */
    uint32_t max_shared_bytes;    /* maxComputeSharedMemorySize */
    uint32_t max_push_bytes;      /* maxPushConstantsSize */
    QdVkFeatures features;        /* the optional features (abi/vk_features.def) */
} QdVkDeviceInfo;

/* VK_PHYSICAL_DEVICE_TYPE_CPU: a CPU implementation such as Mesa's lavapipe. */
#define QD_VK_DEVICE_TYPE_CPU 4

/* Whether the loader opens and a suitable device exists. Never fails; the outcome is kept. */
bool qd_vk_available(void);
/* The device, creating instance, device, queue and command pool on first use (thread-safe).
 * NULL with a QD_ERR_RUNTIME diag saying why (no loader, no suitable device, a missing
 * feature, a failed call). */
const QdVkDeviceInfo *qd_vk_device(QdCtx *ctx);

/***** vk_mem.c *****/

/* A buffer of device memory. `address` is its device address (what kernels and packed
 * arguments hold); the rest belongs to the runtime. */
typedef struct QdVkBuffer {
    uint64_t address; /* vkGetBufferDeviceAddress; 0 for none */
    uint64_t size;    /* bytes */
    void *impl;       /* runtime's: VkBuffer, VkDeviceMemory, mapping */
} QdVkBuffer;

/* Allocates `bytes` (at least 1) of device memory, zero-filled. Out of memory is a diag naming
 * the size. */
int qd_vk_alloc(QdCtx *ctx, size_t bytes, QdVkBuffer *out);
/* As qd_vk_alloc, in memory the host maps (HOST_VISIBLE and HOST_COHERENT; DEVICE_LOCAL too
 * where the device has such memory): copies to and from it are memcpy, never a submission.
 * For the small buffers of every launch (parameters, results). */
int qd_vk_alloc_mapped(QdCtx *ctx, size_t bytes, QdVkBuffer *out);
/* Frees a buffer (a zeroed one is allowed) and zeroes it. */
void qd_vk_free(QdVkBuffer *buffer);
/* Synchronous copies between host memory and buffer bytes [offset, offset + bytes); each is
 * ordered after every earlier launch (they wait for the launches in flight). Direct through a
 * mapping when the memory is host-visible, else through a staging buffer. */
int qd_vk_upload(QdCtx *ctx, const QdVkBuffer *dst, size_t offset, const void *src, size_t bytes);
int qd_vk_download(QdCtx *ctx, void *dst, const QdVkBuffer *src, size_t offset, size_t bytes);
/* Fills bytes [offset, offset + bytes) with `value` (offset and bytes multiples of 4). */
int qd_vk_fill(QdCtx *ctx, const QdVkBuffer *dst, size_t offset, size_t bytes, uint32_t value);

/***** vk_pipeline.c *****/

/* A compute pipeline: one SPIR-V module with entry point "main", whose only interface is a
 * push constant block of QD_VK_PUSH_BYTES (the parameter buffer's u64 address). */
typedef struct QdVkPipeline QdVkPipeline;

#define QD_VK_PUSH_BYTES 8

/* Creates a pipeline from SPIR-V words; `what` names it in errors. */
int qd_vk_pipeline_new(QdCtx *ctx, const uint32_t *spirv, size_t nwords, const char *what,
                       QdVkPipeline **out);
/* Destroys a pipeline (NULL is allowed). */
void qd_vk_pipeline_free(QdVkPipeline *pipeline);

/***** vk_launch.c *****/

/* One step of a launch: `groups` workgroups (1-D) of `pipeline`. */
typedef struct QdVkDispatch {
    const QdVkPipeline *pipeline;
    uint32_t groups;
} QdVkDispatch;

/* Runs the dispatches in order in one command buffer, with a memory barrier (writes before
 * reads and writes) between consecutive ones, every one given the push constant
 * `params`; submits it and waits for completion. `seconds` (NULL: not wanted) receives the GPU
 * time of the whole launch from timestamp queries, when the queue supports them, else the wall
 * time of submit and wait. A device loss or timeout is a diag. */
int qd_vk_run(QdCtx *ctx, const QdVkDispatch *dispatches, uint32_t n, uint64_t params,
              double *seconds);

/* A launch as the kernels' launcher makes it: the dispatches recorded into a command buffer of
 * their own (one of QD_VK_SLOTS in a ring) with the push constant pointing at a copy of
 * `params` (nbytes, at most 64 KiB) in host-mapped memory, and submitted. Without `wait` it
 * returns at once: later launches run after it (every submission begins with a full barrier),
 * and every copy, fill or free waits for it first, as qd_vk_sync does; with `wait` (or
 * `seconds`, which receives its GPU time) it returns once everything launched finished.
 * An error of an asynchronous launch surfaces at the next wait. */
int qd_vk_launch(QdCtx *ctx, const QdVkDispatch *dispatches, uint32_t n, const void *params,
                 size_t nbytes, bool wait, double *seconds);
/* Waits for every launch in flight (qd.sync). */
int qd_vk_sync(QdCtx *ctx);

#endif /* QD_RUNTIME_VULKAN_H */
