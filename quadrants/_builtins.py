"""Kernel-scope builtins: ``qd.static``, ``qd.ndrange``, ``qd.sqrt``, ``qd.atomic_add``, ...

Each builtin is a Python function carrying ``_qd_builtin = "<name>"``; the C core recognises a
call by that attribute and compiles it. Called in Python scope:

- ``static``, ``static_assert``, ``static_print``, ``ndrange``, ``grouped`` behave as at trace
  time (``qd.static(qd.ndrange(2, 3))`` is an iterable of index tuples);
- ``cast``, ``bit_cast`` and the math functions compute on Python/NumPy numbers, and
  elementwise on Python-scope vectors and matrices through NumPy (math-module
  semantics, with the kernel's conventions where they differ: ``floor``/``ceil``/``round`` keep
  floats, ``round`` is half away from zero, ``raw_div``/``raw_mod`` are C division/remainder,
  ``bit_shr`` is a logical shift in the width of the value's type);
- everything else (atomics, ``random``, ``loop_config``, ...) raises QuadrantsSyntaxError.
"""

import builtins as _py
import functools as _functools
import inspect as _inspect
import itertools as _itertools
import math as _math
import types as _pytypes
from typing import Any as _Any

import numpy as _np

from quadrants import _core, _matrix, _types
from quadrants._core import QuadrantsSyntaxError as _QuadrantsSyntaxError
from quadrants._core import QuadrantsTypeError as _QuadrantsTypeError


def _builtin(name):
    def mark(function):
        function._qd_builtin = name
        return function

    return mark


def _kernel_only(name, doc, signature="*args, **kwargs"):
    """A builtin that only kernels can call; `signature` is its parameter list (the reference's),
    which calls in kernels are checked against."""

    def builtin(*args, **kwargs) -> _Any:
        raise _QuadrantsSyntaxError(
            f"qd.{name}() can only be called inside Quadrants kernels and functions"
        )

    namespace = {}
    exec(f"def f({signature}): pass", {"_py": _py}, namespace)  # noqa: S102 (a fixed parameter list)
    builtin.__signature__ = _inspect.signature(namespace["f"])
    builtin.__name__ = builtin.__qualname__ = name
    builtin.__doc__ = (
        doc + "\n\nKernel scope only: calling it in Python scope raises QuadrantsSyntaxError."
    )
    builtin._qd_builtin = name
    return builtin


# --- compile-time helpers ---


@_builtin("static")
def static(x, *xs) -> _Any:
    """Evaluates `x` at compile time: ``if qd.static(c):`` keeps one branch, ``for i in
    qd.static(range(3)):`` unrolls. Several arguments give a list (``a, b = qd.static(b, a)``)."""
    if xs:
        return [static(x)] + [static(value) for value in xs]
    if x is None or isinstance(
        x, (bool, int, float, range, list, tuple, enumerate, zip, filter, map)
    ):
        return x
    if isinstance(x, (_np.bool_, _np.integer, _np.floating, _NDRange, _GroupedNDRange)):
        return x
    if isinstance(x, (_pytypes.FunctionType, _pytypes.MethodType, _pytypes.BuiltinFunctionType)):
        return x
    if any(
        hasattr(x, marker) for marker in ("_qd_field_id", "_qd_ndarray", "_qd_kernel", "_qd_func")
    ):
        return x
    raise ValueError(
        "Input to qd.static must be compile-time constants or global pointers, instead of "
        f"{type(x)}"
    )


@_builtin("static_assert")
def static_assert(cond, msg=None) -> _Any:
    """Raises AssertionError (at compile time in kernels) when `cond` is false."""
    if not cond:
        raise AssertionError(msg) if msg is not None else AssertionError()


@_builtin("static_print")
def static_print(*args, **kwargs) -> _Any:
    """Prints at compile time (no code is generated)."""
    print(*args, **kwargs)


def _bound(value):
    if not isinstance(value, (int, _np.integer)):
        raise _QuadrantsTypeError(
            "Every argument of ndrange should be an integer scalar or a tuple/list of (int, int)"
        )
    return int(value)


