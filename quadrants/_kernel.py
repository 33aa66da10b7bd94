"""The decorators ``@qd.kernel``, ``@qd.func``, ``@qd.real_func``, ``@qd.pyfunc`` and
``@qd.data_oriented``, and the Python half of a kernel launch.

Decoration checks the signature (QuadrantsSyntaxError for what the reference rejects) and
captures the source. A kernel call then:

1. binds the arguments (positional or by name; ``qd_stream=`` is accepted and ignored);
2. checks and converts each one by its parameter's annotation and builds the specialisation
   key, one entry per parameter: ``("s", dtype_id)`` scalar, ``("a", dtype_id, ndim,
   element_shape)`` array (``"g"`` for a qd.ndarray with a gradient: it is launched with it, as
   ``x.grad``),
   ``("t", template_key)`` template. Template keys take ints/floats/bools/strings by value (with
   their type), fields by ``_qd_field_id``, other objects by identity (the compiled entry keeps
   them alive, so an id is never reused while its entry exists);
3. on the first call with a key, compiles through the C core::

       quadrants._core.compile_kernel(pyfunc, funcdef, filename, arg_descs, name, options)

   ``arg_descs`` has one entry per leaf argument, starting with its kind from the core's table
   (``_core.ARG_KINDS``, csrc/abi/args.def): ``("scalar", dtype_id)``, ``("ndarray", dtype_id,
   ndim, element_shape)`` (``element_shape``: ``()``, ``(n,)`` or ``(n, m)``, the last axes that
   form one vector/matrix element, which every launch checks; a fifth item is the physical
   layout of an ndarray made by ``qd.tensor(..., layout=)``) or ``("template", value)``; a
   dataclass member's is ``(path, desc)``. ``options`` comes from
   ``_runtime.compile_options()``.
   The result ``compiled(*launch_args)`` is cached in the kernel until ``qd.reset``;
4. launches with one value per parameter: scalars as Python numbers of the parameter type
   (float, int wrapped to the type's range, bool for u1), arrays as NumPy arrays (a
   ``qd.ndarray``'s ``_qd_array``; Fortran-ordered arrays are copied in and back), templates as
   None. The result is None, a Python number or a tuple.

Compilation and runtime errors surface at the call with a leading newline, the source line and
a caret (``_source.restyle``), unless ``qd.init(print_full_traceback=True)``.

A kernel object is a ``quadrants._core.Dispatcher`` (csrc/python/dispatch.c): calling it tries
the launches registered before, in C, and only on a miss runs the steps above in Python
(``_launch_fallback``). A launch is registered (``_dispatch_add``) when the C side can tell a
repeat of it from the arguments alone, passed by position or by keyword: Python and NumPy
scalars, C-contiguous NumPy arrays and qd.ndarrays, qd.BufferView windows (array, offset and size
read from the view at each call), qd.nn.MatrixViews (immutable: by identity), and templates keyed
by identity or by int/str value; Fortran-ordered arrays and float/tuple/dataclass templates
always take the Python path.

A parameter annotated ``qd.Tensor`` takes its kind from each argument (``_tensor_param``): an
ndarray (or NumPy / torch array) is an ndarray argument whose dtype, ndim and element come from
the value, anything else -- a field, None -- a template. A ``qd.Tensor`` wrapper argument is
replaced by what it wraps before anything else looks at it.

``@dataclasses.dataclass`` parameters are, for now, template values specialised member by
member (the reference flattens them into one launch argument per member, ``<param>__<member>``;
ndarray members therefore are not supported yet).
"""

import dataclasses
import sys
import functools
import inspect
import types
import typing
import warnings
import weakref
from typing import Any, Callable, Protocol, TypeVar, overload

import numpy as np

from quadrants import (
    _buffer_view,
    _cache,
    _core,
    _device,
    _external,
    _matrix,
    _runtime,
    _source,
    _struct,
    _types,
)
from quadrants._annotations import NdarrayType, Template
from quadrants.nn import _view as _nn_view
from quadrants._core import (
    QuadrantsCompilationError,
    QuadrantsRuntimeError,
    QuadrantsRuntimeTypeError,
    QuadrantsSyntaxError,
)
from quadrants._field import Field, ScalarField
from quadrants._ndarray import Ndarray
from quadrants._tensor import TENSOR_TYPES, Tensor
from quadrants.types.primitive_types import RefType

MAX_ARG_NUM = 512

# Parameter kinds: those of a leaf are the core's argument kinds (csrc/abi/args.def); a
# dataclass or struct and a vector/matrix passed by value are flattened into leaves.
SCALAR = _core.ARG_KINDS["SCALAR"]
NDARRAY = _core.ARG_KINDS["NDARRAY"]
TEMPLATE = _core.ARG_KINDS["TEMPLATE"]
DATACLASS = "dataclass"
MATRIX = "matrix"  # a vector/matrix passed by value: one scalar argument per element
# `x: qd.Tensor`: an ndarray (or NumPy / torch array) argument is passed as NDARRAY with the
# value's dtype and dimensions, anything else (a field, None) as TEMPLATE.
TENSOR = "tensor"
REF = "ref"  # a qd.ref(T) func parameter
BUFFER_VIEW = "buffer_view"  # qd.BufferView: an ndarray window (quadrants/_buffer_view.py)
MATRIX_VIEW = "matrix_view"  # qd.nn.MatrixView: a matrix in a buffer (quadrants/nn/_view.py)

