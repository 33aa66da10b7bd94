"""Helpers of the tile syntax that are not tile methods (see _tile_syntax.py)."""

import quadrants as qd


@qd.func
def column(a: qd.template(), r0, r1, col):
    """This lane's element of column `col` of rows [r0, r1) of `a`: a[r0 + lane, col], 0 past
    the slice or the array."""
    row = r0 + qd.simt.subgroup.invocation_id()
    v = a[0, 0] * 0
    if row < qd.min(r1, a.shape[0]) and col < a.shape[1]:
        v = a[row, col]
    return v


@qd.func
def column3(a: qd.template(), b, r0, r1, col):
    """column() of the 2-D array a[b]."""
    row = r0 + qd.simt.subgroup.invocation_id()
    v = a[b, 0, 0] * 0
    if row < qd.min(r1, a.shape[1]) and col < a.shape[2]:
        v = a[b, row, col]
    return v
