/* base/base.h -- the public surface of the base layer: arenas, vectors, string interning,
 * hashing, source locations and diagnostics.
 *
 * Everything else in the core builds on these. Nothing here knows about the IR, Python, LLVM
 * or any driver. Conventions used across the core start here:
 *   - fallible functions return 0 / -1 (or a pointer / NULL) and describe the failure in a QdDiag;
 *   - compile-time memory comes from a QdArena and is released all at once;
 *   - strings that are compared often are interned in a QdStrtab, so equality is pointer equality.
 */
#ifndef QD_BASE_H
#define QD_BASE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/***** assert.c *****/

/* Internal invariants. A failed QD_ASSERT reports file:line:function and aborts in debug and
 * test builds (QD_DEBUG defined); release builds turn it into an internal-error diagnostic via
 * qd_assert_fail's hook so that a user's Python session is never killed. */
void qd_assert_fail(const char *cond, const char *msg, const char *file, int line, const char *func);
#define QD_ASSERT(cond, msg)                                                                       \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            qd_assert_fail(#cond, (msg), __FILE__, __LINE__, __func__);                            \
        }                                                                                          \
    } while (0)
#define QD_UNREACHABLE() qd_assert_fail("unreachable", "", __FILE__, __LINE__, __func__)

#define QD_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/***** arena.c *****/

typedef struct QdArenaBlock QdArenaBlock;

/* A bump allocator over a chain of blocks. Allocations are zero-filled and 16-byte aligned;
 * requests larger than a block get a block of their own. Nothing is freed one object at a time. */
typedef struct QdArena {
    QdArenaBlock *head; /* block being carved; older blocks follow through ->prev */
    size_t block_size;  /* size of a regular block (bytes) */
    bool out_of_memory; /* set once any allocation failed; callers report QD_ERR_NOMEM */
} QdArena;

/* A position in an arena to roll back to (per-pass scratch memory). */
typedef struct QdArenaMark {
    QdArenaBlock *block; /* head block when the mark was taken */
    QdArenaBlock *behind; /* the block behind that head at that time */
    size_t used;         /* bytes used in that block at that time */
} QdArenaMark;

