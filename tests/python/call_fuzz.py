"""A call fuzzer for the two launch paths of a kernel.

A kernel call launches from the C fast path (quadrants._core.Dispatcher) when an earlier call
registered a launch that the arguments match, and from the Python path otherwise. The two must
agree on every argument: the same exception type and message, or the same result. This module
calls a fixed set of kernels, in random order and many times in one process, with random
arguments -- array kind (C- and Fortran-ordered, strided and 0-d NumPy arrays, qd.ndarrays,
torch tensors where torch is installed, lists, scalars, None), dtype, ndim, shape, vector/matrix element shape -- once through the normal
call and once through the Python path on an identical copy, and checks:

- both outcomes are the same (exception type and message, or returned value and array contents);
- a call that succeeds gives what NumPy computes for that kernel (float64 models, compared
  within the precision of the array's dtype);
- no byte around or between the elements of a NumPy argument changed (every NumPy array lives
  inside a larger buffer filled with a canary value).

Standalone: ``python tests/python/call_fuzz.py --cases 10000 --seed 1 [--arch cpu]`` prints the
counts and exits non-zero on any disagreement. tests/python/test_call_fuzz.py runs a bounded
version.
"""

import argparse
import sys
import time
import warnings

import numpy as np

import quadrants as qd
from quadrants import _kernel

try:  # torch tensors are one more argument kind where torch is installed
    import torch
except ImportError:
    torch = None

CANARY = 0x5A  # every byte of the memory around a NumPy argument
PAD = 64  # canary bytes on each side

# Element dtypes drawn for arrays (and what the kernels' models compute in).
DTYPES = [np.float32, np.float64, np.int32, np.int64, np.int16, np.uint8, np.float16]

vec3 = qd.types.vector(3, qd.f32)
mat23 = qd.types.matrix(2, 3, qd.f32)


# --- the kernels, each with a NumPy model of what it does to valid arguments ---


@qd.kernel
def scale(a: qd.types.ndarray(dtype=qd.f32, ndim=1), s: qd.f32):
    for i in a:
        a[i] = a[i] * s + 1.0


@qd.kernel
def shift_vec3(a: qd.types.ndarray(dtype=vec3, ndim=1)):
    for i in a:
        a[i] = a[i] * 2.0 + qd.Vector([1.0, 2.0, 3.0])


@qd.kernel
def triple_mat23(a: qd.types.ndarray(dtype=mat23, ndim=2)):
    for i, j in a:
        a[i, j] = a[i, j] * 3.0


@qd.kernel
def increment_2d(a: qd.types.ndarray(ndim=2)):
    for i, j in a:
        a[i, j] = a[i, j] + 1


@qd.kernel
def double_any(a: qd.types.ndarray()):
    for I in qd.grouped(a):
        a[I] = a[I] * 2


@qd.kernel
def total_plus(a: qd.types.ndarray(dtype=qd.i32, ndim=1), k: qd.i32) -> qd.i32:
    s = 0
    for i in a:
        s += a[i]
    return s + k


@qd.kernel
def two_arrays(a: qd.types.ndarray(dtype=qd.f64, ndim=1), b: qd.types.ndarray(dtype=qd.f64, ndim=1)):
    for i in a:
        a[i] += 1.0
    for j in b:
        b[j] *= 2.0


@qd.kernel
def add_template(a: qd.types.ndarray(dtype=qd.f32, ndim=1), t: qd.template()):
    for i in a:
        a[i] += t


def _wrap_i32(x):
    return int(np.int64(x).astype(np.int32)) if -(2**63) <= x < 2**63 else None


# name -> (kernel, parameter specs, model). A parameter spec says what a valid argument is:
# ("array", dtype or None, ndim or None, element shape), ("scalar", "f"|"i"), ("template",).
# The model takes the arguments as NumPy values (float64 copies of the arrays) and returns
# (new arrays, returned value).
KERNELS = {
    "scale": (
        scale,
        [("array", np.float32, 1, ()), ("scalar", "f")],
        lambda a, s: ([a * np.float32(s) + 1.0], None),
    ),
    "shift_vec3": (
        shift_vec3,
        [("array", np.float32, 1, (3,))],
        lambda a: ([a * 2.0 + np.array([1.0, 2.0, 3.0])], None),
    ),
    "triple_mat23": (
        triple_mat23,
        [("array", np.float32, 2, (2, 3))],
        lambda a: ([a * 3.0], None),
    ),
    "increment_2d": (increment_2d, [("array", None, 2, ())], lambda a: ([a + 1], None)),
    "double_any": (double_any, [("array", None, None, ())], lambda a: ([a * 2], None)),
    "total_plus": (
        total_plus,
        [("array", np.int32, 1, ()), ("scalar", "i")],
        lambda a, k: ([a], _wrap_i32(int(a.astype(np.int64).sum()) + int(k))),
    ),
    "two_arrays": (
        two_arrays,
        [("array", np.float64, 1, ()), ("array", np.float64, 1, ())],
        lambda a, b: ([a + 1.0, b * 2.0], None),
    ),
    "add_template": (
        add_template,
        [("array", np.float32, 1, ()), ("template",)],
        lambda a, t: ([a + t], None),
    ),
}


