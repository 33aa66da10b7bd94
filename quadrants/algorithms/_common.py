"""Shared pieces of the device-wide algorithms: the tile size, the checks, typed access to the
scratch buffer, and the ways to reduce or exclusive-scan a 1-D sequence of any length up to
256 ** log256_max_n in a fixed sequence of top-level phases.

Every phase is one top-level ``for`` of the caller's kernel, so the boundaries between phases are
the grid-wide barriers the algorithms need.

- On a GPU (and on the CPU with ``cpu_simt=True``): scan_lookback (one pass over tiles of 8192
  elements with a decoupled look-back), tiles being blocks of 256 threads combined with the
  ``qd.simt.block`` collectives.
- On the plain CPU: the staircase below, a tile being one iteration of a parallel loop that walks
  its elements in order.

Every form stays within the sizes the ``*_scratch_slots`` helpers give for the live n.

The staircase. Level 0 is the input sequence (length n), cut into tiles of TILE0 = 8 * 256
elements; level j >= 1 holds one partial per tile of level j - 1 (tiles of 256 there) and exists
only when level j - 1 is longer than one tile (so its length is at least 2); levels live one
after another in the scratch buffer from a base offset. Each level is at most as long as the
sizing helpers assume (they count tiles of 256 throughout). The highest existing level is at most
one tile long (when n <= 256 ** log256_max_n). A reduce runs the upsweep (tile partials, level
by level) and reduces the top level; an exclusive scan then scans the top level and walks back
down, each tile scanning its elements from its level-above prefix. Levels that do not exist for
the live n are loops of zero iterations, so an over-specified log256_max_n costs a few empty
loops and never writes outside the sizes the ``*_scratch_slots`` helpers give.
"""

import quadrants as qd
from quadrants import _runtime
from quadrants.simt import _block_collectives as _bc
from quadrants.simt import _subgroup_collectives as _sgc
from quadrants.simt import block as _blk
from quadrants.simt import subgroup as _sg

BLOCK_DIM = 256
# Tiles of the staircase's input level (level 0) hold 8 * BLOCK_DIM elements; scratch levels one.
PER_THREAD = 8
TILE0 = BLOCK_DIM * PER_THREAD
MAX_LOG256_MAX_N = 4

SCALAR_DTYPES_32 = (qd.i32, qd.u32, qd.f32)
SCALAR_DTYPES_64 = (qd.i64, qd.u64, qd.f64)

OPS = {name: _sgc.OPS[name] for name in ("add", "min", "max")}


def check_depth(log256_max_n):
    """The compile-time capacity: an int in [1, 4]."""
    if isinstance(log256_max_n, bool) or not isinstance(log256_max_n, int):
        raise TypeError(f"log256_max_n must be a compile-time int, got {log256_max_n!r}")
    if log256_max_n > MAX_LOG256_MAX_N:
        raise ValueError(
            f"log256_max_n={log256_max_n} exceeds the maximum of {MAX_LOG256_MAX_N}: tensors are "
            f"indexed by signed 32-bit integers and 256 ** {MAX_LOG256_MAX_N} == 2**32 already covers "
            f"every valid length"
        )
    if log256_max_n < 1:
        raise ValueError(f"log256_max_n must be at least 1, got {log256_max_n}")
    return log256_max_n


def depth_for(n):
    """The smallest D >= 1 with 256 ** D >= n (host only)."""
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(
            f"the depth can only be derived from a Python int; pass log256_max_n explicitly "
            f"(got n={n!r})"
        )
    d = 1
    while BLOCK_DIM**d < n:
        d += 1
    return d


def check_scalar_dtype(dtype, what):
    """reduce / scan element dtypes: 32- and 64-bit ints and floats."""
    if dtype not in SCALAR_DTYPES_32 + SCALAR_DTYPES_64:
        raise NotImplementedError(
            f"{what}: dtype {dtype} is not supported (supported: i32, u32, f32, i64, u64, f64)"
        )
    return dtype


def raw_dtype(dtype):
    """The scratch element type that holds a dtype's bits: u32 for 4-byte, u64 for 8-byte."""
    return qd.u64 if dtype in SCALAR_DTYPES_64 else qd.u32


