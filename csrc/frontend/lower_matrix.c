/* frontend/lower_matrix.c -- qd.Vector / qd.Matrix values in kernels: construction, operators,
 * stores.
 *
 * A vector or matrix is an EX_MATRIX Expr: rows x cols scalar items in row-major order (a vector
 * of n is n x 1 with is_vector set), all of element type ty. Every item is its own scalar: a
 * runtime value, an lvalue (a variable's slot, a field or ndarray element) or a typed
 * compile-time constant, so the value is unrolled at compile time and LLVM keeps each element in
 * its own register. Operations are element-wise over the items (a scalar operand is broadcast);
 * `@`, dot, cross, norms and reductions are unrolled sums of products. Variables hold one slot
 * per element (lw_struct_new_var copies matrices as well as structs).
 *
 * The constructors are builtins named "Matrix", "Vector" and "Matrix.<name>"; type objects
 * (qd.types.vector / matrix, qd.math.vec3, ...) are host objects of kind QD_HOST_MATRIX_TYPE
 * carrying n, m, ndim and dtype; a method `v.name` is an EX_BUILTIN named "matrix.<name>" with
 * the matrix in items[0]. Methods are in lower_matrix_methods.c (determinant() and inverse() go to
 * lw_matrix_linalg_method, lower_matrix_linalg.c), element access, slices and swizzles in
 * lower_matrix_access.c, fields, ndarrays and the kernel boundary in lower_matrix_field.c.
 */
#include "lower.h"

#include <stdio.h>
#include <string.h>

#define MAX_ENTRIES 144

int
lw_matrix_new(Lowerer *lw, uint32_t rows, uint32_t cols, bool is_vector, const QdType *ty, Expr *out)
{
    memset(out, 0, sizeof(*out));
    out->kind = EX_MATRIX;
    out->rows = rows;
    out->cols = cols;
    out->nitems = rows * cols;
    out->is_vector = is_vector;
    out->ty = ty;
    out->items = QD_NEW_ARRAY(lw->arena, Expr, out->nitems ? out->nitems : 1);
    return out->items ? 0 : lw_nomem(lw);
}

/* A scalar converted to element type ty: compile-time values stay typed constants. */
int
lw_matrix_item(Lowerer *lw, const QdAst *node, const Expr *e, const QdType *ty, Expr *out)
{
    if (lw_is_compile_time_scalar(e)) {
        Expr c = *e;
        RETURN_IF_ERROR(lw_typed_constant(lw, node, &c, ty));
        *out = c;
        return 0;
    }
    if (e->kind != EX_VALUE && e->kind != EX_LVALUE) {
        return lw_error(lw, node, QD_ERR_TYPE, "a matrix element must be a scalar");
    }
    return lw_convert(lw, node, e, ty, out);
}

/* A scalar operand used many times: lvalues are loaded once. */
int
lw_matrix_scalar(Lowerer *lw, const QdAst *node, const Expr *e, Expr *out)
{
    if (e->kind == EX_LVALUE) {
        return lw_rvalue(lw, node, e, out);
    }
    if (!lw_is_compile_time_scalar(e) && e->kind != EX_VALUE) {
        return lw_error(lw, node, QD_ERR_TYPE, "unsupported operand for a matrix operation");
    }
    *out = *e;
    return 0;
}

/* The UserWarning for more than 144 entries. */
static int
matrix_warn_size(Lowerer *lw, const QdAst *node, uint32_t n)
{
    if (n > MAX_ENTRIES) {
        return lw_warn(lw, node, "UserWarning",
                       "Matrix with %u > %d entries are not suggested: they are unrolled into scalar "
                       "registers, which makes compilation slow and may spill; use a field for large "
                       "matrices", n, MAX_ENTRIES);
    }
    return 0;
}

/* The promoted element type of a list of scalars (ints -> default_ip, floats -> default_fp). */
static const QdType *
promoted_type(Lowerer *lw, const Expr *items, uint32_t n)
{
    const QdType *ty = NULL;
    for (uint32_t i = 0; i < n; i++) {
        const QdType *t = lw_dtype_of(lw, &items[i]);
        if (t) {
            ty = ty ? lw_promote(ty, t) : t;
        }
    }
    return ty ? ty : qd_type_scalar(lw->opt->default_ip);
}

/* Builds a matrix from scalars (converted to ty, or to their promoted type when ty is NULL). */
int
lw_matrix_from_scalars(Lowerer *lw, const QdAst *node, const Expr *items, uint32_t rows,
                       uint32_t cols, bool is_vector, const QdType *ty, Expr *out)
{
    if (!ty) {
        ty = promoted_type(lw, items, rows * cols);
    }
    RETURN_IF_ERROR(lw_matrix_new(lw, rows, cols, is_vector, ty, out));
    for (uint32_t i = 0; i < rows * cols; i++) {
        RETURN_IF_ERROR(lw_matrix_item(lw, node, &items[i], ty, &out->items[i]));
    }
    return 0;
}

/* Appends the scalars of e (a scalar, a tuple/list of them, a matrix) to a growing list. */
typedef QdVec(Expr) ScalarList;

static int
flatten(Lowerer *lw, const QdAst *node, const Expr *e, ScalarList *out)
{
    if (e->kind == EX_TUPLE || e->kind == EX_MATRIX) {
        for (uint32_t i = 0; i < e->nitems; i++) {
            RETURN_IF_ERROR(flatten(lw, node, &e->items[i], out));
        }
        return 0;
    }
    if (!lw_is_compile_time_scalar(e) && e->kind != EX_VALUE && e->kind != EX_LVALUE) {
        return lw_error(lw, node, QD_ERR_TYPE, "a matrix element must be a scalar");
    }
    Expr v = *e;
    if (v.kind == EX_LVALUE) {
        RETURN_IF_ERROR(lw_rvalue(lw, node, e, &v));
    }
    return qd_vec_push(lw->arena, out, v) == 0 ? 0 : lw_nomem(lw);
}

