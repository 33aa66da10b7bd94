/* passes/demote_atomics.c -- atomics that no other thread can race with become plain updates.
 *
 * The frontend turns every `x[i] += v` on global data into an atomic read-modify-write, as the
 * reference does. Many of them cannot race: everything in a serial task runs on one thread, and
 * in a parallel loop an element addressed by the loop index itself (`x[i]` with i the
 * parallel_for variable) belongs to one iteration only. Such an atomic becomes
 * `load; op; store`, which LLVM can vectorize and keep in registers. Kernel temporaries
 * (tmp_alloc) are shared by every thread of a parallel loop and stay atomic there.
 *
 * Runs after inline and constfold (so pointers are plain field_ptr / elem_ptr instructions).
 */
#include "util.h"

/* Whether the pointer operand addresses an element that only iteration `ivar` touches:
 * a 1-d field or ndarray element indexed by the parallel loop variable itself. */
static bool
owned_by_iteration(const QdFunc *f, uint32_t ptr, uint32_t ivar)
{
    const QdInst *def = f->values[ptr].def;
    if (!def || ivar == QD_NO_VALUE) {
        return false;
    }
    if (def->op == QD_OP_FIELD_PTR) {
        return def->nargs == 1 && def->args[0] == ivar;
    }
    if (def->op == QD_OP_ELEM_PTR) {
        return def->nargs == 2 && def->args[1] == ivar;
    }
    return false;
}

/* Replaces `%old = atomic_op %p, %v` with `%old = load %p; %new = op %old, %v; store %p, %new`.
 * The result id stays the same, so uses need no rewriting. */
static int
demote(QdPassCtx *pc, QdFunc *f, QdInst *inst)
{
    QdOp op = qd_op_atomic_plain(inst->op);
    uint32_t ptr = inst->args[0], v = inst->args[1];
    const QdType *ty = inst->type;
    QdInst *bin = qd_inst_new(f, op, 2);
    QdInst *st = qd_inst_new(f, QD_OP_STORE, 2);
    if (!bin || !st || qd_inst_set_result(f, bin, ty, NULL) == QD_NO_VALUE) {
        return qd_util_nomem(pc, f->module);
    }
    inst->op = QD_OP_LOAD;
    inst->nargs = 1;
    bin->args[0] = inst->result;
    bin->args[1] = v;
    st->args[0] = ptr;
    st->args[1] = bin->result;
    bin->loc = st->loc = inst->loc;
    QdInst *after = inst->next;
    qd_region_insert_before(inst->parent, after, bin);
    qd_region_insert_before(inst->parent, after, st);
    return 0;
}

typedef struct Walk {
    QdPassCtx *pc;  /* errors */
    QdFunc *f;      /* the kernel */
    /* In the parallel loop being walked, memory also written at elements another iteration
     * may own: demoting there would race with that write. */
    QdVec(const QdField *) shared_fields; /* fields written through non-owned pointers */
    bool shared_ndarrays;                 /* some ndarray written through a non-owned pointer
                                             (ndarray arguments may alias: one flag for all) */
} Walk;

/* Records the memory a write outside the iteration's own elements touches. */
static int
note_shared_write(Walk *w, uint32_t ptr, uint32_t ivar)
{
    const QdInst *def = w->f->values[ptr].def;
    if (!def || owned_by_iteration(w->f, ptr, ivar)) {
        return 0;
    }
    if (def->op == QD_OP_FIELD_PTR) {
        return qd_vec_push(&w->pc->scratch, &w->shared_fields, def->imm.field);
    }
    if (def->op == QD_OP_ELEM_PTR) {
        w->shared_ndarrays = true;
    }
    return 0;
}

static int
collect_shared_writes(Walk *w, QdRegion *r, uint32_t ivar)
{
    for (QdInst *inst = r->first; inst; inst = inst->next) {
        if (qd_op_has(inst->op, QD_WRITES) && inst->nargs >= 1 &&
            (inst->op == QD_OP_STORE || qd_op_info[inst->op].sig == SIG_ATOMIC ||
             qd_op_info[inst->op].sig == SIG_ATOMIC_INT || inst->op == QD_OP_ATOMIC_CAS)) {
            RETURN_IF_ERROR(note_shared_write(w, inst->args[0], ivar));
        }
        for (int k = 0; k < 2; k++) {
            if (inst->regions[k]) {
                RETURN_IF_ERROR(collect_shared_writes(w, inst->regions[k], ivar));
            }
        }
    }
    return 0;
}

/* Whether an owned element's memory is also written elsewhere in the loop. */
static bool
is_shared(const Walk *w, uint32_t ptr)
{
    const QdInst *def = w->f->values[ptr].def;
    if (def->op == QD_OP_ELEM_PTR) {
        return w->shared_ndarrays;
    }
    for (uint32_t i = 0; i < w->shared_fields.len; i++) {
        if (w->shared_fields.data[i] == def->imm.field) {
            return true;
        }
    }
    return false;
}

/* serial: inside a serial task; ivar: the enclosing parallel_for's variable (or none). */
static int
walk_region(Walk *w, QdRegion *r, bool serial, uint32_t ivar)
{
    for (QdInst *inst = r->first; inst; inst = inst->next) {
        if (qd_op_has(inst->op, QD_READS | QD_WRITES) &&
            qd_op_atomic_plain(inst->op) != QD_OP_COUNT_ && inst->nargs == 2) {
            if (serial || (owned_by_iteration(w->f, inst->args[0], ivar) &&
                           !is_shared(w, inst->args[0]))) {
                RETURN_IF_ERROR(demote(w->pc, w->f, inst));
                continue;
            }
        }
        bool inner_serial = serial;
        uint32_t inner_ivar = ivar;
        if (inst->op == QD_OP_TASK) {
            inner_serial = inst->imm.task.kind == QD_TASK_SERIAL;
            inner_ivar = QD_NO_VALUE;
        } else if (inst->op == QD_OP_PARALLEL_FOR) {
            inner_ivar = inst->result;
            w->shared_fields.len = 0;
            w->shared_ndarrays = false;
            RETURN_IF_ERROR(collect_shared_writes(w, inst->regions[0], inner_ivar));
        }
        for (int k = 0; k < 2; k++) {
            if (inst->regions[k]) {
                RETURN_IF_ERROR(walk_region(w, inst->regions[k], inner_serial, inner_ivar));
            }
        }
    }
    return 0;
}

int
qd_pass_demote_atomics(QdPassCtx *pc, QdFunc *f)
{
    if (f->kind != QD_FUNC_KERNEL) {
        return 0; /* funcs are inlined into kernels first; their context is unknown here */
    }
    QdArenaMark mark = qd_arena_mark(&pc->scratch);
    Walk w = {pc, f, {0}, false};
    int rc = walk_region(&w, f->body, false, QD_NO_VALUE);
    qd_arena_reset(&pc->scratch, mark);
    return rc;
}