_live_kernels = weakref.WeakSet()
_profile_kernels = 0  # kernels numbered for the kernel profiler so far (Kernel._name_tasks)


class Param:
    """One parameter: name, kind (SCALAR, NDARRAY, TEMPLATE, DATACLASS, or None for an
    unannotated func parameter), normalised annotation and default (inspect.Parameter.empty)."""

    __slots__ = ("name", "kind", "annotation", "default")

    def __init__(self, name, kind, annotation, default):
        self.name = name
        self.kind = kind
        self.annotation = annotation
        self.default = default

    def as_tuple(self):
        has_default = self.default is not inspect.Parameter.empty
        return (
            self.name,
            self.kind,
            self.annotation,
            has_default,
            self.default if has_default else None,
        )


def _classify(annotation):
    """(kind, normalised annotation) of a parameter annotation, or None if it is not allowed.
    Struct types are passed like dataclasses (flattened); an unpacked vector type raises."""
    if _struct.is_unpacked(annotation):
        raise _struct.unpacked_error("invalid kernel or function parameter annotation")
    if _struct.is_struct_type(annotation):
        return DATACLASS, annotation
    if isinstance(annotation, _matrix.MatrixType):
        return MATRIX, annotation
    if isinstance(annotation, NdarrayType):
        return NDARRAY, annotation
    if annotation is NdarrayType:
        return NDARRAY, NdarrayType()
    if (
        isinstance(annotation, _types.DataType)
        or annotation is int
        or annotation is float
        or annotation is bool
    ):
        return SCALAR, annotation
    if annotation is Template or isinstance(annotation, Template):
        return TEMPLATE, annotation
    if annotation is Tensor:
        return TENSOR, annotation
    if _buffer_view.is_annotation(annotation):
        return BUFFER_VIEW, annotation
    if _nn_view.is_annotation(annotation):
        return MATRIX_VIEW, annotation
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        _struct.check_dataclass(annotation)
        return DATACLASS, annotation
    return None


def _is_method(function):
    """Whether `function` is defined in a class body (by its qualified name)."""
    parts = function.__qualname__.split(".")
    return len(parts) >= 2 and parts[-2] != "<locals>"


def _return_types(annotation):
    if annotation is inspect.Signature.empty or annotation is None:
        return None
    origin = typing.get_origin(annotation)
    result = typing.get_args(annotation) if origin is tuple else annotation
    result = tuple(result) if isinstance(result, (list, tuple)) else (result,)
    if any(item is Ellipsis for item in result):
        raise QuadrantsSyntaxError("Ellipsis is not supported in return type annotations")
    return result


def analyze_params(function, *, is_kernel, requires_annotations):
    """(Params, return types, whether it is a method) of `function`, checked as the reference
    does at decoration. The first parameter of a method may be unannotated (``self``: a
    template). A rejected signature raises a Quadrants error naming the line of the ``def``."""
    try:
        return _analyze_params(function, is_kernel=is_kernel, requires_annotations=requires_annotations)
    except QuadrantsCompilationError as exc:
        raise _source.restyle(_source.locate_def(exc, function)) from None


def _analyze_params(function, *, is_kernel, requires_annotations):
    what = "Quadrants kernels" if is_kernel else "Quadrants functions"
    if hasattr(function, "__wrapped__"):
        raise QuadrantsSyntaxError("Cant put kernel in front of other annotations")
    if not isinstance(function, types.FunctionType):
        raise TypeError(f"expected a Python function, got {type(function).__name__}")
    try:
        signature = inspect.signature(function, eval_str=True)
    except Exception as exc:  # string annotations that do not evaluate
        raise QuadrantsSyntaxError(
            f"Invalid type annotation in `{function.__qualname__}`: {exc}"
        ) from None
    is_method = _is_method(function)
    params = []
    for index, parameter in enumerate(signature.parameters.values()):
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            raise QuadrantsSyntaxError(
                f"{what} do not support variable keyword parameters (i.e., **kwargs)"
            )
        if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
            raise QuadrantsSyntaxError(
                f"{what} do not support variable positional parameters (i.e., *args)"
            )
        if is_kernel and parameter.default is not inspect.Parameter.empty:
            raise QuadrantsSyntaxError(
                "Quadrants kernels do not support default values for arguments"
            )
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY:
            raise QuadrantsSyntaxError(f"{what} do not support keyword parameters")
        if parameter.kind is not inspect.Parameter.POSITIONAL_OR_KEYWORD:
            raise QuadrantsSyntaxError(f'{what} only support "positional or keyword" parameters')
        annotation = parameter.annotation
        if annotation is inspect.Parameter.empty:
            if index == 0 and is_method:
                kind, annotation = TEMPLATE, Template()
            elif requires_annotations:
                raise QuadrantsSyntaxError(f"{what} parameters must be type annotated")
            else:
                kind, annotation = None, None
        elif isinstance(annotation, RefType) and not is_kernel:
            kind = REF  # by reference (the compiler binds the caller's variable)
        else:
            classified = _classify(annotation)
            if classified is None:
                noun = "kernel" if is_kernel else "function"
                raise QuadrantsSyntaxError(
                    f"Invalid type annotation (argument {index}) of Quadrants {noun}: {annotation}"
                )
            kind, annotation = classified
        params.append(Param(parameter.name, kind, annotation, parameter.default))
    return params, _return_types(signature.return_annotation), is_method


