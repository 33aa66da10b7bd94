/* ir/ir_parse.c -- reads the textual IR (docs/ir.md) into a QdModule; the inverse of ir_print.c.
 *
 * Recursive descent over the tokens of ir_lex.c, one function per construct: module ->
 * declaration (field, kernel, func, template) -> region -> instruction -> operands, types and
 * compile-time expressions. The parser checks syntax and name binding only; typing rules and
 * dominance are the verifier's job (ir_verify.c), so a value may be used before the line that
 * defines it and the verifier reports that with the offending line.
 *
 * Comments are kept: full-line comments attach to the declaration, instruction or closing brace
 * that follows them, and a comment at the end of an instruction line stays with it. Every
 * instruction, function and field records the line it came from (text_line) for the verifier's
 * messages. Bad input of any kind gives a QD_ERR_SYNTAX diag, never a crash; nesting depth is
 * bounded so that hostile input cannot exhaust the stack.
 */
#include "parse.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define MAX_DEPTH 200

/* Binding of a value name in the function being parsed. */
typedef struct NameSlot {
    const char *name; /* interned; NULL = empty slot */
    uint32_t id;      /* value id */
    bool defined;     /* false while only used (forward reference) */
    uint32_t line;    /* first use, for "undefined value" errors */
    uint32_t col;
} NameSlot;

typedef struct Parser {
    QdCtx *ctx;           /* where errors go */
    Lexer lx;             /* token source */
    QdModule *m;          /* module being built */
    QdFunc *f;            /* function being parsed, or NULL */
    NameSlot *names;      /* value names of f (open addressing on the interned pointer) */
    uint32_t names_cap;   /* slots, a power of two */
    uint32_t names_count; /* bound names */
    int depth;            /* nesting depth of regions and expressions */
} Parser;

#define TOK (&p->lx.tok)

typedef QdVec(uint32_t) IdVec;

static int
perror_at(Parser *p, const Token *tok, const char *what)
{
    if (tok->kind == T_ERROR) {
        return -1; /* the lexer has reported it */
    }
    return lex_error(&p->lx, tok, "%s", what);
}

static bool
is_punct(Parser *p, char c)
{
    return TOK->kind == T_PUNCT && TOK->punct == c;
}

static bool
is_ident(Parser *p, const char *word)
{
    return TOK->kind == T_IDENT && TOK->len == strlen(word) && memcmp(TOK->text, word, TOK->len) == 0;
}

static int
expect_punct(Parser *p, char c)
{
    if (!is_punct(p, c)) {
        char msg[32];
        snprintf(msg, sizeof(msg), "expected '%c'", c);
        return perror_at(p, TOK, msg);
    }
    lex_next(&p->lx);
    return 0;
}

static int
expect_ident(Parser *p, const char *word)
{
    if (!is_ident(p, word)) {
        char msg[64];
        snprintf(msg, sizeof(msg), "expected '%s'", word);
        return perror_at(p, TOK, msg);
    }
    lex_next(&p->lx);
    return 0;
}

static const char *
intern_tok(Parser *p, const Token *t)
{
    return qd_strtab_intern(&p->m->strtab, t->text, t->len);
}

static QdLoc
tok_loc(Parser *p, const Token *t)
{
    QdLoc loc = {p->lx.filename, t->line, t->col};
    return loc;
}

/***** value names *****/

static NameSlot *
name_slot(Parser *p, const char *name)
{
    if ((p->names_count + 1) * 2 > p->names_cap) {
        uint32_t cap = p->names_cap ? p->names_cap * 2 : 64;
        NameSlot *slots = QD_NEW_ARRAY(&p->m->arena, NameSlot, cap);
        if (!slots) {
            return NULL;
        }
        for (uint32_t i = 0; i < p->names_cap; i++) {
            if (p->names[i].name) {
                uint32_t j = (uint32_t)((uintptr_t)p->names[i].name >> 4) & (cap - 1);
                while (slots[j].name) {
                    j = (j + 1) & (cap - 1);
                }
                slots[j] = p->names[i];
            }
        }
        p->names = slots;
        p->names_cap = cap;
    }
    uint32_t j = (uint32_t)((uintptr_t)name >> 4) & (p->names_cap - 1);
    while (p->names[j].name && p->names[j].name != name) {
        j = (j + 1) & (p->names_cap - 1);
    }
    return &p->names[j];
}

/* The id of a used value name (a forward reference creates it, still undefined). */
static int
use_value(Parser *p, const Token *t, uint32_t *id)
{
    const char *name = intern_tok(p, t);
    NameSlot *slot = name ? name_slot(p, name) : NULL;
    if (!slot) {
        return perror_at(p, t, "out of memory");
    }
    if (!slot->name) {
        uint32_t v = qd_value_new(p->f, NULL, name);
        if (v == QD_NO_VALUE) {
            return perror_at(p, t, "out of memory");
        }
        *slot = (NameSlot){name, v, false, t->line, t->col};
        p->names_count++;
    }
    *id = slot->id;
    return 0;
}

/* Binds a defined name; type may be filled in later by the caller through f->values. */
static int
define_value(Parser *p, const Token *t, const QdType *type, QdInst *def, uint32_t *id)
{
    const char *name = intern_tok(p, t);
    NameSlot *slot = name ? name_slot(p, name) : NULL;
    if (!slot) {
        return perror_at(p, t, "out of memory");
    }
    if (slot->name && slot->defined) {
        char msg[160];
        snprintf(msg, sizeof(msg), "redefinition of %%%.*s", (int)(t->len > 100 ? 100 : t->len),
                 t->text);
        return perror_at(p, t, msg);
    }
    if (!slot->name) {
        uint32_t v = qd_value_new(p->f, type, name);
        if (v == QD_NO_VALUE) {
            return perror_at(p, t, "out of memory");
        }
        *slot = (NameSlot){name, v, true, t->line, t->col};
        p->names_count++;
    } else {
        slot->defined = true;
        p->f->values[slot->id].type = type;
    }
    p->f->values[slot->id].def = def;
    *id = slot->id;
    return 0;
}

