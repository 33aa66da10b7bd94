"""The CUDA code generator without a GPU: QIR kernels -> PTX (``_testing.qir_to_ptx``), then
``ptxas -arch=sm_90`` on the PTX wherever ptxas is installed (CUDA toolkit: $CUDA_HOME/bin,
/usr/local/cuda/bin or PATH). ptxas rejects what the driver's JIT would reject, so this catches
most code generation bugs of the CUDA backend in CI, where no GPU exists.

Coverage: every kernel of tests/codegen/qir/, every arithmetic, comparison, math and cast op on
every type it applies to, every atomic op on every type, the SIMT instructions, shared memory,
print and assert, fields, kernel temporaries and results. Kernels that call libdevice need
libdevice.10.bc (next to ptxas in a CUDA toolkit); without it they are skipped.

Structural checks (entry names, the parameter buffer, maxntid, the field globals) run even
without ptxas.
"""

import os
import re
import pathlib
import subprocess
import sys
import tempfile

import pytest

from qir_helpers import QIR_DIR, load
from quadrants import _core
from quadrants._core import _testing
from quadrants._toolkit import find_ptxas

INTS = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]
FLOATS = ["f16", "bf16", "f32", "f64"]
INT_BINARY = ["add", "sub", "mul", "div", "rem", "floordiv", "floormod", "min", "max", "pow",
              "and", "or", "xor", "shl", "shr", "lshr"]
FLOAT_BINARY = ["add", "sub", "mul", "div", "rem", "floordiv", "floormod", "min", "max", "pow",
                "atan2"]
FLOAT_UNARY = ["neg", "abs", "sqrt", "rsqrt", "exp", "log", "sin", "cos", "tan", "tanh", "asin",
               "acos", "atan", "floor", "ceil", "round"]
INT_UNARY = ["neg", "abs", "not", "popcnt", "clz"]
COMPARES = ["eq", "ne", "lt", "le", "gt", "ge"]
ATOMICS = ["atomic_add", "atomic_sub", "atomic_mul", "atomic_min", "atomic_max", "atomic_xchg"]
INT_ATOMICS = ["atomic_and", "atomic_or", "atomic_xor"]
NEEDS_LIBDEVICE = {"pow", "atan2", "exp", "log", "sin", "cos", "tan", "tanh", "asin", "acos",
                   "atan"}


PTXAS = find_ptxas()
HAVE_LIBDEVICE = any(os.path.isfile(p) for p in _core.cuda_libdevice_paths())

needs_ptxas = pytest.mark.skipif(PTXAS is None, reason="ptxas (CUDA toolkit) is not installed")


def ptx_of(text, kernel, **kwargs):
    return _testing.qir_to_ptx(text, kernel, **kwargs)


def ptxas(ptx, name="kernel"):
    """Assembles PTX for sm_90; fails the test with ptxas's output on any error or warning."""
    with tempfile.TemporaryDirectory() as tmp:
        src = pathlib.Path(tmp) / f"{name}.ptx"
        src.write_text(ptx)
        proc = subprocess.run(
            [PTXAS, "-arch=sm_90", "-o", str(src.with_suffix(".cubin")), str(src)],
            capture_output=True,
            text=True,
        )
    if proc.returncode != 0 or "warning" in proc.stderr.lower():
        numbered = "\n".join(f"{i + 1:5d} {line}" for i, line in enumerate(ptx.splitlines()))
        pytest.fail(f"ptxas failed on {name}:\n{proc.stderr}\n--- PTX ---\n{numbered}")


def check(text, kernel, name=None, **kwargs):
    """QIR -> PTX -> ptxas. Returns the qir_to_ptx result."""
    result = ptx_of(text, kernel, **kwargs)
    if PTXAS is not None:
        ptxas(result["ptx"], name or kernel)
    return result


# --- generated kernels: one kernel per type holding every op of a family ---


def kernel_of(params, body, block_dim=None):
    """A range_for kernel over the extent of its first ndarray parameter."""
    first = params[0].split(":")[0]
    config = f" block_dim {block_dim}" if block_dim else ""
    lines = [f"kernel @k({', '.join(params)}) {{", f"  task range_for{config} {{",
             "    %zero = const 0 : i32", f"    %n = shape {first}, 0 : i32",
             "    parallel_for %i = %zero to %n {"]
    lines += ["      " + line for line in body]
    lines += ["    }", "  }", "}", ""]
    return "\n".join(lines)


