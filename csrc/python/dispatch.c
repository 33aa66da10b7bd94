/* python/dispatch.c -- the launch fast path: quadrants._core.Dispatcher, the base of qd.kernel.
 *
 * A kernel call first tries a small table of launches seen before. Each entry records, per
 * argument, just enough to recognise an argument that the Python layer (quadrants/_kernel.py)
 * would check, key and convert exactly as it did then: a NumPy array by its dtype object, ndim,
 * C-contiguity and the extents of its vector/matrix element axes; a qd.ndarray by its DataType,
 * ndim and element axes; a template by identity or, for int and
 * str, by value; a scalar only by being a Python float/int/bool the parameter accepts. On a hit
 * the entry's CompiledKernel packs and launches (qd_py_compiled_kernel_call) with no Python
 * function called and no object created; anything else -- a miss, keywords, NumPy scalars,
 * Fortran-ordered arrays -- calls the Python fallback, which checks everything, raises the errors
 * of spec/api.md, compiles if needed and registers the launch with `_dispatch_add` when the fast
 * path can recognise a repeat of it.
 *
 * Invariant: an entry matches only arguments whose Python specialisation key equals that of the
 * registering call and that pass the same checks. The element axes come from the compiled
 * kernel's own parameter (qd_py_compiled_element_axes), whose launch checks them again: an entry
 * cannot launch an array the code was not compiled for. The table may tell apart arguments that the
 * Python key does not (a miss is always safe), never the reverse. qd.reset clears every table
 * (`_dispatch_clear`); a table holds at most MAX_ENTRIES launches per kernel.
 *
 * NumPy arrays are read through the head of NumPy's array object (NumpyArrayHead below), which is
 * checked against the array's own attributes before any entry relies on it.
 */
#include "python.h"

#include <structmember.h>

#include <string.h>

/* Entries per kernel; when full, the oldest entry makes room. */
#define MAX_ENTRIES 8
/* Calls with more positional arguments always take the fallback. */
#define MAX_FAST_ARGS 32

/* The first fields of a NumPy array object in NumPy's C ABI (PyArrayObject_fields, unchanged
 * from NumPy 1.7 to 2.x: its accessor macros compile to these offsets in every extension). */
typedef struct NumpyArrayHead {
    PyObject_HEAD
    char *data;             /* first element */
    int nd;                 /* number of dimensions */
    Py_ssize_t *dimensions; /* shape */
    Py_ssize_t *strides;    /* strides in bytes */
    PyObject *base;         /* owner of the memory, or NULL */
    PyObject *descr;        /* the dtype object */
    int flags;              /* NPY_ARRAY_* bits */
} NumpyArrayHead;

/* NPY_ARRAY_C_CONTIGUOUS. */
#define NUMPY_C_CONTIGUOUS 0x0001

/* How an entry recognises one argument; the letters are those `_dispatch_add` takes. */
typedef enum SlotKind {
    SLOT_REAL = 'f',       /* real scalar parameter: an exact float, int or bool */
    SLOT_INT = 'i',        /* integer scalar parameter: an exact int or bool */
    SLOT_NUMPY = 'n',      /* ndarray parameter: a C-contiguous NumPy array */
    SLOT_QD_NDARRAY = 'q', /* ndarray parameter: a qd.ndarray (its `_qd_array` is launched) */
    SLOT_VALUE = 'v',      /* template: an exact int or str, equal to `object` */
    SLOT_OBJECT = 'o',     /* template: `object` itself */
} SlotKind;

typedef struct Slot {
    SlotKind kind;    /* how the argument is matched */
    int ndim;         /* NUMPY, QD_NDARRAY: the array's ndim */
    QdPyElementAxes element; /* NUMPY, QD_NDARRAY: the axes of one vector/matrix element, as
                              * the compiled kernel takes them */
    PyObject *object; /* NUMPY: the dtype; QD_NDARRAY: the DataType; VALUE, OBJECT: the argument
                       * (strong; for OBJECT this pins it, so its address is never reused) */
    PyObject *type;   /* VALUE, OBJECT: the argument's type (strong); NULL otherwise */
} Slot;

