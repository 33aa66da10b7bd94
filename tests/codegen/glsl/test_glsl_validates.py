"""The GLSL of representative Python kernels passes glslangValidator.

Each kernel is compiled (and run) on the CPU with keep_qir; its final QIR, the input of the Vulkan
backend's code generator, goes through quadrants._core._testing.qir_to_glsl, and every shader it
makes must compile with glslangValidator (Vulkan 1.2). Without glslangValidator on PATH the
shaders are still generated (which catches code generator errors) but not validated.
"""

import os

import numpy as np
import pytest

import quadrants as qd
from quadrants import _runtime
from quadrants._core import _testing

from glsl_helpers import assert_valid, kernel_name, kernel_qirs

ALL_TYPES = [qd.i8, qd.i16, qd.i32, qd.i64, qd.u8, qd.u16, qd.u32, qd.u64, qd.f16, qd.f32, qd.f64]
INT_TYPES = [qd.i8, qd.i16, qd.i32, qd.i64, qd.u8, qd.u16, qd.u32, qd.u64]
NP = {qd.i8: np.int8, qd.i16: np.int16, qd.i32: np.int32, qd.i64: np.int64, qd.u8: np.uint8,
      qd.u16: np.uint16, qd.u32: np.uint32, qd.u64: np.uint64, qd.f16: np.float16,
      qd.f32: np.float32, qd.f64: np.float64}


@pytest.fixture(autouse=True)
def keep_qir(monkeypatch):
    """A CPU runtime (SIMT emulated) whose kernels keep their final QIR."""
    qd.init(arch=qd.cpu, cpu_simt=True)
    orig = _runtime.compile_options
    monkeypatch.setattr(_runtime, "compile_options",
                        lambda: dict(orig(), keep_qir=1, offline_cache=False))
    yield
    qd.reset()


def check(kernel, options=None):
    """Emits and validates the GLSL of every compiled specialization of `kernel`; returns the
    qir_to_glsl results."""
    results = []
    qirs = kernel_qirs(kernel)
    assert qirs, "the kernel was not compiled"
    for qir in qirs:
        result = _testing.qir_to_glsl(qir, kernel_name(qir), options)
        assert_valid(result)
        results.append(result)
    return results


@pytest.mark.parametrize("dt", ALL_TYPES, ids=str)
def test_arithmetic_in_every_type(dt):
    is_float = dt in (qd.f16, qd.f32, qd.f64)
    is_unsigned = dt in (qd.u8, qd.u16, qd.u32, qd.u64)

    @qd.kernel
    def k(x: qd.types.ndarray(dt, ndim=1), y: qd.types.ndarray(dt, ndim=1)):
        for i in range(x.shape[0]):
            a, b = x[i], y[i]
            y[i] = a + b * a - b
            x[i] = a / b if qd.static(is_float) else a // b
            y[i] = a % b
            x[i] = max(a, b) - min(a, b)
            x[i] = a if qd.static(is_unsigned) else abs(a)
            x[i] = a ** 2
            x[i] = a if a < b else b
            x[i] = a if a != b else b
            x[i] = a if a == b or a >= b else b

    n = 8
    k(np.ones(n, NP[dt]), np.ones(n, NP[dt]))
    check(k)


@pytest.mark.parametrize("dt", INT_TYPES, ids=str)
def test_integer_bit_operations(dt):
    @qd.kernel
    def k(x: qd.types.ndarray(dt, ndim=1), s: qd.types.ndarray(qd.i32, ndim=1)):
        for i in range(x.shape[0]):
            a = x[i]
            x[i] = (a << 3) ^ (a >> 1) | (a & 7)
            x[i] = ~a
            x[i] = qd.bit_shr(a, 2)
            s[i] = qd.math.popcnt(a) + qd.math.clz(a)

    k(np.ones(4, NP[dt]), np.zeros(4, np.int32))
    check(k)


