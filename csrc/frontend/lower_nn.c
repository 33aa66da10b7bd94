/* frontend/lower_nn.c -- qd.nn: cooperative vectors (CoopVec) and their operations.
 *
 * A cooperative vector (qd.nn.CoopVec) is a per-thread vector of 1..128 floats (f16 or f32)
 * with a small set of operations and no element indexing: a later target may spread its
 * elements over the lanes of a subgroup (tensor cores), so the model offers no way to name one
 * element. Here it is an EX_MATRIX vector with is_coopvec set; lw_expr_ops gives it the table
 * below instead of the matrix one, and the table refuses what the model does not have
 * (subscripts, attributes, comparisons, division, ...). Slots, loads, stores, branches and func
 * calls are those of vectors (the flag travels with the Expr), so a CoopVec can be a variable,
 * loop state or a func argument.
 *
 * Elementwise operations are scalar instructions per element: + - * and unary minus in the
 * vector's type (Python scalars and runtime scalars broadcast and take the vector's type),
 * min/max, abs, and the math (tanh, exp2, log2, fma, step) computed in f32 and rounded to the
 * vector's type once. Matrix views and products are lower_nn_matvec.c's.
 */
#include "lower.h"

#include <string.h>

/* The longest cooperative vector: the minimum every Vulkan implementation of the extension
 * supports (maxCooperativeVectorComponents), and what one thread can keep in registers. */
#define COOPVEC_MAX 128

/***** helpers *****/

bool
lw_is_coopvec(const Expr *e)
{
    return e->kind == EX_MATRIX && e->is_coopvec;
}

/* A new cooperative vector of n elements of type ty (items to fill). */
int
lw_coopvec_new(Lowerer *lw, uint32_t n, const QdType *ty, Expr *out)
{
    RETURN_IF_ERROR(lw_matrix_new(lw, n, 1, true, ty, out));
    out->is_coopvec = true;
    return 0;
}

/* The runtime value of scalar e as type ty. */
static int
scalar_as(Lowerer *lw, const QdAst *node, const Expr *e, const QdType *ty, uint32_t *id)
{
    Expr v;
    RETURN_IF_ERROR(lw_convert(lw, node, e, ty, &v));
    *id = v.id;
    return 0;
}

static bool
is_scalar(const Expr *e)
{
    return lw_is_compile_time_scalar(e) || e->kind == EX_VALUE || e->kind == EX_LVALUE;
}

static const char *
type_name(const QdType *ty)
{
    return lw_type_name(ty);
}

/* The TypeError for an operation the model does not have. */
static int
unsupported(Lowerer *lw, const QdAst *node, const char *what)
{
    return lw_error(lw, node, QD_ERR_TYPE,
                    "%s is not supported on a qd.nn.CoopVec: a cooperative vector has only + - *, "
                    "qd.max/qd.min, abs, qd.tanh, qd.nn.exp2/log2/fma/step/cast/dot and matvec; "
                    "unpack it (a, b, *rest = v) for anything else",
                    what);
}

/***** construction *****/

typedef QdVec(Expr) ItemList;

/* Appends the scalars of e (a scalar, a vector/matrix in row-major order, or a tuple/list of
 * those) to out; *first_ty is the type of the first typed one. */
static int
flatten(Lowerer *lw, const QdAst *node, const Expr *e, ItemList *out, const QdType **first_ty)
{
    if (e->kind == EX_TUPLE || e->kind == EX_MATRIX) {
        if (e->kind == EX_MATRIX && !*first_ty) {
            *first_ty = e->ty;
        }
        for (uint32_t i = 0; i < e->nitems; i++) {
            RETURN_IF_ERROR(flatten(lw, node, &e->items[i], out, first_ty));
        }
        return 0;
    }
    if (!is_scalar(e)) {
        return lw_error(lw, node, QD_ERR_TYPE,
                        "qd.nn.CoopVec takes scalars, vectors, matrices and tuples of them");
    }
    if (!*first_ty && (e->kind == EX_VALUE || e->kind == EX_LVALUE)) {
        *first_ty = e->ty;
    }
    if (qd_vec_push(lw->arena, out, *e) < 0) {
        return lw_nomem(lw);
    }
    return 0;
}

