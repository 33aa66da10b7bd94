/* python/cuda.c -- the Python face of the CUDA runtime: device discovery, device memory, sync.
 *
 * Adds to quadrants._core (qd_py_cuda_add, from module.c):
 *     cuda_available() -> bool        driver loads, cuInit succeeds, at least one device
 *     cuda_unavailable_reason() -> str | None
 *     cuda_device_info() -> dict      ordinal, name, compute_capability (major, minor), sm_count,
 *                                     max_threads_per_sm, max_shared_memory_per_block,
 *                                     total_memory, driver_version, target_sm (the PTX target),
 *                                     clock_rate_khz (0 when unknown)
 *     cuda_sync()                     waits for all launched work (qd.sync on CUDA)
 *     cuda_register_field(id, buf)    the DeviceBuffer backing field "f<id>" on CUDA
 *     cuda_libdevice_paths() -> list  where libdevice.10.bc is looked for, in order
 *     DeviceBuffer(shape, itemsize)   device memory (cuda_py.h), zero-filled; methods
 *                                     upload(buffer), download(buffer), read(offset, n) -> bytes,
 *                                     write(offset, bytes), copy_from(other),
 *                                     to_dlpack(...) (python/dlpack.c)
 * Every failure is a QuadrantsRuntimeError carrying the driver's error name (cuda.h). Copies
 * release the GIL: a download waits for the kernels launched before it.
 *
 * libdevice search order (target_nvptx.c reads the first that exists): $QD_LIBDEVICE_PATH
 * alone when it is set, else $CUDA_HOME/nvvm/libdevice/libdevice.10.bc, the same under
 * $CUDA_PATH and /usr/local/cuda,
 * then, for every directory of sys.path, the copies NVIDIA's and Triton's wheels ship:
 * nvidia/cuda_nvcc/nvvm/libdevice/, nvidia/cu13/nvvm/libdevice/, triton/backends/nvidia/lib/.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* strdup */
#endif
#include "cuda_py.h"

#include <structmember.h>

#include <stdlib.h>
#include <string.h>

#define LIBDEVICE "libdevice.10.bc"
#define MAX_LIBDEVICE_PATHS 64

/* The libdevice candidates, computed once per process (heap strings; C data, not objects). */
static char *libdevice_paths[MAX_LIBDEVICE_PATHS];
static uint32_t nlibdevice_paths;
static bool has_libdevice_paths;

/* Appends "<dir><suffix>" to the candidates (dir NULL or empty: nothing). */
static void
add_candidate(const char *dir, const char *suffix)
{
    if (dir == NULL || dir[0] == '\0' || nlibdevice_paths == MAX_LIBDEVICE_PATHS) {
        return;
    }
    size_t n = strlen(dir) + strlen(suffix) + 1;
    char *path = malloc(n);
    if (path != NULL) {
        snprintf(path, n, "%s%s", dir, suffix);
        libdevice_paths[nlibdevice_paths++] = path;
    }
}

/* Fills the candidate list (needs the GIL: reads sys.path). */
static void
compute_libdevice_paths(void)
{
    static const char *const in_packages[] = {
        "/nvidia/cuda_nvcc/nvvm/libdevice/" LIBDEVICE,
        "/nvidia/cu13/nvvm/libdevice/" LIBDEVICE,
        "/triton/backends/nvidia/lib/" LIBDEVICE,
    };
    if (has_libdevice_paths) {
        return;
    }
    has_libdevice_paths = true;
    const char *explicit_path = getenv("QD_LIBDEVICE_PATH");
    if (explicit_path != NULL && explicit_path[0] != '\0') {
        add_candidate(explicit_path, ""); /* an explicit choice: nothing else */
        return;
    }
    add_candidate(getenv("CUDA_HOME"), "/nvvm/libdevice/" LIBDEVICE);
    add_candidate(getenv("CUDA_PATH"), "/nvvm/libdevice/" LIBDEVICE);
    add_candidate("/usr/local/cuda", "/nvvm/libdevice/" LIBDEVICE);
    PyObject *sys_path = PySys_GetObject("path"); /* borrowed */
    for (Py_ssize_t i = 0; sys_path && PyList_Check(sys_path) && i < PyList_GET_SIZE(sys_path);
         i++) {
        PyObject *item = PyList_GET_ITEM(sys_path, i);
        const char *dir = PyUnicode_Check(item) ? PyUnicode_AsUTF8(item) : NULL;
        if (dir == NULL) {
            PyErr_Clear();
            continue;
        }
        for (size_t k = 0; k < QD_ARRAY_LEN(in_packages); k++) {
            add_candidate(dir, in_packages[k]);
        }
    }
}

