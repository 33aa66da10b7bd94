"""The generic lowering of qd.nn on CUDA without a GPU: the QIR of kernels with products
(column-major and row-major views, transposed, f16 and f32, a 4-layer MLP) compiled to PTX for
sm_90 and assembled by ptxas wherever the CUDA toolkit is installed. (On a machine with a GPU,
tests/nn runs every test on CUDA too.)"""

import re
import subprocess
import warnings

import numpy as np
import pytest

import quadrants as qd
from quadrants._core import _testing
from quadrants._toolkit import find_ptxas


def vec_array(n):
    return qd.types.ndarray(qd.types.vector(n, qd.f32), 1)


@pytest.fixture
def cpu():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        qd.init(arch=qd.cpu)
    yield
    qd.reset()


def frontend_qir(kernel):
    for entry in kernel._compiled.values():
        for item in entry if isinstance(entry, tuple) else (entry,):
            if type(item).__name__ == "CompiledKernel":
                return item.qir_frontend
    raise AssertionError("no compiled kernel")


def test_mlp_assembles_for_sm90(cpu, keep_qir, tmp_path):
    rng = np.random.default_rng()
    Ws = [rng.standard_normal((33, 7)), rng.standard_normal((33, 33)), rng.standard_normal((5, 33))]
    bs = [rng.standard_normal(33), rng.standard_normal(33), rng.standard_normal(5)]
    _, (W0, W1, W2), (B0, B1, B2) = qd.nn.pack(Ws, bs)
    A = qd.nn.view(rng.standard_normal((7, 5)).astype(np.float32))

    @qd.kernel
    def net(W0: qd.nn.MatrixView, B0: qd.nn.MatrixView, W1: qd.nn.MatrixView,
            B1: qd.nn.MatrixView, W2: qd.nn.MatrixView, B2: qd.nn.MatrixView,
            A: qd.nn.MatrixView, X: vec_array(7), Y: vec_array(5)):
        for i in range(X.shape[0]):
            x = qd.nn.CoopVec(X[i], dtype=qd.f16)
            h = qd.max(qd.nn.matvec(W0, x, B0), 0.0)
            if i % 2 == 0:
                h = qd.tanh(qd.nn.matvec(W1, h, B1))
            y = qd.nn.matvec(W2, h, B2)
            z = A.T @ qd.nn.cast(x, qd.f32)  # row-major f32 view, transposed
            Y[i] = qd.Vector(y) + qd.Vector(qd.nn.cast(z, qd.f16))

    x = np.zeros((3, 7), dtype=np.float32)
    y = np.zeros((3, 5), dtype=np.float32)
    net(W0, B0, W1, B1, W2, B2, A, x, y)  # compiled (and run) on the CPU
    qir = frontend_qir(net)
    assert qir.count("nn_matvec") == 4, qir
    name = re.search(r"^kernel @(\S+)\(", qir, re.M).group(1)
    ptx = _testing.qir_to_ptx(qir, name, sm=90)["ptx"]
    assert "nn_matvec" not in ptx and ".entry" in ptx
    ptxas = find_ptxas()
    if ptxas is None:
        pytest.skip("ptxas (CUDA toolkit) is not installed")
    (tmp_path / "k.ptx").write_text(ptx)
    cmd = [ptxas, "-arch=sm_90", "-o", str(tmp_path / "k.cubin"), str(tmp_path / "k.ptx")]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0 and not proc.stderr, proc.stderr


def test_tensor_core_mlp_assembles_for_sm90(keep_qir, tmp_path):
    """The 64-wide 4-layer f16 MLP of benchmarks/coopvec_mlp_bench.py, lowered with tensor cores
    (the frontend marks the products under cpu_simt as on CUDA, and pack writes the fragment
    order): one mma.sync per (16-row block, 8-output tile, 16-input tile) of every layer, one
    vector load per B fragment, and ptxas assembles it without spilling."""
    import sys

    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parents[2] / "benchmarks"))
    import coopvec_mlp_bench as bench

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        qd.init(arch=qd.cpu, cpu_simt=True, offline_cache=False)
    try:
        Ws, bs = bench.weights()
        _, Wv, Bv = qd.nn.pack(Ws, bs)
        mlp = bench.build()
        out = qd.ndarray(qd.f32, (40, 3))
        mlp(*[v for pair in zip(Wv, Bv) for v in pair], out)
        ref = bench.model(np.arange(40, dtype=np.uint32), Ws, bs)
        assert np.abs(out.to_numpy() - ref).max() <= 2e-2 * np.abs(ref).max()
        qir = frontend_qir(mlp)
    finally:
        qd.reset()
    assert qir.count("tensor_cores") == 4, qir
    name = re.search(r"^kernel @(\S+)\(", qir, re.M).group(1)
    ptx = _testing.qir_to_ptx(qir, name, sm=90)["ptx"]
    assert ptx.count("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") == 2 * (3 * 8 * 4 + 2 * 4)
    # one 8-byte load per B fragment (the weights in fragment order), none element by element
    assert ptx.count("ld.global.v4.b16") == 3 * 8 * 4 + 2 * 4
    assert qir.count("mma_fragments") == 4
    ptxas = find_ptxas()
    if ptxas is None:
        pytest.skip("ptxas (CUDA toolkit) is not installed")
    (tmp_path / "k.ptx").write_text(ptx)
    cmd = [ptxas, "-v", "-arch=sm_90", "-o", str(tmp_path / "k.cubin"), str(tmp_path / "k.ptx")]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "0 bytes spill stores, 0 bytes spill loads" in proc.stderr, proc.stderr