/* The element type of a CoopVec: f16 or f32. */
static int
check_elem_type(Lowerer *lw, const QdAst *node, const QdType *ty)
{
    if (ty->kind != QD_TY_F16 && ty->kind != QD_TY_F32) {
        return lw_error(lw, node, QD_ERR_TYPE,
                        "qd.nn.CoopVec elements are f16 or f32, got %s; pass dtype= or cast the "
                        "elements", type_name(ty));
    }
    return 0;
}

/* qd.nn.CoopVec(*items, dtype=None). */
static int
construct(Lowerer *lw, const CallArgs *c, Expr *out)
{
    const QdAst *node = c->node;
    const QdType *ty = NULL;
    for (uint32_t i = 0; i < c->nkw; i++) {
        if (strcmp(c->kw[i]->name, "dtype") != 0) {
            return lw_error(lw, node, QD_ERR_SYNTAX,
                            "qd.nn.CoopVec() got an unexpected keyword argument '%s'", c->kw[i]->name);
        }
        RETURN_IF_ERROR(lw_matrix_dtype_arg(lw, node, &c->kwv[i], &ty));
    }
    ItemList items = {0};
    const QdType *first = NULL;
    for (uint32_t i = 0; i < c->npos; i++) {
        RETURN_IF_ERROR(flatten(lw, node, &c->pos[i], &items, &first));
    }
    if (items.len == 0) {
        return lw_error(lw, node, QD_ERR_SYNTAX, "qd.nn.CoopVec needs at least one element");
    }
    if (items.len > COOPVEC_MAX) {
        return lw_error(lw, node, QD_ERR_SYNTAX,
                        "qd.nn.CoopVec holds at most %d elements, got %zu", COOPVEC_MAX,
                        (size_t)items.len);
    }
    if (!ty) {
        ty = first ? first : qd_type_scalar(lw->opt->default_fp);
        for (size_t i = 0; i < items.len; i++) {
            const Expr *e = &items.data[i];
            if ((e->kind == EX_VALUE || e->kind == EX_LVALUE) && !qd_type_equal(e->ty, ty)) {
                return lw_error(lw, node, QD_ERR_TYPE,
                                "qd.nn.CoopVec elements must share one dtype, got %s and %s; cast "
                                "them or pass dtype=", type_name(ty), type_name(e->ty));
            }
        }
    }
    RETURN_IF_ERROR(check_elem_type(lw, node, ty));
    RETURN_IF_ERROR(lw_coopvec_new(lw, (uint32_t)items.len, ty, out));
    for (size_t i = 0; i < items.len; i++) {
        RETURN_IF_ERROR(lw_convert(lw, node, &items.data[i], ty, &out->items[i]));
    }
    return 0;
}

/***** elementwise *****/

/* The operand of a binary elementwise operation with CoopVec v: another CoopVec of v's length
 * and type, or a scalar (broadcast, converted to v's type). Item i of it goes to *item. */
static int
operand_item(Lowerer *lw, const QdAst *node, const Expr *v, const Expr *o, uint32_t i,
             uint32_t *item)
{
    return scalar_as(lw, node, lw_is_coopvec(o) ? &o->items[i] : o, v->ty, item);
}

static int
check_operand(Lowerer *lw, const QdAst *node, const Expr *v, const Expr *o)
{
    if (lw_is_coopvec(o)) {
        if (o->nitems != v->nitems) {
            return lw_error(lw, node, QD_ERR_TYPE,
                            "qd.nn.CoopVec operands have different lengths (%u and %u)", v->nitems,
                            o->nitems);
        }
        if (!qd_type_equal(o->ty, v->ty)) {
            return lw_error(lw, node, QD_ERR_TYPE,
                            "qd.nn.CoopVec operands have different dtypes (%s and %s); convert one "
                            "with qd.nn.cast", type_name(v->ty), type_name(o->ty));
        }
        return 0;
    }
    if (o->kind == EX_MATRIX || o->kind == EX_TUPLE) {
        return lw_error(lw, node, QD_ERR_TYPE,
                        "a qd.nn.CoopVec combines with CoopVecs and scalars only; make the vector "
                        "a CoopVec with qd.nn.CoopVec(...)");
    }
    if (!is_scalar(o)) {
        return lw_error(lw, node, QD_ERR_TYPE, "unsupported operand for a qd.nn.CoopVec operation");
    }
    return 0;
}

/* The first CoopVec among n operands (NULL when none). */
static const Expr *
first_coopvec(const Expr *ops, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        if (lw_is_coopvec(&ops[i])) {
            return &ops[i];
        }
    }
    return NULL;
}

