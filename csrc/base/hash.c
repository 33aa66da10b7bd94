/* base/hash.c -- hashing: a fast 64-bit hash for tables, BLAKE2b-256 for cache keys.
 *
 * qd_hash64 is FNV-1a followed by a 64-bit finalizer (good spread for power-of-two tables).
 * The QdHasher implements BLAKE2b as specified in RFC 7693, unkeyed, with a 32-byte digest; it is
 * the same function as Python's hashlib.blake2b(digest_size=32), which the unit tests check
 * against. Cache keys hash many separate inputs, so the streaming API also has length-prefixed
 * helpers that keep the boundaries between inputs unambiguous.
 */
#include "base.h"

#include <string.h>

uint64_t
qd_hash64(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return h;
}

uint64_t
qd_hash64_combine(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h;
}

/***** BLAKE2b (RFC 7693) *****/

static const uint64_t blake2b_iv[8] = {
    0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL, 0xa54ff53a5f1d36f1ULL,
    0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL, 0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL,
};

/* Message word permutation of each round (rounds 10 and 11 reuse rows 0 and 1). */
static const uint8_t blake2b_sigma[12][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4},
    {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13},
    {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11},
    {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5},
    {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
};

static uint64_t
rotr64(uint64_t x, unsigned n)
{
    return (x >> n) | (x << (64 - n));
}

static uint64_t
load64_le(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) {
        v = (v << 8) | p[i];
    }
    return v;
}

#define B2B_G(a, b, c, d, x, y)                                                                    \
    do {                                                                                           \
        v[a] = v[a] + v[b] + (x);                                                                  \
        v[d] = rotr64(v[d] ^ v[a], 32);                                                            \
        v[c] = v[c] + v[d];                                                                        \
        v[b] = rotr64(v[b] ^ v[c], 24);                                                            \
        v[a] = v[a] + v[b] + (y);                                                                  \
        v[d] = rotr64(v[d] ^ v[a], 16);                                                            \
        v[c] = v[c] + v[d];                                                                        \
        v[b] = rotr64(v[b] ^ v[c], 63);                                                            \
    } while (0)

static void
blake2b_compress(QdHasher *hs, const uint8_t block[128], bool last)
{
    uint64_t m[16], v[16];
    for (int i = 0; i < 16; i++) {
        m[i] = load64_le(block + 8 * i);
    }
    for (int i = 0; i < 8; i++) {
        v[i] = hs->h[i];
        v[i + 8] = blake2b_iv[i];
    }
    v[12] ^= hs->t[0];
    v[13] ^= hs->t[1];
    if (last) {
        v[14] = ~v[14];
    }
    for (int r = 0; r < 12; r++) {
        const uint8_t *s = blake2b_sigma[r];
        B2B_G(0, 4, 8, 12, m[s[0]], m[s[1]]);
        B2B_G(1, 5, 9, 13, m[s[2]], m[s[3]]);
        B2B_G(2, 6, 10, 14, m[s[4]], m[s[5]]);
        B2B_G(3, 7, 11, 15, m[s[6]], m[s[7]]);
        B2B_G(0, 5, 10, 15, m[s[8]], m[s[9]]);
        B2B_G(1, 6, 11, 12, m[s[10]], m[s[11]]);
        B2B_G(2, 7, 8, 13, m[s[12]], m[s[13]]);
        B2B_G(3, 4, 9, 14, m[s[14]], m[s[15]]);
    }
    for (int i = 0; i < 8; i++) {
        hs->h[i] ^= v[i] ^ v[i + 8];
    }
}

static void
counter_add(QdHasher *hs, uint64_t n)
{
    hs->t[0] += n;
    if (hs->t[0] < n) {
        hs->t[1]++;
    }
}

void
qd_hasher_init(QdHasher *hs)
{
    memset(hs, 0, sizeof(*hs));
    for (int i = 0; i < 8; i++) {
        hs->h[i] = blake2b_iv[i];
    }
    /* Parameter block: digest length, no key, fanout 1, depth 1. */
    hs->h[0] ^= 0x01010000ULL ^ (uint64_t)QD_DIGEST_BYTES;
}

void
qd_hasher_update(QdHasher *hs, const void *data, size_t len)
{
    const uint8_t *p = data;
    while (len > 0) {
        /* A full buffer is compressed only once more input arrives: the last block must be
         * compressed with the final flag. */
        if (hs->buflen == sizeof(hs->buf)) {
            counter_add(hs, sizeof(hs->buf));
            blake2b_compress(hs, hs->buf, false);
            hs->buflen = 0;
        }
        size_t n = sizeof(hs->buf) - hs->buflen;
        if (n > len) {
            n = len;
        }
        memcpy(hs->buf + hs->buflen, p, n);
        hs->buflen += n;
        p += n;
        len -= n;
    }
}

void
qd_hasher_update_u64(QdHasher *hs, uint64_t v)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++) {
        b[i] = (uint8_t)(v >> (8 * i));
    }
    qd_hasher_update(hs, b, sizeof(b));
}

void
qd_hasher_update_str(QdHasher *hs, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    qd_hasher_update_u64(hs, n);
    qd_hasher_update(hs, s, n);
}

QdDigest
qd_hasher_final(QdHasher *hs)
{
    QdDigest d;
    counter_add(hs, hs->buflen);
    memset(hs->buf + hs->buflen, 0, sizeof(hs->buf) - hs->buflen);
    blake2b_compress(hs, hs->buf, true);
    for (int i = 0; i < QD_DIGEST_BYTES; i++) {
        d.bytes[i] = (uint8_t)(hs->h[i / 8] >> (8 * (i % 8)));
    }
    return d;
}

void
qd_digest_hex(const QdDigest *d, char out[2 * QD_DIGEST_BYTES + 1])
{
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < QD_DIGEST_BYTES; i++) {
        out[2 * i] = hex[d->bytes[i] >> 4];
        out[2 * i + 1] = hex[d->bytes[i] & 15];
    }
    out[2 * QD_DIGEST_BYTES] = '\0';
}
