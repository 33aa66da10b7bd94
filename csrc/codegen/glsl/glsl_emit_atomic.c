/* codegen/glsl/glsl_emit_atomic.c -- atomics and the partial_* accumulators.
 *
 * Atomics return the old value. Native GLSL atomics where the type and the device allow;
 * otherwise a compare-and-swap loop on the value's bits: atomic_mul, float atomics the device
 * lacks, and every atomic on u1, 8- and 16-bit types, whose loop works on the aligned 32-bit
 * word holding the value (bitfieldExtract / bitfieldInsert), in global memory only. A shared
 * array that float atomics reach without device support is declared as uint (uint64_t) bits,
 * so that atomicCompSwap works on it (qd_glsl_mark_bits_storage, before the task is emitted).
 * The table of what each type and memory gets is in docs/internals-glsl.md.
 */
#include "glsl_internal.h"

#include <stdio.h>

/* The bits type and conversions of a float kind kept in bits. */
static const char *
bits_type(QdTypeKind k)
{
    return k == QD_TY_F64 ? "uint64_t" : "uint";
}

const char *
qd_glsl_from_bits_fn(QdTypeKind k)
{
    return k == QD_TY_F64 ? "uint64BitsToDouble" : "uintBitsToFloat";
}

const char *
qd_glsl_to_bits_fn(QdTypeKind k)
{
    return k == QD_TY_F64 ? "doubleBitsToUint64" : "floatBitsToUint";
}

/***** atomics *****/

/* The identity of the atomic `op` on type ty (partial_* accumulators start there). */
static const char *
identity(Emitter *e, QdOp op, const QdType *ty)
{
    QdTypeKind k = ty->kind;
    if (qd_type_is_float(ty)) {
        QdConst c = {{0}, NULL};
        c.f = op == QD_OP_ATOMIC_ADD ? -0.0 : op == QD_OP_ATOMIC_MIN ? 1.0 / 0.0 : -1.0 / 0.0;
        if (op == QD_OP_ATOMIC_ADD) {
            return k == QD_TY_F64 ? "-0.0lf" : k == QD_TY_F16 ? "float16_t(-0.0)" : "-0.0";
        }
        return qd_glsl_literal(e, k, &c);
    }
    uint32_t bits = qd_type_bits(ty);
    bool is_signed = qd_type_is_signed(ty);
    int64_t ones = -1;
    int64_t max = is_signed ? (bits == 64 ? INT64_MAX : ((int64_t)1 << (bits - 1)) - 1) : ones;
    int64_t min = is_signed ? (bits == 64 ? INT64_MIN : -((int64_t)1 << (bits - 1))) : 0;
    if (!is_signed && bits < 64) {
        max = ((int64_t)1 << bits) - 1;
    }
    switch (op) {
    case QD_OP_ATOMIC_MIN:
        return qd_glsl_int_literal(e, k, max);
    case QD_OP_ATOMIC_MAX:
        return qd_glsl_int_literal(e, k, min);
    case QD_OP_ATOMIC_AND:
        return qd_glsl_int_literal(e, k, is_signed ? -1 : max);
    default:
        return qd_glsl_int_literal(e, k, 0);
    }
}

/* What a compare-and-swap loop works on. */
typedef struct CasTarget {
    const char *lvalue; /* the bits (or the word) atomicCompSwap updates */
    const char *bt;     /* their type: uint or uint64_t */
    const char *from;   /* printf format turning bits %s into a value of the type */
    const char *to;     /* printf format turning a value %s into bits */
    int width;          /* sub-word: bits of the value in the word (0: the whole lvalue) */
} CasTarget;

/* The new value of a CAS loop's update from the current value `cur`. */
static const char *
updated(Emitter *e, QdOp op, const QdType *ty, const char *cur, const char *v, const char *v2)
{
    if (op == QD_OP_ATOMIC_XCHG) {
        return v;
    }
    if (op == QD_OP_ATOMIC_CAS) {
        return qd_glsl_str(e, "(%s == %s ? %s : %s)", cur, v, v2, cur);
    }
    QdOp plain = op == QD_OP_ATOMIC_MUL ? QD_OP_MUL : qd_op_atomic_plain(op);
    return qd_glsl_binary(e, plain, ty, cur, v);
}

