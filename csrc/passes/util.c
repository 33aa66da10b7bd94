/* passes/util.c -- helpers shared by the passes: name sets, instruction copying, use rewriting.
 *
 * instantiate copies template bodies (and unrolled loop bodies) and inline copies callee bodies;
 * both go through QdCloner so that operand renaming, immediates, locations and comments are
 * handled in one place. Copies keep the original value names plus a suffix (".3" for unroll
 * copy 3, ".i0" for the first inlined call site) when that name is still free in the function,
 * and stay unnamed otherwise, which the printer shows as a number.
 *
 * Scratch data (name sets, value maps) comes from the pass's scratch arena; the IR itself from
 * the module arena. Functions here report out-of-memory as -1/NULL and leave the diagnostic to
 * qd_util_nomem, which the passes call on the way out.
 */
#include "util.h"

#include <stdio.h>
#include <string.h>

/***** name sets *****/

/* Names are interned, so the pointer identifies the string; Fibonacci hashing spreads the
 * (aligned, clustered) addresses over the table. */
static uint32_t
hash_name(const char *name)
{
    uint64_t h = (uint64_t)(uintptr_t)name * 0x9E3779B97F4A7C15ull;
    return (uint32_t)(h >> 32);
}

/* Doubles the table and re-inserts every name. */
static int
names_grow(QdNameSet *set)
{
    uint32_t cap = set->cap ? set->cap * 2 : 64;
    const char **slots = QD_NEW_ARRAY(set->arena, const char *, cap);
    if (!slots) {
        return -1;
    }
    for (uint32_t i = 0; i < set->cap; i++) {
        const char *name = set->slots[i];
        if (!name) {
            continue;
        }
        uint32_t k = hash_name(name) & (cap - 1);
        while (slots[k]) {
            k = (k + 1) & (cap - 1);
        }
        slots[k] = name;
    }
    set->slots = slots;
    set->cap = cap;
    return 0;
}

bool
qd_util_names_has(const QdNameSet *set, const char *name)
{
    if (!set->cap) {
        return false;
    }
    uint32_t mask = set->cap - 1;
    for (uint32_t k = hash_name(name) & mask; set->slots[k]; k = (k + 1) & mask) {
        if (set->slots[k] == name) {
            return true;
        }
    }
    return false;
}

int
qd_util_names_add(QdNameSet *set, const char *name)
{
    if (!name || qd_util_names_has(set, name)) {
        return 0;
    }
    /* Keep the load factor under one half. */
    if ((set->count + 1) * 2 > set->cap) {
        RETURN_IF_ERROR(names_grow(set));
    }
    uint32_t k = hash_name(name) & (set->cap - 1);
    while (set->slots[k]) {
        k = (k + 1) & (set->cap - 1);
    }
    set->slots[k] = name;
    set->count++;
    return 0;
}

/* Dead values count too: their names are still in the value table, and the printer, which
 * numbers values by table order, would rename a later value that reuses one. */
int
qd_util_names_init(QdNameSet *set, QdArena *arena, const QdFunc *f)
{
    memset(set, 0, sizeof(*set));
    set->arena = arena;
    for (uint32_t id = 0; id < f->nvalues; id++) {
        RETURN_IF_ERROR(qd_util_names_add(set, f->values[id].name));
    }
    return 0;
}

/***** copying *****/

int
qd_util_cloner_init(QdCloner *cl, QdPassCtx *pc, QdFunc *src, QdFunc *dst, bool identity,
                    const QdNameSet *names)
{
    memset(cl, 0, sizeof(*cl));
    cl->pc = pc;
    cl->src = src;
    cl->dst = dst;
    cl->suffix = "";
    cl->map_len = src->nvalues;
    cl->map = QD_NEW_ARRAY(&pc->scratch, uint32_t, cl->map_len ? cl->map_len : 1);
    if (!cl->map) {
        return -1;
    }
    for (uint32_t id = 0; id < cl->map_len; id++) {
        cl->map[id] = identity ? id : QD_NO_VALUE;
    }
    if (names) {
        cl->names = *names;
        return 0;
    }
    return qd_util_names_init(&cl->names, &pc->scratch, dst);
}

/* A copy whose name is taken stays unnamed rather than getting an invented one: the printer
 * numbers it, and invented names could collide with names of later copies. */
int
qd_util_copy_name(QdCloner *cl, const char *name, const char **out)
{
    *out = NULL;
    if (!name) {
        return 0;
    }
    const char *full = name;
    if (cl->suffix[0]) {
        char *text = qd_arena_printf(&cl->pc->scratch, "%s%s", name, cl->suffix);
        full = text ? qd_intern(cl->dst->module, text) : NULL;
        if (!full) {
            return -1;
        }
    }
    if (qd_util_names_has(&cl->names, full)) {
        return 0;
    }
    *out = full;
    return qd_util_names_add(&cl->names, full);
}

