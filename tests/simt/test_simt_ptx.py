"""PTX of kernels using every SIMT primitive, without a GPU: the kernels are compiled on the CPU
(cpu_simt=True, keeping the frontend's QIR), the QIR goes through the NVPTX code generator
(``_testing.qir_to_ptx``) and ``ptxas -arch=sm_90`` where a CUDA toolkit is installed."""

import pathlib
import re
import subprocess
import tempfile

import pytest

import quadrants as qd
from quadrants import _runtime
from quadrants._core import _testing
from quadrants._toolkit import find_ptxas


PTXAS = find_ptxas()


@pytest.fixture(autouse=True)
def keep_qir(arch, monkeypatch):
    if arch != "cpu":
        pytest.skip("compiles through the CPU backend")
    original = _runtime.compile_options
    monkeypatch.setattr(
        _runtime, "compile_options", lambda: {**original(), "keep_qir": True, "offline_cache": False}
    )


def run_ptxas(ptx, *flags):
    """ptxas -arch=sm_90 on the PTX (flags added); the finished process, output captured."""
    with tempfile.TemporaryDirectory() as tmp:
        src = pathlib.Path(tmp) / "k.ptx"
        src.write_text(ptx)
        return subprocess.run([PTXAS, *flags, "-arch=sm_90", "-o", str(src.with_suffix(".cubin")),
                               str(src)], capture_output=True, text=True)


def ptx_of(kernel, *args):
    kernel(*args)
    compiled = list(kernel._compiled.values())[0][0]
    text = compiled.qir_frontend
    name = text.split("kernel @", 1)[1].split("(", 1)[0]
    ptx = _testing.qir_to_ptx(text, name)["ptx"]
    if PTXAS is not None:
        proc = run_ptxas(ptx)
        assert proc.returncode == 0 and "warning" not in proc.stderr.lower(), proc.stderr + ptx
    return ptx


