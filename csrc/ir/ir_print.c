/* ir/ir_print.c -- the textual form of the IR (docs/ir.md), the inverse of ir_parse.c.
 *
 * The output is canonical: for any module, parse(print(m)) prints back to the same text, and a
 * hand-written file in canonical form round-trips byte for byte (the golden tests check both).
 * Canonical form: fields first, then functions separated by one blank line; two spaces of
 * indentation per region level; locations aligned to start at character 57 (LOC_COLUMN counts from 0) or two spaces after
 * a longer instruction; comments kept where the parser found them.
 *
 * Values print under the name they were given. Values without one (created by passes) print as
 * numbers, chosen so they never collide with a given name; a name given twice in a function is
 * disambiguated with a `.N` suffix, so the output always parses.
 */
#include "ir.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Column (counted from 0) where locations start. */
#define LOC_COLUMN 56

typedef struct Printer {
    QdSbuf *sb;          /* output */
    const QdFunc *func;  /* function being printed */
    char **names;        /* printed name of each value id (without '%'), heap strings */
} Printer;

/***** names *****/

static bool
is_ident_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.';
}

static bool
is_plain_name(const char *s)
{
    if (!*s || (*s >= '0' && *s <= '9') || *s == '.') {
        return false;
    }
    for (; *s; s++) {
        if (!is_ident_char(*s)) {
            return false;
        }
    }
    return true;
}

static void
print_string(QdSbuf *sb, const char *s)
{
    qd_sbuf_putc(sb, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '\n':
            qd_sbuf_puts(sb, "\\n");
            break;
        case '\t':
            qd_sbuf_puts(sb, "\\t");
            break;
        case '\\':
            qd_sbuf_puts(sb, "\\\\");
            break;
        case '"':
            qd_sbuf_puts(sb, "\\\"");
            break;
        default:
            if (*p < 32 || *p >= 127) {
                qd_sbuf_printf(sb, "\\x%02x", *p);
            } else {
                qd_sbuf_putc(sb, (char)*p);
            }
        }
    }
    qd_sbuf_putc(sb, '"');
}

/* `@name`, quoted when the name has characters an identifier can't (template instances). */
static void
print_global(QdSbuf *sb, const char *name)
{
    qd_sbuf_putc(sb, '@');
    if (is_plain_name(name)) {
        qd_sbuf_puts(sb, name);
    } else {
        print_string(sb, name);
    }
}

/* A set of strings (printed names), open addressing on qd_hash64. */
typedef struct NameSet {
    const char **slots; /* NULL = empty */
    uint32_t cap;       /* power of two, more than twice the count */
} NameSet;

static bool
nameset_has(const NameSet *set, const char *s)
{
    uint32_t j = (uint32_t)qd_hash64(s, strlen(s)) & (set->cap - 1);
    for (; set->slots[j]; j = (j + 1) & (set->cap - 1)) {
        if (strcmp(set->slots[j], s) == 0) {
            return true;
        }
    }
    return false;
}

static void
nameset_add(NameSet *set, const char *s)
{
    uint32_t j = (uint32_t)qd_hash64(s, strlen(s)) & (set->cap - 1);
    while (set->slots[j]) {
        j = (j + 1) & (set->cap - 1);
    }
    set->slots[j] = s;
}

/* Chooses the printed name of every value: given names first (a repeated one gets a `.N`
 * suffix), then numbers for the rest, skipping numbers that are given names. */
