/* python/cuda_kernel.c -- kernels compiled for CUDA: the CudaKernel type and its launch.
 *
 * `_core.compile_kernel(...)` with options["arch"] == "cuda" comes here (kernel.c hands over
 * the compile request it built) and returns a CudaKernel, which is called exactly like a
 * CompiledKernel: one positional argument per kernel parameter (scalars as Python numbers,
 * ndarrays as DeviceBuffers or host buffers such as NumPy arrays, None for templates).
 *
 * Compile (cuda_compile.c): qd_driver_compile (frontend, passes, offline cache, PTX + host
 * bounds, the driver API's linker -> module, the field pointers written into the module once:
 * codegen.h, NVPTX KERNEL ABI); the device buffers of kernel_ret slots and tmp_alloc slots are
 * made once per kernel and reused by every launch (launches are ordered on the default stream, so they never overlap).
 *
 * Launch (cuda_call): pack the arguments and the launch tail into one buffer; host buffers
 * passed for ndarray parameters are copied to temporary device memory; zero the tmps
 * (asynchronously); then per task one cuLaunchKernel with its grid (cuda_launch.c's policy:
 * serial -> 1 block of 1 thread; range_for with host bounds -> ceil(n / block_dim) blocks
 * capped at the saturating grid, no launch at all for an empty range; otherwise the saturating
 * grid). The call returns without waiting unless something must come back: results (copied
 * back, which waits), an assert flag to read, prints to flush, host buffers to copy back.
 */
#include "cuda_py.h"

#include <structmember.h>

#include "../runtime/cpu/cpu.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

/* Arguments packed on the stack up to this many bytes; larger buffers use PyMem. */
#define INLINE_PARAM_BYTES 1024
bool
qd_py_wants_cuda(PyObject *options)
{
    PyObject *arch = options ? PyDict_GetItemString(options, "arch") : NULL;
    return arch != NULL && PyUnicode_Check(arch) && PyUnicode_CompareWithASCIIString(arch, "cuda") == 0;
}

void
qd_py_cuda_reset(QdPyState *state)
{
    if (state->cuda_launched) {
        /* Kernels still running on the device may use the fields freed below. An error of an
         * earlier launch surfaces here with nobody to report it to: the reset goes on. */
        QdCtx ctx;
        qd_ctx_init(&ctx);
        Py_BEGIN_ALLOW_THREADS
        (void)qd_cuda_sync(&ctx);
        Py_END_ALLOW_THREADS
        state->cuda_launched = false;
    }
    if (state->cuda_fields != NULL) {
        PyDict_Clear(state->cuda_fields);
    }
}

/***** the CudaKernel type *****/

static int
cuda_traverse(CudaKernelObject *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->module);
    Py_VISIT(self->qir_frontend);
    Py_VISIT(self->qir);
    Py_VISIT(self->profile_names);
    return 0;
}

static int
cuda_clear(CudaKernelObject *self)
{
    Py_CLEAR(self->module);
    Py_CLEAR(self->qir_frontend);
    Py_CLEAR(self->qir);
    Py_CLEAR(self->profile_names);
    return 0;
}