typedef struct Entry {
    PyObject *compiled; /* the CompiledKernel to launch (strong) */
    Py_ssize_t nslots;  /* number of arguments */
    Slot slots[];       /* one per argument */
} Entry;

typedef struct DispatcherObject {
    PyObject_HEAD
    vectorcallfunc vectorcall;   /* dispatcher_vectorcall */
    PyObject *fallback;          /* fallback(kernel, *args, **kwargs): the Python launch path */
    PyObject *on_error;          /* on_error(exc): raises what a failed fast launch raises */
    PyObject *numpy_type;        /* numpy.ndarray, once an entry has met it (strong) */
    PyObject *qd_ndarray_type;   /* the qd.ndarray class (an NdarrayBase), once an entry has
                                    met it (strong) */
    Entry *entries[MAX_ENTRIES]; /* the table, entries[0 .. nentries) */
    int nentries;                /* entries in use */
    int next_victim;             /* entry replaced when the table is full */
} DispatcherObject;

/* What the arguments of one call hold beyond themselves: for each qd.ndarray argument its
 * `_qd_array` and `dtype` (strong), read from its NdarrayBase members before the table is
 * scanned. */
typedef struct ArgFacts {
    PyObject *array[MAX_FAST_ARGS]; /* `_qd_array`, or NULL */
    PyObject *dtype[MAX_FAST_ARGS]; /* `dtype`, or NULL */
} ArgFacts;

/* quadrants._core.NdarrayBase, the base of qd.ndarray: the two attributes a launch reads --
 * `_qd_array` (what is launched: a NumPy array or a DeviceBuffer) and `dtype` -- are C members,
 * which the fast path reads from the object itself rather than through the attribute protocol
 * and the instance dict. */
typedef struct NdarrayBaseObject {
    PyObject_HEAD
    PyObject *array; /* `_qd_array` */
    PyObject *dtype; /* `dtype` */
} NdarrayBaseObject;

/***** entries *****/

static void
entry_free(Entry *entry)
{
    if (!entry) {
        return;
    }
    Py_XDECREF(entry->compiled);
    for (Py_ssize_t i = 0; i < entry->nslots; i++) {
        Py_XDECREF(entry->slots[i].object);
        Py_XDECREF(entry->slots[i].type);
    }
    PyMem_Free(entry);
}

static void
table_clear(DispatcherObject *self)
{
    /* Detach first: freeing may run finalizers that call back into this dispatcher. */
    Entry *old[MAX_ENTRIES];
    int n = self->nentries;
    memcpy(old, self->entries, sizeof(old));
    memset(self->entries, 0, sizeof(self->entries));
    self->nentries = 0;
    self->next_victim = 0;
    for (int i = 0; i < n; i++) {
        entry_free(old[i]);
    }
}

/* The head of `array` (borrowed), an object of the dispatcher's NumPy array type. */
#define NUMPY_HEAD(array) ((const NumpyArrayHead *)(array))

/* Whether `array` (borrowed), of the dispatcher's NumPy type, is C-contiguous with `ndim`
 * dimensions ending in `element`, and dtype `descr`. */
static bool
numpy_matches(PyObject *array, PyObject *descr, int ndim, const QdPyElementAxes *element)
{
    const NumpyArrayHead *head = NUMPY_HEAD(array);
    _Static_assert(sizeof(Py_ssize_t) == sizeof(int64_t), "NumPy extents are 64-bit");
    return head->descr == descr && head->nd == ndim && (head->flags & NUMPY_C_CONTIGUOUS) &&
           qd_py_element_axes_match(element, (const int64_t *)head->dimensions, (uint32_t)ndim);
}

/* Whether DeviceBuffer `array` (borrowed) has `ndim` axes ending in `element`. */
static bool
device_buffer_matches(PyObject *array, int ndim, const QdPyElementAxes *element)
{
    const int64_t *shape = qd_py_device_buffer_shape(array);
    return shape && qd_py_device_buffer_ndim(array) == ndim &&
           qd_py_element_axes_match(element, shape, (uint32_t)ndim);
}

/* Whether argument `arg` (borrowed), with `facts` about it, matches `slot`. Runs no Python code
 * and leaves no exception set. */
