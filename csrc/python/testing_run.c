/* python/testing_run.c -- run_qir / compile_qir: hand-written QIR kernels on the CPU backend.
 *
 * Adds to quadrants._core._testing:
 *     run_qir(text, kernel, args, fields=None, passes="instantiate,inline,nn_lower,constfold,dce",
 *             nthreads=0, options=None) -> list of the kernel's results (kernel_ret)
 *     compile_qir(text, kernel, fields=None, passes=..., nthreads=0, options=None)
 *         -> CompiledQir, whose launch(*args) runs the kernel again and again
 * The text is parsed, the passes run (verifying after each), the kernel compiled by a JIT of its
 * own and launched on a pool of `nthreads` threads (0: one per CPU). Arguments: Python int /
 * float / bool for scalars, C-contiguous buffers (NumPy arrays) of the element type and rank
 * for ndarrays (f16: float16, bf16: uint16 bits, u1: bool). `fields` maps field names to
 * writable arrays of the declared type and shape, used in place as the fields' memory and kept
 * exported while the compiled kernel lives. `options`: opt_level, fast_math,
 * print_kernel_llvm_ir, print_kernel_llvm_ir_optimized, print_kernel_asm, dump_dir.
 *
 * Errors: compile errors raise the class of their QdDiag; a failed kernel assert raises
 * QuadrantsAssertionError; bad arguments raise TypeError or ValueError. The GIL is released
 * while LLVM compiles and while the kernel runs.
 */
#include "pack.h"
#include "python.h"

#include "../driver/driver.h"
#include "../runtime/cpu/cpu.h"

#include <stddef.h>
#include <string.h>

/* The two headers describe one ABI; the places that see both check it. */
_Static_assert(sizeof(QdCpuSymbol) == sizeof(QdJitSymbol), "symbol tables");

#define DEFAULT_PASSES QD_DRIVER_TEST_PASSES

/* Field memory lent by Python buffers, by field name. */
typedef struct FieldView {
    const char *name; /* UTF-8 name, borrowed from the dict key (kept alive by `key`) */
    PyObject *key;    /* strong reference to the key */
    Py_buffer view;   /* exported buffer (view.obj holds the array) */
} FieldView;

/* A compiled kernel and everything it runs with. */
typedef struct Program {
    QdCpuJit *jit;                /* owns the machine code */
    QdCpuPool *pool;              /* threads */
    QdCompiledKernel kernel;      /* entry points and layout */
    QdCpuTask *tasks;             /* kernel.tasks in the runtime's form */
    QdPyParam *params;            /* kernel.nparams entries (PyMem) */
    FieldView *fields;            /* nfields entries */
    Py_ssize_t nfields;           /* number of fields lent */
} Program;

/* compile_qir's handle. */
typedef struct CompiledQirObject {
    PyObject_HEAD PyObject
        *core;       /* the _core module: exception classes (strong; NULL once cleared) */
    Program program; /* released with the object */
} CompiledQirObject;

/* What run_qir and compile_qir bind `self` to: (core module, CompiledQir type). */
#define SELF_CORE(self) PyTuple_GET_ITEM((self), 0)
#define SELF_TYPE(self) ((PyTypeObject *)PyTuple_GET_ITEM((self), 1))

/***** programs *****/

/* Frees everything a program holds (a zeroed Program is fine); the field buffers are
 * released last, after the code that could touch them is gone. */
static void
program_release(Program *p)
{
    qd_cpu_pool_free(p->pool);
    qd_cpu_jit_free(p->jit);
    qd_compiled_kernel_release(&p->kernel);
    PyMem_Free(p->tasks);
    PyMem_Free(p->params);
    for (Py_ssize_t i = 0; i < p->nfields; i++) {
        PyBuffer_Release(&p->fields[i].view);
        Py_XDECREF(p->fields[i].key);
    }
    PyMem_Free(p->fields);
    memset(p, 0, sizeof(*p));
}

/* QdFieldResolver over the lent buffers. Runs without the GIL: touches C data only. */
static const void *
resolve_field(void *user, const char *name)
{
    const Program *p = user;
    for (Py_ssize_t i = 0; i < p->nfields; i++) {
        if (strcmp(p->fields[i].name, name) == 0) {
            return p->fields[i].view.buf;
        }
    }
    return NULL;
}

