"""SIMT programming: ``qd.simt.block`` (barriers, shared memory, block collectives),
``qd.simt.subgroup`` (shuffles, votes, subgroup collectives), ``qd.simt.warp`` (CUDA warp
intrinsics) and ``qd.simt.grid`` (device-scope fence). See docs/simt.md.

The functions are kernel-scope builtins: the C core lowers each one to QIR's SIMT instructions.
The register tiles ``Tile16x16`` / ``Tile32x32`` live in ``quadrants/simt/_tile.py`` and are
imported on first use.
"""

import importlib
import importlib.util

from quadrants.simt import subgroup  # first: the block collectives build on it
from quadrants.simt import block, grid, warp

_TILES = ("Tile16x16", "Tile32x32")


def __getattr__(name):
    if name in _TILES and importlib.util.find_spec("quadrants.simt._tile") is not None:
        return getattr(importlib.import_module("quadrants.simt._tile"), name)
    if name == "_tile_ops":  # helpers the tile syntax is rewritten into (_tile_syntax.py)
        return importlib.import_module("quadrants.simt._tile_ops")
    raise AttributeError(f"module 'quadrants.simt' has no attribute '{name}'")


__all__ = ["block", "grid", "subgroup", "warp"]
