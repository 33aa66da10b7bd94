/* python/kernel.c -- compiling kernels from Python and launching them on the CPU.
 *
 * `_core.compile_kernel(func, funcdef, filename, arg_descs, name, options)` runs the driver on one
 * specialization (the Python layer computes the argument signature and caches the result) and
 * returns a CompiledKernel; calling it packs the arguments into the layout of the kernel ABI
 * (codegen/llvm/codegen.h), runs the tasks on the CPU pool with the GIL released, and converts
 * the kernel's return values back to Python numbers.
 *
 * The JIT and the thread pool belong to the module state and are created on first use;
 * `_core.runtime_reset()` (called by qd.reset) drops them, together with the field registry
 * (`_core.register_field(id, array)`: the NumPy arrays whose memory backs fields on the CPU).
 * Kernels compiled before a reset refuse to run afterwards (a generation counter).
 */
#include "host.h"
#include "pack.h"

#include <structmember.h>

#include "../driver/driver.h"
#include "../runtime/cpu/cpu.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


typedef struct CompiledKernelObject {
    QD_PY_KERNEL_HEAD         /* vectorcall: ck_vectorcall; layout: &code */
    QdCompiledKernel code;    /* entry points and layouts */
    QdCpuTask *tasks;         /* code.tasks as the runtime runs them */
    QdPyParam *params;        /* one per Python argument */
    uint32_t nparams;         /* how many */
    uint64_t generation;      /* runtime generation it was compiled in */
    bool has_print;           /* the kernel prints */
    int64_t rng_offset;       /* offset of the hidden random seed argument, -1 when none */
} CompiledKernelObject;

static int finish_cpu_kernel(CompiledKernelObject *ck, QdPyState *state,
                             const QdKernelArg *args, uint32_t n, const QdKernelInfo *info);

/***** field registry and runtime *****/

/* Base address of field "f<id>", from the registered NumPy array (borrowed buffer: the
 * registry keeps the array alive until the runtime is reset). */
static const void *
resolve_field(void *user, const char *name)
{
    QdPyState *state = user;
    if (name[0] != 'f' || !state->fields) {
        return NULL;
    }
    PyObject *key = PyLong_FromString(name + 1, NULL, 10);
    PyObject *array = key ? PyDict_GetItemWithError(state->fields, key) : NULL;
    Py_XDECREF(key);
    if (!array) {
        PyErr_Clear();
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(array, &view, PyBUF_SIMPLE | PyBUF_WRITABLE) < 0) {
        PyErr_Clear();
        return NULL;
    }
    const void *p = view.buf;
    PyBuffer_Release(&view);
    return p;
}

/* The JIT and pool of the current runtime, created on first use. */
static int
ensure_runtime(QdPyState *state, PyObject *options, QdCtx *ctx)
{
    if (state->jit) {
        return 0;
    }
    QdLlvmOptions lo;
    qd_llvm_options_default(&lo);
    int32_t nthreads = 0;
    if (options) {
        PyObject *v;
        if ((v = PyDict_GetItemString(options, "opt_level")) && PyLong_Check(v)) {
            lo.opt_level = (int)PyLong_AsLong(v);
        }
        if ((v = PyDict_GetItemString(options, "fast_math"))) {
            lo.fast_math = PyObject_IsTrue(v) == 1;
        }
        if ((v = PyDict_GetItemString(options, "print_kernel_llvm_ir"))) {
            lo.print_kernel_llvm_ir = PyObject_IsTrue(v) == 1;
        }
        if ((v = PyDict_GetItemString(options, "print_kernel_llvm_ir_optimized"))) {
            lo.print_kernel_llvm_ir_optimized = PyObject_IsTrue(v) == 1;
        }
        if ((v = PyDict_GetItemString(options, "print_kernel_asm"))) {
            lo.print_kernel_asm = PyObject_IsTrue(v) == 1;
        }
        if ((v = PyDict_GetItemString(options, "cpu_simt"))) {
            lo.cpu_simt = PyObject_IsTrue(v) == 1;
        }
        if ((v = PyDict_GetItemString(options, "num_threads")) && PyLong_Check(v)) {
            nthreads = (int32_t)PyLong_AsLong(v);
        }
        if ((v = PyDict_GetItemString(options, "random_seed")) && PyLong_Check(v)) {
            state->random_seed = PyLong_AsUnsignedLongLongMask(v);
        }
    }
    state->jit = qd_driver_jit_new(ctx, &lo);
    if (!state->jit) {
        return -1;
    }
    state->pool = qd_cpu_pool_new(ctx, nthreads);
    return state->pool ? 0 : -1;
}

/* Uses of the runtime on this thread (compiles, cache loads, launches): a reset here, from
 * Python code the frontend runs, would wait for itself. */
static _Thread_local uint32_t runtime_uses_here;

void
qd_py_runtime_enter(QdPyState *state)
{
    atomic_fetch_add(&state->runtime_users, 1);
    runtime_uses_here++;
}

