/* runtime/cpu/threadpool.c -- a fixed pool of worker threads that run one job at a time.
 *
 * The caller of qd_cpu_pool_run is thread 0 of every job, so a pool of n threads starts n - 1
 * workers. Publishing a job is one atomic store of a 64-bit word:
 *     job_word = generation << 16 | count
 * Worker k (1 .. n-1) takes part in a generation when k < count, and only then reads the job's
 * function and argument, which stay valid until it reports completion: the caller waits for
 * every participant, so a participant can never miss its generation, and a worker that is not
 * taking part never touches the job at all.
 *
 * Waiting is spin-then-sleep on both sides. A worker spins for SPIN_NS after its last job (a
 * kernel launched again soon finds it awake: no system call on the launch path), then sleeps
 * on its own condition variable; the caller signals only the sleeping workers the job needs.
 * The caller, after its own share, spins for SPIN_NS on the `pending` counter, then sleeps on
 * `done`. Lost wake-ups are ruled out the Dekker way: each side stores its flag (sleeping, or
 * the new job word / the pending decrement) with sequentially consistent ordering before it
 * reads the other side's, and the sleeper re-checks its condition under the mutex the waker
 * takes to signal.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread, clock_gettime, sysconf */
#endif
#include "cpu.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* How long a waiting thread spins before it sleeps, in nanoseconds. */
#define SPIN_NS 100000
/* Largest pool (the job word keeps the participant count in 16 bits). */
#define MAX_THREADS 1024

typedef struct Worker {
    struct QdCpuPool *pool; /* owner */
    int32_t index;          /* 1 .. nthreads-1 */
    pthread_t thread;       /* the thread */
    bool is_started;        /* thread was created */
    atomic_int sleeping;    /* 1 while waiting on cond */
    pthread_mutex_t lock;   /* guards the sleep */
    pthread_cond_t cond;    /* signalled when a job for this worker is published */
} Worker;

struct QdCpuPool {
    int32_t nthreads;              /* threads per job at most, the caller included */
    pthread_mutex_t launch_lock;   /* held for a whole launch (qd_cpu_pool_lock) */
    Worker *workers;               /* nthreads entries; [0] unused (the caller) */
    atomic_uint_fast64_t job_word; /* generation << 16 | participant count */
    atomic_int stop;               /* set when the pool shuts down */
    QdCpuJobFn fn;                 /* current job, valid for its participants */
    void *arg;                     /* its argument */
    atomic_int pending;            /* participants (besides the caller) still running */
    atomic_int caller_sleeping;    /* the caller waits on done_cond */
    pthread_mutex_t done_lock;     /* guards the caller's sleep */
    pthread_cond_t done_cond;      /* signalled by the last participant */
};

/***** waiting *****/

static uint64_t
now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void
cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Spins until job_word's generation differs from `seen` or the pool stops, for at most
 * SPIN_NS, then sleeps. Returns the new word. */
static uint64_t
wait_for_job(Worker *w, uint64_t seen)
{
    QdCpuPool *pool = w->pool;
    uint64_t deadline = 0;

    for (uint32_t spins = 0;; spins++) {
        uint64_t word = atomic_load(&pool->job_word);
        if ((word >> 16) != seen || atomic_load(&pool->stop)) {
            return word;
        }
        if ((spins & 255) == 0) {
            uint64_t t = now_ns();
            if (deadline == 0) {
                deadline = t + SPIN_NS;
            } else if (t > deadline) {
                break;
            }
        }
        cpu_relax();
    }
    pthread_mutex_lock(&w->lock);
    atomic_store(&w->sleeping, 1);
    while ((atomic_load(&pool->job_word) >> 16) == seen && !atomic_load(&pool->stop)) {
        pthread_cond_wait(&w->cond, &w->lock);
    }
    atomic_store(&w->sleeping, 0);
    pthread_mutex_unlock(&w->lock);
    return atomic_load(&pool->job_word);
}

static void *
worker_main(void *data)
{
    Worker *w = data;
    QdCpuPool *pool = w->pool;
    uint64_t seen = 0;

    for (;;) {
        uint64_t word = wait_for_job(w, seen);
        if (atomic_load(&pool->stop)) {
            break;
        }
        seen = word >> 16;
        int32_t count = (int32_t)(word & 0xffff);
        if (w->index >= count) {
            continue; /* not needed for this job */
        }
        pool->fn(pool->arg, w->index, count);
        if (atomic_fetch_sub(&pool->pending, 1) == 1 && atomic_load(&pool->caller_sleeping)) {
            pthread_mutex_lock(&pool->done_lock);
            pthread_cond_signal(&pool->done_cond);
            pthread_mutex_unlock(&pool->done_lock);
        }
    }
    return NULL;
}

static void
wake_worker(Worker *w)
{
    if (atomic_load(&w->sleeping)) {
        pthread_mutex_lock(&w->lock);
        pthread_cond_signal(&w->cond);
        pthread_mutex_unlock(&w->lock);
    }
}

