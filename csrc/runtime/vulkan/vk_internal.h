/* runtime/vulkan/vk_internal.h -- what the files of the Vulkan runtime share: the resolved
 * entry points, the process-wide device state, and the helpers that record and submit the one
 * command buffer.
 *
 * Private to the .c files of runtime/vulkan: it is the only header that includes <vulkan/vulkan.h>
 * (the Khronos headers, for types only: VK_NO_PROTOTYPES, nothing links libvulkan). vulkan.h, the
 * public surface, stays free of them so the rest of the core builds without Vulkan headers.
 *
 * Files: vk_load.c (loader, instance, VkResult names, qd_vk_device), vk_device.c (choosing
 * the physical device, features, the logical device, the command buffer), vk_mem.c,
 * vk_pipeline.c, vk_launch.c.
 */
#ifndef QD_RUNTIME_VULKAN_INTERNAL_H
#define QD_RUNTIME_VULKAN_INTERNAL_H

#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#include <vulkan/vulkan.h>

#include <pthread.h>

#include "vulkan.h"

/* The entry points, one PFN_ field per row of vulkan_api.def, plus the one from dlsym. */
typedef struct QdVkApi {
    PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr; /* dlsym'd from the loader library */
#define QD_VULKAN_API(level, name) PFN_##name name;
#include "vulkan_api.def"
#undef QD_VULKAN_API
} QdVkApi;

/* Where a row of vulkan_api.def is resolved (its `level` column). */
typedef enum QdVkLevel {
    QD_VK_LOADER,   /* vkGetInstanceProcAddr(NULL, name) */
    QD_VK_INSTANCE, /* vkGetInstanceProcAddr(instance, name) */
    QD_VK_DEVICE,   /* vkGetDeviceProcAddr(device, name) */
} QdVkLevel;

/* Bytes of the staging buffer: the chunk size of copies to and from memory the host cannot
 * map (vk_mem.c). */
#define QD_VK_STAGING_BYTES ((VkDeviceSize)16 << 20)

/* Launches in flight at most (each in a slot of its own: command buffer, fence, parameter
 * area), and the bytes of one slot's parameter area (vk_launch.c). */
#define QD_VK_SLOTS            16
#define QD_VK_PARAM_SLOT_BYTES ((VkDeviceSize)64 << 10)

/* How long a submission may run before qd_vk_submit gives up on it (nanoseconds). */
#define QD_VK_FENCE_TIMEOUT_NS (300ull * 1000000000ull)

/* The process's Vulkan state. Written once while opening (vk_load.c, under pthread_once);
 * afterwards the handles are read-only, and `lock` guards the command buffer, the fence, the
 * query pool, the staging buffer and `lost`. */
typedef struct QdVkState {
    QdVkApi api;                      /* every entry point (NULL until resolved) */
    VkInstance instance;              /* API 1.2 instance */
    VkPhysicalDevice physical;        /* the chosen device */
    VkDevice device;                  /* its logical device */
    uint32_t queue_family;            /* a family with VK_QUEUE_COMPUTE_BIT */
    VkQueue queue;                    /* queue 0 of that family */
    VkCommandPool command_pool;       /* holds `commands` (resettable buffers) */
    VkCommandBuffer commands;         /* the one command buffer, recorded under `lock` */
    VkFence fence;                    /* signalled by every submission */
    VkPipelineCache pipeline_cache;   /* in-memory cache shared by every pipeline */
    VkPipelineLayout pipeline_layout; /* one push-constant range, no descriptor sets */
    VkQueryPool timestamps;           /* two timestamp queries; VK_NULL_HANDLE when unsupported */
    double timestamp_period_ns;       /* nanoseconds per timestamp tick */
    uint64_t timestamp_mask;          /* the valid bits of a timestamp */
    VkPhysicalDeviceMemoryProperties memory; /* memory types and heaps */
    uint32_t max_workgroup_count;            /* maxComputeWorkGroupCount[0] */
    QdVkDeviceInfo info;                     /* what qd_vk_device returns */
    /* vk_mem.c: the staging buffer, made on first use under `lock` */
    VkBuffer staging;              /* QD_VK_STAGING_BYTES, TRANSFER_SRC | TRANSFER_DST */
    VkDeviceMemory staging_memory; /* host-visible, coherent */
    void *staging_map;             /* its persistent mapping */
    /* vk_launch.c: the slots of asynchronous launches (made on the first launch, under `lock`)
     * and the host-mapped buffer of their parameter areas, slot i at i * QD_VK_PARAM_SLOT_BYTES */
    VkCommandBuffer slot_commands[QD_VK_SLOTS];
    VkFence slot_fences[QD_VK_SLOTS];
    bool slot_pending[QD_VK_SLOTS]; /* submitted and not yet waited for */
    /* a launch submitted without the barrier towards the host: its writes are made visible to
     * mapped reads by the next drain (qd_vk_drain_locked) */
    bool host_barrier_owed;
    uint32_t next_slot;             /* the slot the next launch takes */
    VkBuffer params;
    VkDeviceMemory params_memory;
    uint8_t *params_map;
    uint64_t params_address;
    /* A submission failed beyond repair (device lost, timeout): every later call that would
     * record commands fails with this reason. "" while the device is healthy. */
    char lost[256];
    pthread_mutex_t lock; /* serializes submissions and allocations */
} QdVkState;

