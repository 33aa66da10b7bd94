/* python/pack.h -- the one argument packer of every launcher (pack.c).
 *
 * A compiled kernel takes one positional Python argument per leaf parameter (quadrants/_kernel.py
 * flattens compound arguments into leaves of the kinds of abi/args.def): a number for a
 * scalar, an array for an ndarray, anything (None by convention) for a template. The CPU
 * launcher (kernel.c), the GPU launcher (device_kernel.c) and the QIR test runner
 * (testing_run.c) describe their parameters with QdPyParam and write the packed arguments of
 * abi/abi.h with qd_py_pack_arguments; they differ only in the memory that ndarray arguments are
 * taken from (QdPyArrayMemory): the host's buffers, or device buffers and host buffers copied to
 * the device.
 */
#ifndef QD_PYTHON_PACK_H
#define QD_PYTHON_PACK_H

#include "python.h"

#include "../abi/abi.h"
#include "../driver/driver.h"

/* One argument of a compiled kernel, as every launcher passes it. */
typedef struct QdPyParam {
    QdArgKind kind;          /* abi/args.def */
    QdTypeKind dtype;        /* SCALAR, NDARRAY: the (element) type */
    uint32_t ndim;           /* NDARRAY: every axis, the element's included */
    QdPyElementAxes element; /* NDARRAY: the axes of one vector/matrix element */
    uint32_t offset;         /* SCALAR, NDARRAY: offset in the packed arguments, or
                                QD_ARG_UNUSED for an argument the code never reads (skipped) */
} QdPyParam;

/* One parameter per argument of the specialization `args` (n of them): the non-template ones
 * are the kernel's QIR parameters in order, at `offsets` (noffsets entries, qd_arg_layout).
 * New PyMem array in *out (n + 1 entries), 0; or -1 with MemoryError. */
int qd_py_params_from_args(const QdKernelArg *args, uint32_t n, const uint32_t *offsets,
                           uint32_t noffsets, QdPyParam **out);
/* One parameter per QIR parameter of kernel `f` (scalars and ndarrays), at `offsets`. */
int qd_py_params_from_qir(const QdFunc *f, const uint32_t *offsets, QdPyParam **out);

/* An ndarray argument as the memory of a launch sees it. */
typedef struct QdPyArray {
    uint64_t data;     /* the data's address in the launch's memory (0 until placed) */
    uint32_t ndim;     /* axes */
    uint32_t itemsize; /* bytes per element */
    int64_t shape[QD_NDARRAY_MAX_NDIM]; /* extents (ndim of them) */
} QdPyArray;

/* Where ndarray arguments come from. `open` describes argument `arg` (borrowed) of parameter i
 * in *out, its data address too when it is already known. `place`, when not NULL, is called
 * once the argument has passed every check and sets out->data (CUDA copies a host array to the
 * device there, so that nothing is copied for an argument that is then rejected). Both return
 * 0, or -1 with an exception set. */
typedef struct QdPyArrayMemory QdPyArrayMemory;
struct QdPyArrayMemory {
    int (*open)(QdPyArrayMemory *self, uint32_t i, PyObject *arg, QdPyArray *out);
    int (*place)(QdPyArrayMemory *self, uint32_t i, QdPyArray *array);
};

/* Host memory: the buffers the arguments export (NumPy arrays, memoryviews, ...), C-contiguous
 * and writable, held until qd_py_host_arrays_release. Its `memory` is the CPU launchers'. */
typedef struct QdPyHostArrays {
    QdPyArrayMemory memory;     /* open: qd_py_host_arrays_export; place: NULL */
    Py_buffer *views;           /* count exported buffers (inline_views or PyMem) */
    uint32_t count;             /* buffers exported */
    uint32_t capacity;          /* entries at views */
    Py_buffer inline_views[8];  /* the first buffers, without an allocation */
} QdPyHostArrays;

void qd_py_host_arrays_init(QdPyHostArrays *h);
/* Exports the buffer of `arg` (borrowed) and keeps it; the view, or NULL with an exception. */
Py_buffer *qd_py_host_arrays_export(QdPyHostArrays *h, PyObject *arg);
/* Releases every buffer exported. */
void qd_py_host_arrays_release(QdPyHostArrays *h);

/* Writes the packed arguments of one launch at `packed` (zeroed by the caller, the kernel's
 * args_size bytes): every scalar converted to its type, every ndarray's record after its rank,
 * item size, element axes and extents were checked (the extents must be below 2^31); arguments
 * the code never reads are skipped. `args` has one argument per parameter. 0, or -1 with an
 * exception set. */
int qd_py_pack_arguments(const QdPyParam *params, uint32_t n, PyObject *const *args,
                         unsigned char *packed, QdPyArrayMemory *memory);

/* Bytes a scalar of `kind` occupies in memory (1 for u1). */
size_t qd_py_scalar_bytes(QdTypeKind kind);
/* A Python number packed as `kind` at dst (floats rounded, integers wrapped to the width,
 * u1 from truthiness). 0, or -1 with an exception. */
int qd_py_pack_scalar(PyObject *value, QdTypeKind kind, unsigned char *dst);
/* The kernel_ret slot at `slot` as a Python number: int for integers (u1 included), float for
 * floats; None for QD_TY_VOID. New reference. */
PyObject *qd_py_unpack_result(const unsigned char *slot, QdTypeKind kind);
/* Result slots a launch keeps on the stack; kernels with more results (up to QD_MAX_RESULTS)
 * get a heap buffer. */
#define QD_PY_INLINE_RESULTS 64
/* A kernel's results from its slots (QD_RESULT_SLOT_BYTES each): None for none, the value for
 * one, a tuple for more. New reference, or NULL with an exception. */
PyObject *qd_py_unpack_results(const unsigned char *slots, const QdTypeKind *types, uint32_t n);

#endif