/* The element type argument `dt` of a constructor (NULL when absent or None). */
int
lw_matrix_dtype_arg(Lowerer *lw, const QdAst *node, const Expr *e, const QdType **ty)
{
    *ty = NULL;
    if (!e || e->kind == EX_NONE) {
        return 0;
    }
    if (e->kind != EX_PYOBJ || e->hkind != QD_HOST_DTYPE) {
        return lw_error(lw, node, QD_ERR_TYPE, "dt must be a data type");
    }
    *ty = e->ty;
    return 0;
}

/* qd.Vector(list, dt=None) / qd.Matrix(list_of_rows | list, dt=None). */
static int
construct(Lowerer *lw, const QdAst *node, bool vector, const Expr *arg, const Expr *dt, Expr *out)
{
    const QdType *ty;
    RETURN_IF_ERROR(lw_matrix_dtype_arg(lw, node, dt, &ty));
    if (arg->kind == EX_MATRIX) {
        ScalarList s = {0};
        RETURN_IF_ERROR(flatten(lw, node, arg, &s));
        return lw_matrix_from_scalars(lw, node, s.data, arg->rows, arg->cols, arg->is_vector,
                                      ty ? ty : arg->ty, out);
    }
    if (arg->kind != EX_TUPLE) {
        return lw_error(lw, node, QD_ERR_TYPE, "qd.%s takes a list or tuple of elements",
                        vector ? "Vector" : "Matrix");
    }
    uint32_t n = arg->nitems;
    bool nested = !vector && n && arg->items[0].kind == EX_TUPLE;
    for (uint32_t i = 0; i < n && !nested; i++) {
        if (arg->items[i].kind == EX_MATRIX) {
            return lw_error(lw, node, QD_ERR_SYNTAX,
                            "cols/rows required when using list of vectors (use qd.Matrix.rows or "
                            "qd.Matrix.cols)");
        }
    }
    for (uint32_t i = 0; i < n && !nested; i++) {
        if (arg->items[i].kind == EX_TUPLE) {
            return lw_error(lw, node, QD_ERR_TYPE, "Element type of the matrix is invalid.");
        }
    }
    ScalarList s = {0};
    uint32_t cols = 1;
    if (nested) {
        cols = arg->items[0].nitems;
        for (uint32_t r = 0; r < n; r++) {
            if (arg->items[r].kind != EX_TUPLE || arg->items[r].nitems != cols) {
                return lw_error(lw, node, QD_ERR_TYPE, "matrix rows must have the same length");
            }
        }
    }
    RETURN_IF_ERROR(flatten(lw, node, arg, &s));
    if (s.len != n * cols) {
        return lw_error(lw, node, QD_ERR_TYPE, "a matrix element must be a scalar");
    }
    RETURN_IF_ERROR(matrix_warn_size(lw, node, n * cols));
    return lw_matrix_from_scalars(lw, node, s.data, n, cols, !nested, ty, out);
}

/* A filled n x m (m = 0: vector) matrix of compile-time value v (int or float) and type ty. */
static int
filled(Lowerer *lw, const QdAst *node, const QdType *ty, uint32_t n, uint32_t m, bool diag_only,
       const Expr *v, Expr *out)
{
    uint32_t cols = m ? m : 1;
    RETURN_IF_ERROR(lw_matrix_new(lw, n, cols, m == 0, ty, out));
    Expr zero = {0};
    zero.kind = EX_INT;
    for (uint32_t r = 0; r < n; r++) {
        for (uint32_t c = 0; c < cols; c++) {
            const Expr *src = (!diag_only || r == c) ? v : &zero;
            RETURN_IF_ERROR(lw_matrix_item(lw, node, src, ty, &out->items[r * cols + c]));
        }
    }
    return 0;
}

static int
int_arg(Lowerer *lw, const QdAst *node, const Expr *e, const char *what, int64_t *v)
{
    if (!e || (e->kind != EX_INT && e->kind != EX_BOOL)) {
        return lw_error(lw, node, QD_ERR_SYNTAX, "%s must be a Python int", what);
    }
    if (e->ival < 0 || e->ival > 4096) {
        return lw_error(lw, node, QD_ERR_SYNTAX, "%s out of range: %lld", what, (long long)e->ival);
    }
    *v = e->ival;
    return 0;
}

/* Argument i of a call: positional, or the keyword `name`; NULL when absent. */
const Expr *
lw_matrix_arg(const MatrixCall *c, uint32_t i, const char *name)
{
    if (i < c->npos) {
        return &c->pos[i];
    }
    for (uint32_t k = 0; k < c->nkw; k++) {
        if (c->kw[k]->name && strcmp(c->kw[k]->name, name) == 0) {
            return &c->kwv[k];
        }
    }
    return NULL;
}

