/* python/dispatch.c -- the launch fast path: quadrants._core.Dispatcher, the base of qd.kernel.
 *
 * A kernel call first tries a small table of launches seen before. Each entry records, per
 * leaf argument of the compiled kernel (a parameter, or a member of a dataclass parameter: the
 * kinds of abi/args.def), just enough to recognise a leaf that the Python layer
 * (quadrants/_kernel.py) would check, key and convert exactly as it did then: a NumPy array by
 * its dtype object, ndim, C-contiguity and the extents of its vector/matrix element axes; a
 * qd.ndarray (scalar, vector or matrix) by its exact type, DataType, ndim and element axes; a
 * template by identity or, for int and str, by value; a scalar only by being a Python
 * float/int/bool the parameter accepts. A leaf is reached from a call argument by a path of
 * attribute reads (`state.dofs.pos`, a qd.Tensor's `_impl`), each step checked against the
 * container's exact type; a type whose attribute reads could run Python code (properties,
 * __getattr__, a custom __getattribute__) is never on a path, and a type changed since the entry
 * was made (its version tag) matches nothing. On a hit the entry's CompiledKernel packs and
 * launches (qd_py_compiled_kernel_call) with no Python function called; anything else -- a miss,
 * keywords, NumPy scalars, Fortran-ordered arrays -- calls the Python fallback, which checks
 * everything, raises the errors of spec/api.md, compiles if needed and registers the launch with
 * `_dispatch_add` when the fast path can recognise a repeat of it.
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
/* Leaves resolved without an allocation; kernels with more allocate per call. */
#define INLINE_LEAVES 64
/* Attribute reads on a leaf's path whose containers are shared with the previous leaf's path
 * (`state.dofs.a`, `state.dofs.b`: `state.dofs` is read once per call). */
#define MAX_SHARED_STEPS 16

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

/* One attribute read on the way from a call argument to a leaf: the container must be exactly
 * `type`, unchanged since registration (`version`, its tp_version_tag), and the next object is
 * its attribute `name`. */
typedef struct PathStep {
    PyObject *type;       /* strong */
    unsigned int version; /* the type's version tag when the step was made */
    PyObject *name;       /* interned str (strong) */
} PathStep;

typedef struct Slot {
    SlotKind kind;    /* how the leaf is matched */
    Py_ssize_t arg;   /* the call argument the leaf is reached from */
    uint32_t nsteps;  /* attribute reads from it (0: the argument itself) */
    uint32_t shared;  /* leading steps equal to the previous slot's (same argument): their
                         containers are taken from the previous slot's walk */
    uint32_t frozen;  /* leading steps whose containers are frozen dataclasses: their members
                         cannot be rebound, so for the argument seen at registration
                         (`memo_arg`) they lead to `memo_obj` without being read again (the
                         leaf itself when frozen == nsteps) */
    PyObject *memo_arg; /* strong, or NULL */
    PyObject *memo_obj; /* strong, or NULL */
    PathStep *steps;  /* nsteps steps (PyMem), or NULL */
    int ndim;         /* NUMPY, QD_NDARRAY: the array's ndim */
    QdPyElementAxes element; /* NUMPY, QD_NDARRAY: the axes of one vector/matrix element, as
                              * the compiled kernel takes them */
    PyObject *object; /* NUMPY: the dtype; QD_NDARRAY: the DataType; VALUE, OBJECT: the argument
                       * (strong; for OBJECT this pins it, so its address is never reused) */
    PyObject *type;   /* QD_NDARRAY, VALUE, OBJECT: the leaf's exact type (strong); else NULL */
    PyObject *layout; /* QD_NDARRAY: its `layout` (strong; NULL for None) */
} Slot;

typedef struct Entry {
    PyObject *compiled; /* the CompiledKernel to launch (strong) */
    Py_ssize_t nargs;   /* call arguments */
    Py_ssize_t nslots;  /* leaves: the compiled kernel's arguments */
    Slot slots[];       /* one per leaf, in the compiled kernel's order */
} Entry;

