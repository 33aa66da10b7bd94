/* driver/driver.h -- the compile pipeline of one kernel, for every target, in one place.
 *
 * The driver wires the layers together: frontend (Python AST -> QIR), our passes, the code
 * generator of the target, the offline cache and the runtime that loads the code. Only the
 * Python layer calls it; it knows nothing of Python objects itself (the frontend reaches them
 * through the QdHost the caller provides, fields through a QdFieldResolver).
 *
 * One entry point compiles (qd_driver_compile), one loads from the cache without compiling
 * (qd_driver_load_cached); targets.def lists the targets and what each provides.
 */
#ifndef QD_DRIVER_H
#define QD_DRIVER_H

#include "../cache/cache.h"
#include "../codegen/glsl/glsl.h"
#include "../codegen/llvm/codegen.h"
#include "../frontend/frontend.h"
#include "../runtime/cuda/cuda.h"
#include "../runtime/vulkan/vulkan.h"

#include <time.h>

/* The targets of targets.def: QD_TARGET_cpu, QD_TARGET_cuda, QD_TARGET_vulkan. */
typedef enum QdTarget {
#define QD_TARGET(name, tag, entry, descr) QD_TARGET_##name,
#include "targets.def"
#undef QD_TARGET
    QD_NTARGETS
} QdTarget;

/* What a target compiles with and loads into; the caller's, borrowed for one call. */
typedef struct QdTargetEnv {
    QdCpuJit *jit;                 /* the CPU JIT: CPU kernels, and the host bounds functions of
                                      GPU kernels */
    const QdNvptxOptions *nvptx;   /* CUDA: code generation options (NULL otherwise) */
    const QdGlslOptions *glsl;     /* Vulkan: the device's features and code generation options
                                      (NULL otherwise) */
    QdFieldResolver resolve_field; /* base address of a field by name: host memory (CPU), a
                                      device address (CUDA); NULL when it has none */
    void *resolve_user;            /* its argument */
} QdTargetEnv;

/* A kernel for Vulkan: one compute pipeline per task (codegen/glsl/glsl.h, VULKAN KERNEL ABI). */
typedef struct QdVkCode {
    QdCompiledKernel layout; /* arguments, tmps, results; tasks with block_dim (resolved), grain
                                (1 for a range_for task, 0 for a serial one), entry (the task's
                                name) and reduces */
    char **fields;           /* fields whose addresses follow the launch tail, in order */
    uint32_t nfields;
    char **asserts;          /* message of assert id i */
    char **assert_kinds;     /* kinds of its values */
    uint32_t nasserts;
    char **prints;           /* format of print id i */
    char **print_kinds;      /* kinds of its values */
    uint32_t nprints;
    void *spirv;             /* the shaders: u32 ntasks, then per task u32 nwords and the words
                                (malloc; what the cache stores as the image) */
    size_t spirv_size;       /* its bytes */
    QdVkPipeline **pipelines; /* after load: one per task */
    uint64_t *field_addresses; /* after load: device address of each field (nfields) */
} QdVkCode;

/* The code of one kernel for one target, as the driver hands it back: what the launcher needs.
 * Release with qd_driver_kernel_release, or move the pieces out and clear them. */
typedef struct QdDriverKernel {
    QdTarget target;
    QdKernelInfo info;       /* returns, print, random seed parameter */
    bool from_cache;         /* the code came from the offline cache */
    QdCompiledKernel cpu;    /* CPU: the kernel in the JIT */
    QdNvptxKernel ptx;       /* CUDA: PTX, layout, fields, asserts */
    QdCompiledKernel host;   /* CUDA, Vulkan: the host bounds functions in the JIT */
    QdCuModule cumodule;     /* CUDA: the loaded module, its field pointers set */
    QdVkCode vk;             /* Vulkan: shaders, pipelines, fields, asserts */
    double ms_codegen;       /* compile: frontend, passes and code generation (0: from the cache) */
    double ms_link;          /* CUDA: PTX -> cubin with the driver's linker */
    double ms_load;          /* CUDA: cuModuleLoadData */
} QdDriverKernel;

void qd_driver_kernel_release(QdDriverKernel *k);

/* What the cache keeps of a kernel besides its layout: the CPU object (the kernel, or a GPU
 * kernel's host bounds functions) and the device image (CUDA: the cubin). */
typedef struct QdDriverArtifact {
    QdCpuArtifact object; /* object (malloc, or borrowed from a payload being read) */
    void *image;          /* device image (malloc, or borrowed likewise), NULL when none */
    size_t image_size;    /* its bytes */
} QdDriverArtifact;

