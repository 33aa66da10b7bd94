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
 * The register side (zeros, eye, the outer-product update, cholesky_, solve_triangular_) is one
 * call each of the templates of quadrants/templates/simt_tile.qir. Loads, stores and columns
 * read and write whatever the array is, so they are emitted here, one bounds-checked access
 * per element, unrolled: rows past r1 or past the array and columns past c1 or past the array
 * are skipped (a skipped cell of a load keeps what the tile held); a column is 0 there.
 */
#include "lower.h"

#include <stdio.h>
#include <string.h>

/* What an EX_TILE Expr is (its `tile`). */
typedef enum TilePart {
    TILE_REGS,   /* a tile: array, n; Expr.ty the element type */
    TILE_SLICE,  /* a 2-D slice of an array: base, batch, r0, r1, c0, c1 */
    TILE_COLUMN, /* a column of an array, read: value (a slot), name (the variable) */
    TILE_OUTER,  /* qd.outer(u, v): u, v */
} TilePart;

struct TileData {
    TilePart part;    /* what it is */
    uint32_t n;       /* REGS: rows (= columns = lanes) */
    uint32_t array;   /* REGS: ptr<[n x ty], local> */
    bool is_fresh;    /* REGS: made by zeros() / eye(), no variable holds it yet */
    Expr base;        /* SLICE: the array (EX_FIELD, EX_NDARRAY, EX_SHARED) */
    bool has_batch;   /* SLICE: a 3-D array, `batch` its first index */
    Expr batch;       /* SLICE: the batch index */
    Expr r0, r1;      /* SLICE, COLUMN: the rows */
    Expr c0, c1;      /* SLICE: the columns */
    Expr value;       /* COLUMN: this lane's element (an lvalue: its slot) */
    const char *name; /* COLUMN: the variable bound to it, for errors (NULL: none yet) */
    Expr u, v;        /* OUTER: the two column vectors */
};

static const QdType *
i32_type(void)
{
    return qd_type_scalar(QD_TY_I32);
}

static int
new_tile_data(Lowerer *lw, TilePart part, const QdType *ty, Expr *out)
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
static void
need_lanes(Lowerer *lw, const QdAst *node, uint32_t n)
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

/***** emission helpers *****/

/* Runs the statements emit() adds inside `if cond`. */
typedef struct IfScope {
    QdRegion *saved;
    bool saved_top;
} IfScope;

static int
open_if(Lowerer *lw, const QdAst *node, const Expr *cond_expr, IfScope *scope)
{
    uint32_t cond;
    RETURN_IF_ERROR(lw_truth(lw, node, cond_expr, &cond));
    QdInst *ifi = lw_emit(lw, QD_OP_IF, 1);
    if (!ifi) {
        return -1;
    }
    ifi->args[0] = cond;
    scope->saved = lw->cur;
    scope->saved_top = lw->at_top;
    lw->at_top = false;
    lw->cur = ifi->regions[0];
    return 0;
}

static void
close_if(Lowerer *lw, const IfScope *scope)
{
    lw->cur = scope->saved;
    lw->at_top = scope->saved_top;
}

static int
int_expr(int64_t v, Expr *out)
{
    memset(out, 0, sizeof(*out));
    out->kind = EX_INT;
    out->ival = v;
    return 0;
}

/* The extent of canonical axis `axis` of the array (compile-time for fields and shared arrays). */
static int
extent(Lowerer *lw, const Expr *base, uint32_t axis, Expr *out)
{
    if (base->kind == EX_NDARRAY) {
        return lw_shape_axis(lw, base, axis, out);
    }
    if (base->kind == EX_SHARED) {
        return int_expr(base->items[axis].ival, out);
    }
    return int_expr(base->view->shape[axis], out);
}

/* The element base[batch?, row, col] as an lvalue. */
static int
element(Lowerer *lw, const QdAst *node, const TileData *s, const Expr *row, const Expr *col,
        Expr *out)
{
    Expr idx[3];
    uint32_t n = 0;
    if (s->has_batch) {
        idx[n++] = s->batch;
    }
    idx[n++] = *row;
    idx[n++] = *col;
    if (s->base.kind == EX_SHARED) {
        return lw_shared_element(lw, node, &s->base, idx, n, out);
    }
    return lw_subscript_indices(lw, node, node, &s->base, idx, n, out);
}

