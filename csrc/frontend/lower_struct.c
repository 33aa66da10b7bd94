/* frontend/lower_struct.c -- struct values in kernels (qd.types.struct / @qd.dataclass).
 *
 * A struct value is an EX_STRUCT Expr: member names (keys, EX_STR) -> member Exprs (items), in
 * the declaration order of its type (h, the Python struct class). A member is a scalar (VALUE,
 * LVALUE, or a typed compile-time constant), a nested EX_STRUCT, or a vector/matrix (EX_MATRIX).
 * Where the members live decides what the struct is:
 *   - a struct variable: one slot per scalar member (alloca in a task, tmp_alloc at the kernel's
 *     top level), so LLVM promotes every member on its own;
 *   - a struct field element `f[i]`: global lvalues into the member fields;
 *   - a temporary (constructor result, loaded copy, kernel argument): values and constants.
 * Assignment of a whole struct copies member by member; passing a struct to a @qd.func copies it
 * (except the bound `self` of a method, which is the caller's struct); returning one returns
 * the loaded members. Kernel arguments arrive flattened, one scalar argument per member
 * ("param.member", lower_kernel.c), and are rebuilt here; kernel results are flattened into
 * one result per scalar member, which the Python layer rebuilds into an instance.
 *
 * The type is described by the Python class (quadrants/_struct.py): _qd_member_names and
 * _qd_member_types are the members with unpacked vectors already expanded into their
 * synthetic scalars (_r0 .. _r{N-1}); _qd_unpacked_names / _qd_unpacked_sizes name the unpacked
 * groups, so that `obj.r[i]` with a compile-time i selects member `_r<i>` (lw_subscript_base).
 */
#include "lower.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int struct_cast(Lowerer *lw, const QdAst *node, QdHandle type, const Expr *value, Expr *out);
static int struct_store(Lowerer *lw, const QdAst *node, const Expr *target, const Expr *value);

#define UNPACKED_HINT                                                                          \
    "vector arithmetic, reductions, swizzles, runtime indexing, passing it to a @qd.func and "   \
    "copying it as a unit are not supported on an unpacked vector (drop unpacked=True for those)"

/***** the type, through the host *****/

/* Member description of a struct type. */
typedef struct StructInfo {
    uint32_t n;          /* members (unpacked vectors expanded) */
    const char **names;  /* their names (interned) */
    QdHandle *types;     /* their type objects */
    QdHostValue *desc;   /* what the host says about each type */
} StructInfo;

/* The items of tuple attribute `attr` of h as handles (arena array). */
static int
tuple_attr(Lowerer *lw, const QdAst *node, QdHandle h, const char *attr, QdHandle **items,
           uint32_t *n)
{
    QdHandle t;
    QdHostValue hv;
    int rc = lw->host->getattr(lw->host->self, lw->ctx, h, attr, &t);
    if (rc < 0) {
        return -1;
    }
    if (rc > 0) {
        return lw_error(lw, node, QD_ERR_INTERNAL, "struct type without %s", attr);
    }
    RETURN_IF_ERROR(lw->host->describe(lw->host->self, lw->ctx, t, &hv));
    if (hv.kind != QD_HOST_TUPLE) {
        return lw_error(lw, node, QD_ERR_INTERNAL, "%s of a struct type is not a tuple", attr);
    }
    *n = hv.len;
    *items = QD_NEW_ARRAY(lw->arena, QdHandle, hv.len ? hv.len : 1);
    if (!*items) {
        return lw_nomem(lw);
    }
    for (uint32_t i = 0; i < hv.len; i++) {
        RETURN_IF_ERROR(lw->host->getitem(lw->host->self, lw->ctx, t, i, &(*items)[i]));
    }
    return 0;
}

/* The interned string of a str handle. */
static int
handle_str(Lowerer *lw, const QdAst *node, QdHandle h, const char **out)
{
    QdHostValue hv;
    RETURN_IF_ERROR(lw->host->describe(lw->host->self, lw->ctx, h, &hv));
    if (hv.kind != QD_HOST_STR) {
        return lw_error(lw, node, QD_ERR_INTERNAL, "a struct member name is not a string");
    }
    *out = qd_intern(lw->m, hv.str);
    return *out ? 0 : lw_nomem(lw);
}

static int
struct_info(Lowerer *lw, const QdAst *node, QdHandle type, StructInfo *si)
{
    QdHandle *names;
    uint32_t n, ntypes;
    memset(si, 0, sizeof(*si));
    RETURN_IF_ERROR(tuple_attr(lw, node, type, "_qd_member_names", &names, &n));
    RETURN_IF_ERROR(tuple_attr(lw, node, type, "_qd_member_types", &si->types, &ntypes));
    if (ntypes != n) {
        return lw_error(lw, node, QD_ERR_INTERNAL, "malformed struct type");
    }
    si->n = n;
    si->names = QD_NEW_ARRAY(lw->arena, const char *, n ? n : 1);
    si->desc = QD_NEW_ARRAY(lw->arena, QdHostValue, n ? n : 1);
    if (!si->names || !si->desc) {
        return lw_nomem(lw);
    }
    for (uint32_t i = 0; i < n; i++) {
        RETURN_IF_ERROR(handle_str(lw, node, names[i], &si->names[i]));
        RETURN_IF_ERROR(lw->host->describe(lw->host->self, lw->ctx, si->types[i], &si->desc[i]));
        if (si->desc[i].kind != QD_HOST_DTYPE && si->desc[i].kind != QD_HOST_STRUCT_TYPE &&
            si->desc[i].kind != QD_HOST_MATRIX_TYPE) {
            return lw_error(lw, node, QD_ERR_SYNTAX,
                            "struct member '%s': vector and matrix members are not supported in "
                            "kernels yet", si->names[i]);
        }
    }
    return 0;
}