static bool
slot_matches(const DispatcherObject *self, const Slot *slot, PyObject *arg, PyObject *array,
             PyObject *dtype)
{
    switch (slot->kind) {
    case SLOT_REAL:
        if (PyFloat_CheckExact(arg) || PyBool_Check(arg)) {
            return true;
        }
        if (PyLong_CheckExact(arg)) {
            /* An int too large for a double takes the slow path, which raises. */
            if (PyLong_AsDouble(arg) == -1.0 && PyErr_Occurred()) {
                PyErr_Clear();
                return false;
            }
            return true;
        }
        return false;
    case SLOT_INT:
        return PyLong_CheckExact(arg) || PyBool_Check(arg);
    case SLOT_NUMPY:
        return (PyObject *)Py_TYPE(arg) == self->numpy_type &&
               numpy_matches(arg, slot->object, slot->ndim, &slot->element);
    case SLOT_QD_NDARRAY:
        if (array && dtype == slot->object &&
            device_buffer_matches(array, slot->ndim, &slot->element)) {
            return true; /* CUDA: the qd.ndarray's memory is a DeviceBuffer */
        }
        return array && dtype == slot->object && (PyObject *)Py_TYPE(array) == self->numpy_type &&
               numpy_matches(array, NUMPY_HEAD(array)->descr, slot->ndim, &slot->element);
    case SLOT_VALUE:
        if ((PyObject *)Py_TYPE(arg) != slot->type) {
            return false;
        }
        if (arg == slot->object) {
            return true;
        }
        /* Exact int or str: comparing runs no Python code and cannot fail. */
        return PyObject_RichCompareBool(arg, slot->object, Py_EQ) == 1;
    case SLOT_OBJECT:
        return arg == slot->object && (PyObject *)Py_TYPE(arg) == slot->type;
    }
    return false;
}

/* The entry that matches the arguments, or NULL. Borrowed: valid until Python code runs. */
static const Entry *
find_entry(const DispatcherObject *self, PyObject *const *args, Py_ssize_t nargs,
           const ArgFacts *facts)
{
    for (int e = 0; e < self->nentries; e++) {
        const Entry *entry = self->entries[e];
        if (entry->nslots != nargs) {
            continue;
        }
        Py_ssize_t i = 0;
        while (i < nargs &&
               slot_matches(self, &entry->slots[i], args[i], facts->array[i], facts->dtype[i])) {
            i++;
        }
        if (i == nargs) {
            return entry;
        }
    }
    return NULL;
}

/* Fills `facts` for the qd.ndarray arguments from their NdarrayBase members (strong references,
 * so that they outlive the launch even if another thread rebinds them). A member that is not set
 * is left NULL: the argument then matches no entry and the fallback raises what the Python layer
 * raises. */
static void
collect_facts(const DispatcherObject *self, PyObject *const *args, Py_ssize_t nargs,
              ArgFacts *facts)
{
    for (Py_ssize_t i = 0; i < nargs; i++) {
        facts->array[i] = NULL;
        facts->dtype[i] = NULL;
        if (self->qd_ndarray_type && (PyObject *)Py_TYPE(args[i]) == self->qd_ndarray_type) {
            const NdarrayBaseObject *nd = (const NdarrayBaseObject *)args[i];
            facts->array[i] = Py_XNewRef(nd->array);
            facts->dtype[i] = Py_XNewRef(nd->dtype);
        }
    }
}

static void
release_facts(ArgFacts *facts, Py_ssize_t nargs)
{
    for (Py_ssize_t i = 0; i < nargs; i++) {
        Py_CLEAR(facts->array[i]);
        Py_CLEAR(facts->dtype[i]);
    }
}

/***** calling *****/

/* Calls fallback(self, *args, **kwargs) with vectorcall arguments. Returns a new reference or
 * NULL with an exception set. */
