/* frontend/lower_matrix_methods.c -- methods of vector and matrix values in kernels, and the
 * builtins that take them (element-wise math and atomics, any/all, len, qd.zero/one).
 *
 * `v.dot(w)`, `v.cross(w)`, norms, `transpose()`, `trace()`, reductions, `cast`, `fill` and the
 * rest of spec 1.3: each unrolls into scalar operations on the items (lower_matrix.c). Operands
 * whose items are used more than once are loaded once first. determinant() and inverse() are
 * handed to lw_matrix_linalg_method (lower_matrix_linalg.c) after the shape check.
 */
#include "lower.h"

#include <string.h>

int
lw_matrix_transpose(Lowerer *lw, const QdAst *node, const Expr *a, Expr *out)
{
    if (a->is_vector) {
        return lw_error(lw, node, QD_ERR_COMPILATION,
                        "transpose() of a vector is not supported: use a.outer_product(b) for "
                        "v @ w.transpose()");
    }
    RETURN_IF_ERROR(lw_matrix_new(lw, a->cols, a->rows, false, a->ty, out));
    for (uint32_t i = 0; i < a->rows; i++) {
        for (uint32_t j = 0; j < a->cols; j++) {
            out->items[j * a->rows + i] = a->items[i * a->cols + j];
        }
    }
    return 0;
}

/* Reduction of all items with binary op (or min/max through lw_minmax when op < 0). */
static int
reduce(Lowerer *lw, const QdAst *node, const Expr *a, int op, QdOp minmax, Expr *out)
{
    if (a->nitems == 0) {
        return lw_error(lw, node, QD_ERR_COMPILATION, "reduction of an empty matrix");
    }
    Expr acc = a->items[0];
    if (acc.kind == EX_LVALUE) {
        RETURN_IF_ERROR(lw_rvalue(lw, node, &acc, &acc));
    }
    for (uint32_t i = 1; i < a->nitems; i++) {
        if (op >= 0) {
            RETURN_IF_ERROR(lw_binary(lw, node, op, &acc, &a->items[i], &acc));
        } else {
            RETURN_IF_ERROR(lw_minmax(lw, node, minmax, &acc, &a->items[i], &acc));
        }
    }
    return lw_matrix_item(lw, node, &acc, a->ty, out);
}

static int
need_vector(Lowerer *lw, const QdAst *node, const Expr *a, const char *what)
{
    if (a->kind != EX_MATRIX || !a->is_vector) {
        return lw_error(lw, node, QD_ERR_COMPILATION, "%s needs vectors", what);
    }
    return 0;
}

static int
need_square(Lowerer *lw, const QdAst *node, const Expr *a)
{
    if (a->is_vector || a->rows != a->cols) {
        return lw_error(lw, node, QD_ERR_COMPILATION, "expected a square matrix, got shape %s",
                        lw_matrix_shape_str(lw, a));
    }
    return 0;
}

static int
norm_sqr(Lowerer *lw, const QdAst *node, const Expr *a, Expr *out)
{
    return lw_matrix_dot(lw, node, a->items, 1, a->items, 1, a->nitems, out);
}

/* A float scalar argument (eps) or 0. */
static const Expr *
eps_arg(const MatrixCall *c)
{
    return lw_matrix_arg(c, 0, "eps");
}

static int
float_of(Lowerer *lw, const QdAst *node, const Expr *x, Expr *out)
{
    const QdType *t = lw_dtype_of(lw, x);
    if (t && !qd_type_is_float(t)) {
        return lw_convert(lw, node, x, qd_type_scalar(lw->opt->default_fp), out);
    }
    *out = *x;
    return 0;
}

/* The methods of matrix_methods.def. */
typedef enum MatrixMethod {
#define QD_MATRIX_METHOD(name, ID) MM_##ID,
#include "matrix_methods.def"
#undef QD_MATRIX_METHOD
    MM_COUNT_
} MatrixMethod;

static const char *const method_names[] = {
#define QD_MATRIX_METHOD(name, ID) name,
#include "matrix_methods.def"
#undef QD_MATRIX_METHOD
};

/* The method called `name`, or MM_COUNT_. */
static MatrixMethod
find_method(const char *name)
{
    for (size_t i = 0; i < QD_ARRAY_LEN(method_names); i++) {
        if (strcmp(method_names[i], name) == 0) {
            return (MatrixMethod)i;
        }
    }
    return MM_COUNT_;
}

