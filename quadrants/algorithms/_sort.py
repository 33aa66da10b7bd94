"""qd.algorithms.sort: a stable LSB radix sort of 32- or 64-bit keys, with optional values.

The keys are cut into tiles of TILE keys (16 per thread of a 256-thread block, or 8 when a key
and its value take more than 8 bytes); each 8-bit digit is one pass. A key goes to (the keys of
smaller digits) + (the keys of its digit in earlier tiles) + its rank among the keys of its tile
with the same digit. Phases are top-level loops (the phase boundaries are the grid-wide
barriers).

On a GPU (and with cpu_simt), per pass:
1. clear: zero the tile counter and the tiles' status words in the u32 scratch (and, before
   every fourth pass, the digit totals);
2. before every fourth pass, totals: one read of the keys counts the digits of up to four
   passes (``scratch[q * 256 + d]``: the keys whose digit of pass p + q is d);
3. scatter: blocks take tiles in order from the counter. Each subgroup ranks its share of the
   tile 32 keys at a time (lanes of equal digit found with a shared-memory atomic_or per lane);
   thread d of the block publishes the tile's count of digit d in the tile's status word and
   looks back over the words of the tiles before it, 8 at a time, adding their counts until
   one holds an inclusive count (a decoupled look-back, one per digit), then publishes its own
   inclusive count. The tile is put in digit order in shared memory and consecutive threads
   write consecutive positions. A status word holds its flags in the top two bits and the
   count below them; from 2**30 keys on the counts take two arrays after the status words.
   A sort of one tile needs no scratch: its own counts place its keys.
On the plain CPU, per pass: the count of each digit in each tile (tile-major,
``scratch[t * 256 + d]``), one thread scanning the table in digit-major order (exclusive),
which gives every (digit, tile) pair the output position of its first key, and each tile's
thread walking its keys in order and advancing the positions in the table.

Keys of a tile keep their order, so the sort is stable. Passes alternate keys -> tmp_keys ->
keys, so an even number of passes leaves the result in keys.

Signed and float keys sort as unsigned bit patterns in the same order: the first pass maps
each key as it reads it (signed keys flip the sign bit; floats flip the sign bit of
non-negative values and every bit of negative ones, so NaNs with the sign bit clear sort after
+inf, as in NumPy) and the last pass maps it back as it writes it.

The count is read from ``n[()]`` inside every phase (loop bounds included), so a sort launches
a fixed list of loops and no serial task.
"""

import quadrants as qd
from quadrants.algorithms import _common as c
from quadrants.simt import _block_collectives as _bc
from quadrants.simt import block as _blk
from quadrants.simt import subgroup as _sg

B = c.BLOCK_DIM
RADIX_BITS = 8
_W = 32  # lanes per subgroup
_ADD, _ADD_KIND = c.OPS["add"]
KEY_DTYPES = c.SCALAR_DTYPES_32 + c.SCALAR_DTYPES_64
# Blocks of the scatter phase an SM holds at once: ptxas keeps the phase within 128 registers
# (more blocks cost spills and were slower on an H200).
_SCATTER_BLOCKS = 2
# GPU scratch layout: the digit totals of up to _HIST_PASSES passes (_HIST_PASSES * B words),
# the tile counter (_TICKET), then one status word per tile and digit from _STATUS, tile-major.
_HIST_PASSES = 4
_TICKET = _HIST_PASSES * B
_STATUS = _TICKET + 1
_HIST_BLOCKS = 512  # blocks that count the digit totals, each over every 512th tile
# a status word: the flag bits over a count (n < 2 ** 30 keys)
_AGGREGATE = 1 << 30
_INCLUSIVE = 2 << 30
_VALUE_MASK = (1 << 30) - 1
_PACKED_LIMIT = 1 << 30  # from this many keys on, the counts live beside the status words
_LOOKBACK = 8  # status words a look-back step reads at once


def _key_bits(key_dtype):
    if key_dtype not in KEY_DTYPES:
        raise NotImplementedError(
            f"sort: key dtype {key_dtype} is not supported (supported: u32, i32, f32, u64, i64, f64)"
        )
    return 64 if key_dtype in c.SCALAR_DTYPES_64 else 32