/* The size of unpacked vector member `group` of struct type h, 0 when it has none by that name. */
static int
unpacked_size(Lowerer *lw, const QdAst *node, QdHandle type, const char *group, uint32_t *size)
{
    QdHandle *names, *sizes;
    uint32_t n, nsizes;
    *size = 0;
    if (!type) {
        return 0;
    }
    RETURN_IF_ERROR(tuple_attr(lw, node, type, "_qd_unpacked_names", &names, &n));
    RETURN_IF_ERROR(tuple_attr(lw, node, type, "_qd_unpacked_sizes", &sizes, &nsizes));
    for (uint32_t i = 0; i < n && i < nsizes; i++) {
        const char *name;
        RETURN_IF_ERROR(handle_str(lw, node, names[i], &name));
        if (strcmp(name, group) == 0) {
            QdHostValue hv;
            RETURN_IF_ERROR(lw->host->describe(lw->host->self, lw->ctx, sizes[i], &hv));
            *size = (uint32_t)hv.ival;
        }
    }
    return 0;
}

/***** building struct values *****/

static int
new_struct(Lowerer *lw, QdHandle type, uint32_t n, Expr *out)
{
    memset(out, 0, sizeof(*out));
    out->kind = EX_STRUCT;
    out->h = type;
    out->nitems = n;
    out->keys = QD_NEW_ARRAY(lw->arena, Expr, n ? n : 1);
    out->items = QD_NEW_ARRAY(lw->arena, Expr, n ? n : 1);
    return out->keys && out->items ? 0 : lw_nomem(lw);
}

static void
set_key(Expr *s, uint32_t i, const char *name)
{
    memset(&s->keys[i], 0, sizeof(Expr));
    s->keys[i].kind = EX_STR;
    s->keys[i].str = name;
}

/* Index of member `name` in struct value s, or -1. */
static int
member_index(const Expr *s, const char *name)
{
    for (uint32_t i = 0; i < s->nitems; i++) {
        if (s->keys[i].kind == EX_STR && strcmp(s->keys[i].str, name) == 0) {
            return (int)i;
        }
    }
    return -1;
}

static const char *
type_name_of(const QdType *ty)
{
    return ty ? qd_type_scalar_name(ty->kind) : "?";
}

/* A vector/matrix member of type `type` from value (a vector, list or scalar), or zero. */
static int
matrix_member(Lowerer *lw, const QdAst *node, QdHandle type, const Expr *value, Expr *out)
{
    Expr t = {0}, zero = {0};
    t.kind = EX_PYOBJ;
    t.hkind = QD_HOST_MATRIX_TYPE;
    t.h = type;
    zero.kind = EX_INT;
    Expr list;
    if (value && value->kind == EX_DICT) {
        /* A flattened kernel argument: elements "0", "1", ... in order. */
        list = *value;
        list.kind = EX_TUPLE;
        list.keys = NULL;
        value = &list;
    }
    MatrixCall c = {value ? value : &zero, 1, NULL, NULL, 0};
    return lw_matrix_type_call(lw, node, &t, &c, out);
}

/* The zero value of a member: a typed constant, or a zero struct. */
static int
zero_member(Lowerer *lw, const QdAst *node, const QdHostValue *desc, QdHandle type, Expr *out)
{
    if (desc->kind == QD_HOST_STRUCT_TYPE) {
        StructInfo si;
        RETURN_IF_ERROR(struct_info(lw, node, type, &si));
        RETURN_IF_ERROR(new_struct(lw, type, si.n, out));
        for (uint32_t i = 0; i < si.n; i++) {
            set_key(out, i, si.names[i]);
            RETURN_IF_ERROR(zero_member(lw, node, &si.desc[i], si.types[i], &out->items[i]));
        }
        return 0;
    }
    if (desc->kind == QD_HOST_MATRIX_TYPE) {
        return matrix_member(lw, node, type, NULL, out);
    }
    const QdType *ty = qd_type_scalar(desc->dtype);
    memset(out, 0, sizeof(*out));
    out->kind = qd_type_is_float(ty) ? EX_FLOAT : ty->kind == QD_TY_U1 ? EX_BOOL : EX_INT;
    out->ty = ty;
    return 0;
}

/* `value` converted to a member's type: scalars by lw_convert (constants stay compile-time),
 * structs member by member. */
