/* driver/cache_io.c -- offline cache keys and payloads of compiled kernels.
 *
 * Two sorts of entries (cache/cache.h stores them):
 *   code    the code of one kernel for one target, of the target's entry kind (targets.def:
 *           "cpu1", "cuda"), keyed by its code key: a hash of the target's tag, the compiler
 *           build, the target's identity (CPU: triple, CPU features, optimization options;
 *           CUDA: sm, options, libdevice), the kernel name and the QIR the passes produced.
 *           Equal QIR on an equal target gives equal code, so whatever produced the QIR
 *           (source, globals, templates, options) is covered without being listed.
 *   "link"  a source key (computed by the Python layer before lowering, from the sources,
 *           captured values, argument signature and options) -> the code key of the entry it
 *           compiled to. A warm start that finds its source key loads the code without
 *           running the frontend.
 * The payloads are the targets' (qd_target_<name>_write / _read, target_<name>.c), built
 * from the pieces below; this file runs the lookup, the fallback to code generation and the
 * store the same way for every target.
 */
#include "driver.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
qd_cache_write_layout(QdBytesOut *out, const QdCompiledKernel *k)
{
    qd_bytes_u32(out, k->nparams);
    for (uint32_t i = 0; i < k->nparams; i++) {
        qd_bytes_u32(out, k->arg_offsets[i]);
    }
    qd_bytes_u32(out, k->args_size);
    qd_bytes_u32(out, k->tmps_size);
    qd_bytes_u32(out, k->nresults);
    for (uint32_t i = 0; i < k->nresults; i++) {
        qd_bytes_u32(out, (uint32_t)k->result_types[i]);
    }
    qd_bytes_str(out, k->symbol);
    qd_bytes_u32(out, k->ntasks);
    for (uint32_t i = 0; i < k->ntasks; i++) {
        qd_bytes_u32(out, k->tasks[i].block_dim);
        qd_bytes_u64(out, (uint64_t)k->tasks[i].grain);
        qd_bytes_u32(out, k->tasks[i].reduces ? 1u : 0u);
        qd_bytes_str(out, k->tasks[i].entry);
    }
}

int
qd_cache_read_layout(QdBytesIn *in, QdCompiledKernel *k)
{
    memset(k, 0, sizeof(*k));
    k->nparams = qd_bytes_get_u32(in);
    if (in->failed || k->nparams > 100000) {
        return -1;
    }
    k->arg_offsets = calloc(k->nparams + 1, sizeof(uint32_t));
    if (k->arg_offsets == NULL) {
        return -1;
    }
    for (uint32_t i = 0; i < k->nparams; i++) {
        k->arg_offsets[i] = qd_bytes_get_u32(in);
    }
    k->args_size = qd_bytes_get_u32(in);
    k->tmps_size = qd_bytes_get_u32(in);
    k->nresults = qd_bytes_get_u32(in);
    if (in->failed || k->nresults > QD_MAX_RESULTS) {
        return -1;
    }
    k->result_types = calloc(k->nresults + 1, sizeof(QdTypeKind));
    if (k->result_types == NULL) {
        return -1;
    }
    for (uint32_t i = 0; i < k->nresults; i++) {
        k->result_types[i] = (QdTypeKind)qd_bytes_get_u32(in);
    }
    char *symbol = qd_bytes_get_str(in);
    if (symbol == NULL || strlen(symbol) >= sizeof(k->symbol)) {
        free(symbol);
        return -1;
    }
    strcpy(k->symbol, symbol);
    free(symbol);
    k->ntasks = qd_bytes_get_u32(in);
    if (in->failed || k->ntasks > 100000) {
        return -1;
    }
    k->tasks = calloc(k->ntasks + 1, sizeof(QdCompiledTask));
    if (k->tasks == NULL) {
        return -1;
    }
    for (uint32_t i = 0; i < k->ntasks; i++) {
        k->tasks[i].block_dim = qd_bytes_get_u32(in);
        k->tasks[i].grain = (int64_t)qd_bytes_get_u64(in);
        k->tasks[i].reduces = qd_bytes_get_u32(in) != 0;
        char *entry = qd_bytes_get_str(in);
        if (entry == NULL || strlen(entry) >= sizeof(k->tasks[i].entry)) {
            free(entry);
            return -1;
        }
        strcpy(k->tasks[i].entry, entry);
        free(entry);
    }
    return in->failed ? -1 : 0;
}

