"""Block collectives over the subgroup collectives and shared memory, written once for every
operator: each subgroup combines its lanes (shuffles), the subgroups' totals meet in a
SharedArray of block_dim // 32 slots, and every thread combines the totals it needs.

block_dim, op and dtype are compile-time arguments; block_dim must be a positive multiple of
the subgroup size (32). `op` is a @qd.func (a, b) -> same type, associative. Every thread of the
block must call the collective (it contains barriers).
"""

import quadrants as qd
from quadrants.simt import _subgroup_collectives as _sgc
from quadrants.simt import block as _blk
from quadrants.simt import subgroup as _sg

W = 32


def _check_block_dim(block_dim):
    if not isinstance(block_dim, int) or block_dim <= 0 or block_dim % W != 0:
        raise ValueError(
            f"block_dim must be a positive multiple of the subgroup size {W}, got {block_dim!r}"
        )
    return block_dim


@qd.func
def reduce_all(value, block_dim: qd.template(), op: qd.template(), dtype: qd.template()):
    qd.static(_check_block_dim(block_dim))
    v = _sg._reduce_all_op(qd.cast(value, dtype), op)
    totals = _blk.SharedArray((block_dim // W,), dtype)
    tid = _blk.thread_idx()
    if tid % W == 0:
        totals[tid // W] = v
    _blk.sync()
    r = totals[0]
    for w in qd.static(range(1, block_dim // W)):
        r = op(r, totals[w])
    _blk.sync()
    return r


@qd.func
def reduce(value, block_dim: qd.template(), op: qd.template(), dtype: qd.template()):
    return reduce_all(value, block_dim, op, dtype)


@qd.func
def inclusive_scan(value, block_dim: qd.template(), op: qd.template(), dtype: qd.template()):
    qd.static(_check_block_dim(block_dim))
    v = _sg._inclusive_op(qd.cast(value, dtype), op)
    totals = _blk.SharedArray((block_dim // W,), dtype)
    tid = _blk.thread_idx()
    warp = tid // W
    if tid % W == W - 1:
        totals[warp] = v
    _blk.sync()
    for k in qd.static(range(block_dim // W - 1)):
        w = qd.static(block_dim // W - 2 - k)  # descending: op(totals[0], op(..., v))
        if w < warp:
            v = op(totals[w], v)
    _blk.sync()
    return v


@qd.func
def exclusive_scan(value, block_dim: qd.template(), op: qd.template(), identity: qd.template(),
                   dtype: qd.template()):
    inc = inclusive_scan(value, block_dim, op, dtype)
    shifted = _blk.SharedArray((block_dim,), dtype)
    tid = _blk.thread_idx()
    shifted[tid] = inc
    _blk.sync()
    r = qd.cast(identity, dtype)
    if tid > 0:
        r = shifted[tid - 1]
    _blk.sync()
    return r


@qd.func
def _exclusive_kind(value, block_dim: qd.template(), op: qd.template(), kind: qd.template(),
                    dtype: qd.template()):
    inc = inclusive_scan(value, block_dim, op, dtype)
    shifted = _blk.SharedArray((block_dim,), dtype)
    tid = _blk.thread_idx()
    shifted[tid] = inc
    _blk.sync()
    r = _sg._identity(inc, kind)
    if tid > 0:
        r = shifted[tid - 1]
    _blk.sync()
    return r


@qd.func
def match_peers(words: qd.template(), slot, dtype: qd.template()):
    """The lanes of this subgroup whose `slot` equals this lane's (slot: the subgroup's word for
    the lane's digit): each lane sets its bit in the shared word words[slot] (zero before, of
    unsigned dtype), and reads the word back. (One shared-memory atomic per lane; one ballot per
    digit bit cost more in the sort's scatter.) The word stays set: the caller zeroes it, once
    every lane has read it, before its next use."""
    qd.atomic_or(words[slot], qd.cast(1, dtype) << qd.cast(_blk.thread_idx() % W, dtype))
    _sg.sync()
    return qd.cast(words[slot], qd.u32)


@qd.func
def radix_rank_match_atomic_or(key, block_dim: qd.template(), radix_bits: qd.template(),
                               bit_start: qd.template(), num_bits: qd.template(), bins,
                               excl_prefix):
    qd.static_assert(block_dim == (1 << radix_bits), "block_dim must be 1 << radix_bits")
    qd.static_assert(num_bits <= radix_bits, "num_bits must be at most radix_bits")
    nw = qd.static(block_dim // W)
    tid = _blk.thread_idx()
    lane = tid % W
    warp = tid // W
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
    """name -> @qd.func of every block collective."""
    table = {
        "reduce": reduce,
        "reduce_all": reduce_all,
        "inclusive_scan": inclusive_scan,
        "exclusive_scan": exclusive_scan,
        "radix_rank_match_atomic_or": radix_rank_match_atomic_or,
    }
    for op_name in ("add", "min", "max"):
        op, kind = _sgc.OPS[op_name]
        table[f"reduce_{op_name}"] = _bind(op, kind, "reduce")
        table[f"reduce_all_{op_name}"] = _bind(op, kind, "reduce_all")
        table[f"inclusive_{op_name}"] = _bind(op, kind, "inclusive")
        table[f"exclusive_{op_name}"] = _bind(op, kind, "exclusive")
    return table


def _bind(op, kind, which):
    if which in ("reduce", "reduce_all"):

        @qd.func
        def f(value, block_dim: qd.template(), dtype: qd.template()):
            return reduce_all(value, block_dim, op, dtype)

    elif which == "inclusive":

        @qd.func
        def f(value, block_dim: qd.template(), dtype: qd.template()):
            return inclusive_scan(value, block_dim, op, dtype)

    else:

        @qd.func
        def f(value, block_dim: qd.template(), dtype: qd.template()):
            return _exclusive_kind(value, block_dim, op, kind, dtype)

    return f