static int
convert_member(Lowerer *lw, const QdAst *node, const char *name, const QdHostValue *desc,
               QdHandle type, const Expr *value, Expr *out)
{
    if (desc->kind == QD_HOST_STRUCT_TYPE) {
        if (value->kind == EX_STRUCT) {
            return struct_cast(lw, node, type, value, out);
        }
        if (!lw_is_compile_time_scalar(value) && value->kind != EX_VALUE &&
            value->kind != EX_LVALUE) {
            return lw_error(lw, node, QD_ERR_TYPE, "struct member '%s' takes a struct value", name);
        }
        /* A number is the nested struct's first member (recursively), the rest zero. */
        StructInfo si;
        RETURN_IF_ERROR(struct_info(lw, node, type, &si));
        RETURN_IF_ERROR(new_struct(lw, type, si.n, out));
        for (uint32_t i = 0; i < si.n; i++) {
            set_key(out, i, si.names[i]);
            if (i == 0) {
                RETURN_IF_ERROR(convert_member(lw, node, si.names[i], &si.desc[i], si.types[i],
                                               value, &out->items[i]));
            } else {
                RETURN_IF_ERROR(zero_member(lw, node, &si.desc[i], si.types[i], &out->items[i]));
            }
        }
        return 0;
    }
    if (desc->kind == QD_HOST_MATRIX_TYPE) {
        return matrix_member(lw, node, type, value, out);
    }
    const QdType *ty = qd_type_scalar(desc->dtype);
    if (lw_is_compile_time_scalar(value)) {
        *out = *value;
        return lw_typed_constant(lw, node, out, ty);
    }
    if (value->kind != EX_VALUE && value->kind != EX_LVALUE) {
        return lw_error(lw, node, QD_ERR_TYPE, "struct member '%s' of type %s takes a scalar value",
                        name, type_name_of(ty));
    }
    return lw_convert(lw, node, value, ty, out);
}

/* A struct value converted member by member to struct type `type`. */
static int
struct_cast(Lowerer *lw, const QdAst *node, QdHandle type, const Expr *value, Expr *out)
{
    StructInfo si;
    RETURN_IF_ERROR(struct_info(lw, node, type, &si));
    Expr s;
    RETURN_IF_ERROR(new_struct(lw, type, si.n, &s));
    for (uint32_t i = 0; i < si.n; i++) {
        int k = member_index(value, si.names[i]);
        if (k < 0) {
            return lw_error(lw, node, QD_ERR_TYPE, "the struct value has no member '%s'", si.names[i]);
        }
        set_key(&s, i, si.names[i]);
        RETURN_IF_ERROR(convert_member(lw, node, si.names[i], &si.desc[i], si.types[i],
                                       &value->items[k], &s.items[i]));
    }
    *out = s;
    return 0;
}

/* A member value of an anonymous struct: a dict a nested struct, a list or tuple a vector
 * (a list of lists a matrix), anything else as given. */
static int anonymous_struct(Lowerer *lw, const QdAst *node, const Expr *dict, uint32_t n,
                            const Expr *values, const QdAst *const *kws, Expr *out);

static int
anonymous_member(Lowerer *lw, const QdAst *node, const Expr *value, Expr *out)
{
    if (value->kind == EX_DICT) {
        return anonymous_struct(lw, node, value, value->nitems, value->items, NULL, out);
    }
    if (value->kind == EX_TUPLE) {
        const Expr *m = value;
        Expr tmp;
        RETURN_IF_ERROR(lw_matrix_operand(lw, node, &m, &tmp));
        *out = *m;
        return 0;
    }
    *out = *value;
    return 0;
}

/* qd.Struct({name: value, ...}) / qd.Struct(name=value, ...): a struct value of no declared type
 * whose members are the values (names from dict's keys, or from the keywords kws). */
static int
anonymous_struct(Lowerer *lw, const QdAst *node, const Expr *dict, uint32_t n, const Expr *values,
                 const QdAst *const *kws, Expr *out)
{
    Expr s;
    RETURN_IF_ERROR(new_struct(lw, 0, n, &s));
    for (uint32_t i = 0; i < n; i++) {
        const char *name = kws ? kws[i]->name : NULL;
        if (dict) {
            if (dict->keys[i].kind != EX_STR) {
                return lw_error(lw, node, QD_ERR_SYNTAX, "struct member names are identifiers");
            }
            name = dict->keys[i].str;
        }
        set_key(&s, i, name);
        RETURN_IF_ERROR(anonymous_member(lw, node, &values[i], &s.items[i]));
    }
    *out = s;
    return 0;
}