/* options[name] as a bool, or dflt when absent. */
static bool
option_flag(PyObject *options, const char *name, bool dflt)
{
    PyObject *v = options ? PyDict_GetItemString(options, name) : NULL;
    return v ? PyObject_IsTrue(v) == 1 : dflt;
}

/* options[name] as a long, or dflt when absent or not an int. */
static long
option_long(PyObject *options, const char *name, long dflt)
{
    PyObject *v = options ? PyDict_GetItemString(options, name) : NULL;
    if (v == NULL || !PyLong_Check(v)) {
        return dflt;
    }
    long n = PyLong_AsLong(v);
    if (n == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return dflt;
    }
    return n;
}

int
qd_py_nvptx_options(PyObject *options, int sm, QdNvptxOptions *out)
{
    qd_nvptx_options_default(out);
    compute_libdevice_paths();
    out->sm = sm;
    out->llvm.opt_level = (int)option_long(options, "opt_level", 3);
    out->llvm.fast_math = option_flag(options, "fast_math", true);
    out->llvm.print_kernel_llvm_ir = option_flag(options, "print_kernel_llvm_ir", false);
    out->llvm.print_kernel_llvm_ir_optimized =
        option_flag(options, "print_kernel_llvm_ir_optimized", false);
    out->llvm.print_kernel_asm = option_flag(options, "print_kernel_asm", false);
    long block_dim = option_long(options, "default_gpu_block_dim", 128);
    out->default_block_dim = block_dim > 0 && block_dim <= 1024 ? (uint32_t)block_dim : 128;
    out->libdevice_paths = (const char *const *)libdevice_paths;
    out->nlibdevice_paths = nlibdevice_paths;
    return 0;
}

/***** DeviceBuffer *****/

/* Raises the diag in ctx through the module of `obj`'s type. Returns -1. */
static int
raise_ctx(PyObject *module, QdCtx *ctx)
{
    return qd_py_raise_diag(module, &ctx->diag);
}

/* A DeviceBuffer of `shape` (a sequence of ints) and `itemsize` with no memory yet (ptr 0);
 * NULL with an exception. */
static DeviceBufferObject *
buffer_shaped(PyTypeObject *type, PyObject *shape, unsigned int itemsize)
{
    PyObject *items = PySequence_Fast(shape, "DeviceBuffer: shape must be a sequence of ints");
    if (items == NULL) {
        return NULL;
    }
    Py_ssize_t ndim = PySequence_Fast_GET_SIZE(items);
    if (ndim > QD_NDARRAY_MAX_NDIM || itemsize == 0 || itemsize > 16) {
        Py_DECREF(items);
        PyErr_Format(PyExc_ValueError, "DeviceBuffer: at most %d dimensions of 1..16-byte items",
                     QD_NDARRAY_MAX_NDIM);
        return NULL;
    }
    DeviceBufferObject *self = (DeviceBufferObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        Py_DECREF(items);
        return NULL;
    }
    self->itemsize = itemsize;
    self->ndim = (uint32_t)ndim;
    self->nbytes = itemsize;
    for (Py_ssize_t k = 0; k < ndim; k++) {
        long long extent = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(items, k));
        if ((extent == -1 && PyErr_Occurred()) || extent < 0 ||
            (extent > 0 && self->nbytes > ((size_t)1 << 62) / (size_t)extent)) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_ValueError,
                                "DeviceBuffer: extents must be >= 0 and the size below 2**62 bytes");
            }
            Py_DECREF(items);
            Py_DECREF(self);
            return NULL;
        }
        self->shape[k] = (int64_t)extent;
        self->nbytes *= (size_t)extent;
    }
    Py_DECREF(items);
    return self;
}

