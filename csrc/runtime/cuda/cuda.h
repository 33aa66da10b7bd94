/* runtime/cuda/cuda.h -- the CUDA runtime: the driver API loaded with dlopen, the device, device
 * memory, modules and launches.
 *
 * Depends on base/ only (the layer rules); nothing here knows the IR or LLVM. The driver is
 * never linked: cuda_load.c opens libcuda.so.1 (or $QD_CUDA_DRIVER) on first use and resolves
 * the entry points of cuda_api.def, so a machine without a driver imports the extension and
 * runs the CPU backend; qd_cuda_available() then says false and qd_cuda_load's diag says why.
 *
 * Model (one process, one device):
 *   - the device is ordinal 0 (or $QD_CUDA_DEVICE); its *primary* context is used, the one the
 *     CUDA runtime, torch and CuPy share, so device pointers from them are valid here;
 *   - every entry point that calls the driver first makes that context current on the calling
 *     thread (qd_cuda_enter), so Python threads may launch freely;
 *   - work goes to the legacy default stream: launches are asynchronous, the synchronous copies
 *     (qd_cuda_upload / download) are ordered after all launched work, qd_cuda_sync waits;
 *   - every failing driver call becomes a QD_ERR_RUNTIME diag naming the call's purpose, the
 *     error's name and description (cuGetErrorName / cuGetErrorString) and, for errors that
 *     surface after asynchronous work, the last kernel launched on this thread.
 * The types below are ABI-compatible spellings of the driver's (CUresult, CUdeviceptr, ...),
 * prefixed so that this header never clashes with NVIDIA's cuda.h.
 */
#ifndef QD_RUNTIME_CUDA_H
#define QD_RUNTIME_CUDA_H

#include "../../base/base.h"

/***** driver types (cuda.h spellings in comments) *****/

typedef int QdCuResult;                       /* CUresult: 0 = CUDA_SUCCESS */
typedef int QdCuDevice;                       /* CUdevice: a device handle */
typedef uint64_t QdCuDeviceptr;               /* CUdeviceptr: a device address */
typedef struct QdCuContextOpaque *QdCuContext;     /* CUcontext */
typedef struct QdCuModuleOpaque *QdCuModule;       /* CUmodule */
typedef struct QdCuFunctionOpaque *QdCuFunction;   /* CUfunction */
typedef struct QdCuStreamOpaque *QdCuStream;       /* CUstream (NULL: legacy default stream) */
typedef struct QdCuLinkStateOpaque *QdCuLinkState; /* CUlinkState */

/* CUlaunchAttribute: an attribute id (CUlaunchAttributeID), padding to 8 bytes and a 64-byte
 * value union, of which the launcher sets one int. */
typedef struct QdCuLaunchAttribute {
    int id;
    char pad[4];
    union {
        char bytes[64];
        int flag;
    } value;
} QdCuLaunchAttribute;
/* CUlaunchAttributeID: kernels of one stream may overlap, the later one waiting in
 * griddepcontrol.wait (CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION). */
#define QD_CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION 6
/* CUlaunchConfig. */
typedef struct QdCuLaunchConfig {
    unsigned int grid_x, grid_y, grid_z;
    unsigned int block_x, block_y, block_z;
    unsigned int shared_bytes;
    QdCuStream stream;
    QdCuLaunchAttribute *attrs;
    unsigned int nattrs;
} QdCuLaunchConfig;
_Static_assert(sizeof(QdCuLaunchAttribute) == 72, "CUlaunchAttribute");
_Static_assert(sizeof(QdCuLaunchConfig) == 56, "CUlaunchConfig");

