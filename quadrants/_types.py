"""Primitive data types: ``qd.i32``, ``qd.f32``, ``qd.u1`` and the rest.

Each primitive type is one ``DataType`` instance, created once at import time; identity is
equality, so ``x.dtype is qd.f32`` works. A type carries its name, the matching NumPy dtype and
``_qd_dtype``, the integer id the C core uses for it. The ids come from the core
(``quadrants._core.dtype_ids()``), the single source of truth.

Python's ``int``, ``float`` and ``bool`` stand for ``default_ip``, ``default_fp`` and ``u1``
wherever a dtype is accepted; ``cook_dtype`` resolves them at the time of use (``qd.init``
chooses the defaults). Python-scope values are converted to a dtype with C cast semantics
(``to_dtype_value``): floats truncate toward zero when stored into integers, integers wrap
around, anything non-zero is true for ``u1``.
"""

import math
from typing import TYPE_CHECKING

import numpy as np

from quadrants import _core
from quadrants._core import QuadrantsSyntaxError

if TYPE_CHECKING:
    from typing import TypeAlias


class DataType:
    """One primitive type. Instances are singletons: compare them with ``is`` or ``==``.

    Attributes:
        name: the short name (``"f32"``), also what ``str()`` gives.
        np_dtype: the NumPy dtype used for host memory of this type.
        bits: width in bits (1 for ``u1``).
        is_real, is_signed: float type / signed integer or float type.
        _qd_dtype: the core's integer id of the type.
    """

    __slots__ = ("name", "np_dtype", "bits", "is_real", "is_signed", "_qd_dtype")

    def __init__(self, name, np_dtype, bits, is_real, is_signed, dtype_id):
        self.name = name
        self.np_dtype = np.dtype(np_dtype)
        self.bits = bits
        self.is_real = is_real
        self.is_signed = is_signed
        self._qd_dtype = dtype_id

    @property
    def is_integral(self):
        """True for the integer types, u1 included."""
        return not self.is_real

    def to_string(self):
        return self.name

    def __repr__(self):
        return self.name

    def __call__(self, *args, **kwargs):
        # In kernels, `qd.f32(x)` is a typed literal or a cast; the compiler handles that call.
        raise QuadrantsSyntaxError(
            "Quadrants data types cannot be called outside Quadrants kernels."
        )

    # Copies and pickles resolve to the same singleton (qd.init deep-copies its arguments).
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        return (_dtype_by_name, (self.name,))


_IDS = _core.dtype_ids()


def _make(name, np_dtype, bits, is_real, is_signed):
    return DataType(name, np_dtype, bits, is_real, is_signed, _IDS[name])


if TYPE_CHECKING:
    # For type checkers a primitive type is the Python number type its values behave as, so
    # that `x: qd.f32`, `-> qd.i32` and `n: qd.i32 = 0` are valid annotations and
    # `qd.f32(x)` is a number (docs/typing.md).
    u1: TypeAlias = int
    i8: TypeAlias = int
    i16: TypeAlias = int
    i32: TypeAlias = int
    i64: TypeAlias = int
    u8: TypeAlias = int
    u16: TypeAlias = int
    u32: TypeAlias = int
    u64: TypeAlias = int
    f16: TypeAlias = float
    f32: TypeAlias = float
    f64: TypeAlias = float
else:
    u1 = _make("u1", np.bool_, 1, False, False)
    i8 = _make("i8", np.int8, 8, False, True)
    i16 = _make("i16", np.int16, 16, False, True)
    i32 = _make("i32", np.int32, 32, False, True)
    i64 = _make("i64", np.int64, 64, False, True)
    u8 = _make("u8", np.uint8, 8, False, False)
    u16 = _make("u16", np.uint16, 16, False, False)
    u32 = _make("u32", np.uint32, 32, False, False)
    u64 = _make("u64", np.uint64, 64, False, False)
    f16 = _make("f16", np.float16, 16, True, True)
    f32 = _make("f32", np.float32, 32, True, True)
    f64 = _make("f64", np.float64, 64, True, True)

# Long names (one assignment each: type checkers take each as an alias of the short name).
uint1 = u1
int8 = i8
int16 = i16
int32 = i32
int64 = i64
uint8 = u8
uint16 = u16
uint32 = u32
uint64 = u64
float16 = f16
float32 = f32
float64 = f64

all_types = (u1, i8, i16, i32, i64, u8, u16, u32, u64, f16, f32, f64)
real_types = [f16, f32, f64, float]
integer_types = [i8, i16, i32, i64, u1, u8, u16, u32, u64, int, bool]