/* Whether a buffer's struct format and item size hold elements of kind `kind`. */
static bool
format_matches(const char *format, Py_ssize_t itemsize, QdTypeKind kind)
{
    const QdType *ty = qd_type_scalar(kind);
    char c = format ? format[0] : 'B';
    if (c == '@' || c == '=' || c == '<' || c == '|') {
        c = format[1];
    }
    if (format != NULL && format[0] != '\0' && format[1] != '\0' &&
        (format[0] == c ? format[1] != '\0' : format[2] != '\0')) {
        return false; /* more than one item code */
    }
    if (kind == QD_TY_U1) {
        return c == '?' && itemsize == 1;
    }
    if (kind == QD_TY_BF16) {
        return c == 'H' && itemsize == 2; /* raw bits: NumPy has no bfloat16 */
    }
    if (qd_type_is_float(ty)) {
        return itemsize == (Py_ssize_t)(qd_type_bits(ty) / 8) && strchr("efd", c) != NULL;
    }
    if (itemsize != (Py_ssize_t)(qd_type_bits(ty) / 8)) {
        return false;
    }
    return strchr(qd_type_is_signed(ty) ? "bhilqn" : "BHILQN", c) != NULL;
}

/* Exports obj as a C-contiguous buffer of `kind` elements and rank `ndim`. 0, or -1 with
 * ValueError (or TypeError for a non-buffer). `what` names the value in messages. */