/* Matrix.rows / Matrix.cols: a list of vectors or lists. */
static int
from_rows(Lowerer *lw, const QdAst *node, const Expr *list, bool transpose, Expr *out)
{
    if (list->kind != EX_TUPLE || list->nitems == 0) {
        return lw_error(lw, node, QD_ERR_TYPE, "qd.Matrix.rows/cols take a non-empty list");
    }
    uint32_t n = list->nitems, m = 0;
    ScalarList s = {0};
    for (uint32_t i = 0; i < n; i++) {
        size_t before = s.len;
        RETURN_IF_ERROR(flatten(lw, node, &list->items[i], &s));
        uint32_t len = (uint32_t)(s.len - before);
        if (i == 0) {
            m = len;
        } else if (len != m) {
            return lw_error(lw, node, QD_ERR_TYPE, "all rows/cols must have the same length");
        }
    }
    Expr mat;
    RETURN_IF_ERROR(lw_matrix_from_scalars(lw, node, s.data, n, m, false, NULL, &mat));
    return transpose ? lw_matrix_transpose(lw, node, &mat, out) : (*out = mat, 0);
}

int
lw_matrix_builtin(Lowerer *lw, const QdAst *node, const char *name, const MatrixCall *c, Expr *out)
{
    if (strcmp(name, "Matrix") == 0 || strcmp(name, "Vector") == 0) {
        const Expr *arg = lw_matrix_arg(c, 0, "arr");
        if (!arg) {
            arg = lw_matrix_arg(c, 0, "n");
        }
        if (!arg) {
            return lw_error(lw, node, QD_ERR_SYNTAX, "qd.%s needs a list of elements", name);
        }
        return construct(lw, node, name[0] == 'V', arg, lw_matrix_arg(c, 1, "dt"), out);
    }
    const char *what = name + strlen("Matrix.");
    if (strcmp(what, "zero") == 0 || strcmp(what, "one") == 0 || strcmp(what, "identity") == 0) {
        const QdType *ty;
        int64_t n = 0, m = 0;
        RETURN_IF_ERROR(lw_matrix_dtype_arg(lw, node, lw_matrix_arg(c, 0, "dt"), &ty));
        RETURN_IF_ERROR(int_arg(lw, node, lw_matrix_arg(c, 1, "n"), "n", &n));
        const Expr *me = lw_matrix_arg(c, 2, "m");
        if (me && me->kind != EX_NONE) {
            RETURN_IF_ERROR(int_arg(lw, node, me, "m", &m));
        }
        Expr v = {0};
        v.kind = EX_INT;
        v.ival = what[0] == 'z' ? 0 : 1;
        if (!ty) {
            return lw_error(lw, node, QD_ERR_TYPE, "qd.Matrix.%s needs a dtype first", what);
        }
        if (what[0] == 'i') {
            m = n;
        }
        RETURN_IF_ERROR(matrix_warn_size(lw, node, (uint32_t)(n * (m ? m : 1))));
        return filled(lw, node, ty, (uint32_t)n, (uint32_t)m, what[0] == 'i', &v, out);
    }
    if (strcmp(what, "unit") == 0) {
        int64_t n = 0, i = 0;
        const QdType *ty;
        RETURN_IF_ERROR(int_arg(lw, node, lw_matrix_arg(c, 0, "n"), "n", &n));
        RETURN_IF_ERROR(int_arg(lw, node, lw_matrix_arg(c, 1, "i"), "i", &i));
        RETURN_IF_ERROR(lw_matrix_dtype_arg(lw, node, lw_matrix_arg(c, 2, "dt"), &ty));
        if (i >= n) {
            return lw_error(lw, node, QD_ERR_COMPILATION, "qd.Matrix.unit: index %lld out of range [0, %lld)",
                            (long long)i, (long long)n);
        }
        ty = ty ? ty : qd_type_scalar(lw->opt->default_ip);
        RETURN_IF_ERROR(lw_matrix_new(lw, (uint32_t)n, 1, true, ty, out));
        for (int64_t k = 0; k < n; k++) {
            Expr v = {0};
            v.kind = EX_INT;
            v.ival = k == i;
            RETURN_IF_ERROR(lw_matrix_item(lw, node, &v, ty, &out->items[k]));
        }
        return 0;
    }
    if (strcmp(what, "diag") == 0) {
        int64_t n = 0;
        RETURN_IF_ERROR(int_arg(lw, node, lw_matrix_arg(c, 0, "dim"), "qd.Matrix.diag: dim", &n));
        const Expr *val = lw_matrix_arg(c, 1, "val");
        if (!val) {
            return lw_error(lw, node, QD_ERR_SYNTAX, "qd.Matrix.diag(dim, val) needs val");
        }
        Expr v;
        RETURN_IF_ERROR(lw_matrix_scalar(lw, node, val, &v));
        const QdType *ty = lw_dtype_of(lw, &v);
        return filled(lw, node, ty, (uint32_t)n, (uint32_t)n, true, &v, out);
    }
    if (strcmp(what, "rows") == 0 || strcmp(what, "cols") == 0) {
        const Expr *list = lw_matrix_arg(c, 0, what);
        if (!list) {
            return lw_error(lw, node, QD_ERR_SYNTAX, "qd.Matrix.%s needs a list", what);
        }
        return from_rows(lw, node, list, what[0] == 'c', out);
    }
    return lw_error(lw, node, QD_ERR_SYNTAX, "qd.%s is not supported in kernels", name);
}

/***** type objects *****/

