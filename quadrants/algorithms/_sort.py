"""qd.algorithms.sort: a stable LSB radix sort of 32- or 64-bit keys, with optional values.

Each digit pass (8 bits) is three phases over tiles of 256 keys:
1. histogram: the count of each digit in each tile, stored digit-major in the u32 scratch
   (``scratch[d * num_tiles + t]``), so that
2. one exclusive scan of scratch[0 : 256 * num_tiles] (the staircase of _common.py, its partials
   after the histograms) gives every (digit, tile) pair the output position of its first key;
3. scatter: every key goes to that position plus its rank among the tile's keys of the same digit
   (keys of a tile keep their order, so the sort is stable). On a GPU the rank comes from
   ``qd.simt.block.radix_rank_match_atomic_or``; on the plain CPU the tile's thread walks its
   keys in order and advances the positions in the scratch.
Passes alternate keys -> tmp_keys -> keys, so an even number of passes leaves the result in keys.

Signed and float keys are mapped in place to unsigned bit patterns that sort in the same order
before the first pass and mapped back after the last: signed keys flip the sign bit; floats flip
the sign bit of non-negative values and every bit of negative ones (NaNs with the sign bit clear
sort after +inf, as in NumPy).
"""

import quadrants as qd
from quadrants.algorithms import _common as c
from quadrants.simt import _block_collectives as _bc
from quadrants.simt import block as _blk

B = c.BLOCK_DIM
RADIX_BITS = 8
_ADD, _ADD_KIND = c.OPS["add"]
KEY_DTYPES = c.SCALAR_DTYPES_32 + c.SCALAR_DTYPES_64


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


@qd.func
def _twiddle(keys: qd.template(), n, key_dtype: qd.template(), forward: qd.template()):
    ut = qd.static(_unsigned(key_dtype))
    bits = qd.static(_key_bits(key_dtype))
    for i in range(n):
        u = qd.bit_cast(keys[i], ut)
        sign = qd.cast(1, ut) << (bits - 1)
        if qd.static(key_dtype in (qd.f32, qd.f64)):
            negative = (u & sign) != 0
            if qd.static(not forward):
                negative = (u & sign) == 0  # a mapped negative has the sign bit clear
            if negative:
                u = ~u
            else:
                u = u ^ sign
        else:
            u = u ^ sign
        keys[i] = qd.bit_cast(u, key_dtype)


@qd.func
def _digit(key, bit_start: qd.template(), key_dtype: qd.template()):
    u = qd.bit_cast(key, qd.static(_unsigned(key_dtype)))
    return qd.cast((u >> bit_start) & (B - 1), qd.i32)


@qd.func
def _histogram(src: qd.template(), scratch: qd.template(), n, num_tiles,
               bit_start: qd.template(), key_dtype: qd.template()):
    if qd.static(c.simt()):
        qd.loop_config(block_dim=B)
        for i in range(num_tiles * B):
            hist = _blk.SharedArray((B,), qd.i32)
            t = _blk.thread_idx()
            hist[t] = 0
            _blk.sync()
            if i < n:
                qd.atomic_add(hist[_digit(src[i], bit_start, key_dtype)], 1)
            _blk.sync()
            scratch[t * num_tiles + i // B] = qd.cast(hist[t], qd.u32)
    else:
        for tile in range(num_tiles):
            for d in range(B):
                scratch[d * num_tiles + tile] = qd.u32(0)
            for i in range(tile * B, qd.min(tile * B + B, n)):
                scratch[_digit(src[i], bit_start, key_dtype) * num_tiles + tile] += qd.u32(1)


@qd.func
def _scatter(src: qd.template(), dst: qd.template(), vsrc: qd.template(), vdst: qd.template(),
             scratch: qd.template(), n, num_tiles, bit_start: qd.template(),
             key_dtype: qd.template(), has_values: qd.template()):
    if qd.static(c.simt()):
        qd.loop_config(block_dim=B)
        for i in range(num_tiles * B):
            bins = _blk.SharedArray((B,), qd.i32)
            excl = _blk.SharedArray((B,), qd.i32)
            d = B - 1  # threads past the end rank after every key of the tile
            if i < n:
                d = _digit(src[i], bit_start, key_dtype)
            rank = _bc.radix_rank_match_atomic_or(d, B, RADIX_BITS, 0, RADIX_BITS, bins, excl)
            if i < n:
                pos = qd.cast(scratch[d * num_tiles + i // B], qd.i32) + rank - excl[d]
                dst[pos] = src[i]
                if qd.static(has_values):
                    vdst[pos] = vsrc[i]
    else:
        for tile in range(num_tiles):
            for i in range(tile * B, qd.min(tile * B + B, n)):
                slot = _digit(src[i], bit_start, key_dtype) * num_tiles + tile
                pos = qd.cast(scratch[slot], qd.i32)
                scratch[slot] = qd.cast(pos + 1, qd.u32)
                dst[pos] = src[i]
                if qd.static(has_values):
                    vdst[pos] = vsrc[i]


@qd.func
def _pass(src: qd.template(), dst: qd.template(), vsrc: qd.template(), vdst: qd.template(),
          scratch: qd.template(), n, num_tiles, bit_start: qd.template(), key_dtype: qd.template(),
          has_values: qd.template(), log256_max_n: qd.template()):
    _histogram(src, scratch, n, num_tiles, bit_start, key_dtype)
    hist_len = num_tiles * B
    c.exclusive_scan_into(scratch, 0, True, scratch, 0, True, scratch, hist_len, hist_len,
                          log256_max_n, _ADD, _ADD_KIND, qd.u32)
    _scatter(src, dst, vsrc, vdst, scratch, n, num_tiles, bit_start, key_dtype, has_values)


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
    count = n[()]
    num_tiles = c.ceil_tiles(count)
    if qd.static(_twiddled(key_dtype)):
        _twiddle(keys, count, key_dtype, True)
    for p in qd.static(range(passes)):
        if qd.static(p % 2 == 0):
            _pass(keys, tmp_keys, values, tmp_values, scratch, count, num_tiles, p * RADIX_BITS,
                  key_dtype, has_values, log256_max_n)
        else:
            _pass(tmp_keys, keys, tmp_values, values, scratch, count, num_tiles, p * RADIX_BITS,
                  key_dtype, has_values, log256_max_n)
    if qd.static(_twiddled(key_dtype)):
        _twiddle(keys, count, key_dtype, False)
