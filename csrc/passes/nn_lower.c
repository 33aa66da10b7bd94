/* passes/nn_lower.c -- matrix-vector products of cooperative vectors become per-thread loops.
 *
 * `nn_matvec %y, %x, %w[, %b], <layout> R x C, offset O, stride S[, bias B][, transpose]`
 * (ops.def) is lowered where it stands into:
 *
 *     %acc = alloca : ptr<[M x f32], local>            M outputs, K inputs (at the task's start)
 *     for %o = 0 to M { acc[o] = f32(b[B + o]) or 0.0 }
 *     for ... { acc[o] = acc[o] + f32(A(o, k)) * f32(x[k]) }
 *     for %o = 0 to M { y[o] = T(acc[o]) }
 *
 * The middle loop nest reads the matrix along its storage order: where consecutive outputs are
 * consecutive in memory (a column-major A, or a row-major A transposed) the input index is the
 * outer loop and the output index the inner one (the AXPY form, which LLVM vectorizes across
 * outputs with the accumulators in registers); otherwise the output index is outer and the
 * reduction inner (the dot form). Both add the products of one output in the order of the input
 * index, starting from the bias, in f32: the numbers do not depend on the form. y is rounded to
 * its element type once, at the end.
 *
 * This is the generic lowering every target runs (CPU, Vulkan, CUDA).
 *
 * A product marked `tensor_cores` (an f16 vector by an f16 matrix on a target with mma.sync, see
 * the frontend) inside the parallel_for of a range_for task of at most 128 threads per block
 * (0, the default, becomes 128) gets a second form, chosen at run time by the warp:
 *
 *     %m = ballot 1                      the lanes that reached the product together
 *     if %m == 0xffffffff {              the whole warp: tensor cores
 *       subgroup_sync; the 32 lanes' x form a 32 x K tile (rows: lanes), staged through shared
 *       memory 64 columns at a time into m16n8k16 A fragments (zero-padded to K16, a multiple of
 *       16); then, 32 outputs at a time, accumulators start from the bias, one mma_m16n8k16 per
 *       (16-row block, 8-output tile, 16-input tile) with B fragments read from the matrix (k >=
 *       K read as 0, o >= M clamped), and go back through shared memory, each lane reading its
 *       row into y
 *     } else { the per-thread loops above }
 *
 * Both forms accumulate in f32 from the bias; the tensor-core form adds the 16 products of an
 * input tile in the hardware's order, so the two may differ in the last bits of f32 before y
 * is rounded. The staging buffers are one pair of shared arrays per parallel_for (every product
 * of the loop reuses them): 32 rows of 72 f16 and 32 rows of 33 f32 per warp, 35 KiB for a
 * block of 128 threads.
 */
#include "util.h"

/* Where the lowering of one product emits: before `at` in `region`, at location `loc`. */
typedef struct Emitter {
    QdPassCtx *pc;
    QdFunc *f;
    QdRegion *region; /* current region */
    QdInst *before;   /* insertion point in it, NULL = append */
    QdLoc loc;        /* the product's source location */
    const QdType *f32;
    const QdType *i32;
} Emitter;

/* A new instruction at the insertion point with a result of type ty (NULL: none). */
static QdInst *
emit(Emitter *e, QdOp op, uint32_t nargs, const QdType *ty)
{
    QdInst *inst = qd_inst_new(e->f, op, nargs);
    if (!inst) {
        return NULL;
    }
    inst->loc = e->loc;
    if (ty && qd_inst_set_result(e->f, inst, ty, NULL) == QD_NO_VALUE) {
        return NULL;
    }
    if (e->before) {
        qd_region_insert_before(e->region, e->before, inst);
    } else {
        qd_region_append(e->region, inst);
    }
    return inst;
}

/* The value of an instruction with operands a (and b), or QD_NO_VALUE. */
static uint32_t
value(Emitter *e, QdOp op, const QdType *ty, uint32_t a, uint32_t b)
{
    uint32_t nargs = qd_op_info[op].nargs < 0 ? 0 : (uint32_t)qd_op_info[op].nargs;
    QdInst *inst = emit(e, op, nargs, ty);
    if (!inst) {
        return QD_NO_VALUE;
    }
    if (nargs > 0) {
        inst->args[0] = a;
    }
    if (nargs > 1) {
        inst->args[1] = b;
    }
    return inst->result;
}

