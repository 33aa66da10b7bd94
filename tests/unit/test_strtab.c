/* tests/unit/test_strtab.c -- QdStrtab: string interning, so equal names compare with ==.
 *
 * Checks that the same bytes give the same pointer whatever buffer they come from, that
 * different bytes (including prefixes and strings differing only in length) give different
 * pointers, that slices which are not NUL-terminated are copied with their own length, that the
 * table keeps every string through many rounds of growth, and that the empty string interns.
 */
#include "unit.h"

#include <stdio.h>
#include <string.h>

void
test_strtab_same_bytes_same_pointer(void)
{
    QdArena arena;
    QdStrtab tab;
    qd_arena_init(&arena);
    qd_strtab_init(&tab, &arena);
    char buf1[] = "thread_id";
    char buf2[] = "thread_id";
    const char *a = qd_strtab_intern_cstr(&tab, buf1);
    const char *b = qd_strtab_intern_cstr(&tab, buf2);
    CHECK(a != NULL);
    CHECK(a == b);
    /* The interned copy is owned by the table, not the caller's buffer. */
    CHECK(a != buf1 && a != buf2);
    buf1[0] = 'X';
    CHECK_STR(a, "thread_id");
    CHECK(qd_strtab_intern(&tab, "thread_id", 9) == a);

    const char *c = qd_strtab_intern_cstr(&tab, "thread_idx");
    const char *d = qd_strtab_intern_cstr(&tab, "thread_i");
    const char *e = qd_strtab_intern_cstr(&tab, "Thread_id");
    CHECK(c != NULL && d != NULL && e != NULL);
    CHECK(c != a && d != a && e != a && c != d && c != e && d != e);
    CHECK_STR(c, "thread_idx");
    CHECK_STR(d, "thread_i");
    CHECK_STR(e, "Thread_id");
    CHECK_EQ(tab.count, 4);
    qd_arena_free(&arena);
}

void
test_strtab_slices(void)
{
    QdArena arena;
    QdStrtab tab;
    qd_arena_init(&arena);
    qd_strtab_init(&tab, &arena);
    /* Slices of one buffer, none NUL-terminated where it ends. */
    const char *text = "x.shape[0] + x_shape";
    const char *x = qd_strtab_intern(&tab, text, 1);
    const char *shape = qd_strtab_intern(&tab, text + 2, 5);
    const char *x_shape = qd_strtab_intern(&tab, text + 13, 7);
    CHECK_STR(x, "x");
    CHECK_STR(shape, "shape");
    CHECK_STR(x_shape, "x_shape");
    CHECK(qd_strtab_intern_cstr(&tab, "x") == x);
    CHECK(qd_strtab_intern_cstr(&tab, "shape") == shape);
    CHECK(qd_strtab_intern(&tab, text + 15, 5) == shape);
    CHECK(qd_strtab_intern(&tab, text + 13, 1) == x);

    /* Embedded NUL bytes are part of the string: length, not strlen, decides. */
    const char with_nul[] = {'a', '\0', 'b'};
    const char *nul3 = qd_strtab_intern(&tab, with_nul, 3);
    const char *a = qd_strtab_intern(&tab, with_nul, 1);
    CHECK(nul3 != NULL && a != NULL && nul3 != a);
    CHECK(nul3 != NULL && memcmp(nul3, with_nul, 3) == 0 && nul3[3] == '\0');
    CHECK(qd_strtab_intern(&tab, "a\0b", 3) == nul3);
    CHECK(qd_strtab_intern_cstr(&tab, "a") == a);
    qd_arena_free(&arena);
}

void
test_strtab_growth(void)
{
    enum { COUNT = 20000 };
    static const char *interned[COUNT];
    QdArena arena;
    QdStrtab tab;
    qd_arena_init(&arena);
    qd_strtab_init(&tab, &arena);
    char name[32];
    for (int i = 0; i < COUNT; i++) {
        snprintf(name, sizeof(name), "v%d", i);
        interned[i] = qd_strtab_intern_cstr(&tab, name);
        if (!CHECK(interned[i] != NULL)) {
            qd_arena_free(&arena);
            return;
        }
    }
    CHECK_EQ(tab.count, COUNT);
    /* The load factor stays below one half and the capacity is a power of two. */
    CHECK(tab.cap >= 2 * (uint32_t)COUNT);
    CHECK_EQ(tab.cap & (tab.cap - 1), 0);
    /* After all the growth, every string still maps to its first pointer and text. */
    int same = 0;
    int text_ok = 0;
    for (int i = 0; i < COUNT; i++) {
        snprintf(name, sizeof(name), "v%d", i);
        same += qd_strtab_intern_cstr(&tab, name) == interned[i];
        text_ok += strcmp(interned[i], name) == 0;
    }
    CHECK_EQ(same, COUNT);
    CHECK_EQ(text_ok, COUNT);
    CHECK_EQ(tab.count, COUNT);
    /* Distinct inputs gave distinct pointers: spot-check neighbours. */
    int distinct = 0;
    for (int i = 1; i < COUNT; i++) {
        distinct += interned[i] != interned[i - 1];
    }
    CHECK_EQ(distinct, COUNT - 1);
    qd_arena_free(&arena);
}

void
test_strtab_empty_string(void)
{
    QdArena arena;
    QdStrtab tab;
    qd_arena_init(&arena);
    qd_strtab_init(&tab, &arena);
    const char *e1 = qd_strtab_intern_cstr(&tab, "");
    const char *e2 = qd_strtab_intern(&tab, "abc", 0);
    CHECK(e1 != NULL);
    CHECK(e1 == e2);
    CHECK_STR(e1, "");
    CHECK_EQ(tab.count, 1);
    const char *abc = qd_strtab_intern_cstr(&tab, "abc");
    CHECK(abc != e1);
    CHECK_EQ(tab.count, 2);
    qd_arena_free(&arena);
}
