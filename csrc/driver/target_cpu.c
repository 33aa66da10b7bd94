/* driver/target_cpu.c -- the CPU row of targets.def: code for the host, in the CPU JIT.
 *
 * Code generation links the machine code into the JIT at once (fields resolved through
 * env->resolve_field), so the load after it has nothing left to do; a cache entry is loaded
 * with qd_cpu_jit_load.
 *
 * Payload "cpu1": layout (qd_cache_write_layout), kernel info, the object's field names and
 * the object's bytes.
 */
#include "driver.h"


const char *
qd_target_cpu_identity(const QdTargetEnv *env, char *out, size_t size)
{
    (void)out;
    (void)size;
    return qd_cpu_jit_identity(env->jit);
}

int
qd_target_cpu_codegen(QdCtx *ctx, const QdTargetEnv *env, QdModule *m, const char *kernel_name,
                      const char *symbol, QdDriverKernel *k, QdDriverArtifact *artifact)
{
    if (artifact == NULL) {
        return qd_cpu_jit_compile(ctx, env->jit, m, kernel_name, env->resolve_field,
                                  env->resolve_user, &k->cpu);
    }
    return qd_cpu_jit_compile_artifact(ctx, env->jit, m, kernel_name, symbol, env->resolve_field,
                                       env->resolve_user, &k->cpu, &artifact->object);
}

int
qd_target_cpu_load(QdCtx *ctx, const QdTargetEnv *env, QdDriverKernel *k,
                   QdDriverArtifact *artifact, bool from_cache)
{
    if (!from_cache) {
        return 0;
    }
    return qd_cpu_jit_load(ctx, env->jit, &artifact->object, env->resolve_field,
                           env->resolve_user, false, &k->cpu);
}

bool
qd_target_cpu_write(QdBytesOut *out, const QdDriverKernel *k, const QdDriverArtifact *artifact)
{
    qd_cache_write_layout(out, &k->cpu);
    qd_cache_write_info(out, &k->info);
    qd_cache_write_strings(out, artifact->object.fields, artifact->object.nfields);
    qd_bytes_u64(out, artifact->object.object_size);
    qd_bytes_raw(out, artifact->object.object, artifact->object.object_size);
    return true;
}

int
qd_target_cpu_read(QdBytesIn *in, QdDriverKernel *k, QdDriverArtifact *artifact)
{
    if (qd_cache_read_layout(in, &k->cpu) < 0 || qd_cache_read_info(in, &k->info) < 0 ||
        qd_cache_read_strings(in, &artifact->object.fields, &artifact->object.nfields) < 0) {
        return -1;
    }
    artifact->object.object_size = qd_bytes_get_u64(in);
    artifact->object.object = (void *)qd_bytes_get_raw(in, artifact->object.object_size);
    return artifact->object.object != NULL ? 0 : -1;
}

void
qd_target_cpu_release(QdDriverKernel *k)
{
    qd_compiled_kernel_release(&k->cpu);
}
