/* runtime/cpu/simt.c -- SIMT emulation on the CPU (qd.init(arch=qd.cpu, cpu_simt=True)).
 *
 * A range_for task that uses barriers, subgroup operations or shared memory runs as blocks of
 * block_dim threads: iteration begin + i is thread i % B of block i / B. The blocks of a task
 * run in parallel on the pool; inside a block, each thread is a lane: a fiber (ucontext, its own
 * stack) that runs the task function for its one iteration. The lanes of a block cooperate on
 * the worker thread that runs the block: a lane runs until it reaches a synchronizing
 * operation, records what it brings (its shuffle value, its predicate) and switches back to the
 * block's scheduler, which then runs the next lane. When no lane can run:
 *   - each subgroup (32 consecutive lanes) with lanes waiting at a subgroup operation is
 *     released: the scheduler computes every waiting lane's result (shuffles read the value of
 *     the source lane; ballots and votes combine the lanes waiting there: the "active" lanes);
 *   - otherwise, when lanes wait at a block barrier, all of them are released together (the
 *     barrier's AND / OR / count computed over them).
 * Finished lanes (and the threads past the end of the range in a last, partial block) count
 * as arrived, like exited threads on a GPU. Results are written per lane by the scheduler, so a
 * lane that runs ahead to its next operation never overwrites what a slower lane still reads.
 *
 * Shared memory: one buffer per running thread (a block runs on one thread from start to end),
 * QD_SIMT_SHARED_BYTES long; shared_alloc instructions get static offsets in it.
 * Switching: on x86-64 Linux a few instructions (qd_simt_switch: callee-saved registers pushed
 * on the fiber's own stack, stack pointers swapped); elsewhere ucontext's swapcontext.
 * Fiber stacks (QD_SIMT_STACK_BYTES each, committed lazily by the kernel, a guard page below
 * each) and shared memory come from a process-wide free list of Workers, reused by the
 * following blocks, launches and runtimes.
 */
#include "cpu.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

#define QD_SIMT_MAX_LANES 1024
#define QD_SIMT_SUBGROUP 32
#define QD_SIMT_STACK_BYTES (256u * 1024u)
#define QD_SIMT_SHARED_BYTES (1u << 20)
#define QD_SIMT_GUARD_BYTES 4096u

typedef enum LaneState {
    LANE_READY,      /* can run */
    LANE_WAIT_SUB,   /* at a subgroup operation */
    LANE_WAIT_BLOCK, /* at a block barrier */
    LANE_DONE,       /* finished its iteration (or has none) */
} LaneState;

/* What a lane waits for: the operation and its operands. */
typedef enum LaneOp {
    OP_SYNC,        /* barrier without a value */
    OP_SHUFFLE,     /* value from lane `arg` (mode in `mode`) */
    OP_BALLOT,      /* ballot / vote of `pred` (mode: 0 ballot, 1 all, 2 any) */
    OP_MATCH,       /* the lanes whose `value` equals this lane's */
    OP_BLOCK_PRED,  /* block barrier with predicate (mode: 0 all, 1 any, 2 count) */
    OP_MMA,         /* mma_m16n8k16 on the fragments at `frags` (d, a, b) */
} LaneOp;

/* Context switches. On x86-64 a fiber switch saves the callee-saved registers on the old stack
 * and loads the new stack pointer (no system call); elsewhere ucontext's swapcontext. */
#if defined(__SANITIZE_ADDRESS__)
#define QD_SIMT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define QD_SIMT_ASAN 1
#endif
#endif
/* Under AddressSanitizer: swapcontext, which it knows about. */
#if defined(__x86_64__) && defined(__linux__) && !defined(QD_SIMT_ASAN)
#define FAST_SWITCH 1
/* Saves the current context on its stack, stores its stack pointer in *from, resumes `to`. */
void qd_simt_switch(void **from, void *to);
__asm__(".text\n"
        ".globl qd_simt_switch\n"
        ".hidden qd_simt_switch\n"
        ".type qd_simt_switch,@function\n"
        "qd_simt_switch:\n"
        "    pushq %rbp\n"
        "    pushq %rbx\n"
        "    pushq %r12\n"
        "    pushq %r13\n"
        "    pushq %r14\n"
        "    pushq %r15\n"
        "    movq %rsp, (%rdi)\n"
        "    movq %rsi, %rsp\n"
        "    popq %r15\n"
        "    popq %r14\n"
        "    popq %r13\n"
        "    popq %r12\n"
        "    popq %rbx\n"
        "    popq %rbp\n"
        "    ret\n"
        ".size qd_simt_switch, .-qd_simt_switch\n");
