/* tests/unit/test_arena.c -- QdArena: the bump allocator under every compilation.
 *
 * Covers the contract base.h states: allocations are zero-filled and 16-byte aligned, small
 * allocations spill into new blocks without overlapping, oversized requests get a block of their
 * own, realloc copies and zero-extends, mark/reset hands the scratch memory back for reuse while
 * earlier allocations stay intact, and strdup/printf copy into the arena. Several tests shrink
 * block_size after init so that block boundaries are crossed with little memory.
 */
#include "unit.h"

#include <stdint.h>
#include <string.h>

static bool
is_aligned16(const void *p)
{
    return ((uintptr_t)p & 15) == 0;
}

static bool
is_all_zero(const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        if (b[i] != 0) {
            return false;
        }
    }
    return true;
}

static bool
is_all_byte(const void *p, unsigned char value, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        if (b[i] != value) {
            return false;
        }
    }
    return true;
}

void
test_arena_alloc_zeroed_aligned(void)
{
    QdArena arena;
    qd_arena_init(&arena);
    CHECK_EQ(qd_arena_bytes(&arena), 0);
    for (size_t size = 0; size <= 100; size++) {
        unsigned char *p = qd_arena_alloc(&arena, size);
        if (!CHECK(p != NULL)) {
            break;
        }
        CHECK(is_aligned16(p));
        CHECK(is_all_zero(p, size));
        /* Dirty the piece so that a later piece handed out over it would show. */
        memset(p, 0xab, size);
    }
    /* A zero-byte request still yields a distinct, usable pointer. */
    void *z1 = qd_arena_alloc(&arena, 0);
    void *z2 = qd_arena_alloc(&arena, 0);
    CHECK(z1 != NULL && z2 != NULL && z1 != z2);
    CHECK(!arena.out_of_memory);
    CHECK(qd_arena_bytes(&arena) > 0);
    qd_arena_free(&arena);
    CHECK_EQ(qd_arena_bytes(&arena), 0);
}

void
test_arena_many_small_allocations(void)
{
    enum { COUNT = 5000, SIZE = 24 };
    static unsigned char *pieces[COUNT];
    QdArena arena;
    qd_arena_init(&arena);
    arena.block_size = 1024;
    for (int i = 0; i < COUNT; i++) {
        pieces[i] = qd_arena_alloc(&arena, SIZE);
        if (!CHECK(pieces[i] != NULL)) {
            qd_arena_free(&arena);
            return;
        }
        CHECK(is_aligned16(pieces[i]));
        CHECK(is_all_zero(pieces[i], SIZE));
        memset(pieces[i], i & 0xff, SIZE);
    }
    /* Every piece still holds its own pattern: no two pieces overlap. */
    int intact = 0;
    for (int i = 0; i < COUNT; i++) {
        intact += is_all_byte(pieces[i], (unsigned char)(i & 0xff), SIZE);
    }
    CHECK_EQ(intact, COUNT);
    /* 5000 pieces of 32 (aligned) bytes need well over a hundred 1 KiB blocks. */
    CHECK(qd_arena_bytes(&arena) >= (size_t)COUNT * 32);
    CHECK(!arena.out_of_memory);
    qd_arena_free(&arena);
}