static int
check_all_defined(Parser *p)
{
    for (uint32_t i = 0; i < p->names_cap; i++) {
        NameSlot *s = &p->names[i];
        if (s->name && !s->defined) {
            Token t = {.line = s->line, .col = s->col};
            char msg[160];
            snprintf(msg, sizeof(msg), "undefined value %%%.100s", s->name);
            return perror_at(p, &t, msg);
        }
    }
    return 0;
}

/***** compile-time expressions *****/

static const QdTParam *
find_tparam(Parser *p, const Token *t)
{
    if (!p->f || t->kind != T_IDENT) {
        return NULL;
    }
    for (uint32_t i = 0; i < p->f->ntparams; i++) {
        const char *n = p->f->tparams[i].name;
        if (strlen(n) == t->len && memcmp(n, t->text, t->len) == 0) {
            return &p->f->tparams[i];
        }
    }
    return NULL;
}

static QdCexpr *parse_cexpr(Parser *p);

static QdCexpr *
parse_cexpr_primary(Parser *p)
{
    Token t = *TOK;
    if (t.kind == T_INT) {
        if (t.ival > INT64_MAX) {
            perror_at(p, &t, "integer too large for a compile-time expression");
            return NULL;
        }
        lex_next(&p->lx);
        return qd_cexpr_int(p->m, (int64_t)t.ival);
    }
    if (t.kind == T_IDENT) {
        const QdTParam *tp = find_tparam(p, &t);
        if (!tp || tp->kind != QD_TPARAM_INT) {
            perror_at(p, &t, "expected an integer template parameter");
            return NULL;
        }
        lex_next(&p->lx);
        return qd_cexpr_param(p->m, tp->name);
    }
    if (t.kind == T_VALUE) {
        uint32_t id = 0;
        if (use_value(p, &t, &id) < 0) {
            return NULL;
        }
        lex_next(&p->lx);
        return qd_cexpr_var(p->m, id);
    }
    if (t.kind == T_PUNCT && t.punct == '(') {
        lex_next(&p->lx);
        QdCexpr *e = parse_cexpr(p);
        if (!e || expect_punct(p, ')') < 0) {
            return NULL;
        }
        return e;
    }
    if (t.kind == T_PUNCT && t.punct == '-') {
        lex_next(&p->lx);
        if (TOK->kind == T_INT && TOK->ival <= (uint64_t)INT64_MAX) {
            int64_t v = -(int64_t)TOK->ival;
            lex_next(&p->lx);
            return qd_cexpr_int(p->m, v);
        }
        QdCexpr *e = parse_cexpr_primary(p);
        return e ? qd_cexpr_binop(p->m, '-', qd_cexpr_int(p->m, 0), e) : NULL;
    }
    perror_at(p, &t, "expected a compile-time integer expression");
    return NULL;
}

/* The operators of binding strength `level` and tighter (qd_cexpr_prec), left-associative. */
static QdCexpr *
parse_cexpr_level(Parser *p, int level)
{
    if (level > QD_CEXPR_TIGHTEST) {
        return parse_cexpr_primary(p);
    }
    QdCexpr *e = parse_cexpr_level(p, level + 1);
    while (e && TOK->kind == T_PUNCT && qd_cexpr_prec(TOK->punct) == level) {
        char op = TOK->punct;
        lex_next(&p->lx);
        QdCexpr *rhs = parse_cexpr_level(p, level + 1);
        e = rhs ? qd_cexpr_binop(p->m, op, e, rhs) : NULL;
    }
    return e;
}

static QdCexpr *
parse_cexpr(Parser *p)
{
    if (++p->depth > MAX_DEPTH) {
        perror_at(p, TOK, "expression nested too deeply");
        return NULL;
    }
    QdCexpr *e = parse_cexpr_level(p, 1);
    p->depth--;
    return e;
}

/***** types *****/

static bool
starts_type(Parser *p)
{
    if (is_punct(p, '[')) {
        return true;
    }
    if (TOK->kind != T_IDENT) {
        return false;
    }
    const QdTParam *tp = find_tparam(p, TOK);
    return qd_type_scalar_from_name(TOK->text, TOK->len) != QD_TY_COUNT_ || is_ident(p, "ptr") ||
           is_ident(p, "ndarray") || (tp && qd_tparam_is_type(tp->kind));
}

