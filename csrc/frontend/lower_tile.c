/* frontend/lower_tile.c -- register tiles: qd.simt.Tile16x16 / Tile32x32 (docs/tiles.md).
 *
 * A tile is an N x N matrix held by the N lanes of a subgroup, lane t holding row t. Its value
 * kind is EX_TILE; TileData says which of four things the Expr is:
 *   TILE_REGS    a tile: a local array ptr<[N x T], local> (an alloca at the start of the task;
 *                LLVM keeps its N elements in registers), from Tile<N>x<N>.zeros / eye
 *   TILE_SLICE   `a[r0:r1, c0:c1]` / `a[b, r0:r1, c0:c1]` of a field, ndarray or SharedArray:
 *                nothing is read until a tile is loaded from it (`t[:] = ...`)
 *   TILE_COLUMN  `a[r0:r1, col]` / `a[b, r0:r1, col]`: each lane's element of the column, read
 *                at once into a slot; it may only be an argument of qd.outer
 *   TILE_OUTER   `qd.outer(u, v)`: only valid as `t -= qd.outer(u, v)`
 * This file holds the kind (its ExprOps: t.r, the methods, `t -= qd.outer(u, v)`, assignment as
 * a copy) and the calls (Tile<N>x<N>.zeros / eye, qd.outer, the methods). The register side
 * (zeros, eye, the outer-product update, cholesky_, solve_triangular_) is one call each of the
 * templates of quadrants/templates/simt_tile.qir; the slice syntax (loads, stores, columns) is
 * lower_tile_slice.c. Whether the target runs tiles is checked once the kernel is lowered
 * (lw_tile_check_target), after any error of their syntax.
 */
#include "lower.h"

#include <stdio.h>
#include <string.h>

int
lw_tile_data_new(Lowerer *lw, TilePart part, const QdType *ty, Expr *out)
{
    memset(out, 0, sizeof(*out));
    out->kind = EX_TILE;
    out->ty = ty;
    out->tile = QD_NEW(lw->arena, TileData);
    if (!out->tile) {
        return lw_nomem(lw);
    }
    out->tile->part = part;
    return 0;
}

/* Notes that the kernel needs n lanes per subgroup (0: a column slice) at node; the target is
 * checked once the kernel is lowered (lw_tile_check_target). */
void
lw_tile_need_lanes(Lowerer *lw, const QdAst *node, uint32_t n)
{
    if (!lw->tile_lanes && !lw->tile_column) {
        lw_set_loc(lw, node);
        lw->tile_loc = lw->loc;
    }
    lw->tile_column |= n == 0;
    lw->tile_lanes = n > lw->tile_lanes ? n : lw->tile_lanes;
}

int
lw_tile_check_target(Lowerer *lw)
{
    uint32_t n = lw->tile_lanes;
    if (!n && !lw->tile_column) {
        return 0;
    }
    if (lw->opt->simt_unsupported_arch) {
        if (!n) {
            return qd_error(lw->ctx, lw->tile_loc, QD_ERR_SYNTAX,
                            "column slices of register tiles require a GPU backend (or "
                            "qd.init(arch=qd.cpu, cpu_simt=True))");
        }
        return qd_error(lw->ctx, lw->tile_loc, QD_ERR_SYNTAX,
                        "Tile%ux%u requires a GPU backend (or qd.init(arch=qd.cpu, "
                        "cpu_simt=True))", n, n);
    }
    uint32_t lanes = lw->opt->subgroup_size ? lw->opt->subgroup_size : 32;
    if (lanes < n) {
        return qd_error(lw->ctx, lw->tile_loc, QD_ERR_SYNTAX,
                        "Tile%ux%u holds one row per lane of a subgroup and needs subgroups of at "
                        "least %u lanes; this device's subgroups have %u",
                        n, n, n, lanes);
    }
    return 0;
}