#else
#define FAST_SWITCH 0
#endif

typedef struct Lane {
    ucontext_t uc;
    void *sp;        /* FAST_SWITCH: saved stack pointer */
    LaneState state;
    LaneOp op;
    int32_t mode;
    int32_t arg;     /* shuffle lane / offset / mask */
    int32_t pred;    /* predicate (nonzero = true) */
    uint64_t value;  /* shuffled value */
    uint64_t result; /* what the scheduler computed */
    void *frags[3];  /* OP_MMA: the lane's d, a and b fragments */
} Lane;

/* The block a worker thread is running. */
typedef struct Block {
    QdCpuTaskFn run;
    QdLaunchCtx *ctx;
    int64_t first;    /* iteration of lane 0 */
    int64_t end;      /* end of the range */
    int32_t dim;      /* lanes */
    int32_t idx;      /* block index */
    int32_t grid;     /* number of blocks */
    int32_t cur;      /* lane running now */
    ucontext_t sched; /* the scheduler's context */
    void *sched_sp;   /* FAST_SWITCH: the scheduler's saved stack pointer */
    Lane lanes[QD_SIMT_MAX_LANES];
} Block;

/* The memory a thread needs to run blocks: the block state, fiber stacks, shared memory.
 * Kept in a process-wide free list: a thread takes one for a task's blocks and gives it back,
 * so pools created and destroyed by successive runtimes reuse them. */
typedef struct Worker {
    Block *block;
    char *stacks;
    char *shared;
    struct Worker *next;
} Worker;

static pthread_mutex_t free_lock = PTHREAD_MUTEX_INITIALIZER;
static Worker *free_workers;

/* What the running thread uses (set while it runs blocks). */
static __thread Block *tls_block;
static __thread char *tls_stacks;
static __thread char *tls_shared;

static void
simt_fatal(const char *what)
{
    fprintf(stderr, "[Quadrants] cpu_simt: %s\n", what);
    abort();
}

static Worker *
worker_take(void)
{
    pthread_mutex_lock(&free_lock);
    Worker *w = free_workers;
    if (w != NULL) {
        free_workers = w->next;
    }
    pthread_mutex_unlock(&free_lock);
    if (w != NULL) {
        return w;
    }
    w = calloc(1, sizeof(Worker));
    if (w == NULL || (w->block = calloc(1, sizeof(Block))) == NULL ||
        (w->shared = calloc(1, QD_SIMT_SHARED_BYTES)) == NULL) {
        simt_fatal("out of memory");
    }
    void *p = mmap(NULL, (size_t)QD_SIMT_STACK_BYTES * QD_SIMT_MAX_LANES, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        simt_fatal("cannot map the fiber stacks");
    }
    w->stacks = p;
    /* a guard page at the low end of each stack: an overflow faults instead of writing into
     * the next lane's stack */
    for (int32_t k = 0; k < QD_SIMT_MAX_LANES; k++) {
        mprotect(w->stacks + (size_t)k * QD_SIMT_STACK_BYTES, QD_SIMT_GUARD_BYTES, PROT_NONE);
    }
    return w;
}

static void
worker_give(Worker *w)
{
    pthread_mutex_lock(&free_lock);
    w->next = free_workers;
    free_workers = w;
    pthread_mutex_unlock(&free_lock);
}

/* Entry of a lane's fiber: its one iteration, then back to the scheduler (uc_link). */
static void
lane_main(void)
{
    Block *b = tls_block;
    int64_t i = b->first + b->cur;
    b->run(b->ctx, i, i + 1);
    b->lanes[b->cur].state = LANE_DONE;
}

#if FAST_SWITCH
/* First frame of a fiber: its iteration, then back to the scheduler for good. */
static void
lane_entry(void)
{
    lane_main();
    Block *b = tls_block;
    qd_simt_switch(&b->lanes[b->cur].sp, b->sched_sp);
    simt_fatal("a finished lane was resumed");
}

/* A new fiber's stack: six zero registers, then lane_entry as the return address, with the
 * alignment of a function entry (rsp % 16 == 8). */
static void *
initial_sp(char *stack, size_t size)
{
    uintptr_t top = ((uintptr_t)(stack + size)) & ~(uintptr_t)15;
    void **sp = (void **)top;
    *--sp = NULL;               /* lane_entry's return address (never used) */
    *--sp = (void *)lane_entry; /* where the first switch "returns" */
    for (int k = 0; k < 6; k++) {
        *--sp = NULL;           /* rbp rbx r12 r13 r14 r15 */
    }
    return sp;
}
#endif