/* old = *p; do { new = old OP v } while (!cas(p, old, new)); the old value into result. */
static int
cas_loop(Emitter *e, const QdInst *at, QdOp op, const QdType *ty, const CasTarget *t, const char *v,
         const char *v2, const char *result)
{
    const char *type = qd_glsl_type(e, ty->kind);
    const char *cur_bits =
        t->width ? qd_glsl_str(e, "bitfieldExtract(qd_old, int(qd_sh), %d)", t->width) : "qd_old";
    const char *cur = qd_glsl_str(e, t->from, cur_bits);
    const char *next = updated(e, op, ty, "qd_cur", v, v2);
    const char *next_bits = next ? qd_glsl_str(e, t->to, next) : NULL;
    if (t->width && next_bits) {
        next_bits =
            qd_glsl_str(e, "bitfieldInsert(qd_old, %s, int(qd_sh), %d)", next_bits, t->width);
    }
    if (cur == NULL || next_bits == NULL) {
        return qd_glsl_nomem(e, at);
    }
    qd_glsl_line(e, "%s qd_old = %s;", t->bt, t->lvalue);
    qd_glsl_line(e, "while (true) {");
    e->indent++;
    qd_glsl_line(e, "%s qd_cur = %s;", type, cur);
    qd_glsl_line(e, "%s qd_seen = atomicCompSwap(%s, qd_old, %s);", t->bt, t->lvalue, next_bits);
    qd_glsl_line(e, "if (qd_seen == qd_old) {");
    qd_glsl_line(e, "    break;");
    qd_glsl_line(e, "}");
    qd_glsl_line(e, "qd_old = qd_seen;");
    e->indent--;
    qd_glsl_line(e, "}");
    if (result != NULL) {
        qd_glsl_line(e, "%s = %s;", result, cur);
    }
    return 0;
}

/* The conversions of a sub-word value (u1, 8 and 16 bits) from and to its uint bits. */
static void
narrow_conversions(QdTypeKind k, CasTarget *t)
{
    switch (k) {
    case QD_TY_U1:
        t->from = "(%s != 0u)";
        t->to = "(%s ? 1u : 0u)";
        break;
    case QD_TY_U8:
        t->from = "uint8_t(%s)";
        t->to = "uint(%s)";
        break;
    case QD_TY_I8:
        t->from = "int8_t(uint8_t(%s))";
        t->to = "uint(uint8_t(%s))";
        break;
    case QD_TY_U16:
        t->from = "uint16_t(%s)";
        t->to = "uint(%s)";
        break;
    case QD_TY_I16:
        t->from = "int16_t(uint16_t(%s))";
        t->to = "uint(uint16_t(%s))";
        break;
    default: /* F16, through the half packing functions, which need no 16-bit integers */
        t->from = "float16_t(unpackHalf2x16(%s).x)";
        t->to = "packHalf2x16(vec2(float(%s), 0.0))";
        break;
    }
}

/* One native GLSL atomic on lvalue lv; NULL when the op has none. */
static const char *
native_atomic(Emitter *e, QdOp op, const QdType *ty, const char *lv, const char *v, const char *v2)
{
    switch (op) {
    case QD_OP_ATOMIC_ADD:
        return qd_glsl_str(e, "atomicAdd(%s, %s)", lv, v);
    case QD_OP_ATOMIC_SUB:
        return qd_glsl_str(e, "atomicAdd(%s, -%s)", lv, v);
    case QD_OP_ATOMIC_MIN:
        return qd_glsl_str(e, "atomicMin(%s, %s)", lv, v);
    case QD_OP_ATOMIC_MAX:
        return qd_glsl_str(e, "atomicMax(%s, %s)", lv, v);
    case QD_OP_ATOMIC_AND:
        return qd_glsl_str(e, "atomicAnd(%s, %s)", lv, v);
    case QD_OP_ATOMIC_OR:
        return qd_glsl_str(e, "atomicOr(%s, %s)", lv, v);
    case QD_OP_ATOMIC_XOR:
        return qd_glsl_str(e, "atomicXor(%s, %s)", lv, v);
    case QD_OP_ATOMIC_XCHG:
        return qd_glsl_str(e, "atomicExchange(%s, %s)", lv, v);
    case QD_OP_ATOMIC_CAS:
        return qd_glsl_str(e, "atomicCompSwap(%s, %s, %s)", lv, v, v2);
    default:
        (void)ty;
        return NULL;
    }
}

