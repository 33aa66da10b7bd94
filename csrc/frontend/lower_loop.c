/* frontend/lower_loop.c -- loops: `while`, `for` and its parallelization, `break` / `continue`.
 *
 * Every `for` at the kernel's top level (also inside `if qd.static(...)`, static loops and inlined
 * funcs) becomes a `range_for` task whose iterations run in parallel; a runtime `if` or `while`
 * around a loop makes it serial, as does `qd.loop_config(serialize=True)`. `qd.ndrange`
 * flattens its dimensions into one parallel loop (the last argument varies fastest), and nested
 * loops become serial `for`s. `for x in qd.static(...)` unrolls at compile time.
 */
#include "lower.h"

#include <string.h>

/***** break / continue context *****/

LoopScope
lw_loop_enter(Lowerer *lw, LoopKind kind)
{
    LoopScope saved = {lw->loop_kind, lw->loop_ifs, lw->loop_if};
    lw->loop_kind = kind;
    lw->loop_ifs = 0;
    lw->loop_if = NULL;
    return saved;
}

void
lw_loop_leave(Lowerer *lw, const LoopScope *saved)
{
    lw->loop_kind = saved->kind;
    lw->loop_ifs = saved->ifs;
    lw->loop_if = saved->cond;
    lw->terminated = false; /* a break / continue ends only the body it is in */
}

/* After a loop of a function with early returns: a `return` in the loop broke out of it, and
 * breaks out of the loop around it in turn (the outermost being the function's one-trip loop). */
static int
pass_return_on(Lowerer *lw, const QdAst *node)
{
    if (!lw->frame->early_return) {
        return 0;
    }
    Expr flag;
    RETURN_IF_ERROR(lw_rvalue(lw, node, &lw->frame->ret_flag, &flag));
    QdInst *ifi = lw_emit(lw, QD_OP_IF, 1);
    QdInst *brk = ifi ? qd_inst_new(lw->f, QD_OP_BREAK, 0) : NULL;
    if (!brk) {
        return -1;
    }
    ifi->args[0] = flag.id;
    brk->loc = lw->loc;
    qd_region_append(ifi->regions[0], brk);
    return 0;
}

/***** while *****/

static int
ensure_no_else(Lowerer *lw, const QdAst *node, const char *what)
{
    if (node->b.len) {
        return lw_error(lw, node, QD_ERR_SYNTAX, "'else' clause for '%s' not supported in Quadrants kernels",
                        what);
    }
    return 0;
}

int
lw_while(Lowerer *lw, const QdAst *node)
{
    RETURN_IF_ERROR(ensure_no_else(lw, node, "while"));
    QdInst *loop = lw_emit(lw, QD_OP_LOOP, 0);
    if (!loop) {
        return -1;
    }
    QdRegion *saved = lw->cur;
    bool saved_top = lw->at_top;
    lw->cur = loop->regions[0];
    lw->at_top = false;
    LoopScope scope = lw_loop_enter(lw, LOOP_SERIAL);
    lw->frame->control_depth++;
    /* loop { if !cond { break }; body } */
    Expr c;
    uint32_t cond;
    int rc = lw_expr(lw, node->x, &c);
    if (rc == 0) {
        rc = lw_truth(lw, node->x, &c, &cond);
    }
    if (rc == 0) {
        QdInst *ifi = lw_emit(lw, QD_OP_IF, 1);
        QdInst *brk = ifi ? qd_inst_new(lw->f, QD_OP_BREAK, 0) : NULL;
        if (!brk) {
            rc = -1;
        } else {
            ifi->args[0] = cond;
            brk->loc = lw->loc;
            qd_region_append(ifi->regions[1], brk);
        }
    }
    if (rc == 0) {
        rc = lw_block(lw, &node->a);
    }
    lw->frame->control_depth--;
    lw_loop_leave(lw, &scope);
    lw->cur = saved;
    lw->at_top = saved_top;
    return rc < 0 ? rc : pass_return_on(lw, node);
}

/***** for loops *****/

/***** loop counter widths *****/

/* A loop counts in i32 when its bounds fit in i32, which keeps GPU index registers narrow. A
 * bound that may not fit (an i64 or u32 value, a constant outside i32) makes the counter i64,
 * a u64 bound makes it u64: the trip count and the loop variable are always exact, never a
 * truncated bound's. */

