/* python/vulkan_kernel.c -- the Vulkan row of the DeviceKernel targets (device_kernel.h).
 *
 * Code: the driver emits GLSL, compiles it to SPIR-V with glslang and makes one pipeline per
 * task (codegen/glsl/glsl.h, VULKAN KERNEL ABI). The launch tail carries, after the results, tmps
 * and runtime state, the print buffer and the field addresses.
 * Launch: one qd_vk_launch (the runtime copies the parameter buffer into the launch's own
 * parameter area) that runs a dispatch per task (serial: one workgroup of one invocation;
 * range_for with host bounds: ceil(n / block_dim) workgroups up to a cap, none for an empty
 * range; otherwise the cap). It is asynchronous unless something must come back.
 * Launches run in order, so one kernel's tmps and result slots are never used by two launches
 * at once.
 */
#include "device_kernel.h"

#include "../runtime/cpu/cpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Invocations a range_for task is given at most (grid-stride loops cover the rest): about the
 * threads a large GPU keeps resident (an H100 streams saxpy fastest with 2^18, and slower with
 * one invocation per element); on lavapipe every workgroup is a CPU thread's time slice. And a
 * range_for that reduces into memory with atomics (fewer accumulators to combine). */
#define MAX_INVOCATIONS    (1u << 18)
#define REDUCE_INVOCATIONS (1u << 15)

/* The assert flag and values of every Vulkan launch (abi.h: the runtime state), made on first
 * use and kept for the process, like the device. */
static DeviceMem runtime_state;
/* The print buffer of every Vulkan launch (abi.h: QD_VK_PRINT_BYTES), host-mapped, made with
 * the first kernel that prints. */
static QdVkBuffer print_buffer;

/* Options of the GLSL code generator: the device's features, the options dict's block size and
 * fast math. -1 with a diag when there is no device. */
static int
vk_options(QdCtx *ctx, PyObject *options, DeviceOptions *out, QdTargetEnv *env)
{
    const QdVkDeviceInfo *d = qd_vk_device(ctx);
    if (d == NULL) {
        return -1;
    }
    QdGlslOptions *o = &out->glsl;
    qd_glsl_options_default(o);
    PyObject *block = options ? PyDict_GetItemString(options, "default_gpu_block_dim") : NULL;
    long block_dim = block && PyLong_Check(block) ? PyLong_AsLong(block) : 0;
    PyErr_Clear();
    if (block_dim > 0 && (uint32_t)block_dim <= d->max_workgroup_size) {
        o->default_block_dim = (uint32_t)block_dim;
    }
    PyObject *fast = options ? PyDict_GetItemString(options, "fast_math") : NULL;
    if (fast != NULL) {
        o->fast_math = PyObject_IsTrue(fast) == 1;
    }
    o->subgroup_size = d->subgroup_size;
    o->features = d->features;
    out->tensor_cores = false;
    out->lacks_atomic_int64 = !d->features.atomic_int64;
    o->max_shared_bytes = d->max_shared_bytes;
    out->max_shared_bytes = d->max_shared_bytes;
    env->glsl = o;
    return 0;
}

static void
vk_take(DeviceKernelObject *k)
{
    const QdVkCode *code = &k->code.vk;
    k->layout = &code->layout;
    k->asserts = code->asserts;
    k->assert_kinds = code->assert_kinds;
    k->nasserts = code->nasserts;
    k->prints = code->nprints > 0;
}

static int
vk_alloc(QdCtx *ctx, size_t bytes, bool mapped, DeviceMem *out)
{
    RETURN_IF_ERROR(mapped ? qd_vk_alloc_mapped(ctx, bytes, &out->vk)
                           : qd_vk_alloc(ctx, bytes, &out->vk));
    out->address = out->vk.address;
    return 0;
}

static void
vk_free(DeviceMem *mem)
{
    qd_vk_free(&mem->vk);
    mem->address = 0;
}

static int
vk_upload(QdCtx *ctx, const DeviceMem *dst, const void *src, size_t bytes)
{
    return qd_vk_upload(ctx, &dst->vk, 0, src, bytes);
}

static int
vk_download(QdCtx *ctx, void *dst, const DeviceMem *src, size_t offset, size_t bytes)
{
    return qd_vk_download(ctx, dst, &src->vk, offset, bytes);
}

static bool
vk_owns(const DeviceBufferObject *buf)
{
    return buf->vk.impl != NULL;
}

static const DeviceMem *
vk_runtime_state(void)
{
    return &runtime_state;
}