/* Switches from the running lane to the scheduler after it recorded its operation. */
static void
lane_wait(Block *b, LaneState state)
{
    Lane *l = &b->lanes[b->cur];
    l->state = state;
#if FAST_SWITCH
    qd_simt_switch(&l->sp, b->sched_sp);
#else
    if (swapcontext(&l->uc, &b->sched) != 0) {
        simt_fatal("swapcontext failed");
    }
#endif
}

/* Runs lane k until it waits or finishes. */
static void
resume_lane(Block *b, int32_t k)
{
    b->cur = k;
#if FAST_SWITCH
    qd_simt_switch(&b->sched_sp, b->lanes[k].sp);
#else
    if (swapcontext(&b->sched, &b->lanes[k].uc) != 0) {
        simt_fatal("swapcontext failed");
    }
#endif
}

/* mma_m16n8k16 of the subgroup [lo, lo + 32), every lane waiting there: the matrices gathered
 * from the lanes' fragments (PTX's order, ops.def), D = A B + C in f32, scattered back. */
static void
release_mma(Block *b, int32_t lo, int32_t hi)
{
    float A[16][16], B[16][8], D[16][8];
    if (hi - lo != QD_SIMT_SUBGROUP) {
        simt_fatal("mma_m16n8k16 needs a whole subgroup of 32 lanes");
    }
    for (int32_t k = lo; k < hi; k++) {
        if (b->lanes[k].state != LANE_WAIT_SUB || b->lanes[k].op != OP_MMA) {
            simt_fatal("mma_m16n8k16 reached by only some lanes of a subgroup");
        }
    }
    for (int32_t lane = 0; lane < QD_SIMT_SUBGROUP; lane++) {
        void *const *f = b->lanes[lo + lane].frags;
        const float *d = f[0];
        const uint16_t *a = f[1], *bb = f[2];
        int32_t g = lane >> 2, t = lane & 3;
        for (int32_t j = 0; j < 8; j++) { /* a0 a1: (g, 2t..), a2 a3: (g + 8, ..), then k + 8 */
            int32_t row = g + 8 * ((j >> 1) & 1), col = 2 * t + (j & 1) + 8 * (j >> 2);
            A[row][col] = (float)qd_cpu_f16_to_double(a[j]);
        }
        for (int32_t j = 0; j < 4; j++) { /* b0 b1: (2t.., g), b2 b3: (2t + 8.., g) */
            B[2 * t + (j & 1) + 8 * (j >> 1)][g] = (float)qd_cpu_f16_to_double(bb[j]);
        }
        for (int32_t j = 0; j < 4; j++) { /* c0 c1: (g, 2t..), c2 c3: (g + 8, 2t..) */
            D[g + 8 * (j >> 1)][2 * t + (j & 1)] = d[j];
        }
    }
    for (int32_t lane = 0; lane < QD_SIMT_SUBGROUP; lane++) {
        float *d = b->lanes[lo + lane].frags[0];
        int32_t g = lane >> 2, t = lane & 3;
        for (int32_t j = 0; j < 4; j++) {
            int32_t row = g + 8 * (j >> 1), col = 2 * t + (j & 1);
            float acc = D[row][col];
            for (int32_t k = 0; k < 16; k++) {
                acc += A[row][k] * B[k][col];
            }
            d[j] = acc;
        }
    }
}

/* The results of the lanes of subgroup [lo, hi) waiting at a subgroup operation. */
static void
release_subgroup(Block *b, int32_t lo, int32_t hi)
{
    for (int32_t k = lo; k < hi; k++) {
        if (b->lanes[k].state == LANE_WAIT_SUB && b->lanes[k].op == OP_MMA) {
            release_mma(b, lo, hi);
            break;
        }
    }
    uint32_t ballot = 0, active = 0;
    for (int32_t k = lo; k < hi; k++) {
        Lane *l = &b->lanes[k];
        if (l->state == LANE_WAIT_SUB) {
            active |= 1u << (k - lo);
            if (l->op == OP_BALLOT && l->pred) {
                ballot |= 1u << (k - lo);
            }
        }
    }
    for (int32_t k = lo; k < hi; k++) {
        Lane *l = &b->lanes[k];
        if (l->state != LANE_WAIT_SUB) {
            continue;
        }
        int32_t me = k - lo, src = me;
        switch (l->op) {
        case OP_SHUFFLE:
            switch (l->mode) {
            case 0: /* idx */
                src = l->arg & (QD_SIMT_SUBGROUP - 1);
                break;
            case 1: /* xor */
                src = me ^ l->arg;
                break;
            case 2: /* up */
                src = me - l->arg;
                break;
            default: /* down */
                src = me + l->arg;
                break;
            }
            if (src < 0 || src >= QD_SIMT_SUBGROUP || !(active & (1u << src))) {
                src = me; /* out of range or inactive: the lane's own value */
            }
            l->result = b->lanes[lo + src].value;
            break;
        case OP_BALLOT:
            l->result = l->mode == 0   ? ballot
                        : l->mode == 1 ? (uint64_t)((ballot & active) == active)
                                       : (uint64_t)(ballot != 0);
            break;
        case OP_MATCH:
            l->result = 0;
            for (int32_t j = lo; j < hi; j++) {
                const Lane *o = &b->lanes[j];
                if (o->state == LANE_WAIT_SUB && o->op == OP_MATCH && o->value == l->value) {
                    l->result |= 1u << (j - lo);
                }
            }
            break;
        default:
            l->result = 0;
            break;
        }
    }
    for (int32_t k = lo; k < hi; k++) {
        if (b->lanes[k].state == LANE_WAIT_SUB) {
            b->lanes[k].state = LANE_READY;
        }
    }
}