# --- arguments ---


class Arg:
    """One generated argument: how to build a fresh copy of it, and how to read it back."""

    def __init__(self, kind, dtype=None, shape=None, values=None, scalar=None, element=()):
        self.kind = kind  # "c", "f", "strided", "qd", "torch", "list", "scalar", "none"
        self.dtype = dtype
        self.shape = shape
        self.values = values  # the initial contents (a C-ordered NumPy array)
        self.scalar = scalar
        self.element = element  # qd: the trailing element axes it is made with; torch: device

    def describe(self):
        if self.kind in ("scalar", "none"):
            return f"{self.kind}({self.scalar!r})"
        return f"{self.kind}[{np.dtype(self.dtype).name}]{tuple(self.shape)}"

    def build(self):
        """(the argument object, the buffer holding it with its canaries or None)."""
        if self.kind == "scalar":
            return self.scalar, None
        if self.kind == "none":
            return None, None
        if self.kind == "list":
            return self.values.tolist(), None
        if self.kind == "qd":
            return self._build_qd(), None
        if self.kind == "torch":
            tensor = torch.from_numpy(self.values.copy())
            return (tensor.cuda() if self.element == "cuda" else tensor), None
        itemsize = np.dtype(self.dtype).itemsize
        count = int(np.prod(self.shape, dtype=np.int64))
        stride = 2 if self.kind == "strided" else 1
        nbytes = max(count * stride, 1) * itemsize
        buffer = np.full(2 * PAD + nbytes, CANARY, np.uint8)
        flat = buffer[PAD : PAD + nbytes].view(self.dtype)
        if self.kind == "c":
            array = flat[:count].reshape(self.shape)
        elif self.kind == "f":
            array = flat[:count].reshape(tuple(reversed(self.shape))).T
        else:
            array = flat[: count * 2 : 2].reshape(self.shape)
        array[...] = self.values
        return array, buffer

    def _build_qd(self):
        qd_dtype = {
            np.float32: qd.f32, np.float64: qd.f64, np.int32: qd.i32, np.int64: qd.i64,
            np.int16: qd.i16, np.uint8: qd.u8, np.float16: qd.f16,
        }[self.dtype]
        outer = tuple(self.shape[: len(self.shape) - len(self.element)])
        if len(self.element) == 1:
            array = qd.Vector.ndarray(self.element[0], qd_dtype, shape=outer)
        elif len(self.element) == 2:
            array = qd.Matrix.ndarray(self.element[0], self.element[1], qd_dtype, shape=outer)
        else:
            array = qd.ndarray(qd_dtype, shape=outer)
        array.from_numpy(self.values)
        return array

    def read(self, obj):
        """The contents after the call (None for non-arrays)."""
        if self.kind in ("c", "f", "strided"):
            return np.array(obj)
        if self.kind == "qd":
            return obj.to_numpy()
        if self.kind == "torch":
            return obj.cpu().numpy()
        return None


def random_values(rng, dtype, shape):
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        lo, hi = max(info.min, -1000), min(info.max, 1000)
        return rng.integers(lo, hi, size=shape, endpoint=True).astype(dtype)
    return (rng.standard_normal(size=shape) * 10).astype(dtype)