static char **
choose_names(const QdFunc *f)
{
    char **names = calloc(f->nvalues ? f->nvalues : 1, sizeof(char *));
    NameSet set = {NULL, 16};
    while (set.cap < 2 * f->nvalues + 2) {
        set.cap *= 2;
    }
    set.slots = calloc(set.cap, sizeof(char *));
    if (!names || !set.slots) {
        free(names);
        free(set.slots);
        return NULL;
    }
    char buf[32];
    for (uint32_t id = 0; id < f->nvalues; id++) {
        const char *given = f->values[id].name;
        if (!given) {
            continue;
        }
        size_t len = strlen(given) + sizeof(buf);
        char *name = malloc(len);
        if (!name) {
            break;
        }
        snprintf(name, len, "%s", given);
        for (uint32_t k = 1; nameset_has(&set, name); k++) {
            snprintf(name, len, "%s.%u", given, k);
        }
        names[id] = name;
        nameset_add(&set, name);
    }
    uint32_t next = 0;
    for (uint32_t id = 0; id < f->nvalues; id++) {
        if (f->values[id].name) {
            continue;
        }
        do {
            snprintf(buf, sizeof(buf), "%u", next++);
        } while (nameset_has(&set, buf));
        names[id] = malloc(strlen(buf) + 1);
        if (names[id]) {
            memcpy(names[id], buf, strlen(buf) + 1);
            nameset_add(&set, names[id]);
        }
    }
    free(set.slots);
    return names;
}

static void
free_names(char **names, uint32_t n)
{
    if (names) {
        for (uint32_t i = 0; i < n; i++) {
            free(names[i]);
        }
        free(names);
    }
}

static void
print_value(Printer *p, uint32_t id)
{
    qd_sbuf_putc(p->sb, '%');
    if (id < p->func->nvalues && p->names && p->names[id]) {
        qd_sbuf_puts(p->sb, p->names[id]);
    } else {
        qd_sbuf_printf(p->sb, "<bad:%u>", id);
    }
}

/***** types and compile-time expressions *****/

static void print_cexpr(QdSbuf *sb, const Printer *p, const QdCexpr *e);

static int
cexpr_prec(const QdCexpr *e)
{
    return e->kind == QD_CEXPR_BINOP ? qd_cexpr_prec(e->op) : QD_CEXPR_TIGHTEST + 1;
}

static void
print_cexpr_operand(QdSbuf *sb, const Printer *p, const QdCexpr *e, bool paren)
{
    if (paren) {
        qd_sbuf_putc(sb, '(');
    }
    print_cexpr(sb, p, e);
    if (paren) {
        qd_sbuf_putc(sb, ')');
    }
}

static void
print_cexpr(QdSbuf *sb, const Printer *p, const QdCexpr *e)
{
    switch (e->kind) {
    case QD_CEXPR_INT:
        qd_sbuf_printf(sb, "%lld", (long long)e->value);
        break;
    case QD_CEXPR_PARAM:
        qd_sbuf_puts(sb, e->name);
        break;
    case QD_CEXPR_VAR:
        if (p && p->names && e->var < p->func->nvalues && p->names[e->var]) {
            qd_sbuf_printf(sb, "%%%s", p->names[e->var]);
        } else {
            qd_sbuf_printf(sb, "%%%u", e->var);
        }
        break;
    case QD_CEXPR_BINOP: {
        int prec = cexpr_prec(e);
        /* Left-associative: the right operand needs parentheses at equal precedence. */
        print_cexpr_operand(sb, p, e->lhs, cexpr_prec(e->lhs) < prec);
        if (e->op == QD_CEXPR_SHL || e->op == QD_CEXPR_EQ) {
            qd_sbuf_puts(sb, e->op == QD_CEXPR_SHL ? " << " : " == ");
        } else {
            qd_sbuf_printf(sb, " %c ", e->op);
        }
        print_cexpr_operand(sb, p, e->rhs, cexpr_prec(e->rhs) <= prec);
        break;
    }
    }
}

static const char *const space_names[] = {"global", "shared", "local"};

static void
print_type_in(QdSbuf *sb, const Printer *p, const QdType *ty)
{
    if (!ty) {
        qd_sbuf_puts(sb, "<null>");
        return;
    }
    switch (ty->kind) {
    case QD_TY_PTR:
        qd_sbuf_puts(sb, "ptr<");
        print_type_in(sb, p, ty->elem);
        qd_sbuf_printf(sb, ", %s>", space_names[ty->space]);
        break;
    case QD_TY_ARRAY:
        qd_sbuf_putc(sb, '[');
        if (ty->count_expr) {
            print_cexpr(sb, p, ty->count_expr);
        } else {
            qd_sbuf_printf(sb, "%u", ty->count);
        }
        qd_sbuf_puts(sb, " x ");
        print_type_in(sb, p, ty->elem);
        qd_sbuf_putc(sb, ']');
        break;
    case QD_TY_NDARRAY:
        qd_sbuf_puts(sb, "ndarray<");
        print_type_in(sb, p, ty->elem);
        qd_sbuf_printf(sb, ", %u>", ty->ndim);
        break;
    case QD_TY_PARAM:
        qd_sbuf_puts(sb, ty->name);
        break;
    default:
        qd_sbuf_puts(sb, qd_type_scalar_name(ty->kind));
    }
}

