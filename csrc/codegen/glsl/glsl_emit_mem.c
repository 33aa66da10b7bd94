/* codegen/glsl/glsl_emit_mem.c -- memory: parameters, addresses, loads, stores, atomics, assert.
 *
 * Everything global is a uint64_t device address (glsl.h, VULKAN KERNEL ABI): the parameter
 * buffer at qd_push.params, ndarray data, field bases and the tail's results / tmps / runtime
 * state read from it, element addresses computed row-major with a 64-bit linear index (32-bit
 * for fields of fewer than 2^31 elements indexed by i32, as on NVPTX). What is invariant for
 * the shader (parameters, ndarray data and extents, field bases, tmp slot addresses) is read
 * once, at the top of main (e->hoist), the first time it is used.
 *
 * Local and shared pointers are lvalues (`v7[int(v9)]`). A shared array that float atomics
 * reach without device support is declared as uint (or uint64_t) bits, so that atomicCompSwap
 * can work on it; loads and stores convert (GlslValue.is_bits).
 *
 * Atomics return the old value. Native GLSL atomics where the type and the device allow;
 * otherwise a compare-and-swap loop on the value's bits: atomic_mul, float atomics the device
 * lacks, and every atomic on u1, 8- and 16-bit types, whose loop works on the aligned 32-bit
 * word holding the value (bitfieldExtract / bitfieldInsert), in global memory only.
 */
#include "glsl_internal.h"

#include <stdio.h>
#include <string.h>

/***** hoisted values *****/

/* Appends a line to main's first statements. */
static void
hoist_line(Emitter *e, const char *text)
{
    qd_sbuf_puts(&e->hoist, "    ");
    qd_sbuf_puts(&e->hoist, text ? text : "");
    qd_sbuf_putc(&e->hoist, '\n');
    if (text == NULL) {
        e->hoist.failed = true;
    }
}

/* `qd_push.params + offset`. */
static const char *
param_addr(Emitter *e, uint64_t offset)
{
    return qd_glsl_str(e, "(qd_push.params + %lluul)", (unsigned long long)offset);
}

const char *
qd_glsl_tail(Emitter *e, int which)
{
    static const char *const names[3] = {"qd_results", "qd_tmps", "qd_rt"};
    static const uint32_t offsets[3] = {QD_NVPTX_TAIL_RESULTS, QD_NVPTX_TAIL_TMPS,
                                        QD_NVPTX_TAIL_RUNTIME};
    if (!e->tail_hoisted[which]) {
        e->tail_hoisted[which] = true;
        const char *ref = qd_glsl_ref(e, QD_TY_U64, param_addr(e, e->args_size + offsets[which]),
                                      false);
        hoist_line(e, qd_glsl_str(e, "uint64_t %s = %s;", names[which], ref));
    }
    return names[which];
}

/* The base address of field table entry k. */
static const char *
field_base(Emitter *e, uint32_t k)
{
    const char *name = qd_glsl_str(e, "qd_field%u", k);
    if (!e->field_hoisted[k]) {
        e->field_hoisted[k] = true;
        uint64_t at = (uint64_t)e->args_size + QD_VK_TAIL_FIELDS + 8u * k;
        const char *ref = qd_glsl_ref(e, QD_TY_U64, param_addr(e, at), false);
        hoist_line(e, qd_glsl_str(e, "uint64_t %s = %s; /* @%s */", name, ref,
                                  e->fields[k]->name));
    }
    return name;
}

/* The data address (axis < 0) or extent `axis` of ndarray parameter `param`. */
static const char *
nd_part(Emitter *e, int32_t param, int axis)
{
    uint32_t bit = axis < 0 ? 1u << 31 : 1u << axis;
    const char *name = axis < 0 ? qd_glsl_str(e, "qd_nd%d", param)
                                : qd_glsl_str(e, "qd_nd%d_%d", param, axis);
    if (!(e->nd_hoisted[param] & bit)) {
        e->nd_hoisted[param] |= bit;
        uint64_t base = e->arg_offsets[param];
        if (axis < 0) {
            const char *ref = qd_glsl_ref(e, QD_TY_U64, param_addr(e, base), false);
            hoist_line(e, qd_glsl_str(e, "uint64_t %s = %s;", name, ref));
        } else {
            uint64_t at = base + qd_ndarray_extent_offset((uint32_t)axis);
            const char *ref = qd_glsl_ref(e, QD_TY_I32, param_addr(e, at), false);
            hoist_line(e, qd_glsl_str(e, "int %s = %s;", name, ref));
        }
    }
    return name;
}

