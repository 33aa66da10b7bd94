"""Structs: ``qd.types.struct(**members)``, ``@qd.dataclass``, ``qd.Struct`` and struct fields.

A struct type is a Python class whose metaclass is ``StructType``. Its members are declared by
annotations (``@qd.dataclass``) or keywords (``qd.types.struct``) and may be scalar types,
vector/matrix types, or other struct types (nested). Methods of the class body stay methods of
the type; ``@qd.func`` methods are callable in kernels as ``obj.method(...)`` with ``self`` by
reference.

An unpacked vector member ``r: qd.types.vector(N, T, unpacked=True)`` is expanded when the class
is made into N scalar members ``_r0 .. _r{N-1}`` (at the place of ``r``, member order kept);
``obj.r[i]`` with a Python int (or a ``qd.static`` index in kernels) is member ``_r{i}``.

For the compiler (csrc/frontend/lower_struct.c) a struct class carries ``_qd_struct_type``
(a marker on the metaclass, so instances do not see it), ``_qd_member_names`` and
``_qd_member_types`` (the expanded members, in order) and ``_qd_unpacked_names`` /
``_qd_unpacked_sizes`` (the unpacked vector groups). Instances carry ``_qd_struct_value``;
struct fields carry ``_qd_struct_field``, ``_qd_struct_field_type`` and
``_qd_struct_field_members`` (one member field per member, in member order).

Struct fields hold one field per member (scalar members: a scalar field; nested structs: a
nested struct field), whatever the requested layout: AOS and SOA give the same separate
arrays, so the AOS interleaving of members in memory is not reproduced.
"""

import numbers
import types as _pytypes
from typing import Any, Callable, TypeVar, overload

import numpy as np

from quadrants import _types
from quadrants._field import Field
from quadrants._annotations import Layout
from quadrants._core import QuadrantsSyntaxError


def is_struct_type(obj):
    """Whether `obj` is a struct class (made by @qd.dataclass or qd.types.struct)."""
    return isinstance(obj, StructType)


def is_unpacked(annotation):
    """Whether `annotation` is a vector type made with ``unpacked=True``."""
    return getattr(annotation, "unpacked", False) is True


def unpacked_error(what):
    """The error for using an unpacked vector type anywhere but as a @qd.dataclass member."""
    return QuadrantsSyntaxError(
        f"{what}: a vector type made with unpacked=True is only valid as a @qd.dataclass member "
        "annotation; drop unpacked=True to use it as a value type"
    )


def _member_kind(annotation):
    """'scalar', 'struct', 'compound' (vector/matrix type) or None (not a valid member type)."""
    if isinstance(annotation, _types.DataType) or annotation in (int, float, bool):
        return "scalar"
    if is_struct_type(annotation):
        return "struct"
    if getattr(annotation, "_qd_compound", False) or (
        hasattr(annotation, "dtype") and hasattr(annotation, "n") and callable(annotation)
    ):
        return "compound"
    return None


def _expand_members(class_name, declared):
    """(members, unpacked groups) from the declared {name: annotation}: unpacked vectors become
    their synthetic scalar members; collisions with synthetic names raise."""
    members, groups = [], []
    for name, annotation in declared.items():
        if is_unpacked(annotation):
            n = int(annotation.n)
            groups.append((name, n))
            members.extend((f"_{name}{i}", annotation.dtype) for i in range(n))
            continue
        if _member_kind(annotation) is None:
            raise QuadrantsSyntaxError(
                f"Invalid type annotation of member '{name}' of @qd.dataclass {class_name}: "
                f"{annotation!r}; members are scalar, vector, matrix or struct types (fields and "
                "ndarrays cannot be members)"
            )
        members.append((name, annotation))
    seen = {}
    for name, _ in members:
        if name in seen:
            raise QuadrantsSyntaxError(
                f"member '{name}' of @qd.dataclass {class_name} collides with a synthetic member "
                "of an unpacked vector (unpacked=True expands member r into _r0, _r1, ...)"
            )
        seen[name] = True
    return tuple(members), tuple(groups)