void
qd_type_print(QdSbuf *sb, const QdType *ty)
{
    print_type_in(sb, NULL, ty);
}

/***** constants *****/

/* Shortest decimal text that reads back to the same double (or float, when is_f32). */
static void
print_float(QdSbuf *sb, double v, bool is_f32)
{
    if (isnan(v)) {
        qd_sbuf_puts(sb, "nan");
        return;
    }
    if (isinf(v)) {
        qd_sbuf_puts(sb, v < 0 ? "-inf" : "inf");
        return;
    }
    char buf[64];
    int prec = 1;
    for (; prec <= 17; prec++) {
        snprintf(buf, sizeof(buf), "%.*e", prec - 1, v);
        if (is_f32 ? strtof(buf, NULL) == (float)v : strtod(buf, NULL) == v) {
            break;
        }
    }
    /* Like Python's repr: positional notation for exponents in [-4, 16), else scientific. */
    int exp10 = atoi(strchr(buf, 'e') + 1);
    if (exp10 >= -4 && exp10 < 16) {
        int decimals = prec - 1 - exp10;
        snprintf(buf, sizeof(buf), "%.*f", decimals > 0 ? decimals : 0, v);
        qd_sbuf_puts(sb, buf);
        if (!strchr(buf, '.')) {
            qd_sbuf_puts(sb, ".0");
        }
    } else {
        snprintf(buf, sizeof(buf), "%.*g", prec, v);
        qd_sbuf_puts(sb, buf);
    }
}

static void
print_const(Printer *p, const QdInst *inst)
{
    const QdConst *c = &inst->imm.cst;
    if (c->expr) {
        print_cexpr(p->sb, p, c->expr);
    } else if (inst->type->kind == QD_TY_U1) {
        qd_sbuf_puts(p->sb, c->u ? "true" : "false");
    } else if (qd_type_is_float(inst->type)) {
        print_float(p->sb, c->f, inst->type->kind == QD_TY_F32);
    } else if (qd_type_is_signed(inst->type)) {
        qd_sbuf_printf(p->sb, "%lld", (long long)c->i);
    } else {
        qd_sbuf_printf(p->sb, "%llu", (unsigned long long)c->u);
    }
}

/***** instructions *****/

static void
indent(QdSbuf *sb, int depth)
{
    for (int i = 0; i < depth; i++) {
        qd_sbuf_puts(sb, "  ");
    }
}

/* Comment lines ('\n'-separated, each starting with '#'), each on its own indented line. */
static void
print_comment_lines(QdSbuf *sb, const char *comment, int depth)
{
    if (!comment) {
        return;
    }
    const char *s = comment;
    while (*s) {
        const char *nl = strchr(s, '\n');
        size_t n = nl ? (size_t)(nl - s) : strlen(s);
        indent(sb, depth);
        qd_sbuf_putn(sb, s, n);
        qd_sbuf_putc(sb, '\n');
        s += n;
        if (*s == '\n') {
            s++;
        }
    }
}

static bool
file_needs_quotes(const char *file)
{
    for (const char *s = file; *s; s++) {
        if (*s == ' ' || *s == '"' || *s == '\\' || *s == '#' || (unsigned char)*s < 32) {
            return true;
        }
    }
    return !*file;
}

