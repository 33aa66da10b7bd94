/* frontend/lower_random.c -- qd.random / qd.randn: counter-based random numbers.
 *
 * A kernel that draws random numbers gets a hidden u64 parameter, the launch seed, which the
 * launcher derives from qd.init(random_seed=...) and a launch counter, so that every launch
 * draws new numbers and a program with a fixed seed repeats its sequence. Each iteration of a
 * parallel loop (and each serial task) keeps a u64 state in a local slot, initialized from the
 * seed and the iteration index; each draw advances it by the golden-ratio increment and mixes
 * it with the SplitMix64 finalizer. Everything is ordinary QIR (xor, shifts, multiplies), so
 * every backend gets the same numbers for the same seed and index.
 */
#include "lower.h"

#include <math.h>
#include <string.h>

#define GOLDEN_GAMMA 0x9E3779B97F4A7C15ULL

static uint32_t
u64_const(Lowerer *lw, uint64_t v)
{
    return lw_const_int(lw, qd_type_scalar(QD_TY_U64), (int64_t)v);
}

/* SplitMix64 finalizer of x (a u64 value). */
static uint32_t
mix64(Lowerer *lw, uint32_t x)
{
    const QdType *u64 = qd_type_scalar(QD_TY_U64);
    static const struct {
        uint64_t shift;
        uint64_t mul;
    } rounds[] = {{30, 0xBF58476D1CE4E5B9ULL}, {27, 0x94D049BB133111EBULL}, {31, 0}};
    for (size_t i = 0; i < QD_ARRAY_LEN(rounds); i++) {
        uint32_t sh = lw_emit_value(lw, QD_OP_LSHR, u64, x, u64_const(lw, rounds[i].shift));
        x = lw_emit_value(lw, QD_OP_XOR, u64, x, sh);
        if (rounds[i].mul) {
            x = lw_emit_value(lw, QD_OP_MUL, u64, x, u64_const(lw, rounds[i].mul));
        }
    }
    return x;
}

/* Emits the state's initialization into a detached region and moves it before `before` in
 * `into` (the start of the iteration or task). */
static int
init_state(Lowerer *lw, uint32_t slot, uint32_t seed, QdRegion *into, QdInst *before)
{
    const QdType *u64 = qd_type_scalar(QD_TY_U64);
    QdRegion *tmp = qd_region_new(lw->f, NULL);
    if (!tmp) {
        return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
    }
    QdRegion *saved = lw->cur;
    lw->cur = tmp;
    uint32_t index = u64_const(lw, 0);
    if (lw->pfor) {
        index = lw_emit_value(lw, QD_OP_CAST, u64, lw->pfor->result, 0);
    }
    /* state = mix(seed + (index + 1) * gamma): distinct streams per iteration. */
    uint32_t one = u64_const(lw, 1);
    uint32_t k = lw_emit_value(lw, QD_OP_ADD, u64, index, one);
    uint32_t off = lw_emit_value(lw, QD_OP_MUL, u64, k, u64_const(lw, GOLDEN_GAMMA));
    uint32_t s = lw_emit_value(lw, QD_OP_ADD, u64, seed, off);
    s = mix64(lw, s);
    QdInst *st = lw_emit(lw, QD_OP_STORE, 2);
    lw->cur = saved;
    if (!st || s == QD_NO_VALUE) {
        return -1;
    }
    st->args[0] = slot;
    st->args[1] = s;
    while (tmp->first) {
        QdInst *inst = tmp->first;
        qd_inst_remove(inst);
        qd_region_insert_before(into, before, inst);
    }
    return 0;
}

static int
ensure_state(Lowerer *lw)
{
    if (lw->rng_task && lw->rng_task == lw->task) {
        return 0;
    }
    const QdType *u64 = qd_type_scalar(QD_TY_U64);
    if (lw->info->rng_param < 0) {
        lw->info->rng_param = (int32_t)lw->f->nparams;
        if (qd_func_add_param(lw->f, u64, "qd_rng_seed") == QD_NO_VALUE) {
            return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
        }
    }
    uint32_t seed = lw->f->params[lw->info->rng_param];
    RETURN_IF_ERROR(lw_ensure_region(lw));
    /* The slot is thread-private even at the top level: force an alloca. */
    bool saved_top = lw->at_top;
    lw->at_top = false;
    Expr slot;
    int rc = lw_new_slot(lw, u64, &slot);
    lw->at_top = saved_top;
    RETURN_IF_ERROR(rc);
    QdInst *alloca_inst = lw->f->values[slot.id].def;
    if (lw->pfor) {
        RETURN_IF_ERROR(init_state(lw, slot.id, seed, lw->pfor->regions[0], lw->pfor->regions[0]->first));
    } else {
        RETURN_IF_ERROR(init_state(lw, slot.id, seed, alloca_inst->parent, alloca_inst->next));
    }
    lw->rng_task = lw->task;
    lw->rng_slot = slot.id;
    return 0;
}

