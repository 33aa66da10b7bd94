/* frontend/lower_realfunc.c -- @qd.real_func: early returns, and recursion as called functions.
 *
 * A @qd.real_func is inlined like a @qd.func, except when it calls itself (directly or through
 * other funcs): a call reached while the same real_func is being lowered becomes a `call` of a
 * function of the module, lowered once from the definition. Calls of it inside its own body are
 * calls again, so the recursion happens at run time; the inline pass leaves calls of such
 * functions alone.
 *
 * Values cross the call flattened into scalars: a parameter of a scalar, vector/matrix, struct
 * (or tuple) type is one function parameter per scalar leaf, rebuilt into a variable inside. A
 * scalar result is the call's result; any other result (vector, matrix, struct, tuple) comes
 * back through local arrays the caller allocates, one `ptr<[n x T], local>` parameter after the
 * others per scalar type T of the result's leaves, in the order the types first occur, which
 * the function fills before its `ret`. An ndarray parameter is passed as it is (a parameter of
 * the ndarray's type); the function is lowered once per distinct ndarray type of its arguments.
 *
 * A real_func may `return` from inside runtime if/for/while: its body is lowered inside a one-trip
 * `loop` that such a `return` leaves (lw_early_return_body).
 */
#include "lower.h"

#include <stdio.h>
#include <string.h>

/* Instances of recursive real_funcs lowered one inside another, at most. */
#define MAX_REAL_NESTING 100

/***** values as scalar leaves *****/

/* A copy of shape or value `e` with fresh item arrays (the arena's). */
static int
copy_items(Lowerer *lw, const Expr *e, Expr *out)
{
    *out = *e;
    if (e->kind == EX_STRUCT || e->kind == EX_TUPLE || e->kind == EX_MATRIX) {
        out->items = QD_NEW_ARRAY(lw->arena, Expr, e->nitems ? e->nitems : 1);
        if (!out->items) {
            return lw_nomem(lw);
        }
    }
    return 0;
}

/* The shape of value `v` of a known type: the same tree of structs, tuples and vectors/matrices,
 * each scalar leaf an EX_VALUE of its type without a value (`elem`: the element type of the
 * enclosing vector/matrix, NULL outside one). */
static int
shape_of(Lowerer *lw, const Expr *v, const QdType *elem, Expr *out)
{
    if (v->kind == EX_STRUCT || v->kind == EX_TUPLE || v->kind == EX_MATRIX) {
        RETURN_IF_ERROR(copy_items(lw, v, out));
        for (uint32_t i = 0; i < v->nitems; i++) {
            RETURN_IF_ERROR(shape_of(lw, &v->items[i], v->kind == EX_MATRIX ? v->ty : NULL,
                                     &out->items[i]));
        }
        return 0;
    }
    *out = lw_value(QD_NO_VALUE, elem ? elem : v->ty);
    return out->ty ? 0 : lw_error(lw, NULL, QD_ERR_INTERNAL, "a struct member without a type");
}

/* The shape (shape_of) of a value of annotation `ann`: a scalar type, a vector/matrix type with
 * a dtype, a struct type, or a tuple of these. 1 when `ann` is none of them. */
static int
annotation_shape(Lowerer *lw, const QdAst *node, const Expr *ann, Expr *out)
{
    if (ann->kind == EX_TUPLE) {
        RETURN_IF_ERROR(copy_items(lw, ann, out));
        for (uint32_t i = 0; i < ann->nitems; i++) {
            int rc = annotation_shape(lw, node, &ann->items[i], &out->items[i]);
            if (rc != 0) {
                return rc;
            }
        }
        return 0;
    }
    if (ann->kind != EX_PYOBJ) {
        return 1;
    }
    if (ann->hkind == QD_HOST_DTYPE) {
        *out = lw_value(QD_NO_VALUE, ann->ty);
        return 0;
    }
    Expr zero;
    if (ann->hkind == QD_HOST_MATRIX_TYPE) {
        uint32_t n, m;
        bool is_vector;
        const QdType *ty;
        RETURN_IF_ERROR(lw_matrix_type_info(lw, node, ann->h, &n, &m, &is_vector, &ty));
        if (!ty) {
            return 1;
        }
        Expr z = {0};
        z.kind = EX_INT;
        MatrixCall mc = {&z, 1, NULL, NULL, 0};
        RETURN_IF_ERROR(lw_matrix_type_call(lw, node, ann, &mc, &zero));
    } else if (ann->hkind == QD_HOST_STRUCT_TYPE) {
        RETURN_IF_ERROR(lw_struct_zero(lw, node, ann->h, &zero));
    } else {
        return 1;
    }
    return shape_of(lw, &zero, NULL, out);
}

/* `value` converted to annotation `ann` (one annotation_shape accepts); `what` names the value
 * in errors. */
