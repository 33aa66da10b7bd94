/* codegen/glsl/glsl_emit_ops.c -- value instructions: arithmetic, comparisons, casts, math.
 *
 * Each instruction becomes one GLSL expression; where GLSL leaves a case undefined that
 * codegen/llvm/codegen.h defines, a helper function (emitted once per shader, only when
 * used) gives the defined result:
 *   integer div / rem / floordiv / floormod    0 for a zero divisor, INT_MIN / -1 wraps
 *   shifts                                     the amount masked with width - 1
 *   float -> integer casts                     saturating, NaN -> 0 (qd_f2i_<from>_<to>)
 *   float min / max                            the non-NaN operand wins
 *   integer pow                                by squaring, wrapping, 1 for b < 0
 *   float pow without float64                  C pow's results for negative bases and zero
 *   round                                      half away from zero (GLSL's round is free)
 *   float rem                                  a - b * trunc(a / b) (not exact like fmod)
 * u1 is GLSL bool: arithmetic on it is arithmetic modulo 2 (add is xor, mul is and).
 * Float division and sqrt are correctly rounded (Vulkan's are not: glsl_math.c's helpers).
 * exp, log, sin, cos, tan, tanh, asin, acos, atan, atan2 and pow are glsl_math.c's double
 * helpers, f32 and f16 converted to double and back, when the device has float64; without
 * it f32 uses the GLSL builtins (their Vulkan precision) and f16 is computed in float.
 */
#include "glsl_internal.h"

#include <stdio.h>
#include <string.h>

/***** helpers *****/

static bool
is_float_kind(QdTypeKind k)
{
    return k == QD_TY_F16 || k == QD_TY_F32 || k == QD_TY_F64;
}

/* Marks helper h for types a (and b) and returns its name "qd_<h>_<a>[_<b>]". */
static const char *
use_helper(Emitter *e, GlslHelper h, QdTypeKind a, QdTypeKind b)
{
    static const char *const names[H_COUNT] = {
        "div",  "rem",  "floordiv", "floormod", "ipow", "fmin",
        "fmax", "fpow", "frem",     "round",    "f2i",  "f64_bits", "clock",
    };
    e->helpers[h][a][b] = true;
    qd_glsl_type(e, a);
    if (h == H_F2I) {
        qd_glsl_type(e, b);
        return qd_glsl_str(e, "qd_%s_%s_%s", names[h], qd_type_scalar_name(a),
                           qd_type_scalar_name(b));
    }
    return qd_glsl_str(e, "qd_%s_%s", names[h], qd_type_scalar_name(a));
}

/* The float values that convert to integer kind k without saturating: (lo, hi), hi = max + 1
 * and lo = min (a power of two, exact in every float type that reaches it). */
static void
int_range(QdTypeKind k, double *lo, double *hi)
{
    uint32_t bits = qd_type_bits(qd_type_scalar(k));
    bool is_signed = qd_type_is_signed(qd_type_scalar(k));
    *hi = is_signed    ? (double)((uint64_t)1 << (bits - 1))
          : bits == 64 ? 18446744073709551616.0
                       : (double)((uint64_t)1 << bits);
    *lo = is_signed ? -*hi : 0.0;
}

static const char *
zero_of(Emitter *e, QdTypeKind k)
{
    return qd_glsl_int_literal(e, k, 0);
}