static PyObject *
buffer_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *shape = NULL;
    unsigned int itemsize = 0;
    int vulkan = 0;
    static char *names[] = {"shape", "itemsize", "vulkan", NULL};
    QdCtx ctx;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OI|p:DeviceBuffer", names, &shape, &itemsize,
                                     &vulkan)) {
        return NULL;
    }
    PyObject *module = PyType_GetModule(type);
    DeviceBufferObject *self = module ? buffer_shaped(type, shape, itemsize) : NULL;
    if (self == NULL) {
        return NULL;
    }
    qd_ctx_init(&ctx);
    int rc;
    Py_BEGIN_ALLOW_THREADS
    if (vulkan) {
        rc = qd_vk_alloc(&ctx, self->nbytes ? self->nbytes : 1, &self->vk);
        self->ptr = self->vk.address;
    } else {
        rc = qd_cuda_alloc(&ctx, self->nbytes, &self->ptr);
    }
    Py_END_ALLOW_THREADS
    if (rc < 0) {
        raise_ctx(module, &ctx);
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

/* DeviceBuffer.wrap(ptr, shape, itemsize, owner): a DeviceBuffer over device memory that
 * `owner` (a torch tensor, a CuPy array...) keeps alive; it is never freed here. */
static PyObject *
buffer_wrap(PyObject *cls, PyObject *args)
{
    unsigned long long ptr = 0;
    PyObject *shape = NULL, *owner = NULL;
    unsigned int itemsize = 0;

    if (!PyArg_ParseTuple(args, "KOIO:DeviceBuffer.wrap", &ptr, &shape, &itemsize, &owner)) {
        return NULL;
    }
    DeviceBufferObject *self = buffer_shaped((PyTypeObject *)cls, shape, itemsize);
    if (self == NULL) {
        return NULL;
    }
    self->ptr = (QdCuDeviceptr)ptr;
    self->owner = Py_NewRef(owner);
    return (PyObject *)self;
}

static void
buffer_dealloc(DeviceBufferObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    if (self->owner != NULL) {
        Py_CLEAR(self->owner); /* not our memory */
        tp->tp_free((PyObject *)self);
        Py_DECREF(tp);
        return;
    }
    if (self->vk.impl != NULL) {
        qd_vk_free(&self->vk);
    } else {
        qd_cuda_free(self->ptr);
    }
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

/* Exports `obj` as a contiguous buffer of exactly self->nbytes (writable when asked). */
static int
get_host_buffer(DeviceBufferObject *self, PyObject *obj, bool writable, Py_buffer *view)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0)) < 0) {
        return -1;
    }
    if ((size_t)view->len != self->nbytes) {
        PyErr_Format(PyExc_ValueError, "DeviceBuffer of %zu bytes cannot copy %zd bytes",
                     self->nbytes, view->len);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* A copy between host memory and [offset, offset + n) of the buffer. */
static PyObject *
transfer(DeviceBufferObject *self, bool to_device, void *host, size_t offset, size_t n)
{
    QdCtx ctx;
    int rc;
    qd_ctx_init(&ctx);
    Py_BEGIN_ALLOW_THREADS
    if (self->vk.impl != NULL) {
        rc = to_device ? qd_vk_upload(&ctx, &self->vk, offset, host, n)
                       : qd_vk_download(&ctx, host, &self->vk, offset, n);
    } else {
        rc = to_device ? qd_cuda_upload(&ctx, self->ptr + offset, host, n)
                       : qd_cuda_download(&ctx, host, self->ptr + offset, n);
    }
    Py_END_ALLOW_THREADS
    if (rc < 0) {
        raise_ctx(PyType_GetModule(Py_TYPE(self)), &ctx);
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
buffer_upload(DeviceBufferObject *self, PyObject *obj)
{
    Py_buffer view;
    if (get_host_buffer(self, obj, false, &view) < 0) {
        return NULL;
    }
    PyObject *r = transfer(self, true, view.buf, 0, self->nbytes);
    PyBuffer_Release(&view);
    return r;
}

static PyObject *
buffer_download(DeviceBufferObject *self, PyObject *obj)
{
    Py_buffer view;
    if (get_host_buffer(self, obj, true, &view) < 0) {
        return NULL;
    }
    PyObject *r = transfer(self, false, view.buf, 0, self->nbytes);
    PyBuffer_Release(&view);
    return r;
}

/* Checks [offset, offset + n) against the buffer. */
static int
check_range(DeviceBufferObject *self, Py_ssize_t offset, Py_ssize_t n)
{
    if (offset < 0 || n < 0 || (size_t)offset + (size_t)n > self->nbytes) {
        PyErr_Format(PyExc_IndexError, "bytes [%zd, %zd) are outside the %zu-byte DeviceBuffer",
                     offset, offset + n, self->nbytes);
        return -1;
    }
    return 0;
}

static PyObject *
buffer_read(DeviceBufferObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t offset, n;
    if (nargs != 2 || (offset = PyLong_AsSsize_t(args[0])) == -1 ||
        (n = PyLong_AsSsize_t(args[1])) == -1) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "read(offset, nbytes)");
        }
        return NULL;
    }
    if (check_range(self, offset, n) < 0) {
        return NULL;
    }
    PyObject *bytes = PyBytes_FromStringAndSize(NULL, n);
    if (bytes == NULL) {
        return NULL;
    }
    PyObject *r = transfer(self, false, PyBytes_AS_STRING(bytes), (size_t)offset, (size_t)n);
    if (r == NULL) {
        Py_DECREF(bytes);
        return NULL;
    }
    Py_DECREF(r);
    return bytes;
}