typedef struct DispatcherObject {
    PyObject_HEAD
    vectorcallfunc vectorcall;   /* dispatcher_vectorcall */
    PyObject *fallback;          /* fallback(kernel, *args, **kwargs): the Python launch path */
    PyObject *on_error;          /* on_error(exc): raises what a failed fast launch raises */
    PyObject *numpy_type;        /* numpy.ndarray, once an entry has met it (strong) */
    PyObject *param_names;       /* tuple of the kernel's parameter names (str), which binds
                                    keyword arguments on the fast path; NULL: keywords take the
                                    fallback */
    Entry *entries[MAX_ENTRIES]; /* the table, entries[0 .. nentries) */
    int nentries;                /* entries in use */
    int next_victim;             /* entry replaced when the table is full */
} DispatcherObject;

/* quadrants._core.NdarrayBase, the base of qd.ndarray: the attributes a launch reads --
 * `_qd_array` (what is launched: a NumPy array or a DeviceBuffer), `dtype` and `layout` (None,
 * or the permutation of axes its memory is stored in) -- are C members, which the fast path
 * reads from the object itself rather than through the attribute protocol and the instance
 * dict. */
typedef struct NdarrayBaseObject {
    PyObject_HEAD
    PyObject *array;  /* `_qd_array` */
    PyObject *dtype;  /* `dtype` */
    PyObject *layout; /* `layout` (NULL reads as None) */
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
        Slot *slot = &entry->slots[i];
        Py_XDECREF(slot->object);
        Py_XDECREF(slot->type);
        Py_XDECREF(slot->layout);
        Py_XDECREF(slot->memo_arg);
        Py_XDECREF(slot->memo_obj);
        for (uint32_t k = 0; slot->steps && k < slot->nsteps; k++) {
            Py_XDECREF(slot->steps[k].type);
            Py_XDECREF(slot->steps[k].name);
        }
        PyMem_Free(slot->steps);
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

/* Whether two ndarray layouts are equal: the same object, both None (or NULL), or tuples of the
 * same exact ints. Runs no Python code. */
static bool
layouts_equal(PyObject *a, PyObject *b)
{
    a = a == Py_None ? NULL : a;
    b = b == Py_None ? NULL : b;
    if (a == b) {
        return true;
    }
    if (!a || !b || !PyTuple_CheckExact(a) || !PyTuple_CheckExact(b) ||
        PyTuple_GET_SIZE(a) != PyTuple_GET_SIZE(b)) {
        return false;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(a); i++) {
        PyObject *x = PyTuple_GET_ITEM(a, i), *y = PyTuple_GET_ITEM(b, i);
        if (!PyLong_CheckExact(x) || !PyLong_CheckExact(y)) {
            return false;
        }
        int overflow_x, overflow_y;
        long vx = PyLong_AsLongAndOverflow(x, &overflow_x);
        long vy = PyLong_AsLongAndOverflow(y, &overflow_y);
        if (overflow_x || overflow_y || vx != vy) {
            return false;
        }
    }
    return true;
}

/* numpy.integer and numpy.floating (strong), looked up when the first scalar slot is made
 * (numpy_scalar_types_init); NULL before. */
static PyObject *numpy_integer, *numpy_floating;

static int
numpy_scalar_types_init(void)
{
    if (numpy_integer) {
        return 0;
    }
    PyObject *np = PyImport_ImportModule("numpy");
    if (!np) {
        return -1;
    }
    PyObject *integer = PyObject_GetAttrString(np, "integer");
    PyObject *floating = integer ? PyObject_GetAttrString(np, "floating") : NULL;
    Py_DECREF(np);
    if (!floating || !PyType_Check(integer) || !PyType_Check(floating)) {
        Py_XDECREF(integer);
        Py_XDECREF(floating);
        return PyErr_Occurred() ? -1 : 0;
    }
    numpy_integer = integer;
    numpy_floating = floating;
    return 0;
}

/* Whether arg is a NumPy integer (or, with is_real, also floating) scalar: values the Python
 * launch takes for such a parameter, converting them as the packer does (__index__ /
 * __float__, NumPy's own C code). numpy.bool_ is neither: the Python path refuses it for u1. */
static bool
is_numpy_scalar(PyObject *arg, bool is_real)
{
    return numpy_integer &&
           (PyObject_TypeCheck(arg, (PyTypeObject *)numpy_integer) ||
            (is_real && PyObject_TypeCheck(arg, (PyTypeObject *)numpy_floating)));
}

/* Whether leaf `arg` (borrowed) matches `slot`. Runs no Python code and leaves no exception
 * set. */
static bool
slot_matches(const DispatcherObject *self, const Slot *slot, PyObject *arg)
{
    PyObject *array = NULL, *dtype = NULL;
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
        return is_numpy_scalar(arg, true);
    case SLOT_INT:
        return PyLong_CheckExact(arg) || PyBool_Check(arg) || is_numpy_scalar(arg, false);
    case SLOT_NUMPY:
        return (PyObject *)Py_TYPE(arg) == self->numpy_type &&
               numpy_matches(arg, slot->object, slot->ndim, &slot->element);
    case SLOT_QD_NDARRAY:
        if ((PyObject *)Py_TYPE(arg) != slot->type) {
            return false; /* the exact class: a vector ndarray is not a scalar one */
        }
        array = ((const NdarrayBaseObject *)arg)->array;
        dtype = ((const NdarrayBaseObject *)arg)->dtype;
        if (!layouts_equal(((const NdarrayBaseObject *)arg)->layout, slot->layout)) {
            return false; /* the same memory in another axis order is another kernel */
        }
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

/* Whether tp's version tag is valid (it changes whenever the type is modified). */
static bool
version_tag_valid(PyTypeObject *tp)
{
#if PY_VERSION_HEX >= 0x030C0000
    return tp->tp_version_tag != 0;
#else
    return tp->tp_version_tag != 0 && PyType_HasFeature(tp, Py_TPFLAGS_VALID_VERSION_TAG);
#endif
}

/* The containers on the path walked last: chain[k] is the object after k steps from argument
 * `arg` (chain[0] is the argument), for k <= depth (strong references). */
typedef struct PathChain {
    Py_ssize_t arg;
    uint32_t depth;
    uint32_t top; /* chain[depth + 1 .. top] may still hold a longer earlier path's containers */
    PyObject *chain[MAX_SHARED_STEPS + 1];
} PathChain;

static void
chain_clear(PathChain *c)
{
    for (uint32_t k = 0; c->arg >= 0 && k <= c->top; k++) {
        Py_CLEAR(c->chain[k]);
    }
    c->arg = -1;
    c->depth = 0;
    c->top = 0;
}

/* The object at the end of `slot`'s path from the call arguments (new reference), or NULL when
 * some step does not apply (no exception set). The first slot->shared steps are those the
 * previous slot walked (`c`). Runs no Python code: every container is of a type whose attribute
 * reads were checked when the step was made, and unchanged since. */
static PyObject *
resolve_leaf(const Slot *slot, PyObject *const *args, PathChain *c)
{
    uint32_t k = 0;
    PyObject *obj;
    bool memo = slot->frozen > 0 && args[slot->arg] == slot->memo_arg;
    if (memo) {
        /* the frozen containers of the argument seen at registration: the same members */
        chain_clear(c); /* the next slot cannot take its containers from this walk */
        k = slot->frozen;
        obj = Py_NewRef(slot->memo_obj);
    } else if (slot->shared > 0 && c->arg == slot->arg && c->depth >= slot->shared) {
        k = slot->shared;
        obj = Py_NewRef(c->chain[k]);
    } else if (c->arg == slot->arg) {
        obj = Py_NewRef(c->chain[0]); /* the same argument, no container shared */
    } else {
        chain_clear(c);
        obj = Py_NewRef(args[slot->arg]);
        c->arg = slot->arg;
        c->chain[0] = Py_NewRef(obj);
    }
    if (!memo) {
        c->depth = k; /* the chain past k belongs to the previous path */
    }
    for (; k < slot->nsteps; k++) {
        const PathStep *step = &slot->steps[k];
        PyTypeObject *tp = Py_TYPE(obj);
        if ((PyObject *)tp != step->type || tp->tp_version_tag != step->version ||
            !version_tag_valid(tp)) {
            Py_DECREF(obj);
            return NULL;
        }
        PyObject *next = PyObject_GenericGetAttr(obj, step->name);
        Py_DECREF(obj);
        if (next == NULL) {
            PyErr_Clear(); /* a missing member: no match (the fallback raises what is due) */
            return NULL;
        }
        obj = next;
        if (!memo && k + 1 < slot->nsteps && k + 1 <= MAX_SHARED_STEPS) {
            /* a container (the leaf itself is never shared) */
            Py_XSETREF(c->chain[k + 1], Py_NewRef(obj));
            c->depth = k + 1;
            c->top = c->depth > c->top ? c->depth : c->top;
        }
    }
    return obj;
}

/* Drops the references of leaves[0 .. n). */
static void
release_leaves(PyObject **leaves, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_CLEAR(leaves[i]);
    }
}

/* The entry that matches the arguments, or NULL; on a match leaves[0 .. nslots) hold its leaves
 * (new references), and room for them was checked by the caller (`capacity`). Borrowed: valid
 * until Python code runs. */
static const Entry *
find_entry(const DispatcherObject *self, PyObject *const *args, Py_ssize_t nargs,
           PyObject **leaves, Py_ssize_t capacity)
{
    for (int e = 0; e < self->nentries; e++) {
        const Entry *entry = self->entries[e];
        if (entry->nargs != nargs || entry->nslots > capacity) {
            continue;
        }
        PathChain chain = {.arg = -1};
        Py_ssize_t i = 0;
        for (; i < entry->nslots; i++) {
            const Slot *slot = &entry->slots[i];
            leaves[i] =
                slot->nsteps ? resolve_leaf(slot, args, &chain) : Py_NewRef(args[slot->arg]);
            if (!leaves[i] || !slot_matches(self, slot, leaves[i])) {
                break;
            }
        }
        chain_clear(&chain);
        if (i == entry->nslots) {
            return entry;
        }
        release_leaves(leaves, i + 1);
    }
    return NULL;
}

/* The most leaves of any entry. */
static Py_ssize_t
max_leaves(const DispatcherObject *self)
{
    Py_ssize_t n = 0;
    for (int e = 0; e < self->nentries; e++) {
        n = self->entries[e]->nslots > n ? self->entries[e]->nslots : n;
    }
    return n;
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
    PyObject *inline_leaves[INLINE_LEAVES];
    PyObject *inline_launch[INLINE_LEAVES];
    PyObject **leaves = inline_leaves, **launch = inline_launch;
    PyObject *compiled = NULL;
    PyObject *result = NULL;
    Py_ssize_t nleaves = 0;

    if (self->nentries == 0 || nargs > MAX_FAST_ARGS) {
        return call_fallback(self, args, nargs, NULL);
    }
    Py_ssize_t capacity = max_leaves(self);
    if (capacity > INLINE_LEAVES) {
        leaves = PyMem_Malloc(2 * (size_t)capacity * sizeof(PyObject *));
        if (!leaves) {
            return PyErr_NoMemory();
        }
        launch = leaves + capacity;
    } else {
        capacity = INLINE_LEAVES;
    }
    const Entry *entry = find_entry(self, args, nargs, leaves, capacity);
    if (!entry) {
        result = call_fallback(self, args, nargs, NULL);
        goto done;
    }
    nleaves = entry->nslots;
    /* The launch takes one value per leaf: the scalar, the array (a qd.ndarray's `_qd_array`,
     * held by its leaf), None for a template. */
    for (Py_ssize_t i = 0; i < nleaves; i++) {
        switch (entry->slots[i].kind) {
        case SLOT_QD_NDARRAY:
            launch[i] = ((const NdarrayBaseObject *)leaves[i])->array;
            Py_INCREF(launch[i]);
            Py_SETREF(leaves[i], launch[i]); /* the array outlives a rebinding of the member */
            break;
        case SLOT_VALUE:
        case SLOT_OBJECT:
            launch[i] = Py_None;
            break;
        default:
            launch[i] = leaves[i];
            break;
        }
    }
    /* The launch releases the GIL: another thread may replace the entry meanwhile. */
    compiled = Py_NewRef(entry->compiled);
    result = qd_py_compiled_kernel_call(compiled, launch, nleaves);
    if (!result) {
        raise_through_hook(self);
    }
done:
    Py_XDECREF(compiled);
    release_leaves(leaves, nleaves);
    if (leaves != inline_leaves) {
        PyMem_Free(leaves);
    }
    return result;
}

/* The arguments of a call with keywords in parameter order (borrowed, in bound[]): their number,
 * or -1 when the call must take the fallback (no parameter names, an unknown, repeated or
 * missing argument, too many), which binds them and raises what is due. Runs no Python code. */
static Py_ssize_t
bind_keywords(const DispatcherObject *self, PyObject *const *args, Py_ssize_t nargs,
              PyObject *kwnames, PyObject **bound)
{
    Py_ssize_t nkw = PyTuple_GET_SIZE(kwnames);
    if (!self->param_names || nargs + nkw != PyTuple_GET_SIZE(self->param_names) ||
        nargs + nkw > MAX_FAST_ARGS) {
        return -1;
    }
    Py_ssize_t n = nargs + nkw;
    for (Py_ssize_t i = 0; i < n; i++) {
        bound[i] = i < nargs ? args[i] : NULL;
    }
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, k);
        Py_ssize_t at = -1;
        for (Py_ssize_t j = nargs; j < n && at < 0; j++) {
            PyObject *param = PyTuple_GET_ITEM(self->param_names, j);
            if (param == name || (PyUnicode_CheckExact(name) &&
                                  PyUnicode_Compare(param, name) == 0)) {
                at = j;
            }
        }
        if (at < 0 || bound[at] != NULL) {
            return -1;
        }
        bound[at] = args[nargs + k];
    }
    return n;
}

