/* python/vulkan_kernel.c -- kernels compiled for Vulkan: the VulkanKernel type, its compile
 * through the driver and its launch.
 *
 * `_core.compile_kernel(...)` with options["arch"] == "vulkan" comes here (kernel.c) and returns
 * a VulkanKernel, called exactly like a CompiledKernel or a CudaKernel: one positional argument
 * per kernel parameter (ndarrays as DeviceBuffers made with vulkan=True, or host buffers such as
 * NumPy arrays, copied to device memory for the launch and back after it).
 *
 * Compile: qd_driver_compile with target QD_TARGET_vulkan (frontend, passes, offline cache, GLSL,
 * SPIR-V, host bounds, pipelines, field addresses: codegen/glsl/glsl.h, VULKAN KERNEL ABI).
 * The kernel's parameter buffer, kernel_ret slots and tmp_alloc slots are device buffers made
 * once per kernel.
 *
 * Launch (vk_call): pack the arguments, the launch tail and the field addresses; then one
 * qd_vk_launch (the runtime copies them into the launch's own parameter area) that zeroes the
 * tmps and runs a dispatch per task (serial: one workgroup of one invocation; range_for with
 * host bounds: ceil(n / block_dim) workgroups up to a cap, none for an empty range; otherwise
 * the cap). The launch is asynchronous unless something must come back: results, an assert
 * flag to read, host arrays to copy back. Launches run in order, so one kernel's tmps and
 * result slots are never used by two launches at once.
 */
#include "cuda_py.h"

#include <structmember.h>

#include "../runtime/cpu/cpu.h"

#include <stdio.h>
#include <string.h>

/* Arguments packed on the stack up to this many bytes; larger buffers use PyMem. */
#define INLINE_PARAM_BYTES 1024
/* Invocations a range_for task is given at most (grid-stride loops cover the rest): about the
 * threads a large GPU keeps resident (an H100 streams saxpy fastest with 2^18, and slower with
 * one invocation per element); on lavapipe every workgroup is a CPU thread's time slice. And a
 * range_for that reduces into memory with atomics (fewer accumulators to combine). */
#define MAX_INVOCATIONS    (1u << 18)
#define REDUCE_INVOCATIONS (1u << 15)

/* The assert flag and values of every Vulkan launch (abi.h: the runtime state), made on first
 * use and kept for the process, like the device. */
static QdVkBuffer runtime_state;
/* The print buffer of every Vulkan launch (abi.h: QD_VK_PRINT_BYTES), host-mapped, made with
 * the first kernel that prints. */
static QdVkBuffer print_buffer;

/* One task as the launcher runs it. */
typedef struct VkTask {
    QdTaskBounds bounds; /* range_for: host bounds function, or NULL */
    uint32_t block_dim;  /* invocations per workgroup (1 for a serial task) */
    uint32_t max_groups; /* range_for: the most workgroups */
    bool is_serial;
} VkTask;

/* A kernel compiled for Vulkan for one argument signature. */
typedef struct VulkanKernelObject {
    PyObject_HEAD vectorcallfunc vectorcall; /* vk_vectorcall */
    PyObject *module;                        /* quadrants._core (strong) */
    PyObject *qir_frontend;                  /* str or NULL (options["keep_qir"]) */
    PyObject *qir;                           /* str or NULL */
    QdVkCode code;                           /* layout, pipelines, fields, asserts */
    QdCompiledKernel host;                   /* host bounds functions (CPU JIT) */
    VkTask *tasks;                           /* code.layout.ntasks entries */
    QdVkDispatch *dispatches;                /* scratch of one launch: ntasks + 1 entries */
    QdPyParam *params;                       /* one per Python argument */
    uint32_t nparams;
    uint32_t param_bytes;    /* args_size + tail + 8 per field */
    int64_t rng_offset;      /* offset of the hidden random seed, -1 when none */
    QdVkBuffer results;      /* kernel_ret slots (address 0 when none) */
    QdVkBuffer tmps;         /* tmp_alloc slots (address 0 when none) */
    uint64_t generation;     /* runtime generation it was compiled in */
    QdCpuJit *own_jit;       /* QIR tests: the JIT holding the host bounds (else NULL) */
    double ms_codegen;       /* compile: frontend to SPIR-V */
    bool from_cache;         /* the SPIR-V came from the offline cache */
    PyObject *profile_names; /* tuple: the kernel profiler's name of each task, or NULL */
} VulkanKernelObject;

static PyObject *vulkan_kernel_type; /* set by qd_py_vulkan_add (one module per process) */