/* Writes helper h for types (a, b). */
static void
write_helper(Emitter *e, QdSbuf *out, GlslHelper h, QdTypeKind a, QdTypeKind b)
{
    const char *t = qd_glsl_type(e, a);
    const char *name = use_helper(e, h, a, b);
    const char *zero = qd_glsl_int_literal(e, a, 0);
    const char *one = qd_glsl_int_literal(e, a, 1);
    bool is_signed = qd_type_is_signed(qd_type_scalar(a));

    switch (h) {
    case H_DIV:
    case H_REM:
    case H_FLOORDIV:
    case H_FLOORMOD:
        qd_sbuf_printf(out, "%s %s(%s a, %s b) {\n", t, name, t, t);
        if (!is_signed) {
            bool div = h == H_DIV || h == H_FLOORDIV;
            qd_sbuf_printf(out, "    return b == %s ? %s : a %c b;\n}\n", zero, zero,
                           div ? '/' : '%');
            return;
        }
        qd_sbuf_printf(out, "    if (b == %s) {\n        return %s;\n    }\n", zero, zero);
        qd_sbuf_printf(out, "    if (b == -%s) {\n        return %s;\n    }\n", one,
                       h == H_DIV || h == H_FLOORDIV ? "-a" : zero);
        if (h == H_DIV) {
            qd_sbuf_puts(out, "    return a / b;\n}\n");
            return;
        }
        qd_sbuf_printf(out, "    %s q = a / b;\n    %s r = a - q * b;\n", t, t);
        if (h == H_REM) {
            qd_sbuf_puts(out, "    return r;\n}\n");
        } else {
            qd_sbuf_printf(out, "    bool adjust = r != %s && ((r < %s) != (b < %s));\n", zero,
                           zero, zero);
            qd_sbuf_printf(out, "    return adjust ? %s : %s;\n}\n",
                           h == H_FLOORDIV ? qd_glsl_str(e, "q - %s", one) : "r + b",
                           h == H_FLOORDIV ? "q" : "r");
        }
        return;
    case H_IPOW:
        qd_sbuf_printf(out, "%s %s(%s a, %s b) {\n", t, name, t, t);
        if (is_signed) {
            qd_sbuf_printf(out, "    if (b < %s) {\n        return %s;\n    }\n", zero, one);
        }
        qd_sbuf_printf(out, "    %s r = %s;\n", t, one);
        qd_sbuf_printf(out, "    while (b != %s) {\n", zero);
        qd_sbuf_printf(out, "        if ((b & %s) != %s) {\n            r *= a;\n        }\n", one,
                       zero);
        qd_sbuf_printf(out, "        a *= a;\n        b = %s(%s(b) >> 1);\n    }\n", t,
                       qd_glsl_type(e, qd_glsl_unsigned_of(a)));
        qd_sbuf_puts(out, "    return r;\n}\n");
        return;
    case H_FMIN:
    case H_FMAX:
        qd_sbuf_printf(out, "%s %s(%s a, %s b) {\n", t, name, t, t);
        qd_sbuf_printf(out, "    return isnan(a) ? b : isnan(b) ? a : %s(a, b);\n}\n",
                       h == H_FMIN ? "min" : "max");
        return;
    case H_FPOW:
        /* without float64 (f16, f32), in float. C pow: x ** 0 = 1; a negative base takes the
         * sign of an odd integer exponent and gives NaN for a non-integer one; a zero base
         * gives 0 or inf */
        qd_sbuf_printf(out,
                       "%s %s(%s a, %s b) {\n    float x = float(a), y = float(b);\n"
                       "    if (y == 0.0) {\n        return %s(1.0);\n    }\n"
                       "    float m = abs(x);\n"
                       "    float r = m == 0.0 ? (y > 0.0 ? 0.0 : 1.0 / m) : pow(m, y);\n"
                       "    if (x < 0.0) {\n        if (floor(y) != y) {\n"
                       "            return %s(uintBitsToFloat(0x7fc00000u));\n        }\n"
                       "        r = mod(y, 2.0) == 1.0 ? -r : r;\n    }\n"
                       "    return %s(r);\n}\n",
                       t, name, t, t, t, t, t);
        return;
    case H_FREM:
        qd_sbuf_printf(out, "%s %s(%s a, %s b) {\n", t, name, t, t);
        qd_sbuf_puts(out, "    return a - b * trunc(a / b);\n}\n");
        return;
    case H_ROUND:
        qd_sbuf_printf(out, "%s %s(%s a) {\n", t, name, t);
        qd_sbuf_printf(out, "    %s t = trunc(a);\n", t);
        qd_sbuf_printf(out, "    return abs(a - t) >= %s(0.5) ? t + sign(a) : t;\n}\n", t);
        return;
    case H_F2I: {
        /* a is the float kind, b the integer kind: [lo, hi) converts without saturating */
        const QdType *ity = qd_type_scalar(b);
        const char *it = qd_glsl_type(e, b);
        const char *wt = a == QD_TY_F64 ? "double" : "float";
        const char *suffix = a == QD_TY_F64 ? "lf" : "";
        uint32_t bits = qd_type_bits(ity);
        bool s = qd_type_is_signed(ity);
        double lo, hi;
        int_range(b, &lo, &hi);
        int64_t min = s ? (bits == 64 ? INT64_MIN : -((int64_t)1 << (bits - 1))) : 0;
        int64_t max = s            ? (int64_t)(((uint64_t)1 << (bits - 1)) - 1)
                      : bits == 64 ? -1
                                   : (int64_t)(((uint64_t)1 << bits) - 1);
        qd_sbuf_printf(out, "%s %s(%s a) {\n", it, name, t);
        qd_sbuf_printf(out, "    %s x = %s(a);\n", wt, wt);
        qd_sbuf_printf(out, "    if (isnan(x)) {\n        return %s;\n    }\n", zero_of(e, b));
        qd_sbuf_printf(out, "    if (x <= %.1f%s) {\n        return %s;\n    }\n", lo, suffix,
                       qd_glsl_int_literal(e, b, min));
        qd_sbuf_printf(out, "    if (x >= %.1f%s) {\n        return %s;\n    }\n", hi, suffix,
                       qd_glsl_int_literal(e, b, max));
        qd_sbuf_printf(out, "    return %s(x);\n}\n", it);
        return;
    }
    case H_F64_BITS:
        qd_glsl_write_f64_bits(out, name);
        return;
    case H_CLOCK:
        /* The two halves of one clock2x32ARB() are not always read at one instant (lavapipe
         * was seen to return the high word from before a carry with the low word from after
         * it). A low word read between two equal high words belongs with them. */
        qd_sbuf_printf(out,
                       "int64_t %s() {\n    uint hi, lo;\n    do {\n"
                       "        hi = clock2x32ARB().y;\n        lo = clock2x32ARB().x;\n"
                       "    } while (clock2x32ARB().y != hi);\n"
                       "    return int64_t(packUint2x32(uvec2(lo, hi)));\n}\n",
                       name);
        return;
    default:
        return;
    }
}

