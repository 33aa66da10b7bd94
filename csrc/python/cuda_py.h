/* python/cuda_py.h -- what the GPU files of the Python layer share (cuda.c: CUDA devices and
 * DeviceBuffer, the memory of both GPU backends; device_kernel.h: the DeviceKernel type;
 * testing_cuda.c: test hooks). Not included by the rest of python/: python.h declares their
 * entry points.
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

/***** cuda.c *****/

/* Fills an NVPTX compile's options from the Python options dict (borrowed; NULL allowed):
 * opt_level, fast_math, print_kernel_llvm_ir[_optimized], print_kernel_asm,
 * default_gpu_block_dim; `sm` from the caller; libdevice candidates from cuda_libdevice_paths.
 * 0, or -1 with an exception. */
int qd_py_nvptx_options(PyObject *options, int sm, QdNvptxOptions *out);

#endif /* QD_PYTHON_CUDA_H */