static uint32_t
const_i32(Emitter *e, int64_t v)
{
    QdInst *inst = emit(e, QD_OP_CONST, 0, e->i32);
    if (!inst) {
        return QD_NO_VALUE;
    }
    inst->imm.cst.i = v;
    return inst->result;
}

static uint32_t
const_f32(Emitter *e, double v)
{
    QdInst *inst = emit(e, QD_OP_CONST, 0, e->f32);
    if (!inst) {
        return QD_NO_VALUE;
    }
    inst->imm.cst.f = v;
    return inst->result;
}

/* x converted to f32 (no instruction when it is one already). */
static uint32_t
to_f32(Emitter *e, uint32_t x)
{
    if (x == QD_NO_VALUE || qd_value_type(e->f, x)->kind == QD_TY_F32) {
        return x;
    }
    return value(e, QD_OP_CAST, e->f32, x, 0);
}

/* A loop `for %i = 0 to n` at the insertion point; *body becomes its body and *var its
 * induction variable. */
static QdInst *
open_loop(Emitter *e, uint32_t n, uint32_t *var)
{
    uint32_t lo = const_i32(e, 0), hi = const_i32(e, n);
    if (lo == QD_NO_VALUE || hi == QD_NO_VALUE) {
        return NULL;
    }
    QdInst *loop = emit(e, QD_OP_FOR, 2, e->i32);
    if (!loop) {
        return NULL;
    }
    loop->args[0] = lo;
    loop->args[1] = hi;
    *var = loop->result;
    e->region = loop->regions[0];
    e->before = NULL;
    return loop;
}

/* Continues after `loop` (the insertion point it had). */
static void
close_loop(Emitter *e, QdInst *loop)
{
    e->region = loop->parent;
    e->before = loop->next;
}

/* A pointer to element i of the local array p points to. */
static uint32_t
element(Emitter *e, uint32_t p, uint32_t i)
{
    const QdType *arr = qd_value_type(e->f, p)->elem;
    const QdType *ptr = qd_type_ptr(e->f->module, arr->elem, QD_SPACE_LOCAL);
    return ptr ? value(e, QD_OP_ARRAY_PTR, ptr, p, i) : QD_NO_VALUE;
}

/* base + i (i32), or i when base is 0. */
static uint32_t
plus(Emitter *e, int64_t base, uint32_t i)
{
    if (base == 0 || i == QD_NO_VALUE) {
        return i;
    }
    return value(e, QD_OP_ADD, e->i32, const_i32(e, base), i);
}

/* Element `index` of the 1-D float ndarray nd, as f32. */
static uint32_t
load_f32(Emitter *e, uint32_t nd, uint32_t index)
{
    const QdType *elem = qd_value_type(e->f, nd)->elem;
    const QdType *ptr = qd_type_ptr(e->f->module, elem, QD_SPACE_GLOBAL);
    if (!ptr || index == QD_NO_VALUE) {
        return QD_NO_VALUE;
    }
    QdInst *at = emit(e, QD_OP_ELEM_PTR, 2, ptr);
    if (!at) {
        return QD_NO_VALUE;
    }
    at->args[0] = nd;
    at->args[1] = index;
    return to_f32(e, value(e, QD_OP_LOAD, elem, at->result, 0));
}

