/* frontend/lower_stmt.c -- statements: assignment, control flow, loops and their parallelization.
 *
 * The rules of spec/api.md 0.5 and 0.9: the first assignment declares a variable with the value's
 * type, later ones convert to it; variables are block-scoped; kernel arguments are immutable.
 * Every `for` at the kernel's top level (also inside `if qd.static(...)`, static loops and inlined
 * funcs) becomes a `range_for` task whose iterations run in parallel; a runtime `if` or `while`
 * around a loop makes it serial, as do `qd.loop_config(serialize=True)` and a `break` in its body.
 * `qd.ndrange` flattens its dimensions into one parallel loop (the last argument varies fastest),
 * and nested loops become serial `for`s.
 */
#include "lower.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/***** helpers *****/

/* Whether `node` is a call of the builtin `qd.static`. */
static bool
is_static_call(Lowerer *lw, const QdAst *node)
{
    if (!node || node->kind != QD_AST_CALL) {
        return false;
    }
    QdCtx scratch;
    qd_ctx_init(&scratch);
    QdCtx *saved = lw->ctx;
    Expr fn;
    lw->ctx = &scratch; /* a failing lookup here is not the user's error */
    int rc = lw_expr(lw, node->x, &fn);
    lw->ctx = saved;
    return rc == 0 && fn.kind == EX_BUILTIN && strcmp(fn.str, "static") == 0;
}

/* Lowers a block in a new scope; a break/continue inside ends only this block. */
static int
lower_block(Lowerer *lw, const QdAstList *body)
{
    lw_push_scope(lw);
    int rc = lw_stmts(lw, body);
    lw_pop_scope(lw);
    lw->terminated = false;
    return rc;
}

static int
ensure_no_else(Lowerer *lw, const QdAst *node, const char *what)
{
    if (node->b.len) {
        return lw_error(lw, node, QD_ERR_SYNTAX, "'else' clause for '%s' not supported in Quadrants kernels",
                        what);
    }
    return 0;
}

/***** assignment *****/

/* Snapshot of a value for an assignment: lvalues are loaded first (so `a, b = b, a` works). */
static int
snapshot(Lowerer *lw, const QdAst *node, const Expr *e, Expr *out)
{
    if (e->kind == EX_LVALUE) {
        return lw_rvalue(lw, node, e, out);
    }
    if (e->kind == EX_STRUCT || e->kind == EX_MATRIX) {
        return lw_struct_load(lw, node, e, out);
    }
    if (e->kind == EX_TUPLE) {
        *out = *e;
        out->items = QD_NEW_ARRAY(lw->arena, Expr, e->nitems ? e->nitems : 1);
        if (!out->items) {
            return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
        }
        for (uint32_t i = 0; i < e->nitems; i++) {
            RETURN_IF_ERROR(snapshot(lw, node, &e->items[i], &out->items[i]));
        }
        return 0;
    }
    *out = *e;
    return 0;
}

/* Declares or updates the variable `name` with `value`. `is_static` binds a compile-time alias. */
static int
assign_name(Lowerer *lw, const QdAst *target, const Expr *value, const QdType *annotation,
            bool is_static)
{
    const char *name = qd_intern(lw->m, target->name);
    Var *v = name ? lw_lookup_local(lw, name) : NULL;
    if (v && v->is_arg) {
        return lw_error(lw, target, QD_ERR_SYNTAX,
                        "Kernel argument \"%s\" is immutable in the kernel. If you want to change its "
                        "value, please create a new variable.", target->name);
    }
    if (v && v->is_loop_var) {
        return lw_error(lw, target, QD_ERR_SYNTAX, "Loop variable \"%s\" cannot be assigned to",
                        target->name);
    }
    if (!is_static && (value->kind == EX_STRUCT || (v && v->e.kind == EX_STRUCT))) {
        return lw_struct_assign_name(lw, target, v, value);
    }
    if (!is_static && (value->kind == EX_MATRIX || (v && v->e.kind == EX_MATRIX))) {
        return lw_matrix_assign_name(lw, target, v, value);
    }
    if (v && v->e.kind == EX_LVALUE && !is_static) {
        if (annotation && !qd_type_equal(annotation, v->e.ty)) {
            return lw_error(lw, target, QD_ERR_SYNTAX, "Static assign cannot have type overloading");
        }
        return lw_store(lw, target, &v->e, value);
    }
    bool scalar = lw_is_compile_time_scalar(value) || value->kind == EX_VALUE ||
                  value->kind == EX_LVALUE;
    if (is_static || !scalar) {
        if (annotation) {
            return lw_error(lw, target, QD_ERR_SYNTAX, "a type annotation needs a scalar value");
        }
        return lw_bind(lw, target->name, value, NULL);
    }
    /* A new runtime variable of the value's type (or the annotation's). */
    Expr rv, slot;
    if (annotation) {
        RETURN_IF_ERROR(lw_convert(lw, target, value, annotation, &rv));
    } else {
        RETURN_IF_ERROR(lw_rvalue(lw, target, value, &rv));
    }
    RETURN_IF_ERROR(lw_new_slot(lw, rv.ty, &slot));
    RETURN_IF_ERROR(lw_store(lw, target, &slot, &rv));
    return lw_bind(lw, target->name, &slot, NULL);
}

