/* frontend/lower_host.c -- compile-time Python objects (EX_PYOBJ) as values in kernels.
 *
 * An object the kernel names that is none of the kinds lowering knows (a module, a class, a
 * Python list of fields, ...) stays a host handle: its attributes and items are asked of Python
 * at compile time (lw_host_getattr serves every value that has a Python handle). Struct fields and vector/matrix fields are EX_PYOBJ too, with tables of their
 * own (lower_struct.c, lower_matrix_field.c; see lw_expr_ops). Here are the ExprOps of the rest.
 */
#include "lower.h"

#include <stdio.h>
#include <string.h>

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

/***** compile-time values through the host *****/

int
lw_from_handle(Lowerer *lw, const QdAst *node, QdHandle h, Expr *out)
{
    QdHostValue hv;
    RETURN_IF_ERROR(lw->host->describe(lw->host->self, lw->ctx, h, &hv));
    Expr e = {0};
    e.h = h;
    switch (hv.kind) {
    case QD_HOST_NONE:
        e.kind = EX_NONE;
        break;
    case QD_HOST_BOOL:
        e.kind = EX_BOOL;
        e.ival = hv.ival;
        break;
    case QD_HOST_INT:
        e.kind = EX_INT;
        e.ival = hv.ival;
        if (hv.is_big) {
            e.is_big = true;
            e.str = qd_arena_strdup(lw->arena, hv.str);
            e.fval = hv.fval;
            e.big_u64 = hv.big_u64;
            e.ubits = hv.ubits;
        }
        break;
    case QD_HOST_FLOAT:
        e.kind = EX_FLOAT;
        e.fval = hv.fval;
        break;
    case QD_HOST_STR:
        e.kind = EX_STR;
        e.str = hv.str;
        break;
    case QD_HOST_TUPLE:
    case QD_HOST_LIST:
        e.kind = EX_TUPLE;
        e.nitems = hv.len;
        e.items = QD_NEW_ARRAY(lw->arena, Expr, hv.len ? hv.len : 1);
        if (!e.items) {
            return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
        }
        for (uint32_t i = 0; i < hv.len; i++) {
            QdHandle item;
            RETURN_IF_ERROR(lw->host->getitem(lw->host->self, lw->ctx, h, i, &item));
            RETURN_IF_ERROR(lw_from_handle(lw, node, item, &e.items[i]));
        }
        break;
    case QD_HOST_FIELD: {
        char name[32];
        FieldView *view = QD_NEW(lw->arena, FieldView);
        if (!view) {
            return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
        }
        view->ndim = (uint32_t)hv.ndim;
        int64_t physical[16];
        for (uint32_t k = 0; k < view->ndim; k++) {
            view->shape[k] = hv.shape[k];
            view->order[k] = hv.order[k];
            view->offset[k] = hv.offset[k];
            physical[k] = hv.shape[hv.order[k] < view->ndim ? hv.order[k] : k];
        }
        snprintf(name, sizeof(name), "f%u", hv.field_id);
        QdField *fd = qd_module_find_field(lw->m, name);
        if (!fd) {
            fd = qd_field_new(lw->m, name, qd_type_scalar(hv.dtype), view->ndim, physical);
            if (!fd) {
                return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
            }
        }
        e.kind = EX_FIELD;
        e.field = fd;
        e.view = view;
        break;
    }
    case QD_HOST_QD_FUNC:
        e.kind = EX_FUNC;
        break;
    case QD_HOST_STRUCT:
        return lw_struct_from_instance(lw, node, h, out);
    case QD_HOST_MATRIX:
        return lw_matrix_from_instance(lw, node, h, out);
    case QD_HOST_RUNTIME:
        return lw_static_value(lw, node, hv.ival, out); /* a stand-in back from Python */
    case QD_HOST_RUNTIME_OP:
        return lw_static_op(lw, node, h, hv.str, out); /* an operation on stand-ins */
    case QD_HOST_BUILTIN:
        e.kind = EX_BUILTIN;
        e.str = hv.str;
        break;
    case QD_HOST_DTYPE:
        e.kind = EX_PYOBJ;
        e.hkind = hv.kind;
        e.ty = qd_type_scalar(hv.dtype);
        e.str = hv.str; /* "int", "float", "bool" for Python's own types */
        break;
    default:
        e.kind = EX_PYOBJ;
        e.hkind = hv.kind;
        break;
    }
    *out = e;
    return 0;
}

int
lw_to_handle(Lowerer *lw, const QdAst *node, const Expr *e, QdHandle *out)
{
    const QdHost *host = lw->host;
    if (e->h) {
        *out = e->h;
        return 0;
    }
    switch (e->kind) {
    case EX_INT:
    case EX_BOOL:
        return host->make_int(host->self, lw->ctx, e->ival, out);
    case EX_FLOAT:
        return host->make_float(host->self, lw->ctx, e->fval, out);
    case EX_STR:
        return host->make_str(host->self, lw->ctx, e->str, out);
    case EX_NONE:
        return host->make_str(host->self, lw->ctx, NULL, out); /* NULL: None */
    case EX_TUPLE: {
        QdHandle *items = QD_NEW_ARRAY(lw->arena, QdHandle, e->nitems ? e->nitems : 1);
        if (!items) {
            return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
        }
        for (uint32_t i = 0; i < e->nitems; i++) {
            RETURN_IF_ERROR(lw_to_handle(lw, node, &e->items[i], &items[i]));
        }
        return host->make_tuple(host->self, lw->ctx, items, e->nitems, out);
    }
    default:
        return lw_error(lw, node, QD_ERR_COMPILATION,
                        "this value exists only at run time; Python code evaluated at compile time "
                        "(qd.static, plain Python functions) cannot use it");
    }
}
