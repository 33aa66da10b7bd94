/* codegen/glsl/glsl_math.c -- double-precision math functions written in GLSL.
 *
 * GLSL has no double exp, log, sin, cos, tan, tanh, asin, acos, atan or pow, and the Vulkan
 * precision of its float builtins (and of float and double division and sqrt) is loose. The
 * shader gets these as helper functions, each emitted only when used and after the helpers it
 * calls (the H_M_* order of GlslHelper is a dependency order). f32 and f16 math goes through
 * them when the device has float64 (glsl_emit_ops.c); their results rounded to float are then
 * correctly rounded but for rare double-rounding cases.
 *
 * Techniques (each a textbook one): range reduction, then Taylor polynomials (Horner with fma);
 * double-double ("dd": hi + lo) arithmetic where one double is not enough. Exact products come
 * from Veltkamp splitting (qd_mul2_f64), not fma: Vulkan does not require fma to be fused, and
 * lavapipe's is not. Every value of the error-free transformations is computed into a `precise`
 * local, out parameters and call arguments included: NVIDIA's driver contracts and reassociates
 * whatever is not. Errors measured against NumPy: docs/internals-glsl.md.
 *   exp    x = k ln2 + r, |r| <= ln2 / 2 (ln2 in two parts, k * hi exact); e^r - 1 by Taylor
 *          to degree 13; 2^k (1 + p) scaled in two steps so that subnormals round once
 *   log    x = 2^e m, m in [sqrt(1/2), sqrt(2)); log m = 2 atanh(s), s = (m-1)/(m+1), with s,
 *          s^3 and the result in dd: log is good to about 2^-62, which pow needs
 *   pow    C pow's special cases; exp(y * log|x|) with y * log|x| in dd
 *   sin, cos, tan  x = k pi/2 + r with pi/2 in three parts (x - k P1 exact, the rest in dd);
 *          repeated while |r| > pi/4, so that huge arguments give values in range: within an
 *          ulp for |x| up to about 1e26, wrong past about 1e30 (no Payne-Hanek reduction);
 *          Taylor polynomials of degree 17 (sin) and 18 (cos); tan = sin / cos
 *   tanh   expm1(2|x|) / (expm1(2|x|) + 2), the sum's rounding error corrected for
 *   atan   atan(c) + atan((x - c) / (1 + x c)) for c in {5/16, 19/32, 1, 7/4, 7/2}, pi/2 -
 *          atan(1/x) past 5, so that |t| <= 0.2; Taylor to degree 23; atan(c) in dd
 *   atan2  C's special cases; atan of the smaller over the larger magnitude
 *   asin, acos  atan2(x, sqrt(1 - x^2)) and atan2(sqrt(1 - x^2), x), 1 - x^2 from an exact x^2
 *   division, sqrt  one correction step from the exact residual
 */
#include "glsl_internal.h"