def binary_ops_kernel(ty, ops):
    params = [f"%x: ndarray<{ty}, 1>", f"%y: ndarray<{ty}, 1>", f"%out: ndarray<{ty}, 1>",
              "%flags: ndarray<u1, 1>"]
    body = [f"%px = elem_ptr %x, %i : ptr<{ty}, global>", f"%a = load %px : {ty}",
            f"%py = elem_ptr %y, %i : ptr<{ty}, global>", f"%b = load %py : {ty}",
            f"%po = elem_ptr %out, %i : ptr<{ty}, global>",
            "%pf = elem_ptr %flags, %i : ptr<u1, global>"]
    for op in ops:
        body += [f"%r_{op} = {op} %a, %b : {ty}", f"store %po, %r_{op}"]
    for op in COMPARES:
        body += [f"%c_{op} = {op} %a, %b : u1", f"store %pf, %c_{op}"]
    body += ["%sel = select %c_lt, %a, %b : " + ty, "store %po, %sel"]
    return kernel_of(params, body)


def unary_ops_kernel(ty, ops):
    params = [f"%x: ndarray<{ty}, 1>", f"%out: ndarray<{ty}, 1>", "%counts: ndarray<i32, 1>"]
    body = [f"%px = elem_ptr %x, %i : ptr<{ty}, global>", f"%a = load %px : {ty}",
            f"%po = elem_ptr %out, %i : ptr<{ty}, global>",
            "%pc = elem_ptr %counts, %i : ptr<i32, global>"]
    for op in ops:
        rty = "i32" if op in ("popcnt", "clz") else ty
        body += [f"%r_{op} = {op} %a : {rty}", f"store {'%pc' if rty != ty else '%po'}, %r_{op}"]
    return kernel_of(params, body)


def casts_kernel(src):
    targets = ["u1"] + INTS + FLOATS
    params = [f"%x: ndarray<{src}, 1>"] + [f"%o_{t}: ndarray<{t}, 1>" for t in targets]
    body = [f"%px = elem_ptr %x, %i : ptr<{src}, global>", f"%a = load %px : {src}"]
    for t in targets:
        body += [f"%c_{t} = cast %a : {t}", f"%p_{t} = elem_ptr %o_{t}, %i : ptr<{t}, global>",
                 f"store %p_{t}, %c_{t}"]
    return kernel_of(params, body)


def atomics_kernel(ty):
    ops = ATOMICS + (INT_ATOMICS if ty in INTS else [])
    params = [f"%x: ndarray<{ty}, 1>", f"%acc: ndarray<{ty}, 1>", f"%old: ndarray<{ty}, 1>"]
    body = [f"%px = elem_ptr %x, %i : ptr<{ty}, global>", f"%v = load %px : {ty}",
            "%z = const 0 : i32", f"%pa = elem_ptr %acc, %z : ptr<{ty}, global>",
            f"%po = elem_ptr %old, %i : ptr<{ty}, global>"]
    for op in ops:
        body += [f"%r_{op} = {op} %pa, %v : {ty}", f"store %po, %r_{op}"]
    if ty in INTS:
        body += [f"%r_cas = atomic_cas %pa, %v, %r_atomic_add : {ty}", "store %po, %r_cas"]
    return kernel_of(params, body)


# --- the kernels of tests/codegen/qir ---


def qir_kernels():
    """(file, kernel) of every kernel in tests/codegen/qir, SIMT ones included."""
    out = []
    for path in sorted(QIR_DIR.glob("*.qir")):
        for line in path.read_text().splitlines():
            if line.startswith("kernel @"):
                out.append((path.name, line.split("@")[1].split("(")[0]))
    return out


@pytest.mark.parametrize("path,kernel", qir_kernels())
def test_qir_files(path, kernel):
    text = load(path)
    if not HAVE_LIBDEVICE and any(f" {op} " in text for op in NEEDS_LIBDEVICE):
        pytest.skip("libdevice.10.bc not found")
    check(text, kernel, name=f"{path}_{kernel}")