/* Method `name` of matrix `self` (dot, cross, norm, sum, cast, fill, ...). */
static int
matrix_method(Lowerer *lw, const QdAst *node, const char *name, const Expr *self,
                 const MatrixCall *c, Expr *out)
{
    MatrixMethod m = find_method(name);
    const Expr *a = self;
    const Expr *other = lw_matrix_arg(c, 0, "other");
    lw_set_loc(lw, node);
    Expr la, lo;
    if (m != MM_FILL) {
        RETURN_IF_ERROR(lw_matrix_loaded(lw, node, &a, &la));
        RETURN_IF_ERROR(lw_matrix_loaded(lw, node, &other, &lo));
    }
    if (m == MM_DOT || m == MM_FROBENIUS_INNER) {
        if (!other || other->kind != EX_MATRIX || other->nitems != a->nitems) {
            return lw_error(lw, node, QD_ERR_COMPILATION, "%s() needs a matrix of the same shape", name);
        }
        if (m == MM_DOT) {
            RETURN_IF_ERROR(need_vector(lw, node, a, "dot()"));
            RETURN_IF_ERROR(need_vector(lw, node, other, "dot()"));
        }
        Expr r;
        RETURN_IF_ERROR(lw_matrix_dot(lw, node, a->items, 1, other->items, 1, a->nitems, &r));
        return lw_convert(lw, node, &r, lw_promote(a->ty, other->ty), out);
    }
    if (m == MM_CROSS) {
        RETURN_IF_ERROR(need_vector(lw, node, a, "cross()"));
        if (!other) {
            return lw_error(lw, node, QD_ERR_SYNTAX, "cross() needs another vector");
        }
        RETURN_IF_ERROR(need_vector(lw, node, other, "cross()"));
        if (a->rows != other->rows || (a->rows != 2 && a->rows != 3)) {
            return lw_error(lw, node, QD_ERR_COMPILATION,
                            "cross() needs two vectors of the same size 2 or 3");
        }
        const Expr *x = a->items, *y = other->items;
        const QdType *ty = lw_promote(a->ty, other->ty);
        static const uint8_t ij[3][2] = {{1, 2}, {2, 0}, {0, 1}};
        uint32_t n = a->rows == 2 ? 1 : 3;
        Expr res[3];
        for (uint32_t k = 0; k < n; k++) {
            uint32_t i = a->rows == 2 ? 0 : ij[k][0], j = a->rows == 2 ? 1 : ij[k][1];
            Expr p, q;
            RETURN_IF_ERROR(lw_binary(lw, node, QD_BIN_MUL, &x[i], &y[j], &p));
            RETURN_IF_ERROR(lw_binary(lw, node, QD_BIN_MUL, &x[j], &y[i], &q));
            RETURN_IF_ERROR(lw_binary(lw, node, QD_BIN_SUB, &p, &q, &res[k]));
        }
        if (n == 1) {
            return lw_convert(lw, node, &res[0], ty, out);
        }
        return lw_matrix_from_scalars(lw, node, res, 3, 1, true, ty, out);
    }
    if (m == MM_OUTER_PRODUCT) {
        RETURN_IF_ERROR(need_vector(lw, node, a, "outer_product()"));
        if (!other) {
            return lw_error(lw, node, QD_ERR_SYNTAX, "outer_product() needs another vector");
        }
        RETURN_IF_ERROR(need_vector(lw, node, other, "outer_product()"));
        const QdType *ty = lw_promote(a->ty, other->ty);
        RETURN_IF_ERROR(lw_matrix_new(lw, a->rows, other->rows, false, ty, out));
        for (uint32_t i = 0; i < a->rows; i++) {
            for (uint32_t j = 0; j < other->rows; j++) {
                Expr p;
                RETURN_IF_ERROR(lw_binary(lw, node, QD_BIN_MUL, &a->items[i], &other->items[j], &p));
                RETURN_IF_ERROR(lw_matrix_item(lw, node, &p, ty, &out->items[i * other->rows + j]));
            }
        }
        return 0;
    }
    if (m == MM_NORM_SQR) {
        Expr r;
        RETURN_IF_ERROR(norm_sqr(lw, node, a, &r));
        return lw_matrix_item(lw, node, &r, a->ty, out);
    }
    if (m == MM_NORM || m == MM_NORM_INV || m == MM_NORMALIZED) {
        Expr s, f;
        RETURN_IF_ERROR(norm_sqr(lw, node, a, &s));
        RETURN_IF_ERROR(float_of(lw, node, &s, &s));
        const Expr *eps = eps_arg(c);
        if (eps && m != MM_NORMALIZED) { /* norm / norm_inv: sqrt(Σx² + eps) */
            RETURN_IF_ERROR(lw_binary(lw, node, QD_BIN_ADD, &s, eps, &s));
        }
        RETURN_IF_ERROR(lw_rvalue(lw, node, &s, &s));
        QdOp op = m == MM_NORM_INV ? QD_OP_RSQRT : QD_OP_SQRT;
        uint32_t id = lw_emit_value(lw, op, s.ty, s.id, 0);
        if (id == QD_NO_VALUE) {
            return -1;
        }
        memset(&f, 0, sizeof(f));
        f.kind = EX_VALUE;
        f.id = id;
        f.ty = s.ty;
        if (m != MM_NORMALIZED) {
            *out = f;
            return 0;
        }
        RETURN_IF_ERROR(need_vector(lw, node, a, "normalized()"));
        if (eps) {
            RETURN_IF_ERROR(lw_binary(lw, node, QD_BIN_ADD, &f, eps, &f));
        }
        Expr one = {0}, inv;
        one.kind = EX_FLOAT;
        one.fval = 1.0;
        RETURN_IF_ERROR(lw_binary(lw, node, QD_BIN_DIV, &one, &f, &inv));
        return lw_matrix_binary(lw, node, QD_BIN_MUL, a, &inv, out);
    }
    if (m == MM_TRANSPOSE) {
        return lw_matrix_transpose(lw, node, a, out);
    }
    if (m == MM_TRACE) {
        RETURN_IF_ERROR(need_square(lw, node, a));
        Expr acc = a->items[0];
        for (uint32_t i = 1; i < a->rows; i++) {
            RETURN_IF_ERROR(lw_binary(lw, node, QD_BIN_ADD, &acc, &a->items[i * a->cols + i], &acc));
        }
        return lw_matrix_item(lw, node, &acc, a->ty, out);
    }
    if (m == MM_DETERMINANT || m == MM_INVERSE) {
        RETURN_IF_ERROR(need_square(lw, node, a));
        uint32_t limit = m == MM_DETERMINANT ? 4 : 12; /* closed forms to 4x4, elimination to 12x12 */
        if (a->rows > limit) {
            return lw_error(lw, node, QD_ERR_COMPILATION,
                            "%s() supports matrices up to %ux%u, got %ux%u", name, limit, limit,
                            a->rows, a->cols);
        }
        return lw_matrix_linalg_method(lw, node, name, a, out); /* items loaded (values) */
    }
    if (m == MM_SUM) {
        return reduce(lw, node, a, QD_BIN_ADD, QD_OP_COUNT_, out);
    }
    if (m == MM_MAX || m == MM_MIN) {
        return reduce(lw, node, a, -1, m == MM_MAX ? QD_OP_MAX : QD_OP_MIN, out);
    }
    if (m == MM_ANY || m == MM_ALL) {
        Expr zero = {0}, ne, acc = {0};
        zero.kind = EX_INT;
        for (uint32_t i = 0; i < a->nitems; i++) {
            RETURN_IF_ERROR(lw_compare(lw, node, QD_CMP_NE, &a->items[i], &zero, &ne));
            if (i == 0) {
                acc = ne;
            } else {
                RETURN_IF_ERROR(lw_binary(lw, node, m == MM_ANY ? QD_BIN_BITOR : QD_BIN_BITAND,
                                          &acc, &ne, &acc));
            }
        }
        return lw_matrix_item(lw, node, &acc, qd_type_scalar(QD_TY_U1), out);
    }
    if (m == MM_CAST) {
        const QdType *ty;
        RETURN_IF_ERROR(lw_matrix_dtype_arg(lw, node, lw_matrix_arg(c, 0, "dtype"), &ty));
        if (!ty) {
            return lw_error(lw, node, QD_ERR_SYNTAX, "cast() needs a dtype");
        }
        RETURN_IF_ERROR(lw_matrix_new(lw, a->rows, a->cols, a->is_vector, ty, out));
        for (uint32_t i = 0; i < a->nitems; i++) {
            RETURN_IF_ERROR(lw_matrix_item(lw, node, &a->items[i], ty, &out->items[i]));
        }
        return 0;
    }
    if (m == MM_FILL) {
        const Expr *v = lw_matrix_arg(c, 0, "val");
        if (!v) {
            return lw_error(lw, node, QD_ERR_SYNTAX, "fill() needs a value");
        }
        RETURN_IF_ERROR(lw_matrix_store(lw, node, a, v));
        out->kind = EX_VOID;
        return 0;
    }
    if (m == MM_GET_SHAPE) {
        memset(out, 0, sizeof(*out));
        out->kind = EX_TUPLE;
        out->nitems = a->is_vector ? 1 : 2;
        out->items = QD_NEW_ARRAY(lw->arena, Expr, 2);
        if (!out->items) {
            return lw_nomem(lw);
        }
        out->items[0].kind = out->items[1].kind = EX_INT;
        out->items[0].ival = a->rows;
        out->items[1].ival = a->cols;
        return 0;
    }
    return lw_error(lw, node, QD_ERR_SYNTAX, "matrix method '%s' is not supported in kernels", name);
}