bool
qd_py_wants_vulkan(PyObject *options)
{
    PyObject *arch = options ? PyDict_GetItemString(options, "arch") : NULL;
    return arch != NULL && PyUnicode_Check(arch) &&
           PyUnicode_CompareWithASCIIString(arch, "vulkan") == 0;
}

/***** the type *****/

static int
vk_traverse(VulkanKernelObject *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->module);
    Py_VISIT(self->qir_frontend);
    Py_VISIT(self->qir);
    Py_VISIT(self->profile_names);
    return 0;
}

static int
vk_clear(VulkanKernelObject *self)
{
    Py_CLEAR(self->module);
    Py_CLEAR(self->qir_frontend);
    Py_CLEAR(self->qir);
    Py_CLEAR(self->profile_names);
    return 0;
}

static void
vk_dealloc(VulkanKernelObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    vk_clear(self);
    QdDriverKernel k;
    memset(&k, 0, sizeof(k));
    k.target = QD_TARGET_vulkan;
    k.vk = self->code;
    k.host = self->host;
    qd_driver_kernel_release(&k);
    qd_vk_free(&self->results);
    qd_vk_free(&self->tmps);
    qd_cpu_jit_free(self->own_jit);
    PyMem_Free(self->tasks);
    PyMem_Free(self->dispatches);
    PyMem_Free(self->params);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

/***** launch *****/

/* The memory of a launch's ndarray arguments: DeviceBuffers as they are, host buffers copied
 * to temporary device buffers once they passed every check, and back after the launch. */
typedef struct VkArrays {
    QdPyArrayMemory memory; /* vk_open, vk_place */
    QdPyHostArrays host;    /* the host buffers lent */
    QdVkBuffer *dev;        /* their device copies, one per host buffer */
    uint32_t ndev;
    PyObject *device_buffer_type; /* borrowed */
    bool opened_host;             /* the argument vk_open described last is a host buffer */
    QdCtx *ctx;
    PyObject *module; /* borrowed */
} VkArrays;

static int
vk_open(QdPyArrayMemory *memory, uint32_t i, PyObject *arg, QdPyArray *out)
{
    VkArrays *self = (VkArrays *)memory;
    self->opened_host = false;
    if (Py_TYPE(arg) == (PyTypeObject *)self->device_buffer_type) {
        const DeviceBufferObject *buf = (const DeviceBufferObject *)arg;
        if (buf->vk.impl == NULL && buf->nbytes > 0) {
            PyErr_SetString(PyExc_ValueError,
                            "a CUDA DeviceBuffer cannot be passed to a kernel on Vulkan");
            return -1;
        }
        out->data = buf->ptr;
        out->ndim = buf->ndim;
        out->itemsize = buf->itemsize;
        memcpy(out->shape, buf->shape, sizeof(out->shape));
        return 0;
    }
    if (self->host.memory.open(&self->host.memory, i, arg, out) < 0) {
        return -1;
    }
    out->data = 0;
    self->opened_host = true;
    return 0;
}

static int
vk_place(QdPyArrayMemory *memory, uint32_t i, QdPyArray *array)
{
    (void)i;
    VkArrays *self = (VkArrays *)memory;
    if (!self->opened_host) {
        return 0;
    }
    uint32_t h = self->host.count - 1;
    if (h >= self->ndev) {
        uint32_t n = self->host.capacity;
        QdVkBuffer *dev = PyMem_Realloc(self->dev, n * sizeof(QdVkBuffer));
        if (dev == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        memset(dev + self->ndev, 0, (n - self->ndev) * sizeof(QdVkBuffer));
        self->dev = dev;
        self->ndev = n;
    }
    const Py_buffer *view = &self->host.views[h];
    size_t bytes = (size_t)view->len;
    if (qd_vk_alloc(self->ctx, bytes ? bytes : 1, &self->dev[h]) < 0 ||
        (bytes > 0 && qd_vk_upload(self->ctx, &self->dev[h], 0, view->buf, bytes) < 0)) {
        return qd_py_raise_diag(self->module, &self->ctx->diag);
    }
    array->data = self->dev[h].address;
    return 0;
}

static void
vk_arrays_init(VkArrays *a, QdPyState *state, QdCtx *ctx, PyObject *module)
{
    a->memory.open = vk_open;
    a->memory.place = vk_place;
    qd_py_host_arrays_init(&a->host);
    a->dev = NULL;
    a->ndev = 0;
    a->device_buffer_type = state->device_buffer_type;
    a->opened_host = false;
    a->ctx = ctx;
    a->module = module;
}

static void
vk_arrays_release(VkArrays *a)
{
    for (uint32_t i = 0; i < a->ndev; i++) {
        qd_vk_free(&a->dev[i]);
    }
    PyMem_Free(a->dev);
    a->dev = NULL;
    a->ndev = 0;
    qd_py_host_arrays_release(&a->host);
}

/* The workgroups of task t for the packed arguments; 0 for an empty range. */
static uint32_t
task_groups(const VkTask *task, unsigned char *packed)
{
    if (task->is_serial) {
        return 1;
    }
    if (task->bounds == NULL) {
        return task->max_groups;
    }
    QdLaunchCtx host_ctx;
    int64_t bounds[2] = {0, 0};
    host_ctx.args = packed;
    host_ctx.results = NULL;
    host_ctx.tmps = NULL;
    task->bounds(&host_ctx, bounds);
    if (bounds[1] == bounds[0]) {
        return 0; /* an empty range has end = begin (the bounds function clamps it) */
    }
    uint64_t n = (uint64_t)bounds[1] - (uint64_t)bounds[0];
    uint64_t groups = (n + task->block_dim - 1) / task->block_dim;
    return groups < task->max_groups ? (uint32_t)groups : task->max_groups;
}

/* Every task of the launch, in order, in one submission that first zeroes the tmps; `wait`:
 * returns once it finished. With `seconds` (the kernel profiler is on) each task is submitted
 * on its own and waited for, and seconds[t] receives its time. */
static int
run_tasks(VulkanKernelObject *self, QdCtx *ctx, unsigned char *packed, bool wait, double *seconds)
{
    const QdCompiledKernel *layout = &self->code.layout;
    uint32_t n = 0;
    if (layout->tmps_size > 0) {
        self->dispatches[n++] = (QdVkDispatch){NULL, 0, &self->tmps, (layout->tmps_size + 3) & ~3u};
    }
    for (uint32_t t = 0; t < layout->ntasks; t++) {
        uint32_t groups = task_groups(&self->tasks[t], packed);
        if (seconds != NULL) {
            seconds[t] = 0.0;
            if (groups > 0) {
                self->dispatches[n++] = (QdVkDispatch){self->code.pipelines[t], groups, NULL, 0};
                RETURN_IF_ERROR(qd_vk_launch(ctx, self->dispatches, n, packed, self->param_bytes,
                                             true, &seconds[t]));
                n = 0;
            }
        } else if (groups > 0) {
            self->dispatches[n++] = (QdVkDispatch){self->code.pipelines[t], groups, NULL, 0};
        }
    }
    return qd_vk_launch(ctx, self->dispatches, n, packed, self->param_bytes, wait, NULL);
}

/* Reads (and clears) the assert flag after a launch: -1 with the QD_ERR_ASSERTION diag of the
 * failed assert, 0 when none failed. */
static int
check_assert_flag(VulkanKernelObject *self, QdCtx *ctx)
{
    uint64_t words[QD_NVPTX_RUNTIME_STATE_BYTES / 8];
    int32_t flag = 0;

    RETURN_IF_ERROR(qd_vk_download(ctx, &flag, &runtime_state, 0, sizeof(flag)));
    if (flag == 0) {
        return 0;
    }
    uint32_t id = (uint32_t)flag - 1;
    int32_t zero = 0;
    RETURN_IF_ERROR(qd_vk_upload(ctx, &runtime_state, 0, &zero, sizeof(zero)));
    if (id >= self->code.nasserts) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_ASSERTION, "assertion failed");
    }
    const char *kinds = self->code.assert_kinds[id];
    size_t n = strlen(kinds);
    RETURN_IF_ERROR(qd_vk_download(ctx, words, &runtime_state, 0, 8 + 8 * n));
    QdLaunchCtx host_ctx;
    host_ctx.assert_failed = 0;
    host_ctx.assert_message[0] = '\0';
    if (n > 0) {
        qd_rt_assert_fail_fmt(&host_ctx, self->code.asserts[id], kinds, words + 1, (int32_t)n);
    } else {
        qd_rt_assert_fail(&host_ctx, self->code.asserts[id]);
    }
    return qd_error(ctx, (QdLoc){0}, QD_ERR_ASSERTION, "%s", host_ctx.assert_message);
}