/* The error of using a column slice, an outer product or a slice where a value is wanted. */
int
lw_tile_misuse(Lowerer *lw, const QdAst *node, const Expr *e)
{
    switch (e->tile->part) {
    case TILE_COLUMN:
        if (e->tile->name) {
            return lw_error(lw, node, QD_ERR_TYPE,
                            "column slice '%s' can only be used as an argument of qd.outer(...)",
                            e->tile->name);
        }
        return lw_error(lw, node, QD_ERR_TYPE,
                        "a column slice can only be used as an argument of qd.outer(...)");
    case TILE_OUTER:
        return lw_error(lw, node, QD_ERR_TYPE,
                        "qd.outer does not support composition; use tile -= qd.outer(a, b) once per "
                        "product");
    case TILE_SLICE:
        return lw_error(lw, node, QD_ERR_SYNTAX,
                        "a tile slice a[r0:r1, c0:c1] is only loaded into a tile (t[:] = a[...])");
    case TILE_REGS:
    default:
        return lw_error(lw, node, QD_ERR_TYPE, "a tile is not a scalar value (its rows: t.r)");
    }
}

/* Element k of the tile's array as an lvalue. */
int
lw_tile_register_slot(Lowerer *lw, const Expr *t, uint32_t k, Expr *out)
{
    uint32_t p = lw_array_element_ptr(lw, t->tile->array, t->ty, k);
    if (p == QD_NO_VALUE) {
        return -1;
    }
    memset(out, 0, sizeof(*out));
    out->kind = EX_LVALUE;
    out->id = p;
    out->ty = t->ty;
    out->space = QD_SPACE_LOCAL;
    return 0;
}

/***** making tiles *****/

/* A new tile of n x n elements of ty; zeros or the identity (a template call). */
static int
new_tile(Lowerer *lw, const QdAst *node, uint32_t n, const QdType *ty, bool eye, Expr *out)
{
    RETURN_IF_ERROR(lw_tile_data_new(lw, TILE_REGS, ty, out));
    out->tile->n = n;
    out->tile->is_fresh = true;
    RETURN_IF_ERROR(lw_local_array(lw, ty, n, &out->tile->array));
    lw_set_loc(lw, node);
    LwTemplateArg targs[2] = {{.type = ty}, {.value = n}};
    return lw_call_template(lw, eye ? "tile_eye" : "tile_zeros", targs, 2, &out->tile->array, 1,
                            NULL, NULL);
}

/* A copy of tile t in a new array (a new variable, a func parameter). */
static int
copy_tile(Lowerer *lw, const QdAst *node, const Expr *from_tile, Expr *out)
{
    Expr copy = *from_tile; /* out may be from_tile */
    const Expr *t = &copy;
    RETURN_IF_ERROR(lw_tile_data_new(lw, TILE_REGS, t->ty, out));
    out->tile->n = t->tile->n;
    RETURN_IF_ERROR(lw_local_array(lw, t->ty, t->tile->n, &out->tile->array));
    for (uint32_t k = 0; k < t->tile->n; k++) {
        Expr from, to;
        RETURN_IF_ERROR(lw_tile_register_slot(lw, t, k, &from));
        RETURN_IF_ERROR(lw_tile_register_slot(lw, out, k, &to));
        RETURN_IF_ERROR(lw_store(lw, node, &to, &from));
    }
    return 0;
}

int
lw_tile_new_var(Lowerer *lw, const QdAst *node, const Expr *value, Expr *out)
{
    if (value->tile->part != TILE_REGS) {
        *out = *value;
        return 0;
    }
    return copy_tile(lw, node, value, out);
}

/***** the ExprOps of EX_TILE *****/

/* `t[:] = a[...]`. */
static int
tile_store_subscript(Lowerer *lw, const QdAst *node, const Expr *base, const QdAst *index,
                     const Expr *value, const QdAst *aug)
{
    if (base->tile->part != TILE_REGS) {
        return lw_tile_misuse(lw, node, base);
    }
    bool whole = index->kind == QD_AST_SLICE && !index->x && !index->y && !index->z;
    if (aug || !whole || value->kind != EX_TILE || value->tile->part != TILE_SLICE) {
        return lw_error(lw, node, QD_ERR_SYNTAX,
                        "a tile is loaded with t[:] = a[r0:r1, c0:c1] (elements: t.r[j])");
    }
    lw_set_loc(lw, node);
    return lw_tile_load(lw, node, base, value->tile);
}

static int
tile_subscript(Lowerer *lw, const QdAst *node, const Expr *base, const QdAst *index, Expr *out)
{
    (void)index;
    (void)out;
    return lw_tile_misuse(lw, node, base);
}