def test_casts_between_every_pair():
    @qd.kernel
    def k(x: qd.types.ndarray(qd.f32, ndim=1), out: qd.types.ndarray(qd.f64, ndim=1)):
        for i in range(x.shape[0]):
            s = qd.f64(0.0)
            for t in qd.static(ALL_TYPES):
                v = qd.cast(x[i], t)
                for u in qd.static(ALL_TYPES):
                    s += qd.cast(qd.cast(v, u), qd.f64)
            s += qd.cast(qd.bit_cast(x[i], qd.i32), qd.f64)
            s += qd.cast(qd.bit_cast(qd.cast(x[i], qd.f64), qd.u64), qd.f64)
            out[i] = s

    k(np.ones(4, np.float32), np.zeros(4, np.float64))
    check(k)


@pytest.mark.parametrize("dt", [qd.f16, qd.f32, qd.f64], ids=str)
def test_math_functions(dt):
    @qd.kernel
    def k(x: qd.types.ndarray(dt, ndim=1)):
        for i in range(x.shape[0]):
            a = x[i]
            x[i] = (qd.sqrt(a) + qd.exp(a) + qd.log(a) + qd.sin(a) + qd.cos(a) + qd.tan(a)
                    + qd.tanh(a) + qd.asin(a) + qd.acos(a) + qd.atan2(a, a + 1) + qd.floor(a)
                    + qd.ceil(a) + qd.round(a) + qd.rsqrt(a) + a ** a + qd.atan2(a, 1.0))

    k(np.full(4, 0.5, NP[dt]))
    check(k)
    check(k, {"fast_math": False})
    if dt is not qd.f64:  # without float64: the GLSL builtins, float division and sqrt refined
        check(k, {"float64": False})
        check(k, {"float64": False, "fast_math": False})


def test_math_helpers_emitted_on_use():
    """A double math helper is in a shader only when the kernel uses it, with the helpers it
    calls; f32 math goes through them where the device has float64."""

    @qd.kernel
    def k(x: qd.types.ndarray(qd.f64, ndim=1), y: qd.types.ndarray(qd.f32, ndim=1)):
        for i in range(x.shape[0]):
            x[i] = qd.exp(x[i])
            y[i] = y[i] / (y[i] + 1.0)

    k(np.ones(4), np.ones(4, np.float32))
    source = check(k)[0]["tasks"][0]["source"]
    for name in ("qd_exp_f64", "qd_expcore_f64", "qd_scale_f64", "qd_fdiv_f32", "qd_div_f64",
                 "qd_mul2_f64"):
        assert f" {name}(" in source, name
    for name in ("qd_log", "qd_sin", "qd_pow_f64", "qd_atan", "qd_reduce", "qd_tanh", "qd_expm1"):
        assert name not in source, name

    @qd.kernel
    def s(y: qd.types.ndarray(qd.f32, ndim=1)):
        for i in range(y.shape[0]):
            y[i] = qd.sin(y[i]) / y[i]

    s(np.ones(4, np.float32))
    source = check(s)[0]["tasks"][0]["source"]
    assert "float(qd_sin_f64(double(" in source and "qd_cosk_f64" in source
    source = check(s, {"float64": False})[0]["tasks"][0]["source"]
    assert "double" not in source and "sin(" in source and "qd_fdiv_f32" in source


def test_ifs_loops_break_continue_while():
    @qd.kernel
    def k(x: qd.types.ndarray(qd.i32, ndim=1), n: qd.i32) -> qd.i32:
        total = 0
        for i in range(x.shape[0]):
            j = 0
            while j < n:
                j += 1
                if j % 3 == 0:
                    continue
                if j > 7:
                    break
                x[i] += j
            for t in range(i, n):
                if t == 5:
                    break
                x[i] -= 1
        for i in range(4):
            total += i
        return total

    k(np.zeros(8, np.int32), 10)
    check(k)


def test_nested_range_fors_and_loop_config():
    @qd.kernel
    def k(x: qd.types.ndarray(qd.f32, ndim=2)):
        qd.loop_config(block_dim=64)
        for i, j in qd.ndrange(x.shape[0], x.shape[1]):
            x[i, j] += 1
        for i in range(x.shape[0]):
            for j in range(x.shape[1]):
                x[i, j] *= 2

    k(np.zeros((4, 5), np.float32))
    (result,) = check(k)
    assert [t["block_dim"] for t in result["tasks"]] == [64, 128]