/* Writes out the records of the print buffer (the launch finished) and empties it. */
static int
flush_prints(VulkanKernelObject *self, QdCtx *ctx)
{
    uint32_t used = 0;
    RETURN_IF_ERROR(qd_vk_download(ctx, &used, &print_buffer, 0, sizeof(used)));
    if (used == 0) {
        return 0;
    }
    uint64_t capacity = QD_VK_PRINT_BYTES / 8 - 1;
    uint64_t words = used < capacity ? used : capacity;
    uint64_t *records = PyMem_Malloc(words * 8 + 8);
    if (records == NULL) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory");
    }
    int rc = qd_vk_download(ctx, records, &print_buffer, 8, words * 8);
    uint64_t at = 0, dropped = 0;
    while (rc == 0 && at < words) {
        uint32_t id = (uint32_t)records[at];
        uint32_t n = (uint32_t)(records[at] >> 32);
        if (id >= self->code.nprints || at + 1 + n > words) {
            break; /* a record cut off at the end: only dropped ones follow */
        }
        qd_rt_print(self->code.prints[id], self->code.print_kinds[id], records + at + 1,
                    (int32_t)n);
        at += 1 + n;
    }
    dropped = used > words ? used - words : 0;
    PyMem_Free(records);
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

/* After the launch: the assert flag, host arrays, results. New reference or NULL. */
static PyObject *
finish_launch(VulkanKernelObject *self, QdCtx *ctx, const VkArrays *arrays)
{
    uint64_t inline_slots[QD_PY_INLINE_RESULTS];
    uint64_t *slots = inline_slots;
    uint32_t nresults = self->code.layout.nresults;
    int rc = 0;

    if (nresults > QD_ARRAY_LEN(inline_slots)) {
        slots = PyMem_Malloc((size_t)nresults * QD_RESULT_SLOT_BYTES);
        if (!slots) {
            return PyErr_NoMemory();
        }
    }
    if (self->code.nprints > 0) {
        rc = flush_prints(self, ctx);
    }
    if (rc == 0 && self->code.nasserts > 0) {
        rc = check_assert_flag(self, ctx);
    }
    for (uint32_t i = 0; rc == 0 && i < arrays->host.count && i < arrays->ndev; i++) {
        const Py_buffer *view = &arrays->host.views[i];
        if (arrays->dev[i].impl != NULL && !view->readonly && view->len > 0) {
            rc = qd_vk_download(ctx, view->buf, &arrays->dev[i], 0, (size_t)view->len);
        }
    }
    if (rc == 0 && nresults > 0) {
        rc = qd_vk_download(ctx, slots, &self->results, 0, QD_RESULT_SLOT_BYTES * nresults);
    }
    PyObject *ret = NULL;
    if (rc < 0) {
        qd_py_raise_diag(self->module, &ctx->diag);
    } else {
        ret = qd_py_unpack_results((const unsigned char *)slots, self->code.layout.result_types,
                                   nresults);
    }
    if (slots != inline_slots) {
        PyMem_Free(slots);
    }
    return ret;
}