/* Location and trailing comment, then the newline. */
static void
print_line_end(QdSbuf *sb, QdLoc loc, const char *trailing)
{
    if (loc.line) {
        size_t start = sb->len;
        while (start > 0 && sb->data[start - 1] != '\n') {
            start--;
        }
        if (sb->len - start + 2 <= LOC_COLUMN) {
            qd_sbuf_pad_to(sb, LOC_COLUMN);
        } else {
            qd_sbuf_puts(sb, "  ");
        }
        qd_sbuf_putc(sb, '@');
        const char *file = loc.file ? loc.file : "";
        if (file_needs_quotes(file)) {
            print_string(sb, file);
        } else {
            qd_sbuf_puts(sb, file);
        }
        qd_sbuf_printf(sb, ":%u:%u", loc.line, loc.col);
    }
    if (trailing) {
        qd_sbuf_puts(sb, "  ");
        qd_sbuf_puts(sb, trailing);
    }
    qd_sbuf_putc(sb, '\n');
}

static void print_region(Printer *p, const QdRegion *r, int depth);

static void
print_args(Printer *p, const QdInst *inst, bool leading_comma)
{
    for (uint32_t i = 0; i < inst->nargs; i++) {
        if (i > 0 || leading_comma) {
            qd_sbuf_puts(p->sb, ", ");
        }
        print_value(p, inst->args[i]);
    }
}

static void
print_callee(Printer *p, const QdCallee *c)
{
    print_global(p->sb, c->name);
    uint32_t n = qd_callee_ntargs(c);
    if (n == 0) {
        return;
    }
    qd_sbuf_putc(p->sb, '<');
    uint32_t ti = 0, ii = 0, fi = 0;
    for (uint32_t k = 0; k < n; k++) {
        if (k > 0) {
            qd_sbuf_puts(p->sb, ", ");
        }
        QdTArgKind kind = c->args_order ? (QdTArgKind)c->args_order[k]
                          : ti < c->ntype_args ? QD_TARG_TYPE
                                               : QD_TARG_INT;
        if (kind == QD_TARG_FUNC && fi < c->nfunc_args) {
            print_callee(p, &c->func_args[fi++]);
        } else if (kind == QD_TARG_INT && ii < c->nint_args) {
            print_cexpr(p->sb, p, c->int_args[ii++]);
        } else if (kind == QD_TARG_TYPE && ti < c->ntype_args) {
            print_type_in(p->sb, p, c->type_args[ti++]);
        }
    }
    qd_sbuf_putc(p->sb, '>');
}

/* The part of an instruction line after `%r = ` for ops without regions. */
static void
print_plain_body(Printer *p, const QdInst *inst)
{
    const QdOpInfo *info = &qd_op_info[inst->op];
    QdSbuf *sb = p->sb;
    qd_sbuf_puts(sb, info->text);
    switch (info->imm) {
    case IMM_CONST:
        qd_sbuf_putc(sb, ' ');
        print_const(p, inst);
        break;
    case IMM_FIELD:
        qd_sbuf_putc(sb, ' ');
        print_global(sb, inst->imm.field ? inst->imm.field->name : "?");
        print_args(p, inst, true);
        break;
    case IMM_CALLEE:
        qd_sbuf_putc(sb, ' ');
        print_callee(p, &inst->imm.call);
        qd_sbuf_putc(sb, '(');
        print_args(p, inst, false);
        qd_sbuf_putc(sb, ')');
        break;
    case IMM_STRING:
        qd_sbuf_putc(sb, ' ');
        if (inst->op == QD_OP_ASSERT) {
            /* assert %c, "message", %values... */
            if (inst->nargs) {
                print_value(p, inst->args[0]);
            }
            qd_sbuf_puts(sb, ", ");
            print_string(sb, inst->imm.str ? inst->imm.str : "");
            for (uint32_t i = 1; i < inst->nargs; i++) {
                qd_sbuf_puts(sb, ", ");
                print_value(p, inst->args[i]);
            }
        } else if (info->nargs < 0) {
            print_string(sb, inst->imm.str ? inst->imm.str : "");
            print_args(p, inst, true);
        } else {
            print_args(p, inst, false);
            qd_sbuf_puts(sb, ", ");
            print_string(sb, inst->imm.str ? inst->imm.str : "");
        }
        break;
    case IMM_INT:
        qd_sbuf_putc(sb, ' ');
        print_args(p, inst, false);
        qd_sbuf_printf(sb, ", %lld", (long long)inst->imm.i);
        break;
    case IMM_MATVEC: {
        /* nn_matvec %y, %x, %w[, %b], col_major 16 x 8, offset 0, stride 16[, bias 256][, transpose]
         * [, tensor_cores] */
        const QdMatvec *mv = &inst->imm.matvec;
        qd_sbuf_putc(sb, ' ');
        print_args(p, inst, false);
        qd_sbuf_printf(sb, ", %s %u x %u, offset %lld, stride %lld",
                       (unsigned)mv->layout < QD_MAT_LAYOUT_COUNT_ ? qd_mat_layout_names[mv->layout] : "?",
                       mv->rows, mv->cols, (long long)mv->offset, (long long)mv->stride);
        if (mv->has_bias) {
            qd_sbuf_printf(sb, ", bias %lld", (long long)mv->bias_offset);
        }
        if (mv->transpose) {
            qd_sbuf_puts(sb, ", transpose");
        }
        if (mv->tensor_cores) {
            qd_sbuf_puts(sb, ", tensor_cores");
        }
        break;
    }
    default:
        if (inst->nargs) {
            qd_sbuf_putc(sb, ' ');
            print_args(p, inst, false);
        }
    }
    if (inst->result != QD_NO_VALUE) {
        qd_sbuf_puts(sb, " : ");
        print_type_in(sb, p, inst->type);
    }
}

