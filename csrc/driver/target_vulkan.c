/* driver/target_vulkan.c -- the Vulkan row of targets.def: GLSL compute shaders (one per task)
 * compiled to SPIR-V by glslang, host bounds functions in the CPU JIT, pipelines made by the
 * Vulkan runtime (runtime/vulkan).
 *
 * Code generation lays out the arguments (qd_arg_layout, as for every target), emits the GLSL
 * (qd_glsl_emit), compiles each shader to SPIR-V and keeps the words in one blob (QdVkCode.spirv:
 * u32 ntasks, then per task u32 nwords and the words), and compiles the range_for bounds for
 * the host as the CUDA target does. The load makes one pipeline per task from the blob and looks
 * up each field's device address (env->resolve_field); the launcher writes them after the
 * launch tail (abi.h: QD_VK_TAIL_FIELDS).
 *
 * Payload "vk1": the layout (qd_cache_write_layout), kernel info, fields, asserts and prints
 * with their value kinds; the host bounds layout and object; the SPIR-V blob.
 */
#include "driver.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *
qd_target_vulkan_identity(const QdTargetEnv *env, char *out, size_t size)
{
    const QdGlslOptions *o = env->glsl;
    unsigned features = 0;
#define QD_VK_FEATURE(name, bit, dflt, source) features |= o->features.name ? 1u << (bit) : 0;
#include "../abi/vk_features.def"
#undef QD_VK_FEATURE
    snprintf(out, size, "glslang-%s|subgroup=%u|block=%u|fast_math=%d|features=%x|shared=%u",
             qd_glslang_version(), o->subgroup_size, o->default_block_dim, o->fast_math ? 1 : 0,
             features, o->max_shared_bytes);
    return out;
}

/* Appends the SPIR-V of every shader of g to one blob: u32 ntasks, per task u32 nwords and the
 * words. 0, or -1 with a diag. */
static int
compile_shaders(QdCtx *ctx, const QdGlslKernel *g, QdVkCode *code)
{
    QdBytesOut blob;
    qd_sbuf_init(&blob.sb);
    qd_bytes_u32(&blob, g->ntasks);
    for (uint32_t t = 0; t < g->ntasks; t++) {
        uint32_t *words = NULL;
        size_t nwords = 0;
        if (qd_glsl_to_spirv(ctx, g->tasks[t].source, g->tasks[t].name, &words, &nwords) < 0) {
            qd_sbuf_free(&blob.sb);
            return -1;
        }
        qd_bytes_u32(&blob, (uint32_t)nwords);
        qd_bytes_raw(&blob, words, nwords * sizeof(uint32_t));
        free(words);
    }
    if (blob.sb.failed) {
        qd_sbuf_free(&blob.sb);
        return qd_error(ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory");
    }
    code->spirv_size = blob.sb.len;
    code->spirv = qd_sbuf_take(&blob.sb);
    return 0;
}

/* The launcher's view of the shaders: the layout's tasks. */
static int
take_layout(QdCtx *ctx, QdGlslKernel *g, uint32_t *offsets, uint32_t nparams, uint32_t args_size,
            const char *symbol, QdVkCode *code)
{
    QdCompiledKernel *l = &code->layout;
    l->tasks = calloc(g->ntasks ? g->ntasks : 1, sizeof(QdCompiledTask));
    if (l->tasks == NULL) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory");
    }
    l->ntasks = g->ntasks;
    for (uint32_t t = 0; t < g->ntasks; t++) {
        l->tasks[t].block_dim = g->tasks[t].block_dim;
        l->tasks[t].grain = g->tasks[t].is_serial ? 0 : 1;
        l->tasks[t].reduces = g->tasks[t].reduces;
        snprintf(l->tasks[t].entry, sizeof(l->tasks[t].entry), "%s", g->tasks[t].name);
    }
    l->nparams = nparams;
    l->arg_offsets = offsets;
    l->args_size = args_size;
    l->tmps_size = g->tmps_size;
    l->nresults = g->nresults;
    l->result_types = g->result_types;
    g->result_types = NULL;
    snprintf(l->symbol, sizeof(l->symbol), "%s", symbol);
    code->fields = g->fields;
    code->nfields = g->nfields;
    code->asserts = g->asserts;
    code->assert_kinds = g->assert_kinds;
    code->nasserts = g->nasserts;
    code->prints = g->prints;
    code->print_kinds = g->print_kinds;
    code->nprints = g->nprints;
    g->fields = g->asserts = g->assert_kinds = g->prints = g->print_kinds = NULL;
    g->nfields = g->nasserts = g->nprints = 0;
    return 0;
}

