/* python/testing_cuda.c -- the CUDA code generator's test hooks in quadrants._core._testing.
 *
 *     qir_to_ptx(text, kernel, sm=90, passes="instantiate,inline,nn_lower,constfold,dce", options=None)
 *         -> dict(ptx=str, symbol=str, tasks=[(entry, block_dim, is_range)], fields=[names],
 *                 asserts=[messages], args_size=int, tmps_size=int, nresults=int, has_print)
 * compiles a hand-written QIR kernel to PTX for sm_<sm> without any GPU or driver, so CI can
 * check the generated code with ptxas (tests/codegen/test_ptx.py). `options` as for
 * compile_kernel (opt_level, fast_math, default_gpu_block_dim, print_kernel_*). Compile errors
 * raise the class of their diag.
 *
 *     compile_qir_cuda(text, kernel, fields=None, passes=..., options=None) -> DeviceKernel
 * compiles and loads it on the GPU (tests/cuda run the tests of tests/codegen through it): the
 * kernel takes one argument per QIR parameter, NumPy arrays for ndarrays (copied in and
 * back) or DeviceBuffers; `fields` maps field names to DeviceBuffers.
 *
 *     cuda_raw_launch_us(kernel, args, iterations) -> float
 * the host time of one bare cuLaunchKernel of a CUDA kernel's first task, from a C loop
 * (benchmarks/cuda_bench.py compares the full launch path with it).
 */
#include "device_kernel.h"


#define DEFAULT_PASSES QD_DRIVER_TEST_PASSES

/* The compiled kernel's facts as a dict (new reference). */
static PyObject *
describe(const QdNvptxKernel *k)
{
    PyObject *tasks = PyList_New(k->layout.ntasks);
    PyObject *fields = PyList_New(k->nfields);
    PyObject *asserts = PyList_New(k->nasserts);
    PyObject *result = NULL;

    for (uint32_t t = 0; tasks && t < k->layout.ntasks; t++) {
        PyObject *item = Py_BuildValue("(sIO)", k->layout.tasks[t].entry, k->layout.tasks[t].block_dim,
                                       k->layout.tasks[t].grain ? Py_True : Py_False);
        if (item == NULL) {
            goto done;
        }
        PyList_SET_ITEM(tasks, t, item);
    }
    for (uint32_t i = 0; fields && i < k->nfields; i++) {
        PyObject *s = PyUnicode_FromString(k->fields[i]);
        if (s == NULL) {
            goto done;
        }
        PyList_SET_ITEM(fields, i, s);
    }
    for (uint32_t i = 0; asserts && i < k->nasserts; i++) {
        PyObject *s = PyUnicode_FromString(k->asserts[i]);
        if (s == NULL) {
            goto done;
        }
        PyList_SET_ITEM(asserts, i, s);
    }
    if (tasks && fields && asserts) {
        result = Py_BuildValue("{s:s,s:s,s:O,s:O,s:O,s:I,s:I,s:I,s:O,s:i}", "ptx", k->ptx,
                               "symbol", k->layout.symbol, "tasks", tasks, "fields", fields,
                               "asserts", asserts, "args_size", k->layout.args_size, "tmps_size",
                               k->layout.tmps_size, "nresults", k->layout.nresults, "has_print",
                               k->has_print ? Py_True : Py_False, "sm", k->sm);
    }
done:
    Py_XDECREF(tasks);
    Py_XDECREF(fields);
    Py_XDECREF(asserts);
    return result;
}

static PyObject *
qir_to_ptx(PyObject *core, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"text", "kernel", "sm", "passes", "options", NULL};
    PyObject *bound[5] = {NULL};
    Py_ssize_t text_len = 0, name_len = 0, passes_len = 0;
    QdNvptxKernel k = {0};
    QdModule *m = NULL;
    PyObject *result = NULL;
    QdCtx ctx;
    int rc;

    if (qd_py_bind_args("qir_to_ptx", names, 2, args, nargs, kwnames, bound) < 0) {
        return NULL;
    }
    const char *text = qd_py_utf8_arg("qir_to_ptx", "text", bound[0], false, &text_len);
    const char *kernel = text ? qd_py_utf8_arg("qir_to_ptx", "kernel", bound[1], true, &name_len) : NULL;
    const char *passes =
        bound[3] ? qd_py_utf8_arg("qir_to_ptx", "passes", bound[3], true, &passes_len) : DEFAULT_PASSES;
    long sm = bound[2] ? PyLong_AsLong(bound[2]) : 90;
    if (text == NULL || kernel == NULL || passes == NULL || (sm == -1 && PyErr_Occurred())) {
        return NULL;
    }
    PyObject *options = bound[4] && bound[4] != Py_None ? bound[4] : NULL;
    if (options && !PyDict_Check(options)) {
        PyErr_SetString(PyExc_TypeError, "qir_to_ptx: options must be a dict");
        return NULL;
    }
    QdNvptxOptions opts;
    if (qd_py_nvptx_options(options, (int)sm, &opts) < 0) {
        return NULL;
    }
    qd_ctx_init(&ctx);
    Py_BEGIN_ALLOW_THREADS
    m = qd_module_parse(&ctx, text, (size_t)text_len, "<qir>");
    rc = m == NULL || (passes[0] != '\0' && qd_driver_run_passes(&ctx, m, passes, true) < 0)
             ? -1
             : qd_nvptx_compile(&ctx, m, kernel, &opts, &k);
    Py_END_ALLOW_THREADS
    if (rc < 0) {
        qd_py_raise_diag(core, &ctx.diag);
    } else {
        result = describe(&k);
        qd_nvptx_kernel_release(&k);
    }
    qd_module_free(m);
    return result;
}