@pytest.mark.parametrize("ty", INTS)
def test_int_ops(ty):
    check(binary_ops_kernel(ty, INT_BINARY), "k", name=f"int_binary_{ty}")
    check(unary_ops_kernel(ty, INT_UNARY), "k", name=f"int_unary_{ty}")


@pytest.mark.skipif(not HAVE_LIBDEVICE, reason="libdevice.10.bc not found")
@pytest.mark.parametrize("fast_math", [True, False])
@pytest.mark.parametrize("ty", FLOATS)
def test_float_ops(ty, fast_math):
    options = {"fast_math": fast_math}
    check(binary_ops_kernel(ty, FLOAT_BINARY), "k", name=f"float_binary_{ty}", options=options)
    check(unary_ops_kernel(ty, FLOAT_UNARY), "k", name=f"float_unary_{ty}", options=options)


@pytest.mark.parametrize("src", ["u1"] + INTS + FLOATS)
def test_casts(src):
    check(casts_kernel(src), "k", name=f"casts_{src}")


@pytest.mark.parametrize("ty", INTS + FLOATS)
def test_atomics(ty):
    check(atomics_kernel(ty), "k", name=f"atomics_{ty}")


SIMT = """\
kernel @simt(%out: ndarray<i32, 1>, %f: ndarray<f64, 1>, %h: ndarray<f16, 1>) {
  task range_for block_dim 256 {
    %zero = const 0 : i32
    %n = shape %out, 0 : i32
    parallel_for %i = %zero to %n {
      %tile = shared_alloc : ptr<[256 x i32], shared>
      %count = shared_alloc : ptr<i32, shared>
      %t = thread_idx : i32
      %b = block_idx : i32
      %bd = block_dim : i32
      %gd = grid_dim : i32
      %l = lane_id : i32
      %ws = subgroup_size : i32
      %slot = array_ptr %tile, %t : ptr<i32, shared>
      store %slot, %i
      block_sync
      %one = const 1 : i32
      %old = atomic_add %count, %one : i32
      %next = add %t, %one : i32
      %wrap = rem %next, %bd : i32
      %nslot = array_ptr %tile, %wrap : ptr<i32, shared>
      %nv = load %nslot : i32
      %all = block_sync_all %nv : i32
      %any = block_sync_any %nv : i32
      %cnt = block_sync_count %nv : i32
      %full = const 4294967295 : u32
      subgroup_sync %full
      %s0 = shuffle %nv, %l : i32
      %s1 = shuffle_xor %nv, %one : i32
      %s2 = shuffle_up %nv, %one : i32
      %s3 = shuffle_down %nv, %one : i32
      %pf = elem_ptr %f, %i : ptr<f64, global>
      %fv = load %pf : f64
      %fs = shuffle_xor %fv, %one : f64
      store %pf, %fs
      %ph = elem_ptr %h, %i : ptr<f16, global>
      %hv = load %ph : f16
      %hs = shuffle_down %hv, %one : f16
      store %ph, %hs
      %bal = ballot %nv : u32
      %va = vote_all %nv : u1
      %vy = vote_any %nv : u1
      fence_block
      fence_device
      fence_system
      %sum0 = add %s0, %s1 : i32
      %sum1 = add %sum0, %s2 : i32
      %sum2 = add %sum1, %s3 : i32
      %sum3 = add %sum2, %all : i32
      %sum4 = add %sum3, %any : i32
      %sum5 = add %sum4, %cnt : i32
      %bi = bitcast %bal : i32
      %sum6 = add %sum5, %bi : i32
      %vai = cast %va : i32
      %vyi = cast %vy : i32
      %sum7 = add %sum6, %vai : i32
      %sum8 = add %sum7, %vyi : i32
      %g = add %b, %gd : i32
      %g2 = add %g, %ws : i32
      %sum9 = add %sum8, %g2 : i32
      %sum10 = add %sum9, %old : i32
      %po = elem_ptr %out, %i : ptr<i32, global>
      store %po, %sum10
    }
  }
}
"""


