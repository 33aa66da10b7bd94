"""Vector/matrix kernels: the transform kernel of docs/matrix.md against a saxpy of the same bytes.

  transform  out[i] = matrices[i] @ positions[i] over 2^22 positions: ndarrays of vec3 f32 in and
             out, of mat3 f32 in: (12 + 36 + 12) bytes per element
  saxpy      y[i] = a * x[i] + y[i] over f32 ndarrays sized to move the same number of bytes
             (12 bytes per element)

Both run in the same process on --arch; the table gives the median time of --repeat calls
(after a warm-up) and the bandwidth it implies. On a GPU, the transform kernel should run near
the saxpy's bandwidth: the 3x3 product is a few registers of work per element.

    python benchmarks/matrix_bench.py [--arch cpu|cuda] [--log2n 22] [--repeat 20] [--json PATH]
"""

import argparse
import json
import statistics
import time

import numpy as np

import quadrants as qd

vec3f = qd.types.vector(3, qd.f32)
mat3f = qd.types.matrix(3, 3, qd.f32)


@qd.kernel
def transform(
    positions: qd.types.NDArray[vec3f, 1],
    matrices: qd.types.NDArray[mat3f, 1],
    out: qd.types.NDArray[vec3f, 1],
) -> None:
    for i in range(positions.shape[0]):
        out[i] = matrices[i] @ positions[i]


@qd.kernel
def saxpy(a: qd.f32, x: qd.types.NDArray[qd.f32, 1], y: qd.types.NDArray[qd.f32, 1]) -> None:
    for i in range(x.shape[0]):
        y[i] = a * x[i] + y[i]


def median_seconds(fn, repeat):
    fn()
    qd.sync()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        qd.sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="cpu")
    parser.add_argument("--log2n", type=int, default=22)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()
    qd.init(arch=getattr(qd, args.arch), offline_cache=False)

    n = 1 << args.log2n
    rng = np.random.default_rng(0)
    positions = qd.ndarray(vec3f, shape=(n,))
    matrices = qd.ndarray(mat3f, shape=(n,))
    out = qd.ndarray(vec3f, shape=(n,))
    pn = rng.standard_normal((n, 3)).astype(np.float32)
    mn = rng.standard_normal((n, 3, 3)).astype(np.float32)
    positions.from_numpy(pn)
    matrices.from_numpy(mn)
    transform_bytes = n * (12 + 36 + 12)

    # saxpy moves 12 bytes per element (read x, read y, write y): the same total bytes.
    m = transform_bytes // 12
    x = qd.ndarray(qd.f32, shape=(m,))
    y = qd.ndarray(qd.f32, shape=(m,))
    x.from_numpy(rng.standard_normal(m).astype(np.float32))

    t_transform = median_seconds(lambda: transform(positions, matrices, out), args.repeat)
    t_saxpy = median_seconds(lambda: saxpy(2.0, x, y), args.repeat)

    check = out.to_numpy()[:1024]
    expect = np.einsum("nij,nj->ni", mn[:1024].astype(np.float64), pn[:1024])
    error = float(np.abs(check - expect).max())

    rows = [
        ("transform (3x3 @ vec3)", t_transform, transform_bytes),
        ("saxpy, same bytes", t_saxpy, m * 12),
    ]
    print(f"vector/matrix kernels on {args.arch}, n = 2^{args.log2n}, median of {args.repeat}")
    print(f"{'kernel':<24} {'time':>10} {'GB/s':>8}")
    results = {}
    for name, seconds, nbytes in rows:
        gbs = nbytes / seconds / 1e9
        print(f"{name:<24} {seconds * 1e3:>8.3f}ms {gbs:>8.1f}")
        results[name] = {"seconds": seconds, "bytes": nbytes, "GB/s": gbs}
    print(f"transform / saxpy bandwidth: {rows[1][1] / rows[0][1] * rows[0][2] / rows[1][2]:.2f}")
    print(f"max abs error of the transform (first 1024): {error:.2e}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"arch": args.arch, "log2n": args.log2n, "results": results,
                       "max_abs_error": error}, f, indent=2)


if __name__ == "__main__":
    main()
