// Hand-written CUDA C of the two shared-memory Cholesky kernels of the reference's
// misc/demos/cholesky_blocked.py (64x64 SPD matrices, one block per matrix, the matrix in
// shared memory with a padded row of N + 1 floats), the yardstick for the code Quadrants
// generates from the same kernels written in Python (benchmarks/cholesky/chol_shared.py):
//
//   baseline  64 threads: Cholesky-Crout column by column; thread 0 computes the diagonal
//             element, then each thread the rows j = col + 1 + tid, tid + 64, ... below it;
//             row r is loaded and stored by thread r % 64;
//   blocked   16 threads: the same on a 4 x 4 grid of 16 x 16 blocks (update of the diagonal
//             block, scalar Crout inside it, then update and triangular solve of each block
//             below it), a block barrier after every step.
//
//   nvcc -O3 -arch=sm_90 [--use_fast_math] -o chol_shared chol_shared.cu
//   ./chol_shared [ENVS] [WARMUP] [ITERS]   ->  "baseline <us> us", "blocked <us> us"
//
// Times are medians over ITERS launches (CUDA events around each), after WARMUP launches; each
// result is checked by reconstruction of the first matrices.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

constexpr int N = 64;
constexpr int TILE = 16;
constexpr int NB = N / TILE;
constexpr float EPS = 1e-12f;

__global__ void __launch_bounds__(64) chol_baseline(const float *__restrict__ a_all, float *__restrict__ l_all)
{
    __shared__ float h[N][N + 1];
    const int tid = threadIdx.x;
    const float *a = a_all + (size_t)blockIdx.x * N * N;
    float *l = l_all + (size_t)blockIdx.x * N * N;
    for (int row = 0; row < N; row++) {
        if (row % 64 == tid) {
            for (int col = 0; col <= row; col++) {
                h[row][col] = a[row * N + col];
            }
        }
    }
    __syncthreads();
    for (int c = 0; c < N; c++) {
        if (tid == 0) {
            float d = h[c][c];
            for (int k = 0; k < c; k++) {
                d -= h[c][k] * h[c][k];
            }
            h[c][c] = sqrtf(fmaxf(d, EPS));
        }
        __syncthreads();
        const float inv = 1.0f / h[c][c];
        for (int j = c + 1 + tid; j < N; j += 64) {
            float dot = 0.0f;
            for (int k = 0; k < c; k++) {
                dot += h[j][k] * h[c][k];
            }
            h[j][c] = (h[j][c] - dot) * inv;
        }
        __syncthreads();
    }
    for (int row = 0; row < N; row++) {
        if (row % 64 == tid) {
            for (int col = 0; col <= row; col++) {
                l[row * N + col] = h[row][col];
            }
        }
    }
}

__global__ void __launch_bounds__(TILE) chol_blocked(const float *__restrict__ a_all, float *__restrict__ l_all)
{
    __shared__ float h[N][N + 1];
    const int tid = threadIdx.x;
    const float *a = a_all + (size_t)blockIdx.x * N * N;
    float *l = l_all + (size_t)blockIdx.x * N * N;
    for (int row = 0; row < N; row++) {
        for (int c = tid; c <= row; c += TILE) {
            h[row][c] = a[row * N + c];
        }
    }
    __syncthreads();
    for (int kb = 0; kb < NB; kb++) {
        const int k0 = kb * TILE;
        // diagonal block: subtract the products of the blocks left of it
        for (int r = 0; r < TILE; r++) {
            const int c = tid;
            if (c <= r) {
                float s = 0.0f;
                for (int j = 0; j < k0; j++) {
                    s += h[k0 + r][j] * h[k0 + c][j];
                }
                h[k0 + r][k0 + c] -= s;
            }
        }
        __syncthreads();
        // scalar Crout inside the diagonal block
        for (int col = 0; col < TILE; col++) {
            if (tid == 0) {
                float d = h[k0 + col][k0 + col];
                for (int j = 0; j < col; j++) {
                    d -= h[k0 + col][k0 + j] * h[k0 + col][k0 + j];
                }
                h[k0 + col][k0 + col] = sqrtf(fmaxf(d, EPS));
            }
            __syncthreads();
            const int row = col + 1 + tid;
            if (row < TILE) {
                const float inv = 1.0f / h[k0 + col][k0 + col];
                float dot = 0.0f;
                for (int j = 0; j < col; j++) {
                    dot += h[k0 + row][k0 + j] * h[k0 + col][k0 + j];
                }
                h[k0 + row][k0 + col] = (h[k0 + row][k0 + col] - dot) * inv;
            }
            __syncthreads();
        }
        // the blocks below: update, then solve against the diagonal block
        for (int ib = kb + 1; ib < NB; ib++) {
            const int i0 = ib * TILE;
            for (int r = 0; r < TILE; r++) {
                const int c = tid;
                float s = 0.0f;
                for (int j = 0; j < k0; j++) {
                    s += h[i0 + r][j] * h[k0 + c][j];
                }
                h[i0 + r][k0 + c] -= s;
            }
            __syncthreads();
            for (int c = 0; c < TILE; c++) {
                const int r = tid;
                float dot = 0.0f;
                for (int j = 0; j < c; j++) {
                    dot += h[i0 + r][k0 + j] * h[k0 + c][k0 + j];
                }
                h[i0 + r][k0 + c] = (h[i0 + r][k0 + c] - dot) / h[k0 + c][k0 + c];
                __syncthreads();
            }
        }
    }
    for (int row = 0; row < N; row++) {
        for (int c = tid; c <= row; c += TILE) {
            l[row * N + c] = h[row][c];
        }
    }
}

