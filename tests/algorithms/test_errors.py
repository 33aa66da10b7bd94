"""The errors of qd.algorithms: depth limits, unsupported dtypes, in-place scans, calls below the
kernel's top level, bad sort end_bit; and the places a call is allowed."""

import numpy as np
import pytest

import quadrants as qd

from ._util import count, nd1

A = qd.algorithms
nd0 = qd.types.ndarray(ndim=0)

# ---- depth (log256_max_n)


@pytest.mark.parametrize("helper", ["reduce_scratch_slots", "exclusive_scan_scratch_slots",
                                    "sort_scratch_slots"])
def test_host_helper_depth_limit(helper):
    fn = getattr(A, helper)
    assert fn(1000, 4) >= 1
    with pytest.raises(ValueError, match="exceeds the maximum of 4"):
        fn(1000, 5)
    with pytest.raises(ValueError, match="exceeds the maximum of 4"):
        fn(256**4 + 1)  # the derived depth would be 5
    with pytest.raises(ValueError, match="at least 1"):
        fn(10, 0)


def _arrays(dt=np.int32, n=8):
    return np.zeros(n, dt), np.zeros(n, dt), np.zeros(2048, np.uint32), count(n)


def _op_kernel(op, D, dtype=qd.i32):
    """A kernel calling one op with compile-time D and dtype on ndarray arguments."""

    @qd.kernel
    def k(a: nd1, b: nd1, c: nd1, d: nd1, e: nd1, s: nd1, cnt: nd1, n0: nd0):
        if qd.static(op == "reduce_add"):
            A.reduce_add(a, b, s, cnt[0], dtype, D)
        elif qd.static(op == "exclusive_scan_min"):
            A.exclusive_scan_min(a, b, s, cnt[0], dtype, D)
        elif qd.static(op == "select"):
            A.select(a, c, b, d, s, cnt[0], D)
        elif qd.static(op == "sort"):
            A.sort(a, b, a, b, s, n0, dtype, False, 32, D)
        elif qd.static(op == "reduce_by_key_add"):
            A.reduce_by_key_add(a, c, b, e, d, s, cnt[0], dtype, D)
        elif qd.static(op == "helpers"):
            for i in range(1):
                d[i] = A.reduce_scratch_slots(cnt[0], D) + A.sort_scratch_slots(cnt[0], D)

    def call(dt=np.int32):
        z = lambda: np.zeros(8, dt)  # noqa: E731
        k(z(), z(), np.zeros(8, np.int32), np.zeros(8, np.int32), z(), np.zeros(2048, np.uint32),
          count(8), np.array(8, np.int32))

    return call


OPS = ["reduce_add", "exclusive_scan_min", "select", "sort", "reduce_by_key_add", "helpers"]


@pytest.mark.parametrize("op", OPS)
def test_in_kernel_depth_limit(op):
    """D > 4 fails when the kernel is compiled: a QuadrantsCompilationError whose message holds
    the ValueError's."""
    with pytest.raises(qd.QuadrantsCompilationError, match="exceeds the maximum of 4"):
        _op_kernel(op, 5)()


@pytest.mark.parametrize("op", OPS)
def test_depth_4_compiles_and_runs(op):
    _op_kernel(op, 4)()


# ---- dtypes


@pytest.mark.parametrize("op", ["reduce_add", "exclusive_scan_min", "sort"])
@pytest.mark.parametrize("dt", [qd.i16, qd.f16, qd.u8], ids=str)
def test_unsupported_dtype(op, dt):
    np_dt = {qd.i16: np.int16, qd.f16: np.float16, qd.u8: np.uint8}[dt]
    with pytest.raises(qd.QuadrantsCompilationError, match="NotImplementedError") as e:
        _op_kernel(op, 1, dt)(np_dt)
    assert "not supported" in str(e.value)


@pytest.mark.parametrize("dt", [qd.f64, qd.i64, qd.i16], ids=str)
def test_reduce_by_key_unsupported_value_dtype(dt):
    np_dt = {qd.f64: np.float64, qd.i64: np.int64, qd.i16: np.int16}[dt]
    with pytest.raises(qd.QuadrantsCompilationError, match="NotImplementedError") as e:
        _op_kernel("reduce_by_key_add", 1, dt)(np_dt)
    assert "not supported" in str(e.value)


# ---- aliasing


@pytest.mark.parametrize("op", ["exclusive_scan_add", "select"])
def test_output_must_differ_from_input(op):
    a = qd.field(qd.i32, 16)
    flags, num, cnt = qd.field(qd.i32, 16), qd.field(qd.i32, 1), qd.field(qd.i32, 1)
    s = qd.field(qd.u32, 2048)

    @qd.kernel
    def run():
        if qd.static(op == "select"):
            A.select(a, flags, a, num, s, cnt[0], 1)
        else:
            A.exclusive_scan_add(a, a, s, cnt[0], qd.i32, 1)

    with pytest.raises(qd.QuadrantsCompilationError, match="different buffer"):
        run()