static const QdType *
parse_type(Parser *p)
{
    Token t = *TOK;
    if (++p->depth > MAX_DEPTH) {
        perror_at(p, &t, "type nested too deeply");
        return NULL;
    }
    const QdType *ty = NULL;
    if (t.kind == T_PUNCT && t.punct == '[') {
        lex_next(&p->lx);
        QdCexpr *count = parse_cexpr(p);
        if (!count || expect_ident(p, "x") < 0) {
            return NULL;
        }
        const QdType *elem = parse_type(p);
        if (!elem || expect_punct(p, ']') < 0) {
            return NULL;
        }
        if (count->kind == QD_CEXPR_INT) {
            if (count->value <= 0 || count->value > INT32_MAX) {
                perror_at(p, &t, "array length must be between 1 and 2^31-1");
                return NULL;
            }
            ty = qd_type_array(p->m, elem, (uint32_t)count->value);
        } else {
            ty = qd_type_array_expr(p->m, elem, count);
        }
    } else if (t.kind == T_IDENT && (is_ident(p, "ptr") || is_ident(p, "ndarray"))) {
        bool is_ptr = is_ident(p, "ptr");
        lex_next(&p->lx);
        if (expect_punct(p, '<') < 0) {
            return NULL;
        }
        const QdType *elem = parse_type(p);
        if (!elem || expect_punct(p, ',') < 0) {
            return NULL;
        }
        if (is_ptr) {
            static const char *const spaces[] = {"global", "shared", "local"};
            int space = -1;
            for (int i = 0; i < 3; i++) {
                if (is_ident(p, spaces[i])) {
                    space = i;
                }
            }
            if (space < 0) {
                perror_at(p, TOK, "expected an address space (global, shared or local)");
                return NULL;
            }
            lex_next(&p->lx);
            ty = qd_type_ptr(p->m, elem, (QdSpace)space);
        } else {
            if (TOK->kind != T_INT || TOK->ival > 16) {
                perror_at(p, TOK, "expected the number of dimensions (0 to 16)");
                return NULL;
            }
            uint32_t ndim = (uint32_t)TOK->ival;
            lex_next(&p->lx);
            ty = qd_type_ndarray(p->m, elem, ndim);
        }
        if (expect_punct(p, '>') < 0) {
            return NULL;
        }
    } else if (t.kind == T_IDENT) {
        QdTypeKind k = qd_type_scalar_from_name(t.text, t.len);
        const QdTParam *tp = find_tparam(p, &t);
        if (k != QD_TY_COUNT_) {
            ty = qd_type_scalar(k);
        } else if (tp && qd_tparam_is_type(tp->kind)) {
            ty = qd_type_param(p->m, tp->name);
        } else {
            char msg[160];
            snprintf(msg, sizeof(msg), "unknown type '%.*s'", (int)(t.len > 100 ? 100 : t.len),
                     t.text);
            perror_at(p, &t, msg);
            return NULL;
        }
        lex_next(&p->lx);
    } else {
        perror_at(p, &t, "expected a type");
        return NULL;
    }
    if (!ty) {
        perror_at(p, &t, "out of memory");
    }
    p->depth--;
    return ty;
}

/***** comments and line ends *****/

/* Collects full-line comments (skipping blank lines) into one '\n'-joined string, or NULL. */
static const char *
collect_comments(Parser *p)
{
    QdSbuf sb;
    qd_sbuf_init(&sb);
    for (;;) {
        if (TOK->kind == T_NEWLINE) {
            lex_next(&p->lx);
        } else if (TOK->kind == T_COMMENT) {
            if (sb.len) {
                qd_sbuf_putc(&sb, '\n');
            }
            qd_sbuf_putn(&sb, TOK->text, TOK->len);
            lex_next(&p->lx);
        } else {
            break;
        }
    }
    const char *out = NULL;
    if (sb.len) {
        out = qd_arena_strndup(&p->m->arena, sb.data, sb.len);
    }
    qd_sbuf_free(&sb);
    return out;
}

/* Optional location and trailing comment, then the end of the line. */
static int
parse_line_end(Parser *p, QdLoc *loc, const char **trailing)
{
    if (TOK->kind == T_GLOBAL || (TOK->text < p->lx.text + p->lx.len && TOK->text[0] == '@' &&
                                  TOK->kind != T_COMMENT)) {
        if (!loc) {
            return perror_at(p, TOK, "no location allowed here");
        }
        RETURN_IF_ERROR(lex_location(&p->lx, &p->m->strtab, loc));
    }
    if (TOK->kind == T_COMMENT) {
        if (!trailing) {
            return perror_at(p, TOK, "no comment allowed here");
        }
        *trailing = qd_arena_strndup(&p->m->arena, TOK->text, TOK->len);
        lex_next(&p->lx);
    }
    if (TOK->kind == T_NEWLINE) {
        lex_next(&p->lx);
        return 0;
    }
    if (TOK->kind == T_EOF) {
        return 0;
    }
    return perror_at(p, TOK, "expected the end of the line");
}

/***** instructions *****/

static int parse_region(Parser *p, QdRegion *r);

static int
lookup_op(Parser *p, const Token *t, QdOp *op)
{
    for (int i = 0; i < QD_OP_COUNT_; i++) {
        const char *text = qd_op_info[i].text;
        if (strlen(text) == t->len && memcmp(text, t->text, t->len) == 0) {
            *op = (QdOp)i;
            return 0;
        }
    }
    char msg[160];
    snprintf(msg, sizeof(msg), "unknown instruction '%.*s'", (int)(t->len > 100 ? 100 : t->len),
             t->text);
    return perror_at(p, t, msg);
}

/* Operand list `%a, %b, ...` (possibly empty); appends to a growing array. */
static int
parse_value_list(Parser *p, IdVec *out, bool leading_comma)
{
    bool first = !leading_comma;
    for (;;) {
        if (!first) {
            if (!is_punct(p, ',')) {
                return 0;
            }
            /* A comma followed by a string or integer belongs to the immediate. */
            Lexer save = p->lx;
            lex_next(&p->lx);
            if (TOK->kind != T_VALUE) {
                p->lx = save;
                return 0;
            }
        } else if (TOK->kind != T_VALUE) {
            return 0;
        }
        first = false;
        uint32_t id = 0;
        RETURN_IF_ERROR(use_value(p, TOK, &id));
        if (qd_vec_push(&p->m->arena, out, id) < 0) {
            return perror_at(p, TOK, "out of memory");
        }
        lex_next(&p->lx);
    }
}

static QdInst *
new_inst(Parser *p, QdOp op, const IdVec *args, const Token *at)
{
    QdInst *inst = qd_inst_new(p->f, op, args ? args->len : 0);
    if (!inst) {
        perror_at(p, at, "out of memory");
        return NULL;
    }
    if (args && args->len) {
        memcpy(inst->args, args->data, sizeof(uint32_t) * args->len);
    }
    inst->text_line = at->line;
    return inst;
}

