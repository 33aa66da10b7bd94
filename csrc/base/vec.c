/* base/vec.c -- growth for the typed vectors of base.h (QdVec).
 *
 * A vector's storage lives in an arena or, when the arena is NULL, on the heap. Growing an arena
 * vector copies it into a new arena piece (the old one is reclaimed with the arena); growing a
 * heap vector is a realloc. Capacity doubles, starting at 8.
 */
#include "base.h"

#include <stdlib.h>
#include <string.h>

int
qd_vec_reserve_(QdArena *arena, void **data, uint32_t *cap, uint32_t need, size_t elem_size)
{
    if (need <= *cap) {
        return 0;
    }
    uint64_t new_cap = *cap ? (uint64_t)*cap * 2 : 8;
    while (new_cap < need) {
        new_cap *= 2;
    }
    if (new_cap > UINT32_MAX) {
        return -1;
    }
    void *p;
    if (arena) {
        p = qd_arena_realloc(arena, *data, (size_t)*cap * elem_size, (size_t)new_cap * elem_size);
    } else {
        p = realloc(*data, (size_t)new_cap * elem_size);
        if (p) {
            memset((char *)p + (size_t)*cap * elem_size, 0,
                   (size_t)(new_cap - *cap) * elem_size);
        }
    }
    if (!p) {
        return -1;
    }
    *data = p;
    *cap = (uint32_t)new_cap;
    return 0;
}
