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
- ``reduce*`` / ``inclusive*`` / ``exclusive*`` / ``radix_rank_match_atomic_or``: collectives
  (quadrants/simt/_block_collectives.py).
"""

from quadrants.simt._builtin import kernel_only

sync = kernel_only("block", "sync", "sync(): barrier of the block (__syncthreads).")
sync_all_nonzero = kernel_only(
    "block", "sync_all_nonzero", "sync_all_nonzero(p): barrier; 1 when p != 0 on every thread."
)
sync_any_nonzero = kernel_only(
    "block", "sync_any_nonzero", "sync_any_nonzero(p): barrier; 1 when p != 0 on any thread."
)
sync_count_nonzero = kernel_only(
    "block", "sync_count_nonzero", "sync_count_nonzero(p): barrier; the count of threads with p != 0."
)
mem_fence = kernel_only("block", "mem_fence", "mem_fence(): block-scope memory fence.")
mem_sync = kernel_only(
    "block", "mem_sync", "mem_sync(): deprecated alias of mem_fence() (DeprecationWarning)."
)
thread_idx = kernel_only("block", "thread_idx", "thread_idx(): index of the thread in its block.")
global_thread_idx = kernel_only(
    "block", "global_thread_idx", "global_thread_idx(): block_idx * block_dim + thread_idx."
)
SharedArray = kernel_only(
    "block",
    "SharedArray",
    "SharedArray(shape, dtype): per-block shared memory; shape an int or a tuple/list of ints, "
    "dtype a scalar, vector or matrix type. Create it inside the parallel loop body.",
)

__all__ = [
    "sync",
    "sync_all_nonzero",
    "sync_any_nonzero",
    "sync_count_nonzero",
    "mem_fence",
    "mem_sync",
    "thread_idx",
    "global_thread_idx",
    "SharedArray",
]

from quadrants.simt import _block_collectives  # noqa: E402

_COLLECTIVES = _block_collectives.exported()
globals().update(_COLLECTIVES)
__all__ += list(_COLLECTIVES)
