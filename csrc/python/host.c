/* python/host.c -- the frontend's questions about Python values, answered (QdHost).
 *
 * While the frontend lowers a kernel it meets names bound in the kernel's globals or closure,
 * attribute accesses on modules and objects, `qd.static(...)` expressions and calls of Python
 * helpers. Each is a callback here. Python values are handed to the core as QdHandles (indices
 * into h->handles, which keeps them alive) and described as plain C values (QdHostValue).
 *
 * Quadrants' own Python objects are recognized by marker attributes set in the quadrants
 * package: `_qd_dtype` (data types; the id is the scalar's index in ir/types.def),
 * `_qd_field_id` (fields), `_qd_ndarray` (ndarrays), `_qd_func` (@qd.func), `_qd_kernel`,
 * `_qd_builtin` (kernel-scope builtins, by name), `_qd_template`, `_qd_ndarray_annotation` and
 * the struct markers `_qd_struct_type`, `_qd_struct_value`, `_qd_struct_field`. A `qd.Tensor`
 * wrapper (marker `_qd_tensor_impl`: the field or ndarray it wraps) stands for what it wraps:
 * describing it rebinds its handle to the wrapped object.
 * Python exceptions raised by user code while tracing become QuadrantsCompilationError, as in the
 * reference ("wrapping rule", spec/api.md E).
 */
#include "host.h"

#include <math.h>
#include <string.h>

/* Python builtins that are kernel-scope builtins too, by the name the frontend knows. */
static const char *const python_builtins[] = {"range", "min", "max", "abs", "len", "print",
                                              "pow", "any", "all", "tuple", "list"};

int
qd_py_host_error_from_exception(QdPyHost *h, QdCtx *ctx)
{
#if PY_VERSION_HEX >= 0x030C0000
    PyObject *exc = PyErr_GetRaisedException();
#else
    PyObject *exc_type = NULL, *exc = NULL, *exc_tb = NULL;
    PyErr_Fetch(&exc_type, &exc, &exc_tb);
    PyErr_NormalizeException(&exc_type, &exc, &exc_tb);
    Py_XDECREF(exc_type);
    Py_XDECREF(exc_tb);
#endif
    const char *type = "Exception";
    const char *text = "";
    PyObject *str = NULL;
    if (exc) {
        type = Py_TYPE(exc)->tp_name;
        const char *dot = strrchr(type, '.');
        type = dot ? dot + 1 : type;
        str = PyObject_Str(exc);
        if (str) {
            text = PyUnicode_AsUTF8(str);
            text = text ? text : "";
        }
        PyErr_Clear();
    }
    if (h && exc && !h->first_exception) {
        h->first_exception = Py_NewRef(exc); /* re-raised as is with print_full_traceback */
    }
    QdErrKind kind = QD_ERR_COMPILATION;
    if (exc && strncmp(type, "Quadrants", 9) == 0) {
        /* A Quadrants error raised by nested tracing keeps its class. */
        static const struct {
            const char *name;
            QdErrKind kind;
        } classes[] = {{"QuadrantsSyntaxError", QD_ERR_SYNTAX}, {"QuadrantsTypeError", QD_ERR_TYPE},
                       {"QuadrantsNameError", QD_ERR_NAME}};
        for (size_t i = 0; i < QD_ARRAY_LEN(classes); i++) {
            if (strcmp(classes[i].name, type) == 0) {
                kind = classes[i].kind;
            }
        }
        qd_error(ctx, (QdLoc){0}, kind, "%s", text);
    } else {
        qd_error(ctx, (QdLoc){0}, kind, "%s: %s", type, text);
    }
    Py_XDECREF(str);
    Py_XDECREF(exc);
    return -1;
}

/***** handles *****/

QdHandle
qd_py_host_add(QdPyHost *h, PyObject *obj)
{
    if (PyList_Append(h->handles, obj) < 0) {
        return 0;
    }
    return (QdHandle)PyList_GET_SIZE(h->handles);
}

PyObject *
qd_py_host_get(QdPyHost *h, QdHandle handle)
{
    if (handle == 0 || (Py_ssize_t)handle > PyList_GET_SIZE(h->handles)) {
        return NULL;
    }
    return PyList_GET_ITEM(h->handles, handle - 1);
}

static int
add_new(QdPyHost *h, QdCtx *ctx, PyObject *obj_steal, QdHandle *out)
{
    if (!obj_steal) {
        return qd_py_host_error_from_exception(h, ctx);
    }
    *out = qd_py_host_add(h, obj_steal);
    Py_DECREF(obj_steal);
    return *out ? 0 : qd_py_host_error_from_exception(h, ctx);
}