/* t.r (the row of this lane: a vector of its N elements), and the methods. */
static int
tile_attribute(Lowerer *lw, const QdAst *node, const Expr *base, Expr *out)
{
    if (base->tile->part != TILE_REGS) {
        return lw_tile_misuse(lw, node, base);
    }
    const char *name = node->name;
    if (strcmp(name, "r") == 0) {
        uint32_t n = base->tile->n;
        RETURN_IF_ERROR(lw_matrix_new(lw, n, 1, true, base->ty, out));
        for (uint32_t k = 0; k < n; k++) {
            RETURN_IF_ERROR(lw_tile_register_slot(lw, base, k, &out->items[k]));
        }
        return 0;
    }
    if (strcmp(name, "cholesky_") == 0 || strcmp(name, "solve_triangular_") == 0 ||
        strcmp(name, "eye_") == 0) {
        char buf[64];
        snprintf(buf, sizeof(buf), "simt.tile.%s", name);
        memset(out, 0, sizeof(*out));
        out->kind = EX_BUILTIN;
        out->str = qd_arena_strdup(lw->arena, buf);
        out->items = QD_NEW(lw->arena, Expr);
        if (!out->str || !out->items) {
            return lw_nomem(lw);
        }
        out->items[0] = *base;
        out->nitems = 1;
        return 0;
    }
    return lw_error(lw, node, QD_ERR_SYNTAX, "a tile has no attribute '%s'", name);
}

/* t -= qd.outer(u, v). */
static int
tile_aug_assign(Lowerer *lw, const QdAst *node, const Expr *target, const Expr *value)
{
    if (target->tile->part != TILE_REGS) {
        return lw_tile_misuse(lw, node, target);
    }
    if (value->kind != EX_TILE || value->tile->part != TILE_OUTER) {
        return lw_error(lw, node, QD_ERR_TYPE, "a tile is updated only with t -= qd.outer(a, b)");
    }
    if (node->op != QD_BIN_SUB) {
        return lw_error(lw, node, QD_ERR_TYPE, "a tile takes qd.outer(...) only with -=");
    }
    uint32_t args[3] = {target->tile->array};
    const Expr *uv[2] = {&value->tile->u, &value->tile->v};
    for (int k = 0; k < 2; k++) {
        Expr e = *uv[k];
        if (e.kind == EX_TILE && e.tile->part == TILE_COLUMN) {
            e = e.tile->value;
        } else if (e.kind == EX_TILE) {
            return lw_tile_misuse(lw, node, &e);
        }
        RETURN_IF_ERROR(lw_convert(lw, node, &e, target->ty, &e));
        RETURN_IF_ERROR(lw_rvalue(lw, node, &e, &e));
        args[k + 1] = e.id;
    }
    lw_set_loc(lw, node);
    LwTemplateArg targs[2] = {{.type = target->ty}, {.value = target->tile->n}};
    return lw_call_template(lw, "tile_sub_outer", targs, 2, args, 3, NULL, NULL);
}

/* `name = value`: a tile is copied into the variable (a fresh one is taken over); a column is
 * kept in a slot of the variable. */
static int
tile_assign_name(Lowerer *lw, const QdAst *target, Var *v, const Expr *value)
{
    if (value->kind != EX_TILE) {
        return lw_error(lw, target, QD_ERR_SYNTAX, "the tile variable '%s' cannot be reassigned "
                        "to another kind of value", target->name);
    }
    const TileData *d = value->tile;
    if (d->part == TILE_SLICE || d->part == TILE_OUTER) {
        return lw_tile_misuse(lw, target, value);
    }
    bool same_kind = v && v->e.kind == EX_TILE && v->e.tile->part == d->part;
    if (v && !same_kind) {
        return lw_error(lw, target, QD_ERR_SYNTAX, "the variable '%s' cannot be reassigned to a "
                        "%s", target->name, d->part == TILE_REGS ? "tile" : "column slice");
    }
    if (d->part == TILE_COLUMN) {
        if (v) {
            return lw_store(lw, target, &v->e.tile->value, &d->value);
        }
        Expr named;
        RETURN_IF_ERROR(lw_tile_data_new(lw, TILE_COLUMN, value->ty, &named));
        *named.tile = *d;
        named.tile->name = qd_arena_strdup(lw->arena, target->name);
        if (!named.tile->name) {
            return lw_nomem(lw);
        }
        return lw_bind(lw, target->name, &named, NULL);
    }
    if (v) {
        if (v->e.tile->n != d->n || !qd_type_equal(v->e.ty, value->ty)) {
            return lw_error(lw, target, QD_ERR_SYNTAX, "the tile variable '%s' cannot be "
                            "reassigned to a tile of another size or type", target->name);
        }
        if (v->e.tile->array == d->array) {
            return 0;
        }
        for (uint32_t k = 0; k < d->n; k++) {
            Expr from, to;
            RETURN_IF_ERROR(lw_tile_register_slot(lw, value, k, &from));
            RETURN_IF_ERROR(lw_tile_register_slot(lw, &v->e, k, &to));
            RETURN_IF_ERROR(lw_store(lw, target, &to, &from));
        }
        return 0;
    }
    Expr held = *value;
    if (d->is_fresh) {
        RETURN_IF_ERROR(lw_tile_data_new(lw, TILE_REGS, value->ty, &held));
        *held.tile = *d;
        held.tile->is_fresh = false;
    } else {
        RETURN_IF_ERROR(copy_tile(lw, target, value, &held));
    }
    return lw_bind(lw, target->name, &held, NULL);
}