def _check_end_bit(end_bit, key_dtype):
    bits = _key_bits(key_dtype)
    if isinstance(end_bit, bool) or not isinstance(end_bit, int):
        raise TypeError(f"sort: end_bit must be a compile-time int, got {end_bit!r}")
    if end_bit <= 0 or end_bit % (2 * RADIX_BITS) != 0 or end_bit > bits:
        raise ValueError(
            f"sort: end_bit={end_bit} must be a positive multiple of 16 (an even number of 8-bit "
            f"digit passes, so that the result lands in keys) and at most the key width {bits}"
        )
    return end_bit // RADIX_BITS


def _unsigned(key_dtype):
    return qd.u64 if key_dtype in c.SCALAR_DTYPES_64 else qd.u32


def _twiddled(key_dtype):
    return key_dtype in (qd.i32, qd.i64, qd.f32, qd.f64)


def _tile_keys(key_dtype, values, has_values):
    """Keys per tile: 16 per thread, or 8 when a key and its value take more than 8 bytes (a
    tile's keys and values are staged in shared memory)."""
    nbytes = _key_bits(key_dtype) // 8
    if has_values:
        nbytes += 8 if values.dtype in c.SCALAR_DTYPES_64 else 4
    return B * (16 if nbytes <= 8 else 8)


@qd.func
def _map(u, key_dtype: qd.template(), forward: qd.template()):
    """A key's bits (unsigned) to bits that sort in the key's order (forward) and back."""
    r = u
    if qd.static(_twiddled(key_dtype)):
        ut = qd.static(_unsigned(key_dtype))
        sign = qd.cast(1, ut) << qd.static(_key_bits(key_dtype) - 1)
        if qd.static(key_dtype in (qd.f32, qd.f64)):
            negative = (u & sign) != 0
            if qd.static(not forward):
                negative = (u & sign) == 0  # a mapped negative has the sign bit clear
            r = ~u if negative else u ^ sign
        else:
            r = u ^ sign
    return r


@qd.func
def _read(src: qd.template(), i, key_dtype: qd.template(), first: qd.template()):
    """Key i of the pass's input as sortable bits (mapped as it is read in the first pass)."""
    u = qd.bit_cast(src[i], qd.static(_unsigned(key_dtype)))
    if qd.static(first):
        u = _map(u, key_dtype, True)
    return u


@qd.func
def _write(dst: qd.template(), i, u, key_dtype: qd.template(), last: qd.template()):
    if qd.static(last):
        u = _map(u, key_dtype, False)
    dst[i] = qd.bit_cast(u, key_dtype)


@qd.func
def _digit(u, bit_start: qd.template()):
    return qd.cast((u >> bit_start) & (B - 1), qd.i32)


@qd.func
def _num_tiles(n: qd.template(), tile_n: qd.template()):
    return (n[()] + (tile_n - 1)) // tile_n


@qd.func
def _histogram(src: qd.template(), scratch: qd.template(), n: qd.template(),
               bit_start: qd.template(), key_dtype: qd.template(), first: qd.template(),
               tile_n: qd.template()):
    """Plain CPU: scratch[t * 256 + d] = the count of digit d among the keys of tile t (a tile's
    counts contiguous: its thread updates them without atomics)."""
    for tile in range(_num_tiles(n, tile_n)):
        count = n[()]
        for d in range(B):
            scratch[tile * B + d] = qd.u32(0)
        for i in range(tile * tile_n, qd.min(tile * tile_n + tile_n, count)):
            slot = tile * B + _digit(_read(src, i, key_dtype, first), bit_start)
            scratch[slot] = scratch[slot] + qd.u32(1)


@qd.func
def _rows(scratch: qd.template(), n: qd.template(), tile_n: qd.template()):
    """Plain CPU: one thread replaces the table by its exclusive scan in digit-major order (the
    output position of each (digit, tile) pair's first key)."""
    for _ in range(1):
        num_tiles = _num_tiles(n, tile_n)
        acc = qd.u32(0)
        for d in range(B):
            for t in range(num_tiles):
                v = scratch[t * B + d]
                scratch[t * B + d] = acc
                acc += v


@qd.func
def _clear(scratch: qd.template(), n: qd.template(), tile_n: qd.template(),
           with_totals: qd.template()):
    """GPU, before a pass of more than one tile: zero the tile counter and the status words (and
    the digit totals, when with_totals)."""
    lo = qd.static(0 if with_totals else _TICKET)
    for j in range(lo, qd.select(_num_tiles(n, tile_n) > 1, _STATUS + _num_tiles(n, tile_n) * B,
                                 lo)):
        scratch[j] = qd.u32(0)


