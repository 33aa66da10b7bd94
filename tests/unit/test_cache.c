/* tests/unit/test_cache.c -- the offline cache's files: round trip, damaged entries, eviction.
 *
 * Each test works in a fresh directory under $TMPDIR (or /tmp) and removes it at the end.
 * Damage is done with plain file I/O: truncation, a flipped payload byte, a foreign format
 * version and a file copied under another key must all read as misses and be deleted.
 */
#include "unit.h"

#include "../../csrc/cache/cache.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void
make_tmpdir(char *out, size_t n)
{
    const char *base = getenv("TMPDIR");
    snprintf(out, n, "%s/qd_cache_test_XXXXXX", base && *base ? base : "/tmp");
    if (mkdtemp(out) == NULL) {
        out[0] = '\0';
    }
}

static void
remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            char path[1400];
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) {
                continue;
            }
            snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
            unlink(path);
        }
        closedir(d);
    }
    rmdir(dir);
}

static QdDigest
key_of(const char *s)
{
    QdHasher hs;
    qd_hasher_init(&hs);
    qd_hasher_update_str(&hs, s);
    return qd_hasher_final(&hs);
}

static void
path_of(const char *dir, const QdDigest *key, char *out, size_t n)
{
    char hex[2 * QD_DIGEST_BYTES + 1];
    qd_digest_hex(key, hex);
    snprintf(out, n, "%s/%s.qdk", dir, hex);
}

void
test_cache_put_get_roundtrip(void)
{
    char dir[512], sub[600];
    QdCtx ctx;
    QdCache cache;
    qd_ctx_init(&ctx);
    make_tmpdir(dir, sizeof(dir));
    snprintf(sub, sizeof(sub), "%s/a/b", dir); /* created on the first write */
    if (!CHECK(qd_cache_init(&ctx, &cache, sub, 0, 0.25) == 0)) {
        return;
    }
    QdDigest k1 = key_of("one"), k2 = key_of("two");
    void *data = NULL;
    size_t size = 0;
    CHECK(qd_cache_get(&cache, &k1, "test", &data, &size) == 0);
    CHECK(qd_cache_put(&cache, &k1, "test", "hello", 5) == 0);
    CHECK(qd_cache_put(&cache, &k2, "test", "", 0) == 0);
    if (CHECK(qd_cache_get(&cache, &k1, "test", &data, &size) == 1)) {
        CHECK(size == 5 && memcmp(data, "hello", 5) == 0);
        free(data);
    }
    if (CHECK(qd_cache_get(&cache, &k2, "test", &data, &size) == 1)) {
        CHECK(size == 0);
        free(data);
    }
    /* Another producer tag does not load (and the entry is dropped). */
    CHECK(qd_cache_get(&cache, &k1, "othr", &data, &size) == 0);
    CHECK(qd_cache_get(&cache, &k1, "test", &data, &size) == 0);
    CHECK(cache.hits == 2 && cache.writes == 2);
    remove_tree(sub);
    snprintf(sub, sizeof(sub), "%s/a", dir);
    rmdir(sub);
    rmdir(dir);
}

void
test_cache_rejects_damaged_entries(void)
{
    char dir[512], path[1200];
    QdCtx ctx;
    QdCache cache;
    qd_ctx_init(&ctx);
    make_tmpdir(dir, sizeof(dir));
    qd_cache_init(&ctx, &cache, dir, 0, 0.25);
    QdDigest k = key_of("k"), other = key_of("other");
    char payload[300];
    memset(payload, 'x', sizeof(payload));
    void *data;
    size_t size;
    path_of(dir, &k, path, sizeof(path));

    /* Truncated. */
    qd_cache_put(&cache, &k, "test", payload, sizeof(payload));
    CHECK(truncate(path, 200) == 0);
    CHECK(qd_cache_get(&cache, &k, "test", &data, &size) == 0);
    CHECK(access(path, F_OK) != 0); /* removed */

    /* A flipped payload byte. */
    qd_cache_put(&cache, &k, "test", payload, sizeof(payload));
    FILE *f = fopen(path, "r+b");
    if (CHECK(f != NULL)) {
        fseek(f, 150, SEEK_SET);
        fputc('y', f);
        fclose(f);
    }
    CHECK(qd_cache_get(&cache, &k, "test", &data, &size) == 0);

    /* A foreign format version. */
    qd_cache_put(&cache, &k, "test", payload, sizeof(payload));
    f = fopen(path, "r+b");
    if (CHECK(f != NULL)) {
        fseek(f, 8, SEEK_SET);
        fputc((int)QD_CACHE_FORMAT + 1, f);
        fclose(f);
    }
    CHECK(qd_cache_get(&cache, &k, "test", &data, &size) == 0);

    /* A valid entry copied under another key. */
    char other_path[1200], cmd[3000];
    qd_cache_put(&cache, &k, "test", payload, sizeof(payload));
    path_of(dir, &other, other_path, sizeof(other_path));
    snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", path, other_path);
    CHECK(system(cmd) == 0);
    CHECK(qd_cache_get(&cache, &other, "test", &data, &size) == 0);
    if (CHECK(qd_cache_get(&cache, &k, "test", &data, &size) == 1)) {
        free(data);
    }
    CHECK(cache.rejected == 4);
    remove_tree(dir);
}

