/* python/testing_glsl.c -- the GLSL code generator's test hook in quadrants._core._testing.
 *
 *     qir_to_glsl(text, kernel, options=None, passes="")
 *         -> dict(tasks=[dict(source, block_dim, is_serial, reduces, name)], fields=[names],
 *                 tmps_size=int, nresults=int, asserts=[messages], assert_kinds=[str])
 * compiles a QIR kernel (the final QIR of a Python kernel, or hand-written QIR after `passes`)
 * to the GLSL compute shaders of the Vulkan backend, without any device, so tests can check
 * the text and validate it with glslangValidator (tests/codegen/glsl/). `options` sets fields
 * of QdGlslOptions by name (default_block_dim, subgroup_size, fast_math, and the device
 * features of abi/vk_features.def). Compile errors raise the class of their diag.
 */
#include "python.h"

#include "../driver/driver.h"

#include <stdlib.h>
#include <string.h>

/* Sets the options named in dict `options` (borrowed). 0, or -1 with an exception set. */
static int
glsl_options(PyObject *options, QdGlslOptions *opts)
{
    struct {
        const char *name;
        bool *flag;
        uint32_t *number;
    } fields[] = {
        {"default_block_dim", NULL, &opts->default_block_dim},
        {"subgroup_size", NULL, &opts->subgroup_size},
        {"fast_math", &opts->fast_math, NULL},
#define QD_VK_FEATURE(name, bit, dflt, source) {#name, &opts->features.name, NULL},
#include "../abi/vk_features.def"
#undef QD_VK_FEATURE
    };
    PyObject *key, *value;
    Py_ssize_t pos = 0;

    qd_glsl_options_default(opts);
    while (options != NULL && PyDict_Next(options, &pos, &key, &value)) {
        const char *name = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
        size_t i = 0;
        while (name != NULL && i < QD_ARRAY_LEN(fields) && strcmp(fields[i].name, name) != 0) {
            i++;
        }
        if (name == NULL || i == QD_ARRAY_LEN(fields)) {
            PyErr_Format(PyExc_ValueError, "qir_to_glsl: unknown option %R", key);
            return -1;
        }
        if (fields[i].flag != NULL) {
            int truth = PyObject_IsTrue(value);
            if (truth < 0) {
                return -1;
            }
            *fields[i].flag = truth != 0;
        } else {
            unsigned long n = PyLong_AsUnsignedLong(value);
            if (n == (unsigned long)-1 && PyErr_Occurred()) {
                return -1;
            }
            *fields[i].number = (uint32_t)n;
        }
    }
    return 0;
}

/* A list of n str from C strings (new reference). */
static PyObject *
string_list(char **strings, uint32_t n)
{
    PyObject *list = PyList_New(n);
    for (uint32_t i = 0; list != NULL && i < n; i++) {
        PyObject *s = PyUnicode_FromString(strings[i]);
        if (s == NULL) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, i, s);
    }
    return list;
}

/* The compiled kernel as a dict (new reference). */
static PyObject *
describe(const QdGlslKernel *k)
{
    PyObject *tasks = PyList_New(k->ntasks);
    PyObject *fields = string_list(k->fields, k->nfields);
    PyObject *asserts = string_list(k->asserts, k->nasserts);
    PyObject *kinds = string_list(k->assert_kinds, k->nasserts);
    PyObject *result = NULL;

    for (uint32_t t = 0; tasks != NULL && t < k->ntasks; t++) {
        const QdGlslTask *task = &k->tasks[t];
        PyObject *item = Py_BuildValue("{s:s,s:I,s:O,s:O,s:s}", "source", task->source,
                                       "block_dim", task->block_dim, "is_serial",
                                       task->is_serial ? Py_True : Py_False, "reduces",
                                       task->reduces ? Py_True : Py_False, "name", task->name);
        if (item == NULL) {
            goto done;
        }
        PyList_SET_ITEM(tasks, t, item);
    }
    if (tasks != NULL && fields != NULL && asserts != NULL && kinds != NULL) {
        result = Py_BuildValue("{s:O,s:O,s:I,s:I,s:O,s:O}", "tasks", tasks, "fields", fields,
                               "tmps_size", k->tmps_size, "nresults", k->nresults, "asserts",
                               asserts, "assert_kinds", kinds);
    }
done:
    Py_XDECREF(tasks);
    Py_XDECREF(fields);
    Py_XDECREF(asserts);
    Py_XDECREF(kinds);
    return result;
}

