"""``qd.simt.subgroup``: the lanes of one subgroup (``group_size()`` consecutive threads of a
block: 32 on CUDA, where a subgroup is a warp, and in the CPU's SIMT emulation; the device's
subgroup size on Vulkan).

Data movement (index / offset / mask are u32): ``shuffle(v, index)``, ``shuffle_xor(v, mask)``,
``shuffle_up(v, offset)``, ``shuffle_down(v, offset)``, ``broadcast(v, index)``,
``broadcast_first(v)``. Identification and control: ``invocation_id()`` (lane, i32),
``group_size()`` / ``log2_group_size()`` (Python ints, also on the host), ``elect()`` (1 on lane 0),
``sync()`` (``barrier()`` deprecated), ``mem_fence()`` (``memory_barrier()`` deprecated).
Votes and masks: ``ballot(p)`` (u64; ``ballot_full_subgroup`` deprecated), ``ballot_first_n(p,
n)`` (u32), ``all_true(p)``, ``any_true(p)``, ``all_equal(v)``, ``lanemask_{lt,le,eq,gt,ge}(lane)``
(u32). Collectives (reductions, scans, bitonic sort; csrc/frontend/collectives.def), each also as
``<name>_tiled(..., log2_size)``: calls of the IR templates of
quadrants/templates/simt_subgroup.qir.
"""

from typing import TYPE_CHECKING, Any

from quadrants.simt import _builtin

if TYPE_CHECKING:
    # The functions are defined from a table at import time (csrc/frontend/simt.def), which
    # type checkers cannot see: every attribute of the module is a builtin returning Any.
    def __getattr__(name: str) -> Any: ...


__all__ = _builtin.define("subgroup", globals())

