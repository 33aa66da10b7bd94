"""A typical program written against quadrants' public API, kept free of type-checker errors.

tests/typing/test_typing.py runs mypy (with the quadrants.mypy_plugin) and pyright on this
file and expects no errors; it also runs the file, so every annotation here is one the
compiler accepts. docs/typing.md explains the annotation forms used.
"""

import dataclasses

import numpy as np

import quadrants as qd

N = 64

vec3 = qd.types.vector(3, qd.f32)
mat3 = qd.types.matrix(3, 3, qd.f32)


@qd.dataclass
class Particle:
    pos: qd.math.vec3
    mass: qd.f32

    @qd.func
    def momentum(self, vel: qd.math.vec3) -> qd.math.vec3:
        return self.mass * vel


@dataclasses.dataclass
class Buffers:
    x: qd.types.NDArray[qd.f32, 1]
    y: qd.types.NDArray[qd.f32, 1]


@qd.func
def squared(v: qd.f32) -> qd.f32:
    return v * v


@qd.func
def rotate(m: qd.math.mat3, v: qd.math.vec3) -> qd.math.vec3:
    return m @ v


@qd.kernel
def saxpy(a: qd.f32, x: qd.types.NDArray[qd.f32, 1], y: qd.types.NDArray[qd.f32, 1]) -> None:
    for i in range(x.shape[0]):
        y[i] = a * x[i] + y[i]


@qd.kernel
def norm2(x: qd.types.NDArray[qd.f32, 1]) -> qd.f32:
    total = 0.0
    for i in range(x.shape[0]):
        total += squared(x[i])
    return qd.sqrt(total)


@qd.kernel
def scale_buffers(bufs: Buffers, k: qd.f32) -> None:
    for i in range(bufs.x.shape[0]):
        bufs.y[i] = k * bufs.x[i]


@qd.kernel
def fill_grid(g: qd.Template, value: qd.f32) -> None:
    for I in qd.grouped(g):
        g[I] = value + I[0] * 0.5 + I[1]


@qd.kernel
def stencil(src: qd.Template, dst: qd.Template) -> None:
    for i, j in qd.ndrange((1, N - 1), (1, N - 1)):
        dst[i, j] = 0.25 * (src[i - 1, j] + src[i + 1, j] + src[i, j - 1] + src[i, j + 1])


@qd.kernel
def histogram(values: qd.Tensor, bins: qd.types.NDArray[qd.i32, 1]) -> qd.i32:
    count = 0
    for i in range(values.shape[0]):
        b = qd.cast(qd.floor(values[i] * 8.0), qd.i32)
        b = qd.min(qd.max(b, 0), 7)
        qd.atomic_add(bins[b], 1)
        count += 1
    return count


@qd.kernel
def transform(points: qd.types.NDArray[qd.math.vec3, 1], m: qd.math.mat3, out: qd.types.NDArray[qd.f32, 1]) -> None:
    for i in range(points.shape[0]):
        p = rotate(m, points[i])
        out[i] = p.norm() + qd.abs(p[0]) + qd.exp(-p.dot(p))


@qd.kernel
def unrolled(particles: qd.Template, vels: qd.Template) -> qd.f32:
    best = -1.0e30
    for i in particles:
        mom = particles[i].momentum(vels[i])
        for k in qd.static(range(3)):
            qd.atomic_max(best, mom[k])
        best = qd.max(best, qd.select(mom[0] > 0, mom[0], -mom[0]))
    return best


@qd.kernel
def block_sums(x: qd.types.NDArray[qd.f32, 1], sums: qd.types.NDArray[qd.f32, 1]) -> None:
    qd.loop_config(block_dim=32)
    for i in range(x.shape[0]):
        total = qd.simt.subgroup.reduce_add(x[i])
        if qd.simt.block.thread_idx() == 0:
            sums[i // 32] = total


@qd.kernel
def sorted_total(keys: qd.types.NDArray[qd.f32, 1], tmp: qd.types.NDArray[qd.f32, 1],
                 scratch: qd.types.NDArray[qd.u32, 1], n: qd.types.NDArray[qd.i32, 0],
                 out: qd.types.NDArray[qd.f32, 1], count: qd.types.NDArray[qd.i32, 1]) -> None:
    qd.algorithms.sort(keys, tmp, keys, tmp, scratch, n, qd.f32, False, 32, 1)
    qd.algorithms.reduce_add(keys, out, scratch, count[0], qd.f32, 1)


def main() -> None:
    qd.init(arch=qd.cpu, cpu_simt=True)
    rng = np.random.default_rng()

    x = rng.random(N, dtype=np.float32)
    y = rng.random(N, dtype=np.float32)
    expected = 2.0 * x + y
    saxpy(2.0, x, y)
    assert np.allclose(y, expected)

    xs = qd.ndarray(qd.f32, shape=N)
    xs.from_numpy(x)
    assert abs(norm2(xs) - float(np.sqrt(np.sum(x * x)))) < 1e-3

    bufs = Buffers(x=qd.ndarray(qd.f32, shape=N), y=qd.ndarray(qd.f32, shape=N))
    bufs.x.from_numpy(x)
    scale_buffers(bufs, 3.0)
    assert np.allclose(bufs.y.to_numpy(), 3.0 * x)

    grid = qd.field(qd.f32, shape=(N, N))
    out = qd.field(qd.f32, shape=(N, N))
    fill_grid(grid, 1.0)
    stencil(grid, out)
    assert out[1, 1] > 0.0

    values = qd.tensor(qd.f32, shape=N)
    values.from_numpy(x)
    bins = qd.ndarray(qd.i32, shape=8)
    assert histogram(values, bins) == N
    assert int(bins.to_numpy().sum()) == N

    points = qd.Vector.ndarray(3, qd.f32, shape=N)
    points.from_numpy(rng.random((N, 3), dtype=np.float32))
    lengths = qd.ndarray(qd.f32, shape=N)
    transform(points, qd.math.mat3([[1, 0, 0], [0, 1, 0], [0, 0, 1]]), lengths)
    assert lengths.to_numpy().min() > 0.0

    particles = qd.field(Particle, shape=4)
    vels = qd.Vector.field(3, qd.f32, shape=4)
    for i in range(4):
        particles[i].mass = 1.0 + i
        vels[i] = qd.Vector([1.0, -2.0, 0.5])
    assert unrolled(particles, vels) == 4.0

    x = qd.ndarray(qd.f32, shape=64)
    x.from_numpy(np.ones(64, np.float32))
    sums = qd.ndarray(qd.f32, shape=2)
    block_sums(x, sums)
    assert sums.to_numpy().tolist() == [32.0, 32.0]

    keys = np.array([3.0, 1.0, 2.0], np.float32)
    total = np.zeros(1, np.float32)
    scratch = np.zeros(qd.algorithms.sort_scratch_slots(3, 1), np.uint32)
    sorted_total(keys, np.empty_like(keys), scratch, np.array(3, np.int32), total,
                 np.array([3], np.int32))
    assert keys.tolist() == [1.0, 2.0, 3.0] and total[0] == 6.0


if __name__ == "__main__":
    main()