/* Kinds of elementwise operation, each computing one element from up to three operands. */
typedef enum ElemKind {
    EL_OP,     /* the QIR op in the vector's type (add, sub, mul, min, max, neg, abs) */
    EL_F32,    /* the QIR op in f32 (tanh), rounded to the vector's type */
    EL_EXP2,   /* 2^a = exp(a ln 2), in f32 */
    EL_LOG2,   /* log(a) / ln 2, in f32 */
    EL_FMA,    /* a * b + c, in f32, rounded once */
    EL_STEP,   /* a < b ? 0 : 1 */
} ElemKind;

/* One element of an elementwise operation on the runtime values a, b, c of type ty. */
static uint32_t
elem(Lowerer *lw, ElemKind kind, QdOp op, const QdType *ty, const uint32_t *v)
{
    const QdType *f32 = qd_type_scalar(QD_TY_F32);
    bool wide = kind != EL_OP && kind != EL_STEP && ty->kind != QD_TY_F32;
    uint32_t a = v[0], b = v[1], c = v[2], r;
    if (wide) {
        a = lw_emit_value(lw, QD_OP_CAST, f32, a, 0);
        b = b == QD_NO_VALUE ? b : lw_emit_value(lw, QD_OP_CAST, f32, b, 0);
        c = c == QD_NO_VALUE ? c : lw_emit_value(lw, QD_OP_CAST, f32, c, 0);
    }
    const QdType *wt = wide ? f32 : ty;
    switch (kind) {
    case EL_OP:
    case EL_F32:
        r = lw_emit_value(lw, op, wt, a, b);
        break;
    case EL_EXP2:
        r = lw_emit_value(lw, QD_OP_MUL, wt, a, lw_const_float(lw, wt, 0.69314718055994530942));
        r = lw_emit_value(lw, QD_OP_EXP, wt, r, 0);
        break;
    case EL_LOG2:
        r = lw_emit_value(lw, QD_OP_LOG, wt, a, 0);
        r = lw_emit_value(lw, QD_OP_MUL, wt, r, lw_const_float(lw, wt, 1.44269504088896340736));
        break;
    case EL_FMA:
        r = lw_emit_value(lw, QD_OP_ADD, wt, lw_emit_value(lw, QD_OP_MUL, wt, a, b), c);
        break;
    case EL_STEP: {
        uint32_t lt = lw_emit_value(lw, QD_OP_LT, qd_type_scalar(QD_TY_U1), a, b);
        uint32_t zero = lw_const_float(lw, ty, 0.0), one = lw_const_float(lw, ty, 1.0);
        QdInst *sel = lw_emit(lw, QD_OP_SELECT, 3);
        if (!sel || qd_inst_set_result(lw->f, sel, ty, NULL) == QD_NO_VALUE) {
            return QD_NO_VALUE;
        }
        sel->args[0] = lt;
        sel->args[1] = zero;
        sel->args[2] = one;
        return sel->result;
    }
    default:
        return QD_NO_VALUE;
    }
    return wide ? lw_emit_value(lw, QD_OP_CAST, ty, r, 0) : r;
}

/* The elementwise operation over n operands (CoopVecs of one length and type, or scalars,
 * at least one CoopVec). */
static int
elementwise(Lowerer *lw, const QdAst *node, ElemKind kind, QdOp op, const Expr *ops, uint32_t n,
            Expr *out)
{
    const Expr *v = first_coopvec(ops, n);
    if (!v) {
        return lw_error(lw, node, QD_ERR_TYPE, "expected a qd.nn.CoopVec operand");
    }
    for (uint32_t k = 0; k < n; k++) {
        RETURN_IF_ERROR(check_operand(lw, node, v, &ops[k]));
    }
    Expr loaded[3];
    for (uint32_t k = 0; k < n; k++) { /* a scalar lvalue is read once */
        RETURN_IF_ERROR(lw_is_coopvec(&ops[k]) ? lw_struct_load(lw, node, &ops[k], &loaded[k])
                                                : lw_matrix_scalar(lw, node, &ops[k], &loaded[k]));
    }
    Expr r;
    RETURN_IF_ERROR(lw_coopvec_new(lw, v->nitems, v->ty, &r));
    for (uint32_t i = 0; i < v->nitems; i++) {
        uint32_t vals[3] = {QD_NO_VALUE, QD_NO_VALUE, QD_NO_VALUE};
        for (uint32_t k = 0; k < n; k++) {
            RETURN_IF_ERROR(operand_item(lw, node, v, &loaded[k], i, &vals[k]));
        }
        uint32_t id = elem(lw, kind, op, v->ty, vals);
        if (id == QD_NO_VALUE) {
            return -1;
        }
        r.items[i] = lw_value(id, v->ty);
    }
    *out = r;
    return 0;
}

