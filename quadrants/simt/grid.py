"""``qd.simt.grid``: ``mem_fence()``, a device-scope memory fence (``memfence()``: deprecated
alias). There is no grid barrier: end the kernel instead."""

from typing import TYPE_CHECKING, Any

from quadrants.simt import _builtin

if TYPE_CHECKING:
    # The functions are defined from a table at import time (csrc/frontend/simt.def), which
    # type checkers cannot see: every attribute of the module is a builtin returning Any.
    def __getattr__(name: str) -> Any: ...


__all__ = _builtin.define("grid", globals())