const char *
qd_glsl_value(Emitter *e, uint32_t id)
{
    if (id >= e->kernel->nvalues) {
        return NULL;
    }
    GlslValue *gv = &e->values[id];
    if (gv->name != NULL) {
        return gv->name;
    }
    const QdValue *v = &e->kernel->values[id];
    const char *name = qd_glsl_str(e, "v%u", id);
    if (v->param >= 0 && e->arg_offsets[v->param] != QD_ARG_UNUSED &&
        (qd_type_is_scalar(v->type) || v->type->kind == QD_TY_PTR)) {
        /* a scalar argument, or a pointer argument (8 bytes: a device address) */
        bool is_ptr = v->type->kind == QD_TY_PTR;
        QdTypeKind k = is_ptr ? QD_TY_U64 : v->type->kind;
        const char *load =
            qd_glsl_load_global(e, k, param_addr(e, e->arg_offsets[v->param]), false);
        hoist_line(e, qd_glsl_str(e, "%s %s = %s;", qd_glsl_type(e, k), name, load));
        gv->ptr = is_ptr ? PTR_GLOBAL : PTR_NONE;
    } else if (v->def != NULL && v->def->op == QD_OP_TMP_ALLOC) {
        const char *tmps = qd_glsl_tail(e, 1);
        hoist_line(e, qd_glsl_str(e, "uint64_t %s = %s + %uul;", name, tmps, e->tmp_offsets[id]));
        gv->ptr = PTR_GLOBAL;
    } else {
        return NULL;
    }
    gv->name = name;
    return name;
}

/* The parameter index of an ndarray operand, or -1 with a diag. */
static int32_t
ndarray_param(Emitter *e, const QdInst *inst, uint32_t id)
{
    const QdValue *v = &e->kernel->values[id];
    if (v->param < 0 || v->type->kind != QD_TY_NDARRAY) {
        qd_error(e->ctx, qd_glsl_loc(inst), QD_ERR_INTERNAL, "%s: ndarray operand is not a parameter",
                 qd_op_info[inst->op].text);
        return -1;
    }
    return v->param;
}

/***** addresses *****/

/* The index operand k of inst as an int64_t expression (extended by its signedness). */
static const char *
index64(Emitter *e, const QdInst *inst, uint32_t k)
{
    uint32_t id = inst->args[k];
    return qd_glsl_cast(e, qd_value_type(e->kernel, id), qd_type_scalar(QD_TY_I64),
                        qd_glsl_value(e, id));
}

static int
define_address(Emitter *e, const QdInst *inst, const char *expr)
{
    RETURN_IF_ERROR(qd_glsl_define(e, inst, expr));
    e->values[inst->result].ptr = PTR_GLOBAL;
    return 0;
}

static int
emit_field_ptr(Emitter *e, const QdInst *inst)
{
    const QdField *field = inst->imm.field;
    uint32_t k = 0;
    while (k < e->nfields && e->fields[k] != field) {
        k++;
    }
    if (k == e->nfields) {
        return qd_error(e->ctx, qd_glsl_loc(inst), QD_ERR_INTERNAL, "field @%s is not in the table",
                        field->name);
    }
    const char *base = field_base(e, k);
    if (field->ndim == 0) {
        return define_address(e, inst, base);
    }
    bool narrow = !qd_field_is_wide(field);
    for (uint32_t i = 0; narrow && i < inst->nargs; i++) {
        narrow = qd_value_type(e->kernel, inst->args[i])->kind == QD_TY_I32;
    }
    const char *lin;
    if (narrow) {
        lin = qd_glsl_value(e, inst->args[0]);
        for (uint32_t i = 1; i < inst->nargs && lin; i++) {
            lin = qd_glsl_str(e, "%s * %lld + %s", lin, (long long)field->shape[i],
                              qd_glsl_value(e, inst->args[i]));
        }
        lin = lin ? qd_glsl_str(e, "int64_t(%s)", lin) : NULL;
    } else {
        lin = index64(e, inst, 0);
        for (uint32_t i = 1; i < inst->nargs && lin; i++) {
            lin = qd_glsl_str(e, "(%s * %lldl + %s)", lin, (long long)field->shape[i],
                              index64(e, inst, i));
        }
    }
    const char *addr = lin ? qd_glsl_str(e, "%s + uint64_t(%s) * %uul", base, lin,
                                         qd_glsl_size(field->elem))
                           : NULL;
    return define_address(e, inst, addr);
}

