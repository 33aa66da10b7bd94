"""Helpers of the tile syntax that are not tile methods (see _tile_syntax.py)."""

import quadrants as qd


@qd.func
def column(a: qd.template(), r0, r1, col):
    """This lane's element of column `col` of rows [r0, r1) of `a`: a[r0 + lane, col], 0 past
    the slice or the array. The element is read at an index clamped into the array and then
    dropped when out of range, so the read needs no branch and no zero of the element type."""
    row = r0 + qd.simt.subgroup.invocation_id()
    v = a[qd.min(row, a.shape[0] - 1), qd.min(col, a.shape[1] - 1)]
    if row >= qd.min(r1, a.shape[0]) or col >= a.shape[1]:
        v = 0
    return v


@qd.func
def column3(a: qd.template(), b, r0, r1, col):
    """column() of the 2-D array a[b]."""
    row = r0 + qd.simt.subgroup.invocation_id()
    v = a[b, qd.min(row, a.shape[1] - 1), qd.min(col, a.shape[2] - 1)]
    if row >= qd.min(r1, a.shape[1]) or col >= a.shape[2]:
        v = 0
    return v
