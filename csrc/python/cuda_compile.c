/* python/cuda_compile.c -- CudaKernel objects from the driver's CUDA code.
 *
 * Three ways in, all through the driver (target QD_TARGET_cuda):
 *   qd_py_cuda_compile           from kernel.c's compile request (a @qd.kernel):
 *                                qd_driver_compile (frontend, passes, offline cache, PTX, host
 *                                bounds in state->jit, module load); fields are found by id in
 *                                the registry of cuda_register_field;
 *   qd_py_cuda_load_cached       the warm path: qd_driver_load_cached;
 *   qd_py_cuda_kernel_from_qir   from a parsed QIR module (tests): qd_driver_compile_module with
 *                                a CPU JIT of the kernel's own for the host bounds; fields by
 *                                name.
 * Each then looks up every task's entry point, computes its grids and makes the kernel's result
 * and tmp buffers. Launching is cuda_kernel.c's.
 */
#include "cuda_py.h"

#include <stdio.h>
#include <string.h>

/***** compile *****/

/* Where the driver finds the device memory of a field: the registry of cuda_register_field
 * (keys: field ids, names "f<id>"), or a dict of DeviceBuffers by name (QIR tests). */
typedef struct FieldLookup {
    QdPyState *state;
    PyObject *by_name; /* the dict of the QIR tests, or NULL: the registry */
} FieldLookup;

static const void *
field_address(void *user, const char *name)
{
    const FieldLookup *lookup = user;
    QdPyState *state = lookup->state;
    PyObject *key = lookup->by_name != NULL ? PyUnicode_FromString(name)
                    : name[0] == 'f'        ? PyLong_FromString(name + 1, NULL, 10)
                                            : NULL;
    PyObject *registry = lookup->by_name != NULL ? lookup->by_name : state->cuda_fields;
    PyObject *buf = key && registry ? PyDict_GetItemWithError(registry, key) : NULL;
    Py_XDECREF(key);
    PyErr_Clear();
    if (buf == NULL || Py_TYPE(buf) != (PyTypeObject *)state->device_buffer_type) {
        return NULL;
    }
    return (const void *)(uintptr_t)((DeviceBufferObject *)buf)->ptr;
}

/* Takes the driver's code into k (code is left empty). */
static void
take_code(CudaKernelObject *k, QdDriverKernel *code)
{
    k->code = code->ptx;
    k->host = code->host;
    k->cumodule = code->cumodule;
    k->ms_ptx = code->ms_codegen;
    k->ms_link = code->ms_link;
    k->ms_load = code->ms_load;
    k->from_cache = code->from_cache;
    memset(code, 0, sizeof(*code));
}

/* The launch data of the loaded module: each task's entry point and grids, the result and tmp
 * buffers, the runtime state. 0, or -1 with a diag (memory: with an exception). */