void
qd_py_runtime_leave(QdPyState *state)
{
    runtime_uses_here--;
    atomic_fetch_sub(&state->runtime_users, 1);
}

int
qd_py_runtime_reset(QdPyState *state)
{
    if (runtime_uses_here > 0) {
        PyErr_SetString(state->error_classes[QD_ERR_RUNTIME],
                        "qd.reset() cannot be called while a kernel is being compiled or "
                        "launched on the same thread");
        return -1;
    }
    /* Launches check the generation with the GIL held just before they count themselves as
     * users, so none can start on the old runtime after this; compiles and launches under way
     * keep its JIT, pool and fields alive until they are done. */
    state->generation++;
    state->resetting = true; /* no compile starts until the old runtime is gone */
    if (atomic_load(&state->runtime_users) > 0) {
        Py_BEGIN_ALLOW_THREADS
        while (atomic_load(&state->runtime_users) > 0) {
            struct timespec pause = {0, 100000}; /* 0.1 ms */
            nanosleep(&pause, NULL);
        }
        Py_END_ALLOW_THREADS
    }
    qd_cpu_pool_free(state->pool);
    state->pool = NULL;
    qd_cpu_jit_free(state->jit);
    state->jit = NULL;
    if (state->fields) {
        PyDict_Clear(state->fields);
    }
    qd_py_cuda_reset(state);
    state->rng_launches = 0;
    state->random_seed = 0;
    state->resetting = false;
    return 0;
}

/***** the CompiledKernel type *****/

int
qd_py_kernel_traverse(PyObject *op, visitproc visit, void *arg)
{
    QdPyKernelHead *self = (QdPyKernelHead *)op;
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->module);
    Py_VISIT(self->qir_frontend);
    Py_VISIT(self->qir);
    Py_VISIT(self->profile_names);
    return 0;
}

int
qd_py_kernel_clear(PyObject *op)
{
    QdPyKernelHead *self = (QdPyKernelHead *)op;
    Py_CLEAR(self->module);
    Py_CLEAR(self->qir_frontend);
    Py_CLEAR(self->qir);
    Py_CLEAR(self->profile_names);
    return 0;
}

PyObject *
qd_py_kernel_get_qir(PyObject *op, void *closure)
{
    QdPyKernelHead *self = (QdPyKernelHead *)op;
    PyObject *v = closure ? self->qir_frontend : self->qir;
    return Py_NewRef(v ? v : Py_None);
}

PyObject *
qd_py_kernel_get_ntasks(PyObject *op, void *closure)
{
    (void)closure;
    return PyLong_FromUnsignedLong(((QdPyKernelHead *)op)->layout->ntasks);
}

PyObject *
qd_py_kernel_get_task_kinds(PyObject *op, void *closure)
{
    (void)closure;
    const QdCompiledKernel *layout = ((QdPyKernelHead *)op)->layout;
    PyObject *kinds = PyTuple_New(layout->ntasks);
    for (uint32_t t = 0; kinds && t < layout->ntasks; t++) {
        PyObject *kind = PyUnicode_FromString(layout->tasks[t].grain ? "range_for" : "serial");
        if (!kind) {
            Py_CLEAR(kinds);
            break;
        }
        PyTuple_SET_ITEM(kinds, t, kind);
    }
    return kinds;
}

PyObject *
qd_py_kernel_get_args_size(PyObject *op, void *closure)
{
    (void)closure;
    return PyLong_FromUnsignedLong(((QdPyKernelHead *)op)->layout->args_size);
}

PyMemberDef qd_py_kernel_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(QdPyKernelHead, vectorcall), READONLY, NULL},
    {"from_cache", T_BOOL, offsetof(QdPyKernelHead, from_cache), READONLY,
     "whether the compiled code came from the offline cache"},
    {"profile_names", T_OBJECT, offsetof(QdPyKernelHead, profile_names), 0,
     "tuple: the kernel profiler's name of each task (None: kernel_<task>)"},
    {NULL, 0, 0, 0, NULL},
};