def test_simt():
    result = check(SIMT, "simt")
    ptx = result["ptx"]
    for needle in ("bar.sync", "shfl.sync.idx", "shfl.sync.bfly", "shfl.sync.up",
                   "shfl.sync.down", "vote.sync.ballot", ".shared", "membar.cta",
                   ".maxntid 256, 1, 1", "bar.warp.sync"):
        assert needle in ptx, needle


SUBGROUP_SYNC = """\
kernel @sync(%out: ndarray<i32, 1>, %m: u32) {
  task range_for block_dim 64 {
    %zero = const 0 : i32
    %n = shape %out, 0 : i32
    parallel_for %i = %zero to %n {
      %full = const 4294967295 : u32
      subgroup_sync %full
      %p = elem_ptr %out, %i : ptr<i32, global>
      store %p, %i
      subgroup_sync %m
    }
  }
}
"""


def test_subgroup_sync_passes_its_mask():
    # subgroup_sync %mask is __syncwarp(mask): the frontend's full mask of subgroup.sync()
    # (0xffffffff, printed -1) and warp.sync(m)'s m reach bar.warp.sync as they are, never the
    # active mask, which would not reconverge lanes that diverged.
    ptx = check(SUBGROUP_SYNC, "sync")["ptx"]
    masks = re.findall(r"bar\.warp\.sync\s+([^;]+);", ptx)
    assert len(masks) == 2 and masks[0] in ("-1", "0xffffffff", "0xFFFFFFFF"), ptx
    loaded = re.findall(r"ld\.param\.u32\s+(%r\d+), \[[A-Za-z0-9_]+(?:\+\d+)?\];", ptx)
    assert masks[1] in loaded, ptx
    assert "activemask" not in ptx, ptx


PRINT_ASSERT = """\
field @total : i64 [4]

kernel @dbg(%x: i32, %y: f64, %n: i32, %c: u8) {
  %t = tmp_alloc : ptr<i64, global>
  task serial {
    print "x = %d, y = %.3f %c %x%% %5.2e %u\\n", %x, %y, %c, %x, %y, %c
    %big = const 12345678901 : i64
    %h = const 0.5 : f16
    print "big %lld half %g as int %d\\n", %big, %h, %y
    store %t, %big
  }
  task range_for {
    %zero = const 0 : i32
    parallel_for %i = %zero to %n {
      %ok = lt %i, %x : u1
      assert %ok, "i must stay below x"
      %v = load %t : i64
      %three = const 3 : i32
      %j = rem %i, %three : i32
      %p = field_ptr @total, %j : ptr<i64, global>
      %old = atomic_add %p, %v : i64
    }
  }
  task serial {
    %first = const 0 : i32
    %p0 = field_ptr @total, %first : ptr<i64, global>
    %s = load %p0 : i64
    kernel_ret %s, 0
    kernel_ret %x, 1
  }
}
"""


def test_print_assert_fields_tmps_results():
    result = check(PRINT_ASSERT, "dbg")
    assert result["fields"] == ["total"]
    assert result["asserts"] == ["i must stay below x"]
    assert result["has_print"] and result["nresults"] == 2 and result["tmps_size"] == 8
    ptx = result["ptx"]
    assert "vprintf" in ptx
    assert ".visible .global .align 8 .u64 qd_field_total" in ptx
    # the formats, rewritten so that every integer conversion takes a 64-bit value
    strings = ptx_strings(ptx)
    assert "x = %lld, y = %.3f %c %llx%% %5.2e %llu\n" in strings
    assert "big %lld half %g as int %lld\n" in strings


def ptx_strings(ptx):
    """The NUL-terminated byte arrays of a PTX module, decoded."""
    import re

    out = []
    for match in re.finditer(r"\.b8 \S+\[\d+\] = \{([0-9, ]+)\}", ptx):
        data = bytes(int(b) for b in match.group(1).split(","))
        out.append(data.rstrip(b"\0").decode())
    return out


