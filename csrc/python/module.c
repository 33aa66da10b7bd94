/* python/module.c -- the extension module quadrants._core: initialisation and module state.
 *
 * Multi-phase initialisation (PEP 489): PyInit__core only returns the module definition, and
 * core_exec fills the new module. The state (QdPyState) holds the exception classes, so nothing
 * here is a static mutable PyObject.
 *
 * Exception classes are made from base/errors.def. Its third column names the bases of each
 * class as "Base1+Base2"; a base is either a class made from the table or a builtin exception.
 * Rows may name a base that a later row defines, so classes are made in rounds, each making the
 * classes whose bases exist, until all are made. A row with no bases makes no class: its kind
 * raises the class of that name (INTERNAL -> QuadrantsCompilationError, NOMEM -> MemoryError).
 */
#include "python.h"

#include "../driver/driver.h"
#include "../ir/ir.h"

#include <string.h>

/* One row of errors.def. */
typedef struct ErrorRow {
    const char *class_name; /* Python class raised for the kind */
    const char *bases;      /* "Base1+Base2", or "" when the row makes no class */
} ErrorRow;

static const ErrorRow error_rows[QD_ERR_COUNT_] = {
    [QD_ERR_NONE] = {NULL, NULL},
#define QD_ERR(kind, pyname, pybase) [QD_ERR_##kind] = {pyname, pybase},
#include "../base/errors.def"
#undef QD_ERR
};

/* Module that all exception classes report as their __module__. */
#define EXC_MODULE "quadrants"

QdPyState *
qd_py_state(PyObject *module)
{
    return (QdPyState *)PyModule_GetState(module);
}

/***** exception classes *****/

/* obj.name into *out (new reference), or *out = NULL when there is no such attribute. Returns 0,
 * or -1 with an exception set on any error other than AttributeError. */
static int
get_optional_attr(PyObject *obj, PyObject *name, PyObject **out)
{
    *out = PyObject_GetAttr(obj, name);
    if (*out == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) {
            return -1;
        }
        PyErr_Clear();
    }
    return 0;
}

/* Looks up a class by name: first among the classes made so far (the module's attributes),
 * then among the builtins. Returns a new reference; NULL without an exception when the name is
 * not (yet) known, NULL with an exception on a real error. */
static PyObject *
find_class(PyObject *module, PyObject *builtins, const char *name, size_t len)
{
    PyObject *name_obj = NULL;
    PyObject *found = NULL;

    name_obj = PyUnicode_FromStringAndSize(name, (Py_ssize_t)len);
    if (name_obj == NULL) {
        goto done;
    }
    if (get_optional_attr(module, name_obj, &found) < 0) {
        goto done;
    }
    if (found == NULL && get_optional_attr(builtins, name_obj, &found) < 0) {
        goto done;
    }
    if (found != NULL && !PyExceptionClass_Check(found)) {
        PyErr_Format(PyExc_SystemError, "errors.def: base '%U' is not an exception class",
                     name_obj);
        Py_CLEAR(found);
    }
done:
    Py_XDECREF(name_obj);
    return found;
}

/* Makes the tuple of base classes named by "Base1+Base2". Returns a new reference; NULL without
 * an exception when a base is not made yet; NULL with an exception on error. */
static PyObject *
make_bases(PyObject *module, PyObject *builtins, const char *spec)
{
    PyObject *list = NULL;
    PyObject *base = NULL;
    PyObject *result = NULL;

    list = PyList_New(0);
    if (list == NULL) {
        goto done;
    }
    for (const char *p = spec; *p;) {
        size_t len = strcspn(p, "+");
        base = find_class(module, builtins, p, len);
        if (base == NULL || PyList_Append(list, base) < 0) {
            goto done;
        }
        Py_CLEAR(base);
        p += len;
        if (*p == '+') {
            p++;
        }
    }
    result = PyList_AsTuple(list);
done:
    Py_XDECREF(base);
    Py_XDECREF(list);
    return result;
}

/* Makes one exception class and adds it to the module. The class body holds
 * `__str__ = BaseException.__str__`: messages already carry the location, and SyntaxError's own
 * __str__ would append "(file, line N)" again from the attributes errors.c sets.
 * Returns 1 when made, 0 when a base is missing, -1 with an exception on error. */