/* The function whose globals and closure a scope handle stands for (new reference). */
static PyObject *
scope_function(QdPyHost *h, QdHandle scope)
{
    PyObject *fn = qd_py_host_get(h, scope);
    if (!fn) {
        PyErr_SetString(PyExc_RuntimeError, "bad scope handle");
        return NULL;
    }
    PyObject *inner = PyObject_GetAttrString(fn, "_qd_func");
    if (!inner) {
        PyErr_Clear();
        inner = Py_NewRef(fn);
    }
    if (PyMethod_Check(inner)) {
        PyObject *f = Py_NewRef(PyMethod_GET_FUNCTION(inner));
        Py_DECREF(inner);
        inner = f;
    }
    return inner;
}

/* Closure variables of `fn` as a new dict (empty for functions without a closure). */
static PyObject *
closure_dict(PyObject *fn)
{
    PyObject *d = PyDict_New();
    if (!d || !PyFunction_Check(fn)) {
        return d;
    }
    PyObject *code = PyFunction_GET_CODE(fn);
    PyObject *cells = PyFunction_GET_CLOSURE(fn);
    PyObject *names = code ? PyObject_GetAttrString(code, "co_freevars") : NULL;
    if (!names) {
        PyErr_Clear();
        return d;
    }
    if (cells && PyTuple_Check(cells) && PyTuple_Check(names)) {
        Py_ssize_t n = PyTuple_GET_SIZE(names);
        for (Py_ssize_t i = 0; i < n && i < PyTuple_GET_SIZE(cells); i++) {
            PyObject *value = PyCell_GET(PyTuple_GET_ITEM(cells, i));
            if (value && PyDict_SetItem(d, PyTuple_GET_ITEM(names, i), value) < 0) {
                Py_DECREF(names);
                Py_DECREF(d);
                return NULL;
            }
        }
    }
    Py_DECREF(names);
    return d;
}

/***** callbacks *****/

static int
host_lookup(void *self, QdCtx *ctx, QdHandle scope, const char *name, QdHandle *out)
{
    QdPyHost *h = self;
    PyObject *fn = scope_function(h, scope);
    PyObject *closure = fn ? closure_dict(fn) : NULL;
    PyObject *key = PyUnicode_FromString(name);
    PyObject *value = NULL; /* borrowed */
    int rc = 1;
    if (!fn || !closure || !key) {
        rc = qd_py_host_error_from_exception(h, ctx);
        goto done;
    }
    value = PyDict_GetItemWithError(closure, key);
    if (!value && !PyErr_Occurred() && PyFunction_Check(fn)) {
        value = PyDict_GetItemWithError(PyFunction_GET_GLOBALS(fn), key);
    }
    if (!value && !PyErr_Occurred()) {
        PyObject *builtins = PyEval_GetBuiltins();
        value = builtins ? PyDict_GetItemWithError(builtins, key) : NULL;
    }
    if (PyErr_Occurred()) {
        rc = qd_py_host_error_from_exception(h, ctx);
    } else if (value) {
        *out = qd_py_host_add(h, value);
        rc = *out ? 0 : qd_py_host_error_from_exception(h, ctx);
    }
done:
    Py_XDECREF(fn);
    Py_XDECREF(closure);
    Py_XDECREF(key);
    return rc;
}

/* A marker attribute (new reference), or NULL without an exception when absent. */
static PyObject *
marker(PyObject *obj, const char *name)
{
    PyObject *v = PyObject_GetAttrString(obj, name);
    if (!v) {
        PyErr_Clear();
    }
    return v;
}

static int
describe_dtype(QdPyHost *h, PyObject *obj, QdHostValue *out)
{
    PyObject *id = marker(obj, "_qd_dtype");
    if (id) {
        long v = PyLong_Check(id) ? PyLong_AsLong(id) : -1;
        Py_DECREF(id);
        if (v > 0 && v < QD_TY_PTR) {
            out->kind = QD_HOST_DTYPE;
            out->dtype = (QdTypeKind)v;
            return 1;
        }
        return 0;
    }
    if (obj == (PyObject *)&PyLong_Type || obj == (PyObject *)&PyFloat_Type ||
        obj == (PyObject *)&PyBool_Type) {
        out->kind = QD_HOST_DTYPE;
        out->dtype = obj == (PyObject *)&PyLong_Type    ? h->default_ip
                     : obj == (PyObject *)&PyFloat_Type ? h->default_fp
                                                        : QD_TY_U1;
        out->str = obj == (PyObject *)&PyLong_Type ? "int" : obj == (PyObject *)&PyFloat_Type ? "float" : "bool";
        return 1;
    }
    return 0;
}

