/* frontend/lower_ops.c -- the operations table by value kind (ExprOps, see lower.h).
 *
 * One entry per ExprKind; a compile-time Python object (EX_PYOBJ) is looked up once more by what
 * the host said it is (struct field, vector/matrix field, anything else). The tables themselves
 * live in the files of their kinds; kinds without behaviour of their own (scalars, runtime
 * values, builtins, funcs) get the empty table, whose NULL slots leave every operation to the
 * generic rules.
 */
#include "lower.h"

static const ExprOps no_ops = {.name = "plain"};

static const ExprOps *const kind_ops[] = {
    [EX_VOID] = &no_ops,
    [EX_INT] = &no_ops,
    [EX_FLOAT] = &no_ops,
    [EX_BOOL] = &no_ops,
    [EX_NONE] = &no_ops,
    [EX_STR] = &no_ops,
    [EX_PYOBJ] = &lw_host_ops, /* refined by host kind below */
    [EX_TUPLE] = &lw_tuple_ops,
    [EX_VALUE] = &no_ops,
    [EX_LVALUE] = &no_ops,
    [EX_FIELD] = &lw_field_ops,
    [EX_NDARRAY] = &lw_ndarray_ops,
    [EX_SHAPE] = &lw_shape_ops,
    [EX_BUILTIN] = &no_ops,
    [EX_FUNC] = &no_ops,
    [EX_ITER] = &lw_iter_ops,
    [EX_DICT] = &lw_dict_ops,
    [EX_MATRIX] = &lw_matrix_ops,
    [EX_STRUCT] = &lw_struct_ops,
    [EX_SHARED] = &lw_shared_ops,
    [EX_TILE] = &lw_tile_ops,
};

const ExprOps *
lw_expr_ops(const Expr *e)
{
    if (e->kind == EX_PYOBJ) {
        switch (e->hkind) {
        case QD_HOST_STRUCT_FIELD: return &lw_struct_field_ops;
        case QD_HOST_MATRIX_FIELD: return &lw_matrix_field_ops;
        default: return &lw_host_ops;
        }
    }
    if (e->kind == EX_MATRIX && e->is_coopvec) {
        return &lw_coopvec_ops;
    }
    if ((size_t)e->kind >= sizeof(kind_ops) / sizeof(kind_ops[0]) || !kind_ops[e->kind]) {
        return &no_ops;
    }
    return kind_ops[e->kind];
}
