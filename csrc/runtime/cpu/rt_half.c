/* runtime/cpu/rt_half.c -- half and bfloat16 conversions, and the runtime's JIT symbol table.
 *
 * LLVM computes f16 / bf16 arithmetic in f32 and rounds back; on CPUs without conversion
 * instructions for a direction (always f64 -> f16 and f32 -> bf16 on x86 without AVX512-BF16)
 * it calls the compiler-rt / libgcc helpers __truncsfhf2, __truncdfhf2, __truncsfbf2, ...
 * Whether the host process has them depends on what it loaded, so the runtime defines its own
 * and hands them to the JIT (qd_cpu_runtime_symbols). Their ABI passes a half or a bfloat16 in
 * the low 16 bits of a floating-point register (x86-64 since LLVM 15/17, AArch64): C functions
 * that take or return a `float` whose low 16 bits are the value match it exactly, without the
 * non-standard _Float16 type. Other targets get no helpers (LLVM then needs the process's).
 *
 * The conversions round to nearest, ties to even, handle subnormals, overflow to infinity and
 * keep NaN a (quiet) NaN; the Python layer uses them to pack and unpack f16 / bf16 values.
 */
#include "cpu.h"

#include <math.h>
#include <string.h>

/***** conversions *****/

/* x rounded to a binary format with `mant_bits` fraction bits, exponent bias `bias` and 16 bits
 * in all (binary16: 10, 15; bfloat16: 7, 127). */
static uint16_t
narrow_float(double x, int mant_bits, int bias)
{
    uint64_t b;
    memcpy(&b, &x, sizeof(b));
    uint16_t sign = (uint16_t)((b >> 63) << 15);
    int exp = (int)((b >> 52) & 0x7ff);
    uint64_t man = b & ((UINT64_C(1) << 52) - 1);
    uint16_t inf = (uint16_t)(((1u << (15 - mant_bits)) - 1) << mant_bits);

    if (exp == 0x7ff) {
        return sign | inf | (man ? (uint16_t)(1u << (mant_bits - 1)) : 0);
    }
    if (exp == 0 && man == 0) {
        return sign;
    }
    /* |x| = sig * 2^e2 exactly; e is the exponent of its leading bit */
    uint64_t sig = exp ? man | (UINT64_C(1) << 52) : man;
    int e2 = exp ? exp - 1075 : -1074;
    int e = e2 + (63 - __builtin_clzll(sig));
    int emin = 1 - bias;
    if (e > bias) {
        return sign | inf;
    }
    /* m = |x| in units of the target's last place (normal, or the subnormal one) */
    int ulp = (e >= emin ? e : emin) - mant_bits;
    int shift = ulp - e2;
    uint64_t m;
    if (shift <= 0) {
        m = sig << -shift;
    } else if (shift > 60) {
        m = 0; /* below half the smallest subnormal */
    } else {
        uint64_t rest = sig & ((UINT64_C(1) << shift) - 1);
        uint64_t half = UINT64_C(1) << (shift - 1);
        m = sig >> shift;
        m += rest > half || (rest == half && (m & 1));
    }
    if (e < emin) {
        return sign | (uint16_t)m; /* subnormal; m == 1 << mant_bits is the smallest normal */
    }
    /* A carry out of the fraction (m == 2 << mant_bits) bumps the exponent, up to infinity. */
    return sign |
           (uint16_t)(((uint64_t)(e + bias) << mant_bits) + (m - (UINT64_C(1) << mant_bits)));
}

uint16_t
qd_cpu_f16_from_double(double x)
{
    return narrow_float(x, 10, 15);
}

uint16_t
qd_cpu_bf16_from_double(double x)
{
    return narrow_float(x, 7, 127);
}

double
qd_cpu_f16_to_double(uint16_t bits)
{
    double sign = bits & 0x8000 ? -1.0 : 1.0;
    int exp = (bits >> 10) & 0x1f;
    int man = bits & 0x3ff;
    if (exp == 0x1f) {
        return man ? (double)NAN : sign * (double)INFINITY;
    }
    if (exp == 0) {
        return sign * ldexp(man, -24);
    }
    return sign * ldexp(1024 + man, exp - 25);
}

double
qd_cpu_bf16_to_double(uint16_t bits)
{
    uint32_t wide = (uint32_t)bits << 16;
    float f;
    memcpy(&f, &wide, sizeof(f));
    return f;
}

/***** libcall helpers (see the file comment for the register convention) *****/

#if defined(__x86_64__) || defined(__aarch64__)
#define HAVE_HALF_HELPERS 1

static float
half_in_float(uint16_t h)
{
    uint32_t wide = h;
    float f;
    memcpy(&f, &wide, sizeof(f));
    return f;
}

static uint16_t
half_of_float(float f)
{
    uint32_t wide;
    memcpy(&wide, &f, sizeof(wide));
    return (uint16_t)wide;
}

static float
rt_truncsfhf2(float x)
{
    return half_in_float(qd_cpu_f16_from_double(x));
}

static float
rt_truncdfhf2(double x)
{
    return half_in_float(qd_cpu_f16_from_double(x));
}

static float
rt_extendhfsf2(float h)
{
    return (float)qd_cpu_f16_to_double(half_of_float(h));
}

static float
rt_truncsfbf2(float x)
{
    return half_in_float(qd_cpu_bf16_from_double(x));
}

static float
rt_truncdfbf2(double x)
{
    return half_in_float(qd_cpu_bf16_from_double(x));
}
#endif

/***** the runtime's symbols *****/

typedef void (*AnyFunction)(void);

static const QdCpuSymbol runtime_symbols[] = {
    {"qd_rt_print", (AnyFunction)qd_rt_print},
    {"qd_rt_assert_fail", (AnyFunction)qd_rt_assert_fail},
    {"qd_rt_assert_fail_fmt", (AnyFunction)qd_rt_assert_fail_fmt},
    {"qd_simt_geom", (AnyFunction)qd_simt_geom},
    {"qd_simt_block_sync", (AnyFunction)qd_simt_block_sync},
    {"qd_simt_block_sync_pred", (AnyFunction)qd_simt_block_sync_pred},
    {"qd_simt_subgroup_sync", (AnyFunction)qd_simt_subgroup_sync},
    {"qd_simt_shuffle", (AnyFunction)qd_simt_shuffle},
    {"qd_simt_ballot", (AnyFunction)qd_simt_ballot},
    {"qd_simt_match_any", (AnyFunction)qd_simt_match_any},
    {"qd_simt_shared", (AnyFunction)qd_simt_shared},
    {"qd_simt_mma", (AnyFunction)qd_simt_mma},
#ifdef HAVE_HALF_HELPERS
    {"__truncsfhf2", (AnyFunction)rt_truncsfhf2},
    {"__truncdfhf2", (AnyFunction)rt_truncdfhf2},
    {"__extendhfsf2", (AnyFunction)rt_extendhfsf2},
    {"__truncsfbf2", (AnyFunction)rt_truncsfbf2},
    {"__truncdfbf2", (AnyFunction)rt_truncdfbf2},
#endif
};

const QdCpuSymbol *
qd_cpu_runtime_symbols(uint32_t *count)
{
    *count = (uint32_t)QD_ARRAY_LEN(runtime_symbols);
    return runtime_symbols;
}