bool
lw_matrix_is_method(const char *name)
{
    return find_method(name) != MM_COUNT_;
}

/***** builtin calls with vector/matrix arguments *****/

int
lw_matrix_call(Lowerer *lw, const QdAst *node, const Expr *fn, const MatrixCall *c, Expr *out)
{
    if (strncmp(fn->str, "matrix.", 7) == 0 && fn->items) {
        return matrix_method(lw, node, fn->str + 7, &fn->items[0], c, out);
    }
    if (strcmp(fn->str, "buffer_view.subview") == 0 && fn->items) {
        if (c->nkw) {
            return lw_error(lw, node, QD_ERR_SYNTAX, "subview() takes positional arguments");
        }
        return lw_buffer_view_subview(lw, node, &fn->items[0], c->pos, c->npos, out);
    }
    if (strcmp(fn->str, "Matrix") == 0 || strcmp(fn->str, "Vector") == 0 ||
        strncmp(fn->str, "Matrix.", 7) == 0) {
        return lw_matrix_builtin(lw, node, fn->str, c, out);
    }
    if (lw_builtin_flags(fn->str) & BI_LINALG) {
        return 1; /* their lowerings (builtins.def) take the matrices whole */
    }
    const Expr *shape = NULL;
    for (uint32_t i = 0; i < c->npos && !shape; i++) {
        shape = c->pos[i].kind == EX_MATRIX ? &c->pos[i] : NULL;
    }
    if (!shape || strcmp(fn->str, "print") == 0 || strcmp(fn->str, "rescale_index") == 0 ||
        strcmp(fn->str, "get_addr") == 0) {
        return 1;
    }
    if (c->npos == 1 && (strcmp(fn->str, "any") == 0 || strcmp(fn->str, "all") == 0)) {
        MatrixCall none = {NULL, 0, NULL, NULL, 0};
        return matrix_method(lw, node, fn->str, shape, &none, out);
    }
    if (c->npos == 1 && (strcmp(fn->str, "zero") == 0 || strcmp(fn->str, "one") == 0)) {
        /* qd.zero(m) / qd.one(m): a matrix of m's shape; elements typed as `m * k` */
        Expr k = {0};
        k.kind = EX_INT;
        k.ival = fn->str[0] == 'o';
        const QdType *ty = lw_promote(shape->ty, lw_literal_type(lw, &k));
        RETURN_IF_ERROR(lw_matrix_new(lw, shape->rows, shape->cols, shape->is_vector, ty, out));
        for (uint32_t i = 0; i < shape->nitems; i++) {
            RETURN_IF_ERROR(lw_matrix_item(lw, node, &k, ty, &out->items[i]));
        }
        return 0;
    }
    if (strcmp(fn->str, "len") == 0) {
        memset(out, 0, sizeof(*out));
        out->kind = EX_INT;
        out->ival = shape->rows;
        return 0;
    }
    if (!lw_builtin_is_elementwise(fn->str)) { /* builtins.def */
        return lw_error(lw, node, QD_ERR_TYPE, "qd.%s does not take a vector or matrix", fn->str);
    }
    Expr *pos = QD_NEW_ARRAY(lw->arena, Expr, c->npos ? c->npos : 1);
    if (!pos) {
        return lw_nomem(lw);
    }
    for (uint32_t i = 0; i < c->npos; i++) {
        const Expr *e = &c->pos[i];
        RETURN_IF_ERROR(lw_matrix_operand(lw, node, &e, &pos[i])); /* qd.max(v, [0, 1]) */
        pos[i] = *e;
        if (e->kind == EX_MATRIX && (e->rows != shape->rows || e->cols != shape->cols)) {
            return lw_error(lw, node, QD_ERR_TYPE, "qd.%s: vector/matrix arguments of different shapes",
                            fn->str);
        }
    }
    Expr *results = QD_NEW_ARRAY(lw->arena, Expr, shape->nitems ? shape->nitems : 1);
    Expr *args = QD_NEW_ARRAY(lw->arena, Expr, c->npos + c->nkw + 1);
    if (!results || !args) {
        return lw_nomem(lw);
    }
    bool is_void = false;
    for (uint32_t k = 0; k < shape->nitems; k++) {
        for (uint32_t i = 0; i < c->npos; i++) {
            args[i] = pos[i].kind == EX_MATRIX ? pos[i].items[k] : pos[i];
        }
        if (c->nkw) {
            memcpy(args + c->npos, c->kwv, sizeof(Expr) * c->nkw);
        }
        MatrixCall ck = {args, c->npos, c->kw, args + c->npos, c->nkw};
        RETURN_IF_ERROR(lw_call_builtin(lw, node, fn->str, &ck, &results[k]));
        is_void |= results[k].kind == EX_VOID;
    }
    if (is_void) {
        out->kind = EX_VOID;
        return 0;
    }
    return lw_matrix_from_scalars(lw, node, results, shape->rows, shape->cols, shape->is_vector,
                                  NULL, out);
}