const char *
qd_glsl_clock(Emitter *e)
{
    e->ext |= X_CLOCK;
    return qd_glsl_str(e, "%s()", use_helper(e, H_CLOCK, QD_TY_I64, QD_TY_I64));
}

void
qd_glsl_write_helpers(Emitter *e, QdSbuf *out)
{
    for (int h = 0; h < H_COUNT; h++) {
        for (int a = 0; a < QD_TY_COUNT_; a++) {
            for (int b = 0; b < QD_TY_COUNT_; b++) {
                if (e->helpers[h][a][b]) {
                    if (out->len > 0) {
                        qd_sbuf_putc(out, '\n');
                    }
                    if (h >= H_M_MUL2) {
                        qd_glsl_write_math(e, out, (GlslHelper)h);
                        continue;
                    }
                    write_helper(e, out, (GlslHelper)h, (QdTypeKind)a, (QdTypeKind)b);
                }
            }
        }
    }
}

/***** expressions *****/

const char *
qd_glsl_truth(Emitter *e, const QdType *ty, const char *v)
{
    if (ty->kind == QD_TY_U1) {
        return v;
    }
    return qd_glsl_str(e, "(%s != %s)", v, qd_glsl_int_literal(e, ty->kind, 0));
}

/* `f(a)` for a float kind: f16 computed in float, f64 natively (sqrt, inversesqrt, floor,
 * ceil, trunc, abs have double versions). */
