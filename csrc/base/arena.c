/* base/arena.c -- the bump allocator that holds everything a compilation creates.
 *
 * A QdArena is a chain of blocks; allocation carves 16-byte aligned, zero-filled pieces from the
 * head block and starts a new block when it runs out. A request larger than a quarter of a block
 * gets a block of its own, so big arrays do not waste the rest of a regular block. Marks let a
 * pass use scratch memory and drop it on exit. Nothing is freed one object at a time; the whole
 * arena goes with qd_arena_free.
 */
#include "base.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_ALIGN 16
#define ARENA_DEFAULT_BLOCK (64 * 1024)

struct QdArenaBlock {
    QdArenaBlock *prev; /* older block */
    size_t size;        /* usable bytes in data */
    size_t used;        /* bytes carved so far */
    _Alignas(ARENA_ALIGN) unsigned char data[];
};

static size_t
align_up(size_t n)
{
    return (n + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
}

void
qd_arena_init(QdArena *arena)
{
    arena->head = NULL;
    arena->block_size = ARENA_DEFAULT_BLOCK;
    arena->out_of_memory = false;
}

void
qd_arena_free(QdArena *arena)
{
    QdArenaBlock *b = arena->head;
    while (b) {
        QdArenaBlock *prev = b->prev;
        free(b);
        b = prev;
    }
    arena->head = NULL;
}

static QdArenaBlock *
new_block(QdArena *arena, size_t size)
{
    QdArenaBlock *b = malloc(sizeof(QdArenaBlock) + size);
    if (!b) {
        arena->out_of_memory = true;
        return NULL;
    }
    b->size = size;
    b->used = 0;
    return b;
}

void *
qd_arena_alloc(QdArena *arena, size_t size)
{
    if (size > SIZE_MAX - sizeof(QdArenaBlock) - ARENA_ALIGN) {
        arena->out_of_memory = true;
        return NULL;
    }
    size = align_up(size ? size : 1);
    QdArenaBlock *head = arena->head;
    if (head && head->size - head->used >= size) {
        void *p = head->data + head->used;
        head->used += size;
        memset(p, 0, size);
        return p;
    }
    if (size > arena->block_size / 4) {
        /* A one-off block, linked behind the head so the head keeps its free space. */
        QdArenaBlock *b = new_block(arena, size);
        if (!b) {
            return NULL;
        }
        b->used = size;
        if (head) {
            b->prev = head->prev;
            head->prev = b;
        } else {
            b->prev = NULL;
            arena->head = b;
        }
        memset(b->data, 0, size);
        return b->data;
    }
    QdArenaBlock *b = new_block(arena, arena->block_size);
    if (!b) {
        return NULL;
    }
    b->prev = head;
    arena->head = b;
    b->used = size;
    memset(b->data, 0, size);
    return b->data;
}

void *
qd_arena_realloc(QdArena *arena, void *old, size_t old_size, size_t new_size)
{
    if (new_size <= old_size && old) {
        return old;
    }
    void *p = qd_arena_alloc(arena, new_size);
    if (p && old && old_size) {
        memcpy(p, old, old_size);
    }
    return p;
}

char *
qd_arena_strndup(QdArena *arena, const char *s, size_t len)
{
    char *p = qd_arena_alloc(arena, len + 1);
    if (p) {
        memcpy(p, s, len);
        p[len] = '\0';
    }
    return p;
}

char *
qd_arena_strdup(QdArena *arena, const char *s)
{
    return qd_arena_strndup(arena, s, strlen(s));
}

char *
qd_arena_printf(QdArena *arena, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        return NULL;
    }
    char *p = qd_arena_alloc(arena, (size_t)n + 1);
    if (p) {
        va_start(ap, fmt);
        vsnprintf(p, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    return p;
}

QdArenaMark
qd_arena_mark(QdArena *arena)
{
    QdArenaMark m = {arena->head, arena->head ? arena->head->prev : NULL,
                     arena->head ? arena->head->used : 0};
    return m;
}

void
qd_arena_reset(QdArena *arena, QdArenaMark mark)
{
    while (arena->head && arena->head != mark.block) {
        QdArenaBlock *prev = arena->head->prev;
        free(arena->head);
        arena->head = prev;
    }
    if (arena->head) {
        /* One-off blocks are linked directly behind the head, newest first: free those that
         * came after the mark. */
        while (arena->head->prev != mark.behind) {
            QdArenaBlock *b = arena->head->prev;
            arena->head->prev = b->prev;
            free(b);
        }
        arena->head->used = mark.used;
    }
}

size_t
qd_arena_bytes(const QdArena *arena)
{
    size_t total = 0;
    for (const QdArenaBlock *b = arena->head; b; b = b->prev) {
        total += b->size;
    }
    return total;
}