/* Whether bound e is a runtime u64 / a runtime or constant value needing more than 32 bits. */
static bool
bound_is_u64(Lowerer *lw, const Expr *e)
{
    const QdType *ty = e->kind == EX_INT || e->kind == EX_BOOL ? NULL : lw_dtype_of(lw, e);
    return ty && ty->kind == QD_TY_U64;
}

static bool
bound_is_long(Lowerer *lw, const Expr *e)
{
    if (e->kind == EX_INT || e->kind == EX_BOOL) {
        return e->ival < INT32_MIN || e->ival > INT32_MAX;
    }
    const QdType *ty = lw_dtype_of(lw, e);
    return ty && qd_type_is_int(ty) && (qd_type_bits(ty) > 32 || ty->kind == QD_TY_U32);
}

/* The counter type of a loop over [begin, end): i32, i64 or u64 (see above). A u64 bound
 * with a signed runtime bound or a negative constant has no exact common type: an error. */
static int
axis_type(Lowerer *lw, const QdAst *node, const Expr *begin, const Expr *end, const QdType **out)
{
    const Expr *b[2] = {begin, end};
    bool is_u64 = bound_is_u64(lw, begin) || bound_is_u64(lw, end);
    if (is_u64) {
        for (int k = 0; k < 2; k++) {
            const QdType *ty = lw_dtype_of(lw, b[k]);
            bool is_const = b[k]->kind == EX_INT || b[k]->kind == EX_BOOL;
            if ((is_const && b[k]->ival < 0) || (!is_const && ty && qd_type_is_signed(ty))) {
                return lw_error(lw, node, QD_ERR_TYPE,
                                "loop bounds mix u64 with a signed or negative bound; cast "
                                "them to one type");
            }
        }
        *out = qd_type_scalar(QD_TY_U64);
        return 0;
    }
    bool is_long = bound_is_long(lw, begin) || bound_is_long(lw, end);
    *out = qd_type_scalar(is_long ? QD_TY_I64 : QD_TY_I32);
    return 0;
}

/* The value of a loop bound as type ty (compile-time ints become constants). */
static int
bound_value(Lowerer *lw, const QdAst *node, const Expr *e, const QdType *ty, uint32_t *id)
{
    if (e->kind == EX_INT || e->kind == EX_BOOL) {
        *id = lw_const_int(lw, ty, e->ival);
        return *id == QD_NO_VALUE ? -1 : 0;
    }
    Expr v;
    const QdType *from = lw_dtype_of(lw, e);
    if (from && qd_type_is_float(from)) {
        /* A float bound is truncated toward zero, with a warning, as in the reference. */
        RETURN_IF_ERROR(lw_warn(lw, node, "Warning",
                                "Casting range_for boundary values from %s to %s, which may cause "
                                "numerical issues", lw_type_name(from), lw_type_name(ty)));
        RETURN_IF_ERROR(lw_convert(lw, node, e, ty, &v));
        *id = v.id;
        return 0;
    }
    RETURN_IF_ERROR(lw_rvalue(lw, node, e, &v));
    if (!qd_type_is_int(v.ty)) {
        return lw_error(lw, node, QD_ERR_TYPE, "loop bounds must be integers, got %s",
                        qd_type_scalar_name(v.ty->kind));
    }
    if (v.ty->kind != ty->kind) {
        RETURN_IF_ERROR(lw_convert(lw, node, &v, ty, &v));
    }
    *id = v.id;
    return 0;
}