static void
print_block_close(Printer *p, const QdRegion *r, int depth)
{
    print_comment_lines(p->sb, r->end_comment, depth + 1);
    indent(p->sb, depth);
    qd_sbuf_putc(p->sb, '}');
}

static void
print_inst(Printer *p, const QdInst *inst, int depth)
{
    QdSbuf *sb = p->sb;
    print_comment_lines(sb, inst->comment, depth);
    indent(sb, depth);
    switch (inst->op) {
    case QD_OP_IF:
        qd_sbuf_puts(sb, "if ");
        print_args(p, inst, false);
        qd_sbuf_puts(sb, " {");
        print_line_end(sb, inst->loc, inst->trailing);
        print_region(p, inst->regions[0], depth + 1);
        print_block_close(p, inst->regions[0], depth);
        if (!qd_region_is_empty(inst->regions[1]) || inst->regions[1]->end_comment) {
            qd_sbuf_puts(sb, " else {\n");
            print_region(p, inst->regions[1], depth + 1);
            print_block_close(p, inst->regions[1], depth);
        }
        qd_sbuf_putc(sb, '\n');
        return;
    case QD_OP_FOR:
    case QD_OP_PARALLEL_FOR:
        qd_sbuf_printf(sb, "%s ", qd_op_info[inst->op].text);
        print_value(p, inst->result);
        qd_sbuf_puts(sb, " = ");
        print_value(p, inst->args[0]);
        qd_sbuf_puts(sb, " to ");
        print_value(p, inst->args[1]);
        qd_sbuf_puts(sb, " {");
        break;
    case QD_OP_UNROLL:
        qd_sbuf_puts(sb, "unroll ");
        print_value(p, inst->result);
        qd_sbuf_puts(sb, " = ");
        print_cexpr(sb, p, inst->imm.unroll.lo);
        qd_sbuf_puts(sb, " to ");
        print_cexpr(sb, p, inst->imm.unroll.hi);
        qd_sbuf_puts(sb, " {");
        break;
    case QD_OP_LOOP:
        qd_sbuf_puts(sb, "loop {");
        break;
    case QD_OP_TASK: {
        const QdTask *t = &inst->imm.task;
        qd_sbuf_puts(sb, t->kind == QD_TASK_SERIAL ? "task serial" : "task range_for");
        if (t->name) {
            qd_sbuf_putc(sb, ' ');
            print_string(sb, t->name);
        }
        if (t->block_dim) {
            qd_sbuf_printf(sb, " block_dim %u", t->block_dim);
        }
        if (t->min_blocks) {
            qd_sbuf_printf(sb, " min_blocks_per_sm %u", t->min_blocks);
        }
        qd_sbuf_puts(sb, " {");
        break;
    }
    default:
        if (inst->result != QD_NO_VALUE) {
            print_value(p, inst->result);
            qd_sbuf_puts(sb, " = ");
        }
        print_plain_body(p, inst);
        print_line_end(sb, inst->loc, inst->trailing);
        return;
    }
    /* Ops with one body region. */
    print_line_end(sb, inst->loc, inst->trailing);
    print_region(p, inst->regions[0], depth + 1);
    print_block_close(p, inst->regions[0], depth);
    qd_sbuf_putc(sb, '\n');
}

