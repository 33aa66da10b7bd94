/* python/cuda_kernel.c -- kernels compiled for CUDA: the CudaKernel type and its launch.
 *
 * `_core.compile_kernel(...)` with options["arch"] == "cuda" comes here (kernel.c hands over
 * the compile request it built) and returns a CudaKernel, which is called exactly like a
 * CompiledKernel: one positional argument per kernel parameter (scalars as Python numbers,
 * ndarrays as DeviceBuffers or host buffers such as NumPy arrays, None for templates).
 *
 * Compile (cuda_compile.c): driver (frontend, passes, PTX + host bounds) -> the driver's linker
 * -> module; the field pointers are written into the module once (codegen.h, NVPTX KERNEL ABI);
 * the device buffers of kernel_ret slots and tmp_alloc slots are made once per kernel and
 * reused by every launch (launches are ordered on the default stream, so they never overlap).
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
/* Host buffers passed for ndarray parameters in one launch. */
#define MAX_HOST_ARRAYS 32
size_t
qd_py_scalar_bytes(int kind)
{
    const QdType *ty = qd_type_scalar((QdTypeKind)kind);
    return ty->kind == QD_TY_U1 ? 1 : qd_type_bits(ty) / 8;
}

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
    return 0;
}

static int
cuda_clear(CudaKernelObject *self)
{
    Py_CLEAR(self->module);
    Py_CLEAR(self->qir_frontend);
    Py_CLEAR(self->qir);
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

/* A host buffer lent for an ndarray argument and its device copy. */
typedef struct HostArray {
    Py_buffer view;    /* the exported buffer */
    QdCuDeviceptr dev; /* its device copy */
} HostArray;

/* Writes ndarray argument i (a DeviceBuffer or a host buffer) into the packed arguments. A host
 * buffer is copied to the device once it has passed every check. */
static int
pack_array(CudaKernelObject *self, QdPyState *state, QdCtx *ctx, uint32_t i, PyObject *arg,
           unsigned char *packed, HostArray *hosts, uint32_t *nhosts)
{
    const CudaParam *p = &self->params[i];
    HostArray *h = NULL;
    QdCuDeviceptr ptr = 0;
    int64_t extents[QD_DEVICE_MAX_NDIM];
    int32_t shape[QD_DEVICE_MAX_NDIM];
    uint32_t ndim, itemsize;

    if (Py_TYPE(arg) == (PyTypeObject *)state->device_buffer_type) {
        const DeviceBufferObject *buf = (const DeviceBufferObject *)arg;
        ptr = buf->ptr;
        ndim = buf->ndim;
        itemsize = buf->itemsize;
        memcpy(extents, buf->shape, sizeof(extents));
    } else {
        if (*nhosts == MAX_HOST_ARRAYS) {
            PyErr_SetString(PyExc_ValueError, "too many host array arguments");
            return -1;
        }
        h = &hosts[*nhosts];
        if (PyObject_GetBuffer(arg, &h->view, PyBUF_ND | PyBUF_WRITABLE) < 0) {
            return -1;
        }
        h->dev = 0;
        (*nhosts)++;
        ndim = (uint32_t)h->view.ndim;
        itemsize = (uint32_t)h->view.itemsize;
        for (uint32_t d = 0; d < ndim && d < QD_DEVICE_MAX_NDIM; d++) {
            extents[d] = h->view.shape[d];
        }
    }
    /* The ndarray record holds 32-bit extents. */
    for (uint32_t d = 0; d < ndim && d < QD_DEVICE_MAX_NDIM; d++) {
        if (extents[d] > INT32_MAX) {
            PyErr_SetString(PyExc_ValueError, "ndarray dimension exceeds 2^31-1");
            return -1;
        }
        shape[d] = (int32_t)extents[d];
    }
    if (ndim != p->ndim || itemsize != p->itemsize) {
        PyErr_Format(PyExc_ValueError,
                     "argument %u: expected a %u-d array of %u-byte elements, got %u-d of %u", i,
                     p->ndim, p->itemsize, ndim, itemsize);
        return -1;
    }
    if (qd_py_check_element_axes(i, &p->element, extents, ndim) < 0) {
        return -1;
    }
    if (h != NULL) {
        if (qd_cuda_alloc(ctx, (size_t)h->view.len, &h->dev) < 0 ||
            qd_cuda_upload(ctx, h->dev, h->view.buf, (size_t)h->view.len) < 0) {
            return qd_py_raise_diag(self->module, &ctx->diag);
        }
        ptr = h->dev;
    }
    memcpy(packed + p->offset, &ptr, sizeof(ptr));
    memcpy(packed + p->offset + 8, shape, 4 * (size_t)ndim);
    return 0;
}

QdPyElementAxes
qd_py_cuda_element_axes(PyObject *ck, uint32_t i)
{
    const CudaKernelObject *self = (const CudaKernelObject *)ck;
    QdPyElementAxes none = {0, {0, 0}};
    if (i >= self->nparams || self->params[i].kind != CUDA_PARAM_NDARRAY) {
        return none;
    }
    return self->params[i].element;
}

/* The launches of every task, in order. */
static int
launch_tasks(CudaKernelObject *self, QdCtx *ctx, unsigned char *packed)
{
    if (self->code.layout.tmps_size &&
        qd_cuda_memset_async(ctx, self->tmps, 0, self->code.layout.tmps_size) < 0) {
        return -1;
    }
    for (uint32_t t = 0; t < self->code.layout.ntasks; t++) {
        const CudaTask *task = &self->tasks[t];
        uint32_t blocks = task->is_serial ? 1 : task->max_blocks;
        if (task->bounds != NULL) {
            QdLaunchCtx host_ctx;
            int64_t bounds[2] = {0, 0};
            host_ctx.args = packed;
            host_ctx.results = NULL;
            host_ctx.tmps = NULL;
            task->bounds(&host_ctx, bounds);
            if (bounds[1] == bounds[0]) {
                continue; /* nothing to run (an empty range has end = begin) */
            }
            uint64_t n = (uint64_t)bounds[1] - (uint64_t)bounds[0];
            blocks = qd_cuda_grid_blocks(n, task->block_dim, task->max_blocks);
        }
        RETURN_IF_ERROR(
            qd_cuda_launch(ctx, task->function, blocks, task->block_dim, packed, task->name));
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
finish_launch(CudaKernelObject *self, QdPyState *state, QdCtx *ctx, HostArray *hosts,
              uint32_t nhosts)
{
    uint64_t slots[64];
    uint32_t nresults = self->code.layout.nresults;
    int rc = 0;

    if (self->code.nasserts == 0 && !self->code.has_print && nhosts == 0 && nresults == 0) {
        Py_RETURN_NONE; /* nothing to wait for: the launch stays asynchronous */
    }
    nresults = nresults > QD_ARRAY_LEN(slots) ? QD_ARRAY_LEN(slots) : nresults;
    Py_BEGIN_ALLOW_THREADS
    if (self->code.nasserts > 0) {
        rc = check_assert_flag(self, state, ctx);
    }
    if (rc == 0 && self->code.has_print) {
        rc = qd_cuda_sync(ctx);
        fflush(stdout);
    }
    for (uint32_t i = 0; rc == 0 && i < nhosts; i++) {
        if (hosts[i].dev && !hosts[i].view.readonly) {
            rc = qd_cuda_download(ctx, hosts[i].view.buf, hosts[i].dev, (size_t)hosts[i].view.len);
        }
    }
    if (rc == 0 && nresults > 0) {
        rc = qd_cuda_download(ctx, slots, self->results, QD_RESULT_SLOT_BYTES * nresults);
    }
    Py_END_ALLOW_THREADS
    if (rc < 0) {
        qd_py_raise_diag(self->module, &ctx->diag);
        return NULL;
    }
    if (nresults == 0) {
        Py_RETURN_NONE;
    }
    const QdTypeKind *types = self->code.layout.result_types;
    if (nresults == 1) {
        return qd_py_unpack_result((const unsigned char *)&slots[0], types[0]);
    }
    PyObject *ret = PyTuple_New(nresults);
    for (uint32_t i = 0; ret && i < nresults; i++) {
        PyObject *v = qd_py_unpack_result((const unsigned char *)&slots[i], types[i]);
        if (v == NULL) {
            Py_CLEAR(ret);
            break;
        }
        PyTuple_SET_ITEM(ret, i, v);
    }
    return ret;
}

/* The whole parameter buffer of a launch: arguments (host arrays copied to the device) and the
 * launch tail. 0, or -1 with an exception. */
static int
pack_arguments(CudaKernelObject *self, QdPyState *state, QdCtx *ctx, PyObject *const *args,
               unsigned char *packed, HostArray *hosts, uint32_t *nhosts)
{
    memset(packed, 0, self->param_bytes);
    if (self->rng_offset >= 0) {
        uint64_t seed = qd_py_next_rng_seed(state);
        memcpy(packed + self->rng_offset, &seed, sizeof(seed));
    }
    for (uint32_t i = 0; i < self->nparams; i++) {
        const CudaParam *p = &self->params[i];
        if (p->kind == CUDA_PARAM_SCALAR) {
            RETURN_IF_ERROR(qd_py_pack_scalar(args[i], p->dtype, packed + p->offset));
        } else if (p->kind == CUDA_PARAM_NDARRAY) {
            RETURN_IF_ERROR(pack_array(self, state, ctx, i, args[i], packed, hosts, nhosts));
        }
    }
    uint64_t tail[3] = {self->results, self->tmps, state->cuda_runtime_state};
    memcpy(packed + self->code.layout.args_size, tail, sizeof(tail));
    return 0;
}

static PyObject *
cuda_call(CudaKernelObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    QdPyState *state = qd_py_state(self->module);
    unsigned char inline_buffer[INLINE_PARAM_BYTES] __attribute__((aligned(16)));
    unsigned char *packed = inline_buffer;
    HostArray hosts[MAX_HOST_ARRAYS];
    uint32_t nhosts = 0;
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
    if (pack_arguments(self, state, &ctx, args, packed, hosts, &nhosts) < 0) {
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
    if (launch_tasks(self, &ctx, packed) < 0) {
        qd_py_raise_diag(self->module, &ctx.diag);
        goto done;
    }
    ret = finish_launch(self, state, &ctx, hosts, nhosts);
done:
    for (uint32_t i = 0; i < nhosts; i++) {
        qd_cuda_free(hosts[i].dev);
        PyBuffer_Release(&hosts[i].view);
    }
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
    {"tasks", (getter)cuda_get_tasks, NULL, "(name, block_dim, max_blocks, host_bounds)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef cuda_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(CudaKernelObject, vectorcall), READONLY, NULL},
    {"from_cache", T_BOOL, offsetof(CudaKernelObject, from_cache), READONLY,
     "whether the machine code came from the offline cache"},
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
    HostArray hosts[MAX_HOST_ARRAYS];
    uint32_t nhosts = 0;
    QdCtx ctx;

    if (Py_TYPE(kernel) != (PyTypeObject *)state->cuda_kernel_type ||
        (uint32_t)nargs != self->nparams || self->param_bytes > sizeof(packed) ||
        self->code.layout.ntasks == 0) {
        PyErr_SetString(PyExc_TypeError, "cuda_raw_launch_us(CudaKernel, args, iterations)");
        return NULL;
    }
    qd_ctx_init(&ctx);
    const QdCudaApi *cu = qd_cuda_load(&ctx);
    int status = cu ? pack_arguments(self, state, &ctx, args, packed, hosts, &nhosts) : -1;
    for (uint32_t i = 0; i < nhosts; i++) {
        qd_cuda_free(hosts[i].dev);
        PyBuffer_Release(&hosts[i].view);
    }
    if (status < 0 || nhosts > 0) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "cuda_raw_launch_us takes DeviceBuffers for arrays");
        }
        return NULL;
    }
    const CudaTask *task = &self->tasks[0];
    void *params[1] = {packed};
    uint32_t blocks = task->is_serial ? 1 : task->max_blocks;
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
