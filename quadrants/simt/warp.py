"""``qd.simt.warp``: CUDA warp intrinsics (warp size 32). The mask arguments are accepted for
compatibility; the generated code always operates on the lanes active at the call."""

from quadrants.simt import _builtin

__all__ = _builtin.define("warp", globals())