/* The items `a, b, ... = value` assigns: those of a tuple or list, the elements of a vector (not
 * of a matrix, as in the reference), the extents of an ndarray's shape. */
static int
unpackable(Lowerer *lw, const QdAst *target, const Expr *value, Expr *out)
{
    switch (value->kind) {
    case EX_TUPLE:
        *out = *value;
        return 0;
    case EX_MATRIX:
        if (!value->is_vector) {
            return lw_error(lw, target, QD_ERR_COMPILATION,
                            "ValueError: Matrices with more than one columns cannot be unpacked");
        }
        memset(out, 0, sizeof(*out));
        out->kind = EX_TUPLE;
        out->items = value->items;
        out->nitems = value->nitems;
        return 0;
    case EX_SHAPE:
        return lw_shape_tuple(lw, value, out);
    default:
        return lw_error(lw, target, QD_ERR_SYNTAX, "Cannot unpack type: %s",
                        lw_is_runtime(value) ? "a runtime scalar" : "a non-sequence value");
    }
}

static int
assign_target(Lowerer *lw, const QdAst *target, const Expr *value, bool is_static)
{
    switch (target->kind) {
    case QD_AST_NAME:
        return assign_name(lw, target, value, NULL, is_static);
    case QD_AST_TUPLE:
    case QD_AST_LIST: {
        Expr seq;
        RETURN_IF_ERROR(unpackable(lw, target, value, &seq));
        if (seq.nitems != target->a.len) {
            return lw_error(lw, target, QD_ERR_SYNTAX,
                            "The number of targets is not equal to value length");
        }
        for (uint32_t i = 0; i < target->a.len; i++) {
            RETURN_IF_ERROR(assign_target(lw, target->a.items[i], &seq.items[i], is_static));
        }
        return 0;
    }
    case QD_AST_ATTRIBUTE: {
        Expr base;
        RETURN_IF_ERROR(lw_expr(lw, target->x, &base));
        if (base.kind == EX_STRUCT) {
            return lw_struct_store_attribute(lw, target, &base, value);
        }
        if (base.kind == EX_MATRIX) {
            return lw_matrix_store_attribute(lw, target, &base, value);
        }
        return lw_error(lw, target, QD_ERR_SYNTAX, "cannot assign to this attribute");
    }
    case QD_AST_SUBSCRIPT: {
        if (is_static) {
            return lw_error(lw, target, QD_ERR_SYNTAX, "Static assign cannot be used on elements in arrays");
        }
        Expr base, lv;
        int rc = lw_subscript_base(lw, target, &base, &lv);
        if (rc != 0) {
            return rc < 0 ? -1 : lw_store(lw, target, &lv, value); /* obj.r[i], r unpacked */
        }
        if (base.kind == EX_TUPLE || (base.kind == EX_DICT && !lw_is_buffer_view(&base))) {
            /* An element of a kernel-scope list or dict: rebound to the new value. */
            Expr *item = lw_container_item(lw, target, &base, target->y);
            if (!item) {
                return -1;
            }
            *item = *value;
            return 0;
        }
        if (base.kind == EX_MATRIX) {
            return lw_matrix_store_subscript(lw, target, &base, target->y, value, NULL);
        }
        RETURN_IF_ERROR(lw_subscript(lw, target, &base, target->y, &lv));
        if (lv.kind == EX_STRUCT) {
            return lw_struct_store(lw, target, &lv, value); /* f[i] = s of a struct field */
        }
        if (lv.kind == EX_MATRIX) {
            return lw_matrix_store(lw, target, &lv, value); /* f[i] = v of a vector field */
        }
        if (lv.kind != EX_LVALUE) {
            return lw_error(lw, target, QD_ERR_SYNTAX, "cannot assign to this subscript");
        }
        return lw_store(lw, target, &lv, value);
    }
    case QD_AST_STARRED:
        return lw_error(lw, target, QD_ERR_SYNTAX, "Unsupported node \"Starred\"");
    default:
        return lw_error(lw, target, QD_ERR_SYNTAX, "cannot assign to this expression");
    }
}

