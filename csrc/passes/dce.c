/* passes/dce.c -- the `dce` pass: remove instructions whose work nobody uses.
 *
 * Runs on each kernel and func, typically after constfold. An instruction is dead when it defines
 * a value with no uses and running it has no effect anyone can see:
 *   - pure instructions (QD_PURE in ops.def: arithmetic, constants, address computations);
 *   - loads (reading memory has no effect; a trap on a bad address is undefined behaviour anyway);
 *   - allocations (alloca, shared_alloc, tmp_alloc) nobody refers to.
 * Control flow with nothing inside is dead too: an `if` whose two regions are empty, and a serial
 * `for` with an empty body (it has finite bounds). `loop {}` is kept: it never ends.
 *
 * Each round counts the uses of every value into a scratch array indexed by value id, then sweeps
 * the function backwards (last instruction first, nested regions before their owner), updating
 * the counts as it removes, so a whole chain of dead instructions goes in one round. Rounds repeat
 * until nothing changes.
 */
#include "util.h"

#include <string.h>

/* State of the pass on one function. */
typedef struct Sweeper {
    QdFunc *f;        /* function being cleaned */
    uint32_t *uses;   /* value id -> number of operands naming it */
    bool changed;     /* something was removed this round */
} Sweeper;

static void
count_uses(Sweeper *s, const QdRegion *r)
{
    for (const QdInst *inst = r->first; inst; inst = inst->next) {
        for (uint32_t i = 0; i < inst->nargs; i++) {
            if (inst->args[i] < s->f->nvalues) {
                s->uses[inst->args[i]]++;
            }
        }
        for (int i = 0; i < qd_op_info[inst->op].nregions; i++) {
            count_uses(s, inst->regions[i]);
        }
    }
}

static bool
is_dead(const Sweeper *s, const QdInst *inst)
{
    switch (inst->op) {
    case QD_OP_IF:
        return qd_region_is_empty(inst->regions[0]) && qd_region_is_empty(inst->regions[1]);
    case QD_OP_FOR:
        return qd_region_is_empty(inst->regions[0]);
    case QD_OP_LOAD:
    case QD_OP_ALLOCA:
    case QD_OP_SHARED_ALLOC:
    case QD_OP_TMP_ALLOC:
        break;
    default:
        if (!qd_op_has(inst->op, QD_PURE)) {
            return false;
        }
    }
    return inst->result != QD_NO_VALUE && inst->result < s->f->nvalues &&
           s->uses[inst->result] == 0;
}

/* Removes dead instructions of r, last first, so that operands freed by a removal are seen. */
static void
sweep_region(Sweeper *s, QdRegion *r)
{
    for (QdInst *inst = r->last, *prev; inst; inst = prev) {
        prev = inst->prev;
        for (int i = qd_op_info[inst->op].nregions - 1; i >= 0; i--) {
            sweep_region(s, inst->regions[i]);
        }
        if (!is_dead(s, inst)) {
            continue;
        }
        for (uint32_t i = 0; i < inst->nargs; i++) {
            if (inst->args[i] < s->f->nvalues) {
                s->uses[inst->args[i]]--;
            }
        }
        qd_inst_remove(inst);
        s->changed = true;
    }
}

int
qd_pass_dce(QdPassCtx *pc, QdFunc *f)
{
    QdArenaMark mark = qd_arena_mark(&pc->scratch);
    Sweeper s = {f, QD_NEW_ARRAY(&pc->scratch, uint32_t, f->nvalues ? f->nvalues : 1), true};
    while (s.uses && s.changed) {
        memset(s.uses, 0, sizeof(uint32_t) * (f->nvalues ? f->nvalues : 1));
        count_uses(&s, f->body);
        s.changed = false;
        sweep_region(&s, f->body);
    }
    int rc = qd_util_nomem(pc, f->module);
    qd_arena_reset(&pc->scratch, mark);
    return rc;
}
