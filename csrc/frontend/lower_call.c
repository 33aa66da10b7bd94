/* frontend/lower_call.c -- calls: what a call's callee is decides its lowering.
 *
 * The arguments are evaluated first (starred ones expanded). A builtin goes to lower_simt.c
 * (qd.simt.*), to the vector/matrix calls (lower_matrix*.c: constructors, methods, element-wise
 * math) or to the builtin table (lower_builtins.c); a @qd.func is inlined (lower_kernel.c), a
 * struct method with its `self`; a dtype casts or types a literal, a struct or vector/matrix type
 * constructs; any other Python callable runs at trace time with compile-time arguments, as in the
 * reference.
 */
#include "lower.h"

#include <string.h>

static int call_python(Lowerer *lw, const Expr *fn, const CallArgs *c, Expr *out);

/* Returns 1 when the call is not one of vectors/matrices (lower_matrix.c decides). */
static int
matrix_call(Lowerer *lw, const Expr *fn, const CallArgs *c, Expr *out)
{
    if (strcmp(fn->str, "types.vector") == 0 || strcmp(fn->str, "types.matrix") == 0) {
        Expr type_factory = *fn; /* qd.types.vector(3, qd.f32) in a kernel: made at compile time */
        type_factory.kind = EX_PYOBJ;
        type_factory.hkind = QD_HOST_OBJECT;
        return call_python(lw, &type_factory, c, out);
    }
    MatrixCall mc = {c->pos, c->npos, c->kw, c->kwv, c->nkw};
    return lw_matrix_call(lw, c->node, fn, &mc, out);
}

/***** calls *****/

/* The values a starred argument `*value` stands for: the items of a tuple or list, the elements of
 * a vector, the extents of an ndarray's shape (`qd.ndrange(*arr.shape)`). */
static int
starred_items(Lowerer *lw, const QdAst *node, Expr *out)
{
    Expr v;
    RETURN_IF_ERROR(lw_expr(lw, node->x, &v));
    if (v.kind == EX_SHAPE) {
        return lw_shape_tuple(lw, &v, out);
    }
    if (lw_matrix_is_vector(&v)) {
        memset(out, 0, sizeof(*out));
        out->kind = EX_TUPLE;
        out->items = v.items;
        out->nitems = v.nitems;
        return 0;
    }
    if (v.kind != EX_TUPLE) {
        return lw_error(lw, node, QD_ERR_SYNTAX,
                        "a starred argument must be a tuple, a list, a vector or an ndarray's shape");
    }
    *out = v;
    return 0;
}

static int
eval_args(Lowerer *lw, const QdAst *node, CallArgs *c)
{
    c->node = node;
    c->npos = node->a.len;
    c->nkw = node->b.len;
    /* Starred arguments are expanded first: they decide how many positional values there are. */
    Expr *starred = QD_NEW_ARRAY(lw->arena, Expr, c->npos + 1);
    if (!starred) {
        return lw_nomem(lw);
    }
    for (uint32_t i = 0; i < node->a.len; i++) {
        if (node->a.items[i]->kind == QD_AST_STARRED) {
            RETURN_IF_ERROR(starred_items(lw, node->a.items[i], &starred[i]));
            c->npos += starred[i].nitems - 1;
        }
    }
    c->pos = QD_NEW_ARRAY(lw->arena, Expr, c->npos + c->nkw + 1);
    c->kw = QD_NEW_ARRAY(lw->arena, const QdAst *, c->nkw + 1);
    if (!c->pos || !c->kw) {
        return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
    }
    c->kwv = c->pos + c->npos;
    for (uint32_t i = 0, k = 0; i < node->a.len; i++) {
        const QdAst *a = node->a.items[i];
        if (a->kind == QD_AST_STARRED) {
            for (uint32_t j = 0; j < starred[i].nitems; j++) {
                c->pos[k++] = starred[i].items[j];
            }
            continue;
        }
        if (a->kind == QD_AST_JOINED_STR) {
            c->pos[k].kind = EX_STR; /* only print() takes f-strings; it reads the node itself */
            c->pos[k++].str = "";
            continue;
        }
        RETURN_IF_ERROR(lw_expr(lw, a, &c->pos[k++]));
    }
    for (uint32_t i = 0; i < c->nkw; i++) {
        c->kw[i] = node->b.items[i];
        if (!c->kw[i]->name) {
            return lw_error(lw, c->kw[i], QD_ERR_SYNTAX, "**kwargs are not supported in kernels");
        }
        RETURN_IF_ERROR(lw_expr(lw, c->kw[i]->x, &c->kwv[i]));
    }
    return 0;
}