/* Converts a literal to the constant of a scalar type. */
static int
set_const(Parser *p, const Token *at, QdInst *inst, bool neg, const Token *lit, const QdType *ty)
{
    QdConst *c = &inst->imm.cst;
    bool is_word = lit->kind == T_IDENT;
    if (qd_type_is_float(ty)) {
        double v;
        if (lit->kind == T_FLOAT) {
            v = lit->fval;
        } else if (lit->kind == T_INT) {
            v = (double)lit->ival;
        } else if (is_word && lit->len == 3 && memcmp(lit->text, "inf", 3) == 0) {
            v = INFINITY;
        } else if (is_word && lit->len == 3 && memcmp(lit->text, "nan", 3) == 0 && !neg) {
            v = NAN;
        } else {
            return perror_at(p, lit, "bad float constant");
        }
        v = neg ? -v : v;
        c->f = ty->kind == QD_TY_F32 ? (double)(float)v : v;
        return 0;
    }
    if (!qd_type_is_int(ty)) {
        return perror_at(p, at, "a constant must have a scalar type");
    }
    if (ty->kind == QD_TY_U1 && is_word) {
        bool t = lit->len == 4 && memcmp(lit->text, "true", 4) == 0;
        bool f = lit->len == 5 && memcmp(lit->text, "false", 5) == 0;
        if ((!t && !f) || neg) {
            return perror_at(p, lit, "bad u1 constant (true or false)");
        }
        c->u = t;
        return 0;
    }
    if (lit->kind != T_INT) {
        return perror_at(p, lit, "an integer type needs an integer constant");
    }
    uint32_t bits = qd_type_bits(ty);
    if (qd_type_is_signed(ty)) {
        uint64_t limit = (uint64_t)1 << (bits - 1); /* |min| */
        if ((!neg && lit->ival >= limit) || (neg && lit->ival > limit)) {
            return perror_at(p, lit, "constant out of range of its type");
        }
        c->i = neg ? (int64_t)(0 - lit->ival) : (int64_t)lit->ival;
        return 0;
    }
    if (neg && lit->ival != 0) {
        return perror_at(p, lit, "negative constant of an unsigned type");
    }
    if (bits < 64 && lit->ival >> bits) {
        return perror_at(p, lit, "constant out of range of its type");
    }
    c->u = lit->ival;
    return 0;
}

/* `const LITERAL : T` or, in templates and unrolled code, `const CEXPR : T`. */
static int
parse_const(Parser *p, QdInst *inst, const Token *at, const QdType **type)
{
    bool neg = false;
    Lexer save = p->lx;
    if (is_punct(p, '-')) {
        neg = true;
        lex_next(&p->lx);
    }
    Token lit = *TOK;
    bool literal = lit.kind == T_FLOAT || (lit.kind == T_IDENT && !find_tparam(p, &lit));
    if (lit.kind == T_INT) {
        lex_next(&p->lx);
        literal = is_punct(p, ':');
        p->lx = save;
        if (neg) {
            lex_next(&p->lx);
        }
    }
    if (literal) {
        lex_next(&p->lx);
    } else {
        p->lx = save;
        inst->imm.cst.expr = parse_cexpr(p);
        if (!inst->imm.cst.expr) {
            return -1;
        }
    }
    RETURN_IF_ERROR(expect_punct(p, ':'));
    *type = parse_type(p);
    if (!*type) {
        return -1;
    }
    if (literal && !qd_type_is_generic(*type)) {
        return set_const(p, at, inst, neg, &lit, *type);
    }
    if (literal && lit.kind == T_INT && lit.ival <= (uint64_t)INT64_MAX) {
        /* An integer of a template type: kept as an expression, converted on instantiation. */
        int64_t v = neg ? -(int64_t)lit.ival : (int64_t)lit.ival;
        inst->imm.cst.expr = qd_cexpr_int(p->m, v);
        return inst->imm.cst.expr ? 0 : perror_at(p, &lit, "out of memory");
    }
    if (literal) {
        return perror_at(p, &lit, "a constant of a template type must be an integer expression");
    }
    return 0;
}

/* `@name` or `@name<targs>`, each template argument a type, an integer expression or a
 * function (`@f`, `@g<T>`: a callee itself). */
static int
parse_callee(Parser *p, QdCallee *out, uint32_t depth)
{
    if (TOK->kind != T_GLOBAL) {
        return perror_at(p, TOK, "expected the callee '@name'");
    }
    if (depth > 16) {
        return perror_at(p, TOK, "function arguments nested too deeply");
    }
    QdCallee callee = {0};
    callee.name = qd_intern(p->m, TOK->str);
    lex_next(&p->lx);
    QdVec(const QdType *) types = {0};
    QdVec(QdCexpr *) ints = {0};
    QdVec(QdCallee) funcs = {0};
    QdVec(uint8_t) order = {0};
    QdArena *a = &p->m->arena;
    if (is_punct(p, '<')) {
        lex_next(&p->lx);
        for (;;) {
            if (TOK->kind == T_GLOBAL) {
                QdCallee f;
                RETURN_IF_ERROR(parse_callee(p, &f, depth + 1));
                if (qd_vec_push(a, &funcs, f) < 0 || qd_vec_push(a, &order, QD_TARG_FUNC) < 0) {
                    return -1;
                }
            } else if (starts_type(p)) {
                const QdType *ty = parse_type(p);
                if (!ty || qd_vec_push(a, &types, ty) < 0 ||
                    qd_vec_push(a, &order, QD_TARG_TYPE) < 0) {
                    return -1;
                }
            } else {
                QdCexpr *e = parse_cexpr(p);
                if (!e || qd_vec_push(a, &ints, e) < 0 ||
                    qd_vec_push(a, &order, QD_TARG_INT) < 0) {
                    return -1;
                }
            }
            if (!is_punct(p, ',')) {
                break;
            }
            lex_next(&p->lx);
        }
        RETURN_IF_ERROR(expect_punct(p, '>'));
    }
    callee.type_args = types.data;
    callee.ntype_args = types.len;
    callee.int_args = ints.data;
    callee.nint_args = ints.len;
    callee.func_args = funcs.data;
    callee.nfunc_args = funcs.len;
    callee.args_order = order.data;
    *out = callee;
    return 0;
}