static PyObject *
call_fallback(DispatcherObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *small[MAX_FAST_ARGS + 1];
    PyObject **all = small;
    PyObject *result = NULL;
    Py_ssize_t total = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);

    if (!self->fallback) {
        PyErr_SetString(PyExc_TypeError, "Dispatcher.__init__() was not called");
        return NULL;
    }
    if (total + 1 > (Py_ssize_t)QD_ARRAY_LEN(small)) {
        all = PyMem_Malloc((size_t)(total + 1) * sizeof(PyObject *));
        if (!all) {
            return PyErr_NoMemory();
        }
    }
    all[0] = (PyObject *)self;
    if (total) {
        memcpy(all + 1, args, (size_t)total * sizeof(PyObject *));
    }
    result = PyObject_Vectorcall(self->fallback, all, (size_t)nargs + 1, kwnames);
    if (all != small) {
        PyMem_Free(all);
    }
    return result;
}

/* The pending exception, normalised (new reference; the error indicator is cleared). */
static PyObject *
fetch_exception(void)
{
#if PY_VERSION_HEX >= 0x030C0000
    return PyErr_GetRaisedException();
#else
    PyObject *type = NULL, *value = NULL, *traceback = NULL;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    if (value && traceback) {
        PyException_SetTraceback(value, traceback);
    }
    Py_XDECREF(type);
    Py_XDECREF(traceback);
    return value;
#endif
}

/* Hands the exception of a failed fast launch to on_error, which raises what the Python launch
 * path raises for it (restyled compile and runtime errors). Always returns NULL. */
static PyObject *
raise_through_hook(DispatcherObject *self)
{
    PyObject *exc = NULL;
    PyObject *returned = NULL;

    if (!self->on_error) {
        return NULL; /* __init__ was not called: the exception stays as it is */
    }
    exc = fetch_exception();
    if (!exc) {
        PyErr_SetString(PyExc_SystemError, "kernel launch failed without an exception");
        goto done;
    }
    returned = PyObject_CallOneArg(self->on_error, exc);
    if (returned) {
        PyErr_SetString(PyExc_SystemError, "the kernel error hook returned instead of raising");
    }
done:
    Py_XDECREF(returned);
    Py_XDECREF(exc);
    return NULL;
}

/* A positional call: the fast launch on a hit, the fallback otherwise. New reference or NULL
 * with an exception set. */
static PyObject *
dispatch(DispatcherObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    ArgFacts facts = {{NULL}, {NULL}};
    PyObject *launch[MAX_FAST_ARGS];
    PyObject *compiled = NULL;
    PyObject *result = NULL;

    if (self->nentries == 0 || nargs > MAX_FAST_ARGS) {
        return call_fallback(self, args, nargs, NULL);
    }
    collect_facts(self, args, nargs, &facts);
    const Entry *entry = find_entry(self, args, nargs, &facts);
    if (!entry) {
        result = call_fallback(self, args, nargs, NULL);
        goto done;
    }
    /* The launch takes one value per parameter: the scalar, the NumPy array, None (template). */
    for (Py_ssize_t i = 0; i < nargs; i++) {
        switch (entry->slots[i].kind) {
        case SLOT_QD_NDARRAY:
            launch[i] = facts.array[i];
            break;
        case SLOT_VALUE:
        case SLOT_OBJECT:
            launch[i] = Py_None;
            break;
        default:
            launch[i] = args[i];
            break;
        }
    }
    /* The launch releases the GIL: another thread may replace the entry meanwhile. */
    compiled = Py_NewRef(entry->compiled);
    result = qd_py_compiled_kernel_call(compiled, launch, nargs);
    if (!result) {
        raise_through_hook(self);
    }
done:
    Py_XDECREF(compiled);
    release_facts(&facts, nargs);
    return result;
}

static PyObject *
dispatcher_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    DispatcherObject *self = (DispatcherObject *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);

    if (kwnames && PyTuple_GET_SIZE(kwnames)) {
        return call_fallback(self, args, nargs, kwnames);
    }
    return dispatch(self, args, nargs);
}

/* Dispatcher.__get__: a kernel defined in a class body binds to the object like a function does
 * (the object becomes its first, template, argument). New reference or NULL with an exception. */
static PyObject *
dispatcher_descr_get(PyObject *self, PyObject *obj, PyObject *type)
{
    (void)type;
    if (!obj || obj == Py_None) {
        return Py_NewRef(self);
    }
    return PyMethod_New(self, obj);
}

/***** registering launches *****/