static int
convert_to_annotation(Lowerer *lw, const QdAst *node, const Expr *ann, const Expr *value,
                      const char *what, Expr *out)
{
    if (ann->kind == EX_TUPLE) {
        if (value->kind != EX_TUPLE || value->nitems != ann->nitems) {
            return lw_error(lw, node, QD_ERR_TYPE, "%s must be a tuple of %u values", what,
                            ann->nitems);
        }
        RETURN_IF_ERROR(copy_items(lw, value, out));
        for (uint32_t i = 0; i < ann->nitems; i++) {
            RETURN_IF_ERROR(
                convert_to_annotation(lw, node, &ann->items[i], &value->items[i], what, &out->items[i]));
        }
        return 0;
    }
    if (ann->hkind == QD_HOST_MATRIX_TYPE) {
        if (value->kind != EX_MATRIX) {
            return lw_error(lw, node, QD_ERR_TYPE, "%s must be a vector/matrix", what);
        }
        MatrixCall mc = {value, 1, NULL, NULL, 0}; /* converted to the annotated type */
        return lw_matrix_type_call(lw, node, ann, &mc, out);
    }
    if (ann->hkind == QD_HOST_STRUCT_TYPE) {
        if (value->kind != EX_STRUCT) {
            return lw_error(lw, node, QD_ERR_TYPE, "%s must be a struct value", what);
        }
        return lw_struct_cast(lw, node, ann->h, value, out);
    }
    if (!lw_is_compile_time_scalar(value) && value->kind != EX_VALUE && value->kind != EX_LVALUE) {
        return lw_error(lw, node, QD_ERR_TYPE, "%s must be a scalar", what);
    }
    return lw_convert(lw, node, value, ann->ty, out);
}

/* The runtime scalars of value `v` (converted to the annotation of `shape`), leaf by leaf, from
 * ids[*k] on. */
static int
flatten(Lowerer *lw, const QdAst *node, const Expr *shape, const Expr *v, uint32_t *ids,
        uint32_t *k)
{
    if (shape->kind != EX_VALUE) {
        if (v->kind != shape->kind || v->nitems != shape->nitems) {
            return lw_error(lw, node, QD_ERR_INTERNAL, "a value of another shape than its type");
        }
        for (uint32_t i = 0; i < shape->nitems; i++) {
            RETURN_IF_ERROR(flatten(lw, node, &shape->items[i], &v->items[i], ids, k));
        }
        return 0;
    }
    Expr rv;
    RETURN_IF_ERROR(lw_convert(lw, node, v, shape->ty, &rv));
    RETURN_IF_ERROR(lw_rvalue(lw, node, &rv, &rv));
    ids[(*k)++] = rv.id;
    return 0;
}

/* A value of `shape` made of the scalars ids[*k] on. */
static int
rebuild(Lowerer *lw, const Expr *shape, const uint32_t *ids, uint32_t *k, Expr *out)
{
    if (shape->kind != EX_VALUE) {
        RETURN_IF_ERROR(copy_items(lw, shape, out));
        for (uint32_t i = 0; i < shape->nitems; i++) {
            RETURN_IF_ERROR(rebuild(lw, &shape->items[i], ids, k, &out->items[i]));
        }
        return 0;
    }
    *out = lw_value(ids[(*k)++], shape->ty);
    return 0;
}

/* The scalar leaves of `shape`, in order (types[*n] on). types may be NULL: count only. */
static void
leaf_types(const Expr *shape, const QdType **types, uint32_t *n)
{
    if (shape->kind != EX_VALUE) {
        for (uint32_t i = 0; i < shape->nitems; i++) {
            leaf_types(&shape->items[i], types, n);
        }
        return;
    }
    if (types) {
        types[*n] = shape->ty;
    }
    (*n)++;
}

/***** early returns *****/

/* Whether a `return` stands inside an if, for or while of `body` (nested: body is inside one). */
static bool
returns_inside_control(const QdAstList *body, bool nested)
{
    for (uint32_t i = 0; i < body->len; i++) {
        const QdAst *s = body->items[i];
        if (s->kind == QD_AST_RETURN && nested) {
            return true;
        }
        if ((s->kind == QD_AST_IF || s->kind == QD_AST_FOR || s->kind == QD_AST_WHILE) &&
            (returns_inside_control(&s->a, true) || returns_inside_control(&s->b, true))) {
            return true;
        }
    }
    return false;
}

bool
lw_returns_early(const QdAst *def)
{
    return returns_inside_control(&def->b, false);
}

/* The variable an early `return` stores a non-scalar result in: one slot per scalar leaf of
 * the result's shape (FuncFrame.ret_slots), zero at first. */
static int
new_result_slots(Lowerer *lw, const QdAst *node, FuncFrame *frame)
{
    uint32_t n = 0;
    leaf_types(&frame->ret_shape, NULL, &n);
    const QdType **types = QD_NEW_ARRAY(lw->arena, const QdType *, n ? n : 1);
    frame->ret_slots = QD_NEW_ARRAY(lw->arena, Expr, n ? n : 1);
    if (!types || !frame->ret_slots) {
        return lw_nomem(lw);
    }
    n = 0;
    leaf_types(&frame->ret_shape, types, &n);
    Expr zero = {0};
    zero.kind = EX_INT;
    for (uint32_t k = 0; k < n; k++) {
        RETURN_IF_ERROR(lw_new_slot(lw, types[k], &frame->ret_slots[k]));
        RETURN_IF_ERROR(lw_store(lw, node, &frame->ret_slots[k], &zero));
    }
    return 0;
}