@pytest.mark.parametrize("op", ["exclusive_scan_add", "select"])
@pytest.mark.parametrize("how", ["argument", "global"])
def test_output_must_differ_from_input_tensor(op, how):
    """One field-backed qd.tensor as both the input and the output, passed as one argument
    twice or read as a global by both names. (An ndarray-backed tensor passed twice is two
    arguments of the kernel, which only a launch binds to one buffer, as with ndarrays.)"""
    be = qd.Backend.FIELD
    a, flags = qd.tensor(qd.i32, (16,), backend=be), qd.tensor(qd.i32, (16,), backend=be)
    num, s = qd.tensor(qd.i32, (1,), backend=be), qd.tensor(qd.u32, (2048,), backend=be)

    if how == "argument":
        @qd.kernel
        def run(x: qd.Tensor, y: qd.Tensor, f: qd.Tensor, m: qd.Tensor, t: qd.Tensor):
            if qd.static(op == "select"):
                A.select(x, f, y, m, t, 16, 1)
            else:
                A.exclusive_scan_add(x, y, t, 16, qd.i32, 1)

        call = lambda: run(a, a, flags, num, s)  # noqa: E731
    else:
        @qd.kernel
        def run_globals():
            if qd.static(op == "select"):
                A.select(a, flags, a, num, s, 16, 1)
            else:
                A.exclusive_scan_add(a, a, s, 16, qd.i32, 1)

        call = run_globals
    with pytest.raises(qd.QuadrantsCompilationError, match="different buffer"):
        call()


# ---- where a call may stand


CONSTRUCTS = {
    "for": "for i in range(cnt[0]):\n        {call}",
    "if": "if cnt[0] > 0:\n        {call}",
    "while": "while cnt[0] > 100:\n        {call}",
    "static-for-in-if": "if cnt[0] > 0:\n        for _ in qd.static(range(2)):\n            {call}",
}
CALLS = {
    "reduce_add": "A.reduce_add(a, b, s, cnt[0], qd.i32, 1)",
    "exclusive_scan_max": "A.exclusive_scan_max(a, b, s, cnt[0], qd.i32, 1)",
    "select": "A.select(a, f, b, cnt, s, cnt[0], 1)",
    "sort": "A.sort(a, b, a, b, s, n0, qd.i32, False, 32, 1)",
    "reduce_by_key_add": "A.reduce_by_key_add(a, f, b, f2, cnt, s, cnt[0], qd.i32, 1)",
}


def _kernel_from_source(body):
    src = (
        "@qd.kernel\n"
        "def k(a: nd1, b: nd1, f: nd1, f2: nd1, s: nd1, cnt: nd1, n0: nd0):\n"
        f"    {body}\n"
    )
    import linecache
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as fh:
        fh.write(src)
    linecache.checkcache(fh.name)
    scope = {"qd": qd, "A": A, "nd1": nd1, "nd0": nd0}
    exec(compile(src, fh.name, "exec"), scope)
    return scope["k"]


def _call(k):
    z = lambda: np.zeros(8, np.int32)  # noqa: E731
    k(z(), z(), z(), z(), np.zeros(2048, np.uint32), count(8), np.array(8, np.int32))


@pytest.mark.parametrize("construct", CONSTRUCTS)
@pytest.mark.parametrize("op", CALLS)
def test_nested_call_is_rejected(op, construct):
    k = _kernel_from_source(CONSTRUCTS[construct].format(call=CALLS[op]))
    with pytest.raises(qd.QuadrantsSyntaxError, match="requires_top_level=True"):
        _call(k)


@pytest.mark.parametrize("construct", ["for _ in qd.static(range(2)):", "if qd.static(True):"])
@pytest.mark.parametrize("op", ["reduce_add", "sort"])
def test_static_control_flow_at_top_level_is_allowed(op, construct):
    """A qd.static loop or if at the top level unrolls into top-level statements."""
    _call(_kernel_from_source(construct + "\n        " + CALLS[op]))


def test_static_loop_repeats_the_op():
    """Two unrolled scans: the second scans the first's output (its exclusive sums)."""
    a = qd.field(qd.i32, 300)
    b = qd.field(qd.i32, 300)
    s = qd.field(qd.u32, A.exclusive_scan_scratch_slots(300, 2))
    cnt = qd.field(qd.i32, 1)
    x = np.arange(1, 301, dtype=np.int32)
    a.from_numpy(x)
    cnt[0] = 300

    @qd.kernel
    def run():
        for j in qd.static(range(2)):
            if qd.static(j == 0):
                A.exclusive_scan_add(a, b, s, cnt[0], qd.i32, 2)
            else:
                A.exclusive_scan_add(b, a, s, cnt[0], qd.i32, 2)

    run()
    once = np.concatenate([[0], np.cumsum(x)[:-1]]).astype(np.int32)
    twice = np.concatenate([[0], np.cumsum(once)[:-1]]).astype(np.int32)
    np.testing.assert_array_equal(b.to_numpy(), once)
    np.testing.assert_array_equal(a.to_numpy(), twice)