int
lw_bind_self(Lowerer *lw, const Expr *self, Expr *func)
{
    Expr *copy = QD_NEW(lw->arena, Expr);
    if (!copy) {
        return lw_nomem(lw);
    }
    *copy = *self;
    func->items = copy;
    func->nitems = 1;
    return 0;
}

/* A trace-time call of a plain Python callable: every argument must be compile-time. */
static int
call_python(Lowerer *lw, const Expr *fn, const CallArgs *c, Expr *out)
{
    if (c->nkw) {
        return lw_error(lw, c->node, QD_ERR_SYNTAX,
                        "keyword arguments are not supported when calling a Python function in a kernel");
    }
    QdHandle *args = QD_NEW_ARRAY(lw->arena, QdHandle, c->npos + 1);
    if (!args) {
        return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
    }
    for (uint32_t i = 0; i < c->npos; i++) {
        if (lw_is_runtime(&c->pos[i])) {
            return lw_error(lw, c->node, QD_ERR_SYNTAX,
                            "a plain Python function runs at compile time and cannot take runtime "
                            "values; decorate it with @qd.func");
        }
        RETURN_IF_ERROR(lw_to_handle(lw, c->node, &c->pos[i], &args[i]));
    }
    if (fn->hkind == QD_HOST_CALLABLE) {
        RETURN_IF_ERROR(lw_warn(lw, c->node, "SyntaxWarning",
                                "Calling a non-Quadrants function in a kernel: it runs once, at "
                                "compile time. Decorate it with @qd.func to call it at run time."));
    }
    QdHandle h;
    RETURN_IF_ERROR(lw->host->call(lw->host->self, lw->ctx, fn->h, args, c->npos, &h));
    return lw_from_handle(lw, c->node, h, out);
}

/* A builtin call checked against the builtin's parameter list (its Python `_qd_bind`, which
 * builtins with a fixed list have): a call that does not bind is the reference's
 * QuadrantsTypeError ("TypeError when calling `sqrt`: sqrt() missing 1 required positional
 * argument: 'x'."), and keywords naming required parameters (`qd.sqrt(x=v)`) become positional
 * arguments, which is how the lowerings take those. */
