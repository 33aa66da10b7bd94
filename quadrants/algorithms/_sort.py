"""qd.algorithms.sort: a stable LSB radix sort of 32- or 64-bit keys, with optional values.

The keys are cut into tiles of TILE keys (16 per thread of a 256-thread block, or 8 when a key
and its value take more than 8 bytes). Each digit pass (8 bits) is three phases, each one
top-level loop (the phase boundaries are the grid-wide barriers):
1. histogram: the count of each digit in each tile in the u32 scratch, digit-major on a GPU
   (``scratch[d * num_tiles + t]``), tile-major on the plain CPU (``scratch[t * 256 + d]``:
   the counts a tile's thread updates are contiguous);
2. rows: on a GPU one inclusive scan per digit over the tiles (``scratch[d * num_tiles + t]``
   becomes the count of digit d in tiles 0..t, so ``scratch[d * num_tiles + num_tiles - 1]`` is
   the total of digit d); on the plain CPU one thread scans the whole table in digit-major
   order (exclusive), which gives every (digit, tile) pair the output position of its first
   key;
3. scatter: tile t's first key of digit d goes to (the totals of the digits below d) + (the
   keys of digit d in tiles before t); a key's rank among the tile's keys of its digit comes on
   top. On a GPU each subgroup ranks its share of the tile 32 keys at a time (lanes of equal
   digit found with a shared-memory atomic_or per lane), the tile is put in digit order in shared memory, and consecutive
   threads write consecutive positions; on the plain CPU the tile's thread walks its keys in
   order and advances the positions in the table.
Keys of a tile keep their order, so the sort is stable. Passes alternate keys -> tmp_keys ->
keys, so an even number of passes leaves the result in keys.

Signed and float keys sort as unsigned bit patterns in the same order: the first pass maps
each key as it reads it (signed keys flip the sign bit; floats flip the sign bit of
non-negative values and every bit of negative ones, so NaNs with the sign bit clear sort after
+inf, as in NumPy) and the last pass maps it back as it writes it.

The count is read from ``n[()]`` inside every phase (loop bounds included), so a sort launches
exactly three tasks per pass.
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
    """scratch[d * num_tiles + t] = the count of digit d among the keys of tile t."""
    kpt = qd.static(tile_n // B)
    if qd.static(c.simt()):
        qd.loop_config(block_dim=B)
        for i in range(_num_tiles(n, tile_n) * B):
            count = n[()]
            num_tiles = _num_tiles(n, tile_n)
            hist = _blk.SharedArray((B,), qd.i32)
            t = _blk.thread_idx()
            tile = i // B
            hist[t] = 0
            digits = qd.Vector.zero(qd.i32, kpt)
            for r in qd.static(range(kpt)):  # every load in flight before the first atomic
                j = tile * tile_n + r * B + t
                digits[r] = -1
                if j < count:
                    digits[r] = _digit(_read(src, j, key_dtype, first), bit_start)
            _blk.sync()
            for r in qd.static(range(kpt)):
                if digits[r] >= 0:
                    qd.atomic_add(hist[digits[r]], 1)
            _blk.sync()
            scratch[t * num_tiles + tile] = qd.cast(hist[t], qd.u32)
    else:
        for tile in range(_num_tiles(n, tile_n)):
            count = n[()]
            for d in range(B):  # tile-major on the plain CPU: a tile's counts are contiguous
                scratch[tile * B + d] = qd.u32(0)
            for i in range(tile * tile_n, qd.min(tile * tile_n + tile_n, count)):
                slot = tile * B + _digit(_read(src, i, key_dtype, first), bit_start)
                scratch[slot] = scratch[slot] + qd.u32(1)  # the tile's own counts: no atomic


@qd.func
def _rows(scratch: qd.template(), n: qd.template(), tile_n: qd.template()):
    """Inclusive scan of each digit's row of tile counts, in place."""
    if qd.static(c.simt()):
        qd.loop_config(block_dim=B)
        for i in range(B * B):  # block d scans row d, B tiles at a time
            num_tiles = _num_tiles(n, tile_n)
            total = _blk.SharedArray((1,), qd.i32)
            t = _blk.thread_idx()
            row = (i // B) * num_tiles
            carry = 0
            for chunk in range((num_tiles + (B - 1)) // B):
                j = chunk * B + t
                v = 0
                if j < num_tiles:
                    v = qd.cast(scratch[row + j], qd.i32)
                incl = _bc.inclusive_scan(v, B, _ADD, qd.i32) + carry
                if j < num_tiles:
                    scratch[row + j] = qd.cast(incl, qd.u32)
                if t == B - 1:
                    total[0] = incl
                _blk.sync()
                carry = total[0]
                _blk.sync()
    else:
        for _ in range(1):  # one thread: the exclusive scan of the table in digit-major order
            num_tiles = _num_tiles(n, tile_n)
            acc = qd.u32(0)
            for d in range(B):
                for t in range(num_tiles):
                    v = scratch[t * B + d]
                    scratch[t * B + d] = acc
                    acc += v


@qd.func
def _scatter(src: qd.template(), dst: qd.template(), vsrc: qd.template(), vdst: qd.template(),
             scratch: qd.template(), n: qd.template(), bit_start: qd.template(),
             key_dtype: qd.template(), has_values: qd.template(), first: qd.template(),
             last: qd.template(), tile_n: qd.template()):
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
            gofs = _blk.SharedArray((B,), qd.i32)  # output position of the tile's digit d, less
            dstart = _blk.SharedArray((B,), qd.i32)  # its first position in the sorted tile
            staged = _blk.SharedArray((tile_n,), ut)
            vstaged = _blk.SharedArray((vn,), vdt)
            t = _blk.thread_idx()
            lane = t % _W
            warp = t // _W
            tile = i // B
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
            mine = 0  # digit t: the subgroups' prefixes and the tile's count
            for w in qd.static(range(nw)):
                cw = counts[w, t]
                counts[w, t] = mine
                mine += cw
            upto = qd.cast(scratch[t * num_tiles + tile], qd.i32)  # digit t in tiles 0..tile
            total = qd.cast(scratch[t * num_tiles + num_tiles - 1], qd.i32)
            start = _bc._exclusive_kind(mine, B, _ADD, _ADD_KIND, qd.i32)
            below_t = _bc._exclusive_kind(total, B, _ADD, _ADD_KIND, qd.i32)
            own = mine  # the tile's keys of digit t, less those past the end (the last digit)
            if t == B - 1:
                own -= tile_n - valid
            dstart[t] = start
            gofs[t] = below_t + upto - own - start
            _blk.sync()
            for r in qd.static(range(kpt)):  # the tile in digit order, in shared memory
                d = _digit(keys[r], bit_start)
                pos = dstart[d] + counts[warp, d] + ranks[r]
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
          scratch: qd.template(), n: qd.template(), bit_start: qd.template(),
          key_dtype: qd.template(), has_values: qd.template(), first: qd.template(),
          last: qd.template(), tile_n: qd.template()):
    _histogram(src, scratch, n, bit_start, key_dtype, first, tile_n)
    _rows(scratch, n, tile_n)
    _scatter(src, dst, vsrc, vdst, scratch, n, bit_start, key_dtype, has_values, first, last,
             tile_n)


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
            _pass(keys, tmp_keys, values, tmp_values, scratch, n, p * RADIX_BITS, key_dtype,
                  has_values, p == 0, p == passes - 1, tile_n)
        else:
            _pass(tmp_keys, keys, tmp_values, values, scratch, n, p * RADIX_BITS, key_dtype,
                  has_values, p == 0, p == passes - 1, tile_n)