class _Source:
    """Mixin: the captured source of `self._function`, parsed once on first use."""

    def _init_source(self, function):
        self._source = _source.capture(function)
        self._funcdef = None

    def _parsed(self):
        if self._funcdef is None:
            source = self._source
            if isinstance(source, Exception):
                raise OSError(
                    f"the source of {self._function.__qualname__} is not available ({source}); "
                    "kernels and functions must be defined in a file"
                ) from source
            self._funcdef = _source.parse(source, self._function.__qualname__)
        return self._funcdef


def _is_data_oriented(value):
    return bool(getattr(type(value), "_qd_data_oriented", False))


# --- argument conversion ---


def _scalar_value(index, value, dtype):
    """A scalar argument as the Python number the launch takes."""
    if dtype.is_real:
        if isinstance(value, (int, float, np.integer, np.floating)):
            return float(value)
    elif isinstance(value, (int, np.integer)):
        if dtype is _types.u1:
            return bool(value)
        value = int(value)
        # as the reference (and the packer of the fast path, pack.c): a signed parameter takes
        # any int64, an unsigned one any uint64, then both wrap to the width
        lo, hi = (-(1 << 63), 1 << 63) if dtype.is_signed else (0, 1 << 64)
        if not lo <= value < hi:
            raise TypeError(f"{value} does not fit the 64-bit {'signed' if dtype.is_signed else 'unsigned'} "
                            f"range of a {dtype} parameter")
        return _types.wrap_int(value, dtype.bits, dtype.is_signed)
    raise QuadrantsRuntimeTypeError(
        f"Argument {(index,)} (type={type(value)}) cannot be converted into required type {dtype}"
    )


def _array_value(param, value, callbacks):
    """(element DataType, NumPy array) of an array argument, checked against the annotation."""
    wanted_dtype, wanted_ndim, name = param.annotation.dtype, param.annotation.ndim, param.name
    if wanted_ndim is not None:
        wanted_ndim += getattr(param.annotation, "element_ndim", 0)  # vector/matrix elements
    if isinstance(value, Ndarray):
        array = value._data()
        _matrix.check_element_shape(param.annotation, name, array.shape)
        element = tuple(value.element_shape)
        if not getattr(param.annotation, "element_ndim", 0):
            # No element type in the annotation: the element is the argument's, and ndim counts
            # the array axes only (a vector ndarray of shape (3, 4) is taken by ndim=2).
            if wanted_dtype is not None and element:
                raise TypeError(
                    f"Expect element type {wanted_dtype} for argument {name}, but get "
                    f"[Tensor {_element_text(element)} {value.dtype}]"
                )
            if wanted_ndim is not None:
                wanted_ndim += len(element)
        if wanted_dtype is not None and value.dtype is not wanted_dtype:
            raise TypeError(
                f"Expect element type {wanted_dtype} for argument {name}, but get {value.dtype}"
            )
        if wanted_ndim is not None and array.ndim != wanted_ndim:
            raise ValueError(
                f"Invalid value for argument {name} - required ndim={param.annotation.ndim}, but "
                f"{len(value.shape)}d ndarray with shape {value.shape} is provided"
            )
        return value.dtype, value._qd_array  # on CUDA its DeviceBuffer
    if isinstance(value, np.ndarray):
        dtype = _foreign_array_dtype(param, value.dtype, value.shape)
        if value.flags.c_contiguous:
            return dtype, value
        if value.flags.f_contiguous:
            contiguous = np.ascontiguousarray(value)
            if value.flags.writeable:
                callbacks.append(functools.partial(np.copyto, value, contiguous))
            return dtype, contiguous
        raise ValueError(
            "Non contiguous numpy arrays are not supported, please call np.ascontiguousarray(arr) "
            "before passing it into quadrants kernel."
        )
    external = _external.adapt(value, _device.on_cuda(), callbacks)
    if isinstance(external, np.ndarray):
        return _array_value(param, external, callbacks)
    if external is not None:
        return _foreign_array_dtype(param, external.dtype, external.shape), external.buffer
    if isinstance(value, Field):
        # the reference's wording for a field passed as an ndarray (annotation and value swapped)
        raise QuadrantsRuntimeTypeError(
            f"Argument {param.annotation} cannot be converted into required type {value}"
        )
    raise QuadrantsRuntimeTypeError(f"Invalid type for argument {name}, got {value}")


def _element_text(element):
    """``(2)`` / ``(2, 3)``: a vector/matrix element shape as error messages write it."""
    return f"({element[0]})" if len(element) == 1 else str(tuple(element))