/* The value of the result slots (new_result_slots), of the result's shape. */
static int
load_result_slots(Lowerer *lw, const QdAst *node, const FuncFrame *frame, Expr *out)
{
    uint32_t n = 0;
    leaf_types(&frame->ret_shape, NULL, &n);
    uint32_t *ids = QD_NEW_ARRAY(lw->arena, uint32_t, n ? n : 1);
    if (!ids) {
        return lw_nomem(lw);
    }
    for (uint32_t k = 0; k < n; k++) {
        Expr v;
        RETURN_IF_ERROR(lw_rvalue(lw, node, &frame->ret_slots[k], &v));
        ids[k] = v.id;
    }
    uint32_t k = 0;
    return rebuild(lw, &frame->ret_shape, ids, &k, out);
}

/* The body of a real_func that returns from inside runtime control flow: a one-trip `loop`
 * around the statements, which a `return` leaves with `break` (FuncFrame.early_return). The
 * returned value waits in a variable: ret_slot for a scalar type, ret_slots (a slot per
 * scalar leaf) for a vector, matrix, struct or tuple type. */
int
lw_early_return_body(Lowerer *lw, const QdAst *def, FuncFrame *frame)
{
    Expr ann = {0};
    bool returns_none =
        !def->x || (def->x->kind == QD_AST_CONSTANT && def->x->cst.kind == QD_CONST_NONE);
    if (!returns_none) {
        RETURN_IF_ERROR(lw_expr(lw, def->x, &ann));
    }
    bool is_scalar = ann.kind == EX_PYOBJ && ann.hkind == QD_HOST_DTYPE;
    if (!returns_none && !is_scalar) {
        int rc = annotation_shape(lw, def->x, &ann, &frame->ret_shape);
        if (rc > 0) {
            return lw_error(lw, def->x, QD_ERR_SYNTAX,
                            "a @qd.real_func returning from inside if/for/while must return a "
                            "scalar, vector, matrix, struct or tuple type");
        }
        RETURN_IF_ERROR(rc);
        frame->ret_ann = ann;
    }
    Expr zero = {0};
    zero.kind = EX_INT;
    const QdType *i32 = qd_type_scalar(QD_TY_I32);
    RETURN_IF_ERROR(lw_new_slot(lw, i32, &frame->ret_flag));
    RETURN_IF_ERROR(lw_store(lw, def, &frame->ret_flag, &zero));
    if (is_scalar) {
        RETURN_IF_ERROR(lw_new_slot(lw, ann.ty, &frame->ret_slot));
        RETURN_IF_ERROR(lw_store(lw, def, &frame->ret_slot, &zero));
    } else if (!returns_none) {
        RETURN_IF_ERROR(new_result_slots(lw, def, frame));
    }
    QdInst *loop = lw_emit(lw, QD_OP_LOOP, 0);
    if (!loop) {
        return -1;
    }
    QdRegion *saved = lw->cur;
    bool saved_top = lw->at_top;
    lw->cur = loop->regions[0];
    lw->at_top = false;
    frame->early_return = true;
    int rc = lw_stmts(lw, &def->b);
    if (rc == 0 && !lw->terminated) { /* the end of the body: leave the loop */
        QdInst *brk = qd_inst_new(lw->f, QD_OP_BREAK, 0);
        if (!brk) {
            rc = -1;
        } else {
            brk->loc = lw->loc;
            qd_region_append(lw->cur, brk);
        }
    }
    lw->terminated = false;
    lw->cur = saved;
    lw->at_top = saved_top;
    frame->returned = true;
    if (rc == 0 && is_scalar) {
        rc = lw_rvalue(lw, def, &frame->ret_slot, &frame->ret);
    } else if (rc == 0 && frame->ret_slots) {
        rc = load_result_slots(lw, def, frame, &frame->ret);
    }
    return rc;
}

int
lw_early_return(Lowerer *lw, const QdAst *node)
{
    FuncFrame *fr = lw->frame;
    if (node->x) {
        Expr value;
        RETURN_IF_ERROR(lw_expr(lw, node->x, &value));
        if (fr->ret_slots) {
            Expr rv;
            uint32_t n = 0;
            leaf_types(&fr->ret_shape, NULL, &n);
            uint32_t *ids = QD_NEW_ARRAY(lw->arena, uint32_t, n ? n : 1);
            if (!ids) {
                return lw_nomem(lw);
            }
            uint32_t k = 0;
            RETURN_IF_ERROR(
                convert_to_annotation(lw, node, &fr->ret_ann, &value, "the returned value", &rv));
            RETURN_IF_ERROR(flatten(lw, node, &fr->ret_shape, &rv, ids, &k));
            for (k = 0; k < n; k++) {
                Expr leaf = lw_value(ids[k], qd_value_type(lw->f, ids[k]));
                RETURN_IF_ERROR(lw_store(lw, node, &fr->ret_slots[k], &leaf));
            }
        } else {
            RETURN_IF_ERROR(lw_store(lw, node, &fr->ret_slot, &value));
        }
    }
    Expr one = {0};
    one.kind = EX_INT;
    one.ival = 1;
    RETURN_IF_ERROR(lw_store(lw, node, &fr->ret_flag, &one));
    if (!lw_emit(lw, QD_OP_BREAK, 0)) {
        return -1;
    }
    lw->terminated = true;
    if (fr->control_depth == 0) {
        fr->returned = true; /* the rest of the body never runs */
    }
    return 0;
}