/* r0 + the lane id. */
static int
lane_row(Lowerer *lw, const QdAst *node, const Expr *r0, Expr *out)
{
    Expr lane = lw_value(lw_emit_value(lw, QD_OP_LANE_ID, i32_type(), QD_NO_VALUE, QD_NO_VALUE),
                         i32_type());
    if (lane.id == QD_NO_VALUE) {
        return -1;
    }
    return lw_binary(lw, node, QD_BIN_ADD, r0, &lane, out);
}

/* Element k of the tile's array as an lvalue. */
static int
register_slot(Lowerer *lw, const Expr *t, uint32_t k, Expr *out)
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
    RETURN_IF_ERROR(new_tile_data(lw, TILE_REGS, ty, out));
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
    RETURN_IF_ERROR(new_tile_data(lw, TILE_REGS, t->ty, out));
    out->tile->n = t->tile->n;
    RETURN_IF_ERROR(lw_local_array(lw, t->ty, t->tile->n, &out->tile->array));
    for (uint32_t k = 0; k < t->tile->n; k++) {
        Expr from, to;
        RETURN_IF_ERROR(register_slot(lw, t, k, &from));
        RETURN_IF_ERROR(register_slot(lw, out, k, &to));
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

/***** slices *****/

/* Whether `index` (of base[index]) is tile slice syntax: 2 or 3 indices, one of them a slice. */
static bool
is_tile_index(const QdAst *index)
{
    if (index->kind != QD_AST_TUPLE || (index->a.len != 2 && index->a.len != 3)) {
        return false;
    }
    for (uint32_t i = 0; i < index->a.len; i++) {
        if (index->a.items[i]->kind == QD_AST_SLICE) {
            return true;
        }
    }
    return false;
}

/* lo, hi of a slice (both required, no step). */
static int
slice_bounds(Lowerer *lw, const QdAst *node, const QdAst *slice, Expr *lo, Expr *hi)
{
    if (!slice->x || !slice->y) {
        return lw_error(lw, node, QD_ERR_SYNTAX,
                        "tile slices: both start and stop indices are required");
    }
    if (slice->z) {
        return lw_error(lw, node, QD_ERR_SYNTAX, "tile slices take no step");
    }
    RETURN_IF_ERROR(lw_expr(lw, slice->x, lo));
    return lw_expr(lw, slice->y, hi);
}

/* `base[r0:r1, col]` of a column: each lane's element a[r0 + lane, col], 0 past the slice or the
 * array. It is read at an index clamped into the array and then dropped when out of range, so
 * the read needs no branch. */
static int
read_column(Lowerer *lw, const QdAst *node, TileData *s, const Expr *col, Expr *out)
{
    uint32_t d = s->has_batch ? 1 : 0;
    Expr rows, cols, one, row, last_row, last_col, crow, ccol, elem, slot, lim, past_row, past_col,
        past;
    RETURN_IF_ERROR(lane_row(lw, node, &s->r0, &row));
    RETURN_IF_ERROR(extent(lw, &s->base, d, &rows));
    RETURN_IF_ERROR(extent(lw, &s->base, d + 1, &cols));
    int_expr(1, &one);
    RETURN_IF_ERROR(lw_binary(lw, node, QD_BIN_SUB, &rows, &one, &last_row));
    RETURN_IF_ERROR(lw_minmax(lw, node, QD_OP_MIN, &row, &last_row, &crow));
    RETURN_IF_ERROR(lw_binary(lw, node, QD_BIN_SUB, &cols, &one, &last_col));
    RETURN_IF_ERROR(lw_minmax(lw, node, QD_OP_MIN, col, &last_col, &ccol));
    RETURN_IF_ERROR(element(lw, node, s, &crow, &ccol, &elem));
    RETURN_IF_ERROR(lw_rvalue(lw, node, &elem, &elem));
    RETURN_IF_ERROR(lw_new_slot(lw, elem.ty, &slot));
    RETURN_IF_ERROR(lw_store(lw, node, &slot, &elem));
    RETURN_IF_ERROR(lw_minmax(lw, node, QD_OP_MIN, &s->r1, &rows, &lim));
    RETURN_IF_ERROR(lw_compare(lw, node, QD_CMP_GE, &row, &lim, &past_row));
    RETURN_IF_ERROR(lw_compare(lw, node, QD_CMP_GE, col, &cols, &past_col));
    RETURN_IF_ERROR(lw_binary(lw, node, QD_BIN_BITOR, &past_row, &past_col, &past));
    IfScope scope;
    Expr zero;
    int_expr(0, &zero);
    RETURN_IF_ERROR(open_if(lw, node, &past, &scope));
    int rc = lw_store(lw, node, &slot, &zero);
    close_if(lw, &scope);
    RETURN_IF_ERROR(rc);
    RETURN_IF_ERROR(new_tile_data(lw, TILE_COLUMN, elem.ty, out));
    out->tile->value = slot;
    return 0;
}

int
lw_tile_subscript(Lowerer *lw, const QdAst *node, const Expr *base, const QdAst *index, Expr *out)
{
    bool array = base->kind == EX_FIELD || base->kind == EX_NDARRAY ||
                 (base->kind == EX_SHARED && base->rows == 0);
    if (!array || !is_tile_index(index)) {
        return LW_DECLINED;
    }
    QdAst *const *parts = index->a.items;
    uint32_t n = index->a.len;
    bool column = parts[n - 1]->kind != QD_AST_SLICE;
    if (parts[n - 2]->kind != QD_AST_SLICE) {
        return lw_error(lw, node, QD_ERR_SYNTAX,
                        column ? "a column slice is a[r0:r1, col]"
                               : "a tile is loaded from or stored to a[r0:r1, c0:c1] (both "
                                 "dimensions sliced)");
    }
    if (n == 3 && parts[0]->kind == QD_AST_SLICE) {
        return lw_error(lw, node, QD_ERR_SYNTAX, "a 3-D tile slice is a[b, r0:r1, c0:c1]");
    }
    Expr s;
    RETURN_IF_ERROR(new_tile_data(lw, TILE_SLICE, base->ty, &s));
    TileData *d = s.tile;
    d->base = *base;
    d->has_batch = n == 3;
    if (d->has_batch) {
        RETURN_IF_ERROR(lw_expr(lw, parts[0], &d->batch));
    }
    RETURN_IF_ERROR(slice_bounds(lw, node, parts[n - 2], &d->r0, &d->r1));
    if (column) {
        Expr col;
        RETURN_IF_ERROR(lw_expr(lw, parts[n - 1], &col));
        lw_set_loc(lw, node);
        need_lanes(lw, node, 0);
        return read_column(lw, node, d, &col, out);
    }
    RETURN_IF_ERROR(slice_bounds(lw, node, parts[n - 1], &d->c0, &d->c1));
    *out = s;
    return 0;
}

/* t[:] = a[r0:r1, c0:c1]: lane t reads row r0 + t, columns c0 .. up to c1 and the array's end. */
static int
load_tile(Lowerer *lw, const QdAst *node, const Expr *t, const TileData *s)
{
    uint32_t d = s->has_batch ? 1 : 0;
    Expr row, rows, cols, lim, in_rows, clim, ncols;
    RETURN_IF_ERROR(lane_row(lw, node, &s->r0, &row));
    RETURN_IF_ERROR(extent(lw, &s->base, d, &rows));
    RETURN_IF_ERROR(lw_minmax(lw, node, QD_OP_MIN, &s->r1, &rows, &lim));
    RETURN_IF_ERROR(lw_compare(lw, node, QD_CMP_LT, &row, &lim, &in_rows));
    IfScope row_scope;
    RETURN_IF_ERROR(open_if(lw, node, &in_rows, &row_scope));
    /* one bound for the row (not one column index per element, which the optimizer would hoist
     * out of the caller's loops and keep live) */
    int rc = extent(lw, &s->base, d + 1, &cols);
    rc = rc ? rc : lw_minmax(lw, node, QD_OP_MIN, &s->c1, &cols, &clim);
    rc = rc ? rc : lw_binary(lw, node, QD_BIN_SUB, &clim, &s->c0, &ncols);
    for (uint32_t j = 0; j < t->tile->n && rc == 0; j++) {
        Expr jj, in_cols, col, elem, slot;
        IfScope scope;
        int_expr(j, &jj);
        rc = lw_compare(lw, node, QD_CMP_LT, &jj, &ncols, &in_cols);
        rc = rc ? rc : open_if(lw, node, &in_cols, &scope);
        if (rc) {
            break;
        }
        rc = lw_binary(lw, node, QD_BIN_ADD, &s->c0, &jj, &col);
        rc = rc ? rc : element(lw, node, s, &row, &col, &elem);
        rc = rc ? rc : lw_convert(lw, node, &elem, t->ty, &elem);
        rc = rc ? rc : register_slot(lw, t, j, &slot);
        rc = rc ? rc : lw_store(lw, node, &slot, &elem);
        close_if(lw, &scope);
    }
    close_if(lw, &row_scope);
    return rc;
}

/* a[r0:r1, c0:c1] = t: lane t writes row r0 + t, columns c0 .. up to c1 and the array's end. */
static int
store_tile(Lowerer *lw, const QdAst *node, const TileData *s, const Expr *t)
{
    uint32_t d = s->has_batch ? 1 : 0;
    Expr row, rows, cols, lim, clim, count, ncols, past, zero;
    RETURN_IF_ERROR(lane_row(lw, node, &s->r0, &row));
    /* the columns this lane stores, 0 past the last row: no branch around the stores, so the
     * code generator cannot sink the computation of the tile's last values into one and keep
     * the shuffles feeding them live across it */
    RETURN_IF_ERROR(extent(lw, &s->base, d + 1, &cols));
    RETURN_IF_ERROR(lw_minmax(lw, node, QD_OP_MIN, &s->c1, &cols, &clim));
    RETURN_IF_ERROR(lw_binary(lw, node, QD_BIN_SUB, &clim, &s->c0, &count));
    RETURN_IF_ERROR(lw_rvalue(lw, node, &count, &count));
    RETURN_IF_ERROR(lw_new_slot(lw, count.ty, &ncols));
    RETURN_IF_ERROR(lw_store(lw, node, &ncols, &count));
    RETURN_IF_ERROR(extent(lw, &s->base, d, &rows));
    RETURN_IF_ERROR(lw_minmax(lw, node, QD_OP_MIN, &s->r1, &rows, &lim));
    RETURN_IF_ERROR(lw_compare(lw, node, QD_CMP_GE, &row, &lim, &past));
    IfScope scope;
    int_expr(0, &zero);
    RETURN_IF_ERROR(open_if(lw, node, &past, &scope));
    int rc = lw_store(lw, node, &ncols, &zero);
    close_if(lw, &scope);
    RETURN_IF_ERROR(rc);
    for (uint32_t j = 0; j < t->tile->n; j++) {
        Expr jj, in_cols, col, elem, slot;
        int_expr(j, &jj);
        RETURN_IF_ERROR(lw_compare(lw, node, QD_CMP_LT, &jj, &ncols, &in_cols));
        RETURN_IF_ERROR(open_if(lw, node, &in_cols, &scope));
        rc = lw_binary(lw, node, QD_BIN_ADD, &s->c0, &jj, &col);
        rc = rc ? rc : element(lw, node, s, &row, &col, &elem);
        rc = rc ? rc : register_slot(lw, t, j, &slot);
        rc = rc ? rc : lw_store(lw, node, &elem, &slot);
        close_if(lw, &scope);
        RETURN_IF_ERROR(rc);
    }
    return 0;
}

int
lw_tile_store_subscript(Lowerer *lw, const QdAst *target, const Expr *base, const QdAst *index,
                        const Expr *value)
{
    Expr s;
    int rc = lw_tile_subscript(lw, target, base, index, &s);
    if (rc != 0) {
        return rc;
    }
    if (s.kind != EX_TILE || s.tile->part != TILE_SLICE) {
        return lw_error(lw, target, QD_ERR_SYNTAX,
                        "a tile is loaded from or stored to a[r0:r1, c0:c1] (both dimensions sliced)");
    }
    if (value->kind != EX_TILE || value->tile->part != TILE_REGS) {
        return lw_error(lw, target, QD_ERR_SYNTAX, "only a tile is stored to a tile slice");
    }
    lw_set_loc(lw, target);
    return store_tile(lw, target, s.tile, value);
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
    return load_tile(lw, node, base, value->tile);
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
            RETURN_IF_ERROR(register_slot(lw, base, k, &out->items[k]));
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
        RETURN_IF_ERROR(new_tile_data(lw, TILE_COLUMN, value->ty, &named));
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
            RETURN_IF_ERROR(register_slot(lw, value, k, &from));
            RETURN_IF_ERROR(register_slot(lw, &v->e, k, &to));
            RETURN_IF_ERROR(lw_store(lw, target, &to, &from));
        }
        return 0;
    }
    Expr held = *value;
    if (d->is_fresh) {
        RETURN_IF_ERROR(new_tile_data(lw, TILE_REGS, value->ty, &held));
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
        RETURN_IF_ERROR(new_tile_data(lw, TILE_OUTER, NULL, out));
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
    need_lanes(lw, node, n);
    return new_tile(lw, node, n, ty, eye, out);
}
