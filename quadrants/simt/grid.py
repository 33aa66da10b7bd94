"""``qd.simt.grid``: ``mem_fence()``, a device-scope memory fence (``memfence()``: deprecated
alias). There is no grid barrier: end the kernel instead."""

from quadrants.simt import _builtin

__all__ = _builtin.define("grid", globals())