int
qd_target_vulkan_codegen(QdCtx *ctx, const QdTargetEnv *env, QdModule *m, const char *kernel_name,
                         const char *symbol, QdDriverKernel *k, QdDriverArtifact *artifact)
{
    const QdFunc *f = qd_module_find_func(m, kernel_name);
    if (f == NULL) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_INTERNAL, "no kernel @%s", kernel_name);
    }
    uint32_t *offsets = calloc(f->nparams ? f->nparams : 1, sizeof(uint32_t));
    if (offsets == NULL) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory");
    }
    uint32_t args_size = 0;
    qd_arg_layout(f, offsets, &args_size);
    QdGlslKernel g;
    memset(&g, 0, sizeof(g));
    if (qd_glsl_emit(ctx, m, kernel_name, offsets, args_size, env->glsl, &g) < 0) {
        free(offsets);
        return -1;
    }
    if (qd_driver_dump_enabled("glsl")) {
        for (uint32_t t = 0; t < g.ntasks; t++) {
            fprintf(stderr, "--- GLSL of %s ---\n%s", g.tasks[t].name, g.tasks[t].source);
        }
    }
    int rc = take_layout(ctx, &g, offsets, f->nparams, args_size,
                         symbol != NULL ? symbol : kernel_name, &k->vk);
    if (rc < 0) {
        free(offsets);
    }
    if (rc == 0) {
        rc = compile_shaders(ctx, &g, &k->vk);
    }
    qd_glsl_kernel_release(&g);
    RETURN_IF_ERROR(rc);
    if (artifact == NULL) {
        return qd_cpu_jit_compile_bounds(ctx, env->jit, m, kernel_name, &k->host);
    }
    artifact->image = malloc(k->vk.spirv_size);
    if (artifact->image == NULL) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory");
    }
    memcpy(artifact->image, k->vk.spirv, k->vk.spirv_size);
    artifact->image_size = k->vk.spirv_size;
    char host_symbol[160];
    snprintf(host_symbol, sizeof(host_symbol), "%s.host", symbol);
    return qd_cpu_jit_compile_bounds_artifact(ctx, env->jit, m, kernel_name, host_symbol, &k->host,
                                              &artifact->object);
}

/* One pipeline per task from a SPIR-V blob. */
static int
make_pipelines(QdCtx *ctx, QdVkCode *code, const void *blob, size_t size)
{
    QdBytesIn in = {blob, (const uint8_t *)blob + size, false};
    uint32_t ntasks = qd_bytes_get_u32(&in);
    if (ntasks != code->layout.ntasks) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_INTERNAL, "%s: %u shaders for %u tasks",
                        code->layout.symbol, ntasks, code->layout.ntasks);
    }
    code->pipelines = calloc(ntasks ? ntasks : 1, sizeof(QdVkPipeline *));
    if (code->pipelines == NULL) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory");
    }
    for (uint32_t t = 0; t < ntasks; t++) {
        uint32_t nwords = qd_bytes_get_u32(&in);
        const void *words = qd_bytes_get_raw(&in, (size_t)nwords * sizeof(uint32_t));
        if (words == NULL) {
            return qd_error(ctx, (QdLoc){0}, QD_ERR_INTERNAL, "%s: truncated SPIR-V",
                            code->layout.symbol);
        }
        /* The blob may sit unaligned in a cache payload: the runtime takes aligned words. */
        uint32_t *aligned = malloc((size_t)nwords * sizeof(uint32_t) + 1);
        if (aligned == NULL) {
            return qd_error(ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory");
        }
        memcpy(aligned, words, (size_t)nwords * sizeof(uint32_t));
        int rc = qd_vk_pipeline_new(ctx, aligned, nwords, code->layout.tasks[t].entry,
                                    &code->pipelines[t]);
        free(aligned);
        RETURN_IF_ERROR(rc);
    }
    return 0;
}

/* The device address of every field the shaders read. */
static int
resolve_fields(QdCtx *ctx, const QdTargetEnv *env, QdVkCode *code)
{
    code->field_addresses = calloc(code->nfields ? code->nfields : 1, sizeof(uint64_t));
    if (code->field_addresses == NULL) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory");
    }
    for (uint32_t i = 0; i < code->nfields; i++) {
        const char *name = code->fields[i];
        const void *address =
            env->resolve_field != NULL ? env->resolve_field(env->resolve_user, name) : NULL;
        if (address == NULL) {
            return qd_error(ctx, (QdLoc){0}, QD_ERR_RUNTIME,
                            "field %s has no device memory (it was not placed under "
                            "qd.init(arch=qd.vulkan))",
                            name);
        }
        code->field_addresses[i] = (uint64_t)(uintptr_t)address;
    }
    return 0;
}

