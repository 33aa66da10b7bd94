"""Dr.Jit's own cooperative vectors (PyPI drjit, its CUDA backend) on the network of
coopvec_mlp_bench.py, as a peer: 64 inputs synthesized per thread by the same hash, 64 -> 64 ->
64 -> 64 -> 16 (3 outputs used), fp16, ReLU, n evaluations. Prints the median device time of the
network's kernel (Dr.Jit's kernel history, CUDA events) over repeated evaluations, or why it does
not run. Run it in its own process (it needs drjit, not quadrants):

    python benchmarks/coopvec_drjit_peer.py [--log2 22]
"""

import argparse
import statistics
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log2", type=int, default=22)
    args = parser.parse_args()
    try:
        import drjit as dr
        import drjit.nn as nn
        from drjit.cuda import Float16, TensorXf16, UInt32
    except Exception as exc:  # noqa: BLE001 - report whatever stops it
        sys.exit(f"drjit (CUDA) is not available: {exc}")

    n = 1 << args.log2
    layers = []
    for _ in range(3):
        layers += [nn.Linear(64, 64), nn.ReLU()]
    net = nn.Sequential(*layers, nn.Linear(64, 16))
    net = net.alloc(TensorXf16, 64)
    packed = nn.pack(net, layout="inference")
    net = packed[-1] if isinstance(packed, tuple) else packed

    def evaluate():
        i = dr.arange(UInt32, n)
        xs = []
        for k in range(64):
            h = (i * 2654435761) ^ UInt32(k * 40503 + 0x9E37)
            h ^= h >> 15
            h *= 2246822519
            h ^= h >> 13
            xs.append(Float16(dr.cuda.Float(h & 0xFFFF) / 65535.0 * 2.0 - 1.0))
        y = list(net(nn.CoopVec(*xs)))
        out = [y[0], y[1], y[2]]
        dr.eval(*out)
        return out

    dr.set_flag(dr.JitFlag.KernelHistory, True)
    for _ in range(3):
        evaluate()
    dr.sync_thread()
    dr.kernel_history()  # clear
    times = []
    for _ in range(15):
        evaluate()
        dr.sync_thread()
        hist = [h for h in dr.kernel_history() if h.get("type") == dr.KernelType.JIT]
        if hist:
            times.append(sum(h["execution_time"] for h in hist))
    if not times:
        sys.exit("drjit ran no kernel")
    print(f"drjit {dr.__version__} cooperative vectors (CUDA), n={n}: "
          f"{statistics.median(times):.3f} ms per evaluation (median of {len(times)})")


if __name__ == "__main__":
    main()