static void
ck_dealloc(CompiledKernelObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    qd_py_kernel_clear((PyObject *)self);
    qd_compiled_kernel_release(&self->code);
    PyMem_Free(self->tasks);
    PyMem_Free(self->params);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

#define MAX_INLINE_ARGS 512

static PyObject *
ck_call(CompiledKernelObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    QdPyState *state = qd_py_state(self->module);
    unsigned char argbuf[MAX_INLINE_ARGS] __attribute__((aligned(16)));
    uint64_t inline_results[QD_PY_INLINE_RESULTS] = {0};
    uint64_t *results = inline_results;
    QdPyHostArrays arrays;
    unsigned char *packed = argbuf;
    void *tmps = NULL;
    PyObject *ret = NULL;
    if (kwnames && PyTuple_GET_SIZE(kwnames)) {
        PyErr_SetString(PyExc_TypeError, "compiled kernels take positional arguments only");
        return NULL;
    }
    if ((uint32_t)nargs != self->nparams) {
        PyErr_Format(PyExc_TypeError, "kernel takes %u arguments, %zd given", self->nparams, nargs);
        return NULL;
    }
    if (self->code.args_size > sizeof(argbuf)) {
        packed = PyMem_Calloc(1, self->code.args_size);
        if (!packed) {
            return PyErr_NoMemory();
        }
    } else {
        memset(argbuf, 0, self->code.args_size);
    }
    qd_py_host_arrays_init(&arrays);
    if (self->code.nresults > QD_ARRAY_LEN(inline_results)) {
        results = PyMem_Calloc(self->code.nresults, QD_RESULT_SLOT_BYTES);
        if (!results) {
            PyErr_NoMemory();
            goto done;
        }
    }
    if (self->rng_offset >= 0) {
        /* A new seed every launch: a fixed random_seed repeats the program's sequence. */
        uint64_t z = qd_py_next_rng_seed(state);
        memcpy(packed + self->rng_offset, &z, sizeof(z));
    }
    if (qd_py_pack_arguments(self->params, self->nparams, args, packed, &arrays.memory) < 0) {
        goto done;
    }
    if (self->code.tmps_size) {
        tmps = PyMem_Calloc(1, self->code.tmps_size);
        if (!tmps) {
            PyErr_NoMemory();
            goto done;
        }
    }
    QdLaunchCtx *lc = PyMem_Calloc(1, sizeof(QdLaunchCtx));
    if (!lc) {
        PyErr_NoMemory();
        goto done;
    }
    lc->args = packed;
    lc->results = results;
    lc->tmps = tmps;
    lc->tmps_size = self->code.tmps_size;
    /* Checked here, after packing (which may run Python code, and so a reset on another
     * thread), and counted in flight with the GIL still held: see qd_py_runtime_reset. */
    if (self->generation != state->generation || !state->pool) {
        PyErr_SetString(state->error_classes[QD_ERR_RUNTIME],
                        "this kernel was compiled before qd.reset(); call it again to recompile");
        PyMem_Free(lc);
        goto done;
    }
    double *seconds = NULL; /* the kernel profiler's task times (NULL: profiler off) */
    if (state->profiler_records) {
        seconds = PyMem_Malloc(sizeof(double) * (self->code.ntasks ? self->code.ntasks : 1));
        if (!seconds) {
            PyErr_NoMemory();
            PyMem_Free(lc);
            goto done;
        }
        for (uint32_t t = 0; t < self->code.ntasks; t++) {
            seconds[t] = -1.0;
        }
    }
    qd_py_runtime_enter(state);
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = qd_cpu_launch(state->pool, self->tasks, self->code.ntasks, lc, seconds);
    qd_py_runtime_leave(state);
    Py_END_ALLOW_THREADS
    if (seconds) {
        int recorded = qd_py_profiler_record(state, self->profile_names, self->code.ntasks, seconds);
        PyMem_Free(seconds);
        if (recorded < 0) {
            PyMem_Free(lc);
            goto done;
        }
    }
    if (rc < 0) {
        PyErr_SetString(state->error_classes[QD_ERR_ASSERTION], lc->assert_message);
        PyMem_Free(lc);
        goto done;
    }
    PyMem_Free(lc);
    ret = qd_py_unpack_results((const unsigned char *)results, self->code.result_types,
                               self->code.nresults);
done:
    qd_py_host_arrays_release(&arrays);
    if (packed != argbuf) {
        PyMem_Free(packed);
    }
    PyMem_Free(tmps);
    if (results != inline_results) {
        PyMem_Free(results);
    }
    return ret;
}

static PyObject *
ck_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    return ck_call((CompiledKernelObject *)callable, args, nargsf, kwnames);
}

PyObject *
qd_py_compiled_kernel_call(PyObject *ck, PyObject *const *args, Py_ssize_t nargs)
{
    if (PyVectorcall_Function(ck) != ck_vectorcall) {
        return PyObject_Vectorcall(ck, args, (size_t)nargs, NULL); /* a DeviceKernel */
    }
    return ck_call((CompiledKernelObject *)ck, args, (size_t)nargs, NULL);
}

QdPyElementAxes
qd_py_compiled_element_axes(PyObject *ck, uint32_t i)
{
    QdPyElementAxes none = {0, {0, 0}};
    if (qd_py_is_device_kernel(ck)) {
        return qd_py_device_element_axes(ck, i);
    }
    const CompiledKernelObject *self = (const CompiledKernelObject *)ck;
    if (i >= self->nparams || self->params[i].kind != QD_ARG_NDARRAY) {
        return none;
    }
    return self->params[i].element;
}

bool
qd_py_element_axes_match(const QdPyElementAxes *axes, const int64_t *shape, uint32_t ndim)
{
    if (axes->ndim > ndim) {
        return false;
    }
    for (uint32_t k = 0; k < axes->ndim; k++) {
        if (shape[ndim - axes->ndim + k] != (int64_t)axes->shape[k]) {
            return false;
        }
    }
    return true;
}