def simt():
    """Whether phases run as blocks of threads (GPU, or the CPU with cpu_simt) or as tiles walked
    by one thread each. The block code is written for subgroups of 32 lanes: on a Vulkan device
    whose subgroups have another size the tiles are walked by one thread each there too."""
    cfg = _runtime.current_cfg()
    if cfg is None or _runtime.subgroup_size() != 32:
        return False
    return cfg.arch is not _runtime.cpu or bool(cfg.cpu_simt)


def check_distinct(a, b, what):
    if a is b:
        raise ValueError(f"{what}: the output must be a different buffer from the input")
    return True


# ---- typed access to a level: the input/output tensors directly, the scratch through bit casts


@qd.func
def load(buf: qd.template(), i, raw: qd.template(), dtype: qd.template()):
    v = qd.cast(0, dtype)
    if qd.static(raw):
        v = qd.bit_cast(buf[i], dtype)
    else:
        v = qd.cast(buf[i], dtype)
    return v


@qd.func
def store(buf: qd.template(), i, v, raw: qd.template(), dtype: qd.template()):
    if qd.static(raw):
        buf[i] = qd.bit_cast(qd.cast(v, dtype), qd.static(raw_dtype(dtype)))
    else:
        buf[i] = v


def _is_float(dtype):
    return dtype in (qd.f32, qd.f64)


def _is_signed(dtype):
    return dtype in (qd.i32, qd.i64)


def _bits(dtype):
    return 64 if dtype in SCALAR_DTYPES_64 else 32


@qd.func
def identity(kind: qd.template(), dtype: qd.template()):
    """The identity of op kind `kind` (add: 0, min: the largest value, max: the smallest)."""
    v = qd.cast(0, dtype)
    if qd.static(kind == _sgc._TYPE_MAX):
        if qd.static(_is_float(dtype)):
            v = qd.cast(qd.math.inf, dtype)
        elif qd.static(_is_signed(dtype)):
            v = ~(qd.cast(1, dtype) << qd.static(_bits(dtype) - 1))
        else:
            v = ~qd.cast(0, dtype)
    elif qd.static(kind == _sgc._TYPE_MIN):
        if qd.static(_is_float(dtype)):
            v = qd.cast(-qd.math.inf, dtype)
        elif qd.static(_is_signed(dtype)):
            v = qd.cast(1, dtype) << qd.static(_bits(dtype) - 1)
    return v


@qd.func
def ceil_tiles(m):
    return (m + (BLOCK_DIM - 1)) // BLOCK_DIM


# ---- the level chain, recomputed from n where needed (a few integer operations)


@qd.func
def level_len(n, j: qd.template()):
    """Length of level j (0 when it does not exist); level 0 is the input, tiles of TILE0."""
    m = n
    if qd.static(j >= 1):
        m = (n + (TILE0 - 1)) // TILE0 if n > TILE0 else 0
    for _ in qd.static(range(j - 1)):
        m = ceil_tiles(m) if m > BLOCK_DIM else 0
    return m


@qd.func
def level_off(n, base, j: qd.template()):
    """Scratch offset of level j >= 1."""
    off = base
    for i in qd.static(range(1, j)):
        off += level_len(n, i)
    return off


# ---- phases (each is exactly one top-level loop)


@qd.func
def load_level(src: qd.template(), src_off, src_raw: qd.template(), scratch: qd.template(),
               scratch_off, in_scratch, i, dtype: qd.template()):
    """Element i of a level that is either src (level 0) or the scratch level at scratch_off."""
    v = qd.cast(0, dtype)
    if in_scratch:
        v = load(scratch, scratch_off + i, True, dtype)
    else:
        v = load(src, src_off + i, src_raw, dtype)
    return v


