/* frontend/lower_print.c -- print() and the formats of print and assert messages.
 *
 * print(a, b, sep=, end=) becomes one `print` instruction: a printf-style format with the literal
 * parts (compile-time values are formatted now, as Python prints them; vectors and matrices as
 * nested lists) and one conversion per runtime value. An assert message (a string, an f-string
 * or "format" % values) is turned into the same kind of format; lw_debug_assert emits the check
 * that fails the launch with it.
 */
#include "lower.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef QdIdVec IdVec;

static void
put_literal(QdSbuf *fmt, const char *s)
{
    for (; *s; s++) {
        if (*s == '%') {
            qd_sbuf_putc(fmt, '%');
        }
        qd_sbuf_putc(fmt, *s);
    }
}

/* Appends one printed value: literals are formatted now, runtime values get a conversion. */
static int
print_value(Lowerer *lw, const QdAst *node, const Expr *e, const char *spec, QdSbuf *fmt,
            IdVec *args)
{
    char buf[128];
    if (e->kind == EX_STR) {
        put_literal(fmt, e->str);
        return 0;
    }
    if (e->kind == EX_NONE) {
        put_literal(fmt, "None");
        return 0;
    }
    if (e->kind == EX_BOOL && !spec) {
        put_literal(fmt, e->ival ? "True" : "False");
        return 0;
    }
    /* The print format spells each kind its own way (as the reference prints it): these tests
     * are the format's, not an operation's. */
    if (e->kind == EX_MATRIX && !e->is_vector) {
        /* [[a, b], [c, d]]: row by row. */
        put_literal(fmt, "[");
        for (uint32_t r = 0; r < e->rows; r++) {
            Expr row;
            RETURN_IF_ERROR(lw_matrix_new(lw, e->cols, 1, true, e->ty, &row));
            memcpy(row.items, &e->items[r * e->cols], sizeof(Expr) * e->cols);
            put_literal(fmt, r ? ", " : "");
            RETURN_IF_ERROR(print_value(lw, node, &row, spec, fmt, args));
        }
        put_literal(fmt, "]");
        return 0;
    }
    if (e->kind == EX_TUPLE || e->kind == EX_MATRIX) {
        put_literal(fmt, "[");
        for (uint32_t i = 0; i < e->nitems; i++) {
            if (i) {
                put_literal(fmt, ", ");
            }
            RETURN_IF_ERROR(print_value(lw, node, &e->items[i], spec, fmt, args));
        }
        put_literal(fmt, "]");
        return 0;
    }
    Expr v;
    RETURN_IF_ERROR(lw_rvalue(lw, node, e, &v));
    if (spec && *spec) {
        /* A format spec such as ".3f" or "5d": checked against the value's kind. */
        char conv = spec[strlen(spec) - 1];
        bool real = strchr("fFeEgG", conv) != NULL;
        bool integral = strchr("dixXuoc", conv) != NULL;
        if (strchr("snp%", conv) || (!real && !integral)) {
            return lw_error(lw, node, QD_ERR_SYNTAX, "unsupported format specification '%s'", spec);
        }
        if (real != qd_type_is_float(v.ty)) {
            return lw_error(lw, node, QD_ERR_SYNTAX,
                            "format specification '%s' does not fit a value of type %s", spec,
                            lw_type_name(v.ty));
        }
        if (qd_type_is_float(v.ty) && v.ty->kind != QD_TY_F64) {
            RETURN_IF_ERROR(lw_convert(lw, node, &v, qd_type_scalar(QD_TY_F64), &v));
        }
        qd_sbuf_putc(fmt, '%');
        qd_sbuf_putn(fmt, spec, strlen(spec) - 1);
        if (integral && qd_type_bits(v.ty) == 64) {
            qd_sbuf_puts(fmt, "ll");
        }
        qd_sbuf_putc(fmt, conv);
    } else if (qd_type_is_float(v.ty)) {
        qd_sbuf_puts(fmt, "%f");
    } else if (qd_type_bits(v.ty) == 64) {
        qd_sbuf_puts(fmt, qd_type_is_signed(v.ty) ? "%lld" : "%llu");
    } else {
        qd_sbuf_puts(fmt, qd_type_is_signed(v.ty) || v.ty->kind == QD_TY_U1 ? "%d" : "%u");
    }
    (void)buf;
    if (qd_vec_push(lw->arena, args, v.id) < 0) {
        return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
    }
    return 0;
}