int
lw_matrix_type_info(Lowerer *lw, const QdAst *node, QdHandle type, uint32_t *n, uint32_t *m,
                    bool *is_vector, const QdType **ty)
{
    static const char *const attrs[] = {"n", "m", "ndim"};
    int64_t v[3];
    for (int i = 0; i < 3; i++) {
        QdHandle h;
        QdHostValue hv;
        int rc = lw->host->getattr(lw->host->self, lw->ctx, type, attrs[i], &h);
        if (rc != 0) {
            return rc < 0 ? -1 : lw_error(lw, node, QD_ERR_INTERNAL, "matrix type without %s", attrs[i]);
        }
        RETURN_IF_ERROR(lw->host->describe(lw->host->self, lw->ctx, h, &hv));
        if (hv.kind != QD_HOST_INT) {
            return lw_error(lw, node, QD_ERR_SYNTAX, "matrix type with a non-integer %s", attrs[i]);
        }
        v[i] = hv.ival;
    }
    *n = (uint32_t)v[0];
    *m = (uint32_t)v[1];
    *is_vector = v[2] == 1;
    QdHandle h;
    QdHostValue hv;
    int rc = lw->host->getattr(lw->host->self, lw->ctx, type, "dtype", &h);
    if (rc < 0) {
        return -1;
    }
    *ty = NULL;
    if (rc == 0) {
        RETURN_IF_ERROR(lw->host->describe(lw->host->self, lw->ctx, h, &hv));
        if (hv.kind == QD_HOST_DTYPE) {
            *ty = qd_type_scalar(hv.dtype);
        }
    }
    QdHandle u;
    rc = lw->host->getattr(lw->host->self, lw->ctx, type, "unpacked", &u);
    if (rc == 0) {
        RETURN_IF_ERROR(lw->host->describe(lw->host->self, lw->ctx, u, &hv));
        if (hv.kind == QD_HOST_BOOL && hv.ival) {
            return lw_error(lw, node, QD_ERR_SYNTAX,
                            "a vector type made with unpacked=True is only valid as a @qd.dataclass "
                            "member annotation; drop unpacked=True to use it as a value type");
        }
    }
    return rc < 0 ? -1 : 0;
}

int
lw_matrix_type_call(Lowerer *lw, const QdAst *node, const Expr *type, const MatrixCall *c, Expr *out)
{
    uint32_t n, m;
    bool is_vector;
    const QdType *ty;
    RETURN_IF_ERROR(lw_matrix_type_info(lw, node, type->h, &n, &m, &is_vector, &ty));
    if (c->npos == 0) {
        return lw_error(lw, node, QD_ERR_SYNTAX, "a vector/matrix type needs at least one argument");
    }
    ScalarList s = {0};
    for (uint32_t i = 0; i < c->npos; i++) {
        RETURN_IF_ERROR(flatten(lw, node, &c->pos[i], &s));
    }
    uint32_t count = n * m;
    if (s.len == 1) {
        for (uint32_t i = 1; i < count; i++) {
            if (qd_vec_push(lw->arena, &s, s.data[0]) != 0) {
                return lw_nomem(lw);
            }
        }
    }
    if (s.len != count) {
        return lw_error(lw, node, QD_ERR_TYPE, "this %s type takes %u entries, got %zu",
                        is_vector ? "vector" : "matrix", count, (size_t)s.len);
    }
    return lw_matrix_from_scalars(lw, node, s.data, n, m, is_vector, ty, out);
}

/* A Matrix instance captured at compile time: typed constants. */
int
lw_matrix_from_instance(Lowerer *lw, const QdAst *node, QdHandle h, Expr *out)
{
    uint32_t n, m;
    bool is_vector;
    const QdType *ty;
    RETURN_IF_ERROR(lw_matrix_type_info(lw, node, h, &n, &m, &is_vector, &ty));
    QdHandle entries;
    int rc = lw->host->getattr(lw->host->self, lw->ctx, h, "_qd_entries", &entries);
    if (rc != 0) {
        return rc < 0 ? -1 : lw_error(lw, node, QD_ERR_INTERNAL, "matrix without entries");
    }
    Expr list;
    RETURN_IF_ERROR(lw_from_handle(lw, node, entries, &list));
    if (list.kind != EX_TUPLE || list.nitems != n * m) {
        return lw_error(lw, node, QD_ERR_INTERNAL, "malformed matrix entries");
    }
    return lw_matrix_from_scalars(lw, node, list.items, n, m, is_vector, ty, out);
}

/***** operators *****/

static const QdType *
binary_type(Lowerer *lw, int op, const QdType *ta, const QdType *tb)
{
    if (op == QD_BIN_DIV) {
        const QdType *fp = qd_type_scalar(lw->opt->default_fp);
        return lw_promote(qd_type_is_float(ta) ? ta : fp, qd_type_is_float(tb) ? tb : fp);
    }
    if (op == QD_BIN_LSHIFT || op == QD_BIN_RSHIFT || (op == QD_BIN_POW && qd_type_is_int(tb))) {
        return ta;
    }
    return lw_promote(ta, tb);
}

/* Shape of a matrix operand as "(n, m)" / "(n,)". */
const char *
lw_matrix_shape_str(Lowerer *lw, const Expr *e)
{
    char buf[48];
    if (e->is_vector) {
        snprintf(buf, sizeof(buf), "(%u,)", e->rows);
    } else {
        snprintf(buf, sizeof(buf), "(%u, %u)", e->rows, e->cols);
    }
    return qd_arena_strdup(lw->arena, buf);
}

/* Scalar a op b where op is a binary operator or (op >= 1000) a comparison (op - 1000). */
typedef int (*ElemFn)(Lowerer *lw, const QdAst *node, int op, const Expr *a, const Expr *b, Expr *out);

