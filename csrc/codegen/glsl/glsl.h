/* codegen/glsl/glsl.h -- the GLSL code generator: QIR kernels to GLSL compute shaders (one per
 * task), and GLSL to SPIR-V with glslang, for the Vulkan runtime.
 *
 * Depends on ir/, abi/ and base/ only. glslang is linked statically (its C interface); the
 * Vulkan runtime (runtime/vulkan) makes pipelines of the SPIR-V.
 *
 * ================================== VULKAN KERNEL ABI =======================================
 *
 * Shaders. Task i of a kernel is one compute shader (`#version 460`, entry point main) with
 * `layout(local_size_x = B)`: B is the task's block_dim (QdGlslTask.block_dim; the loop's
 * block_dim, else QdGlslOptions.default_block_dim; 1 for a serial task). Its only interface is
 * a push constant block holding one uint64_t, the device address P of the parameter buffer;
 * all memory is reached through 64-bit device addresses (GL_EXT_buffer_reference), so there
 * are no descriptor sets.
 *
 * Parameter buffer at P (abi/abi.h):
 *     [0, args_size)                    the packed arguments, laid out by qd_arg_layout exactly
 *                                       as for the CPU and CUDA (the caller passes the offsets),
 *                                       ndarray data fields holding device addresses
 *     args_size + QD_NVPTX_TAIL_RESULTS u64 address of the kernel_ret slots (8 bytes each)
 *     args_size + QD_NVPTX_TAIL_TMPS    u64 address of the tmp_alloc slots (zeroed by the
 *                                       launcher before the first task of every launch)
 *     args_size + QD_NVPTX_TAIL_RUNTIME u64 address of the runtime state: i32 assert flag,
 *                                       then from byte 8 the 64-bit values of the failed assert
 *     args_size + QD_VK_TAIL_PRINT      u64 address of the print buffer (abi.h: QD_VK_PRINT_BYTES)
 *     args_size + QD_VK_TAIL_FIELDS + 8k  u64 base address of field fields[k]
 *
 * Tasks. A serial task is dispatched as one workgroup of one invocation. A range_for task
 * evaluates its prologue on every invocation and runs a grid-stride loop: iteration begin + j on
 * global invocation j (gl_GlobalInvocationID.x), then j + gl_NumWorkGroups.x * B, ...; any
 * number of workgroups is correct, and the launcher sizes it from the host bounds functions
 * (codegen/llvm) when it has them. Between tasks the launcher places a full memory barrier.
 *
 * Memory is laid out as on the CPU and CUDA: row-major elements, u1 as one byte 0/1, f16 as
 * its 16 bits, tmp_alloc slots 8-byte aligned in instruction order (the same rule as the LLVM
 * emitter's layout_tmps). Semantics where ops.def leaves room are those of codegen/llvm/
 * codegen.h (division by zero gives 0, shifts modulo the width, saturating float -> int casts,
 * minnum / maxnum, wrapping integers), so every backend computes the same results.
 */
#ifndef QD_CODEGEN_GLSL_H
#define QD_CODEGEN_GLSL_H

#include "../../abi/abi.h"
#include "../../ir/ir.h"

/* What the device can do, and code generation choices. */
typedef struct QdGlslOptions {
    uint32_t default_block_dim; /* invocations per workgroup of range_for tasks without one */
    uint32_t subgroup_size;     /* the device's subgroup size */
    bool fast_math;             /* contractions and reassociation allowed */
    QdVkFeatures features;      /* what the device has (abi/vk_features.def) */
    uint32_t max_shared_bytes;  /* the device's shared memory per workgroup: the frontend sizes
                                   qd.algorithms tiles to it (0: unknown) */
} QdGlslOptions;

void qd_glsl_options_default(QdGlslOptions *opts);

/* One task: its shader and how to launch it. */
typedef struct QdGlslTask {
    char *source;        /* GLSL text, NUL-terminated (malloc) */
    uint32_t block_dim;  /* local_size_x (1 for a serial task) */
    bool is_serial;      /* serial task */
    bool reduces;        /* range_for that combines partial_* accumulators with atomics after
                            its loop: the launcher keeps its grid small */
    char name[160];      /* task name for errors and profiles: "<kernel>_t<i>[_<loop name>]" */
} QdGlslTask;

/* A kernel compiled to GLSL. Release with qd_glsl_kernel_release. */
typedef struct QdGlslKernel {
    QdGlslTask *tasks;        /* ntasks, in launch order */
    uint32_t ntasks;
    uint32_t tmps_size;       /* bytes of tmp_alloc slots (0 when none) */
    uint32_t nresults;        /* 1 + the highest kernel_ret index, 0 when none */
    QdTypeKind *result_types; /* nresults entries (VOID: never set) */
    char **fields;            /* names of the fields the kernel reads, in parameter order */
    uint32_t nfields;
    char **asserts;           /* message of assert id i (printf format when it has values) */
    char **assert_kinds;      /* kinds of its values ('i', 'u', 'f'; "" when none) */
    uint32_t nasserts;
    char **prints;            /* format of print id i (its values' kinds in print_kinds) */
    char **print_kinds;
    uint32_t nprints;
} QdGlslKernel;

/* Generates the shaders of kernel `kernel_name` of module m (concrete: the pass pipeline ran).
 * `arg_offsets` (one per parameter, QD_ARG_UNUSED for unread ones) and `args_size` come from
 * qd_arg_layout. 0 with *out filled, or -1 with a diag: QD_ERR_SYNTAX "<what> is not supported
 * on the Vulkan backend[: why]" for constructs the target cannot express (recursion,
 * a feature the device lacks -- named), QD_ERR_INTERNAL for invalid input. */
int qd_glsl_emit(QdCtx *ctx, QdModule *m, const char *kernel_name, const uint32_t *arg_offsets,
                 uint32_t args_size, const QdGlslOptions *opts, QdGlslKernel *out);
void qd_glsl_kernel_release(QdGlslKernel *k);

/***** glslang.c *****/

/* Compiles GLSL compute shader text to SPIR-V (Vulkan 1.2 environment, SPIR-V 1.5) with
 * glslang, in process. `what` names the shader in errors, which carry glslang's log and the
 * offending source line. 0 with *words (malloc) and *nwords, or -1 with a QD_ERR_COMPILATION
 * diag. Thread-safe. */
int qd_glsl_to_spirv(QdCtx *ctx, const char *source, const char *what, uint32_t **words,
                     size_t *nwords);
/* glslang's version string ("12.0.0"). */
const char *qd_glslang_version(void);

#endif /* QD_CODEGEN_GLSL_H */