/* `@name<targs>(args)`. */
static int
parse_call(Parser *p, QdInst **out, const Token *at)
{
    QdCallee callee;
    RETURN_IF_ERROR(parse_callee(p, &callee, 0));
    RETURN_IF_ERROR(expect_punct(p, '('));
    IdVec args = {0};
    RETURN_IF_ERROR(parse_value_list(p, &args, false));
    RETURN_IF_ERROR(expect_punct(p, ')'));
    QdInst *inst = new_inst(p, QD_OP_CALL, &args, at);
    if (!inst) {
        return -1;
    }
    inst->imm.call = callee;
    *out = inst;
    return 0;
}

/* A non-negative integer immediate into *out. */
static int
parse_count(Parser *p, int64_t *out)
{
    if (TOK->kind != T_INT || TOK->ival > INT32_MAX) {
        return perror_at(p, TOK, "expected a non-negative integer");
    }
    *out = (int64_t)TOK->ival;
    lex_next(&p->lx);
    return 0;
}

/* `word <int>` after a comma. */
static int
parse_named_count(Parser *p, const char *word, int64_t *out)
{
    RETURN_IF_ERROR(expect_punct(p, ','));
    if (!is_ident(p, word)) {
        return perror_at(p, TOK, strcmp(word, "offset") == 0 ? "expected 'offset'" : "expected 'stride'");
    }
    lex_next(&p->lx);
    return parse_count(p, out);
}

/* The immediate of nn_matvec after its operands:
 * `, col_major 16 x 8, offset 0, stride 16[, bias 256][, transpose][, tensor_cores]`. */
static int
parse_matvec(Parser *p, QdMatvec *mv)
{
    RETURN_IF_ERROR(expect_punct(p, ','));
    mv->layout = QD_MAT_LAYOUT_COUNT_;
    for (int k = 0; k < QD_MAT_LAYOUT_COUNT_; k++) {
        if (is_ident(p, qd_mat_layout_names[k])) {
            mv->layout = (QdMatLayout)k;
        }
    }
    if (mv->layout == QD_MAT_LAYOUT_COUNT_) {
        return perror_at(p, TOK, "expected a matrix layout (row_major, col_major or mma_fragments)");
    }
    lex_next(&p->lx);
    int64_t rows = 0, cols = 0;
    RETURN_IF_ERROR(parse_count(p, &rows));
    if (!is_ident(p, "x")) {
        return perror_at(p, TOK, "expected 'x' between the rows and the columns");
    }
    lex_next(&p->lx);
    RETURN_IF_ERROR(parse_count(p, &cols));
    mv->rows = (uint32_t)rows;
    mv->cols = (uint32_t)cols;
    RETURN_IF_ERROR(parse_named_count(p, "offset", &mv->offset));
    RETURN_IF_ERROR(parse_named_count(p, "stride", &mv->stride));
    while (is_punct(p, ',')) {
        lex_next(&p->lx);
        if (is_ident(p, "bias")) {
            lex_next(&p->lx);
            RETURN_IF_ERROR(parse_count(p, &mv->bias_offset));
        } else if (is_ident(p, "transpose")) {
            lex_next(&p->lx);
            mv->transpose = true;
        } else if (is_ident(p, "tensor_cores")) {
            lex_next(&p->lx);
            mv->tensor_cores = true;
        } else {
            return perror_at(p, TOK, "expected 'bias', 'transpose' or 'tensor_cores'");
        }
    }
    return 0;
}

