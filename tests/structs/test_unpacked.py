"""Seed 000 / spec 1.4: vector members with unpacked=True. @qd.dataclass expands member r into
scalar members _r0 .. _r{N-1}; obj.r[i] with a Python int or qd.static index is member _r<i>, in
kernels (variables, nested structs, struct fields) and in Python scope; every other use raises
QuadrantsSyntaxError. The generated LLVM IR equals that of N hand-written scalar members."""

import dataclasses
import glob
import os
import re
import types

import numpy as np
import pytest

import quadrants as qd

from .helpers import check_line, rng

NDArray = qd.types.NDArray
THIS_FILE = os.path.abspath(__file__)


def unpacked_vector(n, dtype):
    """qd.types.vector(n, dtype, unpacked=True); a minimal stand-in with the same attributes
    while vector types are not available."""
    try:
        return qd.types.vector(n, dtype, unpacked=True)
    except NotImplementedError:
        return types.SimpleNamespace(n=n, m=1, dtype=dtype, unpacked=True)


HAS_VECTOR_TYPES = not isinstance(unpacked_vector(2, qd.f32), types.SimpleNamespace)
needs_vector_types = pytest.mark.skipif(not HAS_VECTOR_TYPES, reason="qd.types.vector not available")

N = 8


@qd.dataclass
class Tile:
    r: unpacked_vector(N, qd.f32)


@qd.dataclass
class TwoTiles:
    a: unpacked_vector(32, qd.f32)
    b: unpacked_vector(32, qd.f32)
    scale: qd.f32


@qd.dataclass
class Mixed:
    first: qd.i32
    r: unpacked_vector(4, qd.f64)
    last: qd.i64

    @qd.func
    def total(self):
        s = qd.f64(0.0)
        for i in qd.static(range(4)):
            s += self.r[i]
        return s + self.first + self.last


@qd.dataclass
class Outer:
    tag: qd.i32
    inner: Mixed


# --- expansion ---


def test_expansion_and_member_order():
    assert Tile._qd_member_names == tuple(f"_r{i}" for i in range(N))
    assert len(TwoTiles._qd_member_names) == 65
    assert TwoTiles._qd_member_names[:2] == ("_a0", "_a1")
    assert TwoTiles._qd_member_names[32] == "_b0" and TwoTiles._qd_member_names[-1] == "scale"
    assert Mixed._qd_member_names == ("first", "_r0", "_r1", "_r2", "_r3", "last")
    assert Mixed.members["_r2"] is qd.f64


def test_python_scope_indexing():
    m = Mixed(r=[1.5, 2.5, 3.5, 4.5], first=1)
    assert [m.r[i] for i in range(4)] == [1.5, 2.5, 3.5, 4.5]
    m.r[2] = 7
    assert m._r2 == 7.0 and len(m.r) == 4
    with pytest.raises(qd.QuadrantsSyntaxError, match="unpacked vector index out of bounds"):
        m.r[4]
    assert Tile()._r5 == 0.0


# --- kernels ---


def test_static_loop_read_write():
    v = rng.standard_normal(N).astype(np.float32)
    out = np.zeros(N, dtype=np.float32)

    @qd.kernel
    def k(v: NDArray[qd.f32, 1], out: NDArray[qd.f32, 1]):
        t = Tile()
        for i in qd.static(range(N)):
            t.r[i] = v[i] * 2
        t.r[0] += 1.0
        t.r[qd.static(N - 1)] -= 1.0
        for i in qd.static(range(N)):
            out[i] = t.r[i] + t.r[N - 1 - i]

    k(v, out)
    t = v * np.float32(2)
    t[0] += np.float32(1)
    t[N - 1] -= np.float32(1)
    # fast math may fuse or reassociate: an error of a few ulps of the addends, which is large
    # relative to a sum that nearly cancels
    np.testing.assert_allclose(out, t + t[::-1], rtol=1e-6, atol=1e-6 * np.abs(t).max())