/* Releases every lane waiting at a block barrier. */
static void
release_block(Block *b)
{
    int32_t count = 0, arrived = 0;
    for (int32_t k = 0; k < b->dim; k++) {
        Lane *l = &b->lanes[k];
        if (l->state == LANE_WAIT_BLOCK) {
            arrived++;
            count += l->op == OP_BLOCK_PRED && l->pred != 0;
        }
    }
    for (int32_t k = 0; k < b->dim; k++) {
        Lane *l = &b->lanes[k];
        if (l->state != LANE_WAIT_BLOCK) {
            continue;
        }
        l->result = l->mode == 0 ? (uint64_t)(count == arrived)
                    : l->mode == 1 ? (uint64_t)(count > 0)
                                   : (uint64_t)count;
        l->state = LANE_READY;
    }
}

#if !FAST_SWITCH
/* A lane's context: lane_main on `stack`, returning to `sched`. Out of line, so that the
 * returns-twice getcontext does not share a frame with run_block's loop. */
static __attribute__((noinline)) void
init_lane_context(Lane *l, char *stack, ucontext_t *sched)
{
    if (getcontext(&l->uc) != 0) {
        simt_fatal("getcontext failed");
    }
    l->uc.uc_stack.ss_sp = stack;
    l->uc.uc_stack.ss_size = QD_SIMT_STACK_BYTES;
    l->uc.uc_link = sched;
    makecontext(&l->uc, lane_main, 0);
}
#endif

/* Runs block `idx` of the task: its lanes until all finished. */
static void
run_block(QdCpuTaskFn run, QdLaunchCtx *ctx, int64_t begin, int64_t end, int32_t dim, int32_t idx,
          int32_t grid)
{
    Block *b = tls_block;
    b->run = run;
    b->ctx = ctx;
    b->first = begin + (int64_t)idx * dim;
    b->end = end;
    b->dim = dim;
    b->idx = idx;
    b->grid = grid;
    for (int32_t k = 0; k < dim; k++) {
        Lane *l = &b->lanes[k];
        memset(l, 0, sizeof(*l));
        l->state = b->first + k < end ? LANE_READY : LANE_DONE;
        if (l->state == LANE_DONE) {
            continue;
        }
#if FAST_SWITCH
        l->sp = initial_sp(tls_stacks + (size_t)k * QD_SIMT_STACK_BYTES, QD_SIMT_STACK_BYTES);
#else
        init_lane_context(l, tls_stacks + (size_t)k * QD_SIMT_STACK_BYTES, &b->sched);
#endif
    }
    for (;;) {
        bool ran = false;
        for (int32_t k = 0; k < dim; k++) {
            if (b->lanes[k].state == LANE_READY) {
                ran = true;
                resume_lane(b, k);
            }
        }
        bool released = false;
        for (int32_t lo = 0; lo < dim; lo += QD_SIMT_SUBGROUP) {
            int32_t hi = lo + QD_SIMT_SUBGROUP < dim ? lo + QD_SIMT_SUBGROUP : dim;
            for (int32_t k = lo; k < hi; k++) {
                if (b->lanes[k].state == LANE_WAIT_SUB) {
                    release_subgroup(b, lo, hi);
                    released = true;
                    break;
                }
            }
        }
        if (released) {
            continue;
        }
        bool waiting = false;
        for (int32_t k = 0; k < dim && !waiting; k++) {
            waiting = b->lanes[k].state == LANE_WAIT_BLOCK;
        }
        if (waiting) {
            release_block(b);
            continue;
        }
        if (!ran) {
            break;
        }
    }
}