def _foreign_array_dtype(param, np_dtype, shape):
    """The DataType of an array argument that is not a qd.ndarray (NumPy, torch, CuPy) with
    NumPy dtype `np_dtype` and `shape`, checked against the annotation (vector/matrix element
    dimensions last)."""
    wanted_dtype, wanted_ndim, name = param.annotation.dtype, param.annotation.ndim, param.name
    if wanted_ndim is not None:
        wanted_ndim += getattr(param.annotation, "element_ndim", 0)
    _matrix.check_element_shape(param.annotation, name, shape)
    ndim = len(shape)
    dtype = _types.from_numpy_dtype(np_dtype)
    if dtype is None:
        raise ValueError(
            f"Invalid value for argument {name} - arrays of dtype {np_dtype} are not supported"
        )
    if wanted_dtype is not None and dtype is not wanted_dtype:
        raise ValueError(
            f"Invalid value for argument {name} - required array has dtype={wanted_dtype}, "
            f"array with dtype={dtype} is provided"
        )
    if wanted_ndim is not None and ndim != wanted_ndim:
        raise ValueError(
            f"Invalid value for argument {name} - required array has ndim={wanted_ndim}, array "
            f"with {ndim} dimensions is provided"
        )
    return dtype


# Scalar arguments the fast path takes as they are (NumPy scalars go through _scalar_value).
_FAST_SCALAR_TYPES = frozenset((float, int, bool))

# How the fast path recognises a template argument, by the first item of its template key:
# "o" by identity (the entry pins the object, whose key cannot change), "v" by type and value.
_TEMPLATE_FAST_KINDS = {
    "NoneType": "o",
    "bool": "o",
    "field": "o",
    "dtype": "o",
    "numpy": "o",
    "id": "o",
    "int": "v",
    "str": "v",
}


def _template_key(value, pins, raise_on_floats):
    """The specialisation key of a template value (see the module docstring)."""
    kind = type(value)
    if value is None or kind is bool or kind is int or kind is str or kind is bytes:
        return (kind.__name__, value)
    if kind is float:
        if raise_on_floats:
            raise ValueError("Floats not allowed as templated types.")
        return ("float", value.hex())  # tells -0.0 from 0.0, and NaN equals NaN
    if isinstance(value, np.generic):
        return ("numpy", value.dtype.str, value.tobytes())
    if isinstance(value, ScalarField):
        return ("field", value._qd_field_id)
    if isinstance(value, Ndarray):
        raise QuadrantsRuntimeTypeError(
            "Ndarray shouldn't be passed in via `qd.template()`, please annotate your kernel "
            "using `qd.types.ndarray(...)` instead"
        )
    if isinstance(value, _types.DataType):
        return ("dtype", value._qd_dtype)
    if isinstance(value, tuple):
        pins.append(kind)
        return (
            "tuple",
            id(kind),
            tuple(_template_key(item, pins, raise_on_floats) for item in value),
        )
    if _struct.is_struct_type(kind):
        # A struct instance is a constant of the kernel: keyed by its members' values.
        pins.append(kind)
        members = tuple(
            _template_key(getattr(value, name), pins, raise_on_floats)
            for name in kind._qd_member_names
        )
        return ("struct", id(kind), members)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        pins.append(kind)
        members = tuple(
            _template_key(getattr(value, member.name), pins, raise_on_floats)
            for member in dataclasses.fields(value)
        )
        return ("dataclass", id(kind), members)
    pins.append(value)
    return ("id", id(value))


# --- kernels ---


