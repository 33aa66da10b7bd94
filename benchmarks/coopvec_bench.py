"""qd.nn cooperative vectors: a per-thread MLP in one kernel beside NumPy's batched matmul.

The network: 16 inputs -> width -> width -> width -> 16 outputs (4 layers), biases, ReLU between
layers, f16 (or --dtype f32) weights and vectors, f32 accumulation, every thread one evaluation;
n evaluations per call. Prints the median wall time per call (after a warm-up call that
compiles), the evaluations per second, and NumPy's time for the same network as float32 matmuls
over the whole batch (for context: a different computation shape, batched rather than fused per
thread).

    python benchmarks/coopvec_bench.py [--arch cpu|vulkan|cuda] [--width 64] [--log2 16]
                                       [--dtype f16|f32] [--json PATH]
"""

import argparse
import json
import statistics
import time

import numpy as np

import quadrants as qd

N_IN = N_OUT = 16


def build(width, dtype):
    vec = lambda n: qd.types.ndarray(qd.types.vector(n, qd.f32), 1)  # noqa: E731

    @qd.func
    def layer(W: qd.template(), B: qd.template(), h):
        return qd.max(qd.nn.matvec(W, h, B), 0.0)

    @qd.kernel
    def mlp(W0: qd.nn.MatrixView, B0: qd.nn.MatrixView, W1: qd.nn.MatrixView,
            B1: qd.nn.MatrixView, W2: qd.nn.MatrixView, B2: qd.nn.MatrixView,
            W3: qd.nn.MatrixView, B3: qd.nn.MatrixView, X: vec(N_IN), Y: vec(N_OUT)):
        for i in range(X.shape[0]):
            h = qd.nn.CoopVec(X[i], dtype=dtype)
            h = layer(W0, B0, h)
            h = layer(W1, B1, h)
            h = layer(W2, B2, h)
            Y[i] = qd.Vector(qd.nn.matvec(W3, h, B3))

    return mlp


def median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="cpu", choices=["cpu", "vulkan", "cuda"])
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--log2", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--dtype", default="f16", choices=["f16", "f32"],
                        help="dtype of the weights and of the vectors")
    parser.add_argument("--json")
    args = parser.parse_args()
    qd.init(arch=getattr(qd, args.arch))
    rng = np.random.default_rng(0)
    n, w = 1 << args.log2, args.width
    dims = [N_IN, w, w, w, N_OUT]
    Ws = [rng.standard_normal((dims[i + 1], dims[i])) * np.sqrt(2 / dims[i]) for i in range(4)]
    bs = [rng.standard_normal(dims[i + 1]) * 0.1 for i in range(4)]
    dtype = getattr(qd, args.dtype)
    _, Wv, bv = qd.nn.pack(Ws, bs, dtype=dtype)
    views = [v for pair in zip(Wv, bv) for v in pair]
    x = rng.uniform(-1, 1, (n, N_IN)).astype(np.float32)
    X = qd.Vector.ndarray(N_IN, qd.f32, n)
    X.from_numpy(x)
    Y = qd.Vector.ndarray(N_OUT, qd.f32, n)
    mlp = build(w, dtype)

    def run():
        mlp(*views, X, Y)
        qd.sync()

    t0 = time.perf_counter()
    run()
    first = time.perf_counter() - t0
    ours = median_time(run, args.repeats)

    np_dtype = np.float16 if args.dtype == "f16" else np.float32
    W32 = [W.astype(np_dtype).astype(np.float32) for W in Ws]
    b32 = [b.astype(np_dtype).astype(np.float32) for b in bs]

    def numpy_mlp():
        h = x
        for i in range(4):
            h = h @ W32[i].T + b32[i]
            if i < 3:
                h = np.maximum(h, 0)
        return h

    ref = numpy_mlp()
    rel = float(np.linalg.norm(Y.to_numpy() - ref) / np.linalg.norm(ref))
    theirs = median_time(numpy_mlp, args.repeats)
    macs = sum(dims[i] * dims[i + 1] for i in range(4))
    rows = {
        "arch": args.arch, "dtype": args.dtype, "width": w, "n": n, "first_call_s": first, "qd_nn_s": ours,
        "qd_nn_evals_per_s": n / ours, "qd_nn_gmac_per_s": n * macs / ours / 1e9,
        "numpy_f32_s": theirs, "rel_l2_vs_numpy": rel,
    }
    print(f"MLP {N_IN}->{w}x3->{N_OUT}, {args.dtype}, n={n}, arch={args.arch}")
    print(f"  first call (compile + run): {first * 1e3:9.1f} ms")
    print(f"  qd.nn per-thread MLP:        {ours * 1e3:9.2f} ms  ({n / ours / 1e6:.2f} M evals/s, "
          f"{n * macs / ours / 1e9:.2f} GMAC/s)")
    print(f"  NumPy f32 batched matmul:    {theirs * 1e3:9.2f} ms")
    print(f"  relative L2 difference:      {rel:.2e}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