/* Binds the loop targets to the per-dimension index values. */
static int
bind_targets(Lowerer *lw, const QdAst *node, const IterSpec *it, const uint32_t *idx)
{
    const QdAst *target = node->x;
    if (it->grouped) {
        if (target->kind != QD_AST_NAME) {
            return lw_error(lw, target, QD_ERR_SYNTAX, "qd.grouped needs exactly one loop target");
        }
        /* An integer vector (qd.Vector) of the indices; one element type: the widest of the
         * axes' counters. */
        const QdType *ty = qd_type_scalar(QD_TY_I32);
        for (uint32_t d = 0; d < it->ndim; d++) {
            const QdType *t = qd_value_type(lw->f, idx[d]);
            ty = t->kind == QD_TY_U64 || (t->kind == QD_TY_I64 && ty->kind == QD_TY_I32) ? t : ty;
        }
        Expr vec;
        RETURN_IF_ERROR(lw_matrix_new(lw, it->ndim, 1, true, ty, &vec));
        for (uint32_t d = 0; d < it->ndim; d++) {
            vec.items[d] = lw_value(idx[d], qd_value_type(lw->f, idx[d]));
            if (vec.items[d].ty->kind != ty->kind) {
                RETURN_IF_ERROR(lw_convert(lw, node, &vec.items[d], ty, &vec.items[d]));
            }
        }
        Var *v;
        RETURN_IF_ERROR(lw_bind(lw, target->name, &vec, &v));
        v->is_loop_var = true;
        return 0;
    }
    uint32_t ntargets = target->kind == QD_AST_TUPLE || target->kind == QD_AST_LIST ? target->a.len : 1;
    if (ntargets != it->ndim) {
        return lw_error(lw, target, QD_ERR_SYNTAX,
                        "Ndrange for loop with number of the loop variables not equal to the "
                        "dimension of the ndrange is not supported. Please check if the number of "
                        "arguments of qd.ndrange() is equal to the number of the loop variables.");
    }
    for (uint32_t d = 0; d < ntargets; d++) {
        const QdAst *t = ntargets == 1 && target->kind == QD_AST_NAME ? target : target->a.items[d];
        if (t->kind != QD_AST_NAME) {
            return lw_error(lw, t, QD_ERR_SYNTAX, "loop targets must be names");
        }
        const char *name = qd_intern(lw->m, t->name);
        Var *outer = name ? lw_lookup_local(lw, name) : NULL;
        if (outer) {
            /* a variable or a parameter of an enclosing scope */
            return lw_error(lw, t, QD_ERR_SYNTAX,
                            "Variable '%s' is already declared in the outer scope and cannot be used as "
                            "loop variable", t->name);
        }
        Expr e = lw_value(idx[d], qd_value_type(lw->f, idx[d]));
        Var *v;
        RETURN_IF_ERROR(lw_bind(lw, t->name, &e, &v));
        v->is_loop_var = true;
    }
    return 0;
}

/* Begin and extent max(end - begin, 0) of dimension d, both of the axis' counter type ty. */
static int
extent_value(Lowerer *lw, const QdAst *node, const IterSpec *it, uint32_t d, const QdType *ty,
             uint32_t *begin, uint32_t *extent)
{
    uint32_t b, e;
    RETURN_IF_ERROR(bound_value(lw, node, &it->begin[d], ty, &b));
    RETURN_IF_ERROR(bound_value(lw, node, &it->end[d], ty, &e));
    uint32_t ext;
    if (ty->kind == QD_TY_U64) {
        /* unsigned: end - min(end, begin), which is 0 rather than a wrapped difference */
        ext = lw_emit_value(lw, QD_OP_SUB, ty, e, lw_emit_value(lw, QD_OP_MIN, ty, e, b));
    } else {
        uint32_t diff = lw_emit_value(lw, QD_OP_SUB, ty, e, b);
        ext = lw_emit_value(lw, QD_OP_MAX, ty, diff, lw_const_int(lw, ty, 0));
    }
    if (ext == QD_NO_VALUE) {
        return -1;
    }
    *begin = b;
    *extent = ext;
    return 0;
}

/* The counter type of a flattened ndrange: i32 when the product of the extents is known to
 * stay below 2^31 (constant bounds of i32 axes), else i64 (u64 when an axis is u64). */
static const QdType *
flat_type(const IterSpec *it, const QdType *const *types)
{
    uint64_t count = 1;
    bool is_known = true;
    const QdType *ty = qd_type_scalar(QD_TY_I32);
    for (uint32_t d = 0; d < it->ndim; d++) {
        if (types[d]->kind == QD_TY_U64) {
            return types[d];
        }
        if (types[d]->kind != QD_TY_I32) {
            ty = types[d];
        }
        bool is_const = it->begin[d].kind == EX_INT && it->end[d].kind == EX_INT;
        int64_t extent = it->end[d].ival - it->begin[d].ival;
        if (!is_const) {
            is_known = it->ndim == 1;
        } else if (extent <= 0) {
            count = 0;
        } else if (count < ((uint64_t)1 << 31)) {
            uint64_t capped = (uint64_t)extent < ((uint64_t)1 << 31) ? (uint64_t)extent : (uint64_t)1 << 31;
            count *= capped; /* < 2^62: no overflow */
        }
    }
    if (!is_known || count >= ((uint64_t)1 << 31)) {
        ty = qd_type_scalar(QD_TY_I64);
    }
    return ty;
}

