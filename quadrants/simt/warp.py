"""``qd.simt.warp``: CUDA warp intrinsics (warp size 32). The mask arguments are accepted for
compatibility; the generated code always operates on the lanes active at the call."""

from typing import TYPE_CHECKING, Any

from quadrants.simt import _builtin

if TYPE_CHECKING:
    # The functions are defined from a table at import time (csrc/frontend/simt.def), which
    # type checkers cannot see: every attribute of the module is a builtin returning Any.
    def __getattr__(name: str) -> Any: ...


__all__ = _builtin.define("warp", globals())