/* Instructions without regions: `[%r =] op operands [immediates] [: type]`. */
static int
parse_plain(Parser *p, QdOp op, const Token *at, QdInst **out)
{
    const QdOpInfo *info = &qd_op_info[op];
    IdVec args = {0};
    QdInst *inst = NULL;
    const QdType *type = NULL;
    switch (info->imm) {
    case IMM_CONST:
        inst = new_inst(p, op, NULL, at);
        if (!inst || parse_const(p, inst, at, &type) < 0) {
            return -1;
        }
        *out = inst;
        inst->type = type;
        return 0;
    case IMM_CALLEE:
        RETURN_IF_ERROR(parse_call(p, &inst, at));
        break;
    case IMM_FIELD: {
        if (TOK->kind != T_GLOBAL) {
            return perror_at(p, TOK, "expected a field '@name'");
        }
        QdField *fd = qd_module_find_field(p->m, TOK->str);
        if (!fd) {
            return perror_at(p, TOK, "unknown field (fields are declared before their use)");
        }
        lex_next(&p->lx);
        RETURN_IF_ERROR(parse_value_list(p, &args, true));
        inst = new_inst(p, op, &args, at);
        if (!inst) {
            return -1;
        }
        inst->imm.field = fd;
        break;
    }
    case IMM_STRING: {
        const char *str = NULL;
        if (op == QD_OP_ASSERT) {
            /* assert %c, "message"[, %values...] */
            if (TOK->kind != T_VALUE) {
                return perror_at(p, TOK, "expected the condition (a value)");
            }
            uint32_t cond;
            RETURN_IF_ERROR(use_value(p, TOK, &cond));
            lex_next(&p->lx);
            if (qd_vec_push(&p->m->arena, &args, cond) < 0) {
                return perror_at(p, TOK, "out of memory");
            }
            RETURN_IF_ERROR(expect_punct(p, ','));
            if (TOK->kind != T_STRING) {
                return perror_at(p, TOK, "expected a string");
            }
            str = TOK->str;
            lex_next(&p->lx);
            RETURN_IF_ERROR(parse_value_list(p, &args, true));
        } else if (info->nargs < 0) {
            if (TOK->kind != T_STRING) {
                return perror_at(p, TOK, "expected a string");
            }
            str = TOK->str;
            lex_next(&p->lx);
            RETURN_IF_ERROR(parse_value_list(p, &args, true));
        } else {
            RETURN_IF_ERROR(parse_value_list(p, &args, false));
            RETURN_IF_ERROR(expect_punct(p, ','));
            if (TOK->kind != T_STRING) {
                return perror_at(p, TOK, "expected a string");
            }
            str = TOK->str;
            lex_next(&p->lx);
        }
        inst = new_inst(p, op, &args, at);
        if (!inst) {
            return -1;
        }
        inst->imm.str = str;
        break;
    }
    case IMM_INT: {
        RETURN_IF_ERROR(parse_value_list(p, &args, false));
        RETURN_IF_ERROR(expect_punct(p, ','));
        bool neg = is_punct(p, '-');
        if (neg) {
            lex_next(&p->lx);
        }
        if (TOK->kind != T_INT || TOK->ival > INT32_MAX) {
            return perror_at(p, TOK, "expected a small integer");
        }
        int64_t v = neg ? -(int64_t)TOK->ival : (int64_t)TOK->ival;
        lex_next(&p->lx);
        inst = new_inst(p, op, &args, at);
        if (!inst) {
            return -1;
        }
        inst->imm.i = v;
        break;
    }
    case IMM_MATVEC:
        RETURN_IF_ERROR(parse_value_list(p, &args, false));
        inst = new_inst(p, op, &args, at);
        if (!inst) {
            return -1;
        }
        RETURN_IF_ERROR(parse_matvec(p, &inst->imm.matvec));
        inst->imm.matvec.has_bias = inst->nargs == 4;
        break;
    default:
        RETURN_IF_ERROR(parse_value_list(p, &args, false));
        inst = new_inst(p, op, &args, at);
        if (!inst) {
            return -1;
        }
    }
    if (is_punct(p, ':')) {
        lex_next(&p->lx);
        type = parse_type(p);
        if (!type) {
            return -1;
        }
        inst->type = type;
    }
    *out = inst;
    return 0;
}

/* `{` [location] [comment] newline, region, `}`. */
static int
parse_braced_region(Parser *p, QdInst *inst, int which)
{
    RETURN_IF_ERROR(expect_punct(p, '{'));
    if (which == 0) {
        RETURN_IF_ERROR(parse_line_end(p, &inst->loc, &inst->trailing));
    } else if (TOK->kind != T_NEWLINE) {
        return perror_at(p, TOK, "expected a new line after 'else {'");
    } else {
        lex_next(&p->lx);
    }
    RETURN_IF_ERROR(parse_region(p, inst->regions[which]));
    return expect_punct(p, '}');
}

/* Instructions with regions. `result` is the induction variable's token where there is one. */
static int
parse_structured(Parser *p, QdOp op, const Token *at, QdInst **out)
{
    IdVec args = {0};
    QdInst *inst = NULL;
    Token var = {0};
    QdUnroll unroll = {0};
    QdTask task = {0};
    if (op == QD_OP_IF) {
        if (TOK->kind != T_VALUE) {
            return perror_at(p, TOK, "expected the condition (a value)");
        }
        RETURN_IF_ERROR(parse_value_list(p, &args, false));
    } else if (op == QD_OP_FOR || op == QD_OP_PARALLEL_FOR || op == QD_OP_UNROLL) {
        if (TOK->kind != T_VALUE) {
            return perror_at(p, TOK, "expected the loop variable");
        }
        var = *TOK;
        lex_next(&p->lx);
        RETURN_IF_ERROR(expect_punct(p, '='));
        if (op == QD_OP_UNROLL) {
            unroll.lo = parse_cexpr(p);
            if (!unroll.lo || expect_ident(p, "to") < 0) {
                return -1;
            }
            unroll.hi = parse_cexpr(p);
            if (!unroll.hi) {
                return -1;
            }
        } else {
            uint32_t lo, hi;
            if (TOK->kind != T_VALUE || use_value(p, TOK, &lo) < 0) {
                return perror_at(p, TOK, "expected the lower bound (a value)");
            }
            lex_next(&p->lx);
            RETURN_IF_ERROR(expect_ident(p, "to"));
            if (TOK->kind != T_VALUE || use_value(p, TOK, &hi) < 0) {
                return perror_at(p, TOK, "expected the upper bound (a value)");
            }
            lex_next(&p->lx);
            if (qd_vec_push(&p->m->arena, &args, lo) < 0 ||
                qd_vec_push(&p->m->arena, &args, hi) < 0) {
                return perror_at(p, at, "out of memory");
            }
        }
    } else if (op == QD_OP_TASK) {
        if (is_ident(p, "serial")) {
            task.kind = QD_TASK_SERIAL;
        } else if (is_ident(p, "range_for")) {
            task.kind = QD_TASK_RANGE_FOR;
        } else {
            return perror_at(p, TOK, "expected 'serial' or 'range_for'");
        }
        lex_next(&p->lx);
        if (TOK->kind == T_STRING) {
            task.name = qd_intern(p->m, TOK->str);
            lex_next(&p->lx);
        }
        if (is_ident(p, "block_dim")) {
            lex_next(&p->lx);
            if (TOK->kind != T_INT || TOK->ival == 0 || TOK->ival > 65536) {
                return perror_at(p, TOK, "expected a block size from 1 to 65536");
            }
            task.block_dim = (uint32_t)TOK->ival;
            lex_next(&p->lx);
        }
        if (is_ident(p, "min_blocks_per_sm")) {
            lex_next(&p->lx);
            if (TOK->kind != T_INT || TOK->ival == 0 || TOK->ival > 32) {
                return perror_at(p, TOK, "expected a block count from 1 to 32");
            }
            task.min_blocks = (uint32_t)TOK->ival;
            lex_next(&p->lx);
        }
    }
    inst = new_inst(p, op, &args, at);
    if (!inst) {
        return -1;
    }
    inst->imm.unroll = unroll;
    if (op == QD_OP_TASK) {
        inst->imm.task = task;
    }
    if (var.kind == T_VALUE) {
        const QdType *ty = qd_type_scalar(QD_TY_I32);
        if (op != QD_OP_UNROLL && p->f->values[args.data[0]].type) {
            ty = p->f->values[args.data[0]].type;
        }
        RETURN_IF_ERROR(define_value(p, &var, ty, inst, &inst->result));
        inst->type = ty;
    }
    RETURN_IF_ERROR(parse_braced_region(p, inst, 0));
    if (op == QD_OP_IF && is_ident(p, "else")) {
        lex_next(&p->lx);
        RETURN_IF_ERROR(parse_braced_region(p, inst, 1));
    }
    *out = inst;
    if (TOK->kind == T_NEWLINE) {
        lex_next(&p->lx);
        return 0;
    }
    if (TOK->kind == T_EOF) {
        return 0;
    }
    return perror_at(p, TOK, "expected the end of the line after '}'");
}