/* The text of the helpers; each defines qd_<name>_f64 (or _f32) and any private functions. */
static const char *const math_text[H_COUNT] = {
    [H_M_MUL2] =
        /* a * b = hi + lo exactly (no overflow: |a|, |b| < 2^995), by Veltkamp splitting */
        "double qd_mul2_f64(double a, double b, out double lo) {\n"
        "    precise double p = a * b;\n"
        "    precise double ca = 134217729.0lf * a;\n"
        "    precise double ah = ca - (ca - a);\n"
        "    precise double al = a - ah;\n"
        "    precise double cb = 134217729.0lf * b;\n"
        "    precise double bh = cb - (cb - b);\n"
        "    precise double bl = b - bh;\n"
        "    precise double e = (((ah * bh - p) + ah * bl) + al * bh) + al * bl;\n"
        "    lo = e;\n"
        "    return p;\n"
        "}\n",
    [H_M_SCALE] =
        "double qd_pow2_f64(int n) {\n" /* 2^n for n in [-1022, 1023] */
        "    return packDouble2x32(uvec2(0u, uint(n + 1023) << 20));\n"
        "}\n\n"
        "double qd_scale_f64(double x, int n) {\n" /* x 2^n, n in [-2044, 2046], one rounding */
        "    int h = n / 2;\n"
        "    precise double y = x * qd_pow2_f64(h);\n"
        "    precise double r = y * qd_pow2_f64(n - h);\n"
        "    return r;\n"
        "}\n",
    [H_M_DIV] =
        /* a / b refined by the exact residual: the correctly rounded quotient but for rare
         * cases; only where the residual and 1 / b are normal */
        "double qd_div_f64(double a, double b) {\n"
        "    precise double q = a / b;\n"
        "    double m = abs(b);\n"
        "    if (!(m >= 1.0e-290lf && m <= 1.0e290lf && abs(q) >= 1.0e-280lf &&\n"
        "          abs(q) <= 1.0e290lf && abs(a) >= 1.0e-270lf)) {\n"
        "        return q;\n"
        "    }\n"
        "    precise double pl;\n"
        "    precise double p = qd_mul2_f64(q, b, pl);\n"
        "    precise double r = (a - p) - pl;\n" /* exact residual */
        "    precise double c = q + r * (1.0lf / b);\n"
        "    return c;\n"
        "}\n",
    [H_M_SQRT] =
        "double qd_sqrt_f64(double x) {\n"
        "    precise double v = x;\n"
        "    double f = 1.0lf;\n"
        "    if (x > 0.0lf && x < 1.0e-290lf) {\n" /* keep s * s normal: scale by 2^200 */
        "        v = x * 1.6069380442589903e60lf;\n"
        "        f = 7.888609052210118e-31lf;\n"
        "    } else if (x > 1.0e300lf && !isinf(x)) {\n" /* and finite: by 2^-200 */
        "        v = x * 6.223015277861142e-61lf;\n"
        "        f = 1.2676506002282294e30lf;\n"
        "    }\n"
        "    precise double s = sqrt(v);\n"
        "    if (!(s > 0.0lf) || isinf(s)) {\n"
        "        return s;\n"
        "    }\n"
        "    precise double pl;\n"
        "    precise double p = qd_mul2_f64(s, s, pl);\n"
        "    precise double r = (v - p) - pl;\n"
        "    precise double c = (s + r * (0.5lf / s)) * f;\n"
        "    return c;\n"
        "}\n",
    [H_M_EXPCORE] =
        /* e^(x + xl) = 2^k (1 + p) for |x| <= 746, |xl| tiny; returns p */
        "double qd_expcore_f64(double x, double xl, out double k) {\n"
        "    k = floor(x * 1.4426950408889634lf + 0.5lf);\n"
        "    precise double r = x - k * 0.6931471803691238lf;\n" /* exact */
        "    precise double rl = xl - k * 1.9082149292705877e-10lf;\n"
        "    precise double t = r + rl;\n"
        "    precise double bb = t - r;\n"
        "    precise double c = (r - (t - bb)) + (rl - bb);\n"
        "    precise double q = 1.6059043836821613e-10lf;\n"
        "    q = fma(q, t, 2.08767569878681e-09lf);\n"
        "    q = fma(q, t, 2.505210838544172e-08lf);\n"
        "    q = fma(q, t, 2.755731922398589e-07lf);\n"
        "    q = fma(q, t, 2.7557319223985893e-06lf);\n"
        "    q = fma(q, t, 2.48015873015873e-05lf);\n"
        "    q = fma(q, t, 0.0001984126984126984lf);\n"
        "    q = fma(q, t, 0.001388888888888889lf);\n"
        "    q = fma(q, t, 0.008333333333333333lf);\n"
        "    q = fma(q, t, 0.041666666666666664lf);\n"
        "    q = fma(q, t, 0.16666666666666666lf);\n"
        "    q = fma(q, t, 0.5lf);\n"
        "    precise double tt = t * t;\n"
        "    precise double p = fma(tt, q, t);\n"
        "    precise double pc = fma(c, p, p + c);\n" /* (1 + p)(1 + c) - 1 */
        "    return pc;\n"
        "}\n",
    [H_M_EXP] =
        "double qd_exp_f64(double x) {\n"
        "    if (isnan(x)) {\n"
        "        return x;\n"
        "    }\n"
        "    if (x > 709.782712893384lf) {\n"
        "        return packDouble2x32(uvec2(0u, 0x7ff00000u));\n"
        "    }\n"
        "    if (x < -745.2lf) {\n"
        "        return 0.0lf;\n"
        "    }\n"
        "    double k;\n"
        "    precise double p = qd_expcore_f64(x, 0.0lf, k);\n"
        "    precise double m = 1.0lf + p;\n"
        "    return qd_scale_f64(m, int(k));\n"
        "}\n",
    [H_M_EXPM1] =
        /* e^x - 1 for 0 <= x <= 50: 2^k (p + (1 - 2^-k)) */
        "double qd_expm1_f64(double x) {\n"
        "    double k;\n"
        "    precise double p = qd_expcore_f64(x, 0.0lf, k);\n"
        "    if (k == 0.0lf) {\n"
        "        return p;\n"
        "    }\n"
        "    precise double y = p + (1.0lf - qd_pow2_f64(-int(k)));\n"
        "    return qd_scale_f64(y, int(k));\n"
        "}\n",
    [H_M_TANH] =
        "double qd_tanh_f64(double x) {\n"
        "    if (isnan(x) || x == 0.0lf) {\n"
        "        return x;\n"
        "    }\n"
        "    double a = abs(x);\n"
        "    if (a > 22.0lf) {\n"
        "        return sign(x);\n"
        "    }\n"
        "    precise double m = qd_expm1_f64(2.0lf * a);\n"
        "    precise double d = m + 2.0lf;\n"
        /* the rounding error of m + 2, exactly (the larger operand first) */
        "    precise double dl = m > 2.0lf ? (m - d) + 2.0lf : (2.0lf - d) + m;\n"
        "    precise double t = qd_div_f64(m, d);\n"
        "    t -= t * (dl / d);\n" /* m / (d + dl) */
        "    return x < 0.0lf ? -t : t;\n"
        "}\n",
    [H_M_LOGDD] =
        /* log x = hi + lo (returns hi) for finite x > 0 */
        "double qd_logdd_f64(double x, out double lo) {\n"
        "    precise double v = x;\n"
        "    int e = 0;\n"
        "    if (v < 2.2250738585072014e-308lf) {\n"
        "        v *= 18014398509481984.0lf;\n" /* 2^54 */
        "        e = -54;\n"
        "    }\n"
        "    uvec2 w = unpackDouble2x32(v);\n"
        "    e += int(w.y >> 20) - 1023;\n"
        "    w.y = (w.y & 0xfffffu) | 0x3ff00000u;\n"
        "    precise double m = packDouble2x32(w);\n"
        "    if (m > 1.4142135623730951lf) {\n"
        "        m *= 0.5lf;\n"
        "        e += 1;\n"
        "    }\n"
        "    precise double f = m - 1.0lf;\n"
        "    precise double u = 2.0lf + f;\n"
        "    precise double ul = f - (u - 2.0lf);\n"
        "    precise double s = qd_div_f64(f, u);\n"
        "    precise double pl, zl, s3l, tl;\n"
        "    precise double p = qd_mul2_f64(s, u, pl);\n"
        "    precise double sl = (((f - p) - pl) - s * ul) / u;\n"
        "    precise double z = qd_mul2_f64(s, s, zl);\n"
        "    zl += 2.0lf * s * sl;\n"
        "    precise double q = 0.07407407407407407lf;\n" /* 2/27 */
        "    q = fma(q, z, 0.08lf);\n"
        "    q = fma(q, z, 0.08695652173913043lf);\n"
        "    q = fma(q, z, 0.09523809523809523lf);\n"
        "    q = fma(q, z, 0.10526315789473684lf);\n"
        "    q = fma(q, z, 0.11764705882352941lf);\n"
        "    q = fma(q, z, 0.13333333333333333lf);\n"
        "    q = fma(q, z, 0.15384615384615385lf);\n"
        "    q = fma(q, z, 0.18181818181818182lf);\n"
        "    q = fma(q, z, 0.2222222222222222lf);\n"
        "    q = fma(q, z, 0.2857142857142857lf);\n"
        "    q = fma(q, z, 0.4lf);\n"
        "    q *= z;\n"
        "    precise double c = 0.6666666666666666lf + q;\n" /* 2/3 + q in dd */
        "    precise double cl = ((0.6666666666666666lf - c) + q) + 3.700743415417188e-17lf;\n"
        "    precise double s3 = qd_mul2_f64(z, s, s3l);\n"
        "    s3l += zl * s + z * sl;\n"
        "    precise double t = qd_mul2_f64(s3, c, tl);\n"
        "    tl += s3 * cl + s3l * c;\n"
        "    precise double a = 2.0lf * s;\n" /* log m = 2s + t */
        "    precise double h = a + t;\n"
        "    precise double hl = ((a - h) + t) + (2.0lf * sl + tl);\n"
        "    precise double de = double(e);\n"
        "    precise double b = de * 0.6931471803691238lf;\n" /* exact */
        "    precise double sum = b + h;\n"
        "    precise double bb = sum - b;\n"
        "    precise double err = (b - (sum - bb)) + (h - bb);\n"
        "    precise double l = err + (hl + de * 1.9082149292705877e-10lf);\n"
        "    precise double r = sum + l;\n"
        "    precise double rl = l - (r - sum);\n"
        "    lo = rl;\n"
        "    return r;\n"
        "}\n",
    [H_M_LOG] =
        "double qd_log_f64(double x) {\n"
        "    if (isnan(x) || isinf(x) && x > 0.0lf) {\n"
        "        return x;\n"
        "    }\n"
        "    if (x < 0.0lf) {\n"
        "        return packDouble2x32(uvec2(0u, 0x7ff80000u));\n"
        "    }\n"
        "    if (x == 0.0lf) {\n"
        "        return packDouble2x32(uvec2(0u, 0xfff00000u));\n"
        "    }\n"
        "    double lo;\n"
        "    return qd_logdd_f64(x, lo);\n"
        "}\n",
    [H_M_POW] =
        "double qd_pow_f64(double x, double y) {\n"
        "    if (y == 0.0lf || x == 1.0lf) {\n"
        "        return 1.0lf;\n"
        "    }\n"
        "    if (isnan(x) || isnan(y)) {\n"
        "        return x + y;\n"
        "    }\n"
        "    double inf = packDouble2x32(uvec2(0u, 0x7ff00000u));\n"
        "    double ax = abs(x);\n"
        "    if (isinf(y)) {\n"
        "        return ax == 1.0lf ? 1.0lf : (ax > 1.0lf) == (y > 0.0lf) ? inf : 0.0lf;\n"
        "    }\n"
        "    bool is_int = floor(y) == y;\n"
        "    bool is_odd = is_int && abs(y) < 9007199254740992.0lf && mod(y, 2.0lf) == 1.0lf;\n"
        "    bool neg = (unpackDouble2x32(x).y >> 31) != 0u;\n"
        "    double r;\n"
        "    if (ax == 0.0lf || isinf(ax)) {\n"
        "        r = (ax == 0.0lf) == (y < 0.0lf) ? inf : 0.0lf;\n"
        "    } else if (neg && !is_int) {\n"
        "        return packDouble2x32(uvec2(0u, 0x7ff80000u));\n"
        "    } else if (ax == 1.0lf) {\n" /* x = -1 */
        "        r = 1.0lf;\n"
        "    } else {\n"
        "        double lo;\n"
        "        precise double lh = qd_logdd_f64(ax, lo);\n"
        "        precise double zh = y * lh;\n"
        "        if (zh > 709.79lf) {\n"
        "            r = inf;\n"
        "        } else if (zh < -745.2lf) {\n"
        "            r = 0.0lf;\n"
        "        } else {\n" /* |y| < 2^995 here, as |log x| > 2^-53 */
        "            double k;\n"
        "            precise double zl;\n"
        "            zh = qd_mul2_f64(y, lh, zl);\n"
        "            zl += y * lo;\n"
        "            precise double p = qd_expcore_f64(zh, zl, k);\n"
        "            precise double m = 1.0lf + p;\n"
        "            r = qd_scale_f64(m, int(k));\n"
        "        }\n"
        "    }\n"
        "    return neg && is_odd ? -r : r;\n"
        "}\n",
    [H_M_FDIV32] = NULL, /* glsl_math_trig.c: depends on float64 */
};

