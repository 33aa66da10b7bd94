"""The offline cache, Python side: the build identity, source keys, ``python -m quadrants cache``.

Compiled kernels are kept on disk by the C core (csrc/cache/, csrc/driver/cache_io.c, the
targets' payloads in csrc/driver/target_*.c) under two kinds of keys:

* a **code key**, computed by the core after lowering from the final QIR, the target and the
  compiler build. Equal keys mean equal machine code, so whatever changed upstream, an entry
  is only reused when the code would come out the same. This skips the LLVM half of a compile
  (most of its time).
* a **source key**, computed here before anything is lowered, from what the frontend would read:
  the compiler build and Python version, the code-affecting options, the kernel's name and
  argument signature, the source text of the kernel and of every ``@qd.func`` it reaches, and
  the values of the globals, closure variables, attribute chains (``cfg.n``, ``mod.CONST``) and
  template arguments those sources use. A cached kernel found under its source key is loaded
  without running the frontend at all (the warm start).

A value the source key cannot describe faithfully (an arbitrary object used as a whole, a
callable without source) makes ``source_key`` return None: that kernel is then lowered on every
start, and only the code key applies. So a stale kernel cannot be loaded through a source key
whose inputs were not all accounted for.
"""

import ast
import builtins
import dataclasses
import enum
import hashlib
import json
import os
import struct
import sys
import types

import numpy as np

from quadrants import _core, _types

# Options that change generated code. Dumps (print_kernel_*) are left out on purpose: a cached
# kernel is not compiled again, so its dumps are not written again (as in the reference).
_CODE_OPTIONS = (
    "arch",
    "default_fp",
    "default_ip",
    "debug",
    "check_out_of_bound",
    "short_circuit",
    "unrolling_limit",
    "fast_math",
    "cpu_simt",
    "nn_tensor_cores",
    "opt_level",
    "default_gpu_block_dim",
    "subgroup_size",
    "atomic_int64",  # set only by tests (a cpu_simt compile as for a device without them)
    "max_shared_bytes",  # set only by tests (a cpu_simt compile as for a smaller device)
)

_compiler_id = None


def compiler_id():
    """What identifies this build of the compiler: the package version and the size and
    modification time of the compiled core (a rebuild changes them)."""
    global _compiler_id
    if _compiler_id is None:
        from quadrants._version import __version__

        st = os.stat(_core.__file__)
        _compiler_id = f"quadrants-{__version__}|{st.st_size}|{st.st_mtime_ns}"
    return _compiler_id


class Unkeyable(Exception):
    """A value the source key cannot describe."""


# --- free names of a function ---

_analysis = {}  # code object -> (names, chains) of its source