@pytest.mark.parametrize("shape", [(), (7,), (3, 4), (2, 3, 4)], ids=str)
def test_fields_of_several_shapes(shape):
    f = qd.field(qd.f32, shape=shape)
    g = qd.field(qd.i64, shape=shape)
    v = qd.Vector.field(3, qd.f32, shape=shape)

    @qd.kernel
    def k():
        for I in qd.grouped(f):
            f[I] = 1.5
            g[I] = qd.cast(f[I], qd.i64) + 2
            v[I] = qd.Vector([f[I], 2.0, 3.0]) * 2

    k()
    (result,) = check(k)
    assert len(result["fields"]) == 5


@pytest.mark.parametrize("ndim", [1, 2, 3, 4])
def test_ndarrays_of_several_ndim(ndim):
    @qd.kernel
    def k(x: qd.types.ndarray(qd.f32, ndim=ndim), y: qd.types.ndarray(qd.u8, ndim=ndim)):
        for I in qd.grouped(x):
            x[I] = x[I] * 2 + qd.cast(y[I], qd.f32)
            y[I] = qd.u8(3)

    shape = (2, 3, 4, 5)[:ndim]
    k(np.zeros(shape, np.float32), np.zeros(shape, np.uint8))
    check(k)


def test_matrices_vectors_structs():
    S = qd.types.struct(a=qd.f32, b=qd.types.vector(3, qd.i32), flag=qd.u1)
    s = S.field(shape=4)
    m = qd.Matrix.field(3, 3, qd.f32, shape=4)

    @qd.kernel
    def k(x: qd.types.ndarray(qd.types.vector(3, qd.f32), ndim=1)) -> qd.f32:
        acc = 0.0
        for i in range(4):
            a = qd.Matrix([[1.0, 2.0, 0.0], [0.0, 1.0, 3.0], [4.0, 0.0, 1.0]])
            m[i] = a @ a.transpose() + a.inverse()
            x[i] = m[i] @ x[i]
            s[i].a = x[i].norm()
            s[i].b = qd.Vector([i, i + 1, i + 2])
            s[i].flag = s[i].a > 1.0
        for i in range(4):
            acc += s[i].a + x[i].dot(x[i])
        return acc

    k(np.ones((4, 3), np.float32))
    check(k)


@pytest.mark.parametrize("dt", ALL_TYPES, ids=str)
def test_atomics_of_every_kind(dt):
    is_int = dt in INT_TYPES
    f = qd.field(dt, shape=4)

    @qd.kernel
    def k(x: qd.types.ndarray(dt, ndim=1), out: qd.types.ndarray(dt, ndim=1)):
        for i in range(x.shape[0]):
            out[i] = qd.atomic_add(f[i % 4], x[i])
            out[i] += qd.atomic_sub(f[i % 4], x[i])
            out[i] += qd.atomic_max(f[i % 4], x[i])
            out[i] += qd.atomic_min(f[i % 4], x[i])
            out[i] += qd.atomic_mul(f[i % 4], x[i])
            out[i] += qd.atomic_exchange(f[i % 4], x[i])
            qd.atomic_add(x[(i + 1) % x.shape[0]], x[i])
            if qd.static(is_int):
                out[i] += qd.atomic_and(f[i % 4], x[i])
                out[i] += qd.atomic_or(f[i % 4], x[i])
                out[i] += qd.atomic_xor(f[i % 4], x[i])
                out[i] += qd.atomic_cas(f[i % 4], x[i], out[i])

    k(np.ones(8, NP[dt]), np.zeros(8, NP[dt]))
    check(k)
    check(k, {"atomic_f32_add": False, "atomic_f32_minmax": True, "atomic_f64_add": True})


@pytest.mark.parametrize("dt", [qd.i32, qd.u32, qd.i64, qd.f32, qd.f64, qd.i16], ids=str)
def test_reductions_into_tmps_and_fields(dt):
    total = qd.field(dt, shape=())

    @qd.kernel
    def k(x: qd.types.ndarray(dt, ndim=1)) -> dt:
        s = qd.cast(0, dt)
        m = x[0]
        for i in range(x.shape[0]):
            s += x[i]
            qd.atomic_max(m, x[i])
            total[None] += x[i]
            qd.atomic_min(total[None], x[i])
        return s + m

    k(np.ones(8, NP[dt]))
    (result,) = check(k)
    assert any(t["reduces"] for t in result["tasks"]) and result["tmps_size"] > 0


