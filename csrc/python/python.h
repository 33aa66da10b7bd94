/* python/python.h -- internal header of the Python layer (the extension module quadrants._core).
 *
 * This directory is the only part of the core that includes Python.h. It turns Python objects
 * into plain C values, calls the pure-C core (with the GIL released where the core does real
 * work) and turns the core's QdDiag errors into the exception classes of errors.def.
 *
 * Reference conventions (every function below states its own): "new reference" means the caller
 * owns the returned object; "borrowed" means it stays valid while its owner lives; a function
 * that steals a reference has `_steal` in its name. Errors follow CPython: NULL or -1 with an
 * exception set.
 */
#ifndef QD_PYTHON_H
#define QD_PYTHON_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h> /* PyMemberDef (in Python.h only from 3.12) */

#include <stdatomic.h>

#include "../base/base.h"

/***** module.c *****/

/* Per-module state of quadrants._core. Every object here is a strong reference, visited by the
 * module's traverse and dropped by its clear. */
typedef struct QdPyState {
    /* Exception class raised for each QdErrKind (index QD_ERR_NONE stays NULL). INTERNAL shares
     * the QuadrantsCompilationError class and NOMEM holds MemoryError. */
    PyObject *error_classes[QD_ERR_COUNT_];
    PyObject *compiled_kernel_type; /* quadrants._core.CompiledKernel */
    PyObject *fields;               /* dict: field id -> NumPy array backing it on the CPU */
    struct QdCpuJit *jit;           /* the CPU JIT of the current runtime, or NULL */
    struct QdCpuPool *pool;         /* the CPU thread pool of the current runtime, or NULL */
    uint64_t generation;            /* bumped by every runtime reset */
    /* Compiles, cache loads and CPU launches under way on any thread (qd_py_runtime_enter); a
     * reset waits until none is left. */
    _Atomic uint32_t runtime_users;
    bool resetting;                 /* a reset waits for runtime_users: no new compile starts */
    uint64_t random_seed;           /* qd.init(random_seed=...) of the current runtime */
    uint64_t rng_launches;          /* launches that drew random numbers since then */
    /* GPUs (cuda.c, device_kernel.c) */
    PyObject *device_buffer_type;   /* quadrants._core.DeviceBuffer */
    PyObject *device_kernel_type;   /* quadrants._core.DeviceKernel */
    PyObject *cuda_fields;          /* dict: field id -> DeviceBuffer backing it on a GPU */
    struct QdCache *cache;          /* the offline cache (cache.c), NULL until first used */
    /* kernel profiler (profiler.c): list of (task name, ms), NULL while the profiler is off */
    PyObject *profiler_records;
} QdPyState;

/* The state of the _core module. `module` is borrowed and must be quadrants._core. */
QdPyState *qd_py_state(PyObject *module);

/***** errors.c *****/

/* Raises the exception for diag's kind from the _core `module` (borrowed): message
 * "file:line:col: message", attributes filename / lineno / col where known. Always returns -1,
 * with an exception set, so call sites read `return qd_py_raise_diag(...)` or pair it with
 * `return NULL`. */
int qd_py_raise_diag(PyObject *module, const QdDiag *diag);

/***** callargs.c *****/

/* Binds the arguments of a METH_FASTCALL | METH_KEYWORDS call to named parameters, the way a
 * Python signature `f(a, b, c=..., d=...)` does: positional arguments first, then keywords by
 * name. `names` lists the parameters (NULL-terminated); the first `nrequired` must be given.
 * On success out[i] is the argument of parameter i (borrowed from the caller's arguments) or
 * NULL when an optional one was not given, and 0 is returned; on a bad call, -1 with TypeError.
 * `func_name` is used in messages. */
int qd_py_bind_args(const char *func_name, const char *const *names, int nrequired,
                    PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject **out);

/* Converts a str argument to UTF-8 (borrowed; valid while `obj` lives) and its length in bytes.
 * NULL with TypeError when obj is not a str. With `no_nul`, an embedded NUL is a ValueError. */
const char *qd_py_utf8_arg(const char *func_name, const char *param, PyObject *obj, bool no_nul,
                           Py_ssize_t *len);

/***** cache.c *****/

struct QdCache;
struct QdDigest;
/* The offline cache the compile options (borrowed dict or NULL) ask for, configured, and in
 * *compiler_id the build identity (borrowed from options); NULL when caching is off. */
struct QdCache *qd_py_cache_for(QdPyState *state, PyObject *options, const char **compiler_id);
void qd_py_cache_free(QdPyState *state);
/* A source key argument: 1 with *out for 32 bytes, 0 for None or NULL, -1 with TypeError. */
int qd_py_source_key(PyObject *obj, struct QdDigest *out);
/* Adds cache_stat, cache_clear and cache_counters to the module. */
int qd_py_cache_add(PyObject *module);

/***** profiler.c *****/

