/* codegen/glsl/glsl_types.c -- GLSL types, literals, buffer references and the preamble.
 *
 * Register types: u1 is bool, the integers are int / uint and the explicit-width types of
 * GL_EXT_shader_explicit_arithmetic_types_* (int8_t ... uint64_t), f16 float16_t, f32 float,
 * f64 double. Using a type marks the extension it needs (e->ext); the feature check of
 * glsl_emit.c has already made sure the device has it.
 *
 * Global memory is reached through buffer references, one block type per scalar type used:
 *     layout(buffer_reference, std430, buffer_reference_align = 4) buffer QdRef_f32 { float v; };
 * so that `QdRef_f32(addr).v` is the float at device address addr. u1 is a byte (uint8_t,
 * GL_EXT_shader_8bit_storage), read as `!= 0` and written as 0 / 1. load_volatile uses a
 * `coherent volatile` twin (QdVolatileRef_<t>); tasks with fences make every reference
 * coherent, so that what a fence orders is also what other workgroups see.
 */
#include "glsl_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const char *
qd_glsl_type(Emitter *e, QdTypeKind kind)
{
    switch (kind) {
    case QD_TY_U1:
        return "bool";
    case QD_TY_I8:
        e->ext |= X_INT8;
        return "int8_t";
    case QD_TY_U8:
        e->ext |= X_INT8;
        return "uint8_t";
    case QD_TY_I16:
        e->ext |= X_INT16;
        return "int16_t";
    case QD_TY_U16:
        e->ext |= X_INT16;
        return "uint16_t";
    case QD_TY_I32:
        return "int";
    case QD_TY_U32:
        return "uint";
    case QD_TY_I64:
        return "int64_t";
    case QD_TY_U64:
        return "uint64_t";
    case QD_TY_F16:
        e->ext |= X_FLOAT16;
        return "float16_t";
    case QD_TY_F32:
        return "float";
    case QD_TY_F64:
        return "double";
    default:
        return "void";
    }
}

QdTypeKind
qd_glsl_unsigned_of(QdTypeKind k)
{
    switch (k) {
    case QD_TY_I8:
        return QD_TY_U8;
    case QD_TY_I16:
        return QD_TY_U16;
    case QD_TY_I32:
        return QD_TY_U32;
    case QD_TY_I64:
        return QD_TY_U64;
    default:
        return k;
    }
}

QdTypeKind
qd_glsl_signed_of(QdTypeKind k)
{
    switch (k) {
    case QD_TY_U8:
        return QD_TY_I8;
    case QD_TY_U16:
        return QD_TY_I16;
    case QD_TY_U32:
        return QD_TY_I32;
    case QD_TY_U64:
        return QD_TY_I64;
    default:
        return k;
    }
}

const QdType *
qd_glsl_array_dims(const QdType *ty, char *dims, size_t size)
{
    size_t n = 0;
    dims[0] = '\0';
    while (ty->kind == QD_TY_ARRAY) {
        int w = snprintf(dims + n, n < size ? size - n : 0, "[%u]", ty->count);
        n += w > 0 ? (size_t)w : 0;
        ty = ty->elem;
    }
    return ty;
}

uint32_t
qd_glsl_size(const QdType *ty)
{
    if (ty->kind == QD_TY_ARRAY) {
        return ty->count * qd_glsl_size(ty->elem);
    }
    if (ty->kind == QD_TY_PTR) {
        return 8;
    }
    uint32_t bits = qd_type_bits(ty);
    return bits <= 8 ? 1 : bits / 8;
}

const char *
qd_glsl_int_literal(Emitter *e, QdTypeKind k, int64_t v)
{
    switch (k) {
    case QD_TY_U1:
        return v & 1 ? "true" : "false";
    case QD_TY_I8:
    case QD_TY_I16:
    case QD_TY_U8:
    case QD_TY_U16:
        return qd_glsl_str(e, "%s(%lld)", qd_glsl_type(e, k), (long long)v);
    case QD_TY_I32:
        if ((int32_t)v == INT32_MIN) {
            return "(-2147483647 - 1)";
        }
        return qd_glsl_str(e, "%d", (int32_t)v);
    case QD_TY_U32:
        return qd_glsl_str(e, "%uu", (uint32_t)v);
    case QD_TY_I64:
        if (v == INT64_MIN) {
            return "(-9223372036854775807l - 1l)";
        }
        return qd_glsl_str(e, "%lldl", (long long)v);
    default: /* U64 */
        return qd_glsl_str(e, "%lluul", (unsigned long long)v);
    }
}