static int
lower_assign(Lowerer *lw, const QdAst *node)
{
    bool is_static = is_static_call(lw, node->x);
    Expr value, snap;
    RETURN_IF_ERROR(lw_expr(lw, node->x, &value));
    RETURN_IF_ERROR(snapshot(lw, node, &value, &snap));
    for (uint32_t i = 0; i < node->a.len; i++) {
        RETURN_IF_ERROR(assign_target(lw, node->a.items[i], &snap, is_static));
    }
    return 0;
}

static int
lower_ann_assign(Lowerer *lw, const QdAst *node)
{
    Expr ann;
    RETURN_IF_ERROR(lw_expr(lw, node->y, &ann));
    if (ann.kind != EX_PYOBJ || ann.hkind != QD_HOST_DTYPE) {
        return lw_error(lw, node->y, QD_ERR_SYNTAX, "a variable annotation must be a scalar type");
    }
    if (node->x->kind != QD_AST_NAME) {
        return lw_error(lw, node, QD_ERR_SYNTAX, "an annotated assignment needs a plain name");
    }
    Expr value = {0};
    if (node->z) {
        RETURN_IF_ERROR(lw_expr(lw, node->z, &value));
    } else {
        value.kind = EX_INT;
    }
    return assign_name(lw, node->x, &value, ann.ty, false);
}

static QdOp
atomic_op_for(int op)
{
    switch (op) {
    case QD_BIN_ADD: return QD_OP_ATOMIC_ADD;
    case QD_BIN_SUB: return QD_OP_ATOMIC_SUB;
    case QD_BIN_BITAND: return QD_OP_ATOMIC_AND;
    case QD_BIN_BITOR: return QD_OP_ATOMIC_OR;
    case QD_BIN_BITXOR: return QD_OP_ATOMIC_XOR;
    default: return QD_OP_COUNT_;
    }
}

static int aug_assign_scalar(Lowerer *lw, const QdAst *node, const Expr *target, const Expr *value);

static int
lower_aug_assign(Lowerer *lw, const QdAst *node)
{
    Expr target, value;
    if (node->x->kind == QD_AST_NAME) {
        const char *name = qd_intern(lw->m, node->x->name);
        Var *v = name ? lw_lookup_local(lw, name) : NULL;
        if (v && v->is_arg) {
            return lw_error(lw, node->x, QD_ERR_SYNTAX,
                            "Kernel argument \"%s\" is immutable in the kernel. If you want to change "
                            "its value, please create a new variable.", node->x->name);
        }
    }
    RETURN_IF_ERROR(lw_expr(lw, node->x, &target));
    RETURN_IF_ERROR(lw_expr(lw, node->y, &value));
    lw_set_loc(lw, node);
    bool lvalues = target.kind == EX_LVALUE || target.kind == EX_MATRIX;
    for (uint32_t i = 0; target.kind == EX_MATRIX && i < target.nitems; i++) {
        lvalues &= target.items[i].kind == EX_LVALUE;
    }
    if (!lvalues && node->x->kind == QD_AST_SUBSCRIPT) {
        /* Elements of a matrix selected with a runtime index: updated under guards. */
        Expr base, lv;
        int rc = lw_subscript_base(lw, node->x, &base, &lv);
        if (rc < 0) {
            return -1;
        }
        if (rc == 0 && base.kind == EX_MATRIX) {
            return lw_matrix_store_subscript(lw, node->x, &base, node->x->y, &value, node);
        }
    }
    return lw_aug_assign(lw, node, &target, &value);
}

int
lw_aug_assign(Lowerer *lw, const QdAst *node, const Expr *target, const Expr *value)
{
    if (target->kind == EX_MATRIX) {
        return lw_matrix_aug_assign(lw, node, target, value);
    }
    return aug_assign_scalar(lw, node, target, value);
}