def test_kernel_returns_of_several_types():
    @qd.kernel
    def k() -> qd.types.vector(3, qd.f32):
        return qd.Vector([1.0, 2.0, 3.0])

    @qd.kernel
    def b() -> qd.u1:
        return True

    @qd.kernel
    def t() -> tuple[qd.i8, qd.f16, qd.u64]:
        return qd.i8(1), qd.f16(2.0), qd.u64(3)

    k()
    b()
    t()
    assert check(k)[0]["nresults"] == 3
    check(b)
    check(t)


def test_asserts_with_values():
    qd.reset()
    qd.init(arch=qd.cpu, debug=True)

    @qd.kernel
    def k(x: qd.types.ndarray(qd.f32, ndim=1), n: qd.i32):
        for i in range(x.shape[0]):
            assert x[i] >= 0, "negative at %d: %f" % (i, x[i])
        assert n > 0, "n must be positive"

    k(np.ones(4, np.float32), 1)
    results = check(k)
    messages = results[0]["asserts"]
    kinds = results[0]["assert_kinds"][[i for i, m in enumerate(messages) if "negative" in m][0]]
    assert kinds == "if"
    check(k, {"float64": False})


def test_real_funcs_inlined():
    @qd.real_func
    def square(x: qd.f32) -> qd.f32:
        return x * x

    @qd.func
    def twice(x):
        return 2 * x

    @qd.kernel
    def k(x: qd.types.ndarray(qd.f32, ndim=1)):
        for i in range(x.shape[0]):
            x[i] = square(twice(x[i]))

    k(np.ones(4, np.float32))
    check(k)


def test_simt_ops_with_shared_memory():
    block = qd.simt.block

    @qd.kernel
    def k(x: qd.types.ndarray(qd.f32, ndim=1), out: qd.types.ndarray(qd.i32, ndim=2)):
        qd.loop_config(block_dim=64)
        for i in range(x.shape[0]):
            s = block.SharedArray((64,), qd.f32)
            c = block.SharedArray((2,), qd.i32)
            t = block.thread_idx()
            s[t] = x[i]
            block.sync()
            qd.atomic_add(s[0], 1.0)
            qd.atomic_max(s[1], x[i])
            qd.atomic_add(c[0], 1)
            block.sync()
            x[i] = s[63 - t]
            m = qd.u32(0xFFFFFFFF)
            out[i, 0] = qd.simt.warp.shfl_sync_i32(m, t, 3)
            out[i, 1] = qd.simt.warp.shfl_xor_i32(m, t, 1)
            out[i, 2] = qd.simt.warp.shfl_down_i32(m, t, 1)
            out[i, 3] = qd.simt.warp.shfl_up_i32(m, t, 1)
            out[i, 4] = qd.simt.warp.all_nonzero(m, t)
            out[i, 5] = qd.simt.warp.any_nonzero(m, t)
            out[i, 6] = qd.cast(qd.simt.warp.ballot(t), qd.i32)
            out[i, 7] = qd.cast(qd.simt.warp.match_any(m, t % 4), qd.i32)
            out[i, 8] = block.sync_count_nonzero(t % 2)
            out[i, 9] = block.sync_all_nonzero(t) + block.sync_any_nonzero(t)
            qd.simt.warp.sync(m)
            x[i] += qd.simt.warp.shfl_down_f32(m, x[i], 2) + qd.simt.subgroup.shuffle(x[i], 1)
            out[i, 10] = qd.simt.subgroup.invocation_id() + block.global_thread_idx()
            block.mem_fence()
            qd.simt.grid.mem_fence()

    k(np.ones(128, np.float32), np.zeros((128, 11), np.int32))
    (result,) = check(k)
    assert "shared float" in result["tasks"][0]["source"] or "shared uint" in result["tasks"][0]["source"]


def test_volatile_and_clock():
    @qd.kernel
    def k(x: qd.types.ndarray(qd.i32, ndim=1), t: qd.types.ndarray(qd.i64, ndim=1)):
        for i in range(x.shape[0]):
            t[i] = qd.clock_counter()
            x[i] = qd.volatile_load(x[(i + 1) % x.shape[0]])

    k(np.ones(4, np.int32), np.zeros(4, np.int64))
    (result,) = check(k)
    source = result["tasks"][0]["source"]
    assert "coherent volatile" in source
    # the clock's halves are read high, low, high, so that a carry between them is not torn
    assert "clock2x32ARB().y != hi" in source and "clockARB()" not in source


