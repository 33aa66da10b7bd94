/* codegen/glsl/glsl_math_trig.c -- the GLSL text of the double trigonometric helpers.
 *
 * sin, cos, tan reduce x by multiples of pi/2 (qd_reduce_f64) and evaluate Taylor
 * polynomials on |r| <= pi/4 with the low part of r folded in; atan reduces to |t| <= 0.2;
 * atan2, asin and acos are built on atan. glsl_math.c describes the methods and emits the
 * helpers; this file only holds their text.
 */
#include "glsl_internal.h"

/* pi/2 = P1 + P2 + P3, each the nearest double to what remains (to about 2^-160). */
#define P1 "1.5707963267948966lf"
#define P2 "6.123233995736766e-17lf"
#define P3 "-1.4973849048591698e-33lf"

static const char reduce_text[] =
    /* one step: x + xl = k pi/2 + r + rl; x - k P1 is exact (fma), k P2 in dd */
    "double qd_reduce_step_f64(double x, double xl, out double r, out double rl) {\n"
    "    precise double k = floor(x * 0.6366197723675814lf + 0.5lf);\n"
    "    double f = abs(k) > 1.0e300lf ? 1.8446744073709552e19lf : 1.0lf;\n" /* 2^64 */
    "    precise double pl, tl;\n"
    "    precise double p = qd_mul2_f64(k / f, " P1 ", pl) * f;\n"
    "    precise double t = qd_mul2_f64(k / f, " P2 ", tl) * f;\n"
    "    pl *= f;\n"
    "    tl *= f;\n"
    "    precise double a = x - p;\n" /* exact */
    "    precise double u = a - pl;\n" /* a - pl - t in dd */
    "    precise double ub = u - a;\n"
    "    precise double e1 = (a - (u - ub)) + (-pl - ub);\n"
    "    precise double s = u - t;\n"
    "    precise double sb = s - u;\n"
    "    precise double e2 = (u - (s - sb)) + (-t - sb);\n"
    "    precise double l = (((e1 + e2) - tl) - k * " P3 ") + xl;\n"
    "    precise double h = s + l;\n"
    "    precise double hb = h - s;\n"
    "    precise double hl = (s - (h - hb)) + (l - hb);\n"
    "    rl = hl;\n"
    "    r = h;\n"
    "    return k;\n"
    "}\n\n"
    /* x = n pi/2 + r + rl with |r| <= ~pi/4; returns n mod 4 */
    "double qd_reduce_f64(double x, out double r, out double rl) {\n"
    "    r = x;\n"
    "    rl = 0.0lf;\n"
    "    double n = 0.0lf;\n"
    "    for (int i = 0; i < 24 && abs(r) > 0.785398lf; i++) {\n"
    "        double k = qd_reduce_step_f64(r, rl, r, rl);\n"
    "        if (k == 0.0lf) {\n"
    "            break;\n"
    "        }\n"
    "        n = mod(n + mod(k, 4.0lf), 4.0lf);\n"
    "    }\n"
    "    return n;\n"
    "}\n";

static const char sin_k_text[] =
    /* sin(r + rl), |r| <= ~pi/4 */
    "double qd_sink_f64(double r, double rl) {\n"
    "    precise double z = r * r;\n"
    "    precise double p = 2.8114572543455206e-15lf;\n"
    "    p = fma(p, z, -7.647163731819816e-13lf);\n"
    "    p = fma(p, z, 1.6059043836821613e-10lf);\n"
    "    p = fma(p, z, -2.505210838544172e-08lf);\n"
    "    p = fma(p, z, 2.7557319223985893e-06lf);\n"
    "    p = fma(p, z, -0.0001984126984126984lf);\n"
    "    p = fma(p, z, 0.008333333333333333lf);\n"
    "    p = fma(p, z, -0.16666666666666666lf);\n"
    "    precise double rz = r * z;\n"
    "    precise double c = fma(rz, p, rl * fma(-0.5lf, z, 1.0lf));\n"
    "    precise double s = r + c;\n"
    "    return s;\n"
    "}\n";