static PyObject *
buffer_write(DeviceBufferObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer view;
    Py_ssize_t offset;
    if (nargs != 2 || (offset = PyLong_AsSsize_t(args[0])) == -1) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "write(offset, data)");
        }
        return NULL;
    }
    if (PyObject_GetBuffer(args[1], &view, PyBUF_C_CONTIGUOUS) < 0) {
        return NULL;
    }
    PyObject *r = check_range(self, offset, view.len) < 0
                      ? NULL
                      : transfer(self, true, view.buf, (size_t)offset, (size_t)view.len);
    PyBuffer_Release(&view);
    return r;
}

/* A copy between buffers of different memories (or Vulkan ones) through host memory. */
static PyObject *
copy_through_host(DeviceBufferObject *self, DeviceBufferObject *other)
{
    PyObject *bytes = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)self->nbytes);
    if (bytes == NULL) {
        return NULL;
    }
    PyObject *r = transfer(other, false, PyBytes_AS_STRING(bytes), 0, self->nbytes);
    if (r != NULL) {
        Py_DECREF(r);
        r = transfer(self, true, PyBytes_AS_STRING(bytes), 0, self->nbytes);
    }
    Py_DECREF(bytes);
    return r;
}

static PyObject *
buffer_copy_from(DeviceBufferObject *self, PyObject *other)
{
    QdCtx ctx;
    if (Py_TYPE(other) != Py_TYPE(self) || ((DeviceBufferObject *)other)->nbytes != self->nbytes) {
        PyErr_SetString(PyExc_ValueError, "copy_from: a DeviceBuffer of the same size is needed");
        return NULL;
    }
    qd_ctx_init(&ctx);
    if (self->vk.impl != NULL || ((DeviceBufferObject *)other)->vk.impl != NULL) {
        return copy_through_host(self, (DeviceBufferObject *)other);
    }
    if (qd_cuda_copy(&ctx, self->ptr, ((DeviceBufferObject *)other)->ptr, self->nbytes) < 0) {
        raise_ctx(PyType_GetModule(Py_TYPE(self)), &ctx);
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
buffer_get_shape(DeviceBufferObject *self, void *closure)
{
    (void)closure;
    PyObject *shape = PyTuple_New(self->ndim);
    for (uint32_t k = 0; shape && k < self->ndim; k++) {
        PyObject *v = PyLong_FromLongLong(self->shape[k]);
        if (v == NULL) {
            Py_CLEAR(shape);
            break;
        }
        PyTuple_SET_ITEM(shape, k, v);
    }
    return shape;
}

static PyMethodDef buffer_methods[] = {
    {"upload", (PyCFunction)buffer_upload, METH_O, "copy a host buffer of nbytes in"},
    {"download", (PyCFunction)buffer_download, METH_O, "copy into a writable host buffer"},
    {"read", (PyCFunction)(void (*)(void))buffer_read, METH_FASTCALL, "read(offset, n) -> bytes"},
    {"write", (PyCFunction)(void (*)(void))buffer_write, METH_FASTCALL, "write(offset, data)"},
    {"copy_from", (PyCFunction)buffer_copy_from, METH_O, "device-to-device copy"},
    {"to_dlpack", qd_py_device_buffer_to_dlpack, METH_VARARGS,
     "to_dlpack(dtype_code, bits, shape, strides, versioned): a DLPack capsule over the memory"},
    {"wrap", (PyCFunction)buffer_wrap, METH_VARARGS | METH_CLASS,
     "wrap(ptr, shape, itemsize, owner): another library's device memory, kept alive by owner"},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef buffer_members[] = {
    {"ptr", T_ULONGLONG, offsetof(DeviceBufferObject, ptr), READONLY, "device address"},
    {"nbytes", T_PYSSIZET, offsetof(DeviceBufferObject, nbytes), READONLY, "size in bytes"},
    {"itemsize", T_UINT, offsetof(DeviceBufferObject, itemsize), READONLY, "bytes per element"},
    {"ndim", T_UINT, offsetof(DeviceBufferObject, ndim), READONLY, "number of dimensions"},
    {NULL, 0, 0, 0, NULL},
};

static PyGetSetDef buffer_getset[] = {
    {"shape", (getter)buffer_get_shape, NULL, "extents", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot buffer_slots[] = {
    {Py_tp_new, buffer_new},
    {Py_tp_dealloc, buffer_dealloc},
    {Py_tp_methods, buffer_methods},
    {Py_tp_members, buffer_members},
    {Py_tp_getset, buffer_getset},
    {Py_tp_doc, "DeviceBuffer(shape, itemsize, vulkan=False): zero-filled device memory of "
                "CUDA, or of the Vulkan device."},
    {0, NULL},
};

static PyType_Spec buffer_spec = {
    .name = "quadrants._core.DeviceBuffer",
    .basicsize = sizeof(DeviceBufferObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = buffer_slots,
};

int
qd_py_device_buffer_ndim(PyObject *obj)
{
    if (Py_TYPE(obj)->tp_dealloc != (destructor)buffer_dealloc) {
        return -1;
    }
    return (int)((DeviceBufferObject *)obj)->ndim;
}

const int64_t *
qd_py_device_buffer_shape(PyObject *obj)
{
    if (Py_TYPE(obj)->tp_dealloc != (destructor)buffer_dealloc) {
        return NULL;
    }
    return ((DeviceBufferObject *)obj)->shape;
}

/***** module functions *****/

static PyObject *
cuda_available(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    return PyBool_FromLong(qd_cuda_available());
}

static PyObject *
cuda_unavailable_reason(PyObject *module, PyObject *unused)
{
    QdCtx ctx;
    (void)module;
    (void)unused;
    qd_ctx_init(&ctx);
    if (qd_cuda_available()) {
        Py_RETURN_NONE;
    }
    if (qd_cuda_load(&ctx) != NULL) {
        return PyUnicode_FromString("no CUDA device");
    }
    return PyUnicode_FromString(ctx.diag.message);
}

static PyObject *
cuda_device_info(PyObject *module, PyObject *unused)
{
    QdCtx ctx;
    (void)unused;
    qd_ctx_init(&ctx);
    const QdCudaDevice *d = qd_cuda_device(&ctx);
    if (d == NULL) {
        raise_ctx(module, &ctx);
        return NULL;
    }
    return Py_BuildValue("{s:i,s:s,s:(ii),s:i,s:i,s:i,s:n,s:i,s:i,s:i}", "ordinal", d->ordinal,
                         "name", d->name,
                         "compute_capability", d->cc_major, d->cc_minor, "sm_count", d->sm_count,
                         "max_threads_per_sm", d->max_threads_per_sm,
                         "max_shared_memory_per_block", d->max_shared_memory_per_block,
                         "total_memory", (Py_ssize_t)d->total_memory, "driver_version",
                         d->driver_version, "target_sm",
                         qd_nvptx_target_sm(10 * d->cc_major + d->cc_minor), "clock_rate_khz",
                         d->clock_rate_khz);
}

static PyObject *
cuda_sync(PyObject *module, PyObject *unused)
{
    QdCtx ctx;
    int rc;
    (void)unused;
    qd_ctx_init(&ctx);
    Py_BEGIN_ALLOW_THREADS
    rc = qd_cuda_sync(&ctx);
    Py_END_ALLOW_THREADS
    if (rc < 0) {
        raise_ctx(module, &ctx);
        return NULL;
    }
    fflush(stdout); /* device printf output goes out at synchronization */
    Py_RETURN_NONE;
}

static PyObject *
cuda_register_field(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    QdPyState *state = qd_py_state(module);
    if (nargs != 2 || !PyLong_Check(args[0]) ||
        Py_TYPE(args[1]) != (PyTypeObject *)state->device_buffer_type) {
        PyErr_SetString(PyExc_TypeError, "cuda_register_field(field_id: int, DeviceBuffer)");
        return NULL;
    }
    if (PyDict_SetItem(state->cuda_fields, args[0], args[1]) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
cuda_libdevice_paths(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    compute_libdevice_paths();
    PyObject *list = PyList_New(0);
    for (uint32_t i = 0; list && i < nlibdevice_paths; i++) {
        PyObject *s = PyUnicode_DecodeFSDefault(libdevice_paths[i]);
        if (s == NULL || PyList_Append(list, s) < 0) {
            Py_XDECREF(s);
            Py_CLEAR(list);
            break;
        }
        Py_DECREF(s);
    }
    return list;
}

static PyMethodDef cuda_methods[] = {
    {"cuda_available", cuda_available, METH_NOARGS, "whether a CUDA device can be used"},
    {"cuda_unavailable_reason", cuda_unavailable_reason, METH_NOARGS,
     "why CUDA cannot be used, or None"},
    {"cuda_device_info", cuda_device_info, METH_NOARGS, "facts about the CUDA device"},
    {"cuda_sync", cuda_sync, METH_NOARGS, "wait for all launched CUDA work"},
    {"cuda_register_field", (PyCFunction)(void (*)(void))cuda_register_field, METH_FASTCALL,
     "cuda_register_field(field_id, DeviceBuffer)"},
    {"cuda_libdevice_paths", cuda_libdevice_paths, METH_NOARGS,
     "where libdevice.10.bc is searched, in order"},
    {NULL, NULL, 0, NULL},
};

int
qd_py_cuda_add(PyObject *module)
{
    QdPyState *state = qd_py_state(module);
    state->device_buffer_type = PyType_FromModuleAndSpec(module, &buffer_spec, NULL);
    state->cuda_fields = PyDict_New();
    if (state->device_buffer_type == NULL || state->cuda_fields == NULL ||
        PyModule_AddObjectRef(module, "DeviceBuffer", state->device_buffer_type) < 0) {
        return -1;
    }
    return PyModule_AddFunctions(module, cuda_methods);
}