static int
describe_field(QdPyHost *h, QdCtx *ctx, PyObject *obj, PyObject *id, QdHostValue *out)
{
    (void)h;
    PyObject *dtype = PyObject_GetAttrString(obj, "dtype");
    PyObject *shape = PyObject_GetAttrString(obj, "shape");
    PyObject *order = NULL, *offset = NULL;
    int rc = 0;
    QdHostValue dv = {0};
    if (!dtype || !shape || !PyTuple_Check(shape) || PyTuple_GET_SIZE(shape) > 16 ||
        !describe_dtype(h, dtype, &dv)) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "malformed field object");
        }
        rc = qd_py_host_error_from_exception(h, ctx);
        goto done;
    }
    out->kind = QD_HOST_FIELD;
    out->field_id = (uint32_t)PyLong_AsUnsignedLong(id);
    out->dtype = dv.dtype;
    out->ndim = (int32_t)PyTuple_GET_SIZE(shape);
    order = marker(obj, "_qd_field_order");
    offset = marker(obj, "_qd_field_offset");
    for (int32_t i = 0; i < out->ndim; i++) {
        out->shape[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, i));
        out->order[i] = (uint8_t)i;
        if (order && PyTuple_Check(order) && PyTuple_GET_SIZE(order) == out->ndim) {
            long o = PyLong_AsLong(PyTuple_GET_ITEM(order, i));
            out->order[i] = o >= 0 && o < out->ndim ? (uint8_t)o : (uint8_t)i;
        }
        if (offset && PyTuple_Check(offset) && PyTuple_GET_SIZE(offset) == out->ndim) {
            out->offset[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(offset, i));
        }
    }
    if (PyErr_Occurred()) {
        rc = qd_py_host_error_from_exception(h, ctx);
    }
done:
    Py_XDECREF(dtype);
    Py_XDECREF(shape);
    Py_XDECREF(order);
    Py_XDECREF(offset);
    return rc;
}

static int
describe_object(QdPyHost *h, QdCtx *ctx, PyObject *obj, QdHostValue *out)
{
    if (describe_dtype(h, obj, out)) {
        return 0;
    }
    PyObject *m;
    if ((m = marker(obj, "_qd_field_id"))) {
        int rc = describe_field(h, ctx, obj, m, out);
        Py_DECREF(m);
        return rc;
    }
    static const struct {
        const char *attr;
        QdHostKind kind;
    } markers[] = {
        {"_qd_ndarray", QD_HOST_NDARRAY},
        {"_qd_func", QD_HOST_QD_FUNC},
        {"_qd_kernel", QD_HOST_KERNEL},
        {"_qd_template", QD_HOST_TEMPLATE_ANNOTATION},
        {"_qd_ndarray_annotation", QD_HOST_NDARRAY_ANNOTATION},
        {"_qd_struct_type", QD_HOST_STRUCT_TYPE}, /* before _qd_struct_value: classes have both */
        {"_qd_struct_value", QD_HOST_STRUCT},
        {"_qd_struct_field", QD_HOST_STRUCT_FIELD},
        {"_qd_ref_annotation", QD_HOST_OBJECT}, /* qd.ref and its results: annotations */
    };
    for (size_t i = 0; i < QD_ARRAY_LEN(markers); i++) {
        if ((m = marker(obj, markers[i].attr))) {
            Py_DECREF(m);
            out->kind = markers[i].kind;
            if (out->kind == QD_HOST_STRUCT && PyType_Check(obj)) {
                out->kind = QD_HOST_STRUCT_TYPE; /* qd.Struct: the class of anonymous structs */
            }
            return 0;
        }
    }
    if ((m = marker(obj, "_qd_builtin"))) {
        const char *name = PyUnicode_Check(m) ? PyUnicode_AsUTF8(m) : NULL;
        out->kind = QD_HOST_BUILTIN;
        out->str = name ? qd_arena_strdup(h->arena, name) : "?";
        Py_DECREF(m);
        return 0;
    }
    /* After _qd_builtin: the Matrix/Vector classes are builtins, their instances values. */
    static const struct {
        const char *attr;
        QdHostKind kind;
    } matrix_markers[] = {
        {"_qd_matrix_type", QD_HOST_MATRIX_TYPE},
        {"_qd_matrix_field", QD_HOST_MATRIX_FIELD},
        {"_qd_matrix_value", QD_HOST_MATRIX},
    };
    for (size_t i = 0; i < QD_ARRAY_LEN(matrix_markers); i++) {
        if ((m = marker(obj, matrix_markers[i].attr))) {
            Py_DECREF(m);
            out->kind = matrix_markers[i].kind;
            return 0;
        }
    }
    PyObject *builtins = PyEval_GetBuiltins();
    for (size_t i = 0; builtins && i < QD_ARRAY_LEN(python_builtins); i++) {
        PyObject *b = PyDict_GetItemString(builtins, python_builtins[i]);
        if (b == obj) {
            out->kind = QD_HOST_BUILTIN;
            out->str = python_builtins[i];
            return 0;
        }
    }
    out->kind = PyCallable_Check(obj) ? QD_HOST_CALLABLE : QD_HOST_OBJECT;
    return 0;
}

