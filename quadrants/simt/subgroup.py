"""``qd.simt.subgroup``: the lanes of one subgroup (32 consecutive threads of a block; a warp
on NVIDIA GPUs).

Data movement (index / offset / mask are u32): ``shuffle(v, index)``, ``shuffle_xor(v, mask)``,
``shuffle_up(v, offset)``, ``shuffle_down(v, offset)``, ``broadcast(v, index)``,
``broadcast_first(v)``. Identification and control: ``invocation_id()`` (lane, i32),
``group_size()`` / ``log2_group_size()`` (Python ints, also on the host), ``elect()`` (1 on lane 0),
``sync()`` (``barrier()`` deprecated), ``mem_fence()`` (``memory_barrier()`` deprecated).
Votes and masks: ``ballot(p)`` (u64; ``ballot_full_subgroup`` deprecated), ``ballot_first_n(p,
n)`` (u32), ``all_true(p)``, ``any_true(p)``, ``all_equal(v)``, ``lanemask_{lt,le,eq,gt,ge}(lane)``
(u32). Collectives (reductions, scans, bitonic sort) live in _subgroup_collectives.py.
"""

from quadrants.simt._builtin import kernel_only

SUBGROUP_SIZE = 32
LOG2_SUBGROUP_SIZE = 5

_NAMES = {
    "shuffle": "shuffle(v, index): v of lane `index` (u32).",
    "shuffle_xor": "shuffle_xor(v, mask): v of lane (lane ^ mask).",
    "shuffle_up": "shuffle_up(v, offset): v of lane (lane - offset); lanes below offset: undefined.",
    "shuffle_down": "shuffle_down(v, offset): v of lane (lane + offset); high lanes: undefined.",
    "broadcast": "broadcast(v, index): v of lane `index` on every lane.",
    "broadcast_first": "broadcast_first(v): v of the first lane on every lane.",
    "invocation_id": "invocation_id(): the lane index (i32).",
    "elect": "elect(): 1 on lane 0, else 0 (i32).",
    "sync": "sync(): barrier of the subgroup's lanes.",
    "barrier": "barrier(): deprecated alias of sync().",
    "mem_fence": "mem_fence(): memory fence for the subgroup.",
    "memory_barrier": "memory_barrier(): deprecated alias of mem_fence().",
    "ballot": "ballot(p): u64 with bit l set when p != 0 on lane l.",
    "ballot_full_subgroup": "ballot_full_subgroup(p): deprecated alias of ballot(p).",
    "ballot_first_n": "ballot_first_n(p, n): the ballot of lanes [0, n) as u32 (n compile-time).",
    "all_true": "all_true(p): 1 when p != 0 on every lane (i32).",
    "any_true": "any_true(p): 1 when p != 0 on any lane (i32).",
    "all_equal": "all_equal(v): 1 when v is equal on every lane (i32).",
    "lanemask_lt": "lanemask_lt(lane): u32 mask of the lanes below `lane`.",
    "lanemask_le": "lanemask_le(lane): u32 mask of the lanes up to `lane`.",
    "lanemask_eq": "lanemask_eq(lane): u32 mask of `lane`.",
    "lanemask_gt": "lanemask_gt(lane): u32 mask of the lanes above `lane`.",
    "lanemask_ge": "lanemask_ge(lane): u32 mask of the lanes from `lane` on.",
}

for _name, _doc in _NAMES.items():
    globals()[_name] = kernel_only("subgroup", _name, _doc)


def group_size():
    """Lanes per subgroup (32): a Python int, in kernels and on the host."""
    return SUBGROUP_SIZE


def log2_group_size():
    """log2 of group_size() (5): a Python int, in kernels and on the host."""
    return LOG2_SUBGROUP_SIZE


group_size._qd_builtin = "simt.subgroup.group_size"
log2_group_size._qd_builtin = "simt.subgroup.log2_group_size"

__all__ = list(_NAMES) + ["group_size", "log2_group_size"]

_identity = kernel_only(
    "subgroup", "_identity", "_identity(v, kind): identity constants of v's type (collectives)."
)

from quadrants.simt import _subgroup_collectives  # noqa: E402

_COLLECTIVES = _subgroup_collectives.exported()
globals().update(_COLLECTIVES)
__all__ += list(_COLLECTIVES)