int
lw_struct_construct(Lowerer *lw, const QdAst *call, const Expr *type, const Expr *args,
                    uint32_t npos, uint32_t nkw, Expr *out)
{
    QdHandle probe;
    int rc = lw->host->getattr(lw->host->self, lw->ctx, type->h, "_qd_member_names", &probe);
    if (rc < 0) {
        return -1;
    }
    if (rc > 0) { /* qd.Struct itself */
        if (npos == 1 && nkw == 0 && args[0].kind == EX_DICT) {
            return anonymous_struct(lw, call, &args[0], args[0].nitems, args[0].items, NULL, out);
        }
        if (npos == 0) {
            return anonymous_struct(lw, call, NULL, nkw, args, (const QdAst *const *)call->b.items, out);
        }
        return lw_error(lw, call, QD_ERR_SYNTAX,
                        "Custom structs need to be initialized using either dictionary or keyword "
                        "arguments");
    }
    StructInfo si;
    RETURN_IF_ERROR(struct_info(lw, call, type->h, &si));
    if (npos > si.n) {
        return lw_error(lw, call, QD_ERR_SYNTAX, "the struct takes %u members but %u were given",
                        si.n, npos);
    }
    const Expr **given = QD_NEW_ARRAY(lw->arena, const Expr *, si.n ? si.n : 1);
    if (!given) {
        return lw_nomem(lw);
    }
    for (uint32_t i = 0; i < npos; i++) {
        given[i] = &args[i];
    }
    for (uint32_t k = 0; k < nkw; k++) {
        const QdAst *kw = call->b.items[k];
        const Expr *v = &args[npos + k];
        uint32_t group = 0;
        RETURN_IF_ERROR(unpacked_size(lw, kw, type->h, kw->name, &group));
        if (group) {
            /* r=(...) of an unpacked vector: one value per synthetic member. */
            if (v->kind != EX_TUPLE || v->nitems != group) {
                return lw_error(lw, kw, QD_ERR_SYNTAX,
                                "unpacked vector member '%s' takes a tuple or list of %u values",
                                kw->name, group);
            }
            for (uint32_t j = 0; j < group; j++) {
                char name[256];
                snprintf(name, sizeof(name), "_%s%u", kw->name, j);
                for (uint32_t i = 0; i < si.n; i++) {
                    if (strcmp(si.names[i], name) == 0) {
                        given[i] = &v->items[j];
                    }
                }
            }
            continue;
        }
        uint32_t i = 0;
        while (i < si.n && strcmp(si.names[i], kw->name) != 0) {
            i++;
        }
        if (i == si.n) {
            return lw_error(lw, kw, QD_ERR_SYNTAX, "the struct has no member '%s'", kw->name);
        }
        if (given[i]) {
            return lw_error(lw, kw, QD_ERR_SYNTAX, "member '%s' is given twice", kw->name);
        }
        given[i] = v;
    }
    Expr s;
    RETURN_IF_ERROR(new_struct(lw, type->h, si.n, &s));
    for (uint32_t i = 0; i < si.n; i++) {
        set_key(&s, i, si.names[i]);
        if (given[i]) {
            RETURN_IF_ERROR(convert_member(lw, call, si.names[i], &si.desc[i], si.types[i],
                                           given[i], &s.items[i]));
        } else {
            RETURN_IF_ERROR(zero_member(lw, call, &si.desc[i], si.types[i], &s.items[i]));
        }
    }
    *out = s;
    return 0;
}

int
lw_struct_from_instance(Lowerer *lw, const QdAst *node, QdHandle h, Expr *out)
{
    QdHandle type;
    int rc = lw->host->getattr(lw->host->self, lw->ctx, h, "__class__", &type);
    if (rc != 0) {
        return rc < 0 ? -1 : lw_error(lw, node, QD_ERR_INTERNAL, "struct value without a class");
    }
    StructInfo si;
    RETURN_IF_ERROR(struct_info(lw, node, type, &si));
    Expr s;
    RETURN_IF_ERROR(new_struct(lw, type, si.n, &s));
    for (uint32_t i = 0; i < si.n; i++) {
        QdHandle mh;
        Expr v;
        rc = lw->host->getattr(lw->host->self, lw->ctx, h, si.names[i], &mh);
        if (rc != 0) {
            return rc < 0 ? -1 : lw_error(lw, node, QD_ERR_INTERNAL, "struct value without '%s'", si.names[i]);
        }
        RETURN_IF_ERROR(lw_from_handle(lw, node, mh, &v));
        set_key(&s, i, si.names[i]);
        RETURN_IF_ERROR(convert_member(lw, node, si.names[i], &si.desc[i], si.types[i], &v, &s.items[i]));
    }
    s.h = type;
    *out = s;
    return 0;
}

/***** copies, loads and stores *****/

/* A copy of `value` in fresh slots: a scalar, a vector/matrix or a struct. */
static int
copy_to_slots(Lowerer *lw, const QdAst *node, const Expr *value, Expr *out)
{
    if (value->kind == EX_STRUCT || value->kind == EX_MATRIX) {
        Expr copy = *value; /* out may be value */
        copy.items = QD_NEW_ARRAY(lw->arena, Expr, value->nitems ? value->nitems : 1);
        if (!copy.items) {
            return lw_nomem(lw);
        }
        for (uint32_t i = 0; i < value->nitems; i++) {
            RETURN_IF_ERROR(copy_to_slots(lw, node, &value->items[i], &copy.items[i]));
        }
        *out = copy;
        return 0;
    }
    Expr rv;
    RETURN_IF_ERROR(lw_rvalue(lw, node, value, &rv));
    RETURN_IF_ERROR(lw_new_slot(lw, rv.ty, out));
    return lw_store(lw, node, out, &rv);
}

int
lw_struct_new_var(Lowerer *lw, const QdAst *node, const Expr *value, Expr *out)
{
    return copy_to_slots(lw, node, value, out);
}