class StructType(type):
    """The metaclass of struct classes: ``MyStruct.field(...)``, the member description."""

    _qd_struct_type = True

    def __new__(mcs, name, bases, namespace, members=None):
        return super().__new__(mcs, name, bases, namespace)

    def __init__(cls, name, bases, namespace, members=None):
        super().__init__(name, bases, namespace)
        declared = dict(members or {})
        cls._qd_declared = tuple(declared.items())
        expanded, groups = _expand_members(name, declared)
        cls._qd_members = expanded
        cls._qd_member_names = tuple(member for member, _ in expanded)
        cls._qd_member_types = tuple(annotation for _, annotation in expanded)
        cls._qd_unpacked_names = tuple(group for group, _ in groups)
        cls._qd_unpacked_sizes = tuple(n for _, n in groups)
        # Structs with the same members (names and types, in order) are interchangeable as
        # kernel results: the compiler compares this text.
        cls._qd_layout = "{" + ", ".join(
            f"{member}={_type_text(annotation, _layout_of)}" for member, annotation in expanded
        ) + "}"
        cls._qd_anonymous = False
        cls._qd_repr = repr(cls)  # for the compiler's messages

    @property
    def members(cls):
        """{name: type} of the (expanded) members, in order."""
        return dict(cls._qd_members)

    def field(
        cls,
        shape=None,
        layout=Layout.AOS,
        offset=None,
        needs_grad=False,
        needs_dual=False,
        name="",
        order=None,
    ):
        """A struct field of this type: one field per member (see the module docstring)."""
        if needs_grad or needs_dual:
            raise NotImplementedError("struct fields with needs_grad/needs_dual are not supported")
        if not isinstance(layout, Layout):
            raise TypeError(f"layout must be qd.Layout.AOS or qd.Layout.SOA, got {layout!r}")
        return StructField._make(cls, shape=shape, offset=offset, name=name, order=order)

    def ndarray(cls, *args, **kwargs):
        raise QuadrantsSyntaxError("struct ndarrays are not supported: use a struct field")

    def __repr__(cls):
        members = ", ".join(
            f"{member}={_type_text(annotation, repr)}" for member, annotation in cls._qd_members
        )
        methods = {
            key: value for key, value in vars(cls).items() if isinstance(value, _pytypes.FunctionType)
        }
        return f"<qd.StructType {members}, struct_methods={methods}>"


def _layout_of(struct_type):
    return struct_type._qd_layout


def _type_text(annotation, nested):
    """A member type as text: dtype names, vector/matrix types, `nested(struct type)`."""
    if is_struct_type(annotation):
        return nested(annotation)
    if annotation in (int, float, bool):
        return annotation.__name__
    return str(annotation)


def _cast_member(annotation, value):
    """`value` converted to member type `annotation` (Python scope)."""
    kind = _member_kind(annotation)
    if kind == "scalar":
        dtype = _types.cook_dtype(annotation)
        return _types.to_python_value(_types.to_dtype_value(value, dtype), dtype)
    if kind == "struct":
        if isinstance(value, annotation):
            return annotation(**value.to_dict())
        if isinstance(value, dict):
            return annotation(**value)
        if isinstance(value, _Struct):
            return annotation(**value.to_dict())
        if isinstance(value, (numbers.Number, np.number)):
            return annotation(value)  # a number: the first member, recursively
        raise TypeError(f"expected a {annotation.__name__} or a dict, got {type(value).__name__}")
    return annotation(value)


def _zero(annotation):
    kind = _member_kind(annotation)
    if kind == "scalar":
        return _cast_member(annotation, 0)
    if kind == "struct":
        return annotation()
    return annotation(0)


class _FieldAccess:
    """``field`` of the struct classes: ``qd.Struct.field({...}, ...)`` takes the members,
    ``MyStruct.field(shape=...)`` is the struct type's own (StructType.field)."""

    def __init__(self, function):
        self._function = function

    def __get__(self, obj, owner):
        if owner is Struct and obj is None:
            return self._function
        return _pytypes.MethodType(StructType.field, owner)


