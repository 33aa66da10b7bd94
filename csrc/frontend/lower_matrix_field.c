/* frontend/lower_matrix_field.c -- vectors and matrices at the kernel boundary and in memory.
 *
 * - A vector/matrix field (quadrants/_matrix_field.py) is one scalar field per element
 *   (`_qd_fields`, row-major); `f[i]` is the matrix of the element fields' lvalues at i, so
 *   `f[i] = v`, `f[i][k] += x` (atomic) and `f[i] += v` (atomic per element) work element-wise.
 * - A vector/matrix ndarray is a scalar ndarray whose last one (vector) or two (matrix) axes are
 *   the element: shape + (n,) or shape + (n, m), the NumPy layout. The Expr of such a parameter
 *   keeps the user's ndim and the element shape in rows/cols (is_vector for vectors); `a[i]` is
 *   the matrix of element pointers.
 * - A vector/matrix kernel argument arrives flattened, one scalar argument per element
 *   ("param.0", "param.1", ...), and a vector/matrix kernel result leaves as one result per
 *   element; the Python layer packs and unpacks them.
 */
#include "lower.h"

#include <stdio.h>
#include <string.h>

static int
ndarray_subscript(Lowerer *lw, const QdAst *node, const Expr *base, const QdAst *index, Expr *out)
{
    /* Index the outer axes as a plain ndarray of the user's ndim, then append element axes. */
    Expr outer = *base;
    outer.rows = outer.cols = 0;
    Expr lv;
    RETURN_IF_ERROR(lw_subscript(lw, node, &outer, index, &lv));
    /* lv is an element pointer of the outer indices only (its ELEM_PTR has ndim indices): redo
     * it with the element axes appended. */
    QdInst *first = NULL;
    for (QdInst *inst = lw->cur ? lw->cur->last : NULL; inst; inst = inst->prev) {
        if (inst->result == lv.id && inst->op == QD_OP_ELEM_PTR) {
            first = inst;
            break;
        }
    }
    if (!first) {
        return lw_error(lw, node, QD_ERR_INTERNAL, "vector ndarray element pointer not found");
    }
    /* Its operands (the ndarray and the outer indices) are reused; the instruction goes. */
    uint32_t nouter = first->nargs;
    uint32_t *outer_args = QD_NEW_ARRAY(lw->arena, uint32_t, nouter);
    if (!outer_args) {
        return lw_nomem(lw);
    }
    memcpy(outer_args, first->args, sizeof(uint32_t) * nouter);
    qd_inst_remove(first);
    return lw_ndarray_element(lw, base, outer_args, nouter, out);
}

int
lw_ndarray_element(Lowerer *lw, const Expr *base, const uint32_t *outer_args, uint32_t nouter,
                   Expr *out)
{
    uint32_t rows = base->rows, cols = base->cols;
    RETURN_IF_ERROR(lw_matrix_new(lw, rows, cols, base->is_vector, base->ty, out));
    const QdType *i32 = qd_type_scalar(QD_TY_I32);
    const QdType *pty = qd_type_ptr(lw->m, base->ty, QD_SPACE_GLOBAL);
    uint32_t extra = base->is_vector ? 1 : 2;
    for (uint32_t r = 0; r < rows; r++) {
        for (uint32_t c = 0; c < cols; c++) {
            uint32_t ir = lw_const_int(lw, i32, r), ic = lw_const_int(lw, i32, c);
            QdInst *inst = lw_emit(lw, QD_OP_ELEM_PTR, nouter + extra);
            if (!inst || ir == QD_NO_VALUE || ic == QD_NO_VALUE) {
                return -1;
            }
            memcpy(inst->args, outer_args, sizeof(uint32_t) * nouter);
            inst->args[nouter] = ir;
            if (extra == 2) {
                inst->args[nouter + 1] = ic;
            }
            if (!pty || qd_inst_set_result(lw->f, inst, pty, NULL) == QD_NO_VALUE) {
                return lw_nomem(lw);
            }
            Expr *e = &out->items[r * cols + c];
            memset(e, 0, sizeof(*e));
            e->kind = EX_LVALUE;
            e->id = inst->result;
            e->ty = base->ty;
            e->space = QD_SPACE_GLOBAL;
            e->is_global = true;
        }
    }
    return 0;
}

int
lw_matrix_field_subscript(Lowerer *lw, const QdAst *node, const Expr *base, const QdAst *index,
                          Expr *out)
{
    if (base->kind == EX_NDARRAY) {
        return ndarray_subscript(lw, node, base, index, out);
    }
    uint32_t n, m;
    bool is_vector;
    const QdType *ty;
    RETURN_IF_ERROR(lw_matrix_type_info(lw, node, base->h, &n, &m, &is_vector, &ty));
    QdHandle fields;
    int rc = lw->host->getattr(lw->host->self, lw->ctx, base->h, "_qd_fields", &fields);
    if (rc != 0) {
        return rc < 0 ? -1 : lw_error(lw, node, QD_ERR_INTERNAL, "matrix field without _qd_fields");
    }
    RETURN_IF_ERROR(lw_matrix_new(lw, n, m, is_vector, ty, out));
    for (uint32_t i = 0; i < n * m; i++) {
        QdHandle fh;
        Expr f;
        RETURN_IF_ERROR(lw->host->getitem(lw->host->self, lw->ctx, fields, i, &fh));
        RETURN_IF_ERROR(lw_from_handle(lw, node, fh, &f));
        RETURN_IF_ERROR(lw_subscript(lw, node, &f, index, &out->items[i]));
        if (out->items[i].kind != EX_LVALUE) {
            return lw_error(lw, node, QD_ERR_SYNTAX, "a vector/matrix field takes one index per axis");
        }
        if (i == 0) {
            out->ty = out->items[0].ty;
        }
    }
    return 0;
}

