/* cache/cache.c -- entries on disk: atomic writes, validated reads, LRU eviction (cache.h). */
#include "cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define HEADER_BYTES 88
static const char MAGIC[8] = {'Q', 'D', 'K', 'C', 'A', 'C', 'H', 'E'};
static const char SUFFIX[] = ".qdk";
/* Temporary files older than this are leftovers of a writer that died. */
#define STALE_TMP_SECONDS 3600

static void
put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

static void
put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

static uint32_t
get_le32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--) {
        v = (v << 8) | p[i];
    }
    return v;
}

static uint64_t
get_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) {
        v = (v << 8) | p[i];
    }
    return v;
}

int
qd_cache_init(QdCtx *ctx, QdCache *cache, const char *dir, uint64_t max_bytes,
              double cleaning_factor)
{
    memset(cache, 0, sizeof(*cache));
    if (strlen(dir) + 80 >= sizeof(cache->dir)) {
        return qd_error(ctx, (QdLoc){0}, QD_ERR_RUNTIME, "offline cache path too long: %s", dir);
    }
    strcpy(cache->dir, dir);
    cache->max_bytes = max_bytes;
    cache->cleaning_factor = cleaning_factor < 0 ? 0 : cleaning_factor > 1 ? 1 : cleaning_factor;
    return 0;
}

static void
entry_path(const QdCache *cache, const QdDigest *key, char *out, size_t out_size)
{
    char hex[2 * QD_DIGEST_BYTES + 1];
    qd_digest_hex(key, hex);
    snprintf(out, out_size, "%s/%s%s", cache->dir, hex, SUFFIX);
}

/* Reads the whole file at `path` (malloc); NULL when it cannot. */
static uint8_t *
read_file(const char *path, size_t *size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return NULL;
    }
    struct stat st;
    uint8_t *buf = NULL;
    if (fstat(fd, &st) == 0 && st.st_size >= 0 && (buf = malloc((size_t)st.st_size + 1))) {
        size_t got = 0;
        while (got < (size_t)st.st_size) {
            ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
            if (n <= 0) {
                if (n < 0 && errno == EINTR) {
                    continue;
                }
                break;
            }
            got += (size_t)n;
        }
        *size = got;
    }
    close(fd);
    return buf;
}

int
qd_cache_get(QdCache *cache, const QdDigest *key, const char tag[4], void **data, size_t *size)
{
    char path[1200];
    size_t len = 0;
    entry_path(cache, key, path, sizeof(path));
    uint8_t *buf = read_file(path, &len);
    if (buf == NULL) {
        cache->misses++;
        return 0;
    }
    bool ok = len >= HEADER_BYTES && memcmp(buf, MAGIC, 8) == 0 &&
              get_le32(buf + 8) == QD_CACHE_FORMAT && memcmp(buf + 12, tag, 4) == 0 &&
              memcmp(buf + 16, key->bytes, QD_DIGEST_BYTES) == 0 &&
              get_le64(buf + 48) == len - HEADER_BYTES;
    if (ok) {
        QdHasher hs;
        qd_hasher_init(&hs);
        qd_hasher_update(&hs, buf + HEADER_BYTES, len - HEADER_BYTES);
        QdDigest sum = qd_hasher_final(&hs);
        ok = memcmp(sum.bytes, buf + 56, QD_DIGEST_BYTES) == 0;
    }
    if (!ok) {
        /* Never loaded: removed, so that the caller's fresh entry replaces it. */
        free(buf);
        unlink(path);
        cache->rejected++;
        cache->misses++;
        return 0;
    }
    memmove(buf, buf + HEADER_BYTES, len - HEADER_BYTES);
    *data = buf;
    *size = len - HEADER_BYTES;
    utimensat(AT_FDCWD, path, NULL, 0); /* recently used */
    cache->hits++;
    return 1;
}

/* mkdir -p of the cache directory. */
static int
make_dirs(const char *dir)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s", dir);
    for (char *p = path + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            if (mkdir(path, 0777) < 0 && errno != EEXIST) {
                return -1;
            }
            *p = '/';
        }
    }
    return mkdir(path, 0777) < 0 && errno != EEXIST ? -1 : 0;
}

static int
write_all(int fd, const void *data, size_t size)
{
    const uint8_t *p = data;
    while (size > 0) {
        ssize_t n = write(fd, p, size);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }
        p += n;
        size -= (size_t)n;
    }
    return 0;
}

