/* frontend/lower_simt.c -- qd.simt.block / subgroup / warp / grid calls in kernels.
 *
 * Each primitive is one SIMT instruction of the IR (csrc/ir/ops.def) or a short sequence of
 * them; the code generators map them to the hardware (NVPTX: llvm_emit_simt.c). Threads are
 * those of the top-level loop's task: with qd.loop_config(block_dim=B), iteration i of
 * `for i in range(n)` runs on thread i % B of a block that also runs iterations
 * i - i % B .. i - i % B + B - 1 (the grid-stride loop keeps whole blocks of iterations
 * together, and for n a multiple of B every thread of a block makes the same number of trips,
 * so barriers inside the loop body are reached by all of them).
 *
 * `SharedArray(shape, dtype)` allocates one array per block (shared_alloc, placed at the start
 * of the task); the Expr is EX_SHARED and its subscripts (lower_expr.c) are lvalues in shared
 * memory, so `+=` and `-=` on them are atomic like on global data.
 *
 * The primitives need a GPU: on the CPU they are a compile error naming the arch, as in the
 * reference (QdFrontendOptions.simt says whether the target runs them).
 */
#include "lower.h"

#include <stdio.h>
#include <string.h>

#define SUBGROUP_SIZE 32
#define SUBGROUP_LOG2 5

static int
nomem(Lowerer *lw)
{
    return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
}

static const QdType *
scalar(QdTypeKind kind)
{
    return qd_type_scalar(kind);
}

static void
set_value(Expr *out, uint32_t id, const QdType *ty)
{
    memset(out, 0, sizeof(*out));
    out->kind = EX_VALUE;
    out->id = id;
    out->ty = ty;
}

static void
set_int(Expr *out, int64_t v)
{
    memset(out, 0, sizeof(*out));
    out->kind = EX_INT;
    out->ival = v;
}

/* An instruction without operands and with a result of type ty (or none). */
static int
emit0(Lowerer *lw, QdOp op, const QdType *ty, Expr *out)
{
    QdInst *inst = lw_emit(lw, op, 0);
    if (!inst) {
        return -1;
    }
    if (ty == NULL) {
        out->kind = EX_VOID;
        return 0;
    }
    uint32_t id = qd_inst_set_result(lw->f, inst, ty, NULL);
    if (id == QD_NO_VALUE) {
        return nomem(lw);
    }
    set_value(out, id, ty);
    return 0;
}

/* The runtime value of argument e converted to ty. */
static int
arg_value(Lowerer *lw, const QdAst *node, const Expr *e, const QdType *ty, uint32_t *id)
{
    Expr v;
    RETURN_IF_ERROR(lw_convert(lw, node, e, ty, &v));
    RETURN_IF_ERROR(lw_rvalue(lw, node, &v, &v));
    *id = v.id;
    return 0;
}

static int
need_args(Lowerer *lw, const QdAst *node, const char *name, const MatrixCall *c, uint32_t n)
{
    if (c->npos + c->nkw != n) {
        return lw_error(lw, node, QD_ERR_TYPE, "qd.%s() takes %u argument%s", name, n,
                        n == 1 ? "" : "s");
    }
    return 0;
}

/* A scalar argument as a runtime value of its own type. */
static int
scalar_arg(Lowerer *lw, const QdAst *node, const Expr *e, Expr *out)
{
    if (e == NULL) {
        return lw_error(lw, node, QD_ERR_TYPE, "missing argument");
    }
    return lw_rvalue(lw, node, e, out);
}

/* `op %v, %lane : T` for the shuffles. */
static int
shuffle(Lowerer *lw, const QdAst *node, QdOp op, const Expr *value, const Expr *lane, Expr *out)
{
    Expr v;
    uint32_t l;
    RETURN_IF_ERROR(scalar_arg(lw, node, value, &v));
    RETURN_IF_ERROR(arg_value(lw, node, lane, scalar(QD_TY_I32), &l));
    uint32_t id = lw_emit_value(lw, op, v.ty, v.id, l);
    if (id == QD_NO_VALUE) {
        return -1;
    }
    set_value(out, id, v.ty);
    return 0;
}