/* 64 random bits (a u64 value) from the per-iteration state of the current task. */
static int
random_bits(Lowerer *lw, const QdAst *node, uint32_t *bits)
{
    (void)node;
    const QdType *u64 = qd_type_scalar(QD_TY_U64);
    RETURN_IF_ERROR(ensure_state(lw));
    uint32_t s = lw_emit_value(lw, QD_OP_LOAD, u64, lw->rng_slot, 0);
    uint32_t next = lw_emit_value(lw, QD_OP_ADD, u64, s, u64_const(lw, GOLDEN_GAMMA));
    QdInst *st = lw_emit(lw, QD_OP_STORE, 2);
    if (!st || next == QD_NO_VALUE) {
        return -1;
    }
    st->args[0] = lw->rng_slot;
    st->args[1] = next;
    *bits = mix64(lw, next);
    return *bits == QD_NO_VALUE ? -1 : 0;
}

/***** the builtins qd.random / qd.randn *****/

/* A random value of type ty from 64 random bits: floats uniform in [0, 1) (every value a
 * multiple of 2^-mantissa bits), integers over their type's whole range. */
static int
random_value(Lowerer *lw, const QdAst *node, const QdType *ty, Expr *out)
{
    const QdType *u64 = qd_type_scalar(QD_TY_U64);
    uint32_t bits;
    RETURN_IF_ERROR(random_bits(lw, node, &bits));
    if (!qd_type_is_float(ty)) {
        uint32_t id = bits;
        if (ty->kind == QD_TY_U1) {
            id = lw_emit_value(lw, QD_OP_LSHR, u64, bits, lw_const_int(lw, u64, 63));
        }
        id = lw_emit_value(lw, QD_OP_CAST, ty, id, 0);
        *out = lw_value(id, ty);
        return id == QD_NO_VALUE ? -1 : 0;
    }
    /* Mantissa-sized integers scaled by a power of two are exact in the target type. */
    int keep = ty->kind == QD_TY_F64 ? 53 : ty->kind == QD_TY_F32 ? 24 : ty->kind == QD_TY_F16 ? 11 : 8;
    const QdType *wide = ty->kind == QD_TY_F64 ? ty : qd_type_scalar(QD_TY_F32);
    uint32_t top = lw_emit_value(lw, QD_OP_LSHR, u64, bits, lw_const_int(lw, u64, 64 - keep));
    uint32_t f = lw_emit_value(lw, QD_OP_CAST, wide, top, 0);
    uint32_t scale = lw_const_float(lw, wide, ldexp(1.0, -keep));
    uint32_t id = lw_emit_value(lw, QD_OP_MUL, wide, f, scale);
    if (wide != ty) {
        id = lw_emit_value(lw, QD_OP_CAST, ty, id, 0);
    }
    *out = lw_value(id, ty);
    return id == QD_NO_VALUE ? -1 : 0;
}

static const QdType *
random_dtype(const CallArgs *c, const char *kw, const QdType *dflt)
{
    const Expr *d = c->npos ? &c->pos[0] : lw_call_keyword(c, kw);
    if (!d || d->kind == EX_NONE) {
        return dflt;
    }
    return lw_dtype_arg(d);
}

int
lw_builtin_random(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    RETURN_IF_ERROR(lw_expect_args(lw, c, "random", 0, 1));
    const QdType *ty = random_dtype(c, "dtype", qd_type_scalar(lw->opt->default_fp));
    if (!ty) {
        return lw_error(lw, c->node, QD_ERR_TYPE, "qd.random() takes a scalar type");
    }
    return random_value(lw, c->node, ty, out);
}

/* Standard normal numbers by the Box-Muller transform. */
int
lw_builtin_randn(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    RETURN_IF_ERROR(lw_expect_args(lw, c, "randn", 0, 1));
    const QdType *ty = random_dtype(c, "dt", qd_type_scalar(lw->opt->default_fp));
    if (!ty || !qd_type_is_float(ty)) {
        return lw_error(lw, c->node, QD_ERR_TYPE, "qd.randn() takes a floating-point type");
    }
    Expr u1, u2;
    RETURN_IF_ERROR(random_value(lw, c->node, ty, &u1));
    RETURN_IF_ERROR(random_value(lw, c->node, ty, &u2));
    /* 1 - u1 lies in (0, 1]: the logarithm stays finite. */
    uint32_t one = lw_const_float(lw, ty, 1.0);
    uint32_t v1 = lw_emit_value(lw, QD_OP_SUB, ty, one, u1.id);
    uint32_t lg = lw_emit_value(lw, QD_OP_LOG, ty, v1, 0);
    uint32_t m2 = lw_emit_value(lw, QD_OP_MUL, ty, lg, lw_const_float(lw, ty, -2.0));
    uint32_t r = lw_emit_value(lw, QD_OP_SQRT, ty, m2, 0);
    uint32_t ang = lw_emit_value(lw, QD_OP_MUL, ty, u2.id, lw_const_float(lw, ty, 6.283185307179586));
    uint32_t cs = lw_emit_value(lw, QD_OP_COS, ty, ang, 0);
    uint32_t id = lw_emit_value(lw, QD_OP_MUL, ty, r, cs);
    *out = lw_value(id, ty);
    return id == QD_NO_VALUE ? -1 : 0;
}