static PyObject *
dispatcher_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    DispatcherObject *self = (DispatcherObject *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);

    if (kwnames && PyTuple_GET_SIZE(kwnames)) {
        PyObject *bound[MAX_FAST_ARGS];
        Py_ssize_t n = bind_keywords(self, args, nargs, kwnames, bound);
        return n < 0 ? call_fallback(self, args, nargs, kwnames) : dispatch(self, bound, n);
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
        if (numpy_scalar_types_init() < 0) {
            return -1;
        }
        ok = slot_matches(self, slot, arg);
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
        if (!derives_from_ndarray_base(Py_TYPE(arg))) {
            break;
        }
        slot->type = Py_NewRef((PyObject *)Py_TYPE(arg));
        array = Py_XNewRef(((const NdarrayBaseObject *)arg)->array);
        slot->object = Py_XNewRef(((const NdarrayBaseObject *)arg)->dtype);
        slot->layout = Py_XNewRef(((const NdarrayBaseObject *)arg)->layout);
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

/* Whether reading attribute `name` (a str) of an instance of `tp` runs no Python code: the type
 * uses the generic attribute lookup and its class attribute of that name, if any, is no data
 * descriptor other than a member slot. Assigns tp's version tag. */
static bool
plain_attribute(PyTypeObject *tp, PyObject *name)
{
    if (tp->tp_getattro != PyObject_GenericGetAttr) {
        return false;
    }
    PyObject *attr = _PyType_Lookup(tp, name); /* borrowed; assigns the version tag */
    if (attr != NULL && Py_TYPE(attr)->tp_descr_get != NULL &&
        Py_TYPE(attr) != &PyMemberDescr_Type) {
        return false;
    }
    return version_tag_valid(tp);
}

/* Whether the metaclass of `tp` declares its classes frozen dataclasses for type checkers
 * (`@dataclass_transform(frozen_default=True)` on it, as Genesis's array classes do). */
static bool
is_declared_frozen(PyTypeObject *tp)
{
    PyObject *spec = PyObject_GetAttrString((PyObject *)Py_TYPE(tp), "__dataclass_transform__");
    if (spec == NULL) {
        PyErr_Clear();
        return false;
    }
    PyObject *frozen = PyDict_Check(spec) ? PyDict_GetItemString(spec, "frozen_default") : NULL;
    bool is = frozen == Py_True;
    Py_DECREF(spec);
    return is;
}

/* Whether instances of `tp` are frozen dataclasses (`@dataclasses.dataclass(frozen=True)`, a
 * class whose metaclass declares them so, or a class with `_qd_frozen = True`): 1 yes, 0 no, -1
 * with an exception. May run Python code (registration only). */
static int
is_frozen_dataclass(PyTypeObject *tp)
{
    if (Py_TYPE(tp) != &PyType_Type && is_declared_frozen(tp)) {
        return 1;
    }
    /* this package's own wrappers that never rebind what the compiler reads (qd.Tensor) */
    PyObject *marker = PyObject_GetAttrString((PyObject *)tp, "_qd_frozen");
    if (marker == NULL) {
        PyErr_Clear();
    } else {
        int is = marker == Py_True;
        Py_DECREF(marker);
        if (is) {
            return 1;
        }
    }
    PyObject *params = PyObject_GetAttrString((PyObject *)tp, "__dataclass_params__");
    if (params == NULL) {
        PyErr_Clear();
        return 0;
    }
    PyObject *frozen = PyObject_GetAttrString(params, "frozen");
    Py_DECREF(params);
    if (frozen == NULL) {
        PyErr_Clear();
        return 0;
    }
    int is = frozen == Py_True;
    Py_DECREF(frozen);
    return is;
}

/* Fills slot->steps for the path `names` (a tuple of str) from call argument `arg` (borrowed)
 * and sets *leaf to the object it reaches (new reference). 1 when every step is a plain
 * attribute read, 0 when some is not (the launch is not registered), -1 with an exception. */
static int
path_init(Slot *slot, PyObject *arg, PyObject *names, PyObject **leaf)
{
    Py_ssize_t n = PyTuple_GET_SIZE(names);
    PyObject *obj = Py_NewRef(arg);
    *leaf = NULL;
    if (n > 0) {
        slot->steps = PyMem_Calloc((size_t)n, sizeof(PathStep));
        if (!slot->steps) {
            Py_DECREF(obj);
            PyErr_NoMemory();
            return -1;
        }
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *name = PyTuple_GET_ITEM(names, k);
        PyTypeObject *tp = Py_TYPE(obj);
        if (!PyUnicode_CheckExact(name)) {
            Py_DECREF(obj);
            PyErr_SetString(PyExc_TypeError, "_dispatch_add(): a path holds attribute names");
            return -1;
        }
        if (!plain_attribute(tp, name)) {
            Py_DECREF(obj);
            return 0;
        }
        int frozen = slot->frozen == (uint32_t)k ? is_frozen_dataclass(tp) : 0;
        if (frozen < 0) {
            Py_DECREF(obj);
            return -1;
        }
        PathStep *step = &slot->steps[slot->nsteps++];
        step->type = Py_NewRef((PyObject *)tp);
        step->version = tp->tp_version_tag;
        step->name = Py_NewRef(name);
        PyUnicode_InternInPlace(&step->name);
        PyObject *next = PyObject_GenericGetAttr(obj, step->name);
        Py_DECREF(obj);
        if (!next) {
            return -1;
        }
        obj = next;
        if (frozen) {
            /* a member of a frozen dataclass (a container, or the leaf): remembered */
            slot->frozen = (uint32_t)k + 1;
            Py_XSETREF(slot->memo_obj, Py_NewRef(obj));
        }
    }
    if (slot->frozen > 0) {
        slot->memo_arg = Py_NewRef(arg);
    }
    *leaf = obj;
    return 1;
}

/* Reads leaf specification `spec` (leaf `index`) into (letter, argument index, path): a
 * one-letter str (the leaf is argument `index` itself) or a tuple (letter, argument index,
 * (names...)). 0, or -1 with an exception. */
static int
parse_leaf_spec(PyObject *spec, Py_ssize_t index, Py_ssize_t nargs, char *kind, Py_ssize_t *arg,
                PyObject **names)
{
    PyObject *letter = spec;
    *arg = index;
    *names = NULL;
    if (PyTuple_Check(spec)) {
        if (PyTuple_GET_SIZE(spec) != 3 || !PyTuple_Check(PyTuple_GET_ITEM(spec, 2))) {
            PyErr_SetString(PyExc_ValueError, "_dispatch_add(): a leaf is (kind, arg, path)");
            return -1;
        }
        letter = PyTuple_GET_ITEM(spec, 0);
        *arg = PyLong_AsSsize_t(PyTuple_GET_ITEM(spec, 1));
        if (*arg == -1 && PyErr_Occurred()) {
            return -1;
        }
        *names = PyTuple_GET_ITEM(spec, 2);
    }
    Py_ssize_t len = 0;
    const char *text = PyUnicode_Check(letter) ? PyUnicode_AsUTF8AndSize(letter, &len) : NULL;
    if (!text || len != 1 || *arg < 0 || *arg >= nargs) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "_dispatch_add(): bad leaf kind or argument index");
        }
        return -1;
    }
    *kind = text[0];
    return 0;
}