void
test_arena_oversized_allocation(void)
{
    enum { BIG = 1 << 20 };
    QdArena arena;
    qd_arena_init(&arena);

    /* Oversized as the very first request. */
    unsigned char *first = qd_arena_alloc(&arena, BIG);
    if (!CHECK(first != NULL)) {
        qd_arena_free(&arena);
        return;
    }
    CHECK(is_aligned16(first));
    CHECK(is_all_zero(first, BIG));
    memset(first, 0x11, BIG);

    /* Oversized between small ones: the small ones keep sharing their block. */
    unsigned char *a = qd_arena_alloc(&arena, 16);
    unsigned char *big = qd_arena_alloc(&arena, BIG + 3);
    unsigned char *b = qd_arena_alloc(&arena, 16);
    if (!CHECK(a != NULL && big != NULL && b != NULL)) {
        qd_arena_free(&arena);
        return;
    }
    CHECK(is_aligned16(big));
    CHECK(is_all_zero(big, BIG + 3));
    memset(big, 0x22, BIG + 3);
    CHECK(b == a + 16);
    memset(a, 0x33, 16);
    memset(b, 0x44, 16);
    CHECK(is_all_byte(first, 0x11, BIG));
    CHECK(is_all_byte(big, 0x22, BIG + 3));
    CHECK(is_all_byte(a, 0x33, 16));
    CHECK(is_all_byte(b, 0x44, 16));
    CHECK(qd_arena_bytes(&arena) >= 2 * (size_t)BIG);
    qd_arena_free(&arena);
    CHECK_EQ(qd_arena_bytes(&arena), 0);
}

void
test_arena_realloc_copies(void)
{
    QdArena arena;
    qd_arena_init(&arena);
    char *p = qd_arena_alloc(&arena, 10);
    if (!CHECK(p != NULL)) {
        qd_arena_free(&arena);
        return;
    }
    memcpy(p, "abcdefghi", 10);

    /* Growing copies the old bytes and zero-fills the rest. */
    char *q = qd_arena_realloc(&arena, p, 10, 200);
    if (!CHECK(q != NULL)) {
        qd_arena_free(&arena);
        return;
    }
    CHECK(is_aligned16(q));
    CHECK(memcmp(q, "abcdefghi", 10) == 0);
    CHECK(is_all_zero(q + 10, 190));
    /* The old piece is not released one at a time: it still holds its bytes. */
    CHECK_STR(p, "abcdefghi");

    /* Shrinking or keeping the size returns the same piece. */
    CHECK(qd_arena_realloc(&arena, q, 200, 50) == q);
    CHECK(qd_arena_realloc(&arena, q, 200, 200) == q);

    /* From nothing, realloc is alloc. */
    unsigned char *r = qd_arena_realloc(&arena, NULL, 0, 64);
    CHECK(r != NULL && is_all_zero(r, 64));

    /* Growing across the block size (an oversized piece) copies too. */
    char *big = qd_arena_realloc(&arena, q, 200, 1 << 20);
    if (CHECK(big != NULL)) {
        CHECK(memcmp(big, "abcdefghi", 10) == 0);
        CHECK(is_all_zero(big + 10, (1 << 20) - 10));
    }
    qd_arena_free(&arena);
}

void
test_arena_mark_reset(void)
{
    QdArena arena;
    qd_arena_init(&arena);
    arena.block_size = 1024;

    /* A mark taken on an empty arena releases everything. */
    QdArenaMark empty = qd_arena_mark(&arena);
    CHECK(qd_arena_alloc(&arena, 100) != NULL);
    qd_arena_reset(&arena, empty);
    CHECK_EQ(qd_arena_bytes(&arena), 0);

    unsigned char *keep = qd_arena_alloc(&arena, 64);
    if (!CHECK(keep != NULL)) {
        qd_arena_free(&arena);
        return;
    }
    memset(keep, 0x5a, 64);
    size_t bytes_at_mark = qd_arena_bytes(&arena);
    QdArenaMark mark = qd_arena_mark(&arena);

    /* Scratch work: one piece in the current block, then enough to spill into new blocks. */
    unsigned char *scratch = qd_arena_alloc(&arena, 48);
    if (!CHECK(scratch != NULL)) {
        qd_arena_free(&arena);
        return;
    }
    memset(scratch, 0xee, 48);
    for (int i = 0; i < 100; i++) {
        unsigned char *p = qd_arena_alloc(&arena, 100);
        if (!CHECK(p != NULL)) {
            break;
        }
        memset(p, 0xee, 100);
    }
    CHECK(qd_arena_bytes(&arena) > bytes_at_mark);

    qd_arena_reset(&arena, mark);
    /* The blocks taken after the mark are gone and the allocation before it is intact. */
    CHECK_EQ(qd_arena_bytes(&arena), bytes_at_mark);
    CHECK(is_all_byte(keep, 0x5a, 64));
    /* The same memory is handed out again, zero-filled although it was dirtied. */
    unsigned char *again = qd_arena_alloc(&arena, 48);
    CHECK(again == scratch);
    CHECK(again != NULL && is_all_zero(again, 48));

    /* Nested marks unwind one level at a time. */
    QdArenaMark outer = qd_arena_mark(&arena);
    unsigned char *o = qd_arena_alloc(&arena, 32);
    QdArenaMark inner = qd_arena_mark(&arena);
    unsigned char *in = qd_arena_alloc(&arena, 32);
    if (CHECK(o != NULL && in != NULL)) {
        memset(o, 0x01, 32);
        memset(in, 0x02, 32);
        qd_arena_reset(&arena, inner);
        CHECK(is_all_byte(o, 0x01, 32));
        CHECK(qd_arena_alloc(&arena, 32) == in);
        qd_arena_reset(&arena, outer);
        CHECK(qd_arena_alloc(&arena, 32) == o);
    }
    CHECK(is_all_byte(keep, 0x5a, 64));
    qd_arena_free(&arena);
}