/* The stored matrix element A(r, c) of the product, in its own type. */
static uint32_t
matrix_elem(Emitter *e, const QdMatvec *mv, uint32_t w, uint32_t r, uint32_t c)
{
    const QdType *nd = qd_value_type(e->f, w);
    const QdType *ptr = qd_type_ptr(e->f->module, nd->elem, QD_SPACE_GLOBAL);
    uint32_t index = QD_NO_VALUE;
    if (nd->ndim != 2) {
        uint32_t major = mv->layout == QD_MAT_ROW_MAJOR ? r : c;
        uint32_t minor = mv->layout == QD_MAT_ROW_MAJOR ? c : r;
        uint32_t scaled = value(e, QD_OP_MUL, e->i32, major, const_i32(e, mv->stride));
        index = plus(e, mv->offset, value(e, QD_OP_ADD, e->i32, scaled, minor));
        if (index == QD_NO_VALUE) {
            return QD_NO_VALUE;
        }
    }
    QdInst *at = ptr ? emit(e, QD_OP_ELEM_PTR, nd->ndim == 2 ? 3 : 2, ptr) : NULL;
    if (!at) {
        return QD_NO_VALUE;
    }
    at->args[0] = w;
    if (nd->ndim == 2) { /* a row-major view of a 2-D ndarray: w[r, c] */
        at->args[1] = r;
        at->args[2] = c;
    } else {
        at->args[1] = index;
    }
    return value(e, QD_OP_LOAD, nd->elem, at->result, 0);
}

/* The stored matrix element A(r, c) of the product, as f32. */
static uint32_t
matrix_f32(Emitter *e, const QdMatvec *mv, uint32_t w, uint32_t r, uint32_t c)
{
    return to_f32(e, matrix_elem(e, mv, w, r, c));
}

/* acc[o] = acc[o] + A(o, k) * x[k] for the product (A: the matrix or its transpose), x the
 * local array xs. */
static int
accumulate(Emitter *e, const QdInst *mv_inst, uint32_t xs, uint32_t acc, uint32_t o, uint32_t k)
{
    const QdMatvec *mv = &mv_inst->imm.matvec;
    uint32_t r = mv->transpose ? k : o, c = mv->transpose ? o : k;
    uint32_t a = matrix_f32(e, mv, mv_inst->args[2], r, c);
    uint32_t xk = to_f32(e, value(e, QD_OP_LOAD, qd_value_type(e->f, xs)->elem->elem,
                                  element(e, xs, k), 0));
    uint32_t prod = value(e, QD_OP_MUL, e->f32, a, xk);
    uint32_t slot = element(e, acc, o);
    uint32_t sum = value(e, QD_OP_ADD, e->f32, value(e, QD_OP_LOAD, e->f32, slot, 0), prod);
    QdInst *st = emit(e, QD_OP_STORE, 2, NULL);
    if (!st || sum == QD_NO_VALUE) {
        return -1;
    }
    st->args[0] = slot;
    st->args[1] = sum;
    return 0;
}

/* A local array of n elements of type elem, allocated at the start of the enclosing task (or
 * func), where the frontend puts its slots. */
static uint32_t
local_array(Emitter *e, const QdType *elem, uint32_t n)
{
    const QdType *arr = qd_type_array(e->f->module, elem, n);
    const QdType *ptr = arr ? qd_type_ptr(e->f->module, arr, QD_SPACE_LOCAL) : NULL;
    QdInst *alloca = ptr ? qd_inst_new(e->f, QD_OP_ALLOCA, 0) : NULL;
    if (!alloca || qd_inst_set_result(e->f, alloca, ptr, NULL) == QD_NO_VALUE) {
        return QD_NO_VALUE;
    }
    alloca->loc = e->loc;
    QdRegion *home = e->region;
    while (home->owner && home->owner->op != QD_OP_TASK) {
        home = home->owner->parent;
    }
    qd_region_insert_before(home, home->first, alloca);
    return alloca->result;
}

/* Emits the loops of one product before it (the caller removes it), reading x from the local
 * array xs and writing y to ys. */