/* Correctly rounded f32 division and sqrt: through double (exact for float operands once
 * the double result is within an ulp, as the refinement makes it), else a float correction
 * step where the residual and 1 / b are normal (correctly rounded in nearly all cases). */
static const char fdiv_double_text[] =
    "float qd_fdiv_f32(float a, float b) {\n"
    "    return float(qd_div_f64(double(a), double(b)));\n"
    "}\n";

static const char fdiv_float_text[] =
    /* q * b = p + pl exactly by Veltkamp splitting (fma need not be fused) */
    "float qd_fmul2_f32(float a, float b, out float lo) {\n"
    "    precise float p = a * b;\n"
    "    precise float ca = 4097.0 * a;\n"
    "    precise float ah = ca - (ca - a);\n"
    "    precise float al = a - ah;\n"
    "    precise float cb = 4097.0 * b;\n"
    "    precise float bh = cb - (cb - b);\n"
    "    precise float bl = b - bh;\n"
    "    precise float e = (((ah * bh - p) + ah * bl) + al * bh) + al * bl;\n"
    "    lo = e;\n"
    "    return p;\n"
    "}\n\n"
    "float qd_fdiv_f32(float a, float b) {\n"
    "    precise float q = a / b;\n"
    "    float m = abs(b);\n"
    "    if (!(m >= 1.0e-30 && m <= 1.0e30 && abs(q) >= 1.0e-30 && abs(q) <= 1.0e30 &&\n"
    "          abs(a) >= 1.0e-20)) {\n"
    "        return q;\n"
    "    }\n"
    "    precise float pl;\n"
    "    precise float p = qd_fmul2_f32(q, b, pl);\n"
    "    precise float c = q + ((a - p) - pl) * (1.0 / b);\n"
    "    return c;\n"
    "}\n";