int
qd_py_check_element_axes(uint32_t arg, const QdPyElementAxes *axes, const int64_t *shape,
                         uint32_t ndim)
{
    if (qd_py_element_axes_match(axes, shape, ndim)) {
        return 0;
    }
    if (axes->ndim == 1) {
        PyErr_Format(PyExc_ValueError,
                     "argument %u: the kernel was compiled for vector elements of %u components, "
                     "but the array's last axis has %lld",
                     arg, axes->shape[0], ndim ? (long long)shape[ndim - 1] : 0LL);
    } else {
        PyErr_Format(PyExc_ValueError,
                     "argument %u: the kernel was compiled for %ux%u matrix elements, but the "
                     "array's last two axes are not of that shape",
                     arg, axes->shape[0], axes->shape[1]);
    }
    return -1;
}

static PyObject *
ck_get_compile_ms(CompiledKernelObject *self, void *closure)
{
    (void)closure;
    return Py_BuildValue("{s:d,s:d,s:d,s:d}", "emit", self->code.ms_emit, "optimize",
                         self->code.ms_optimize, "codegen", self->code.ms_codegen, "link",
                         self->code.ms_link);
}

static PyGetSetDef ck_getset[] = {
    QD_PY_KERNEL_GETSET,
    {"compile_ms", (getter)ck_get_compile_ms, NULL, "milliseconds per codegen stage", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot ck_slots[] = {
    {Py_tp_dealloc, ck_dealloc},
    {Py_tp_traverse, qd_py_kernel_traverse},
    {Py_tp_clear, qd_py_kernel_clear},
    {Py_tp_call, PyVectorcall_Call}, /* the vectorcall, keywords refused there */
    {Py_tp_getset, ck_getset},
    {Py_tp_members, qd_py_kernel_members},
    {Py_tp_doc, "A kernel compiled for one argument signature; call it to launch."},
    {0, NULL},
};

static PyType_Spec ck_spec = {
    .name = "quadrants._core.CompiledKernel",
    .basicsize = sizeof(CompiledKernelObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
             Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = ck_slots,
};

PyObject *
qd_py_compiled_kernel_type_new(PyObject *module)
{
    return PyType_FromModuleAndSpec(module, &ck_spec, NULL);
}

/***** compile_kernel *****/

bool
qd_py_nn_tensor_cores(PyObject *options)
{
    PyObject *v = options ? PyDict_GetItemString(options, "nn_tensor_cores") : NULL;
    return v == NULL || PyObject_IsTrue(v) == 1;
}

static int
option_int(PyObject *options, const char *name, long dflt, long *out)
{
    PyObject *v = options ? PyDict_GetItemString(options, name) : NULL;
    *out = dflt;
    if (v) {
        *out = PyLong_AsLong(v);
        if (*out == -1 && PyErr_Occurred()) {
            return -1;
        }
    }
    return 0;
}

/* The element axes of an ndarray descriptor ("ndarray", dtype, ndim[, element_shape[,
 * layout]]): a tuple of 0 to 2 extents that end the array's shape, checked by every launch.
 * 0, or -1 with ValueError. */
static int
parse_element_axes(PyObject *desc, QdKernelArg *arg)
{
    arg->elem_ndim = 0;
    if (PyTuple_GET_SIZE(desc) < 4) {
        return 0;
    }
    PyObject *shape = PyTuple_GET_ITEM(desc, 3);
    Py_ssize_t n = PyTuple_Check(shape) ? PyTuple_GET_SIZE(shape) : -1;
    if (n < 0 || n > 2 || (uint32_t)n > arg->ndim) {
        PyErr_SetString(PyExc_ValueError, "bad element shape in ndarray descriptor");
        return -1;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        long extent = PyLong_AsLong(PyTuple_GET_ITEM(shape, k));
        if (extent < 1 || extent > 65536) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_ValueError, "bad element shape in ndarray descriptor");
            }
            return -1;
        }
        arg->elem_shape[k] = (uint32_t)extent;
    }
    arg->elem_ndim = (uint32_t)n;
    return 0;
}

/* The physical layout of an ndarray descriptor ("ndarray", dtype, ndim, element_shape, layout):
 * a permutation of range(ndim), canonical axis per physical position; absent or None for the
 * identity. Scalar elements only. 0, or -1 with ValueError. */
static int
parse_layout(PyObject *desc, QdKernelArg *arg)
{
    arg->has_layout = false;
    if (PyTuple_GET_SIZE(desc) < 5 || PyTuple_GET_ITEM(desc, 4) == Py_None) {
        return 0;
    }
    PyObject *layout = PyTuple_GET_ITEM(desc, 4);
    if (!PyTuple_Check(layout) || PyTuple_GET_SIZE(layout) != (Py_ssize_t)arg->ndim ||
        arg->elem_ndim != 0) {
        PyErr_SetString(PyExc_ValueError, "bad layout in ndarray descriptor");
        return -1;
    }
    uint32_t seen = 0;
    for (uint32_t p = 0; p < arg->ndim; p++) {
        long axis = PyLong_AsLong(PyTuple_GET_ITEM(layout, p));
        if (axis < 0 || axis >= (long)arg->ndim || (seen & (1u << axis))) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_ValueError, "bad layout in ndarray descriptor");
            }
            return -1;
        }
        seen |= 1u << axis;
        arg->layout[p] = (uint8_t)axis;
    }
    arg->has_layout = true;
    return 0;
}