class Kernel(_core.Dispatcher, _Source):
    """A ``@qd.kernel`` function: calling it compiles (once per specialisation) and launches.
    Calls go through the C Dispatcher base, which falls back on ``_launch_fallback``."""

    _qd_kernel = True

    def __init__(self, function, *, fastcache=False, graph=False, checkpoints=False):
        _core.Dispatcher.__init__(self, _launch_fallback, _raise_launch_error)
        params, self.return_types, is_method = analyze_params(
            function, is_kernel=True, requires_annotations=True
        )
        self._function = function
        # Evaluated parameter annotations, for the compiler (vector/matrix parameters).
        function._qd_annotations = types.SimpleNamespace(
            **{param.name: param.annotation for param in params}
        )
        # Struct and vector/matrix results (alone or in a tuple) come back as one value per
        # scalar member or element, rebuilt in Python.
        self._composite_returns = bool(
            self.return_types
            and any(
                _struct.is_struct_type(t) or isinstance(t, _matrix.MatrixType)
                for t in self.return_types
            )
        )
        self._params = tuple(params)
        self._param_index = {param.name: index for index, param in enumerate(params)}
        self._dispatch_params(tuple(param.name for param in params))  # keyword calls
        # A method's unannotated first parameter is `self`: it must be a @qd.data_oriented object.
        self._checks_self = bool(
            is_method
            and params
            and params[0].kind is TEMPLATE
            and not _has_annotation(function, params[0].name)
        )
        # @qd.pure under @qd.kernel marks the function itself.
        self.fastcache = bool(fastcache) or bool(getattr(function, "is_pure", False))
        self.graph = bool(graph)
        self.checkpoints = bool(checkpoints)
        self._compiled = {}
        self._profile_id = None  # kernel profiler: number of this kernel, set at its first compile
        self._profile_specializations = 0  # kernel profiler: specializations compiled so far
        self._init_source(function)
        functools.update_wrapper(self, function)
        _live_kernels.add(self)

    # Dispatcher.__get__ binds a kernel defined in a class body to the object (a bound method
    # whose first argument, the object, is a template).

    def __repr__(self):
        return f"<qd.kernel {self._function.__qualname__}>"

    @property
    def is_pure(self):
        """Whether the kernel is marked pure (``fastcache=True`` or ``@qd.pure``)."""
        return self.fastcache

    @is_pure.setter
    def is_pure(self, value):
        self.fastcache = bool(value)

    def _bind(self, args, kwargs):
        """The arguments in parameter order, from positional and keyword arguments."""
        params = self._params
        if len(args) > len(params):
            expected = ", ".join(f"{param.name} : {param.annotation}" for param in params)
            raise QuadrantsSyntaxError(
                f"Too many arguments. Expected ({expected}), got ({', '.join(map(repr, args))})."
            )
        missing = object()
        bound = list(args) + [missing] * (len(params) - len(args))
        errors = []
        for name, value in kwargs.items():
            index = self._param_index.get(name)
            if index is None:
                errors.append(f"Unexpected argument '{name}'.")
            elif index < len(args):
                errors.append(f"Multiple values for argument '{name}'.")
            else:
                bound[index] = value
        errors += [
            f"Missing argument '{params[i].name}'."
            for i, value in enumerate(bound)
            if value is missing
        ]
        if errors:
            raise QuadrantsSyntaxError(" ".join(errors))
        return bound

    def _launch(self, args, kwargs):
        cfg = _runtime.require_init()
        kwargs.pop("qd_stream", None)
        params = self._params
        if kwargs or len(args) != len(params):
            args = self._bind(args, kwargs)
        call_args = tuple(args)
        wrapped = ()  # arguments that are qd.Tensor wrappers: their `_impl` is what is passed
        if any(type(value) in TENSOR_TYPES for value in args):
            wrapped = tuple(i for i, value in enumerate(args) if type(value) in TENSOR_TYPES)
            args = [value._impl if type(value) in TENSOR_TYPES else value for value in args]
        if len(params) > MAX_ARG_NUM:
            raise QuadrantsRuntimeError(
                "The number of elements in kernel arguments is too big! Do not exceed "
                f"{MAX_ARG_NUM} on {cfg.arch.name} backend."
            )
        if self._checks_self and not _is_data_oriented(args[0]):
            raise QuadrantsSyntaxError(
                f"Please decorate class {type(args[0]).__name__} with @qd.data_oriented"
            )
        # `fast`: one (letter, argument index, attribute path) per launch value for _dispatch_add
        # (see dispatch.c), the letter "-" when the fast path cannot recognise a repeat of it.
        key, launch, pins, callbacks, fast = [], [], [], [], []
        member_values = {}  # argument index -> flattened dataclass members (path, key, value)
        for index, (param, value) in enumerate(zip(params, args)):
            kind = param.kind
            steps = ("_impl",) if index in wrapped else ()
            if kind is TENSOR:
                kind, param = _tensor_param(param, value)
            if kind is SCALAR:
                part, scalar = _scalar_leaf(index, param.annotation, value)
                key.append(part)
                launch.append(scalar)
                fast.append((_scalar_letter(part, value), index, steps))
            elif kind is NDARRAY:
                part, array = _ndarray_leaf(param, value, callbacks)
                launch.append(array)
                fast.append((_array_letter(value, array), index, steps))
                grad = value.grad if isinstance(value, Ndarray) else None
                if grad is not None:
                    # "g": also launched with its gradient ndarray, the kernel's `x.grad`
                    part = ("g",) + part[1:]
                    launch.append(grad._qd_array)
                    fast.append(("-", index, steps))
                key.append(part)
            elif kind is BUFFER_VIEW:
                first = len(launch)
                key.append(_buffer_view.launch(param, value, launch, callbacks, _array_value))
                # Each launch value is read from the view by the fast path: its array, offset
                # and size, and the marker (None) from the class.
                fast.append((_array_letter(value.arr, launch[first]), index, steps + ("arr",)))
                fast.append(("i", index, steps + ("offset",)))
                fast.append(("i", index, steps + ("size",)))
                fast.append(("o", index, steps + ("_qd_marker",)))
            elif kind is MATRIX_VIEW:
                first = len(launch)
                key.append(_nn_view.launch(param, value, launch, callbacks, _array_value))
                # A view is immutable: the same view object has the same compile-time members,
                # so a repeat is recognised by its identity and its buffer's launch value.
                fast.append((_array_letter(value.buffer, launch[first]), index, steps + ("buffer",)))
                fast.extend(("o", index, steps) for _ in range(_nn_view.LAUNCH_VALUES - 1))
            elif kind is MATRIX:
                members = _matrix.flatten_argument(param.name, param.annotation, value, launch)
                key.append(("d", tuple((path, part) for path, part, _ in members)))
                member_values.setdefault(index, members)
                fast.append(("-", index, steps))
            elif kind is DATACLASS:
                converted = not isinstance(value, param.annotation)
                if converted and _struct.is_struct_type(param.annotation):
                    value = _struct.convert_argument(param.annotation, value)
                elif converted:
                    raise QuadrantsRuntimeTypeError(
                        f"Argument {param.name} expects a {param.annotation.__name__}, got "
                        f"{type(value).__name__}"
                    )
                members = []
                first = len(fast)
                _flatten_dataclass(
                    param.name, value, members, launch, pins, callbacks, cfg, fast, index, steps
                )
                if converted:
                    # the launch values come from the converted struct, not from the argument
                    fast[first:] = [("-",) + item[1:] for item in fast[first:]]
                key.append(("d", tuple((path, part) for path, part, _ in members)))
                member_values.setdefault(index, members)
            else:
                template_key = _template_key(value, pins, cfg.raise_on_templated_floats)
                key.append(("t", template_key))
                launch.append(None)
                fast.append((_TEMPLATE_FAST_KINDS.get(template_key[0], "-"), index, steps))
        key = tuple(key)
        try:
            entry = self._compiled.get(key)
            if entry is None:
                entry = self._compile(key, args, pins, member_values)
            if self._composite_returns:
                return _struct.rebuild_results(self.return_types, entry[0](*launch))
            if not callbacks and len(fast) == len(launch) and all(f[0] != "-" for f in fast):
                self._dispatch_add(entry[0], fast, call_args)
            return entry[0](*launch)
        finally:
            for callback in callbacks:
                callback()

    def _compile(self, key, args, pins, member_values):
        from quadrants.lang import impl  # before every compilation, as in the reference

        impl.materialize_runtime()
        funcdef = self._parsed()
        descs = []
        for index, (part, value) in enumerate(zip(key, args)):
            if part[0] == "d":
                # A dataclass: one argument per leaf member, named "param.member".
                for path, member_part, member_value in member_values[index]:
                    descs.append((path, _desc(member_part, member_value)))
            elif part[0] == "v":
                descs.extend(_buffer_view.descs(self._params[index].name, part))
            elif part[0] == "m":
                descs.extend(_nn_view.descs(self._params[index].name, part))
            elif part[0] == "g":
                # an ndarray and its gradient (same dtype, shape and layout): "x", "x.grad"
                desc = _desc(("a",) + part[1:], value)
                descs.append(desc)
                descs.append((self._params[index].name + ".grad", desc))
            else:
                descs.append(_desc(part, value))
        options = _runtime.compile_options()
        name = self._function.__name__
        compiled = None
        source_key = None
        if options["offline_cache"]:
            source_key = _cache.source_key(self, key, args, member_values, options)
            if source_key is not None:
                compiled = _core.load_cached_kernel(descs, name, options, source_key)
        if compiled is None:
            compiled = _core.compile_kernel(
                self._function, funcdef, funcdef.filename, descs, name, options, source_key
            )
        self._name_tasks(compiled, name)
        entry = (compiled, tuple(pins))
        self._compiled[key] = entry
        return entry

    def _name_tasks(self, compiled, name):
        """Names the tasks of a new specialization for the kernel profiler
        (quadrants/profiler/kernel_profiler.py): ``<name>_c<kernel id>_<specialization>_kernel_<task
        index>_<kind>``."""
        global _profile_kernels
        kinds = getattr(compiled, "task_kinds", None)
        if kinds is None:
            return  # not a compiled kernel of the core (a stand-in)
        if self._profile_id is None:
            self._profile_id = _profile_kernels
            _profile_kernels += 1
        prefix = f"{name}_c{self._profile_id}_{self._profile_specializations}"
        self._profile_specializations += 1
        compiled.profile_names = tuple(
            f"{prefix}_kernel_{t}_{kind}" for t, kind in enumerate(kinds)
        )