static int
lower_loops(Emitter *e, const QdInst *inst, uint32_t ys, uint32_t xs)
{
    const QdMatvec *mv = &inst->imm.matvec;
    uint32_t m = qd_matvec_out_len(mv), n = qd_matvec_in_len(mv);
    uint32_t acc = local_array(e, e->f32, m), o, k;
    if (acc == QD_NO_VALUE) {
        return -1;
    }

    /* acc[o] = bias or 0 */
    QdInst *loop = open_loop(e, m, &o);
    if (!loop) {
        return -1;
    }
    uint32_t init = mv->has_bias ? load_f32(e, inst->args[3], plus(e, mv->bias_offset, o))
                                 : const_f32(e, 0.0);
    uint32_t slot = element(e, acc, o);
    QdInst *st = emit(e, QD_OP_STORE, 2, NULL);
    if (!st || init == QD_NO_VALUE || slot == QD_NO_VALUE) {
        return -1;
    }
    st->args[0] = slot;
    st->args[1] = init;
    close_loop(e, loop);

    /* the products, along the storage order */
    bool outputs_contiguous = mv->transpose == (mv->layout == QD_MAT_ROW_MAJOR);
    QdInst *outer = open_loop(e, outputs_contiguous ? n : m, outputs_contiguous ? &k : &o);
    QdInst *inner = outer ? open_loop(e, outputs_contiguous ? m : n, outputs_contiguous ? &o : &k)
                          : NULL;
    if (!inner || accumulate(e, inst, xs, acc, o, k) < 0) {
        return -1;
    }
    close_loop(e, inner);
    close_loop(e, outer);

    /* y[o] = T(acc[o]) */
    if (!(loop = open_loop(e, m, &o))) {
        return -1;
    }
    const QdType *ty = qd_value_type(e->f, ys)->elem->elem;
    uint32_t sum = value(e, QD_OP_LOAD, e->f32, element(e, acc, o), 0);
    if (ty->kind != QD_TY_F32) {
        sum = value(e, QD_OP_CAST, ty, sum, 0);
    }
    uint32_t out = element(e, ys, o);
    if (!(st = emit(e, QD_OP_STORE, 2, NULL)) || sum == QD_NO_VALUE || out == QD_NO_VALUE) {
        return -1;
    }
    st->args[0] = out;
    st->args[1] = sum;
    close_loop(e, loop);
    return 0;
}

/***** the tensor-core form *****/

#define MMA_BLOCK_DIM 128 /* the block size a range_for with products gets by default */
#define XCHUNK 64         /* input columns staged at a time */
#define XPITCH 72         /* f16 per staged row: 16-byte rows that start on distinct banks */
#define YCHUNK 32         /* output columns staged at a time */
#define YPITCH 33         /* f32 per staged output row */

/* The staging buffers of one parallel_for. */
typedef struct Staging {
    const QdInst *loop; /* the parallel_for */
    uint32_t xs, ys;    /* shared arrays: f16 [warps * 32 * XPITCH], f32 [warps * 32 * YPITCH] */
} Staging;

static uint32_t
const_u32(Emitter *e, uint32_t v)
{
    QdInst *inst = emit(e, QD_OP_CONST, 0, qd_type_scalar(QD_TY_U32));
    if (!inst) {
        return QD_NO_VALUE;
    }
    inst->imm.cst.i = v;
    return inst->result;
}

static uint32_t
const_f16_zero(Emitter *e)
{
    QdInst *inst = emit(e, QD_OP_CONST, 0, qd_type_scalar(QD_TY_F16));
    if (!inst) {
        return QD_NO_VALUE;
    }
    inst->imm.cst.f = 0.0;
    return inst->result;
}

/* a op b on i32, b a constant. */
static uint32_t
arith_c(Emitter *e, QdOp op, uint32_t a, int64_t b)
{
    return value(e, op, e->i32, a, const_i32(e, b));
}

static int
store_to(Emitter *e, uint32_t ptr, uint32_t v)
{
    QdInst *st = emit(e, QD_OP_STORE, 2, NULL);
    if (!st || ptr == QD_NO_VALUE || v == QD_NO_VALUE) {
        return -1;
    }
    st->args[0] = ptr;
    st->args[1] = v;
    return 0;
}

/* A pointer to element i of the array in address space `space` that p points to. */
static uint32_t
element_in(Emitter *e, uint32_t p, uint32_t i, QdSpace space)
{
    const QdType *arr = qd_value_type(e->f, p)->elem;
    const QdType *ptr = qd_type_ptr(e->f->module, arr->elem, space);
    return ptr && i != QD_NO_VALUE ? value(e, QD_OP_ARRAY_PTR, ptr, p, i) : QD_NO_VALUE;
}