static int
emit_elem_ptr(Emitter *e, const QdInst *inst)
{
    int32_t param = ndarray_param(e, inst, inst->args[0]);
    if (param < 0) {
        return -1;
    }
    const QdType *nd = qd_value_type(e->kernel, inst->args[0]);
    const char *data = nd_part(e, param, -1);
    if (nd->ndim == 0) {
        return define_address(e, inst, data);
    }
    const char *lin = index64(e, inst, 1);
    for (uint32_t axis = 1; axis < nd->ndim && lin; axis++) {
        lin = qd_glsl_str(e, "(%s * int64_t(%s) + %s)", lin, nd_part(e, param, (int)axis),
                          index64(e, inst, axis + 1));
    }
    const char *addr =
        lin ? qd_glsl_str(e, "%s + uint64_t(%s) * %uul", data, lin, qd_glsl_size(nd->elem)) : NULL;
    return define_address(e, inst, addr);
}

static int
emit_array_ptr(Emitter *e, const QdInst *inst)
{
    const char *base = qd_glsl_value(e, inst->args[0]);
    const GlslValue *bv = &e->values[inst->args[0]];
    const QdType *idx_ty = qd_value_type(e->kernel, inst->args[1]);
    if (base == NULL) {
        return qd_glsl_nomem(e, inst);
    }
    if (bv->ptr == PTR_LVALUE) {
        const char *idx = qd_glsl_cast(e, idx_ty, qd_type_scalar(QD_TY_I32),
                                       qd_glsl_value(e, inst->args[1]));
        const char *lv = idx ? qd_glsl_str(e, "%s[%s]", base, idx) : NULL;
        if (lv == NULL) {
            return qd_glsl_nomem(e, inst);
        }
        e->values[inst->result] = (GlslValue){lv, PTR_LVALUE, bv->is_bits};
        return 0;
    }
    const char *addr = qd_glsl_str(e, "%s + uint64_t(%s) * %uul", base, index64(e, inst, 1),
                                   qd_glsl_size(inst->type->elem));
    return define_address(e, inst, addr);
}

/* alloca: a variable (array) declared at the top of main. */
static int
emit_alloca(Emitter *e, const QdInst *inst)
{
    char dims[128];
    const QdType *elem = qd_glsl_array_dims(inst->type->elem, dims, sizeof(dims));
    const char *name = qd_glsl_str(e, "v%u", inst->result);
    hoist_line(e, qd_glsl_str(e, "%s %s%s;", qd_glsl_type(e, elem->kind), name, dims));
    e->values[inst->result] = (GlslValue){name, PTR_LVALUE, false};
    return name ? 0 : qd_glsl_nomem(e, inst);
}

/* The bits type and conversions of a float kind kept in bits. */
static const char *
bits_type(QdTypeKind k)
{
    return k == QD_TY_F64 ? "uint64_t" : "uint";
}

static const char *
from_bits_fn(QdTypeKind k)
{
    return k == QD_TY_F64 ? "uint64BitsToDouble" : "uintBitsToFloat";
}

static const char *
to_bits_fn(QdTypeKind k)
{
    return k == QD_TY_F64 ? "doubleBitsToUint64" : "floatBitsToUint";
}

static int
emit_load(Emitter *e, const QdInst *inst)
{
    const char *p = qd_glsl_value(e, inst->args[0]);
    const GlslValue *pv = &e->values[inst->args[0]];
    QdTypeKind k = inst->type->kind;
    if (p == NULL) {
        return qd_glsl_nomem(e, inst);
    }
    if (pv->ptr == PTR_LVALUE) {
        return qd_glsl_define(e, inst, pv->is_bits ? qd_glsl_str(e, "%s(%s)", from_bits_fn(k), p) : p);
    }
    return qd_glsl_define(e, inst, qd_glsl_load_global(e, k, p, inst->op == QD_OP_LOAD_VOLATILE));
}