static int
parse_inst(Parser *p, QdRegion *r, const char *comment)
{
    Token at = *TOK;
    Token result = {0};
    if (TOK->kind == T_VALUE) {
        result = *TOK;
        lex_next(&p->lx);
        RETURN_IF_ERROR(expect_punct(p, '='));
    }
    if (TOK->kind != T_IDENT) {
        return perror_at(p, TOK, "expected an instruction");
    }
    Token mnemonic = *TOK;
    QdOp op = QD_OP_CONST;
    RETURN_IF_ERROR(lookup_op(p, &mnemonic, &op));
    lex_next(&p->lx);
    QdInst *inst = NULL;
    if (qd_op_info[op].nregions > 0) {
        if (result.kind == T_VALUE) {
            return perror_at(p, &result, "this instruction produces no value");
        }
        RETURN_IF_ERROR(parse_structured(p, op, &at, &inst));
    } else {
        RETURN_IF_ERROR(parse_plain(p, op, &at, &inst));
        if (result.kind == T_VALUE) {
            if (!inst->type || inst->type->kind == QD_TY_VOID) {
                return perror_at(p, TOK, "expected ': type' after an instruction with a result");
            }
            RETURN_IF_ERROR(define_value(p, &result, inst->type, inst, &inst->result));
        } else if (inst->type && inst->type->kind != QD_TY_VOID) {
            return perror_at(p, &mnemonic, "a typed instruction needs a result '%name ='");
        }
        RETURN_IF_ERROR(parse_line_end(p, &inst->loc, &inst->trailing));
    }
    inst->comment = comment;
    qd_region_append(r, inst);
    return 0;
}

static int
parse_region(Parser *p, QdRegion *r)
{
    if (++p->depth > MAX_DEPTH) {
        return perror_at(p, TOK, "regions nested too deeply");
    }
    for (;;) {
        const char *comment = collect_comments(p);
        if (is_punct(p, '}')) {
            r->end_comment = comment;
            break;
        }
        if (TOK->kind == T_EOF) {
            return perror_at(p, TOK, "unexpected end of input: missing '}'");
        }
        RETURN_IF_ERROR(parse_inst(p, r, comment));
    }
    p->depth--;
    return 0;
}

/***** declarations *****/

static int
parse_field(Parser *p, const char *comment, const Token *at)
{
    if (TOK->kind != T_GLOBAL) {
        return perror_at(p, TOK, "expected the field name '@name'");
    }
    Token name = *TOK;
    if (qd_module_find_field(p->m, name.str)) {
        return perror_at(p, &name, "field declared twice");
    }
    lex_next(&p->lx);
    RETURN_IF_ERROR(expect_punct(p, ':'));
    const QdType *elem = parse_type(p);
    if (!elem) {
        return -1;
    }
    if (!qd_type_is_scalar(elem)) {
        return perror_at(p, at, "a field's element type must be a scalar");
    }
    RETURN_IF_ERROR(expect_punct(p, '['));
    int64_t shape[16];
    uint32_t ndim = 0;
    while (TOK->kind == T_INT) {
        if (ndim == 16 || TOK->ival == 0 || TOK->ival > QD_FIELD_EXTENT_MAX) {
            return perror_at(p, TOK, "field shape: at most 16 extents from 1 to 2^48");
        }
        shape[ndim++] = (int64_t)TOK->ival;
        lex_next(&p->lx);
        if (!is_punct(p, ',')) {
            break;
        }
        lex_next(&p->lx);
    }
    RETURN_IF_ERROR(expect_punct(p, ']'));
    QdField *fd = qd_field_new(p->m, name.str, elem, ndim, shape);
    if (!fd) {
        return perror_at(p, at, "out of memory");
    }
    fd->comment = comment;
    fd->text_line = at->line;
    return parse_line_end(p, &fd->loc, NULL);
}