static int
get_array(PyObject *obj, int writable, QdTypeKind kind, int ndim, Py_buffer *view, const char *what)
{
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0) {
        if (PyErr_ExceptionMatches(PyExc_BufferError)) {
            PyErr_Format(PyExc_ValueError, "%s must be a C-contiguous%s array", what,
                         writable ? ", writable" : "");
        }
        return -1;
    }
    if (!format_matches(view->format, view->itemsize, kind) || view->ndim != ndim) {
        PyErr_Format(PyExc_ValueError,
                     "%s must be an array of %s with %d dimension(s), got "
                     "format '%s' with %d",
                     what, qd_type_scalar_name(kind), ndim, view->format ? view->format : "B",
                     view->ndim);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* Exports the arrays of the `fields` dict (NULL: none), checked against the module. */
static int
program_take_fields(Program *p, QdModule *m, PyObject *fields)
{
    PyObject *key = NULL;
    PyObject *value = NULL;
    Py_ssize_t pos = 0;

    if (fields == NULL || fields == Py_None) {
        return 0;
    }
    if (!PyDict_Check(fields)) {
        PyErr_SetString(PyExc_TypeError, "fields must be a dict of name -> array");
        return -1;
    }
    p->fields = PyMem_Calloc((size_t)PyDict_GET_SIZE(fields) + 1, sizeof(FieldView));
    if (p->fields == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    while (PyDict_Next(fields, &pos, &key, &value)) {
        const char *name = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
        QdField *field = name ? qd_module_find_field(m, name) : NULL;
        FieldView *fv = &p->fields[p->nfields];
        char what[300];
        if (field == NULL) {
            if (!PyErr_Occurred()) {
                PyErr_Format(PyExc_ValueError, "fields: %R is not a field of the module", key);
            }
            return -1;
        }
        snprintf(what, sizeof(what), "field @%s", name);
        if (get_array(value, 1, field->elem->kind, (int)field->ndim, &fv->view, what) < 0) {
            return -1;
        }
        fv->key = Py_NewRef(key);
        fv->name = name;
        p->nfields++;
        for (uint32_t k = 0; k < field->ndim; k++) {
            if (fv->view.shape[k] != field->shape[k]) {
                PyErr_Format(PyExc_ValueError, "%s has extent %zd on axis %u, the field %lld", what,
                             fv->view.shape[k], k, (long long)field->shape[k]);
                return -1;
            }
        }
    }
    return 0;
}

/* Records the parameters of the compiled kernel (the module is freed after compiling). */
static int
program_take_params(Program *p, QdModule *m, const char *kernel)
{
    QdFunc *f = qd_module_find_func(m, kernel);
    return qd_py_params_from_qir(f, p->kernel.arg_offsets, &p->params);
}

/* Parses, runs the passes, compiles and starts the pool. 0, or -1 with an exception. */
static int
program_build(PyObject *core, Program *p, const char *text, Py_ssize_t len, const char *kernel,
              const char *passes, PyObject *fields, int nthreads, const QdLlvmOptions *opts)
{
    QdCtx ctx;
    QdModule *m = NULL;
    int rc = -1;

    qd_ctx_init(&ctx);
    m = qd_module_parse(&ctx, text, (size_t)len, "<qir>");
    if (m == NULL || (passes[0] != '\0' && qd_driver_run_passes(&ctx, m, passes, true) < 0)) {
        qd_py_raise_diag(core, &ctx.diag);
        goto done;
    }
    if (program_take_fields(p, m, fields) < 0) {
        goto done;
    }
    int status = 0;
    Py_BEGIN_ALLOW_THREADS
    p->jit = qd_driver_jit_new(&ctx, opts);
    QdTargetEnv env = {.jit = p->jit, .resolve_field = resolve_field, .resolve_user = p};
    QdDriverKernel code;
    status = p->jit == NULL
                 ? -1
                 : qd_driver_compile_module(&ctx, m, kernel, QD_TARGET_cpu, &env, &code);
    if (status == 0) {
        p->kernel = code.cpu;
    }
    if (status == 0) {
        p->pool = qd_cpu_pool_new(&ctx, nthreads);
        status = p->pool == NULL ? -1 : 0;
    }
    Py_END_ALLOW_THREADS
    if (status < 0) {
        qd_py_raise_diag(core, &ctx.diag);
        goto done;
    }
    if (program_take_params(p, m, kernel) < 0) {
        goto done;
    }
    p->tasks = PyMem_Calloc(p->kernel.ntasks + 1, sizeof(QdCpuTask));
    if (p->tasks == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (uint32_t i = 0; i < p->kernel.ntasks; i++) {
        p->tasks[i].run = p->kernel.tasks[i].run;
        p->tasks[i].bounds = p->kernel.tasks[i].bounds;
        p->tasks[i].grain = p->kernel.tasks[i].grain;
        p->tasks[i].simt_block_dim = p->kernel.tasks[i].block_dim;
    }
    rc = 0;
done:
    qd_module_free(m);
    return rc;
}

/***** launching *****/

/* Launches p with the arguments args[0 .. nargs); new reference to the results list, or NULL
 * with an exception. */
static PyObject *
program_launch(PyObject *core, Program *p, PyObject *const *args, Py_ssize_t nargs)
{
    QdPyHostArrays arrays;
    unsigned char *buffer = NULL;
    QdLaunchCtx ctx;
    PyObject *results = NULL;
    const QdCompiledKernel *k = &p->kernel;

    if (nargs != (Py_ssize_t)k->nparams) {
        PyErr_Format(PyExc_TypeError, "the kernel takes %u arguments, got %zd", k->nparams, nargs);
        return NULL;
    }
    /* one block: arguments, results, tmps (each part 16-byte aligned) */
    size_t args_size = (k->args_size + 15) & ~(size_t)15;
    size_t results_size = ((size_t)k->nresults * QD_RESULT_SLOT_BYTES + 15) & ~(size_t)15;
    buffer = PyMem_Calloc(args_size + results_size + k->tmps_size + 16, 1);
    if (buffer == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    memset(&ctx, 0, offsetof(QdLaunchCtx, assert_message) + 1);
    ctx.args = buffer;
    ctx.results = buffer + args_size;
    ctx.tmps = buffer + args_size + results_size;
    ctx.tmps_size = k->tmps_size;
    qd_py_host_arrays_init(&arrays);
    if (qd_py_pack_arguments(p->params, k->nparams, args, buffer, &arrays.memory) < 0) {
        goto done;
    }
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = qd_cpu_launch(p->pool, p->tasks, k->ntasks, &ctx, NULL);
    Py_END_ALLOW_THREADS
    if (status < 0) {
        QdDiag diag = {.kind = QD_ERR_ASSERTION};
        snprintf(diag.message, sizeof(diag.message), "%s", ctx.assert_message);
        qd_py_raise_diag(core, &diag);
        goto done;
    }
    results = PyList_New(k->nresults);
    for (uint32_t i = 0; results != NULL && i < k->nresults; i++) {
        PyObject *v = qd_py_unpack_result((unsigned char *)ctx.results + QD_RESULT_SLOT_BYTES * i,
                                    k->result_types[i]);
        if (v == NULL) {
            Py_CLEAR(results);
            break;
        }
        PyList_SET_ITEM(results, i, v);
    }
done:
    qd_py_host_arrays_release(&arrays);
    PyMem_Free(buffer);
    return results;
}

/***** the CompiledQir type *****/

/* GC support: the handle holds the core module and the lent field arrays. */
static int
compiled_traverse(CompiledQirObject *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->core);
    for (Py_ssize_t i = 0; i < self->program.nfields; i++) {
        Py_VISIT(self->program.fields[i].key);
        Py_VISIT(self->program.fields[i].view.obj);
    }
    return 0;
}

/* Drops the references and the compiled code; a later launch raises RuntimeError. */
static int
compiled_clear(CompiledQirObject *self)
{
    Py_CLEAR(self->core);
    program_release(&self->program);
    return 0;
}

/* Heap type instance: untrack, release, free, and drop the reference to the type. */
static void
compiled_dealloc(CompiledQirObject *self)
{
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    compiled_clear(self);
    type->tp_free((PyObject *)self);
    Py_DECREF(type);
}

PyDoc_STRVAR(launch_doc, "launch(*args)\n--\n\n"
                         "Run the compiled kernel with these arguments; returns its results.");

/* CompiledQir.launch(*args): borrowed arguments, new reference to the results list. */
static PyObject *
compiled_launch(CompiledQirObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (self->core == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "the compiled kernel was released");
        return NULL;
    }
    return program_launch(self->core, &self->program, args, nargs);
}

/* A list of n integers taken from values[k * stride] (new reference; NULL with an
 * exception). `is_signed`: the values are int64_t, else uint32_t. */
static PyObject *
int_list(const void *values, uint32_t n, size_t stride, bool is_signed)
{
    PyObject *list = PyList_New(n);
    for (uint32_t k = 0; list != NULL && k < n; k++) {
        const char *at = (const char *)values + k * stride;
        PyObject *v = is_signed ? PyLong_FromLongLong(*(const int64_t *)at)
                                : PyLong_FromUnsignedLong(*(const uint32_t *)at);
        if (v == NULL) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, k, v);
    }
    return list;
}

/* info: new reference to a dict describing the compiled kernel (layout, grains, timings). */
static PyObject *
compiled_info(CompiledQirObject *self, void *closure)
{
    const QdCompiledKernel *k = &self->program.kernel;
    PyObject *offsets = int_list(k->arg_offsets, k->nparams, sizeof(uint32_t), false);
    PyObject *grains = k->ntasks
                           ? int_list(&k->tasks[0].grain, k->ntasks, sizeof(QdCompiledTask), true)
                           : PyList_New(0);
    PyObject *info = NULL;
    (void)closure;

    if (offsets != NULL && grains != NULL) {
        info = Py_BuildValue("{s:s,s:O,s:I,s:I,s:I,s:O,s:i,s:d,s:d,s:d,s:d}", "symbol", k->symbol,
                             "arg_offsets", offsets, "args_size", k->args_size, "tmps_size",
                             k->tmps_size, "nresults", k->nresults, "grains", grains, "nthreads",
                             qd_cpu_pool_size(self->program.pool), "ms_emit", k->ms_emit,
                             "ms_optimize", k->ms_optimize, "ms_codegen", k->ms_codegen, "ms_link",
                             k->ms_link);
    }
    Py_XDECREF(grains);
    Py_XDECREF(offsets);
    return info;
}

static PyMethodDef compiled_methods[] = {
    {"launch", (PyCFunction)(void (*)(void))compiled_launch, METH_FASTCALL, launch_doc},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef compiled_getset[] = {
    {"info", (getter)compiled_info, NULL, "symbol, layout, grains, timings of the kernel", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot compiled_slots[] = {
    {Py_tp_dealloc, compiled_dealloc},
    {Py_tp_traverse, compiled_traverse},
    {Py_tp_clear, compiled_clear},
    {Py_tp_methods, compiled_methods},
    {Py_tp_getset, compiled_getset},
    {Py_tp_doc, "A QIR kernel compiled for the CPU by compile_qir."},
    {0, NULL},
};

static PyType_Spec compiled_spec = {
    .name = "quadrants._core._testing.CompiledQir",
    .basicsize = sizeof(CompiledQirObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = compiled_slots,
};

/***** run_qir and compile_qir *****/

/* Reads the `options` dict into opts. 0, or -1 with an exception. */
static int
options_arg(PyObject *options, QdLlvmOptions *opts, const char **dump_dir)
{
    PyObject *key = NULL;
    PyObject *value = NULL;
    Py_ssize_t pos = 0;

    qd_llvm_options_default(opts);
    if (options == NULL || options == Py_None) {
        return 0;
    }
    if (!PyDict_Check(options)) {
        PyErr_SetString(PyExc_TypeError, "options must be a dict");
        return -1;
    }
    while (PyDict_Next(options, &pos, &key, &value)) {
        const char *name = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : "";
        int truth = PyObject_IsTrue(value);
        if (name == NULL || truth < 0) {
            return -1;
        }
        if (strcmp(name, "opt_level") == 0) {
            opts->opt_level = (int)PyLong_AsLong(value);
            if (opts->opt_level == -1 && PyErr_Occurred()) {
                return -1;
            }
        } else if (strcmp(name, "fast_math") == 0) {
            opts->fast_math = truth;
        } else if (strcmp(name, "print_kernel_llvm_ir") == 0) {
            opts->print_kernel_llvm_ir = truth;
        } else if (strcmp(name, "print_kernel_llvm_ir_optimized") == 0) {
            opts->print_kernel_llvm_ir_optimized = truth;
        } else if (strcmp(name, "print_kernel_asm") == 0) {
            opts->print_kernel_asm = truth;
        } else if (strcmp(name, "dump_dir") == 0) {
            Py_ssize_t len;
            *dump_dir = qd_py_utf8_arg("options", "dump_dir", value, true, &len);
            if (*dump_dir == NULL) {
                return -1;
            }
            opts->dump_dir = *dump_dir;
        } else {
            PyErr_Format(PyExc_ValueError, "unknown option %R", key);
            return -1;
        }
    }
    return 0;
}

/* Binds the common arguments and builds a program. names: the function's parameter names; the
 * `fields` etc. positions are given by the indexes. */
static int
build_from_args(PyObject *self, const char *func, PyObject **argv, int fields_at, Program *p)
{
    Py_ssize_t len, kernel_len, passes_len;
    const char *dump_dir = NULL;
    QdLlvmOptions opts;
    const char *text = qd_py_utf8_arg(func, "text", argv[0], false, &len);
    const char *kernel = qd_py_utf8_arg(func, "kernel", argv[1], true, &kernel_len);
    const char *passes =
        argv[fields_at + 1] == NULL
            ? DEFAULT_PASSES
            : qd_py_utf8_arg(func, "passes", argv[fields_at + 1], true, &passes_len);
    long nthreads = argv[fields_at + 2] == NULL ? 0 : PyLong_AsLong(argv[fields_at + 2]);

    if (text == NULL || kernel == NULL || passes == NULL || PyErr_Occurred()) {
        return -1;
    }
    if (options_arg(argv[fields_at + 3], &opts, &dump_dir) < 0) {
        return -1;
    }
    return program_build(SELF_CORE(self), p, text, len, kernel, passes, argv[fields_at],
                         (int)nthreads, &opts);
}

PyDoc_STRVAR(run_qir_doc,
             "run_qir(text, kernel, args, fields=None, passes='instantiate,inline,nn_lower,constfold,dce',"
             " nthreads=0, options=None)\n--\n\n"
             "Compile kernel `kernel` of the QIR text for the CPU, run it once with `args` and\n"
             "return the list of its results.");

/* run_qir(...): builds a program, launches it once, releases it. New reference to the
 * results list; NULL with an exception. */
static PyObject *
run_qir(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"text",   "kernel",   "args",    "fields",
                                        "passes", "nthreads", "options", NULL};
    PyObject *argv[7];
    PyObject *seq = NULL;
    PyObject *results = NULL;
    Program program = {0};

    if (qd_py_bind_args("run_qir", names, 3, args, nargs, kwnames, argv) < 0) {
        return NULL;
    }
    seq = PySequence_Fast(argv[2], "run_qir: args must be a list");
    if (seq == NULL || build_from_args(self, "run_qir", argv, 3, &program) < 0) {
        goto done;
    }
    results = program_launch(SELF_CORE(self), &program, PySequence_Fast_ITEMS(seq),
                             PySequence_Fast_GET_SIZE(seq));
done:
    program_release(&program);
    Py_XDECREF(seq);
    return results;
}

PyDoc_STRVAR(compile_qir_doc,
             "compile_qir(text, kernel, fields=None, passes='instantiate,inline,nn_lower,constfold,dce',"
             " nthreads=0, options=None)\n--\n\n"
             "Compile kernel `kernel` of the QIR text for the CPU; returns a CompiledQir whose\n"
             "launch(*args) runs it.");

/* compile_qir(...): new reference to a CompiledQir that owns its program; NULL with an
 * exception. The object is tracked before the build so that a failure frees it normally. */
static PyObject *
compile_qir(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"text",     "kernel",  "fields", "passes",
                                        "nthreads", "options", NULL};
    PyObject *argv[6];
    CompiledQirObject *obj = NULL;

    if (qd_py_bind_args("compile_qir", names, 2, args, nargs, kwnames, argv) < 0) {
        return NULL;
    }
    obj = PyObject_GC_New(CompiledQirObject, SELF_TYPE(self));
    if (obj == NULL) {
        return NULL;
    }
    obj->core = Py_NewRef(SELF_CORE(self));
    memset(&obj->program, 0, sizeof(obj->program));
    PyObject_GC_Track(obj);
    if (build_from_args(self, "compile_qir", argv, 2, &obj->program) < 0) {
        Py_DECREF(obj);
        return NULL;
    }
    return (PyObject *)obj;
}

static PyMethodDef run_methods[] = {
    {"run_qir", (PyCFunction)(void (*)(void))run_qir, METH_FASTCALL | METH_KEYWORDS, run_qir_doc},
    {"compile_qir", (PyCFunction)(void (*)(void))compile_qir, METH_FASTCALL | METH_KEYWORDS,
     compile_qir_doc},
    {NULL, NULL, 0, NULL},
};

/* Adds run_qir, compile_qir and CompiledQir to the _testing module (borrowed). Its functions
 * are bound to the _core module (testing.c); ours are bound to (core, CompiledQir). 0, or -1
 * with an exception set. */
int
qd_py_testing_add_run(PyObject *testing)
{
    PyObject *probe = NULL;
    PyObject *type = NULL;
    PyObject *self = NULL;
    int rc = -1;

    probe = PyObject_GetAttrString(testing, "parse_print");
    if (probe == NULL || !PyCFunction_Check(probe)) {
        PyErr_SetString(PyExc_RuntimeError, "_testing.parse_print must be bound to _core");
        goto done;
    }
    type = PyType_FromModuleAndSpec(testing, &compiled_spec, NULL);
    if (type == NULL || PyModule_AddObjectRef(testing, "CompiledQir", type) < 0) {
        goto done;
    }
    self = PyTuple_Pack(2, PyCFunction_GetSelf(probe), type);
    if (self == NULL || qd_py_testing_add_methods(testing, run_methods, self) < 0) {
        goto done;
    }
    rc = 0;
done:
    Py_XDECREF(self);
    Py_XDECREF(type);
    Py_XDECREF(probe);
    return rc;
}