static int
elementwise(Lowerer *lw, const QdAst *node, int op, const Expr *a, const Expr *b, ElemFn fn,
            const QdType *fixed_ty, Expr *out)
{
    const Expr *m = a->kind == EX_MATRIX ? a : b;
    if (a->kind == EX_MATRIX && b->kind == EX_MATRIX &&
        (a->rows != b->rows || a->cols != b->cols)) {
        return lw_error(lw, node, QD_ERR_TYPE, "Dimension mismatch between shapes %s, %s",
                        lw_matrix_shape_str(lw, a), lw_matrix_shape_str(lw, b));
    }
    Expr sa, sb;
    if (a->kind != EX_MATRIX) {
        RETURN_IF_ERROR(lw_matrix_scalar(lw, node, a, &sa));
    }
    if (b->kind != EX_MATRIX) {
        RETURN_IF_ERROR(lw_matrix_scalar(lw, node, b, &sb));
    }
    const QdType *ta = a->kind == EX_MATRIX ? a->ty : lw_dtype_of(lw, &sa);
    const QdType *tb = b->kind == EX_MATRIX ? b->ty : lw_dtype_of(lw, &sb);
    const QdType *ty = fixed_ty ? fixed_ty : binary_type(lw, op, ta, tb);
    RETURN_IF_ERROR(lw_matrix_new(lw, m->rows, m->cols, m->is_vector, ty, out));
    for (uint32_t i = 0; i < m->nitems; i++) {
        const Expr *x = a->kind == EX_MATRIX ? &a->items[i] : &sa;
        const Expr *y = b->kind == EX_MATRIX ? &b->items[i] : &sb;
        Expr r;
        RETURN_IF_ERROR(fn(lw, node, op, x, y, &r));
        RETURN_IF_ERROR(lw_matrix_item(lw, node, &r, ty, &out->items[i]));
    }
    return 0;
}

static int
binary_elem(Lowerer *lw, const QdAst *node, int op, const Expr *a, const Expr *b, Expr *out)
{
    return lw_binary(lw, node, op, a, b, out);
}

/* Σ a[i] * b[i] over n items with strides. */
int
lw_matrix_dot(Lowerer *lw, const QdAst *node, const Expr *a, uint32_t sa, const Expr *b, uint32_t sb,
          uint32_t n, Expr *out)
{
    Expr acc = {0};
    for (uint32_t k = 0; k < n; k++) {
        Expr p;
        RETURN_IF_ERROR(lw_binary(lw, node, QD_BIN_MUL, &a[k * sa], &b[k * sb], &p));
        if (k == 0) {
            acc = p;
        } else {
            RETURN_IF_ERROR(lw_binary(lw, node, QD_BIN_ADD, &acc, &p, &acc));
        }
    }
    if (n == 0) {
        acc.kind = EX_INT;
    }
    *out = acc;
    return 0;
}

/* Operands whose items are used more than once are loaded once (lvalues become values). */
int
lw_matrix_loaded(Lowerer *lw, const QdAst *node, const Expr **e, Expr *tmp)
{
    if (*e && (*e)->kind == EX_MATRIX) {
        RETURN_IF_ERROR(lw_struct_load(lw, node, *e, tmp));
        *e = tmp;
    }
    return 0;
}

static int
matmul(Lowerer *lw, const QdAst *node, const Expr *a, const Expr *b, Expr *out)
{
    if (a->kind != EX_MATRIX || b->kind != EX_MATRIX) {
        return lw_error(lw, node, QD_ERR_TYPE, "unsupported operand type(s) for @: both operands "
                                               "must be vectors or matrices");
    }
    Expr la, lb;
    RETURN_IF_ERROR(lw_matrix_loaded(lw, node, &a, &la));
    RETURN_IF_ERROR(lw_matrix_loaded(lw, node, &b, &lb));
    const QdType *ty = lw_promote(a->ty, b->ty);
    if (a->is_vector && b->is_vector) {
        if (a->rows != b->rows) {
            return lw_error(lw, node, QD_ERR_TYPE, "Dimension mismatch between shapes %s, %s",
                            lw_matrix_shape_str(lw, a), lw_matrix_shape_str(lw, b));
        }
        Expr r;
        RETURN_IF_ERROR(lw_matrix_dot(lw, node, a->items, 1, b->items, 1, a->rows, &r));
        return lw_convert(lw, node, &r, ty, out);
    }
    if (a->is_vector) { /* v @ M = M^T v */
        if (a->rows != b->rows) {
            return lw_error(lw, node, QD_ERR_TYPE, "Dimension mismatch between shapes %s, %s",
                            lw_matrix_shape_str(lw, a), lw_matrix_shape_str(lw, b));
        }
        RETURN_IF_ERROR(lw_matrix_new(lw, b->cols, 1, true, ty, out));
        for (uint32_t j = 0; j < b->cols; j++) {
            Expr r;
            RETURN_IF_ERROR(lw_matrix_dot(lw, node, a->items, 1, &b->items[j], b->cols, a->rows, &r));
            RETURN_IF_ERROR(lw_matrix_item(lw, node, &r, ty, &out->items[j]));
        }
        return 0;
    }
    if (a->cols != b->rows) {
        return lw_error(lw, node, QD_ERR_TYPE, "Dimension mismatch between shapes %s, %s",
                        lw_matrix_shape_str(lw, a), lw_matrix_shape_str(lw, b));
    }
    RETURN_IF_ERROR(lw_matrix_new(lw, a->rows, b->cols, b->is_vector, ty, out));
    for (uint32_t i = 0; i < a->rows; i++) {
        for (uint32_t j = 0; j < b->cols; j++) {
            Expr r;
            RETURN_IF_ERROR(lw_matrix_dot(lw, node, &a->items[i * a->cols], 1, &b->items[j], b->cols,
                                      a->cols, &r));
            RETURN_IF_ERROR(lw_matrix_item(lw, node, &r, ty, &out->items[i * b->cols + j]));
        }
    }
    return 0;
}

