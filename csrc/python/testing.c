/* python/testing.c -- quadrants._core._testing: the IR core, reachable from Python tests.
 *
 * Text in, text out: the functions here parse textual IR, verify it, run passes by name and print
 * the result, so pytest can check the parser, the printer, the verifier and every pass on
 * hand-written .qir files (tests/ir/) without the frontend. qdopt (csrc/tools/) is the same tool
 * without Python.
 *
 * The core holds no Python objects, so the whole parse/verify/passes/print sequence runs with the
 * GIL released; the input text stays alive because the caller's arguments hold it. Errors come
 * back as the exception classes of errors.def through qd_py_raise_diag. The functions are bound
 * to the _core module object (their `self`), whose state holds those classes.
 */
#include "python.h"

#include "../ir/ir.h"
#include "../driver/driver.h"

#include <stdlib.h>
#include <string.h>

#define DEFAULT_FILENAME "<qir>"

/* One request to the IR core: what to run on the text, and what came out. */
typedef struct IrJob {
    const char *text;      /* the .qir text (UTF-8, not necessarily NUL-free) */
    size_t len;            /* its length in bytes */
    const char *filename;  /* name of the text in error messages */
    bool is_verified;      /* verify after parsing (and after every pass) */
    unsigned verify_flags; /* QdVerifyFlags for the verification after parsing */
    const char *passes;    /* comma-separated pass names to run, or NULL for none */
    bool is_printed;       /* print the module at the end */
    char *printed;         /* out: the printed module (malloc'd) when is_printed */
    QdCtx ctx;             /* out: the error when the job fails */
} IrJob;

