/* python/device_kernel.c -- the DeviceKernel type (device_kernel.h): compiling and loading
 * through the driver, the launch, and the attributes, for every GPU target.
 *
 * `_core.compile_kernel(...)` with options["arch"] "cuda" or "vulkan" comes here (kernel.c hands
 * over the compile request it built) and returns a DeviceKernel, called like a CompiledKernel:
 * one positional argument per kernel parameter (scalars as Python numbers, ndarrays as
 * DeviceBuffers of the kernel's target or host buffers such as NumPy arrays, None for
 * templates).
 *
 * Three ways in, all through the driver:
 *   qd_py_device_compile          a @qd.kernel's compile request: qd_driver_compile (frontend,
 *                                 passes, offline cache, device code, host bounds in state->jit,
 *                                 module load); fields are found by id in the registry of
 *                                 cuda_register_field;
 *   qd_py_device_load_cached      the warm path: qd_driver_load_cached;
 *   qd_py_device_kernel_from_qir  a parsed QIR module (tests): qd_driver_compile_module with a
 *                                 CPU JIT of the kernel's own for the host bounds; fields by name.
 * The target then prepares the tasks' grids; the result and tmp buffers are made once per kernel
 * and reused by every launch (a target runs launches in order, so they never overlap).
 *
 * Launch (device_call): pack the arguments and the launch tail into one buffer (host arrays
 * passed for ndarray parameters are copied to temporary device memory once they passed every
 * check); the target runs the tasks. The call returns without waiting unless something must
 * come back: results (copied back), an assert flag to read, prints to write out, host arrays to
 * copy back.
 */
#include "device_kernel.h"

#include <structmember.h>

#include "../runtime/cpu/cpu.h"

#include <stdio.h>
#include <string.h>

/* Arguments packed on the stack up to this many bytes; larger buffers use PyMem. */
#define INLINE_PARAM_BYTES 1024

static bool
arch_is(PyObject *options, const char *name)
{
    PyObject *arch = options ? PyDict_GetItemString(options, "arch") : NULL;
    return arch != NULL && PyUnicode_Check(arch) &&
           PyUnicode_CompareWithASCIIString(arch, name) == 0;
}

bool
qd_py_wants_device(PyObject *options)
{
    return qd_py_device_target(options) != NULL;
}

const DeviceTarget *
qd_py_device_target(PyObject *options)
{
    return arch_is(options, "cuda")     ? &qd_py_cuda_target
           : arch_is(options, "vulkan") ? &qd_py_vulkan_target
                                        : NULL;
}

/***** the type *****/