/* What QdVkPipeline is (vk_pipeline.c makes them, vk_launch.c binds them). */
struct QdVkPipeline {
    VkPipeline pipeline; /* the compute pipeline */
    char what[160];      /* its name, for errors */
};

/* The state (vk_load.c). Valid once qd_vk_device succeeded. */
extern QdVkState qd_vk;

/***** vk_load.c *****/

/* The header's name of a VkResult ("VK_ERROR_DEVICE_LOST"), or "VkResult <n>". */
const char *qd_vk_result_name(VkResult r);
/* 0 when r is VK_SUCCESS; else -1 with a QD_ERR_RUNTIME diag "<what>: <VkResult name>".
 * `what` is printf-style and says what the call was for. */
int qd_vk_check(QdCtx *ctx, VkResult r, const char *what, ...)
    __attribute__((format(printf, 3, 4)));
/* Resolves the rows of vulkan_api.def of `level`: through vkGetInstanceProcAddr (on no
 * instance, or on qd_vk.instance) or vkGetDeviceProcAddr on qd_vk.device. 0, or -1 with a diag
 * naming the first command that did not resolve. */
int qd_vk_resolve(QdCtx *ctx, QdVkLevel level);

/***** vk_device.c *****/

/* Chooses the physical device, creates the logical device with every optional feature the
 * device has, the queue, the command pool and buffer, the fence, the pipeline cache and layout
 * and the timestamp pool, and fills qd_vk.info. Called once, after the instance exists. */
int qd_vk_open_device(QdCtx *ctx);
/* Releases what qd_vk_open_device made (a failed open cleans up with it). */
void qd_vk_close_device(void);
/* Begins recording the command buffer (the caller holds qd_vk.lock), after every launch in
 * flight finished (qd_vk_drain_locked), starting with a full memory barrier so that the commands
 * see every write of earlier submissions (host writes to the coherent mapped memory are visible
 * through vkQueueSubmit itself). */
int qd_vk_begin(QdCtx *ctx, const char *what);
/* Begins recording `cmd` with that barrier (the caller holds the lock). */
int qd_vk_begin_on(QdCtx *ctx, VkCommandBuffer cmd, const char *what);
/* Ends `cmd`, with the barrier towards the host when `host_read` (the host reads what it
 * wrote through a mapping once it finished), and submits it with `fence` (reset first),
 * without waiting. */
int qd_vk_end_submit(QdCtx *ctx, VkCommandBuffer cmd, VkFence fence, bool host_read,
                     const char *what);
/* Waits for `fence`; a device loss or a timeout marks the device lost. */
int qd_vk_wait(QdCtx *ctx, VkFence fence, const char *what);
/* Waits for every launch in flight (vk_launch.c; the caller holds the lock). 0, or -1 with the
 * diag of the first that failed. */
int qd_vk_drain_locked(QdCtx *ctx);
/* Releases the launch slots (vk_launch.c; qd_vk_close_device). */
void qd_vk_release_slots(void);
/* Ends the command buffer with a barrier that makes its writes visible to the host, submits it,
 * waits for the fence and leaves the buffer ready for the next qd_vk_begin. A device loss or a
 * timeout marks the device lost (qd_vk.lost). `what` names the work in errors. */
int qd_vk_submit(QdCtx *ctx, const char *what);
/* Ends and drops a recording that will not be submitted (an error while recording). */
void qd_vk_abandon(void);

/* What QdVkBuffer.impl points to. */
typedef struct QdVkMemory {
    VkBuffer buffer;       /* the buffer object */
    VkDeviceMemory memory; /* its dedicated allocation */
    uint8_t *mapped;       /* persistent mapping; NULL: copies go through the staging buffer */
    VkDeviceSize bytes;    /* allocated: the request rounded up to whole 32-bit words */
} QdVkMemory;

#endif /* QD_RUNTIME_VULKAN_INTERNAL_H */