/***** recursion *****/

/* Whether real_func `def` is being lowered: a call of it now is recursion. */
bool
lw_is_recursive_call(const Lowerer *lw, const QdAst *def)
{
    for (const FuncFrame *fr = lw->frame; fr; fr = fr->parent) {
        if (fr->is_real && fr->def == def) {
            return true;
        }
    }
    return false;
}

/* The refusal of annotation `node` (`what` says which). */
static int
unsupported_annotation(Lowerer *lw, const QdAst *def, const QdAst *node, const char *what)
{
    return lw_error(lw, node ? node : def, QD_ERR_SYNTAX,
                    "recursive @qd.real_func %s: %s must be a scalar, vector, matrix or struct "
                    "type (or an ndarray or qd.template(), for a parameter)",
                    def->name, what);
}

/* Result leaf types grouped by type (RealFunc.out_types / out_counts), and each leaf's group
 * and index in it. */
static int
group_results(Lowerer *lw, RealFunc *rf)
{
    uint32_t n = 0;
    leaf_types(&rf->ret_shape, NULL, &n);
    rf->nleaves = n;
    rf->leaf_ty = QD_NEW_ARRAY(lw->arena, const QdType *, n ? n : 1);
    rf->leaf_group = QD_NEW_ARRAY(lw->arena, uint32_t, n ? n : 1);
    rf->leaf_index = QD_NEW_ARRAY(lw->arena, uint32_t, n ? n : 1);
    rf->out_types = QD_NEW_ARRAY(lw->arena, const QdType *, n ? n : 1);
    rf->out_counts = QD_NEW_ARRAY(lw->arena, uint32_t, n ? n : 1);
    if (!rf->leaf_ty || !rf->leaf_group || !rf->leaf_index || !rf->out_types || !rf->out_counts) {
        return lw_nomem(lw);
    }
    n = 0;
    leaf_types(&rf->ret_shape, rf->leaf_ty, &n);
    rf->nouts = 0;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t g = 0;
        while (g < rf->nouts && rf->out_types[g] != rf->leaf_ty[k]) {
            g++;
        }
        if (g == rf->nouts) {
            rf->out_types[rf->nouts] = rf->leaf_ty[k];
            rf->out_counts[rf->nouts++] = 0;
        }
        rf->leaf_group[k] = g;
        rf->leaf_index[k] = rf->out_counts[g]++;
    }
    return 0;
}

/* Whether annotation `ann` is an ndarray annotation. */
static bool
is_ndarray_annotation(const Expr *ann)
{
    return ann->kind == EX_PYOBJ && ann->hkind == QD_HOST_NDARRAY_ANNOTATION;
}

/* Whether ndarray arguments a and b take the same function (same IR type and element view). */
static bool
same_ndarray(const Lowerer *lw, const Expr *a, const QdType *a_ty, const Expr *b)
{
    if (b->kind != EX_NDARRAY || qd_value_type(lw->f, b->id) != a_ty || a->ndim != b->ndim ||
        a->is_vector != b->is_vector || a->rows != b->rows || a->cols != b->cols) {
        return false;
    }
    if (!a->layout || !b->layout) {
        return a->layout == b->layout;
    }
    return memcmp(a->layout, b->layout, a_ty->ndim) == 0;
}

/* Whether annotation `ann` is qd.template(). */
static bool
is_template_annotation(const Expr *ann)
{
    return ann->kind == EX_PYOBJ && ann->hkind == QD_HOST_TEMPLATE_ANNOTATION;
}

/* Whether `e` is known at compile time (a Python value, a field, a func, or a tuple, vector,
 * matrix or struct of such): the value of a template parameter. */
static bool
is_constant(const Expr *e)
{
    switch (e->kind) {
    case EX_INT:
    case EX_FLOAT:
    case EX_BOOL:
    case EX_NONE:
    case EX_STR:
    case EX_PYOBJ:
    case EX_FIELD:
        return true;
    case EX_FUNC:
        return e->nitems == 0; /* not a method bound to a struct value */
    case EX_TUPLE:
    case EX_MATRIX:
    case EX_STRUCT:
        for (uint32_t i = 0; i < e->nitems; i++) {
            if (!is_constant(&e->items[i])) {
                return false;
            }
        }
        return true;
    default:
        return false;
    }
}

