/* python/pack.c -- the one argument packer of every launcher (pack.h). */
#include "pack.h"

#include "../runtime/cpu/cpu.h"

#include <string.h>

/***** parameters *****/

int
qd_py_params_from_args(const QdKernelArg *args, uint32_t n, const uint32_t *offsets,
                       uint32_t noffsets, QdPyParam **out)
{
    QdPyParam *params = PyMem_Calloc((size_t)n + 1, sizeof(QdPyParam));
    if (params == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    uint32_t q = 0; /* QIR parameters taken so far */
    for (uint32_t i = 0; i < n; i++) {
        const QdKernelArg *a = &args[i];
        QdPyParam *p = &params[i];
        p->kind = a->kind;
        if (!qd_arg_kind_is_passed(a->kind)) {
            continue;
        }
        p->dtype = a->dtype;
        if (a->kind == QD_ARG_NDARRAY) {
            p->ndim = a->ndim;
            p->element.ndim = a->elem_ndim;
            memcpy(p->element.shape, a->elem_shape, sizeof(p->element.shape));
        }
        p->offset = q < noffsets ? offsets[q] : 0;
        q++;
    }
    *out = params;
    return 0;
}

int
qd_py_params_from_qir(const QdFunc *f, const uint32_t *offsets, QdPyParam **out)
{
    QdPyParam *params = PyMem_Calloc((size_t)f->nparams + 1, sizeof(QdPyParam));
    if (params == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (uint32_t i = 0; i < f->nparams; i++) {
        const QdType *ty = qd_value_type(f, f->params[i]);
        QdPyParam *p = &params[i];
        if (ty->kind == QD_TY_NDARRAY) {
            p->kind = QD_ARG_NDARRAY;
            p->dtype = ty->elem->kind;
            p->ndim = ty->ndim;
        } else {
            p->kind = QD_ARG_SCALAR;
            p->dtype = ty->kind;
        }
        p->offset = offsets[i];
    }
    *out = params;
    return 0;
}

/***** host memory *****/

static int
host_open(QdPyArrayMemory *self, uint32_t i, PyObject *arg, QdPyArray *out)
{
    (void)i;
    Py_buffer *v = qd_py_host_arrays_export((QdPyHostArrays *)self, arg);
    if (v == NULL) {
        return -1;
    }
    if (v->ndim < 0 || v->ndim > QD_NDARRAY_MAX_NDIM) {
        PyErr_Format(PyExc_ValueError, "arrays have at most %d axes, got %d", QD_NDARRAY_MAX_NDIM,
                     v->ndim);
        return -1;
    }
    out->data = (uint64_t)(uintptr_t)v->buf;
    out->ndim = (uint32_t)v->ndim;
    out->itemsize = (uint32_t)v->itemsize;
    for (int d = 0; d < v->ndim; d++) {
        out->shape[d] = v->shape[d];
    }
    return 0;
}

void
qd_py_host_arrays_init(QdPyHostArrays *h)
{
    h->memory.open = host_open;
    h->memory.place = NULL;
    h->views = h->inline_views;
    h->count = 0;
    h->capacity = QD_ARRAY_LEN(h->inline_views);
}

Py_buffer *
qd_py_host_arrays_export(QdPyHostArrays *h, PyObject *arg)
{
    if (h->count == h->capacity) {
        uint32_t capacity = 2 * h->capacity;
        Py_buffer *views = PyMem_Malloc(capacity * sizeof(Py_buffer));
        if (views == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        memcpy(views, h->views, h->count * sizeof(Py_buffer));
        if (h->views != h->inline_views) {
            PyMem_Free(h->views);
        }
        h->views = views;
        h->capacity = capacity;
    }
    Py_buffer *v = &h->views[h->count];
    if (PyObject_GetBuffer(arg, v, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        if (PyErr_ExceptionMatches(PyExc_BufferError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_ValueError,
                         "an array argument must be a C-contiguous, writable array (got %.100s)",
                         Py_TYPE(arg)->tp_name);
        }
        return NULL;
    }
    h->count++;
    return v;
}

void
qd_py_host_arrays_release(QdPyHostArrays *h)
{
    for (uint32_t i = 0; i < h->count; i++) {
        PyBuffer_Release(&h->views[i]);
    }
    if (h->views != h->inline_views) {
        PyMem_Free(h->views);
    }
    qd_py_host_arrays_init(h);
}

/***** packing *****/

/* Checks ndarray argument i against its parameter and writes its record. */
static int
pack_array(const QdPyParam *p, uint32_t i, PyObject *arg, unsigned char *packed,
           QdPyArrayMemory *memory)
{
    QdPyArray a = {0};
    if (memory->open(memory, i, arg, &a) < 0) {
        return -1;
    }
    size_t itemsize = qd_py_scalar_bytes(p->dtype);
    if (a.ndim != p->ndim || a.itemsize != itemsize) {
        PyErr_Format(PyExc_ValueError,
                     "argument %u: expected an array of %s with %u dimension(s), got %u "
                     "dimension(s) of %u-byte elements",
                     i, qd_type_scalar_name(p->dtype), p->ndim, a.ndim, a.itemsize);
        return -1;
    }
    if (qd_py_check_element_axes(i, &p->element, a.shape, a.ndim) < 0) {
        return -1;
    }
    for (uint32_t d = 0; d < a.ndim; d++) {
        if (a.shape[d] > INT32_MAX) {
            PyErr_Format(PyExc_ValueError, "argument %u: ndarray dimension exceeds 2^31-1", i);
            return -1;
        }
    }
    if (memory->place != NULL && memory->place(memory, i, &a) < 0) {
        return -1;
    }
    qd_ndarray_record_write(packed + p->offset, a.data, a.shape, a.ndim);
    return 0;
}

int
qd_py_pack_arguments(const QdPyParam *params, uint32_t n, PyObject *const *args,
                     unsigned char *packed, QdPyArrayMemory *memory)
{
    for (uint32_t i = 0; i < n; i++) {
        const QdPyParam *p = &params[i];
        if (p->offset == QD_ARG_UNUSED) {
            continue; /* the code never reads it */
        }
        switch (p->kind) {
        case QD_ARG_SCALAR:
            if (qd_py_pack_scalar(args[i], p->dtype, packed + p->offset) < 0) {
                return -1;
            }
            break;
        case QD_ARG_NDARRAY:
            if (pack_array(p, i, args[i], packed, memory) < 0) {
                return -1;
            }
            break;
        case QD_ARG_TEMPLATE:
            break; /* compiled into the code */
        }
    }
    return 0;
}

/***** scalars *****/

size_t
qd_py_scalar_bytes(QdTypeKind kind)
{
    return (qd_type_bits(qd_type_scalar(kind)) + 7) / 8;
}

int
qd_py_pack_scalar(PyObject *value, QdTypeKind kind, unsigned char *dst)
{
    const QdType *ty = qd_type_scalar(kind);
    if (qd_type_is_float(ty)) {
        double d = PyFloat_AsDouble(value);
        if (d == -1.0 && PyErr_Occurred()) {
            return -1;
        }
        if (kind == QD_TY_F32) {
            float f = (float)d;
            memcpy(dst, &f, 4);
        } else if (kind == QD_TY_F64) {
            memcpy(dst, &d, 8);
        } else {
            uint16_t h = kind == QD_TY_F16 ? qd_cpu_f16_from_double(d) : qd_cpu_bf16_from_double(d);
            memcpy(dst, &h, 2);
        }
        return 0;
    }
    if (kind == QD_TY_U1) {
        int t = PyObject_IsTrue(value);
        if (t < 0) {
            return -1;
        }
        dst[0] = (unsigned char)t;
        return 0;
    }
    PyObject *index = PyNumber_Index(value);
    if (index == NULL) {
        return -1;
    }
    /* As the reference: a signed parameter takes any int64, an unsigned one any uint64 (then
     * both wrap to the width); a value outside those is a TypeError. */
    int overflow = 0;
    long long sv = PyLong_AsLongLongAndOverflow(index, &overflow);
    if (sv == -1 && overflow == 0 && PyErr_Occurred()) {
        Py_DECREF(index);
        return -1;
    }
    bool is_signed = qd_type_is_signed(ty);
    if ((is_signed && overflow != 0) || (!is_signed && (overflow < 0 || (overflow == 0 && sv < 0)))) {
        PyErr_Format(PyExc_TypeError, "%S does not fit the 64-bit %s range of a %s parameter", index,
                     is_signed ? "signed" : "unsigned", qd_type_scalar_name(kind));
        Py_DECREF(index);
        return -1;
    }
    if (!is_signed && overflow > 0) {
        (void)PyLong_AsUnsignedLongLong(index);
        if (PyErr_Occurred()) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "%S does not fit the 64-bit unsigned range of a %s parameter",
                         index, qd_type_scalar_name(kind));
            Py_DECREF(index);
            return -1;
        }
    }
    /* Two's complement bits modulo 2^64, wrapped to the width as a C conversion does: the low
     * bytes, little-endian. */
    uint64_t bits = PyLong_AsUnsignedLongLongMask(index);
    Py_DECREF(index);
    if (bits == (uint64_t)-1 && PyErr_Occurred()) {
        return -1;
    }
    memcpy(dst, &bits, qd_py_scalar_bytes(kind));
    return 0;
}

PyObject *
qd_py_unpack_result(const unsigned char *slot, QdTypeKind kind)
{
    switch (kind) {
    case QD_TY_U1: return PyLong_FromLong(slot[0] != 0);
    case QD_TY_I8: return PyLong_FromLong(*(const int8_t *)slot);
    case QD_TY_I16: return PyLong_FromLong(*(const int16_t *)slot);
    case QD_TY_I32: return PyLong_FromLong(*(const int32_t *)slot);
    case QD_TY_I64: return PyLong_FromLongLong(*(const int64_t *)slot);
    case QD_TY_U8: return PyLong_FromUnsignedLong(*(const uint8_t *)slot);
    case QD_TY_U16: return PyLong_FromUnsignedLong(*(const uint16_t *)slot);
    case QD_TY_U32: return PyLong_FromUnsignedLong(*(const uint32_t *)slot);
    case QD_TY_U64: return PyLong_FromUnsignedLongLong(*(const uint64_t *)slot);
    case QD_TY_F16: return PyFloat_FromDouble(qd_cpu_f16_to_double(*(const uint16_t *)slot));
    case QD_TY_BF16: return PyFloat_FromDouble(qd_cpu_bf16_to_double(*(const uint16_t *)slot));
    case QD_TY_F32: return PyFloat_FromDouble(*(const float *)slot);
    case QD_TY_F64: return PyFloat_FromDouble(*(const double *)slot);
    default: Py_RETURN_NONE;
    }
}

PyObject *
qd_py_unpack_results(const unsigned char *slots, const QdTypeKind *types, uint32_t n)
{
    if (n == 0) {
        Py_RETURN_NONE;
    }
    if (n == 1) {
        return qd_py_unpack_result(slots, types[0]);
    }
    PyObject *ret = PyTuple_New(n);
    for (uint32_t i = 0; ret != NULL && i < n; i++) {
        PyObject *v = qd_py_unpack_result(slots + QD_RESULT_SLOT_BYTES * i, types[i]);
        if (v == NULL) {
            Py_CLEAR(ret);
            break;
        }
        PyTuple_SET_ITEM(ret, i, v);
    }
    return ret;
}
