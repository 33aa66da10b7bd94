/* ir/ir.c -- building and editing the IR: modules, interned types, functions, values,
 * instructions and regions.
 *
 * Everything is allocated in the module's arena and released with qd_module_free. Value ids index
 * the function's value table, which grows by doubling (old tables stay in the arena). Regions are
 * doubly linked lists, so passes insert and remove instructions in O(1). Constructors return NULL
 * (or QD_NO_VALUE) only when memory runs out; the arena then has out_of_memory set.
 */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

const QdOpInfo qd_op_info[QD_OP_COUNT_] = {
#define QD_OP(name, text, nargs, sig, imm, nregions, flags) {text, nargs, sig, imm, nregions, flags},
#include "ops.def"
#undef QD_OP
};

const char *const qd_mat_layout_names[QD_MAT_LAYOUT_COUNT_] = {"row_major", "col_major", "mma_fragments"};
const char *const qd_tparam_kind_names[QD_TPARAM_COUNT_] = {"type", "float", "integral", "int",
                                                            "func"};
const char *const qd_targ_kind_wanted[3] = {"a type", "an integer", "a function"};

QdOp
qd_op_atomic_plain(QdOp op)
{
    switch (op) {
    case QD_OP_ATOMIC_ADD: return QD_OP_ADD;
    case QD_OP_ATOMIC_SUB: return QD_OP_SUB;
    case QD_OP_ATOMIC_MUL: return QD_OP_MUL;
    case QD_OP_ATOMIC_MIN: return QD_OP_MIN;
    case QD_OP_ATOMIC_MAX: return QD_OP_MAX;
    case QD_OP_ATOMIC_AND: return QD_OP_AND;
    case QD_OP_ATOMIC_OR: return QD_OP_OR;
    case QD_OP_ATOMIC_XOR: return QD_OP_XOR;
    default: return QD_OP_COUNT_;
    }
}

/* The atomics that have a partial_* op, each with it (one table, read both ways). */
static const QdOp partial_pairs[][2] = {
    {QD_OP_ATOMIC_ADD, QD_OP_PARTIAL_ADD}, {QD_OP_ATOMIC_MIN, QD_OP_PARTIAL_MIN},
    {QD_OP_ATOMIC_MAX, QD_OP_PARTIAL_MAX}, {QD_OP_ATOMIC_AND, QD_OP_PARTIAL_AND},
    {QD_OP_ATOMIC_OR, QD_OP_PARTIAL_OR},   {QD_OP_ATOMIC_XOR, QD_OP_PARTIAL_XOR},
};

QdOp
qd_op_partial_atomic(QdOp op)
{
    for (size_t i = 0; i < QD_ARRAY_LEN(partial_pairs); i++) {
        if (partial_pairs[i][1] == op) {
            return partial_pairs[i][0];
        }
    }
    return QD_OP_COUNT_;
}

QdOp
qd_op_atomic_partial(QdOp op)
{
    for (size_t i = 0; i < QD_ARRAY_LEN(partial_pairs); i++) {
        if (partial_pairs[i][0] == op) {
            return partial_pairs[i][1];
        }
    }
    return QD_OP_COUNT_;
}

/***** modules *****/

QdModule *
qd_module_new(void)
{
    QdModule *m = calloc(1, sizeof(QdModule));
    if (!m) {
        return NULL;
    }
    qd_arena_init(&m->arena);
    qd_strtab_init(&m->strtab, &m->arena);
    return m;
}

void
qd_module_free(QdModule *m)
{
    if (m) {
        qd_arena_free(&m->arena);
        free(m);
    }
}

const char *
qd_intern(QdModule *m, const char *s)
{
    return qd_strtab_intern_cstr(&m->strtab, s);
}

/***** types *****/

/* Returns the interned copy of a concrete composite type `proto`, creating it when new. */
static const QdType *
intern_type(QdModule *m, const QdType *proto)
{
    for (uint32_t i = 0; i < m->types.len; i++) {
        if (qd_type_equal(m->types.data[i], proto)) {
            return m->types.data[i];
        }
    }
    QdType *ty = QD_NEW(&m->arena, QdType);
    if (!ty) {
        return NULL;
    }
    *ty = *proto;
    if (qd_vec_push(&m->arena, &m->types, ty) < 0) {
        return NULL;
    }
    return ty;
}

