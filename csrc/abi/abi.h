/* abi/abi.h -- the kernel ABI: every fact the generated code and the launchers share, defined
 * once. The code generator (codegen/llvm) emits code that reads these layouts, the runtimes
 * (runtime/cpu, the CUDA launcher) and the Python launchers write them; all include this header
 * and nothing else defines them. codegen/llvm/codegen.h ("KERNEL ABI") describes the contract
 * in prose.
 *
 * Depends on nothing but the C library.
 */
#ifndef QD_ABI_H
#define QD_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/***** argument kinds (args.def) *****/

typedef enum QdArgKind {
#define QD_ARG_KIND(NAME, text, passed, description) QD_ARG_##NAME,
#include "args.def"
#undef QD_ARG_KIND
} QdArgKind;

/* The number of kinds (not a QdArgKind, so that switches over the kinds stay exhaustive). */
enum {
    QD_ARG_KIND_COUNT = 0
#define QD_ARG_KIND(NAME, text, passed, description) +1
#include "args.def"
#undef QD_ARG_KIND
};

/* The descriptor text of `kind` ("scalar", ...). */
static inline const char *
qd_arg_kind_text(QdArgKind kind)
{
    static const char *const texts[] = {
#define QD_ARG_KIND(NAME, text, passed, description) text,
#include "args.def"
#undef QD_ARG_KIND
    };
    return (unsigned)kind < QD_ARG_KIND_COUNT ? texts[kind] : "?";
}

/* The kind whose descriptor text is `text`, or -1 for none. */
static inline int
qd_arg_kind_from_text(const char *text)
{
    for (unsigned k = 0; k < QD_ARG_KIND_COUNT; k++) {
        if (strcmp(text, qd_arg_kind_text((QdArgKind)k)) == 0) {
            return (int)k;
        }
    }
    return -1;
}

/* Whether an argument of `kind` occupies bytes of the packed arguments. */
static inline int
qd_arg_kind_is_passed(QdArgKind kind)
{
    static const unsigned char passed[] = {
#define QD_ARG_KIND(NAME, text, is_passed, description) is_passed,
#include "args.def"
#undef QD_ARG_KIND
    };
    return (unsigned)kind < QD_ARG_KIND_COUNT && passed[kind];
}

/***** launch context *****/

/* Bytes of the assert message kept in a QdLaunchCtx (including the NUL). */
#define QD_ASSERT_MESSAGE_MAX 512

/* Everything one CPU launch shares between the launcher and the generated code. The generated
 * code reads the first three fields, at the offsets below; the rest belongs to the runtime. */
typedef struct QdLaunchCtx {
    void *args;            /* the packed arguments */
    void *results;         /* kernel_ret slots (QD_RESULT_SLOT_BYTES each) */
    void *tmps;            /* tmp_alloc slots (undefined at the first task, like allocas) */
    uint64_t tmps_size;    /* bytes at tmps (0: none, tmps may be NULL) */
    int32_t assert_failed; /* set to 1 by the first failing assert (the runtime clears it) */
    char assert_message[QD_ASSERT_MESSAGE_MAX]; /* its message, NUL-terminated */
} QdLaunchCtx;

#define QD_LAUNCH_CTX_ARGS_OFFSET    0
#define QD_LAUNCH_CTX_RESULTS_OFFSET 8
#define QD_LAUNCH_CTX_TMPS_OFFSET    16
_Static_assert(offsetof(QdLaunchCtx, args) == QD_LAUNCH_CTX_ARGS_OFFSET, "ABI: ctx args");
_Static_assert(offsetof(QdLaunchCtx, results) == QD_LAUNCH_CTX_RESULTS_OFFSET, "ABI: results");
_Static_assert(offsetof(QdLaunchCtx, tmps) == QD_LAUNCH_CTX_TMPS_OFFSET, "ABI: ctx tmps");

/***** results *****/

/* Bytes per kernel_ret slot: result i is at results + QD_RESULT_SLOT_BYTES * i, stored with its
 * own type (u1 as one byte 0 or 1, f16 / bf16 as their 16 bits). */
#define QD_RESULT_SLOT_BYTES 8
/* The most results a kernel returns (scalars; a vector, matrix or struct result is one per
 * element or scalar member). */
#define QD_MAX_RESULTS 1024

