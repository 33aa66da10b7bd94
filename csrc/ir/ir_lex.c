/* ir/ir_lex.c -- tokens of the textual IR.
 *
 * Hand-written and on demand (lex_next fills lx->tok). Every path checks the input length, so any
 * byte sequence is safe to feed it: unknown characters, unterminated strings and oversized
 * numbers become T_ERROR with a diag naming the line and column. Locations (`@file.py:3:7`) are
 * not regular tokens: file names contain characters no other token allows, so the parser asks
 * for one explicitly with lex_location where an instruction may end.
 */
#include "parse.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
lex_init(Lexer *lx, QdCtx *ctx, QdArena *arena, const char *filename, const char *text, size_t len)
{
    memset(lx, 0, sizeof(*lx));
    lx->ctx = ctx;
    lx->arena = arena;
    lx->filename = filename;
    lx->text = text;
    lx->len = len;
    lx->line = 1;
    lex_next(lx);
}

int
lex_error(Lexer *lx, const Token *tok, const char *fmt, ...)
{
    QdLoc loc = {lx->filename, tok->line, tok->col};
    va_list ap;
    va_start(ap, fmt);
    qd_verror(lx->ctx, loc, QD_ERR_SYNTAX, fmt, ap);
    va_end(ap);
    return -1;
}

static bool
is_ident_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool
is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool
is_ident_char(char c)
{
    return is_ident_start(c) || is_digit(c) || c == '.';
}

static int
hex_value(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

static void
set_error(Lexer *lx, const char *msg)
{
    lex_error(lx, &lx->tok, "%s", msg);
    lx->tok.kind = T_ERROR;
}

/* Decodes a "..." string starting at lx->pos (the opening quote). */
static void
lex_string(Lexer *lx)
{
    const char *s = lx->text;
    size_t i = lx->pos + 1;
    /* The decoded text is never longer than the quoted one: find its end first. */
    size_t end = i;
    while (end < lx->len && s[end] != '"' && s[end] != '\n') {
        end += (s[end] == '\\' && end + 1 < lx->len) ? 2 : 1;
    }
    char *out = qd_arena_alloc(lx->arena, end - i + 1);
    size_t n = 0;
    if (!out) {
        set_error(lx, "out of memory");
        return;
    }
    for (;;) {
        if (i >= lx->len || s[i] == '\n') {
            set_error(lx, "unterminated string");
            return;
        }
        char c = s[i++];
        if (c == '"') {
            break;
        }
        if (c != '\\') {
            out[n++] = c;
            continue;
        }
        if (i >= lx->len) {
            set_error(lx, "unterminated string");
            return;
        }
        char e = s[i++];
        switch (e) {
        case 'n':
            out[n++] = '\n';
            break;
        case 't':
            out[n++] = '\t';
            break;
        case '\\':
            out[n++] = '\\';
            break;
        case '"':
            out[n++] = '"';
            break;
        case 'x': {
            int hi = i < lx->len ? hex_value(s[i]) : -1;
            int lo = i + 1 < lx->len ? hex_value(s[i + 1]) : -1;
            if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
                set_error(lx, "bad \\x escape in string (two hex digits, not 00)");
                return;
            }
            out[n++] = (char)(hi * 16 + lo);
            i += 2;
            break;
        }
        default:
            set_error(lx, "unknown escape in string");
            return;
        }
    }
    out[n] = '\0';
    lx->tok.str = out;
    lx->tok.len = i - lx->pos;
    lx->pos = i;
}