class _NDRange:
    """The iteration space of ``qd.ndrange(*dims, axes=None)``. Each dim is ``n`` (0..n) or
    ``(begin, end)`` (end clamped to at least begin). In Python scope it iterates over index
    tuples, the last dim fastest, or in the order given by `axes` (outermost first)."""

    _qd_ndrange = True

    def __init__(self, *dims, axes=None):
        bounds = []
        for dim in dims:
            if isinstance(dim, (list, tuple)):
                if len(dim) != 2:
                    raise _QuadrantsSyntaxError(
                        "Every argument of ndrange should be a scalar or a tuple/list like (begin, end)"
                    )
                begin, end = _bound(dim[0]), _bound(dim[1])
            else:
                begin, end = 0, _bound(dim)
            bounds.append((begin, _py.max(begin, end)))
        self.bounds = tuple(bounds)
        if axes is None:
            axes = tuple(range(len(bounds)))
        else:
            axes = tuple(axes)
            n = len(bounds)
            if len(axes) != n:
                raise _QuadrantsSyntaxError(
                    f"qd.ndrange(axes={axes!r}) has {len(axes)} entries but ndrange was called "
                    f"with {n} dimension argument(s); they must match"
                )
            for axis in axes:
                if isinstance(axis, (bool, _np.bool_)) or not isinstance(axis, (int, _np.integer)):
                    raise _QuadrantsTypeError(
                        f"qd.ndrange(axes={axes!r}) entries must be Python ints; "
                        f"got {type(axis).__name__} ({axis!r})"
                    )
            if sorted(axes) != list(range(n)):
                raise _QuadrantsSyntaxError(f"qd.ndrange(axes={axes!r}) is not a permutation of range({n})")
        self.axes = tuple(int(axis) for axis in axes)
        self.dimensions = [end - begin for begin, end in self.bounds]

    def __iter__(self):
        ranges = [range(*self.bounds[axis]) for axis in self.axes]
        for values in _itertools.product(*ranges):
            index = [0] * len(self.axes)
            for axis, value in zip(self.axes, values):
                index[axis] = value
            yield tuple(index)

    def __len__(self):
        return _math.prod(self.dimensions)

    def grouped(self):
        return _GroupedNDRange(self)


class _GroupedNDRange:
    """``qd.grouped(qd.ndrange(...))``: one index per iteration (a tuple in Python scope)."""

    _qd_grouped = True

    def __init__(self, ndrange):
        self.ndrange = ndrange

    def __iter__(self):
        return iter(self.ndrange)

    def __len__(self):
        return len(self.ndrange)


@_builtin("ndrange")
def ndrange(*dims, axes=None) -> _Any:
    """A multi-dimensional range, flattened into one parallel loop in kernels."""
    return _NDRange(*dims, axes=axes)


@_builtin("grouped")
def grouped(x) -> _Any:
    """Groups the indices of an ndrange (or of a field/ndarray struct-for) into one vector."""
    if isinstance(x, _NDRange):
        return x.grouped()
    return x


# --- casts ---


def _source_dtype(x):
    if isinstance(x, _np.generic):
        found = _types.from_numpy_dtype(x.dtype)
        if found is not None:
            return found
    if isinstance(x, (bool, _np.bool_)):
        return _types.u1
    if isinstance(x, int):
        return _types.default_ip()
    if isinstance(x, float):
        return _types.default_fp()
    raise TypeError(f"expected a number, got {type(x).__name__}")


@_builtin("cast")
def cast(obj, dtype) -> _Any:
    """`obj` converted to `dtype` (float -> int truncates toward zero); elementwise on vectors and
    matrices."""
    if isinstance(obj, _matrix.Matrix):
        return obj.cast(dtype)
    return _types.to_dtype_value(obj, _types.cook_dtype(dtype)).item()


@_builtin("bit_cast")
def bit_cast(obj, dtype) -> _Any:
    """The bits of `obj` reinterpreted as `dtype` (same width only)."""
    x = obj
    source = _source_dtype(x)
    target = _types.cook_dtype(dtype)
    if source.bits != target.bits:
        raise ValueError(f"qd.bit_cast needs types of the same width, got {source} and {target}")
    value = _types.to_dtype_value(x, source)
    return _np.array(value, dtype=source.np_dtype).view(target.np_dtype)[()].item()


# --- math (Python scope: on numbers) ---


def _keep_float(x, result):
    return float(result) if isinstance(x, (float, _np.floating)) else result