/* A float literal of value f for type k (f16 as a converted float literal). */
static const char *
float_literal(Emitter *e, QdTypeKind k, double f)
{
    if (k == QD_TY_F64) {
        if (isnan(f)) {
            return "uint64BitsToDouble(0x7ff8000000000000ul)";
        }
        if (isinf(f)) {
            return f > 0 ? "uint64BitsToDouble(0x7ff0000000000000ul)"
                         : "uint64BitsToDouble(0xfff0000000000000ul)";
        }
        char text[64];
        snprintf(text, sizeof(text), "%.17g", f);
        bool has_point = strpbrk(text, ".e") != NULL;
        return qd_glsl_str(e, "%s%slf", text, has_point ? "" : ".0");
    }
    const char *lit;
    if (isnan(f)) {
        lit = "uintBitsToFloat(0x7fc00000u)";
    } else if (isinf(f)) {
        lit = f > 0 ? "uintBitsToFloat(0x7f800000u)" : "uintBitsToFloat(0xff800000u)";
    } else {
        char text[64];
        snprintf(text, sizeof(text), "%.9g", (double)(float)f);
        bool has_point = strpbrk(text, ".e") != NULL;
        lit = qd_glsl_str(e, "%s%s", text, has_point ? "" : ".0");
    }
    if (k == QD_TY_F16 && lit != NULL) {
        return qd_glsl_str(e, "float16_t(%s)", lit);
    }
    return lit;
}

const char *
qd_glsl_literal(Emitter *e, QdTypeKind k, const QdConst *c)
{
    if (k == QD_TY_F16 || k == QD_TY_F32 || k == QD_TY_F64) {
        return float_literal(e, k, c->f);
    }
    return qd_glsl_int_literal(e, k, qd_type_is_signed(qd_type_scalar(k)) ? c->i : (int64_t)c->u);
}

/* The type of the member of QdRef_<k>: the register type, except u1 (a byte). */
static const char *
memory_type(Emitter *e, QdTypeKind k)
{
    if (k == QD_TY_U1 || k == QD_TY_U8 || k == QD_TY_I8) {
        e->ext |= X_STORAGE8;
        return k == QD_TY_I8 ? "int8_t" : "uint8_t";
    }
    if (k == QD_TY_I16 || k == QD_TY_U16 || k == QD_TY_F16) {
        e->ext |= X_STORAGE16;
    }
    return qd_glsl_type(e, k);
}

const char *
qd_glsl_ref(Emitter *e, QdTypeKind k, const char *addr, bool is_volatile)
{
    (is_volatile ? e->vrefs : e->refs)[k] = true;
    memory_type(e, k);
    return qd_glsl_str(e, "%s_%s(%s).v", is_volatile ? "QdVolatileRef" : "QdRef",
                       qd_type_scalar_name(k), addr);
}

const char *
qd_glsl_load_global(Emitter *e, QdTypeKind k, const char *addr, bool is_volatile)
{
    const char *ref = qd_glsl_ref(e, k, addr, is_volatile);
    if (k == QD_TY_U1) {
        return qd_glsl_str(e, "(uint(%s) != 0u)", ref);
    }
    return ref;
}

void
qd_glsl_store_global(Emitter *e, QdTypeKind k, const char *addr, const char *v)
{
    const char *ref = qd_glsl_ref(e, k, addr, false);
    if (k == QD_TY_U1) {
        qd_glsl_line(e, "%s = uint8_t(%s ? 1u : 0u);", ref, v);
    } else {
        qd_glsl_line(e, "%s = %s;", ref, v);
    }
}