/* A predicate op (ballot, votes, barrier reductions) on an i32 predicate. */
static int
predicate_op(Lowerer *lw, const QdAst *node, QdOp op, const Expr *pred, const QdType *ty,
             Expr *out)
{
    uint32_t p;
    RETURN_IF_ERROR(arg_value(lw, node, pred, scalar(QD_TY_I32), &p));
    uint32_t id = lw_emit_value(lw, op, ty, p, 0);
    if (id == QD_NO_VALUE) {
        return -1;
    }
    set_value(out, id, ty);
    return 0;
}

/* Converts a u1 result to i32 (0/1), as the reference's votes return. */
static int
to_i32(Lowerer *lw, const QdAst *node, Expr *e)
{
    return lw_convert(lw, node, e, scalar(QD_TY_I32), e);
}

/* i32 value of a lane mask: bits selected by `cmp` against lane_id. */
static int
lanemask(Lowerer *lw, const QdAst *node, const char *which, const Expr *lane, Expr *out)
{
    /* lt: (1 << lane) - 1; le: (2 << lane) - 1; eq: 1 << lane; gt: ~le; ge: ~lt (as u32) */
    Expr l, one = {0}, two = {0}, bit, m;
    one.kind = two.kind = EX_INT;
    one.ival = 1;
    two.ival = 2;
    RETURN_IF_ERROR(lw_convert(lw, node, lane, scalar(QD_TY_U32), &l));
    RETURN_IF_ERROR(lw_typed_constant(lw, node, &one, scalar(QD_TY_U32)));
    RETURN_IF_ERROR(lw_typed_constant(lw, node, &two, scalar(QD_TY_U32)));
    bool le = strcmp(which, "le") == 0 || strcmp(which, "gt") == 0;
    RETURN_IF_ERROR(lw_binary(lw, node, QD_BIN_LSHIFT, le ? &two : &one, &l, &bit));
    if (strcmp(which, "eq") == 0) {
        *out = bit;
        return 0;
    }
    RETURN_IF_ERROR(lw_binary(lw, node, QD_BIN_SUB, &bit, &one, &m));
    if (strcmp(which, "gt") == 0 || strcmp(which, "ge") == 0) {
        return lw_unary(lw, node, QD_UNARY_INVERT, &m, out);
    }
    *out = m;
    return 0;
}

/***** SharedArray *****/

static int
shared_array(Lowerer *lw, const QdAst *node, const MatrixCall *c, Expr *out)
{
    const Expr *shape = lw_matrix_arg(c, 0, "shape");
    const Expr *dtype = lw_matrix_arg(c, 1, "dtype");
    FieldView *view = QD_NEW(lw->arena, FieldView);
    if (!view) {
        return nomem(lw);
    }
    memset(view, 0, sizeof(*view));
    if (shape && shape->kind == EX_INT) {
        view->ndim = 1;
        view->shape[0] = shape->ival;
    } else if (shape && shape->kind == EX_TUPLE && shape->nitems >= 1 && shape->nitems <= 8) {
        view->ndim = shape->nitems;
        for (uint32_t i = 0; i < shape->nitems; i++) {
            if (shape->items[i].kind != EX_INT) {
                view->ndim = 0;
                break;
            }
            view->shape[i] = shape->items[i].ival;
        }
    }
    uint64_t count = view->ndim ? 1 : 0;
    for (uint32_t i = 0; i < view->ndim; i++) {
        count = view->shape[i] > 0 ? count * (uint64_t)view->shape[i] : 0;
    }
    if (count == 0 || count > (1u << 24)) {
        return lw_error(lw, node, QD_ERR_COMPILATION,
                        "ValueError: SharedArray shape must be a positive int or a tuple/list of "
                        "positive ints known at compile time");
    }
    const QdType *ty = NULL;
    if (dtype == NULL || lw_matrix_dtype_arg(lw, node, dtype, &ty) < 0 || ty == NULL) {
        return dtype == NULL ? lw_error(lw, node, QD_ERR_TYPE, "SharedArray(shape, dtype) needs a dtype")
                             : -1;
    }
    if (!lw->in_parallel || lw->task == NULL) {
        return lw_error(lw, node, QD_ERR_SYNTAX,
                        "SharedArray must be created inside the body of a parallel loop");
    }
    const QdType *arr = qd_type_array(lw->m, ty, (uint32_t)count);
    const QdType *pty = arr ? qd_type_ptr(lw->m, arr, QD_SPACE_SHARED) : NULL;
    QdInst *inst = qd_inst_new(lw->f, QD_OP_SHARED_ALLOC, 0);
    if (!pty || !inst || qd_inst_set_result(lw->f, inst, pty, NULL) == QD_NO_VALUE) {
        return nomem(lw);
    }
    inst->loc = lw->loc;
    QdRegion *r = lw->task->regions[0];
    qd_region_insert_before(r, r->first, inst);
    memset(out, 0, sizeof(*out));
    out->kind = EX_SHARED;
    out->id = inst->result;
    out->ty = ty;
    out->view = view;
    return 0;
}