def _scalar_leaf(where, annotation, value):
    """(key part, launch value) of a scalar parameter or member: ``("s", dtype_id)``."""
    dtype = _types.cook_dtype(annotation)
    return ("s", dtype._qd_dtype), _scalar_value(where, value, dtype)


def _ndarray_leaf(param, value, callbacks):
    """(key part, launch value) of an ndarray parameter or member: ``("a", dtype_id, ndim,
    element_shape)``, the element shape (the array's last axes that form one vector/matrix
    element) from the annotation or, when it names none, from the value; an ndarray with a
    physical layout (``qd.tensor(..., layout=)``) adds it as a fifth item."""
    dtype, array = _array_value(param, value, callbacks)
    element = _matrix.element_shape_of(param.annotation, value)
    part = ("a", dtype._qd_dtype, array.ndim, element)
    layout = value.layout if isinstance(value, Ndarray) else None
    return (part if layout is None else part + (layout,)), array


def _scalar_letter(part, value):
    """The fast path's letter for a scalar leaf (dispatch.c): "f" / "i" for a Python number of
    a real / integer parameter, "-" for anything else (NumPy scalars are converted in Python)."""
    if type(value) not in _FAST_SCALAR_TYPES:
        return "-"
    return "f" if _types.dtype_from_id(part[1]).is_real else "i"


def _array_letter(value, array):
    """The fast path's letter for an ndarray leaf: "q" for a qd.ndarray (any element type and
    physical layout: the fast path matches its class, dtype, layout and memory), "n" for a
    C-contiguous NumPy array passed as it is, "-" for anything converted."""
    if isinstance(value, Ndarray):
        return "q" if array is value._qd_array else "-"
    return "n" if array is value and type(value) is np.ndarray else "-"


def _tensor_param(param, value):
    """(kind, Param) a `qd.Tensor` parameter takes for `value`: an array is an ndarray argument
    of any dtype and dimensions, anything else (a field, None) a template argument."""
    if isinstance(value, (Ndarray, np.ndarray)) or _external.is_array(value):
        if param is None:
            return NDARRAY, None
        return NDARRAY, Param(param.name, NDARRAY, _ANY_NDARRAY, param.default)
    return TEMPLATE, param


_ANY_NDARRAY = NdarrayType()


