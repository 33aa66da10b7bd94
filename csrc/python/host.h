/* python/host.h -- the host interface of the frontend, implemented over Python objects.
 *
 * One QdPyHost lives for one kernel compilation. It converts Python `ast` trees into the C AST
 * of frontend/frontend.h and answers the frontend's questions about Python values (QdHost).
 * Python values cross into the core only as QdHandles: indices into `handles`, a list that keeps
 * every value alive until the compilation ends (qd_py_host_clear).
 */
#ifndef QD_PYTHON_HOST_H
#define QD_PYTHON_HOST_H

#include "python.h"

#include "../driver/driver.h"

typedef struct QdPyHost {
    QdHost host;           /* the callbacks; host.self points back here */
    PyObject *handles;     /* list: handle i is handles[i - 1] (strong references) */
    PyObject *sentinel;    /* stands for runtime variables in static evaluation */
    PyObject *runtime_make; /* quadrants._static_value._make, imported on first use, or NULL */
    PyObject *runtime_type; /* quadrants._static_value.RuntimeValue (with runtime_make) */
    PyObject *ast_cache;   /* dict: id(func) -> converted AST (capsules over the arena) */
    QdTypeKind default_fp; /* what `float` means */
    QdTypeKind default_ip; /* what `int` means */
    QdArena *arena;        /* where converted ASTs and strings go */
    PyObject *first_exception; /* the first Python exception user code raised, or NULL */
} QdPyHost;

/* Prepares a host; -1 with an exception set on failure. */
int qd_py_host_init(QdPyHost *h, QdArena *arena, QdTypeKind default_fp, QdTypeKind default_ip);
/* Releases every handle. */
void qd_py_host_clear(QdPyHost *h);
/* A new handle for `obj` (borrowed; the host takes its own reference); 0 with an exception set. */
QdHandle qd_py_host_add(QdPyHost *h, PyObject *obj);
/* The object of a handle (borrowed), or NULL. */
PyObject *qd_py_host_get(QdPyHost *h, QdHandle handle);
/* Converts an `ast.FunctionDef` (borrowed) from source file `filename` into the C AST. -1 with
 * ctx->diag set (unsupported input never crashes). */
int qd_py_host_convert_function(QdPyHost *h, QdCtx *ctx, PyObject *funcdef, const char *filename,
                                QdAst **out);
/* Records the pending Python exception as a QuadrantsCompilationError diag (the reference
 * wraps non-Quadrants exceptions raised while tracing this way) and keeps the first one in
 * h->first_exception (h may be NULL); returns -1. */
int qd_py_host_error_from_exception(QdPyHost *h, QdCtx *ctx);

#endif /* QD_PYTHON_HOST_H */
