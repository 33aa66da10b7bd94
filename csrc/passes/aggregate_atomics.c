/* passes/aggregate_atomics.c -- atomics that reduce into one address become per-thread partials.
 *
 * The common way to reduce is an atomic on one address from every iteration of a parallel loop
 * (`for i in x: s[None] += x[i]`, `qd.atomic_max(m[0], v)`, `acc += x[i]` on a kernel-scope
 * variable). Each of them is a read-modify-write of the same cache line by every thread. This
 * pass gives such a target a thread-private accumulator, `%acc = partial_add %p` in the task's
 * prologue, and turns each atomic into `load %acc; add; store %acc`; the code generator combines
 * the accumulator into *%p once per chunk of iterations (CPU) or per warp (GPU) (ops.def).
 *
 * An atomic qualifies when
 *   - it is atomic_add (integers and floats), atomic_min, atomic_max, or atomic_and / _or / _xor
 *     on an integer, of any integer type but u1, or of f32 / f64;
 *   - its result (the old value) is unused;
 *   - its address is the same in every iteration: a field element or an ndarray element whose
 *     indices are computed from values defined outside the parallel_for (constants and pure
 *     arithmetic on them included), or a kernel temporary (tmp_alloc);
 *   - it is anywhere in the parallel_for's body (inside `if`s and serial loops too: the
 *     accumulator is updated exactly when the atomic would have run);
 *   - everything else the loop does to the same memory is such an atomic with the same
 *     operation and type: no load, store or other atomic on the same field, the same ndarray
 *     argument or the same temporary. Distinct ndarray arguments may alias; a loop that reads
 *     one while it reduces into another races in the original program too, so that is allowed.
 * Loops using SIMT operations (barriers, shuffles, shared memory) are left alone, as is any loop
 * with a call (funcs are inlined before).
 *
 * Integers stay exact (wrapping addition, min, max and the bitwise operations are associative
 * and commutative); float sums change only by the grouping of their terms (docs/reductions.md).
 *
 * Runs after demote_atomics (atomics of serial tasks and on elements owned by one iteration are
 * plain updates by then) and before dce (which removes the address computations left unused).
 */
#include "util.h"

#include <string.h>

/* Which memory a pointer reaches. */
typedef enum BaseKind {
    BASE_PRIVATE, /* alloca / shared_alloc: never shared with other blocks' iterations */
    BASE_FIELD,   /* a field: id is the QdField */
    BASE_NDARRAY, /* an ndarray argument: id is its value id */
    BASE_TMP,     /* a kernel temporary: id is its value id */
    BASE_UNKNOWN, /* anything else: may be any global memory */
} BaseKind;

typedef struct Base {
    BaseKind kind;
    uintptr_t id;
} Base;

/* One base the loop touches and what it does with it. */
typedef struct BaseUse {
    Base base;
    QdOp op;            /* the atomic of the qualifying accesses */
    const QdType *type; /* their type */
    bool spoiled;       /* another kind of access, or another operation / type */
} BaseUse;

/* The qualifying atomics on one address. */
typedef struct Target {
    Base base;
    const QdInst *addr;           /* the address computation of the first of them */
    QdVec(QdInst *) atomics;      /* in program order */
} Target;

/* State of the pass on one function. */
typedef struct Agg {
    QdPassCtx *pc;
    QdFunc *f;
    uint32_t nvalues;      /* values before the pass; newer ones are its own */
    uint32_t *uses;        /* value id -> number of operands naming it */
    uint32_t *inside;      /* value id -> stamp of the parallel_for whose body defines it */
    uint32_t *copy;        /* value id -> its copy in the prologue (when copy_stamp matches) */
    uint32_t *copy_stamp;
    uint32_t stamp;        /* the parallel_for being worked on (1, 2, ...) */
    QdInst *pfor;          /* ... and the instruction */
    bool spoiled_all;      /* the loop may touch any memory (a call, an unknown pointer) */
    QdVec(BaseUse) bases;
    QdVec(Target) targets;
} Agg;

/* Deepest chain of pure instructions copied to compute one address in the prologue. */
#define MAX_HOIST_DEPTH 8

static void
count_uses(Agg *a, const QdRegion *r)
{
    for (const QdInst *inst = r->first; inst; inst = inst->next) {
        for (uint32_t k = 0; k < inst->nargs; k++) {
            if (inst->args[k] < a->nvalues) {
                a->uses[inst->args[k]]++;
            }
        }
        for (int k = 0; k < qd_op_info[inst->op].nregions; k++) {
            count_uses(a, inst->regions[k]);
        }
    }
}