/***** calls *****/

/* Keyword `name` of the call, or NULL; every keyword must be one of `allowed`. */
static int
keywords(Lowerer *lw, const CallArgs *c, const char *fn, const char *const *allowed, uint32_t n,
         const Expr **values)
{
    for (uint32_t i = 0; i < c->nkw; i++) {
        uint32_t k = 0;
        while (k < n && strcmp(allowed[k], c->kw[i]->name) != 0) {
            k++;
        }
        if (k == n) {
            return lw_error(lw, c->node, QD_ERR_SYNTAX, "%s() got an unexpected keyword argument '%s'",
                            fn, c->kw[i]->name);
        }
        values[k] = &c->kwv[i];
    }
    return 0;
}

static int
nargs(Lowerer *lw, const CallArgs *c, const char *fn, uint32_t lo, uint32_t hi)
{
    if (c->npos < lo || c->npos > hi) {
        return lw_error(lw, c->node, QD_ERR_TYPE, "%s() takes %u%s positional argument%s, got %u",
                        fn, lo, hi > lo ? " or more" : "", lo == 1 && hi == 1 ? "" : "s", c->npos);
    }
    return 0;
}

/* qd.nn.cast(v, dtype) (also qd.cast of a CoopVec). */
static int
cast(Lowerer *lw, const QdAst *node, const Expr *v, const Expr *dt, Expr *out)
{
    const QdType *ty = lw_dtype_arg(dt);
    if (!lw_is_coopvec(v) || !ty) {
        return lw_error(lw, node, QD_ERR_TYPE, "qd.nn.cast takes a qd.nn.CoopVec and a dtype");
    }
    RETURN_IF_ERROR(check_elem_type(lw, node, ty));
    Expr r;
    RETURN_IF_ERROR(lw_coopvec_new(lw, v->nitems, ty, &r));
    for (uint32_t i = 0; i < v->nitems; i++) {
        RETURN_IF_ERROR(lw_convert(lw, node, &v->items[i], ty, &r.items[i]));
    }
    *out = r;
    return 0;
}

/* qd.nn.dot(a, b): the sum of the products, accumulated in f32, in the vectors' type. */
static int
dot(Lowerer *lw, const QdAst *node, const Expr *a, const Expr *b, Expr *out)
{
    if (!lw_is_coopvec(a)) {
        return lw_error(lw, node, QD_ERR_TYPE, "qd.nn.dot takes two qd.nn.CoopVec");
    }
    RETURN_IF_ERROR(check_operand(lw, node, a, b));
    if (!lw_is_coopvec(b)) {
        return lw_error(lw, node, QD_ERR_TYPE, "qd.nn.dot takes two qd.nn.CoopVec");
    }
    const QdType *f32 = qd_type_scalar(QD_TY_F32);
    uint32_t acc = QD_NO_VALUE;
    for (uint32_t i = 0; i < a->nitems; i++) {
        uint32_t x, y;
        RETURN_IF_ERROR(scalar_as(lw, node, &a->items[i], f32, &x));
        RETURN_IF_ERROR(scalar_as(lw, node, &b->items[i], f32, &y));
        uint32_t p = lw_emit_value(lw, QD_OP_MUL, f32, x, y);
        acc = acc == QD_NO_VALUE ? p : lw_emit_value(lw, QD_OP_ADD, f32, acc, p);
    }
    if (acc == QD_NO_VALUE) {
        return -1;
    }
    if (a->ty->kind != QD_TY_F32) {
        acc = lw_emit_value(lw, QD_OP_CAST, a->ty, acc, 0);
    }
    *out = lw_value(acc, a->ty);
    return acc == QD_NO_VALUE ? -1 : 0;
}

/* How each qd.nn builtin is lowered (the KIND column of nn.def). */
typedef enum NnKind {
#define QD_NN(name, KIND, signature, doc) NN_##KIND,
#include "nn.def"
#undef QD_NN
} NnKind;