static const char *
math1(Emitter *e, const char *f, QdTypeKind k, const char *a)
{
    if (k == QD_TY_F16) {
        return qd_glsl_str(e, "float16_t(%s(float(%s)))", f, a);
    }
    return qd_glsl_str(e, "%s(%s)", f, a);
}

/* A transcendental function: the double helper h where the device has float64, else the
 * GLSL builtin f in float. */
static const char *
transcendental(Emitter *e, GlslHelper h, const char *f, QdTypeKind k, const char *a)
{
    if (e->opts->features.float64) {
        return qd_glsl_math_call(e, h, k, a, NULL);
    }
    return math1(e, f, k, a);
}

/* u1 arithmetic: modulo 2 on bools. */
static const char *
bool_binary(Emitter *e, QdOp op, const char *a, const char *b)
{
    switch (op) {
    case QD_OP_ADD:
    case QD_OP_SUB:
    case QD_OP_XOR:
        return qd_glsl_str(e, "(%s != %s)", a, b);
    case QD_OP_MUL:
    case QD_OP_AND:
    case QD_OP_MIN:
    case QD_OP_DIV:
    case QD_OP_FLOORDIV:
        return qd_glsl_str(e, "(%s && %s)", a, b);
    case QD_OP_OR:
    case QD_OP_MAX:
        return qd_glsl_str(e, "(%s || %s)", a, b);
    case QD_OP_POW:
        return qd_glsl_str(e, "(%s || !%s)", a, b);
    case QD_OP_REM:
    case QD_OP_FLOORMOD:
        return "false";
    default: /* shifts by an amount modulo 1 */
        return a;
    }
}

static const char *
float_binary(Emitter *e, QdOp op, QdTypeKind k, const char *a, const char *b)
{
    const char *t = qd_glsl_type(e, k);
    bool is_basic = op == QD_OP_ADD || op == QD_OP_SUB || op == QD_OP_MUL || op == QD_OP_DIV;
    if (k == QD_TY_F16 && !is_basic) {
        /* computed in float, rounded back */
        const char *wa = qd_glsl_str(e, "float(%s)", a), *wb = qd_glsl_str(e, "float(%s)", b);
        const char *r = wa && wb ? float_binary(e, op, QD_TY_F32, wa, wb) : NULL;
        return r ? qd_glsl_str(e, "float16_t(%s)", r) : NULL;
    }
    switch (op) {
    case QD_OP_ADD:
        return qd_glsl_str(e, "(%s + %s)", a, b);
    case QD_OP_SUB:
        return qd_glsl_str(e, "(%s - %s)", a, b);
    case QD_OP_MUL:
        return qd_glsl_str(e, "(%s * %s)", a, b);
    case QD_OP_DIV:
        return qd_glsl_fdiv(e, k, a, b);
    case QD_OP_REM:
        return qd_glsl_str(e, "%s(%s, %s)", use_helper(e, H_FREM, k, k), a, b);
    case QD_OP_FLOORDIV:
        return qd_glsl_str(e, "floor(%s)", qd_glsl_fdiv(e, k, a, b));
    case QD_OP_FLOORMOD:
        return qd_glsl_str(e, "(%s - floor(%s) * %s)", a, qd_glsl_fdiv(e, k, a, b), b);
    case QD_OP_MIN:
        return qd_glsl_str(e, "%s(%s, %s)", use_helper(e, H_FMIN, k, k), a, b);
    case QD_OP_MAX:
        return qd_glsl_str(e, "%s(%s, %s)", use_helper(e, H_FMAX, k, k), a, b);
    case QD_OP_POW:
        if (e->opts->features.float64) {
            return qd_glsl_math_call(e, H_M_POW, k, a, b);
        }
        return qd_glsl_str(e, "%s(%s, %s)", use_helper(e, H_FPOW, k, k), a, b);
    case QD_OP_ATAN2:
        if (e->opts->features.float64) {
            return qd_glsl_math_call(e, H_M_ATAN2, k, a, b);
        }
        return qd_glsl_str(e, "%s(atan(float(%s), float(%s)))", t, a, b);
    default:
        return NULL;
    }
}