static int
make_class(PyObject *module, PyObject *builtins, const ErrorRow *row)
{
    PyObject *bases = NULL;
    PyObject *body = NULL;
    PyObject *base_str = NULL;
    PyObject *cls = NULL;
    char qualified[256];
    int status = -1;

    bases = make_bases(module, builtins, row->bases);
    if (bases == NULL) {
        status = PyErr_Occurred() ? -1 : 0;
        goto done;
    }
    body = PyDict_New();
    base_str = PyObject_GetAttrString(PyExc_BaseException, "__str__");
    if (body == NULL || base_str == NULL || PyDict_SetItemString(body, "__str__", base_str) < 0) {
        goto done;
    }
    snprintf(qualified, sizeof(qualified), "%s.%s", EXC_MODULE, row->class_name);
    cls = PyErr_NewException(qualified, bases, body);
    if (cls == NULL || PyModule_AddObjectRef(module, row->class_name, cls) < 0) {
        goto done;
    }
    status = 1;
done:
    Py_XDECREF(cls);
    Py_XDECREF(base_str);
    Py_XDECREF(body);
    Py_XDECREF(bases);
    return status;
}

/* Makes every class of errors.def (in rounds, see the file comment), then fills
 * state->error_classes for every kind. 0, or -1 with an exception set. */
static int
make_error_classes(PyObject *module, QdPyState *state)
{
    PyObject *builtins = NULL;
    bool is_made[QD_ERR_COUNT_] = {false};
    int status = -1;

    builtins = PyImport_ImportModule("builtins");
    if (builtins == NULL) {
        goto done;
    }
    for (bool progress = true; progress;) {
        progress = false;
        for (int kind = QD_ERR_NONE + 1; kind < QD_ERR_COUNT_; kind++) {
            if (is_made[kind] || error_rows[kind].bases[0] == '\0') {
                continue;
            }
            int made = make_class(module, builtins, &error_rows[kind]);
            if (made < 0) {
                goto done;
            }
            is_made[kind] = made;
            progress |= made;
        }
    }
    for (int kind = QD_ERR_NONE + 1; kind < QD_ERR_COUNT_; kind++) {
        const char *name = error_rows[kind].class_name;
        state->error_classes[kind] = find_class(module, builtins, name, strlen(name));
        if (state->error_classes[kind] == NULL) {
            if (!PyErr_Occurred()) {
                PyErr_Format(PyExc_SystemError, "errors.def: no base of class %s (kind %s) exists",
                             name, qd_err_kind_name((QdErrKind)kind));
            }
            goto done;
        }
    }
    status = 0;
done:
    Py_XDECREF(builtins);
    return status;
}

/***** module definition *****/

/* Adds quadrants._core._testing as attribute `_testing` and registers it in sys.modules so that
 * `import quadrants._core._testing` finds it. 0, or -1 with an exception set. */
static int
add_testing_module(PyObject *module)
{
    PyObject *testing = NULL;
    PyObject *name = NULL;
    int status = -1;

    testing = qd_py_testing_module_new(module);
    if (testing == NULL || PyModule_AddObjectRef(module, "_testing", testing) < 0) {
        goto done;
    }
    name = PyModule_GetNameObject(testing);
    if (name == NULL || PyDict_SetItem(PyImport_GetModuleDict(), name, testing) < 0) {
        goto done;
    }
    status = 0;
done:
    Py_XDECREF(name);
    Py_XDECREF(testing);
    return status;
}

/***** runtime functions *****/

static PyObject *
core_compile_kernel(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    return qd_py_compile_kernel(module, args, nargs);
}

static PyObject *
core_load_cached_kernel(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    return qd_py_load_cached_kernel(module, args, nargs);
}

