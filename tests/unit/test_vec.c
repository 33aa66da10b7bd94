/* tests/unit/test_vec.c -- QdVec: typed growable vectors on the heap or in an arena.
 *
 * The same operations are checked for both kinds of storage: push/pop/last, growth across many
 * elements (every earlier element survives each reallocation), and reserve (capacity reaches the
 * request, a smaller request changes nothing, and pushes up to the capacity do not move the data).
 */
#include "unit.h"

#include <stdlib.h>

typedef struct Pair {
    int32_t key;  /* element index */
    double value; /* a value derived from the key, to catch torn copies */
} Pair;

void
test_vec_heap_push_pop_last(void)
{
    QdVec(int) v = {0};
    CHECK_EQ(v.len, 0);
    CHECK(v.data == NULL);
    CHECK_EQ(qd_vec_push(NULL, &v, 10), 0);
    CHECK_EQ(qd_vec_push(NULL, &v, 20), 0);
    CHECK_EQ(qd_vec_push(NULL, &v, 30), 0);
    CHECK_EQ(v.len, 3);
    CHECK(v.cap >= 3);
    CHECK_EQ(qd_vec_last(&v), 30);
    CHECK_EQ(qd_vec_pop(&v), 30);
    CHECK_EQ(qd_vec_last(&v), 20);
    CHECK_EQ(v.len, 2);
    /* last is an lvalue: it can be assigned through. */
    qd_vec_last(&v) = 25;
    CHECK_EQ(v.data[1], 25);
    CHECK_EQ(qd_vec_pop(&v), 25);
    CHECK_EQ(qd_vec_pop(&v), 10);
    CHECK_EQ(v.len, 0);
    /* Popping to empty keeps the storage; pushing again reuses it. */
    int *data = v.data;
    CHECK_EQ(qd_vec_push(NULL, &v, 7), 0);
    CHECK(v.data == data);
    CHECK_EQ(v.data[0], 7);
    qd_vec_free(&v);
    CHECK(v.data == NULL);
    CHECK_EQ(v.len, 0);
    CHECK_EQ(v.cap, 0);
}

void
test_vec_arena_push_pop_last(void)
{
    QdArena arena;
    qd_arena_init(&arena);
    QdVec(Pair) v = {0};
    for (int32_t i = 0; i < 5; i++) {
        Pair p = {i, i * 0.5};
        CHECK_EQ(qd_vec_push(&arena, &v, p), 0);
    }
    CHECK_EQ(v.len, 5);
    CHECK(qd_arena_bytes(&arena) > 0);
    CHECK_EQ(qd_vec_last(&v).key, 4);
    Pair top = qd_vec_pop(&v);
    CHECK(top.key == 4 && top.value == 2.0);
    CHECK_EQ(qd_vec_last(&v).key, 3);
    CHECK_EQ(v.len, 4);
    for (uint32_t i = 0; i < v.len; i++) {
        CHECK(v.data[i].key == (int32_t)i && v.data[i].value == i * 0.5);
    }
    /* Arena storage is released with the arena, never with qd_vec_free. */
    qd_arena_free(&arena);
}

/* Pushes n pairs into v (arena or heap) and checks every element after each growth step. */
static void
check_growth(QdArena *arena, uint32_t n)
{
    QdVec(Pair) v = {0};
    uint32_t reallocations = 0;
    uint32_t bad = 0;
    for (uint32_t i = 0; i < n; i++) {
        Pair *before = v.data;
        Pair p = {(int32_t)i, i * 0.25};
        if (!CHECK_EQ(qd_vec_push(arena, &v, p), 0)) {
            break;
        }
        if (v.data != before) {
            reallocations++;
            /* Everything pushed so far moved along with the storage. */
            for (uint32_t j = 0; j <= i; j++) {
                bad += v.data[j].key != (int32_t)j || v.data[j].value != j * 0.25;
            }
        }
    }
    CHECK_EQ(bad, 0);
    CHECK_EQ(v.len, n);
    CHECK(v.cap >= n);
    /* Doubling keeps the number of reallocations logarithmic. */
    CHECK(reallocations <= 32);
    for (uint32_t i = 0; i < v.len; i++) {
        bad += v.data[i].key != (int32_t)i;
    }
    CHECK_EQ(bad, 0);
    if (!arena) {
        qd_vec_free(&v);
    }
}

void
test_vec_growth(void)
{
    check_growth(NULL, 100000);
    QdArena arena;
    qd_arena_init(&arena);
    check_growth(&arena, 100000);
    qd_arena_free(&arena);
    /* Small blocks force the arena vector through the oversized-block path early. */
    qd_arena_init(&arena);
    arena.block_size = 512;
    check_growth(&arena, 10000);
    qd_arena_free(&arena);
}

/* Reserves room in v (arena or heap), then checks that pushes up to the capacity stay in place. */
static void
check_reserve(QdArena *arena)
{
    QdVec(uint64_t) v = {0};
    CHECK_EQ(qd_vec_reserve(arena, &v, 1000), 0);
    CHECK(v.data != NULL);
    CHECK(v.cap >= 1000);
    CHECK_EQ(v.len, 0);
    uint64_t *data = v.data;
    uint32_t cap = v.cap;
    /* A request below the capacity changes nothing. */
    CHECK_EQ(qd_vec_reserve(arena, &v, 10), 0);
    CHECK(v.data == data);
    CHECK_EQ(v.cap, cap);
    /* New capacity is zero-filled on both kinds of storage. */
    uint32_t nonzero = 0;
    for (uint32_t i = 0; i < v.cap; i++) {
        nonzero += v.data[i] != 0;
    }
    CHECK_EQ(nonzero, 0);
    for (uint32_t i = 0; i < cap; i++) {
        qd_vec_push(arena, &v, (uint64_t)i * 3);
    }
    CHECK(v.data == data);
    CHECK_EQ(v.len, cap);
    CHECK_EQ(v.data[cap - 1], (uint64_t)(cap - 1) * 3);
    /* Reserving past the capacity keeps the contents. */
    CHECK_EQ(qd_vec_reserve(arena, &v, cap + 1), 0);
    CHECK(v.cap > cap);
    CHECK_EQ(v.data[0], 0);
    CHECK_EQ(v.data[cap - 1], (uint64_t)(cap - 1) * 3);
    if (!arena) {
        qd_vec_free(&v);
    }
}

void
test_vec_reserve(void)
{
    check_reserve(NULL);
    QdArena arena;
    qd_arena_init(&arena);
    check_reserve(&arena);
    qd_arena_free(&arena);
}