const char *
qd_glsl_binary(Emitter *e, QdOp op, const QdType *ty, const char *a, const char *b)
{
    QdTypeKind k = ty->kind;
    if (a == NULL || b == NULL) {
        return NULL;
    }
    if (k == QD_TY_U1) {
        return bool_binary(e, op, a, b);
    }
    if (is_float_kind(k)) {
        return float_binary(e, op, k, a, b);
    }
    const char *t = qd_glsl_type(e, k);
    uint32_t width = qd_type_bits(ty);
    switch (op) {
    case QD_OP_ADD:
        return qd_glsl_str(e, "(%s + %s)", a, b);
    case QD_OP_SUB:
        return qd_glsl_str(e, "(%s - %s)", a, b);
    case QD_OP_MUL:
        return qd_glsl_str(e, "(%s * %s)", a, b);
    case QD_OP_AND:
        return qd_glsl_str(e, "(%s & %s)", a, b);
    case QD_OP_OR:
        return qd_glsl_str(e, "(%s | %s)", a, b);
    case QD_OP_XOR:
        return qd_glsl_str(e, "(%s ^ %s)", a, b);
    case QD_OP_MIN:
        return qd_glsl_str(e, "min(%s, %s)", a, b);
    case QD_OP_MAX:
        return qd_glsl_str(e, "max(%s, %s)", a, b);
    case QD_OP_DIV:
        return qd_glsl_str(e, "%s(%s, %s)", use_helper(e, H_DIV, k, k), a, b);
    case QD_OP_REM:
        return qd_glsl_str(e, "%s(%s, %s)", use_helper(e, H_REM, k, k), a, b);
    case QD_OP_FLOORDIV:
        return qd_glsl_str(e, "%s(%s, %s)", use_helper(e, H_FLOORDIV, k, k), a, b);
    case QD_OP_FLOORMOD:
        return qd_glsl_str(e, "%s(%s, %s)", use_helper(e, H_FLOORMOD, k, k), a, b);
    case QD_OP_POW:
        return qd_glsl_str(e, "%s(%s, %s)", use_helper(e, H_IPOW, k, k), a, b);
    case QD_OP_SHL:
    case QD_OP_SHR:
    case QD_OP_LSHR: {
        const char *amount = qd_glsl_str(e, "(%s & %s)", b, qd_glsl_int_literal(e, k, width - 1));
        if (op == QD_OP_SHL || (op == QD_OP_SHR) || !qd_type_is_signed(ty)) {
            return qd_glsl_str(e, "(%s %s %s)", a, op == QD_OP_SHL ? "<<" : ">>", amount);
        }
        const char *ut = qd_glsl_type(e, qd_glsl_unsigned_of(k));
        return qd_glsl_str(e, "%s(%s(%s) >> %s(%s))", t, ut, a, ut, amount);
    }
    default:
        return NULL;
    }
}