/* Whether compile-time values a and b (is_constant) are the same template argument. */
static bool
same_constant(const Expr *a, const Expr *b)
{
    if (a->kind != b->kind || a->ty != b->ty || a->nitems != b->nitems) {
        return false;
    }
    switch (a->kind) {
    case EX_INT:
    case EX_BOOL:
        return a->ival == b->ival && a->is_big == b->is_big &&
               (!a->is_big || strcmp(a->str, b->str) == 0);
    case EX_FLOAT:
        return memcmp(&a->fval, &b->fval, sizeof(double)) == 0;
    case EX_NONE:
        return true;
    case EX_STR:
        return strcmp(a->str, b->str) == 0;
    case EX_PYOBJ:
    case EX_FUNC:
        return a->h == b->h;
    case EX_FIELD: {
        const FieldView *u = a->view, *v = b->view;
        if (a->field != b->field || u->ndim != v->ndim) {
            return false;
        }
        for (uint32_t k = 0; k < u->ndim; k++) {
            if (u->shape[k] != v->shape[k] || u->order[k] != v->order[k] ||
                u->offset[k] != v->offset[k]) {
                return false;
            }
        }
        return true;
    }
    case EX_MATRIX:
        if (a->rows != b->rows || a->cols != b->cols || a->is_vector != b->is_vector) {
            return false;
        }
        break;
    case EX_STRUCT:
        if (a->h != b->h) {
            return false;
        }
        for (uint32_t i = 0; i < a->nitems; i++) {
            if (strcmp(a->keys[i].str, b->keys[i].str) != 0) {
                return false;
            }
        }
        break;
    default:
        break;
    }
    for (uint32_t i = 0; i < a->nitems; i++) {
        if (!same_constant(&a->items[i], &b->items[i])) {
            return false;
        }
    }
    return true;
}

/* Whether argument `v` takes parameter p of function rf: the same ndarray type for an ndarray
 * (also as a template argument), the same value for another template argument. */
static bool
takes_argument(const Lowerer *lw, const RealFunc *rf, uint32_t p, const Expr *v)
{
    if (rf->nd_types[p]) {
        return same_ndarray(lw, &rf->protos[p], rf->nd_types[p], v);
    }
    if (is_template_annotation(&rf->anns[p])) {
        return same_constant(&rf->protos[p], v);
    }
    return true;
}

/* *sub: a lowerer of lw's kernel that fills the body of function f of the module. */
static void
function_lowerer(const Lowerer *lw, QdFunc *f, uint32_t real_nesting, Lowerer *sub)
{
    memset(sub, 0, sizeof(*sub));
    sub->ctx = lw->ctx;
    sub->m = lw->m;
    sub->host = lw->host;
    sub->opt = lw->opt;
    sub->info = lw->info;
    sub->arena = lw->arena;
    sub->real_funcs = lw->real_funcs;
    sub->real_nesting = real_nesting;
    sub->f = f;
    sub->cur = f->body;
    sub->loc = lw->loc;
}

/* The body of recursive real_func `rf` (the Python function fn) as a function of the module:
 * parameters become variables, the returned value the operand of `ret` or the contents of the
 * result arrays. */
static int
lower_real_body(Lowerer *lw, const Expr *fn, RealFunc *rf)
{
    const QdAst *def = rf->def;
    QdFunc *f = rf->f;
    Lowerer sub;
    function_lowerer(lw, f, lw->real_nesting + 1, &sub);
    FuncFrame frame = {0};
    frame.scope = fn->h;
    frame.file = def->cst.sval;
    frame.is_real = true;
    frame.def = def;
    frame.ret_annotation = def->x;
    frame.ret.kind = EX_VOID;
    sub.frame = &frame;
    lw_set_loc(&sub, def);
    f->loc = sub.loc;
    lw_push_scope(&sub);
    for (uint32_t i = 0; i < def->a.len; i++) {
        const QdAst *param = def->a.items[i];
        Expr value;
        Var *var_of_param;
        if (rf->nd_types[i]) {
            value = rf->protos[i]; /* the caller's ndarray's view, by reference */
            value.grad = NULL;
            value.id = qd_func_add_param(f, rf->nd_types[i], param->name);
            if (value.id == QD_NO_VALUE) {
                return lw_nomem(lw);
            }
            RETURN_IF_ERROR(lw_bind(&sub, param->name, &value, &var_of_param));
            var_of_param->is_arg = true;
            continue;
        }
        if (is_template_annotation(&rf->anns[i])) {
            /* a compile-time value of this instance, not a parameter of the function */
            RETURN_IF_ERROR(lw_bind(&sub, param->name, &rf->protos[i], &var_of_param));
            var_of_param->is_arg = true;
            continue;
        }
        uint32_t n = 0;
        leaf_types(&rf->shapes[i], NULL, &n);
        const QdType **types = QD_NEW_ARRAY(lw->arena, const QdType *, n ? n : 1);
        uint32_t *ids = QD_NEW_ARRAY(lw->arena, uint32_t, n ? n : 1);
        if (!types || !ids) {
            return lw_nomem(lw);
        }
        n = 0;
        leaf_types(&rf->shapes[i], types, &n);
        for (uint32_t k = 0; k < n; k++) {
            if ((ids[k] = qd_func_add_param(f, types[k], param->name)) == QD_NO_VALUE) {
                return lw_nomem(lw);
            }
        }
        uint32_t k = 0;
        Expr var;
        RETURN_IF_ERROR(rebuild(&sub, &rf->shapes[i], ids, &k, &value));
        if (value.kind == EX_VALUE) {
            RETURN_IF_ERROR(lw_new_slot(&sub, value.ty, &var));
            RETURN_IF_ERROR(lw_store(&sub, param, &var, &value));
        } else {
            /* a variable of its own: the function works on a copy */
            RETURN_IF_ERROR(lw_struct_new_var(&sub, param, &value, &var));
        }
        RETURN_IF_ERROR(lw_bind(&sub, param->name, &var, &var_of_param));
        var_of_param->is_arg = true; /* immutable, as a kernel's parameters */
    }
    uint32_t *outs = QD_NEW_ARRAY(lw->arena, uint32_t, rf->nouts ? rf->nouts : 1);
    if (!outs) {
        return lw_nomem(lw);
    }
    for (uint32_t g = 0; g < rf->nouts; g++) {
        const QdType *arr = qd_type_array(lw->m, rf->out_types[g], rf->out_counts[g]);
        const QdType *pty = arr ? qd_type_ptr(lw->m, arr, QD_SPACE_LOCAL) : NULL;
        if (!pty || (outs[g] = qd_func_add_param(f, pty, "ret")) == QD_NO_VALUE) {
            return lw_nomem(lw);
        }
    }
    if (lw_returns_early(def)) {
        RETURN_IF_ERROR(lw_early_return_body(&sub, def, &frame));
    } else {
        RETURN_IF_ERROR(lw_stmts(&sub, &def->b));
    }
    lw_pop_scope(&sub);
    bool has_value = rf->ret_shape.kind != EX_VOID;
    if (has_value && !frame.returned && !frame.early_return) {
        return lw_error(&sub, def, QD_ERR_SYNTAX,
                        "Function has a return type but does not have a return statement");
    }
    uint32_t *ids = QD_NEW_ARRAY(lw->arena, uint32_t, rf->nleaves ? rf->nleaves : 1);
    if (!ids) {
        return lw_nomem(lw);
    }
    if (has_value) {
        Expr rv;
        uint32_t k = 0;
        RETURN_IF_ERROR(
            convert_to_annotation(&sub, def, &rf->ret_ann, &frame.ret, "the returned value", &rv));
        RETURN_IF_ERROR(flatten(&sub, def, &rf->ret_shape, &rv, ids, &k));
    }
    bool direct = has_value && rf->ret_shape.kind == EX_VALUE;
    for (uint32_t k = 0; has_value && !direct && k < rf->nleaves; k++) {
        RETURN_IF_ERROR(lw_array_store(&sub, outs[rf->leaf_group[k]], rf->leaf_ty[k],
                                       rf->leaf_index[k], ids[k]));
    }
    QdInst *ret = lw_emit(&sub, QD_OP_RET, direct ? 1 : 0);
    if (!ret) {
        return -1;
    }
    if (direct) {
        ret->args[0] = ids[0];
    }
    return 0;
}