static int
prepare_tasks(CudaKernelObject *k, QdPyState *state, QdCtx *ctx, const QdCudaDevice *device,
              long saturating)
{
    const QdCompiledKernel *layout = &k->code.layout;
    k->tasks = PyMem_Calloc(layout->ntasks + 1, sizeof(CudaTask));
    if (k->tasks == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (uint32_t t = 0; t < layout->ntasks; t++) {
        CudaTask *task = &k->tasks[t];
        snprintf(task->name, sizeof(task->name), "%s", layout->tasks[t].entry);
        RETURN_IF_ERROR(qd_cuda_module_function(ctx, k->cumodule, task->name, &task->function));
        task->block_dim = layout->tasks[t].block_dim ? layout->tasks[t].block_dim : 1;
        task->is_serial = layout->tasks[t].grain == 0;
        task->bounds = t < k->host.ntasks ? k->host.tasks[t].bounds : NULL;
        task->max_blocks = saturating > 0
                               ? (uint32_t)saturating
                               : qd_cuda_saturating_blocks(device, task->function, task->block_dim);
        task->open_blocks =
            saturating > 0 ? (uint32_t)saturating
                           : qd_cuda_unknown_count_blocks(device, task->function, task->block_dim);
        if (layout->tasks[t].reduces && saturating <= 0) {
            uint32_t reducing = qd_cuda_reducing_blocks(device, task->block_dim);
            task->max_blocks = reducing < task->max_blocks ? reducing : task->max_blocks;
            task->open_blocks = reducing < task->open_blocks ? reducing : task->open_blocks;
        }
    }
    if (layout->nresults > 0) {
        RETURN_IF_ERROR(qd_cuda_alloc(ctx, QD_RESULT_SLOT_BYTES * layout->nresults, &k->results));
    }
    if (layout->tmps_size > 0) {
        RETURN_IF_ERROR(qd_cuda_alloc(ctx, layout->tmps_size, &k->tmps));
    }
    if (state->cuda_runtime_state == 0) {
        RETURN_IF_ERROR(
            qd_cuda_alloc(ctx, QD_NVPTX_RUNTIME_STATE_BYTES, &state->cuda_runtime_state));
    }
    return 0;
}

/* The launch data that depends on the Python arguments and the options. */
static int
finish_kernel(CudaKernelObject *k, QdPyState *state, const QdKernelArg *args, uint32_t nargs,
              const QdKernelInfo *info)
{
    k->nparams = nargs;
    if (qd_py_params_from_args(args, nargs, k->code.layout.arg_offsets, k->code.layout.nparams,
                               &k->params) < 0) {
        return -1;
    }
    k->param_bytes = k->code.layout.args_size + QD_NVPTX_TAIL_BYTES;
    if (info->rng_param >= 0 && (uint32_t)info->rng_param < k->code.layout.nparams &&
        k->code.layout.arg_offsets[info->rng_param] != QD_ARG_UNUSED) {
        k->rng_offset = (int64_t)k->code.layout.arg_offsets[info->rng_param];
    }
    k->generation = state->generation;
    return 0;
}

/* The grid size every range_for gets when options["saturating_grid_dim"] is set, else 0. */
static long
saturating_grid(PyObject *options)
{
    PyObject *grid = options ? PyDict_GetItemString(options, "saturating_grid_dim") : NULL;
    return grid && PyLong_Check(grid) ? PyLong_AsLong(grid) : 0;
}

PyObject *
qd_py_cuda_compile(PyObject *module, QdCtx *ctx, QdCompileRequest *req, PyObject *options)
{
    QdPyState *state = qd_py_state(module);
    QdNvptxOptions opts;
    QdDriverKernel code;

    const QdCudaDevice *device = qd_cuda_device(ctx);
    if (device == NULL) {
        qd_py_raise_diag(module, &ctx->diag);
        return NULL;
    }
    if (qd_py_nvptx_options(options, 10 * device->cc_major + device->cc_minor, &opts) < 0) {
        return NULL;
    }
    req->frontend.tensor_cores = opts.sm >= 80 && qd_py_nn_tensor_cores(options);
    CudaKernelObject *k = qd_py_cuda_kernel_alloc(module);
    if (k == NULL) {
        return NULL;
    }
    FieldLookup lookup = {state, NULL};
    QdTargetEnv env = {
        .jit = state->jit, .nvptx = &opts, .resolve_field = field_address, .resolve_user = &lookup};
    int rc = qd_driver_compile(ctx, req, QD_TARGET_cuda, &env, &code);
    if (req->qir_frontend) {
        k->qir_frontend = PyUnicode_FromString(req->qir_frontend);
    }
    if (req->qir_final) {
        k->qir = PyUnicode_FromString(req->qir_final);
    }
    free(req->qir_frontend);
    free(req->qir_final);
    req->qir_frontend = req->qir_final = NULL;
    if (rc < 0) {
        if (!PyErr_Occurred()) {
            qd_py_raise_diag(module, &ctx->diag);
        }
        Py_DECREF(k);
        return NULL;
    }
    take_code(k, &code);
    if (prepare_tasks(k, state, ctx, device, saturating_grid(options)) < 0) {
        if (!PyErr_Occurred()) {
            qd_py_raise_diag(module, &ctx->diag);
        }
        Py_DECREF(k);
        return NULL;
    }
    if (finish_kernel(k, state, req->args, req->nargs, &code.info) < 0) {
        Py_DECREF(k);
        return NULL;
    }
    return (PyObject *)k;
}

PyObject *
qd_py_cuda_load_cached(PyObject *module, QdCache *cache, const QdDigest *source_key,
                       const QdKernelArg *args, uint32_t nargs, PyObject *options)
{
    QdPyState *state = qd_py_state(module);
    QdNvptxOptions opts;
    QdDriverKernel code;
    QdCtx ctx;
    qd_ctx_init(&ctx);
    const QdCudaDevice *device = qd_cuda_device(&ctx);
    if (device == NULL) {
        qd_py_raise_diag(module, &ctx.diag);
        return NULL;
    }
    if (qd_py_nvptx_options(options, 10 * device->cc_major + device->cc_minor, &opts) < 0) {
        return NULL;
    }
    FieldLookup lookup = {state, NULL};
    QdTargetEnv env = {
        .jit = state->jit, .nvptx = &opts, .resolve_field = field_address, .resolve_user = &lookup};
    if (qd_driver_load_cached(cache, source_key, QD_TARGET_cuda, &env, &code) != 1) {
        Py_RETURN_NONE;
    }
    QdKernelInfo info = code.info;
    CudaKernelObject *k = qd_py_cuda_kernel_alloc(module);
    if (k == NULL) {
        qd_driver_kernel_release(&code);
        return NULL;
    }
    take_code(k, &code);
    if (prepare_tasks(k, state, &ctx, device, saturating_grid(options)) < 0) {
        /* Not launchable here: a miss, the kernel is compiled instead. */
        PyErr_Clear();
        Py_DECREF(k);
        Py_RETURN_NONE;
    }
    if (finish_kernel(k, state, args, nargs, &info) < 0) {
        Py_DECREF(k);
        return NULL;
    }
    return (PyObject *)k;
}

/***** QIR tests *****/

/* The parameters the packer takes, one per parameter of the QIR kernel. */
static int
take_qir_params(CudaKernelObject *k, const QdFunc *f)
{
    k->nparams = f->nparams;
    return qd_py_params_from_qir(f, k->code.layout.arg_offsets, &k->params);
}

PyObject *
qd_py_cuda_kernel_from_qir(PyObject *module, QdModule *m, const char *name, PyObject *options,
                           PyObject *fields)
{
    QdPyState *state = qd_py_state(module);
    QdNvptxOptions opts;
    QdDriverKernel code;
    QdCtx ctx;

    qd_ctx_init(&ctx);
    const QdCudaDevice *device = qd_cuda_device(&ctx);
    if (device == NULL) {
        qd_py_raise_diag(module, &ctx.diag);
        return NULL;
    }
    if (qd_py_nvptx_options(options, 10 * device->cc_major + device->cc_minor, &opts) < 0) {
        return NULL;
    }
    CudaKernelObject *k = qd_py_cuda_kernel_alloc(module);
    if (k == NULL) {
        return NULL;
    }
    QdLlvmOptions host_opts;
    qd_llvm_options_default(&host_opts);
    k->own_jit = qd_driver_jit_new(&ctx, &host_opts);
    /* Fields by name in `fields`; without it every field is missing. */
    PyObject *empty = fields ? NULL : PyDict_New();
    FieldLookup lookup = {state, fields ? fields : empty};
    QdTargetEnv env = {
        .jit = k->own_jit, .nvptx = &opts, .resolve_field = field_address, .resolve_user = &lookup};
    if (fields == NULL && empty == NULL) {
        Py_DECREF(k);
        return NULL;
    }
    int rc = k->own_jit != NULL
                 ? qd_driver_compile_module(&ctx, m, name, QD_TARGET_cuda, &env, &code)
                 : -1;
    Py_XDECREF(empty);
    if (rc < 0) {
        qd_py_raise_diag(module, &ctx.diag);
        Py_DECREF(k);
        return NULL;
    }
    take_code(k, &code);
    if (prepare_tasks(k, state, &ctx, device, 0) < 0) {
        if (!PyErr_Occurred()) {
            qd_py_raise_diag(module, &ctx.diag);
        }
        Py_DECREF(k);
        return NULL;
    }
    if (take_qir_params(k, qd_module_find_func(m, name)) < 0) {
        Py_DECREF(k);
        return NULL;
    }
    k->param_bytes = k->code.layout.args_size + QD_NVPTX_TAIL_BYTES;
    k->generation = state->generation;
    return (PyObject *)k;
}