/* A Python int outside int64: its decimal text (kept alive by a handle), float value, and its
 * bits when it fits in uint64. overflow is the sign PyLong_AsLongLongAndOverflow reported. */
static int
describe_big_int(QdPyHost *h, QdCtx *ctx, PyObject *obj, int overflow, QdHostValue *out)
{
    QdHandle text;
    RETURN_IF_ERROR(add_new(h, ctx, PyObject_Str(obj), &text));
    out->str = PyUnicode_AsUTF8(qd_py_host_get(h, text));
    if (!out->str) {
        return qd_py_host_error_from_exception(h, ctx);
    }
    out->ival = overflow > 0 ? INT64_MAX : INT64_MIN;
    out->fval = PyLong_AsDouble(obj);
    if (out->fval == -1.0 && PyErr_Occurred()) {
        PyErr_Clear(); /* beyond a double: float() of it would raise; used only with a float */
        out->fval = overflow > 0 ? HUGE_VAL : -HUGE_VAL;
    }
    unsigned long long u = overflow > 0 ? PyLong_AsUnsignedLongLong(obj) : (unsigned long long)-1;
    if (overflow > 0 && u == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
    } else if (overflow > 0) {
        out->big_u64 = true;
        out->ubits = u;
    }
    return 0;
}

static int
host_describe(void *self, QdCtx *ctx, QdHandle handle, QdHostValue *out)
{
    QdPyHost *h = self;
    PyObject *obj = qd_py_host_get(h, handle);
    memset(out, 0, sizeof(*out));
    if (!obj) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_INTERNAL, "bad handle %u", handle);
    }
    if (h->runtime_type && PyObject_TypeCheck(obj, (PyTypeObject *)h->runtime_type)) {
        /* A stand-in made by host_make_runtime, coming back: the frontend's index. */
        PyObject *index = PyObject_GetAttrString(obj, "_qd_runtime_index");
        out->kind = QD_HOST_RUNTIME;
        out->ival = index ? PyLong_AsLongLong(index) : -1;
        Py_XDECREF(index);
        if (out->ival < 0 && !PyErr_Occurred()) {
            /* An operation on stand-ins (a RuntimeOp): its name; the operands are an attribute. */
            PyObject *op = PyObject_GetAttrString(obj, "_op");
            const char *name = op && PyUnicode_Check(op) ? PyUnicode_AsUTF8(op) : NULL;
            out->kind = QD_HOST_RUNTIME_OP;
            out->str = name ? qd_arena_strdup(h->arena, name) : "?";
            Py_XDECREF(op);
        }
        return PyErr_Occurred() ? qd_py_host_error_from_exception(h, ctx) : 0;
    }
    if (obj == Py_None) {
        out->kind = QD_HOST_NONE;
    } else if (PyBool_Check(obj)) {
        out->kind = QD_HOST_BOOL;
        out->ival = obj == Py_True;
    } else if (PyLong_Check(obj)) {
        int overflow = 0;
        out->kind = QD_HOST_INT;
        out->ival = PyLong_AsLongLongAndOverflow(obj, &overflow);
        out->is_big = overflow != 0;
        if (out->is_big && describe_big_int(h, ctx, obj, overflow, out) != 0) {
            return -1;
        }
    } else if (PyFloat_Check(obj)) {
        out->kind = QD_HOST_FLOAT;
        out->fval = PyFloat_AS_DOUBLE(obj);
    } else if (PyUnicode_Check(obj)) {
        const char *s = PyUnicode_AsUTF8(obj);
        if (!s) {
            return qd_py_host_error_from_exception(h, ctx);
        }
        out->kind = QD_HOST_STR;
        out->str = s; /* valid while the handle lives */
    } else if (PyTuple_Check(obj) || PyList_Check(obj)) {
        out->kind = PyTuple_Check(obj) ? QD_HOST_TUPLE : QD_HOST_LIST;
        out->len = (uint32_t)PySequence_Size(obj);
    } else if (!PyType_Check(obj) && PyObject_HasAttrString(obj, "dtype") &&
               PyObject_HasAttrString(obj, "item") && !PyObject_HasAttrString(obj, "shape_")) {
        /* A NumPy scalar (or 0-d array): use its Python value. Arrays are plain objects. */
        PyObject *ndim = marker(obj, "ndim");
        long nd = ndim && PyLong_Check(ndim) ? PyLong_AsLong(ndim) : -1;
        Py_XDECREF(ndim);
        if (nd == 0) {
            PyObject *item = PyObject_CallMethod(obj, "item", NULL);
            QdHandle ih = 0;
            RETURN_IF_ERROR(add_new(h, ctx, item, &ih));
            return host_describe(self, ctx, ih, out);
        }
        out->kind = QD_HOST_OBJECT;
    } else {
        PyObject *impl = PyType_Check(obj) ? NULL : marker(obj, "_qd_tensor_impl");
        if (impl) {
            /* steals impl; the wrapper's reference is dropped (obj is not used again) */
            if (PyList_SetItem(h->handles, (Py_ssize_t)handle - 1, impl) < 0) {
                return qd_py_host_error_from_exception(h, ctx);
            }
            return host_describe(self, ctx, handle, out);
        }
        return describe_object(h, ctx, obj, out);
    }
    return 0;
}