def test_entry_points_and_parameter_buffer():
    result = ptx_of(load("saxpy.qir"), "saxpy")
    assert result["symbol"] == "qd_saxpy"
    # the task's name (loop_config(name=...)) is part of the entry point
    assert result["tasks"] == [("qd_saxpy_t0_saxpy", 128, True)]
    ptx = result["ptx"]
    assert ".visible .entry qd_saxpy_t0_saxpy(" in ptx
    # packed arguments (40 bytes) plus the 24-byte launch tail, by value
    assert ".param .align 8 .b8 qd_saxpy_t0_saxpy_param_0[64]" in ptx
    assert ".maxntid 128, 1, 1" in ptx
    assert "ld.global" in ptx and "st.global" in ptx  # no generic accesses for ndarray data


def test_block_dim_default_and_serial_tasks():
    text = load("tmps.qir")
    result = ptx_of(text, "k", options={"default_gpu_block_dim": 256})
    assert [t[1:] for t in result["tasks"]] == [(1, False), (256, True), (1, False)]
    assert ".maxntid 1, 1, 1" in result["ptx"] and ".maxntid 256, 1, 1" in result["ptx"]


def test_kernels_wait_for_the_kernel_before_them_on_sm_90():
    """On sm_90+ every task kernel starts with griddepcontrol (the launcher's programmatic
    dependent launches): it lets the next kernel start, then waits before touching memory."""
    text = load("tmps.qir")
    for sm in (80, 90):
        ptx = check(text, "k", sm=sm)["ptx"]
        entries = ptx.split(".entry ")[1:]
        assert len(entries) == 3
        for body in entries:
            lines = [ln.strip() for ln in body.split("{", 1)[1].splitlines()
                     if ln.strip() and not ln.strip().startswith(("//", ".reg"))]
            if sm < 90:
                assert "griddepcontrol" not in body
            else:
                assert lines[:2] == ["griddepcontrol.launch_dependents;", "griddepcontrol.wait;"]


def test_kernel_names_are_ptx_identifiers():
    text = load("saxpy.qir").replace("@saxpy", "@sax.py").replace('"saxpy"', '"a-b c"')
    result = ptx_of(text, "sax.py")
    assert result["symbol"] == "qd_sax_py"
    assert result["tasks"][0][0] == "qd_sax_py_t0_a_b_c"
    if PTXAS:
        ptxas(result["ptx"], "names")


def test_sm_is_capped_at_what_llvm_knows():
    assert ptx_of(load("saxpy.qir"), "saxpy", sm=120)["sm"] == 90
    assert ptx_of(load("saxpy.qir"), "saxpy", sm=86)["sm"] == 86
    assert ".target sm_80" in ptx_of(load("saxpy.qir"), "saxpy", sm=80)["ptx"]


def test_block_dim_over_1024_is_an_error():
    text = load("saxpy.qir").replace("block_dim 128", "block_dim 2048")
    with pytest.raises(Exception, match="1024"):
        ptx_of(text, "saxpy")


def test_missing_libdevice_names_where_it_looked():
    """In a fresh process (libdevice is cached once found), QD_LIBDEVICE_PATH naming a file
    that does not exist: it is then the only candidate."""
    code = (
        "from quadrants._core import _testing\n"
        "text = open(%r).read()\n"
        "try:\n"
        "    _testing.qir_to_ptx(text, 'k')\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, exc)\n" % str(QIR_DIR.parent / "_math_kernel.qir")
    )
    kernel = unary_ops_kernel("f32", ["exp"])
    path = QIR_DIR.parent / "_math_kernel.qir"
    path.write_text(kernel)
    try:
        env = dict(os.environ, QD_LIBDEVICE_PATH="/nonexistent/libdevice.10.bc",
                   PYTHONPATH=str(QIR_DIR.parents[2]))
        proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                              text=True, cwd=str(QIR_DIR.parent))
    finally:
        path.unlink()
    out = proc.stdout
    assert "QuadrantsCompilationError" in out
    assert "/nonexistent/libdevice.10.bc" in out and "QD_LIBDEVICE_PATH" in out


def test_half_scalar_parameters():
    """Adjacent f16 and bf16 parameters (LLVM 19 used to merge their loads into a vector the
    NVPTX backend cannot select: an abort, not an error)."""
    text = """\
kernel @k(%h: f16, %b: bf16, %c: u1) {
  task serial {
    %two = const 2 : f16
    %h2 = mul %h, %two : f16
    kernel_ret %h2, 0
    %b2 = add %b, %b : bf16
    kernel_ret %b2, 1
    %nc = not %c : u1
    kernel_ret %nc, 2
  }
}
"""
    check(text, "k", name="half_params")


