/* passes/localize_tmps.c -- kernel temporaries used by one serial task become its locals.
 *
 * The frontend gives every variable declared at a kernel's top level a `tmp_alloc` slot in
 * global memory, because any later task may read it (spec: kernel-scope locals are shared by
 * the tasks). Most of them are used by one serial task only; there a thread-private `alloca`
 * means the same thing and lets LLVM keep the value in a register. Temporaries used by a
 * range_for task stay global: its iterations share them.
 *
 * Runs after demote_atomics, which has already turned the atomics of serial tasks into plain
 * updates, so a localized slot is only loaded and stored.
 */
#include "util.h"

/* Marks, for every value id, the task that uses it (NULL: none yet; `many`: several). */
typedef struct Uses {
    QdInst **task_of; /* per value id */
    QdInst *many;     /* sentinel for "more than one task" */
} Uses;

static void
note_uses(Uses *u, QdRegion *r, QdInst *task)
{
    for (QdInst *inst = r->first; inst; inst = inst->next) {
        for (uint32_t k = 0; k < inst->nargs; k++) {
            QdInst **slot = &u->task_of[inst->args[k]];
            if (*slot == NULL) {
                *slot = task;
            } else if (*slot != task) {
                *slot = u->many;
            }
        }
        for (int k = 0; k < 2; k++) {
            if (inst->regions[k]) {
                note_uses(u, inst->regions[k], task);
            }
        }
    }
}

int
qd_pass_localize_tmps(QdPassCtx *pc, QdFunc *f)
{
    if (f->kind != QD_FUNC_KERNEL) {
        return 0;
    }
    QdArenaMark mark = qd_arena_mark(&pc->scratch);
    QdInst sentinel;
    Uses u = {QD_NEW_ARRAY(&pc->scratch, QdInst *, f->nvalues ? f->nvalues : 1), &sentinel};
    if (!u.task_of) {
        return qd_util_nomem(pc, f->module);
    }
    for (QdInst *inst = f->body->first; inst; inst = inst->next) {
        if (inst->op == QD_OP_TASK) {
            note_uses(&u, inst->regions[0], inst);
        }
    }
    int rc = 0;
    for (QdInst *inst = f->body->first, *next; inst && rc == 0; inst = next) {
        next = inst->next;
        if (inst->op != QD_OP_TMP_ALLOC) {
            continue;
        }
        QdInst *task = u.task_of[inst->result];
        if (!task || task == u.many || task->imm.task.kind != QD_TASK_SERIAL) {
            continue;
        }
        const QdType *local = qd_type_ptr(f->module, inst->type->elem, QD_SPACE_LOCAL);
        if (!local) {
            rc = qd_util_nomem(pc, f->module);
            break;
        }
        qd_inst_remove(inst);
        inst->op = QD_OP_ALLOCA;
        inst->type = local;
        f->values[inst->result].type = local;
        QdRegion *body = task->regions[0];
        qd_region_insert_before(body, body->first, inst);
    }
    qd_arena_reset(&pc->scratch, mark);
    return rc;
}