/* Stamps the values defined in r; false when r uses SIMT operations. */
static bool
mark_inside(Agg *a, const QdRegion *r)
{
    for (const QdInst *inst = r->first; inst; inst = inst->next) {
        if (qd_op_has(inst->op, QD_SIMT) || qd_op_has(inst->op, QD_CONVERGENT)) {
            return false;
        }
        if (inst->result != QD_NO_VALUE && inst->result < a->nvalues) {
            a->inside[inst->result] = a->stamp;
        }
        for (int k = 0; k < qd_op_info[inst->op].nregions; k++) {
            if (!mark_inside(a, inst->regions[k])) {
                return false;
            }
        }
    }
    return true;
}

/* Whether value v is the same in every iteration of the loop: defined outside its body, or
 * computed there by pure instructions from such values. */
static bool
is_invariant(const Agg *a, uint32_t v, int depth)
{
    if (v >= a->nvalues) {
        return false;
    }
    if (a->inside[v] != a->stamp) {
        return true;
    }
    const QdInst *def = a->f->values[v].def;
    if (!def || depth >= MAX_HOIST_DEPTH || !qd_op_has(def->op, QD_PURE) ||
        qd_op_has(def->op, QD_SIMT) || qd_op_info[def->op].nregions != 0) {
        return false;
    }
    QdImmKind imm = qd_op_info[def->op].imm;
    if (imm != IMM_NONE && imm != IMM_CONST && imm != IMM_INT && imm != IMM_FIELD) {
        return false;
    }
    for (uint32_t k = 0; k < def->nargs; k++) {
        if (!is_invariant(a, def->args[k], depth + 1)) {
            return false;
        }
    }
    return true;
}

/* The memory pointer value p reaches. */
static Base
base_of(const QdFunc *f, uint32_t p)
{
    Base b = {BASE_UNKNOWN, 0};
    const QdInst *def = p < f->nvalues ? f->values[p].def : NULL;
    while (def && (def->op == QD_OP_ARRAY_PTR ||
                   (def->op == QD_OP_BITCAST && def->type->kind == QD_TY_PTR))) {
        def = f->values[def->args[0]].def;
    }
    if (!def) {
        return b;
    }
    switch (def->op) {
    case QD_OP_ALLOCA:
    case QD_OP_SHARED_ALLOC:
        b.kind = BASE_PRIVATE;
        break;
    case QD_OP_FIELD_PTR:
        b.kind = BASE_FIELD;
        b.id = (uintptr_t)def->imm.field;
        break;
    case QD_OP_ELEM_PTR:
        b.kind = BASE_NDARRAY;
        b.id = def->args[0];
        break;
    case QD_OP_TMP_ALLOC:
        b.kind = BASE_TMP;
        b.id = def->result;
        break;
    default:
        break;
    }
    return b;
}

/* Whether two values are equal in every iteration: the same value, or equal constants. */
static bool
same_value(const QdFunc *f, uint32_t x, uint32_t y)
{
    if (x == y) {
        return true;
    }
    const QdInst *dx = f->values[x].def, *dy = f->values[y].def;
    return dx && dy && dx->op == QD_OP_CONST && dy->op == QD_OP_CONST && dx->type == dy->type &&
           !dx->imm.cst.expr && !dy->imm.cst.expr && dx->imm.cst.u == dy->imm.cst.u;
}

/* Whether two address computations give the same address. */
static bool
same_address(const QdFunc *f, const QdInst *x, const QdInst *y)
{
    if (x == y) {
        return true;
    }
    if (x->op != y->op || x->nargs != y->nargs || x->op == QD_OP_TMP_ALLOC ||
        (x->op == QD_OP_FIELD_PTR && x->imm.field != y->imm.field)) {
        return false;
    }
    for (uint32_t k = 0; k < x->nargs; k++) {
        if (!same_value(f, x->args[k], y->args[k])) {
            return false;
        }
    }
    return true;
}

static BaseUse *
find_base(Agg *a, Base b)
{
    for (uint32_t i = 0; i < a->bases.len; i++) {
        if (a->bases.data[i].base.kind == b.kind && a->bases.data[i].base.id == b.id) {
            return &a->bases.data[i];
        }
    }
    return NULL;
}

/* Records an access to base b: a qualifying atomic `op` of `type`, or (op QD_OP_COUNT_) any
 * other access, which spoils the base. */