@pytest.mark.parametrize("fast_math", [True, False], ids=["fast_math", "no_fast_math"])
@pytest.mark.parametrize("preserve", [True, False], ids=["preserving", "not_preserving"])
def test_f32_subnormals_kept_without_fast_math(fast_math, preserve):
    """Without fast math, on a device that can keep f32 subnormals (shaderDenormPreserveFloat32),
    the shader asks for it (SPIR-V DenormPreserve 32); otherwise it leaves the driver's default."""

    @qd.kernel
    def k(x: qd.types.ndarray(qd.f32, ndim=1)):
        for i in range(x.shape[0]):
            x[i] = x[i] * 0.5

    k(np.ones(4, np.float32))
    source = check(k, {"fast_math": fast_math, "denorm_preserve_f32": preserve})[0]["tasks"][0]["source"]
    asked = "spirv_execution_mode(extensions = [\"SPV_KHR_float_controls\"], capabilities = [4464], 4459, 32);"
    assert (asked in source) == (preserve and not fast_math)
    assert ("GL_EXT_spirv_intrinsics" in source) == (preserve and not fast_math)


def test_error_free_transformations_are_precise():
    """Every value of the double helpers' error-free transformations is computed into a precise
    local before it leaves the function (out parameters) or enters another (arguments): a driver
    may contract and reassociate anything else, and NVIDIA's does."""

    @qd.kernel
    def k(x: qd.types.ndarray(qd.f64, ndim=1)):
        for i in range(x.shape[0]):
            x[i] = (qd.sin(x[i]) + qd.acos(x[i]) + qd.asin(x[i]) + qd.log(x[i]) + x[i] ** x[i]
                    + qd.tanh(x[i]) + qd.exp(x[i]) + qd.sqrt(x[i]) / x[i])

    k(np.full(4, 0.5))
    source = check(k)[0]["tasks"][0]["source"]
    for line in source.splitlines():
        code = line.strip()
        # out parameters (lo, rl, ...) only take a precise local or a constant
        for out in ("lo = ", "rl = "):
            if code.startswith(out):
                assert code[len(out):].rstrip(";").replace(".", "").isalnum(), line
        # no arithmetic in the arguments of a helper that takes a dd value apart
        for helper in ("qd_sqrt_f64(", "qd_scale_f64("):
            if helper in code and "double " + helper not in code:
                arg = code.split(helper, 1)[1].split(")", 1)[0].split(",")[0]
                assert not any(op in arg for op in " +-*/"), line


def test_pointer_bitcast_is_the_same_address():
    path = os.path.join(os.path.dirname(__file__), os.pardir, "qir", "pointer_bitcast.qir")
    with open(path) as f:
        result = _testing.qir_to_glsl(f.read(), "k")
    assert_valid(result)
    src = result["tasks"][0]["source"]
    # the u32 element's address, stored, loaded and exchanged through the u64 reference types
    assert "QdVolatileRef_u64(" in src and "atomicExchange(QdRef_u64(" in src