/* The parameter buffer's contents: arguments, the launch tail, the field addresses. */
static int
pack_arguments(VulkanKernelObject *self, QdPyState *state, PyObject *const *args,
               unsigned char *packed, VkArrays *arrays)
{
    memset(packed, 0, self->param_bytes);
    if (self->rng_offset >= 0) {
        uint64_t seed = qd_py_next_rng_seed(state);
        memcpy(packed + self->rng_offset, &seed, sizeof(seed));
    }
    RETURN_IF_ERROR(
        qd_py_pack_arguments(self->params, self->nparams, args, packed, &arrays->memory));
    unsigned char *tail = packed + self->code.layout.args_size;
    memcpy(tail + QD_NVPTX_TAIL_RESULTS, &self->results.address, 8);
    memcpy(tail + QD_NVPTX_TAIL_TMPS, &self->tmps.address, 8);
    memcpy(tail + QD_NVPTX_TAIL_RUNTIME, &runtime_state.address, 8);
    memcpy(tail + QD_VK_TAIL_PRINT, &print_buffer.address, 8);
    for (uint32_t i = 0; i < self->code.nfields; i++) {
        memcpy(tail + QD_VK_TAIL_FIELDS + 8 * i, &self->code.field_addresses[i], 8);
    }
    return 0;
}