def test_methods_nested_and_kernel_arguments():
    values = rng.standard_normal(4)
    first, last = (int(x) for x in rng.integers(-1000, 1000, size=2))

    @qd.kernel
    def k(m: Mixed) -> qd.f64:
        o = Outer(3, m)
        o.inner.r[1] *= 2.0
        return o.inner.total() + o.tag + o.inner.r[1]

    result = k(Mixed(first=first, r=values, last=last))
    expected = values.sum() + values[1] + first + last + 3 + 2 * values[1]
    np.testing.assert_allclose(result, expected, rtol=1e-12)


def test_struct_fields():
    n = 50
    f = Mixed.field(shape=n)
    g = Outer.field(shape=n)
    data = rng.standard_normal((4, n))
    for i in range(4):
        getattr(f, f"_r{i}").from_numpy(data[i])
    out = np.zeros(n)

    @qd.kernel
    def k(out: NDArray[qd.f64, 1]):
        for i in f:
            f[i].r[3] = f[i].r[0] + f[i].r[1]
            g[i].inner.r[2] = f[i].r[3] * 2
            g[i].inner.first = i
            out[i] = g[i].inner.total() + f[i].total()

    k(out)
    r3 = data[0] + data[1]
    assert f[7].r[3] == r3[7]
    assert g[7].inner.r[2] == 2 * r3[7]
    np.testing.assert_array_equal(f.to_numpy()["_r3"], r3)
    np.testing.assert_allclose(
        out, 2 * r3 + np.arange(n) + data[0] + data[1] + data[2] + r3, rtol=1e-12
    )


# --- misuse ---


@qd.func
def _takes(x):
    return x


def _misuse_kernels():
    @qd.kernel
    def runtime_index(j: qd.i32) -> qd.f32:
        t = Tile()
        return t.r[j]  # <E-runtime>

    @qd.kernel
    def out_of_range() -> qd.f32:
        t = Tile()
        return t.r[N]  # <E-range>

    @qd.kernel
    def arithmetic() -> qd.f32:
        t = Tile()
        u = t.r + 1  # <E-arith>
        return 0.0

    @qd.kernel
    def swizzle() -> qd.f32:
        t = Tile()
        return t.r.x  # <E-swizzle>

    @qd.kernel
    def reduction() -> qd.f32:
        t = Tile()
        return t.r.sum()  # <E-reduce>

    @qd.kernel
    def to_func() -> qd.f32:
        t = Tile()
        return _takes(t.r)  # <E-func>

    @qd.kernel
    def copy() -> qd.f32:
        t = Tile()
        c = t.r  # <E-copy>
        return 0.0

    @qd.kernel
    def assign_unit() -> qd.f32:
        t = Tile()
        t.r = Tile().r  # <E-assign>
        return 0.0

    return [
        (runtime_index, (3,), "runtime", "requires a python-int index (possibly via qd.static)"),
        (out_of_range, (), "range", "unpacked vector index out of bounds"),
        (arithmetic, (), "arith", "unpacked vector member"),
        (swizzle, (), "swizzle", "unpacked vector member"),
        (reduction, (), "reduce", "unpacked vector member"),
        (to_func, (), "func", "unpacked vector member"),
        (copy, (), "copy", "unpacked vector member"),
        (assign_unit, (), "assign", "unpacked vector member"),
    ]


@pytest.mark.parametrize("case", range(8))
def test_misuse_in_kernels(case):
    kernel, args, marker, message = _misuse_kernels()[case]
    with pytest.raises(qd.QuadrantsSyntaxError, match=re.escape(message)) as ei:
        kernel(*args)
    check_line(ei.value, THIS_FILE, f"<E-{marker}>")


def test_synthetic_name_collision_before_and_after():
    with pytest.raises(qd.QuadrantsSyntaxError, match="collides with a synthetic member"):

        @qd.dataclass
        class Before:
            _r1: qd.f32
            r: unpacked_vector(4, qd.f32)

    with pytest.raises(qd.QuadrantsSyntaxError, match="collides with a synthetic member"):

        @qd.dataclass
        class After:
            r: unpacked_vector(4, qd.f32)
            _r3: qd.i32