static int
parse_tparams(Parser *p, QdFunc *f)
{
    QdVec(QdTParam) tps = {0};
    RETURN_IF_ERROR(expect_punct(p, '<'));
    for (;;) {
        if (TOK->kind != T_IDENT) {
            return perror_at(p, TOK, "expected a template parameter name");
        }
        QdTParam tp = {intern_tok(p, TOK), QD_TPARAM_TYPE};
        for (uint32_t i = 0; i < tps.len; i++) {
            if (tps.data[i].name == tp.name) {
                return perror_at(p, TOK, "template parameter declared twice");
            }
        }
        if (qd_type_scalar_from_name(TOK->text, TOK->len) != QD_TY_COUNT_) {
            return perror_at(p, TOK, "a template parameter can't be named like a type");
        }
        lex_next(&p->lx);
        RETURN_IF_ERROR(expect_punct(p, ':'));
        int kind = -1;
        for (int i = 0; i < QD_TPARAM_COUNT_; i++) {
            if (is_ident(p, qd_tparam_kind_names[i])) {
                kind = i;
            }
        }
        if (kind < 0) {
            return perror_at(p, TOK,
                             "expected a parameter kind: type, float, integral, int or func");
        }
        tp.kind = (QdTParamKind)kind;
        lex_next(&p->lx);
        if (qd_vec_push(&p->m->arena, &tps, tp) < 0) {
            return perror_at(p, TOK, "out of memory");
        }
        if (!is_punct(p, ',')) {
            break;
        }
        lex_next(&p->lx);
    }
    f->tparams = tps.data;
    f->ntparams = tps.len;
    return expect_punct(p, '>');
}

static int
parse_func(Parser *p, QdFuncKind kind, const char *comment, const Token *at)
{
    if (TOK->kind != T_GLOBAL) {
        return perror_at(p, TOK, "expected the function name '@name'");
    }
    if (qd_module_find_func(p->m, TOK->str)) {
        return perror_at(p, TOK, "function defined twice");
    }
    QdFunc *f = qd_func_new(p->m, kind, TOK->str);
    if (!f) {
        return perror_at(p, TOK, "out of memory");
    }
    p->f = f;
    p->names = NULL;
    p->names_cap = p->names_count = 0;
    f->comment = comment;
    f->text_line = at->line;
    lex_next(&p->lx);
    if (kind == QD_FUNC_TEMPLATE && is_punct(p, '<')) {
        /* none: a library routine instantiated (and dropped when unused) like the others */
        RETURN_IF_ERROR(parse_tparams(p, f));
    }
    RETURN_IF_ERROR(expect_punct(p, '('));
    while (TOK->kind == T_VALUE) {
        Token name = *TOK;
        lex_next(&p->lx);
        RETURN_IF_ERROR(expect_punct(p, ':'));
        const QdType *ty = parse_type(p);
        if (!ty) {
            return -1;
        }
        uint32_t id = 0;
        RETURN_IF_ERROR(define_value(p, &name, ty, NULL, &id));
        uint32_t *params = qd_arena_realloc(&p->m->arena, f->params, sizeof(uint32_t) * f->nparams,
                                            sizeof(uint32_t) * (f->nparams + 1));
        if (!params) {
            return perror_at(p, &name, "out of memory");
        }
        f->params = params;
        f->values[id].param = (int32_t)f->nparams;
        f->params[f->nparams++] = id;
        if (!is_punct(p, ',')) {
            break;
        }
        lex_next(&p->lx);
    }
    RETURN_IF_ERROR(expect_punct(p, ')'));
    if (TOK->kind == T_ARROW) {
        lex_next(&p->lx);
        f->ret = parse_type(p);
        if (!f->ret) {
            return -1;
        }
    }
    if (kind != QD_FUNC_KERNEL && is_ident(p, "top_level")) {
        f->top_level = true;
        lex_next(&p->lx);
    }
    RETURN_IF_ERROR(expect_punct(p, '{'));
    RETURN_IF_ERROR(parse_line_end(p, &f->loc, NULL));
    RETURN_IF_ERROR(parse_region(p, f->body));
    RETURN_IF_ERROR(expect_punct(p, '}'));
    if (TOK->kind != T_NEWLINE && TOK->kind != T_EOF) {
        return perror_at(p, TOK, "expected the end of the line after '}'");
    }
    RETURN_IF_ERROR(check_all_defined(p));
    p->f = NULL;
    return 0;
}

/* Parses every declaration of the text into m. 0, or -1 with a diag. */
static int
parse_declarations(QdCtx *ctx, QdModule *m, const char *text, size_t len, const char *filename)
{
    Parser parser = {.ctx = ctx, .m = m};
    Parser *p = &parser;
    const char *file = qd_intern(m, filename ? filename : "<qir>");
    lex_init(&p->lx, ctx, &m->arena, file, text, len);
    for (;;) {
        const char *comment = collect_comments(p);
        Token at = *TOK;
        if (at.kind == T_EOF) {
            m->end_comment = comment;
            return 0;
        }
        int rc;
        if (is_ident(p, "field")) {
            lex_next(&p->lx);
            rc = parse_field(p, comment, &at);
        } else if (is_ident(p, "kernel")) {
            lex_next(&p->lx);
            rc = parse_func(p, QD_FUNC_KERNEL, comment, &at);
        } else if (is_ident(p, "func")) {
            lex_next(&p->lx);
            rc = parse_func(p, QD_FUNC_FUNC, comment, &at);
        } else if (is_ident(p, "template")) {
            lex_next(&p->lx);
            rc = parse_func(p, QD_FUNC_TEMPLATE, comment, &at);
        } else {
            rc = perror_at(p, &at, "expected a declaration: field, kernel, func or template");
        }
        if (rc < 0 || m->arena.out_of_memory) {
            if (ctx->diag.kind == QD_ERR_NONE) {
                qd_error(ctx, tok_loc(p, &at), QD_ERR_NOMEM, "out of memory");
            }
            return -1;
        }
    }
}

QdModule *
qd_module_parse(QdCtx *ctx, const char *text, size_t len, const char *filename)
{
    QdModule *m = qd_module_new();
    if (!m) {
        qd_error(ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory");
        return NULL;
    }
    if (parse_declarations(ctx, m, text, len, filename) < 0) {
        qd_module_free(m);
        return NULL;
    }
    return m;
}

int
qd_module_parse_into(QdCtx *ctx, QdModule *m, const char *text, size_t len, const char *filename)
{
    const char *end_comment = m->end_comment;
    int rc = parse_declarations(ctx, m, text, len, filename);
    m->end_comment = end_comment;
    return rc;
}