/***** the primitives *****/

static int
block_call(Lowerer *lw, const QdAst *node, const char *f, const MatrixCall *c, Expr *out)
{
    const Expr *a0 = lw_matrix_arg(c, 0, "predicate");
    if (strcmp(f, "sync") == 0) {
        RETURN_IF_ERROR(need_args(lw, node, "simt.block.sync", c, 0));
        return emit0(lw, QD_OP_BLOCK_SYNC, NULL, out);
    }
    if (strcmp(f, "sync_all_nonzero") == 0 || strcmp(f, "sync_any_nonzero") == 0 ||
        strcmp(f, "sync_count_nonzero") == 0) {
        QdOp op = f[5] == 'a' && f[6] == 'l' ? QD_OP_BLOCK_SYNC_ALL
                  : f[5] == 'a'              ? QD_OP_BLOCK_SYNC_ANY
                                             : QD_OP_BLOCK_SYNC_COUNT;
        RETURN_IF_ERROR(need_args(lw, node, f, c, 1));
        return predicate_op(lw, node, op, a0, scalar(QD_TY_I32), out);
    }
    if (strcmp(f, "mem_fence") == 0 || strcmp(f, "mem_sync") == 0) {
        if (f[4] == 's') {
            RETURN_IF_ERROR(lw_warn(lw, node, "DeprecationWarning",
                                    "qd.simt.block.mem_sync is deprecated; use mem_fence"));
        }
        return emit0(lw, QD_OP_FENCE_BLOCK, NULL, out);
    }
    if (strcmp(f, "thread_idx") == 0) {
        return emit0(lw, QD_OP_THREAD_IDX, scalar(QD_TY_I32), out);
    }
    if (strcmp(f, "global_thread_idx") == 0) {
        Expr b, d, t, bd;
        RETURN_IF_ERROR(emit0(lw, QD_OP_BLOCK_IDX, scalar(QD_TY_I32), &b));
        RETURN_IF_ERROR(emit0(lw, QD_OP_BLOCK_DIM, scalar(QD_TY_I32), &d));
        RETURN_IF_ERROR(emit0(lw, QD_OP_THREAD_IDX, scalar(QD_TY_I32), &t));
        RETURN_IF_ERROR(lw_binary(lw, node, QD_BIN_MUL, &b, &d, &bd));
        return lw_binary(lw, node, QD_BIN_ADD, &bd, &t, out);
    }
    if (strcmp(f, "SharedArray") == 0) {
        return shared_array(lw, node, c, out);
    }
    return lw_error(lw, node, QD_ERR_SYNTAX, "qd.simt.block.%s is not supported in kernels yet", f);
}