void
qd_util_emit(QdCloner *cl, QdInst *inst)
{
    qd_region_insert_before(cl->out, cl->before, inst);
}

/* Operands not in the map (a use before its definition, which the verifier rejects) are kept
 * as they are rather than turned into a bad id. */
static uint32_t
map_value(const QdCloner *cl, uint32_t id)
{
    if (id < cl->map_len && cl->map[id] != QD_NO_VALUE) {
        return cl->map[id];
    }
    return id;
}

/* The immediate is copied by value: its pointers (callee arguments, strings, fields, cexprs)
 * point into the module arena and are never modified in place, so sharing them is safe. Passes
 * that rewrite an immediate (instantiate's calls and constants) replace it in the copy. */
QdInst *
qd_util_clone_inst(QdCloner *cl, const QdInst *src, const QdType *type)
{
    QdInst *inst = qd_inst_new(cl->dst, src->op, src->nargs);
    if (!inst) {
        return NULL;
    }
    for (uint32_t i = 0; i < src->nargs; i++) {
        inst->args[i] = map_value(cl, src->args[i]);
    }
    inst->imm = src->imm;
    inst->type = type;
    inst->loc = src->loc;
    inst->text_line = src->text_line;
    inst->comment = src->comment;
    inst->trailing = src->trailing;
    if (src->result != QD_NO_VALUE) {
        const char *name;
        if (qd_util_copy_name(cl, cl->src->values[src->result].name, &name) < 0 ||
            qd_inst_set_result(cl->dst, inst, type, name) == QD_NO_VALUE) {
            return NULL;
        }
        if (src->result < cl->map_len) {
            cl->map[src->result] = inst->result;
        }
    }
    qd_util_emit(cl, inst);
    return inst;
}

/* Nested regions are filled by appending (they start empty); the caller's insertion point is
 * restored afterwards, also on failure. */
int
qd_util_clone_deep(QdCloner *cl, const QdInst *src)
{
    QdInst *inst = qd_util_clone_inst(cl, src, src->type);
    if (!inst) {
        return -1;
    }
    QdRegion *saved_out = cl->out;
    QdInst *saved_before = cl->before;
    for (int i = 0; i < qd_op_info[src->op].nregions; i++) {
        cl->out = inst->regions[i];
        cl->before = NULL;
        cl->out->end_comment = src->regions[i]->end_comment;
        for (const QdInst *in = src->regions[i]->first; in; in = in->next) {
            if (qd_util_clone_deep(cl, in) < 0) {
                cl->out = saved_out;
                cl->before = saved_before;
                return -1;
            }
        }
    }
    cl->out = saved_out;
    cl->before = saved_before;
    return 0;
}

/***** rewriting and facts *****/

/* One walk over the whole tree; callers collect their replacements first (select folding,
 * inlined call results) so that a function is rewritten once, not once per replacement. */
void
qd_util_replace_uses(QdRegion *r, const uint32_t *map, uint32_t map_len)
{
    for (QdInst *inst = r->first; inst; inst = inst->next) {
        for (uint32_t i = 0; i < inst->nargs; i++) {
            uint32_t id = inst->args[i];
            if (id < map_len && map[id] != QD_NO_VALUE) {
                inst->args[i] = map[id];
            }
        }
        for (int i = 0; i < qd_op_info[inst->op].nregions; i++) {
            qd_util_replace_uses(inst->regions[i], map, map_len);
        }
    }
}

uint64_t
qd_util_wrap_int(const QdType *ty, uint64_t bits)
{
    uint32_t width = qd_type_bits(ty);
    if (width == 0 || width >= 64) {
        return bits;
    }
    uint64_t mask = (UINT64_C(1) << width) - 1;
    bits &= mask;
    if (qd_type_is_signed(ty) && (bits >> (width - 1)) & 1) {
        bits |= ~mask;
    }
    return bits;
}

/* The same rule as the verifier's, so that every error about a .qir file names its line (the
 * golden tests check it); the column is unknown. */
QdLoc
qd_util_inst_loc(const QdInst *inst)
{
    if (inst->text_line) {
        QdLoc loc = {NULL, inst->text_line, 0};
        return loc;
    }
    return inst->loc;
}

int
qd_util_nomem(QdPassCtx *pc, QdModule *m)
{
    if (m->arena.out_of_memory || pc->scratch.out_of_memory) {
        QdLoc none = {NULL, 0, 0};
        return qd_error(pc->ctx, none, QD_ERR_NOMEM, "out of memory");
    }
    return 0;
}
