"""``qd.simt.subgroup``: the lanes of a subgroup (a warp of 32 on CUDA). Collective functions
need every lane of the subgroup to call them together (uniform control flow)."""

from quadrants.simt._make import primitives

GROUP_SIZE = 32

globals().update(primitives("subgroup", {
    "shuffle": "shuffle(value, index) -> value of lane `index`.",
    "shuffle_xor": "shuffle_xor(value, mask) -> value of lane (lane ^ mask).",
    "shuffle_up": "shuffle_up(value, offset) -> value of lane (lane - offset); low lanes keep "
                  "their own.",
    "shuffle_down": "shuffle_down(value, offset) -> value of lane (lane + offset); high lanes "
                    "keep their own.",
    "broadcast": "broadcast(value, index) -> value of lane `index` on every lane.",
    "broadcast_first": "broadcast_first(value) -> value of lane 0 on every lane.",
    "invocation_id": "invocation_id() -> i32: the lane index.",
    "elect": "elect() -> i32: 1 on lane 0, else 0.",
    "sync": "sync(): barrier for the lanes of the subgroup.",
    "barrier": "barrier(): deprecated alias of sync().",
    "mem_fence": "mem_fence(): orders this lane's memory accesses as seen by the block.",
    "memory_barrier": "memory_barrier(): deprecated alias of mem_fence().",
    "ballot": "ballot(predicate) -> u64: bit l set when lane l's predicate is nonzero.",
    "ballot_full_subgroup": "ballot_full_subgroup(predicate): deprecated alias of ballot().",
    "ballot_first_n": "ballot_first_n(predicate, n) -> u32: the ballot of lanes [0, n).",
    "all_true": "all_true(predicate) -> i32: 1 when the predicate is nonzero on every lane.",
    "any_true": "any_true(predicate) -> i32: 1 when the predicate is nonzero on any lane.",
    "all_equal": "all_equal(value) -> i32: 1 when every lane holds the same value.",
    "lanemask_lt": "lanemask_lt(lane_id) -> u32: bits of the lanes below lane_id.",
    "lanemask_le": "lanemask_le(lane_id) -> u32: bits of the lanes up to lane_id.",
    "lanemask_eq": "lanemask_eq(lane_id) -> u32: the bit of lane_id.",
    "lanemask_gt": "lanemask_gt(lane_id) -> u32: bits of the lanes above lane_id.",
    "lanemask_ge": "lanemask_ge(lane_id) -> u32: bits of the lanes from lane_id up.",
}))


def group_size():
    """Lanes per subgroup: a Python int (32), usable as a template argument and on the host."""
    return GROUP_SIZE


def log2_group_size():
    """log2 of group_size(): a Python int (5)."""
    return GROUP_SIZE.bit_length() - 1


group_size._qd_builtin = "simt.subgroup.group_size"
log2_group_size._qd_builtin = "simt.subgroup.log2_group_size"