static int
subgroup_call(Lowerer *lw, const QdAst *node, const char *f, const MatrixCall *c, Expr *out)
{
    const Expr *a0 = lw_matrix_arg(c, 0, "value");
    const Expr *a1 = lw_matrix_arg(c, 1, "index");
    static const struct {
        const char *name;
        QdOp op;
    } shuffles[] = {
        {"shuffle", QD_OP_SHUFFLE},       {"broadcast", QD_OP_SHUFFLE},
        {"shuffle_xor", QD_OP_SHUFFLE_XOR}, {"shuffle_up", QD_OP_SHUFFLE_UP},
        {"shuffle_down", QD_OP_SHUFFLE_DOWN},
    };
    for (size_t i = 0; i < QD_ARRAY_LEN(shuffles); i++) {
        if (strcmp(f, shuffles[i].name) == 0) {
            RETURN_IF_ERROR(need_args(lw, node, f, c, 2));
            return shuffle(lw, node, shuffles[i].op, a0, a1, out);
        }
    }
    if (strcmp(f, "broadcast_first") == 0) {
        Expr zero;
        set_int(&zero, 0);
        RETURN_IF_ERROR(need_args(lw, node, f, c, 1));
        return shuffle(lw, node, QD_OP_SHUFFLE, a0, &zero, out);
    }
    if (strcmp(f, "invocation_id") == 0) {
        return emit0(lw, QD_OP_LANE_ID, scalar(QD_TY_I32), out);
    }
    if (strcmp(f, "group_size") == 0 || strcmp(f, "log2_group_size") == 0) {
        set_int(out, f[0] == 'g' ? SUBGROUP_SIZE : SUBGROUP_LOG2);
        return 0;
    }
    if (strcmp(f, "elect") == 0) {
        Expr lane, zero;
        set_int(&zero, 0);
        RETURN_IF_ERROR(emit0(lw, QD_OP_LANE_ID, scalar(QD_TY_I32), &lane));
        RETURN_IF_ERROR(lw_compare(lw, node, QD_CMP_EQ, &lane, &zero, out));
        return to_i32(lw, node, out);
    }
    if (strcmp(f, "sync") == 0 || strcmp(f, "barrier") == 0) {
        if (f[0] == 'b') {
            RETURN_IF_ERROR(lw_warn(lw, node, "DeprecationWarning",
                                    "qd.simt.subgroup.barrier is deprecated; use sync"));
        }
        return emit0(lw, QD_OP_SUBGROUP_SYNC, NULL, out);
    }
    if (strcmp(f, "mem_fence") == 0 || strcmp(f, "memory_barrier") == 0) {
        if (f[1] == 'e' && f[2] == 'm' && f[3] == 'o') {
            RETURN_IF_ERROR(lw_warn(lw, node, "DeprecationWarning",
                                    "qd.simt.subgroup.memory_barrier is deprecated; use mem_fence"));
        }
        return emit0(lw, QD_OP_FENCE_BLOCK, NULL, out);
    }
    if (strcmp(f, "ballot") == 0 || strcmp(f, "ballot_full_subgroup") == 0) {
        RETURN_IF_ERROR(predicate_op(lw, node, QD_OP_BALLOT, a0, scalar(QD_TY_U32), out));
        return lw_convert(lw, node, out, scalar(QD_TY_U64), out);
    }
    if (strcmp(f, "ballot_first_n") == 0) {
        const Expr *n = lw_matrix_arg(c, 1, "n");
        if (n == NULL || n->kind != EX_INT || n->ival < 0 || n->ival > 32) {
            return lw_error(lw, node, QD_ERR_COMPILATION,
                            "ballot_first_n(pred, n): n must be a compile-time int in [0, 32]");
        }
        RETURN_IF_ERROR(predicate_op(lw, node, QD_OP_BALLOT, a0, scalar(QD_TY_U32), out));
        Expr mask = {0};
        mask.kind = EX_INT;
        mask.ival = n->ival == 32 ? 0xffffffffLL : (1LL << n->ival) - 1;
        RETURN_IF_ERROR(lw_typed_constant(lw, node, &mask, scalar(QD_TY_U32)));
        return lw_binary(lw, node, QD_BIN_BITAND, out, &mask, out);
    }
    if (strcmp(f, "all_true") == 0 || strcmp(f, "any_true") == 0) {
        RETURN_IF_ERROR(predicate_op(lw, node, f[1] == 'l' ? QD_OP_VOTE_ALL : QD_OP_VOTE_ANY, a0,
                                     scalar(QD_TY_U1), out));
        return to_i32(lw, node, out);
    }
    if (strcmp(f, "all_equal") == 0) {
        Expr v, first, same, zero;
        set_int(&zero, 0);
        RETURN_IF_ERROR(scalar_arg(lw, node, a0, &v));
        RETURN_IF_ERROR(shuffle(lw, node, QD_OP_SHUFFLE, &v, &zero, &first));
        RETURN_IF_ERROR(lw_compare(lw, node, QD_CMP_EQ, &v, &first, &same));
        RETURN_IF_ERROR(to_i32(lw, node, &same));
        RETURN_IF_ERROR(predicate_op(lw, node, QD_OP_VOTE_ALL, &same, scalar(QD_TY_U1), out));
        return to_i32(lw, node, out);
    }
    if (strncmp(f, "lanemask_", 9) == 0) {
        const char *which = f + 9;
        if (strcmp(which, "lt") && strcmp(which, "le") && strcmp(which, "eq") &&
            strcmp(which, "gt") && strcmp(which, "ge")) {
            return lw_error(lw, node, QD_ERR_SYNTAX, "qd.simt.subgroup.%s is not a function", f);
        }
        return lanemask(lw, node, which, lw_matrix_arg(c, 0, "lane_id"), out);
    }
    return lw_error(lw, node, QD_ERR_SYNTAX, "qd.simt.subgroup.%s is not supported in kernels yet",
                    f);
}