static PyObject *
vk_call(VulkanKernelObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    QdPyState *state = qd_py_state(self->module);
    unsigned char inline_buffer[INLINE_PARAM_BYTES] __attribute__((aligned(16)));
    unsigned char *packed = inline_buffer;
    VkArrays arrays;
    PyObject *ret = NULL;
    QdCtx ctx;

    if (kwnames && PyTuple_GET_SIZE(kwnames)) {
        PyErr_SetString(PyExc_TypeError, "compiled kernels take positional arguments only");
        return NULL;
    }
    if ((uint32_t)nargs != self->nparams) {
        PyErr_Format(PyExc_TypeError, "kernel takes %u arguments, %zd given", self->nparams, nargs);
        return NULL;
    }
    if (self->param_bytes > sizeof(inline_buffer)) {
        packed = PyMem_Malloc(self->param_bytes);
        if (packed == NULL) {
            return PyErr_NoMemory();
        }
    }
    qd_ctx_init(&ctx);
    vk_arrays_init(&arrays, state, &ctx, self->module);
    if (pack_arguments(self, state, args, packed, &arrays) < 0) {
        goto done;
    }
    if (self->generation != state->generation) {
        PyErr_SetString(state->error_classes[QD_ERR_RUNTIME],
                        "this kernel was compiled before qd.reset(); call it again to recompile");
        goto done;
    }
    uint32_t ntasks = self->code.layout.ntasks;
    double *seconds = NULL;
    if (state->profiler_records) {
        seconds = PyMem_Calloc(ntasks ? ntasks : 1, sizeof(double));
        if (!seconds) {
            PyErr_NoMemory();
            goto done;
        }
    }
    bool wait = self->code.layout.nresults > 0 || self->code.nasserts > 0 || arrays.host.count > 0;
    int launched = run_tasks(self, &ctx, packed, wait, seconds);
    if (seconds) {
        int recorded = qd_py_profiler_record(state, self->profile_names, ntasks, seconds);
        PyMem_Free(seconds);
        if (recorded < 0) {
            goto done;
        }
    }
    if (launched < 0) {
        qd_py_raise_diag(self->module, &ctx.diag);
        goto done;
    }
    ret = finish_launch(self, &ctx, &arrays);
done:
    vk_arrays_release(&arrays);
    if (packed != inline_buffer) {
        PyMem_Free(packed);
    }
    return ret;
}

static PyObject *
vk_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    return vk_call((VulkanKernelObject *)callable, args, nargsf, kwnames);
}

static PyObject *
vk_tp_call(PyObject *self, PyObject *args, PyObject *kwargs)
{
    if (kwargs && PyDict_GET_SIZE(kwargs)) {
        PyErr_SetString(PyExc_TypeError, "compiled kernels take positional arguments only");
        return NULL;
    }
    return vk_call((VulkanKernelObject *)self, &PyTuple_GET_ITEM(args, 0),
                   (size_t)PyTuple_GET_SIZE(args), NULL);
}

/***** compile *****/

/* Where the driver finds a field's device memory: the registry of cuda_register_field (field
 * ids, names "f<id>"), or a dict of DeviceBuffers by name (QIR tests). */
typedef struct FieldLookup {
    QdPyState *state;
    PyObject *by_name;
} FieldLookup;

static const void *
field_address(void *user, const char *name)
{
    const FieldLookup *lookup = user;
    QdPyState *state = lookup->state;
    PyObject *key = lookup->by_name != NULL ? PyUnicode_FromString(name)
                    : name[0] == 'f'        ? PyLong_FromString(name + 1, NULL, 10)
                                            : NULL;
    PyObject *registry = lookup->by_name != NULL ? lookup->by_name : state->cuda_fields;
    PyObject *buf = key && registry ? PyDict_GetItemWithError(registry, key) : NULL;
    Py_XDECREF(key);
    PyErr_Clear();
    if (buf == NULL || Py_TYPE(buf) != (PyTypeObject *)state->device_buffer_type ||
        ((DeviceBufferObject *)buf)->vk.impl == NULL) {
        return NULL;
    }
    return (const void *)(uintptr_t)((DeviceBufferObject *)buf)->ptr;
}

/* Options of the GLSL code generator: the device's features, the options dict's block size and
 * fast math. -1 with a diag when there is no device. */
static int
glsl_options(QdCtx *ctx, PyObject *options, QdGlslOptions *out)
{
    const QdVkDeviceInfo *d = qd_vk_device(ctx);
    if (d == NULL) {
        return -1;
    }
    qd_glsl_options_default(out);
    PyObject *block = options ? PyDict_GetItemString(options, "default_gpu_block_dim") : NULL;
    long block_dim = block && PyLong_Check(block) ? PyLong_AsLong(block) : 0;
    PyErr_Clear();
    if (block_dim > 0 && (uint32_t)block_dim <= d->max_workgroup_size) {
        out->default_block_dim = (uint32_t)block_dim;
    }
    PyObject *fast = options ? PyDict_GetItemString(options, "fast_math") : NULL;
    if (fast != NULL) {
        out->fast_math = PyObject_IsTrue(fast) == 1;
    }
    out->subgroup_size = d->subgroup_size;
    out->features = d->features;
    return 0;
}

