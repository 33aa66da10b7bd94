"""``qd.math``: GLSL-style scalar helpers, bit operations and constants (spec/api.md 0.15).

Callable from kernels and @qd.func functions, and from Python scope on plain numbers:

- constants ``e pi inf nan`` (Python floats; in kernels they are float literals);
- ``sqrt exp log sin cos tan tanh asin acos atan2 floor ceil round pow min max``: the top-level
  builtins, re-exported as the reference does;
- ``mix clamp step fract smoothstep sign log2 degrees radians mod isinf isnan``: @qd.pyfunc
  functions, inlined into kernels; in Python scope the same body runs on numbers (through the
  builtins' Python-scope forms);
- ``popcnt clz`` (builtins), ``ffs``, ``fns``: integer bit operations returning i32 (``fns``: u32).

Typing follows the kernel rules of 0.4: ``step`` and ``sign`` give default_fp (``cast(.., float)``),
``mix clamp smoothstep mod`` promote their operands, ``degrees radians log2`` keep a float
argument's type and give default_fp for an integer one, ``isinf isnan`` give u1.

Differences from the reference, on purpose: ``mod(a, b)`` is Python's ``a % b`` for every type, so
integers stay integers (the reference computes ``a - b * floor(a / b)`` in floats; the value is
the same while it is exact); ``isinf``/``isnan`` test the value in its own type (the reference
first casts it to default_fp, so a finite f64 above the f32 range reads as infinite there).

The vector and matrix items: the types ``vec2..4`` (float), ``ivec2..4`` (int), ``uvec2..4``
(u32), ``mat2..4`` (float); ``dot cross normalize length distance reflect refract eye translate
scale rotation2d vdir`` and the complex helpers ``cmul cconj cdiv cexp cinv clog cpow csqrt``
(complex numbers as vec2), all usable in Python scope and in kernels; ``determinant`` and
``inverse`` are the matrix methods. ``rot_by_axis rot_yaw_pitch_roll rotation3d`` are not
available yet and raise NotImplementedError (surfacing as QuadrantsCompilationError when a kernel
uses them).
"""

import builtins as _py
import math as _pymath
from typing import TYPE_CHECKING, Any

import numpy as _np

from quadrants._builtins import (
    acos,
    asin,
    atan2,
    cast,
    ceil,
    cos,
    exp,
    floor,
    log,
    max,
    min,
    pow,
    round,
    select,
    sin,
    sqrt,
    tan,
    tanh,
)
from quadrants._builtins import _builtin
from quadrants._builtins import abs as _abs
from quadrants._kernel import Func, pyfunc
from quadrants import _matrix
from quadrants._types import i32, u32

if TYPE_CHECKING:
    from typing import TypeAlias

e = _pymath.e
"""The constant e = 2.718281828..."""

pi = _pymath.pi
"""The constant pi = 3.141592653..."""

inf = _pymath.inf
"""Positive infinity (``-inf`` for the negative one)."""

nan = _pymath.nan
"""A quiet NaN."""

_LN2 = _pymath.log(2.0)
_DEG_PER_RAD = 180.0 / _pymath.pi
_RAD_PER_DEG = _pymath.pi / 180.0


# --- scalar functions (element-wise in the reference; scalars here) ---


@pyfunc
def mix(x, y, a):
    """Linear interpolation ``x * (1 - a) + y * a`` (GLSL mix)."""
    return x * (1.0 - a) + y * a


@pyfunc
def clamp(x, xmin, xmax):
    """`x` limited to [xmin, xmax]: ``min(max(x, xmin), xmax)``, promoted type."""
    return min(max(x, xmin), xmax)


@pyfunc
def step(edge, x):
    """0.0 where ``x < edge``, else 1.0 (default_fp)."""
    return cast(x >= edge, float)


@pyfunc
def fract(x):
    """The fractional part ``x - floor(x)`` (in [0, 1) for finite x; real inputs only)."""
    return x - floor(x)


@pyfunc
def smoothstep(edge0, edge1, x):
    """Hermite interpolation: 0 at or below edge0, 1 at or above edge1, ``t*t*(3 - 2t)`` with
    ``t = (x - edge0) / (edge1 - edge0)`` between (GLSL smoothstep)."""
    t = clamp((x - edge0) / (edge1 - edge0), 0.0, 1.0)
    return t * t * (3.0 - 2.0 * t)