static const char fsqrt_double_text[] =
    "float qd_fsqrt_f32(float x) {\n"
    "    return float(qd_sqrt_f64(double(x)));\n"
    "}\n";

static const char fsqrt_float_text[] =
    "float qd_fsqrt_f32(float x) {\n"
    "    precise float s = sqrt(x);\n"
    "    if (!(s >= 1.0e-15 && s <= 1.0e15)) {\n"
    "        return s;\n"
    "    }\n"
    "    precise float pl;\n"
    "    precise float p = qd_fmul2_f32(s, s, pl);\n"
    "    precise float c = s + ((x - p) - pl) * (0.5 / s);\n"
    "    return c;\n"
    "}\n";

/* double -> f16 through float rounded to odd (float keeps 13 more bits than f16, so rounding
 * that to f16 gives the correctly rounded result); a plain conversion may round twice. */
static const char d2h_text[] =
    "float16_t qd_d2h_f64(double d) {\n"
    "    float f = float(d);\n"
    "    uint b = floatBitsToUint(f);\n"
    "    if (!isinf(f) && !isnan(f) && double(f) != d && (b & 1u) == 0u) {\n"
    "        b = abs(double(f)) > abs(d) ? b - 1u : b + 1u;\n"
    "    }\n"
    "    return float16_t(uintBitsToFloat(b));\n"
    "}\n";