/* The blocks of one task, dealt round-robin to the pool's threads. */
typedef struct SimtJob {
    QdCpuTaskFn run;
    QdLaunchCtx *ctx;
    int64_t begin, end;
    int32_t dim, nblocks;
} SimtJob;

static void
run_blocks(void *arg, int32_t index, int32_t count)
{
    const SimtJob *job = arg;
    Worker *w = worker_take();
    tls_block = w->block;
    tls_stacks = w->stacks;
    tls_shared = w->shared;
    for (int32_t blk = index; blk < job->nblocks; blk += count) {
        run_block(job->run, job->ctx, job->begin, job->end, job->dim, blk, job->nblocks);
    }
    tls_block = NULL;
    tls_stacks = tls_shared = NULL;
    worker_give(w);
}

void
qd_cpu_run_simt(QdCpuPool *pool, const QdCpuTask *task, QdLaunchCtx *ctx, int64_t begin,
                int64_t end)
{
    int64_t dim = task->simt_block_dim;
    if (dim > QD_SIMT_MAX_LANES) {
        simt_fatal("block_dim is larger than 1024");
    }
    int64_t nblocks = ((end - begin) + dim - 1) / dim;
    if (nblocks > INT32_MAX) {
        simt_fatal("too many blocks");
    }
    SimtJob job = {task->run, ctx, begin, end, (int32_t)dim, (int32_t)nblocks};
    int32_t size = qd_cpu_pool_size(pool);
    int32_t threads = nblocks < size ? (int32_t)nblocks : size;
    if (threads <= 1) {
        run_blocks(&job, 0, 1);
        return;
    }
    qd_cpu_pool_run(pool, run_blocks, &job, threads);
}

/***** functions generated code calls *****/

int32_t
qd_simt_geom(int32_t which)
{
    const Block *b = tls_block;
    switch (which) {
    case 0:
        return b->cur;
    case 1:
        return b->idx;
    case 2:
        return b->dim;
    case 3:
        return b->grid;
    default:
        return b->cur & (QD_SIMT_SUBGROUP - 1);
    }
}

void
qd_simt_block_sync(void)
{
    Block *b = tls_block;
    b->lanes[b->cur].op = OP_SYNC;
    lane_wait(b, LANE_WAIT_BLOCK);
}

int32_t
qd_simt_block_sync_pred(int32_t pred, int32_t mode)
{
    Block *b = tls_block;
    Lane *l = &b->lanes[b->cur];
    l->op = OP_BLOCK_PRED;
    l->mode = mode;
    l->pred = pred;
    lane_wait(b, LANE_WAIT_BLOCK);
    return (int32_t)b->lanes[b->cur].result;
}

void
qd_simt_subgroup_sync(void)
{
    Block *b = tls_block;
    b->lanes[b->cur].op = OP_SYNC;
    lane_wait(b, LANE_WAIT_SUB);
}

uint64_t
qd_simt_shuffle(uint64_t value, int32_t arg, int32_t mode)
{
    Block *b = tls_block;
    Lane *l = &b->lanes[b->cur];
    l->op = OP_SHUFFLE;
    l->mode = mode;
    l->arg = arg;
    l->value = value;
    lane_wait(b, LANE_WAIT_SUB);
    return b->lanes[b->cur].result;
}

uint32_t
qd_simt_match_any(uint64_t value)
{
    Block *b = tls_block;
    Lane *l = &b->lanes[b->cur];
    l->op = OP_MATCH;
    l->value = value;
    lane_wait(b, LANE_WAIT_SUB);
    return (uint32_t)b->lanes[b->cur].result;
}

uint32_t
qd_simt_ballot(int32_t pred, int32_t mode)
{
    Block *b = tls_block;
    Lane *l = &b->lanes[b->cur];
    l->op = OP_BALLOT;
    l->mode = mode;
    l->pred = pred;
    lane_wait(b, LANE_WAIT_SUB);
    return (uint32_t)b->lanes[b->cur].result;
}

void
qd_simt_mma(float *d, const uint16_t *a, const uint16_t *b)
{
    Block *blk = tls_block;
    Lane *l = &blk->lanes[blk->cur];
    l->op = OP_MMA;
    l->frags[0] = d;
    l->frags[1] = (void *)a;
    l->frags[2] = (void *)b;
    lane_wait(blk, LANE_WAIT_SUB);
}

void *
qd_simt_shared(int64_t offset, int64_t size)
{
    if (offset < 0 || size < 0 || offset + size > (int64_t)QD_SIMT_SHARED_BYTES) {
        simt_fatal("the block's shared arrays exceed the 1 MiB of shared memory");
    }
    return tls_shared + offset;
}
