/* cache/payload.c -- little-endian byte writer and bounds-checked reader for payloads. */
#include "cache.h"

#include <stdlib.h>
#include <string.h>

void
qd_bytes_u32(QdBytesOut *out, uint32_t v)
{
    char b[4];
    for (int i = 0; i < 4; i++) {
        b[i] = (char)(uint8_t)(v >> (8 * i));
    }
    qd_sbuf_putn(&out->sb, b, 4);
}

void
qd_bytes_u64(QdBytesOut *out, uint64_t v)
{
    qd_bytes_u32(out, (uint32_t)v);
    qd_bytes_u32(out, (uint32_t)(v >> 32));
}

void
qd_bytes_raw(QdBytesOut *out, const void *data, size_t n)
{
    if (n > 0) {
        qd_sbuf_putn(&out->sb, data, n);
    }
}

void
qd_bytes_str(QdBytesOut *out, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    qd_bytes_u32(out, (uint32_t)n);
    qd_bytes_raw(out, s, n);
}

const void *
qd_bytes_get_raw(QdBytesIn *in, size_t n)
{
    if (in->failed || (size_t)(in->end - in->p) < n) {
        in->failed = true;
        return NULL;
    }
    const void *at = in->p;
    in->p += n;
    return at;
}

uint32_t
qd_bytes_get_u32(QdBytesIn *in)
{
    const uint8_t *b = qd_bytes_get_raw(in, 4);
    if (b == NULL) {
        return 0;
    }
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

uint64_t
qd_bytes_get_u64(QdBytesIn *in)
{
    uint64_t lo = qd_bytes_get_u32(in);
    return lo | (uint64_t)qd_bytes_get_u32(in) << 32;
}

char *
qd_bytes_get_str(QdBytesIn *in)
{
    uint32_t n = qd_bytes_get_u32(in);
    const char *s = qd_bytes_get_raw(in, n);
    if (s == NULL) {
        return NULL;
    }
    char *copy = malloc((size_t)n + 1);
    if (copy == NULL) {
        in->failed = true;
        return NULL;
    }
    memcpy(copy, s, n);
    copy[n] = '\0';
    return copy;
}