static VulkanKernelObject *
vk_alloc(PyObject *module)
{
    PyTypeObject *tp = (PyTypeObject *)vulkan_kernel_type;
    VulkanKernelObject *k = (VulkanKernelObject *)tp->tp_alloc(tp, 0);
    if (k != NULL) {
        k->vectorcall = vk_vectorcall;
        k->module = Py_NewRef(module);
        k->rng_offset = -1;
    }
    return k;
}

/* Takes the driver's code into k and makes the launch data: tasks, buffers. 0, or -1 with a
 * diag (memory: with an exception). */
static int
take_code(VulkanKernelObject *k, QdCtx *ctx, QdDriverKernel *code, long saturating)
{
    k->code = code->vk;
    k->host = code->host;
    k->ms_codegen = code->ms_codegen;
    k->from_cache = code->from_cache;
    memset(code, 0, sizeof(*code));
    const QdCompiledKernel *layout = &k->code.layout;
    k->tasks = PyMem_Calloc(layout->ntasks + 1, sizeof(VkTask));
    k->dispatches = PyMem_Calloc(layout->ntasks + 2, sizeof(QdVkDispatch));
    if (k->tasks == NULL || k->dispatches == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    const QdVkDeviceInfo *d = qd_vk_device(ctx);
    if (d == NULL) {
        return -1;
    }
    for (uint32_t t = 0; t < layout->ntasks; t++) {
        VkTask *task = &k->tasks[t];
        task->block_dim = layout->tasks[t].block_dim ? layout->tasks[t].block_dim : 1;
        task->is_serial = layout->tasks[t].grain == 0;
        task->bounds = t < k->host.ntasks ? k->host.tasks[t].bounds : NULL;
        uint32_t invocations = layout->tasks[t].reduces ? REDUCE_INVOCATIONS : MAX_INVOCATIONS;
        uint32_t groups = saturating > 0 ? (uint32_t)saturating : invocations / task->block_dim;
        groups = groups > 0 ? groups : 1;
        task->max_groups = groups < d->max_workgroup_count ? groups : d->max_workgroup_count;
    }
    k->param_bytes = layout->args_size + QD_VK_TAIL_FIELDS + 8 * k->code.nfields;
    if (layout->nresults > 0) {
        RETURN_IF_ERROR(
            qd_vk_alloc_mapped(ctx, QD_RESULT_SLOT_BYTES * layout->nresults, &k->results));
    }
    if (layout->tmps_size > 0) {
        RETURN_IF_ERROR(qd_vk_alloc(ctx, (layout->tmps_size + 3) & ~3u, &k->tmps));
    }
    if (runtime_state.impl == NULL) {
        RETURN_IF_ERROR(qd_vk_alloc_mapped(ctx, QD_NVPTX_RUNTIME_STATE_BYTES, &runtime_state));
    }
    if (k->code.nprints > 0 && print_buffer.impl == NULL) {
        RETURN_IF_ERROR(qd_vk_alloc_mapped(ctx, QD_VK_PRINT_BYTES, &print_buffer));
    }
    return 0;
}

/* The launch data that depends on the Python arguments. */
static int
finish_kernel(VulkanKernelObject *k, QdPyState *state, const QdKernelArg *args, uint32_t nargs,
              const QdKernelInfo *info)
{
    k->nparams = nargs;
    if (qd_py_params_from_args(args, nargs, k->code.layout.arg_offsets, k->code.layout.nparams,
                               &k->params) < 0) {
        return -1;
    }
    if (info->rng_param >= 0 && (uint32_t)info->rng_param < k->code.layout.nparams &&
        k->code.layout.arg_offsets[info->rng_param] != QD_ARG_UNUSED) {
        k->rng_offset = (int64_t)k->code.layout.arg_offsets[info->rng_param];
    }
    k->generation = state->generation;
    return 0;
}

static long
saturating_grid(PyObject *options)
{
    PyObject *grid = options ? PyDict_GetItemString(options, "saturating_grid_dim") : NULL;
    return grid && PyLong_Check(grid) ? PyLong_AsLong(grid) : 0;
}

PyObject *
qd_py_vulkan_compile(PyObject *module, QdCtx *ctx, QdCompileRequest *req, PyObject *options)
{
    QdPyState *state = qd_py_state(module);
    QdGlslOptions opts;
    QdDriverKernel code;

    if (glsl_options(ctx, options, &opts) < 0) {
        qd_py_raise_diag(module, &ctx->diag);
        return NULL;
    }
    VulkanKernelObject *k = vk_alloc(module);
    if (k == NULL) {
        return NULL;
    }
    FieldLookup lookup = {state, NULL};
    QdTargetEnv env = {
        .jit = state->jit, .glsl = &opts, .resolve_field = field_address, .resolve_user = &lookup};
    int rc = qd_driver_compile(ctx, req, QD_TARGET_vulkan, &env, &code);
    if (req->qir_frontend) {
        k->qir_frontend = PyUnicode_FromString(req->qir_frontend);
    }
    if (req->qir_final) {
        k->qir = PyUnicode_FromString(req->qir_final);
    }
    free(req->qir_frontend);
    free(req->qir_final);
    req->qir_frontend = req->qir_final = NULL;
    if (rc < 0 || take_code(k, ctx, &code, saturating_grid(options)) < 0 ||
        finish_kernel(k, state, req->args, req->nargs, &code.info) < 0) {
        if (!PyErr_Occurred()) {
            qd_py_raise_diag(module, &ctx->diag);
        }
        Py_DECREF(k);
        return NULL;
    }
    return (PyObject *)k;
}

PyObject *
qd_py_vulkan_load_cached(PyObject *module, QdCache *cache, const QdDigest *source_key,
                         const QdKernelArg *args, uint32_t nargs, PyObject *options)
{
    QdPyState *state = qd_py_state(module);
    QdGlslOptions opts;
    QdDriverKernel code;
    QdCtx ctx;
    qd_ctx_init(&ctx);
    if (glsl_options(&ctx, options, &opts) < 0) {
        qd_py_raise_diag(module, &ctx.diag);
        return NULL;
    }
    FieldLookup lookup = {state, NULL};
    QdTargetEnv env = {
        .jit = state->jit, .glsl = &opts, .resolve_field = field_address, .resolve_user = &lookup};
    if (qd_driver_load_cached(cache, source_key, QD_TARGET_vulkan, &env, &code) != 1) {
        Py_RETURN_NONE;
    }
    QdKernelInfo info = code.info;
    VulkanKernelObject *k = vk_alloc(module);
    if (k == NULL) {
        qd_driver_kernel_release(&code);
        return NULL;
    }
    if (take_code(k, &ctx, &code, saturating_grid(options)) < 0) {
        PyErr_Clear();
        Py_DECREF(k);
        Py_RETURN_NONE;
    }
    if (finish_kernel(k, state, args, nargs, &info) < 0) {
        Py_DECREF(k);
        return NULL;
    }
    return (PyObject *)k;
}

PyObject *
qd_py_vulkan_kernel_from_qir(PyObject *module, QdModule *m, const char *name, PyObject *options,
                             PyObject *fields)
{
    QdPyState *state = qd_py_state(module);
    QdGlslOptions opts;
    QdDriverKernel code;
    QdCtx ctx;

    qd_ctx_init(&ctx);
    if (glsl_options(&ctx, options, &opts) < 0) {
        qd_py_raise_diag(module, &ctx.diag);
        return NULL;
    }
    VulkanKernelObject *k = vk_alloc(module);
    if (k == NULL) {
        return NULL;
    }
    QdLlvmOptions host_opts;
    qd_llvm_options_default(&host_opts);
    k->own_jit = qd_driver_jit_new(&ctx, &host_opts);
    PyObject *empty = fields ? NULL : PyDict_New();
    FieldLookup lookup = {state, fields ? fields : empty};
    QdTargetEnv env = {
        .jit = k->own_jit, .glsl = &opts, .resolve_field = field_address, .resolve_user = &lookup};
    int rc = (fields != NULL || empty != NULL) && k->own_jit != NULL
                 ? qd_driver_compile_module(&ctx, m, name, QD_TARGET_vulkan, &env, &code)
                 : -1;
    Py_XDECREF(empty);
    if (rc < 0 || take_code(k, &ctx, &code, 0) < 0 ||
        qd_py_params_from_qir(qd_module_find_func(m, name), k->code.layout.arg_offsets,
                              &k->params) < 0) {
        if (!PyErr_Occurred()) {
            qd_py_raise_diag(module, &ctx.diag);
        }
        Py_DECREF(k);
        return NULL;
    }
    k->nparams = qd_module_find_func(m, name)->nparams;
    k->generation = state->generation;
    return (PyObject *)k;
}

/***** attributes *****/

static PyObject *
vk_get_qir(VulkanKernelObject *self, void *closure)
{
    PyObject *v = closure ? self->qir_frontend : self->qir;
    return Py_NewRef(v ? v : Py_None);
}

static PyObject *
vk_get_ntasks(VulkanKernelObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromUnsignedLong(self->code.layout.ntasks);
}

static PyObject *
vk_get_task_kinds(VulkanKernelObject *self, void *closure)
{
    (void)closure;
    uint32_t n = self->code.layout.ntasks;
    PyObject *kinds = PyTuple_New(n);
    for (uint32_t t = 0; kinds && t < n; t++) {
        PyObject *kind = PyUnicode_FromString(self->tasks[t].is_serial ? "serial" : "range_for");
        if (!kind) {
            Py_CLEAR(kinds);
            break;
        }
        PyTuple_SET_ITEM(kinds, t, kind);
    }
    return kinds;
}

static PyObject *
vk_get_args_size(VulkanKernelObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromUnsignedLong(self->code.layout.args_size);
}

/* [(task name, block_dim, most workgroups, whether the host knows the trip count)]. */
static PyObject *
vk_get_tasks(VulkanKernelObject *self, void *closure)
{
    (void)closure;
    PyObject *list = PyList_New(self->code.layout.ntasks);
    for (uint32_t t = 0; list && t < self->code.layout.ntasks; t++) {
        const VkTask *task = &self->tasks[t];
        PyObject *item = Py_BuildValue("(sIIO)", self->code.layout.tasks[t].entry, task->block_dim,
                                       task->max_groups, task->bounds ? Py_True : Py_False);
        if (item == NULL) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, t, item);
    }
    return list;
}