static void
lex_number(Lexer *lx)
{
    const char *s = lx->text;
    size_t i = lx->pos;
    Token *t = &lx->tok;
    if (s[i] == '0' && i + 1 < lx->len && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
        i += 2;
        uint64_t v = 0;
        size_t start = i;
        for (; i < lx->len && hex_value(s[i]) >= 0; i++) {
            if (v >> 60) {
                set_error(lx, "integer literal too large");
                return;
            }
            v = v * 16 + (uint64_t)hex_value(s[i]);
        }
        if (i == start) {
            set_error(lx, "bad hex literal");
            return;
        }
        t->kind = T_INT;
        t->ival = v;
        lx->pos = i;
        return;
    }
    size_t start = i;
    while (i < lx->len && is_digit(s[i])) {
        i++;
    }
    bool is_float = false;
    if (i < lx->len && s[i] == '.' && i + 1 < lx->len && is_digit(s[i + 1])) {
        is_float = true;
        i++;
        while (i < lx->len && is_digit(s[i])) {
            i++;
        }
    }
    if (i < lx->len && (s[i] == 'e' || s[i] == 'E')) {
        size_t j = i + 1;
        if (j < lx->len && (s[j] == '+' || s[j] == '-')) {
            j++;
        }
        if (j < lx->len && is_digit(s[j])) {
            is_float = true;
            i = j;
            while (i < lx->len && is_digit(s[i])) {
                i++;
            }
        }
    }
    if (i < lx->len && is_ident_start(s[i])) {
        set_error(lx, "bad number");
        return;
    }
    char buf[64];
    if (i - start >= sizeof(buf)) {
        set_error(lx, "number literal too long");
        return;
    }
    memcpy(buf, s + start, i - start);
    buf[i - start] = '\0';
    if (is_float) {
        t->kind = T_FLOAT;
        t->fval = strtod(buf, NULL);
    } else {
        uint64_t v = 0;
        for (size_t k = start; k < i; k++) {
            uint64_t d = (uint64_t)(s[k] - '0');
            if (v > (UINT64_MAX - d) / 10) {
                set_error(lx, "integer literal too large");
                return;
            }
            v = v * 10 + d;
        }
        t->kind = T_INT;
        t->ival = v;
    }
    lx->pos = i;
}

void
lex_next(Lexer *lx)
{
    const char *s = lx->text;
    Token *t = &lx->tok;
    if (t->kind == T_ERROR && lx->pos > 0) {
        return; /* sticky: the parser stops at the first error */
    }
    while (lx->pos < lx->len && (s[lx->pos] == ' ' || s[lx->pos] == '\t' || s[lx->pos] == '\r')) {
        lx->pos++;
    }
    memset(t, 0, sizeof(*t));
    t->text = s + lx->pos;
    t->line = lx->line;
    t->col = (uint32_t)(lx->pos - lx->line_start + 1);
    if (lx->pos >= lx->len) {
        t->kind = T_EOF;
        return;
    }
    char c = s[lx->pos];
    size_t start = lx->pos;
    if (c == '\n') {
        t->kind = T_NEWLINE;
        lx->pos++;
        lx->line++;
        lx->line_start = lx->pos;
    } else if (c == '#') {
        while (lx->pos < lx->len && s[lx->pos] != '\n') {
            lx->pos++;
        }
        size_t end = lx->pos;
        while (end > start && (s[end - 1] == ' ' || s[end - 1] == '\t' || s[end - 1] == '\r')) {
            end--;
        }
        t->kind = T_COMMENT;
        t->len = end - start;
    } else if (is_ident_start(c)) {
        while (lx->pos < lx->len && is_ident_char(s[lx->pos])) {
            lx->pos++;
        }
        t->kind = T_IDENT;
        t->len = lx->pos - start;
    } else if (is_digit(c)) {
        lex_number(lx);
        t->len = lx->pos - start;
    } else if (c == '%' && lx->pos + 1 < lx->len && is_ident_char(s[lx->pos + 1])) {
        lx->pos++;
        while (lx->pos < lx->len && is_ident_char(s[lx->pos])) {
            lx->pos++;
        }
        t->kind = T_VALUE;
        t->text = s + start + 1;
        t->len = lx->pos - start - 1;
    } else if (c == '@') {
        if (lx->pos + 1 < lx->len && s[lx->pos + 1] == '"') {
            lx->pos++;
            lex_string(lx);
            if (t->kind != T_ERROR) {
                t->kind = T_GLOBAL;
            }
        } else {
            lx->pos++;
            while (lx->pos < lx->len && is_ident_char(s[lx->pos])) {
                lx->pos++;
            }
            if (lx->pos == start + 1) {
                /* Not a name: only a location (`@/path/file.py:1:2`) may follow. */
                t->kind = T_PUNCT;
                t->punct = '@';
                return;
            }
            t->kind = T_GLOBAL;
            t->str = qd_arena_strndup(lx->arena, s + start + 1, lx->pos - start - 1);
        }
    } else if (c == '"') {
        t->kind = T_STRING;
        lex_string(lx);
    } else if (c == '-' && lx->pos + 1 < lx->len && s[lx->pos + 1] == '>') {
        t->kind = T_ARROW;
        lx->pos += 2;
    } else if ((c == '<' || c == '=') && lx->pos + 1 < lx->len && s[lx->pos + 1] == c) {
        /* `<<` and `==` of compile-time expressions */
        t->kind = T_PUNCT;
        t->punct = c == '<' ? QD_CEXPR_SHL : QD_CEXPR_EQ;
        lx->pos += 2;
    } else if (strchr("(){}<>[],:=+-*/%", c) && c != '\0') {
        t->kind = T_PUNCT;
        t->punct = c;
        lx->pos++;
    } else {
        t->kind = T_ERROR;
        if ((unsigned char)c >= 32 && (unsigned char)c < 127) {
            lex_error(lx, t, "unexpected character '%c'", c);
        } else {
            lex_error(lx, t, "unexpected byte 0x%02x", (unsigned char)c);
        }
    }
}