static const struct {
    const char *name;
    NnKind kind;
} nn_builtins[] = {
#define QD_NN(name, KIND, signature, doc) {name, NN_##KIND},
#include "nn.def"
#undef QD_NN
};

/* qd.nn.matvec(A, x, b=None, transpose=False). */
static int
call_matvec(Lowerer *lw, const CallArgs *c, Expr *out)
{
    static const char *const kw[] = {"A", "x", "b", "transpose"};
    const Expr *v[4] = {NULL, NULL, NULL, NULL};
    RETURN_IF_ERROR(keywords(lw, c, "qd.nn.matvec", kw, 4, v));
    for (uint32_t i = 0; i < c->npos && i < 4; i++) {
        if (v[i]) {
            return lw_error(lw, c->node, QD_ERR_TYPE,
                            "qd.nn.matvec() got multiple values for argument '%s'", kw[i]);
        }
        v[i] = &c->pos[i];
    }
    if (c->npos > 4 || !v[0] || !v[1]) {
        return lw_error(lw, c->node, QD_ERR_TYPE,
                        "qd.nn.matvec(A, x, b=None, transpose=False) takes a matrix view and a "
                        "CoopVec");
    }
    const Expr *b = v[2] && v[2]->kind != EX_NONE ? v[2] : NULL;
    bool transpose = false;
    if (v[3]) {
        if (v[3]->kind != EX_BOOL && v[3]->kind != EX_INT) {
            return lw_error(lw, c->node, QD_ERR_TYPE,
                            "transpose must be a compile-time bool (True or False)");
        }
        transpose = v[3]->ival != 0;
    }
    return lw_nn_matvec(lw, c->node, v[0], v[1], b, transpose, out);
}

int
lw_nn_call(Lowerer *lw, const QdAst *node, const char *name, const CallArgs *c, Expr *out)
{
    (void)node;
    size_t k = 0;
    while (k < QD_ARRAY_LEN(nn_builtins) && strcmp(nn_builtins[k].name, name) != 0) {
        k++;
    }
    if (k == QD_ARRAY_LEN(nn_builtins)) {
        return lw_error(lw, c->node, QD_ERR_SYNTAX, "qd.nn.%s cannot be called in a kernel", name);
    }
    NnKind kind = nn_builtins[k].kind;
    if (kind == NN_CONSTRUCT) {
        return construct(lw, c, out);
    }
    if (kind == NN_MATVEC) {
        return call_matvec(lw, c, out);
    }
    if (c->nkw) {
        return lw_error(lw, c->node, QD_ERR_SYNTAX, "qd.nn.%s() takes no keyword arguments", name);
    }
    switch (kind) {
    case NN_EXP2:
    case NN_LOG2:
        RETURN_IF_ERROR(nargs(lw, c, name, 1, 1));
        return elementwise(lw, c->node, kind == NN_EXP2 ? EL_EXP2 : EL_LOG2, QD_OP_COUNT_, c->pos,
                           1, out);
    case NN_FMA:
        RETURN_IF_ERROR(nargs(lw, c, name, 3, 3));
        return elementwise(lw, c->node, EL_FMA, QD_OP_COUNT_, c->pos, 3, out);
    case NN_STEP:
        RETURN_IF_ERROR(nargs(lw, c, name, 2, 2));
        return elementwise(lw, c->node, EL_STEP, QD_OP_COUNT_, c->pos, 2, out);
    case NN_CAST:
        RETURN_IF_ERROR(nargs(lw, c, name, 2, 2));
        return cast(lw, c->node, &c->pos[0], &c->pos[1], out);
    case NN_DOT:
        RETURN_IF_ERROR(nargs(lw, c, name, 2, 2));
        return dot(lw, c->node, &c->pos[0], &c->pos[1], out);
    default:
        return qd_error(lw->ctx, lw->loc, QD_ERR_INTERNAL, "qd.nn.%s has no lowering", name);
    }
}