static uint32_t
local_at(Emitter *e, uint32_t p, int64_t i)
{
    return element_in(e, p, const_i32(e, i), QD_SPACE_LOCAL);
}

static int
subgroup_sync(Emitter *e)
{
    uint32_t all = const_u32(e, 0xffffffffu);
    QdInst *inst = all == QD_NO_VALUE ? NULL : emit(e, QD_OP_SUBGROUP_SYNC, 1, NULL);
    if (!inst) {
        return -1;
    }
    inst->args[0] = all;
    return 0;
}

/* v if cond (an i32 comparison result) else the zero of v's type. */
static uint32_t
zero_unless(Emitter *e, uint32_t cond, uint32_t v, const QdType *ty)
{
    uint32_t zero = ty->kind == QD_TY_F16 ? const_f16_zero(e) : const_f32(e, 0.0);
    QdInst *sel = emit(e, QD_OP_SELECT, 3, ty);
    if (!sel || cond == QD_NO_VALUE || v == QD_NO_VALUE || zero == QD_NO_VALUE) {
        return QD_NO_VALUE;
    }
    sel->args[0] = cond;
    sel->args[1] = v;
    sel->args[2] = zero;
    return sel->result;
}

/* The enclosing parallel_for of region r and its task, when the task is a range_for whose
 * blocks the tensor-core form fits (at most MMA_BLOCK_DIM threads, a multiple of 32); else
 * NULL. A block_dim of 0 (the target's default) becomes MMA_BLOCK_DIM. */
static QdInst *
mma_loop(QdRegion *r)
{
    QdInst *loop = NULL;
    for (QdInst *owner = r->owner; owner; owner = owner->parent ? owner->parent->owner : NULL) {
        if (owner->op == QD_OP_PARALLEL_FOR && !loop) {
            loop = owner;
        }
        if (owner->op == QD_OP_TASK) {
            QdTask *task = &owner->imm.task;
            if (!loop || task->kind != QD_TASK_RANGE_FOR) {
                return NULL;
            }
            if (task->block_dim == 0) {
                task->block_dim = MMA_BLOCK_DIM;
            }
            return task->block_dim <= MMA_BLOCK_DIM && task->block_dim % 32 == 0 ? loop : NULL;
        }
    }
    return NULL;
}

/* The staging buffers of `loop` (made at the start of its body on first use). */
static int
staging_for(Emitter *e, QdInst *loop, Staging *st)
{
    if (st->loop == loop) {
        return 0;
    }
    const QdInst *task = loop;
    while (task->op != QD_OP_TASK) {
        task = task->parent->owner;
    }
    uint32_t rows = task->imm.task.block_dim; /* 32 per warp */
    QdModule *m = e->f->module;
    const QdType *f16 = qd_type_scalar(QD_TY_F16);
    const QdType *tx = qd_type_array(m, f16, rows * XPITCH);
    const QdType *ty = qd_type_array(m, e->f32, rows * YPITCH);
    QdRegion *body = loop->regions[0];
    for (int k = 0; k < 2; k++) {
        const QdType *ptr = qd_type_ptr(m, k == 0 ? tx : ty, QD_SPACE_SHARED);
        QdInst *alloc = ptr ? qd_inst_new(e->f, QD_OP_SHARED_ALLOC, 0) : NULL;
        if (!alloc || qd_inst_set_result(e->f, alloc, ptr, NULL) == QD_NO_VALUE) {
            return -1;
        }
        alloc->loc = e->loc;
        qd_region_insert_before(body, body->first, alloc);
        *(k == 0 ? &st->xs : &st->ys) = alloc->result;
    }
    st->loop = loop;
    return 0;
}

/* The tensor-core form of one product at the emitter's insertion point (the body of the
 * whole-warp branch). */