def _chain(node):
    """("a", "b", "c") for the expression a.b.c, or None when it is not a plain chain."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return tuple(reversed(parts))
    return None


def _free_names(tree, params):
    """(names, chains): the names a function's body loads that are not its parameters, and the
    attribute chains rooted at such names, each once, in first-use order."""
    names, chains = {}, {}
    covered = set()  # Name nodes that are roots of a chain
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and id(node) not in covered:
            chain = _chain(node)
            if chain is not None and chain[0] not in params:
                chains.setdefault(chain, None)
            # Inner attributes of this chain are covered by it.
            inner = node.value
            while isinstance(inner, ast.Attribute):
                covered.add(id(inner))
                inner = inner.value
            if isinstance(inner, ast.Name):
                covered.add(id(inner))
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and id(node) not in covered and node.id not in params:
            names.setdefault(node.id, None)
    return tuple(names), tuple(chains)


def _analyze(source_obj, function, directory=None):
    """The free names and chains of a kernel or func: cached per code object, and in
    `directory` (the offline cache's, or None) per source text, so that a warm start does not
    parse the sources of every kernel and func again to compute their keys."""
    code = function.__code__
    found = _analysis.get(code)
    if found is not None:
        return found
    path = None
    if directory is not None:
        digest = hashlib.blake2b(
            "".join(source_obj._source.lines).encode(), digest_size=16, person=b"qd-free-names1"
        ).hexdigest()
        path = os.path.join(directory, "names", digest[:2], digest[2:] + ".json")
        found = _read_analysis(path)
    if found is None:
        tree = source_obj._parsed()
        params = {arg.arg for arg in tree.args.args}
        found = _free_names(tree, params)
        if path is not None:
            _write_analysis(path, found)
    _analysis[code] = found
    return found


def _read_analysis(path):
    """(names, chains) stored at `path`, or None when absent or not well formed."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        names = tuple(data["names"])
        chains = tuple(tuple(chain) for chain in data["chains"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    strings = all(isinstance(n, str) for n in names)
    if not strings or not all(chain and all(isinstance(p, str) for p in chain) for chain in chains):
        return None
    return names, chains


def _write_analysis(path, found):
    """Stores (names, chains) at `path` (atomically; a failure only loses the memo)."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        temporary = f"{path}.{os.getpid()}.tmp"
        with open(temporary, "w", encoding="utf-8") as f:
            json.dump({"names": list(found[0]), "chains": [list(c) for c in found[1]]}, f)
        os.replace(temporary, path)
    except OSError:
        pass


_MISSING = object()


def _resolve(function, name):
    """The value `name` has for `function`: closure, then globals, then builtins."""
    code = function.__code__
    if name in code.co_freevars and function.__closure__:
        cell = function.__closure__[code.co_freevars.index(name)]
        try:
            return cell.cell_contents
        except ValueError:
            return _MISSING
    value = function.__globals__.get(name, _MISSING)
    if value is _MISSING:
        value = getattr(builtins, name, _MISSING)
    return value


# --- fingerprints ---


class _Keyer:
    """Feeds descriptions of values into a hash; raises Unkeyable for what it cannot describe."""

    def __init__(self, directory=None):
        self.h = hashlib.blake2b(digest_size=32)
        self.seen = {}  # id(function or object) -> index, for cycles and repeats
        self.directory = directory  # the offline cache's: functions' free names are kept there

    def put(self, *items):
        for item in items:
            data = item.encode() if isinstance(item, str) else item
            self.h.update(struct.pack("<Q", len(data)))
            self.h.update(data)

    def ref(self, obj):
        """True when obj was described before (a back reference is written instead)."""
        index = self.seen.get(id(obj))
        if index is not None:
            self.put("ref", str(index))
            return True
        self.seen[id(obj)] = len(self.seen)
        return False

    def value(self, v):
        kind = type(v)
        if v is None or kind is bool or kind is int or kind is str:
            self.put(kind.__name__, repr(v))
        elif kind is float:
            self.put("float", v.hex())
        elif kind is bytes:
            self.put("bytes", v)
        elif kind is complex:
            self.put("complex", repr(v))
        elif isinstance(v, np.generic):
            self.put("np", v.dtype.str, v.tobytes())
        elif isinstance(v, np.ndarray):
            if v.nbytes > (1 << 20):
                raise Unkeyable("large array")
            self.put("ndarray", v.dtype.str, repr(v.shape), np.ascontiguousarray(v).tobytes())
        elif kind is tuple or kind is list:
            self.put(kind.__name__, str(len(v)))
            for item in v:
                self.value(item)
        elif kind is dict:
            self.put("dict", str(len(v)))
            for key, item in v.items():
                self.value(key)
                self.value(item)
        elif isinstance(v, _types.DataType):
            self.put("dtype", str(v._qd_dtype))
        elif isinstance(v, types.ModuleType):
            self.put("module", v.__name__)
        elif getattr(v, "_qd_builtin", None) is not None:
            self.put("builtin", str(v._qd_builtin), getattr(v, "__module__", "") or "")
        elif kind is types.BuiltinFunctionType or kind is type and v.__module__ == "builtins":
            self.put("pybuiltin", v.__module__ or "", v.__qualname__)
        elif isinstance(v, np.ufunc):
            self.put("ufunc", v.__name__)  # NumPy's own functions: immutable singletons
        elif isinstance(v, types.GenericAlias):
            # `tuple[qd.types.vector(3), qd.i32]`, a return annotation: its origin and arguments
            self.put("generic")
            self.value(v.__origin__)
            self.value(v.__args__)
        elif v is Ellipsis:
            self.put("ellipsis")
        elif isinstance(v, enum.Enum):
            # An enum member (a program's constants, qd.Backend...): its class, name and value.
            self.put("enum", kind.__module__, kind.__qualname__, v.name)
            self.value(v.value)
        else:
            self.special(v)

    def special(self, v):
        from quadrants._field import ScalarField
        from quadrants._kernel import BoundFunc, Func, Kernel
        from quadrants._annotations import NdarrayType, Template
        from quadrants._tensor import TENSOR_TYPES
        from quadrants import _struct

        if type(v) in TENSOR_TYPES:
            v = v._impl  # a wrapper stands for what it wraps
        if isinstance(v, ScalarField):
            if v._array is None and v._device is None:
                raise Unkeyable("unplaced field")
            self.put(
                "field",
                str(v._qd_field_id),
                str(v.dtype._qd_dtype),
                repr(v._shape),
                repr(v._order),
                repr(v._offset),
                repr(v._snode),
            )
        elif isinstance(v, Func):
            if not self.ref(v):
                self.put("func", repr(v._qd_func_params), str(v._qd_real_func), str(v._qd_pyfunc))
                self.source(v, v._function)
        elif isinstance(v, BoundFunc):
            self.put("bound")
            self.value(v._qd_bound_func)
            self.value(v._qd_bound_self)
        elif isinstance(v, Kernel):
            if not self.ref(v):
                self.put("kernel")
                self.source(v, v._function)
        elif isinstance(v, NdarrayType):
            self.put("ndarray_type", repr(v.dtype and v.dtype._qd_dtype), repr(v.ndim))
            self.value(v._raw_dtype)  # a vector/matrix element: its shape too
        elif isinstance(v, Template) or v is Template:
            self.put("template")
        elif isinstance(v, types.FunctionType):
            if not self.ref(v):
                self.put("pyfunction")
                self.code(v.__code__, v)
                self.value(v.__defaults__)
        elif isinstance(v, types.MethodType):
            self.put("method")
            self.value(v.__func__)
            self.value(v.__self__)
        elif getattr(type(v), "_qd_data_oriented", False):
            if not self.ref(v):
                self.put("data_oriented", type(v).__module__, type(v).__qualname__)
                self.klass(type(v))
                members = vars(v)
                self.put(str(len(members)))
                for name in sorted(members):
                    self.put(name)
                    self.value(members[name])
        elif dataclasses.is_dataclass(v) and not isinstance(v, type):
            self.put("dataclass", type(v).__module__, type(v).__qualname__)
            for member in dataclasses.fields(v):
                self.put(member.name)
                self.value(getattr(v, member.name))
        elif _struct.is_struct_type(v):
            # A struct type: its members (unpacked vectors expanded) and its methods.
            if not self.ref(v):
                self.put("struct", v.__module__, v.__qualname__)
                self.value(v._qd_member_names)
                self.value(v._qd_member_types)
                self.value(v._qd_unpacked_names)
                self.value(v._qd_unpacked_sizes)
                self.klass(v)
        elif isinstance(v, _struct._StructBase):
            self.put("struct_value")
            self.value(type(v))
            self.value(tuple(getattr(v, name) for name in type(v)._qd_member_names))
        elif getattr(v, "_qd_struct_field", False):
            self.put("struct_field")
            self.value(v._qd_struct_field_type)
            self.value(v._qd_struct_field_members)
        elif isinstance(v, type) and (
            dataclasses.is_dataclass(v) or getattr(v, "_qd_data_oriented", False)
        ):
            if not self.ref(v):
                self.put("class", v.__module__, v.__qualname__)
                self.klass(v)
        elif getattr(type(v), "_qd_cache_key", None) is not None:
            # Types of the language (vector, matrix and struct types, host matrices) describe
            # themselves: _qd_cache_key(obj) returns a value made of keyable parts.
            if not self.ref(v):
                self.put("custom", type(v).__module__, type(v).__qualname__)
                self.value(type(v)._qd_cache_key(v))
        elif isinstance(v, type) and v.__module__.startswith(("quadrants", "numpy")):
            self.put("libtype", v.__module__, v.__qualname__)
        else:
            raise Unkeyable(f"{type(v).__module__}.{type(v).__qualname__}")

    def klass(self, cls):
        """A class used by kernels: its qd methods' sources and its plain attributes."""
        for name, member in sorted(vars(cls).items()):
            if name.startswith("__") and name.endswith("__"):
                continue
            self.put(name)
            try:
                self.value(member)
            except Unkeyable:
                self.put("opaque")  # a method the kernels never reach through the class

    def code(self, code, function):
        """A plain Python function (run by Python during a compile): its bytecode, constants,
        and the globals it names."""
        self.put(code.co_code, repr(code.co_names), repr(code.co_varnames), code.co_filename)
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                self.code(const, function)
            else:
                self.value(const)
        for name in code.co_names:
            value = _resolve(function, name) if function is not None else _MISSING
            if value is not _MISSING and not isinstance(value, types.ModuleType):
                self.put(name)
                self.value(value)
        if function is not None and function.__closure__:
            for cell in function.__closure__:
                try:
                    self.value(cell.cell_contents)
                except ValueError:
                    self.put("empty cell")

    def source(self, source_obj, function):
        """A kernel or func: its source text and location, its annotations, and the values of
        the names and attribute chains it uses."""
        info = source_obj._source
        if isinstance(info, Exception):
            raise Unkeyable("no source")
        self.put("src", info.filename, str(info.first_lineno), "".join(info.lines))
        annotations = getattr(function, "__annotations__", {})
        self.put(str(len(annotations)))
        for name, annotation in annotations.items():
            self.put(name)
            self.value(annotation)
        self.value(function.__defaults__)
        names, chains = _analyze(source_obj, function, self.directory)
        for name in names:
            value = _resolve(function, name)
            if value is _MISSING:
                self.put(name, "missing")
            else:
                self.put(name)
                self.value(value)
        for chain in chains:
            value = _resolve(function, chain[0])
            for attr in chain[1:]:
                if value is _MISSING:
                    break
                try:
                    value = getattr(value, attr)
                except Exception:  # the frontend reports it when it reads the chain
                    value = _MISSING
            self.put(".".join(chain))
            if value is _MISSING:
                self.put("missing")
            else:
                self.value(value)


def source_key(kernel, spec_key, args, member_values, options):
    """The source key of one kernel specialization (32 bytes), or None when some input cannot
    be described (the kernel is then always lowered; see the module docstring). `spec_key` and
    `member_values` are those of Kernel._launch."""
    keyer = _Keyer(options.get("offline_cache_file_path"))
    try:
        keyer.put("quadrants-source-key-1", options["compiler_id"], sys.version)
        for name in _CODE_OPTIONS:
            keyer.put(name)
            keyer.value(options.get(name))
        keyer.put(kernel._function.__module__ or "", kernel._function.__qualname__)
        for index, (part, value) in enumerate(zip(spec_key, args)):
            keyer.put(part[0])
            if part[0] == "t":
                keyer.value(value)
            elif part[0] == "d":
                for path, member_part, member_value in member_values[index]:
                    keyer.put(path, member_part[0])
                    if member_part[0] == "t":
                        keyer.value(member_value)
                    else:
                        keyer.put(repr(member_part))
            else:
                keyer.put(repr(part))
        keyer.source(kernel, kernel._function)
    except (Unkeyable, RecursionError):
        return None
    return keyer.h.digest()


# --- python -m quadrants cache ---


def default_path():
    """The cache directory qd.init would use with no options (honours the environment)."""
    from quadrants import _runtime

    env = os.environ.get("QD_OFFLINE_CACHE_FILE_PATH")
    if env:
        return env
    default = _runtime._OPTIONS["offline_cache_file_path"]
    return default() if callable(default) else default


def main(argv):
    """``python -m quadrants cache [info|clear] [--path DIR]``."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m quadrants cache")
    parser.add_argument("action", nargs="?", default="info", choices=("info", "clear"))
    parser.add_argument("--path", default=None, help="cache directory (default: %(default)s)")
    ns = parser.parse_args(argv)
    path = ns.path or default_path()
    if ns.action == "clear":
        removed = _core.cache_clear(path)
        import shutil

        shutil.rmtree(os.path.join(path, "names"), ignore_errors=True)  # _analyze's memo
        print(f"removed {removed} entries from {path}")
        return 0
    entries, size = _core.cache_stat(path)
    print(f"offline cache: {path}")
    print(f"entries: {entries}")
    print(f"size: {size} bytes ({size / (1 << 20):.2f} MiB)")
    return 0