/* An operand of a matrix operator: a list or tuple literal is the vector (a list of lists: the
 * matrix) it spells, as qd.Vector / qd.Matrix would make it. */
int
lw_matrix_operand(Lowerer *lw, const QdAst *node, const Expr **e, Expr *tmp)
{
    if ((*e)->kind != EX_TUPLE) {
        return 0;
    }
    RETURN_IF_ERROR(construct(lw, node, false, *e, NULL, tmp));
    *e = tmp;
    return 0;
}

int
lw_matrix_binary(Lowerer *lw, const QdAst *node, int op, const Expr *a, const Expr *b, Expr *out)
{
    if (lw_is_coopvec(a) || lw_is_coopvec(b)) { /* a plain vector facing a CoopVec */
        return lw_coopvec_ops.binary(lw, node, op, a, b, out);
    }
    Expr ta, tb;
    RETURN_IF_ERROR(lw_matrix_operand(lw, node, &a, &ta));
    RETURN_IF_ERROR(lw_matrix_operand(lw, node, &b, &tb));
    if (op == QD_BIN_MATMUL) {
        return matmul(lw, node, a, b, out);
    }
    return elementwise(lw, node, op, a, b, binary_elem, NULL, out);
}

static int
compare_elem(Lowerer *lw, const QdAst *node, int op, const Expr *a, const Expr *b, Expr *out)
{
    return lw_compare(lw, node, op, a, b, out);
}

static int
matrix_compare(Lowerer *lw, const QdAst *node, int op, const Expr *a, const Expr *b, Expr *out)
{
    if (lw_is_coopvec(a) || lw_is_coopvec(b)) {
        return lw_coopvec_ops.compare(lw, node, op, a, b, out);
    }
    Expr ta, tb;
    RETURN_IF_ERROR(lw_matrix_operand(lw, node, &a, &ta));
    RETURN_IF_ERROR(lw_matrix_operand(lw, node, &b, &tb));
    return elementwise(lw, node, op, a, b, compare_elem, qd_type_scalar(QD_TY_U1), out);
}

/* (a != 0) and/or (b != 0) of two scalars (op: 1 and, 0 or). */
static int
logical_elem(Lowerer *lw, const QdAst *node, int op, const Expr *a, const Expr *b, Expr *out)
{
    Expr zero = {0}, x, y;
    zero.kind = EX_INT;
    RETURN_IF_ERROR(lw_compare(lw, node, QD_CMP_NE, a, &zero, &x));
    RETURN_IF_ERROR(lw_compare(lw, node, QD_CMP_NE, b, &zero, &y));
    return lw_binary(lw, node, op ? QD_BIN_BITAND : QD_BIN_BITOR, &x, &y, out);
}

/* An operand of a logical operator as the reference names it: "[Tensor (2, 3) i32]", a scalar
 * in the shape of the other operand m. */
static const char *
tensor_name(Lowerer *lw, const Expr *e, const Expr *m)
{
    const Expr *shape = e->kind == EX_MATRIX ? e : m;
    const QdType *ty = e->kind == EX_MATRIX ? e->ty : lw_dtype_of(lw, e);
    char dims[32];
    if (shape->is_vector) {
        snprintf(dims, sizeof(dims), "%u", shape->rows);
    } else {
        snprintf(dims, sizeof(dims), "%u, %u", shape->rows, shape->cols);
    }
    return qd_arena_printf(lw->arena, "[Tensor (%s) %s]", dims, ty ? qd_type_scalar_name(ty->kind) : "?");
}

int
lw_matrix_logical(Lowerer *lw, const QdAst *node, bool is_and, const Expr *a, const Expr *b, Expr *out)
{
    Expr ta, tb, la, lb;
    RETURN_IF_ERROR(lw_matrix_operand(lw, node, &a, &ta));
    RETURN_IF_ERROR(lw_matrix_operand(lw, node, &b, &tb));
    const Expr *m = a->kind == EX_MATRIX ? a : b;
    const QdType *tya = a->kind == EX_MATRIX ? a->ty : lw_dtype_of(lw, a);
    const QdType *tyb = b->kind == EX_MATRIX ? b->ty : lw_dtype_of(lw, b);
    bool same_shape = a->kind != EX_MATRIX || b->kind != EX_MATRIX ||
                      (a->rows == b->rows && a->cols == b->cols);
    if (!tya || !tyb || !qd_type_is_int(tya) || !qd_type_is_int(tyb) || !same_shape) {
        return lw_error(lw, node, QD_ERR_TYPE, "unsupported operand type(s) for '%s': '%s' and '%s'",
                        is_and ? "&&" : "||", tensor_name(lw, a, m), tensor_name(lw, b, m));
    }
    RETURN_IF_ERROR(lw_matrix_loaded(lw, node, &a, &la));
    RETURN_IF_ERROR(lw_matrix_loaded(lw, node, &b, &lb));
    return elementwise(lw, node, is_and, a, b, logical_elem, lw_promote(tya, tyb), out);
}

static int
matrix_unary(Lowerer *lw, const QdAst *node, int op, const Expr *a, Expr *out)
{
    /* `not` is element-wise, 0 or 1 (integral elements only) */
    const QdType *ty = op == QD_UNARY_NOT ? qd_type_scalar(QD_TY_U1) : a->ty;
    RETURN_IF_ERROR(lw_matrix_new(lw, a->rows, a->cols, a->is_vector, ty, out));
    for (uint32_t i = 0; i < a->nitems; i++) {
        Expr r;
        RETURN_IF_ERROR(lw_unary(lw, node, op, &a->items[i], &r));
        RETURN_IF_ERROR(lw_matrix_item(lw, node, &r, ty, &out->items[i]));
    }
    return 0;
}