void qd_arena_init(QdArena *arena);
void qd_arena_free(QdArena *arena);
/* Zero-filled memory, or NULL (and arena->out_of_memory set) when malloc fails. */
void *qd_arena_alloc(QdArena *arena, size_t size);
/* Grows an allocation made from this arena; copies the old bytes, zero-fills the rest. */
void *qd_arena_realloc(QdArena *arena, void *old, size_t old_size, size_t new_size);
char *qd_arena_strndup(QdArena *arena, const char *s, size_t len);
char *qd_arena_strdup(QdArena *arena, const char *s);
char *qd_arena_printf(QdArena *arena, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
QdArenaMark qd_arena_mark(QdArena *arena);
/* Releases everything allocated after the mark was taken. */
void qd_arena_reset(QdArena *arena, QdArenaMark mark);
/* Total bytes held from malloc (for statistics and tests). */
size_t qd_arena_bytes(const QdArena *arena);

#define QD_NEW(arena, T) ((T *)qd_arena_alloc((arena), sizeof(T)))
#define QD_NEW_ARRAY(arena, T, n) ((T *)qd_arena_alloc((arena), sizeof(T) * (size_t)(n)))

/***** vec.c *****/

/* Typed growable vectors. `arena` NULL means the heap (free with qd_vec_free); otherwise the
 * storage lives in the arena and is released with it. Growth doubles the capacity. */
#define QdVec(T)                                                                                   \
    struct {                                                                                       \
        T *data;       /* elements 0 .. len-1 */                                                   \
        uint32_t len;  /* number of elements in use */                                             \
        uint32_t cap;  /* number of elements allocated */                                          \
    }

/* Makes room for `need` elements; returns 0 or -1 when out of memory. */
int qd_vec_reserve_(QdArena *arena, void **data, uint32_t *cap, uint32_t need, size_t elem_size);

#define qd_vec_reserve(arena, v, n)                                                                \
    qd_vec_reserve_((arena), (void **)&(v)->data, &(v)->cap, (n), sizeof(*(v)->data))
/* Appends x; evaluates to 0, or -1 when out of memory. */
#define qd_vec_push(arena, v, x)                                                                   \
    (qd_vec_reserve((arena), (v), (v)->len + 1) ? -1 : ((v)->data[(v)->len++] = (x), 0))
#define qd_vec_pop(v) ((v)->data[--(v)->len])
#define qd_vec_last(v) ((v)->data[(v)->len - 1])
/* Frees heap-backed storage (arena NULL); a no-op is wrong for arena vectors, so don't call it. */
#define qd_vec_free(v)                                                                             \
    do {                                                                                           \
        free((v)->data);                                                                           \
        (v)->data = NULL;                                                                          \
        (v)->len = (v)->cap = 0;                                                                   \
    } while (0)

/***** strtab.c *****/

/* String interning: equal strings map to one pointer, owned by the table's arena. */
typedef struct QdStrtab {
    QdArena *arena;        /* where the strings and the slots live */
    const char **slots;    /* open-addressing table of interned strings (NULL = empty) */
    uint32_t *lengths;     /* length of the string in each slot */
    uint32_t cap;          /* number of slots, a power of two */
    uint32_t count;        /* number of interned strings */
} QdStrtab;

void qd_strtab_init(QdStrtab *tab, QdArena *arena);
/* Returns the interned copy of s[0..len), or NULL when out of memory. */
const char *qd_strtab_intern(QdStrtab *tab, const char *s, size_t len);
const char *qd_strtab_intern_cstr(QdStrtab *tab, const char *s);

/***** hash.c *****/

/* 64-bit non-cryptographic hash for hash tables (FNV-1a with a final mix). */
uint64_t qd_hash64(const void *data, size_t len);
uint64_t qd_hash64_combine(uint64_t h, uint64_t v);

/* BLAKE2b (RFC 7693) with a 256-bit digest, for cache keys: collisions must not happen in
 * practice, so a cryptographic-quality hash is used. Streaming: init, update*, final. */
#define QD_DIGEST_BYTES 32
typedef struct QdHasher {
    uint64_t h[8];      /* chaining state */
    uint64_t t[2];      /* total bytes compressed so far (128-bit counter) */
    uint8_t buf[128];   /* pending input block */
    size_t buflen;      /* bytes pending in buf */
} QdHasher;

typedef struct QdDigest {
    uint8_t bytes[QD_DIGEST_BYTES];
} QdDigest;

void qd_hasher_init(QdHasher *hs);
void qd_hasher_update(QdHasher *hs, const void *data, size_t len);
/* Feeds a length-prefixed string, so ("ab","c") and ("a","bc") hash differently. */
void qd_hasher_update_str(QdHasher *hs, const char *s);
void qd_hasher_update_u64(QdHasher *hs, uint64_t v);
QdDigest qd_hasher_final(QdHasher *hs);
/* Writes 64 lowercase hex digits and a NUL into out[65]. */
void qd_digest_hex(const QdDigest *d, char out[2 * QD_DIGEST_BYTES + 1]);

/***** diag.c *****/

/* Kinds of error; see errors.def for their meaning and Python class. */
typedef enum QdErrKind {
    QD_ERR_NONE = 0, /* no error recorded */
#define QD_ERR(kind, pyname, pybase) QD_ERR_##kind,
#include "errors.def"
#undef QD_ERR
    QD_ERR_COUNT_ /* number of kinds + 1 */
} QdErrKind;

/* A position in user source: a Python file for kernels, a .qir file for hand-written IR. */
typedef struct QdLoc {
    const char *file; /* interned file name; NULL when unknown */
    uint32_t line;    /* 1-based; 0 when unknown */
    uint32_t col;     /* 1-based; 0 when unknown */
} QdLoc;

#define QD_DIAG_MSG_MAX 4096
#define QD_DIAG_FILE_MAX 512

/* The first error of an operation: what went wrong and where. Owns its text (fixed buffers),
 * so it outlives the arena of the compilation that produced it. */
typedef struct QdDiag {
    QdErrKind kind;               /* QD_ERR_NONE while no error is recorded */
    char message[QD_DIAG_MSG_MAX]; /* human-readable message, without the location prefix */
    char file[QD_DIAG_FILE_MAX];   /* copy of loc.file, "" when unknown */
    uint32_t line;                /* 1-based line, 0 when unknown */
    uint32_t col;                 /* 1-based column, 0 when unknown */
} QdDiag;

/* What every fallible core function gets: where to put the error. */
typedef struct QdCtx {
    QdDiag diag;       /* first error recorded (later ones are counted, not kept) */
    uint32_t nerrors;  /* number of errors reported since the last reset */
} QdCtx;

void qd_ctx_init(QdCtx *ctx);
void qd_diag_clear(QdCtx *ctx);
/* Records an error (the first one wins) and returns -1, so call sites read `return qd_error(...)`. */
int qd_error(QdCtx *ctx, QdLoc loc, QdErrKind kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int qd_verror(QdCtx *ctx, QdLoc loc, QdErrKind kind, const char *fmt, va_list ap);
/* Formats "file:line:col: message" (location parts omitted when unknown) into out. */
void qd_diag_format(const QdDiag *diag, char *out, size_t out_size);
const char *qd_err_kind_name(QdErrKind kind);

#define RETURN_IF_ERROR(x)                                                                         \
    do {                                                                                           \
        if ((x) < 0) {                                                                             \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)

/***** sbuf.c *****/

/* A growable heap string builder for printers. Out-of-memory is sticky and reported by
 * qd_sbuf_failed; the text stays NUL-terminated at every step. */
typedef struct QdSbuf {
    char *data;    /* NUL-terminated text */
    size_t len;    /* bytes in use, excluding the NUL */
    size_t cap;    /* bytes allocated */
    bool failed;   /* an allocation failed; contents are truncated */
} QdSbuf;

void qd_sbuf_init(QdSbuf *sb);
void qd_sbuf_free(QdSbuf *sb);
void qd_sbuf_putc(QdSbuf *sb, char c);
void qd_sbuf_puts(QdSbuf *sb, const char *s);
void qd_sbuf_putn(QdSbuf *sb, const char *s, size_t n);
void qd_sbuf_printf(QdSbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Pads with spaces up to `column` (0-based) counted from the last newline. */
void qd_sbuf_pad_to(QdSbuf *sb, size_t column);
/* Hands the text over to the caller (free() it); the builder is left empty. */
char *qd_sbuf_take(QdSbuf *sb);

#endif /* QD_BASE_H */
