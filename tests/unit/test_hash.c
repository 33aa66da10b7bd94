/* tests/unit/test_hash.c -- qd_hash64 for tables and the BLAKE2b-256 QdHasher for cache keys.
 *
 * qd_hash64 must be deterministic and spread keys evenly over the low bits that power-of-two
 * tables use. The BLAKE2b digests are checked against known answers (the values Python's
 * hashlib.blake2b(data, digest_size=32) gives), streaming in any chunking must match a single
 * update (including chunks that end exactly on, just before and just after the 128-byte block
 * boundary), and update_str must keep the boundary between strings.
 */
#include "unit.h"

#include <stdlib.h>
#include <string.h>

/* A 1000-byte input whose bytes are (7 * i + 3) mod 256. */
static void
fill_pattern(uint8_t *data, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        data[i] = (uint8_t)(7 * i + 3);
    }
}

static void
hex_of(const void *data, size_t len, char out[2 * QD_DIGEST_BYTES + 1])
{
    QdHasher hs;
    qd_hasher_init(&hs);
    qd_hasher_update(&hs, data, len);
    QdDigest d = qd_hasher_final(&hs);
    qd_digest_hex(&d, out);
}

static int
compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a;
    uint64_t y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static int
popcount64(uint64_t x)
{
    int n = 0;
    while (x) {
        x &= x - 1;
        n++;
    }
    return n;
}

void
test_hash64_determinism(void)
{
    char a[] = "offload_task";
    char b[] = "offload_task";
    CHECK_EQ(qd_hash64(a, strlen(a)), qd_hash64(b, strlen(b)));
    CHECK_EQ(qd_hash64(a, strlen(a)), qd_hash64("offload_task", 12));
    CHECK_EQ(qd_hash64("", 0), qd_hash64(NULL, 0));
    /* Length is part of the input: a trailing NUL byte changes the hash. */
    CHECK(qd_hash64("a", 1) != qd_hash64("a", 2));
    CHECK(qd_hash64("ab", 2) != qd_hash64("ba", 2));
    CHECK(qd_hash64("", 0) != qd_hash64("\0", 1));

    uint64_t h1 = qd_hash64_combine(qd_hash64_combine(0, 1), 2);
    uint64_t h2 = qd_hash64_combine(qd_hash64_combine(0, 1), 2);
    uint64_t h3 = qd_hash64_combine(qd_hash64_combine(0, 2), 1);
    CHECK_EQ(h1, h2);
    CHECK(h1 != h3);
    CHECK(qd_hash64_combine(h1, 0) != h1);
}

void
test_hash64_spread(void)
{
    enum { KEYS = 1 << 16, BUCKETS = 1 << 10 };
    uint64_t *hashes = malloc(sizeof(uint64_t) * KEYS);
    static uint32_t low[BUCKETS];
    static uint32_t high[BUCKETS];
    if (!CHECK(hashes != NULL)) {
        return;
    }
    memset(low, 0, sizeof(low));
    memset(high, 0, sizeof(high));
    for (uint32_t i = 0; i < KEYS; i++) {
        /* Sequential integers: the worst case for a weak hash. */
        uint8_t key[4] = {(uint8_t)i, (uint8_t)(i >> 8), (uint8_t)(i >> 16), (uint8_t)(i >> 24)};
        hashes[i] = qd_hash64(key, sizeof(key));
        low[hashes[i] & (BUCKETS - 1)]++;
        high[hashes[i] >> 54]++;
    }
    /* 64 keys per bucket on average; a decent hash stays well inside [32, 96]. */
    uint32_t low_min = KEYS, low_max = 0, high_min = KEYS, high_max = 0;
    for (int b = 0; b < BUCKETS; b++) {
        low_min = low[b] < low_min ? low[b] : low_min;
        low_max = low[b] > low_max ? low[b] : low_max;
        high_min = high[b] < high_min ? high[b] : high_min;
        high_max = high[b] > high_max ? high[b] : high_max;
    }
    CHECK(low_min >= 32 && low_max <= 96);
    CHECK(high_min >= 32 && high_max <= 96);

    /* No two of the 65536 keys collide on the full 64 bits. */
    qsort(hashes, KEYS, sizeof(uint64_t), compare_u64);
    uint32_t collisions = 0;
    for (uint32_t i = 1; i < KEYS; i++) {
        collisions += hashes[i] == hashes[i - 1];
    }
    CHECK_EQ(collisions, 0);
    free(hashes);

    /* Flipping one input bit changes about half of the output bits on average. */
    uint64_t flipped_bits = 0;
    uint32_t trials = 0;
    for (uint32_t i = 0; i < 256; i++) {
        uint8_t key[8];
        for (int k = 0; k < 8; k++) {
            key[k] = (uint8_t)(i * 37 + k * 101);
        }
        uint64_t base = qd_hash64(key, sizeof(key));
        for (int bit = 0; bit < 64; bit++) {
            key[bit / 8] ^= (uint8_t)(1u << (bit % 8));
            flipped_bits += (uint64_t)popcount64(base ^ qd_hash64(key, sizeof(key)));
            key[bit / 8] ^= (uint8_t)(1u << (bit % 8));
            trials++;
        }
    }
    double mean = (double)flipped_bits / trials;
    CHECK(mean > 24.0 && mean < 40.0);
}