/* CUdevice_attribute values used by the runtime. */
#define QD_CU_ATTR_MAX_THREADS_PER_BLOCK       1
#define QD_CU_ATTR_MAX_SHARED_MEMORY_PER_BLOCK 8
#define QD_CU_ATTR_CLOCK_RATE                  13
#define QD_CU_ATTR_SM_COUNT                    16
#define QD_CU_ATTR_MAX_THREADS_PER_SM          39
#define QD_CU_ATTR_CC_MAJOR                    75
#define QD_CU_ATTR_CC_MINOR                    76
/* CUjit_option values (linker options) and CUjitInputType. */
#define QD_CU_JIT_INFO_LOG_BUFFER        3
#define QD_CU_JIT_INFO_LOG_BUFFER_BYTES  4
#define QD_CU_JIT_ERROR_LOG_BUFFER       5
#define QD_CU_JIT_ERROR_LOG_BUFFER_BYTES 6
#define QD_CU_JIT_OPTIMIZATION_LEVEL     7
#define QD_CU_JIT_INPUT_PTX              1
/* CUresult values the runtime tells apart. */
#define QD_CU_ERROR_OUT_OF_MEMORY 2
#define QD_CU_ERROR_NO_DEVICE     100
#define QD_CU_ERROR_INVALID_CONTEXT 201
#define QD_CU_ERROR_INVALID_HANDLE 400
#define QD_CU_ERROR_CONTEXT_IS_DESTROYED 709

/* The driver's entry points, one function pointer per row of cuda_api.def. */
typedef struct QdCudaApi {
#define QD_CUDA_API(name, symbol, params) QdCuResult(*name) params;
#include "cuda_api.def"
#undef QD_CUDA_API
} QdCudaApi;

/* The device in use and its facts, queried once. */
typedef struct QdCudaDevice {
    int ordinal;               /* device ordinal */
    QdCuDevice handle;         /* driver handle */
    QdCuContext context;       /* its primary context (retained for the process's lifetime) */
    int cc_major;              /* compute capability, e.g. 9 */
    int cc_minor;              /* ... and 0 */
    int sm_count;              /* streaming multiprocessors */
    int max_threads_per_sm;    /* resident threads per SM */
    int max_threads_per_block; /* largest block */
    int max_shared_memory_per_block; /* bytes of static shared memory one block may use */
    int driver_version;        /* 1000 * major + 10 * minor */
    int clock_rate_khz;        /* peak clock in kHz (0 when the driver does not tell) */
    size_t total_memory;       /* bytes of device memory */
    char name[256];            /* marketing name */
} QdCudaDevice;

/***** cuda_load.c *****/

/* The driver API, loading libcuda.so.1 and calling cuInit on first use (thread-safe; the
 * outcome is kept for the process). NULL with a QD_ERR_RUNTIME diag saying why (library not
 * found, a missing entry point, cuInit failed). */
const QdCudaApi *qd_cuda_load(QdCtx *ctx);
/* Whether the driver loads, initialises and reports at least one device. Never fails. */
bool qd_cuda_available(void);
/* The device, retaining its primary context on first use, current on the calling thread.
 * NULL with a diag when CUDA is unavailable. */
const QdCudaDevice *qd_cuda_device(QdCtx *ctx);
/* Makes the device's primary context current on the calling thread (opening it if needed).
 * Cheap when it already is. 0, or -1 with a diag. */
int qd_cuda_enter(QdCtx *ctx);
/* As qd_cuda_enter, but trusts this thread's last successful entry: no driver call when the
 * thread entered before. Only for launches, which retry through qd_cuda_enter when the driver
 * reports a missing or foreign context (qd_cuda_launch). */
int qd_cuda_enter_cached(QdCtx *ctx);
/* Forgets this thread's entry: the next qd_cuda_enter_cached asks the driver again. */
void qd_cuda_forget_entry(void);
/* 0 when r is success; else -1 with a QD_ERR_RUNTIME diag "<what>: <NAME>: <description>"
 * plus the last kernel launched on this thread when there was one. `what` is printf-style. */
int qd_cuda_check(QdCtx *ctx, QdCuResult r, const char *what, ...)
    __attribute__((format(printf, 3, 4)));
/* The driver's name of an error ("CUDA_ERROR_..."), or "CUDA error <n>". */
const char *qd_cuda_error_name(QdCuResult r);

/***** cuda_mem.c *****/

/* Allocates `bytes` (at least 1) of device memory, zero-filled. Out of memory is a diag that
 * names the size and the free memory. */