int
lw_nn_builtin(Lowerer *lw, const char *name, const CallArgs *c, Expr *out)
{
    if (!first_coopvec(c->pos, c->npos)) {
        return LW_DECLINED;
    }
    const QdAst *node = c->node;
    if (strcmp(name, "max") == 0 || strcmp(name, "min") == 0) {
        if (c->npos != 2 || c->nkw) {
            return lw_error(lw, node, QD_ERR_TYPE,
                            "qd.%s of a qd.nn.CoopVec takes two operands (a CoopVec and a CoopVec "
                            "or a scalar)", name);
        }
        return elementwise(lw, node, EL_OP, name[1] == 'a' ? QD_OP_MAX : QD_OP_MIN, c->pos, 2, out);
    }
    if (strcmp(name, "tanh") == 0 || strcmp(name, "abs") == 0) {
        RETURN_IF_ERROR(nargs(lw, c, name, 1, 1));
        return elementwise(lw, node, name[0] == 't' ? EL_F32 : EL_OP,
                           name[0] == 't' ? QD_OP_TANH : QD_OP_ABS, c->pos, 1, out);
    }
    if (strcmp(name, "cast") == 0) {
        RETURN_IF_ERROR(nargs(lw, c, name, 2, 2));
        return cast(lw, node, &c->pos[0], &c->pos[1], out);
    }
    if (strcmp(name, "len") == 0) {
        RETURN_IF_ERROR(nargs(lw, c, name, 1, 1));
        memset(out, 0, sizeof(*out));
        out->kind = EX_INT;
        out->ival = c->pos[0].nitems;
        return 0;
    }
    if (lw_builtin_is_elementwise(name)) {
        return unsupported(lw, node, qd_arena_printf(lw->arena, "qd.%s", name));
    }
    /* qd.static(v), qd.Vector(v), tuple(v), print(...): what they do with any vector */
    return LW_DECLINED;
}

/***** the operations table *****/

static int
coopvec_subscript(Lowerer *lw, const QdAst *node, const Expr *base, const QdAst *index, Expr *out)
{
    (void)base, (void)index, (void)out;
    return lw_error(lw, node, QD_ERR_TYPE,
                    "'CoopVec' object is not subscriptable: the elements of a cooperative vector "
                    "may be spread over the threads of a subgroup, so they cannot be indexed; "
                    "unpack it (a, b, *rest = v) or convert it (qd.Vector(v))");
}

static int
coopvec_store_subscript(Lowerer *lw, const QdAst *node, const Expr *base, const QdAst *index,
                        const Expr *value, const QdAst *aug)
{
    (void)value, (void)aug;
    return coopvec_subscript(lw, node, base, index, NULL);
}

static int
coopvec_attribute(Lowerer *lw, const QdAst *node, const Expr *base, Expr *out)
{
    (void)base, (void)out;
    return lw_error(lw, node, QD_ERR_TYPE, "'CoopVec' object has no attribute '%s' in kernels",
                    node->name);
}

static int
coopvec_store_attribute(Lowerer *lw, const QdAst *target, const Expr *base, const Expr *value)
{
    (void)value;
    return coopvec_attribute(lw, target, base, NULL);
}

static int
coopvec_unpack(Lowerer *lw, const QdAst *target, const Expr *value, Expr *out)
{
    (void)lw, (void)target;
    memset(out, 0, sizeof(*out));
    out->kind = EX_TUPLE;
    out->items = value->items;
    out->nitems = value->nitems;
    return 0;
}

static const char *
binary_symbol(int op)
{
    switch (op) {
    case QD_BIN_DIV: return "'/'";
    case QD_BIN_FLOORDIV: return "'//'";
    case QD_BIN_MOD: return "'%'";
    case QD_BIN_POW: return "'**'";
    case QD_BIN_LSHIFT: return "'<<'";
    case QD_BIN_RSHIFT: return "'>>'";
    case QD_BIN_BITOR: return "'|'";
    case QD_BIN_BITXOR: return "'^'";
    case QD_BIN_BITAND: return "'&'";
    default: return "this operator";
    }
}

static int
coopvec_binary(Lowerer *lw, const QdAst *node, int op, const Expr *a, const Expr *b, Expr *out)
{
    if (op == QD_BIN_MATMUL) {
        if (lw_is_matrix_view(a) && lw_is_coopvec(b)) {
            return lw_nn_matvec(lw, node, a, b, NULL, false, out);
        }
        return lw_error(lw, node, QD_ERR_TYPE,
                        "'@' with a qd.nn.CoopVec multiplies a qd.nn.MatrixView by it: A @ v");
    }
    if (op == QD_BIN_DIV) {
        return lw_error(lw, node, QD_ERR_TYPE,
                        "division is not supported on a qd.nn.CoopVec; multiply by a reciprocal");
    }
    if (op != QD_BIN_ADD && op != QD_BIN_SUB && op != QD_BIN_MUL) {
        return unsupported(lw, node, qd_arena_printf(lw->arena, "the %s operator", binary_symbol(op)));
    }
    QdOp qop = op == QD_BIN_ADD ? QD_OP_ADD : op == QD_BIN_SUB ? QD_OP_SUB : QD_OP_MUL;
    Expr ops[2] = {*a, *b};
    return elementwise(lw, node, EL_OP, qop, ops, 2, out);
}