@qd.func
def tiles_reduce(src: qd.template(), src_off, src_raw: qd.template(), dst: qd.template(), dst_off,
                 m, nb, per_thread: qd.template(), op: qd.template(), kind: qd.template(),
                 dtype: qd.template()):
    """dst[dst_off + b] = op over tile b (BLOCK_DIM * per_thread elements) of
    src[src_off : src_off + m], for b < nb (raw dst)."""
    tile = qd.static(BLOCK_DIM * per_thread)
    for b in range(nb):
        r = identity(kind, dtype)
        for i in range(b * tile, qd.min(b * tile + tile, m)):
            r = op(r, load(src, src_off + i, src_raw, dtype))
        store(dst, dst_off + b, r, True, dtype)


@qd.func
def tiles_scan(src: qd.template(), src_off, src_raw: qd.template(), dst: qd.template(), dst_off,
               dst_raw: qd.template(), in_scratch, scratch: qd.template(), level_at, m, nb,
               has_prefix: qd.template(), prefix_off, per_thread: qd.template(), op: qd.template(),
               kind: qd.template(), dtype: qd.template()):
    """Exclusive scan of each tile b < nb (BLOCK_DIM * per_thread elements) of a level, started
    from the tile's prefix scratch[prefix_off + b] (has_prefix) or the identity. The level is
    src -> dst, or (in_scratch) the scratch level at level_at, scanned in place."""
    tile = qd.static(BLOCK_DIM * per_thread)
    for b in range(nb):
        acc = identity(kind, dtype)
        if qd.static(has_prefix):
            acc = load(scratch, prefix_off + b, True, dtype)
        for i in range(b * tile, qd.min(b * tile + tile, m)):
            v = load_level(src, src_off, src_raw, scratch, level_at, in_scratch, i, dtype)
            if in_scratch:
                store(scratch, level_at + i, acc, True, dtype)
            else:
                store(dst, dst_off + i, acc, dst_raw, dtype)
            acc = op(acc, v)


# ---- the staircases


@qd.func
def upsweep(src: qd.template(), src_off, src_raw: qd.template(), scratch: qd.template(), base, n,
            depth: qd.template(), op: qd.template(), kind: qd.template(), dtype: qd.template()):
    """Levels 1 .. depth-1 of src[src_off : src_off + n] into scratch[base:]."""
    for j in qd.static(range(1, depth)):
        if qd.static(j == 1):
            tiles_reduce(src, src_off, src_raw, scratch, level_off(n, base, 1), n,
                         level_len(n, 1), PER_THREAD, op, kind, dtype)
        else:
            tiles_reduce(scratch, level_off(n, base, j - 1), True, scratch, level_off(n, base, j),
                         level_len(n, j - 1), level_len(n, j), 1, op, kind, dtype)


@qd.func
def top_level(n, depth: qd.template()):
    """The index of the highest existing level."""
    top = 0
    for j in qd.static(range(1, depth)):
        if level_len(n, j) > 0:
            top = j
    return top


# ---- the GPU scan: one pass over tiles taken in order, each looking back at its predecessors


def scan_per_thread(dtype):
    """Elements per thread of a look-back scan tile: 32 of 4 bytes, 16 of 8 (a tile is 32 KiB:
    fewer tiles make the look-backs shorter; 16M i32 on an H200: 4096-element tiles 94 us,
    8192 79 us)."""
    return 16 if dtype in SCALAR_DTYPES_64 else 32


# Blocks of the scan an SM holds at once: ptxas keeps the loop within 80 registers, three blocks
# overlap one block's look-back with the others' loads (16M i32 on an H200: 68.7 us, 77.9 with the
# two blocks 96 registers allow, 70.6 with four). Also measured there, all slower than the one
# tile per block of today (67.8 us): at most 396 or 1024 blocks each taking tiles until none is
# left and loading the next during the look-back, 70.5 / 72.1 us; the look-back run by the whole
# block over 256 tiles at a time, 72.4 us (75.4 with two blocks per SM); tiles of 4096 elements
# with that look-back, 91 us.
SCAN_MIN_BLOCKS = 3

# tile state bits in the scratch: the tile's own total is published, its inclusive prefix is
_AGGREGATE, _INCLUSIVE = 1, 2


@qd.func
def _padded(j):
    """Shared-memory index of tile element j, one slot of padding per 32 so that the threads
    reading consecutive runs of a tile hit different banks."""
    return j + j // 32