int qd_cuda_alloc(QdCtx *ctx, size_t bytes, QdCuDeviceptr *out);
/* Frees an allocation (0 is allowed); errors are ignored (nothing to report them to). */
void qd_cuda_free(QdCuDeviceptr ptr);
/* Synchronous copies; each waits for earlier work on the default stream. */
int qd_cuda_upload(QdCtx *ctx, QdCuDeviceptr dst, const void *src, size_t bytes);
int qd_cuda_download(QdCtx *ctx, void *dst, QdCuDeviceptr src, size_t bytes);
int qd_cuda_copy(QdCtx *ctx, QdCuDeviceptr dst, QdCuDeviceptr src, size_t bytes);
/* Waits for all launched work (qd.sync); reports errors of earlier launches. */
int qd_cuda_sync(QdCtx *ctx);

/***** cuda_module.c *****/

/* Compiles PTX text (NUL-terminated, `bytes` including the NUL) with the driver's linker to a
 * cubin for the current device and loads it. `what` names the kernel in errors, which carry
 * the linker's error log. */
int qd_cuda_module_load(QdCtx *ctx, const char *ptx, size_t bytes, const char *what,
                        QdCuModule *out);
/* As qd_cuda_module_load, and a malloc'd copy of the cubin in *cubin / *cubin_size (for the
 * offline cache). */
int qd_cuda_module_load_keep(QdCtx *ctx, const char *ptx, size_t bytes, const char *what,
                             QdCuModule *out, void **cubin, size_t *cubin_size);
/* Loads a cubin made by qd_cuda_module_load_keep (in this or an earlier process). */
int qd_cuda_module_load_cubin(QdCtx *ctx, const void *cubin, const char *what, QdCuModule *out);
/* Milliseconds the last qd_cuda_module_load of this thread spent linking the PTX to a cubin
 * (cuLinkAddData + cuLinkComplete) and loading the module (cuModuleLoadData). */
void qd_cuda_module_load_times(double *link_ms, double *load_ms);
/* Unloads a module (NULL is allowed). */
void qd_cuda_module_unload(QdCuModule module);
/* Entry point `name` of a module. */
int qd_cuda_module_function(QdCtx *ctx, QdCuModule module, const char *name, QdCuFunction *out);
/* Stores `value` into the module's 8-byte global `name` (the field pointers). */
int qd_cuda_module_set_pointer(QdCtx *ctx, QdCuModule module, const char *name,
                               QdCuDeviceptr value);

/***** cuda_launch.c *****/

/* The saturating grid of `function` at `block_dim` threads per block: SMs times 128 blocks,
 * or times the blocks resident per SM (occupancy calculator) when more (cuda_launch.c). */
uint32_t qd_cuda_saturating_blocks(const QdCudaDevice *device, QdCuFunction function,
                                   uint32_t block_dim);
/* The grid of a range_for task whose trip count the host does not know: two waves of the blocks
 * resident per SM, on every SM (cuda_launch.c). */
uint32_t qd_cuda_unknown_count_blocks(const QdCudaDevice *device, QdCuFunction function,
                                      uint32_t block_dim);
/* The grid of a range_for task that reduces into memory (QdCompiledTask.reduces): SMs times
 * REDUCE_THREADS_PER_SM / block_dim blocks, at least one per SM (cuda_launch.c). */
uint32_t qd_cuda_reducing_blocks(const QdCudaDevice *device, uint32_t block_dim);
/* Blocks for `n` iterations: ceil(n / block_dim), at least 1, at most `cap`. */
uint32_t qd_cuda_grid_blocks(uint64_t n, uint32_t block_dim, uint32_t cap);
/* Launches function<<<blocks, threads>>> on the default stream with one by-value parameter
 * whose bytes are at `params` (kernelParams[0] = params). `kernel` names the kernel in errors
 * and is remembered as this thread's last launch. With `overlap` it is a programmatic dependent
 * launch where the device has them (cuda_launch.c). */
int qd_cuda_launch(QdCtx *ctx, QdCuFunction function, uint32_t blocks, uint32_t threads,
                   void *params, const char *kernel, bool overlap);
/* The kernel most recently launched on this thread ("" when none). */
const char *qd_cuda_last_kernel(void);

#endif /* QD_RUNTIME_CUDA_H */