static void
device_dealloc(DeviceKernelObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    qd_py_kernel_clear((PyObject *)self);
    self->target->free(&self->results);
    self->target->free(&self->tmps);
    qd_driver_kernel_release(&self->code);
    qd_cpu_jit_free(self->own_jit);
    PyMem_Free(self->tasks);
    PyMem_Free(self->scratch);
    PyMem_Free(self->params);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

/***** launch *****/

/* The memory of a launch's ndarray arguments: DeviceBuffers of the target as they are, host
 * buffers (NumPy arrays, ...) copied to temporary device memory once they passed every check,
 * and copied back after the launch. */
typedef struct DeviceArrays {
    QdPyArrayMemory memory;       /* arrays_open, arrays_place */
    QdPyHostArrays host;          /* the host buffers lent */
    DeviceMem *dev;               /* their device copies, one per host buffer (none: not made) */
    uint32_t ndev;                /* entries at dev */
    const DeviceTarget *target;
    PyObject *device_buffer_type; /* borrowed */
    bool opened_host;             /* the argument arrays_open described last is a host buffer */
    QdCtx *ctx;                   /* for device errors */
    PyObject *module;             /* borrowed: raises the diag of a device error */
} DeviceArrays;

static int
arrays_open(QdPyArrayMemory *memory, uint32_t i, PyObject *arg, QdPyArray *out)
{
    DeviceArrays *self = (DeviceArrays *)memory;
    self->opened_host = false;
    if (Py_TYPE(arg) == (PyTypeObject *)self->device_buffer_type) {
        const DeviceBufferObject *buf = (const DeviceBufferObject *)arg;
        if (buf->nbytes > 0 && !self->target->owns(buf)) {
            PyErr_Format(PyExc_ValueError,
                         "a DeviceBuffer of another backend cannot be passed to a kernel on %s",
                         self->target->name);
            return -1;
        }
        out->data = buf->ptr; /* 0 for an empty buffer */
        out->ndim = buf->ndim;
        out->itemsize = buf->itemsize;
        memcpy(out->shape, buf->shape, sizeof(out->shape));
        return 0;
    }
    if (self->host.memory.open(&self->host.memory, i, arg, out) < 0) {
        return -1;
    }
    out->data = 0; /* placed on the device by arrays_place */
    self->opened_host = true;
    return 0;
}

static int
arrays_place(QdPyArrayMemory *memory, uint32_t i, QdPyArray *array)
{
    (void)i;
    DeviceArrays *self = (DeviceArrays *)memory;
    if (!self->opened_host) {
        return 0; /* a DeviceBuffer */
    }
    uint32_t h = self->host.count - 1; /* the buffer arrays_open just exported */
    if (h >= self->ndev) {
        uint32_t n = self->host.capacity;
        DeviceMem *dev = PyMem_Realloc(self->dev, n * sizeof(DeviceMem));
        if (dev == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        memset(dev + self->ndev, 0, (n - self->ndev) * sizeof(DeviceMem));
        self->dev = dev;
        self->ndev = n;
    }
    const Py_buffer *view = &self->host.views[h];
    size_t bytes = (size_t)view->len;
    if (self->target->alloc(self->ctx, bytes ? bytes : 1, false, &self->dev[h]) < 0 ||
        (bytes > 0 && self->target->upload(self->ctx, &self->dev[h], view->buf, bytes) < 0)) {
        return qd_py_raise_diag(self->module, &self->ctx->diag);
    }
    array->data = self->dev[h].address;
    return 0;
}

static void
arrays_init(DeviceArrays *a, const DeviceKernelObject *k, QdPyState *state, QdCtx *ctx)
{
    a->memory.open = arrays_open;
    a->memory.place = arrays_place;
    qd_py_host_arrays_init(&a->host);
    a->dev = NULL;
    a->ndev = 0;
    a->target = k->target;
    a->device_buffer_type = state->device_buffer_type;
    a->opened_host = false;
    a->ctx = ctx;
    a->module = k->module;
}

/* Frees the device copies and releases the host buffers. */
static void
arrays_release(DeviceArrays *a)
{
    for (uint32_t i = 0; i < a->ndev; i++) {
        a->target->free(&a->dev[i]);
    }
    PyMem_Free(a->dev);
    a->dev = NULL;
    a->ndev = 0;
    qd_py_host_arrays_release(&a->host);
}

/* Reads (and clears) the assert flag after a launch: -1 with the QD_ERR_ASSERTION diag of the
 * failed assert, its message formatted with the values the failing thread stored (as the CPU
 * runtime formats them), 0 when no assert failed. */
static int
check_assert_flag(DeviceKernelObject *self, QdCtx *ctx)
{
    const DeviceTarget *target = self->target;
    const DeviceMem *state = target->runtime_state();
    uint64_t words[QD_NVPTX_RUNTIME_STATE_BYTES / 8];
    int32_t flag = 0;

    RETURN_IF_ERROR(target->download(ctx, &flag, state, 0, sizeof(flag)));
    if (flag == 0) {
        return 0;
    }
    uint32_t id = (uint32_t)flag - 1;
    const char *kinds = id < self->nasserts ? self->assert_kinds[id] : "";
    size_t n = strlen(kinds);
    if (n > 0) {
        RETURN_IF_ERROR(target->download(ctx, words, state, 0, 8 + 8 * n));
    }
    int32_t zero = 0;
    RETURN_IF_ERROR(target->upload(ctx, state, &zero, sizeof(zero)));
    if (id >= self->nasserts) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_ASSERTION, "assertion failed");
    }
    QdLaunchCtx host_ctx;
    host_ctx.assert_failed = 0;
    host_ctx.assert_message[0] = '\0';
    if (n > 0) {
        qd_rt_assert_fail_fmt(&host_ctx, self->asserts[id], kinds, words + 1, (int32_t)n);
    } else {
        qd_rt_assert_fail(&host_ctx, self->asserts[id]);
    }
    return qd_error(ctx, (QdLoc){0}, QD_ERR_ASSERTION, "%s", host_ctx.assert_message);
}