/* Whether a float atomic on global or shared memory has a native GLSL form here. */
static bool
has_native_float(const Emitter *e, QdOp op, QdTypeKind k, bool global)
{
    bool add = op == QD_OP_ATOMIC_ADD || op == QD_OP_ATOMIC_SUB;
    if (!global) {
        return add && k == QD_TY_F32 && e->opts->features.shared_atomic_f32_add;
    }
    if (add) {
        return k == QD_TY_F32 ? e->opts->features.atomic_f32_add : e->opts->features.atomic_f64_add;
    }
    bool minmax = op == QD_OP_ATOMIC_MIN || op == QD_OP_ATOMIC_MAX;
    return minmax && k == QD_TY_F32 && e->opts->features.atomic_f32_minmax;
}

int
qd_glsl_atomic(Emitter *e, const QdInst *at, QdOp op, const QdType *ty, uint32_t ptr, const char *v,
               const char *v2, const char *result)
{
    const char *p = qd_glsl_value(e, ptr);
    const GlslValue *pv = &e->values[ptr];
    QdTypeKind k = ty->kind;
    bool global = pv->ptr == PTR_GLOBAL;
    uint32_t bits = qd_type_bits(ty);
    CasTarget t = {NULL, bits == 64 ? "uint64_t" : "uint", "%s", "%s", 0};
    const char *r = NULL;

    if (p == NULL || v == NULL) {
        return qd_glsl_nomem(e, at);
    }
    if (bits == 64) {
        e->ext |= X_ATOMIC_INT64;
    }
    /* a CAS loop goes in a block of its own (its variables' scope), declaring the result
     * before it */
    bool is_loop = op == QD_OP_ATOMIC_MUL || !(k == QD_TY_I32 || k == QD_TY_U32 || k == QD_TY_I64 ||
                                               k == QD_TY_U64 || k == QD_TY_F32 || k == QD_TY_F64);
    bool native_float = has_native_float(e, op, k, global) && !(pv->is_bits && !global);
    if (k == QD_TY_F32 || k == QD_TY_F64) {
        is_loop = !native_float && op != QD_OP_ATOMIC_XCHG;
    }
    if (is_loop) {
        if (result != NULL) {
            qd_glsl_line(e, "%s %s;", qd_glsl_type(e, k), result);
        }
        qd_glsl_line(e, "{");
        e->indent++;
    }
    if (k == QD_TY_I32 || k == QD_TY_U32 || k == QD_TY_I64 || k == QD_TY_U64) {
        const char *lv = global ? qd_glsl_ref(e, k, p, false) : p;
        r = native_atomic(e, op, ty, lv, v, v2);
        if (r == NULL) { /* atomic_mul */
            t.lvalue = lv;
            t.bt = qd_glsl_type(e, k);
            RETURN_IF_ERROR(cas_loop(e, at, op, ty, &t, v, v2, result));
        }
    } else if (k == QD_TY_F32 || k == QD_TY_F64) {
        const char *bits_lv = global
                                  ? qd_glsl_ref(e, k == QD_TY_F64 ? QD_TY_U64 : QD_TY_U32, p, false)
                              : pv->is_bits ? p
                                            : NULL;
        if (native_float) {
            e->ext |=
                op == QD_OP_ATOMIC_MIN || op == QD_OP_ATOMIC_MAX ? X_ATOMIC_FLOAT2 : X_ATOMIC_FLOAT;
            r = native_atomic(e, op, ty, global ? qd_glsl_ref(e, k, p, false) : p, v, v2);
        } else if (bits_lv == NULL) {
            return qd_error(e->ctx, qd_glsl_loc(at), QD_ERR_INTERNAL,
                            "a float atomic on shared memory not kept in bits");
        } else if (op == QD_OP_ATOMIC_XCHG) {
            r = qd_glsl_str(e, "%s(atomicExchange(%s, %s(%s)))", qd_glsl_from_bits_fn(k), bits_lv,
                            qd_glsl_to_bits_fn(k), v);
        } else {
            t.lvalue = bits_lv;
            t.bt = bits_type(k);
            t.from = k == QD_TY_F64 ? "uint64BitsToDouble(%s)" : "uintBitsToFloat(%s)";
            t.to = k == QD_TY_F64 ? "doubleBitsToUint64(%s)" : "floatBitsToUint(%s)";
            if (k == QD_TY_F64) {
                e->ext |= X_ATOMIC_INT64;
            }
            RETURN_IF_ERROR(cas_loop(e, at, op, ty, &t, v, v2, result));
        }
    } else {
        if (!global) {
            char what[96];
            snprintf(what, sizeof(what), "`%s` on %s in shared memory", qd_op_info[op].text,
                     qd_type_scalar_name(k));
            return qd_glsl_unsupported(e, at, what, "GLSL has no atomics narrower than 32 bits");
        }
        /* the aligned 32-bit word holding the value */
        qd_glsl_line(e, "uint64_t qd_w = %s & ~3ul;", p);
        qd_glsl_line(e, "uint qd_sh = uint(%s & 3ul) * 8u;", p);
        narrow_conversions(k, &t);
        t.lvalue = qd_glsl_ref(e, QD_TY_U32, "qd_w", false);
        t.width = bits <= 8 ? 8 : 16;
        RETURN_IF_ERROR(cas_loop(e, at, op, ty, &t, v, v2, result));
    }
    if (r != NULL && result != NULL) {
        qd_glsl_line(e, "%s %s = %s;", qd_glsl_type(e, k), result, r);
    } else if (r != NULL) {
        qd_glsl_line(e, "%s;", r);
    }
    if (is_loop) {
        e->indent--;
        qd_glsl_line(e, "}");
    }
    return 0;
}