/* Adds kernel_profiler_enable, kernel_profiler_records and kernel_profiler_clear to the module. */
int qd_py_profiler_add(PyObject *module);
/* Seconds of the monotonic clock. */
double qd_py_profiler_clock(void);
/* Appends one record per task t < ntasks with seconds[t] >= 0 (the others did not run), named
 * by names[t] (a tuple, borrowed; NULL or short: "kernel_<t>"). A no-op while the profiler is
 * off. 0, or -1 with an exception set. */
int qd_py_profiler_record(QdPyState *state, PyObject *names, uint32_t ntasks,
                          const double *seconds);

/***** kernel.c *****/

/* The CompiledKernel type for `module` (new reference; NULL with an exception set). */
PyObject *qd_py_compiled_kernel_type_new(PyObject *module);
/* _core.compile_kernel(func, funcdef, filename, arg_descs, name, options): new reference to a
 * CompiledKernel, NULL with the compile error raised. `module` is quadrants._core (borrowed). */
PyObject *qd_py_compile_kernel(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
/* _core.load_cached_kernel(arg_descs, name, options, source_key): the warm path, a kernel
 * loaded from the offline cache without the frontend (new reference), None on a miss, NULL
 * with an exception for bad arguments. */
PyObject *qd_py_load_cached_kernel(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
/* Drops the JIT, the thread pool and the field registry of the current runtime, once every
 * compile and launch under way on another thread has finished (kernels of the old runtime refuse
 * to run from the moment it is called). Releases the GIL while it waits. 0, or -1 with
 * QuadrantsRuntimeError when this thread itself is compiling or launching. */
int qd_py_runtime_reset(QdPyState *state);
/* Brackets a use of the current runtime by this thread; callable without the GIL. */
void qd_py_runtime_enter(QdPyState *state);
void qd_py_runtime_leave(QdPyState *state);
/* Launches CompiledKernel `ck` (borrowed; the caller checked its type) with one positional
 * argument per parameter, as calling it does. New reference or NULL with an exception set. */
PyObject *qd_py_compiled_kernel_call(PyObject *ck, PyObject *const *args, Py_ssize_t nargs);

/* The seed of the hidden random-number argument for the next launch (shared with the CUDA
 * launcher). */
uint64_t qd_py_next_rng_seed(QdPyState *state);

/* The vector/matrix element of an ndarray parameter: how many trailing axes of the array form
 * one element and their extents, fixed when the kernel was compiled (0 axes: scalar elements). */
typedef struct QdPyElementAxes {
    uint32_t ndim;
    uint32_t shape[2];
} QdPyElementAxes;
/* The members every compiled kernel object starts with -- CompiledKernel (kernel.c) and
 * DeviceKernel (device_kernel.c) -- so that they share their GC slots and the attributes that
 * do not depend on the target (kernel.c: qd_py_kernel_*). */
struct QdCompiledKernel;
#define QD_PY_KERNEL_HEAD                                                                         \
    PyObject_HEAD                                                                                 \
    vectorcallfunc vectorcall;              /* the type's call: skips tuple packing */            \
    PyObject *module;                       /* quadrants._core (strong) */                        \
    PyObject *qir_frontend;                 /* str: QIR after the frontend (keep_qir), or NULL */ \
    PyObject *qir;                          /* str: QIR after the passes, or NULL */              \
    PyObject *profile_names;                /* tuple: the profiler's name of each task, or NULL */ \
    const struct QdCompiledKernel *layout;  /* tasks and argument layout (in the object) */       \
    bool from_cache;                        /* the code came from the offline cache */
typedef struct QdPyKernelHead {
    QD_PY_KERNEL_HEAD
} QdPyKernelHead;
int qd_py_kernel_traverse(PyObject *self, visitproc visit, void *arg);
int qd_py_kernel_clear(PyObject *self);
/* Getters: qir / qir_frontend (closure non-NULL), ntasks, task_kinds, args_size. */
PyObject *qd_py_kernel_get_qir(PyObject *self, void *closure);
PyObject *qd_py_kernel_get_ntasks(PyObject *self, void *closure);
PyObject *qd_py_kernel_get_task_kinds(PyObject *self, void *closure);
PyObject *qd_py_kernel_get_args_size(PyObject *self, void *closure);
/* __vectorcalloffset__, from_cache, profile_names. */
extern PyMemberDef qd_py_kernel_members[];
#define QD_PY_KERNEL_GETSET                                                                     \
    {"qir", qd_py_kernel_get_qir, NULL, "QIR given to the code generator (with keep_qir)", NULL}, \
    {"qir_frontend", qd_py_kernel_get_qir, NULL, "QIR from the frontend (with keep_qir)",       \
     (void *)1},                                                                                 \
    {"ntasks", qd_py_kernel_get_ntasks, NULL, "number of offloaded tasks", NULL},               \
    {"task_kinds", qd_py_kernel_get_task_kinds, NULL, "'serial' or 'range_for' per task", NULL}, \
    {"args_size", qd_py_kernel_get_args_size, NULL, "bytes of packed arguments per launch", NULL}

/* The element axes of parameter `i` of compiled kernel `ck` (a CompiledKernel or a DeviceKernel,
 * borrowed); 0 axes for parameters that are not ndarrays. Runs no Python code. */
QdPyElementAxes qd_py_compiled_element_axes(PyObject *ck, uint32_t i);
/* Whether the last axes of an array with `ndim` axes of extents `shape` are those of `axes`. */
bool qd_py_element_axes_match(const QdPyElementAxes *axes, const int64_t *shape, uint32_t ndim);
/* The launch's check of argument `arg` against `axes`: 0, or -1 with ValueError set. */
int qd_py_check_element_axes(uint32_t arg, const QdPyElementAxes *axes, const int64_t *shape,
                             uint32_t ndim);

/***** cuda.c, vulkan.c, device_kernel.c *****/

struct QdCompileRequest;
struct QdKernelArg;
/* Adds the CUDA functions and types (DeviceBuffer, cuda_available, ...) to the _core module and
 * its state. 0, or -1 with an exception set. */
int qd_py_cuda_add(PyObject *module);
/* Adds vulkan_available, vulkan_unavailable_reason and vulkan_device_info to the _core module.
 * 0, or -1 with an exception set. */
int qd_py_vulkan_add(PyObject *module);
/* Adds the DeviceKernel type to the _core module and its state. 0, or -1 with an exception. */
int qd_py_device_kernel_add(PyObject *module);
/* Whether compile options (a dict or NULL, borrowed) ask for a GPU backend (arch "cuda" or
 * "vulkan"): compile_kernel then makes a DeviceKernel. */
bool qd_py_wants_device(PyObject *options);
/* Whether options["nn_tensor_cores"] (default true) lets qd.nn products use tensor cores. */
bool qd_py_nn_tensor_cores(PyObject *options);
/* Compiles the request for the options' GPU backend: new reference to a DeviceKernel (called
 * like a CompiledKernel), NULL with the error raised. */
PyObject *qd_py_device_compile(PyObject *module, QdCtx *ctx, struct QdCompileRequest *req,
                               PyObject *options);
/* The GPU side of load_cached_kernel, for parsed arguments: a DeviceKernel from the cache (new
 * reference), None on a miss, NULL with an exception. */
PyObject *qd_py_device_load_cached(PyObject *module, struct QdCache *cache,
                                   const struct QdDigest *source_key,
                                   const struct QdKernelArg *args, uint32_t nargs,
                                   PyObject *options);
/* Part of qd_py_runtime_reset: waits for CUDA launches and drops the CUDA field registry. */
void qd_py_cuda_reset(QdPyState *state);
/* The ndim of a DeviceBuffer (borrowed), or -1 for any other object. Runs no Python code. */
int qd_py_device_buffer_ndim(PyObject *obj);
/* The extents of a DeviceBuffer (borrowed; qd_py_device_buffer_ndim of them), or NULL for any
 * other object. Runs no Python code. */
const int64_t *qd_py_device_buffer_shape(PyObject *obj);
/* The element axes of parameter `i` of DeviceKernel `kernel` (borrowed; the caller checked its
 * type). */
QdPyElementAxes qd_py_device_element_axes(PyObject *kernel, uint32_t i);
/* Whether `obj` is a DeviceKernel. Runs no Python code. */
bool qd_py_is_device_kernel(PyObject *obj);

/***** dispatch.c *****/

/* The Dispatcher type (the C base of qd.kernel objects: the launch fast path) for `module`
 * (new reference; NULL with an exception set). */
PyObject *qd_py_dispatcher_type_new(PyObject *module);
/* quadrants._core.NdarrayBase (dispatch.c): the base of qd.ndarray. */
PyObject *qd_py_ndarray_base_type_new(PyObject *module);

/***** testing.c *****/

/* Creates the quadrants._core._testing module (new reference; NULL with an exception set). Its
 * functions are bound to `core` (borrowed), so they reach the exception classes in its state. */
PyObject *qd_py_testing_module_new(PyObject *core);

/* Adds a function of `testing` (borrowed) for every entry of `defs`, bound to `self`
 * (borrowed). 0, or -1 with an exception set. */
int qd_py_testing_add_methods(PyObject *testing, PyMethodDef *defs, PyObject *self);

/* The test hooks of the other testing_*.c files, all bound to the _core module:
 * testing_cuda.c: qir_to_ptx (QIR -> PTX without a GPU), compile_qir_cuda, cuda_raw_launch_us,
 * cuda_clear_current_context; testing_vulkan.c: glsl_to_spirv and vulkan_run_glsl (GLSL through
 * glslang and the Vulkan runtime); testing_glsl.c: qir_to_glsl (QIR -> GLSL compute shaders, no
 * device needed). */
extern PyMethodDef qd_py_testing_cuda_methods[];
extern PyMethodDef qd_py_testing_vulkan_methods[];
extern PyMethodDef qd_py_testing_glsl_methods[];

/***** testing_run.c *****/

/* Adds run_qir / compile_qir (compile and run hand-written QIR kernels on NumPy data) to the
 * _testing module (borrowed). 0, or -1 with an exception set. */
int qd_py_testing_add_run(PyObject *testing);

#endif /* QD_PYTHON_H */
