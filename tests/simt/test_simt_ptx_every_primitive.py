"""The CUDA code of qd.simt primitives without a GPU: a kernel using each of them is lowered on
the CPU under cpu_simt (QD_DUMP=passes prints its QIR), and the QIR goes through the CUDA code
generator and ptxas."""

import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from quadrants._core import _testing

SCRIPT = textwrap.dedent('''
    import numpy as np
    import quadrants as qd
    qd.init(arch=qd.cpu, cpu_simt=True, offline_cache=False)
    b, sg, w = qd.simt.block, qd.simt.subgroup, qd.simt.warp

    @qd.kernel
    def k(x: qd.types.ndarray(qd.f32, 1), y: qd.types.ndarray(qd.f64, 1)):
        qd.loop_config(block_dim=128)
        for i in range(x.shape[0]):
            s = b.SharedArray((8, 16), qd.f32)
            t = b.thread_idx()
            s[t // 16, t % 16] = x[i]
            b.sync()
            s[0, 0] += x[i]
            n = b.sync_count_nonzero(x[i] > 0) + b.sync_all_nonzero(1) + b.sync_any_nonzero(0)
            v = sg.shuffle(x[i], qd.u32(1)) + sg.shuffle_xor(y[i], qd.u32(2))
            v += sg.shuffle_up(y[i], qd.u32(1)) + sg.shuffle_down(x[i], qd.u32(1))
            v += sg.broadcast_first(y[i]) + sg.elect() + sg.all_true(n) + sg.any_true(n)
            v += sg.ballot(n) + sg.all_equal(t) + sg.lanemask_lt(sg.invocation_id())
            v += w.shfl_sync_f32(qd.u32(0xffffffff), x[i], 3) + b.global_thread_idx()
            sg.sync()
            b.mem_fence()
            qd.simt.grid.mem_fence()
            y[i] = v + s[1, 2]

    k(np.zeros(128, np.float32), np.zeros(128, np.float64))
''')


def find_ptxas():
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and os.access(os.path.join(root, "bin", "ptxas"), os.X_OK):
            return os.path.join(root, "bin", "ptxas")
    return shutil.which("ptxas")


def test_simt_primitives_compile_to_ptx(arch, tmp_path):
    if arch != "cpu":
        pytest.skip("code generation without a GPU")
    env = dict(os.environ, QD_DUMP="passes")
    script = tmp_path / "simt_kernel.py"
    script.write_text(SCRIPT)
    run = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    qir = run.stderr.split("--- QIR after passes ---", 1)[1]
    qir = qir[: qir.index("\n}\n") + 3]
    for op in ("shared_alloc", "block_sync", "block_sync_count", "shuffle_xor", "shuffle_up",
               "ballot", "vote_all", "subgroup_sync", "fence_block", "fence_device",
               "atomic_add"):
        assert re.search(rf"\b{op}\b", qir), op
    result = _testing.qir_to_ptx(qir, "k")
    ptx = result["ptx"]
    assert "bar.sync" in ptx and "shfl.sync" in ptx and ".shared" in ptx
    ptxas = find_ptxas()
    if ptxas is None:
        pytest.skip("ptxas (CUDA toolkit) is not installed")
    path = tmp_path / "k.ptx"
    path.write_text(ptx)
    subprocess.run([ptxas, "-arch=sm_90", str(path), "-o", str(tmp_path / "k.cubin")], check=True)
