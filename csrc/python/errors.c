/* python/errors.c -- turning the core's QdDiag into a Python exception.
 *
 * The core reports its first error as a QdDiag (kind, message, file/line/col) and returns -1 or
 * NULL; the Python wrapper that called it hands the diag to qd_py_raise_diag, which raises the
 * class errors.def names for the kind (classes live in the module state, see module.c). The
 * message reads "file:line:col: message", the same text tools and golden tests print, and the
 * instance carries the location as attributes so tests and tools need not parse the message.
 */
#include "python.h"

#include <string.h>

/* Prefix of the message of INTERNAL errors: a broken invariant of the compiler, not user error. */
#define INTERNAL_PREFIX "internal compiler error: "

/* An unsigned location part as a Python int, or None when 0 (unknown). New reference. */
static PyObject *
location_number(uint32_t n)
{
    return n ? PyLong_FromUnsignedLong(n) : Py_NewRef(Py_None);
}

/* Builds the message "file:line:col: message" (INTERNAL: with INTERNAL_PREFIX before the
 * message). Bytes that are not UTF-8 (the core may quote bad input) decode as U+FFFD.
 * Returns a new reference, NULL with an exception set. */
static PyObject *
diag_message(const QdDiag *diag, bool is_internal)
{
    QdDiag location = *diag;
    char prefix[QD_DIAG_FILE_MAX + 64];

    /* The location part as qd_diag_format writes it: formatting an empty message leaves
     * "file:line:col: " (or nothing when the location is unknown). */
    location.message[0] = '\0';
    qd_diag_format(&location, prefix, sizeof(prefix));
    return PyUnicode_FromFormat("%s%s%s", prefix, is_internal ? INTERNAL_PREFIX : "",
                                diag->message);
}

int
qd_py_raise_diag(PyObject *module, const QdDiag *diag)
{
    QdPyState *state = qd_py_state(module);
    QdErrKind kind = diag->kind;
    PyObject *cls = NULL; /* borrowed from the module state */
    PyObject *message = NULL;
    PyObject *exc = NULL;
    PyObject *filename = NULL;
    PyObject *lineno = NULL;
    PyObject *col = NULL;

    if (kind <= QD_ERR_NONE || kind >= QD_ERR_COUNT_) {
        /* A failure without a recorded error is itself a compiler bug. */
        kind = QD_ERR_INTERNAL;
        message = PyUnicode_FromString(INTERNAL_PREFIX "operation failed without a diagnostic");
    } else {
        message = diag_message(diag, kind == QD_ERR_INTERNAL);
    }
    cls = state->error_classes[kind];
    if (message == NULL) {
        goto done;
    }
    exc = PyObject_CallOneArg(cls, message);
    if (exc == NULL) {
        goto done;
    }
    filename = diag->file[0]
                   ? PyUnicode_DecodeUTF8(diag->file, (Py_ssize_t)strlen(diag->file), "replace")
                   : Py_NewRef(Py_None);
    lineno = location_number(diag->line);
    col = location_number(diag->col);
    if (filename == NULL || lineno == NULL || col == NULL ||
        PyObject_SetAttrString(exc, "filename", filename) < 0 ||
        PyObject_SetAttrString(exc, "lineno", lineno) < 0 ||
        PyObject_SetAttrString(exc, "col", col) < 0) {
        goto done;
    }
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
done:
    Py_XDECREF(col);
    Py_XDECREF(lineno);
    Py_XDECREF(filename);
    Py_XDECREF(exc);
    Py_XDECREF(message);
    return -1;
}