static int
aug_assign_scalar(Lowerer *lw, const QdAst *node, const Expr *target_expr, const Expr *value_expr)
{
    Expr target = *target_expr, value = *value_expr;
    if (target.kind != EX_LVALUE) {
        /* A compile-time binding: rebind to the combined value. */
        if (node->x->kind != QD_AST_NAME) {
            return lw_error(lw, node, QD_ERR_SYNTAX, "cannot assign to this expression");
        }
        Expr r;
        RETURN_IF_ERROR(lw_binary(lw, node, node->op, &target, &value, &r));
        return assign_name(lw, node->x, &r, NULL, false);
    }
    QdOp aop = atomic_op_for(node->op);
    if (aop != QD_OP_COUNT_) {
        /* `+= -= &= |= ^=` are atomic: the value is converted to the target's type first. */
        if ((aop == QD_OP_ATOMIC_AND || aop == QD_OP_ATOMIC_OR || aop == QD_OP_ATOMIC_XOR) &&
            (!qd_type_is_int(target.ty) || (lw_dtype_of(lw, &value) && qd_type_is_float(lw_dtype_of(lw, &value))))) {
            return lw_error(lw, node, QD_ERR_TYPE, "bitwise operations need integer operands");
        }
        Expr v;
        RETURN_IF_ERROR(lw_convert(lw, node, &value, target.ty, &v));
        if (target.is_global) {
            QdInst *inst = lw_emit(lw, aop, 2);
            if (!inst) {
                return -1;
            }
            inst->args[0] = target.id;
            inst->args[1] = v.id;
            return qd_inst_set_result(lw->f, inst, target.ty, NULL) == QD_NO_VALUE ? -1 : 0;
        }
        static const QdOp plain[] = {[QD_OP_ATOMIC_ADD] = QD_OP_ADD, [QD_OP_ATOMIC_SUB] = QD_OP_SUB,
                                     [QD_OP_ATOMIC_AND] = QD_OP_AND, [QD_OP_ATOMIC_OR] = QD_OP_OR,
                                     [QD_OP_ATOMIC_XOR] = QD_OP_XOR};
        Expr old;
        RETURN_IF_ERROR(lw_rvalue(lw, node, &target, &old));
        uint32_t id = lw_emit_value(lw, plain[aop], target.ty, old.id, v.id);
        if (id == QD_NO_VALUE) {
            return -1;
        }
        Expr r = {0};
        r.kind = EX_VALUE;
        r.id = id;
        r.ty = target.ty;
        return lw_store(lw, node, &target, &r);
    }
    Expr old, r;
    RETURN_IF_ERROR(lw_rvalue(lw, node, &target, &old));
    RETURN_IF_ERROR(lw_binary(lw, node, node->op, &old, &value, &r));
    return lw_store(lw, node, &target, &r);
}

/***** if / while *****/

static int
lower_if(Lowerer *lw, const QdAst *node)
{
    if (is_static_call(lw, node->x)) {
        Expr c;
        RETURN_IF_ERROR(lw_expr(lw, node->x, &c));
        bool truth;
        if (lw_is_compile_time_scalar(&c)) {
            truth = c.kind == EX_FLOAT ? c.fval != 0 : c.ival != 0;
        } else if (c.kind == EX_NONE) {
            truth = false;
        } else {
            QdHandle h;
            RETURN_IF_ERROR(lw_to_handle(lw, node->x, &c, &h));
            RETURN_IF_ERROR(lw->host->truth(lw->host->self, lw->ctx, h, &truth));
        }
        /* Only the taken branch exists; it stays at the same level (top level stays top). */
        return lw_stmts(lw, truth ? &node->a : &node->b);
    }
    Expr c;
    uint32_t cond;
    RETURN_IF_ERROR(lw_expr(lw, node->x, &c));
    RETURN_IF_ERROR(lw_truth(lw, node->x, &c, &cond));
    lw_set_loc(lw, node);
    QdInst *ifi = lw_emit(lw, QD_OP_IF, 1);
    if (!ifi) {
        return -1;
    }
    ifi->args[0] = cond;
    QdRegion *saved = lw->cur;
    bool saved_top = lw->at_top;
    int saved_static = lw->static_loops;
    lw->at_top = false;
    lw->static_loops = 0;
    lw->frame->control_depth++;
    int rc = 0;
    for (int s = 0; s < 2 && rc == 0; s++) {
        lw->cur = ifi->regions[s];
        rc = lower_block(lw, s == 0 ? &node->a : &node->b);
    }
    lw->frame->control_depth--;
    lw->cur = saved;
    lw->at_top = saved_top;
    lw->static_loops = saved_static;
    return rc;
}

static int
lower_while(Lowerer *lw, const QdAst *node)
{
    RETURN_IF_ERROR(ensure_no_else(lw, node, "while"));
    QdInst *loop = lw_emit(lw, QD_OP_LOOP, 0);
    if (!loop) {
        return -1;
    }
    QdRegion *saved = lw->cur;
    bool saved_top = lw->at_top;
    int saved_static = lw->static_loops;
    lw->cur = loop->regions[0];
    lw->at_top = false;
    lw->static_loops = 0;
    lw->loop_depth++;
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
        rc = lower_block(lw, &node->a);
    }
    lw->frame->control_depth--;
    lw->loop_depth--;
    lw->cur = saved;
    lw->at_top = saved_top;
    lw->static_loops = saved_static;
    return rc;
}

/***** for loops *****/