class Struct:
    """The base of every struct value. A struct type made by ``qd.types.struct`` or
    ``@qd.dataclass`` takes members by position or keyword (missing ones 0, each converted to its
    type). ``qd.Struct({"a": 1.0, ...})`` or ``qd.Struct(a=1.0, ...)`` makes a value of an
    anonymous struct type whose members are inferred from the values, which are kept as given
    (numbers stay Python numbers, lists become vectors/matrices, dicts nested structs).
    ``qd.Struct.field({name: type}, shape=...)`` makes a struct field of an anonymous type."""

    _qd_struct_value = True

    def __new__(cls, *args, **kwargs):
        if cls is Struct:
            cls = _anonymous_type(_anonymous_entries(args, kwargs))
        return object.__new__(cls)

    def __init__(self, *args, **kwargs):
        cls = type(self)
        members = cls._qd_members
        if len(args) > len(members):
            raise TypeError(
                f"{cls.__name__}() takes {len(members)} members but {len(args)} were given"
            )
        values = dict(zip((name for name, _ in members), args))
        groups = dict(zip(cls._qd_unpacked_names, cls._qd_unpacked_sizes))
        for key, value in kwargs.items():
            if key in groups:
                items = list(value)
                if len(items) != groups[key]:
                    raise ValueError(f"{key} has {groups[key]} elements, got {len(items)}")
                for i, item in enumerate(items):
                    values[f"_{key}{i}"] = item
            elif key in cls._qd_member_names:
                if key in values:
                    raise TypeError(f"{cls.__name__}() got multiple values for member '{key}'")
                values[key] = value
            else:
                raise TypeError(f"{cls.__name__}() has no member '{key}'")
        for name, annotation in members:
            value = values[name] if name in values else _zero(annotation)
            object.__setattr__(self, name, _cast_member(annotation, value))

    @_FieldAccess
    def field(members, **kwargs):
        """``qd.Struct.field({name: type}, shape=...)``: a struct field of an anonymous struct."""
        if not isinstance(members, dict):
            raise TypeError("qd.Struct.field expects a dict {member name: type}")
        return struct(**members).field(**kwargs)

    def __getattr__(self, name):
        cls = type(self)
        if name in cls._qd_unpacked_names:
            return _UnpackedView(self, name, cls._qd_unpacked_sizes[cls._qd_unpacked_names.index(name)])
        raise AttributeError(f"'{cls.__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        cls = type(self)
        members = cls.members
        if name in members and not cls._qd_anonymous:
            value = _cast_member(members[name], value)
        object.__setattr__(self, name, value)

    @property
    def keys(self):
        """The member names, in order."""
        return list(type(self)._qd_member_names)

    @property
    def entries(self):
        """{member: value} (the values themselves: vectors, nested struct values)."""
        return {name: getattr(self, name) for name in type(self)._qd_member_names}

    @property
    def items(self):
        return self.entries.items()

    @property
    def methods(self):
        """{name: function} of the methods of the struct type."""
        return {
            key: value
            for key, value in vars(type(self)).items()
            if isinstance(value, _pytypes.FunctionType)
        }

    def __len__(self):
        return len(type(self)._qd_member_names)

    def __getitem__(self, name):
        return getattr(self, name)

    def __setitem__(self, name, value):
        setattr(self, name, value)

    def to_dict(self, include_methods=False, include_ndim=False):
        """{member: value}: nested structs as dicts, vectors and matrices as (nested) lists.
        `include_methods` adds '__struct_methods' (the type's methods), `include_ndim` adds
        '__matrix_ndim' ({member: 1 or 2} of the vector/matrix members) at every level."""
        result, ndims = {}, {}
        for name in type(self)._qd_member_names:
            value = getattr(self, name)
            if isinstance(value, Struct):
                value = value.to_dict(include_methods, include_ndim)
            elif hasattr(value, "to_list") and hasattr(value, "ndim"):
                ndims[name] = value.ndim
                value = value.to_list()
            result[name] = value
        if include_methods:
            result["__struct_methods"] = self.methods
        if include_ndim:
            result["__matrix_ndim"] = ndims
        return result

    def __eq__(self, other):
        return type(other) is type(self) and self.to_dict() == other.to_dict()

    __hash__ = None

    def __repr__(self):
        return repr(self.to_dict())


_StructBase = Struct
_Struct = Struct


class _AnonymousStruct(Struct):
    """Values of ``qd.Struct(...)``: members as given, not converted."""

    def __init__(self, *args, **kwargs):
        for name, value in _anonymous_entries(args, kwargs).items():
            object.__setattr__(self, name, value)


def _anonymous_entries(args, kwargs):
    """{member: value} of ``qd.Struct(dict)`` / ``qd.Struct(**members)``: lists and tuples become
    vectors/matrices, dicts nested struct values."""
    if args and (kwargs or len(args) > 1 or not isinstance(args[0], dict)):
        raise QuadrantsSyntaxError(
            "Custom structs need to be initialized using either dictionary or keyword arguments"
        )
    entries = dict(args[0]) if args else dict(kwargs)
    from quadrants import _matrix

    for name, value in entries.items():
        if isinstance(value, dict):
            entries[name] = Struct(value)
        elif isinstance(value, (list, tuple)):
            nested = bool(value) and isinstance(value[0], (list, tuple))
            entries[name] = _matrix.Matrix(value) if nested else _matrix.Vector(value)
    return entries


_anonymous_types = {}


def _anonymous_type(entries):
    """The anonymous struct type of values `entries` (one type per member layout)."""
    from quadrants import _matrix

    members = []
    for name, value in entries.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise QuadrantsSyntaxError(f"struct member names are identifiers, got {name!r}")
        if isinstance(value, Struct):
            annotation = type(value)
        elif isinstance(value, _matrix.Matrix):
            annotation = _matrix.MatrixType(value.n, value.m, value.ndim, value.dtype)
        elif isinstance(value, (bool, np.bool_)):
            annotation = bool
        elif isinstance(value, (numbers.Integral, np.integer)):
            annotation = int
        elif isinstance(value, (numbers.Real, np.floating)):
            annotation = float
        else:
            raise TypeError(
                f"qd.Struct member '{name}' must be a number, a vector/matrix or a struct, got "
                f"{type(value).__name__}"
            )
        members.append((name, annotation))
    key = tuple(members)
    cls = _anonymous_types.get(key)
    if cls is None:
        namespace = {"__qualname__": "Struct", "__module__": __name__}
        cls = StructType("Struct", (_AnonymousStruct,), namespace, members=dict(members))
        cls._qd_anonymous = True
        _anonymous_types[key] = cls
    return cls


class _UnpackedView:
    """``obj.r`` of an unpacked vector member in Python scope: ``obj.r[i]`` reads and writes
    member ``_r{i}``."""

    def __init__(self, obj, group, n):
        object.__setattr__(self, "_obj", obj)
        object.__setattr__(self, "_group", group)
        object.__setattr__(self, "_n", n)

    def _name(self, index):
        if isinstance(index, bool) or not isinstance(index, (numbers.Integral, np.integer)):
            raise QuadrantsSyntaxError(
                f"unpacked vector member '{self._group}' requires a python-int index (possibly via "
                "qd.static)"
            )
        if not 0 <= int(index) < self._n:
            raise QuadrantsSyntaxError(
                f"unpacked vector index out of bounds: {self._group}[{index}] of {self._n} elements"
            )
        return f"_{self._group}{int(index)}"

    def __getitem__(self, index):
        return getattr(self._obj, self._name(index))

    def __setitem__(self, index, value):
        setattr(self._obj, self._name(index), value)

    def __len__(self):
        return self._n


_T = TypeVar("_T")


@overload
def dataclass(cls: type[_T]) -> type[_T]: ...
@overload
def dataclass(cls: None = None) -> Callable[[type[_T]], type[_T]]: ...
def dataclass(cls=None):
    """``@qd.dataclass``: a struct class from a class with annotated members and methods."""
    if cls is None:
        return dataclass
    if not isinstance(cls, type):
        raise TypeError("@qd.dataclass decorates a class")
    annotations = dict(cls.__dict__.get("__annotations__", {}))
    namespace = {}
    for key, value in cls.__dict__.items():
        if key in ("__dict__", "__weakref__", "__annotations__"):
            continue
        if key in annotations:
            raise QuadrantsSyntaxError("Default value in @dataclass is not supported")
        namespace[key] = value
    if isinstance(next(iter(annotations.values()), None), str) or any(
        isinstance(a, str) for a in annotations.values()
    ):
        import sys

        module = sys.modules.get(cls.__module__)
        scope = dict(vars(module)) if module else {}
        annotations = {
            k: eval(a, scope) if isinstance(a, str) else a  # noqa: S307 (the user's annotations)
            for k, a in annotations.items()
        }
    namespace["__annotations__"] = annotations
    return StructType(cls.__name__, (_StructBase,), namespace, members=annotations)


def struct(**members):
    """``qd.types.struct(a=qd.f32, ...)``: a struct class without a class body."""
    namespace = {"__qualname__": "Struct", "__module__": __name__}
    return StructType("Struct", (_StructBase,), namespace, members=members)


# --- struct fields ---


class StructField(Field):
    """A field of struct elements: one member field per member (``f.a`` is member a's field).

    ``f[i]`` in Python scope is a proxy of element i whose members read and write the member
    fields; ``to_numpy()`` gives {member: array} (nested structs as dicts).
    """

    _qd_struct_field = True

    def __init__(self, struct_type, members, name):
        self._qd_struct_field_type = struct_type
        self._members = dict(members)
        self._qd_struct_field_members = tuple(self._members.values())
        self.name = name

    @classmethod
    def _make(cls, struct_type, shape, offset, name, order):
        from quadrants import _field

        members = {}
        for member, annotation in struct_type._qd_members:
            label = f"{name}.{member}" if name else member
            kind = _member_kind(annotation)
            if kind == "scalar":
                members[member] = _field.field(
                    annotation, shape=shape, order=order, name=label, offset=offset
                )
            elif kind == "struct":
                members[member] = StructField._make(annotation, shape, offset, label, order)
            else:
                members[member] = _field.field(
                    annotation, shape=shape, order=order, name=label, offset=offset
                )
        return cls(struct_type, members, name)

    def __getattr__(self, name):
        members = self.__dict__.get("_members", {})
        if name in members:
            return members[name]
        raise AttributeError(f"struct field has no member '{name}'")

    @property
    def dtype(self):
        return self._qd_struct_field_type

    @property
    def keys(self):
        return list(self._members)

    def _leaves(self):
        for value in self._members.values():
            if isinstance(value, StructField) or hasattr(value, "_qd_fields"):
                yield from value._leaves()  # nested structs, vector/matrix members
            else:
                yield value

    @property
    def shape(self):
        return next(self._leaves()).shape

    def _place_fields(self):
        """The scalar fields to place (qd.root.dense(...).place(struct_field))."""
        return list(self._leaves())

    def to_numpy(self):
        """{member: NumPy array of shape} (nested struct members as dicts)."""
        return {name: value.to_numpy() for name, value in self._members.items()}

    def from_numpy(self, data):
        """Copies {member: array} into the member fields (every member must be given)."""
        if not isinstance(data, dict):
            raise TypeError(f"from_numpy of a struct field expects a dict, got {type(data).__name__}")
        missing = [name for name in self._members if name not in data]
        if missing:
            raise ValueError(f"from_numpy: missing members {missing}")
        for name, value in self._members.items():
            value.from_numpy(data[name])

    _qd_kernel_fill = None  # Python scope only, as in the reference

    def fill(self, value):
        """Sets every member of every element to `value` (a number)."""
        for member in self._members.values():
            member.fill(value)

    def copy_from(self, other):
        """Copies all elements of struct field `other` (same members and shape)."""
        if not isinstance(other, StructField) or list(other._members) != list(self._members):
            raise TypeError("copy_from expects a struct field with the same members")
        for name, member in self._members.items():
            member.copy_from(other._members[name])

    def __getitem__(self, key) -> Any:
        return _StructElement(self, key)

    def __setitem__(self, key, value):
        element = _StructElement(self, key)
        if isinstance(value, _StructBase):
            value = value.to_dict()
        if not isinstance(value, dict):
            raise TypeError(f"a struct field element takes a struct or a dict, got {type(value).__name__}")
        for name, item in value.items():
            setattr(element, name, item)

    def __iter__(self):
        raise NotImplementedError("Struct for is only available in Quadrants scope.")

    def __repr__(self):
        return f"<qd struct field of {self._qd_struct_field_type.__qualname__}>"


class _StructElement:
    """``f[i]`` of a struct field in Python scope: members read and write the member fields;
    methods of the struct type are bound to the element."""

    def __init__(self, sfield, key):
        object.__setattr__(self, "_sfield", sfield)
        object.__setattr__(self, "_key", key)

    def __getattr__(self, name):
        sfield = self._sfield
        members = sfield._members
        if name in members:
            member = members[name]
            if isinstance(member, StructField):
                return _StructElement(member, self._key)
            return member[self._key]
        stype = sfield._qd_struct_field_type
        if name in stype._qd_unpacked_names:
            return _UnpackedView(self, name, stype._qd_unpacked_sizes[stype._qd_unpacked_names.index(name)])
        attr = getattr(stype, name, None)
        if isinstance(attr, _pytypes.FunctionType):
            return _pytypes.MethodType(attr, self)
        raise AttributeError(f"struct field element has no member '{name}'")

    def __setattr__(self, name, value):
        members = self._sfield._members
        if name not in members:
            raise AttributeError(f"struct field element has no member '{name}'")
        member = members[name]
        if isinstance(member, StructField):
            member[self._key] = value
        else:
            member[self._key] = value

    def to_dict(self):
        result = {}
        for name, member in self._sfield._members.items():
            value = getattr(self, name)
            result[name] = value.to_dict() if isinstance(member, StructField) else value
        return result

    def __repr__(self):
        return repr(self.to_dict())


# --- kernels ---


def check_dataclass(cls):
    """Raises for a @dataclasses.dataclass with an unpacked vector member (only @qd.dataclass
    expands them)."""
    import dataclasses

    for member in dataclasses.fields(cls):
        if is_unpacked(member.type):
            raise unpacked_error(
                f"member '{member.name}' of @dataclasses.dataclass {cls.__name__}"
            )


def convert_argument(struct_type, value):
    """A kernel argument for a parameter of `struct_type` from a struct value of another type
    with the same member names (``qd.Struct(a=..., b=...)``); anything else raises
    QuadrantsRuntimeTypeError."""
    from quadrants._core import QuadrantsRuntimeTypeError

    if isinstance(value, Struct) and set(type(value)._qd_member_names) == set(
        struct_type._qd_member_names
    ):
        try:
            return struct_type(**value.entries)
        except (TypeError, ValueError):
            pass
    raise QuadrantsRuntimeTypeError(
        f"Argument {type(value)} cannot be converted into required type {struct_type!r}"
    )


def _leaf_count(annotation):
    """Scalars a result of type `annotation` comes back as."""
    if is_struct_type(annotation):
        return sum(_leaf_count(t) for t in annotation._qd_member_types)
    if getattr(annotation, "_qd_matrix_type", False):
        return annotation.n * annotation.m
    return 1


def _build(annotation, values):
    """A value of type `annotation` from an iterator over its scalar leaves."""
    if is_struct_type(annotation):
        return annotation(**{name: _build(t, values) for name, t in annotation._qd_members})
    if getattr(annotation, "_qd_matrix_type", False):
        from quadrants import _matrix

        return _matrix.from_results(annotation, [next(values) for _ in range(_leaf_count(annotation))])
    return next(values)


def rebuild_results(return_types, results):
    """What a kernel returning `return_types` (one type, or a tuple's element types) gives, from
    its scalar results in order: struct instances, vectors/matrices and numbers (one type: its
    value; several: a tuple). The core gives one result as a number, several as a tuple."""
    if sum(_leaf_count(t) for t in return_types) == 1:
        results = (results,)
    values = iter(results)
    built = tuple(_build(t, values) for t in return_types)
    return built[0] if len(built) == 1 else built


def from_results(struct_type, results):
    """The instance a kernel returning `struct_type` gives from its scalar results."""
    return rebuild_results((struct_type,), results)
