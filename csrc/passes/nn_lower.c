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
    if (nd->ndim != 2 && mv->layout == QD_MAT_MMA) {
        /* ((r / 16 * KT + c / 16) * 32 + r % 8 * 4 + c % 8 / 2) * 8 + c % 2 + 2 (c / 8 % 2) +
         * 4 (r / 8 % 2), KT = stride / 16 */
        uint32_t tile = value(e, QD_OP_ADD, e->i32,
                              value(e, QD_OP_MUL, e->i32, value(e, QD_OP_SHR, e->i32, r,
                                                                const_i32(e, 4)),
                                    const_i32(e, mv->stride / 16)),
                              value(e, QD_OP_SHR, e->i32, c, const_i32(e, 4)));
        uint32_t lane = value(e, QD_OP_ADD, e->i32,
                              value(e, QD_OP_MUL, e->i32,
                                    value(e, QD_OP_AND, e->i32, r, const_i32(e, 7)),
                                    const_i32(e, 4)),
                              value(e, QD_OP_SHR, e->i32,
                                    value(e, QD_OP_AND, e->i32, c, const_i32(e, 7)),
                                    const_i32(e, 1)));
        uint32_t slot = value(e, QD_OP_ADD, e->i32,
                              value(e, QD_OP_MUL, e->i32, tile, const_i32(e, 32)), lane);
        uint32_t j = value(e, QD_OP_ADD, e->i32,
                           value(e, QD_OP_AND, e->i32, c, const_i32(e, 1)),
                           value(e, QD_OP_ADD, e->i32,
                                 value(e, QD_OP_MUL, e->i32,
                                       value(e, QD_OP_AND, e->i32,
                                             value(e, QD_OP_SHR, e->i32, c, const_i32(e, 3)),
                                             const_i32(e, 1)),
                                       const_i32(e, 2)),
                                 value(e, QD_OP_MUL, e->i32,
                                       value(e, QD_OP_AND, e->i32,
                                             value(e, QD_OP_SHR, e->i32, r, const_i32(e, 3)),
                                             const_i32(e, 1)),
                                       const_i32(e, 4))));
        index = plus(e, mv->offset,
                     value(e, QD_OP_ADD, e->i32,
                           value(e, QD_OP_MUL, e->i32, slot, const_i32(e, 8)), j));
        if (index == QD_NO_VALUE) {
            return QD_NO_VALUE;
        }
    } else if (nd->ndim != 2) {
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

/* Per-lane values of the whole-warp branch: the m16n8k16 coordinates g = lane / 4 and 2t =
 * 2 (lane % 4), the first staging row of the warp, and the lane's own staging rows. */
typedef struct LaneGeo {
    uint32_t g, t2, warp0, xrow, yrow;
} LaneGeo;

static int
lane_geometry(Emitter *e, LaneGeo *lg)
{
    uint32_t tid = value(e, QD_OP_THREAD_IDX, e->i32, 0, 0);
    uint32_t lane = arith_c(e, QD_OP_AND, tid, 31);
    lg->g = arith_c(e, QD_OP_SHR, lane, 2);
    lg->t2 = arith_c(e, QD_OP_MUL, arith_c(e, QD_OP_AND, lane, 3), 2);
    /* thread tid owns row tid of the staging buffers; its warp's rows start at tid - lane */
    lg->warp0 = value(e, QD_OP_SUB, e->i32, tid, lane);
    lg->xrow = arith_c(e, QD_OP_MUL, tid, XPITCH);
    lg->yrow = arith_c(e, QD_OP_MUL, tid, YPITCH);
    return lg->yrow == QD_NO_VALUE ? -1 : 0;
}

/* New local arrays afrag[2 kt + rb] (8 f16 each) for an input of K16 columns. */
static int
new_afrags(Emitter *e, int64_t K16, uint32_t *afrag)
{
    for (int64_t k = 0; k < 2 * (K16 / 16); k++) {
        if ((afrag[k] = local_array(e, qd_type_scalar(QD_TY_F16), 8)) == QD_NO_VALUE) {
            return -1;
        }
    }
    return 0;
}

/* The 32 lanes' vectors x (K elements, zero-padded to K16) -> A fragments, XCHUNK columns at a
 * time through the warp's rows of the input staging buffer. */
static int
stage_in(Emitter *e, const Staging *st, const LaneGeo *lg, uint32_t x, int64_t K, int64_t K16,
         const uint32_t *afrag)
{
    const QdType *f16 = qd_type_scalar(QD_TY_F16);
    for (int64_t c0 = 0; c0 < K16; c0 += XCHUNK) {
        int64_t cw = K16 - c0 < XCHUNK ? K16 - c0 : XCHUNK;
        for (int64_t c = 0; c < cw; c++) {
            uint32_t v = c0 + c < K ? value(e, QD_OP_LOAD, f16, local_at(e, x, c0 + c), 0)
                                    : const_f16_zero(e);
            uint32_t at =
                element_in(e, st->xs, arith_c(e, QD_OP_ADD, lg->xrow, c), QD_SPACE_SHARED);
            RETURN_IF_ERROR(store_to(e, at, v));
        }
        RETURN_IF_ERROR(subgroup_sync(e));
        for (int64_t kt = c0 / 16; kt < (c0 + cw) / 16; kt++) {
            for (int rb = 0; rb < 2; rb++) {
                for (int j = 0; j < 8; j++) {
                    /* (g + 8 [j & 2], 2t + (j & 1) + 8 [j & 4]) of the 16 x 16 tile */
                    int64_t row0 = 16 * rb + 8 * ((j >> 1) & 1);
                    int64_t col0 = 16 * kt - c0 + (j & 1) + 8 * (j >> 2);
                    uint32_t row = arith_c(e, QD_OP_ADD,
                                           value(e, QD_OP_ADD, e->i32, lg->warp0, lg->g), row0);
                    uint32_t idx = value(e, QD_OP_ADD, e->i32, arith_c(e, QD_OP_MUL, row, XPITCH),
                                         arith_c(e, QD_OP_ADD, lg->t2, col0));
                    uint32_t v = value(e, QD_OP_LOAD, f16,
                                       element_in(e, st->xs, idx, QD_SPACE_SHARED), 0);
                    RETURN_IF_ERROR(store_to(e, local_at(e, afrag[2 * kt + rb], j), v));
                }
            }
        }
        RETURN_IF_ERROR(subgroup_sync(e));
    }
    return 0;
}

/* acc[2 (n - nt0) + rb] (4 f32 each, new arrays) = bias + the product's output tiles nt0 <= n <
 * nt1 of both 16-row blocks, from the A fragments. */
static int
accumulate_tiles(Emitter *e, const QdInst *inst, const LaneGeo *lg, const uint32_t *afrag,
                 int64_t nt0, int64_t nt1, uint32_t *acc)
{
    const QdMatvec *mv = &inst->imm.matvec;
    const int64_t K = qd_matvec_in_len(mv), M = qd_matvec_out_len(mv);
    const int64_t KT = (K + 15) / 16;
    const QdType *f16 = qd_type_scalar(QD_TY_F16);
    uint32_t w = inst->args[2];
    uint32_t bfrag = local_array(e, f16, 4);
    if (bfrag == QD_NO_VALUE) {
        return -1;
    }
    /* A_op(o, k) of a 1-D buffer at (the lane's part: g and 2t times their strides) + (a
     * constant), so that the loads of a lane share one base address */
    bool split = qd_value_type(e->f, w)->ndim == 1 && mv->layout != QD_MAT_MMA;
    /* fragment order, not transposed: the lane's 8 elements of each 16 x 16 tile are
     * consecutive at lane * 8 in the tile, 4 per output tile: mma_m16n8k16 reads them from
     * the buffer as one 8-byte vector (pack starts the buffer and every tile on a 64-byte
     * boundary); the tiles' zero padding covers k >= K and o >= M */
    bool frag = qd_value_type(e->f, w)->ndim == 1 && mv->layout == QD_MAT_MMA && !mv->transpose;
    uint32_t frag_lane = QD_NO_VALUE;
    if (frag) {
        frag_lane = value(e, QD_OP_ADD, e->i32, arith_c(e, QD_OP_MUL, lg->g, 32),
                          arith_c(e, QD_OP_MUL, lg->t2, 4));
    }
    int64_t sr = mv->layout == QD_MAT_ROW_MAJOR ? mv->stride : 1;
    int64_t sc = mv->layout == QD_MAT_ROW_MAJOR ? 1 : mv->stride;
    int64_t so = mv->transpose ? sc : sr, sk = mv->transpose ? sr : sc; /* strides of o and k */
    uint32_t lane_idx = QD_NO_VALUE;
    if (split) {
        lane_idx = value(e, QD_OP_ADD, e->i32, arith_c(e, QD_OP_MUL, lg->g, so),
                         arith_c(e, QD_OP_MUL, lg->t2, sk));
    }
    for (int64_t n = nt0; n < nt1; n++) {
        int64_t col_base = 8 * n;
        uint32_t *a = &acc[2 * (n - nt0)];
        if ((a[0] = local_array(e, e->f32, 4)) == QD_NO_VALUE ||
            (a[1] = local_array(e, e->f32, 4)) == QD_NO_VALUE) {
            return -1;
        }
        for (int j = 0; j < 4; j++) { /* c0 c1: (g, 2t + j), c2 c3: (g + 8, ..) */
            uint32_t col = arith_c(e, QD_OP_ADD, lg->t2, col_base + (j & 1));
            uint32_t init;
            if (mv->has_bias) {
                uint32_t safe = col_base + 8 <= M
                                    ? col
                                    : value(e, QD_OP_MIN, e->i32, col, const_i32(e, M - 1));
                init = load_f32(e, inst->args[3], plus(e, mv->bias_offset, safe));
            } else {
                init = const_f32(e, 0.0);
            }
            for (int rb = 0; rb < 2; rb++) {
                RETURN_IF_ERROR(store_to(e, local_at(e, a[rb], j), init));
            }
        }
        for (int64_t kt = 0; kt < KT; kt++) {
            uint32_t bsrc = bfrag;
            if (frag) {
                int64_t at_c = mv->offset + ((col_base / 16) * (mv->stride / 16) + kt) * 256 +
                               (col_base % 16 / 8) * 4;
                uint32_t idx = arith_c(e, QD_OP_ADD, frag_lane, at_c);
                const QdType *ptr = qd_type_ptr(e->f->module, f16, QD_SPACE_GLOBAL);
                QdInst *at = ptr && idx != QD_NO_VALUE ? emit(e, QD_OP_ELEM_PTR, 2, ptr) : NULL;
                if (!at) {
                    return -1;
                }
                at->args[0] = w;
                at->args[1] = idx;
                bsrc = at->result;
            }
            /* b0 b1: A_op(o, 16 kt + 2t + j), b2 b3: .. + 8, with o = col_base + g */
            uint32_t o = arith_c(e, QD_OP_ADD, lg->g, col_base);
            if (col_base + 8 > M) {
                o = value(e, QD_OP_MIN, e->i32, o, const_i32(e, M - 1));
            }
            for (int j = 0; j < 4 && !frag; j++) {
                int64_t k0 = 16 * kt + (j & 1) + 8 * (j >> 1);
                uint32_t k = arith_c(e, QD_OP_ADD, lg->t2, k0);
                bool partial = 16 * kt + 16 > K;
                uint32_t v;
                if (split && !partial && col_base + 8 <= M) {
                    uint32_t idx = arith_c(e, QD_OP_ADD, lane_idx,
                                           mv->offset + col_base * so + k0 * sk);
                    const QdType *ptr = qd_type_ptr(e->f->module, f16, QD_SPACE_GLOBAL);
                    QdInst *at = ptr && idx != QD_NO_VALUE ? emit(e, QD_OP_ELEM_PTR, 2, ptr) : NULL;
                    if (!at) {
                        return -1;
                    }
                    at->args[0] = w;
                    at->args[1] = idx;
                    v = value(e, QD_OP_LOAD, f16, at->result, 0);
                } else {
                    uint32_t kc = partial ? value(e, QD_OP_MIN, e->i32, k, const_i32(e, K - 1)) : k;
                    v = mv->transpose ? matrix_elem(e, mv, w, kc, o) : matrix_elem(e, mv, w, o, kc);
                }
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
                mma->args[0] = a[rb];
                mma->args[1] = afrag[2 * kt + rb];
                mma->args[2] = bsrc;
            }
        }
    }
    return 0;
}

/* The last product of a chain: YCHUNK outputs at a time accumulated, staged through the
 * warp's rows of the output buffer and read back by each lane into its y (rounded to y's
 * type). */
static int
accumulate_out(Emitter *e, const Staging *st, const LaneGeo *lg, const QdInst *inst,
               const uint32_t *afrag)
{
    const int64_t M = qd_matvec_out_len(&inst->imm.matvec), M8 = (M + 7) / 8 * 8;
    const QdType *yty = qd_value_type(e->f, inst->args[0])->elem->elem;
    uint32_t acc[2 * (YCHUNK / 8)];
    for (int64_t o0 = 0; o0 < M8; o0 += YCHUNK) {
        int64_t nts = (M8 - o0 < YCHUNK ? M8 - o0 : YCHUNK) / 8;
        RETURN_IF_ERROR(accumulate_tiles(e, inst, lg, afrag, o0 / 8, o0 / 8 + nts, acc));
        for (int64_t n = 0; n < nts; n++) {
            for (int rb = 0; rb < 2; rb++) {
                for (int j = 0; j < 4; j++) {
                    uint32_t row = arith_c(e, QD_OP_ADD,
                                           value(e, QD_OP_ADD, e->i32, lg->warp0, lg->g),
                                           16 * rb + 8 * (j >> 1));
                    uint32_t idx = value(e, QD_OP_ADD, e->i32, arith_c(e, QD_OP_MUL, row, YPITCH),
                                         arith_c(e, QD_OP_ADD, lg->t2, 8 * n + (j & 1)));
                    uint32_t v = value(e, QD_OP_LOAD, e->f32, local_at(e, acc[2 * n + rb], j), 0);
                    RETURN_IF_ERROR(store_to(e, element_in(e, st->ys, idx, QD_SPACE_SHARED), v));
                }
            }
        }
        RETURN_IF_ERROR(subgroup_sync(e));
        for (int64_t c = 0; c < YCHUNK && o0 + c < M; c++) {
            uint32_t at =
                element_in(e, st->ys, arith_c(e, QD_OP_ADD, lg->yrow, c), QD_SPACE_SHARED);
            uint32_t v = value(e, QD_OP_LOAD, e->f32, at, 0);
            if (yty->kind != QD_TY_F32) {
                v = value(e, QD_OP_CAST, yty, v, 0);
            }
            RETURN_IF_ERROR(store_to(e, local_at(e, inst->args[0], o0 + c), v));
        }
        RETURN_IF_ERROR(subgroup_sync(e));
    }
    return 0;
}

/***** chains: products whose activations stay in fragments *****/

/* A link from product p to the next product q of a chain: every element of q's input is
 * the same elementwise expression (`root`, the one written for element 0, whose loads of p's
 * output are its leaves) of the element of p's output with its index. */
typedef struct Link {
    uint32_t root;
} Link;

/* Values marked as instructions between two products of a link (indexed by value id; ids made
 * during the pass lie past `cap` and are never marked). */
typedef struct Marks {
    uint8_t *on;
    uint32_t *fwd; /* a load of a variable's slot between the products -> the value stored there
                      before it (QD_NO_VALUE: none) */
    uint32_t cap;
} Marks;

/* v, or the value a load between the products reads back from a variable's slot. */
static uint32_t
resolve(const Marks *m, uint32_t v)
{
    while (v < m->cap && m->fwd[v] != QD_NO_VALUE) {
        v = m->fwd[v];
    }
    return v;
}

#define INSIDE(m, v) ((v) < (m)->cap && (m)->on[(v)])

#define MAX_CHAIN 16
#define MAX_FUSED_WIDTH 64 /* outputs of a product whose accumulators stay in registers */

/* Whether value v is the same for every thread of the loop: a constant, a parameter, or
 * defined outside the parallel_for. */
static bool
uniform_value(const QdFunc *f, uint32_t v, const QdInst *loop)
{
    const QdInst *def = f->values[v].def;
    if (def == NULL || def->op == QD_OP_CONST) {
        return true;
    }
    if (def == loop) { /* its induction variable */
        return false;
    }
    for (const QdRegion *r = def->parent; r && r->owner; r = r->owner->parent) {
        if (r->owner == loop) {
            return false;
        }
    }
    return true;
}

/* The constant index of array_ptr instruction `ptr` into array `base`, or -1. */
static int64_t
const_index(const QdFunc *f, uint32_t ptr, uint32_t base)
{
    const QdInst *def = f->values[ptr].def;
    if (def == NULL || def->op != QD_OP_ARRAY_PTR || def->args[0] != base) {
        return -1;
    }
    const QdInst *idx = f->values[def->args[1]].def;
    return idx && idx->op == QD_OP_CONST ? idx->imm.cst.i : -1;
}

/* Whether the expression of value a (for element ka) and of value b (element kb) are the same
 * elementwise expression of p's output ys (values marked `inside` are instructions between the
 * products; anything else must be uniform). */
static bool
same_tree(const QdFunc *f, const Marks *inside, uint32_t ys, const QdInst *loop, uint32_t a,
          int64_t ka, uint32_t b, int64_t kb, int depth)
{
    if (depth > 32) {
        return false;
    }
    a = resolve(inside, a);
    b = resolve(inside, b);
    if (!INSIDE(inside, a) || !INSIDE(inside, b)) {
        return a == b && uniform_value(f, a, loop);
    }
    const QdInst *da = f->values[a].def, *db = f->values[b].def;
    if (da->op != db->op || da->type != db->type || da->nargs != db->nargs) {
        return false;
    }
    if (da->op == QD_OP_LOAD) {
        return const_index(f, da->args[0], ys) == ka && const_index(f, db->args[0], ys) == kb;
    }
    if (da->op == QD_OP_CONST) {
        return da->imm.cst.i == db->imm.cst.i && da->imm.cst.f == db->imm.cst.f;
    }
    if (!qd_op_has(da->op, QD_PURE) || qd_op_has(da->op, QD_SIMT) || da->op == QD_OP_ARRAY_PTR ||
        qd_op_info[da->op].nregions != 0 || qd_op_info[da->op].imm != IMM_NONE) {
        return false;
    }
    for (uint32_t k = 0; k < da->nargs; k++) {
        if (!same_tree(f, inside, ys, loop, da->args[k], ka, db->args[k], kb, depth + 1)) {
            return false;
        }
    }
    return true;
}

/* Whether value v is used by an instruction of region r (and below) from `from` on (NULL: all),
 * leaving out the instructions from skip_lo to skip_hi (of one region) when given. */
static bool
used_outside(const QdRegion *r, const QdInst *from, uint32_t v, const QdInst *skip_lo,
             const QdInst *skip_hi)
{
    bool skipping = false;
    for (const QdInst *inst = from ? from : r->first; inst; inst = inst->next) {
        if (inst == skip_lo) {
            skipping = true;
        }
        if (!skipping) {
            for (uint32_t k = 0; k < inst->nargs; k++) {
                if (inst->args[k] == v) {
                    return true;
                }
            }
            for (int k = 0; k < 2; k++) {
                if (inst->regions[k] &&
                    used_outside(inst->regions[k], NULL, v, skip_lo, skip_hi)) {
                    return true;
                }
            }
        }
        if (inst == skip_hi) {
            skipping = false;
        }
    }
    return false;
}

/* Marks (or clears) the results of the instructions strictly between p and q. */
static void
mark_between(Marks *inside, const QdInst *p, const QdInst *q, uint8_t on)
{
    for (const QdInst *inst = p->next; inst != q; inst = inst->next) {
        if (inst->result != QD_NO_VALUE && inst->result < inside->cap) {
            inside->on[inst->result] = on;
        }
    }
}

#define MAX_SLOTS 512

/* Whether pointer p is a variable's slot: a local scalar alloca. */
static bool
variable_slot(const QdFunc *f, uint32_t p)
{
    const QdInst *def = f->values[p].def;
    return def && def->op == QD_OP_ALLOCA && qd_type_is_scalar(def->type->elem);
}

/* The index of slot p among slots[0..n), or -1. */
static int32_t
slot_of(const QdFunc *f, const uint32_t *slots, uint32_t n, uint32_t p)
{
    (void)f;
    for (uint32_t k = 0; k < n; k++) {
        if (slots[k] == p) {
            return (int32_t)k;
        }
    }
    return -1;
}

/* Whether the instructions from `from` on (to the end of its region) may read slot p before
 * they write it: a load of it first, or any use inside a nested region first. */
static bool
slot_read_next(const QdInst *from, uint32_t p)
{
    for (const QdInst *inst = from; inst; inst = inst->next) {
        if (inst->op == QD_OP_STORE && inst->args[0] == p) {
            return false;
        }
        for (uint32_t k = 0; k < inst->nargs; k++) {
            if (inst->args[k] == p) {
                return true;
            }
        }
        for (int k = 0; k < 2; k++) {
            if (inst->regions[k] && inst->regions[k]->first &&
                used_outside(inst->regions[k], NULL, p, NULL, NULL)) {
                return true;
            }
        }
    }
    return false;
}

/* Whether q (the next product after p in their region) can take p's output as fragments:
 * q's input has p's output length (at most MAX_FUSED_WIDTH); the instructions between them
 * only read p's output at constant indices, compute pure elementwise expressions, and store
 * element k of q's input from element k of p's output, the same expression for every k, with
 * uniform values besides; nothing else uses them, p's output or q's input. */
static bool
fusable(QdFunc *f, const QdInst *loop, const QdInst *p, const QdInst *q, Marks *inside,
        Link *link)
{
    const QdMatvec *mp = &p->imm.matvec, *mq = &q->imm.matvec;
    uint32_t ys = p->args[0], xs = q->args[1];
    int64_t K = qd_matvec_in_len(mq);
    if (!mq->tensor_cores || K != qd_matvec_out_len(mp) || K > MAX_FUSED_WIDTH) {
        return false;
    }
    uint32_t roots[MAX_FUSED_WIDTH], slots[MAX_SLOTS], stored[MAX_SLOTS];
    uint32_t nslots = 0;
    for (int64_t k = 0; k < K; k++) {
        roots[k] = QD_NO_VALUE;
    }
    bool ok = true;
    for (const QdInst *inst = p->next; inst != q && ok; inst = inst->next) {
        if (inst->result != QD_NO_VALUE && inst->result < inside->cap) {
            inside->on[inst->result] = 1;
        }
        switch (inst->op) {
        case QD_OP_CONST:
            break;
        case QD_OP_ARRAY_PTR:
            ok = (inst->args[0] == ys || inst->args[0] == xs) &&
                 const_index(f, inst->result, inst->args[0]) >= 0;
            break;
        case QD_OP_LOAD: {
            int32_t at = slot_of(f, slots, nslots, inst->args[0]);
            if (at >= 0 && inst->result < inside->cap) {
                inside->fwd[inst->result] = stored[at];
            } else {
                ok = const_index(f, inst->args[0], ys) >= 0;
            }
            break;
        }
        case QD_OP_STORE: {
            int64_t k = const_index(f, inst->args[0], xs);
            if (k >= 0) {
                ok = k < K && roots[k] == QD_NO_VALUE;
                if (ok) {
                    roots[k] = inst->args[1];
                }
                break;
            }
            /* a variable's slot (the frontend keeps a CoopVec variable's elements in them) */
            int32_t at = slot_of(f, slots, nslots, inst->args[0]);
            if (at < 0 && variable_slot(f, inst->args[0]) && nslots < MAX_SLOTS) {
                at = (int32_t)nslots++;
                slots[at] = inst->args[0];
            }
            ok = at >= 0;
            if (ok) {
                stored[at] = inst->args[1];
            }
            break;
        }
        default:
            ok = qd_op_has(inst->op, QD_PURE) && !qd_op_has(inst->op, QD_SIMT) &&
                 qd_op_info[inst->op].nregions == 0 && qd_op_info[inst->op].imm == IMM_NONE &&
                 inst->result != QD_NO_VALUE && qd_type_is_scalar(inst->type);
        }
    }
    for (int64_t k = 0; k < K && ok; k++) {
        ok = roots[k] != QD_NO_VALUE && INSIDE(inside, roots[k]) &&
             same_tree(f, inside, ys, loop, roots[0], 0, roots[k], k, 0);
    }
    /* the slots written between are dead after q: written again before any read */
    for (uint32_t k = 0; k < nslots && ok; k++) {
        ok = !slot_read_next(q->next, slots[k]);
    }
    /* nothing after q uses what lies between; p's output and q's input serve only them */
    for (const QdInst *inst = p->next; inst != q && ok; inst = inst->next) {
        if (inst->result != QD_NO_VALUE) {
            ok = !q->next || !used_outside(q->parent, q->next, inst->result, NULL, NULL);
        }
    }
    const QdRegion *top = f->body;
    ok = ok && !used_outside(top, NULL, ys, p, q) && !used_outside(top, NULL, xs, p->next, q);
    link->root = ok ? roots[0] : QD_NO_VALUE;
    mark_between(inside, p, q, 0);
    return ok;
}
/* The expression of link value v for one fragment slot, at the emitter: loads of p's output
 * (the leaves) become `slot`, values from outside the link are used as they are, the rest is
 * cloned once per slot (memo, reset by the caller through `touched`). */
static uint32_t
emit_tree(Emitter *e, const Marks *inside, uint32_t v, uint32_t slot, uint32_t *memo,
          uint32_t *touched, uint32_t *ntouched)
{
    v = resolve(inside, v);
    if (!INSIDE(inside, v)) {
        return v;
    }
    if (memo[v] != QD_NO_VALUE) {
        return memo[v];
    }
    const QdInst *def = e->f->values[v].def;
    if (def->op == QD_OP_LOAD) {
        return slot;
    }
    uint32_t args[3];
    for (uint32_t k = 0; k < def->nargs && k < 3; k++) {
        args[k] = emit_tree(e, inside, def->args[k], slot, memo, touched, ntouched);
        if (args[k] == QD_NO_VALUE) {
            return QD_NO_VALUE;
        }
    }
    QdInst *c = emit(e, def->op, def->nargs, def->type);
    if (!c || def->nargs > 3) {
        return QD_NO_VALUE;
    }
    c->imm = def->imm;
    for (uint32_t k = 0; k < def->nargs; k++) {
        c->args[k] = args[k];
    }
    memo[v] = c->result;
    touched[(*ntouched)++] = v;
    return c->result;
}

/* The A fragments of product q from the accumulators of product p (all its output tiles, in
 * acc[2 n + rb]) through the link: each slot's value rounded to p's output type, the link's
 * expression applied, zero past p's outputs. */
static int
link_fragments(Emitter *e, const LaneGeo *lg, const QdInst *p, const Link *link,
               const Marks *inside, const uint32_t *acc, const uint32_t *afrag, uint32_t *memo,
               uint32_t *touched)
{
    const int64_t M = qd_matvec_out_len(&p->imm.matvec), M8 = (M + 7) / 8 * 8;
    const int64_t K16 = (M + 15) / 16 * 16;
    const QdType *yty = qd_value_type(e->f, p->args[0])->elem->elem;
    const QdType *f16 = qd_type_scalar(QD_TY_F16);
    for (int64_t kt = 0; kt < K16 / 16; kt++) {
        for (int rb = 0; rb < 2; rb++) {
            for (int j = 0; j < 8; j++) {
                /* A(g + 8 [j & 2], 16 kt + 2t + (j & 1) + 8 [j & 4]) is D(.., same column) of
                 * output tile 2 kt + [j & 4], its element (j & 1) + 2 [j & 2] */
                int64_t n = 2 * kt + (j >> 2);
                uint32_t v;
                if (8 * n >= M8) {
                    v = const_f16_zero(e);
                } else {
                    int jj = (j & 1) + 2 * ((j >> 1) & 1);
                    uint32_t d = value(e, QD_OP_LOAD, e->f32, local_at(e, acc[2 * n + rb], jj), 0);
                    uint32_t y = yty->kind == QD_TY_F32 ? d : value(e, QD_OP_CAST, yty, d, 0);
                    uint32_t ntouched = 0;
                    v = emit_tree(e, inside, link->root, y, memo, touched, &ntouched);
                    for (uint32_t k = 0; k < ntouched; k++) {
                        memo[touched[k]] = QD_NO_VALUE;
                    }
                    if (8 * n + 8 > M) {
                        uint32_t col = arith_c(e, QD_OP_ADD, lg->t2, 8 * n + (j & 1));
                        v = zero_unless(e, value(e, QD_OP_LT, qd_type_scalar(QD_TY_U1), col,
                                                 const_i32(e, M)), v, f16);
                    }
                }
                RETURN_IF_ERROR(store_to(e, local_at(e, afrag[2 * kt + rb], j), v));
            }
        }
    }
    return 0;
}

/* The loops form of product `inst` where it stands (the else branch of a chain), on private
 * copies of x and y so that x and y themselves are indexed by constants only and stay in
 * registers on the tensor-core path; removes the product. */
static int
lower_loops_private(QdPassCtx *pc, QdFunc *f, QdInst *inst)
{
    Emitter e = {pc, f, inst->parent, inst, inst->loc, qd_type_scalar(QD_TY_F32),
                 qd_type_scalar(QD_TY_I32)};
    const QdType *ty = qd_value_type(f, inst->args[0])->elem->elem;
    uint32_t K = qd_matvec_in_len(&inst->imm.matvec), M = qd_matvec_out_len(&inst->imm.matvec);
    uint32_t xs = local_array(&e, ty, K), ys = local_array(&e, ty, M);
    if (xs == QD_NO_VALUE || ys == QD_NO_VALUE) {
        return -1;
    }
    for (uint32_t k = 0; k < K; k++) {
        uint32_t v = value(&e, QD_OP_LOAD, ty, local_at(&e, inst->args[1], k), 0);
        RETURN_IF_ERROR(store_to(&e, local_at(&e, xs, k), v));
    }
    RETURN_IF_ERROR(lower_loops(&e, inst, ys, xs));
    for (uint32_t o = 0; o < M; o++) {
        uint32_t v = value(&e, QD_OP_LOAD, ty, local_at(&e, ys, o), 0);
        RETURN_IF_ERROR(store_to(&e, local_at(&e, inst->args[0], o), v));
    }
    qd_inst_remove(inst);
    return 0;
}

/* A chain of n products prods[0..n) of one region (links[j] between j and j + 1), inside a
 * loop whose blocks fit: `if ballot(1) == all lanes { tensor cores } else { the instructions
 * from the first product to the last, products as loops }`. The whole-warp branch stages the
 * first input in, keeps the activations in fragments along the links and stages the last
 * output out. */
static int
lower_chain(QdPassCtx *pc, QdFunc *f, QdInst **prods, uint32_t n, const Link *links,
            Marks *inside, Staging *st, QdInst *loop)
{
    QdInst *first = prods[0], *last = prods[n - 1];
    Emitter e = {pc, f, first->parent, first, first->loc, qd_type_scalar(QD_TY_F32),
                 qd_type_scalar(QD_TY_I32)};
    RETURN_IF_ERROR(staging_for(&e, loop, st));
    /* the links' constants go before the branch: both forms use them */
    for (uint32_t j = 0; j + 1 < n; j++) {
        for (QdInst *inst = prods[j]->next, *next; inst != prods[j + 1]; inst = next) {
            next = inst->next;
            if (inst->op == QD_OP_CONST) {
                qd_inst_remove(inst);
                qd_region_insert_before(first->parent, first, inst);
            }
        }
    }
    const QdType *u32 = qd_type_scalar(QD_TY_U32);
    uint32_t mask = value(&e, QD_OP_BALLOT, u32, const_i32(&e, 1), 0);
    uint32_t full =
        value(&e, QD_OP_EQ, qd_type_scalar(QD_TY_U1), mask, const_u32(&e, 0xffffffffu));
    QdInst *branch = emit(&e, QD_OP_IF, 1, NULL);
    if (!branch || full == QD_NO_VALUE) {
        return -1;
    }
    branch->args[0] = full;
    /* the original instructions, products as loops, in the else branch */
    QdInst *stop = last->next;
    for (QdInst *inst = first, *next; inst != stop; inst = next) {
        next = inst->next;
        qd_inst_remove(inst);
        qd_region_append(branch->regions[1], inst);
    }
    /* the whole-warp branch */
    Emitter t = e;
    t.region = branch->regions[0];
    t.before = NULL;
    LaneGeo lg;
    uint32_t afrag[2 * (128 / 16)], acc[2 * (MAX_FUSED_WIDTH / 8)];
    const QdMatvec *m0 = &first->imm.matvec;
    int64_t K = qd_matvec_in_len(m0), K16 = (K + 15) / 16 * 16;
    RETURN_IF_ERROR(subgroup_sync(&t));
    RETURN_IF_ERROR(lane_geometry(&t, &lg));
    RETURN_IF_ERROR(new_afrags(&t, K16, afrag));
    RETURN_IF_ERROR(stage_in(&t, st, &lg, first->args[1], K, K16, afrag));
    QdArenaMark mark = qd_arena_mark(&pc->scratch);
    uint32_t *memo = QD_NEW_ARRAY(&pc->scratch, uint32_t, inside->cap + 1);
    uint32_t *touched = QD_NEW_ARRAY(&pc->scratch, uint32_t, inside->cap + 1);
    int rc = memo && touched ? 0 : -1;
    for (uint32_t k = 0; rc == 0 && k <= inside->cap; k++) {
        memo[k] = QD_NO_VALUE;
    }
    for (uint32_t j = 0; rc == 0 && j + 1 < n; j++) {
        int64_t M = qd_matvec_out_len(&prods[j]->imm.matvec), M8 = (M + 7) / 8 * 8;
        mark_between(inside, prods[j], prods[j + 1], 1);
        if (accumulate_tiles(&t, prods[j], &lg, afrag, 0, M8 / 8, acc) < 0 ||
            new_afrags(&t, (M + 15) / 16 * 16, afrag) < 0 ||
            link_fragments(&t, &lg, prods[j], &links[j], inside, acc, afrag, memo, touched) < 0) {
            rc = -1;
        }
        mark_between(inside, prods[j], prods[j + 1], 0);
    }
    qd_arena_reset(&pc->scratch, mark);
    RETURN_IF_ERROR(rc);
    RETURN_IF_ERROR(accumulate_out(&t, st, &lg, last, afrag));
    for (uint32_t j = 0; j < n; j++) {
        RETURN_IF_ERROR(lower_loops_private(pc, f, prods[j]));
    }
    return 0;
}

/* The products of region r that qualify for tensor cores, as chains from `first`: the longest
 * run of products linked by fusable(); *n receives its length (0: first does not qualify). */
static QdInst *
find_chain(QdFunc *f, QdInst *first, QdInst **prods, Link *links, uint32_t *n, Marks *inside)
{
    *n = 0;
    const QdMatvec *mv = &first->imm.matvec;
    QdInst *loop = mv->tensor_cores ? mma_loop(first->parent) : NULL;
    if (!loop || qd_matvec_in_len(mv) > 128) {
        return NULL;
    }
    prods[(*n)++] = first;
    while (*n < MAX_CHAIN) {
        QdInst *p = prods[*n - 1], *q = p->next;
        while (q && q->op != QD_OP_NN_MATVEC) {
            q = q->next;
        }
        if (!q || qd_matvec_out_len(&p->imm.matvec) > MAX_FUSED_WIDTH ||
            !fusable(f, loop, p, q, inside, &links[*n - 1])) {
            break;
        }
        prods[(*n)++] = q;
    }
    return loop;
}

/* Lowers every product in r and below it. */
static int
lower_region(QdPassCtx *pc, QdFunc *f, QdRegion *r, Staging *st, Marks *inside)
{
    for (QdInst *inst = r->first, *next; inst; inst = next) {
        next = inst->next;
        for (int k = 0; k < 2; k++) {
            if (inst->regions[k]) {
                RETURN_IF_ERROR(lower_region(pc, f, inst->regions[k], st, inside));
            }
        }
        if (inst->op != QD_OP_NN_MATVEC) {
            continue;
        }
        QdInst *prods[MAX_CHAIN];
        Link links[MAX_CHAIN];
        uint32_t n;
        QdInst *loop = find_chain(f, inst, prods, links, &n, inside);
        if (loop) {
            next = prods[n - 1]->next;
            if (lower_chain(pc, f, prods, n, links, inside, st, loop) < 0) {
                return qd_util_nomem(pc, f->module);
            }
            continue;
        }
        Emitter e = {pc, f, r, inst, inst->loc, qd_type_scalar(QD_TY_F32),
                     qd_type_scalar(QD_TY_I32)};
        if (lower_loops(&e, inst, inst->args[0], inst->args[1]) < 0) {
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
    QdArenaMark mark = qd_arena_mark(&pc->scratch);
    Marks inside = {QD_NEW_ARRAY(&pc->scratch, uint8_t, f->nvalues + 1),
                    QD_NEW_ARRAY(&pc->scratch, uint32_t, f->nvalues + 1), f->nvalues};
    for (uint32_t k = 0; inside.fwd && k <= f->nvalues; k++) {
        inside.fwd[k] = QD_NO_VALUE;
    }
    int rc = inside.on && inside.fwd ? lower_region(pc, f, f->body, &st, &inside)
                                     : qd_util_nomem(pc, f->module);
    qd_arena_reset(&pc->scratch, mark);
    return rc;
}
