/* python/cache.c -- the offline cache as the Python layer sees it.
 *
 * Compile options (quadrants/_runtime.py compile_options) configure it per compile:
 * "offline_cache" (bool), "offline_cache_file_path", "offline_cache_max_size_of_files",
 * "offline_cache_cleaning_policy" ("lru"; "never" disables eviction),
 * "offline_cache_cleaning_factor" and "compiler_id" (what identifies this build of the core:
 * quadrants/_cache.py). The module state keeps one QdCache, reconfigured when they change.
 *
 * Module functions: cache_stat(path) -> (entries, bytes), cache_clear(path) -> removed,
 * cache_counters() -> {"hits", "misses", "writes", "rejected"} of this process's cache.
 */
#include "python.h"

#include "../driver/driver.h"

#include <stdlib.h>
#include <string.h>

QdCache *
qd_py_cache_for(QdPyState *state, PyObject *options, const char **compiler_id)
{
    *compiler_id = NULL;
    PyObject *on = options ? PyDict_GetItemString(options, "offline_cache") : NULL;
    PyObject *path = options ? PyDict_GetItemString(options, "offline_cache_file_path") : NULL;
    PyObject *id = options ? PyDict_GetItemString(options, "compiler_id") : NULL;
    if (on == NULL || PyObject_IsTrue(on) != 1 || path == NULL || !PyUnicode_Check(path) ||
        id == NULL || !PyUnicode_Check(id)) {
        PyErr_Clear();
        return NULL;
    }
    const char *dir = PyUnicode_AsUTF8(path);
    *compiler_id = PyUnicode_AsUTF8(id);
    if (dir == NULL || *compiler_id == NULL || dir[0] == '\0') {
        PyErr_Clear();
        return NULL;
    }
    PyObject *v = PyDict_GetItemString(options, "offline_cache_max_size_of_files");
    uint64_t max_bytes = v && PyLong_Check(v) ? PyLong_AsUnsignedLongLongMask(v) : 100u << 20;
    v = PyDict_GetItemString(options, "offline_cache_cleaning_policy");
    if (v && PyUnicode_Check(v) && PyUnicode_CompareWithASCIIString(v, "never") == 0) {
        max_bytes = 0;
    }
    v = PyDict_GetItemString(options, "offline_cache_cleaning_factor");
    double factor = v && PyNumber_Check(v) ? PyFloat_AsDouble(v) : 0.25;
    PyErr_Clear();
    if (state->cache == NULL) {
        state->cache = calloc(1, sizeof(QdCache));
        if (state->cache == NULL) {
            return NULL;
        }
    }
    QdCache *c = state->cache;
    if (strcmp(c->dir, dir) != 0 || c->max_bytes != max_bytes || c->cleaning_factor != factor) {
        QdCtx ctx;
        qd_ctx_init(&ctx);
        QdCache fresh;
        if (qd_cache_init(&ctx, &fresh, dir, max_bytes, factor) < 0) {
            return NULL; /* a path too long: no cache */
        }
        fresh.hits = c->hits;
        fresh.misses = c->misses;
        fresh.writes = c->writes;
        fresh.rejected = c->rejected;
        *c = fresh;
    }
    return c;
}

void
qd_py_cache_free(QdPyState *state)
{
    free(state->cache);
    state->cache = NULL;
}

int
qd_py_source_key(PyObject *obj, QdDigest *out)
{
    if (obj == NULL || obj == Py_None) {
        return 0;
    }
    char *data;
    Py_ssize_t len;
    if (!PyBytes_Check(obj) || PyBytes_AsStringAndSize(obj, &data, &len) < 0 ||
        len != QD_DIGEST_BYTES) {
        PyErr_SetString(PyExc_TypeError, "a source key is 32 bytes");
        return -1;
    }
    memcpy(out->bytes, data, QD_DIGEST_BYTES);
    return 1;
}

/* A cache over `path` for stat and clear (no size bound). */
static int
cache_at(PyObject *path, QdCache *cache)
{
    Py_ssize_t len;
    const char *dir = qd_py_utf8_arg("cache", "path", path, true, &len);
    if (dir == NULL) {
        return -1;
    }
    QdCtx ctx;
    qd_ctx_init(&ctx);
    if (qd_cache_init(&ctx, cache, dir, 0, 0) < 0) {
        PyErr_SetString(PyExc_ValueError, ctx.diag.message);
        return -1;
    }
    return 0;
}

static PyObject *
core_cache_stat(PyObject *module, PyObject *path)
{
    (void)module;
    QdCache cache;
    if (cache_at(path, &cache) < 0) {
        return NULL;
    }
    uint64_t entries, bytes;
    Py_BEGIN_ALLOW_THREADS
    qd_cache_stat(&cache, &entries, &bytes);
    Py_END_ALLOW_THREADS
    return Py_BuildValue("(KK)", (unsigned long long)entries, (unsigned long long)bytes);
}

static PyObject *
core_cache_clear(PyObject *module, PyObject *path)
{
    (void)module;
    QdCache cache;
    if (cache_at(path, &cache) < 0) {
        return NULL;
    }
    uint64_t removed;
    Py_BEGIN_ALLOW_THREADS
    removed = qd_cache_clear(&cache);
    Py_END_ALLOW_THREADS
    return PyLong_FromUnsignedLongLong(removed);
}

static PyObject *
core_cache_counters(PyObject *module, PyObject *unused)
{
    (void)unused;
    QdCache *c = qd_py_state(module)->cache;
    QdCache zero = {0};
    if (c == NULL) {
        c = &zero;
    }
    return Py_BuildValue("{sKsKsKsK}", "hits", (unsigned long long)c->hits, "misses",
                         (unsigned long long)c->misses, "writes", (unsigned long long)c->writes,
                         "rejected", (unsigned long long)c->rejected);
}

static PyMethodDef cache_methods[] = {
    {"cache_stat", core_cache_stat, METH_O, "cache_stat(path) -> (entries, bytes)"},
    {"cache_clear", core_cache_clear, METH_O, "cache_clear(path) -> entries removed"},
    {"cache_counters", core_cache_counters, METH_NOARGS,
     "hits, misses, writes and rejected entries of this process's offline cache"},
    {NULL, NULL, 0, NULL},
};

int
qd_py_cache_add(PyObject *module)
{
    return PyModule_AddFunctions(module, cache_methods);
}