static int
tile_binary(Lowerer *lw, const QdAst *node, int op, const Expr *a, const Expr *b, Expr *out)
{
    (void)op;
    (void)out;
    const Expr *e = a->kind == EX_TILE ? a : b;
    if (e->tile->part == TILE_OUTER && node->kind == QD_AST_AUG_ASSIGN) {
        return lw_error(lw, node, QD_ERR_TYPE, "a tile takes qd.outer(...) only with -=");
    }
    /* an outer product anywhere in the operation is the composition error */
    if (a->kind == EX_TILE && a->tile->part == TILE_OUTER) {
        e = a;
    } else if (b->kind == EX_TILE && b->tile->part == TILE_OUTER) {
        e = b;
    }
    return lw_tile_misuse(lw, node, e);
}

static int
tile_compare(Lowerer *lw, const QdAst *node, int op, const Expr *a, const Expr *b, Expr *out)
{
    (void)op;
    (void)out;
    return lw_tile_misuse(lw, node, a->kind == EX_TILE ? a : b);
}

static int
tile_unary(Lowerer *lw, const QdAst *node, int op, const Expr *a, Expr *out)
{
    (void)op;
    (void)out;
    return lw_tile_misuse(lw, node, a);
}

const ExprOps lw_tile_ops = {
    .name = "tile",
    .attribute = tile_attribute,
    .subscript = tile_subscript,
    .store_subscript = tile_store_subscript,
    .aug_assign = tile_aug_assign,
    .assign_name = tile_assign_name,
    .binary = tile_binary,
    .compare = tile_compare,
    .unary = tile_unary,
};

/***** calls: Tile<N>x<N>.zeros / eye, qd.outer, the methods *****/

static int
call_arity(Lowerer *lw, const QdAst *node, const MatrixCall *c, uint32_t npos, const char *usage)
{
    if (c->npos != npos || c->nkw) {
        return lw_error(lw, node, QD_ERR_TYPE, "%s", usage);
    }
    return 0;
}

/* The tile argument of a method or solve. */
static int
tile_arg(Lowerer *lw, const QdAst *node, const Expr *e, const Expr *like, const char *usage)
{
    if (e->kind != EX_TILE || e->tile->part != TILE_REGS || e->tile->n != like->tile->n ||
        !qd_type_equal(e->ty, like->ty)) {
        return lw_error(lw, node, QD_ERR_TYPE, "%s: the argument must be a tile of the same size "
                        "and element type", usage);
    }
    return 0;
}