def _desc(part, value):
    """The compile_kernel argument descriptor of one key part: a kind of the core's table and
    its facts; an ndarray's ends with the shape of its vector/matrix element, which every launch
    of the compiled kernel checks, and the ndarray's physical layout when it has one (the kernel
    permutes its indices)."""
    if part[0] == "s":
        return (SCALAR, part[1])
    if part[0] == "a":
        return (NDARRAY, part[1], part[2], part[3]) + part[4:]
    return (TEMPLATE, value)


def _member_annotations(cls):
    """{member name: annotation} of a dataclass (string annotations evaluated in its module) or
    of a struct type (its members, unpacked vectors expanded)."""
    if _struct.is_struct_type(cls):
        return dict(cls._qd_members)
    module = sys.modules.get(cls.__module__)
    namespace = dict(vars(module)) if module else {}
    result = {}
    for member in dataclasses.fields(cls):
        annotation = member.type
        if isinstance(annotation, str):
            annotation = eval(annotation, namespace)  # noqa: S307 (the user's own annotation)
        result[member.name] = annotation
    return result


def _flatten_dataclass(path, value, members, launch, pins, callbacks, cfg, fast, arg, steps):
    """Appends (path, key part, value) for every leaf member of dataclass instance `value`
    (nested dataclasses recursively) to `members`, the launch value of each (None for
    compile-time members) to `launch`, and how the fast path reaches and recognises it to `fast`
    (letter, argument index `arg`, attribute names from the argument: `steps` to `value`, then
    the member's). Members without a scalar, vector/matrix or ndarray annotation are
    compile-time values, like template arguments."""
    for name, annotation in _member_annotations(type(value)).items():
        member_path = f"{path}.{name}"
        member = getattr(value, name)
        member_steps = steps + (name,)
        if type(member) in TENSOR_TYPES:
            member = member._unwrap()  # a qd.Tensor wrapper: what it wraps
            member_steps += ("_impl",)
        classified = _classify(annotation)
        kind = classified[0] if classified else TEMPLATE
        if kind is TENSOR:
            kind = _tensor_param(None, member)[0]
            classified = (kind, _ANY_NDARRAY)
        if kind is DATACLASS and (
            dataclasses.is_dataclass(member) or _struct.is_struct_type(type(member))
        ):
            _flatten_dataclass(
                member_path, member, members, launch, pins, callbacks, cfg, fast, arg, member_steps
            )
        elif kind is MATRIX:
            matrix_members = _matrix.flatten_argument(member_path, classified[1], member, launch)
            members.extend(matrix_members)
            fast.extend(("-", arg, member_steps) for _ in matrix_members)
        elif kind is SCALAR:
            part, scalar = _scalar_leaf((member_path,), classified[1], member)
            launch.append(scalar)
            members.append((member_path, part, member))
            fast.append((_scalar_letter(part, member), arg, member_steps))
        elif kind is NDARRAY:
            param = Param(member_path, NDARRAY, classified[1], inspect.Parameter.empty)
            part, array = _ndarray_leaf(param, member, callbacks)
            launch.append(array)
            members.append((member_path, part, member))
            fast.append((_array_letter(member, array), arg, member_steps))
        else:
            # A compile-time member (a field, a number, an object): it takes no launch value
            # but still one argument of the compiled kernel, as a template parameter does.
            template_key = _template_key(member, pins, cfg.raise_on_templated_floats)
            launch.append(None)
            members.append((member_path, ("t", template_key), member))
            fast.append((_TEMPLATE_FAST_KINDS.get(template_key[0], "-"), arg, member_steps))


def _launch_fallback(kernel, *args, **kwargs):
    """The Python launch path: what the Dispatcher calls when it has no registered launch for
    the arguments. Compilation and runtime errors are restyled (see the module docstring)."""
    try:
        return kernel._launch(args, kwargs)
    except (QuadrantsCompilationError, QuadrantsRuntimeError) as exc:
        if _runtime.special_config().print_full_traceback:
            raise
        raise _source.restyle(exc) from None


def _raise_launch_error(exc):
    """Raises what the Python launch path raises when a launch fails with `exc`: the Dispatcher
    calls it when a registered launch fails."""
    try:
        raise exc
    except (QuadrantsCompilationError, QuadrantsRuntimeError):
        if _runtime.special_config().print_full_traceback:
            raise
        raise _source.restyle(exc) from None


def _has_annotation(function, name):
    return name in getattr(function, "__annotations__", {})


# For type checkers a kernel or func keeps its return type; its parameters are not checked at
# call sites (a kernel takes NumPy arrays, torch tensors, fields and ndarrays where an ndarray
# is declared, and converts numbers), so the decorated object is Callable[..., R].
_R = TypeVar("_R")


class _Decorator(Protocol):
    def __call__(self, fn: Callable[..., _R], /) -> Callable[..., _R]: ...