int
lw_open_loop_task(Lowerer *lw, const LoopConfig *cfg)
{
    lw->cur = NULL; /* close the serial task being filled */
    lw->task = NULL;
    QdInst *task = qd_inst_new(lw->f, QD_OP_TASK, 0);
    if (!task) {
        return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
    }
    task->imm.task.kind = QD_TASK_RANGE_FOR;
    if (cfg) {
        task->imm.task.block_dim = cfg->block_dim;
        task->imm.task.min_blocks = cfg->min_blocks_per_sm;
        task->imm.task.name = cfg->name;
    }
    task->loc = lw->loc;
    qd_region_append(lw->f->body, task);
    lw->task = task;
    lw->cur = task->regions[0];
    return 0;
}

/* The counter types of the dimensions of `it` (axis_type). */
static int
axis_types(Lowerer *lw, const QdAst *node, const IterSpec *it, const QdType **types)
{
    for (uint32_t d = 0; d < it->ndim; d++) {
        RETURN_IF_ERROR(axis_type(lw, node, &it->begin[d], &it->end[d], &types[d]));
    }
    return 0;
}

int
lw_parallel_enter(Lowerer *lw, uint32_t lo, uint32_t hi, const QdType *ty, uint32_t *ivar,
                  LoopScope *scope)
{
    QdInst *pf = lw_emit(lw, QD_OP_PARALLEL_FOR, 2);
    if (!pf || lo == QD_NO_VALUE || hi == QD_NO_VALUE) {
        return -1;
    }
    pf->args[0] = lo;
    pf->args[1] = hi;
    *ivar = qd_inst_set_result(lw->f, pf, ty, NULL);
    if (*ivar == QD_NO_VALUE) {
        return lw_nomem(lw);
    }
    lw->cur = pf->regions[0];
    lw->at_top = false;
    lw->in_parallel = true;
    lw->pfor = pf;
    lw->frame->control_depth++; /* a return inside the loop is an error */
    *scope = lw_loop_enter(lw, LOOP_PARALLEL);
    return 0;
}

void
lw_parallel_leave(Lowerer *lw, const LoopScope *scope)
{
    lw_loop_leave(lw, scope);
    lw->in_parallel = false;
    lw->pfor = NULL;
    lw->frame->control_depth--;
    lw->at_top = true;
    lw->cur = NULL; /* the task is complete */
    lw->task = NULL;
}

/* The parallel form: the open range_for task's parallel_for over the flattened space, whose
 * counter is wide enough for the product of the extents (flat_type); each coordinate is
 * narrowed back to its axis' type, which holds it. */
static int
lower_parallel_for(Lowerer *lw, const QdAst *node, const IterSpec *it)
{
    memset(&lw->loop_config, 0, sizeof(lw->loop_config));
    const QdType *types[16];
    uint32_t begin[16], extent[16];
    uint32_t lo, hi;
    RETURN_IF_ERROR(axis_types(lw, node, it, types));
    const QdType *ty = it->kind == IT_RANGE ? types[0] : flat_type(it, types);
    if (it->kind == IT_RANGE) {
        RETURN_IF_ERROR(bound_value(lw, node, &it->begin[0], ty, &lo));
        RETURN_IF_ERROR(bound_value(lw, node, &it->end[0], ty, &hi));
    } else {
        hi = lw_const_int(lw, ty, 1);
        for (uint32_t d = 0; d < it->ndim; d++) {
            RETURN_IF_ERROR(extent_value(lw, node, it, d, types[d], &begin[d], &extent[d]));
            uint32_t wide = extent[d];
            if (types[d]->kind != ty->kind) {
                RETURN_IF_ERROR(lw_convert_id(lw, node, &wide, ty));
            }
            hi = lw_emit_value(lw, QD_OP_MUL, ty, hi, wide);
            extent[d] = wide;
        }
        lo = lw_const_int(lw, ty, 0);
    }
    uint32_t ivar;
    LoopScope scope;
    RETURN_IF_ERROR(lw_parallel_enter(lw, lo, hi, ty, &ivar, &scope));
    uint32_t idx[16];
    if (it->kind == IT_RANGE) {
        idx[0] = ivar;
    } else {
        /* Decompose the linear index; axes[ndim-1] varies fastest. */
        uint32_t rest = ivar;
        for (uint32_t k = it->ndim; k-- > 0;) {
            uint32_t d = it->axes[k];
            uint32_t coord = k == 0 ? rest : lw_emit_value(lw, QD_OP_REM, ty, rest, extent[d]);
            if (k > 0) {
                rest = lw_emit_value(lw, QD_OP_DIV, ty, rest, extent[d]);
            }
            if (types[d]->kind != ty->kind) {
                RETURN_IF_ERROR(lw_convert_id(lw, node, &coord, types[d]));
            }
            idx[d] = lw_emit_value(lw, QD_OP_ADD, types[d], coord, begin[d]);
            if (idx[d] == QD_NO_VALUE) {
                return -1;
            }
        }
    }
    lw_push_scope(lw);
    int rc = bind_targets(lw, node, it, idx);
    if (rc == 0) {
        rc = lw_stmts(lw, &node->a);
    }
    lw_pop_scope(lw);
    lw_parallel_leave(lw, &scope);
    return rc;
}

