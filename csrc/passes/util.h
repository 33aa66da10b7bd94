/* passes/util.h -- helpers shared by the passes; included only by files in csrc/passes/.
 *
 * - QdNameSet: the value names already used in a function, so that copies made by instantiate
 *   and inline can keep readable names without two values printing alike;
 * - QdCloner: copies instructions from one function into another (or into the same one), mapping
 *   operands through a value map and suffixing the names of the values it defines;
 * - small facts about constants (integer wrap-around to a type's width) and a use rewriter.
 * Everything here allocates IR in the module arena and bookkeeping in the pass's scratch arena.
 */
#ifndef QD_PASSES_UTIL_H
#define QD_PASSES_UTIL_H

#include "passes.h"

/***** names *****/

/* A set of interned names (pointer identity), open addressing. */
typedef struct QdNameSet {
    QdArena *arena;     /* where the slots live (a pass's scratch) */
    const char **slots; /* NULL = empty */
    uint32_t cap;       /* number of slots, a power of two */
    uint32_t count;     /* names held */
} QdNameSet;

/* Fills the set with the name of every value of f (dead ones included: the printer counts them). */
int qd_util_names_init(QdNameSet *set, QdArena *arena, const QdFunc *f);
bool qd_util_names_has(const QdNameSet *set, const char *name);
int qd_util_names_add(QdNameSet *set, const char *name);

/***** copying instructions *****/

/* How copies are made: from `src` into `dst`, operands renamed through `map`, new instructions
 * placed in `out` before `before` (appended when `before` is NULL). */
typedef struct QdCloner {
    QdPassCtx *pc;      /* errors and scratch */
    QdFunc *src;        /* function the originals belong to */
    QdFunc *dst;        /* function the copies belong to (may be src) */
    uint32_t *map;      /* src value id -> dst value id; QD_NO_VALUE = not mapped yet */
    uint32_t map_len;   /* entries in map (src->nvalues when the copy started) */
    QdNameSet names;    /* names used in dst */
    const char *suffix; /* appended to the names of copied values ("" keeps them) */
    QdRegion *out;      /* region receiving the copies */
    QdInst *before;     /* insertion point in out, NULL = at the end */
} QdCloner;

/* Prepares a cloner; `identity` maps every existing value to itself (copies inside one function),
 * otherwise every entry starts unmapped. `names`, when not NULL, is the set of names used in dst
 * (copied in; the caller copies cl->names back after cloning), else the set is built from dst. */
int qd_util_cloner_init(QdCloner *cl, QdPassCtx *pc, QdFunc *src, QdFunc *dst, bool identity,
                        const QdNameSet *names);
/* Name for a copy of a value called `name`: name + suffix when no value of dst has it yet, else
 * NULL (the printer then numbers the value). Sets *out; -1 only when out of memory. */
int qd_util_copy_name(QdCloner *cl, const char *name, const char **out);
/* Copies one instruction without its regions (they are created empty) and places it at the
 * insertion point. The result, if any, gets type `type` and is recorded in the map. Immediates,
 * location, .qir line and comments are copied as they are. NULL when out of memory. */
QdInst *qd_util_clone_inst(QdCloner *cl, const QdInst *src, const QdType *type);
/* Copies an instruction with everything nested in it, keeping types. -1 when out of memory. */
int qd_util_clone_deep(QdCloner *cl, const QdInst *src);
/* Places an instruction built by the caller at the insertion point. */
void qd_util_emit(QdCloner *cl, QdInst *inst);

/***** rewriting and facts *****/

/* Rewrites every operand `id` with map[id] != QD_NO_VALUE to map[id], in r and below it;
 * ids at or past map_len are left alone. */
void qd_util_replace_uses(QdRegion *r, const uint32_t *map, uint32_t map_len);
/* The integer `bits` truncated to the width of the integer type `ty`, then sign-extended (signed
 * types) or zero-extended (unsigned types): the representation QdConst holds. */
uint64_t qd_util_wrap_int(const QdType *ty, uint64_t bits);
/* Where to blame an instruction: its .qir line when it was parsed, else its source location. */
QdLoc qd_util_inst_loc(const QdInst *inst);
/* Fails with QD_ERR_NOMEM when the module's or the scratch arena ran out of memory. */
int qd_util_nomem(QdPassCtx *pc, QdModule *m);

#endif /* QD_PASSES_UTIL_H */