def random_array_arg(rng, spec):
    _, dtype, ndim, element = spec
    valid = rng.random() < 0.6
    if dtype is None or not valid or rng.random() < 0.1:
        dtype = DTYPES[rng.integers(len(DTYPES))]
    if ndim is None:
        ndim = int(rng.integers(1, 4))
    if valid:
        outer = tuple(int(x) for x in rng.integers(0, 5, size=ndim))
        shape = outer + tuple(element)
    else:
        nd = int(rng.integers(0, 5))
        shape = tuple(int(x) for x in rng.integers(0, 5, size=nd))
        if element and rng.random() < 0.5 and nd >= len(element):
            # the right number of axes, elements of another shape (the historic overflow)
            shape = shape[: nd - len(element)] + tuple(
                int(e + rng.choice([-1, 1, 2])) or 1 for e in element
            )
        if rng.random() < 0.05:
            shape = (1,) * max(nd - 1, 0) + (2**14,)
    kind = rng.choice(["c", "c", "c", "qd", "qd", "f", "strided", "list", "scalar", "none"])
    values = np.asarray(random_values(rng, dtype, shape))
    if kind == "scalar":
        return Arg("scalar", scalar=float(rng.standard_normal()))
    if kind == "none":
        return Arg("none")
    if torch is not None and rng.random() < 0.15:
        device = "cuda" if torch.cuda.is_available() and rng.random() < 0.5 else "cpu"
        return Arg("torch", dtype, shape, values, element=device)
    if kind == "qd" and (len(shape) <= len(element) or 0 in shape):
        kind = "c"  # qd.ndarray has no empty or 0-d form"
    qd_element = tuple(element) if kind == "qd" and tuple(shape[len(shape) - len(element):]) == tuple(element) else ()
    return Arg(str(kind), dtype, shape, values, element=qd_element)


def random_scalar_arg(rng, spec):
    choices = [
        lambda: float(rng.standard_normal() * 100),
        lambda: int(rng.integers(-1000, 1000)),
        lambda: bool(rng.integers(2)),
        lambda: np.float32(rng.standard_normal()),
        lambda: np.int64(rng.integers(-1000, 1000)),
        lambda: int(rng.choice([2**31, -(2**31) - 1, 2**70])),
        lambda: "3",
        lambda: None,
        lambda: [1.0],
    ]
    weights = np.array([4, 4, 1, 1, 1, 0.5, 0.5, 0.5, 0.5])
    pick = rng.choice(len(choices), p=weights / weights.sum())
    return Arg("scalar", scalar=choices[pick]())


def random_template_arg(rng):
    value = [1, 2, 0.5, 3, -1][int(rng.integers(5))]
    return Arg("scalar", scalar=value)


def random_case(rng):
    name = list(KERNELS)[int(rng.integers(len(KERNELS)))]
    _, specs, _ = KERNELS[name]
    args = []
    for spec in specs:
        if spec[0] == "array":
            args.append(random_array_arg(rng, spec))
        elif spec[0] == "scalar":
            args.append(random_scalar_arg(rng, spec))
        else:
            args.append(random_template_arg(rng))
    return name, args


# --- running a case ---


def outcome(call):
    try:
        return ("ok", call())
    except Exception as exc:  # noqa: BLE001 - the outcome is the exception
        return ("raise", type(exc).__name__, str(exc).strip())


def canaries_intact(buffer, arg, obj):
    if buffer is None:
        return True
    mask = np.ones(buffer.size, bool)
    if arg.kind in ("c", "f", "strided") and obj.size:
        start = obj.__array_interface__["data"][0] - buffer.__array_interface__["data"][0]
        itemsize = obj.itemsize
        count = obj.size
        step = 2 if arg.kind == "strided" else 1
        for k in range(count):
            offset = start + k * step * itemsize
            mask[offset : offset + itemsize] = False
    return bool((buffer[mask] == CANARY).all())


def tolerance(dtype):
    return {np.float16: 2e-2, np.float32: 1e-5}.get(dtype, 1e-12)


