/* frontend/lower_host.c -- compile-time Python objects (EX_PYOBJ) as values in kernels.
 *
 * An object the kernel names that is none of the kinds lowering knows (a module, a class, a
 * Python list of fields, ...) stays a host handle: its attributes and items are asked of Python
 * at compile time (lw_host_getattr serves every value that has a Python handle). Struct fields and vector/matrix fields are EX_PYOBJ too, with tables of their
 * own (lower_struct.c, lower_matrix_field.c; see lw_expr_ops). Here are the ExprOps of the rest.
 */
#include "lower.h"

int
lw_host_getattr(Lowerer *lw, const QdAst *node, QdHandle h, Expr *out)
{
    QdHandle r;
    int rc = lw->host->getattr(lw->host->self, lw->ctx, h, node->name, &r);
    if (rc < 0) {
        return -1;
    }
    if (rc > 0) {
        return lw_error(lw, node, QD_ERR_SYNTAX, "object has no attribute '%s'", node->name);
    }
    return lw_from_handle(lw, node, r, out);
}

/* `obj[i]` with a compile-time non-negative int i: Python's item. */
static int
host_subscript(Lowerer *lw, const QdAst *node, const Expr *base, const QdAst *index, Expr *out)
{
    Expr idx[16];
    uint32_t n = 0;
    RETURN_IF_ERROR(lw_collect_indices(lw, index, idx, &n));
    if (n == 1 && (idx[0].kind == EX_INT) && idx[0].ival >= 0) {
        QdHandle h;
        RETURN_IF_ERROR(lw->host->getitem(lw->host->self, lw->ctx, base->h, (uint32_t)idx[0].ival, &h));
        return lw_from_handle(lw, node, h, out);
    }
    if (base->hkind == QD_HOST_CALLABLE && node->kind == QD_AST_SUBSCRIPT && node->pynode) {
        /* A class or other callable subscripted at compile time (a generic annotation such as
         * qd.BufferView[qd.f32] on a func parameter): Python evaluates it. */
        return lw_static_eval(lw, node, out);
    }
    return lw_not_indexable(lw, node);
}

const ExprOps lw_host_ops = {
    .name = "host object",
    .subscript = host_subscript,
};