/* Appends an f-string's parts to a print/assert format. */
static int
format_fstring(Lowerer *lw, const QdAst *arg, QdSbuf *fmt, IdVec *args)
{
    for (uint32_t k = 0; k < arg->a.len; k++) {
        const QdAst *part = arg->a.items[k];
        if (part->kind == QD_AST_CONSTANT && part->cst.kind == QD_CONST_STR) {
            put_literal(fmt, part->cst.sval);
            continue;
        }
        Expr v;
        const char *spec = NULL;
        if (part->y && part->y->a.len == 1 && part->y->a.items[0]->kind == QD_AST_CONSTANT) {
            spec = part->y->a.items[0]->cst.sval;
        }
        RETURN_IF_ERROR(lw_expr(lw, part->x, &v));
        RETURN_IF_ERROR(print_value(lw, part, &v, spec, fmt, args));
    }
    return 0;
}

int
lw_format_message(Lowerer *lw, const QdAst *msg, QdSbuf *fmt, IdVec *args)
{
    if (msg->kind == QD_AST_JOINED_STR) {
        return format_fstring(lw, msg, fmt, args);
    }
    if (msg->kind == QD_AST_BIN_OP && msg->op == QD_BIN_MOD && msg->x->kind == QD_AST_CONSTANT &&
        msg->x->cst.kind == QD_CONST_STR) {
        /* "fmt" % values: C conversions of the format string, values formatted at run time. */
        Expr vals;
        RETURN_IF_ERROR(lw_expr(lw, msg->y, &vals));
        uint32_t n = vals.kind == EX_TUPLE ? vals.nitems : 1;
        const char *f = msg->x->cst.sval;
        qd_sbuf_puts(fmt, f);
        for (uint32_t i = 0; i < n; i++) {
            Expr v;
            RETURN_IF_ERROR(lw_rvalue(lw, msg, vals.kind == EX_TUPLE ? &vals.items[i] : &vals, &v));
            if (qd_vec_push(lw->arena, args, v.id) < 0) {
                return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
            }
        }
        return 0;
    }
    Expr m;
    RETURN_IF_ERROR(lw_expr(lw, msg, &m));
    if (m.kind != EX_STR) {
        return lw_error(lw, msg, QD_ERR_SYNTAX,
                        "assert messages are strings, f-strings or \"format\" %% values");
    }
    put_literal(fmt, m.str);
    return 0;
}

int
lw_builtin_print(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    const char *sep = " ", *end = "\n";
    const Expr *s = lw_call_keyword(c, "sep");
    const Expr *e = lw_call_keyword(c, "end");
    if (s && s->kind == EX_STR) {
        sep = s->str;
    }
    if (e && e->kind == EX_STR) {
        end = e->str;
    }
    QdSbuf fmt;
    qd_sbuf_init(&fmt);
    IdVec args = {0};
    int rc = 0;
    for (uint32_t i = 0; i < c->npos && rc == 0; i++) {
        if (i) {
            put_literal(&fmt, sep);
        }
        const QdAst *arg = c->node->a.items[i];
        if (arg->kind == QD_AST_JOINED_STR) {
            rc = format_fstring(lw, arg, &fmt, &args);
        } else {
            rc = print_value(lw, arg, &c->pos[i], NULL, &fmt, &args);
        }
    }
    if (rc == 0) {
        put_literal(&fmt, end);
    }
    char *text = qd_sbuf_take(&fmt);
    if (rc < 0 || !text) {
        free(text);
        return -1;
    }
    QdInst *inst = lw_emit(lw, QD_OP_PRINT, args.len);
    if (inst) {
        if (args.len) {
            memcpy(inst->args, args.data, sizeof(uint32_t) * args.len);
        }
        inst->imm.str = qd_arena_strdup(lw->arena, text);
    }
    free(text);
    lw->info->has_print = true;
    out->kind = EX_VOID;
    return inst ? 0 : -1;
}

/***** debug checks *****/

int
lw_debug_assert(Lowerer *lw, const QdAst *node, uint32_t ok, const char *message, const uint32_t *vals,
                uint32_t nvals)
{
    if (lw->task && lw->task->imm.task.kind == QD_TASK_RANGE_FOR && lw->cur == lw->task->regions[0]) {
        return 0; /* the prologue of a range_for task computes bounds; it has no checks */
    }
    QdSbuf fmt;
    qd_sbuf_init(&fmt);
    for (const char *f = lw->frame->file ? lw->frame->file : "?"; *f; f++) {
        qd_sbuf_putn(&fmt, *f == '%' && nvals ? "%%" : f, *f == '%' && nvals ? 2 : 1);
    }
    qd_sbuf_printf(&fmt, ":%u: %s", node->line, message);
    char *text = qd_sbuf_take(&fmt);
    QdInst *as = text ? lw_emit(lw, QD_OP_ASSERT, 1 + nvals) : NULL;
    if (as) {
        as->args[0] = ok;
        for (uint32_t i = 0; i < nvals; i++) {
            as->args[1 + i] = vals[i];
        }
        as->imm.str = qd_arena_strdup(lw->arena, text);
    }
    free(text);
    return as && as->imm.str ? 0 : -1;
}