/* The serial form: nested `for` loops, outermost first. */
static int
lower_serial_for(Lowerer *lw, const QdAst *node, const IterSpec *it)
{
    QdRegion *saved = lw->cur;
    bool saved_top = lw->at_top;
    uint32_t idx[16];
    memset(&lw->loop_config, 0, sizeof(lw->loop_config));
    const QdType *types[16];
    RETURN_IF_ERROR(axis_types(lw, node, it, types));
    for (uint32_t k = 0; k < it->ndim; k++) {
        uint32_t d = it->kind == IT_RANGE ? 0 : it->axes[k];
        uint32_t lo, hi;
        RETURN_IF_ERROR(bound_value(lw, node, &it->begin[d], types[d], &lo));
        RETURN_IF_ERROR(bound_value(lw, node, &it->end[d], types[d], &hi));
        QdInst *f = lw_emit(lw, QD_OP_FOR, 2);
        if (!f) {
            return -1;
        }
        f->args[0] = lo;
        f->args[1] = hi;
        idx[d] = qd_inst_set_result(lw->f, f, types[d], NULL);
        lw->cur = f->regions[0];
        lw->at_top = false;
    }
    LoopScope scope = lw_loop_enter(lw, LOOP_SERIAL);
    lw->frame->control_depth++;
    lw_push_scope(lw);
    int rc = bind_targets(lw, node, it, idx);
    if (rc == 0) {
        rc = lw_stmts(lw, &node->a);
    }
    lw_pop_scope(lw);
    lw->frame->control_depth--;
    lw_loop_leave(lw, &scope);
    lw->cur = saved;
    lw->at_top = saved_top;
    return rc < 0 ? rc : pass_return_on(lw, node);
}

/* `for x in qd.static(iterable)`: the body is lowered once per item. */
static int
lower_static_for(Lowerer *lw, const QdAst *node, const Expr *iterable)
{
    Expr items;
    if (iterable->kind == EX_TUPLE) {
        items = *iterable;
    } else {
        QdHandle h, t;
        RETURN_IF_ERROR(lw_to_handle(lw, node->y, iterable, &h));
        RETURN_IF_ERROR(lw->host->to_tuple(lw->host->self, lw->ctx, h, &t));
        RETURN_IF_ERROR(lw_from_handle(lw, node->y, t, &items));
    }
    if (lw->opt->unrolling_limit && items.nitems > lw->opt->unrolling_limit) {
        RETURN_IF_ERROR(lw_warn(lw, node, "UserWarning",
                                "A static loop unrolls %u iterations, more than unrolling_limit (%u)",
                                items.nitems, lw->opt->unrolling_limit));
    }
    LoopScope scope = lw_loop_enter(lw, LOOP_STATIC);
    bool ended = false;
    int rc = 0;
    for (uint32_t i = 0; i < items.nitems && rc == 0; i++) {
        lw_push_scope(lw);
        const QdAst *target = node->x;
        if (target->kind == QD_AST_NAME) {
            Var *v;
            rc = lw_bind(lw, target->name, &items.items[i], &v);
        } else {
            rc = lw_assign_target(lw, target, &items.items[i], true);
        }
        if (rc == 0) {
            rc = lw_stmts(lw, &node->a);
        }
        lw_pop_scope(lw);
        int ctl = lw->static_ctl;
        lw->static_ctl = 0;
        ended = lw->terminated && ctl == 0; /* a runtime jump (an early return) */
        lw->terminated = false;
        if (ctl == 1 || ended) {
            break; /* a `break`: no more copies */
        }
    }
    lw_loop_leave(lw, &scope);
    lw->terminated = ended; /* what follows the jump in the enclosing block never runs */
    return rc;
}