/* One argument descriptor (a tuple whose first item, `text`, names a kind of abi/args.def) into
 * *arg: ("scalar", dtype), ("ndarray", dtype, ndim[, element_shape[, layout]]),
 * ("template", value).
 * 0, or -1 with an exception. */
static int
parse_arg_desc(QdPyHost *h, PyObject *d, const char *text, QdKernelArg *arg)
{
    int kind = qd_arg_kind_from_text(text);
    if (kind < 0) {
        PyErr_Format(PyExc_ValueError, "unknown argument kind '%s'", text);
        return -1;
    }
    arg->kind = (QdArgKind)kind;
    if (arg->kind == QD_ARG_TEMPLATE) {
        arg->value = qd_py_host_add(h, PyTuple_GET_ITEM(d, 1));
        return arg->value ? 0 : -1;
    }
    long dtype = PyLong_AsLong(PyTuple_GET_ITEM(d, 1));
    if (dtype <= 0 || dtype >= QD_TY_PTR) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "bad dtype id in argument descriptor");
        }
        return -1;
    }
    arg->dtype = (QdTypeKind)dtype;
    switch (arg->kind) {
    case QD_ARG_SCALAR:
    case QD_ARG_TEMPLATE:
        return 0;
    case QD_ARG_NDARRAY: {
        long ndim = PyTuple_GET_SIZE(d) >= 3 ? PyLong_AsLong(PyTuple_GET_ITEM(d, 2)) : -1;
        if (ndim < 0 || ndim > QD_NDARRAY_MAX_NDIM) {
            if (!PyErr_Occurred()) {
                PyErr_Format(PyExc_ValueError, "ndarray ndim must be 0 to %d", QD_NDARRAY_MAX_NDIM);
            }
            return -1;
        }
        arg->ndim = (uint32_t)ndim;
        if (parse_element_axes(d, arg) < 0) {
            return -1;
        }
        return parse_layout(d, arg);
    }
    }
    return 0;
}

static int
parse_arg_descs(QdPyHost *h, PyObject *descs, QdKernelArg *args, uint32_t n, PyObject *funcdef)
{
    /* Without funcdef (a kernel loaded from the cache) the parameters have no names: only the
     * frontend needs them. */
    PyObject *fargs = funcdef ? PyObject_GetAttrString(funcdef, "args") : NULL;
    PyObject *plist = fargs ? PyObject_GetAttrString(fargs, "args") : PyList_New(0);
    Py_XDECREF(fargs);
    if (!plist) {
        return -1;
    }
    int rc = 0;
    Py_ssize_t consumed = 0;          /* kernel parameters described so far */
    const char *last_root = NULL;     /* parameter of the previous dataclass member, or the
                                         previous parameter (its gradient, "x.grad", follows) */
    size_t last_root_len = 0;
    for (uint32_t i = 0; i < n && rc == 0; i++) {
        PyObject *d = PyList_GET_ITEM(descs, i);
        PyObject *pname = NULL;
        const char *name = NULL;
        if (PyTuple_Check(d) && PyTuple_GET_SIZE(d) == 2 && PyUnicode_Check(PyTuple_GET_ITEM(d, 0)) &&
            PyTuple_Check(PyTuple_GET_ITEM(d, 1))) {
            /* (path, desc): a member of a dataclass argument, "param.member[.member...]". */
            pname = Py_NewRef(PyTuple_GET_ITEM(d, 0));
            name = PyUnicode_AsUTF8(pname);
            d = PyTuple_GET_ITEM(d, 1);
            const char *dot = name ? strchr(name, '.') : NULL;
            size_t len = dot ? (size_t)(dot - name) : 0;
            if (!dot || !last_root || len != last_root_len || strncmp(name, last_root, len) != 0) {
                consumed++;
            }
            last_root = name;
            last_root_len = len;
        } else {
            pname = consumed < PyList_Size(plist)
                        ? PyObject_GetAttrString(PyList_GET_ITEM(plist, consumed), "arg")
                    : funcdef == NULL ? PyUnicode_FromString("")
                                      : NULL;
            consumed++;
            name = pname ? PyUnicode_AsUTF8(pname) : NULL;
            last_root = name;
            last_root_len = name ? strlen(name) : 0;
        }
        const char *text = NULL;
        if (!PyTuple_Check(d) || PyTuple_GET_SIZE(d) < 2 || !name ||
            !(text = PyUnicode_AsUTF8(PyTuple_GET_ITEM(d, 0)))) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_TypeError, "bad argument descriptor");
            }
            rc = -1;
        } else {
            args[i].name = qd_arena_strdup(h->arena, name);
            rc = parse_arg_desc(h, d, text, &args[i]);
        }
        Py_XDECREF(pname);
    }
    Py_DECREF(plist);
    return rc;
}