/* Whether `obj` (borrowed) is a NumPy array whose head reads as NumpyArrayHead describes: its
 * type is a static type named numpy.ndarray, large enough, and the head agrees with the array's
 * own ndim, dtype and flags.c_contiguous. 1 yes, 0 no, -1 with an exception set. */
static int
check_numpy_array(PyObject *obj)
{
    PyTypeObject *tp = Py_TYPE(obj);
    PyObject *ndim = NULL, *dtype = NULL, *flags = NULL, *c_contiguous = NULL;
    int status = -1;

    if (PyType_HasFeature(tp, Py_TPFLAGS_HEAPTYPE) || strcmp(tp->tp_name, "numpy.ndarray") != 0 ||
        tp->tp_basicsize < (Py_ssize_t)sizeof(NumpyArrayHead)) {
        return 0;
    }
    ndim = PyObject_GetAttrString(obj, "ndim");
    dtype = PyObject_GetAttrString(obj, "dtype");
    flags = PyObject_GetAttrString(obj, "flags");
    c_contiguous = flags ? PyObject_GetAttrString(flags, "c_contiguous") : NULL;
    if (!ndim || !dtype || !c_contiguous) {
        goto done;
    }
    const NumpyArrayHead *head = NUMPY_HEAD(obj);
    long n = PyLong_AsLong(ndim);
    int is_c = PyObject_IsTrue(c_contiguous);
    if ((n == -1 && PyErr_Occurred()) || is_c < 0) {
        goto done;
    }
    status =
        head->nd == n && head->descr == dtype && ((head->flags & NUMPY_C_CONTIGUOUS) != 0) == is_c;
done:
    Py_XDECREF(c_contiguous);
    Py_XDECREF(flags);
    Py_XDECREF(dtype);
    Py_XDECREF(ndim);
    return status;
}

/* Records `array` (borrowed) as the NumPy array type the entries compare against, or checks that
 * it is that type. 1 when an array slot may use it, 0 when not, -1 with an exception set. */
static int
accept_numpy_array(DispatcherObject *self, PyObject *array)
{
    if (self->numpy_type && (PyObject *)Py_TYPE(array) != self->numpy_type) {
        return 0;
    }
    int ok = check_numpy_array(array);
    if (ok == 1 && !self->numpy_type) {
        self->numpy_type = Py_NewRef((PyObject *)Py_TYPE(array));
    }
    return ok;
}

static void ndarray_base_dealloc(PyObject *op);

/* Whether tp is NdarrayBase or derives from it (known by its deallocator). */
static bool
derives_from_ndarray_base(PyTypeObject *tp)
{
    for (; tp != NULL; tp = tp->tp_base) {
        if (PyType_GetSlot(tp, Py_tp_dealloc) == (void *)ndarray_base_dealloc) {
            return true;
        }
    }
    return false;
}

/* Fills `slot` for argument `arg` (borrowed) of kind `kind`, parameter `index` of `compiled`
 * (borrowed). 1 when the argument can be matched, 0 when it cannot (the launch is not
 * registered), -1 with an exception set. */