def _rounded(x, result, dtype):
    result = _keep_float(x, result)
    return cast(result, dtype) if dtype is not None else result


def _has_matrix(args):
    return _py.any(isinstance(a, _matrix.Matrix) for a in args)


def _elementwise(function, *args):
    """`function` (a NumPy function) over Matrix arguments, elementwise (scalars broadcast)."""
    return _matrix.elementwise(function, *args)


def _rounding(x, function, dtype):
    """floor/ceil/round of a vector or matrix: integers stay as they are."""
    result = _elementwise(_np.copy if x.entries.dtype.kind in "biu" else function, x)
    return result.cast(dtype) if dtype is not None else result


def _math1(name, function, np_function, doc):
    def builtin(x) -> _Any:
        if isinstance(x, _matrix.Matrix):
            return _elementwise(np_function, x)
        return function(x)

    builtin.__name__ = builtin.__qualname__ = name
    builtin.__doc__ = doc
    builtin._qd_builtin = name
    return builtin


def _np_rsqrt(x):
    return 1 / _np.sqrt(x)


sqrt = _math1("sqrt", _math.sqrt, _np.sqrt, "Square root.")
exp = _math1("exp", _math.exp, _np.exp, "e to the power x.")
log = _math1("log", _math.log, _np.log, "Natural logarithm.")
sin = _math1("sin", _math.sin, _np.sin, "Sine.")
cos = _math1("cos", _math.cos, _np.cos, "Cosine.")
tan = _math1("tan", _math.tan, _np.tan, "Tangent.")
tanh = _math1("tanh", _math.tanh, _np.tanh, "Hyperbolic tangent.")
asin = _math1("asin", _math.asin, _np.arcsin, "Arc sine.")
acos = _math1("acos", _math.acos, _np.arccos, "Arc cosine.")
rsqrt = _math1(
    "rsqrt", lambda x: 1.0 / _math.sqrt(x), _np_rsqrt, "Reciprocal square root, 1 / sqrt(x)."
)
abs = _math1("abs", _py.abs, _np.abs, "Absolute value.")  # noqa: A001 (qd.abs)


@_builtin("atan2")
def atan2(x1, x2) -> _Any:
    """The angle of the point (x2, x1): arc tangent of x1 / x2 in the right quadrant."""
    if _has_matrix((x1, x2)):
        return _elementwise(_np.arctan2, x1, x2)
    return _math.atan2(x1, x2)


@_builtin("floor")
def floor(x, dtype=None) -> _Any:
    """Largest integer not above `x`, in x's type (or cast to `dtype`)."""
    if isinstance(x, _matrix.Matrix):
        return _rounding(x, _np.floor, dtype)
    return _rounded(x, _math.floor(x), dtype)


@_builtin("ceil")
def ceil(x, dtype=None) -> _Any:
    """Smallest integer not below `x`, in x's type (or cast to `dtype`)."""
    if isinstance(x, _matrix.Matrix):
        return _rounding(x, _np.ceil, dtype)
    return _rounded(x, _math.ceil(x), dtype)


@_builtin("round")
def round(x, dtype=None) -> _Any:  # noqa: A001 (qd.round)
    """`x` rounded to the nearest integer, halves away from zero (or cast to `dtype`); on a
    Python-scope vector or matrix, halves to even (NumPy's rounding, as in the reference)."""
    if isinstance(x, _matrix.Matrix):
        return _rounding(x, _np.round, dtype)
    lower = _math.floor(x)
    fraction = x - lower
    result = lower + 1 if fraction > 0.5 or (fraction == 0.5 and x > 0) else lower
    return _rounded(x, result, dtype)


@_builtin("pow")
def pow(base, exponent) -> _Any:  # noqa: A001 (qd.pow)
    """`base` to the power `exponent`."""
    return base**exponent


@_builtin("min")
def min(*args) -> _Any:  # noqa: A001 (qd.min)
    """The smallest argument (one argument is returned unchanged); elementwise on vectors and
    matrices."""
    if len(args) == 1:
        return args[0]
    if _has_matrix(args):
        return _functools.reduce(lambda a, b: _elementwise(_np.minimum, a, b), args)
    return _py.min(args)