int
lw_struct_load(Lowerer *lw, const QdAst *node, const Expr *value, Expr *out)
{
    if (value->kind == EX_LVALUE) {
        return lw_rvalue(lw, node, value, out);
    }
    Expr copy = *value; /* out may be value */
    if (value->kind == EX_STRUCT || value->kind == EX_MATRIX) {
        copy.items = QD_NEW_ARRAY(lw->arena, Expr, value->nitems ? value->nitems : 1);
        if (!copy.items) {
            return lw_nomem(lw);
        }
        for (uint32_t i = 0; i < value->nitems; i++) {
            RETURN_IF_ERROR(lw_struct_load(lw, node, &value->items[i], &copy.items[i]));
        }
    }
    *out = copy;
    return 0;
}

/* Stores `value` into member `name` (target item t). */
static int
store_member(Lowerer *lw, const QdAst *node, const char *name, const Expr *t, const Expr *value)
{
    if (t->kind == EX_STRUCT) {
        if (value->kind != EX_STRUCT) {
            return lw_error(lw, node, QD_ERR_TYPE, "struct member '%s' takes a struct value", name);
        }
        return struct_store(lw, node, t, value);
    }
    if (t->kind == EX_MATRIX) {
        if (value->kind != EX_MATRIX || value->nitems != t->nitems) {
            return lw_error(lw, node, QD_ERR_TYPE, "member '%s' takes a %ux%u matrix value", name,
                            t->rows, t->cols);
        }
        for (uint32_t i = 0; i < t->nitems; i++) {
            RETURN_IF_ERROR(store_member(lw, node, name, &t->items[i], &value->items[i]));
        }
        return 0;
    }
    if (t->kind != EX_LVALUE) {
        return lw_error(lw, node, QD_ERR_SYNTAX,
                        "struct member '%s' cannot be assigned: the struct is a kernel argument or "
                        "a temporary value (copy it into a variable first)", name);
    }
    if (value->kind == EX_STRUCT || value->kind == EX_MATRIX) {
        return lw_error(lw, node, QD_ERR_TYPE, "struct member '%s' takes a scalar value", name);
    }
    return lw_store(lw, node, t, value);
}

/* Member-by-member store of struct `value` into struct `target` (lvalue members). */
static int
struct_store(Lowerer *lw, const QdAst *node, const Expr *target, const Expr *value)
{
    if (value->kind != EX_STRUCT) {
        return lw_error(lw, node, QD_ERR_TYPE, "cannot assign a non-struct value to a struct");
    }
    if (value->nitems != target->nitems) {
        return lw_error(lw, node, QD_ERR_TYPE, "cannot assign a struct of a different type");
    }
    for (uint32_t i = 0; i < target->nitems; i++) {
        const char *name = target->keys[i].str;
        int k = member_index(value, name);
        if (k < 0) {
            return lw_error(lw, node, QD_ERR_TYPE,
                            "cannot assign a struct of a different type (no member '%s')", name);
        }
        RETURN_IF_ERROR(store_member(lw, node, name, &target->items[i], &value->items[k]));
    }
    return 0;
}

int
lw_struct_assign_name(Lowerer *lw, const QdAst *target, Var *v, const Expr *value)
{
    if (v && v->e.kind == EX_STRUCT) {
        return struct_store(lw, target, &v->e, value);
    }
    if (v && v->e.kind == EX_LVALUE) {
        return lw_error(lw, target, QD_ERR_TYPE, "cannot assign a struct to the scalar variable '%s'",
                        target->name);
    }
    Expr slots;
    RETURN_IF_ERROR(lw_struct_new_var(lw, target, value, &slots));
    return lw_bind(lw, target->name, &slots, NULL);
}

/***** member access *****/

/* `s.name` of struct value s: a member, or a @qd.func method bound to s. */
static int
struct_attribute(Lowerer *lw, const QdAst *node, const Expr *base, Expr *out)
{
    const char *attr = node->name;
    int k = member_index(base, attr);
    if (k >= 0) {
        *out = base->items[k];
        return 0;
    }
    uint32_t group = 0;
    RETURN_IF_ERROR(unpacked_size(lw, node, base->h, attr, &group));
    if (group) {
        return lw_error(lw, node, QD_ERR_SYNTAX,
                        "'%s' is an unpacked vector member (unpacked=True): only %s[i] with a "
                        "python-int or qd.static index is supported; " UNPACKED_HINT,
                        attr, attr);
    }
    QdHandle h;
    int rc = base->h ? lw->host->getattr(lw->host->self, lw->ctx, base->h, attr, &h) : 1;
    if (rc < 0) {
        return -1;
    }
    if (rc > 0) {
        return lw_error(lw, node, QD_ERR_SYNTAX, "the struct has no member or method '%s'", attr);
    }
    RETURN_IF_ERROR(lw_from_handle(lw, node, h, out));
    if (out->kind == EX_FUNC) {
        return lw_bind_self(lw, base, out); /* a @qd.func method: `self` is this struct */
    }
    if (out->kind == EX_PYOBJ && out->hkind == QD_HOST_CALLABLE) {
        return lw_error(lw, node, QD_ERR_SYNTAX,
                        "method '%s' of the struct is not a @qd.func: only @qd.func methods can be "
                        "called in kernels", attr);
    }
    return 0;
}