/* The first element field of a vector/matrix field (struct-for over its shape). */
int
lw_matrix_field_leaf(Lowerer *lw, const QdAst *node, const Expr *base, Expr *out)
{
    QdHandle fields, fh;
    int rc = lw->host->getattr(lw->host->self, lw->ctx, base->h, "_qd_fields", &fields);
    if (rc != 0) {
        return rc < 0 ? -1 : lw_error(lw, node, QD_ERR_INTERNAL, "matrix field without _qd_fields");
    }
    RETURN_IF_ERROR(lw->host->getitem(lw->host->self, lw->ctx, fields, 0, &fh));
    return lw_from_handle(lw, node, fh, out);
}

int
lw_matrix_kernel_return(Lowerer *lw, const QdAst *node, const Expr *ann, const Expr *value,
                        uint32_t *next)
{
    uint32_t n, m;
    bool is_vector;
    const QdType *ty;
    RETURN_IF_ERROR(lw_matrix_type_info(lw, node, ann->h, &n, &m, &is_vector, &ty));
    if (value->kind != EX_MATRIX || value->nitems != n * m) {
        return lw_error(lw, node, QD_ERR_TYPE, "the kernel returns a %ux%u %s", n, m,
                        is_vector ? "vector" : "matrix");
    }
    ty = ty ? ty : value->ty;
    for (uint32_t i = 0; i < n * m; i++) {
        RETURN_IF_ERROR(lw_kernel_result(lw, node, &value->items[i], ty, next));
    }
    return 0;
}

int
lw_param_annotation(Lowerer *lw, const QdAst *param, Expr *out)
{
    /* The annotation as Python evaluated it where the kernel was defined (the kernel's function
     * carries them as _qd_annotations), else evaluated here. */
    QdHandle anns, h;
    int rc = lw->host->getattr(lw->host->self, lw->ctx, lw->frame->scope, "_qd_annotations", &anns);
    if (rc < 0) {
        return -1;
    }
    if (rc == 0 && (rc = lw->host->getattr(lw->host->self, lw->ctx, anns, param->name, &h)) < 0) {
        return -1;
    }
    if (rc == 0) {
        return lw_from_handle(lw, param, h, out);
    }
    return lw_static_eval(lw, param->x, out);
}

/* Applies a vector/matrix parameter annotation to the bound parameter e: a flattened argument
 * (EX_DICT "0".."k") becomes a matrix value. (An ndarray's vector/matrix element comes from its
 * argument descriptor: arg_expr.) */
int
lw_matrix_param(Lowerer *lw, const QdAst *param, const Expr *ann, Expr *e)
{
    if (ann->kind != EX_PYOBJ) {
        return 0;
    }
    if (ann->hkind == QD_HOST_MATRIX_TYPE && e->kind == EX_DICT) {
        uint32_t n, m;
        bool is_vector;
        const QdType *ty;
        RETURN_IF_ERROR(lw_matrix_type_info(lw, param, ann->h, &n, &m, &is_vector, &ty));
        if (e->nitems != n * m) {
            return lw_error(lw, param, QD_ERR_INTERNAL, "vector argument with %u elements", e->nitems);
        }
        Expr *items = QD_NEW_ARRAY(lw->arena, Expr, n * m + 1);
        if (!items) {
            return lw_nomem(lw);
        }
        for (uint32_t i = 0; i < n * m; i++) {
            char key[16];
            snprintf(key, sizeof(key), "%u", i);
            bool found = false;
            for (uint32_t k = 0; k < e->nitems && !found; k++) {
                if (strcmp(e->keys[k].str, key) == 0) {
                    items[i] = e->items[k];
                    found = true;
                }
            }
            if (!found) {
                return lw_error(lw, param, QD_ERR_INTERNAL, "vector argument without element %u", i);
            }
        }
        return lw_matrix_from_scalars(lw, param, items, n, m, is_vector, ty, e);
    }
    return 0;
}

/* A struct-for over a vector/matrix field: over the shape of its leaves. */
static int
matrix_field_iterate(Lowerer *lw, const QdAst *node, const Expr *e, IterSpec *it)
{
    Expr leaf;
    RETURN_IF_ERROR(lw_matrix_field_leaf(lw, node, e, &leaf));
    const ExprOps *ops = lw_expr_ops(&leaf);
    return ops->iterate ? ops->iterate(lw, node, &leaf, it) : LW_DECLINED;
}

const ExprOps lw_matrix_field_ops = {
    .name = "matrix field",
    .subscript = lw_matrix_field_subscript,
    .iterate = matrix_field_iterate,
};
