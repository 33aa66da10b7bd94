/* passes/field_arrays.c -- fields handed to top_level functions as ndarrays become fields again.
 *
 * A top_level function (a device-wide algorithm of the template library) is written once over
 * ndarray parameters. A kernel that gives it a field passes `field_array @f : ndarray<T, n>`,
 * a value standing for the field. After `inline` the function's tasks sit in the kernel and
 * address the field through that value; this pass rewrites each use into the form a kernel
 * reading the field directly has:
 *   - `elem_ptr %fa, %i...`  ->  `field_ptr @f, %i...`
 *   - `shape %fa, k`         ->  `const <extent k of @f> : i32`
 * and removes the field_array. Any other use of it is an error (code generators have no
 * ndarray record for a field). Runs right after `inline`.
 */
#include "util.h"

#include <string.h>

/* Rewrites the uses in region r; fields[id] is the field behind value id, or NULL. */
static int
rewrite_uses(QdPassCtx *pc, QdRegion *r, QdField **fields, uint32_t nvalues)
{
    for (QdInst *inst = r->first; inst; inst = inst->next) {
        QdField *fd = inst->nargs > 0 && inst->args[0] < nvalues ? fields[inst->args[0]] : NULL;
        if (fd && inst->op == QD_OP_ELEM_PTR) {
            memmove(inst->args, inst->args + 1, sizeof(uint32_t) * (inst->nargs - 1));
            inst->nargs--;
            inst->op = QD_OP_FIELD_PTR;
            memset(&inst->imm, 0, sizeof(inst->imm));
            inst->imm.field = fd;
        } else if (fd && inst->op == QD_OP_SHAPE) {
            int64_t axis = inst->imm.i;
            if (axis < 0 || (uint32_t)axis >= fd->ndim || fd->shape[axis] > INT32_MAX) {
                return qd_error(pc->ctx, qd_util_inst_loc(inst), QD_ERR_COMPILATION,
                                "field @%s: axis %lld has no i32 extent", fd->name,
                                (long long)axis);
            }
            inst->op = QD_OP_CONST;
            inst->nargs = 0;
            memset(&inst->imm, 0, sizeof(inst->imm));
            inst->imm.cst.i = fd->shape[axis];
        }
        for (uint32_t k = 0; k < inst->nargs; k++) {
            if (inst->args[k] < nvalues && fields[inst->args[k]]) {
                return qd_error(pc->ctx, qd_util_inst_loc(inst), QD_ERR_COMPILATION,
                                "field @%s given as an ndarray is used by `%s`; only elem_ptr "
                                "and shape can use it",
                                fields[inst->args[k]]->name, qd_op_info[inst->op].text);
            }
        }
        for (int k = 0; k < qd_op_info[inst->op].nregions; k++) {
            RETURN_IF_ERROR(rewrite_uses(pc, inst->regions[k], fields, nvalues));
        }
    }
    return 0;
}

int
qd_pass_field_arrays(QdPassCtx *pc, QdFunc *f)
{
    if (f->kind != QD_FUNC_KERNEL) {
        return 0; /* top_level functions keep theirs: they are only inlined */
    }
    bool any = false;
    for (const QdInst *inst = f->body->first; inst && !any; inst = inst->next) {
        any = inst->op == QD_OP_FIELD_ARRAY;
    }
    if (!any) {
        return 0;
    }
    QdArenaMark mark = qd_arena_mark(&pc->scratch);
    QdField **fields = QD_NEW_ARRAY(&pc->scratch, QdField *, f->nvalues);
    if (!fields) {
        return qd_util_nomem(pc, f->module);
    }
    memset(fields, 0, sizeof(QdField *) * f->nvalues);
    for (QdInst *inst = f->body->first; inst; inst = inst->next) {
        if (inst->op == QD_OP_FIELD_ARRAY) {
            fields[inst->result] = inst->imm.field;
        }
    }
    int rc = 0;
    for (QdInst *inst = f->body->first; inst && rc == 0; inst = inst->next) {
        if (inst->op == QD_OP_TASK) {
            rc = rewrite_uses(pc, inst->regions[0], fields, f->nvalues);
        }
    }
    for (QdInst *inst = f->body->first, *next; inst && rc == 0; inst = next) {
        next = inst->next;
        if (inst->op == QD_OP_FIELD_ARRAY) {
            qd_inst_remove(inst);
        }
    }
    qd_arena_reset(&pc->scratch, mark);
    return rc;
}