@_builtin("max")
def max(*args) -> _Any:  # noqa: A001 (qd.max)
    """The largest argument (one argument is returned unchanged); elementwise on vectors and
    matrices."""
    if len(args) == 1:
        return args[0]
    if _has_matrix(args):
        return _functools.reduce(lambda a, b: _elementwise(_np.maximum, a, b), args)
    return _py.max(args)


@_builtin("select")
def select(cond, x1, x2) -> _Any:
    """`x1` where `cond` is true, else `x2` (both are evaluated); elementwise when `cond` is a
    vector or matrix."""
    if isinstance(cond, _matrix.Matrix):
        return _elementwise(lambda c, x, y: _np.where(c, _np.asarray(x), _np.asarray(y)), cond, x1, x2)
    return x1 if cond else x2


def _is_int(x):
    return isinstance(x, (int, _np.integer)) and not isinstance(x, (bool, _np.bool_))


@_builtin("raw_div")
def raw_div(x1, x2) -> _Any:
    """C division: integers truncate toward zero."""
    a, b = x1, x2
    if _is_int(a) and _is_int(b):
        quotient = _py.abs(int(a)) // _py.abs(int(b))
        return quotient if (a < 0) == (b < 0) else -quotient
    return a / b


@_builtin("raw_mod")
def raw_mod(x1, x2) -> _Any:
    """C remainder: the result has the sign of the dividend."""
    a, b = x1, x2
    if _is_int(a) and _is_int(b):
        return int(a) - raw_div(a, b) * int(b)
    return _math.fmod(a, b)


@_builtin("bit_shr")
def bit_shr(x1, x2) -> _Any:
    """Logical right shift of `x1` by `x2` (zeros shifted in, also for signed types), in the type
    of `x1`."""
    x, n = x1, x2
    dtype = _source_dtype(x)
    if dtype.is_real:
        raise TypeError("qd.bit_shr needs an integer")
    shifted = (int(x) & ((1 << dtype.bits) - 1)) >> int(n)
    return _types.wrap_int(shifted, dtype.bits, dtype.is_signed)


@_builtin("frexp")
def frexp(x) -> _Any:
    """(mantissa, exponent) with x = mantissa * 2**exponent and 0.5 <= |mantissa| < 1."""
    return _math.frexp(x)


@_builtin("zero")
def zero(x) -> _Any:
    """A zero of the same type (and shape) as `x`."""
    return x * 0


@_builtin("one")
def one(x) -> _Any:
    """A one of the same type (and shape) as `x`."""
    return x * 0 + 1


# --- kernel scope only ---

atomic_add = _kernel_only("atomic_add", "Atomically adds y to x; returns the old value of x.", "x, y")
atomic_sub = _kernel_only("atomic_sub", "Atomically subtracts y from x; returns the old value of x.", "x, y")
atomic_mul = _kernel_only("atomic_mul", "Atomically multiplies x by y; returns the old value of x.", "x, y")
atomic_min = _kernel_only("atomic_min", "Atomically sets x to min(x, y); returns the old value of x.", "x, y")
atomic_max = _kernel_only("atomic_max", "Atomically sets x to max(x, y); returns the old value of x.", "x, y")
atomic_and = _kernel_only("atomic_and", "Atomically sets x to x & y; returns the old value of x.", "x, y")
atomic_or = _kernel_only("atomic_or", "Atomically sets x to x | y; returns the old value of x.", "x, y")
atomic_xor = _kernel_only("atomic_xor", "Atomically sets x to x ^ y; returns the old value of x.", "x, y")
atomic_exchange = _kernel_only("atomic_exchange", "Atomically sets x to y; returns the old value of x.", "x, y")
atomic_cas = _kernel_only(
    "atomic_cas",
    "atomic_cas(x, expected, desired): sets x to desired if x == expected; returns the old x.",
    "x, expected, desired",
)
random = _kernel_only(
    "random",
    "random(dtype=float): floats uniform in [0, 1), integers over all bit patterns.",
    "dtype=_py.float",
)
randn = _kernel_only(
    "randn", "randn(dt=None): a normally distributed float (default_fp).", "dt=None"
)
global_thread_idx = _kernel_only("global_thread_idx", "The global id of the running thread.", "")
volatile_load = _kernel_only(
    "volatile_load", "A volatile read of a global element (for spin-waits).", "target"
)
clock_counter = _kernel_only("clock_counter", "A cycle counter of the device.", "")
get_addr = _kernel_only(
    "get_addr",
    "get_addr(f, indices): the memory address (a u64) of field element f[indices]; of component 0 "
    "for a vector/matrix field.",
    "f, indices",
)
loop_config = _kernel_only(
    "loop_config",
    "loop_config(*, block_dim=None, serialize=False, parallelize=None, block_dim_adaptive=True, "
    "bit_vectorize=False, name=None, min_blocks_per_sm=None): directives for the next top-level "
    "loop.",
)