/* Reads decimal digits at text[*i] into *out (1 .. 2^32-1). */
static bool
read_u32(const Lexer *lx, size_t *i, uint32_t *out)
{
    uint64_t v = 0;
    size_t start = *i;
    while (*i < lx->len && is_digit(lx->text[*i])) {
        v = v * 10 + (uint64_t)(lx->text[*i] - '0');
        if (v > UINT32_MAX) {
            return false;
        }
        (*i)++;
    }
    *out = (uint32_t)v;
    return *i > start;
}

int
lex_location(Lexer *lx, QdStrtab *strtab, QdLoc *loc)
{
    Token at = lx->tok;
    size_t i = (size_t)(at.text - lx->text) + 1; /* past '@' */
    const char *s = lx->text;
    const char *file;
    if (i < lx->len && s[i] == '"') {
        lx->pos = i;
        lex_string(lx);
        if (lx->tok.kind == T_ERROR) {
            return -1;
        }
        file = qd_strtab_intern_cstr(strtab, lx->tok.str);
        i = lx->pos;
    } else {
        /* The file name runs to the last two ':'-separated numbers before whitespace. */
        size_t end = i;
        while (end < lx->len && s[end] != ' ' && s[end] != '\t' && s[end] != '\n' &&
               s[end] != '\r' && s[end] != '#') {
            end++;
        }
        size_t colons = 0, k = end;
        while (k > i && colons < 2) {
            k--;
            if (s[k] == ':') {
                colons++;
            }
        }
        if (colons < 2 || k == i) {
            return lex_error(lx, &at, "bad location (expected @file:line:col)");
        }
        file = qd_strtab_intern(strtab, s + i, k - i);
        i = k;
    }
    if (!file) {
        return lex_error(lx, &at, "out of memory");
    }
    uint32_t line = 0, col = 0;
    if (i >= lx->len || s[i] != ':' || (++i, !read_u32(lx, &i, &line)) || i >= lx->len ||
        s[i] != ':' || (++i, !read_u32(lx, &i, &col))) {
        lx->tok.kind = T_ERROR;
        return lex_error(lx, &at, "bad location (expected @file:line:col)");
    }
    if (i < lx->len && is_ident_char(s[i])) {
        lx->tok.kind = T_ERROR;
        return lex_error(lx, &at, "bad location (expected @file:line:col)");
    }
    loc->file = file;
    loc->line = line;
    loc->col = col;
    lx->pos = i;
    lx->tok.kind = T_NEWLINE; /* any non-error kind: lex_next must not treat it as sticky */
    lex_next(lx);
    return 0;
}