/* Makes `frame` the current frame for what callee `fn` (defined by `def`) evaluates before its
 * body (parameter annotations, default values): its globals, over the caller's variables. The
 * caller restores lw->frame = frame->parent. */
static void
enter_callee_scope(Lowerer *lw, const Expr *fn, const QdAst *def, FuncFrame *frame)
{
    memset(frame, 0, sizeof(*frame));
    frame->scope = fn->h;
    frame->file = def->cst.sval;
    frame->vars_base = lw->vars.len;
    frame->parent = lw->frame;
    frame->def = def;
    lw->frame = frame;
}

/* The signature of recursive real_func `rf`: annotations and shapes of the parameters (with the
 * arguments `vals` of `call` as the prototypes of ndarray and template parameters) and of the
 * result. Lowered in the callee's scope. */
static int
real_signature(Lowerer *lw, const QdAst *call, const Expr *fn, RealFunc *rf, const Expr *vals)
{
    const QdAst *def = rf->def;
    uint32_t n = def->a.len ? def->a.len : 1;
    rf->anns = QD_NEW_ARRAY(lw->arena, Expr, n);
    rf->shapes = QD_NEW_ARRAY(lw->arena, Expr, n);
    rf->protos = QD_NEW_ARRAY(lw->arena, Expr, n);
    rf->nd_types = QD_NEW_ARRAY(lw->arena, const QdType *, n);
    if (!rf->anns || !rf->shapes || !rf->protos || !rf->nd_types) {
        return lw_nomem(lw);
    }
    FuncFrame frame;
    enter_callee_scope(lw, fn, def, &frame);
    int rc = 0;
    for (uint32_t i = 0; i < def->a.len && rc == 0; i++) {
        const QdAst *param = def->a.items[i];
        char what[200];
        snprintf(what, sizeof(what), "the type of parameter '%s'", param->name);
        memset(&rf->anns[i], 0, sizeof(Expr));
        rc = param->x ? lw_param_annotation(lw, param, &rf->anns[i]) : 0;
        rf->nd_types[i] = NULL;
        bool is_template = rc == 0 && is_template_annotation(&rf->anns[i]);
        bool is_ndarray = rc == 0 && (is_ndarray_annotation(&rf->anns[i]) ||
                                      (is_template && vals[i].kind == EX_NDARRAY));
        if (is_ndarray) {
            if (vals[i].kind != EX_NDARRAY) {
                rc = lw_error(lw, param, QD_ERR_TYPE, "argument '%s' of %s() must be an ndarray",
                              param->name, def->name);
            } else {
                rf->protos[i] = vals[i];
                rf->nd_types[i] = qd_value_type(lw->f, vals[i].id);
            }
        } else if (is_template) {
            if (!is_constant(&vals[i])) {
                lw->frame = frame.parent; /* the error names the call */
                rc = lw_error(lw, call, QD_ERR_SYNTAX,
                              "recursive @qd.real_func %s: the argument of template parameter "
                              "'%s' must be known at compile time (a Python value, a field or an "
                              "ndarray), not a runtime value",
                              def->name, param->name);
                lw->frame = &frame;
            }
            rf->protos[i] = vals[i];
        } else if (rc == 0) {
            rc = annotation_shape(lw, param->x, &rf->anns[i], &rf->shapes[i]);
            if (rc > 0) {
                rc = unsupported_annotation(lw, def, param->x, what);
            }
        }
    }
    memset(&rf->ret_ann, 0, sizeof(Expr));
    memset(&rf->ret_shape, 0, sizeof(Expr));
    rf->ret_shape.kind = EX_VOID;
    bool returns_none =
        !def->x || (def->x->kind == QD_AST_CONSTANT && def->x->cst.kind == QD_CONST_NONE);
    if (rc == 0 && !returns_none) {
        rc = lw_expr(lw, def->x, &rf->ret_ann);
        if (rc == 0) {
            rc = annotation_shape(lw, def->x, &rf->ret_ann, &rf->ret_shape);
            if (rc > 0) {
                rc = unsupported_annotation(lw, def, def->x, "the return type");
            }
        }
    }
    lw->frame = frame.parent;
    RETURN_IF_ERROR(rc);
    RETURN_IF_ERROR(group_results(lw, rf));
    if (rf->ret_shape.kind == EX_VALUE) {
        rf->f->ret = rf->ret_shape.ty; /* a scalar: the call's result */
    }
    return 0;
}