/* Generic types are not interned: each gets its own copy. */
static const QdType *
make_type(QdModule *m, const QdType *proto)
{
    if (!qd_type_is_generic(proto)) {
        return intern_type(m, proto);
    }
    QdType *ty = QD_NEW(&m->arena, QdType);
    if (ty) {
        *ty = *proto;
    }
    return ty;
}

const QdType *
qd_type_ptr(QdModule *m, const QdType *elem, QdSpace space)
{
    QdType proto = {.kind = QD_TY_PTR, .elem = (QdType *)elem, .space = space};
    return make_type(m, &proto);
}

const QdType *
qd_type_array(QdModule *m, const QdType *elem, uint32_t count)
{
    QdType proto = {.kind = QD_TY_ARRAY, .elem = (QdType *)elem, .count = count};
    return make_type(m, &proto);
}

const QdType *
qd_type_array_expr(QdModule *m, const QdType *elem, QdCexpr *count)
{
    QdType proto = {.kind = QD_TY_ARRAY, .elem = (QdType *)elem, .count_expr = count};
    return make_type(m, &proto);
}

const QdType *
qd_type_ndarray(QdModule *m, const QdType *elem, uint32_t ndim)
{
    QdType proto = {.kind = QD_TY_NDARRAY, .elem = (QdType *)elem, .ndim = ndim};
    return make_type(m, &proto);
}

const QdType *
qd_type_param(QdModule *m, const char *name)
{
    QdType proto = {.kind = QD_TY_PARAM, .name = qd_intern(m, name)};
    return proto.name ? make_type(m, &proto) : NULL;
}

/***** fields and functions *****/

QdField *
qd_field_new(QdModule *m, const char *name, const QdType *elem, uint32_t ndim,
             const int64_t *shape)
{
    QdField *fd = QD_NEW(&m->arena, QdField);
    if (!fd) {
        return NULL;
    }
    fd->name = qd_intern(m, name);
    fd->elem = elem;
    fd->ndim = ndim;
    fd->shape = QD_NEW_ARRAY(&m->arena, int64_t, ndim ? ndim : 1);
    if (!fd->name || !fd->shape || qd_vec_push(&m->arena, &m->fields, fd) < 0) {
        return NULL;
    }
    if (ndim) {
        memcpy(fd->shape, shape, sizeof(int64_t) * ndim);
    }
    return fd;
}

bool
qd_field_is_wide(const QdField *field)
{
    uint64_t count = 1;
    for (uint32_t k = 0; k < field->ndim; k++) {
        count *= (uint64_t)field->shape[k];
        if (count >= (uint64_t)1 << 31) {
            return true;
        }
    }
    return false;
}

QdField *
qd_module_find_field(QdModule *m, const char *name)
{
    for (uint32_t i = 0; i < m->fields.len; i++) {
        if (strcmp(m->fields.data[i]->name, name) == 0) {
            return m->fields.data[i];
        }
    }
    return NULL;
}

QdFunc *
qd_func_new(QdModule *m, QdFuncKind kind, const char *name)
{
    QdFunc *f = QD_NEW(&m->arena, QdFunc);
    if (!f) {
        return NULL;
    }
    f->kind = kind;
    f->name = qd_intern(m, name);
    f->module = m;
    f->ret = qd_type_void();
    f->body = qd_region_new(f, NULL);
    if (!f->name || !f->body || qd_vec_push(&m->arena, &m->funcs, f) < 0) {
        return NULL;
    }
    return f;
}

QdFunc *
qd_module_find_func(QdModule *m, const char *name)
{
    for (uint32_t i = 0; i < m->funcs.len; i++) {
        if (strcmp(m->funcs.data[i]->name, name) == 0) {
            return m->funcs.data[i];
        }
    }
    return NULL;
}

/***** values *****/

uint32_t
qd_value_new(QdFunc *f, const QdType *type, const char *name)
{
    if (f->nvalues == f->values_cap) {
        uint32_t cap = f->values_cap ? f->values_cap * 2 : 32;
        QdValue *v = qd_arena_realloc(&f->module->arena, f->values,
                                      sizeof(QdValue) * f->values_cap, sizeof(QdValue) * cap);
        if (!v) {
            return QD_NO_VALUE;
        }
        f->values = v;
        f->values_cap = cap;
    }
    uint32_t id = f->nvalues++;
    f->values[id].type = type;
    f->values[id].name = name ? qd_intern(f->module, name) : NULL;
    f->values[id].def = NULL;
    f->values[id].param = -1;
    return id;
}