@qd.func
def _lookback(scratch: qd.template(), base, tile, num_tiles, total, op: qd.template(),
              kind: qd.template(), dtype: qd.template()):
    """Run by one subgroup of the block: publishes the tile's total, combines the totals or
    inclusive prefixes of the tiles before it, 32 at a time from the nearest, until one holds an
    inclusive prefix, and publishes the tile's own. Returns the exclusive prefix of the tile.
    Scratch from base: the tile counter, then per tile its state bits, its total and its
    inclusive prefix (each written once, before the bit that publishes it)."""
    raw = qd.static(raw_dtype(dtype))
    lane = _blk.thread_idx() % 32
    flags = base + 1
    totals = base + 1 + num_tiles
    prefixes = base + 1 + 2 * num_tiles
    excl = identity(kind, dtype)
    if tile > 0:
        if lane == 0:
            store(scratch, totals + tile, total, True, dtype)
            qd.simt.grid.mem_fence()
            qd.atomic_or(scratch[flags + tile], qd.cast(_AGGREGATE, raw))
        window = tile - 1
        while True:
            p = window - lane
            f = qd.cast(_INCLUSIVE, raw)
            if p >= 0:
                f = qd.volatile_load(scratch[flags + p])
            while _sg.any_true(f == qd.cast(0, raw)):
                if p >= 0:
                    f = qd.volatile_load(scratch[flags + p])
            qd.simt.grid.mem_fence()  # the states before the values they publish
            inclusive = (f & qd.cast(_INCLUSIVE, raw)) != 0
            v = identity(kind, dtype)
            if p >= 0:
                if inclusive:
                    v = qd.bit_cast(qd.volatile_load(scratch[prefixes + p]), dtype)
                else:
                    v = qd.bit_cast(qd.volatile_load(scratch[totals + p]), dtype)
            done = qd.cast(_sg.ballot(inclusive), qd.u32)
            first = 31 - qd.math.clz(done & (~done + qd.u32(1)))  # the nearest inclusive one
            if done != 0 and lane > first:
                v = identity(kind, dtype)
            excl = op(_sg._reduce_all_op(v, op), excl)
            if done != 0:
                break
            window -= 32
    if lane == 0 and tile + 1 < num_tiles:
        store(scratch, prefixes + tile, op(excl, total), True, dtype)
        qd.simt.grid.mem_fence()
        qd.atomic_or(scratch[flags + tile], qd.cast(_INCLUSIVE, raw))
    return excl