void
test_blake2b_known_answers(void)
{
    char hex[2 * QD_DIGEST_BYTES + 1];
    hex_of("", 0, hex);
    CHECK_STR(hex, "0e5751c026e543b2e8ab2eb06099daa1d1e5df47778f7787faab45cdf12fe3a8");
    hex_of("abc", 3, hex);
    CHECK_STR(hex, "bddd813c634239723171ef3fee98579b94964e3bb1cb3e427262c8c068d52319");

    /* Exactly one block (bytes 0..127): the final flag must go on this block, not an empty one. */
    uint8_t block[128];
    for (int i = 0; i < 128; i++) {
        block[i] = (uint8_t)i;
    }
    hex_of(block, sizeof(block), hex);
    CHECK_STR(hex, "c3582f71ebb2be66fa5dd750f80baae97554f3b015663c8be377cfcb2488c1d1");

    uint8_t data[1000];
    fill_pattern(data, sizeof(data));
    hex_of(data, sizeof(data), hex);
    CHECK_STR(hex, "d62b6c768ce1afc8367e0498ab2f8e3f7c178c35b1429f14c4604b545d200f52");
}

void
test_blake2b_streaming(void)
{
    static const size_t chunkings[] = {1, 7, 127, 128, 129, 999, 1000};
    uint8_t data[1000];
    fill_pattern(data, sizeof(data));

    QdHasher one;
    qd_hasher_init(&one);
    qd_hasher_update(&one, data, sizeof(data));
    QdDigest want = qd_hasher_final(&one);

    /* Bit c is set when chunking c disagrees, so a failure names the culprit. */
    uint32_t mismatches = 0;
    for (size_t c = 0; c < QD_ARRAY_LEN(chunkings); c++) {
        QdHasher hs;
        qd_hasher_init(&hs);
        size_t chunk = chunkings[c];
        for (size_t at = 0; at < sizeof(data); at += chunk) {
            size_t n = sizeof(data) - at < chunk ? sizeof(data) - at : chunk;
            qd_hasher_update(&hs, data + at, n);
            /* Empty updates in between change nothing. */
            qd_hasher_update(&hs, data, 0);
        }
        QdDigest got = qd_hasher_final(&hs);
        if (memcmp(got.bytes, want.bytes, QD_DIGEST_BYTES) != 0) {
            mismatches |= 1u << c;
        }
    }
    CHECK_EQ(mismatches, 0);

    /* Different inputs give different digests, even one bit apart. */
    data[500] ^= 1;
    QdHasher other;
    qd_hasher_init(&other);
    qd_hasher_update(&other, data, sizeof(data));
    QdDigest flipped = qd_hasher_final(&other);
    CHECK(memcmp(flipped.bytes, want.bytes, QD_DIGEST_BYTES) != 0);
}