/* The code generation of one kernel of module m, run without the GIL. */
static int
compile_glsl(QdCtx *ctx, QdModule *m, const char *kernel, const QdGlslOptions *opts,
             QdGlslKernel *out)
{
    QdFunc *f = qd_module_find_func(m, kernel);
    if (f == NULL || f->kind != QD_FUNC_KERNEL) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_COMPILATION, "no kernel @%s in the module", kernel);
    }
    if (qd_module_verify(ctx, m, QD_VERIFY_CONCRETE) < 0) {
        return -1;
    }
    uint32_t *offsets = calloc(f->nparams + 1, sizeof(uint32_t));
    uint32_t args_size = 0;
    if (offsets == NULL) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory");
    }
    qd_arg_layout(f, offsets, &args_size);
    int rc = qd_glsl_emit(ctx, m, kernel, offsets, args_size, opts, out);
    free(offsets);
    return rc;
}

static PyObject *
qir_to_glsl(PyObject *core, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"text", "kernel", "options", "passes", NULL};
    PyObject *bound[4] = {NULL};
    Py_ssize_t text_len = 0, name_len = 0, passes_len = 0;
    QdGlslKernel k;
    QdGlslOptions opts;
    QdModule *m = NULL;
    PyObject *result = NULL;
    QdCtx ctx;
    int rc;

    memset(&k, 0, sizeof(k));
    if (qd_py_bind_args("qir_to_glsl", names, 2, args, nargs, kwnames, bound) < 0) {
        return NULL;
    }
    const char *text = qd_py_utf8_arg("qir_to_glsl", "text", bound[0], false, &text_len);
    const char *kernel =
        text ? qd_py_utf8_arg("qir_to_glsl", "kernel", bound[1], true, &name_len) : NULL;
    const char *passes =
        bound[3] ? qd_py_utf8_arg("qir_to_glsl", "passes", bound[3], true, &passes_len) : "";
    if (text == NULL || kernel == NULL || passes == NULL) {
        return NULL;
    }
    PyObject *options = bound[2] && bound[2] != Py_None ? bound[2] : NULL;
    if (options && !PyDict_Check(options)) {
        PyErr_SetString(PyExc_TypeError, "qir_to_glsl: options must be a dict");
        return NULL;
    }
    if (glsl_options(options, &opts) < 0) {
        return NULL;
    }
    qd_ctx_init(&ctx);
    Py_BEGIN_ALLOW_THREADS
    m = qd_module_parse(&ctx, text, (size_t)text_len, "<qir>");
    rc = m == NULL || (passes[0] != '\0' && qd_driver_run_passes(&ctx, m, passes, true) < 0)
             ? -1
             : compile_glsl(&ctx, m, kernel, &opts, &k);
    Py_END_ALLOW_THREADS
    if (rc < 0) {
        qd_py_raise_diag(core, &ctx.diag);
    } else {
        result = describe(&k);
        qd_glsl_kernel_release(&k);
    }
    qd_module_free(m);
    return result;
}

PyMethodDef qd_py_testing_glsl_methods[] = {
    {"qir_to_glsl", (PyCFunction)(void (*)(void))qir_to_glsl, METH_FASTCALL | METH_KEYWORDS,
     "qir_to_glsl(text, kernel, options=None, passes='') -> dict with the GLSL of every task"},
    {NULL, NULL, 0, NULL},
};
