/* passes/merge_serial.c -- consecutive serial tasks of a kernel become one.
 *
 * Two serial tasks in a row run one after the other on one thread, as one task holding both
 * bodies would, which costs one launch instead of two on a GPU. They appear where a top_level
 * function (a device-wide algorithm) starts with serial work right after the kernel's own
 * serial code, such as the count it was given. Kernel-level declarations between the two
 * (tmp_alloc, field_array) move before the first, so that they stay defined before their uses.
 * The merged task keeps the first one's name and location.
 */
#include "util.h"

/* Whether inst is a kernel-level declaration that may move up past a task. */
static bool
is_declaration(const QdInst *inst)
{
    return inst->op == QD_OP_TMP_ALLOC || inst->op == QD_OP_FIELD_ARRAY;
}

static bool
is_serial_task(const QdInst *inst)
{
    return inst && inst->op == QD_OP_TASK && inst->imm.task.kind == QD_TASK_SERIAL;
}

int
qd_pass_merge_serial(QdPassCtx *pc, QdFunc *f)
{
    (void)pc;
    if (f->kind != QD_FUNC_KERNEL) {
        return 0;
    }
    for (QdInst *task = f->body->first; task; task = task->next) {
        if (!is_serial_task(task)) {
            continue;
        }
        for (;;) {
            QdInst *next = task->next;
            while (next && is_declaration(next)) {
                next = next->next;
            }
            if (!is_serial_task(next)) {
                break;
            }
            while (task->next != next) {
                QdInst *decl = task->next;
                qd_inst_remove(decl);
                qd_region_insert_before(f->body, task, decl);
            }
            QdRegion *into = task->regions[0];
            QdRegion *from = next->regions[0];
            while (from->first) {
                QdInst *inst = from->first;
                qd_inst_remove(inst);
                qd_region_append(into, inst);
            }
            qd_inst_remove(next);
        }
    }
    return 0;
}