@overload
def kernel(fn: Callable[..., _R], /) -> Callable[..., _R]: ...
@overload
def kernel(
    fn: None = None,
    *,
    fastcache: bool = False,
    graph: bool = False,
    checkpoints: bool = False,
    pure: bool | None = None,
) -> _Decorator: ...
def kernel(fn=None, *, fastcache=False, graph=False, checkpoints=False, pure=None):
    """Decorator of a kernel: ``@qd.kernel`` or ``@qd.kernel(fastcache=..., graph=...,
    checkpoints=...)``. Every parameter must be annotated (scalar type, ``qd.template()``,
    ``qd.types.ndarray(...)`` or a dataclass); defaults, ``*args``, ``**kwargs`` and keyword-only
    parameters are rejected. ``pure=`` is a deprecated spelling of ``fastcache=``."""
    if pure is not None:
        warnings.warn(
            "qd.kernel(pure=...) is deprecated, use qd.kernel(fastcache=...)",
            DeprecationWarning,
            stacklevel=2,
        )
        fastcache = bool(pure)
    if checkpoints and not graph:
        raise QuadrantsSyntaxError("checkpoints=True requires graph=True")

    def decorate(function):
        return Kernel(function, fastcache=fastcache, graph=graph, checkpoints=checkpoints)

    return decorate if fn is None else decorate(fn)


def pure(fn):
    """Deprecated decorator: marks a kernel pure, as ``@qd.kernel(fastcache=True)`` does (either
    order with ``@qd.kernel``; on anything else it sets ``is_pure = True``). Warns with
    UserWarning and returns `fn`."""
    warnings.warn(
        "Use of @qd.pure is deprecated. Please use @qd.kernel(fastcache=True). @qd.pure is "
        "intended to be removed in v4.0.0",
        UserWarning,
        stacklevel=2,
    )
    fn.is_pure = True
    return fn


@_runtime.register_reset_hook
def _clear_compiled_kernels():
    for live in list(_live_kernels):
        live._compiled.clear()
        live._dispatch_clear()


# --- functions ---


class Func(_Source):
    """A ``@qd.func`` (inlined into kernels), ``@qd.real_func`` or ``@qd.pyfunc``.

    For the compiler: ``_qd_func`` (the Python function), ``_qd_func_ast`` (its FunctionDef,
    with the file's line numbers and a ``filename`` attribute), ``_qd_func_params`` (one
    ``(name, kind, annotation, has_default, default)`` per parameter), ``_qd_requires_top_level``,
    ``_qd_real_func``, ``_qd_pyfunc``.
    """

    def __init__(self, function, *, requires_top_level=False, is_real=False, is_pyfunc=False):
        params, self.return_types, _ = analyze_params(
            function, is_kernel=False, requires_annotations=is_real
        )
        self._function = function
        self._qd_func = function
        # Evaluated parameter annotations, for the compiler (ndarray parameters among them).
        self._qd_annotations = types.SimpleNamespace(
            **{param.name: param.annotation for param in params if param.kind is not None}
        )
        self._qd_func_params = tuple(param.as_tuple() for param in params)
        self._qd_requires_top_level = bool(requires_top_level)
        self._qd_real_func = bool(is_real)
        self._qd_pyfunc = bool(is_pyfunc)
        self._init_source(function)
        functools.update_wrapper(self, function)

    @property
    def _qd_func_ast(self):
        return self._parsed()

    @property
    def _qd_filename(self):
        return self._parsed().filename

    def __call__(self, *args, **kwargs):
        if self._qd_pyfunc:
            return self._function(*args, **kwargs)
        raise QuadrantsSyntaxError(
            "Quadrants functions cannot be called from Python-scope: qd.func can only be called "
            "from kernel scope (use @qd.pyfunc for a function callable from both)"
        )

    def __get__(self, instance, owner):
        if instance is None:
            return self
        return BoundFunc(self, instance)

    def __repr__(self):
        return f"<qd.func {self._function.__qualname__}>"


class BoundFunc:
    """A func method bound to its object (``self.helper`` inside a kernel method).
    ``_qd_bound_self`` is the object; the rest is the Func's."""

    def __init__(self, func, instance):
        self._qd_bound_func = func
        self._qd_bound_self = instance

    def __getattr__(self, name):
        return getattr(self._qd_bound_func, name)

    def __call__(self, *args, **kwargs):
        return self._qd_bound_func(self._qd_bound_self, *args, **kwargs)


@overload
def func(fn: Callable[..., _R], /) -> Callable[..., _R]: ...
@overload
def func(fn: None = None, *, requires_top_level: bool = False) -> _Decorator: ...
def func(fn=None, *, requires_top_level=False):
    """Decorator of a function callable from kernels (inlined at each call site):
    ``@qd.func`` or ``@qd.func(requires_top_level=True)``. Annotations are optional."""

    def decorate(function):
        return Func(function, requires_top_level=requires_top_level)

    return decorate if fn is None else decorate(fn)


def real_func(fn: Callable[..., _R]) -> Callable[..., _R]:
    """Decorator of a function compiled as a real (not inlined) function; parameters must be
    annotated. Compiled into each caller like ``@qd.func``; it may return from inside runtime
    if/for/while (scalar return types)."""
    return Func(fn, is_real=True)


def pyfunc(fn: Callable[..., _R]) -> Callable[..., _R]:
    """Decorator of a function callable from kernels and from Python scope."""
    return Func(fn, is_pyfunc=True)


def data_oriented(cls=None, *, stable_members=False):
    """Class decorator: objects of the class may be passed as the ``self`` of kernel methods
    (as a template parameter: kernels specialise on the object)."""

    def mark(target):
        target._data_oriented = True
        target._qd_data_oriented = True
        if stable_members:
            target._qd_stable_members = True
        return target

    return mark if cls is None else mark(cls)