/* Everything that decides the code of one kernel specialization. */
typedef struct QdCompileRequest {
    const QdHost *host;            /* Python callbacks */
    QdHandle scope;                /* the kernel's Python function */
    const QdAst *def;              /* its AST */
    const char *name;              /* kernel name (QIR and symbol prefix) */
    const QdKernelArg *args;       /* one per kernel parameter */
    uint32_t nargs;                /* how many */
    QdHandle ret_annotation;       /* evaluated return annotation, 0 = from the AST */
    QdFrontendOptions frontend;    /* typing options */
    bool verify;                   /* verify the IR after every pass (tests, QD_VERIFY=1) */
    bool keep_qir;                 /* fill qir_frontend / qir_final (tests, debugging) */
    char *qir_frontend;            /* out: the QIR the frontend produced (free()) */
    char *qir_final;               /* out: the QIR handed to the code generator (free()) */
    QdCache *cache;                /* offline cache, or NULL */
    const char *compiler_id;       /* identifies this compiler build in cache keys */
    const QdDigest *source_key;    /* the caller's pre-lowering key, linked to the code entry
                                      (NULL: none) */
} QdCompileRequest;

/* Compiles a kernel for `target`: the frontend, the pass pipeline (passes.def), then, through
 * the offline cache when req->cache is set, the target's code generation and load. 0 with *out
 * filled (release with qd_driver_kernel_release), or -1 with a diag and nothing to release. */
int qd_driver_compile(QdCtx *ctx, QdCompileRequest *req, QdTarget target, const QdTargetEnv *env,
                      QdDriverKernel *out);

/* The warm path: loads the code that source key `source_key` compiled to for `target`, without
 * the frontend. 1 with *out filled; 0 on a miss or an unusable entry (nothing to release). */
int qd_driver_load_cached(QdCache *cache, const QdDigest *source_key, QdTarget target,
                          const QdTargetEnv *env, QdDriverKernel *out);

/* Code generation and load of kernel `kernel_name` of a module the passes already ran on (test
 * hooks that build QIR by hand), without the cache. 0 with *out, or -1 with a diag. */
int qd_driver_compile_module(QdCtx *ctx, QdModule *m, const char *kernel_name, QdTarget target,
                             const QdTargetEnv *env, QdDriverKernel *out);

/* Code generation and load of a lowered kernel by `target`, without the cache unless `artifact`
 * (then under the symbol prefix `symbol`, keeping what the cache stores). out->ms_codegen counts
 * from `since` (NULL: from the start of code generation). 0, or -1 with a diag. */
int qd_driver_generate(QdCtx *ctx, QdTarget target, const QdTargetEnv *env, QdModule *m,
                       const char *kernel_name, const char *symbol, const struct timespec *since,
                       QdDriverKernel *out, QdDriverArtifact *artifact);
/* Whether QD_DUMP lists `stage` (frontend, passes, ptx; all). */
bool qd_driver_dump_enabled(const char *stage);

/***** for the Python layer's runtime and test hooks *****/

/* A CPU JIT that links against the CPU runtime's symbols (runtime/cpu); NULL with a diag.
 * Free with qd_cpu_jit_free. */
QdCpuJit *qd_driver_jit_new(QdCtx *ctx, const QdLlvmOptions *opts);

/* The passes the QIR test hooks run when not told otherwise: what hand-written QIR needs
 * before code generation. Kernels always get the whole pipeline (qd_run_pipeline). */
#define QD_DRIVER_TEST_PASSES "instantiate,inline,nn_lower,constfold,dce"
/* Runs the passes named in `pass_list`, in that order (passes/passes.h: qd_run_passes). */
int qd_driver_run_passes(QdCtx *ctx, QdModule *m, const char *pass_list, bool verify_each);
/* Names of the passes in pipeline order, NULL-terminated. */
const char *const *qd_driver_pass_names(void);

/***** the targets (targets.def): one file each, target_NAME.c *****/

/* identity: the target's part of the code key: a string of its own, or one it wrote to
 *   out[0..size) (NUL-terminated).
 * codegen: generates the code of a lowered kernel into k; with `artifact`, under the symbol
 *   prefix `symbol` and keeping in *artifact what the cache stores. 0, or -1 with a diag.
 * load: makes k launchable: from_cache false: the code codegen just made (and, with artifact,
 *   keeps in it what the cache stores, e.g. the cubin); from_cache true: from an artifact that
 *   read filled. 0, or -1 with a diag.
 * write: the payload of k and its artifact; false when there is nothing worth storing.
 * read: fills k (info included) and *artifact from a payload; -1 when malformed.
 * release: frees the target's parts of k and clears them. */