/* After the launch: prints, the assert flag, host arrays, results. New reference (the kernel's
 * result) or NULL with an exception. */
static PyObject *
finish_launch(DeviceKernelObject *self, QdCtx *ctx, const DeviceArrays *arrays)
{
    const DeviceTarget *target = self->target;
    uint64_t inline_slots[QD_PY_INLINE_RESULTS];
    uint64_t *slots = inline_slots;
    uint32_t nhosts = arrays->host.count;
    uint32_t nresults = self->layout->nresults;
    int rc = 0;

    if (self->nasserts == 0 && !self->prints && nhosts == 0 && nresults == 0) {
        Py_RETURN_NONE; /* nothing to wait for: the launch stays asynchronous */
    }
    if (nresults > QD_ARRAY_LEN(inline_slots)) {
        slots = PyMem_Malloc((size_t)nresults * QD_RESULT_SLOT_BYTES);
        if (!slots) {
            return PyErr_NoMemory();
        }
    }
    Py_BEGIN_ALLOW_THREADS
    if (self->prints) {
        rc = target->flush_prints(self, ctx);
    }
    if (rc == 0 && self->nasserts > 0) {
        rc = check_assert_flag(self, ctx);
    }
    for (uint32_t i = 0; rc == 0 && i < nhosts && i < arrays->ndev; i++) {
        const Py_buffer *view = &arrays->host.views[i];
        if (arrays->dev[i].address != 0 && !view->readonly && view->len > 0) {
            rc = target->download(ctx, view->buf, &arrays->dev[i], 0, (size_t)view->len);
        }
    }
    if (rc == 0 && nresults > 0) {
        rc = target->download(ctx, slots, &self->results, 0, QD_RESULT_SLOT_BYTES * nresults);
    }
    Py_END_ALLOW_THREADS
    PyObject *ret = NULL;
    if (rc < 0) {
        qd_py_raise_diag(self->module, &ctx->diag);
    } else {
        ret = qd_py_unpack_results((const unsigned char *)slots, self->layout->result_types,
                                   nresults);
    }
    if (slots != inline_slots) {
        PyMem_Free(slots);
    }
    return ret;
}

uint32_t
qd_py_device_task_blocks(const DeviceTask *task, unsigned char *packed)
{
    if (task->is_serial) {
        return 1;
    }
    if (task->bounds == NULL) {
        return task->open_blocks;
    }
    QdLaunchCtx host_ctx;
    int64_t bounds[2] = {0, 0};
    host_ctx.args = packed;
    host_ctx.results = NULL;
    host_ctx.tmps = NULL;
    task->bounds(&host_ctx, bounds);
    if (bounds[1] == bounds[0]) {
        return 0; /* nothing to run (an empty range has end = begin: the bounds function clamps) */
    }
    uint64_t n = (uint64_t)bounds[1] - (uint64_t)bounds[0];
    uint64_t blocks = n / task->block_dim + (n % task->block_dim != 0);
    return blocks < task->max_blocks ? (uint32_t)blocks : task->max_blocks;
}

/* The whole parameter buffer of a launch: the arguments (host arrays copied to the device) and
 * the launch tail. 0, or -1 with an exception. */
