/* python/cuda_py.h -- what the CUDA files of the Python layer share (cuda.c: devices and
 * DeviceBuffer; cuda_kernel.c: the CudaKernel type and its launch; cuda_compile.c: compiling
 * and loading; testing_cuda.c: test hooks). Not included by the rest of python/: python.h
 * declares their entry points.
 */
#ifndef QD_PYTHON_CUDA_H
#define QD_PYTHON_CUDA_H

#include "pack.h"
#include "python.h"

#include "../driver/driver.h"
#include "../runtime/cuda/cuda.h"
#include "../runtime/vulkan/vulkan.h"

/* quadrants._core.DeviceBuffer: an n-d array in device memory, zero-filled when made. What
 * fields and ndarrays hold on CUDA and Vulkan, and what their kernels take for ndarray
 * arguments. */
typedef struct DeviceBufferObject {
    PyObject_HEAD
    QdCuDeviceptr ptr;                  /* device address (0 only for a failed construction) */
    QdVkBuffer vk;                      /* Vulkan memory (vk.impl NULL: CUDA memory); ptr is
                                           its vk.address */
    size_t nbytes;                      /* itemsize * the product of the shape */
    uint32_t itemsize;                  /* bytes per element */
    uint32_t ndim;                      /* number of dimensions (0: one element) */
    int64_t shape[QD_NDARRAY_MAX_NDIM];  /* extents (a launch takes those below 2^31 only) */
    PyObject *owner;                    /* memory of another library (DeviceBuffer.wrap): the
                                           object keeping it alive (strong); NULL: ours */
} DeviceBufferObject;

/***** dlpack.c *****/

/* DeviceBuffer.to_dlpack(dtype_code, bits, shape, strides, versioned): a DLPack capsule over
 * the buffer's memory (new reference; NULL with an exception). */
PyObject *qd_py_device_buffer_to_dlpack(PyObject *self, PyObject *args);

/***** cuda_kernel.c: quadrants._core.CudaKernel *****/

/* One task of a CudaKernel, as the launcher runs it. */
typedef struct CudaTask {
    QdCuFunction function; /* the kernel of the task */
    QdTaskBounds bounds;   /* range_for: host bounds function, or NULL (saturating grid) */
    uint32_t block_dim;    /* threads per block (1 for a serial task) */
    uint32_t max_blocks;   /* range_for: the saturating grid */
    uint32_t open_blocks;  /* range_for whose trip count the host does not know: its grid */
    bool is_serial;        /* one thread */
    char name[160];        /* entry point name, for errors */
} CudaTask;

/* A kernel compiled for CUDA for one argument signature (called like a CompiledKernel). */
typedef struct CudaKernelObject {
    PyObject_HEAD
    vectorcallfunc vectorcall; /* cuda_vectorcall */
    PyObject *module;          /* quadrants._core (strong) */
    PyObject *qir_frontend;    /* str or NULL (options["keep_qir"]) */
    PyObject *qir;             /* str or NULL */
    QdNvptxKernel code;        /* PTX, layout, fields, asserts */
    QdCompiledKernel host;     /* host bounds functions (CPU JIT) */
    QdCuModule cumodule;       /* the loaded module */
    CudaTask *tasks;           /* code.layout.ntasks entries */
    QdPyParam *params;         /* one per Python argument */
    uint32_t nparams;          /* how many */
    uint32_t param_bytes;      /* args_size + QD_NVPTX_TAIL_BYTES */
    int64_t rng_offset;        /* offset of the hidden random seed, -1 when none */
    QdCuDeviceptr results;     /* device kernel_ret slots (0 when none) */
    QdCuDeviceptr tmps;        /* device tmp_alloc slots (0 when none) */
    uint64_t generation;       /* runtime generation it was compiled in */
    QdCpuJit *own_jit;         /* QIR tests: the JIT holding the host bounds (else NULL) */
    double ms_ptx;             /* compile: frontend, passes, PTX and host bounds functions */
    double ms_link;            /* compile: PTX -> cubin with the driver's linker */
    double ms_load;            /* compile: cuModuleLoadData */
    bool from_cache;           /* the cubin came from the offline cache */
    PyObject *profile_names;   /* tuple: the kernel profiler's name of each task, or NULL */
} CudaKernelObject;

/* A new CudaKernel of `module` (_core) with its vectorcall set and nothing compiled; NULL with
 * an exception. */
CudaKernelObject *qd_py_cuda_kernel_alloc(PyObject *module);

/***** cuda.c *****/

/* Fills an NVPTX compile's options from the Python options dict (borrowed; NULL allowed):
 * opt_level, fast_math, print_kernel_llvm_ir[_optimized], print_kernel_asm,
 * default_gpu_block_dim; `sm` from the caller; libdevice candidates from cuda_libdevice_paths.
 * 0, or -1 with an exception. */
int qd_py_nvptx_options(PyObject *options, int sm, QdNvptxOptions *out);

/* The CudaKernel type for `module` (new reference; NULL with an exception). */
PyObject *qd_py_cuda_kernel_type_new(PyObject *module);
/* Benchmarks: packs `args` for CudaKernel `kernel` once, then calls cuLaunchKernel on its
 * first task `iterations` times from C; returns the host microseconds per call (a float), or
 * NULL with an exception. Arrays must be DeviceBuffers. */
PyObject *qd_py_cuda_raw_launch_us(PyObject *kernel, PyObject *const *args, Py_ssize_t nargs,
                                   long iterations);

/***** cuda_compile.c *****/

/* A CudaKernel for kernel `name` of the concrete QIR module m (tests: compile_qir_cuda), with a
 * CPU JIT of its own for the host bounds, fields looked up by name in `fields` (a dict of
 * DeviceBuffers, borrowed; NULL: none). `module` is _core. New reference or NULL with an
 * exception. Its parameters are the QIR kernel's, all passed. */
PyObject *qd_py_cuda_kernel_from_qir(PyObject *module, QdModule *m, const char *name,
                                     PyObject *options, PyObject *fields);

#endif /* QD_PYTHON_CUDA_H */