static int
host_getattr(void *self, QdCtx *ctx, QdHandle handle, const char *name, QdHandle *out)
{
    QdPyHost *h = self;
    PyObject *obj = qd_py_host_get(h, handle);
    if (!obj) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_INTERNAL, "bad handle %u", handle);
    }
    PyObject *v = PyObject_GetAttrString(obj, name);
    if (!v) {
        if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
            PyErr_Clear();
            return 1;
        }
        return qd_py_host_error_from_exception(h, ctx);
    }
    return add_new(h, ctx, v, out);
}

static int
host_getitem(void *self, QdCtx *ctx, QdHandle handle, uint32_t index, QdHandle *out)
{
    QdPyHost *h = self;
    PyObject *obj = qd_py_host_get(h, handle);
    if (!obj) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_INTERNAL, "bad handle %u", handle);
    }
    return add_new(h, ctx, PySequence_GetItem(obj, (Py_ssize_t)index), out);
}

static int
host_eval(void *self, QdCtx *ctx, QdHandle scope, uint32_t pynode, const char *const *names,
          const QdHandle *values, uint32_t n, QdHandle *out)
{
    QdPyHost *h = self;
    PyObject *fn = NULL, *locals = NULL, *ast = NULL, *expr = NULL, *code = NULL;
    PyObject *result = NULL, *filename = NULL;
    PyObject *node = qd_py_host_get(h, pynode); /* borrowed */
    int rc = -1;
    fn = scope_function(h, scope);
    locals = fn ? closure_dict(fn) : NULL;
    if (!node || !locals) {
        goto done;
    }
    for (uint32_t i = 0; i < n; i++) {
        PyObject *v = values[i] ? qd_py_host_get(h, values[i]) : h->sentinel;
        if (v && PyDict_SetItemString(locals, names[i], v) < 0) {
            goto done;
        }
    }
    ast = PyImport_ImportModule("ast");
    expr = ast ? PyObject_CallMethod(ast, "Expression", "O", node) : NULL;
    PyObject *fixed = expr ? PyObject_CallMethod(ast, "fix_missing_locations", "O", expr) : NULL;
    if (!fixed) {
        goto done;
    }
    Py_DECREF(fixed); /* the node itself */
    filename = PyFunction_Check(fn) ? PyObject_GetAttrString(PyFunction_GET_CODE(fn), "co_filename")
                                    : PyUnicode_FromString("<kernel>");
    {
        PyObject *builtins = PyEval_GetBuiltins();
        PyObject *compile = builtins ? PyDict_GetItemString(builtins, "compile") : NULL;
        code = compile && filename ? PyObject_CallFunction(compile, "OOs", expr, filename, "eval") : NULL;
    }
    if (!code) {
        goto done;
    }
    PyObject *globals = PyFunction_Check(fn) ? PyFunction_GET_GLOBALS(fn) : NULL;
    PyObject *gdict = globals ? Py_NewRef(globals) : PyDict_New();
    if (!gdict) {
        goto done;
    }
    result = PyEval_EvalCode(code, gdict, locals);
    Py_DECREF(gdict);
    if (!result) {
        goto done;
    }
    rc = add_new(h, ctx, Py_NewRef(result), out);
done:
    if (rc < 0 && ctx->diag.kind == QD_ERR_NONE) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_RuntimeError, "static evaluation failed");
        }
        qd_py_host_error_from_exception(h, ctx);
    }
    Py_XDECREF(fn);
    Py_XDECREF(locals);
    Py_XDECREF(ast);
    Py_XDECREF(expr);
    Py_XDECREF(code);
    Py_XDECREF(result);
    Py_XDECREF(filename);
    return rc;
}

