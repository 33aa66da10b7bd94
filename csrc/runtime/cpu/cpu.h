/* runtime/cpu/cpu.h -- the CPU runtime: a thread pool, the launch of compiled tasks, and the
 * functions generated code calls (print, assert, half / bfloat16 conversions).
 *
 * Depends on base/ only. The code generator (codegen/llvm/codegen.h, "KERNEL ABI") describes
 * the generated functions this runtime calls and the QdLaunchCtx fields they read; the two
 * headers must agree, and the places that include both check it with static assertions.
 *
 * Launch model: the tasks of a kernel run in order on one pool; the end of a task is a barrier.
 * A serial task runs on the calling thread. A range_for task first evaluates its bounds on the
 * calling thread, then runs on as many threads as the trip count justifies (the task's grain
 * is the fewest iterations worth a thread): one contiguous chunk per thread, the calling
 * thread taking the first. A small range therefore never wakes a worker.
 */
#ifndef QD_RUNTIME_CPU_H
#define QD_RUNTIME_CPU_H

#include "../../abi/abi.h"
#include "../../base/base.h"

/* QdLaunchCtx (everything one launch shares between the launcher and the generated code) is
 * defined by abi/abi.h. */

/* Generated entry points (codegen.h: QdTaskEntry, QdTaskBounds). */
typedef void (*QdCpuTaskFn)(struct QdLaunchCtx *ctx, int64_t lo, int64_t hi);
typedef void (*QdCpuBoundsFn)(struct QdLaunchCtx *ctx, int64_t *out);

/* One task of a kernel, as the launcher runs it. */
typedef struct QdCpuTask {
    QdCpuTaskFn run;      /* serial: the body (called with 0, 1); range_for: [lo, hi) */
    QdCpuBoundsFn bounds; /* range_for: writes begin, end; NULL for a serial task */
    int64_t grain;        /* range_for: fewest iterations per thread (>= 1) */
    uint32_t simt_block_dim; /* > 0: a range_for task run as blocks of this many emulated
                                threads (simt.c); 0: run in chunks */
} QdCpuTask;

/***** threadpool.c *****/

typedef struct QdCpuPool QdCpuPool;

/* A job run by `count` threads at once: index is 0 .. count-1 (0 is the calling thread). */
typedef void (*QdCpuJobFn)(void *arg, int32_t index, int32_t count);

/* A pool of nthreads threads counting the caller (nthreads - 1 workers are started);
 * nthreads <= 0 means the number of online CPUs. NULL with a diag (QD_ERR_RUNTIME) when the
 * threads cannot be created. */
QdCpuPool *qd_cpu_pool_new(QdCtx *ctx, int32_t nthreads);
/* Stops and joins the workers. NULL is allowed. */
void qd_cpu_pool_free(QdCpuPool *pool);
/* Number of threads, the caller included (1 for a NULL pool). */
int32_t qd_cpu_pool_size(const QdCpuPool *pool);
/* Runs fn on min(count, size) threads and returns when all have finished. Workers wait by
 * spinning briefly, then sleeping; only the workers the job needs are woken. One job at a time
 * per pool: callers serialize (qd_cpu_launch holds the pool's launch lock). */
void qd_cpu_pool_run(QdCpuPool *pool, QdCpuJobFn fn, void *arg, int32_t count);

/* Take and release the pool's launch lock (a process-wide one for a NULL pool), which keeps
 * whole launches from interleaving. */
void qd_cpu_pool_lock(QdCpuPool *pool);
void qd_cpu_pool_unlock(QdCpuPool *pool);

/***** cpu_launch.c *****/

/* Runs tasks[0 .. ntasks) in order with ctx (pool NULL: everything on the calling thread).
 * Zeroes ctx->tmps and clears the assert state first. Stops after the first task in which an assert
 * failed. Returns 0, or -1 when an assert failed (ctx->assert_message says which). Thread-safe:
 * concurrent launches on one pool run one after the other. task_seconds (NULL: not timed), for
 * the kernel profiler, receives the wall-clock seconds of each task that ran. */
int qd_cpu_launch(QdCpuPool *pool, const QdCpuTask *tasks, uint32_t ntasks, QdLaunchCtx *ctx,
                  double *task_seconds);

/***** simt.c *****/

/* Runs the range_for task over [begin, end) as blocks of task->simt_block_dim lanes. */
void qd_cpu_run_simt(QdCpuPool *pool, const QdCpuTask *task, QdLaunchCtx *ctx, int64_t begin,
                     int64_t end);
/* Called by generated code inside such a task (codegen/llvm/llvm_emit_simt_cpu.c):
 * geometry (which: 0 thread_idx, 1 block_idx, 2 block_dim, 3 grid_dim, 4 lane_id), block
 * barriers (mode of the predicate form: 0 all, 1 any, 2 count), subgroup barrier, shuffles
 * (mode: 0 idx, 1 xor, 2 up, 3 down; values as 64-bit patterns), ballot / votes (mode: 0
 * ballot, 1 all, 2 any) and the block's shared memory at a byte offset. */
int32_t qd_simt_geom(int32_t which);
void qd_simt_block_sync(void);
int32_t qd_simt_block_sync_pred(int32_t pred, int32_t mode);
void qd_simt_subgroup_sync(void);
uint64_t qd_simt_shuffle(uint64_t value, int32_t arg, int32_t mode);
uint32_t qd_simt_ballot(int32_t pred, int32_t mode);
uint32_t qd_simt_match_any(uint64_t value);
void *qd_simt_shared(int64_t offset, int64_t size);
/* mma_m16n8k16 of the subgroup: d (4 floats), a (8 f16 bit patterns) and b (4) are the calling
 * lane's fragments in PTX's order (ops.def); every lane of the subgroup must call it together.
 * D = A B + D with products and sums in f32, in order of k. */
void qd_simt_mma(float *d, const uint16_t *a, const uint16_t *b);

/***** rt_print.c *****/

/* `print`: formats with C printf conventions and writes one block to stdout, flushed. kinds[k]
 * is 'i' (values[k] is an int64_t), 'u' (uint64_t) or 'f' (a double's bits). Conversions that
 * do not fit an argument are converted to what they ask for; %s %n %p and missing arguments
 * are printed as written. */
void qd_rt_print(const char *format, const char *kinds, const uint64_t *values, int32_t n);
/* `assert` failed: keeps the first message of the launch. */
void qd_rt_assert_fail(struct QdLaunchCtx *ctx, const char *message);
/* `assert %c, "fmt", values...` failed: the message formatted like print. */
void qd_rt_assert_fail_fmt(struct QdLaunchCtx *ctx, const char *format, const char *kinds,
                           const uint64_t *values, int32_t n);

/***** rt_half.c *****/

/* IEEE binary16 and bfloat16 conversions (round to nearest even; NaN stays NaN). */
uint16_t qd_cpu_f16_from_double(double x);
uint16_t qd_cpu_bf16_from_double(double x);
double qd_cpu_f16_to_double(uint16_t bits);
double qd_cpu_bf16_to_double(uint16_t bits);

/* A runtime function the JIT must resolve, as the code generator's QdJitSymbol expects it. */
typedef struct QdCpuSymbol {
    const char *name;      /* symbol name generated code uses */
    void (*address)(void); /* the function */
} QdCpuSymbol;

/* The runtime functions generated code calls; *count receives their number. */
const QdCpuSymbol *qd_cpu_runtime_symbols(uint32_t *count);

#endif /* QD_RUNTIME_CPU_H */