const char *
qd_glsl_cast(Emitter *e, const QdType *from, const QdType *to, const char *v)
{
    QdTypeKind f = from->kind, t = to->kind;
    if (f == t || v == NULL) {
        return v;
    }
    const char *tt = qd_glsl_type(e, t);
    bool from_float = is_float_kind(f), to_float = is_float_kind(t);
    if (f == QD_TY_U1) {
        if (to_float) {
            return qd_glsl_str(e, "(%s ? %s(1.0) : %s(0.0))", v, tt, tt);
        }
        return qd_glsl_str(e, "(%s ? %s : %s)", v, qd_glsl_int_literal(e, t, 1),
                           qd_glsl_int_literal(e, t, 0));
    }
    if (t == QD_TY_U1) {
        if (from_float) {
            return qd_glsl_str(e, "(%s >= %s(1.0))", v, qd_glsl_type(e, f)); /* saturating */
        }
        return qd_glsl_str(e, "((%s & %s) != %s)", v, qd_glsl_int_literal(e, f, 1),
                           qd_glsl_int_literal(e, f, 0));
    }
    if (from_float && !to_float) {
        return qd_glsl_str(e, "%s(%s)", use_helper(e, H_F2I, f, t), v);
    }
    if (f == QD_TY_F64 && t == QD_TY_F16) { /* lavapipe rounds twice, through float */
        return qd_glsl_str(e, "%s(%s)", qd_glsl_math(e, H_M_D2H), v);
    }
    if (from_float || to_float) {
        return qd_glsl_str(e, "%s(%s)", tt, v);
    }
    /* integers: resize with the source's signedness, then reinterpret at the target width */
    uint32_t fb = qd_type_bits(from), tb = qd_type_bits(to);
    bool fs = qd_type_is_signed(from);
    QdTypeKind mid = f;
    if (fb != tb) {
        static const QdTypeKind signed_of_bits[] = {QD_TY_I8, QD_TY_I16, QD_TY_I32, QD_TY_I64};
        int idx = tb == 8 ? 0 : tb == 16 ? 1 : tb == 32 ? 2 : 3;
        mid = fs ? signed_of_bits[idx] : qd_glsl_unsigned_of(signed_of_bits[idx]);
        v = qd_glsl_str(e, "%s(%s)", qd_glsl_type(e, mid), v);
    }
    return mid == t ? v : qd_glsl_str(e, "%s(%s)", tt, v);
}

/* bitcast between types of one width. */
static const char *
bitcast(Emitter *e, QdTypeKind f, QdTypeKind t, const char *v)
{
    static const struct {
        QdTypeKind from, to;
        const char *fn;
    } table[] = {
        {QD_TY_F32, QD_TY_I32, "floatBitsToInt"},     {QD_TY_F32, QD_TY_U32, "floatBitsToUint"},
        {QD_TY_I32, QD_TY_F32, "intBitsToFloat"},     {QD_TY_U32, QD_TY_F32, "uintBitsToFloat"},
        {QD_TY_F64, QD_TY_I64, "doubleBitsToInt64"},  {QD_TY_F64, QD_TY_U64, "doubleBitsToUint64"},
        {QD_TY_I64, QD_TY_F64, "int64BitsToDouble"},  {QD_TY_U64, QD_TY_F64, "uint64BitsToDouble"},
        {QD_TY_F16, QD_TY_I16, "float16BitsToInt16"}, {QD_TY_F16, QD_TY_U16, "float16BitsToUint16"},
        {QD_TY_I16, QD_TY_F16, "int16BitsToFloat16"}, {QD_TY_U16, QD_TY_F16, "uint16BitsToFloat16"},
    };
    if (f == t) {
        return v;
    }
    for (size_t i = 0; i < QD_ARRAY_LEN(table); i++) {
        if (table[i].from == f && table[i].to == t) {
            qd_glsl_type(e, f);
            qd_glsl_type(e, t);
            return qd_glsl_str(e, "%s(%s)", table[i].fn, v);
        }
    }
    return qd_glsl_str(e, "%s(%s)", qd_glsl_type(e, t), v); /* integers of one width */
}

