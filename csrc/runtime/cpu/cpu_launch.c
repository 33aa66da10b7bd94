/* runtime/cpu/cpu_launch.c -- running the tasks of one kernel launch on a pool.
 *
 * For each task, in order:
 *   serial     run(ctx, 0, 1) on the calling thread;
 *   range_for  bounds(ctx, [begin, end)) on the calling thread; n = end - begin iterations
 *              (unsigned: the bounds function makes an empty range end = begin, so a range of
 *              u64 bounds past 2^63 counts exactly too);
 *              threads = clamp(n / grain, 1, pool size); thread t runs the contiguous chunk
 *              [begin + t * chunk, min(end, begin + (t + 1) * chunk)) with
 *              chunk = ceil(n / threads). One thread means no worker is involved at all.
 * qd_cpu_pool_run returns after every participant finished, which makes the task boundary the
 * barrier the IR promises. After each task the launch stops if an assert failed.
 *
 * A lock per pool serializes whole launches, so kernels launched from several Python threads
 * never interleave their tasks on the pool.
 *
 * Profiling (qd.init(kernel_profiler=True)): with a task_seconds array the wall-clock time of
 * every task that ran, bounds and pool barrier included, is written to it (CLOCK_MONOTONIC);
 * a task that did not run (the launch stopped at a failed assert) keeps what the caller put
 * there. Without one the loop reads no clock.
 */
#include "cpu.h"

#include <string.h>
#include <time.h>

/* The range_for chunks of one task, shared with the pool's threads. */
typedef struct RangeJob {
    QdCpuTaskFn run;  /* the task */
    QdLaunchCtx *ctx; /* its launch */
    int64_t begin;    /* first iteration */
    uint64_t n;       /* number of iterations (> 0) */
} RangeJob;

static void
run_chunk(void *arg, int32_t index, int32_t count)
{
    const RangeJob *job = arg;
    uint64_t chunk = (job->n + (uint64_t)count - 1) / (uint64_t)count;
    uint64_t first = chunk * (uint64_t)index;
    if (first >= job->n) {
        return;
    }
    uint64_t last = first + chunk < job->n ? first + chunk : job->n;
    /* begin + offset computed in unsigned arithmetic: wraps exactly like int64 addition */
    job->run(job->ctx, (int64_t)((uint64_t)job->begin + first),
             (int64_t)((uint64_t)job->begin + last));
}

static void
run_range(QdCpuPool *pool, const QdCpuTask *task, QdLaunchCtx *ctx)
{
    int64_t bounds[2] = {0, 0};
    task->bounds(ctx, bounds);
    if (bounds[1] == bounds[0]) {
        return;
    }
    if (task->simt_block_dim > 0) {
        qd_cpu_run_simt(pool, task, ctx, bounds[0], bounds[1]);
        return;
    }
    RangeJob job = {task->run, ctx, bounds[0], (uint64_t)bounds[1] - (uint64_t)bounds[0]};
    uint64_t grain = task->grain > 0 ? (uint64_t)task->grain : 1;
    uint64_t wanted = job.n / grain;
    int32_t size = qd_cpu_pool_size(pool);
    int32_t threads = wanted < 1 ? 1 : wanted > (uint64_t)size ? size : (int32_t)wanted;
    if (threads == 1) {
        task->run(ctx, bounds[0], bounds[1]);
        return;
    }
    qd_cpu_pool_run(pool, run_chunk, &job, threads);
}

static double
now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int
qd_cpu_launch(QdCpuPool *pool, const QdCpuTask *tasks, uint32_t ntasks, QdLaunchCtx *ctx,
              double *task_seconds)
{
    int rc = 0;

    qd_cpu_pool_lock(pool);
    ctx->assert_failed = 0;
    ctx->assert_message[0] = '\0';
    for (uint32_t i = 0; i < ntasks; i++) {
        double start = task_seconds ? now_seconds() : 0.0;
        if (tasks[i].bounds == NULL) {
            tasks[i].run(ctx, 0, 1);
        } else {
            run_range(pool, &tasks[i], ctx);
        }
        if (task_seconds) {
            task_seconds[i] = now_seconds() - start;
        }
        if (__atomic_load_n(&ctx->assert_failed, __ATOMIC_ACQUIRE)) {
            rc = -1;
            break;
        }
    }
    qd_cpu_pool_unlock(pool);
    return rc;
}