/* Records that a positional call with `call_args` (a tuple, borrowed) launches `compiled`
 * (borrowed), its leaves matched as `specs` (a list or tuple, one item per leaf) say. Returns
 * True when recorded, False when the arguments do not suit the fast path or are already covered;
 * NULL with an exception set on error. */
static PyObject *
dispatcher_add_impl(DispatcherObject *self, PyObject *compiled, PyObject *specs,
                    PyObject *call_args)
{
    Py_ssize_t n = PyTuple_GET_SIZE(call_args);
    PyObject *const *args = &PyTuple_GET_ITEM(call_args, 0);
    Py_ssize_t nleaves = PySequence_Fast_GET_SIZE(specs);
    Py_ssize_t capacity = nleaves > max_leaves(self) ? nleaves : max_leaves(self);
    PyObject *no_names = NULL;
    PyObject **leaves = NULL;
    Entry *entry = NULL;
    PyObject *result = NULL;

    if (n > MAX_FAST_ARGS) {
        Py_RETURN_FALSE;
    }
    leaves = PyMem_Calloc((size_t)capacity + 1, sizeof(PyObject *));
    no_names = PyTuple_New(0);
    if (!leaves || !no_names) {
        PyErr_NoMemory();
        goto done;
    }
    /* Already covered (a call by keyword, say): nothing to add. */
    const Entry *found = find_entry(self, args, n, leaves, capacity);
    if (found) {
        release_leaves(leaves, found->nslots);
        result = Py_NewRef(Py_False);
        goto done;
    }
    entry = PyMem_Calloc(1, sizeof(Entry) + (size_t)nleaves * sizeof(Slot));
    if (!entry) {
        PyErr_NoMemory();
        goto done;
    }
    entry->compiled = Py_NewRef(compiled);
    entry->nargs = n;
    entry->nslots = nleaves; /* slots not filled yet hold NULLs, which entry_free skips */
    for (Py_ssize_t i = 0; i < nleaves; i++) {
        char kind;
        Py_ssize_t arg;
        PyObject *names, *leaf = NULL;
        Slot *slot = &entry->slots[i];
        if (parse_leaf_spec(PySequence_Fast_GET_ITEM(specs, i), i, n, &kind, &arg, &names) < 0) {
            goto done;
        }
        slot->arg = arg;
        int ok = path_init(slot, args[arg], names ? names : no_names, &leaf);
        if (ok == 1) {
            ok = slot_init(self, slot, kind, leaf, compiled, (uint32_t)i);
        }
        if (ok == 1 && i > 0 && slot->nsteps > 0 && entry->slots[i - 1].arg == arg) {
            const Slot *prev = &entry->slots[i - 1];
            uint32_t k = 0;
            while (k < slot->nsteps && k < prev->nsteps && k < MAX_SHARED_STEPS &&
                   slot->steps[k].type == prev->steps[k].type &&
                   slot->steps[k].name == prev->steps[k].name) {
                k++;
            }
            /* containers only: the last step reads the leaf itself */
            slot->shared = k < slot->nsteps ? k : slot->nsteps - 1;
            slot->shared = slot->shared < prev->nsteps ? slot->shared : prev->nsteps - 1;
        }
        Py_XDECREF(leaf);
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
    Py_XDECREF(no_names);
    PyMem_Free(leaves);
    return result;
}

/* _dispatch_add(compiled, kinds, args) -> bool: called by the Python layer once its checks of
 * a launch passed. `kinds` is a str with one letter (SlotKind) per argument, or a list with one
 * item per leaf of the compiled kernel: a letter for an argument itself, or (letter, argument
 * index, (attribute names...)) for a leaf reached by reading attributes (a dataclass member).
 * Only a CompiledKernel or DeviceKernel is recorded (tests stand other callables in for it). */
static PyObject *
dispatcher_add(PyObject *self, PyTypeObject *defining_class, PyObject *const *args,
               Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"compiled", "kinds", "args", NULL};
    QdPyState *state = PyType_GetModuleState(defining_class);
    PyObject *bound[3];

    if (qd_py_bind_args("_dispatch_add", names, 3, args, nargs, kwnames, bound) < 0) {
        return NULL;
    }
    if (!PyTuple_Check(bound[2])) {
        PyErr_SetString(PyExc_TypeError, "_dispatch_add() argument 'args' must be a tuple");
        return NULL;
    }
    bool letters = PyUnicode_Check(bound[1]);
    PyObject *specs = letters ? PySequence_List(bound[1])
                              : PySequence_Fast(bound[1], "_dispatch_add(): kinds: a sequence");
    if (!specs) {
        return NULL;
    }
    PyObject *result = NULL;
    if (letters && PyList_GET_SIZE(specs) != PyTuple_GET_SIZE(bound[2])) {
        PyErr_SetString(PyExc_ValueError, "_dispatch_add(): one kind letter per argument");
    } else if (!Py_IS_TYPE(bound[0], (PyTypeObject *)state->compiled_kernel_type) &&
               !Py_IS_TYPE(bound[0], (PyTypeObject *)state->device_kernel_type)) {
        result = Py_NewRef(Py_False);
    } else {
        result = dispatcher_add_impl((DispatcherObject *)self, bound[0], specs, bound[2]);
    }
    Py_DECREF(specs);
    return result;
}