static const char *
compare(Emitter *e, QdOp op, const QdType *ty, const char *a, const char *b)
{
    static const char *const ops[] = {"==", "!=", "<", "<=", ">", ">="};
    int i = op == QD_OP_EQ   ? 0
            : op == QD_OP_NE ? 1
            : op == QD_OP_LT ? 2
            : op == QD_OP_LE ? 3
            : op == QD_OP_GT ? 4
                             : 5;
    if (ty->kind == QD_TY_U1 && i >= 2) {
        return qd_glsl_str(e, "(int(%s) %s int(%s))", a, ops[i], b);
    }
    if (op == QD_OP_NE && is_float_kind(ty->kind)) {
        return qd_glsl_str(e, "!(%s == %s)", a, b); /* true when either operand is NaN */
    }
    return qd_glsl_str(e, "(%s %s %s)", a, ops[i], b);
}

/* popcnt and clz (i32 results), through uint / two uint halves. */
static const char *
bit_count(Emitter *e, QdOp op, const QdType *ty, const char *a)
{
    uint32_t width = qd_type_bits(ty);
    const char *u = qd_glsl_cast(e, ty, qd_type_scalar(qd_glsl_unsigned_of(ty->kind)), a);
    if (width == 64) {
        const char *lo = qd_glsl_str(e, "uint(%s)", u);
        const char *hi = qd_glsl_str(e, "uint(%s >> 32)", u);
        if (op == QD_OP_POPCNT) {
            return qd_glsl_str(e, "(bitCount(%s) + bitCount(%s))", lo, hi);
        }
        return qd_glsl_str(e, "(%s != 0u ? 31 - findMSB(%s) : 63 - findMSB(%s))", hi, hi, lo);
    }
    const char *w = width == 32 ? u : qd_glsl_str(e, "uint(%s)", u);
    if (op == QD_OP_POPCNT) {
        return qd_glsl_str(e, "bitCount(%s)", w);
    }
    return qd_glsl_str(e, "(%u - findMSB(%s))", width - 1, w);
}

static const char *
unary(Emitter *e, QdOp op, const QdType *ty, const char *a)
{
    QdTypeKind k = ty->kind;
    const char *t = qd_glsl_type(e, k);
    bool is_float = is_float_kind(k);
    switch (op) {
    case QD_OP_NEG:
        return k == QD_TY_U1 ? a : qd_glsl_str(e, "(-%s)", a);
    case QD_OP_ABS:
        if (is_float) {
            return math1(e, "abs", k, a);
        }
        if (!qd_type_is_signed(ty)) {
            return a;
        }
        return qd_glsl_str(e, "(%s < %s ? -%s : %s)", a, qd_glsl_int_literal(e, k, 0), a, a);
    case QD_OP_NOT:
        return k == QD_TY_U1 ? qd_glsl_str(e, "(!%s)", a) : qd_glsl_str(e, "(~%s)", a);
    case QD_OP_POPCNT:
    case QD_OP_CLZ:
        if (k == QD_TY_U1) {
            return op == QD_OP_POPCNT ? qd_glsl_str(e, "(%s ? 1 : 0)", a)
                                      : qd_glsl_str(e, "(%s ? 0 : 1)", a);
        }
        return bit_count(e, op, ty, a);
    case QD_OP_SQRT:
        return qd_glsl_sqrt(e, k, a);
    case QD_OP_RSQRT:
        if (e->opts->fast_math) {
            return math1(e, "inversesqrt", k, a);
        }
        return qd_glsl_fdiv(e, k, qd_glsl_str(e, "%s(1.0)", t), qd_glsl_sqrt(e, k, a));
    case QD_OP_EXP:
        return transcendental(e, H_M_EXP, "exp", k, a);
    case QD_OP_LOG:
        return transcendental(e, H_M_LOG, "log", k, a);
    case QD_OP_SIN:
        return transcendental(e, H_M_SIN, "sin", k, a);
    case QD_OP_COS:
        return transcendental(e, H_M_COS, "cos", k, a);
    case QD_OP_TAN:
        return transcendental(e, H_M_TAN, "tan", k, a);
    case QD_OP_TANH:
        return transcendental(e, H_M_TANH, "tanh", k, a);
    case QD_OP_ASIN:
        return transcendental(e, H_M_ASIN, "asin", k, a);
    case QD_OP_ACOS:
        return transcendental(e, H_M_ACOS, "acos", k, a);
    case QD_OP_ATAN:
        return transcendental(e, H_M_ATAN, "atan", k, a);
    case QD_OP_FLOOR:
        return math1(e, "floor", k, a);
    case QD_OP_CEIL:
        return math1(e, "ceil", k, a);
    case QD_OP_ROUND:
        if (k == QD_TY_F16) {
            return qd_glsl_str(e, "float16_t(%s(float(%s)))",
                               use_helper(e, H_ROUND, QD_TY_F32, QD_TY_F32), a);
        }
        return qd_glsl_str(e, "%s(%s)", use_helper(e, H_ROUND, k, k), a);
    default:
        return NULL;
    }
}