static int
pack_arguments(DeviceKernelObject *self, QdPyState *state, PyObject *const *args,
               unsigned char *packed, DeviceArrays *arrays)
{
    memset(packed, 0, self->param_bytes);
    if (self->rng_offset >= 0) {
        uint64_t seed = qd_py_next_rng_seed(state);
        memcpy(packed + self->rng_offset, &seed, sizeof(seed));
    }
    RETURN_IF_ERROR(
        qd_py_pack_arguments(self->params, self->nparams, args, packed, &arrays->memory));
    unsigned char *tail = packed + self->layout->args_size;
    uint64_t runtime = self->target->runtime_state()->address;
    memcpy(tail + QD_NVPTX_TAIL_RESULTS, &self->results.address, 8);
    memcpy(tail + QD_NVPTX_TAIL_TMPS, &self->tmps.address, 8);
    memcpy(tail + QD_NVPTX_TAIL_RUNTIME, &runtime, 8);
    self->target->write_tail(self, tail);
    return 0;
}

int
qd_py_device_pack_device_only(DeviceKernelObject *k, PyObject *const *args,
                              unsigned char *packed, size_t capacity)
{
    QdPyState *state = qd_py_state(k->module);
    DeviceArrays arrays;
    QdCtx ctx;

    if (k->param_bytes > capacity) {
        PyErr_SetString(PyExc_TypeError, "the kernel's parameters do not fit");
        return -1;
    }
    qd_ctx_init(&ctx);
    arrays_init(&arrays, k, state, &ctx);
    int status = pack_arguments(k, state, args, packed, &arrays);
    uint32_t nhosts = arrays.host.count;
    arrays_release(&arrays);
    if (status == 0 && nhosts > 0) {
        PyErr_SetString(PyExc_TypeError, "arrays must be DeviceBuffers");
        status = -1;
    }
    return status;
}

static PyObject *
device_call(DeviceKernelObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    QdPyState *state = qd_py_state(self->module);
    unsigned char inline_buffer[INLINE_PARAM_BYTES] __attribute__((aligned(16)));
    unsigned char *packed = inline_buffer;
    DeviceArrays arrays;
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
    arrays_init(&arrays, self, state, &ctx);
    if (pack_arguments(self, state, args, packed, &arrays) < 0) {
        goto done;
    }
    /* Checked after packing, which may run Python code (and so a reset on another thread);
     * from here to the launch the GIL is held. */
    if (self->generation != state->generation) {
        PyErr_SetString(state->error_classes[QD_ERR_RUNTIME],
                        "this kernel was compiled before qd.reset(); call it again to recompile");
        goto done;
    }
    uint32_t ntasks = self->layout->ntasks;
    double *seconds = NULL; /* the kernel profiler's task times (NULL: profiler off) */
    if (state->profiler_records) {
        seconds = PyMem_Malloc(sizeof(double) * (ntasks ? ntasks : 1));
        if (!seconds) {
            PyErr_NoMemory();
            goto done;
        }
        for (uint32_t t = 0; t < ntasks; t++) {
            seconds[t] = -1.0;
        }
    }
    bool wait = self->layout->nresults > 0 || self->nasserts > 0 || arrays.host.count > 0;
    int launched = self->target->run(self, &ctx, packed, wait, seconds);
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
    arrays_release(&arrays);
    if (packed != inline_buffer) {
        PyMem_Free(packed);
    }
    return ret;
}

static PyObject *
device_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    return device_call((DeviceKernelObject *)callable, args, nargsf, kwnames);
}

QdPyElementAxes
qd_py_device_element_axes(PyObject *kernel, uint32_t i)
{
    const DeviceKernelObject *self = (const DeviceKernelObject *)kernel;
    QdPyElementAxes none = {0, {0, 0}};
    if (i >= self->nparams || self->params[i].kind != QD_ARG_NDARRAY) {
        return none;
    }
    return self->params[i].element;
}

/***** compile *****/