/* The module's function for recursive real_func `def` called with arguments `vals`, lowered on
 * first use: once per distinct set of ndarray argument types and template arguments. */
static int
real_func_of(Lowerer *lw, const QdAst *call, const Expr *fn, const QdAst *def, const Expr *vals,
             uint32_t *out)
{
    for (uint32_t i = 0; i < lw->real_funcs->len; i++) {
        const RealFunc *rf = &lw->real_funcs->data[i];
        bool same = rf->def == def;
        for (uint32_t p = 0; same && p < def->a.len; p++) {
            same = takes_argument(lw, rf, p, &vals[p]);
        }
        if (same) {
            *out = i;
            return 0;
        }
    }
    if (lw->real_nesting >= MAX_REAL_NESTING) {
        return lw_error(lw, call, QD_ERR_SYNTAX,
                        "recursive @qd.real_func %s: more than %d instances lowered one inside "
                        "another (one per distinct set of template arguments); does a template "
                        "argument change at every call?",
                        def->name, MAX_REAL_NESTING);
    }
    const char *name = def->name;
    for (uint32_t n = 1; name && qd_module_find_func(lw->m, name); n++) {
        name = qd_arena_printf(lw->arena, "%s_%u", def->name, n);
    }
    QdFunc *f = name ? qd_func_new(lw->m, QD_FUNC_FUNC, name) : NULL;
    RealFunc rf = {0};
    rf.def = def;
    rf.f = f;
    if (!f) {
        return lw_nomem(lw);
    }
    RETURN_IF_ERROR(real_signature(lw, call, fn, &rf, vals));
    *out = lw->real_funcs->len;
    if (qd_vec_push(lw->arena, lw->real_funcs, rf) < 0) {
        return lw_nomem(lw);
    }
    /* the body may push further functions: work on a copy of the entry */
    RealFunc copy = lw->real_funcs->data[*out];
    return lower_real_body(lw, fn, &copy);
}

/* A recursive call of real_func `def`: the arguments, converted to the parameters' types and
 * flattened, the result arrays, a `call` of its function and the result rebuilt. */
