/* python/device_kernel.h -- quadrants._core.DeviceKernel: a kernel compiled for a GPU target
 * (CUDA or Vulkan) for one argument signature, called exactly like a CPU CompiledKernel.
 *
 * device_kernel.c holds everything the targets share: the type, compiling and loading through
 * the driver, the arguments (one packer, pack.c; host arrays copied to device memory and back),
 * the assert flag, the results and the attributes. What differs is a DeviceTarget table
 * (cuda_kernel.c, vulkan_kernel.c): device memory, the tasks' grids, running the tasks, the
 * launch tail and prints.
 */
#ifndef QD_PYTHON_DEVICE_KERNEL_H
#define QD_PYTHON_DEVICE_KERNEL_H

#include "cuda_py.h"

/* Device memory of either target: CUDA uses `address` alone, Vulkan the buffer `vk` (whose
 * address `address` repeats). All zero: none. */
typedef struct DeviceMem {
    uint64_t address;
    QdVkBuffer vk;
} DeviceMem;

/* One task as the launcher runs it. */
typedef struct DeviceTask {
    QdCuFunction function; /* CUDA: the task's kernel */
    QdTaskBounds bounds;   /* range_for: host bounds function, or NULL */
    uint32_t block_dim;    /* threads per block (workgroup); 1 for a serial task */
    uint32_t max_blocks;   /* range_for: blocks at most when the host knows the trip count */
    uint32_t open_blocks;  /* range_for whose trip count the host does not know: its grid */
    bool is_serial;        /* one thread */
    char name[160];        /* entry point name, for errors and `tasks` */
} DeviceTask;

typedef struct DeviceKernelObject DeviceKernelObject;

/* Code generation options of a target, for one device. */
typedef struct DeviceOptions {
    QdNvptxOptions nvptx; /* CUDA */
    QdGlslOptions glsl;   /* Vulkan */
    bool tensor_cores;    /* the frontend may mark qd.nn products for tensor cores */
    bool lacks_atomic_int64; /* no 64-bit atomics on global memory (QdFrontendOptions) */
    uint32_t max_shared_bytes; /* shared memory per block (QdFrontendOptions) */
} DeviceOptions;

/* What a GPU target does its own way. Functions returning int give 0, or -1 with a diag in ctx
 * (out of host memory: with a Python exception set). */
typedef struct DeviceTarget {
    QdTarget target;
    const char *name; /* "CUDA", "Vulkan": for messages */
    /* The options for the current device (a missing device is a diag), and `env`'s target
     * fields pointing into them. */
    int (*options)(QdCtx *ctx, PyObject *options, DeviceOptions *out, QdTargetEnv *env);
    /* Points the object's layout, asserts and prints at its code (after it was moved in). */
    void (*take)(DeviceKernelObject *k);
    /* The tasks' functions and grids (saturating > 0: every range_for's grid), the
     * per-process buffers, and the size of the parameter buffer. */
    int (*prepare)(DeviceKernelObject *k, QdCtx *ctx, long saturating);
    /* Device memory (mapped: the host reads it often), zero-filled. */
    int (*alloc)(QdCtx *ctx, size_t bytes, bool mapped, DeviceMem *out);
    void (*free)(DeviceMem *mem);
    int (*upload)(QdCtx *ctx, const DeviceMem *dst, const void *src, size_t bytes);
    int (*download)(QdCtx *ctx, void *dst, const DeviceMem *src, size_t offset, size_t bytes);
    /* Whether a non-empty DeviceBuffer is this target's memory. */
    bool (*owns)(const DeviceBufferObject *buf);
    /* The assert flag and values shared by every launch. */
    const DeviceMem *(*runtime_state)(void);
    /* The launch tail after the arguments, beyond results, tmps and the runtime state. */
    void (*write_tail)(const DeviceKernelObject *k, unsigned char *tail);
    /* Every task in order, the tmps zeroed first; `wait`: returns once they finished. With
     * `seconds` (the kernel profiler) seconds[t] receives the time of task t. */
    int (*run)(DeviceKernelObject *k, QdCtx *ctx, unsigned char *packed, bool wait,
               double *seconds);
    /* After a launch that prints: the output written out. */
    int (*flush_prints)(DeviceKernelObject *k, QdCtx *ctx);
    /* compile_ms: a new dict of the compile's stages. */
    PyObject *(*compile_ms)(const DeviceKernelObject *k);
} DeviceTarget;

extern const DeviceTarget qd_py_cuda_target;
extern const DeviceTarget qd_py_vulkan_target;

struct DeviceKernelObject {
    QD_PY_KERNEL_HEAD               /* vectorcall: device_vectorcall; layout: in code */
    const DeviceTarget *target;
    QdDriverKernel code;            /* the driver's code (released with the object) */
    char *const *asserts;           /* message of assert id i (in code) */
    char *const *assert_kinds;      /* kinds of its values */
    uint32_t nasserts;
    bool prints;                    /* the kernel prints */
    DeviceTask *tasks;              /* layout->ntasks entries */
    void *scratch;                  /* the target's per-launch scratch (Vulkan: dispatches) */
    QdPyParam *params;              /* one per Python argument */
    uint32_t nparams;
    uint32_t param_bytes;           /* arguments and launch tail */
    int64_t rng_offset;             /* offset of the hidden random seed, -1 when none */
    DeviceMem results;              /* kernel_ret slots (none when the kernel returns nothing) */
    DeviceMem tmps;                 /* tmp_alloc slots (none when it has none) */
    uint64_t generation;            /* runtime generation it was compiled in */
    QdCpuJit *own_jit;              /* QIR tests: the JIT holding the host bounds (else NULL) */
};

/* The target a compile with these options is for, or NULL for the CPU. */
const DeviceTarget *qd_py_device_target(PyObject *options);

/* A DeviceKernel for kernel `name` of the concrete QIR module m (tests), with a CPU JIT of its
 * own for the host bounds and fields looked up by name in `fields` (a dict of DeviceBuffers,
 * borrowed; NULL: none). Its parameters are the QIR kernel's, all passed. New reference or
 * NULL with an exception. */
PyObject *qd_py_device_kernel_from_qir(PyObject *module, const DeviceTarget *target,
                                       QdModule *m, const char *name, PyObject *options,
                                       PyObject *fields);

/* The blocks (workgroups) task `task` runs for the packed arguments: 1 for a serial task,
 * open_blocks when the host does not know the trip count, else ceil(n / block_dim) capped at
 * max_blocks, and 0 for an empty range (no launch). */
uint32_t qd_py_device_task_blocks(const DeviceTask *task, unsigned char *packed);

/* Benchmarks: packs `args` for a CUDA DeviceKernel once, then calls cuLaunchKernel on its
 * first task `iterations` times from C; returns the host microseconds per call (a float), or
 * NULL with an exception. Arrays must be DeviceBuffers. */
PyObject *qd_py_cuda_raw_launch_us(PyObject *kernel, PyObject *const *args, Py_ssize_t nargs,
                                   long iterations);

/* For the raw launch benchmark: the packed arguments of a launch with no host arrays. 0, or -1
 * with an exception. */
int qd_py_device_pack_device_only(DeviceKernelObject *k, PyObject *const *args,
                                  unsigned char *packed, size_t capacity);

#endif /* QD_PYTHON_DEVICE_KERNEL_H */