@pyfunc
def sign(x):
    """-1.0, 0.0 or 1.0 by the sign of `x` (default_fp); 0.0 for NaN."""
    return cast(x >= 0, float) - cast(x <= 0, float)


@pyfunc
def log2(x):
    """Base-2 logarithm, ``log(x) / log(2)``."""
    return log(x) / _LN2


@pyfunc
def degrees(x):
    """Radians to degrees."""
    return x * _DEG_PER_RAD


@pyfunc
def radians(x):
    """Degrees to radians."""
    return x * _RAD_PER_DEG


@pyfunc
def mod(x, y):
    """`x` modulo `y` with the sign of `y` (Python's ``%``: ``x - y * floor(x / y)``); integers
    stay integers."""
    return x % y


@pyfunc
def isinf(x):
    """Whether `x` is +inf or -inf (u1 in kernels; False for integers)."""
    return _abs(x) == inf


@pyfunc
def isnan(x):
    """Whether `x` is a NaN (u1 in kernels; False for integers). Reliable under fast_math, which
    here never assumes NaN-free values."""
    return x != x  # noqa: PLR0124 (the NaN test)


# --- bit operations ---


def _int_bits(x, name):
    """(the bits of integer `x` as a non-negative Python int, its width): NumPy integers by their
    type; Python ints as 32-bit when they fit i32 or u32, else as 64-bit."""
    if isinstance(x, (bool, _np.bool_)) or not isinstance(x, (int, _np.integer)):
        raise TypeError(f"qd.math.{name} takes an integer, got {type(x).__name__}")
    if isinstance(x, _np.integer):
        width = x.dtype.itemsize * 8
    elif -(2**31) <= x < 2**32:
        width = 32
    elif -(2**63) <= x < 2**64:
        width = 64
    else:
        raise OverflowError(f"qd.math.{name}: {x} does not fit a 64-bit integer")
    return int(x) & ((1 << width) - 1), width


@_builtin("popcnt")
def popcnt(x) -> Any:
    """The number of set bits of integer `x` (i32; qd.math.popcnt)."""
    return bin(_int_bits(x, "popcnt")[0]).count("1")


@_builtin("clz")
def clz(x) -> Any:
    """The number of leading zero bits of integer `x` in its width (i32; clz(0) is the width;
    qd.math.clz)."""
    bits, width = _int_bits(x, "clz")
    return width - bits.bit_length()


class _DualFunc(Func):
    """A @qd.func for kernels whose Python-scope call runs a separate plain-Python version."""

    def __init__(self, kernel_fn, python_fn):
        super().__init__(kernel_fn, is_pyfunc=True)
        self._python_fn = python_fn

    def __call__(self, *args, **kwargs):
        return self._python_fn(*args, **kwargs)


def _ffs_py(x):
    bits, _ = _int_bits(x, "ffs")
    return (bits & -bits).bit_length()


def _ffs(x):
    """The 1-based position of the lowest set bit of integer `x`; 0 when x is 0. Returns i32."""
    # x ^ (x - 1) sets the lowest set bit and every bit below it; the subtraction is done in
    # x's own type (a literal takes the other operand's type), so 64-bit inputs stay 64-bit.
    return select(x == 0, 0, popcnt(x ^ (x - 1)))


ffs = _DualFunc(_ffs, _ffs_py)


def _fns_py(mask, base, offset):
    mask = int(mask) & 0xFFFFFFFF
    base = int(base) & 0xFFFFFFFF
    offset = int(offset)
    if base >= 32:
        return 0xFFFFFFFF
    if offset == 0:
        return base if (mask >> base) & 1 else 0xFFFFFFFF
    direction = 1 if offset > 0 else -1
    remaining = _py.abs(offset)
    pos = base
    while 0 <= pos < 32:
        if (mask >> pos) & 1:
            remaining -= 1
            if remaining == 0:
                return pos
        pos += direction
    return 0xFFFFFFFF


def _fns(mask: u32, base: u32, offset: i32):
    """Find the n-th set bit: the position of the |offset|-th set bit of `mask` met walking from
    bit `base` (inclusive) toward the MSB (offset > 0) or the LSB (offset < 0); offset 0 asks
    whether bit `base` itself is set. 0xFFFFFFFF when there is no such bit (also for base > 31).
    The semantics of CUDA's __fns / PTX fns.b32. Returns u32."""
    result = u32(0xFFFFFFFF)
    pos = cast(min(base, 32), i32)
    if offset == 0:
        if pos < 32:
            if (mask >> pos) & 1 == 1:
                result = cast(pos, u32)
    else:
        direction = select(offset > 0, 1, -1)
        remaining = _abs(offset)
        while pos >= 0 and pos < 32:
            if (mask >> pos) & 1 == 1:
                remaining = remaining - 1
                if remaining == 0:
                    result = cast(pos, u32)
                    break
            pos = pos + direction
    return result