static void
print_region(Printer *p, const QdRegion *r, int depth)
{
    for (const QdInst *inst = r->first; inst; inst = inst->next) {
        print_inst(p, inst, depth);
    }
}

/***** declarations *****/


static void
print_func_into(QdSbuf *sb, const QdFunc *f)
{
    Printer p = {sb, f, choose_names(f)};
    if (!p.names && f->nvalues) {
        sb->failed = true;
        return;
    }
    static const char *const kinds[] = {"kernel", "func", "template"};
    print_comment_lines(sb, f->comment, 0);
    qd_sbuf_printf(sb, "%s ", kinds[f->kind]);
    print_global(sb, f->name);
    if (f->ntparams) {
        qd_sbuf_putc(sb, '<');
        for (uint32_t i = 0; i < f->ntparams; i++) {
            qd_sbuf_printf(sb, "%s%s: %s", i ? ", " : "", f->tparams[i].name,
                           qd_tparam_kind_names[f->tparams[i].kind]);
        }
        qd_sbuf_putc(sb, '>');
    }
    qd_sbuf_putc(sb, '(');
    for (uint32_t i = 0; i < f->nparams; i++) {
        if (i) {
            qd_sbuf_puts(sb, ", ");
        }
        print_value(&p, f->params[i]);
        qd_sbuf_puts(sb, ": ");
        print_type_in(sb, &p, f->values[f->params[i]].type);
    }
    qd_sbuf_putc(sb, ')');
    if (f->ret && f->ret->kind != QD_TY_VOID) {
        qd_sbuf_puts(sb, " -> ");
        print_type_in(sb, &p, f->ret);
    }
    if (f->top_level) {
        qd_sbuf_puts(sb, " top_level");
    }
    qd_sbuf_puts(sb, " {");
    print_line_end(sb, f->loc, NULL);
    print_region(&p, f->body, 1);
    print_comment_lines(sb, f->body->end_comment, 1);
    qd_sbuf_puts(sb, "}\n");
    free_names(p.names, f->nvalues);
}

static void
print_field(QdSbuf *sb, const QdField *fd)
{
    print_comment_lines(sb, fd->comment, 0);
    qd_sbuf_puts(sb, "field ");
    print_global(sb, fd->name);
    qd_sbuf_puts(sb, " : ");
    qd_type_print(sb, fd->elem);
    qd_sbuf_puts(sb, " [");
    for (uint32_t i = 0; i < fd->ndim; i++) {
        qd_sbuf_printf(sb, "%s%lld", i ? ", " : "", (long long)fd->shape[i]);
    }
    qd_sbuf_putc(sb, ']');
    print_line_end(sb, fd->loc, NULL);
}

char *
qd_func_print(const QdFunc *f)
{
    QdSbuf sb;
    qd_sbuf_init(&sb);
    print_func_into(&sb, f);
    return qd_sbuf_take(&sb);
}

char *
qd_module_print(const QdModule *m)
{
    QdSbuf sb;
    qd_sbuf_init(&sb);
    for (uint32_t i = 0; i < m->fields.len; i++) {
        print_field(&sb, m->fields.data[i]);
    }
    for (uint32_t i = 0; i < m->funcs.len; i++) {
        if (i > 0 || m->fields.len > 0) {
            qd_sbuf_putc(&sb, '\n');
        }
        print_func_into(&sb, m->funcs.data[i]);
    }
    print_comment_lines(&sb, m->end_comment, 0);
    return qd_sbuf_take(&sb);
}