int
lw_real_call(Lowerer *lw, const QdAst *call, const Expr *fn, const QdAst *def, const Expr *args,
             uint32_t nargs, uint32_t npos, Expr *out)
{
    uint32_t nparams = def->a.len;
    Expr *vals = QD_NEW_ARRAY(lw->arena, Expr, nparams ? nparams : 1);
    if (!vals) {
        return lw_nomem(lw);
    }
    for (uint32_t i = 0; i < nparams; i++) {
        const QdAst *param = def->a.items[i];
        const Expr *arg = lw_find_arg(call, param, i, args, npos, nargs);
        if (arg) {
            vals[i] = *arg;
        } else if (param->y) {
            /* a default value, evaluated in the callee's globals */
            FuncFrame frame;
            enter_callee_scope(lw, fn, def, &frame);
            int rc = lw_expr(lw, param->y, &vals[i]);
            lw->frame = frame.parent;
            RETURN_IF_ERROR(rc);
        } else {
            return lw_error(lw, call, QD_ERR_SYNTAX, "Missing argument '%s'.", param->name);
        }
    }
    uint32_t index = 0;
    RETURN_IF_ERROR(real_func_of(lw, call, fn, def, vals, &index));
    const RealFunc *rf = &lw->real_funcs->data[index];
    QdFunc *f = rf->f;
    uint32_t *ids = QD_NEW_ARRAY(lw->arena, uint32_t, f->nparams ? f->nparams : 1);
    uint32_t next = 0; /* the function parameter of the next scalar */
    if (!ids) {
        return lw_nomem(lw);
    }
    for (uint32_t i = 0; i < nparams; i++) {
        const QdAst *param = def->a.items[i];
        if (rf->nd_types[i]) {
            if (!same_ndarray(lw, &rf->protos[i], rf->nd_types[i], &vals[i])) {
                return lw_error(lw, call, QD_ERR_TYPE, "argument '%s' of %s() must be an ndarray",
                                param->name, def->name);
            }
            ids[next++] = vals[i].id;
            continue;
        }
        if (is_template_annotation(&rf->anns[i])) {
            continue; /* a compile-time value of the instance */
        }
        char what[200];
        snprintf(what, sizeof(what), "argument '%s' of %s()", param->name, def->name);
        Expr value;
        RETURN_IF_ERROR(convert_to_annotation(lw, call, &rf->anns[i], &vals[i], what, &value));
        RETURN_IF_ERROR(flatten(lw, call, &rf->shapes[i], &value, ids, &next));
    }
    uint32_t first_out = next;
    for (uint32_t g = 0; g < rf->nouts; g++) {
        RETURN_IF_ERROR(lw_local_array(lw, rf->out_types[g], rf->out_counts[g], &ids[next++]));
    }
    if (next != f->nparams) {
        return lw_error(lw, call, QD_ERR_INTERNAL, "a call of @%s with %u of its %u parameters",
                        f->name, next, f->nparams);
    }
    QdInst *inst = lw_emit(lw, QD_OP_CALL, next);
    if (!inst) {
        return -1;
    }
    memcpy(inst->args, ids, next * sizeof(uint32_t));
    memset(&inst->imm.call, 0, sizeof(inst->imm.call));
    inst->imm.call.name = f->name;
    memset(out, 0, sizeof(*out));
    out->kind = EX_VOID;
    if (f->ret->kind != QD_TY_VOID) {
        uint32_t id = qd_inst_set_result(lw->f, inst, f->ret, NULL);
        if (id == QD_NO_VALUE) {
            return lw_nomem(lw);
        }
        *out = lw_value(id, f->ret);
    } else if (rf->ret_shape.kind != EX_VOID) {
        uint32_t *leaves = QD_NEW_ARRAY(lw->arena, uint32_t, rf->nleaves ? rf->nleaves : 1);
        if (!leaves) {
            return lw_nomem(lw);
        }
        for (uint32_t k = 0; k < rf->nleaves; k++) {
            Expr item;
            RETURN_IF_ERROR(lw_array_items(lw, ids[first_out + rf->leaf_group[k]], rf->leaf_ty[k],
                                           rf->leaf_index[k], 1, &item));
            leaves[k] = item.id;
        }
        uint32_t k = 0;
        RETURN_IF_ERROR(rebuild(lw, &rf->ret_shape, leaves, &k, out));
    }
    return 0;
}

/***** @qd.funcs as functions of the module *****/

int
lw_func_as_function(Lowerer *lw, const QdAst *node, const Expr *fn, const QdType *ty,
                    uint32_t nparams, const char **out_name)
{
    if (fn->kind != EX_FUNC) {
        return lw_error(lw, node, QD_ERR_TYPE, "the operator must be a @qd.func");
    }
    const char *name = "qd_op";
    for (uint32_t n = 1; name && qd_module_find_func(lw->m, name); n++) {
        name = qd_arena_printf(lw->arena, "qd_op_%u", n);
    }
    QdFunc *f = name ? qd_func_new(lw->m, QD_FUNC_FUNC, name) : NULL;
    Expr *args = QD_NEW_ARRAY(lw->arena, Expr, nparams ? nparams : 1);
    if (!f || !args) {
        return lw_nomem(lw);
    }
    f->ret = ty;
    f->loc = lw->loc;
    for (uint32_t i = 0; i < nparams; i++) {
        uint32_t id = qd_func_add_param(f, ty, i == 0 ? "a" : "b");
        if (id == QD_NO_VALUE) {
            return lw_nomem(lw);
        }
        args[i] = lw_value(id, ty);
    }
    /* The body: the func inlined, as at any call of it, by a lowerer of its own. */
    Lowerer sub;
    function_lowerer(lw, f, lw->real_nesting, &sub);
    FuncFrame frame = {0};
    frame.scope = lw->frame->scope;
    frame.file = lw->frame->file;
    frame.def = lw->frame->def;
    frame.ret.kind = EX_VOID;
    sub.frame = &frame;
    lw_push_scope(&sub);
    Expr r;
    RETURN_IF_ERROR(lw_call_func(&sub, node, fn, args, nparams, &r));
    RETURN_IF_ERROR(lw_convert(&sub, node, &r, ty, &r));
    if (!lw_is_runtime(&r)) {
        RETURN_IF_ERROR(lw_rvalue(&sub, node, &r, &r));
    }
    lw_pop_scope(&sub);
    QdInst *ret = lw_emit(&sub, QD_OP_RET, 1);
    if (!ret) {
        return -1;
    }
    ret->args[0] = r.id;
    *out_name = f->name;
    return 0;
}