int
qd_target_vulkan_load(QdCtx *ctx, const QdTargetEnv *env, QdDriverKernel *k,
                      QdDriverArtifact *artifact, bool from_cache)
{
    QdVkCode *code = &k->vk;
    if (from_cache) {
        if (k->host.ntasks > 0) {
            RETURN_IF_ERROR(
                qd_cpu_jit_load(ctx, env->jit, &artifact->object, NULL, NULL, true, &k->host));
        }
        RETURN_IF_ERROR(make_pipelines(ctx, code, artifact->image, artifact->image_size));
    } else {
        RETURN_IF_ERROR(make_pipelines(ctx, code, code->spirv, code->spirv_size));
    }
    return resolve_fields(ctx, env, code);
}

bool
qd_target_vulkan_write(QdBytesOut *out, const QdDriverKernel *k, const QdDriverArtifact *artifact)
{
    if (artifact->image == NULL) {
        return false;
    }
    const QdVkCode *code = &k->vk;
    qd_cache_write_layout(out, &code->layout);
    qd_cache_write_info(out, &k->info);
    qd_cache_write_strings(out, code->fields, code->nfields);
    qd_cache_write_strings(out, code->asserts, code->nasserts);
    qd_cache_write_strings(out, code->assert_kinds, code->nasserts);
    qd_cache_write_strings(out, code->prints, code->nprints);
    qd_cache_write_strings(out, code->print_kinds, code->nprints);
    qd_cache_write_layout(out, &k->host);
    qd_bytes_u64(out, artifact->object.object_size);
    qd_bytes_raw(out, artifact->object.object, artifact->object.object_size);
    qd_bytes_u64(out, artifact->image_size);
    qd_bytes_raw(out, artifact->image, artifact->image_size);
    return true;
}

int
qd_target_vulkan_read(QdBytesIn *in, QdDriverKernel *k, QdDriverArtifact *artifact)
{
    QdVkCode *code = &k->vk;
    uint32_t nkinds = 0, nprint_kinds = 0;
    if (qd_cache_read_layout(in, &code->layout) < 0 || qd_cache_read_info(in, &k->info) < 0 ||
        qd_cache_read_strings(in, &code->fields, &code->nfields) < 0 ||
        qd_cache_read_strings(in, &code->asserts, &code->nasserts) < 0 ||
        qd_cache_read_strings(in, &code->assert_kinds, &nkinds) < 0 || nkinds != code->nasserts ||
        qd_cache_read_strings(in, &code->prints, &code->nprints) < 0 ||
        qd_cache_read_strings(in, &code->print_kinds, &nprint_kinds) < 0 ||
        nprint_kinds != code->nprints || qd_cache_read_layout(in, &k->host) < 0) {
        return -1;
    }
    artifact->object.object_size = qd_bytes_get_u64(in);
    artifact->object.object = (void *)qd_bytes_get_raw(in, artifact->object.object_size);
    artifact->image_size = qd_bytes_get_u64(in);
    artifact->image = (void *)qd_bytes_get_raw(in, artifact->image_size);
    return artifact->object.object != NULL && artifact->image != NULL ? 0 : -1;
}

static void
free_strings(char **strings, uint32_t n)
{
    for (uint32_t i = 0; strings != NULL && i < n; i++) {
        free(strings[i]);
    }
    free(strings);
}

void
qd_target_vulkan_release(QdDriverKernel *k)
{
    QdVkCode *code = &k->vk;
    for (uint32_t t = 0; code->pipelines != NULL && t < code->layout.ntasks; t++) {
        qd_vk_pipeline_free(code->pipelines[t]);
    }
    free(code->pipelines);
    qd_compiled_kernel_release(&code->layout);
    free_strings(code->fields, code->nfields);
    free_strings(code->asserts, code->nasserts);
    free_strings(code->assert_kinds, code->nasserts);
    free_strings(code->prints, code->nprints);
    free_strings(code->print_kinds, code->nprints);
    free(code->spirv);
    free(code->field_addresses);
    memset(code, 0, sizeof(*code));
    qd_compiled_kernel_release(&k->host);
}
