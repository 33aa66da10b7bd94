"""``qd.simt``: GPU programming below the parallel loop -- the threads of a block, their shared
memory and barriers (``block``), the lanes of a subgroup/warp and their shuffles and votes
(``subgroup``, ``warp``), and device-wide fences (``grid``).

Every function is for kernels and ``@qd.func``s compiled for a GPU backend; see docs/simt.md.
"""

from quadrants.simt import block, grid, subgroup, warp

__all__ = ["block", "subgroup", "warp", "grid"]
