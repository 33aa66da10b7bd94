/* codegen/glsl/glsl_emit_mem.c -- memory: parameters, addresses, loads, stores, kernel_ret, assert.
 *
 * Everything global is a uint64_t device address (glsl.h, VULKAN KERNEL ABI): the parameter
 * buffer at qd_push.params, ndarray data, field bases and the tail's results / tmps / runtime
 * state read from it, element addresses computed row-major with a 64-bit linear index (32-bit
 * for fields of fewer than 2^31 elements indexed by i32, as on NVPTX). What is invariant for
 * the shader (parameters, ndarray data and extents, field bases, tmp slot addresses) is read
 * once, at the top of main (e->hoist), the first time it is used.
 *
 * Local and shared pointers are lvalues (`v7[int(v9)]`); a shared array kept in uint bits
 * (GlslValue.is_bits, glsl_emit_atomic.c) converts on loads and stores.
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
    static const char *const names[4] = {"qd_results", "qd_tmps", "qd_rt", "qd_print"};
    static const uint32_t offsets[4] = {QD_NVPTX_TAIL_RESULTS, QD_NVPTX_TAIL_TMPS,
                                        QD_NVPTX_TAIL_RUNTIME, QD_VK_TAIL_PRINT};
    if (!e->tail_hoisted[which]) {
        e->tail_hoisted[which] = true;
        const char *ref =
            qd_glsl_ref(e, QD_TY_U64, param_addr(e, e->args_size + offsets[which]), false);
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
        hoist_line(e, qd_glsl_str(e, "uint64_t %s = %s; /* @%s */", name, ref, e->fields[k]->name));
    }
    return name;
}

/* The data address (axis < 0) or extent `axis` of ndarray parameter `param`. */
static const char *
nd_part(Emitter *e, int32_t param, int axis)
{
    uint32_t bit = axis < 0 ? 1u << 31 : 1u << axis;
    const char *name =
        axis < 0 ? qd_glsl_str(e, "qd_nd%d", param) : qd_glsl_str(e, "qd_nd%d_%d", param, axis);
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
        qd_error(e->ctx, qd_glsl_loc(inst), QD_ERR_INTERNAL,
                 "%s: ndarray operand is not a parameter", qd_op_info[inst->op].text);
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
            lin = qd_glsl_str(e, "(%s * %lld + %s)", lin, (long long)field->shape[i],
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
    const char *addr =
        lin ? qd_glsl_str(e, "%s + uint64_t(%s) * %uul", base, lin, qd_glsl_size(field->elem))
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
        const char *idx =
            qd_glsl_cast(e, idx_ty, qd_type_scalar(QD_TY_I32), qd_glsl_value(e, inst->args[1]));
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
        return qd_glsl_define(
            e, inst, pv->is_bits ? qd_glsl_str(e, "%s(%s)", qd_glsl_from_bits_fn(k), p) : p);
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
            qd_glsl_line(e, "%s = %s(%s);", p, qd_glsl_to_bits_fn(k), v);
        } else {
            qd_glsl_line(e, "%s = %s;", p, v);
        }
        return 0;
    }
    qd_glsl_store_global(e, k, p, v);
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
        return qd_glsl_str(
            e, "uint64_t(%s)",
            qd_glsl_cast(e, ty, qd_type_scalar(qd_type_is_signed(ty) ? QD_TY_I64 : QD_TY_U64), v));
    }
    if (e->opts->features.float64) {
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

int
qd_glsl_emit_print(Emitter *e, const QdInst *inst)
{
    uint32_t n = inst->nargs;
    const char *pb = qd_glsl_tail(e, 3);
    char *kinds = qd_arena_alloc(&e->arena, n + 1);
    if (pb == NULL || kinds == NULL) {
        return qd_glsl_nomem(e, inst);
    }
    for (uint32_t k = 0; k < n; k++) {
        const QdType *ty = qd_value_type(e->kernel, inst->args[k]);
        kinds[k] = qd_type_is_float(ty) ? 'f' : qd_type_is_signed(ty) ? 'i' : 'u';
    }
    kinds[n] = '\0';
    uint32_t id = e->prints.len;
    GlslAssert p = {inst->imm.str, kinds};
    if (qd_vec_push(&e->arena, &e->prints, p) < 0) {
        return qd_glsl_nomem(e, inst);
    }
    /* reserve 1 + n words after the count; write the record when it fits */
    const uint32_t capacity = (uint32_t)(QD_VK_PRINT_BYTES / 8 - 1);
    qd_glsl_line(e, "{");
    e->indent++;
    qd_glsl_line(e, "uint qd_at = atomicAdd(%s, %uu);", qd_glsl_ref(e, QD_TY_U32, pb, false),
                 1 + n);
    qd_glsl_line(e, "if (qd_at + %uu <= %uu) {", 1 + n, capacity);
    e->indent++;
    qd_glsl_line(e, "uint64_t qd_rec = %s + 8ul + uint64_t(qd_at) * 8ul;", pb);
    qd_glsl_line(e, "%s = %lluul;", qd_glsl_ref(e, QD_TY_U64, "qd_rec", false),
                 (unsigned long long)id | ((unsigned long long)n << 32));
    for (uint32_t k = 0; k < n; k++) {
        const QdType *ty = qd_value_type(e->kernel, inst->args[k]);
        const char *slot = assert_slot(e, ty, qd_glsl_value(e, inst->args[k]));
        const char *addr = qd_glsl_str(e, "qd_rec + %uul", 8 + 8 * k);
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
        const char *slot =
            qd_glsl_str(e, "%s + %lluul", qd_glsl_tail(e, 0),
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
        return qd_glsl_define(e, inst, qd_glsl_clock(e));
    default:
        if (sig == SIG_PARTIAL || sig == SIG_PARTIAL_INT) {
            return qd_glsl_emit_partial(e, inst);
        }
        return qd_glsl_emit_atomic(e, inst);
    }
}

/* The helper turning a float into the bits of the IEEE double of its value (no float64
 * needed): assert values are passed as doubles. */
void
qd_glsl_write_f64_bits(QdSbuf *out, const char *name)
{
    qd_sbuf_printf(out, "uint64_t %s(float f) {\n", name);
    qd_sbuf_puts(out, "    uint b = floatBitsToUint(f);\n"
                      "    uint64_t s = uint64_t(b >> 31) << 63;\n"
                      "    uint x = (b >> 23) & 0xffu, m = b & 0x7fffffu;\n"
                      "    if (x == 255u) {\n"
                      "        return s | (0x7fful << 52) | (uint64_t(m) << 29);\n"
                      "    }\n"
                      "    if (x == 0u) {\n"
                      "        if (m == 0u) {\n"
                      "            return s;\n"
                      "        }\n"
                      "        int p = findMSB(m);\n"
                      "        m = (m << uint(23 - p)) & 0x7fffffu;\n"
                      "        return s | (uint64_t(p + 874) << 52) | (uint64_t(m) << 29);\n"
                      "    }\n"
                      "    return s | (uint64_t(x + 896u) << 52) | (uint64_t(m) << 29);\n"
                      "}\n");
}
