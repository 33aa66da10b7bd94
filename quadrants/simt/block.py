"""``qd.simt.block``: the threads of one block (``qd.loop_config(block_dim=B)`` sets B; iteration
i of the top-level loop runs on thread ``i % B``). GPU backends only."""

from quadrants.simt._make import primitives

globals().update(primitives("block", {
    "sync": "sync(): barrier for every thread of the block (__syncthreads); all must reach it.",
    "sync_all_nonzero": "sync_all_nonzero(predicate) -> i32: barrier, 1 when the predicate is "
                        "nonzero on every thread of the block.",
    "sync_any_nonzero": "sync_any_nonzero(predicate) -> i32: barrier, 1 when the predicate is "
                        "nonzero on any thread of the block.",
    "sync_count_nonzero": "sync_count_nonzero(predicate) -> i32: barrier, the number of threads "
                          "whose predicate is nonzero.",
    "mem_fence": "mem_fence(): orders this thread's memory accesses as seen by the block.",
    "mem_sync": "mem_sync(): deprecated alias of mem_fence().",
    "thread_idx": "thread_idx() -> i32: index of the thread in its block.",
    "global_thread_idx": "global_thread_idx() -> i32: block index * block size + thread index.",
    "SharedArray": "SharedArray(shape, dtype): an array in the block's shared memory, one per "
                   "block; shape an int or a tuple of ints; create it in the parallel loop body.",
}))

__all__ = ["sync", "sync_all_nonzero", "sync_any_nonzero", "sync_count_nonzero", "mem_fence",
           "mem_sync", "thread_idx", "global_thread_idx", "SharedArray"]
