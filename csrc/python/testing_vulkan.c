/* python/testing_vulkan.c -- the Vulkan runtime's and glslang's test hooks in
 * quadrants._core._testing.
 *
 *     glsl_to_spirv(source, what="<glsl>") -> bytes
 * compiles a GLSL compute shader with glslang (codegen/glsl/glslang.c), no device needed;
 * errors raise QuadrantsCompilationError with glslang's log and the offending lines.
 *
 *     vulkan_run_glsl(sources, groups, buffers, with_seconds=False) -> list[bytes]
 * runs hand-written shaders through the whole runtime (tests/vulkan/test_runtime.py): each
 * source becomes a pipeline, every buffer (bytes-like) a device buffer holding its bytes, and a
 * parameter buffer holds their u64 device addresses in order; dispatch i runs pipeline i on
 * groups[i] workgroups, all in one qd_vk_run whose push constant is the parameter buffer's
 * address. Returns the buffers' bytes afterwards (with_seconds: and the launch's seconds, as
 * a tuple). Device errors raise QuadrantsRuntimeError. The GIL is released for the work.
 */
#include "python.h"

#include "../driver/driver.h"
#include "../runtime/vulkan/vulkan.h"

#include <stdlib.h>
#include <string.h>

/* glsl_to_spirv(source, what): new reference to the SPIR-V bytes, NULL with an exception. */
static PyObject *
glsl_to_spirv(PyObject *core, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"source", "what", NULL};
    PyObject *bound[2] = {NULL};
    Py_ssize_t len = 0;
    uint32_t *words = NULL;
    size_t nwords = 0;
    QdCtx ctx;
    int rc;

    if (qd_py_bind_args("glsl_to_spirv", names, 1, args, nargs, kwnames, bound) < 0) {
        return NULL;
    }
    const char *source = qd_py_utf8_arg("glsl_to_spirv", "source", bound[0], true, &len);
    const char *what =
        bound[1] ? qd_py_utf8_arg("glsl_to_spirv", "what", bound[1], true, &len) : "<glsl>";
    if (source == NULL || what == NULL) {
        return NULL;
    }
    qd_ctx_init(&ctx);
    Py_BEGIN_ALLOW_THREADS
    rc = qd_glsl_to_spirv(&ctx, source, what, &words, &nwords);
    Py_END_ALLOW_THREADS
    if (rc < 0) {
        qd_py_raise_diag(core, &ctx.diag);
        return NULL;
    }
    PyObject *result =
        PyBytes_FromStringAndSize((const char *)words, (Py_ssize_t)(nwords * sizeof(uint32_t)));
    free(words);
    return result;
}

/* One vulkan_run_glsl call, in plain C (run without the GIL). */
typedef struct GlslRun {
    uint32_t nsources;        /* shaders = dispatches */
    const char **sources;     /* their UTF-8 text (borrowed from the caller's tuple) */
    uint32_t *groups;         /* workgroups of each dispatch */
    uint32_t nbuffers;        /* device buffers */
    Py_buffer *inputs;        /* their initial bytes (exported by the caller's objects) */
    QdVkPipeline **pipelines; /* out: nsources pipelines (freed by run_release) */
    QdVkBuffer *buffers;      /* out: nbuffers device buffers (freed by run_release) */
    QdVkBuffer params;        /* out: the parameter buffer */
    uint8_t **outputs;        /* out: the buffers' bytes after the launch (malloc) */
    double seconds;           /* out: the launch's time */
    QdCtx ctx;                /* the error */
} GlslRun;