void
test_arena_strdup_printf(void)
{
    QdArena arena;
    qd_arena_init(&arena);
    const char *src = "kernel_name";
    char *dup = qd_arena_strdup(&arena, src);
    CHECK_STR(dup, "kernel_name");
    CHECK(dup != src);
    CHECK(is_aligned16(dup));

    /* strndup takes a slice that is not NUL-terminated where it ends. */
    char *slice = qd_arena_strndup(&arena, "abcdef", 3);
    CHECK_STR(slice, "abc");
    CHECK_STR(qd_arena_strdup(&arena, ""), "");

    char *msg = qd_arena_printf(&arena, "%s:%d:%u %.2f %c", "file.py", -7, 42u, 1.5, 'x');
    CHECK_STR(msg, "file.py:-7:42 1.50 x");
    CHECK_STR(qd_arena_printf(&arena, "%s", ""), "");

    /* Text longer than a block goes through the oversized path. */
    arena.block_size = 256;
    char *long_text = qd_arena_printf(&arena, "%0*d", 5000, 7);
    if (CHECK(long_text != NULL)) {
        CHECK_EQ(strlen(long_text), 5000);
        CHECK(long_text[0] == '0' && long_text[4999] == '7');
    }
    /* The earlier strings are untouched by the later allocations. */
    CHECK_STR(dup, "kernel_name");
    CHECK_STR(slice, "abc");
    CHECK_STR(msg, "file.py:-7:42 1.50 x");
    qd_arena_free(&arena);
}

/* A request too large to represent fails cleanly instead of wrapping the size. */
void
test_arena_huge_request_fails(void)
{
    QdArena a;
    qd_arena_init(&a);
    CHECK(qd_arena_alloc(&a, SIZE_MAX) == NULL);
    CHECK(a.out_of_memory);
    CHECK(qd_arena_alloc(&a, SIZE_MAX - 40) == NULL);
    qd_arena_free(&a);
}

/* Oversized blocks allocated after a mark are released by the reset: scratch memory of a
 * pass that runs many times does not accumulate. */
void
test_arena_reset_frees_oversized(void)
{
    QdArena a;
    qd_arena_init(&a);
    CHECK(qd_arena_alloc(&a, 64) != NULL);
    size_t before = qd_arena_bytes(&a);
    for (int round = 0; round < 100; round++) {
        QdArenaMark m = qd_arena_mark(&a);
        CHECK(qd_arena_alloc(&a, 100 * 1024) != NULL);
        CHECK(qd_arena_alloc(&a, 32) != NULL);
        qd_arena_reset(&a, m);
    }
    CHECK(qd_arena_bytes(&a) == before);
    qd_arena_free(&a);
}