/* A handle to func.__annotations__["return"], or 0 when there is none. */
static QdHandle
return_annotation(QdPyHost *host, PyObject *func)
{
    PyObject *anns = PyObject_GetAttrString(func, "__annotations__");
    PyObject *ret = anns && PyDict_Check(anns) ? PyDict_GetItemString(anns, "return") : NULL;
    QdHandle h = ret ? qd_py_host_add(host, ret) : 0;
    Py_XDECREF(anns);
    PyErr_Clear();
    return h;
}

/* Raises the compile error: the diag's class, or with print_full_traceback the Python
 * exception user code raised while tracing, unchanged (spec E). */
static void
raise_compile_error(PyObject *module, QdPyHost *host, QdCtx *ctx, long full_traceback)
{
    if (PyErr_Occurred()) {
        return;
    }
    if (full_traceback && host->first_exception) {
        PyErr_SetObject((PyObject *)Py_TYPE(host->first_exception), host->first_exception);
        return;
    }
    qd_py_raise_diag(module, &ctx->diag);
}

static PyObject *
compile_kernel(PyObject *module, PyObject *const *argv, Py_ssize_t argc)
{
    QdPyState *state = qd_py_state(module);
    if (argc != 6 && argc != 7) {
        PyErr_SetString(PyExc_TypeError, "compile_kernel(func, funcdef, filename, arg_descs, "
                                         "name, options[, source_key])");
        return NULL;
    }
    QdDigest source_key;
    int has_source_key = qd_py_source_key(argc == 7 ? argv[6] : NULL, &source_key);
    if (has_source_key < 0) {
        return NULL;
    }
    PyObject *func = argv[0], *funcdef = argv[1], *descs = argv[3], *options = argv[5];
    const char *filename = PyUnicode_AsUTF8(argv[2]);
    const char *name = PyUnicode_AsUTF8(argv[4]);
    if (!filename || !name) {
        return NULL;
    }
    if (!PyList_Check(descs) || (options != Py_None && !PyDict_Check(options))) {
        PyErr_SetString(PyExc_TypeError, "arg_descs must be a list and options a dict");
        return NULL;
    }
    if (options == Py_None) {
        options = NULL;
    }
    uint32_t n = (uint32_t)PyList_GET_SIZE(descs);
    QdArena arena;
    qd_arena_init(&arena);
    QdPyHost host;
    QdCtx ctx;
    qd_ctx_init(&ctx);
    CompiledKernelObject *ck = NULL;
    PyObject *result = NULL;
    long fp, ip, debug, short_circuit, unroll, keep_qir, oob, full_traceback, subgroup;
    if (option_int(options, "default_fp", QD_TY_F32, &fp) < 0 ||
        option_int(options, "default_ip", QD_TY_I32, &ip) < 0 ||
        option_int(options, "debug", 0, &debug) < 0 ||
        option_int(options, "short_circuit", 1, &short_circuit) < 0 ||
        option_int(options, "unrolling_limit", 32, &unroll) < 0 ||
        option_int(options, "keep_qir", 0, &keep_qir) < 0 ||
        option_int(options, "check_out_of_bound", 0, &oob) < 0 ||
        option_int(options, "print_full_traceback", 0, &full_traceback) < 0 ||
        option_int(options, "subgroup_size", 32, &subgroup) < 0) {
        qd_arena_free(&arena);
        return NULL;
    }
    if (subgroup < 1 || subgroup > 128 || (subgroup & (subgroup - 1)) != 0) {
        qd_arena_free(&arena);
        PyErr_Format(PyExc_ValueError, "subgroup_size must be a power of two in [1, 128], got %ld",
                     subgroup);
        return NULL;
    }
    if (qd_py_host_init(&host, &arena, (QdTypeKind)fp, (QdTypeKind)ip) < 0) {
        qd_arena_free(&arena);
        return NULL;
    }
    QdKernelArg *args = QD_NEW_ARRAY(&arena, QdKernelArg, n ? n : 1);
    QdAst *def = NULL;
    if (!args) {
        PyErr_NoMemory();
        goto done;
    }
    if (parse_arg_descs(&host, descs, args, n, funcdef) < 0) {
        goto done;
    }
    QdHandle scope = qd_py_host_add(&host, func);
    if (!scope) {
        goto done;
    }
    if (qd_py_host_convert_function(&host, &ctx, funcdef, filename, &def) < 0 ||
        ensure_runtime(state, options, &ctx) < 0) {
        raise_compile_error(module, &host, &ctx, full_traceback);
        goto done;
    }
    QdCompileRequest req = {0};
    req.host = &host.host;
    req.scope = scope;
    req.def = def;
    req.name = name;
    req.args = args;
    req.nargs = n;
    req.frontend.default_fp = (QdTypeKind)fp;
    req.frontend.default_ip = (QdTypeKind)ip;
    req.frontend.debug = debug != 0;
    req.frontend.bounds_check = debug != 0 || oob != 0;
    req.frontend.short_circuit = short_circuit != 0;
    req.frontend.unrolling_limit = (uint32_t)unroll;
    req.frontend.subgroup_size = (uint32_t)subgroup;
    if (!qd_py_wants_device(options)) {
        PyObject *simt = PyDict_GetItemString(options, "cpu_simt");
        PyObject *arch = PyDict_GetItemString(options, "arch");
        if (!(simt && PyObject_IsTrue(simt) == 1)) {
            req.frontend.simt_unsupported_arch =
                arch && PyUnicode_Check(arch) ? PyUnicode_AsUTF8(arch) : "cpu";
        } else {
            req.frontend.tensor_cores = qd_py_nn_tensor_cores(options);
            /* tests: a cpu_simt compile as for a device without 64-bit atomics, or with this
             * much shared memory per block */
            PyObject *a64 = PyDict_GetItemString(options, "atomic_int64");
            req.frontend.lacks_atomic_int64 = a64 != NULL && PyObject_IsTrue(a64) == 0;
            PyObject *smem = PyDict_GetItemString(options, "max_shared_bytes");
            long smem_bytes = smem && PyLong_Check(smem) ? PyLong_AsLong(smem) : 0;
            PyErr_Clear();
            req.frontend.max_shared_bytes = smem_bytes > 0 ? (uint32_t)smem_bytes : 0;
        }
    }
    req.ret_annotation = return_annotation(&host, func);
    req.keep_qir = keep_qir != 0;
    if (!req.keep_qir) {
        req.cache = qd_py_cache_for(state, options, &req.compiler_id);
        req.source_key = req.cache && has_source_key ? &source_key : NULL;
    }
    if (qd_py_wants_device(options)) {
        result = qd_py_device_compile(module, &ctx, &req, options);
        if (result == NULL && full_traceback && host.first_exception) {
            PyErr_Clear();
            raise_compile_error(module, &host, &ctx, full_traceback);
        }
        goto done;
    }
    QdKernelInfo info;
    PyTypeObject *tp = (PyTypeObject *)state->compiled_kernel_type;
    ck = (CompiledKernelObject *)tp->tp_alloc(tp, 0);
    if (!ck) {
        goto done;
    }
    ck->vectorcall = ck_vectorcall;
    ck->module = Py_NewRef(module);
    ck->layout = &ck->code;
    QdTargetEnv env = {.jit = state->jit, .resolve_field = resolve_field, .resolve_user = state};
    QdDriverKernel code;
    int crc = qd_driver_compile(&ctx, &req, QD_TARGET_cpu, &env, &code);
    if (req.qir_frontend) {
        ck->qir_frontend = PyUnicode_FromString(req.qir_frontend);
    }
    if (req.qir_final) {
        ck->qir = PyUnicode_FromString(req.qir_final);
    }
    free(req.qir_frontend);
    free(req.qir_final);
    if (crc < 0) {
        raise_compile_error(module, &host, &ctx, full_traceback);
        goto done;
    }
    ck->code = code.cpu;
    ck->from_cache = code.from_cache;
    info = code.info;
    if (finish_cpu_kernel(ck, state, args, n, &info) < 0) {
        goto done;
    }
    result = (PyObject *)ck;
    ck = NULL;
done:
    Py_XDECREF(ck);
    qd_py_host_clear(&host);
    qd_arena_free(&arena);
    return result;
}