/* Compiles, uploads, runs and downloads. 0, or -1 with run->ctx set. */
static int
run_glsl(GlslRun *run)
{
    QdCtx *ctx = &run->ctx;
    char what[64];

    for (uint32_t i = 0; i < run->nsources; i++) {
        uint32_t *words = NULL;
        size_t nwords = 0;
        snprintf(what, sizeof(what), "shader %u", i);
        RETURN_IF_ERROR(qd_glsl_to_spirv(ctx, run->sources[i], what, &words, &nwords));
        int rc = qd_vk_pipeline_new(ctx, words, nwords, what, &run->pipelines[i]);
        free(words);
        RETURN_IF_ERROR(rc);
    }
    uint64_t *addresses = calloc(run->nbuffers ? run->nbuffers : 1, sizeof(uint64_t));
    if (addresses == NULL) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory");
    }
    int rc = 0;
    for (uint32_t i = 0; rc == 0 && i < run->nbuffers; i++) {
        size_t len = (size_t)run->inputs[i].len;
        rc = qd_vk_alloc(ctx, len, &run->buffers[i]);
        if (rc == 0) {
            rc = qd_vk_upload(ctx, &run->buffers[i], 0, run->inputs[i].buf, len);
            addresses[i] = run->buffers[i].address;
        }
    }
    size_t params_bytes = (run->nbuffers ? run->nbuffers : 1) * sizeof(uint64_t);
    if (rc == 0) {
        rc = qd_vk_alloc(ctx, params_bytes, &run->params);
    }
    if (rc == 0) {
        rc = qd_vk_upload(ctx, &run->params, 0, addresses, params_bytes);
    }
    free(addresses);
    RETURN_IF_ERROR(rc);

    QdVkDispatch *dispatches = calloc(run->nsources ? run->nsources : 1, sizeof(*dispatches));
    if (dispatches == NULL) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory");
    }
    for (uint32_t i = 0; i < run->nsources; i++) {
        dispatches[i] = (QdVkDispatch){.pipeline = run->pipelines[i], .groups = run->groups[i]};
    }
    rc = qd_vk_run(ctx, dispatches, run->nsources, run->params.address, &run->seconds);
    free(dispatches);
    for (uint32_t i = 0; rc == 0 && i < run->nbuffers; i++) {
        size_t len = (size_t)run->inputs[i].len;
        run->outputs[i] = malloc(len ? len : 1);
        if (run->outputs[i] == NULL) {
            return qd_error(ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory");
        }
        rc = qd_vk_download(ctx, run->outputs[i], &run->buffers[i], 0, len);
    }
    return rc;
}

/* Frees the device objects and outputs of a run (needs no GIL). */
static void
run_release(GlslRun *run)
{
    for (uint32_t i = 0; run->pipelines && i < run->nsources; i++) {
        qd_vk_pipeline_free(run->pipelines[i]);
    }
    for (uint32_t i = 0; run->buffers && i < run->nbuffers; i++) {
        qd_vk_free(&run->buffers[i]);
    }
    qd_vk_free(&run->params);
    for (uint32_t i = 0; run->outputs && i < run->nbuffers; i++) {
        free(run->outputs[i]);
    }
    free(run->pipelines);
    free(run->buffers);
    free(run->outputs);
    free(run->sources);
    free(run->groups);
}

/* The list of output bytes (new reference; NULL with an exception set). */
static PyObject *
outputs_list(const GlslRun *run)
{
    PyObject *list = PyList_New(run->nbuffers);
    for (uint32_t i = 0; list && i < run->nbuffers; i++) {
        PyObject *b = PyBytes_FromStringAndSize((const char *)run->outputs[i], run->inputs[i].len);
        if (b == NULL) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, i, b);
    }
    return list;
}

/* vulkan_run_glsl(sources, groups, buffers, with_seconds): new reference to the list of output
 * bytes (or the (list, seconds) tuple), NULL with an exception. */
