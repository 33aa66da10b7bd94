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
 * This is the generic lowering every target runs (CPU, Vulkan, CUDA); a target with tensor cores
 * can later take the product before this pass, for layouts it owns.
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

/* The stored matrix element A(r, c) of the product, as f32. */
static uint32_t
matrix_f32(Emitter *e, const QdMatvec *mv, uint32_t w, uint32_t r, uint32_t c)
{
    const QdType *nd = qd_value_type(e->f, w);
    if (nd->ndim == 2) { /* a row-major view of a 2-D ndarray: w[r, c] */
        const QdType *ptr = qd_type_ptr(e->f->module, nd->elem, QD_SPACE_GLOBAL);
        QdInst *at = ptr ? emit(e, QD_OP_ELEM_PTR, 3, ptr) : NULL;
        if (!at) {
            return QD_NO_VALUE;
        }
        at->args[0] = w;
        at->args[1] = r;
        at->args[2] = c;
        return to_f32(e, value(e, QD_OP_LOAD, nd->elem, at->result, 0));
    }
    uint32_t major = mv->layout == QD_MAT_ROW_MAJOR ? r : c;
    uint32_t minor = mv->layout == QD_MAT_ROW_MAJOR ? c : r;
    uint32_t scaled = value(e, QD_OP_MUL, e->i32, major, const_i32(e, mv->stride));
    uint32_t index = value(e, QD_OP_ADD, e->i32, scaled, minor);
    return load_f32(e, w, plus(e, mv->offset, index));
}

/* acc[o] = acc[o] + A(o, k) * x[k] for the product (A: the matrix or its transpose). */
static int
accumulate(Emitter *e, const QdInst *mv_inst, uint32_t acc, uint32_t o, uint32_t k)
{
    const QdMatvec *mv = &mv_inst->imm.matvec;
    uint32_t r = mv->transpose ? k : o, c = mv->transpose ? o : k;
    uint32_t a = matrix_f32(e, mv, mv_inst->args[2], r, c);
    uint32_t xk = to_f32(e, value(e, QD_OP_LOAD, qd_value_type(e->f, mv_inst->args[1])->elem->elem,
                                  element(e, mv_inst->args[1], k), 0));
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

/* Emits the loops of one product before it (the caller removes it). */
static int
lower_matvec(Emitter *e, const QdInst *inst)
{
    const QdMatvec *mv = &inst->imm.matvec;
    uint32_t m = qd_matvec_out_len(mv), n = qd_matvec_in_len(mv);
    const QdType *arr = qd_type_array(e->f->module, e->f32, m);
    const QdType *ptr = arr ? qd_type_ptr(e->f->module, arr, QD_SPACE_LOCAL) : NULL;
    QdInst *alloca = ptr ? qd_inst_new(e->f, QD_OP_ALLOCA, 0) : NULL;
    if (!alloca || qd_inst_set_result(e->f, alloca, ptr, NULL) == QD_NO_VALUE) {
        return -1;
    }
    alloca->loc = e->loc;
    /* at the start of the enclosing task (or func), where the frontend puts its slots */
    QdRegion *home = e->region;
    while (home->owner && home->owner->op != QD_OP_TASK) {
        home = home->owner->parent;
    }
    qd_region_insert_before(home, home->first, alloca);
    uint32_t acc = alloca->result, o, k;

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
    if (!inner || accumulate(e, inst, acc, o, k) < 0) {
        return -1;
    }
    close_loop(e, inner);
    close_loop(e, outer);

    /* y[o] = T(acc[o]) */
    if (!(loop = open_loop(e, m, &o))) {
        return -1;
    }
    const QdType *ty = qd_value_type(e->f, inst->args[0])->elem->elem;
    uint32_t sum = value(e, QD_OP_LOAD, e->f32, element(e, acc, o), 0);
    if (ty->kind != QD_TY_F32) {
        sum = value(e, QD_OP_CAST, ty, sum, 0);
    }
    uint32_t out = element(e, inst->args[0], o);
    if (!(st = emit(e, QD_OP_STORE, 2, NULL)) || sum == QD_NO_VALUE || out == QD_NO_VALUE) {
        return -1;
    }
    st->args[0] = out;
    st->args[1] = sum;
    close_loop(e, loop);
    return 0;
}

/* Lowers every product in r and below it. */
static int
lower_region(QdPassCtx *pc, QdFunc *f, QdRegion *r)
{
    for (QdInst *inst = r->first, *next; inst; inst = next) {
        next = inst->next;
        for (int k = 0; k < 2; k++) {
            if (inst->regions[k]) {
                RETURN_IF_ERROR(lower_region(pc, f, inst->regions[k]));
            }
        }
        if (inst->op != QD_OP_NN_MATVEC) {
            continue;
        }
        Emitter e = {pc, f, r, inst, inst->loc, qd_type_scalar(QD_TY_F32),
                     qd_type_scalar(QD_TY_I32)};
        if (lower_matvec(&e, inst) < 0) {
            return qd_util_nomem(pc, f->module);
        }
        qd_inst_remove(inst);
    }
    return 0;
}

int
qd_pass_nn_lower(QdPassCtx *pc, QdFunc *f)
{
    return lower_region(pc, f, f->body);
}