void
qd_cache_write_info(QdBytesOut *out, const QdKernelInfo *info)
{
    qd_bytes_u32(out, info->nreturns);
    for (uint32_t i = 0; i < info->nreturns; i++) {
        qd_bytes_u32(out, (uint32_t)info->returns[i]);
    }
    qd_bytes_u32(out, info->has_print ? 1 : 0);
    qd_bytes_u32(out, (uint32_t)info->rng_param);
}

int
qd_cache_read_info(QdBytesIn *in, QdKernelInfo *info)
{
    memset(info, 0, sizeof(*info));
    info->nreturns = qd_bytes_get_u32(in);
    if (info->nreturns > QD_ARRAY_LEN(info->returns)) {
        return -1;
    }
    for (uint32_t i = 0; i < info->nreturns; i++) {
        info->returns[i] = (QdTypeKind)qd_bytes_get_u32(in);
    }
    info->has_print = qd_bytes_get_u32(in) != 0;
    info->rng_param = (int32_t)qd_bytes_get_u32(in);
    return in->failed ? -1 : 0;
}

void
qd_cache_write_strings(QdBytesOut *out, char *const *strings, uint32_t n)
{
    qd_bytes_u32(out, n);
    for (uint32_t i = 0; i < n; i++) {
        qd_bytes_str(out, strings[i]);
    }
}

int
qd_cache_read_strings(QdBytesIn *in, char ***strings, uint32_t *n)
{
    *n = qd_bytes_get_u32(in);
    *strings = NULL;
    if (in->failed || *n > 100000 || (*strings = calloc(*n + 1, sizeof(char *))) == NULL) {
        *n = 0;
        return -1;
    }
    for (uint32_t i = 0; i < *n; i++) {
        if (((*strings)[i] = qd_bytes_get_str(in)) == NULL) {
            return -1;
        }
    }
    return 0;
}

QdDigest
qd_cache_code_key(const char *tag, const char *compiler_id, const char *target,
                  const char *name, const char *qir)
{
    QdHasher hs;
    qd_hasher_init(&hs);
    qd_hasher_update_str(&hs, tag);
    qd_hasher_update_str(&hs, compiler_id ? compiler_id : "");
    qd_hasher_update_str(&hs, target);
    qd_hasher_update_str(&hs, name);
    qd_hasher_update_str(&hs, qir);
    return qd_hasher_final(&hs);
}

/* The key of a link entry: the source key, on a target of this tag and identity. The source
 * key covers what the frontend reads, not the device or host the code is for (the CPU's
 * features, the GPU's sm, a Vulkan device's subgroup size and features); without the identity a
 * cache shared by two machines, or two devices of one, would link a source key to code made
 * for the other. */
static QdDigest
link_key(const QdDigest *source_key, const char *tag, const char *identity)
{
    QdHasher hs;
    qd_hasher_init(&hs);
    qd_hasher_update_str(&hs, "link");
    qd_hasher_update(&hs, source_key->bytes, QD_DIGEST_BYTES);
    qd_hasher_update_str(&hs, tag);
    qd_hasher_update_str(&hs, identity);
    return qd_hasher_final(&hs);
}

void
qd_cache_link(QdCache *cache, const QdDigest *source_key, const char *tag,
              const char *identity, const QdDigest *code_key)
{
    if (cache != NULL && source_key != NULL) {
        QdDigest key = link_key(source_key, tag, identity);
        qd_cache_put(cache, &key, "link", code_key->bytes, QD_DIGEST_BYTES);
    }
}