static int
emit_store(Emitter *e, const QdInst *inst)
{
    const char *p = qd_glsl_value(e, inst->args[0]);
    const char *v = qd_glsl_value(e, inst->args[1]);
    const GlslValue *pv = &e->values[inst->args[0]];
    QdTypeKind k = qd_value_type(e->kernel, inst->args[1])->kind;
    if (p == NULL || v == NULL) {
        return qd_glsl_nomem(e, inst);
    }
    if (pv->ptr == PTR_LVALUE) {
        if (pv->is_bits) {
            qd_glsl_line(e, "%s = %s(%s);", p, to_bits_fn(k), v);
        } else {
            qd_glsl_line(e, "%s = %s;", p, v);
        }
        return 0;
    }
    qd_glsl_store_global(e, k, p, v);
    return 0;
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
    const char *lvalue;  /* the bits (or the word) atomicCompSwap updates */
    const char *bt;      /* their type: uint or uint64_t */
    const char *from;    /* printf format turning bits %s into a value of the type */
    const char *to;      /* printf format turning a value %s into bits */
    int width;           /* sub-word: bits of the value in the word (0: the whole lvalue) */
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
cas_loop(Emitter *e, const QdInst *at, QdOp op, const QdType *ty, const CasTarget *t,
         const char *v, const char *v2, const char *result)
{
    const char *type = qd_glsl_type(e, ty->kind);
    const char *cur_bits = t->width ? qd_glsl_str(e, "bitfieldExtract(qd_old, int(qd_sh), %d)", t->width)
                                    : "qd_old";
    const char *cur = qd_glsl_str(e, t->from, cur_bits);
    const char *next = updated(e, op, ty, "qd_cur", v, v2);
    const char *next_bits = next ? qd_glsl_str(e, t->to, next) : NULL;
    if (t->width && next_bits) {
        next_bits = qd_glsl_str(e, "bitfieldInsert(qd_old, %s, int(qd_sh), %d)", next_bits,
                                t->width);
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
        return add && k == QD_TY_F32 && e->opts->shared_atomic_f32_add;
    }
    if (add) {
        return k == QD_TY_F32 ? e->opts->atomic_f32_add : e->opts->atomic_f64_add;
    }
    bool minmax = op == QD_OP_ATOMIC_MIN || op == QD_OP_ATOMIC_MAX;
    return minmax && k == QD_TY_F32 && e->opts->atomic_f32_minmax;
}

int
qd_glsl_atomic(Emitter *e, const QdInst *at, QdOp op, const QdType *ty, uint32_t ptr,
               const char *v, const char *v2, const char *result)
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
        const char *bits_lv = global ? qd_glsl_ref(e, k == QD_TY_F64 ? QD_TY_U64 : QD_TY_U32, p, false)
                              : pv->is_bits ? p
                                            : NULL;
        if (native_float) {
            e->ext |= op == QD_OP_ATOMIC_MIN || op == QD_OP_ATOMIC_MAX ? X_ATOMIC_FLOAT2
                                                                       : X_ATOMIC_FLOAT;
            r = native_atomic(e, op, ty, global ? qd_glsl_ref(e, k, p, false) : p, v, v2);
        } else if (bits_lv == NULL) {
            return qd_error(e->ctx, qd_glsl_loc(at), QD_ERR_INTERNAL,
                            "a float atomic on shared memory not kept in bits");
        } else if (op == QD_OP_ATOMIC_XCHG) {
            r = qd_glsl_str(e, "%s(atomicExchange(%s, %s(%s)))", from_bits_fn(k), bits_lv,
                            to_bits_fn(k), v);
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

static int
emit_atomic(Emitter *e, const QdInst *inst)
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
static int
emit_partial(Emitter *e, const QdInst *inst)
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

/***** assert *****/

/* The 64-bit slot of an assert value: integers widened by their signedness, floats as the
 * bits of a double. */
static const char *
assert_slot(Emitter *e, const QdType *ty, const char *v)
{
    QdTypeKind k = ty->kind;
    if (k == QD_TY_U1) {
        return qd_glsl_str(e, "(%s ? 1ul : 0ul)", v);
    }
    if (!qd_type_is_float(ty)) {
        return qd_glsl_str(e, "uint64_t(%s)",
                           qd_glsl_cast(e, ty, qd_type_scalar(qd_type_is_signed(ty) ? QD_TY_I64
                                                                                    : QD_TY_U64),
                                        v));
    }
    if (e->opts->float64) {
        return qd_glsl_str(e, "doubleBitsToUint64(%s)",
                           k == QD_TY_F64 ? v : qd_glsl_str(e, "double(%s)", v));
    }
    e->helpers[H_F64_BITS][QD_TY_F32][QD_TY_F32] = true;
    return qd_glsl_str(e, "qd_f64_bits_f32(float(%s))", v);
}

int
qd_glsl_emit_assert(Emitter *e, const QdInst *inst)
{
    uint32_t n = inst->nargs - 1;
    const QdType *cty = qd_value_type(e->kernel, inst->args[0]);
    const char *cond = qd_glsl_truth(e, cty, qd_glsl_value(e, inst->args[0]));
    const char *rt = qd_glsl_tail(e, 2);
    char *kinds = qd_arena_alloc(&e->arena, n + 1);
    if (cond == NULL || rt == NULL || kinds == NULL) {
        return qd_glsl_nomem(e, inst);
    }
    if (n > QD_NVPTX_ASSERT_VALUES) {
        return qd_error(e->ctx, qd_glsl_loc(inst), QD_ERR_COMPILATION,
                        "assert: more than %d values in the message", QD_NVPTX_ASSERT_VALUES);
    }
    for (uint32_t k = 0; k < n; k++) {
        const QdType *ty = qd_value_type(e->kernel, inst->args[1 + k]);
        kinds[k] = qd_type_is_float(ty) ? 'f' : qd_type_is_signed(ty) ? 'i' : 'u';
    }
    uint32_t id = e->asserts.len;
    GlslAssert a = {inst->imm.str, kinds};
    if (qd_vec_push(&e->arena, &e->asserts, a) < 0) {
        return qd_glsl_nomem(e, inst);
    }
    /* the first failure moves the flag from 0 to id + 1 and stores its values */
    qd_glsl_line(e, "if (!%s) {", cond);
    e->indent++;
    qd_glsl_line(e, "if (atomicCompSwap(%s, 0, %u) == 0) {", qd_glsl_ref(e, QD_TY_I32, rt, false),
                 id + 1);
    e->indent++;
    for (uint32_t k = 0; k < n; k++) {
        const QdType *ty = qd_value_type(e->kernel, inst->args[1 + k]);
        const char *slot = assert_slot(e, ty, qd_glsl_value(e, inst->args[1 + k]));
        const char *addr = qd_glsl_str(e, "%s + %uul", rt, 8 + 8 * k);
        if (slot == NULL || addr == NULL) {
            return qd_glsl_nomem(e, inst);
        }
        qd_glsl_line(e, "%s = %s;", qd_glsl_ref(e, QD_TY_U64, addr, false), slot);
    }
    e->indent--;
    qd_glsl_line(e, "}");
    e->indent--;
    qd_glsl_line(e, "}");
    return 0;
}

/***** dispatch *****/

int
qd_glsl_emit_mem(Emitter *e, const QdInst *inst)
{
    QdSig sig = qd_op_info[inst->op].sig;
    switch (inst->op) {
    case QD_OP_ALLOCA:
        return emit_alloca(e, inst);
    case QD_OP_FIELD_PTR:
        return emit_field_ptr(e, inst);
    case QD_OP_ELEM_PTR:
        return emit_elem_ptr(e, inst);
    case QD_OP_ARRAY_PTR:
        return emit_array_ptr(e, inst);
    case QD_OP_SHAPE: {
        int32_t param = ndarray_param(e, inst, inst->args[0]);
        return param < 0 ? -1 : qd_glsl_define(e, inst, nd_part(e, param, (int)inst->imm.i));
    }
    case QD_OP_LOAD:
    case QD_OP_LOAD_VOLATILE:
        return emit_load(e, inst);
    case QD_OP_STORE:
        return emit_store(e, inst);
    case QD_OP_KERNEL_RET: {
        const QdType *ty = qd_value_type(e->kernel, inst->args[0]);
        const char *slot = qd_glsl_str(e, "%s + %lluul", qd_glsl_tail(e, 0),
                                       (unsigned long long)QD_RESULT_SLOT_BYTES * (uint64_t)inst->imm.i);
        const char *v = qd_glsl_value(e, inst->args[0]);
        if (slot == NULL || v == NULL) {
            return qd_glsl_nomem(e, inst);
        }
        qd_glsl_store_global(e, ty->kind, slot, v);
        return 0;
    }
    case QD_OP_PTR_TO_INT: {
        const char *p = qd_glsl_value(e, inst->args[0]);
        if (e->values[inst->args[0]].ptr != PTR_GLOBAL) {
            return qd_glsl_unsupported(e, inst, "the address of local or shared memory",
                                       "GLSL cannot address that memory");
        }
        return qd_glsl_define(e, inst, p);
    }
    case QD_OP_CLOCK:
        e->ext |= X_CLOCK;
        return qd_glsl_define(e, inst, "int64_t(clockARB())");
    default:
        if (sig == SIG_PARTIAL || sig == SIG_PARTIAL_INT) {
            return emit_partial(e, inst);
        }
        return emit_atomic(e, inst);
    }
}
