/* ir/parse.h -- internal interface between the QIR lexer (ir_lex.c) and parser (ir_parse.c).
 *
 * The lexer is on demand: the parser asks for one token at a time and may copy the whole Lexer
 * to look further ahead and come back. Newlines and comments are tokens, because QIR is
 * line-oriented (one instruction per line) and comments are kept in the IR.
 */
#ifndef QD_IR_PARSE_H
#define QD_IR_PARSE_H

#include "ir.h"

typedef enum TokKind {
    T_EOF,     /* end of input */
    T_NEWLINE, /* '\n' */
    T_COMMENT, /* '#' to the end of the line: text (without the newline) */
    T_IDENT,   /* [A-Za-z_][A-Za-z0-9_.]*: text */
    T_INT,     /* decimal or 0x hex digits: ival */
    T_FLOAT,   /* digits with '.' or an exponent: fval */
    T_STRING,  /* "...": str (decoded, NUL-terminated, arena-owned) */
    T_VALUE,   /* %name: text/len of the name without '%' */
    T_GLOBAL,  /* @name or @"...": str (decoded name) */
    T_PUNCT,   /* one of ( ) { } < > [ ] , : = + - * / %: punct */
    T_ARROW,   /* -> */
    T_ERROR,   /* bad input; the lexer has recorded a diag */
} TokKind;

typedef struct Token {
    TokKind kind;      /* what it is */
    const char *text;  /* start in the input */
    size_t len;        /* length in the input (T_VALUE: of the name) */
    uint32_t line;     /* 1-based line of the first character */
    uint32_t col;      /* 1-based column of the first character */
    char punct;        /* T_PUNCT: the character */
    uint64_t ival;     /* T_INT: the value (saturates: overflow is an error) */
    double fval;       /* T_FLOAT: the value */
    const char *str;   /* T_STRING, T_GLOBAL: decoded text */
} Token;

typedef struct Lexer {
    QdCtx *ctx;           /* where errors go */
    QdArena *arena;       /* where decoded strings go */
    const char *filename; /* for error locations */
    const char *text;     /* input */
    size_t len;           /* input length */
    size_t pos;           /* next character */
    uint32_t line;        /* line of text[pos] */
    size_t line_start;    /* offset of that line's first character */
    Token tok;            /* the current token */
} Lexer;

void lex_init(Lexer *lx, QdCtx *ctx, QdArena *arena, const char *filename, const char *text,
              size_t len);
/* Advances to the next token (lx->tok). */
void lex_next(Lexer *lx);
/* Re-reads from the start of the current token as a location `@file:line:col` (file quoted
 * when needed); fills loc and advances past it. -1 with a diag when malformed. */
int lex_location(Lexer *lx, QdStrtab *strtab, QdLoc *loc);
/* Records a syntax error at a token; returns -1. */
int lex_error(Lexer *lx, const Token *tok, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif /* QD_IR_PARSE_H */