def test_parameter_annotations_raise():
    T = unpacked_vector(4, qd.f32)
    with pytest.raises(qd.QuadrantsSyntaxError, match="unpacked=True"):

        @qd.kernel
        def k(x: T):
            pass

    with pytest.raises(qd.QuadrantsSyntaxError, match="unpacked=True"):

        @qd.func
        def f(x: T):
            return x


def test_python_dataclass_member_raises():
    @dataclasses.dataclass
    class Plain:
        r: unpacked_vector(4, qd.f32)

    with pytest.raises(qd.QuadrantsSyntaxError, match="unpacked=True"):

        @qd.kernel
        def k(p: Plain):
            pass


@needs_vector_types
def test_instantiating_the_type_raises():
    T = qd.types.vector(4, qd.f32, unpacked=True)
    for make in (lambda: T(1, 2, 3, 4), lambda: T.field(shape=3), lambda: T.ndarray(shape=3)):
        with pytest.raises(qd.QuadrantsSyntaxError, match="unpacked=True"):
            make()

    @qd.kernel
    def k() -> qd.f32:
        v = T(1.0, 2.0, 3.0, 4.0)  # <E-instantiate>
        return 0.0

    with pytest.raises(qd.QuadrantsSyntaxError, match="unpacked=True") as ei:
        k()
    check_line(ei.value, THIS_FILE, "<E-instantiate>")


# --- the generated code equals hand-written scalars ---


@qd.dataclass
class Scalars:
    r0: qd.f32
    r1: qd.f32
    r2: qd.f32
    r3: qd.f32
    r4: qd.f32
    r5: qd.f32
    r6: qd.f32
    r7: qd.f32


def _unpacked_kernel():
    @qd.kernel
    def k(x: NDArray[qd.f32, 1], y: NDArray[qd.f32, 1]):
        for i in range(x.shape[0]):
            t = Tile()
            for j in qd.static(range(N)):
                t.r[j] = x[i] * (j + 1)
            for j in qd.static(range(1, N)):
                t.r[j] += t.r[j - 1]
            y[i] = t.r[N - 1] - t.r[0]

    return k


def _scalar_kernel():
    @qd.kernel
    def k(x: NDArray[qd.f32, 1], y: NDArray[qd.f32, 1]):
        for i in range(x.shape[0]):
            t = Scalars()
            t.r0 = x[i] * 1
            t.r1 = x[i] * 2
            t.r2 = x[i] * 3
            t.r3 = x[i] * 4
            t.r4 = x[i] * 5
            t.r5 = x[i] * 6
            t.r6 = x[i] * 7
            t.r7 = x[i] * 8
            t.r1 += t.r0
            t.r2 += t.r1
            t.r3 += t.r2
            t.r4 += t.r3
            t.r5 += t.r4
            t.r6 += t.r5
            t.r7 += t.r6
            y[i] = t.r7 - t.r0

    return k


def _optimized_ir(arch, make_kernel, directory):
    os.makedirs(directory)
    cwd = os.getcwd()
    os.chdir(directory)
    try:
        qd.reset()
        qd.init(arch=getattr(qd, arch), print_kernel_llvm_ir_optimized=True, offline_cache=False)
        x = rng.standard_normal(100).astype(np.float32)
        y = np.zeros_like(x)
        make_kernel()(x, y)
        expected = x * np.float32(N * (N + 1) // 2) - x
        np.testing.assert_allclose(y, expected, rtol=1e-5)
    finally:
        os.chdir(cwd)
    dumps = sorted(glob.glob(os.path.join(directory, "*llvm_ir_optimized*")))
    assert dumps
    text = "".join(open(path).read() for path in dumps)
    # The module identifier and the source file name carry the dump's name.
    return [
        line
        for line in text.splitlines()
        if not line.startswith(("; ModuleID", "source_filename"))
    ]


def test_llvm_ir_equals_hand_written_scalars(arch, tmp_path):
    unpacked = _optimized_ir(arch, _unpacked_kernel, str(tmp_path / "unpacked"))
    scalars = _optimized_ir(arch, _scalar_kernel, str(tmp_path / "scalars"))
    assert unpacked == scalars