int
qd_cache_follow(QdCache *cache, const QdDigest *source_key, const char *tag,
                const char *identity, QdDigest *code_key)
{
    void *data = NULL;
    size_t size = 0;
    QdDigest key = link_key(source_key, tag, identity);
    if (qd_cache_get(cache, &key, "link", &data, &size) != 1) {
        return 0;
    }
    int ok = size == QD_DIGEST_BYTES;
    if (ok) {
        memcpy(code_key->bytes, data, QD_DIGEST_BYTES);
    }
    free(data);
    return ok;
}

/***** entries of compiled kernels, by target *****/

/* Frees an artifact; `borrowed`: its object and image point into a payload being read. */
static void
artifact_release(QdDriverArtifact *artifact, bool borrowed)
{
    if (borrowed) {
        artifact->object.object = NULL;
    } else {
        free(artifact->image);
    }
    artifact->image = NULL;
    qd_cpu_artifact_release(&artifact->object);
}

/* Writes the payload of k for its target; true when the target had something to store. */
static bool
store_entry(QdCache *cache, const QdDigest *key, const QdTargetInfo *t, const QdDriverKernel *k,
            const QdDriverArtifact *artifact)
{
    QdBytesOut out;
    qd_sbuf_init(&out.sb);
    bool stored = t->write(&out, k, artifact);
    if (stored && !out.sb.failed) {
        qd_cache_put(cache, key, t->entry, out.sb.data, out.sb.len);
    }
    qd_sbuf_free(&out.sb);
    return stored;
}

int
qd_cache_load_entry(QdCache *cache, const QdDigest *code_key, QdTarget target,
                    const QdTargetEnv *env, QdDriverKernel *out)
{
    const QdTargetInfo *t = qd_target_info(target);
    void *data = NULL;
    size_t size = 0;
    if (qd_cache_get(cache, code_key, t->entry, &data, &size) != 1) {
        return 0;
    }
    QdBytesIn in = {data, (const uint8_t *)data + size, false};
    QdDriverArtifact artifact = {0};
    int ok = t->read(&in, out, &artifact) == 0 && in.p == in.end;
    if (ok) {
        /* Code that cannot be loaded (a field gone, a symbol missing, another device) is
         * compiled instead; the entry stays: it is valid for the program that wrote it. */
        QdCtx ctx;
        qd_ctx_init(&ctx);
        ok = t->load(&ctx, env, out, &artifact, true) == 0;
    }
    artifact_release(&artifact, true);
    free(data);
    if (!ok) {
        qd_driver_kernel_release(out);
        memset(out, 0, sizeof(*out));
        out->target = target;
        return 0;
    }
    out->from_cache = true;
    return 1;
}

int
qd_cache_compile(QdCtx *ctx, QdCompileRequest *req, QdTarget target, const QdTargetEnv *env,
                 QdModule *m, const char *kernel_name, QdDriverKernel *out)
{
    const QdTargetInfo *t = qd_target_info(target);
    char *qir = qd_module_print(m);
    if (qir == NULL) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory");
    }
    char buf[4096];
    const char *identity = t->identity(env, buf, sizeof(buf));
    QdDigest key = qd_cache_code_key(t->tag, req->compiler_id, identity, kernel_name, qir);
    free(qir);
    /* The info the frontend just produced stays (the entry's is the same for the same QIR). */
    QdKernelInfo info = out->info;
    if (qd_cache_load_entry(req->cache, &key, target, env, out) == 1) {
        out->info = info;
        qd_cache_link(req->cache, req->source_key, t->tag, identity, &key);
        return 0;
    }
    out->info = info;
    char hex[2 * QD_DIGEST_BYTES + 1], symbol[128];
    qd_digest_hex(&key, hex);
    snprintf(symbol, sizeof(symbol), "%.90s.%.16s", kernel_name, hex);
    QdDriverArtifact artifact = {0};
    int rc = qd_driver_generate(ctx, target, env, m, kernel_name, symbol, NULL, out, &artifact);
    if (rc == 0 && store_entry(req->cache, &key, t, out, &artifact)) {
        qd_cache_link(req->cache, req->source_key, t->tag, identity, &key);
    }
    artifact_release(&artifact, false);
    return rc;
}
