/* tests/unit/unit.h -- a tiny harness for the C unit tests of the base layer.
 *
 * A test is a `void test_<name>(void)` function in one of the test_*.c files, listed once in
 * QD_UNIT_TESTS below; main.c expands that list into its static table and runs every entry.
 * CHECK(cond) records a failure with file:line and carries on, so one run reports every broken
 * expectation of a test, not only the first. CHECK is an expression that yields the condition,
 * so a test can stop early when continuing would crash:
 *
 *     char *p = qd_arena_alloc(&arena, 16);
 *     if (!CHECK(p != NULL)) {
 *         return;
 *     }
 *
 * A test function counts as failed when at least one of its checks failed. The harness has no
 * fixtures and no globals beyond the current test's bookkeeping; each test sets up and frees
 * what it uses.
 */
#ifndef QD_UNIT_H
#define QD_UNIT_H

#include "../../csrc/base/base.h"

#include <stdbool.h>
#include <stdint.h>

/* Every test, grouped by the file that defines it. X(name) names the function test_<name>. */
#define QD_UNIT_TESTS(X)                                                                           \
    /* test_arena.c */                                                                             \
    X(arena_alloc_zeroed_aligned)                                                                  \
    X(arena_many_small_allocations)                                                                \
    X(arena_oversized_allocation)                                                                  \
    X(arena_realloc_copies)                                                                        \
    X(arena_mark_reset)                                                                            \
    X(arena_strdup_printf)                                                                         \
    X(arena_huge_request_fails)                                                                    \
    X(arena_reset_frees_oversized)                                                                 \
    /* test_vec.c */                                                                               \
    X(vec_heap_push_pop_last)                                                                      \
    X(vec_arena_push_pop_last)                                                                     \
    X(vec_growth)                                                                                  \
    X(vec_reserve)                                                                                 \
    /* test_strtab.c */                                                                            \
    X(strtab_same_bytes_same_pointer)                                                              \
    X(strtab_slices)                                                                               \
    X(strtab_growth)                                                                               \
    X(strtab_empty_string)                                                                         \
    /* test_hash.c */                                                                              \
    X(hash64_determinism)                                                                          \
    X(hash64_spread)                                                                               \
    X(blake2b_known_answers)                                                                       \
    X(blake2b_streaming)                                                                           \
    X(blake2b_update_str_prefix)                                                                   \
    X(blake2b_digest_hex)                                                                          \
    /* test_diag.c */                                                                              \
    X(diag_error_returns_minus_one)                                                                \
    X(diag_first_error_wins)                                                                       \
    X(diag_format_locations)                                                                       \
    X(diag_long_message_truncates)                                                                 \
    X(diag_kind_names)                                                                             \
    /* test_sbuf.c */                                                                              \
    X(sbuf_puts_printf_putc)                                                                       \
    X(sbuf_pad_to)                                                                                 \
    X(sbuf_take)                                                                                   \
    X(sbuf_growth)                                                                                 \
    /* test_cache.c */                                                                             \
    X(cache_put_get_roundtrip)                                                                     \
    X(cache_rejects_damaged_entries)                                                               \
    X(cache_lru_eviction)                                                                          \
    X(cache_clear_and_stat)                                                                        \
    X(cache_bytes_reader_bounds)

#define QD_UNIT_DECLARE(name) void test_##name(void);
QD_UNIT_TESTS(QD_UNIT_DECLARE)
#undef QD_UNIT_DECLARE

/* Records the outcome of one check; prints "file:line: test: check `expr` failed" when it failed.
 * Returns `ok`, so CHECK can guard the rest of a test. */
bool qd_unit_check(bool ok, const char *expr, const char *file, int line);
/* String equality check that prints both strings on failure (NULL is shown as such). */
bool qd_unit_check_str(const char *got, const char *want, const char *expr, const char *file,
                       int line);
/* Integer equality check that prints both values on failure. */
bool qd_unit_check_u64(uint64_t got, uint64_t want, const char *expr, const char *file, int line);

#define CHECK(cond)          qd_unit_check((cond) ? true : false, #cond, __FILE__, __LINE__)
#define CHECK_STR(got, want) qd_unit_check_str((got), (want), #got " == " #want, __FILE__, __LINE__)
#define CHECK_EQ(got, want)                                                                        \
    qd_unit_check_u64((uint64_t)(got), (uint64_t)(want), #got " == " #want, __FILE__, __LINE__)

#endif /* QD_UNIT_H */