/* The launch data of a CPU kernel whose code is in ck->code and whose arguments are `args`:
 * the parameters the packer takes, the runtime's task table. */
static int
finish_cpu_kernel(CompiledKernelObject *ck, QdPyState *state, const QdKernelArg *args,
                  uint32_t n, const QdKernelInfo *info)
{
    if (qd_py_params_from_args(args, n, ck->code.arg_offsets, ck->code.nparams, &ck->params) < 0) {
        return -1;
    }
    ck->rng_offset = info->rng_param >= 0 && (uint32_t)info->rng_param < ck->code.nparams &&
                             ck->code.arg_offsets[info->rng_param] != QD_ARG_UNUSED
                         ? (int64_t)ck->code.arg_offsets[info->rng_param]
                         : -1;
    ck->tasks = PyMem_Calloc(ck->code.ntasks ? ck->code.ntasks : 1, sizeof(QdCpuTask));
    if (!ck->tasks) {
        PyErr_NoMemory();
        return -1;
    }
    for (uint32_t t = 0; t < ck->code.ntasks; t++) {
        ck->tasks[t].run = (QdCpuTaskFn)ck->code.tasks[t].run;
        ck->tasks[t].bounds = (QdCpuBoundsFn)ck->code.tasks[t].bounds;
        ck->tasks[t].grain = ck->code.tasks[t].grain > 0 ? ck->code.tasks[t].grain : 1;
        ck->tasks[t].simt_block_dim = ck->code.tasks[t].block_dim; /* nonzero: SIMT (CPU) */
    }
    ck->nparams = n;
    ck->generation = state->generation;
    ck->has_print = info->has_print;
    return 0;
}