static int
host_call(void *self, QdCtx *ctx, QdHandle fnh, const QdHandle *args, uint32_t n, QdHandle *out)
{
    QdPyHost *h = self;
    PyObject *fn = qd_py_host_get(h, fnh);
    PyObject *tuple = PyTuple_New(n);
    if (!fn || !tuple) {
        Py_XDECREF(tuple);
        return qd_py_host_error_from_exception(h, ctx);
    }
    for (uint32_t i = 0; i < n; i++) {
        PyObject *a = qd_py_host_get(h, args[i]);
        PyTuple_SET_ITEM(tuple, i, Py_NewRef(a ? a : Py_None));
    }
    PyObject *r = PyObject_Call(fn, tuple, NULL);
    Py_DECREF(tuple);
    return add_new(h, ctx, r, out);
}

static int
host_to_tuple(void *self, QdCtx *ctx, QdHandle handle, QdHandle *out)
{
    QdPyHost *h = self;
    PyObject *obj = qd_py_host_get(h, handle);
    if (!obj) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_INTERNAL, "bad handle %u", handle);
    }
    return add_new(h, ctx, PySequence_Tuple(obj), out);
}

static int
host_truth(void *self, QdCtx *ctx, QdHandle handle, bool *out)
{
    QdPyHost *h = self;
    PyObject *obj = qd_py_host_get(h, handle);
    int t = obj ? PyObject_IsTrue(obj) : -1;
    if (t < 0) {
        return obj ? qd_py_host_error_from_exception(h, ctx)
                   : qd_error(ctx, (QdLoc){0}, QD_ERR_INTERNAL, "bad handle %u", handle);
    }
    *out = t != 0;
    return 0;
}

static void
capsule_free_nothing(PyObject *capsule)
{
    (void)capsule; /* the AST lives in the compilation's arena */
}

static int
host_func_ast(void *self, QdCtx *ctx, QdHandle fnh, QdArena *arena, QdAst **out)
{
    QdPyHost *h = self;
    (void)arena;
    PyObject *fn = qd_py_host_get(h, fnh);
    PyObject *key = fn ? PyLong_FromVoidPtr(fn) : NULL;
    PyObject *cached = key ? PyDict_GetItemWithError(h->ast_cache, key) : NULL;
    PyObject *tree = NULL, *file = NULL;
    int rc = -1;
    if (cached) {
        *out = PyCapsule_GetPointer(cached, "qd.ast");
        rc = *out ? 0 : qd_py_host_error_from_exception(h, ctx);
        goto done;
    }
    if (!key || PyErr_Occurred()) {
        rc = qd_py_host_error_from_exception(h, ctx);
        goto done;
    }
    tree = PyObject_GetAttrString(fn, "_qd_func_ast");
    file = tree ? PyObject_GetAttrString(fn, "_qd_filename") : NULL;
    const char *fname = file && PyUnicode_Check(file) ? PyUnicode_AsUTF8(file) : NULL;
    if (!tree || !file || !fname) {
        rc = qd_py_host_error_from_exception(h, ctx);
        goto done;
    }
    rc = qd_py_host_convert_function(h, ctx, tree, fname, out);
    if (rc == 0) {
        PyObject *cap = PyCapsule_New(*out, "qd.ast", capsule_free_nothing);
        if (!cap || PyDict_SetItem(h->ast_cache, key, cap) < 0) {
            rc = qd_py_host_error_from_exception(h, ctx);
        }
        Py_XDECREF(cap);
    }
done:
    Py_XDECREF(key);
    Py_XDECREF(tree);
    Py_XDECREF(file);
    return rc;
}

static int
host_make_int(void *self, QdCtx *ctx, int64_t v, QdHandle *out)
{
    return add_new(self, ctx, PyLong_FromLongLong(v), out);
}

static int
host_parse_int(void *self, QdCtx *ctx, const char *text, QdHandle *out)
{
    return add_new(self, ctx, PyLong_FromString(text, NULL, 10), out);
}