/* The root shared_alloc of a pointer (through array_ptr), or NULL. */
static const QdInst *
shared_root(const QdFunc *f, uint32_t id)
{
    const QdInst *def = f->values[id].def;
    while (def != NULL && def->op == QD_OP_ARRAY_PTR) {
        def = f->values[def->args[0]].def;
    }
    return def != NULL && def->op == QD_OP_SHARED_ALLOC ? def : NULL;
}

/* Walk callback of qd_glsl_mark_bits_storage. */
static int
mark_bits(QdInst *inst, void *data)
{
    Emitter *e = data;
    QdSig sig = qd_op_info[inst->op].sig;
    if ((sig != SIG_ATOMIC && sig != SIG_CAS) || !qd_type_is_float(inst->type)) {
        return 0;
    }
    const QdInst *root = shared_root(e->kernel, inst->args[0]);
    if (root != NULL && !has_native_float(e, inst->op, inst->type->kind, false)) {
        e->values[root->result].is_bits = true;
    }
    return 0;
}

void
qd_glsl_mark_bits_storage(Emitter *e, const QdRegion *r)
{
    qd_region_walk((QdRegion *)r, mark_bits, e);
}

int
qd_glsl_emit_atomic(Emitter *e, const QdInst *inst)
{
    const char *v = qd_glsl_value(e, inst->args[1]);
    const char *v2 = inst->nargs > 2 ? qd_glsl_value(e, inst->args[2]) : NULL;
    const char *result = qd_glsl_str(e, "v%u", inst->result);
    if (result == NULL) {
        return qd_glsl_nomem(e, inst);
    }
    RETURN_IF_ERROR(qd_glsl_atomic(e, inst, inst->op, inst->type, inst->args[0], v, v2, result));
    e->values[inst->result].name = result;
    return 0;
}

/* partial_<op> %p: a thread-private accumulator starting at the identity. */
int
qd_glsl_emit_partial(Emitter *e, const QdInst *inst)
{
    const QdType *ty = inst->type->elem;
    const char *name = qd_glsl_str(e, "v%u", inst->result);
    const char *init = identity(e, qd_op_partial_atomic(inst->op), ty);
    if (name == NULL || init == NULL || qd_vec_push(&e->arena, &e->partials, inst) < 0) {
        return qd_glsl_nomem(e, inst);
    }
    qd_glsl_line(e, "%s %s = %s;", qd_glsl_type(e, ty->kind), name, init);
    e->values[inst->result] = (GlslValue){name, PTR_LVALUE, false};
    return 0;
}