static int
note_base(Agg *a, Base b, QdOp op, const QdType *type)
{
    BaseUse *use = find_base(a, b);
    if (!use) {
        BaseUse fresh = {b, op, type, op == QD_OP_COUNT_};
        return qd_vec_push(&a->pc->scratch, &a->bases, fresh);
    }
    if (op == QD_OP_COUNT_ || use->op != op || use->type != type) {
        use->spoiled = true;
    }
    return 0;
}

/* Whether an atomic of type ty may be aggregated. */
static bool
type_qualifies(const QdType *ty)
{
    return (qd_type_is_int(ty) && ty->kind != QD_TY_U1) || ty->kind == QD_TY_F32 ||
           ty->kind == QD_TY_F64;
}

/* Whether inst is an atomic this pass can aggregate (its base aside). */
static bool
qualifies(const Agg *a, const QdInst *inst)
{
    const QdInst *addr = inst->args[0] < a->nvalues ? a->f->values[inst->args[0]].def : NULL;
    return qd_op_atomic_partial(inst->op) != QD_OP_COUNT_ && type_qualifies(inst->type) &&
           inst->result < a->nvalues && a->uses[inst->result] == 0 && addr &&
           (addr->op == QD_OP_FIELD_PTR || addr->op == QD_OP_ELEM_PTR ||
            addr->op == QD_OP_TMP_ALLOC) &&
           is_invariant(a, inst->args[0], 0);
}

/* Adds a qualifying atomic to the target of its address. */
static int
add_to_target(Agg *a, QdInst *inst, Base b)
{
    const QdInst *addr = a->f->values[inst->args[0]].def;
    for (uint32_t i = 0; i < a->targets.len; i++) {
        Target *t = &a->targets.data[i];
        if (t->base.kind == b.kind && t->base.id == b.id && same_address(a->f, t->addr, addr)) {
            return qd_vec_push(&a->pc->scratch, &t->atomics, inst);
        }
    }
    Target t = {b, addr, {0}};
    RETURN_IF_ERROR(qd_vec_push(&a->pc->scratch, &t.atomics, inst));
    return qd_vec_push(&a->pc->scratch, &a->targets, t);
}

/* Sorts every memory access of the loop body into targets and bases. */
static int
collect(Agg *a, QdRegion *r)
{
    for (QdInst *inst = r->first; inst; inst = inst->next) {
        QdOp op = inst->op;
        QdSig sig = qd_op_info[op].sig;
        if (op == QD_OP_CALL) {
            a->spoiled_all = true;
        }
        if (op == QD_OP_LOAD || op == QD_OP_STORE || sig == SIG_ATOMIC || sig == SIG_ATOMIC_INT ||
            sig == SIG_CAS) {
            Base b = base_of(a->f, inst->args[0]);
            if (b.kind == BASE_UNKNOWN) {
                a->spoiled_all = true;
            } else if (b.kind != BASE_PRIVATE) {
                bool ok = qualifies(a, inst);
                RETURN_IF_ERROR(note_base(a, b, ok ? op : QD_OP_COUNT_, inst->type));
                if (ok) {
                    RETURN_IF_ERROR(add_to_target(a, inst, b));
                }
            }
        }
        for (int k = 0; k < qd_op_info[op].nregions; k++) {
            RETURN_IF_ERROR(collect(a, inst->regions[k]));
        }
    }
    return 0;
}

/* The value of v in the prologue: v itself when defined outside the loop, else a copy of its
 * computation placed before the parallel_for (is_invariant said it is pure). */
static uint32_t
hoist(Agg *a, uint32_t v)
{
    if (a->inside[v] != a->stamp) {
        return v;
    }
    if (a->copy_stamp[v] == a->stamp) {
        return a->copy[v];
    }
    const QdInst *def = a->f->values[v].def;
    QdInst *c = qd_inst_new(a->f, def->op, def->nargs);
    if (!c) {
        return QD_NO_VALUE;
    }
    for (uint32_t k = 0; k < def->nargs; k++) {
        if ((c->args[k] = hoist(a, def->args[k])) == QD_NO_VALUE) {
            return QD_NO_VALUE;
        }
    }
    if (qd_inst_set_result(a->f, c, def->type, NULL) == QD_NO_VALUE) {
        return QD_NO_VALUE;
    }
    c->imm = def->imm;
    c->loc = def->loc;
    qd_region_insert_before(a->pfor->parent, a->pfor, c);
    a->copy[v] = c->result;
    a->copy_stamp[v] = a->stamp;
    return c->result;
}