/* Turns the iterable of a `for` into an IterSpec (ranges, ndranges, struct-for over fields and
 * ndarrays): the iterable's kind says how (ExprOps.iterate). */
static int
iter_of(Lowerer *lw, const QdAst *node, const Expr *e, IterSpec *it)
{
    memset(it, 0, sizeof(*it));
    const ExprOps *ops = lw_expr_ops(e);
    int rc = ops->iterate ? ops->iterate(lw, node, e, it) : LW_DECLINED;
    if (rc != LW_DECLINED) {
        return rc;
    }
    return lw_error(lw, node, QD_ERR_SYNTAX,
                    "a kernel `for` iterates over range(), qd.ndrange(), qd.grouped(), a field or an "
                    "ndarray (use qd.static() to unroll a Python iterable)");
}

/* range(), qd.ndrange(), qd.grouped(): the IterSpec they made. */
static int
iter_iterate(Lowerer *lw, const QdAst *node, const Expr *e, IterSpec *it)
{
    (void)lw;
    (void)node;
    *it = *e->iter;
    return 0;
}

const ExprOps lw_iter_ops = {
    .name = "iterable",
    .iterate = iter_iterate,
};

int
lw_for(Lowerer *lw, const QdAst *node)
{
    RETURN_IF_ERROR(ensure_no_else(lw, node, "for"));
    /* `for i in a if qd.static(c) else b`: the iterable is chosen at compile time. */
    const QdAst *iter_node = node->y;
    while (iter_node->kind == QD_AST_IF_EXP && lw_is_static_call(lw, iter_node->x)) {
        bool truth;
        RETURN_IF_ERROR(lw_static_truth(lw, iter_node->x, &truth));
        iter_node = truth ? iter_node->y : iter_node->z;
    }
    Expr iterable;
    if (lw_is_static_call(lw, iter_node)) {
        RETURN_IF_ERROR(lw_expr(lw, iter_node, &iterable));
        return lower_static_for(lw, node, &iterable);
    }
    IterSpec it;
    if (!lw->at_top) {
        RETURN_IF_ERROR(lw_expr(lw, iter_node, &iterable));
        RETURN_IF_ERROR(iter_of(lw, node, &iterable, &it));
        return lower_serial_for(lw, node, &it);
    }
    /* A top-level loop gets a task; its bounds are evaluated in the task's prologue. */
    RETURN_IF_ERROR(lw_open_loop_task(lw, &lw->loop_config));
    RETURN_IF_ERROR(lw_expr(lw, iter_node, &iterable));
    RETURN_IF_ERROR(iter_of(lw, node, &iterable, &it));
    bool serialize = lw->loop_config.set && lw->loop_config.serialize;
    if (!serialize) {
        return lower_parallel_for(lw, node, &it);
    }
    /* Serialized: the task runs the loop on one thread. */
    lw->task->imm.task.kind = QD_TASK_SERIAL;
    lw->task->imm.task.block_dim = 0;
    int rc = lower_serial_for(lw, node, &it);
    lw->cur = NULL;
    lw->task = NULL;
    return rc;
}

/***** break / continue *****/

int
lw_jump(Lowerer *lw, const QdAst *node, bool is_break)
{
    const char *what = is_break ? "break" : "continue";
    switch (lw->loop_kind) {
    case LOOP_STATIC:
        /* Ends the unrolling (break) or this copy of the body (continue), which only a
         * compile-time condition can decide. */
        if (lw->loop_ifs > 0) {
            return lw_error(lw, lw->loop_if, QD_ERR_SYNTAX,
                            "You are trying to `%s` a static `for` loop, but the `%s` statement is "
                            "inside a non-static `if`. ", what, what);
        }
        lw->static_ctl = is_break ? 1 : 2;
        lw->terminated = true;
        return 0;
    case LOOP_PARALLEL:
        if (is_break) {
            return lw_error(lw, node, QD_ERR_SYNTAX, "Cannot break in the outermost loop");
        }
        break;
    case LOOP_SERIAL:
        break;
    case LOOP_NONE:
        return lw_error(lw, node, QD_ERR_SYNTAX, "'%s' outside loop", what);
    }
    if (!lw_emit(lw, is_break ? QD_OP_BREAK : QD_OP_CONTINUE, 0)) {
        return -1;
    }
    lw->terminated = true;
    return 0;
}
