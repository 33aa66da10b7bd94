/* python/callargs.c -- argument binding for functions of the METH_FASTCALL | METH_KEYWORDS kind.
 *
 * Each Python-visible function is a thin wrapper: it binds its arguments with qd_py_bind_args,
 * converts them to C values with the helpers here, and calls a `*_impl` function that takes only
 * typed C arguments (the shape Argument Clinic generates, written with public API only). The
 * messages follow CPython's for the same mistakes, so a bad call reads like any builtin's.
 */
#include "python.h"

#include <string.h>

/* Index of the parameter called `key` (a str), or -1 when there is none. */
static int
find_param(const char *const *names, int nparams, PyObject *key)
{
    for (int i = 0; i < nparams; i++) {
        if (PyUnicode_CompareWithASCIIString(key, names[i]) == 0) {
            return i;
        }
    }
    return -1;
}

int
qd_py_bind_args(const char *func_name, const char *const *names, int nrequired,
                PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject **out)
{
    int nparams = 0;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;

    while (names[nparams] != NULL) {
        out[nparams++] = NULL;
    }
    if (nargs > nparams) {
        PyErr_Format(PyExc_TypeError, "%s() takes at most %d arguments (%zd given)", func_name,
                     nparams, nargs);
        return -1;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) {
        out[i] = args[i];
    }
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, k);
        int i = find_param(names, nparams, key);
        if (i < 0) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'", func_name,
                         key);
            return -1;
        }
        if (out[i] != NULL) {
            PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'", func_name,
                         names[i]);
            return -1;
        }
        out[i] = args[nargs + k];
    }
    for (int i = 0; i < nrequired; i++) {
        if (out[i] == NULL) {
            PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s' (pos %d)", func_name,
                         names[i], i + 1);
            return -1;
        }
    }
    return 0;
}

const char *
qd_py_utf8_arg(const char *func_name, const char *param, PyObject *obj, bool no_nul,
               Py_ssize_t *len)
{
    const char *text;

    if (!PyUnicode_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s() argument '%s' must be str, not %.100s", func_name,
                     param, Py_TYPE(obj)->tp_name);
        return NULL;
    }
    text = PyUnicode_AsUTF8AndSize(obj, len);
    if (text != NULL && no_nul && strlen(text) != (size_t)*len) {
        PyErr_Format(PyExc_ValueError, "%s() argument '%s' must not contain NUL characters",
                     func_name, param);
        return NULL;
    }
    return text;
}
