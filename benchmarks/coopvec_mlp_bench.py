"""The fp16 MLP of ../shared/bench/coopvec_mlp.cu as a qd.nn kernel, beside its peers, on CUDA.

The network, per evaluation i: 64 inputs synthesized in the kernel from (i, k) by the same hash as
the hand-written kernel, then 64 -> 64 -> 64 -> 64 -> 16 (3 outputs used), fp16 weights and
vectors, fp32 accumulation, biases, ReLU between layers; n evaluations per call. Prints the
median device time per call (CUDA events around 10 calls queued back to back, after warm-up) of
  - qd.nn with tensor cores (the default on sm_80 and later),
  - qd.nn with nn_tensor_cores=False (per-thread loops),
and, where present, the hand-written mma.sync kernel (--hand: path of the coopvec_mlp binary,
which prints its own time) and torch eager (--torch: path of coopvec_torch_mlp.py). The output
of the tensor-core kernel is checked against a float64 NumPy model of the network (fp16 rounding
of weights, inputs and the hidden activations modelled) on a sample of evaluations.

    python benchmarks/coopvec_mlp_bench.py [--log2 22] [--hand PATH] [--torch PATH] [--json PATH]
"""

import argparse
import json
import statistics
import subprocess
import sys

import numpy as np

import quadrants as qd

W = 64
NOUT = 16
NUSE = 3


def weights():
    """The network's weights and biases, drawn like the hand-written kernel's (different values)."""
    rng = np.random.default_rng(1)
    s = 1.0 / np.sqrt(W) * 1.7
    Ws = [s * rng.uniform(-1, 1, (W, W)) for _ in range(3)] + [s * rng.uniform(-1, 1, (NOUT, W))]
    bs = [0.1 * rng.uniform(-1, 1, W) for _ in range(3)] + [0.1 * rng.uniform(-1, 1, NOUT)]
    return Ws, bs


def inputs_np(idx):
    """The synthesized inputs of evaluations idx (uint32 array) as float32, shape (len, 64)."""
    i = idx.astype(np.uint64)[:, None]
    k = np.arange(W, dtype=np.uint64)[None, :]
    m = np.uint64(0xFFFFFFFF)
    h = ((i * np.uint64(2654435761)) & m) ^ ((k * np.uint64(40503) + np.uint64(0x9E37)) & m)
    h ^= h >> np.uint64(15)
    h = (h * np.uint64(2246822519)) & m
    h ^= h >> np.uint64(13)
    return ((h & np.uint64(0xFFFF)).astype(np.float32) / np.float32(65535.0) * np.float32(2.0)
            - np.float32(1.0))


def build():
    @qd.func
    def input_val(i: qd.u32, k: qd.u32) -> qd.f32:
        h = i * qd.u32(2654435761) ^ (k * qd.u32(40503) + qd.u32(0x9E37))
        h ^= h >> 15
        h *= qd.u32(2246822519)
        h ^= h >> 13
        return qd.f32(h & 0xFFFF) / 65535.0 * 2.0 - 1.0

    @qd.kernel
    def mlp(W0: qd.nn.MatrixView, B0: qd.nn.MatrixView, W1: qd.nn.MatrixView,
            B1: qd.nn.MatrixView, W2: qd.nn.MatrixView, B2: qd.nn.MatrixView,
            W3: qd.nn.MatrixView, B3: qd.nn.MatrixView, out: qd.types.ndarray(qd.f32, 2)):
        for i in range(out.shape[0]):
            x = qd.nn.CoopVec([input_val(qd.u32(i), qd.u32(k)) for k in qd.static(range(W))],
                              dtype=qd.f16)
            h = qd.max(qd.nn.matvec(W0, x, B0), 0.0)
            h = qd.max(qd.nn.matvec(W1, h, B1), 0.0)
            h = qd.max(qd.nn.matvec(W2, h, B2), 0.0)
            a, b, c, *_ = qd.nn.matvec(W3, h, B3)
            out[i, 0] = qd.f32(a)
            out[i, 1] = qd.f32(b)
            out[i, 2] = qd.f32(c)

    return mlp


def model(idx, Ws, bs):
    """float64 model: fp16 inputs, weights, biases and hidden activations, f64 sums."""
    f16 = lambda a: a.astype(np.float16).astype(np.float64)  # noqa: E731
    h = f16(inputs_np(idx))
    for layer in range(4):
        h = h @ f16(Ws[layer]).T + f16(bs[layer])
        h = f16(np.maximum(h, 0.0) if layer < 3 else h)
    return h[:, :NUSE]


def device_ms(fn, iters=15, reps=10):
    """Device time per call: CUDA events around `reps` calls queued back to back (so the host's
    time to launch one overlaps the GPU's work on the previous), median over `iters`."""
    import torch

    for _ in range(3):
        fn()
    qd.sync()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(reps):
            fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / reps)
    return statistics.median(times)


def run_qd(n, tensor_cores, Ws, bs):
    qd.init(arch=qd.cuda, offline_cache=False, nn_tensor_cores=tensor_cores)
    _, Wv, Bv = qd.nn.pack(Ws, bs)
    views = [v for pair in zip(Wv, Bv) for v in pair]
    out = qd.ndarray(qd.f32, (n, NUSE))
    mlp = build()
    ms = device_ms(lambda: mlp(*views, out))
    y = out.to_numpy()
    qd.reset()
    return ms, y


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log2", type=int, default=22)
    parser.add_argument("--hand", help="the coopvec_mlp binary (nvcc -O3 -arch=sm_90)")
    parser.add_argument("--torch", help="coopvec_torch_mlp.py")
    parser.add_argument("--json")
    args = parser.parse_args()
    from quadrants import _core

    if not _core.cuda_available():
        sys.exit("coopvec_mlp_bench.py measures the tensor-core form: it needs a CUDA GPU")
    n = 1 << args.log2
    Ws, bs = weights()
    rows = {"n": n}
    rng = np.random.default_rng()
    sample = np.unique(np.concatenate([np.arange(64), rng.integers(0, n, 4096), [n - 1]]))
    ref = model(sample.astype(np.uint32), Ws, bs)
    for tc in (True, False):
        ms, y = run_qd(n, tc, Ws, bs)
        err = float(np.abs(y[sample] - ref).max() / np.abs(ref).max())
        key = "qd_nn_tensor_cores" if tc else "qd_nn_loops"
        rows[key + "_ms"] = ms
        rows[key + "_max_rel_err"] = err
        print(f"{key:24s} {ms:8.3f} ms   max |err| / max |y| = {err:.1e}", flush=True)
    if args.hand:
        out = subprocess.run([args.hand, str(n)], capture_output=True, text=True).stdout
        print("hand-written (coopvec_mlp.cu):\n  " + out.strip().replace("\n", "\n  "))
        rows["hand_output"] = out
    if args.torch:
        out = subprocess.run([sys.executable, args.torch, str(n)], capture_output=True,
                             text=True).stdout
        print("torch eager: " + out.strip())
        rows["torch_output"] = out
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