uint32_t
qd_func_add_param(QdFunc *f, const QdType *type, const char *name)
{
    uint32_t id = qd_value_new(f, type, name);
    if (id == QD_NO_VALUE) {
        return id;
    }
    uint32_t *params = qd_arena_realloc(&f->module->arena, f->params,
                                        sizeof(uint32_t) * f->nparams,
                                        sizeof(uint32_t) * (f->nparams + 1));
    if (!params) {
        return QD_NO_VALUE;
    }
    f->values[id].param = (int32_t)f->nparams;
    params[f->nparams++] = id;
    f->params = params;
    return id;
}

/***** instructions and regions *****/

QdRegion *
qd_region_new(QdFunc *f, QdInst *owner)
{
    QdRegion *r = QD_NEW(&f->module->arena, QdRegion);
    if (r) {
        r->owner = owner;
        r->func = f;
    }
    return r;
}

QdInst *
qd_inst_new(QdFunc *f, QdOp op, uint32_t nargs)
{
    QdArena *a = &f->module->arena;
    QdInst *inst = QD_NEW(a, QdInst);
    if (!inst) {
        return NULL;
    }
    inst->op = op;
    inst->result = QD_NO_VALUE;
    inst->type = qd_type_void();
    inst->nargs = nargs;
    inst->args = nargs ? QD_NEW_ARRAY(a, uint32_t, nargs) : NULL;
    if (nargs && !inst->args) {
        return NULL;
    }
    for (int i = 0; i < qd_op_info[op].nregions; i++) {
        inst->regions[i] = qd_region_new(f, inst);
        if (!inst->regions[i]) {
            return NULL;
        }
    }
    return inst;
}

uint32_t
qd_inst_set_result(QdFunc *f, QdInst *inst, const QdType *type, const char *name)
{
    uint32_t id = qd_value_new(f, type, name);
    if (id != QD_NO_VALUE) {
        f->values[id].def = inst;
        inst->result = id;
        inst->type = type;
    }
    return id;
}

void
qd_region_append(QdRegion *r, QdInst *inst)
{
    inst->parent = r;
    inst->next = NULL;
    inst->prev = r->last;
    if (r->last) {
        r->last->next = inst;
    } else {
        r->first = inst;
    }
    r->last = inst;
}

void
qd_region_insert_before(QdRegion *r, QdInst *before, QdInst *inst)
{
    if (!before) {
        qd_region_append(r, inst);
        return;
    }
    inst->parent = r;
    inst->next = before;
    inst->prev = before->prev;
    if (before->prev) {
        before->prev->next = inst;
    } else {
        r->first = inst;
    }
    before->prev = inst;
}

void
qd_inst_remove(QdInst *inst)
{
    QdRegion *r = inst->parent;
    if (!r) {
        return;
    }
    if (inst->prev) {
        inst->prev->next = inst->next;
    } else {
        r->first = inst->next;
    }
    if (inst->next) {
        inst->next->prev = inst->prev;
    } else {
        r->last = inst->prev;
    }
    inst->prev = inst->next = NULL;
    inst->parent = NULL;
}

bool
qd_region_is_empty(const QdRegion *r)
{
    return !r || !r->first;
}

bool
qd_region_has_op(const QdRegion *r, unsigned flags)
{
    for (const QdInst *inst = r ? r->first : NULL; inst; inst = inst->next) {
        if (qd_op_has(inst->op, flags)) {
            return true;
        }
        for (int k = 0; k < qd_op_info[inst->op].nregions; k++) {
            if (qd_region_has_op(inst->regions[k], flags)) {
                return true;
            }
        }
    }
    return false;
}

int
qd_region_walk(QdRegion *r, QdInstVisitor fn, void *data)
{
    if (!r) {
        return 0;
    }
    for (QdInst *inst = r->first, *next; inst; inst = next) {
        next = inst->next;
        RETURN_IF_ERROR(fn(inst, data));
        for (int i = 0; i < 2; i++) {
            RETURN_IF_ERROR(qd_region_walk(inst->regions[i], fn, data));
        }
    }
    return 0;
}