/* Runs the job on the pure-C core; needs no GIL. 0, or -1 with job->ctx.diag set. */
static int
ir_job_run(IrJob *job)
{
    QdModule *module = NULL;
    int status = -1;

    module = qd_module_parse(&job->ctx, job->text, job->len, job->filename);
    if (module == NULL) {
        goto done;
    }
    if (job->is_verified && qd_module_verify(&job->ctx, module, job->verify_flags) < 0) {
        goto done;
    }
    if (job->passes != NULL &&
        qd_driver_run_passes(&job->ctx, module, job->passes, job->is_verified) < 0) {
        goto done;
    }
    if (job->is_printed) {
        job->printed = qd_module_print(module);
        if (job->printed == NULL) {
            qd_error(&job->ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory while printing IR");
            goto done;
        }
    }
    status = 0;
done:
    if (module != NULL) {
        qd_module_free(module);
    }
    return status;
}

/* Runs the job with the GIL released. Returns the printed text as a str when the job prints,
 * None otherwise (new reference); NULL with the job's error raised. */
static PyObject *
ir_job_run_py(PyObject *core, IrJob *job)
{
    PyObject *result = NULL;
    int status;

    qd_ctx_init(&job->ctx);
    job->printed = NULL;
    Py_BEGIN_ALLOW_THREADS
    status = ir_job_run(job);
    Py_END_ALLOW_THREADS
    if (status < 0) {
        qd_py_raise_diag(core, &job->ctx.diag);
        goto done;
    }
    if (job->is_printed) {
        result = PyUnicode_DecodeUTF8(job->printed, (Py_ssize_t)strlen(job->printed), NULL);
    } else {
        result = Py_NewRef(Py_None);
    }
done:
    free(job->printed);
    job->printed = NULL;
    return result;
}

/***** implementations: typed C arguments *****/

/* parse_print(text, filename): new reference to the printed module, NULL with an exception. */
static PyObject *
parse_print_impl(PyObject *core, const char *text, Py_ssize_t len, const char *filename)
{
    IrJob job = {.text = text, .len = (size_t)len, .filename = filename, .is_printed = true};

    return ir_job_run_py(core, &job);
}

/* verify(text, filename, concrete): new reference to None, NULL with an exception. */
static PyObject *
verify_impl(PyObject *core, const char *text, Py_ssize_t len, const char *filename,
            bool is_concrete)
{
    IrJob job = {
        .text = text,
        .len = (size_t)len,
        .filename = filename,
        .is_verified = true,
        .verify_flags = is_concrete ? QD_VERIFY_CONCRETE : QD_VERIFY_DEFAULT,
    };

    return ir_job_run_py(core, &job);
}

/* run_passes(text, passes, filename, verify): new reference to the printed result, NULL with an
 * exception. */
static PyObject *
run_passes_impl(PyObject *core, const char *text, Py_ssize_t len, const char *passes,
                const char *filename, bool is_verified)
{
    IrJob job = {
        .text = text,
        .len = (size_t)len,
        .filename = filename,
        .is_verified = is_verified,
        .verify_flags = QD_VERIFY_DEFAULT,
        .passes = passes,
        .is_printed = true,
    };

    return ir_job_run_py(core, &job);
}

/* pass_names(): new reference to a list of str, NULL with an exception. */
static PyObject *
pass_names_impl(void)
{
    PyObject *names = NULL;
    PyObject *name = NULL;

    names = PyList_New(0);
    if (names == NULL) {
        goto error;
    }
    for (const char *const *p = qd_driver_pass_names(); *p != NULL; p++) {
        name = PyUnicode_FromString(*p);
        if (name == NULL || PyList_Append(names, name) < 0) {
            goto error;
        }
        Py_CLEAR(name);
    }
    return names;
error:
    Py_XDECREF(name);
    Py_XDECREF(names);
    return NULL;
}

/***** wrappers: Python arguments to C arguments *****/

/* Converts an optional filename argument (NULL = not given). Borrowed from `obj`. */
static const char *
filename_arg(const char *func_name, PyObject *obj)
{
    Py_ssize_t len;

    if (obj == NULL) {
        return DEFAULT_FILENAME;
    }
    return qd_py_utf8_arg(func_name, "filename", obj, true, &len);
}

/* Converts an optional bool argument (NULL = not given). 0/1, or -1 with an exception. */
static int
bool_arg(PyObject *obj, bool default_value)
{
    return obj == NULL ? default_value : PyObject_IsTrue(obj);
}

PyDoc_STRVAR(
    parse_print_doc,
    "parse_print(text, filename='<qir>')\n--\n\n"
    "Parse textual IR and print it back. Raises a Quadrants*Error naming `filename` and the\n"
    "line and column of the first error.");

static PyObject *
parse_print(PyObject *core, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"text", "filename", NULL};
    PyObject *argv[2];
    const char *text;
    const char *filename;
    Py_ssize_t len;

    if (qd_py_bind_args("parse_print", names, 1, args, nargs, kwnames, argv) < 0) {
        return NULL;
    }
    text = qd_py_utf8_arg("parse_print", "text", argv[0], false, &len);
    filename = filename_arg("parse_print", argv[1]);
    if (text == NULL || filename == NULL) {
        return NULL;
    }
    return parse_print_impl(core, text, len, filename);
}

PyDoc_STRVAR(
    verify_doc,
    "verify(text, filename='<qir>', concrete=False)\n--\n\n"
    "Parse textual IR and run the verifier on it; with concrete=True also require code-generation\n"
    "readiness (no templates, unroll or generic types left). Returns None.");

static PyObject *
verify(PyObject *core, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"text", "filename", "concrete", NULL};
    PyObject *argv[3];
    const char *text;
    const char *filename;
    Py_ssize_t len;
    int is_concrete;

    if (qd_py_bind_args("verify", names, 1, args, nargs, kwnames, argv) < 0) {
        return NULL;
    }
    text = qd_py_utf8_arg("verify", "text", argv[0], false, &len);
    filename = filename_arg("verify", argv[1]);
    if (text == NULL || filename == NULL) {
        return NULL;
    }
    is_concrete = bool_arg(argv[2], false);
    if (is_concrete < 0) {
        return NULL;
    }
    return verify_impl(core, text, len, filename, is_concrete);
}