/***** packed arguments *****/

/* The most axes an ndarray argument has (element axes included). */
#define QD_NDARRAY_MAX_NDIM 12
/* The ndarray record of an ndarray<T, n> parameter: { u64 data; i32 shape[n]; }, aligned to 8,
 * its size rounded up to 8. data is a host address on the CPU, a device address on CUDA. */
#define QD_NDARRAY_RECORD_ALIGN 8
#define QD_NDARRAY_DATA_OFFSET  0

static inline uint32_t
qd_ndarray_extent_offset(uint32_t axis)
{
    return 8 + 4 * axis;
}

static inline uint32_t
qd_ndarray_record_size(uint32_t ndim)
{
    return (qd_ndarray_extent_offset(ndim) + 7) & ~7u;
}

/* Writes the ndarray record at `record`. The extents must be below 2^31. */
static inline void
qd_ndarray_record_write(unsigned char *record, uint64_t data, const int64_t *shape,
                        uint32_t ndim)
{
    memcpy(record + QD_NDARRAY_DATA_OFFSET, &data, sizeof(data));
    for (uint32_t d = 0; d < ndim; d++) {
        int32_t extent = (int32_t)shape[d];
        memcpy(record + qd_ndarray_extent_offset(d), &extent, sizeof(extent));
    }
}

/* The offset of a parameter the code never reads: it takes no bytes of the packed arguments, and
 * launchers neither convert nor check its argument. */
#define QD_ARG_UNUSED UINT32_MAX

/* The packed arguments' total size is rounded up to this. */
#define QD_ARGS_ALIGN 8

/***** NVPTX launch tail *****/

/* Bytes the CUDA launcher appends to the packed arguments (results, tmps, runtime state) and
 * the offset of each device pointer from the end of the packed arguments. */
#define QD_NVPTX_TAIL_BYTES   24
#define QD_NVPTX_TAIL_RESULTS 0
#define QD_NVPTX_TAIL_TMPS    8
#define QD_NVPTX_TAIL_RUNTIME 16
/* The runtime state a kernel's tail points at: the i32 assert flag, then from byte 8 one
 * 64-bit slot per value of the failed assert's message (at most this many values). */
#define QD_NVPTX_ASSERT_VALUES       32
#define QD_NVPTX_RUNTIME_STATE_BYTES (8 + 8 * QD_NVPTX_ASSERT_VALUES)
/* Task kernels for sm_<this> and newer begin with griddepcontrol.launch_dependents and
 * griddepcontrol.wait (llvm_emit_task.c), so the launcher may launch them as programmatic
 * dependent launches (cuda_launch.c) on devices of that compute capability or newer. */
#define QD_NVPTX_DEPENDENT_LAUNCH_SM 90

/***** Vulkan parameter buffer *****/

/* A Vulkan kernel reads its parameters from a device buffer whose address is its only push
 * constant: the packed arguments, the tail of the NVPTX launch (results, tmps, runtime state at
 * the same offsets), the address of the print buffer, then one u64 per field the kernel reads:
 * the device address of field k of QdGlslKernel.fields at QD_VK_TAIL_FIELDS + 8 * k. */
#define QD_VK_TAIL_PRINT  QD_NVPTX_TAIL_BYTES
#define QD_VK_TAIL_FIELDS (QD_NVPTX_TAIL_BYTES + 8)
/* The print buffer of Vulkan kernels: a u32 count of the 64-bit words used after the first
 * (atomically added to), then the records: a word holding the print's id (low 32 bits) and its
 * number of values n (high 32 bits), then n words: each value as an int64 ('i'), uint64 ('u')
 * or a double's bits ('f'). A record that does not fit is dropped; the count still grows, so
 * the host knows how many were lost. */
#define QD_VK_PRINT_BYTES ((uint64_t)1 << 22)

/***** Vulkan device features (vk_features.def) *****/

/* The optional features of a Vulkan device that change generated code: what the device has
 * (runtime/vulkan QdVkDeviceInfo), what the GLSL code generator may use (QdGlslOptions). */
typedef struct QdVkFeatures {
#define QD_VK_FEATURE(name, bit, dflt, source) bool name;
#include "vk_features.def"
#undef QD_VK_FEATURE
} QdVkFeatures;

#endif