static int
host_number_op(void *self, QdCtx *ctx, const char *op, QdHandle a, QdHandle b, QdHandle *out)
{
    static const struct {
        const char *name;
        PyObject *(*fn)(PyObject *, PyObject *);
    } binary[] = {
        {"+", PyNumber_Add},         {"-", PyNumber_Subtract}, {"*", PyNumber_Multiply},
        {"/", PyNumber_TrueDivide},  {"//", PyNumber_FloorDivide}, {"%", PyNumber_Remainder},
        {"<<", PyNumber_Lshift},     {">>", PyNumber_Rshift}, {"&", PyNumber_And},
        {"|", PyNumber_Or},          {"^", PyNumber_Xor},
    };
    static const struct {
        const char *name;
        int op;
    } compare[] = {{"==", Py_EQ}, {"!=", Py_NE}, {"<", Py_LT}, {"<=", Py_LE}, {">", Py_GT}, {">=", Py_GE}};
    QdPyHost *h = self;
    PyObject *x = qd_py_host_get(h, a), *y = b ? qd_py_host_get(h, b) : NULL;
    if (!x || (b && !y)) {
        PyErr_SetString(PyExc_RuntimeError, "bad number handle");
        return qd_py_host_error_from_exception(h, ctx);
    }
    if (strcmp(op, "neg") == 0) {
        return add_new(h, ctx, PyNumber_Negative(x), out);
    }
    if (strcmp(op, "~") == 0) {
        return add_new(h, ctx, PyNumber_Invert(x), out);
    }
    if (strcmp(op, "abs") == 0) {
        return add_new(h, ctx, PyNumber_Absolute(x), out);
    }
    if (strcmp(op, "**") == 0 && y) {
        return add_new(h, ctx, PyNumber_Power(x, y, Py_None), out);
    }
    for (size_t i = 0; y && i < sizeof(binary) / sizeof(binary[0]); i++) {
        if (strcmp(op, binary[i].name) == 0) {
            return add_new(h, ctx, binary[i].fn(x, y), out);
        }
    }
    for (size_t i = 0; y && i < sizeof(compare) / sizeof(compare[0]); i++) {
        if (strcmp(op, compare[i].name) == 0) {
            return add_new(h, ctx, PyObject_RichCompare(x, y, compare[i].op), out);
        }
    }
    PyErr_Format(PyExc_RuntimeError, "unknown number operation %s", op);
    return qd_py_host_error_from_exception(h, ctx);
}

static int
host_make_float(void *self, QdCtx *ctx, double v, QdHandle *out)
{
    return add_new(self, ctx, PyFloat_FromDouble(v), out);
}

static int
host_make_tuple(void *self, QdCtx *ctx, const QdHandle *items, uint32_t n, QdHandle *out)
{
    QdPyHost *h = self;
    PyObject *t = PyTuple_New(n);
    for (uint32_t i = 0; t && i < n; i++) {
        /* Handle 0 stands for a runtime value: the stand-in fails when Python uses it. */
        PyObject *v = items[i] ? qd_py_host_get(h, items[i]) : h->sentinel;
        PyTuple_SET_ITEM(t, i, Py_NewRef(v ? v : Py_None));
    }
    return add_new(h, ctx, t, out);
}

/* quadrants._static_value: its factory and class, imported once per host. 0 or -1 with a diag. */
static int
import_runtime_value(QdPyHost *h, QdCtx *ctx)
{
    if (h->runtime_make) {
        return 0;
    }
    PyObject *mod = PyImport_ImportModule("quadrants._static_value");
    if (mod) {
        h->runtime_make = PyObject_GetAttrString(mod, "_make");
        h->runtime_type = h->runtime_make ? PyObject_GetAttrString(mod, "RuntimeValue") : NULL;
        Py_DECREF(mod);
    }
    if (!h->runtime_make || !h->runtime_type) {
        Py_CLEAR(h->runtime_make);
        Py_CLEAR(h->runtime_type);
        return qd_py_host_error_from_exception(h, ctx);
    }
    return 0;
}