@qd.func
def _totals(src: qd.template(), scratch: qd.template(), n: qd.template(),
            pass0: qd.template(), npasses: qd.template(), key_dtype: qd.template(),
            first: qd.template(), tile_n: qd.template()):
    """GPU, before pass pass0 of more than one tile: scratch[q * B + d] += the number of keys
    whose digit of pass pass0 + q is d, for q < npasses (one read of the keys for up to
    _HIST_PASSES passes; shared-memory counts per block, one global atomic per block and count)."""
    kpt = qd.static(tile_n // B)
    qd.loop_config(block_dim=B)
    for i in range(qd.select(_num_tiles(n, tile_n) > 1,
                             qd.min(_num_tiles(n, tile_n), _HIST_BLOCKS), 0) * B):
        count = n[()]
        num_tiles = _num_tiles(n, tile_n)
        g = qd.min(num_tiles, _HIST_BLOCKS)
        hist = _blk.SharedArray((npasses * B,), qd.i32)
        t = _blk.thread_idx()
        b = i // B
        for q in qd.static(range(npasses)):
            hist[q * B + t] = 0
        _blk.sync()
        for k in range((num_tiles - b + (g - 1)) // g):
            tile = b + k * g
            keys = qd.Vector.zero(qd.static(_unsigned(key_dtype)), kpt)
            for r in qd.static(range(kpt)):  # every load in flight before the first atomic
                j = tile * tile_n + r * B + t
                if j < count:
                    keys[r] = _read(src, j, key_dtype, first)
            for r in qd.static(range(kpt)):
                if tile * tile_n + r * B + t < count:
                    for q in qd.static(range(npasses)):
                        qd.atomic_add(hist[q * B + _digit(keys[r], (pass0 + q) * RADIX_BITS)], 1)
        _blk.sync()
        for q in qd.static(range(npasses)):
            h = hist[q * B + t]
            if h != 0:
                qd.atomic_add(scratch[q * B + t], qd.cast(h, qd.u32))


@qd.func
def _publish(scratch: qd.template(), base, num_tiles, slot, flag: qd.template(), value,
             packed):
    """Status word `slot` becomes flag and value: one word (the value below the flag bits) when
    packed, else the value in the flag's own array after the status words (one for the tiles'
    counts, one for their inclusive counts: a reader that saw the first flag may read its value
    after the second was published), fenced before the flag word that publishes it."""
    if packed:
        qd.atomic_exchange(scratch[base + slot], qd.u32(flag) | qd.cast(value, qd.u32))
    else:
        array = qd.static(1 if flag == _AGGREGATE else 2)
        scratch[base + array * num_tiles * B + slot] = qd.cast(value, qd.u32)
        qd.simt.grid.mem_fence()
        qd.atomic_exchange(scratch[base + slot], qd.u32(flag))


@qd.func
def _tiles_before(scratch: qd.template(), count, num_tiles, tile, own):
    """GPU, thread d of the block holding tile `tile` (of several): the number of keys of digit
    d in the tiles before it, from a decoupled look-back over the tiles' status words (each
    publishes its own count, then its inclusive count once known). The flag bits share the
    word with the count while counts fit below them; from _PACKED_LIMIT keys on the counts take
    two arrays after the status words."""
    d = _blk.thread_idx()
    base = _STATUS
    packed = count < _PACKED_LIMIT
    excl = 0
    if tile == 0:
        _publish(scratch, base, num_tiles, d, _INCLUSIVE, own, packed)
    else:
        _publish(scratch, base, num_tiles, tile * B + d, _AGGREGATE, own, packed)
        j = tile - 1  # tile 0 publishes an inclusive count at once: j stays >= 0
        done = False
        # a loop the subgroup leaves together (the scans after it need every lane converged)
        while _sg.any_true(not done):
            if not done:
                if packed:  # _LOOKBACK tiles at a time, combined from the nearest
                    ws = qd.Vector.zero(qd.u32, _LOOKBACK)
                    for m in qd.static(range(_LOOKBACK)):
                        if j - m >= 0:
                            ws[m] = qd.volatile_load(scratch[base + (j - m) * B + d])
                    going = True
                    for m in qd.static(range(_LOOKBACK)):
                        if going:
                            if ws[m] == qd.u32(0):
                                going = False  # not published yet: read again from here
                            else:
                                excl += qd.cast(ws[m] & qd.u32(_VALUE_MASK), qd.i32)
                                j -= 1
                                if (ws[m] & qd.u32(_INCLUSIVE)) != qd.u32(0):
                                    done = True
                                    going = False
                else:
                    w = qd.volatile_load(scratch[base + j * B + d])
                    if w != qd.u32(0):
                        qd.simt.grid.mem_fence()  # the flag before the value it publishes
                        inclusive = (w & qd.u32(_INCLUSIVE)) != qd.u32(0)
                        array = 1 + qd.cast(inclusive, qd.i32)
                        excl += qd.cast(qd.volatile_load(
                            scratch[base + (array * num_tiles + j) * B + d]), qd.i32)
                        if inclusive:
                            done = True
                        else:
                            j -= 1
        _publish(scratch, base, num_tiles, tile * B + d, _INCLUSIVE, excl + own, packed)
    return excl


@qd.func
def _scatter(src: qd.template(), dst: qd.template(), vsrc: qd.template(), vdst: qd.template(),
             scratch: qd.template(), n: qd.template(), bit_start: qd.template(),
             key_dtype: qd.template(), has_values: qd.template(), first: qd.template(),
             last: qd.template(), tile_n: qd.template(), hist_slot: qd.template()):
    """Every key to its place for this pass (the module docstring, phase 3)."""
    if qd.static(c.simt()):
        kpt = qd.static(tile_n // B)
        nw = qd.static(B // _W)
        ut = qd.static(_unsigned(key_dtype))
        vn = qd.static(tile_n if has_values else 1)  # values staged beside their keys
        vdt = qd.static(vsrc.dtype if has_values else qd.i32)
        qd.loop_config(block_dim=B, min_blocks_per_sm=_SCATTER_BLOCKS)
        for i in range(_num_tiles(n, tile_n) * B):
            count = n[()]
            num_tiles = _num_tiles(n, tile_n)
            counts = _blk.SharedArray((nw, B), qd.i32)  # per subgroup and digit
            # the output position of the tile's keys of digit d, less their first in the tile
            gofs = _blk.SharedArray((B,), qd.i32)
            staged = _blk.SharedArray((tile_n,), ut)
            vstaged = _blk.SharedArray((vn,), vdt)
            ticket = _blk.SharedArray((1,), qd.i32)
            t = _blk.thread_idx()
            lane = t % _W
            warp = t // _W
            if t == 0:  # tiles in the order blocks start them: every tile looked back at is live
                ticket[0] = 0
                if num_tiles > 1:
                    ticket[0] = qd.cast(qd.atomic_add(scratch[_TICKET], qd.u32(1)), qd.i32)
            _blk.sync()
            tile = ticket[0]
            base = tile * tile_n
            valid = qd.min(tile_n, count - base)
            for w in qd.static(range(nw)):
                counts[w, t] = 0
            # subgroup w ranks the keys [w * 32 * kpt, (w + 1) * 32 * kpt) of the tile, 32 at a
            # time in order, so the ranks are stable; keys past the end take the last digit and
            # so land after every key of the tile
            keys = qd.Vector.zero(ut, kpt)
            ranks = qd.Vector.zero(qd.i32, kpt)
            for r in qd.static(range(kpt)):
                j = warp * (_W * kpt) + r * _W + lane
                keys[r] = ~qd.cast(0, ut)
                if j < valid:
                    keys[r] = _read(src, base + j, key_dtype, first)
            _blk.sync()
            qd.static_assert(tile_n >= nw * B, "a tile holds a word per subgroup and digit")
            # while ranking, staged[w * B + d] holds the lanes of subgroup w whose key has digit d
            for w in qd.static(range(nw)):
                staged[w * B + t] = qd.cast(0, ut)
            _blk.sync()
            # (warp.match_any, i.e. match.any.sync, in place of match_peers: 16M i32 keys on an
            # H200 864 us against 577)
            for r in qd.static(range(kpt)):
                d = _digit(keys[r], bit_start)
                peers = _bc.match_peers(staged, warp * B + d, ut)
                below = qd.math.popcnt(peers & _sg.lanemask_lt(lane))
                before = counts[warp, d]
                ranks[r] = before + below
                _sg.sync()
                if below == 0:
                    counts[warp, d] = before + qd.math.popcnt(peers)
                    staged[warp * B + d] = qd.cast(0, ut)
                _sg.sync()
            _blk.sync()
            per_warp = qd.Vector.zero(qd.i32, nw)  # digit t: the subgroups' counts
            mine = 0  # and the tile's count
            for w in qd.static(range(nw)):
                per_warp[w] = counts[w, t]
                mine += per_warp[w]
            own = mine  # the tile's keys of digit t, less those past the end (the last digit)
            if t == B - 1:
                own -= tile_n - valid
            total = own  # the keys of digit t, and those of digit t in the tiles before this one
            before_t = 0
            if num_tiles > 1:
                total = qd.cast(scratch[hist_slot * B + t], qd.i32)
                before_t = _tiles_before(scratch, count, num_tiles, tile, own)
            start = _bc._exclusive_kind(mine, B, _ADD, _ADD_KIND, qd.i32)
            below_t = _bc._exclusive_kind(total, B, _ADD, _ADD_KIND, qd.i32)
            for w in qd.static(range(nw)):  # where subgroup w's keys of digit t go in the tile
                counts[w, t] = start
                start += per_warp[w]
            gofs[t] = below_t + before_t - (start - mine)
            _blk.sync()
            for r in qd.static(range(kpt)):  # the tile in digit order, in shared memory
                d = _digit(keys[r], bit_start)
                pos = counts[warp, d] + ranks[r]
                staged[pos] = keys[r]
                if qd.static(has_values):
                    j = warp * (_W * kpt) + r * _W + lane
                    if j < valid:
                        vstaged[pos] = vsrc[base + j]
            _blk.sync()
            for r in qd.static(range(kpt)):  # consecutive threads write consecutive positions
                j = r * B + t
                if j < valid:
                    u = staged[j]
                    p = gofs[_digit(u, bit_start)] + j
                    _write(dst, p, u, key_dtype, last)
                    if qd.static(has_values):
                        vdst[p] = vstaged[j]
            _blk.sync()  # the block's next tile reuses the shared arrays
    else:
        for tile in range(_num_tiles(n, tile_n)):
            count = n[()]
            for i in range(tile * tile_n, qd.min(tile * tile_n + tile_n, count)):
                u = _read(src, i, key_dtype, first)
                slot = tile * B + _digit(u, bit_start)
                p = qd.cast(scratch[slot], qd.i32)
                scratch[slot] = qd.cast(p + 1, qd.u32)
                _write(dst, p, u, key_dtype, last)
                if qd.static(has_values):
                    vdst[p] = vsrc[i]


@qd.func
def _pass(src: qd.template(), dst: qd.template(), vsrc: qd.template(), vdst: qd.template(),
          scratch: qd.template(), n: qd.template(), p: qd.template(), passes: qd.template(),
          key_dtype: qd.template(), has_values: qd.template(), tile_n: qd.template()):
    bit_start = qd.static(p * RADIX_BITS)
    first = qd.static(p == 0)
    last = qd.static(p == passes - 1)
    if qd.static(c.simt()):
        if qd.static(p % _HIST_PASSES == 0):
            _clear(scratch, n, tile_n, True)
            _totals(src, scratch, n, p, qd.static(min(_HIST_PASSES, passes - p)), key_dtype,
                    first, tile_n)
        else:
            _clear(scratch, n, tile_n, False)
    else:
        _histogram(src, scratch, n, bit_start, key_dtype, first, tile_n)
        _rows(scratch, n, tile_n)
    _scatter(src, dst, vsrc, vdst, scratch, n, bit_start, key_dtype, has_values, first, last,
             tile_n, p % _HIST_PASSES)


@qd.func(requires_top_level=True)
def sort(keys: qd.template(), tmp_keys: qd.template(), values: qd.template(),
         tmp_values: qd.template(), scratch: qd.template(), n: qd.template(),
         key_dtype: qd.template(), has_values: qd.template(), end_bit: qd.template(),
         log256_max_n: qd.template()):
    """Stable ascending sort of keys[0:n[()]] (and the same permutation of values when
    has_values), on the low end_bit bits of the keys; tmp_keys / tmp_values are buffers of the
    same size, scratch a u32 buffer of sort_scratch_slots(N, log256_max_n) slots."""
    qd.static(c.check_depth(log256_max_n))
    passes = qd.static(_check_end_bit(end_bit, key_dtype))
    tile_n = qd.static(_tile_keys(key_dtype, values, has_values))
    for p in qd.static(range(passes)):
        if qd.static(p % 2 == 0):
            _pass(keys, tmp_keys, values, tmp_values, scratch, n, p, passes, key_dtype,
                  has_values, tile_n)
        else:
            _pass(tmp_keys, keys, tmp_values, values, scratch, n, p, passes, key_dtype,
                  has_values, tile_n)