def test_algorithm_block_forms_compile_for_32_lane_devices():
    """Each qd.algorithms op in its block form (what a Vulkan device with 32-lane subgroups
    runs; lavapipe's 8 lanes run the plain form) becomes GLSL that glslang compiles to SPIR-V.
    A 4-byte scan publishes its tile states as u64 words (atomicExchange), an 8-byte one as
    flags after a fence. Both sorts: key-value pairs, and 4-byte keys alone (ranked straight
    into the staged tile)."""
    nd = qd.types.ndarray
    A = qd.algorithms

    @qd.kernel
    def scan(a: nd(qd.f32, 1), o: nd(qd.f32, 1), s: nd(qd.u32, 1), n: qd.i32):
        A.exclusive_scan_add(a, o, s, n, qd.f32, 2)

    @qd.kernel
    def scan64(a: nd(qd.f64, 1), o: nd(qd.f64, 1), s: nd(qd.u64, 1), n: qd.i32):
        A.exclusive_scan_max(a, o, s, n, qd.f64, 2)

    @qd.kernel
    def reduce(a: nd(qd.f32, 1), o: nd(qd.f32, 1), s: nd(qd.u32, 1), n: qd.i32):
        A.reduce_min(a, o, s, n, qd.f32, 2)

    @qd.kernel
    def sort(k: nd(qd.f32, 1), tk: nd(qd.f32, 1), v: nd(qd.i32, 1), tv: nd(qd.i32, 1),
             s: nd(qd.u32, 1), n: nd(qd.i32, 0)):
        A.sort(k, tk, v, tv, s, n, qd.f32, True, 32, 2)

    @qd.kernel
    def sort_keys(k: nd(qd.u32, 1), tk: nd(qd.u32, 1), s: nd(qd.u32, 1), n: nd(qd.i32, 0)):
        A.sort(k, tk, k, tk, s, n, qd.u32, False, 32, 2)

    @qd.kernel
    def select(a: nd(qd.f32, 1), f: nd(qd.i32, 1), o: nd(qd.f32, 1), no: nd(qd.i32, 1),
               s: nd(qd.u32, 1), n: qd.i32):
        A.select(a, f, o, no, s, n, 2)

    n = 1000
    f32, f64, i32 = np.zeros(n, np.float32), np.zeros(n), np.zeros(n, np.int32)
    u32, u64 = np.zeros(10000, np.uint32), np.zeros(10000, np.uint64)
    scan(f32, f32.copy(), u32, n)
    scan64(f64, f64.copy(), u64, n)
    reduce(f32, f32.copy(), u32, n)
    sort(f32, f32.copy(), i32, i32.copy(), u32, np.array(n, np.int32))
    sort_keys(np.zeros(n, np.uint32), np.zeros(n, np.uint32), u32, np.array(n, np.int32))
    select(f32, i32, f32.copy(), np.zeros(1, np.int32), u32, n)
    sources = {}
    for k in (scan, scan64, reduce, sort, sort_keys, select):
        (qir,) = kernel_qirs(k)
        result = _testing.qir_to_glsl(qir, kernel_name(qir), {"subgroup_size": 32})
        for task in result["tasks"]:
            words = np.frombuffer(_testing.glsl_to_spirv(task["source"], task["name"]), np.uint32)
            assert words[0] == 0x07230203, task["name"]  # the SPIR-V magic number
        sources[k] = "\n".join(task["source"] for task in result["tasks"])
    assert "atomicExchange(QdRef_u64(" in sources[scan]
    assert "atomicExchange(QdRef_u64(" not in sources[scan64] and "atomicOr(" in sources[scan64]


def test_scan_without_64_bit_atomics_keeps_its_states_in_arrays(monkeypatch):
    """For a device without 64-bit atomics (shaderBufferInt64Atomics) the block-form scan of
    4-byte elements keeps its tile states in three u32 arrays (the frontend's
    lacks_atomic_int64; a cpu_simt compile stands in for such a device here and must still scan
    correctly across many tiles)."""
    patched = _runtime.compile_options
    monkeypatch.setattr(_runtime, "compile_options", lambda: dict(patched(), atomic_int64=False))
    nd = qd.types.ndarray

    @qd.kernel
    def scan(a: nd(qd.i32, 1), o: nd(qd.i32, 1), s: nd(qd.u32, 1), n: qd.i32):
        qd.algorithms.exclusive_scan_add(a, o, s, n, qd.i32, 3)

    n = 40000
    a = np.random.default_rng().integers(-1000, 1000, n, dtype=np.int32)
    o = np.zeros(n, np.int32)
    scan(a, o, np.zeros(qd.algorithms.exclusive_scan_scratch_slots(n, 3), np.uint32), n)
    np.testing.assert_array_equal(o, np.concatenate([[0], np.cumsum(a)[:-1]]).astype(np.int32))
    (qir,) = kernel_qirs(scan)
    result = _testing.qir_to_glsl(qir, kernel_name(qir), {"subgroup_size": 32})
    source = "\n".join(task["source"] for task in result["tasks"])
    assert "atomicExchange(QdRef_u64(" not in source and "atomicOr(" in source