static PyObject *
load_cached_kernel(PyObject *module, PyObject *const *argv, Py_ssize_t argc)
{
    QdPyState *state = qd_py_state(module);
    if (argc != 4 || !PyList_Check(argv[0]) || !PyDict_Check(argv[2])) {
        PyErr_SetString(PyExc_TypeError,
                        "load_cached_kernel(arg_descs: list, name, options: dict, source_key)");
        return NULL;
    }
    PyObject *descs = argv[0], *options = argv[2];
    QdDigest source_key;
    int has_key = qd_py_source_key(argv[3], &source_key);
    const char *compiler_id;
    QdCache *cache = qd_py_cache_for(state, options, &compiler_id);
    if (has_key <= 0 || cache == NULL) {
        return has_key < 0 ? NULL : Py_NewRef(Py_None);
    }
    uint32_t n = (uint32_t)PyList_GET_SIZE(descs);
    QdArena arena;
    qd_arena_init(&arena);
    QdPyHost host;
    QdCtx ctx;
    qd_ctx_init(&ctx);
    PyObject *result = NULL;
    CompiledKernelObject *ck = NULL;
    QdKernelArg *args = NULL;
    if (qd_py_host_init(&host, &arena, QD_TY_F32, QD_TY_I32) < 0) {
        qd_arena_free(&arena);
        return NULL;
    }
    args = QD_NEW_ARRAY(&arena, QdKernelArg, n ? n : 1);
    if (!args) {
        PyErr_NoMemory();
        goto done;
    }
    if (parse_arg_descs(&host, descs, args, n, NULL) < 0) {
        goto done;
    }
    if (ensure_runtime(state, options, &ctx) < 0) {
        qd_py_raise_diag(module, &ctx.diag);
        goto done;
    }
    if (qd_py_wants_device(options)) {
        result = qd_py_device_load_cached(module, cache, &source_key, args, n, options);
        goto done;
    }
    PyTypeObject *tp = (PyTypeObject *)state->compiled_kernel_type;
    ck = (CompiledKernelObject *)tp->tp_alloc(tp, 0);
    if (!ck) {
        goto done;
    }
    ck->vectorcall = ck_vectorcall;
    ck->module = Py_NewRef(module);
    ck->layout = &ck->code;
    /* With the GIL held: resolve_field reads the field registry (a dict). */
    QdTargetEnv env = {.jit = state->jit, .resolve_field = resolve_field, .resolve_user = state};
    QdDriverKernel code;
    if (qd_driver_load_cached(cache, &source_key, QD_TARGET_cpu, &env, &code) != 1) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    ck->code = code.cpu;
    ck->from_cache = true;
    QdKernelInfo info = code.info;
    if (finish_cpu_kernel(ck, state, args, n, &info) < 0) {
        goto done;
    }
    result = (PyObject *)ck;
    ck = NULL;
done:
    Py_XDECREF(ck);
    qd_py_host_clear(&host);
    qd_arena_free(&arena);
    return result;
}

/* Runs a compile or a cache load as a use of the runtime (see qd_py_runtime_reset): a reset on
 * another thread -- possible whenever the frontend runs Python code -- waits for it, and a
 * kernel made across such a reset is dropped instead of being returned with freed code. */
static PyObject *
use_runtime(PyObject *(*make)(PyObject *, PyObject *const *, Py_ssize_t), PyObject *module,
            PyObject *const *argv, Py_ssize_t argc)
{
    QdPyState *state = qd_py_state(module);
    uint64_t generation = state->generation;
    if (state->resetting) {
        /* It would compile into the JIT the reset is about to free. */
        PyErr_SetString(state->error_classes[QD_ERR_RUNTIME],
                        "qd.reset() is under way on another thread; call qd.init() and then the "
                        "kernel again");
        return NULL;
    }
    qd_py_runtime_enter(state);
    PyObject *kernel = make(module, argv, argc);
    if (kernel && state->generation != generation) {
        Py_CLEAR(kernel);
        PyErr_SetString(state->error_classes[QD_ERR_RUNTIME],
                        "qd.reset() was called on another thread while this kernel was being "
                        "compiled; call it again to compile it for the new runtime");
    }
    qd_py_runtime_leave(state);
    return kernel;
}

PyObject *
qd_py_compile_kernel(PyObject *module, PyObject *const *argv, Py_ssize_t argc)
{
    return use_runtime(compile_kernel, module, argv, argc);
}

PyObject *
qd_py_load_cached_kernel(PyObject *module, PyObject *const *argv, Py_ssize_t argc)
{
    return use_runtime(load_cached_kernel, module, argv, argc);
}

/***** shared with the GPU launcher (python/device_kernel.c) *****/

uint64_t
qd_py_next_rng_seed(QdPyState *state)
{
    uint64_t z = state->random_seed + 0x9E3779B97F4A7C15ULL * ++state->rng_launches;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}