/* Whether a loop body breaks out of this loop directly (not from a nested loop). */
static bool
body_breaks(const QdAstList *body)
{
    for (uint32_t i = 0; i < body->len; i++) {
        const QdAst *s = body->items[i];
        if (s->kind == QD_AST_BREAK) {
            return true;
        }
        if (s->kind == QD_AST_IF || s->kind == QD_AST_WITH) {
            if (body_breaks(&s->a) || body_breaks(&s->b)) {
                return true;
            }
        }
    }
    return false;
}

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

static Expr
typed_value(uint32_t id, const QdType *ty)
{
    Expr e = {0};
    e.kind = EX_VALUE;
    e.id = id;
    e.ty = ty;
    return e;
}

static Expr
i32_value(uint32_t id)
{
    return typed_value(id, qd_type_scalar(QD_TY_I32));
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
            vec.items[d] = typed_value(idx[d], qd_value_type(lw->f, idx[d]));
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
                        "Ndrange for loop with number of targets (%u) not equal to number of "
                        "dimensions (%u)", ntargets, it->ndim);
    }
    for (uint32_t d = 0; d < ntargets; d++) {
        const QdAst *t = ntargets == 1 && target->kind == QD_AST_NAME ? target : target->a.items[d];
        if (t->kind != QD_AST_NAME) {
            return lw_error(lw, t, QD_ERR_SYNTAX, "loop targets must be names");
        }
        const char *name = qd_intern(lw->m, t->name);
        Var *outer = name ? lw_lookup_local(lw, name) : NULL;
        if (outer && outer->e.kind == EX_LVALUE) {
            return lw_error(lw, t, QD_ERR_SYNTAX,
                            "Variable \"%s\" is already declared; it cannot be reused as a loop target",
                            t->name);
        }
        Expr e = typed_value(idx[d], qd_value_type(lw->f, idx[d]));
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

/* Opens a task for a top-level loop; the loop's bounds are computed in its prologue. */
static int
open_loop_task(Lowerer *lw)
{
    lw->cur = NULL; /* close the serial task being filled */
    lw->task = NULL;
    QdInst *task = qd_inst_new(lw->f, QD_OP_TASK, 0);
    if (!task) {
        return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
    }
    task->imm.task.kind = QD_TASK_RANGE_FOR;
    task->imm.task.block_dim = lw->loop_config.block_dim;
    task->imm.task.name = lw->loop_config.name;
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
    QdInst *pf = lw_emit(lw, QD_OP_PARALLEL_FOR, 2);
    if (!pf || lo == QD_NO_VALUE || hi == QD_NO_VALUE) {
        return -1;
    }
    pf->args[0] = lo;
    pf->args[1] = hi;
    uint32_t ivar = qd_inst_set_result(lw->f, pf, ty, NULL);
    lw->cur = pf->regions[0];
    lw->at_top = false;
    lw->in_parallel = true;
    lw->pfor = pf;
    lw->frame->control_depth++; /* a return inside the loop is an error */
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
    lw->terminated = false;
    lw->in_parallel = false;
    lw->pfor = NULL;
    lw->frame->control_depth--;
    lw->at_top = true;
    lw->cur = NULL;
    lw->task = NULL;
    return rc;
}

/* The serial form: nested `for` loops, outermost first. */
static int
lower_serial_for(Lowerer *lw, const QdAst *node, const IterSpec *it)
{
    QdRegion *saved = lw->cur;
    bool saved_top = lw->at_top;
    int saved_static = lw->static_loops;
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
    lw->static_loops = 0;
    lw->loop_depth++;
    lw->frame->control_depth++;
    lw_push_scope(lw);
    int rc = bind_targets(lw, node, it, idx);
    if (rc == 0) {
        rc = lw_stmts(lw, &node->a);
    }
    lw_pop_scope(lw);
    lw->terminated = false;
    lw->frame->control_depth--;
    lw->loop_depth--;
    lw->cur = saved;
    lw->at_top = saved_top;
    lw->static_loops = saved_static;
    return rc;
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
    lw->static_loops++;
    int rc = 0;
    for (uint32_t i = 0; i < items.nitems && rc == 0; i++) {
        lw_push_scope(lw);
        const QdAst *target = node->x;
        if (target->kind == QD_AST_NAME) {
            Var *v;
            rc = lw_bind(lw, target->name, &items.items[i], &v);
        } else {
            rc = assign_target(lw, target, &items.items[i], true);
        }
        if (rc == 0) {
            rc = lw_stmts(lw, &node->a);
        }
        lw_pop_scope(lw);
        lw->terminated = false;
        int ctl = lw->static_ctl;
        lw->static_ctl = 0;
        if (ctl == 1) {
            break;
        }
    }
    lw->static_loops--;
    return rc;
}

/* Turns the iterable of a `for` into an IterSpec (ranges, ndranges, struct-for over fields). */
static int
iter_of(Lowerer *lw, const QdAst *node, const Expr *e, IterSpec *it)
{
    if (e->kind == EX_ITER) {
        *it = *e->iter;
        return 0;
    }
    memset(it, 0, sizeof(*it));
    /* Struct-for over a struct or vector/matrix field: over the shape of its leaves. */
    Expr leaf;
    RETURN_IF_ERROR(lw_shape_leaf(lw, node, e, &leaf));
    e = &leaf;
    if (e->kind == EX_FIELD || e->kind == EX_NDARRAY) {
        /* Struct-for: one index per dimension over the shape. */
        it->kind = IT_NDRANGE;
        it->ndim = e->kind == EX_FIELD ? e->view->ndim : e->ndim;
        for (uint32_t d = 0; d < it->ndim; d++) {
            /* canonical indices; a permuted ndarray is walked in its physical order */
            it->axes[d] = e->kind == EX_NDARRAY && e->layout ? e->layout[d] : d;
            it->begin[d].kind = EX_INT;
            if (e->kind == EX_FIELD) {
                it->begin[d].ival = e->view->offset[d];
                it->end[d].kind = EX_INT;
                it->end[d].ival = e->view->offset[d] + e->view->shape[d];
            } else {
                uint32_t extent = lw_ndarray_extent(lw, e, d);
                if (extent == QD_NO_VALUE) {
                    return -1;
                }
                it->end[d] = i32_value(extent);
            }
        }
        return 0;
    }
    return lw_error(lw, node, QD_ERR_SYNTAX,
                    "a kernel `for` iterates over range(), qd.ndrange(), qd.grouped(), a field or an "
                    "ndarray (use qd.static() to unroll a Python iterable)");
}

static int
lower_for(Lowerer *lw, const QdAst *node)
{
    RETURN_IF_ERROR(ensure_no_else(lw, node, "for"));
    Expr iterable;
    if (is_static_call(lw, node->y)) {
        RETURN_IF_ERROR(lw_expr(lw, node->y, &iterable));
        return lower_static_for(lw, node, &iterable);
    }
    IterSpec it;
    if (!lw->at_top) {
        RETURN_IF_ERROR(lw_expr(lw, node->y, &iterable));
        RETURN_IF_ERROR(iter_of(lw, node, &iterable, &it));
        return lower_serial_for(lw, node, &it);
    }
    /* A top-level loop gets a task; its bounds are evaluated in the task's prologue. */
    RETURN_IF_ERROR(open_loop_task(lw));
    RETURN_IF_ERROR(lw_expr(lw, node->y, &iterable));
    RETURN_IF_ERROR(iter_of(lw, node, &iterable, &it));
    bool serialize = lw->loop_config.set && lw->loop_config.serialize;
    if (!serialize && !body_breaks(&node->a)) {
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

/***** return, assert *****/

static int
lower_return(Lowerer *lw, const QdAst *node)
{
    FuncFrame *fr = lw->frame;
    if (fr->control_depth > 0) {
        return lw_error(lw, node, QD_ERR_SYNTAX,
                        "Return inside non-static if/for/while is not supported");
    }
    Expr value = {0};
    value.kind = EX_VOID;
    if (node->x) {
        RETURN_IF_ERROR(lw_expr(lw, node->x, &value));
    }
    if (!fr->is_kernel) {
        Expr snap;
        RETURN_IF_ERROR(snapshot(lw, node, &value, &snap));
        if (fr->ret_annotation && lw_is_compile_time_scalar(&snap)) {
            Expr ann;
            RETURN_IF_ERROR(lw_expr(lw, fr->ret_annotation, &ann));
            if (ann.kind == EX_PYOBJ && ann.hkind == QD_HOST_DTYPE) {
                RETURN_IF_ERROR(lw_convert(lw, node, &snap, ann.ty, &snap));
            }
        } else if (fr->ret_annotation && snap.kind == EX_MATRIX) {
            Expr ann;
            RETURN_IF_ERROR(lw_expr(lw, fr->ret_annotation, &ann));
            if (ann.kind == EX_PYOBJ && ann.hkind == QD_HOST_MATRIX_TYPE) {
                MatrixCall mc = {&snap, 1, NULL, NULL, 0}; /* converted to the annotated type */
                RETURN_IF_ERROR(lw_matrix_type_call(lw, node, &ann, &mc, &snap));
            }
        } else if (fr->ret_annotation && snap.kind == EX_VALUE) {
            Expr ann;
            RETURN_IF_ERROR(lw_expr(lw, fr->ret_annotation, &ann));
            if (ann.kind == EX_PYOBJ && ann.hkind == QD_HOST_DTYPE) {
                RETURN_IF_ERROR(lw_convert(lw, node, &snap, ann.ty, &snap));
            }
        }
        fr->ret = snap;
        fr->returned = true;
        return 0;
    }
    if (!fr->ret_annotation) {
        if (value.kind == EX_VOID || value.kind == EX_NONE) {
            fr->returned = true;
            return 0;
        }
        return lw_error(lw, node, QD_ERR_SYNTAX,
                        "A kernel with a return value must be annotated with a return type, e.g. -> qd.f32");
    }
    Expr ann;
    if (fr->ret_value) {
        RETURN_IF_ERROR(lw_from_handle(lw, fr->ret_annotation, fr->ret_value, &ann));
        QdHandle args;
        if (ann.kind == EX_PYOBJ && ann.hkind != QD_HOST_DTYPE &&
            lw->host->getattr(lw->host->self, lw->ctx, ann.h, "__args__", &args) == 0) {
            /* tuple[qd.f32, qd.i32]: the element types. */
            RETURN_IF_ERROR(lw_from_handle(lw, fr->ret_annotation, args, &ann));
        }
    } else {
        const QdAst *ann_node = fr->ret_annotation;
        if (ann_node->kind == QD_AST_SUBSCRIPT) {
            /* `-> tuple[qd.f32, qd.i32]`: the element types. */
            ann_node = ann_node->y;
        }
        RETURN_IF_ERROR(lw_expr(lw, ann_node, &ann));
    }
    lw_set_loc(lw, node);
    if (ann.kind == EX_PYOBJ && ann.hkind == QD_HOST_STRUCT_TYPE) {
        RETURN_IF_ERROR(lw_struct_kernel_return(lw, node, &ann, &value));
        fr->returned = true;
        return 0;
    }
    if (ann.kind == EX_PYOBJ && ann.hkind == QD_HOST_MATRIX_TYPE) {
        RETURN_IF_ERROR(lw_matrix_kernel_return(lw, node, &ann, &value));
        fr->returned = true;
        return 0;
    }
    uint32_t n = ann.kind == EX_TUPLE ? ann.nitems : 1;
    if (n > 16) {
        return lw_error(lw, node, QD_ERR_SYNTAX, "a kernel returns at most 16 values");
    }
    for (uint32_t i = 0; i < n; i++) {
        const Expr *t = ann.kind == EX_TUPLE ? &ann.items[i] : &ann;
        const Expr *v = value.kind == EX_TUPLE ? (i < value.nitems ? &value.items[i] : NULL)
                                               : (n == 1 ? &value : NULL);
        if (t->kind != EX_PYOBJ || t->hkind != QD_HOST_DTYPE) {
            return lw_error(lw, fr->ret_annotation, QD_ERR_SYNTAX, "Invalid return type annotation");
        }
        if (!v || (value.kind == EX_TUPLE && value.nitems != n)) {
            return lw_error(lw, node, QD_ERR_SYNTAX, "The number of returned values does not match "
                                                     "the return type annotation");
        }
        Expr conv;
        RETURN_IF_ERROR(lw_convert(lw, node, v, t->ty, &conv));
        QdInst *inst = lw_emit(lw, QD_OP_KERNEL_RET, 1);
        if (!inst) {
            return -1;
        }
        inst->args[0] = conv.id;
        inst->imm.i = i;
        lw->info->returns[i] = t->ty->kind;
    }
    lw->info->nreturns = n;
    fr->returned = true;
    return 0;
}

static int
lower_assert(Lowerer *lw, const QdAst *node)
{
    if (!lw->opt->debug) {
        /* Not checked without debug=True, but a float condition is still a type error. The
         * condition's instructions are dead and removed by dce. */
        Expr c, v;
        RETURN_IF_ERROR(lw_expr(lw, node->x, &c));
        if (c.kind == EX_FLOAT) {
            return lw_error(lw, node->x, QD_ERR_TYPE, "assert conditions must be integers; got a float");
        }
        if (lw_is_runtime(&c)) {
            RETURN_IF_ERROR(lw_rvalue(lw, node->x, &c, &v));
            if (!qd_type_is_int(v.ty)) {
                return lw_error(lw, node->x, QD_ERR_TYPE, "assert conditions must be integers; got %s",
                                qd_type_scalar_name(v.ty->kind));
            }
        }
        return 0;
    }
    Expr c;
    uint32_t cond;
    RETURN_IF_ERROR(lw_expr(lw, node->x, &c));
    if (lw_is_compile_time_scalar(&c) && c.kind != EX_FLOAT) {
        Expr v;
        RETURN_IF_ERROR(lw_rvalue(lw, node->x, &c, &v));
        cond = v.id;
    } else {
        Expr v;
        RETURN_IF_ERROR(lw_rvalue(lw, node->x, &c, &v));
        if (!qd_type_is_int(v.ty)) {
            return lw_error(lw, node->x, QD_ERR_TYPE, "assert conditions must be integers; got %s",
                            qd_type_scalar_name(v.ty->kind));
        }
        cond = v.id;
    }
    /* The message is a print format: "file:line: " (percent signs doubled) + the message. */
    QdSbuf fmt;
    qd_sbuf_init(&fmt);
    QdIdVec values = {0};
    char where[64];
    snprintf(where, sizeof(where), ":%u: ", node->line);
    for (const char *f = lw->frame->file ? lw->frame->file : "?"; *f; f++) {
        qd_sbuf_putn(&fmt, *f == '%' ? "%%" : f, *f == '%' ? 2 : 1);
    }
    qd_sbuf_puts(&fmt, where);
    int rc = node->y ? lw_format_message(lw, node->y, &fmt, &values) : 0;
    char *text = qd_sbuf_take(&fmt);
    if (text && values.len == 0) {
        /* Nothing to format: the message is used as written ("%%" back to "%"). */
        char *w = text;
        for (const char *r = text; *r; r++) {
            *w++ = *r;
            if (r[0] == '%' && r[1] == '%') {
                r++;
            }
        }
        *w = '\0';
    }
    QdInst *inst = rc == 0 && text ? lw_emit(lw, QD_OP_ASSERT, 1 + values.len) : NULL;
    if (inst) {
        inst->args[0] = cond;
        if (values.len) {
            memcpy(inst->args + 1, values.data, sizeof(uint32_t) * values.len);
        }
        inst->imm.str = qd_arena_strdup(lw->arena, text);
    }
    free(text);
    return inst && inst->imm.str ? 0 : -1;
}

/***** dispatch *****/

static int
lower_jump(Lowerer *lw, const QdAst *node, bool is_break)
{
    if (lw->static_loops > 0) {
        /* Directly inside a static loop (no runtime control flow in between): compile time. */
        lw->static_ctl = is_break ? 1 : 2;
        lw->terminated = true;
        return 0;
    }
    if (lw->loop_depth == 0) {
        return lw_error(lw, node, QD_ERR_SYNTAX, "'%s' outside a serial loop",
                        is_break ? "break" : "continue");
    }
    QdInst *inst = lw_emit(lw, is_break ? QD_OP_BREAK : QD_OP_CONTINUE, 0);
    if (!inst) {
        return -1;
    }
    lw->terminated = true;
    return 0;
}

int
lw_stmt(Lowerer *lw, const QdAst *node)
{
    lw_set_loc(lw, node);
    switch (node->kind) {
    case QD_AST_EXPR_STMT: {
        if (node->x->kind == QD_AST_CONSTANT && node->x->cst.kind == QD_CONST_STR) {
            return 0; /* a docstring */
        }
        Expr e;
        return lw_expr(lw, node->x, &e);
    }
    case QD_AST_PASS:
        return 0;
    case QD_AST_ASSIGN:
        return lower_assign(lw, node);
    case QD_AST_ANN_ASSIGN:
        return lower_ann_assign(lw, node);
    case QD_AST_AUG_ASSIGN:
        return lower_aug_assign(lw, node);
    case QD_AST_IF:
        return lower_if(lw, node);
    case QD_AST_WHILE:
        return lower_while(lw, node);
    case QD_AST_FOR:
        return lower_for(lw, node);
    case QD_AST_BREAK:
        return lower_jump(lw, node, true);
    case QD_AST_CONTINUE:
        return lower_jump(lw, node, false);
    case QD_AST_RETURN:
        return lower_return(lw, node);
    case QD_AST_ASSERT:
        return lower_assert(lw, node);
    case QD_AST_FUNCTION_DEF:
        return lw_error(lw, node, QD_ERR_SYNTAX, "Function definition is not allowed in 'qd.kernel'");
    case QD_AST_WITH:
        return lw_error(lw, node, QD_ERR_SYNTAX, "Unsupported node \"With\"");
    case QD_AST_UNSUPPORTED:
        return lw_error(lw, node, QD_ERR_SYNTAX, "Unsupported node \"%s\"", node->name ? node->name : "?");
    default:
        return lw_error(lw, node, QD_ERR_SYNTAX, "Unsupported statement");
    }
}