static int
method(Lowerer *lw, const QdAst *node, const char *name, const Expr *t, const MatrixCall *c)
{
    LwTemplateArg targs[2] = {{.type = t->ty}, {.value = t->tile->n}};
    lw_set_loc(lw, node);
    if (strcmp(name, "eye_") == 0) {
        RETURN_IF_ERROR(call_arity(lw, node, c, 0, "t.eye_() takes no arguments"));
        return lw_call_template(lw, "tile_eye", targs, 2, &t->tile->array, 1, NULL, NULL);
    }
    if (!qd_type_is_float(t->ty)) {
        return lw_error(lw, node, QD_ERR_TYPE, "%s needs a tile of floats, not %s", name,
                        lw_type_name(t->ty));
    }
    if (strcmp(name, "cholesky_") == 0) {
        RETURN_IF_ERROR(call_arity(lw, node, c, 1, "t.cholesky_(eps) takes one argument"));
        Expr eps;
        RETURN_IF_ERROR(lw_convert(lw, node, &c->pos[0], t->ty, &eps));
        RETURN_IF_ERROR(lw_rvalue(lw, node, &eps, &eps));
        uint32_t args[2] = {t->tile->array, eps.id};
        return lw_call_template(lw, "tile_cholesky", targs, 2, args, 2, NULL, NULL);
    }
    /* solve_triangular_(B, lower=True) */
    if (c->npos != 1) {
        return lw_error(lw, node, QD_ERR_TYPE, "L.solve_triangular_(B, lower=True)");
    }
    for (uint32_t k = 0; k < c->nkw; k++) {
        const Expr *v = &c->kwv[k];
        bool is_true = (v->kind == EX_BOOL || v->kind == EX_INT) && v->ival == 1;
        if (strcmp(c->kw[k]->name, "lower") != 0 || v->kind != EX_BOOL || !is_true) {
            return lw_error(lw, node, QD_ERR_TYPE, "solve_triangular_ supports lower=True only");
        }
    }
    RETURN_IF_ERROR(tile_arg(lw, node, &c->pos[0], t, "L.solve_triangular_(B)"));
    uint32_t args[2] = {c->pos[0].tile->array, t->tile->array};
    return lw_call_template(lw, "tile_solve_lower", targs, 2, args, 2, NULL, NULL);
}

int
lw_tile_call(Lowerer *lw, const QdAst *node, const Expr *fn, const char *name, const MatrixCall *c,
             Expr *out)
{
    memset(out, 0, sizeof(*out));
    out->kind = EX_VOID;
    if (strcmp(name, "tile.outer") == 0) {
        if (c->npos != 2 || c->nkw) {
            return lw_error(lw, node, QD_ERR_TYPE, "qd.outer(a, b) takes two vectors");
        }
        RETURN_IF_ERROR(lw_tile_data_new(lw, TILE_OUTER, NULL, out));
        out->tile->u = c->pos[0];
        out->tile->v = c->pos[1];
        return 0;
    }
    if (strncmp(name, "tile.", 5) == 0) {
        if (!fn->items || fn->nitems != 1 || fn->items[0].kind != EX_TILE) {
            return lw_error(lw, node, QD_ERR_INTERNAL, "qd.simt.%s without its tile", name);
        }
        return method(lw, node, name + 5, &fn->items[0], c);
    }
    /* Tile<N>x<N>.zeros(dtype=None) / eye(dtype=None) */
    unsigned n = 0;
    char what[16] = "";
    if (sscanf(name, "Tile%ux%*u.%15s", &n, what) != 2 || (n != 16 && n != 32)) {
        return lw_error(lw, node, QD_ERR_SYNTAX, "qd.simt.%s is not supported in kernels", name);
    }
    bool eye = strcmp(what, "eye") == 0;
    if (!eye && strcmp(what, "zeros") != 0) {
        return lw_error(lw, node, QD_ERR_SYNTAX, "qd.simt.%s is not supported in kernels", name);
    }
    const QdType *ty = qd_type_scalar(lw->opt->default_fp);
    for (uint32_t k = 0; k < c->nkw; k++) {
        if (strcmp(c->kw[k]->name, "dtype") != 0) {
            return lw_error(lw, node, QD_ERR_TYPE, "Tile%ux%u.%s() got an unexpected keyword "
                            "argument '%s'", n, n, what, c->kw[k]->name);
        }
        if (c->kwv[k].kind != EX_NONE) {
            ty = lw_dtype_arg(&c->kwv[k]);
            if (!ty || !qd_type_is_scalar(ty)) {
                return lw_error(lw, node, QD_ERR_TYPE, "Tile%ux%u.%s(): dtype must be a scalar "
                                "type", n, n, what);
            }
        }
    }
    if (c->npos) {
        return lw_error(lw, node, QD_ERR_TYPE, "Tile%ux%u.%s() takes no positional arguments "
                        "(dtype is keyword-only)", n, n, what);
    }
    lw_tile_need_lanes(lw, node, n);
    return new_tile(lw, node, n, ty, eye, out);
}
