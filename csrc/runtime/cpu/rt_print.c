/* runtime/cpu/rt_print.c -- `print` and `assert` of generated code.
 *
 * print: the code generator passes the format, one kind letter per argument and the values as
 * 64-bit slots (codegen.h). Each conversion of the format is re-issued to snprintf with the
 * length modifier and the argument type it asks for (%d gets a long long, %f a double, ...),
 * so a mismatch between a format and its value prints a converted number instead of reading
 * the wrong register. The whole line is built first, then written under stdout's lock and
 * flushed, so prints of concurrent threads never interleave within a call. Nothing here may
 * crash on a bad format: anything it does not understand is copied out as written.
 *
 * assert: the first failing assert of a launch wins the compare-and-swap on
 * ctx->assert_failed and stores its message (formatted like print when the assert carries
 * values); the launcher raises after the task.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* flockfile */
#endif
#include "cpu.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* A double converted to long long without undefined behaviour (saturating, NaN -> 0). */
static long long
double_to_ll(double x)
{
    if (isnan(x)) {
        return 0;
    }
    if (x >= 9223372036854775807.0) {
        return INT64_MAX;
    }
    if (x <= -9223372036854775808.0) {
        return INT64_MIN;
    }
    return (long long)x;
}

/* Appends one conversion `spec` (flags, width and precision already in it; the caller adds
 * the length modifier and the letter) for the argument of kind `kind` and bits `bits`. */
static void
format_one(QdSbuf *sb, char *spec, size_t len, char conversion, char kind, uint64_t bits)
{
    double d;
    memcpy(&d, &bits, sizeof(d));
    if (strchr("fFeEgGaA", conversion) != NULL) {
        double v = kind == 'f' ? d : kind == 'i' ? (double)(int64_t)bits : (double)bits;
        spec[len] = conversion;
        spec[len + 1] = '\0';
        qd_sbuf_printf(sb, spec, v);
        return;
    }
    long long v = kind == 'f' ? double_to_ll(d) : (long long)bits;
    if (conversion == 'c') {
        spec[len] = 'c';
        spec[len + 1] = '\0';
        qd_sbuf_printf(sb, spec, (int)(unsigned char)v);
        return;
    }
    spec[len] = 'l';
    spec[len + 1] = 'l';
    spec[len + 2] = conversion;
    spec[len + 3] = '\0';
    if (conversion == 'd' || conversion == 'i') {
        qd_sbuf_printf(sb, spec, v);
    } else {
        qd_sbuf_printf(sb, spec, (unsigned long long)v);
    }
}

/* Formats like printf into sb, with the argument conversions described above. */
static void
format_values(QdSbuf *sb_out, const char *format, const char *kinds, const uint64_t *values,
              int32_t n)
{
    QdSbuf sb = *sb_out;
    int32_t next = 0;

    for (const char *p = format; *p != '\0';) {
        if (*p != '%') {
            size_t run = strcspn(p, "%");
            qd_sbuf_putn(&sb, p, run);
            p += run;
            continue;
        }
        if (p[1] == '%') {
            qd_sbuf_putc(&sb, '%');
            p += 2;
            continue;
        }
        /* %[flags][width][.precision][length]conversion */
        const char *start = p++;
        p += strspn(p, "-+ #0");
        p += strspn(p, "0123456789");
        if (*p == '.') {
            p++;
            p += strspn(p, "0123456789");
        }
        size_t spec_len = (size_t)(p - start);
        p += strspn(p, "hlzjtLq");
        char conversion = *p;
        char spec[64];
        if (conversion == '\0' || strchr("diouxXcfFeEgGaA", conversion) == NULL || next >= n ||
            spec_len + 4 > sizeof(spec)) {
            /* not ours to format: copy it as written */
            size_t len = conversion == '\0' ? (size_t)(p - start) : (size_t)(p - start) + 1;
            qd_sbuf_putn(&sb, start, len);
            p = start + len;
            continue;
        }
        memcpy(spec, start, spec_len);
        format_one(&sb, spec, spec_len, conversion, kinds[next], values[next]);
        next++;
        p++;
    }
    *sb_out = sb;
}

void
qd_rt_print(const char *format, const char *kinds, const uint64_t *values, int32_t n)
{
    QdSbuf sb;
    qd_sbuf_init(&sb);
    format_values(&sb, format, kinds, values, n);
    if (!sb.failed && sb.len > 0) {
        flockfile(stdout);
        fwrite(sb.data, 1, sb.len, stdout);
        fflush(stdout);
        funlockfile(stdout);
    }
    qd_sbuf_free(&sb);
}

void
qd_rt_assert_fail_fmt(struct QdLaunchCtx *ctx, const char *format, const char *kinds,
                      const uint64_t *values, int32_t n)
{
    QdSbuf sb;
    qd_sbuf_init(&sb);
    format_values(&sb, format, kinds, values, n);
    qd_rt_assert_fail(ctx, sb.failed || !sb.data ? format : sb.data);
    qd_sbuf_free(&sb);
}

void
qd_rt_assert_fail(struct QdLaunchCtx *ctx, const char *message)
{
    int32_t expected = 0;
    if (__atomic_compare_exchange_n(&ctx->assert_failed, &expected, 1, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
        snprintf(ctx->assert_message, sizeof(ctx->assert_message), "%s", message);
    }
}