void
test_cache_lru_eviction(void)
{
    char dir[512];
    QdCtx ctx;
    QdCache cache;
    qd_ctx_init(&ctx);
    make_tmpdir(dir, sizeof(dir));
    /* Entries of 88 + 912 = 1000 bytes; bound 4500 bytes, evictions free down to 3000. */
    qd_cache_init(&ctx, &cache, dir, 4500, 1.0 / 3.0);
    char payload[912] = {0};
    QdDigest keys[5];
    for (int i = 0; i < 4; i++) {
        char name[16];
        snprintf(name, sizeof(name), "e%d", i);
        keys[i] = key_of(name);
        qd_cache_put(&cache, &keys[i], "test", payload, sizeof(payload));
        struct timespec pause = {0, 20 * 1000 * 1000};
        nanosleep(&pause, NULL); /* distinct modification times */
    }
    /* Using e0 makes e1 the least recently used. */
    void *data;
    size_t size;
    if (CHECK(qd_cache_get(&cache, &keys[0], "test", &data, &size) == 1)) {
        free(data);
    }
    keys[4] = key_of("e4");
    qd_cache_put(&cache, &keys[4], "test", payload, sizeof(payload)); /* 5000 > 4500 */
    uint64_t entries, bytes;
    qd_cache_stat(&cache, &entries, &bytes);
    CHECK(entries == 3 && bytes == 3000);
    bool present[5];
    for (int i = 0; i < 5; i++) {
        present[i] = qd_cache_get(&cache, &keys[i], "test", &data, &size) == 1;
        if (present[i]) {
            free(data);
        }
    }
    CHECK(present[0] && !present[1] && !present[2] && present[3] && present[4]);
    remove_tree(dir);
}

void
test_cache_clear_and_stat(void)
{
    char dir[512], tmp[1400];
    QdCtx ctx;
    QdCache cache;
    qd_ctx_init(&ctx);
    make_tmpdir(dir, sizeof(dir));
    qd_cache_init(&ctx, &cache, dir, 0, 0.25);
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof(name), "c%d", i);
        QdDigest k = key_of(name);
        qd_cache_put(&cache, &k, "test", "abc", 3);
    }
    /* Files that are not entries are neither counted nor removed, except stale temporaries. */
    snprintf(tmp, sizeof(tmp), "%s/notes.txt", dir);
    FILE *f = fopen(tmp, "w");
    if (f) {
        fclose(f);
    }
    uint64_t entries, bytes;
    qd_cache_stat(&cache, &entries, &bytes);
    CHECK(entries == 3 && bytes == 3 * 91);
    CHECK(qd_cache_clear(&cache) == 3);
    qd_cache_stat(&cache, &entries, &bytes);
    CHECK(entries == 0 && bytes == 0);
    CHECK(access(tmp, F_OK) == 0);
    remove_tree(dir);
}

void
test_cache_bytes_reader_bounds(void)
{
    QdBytesOut out = {0};
    qd_sbuf_init(&out.sb);
    qd_bytes_u32(&out, 0xdeadbeefu);
    qd_bytes_u64(&out, 0x0123456789abcdefull);
    qd_bytes_str(&out, "kernel");
    qd_bytes_str(&out, NULL);
    QdBytesIn in = {(const uint8_t *)out.sb.data, (const uint8_t *)out.sb.data + out.sb.len, false};
    CHECK(qd_bytes_get_u32(&in) == 0xdeadbeefu);
    CHECK(qd_bytes_get_u64(&in) == 0x0123456789abcdefull);
    char *s = qd_bytes_get_str(&in);
    CHECK_STR(s, "kernel");
    free(s);
    s = qd_bytes_get_str(&in);
    CHECK_STR(s, "");
    free(s);
    CHECK(!in.failed && in.p == in.end);
    /* Reading past the end fails softly and stays failed. */
    CHECK(qd_bytes_get_u32(&in) == 0 && in.failed);
    in.p = (const uint8_t *)out.sb.data + 12; /* at the string's length */
    in.end = in.p + 5;                        /* cut inside the string */
    in.failed = false;
    CHECK(qd_bytes_get_str(&in) == NULL && in.failed);
    qd_sbuf_free(&out.sb);
}
