/* python/cuda_compile.c -- compiling kernels for CUDA and loading them (CudaKernel objects).
 *
 * Two ways in, one way out:
 *   qd_py_cuda_compile           from kernel.c's compile request (a @qd.kernel): the driver runs
 *                                the frontend, the passes, NVPTX code generation and the host
 *                                bounds compile (state->jit); fields are found by id in the
 *                                registry of cuda_register_field;
 *   qd_py_cuda_kernel_from_qir   from a parsed QIR module (tests): NVPTX code generation and a
 *                                CPU JIT of the kernel's own for the host bounds; fields by name.
 * Both then load the module with the driver's linker (cuda_module.c), look up each task's entry
 * point, compute its saturating grid, write the field pointers into the module, and make the
 * kernel's result and tmp buffers. Launching is cuda_kernel.c's.
 */
#include "cuda_py.h"

#include "../driver/driver.h"
#include "../runtime/cpu/cpu.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

/***** compile *****/

/* The module, its entry points and saturating grids, the field pointers. */
static int
load_module(CudaKernelObject *k, QdPyState *state, QdCtx *ctx, const QdCudaDevice *device,
            long saturating, PyObject *fields_by_name, const void *cubin, void **keep,
            size_t *keep_size)
{
    const QdCompiledKernel *layout = &k->code.layout;

    if (cubin != NULL) {
        RETURN_IF_ERROR(qd_cuda_module_load_cubin(ctx, cubin, layout->symbol, &k->cumodule));
    } else {
        RETURN_IF_ERROR(qd_cuda_module_load_keep(ctx, k->code.ptx, k->code.ptx_size,
                                                 layout->symbol, &k->cumodule, keep, keep_size));
    }
    qd_cuda_module_load_times(&k->ms_link, &k->ms_load);
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
    for (uint32_t i = 0; i < k->code.nfields; i++) {
        const char *name = k->code.fields[i];
        char global[300];
        PyObject *key = fields_by_name != NULL ? PyUnicode_FromString(name)
                        : name[0] == 'f'       ? PyLong_FromString(name + 1, NULL, 10)
                                               : NULL;
        PyObject *registry = fields_by_name != NULL ? fields_by_name : state->cuda_fields;
        PyObject *buf = key ? PyDict_GetItemWithError(registry, key) : NULL;
        Py_XDECREF(key);
        PyErr_Clear();
        if (buf == NULL || Py_TYPE(buf) != (PyTypeObject *)state->device_buffer_type) {
            return qd_error(ctx, (QdLoc){0}, QD_ERR_RUNTIME,
                            "field %s has no device memory (it was not placed under "
                            "qd.init(arch=qd.cuda))",
                            name);
        }
        snprintf(global, sizeof(global), "qd_field_%s", name);
        RETURN_IF_ERROR(qd_cuda_module_set_pointer(ctx, k->cumodule, global,
                                                   ((DeviceBufferObject *)buf)->ptr));
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

/* The parameters the packer takes, one per Python argument. */
static int
take_params(CudaKernelObject *k, const QdCompileRequest *req)
{
    k->nparams = req->nargs;
    return qd_py_params_from_args(req->args, req->nargs, k->code.layout.arg_offsets,
                                  k->code.layout.nparams, &k->params);
}

/***** offline cache *****/

/* What identifies the code NVPTX generation makes besides the QIR. */
static void
nvptx_identity(const QdNvptxOptions *opts, char *out, size_t size)
{
    int n = snprintf(out, size, "sm_%d|O%d|fast_math=%d|block=%u|libdevice", opts->sm,
                     opts->llvm.opt_level, opts->llvm.fast_math ? 1 : 0, opts->default_block_dim);
    for (uint32_t i = 0; i < opts->nlibdevice_paths && n > 0 && (size_t)n < size; i++) {
        n += snprintf(out + n, size - (size_t)n, ":%s", opts->libdevice_paths[i]);
    }
}

/* Payload "cuda": the PTX kernel's layout, info, fields, asserts and their value kinds,
 * has_print and sm; the host bounds layout and object; the cubin. */
static void
store_entry(QdCache *cache, const QdDigest *key, const CudaKernelObject *k,
            const QdKernelInfo *info, const QdCpuArtifact *host_object, const void *cubin,
            size_t cubin_size)
{
    QdBytesOut out;
    qd_sbuf_init(&out.sb);
    qd_cache_write_layout(&out, &k->code.layout);
    qd_cache_write_info(&out, info);
    qd_cache_write_strings(&out, k->code.fields, k->code.nfields);
    qd_cache_write_strings(&out, k->code.asserts, k->code.nasserts);
    qd_cache_write_strings(&out, k->code.assert_kinds, k->code.nasserts);
    qd_bytes_u32(&out, k->code.has_print ? 1 : 0);
    qd_bytes_u32(&out, (uint32_t)k->code.sm);
    qd_cache_write_layout(&out, &k->host);
    qd_bytes_u64(&out, host_object->object_size);
    qd_bytes_raw(&out, host_object->object, host_object->object_size);
    qd_bytes_u64(&out, cubin_size);
    qd_bytes_raw(&out, cubin, cubin_size);
    if (!out.sb.failed) {
        qd_cache_put(cache, key, "cuda", out.sb.data, out.sb.len);
    }
    qd_sbuf_free(&out.sb);
}

/* Fills k from the "cuda" entry `key` and loads its module: 1 on success, 0 when absent or
 * unusable (k is left for the caller to release either way). */
static int
load_entry(QdPyState *state, QdCache *cache, const QdDigest *key, CudaKernelObject *k,
           const QdCudaDevice *device, long saturating, QdKernelInfo *info)
{
    void *data = NULL;
    size_t size = 0;
    if (qd_cache_get(cache, key, "cuda", &data, &size) != 1) {
        return 0;
    }
    QdBytesIn in = {data, (const uint8_t *)data + size, false};
    QdCpuArtifact host_object = {0};
    uint32_t nkinds = 0;
    int ok = qd_cache_read_layout(&in, &k->code.layout) == 0 &&
             qd_cache_read_info(&in, info) == 0 &&
             qd_cache_read_strings(&in, &k->code.fields, &k->code.nfields) == 0 &&
             qd_cache_read_strings(&in, &k->code.asserts, &k->code.nasserts) == 0 &&
             qd_cache_read_strings(&in, &k->code.assert_kinds, &nkinds) == 0 &&
             nkinds == k->code.nasserts;
    if (ok) {
        k->code.has_print = qd_bytes_get_u32(&in) != 0;
        k->code.sm = (int)qd_bytes_get_u32(&in);
        ok = qd_cache_read_layout(&in, &k->host) == 0;
    }
    const void *cubin = NULL;
    if (ok) {
        host_object.object_size = qd_bytes_get_u64(&in);
        host_object.object = (void *)qd_bytes_get_raw(&in, host_object.object_size);
        size_t cubin_size = qd_bytes_get_u64(&in);
        cubin = qd_bytes_get_raw(&in, cubin_size);
        ok = host_object.object != NULL && cubin != NULL && in.p == in.end;
    }
    QdCtx ctx;
    qd_ctx_init(&ctx);
    if (ok && k->host.ntasks > 0) {
        ok = qd_cpu_jit_load(&ctx, state->jit, &host_object, NULL, NULL, true, &k->host) == 0;
    }
    if (ok) {
        k->tasks = PyMem_Calloc(k->code.layout.ntasks + 1, sizeof(CudaTask));
        ok = k->tasks != NULL &&
             load_module(k, state, &ctx, device, saturating, NULL, cubin, NULL, NULL) == 0;
    }
    free(data);
    return ok;
}

/* The launch data that depends on the Python arguments and the options. */
static int
finish_kernel(CudaKernelObject *k, QdPyState *state, const QdKernelArg *args, uint32_t nargs,
              const QdKernelInfo *info)
{
    QdCompileRequest req = {.args = args, .nargs = nargs};
    if (take_params(k, &req) < 0) {
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

/* Compiles through the cache (req->cache set): lowers, then loads the entry of the code key,
 * or generates code, loads it and stores the entry. 0, or -1 with a diag or an exception. */
static int
compile_cached(CudaKernelObject *k, QdPyState *state, QdCtx *ctx, QdCompileRequest *req,
               const QdNvptxOptions *opts, const QdCudaDevice *device, long saturating,
               QdKernelInfo *info)
{
    int rc = -1;
    QdModule *m = qd_module_new();
    if (m == NULL) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory");
    }
    QdFunc *kernel = qd_driver_lower(ctx, m, req, info);
    char *qir = kernel ? qd_module_print(m) : NULL;
    if (kernel == NULL || qir == NULL) {
        if (kernel != NULL) {
            qd_error(ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory");
        }
        qd_module_free(m);
        return -1;
    }
    char identity[4096], hex[2 * QD_DIGEST_BYTES + 1], host_symbol[128];
    nvptx_identity(opts, identity, sizeof(identity));
    QdDigest key = qd_cache_code_key("cuda", req->compiler_id, identity, kernel->name, qir);
    free(qir);
    QdKernelInfo cached_info;
    if (load_entry(state, req->cache, &key, k, device, saturating, &cached_info) == 1) {
        k->from_cache = true;
        req->cache_hit = true;
        qd_cache_link(req->cache, req->source_key, &key);
        qd_module_free(m);
        return 0;
    }
    /* A partial load leaves pieces behind: start from an empty kernel. */
    qd_nvptx_kernel_release(&k->code);
    qd_compiled_kernel_release(&k->host);
    if (k->cumodule != NULL) {
        qd_cuda_module_unload(k->cumodule);
        k->cumodule = NULL;
    }
    PyMem_Free(k->tasks);
    k->tasks = NULL;

    qd_digest_hex(&key, hex);
    snprintf(host_symbol, sizeof(host_symbol), "%.90s.%.16s.host", kernel->name, hex);
    QdCpuArtifact host_object = {0};
    void *cubin = NULL;
    size_t cubin_size = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (qd_driver_codegen_cuda(ctx, state->jit, m, kernel->name, opts, host_symbol, &k->code,
                               &k->host, &host_object) < 0) {
        goto done;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    k->ms_ptx = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6;
    k->tasks = PyMem_Calloc(k->code.layout.ntasks + 1, sizeof(CudaTask));
    if (k->tasks == NULL) {
        qd_error(ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory");
        goto done;
    }
    if (load_module(k, state, ctx, device, saturating, NULL, NULL, &cubin, &cubin_size) < 0) {
        goto done;
    }
    if (cubin != NULL) {
        store_entry(req->cache, &key, k, info, &host_object, cubin, cubin_size);
        qd_cache_link(req->cache, req->source_key, &key);
    }
    rc = 0;
done:
    free(cubin);
    qd_cpu_artifact_release(&host_object);
    qd_module_free(m);
    return rc;
}

PyObject *
qd_py_cuda_compile(PyObject *module, QdCtx *ctx, QdCompileRequest *req, PyObject *options)
{
    QdPyState *state = qd_py_state(module);
    CudaKernelObject *k = NULL;
    PyObject *result = NULL;
    QdNvptxOptions opts;
    QdKernelInfo info;

    const QdCudaDevice *device = qd_cuda_device(ctx);
    if (device == NULL) {
        qd_py_raise_diag(module, &ctx->diag);
        return NULL;
    }
    if (qd_py_nvptx_options(options, 10 * device->cc_major + device->cc_minor, &opts) < 0) {
        return NULL;
    }
    k = qd_py_cuda_kernel_alloc(module);
    if (k == NULL) {
        return NULL;
    }
    PyObject *grid = options ? PyDict_GetItemString(options, "saturating_grid_dim") : NULL;
    long saturating = grid && PyLong_Check(grid) ? PyLong_AsLong(grid) : 0;
    if (req->cache != NULL) {
        if (compile_cached(k, state, ctx, req, &opts, device, saturating, &info) < 0) {
            if (!PyErr_Occurred()) {
                qd_py_raise_diag(module, &ctx->diag);
            }
            goto done;
        }
        if (finish_kernel(k, state, req->args, req->nargs, &info) < 0) {
            goto done;
        }
        result = (PyObject *)k;
        k = NULL;
        goto done;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = qd_compile_kernel_cuda(ctx, state->jit, req, &opts, &k->code, &k->host, &info);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    k->ms_ptx = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6;
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
        goto done;
    }
    k->tasks = PyMem_Calloc(k->code.layout.ntasks + 1, sizeof(CudaTask));
    if (k->tasks == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (load_module(k, state, ctx, device, saturating, NULL, NULL, NULL, NULL) < 0) {
        qd_py_raise_diag(module, &ctx->diag);
        goto done;
    }
    if (finish_kernel(k, state, req->args, req->nargs, &info) < 0) {
        goto done;
    }
    result = (PyObject *)k;
    k = NULL;
done:
    Py_XDECREF(k);
    return result;
}

PyObject *
qd_py_cuda_load_cached(PyObject *module, QdCache *cache, const QdDigest *source_key,
                       const QdKernelArg *args, uint32_t nargs, PyObject *options)
{
    QdPyState *state = qd_py_state(module);
    QdNvptxOptions opts;
    QdKernelInfo info;
    QdDigest key;
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
    if (!qd_cache_follow(cache, source_key, &key)) {
        Py_RETURN_NONE;
    }
    CudaKernelObject *k = qd_py_cuda_kernel_alloc(module);
    if (k == NULL) {
        return NULL;
    }
    PyObject *grid = PyDict_GetItemString(options, "saturating_grid_dim");
    long saturating = grid && PyLong_Check(grid) ? PyLong_AsLong(grid) : 0;
    if (load_entry(state, cache, &key, k, device, saturating, &info) != 1) {
        Py_DECREF(k);
        Py_RETURN_NONE;
    }
    k->from_cache = true;
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
    CudaKernelObject *k = NULL;
    PyObject *result = NULL;
    PyObject *empty = NULL;
    QdNvptxOptions opts;
    QdCtx ctx;
    uint32_t nsyms = 0;

    qd_ctx_init(&ctx);
    const QdCudaDevice *device = qd_cuda_device(&ctx);
    if (device == NULL) {
        qd_py_raise_diag(module, &ctx.diag);
        return NULL;
    }
    if (qd_py_nvptx_options(options, 10 * device->cc_major + device->cc_minor, &opts) < 0) {
        return NULL;
    }
    k = qd_py_cuda_kernel_alloc(module);
    if (k == NULL) {
        return NULL;
    }
    const QdCpuSymbol *syms = qd_cpu_runtime_symbols(&nsyms);
    QdLlvmOptions host_opts;
    qd_llvm_options_default(&host_opts);
    k->own_jit = qd_cpu_jit_new(&ctx, &host_opts, (const QdJitSymbol *)syms, nsyms);
    if (k->own_jit == NULL || qd_nvptx_compile(&ctx, m, name, &opts, &k->code) < 0 ||
        qd_cpu_jit_compile_bounds(&ctx, k->own_jit, m, name, &k->host) < 0) {
        qd_py_raise_diag(module, &ctx.diag);
        goto done;
    }
    k->tasks = PyMem_Calloc(k->code.layout.ntasks + 1, sizeof(CudaTask));
    if (k->tasks == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    empty = fields ? NULL : PyDict_New();
    if (fields == NULL && empty == NULL) {
        goto done;
    }
    if (load_module(k, state, &ctx, device, 0, fields ? fields : empty, NULL, NULL, NULL) < 0) {
        qd_py_raise_diag(module, &ctx.diag);
        goto done;
    }
    if (take_qir_params(k, qd_module_find_func(m, name)) < 0) {
        goto done;
    }
    k->param_bytes = k->code.layout.args_size + QD_NVPTX_TAIL_BYTES;
    k->generation = state->generation;
    result = (PyObject *)k;
    k = NULL;
done:
    Py_XDECREF(empty);
    Py_XDECREF(k);
    return result;
}

