"""SIMT programming: ``qd.simt.block`` (barriers, shared memory, block collectives),
``qd.simt.subgroup`` (shuffles, votes, subgroup collectives), ``qd.simt.warp`` (CUDA warp
intrinsics) and ``qd.simt.grid`` (device-scope fence). See docs/simt.md.

The functions are kernel-scope builtins: the C core lowers each one to QIR's SIMT instructions.
So are the register tiles ``Tile16x16`` / ``Tile32x32`` (``_tile.py``, docs/tiles.md).
"""

from quadrants.simt import subgroup  # first: the block collectives build on it
from quadrants.simt import block, grid, warp
from quadrants.simt._tile import Tile16x16, Tile32x32

__all__ = ["block", "grid", "subgroup", "warp"]