# The qd.<name> builtins defined here: the rows of csrc/frontend/builtins.def flagged exported
# that are neither hints (_hints.py) nor linalg routines (_linalg.py), in the table's order.
__all__ = [
    name
    for name, flags in _core.BUILTINS
    if "exported" in flags and "hint" not in flags and "linalg" not in flags
]


# --- argument binding, for the compiler ---


def _bind_arguments(function, signature, cache, npos, kwnames):
    """How a kernel's call `function(<npos values>, <kwnames>=...)` binds, by the builtin's
    parameter list (the reference's): the TypeError message the reference gives when it does not
    bind ("TypeError when calling `sqrt`: sqrt() missing 1 required positional argument: 'x'."),
    or, when keywords name required parameters, (positional, keywords): the indices into the
    call's values (positional ones first, then keyword ones) of the new positional arguments and
    of the keywords kept; None when the call stays as it is. Called by csrc/frontend/lower_call.c
    for every builtin call; the answers are cached per (npos, kwnames)."""
    key = (npos, kwnames)
    if key in cache:
        return cache[key]
    try:
        _stand_in(function.__name__, signature)(*range(npos), **dict.fromkeys(kwnames))
    except TypeError as exc:
        answer = f"TypeError when calling `{function.__name__}`: {exc}."
    else:
        params = signature.parameters.values()
        positional = (_inspect.Parameter.POSITIONAL_ONLY, _inspect.Parameter.POSITIONAL_OR_KEYWORD)
        required = [p.name for p in params if p.kind in positional and p.default is p.empty]
        moved = [name for name in kwnames if name in required]
        if not moved:
            answer = None
        else:
            order = list(range(npos)) + [npos + kwnames.index(name) for name in required[npos:]]
            keep = tuple(npos + i for i, name in enumerate(kwnames) if name not in moved)
            answer = (tuple(order), keep)
    cache[key] = answer
    return answer


def _stand_in(name, signature):
    """A Python function named `name` with `signature`'s parameters and an empty body: calling it
    raises the TypeError Python gives for a call that does not bind, in Python's own words."""
    kinds = _inspect.Parameter
    parts, starred, slash = [], False, False
    for p in signature.parameters.values():
        if p.kind is kinds.POSITIONAL_ONLY:
            slash = True
        elif slash:
            parts.append("/")
            slash = False
        if p.kind is kinds.VAR_POSITIONAL:
            parts.append("*" + p.name)
            starred = True
        elif p.kind is kinds.VAR_KEYWORD:
            parts.append("**" + p.name)
        else:
            if p.kind is kinds.KEYWORD_ONLY and not starred:
                parts.append("*")
                starred = True
            parts.append(p.name + ("" if p.default is p.empty else "=None"))
    if slash:
        parts.append("/")
    namespace = {}
    exec(f"def {name}({', '.join(parts)}): pass", {}, namespace)  # noqa: S102 (names of our own)
    return namespace[name]


def _add_binder(value):
    """Gives a builtin with a fixed parameter list its `_qd_bind(npos, kwnames)`."""
    try:
        signature = _inspect.signature(value)
    except (TypeError, ValueError):
        return
    kinds = {p.kind for p in signature.parameters.values()}
    if _inspect.Parameter.VAR_KEYWORD in kinds and _inspect.Parameter.VAR_POSITIONAL in kinds:
        return  # takes anything: the lowering checks the call itself
    value._qd_bind = _functools.partial(_bind_arguments, value, signature, {})


def _add_binders():
    """Gives each builtin of this module with a fixed parameter list its binder."""
    for value in list(globals().values()):
        if callable(value) and isinstance(getattr(value, "_qd_builtin", None), str):
            _add_binder(value)


_add_binders()