static int
slot_init(DispatcherObject *self, Slot *slot, char kind, PyObject *arg, PyObject *compiled,
          uint32_t index)
{
    PyObject *array = NULL;
    int ok = 0;

    slot->kind = (SlotKind)kind;
    /* Arrays match only with the element axes the code was compiled for: the same facts the
     * launch checks, taken from the compiled kernel itself. */
    slot->element = qd_py_compiled_element_axes(compiled, index);
    switch (kind) {
    case SLOT_REAL:
    case SLOT_INT:
        /* The argument must be one the fast path takes; its value does not matter. */
        ok = slot_matches(self, slot, arg, NULL, NULL);
        break;
    case SLOT_NUMPY:
        ok = accept_numpy_array(self, arg);
        if (ok == 1) {
            slot->ndim = NUMPY_HEAD(arg)->nd;
            slot->object = Py_NewRef(NUMPY_HEAD(arg)->descr);
            ok = numpy_matches(arg, slot->object, slot->ndim, &slot->element);
        }
        break;
    case SLOT_QD_NDARRAY:
        if ((self->qd_ndarray_type && (PyObject *)Py_TYPE(arg) != self->qd_ndarray_type) ||
            !derives_from_ndarray_base(Py_TYPE(arg))) {
            break;
        }
        array = Py_XNewRef(((const NdarrayBaseObject *)arg)->array);
        slot->object = Py_XNewRef(((const NdarrayBaseObject *)arg)->dtype);
        if (!array || !slot->object) {
            break;
        }
        if (qd_py_device_buffer_ndim(array) >= 0) {
            slot->ndim = qd_py_device_buffer_ndim(array); /* CUDA */
            ok = device_buffer_matches(array, slot->ndim, &slot->element);
        } else {
            ok = accept_numpy_array(self, array);
        }
        if (ok == 1 && qd_py_device_buffer_ndim(array) < 0) {
            slot->ndim = NUMPY_HEAD(array)->nd;
            ok = numpy_matches(array, NUMPY_HEAD(array)->descr, slot->ndim, &slot->element);
        }
        if (ok == 1 && !self->qd_ndarray_type) {
            self->qd_ndarray_type = Py_NewRef((PyObject *)Py_TYPE(arg));
        }
        break;
    case SLOT_VALUE:
        if (PyLong_CheckExact(arg) || PyUnicode_CheckExact(arg)) {
            slot->object = Py_NewRef(arg);
            slot->type = Py_NewRef((PyObject *)Py_TYPE(arg));
            ok = 1;
        }
        break;
    case SLOT_OBJECT:
        /* Floats and tuples are keyed by value or by their items in Python: never by identity. */
        if (!PyFloat_Check(arg) && !PyTuple_Check(arg)) {
            slot->object = Py_NewRef(arg);
            slot->type = Py_NewRef((PyObject *)Py_TYPE(arg));
            ok = 1;
        }
        break;
    default:
        PyErr_Format(PyExc_ValueError, "unknown argument kind '%c'", kind);
        ok = -1;
        break;
    }
    Py_XDECREF(array);
    return ok;
}

/* Records that a positional call with `call_args` (a tuple, borrowed) launches `compiled`
 * (borrowed), its arguments matched as the letters of `kinds` say (SlotKind). Returns True when
 * recorded, False when the arguments do not suit the fast path or are already covered; NULL with
 * an exception set on error. */
static PyObject *
dispatcher_add_impl(DispatcherObject *self, PyObject *compiled, const char *kinds,
                    PyObject *call_args)
{
    Py_ssize_t n = PyTuple_GET_SIZE(call_args);
    PyObject *const *args = &PyTuple_GET_ITEM(call_args, 0);
    ArgFacts facts = {{NULL}, {NULL}};
    Entry *entry = NULL;
    PyObject *result = NULL;

    if (n > MAX_FAST_ARGS) {
        Py_RETURN_FALSE;
    }
    /* Already covered (a call by keyword, say): nothing to add. */
    collect_facts(self, args, n, &facts);
    if (find_entry(self, args, n, &facts)) {
        result = Py_NewRef(Py_False);
        goto done;
    }
    entry = PyMem_Calloc(1, sizeof(Entry) + (size_t)n * sizeof(Slot));
    if (!entry) {
        PyErr_NoMemory();
        goto done;
    }
    entry->compiled = Py_NewRef(compiled);
    entry->nslots = n; /* slots not filled yet hold NULLs, which entry_free skips */
    for (Py_ssize_t i = 0; i < n; i++) {
        int ok = slot_init(self, &entry->slots[i], kinds[i], args[i], compiled, (uint32_t)i);
        if (ok <= 0) {
            result = ok == 0 ? Py_NewRef(Py_False) : NULL;
            goto done;
        }
    }
    if (self->nentries < MAX_ENTRIES) {
        self->entries[self->nentries++] = entry;
    } else {
        Entry *old = self->entries[self->next_victim];
        self->entries[self->next_victim] = entry;
        self->next_victim = (self->next_victim + 1) % MAX_ENTRIES;
        entry_free(old);
    }
    entry = NULL;
    result = Py_NewRef(Py_True);
done:
    entry_free(entry);
    release_facts(&facts, n);
    return result;
}

/* _dispatch_add(compiled, kinds, args) -> bool: called by the Python layer once its checks of
 * a launch passed. Only a CompiledKernel is recorded (tests stand other callables in for it). */