static PyObject *
vulkan_run_glsl(PyObject *core, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"sources", "groups", "buffers", "with_seconds", NULL};
    PyObject *bound[4] = {NULL};
    PyObject *sources = NULL, *groups = NULL, *buffers = NULL, *result = NULL;
    GlslRun run = {0};
    uint32_t nexported = 0;
    int rc;

    if (qd_py_bind_args("vulkan_run_glsl", names, 3, args, nargs, kwnames, bound) < 0) {
        return NULL;
    }
    int with_seconds = bound[3] ? PyObject_IsTrue(bound[3]) : 0;
    /* Tuples: the items stay alive (and the strings unchanged) while the GIL is released. */
    sources = PySequence_Tuple(bound[0]);
    groups = sources ? PySequence_Tuple(bound[1]) : NULL;
    buffers = groups ? PySequence_Tuple(bound[2]) : NULL;
    if (buffers == NULL || with_seconds < 0) {
        goto done;
    }
    if (PyTuple_GET_SIZE(groups) != PyTuple_GET_SIZE(sources)) {
        PyErr_SetString(PyExc_ValueError, "vulkan_run_glsl: one group count per source");
        goto done;
    }
    run.nsources = (uint32_t)PyTuple_GET_SIZE(sources);
    run.nbuffers = (uint32_t)PyTuple_GET_SIZE(buffers);
    run.sources = calloc(run.nsources + 1, sizeof(*run.sources));
    run.groups = calloc(run.nsources + 1, sizeof(*run.groups));
    run.pipelines = calloc(run.nsources + 1, sizeof(*run.pipelines));
    run.buffers = calloc(run.nbuffers + 1, sizeof(*run.buffers));
    run.inputs = calloc(run.nbuffers + 1, sizeof(*run.inputs));
    run.outputs = calloc(run.nbuffers + 1, sizeof(*run.outputs));
    if (!run.sources || !run.groups || !run.pipelines || !run.buffers || !run.inputs ||
        !run.outputs) {
        PyErr_NoMemory();
        goto done;
    }
    for (uint32_t i = 0; i < run.nsources; i++) {
        Py_ssize_t len = 0;
        run.sources[i] = qd_py_utf8_arg("vulkan_run_glsl", "sources[i]",
                                        PyTuple_GET_ITEM(sources, i), true, &len);
        unsigned long n = PyLong_AsUnsignedLong(PyTuple_GET_ITEM(groups, i));
        if (run.sources[i] == NULL || PyErr_Occurred()) {
            goto done;
        }
        if (n > UINT32_MAX) {
            PyErr_SetString(PyExc_OverflowError, "vulkan_run_glsl: a group count exceeds 2^32-1");
            goto done;
        }
        run.groups[i] = (uint32_t)n;
    }
    for (; nexported < run.nbuffers; nexported++) {
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(buffers, nexported), &run.inputs[nexported],
                               PyBUF_SIMPLE) < 0) {
            goto done;
        }
    }
    qd_ctx_init(&run.ctx);
    Py_BEGIN_ALLOW_THREADS
    rc = run_glsl(&run);
    Py_END_ALLOW_THREADS
    if (rc < 0) {
        qd_py_raise_diag(core, &run.ctx.diag);
        goto done;
    }
    result = outputs_list(&run);
    if (result != NULL && with_seconds) {
        PyObject *pair = Py_BuildValue("(Od)", result, run.seconds);
        Py_SETREF(result, pair);
    }
done:
    Py_BEGIN_ALLOW_THREADS
    run_release(&run);
    Py_END_ALLOW_THREADS
    for (uint32_t i = 0; i < nexported; i++) {
        PyBuffer_Release(&run.inputs[i]);
    }
    free(run.inputs);
    Py_XDECREF(sources);
    Py_XDECREF(groups);
    Py_XDECREF(buffers);
    return result;
}

PyMethodDef qd_py_testing_vulkan_methods[] = {
    {"glsl_to_spirv", (PyCFunction)(void (*)(void))glsl_to_spirv, METH_FASTCALL | METH_KEYWORDS,
     "glsl_to_spirv(source, what='<glsl>') -> SPIR-V bytes"},
    {"vulkan_run_glsl", (PyCFunction)(void (*)(void))vulkan_run_glsl, METH_FASTCALL | METH_KEYWORDS,
     "vulkan_run_glsl(sources, groups, buffers, with_seconds=False) -> list of buffer bytes"},
    {NULL, NULL, 0, NULL},
};