static PyObject *
compile_qir_cuda(PyObject *core, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"text", "kernel", "fields", "passes", "options", NULL};
    PyObject *bound[5] = {NULL};
    Py_ssize_t text_len = 0, name_len = 0, passes_len = 0;
    PyObject *result = NULL;
    QdCtx ctx;

    if (qd_py_bind_args("compile_qir_cuda", names, 2, args, nargs, kwnames, bound) < 0) {
        return NULL;
    }
    const char *text = qd_py_utf8_arg("compile_qir_cuda", "text", bound[0], false, &text_len);
    const char *kernel =
        text ? qd_py_utf8_arg("compile_qir_cuda", "kernel", bound[1], true, &name_len) : NULL;
    const char *passes = bound[3] ? qd_py_utf8_arg("compile_qir_cuda", "passes", bound[3], true,
                                                   &passes_len)
                                  : DEFAULT_PASSES;
    PyObject *fields = bound[2] && bound[2] != Py_None ? bound[2] : NULL;
    PyObject *options = bound[4] && bound[4] != Py_None ? bound[4] : NULL;
    if (text == NULL || kernel == NULL || passes == NULL) {
        return NULL;
    }
    if ((fields && !PyDict_Check(fields)) || (options && !PyDict_Check(options))) {
        PyErr_SetString(PyExc_TypeError, "compile_qir_cuda: fields and options must be dicts");
        return NULL;
    }
    qd_ctx_init(&ctx);
    QdModule *m = qd_module_parse(&ctx, text, (size_t)text_len, "<qir>");
    if (m == NULL || (passes[0] != '\0' && qd_driver_run_passes(&ctx, m, passes, true) < 0)) {
        qd_py_raise_diag(core, &ctx.diag);
    } else {
        result = qd_py_device_kernel_from_qir(core, &qd_py_cuda_target, m, kernel, options, fields);
    }
    qd_module_free(m);
    return result;
}

/* cuda_raw_launch_us(kernel, args, iterations): see qd_py_cuda_raw_launch_us. */
static PyObject *
cuda_raw_launch_us(PyObject *core, PyObject *const *args, Py_ssize_t nargs)
{
    (void)core;
    if (nargs != 3 || !PyTuple_Check(args[1]) || !PyLong_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "cuda_raw_launch_us(kernel, args: tuple, iterations)");
        return NULL;
    }
    long iterations = PyLong_AsLong(args[2]);
    if (iterations == -1 && PyErr_Occurred()) {
        return NULL;
    }
    return qd_py_cuda_raw_launch_us(args[0], &PyTuple_GET_ITEM(args[1], 0),
                                    PyTuple_GET_SIZE(args[1]), iterations);
}

/* cuda_clear_current_context(): makes no context current on the calling thread, as foreign code
 * on the thread might, so that tests can check that launches enter the device's context again. */
static PyObject *
cuda_clear_current_context(PyObject *core, PyObject *unused)
{
    QdCtx ctx;
    (void)unused;
    qd_ctx_init(&ctx);
    const QdCudaApi *cu = qd_cuda_load(&ctx);
    if (cu == NULL || qd_cuda_check(&ctx, cu->cuCtxSetCurrent(NULL), "cuCtxSetCurrent") < 0) {
        qd_py_raise_diag(core, &ctx.diag);
        return NULL;
    }
    Py_RETURN_NONE;
}

PyMethodDef qd_py_testing_cuda_methods[] = {
    {"cuda_clear_current_context", cuda_clear_current_context, METH_NOARGS,
     "cuda_clear_current_context(): no CUDA context current on this thread"},
    {"cuda_raw_launch_us", (PyCFunction)(void (*)(void))cuda_raw_launch_us, METH_FASTCALL,
     "cuda_raw_launch_us(kernel, args, iterations) -> host us per raw cuLaunchKernel"},
    {"compile_qir_cuda", (PyCFunction)(void (*)(void))compile_qir_cuda,
     METH_FASTCALL | METH_KEYWORDS,
     "compile_qir_cuda(text, kernel, fields=None, passes=..., options=None) -> DeviceKernel"},
    {"qir_to_ptx", (PyCFunction)(void (*)(void))qir_to_ptx, METH_FASTCALL | METH_KEYWORDS,
     "qir_to_ptx(text, kernel, sm=90, passes=..., options=None) -> dict with the PTX"},
    {NULL, NULL, 0, NULL},
};
