"""Helpers of the CPU code generator tests (tests/codegen).

The tests run hand-written QIR kernels through quadrants._core._testing.run_qir (parse, the
default passes instantiate,inline,constfold,dce, CPU code generation, launch) on random NumPy
inputs and compare every element with a NumPy or pure-Python reference. Kernels live in
tests/codegen/qir/*.qir or are generated from the templates below, one per type and op.
"""

import pathlib

import numpy as np

from quadrants._core import _testing

QIR_DIR = pathlib.Path(__file__).resolve().parent / "qir"

# run_qir / compile_qir are registered by qd_py_testing_add_run (csrc/python/testing_run.c),
# called from csrc/python/testing.c. Without them conftest.py skips the tests, and
# test_kernels.py::test_run_qir_is_registered fails, once.
HAVE_RUN_QIR = hasattr(_testing, "run_qir")

# QIR scalar type -> NumPy dtype of its memory (bf16 is kept as raw uint16 bits).
DTYPES = {
    "u1": np.bool_,
    "i8": np.int8,
    "i16": np.int16,
    "i32": np.int32,
    "i64": np.int64,
    "u8": np.uint8,
    "u16": np.uint16,
    "u32": np.uint32,
    "u64": np.uint64,
    "f16": np.float16,
    "bf16": np.uint16,
    "f32": np.float32,
    "f64": np.float64,
}
INT_TYPES = ["i8", "i32", "i64", "u8", "u32", "u64"]
FLOAT_TYPES = ["f32", "f64"]


def load(name):
    """The text of tests/codegen/qir/<name>."""
    return (QIR_DIR / name).read_text()


def run(text, kernel, args, **kwargs):
    """Compiles and runs `kernel` once; returns its results (kernel_ret values)."""
    return _testing.run_qir(text, kernel, list(args), **kwargs)


def bits(ty):
    return 1 if ty == "u1" else int(ty[1:]) if ty[0] != "b" else 16


def is_signed(ty):
    return ty.startswith("i")


def is_float(ty):
    return ty.startswith("f") or ty == "bf16"


def wrap(value, ty):
    """Python int `value` wrapped to integer type ty (two's complement)."""
    width = bits(ty)
    value &= (1 << width) - 1
    if is_signed(ty) and value >> (width - 1):
        value -= 1 << width
    return value


def random_array(ty, n, rng, special=True):
    """n random values of type ty; with `special`, edge values (0, -1, extremes) mixed in."""
    dtype = DTYPES[ty]
    if is_float(ty):
        a = (rng.standard_normal(n) * 100).astype(dtype)
        if special and n >= 8:
            a[:8] = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.75, 1e-3], dtype=dtype)
        return a
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True)
    if special and n >= 8:
        edge = [0, 1, info.max, info.min, 2, 3, info.max - 1, info.min + 1]
        if is_signed(ty):
            edge[1] = -1
        a[:8] = np.array(edge, dtype=dtype)
    return a


def elementwise(op, in_ty, out_ty=None, nargs=2, extra=""):
    """A kernel @k(x, [y,] out) doing out[i] = op x[i], y[i] over x's extent."""
    out_ty = out_ty or in_ty
    params = ["%x: ndarray<{0}, 1>".format(in_ty)]
    loads = [
        "      %px = elem_ptr %x, %i : ptr<{0}, global>".format(in_ty),
        "      %a = load %px : {0}".format(in_ty),
    ]
    operands = "%a"
    if nargs == 2:
        params.append("%y: ndarray<{0}, 1>".format(in_ty))
        loads += [
            "      %py = elem_ptr %y, %i : ptr<{0}, global>".format(in_ty),
            "      %b = load %py : {0}".format(in_ty),
        ]
        operands = "%a, %b"
    params.append("%out: ndarray<{0}, 1>".format(out_ty))
    lines = [
        "kernel @k({0}) {{".format(", ".join(params)),
        "  task range_for {",
        "    %zero = const 0 : i32",
        "    %n = shape %x, 0 : i32",
        "    parallel_for %i = %zero to %n {",
        *loads,
        "      %r = {0} {1}{2} : {3}".format(op, operands, extra, out_ty),
        "      %po = elem_ptr %out, %i : ptr<{0}, global>".format(out_ty),
        "      store %po, %r",
        "    }",
        "  }",
        "}",
        "",
    ]
    return "\n".join(lines)
