/* frontend/lower_tile_slice.c -- the slice syntax of register tiles: loads, stores, columns.
 *
 * `a[r0:r1, c0:c1]` / `a[b, r0:r1, c0:c1]` of a field, ndarray or SharedArray (lw_tile_subscript,
 * asked first by lw_subscript) is a TILE_SLICE: nothing is read until a tile is loaded from it
 * (`t[:] = a[...]`, lw_tile_load) or stored to it (`a[...] = t`, lw_tile_store_subscript).
 * `a[r0:r1, col]` is read at once into a TILE_COLUMN, each lane's element. These address their
 * arrays through the frontend's element access (lw_subscript_indices, lw_shared_element), so
 * they are emitted here, one access per column, unrolled and bounds-checked, rather than by an IR
 * template: lane t works on row r0 + t; rows past r1 or past the array and columns past c1 or
 * past the array are skipped (a skipped cell of a load keeps what the tile held), and a column
 * is 0 there. The code keeps the shapes the code generator was tuned on (docs/tiles.md): one
 * column bound per row, stores without a branch around them, columns read at a clamped index.
 */
#include "lower.h"

#include <string.h>

static const QdType *
i32_type(void)
{
    return qd_type_scalar(QD_TY_I32);
}

/***** emission helpers *****/

/* An `if` the instructions go into, opened by open_if and closed by close_if. */
typedef struct IfScope {
    QdRegion *saved; /* where instructions went before it */
    bool saved_top;  /* lw->at_top before it */
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
    RETURN_IF_ERROR(lw_tile_data_new(lw, TILE_COLUMN, elem.ty, out));
    out->tile->value = slot;
    return 0;
}

int
lw_tile_subscript(Lowerer *lw, const QdAst *node, const Expr *base, const QdAst *index, Expr *out)
{
    bool array = base->kind == EX_FIELD || (base->kind == EX_NDARRAY && base->rows == 0) ||
                 (base->kind == EX_SHARED && base->rows == 0); /* of scalars */
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
    RETURN_IF_ERROR(lw_tile_data_new(lw, TILE_SLICE, base->ty, &s));
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
        lw_tile_need_lanes(lw, node, 0);
        return read_column(lw, node, d, &col, out);
    }
    RETURN_IF_ERROR(slice_bounds(lw, node, parts[n - 1], &d->c0, &d->c1));
    *out = s;
    return 0;
}

/* t[:] = a[r0:r1, c0:c1]: lane t reads row r0 + t, columns c0 .. up to c1 and the array's end. */
int
lw_tile_load(Lowerer *lw, const QdAst *node, const Expr *t, const TileData *s)
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
        rc = rc ? rc : lw_tile_register_slot(lw, t, j, &slot);
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
        rc = rc ? rc : lw_tile_register_slot(lw, t, j, &slot);
        rc = rc ? rc : lw_store(lw, node, &elem, &slot);
        close_if(lw, &scope);
        RETURN_IF_ERROR(rc);
    }
    return 0;
}

int
lw_tile_store_subscript(Lowerer *lw, const QdAst *target, const Expr *base, const QdAst *index,
                        const Expr *value, const QdAst *aug)
{
    if (aug || value->kind != EX_TILE) {
        return LW_DECLINED;
    }
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