static int
bind_builtin_args(Lowerer *lw, const Expr *fn, CallArgs *c)
{
    QdHandle bind, npos, names, answer;
    if (!fn->h) {
        return 0;
    }
    int rc = lw->host->getattr(lw->host->self, lw->ctx, fn->h, "_qd_bind", &bind);
    if (rc != 0) {
        return rc < 0 ? -1 : 0;
    }
    QdHandle *kw = QD_NEW_ARRAY(lw->arena, QdHandle, c->nkw + 1);
    if (!kw) {
        return lw_nomem(lw);
    }
    for (uint32_t i = 0; i < c->nkw; i++) {
        RETURN_IF_ERROR(lw->host->make_str(lw->host->self, lw->ctx, c->kw[i]->name, &kw[i]));
    }
    RETURN_IF_ERROR(lw->host->make_int(lw->host->self, lw->ctx, c->npos, &npos));
    RETURN_IF_ERROR(lw->host->make_tuple(lw->host->self, lw->ctx, kw, c->nkw, &names));
    QdHandle args[2] = {npos, names};
    RETURN_IF_ERROR(lw->host->call(lw->host->self, lw->ctx, bind, args, 2, &answer));
    Expr a;
    RETURN_IF_ERROR(lw_from_handle(lw, c->node, answer, &a));
    if (a.kind == EX_STR) {
        return lw_error(lw, c->node, QD_ERR_TYPE, "%s", a.str);
    }
    if (a.kind != EX_TUPLE || a.nitems != 2 || a.items[0].kind != EX_TUPLE ||
        a.items[1].kind != EX_TUPLE) {
        return 0; /* None: the call stays as it is */
    }
    const Expr *order = &a.items[0], *keep = &a.items[1];
    Expr *values = QD_NEW_ARRAY(lw->arena, Expr, order->nitems + keep->nitems + 1);
    const QdAst **kept = QD_NEW_ARRAY(lw->arena, const QdAst *, keep->nitems + 1);
    if (!values || !kept) {
        return lw_nomem(lw);
    }
    for (uint32_t j = 0; j < order->nitems + keep->nitems; j++) {
        const Expr *ix = j < order->nitems ? &order->items[j] : &keep->items[j - order->nitems];
        if (ix->kind != EX_INT || ix->ival < 0 || ix->ival >= (int64_t)(c->npos + c->nkw)) {
            return qd_error(lw->ctx, lw->loc, QD_ERR_INTERNAL, "bad argument binding");
        }
        values[j] = c->pos[ix->ival]; /* keyword values follow the positional ones */
        if (j >= order->nitems) {
            kept[j - order->nitems] = c->kw[ix->ival - c->npos];
        }
    }
    c->pos = values;
    c->npos = order->nitems;
    c->kwv = values + order->nitems;
    c->kw = kept;
    c->nkw = keep->nitems;
    return 0;
}

