/* base/strtab.c -- string interning.
 *
 * An open-addressing hash set (linear probing, load factor below 1/2) of strings copied into the
 * table's arena. Interning the same bytes twice returns the same pointer, so names, file names and
 * mnemonics compare with ==. The table never shrinks; it lives as long as its arena.
 */
#include "base.h"

#include <string.h>

void
qd_strtab_init(QdStrtab *tab, QdArena *arena)
{
    memset(tab, 0, sizeof(*tab));
    tab->arena = arena;
}

static int
strtab_grow(QdStrtab *tab)
{
    uint32_t new_cap = tab->cap ? tab->cap * 2 : 64;
    const char **slots = QD_NEW_ARRAY(tab->arena, const char *, new_cap);
    uint32_t *lengths = QD_NEW_ARRAY(tab->arena, uint32_t, new_cap);
    if (!slots || !lengths) {
        return -1;
    }
    for (uint32_t i = 0; i < tab->cap; i++) {
        const char *s = tab->slots[i];
        if (!s) {
            continue;
        }
        uint32_t j = (uint32_t)qd_hash64(s, tab->lengths[i]) & (new_cap - 1);
        while (slots[j]) {
            j = (j + 1) & (new_cap - 1);
        }
        slots[j] = s;
        lengths[j] = tab->lengths[i];
    }
    tab->slots = slots;
    tab->lengths = lengths;
    tab->cap = new_cap;
    return 0;
}

const char *
qd_strtab_intern(QdStrtab *tab, const char *s, size_t len)
{
    if ((tab->count + 1) * 2 > tab->cap && strtab_grow(tab) < 0) {
        return NULL;
    }
    uint32_t j = (uint32_t)qd_hash64(s, len) & (tab->cap - 1);
    while (tab->slots[j]) {
        if (tab->lengths[j] == len && memcmp(tab->slots[j], s, len) == 0) {
            return tab->slots[j];
        }
        j = (j + 1) & (tab->cap - 1);
    }
    char *copy = qd_arena_strndup(tab->arena, s, len);
    if (!copy) {
        return NULL;
    }
    tab->slots[j] = copy;
    tab->lengths[j] = (uint32_t)len;
    tab->count++;
    return copy;
}

const char *
qd_strtab_intern_cstr(QdStrtab *tab, const char *s)
{
    return qd_strtab_intern(tab, s, strlen(s));
}