PyDoc_STRVAR(
    run_passes_doc,
    "run_passes(text, passes, filename='<qir>', verify=True)\n--\n\n"
    "Parse textual IR, verify it (when verify is true), run the comma-separated passes in order\n"
    "(verifying after each one when verify is true) and return the printed result.");

static PyObject *
run_passes(PyObject *core, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"text", "passes", "filename", "verify", NULL};
    PyObject *argv[4];
    const char *text;
    const char *passes;
    const char *filename;
    Py_ssize_t len;
    Py_ssize_t passes_len;
    int is_verified;

    if (qd_py_bind_args("run_passes", names, 2, args, nargs, kwnames, argv) < 0) {
        return NULL;
    }
    text = qd_py_utf8_arg("run_passes", "text", argv[0], false, &len);
    passes = qd_py_utf8_arg("run_passes", "passes", argv[1], true, &passes_len);
    filename = filename_arg("run_passes", argv[2]);
    if (text == NULL || passes == NULL || filename == NULL) {
        return NULL;
    }
    is_verified = bool_arg(argv[3], true);
    if (is_verified < 0) {
        return NULL;
    }
    return run_passes_impl(core, text, len, passes, filename, is_verified);
}

PyDoc_STRVAR(pass_names_doc, "pass_names()\n--\n\n"
                             "Names of the passes run_passes accepts, in pipeline order.");

static PyObject *
pass_names(PyObject *core, PyObject *Py_UNUSED(ignored))
{
    (void)core;
    return pass_names_impl();
}

static PyMethodDef testing_methods[] = {
    {"parse_print", (PyCFunction)(void (*)(void))parse_print, METH_FASTCALL | METH_KEYWORDS,
     parse_print_doc},
    {"verify", (PyCFunction)(void (*)(void))verify, METH_FASTCALL | METH_KEYWORDS, verify_doc},
    {"run_passes", (PyCFunction)(void (*)(void))run_passes, METH_FASTCALL | METH_KEYWORDS,
     run_passes_doc},
    {"pass_names", pass_names, METH_NOARGS, pass_names_doc},
    {NULL, NULL, 0, NULL},
};

int
qd_py_testing_add_methods(PyObject *testing, PyMethodDef *defs, PyObject *self)
{
    PyObject *name = PyModule_GetNameObject(testing);
    if (name == NULL) {
        return -1;
    }
    for (PyMethodDef *def = defs; def->ml_name != NULL; def++) {
        PyObject *func = PyCFunction_NewEx(def, self, name);
        if (func == NULL || PyModule_AddObjectRef(testing, def->ml_name, func) < 0) {
            Py_XDECREF(func);
            Py_DECREF(name);
            return -1;
        }
        Py_DECREF(func);
    }
    Py_DECREF(name);
    return 0;
}

PyObject *
qd_py_testing_module_new(PyObject *core)
{
    PyObject *core_name = PyModule_GetNameObject(core);
    PyObject *name = core_name ? PyUnicode_FromFormat("%U._testing", core_name) : NULL;
    PyObject *testing = name ? PyModule_NewObject(name) : NULL;
    Py_XDECREF(name);
    Py_XDECREF(core_name);
    if (testing == NULL ||
        PyModule_AddStringConstant(testing, "__doc__", "Hooks into the IR core for tests.") < 0 ||
        qd_py_testing_add_methods(testing, testing_methods, core) < 0 ||
        qd_py_testing_add_run(testing) < 0 ||
        qd_py_testing_add_methods(testing, qd_py_testing_cuda_methods, core) < 0 ||
        qd_py_testing_add_methods(testing, qd_py_testing_vulkan_methods, core) < 0 ||
        qd_py_testing_add_methods(testing, qd_py_testing_glsl_methods, core) < 0) {
        Py_XDECREF(testing);
        return NULL;
    }
    return testing;
}