/* The helpers each one calls (earlier in GlslHelper's order). */
static const GlslHelper math_deps[][4] = {
    [H_M_DIV] = {H_M_MUL2},
    [H_M_SQRT] = {H_M_MUL2},
    [H_M_EXP] = {H_M_SCALE, H_M_EXPCORE},
    [H_M_EXPM1] = {H_M_SCALE, H_M_EXPCORE},
    [H_M_TANH] = {H_M_EXPM1, H_M_DIV},
    [H_M_LOGDD] = {H_M_MUL2, H_M_DIV},
    [H_M_LOG] = {H_M_LOGDD},
    [H_M_POW] = {H_M_MUL2, H_M_LOGDD, H_M_EXPCORE, H_M_SCALE},
    [H_M_REDUCE] = {H_M_MUL2},
    [H_M_COSK] = {H_M_MUL2},
    [H_M_SIN] = {H_M_REDUCE, H_M_SINK, H_M_COSK},
    [H_M_COS] = {H_M_REDUCE, H_M_SINK, H_M_COSK},
    [H_M_TAN] = {H_M_REDUCE, H_M_SINK, H_M_COSK, H_M_DIV},
    [H_M_ATAN] = {H_M_DIV},
    [H_M_ATAN2] = {H_M_ATAN},
    [H_M_ASIN] = {H_M_MUL2, H_M_ATAN2, H_M_SQRT},
    [H_M_ACOS] = {H_M_MUL2, H_M_ATAN2, H_M_SQRT},
    [H_M_FDIV32] = {H_M_DIV}, /* these two: only with float64 */
    [H_M_FSQRT32] = {H_M_SQRT},
    [H_COUNT] = {0},
};

/* Whether helper h exists only where the device has float64. */
static bool
needs_float64(GlslHelper h)
{
    return h != H_M_FDIV32 && h != H_M_FSQRT32;
}