fns = _DualFunc(_fns, _fns_py)


# --- vector and matrix items: not available until qd.Vector / qd.Matrix exist ---


def _needs_vectors(name):
    raise NotImplementedError(
        f"qd.math.{name} needs vector/matrix support (qd.Vector / qd.Matrix), which quadrants-c "
        "does not implement yet"
    )


class _NoVectors:
    """``_no_vectors.dot()`` raises the NotImplementedError of qd.math.dot: in Python scope, and
    at compile time in kernels (a call of a plain Python function without runtime arguments
    runs while the kernel is traced, and its exception becomes a QuadrantsCompilationError)."""

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)

        def fail():
            _needs_vectors(name)

        return fail


_no_vectors = _NoVectors()


if TYPE_CHECKING:
    # For type checkers these are Vector and Matrix, so they are valid annotations (docs/typing.md).
    vec2: TypeAlias = _matrix.Vector
    vec3: TypeAlias = _matrix.Vector
    vec4: TypeAlias = _matrix.Vector
    ivec2: TypeAlias = _matrix.Vector
    ivec3: TypeAlias = _matrix.Vector
    ivec4: TypeAlias = _matrix.Vector
    uvec2: TypeAlias = _matrix.Vector
    uvec3: TypeAlias = _matrix.Vector
    uvec4: TypeAlias = _matrix.Vector
    mat2: TypeAlias = _matrix.Matrix
    mat3: TypeAlias = _matrix.Matrix
    mat4: TypeAlias = _matrix.Matrix
else:
    vec2 = _matrix.vector(2, float)
    vec3 = _matrix.vector(3, float)
    vec4 = _matrix.vector(4, float)
    ivec2 = _matrix.vector(2, int)
    ivec3 = _matrix.vector(3, int)
    ivec4 = _matrix.vector(4, int)
    uvec2 = _matrix.vector(2, u32)
    uvec3 = _matrix.vector(3, u32)
    uvec4 = _matrix.vector(4, u32)
    mat2 = _matrix.matrix(2, 2, float)
    mat3 = _matrix.matrix(3, 3, float)
    mat4 = _matrix.matrix(4, 4, float)


@pyfunc
def normalize(v):
    """`v / length(v)`."""
    return v.normalized()


@pyfunc
def length(x):
    """The Euclidean norm of a vector."""
    return x.norm()


@pyfunc
def distance(x, y):
    """``length(x - y)``."""
    return (x - y).norm()


@pyfunc
def dot(x, y):
    """Dot product of two vectors."""
    return x.dot(y)


@pyfunc
def cross(x, y):
    """Cross product of two vectors (a scalar for 2-D vectors)."""
    return x.cross(y)


@pyfunc
def reflect(x, n):
    """``x - 2 * dot(x, n) * n``."""
    return x - 2 * x.dot(n) * n


@pyfunc
def refract(x, n, eta):
    """The refraction direction (GLSL refract): zero on total internal reflection."""
    dxn = x.dot(n)
    k = 1.0 - eta * eta * (1.0 - dxn * dxn)
    r = eta * x - (eta * dxn + sqrt(max(k, 0.0))) * n
    return select(k < 0.0, r * 0.0, r)


@pyfunc
def determinant(m):
    """Determinant of a square matrix (``m.determinant()``)."""
    return m.determinant()


@pyfunc
def inverse(mat):
    """Inverse of a square matrix (``mat.inverse()``)."""
    return mat.inverse()


@pyfunc
def eye(n):
    """The n x n identity matrix (dtype float)."""
    return _matrix.Matrix.identity(float, n)


@pyfunc
def translate(dx, dy, dz):
    """4x4 translation matrix."""
    return _matrix.Matrix(
        [[1.0, 0.0, 0.0, dx], [0.0, 1.0, 0.0, dy], [0.0, 0.0, 1.0, dz], [0.0, 0.0, 0.0, 1.0]]
    )


@pyfunc
def scale(sx, sy, sz):
    """4x4 scale matrix."""
    return _matrix.Matrix(
        [[sx, 0.0, 0.0, 0.0], [0.0, sy, 0.0, 0.0], [0.0, 0.0, sz, 0.0], [0.0, 0.0, 0.0, 1.0]]
    )