static int
warp_call(Lowerer *lw, const QdAst *node, const char *f, const MatrixCall *c, Expr *out)
{
    /* CUDA warp intrinsics: the mask argument names the participating lanes; the whole warp
     * takes part in the code the frontend emits, so it only has to be a value. */
    const Expr *pred = lw_matrix_arg(c, 1, "predicate");
    const Expr *val = lw_matrix_arg(c, 1, "val");
    const Expr *lane = lw_matrix_arg(c, 2, "offset");
    if (strcmp(f, "all_nonzero") == 0 || strcmp(f, "any_nonzero") == 0) {
        RETURN_IF_ERROR(predicate_op(lw, node, f[1] == 'l' ? QD_OP_VOTE_ALL : QD_OP_VOTE_ANY,
                                     pred, scalar(QD_TY_U1), out));
        return to_i32(lw, node, out);
    }
    if (strcmp(f, "ballot") == 0) {
        return predicate_op(lw, node, QD_OP_BALLOT, lw_matrix_arg(c, 0, "predicate"),
                            scalar(QD_TY_U32), out);
    }
    if (strcmp(f, "shfl_sync_i32") == 0 || strcmp(f, "shfl_sync_f32") == 0) {
        return shuffle(lw, node, QD_OP_SHUFFLE, val, lane, out);
    }
    if (strncmp(f, "shfl_up_", 8) == 0) {
        return shuffle(lw, node, QD_OP_SHUFFLE_UP, val, lane, out);
    }
    if (strncmp(f, "shfl_down_", 10) == 0) {
        return shuffle(lw, node, QD_OP_SHUFFLE_DOWN, val, lane, out);
    }
    if (strncmp(f, "shfl_xor_", 9) == 0) {
        return shuffle(lw, node, QD_OP_SHUFFLE_XOR, val, lane, out);
    }
    if (strcmp(f, "sync") == 0) {
        return emit0(lw, QD_OP_SUBGROUP_SYNC, NULL, out);
    }
    return lw_error(lw, node, QD_ERR_SYNTAX, "qd.simt.warp.%s is not supported in kernels yet", f);
}

int
lw_simt_call(Lowerer *lw, const QdAst *node, const char *name, const MatrixCall *c, Expr *out)
{
    const char *rest = name + 5; /* after "simt." */
    const char *dot = strchr(rest, '.');
    if (dot == NULL) {
        return lw_error(lw, node, QD_ERR_SYNTAX, "qd.%s is not a function", name);
    }
    size_t group = (size_t)(dot - rest);
    const char *f = dot + 1;
    bool is_size = strncmp(rest, "subgroup", group) == 0 &&
                   (strcmp(f, "group_size") == 0 || strcmp(f, "log2_group_size") == 0);
    if (!lw->opt->simt && !is_size) {
        return lw_error(lw, node, QD_ERR_COMPILATION,
                        "ValueError: qd.%s is not supported for arch cpu: qd.simt needs a GPU "
                        "backend (arch=qd.cuda)", name);
    }
    memset(out, 0, sizeof(*out));
    if (group == 5 && strncmp(rest, "block", 5) == 0) {
        return block_call(lw, node, f, c, out);
    }
    if (group == 8 && strncmp(rest, "subgroup", 8) == 0) {
        return subgroup_call(lw, node, f, c, out);
    }
    if (group == 4 && strncmp(rest, "warp", 4) == 0) {
        return warp_call(lw, node, f, c, out);
    }
    if (group == 4 && strncmp(rest, "grid", 4) == 0 &&
        (strcmp(f, "mem_fence") == 0 || strcmp(f, "memfence") == 0)) {
        if (f[3] == 'f') {
            RETURN_IF_ERROR(lw_warn(lw, node, "DeprecationWarning",
                                    "qd.simt.grid.memfence is deprecated; use mem_fence"));
        }
        return emit0(lw, QD_OP_FENCE_DEVICE, NULL, out);
    }
    return lw_error(lw, node, QD_ERR_SYNTAX, "qd.%s is not supported in kernels yet", name);
}