const char *
qd_glsl_math(Emitter *e, GlslHelper h)
{
    static const char *const names[] = {
        [H_M_MUL2] = "mul2", [H_M_SCALE] = "scale", [H_M_DIV] = "div",       [H_M_SQRT] = "sqrt",
        [H_M_EXPCORE] = "expcore", [H_M_EXP] = "exp",   [H_M_EXPM1] = "expm1",
        [H_M_TANH] = "tanh",   [H_M_LOGDD] = "logdd",   [H_M_LOG] = "log",
        [H_M_POW] = "pow",     [H_M_REDUCE] = "reduce", [H_M_SINK] = "sink",
        [H_M_COSK] = "cosk",   [H_M_SIN] = "sin",       [H_M_COS] = "cos",
        [H_M_TAN] = "tan",     [H_M_ATAN] = "atan",     [H_M_ATAN2] = "atan2",
        [H_M_ASIN] = "asin",   [H_M_ACOS] = "acos",     [H_M_FDIV32] = "fdiv",
        [H_M_FSQRT32] = "fsqrt", [H_M_D2H] = "d2h",
    };
    QD_ASSERT(h >= H_M_MUL2 && h < H_COUNT, "not a math helper");
    e->helpers[h][QD_TY_F64][QD_TY_F64] = true;
    if (needs_float64(h) || e->opts->features.float64) {
        for (int i = 0; i < 4 && math_deps[h][i] != 0; i++) {
            qd_glsl_math(e, math_deps[h][i]);
        }
    } else if (h == H_M_FSQRT32) {
        qd_glsl_math(e, H_M_FDIV32); /* for qd_fmul2_f32 */
    }
    return qd_glsl_str(e, "qd_%s_%s", names[h], needs_float64(h) ? "f64" : "f32");
}

void
qd_glsl_write_math(Emitter *e, QdSbuf *out, GlslHelper h)
{
    const char *text;
    switch (h) {
    case H_M_FDIV32:
        text = e->opts->features.float64 ? fdiv_double_text : fdiv_float_text;
        break;
    case H_M_FSQRT32:
        text = e->opts->features.float64 ? fsqrt_double_text : fsqrt_float_text;
        break;
    case H_M_D2H:
        text = d2h_text;
        break;
    default:
        text = h < H_M_REDUCE ? math_text[h] : qd_glsl_trig_text(h);
        break;
    }
    qd_sbuf_puts(out, text);
}

const char *
qd_glsl_math_call(Emitter *e, GlslHelper h, QdTypeKind k, const char *a, const char *b)
{
    const char *name = qd_glsl_math(e, h);
    const char *t = qd_glsl_type(e, k);
    if (k == QD_TY_F64) {
        return b ? qd_glsl_str(e, "%s(%s, %s)", name, a, b) : qd_glsl_str(e, "%s(%s)", name, a);
    }
    if (b) {
        return qd_glsl_str(e, "%s(%s(double(%s), double(%s)))", t, name, a, b);
    }
    return qd_glsl_str(e, "%s(%s(double(%s)))", t, name, a);
}

const char *
qd_glsl_fdiv(Emitter *e, QdTypeKind k, const char *a, const char *b)
{
    switch (k) {
    case QD_TY_F64:
        return qd_glsl_str(e, "%s(%s, %s)", qd_glsl_math(e, H_M_DIV), a, b);
    case QD_TY_F32:
        return qd_glsl_str(e, "%s(%s, %s)", qd_glsl_math(e, H_M_FDIV32), a, b);
    default: /* f16: through the f32 division (rounding twice, to f32 then to f16, is exact as
              * f32 has more than twice f16's precision); NVIDIA's float16_t division is not */
        return qd_glsl_str(e, "float16_t(%s(float(%s), float(%s)))", qd_glsl_math(e, H_M_FDIV32),
                           a, b);
    }
}

const char *
qd_glsl_sqrt(Emitter *e, QdTypeKind k, const char *a)
{
    switch (k) {
    case QD_TY_F64:
        return qd_glsl_str(e, "%s(%s)", qd_glsl_math(e, H_M_SQRT), a);
    case QD_TY_F32:
        return qd_glsl_str(e, "%s(%s)", qd_glsl_math(e, H_M_FSQRT32), a);
    default:
        return qd_glsl_str(e, "float16_t(%s(float(%s)))", qd_glsl_math(e, H_M_FSQRT32), a);
    }
}
