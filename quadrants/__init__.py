"""quadrants: GPU and CPU kernels written in Python, compiled by a C core.

    import quadrants as qd

The compiler and runtime live in the extension module ``quadrants._core``; this package is the
thin Python layer in front of it. Importing it stays cheap: no compilation happens until a
kernel is first called. ``qd.cfg`` is the live compile configuration (None before ``qd.init``).
"""

from quadrants._version import __version__
from quadrants import _core

# Exception classes (the reference's names and hierarchy). QuadrantsIndexError is not exported
# here, as in the reference; it stays reachable as quadrants._core.QuadrantsIndexError.
from quadrants._core import (
    QuadrantsAssertionError,
    QuadrantsCompilationError,
    QuadrantsNameError,
    QuadrantsRuntimeError,
    QuadrantsRuntimeTypeError,
    QuadrantsSyntaxError,
    QuadrantsTypeError,
)

from quadrants import _runtime, types
from quadrants.types import ref
from quadrants._annotations import Backend, Layout, Template, template
# The kernel-scope builtins: the rows of csrc/frontend/builtins.def flagged exported
# (quadrants._core.BUILTINS), each defined in _builtins.py, _hints.py or _linalg.py.
from quadrants._builtins import *  # noqa: F403
from quadrants import _builtins, _hints, _linalg
from quadrants._field import (
    Field,
    ScalarField,
    SNode,
    axes,
    field,
    i,
    ij,
    ijk,
    ijkl,
    ijl,
    ik,
    ikl,
    il,
    j,
    jk,
    jkl,
    jl,
    k,
    kl,
    l,
    root,
)
from quadrants._extension import DeviceCapability, clock_freq_hz, extension, is_extension_enabled
from quadrants._fields_builder import FieldsBuilder
from quadrants._hints import *  # noqa: F403
from quadrants._kernel import data_oriented, func, kernel, pure, pyfunc, real_func
from quadrants._struct import Struct, StructField, dataclass
from quadrants._perf_dispatch import perf_dispatch
from quadrants._matrix import Matrix, Vector
from quadrants import math
from quadrants import simt
from quadrants import nn
from quadrants._ndarray import Ndarray, ScalarNdarray, ndarray
from quadrants._matrix_field import MatrixField, MatrixNdarray, VectorNdarray
from quadrants._tensor import MatrixTensor, Tensor, VectorTensor, tensor, wrap
from quadrants._buffer_view import BufferView
from quadrants._runtime import (
    amdgpu,
    arm64,
    cpu,
    cuda,
    dump_compile_config,
    gpu,
    init,
    metal,
    python,
    reset,
    sync,
    vulkan,
    x64,
    x86_64,
)
from quadrants._types import (
    f16,
    f32,
    f64,
    float16,
    float32,
    float64,
    i8,
    i16,
    i32,
    i64,
    int8,
    int16,
    int32,
    int64,
    u1,
    u8,
    u16,
    u32,
    u64,
    uint1,
    uint8,
    uint16,
    uint32,
    uint64,
)
from quadrants._linalg import *  # noqa: F403
from quadrants import _logging, lang
from quadrants._logging import (
    CRITICAL,
    DEBUG,
    ERROR,
    INFO,
    TRACE,
    WARN,
    is_logging_effective,
    set_logging_level,
)
from quadrants import algorithms  # noqa: E402  (its funcs use the names above)
from quadrants import experimental, tools  # noqa: E402
from quadrants import profiler  # noqa: E402


def outer(a, b):
    """``tile -= qd.outer(a, b)``: the outer product of two per-lane column vectors, taken
    from a register tile (see qd.simt.Tile16x16). It has no value of its own."""
    raise TypeError("qd.outer(a, b) is only valid as `tile -= qd.outer(a, b)` in a kernel")


outer._qd_builtin = "simt.tile.outer"  # lowered by the C core (csrc/frontend/lower_tile.c)


def __getattr__(name):
    # qd.cfg follows qd.init/qd.reset, so it cannot be a plain module attribute.
    if name == "cfg":
        return _runtime.current_cfg()
    raise AttributeError(f"module 'quadrants' has no attribute {name!r}")


__all__ = [
    "__version__",
    # per-thread linear algebra
    *_linalg.__all__,
    # exceptions
    "QuadrantsAssertionError",
    "QuadrantsCompilationError",
    "QuadrantsNameError",
    "QuadrantsRuntimeError",
    "QuadrantsRuntimeTypeError",
    "QuadrantsSyntaxError",
    "QuadrantsTypeError",
    # runtime
    "init",
    "set_logging_level",
    "is_logging_effective",
    "DEBUG",
    "TRACE",
    "INFO",
    "WARN",
    "ERROR",
    "CRITICAL",
    "reset",
    "sync",
    "dump_compile_config",
    "cfg",
    "cpu",
    "x64",
    "x86_64",
    "arm64",
    "cuda",
    "amdgpu",
    "metal",
    "vulkan",
    "python",
    "gpu",
    # types
    "Matrix",
    "Vector",
    "u1",
    "i8",
    "i16",
    "i32",
    "i64",
    "u8",
    "u16",
    "u32",
    "u64",
    "f16",
    "f32",
    "f64",
    "uint1",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "Template",
    "template",
    "types",
    "ref",
    "Layout",
    "Backend",
    # decorators
    "kernel",
    "func",
    "real_func",
    "pyfunc",
    "pure",
    "data_oriented",
    "dataclass",
    "Struct",
    "perf_dispatch",
    # tensors
    "Field",
    "ScalarField",
    "MatrixField",
    "StructField",
    "Ndarray",
    "ScalarNdarray",
    "VectorNdarray",
    "MatrixNdarray",
    "Tensor",
    "VectorTensor",
    "MatrixTensor",
    "tensor",
    "wrap",
    "BufferView",
    "field",
    "ndarray",
    "root",
    "FieldsBuilder",
    "axes",
    "i",
    "j",
    "k",
    "l",
    "ij",
    "ik",
    "il",
    "jk",
    "jl",
    "kl",
    "ijk",
    "ijl",
    "ikl",
    "jkl",
    "ijkl",
    # kernel-scope builtins
    *_builtins.__all__,
    *_hints.__all__,
    # device facts
    "extension",
    "is_extension_enabled",
    "DeviceCapability",
    "clock_freq_hz",
    "experimental",
    "tools",
]