/* The caller's wait for the participants of the current job. */
static void
wait_for_participants(QdCpuPool *pool)
{
    uint64_t deadline = 0;

    for (uint32_t spins = 0; atomic_load(&pool->pending) != 0; spins++) {
        if ((spins & 255) == 0) {
            uint64_t t = now_ns();
            if (deadline == 0) {
                deadline = t + SPIN_NS;
            } else if (t > deadline) {
                break;
            }
        }
        cpu_relax();
    }
    if (atomic_load(&pool->pending) == 0) {
        return;
    }
    pthread_mutex_lock(&pool->done_lock);
    atomic_store(&pool->caller_sleeping, 1);
    while (atomic_load(&pool->pending) != 0) {
        pthread_cond_wait(&pool->done_cond, &pool->done_lock);
    }
    atomic_store(&pool->caller_sleeping, 0);
    pthread_mutex_unlock(&pool->done_lock);
}

/***** the pool *****/

/* Serializes launches without a pool. */
static pthread_mutex_t poolless_launch_lock = PTHREAD_MUTEX_INITIALIZER;

void
qd_cpu_pool_lock(QdCpuPool *pool)
{
    pthread_mutex_lock(pool != NULL ? &pool->launch_lock : &poolless_launch_lock);
}

void
qd_cpu_pool_unlock(QdCpuPool *pool)
{
    pthread_mutex_unlock(pool != NULL ? &pool->launch_lock : &poolless_launch_lock);
}

void
qd_cpu_pool_run(QdCpuPool *pool, QdCpuJobFn fn, void *arg, int32_t count)
{
    if (pool == NULL || count <= 1 || pool->nthreads <= 1) {
        fn(arg, 0, 1);
        return;
    }
    if (count > pool->nthreads) {
        count = pool->nthreads;
    }
    pool->fn = fn;
    pool->arg = arg;
    atomic_store(&pool->pending, count - 1);
    uint64_t generation = (atomic_load(&pool->job_word) >> 16) + 1;
    atomic_store(&pool->job_word, generation << 16 | (uint64_t)count);
    for (int32_t k = 1; k < count; k++) {
        wake_worker(&pool->workers[k]);
    }
    fn(arg, 0, count);
    wait_for_participants(pool);
}

int32_t
qd_cpu_pool_size(const QdCpuPool *pool)
{
    return pool == NULL ? 1 : pool->nthreads;
}

QdCpuPool *
qd_cpu_pool_new(QdCtx *ctx, int32_t nthreads)
{
    QdCpuPool *pool = calloc(1, sizeof(*pool));
    sigset_t all, saved;

    if (nthreads <= 0) {
        long online = sysconf(_SC_NPROCESSORS_ONLN);
        nthreads = online > 0 ? (int32_t)online : 1;
    }
    nthreads = nthreads > MAX_THREADS ? MAX_THREADS : nthreads;
    if (pool == NULL || (pool->workers = calloc((size_t)nthreads, sizeof(Worker))) == NULL) {
        free(pool);
        qd_error(ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory");
        return NULL;
    }
    pool->nthreads = nthreads;
    pthread_mutex_init(&pool->launch_lock, NULL);
    pthread_mutex_init(&pool->done_lock, NULL);
    pthread_cond_init(&pool->done_cond, NULL);
    /* Workers block every signal, so signals (Ctrl-C) keep going to the interpreter's
     * threads. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &saved);
    for (int32_t k = 1; k < nthreads; k++) {
        Worker *w = &pool->workers[k];
        w->pool = pool;
        w->index = k;
        pthread_mutex_init(&w->lock, NULL);
        pthread_cond_init(&w->cond, NULL);
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
            pthread_sigmask(SIG_SETMASK, &saved, NULL);
            qd_error(ctx, (QdLoc){0}, QD_ERR_RUNTIME, "cannot start CPU worker thread %d of %d", k,
                     nthreads);
            pool->nthreads = k + 1; /* worker k: lock and cond to destroy, no thread */
            qd_cpu_pool_free(pool);
            return NULL;
        }
        w->is_started = true;
    }
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    return pool;
}

void
qd_cpu_pool_free(QdCpuPool *pool)
{
    if (pool == NULL) {
        return;
    }
    atomic_store(&pool->stop, 1);
    for (int32_t k = 1; k < pool->nthreads; k++) {
        Worker *w = &pool->workers[k];
        /* Signal under the lock, sleeping or not: the stop flag is re-checked there. */
        pthread_mutex_lock(&w->lock);
        pthread_cond_signal(&w->cond);
        pthread_mutex_unlock(&w->lock);
    }
    for (int32_t k = 1; k < pool->nthreads; k++) {
        Worker *w = &pool->workers[k];
        if (w->is_started) {
            pthread_join(w->thread, NULL);
        }
        pthread_cond_destroy(&w->cond);
        pthread_mutex_destroy(&w->lock);
    }
    pthread_cond_destroy(&pool->done_cond);
    pthread_mutex_destroy(&pool->done_lock);
    pthread_mutex_destroy(&pool->launch_lock);
    free(pool->workers);
    free(pool);
}