static void
check(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
        exit(1);
    }
}

// max |L L^T - A| over the first `count` matrices
static double
reconstruction_error(const std::vector<float> &a, const std::vector<float> &l, int count)
{
    double worst = 0.0;
    for (int e = 0; e < count; e++) {
        const float *ae = &a[(size_t)e * N * N];
        const float *le = &l[(size_t)e * N * N];
        for (int i = 0; i < N; i++) {
            for (int j = 0; j <= i; j++) {
                double s = 0.0;
                for (int k = 0; k <= j; k++) {
                    s += (double)le[i * N + k] * le[j * N + k];
                }
                worst = std::max(worst, std::fabs(s - ae[i * N + j]));
            }
        }
    }
    return worst;
}

template <typename Launch>
static float
median_us(Launch launch, int warmup, int iters)
{
    for (int i = 0; i < warmup; i++) {
        launch();
    }
    cudaEvent_t start, stop;
    check(cudaEventCreate(&start), "event");
    check(cudaEventCreate(&stop), "event");
    std::vector<float> times;
    for (int i = 0; i < iters; i++) {
        cudaEventRecord(start);
        launch();
        cudaEventRecord(stop);
        cudaEventSynchronize(stop);
        float ms = 0.0f;
        cudaEventElapsedTime(&ms, start, stop);
        times.push_back(ms * 1000.0f);
    }
    check(cudaGetLastError(), "launch");
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

int
main(int argc, char **argv)
{
    const int envs = argc > 1 ? atoi(argv[1]) : 4096;
    const int warmup = argc > 2 ? atoi(argv[2]) : 50;
    const int iters = argc > 3 ? atoi(argv[3]) : 200;
    // A = R^T R + I for random R, as the demo does
    std::vector<float> a((size_t)envs * N * N);
    srand(42);
    std::vector<float> r(N * N);
    for (int e = 0; e < envs; e++) {
        for (auto &x : r) {
            x = (float)rand() / RAND_MAX * 2.0f - 1.0f;
        }
        for (int i = 0; i < N; i++) {
            for (int j = 0; j < N; j++) {
                float s = i == j ? 1.0f : 0.0f;
                for (int k = 0; k < N; k++) {
                    s += r[k * N + i] * r[k * N + j];
                }
                a[(size_t)e * N * N + i * N + j] = s;
            }
        }
    }
    float *da, *dl;
    size_t bytes = a.size() * sizeof(float);
    check(cudaMalloc(&da, bytes), "malloc");
    check(cudaMalloc(&dl, bytes), "malloc");
    check(cudaMemcpy(da, a.data(), bytes, cudaMemcpyHostToDevice), "copy");
    std::vector<float> l(a.size());

    float t_base = median_us([&] { chol_baseline<<<envs, 64>>>(da, dl); }, warmup, iters);
    check(cudaMemcpy(l.data(), dl, bytes, cudaMemcpyDeviceToHost), "copy");
    double err_base = reconstruction_error(a, l, 4);
    check(cudaMemset(dl, 0, bytes), "memset");
    float t_block = median_us([&] { chol_blocked<<<envs, TILE>>>(da, dl); }, warmup, iters);
    check(cudaMemcpy(l.data(), dl, bytes, cudaMemcpyDeviceToHost), "copy");
    double err_block = reconstruction_error(a, l, 4);
    printf("baseline %.1f us (max |LL^T - A| %.2e)\n", t_base, err_base);
    printf("blocked %.1f us (max |LL^T - A| %.2e)\n", t_block, err_block);
    return 0;
}