static const char cos_k_text[] =
    /* cos(r + rl), |r| <= ~pi/4: w = 1 - r^2/2 and its rounding error recovered */
    "double qd_cosk_f64(double r, double rl) {\n"
    "    double zl;\n"
    "    precise double z = qd_mul2_f64(r, r, zl);\n"
    "    precise double p = -1.5619206968586225e-16lf;\n"
    "    p = fma(p, z, 4.779477332387385e-14lf);\n"
    "    p = fma(p, z, -1.1470745597729725e-11lf);\n"
    "    p = fma(p, z, 2.08767569878681e-09lf);\n"
    "    p = fma(p, z, -2.755731922398589e-07lf);\n"
    "    p = fma(p, z, 2.48015873015873e-05lf);\n"
    "    p = fma(p, z, -0.001388888888888889lf);\n"
    "    p = fma(p, z, 0.041666666666666664lf);\n"
    "    precise double hz = 0.5lf * z;\n"
    "    precise double w = 1.0lf - hz;\n"
    "    precise double c = ((1.0lf - w) - hz) + (z * z * p - (r * rl + 0.5lf * zl));\n"
    "    precise double v = w + c;\n"
    "    return v;\n"
    "}\n";

/* sin(x), cos(x), tan(x): x itself below 2^-27 (also -0 and subnormals), NaN for inf. */
#define TRIG_HEAD(name, small)                                                                 \
    "double qd_" name "_f64(double x) {\n"                                                     \
    "    if (abs(x) < 7.450580596923828e-09lf) {\n"                                            \
    "        return " small ";\n"                                                              \
    "    }\n"                                                                                  \
    "    if (isinf(x) || isnan(x)) {\n"                                                        \
    "        return packDouble2x32(uvec2(0u, 0x7ff80000u));\n"                                 \
    "    }\n"                                                                                  \
    "    double r, rl;\n"                                                                      \
    "    double n = qd_reduce_f64(x, r, rl);\n"

static const char sin_text[] =
    TRIG_HEAD("sin", "x")
    "    precise double v = n == 0.0lf || n == 2.0lf ? qd_sink_f64(r, rl) : qd_cosk_f64(r, rl);\n"
    "    return n >= 2.0lf ? -v : v;\n"
    "}\n";

static const char cos_text[] =
    TRIG_HEAD("cos", "1.0lf")
    "    precise double v = n == 0.0lf || n == 2.0lf ? qd_cosk_f64(r, rl) : qd_sink_f64(r, rl);\n"
    "    return n == 1.0lf || n == 2.0lf ? -v : v;\n"
    "}\n";

static const char tan_text[] =
    TRIG_HEAD("tan", "x")
    "    precise double s = qd_sink_f64(r, rl);\n"
    "    precise double c = qd_cosk_f64(r, rl);\n"
    "    return n == 1.0lf || n == 3.0lf ? qd_div_f64(-c, s) : qd_div_f64(s, c);\n"
    "}\n";

static const char atan_text[] =
    "double qd_atan_f64(double x) {\n"
    "    double a = abs(x);\n"
    "    if (!(a >= 7.450580596923828e-09lf)) {\n" /* also NaN */
    "        return x;\n"
    "    }\n"
    "    if (a > 1.0e17lf) {\n"
    "        return x > 0.0lf ? 1.5707963267948966lf : -1.5707963267948966lf;\n"
    "    }\n"
    "    precise double t;\n"
    "    double ch = 0.0lf, cl = 0.0lf;\n" /* atan(c) in dd */
    "    if (a < 0.2lf) {\n"
    "        t = a;\n"
    "    } else if (a < 0.45lf) {\n"
    "        t = qd_div_f64(a - 0.3125lf, fma(a, 0.3125lf, 1.0lf));\n"
    "        ch = 0.3028848683749714lf;\n"
    "        cl = -1.1010827903001369e-17lf;\n"
    "    } else if (a < 0.75lf) {\n"
    "        t = qd_div_f64(a - 0.59375lf, fma(a, 0.59375lf, 1.0lf));\n"
    "        ch = 0.5358112379604637lf;\n"
    "        cl = -4.0637956834825575e-18lf;\n"
    "    } else if (a < 1.3lf) {\n"
    "        t = qd_div_f64(a - 1.0lf, a + 1.0lf);\n"
    "        ch = 0.7853981633974483lf;\n"
    "        cl = 3.061616997868383e-17lf;\n"
    "    } else if (a < 2.5lf) {\n"
    "        t = qd_div_f64(a - 1.75lf, fma(a, 1.75lf, 1.0lf));\n"
    "        ch = 1.0516502125483738lf;\n"
    "        cl = -9.650564731467514e-17lf;\n"
    "    } else if (a < 5.0lf) {\n"
    "        t = qd_div_f64(a - 3.5lf, fma(a, 3.5lf, 1.0lf));\n"
    "        ch = 1.2924966677897853lf;\n"
    "        cl = -6.83080476892666e-17lf;\n"
    "    } else {\n"
    "        t = qd_div_f64(-1.0lf, a);\n"
    "        ch = 1.5707963267948966lf;\n"
    "        cl = 6.123233995736766e-17lf;\n"
    "    }\n"
    "    precise double z = t * t;\n"
    "    precise double q = -0.043478260869565216lf;\n"
    "    q = fma(q, z, 0.047619047619047616lf);\n"
    "    q = fma(q, z, -0.05263157894736842lf);\n"
    "    q = fma(q, z, 0.058823529411764705lf);\n"
    "    q = fma(q, z, -0.06666666666666667lf);\n"
    "    q = fma(q, z, 0.07692307692307693lf);\n"
    "    q = fma(q, z, -0.09090909090909091lf);\n"
    "    q = fma(q, z, 0.1111111111111111lf);\n"
    "    q = fma(q, z, -0.14285714285714285lf);\n"
    "    q = fma(q, z, 0.2lf);\n"
    "    q = fma(q, z, -0.3333333333333333lf);\n"
    "    precise double tz = t * z;\n"
    "    precise double v = ch + (t + fma(tz, q, cl));\n"
    "    return x < 0.0lf ? -v : v;\n"
    "}\n";