def test_assert_with_values():
    """assert %c, "fmt", values: the values of the first failing thread go after the flag."""
    text = """\
kernel @k(%n: i32, %x: f64) {
  task range_for {
    %zero = const 0 : i32
    parallel_for %i = %zero to %n {
      %ten = const 10 : i32
      %ok = lt %i, %ten : u1
      assert %ok, "i = %d, x = %.2f", %i, %x
    }
  }
}
"""
    result = check(text, "k", name="assert_values")
    assert result["asserts"] == ["i = %d, x = %.2f"]
    assert "atom.cas" in result["ptx"] or "atom.global.cas" in result["ptx"]


def test_grid_stride_loop_interleaves_only_light_bodies():
    """A light body (saxpy-like) is interleaved: its loads appear once per interleaved
    iteration plus the remainder's; a heavy one (hundreds of instructions) runs one iteration
    per trip, so its registers are those of one body."""
    light = ["%px = elem_ptr %x, %i : ptr<f32, global>", "%a = load %px : f32",
             "%r = add %a, %a : f32", "store %px, %r"]
    ptx = ptx_of(kernel_of(["%x: ndarray<f32, 1>"], light), "k")["ptx"]
    assert ptx.count("ld.global") == 5  # 4 interleaved + 1 remainder
    heavy = ["%px = elem_ptr %x, %i : ptr<f32, global>", "%a0 = load %px : f32"]
    for k in range(1, 120):
        heavy.append(f"%a{k} = mul %a{k - 1}, %a{k - 1} : f32")
    heavy.append("store %px, %a119")
    ptx = ptx_of(kernel_of(["%x: ndarray<f32, 1>"], heavy), "k")["ptx"]
    assert ptx.count("ld.global") == 1
    if PTXAS:
        ptxas(ptx, "heavy")


DOT = """\
kernel @dot(%x: ndarray<f32, 1>, %y: ndarray<f32, 1>) {
  task serial {
    %i0 = const 0 : i32
    %i1 = const 1 : i32
    %i2 = const 2 : i32
    %i3 = const 3 : i32
    %p0 = elem_ptr %x, %i0 : ptr<f32, global>
    %p1 = elem_ptr %x, %i1 : ptr<f32, global>
    %p2 = elem_ptr %x, %i2 : ptr<f32, global>
    %p3 = elem_ptr %x, %i3 : ptr<f32, global>
    %a0 = load %p0 : f32
    %a1 = load %p1 : f32
    %a2 = load %p2 : f32
    %a3 = load %p3 : f32
    %m0 = mul %a0, %a1 : f32
    %m1 = mul %a2, %a3 : f32
    %s0 = sub %a0, %m0 : f32
    %s1 = sub %s0, %m1 : f32
    %q = elem_ptr %y, %i0 : ptr<f32, global>
    store %q, %s1
  }
}
"""


def test_no_reassociation_on_gpus():
    # Fast math on NVPTX contracts (fma) but keeps the order of a chain of updates, as nvcc's
    # --use_fast_math does: (a0 - a0*a1) - a2*a3 stays two dependent fmas, so a shuffle
    # feeding each step is consumed before the next one is read.
    ptx = check(DOT, "dot", options={"fast_math": True})["ptx"]
    assert ptx.count("fma.rn") == 2, ptx


@pytest.mark.parametrize("block_dim", [16, 32, 128])
def test_one_warp_blocks_ask_for_a_full_sm(block_dim):
    # Blocks of at most one warp ask for as many resident blocks per SM as the device holds (32
    # on sm_90), which caps registers at 64 so that a launch of many of them takes one wave.
    text = kernel_of(["%x: ndarray<f32, 1>"], ["%p = elem_ptr %x, %i : ptr<f32, global>",
                                                "%v = load %p : f32", "store %p, %v"], block_dim)
    ptx = check(text, "k")["ptx"]
    assert f".maxntid {block_dim}, 1, 1" in ptx
    assert (".minnctapersm 32" in ptx) == (block_dim <= 32)
    if block_dim <= 32:
        assert ".minnctapersm 16" in ptx_of(text, "k", sm=86)["ptx"]