/* `s.name = value` (target is the ATTRIBUTE node, base its evaluated struct). */
static int
struct_store_attribute(Lowerer *lw, const QdAst *target, const Expr *base, const Expr *value)
{
    int k = member_index(base, target->name);
    if (k < 0) {
        Expr probe;
        RETURN_IF_ERROR(struct_attribute(lw, target, base, &probe)); /* unpacked: its error */
        return lw_error(lw, target, QD_ERR_SYNTAX, "the struct has no member '%s'", target->name);
    }
    return store_member(lw, target, target->name, &base->items[k], value);
}

int
lw_subscript_base(Lowerer *lw, const QdAst *node, Expr *base, Expr *out)
{
    const QdAst *x = node->x;
    if (x->kind != QD_AST_ATTRIBUTE) {
        return lw_expr(lw, x, base);
    }
    Expr obj;
    RETURN_IF_ERROR(lw_expr(lw, x->x, &obj));
    uint32_t group = 0;
    if (obj.kind == EX_STRUCT && member_index(&obj, x->name) < 0) {
        RETURN_IF_ERROR(unpacked_size(lw, x, obj.h, x->name, &group));
    }
    if (!group) {
        lw_set_loc(lw, x);
        return lw_attribute(lw, x, &obj, base);
    }
    /* obj.r[i] of an unpacked vector r: member _r<i>, i known at compile time. */
    Expr ix;
    RETURN_IF_ERROR(lw_expr(lw, node->y, &ix));
    if (ix.kind != EX_INT && ix.kind != EX_BOOL) {
        return lw_error(lw, node->y, QD_ERR_SYNTAX,
                        "indexing unpacked vector member '%s' requires a python-int index "
                        "(possibly via qd.static)", x->name);
    }
    if (ix.ival < 0 || ix.ival >= (int64_t)group) {
        return lw_error(lw, node->y, QD_ERR_SYNTAX,
                        "unpacked vector index out of bounds: %s[%lld] of a vector of %u", x->name,
                        (long long)ix.ival, group);
    }
    char name[256];
    snprintf(name, sizeof(name), "_%s%lld", x->name, (long long)ix.ival);
    int k = member_index(&obj, name);
    if (k < 0) {
        return lw_error(lw, node, QD_ERR_INTERNAL, "unpacked member %s missing", name);
    }
    *out = obj.items[k];
    return 1;
}

/***** struct fields *****/

/* `f[index]` of a struct field (EX_PYOBJ, QD_HOST_STRUCT_FIELD): the members' elements. */
static int
struct_field_subscript(Lowerer *lw, const QdAst *node, const Expr *base, const QdAst *index,
                          Expr *out)
{
    QdHandle type, *members;
    uint32_t n;
    int rc = lw->host->getattr(lw->host->self, lw->ctx, base->h, "_qd_struct_field_type", &type);
    if (rc != 0) {
        return rc < 0 ? -1 : lw_error(lw, node, QD_ERR_INTERNAL, "malformed struct field");
    }
    StructInfo si;
    RETURN_IF_ERROR(struct_info(lw, node, type, &si));
    RETURN_IF_ERROR(tuple_attr(lw, node, base->h, "_qd_struct_field_members", &members, &n));
    if (n != si.n) {
        return lw_error(lw, node, QD_ERR_INTERNAL, "malformed struct field");
    }
    /* The index is evaluated once and bound to a hidden name that every member's subscript
     * reads (no Python name starts with '@'). */
    QdAst *ref = QD_NEW(lw->arena, QdAst);
    if (!ref) {
        return lw_nomem(lw);
    }
    bool is_ref = index->kind == QD_AST_NAME && index->name && index->name[0] == '@';
    if (is_ref) {
        *ref = *index;
    } else {
        Expr ix;
        RETURN_IF_ERROR(lw_expr(lw, index, &ix));
        *ref = *index;
        memset(&ref->x, 0, sizeof(*ref) - offsetof(QdAst, x));
        ref->kind = QD_AST_NAME;
        ref->pynode = 0;
        ref->name = "@struct_field_index";
        lw_push_scope(lw);
        RETURN_IF_ERROR(lw_bind(lw, ref->name, &ix, NULL));
    }
    Expr s;
    rc = new_struct(lw, type, si.n, &s);
    for (uint32_t i = 0; i < si.n && rc == 0; i++) {
        Expr member;
        set_key(&s, i, si.names[i]);
        rc = lw_from_handle(lw, node, members[i], &member);
        if (rc == 0) {
            rc = member.kind == EX_PYOBJ && member.hkind == QD_HOST_STRUCT_FIELD
                     ? struct_field_subscript(lw, node, &member, ref, &s.items[i])
                     : lw_subscript(lw, node, &member, ref, &s.items[i]);
        }
    }
    if (!is_ref) {
        lw_pop_scope(lw);
    }
    RETURN_IF_ERROR(rc);
    *out = s;
    return 0;
}