static void
cuda_dealloc(CudaKernelObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    cuda_clear(self);
    qd_cuda_module_unload(self->cumodule);
    qd_cuda_free(self->results);
    qd_cuda_free(self->tmps);
    qd_nvptx_kernel_release(&self->code);
    qd_compiled_kernel_release(&self->host);
    qd_cpu_jit_free(self->own_jit);
    PyMem_Free(self->tasks);
    PyMem_Free(self->params);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

/***** launch *****/

/* The memory of a CUDA launch's ndarray arguments: DeviceBuffers as they are, host buffers
 * (NumPy arrays, ...) copied to temporary device memory once they passed every check, and copied
 * back after the launch. */
typedef struct CudaArrays {
    QdPyArrayMemory memory;    /* cuda_open, cuda_place */
    QdPyHostArrays host;       /* the host buffers lent */
    QdCuDeviceptr *dev;        /* their device copies, one per host buffer (0: not made) */
    uint32_t ndev;             /* entries at dev */
    PyObject *device_buffer_type; /* borrowed */
    bool opened_host;          /* the argument cuda_open described last is a host buffer */
    QdCtx *ctx;                /* for CUDA errors */
    PyObject *module;          /* borrowed: raises the diag of a CUDA error */
} CudaArrays;

static int
cuda_open(QdPyArrayMemory *memory, uint32_t i, PyObject *arg, QdPyArray *out)
{
    CudaArrays *self = (CudaArrays *)memory;
    if (Py_TYPE(arg) == (PyTypeObject *)self->device_buffer_type) {
        const DeviceBufferObject *buf = (const DeviceBufferObject *)arg;
        out->data = buf->ptr; /* 0 for an empty buffer */
        out->ndim = buf->ndim;
        out->itemsize = buf->itemsize;
        memcpy(out->shape, buf->shape, sizeof(out->shape));
        self->opened_host = false;
        return 0;
    }
    self->opened_host = false;
    if (self->host.memory.open(&self->host.memory, i, arg, out) < 0) {
        return -1;
    }
    out->data = 0; /* placed on the device by cuda_place */
    self->opened_host = true;
    return 0;
}

static int
cuda_place(QdPyArrayMemory *memory, uint32_t i, QdPyArray *array)
{
    (void)i;
    CudaArrays *self = (CudaArrays *)memory;
    if (!self->opened_host) {
        return 0; /* a DeviceBuffer */
    }
    uint32_t h = self->host.count - 1; /* the buffer cuda_open just exported */
    if (h >= self->ndev) {
        uint32_t n = self->host.capacity;
        QdCuDeviceptr *dev = PyMem_Realloc(self->dev, n * sizeof(QdCuDeviceptr));
        if (dev == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        memset(dev + self->ndev, 0, (n - self->ndev) * sizeof(QdCuDeviceptr));
        self->dev = dev;
        self->ndev = n;
    }
    const Py_buffer *view = &self->host.views[h];
    if (qd_cuda_alloc(self->ctx, (size_t)view->len, &self->dev[h]) < 0 ||
        qd_cuda_upload(self->ctx, self->dev[h], view->buf, (size_t)view->len) < 0) {
        return qd_py_raise_diag(self->module, &self->ctx->diag);
    }
    array->data = self->dev[h];
    return 0;
}

static void
cuda_arrays_init(CudaArrays *a, QdPyState *state, QdCtx *ctx, PyObject *module)
{
    a->memory.open = cuda_open;
    a->memory.place = cuda_place;
    qd_py_host_arrays_init(&a->host);
    a->dev = NULL;
    a->ndev = 0;
    a->device_buffer_type = state->device_buffer_type;
    a->opened_host = false;
    a->ctx = ctx;
    a->module = module;
}

/* Frees the device copies and releases the host buffers. */
static void
cuda_arrays_release(CudaArrays *a)
{
    for (uint32_t i = 0; i < a->ndev; i++) {
        qd_cuda_free(a->dev[i]);
    }
    PyMem_Free(a->dev);
    a->dev = NULL;
    a->ndev = 0;
    qd_py_host_arrays_release(&a->host);
}

QdPyElementAxes
qd_py_cuda_element_axes(PyObject *ck, uint32_t i)
{
    const CudaKernelObject *self = (const CudaKernelObject *)ck;
    QdPyElementAxes none = {0, {0, 0}};
    if (i >= self->nparams || self->params[i].kind != QD_ARG_NDARRAY) {
        return none;
    }
    return self->params[i].element;
}

/* The launch of task t (none for an empty range). */
static int
launch_task(CudaKernelObject *self, QdCtx *ctx, unsigned char *packed, uint32_t t)
{
    const CudaTask *task = &self->tasks[t];
    uint32_t blocks = task->is_serial ? 1 : task->open_blocks;
    if (task->bounds != NULL) {
        QdLaunchCtx host_ctx;
        int64_t bounds[2] = {0, 0};
        host_ctx.args = packed;
        host_ctx.results = NULL;
        host_ctx.tmps = NULL;
        task->bounds(&host_ctx, bounds);
        if (bounds[1] == bounds[0]) {
            return 0; /* nothing to run (an empty range has end = begin) */
        }
        uint64_t n = (uint64_t)bounds[1] - (uint64_t)bounds[0];
        blocks = qd_cuda_grid_blocks(n, task->block_dim, task->max_blocks);
    }
    return qd_cuda_launch(ctx, task->function, blocks, task->block_dim, packed, task->name);
}

/* The launches of every task, in order. With `seconds` (the kernel profiler is on) the device
 * is synchronized before the first task and after each one, and seconds[t] receives the
 * wall-clock time from the launch of task t to the end of its synchronization. */
static int
launch_tasks(CudaKernelObject *self, QdCtx *ctx, unsigned char *packed, double *seconds)
{
    if (self->code.layout.tmps_size &&
        qd_cuda_memset_async(ctx, self->tmps, 0, self->code.layout.tmps_size) < 0) {
        return -1;
    }
    if (seconds) {
        RETURN_IF_ERROR(qd_cuda_sync(ctx));
    }
    for (uint32_t t = 0; t < self->code.layout.ntasks; t++) {
        double start = seconds ? qd_py_profiler_clock() : 0.0;
        RETURN_IF_ERROR(launch_task(self, ctx, packed, t));
        if (seconds) {
            RETURN_IF_ERROR(qd_cuda_sync(ctx));
            seconds[t] = qd_py_profiler_clock() - start;
        }
    }
    return 0;
}

/* Reads (and clears) the device's assert flag after a launch: -1 with the QD_ERR_ASSERTION
 * diag of the failed assert, its message formatted with the values the failing thread stored
 * (as the CPU runtime formats them), 0 when no assert failed. */
static int
check_assert_flag(CudaKernelObject *self, QdPyState *state, QdCtx *ctx)
{
    uint64_t words[QD_NVPTX_RUNTIME_STATE_BYTES / 8];
    int32_t flag = 0;

    RETURN_IF_ERROR(qd_cuda_download(ctx, &flag, state->cuda_runtime_state, sizeof(flag)));
    if (flag == 0) {
        return 0;
    }
    uint32_t id = (uint32_t)flag - 1;
    if (id >= self->code.nasserts) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_ASSERTION, "assertion failed");
    }
    const char *kinds = self->code.assert_kinds[id];
    size_t n = strlen(kinds);
    RETURN_IF_ERROR(qd_cuda_download(ctx, words, state->cuda_runtime_state, 8 + 8 * n));
    int32_t zero = 0;
    RETURN_IF_ERROR(qd_cuda_upload(ctx, state->cuda_runtime_state, &zero, sizeof(zero)));
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

/* After the launch: the assert flag, prints, host arrays, results. New reference (the
 * kernel's result) or NULL with an exception. */
static PyObject *
finish_launch(CudaKernelObject *self, QdPyState *state, QdCtx *ctx, const CudaArrays *arrays)
{
    uint64_t inline_slots[QD_PY_INLINE_RESULTS];
    uint64_t *slots = inline_slots;
    uint32_t nhosts = arrays->host.count;
    uint32_t nresults = self->code.layout.nresults;
    int rc = 0;

    if (self->code.nasserts == 0 && !self->code.has_print && nhosts == 0 && nresults == 0) {
        Py_RETURN_NONE; /* nothing to wait for: the launch stays asynchronous */
    }
    if (nresults > QD_ARRAY_LEN(inline_slots)) {
        slots = PyMem_Malloc((size_t)nresults * QD_RESULT_SLOT_BYTES);
        if (!slots) {
            return PyErr_NoMemory();
        }
    }
    Py_BEGIN_ALLOW_THREADS
    if (self->code.nasserts > 0) {
        rc = check_assert_flag(self, state, ctx);
    }
    if (rc == 0 && self->code.has_print) {
        rc = qd_cuda_sync(ctx);
        fflush(stdout);
    }
    for (uint32_t i = 0; rc == 0 && i < nhosts && i < arrays->ndev; i++) {
        const Py_buffer *view = &arrays->host.views[i];
        if (arrays->dev[i] && !view->readonly) {
            rc = qd_cuda_download(ctx, view->buf, arrays->dev[i], (size_t)view->len);
        }
    }
    if (rc == 0 && nresults > 0) {
        rc = qd_cuda_download(ctx, slots, self->results, QD_RESULT_SLOT_BYTES * nresults);
    }
    Py_END_ALLOW_THREADS
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

/* The whole parameter buffer of a launch: arguments (host arrays copied to the device) and the
 * launch tail. 0, or -1 with an exception. */
static int
pack_arguments(CudaKernelObject *self, QdPyState *state, PyObject *const *args,
               unsigned char *packed, CudaArrays *arrays)
{
    memset(packed, 0, self->param_bytes);
    if (self->rng_offset >= 0) {
        uint64_t seed = qd_py_next_rng_seed(state);
        memcpy(packed + self->rng_offset, &seed, sizeof(seed));
    }
    RETURN_IF_ERROR(qd_py_pack_arguments(self->params, self->nparams, args, packed, &arrays->memory));
    uint64_t tail[3] = {self->results, self->tmps, state->cuda_runtime_state};
    _Static_assert(sizeof(tail) == QD_NVPTX_TAIL_BYTES, "the NVPTX launch tail");
    memcpy(packed + self->code.layout.args_size + QD_NVPTX_TAIL_RESULTS, &tail[0], 8);
    memcpy(packed + self->code.layout.args_size + QD_NVPTX_TAIL_TMPS, &tail[1], 8);
    memcpy(packed + self->code.layout.args_size + QD_NVPTX_TAIL_RUNTIME, &tail[2], 8);
    return 0;
}

static PyObject *
cuda_call(CudaKernelObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    QdPyState *state = qd_py_state(self->module);
    unsigned char inline_buffer[INLINE_PARAM_BYTES] __attribute__((aligned(16)));
    unsigned char *packed = inline_buffer;
    CudaArrays arrays;
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
    cuda_arrays_init(&arrays, state, &ctx, self->module);
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
    state->cuda_launched = true;
    uint32_t ntasks = self->code.layout.ntasks;
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
    int launched = launch_tasks(self, &ctx, packed, seconds);
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
    ret = finish_launch(self, state, &ctx, &arrays);
done:
    cuda_arrays_release(&arrays);
    if (packed != inline_buffer) {
        PyMem_Free(packed);
    }
    return ret;
}

static PyObject *
cuda_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    return cuda_call((CudaKernelObject *)callable, args, nargsf, kwnames);
}

static PyObject *
cuda_tp_call(PyObject *self, PyObject *args, PyObject *kwargs)
{
    if (kwargs && PyDict_GET_SIZE(kwargs)) {
        PyErr_SetString(PyExc_TypeError, "compiled kernels take positional arguments only");
        return NULL;
    }
    return cuda_call((CudaKernelObject *)self, &PyTuple_GET_ITEM(args, 0),
                     (size_t)PyTuple_GET_SIZE(args), NULL);
}

/***** attributes *****/

static PyObject *
cuda_get_ptx(CudaKernelObject *self, void *closure)
{
    (void)closure;
    return PyUnicode_FromString(self->code.ptx ? self->code.ptx : "");
}

static PyObject *
cuda_get_qir(CudaKernelObject *self, void *closure)
{
    PyObject *v = closure ? self->qir_frontend : self->qir;
    return Py_NewRef(v ? v : Py_None);
}

static PyObject *
cuda_get_ntasks(CudaKernelObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromUnsignedLong(self->code.layout.ntasks);
}

static PyObject *
cuda_get_task_kinds(CudaKernelObject *self, void *closure)
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
cuda_get_args_size(CudaKernelObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromUnsignedLong(self->code.layout.args_size);
}

/* [(entry point, block_dim, saturating blocks, whether the host knows the trip count)]. */
static PyObject *
cuda_get_tasks(CudaKernelObject *self, void *closure)
{
    (void)closure;
    PyObject *list = PyList_New(self->code.layout.ntasks);
    for (uint32_t t = 0; list && t < self->code.layout.ntasks; t++) {
        const CudaTask *task = &self->tasks[t];
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
cuda_get_compile_ms(CudaKernelObject *self, void *closure)
{
    (void)closure;
    return Py_BuildValue("{s:d,s:d,s:d}", "ptx", self->ms_ptx, "link", self->ms_link, "load",
                         self->ms_load);
}

static PyGetSetDef cuda_getset[] = {
    {"compile_ms", (getter)cuda_get_compile_ms, NULL,
     "milliseconds: frontend to PTX, PTX to cubin, module load", NULL},
    {"ptx", (getter)cuda_get_ptx, NULL, "the PTX of the kernel", NULL},
    {"qir", (getter)cuda_get_qir, NULL, "QIR given to the code generator (with keep_qir)", NULL},
    {"qir_frontend", (getter)cuda_get_qir, NULL, "QIR from the frontend (with keep_qir)",
     (void *)1},
    {"ntasks", (getter)cuda_get_ntasks, NULL, "number of offloaded tasks", NULL},
    {"task_kinds", (getter)cuda_get_task_kinds, NULL, "'serial' or 'range_for' per task", NULL},
    {"args_size", (getter)cuda_get_args_size, NULL, "bytes of packed arguments per launch", NULL},
    {"tasks", (getter)cuda_get_tasks, NULL, "(name, block_dim, max_blocks, host_bounds)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef cuda_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(CudaKernelObject, vectorcall), READONLY, NULL},
    {"from_cache", T_BOOL, offsetof(CudaKernelObject, from_cache), READONLY,
     "whether the machine code came from the offline cache"},
    {"profile_names", T_OBJECT, offsetof(CudaKernelObject, profile_names), 0,
     "tuple: the kernel profiler's name of each task (None: kernel_<task>)"},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot cuda_slots[] = {
    {Py_tp_dealloc, cuda_dealloc},
    {Py_tp_traverse, cuda_traverse},
    {Py_tp_clear, cuda_clear},
    {Py_tp_call, cuda_tp_call},
    {Py_tp_getset, cuda_getset},
    {Py_tp_members, cuda_members},
    {Py_tp_doc, "A kernel compiled for CUDA for one argument signature; call it to launch."},
    {0, NULL},
};

static PyType_Spec cuda_spec = {
    .name = "quadrants._core.CudaKernel",
    .basicsize = sizeof(CudaKernelObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
             Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = cuda_slots,
};

PyObject *
qd_py_cuda_kernel_type_new(PyObject *module)
{
    return PyType_FromModuleAndSpec(module, &cuda_spec, NULL);
}

CudaKernelObject *
qd_py_cuda_kernel_alloc(PyObject *module)
{
    QdPyState *state = qd_py_state(module);
    PyTypeObject *tp = (PyTypeObject *)state->cuda_kernel_type;
    CudaKernelObject *k = (CudaKernelObject *)tp->tp_alloc(tp, 0);
    if (k != NULL) {
        k->vectorcall = cuda_vectorcall;
        k->module = Py_NewRef(module);
        k->rng_offset = -1;
    }
    return k;
}
/***** benchmarks *****/

PyObject *
qd_py_cuda_raw_launch_us(PyObject *kernel, PyObject *const *args, Py_ssize_t nargs,
                         long iterations)
{
    CudaKernelObject *self = (CudaKernelObject *)kernel;
    QdPyState *state = qd_py_state(self->module);
    unsigned char packed[INLINE_PARAM_BYTES] __attribute__((aligned(16)));
    CudaArrays arrays;
    QdCtx ctx;

    if (Py_TYPE(kernel) != (PyTypeObject *)state->cuda_kernel_type ||
        (uint32_t)nargs != self->nparams || self->param_bytes > sizeof(packed) ||
        self->code.layout.ntasks == 0) {
        PyErr_SetString(PyExc_TypeError, "cuda_raw_launch_us(CudaKernel, args, iterations)");
        return NULL;
    }
    qd_ctx_init(&ctx);
    const QdCudaApi *cu = qd_cuda_load(&ctx);
    cuda_arrays_init(&arrays, state, &ctx, self->module);
    int status = cu ? pack_arguments(self, state, args, packed, &arrays) : -1;
    uint32_t nhosts = arrays.host.count;
    cuda_arrays_release(&arrays);
    if (status < 0 || nhosts > 0) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "cuda_raw_launch_us takes DeviceBuffers for arrays");
        }
        return NULL;
    }
    const CudaTask *task = &self->tasks[0];
    void *params[1] = {packed};
    uint32_t blocks = task->is_serial ? 1 : task->open_blocks;
    if (task->bounds != NULL) {
        /* the grid the launcher would use (launch_tasks) */
        QdLaunchCtx host_ctx;
        int64_t bounds[2] = {0, 0};
        host_ctx.args = packed;
        task->bounds(&host_ctx, bounds);
        uint64_t n = bounds[1] != bounds[0] ? (uint64_t)bounds[1] - (uint64_t)bounds[0] : 1;
        blocks = qd_cuda_grid_blocks(n, task->block_dim, task->max_blocks);
    }
    struct timespec t0, t1;
    QdCuResult r = 0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long k = 0; k < iterations && r == 0; k++) {
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