static PyObject *
dispatcher_add(PyObject *self, PyTypeObject *defining_class, PyObject *const *args,
               Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"compiled", "kinds", "args", NULL};
    QdPyState *state = PyType_GetModuleState(defining_class);
    PyObject *bound[3];
    Py_ssize_t len = 0;
    const char *kinds = NULL;

    if (qd_py_bind_args("_dispatch_add", names, 3, args, nargs, kwnames, bound) < 0 ||
        !(kinds = qd_py_utf8_arg("_dispatch_add", "kinds", bound[1], true, &len))) {
        return NULL;
    }
    if (!PyTuple_Check(bound[2])) {
        PyErr_SetString(PyExc_TypeError, "_dispatch_add() argument 'args' must be a tuple");
        return NULL;
    }
    if (len != PyTuple_GET_SIZE(bound[2])) {
        PyErr_SetString(PyExc_ValueError, "_dispatch_add(): one kind letter per argument");
        return NULL;
    }
    if (!Py_IS_TYPE(bound[0], (PyTypeObject *)state->compiled_kernel_type) &&
        !Py_IS_TYPE(bound[0], (PyTypeObject *)state->cuda_kernel_type)) {
        Py_RETURN_FALSE;
    }
    return dispatcher_add_impl((DispatcherObject *)self, bound[0], kinds, bound[2]);
}

static PyObject *
dispatcher_clear_method(PyObject *op, PyObject *unused)
{
    (void)unused;
    table_clear((DispatcherObject *)op);
    Py_RETURN_NONE;
}

static PyObject *
dispatcher_size(PyObject *op, PyObject *unused)
{
    (void)unused;
    return PyLong_FromLong(((DispatcherObject *)op)->nentries);
}

/***** the Dispatcher type *****/

/* Dispatcher.__new__ ignores its arguments (a subclass's constructor takes its own). */
static PyObject *
dispatcher_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    DispatcherObject *self = NULL;

    (void)args;
    (void)kwargs;
    self = (DispatcherObject *)type->tp_alloc(type, 0);
    if (!self) {
        return NULL;
    }
    self->vectorcall = dispatcher_vectorcall;
    return (PyObject *)self;
}

/* Dispatcher.__init__(fallback, on_error). */
static int
dispatcher_init(PyObject *op, PyObject *args, PyObject *kwargs)
{
    DispatcherObject *self = (DispatcherObject *)op;
    PyObject *fallback = NULL, *on_error = NULL;

    if (kwargs && PyDict_GET_SIZE(kwargs)) {
        PyErr_SetString(PyExc_TypeError, "Dispatcher() takes no keyword arguments");
        return -1;
    }
    if (!PyArg_UnpackTuple(args, "Dispatcher", 2, 2, &fallback, &on_error)) {
        return -1;
    }
    if (!PyCallable_Check(fallback) || !PyCallable_Check(on_error)) {
        PyErr_SetString(PyExc_TypeError, "Dispatcher(fallback, on_error) takes two callables");
        return -1;
    }
    Py_XSETREF(self->fallback, Py_NewRef(fallback));
    Py_XSETREF(self->on_error, Py_NewRef(on_error));
    table_clear(self);
    return 0;
}

static int
dispatcher_traverse(PyObject *op, visitproc visit, void *arg)
{
    DispatcherObject *self = (DispatcherObject *)op;

    Py_VISIT(Py_TYPE(op));
    Py_VISIT(self->fallback);
    Py_VISIT(self->on_error);
    Py_VISIT(self->numpy_type);
    Py_VISIT(self->qd_ndarray_type);
    for (int e = 0; e < self->nentries; e++) {
        const Entry *entry = self->entries[e];
        Py_VISIT(entry->compiled);
        for (Py_ssize_t i = 0; i < entry->nslots; i++) {
            Py_VISIT(entry->slots[i].object);
            Py_VISIT(entry->slots[i].type);
        }
    }
    return 0;
}

static int
dispatcher_clear(PyObject *op)
{
    DispatcherObject *self = (DispatcherObject *)op;

    table_clear(self);
    Py_CLEAR(self->fallback);
    Py_CLEAR(self->on_error);
    Py_CLEAR(self->numpy_type);
    Py_CLEAR(self->qd_ndarray_type);
    return 0;
}

