/* python/cuda_kernel.c -- the CUDA row of the DeviceKernel targets (device_kernel.h).
 *
 * Code: the driver compiles to PTX, links it with the driver API's linker and loads the module
 * (codegen.h, NVPTX KERNEL ABI); each task's entry point is looked up in the module.
 * Launch: the parameter buffer is one kernel parameter; per task one launch with its grid
 * (cuda_launch.c's policy: serial -> 1 block of 1 thread; range_for with host bounds ->
 * ceil(n / block_dim) blocks capped at the saturating grid, no launch at all for an empty
 * range; otherwise the grid for an unknown trip count), a dependent launch on sm_90+ for every
 * task but a first one that is a loop.
 * Launches are ordered on the default stream; waiting is left to the copies that follow them.
 */
#include "device_kernel.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

/* The assert flag and values of every CUDA launch (abi.h: the runtime state), made with the
 * first kernel and kept for the process, like the context. */
static DeviceMem runtime_state;
/* Whether a kernel was launched since the last reset (the reset waits for it). */
static bool launched;

void
qd_py_cuda_reset(QdPyState *state)
{
    if (launched) {
        /* Kernels still running on the device may use the fields freed below. An error of an
         * earlier launch surfaces here with nobody to report it to: the reset goes on. */
        QdCtx ctx;
        qd_ctx_init(&ctx);
        Py_BEGIN_ALLOW_THREADS
        (void)qd_cuda_sync(&ctx);
        Py_END_ALLOW_THREADS
        launched = false;
    }
    if (state->cuda_fields != NULL) {
        PyDict_Clear(state->cuda_fields);
    }
}

static int
cuda_options(QdCtx *ctx, PyObject *options, DeviceOptions *out, QdTargetEnv *env)
{
    const QdCudaDevice *device = qd_cuda_device(ctx);
    if (device == NULL) {
        return -1;
    }
    if (qd_py_nvptx_options(options, 10 * device->cc_major + device->cc_minor, &out->nvptx) < 0) {
        return -1;
    }
    out->tensor_cores = out->nvptx.sm >= 80 && qd_py_nn_tensor_cores(options);
    out->lacks_atomic_int64 = false;
    out->max_shared_bytes = device->max_shared_memory_per_block > 0
                                ? (uint32_t)device->max_shared_memory_per_block
                                : 0;
    env->nvptx = &out->nvptx;
    return 0;
}

static void
cuda_take(DeviceKernelObject *k)
{
    const QdNvptxKernel *code = &k->code.ptx;
    k->layout = &code->layout;
    k->asserts = code->asserts;
    k->assert_kinds = code->assert_kinds;
    k->nasserts = code->nasserts;
    k->prints = code->has_print;
}

static int
cuda_alloc(QdCtx *ctx, size_t bytes, bool mapped, DeviceMem *out)
{
    (void)mapped;
    return qd_cuda_alloc(ctx, bytes, &out->address);
}

static void
cuda_free(DeviceMem *mem)
{
    qd_cuda_free(mem->address);
    mem->address = 0;
}

static int
cuda_upload(QdCtx *ctx, const DeviceMem *dst, const void *src, size_t bytes)
{
    return qd_cuda_upload(ctx, dst->address, src, bytes);
}

static int
cuda_download(QdCtx *ctx, void *dst, const DeviceMem *src, size_t offset, size_t bytes)
{
    return qd_cuda_download(ctx, dst, src->address + offset, bytes);
}

static bool
cuda_owns(const DeviceBufferObject *buf)
{
    return buf->vk.impl == NULL;
}

static const DeviceMem *
cuda_runtime_state(void)
{
    return &runtime_state;
}

/* Each task's entry point and grids, the runtime state. */
static int
cuda_prepare(DeviceKernelObject *k, QdCtx *ctx, long saturating)
{
    const QdCudaDevice *device = qd_cuda_device(ctx);
    if (device == NULL) {
        return -1;
    }
    for (uint32_t t = 0; t < k->layout->ntasks; t++) {
        DeviceTask *task = &k->tasks[t];
        RETURN_IF_ERROR(
            qd_cuda_module_function(ctx, k->code.cumodule, task->name, &task->function));
        task->max_blocks = saturating > 0
                               ? (uint32_t)saturating
                               : qd_cuda_saturating_blocks(device, task->function, task->block_dim);
        task->open_blocks =
            saturating > 0 ? (uint32_t)saturating
                           : qd_cuda_unknown_count_blocks(device, task->function, task->block_dim);
        if (k->layout->tasks[t].reduces && saturating <= 0) {
            uint32_t reducing = qd_cuda_reducing_blocks(device, task->block_dim);
            task->max_blocks = reducing < task->max_blocks ? reducing : task->max_blocks;
            task->open_blocks = reducing < task->open_blocks ? reducing : task->open_blocks;
        }
    }
    k->param_bytes = k->layout->args_size + QD_NVPTX_TAIL_BYTES;
    if (runtime_state.address == 0) {
        RETURN_IF_ERROR(qd_cuda_alloc(ctx, QD_NVPTX_RUNTIME_STATE_BYTES, &runtime_state.address));
    }
    return 0;
}