static PyObject *
dispatcher_clear_method(PyObject *op, PyObject *unused)
{
    (void)unused;
    table_clear((DispatcherObject *)op);
    Py_RETURN_NONE;
}

/* _dispatch_params(names): the kernel's parameter names (a tuple of str), so that calls with
 * keyword arguments can take the fast path. */
static PyObject *
dispatcher_params(PyObject *op, PyObject *names)
{
    DispatcherObject *self = (DispatcherObject *)op;
    if (!PyTuple_CheckExact(names)) {
        PyErr_SetString(PyExc_TypeError, "_dispatch_params() takes a tuple of str");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(names); i++) {
        if (!PyUnicode_CheckExact(PyTuple_GET_ITEM(names, i))) {
            PyErr_SetString(PyExc_TypeError, "_dispatch_params() takes a tuple of str");
            return NULL;
        }
    }
    Py_XSETREF(self->param_names, Py_NewRef(names));
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
    Py_VISIT(self->param_names);
    for (int e = 0; e < self->nentries; e++) {
        const Entry *entry = self->entries[e];
        Py_VISIT(entry->compiled);
        for (Py_ssize_t i = 0; i < entry->nslots; i++) {
            Py_VISIT(entry->slots[i].object);
            Py_VISIT(entry->slots[i].type);
            Py_VISIT(entry->slots[i].layout);
            Py_VISIT(entry->slots[i].memo_arg);
            Py_VISIT(entry->slots[i].memo_obj);
            for (uint32_t k = 0; k < entry->slots[i].nsteps; k++) {
                Py_VISIT(entry->slots[i].steps[k].type);
            }
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
    Py_CLEAR(self->param_names);
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
    {"_dispatch_params", dispatcher_params, METH_O,
     "_dispatch_params(names): parameter names, for calls with keyword arguments"},
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
    Py_VISIT(self->layout);
    return 0;
}

static int
ndarray_base_clear(PyObject *op)
{
    NdarrayBaseObject *self = (NdarrayBaseObject *)op;
    Py_CLEAR(self->array);
    Py_CLEAR(self->dtype);
    Py_CLEAR(self->layout);
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
    {"layout", T_OBJECT, offsetof(NdarrayBaseObject, layout), 0,
     "None, or the permutation of axes the memory is stored in"},
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