static void
dispatcher_dealloc(PyObject *op)
{
    PyTypeObject *tp = Py_TYPE(op);

    PyObject_GC_UnTrack(op);
    dispatcher_clear(op);
    tp->tp_free(op);
    Py_DECREF(tp);
}

static PyMethodDef dispatcher_methods[] = {
    {"_dispatch_add", (PyCFunction)(void (*)(void))dispatcher_add,
     METH_METHOD | METH_FASTCALL | METH_KEYWORDS,
     "_dispatch_add(compiled, kinds, args) -> bool: register a launch with the fast path"},
    {"_dispatch_clear", dispatcher_clear_method, METH_NOARGS, "forget every registered launch"},
    {"_dispatch_size", dispatcher_size, METH_NOARGS, "number of registered launches"},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef dispatcher_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(DispatcherObject, vectorcall), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot dispatcher_slots[] = {
    {Py_tp_new, dispatcher_new},
    {Py_tp_init, dispatcher_init},
    {Py_tp_dealloc, dispatcher_dealloc},
    {Py_tp_traverse, dispatcher_traverse},
    {Py_tp_clear, dispatcher_clear},
    {Py_tp_call, PyVectorcall_Call}, /* for subclasses without vectorcall (before 3.12) */
    {Py_tp_descr_get, dispatcher_descr_get},
    {Py_tp_methods, dispatcher_methods},
    {Py_tp_members, dispatcher_members},
    {Py_tp_doc, "Dispatcher(fallback, on_error): base of qd.kernel objects; calling one launches "
                "a registered specialisation directly, or calls fallback(self, *args, **kwargs)."},
    {0, NULL},
};

static PyType_Spec dispatcher_spec = {
    .name = "quadrants._core.Dispatcher",
    .basicsize = sizeof(DispatcherObject),
    .flags =
        Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .slots = dispatcher_slots,
};

PyObject *
qd_py_dispatcher_type_new(PyObject *module)
{
    return PyType_FromModuleAndSpec(module, &dispatcher_spec, NULL);
}

/***** NdarrayBase *****/

static int
ndarray_base_traverse(PyObject *op, visitproc visit, void *arg)
{
    NdarrayBaseObject *self = (NdarrayBaseObject *)op;
    Py_VISIT(Py_TYPE(op));
    Py_VISIT(self->array);
    Py_VISIT(self->dtype);
    return 0;
}

static int
ndarray_base_clear(PyObject *op)
{
    NdarrayBaseObject *self = (NdarrayBaseObject *)op;
    Py_CLEAR(self->array);
    Py_CLEAR(self->dtype);
    return 0;
}

static void
ndarray_base_dealloc(PyObject *op)
{
    PyTypeObject *tp = Py_TYPE(op);
    PyObject_GC_UnTrack(op);
    ndarray_base_clear(op);
    tp->tp_free(op);
    Py_DECREF(tp);
}

static PyMemberDef ndarray_base_members[] = {
    {"_qd_array", T_OBJECT, offsetof(NdarrayBaseObject, array), 0,
     "what a launch passes: the NumPy array (CPU) or DeviceBuffer (CUDA)"},
    {"dtype", T_OBJECT, offsetof(NdarrayBaseObject, dtype), 0, "the element type"},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot ndarray_base_slots[] = {
    {Py_tp_dealloc, ndarray_base_dealloc},
    {Py_tp_traverse, ndarray_base_traverse},
    {Py_tp_clear, ndarray_base_clear},
    {Py_tp_members, ndarray_base_members},
    {Py_tp_doc, "NdarrayBase: base of qd.ndarray, holding what a kernel launch reads of it."},
    {0, NULL},
};

static PyType_Spec ndarray_base_spec = {
    .name = "quadrants._core.NdarrayBase",
    .basicsize = sizeof(NdarrayBaseObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .slots = ndarray_base_slots,
};

PyObject *
qd_py_ndarray_base_type_new(PyObject *module)
{
    return PyType_FromModuleAndSpec(module, &ndarray_base_spec, NULL);
}
