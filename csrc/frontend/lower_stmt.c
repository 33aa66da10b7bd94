/* frontend/lower_stmt.c -- statements: assignment, `if`, `return`, `assert` (loops: lower_loop.c).
 *
 * The rules of spec/api.md 0.5 and 0.9: the first assignment declares a variable with the value's
 * type, later ones convert to it; variables are block-scoped; kernel arguments are immutable.
 */
#include "lower.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/***** helpers *****/

bool
lw_is_static_call(Lowerer *lw, const QdAst *node)
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

int
lw_block(Lowerer *lw, const QdAstList *body)
{
    lw_push_scope(lw);
    int rc = lw_stmts(lw, body);
    lw_pop_scope(lw);
    lw->terminated = false;
    return rc;
}

/***** assignment *****/

/* Snapshot of a value for an assignment: lvalues are loaded first (so `a, b = b, a` works). */
int
lw_snapshot(Lowerer *lw, const QdAst *node, const Expr *e, Expr *out)
{
    if (e->kind == EX_LVALUE) {
        return lw_rvalue(lw, node, e, out);
    }
    const ExprOps *ops = lw_expr_ops(e);
    if (ops->snapshot) {
        return ops->snapshot(lw, node, e, out);
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
    if (!is_static) { /* the value's kind first, then the variable's */
        const ExprOps *ops = lw_expr_ops(value);
        if (!ops->assign_name && v) {
            ops = lw_expr_ops(&v->e);
        }
        if (ops->assign_name) {
            return ops->assign_name(lw, target, v, value);
        }
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

/* The items `a, b, ... = value` assigns (ExprOps.unpack): those of a tuple or list, the elements
 * of a vector, the extents of an ndarray's shape. */
static int
unpackable(Lowerer *lw, const QdAst *target, const Expr *value, Expr *out)
{
    const ExprOps *ops = lw_expr_ops(value);
    if (ops->unpack) {
        return ops->unpack(lw, target, value, out);
    }
    return lw_error(lw, target, QD_ERR_SYNTAX, "Cannot unpack type: %s",
                    lw_is_runtime(value) ? "a runtime scalar" : "a non-sequence value");
}

int
lw_assign_target(Lowerer *lw, const QdAst *target, const Expr *value, bool is_static)
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
            RETURN_IF_ERROR(lw_assign_target(lw, target->a.items[i], &seq.items[i], is_static));
        }
        return 0;
    }
    case QD_AST_ATTRIBUTE: {
        Expr base;
        RETURN_IF_ERROR(lw_expr(lw, target->x, &base));
        const ExprOps *ops = lw_expr_ops(&base);
        if (ops->store_attribute) {
            return ops->store_attribute(lw, target, &base, value);
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
        const ExprOps *ops = lw_expr_ops(&base);
        rc = ops->store_subscript ? ops->store_subscript(lw, target, &base, target->y, value, NULL)
                                  : LW_DECLINED;
        if (rc != LW_DECLINED) {
            return rc;
        }
        /* Through the element the subscript selects: an lvalue, or a struct / vector of lvalues
         * (`f[i] = s` of a struct field, `f[i] = v` of a vector field). */
        RETURN_IF_ERROR(lw_subscript(lw, target, &base, target->y, &lv));
        const ExprOps *elem = lw_expr_ops(&lv);
        if (elem->store) {
            return elem->store(lw, target, &lv, value);
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
    bool is_static = lw_is_static_call(lw, node->x);
    Expr value, snap;
    RETURN_IF_ERROR(lw_expr(lw, node->x, &value));
    RETURN_IF_ERROR(lw_snapshot(lw, node, &value, &snap));
    for (uint32_t i = 0; i < node->a.len; i++) {
        RETURN_IF_ERROR(lw_assign_target(lw, node->a.items[i], &snap, is_static));
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
    if (!node->z) {
        /* `x: qd.i32` alone: the reference has no declaration without a value */
        return lw_error(lw, node, QD_ERR_SYNTAX, "Unsupported node \"NoneType\"");
    }
    Expr value = {0};
    RETURN_IF_ERROR(lw_expr(lw, node->z, &value));
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
    bool lvalues = target.kind == EX_LVALUE || lw_matrix_of_lvalues(&target);
    if (!lvalues && node->x->kind == QD_AST_SUBSCRIPT) {
        /* Elements a subscript could not name as lvalues (of a matrix, selected with a runtime
         * index): the container's kind updates them (under guards). */
        Expr base, lv;
        int rc = lw_subscript_base(lw, node->x, &base, &lv);
        if (rc < 0) {
            return -1;
        }
        const ExprOps *ops = lw_expr_ops(&base);
        if (rc == 0 && ops->store_subscript) {
            rc = ops->store_subscript(lw, node->x, &base, node->x->y, &value, node);
            if (rc != LW_DECLINED) {
                return rc;
            }
        }
    }
    return lw_aug_assign(lw, node, &target, &value);
}

int
lw_aug_assign(Lowerer *lw, const QdAst *node, const Expr *target, const Expr *value)
{
    const ExprOps *ops = lw_expr_ops(target);
    if (ops->aug_assign) {
        return ops->aug_assign(lw, node, target, value);
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

/***** if *****/

int
lw_static_truth(Lowerer *lw, const QdAst *cond, bool *truth)
{
    Expr c;
    RETURN_IF_ERROR(lw_expr(lw, cond, &c));
    if (lw_is_compile_time_scalar(&c)) {
        *truth = c.kind == EX_FLOAT ? c.fval != 0 : c.ival != 0;
        return 0;
    }
    if (c.kind == EX_NONE) {
        *truth = false;
        return 0;
    }
    QdHandle h;
    RETURN_IF_ERROR(lw_to_handle(lw, cond, &c, &h));
    return lw->host->truth(lw->host->self, lw->ctx, h, truth);
}

static int
lower_if(Lowerer *lw, const QdAst *node)
{
    if (lw_is_static_call(lw, node->x)) {
        bool truth;
        RETURN_IF_ERROR(lw_static_truth(lw, node->x, &truth));
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
    const QdAst *saved_if = lw->loop_if;
    lw->at_top = false;
    lw->loop_ifs++;
    lw->loop_if = node->x;
    lw->frame->control_depth++;
    int rc = 0;
    for (int s = 0; s < 2 && rc == 0; s++) {
        lw->cur = ifi->regions[s];
        rc = lw_block(lw, s == 0 ? &node->a : &node->b);
    }
    lw->frame->control_depth--;
    lw->cur = saved;
    lw->at_top = saved_top;
    lw->loop_ifs--;
    lw->loop_if = saved_if;
    return rc;
}

/***** return, assert *****/


/* Raises for a return annotation (element) that is not a dtype, struct or vector/matrix type. */
static int
check_return_annotation(Lowerer *lw, const QdAst *ann_node, const Expr *t)
{
    if (t->kind != EX_PYOBJ ||
        (t->hkind != QD_HOST_DTYPE && t->hkind != QD_HOST_STRUCT_TYPE &&
         t->hkind != QD_HOST_MATRIX_TYPE)) {
        return lw_error(lw, ann_node, QD_ERR_SYNTAX, "Invalid return type annotation");
    }
    return 0;
}

/* Kernel results for `v` returned as annotation (element) t, from result *next on. */
static int
return_value(Lowerer *lw, const QdAst *node, const QdAst *ann_node, const Expr *t, const Expr *v,
             uint32_t *next)
{
    RETURN_IF_ERROR(check_return_annotation(lw, ann_node, t));
    if (t->hkind == QD_HOST_STRUCT_TYPE) {
        return lw_struct_kernel_return(lw, node, t, v, next);
    }
    if (t->hkind == QD_HOST_MATRIX_TYPE) {
        return lw_matrix_kernel_return(lw, node, t, v, next);
    }
    if (!lw_is_compile_time_scalar(v) && v->kind != EX_VALUE && v->kind != EX_LVALUE) {
        return lw_return_type_error(lw, node, t, v);
    }
    return lw_kernel_result(lw, node, v, t->ty, next);
}

static int
lower_return(Lowerer *lw, const QdAst *node)
{
    FuncFrame *fr = lw->frame;
    if (fr->early_return) {
        return lw_early_return(lw, node);
    }
    if (fr->control_depth > 0) {
        return lw_error(lw, node, QD_ERR_SYNTAX,
                        "Return inside non-static if/for/while is not supported");
    }
    Expr value = {0};
    value.kind = EX_VOID;
    if (node->x) {
        RETURN_IF_ERROR(lw_expr(lw, node->x, &value));
    }
    if (!fr->is_kernel && fr->is_real && !fr->ret_annotation && value.kind != EX_VOID &&
        value.kind != EX_NONE) {
        return lw_error(lw, node, QD_ERR_SYNTAX,
                        "A function with a return value must be annotated with a return type, "
                        "e.g. def func() -> qd.f32");
    }
    if (!fr->is_kernel) {
        Expr snap;
        RETURN_IF_ERROR(lw_snapshot(lw, node, &value, &snap));
        if (fr->ret_annotation && lw_is_compile_time_scalar(&snap)) {
            Expr ann;
            RETURN_IF_ERROR(lw_expr(lw, fr->ret_annotation, &ann));
            if (ann.kind == EX_PYOBJ && ann.hkind == QD_HOST_DTYPE) {
                RETURN_IF_ERROR(lw_convert(lw, node, &snap, ann.ty, &snap));
            }
        } else if (fr->ret_annotation && snap.kind == EX_MATRIX) {
            /* Not an operation of the value's kind: the annotation converts, and a vector/matrix
             * type is the one non-scalar annotation that does. */
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
    uint32_t next = 0;
    if (ann.kind == EX_TUPLE) {
        if (value.kind != EX_TUPLE || value.nitems != ann.nitems) {
            for (uint32_t i = 0; i < ann.nitems; i++) {
                RETURN_IF_ERROR(check_return_annotation(lw, fr->ret_annotation, &ann.items[i]));
            }
            return lw_error(lw, node, QD_ERR_SYNTAX, "The number of returned values does not match "
                                                     "the return type annotation");
        }
        for (uint32_t i = 0; i < ann.nitems; i++) {
            RETURN_IF_ERROR(return_value(lw, node, fr->ret_annotation, &ann.items[i],
                                         &value.items[i], &next));
        }
    } else {
        RETURN_IF_ERROR(return_value(lw, node, fr->ret_annotation, &ann, &value, &next));
    }
    lw->info->nreturns = next;
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

int
lw_stmt(Lowerer *lw, const QdAst *node)
{
    lw_set_loc(lw, node);
    switch (node->kind) {
    case QD_AST_EXPR_STMT: {
        if (node->x->kind == QD_AST_CONSTANT &&
            (node->x->cst.kind == QD_CONST_STR || node->x->cst.kind == QD_CONST_ELLIPSIS)) {
            return 0; /* a docstring, or `...` */
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
        return lw_while(lw, node);
    case QD_AST_FOR:
        return lw_for(lw, node);
    case QD_AST_BREAK:
        return lw_jump(lw, node, true);
    case QD_AST_CONTINUE:
        return lw_jump(lw, node, false);
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
