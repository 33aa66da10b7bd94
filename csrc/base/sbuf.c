/* base/sbuf.c -- a growable string builder for printers and dumps.
 *
 * Text is kept NUL-terminated after every call. Allocation failure is sticky: later calls do
 * nothing and qd_sbuf_take returns NULL, so a printer checks once at the end.
 */
#include "base.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
qd_sbuf_init(QdSbuf *sb)
{
    memset(sb, 0, sizeof(*sb));
}

void
qd_sbuf_free(QdSbuf *sb)
{
    free(sb->data);
    qd_sbuf_init(sb);
}

static bool
sbuf_reserve(QdSbuf *sb, size_t extra)
{
    if (sb->failed) {
        return false;
    }
    if (sb->len + extra + 1 <= sb->cap) {
        return true;
    }
    size_t cap = sb->cap ? sb->cap : 256;
    while (cap < sb->len + extra + 1) {
        cap *= 2;
    }
    char *p = realloc(sb->data, cap);
    if (!p) {
        sb->failed = true;
        return false;
    }
    sb->data = p;
    sb->cap = cap;
    return true;
}

void
qd_sbuf_putn(QdSbuf *sb, const char *s, size_t n)
{
    if (!sbuf_reserve(sb, n)) {
        return;
    }
    memcpy(sb->data + sb->len, s, n);
    sb->len += n;
    sb->data[sb->len] = '\0';
}

void
qd_sbuf_putc(QdSbuf *sb, char c)
{
    qd_sbuf_putn(sb, &c, 1);
}

void
qd_sbuf_puts(QdSbuf *sb, const char *s)
{
    qd_sbuf_putn(sb, s, strlen(s));
}

void
qd_sbuf_printf(QdSbuf *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !sbuf_reserve(sb, (size_t)n)) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb->len += (size_t)n;
}

void
qd_sbuf_pad_to(QdSbuf *sb, size_t column)
{
    size_t start = sb->len;
    while (start > 0 && sb->data[start - 1] != '\n') {
        start--;
    }
    size_t cur = sb->len - start;
    while (cur < column) {
        qd_sbuf_putc(sb, ' ');
        cur++;
    }
}

char *
qd_sbuf_take(QdSbuf *sb)
{
    if (sb->failed) {
        qd_sbuf_free(sb);
        return NULL;
    }
    if (!sb->data) {
        sbuf_reserve(sb, 0);
        if (sb->failed) {
            return NULL;
        }
        sb->data[0] = '\0';
    }
    char *p = sb->data;
    qd_sbuf_init(sb);
    return p;
}