int
lw_call(Lowerer *lw, const QdAst *node, Expr *out)
{
    Expr fn;
    RETURN_IF_ERROR(lw_expr(lw, node->x, &fn));
    lw_set_loc(lw, node);
    memset(out, 0, sizeof(*out));
    if (fn.kind == EX_BUILTIN && strcmp(fn.str, "static") == 0) {
        CallArgs c = {node, NULL, node->a.len, NULL, NULL, 0}; /* its argument stays unevaluated */
        return lw_builtin(lw, "static", &c, out);
    }
    CallArgs c;
    RETURN_IF_ERROR(eval_args(lw, node, &c));
    lw_set_loc(lw, node);
    switch (fn.kind) {
    case EX_BUILTIN: {
        RETURN_IF_ERROR(bind_builtin_args(lw, &fn, &c));
        if (strncmp(fn.str, "simt.", 5) == 0) {
            MatrixCall mc = {c.pos, c.npos, c.kw, c.kwv, c.nkw};
            if (strncmp(fn.str, "simt.tile.", 10) == 0 || strncmp(fn.str, "simt.Tile", 9) == 0) {
                return lw_tile_call(lw, node, &fn, fn.str + 5, &mc, out);
            }
            return lw_simt_call(lw, node, fn.str + 5, &mc, out);
        }
        if (strncmp(fn.str, "nn.", 3) == 0) {
            return lw_nn_call(lw, node, fn.str + 3, &c, out);
        }
        if (strncmp(fn.str, "algorithms.", 11) == 0) {
            return lw_algorithm_call(lw, node, &fn, fn.str + 11, &c, out);
        }
        int rc = lw_nn_builtin(lw, fn.str, &c, out); /* a builtin given a CoopVec */
        if (rc != LW_DECLINED) {
            return rc;
        }
        rc = matrix_call(lw, &fn, &c, out);
        if (rc <= 0) {
            return rc;
        }
        return lw_builtin(lw, fn.str, &c, out);
    }
    case EX_FUNC: {
        if (fn.items && fn.nitems == 1) {
            /* A @qd.func method of a struct: `self` (by reference) comes first. */
            Expr *all = QD_NEW_ARRAY(lw->arena, Expr, c.npos + c.nkw + 1);
            if (!all) {
                return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
            }
            all[0] = fn.items[0];
            if (c.npos + c.nkw) {
                memcpy(all + 1, c.pos, sizeof(Expr) * (c.npos + c.nkw));
            }
            return lw_call_func_bound(lw, node, &fn, all, c.npos + c.nkw + 1, out);
        }
        /* A method of a data-oriented object: `self` comes first. */
        QdHandle self_h;
        int rc = lw->host->getattr(lw->host->self, lw->ctx, fn.h, "_qd_bound_self", &self_h);
        if (rc < 0) {
            return -1;
        }
        if (rc == 0) {
            Expr *all = QD_NEW_ARRAY(lw->arena, Expr, c.npos + c.nkw + 1);
            if (!all) {
                return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
            }
            RETURN_IF_ERROR(lw_from_handle(lw, node, self_h, &all[0]));
            if (c.npos + c.nkw) {
                memcpy(all + 1, c.pos, sizeof(Expr) * (c.npos + c.nkw));
            }
            return lw_call_func_bound(lw, node, &fn, all, c.npos + c.nkw + 1, out);
        }
        return lw_call_func(lw, node, &fn, c.pos, c.npos + c.nkw, out);
    }
    case EX_PYOBJ:
        if (fn.hkind == QD_HOST_DTYPE && fn.str) {
            /* Python's int / float / bool: Python semantics on compile-time values. */
            const char *name = strcmp(fn.str, "int") == 0     ? "int"
                               : strcmp(fn.str, "float") == 0 ? "float"
                                                              : "bool";
            return lw_builtin(lw, name, &c, out);
        }
        if (fn.hkind == QD_HOST_DTYPE) {
            /* qd.i32(x): a typed literal (range-checked) or a cast. */
            if (c.npos != 1 || c.nkw) {
                return lw_error(lw, node, QD_ERR_SYNTAX,
                                "A primitive type can only decorate a single expression.");
            }
            if (lw_is_compile_time_scalar(&c.pos[0])) {
                const QdType *ty = fn.ty;
                const Expr *x = &c.pos[0];
                if (x->kind == EX_INT && qd_type_is_float(ty)) {
                    return lw_error(lw, node, QD_ERR_TYPE, "Integer literals must be annotated with a integer type. "
                                                            "For type casting, use `qd.cast`.");
                }
                if (x->kind == EX_FLOAT && !qd_type_is_float(ty)) {
                    return lw_error(lw, node, QD_ERR_TYPE, "Floating-point literals must be annotated with a "
                                                            "floating-point type. For type casting, use `qd.cast`.");
                }
                return lw_explicit_literal(lw, node, x, ty, out);
            }
            return lw_convert(lw, node, &c.pos[0], fn.ty, out);
        }
        if (fn.hkind == QD_HOST_STRUCT_TYPE) {
            return lw_struct_construct(lw, node, &fn, c.pos, c.npos, c.nkw, out);
        }
        if (fn.hkind == QD_HOST_MATRIX_TYPE) {
            MatrixCall mc = {c.pos, c.npos, c.kw, c.kwv, c.nkw};
            return lw_matrix_type_call(lw, node, &fn, &mc, out);
        }
        if (fn.hkind == QD_HOST_KERNEL) {
            return lw_error(lw, node, QD_ERR_SYNTAX, "Kernels cannot call other kernels");
        }
        if (fn.hkind == QD_HOST_CALLABLE || fn.hkind == QD_HOST_OBJECT ||
            fn.hkind == QD_HOST_TEMPLATE_ANNOTATION || fn.hkind == QD_HOST_NDARRAY_ANNOTATION) {
            return call_python(lw, &fn, &c, out);
        }
        return lw_error(lw, node, QD_ERR_SYNTAX, "this object is not callable in a kernel");
    default:
        return lw_error(lw, node, QD_ERR_TYPE,
                        "TypeError when calling `Expr`: 'Quadrants Expression' object is not callable.");
    }
}
