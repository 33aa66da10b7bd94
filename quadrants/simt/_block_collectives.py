"""The block's radix ranking, and helpers of the block collectives for qd.algorithms.

The block collectives themselves (reduce*, inclusive*, exclusive*) are IR templates
(quadrants/templates/simt_block.qir, rows of csrc/frontend/collectives.def). block_dim must be a
positive multiple of the subgroup size (qd.simt.subgroup.group_size()); every thread of the
block must call them (they contain barriers).
"""

import quadrants as qd
from quadrants.simt import _subgroup_collectives as _sgc
from quadrants.simt import block as _blk
from quadrants.simt import subgroup as _sg


@qd.func
def _exclusive_kind(value, block_dim: qd.template(), op: qd.template(), kind: qd.template(),
                    dtype: qd.template()):
    """exclusive_scan with thread 0 the identity of kind `kind` (subgroup._identity) in dtype."""
    v = qd.cast(value, dtype)
    return _blk.exclusive_scan(v, block_dim, op, _sg._identity(v, kind), dtype)


@qd.func
def match_peers(words: qd.template(), slot, dtype: qd.template()):
    """The lanes of this subgroup whose `slot` equals this lane's (slot: the subgroup's word for
    the lane's digit): each lane sets its bit in the shared word words[slot] (zero before, of
    unsigned dtype), and reads the word back. (One shared-memory atomic per lane; one ballot per
    digit bit cost more in the sort's scatter.) The word stays set: the caller zeroes it, once
    every lane has read it, before its next use."""
    lane = _blk.thread_idx() % _sg.group_size()
    qd.atomic_or(words[slot], qd.cast(1, dtype) << qd.cast(lane, dtype))
    _sg.sync()
    return qd.cast(words[slot], qd.u32)


@qd.func
def radix_rank_match_atomic_or(key, block_dim: qd.template(), radix_bits: qd.template(),
                               bit_start: qd.template(), num_bits: qd.template(), bins,
                               excl_prefix):
    qd.static_assert(block_dim == (1 << radix_bits), "block_dim must be 1 << radix_bits")
    qd.static_assert(num_bits <= radix_bits, "num_bits must be at most radix_bits")
    qd.static_assert(_sg.group_size() <= 32, "the ranking keeps a subgroup's lanes in 32-bit masks")
    qd.static_assert(block_dim % _sg.group_size() == 0,
                     "block_dim must be a multiple of the subgroup size")
    nw = qd.static(block_dim // _sg.group_size())
    tid = _blk.thread_idx()
    lane = tid % _sg.group_size()
    warp = tid // _sg.group_size()
    digit = qd.cast((qd.cast(key, qd.u32) >> bit_start) & ((1 << num_bits) - 1), qd.i32)
    # per (subgroup, digit) lanes and counts, then the counts' exclusive prefix over the subgroups
    match = _blk.SharedArray((nw * block_dim,), qd.u32)
    counts = _blk.SharedArray((nw, block_dim), qd.i32)
    for w in qd.static(range(nw)):
        match[w * block_dim + tid] = qd.u32(0)
        counts[w, tid] = 0
    _blk.sync()
    peers = match_peers(match, warp * block_dim + digit, qd.u32)
    below = qd.math.popcnt(peers & _sg.lanemask_lt(lane))
    if below == 0:
        counts[warp, digit] = qd.math.popcnt(peers)
    _blk.sync()
    total = 0
    for w in qd.static(range(nw)):
        c = counts[w, tid]
        counts[w, tid] = total
        total += c
    bins[tid] = total
    prefix = _exclusive_kind(total, block_dim, _sgc._op_add, 0, qd.i32)
    excl_prefix[tid] = prefix
    _blk.sync()
    rank = excl_prefix[digit] + counts[warp, digit] + below
    _blk.sync()  # a block that loops to its next tile must not clear counts still being read
    return rank


def exported():
    """name -> @qd.func of the block collectives written in Python."""
    return {"radix_rank_match_atomic_or": radix_rank_match_atomic_or}