GLOBAL_ACCESS = """\
field @grid : f32 [64, 96]

kernel @g(%x: ndarray<f32, 1>, %n: i32, %m: i32) {
  task serial {
    %zero = const 0 : i32
    for %i = %zero to %n {
      %p = field_ptr @grid, %i, %m : ptr<f32, global>
      %v = load %p : f32
      %q = elem_ptr %x, %i : ptr<f32, global>
      %w = load %q : f32
      %s = add %v, %w : f32
      store %q, %s
      store %p, %s
    }
  }
}
"""


def test_field_and_ndarray_accesses_are_global():
    # Field and ndarray elements are addressed in the global space, so their loads and stores
    # are ld.global / st.global rather than generic ld / st.
    # (the serial loop is unrolled on the GPU: each access appears once per unrolled copy)
    ptx = check(GLOBAL_ACCESS, "g")["ptx"]
    loads, stores = ptx.count("ld.global.f32"), ptx.count("st.global.f32")
    assert loads >= 2 and loads % 2 == 0 and stores == loads, ptx
    assert "\tld.f32" not in ptx and "\tst.f32" not in ptx, ptx


def reductions_kernel(ty):
    """Every aggregatable atomic of type ty into one address per op (aggregate_atomics makes each
    a partial_* accumulator), plus one into a kernel temporary."""
    ops = ["atomic_add", "atomic_min", "atomic_max"] + (INT_ATOMICS if ty in INTS else [])
    lines = [f"field @r_{op} : {ty} []" for op in ops]
    lines += [f"kernel @k(%x: ndarray<{ty}, 1>) {{", f"  %tmp = tmp_alloc : ptr<{ty}, global>",
              "  task range_for {", "    %zero = const 0 : i32", "    %n = shape %x, 0 : i32",
              "    parallel_for %i = %zero to %n {",
              f"      %px = elem_ptr %x, %i : ptr<{ty}, global>", f"      %v = load %px : {ty}"]
    for op in ops:
        lines += [f"      %p_{op} = field_ptr @r_{op} : ptr<{ty}, global>",
                  f"      %o_{op} = {op} %p_{op}, %v : {ty}"]
    lines += [f"      %o_tmp = atomic_add %tmp, %v : {ty}", "    }", "  }", "}", ""]
    return "\n".join(lines), len(ops) + 1


@pytest.mark.parametrize("ty", ["i32", "u32", "i64", "u64", "f32", "f64"])
def test_reductions(ty):
    """Accumulators combined across the warp (shuffles), one atomic per warp; the host bounds
    survive (the target addresses are left out of them)."""
    text, count = reductions_kernel(ty)
    result = check(text, "k", name=f"reductions_{ty}",
                   passes="instantiate,inline,constfold,aggregate_atomics,dce")
    ptx = result["ptx"]
    assert "shfl.sync.bfly" in ptx
    assert ptx.count("atom.") + ptx.count("red.") >= count
    assert "activemask" in ptx


def test_recursive_func_is_a_device_function():
    ptx = ptx_of(load("recursion.qir"), "fibs")["ptx"]
    assert ".func" in ptx and "call.uni" in ptx and "fn_$_fib" in ptx
    if PTXAS is not None:
        ptxas(ptx, "recursion")


def test_recursive_func_with_ndarray_and_result_array():
    """An ndarray parameter (the caller's record, passed on) and a result array in the caller's
    local memory cross a device-function call."""
    ptx = ptx_of(load("recursion_aggregate.qir"), "prefix_sums")["ptx"]
    assert ".func" in ptx and "call.uni" in ptx and "fn_$_sums" in ptx
    if PTXAS is not None:
        ptxas(ptx, "recursion_aggregate")


