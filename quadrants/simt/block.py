"""``qd.simt.block``: the threads of one block (a group of ``block_dim`` threads, set by
``qd.loop_config(block_dim=B)``; iteration i of the parallel loop runs on thread i % B of
block i // B).

- ``sync()``: barrier of the block; every thread of the block must reach it.
- ``sync_all_nonzero(p)`` / ``sync_any_nonzero(p)`` / ``sync_count_nonzero(p)``: barrier, then
  the AND / OR / count of the threads' i32 predicates.
- ``mem_fence()``: block-scope memory fence (``mem_sync()``: deprecated alias).
- ``thread_idx()``: index of the thread in its block (i32); ``global_thread_idx()``:
  ``block_idx * block_dim + thread_idx``.
- ``SharedArray(shape, dtype)``: memory shared by the threads of a block.
- ``reduce*`` / ``inclusive*`` / ``exclusive*``: collectives (csrc/frontend/collectives.def,
  calls of the IR templates of quadrants/templates/simt_block.qir);
  ``radix_rank_match_atomic_or`` (quadrants/simt/_block_collectives.py).
"""

from typing import TYPE_CHECKING, Any

from quadrants.simt import _builtin

if TYPE_CHECKING:
    # The functions are defined from a table at import time (csrc/frontend/simt.def), which
    # type checkers cannot see: every attribute of the module is a builtin returning Any.
    def __getattr__(name: str) -> Any: ...


__all__ = _builtin.define("block", globals())

from quadrants.simt import _block_collectives  # noqa: E402

_COLLECTIVES = _block_collectives.exported()
globals().update(_COLLECTIVES)
__all__ += list(_COLLECTIVES)