/* register_field(field_id, array): the array's memory backs the field on the CPU. */
static PyObject *
core_register_field(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    QdPyState *state = qd_py_state(module);
    if (nargs != 2 || !PyLong_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "register_field(field_id: int, array)");
        return NULL;
    }
    if (!PyObject_CheckBuffer(args[1])) {
        PyErr_SetString(PyExc_TypeError, "register_field: the array must support the buffer protocol");
        return NULL;
    }
    if (PyDict_SetItem(state->fields, args[0], args[1]) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
core_runtime_reset(PyObject *module, PyObject *unused)
{
    (void)unused;
    if (qd_py_runtime_reset(qd_py_state(module)) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* build_info(): {"llvm_version": "19.1.7", "host_cpu": "znver3", "glslang_version": "12.0.0"},
 * what `python -m quadrants` reports of the code generators. */
static PyObject *
core_build_info(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    return Py_BuildValue("{s:s,s:s,s:s}", "llvm_version", qd_llvm_version(), "host_cpu",
                         qd_llvm_host_cpu(), "glslang_version", qd_glslang_version());
}

/* dtype_ids(): {"u1": 1, ..., "f64": 13}, the scalar ids of ir/types.def. */
static PyObject *
core_dtype_ids(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    PyObject *d = PyDict_New();
    for (int k = QD_TY_U1; d && k < QD_TY_PTR; k++) {
        PyObject *v = PyLong_FromLong(k);
        if (!v || PyDict_SetItemString(d, qd_type_scalar_name((QdTypeKind)k), v) < 0) {
            Py_XDECREF(v);
            Py_CLEAR(d);
            break;
        }
        Py_DECREF(v);
    }
    return d;
}

static PyMethodDef core_methods[] = {
    {"compile_kernel", (PyCFunction)(void (*)(void))core_compile_kernel, METH_FASTCALL,
     "compile_kernel(func, funcdef, filename, arg_descs, name, options[, source_key]) -> "
     "CompiledKernel"},
    {"load_cached_kernel", (PyCFunction)(void (*)(void))core_load_cached_kernel, METH_FASTCALL,
     "load_cached_kernel(arg_descs, name, options, source_key) -> CompiledKernel or None"},
    {"register_field", (PyCFunction)(void (*)(void))core_register_field, METH_FASTCALL,
     "register_field(field_id, array): back a field with an array's memory"},
    {"runtime_reset", core_runtime_reset, METH_NOARGS, "drop the JIT, thread pool and fields"},
    {"dtype_ids", core_dtype_ids, METH_NOARGS, "scalar type ids of the core"},
    {"build_info", core_build_info, METH_NOARGS, "LLVM version, host CPU and glslang version of the core"},
    {NULL, NULL, 0, NULL},
};

/* _core.ARG_KINDS: {"SCALAR": "scalar", ...}, the argument kinds of abi/args.def by name, each
 * the text that starts a descriptor of that kind (quadrants/_kernel.py takes them from here). */
static int
add_arg_kinds(PyObject *module)
{
    PyObject *kinds = PyDict_New();
    int rc = kinds ? 0 : -1;
#define QD_ARG_KIND(NAME, text, passed, description)                                             \
    if (rc == 0) {                                                                                 \
        PyObject *value = PyUnicode_FromString(text);                                              \
        rc = value ? PyDict_SetItemString(kinds, #NAME, value) : -1;                               \
        Py_XDECREF(value);                                                                         \
    }
#include "../abi/args.def"
#undef QD_ARG_KIND
    if (rc == 0) {
        rc = PyModule_AddObjectRef(module, "ARG_KINDS", kinds);
    }
    Py_XDECREF(kinds);
    return rc;
}

/* _core.BUILTINS: ((name, (flag, ...)), ...), the rows of frontend/builtins.def in order, each
 * with the text of its flags ("elementwise", "exported", ...). quadrants/_builtins.py,
 * _hints.py, _linalg.py and __init__.py list the kernel-scope builtins from it. */
static PyObject *
builtin_row(const char *name, unsigned flags)
{
    static const char *const flag_texts[] = {
#define QD_BUILTIN_FLAG(NAME, text) text,
#include "../frontend/builtins.def"
#undef QD_BUILTIN_FLAG
    };
    PyObject *texts = PyList_New(0);
    for (size_t k = 0; texts && k < sizeof(flag_texts) / sizeof(flag_texts[0]); k++) {
        if ((flags & (1u << k)) != 0) {
            PyObject *t = PyUnicode_FromString(flag_texts[k]);
            if (!t || PyList_Append(texts, t) < 0) {
                Py_XDECREF(t);
                Py_CLEAR(texts);
                break;
            }
            Py_DECREF(t);
        }
    }
    PyObject *tuple = texts ? PyList_AsTuple(texts) : NULL;
    Py_XDECREF(texts);
    PyObject *row = tuple ? Py_BuildValue("(sN)", name, tuple) : NULL;
    return row;
}

/* Appends `row` (a new reference, or NULL after an error) to `rows` unless *rc already failed. */
static void
append_row(PyObject *rows, PyObject *row, int *rc)
{
    if (*rc == 0) {
        *rc = row ? PyList_Append(rows, row) : -1;
    }
    Py_XDECREF(row);
}

/* Adds the list `rows` (consumed; NULL after an error) to the module as the tuple `name`. */
static int
add_table(PyObject *module, const char *name, PyObject *rows, int rc)
{
    PyObject *tuple = rows && rc == 0 ? PyList_AsTuple(rows) : NULL;
    rc = tuple ? PyModule_AddObjectRef(module, name, tuple) : -1;
    Py_XDECREF(tuple);
    Py_XDECREF(rows);
    return rc;
}

static int
add_builtins(PyObject *module)
{
    PyObject *rows = PyList_New(0);
    int rc = rows ? 0 : -1;
#define QD_BUILTIN(name, fn, op, flags) append_row(rows, builtin_row(name, flags), &rc);
#include "../frontend/builtins.def"
#undef QD_BUILTIN
    return add_table(module, "BUILTINS", rows, rc);
}

/* _core.SIMT_BUILTINS: ((name, kind, ival, deprecated, doc), ...), the rows of
 * frontend/simt.def ("block.sync", "BARRIER", 0, None, "sync(): ...") and of
 * frontend/collectives.def (kind "COLLECTIVE"); the quadrants.simt modules define their functions
 * from it. */
static int
add_simt_builtins(PyObject *module)
{
    PyObject *rows = PyList_New(0);
    int rc = rows ? 0 : -1;
#define QD_SIMT(name, KIND, OP, ival, deprecated, doc)                                             \
    append_row(rows, Py_BuildValue("(ssLzs)", name, #KIND, (long long)(ival), deprecated, doc), &rc);
#include "../frontend/simt.def"
#undef QD_SIMT
    /* each collective, and a subgroup collective's _tiled form on tiles of 2**log2_size lanes */
#define QD_COLLECTIVE(name, ARGS, tmpl, op, identity, doc)                                        \
    append_row(rows, Py_BuildValue("(ssLzs)", name, "COLLECTIVE", 0LL, NULL, doc), &rc);          \
    if (strncmp(name, "subgroup.", 9) == 0) {                                                      \
        append_row(rows,                                                                           \
                   Py_BuildValue("(ssLzs)", name "_tiled", "COLLECTIVE", 0LL, NULL,                \
                                 "_tiled(..., log2_size): the same on each tile of 2**log2_size "  \
                                 "consecutive lanes (log2_size a compile-time int in [0, 5])."),  \
                   &rc);                                                                           \
    }
#include "../frontend/collectives.def"
#undef QD_COLLECTIVE
    return add_table(module, "SIMT_BUILTINS", rows, rc);
}

/* _core.NN_BUILTINS: ((name, signature, doc), ...), the rows of frontend/nn.def; quadrants.nn
 * defines its kernel-scope functions from it. */
static int
add_nn_builtins(PyObject *module)
{
    PyObject *rows = PyList_New(0);
    int rc = rows ? 0 : -1;
#define QD_NN(name, KIND, signature, doc)                                                          \
    append_row(rows, Py_BuildValue("(sss)", name, signature, doc), &rc);
#include "../frontend/nn.def"
#undef QD_NN
    return add_table(module, "NN_BUILTINS", rows, rc);
}

/* _core.ALGORITHMS: ((name, signature, doc), ...), the rows of frontend/algorithms.def;
 * quadrants.algorithms defines those functions from it. */
static int
add_algorithms(PyObject *module)
{
    PyObject *rows = PyList_New(0);
    int rc = rows ? 0 : -1;
#define QD_ALGORITHM(name, ARGS, gpu, cpu, op, identity, signature, doc)                           \
    append_row(rows, Py_BuildValue("(sss)", name, signature, doc), &rc);
#include "../frontend/algorithms.def"
#undef QD_ALGORITHM
    return add_table(module, "ALGORITHMS", rows, rc);
}

/* _core.MATRIX_METHODS: the names of frontend/matrix_methods.def, in order. */
static int
add_matrix_methods(PyObject *module)
{
    PyObject *rows = PyList_New(0);
    int rc = rows ? 0 : -1;
#define QD_MATRIX_METHOD(name, ID) append_row(rows, PyUnicode_FromString(name), &rc);
#include "../frontend/matrix_methods.def"
#undef QD_MATRIX_METHOD
    return add_table(module, "MATRIX_METHODS", rows, rc);
}

static int
core_exec(PyObject *module)
{
    QdPyState *state = qd_py_state(module);

    RETURN_IF_ERROR(make_error_classes(module, state));
    RETURN_IF_ERROR(add_testing_module(module));
    RETURN_IF_ERROR(add_arg_kinds(module));
    RETURN_IF_ERROR(add_builtins(module));
    RETURN_IF_ERROR(add_simt_builtins(module));
    RETURN_IF_ERROR(add_matrix_methods(module));
    RETURN_IF_ERROR(add_nn_builtins(module));
    RETURN_IF_ERROR(add_algorithms(module));
    PyObject *dispatcher_type = qd_py_dispatcher_type_new(module);
    int added = dispatcher_type ? PyModule_AddObjectRef(module, "Dispatcher", dispatcher_type) : -1;
    Py_XDECREF(dispatcher_type);
    PyObject *ndarray_base_type = added == 0 ? qd_py_ndarray_base_type_new(module) : NULL;
    added = ndarray_base_type ? PyModule_AddObjectRef(module, "NdarrayBase", ndarray_base_type)
                              : -1;
    Py_XDECREF(ndarray_base_type);
    RETURN_IF_ERROR(added);
    state->compiled_kernel_type = qd_py_compiled_kernel_type_new(module);
    state->fields = PyDict_New();
    if (!state->compiled_kernel_type || !state->fields ||
        PyModule_AddObjectRef(module, "CompiledKernel", state->compiled_kernel_type) < 0 ||
        PyModule_AddFunctions(module, core_methods) < 0 || qd_py_cuda_add(module) < 0 ||
        qd_py_vulkan_add(module) < 0 || qd_py_device_kernel_add(module) < 0 ||
        qd_py_cache_add(module) < 0 || qd_py_profiler_add(module) < 0) {
        return -1;
    }
    return 0;
}

static int
core_traverse(PyObject *module, visitproc visit, void *arg)
{
    QdPyState *state = qd_py_state(module);

    for (int kind = 0; kind < QD_ERR_COUNT_; kind++) {
        Py_VISIT(state->error_classes[kind]);
    }
    Py_VISIT(state->compiled_kernel_type);
    Py_VISIT(state->fields);
    Py_VISIT(state->device_buffer_type);
    Py_VISIT(state->device_kernel_type);
    Py_VISIT(state->cuda_fields);
    Py_VISIT(state->profiler_records);
    return 0;
}

static int
core_clear(PyObject *module)
{
    QdPyState *state = qd_py_state(module);

    for (int kind = 0; kind < QD_ERR_COUNT_; kind++) {
        Py_CLEAR(state->error_classes[kind]);
    }
    Py_CLEAR(state->compiled_kernel_type);
    Py_CLEAR(state->fields);
    Py_CLEAR(state->device_buffer_type);
    Py_CLEAR(state->device_kernel_type);
    Py_CLEAR(state->cuda_fields);
    Py_CLEAR(state->profiler_records);
    return 0;
}

static void
core_free(void *module)
{
    if (qd_py_runtime_reset(qd_py_state((PyObject *)module)) < 0) {
        PyErr_Clear(); /* freed from inside a compile on this thread: nothing is left to wait for */
    }
    qd_py_cache_free(qd_py_state((PyObject *)module));
    core_clear((PyObject *)module);
}

static PyModuleDef_Slot core_slots[] = {
    {Py_mod_exec, core_exec},
    {0, NULL},
};

static struct PyModuleDef core_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "quadrants._core",
    .m_doc = "The C core of quadrants: IR, passes, code generation and runtime.",
    .m_size = sizeof(QdPyState),
    .m_slots = core_slots,
    .m_traverse = core_traverse,
    .m_clear = core_clear,
    .m_free = core_free,
};

PyMODINIT_FUNC
PyInit__core(void)
{
    return PyModuleDef_Init(&core_def);
}