/* A new instruction before `at` with a result of type ty (void: none). */
static QdInst *
emit_before(Agg *a, QdInst *at, QdOp op, uint32_t nargs, const QdType *ty)
{
    QdInst *inst = qd_inst_new(a->f, op, nargs);
    if (!inst || (ty->kind != QD_TY_VOID && qd_inst_set_result(a->f, inst, ty, NULL) ==
                                                 QD_NO_VALUE)) {
        return NULL;
    }
    inst->loc = at->loc;
    qd_region_insert_before(at->parent, at, inst);
    return inst;
}

/* Gives target t its accumulator and turns its atomics into updates of it. */
static int
aggregate(Agg *a, Target *t)
{
    QdInst *first = t->atomics.data[0];
    const QdType *ty = first->type;
    const QdType *slot_type = qd_type_ptr(a->f->module, ty, QD_SPACE_LOCAL);
    uint32_t p = hoist(a, first->args[0]);
    QdInst *acc = slot_type && p != QD_NO_VALUE
                      ? emit_before(a, a->pfor, qd_op_atomic_partial(first->op), 1, slot_type)
                      : NULL;
    if (!acc) {
        return qd_util_nomem(a->pc, a->f->module);
    }
    acc->args[0] = p;
    acc->loc = first->loc;
    for (uint32_t i = 0; i < t->atomics.len; i++) {
        QdInst *atomic = t->atomics.data[i];
        QdInst *ld = emit_before(a, atomic, QD_OP_LOAD, 1, ty);
        QdInst *op = ld ? emit_before(a, atomic, qd_op_atomic_plain(atomic->op), 2, ty) : NULL;
        QdInst *st = op ? emit_before(a, atomic, QD_OP_STORE, 2, qd_type_void()) : NULL;
        if (!st) {
            return qd_util_nomem(a->pc, a->f->module);
        }
        ld->args[0] = acc->result;
        op->args[0] = ld->result;
        op->args[1] = atomic->args[1];
        st->args[0] = acc->result;
        st->args[1] = op->result;
        qd_inst_remove(atomic);
    }
    return 0;
}

static int
do_loop(Agg *a, QdInst *pfor)
{
    a->stamp++;
    a->pfor = pfor;
    a->spoiled_all = false;
    a->bases.len = 0;
    a->targets.len = 0;
    if (pfor->result < a->nvalues) {
        a->inside[pfor->result] = a->stamp; /* the loop variable */
    }
    if (!mark_inside(a, pfor->regions[0])) {
        return 0;
    }
    RETURN_IF_ERROR(collect(a, pfor->regions[0]));
    if (a->spoiled_all) {
        return 0;
    }
    for (uint32_t i = 0; i < a->targets.len; i++) {
        Target *t = &a->targets.data[i];
        if (!find_base(a, t->base)->spoiled) {
            RETURN_IF_ERROR(aggregate(a, t));
        }
    }
    return 0;
}

int
qd_pass_aggregate_atomics(QdPassCtx *pc, QdFunc *f)
{
    if (f->kind != QD_FUNC_KERNEL) {
        return 0;
    }
    QdArenaMark mark = qd_arena_mark(&pc->scratch);
    uint32_t n = f->nvalues ? f->nvalues : 1;
    Agg a = {pc, f, f->nvalues, QD_NEW_ARRAY(&pc->scratch, uint32_t, n),
             QD_NEW_ARRAY(&pc->scratch, uint32_t, n), QD_NEW_ARRAY(&pc->scratch, uint32_t, n),
             QD_NEW_ARRAY(&pc->scratch, uint32_t, n), 0, NULL, false, {0}, {0}};
    int rc = 0;
    if (!a.uses || !a.inside || !a.copy || !a.copy_stamp) {
        rc = qd_util_nomem(pc, f->module);
    } else {
        count_uses(&a, f->body);
    }
    for (QdInst *task = f->body->first; task && rc == 0; task = task->next) {
        if (task->op == QD_OP_TASK && task->imm.task.kind == QD_TASK_RANGE_FOR &&
            task->regions[0]->last && task->regions[0]->last->op == QD_OP_PARALLEL_FOR) {
            rc = do_loop(&a, task->regions[0]->last);
        }
    }
    qd_arena_reset(&pc->scratch, mark);
    return rc;
}