def check_model(name, args, fast_after, value):
    """None when the results are what NumPy computes, else a description of the difference."""
    _, _, model = KERNELS[name]
    inputs = []
    for arg in args:
        if arg.kind in ("c", "f", "strided", "qd", "torch"):
            inputs.append(arg.values.astype(np.float64) if arg.values.dtype.kind == "f"
                          else arg.values.astype(np.int64))
        else:
            inputs.append(arg.scalar)
    try:
        expected_arrays, expected_value = model(*inputs)
    except Exception as exc:  # noqa: BLE001 - a model that cannot take the input checks nothing
        return None if not isinstance(exc, AssertionError) else str(exc)
    array_kinds = ("c", "f", "strided", "qd", "torch")
    arrays = [a for a, arg in zip(fast_after, args) if arg.kind in array_kinds]
    for got, want, arg in zip(arrays, expected_arrays, [a for a in args if a.kind in array_kinds]):
        want = np.asarray(want)
        if np.issubdtype(arg.dtype, np.integer):
            want = want.astype(np.int64).astype(arg.dtype)  # wrap-around
            if not np.array_equal(got, want):
                return f"array differs from NumPy: {got!r} vs {want!r}"
        else:
            tol = tolerance(arg.dtype)
            if not np.allclose(got.astype(np.float64), want, rtol=tol, atol=tol * 10,
                               equal_nan=True):
                if np.dtype(arg.dtype) == np.float16 and not np.isfinite(got).all():
                    continue  # f16 overflow
                return f"array differs from NumPy: {got!r} vs {want!r}"
    if expected_value is not None and value != expected_value:
        return f"returned {value!r}, NumPy gives {expected_value!r}"
    return None


def run_case(name, args, counts):
    """None when both paths agree (and agree with NumPy), else a description."""
    kernel = KERNELS[name][0]
    built_fast = [arg.build() for arg in args]
    built_slow = [arg.build() for arg in args]
    fast = outcome(lambda: kernel(*[obj for obj, _ in built_fast]))
    slow = outcome(lambda: _kernel._launch_fallback(kernel, *[obj for obj, _ in built_slow]))
    for (obj, buffer), arg in list(zip(built_fast, args)) + list(zip(built_slow, args)):
        if not canaries_intact(buffer, arg, obj):
            return f"memory around {arg.describe()} changed"
    counts["ok" if fast[0] == "ok" else "raised"] += 1
    if fast[0] != slow[0] or (fast[0] == "raise" and fast[1:] != slow[1:]):
        return f"fast path {fast!r} != Python path {slow!r}"
    if fast[0] == "raise":
        if fast[1] in ("SystemError", "AssertionError", "KeyError", "AttributeError",
                       "IndexError", "UnboundLocalError", "NameError"):
            return f"internal error {fast!r}"
        return None
    after_fast = [arg.read(obj) for arg, (obj, _) in zip(args, built_fast)]
    after_slow = [arg.read(obj) for arg, (obj, _) in zip(args, built_slow)]
    for a, b in zip(after_fast, after_slow):
        if a is not None and not np.array_equal(a, b, equal_nan=True):
            return "fast and Python paths wrote different values"
    if fast[1] != slow[1] and not (fast[1] != fast[1] and slow[1] != slow[1]):
        return f"fast path returned {fast[1]!r}, Python path {slow[1]!r}"
    return check_model(name, args, after_fast, fast[1])


def fuzz(cases, seed, log=None):
    """Runs `cases` random calls; returns the counts (dict) and the failures (list of str)."""
    rng = np.random.default_rng(seed)
    counts = {"cases": 0, "ok": 0, "raised": 0, "fast": 0}
    failures = []
    slow_calls = [0]
    original = _kernel.Kernel._launch

    def counting(self, args, kwargs):
        slow_calls[0] += 1
        return original(self, args, kwargs)

    _kernel.Kernel._launch = counting
    try:
        for index in range(cases):
            name, args = random_case(rng)
            before = slow_calls[0]
            try:
                problem = run_case(name, args, counts)
            except Exception as exc:  # noqa: BLE001 - a failure of the harness is reported too
                problem = f"harness error {type(exc).__name__}: {exc}"
            counts["cases"] += 1
            # run_case makes one normal call and one forced Python-path call
            if slow_calls[0] - before == 1:
                counts["fast"] += 1
            if problem:
                failures.append(f"case {index}: {name}({', '.join(a.describe() for a in args)}): "
                                f"{problem}")
                if log:
                    log(failures[-1])
    finally:
        _kernel.Kernel._launch = original
    return counts, failures


def main():
    warnings.simplefilter("ignore")  # precision warnings of the generic kernels
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--arch", default="cpu")
    options = parser.parse_args()
    seed = options.seed if options.seed is not None else int(time.time())
    qd.init(arch=getattr(qd, options.arch), offline_cache=False)
    start = time.perf_counter()
    counts, failures = fuzz(options.cases, seed, log=lambda line: print(line, flush=True))
    elapsed = time.perf_counter() - start
    print(f"seed {seed}: {counts['cases']} cases, {counts['fast']} launched from the fast path, "
          f"{counts['ok']} ran, {counts['raised']} raised, {len(failures)} failures, "
          f"{elapsed:.1f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