/***** stores *****/

int
lw_matrix_store(Lowerer *lw, const QdAst *node, const Expr *target, const Expr *value)
{
    if (value->kind == EX_MATRIX) {
        if (value->rows != target->rows || value->cols != target->cols) {
            if (value->nitems != target->nitems || !(value->is_vector || target->is_vector)) {
                return lw_error(lw, node, QD_ERR_TYPE,
                                "cannot assign a matrix of shape %s to one of shape %s",
                                lw_matrix_shape_str(lw, value), lw_matrix_shape_str(lw, target));
            }
        }
    } else if (value->kind == EX_TUPLE) {
        ScalarList s = {0};
        RETURN_IF_ERROR(flatten(lw, node, value, &s));
        if (s.len != target->nitems) {
            return lw_error(lw, node, QD_ERR_TYPE, "cannot assign %zu values to a matrix of shape %s",
                            (size_t)s.len, lw_matrix_shape_str(lw, target));
        }
        Expr m;
        RETURN_IF_ERROR(lw_matrix_from_scalars(lw, node, s.data, target->rows, target->cols,
                                               target->is_vector, target->ty, &m));
        return lw_matrix_store(lw, node, target, &m);
    }
    Expr scalar;
    if (value->kind != EX_MATRIX) {
        RETURN_IF_ERROR(lw_matrix_scalar(lw, node, value, &scalar));
    }
    /* Load every source first: `v = v.yx` must not see its own partial writes. */
    Expr *src = QD_NEW_ARRAY(lw->arena, Expr, target->nitems ? target->nitems : 1);
    if (!src) {
        return lw_nomem(lw);
    }
    for (uint32_t i = 0; i < target->nitems; i++) {
        src[i] = value->kind == EX_MATRIX ? value->items[i] : scalar;
        if (src[i].kind == EX_LVALUE) {
            RETURN_IF_ERROR(lw_rvalue(lw, node, &src[i], &src[i]));
        }
    }
    for (uint32_t i = 0; i < target->nitems; i++) {
        if (target->items[i].kind != EX_LVALUE) {
            return lw_error(lw, node, QD_ERR_SYNTAX,
                            "cannot assign to an element of a temporary matrix value (assign it to a "
                            "variable first)");
        }
        RETURN_IF_ERROR(lw_store(lw, node, &target->items[i], &src[i]));
    }
    return 0;
}

/* `target <op>= value` of AUG_ASSIGN node `node` for a matrix of lvalues, element by element
 * (atomic per element on global data); a scalar broadcasts, a list is the vector/matrix it spells. */
static int
matrix_aug_assign(Lowerer *lw, const QdAst *node, const Expr *target, const Expr *value)
{
    Expr tmp, snap;
    RETURN_IF_ERROR(lw_matrix_operand(lw, node, &value, &tmp));
    if (value->kind == EX_MATRIX) {
        if (value->rows != target->rows || value->cols != target->cols) {
            return lw_error(lw, node, QD_ERR_TYPE, "augmented assignment of matrices of different shapes");
        }
        RETURN_IF_ERROR(lw_struct_load(lw, node, value, &snap)); /* `v += v.yx` reads v first */
    } else {
        RETURN_IF_ERROR(lw_matrix_scalar(lw, node, value, &snap));
    }
    for (uint32_t i = 0; i < target->nitems; i++) {
        RETURN_IF_ERROR(lw_aug_assign(lw, node, &target->items[i],
                                      snap.kind == EX_MATRIX ? &snap.items[i] : &snap));
    }
    return 0;
}

/* `name = value` where the value or the variable v (NULL when new) is a matrix. */
static int
matrix_assign_name(Lowerer *lw, const QdAst *target, Var *v, const Expr *value)
{
    if (v && v->e.kind == EX_STRUCT) { /* a struct variable takes any assignment */
        return lw_struct_assign_name(lw, target, v, value);
    }
    if (v && v->e.kind == EX_MATRIX) {
        return lw_matrix_store(lw, target, &v->e, value);
    }
    if (v && v->e.kind == EX_LVALUE) {
        return lw_error(lw, target, QD_ERR_TYPE, "cannot assign a matrix to the scalar variable '%s'",
                        target->name);
    }
    Expr slots;
    RETURN_IF_ERROR(lw_struct_new_var(lw, target, value, &slots));
    return lw_bind(lw, target->name, &slots, NULL);
}

static bool
is_scalar_value(const Expr *e)
{
    return lw_is_compile_time_scalar(e) || e->kind == EX_VALUE || e->kind == EX_LVALUE;
}

/* The branches of a runtime `x if c else y` where one is a tuple or a matrix, made matrices of
 * one shape in their own regions, as the reference's select does: a tuple of scalars is a
 * vector of its promoted type, a scalar facing a vector or matrix is broadcast to its shape.
 * Merging then promotes both to one element type. */
