/* python/dlpack.c -- DLPack export of CUDA device memory (DeviceBuffer.to_dlpack).
 *
 * DeviceBuffer.to_dlpack(dtype_code, bits, shape, strides, versioned) returns a PyCapsule that
 * other libraries (torch.utils.dlpack.from_dlpack, CuPy, JAX) take without copying: a
 * DLManagedTensor ("dltensor", DLPack 0.x) or a DLManagedTensorVersioned
 * ("dltensor_versioned", DLPack 1.x) describing the buffer's memory with the given element
 * type, shape and strides (in elements: a field or ndarray with a permuted layout describes its
 * canonical axes over its physical memory). The Python layer (quadrants/_dlpack.py) chooses the
 * dtype and the canonical shape; the checks here keep every described element inside the
 * buffer.
 *
 * Ownership, as the DLPack specification requires:
 *   - the managed tensor holds a strong reference to the DeviceBuffer (manager_ctx), so the
 *     memory outlives the consumer's view even when the field or ndarray is dropped;
 *   - a consumer renames the capsule ("used_dltensor[_versioned]") and calls the tensor's
 *     deleter when done; the deleter may run on any thread, without the GIL: it takes the GIL to
 *     drop the reference (and leaks it when the interpreter is already finalised);
 *   - a capsule never consumed still has its original name when it dies: its destructor calls
 *     the deleter.
 * The structs below are the ABI of dlpack.h (v1.0), spelled here so nothing is included from
 * another project.
 */
#include "cuda_py.h"

#include <stdlib.h>
#include <string.h>

/***** the DLPack ABI *****/

enum {
    DL_CUDA = 2, /* kDLCUDA */
};

typedef struct DLDevice {
    int32_t device_type; /* DL_CUDA */
    int32_t device_id;   /* CUDA ordinal */
} DLDevice;

typedef struct DLDataType {
    uint8_t code;   /* 0 int, 1 uint, 2 float, 4 bfloat, 6 bool */
    uint8_t bits;   /* bits per element */
    uint16_t lanes; /* 1 */
} DLDataType;

typedef struct DLTensor {
    void *data;           /* the buffer's device address */
    DLDevice device;      /* where it is */
    int32_t ndim;         /* number of axes */
    DLDataType dtype;     /* element type */
    int64_t *shape;       /* ndim extents */
    int64_t *strides;     /* ndim strides, in elements */
    uint64_t byte_offset; /* 0 */
} DLTensor;

typedef struct DLManagedTensor {
    DLTensor dl_tensor;                      /* the description */
    void *manager_ctx;                       /* the DeviceBuffer (a strong reference) */
    void (*deleter)(struct DLManagedTensor *); /* managed_deleter */
} DLManagedTensor;

typedef struct DLPackVersion {
    uint32_t major; /* 1 */
    uint32_t minor; /* 0 */
} DLPackVersion;

typedef struct DLManagedTensorVersioned {
    DLPackVersion version;                              /* 1.0 */
    void *manager_ctx;                                  /* the DeviceBuffer (strong) */
    void (*deleter)(struct DLManagedTensorVersioned *); /* versioned_deleter */
    uint64_t flags;                                     /* 0: writable, not a copy */
    DLTensor dl_tensor;                                 /* the description */
} DLManagedTensorVersioned;

/* One allocation per export: the managed tensor (either kind) and its shape and strides. */
typedef struct Export {
    union {
        DLManagedTensor plain;               /* versioned == false */
        DLManagedTensorVersioned versioned;  /* versioned == true */
    } managed;
    int64_t shape[QD_NDARRAY_MAX_NDIM];   /* extents */
    int64_t strides[QD_NDARRAY_MAX_NDIM]; /* strides in elements */
} Export;

/* Drops the reference to the DeviceBuffer and frees the export. Any thread, GIL or not. */
static void
release_export(Export *e, void *owner)
{
    if (owner != NULL && Py_IsInitialized()) {
        PyGILState_STATE state = PyGILState_Ensure();
        Py_DECREF((PyObject *)owner);
        PyGILState_Release(state);
    }
    free(e);
}

static void
managed_deleter(DLManagedTensor *m)
{
    release_export((Export *)m, m->manager_ctx);
}

static void
versioned_deleter(DLManagedTensorVersioned *m)
{
    release_export((Export *)m, m->manager_ctx);
}

/* Capsule destructors: only a capsule nobody consumed still has its first name. */
static void
capsule_destructor(PyObject *capsule)
{
    if (PyCapsule_IsValid(capsule, "dltensor")) {
        DLManagedTensor *m = PyCapsule_GetPointer(capsule, "dltensor");
        m->deleter(m);
    }
    PyErr_Clear();
}

static void
versioned_capsule_destructor(PyObject *capsule)
{
    if (PyCapsule_IsValid(capsule, "dltensor_versioned")) {
        DLManagedTensorVersioned *m = PyCapsule_GetPointer(capsule, "dltensor_versioned");
        m->deleter(m);
    }
    PyErr_Clear();
}

/***** DeviceBuffer.to_dlpack *****/

