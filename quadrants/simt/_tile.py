"""``qd.simt.Tile16x16`` / ``Tile32x32``: an N x N matrix held in registers by the N lanes of a
subgroup, lane ``tid`` holding row ``tid`` (``docs/tiles.md``).

Tiles are a value kind of the C core (csrc/frontend/lower_tile.c): ``zeros`` / ``eye`` here are
kernel-scope builtins, and the tile's operations and slice syntax (``t[:] = a[r0:r1, c0:c1]``,
``a[...] = t``, column slices, ``t -= qd.outer(u, v)``, ``t.cholesky_(eps)``,
``L.solve_triangular_(B)``) are lowered there, the register side as calls of the IR templates
of quadrants/templates/simt_tile.qir.
"""

from quadrants._builtins import _kernel_only


class TileKind:
    """``qd.simt.Tile16x16`` / ``Tile32x32``: ``SIZE`` (a Python int), and in kernels
    ``zeros(dtype=None)`` and ``eye(dtype=None)`` (keyword-only dtype; None: the default float
    type)."""

    def __init__(self, n):
        self.SIZE = n
        name = f"Tile{n}x{n}"
        self.zeros = _kernel_only(f"simt.{name}.zeros",
                                  f"{name}.zeros(dtype=None): a new tile of zeros.",
                                  "*, dtype=None")
        self.eye = _kernel_only(f"simt.{name}.eye",
                                f"{name}.eye(dtype=None): a new identity tile.", "*, dtype=None")

    def _qd_cache_key(self):
        """What the offline cache keys a kernel that names this tile kind by: its size (the
        rest is compiler code)."""
        return self.SIZE

    def __repr__(self):
        return f"qd.simt.Tile{self.SIZE}x{self.SIZE}"


Tile16x16 = TileKind(16)
Tile32x32 = TileKind(32)