static int
branches_as_matrices(Lowerer *lw, const QdAst *node, QdInst *ifi, Expr *vals)
{
    for (int s = 0; s < 2; s++) {
        if (vals[s].kind != EX_TUPLE) {
            continue;
        }
        for (uint32_t i = 0; i < vals[s].nitems; i++) {
            if (!is_scalar_value(&vals[s].items[i])) {
                return lw_error(lw, node, QD_ERR_TYPE,
                                "the tuples of a conditional expression must hold scalars");
            }
        }
        if (vals[s].nitems == 0) {
            return lw_error(lw, node, QD_ERR_TYPE, "a conditional expression of an empty tuple");
        }
        Expr v;
        lw->cur = ifi->regions[s];
        RETURN_IF_ERROR(
            lw_matrix_from_scalars(lw, node, vals[s].items, vals[s].nitems, 1, true, NULL, &v));
        vals[s] = v;
    }
    for (int s = 0; s < 2; s++) {
        const Expr *other = &vals[1 - s];
        if (!is_scalar_value(&vals[s]) || other->kind != EX_MATRIX) {
            continue;
        }
        Expr *copies = QD_NEW_ARRAY(lw->arena, Expr, other->nitems);
        Expr v;
        if (!copies) {
            return lw_nomem(lw);
        }
        lw->cur = ifi->regions[s];
        RETURN_IF_ERROR(lw_matrix_scalar(lw, node, &vals[s], &v)); /* loaded once */
        for (uint32_t i = 0; i < other->nitems; i++) {
            copies[i] = v;
        }
        RETURN_IF_ERROR(lw_matrix_from_scalars(lw, node, copies, other->rows, other->cols,
                                               other->is_vector, NULL, &vals[s]));
    }
    if (vals[0].kind != EX_MATRIX || vals[1].kind != EX_MATRIX || vals[0].rows != vals[1].rows ||
        vals[0].cols != vals[1].cols) {
        return lw_error(lw, node, QD_ERR_TYPE,
                        "both branches of a conditional expression must be tuples or vectors of "
                        "one length, matrices of one shape, or scalars");
    }
    return 0;
}

/* The value of `if` instruction ifi whose regions computed vals[0] (then) and vals[1] (else),
 * two matrices of one shape: merged through one slot per element. */
static int
matrix_merge(Lowerer *lw, const QdAst *node, QdInst *ifi, const Expr *vals, Expr *out)
{
    const Expr *a = &vals[0], *b = &vals[1];
    if (a->kind != EX_MATRIX || b->kind != EX_MATRIX || a->rows != b->rows || a->cols != b->cols) {
        return lw_error(lw, node, QD_ERR_TYPE,
                        "both branches must be vectors/matrices of one shape, or both scalars");
    }
    Expr slots;
    RETURN_IF_ERROR(lw_matrix_new(lw, a->rows, a->cols, a->is_vector, lw_promote(a->ty, b->ty), &slots));
    for (uint32_t i = 0; i < slots.nitems; i++) {
        RETURN_IF_ERROR(lw_new_slot(lw, slots.ty, &slots.items[i]));
    }
    for (int s = 0; s < 2; s++) {
        lw->cur = ifi->regions[s];
        RETURN_IF_ERROR(lw_matrix_store(lw, node, &slots, &vals[s]));
    }
    lw->cur = ifi->parent;
    return lw_struct_load(lw, node, &slots, out);
}

int
lw_matrix_merge_branches(Lowerer *lw, const QdAst *node, QdInst *ifi, Expr *vals, Expr *out)
{
    if (vals[0].kind != EX_TUPLE && vals[1].kind != EX_TUPLE && vals[0].kind != EX_MATRIX &&
        vals[1].kind != EX_MATRIX) {
        return LW_DECLINED;
    }
    bool coopvecs = lw_is_coopvec(&vals[0]) || lw_is_coopvec(&vals[1]);
    if (coopvecs && (!lw_is_coopvec(&vals[0]) || !lw_is_coopvec(&vals[1]) ||
                     vals[0].nitems != vals[1].nitems || !qd_type_equal(vals[0].ty, vals[1].ty))) {
        return lw_error(lw, node, QD_ERR_TYPE,
                        "both branches must be qd.nn.CoopVecs of one length and dtype");
    }
    RETURN_IF_ERROR(branches_as_matrices(lw, node, ifi, vals));
    RETURN_IF_ERROR(matrix_merge(lw, node, ifi, vals, out)); /* element by element */
    out->is_coopvec = coopvecs;
    return 0;
}

bool
lw_matrix_is_vector(const Expr *e)
{
    return e->kind == EX_MATRIX && e->is_vector;
}

bool
lw_matrix_of_lvalues(const Expr *e)
{
    if (e->kind != EX_MATRIX) {
        return false;
    }
    for (uint32_t i = 0; i < e->nitems; i++) {
        if (e->items[i].kind != EX_LVALUE) {
            return false;
        }
    }
    return true;
}

/* `a, b = v`: the elements of a vector; a matrix is not unpacked, as in the reference. */
static int
matrix_unpack(Lowerer *lw, const QdAst *target, const Expr *value, Expr *out)
{
    if (!value->is_vector) {
        return lw_error(lw, target, QD_ERR_COMPILATION,
                        "ValueError: Matrices with more than one columns cannot be unpacked");
    }
    memset(out, 0, sizeof(*out));
    out->kind = EX_TUPLE;
    out->items = value->items;
    out->nitems = value->nitems;
    return 0;
}

const ExprOps lw_matrix_ops = {
    .name = "matrix",
    .attribute = lw_matrix_attribute,
    .store_attribute = lw_matrix_store_attribute,
    .subscript = lw_matrix_subscript,
    .store_subscript = lw_matrix_store_subscript,
    .store = lw_matrix_store,
    .aug_assign = matrix_aug_assign,
    .assign_name = matrix_assign_name,
    .snapshot = lw_struct_load, /* every lvalue element loaded */
    .unpack = matrix_unpack,
    .binary = lw_matrix_binary,
    .compare = matrix_compare,
    .unary = matrix_unary,
    .logical = lw_matrix_logical,
};
