/* cache/cache.h -- the offline cache: compiled kernels on disk, shared by processes.
 *
 * An entry is one file `<dir>/<64 hex digits of its key>.qdk`:
 *
 *     offset  size  field
 *     0       8     magic "QDKCACHE"
 *     8       4     format version (QD_CACHE_FORMAT, little-endian)
 *     12      4     the producer's tag (what the payload is: "cpu1", "cuda", "link"...)
 *     16      32    key (the file name, again: a renamed or copied file does not load)
 *     48      8     payload length in bytes
 *     56      32    BLAKE2b-256 of the payload
 *     88      ...   payload
 *
 * Writers build the whole file under a temporary name in the same directory and rename it
 * into place, so readers see either no entry or a complete one; several processes may write
 * the same key at once (the last rename wins; both files are equal in content anyway). There is
 * no lock file. A reader that finds a short file, a wrong magic, version, tag or key, or a
 * checksum mismatch treats it as absent and deletes it; the caller compiles and writes a fresh
 * entry. A hit refreshes the file's modification time, which eviction orders by (least
 * recently used first): when the entries exceed `max_bytes`, the oldest are removed until at
 * most (1 - cleaning_factor) * max_bytes remain.
 *
 * The layer knows files and bytes only; what keys and payloads mean belongs to its callers.
 */
#ifndef QD_CACHE_H
#define QD_CACHE_H

#include "../base/base.h"

#include <stddef.h>
#include <stdint.h>

/* Bump when the entry layout or any payload layout changes: old entries then never load. */
#define QD_CACHE_FORMAT 2u

typedef struct QdCache {
    char dir[1024];          /* directory of the entries (created on first write) */
    uint64_t max_bytes;      /* bound on the total size of the entries (0 = unbounded) */
    double cleaning_factor;  /* fraction of max_bytes freed by an eviction */
    uint64_t approx_bytes;   /* running estimate of the total (this process's view) */
    bool scanned;            /* approx_bytes has been measured at least once */
    uint64_t hits, misses, writes, rejected; /* counters (tests, `cache info`) */
} QdCache;

/* Sets up a cache over `dir` (not created until the first write). 0, or -1 with a diag when
 * the path is too long. */
int qd_cache_init(QdCtx *ctx, QdCache *cache, const char *dir, uint64_t max_bytes,
                  double cleaning_factor);

/* Reads entry `key` with producer tag `tag` (4 characters). 1 with *data (malloc, free()) and
 * *size on a hit; 0 on a miss (absent, unreadable, or invalid: an invalid file is removed). */
int qd_cache_get(QdCache *cache, const QdDigest *key, const char tag[4], void **data,
                 size_t *size);

/* Writes entry `key` atomically (temporary file + rename), then evicts if the cache is over
 * its bound. 0, or -1 when the entry could not be written (the caller goes on without it). */
int qd_cache_put(QdCache *cache, const QdDigest *key, const char tag[4], const void *data,
                 size_t size);

/* Number of entries and their total size in bytes. */
void qd_cache_stat(const QdCache *cache, uint64_t *entries, uint64_t *bytes);

/* Removes every entry (and stale temporary files); returns how many entries were removed. */
uint64_t qd_cache_clear(QdCache *cache);

/* Evicts least recently used entries until at most `target` bytes remain. Returns the number
 * of entries removed. */
uint64_t qd_cache_evict(QdCache *cache, uint64_t target);

/***** payload.c: a byte-buffer writer and reader for payloads *****/

typedef struct QdBytesOut {
    QdSbuf sb; /* the bytes (not NUL-meaningful) */
} QdBytesOut;

void qd_bytes_u32(QdBytesOut *out, uint32_t v);
void qd_bytes_u64(QdBytesOut *out, uint64_t v);
void qd_bytes_raw(QdBytesOut *out, const void *data, size_t n);
/* A length-prefixed string (NULL is written as the empty string). */
void qd_bytes_str(QdBytesOut *out, const char *s);

typedef struct QdBytesIn {
    const uint8_t *p;   /* next byte */
    const uint8_t *end; /* end of the input */
    bool failed;        /* read past the end: every later read yields zeros */
} QdBytesIn;

uint32_t qd_bytes_get_u32(QdBytesIn *in);
uint64_t qd_bytes_get_u64(QdBytesIn *in);
/* Points *data at the next n bytes (inside the input); NULL and failed when short. */
const void *qd_bytes_get_raw(QdBytesIn *in, size_t n);
/* A string as written by qd_bytes_str, copied into malloc'd memory (NULL when failed). */
char *qd_bytes_get_str(QdBytesIn *in);

#endif /* QD_CACHE_H */