/* The first scalar member field of a struct field (its shape is the struct field's). */
static int
struct_field_leaf(Lowerer *lw, const QdAst *node, const Expr *base, Expr *out)
{
    QdHandle *members;
    uint32_t n;
    RETURN_IF_ERROR(tuple_attr(lw, node, base->h, "_qd_struct_field_members", &members, &n));
    if (n == 0) {
        return lw_error(lw, node, QD_ERR_SYNTAX, "a struct field without members");
    }
    RETURN_IF_ERROR(lw_from_handle(lw, node, members[0], out));
    if (out->kind == EX_PYOBJ && out->hkind == QD_HOST_STRUCT_FIELD) {
        Expr inner = *out;
        return struct_field_leaf(lw, node, &inner, out);
    }
    if (out->kind == EX_PYOBJ && out->hkind == QD_HOST_MATRIX_FIELD) {
        Expr inner = *out;
        return lw_matrix_field_leaf(lw, node, &inner, out);
    }
    return 0;
}

int
lw_shape_leaf(Lowerer *lw, const QdAst *node, const Expr *e, Expr *out)
{
    if (e->kind == EX_PYOBJ && e->hkind == QD_HOST_STRUCT_FIELD) {
        return struct_field_leaf(lw, node, e, out);
    }
    if (e->kind == EX_PYOBJ && e->hkind == QD_HOST_MATRIX_FIELD) {
        return lw_matrix_field_leaf(lw, node, e, out);
    }
    *out = *e;
    return 0;
}

/***** kernel arguments and results *****/

int
lw_struct_zero(Lowerer *lw, const QdAst *node, QdHandle type, Expr *out)
{
    QdHostValue desc = {0};
    desc.kind = QD_HOST_STRUCT_TYPE;
    return zero_member(lw, node, &desc, type, out);
}

int
lw_struct_cast(Lowerer *lw, const QdAst *node, QdHandle type, const Expr *value, Expr *out)
{
    return struct_cast(lw, node, type, value, out);
}

int
lw_struct_from_dict(Lowerer *lw, const QdAst *node, QdHandle type, const Expr *dict, Expr *out)
{
    StructInfo si;
    RETURN_IF_ERROR(struct_info(lw, node, type, &si));
    Expr s;
    RETURN_IF_ERROR(new_struct(lw, type, si.n, &s));
    for (uint32_t i = 0; i < si.n; i++) {
        int k = dict->kind == EX_DICT ? member_index(dict, si.names[i]) : -1;
        if (k < 0) {
            return lw_error(lw, node, QD_ERR_INTERNAL, "struct argument without member '%s'", si.names[i]);
        }
        set_key(&s, i, si.names[i]);
        if (si.desc[i].kind == QD_HOST_STRUCT_TYPE) {
            RETURN_IF_ERROR(lw_struct_from_dict(lw, node, si.types[i], &dict->items[k], &s.items[i]));
        } else if (si.desc[i].kind == QD_HOST_MATRIX_TYPE) {
            RETURN_IF_ERROR(matrix_member(lw, node, si.types[i], &dict->items[k], &s.items[i]));
        } else {
            s.items[i] = dict->items[k];
        }
    }
    *out = s;
    return 0;
}

int
lw_kernel_result(Lowerer *lw, const QdAst *node, const Expr *v, const QdType *ty, uint32_t *next)
{
    if (*next >= QD_MAX_RESULTS) {
        return lw_error(lw, node, QD_ERR_SYNTAX, "a kernel returns at most %u values",
                        (unsigned)QD_MAX_RESULTS);
    }
    Expr conv;
    if (ty) {
        RETURN_IF_ERROR(lw_convert(lw, node, v, ty, &conv));
    } else {
        RETURN_IF_ERROR(lw_rvalue(lw, node, v, &conv));
    }
    QdInst *inst = lw_emit(lw, QD_OP_KERNEL_RET, 1);
    if (!inst) {
        return -1;
    }
    inst->args[0] = conv.id;
    inst->imm.i = *next;
    lw->info->returns[(*next)++] = conv.ty->kind;
    return 0;
}

/* Emits one kernel result per scalar leaf of s (already of the annotated type). */
static int
return_leaves(Lowerer *lw, const QdAst *node, const Expr *s, uint32_t *next)
{
    for (uint32_t i = 0; i < s->nitems; i++) {
        const Expr *item = &s->items[i];
        if (item->kind == EX_STRUCT || item->kind == EX_MATRIX) {
            RETURN_IF_ERROR(return_leaves(lw, node, item, next));
            continue;
        }
        RETURN_IF_ERROR(lw_kernel_result(lw, node, item, NULL, next));
    }
    return 0;
}

/* The text of string attribute `attr` of h, or NULL (no diag) when it has none. */
static const char *
str_attr(Lowerer *lw, QdHandle h, const char *attr)
{
    QdHandle t;
    QdHostValue hv;
    if (!h || lw->host->getattr(lw->host->self, lw->ctx, h, attr, &t) != 0 ||
        lw->host->describe(lw->host->self, lw->ctx, t, &hv) < 0 || hv.kind != QD_HOST_STR) {
        return NULL;
    }
    return hv.str;
}

void
lw_put_float_repr(QdSbuf *sb, double v)
{
    char text[64];
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(text, sizeof(text), "%.*g", digits, v);
        if (strtod(text, NULL) == v) {
            break;
        }
    }
    qd_sbuf_puts(sb, text);
    if (!strpbrk(text, ".eEni")) {
        qd_sbuf_puts(sb, ".0");
    }
}