/* Reads a sequence of `n` ints into out; -1 with an exception when it is not one. */
static int
read_int64s(PyObject *seq, const char *what, Py_ssize_t n, int64_t *out)
{
    PyObject *items = PySequence_Fast(seq, what);
    if (items == NULL) {
        return -1;
    }
    int rc = 0;
    if (PySequence_Fast_GET_SIZE(items) != n) {
        PyErr_Format(PyExc_ValueError, "DeviceBuffer.to_dlpack: %s must have %zd items", what, n);
        rc = -1;
    }
    for (Py_ssize_t k = 0; k < n && rc == 0; k++) {
        long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(items, k));
        if (v == -1 && PyErr_Occurred()) {
            rc = -1;
        }
        out[k] = (int64_t)v;
    }
    Py_DECREF(items);
    return rc;
}

/* Whether every element the description reaches lies inside the buffer. */
static bool
description_fits(const DeviceBufferObject *buf, const Export *e, Py_ssize_t ndim)
{
    uint64_t last = 0; /* largest element index reached */
    for (Py_ssize_t k = 0; k < ndim; k++) {
        if (e->shape[k] < 0 || e->strides[k] < 0) {
            return false;
        }
        if (e->shape[k] == 0) {
            return true; /* no element at all */
        }
        if ((uint64_t)e->strides[k] > ((uint64_t)1 << 62) / (uint64_t)e->shape[k]) {
            return false;
        }
        last += (uint64_t)(e->shape[k] - 1) * (uint64_t)e->strides[k];
    }
    return (last + 1) * buf->itemsize <= buf->nbytes;
}

PyObject *
qd_py_device_buffer_to_dlpack(PyObject *self_obj, PyObject *args)
{
    DeviceBufferObject *self = (DeviceBufferObject *)self_obj;
    unsigned char code = 0, bits = 0;
    PyObject *shape = NULL, *strides = NULL;
    int versioned = 0;
    Export *e = NULL;
    QdCtx ctx;

    if (!PyArg_ParseTuple(args, "bbOOp:DeviceBuffer.to_dlpack", &code, &bits, &shape, &strides,
                          &versioned)) {
        return NULL;
    }
    Py_ssize_t ndim = PySequence_Size(shape);
    if (ndim < 0) {
        return NULL;
    }
    if (ndim > QD_NDARRAY_MAX_NDIM || bits == 0 || bits % 8 != 0 || bits / 8u != self->itemsize ||
        (code != 0 && code != 1 && code != 2 && code != 4 && code != 6)) {
        PyErr_SetString(PyExc_ValueError,
                        "DeviceBuffer.to_dlpack: bad dtype or too many dimensions");
        return NULL;
    }
    if (self->ptr == 0) {
        PyErr_SetString(PyExc_ValueError, "DeviceBuffer.to_dlpack: the buffer has no memory");
        return NULL;
    }
    if (self->vk.impl != NULL) {
        PyErr_SetString(PyExc_NotImplementedError,
                        "DeviceBuffer.to_dlpack: Vulkan memory cannot be shared through DLPack; "
                        "copy it to the host (to_numpy) first");
        return NULL;
    }
    qd_ctx_init(&ctx);
    const QdCudaDevice *device = qd_cuda_device(&ctx);
    if (device == NULL) {
        qd_py_raise_diag(PyType_GetModule(Py_TYPE(self_obj)), &ctx.diag);
        return NULL;
    }
    e = calloc(1, sizeof(Export));
    if (e == NULL) {
        return PyErr_NoMemory();
    }
    if (read_int64s(shape, "shape", ndim, e->shape) < 0 ||
        read_int64s(strides, "strides", ndim, e->strides) < 0) {
        free(e);
        return NULL;
    }
    if (!description_fits(self, e, ndim)) {
        free(e);
        PyErr_SetString(PyExc_ValueError,
                        "DeviceBuffer.to_dlpack: shape and strides reach outside the buffer");
        return NULL;
    }
    DLTensor *t = versioned ? &e->managed.versioned.dl_tensor : &e->managed.plain.dl_tensor;
    t->data = (void *)(uintptr_t)self->ptr;
    t->device.device_type = DL_CUDA;
    t->device.device_id = device->ordinal;
    t->ndim = (int32_t)ndim;
    t->dtype.code = code;
    t->dtype.bits = bits;
    t->dtype.lanes = 1;
    t->shape = e->shape;
    t->strides = e->strides;
    t->byte_offset = 0;
    PyObject *capsule;
    if (versioned) {
        e->managed.versioned.version.major = 1;
        e->managed.versioned.version.minor = 0;
        e->managed.versioned.manager_ctx = self_obj;
        e->managed.versioned.deleter = versioned_deleter;
        capsule = PyCapsule_New(&e->managed.versioned, "dltensor_versioned",
                                versioned_capsule_destructor);
    } else {
        e->managed.plain.manager_ctx = self_obj;
        e->managed.plain.deleter = managed_deleter;
        capsule = PyCapsule_New(&e->managed.plain, "dltensor", capsule_destructor);
    }
    if (capsule == NULL) {
        free(e); /* no reference was taken yet */
        return NULL;
    }
    Py_INCREF(self_obj); /* released by the deleter */
    return capsule;
}