static int
host_make_runtime(void *self, QdCtx *ctx, const QdRuntimeFacts *facts, QdHandle *out)
{
    static const char *const kinds[] = {
        [QD_RUNTIME_SCALAR] = "scalar",   [QD_RUNTIME_VECTOR] = "vector",
        [QD_RUNTIME_MATRIX] = "matrix",   [QD_RUNTIME_NDARRAY] = "ndarray",
        [QD_RUNTIME_STRUCT] = "struct",   [QD_RUNTIME_OTHER] = "value",
    };
    QdPyHost *h = self;
    RETURN_IF_ERROR(import_runtime_value(h, ctx));
    PyObject *shape = facts->shape ? qd_py_host_get(h, facts->shape) : Py_None; /* borrowed */
    PyObject *members = PyDict_New();
    for (uint32_t i = 0; members && i < facts->nmembers; i++) {
        PyObject *m = qd_py_host_get(h, facts->member_values[i]); /* borrowed */
        if (PyDict_SetItemString(members, facts->member_names[i], m ? m : Py_None) < 0) {
            Py_CLEAR(members);
        }
    }
    int dtype = facts->dtype == QD_TY_COUNT_ ? -1 : (int)facts->dtype;
    PyObject *v = NULL;
    if (members) {
        v = PyObject_CallFunction(h->runtime_make, "IsiIIOOz", (unsigned)facts->index,
                                  kinds[facts->kind], dtype, (unsigned)facts->n, (unsigned)facts->m,
                                  shape ? shape : Py_None, members, facts->name);
    }
    Py_XDECREF(members);
    return add_new(h, ctx, v, out);
}

static int
host_make_str(void *self, QdCtx *ctx, const char *s, QdHandle *out)
{
    if (!s) {
        return add_new(self, ctx, Py_NewRef(Py_None), out);
    }
    return add_new(self, ctx, PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace"), out);
}

static int
host_print(void *self, QdCtx *ctx, const char *text)
{
    (void)self;
    PyObject *builtins = PyEval_GetBuiltins();
    PyObject *print = builtins ? PyDict_GetItemString(builtins, "print") : NULL;
    PyObject *r = print ? PyObject_CallFunction(print, "s", text) : NULL;
    if (!r) {
        return qd_py_host_error_from_exception((QdPyHost *)self, ctx);
    }
    Py_DECREF(r);
    return 0;
}

static int
host_warn(void *self, QdCtx *ctx, const char *category, QdLoc loc, const char *message)
{
    (void)self;
    PyObject *cls = NULL;
    PyObject *pkg = PyImport_ImportModule("quadrants");
    if (pkg) {
        cls = PyObject_GetAttrString(pkg, category);
        Py_DECREF(pkg);
    }
    if (!cls) {
        PyErr_Clear();
        cls = Py_NewRef(strcmp(category, "SyntaxWarning") == 0        ? PyExc_SyntaxWarning
                        : strcmp(category, "DeprecationWarning") == 0 ? PyExc_DeprecationWarning
                        : strcmp(category, "Warning") == 0            ? PyExc_Warning
                                                                      : PyExc_UserWarning);
    }
    PyObject *file = PyUnicode_FromString(loc.file ? loc.file : "<kernel>");
    PyObject *msg = PyUnicode_FromString(message);
    int rc = file && msg ? PyErr_WarnExplicitObject(cls, msg, file, (int)loc.line, NULL, NULL) : -1;
    Py_XDECREF(file);
    Py_XDECREF(msg);
    Py_DECREF(cls);
    if (rc < 0) {
        /* Warnings turned into errors (-W error) end the compilation. */
        return qd_py_host_error_from_exception((QdPyHost *)self, ctx);
    }
    return 0;
}

int
qd_py_host_init(QdPyHost *h, QdArena *arena, QdTypeKind default_fp, QdTypeKind default_ip)
{
    memset(h, 0, sizeof(*h));
    h->handles = PyList_New(0);
    h->sentinel = PyObject_CallNoArgs((PyObject *)&PyBaseObject_Type);
    h->ast_cache = PyDict_New();
    if (!h->handles || !h->sentinel || !h->ast_cache) {
        qd_py_host_clear(h);
        return -1;
    }
    h->arena = arena;
    h->default_fp = default_fp;
    h->default_ip = default_ip;
    QdHost *host = &h->host;
    host->self = h;
    host->lookup = host_lookup;
    host->describe = host_describe;
    host->getattr = host_getattr;
    host->getitem = host_getitem;
    host->eval = host_eval;
    host->call = host_call;
    host->to_tuple = host_to_tuple;
    host->truth = host_truth;
    host->func_ast = host_func_ast;
    host->make_int = host_make_int;
    host->parse_int = host_parse_int;
    host->number_op = host_number_op;
    host->make_float = host_make_float;
    host->make_tuple = host_make_tuple;
    host->make_str = host_make_str;
    host->make_runtime = host_make_runtime;
    host->print = host_print;
    host->warn = host_warn;
    return 0;
}

void
qd_py_host_clear(QdPyHost *h)
{
    Py_CLEAR(h->handles);
    Py_CLEAR(h->sentinel);
    Py_CLEAR(h->runtime_make);
    Py_CLEAR(h->runtime_type);
    Py_CLEAR(h->ast_cache);
    Py_CLEAR(h->first_exception);
}