@qd.func
def scan_lookback(src: qd.template(), src_raw: qd.template(), dst: qd.template(),
                  dst_raw: qd.template(), scratch: qd.template(), base, n, op: qd.template(),
                  kind: qd.template(), dtype: qd.template()):
    """dst[i] = op over src[0:i] for i < n in one pass (after zeroing the tile states at
    scratch[base:]; dst may be src): blocks take tiles in order from a counter, so every tile a
    block waits for is being worked on."""
    per = qd.static(scan_per_thread(dtype))
    tile_n = qd.static(BLOCK_DIM * per)
    for j in range(qd.select(n > tile_n, 1 + (n + (tile_n - 1)) // tile_n, 0)):
        scratch[base + j] = 0
    qd.loop_config(block_dim=BLOCK_DIM, min_blocks_per_sm=SCAN_MIN_BLOCKS)
    for i in range((n + (tile_n - 1)) // tile_n * BLOCK_DIM):
        num_tiles = (n + (tile_n - 1)) // tile_n
        staged = _blk.SharedArray((tile_n + tile_n // 32,), dtype)
        shared = _blk.SharedArray((2,), qd.i32)
        carry = _blk.SharedArray((1,), dtype)
        t = _blk.thread_idx()
        if t == 0:
            ticket = 0
            if num_tiles > 1:
                ticket = qd.cast(qd.atomic_add(scratch[base], qd.cast(1, qd.static(raw_dtype(dtype)))),
                                 qd.i32)
            shared[0] = ticket
        _blk.sync()
        tile = shared[0]
        start = tile * tile_n
        vals = qd.Vector.zero(dtype, per)  # coalesced loads, all in flight before the stage
        if start + tile_n <= n:
            for k in qd.static(range(per)):
                vals[k] = load(src, start + k * BLOCK_DIM + t, src_raw, dtype)
        else:
            for k in qd.static(range(per)):
                vals[k] = identity(kind, dtype)
                if start + k * BLOCK_DIM + t < n:
                    vals[k] = load(src, start + k * BLOCK_DIM + t, src_raw, dtype)
        for k in qd.static(range(per)):
            staged[_padded(k * BLOCK_DIM + t)] = vals[k]
        _blk.sync()
        for k in qd.static(range(per)):  # each thread its `per` consecutive elements
            vals[k] = staged[_padded(t * per + k)]
        acc = identity(kind, dtype)
        for k in qd.static(range(per)):
            x = vals[k]
            vals[k] = acc
            acc = op(acc, x)
        e = _bc._exclusive_kind(acc, BLOCK_DIM, op, kind, dtype)
        for k in qd.static(range(per)):  # the tile's own exclusive scan
            staged[_padded(t * per + k)] = op(e, vals[k])
        if t == BLOCK_DIM - 1:
            carry[0] = op(e, acc)  # the tile's total
        _blk.sync()
        if t < 32:
            prefix = _lookback(scratch, base, tile, num_tiles, carry[0], op, kind, dtype)
            _sg.sync()
            if t == 0:
                carry[0] = prefix
        _blk.sync()
        prefix = carry[0]
        for k in qd.static(range(per)):
            j = k * BLOCK_DIM + t
            if start + j < n:
                store(dst, start + j, op(prefix, staged[_padded(j)]), dst_raw, dtype)
        _blk.sync()  # the block's next tile reuses the shared arrays


@qd.func
def exclusive_scan(src: qd.template(), src_raw: qd.template(), dst: qd.template(),
                   dst_raw: qd.template(), scratch: qd.template(), base, n,
                   depth: qd.template(), op: qd.template(), kind: qd.template(),
                   dtype: qd.template()):
    """dst[i] = op over src[0:i] for i < n, the partials or tile states at scratch[base:]: the
    look-back scan on GPUs and with cpu_simt, the staircase on the plain CPU."""
    if qd.static(simt()):
        scan_lookback(src, src_raw, dst, dst_raw, scratch, base, n, op, kind, dtype)
    else:
        exclusive_scan_into(src, src_raw, dst, dst_raw, scratch, base, n, depth, op, kind, dtype)


@qd.func
def exclusive_scan_into(src: qd.template(), src_raw: qd.template(), dst: qd.template(),
                        dst_raw: qd.template(), scratch: qd.template(), base, n,
                        depth: qd.template(), op: qd.template(), kind: qd.template(),
                        dtype: qd.template()):
    """dst[i] = op over src[0:i] for i < n (dst may be src)."""
    upsweep(src, 0, src_raw, scratch, base, n, depth, op, kind, dtype)
    top = top_level(n, depth)
    top_len = n
    top_off = base
    for j in qd.static(range(1, depth)):
        if top == j:
            top_len = level_len(n, j)
            top_off = level_off(n, base, j)
    # the top level, one tile (in place in the scratch, or src -> dst when it is the input)
    tiles_scan(src, 0, src_raw, dst, 0, dst_raw, top > 0, scratch, top_off, top_len,
               1, False, 0, PER_THREAD, op, kind, dtype)
    for k in qd.static(range(depth - 1)):
        j = qd.static(depth - 1 - k)  # the level holding the prefixes of level j - 1's tiles
        if qd.static(j == 1):
            tiles_scan(src, 0, src_raw, dst, 0, dst_raw, False, scratch, 0, n,
                       level_len(n, 1), True, level_off(n, base, 1), PER_THREAD, op, kind, dtype)
        else:
            tiles_scan(src, 0, src_raw, dst, 0, dst_raw, True, scratch,
                       level_off(n, base, j - 1), level_len(n, j - 1), level_len(n, j), True,
                       level_off(n, base, j), 1, op, kind, dtype)