static PyObject *
vk_get_compile_ms(VulkanKernelObject *self, void *closure)
{
    (void)closure;
    return Py_BuildValue("{s:d}", "spirv", self->ms_codegen);
}

static PyGetSetDef vk_getset[] = {
    {"compile_ms", (getter)vk_get_compile_ms, NULL,
     "milliseconds: frontend to SPIR-V and pipelines", NULL},
    {"qir", (getter)vk_get_qir, NULL, "QIR given to the code generator (with keep_qir)", NULL},
    {"qir_frontend", (getter)vk_get_qir, NULL, "QIR from the frontend (with keep_qir)", (void *)1},
    {"ntasks", (getter)vk_get_ntasks, NULL, "number of offloaded tasks", NULL},
    {"task_kinds", (getter)vk_get_task_kinds, NULL, "'serial' or 'range_for' per task", NULL},
    {"args_size", (getter)vk_get_args_size, NULL, "bytes of packed arguments per launch", NULL},
    {"tasks", (getter)vk_get_tasks, NULL, "(name, block_dim, max_groups, host_bounds)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef vk_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(VulkanKernelObject, vectorcall), READONLY, NULL},
    {"from_cache", T_BOOL, offsetof(VulkanKernelObject, from_cache), READONLY,
     "whether the SPIR-V came from the offline cache"},
    {"profile_names", T_OBJECT, offsetof(VulkanKernelObject, profile_names), 0,
     "tuple: the kernel profiler's name of each task (None: kernel_<task>)"},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot vk_slots[] = {
    {Py_tp_dealloc, vk_dealloc},
    {Py_tp_traverse, vk_traverse},
    {Py_tp_clear, vk_clear},
    {Py_tp_call, vk_tp_call},
    {Py_tp_getset, vk_getset},
    {Py_tp_members, vk_members},
    {Py_tp_doc, "A kernel compiled for Vulkan for one argument signature; call it to launch."},
    {0, NULL},
};

static PyType_Spec vk_spec = {
    .name = "quadrants._core.VulkanKernel",
    .basicsize = sizeof(VulkanKernelObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
             Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = vk_slots,
};

QdPyElementAxes
qd_py_vulkan_element_axes(PyObject *kernel, uint32_t i)
{
    const VulkanKernelObject *self = (const VulkanKernelObject *)kernel;
    QdPyElementAxes none = {0, {0, 0}};
    if (i >= self->nparams || self->params[i].kind != QD_ARG_NDARRAY) {
        return none;
    }
    return self->params[i].element;
}

bool
qd_py_is_vulkan_kernel(PyObject *obj)
{
    return vulkan_kernel_type != NULL && Py_TYPE(obj) == (PyTypeObject *)vulkan_kernel_type;
}

int
qd_py_vulkan_kernel_add(PyObject *module)
{
    PyObject *type = PyType_FromModuleAndSpec(module, &vk_spec, NULL);
    if (type == NULL || PyModule_AddObjectRef(module, "VulkanKernel", type) < 0) {
        Py_XDECREF(type);
        return -1;
    }
    Py_XSETREF(vulkan_kernel_type, type);
    return 0;
}