static const char atan2_text[] =
    "double qd_atan2_f64(double y, double x) {\n"
    "    if (isnan(x) || isnan(y)) {\n"
    "        return x + y;\n"
    "    }\n"
    "    bool yneg = (unpackDouble2x32(y).y >> 31) != 0u;\n"
    "    bool xneg = (unpackDouble2x32(x).y >> 31) != 0u;\n"
    "    precise double ay = abs(y), ax = abs(x);\n"
    "    precise double v;\n"
    "    if (isinf(ax) && isinf(ay)) {\n"
    "        v = xneg ? 2.356194490192345lf : 0.7853981633974483lf;\n"
    "    } else if (ay == 0.0lf || isinf(ax)) {\n"
    "        v = xneg ? 3.141592653589793lf : 0.0lf;\n"
    "    } else if (ax == 0.0lf || isinf(ay)) {\n"
    "        v = 1.5707963267948966lf;\n"
    "    } else {\n"
    "        if (max(ax, ay) < 1.0e-290lf) {\n" /* keep 1 / ax finite: scale by 2^600 */
    "            ax *= 4.149515568880993e180lf;\n"
    "            ay *= 4.149515568880993e180lf;\n"
    "        }\n"
    "        if (ay <= ax) {\n"
    "            precise double a = qd_atan_f64(qd_div_f64(ay, ax));\n"
    "            v = xneg ? (3.141592653589793lf - a) + 1.2246467991473532e-16lf : a;\n"
    "        } else {\n"
    "            precise double a = qd_atan_f64(qd_div_f64(ax, ay));\n"
    "            v = xneg ? (1.5707963267948966lf + a) + 6.123233995736766e-17lf\n"
    "                     : (1.5707963267948966lf - a) + 6.123233995736766e-17lf;\n"
    "        }\n"
    "    }\n"
    "    return yneg ? -v : v;\n"
    "}\n";

static const char asin_text[] =
    "double qd_asin_f64(double x) {\n"
    "    precise double pl;\n"
    "    precise double p = qd_mul2_f64(x, x, pl);\n"
    "    precise double w = (1.0lf - p) - pl;\n"
    "    return qd_atan2_f64(x, qd_sqrt_f64(w));\n"
    "}\n";

static const char acos_text[] =
    "double qd_acos_f64(double x) {\n"
    "    precise double pl;\n"
    "    precise double p = qd_mul2_f64(x, x, pl);\n"
    "    precise double w = (1.0lf - p) - pl;\n"
    "    return qd_atan2_f64(qd_sqrt_f64(w), x);\n"
    "}\n";

const char *
qd_glsl_trig_text(GlslHelper h)
{
    switch (h) {
    case H_M_REDUCE:
        return reduce_text;
    case H_M_SINK:
        return sin_k_text;
    case H_M_COSK:
        return cos_k_text;
    case H_M_SIN:
        return sin_text;
    case H_M_COS:
        return cos_text;
    case H_M_TAN:
        return tan_text;
    case H_M_ATAN:
        return atan_text;
    case H_M_ATAN2:
        return atan2_text;
    case H_M_ASIN:
        return asin_text;
    case H_M_ACOS:
        return acos_text;
    default:
        return NULL;
    }
}