/* The extension lines of the bits in e->ext, in this order. */
static const struct {
    unsigned bit;
    const char *name;
} extensions[] = {
    {X_INT8, "GL_EXT_shader_explicit_arithmetic_types_int8"},
    {X_INT16, "GL_EXT_shader_explicit_arithmetic_types_int16"},
    {X_FLOAT16, "GL_EXT_shader_explicit_arithmetic_types_float16"},
    {X_STORAGE8, "GL_EXT_shader_8bit_storage"},
    {X_STORAGE16, "GL_EXT_shader_16bit_storage"},
    {X_ATOMIC_INT64, "GL_EXT_shader_atomic_int64"},
    {X_ATOMIC_FLOAT, "GL_EXT_shader_atomic_float"},
    {X_ATOMIC_FLOAT2, "GL_EXT_shader_atomic_float2"},
    {X_SG_BASIC, "GL_KHR_shader_subgroup_basic"},
    {X_SG_ARITH, "GL_KHR_shader_subgroup_arithmetic"},
    {X_SG_BALLOT, "GL_KHR_shader_subgroup_ballot"},
    {X_SG_SHUFFLE, "GL_KHR_shader_subgroup_shuffle"},
    {X_SG_RELATIVE, "GL_KHR_shader_subgroup_shuffle_relative"},
    {X_SG_VOTE, "GL_KHR_shader_subgroup_vote"},
    {X_CLOCK, "GL_ARB_shader_clock"},
};

void
qd_glsl_write_preamble(Emitter *e, QdSbuf *out)
{
    /* 16-bit types need their storage extension too, and subgroup extensions the basic one */
    if (e->ext & (X_SG_ARITH | X_SG_BALLOT | X_SG_SHUFFLE | X_SG_RELATIVE | X_SG_VOTE)) {
        e->ext |= X_SG_BASIC;
    }
    qd_sbuf_puts(out, "#version 460\n");
    qd_sbuf_puts(out, "#extension GL_EXT_buffer_reference : require\n");
    qd_sbuf_puts(out, "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n");
    for (size_t i = 0; i < QD_ARRAY_LEN(extensions); i++) {
        if (e->ext & extensions[i].bit) {
            qd_sbuf_printf(out, "#extension %s : require\n", extensions[i].name);
        }
    }
    /* Without fast math, f32 subnormals are kept where the device can promise it (NVIDIA's
     * driver flushes them otherwise): SPIR-V DenormPreserve (execution mode 4459, capability
     * 4464) for 32-bit floats. f64 subnormals are kept there without it. */
    bool keep_subnormals = !e->opts->fast_math && e->opts->features.denorm_preserve_f32;
    if (keep_subnormals) {
        qd_sbuf_puts(out, "#extension GL_EXT_spirv_intrinsics : require\n");
    }
    qd_sbuf_printf(out, "\nlayout(local_size_x = %u) in;\n", e->block_dim);
    if (keep_subnormals) {
        qd_sbuf_puts(out, "spirv_execution_mode(extensions = [\"SPV_KHR_float_controls\"], "
                          "capabilities = [4464], 4459, 32);\n");
    }
    qd_sbuf_puts(out, "\n");
    for (int pass = 0; pass < 2; pass++) {
        const bool *used = pass == 0 ? e->refs : e->vrefs;
        const char *qualifier = pass == 1 ? "coherent volatile " : e->coherent ? "coherent " : "";
        for (int k = 0; k < QD_TY_COUNT_; k++) {
            if (!used[k]) {
                continue;
            }
            QdTypeKind kind = (QdTypeKind)k;
            qd_sbuf_printf(out,
                           "layout(buffer_reference, std430, buffer_reference_align = %u) "
                           "%sbuffer %s_%s { %s v; };\n",
                           qd_glsl_size(qd_type_scalar(kind)), qualifier,
                           pass == 0 ? "QdRef" : "QdVolatileRef", qd_type_scalar_name(kind),
                           memory_type(e, kind));
        }
    }
    qd_sbuf_puts(out,
                 "\n/* the device address of the parameter buffer (the Vulkan kernel ABI) */\n");
    qd_sbuf_puts(out, "layout(push_constant) uniform QdPush { uint64_t params; } qd_push;\n");
}