static int
coopvec_compare(Lowerer *lw, const QdAst *node, int op, const Expr *a, const Expr *b, Expr *out)
{
    (void)op, (void)a, (void)b, (void)out;
    return unsupported(lw, node, "comparison");
}

static int
coopvec_unary(Lowerer *lw, const QdAst *node, int op, const Expr *a, Expr *out)
{
    if (op == QD_UNARY_PLUS) {
        *out = *a;
        return 0;
    }
    if (op != QD_UNARY_MINUS) {
        return unsupported(lw, node, op == QD_UNARY_NOT ? "'not'" : "'~'");
    }
    return elementwise(lw, node, EL_OP, QD_OP_NEG, a, 1, out);
}

static int
coopvec_logical(Lowerer *lw, const QdAst *node, bool is_and, const Expr *a, const Expr *b,
                Expr *out)
{
    (void)a, (void)b, (void)out;
    return unsupported(lw, node, is_and ? "'and'" : "'or'");
}

/* `v op= w`: v = v op w, stored into v's slots. */
static int
coopvec_aug_assign(Lowerer *lw, const QdAst *node, const Expr *target, const Expr *value)
{
    Expr r;
    RETURN_IF_ERROR(coopvec_binary(lw, node, node->op, target, value, &r));
    return lw_matrix_store(lw, node, target, &r);
}

/* `name = value`: a new variable keeps the CoopVec's table. An existing CoopVec variable of
 * the same length and dtype is stored into (so it can be loop state); one of another length or
 * dtype is rebound to new slots (`h = layer(h)` through layers of different widths), which is
 * only allowed in the block that bound it, outside any runtime loop or branch entered since. */
static int
coopvec_assign_name(Lowerer *lw, const QdAst *target, Var *v, const Expr *value)
{
    if (v && lw_is_coopvec(&v->e) && lw_is_coopvec(value) && v->e.nitems == value->nitems &&
        qd_type_equal(v->e.ty, value->ty)) {
        return lw_matrix_store(lw, target, &v->e, value);
    }
    if (v) {
        bool same_level = v >= lw->vars.data + lw->frame->vars_base &&
                          v->control_depth == lw->frame->control_depth;
        if (!lw_is_coopvec(&v->e) || !lw_is_coopvec(value) || !same_level) {
            return lw_error(lw, target, QD_ERR_TYPE,
                            "cannot assign to '%s': a qd.nn.CoopVec variable changes its length or "
                            "dtype only where it was defined, not inside a runtime loop or branch "
                            "(a CoopVec of %u %s here)",
                            target->name, lw_is_coopvec(&v->e) ? v->e.nitems : value->nitems,
                            type_name(lw_is_coopvec(&v->e) ? v->e.ty : value->ty));
        }
    }
    Expr slots;
    RETURN_IF_ERROR(lw_struct_new_var(lw, target, value, &slots));
    if (v) {
        v->e = slots; /* rebound: later reads see the new slots */
        return 0;
    }
    return lw_bind(lw, target->name, &slots, NULL);
}

static int
coopvec_iterate(Lowerer *lw, const QdAst *node, const Expr *e, IterSpec *it)
{
    (void)e, (void)it;
    return lw_error(lw, node, QD_ERR_SYNTAX,
                    "iterate over a qd.nn.CoopVec at compile time: for x in qd.static(v)");
}

const ExprOps lw_coopvec_ops = {
    .name = "coopvec",
    .attribute = coopvec_attribute,
    .store_attribute = coopvec_store_attribute,
    .subscript = coopvec_subscript,
    .store_subscript = coopvec_store_subscript,
    .store = lw_matrix_store,
    .aug_assign = coopvec_aug_assign,
    .assign_name = coopvec_assign_name,
    .snapshot = lw_struct_load,
    .unpack = coopvec_unpack,
    .binary = coopvec_binary,
    .compare = coopvec_compare,
    .unary = coopvec_unary,
    .logical = coopvec_logical,
    .iterate = coopvec_iterate,
};