int
qd_glsl_emit_op(Emitter *e, const QdInst *inst)
{
    const QdFunc *f = e->kernel;
    QdSig sig = qd_op_info[inst->op].sig;
    const char *a = inst->nargs > 0 ? qd_glsl_value(e, inst->args[0]) : NULL;
    const char *b = inst->nargs > 1 ? qd_glsl_value(e, inst->args[1]) : NULL;
    const QdType *ta = inst->nargs > 0 ? qd_value_type(f, inst->args[0]) : NULL;
    const char *r = NULL;

    if ((inst->nargs > 0 && a == NULL) || (inst->nargs > 1 && b == NULL)) {
        return qd_glsl_nomem(e, inst);
    }
    switch (sig) {
    case SIG_CONST:
        r = qd_glsl_literal(e, inst->type->kind, &inst->imm.cst);
        break;
    case SIG_ARITH:
    case SIG_INT2:
    case SIG_FLOAT2:
        r = qd_glsl_binary(e, inst->op, inst->type, a, b);
        break;
    case SIG_SHIFT:
        r = qd_glsl_binary(e, inst->op, inst->type, a,
                           qd_glsl_cast(e, qd_value_type(f, inst->args[1]), inst->type, b));
        break;
    case SIG_UNARY:
    case SIG_INT1:
    case SIG_FLOAT1:
    case SIG_BITCOUNT:
        r = unary(e, inst->op, ta, a);
        break;
    case SIG_CMP:
        r = compare(e, inst->op, ta, a, b);
        break;
    case SIG_SELECT: {
        const char *c = qd_glsl_value(e, inst->args[2]);
        if (e->values[inst->args[1]].ptr == PTR_LVALUE ||
            e->values[inst->args[2]].ptr == PTR_LVALUE) {
            return qd_glsl_unsupported(e, inst, "a select of local or shared pointers",
                                       "GLSL cannot address that memory");
        }
        r = c ? qd_glsl_str(e, "(%s ? %s : %s)", qd_glsl_truth(e, ta, a), b, c) : NULL;
        if (r != NULL && inst->type->kind == QD_TY_PTR) {
            RETURN_IF_ERROR(qd_glsl_define(e, inst, r));
            e->values[inst->result].ptr = PTR_GLOBAL;
            return 0;
        }
        break;
    }
    case SIG_CAST:
        r = qd_glsl_cast(e, ta, inst->type, a);
        break;
    case SIG_BITCAST:
        if (ta->kind == QD_TY_PTR) { /* the same device address (a uint64_t) */
            RETURN_IF_ERROR(qd_glsl_define(e, inst, a));
            e->values[inst->result].ptr = PTR_GLOBAL;
            return 0;
        }
        r = bitcast(e, ta->kind, inst->type->kind, a);
        break;
    default:
        return qd_error(e->ctx, qd_glsl_loc(inst), QD_ERR_INTERNAL,
                        "cannot compile `%s` for Vulkan", qd_op_info[inst->op].text);
    }
    return qd_glsl_define(e, inst, r);
}