static void
cuda_write_tail(const DeviceKernelObject *k, unsigned char *tail)
{
    (void)k;
    (void)tail;
    _Static_assert(QD_NVPTX_TAIL_BYTES == 24, "the NVPTX launch tail: results, tmps, runtime");
}

/* With `seconds` (the kernel profiler is on) the device is synchronized before the first task
 * and after each one, and seconds[t] receives the wall-clock time from the launch of task t to
 * the end of its synchronization. */
static int
cuda_run(DeviceKernelObject *k, QdCtx *ctx, unsigned char *packed, bool wait, double *seconds)
{
    (void)wait; /* the copies that follow wait */
    launched = true;
    if (seconds) {
        RETURN_IF_ERROR(qd_cuda_sync(ctx));
    }
    for (uint32_t t = 0; t < k->layout->ntasks; t++) {
        const DeviceTask *task = &k->tasks[t];
        double start = seconds ? qd_py_profiler_clock() : 0.0;
        uint32_t blocks = qd_py_device_task_blocks(task, packed);
        /* a dependent launch after a task of this launch, or for a serial task (its one block
         * waits at no cost); a first range_for task is a plain launch (cuda_launch.c) */
        bool overlap = t > 0 || task->is_serial;
        if (blocks > 0) {
            RETURN_IF_ERROR(qd_cuda_launch(ctx, task->function, blocks, task->block_dim, packed,
                                           task->name, overlap));
        }
        if (seconds) {
            RETURN_IF_ERROR(qd_cuda_sync(ctx));
            seconds[t] = qd_py_profiler_clock() - start;
        }
    }
    return 0;
}

/* Device printf writes its output when the device is synchronized. */
static int
cuda_flush_prints(DeviceKernelObject *k, QdCtx *ctx)
{
    (void)k;
    int rc = qd_cuda_sync(ctx);
    fflush(stdout);
    return rc;
}

static PyObject *
cuda_compile_ms(const DeviceKernelObject *k)
{
    return Py_BuildValue("{s:d,s:d,s:d}", "ptx", k->code.ms_codegen, "link", k->code.ms_link,
                         "load", k->code.ms_load);
}

const DeviceTarget qd_py_cuda_target = {
    .target = QD_TARGET_cuda,
    .name = "CUDA",
    .options = cuda_options,
    .take = cuda_take,
    .prepare = cuda_prepare,
    .alloc = cuda_alloc,
    .free = cuda_free,
    .upload = cuda_upload,
    .download = cuda_download,
    .owns = cuda_owns,
    .runtime_state = cuda_runtime_state,
    .write_tail = cuda_write_tail,
    .run = cuda_run,
    .flush_prints = cuda_flush_prints,
    .compile_ms = cuda_compile_ms,
};

/***** benchmarks *****/

PyObject *
qd_py_cuda_raw_launch_us(PyObject *kernel, PyObject *const *args, Py_ssize_t nargs,
                         long iterations)
{
    unsigned char packed[1024] __attribute__((aligned(16)));
    QdCtx ctx;

    if (!qd_py_is_device_kernel(kernel) ||
        ((DeviceKernelObject *)kernel)->target != &qd_py_cuda_target ||
        (uint32_t)nargs != ((DeviceKernelObject *)kernel)->nparams ||
        ((DeviceKernelObject *)kernel)->layout->ntasks == 0) {
        PyErr_SetString(PyExc_TypeError, "cuda_raw_launch_us(CUDA DeviceKernel, args, iterations)");
        return NULL;
    }
    DeviceKernelObject *self = (DeviceKernelObject *)kernel;
    qd_ctx_init(&ctx);
    const QdCudaApi *cu = qd_cuda_load(&ctx);
    if (cu == NULL) {
        qd_py_raise_diag(self->module, &ctx.diag);
        return NULL;
    }
    if (qd_py_device_pack_device_only(self, args, packed, sizeof(packed)) < 0) {
        return NULL;
    }
    const DeviceTask *task = &self->tasks[0];
    void *params[1] = {packed};
    uint32_t blocks = qd_py_device_task_blocks(task, packed);
    blocks = blocks > 0 ? blocks : 1; /* the grid the launcher would use (an empty range: 1) */
    struct timespec t0, t1;
    QdCuResult r = 0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < iterations && r == 0; i++) {
        r = cu->cuLaunchKernel(task->function, blocks, 1, 1, task->block_dim, 1, 1, 0, NULL, params,
                               NULL);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (qd_cuda_check(&ctx, r, "cuLaunchKernel") < 0) {
        qd_py_raise_diag(self->module, &ctx.diag);
        return NULL;
    }
    double us = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / 1e3;
    return PyFloat_FromDouble(us / (double)(iterations > 0 ? iterations : 1));
}