void
test_blake2b_update_str_prefix(void)
{
    QdHasher hs;
    qd_hasher_init(&hs);
    qd_hasher_update_str(&hs, "ab");
    qd_hasher_update_str(&hs, "c");
    QdDigest ab_c = qd_hasher_final(&hs);

    qd_hasher_init(&hs);
    qd_hasher_update_str(&hs, "a");
    qd_hasher_update_str(&hs, "bc");
    QdDigest a_bc = qd_hasher_final(&hs);

    qd_hasher_init(&hs);
    qd_hasher_update_str(&hs, "ab");
    qd_hasher_update_str(&hs, "c");
    QdDigest ab_c_again = qd_hasher_final(&hs);

    CHECK(memcmp(ab_c.bytes, a_bc.bytes, QD_DIGEST_BYTES) != 0);
    CHECK(memcmp(ab_c.bytes, ab_c_again.bytes, QD_DIGEST_BYTES) == 0);

    /* update_str is exactly an 8-byte little-endian length followed by the bytes. */
    qd_hasher_init(&hs);
    qd_hasher_update_u64(&hs, 2);
    qd_hasher_update(&hs, "ab", 2);
    qd_hasher_update_u64(&hs, 1);
    qd_hasher_update(&hs, "c", 1);
    QdDigest manual = qd_hasher_final(&hs);
    CHECK(memcmp(ab_c.bytes, manual.bytes, QD_DIGEST_BYTES) == 0);

    const uint8_t two_le[8] = {2, 0, 0, 0, 0, 0, 0, 0};
    qd_hasher_init(&hs);
    qd_hasher_update(&hs, two_le, sizeof(two_le));
    qd_hasher_update(&hs, "ab", 2);
    QdDigest bytes_form = qd_hasher_final(&hs);
    qd_hasher_init(&hs);
    qd_hasher_update_str(&hs, "ab");
    QdDigest str_form = qd_hasher_final(&hs);
    CHECK(memcmp(bytes_form.bytes, str_form.bytes, QD_DIGEST_BYTES) == 0);

    /* The empty string still contributes its length: ("", "x") differs from ("x"). */
    qd_hasher_init(&hs);
    qd_hasher_update_str(&hs, "");
    qd_hasher_update_str(&hs, "x");
    QdDigest empty_x = qd_hasher_final(&hs);
    qd_hasher_init(&hs);
    qd_hasher_update_str(&hs, "x");
    QdDigest x = qd_hasher_final(&hs);
    CHECK(memcmp(empty_x.bytes, x.bytes, QD_DIGEST_BYTES) != 0);
}

void
test_blake2b_digest_hex(void)
{
    QdDigest d;
    for (int i = 0; i < QD_DIGEST_BYTES; i++) {
        d.bytes[i] = (uint8_t)(0x10 * (i % 16) + (15 - i % 16));
    }
    d.bytes[0] = 0x00;
    d.bytes[1] = 0xff;
    d.bytes[2] = 0xa5;
    char hex[2 * QD_DIGEST_BYTES + 2];
    memset(hex, '#', sizeof(hex));
    qd_digest_hex(&d, hex);
    CHECK_EQ(strlen(hex), 2 * QD_DIGEST_BYTES);
    CHECK(strncmp(hex, "00ffa5", 6) == 0);
    /* Lowercase hex only, and nothing written past the NUL. */
    int bad = 0;
    for (int i = 0; i < 2 * QD_DIGEST_BYTES; i++) {
        bad += !((hex[i] >= '0' && hex[i] <= '9') || (hex[i] >= 'a' && hex[i] <= 'f'));
    }
    CHECK_EQ(bad, 0);
    CHECK(hex[2 * QD_DIGEST_BYTES + 1] == '#');
    /* Each byte maps to two digits, high nibble first. */
    CHECK(strncmp(hex + 2 * 3, "3c", 2) == 0);
    CHECK(strncmp(hex + 2 * 31, "f0", 2) == 0);
}