int
qd_cache_put(QdCache *cache, const QdDigest *key, const char tag[4], const void *data,
             size_t size)
{
    char path[1200], tmp[1300];
    uint8_t header[HEADER_BYTES];
    if (make_dirs(cache->dir) < 0) {
        return -1;
    }
    entry_path(cache, key, path, sizeof(path));
    /* Unique per process and call: pid, a clock reading and a counter. */
    static unsigned counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld.%ld.%u", path, (long)getpid(), (long)ts.tv_nsec,
             __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED));

    memcpy(header, MAGIC, 8);
    put_le32(header + 8, QD_CACHE_FORMAT);
    memcpy(header + 12, tag, 4);
    memcpy(header + 16, key->bytes, QD_DIGEST_BYTES);
    put_le64(header + 48, size);
    QdHasher hs;
    qd_hasher_init(&hs);
    qd_hasher_update(&hs, data, size);
    QdDigest sum = qd_hasher_final(&hs);
    memcpy(header + 56, sum.bytes, QD_DIGEST_BYTES);

    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        return -1;
    }
    int rc = write_all(fd, header, sizeof(header)) == 0 && write_all(fd, data, size) == 0 ? 0 : -1;
    if (close(fd) < 0) {
        rc = -1;
    }
    if (rc == 0 && rename(tmp, path) < 0) {
        rc = -1;
    }
    if (rc < 0) {
        unlink(tmp);
        return -1;
    }
    cache->writes++;
    if (cache->max_bytes > 0) {
        if (!cache->scanned) {
            uint64_t entries;
            qd_cache_stat(cache, &entries, &cache->approx_bytes);
            cache->scanned = true;
        } else {
            cache->approx_bytes += size + HEADER_BYTES;
        }
        if (cache->approx_bytes > cache->max_bytes) {
            uint64_t target = (uint64_t)((double)cache->max_bytes * (1.0 - cache->cleaning_factor));
            qd_cache_evict(cache, target);
        }
    }
    return 0;
}

/* Whether `name` is an entry file name (64 hex digits + ".qdk"). */
static bool
is_entry_name(const char *name)
{
    size_t n = strlen(name);
    if (n != 2 * QD_DIGEST_BYTES + sizeof(SUFFIX) - 1 ||
        strcmp(name + 2 * QD_DIGEST_BYTES, SUFFIX) != 0) {
        return false;
    }
    for (size_t i = 0; i < 2 * QD_DIGEST_BYTES; i++) {
        char c = name[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
            return false;
        }
    }
    return true;
}

static bool
is_tmp_name(const char *name)
{
    return strstr(name, ".qdk.tmp.") != NULL;
}

typedef struct EntryStat {
    char name[2 * QD_DIGEST_BYTES + sizeof(SUFFIX)];
    uint64_t bytes;
    struct timespec mtime;
} EntryStat;

/* Lists the entries (malloc'd array in *out). Removes temporary files older than an hour when
 * `clean_tmp`. Returns the count. */
static size_t
list_entries(const QdCache *cache, EntryStat **out, bool clean_tmp)
{
    *out = NULL;
    DIR *d = opendir(cache->dir);
    if (d == NULL) {
        return 0;
    }
    size_t n = 0, cap = 0;
    EntryStat *list = NULL;
    struct dirent *de;
    time_t now = time(NULL);
    while ((de = readdir(d)) != NULL) {
        char path[1400];
        struct stat st;
        bool entry = is_entry_name(de->d_name);
        if (!entry && !(clean_tmp && is_tmp_name(de->d_name))) {
            continue;
        }
        snprintf(path, sizeof(path), "%s/%s", cache->dir, de->d_name);
        if (stat(path, &st) < 0) {
            continue; /* removed meanwhile by another process */
        }
        if (!entry) {
            if (now - st.st_mtime > STALE_TMP_SECONDS) {
                unlink(path);
            }
            continue;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            EntryStat *grown = realloc(list, cap * sizeof(*list));
            if (grown == NULL) {
                break;
            }
            list = grown;
        }
        strcpy(list[n].name, de->d_name);
        list[n].bytes = (uint64_t)st.st_size;
        list[n].mtime = st.st_mtim;
        n++;
    }
    closedir(d);
    *out = list;
    return n;
}

void
qd_cache_stat(const QdCache *cache, uint64_t *entries, uint64_t *bytes)
{
    EntryStat *list;
    size_t n = list_entries(cache, &list, false);
    *entries = n;
    *bytes = 0;
    for (size_t i = 0; i < n; i++) {
        *bytes += list[i].bytes;
    }
    free(list);
}

uint64_t
qd_cache_clear(QdCache *cache)
{
    EntryStat *list;
    size_t n = list_entries(cache, &list, true);
    uint64_t removed = 0;
    for (size_t i = 0; i < n; i++) {
        char path[1400];
        snprintf(path, sizeof(path), "%s/%s", cache->dir, list[i].name);
        removed += unlink(path) == 0;
    }
    free(list);
    cache->approx_bytes = 0;
    cache->scanned = true;
    return removed;
}

static int
by_mtime(const void *a, const void *b)
{
    const EntryStat *x = a, *y = b;
    if (x->mtime.tv_sec != y->mtime.tv_sec) {
        return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
    }
    if (x->mtime.tv_nsec != y->mtime.tv_nsec) {
        return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
    }
    return strcmp(x->name, y->name);
}

uint64_t
qd_cache_evict(QdCache *cache, uint64_t target)
{
    EntryStat *list;
    size_t n = list_entries(cache, &list, true);
    uint64_t total = 0, removed = 0;
    for (size_t i = 0; i < n; i++) {
        total += list[i].bytes;
    }
    qsort(list, n, sizeof(*list), by_mtime);
    for (size_t i = 0; i < n && total > target; i++) {
        char path[1400];
        snprintf(path, sizeof(path), "%s/%s", cache->dir, list[i].name);
        if (unlink(path) == 0) {
            removed++;
        }
        total -= list[i].bytes; /* gone either way: removed here or by another process */
    }
    free(list);
    cache->approx_bytes = total;
    cache->scanned = true;
    return removed;
}