static int
lower_mma(Emitter *e, const QdInst *inst, const Staging *st)
{
    const QdMatvec *mv = &inst->imm.matvec;
    const int64_t K = qd_matvec_in_len(mv), M = qd_matvec_out_len(mv);
    const int64_t K16 = (K + 15) / 16 * 16, M8 = (M + 7) / 8 * 8;
    const int64_t KT = K16 / 16;
    const QdType *f16 = qd_type_scalar(QD_TY_F16);
    const QdType *yty = qd_value_type(e->f, inst->args[0])->elem->elem;
    uint32_t x = inst->args[1], y = inst->args[0], w = inst->args[2];

    /* A fragments of both 16-row blocks and every input tile, a B fragment, accumulators of
     * both row blocks for the YCHUNK / 8 output tiles of a chunk */
    uint32_t afrag[2 * (128 / 16)], acc[2 * (YCHUNK / 8)];
    if (KT > 128 / 16) {
        return -1;
    }
    for (int64_t k = 0; k < 2 * KT; k++) {
        if ((afrag[k] = local_array(e, f16, 8)) == QD_NO_VALUE) {
            return -1;
        }
    }
    for (int64_t k = 0; k < 2 * (YCHUNK / 8); k++) {
        if ((acc[k] = local_array(e, e->f32, 4)) == QD_NO_VALUE) {
            return -1;
        }
    }
    uint32_t bfrag = local_array(e, f16, 4);
    if (bfrag == QD_NO_VALUE) {
        return -1;
    }

    RETURN_IF_ERROR(subgroup_sync(e));
    uint32_t tid = value(e, QD_OP_THREAD_IDX, e->i32, 0, 0);
    uint32_t lane = arith_c(e, QD_OP_AND, tid, 31);
    uint32_t g = arith_c(e, QD_OP_SHR, lane, 2), t = arith_c(e, QD_OP_AND, lane, 3);
    uint32_t t2 = arith_c(e, QD_OP_MUL, t, 2);
    /* thread tid owns row tid of the staging buffers; its warp's rows start at tid - lane */
    uint32_t warp0 = value(e, QD_OP_SUB, e->i32, tid, lane);
    uint32_t xrow = arith_c(e, QD_OP_MUL, tid, XPITCH);
    uint32_t yrow = arith_c(e, QD_OP_MUL, tid, YPITCH);

    /* x -> A fragments, XCHUNK columns at a time through this warp's rows of xs */
    for (int64_t c0 = 0; c0 < K16; c0 += XCHUNK) {
        int64_t cw = K16 - c0 < XCHUNK ? K16 - c0 : XCHUNK;
        for (int64_t c = 0; c < cw; c++) {
            uint32_t v = c0 + c < K ? value(e, QD_OP_LOAD, f16, local_at(e, x, c0 + c), 0)
                                    : const_f16_zero(e);
            uint32_t at = element_in(e, st->xs, arith_c(e, QD_OP_ADD, xrow, c), QD_SPACE_SHARED);
            RETURN_IF_ERROR(store_to(e, at, v));
        }
        RETURN_IF_ERROR(subgroup_sync(e));
        for (int64_t kt = c0 / 16; kt < (c0 + cw) / 16; kt++) {
            for (int rb = 0; rb < 2; rb++) {
                for (int j = 0; j < 8; j++) {
                    /* (g + 8 [j & 2], 2t + (j & 1) + 8 [j & 4]) of the 16 x 16 tile */
                    int64_t row0 = 16 * rb + 8 * ((j >> 1) & 1);
                    int64_t col0 = 16 * kt - c0 + (j & 1) + 8 * (j >> 2);
                    uint32_t row = arith_c(e, QD_OP_ADD, value(e, QD_OP_ADD, e->i32, warp0, g), row0);
                    uint32_t idx = value(e, QD_OP_ADD, e->i32, arith_c(e, QD_OP_MUL, row, XPITCH),
                                         arith_c(e, QD_OP_ADD, t2, col0));
                    uint32_t v = value(e, QD_OP_LOAD, f16,
                                       element_in(e, st->xs, idx, QD_SPACE_SHARED), 0);
                    RETURN_IF_ERROR(store_to(e, local_at(e, afrag[2 * kt + rb], j), v));
                }
            }
        }
        RETURN_IF_ERROR(subgroup_sync(e));
    }

    /* YCHUNK outputs at a time: accumulate, stage, read back by rows */
    for (int64_t o0 = 0; o0 < M8; o0 += YCHUNK) {
        int64_t nts = (M8 - o0 < YCHUNK ? M8 - o0 : YCHUNK) / 8;
        for (int64_t n = 0; n < nts; n++) {
            int64_t col_base = o0 + 8 * n;
            for (int j = 0; j < 4; j++) { /* c0 c1: (g, 2t + j), c2 c3: (g + 8, ..) */
                uint32_t col = arith_c(e, QD_OP_ADD, t2, col_base + (j & 1));
                uint32_t init;
                if (mv->has_bias) {
                    uint32_t safe = col_base + 8 <= M ? col : value(e, QD_OP_MIN, e->i32, col,
                                                                    const_i32(e, M - 1));
                    init = load_f32(e, inst->args[3], plus(e, mv->bias_offset, safe));
                } else {
                    init = const_f32(e, 0.0);
                }
                for (int rb = 0; rb < 2; rb++) {
                    RETURN_IF_ERROR(store_to(e, local_at(e, acc[2 * n + rb], j), init));
                }
            }
            for (int64_t kt = 0; kt < KT; kt++) {
                /* b0 b1: A_op(o, 16 kt + 2t + j), b2 b3: .. + 8, with o = col_base + g */
                uint32_t o = arith_c(e, QD_OP_ADD, g, col_base);
                if (col_base + 8 > M) {
                    o = value(e, QD_OP_MIN, e->i32, o, const_i32(e, M - 1));
                }
                for (int j = 0; j < 4; j++) {
                    int64_t k0 = 16 * kt + (j & 1) + 8 * (j >> 1);
                    uint32_t k = arith_c(e, QD_OP_ADD, t2, k0);
                    bool partial = 16 * kt + 16 > K;
                    uint32_t kc = partial ? value(e, QD_OP_MIN, e->i32, k, const_i32(e, K - 1)) : k;
                    uint32_t v = mv->transpose ? matrix_elem(e, mv, w, kc, o)
                                               : matrix_elem(e, mv, w, o, kc);
                    if (partial) {
                        v = zero_unless(e, value(e, QD_OP_LT, qd_type_scalar(QD_TY_U1), k,
                                                 const_i32(e, K)), v, f16);
                    }
                    RETURN_IF_ERROR(store_to(e, local_at(e, bfrag, j), v));
                }
                for (int rb = 0; rb < 2; rb++) {
                    QdInst *mma = emit(e, QD_OP_MMA_M16N8K16, 3, NULL);
                    if (!mma) {
                        return -1;
                    }
                    mma->args[0] = acc[2 * n + rb];
                    mma->args[1] = afrag[2 * kt + rb];
                    mma->args[2] = bfrag;
                }
            }
            for (int rb = 0; rb < 2; rb++) {
                for (int j = 0; j < 4; j++) {
                    uint32_t row = arith_c(e, QD_OP_ADD, value(e, QD_OP_ADD, e->i32, warp0, g),
                                           16 * rb + 8 * (j >> 1));
                    uint32_t idx = value(e, QD_OP_ADD, e->i32, arith_c(e, QD_OP_MUL, row, YPITCH),
                                         arith_c(e, QD_OP_ADD, t2, 8 * n + (j & 1)));
                    uint32_t v = value(e, QD_OP_LOAD, e->f32, local_at(e, acc[2 * n + rb], j), 0);
                    RETURN_IF_ERROR(store_to(e, element_in(e, st->ys, idx, QD_SPACE_SHARED), v));
                }
            }
        }
        RETURN_IF_ERROR(subgroup_sync(e));
        for (int64_t c = 0; c < YCHUNK && o0 + c < M; c++) {
            uint32_t at = element_in(e, st->ys, arith_c(e, QD_OP_ADD, yrow, c), QD_SPACE_SHARED);
            uint32_t v = value(e, QD_OP_LOAD, e->f32, at, 0);
            if (yty->kind != QD_TY_F32) {
                v = value(e, QD_OP_CAST, yty, v, 0);
            }
            RETURN_IF_ERROR(store_to(e, local_at(e, y, o0 + c), v));
        }
        RETURN_IF_ERROR(subgroup_sync(e));
    }
    return 0;
}