def test_block_ptx():
    @qd.kernel
    def k(x: qd.types.ndarray(qd.f32, ndim=1), y: qd.types.ndarray(qd.i32, ndim=1)):
        qd.loop_config(block_dim=128)
        for i in range(256):
            s = qd.simt.block.SharedArray((2, 64), qd.f32)
            h = qd.simt.block.SharedArray(8, qd.i32)
            tid = qd.simt.block.thread_idx()
            s[tid // 64, tid % 64] = x[i]
            qd.simt.block.sync()
            h[tid % 8] += 1
            qd.simt.block.mem_fence()
            qd.simt.grid.mem_fence()
            a = qd.simt.block.sync_all_nonzero(y[i])
            b = qd.simt.block.sync_any_nonzero(y[i])
            c = qd.simt.block.sync_count_nonzero(y[i])
            x[i] = s[1 - tid // 64, tid % 64]
            y[i] = a + b + c + h[0] + qd.simt.block.global_thread_idx()

    ptx = ptx_of(k, qd.ndarray(qd.f32, 256), qd.ndarray(qd.i32, 256))
    for needle in ("bar.sync", "bar.red.and", "bar.red.or", "bar.red.popc", ".shared",
                   "membar.cta", "membar.gl", ".maxntid 128, 1, 1", "atom.shared.add"):
        assert needle in ptx, needle


@pytest.mark.parametrize("dtype", [qd.i32, qd.u32, qd.f32, qd.f64, qd.i64, qd.u64])
def test_subgroup_ptx(dtype):
    @qd.kernel
    def k(x: qd.types.ndarray(dtype, ndim=1), y: qd.types.ndarray(qd.u64, ndim=1)):
        qd.loop_config(block_dim=64)
        for i in range(128):
            v = x[i]
            v = qd.simt.subgroup.shuffle(v, qd.u32(3))
            v = qd.simt.subgroup.shuffle_xor(v, qd.u32(1))
            v = qd.simt.subgroup.shuffle_up(v, qd.u32(2))
            v = qd.simt.subgroup.shuffle_down(v, qd.u32(2))
            v = qd.simt.subgroup.broadcast(v, qd.u32(0))
            v = qd.simt.subgroup.broadcast_first(v)
            x[i] = v
            qd.simt.subgroup.sync()
            p = qd.simt.subgroup.invocation_id() + qd.simt.subgroup.elect()
            p += qd.simt.subgroup.all_true(p) + qd.simt.subgroup.any_true(p)
            p += qd.simt.subgroup.all_equal(v)
            y[i] = (qd.simt.subgroup.ballot(p) + qd.simt.subgroup.ballot_first_n(p, 4)
                    + qd.simt.subgroup.lanemask_lt(p % 32) + qd.simt.subgroup.lanemask_ge(p % 32))

    ptx = ptx_of(k, qd.ndarray(dtype, 128), qd.ndarray(qd.u64, 128))
    for needle in ("shfl.sync.idx", "shfl.sync.bfly", "shfl.sync.up", "shfl.sync.down",
                   "vote.sync.ballot", "vote.sync.all", "vote.sync.any", "bar.warp.sync"):
        assert needle in ptx, needle


def test_warp_ptx():
    @qd.kernel
    def k(x: qd.types.ndarray(qd.i32, ndim=1), f: qd.types.ndarray(qd.f32, ndim=1)):
        qd.loop_config(block_dim=32)
        for i in range(64):
            m = qd.u32(0xFFFFFFFF)
            a = qd.simt.warp.shfl_sync_i32(m, x[i], 1) + qd.simt.warp.shfl_xor_i32(m, x[i], 2)
            a += qd.simt.warp.shfl_up_i32(m, a, 1) + qd.simt.warp.shfl_down_i32(m, a, 1)
            a += qd.simt.warp.all_nonzero(m, a) + qd.simt.warp.any_nonzero(m, a)
            a += qd.simt.warp.unique(m, a)
            a += qd.cast(qd.simt.warp.ballot(a) + qd.simt.warp.active_mask(), qd.i32)
            qd.simt.warp.sync(m)
            f[i] = (qd.simt.warp.shfl_sync_f32(m, f[i], 0) + qd.simt.warp.shfl_up_f32(m, f[i], 1)
                    + qd.simt.warp.shfl_down_f32(m, f[i], 1))
            x[i] = a

    ptx = ptx_of(k, qd.ndarray(qd.i32, 64), qd.ndarray(qd.f32, 64))
    assert "shfl.sync" in ptx and "vote.sync" in ptx


def test_sync_masks_ptx():
    # subgroup.sync() is __syncwarp(0xFFFFFFFF): a barrier of all 32 lanes that reconverges
    # those that diverged, so it takes the full mask, never the active one; warp.sync(m) is
    # __syncwarp(m). The deprecated subgroup.barrier() is subgroup.sync().
    import re

    @qd.kernel
    def k(x: qd.types.ndarray(qd.i32, ndim=1), m: qd.u32):
        qd.loop_config(block_dim=64)
        for i in range(128):
            for _ in range(i % 3):
                x[i] += 1
            qd.simt.subgroup.sync()
            qd.simt.warp.sync(m)
            qd.simt.subgroup.barrier()

    with pytest.warns(DeprecationWarning, match="subgroup.barrier is deprecated"):
        ptx = ptx_of(k, qd.ndarray(qd.i32, 128), 0xFFFF)
    qir = list(k._compiled.values())[0][0].qir_frontend
    syncs = re.findall(r"^ *subgroup_sync (%\w+)", qir, re.MULTILINE)
    full = set(re.findall(r"^ *(%\w+) = const 4294967295 : u32", qir, re.MULTILINE))
    assert len(syncs) == 3 and syncs[0] in full and syncs[1] == "%m" and syncs[2] in full, qir
    masks = re.findall(r"bar\.warp\.sync\s+([^;]+);", ptx)
    assert masks[0] == masks[2] == "-1" and re.fullmatch(r"%r\d+", masks[1]), ptx
    assert masks[1] in re.findall(r"ld\.param\.u32\s+(%r\d+),", ptx), ptx
    assert "activemask" not in ptx, ptx


def test_warp_sync_mask_conversions():
    # The mask becomes a u32 as the other u32 arguments do: i32 values are cast, literals must
    # fit the default integer type (qd.u32(0xFFFFFFFF) for the full mask).
    import re

    @qd.kernel
    def k(x: qd.types.ndarray(qd.i32, ndim=1)):
        qd.loop_config(block_dim=32)
        for i in range(32):
            qd.simt.warp.sync(-1)
            qd.simt.warp.sync(x[i])
            qd.simt.warp.sync(qd.u32(0xFFFFFFFF))

    ptx = ptx_of(k, qd.ndarray(qd.i32, 32))
    qir = list(k._compiled.values())[0][0].qir_frontend
    assert re.search(r"= cast %\w+ : u32", qir) and "subgroup_sync" in qir, qir
    masks = re.findall(r"bar\.warp\.sync\s+([^;]+);", ptx)
    assert len(masks) == 3 and masks[0] == masks[2] == "-1" and masks[1].startswith("%r"), ptx

    @qd.kernel
    def bad(x: qd.types.ndarray(qd.i32, ndim=1)):
        qd.loop_config(block_dim=32)
        for i in range(32):
            qd.simt.warp.sync()

    with pytest.raises(qd.QuadrantsSyntaxError, match=r"warp.sync\(\) takes 1 argument, 0 given"):
        bad(qd.ndarray(qd.i32, 32))


def test_block_stride_loop_in_ptx():
    # Tasks with barriers get the block-stride loop: the trip count depends on the block only.
    @qd.kernel
    def k(y: qd.types.ndarray(qd.i32, ndim=1), n: qd.i32):
        qd.loop_config(block_dim=256)
        for i in range(n):
            qd.simt.block.sync()
            y[i] = i

    ptx = ptx_of(k, qd.ndarray(qd.i32, 300), 300)
    assert "bar.sync" in ptx


def test_collectives_ptx():
    blk, sg = qd.simt.block, qd.simt.subgroup

    @qd.kernel
    def k(x: qd.types.ndarray(qd.f32, ndim=1), keys: qd.types.ndarray(qd.u32, ndim=1),
          y: qd.types.ndarray(qd.i32, ndim=1)):
        qd.loop_config(block_dim=256)
        for i in range(512):
            v = blk.reduce_all_add(x[i], 256, qd.f32) + blk.inclusive_max(x[i], 256, qd.f32)
            v += blk.exclusive_min(x[i], 256, qd.f32) + sg.reduce_add(x[i])
            v += sg.segmented_reduce_max(x[i], y[i]) + sg.exclusive_add_tiled(x[i], 3)
            a, b = sg.bitonic_sort_kv(y[i], x[i])
            bins = blk.SharedArray((256,), qd.i32)
            excl = blk.SharedArray((256,), qd.i32)
            r = blk.radix_rank_match_atomic_or(keys[i], 256, 8, 0, 8, bins, excl)
            x[i] = v + b
            y[i] = a + r

    ptx = ptx_of(k, qd.ndarray(qd.f32, 512), qd.ndarray(qd.u32, 512), qd.ndarray(qd.i32, 512))
    assert "bar.sync" in ptx and "shfl.sync" in ptx and ".shared.or.b32" in ptx


def ptxas_usage(ptx):
    """(registers, spill store bytes) that ptxas -v reports for the PTX's kernel."""
    import re

    proc = run_ptxas(ptx, "-v")
    assert proc.returncode == 0, proc.stderr
    regs = int(re.search(r"Used (\d+) registers", proc.stderr).group(1))
    spills = int(re.search(r"(\d+) bytes spill stores", proc.stderr).group(1))
    return regs, spills


def test_lane_values_are_recomputed_inside_loops():
    # An identity tile made in each step of a loop: its 16 lane compares are loop-invariant, and
    # kept as hoisted values they would hold 16 registers for the whole loop. The code generator
    # recomputes them in the loop from a fresh lane id read instead.
    @qd.kernel
    def k(a: qd.types.ndarray(qd.f32, ndim=2), out: qd.types.ndarray(qd.f32, ndim=2), steps: qd.i32):
        qd.loop_config(block_dim=16)
        for i in range(16):
            for s in range(steps):
                t = qd.simt.Tile16x16.eye(dtype=qd.f32)
                t[:] = a[s * 16:s * 16 + 16, 0:12]
                out[s * 16:s * 16 + 16, 0:16] = t

    import re

    ptx = ptx_of(k, qd.ndarray(qd.f32, (32, 16)), qd.ndarray(qd.f32, (32, 16)), 2)
    # the lane id reads the code generator may neither hoist nor merge (inline PTX)
    pinned = set(re.findall(r"mov\.u32 (%r\d+), %laneid;", ptx))
    compares = dict(re.findall(r"setp\.eq\.s32\s+(%p\d+), (%r\d+), \d+;", ptx))
    selects = re.findall(r"selp\.f32\s+%f\d+, 0f3F800000, 0f00000000, (%p\d+);", ptx)
    assert pinned and selects
    assert all(compares.get(p) in pinned for p in selects), ptx


@pytest.mark.skipif(PTXAS is None, reason="needs ptxas (CUDA toolkit)")
def test_tile_cholesky_demo_registers():
    # The blocked Tile16x16 Cholesky of misc/demos, one 16-thread block per matrix: asked for 32
    # blocks per SM (a whole H100 SM of one-warp blocks), it must fit 64 registers. Without the
    # lane predicates, identity tile and column bounds recomputed in the loops it needed 127
    # and spilled 276 bytes at 64; it now spills 20 (at 48 bytes an H100 ran it 1.47x faster than
    # with 79 registers and no spills, 920 -> 629 us).
    import importlib.util

    path = pathlib.Path(__file__).resolve().parents[2] / "misc" / "demos" / "cholesky_blocked.py"
    spec = importlib.util.spec_from_file_location("cholesky_blocked", path)
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    a_field, kernels = demo.build(92, 2)
    a_field.from_numpy(demo.spd_batch(92, 2))
    kernel = dict((name, k) for name, _, k, _ in kernels)["tile16"]
    ptx = ptx_of(kernel)
    assert ".minnctapersm 32" in ptx
    regs, spills = ptxas_usage(ptx)
    assert regs <= 64, regs
    assert spills <= 20, spills


def test_one_lane_mask_per_block():
    # Each subgroup operation takes the mask of the active lanes; within one block of straight
    # code the lanes active at the first read run all the later operations, so one read serves.
    sg = qd.simt.subgroup

    @qd.kernel
    def k(x: qd.types.ndarray(qd.f32, ndim=1)):
        qd.loop_config(block_dim=32)
        for i in range(32):
            v = x[i]
            for j in qd.static(range(8)):
                v += sg.shuffle(v, qd.u32(j))
            x[i] = v

    ptx = ptx_of(k, qd.ndarray(qd.f32, 32))
    assert ptx.count("shfl.sync.idx.b32") == 8
    assert ptx.count("activemask.b32") == 1, ptx


def test_min_blocks_per_sm():
    # qd.loop_config(min_blocks_per_sm=k) is CUDA's __launch_bounds__(block_dim, k): ptxas budgets
    # registers so that k blocks fit on an SM (65536 / (256 * 2) = 128 here)
    @qd.kernel
    def k(x: qd.types.ndarray(qd.f32, ndim=1)):
        qd.loop_config(block_dim=256, min_blocks_per_sm=2)
        for i in range(x.shape[0]):
            x[i] = x[i] * 2.0

    ptx = ptx_of(k, qd.ndarray(qd.f32, 8))
    assert ".maxntid 256, 1, 1" in ptx and ".minnctapersm 2" in ptx
    for entry in k._compiled.values():
        for item in entry if isinstance(entry, tuple) else (entry,):
            if type(item).__name__ == "CompiledKernel":
                assert "task range_for block_dim 256 min_blocks_per_sm 2 {" in item.qir_frontend
                assert _testing.parse_print(item.qir_frontend) == item.qir_frontend


@pytest.mark.parametrize("value", [0, 33, 1.5, "2"])
def test_min_blocks_per_sm_errors(value):
    @qd.kernel
    def k(x: qd.types.ndarray(qd.f32, ndim=1)):
        qd.loop_config(min_blocks_per_sm=value)
        for i in range(x.shape[0]):
            x[i] = 1.0

    with pytest.raises(qd.QuadrantsSyntaxError, match="min_blocks_per_sm must be an integer from 1 to 32"):
        k(qd.ndarray(qd.f32, 4))


def test_match_any_ptx():
    @qd.kernel
    def k(x: qd.types.ndarray(qd.i32, ndim=1), y: qd.types.ndarray(qd.i64, ndim=1),
          out: qd.types.ndarray(qd.u32, ndim=1)):
        for i in range(x.shape[0]):
            out[i] = qd.simt.warp.match_any(qd.u32(0xFFFFFFFF), x[i]) ^ \
                qd.simt.warp.match_any(qd.u32(0xFFFFFFFF), y[i])

    ptx = ptx_of(k, qd.ndarray(qd.i32, 8), qd.ndarray(qd.i64, 8), qd.ndarray(qd.u32, 8))
    assert "match.any.sync.b32" in ptx and "match.any.sync.b64" in ptx


@pytest.mark.parametrize("dtype", [qd.f32, qd.f64])
def test_float_atomic_sub_is_an_atomic_add(dtype):
    """`h[i] -= s` on shared memory (atomic under augmented assignment) and qd.atomic_sub on
    global memory subtract floats with the GPU's atomic add of the negated value (exact: a - b is
    a + (-b)), not with a compare-and-swap loop."""

    @qd.kernel
    def k(x: qd.types.ndarray(dtype, ndim=1)):
        qd.loop_config(block_dim=64)
        for i in range(128):
            h = qd.simt.block.SharedArray((64,), dtype)
            t = qd.simt.block.thread_idx()
            h[t] = x[i]
            qd.simt.block.sync()
            h[(t + 1) % 64] -= x[i] * 2
            qd.simt.block.sync()
            qd.atomic_sub(x[(i + 5) % 128], h[t])

    ptx = ptx_of(k, qd.ndarray(dtype, 128))
    bits = 32 if dtype == qd.f32 else 64
    assert f"atom.shared.add.f{bits}" in ptx
    assert f"atom.global.add.f{bits}" in ptx or f"red.global.add.f{bits}" in ptx
    assert "atom.shared.cas" not in ptx and "atom.global.cas" not in ptx
    assert re.search(r"neg(\.ftz)?\.f%d" % bits, ptx)
