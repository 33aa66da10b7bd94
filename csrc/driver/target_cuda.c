/* driver/target_cuda.c -- the CUDA row of targets.def: PTX for the device, host bounds
 * functions in the CPU JIT, the module loaded by the CUDA runtime (runtime/cuda).
 *
 * Code generation makes the PTX (qd_nvptx_compile) and compiles the range_for bounds for the
 * host (qd_cpu_jit_compile_bounds, symbol prefix "<symbol>.host" when cached). The load links
 * the PTX to a cubin with the driver's linker (keeping the cubin for the cache) or loads a
 * cached cubin, then writes each field's device address (env->resolve_field) into the module's
 * qd_field_<name>. Entry points, grid sizes and the result and tmp buffers are the launcher's.
 *
 * Payload "cuda": the PTX kernel's layout (qd_cache_write_layout), kernel info, fields, asserts
 * and their value kinds, has_print and sm; the host bounds layout and object; the cubin.
 */
#include "driver.h"

#include <stdio.h>
#include <stdlib.h>

const char *
qd_target_cuda_identity(const QdTargetEnv *env, char *out, size_t size)
{
    const QdNvptxOptions *opts = env->nvptx;
    int n = snprintf(out, size, "sm_%d|O%d|fast_math=%d|block=%u|libdevice", opts->sm,
                     opts->llvm.opt_level, opts->llvm.fast_math ? 1 : 0, opts->default_block_dim);
    for (uint32_t i = 0; i < opts->nlibdevice_paths && n > 0 && (size_t)n < size; i++) {
        n += snprintf(out + n, size - (size_t)n, ":%s", opts->libdevice_paths[i]);
    }
    return out;
}

int
qd_target_cuda_codegen(QdCtx *ctx, const QdTargetEnv *env, QdModule *m, const char *kernel_name,
                       const char *symbol, QdDriverKernel *k, QdDriverArtifact *artifact)
{
    if (qd_nvptx_compile(ctx, m, kernel_name, env->nvptx, &k->ptx) < 0) {
        return -1;
    }
    if (qd_driver_dump_enabled("ptx")) {
        fprintf(stderr, "--- PTX of %s ---\n%s", kernel_name, k->ptx.ptx);
    }
    if (artifact == NULL) {
        return qd_cpu_jit_compile_bounds(ctx, env->jit, m, kernel_name, &k->host);
    }
    char host_symbol[160];
    snprintf(host_symbol, sizeof(host_symbol), "%s.host", symbol);
    return qd_cpu_jit_compile_bounds_artifact(ctx, env->jit, m, kernel_name, host_symbol,
                                              &k->host, &artifact->object);
}

/* Writes the device address of every field the module reads into its qd_field_<name>. */
static int
set_fields(QdCtx *ctx, const QdTargetEnv *env, QdDriverKernel *k)
{
    for (uint32_t i = 0; i < k->ptx.nfields; i++) {
        const char *name = k->ptx.fields[i];
        const void *address =
            env->resolve_field != NULL ? env->resolve_field(env->resolve_user, name) : NULL;
        if (address == NULL) {
            return qd_error(ctx, (QdLoc){0}, QD_ERR_RUNTIME,
                            "field %s has no device memory (it was not placed under "
                            "qd.init(arch=qd.cuda))",
                            name);
        }
        char global[300];
        snprintf(global, sizeof(global), "qd_field_%s", name);
        QdCuDeviceptr device_address = (QdCuDeviceptr)(uintptr_t)address;
        RETURN_IF_ERROR(qd_cuda_module_set_pointer(ctx, k->cumodule, global, device_address));
    }
    return 0;
}

int
qd_target_cuda_load(QdCtx *ctx, const QdTargetEnv *env, QdDriverKernel *k,
                    QdDriverArtifact *artifact, bool from_cache)
{
    const char *symbol = k->ptx.layout.symbol;
    if (from_cache) {
        if (k->host.ntasks > 0) {
            RETURN_IF_ERROR(
                qd_cpu_jit_load(ctx, env->jit, &artifact->object, NULL, NULL, true, &k->host));
        }
        RETURN_IF_ERROR(qd_cuda_module_load_cubin(ctx, artifact->image, symbol, &k->cumodule));
    } else {
        RETURN_IF_ERROR(qd_cuda_module_load_keep(
            ctx, k->ptx.ptx, k->ptx.ptx_size, symbol, &k->cumodule,
            artifact != NULL ? &artifact->image : NULL,
            artifact != NULL ? &artifact->image_size : NULL));
    }
    qd_cuda_module_load_times(&k->ms_link, &k->ms_load);
    return set_fields(ctx, env, k);
}

bool
qd_target_cuda_write(QdBytesOut *out, const QdDriverKernel *k, const QdDriverArtifact *artifact)
{
    if (artifact->image == NULL) {
        return false;
    }
    const QdNvptxKernel *code = &k->ptx;
    qd_cache_write_layout(out, &code->layout);
    qd_cache_write_info(out, &k->info);
    qd_cache_write_strings(out, code->fields, code->nfields);
    qd_cache_write_strings(out, code->asserts, code->nasserts);
    qd_cache_write_strings(out, code->assert_kinds, code->nasserts);
    qd_bytes_u32(out, code->has_print ? 1 : 0);
    qd_bytes_u32(out, (uint32_t)code->sm);
    qd_cache_write_layout(out, &k->host);
    qd_bytes_u64(out, artifact->object.object_size);
    qd_bytes_raw(out, artifact->object.object, artifact->object.object_size);
    qd_bytes_u64(out, artifact->image_size);
    qd_bytes_raw(out, artifact->image, artifact->image_size);
    return true;
}

int
qd_target_cuda_read(QdBytesIn *in, QdDriverKernel *k, QdDriverArtifact *artifact)
{
    QdNvptxKernel *code = &k->ptx;
    uint32_t nkinds = 0;
    if (qd_cache_read_layout(in, &code->layout) < 0 || qd_cache_read_info(in, &k->info) < 0 ||
        qd_cache_read_strings(in, &code->fields, &code->nfields) < 0 ||
        qd_cache_read_strings(in, &code->asserts, &code->nasserts) < 0 ||
        qd_cache_read_strings(in, &code->assert_kinds, &nkinds) < 0 || nkinds != code->nasserts) {
        return -1;
    }
    code->has_print = qd_bytes_get_u32(in) != 0;
    code->sm = (int)qd_bytes_get_u32(in);
    if (qd_cache_read_layout(in, &k->host) < 0) {
        return -1;
    }
    artifact->object.object_size = qd_bytes_get_u64(in);
    artifact->object.object = (void *)qd_bytes_get_raw(in, artifact->object.object_size);
    artifact->image_size = qd_bytes_get_u64(in);
    artifact->image = (void *)qd_bytes_get_raw(in, artifact->image_size);
    return artifact->object.object != NULL && artifact->image != NULL ? 0 : -1;
}

void
qd_target_cuda_release(QdDriverKernel *k)
{
    qd_nvptx_kernel_release(&k->ptx);
    qd_compiled_kernel_release(&k->host);
    if (k->cumodule != NULL) {
        qd_cuda_module_unload(k->cumodule);
        k->cumodule = NULL;
    }
}