# ---- sort end_bit


@pytest.mark.parametrize(
    "kdt,end_bit",
    [(qd.u32, 12), (qd.u32, 24), (qd.i32, 8), (qd.f32, 40), (qd.u32, 0), (qd.u32, -16),
     (qd.u64, 72), (qd.i64, 56)],
    ids=["u32-12", "u32-24-odd-passes", "i32-8-odd-passes", "f32-40-too-wide", "u32-0",
         "u32-negative", "u64-72-too-wide", "i64-56-odd-passes"],
)
def test_sort_bad_end_bit(kdt, end_bit):
    np_dt = {qd.u32: np.uint32, qd.i32: np.int32, qd.f32: np.float32, qd.u64: np.uint64,
             qd.i64: np.int64}[kdt]

    @qd.kernel
    def run(k: nd1, t: nd1, s: nd1, n: nd0):
        A.sort(k, t, k, t, s, n, kdt, False, end_bit, 1)

    with pytest.raises(qd.QuadrantsCompilationError, match="end_bit"):
        run(np.zeros(4, np_dt), np.zeros(4, np_dt), np.zeros(256, np.uint32), np.array(4, np.int32))


# ---- the buffers of a reduce or scan (checked where the call stands)


@pytest.mark.parametrize("op", ["reduce_add", "exclusive_scan_max"])
@pytest.mark.parametrize("bad", ["out dtype", "2-D arr", "scratch width", "offset field"])
def test_reduce_and_scan_buffers_are_checked(op, bad):
    x = qd.field(qd.f32, 64)
    y = qd.field(qd.f64 if bad == "out dtype" else qd.f32, 64)
    grid = qd.field(qd.f32, (8, 8))
    shifted = qd.field(qd.f32, 64, offset=4)
    s = qd.field(qd.u64 if bad == "scratch width" else qd.u32, 64)
    cnt = qd.field(qd.i32, 1)
    fn = getattr(A, op)

    @qd.kernel
    def run():
        if qd.static(bad == "2-D arr"):
            fn(grid, y, s, cnt[0], qd.f32, 1)
        elif qd.static(bad == "offset field"):
            fn(shifted, y, s, cnt[0], qd.f32, 1)
        else:
            fn(x, y, s, cnt[0], qd.f32, 1)

    want = {"out dtype": "out holds f64, expected f32", "2-D arr": "arr must be a 1-D field",
            "scratch width": "scratch holds u64", "offset field": "indexed from 0"}[bad]
    with pytest.raises(qd.QuadrantsTypeError, match=want) as e:
        run()
    assert e.value.lineno is not None


def test_keyword_arguments_bind_by_name(rng):
    """The ops take their arguments by name as well (the Python signature's names)."""
    a = rng.integers(-100, 100, 300).astype(np.int32)
    out = np.zeros(1, np.int32)
    excl = np.zeros(300, np.int32)

    @qd.kernel
    def k(x: nd1, o: nd1, e: nd1, s: nd1, c: nd1):
        A.reduce_add(x, out=o, scratch=s, n=c[0], dtype=qd.i32, log256_max_n=2)
        A.exclusive_scan_add(arr=x, out=e, scratch=s, n=c[0], dtype=qd.i32, log256_max_n=2)

    k(a, out, excl, np.zeros(64, np.uint32), count(300))
    assert out[0] == a.sum()
    np.testing.assert_array_equal(excl, np.concatenate([[0], np.cumsum(a)[:-1]]))


@pytest.mark.parametrize("op", ["reduce_max", "exclusive_scan_add"])
def test_vector_elements_are_rejected(op):
    """A reduce or scan works on scalars: an ndarray or field of vectors is a type error."""
    fn = getattr(A, op)
    vf = qd.Vector.field(3, qd.f32, 8)

    @qd.kernel
    def nd(x: qd.types.ndarray(qd.types.vector(3, qd.f32), ndim=1), o: nd1, s: nd1, c: nd1):
        fn(x, o, s, c[0], qd.f32, 1)

    @qd.kernel
    def field(o: nd1, s: nd1, c: nd1):
        fn(vf, o, s, c[0], qd.f32, 1)

    with pytest.raises(qd.QuadrantsTypeError, match="1-D ndarray of scalars"):
        nd(np.zeros((8, 3), np.float32), np.zeros(8, np.float32), np.zeros(8, np.uint32), count(8))
    with pytest.raises(qd.QuadrantsTypeError, match="1-D field, ndarray or tensor of scalars"):
        field(np.zeros(8, np.float32), np.zeros(8, np.uint32), count(8))
