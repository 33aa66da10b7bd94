/* ir/types.c -- IR types: the scalar table from types.def and type predicates.
 *
 * Scalars are static singletons, so `ty == qd_type_scalar(QD_TY_F32)` works. Composite types
 * (pointers, arrays, ndarrays, template parameters) are created in a module's arena by ir.c;
 * concrete ones are interned there, generic ones (mentioning a template parameter) are not, which
 * is why qd_type_equal compares structurally.
 */
#include "ir.h"

#include <string.h>

typedef struct ScalarInfo {
    const char *text; /* mnemonic */
    uint32_t bits;    /* width */
    unsigned flags;   /* TY_INT, TY_SIGNED, TY_FLOAT */
} ScalarInfo;

static const ScalarInfo scalar_info[] = {
#define QD_SCALAR(name, text, bits, flags) {text, bits, flags},
#include "types.def"
#undef QD_SCALAR
};

#define NSCALARS QD_ARRAY_LEN(scalar_info)

static const QdType scalar_types[] = {
#define QD_SCALAR(name, text, bits, flags) {.kind = QD_TY_##name},
#include "types.def"
#undef QD_SCALAR
};

const QdType *
qd_type_scalar(QdTypeKind kind)
{
    QD_ASSERT((size_t)kind < NSCALARS, "not a scalar kind");
    return &scalar_types[kind];
}

bool
qd_type_is_scalar(const QdType *ty)
{
    return ty && (size_t)ty->kind < NSCALARS && ty->kind != QD_TY_VOID;
}

bool
qd_type_is_int(const QdType *ty)
{
    return qd_type_is_scalar(ty) && (scalar_info[ty->kind].flags & TY_INT);
}

bool
qd_type_is_signed(const QdType *ty)
{
    return qd_type_is_scalar(ty) && (scalar_info[ty->kind].flags & TY_SIGNED);
}

bool
qd_type_is_float(const QdType *ty)
{
    return qd_type_is_scalar(ty) && (scalar_info[ty->kind].flags & TY_FLOAT);
}

uint32_t
qd_type_bits(const QdType *ty)
{
    return qd_type_is_scalar(ty) ? scalar_info[ty->kind].bits : 0;
}

const char *
qd_type_scalar_name(QdTypeKind kind)
{
    return (size_t)kind < NSCALARS ? scalar_info[kind].text : "?";
}

QdTypeKind
qd_type_scalar_from_name(const char *s, size_t len)
{
    for (size_t i = 0; i < NSCALARS; i++) {
        if (strlen(scalar_info[i].text) == len && memcmp(scalar_info[i].text, s, len) == 0) {
            return (QdTypeKind)i;
        }
    }
    return QD_TY_COUNT_;
}

bool
qd_type_equal(const QdType *a, const QdType *b)
{
    if (a == b) {
        return true;
    }
    if (!a || !b || a->kind != b->kind) {
        return false;
    }
    switch (a->kind) {
    case QD_TY_PTR:
        return a->space == b->space && qd_type_equal(a->elem, b->elem);
    case QD_TY_ARRAY:
        if (a->count_expr || b->count_expr) {
            if (!a->count_expr || !b->count_expr ||
                !qd_cexpr_equal(a->count_expr, b->count_expr)) {
                return false;
            }
        } else if (a->count != b->count) {
            return false;
        }
        return qd_type_equal(a->elem, b->elem);
    case QD_TY_NDARRAY:
        return a->ndim == b->ndim && qd_type_equal(a->elem, b->elem);
    case QD_TY_PARAM:
        return a->name == b->name || (a->name && b->name && strcmp(a->name, b->name) == 0);
    default:
        return true; /* scalars of one kind */
    }
}

bool
qd_type_is_generic(const QdType *ty)
{
    if (!ty) {
        return false;
    }
    switch (ty->kind) {
    case QD_TY_PARAM:
        return true;
    case QD_TY_ARRAY:
        return ty->count_expr != NULL || qd_type_is_generic(ty->elem);
    case QD_TY_PTR:
    case QD_TY_NDARRAY:
        return qd_type_is_generic(ty->elem);
    default:
        return false;
    }
}