@pyfunc
def rot_by_axis(axis, ang):
    """4x4 rotation by `ang` about `axis`. Not available yet: needs qd.Matrix."""
    return _no_vectors.rot_by_axis()


@pyfunc
def rot_yaw_pitch_roll(yaw, pitch, roll):
    """4x4 rotation from Euler angles. Not available yet: needs qd.Matrix."""
    return _no_vectors.rot_yaw_pitch_roll()


@pyfunc
def rotation2d(ang):
    """2x2 counter-clockwise rotation by `ang` radians."""
    return _matrix.Matrix([[cos(ang), -sin(ang)], [sin(ang), cos(ang)]])


@pyfunc
def rotation3d(ang_x, ang_y, ang_z):
    """4x4 rotation from angles about x, y, z. Not available yet: needs qd.Matrix."""
    return _no_vectors.rotation3d()


@pyfunc
def vdir(ang):
    """The 2-D unit vector at angle `ang`."""
    return _matrix.Vector([cos(ang), sin(ang)])


@pyfunc
def cmul(z1, z2):
    """Product of two complex numbers stored as vec2."""
    return _matrix.Vector([z1[0] * z2[0] - z1[1] * z2[1], z1[0] * z2[1] + z1[1] * z2[0]])


@pyfunc
def cconj(z):
    """Complex conjugate of a vec2."""
    return _matrix.Vector([z[0], -z[1]])


@pyfunc
def cdiv(z1, z2):
    """Quotient of two complex numbers stored as vec2."""
    d = z2[0] * z2[0] + z2[1] * z2[1]
    return _matrix.Vector(
        [(z1[0] * z2[0] + z1[1] * z2[1]) / d, (z1[1] * z2[0] - z1[0] * z2[1]) / d]
    )


@pyfunc
def cexp(z):
    """Complex exponential of a vec2."""
    r = exp(z[0])
    return _matrix.Vector([r * cos(z[1]), r * sin(z[1])])


@pyfunc
def cinv(z):
    """Complex reciprocal of a vec2."""
    d = z[0] * z[0] + z[1] * z[1]
    return _matrix.Vector([z[0] / d, -z[1] / d])


@pyfunc
def clog(z):
    """Complex logarithm (principal branch) of a vec2."""
    return _matrix.Vector([log(sqrt(z[0] * z[0] + z[1] * z[1])), atan2(z[1], z[0])])


@pyfunc
def cpow(z, n):
    """Complex power ``z ** n`` of a vec2 (principal branch)."""
    r = pow(sqrt(z[0] * z[0] + z[1] * z[1]), n)
    t = atan2(z[1], z[0]) * n
    return _matrix.Vector([r * cos(t), r * sin(t)])


@pyfunc
def csqrt(z):
    """Complex square root (principal branch) of a vec2."""
    r = sqrt(sqrt(z[0] * z[0] + z[1] * z[1]))
    t = atan2(z[1], z[0]) * 0.5
    return _matrix.Vector([r * cos(t), r * sin(t)])


__all__ = [
    # constants
    "e",
    "pi",
    "inf",
    "nan",
    # re-exported builtins
    "acos",
    "asin",
    "atan2",
    "ceil",
    "cos",
    "exp",
    "floor",
    "log",
    "max",
    "min",
    "pow",
    "round",
    "sin",
    "sqrt",
    "tan",
    "tanh",
    # scalar functions
    "mix",
    "clamp",
    "step",
    "fract",
    "smoothstep",
    "sign",
    "log2",
    "degrees",
    "radians",
    "mod",
    "isinf",
    "isnan",
    # bit operations
    "popcnt",
    "clz",
    "ffs",
    "fns",
    # vectors and matrices (not available yet)
    "vec2",
    "vec3",
    "vec4",
    "ivec2",
    "ivec3",
    "ivec4",
    "uvec2",
    "uvec3",
    "uvec4",
    "mat2",
    "mat3",
    "mat4",
    "normalize",
    "length",
    "distance",
    "dot",
    "cross",
    "reflect",
    "refract",
    "determinant",
    "inverse",
    "eye",
    "translate",
    "scale",
    "rot_by_axis",
    "rot_yaw_pitch_roll",
    "rotation2d",
    "rotation3d",
    "vdir",
    "cmul",
    "cconj",
    "cdiv",
    "cexp",
    "cinv",
    "clog",
    "cpow",
    "csqrt",
]