_BY_NAME = {t.name: t for t in all_types}
_BY_ID = {t._qd_dtype: t for t in all_types}
_BY_NP = {t.np_dtype: t for t in all_types}
_UNSIGNED_OF = {i8: u8, i16: u16, i32: u32, i64: u64}


def _dtype_by_name(name):
    return _BY_NAME[name]


def dtype_from_id(dtype_id):
    """The DataType with the core's id `dtype_id` (KeyError if none)."""
    return _BY_ID[dtype_id]


def unsigned_of(dtype):
    """u32 for i32, u64 for i64, ... (the `default_up` of a `default_ip`)."""
    return _UNSIGNED_OF[dtype]


# The defaults that `int` and `float` stand for; qd.init/qd.reset set them (see _runtime).
_defaults = {"fp": f32, "ip": i32}


def default_fp():
    return _defaults["fp"]


def default_ip():
    return _defaults["ip"]


def set_defaults(fp, ip):
    """Called by the runtime (qd.init, qd.reset) only."""
    _defaults["fp"] = fp
    _defaults["ip"] = ip


def _is_numpy_type(x):
    return isinstance(x, np.dtype) or (isinstance(x, type) and issubclass(x, np.generic))


def cook_dtype(dtype):
    """The DataType that `dtype` stands for, resolved now.

    Accepts a DataType, Python ``int``/``float``/``bool`` (default_ip / default_fp / u1) and
    NumPy scalar types or dtypes of native byte order. Anything else raises ValueError.
    """
    if isinstance(dtype, DataType):
        return dtype
    if dtype is float:
        return _defaults["fp"]
    if dtype is int:
        return _defaults["ip"]
    if dtype is bool:
        return u1
    if _is_numpy_type(dtype):
        found = _BY_NP.get(np.dtype(dtype))
        if found is not None:
            return found
    raise ValueError(f"Invalid data type {dtype!r}")


def from_numpy_dtype(np_dtype):
    """The DataType of NumPy dtype `np_dtype`, or None when there is none (complex, object,
    non-native byte order, ...)."""
    return _BY_NP.get(np.dtype(np_dtype))


def to_numpy_type(dtype):
    """The NumPy dtype for `dtype` (anything cook_dtype accepts)."""
    return cook_dtype(dtype).np_dtype


def wrap_int(value, bits, is_signed):
    """`value` reduced modulo 2**bits into the range of the integer type (C conversion)."""
    value &= (1 << bits) - 1
    if is_signed and value >> (bits - 1):
        value -= 1 << bits
    return value


def _python_number(value):
    """A Python int or float for a Python/NumPy scalar value; TypeError otherwise."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, (bool, np.bool_)):
        return int(bool(value))
    if isinstance(value, int):
        return value
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    raise TypeError(f"expected a number, got {type(value).__name__} ({value!r})")


def to_dtype_value(value, dtype):
    """`value` (a Python or NumPy scalar) converted to a NumPy scalar of `dtype` as a C cast
    would: float -> int truncates toward zero, ints wrap around, non-zero -> true for u1,
    float narrowing rounds (overflow gives inf). NaN or infinity to an integer type raises
    ValueError (undefined in C)."""
    number = _python_number(value)
    if dtype is u1:
        return np.bool_(number != 0)
    if dtype.is_real:
        if isinstance(number, int):
            try:
                number = float(number)
            except OverflowError:
                number = math.inf if number > 0 else -math.inf
        with np.errstate(over="ignore"):
            return dtype.np_dtype.type(number)
    if isinstance(number, float):
        if not math.isfinite(number):
            raise ValueError(f"cannot convert {number} to the integer type {dtype}")
        number = int(number)  # truncates toward zero
    return dtype.np_dtype.type(wrap_int(number, dtype.bits, dtype.is_signed))


def to_python_value(scalar, dtype):
    """The Python value a Python-scope read returns for NumPy scalar `scalar` of `dtype`:
    float for real types, int otherwise (u1 included, as in the reference)."""
    if dtype.is_real:
        return float(scalar)
    return int(scalar)


def copy_converting(dst, src):
    """Copies array `src` into array `dst` of the same shape, converting element types like C
    casts (NumPy's unsafe casting; out-of-range float -> int results are unspecified, as in C)."""
    with np.errstate(all="ignore"):
        np.copyto(dst, src, casting="unsafe")


__all__ = [
    "DataType",
    "cook_dtype",
    "real_types",
    "integer_types",
    "all_types",
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
]