/* A product marked tensor_cores inside a loop whose blocks fit: `if ballot(1) == all lanes
 * { tensor cores } else { loops }` before it. 1 when emitted, 0 when the product does not
 * qualify (the caller emits the loops), -1 on error. */
static int
lower_matvec_tc(Emitter *e, const QdInst *inst, Staging *st)
{
    QdInst *loop = inst->imm.matvec.tensor_cores ? mma_loop(e->region) : NULL;
    if (!loop || qd_matvec_in_len(&inst->imm.matvec) > 128) {
        return 0;
    }
    RETURN_IF_ERROR(staging_for(e, loop, st));
    const QdType *u32 = qd_type_scalar(QD_TY_U32);
    uint32_t mask = value(e, QD_OP_BALLOT, u32, const_i32(e, 1), 0);
    uint32_t full = value(e, QD_OP_EQ, qd_type_scalar(QD_TY_U1), mask, const_u32(e, 0xffffffffu));
    QdInst *branch = emit(e, QD_OP_IF, 1, NULL);
    if (!branch || full == QD_NO_VALUE) {
        return -1;
    }
    branch->args[0] = full;
    Emitter inner = *e;
    inner.region = branch->regions[0];
    inner.before = NULL;
    RETURN_IF_ERROR(lower_mma(&inner, inst, st));
    /* the loops on private copies of x and y, so that x and y themselves are indexed by
     * constants only and stay in registers on the tensor-core path */
    inner.region = branch->regions[1];
    inner.before = NULL;
    const QdType *ty = qd_value_type(e->f, inst->args[0])->elem->elem;
    uint32_t K = qd_matvec_in_len(&inst->imm.matvec), M = qd_matvec_out_len(&inst->imm.matvec);
    uint32_t xs = local_array(&inner, ty, K), ys = local_array(&inner, ty, M);
    if (xs == QD_NO_VALUE || ys == QD_NO_VALUE) {
        return -1;
    }
    for (uint32_t k = 0; k < K; k++) {
        uint32_t v = value(&inner, QD_OP_LOAD, ty, local_at(&inner, inst->args[1], k), 0);
        RETURN_IF_ERROR(store_to(&inner, local_at(&inner, xs, k), v));
    }
    RETURN_IF_ERROR(lower_loops(&inner, inst, ys, xs));
    for (uint32_t o = 0; o < M; o++) {
        uint32_t v = value(&inner, QD_OP_LOAD, ty, local_at(&inner, ys, o), 0);
        RETURN_IF_ERROR(store_to(&inner, local_at(&inner, inst->args[0], o), v));
    }
    return 1;
}

/* Lowers every product in r and below it. */
static int
lower_region(QdPassCtx *pc, QdFunc *f, QdRegion *r, Staging *st)
{
    for (QdInst *inst = r->first, *next; inst; inst = next) {
        next = inst->next;
        for (int k = 0; k < 2; k++) {
            if (inst->regions[k]) {
                RETURN_IF_ERROR(lower_region(pc, f, inst->regions[k], st));
            }
        }
        if (inst->op != QD_OP_NN_MATVEC) {
            continue;
        }
        Emitter e = {pc, f, r, inst, inst->loc, qd_type_scalar(QD_TY_F32),
                     qd_type_scalar(QD_TY_I32)};
        int tc = lower_matvec_tc(&e, inst, st);
        if (tc < 0 || (tc == 0 && lower_loops(&e, inst, inst->args[0], inst->args[1]) < 0)) {
            return qd_util_nomem(pc, f->module);
        }
        qd_inst_remove(inst);
    }
    return 0;
}

int
qd_pass_nn_lower(QdPassCtx *pc, QdFunc *f)
{
    Staging st = {0};
    return lower_region(pc, f, f->body, &st);
}