/* The tasks' workgroup caps, the dispatch scratch, the per-process buffers. */
static int
vk_prepare(DeviceKernelObject *k, QdCtx *ctx, long saturating)
{
    const QdVkDeviceInfo *d = qd_vk_device(ctx);
    if (d == NULL) {
        return -1;
    }
    k->scratch = PyMem_Calloc(k->layout->ntasks + 2, sizeof(QdVkDispatch));
    if (k->scratch == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (uint32_t t = 0; t < k->layout->ntasks; t++) {
        DeviceTask *task = &k->tasks[t];
        uint32_t invocations = k->layout->tasks[t].reduces ? REDUCE_INVOCATIONS : MAX_INVOCATIONS;
        uint32_t groups = saturating > 0 ? (uint32_t)saturating : invocations / task->block_dim;
        groups = groups > 0 ? groups : 1;
        task->max_blocks = groups < d->max_workgroup_count ? groups : d->max_workgroup_count;
        task->open_blocks = task->max_blocks;
    }
    k->param_bytes = k->layout->args_size + QD_VK_TAIL_FIELDS + 8 * k->code.vk.nfields;
    if (runtime_state.vk.impl == NULL) {
        RETURN_IF_ERROR(vk_alloc(ctx, QD_NVPTX_RUNTIME_STATE_BYTES, true, &runtime_state));
    }
    if (k->prints && print_buffer.impl == NULL) {
        RETURN_IF_ERROR(qd_vk_alloc_mapped(ctx, QD_VK_PRINT_BYTES, &print_buffer));
    }
    return 0;
}

/* The print buffer and the field addresses. */
static void
vk_write_tail(const DeviceKernelObject *k, unsigned char *tail)
{
    memcpy(tail + QD_VK_TAIL_PRINT, &print_buffer.address, 8);
    for (uint32_t i = 0; i < k->code.vk.nfields; i++) {
        memcpy(tail + QD_VK_TAIL_FIELDS + 8 * i, &k->code.vk.field_addresses[i], 8);
    }
}

/* Every task of the launch, in order, in one submission. With `seconds` each task is submitted
 * on its own and waited for. */
static int
vk_run(DeviceKernelObject *k, QdCtx *ctx, unsigned char *packed, bool wait, double *seconds)
{
    const QdCompiledKernel *layout = k->layout;
    QdVkDispatch *dispatches = k->scratch;
    uint32_t n = 0;
    for (uint32_t t = 0; t < layout->ntasks; t++) {
        uint32_t groups = qd_py_device_task_blocks(&k->tasks[t], packed);
        if (seconds != NULL) {
            seconds[t] = 0.0;
            if (groups > 0) {
                dispatches[n++] = (QdVkDispatch){k->code.vk.pipelines[t], groups};
                RETURN_IF_ERROR(
                    qd_vk_launch(ctx, dispatches, n, packed, k->param_bytes, true, &seconds[t]));
                n = 0;
            }
        } else if (groups > 0) {
            dispatches[n++] = (QdVkDispatch){k->code.vk.pipelines[t], groups};
        }
    }
    return qd_vk_launch(ctx, dispatches, n, packed, k->param_bytes, wait, NULL);
}

/* Writes out the records of the print buffer (the launch finished) and empties it. */
static int
vk_flush_prints(DeviceKernelObject *k, QdCtx *ctx)
{
    const QdVkCode *code = &k->code.vk;
    uint32_t used = 0;
    RETURN_IF_ERROR(qd_vk_download(ctx, &used, &print_buffer, 0, sizeof(used)));
    if (used == 0) {
        return 0;
    }
    uint64_t capacity = QD_VK_PRINT_BYTES / 8 - 1;
    uint64_t words = used < capacity ? used : capacity;
    uint64_t *records = malloc(words * 8 + 8);
    if (records == NULL) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory");
    }
    int rc = qd_vk_download(ctx, records, &print_buffer, 8, words * 8);
    uint64_t at = 0, dropped = 0;
    while (rc == 0 && at < words) {
        uint32_t id = (uint32_t)records[at];
        uint32_t n = (uint32_t)(records[at] >> 32);
        if (id >= code->nprints || at + 1 + n > words) {
            break; /* a record cut off at the end: only dropped ones follow */
        }
        qd_rt_print(code->prints[id], code->print_kinds[id], records + at + 1, (int32_t)n);
        at += 1 + n;
    }
    dropped = used > words ? used - words : 0;
    free(records);
    uint32_t zero = 0;
    if (rc == 0) {
        rc = qd_vk_upload(ctx, &print_buffer, 0, &zero, sizeof(zero));
    }
    if (rc == 0 && dropped > 0) {
        fprintf(stderr,
                "[Quadrants] Vulkan: %llu words of print output did not fit the %llu-byte print "
                "buffer and were dropped\n",
                (unsigned long long)dropped, (unsigned long long)QD_VK_PRINT_BYTES);
    }
    return rc;
}

static PyObject *
vk_compile_ms(const DeviceKernelObject *k)
{
    return Py_BuildValue("{s:d}", "spirv", k->code.ms_codegen);
}

const DeviceTarget qd_py_vulkan_target = {
    .target = QD_TARGET_vulkan,
    .name = "Vulkan",
    .options = vk_options,
    .take = vk_take,
    .prepare = vk_prepare,
    .alloc = vk_alloc,
    .free = vk_free,
    .upload = vk_upload,
    .download = vk_download,
    .owns = vk_owns,
    .runtime_state = vk_runtime_state,
    .write_tail = vk_write_tail,
    .run = vk_run,
    .flush_prints = vk_flush_prints,
    .compile_ms = vk_compile_ms,
};