#define QD_TARGET(name, tag, entry, descr)                                                         \
    const char *qd_target_##name##_identity(const QdTargetEnv *env, char *out, size_t size);      \
    int qd_target_##name##_codegen(QdCtx *ctx, const QdTargetEnv *env, QdModule *m,                \
                                   const char *kernel_name, const char *symbol,                    \
                                   QdDriverKernel *k, QdDriverArtifact *artifact);                 \
    int qd_target_##name##_load(QdCtx *ctx, const QdTargetEnv *env, QdDriverKernel *k,             \
                                QdDriverArtifact *artifact, bool from_cache);                      \
    bool qd_target_##name##_write(QdBytesOut *out, const QdDriverKernel *k,                        \
                                  const QdDriverArtifact *artifact);                               \
    int qd_target_##name##_read(QdBytesIn *in, QdDriverKernel *k, QdDriverArtifact *artifact);     \
    void qd_target_##name##_release(QdDriverKernel *k);
#include "targets.def"
#undef QD_TARGET

/* A target as the driver sees it: one row of targets.def. */
typedef struct QdTargetInfo {
    const char *tag;   /* first part of its code keys */
    const char *entry; /* cache entry kind of its payloads */
    const char *(*identity)(const QdTargetEnv *env, char *out, size_t size);
    int (*codegen)(QdCtx *ctx, const QdTargetEnv *env, QdModule *m, const char *kernel_name,
                   const char *symbol, QdDriverKernel *k, QdDriverArtifact *artifact);
    int (*load)(QdCtx *ctx, const QdTargetEnv *env, QdDriverKernel *k, QdDriverArtifact *artifact,
                bool from_cache);
    bool (*write)(QdBytesOut *out, const QdDriverKernel *k, const QdDriverArtifact *artifact);
    int (*read)(QdBytesIn *in, QdDriverKernel *k, QdDriverArtifact *artifact);
    void (*release)(QdDriverKernel *k);
} QdTargetInfo;

/* The row of `target` (compile.c). */
const QdTargetInfo *qd_target_info(QdTarget target);

/***** cache_io.c: offline cache entries of compiled kernels *****/

/* The code key of a kernel: tag ("cpu", "cuda"), compiler build, target identity, kernel name
 * and the final QIR. */
QdDigest qd_cache_code_key(const char *tag, const char *compiler_id, const char *target,
                           const char *name, const char *qir);
/* Records source_key -> code_key for the target of this tag and identity (no-op when either
 * cache or source_key is NULL). */
void qd_cache_link(QdCache *cache, const QdDigest *source_key, const char *tag,
                   const char *identity, const QdDigest *code_key);
/* 1 with *code_key when source_key has a link entry for the target of this tag and identity,
 * else 0. */
int qd_cache_follow(QdCache *cache, const QdDigest *source_key, const char *tag,
                    const char *identity, QdDigest *code_key);

/* Through the cache: loads the entry of the lowered kernel's code key, or generates, loads
 * and stores it; links req->source_key to it either way. 0 with *out, or -1 with a diag. */
int qd_cache_compile(QdCtx *ctx, QdCompileRequest *req, QdTarget target, const QdTargetEnv *env,
                     QdModule *m, const char *kernel_name, QdDriverKernel *out);
/* Loads the entry `code_key` of `target`: 1 with *out filled, 0 when absent or unusable
 * (nothing to release). */
int qd_cache_load_entry(QdCache *cache, const QdDigest *code_key, QdTarget target,
                        const QdTargetEnv *env, QdDriverKernel *out);

/* Payload pieces shared by the targets' entries. The readers return -1 on malformed input,
 * leaving what they allocated for the caller to release. */
void qd_cache_write_layout(QdBytesOut *out, const QdCompiledKernel *k);
int qd_cache_read_layout(QdBytesIn *in, QdCompiledKernel *k);
void qd_cache_write_info(QdBytesOut *out, const QdKernelInfo *info);
int qd_cache_read_info(QdBytesIn *in, QdKernelInfo *info);
void qd_cache_write_strings(QdBytesOut *out, char *const *strings, uint32_t n);
int qd_cache_read_strings(QdBytesIn *in, char ***strings, uint32_t *n);

#endif /* QD_DRIVER_H */