/* Where the driver finds the device memory of a field: the registry of cuda_register_field
 * (keys: field ids, names "f<id>"), or a dict of DeviceBuffers by name (QIR tests). */
typedef struct FieldLookup {
    QdPyState *state;
    const DeviceTarget *target;
    PyObject *by_name; /* the dict of the QIR tests, or NULL: the registry */
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
        !lookup->target->owns((const DeviceBufferObject *)buf)) {
        return NULL;
    }
    return (const void *)(uintptr_t)((DeviceBufferObject *)buf)->ptr;
}

static DeviceKernelObject *
device_alloc(PyObject *module, const DeviceTarget *target)
{
    QdPyState *state = qd_py_state(module);
    PyTypeObject *tp = (PyTypeObject *)state->device_kernel_type;
    DeviceKernelObject *k = (DeviceKernelObject *)tp->tp_alloc(tp, 0);
    if (k != NULL) {
        k->vectorcall = device_vectorcall;
        k->target = target;
        k->module = Py_NewRef(module);
        k->rng_offset = -1;
    }
    return k;
}

/* Takes the driver's code into k (code is left empty) and makes the launch data: the tasks'
 * grids, the result and tmp buffers. 0, or -1 with a diag (memory: with an exception). */
static int
take_code(DeviceKernelObject *k, QdCtx *ctx, QdDriverKernel *code, long saturating)
{
    k->code = *code;
    k->from_cache = code->from_cache;
    memset(code, 0, sizeof(*code));
    k->target->take(k);
    k->tasks = PyMem_Calloc(k->layout->ntasks + 1, sizeof(DeviceTask));
    if (k->tasks == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (uint32_t t = 0; t < k->layout->ntasks; t++) {
        DeviceTask *task = &k->tasks[t];
        const QdCompiledTask *info = &k->layout->tasks[t];
        snprintf(task->name, sizeof(task->name), "%s", info->entry);
        task->block_dim = info->block_dim ? info->block_dim : 1;
        task->is_serial = info->grain == 0;
        task->bounds = t < k->code.host.ntasks ? k->code.host.tasks[t].bounds : NULL;
    }
    RETURN_IF_ERROR(k->target->prepare(k, ctx, saturating));
    if (k->layout->nresults > 0) {
        RETURN_IF_ERROR(
            k->target->alloc(ctx, QD_RESULT_SLOT_BYTES * k->layout->nresults, true, &k->results));
    }
    if (k->layout->tmps_size > 0) {
        RETURN_IF_ERROR(k->target->alloc(ctx, (k->layout->tmps_size + 3) & ~3u, false, &k->tmps));
    }
    return 0;
}

/* The launch data that depends on the Python arguments. */
static int
finish_kernel(DeviceKernelObject *k, QdPyState *state, const QdKernelArg *args, uint32_t nargs,
              const QdKernelInfo *info)
{
    k->nparams = nargs;
    if (qd_py_params_from_args(args, nargs, k->layout->arg_offsets, k->layout->nparams,
                               &k->params) < 0) {
        return -1;
    }
    if (info->rng_param >= 0 && (uint32_t)info->rng_param < k->layout->nparams &&
        k->layout->arg_offsets[info->rng_param] != QD_ARG_UNUSED) {
        k->rng_offset = (int64_t)k->layout->arg_offsets[info->rng_param];
    }
    k->generation = state->generation;
    return 0;
}

/* The grid size every range_for gets when options["saturating_grid_dim"] is set, else 0. */
static long
saturating_grid(PyObject *options)
{
    PyObject *grid = options ? PyDict_GetItemString(options, "saturating_grid_dim") : NULL;
    return grid && PyLong_Check(grid) ? PyLong_AsLong(grid) : 0;
}

PyObject *
qd_py_device_compile(PyObject *module, QdCtx *ctx, QdCompileRequest *req, PyObject *options)
{
    QdPyState *state = qd_py_state(module);
    const DeviceTarget *target = qd_py_device_target(options);
    DeviceOptions opts;
    QdDriverKernel code;
    FieldLookup lookup = {state, target, NULL};
    QdTargetEnv env = {.jit = state->jit, .resolve_field = field_address, .resolve_user = &lookup};

    if (target->options(ctx, options, &opts, &env) < 0) {
        if (!PyErr_Occurred()) {
            qd_py_raise_diag(module, &ctx->diag);
        }
        return NULL;
    }
    req->frontend.tensor_cores = opts.tensor_cores;
    req->frontend.lacks_atomic_int64 = opts.lacks_atomic_int64;
    req->frontend.max_shared_bytes = opts.max_shared_bytes;
    DeviceKernelObject *k = device_alloc(module, target);
    if (k == NULL) {
        return NULL;
    }
    int rc = qd_driver_compile(ctx, req, target->target, &env, &code);
    if (req->qir_frontend) {
        k->qir_frontend = PyUnicode_FromString(req->qir_frontend);
    }
    if (req->qir_final) {
        k->qir = PyUnicode_FromString(req->qir_final);
    }
    free(req->qir_frontend);
    free(req->qir_final);
    req->qir_frontend = req->qir_final = NULL;
    QdKernelInfo info = code.info;
    if (rc < 0 || take_code(k, ctx, &code, saturating_grid(options)) < 0 ||
        finish_kernel(k, state, req->args, req->nargs, &info) < 0) {
        if (!PyErr_Occurred()) {
            qd_py_raise_diag(module, &ctx->diag);
        }
        Py_DECREF(k);
        return NULL;
    }
    return (PyObject *)k;
}

PyObject *
qd_py_device_load_cached(PyObject *module, QdCache *cache, const QdDigest *source_key,
                         const QdKernelArg *args, uint32_t nargs, PyObject *options)
{
    QdPyState *state = qd_py_state(module);
    const DeviceTarget *target = qd_py_device_target(options);
    DeviceOptions opts;
    QdDriverKernel code;
    QdCtx ctx;
    FieldLookup lookup = {state, target, NULL};
    QdTargetEnv env = {.jit = state->jit, .resolve_field = field_address, .resolve_user = &lookup};

    qd_ctx_init(&ctx);
    if (target->options(&ctx, options, &opts, &env) < 0) {
        if (!PyErr_Occurred()) {
            qd_py_raise_diag(module, &ctx.diag);
        }
        return NULL;
    }
    if (qd_driver_load_cached(cache, source_key, target->target, &env, &code) != 1) {
        Py_RETURN_NONE;
    }
    QdKernelInfo info = code.info;
    DeviceKernelObject *k = device_alloc(module, target);
    if (k == NULL) {
        qd_driver_kernel_release(&code);
        return NULL;
    }
    if (take_code(k, &ctx, &code, saturating_grid(options)) < 0) {
        /* Not launchable here: a miss, the kernel is compiled instead. */
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
qd_py_device_kernel_from_qir(PyObject *module, const DeviceTarget *target, QdModule *m,
                             const char *name, PyObject *options, PyObject *fields)
{
    QdPyState *state = qd_py_state(module);
    DeviceOptions opts;
    QdDriverKernel code;
    QdCtx ctx;

    qd_ctx_init(&ctx);
    /* Fields by name in `fields`; without it every field is missing. */
    PyObject *empty = fields ? NULL : PyDict_New();
    if (fields == NULL && empty == NULL) {
        return NULL;
    }
    FieldLookup lookup = {state, target, fields ? fields : empty};
    QdTargetEnv env = {.resolve_field = field_address, .resolve_user = &lookup};
    DeviceKernelObject *k = NULL;
    if (target->options(&ctx, options, &opts, &env) < 0) {
        goto fail;
    }
    k = device_alloc(module, target);
    if (k == NULL) {
        goto fail;
    }
    QdLlvmOptions host_opts;
    qd_llvm_options_default(&host_opts);
    k->own_jit = qd_driver_jit_new(&ctx, &host_opts);
    env.jit = k->own_jit;
    const QdFunc *f = qd_module_find_func(m, name);
    if (k->own_jit == NULL ||
        qd_driver_compile_module(&ctx, m, name, target->target, &env, &code) < 0 ||
        take_code(k, &ctx, &code, 0) < 0 ||
        qd_py_params_from_qir(f, k->layout->arg_offsets, &k->params) < 0) {
        goto fail;
    }
    Py_XDECREF(empty);
    k->nparams = f->nparams;
    k->generation = state->generation;
    return (PyObject *)k;
fail:
    Py_XDECREF(empty);
    if (!PyErr_Occurred()) {
        qd_py_raise_diag(module, &ctx.diag);
    }
    Py_XDECREF(k);
    return NULL;
}

/***** attributes *****/

static PyObject *
device_get_ptx(DeviceKernelObject *self, void *closure)
{
    (void)closure;
    if (self->code.target != QD_TARGET_cuda) {
        Py_RETURN_NONE;
    }
    return PyUnicode_FromString(self->code.ptx.ptx ? self->code.ptx.ptx : "");
}

static PyObject *
device_get_tasks(DeviceKernelObject *self, void *closure)
{
    (void)closure;
    PyObject *list = PyList_New(self->layout->ntasks);
    for (uint32_t t = 0; list && t < self->layout->ntasks; t++) {
        const DeviceTask *task = &self->tasks[t];
        PyObject *item = Py_BuildValue("(sIIO)", task->name, task->block_dim, task->max_blocks,
                                       task->bounds ? Py_True : Py_False);
        if (item == NULL) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, t, item);
    }
    return list;
}

static PyObject *
device_get_compile_ms(DeviceKernelObject *self, void *closure)
{
    (void)closure;
    return self->target->compile_ms(self);
}

static PyObject *
device_get_arch(DeviceKernelObject *self, void *closure)
{
    (void)closure;
    return PyUnicode_FromString(self->code.target == QD_TARGET_cuda ? "cuda" : "vulkan");
}

static PyGetSetDef device_getset[] = {
    {"arch", (getter)device_get_arch, NULL, "the arch it runs on: 'cuda' or 'vulkan'", NULL},
    {"compile_ms", (getter)device_get_compile_ms, NULL,
     "milliseconds per compile stage (CUDA: ptx, link, load; Vulkan: spirv)", NULL},
    {"ptx", (getter)device_get_ptx, NULL, "the PTX of a CUDA kernel (None on Vulkan)", NULL},
    QD_PY_KERNEL_GETSET,
    {"tasks", (getter)device_get_tasks, NULL, "(name, block_dim, max_blocks, host_bounds)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot device_slots[] = {
    {Py_tp_dealloc, device_dealloc},
    {Py_tp_traverse, qd_py_kernel_traverse},
    {Py_tp_clear, qd_py_kernel_clear},
    {Py_tp_call, PyVectorcall_Call}, /* the vectorcall, keywords refused there */
    {Py_tp_getset, device_getset},
    {Py_tp_members, qd_py_kernel_members},
    {Py_tp_doc, "A kernel compiled for a GPU (CUDA or Vulkan) for one argument signature; call "
                "it to launch."},
    {0, NULL},
};

static PyType_Spec device_spec = {
    .name = "quadrants._core.DeviceKernel",
    .basicsize = sizeof(DeviceKernelObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
             Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = device_slots,
};

int
qd_py_device_kernel_add(PyObject *module)
{
    QdPyState *state = qd_py_state(module);
    PyObject *type = PyType_FromModuleAndSpec(module, &device_spec, NULL);
    if (type == NULL || PyModule_AddObjectRef(module, "DeviceKernel", type) < 0) {
        Py_XDECREF(type);
        return -1;
    }
    Py_XSETREF(state->device_kernel_type, type);
    return 0;
}

bool
qd_py_is_device_kernel(PyObject *obj)
{
    return PyVectorcall_Function(obj) == device_vectorcall;
}