/* What a returned value is, as the reference names it: compile-time numbers as Python prints
 * them, a struct value as <qd.Struct member=..., struct_methods=...>, a dict or tuple item by
 * item (structs inside as dicts), anything computed as <qd.Expr>. */
static void
describe_value(Lowerer *lw, const Expr *v, bool nested, QdSbuf *sb)
{
    switch (v->kind) {
    case EX_INT:
        qd_sbuf_printf(sb, "%lld", (long long)v->ival);
        return;
    case EX_BOOL:
        qd_sbuf_puts(sb, v->ival ? "True" : "False");
        return;
    case EX_FLOAT:
        lw_put_float_repr(sb, v->fval);
        return;
    case EX_NONE:
        qd_sbuf_puts(sb, "None");
        return;
    case EX_STR:
        qd_sbuf_printf(sb, "'%s'", v->str);
        return;
    case EX_TUPLE:
        qd_sbuf_putc(sb, '(');
        for (uint32_t i = 0; i < v->nitems; i++) {
            qd_sbuf_puts(sb, i ? ", " : "");
            describe_value(lw, &v->items[i], true, sb);
        }
        qd_sbuf_puts(sb, v->nitems == 1 ? ",)" : ")");
        return;
    case EX_DICT:
    case EX_STRUCT: {
        bool as_dict = v->kind == EX_DICT || nested;
        qd_sbuf_puts(sb, as_dict ? "{" : "<qd.Struct ");
        for (uint32_t i = 0; i < v->nitems; i++) {
            qd_sbuf_puts(sb, i ? ", " : "");
            const Expr *key = &v->keys[i];
            if (key->kind == EX_STR) {
                qd_sbuf_printf(sb, as_dict ? "'%s': " : "%s=", key->str);
            } else {
                describe_value(lw, key, true, sb);
                qd_sbuf_puts(sb, ": ");
            }
            const Expr *item = &v->items[i];
            if (v->kind == EX_STRUCT && item->kind != EX_STRUCT) {
                qd_sbuf_puts(sb, "<qd.Expr>"); /* struct members are always kernel values */
            } else {
                describe_value(lw, item, nested, sb);
            }
        }
        if (as_dict) {
            qd_sbuf_putc(sb, '}');
            return;
        }
        const char *type_text = str_attr(lw, v->h, "_qd_repr");
        const char *methods = type_text ? strstr(type_text, "struct_methods=") : NULL;
        qd_sbuf_puts(sb, v->nitems ? ", " : "");
        qd_sbuf_puts(sb, methods ? methods : "struct_methods={}>");
        return;
    }
    default:
        qd_sbuf_puts(sb, "<qd.Expr>");
        return;
    }
}

int
lw_return_type_error(Lowerer *lw, const QdAst *node, const Expr *ann, const Expr *value)
{
    QdSbuf sb;
    qd_sbuf_init(&sb);
    describe_value(lw, value, false, &sb);
    const char *required = NULL;
    if (ann->kind == EX_PYOBJ) {
        required = str_attr(lw, ann->h, "_qd_repr");
    }
    if (!required && ann->ty) {
        required = qd_type_scalar_name(ann->ty->kind);
    }
    char *text = qd_sbuf_take(&sb);
    int rc = lw_error(lw, node, QD_ERR_COMPILATION,
                      "QuadrantsRuntimeTypeError: Return (type=%s) cannot be converted into required "
                      "type %s", text ? text : "?", required ? required : "?");
    free(text);
    return rc;
}

int
lw_struct_kernel_return(Lowerer *lw, const QdAst *node, const Expr *ann, const Expr *value,
                        uint32_t *next)
{
    /* The reference takes a struct of any type with the same members (names and types). */
    const char *want = str_attr(lw, ann->h, "_qd_layout");
    const char *got = value->kind == EX_STRUCT ? str_attr(lw, value->h, "_qd_layout") : NULL;
    if (!want || !got || strcmp(want, got) != 0) {
        return lw_return_type_error(lw, node, ann, value);
    }
    Expr s;
    RETURN_IF_ERROR(struct_cast(lw, node, ann->h, value, &s));
    return return_leaves(lw, node, &s, next);
}

/***** operations by kind *****/

const ExprOps lw_struct_ops = {
    .name = "struct",
    .attribute = struct_attribute,
    .store_attribute = struct_store_attribute,
    .store = struct_store,
    .assign_name = lw_struct_assign_name,
    .snapshot = lw_struct_load,
};

/* A struct-for over a struct field: over the shape of its first scalar member field. */
static int
struct_field_iterate(Lowerer *lw, const QdAst *node, const Expr *e, IterSpec *it)
{
    Expr leaf;
    RETURN_IF_ERROR(struct_field_leaf(lw, node, e, &leaf));
    const ExprOps *ops = lw_expr_ops(&leaf);
    return ops->iterate ? ops->iterate(lw, node, &leaf, it) : LW_DECLINED;
}

const ExprOps lw_struct_field_ops = {
    .name = "struct field",
    .subscript = struct_field_subscript,
    .iterate = struct_field_iterate,
};