SHARED_DOT = """\
kernel @dot(%out: ndarray<f32, 1>, %m: i32) {
  task range_for block_dim 64 {
    %zero = const 0 : i32
    %n = shape %out, 0 : i32
    parallel_for %i = %zero to %n {
      %h = shared_alloc : ptr<[4096 x f32], shared>
      %t = thread_idx : i32
      %slot = array_ptr %h, %t : ptr<f32, shared>
      %fi = cast %t : f32
      store %slot, %fi
      block_sync
      %acc = alloca : ptr<f32, local>
      %z = const 0.0 : f32
      store %acc, %z
      for %k = %zero to %m {
        %j = add %k, %t : i32
        %p = array_ptr %h, %j : ptr<f32, shared>
        %q = array_ptr %h, %k : ptr<f32, shared>
        %a = load %p : f32
        %b = load %q : f32
        %ab = mul %a, %b : f32
        %s = load %acc : f32
        %s2 = add %s, %ab : f32
        store %acc, %s2
      }
      %r = load %acc : f32
      %po = elem_ptr %out, %i : ptr<f32, global>
      store %po, %r
    }
  }
}
"""


def test_shared_memory_is_addressed_in_32_bits_and_inner_loops_unroll():
    # Shared memory is addressed with 32-bit registers (as nvcc's code is), and an innermost
    # loop with a run-time trip count is unrolled (by 4) so that several iterations' loads are
    # issued together.
    ptx = check(SHARED_DOT, "dot")["ptx"]
    shared_loads = re.findall(r"ld\.shared\.f32\s+%f\d+, \[(%\w+)", ptx)
    assert shared_loads and all(r.startswith("%r") for r in shared_loads), ptx
    assert len(shared_loads) >= 8, ptx  # 4 unrolled iterations of 2 loads, then the remainder


def _f32_op_kernel(op, unary):
    body = f"%r = {op} %a : f32" if unary else f"%r = {op} %a, %a : f32"
    return f"""\
kernel @k(%x: ndarray<f32, 1>) {{
  task range_for {{
    %zero = const 0 : i32
    %n = shape %x, 0 : i32
    parallel_for %i = %zero to %n {{
      %p = elem_ptr %x, %i : ptr<f32, global>
      %a = load %p : f32
      {body}
      store %p, %r
    }}
  }}
}}
"""


@pytest.mark.parametrize(
    "op, unary, fast, accurate",
    [
        ("div", False, "div.approx.ftz.f32", "div.rn.f32"),
        ("rsqrt", True, "rsqrt.approx.ftz.f32", "sqrt.rn.f32"),
        ("log", True, "lg2.approx.ftz.f32", None),
        ("sin", True, "sin.approx.ftz.f32", None),
        ("cos", True, "cos.approx.ftz.f32", None),
    ],
)
def test_fast_math_f32_approximations(op, unary, fast, accurate):
    # Under fast math (the default) f32 division, rsqrt, log, sin and cos use the approximate
    # instructions, as the reference implementation does; without it they are correctly rounded
    # (div.rn, sqrt.rn) or libdevice's accurate functions.
    if op in ("log", "sin", "cos") and not HAVE_LIBDEVICE:
        pytest.skip("needs libdevice")
    text = _f32_op_kernel(op, unary)
    assert fast in ptx_of(text, "k")["ptx"]
    slow = ptx_of(text, "k", options={"fast_math": 0})["ptx"]
    assert fast.replace(".ftz", "") not in slow.replace(".ftz", "")
    if accurate:
        assert accurate in slow
    # sqrt stays correctly rounded either way
    assert "sqrt.rn" in ptx_of(_f32_op_kernel("sqrt", True), "k")["ptx"]


def test_volatile_load_and_clock():
    text = """\
kernel @k(%x: ndarray<i32, 1>, %t: ndarray<i64, 1>) {
  task range_for {
    %zero = const 0 : i32
    %n = shape %x, 0 : i32
    parallel_for %i = %zero to %n {
      %p = elem_ptr %x, %i : ptr<i32, global>
      %a = load_volatile %p : i32
      %b = load_volatile %p : i32
      %s = add %a, %b : i32
      store %p, %s
      %c = clock : i64
      %q = elem_ptr %t, %i : ptr<i64, global>
      store %q, %c
    }
  }
}
"""
    ptx = ptx_of(text, "k")["ptx"]
    loads = len(re.findall(r"ld\.volatile(\.global)?\.u32", ptx))
    clocks = len(re.findall(r"%clock64", ptx))
    assert clocks >= 1 and loads == 2 * clocks, ptx  # two loads per iteration: neither merged
