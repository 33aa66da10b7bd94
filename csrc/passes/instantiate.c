/* passes/instantiate.c -- the `instantiate` pass: template instances and `unroll` expansion.
 *
 * First pass of the pipeline (passes.def). For every `call @t<args>(...)` of a template in a
 * kernel or func, it evaluates the arguments, checks them against the template's parameter
 * kinds, and creates the concrete func `t<f32,16>` (once per distinct argument list; appended to
 * the module in creation order) by copying the template body with substitution. A function
 * argument (`F: func`) is a func or a template's instance `@g<T>` (instantiated first); calls
 * of `@F` in the body call it. The substitution:
 *   - generic types (T, [N x T], pointers and ndarrays of them) become interned concrete types;
 *   - `const` expressions become literals of the constant's type;
 *   - `unroll %k = lo to hi { body }` becomes, for each k, `%k.<k> = const k : i32` followed by
 *     a copy of the body whose values are named `<name>.<k>` (nested: `%x.3.5`; negative k: n2);
 *   - calls of templates inside the body are instantiated in turn (depth at most 64).
 * The call is then rewritten to the instance. Unrolls in kernels and funcs are expanded in place.
 * Templates stay in the module as declarations. Afterwards no kernel or func mentions a template,
 * an unroll or a generic type.
 */
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64                  /* nested instantiations (template calling template ...) */
#define MAX_UNROLL 65536              /* iterations of one unroll */
#define MAX_INSTS (UINT64_C(1) << 22) /* instructions the pass may create in all */

/* State of the whole pass. */
typedef struct Instantiator {
    QdPassCtx *pc;    /* errors and scratch */
    QdModule *m;      /* module being rewritten */
    uint32_t depth;   /* instantiations in progress (nesting) */
    uint64_t ncopied; /* instructions created so far, against MAX_INSTS */
} Instantiator;

/* One body being copied: a template into a new instance, or unrolls of a kernel/func in place. */
typedef struct Expander {
    Instantiator *in;         /* the pass */
    QdCloner cl;              /* value map, names, insertion point */
    const QdFunc *tmpl;       /* template being instantiated, NULL for a kernel/func */
    const QdType **type_args; /* per template parameter: bound type (NULL for the others) */
    const char **func_args;   /* per template parameter: bound function (NULL for the others) */
    QdCexprEnv env;           /* integer parameters and unroll variables in scope */
    uint32_t *vars;           /* unroll variables in scope (source ids), env.vars */
    int64_t *var_values;      /* their values, env.var_values */
    uint32_t vars_cap;        /* room in vars / var_values */
} Expander;

static int expand_region(Expander *x, const QdRegion *src);
static int instantiate(Instantiator *in, const QdInst *call, QdFunc *tmpl,
                       const QdType **type_args, const int64_t *int_args,
                       const char **func_args, const char **out_name);

/***** substitution *****/

static int
eval(Expander *x, const QdInst *inst, const QdCexpr *e, int64_t *out)
{
    return qd_cexpr_eval(x->in->pc->ctx, qd_util_inst_loc(inst), e, &x->env, out);
}

/* The concrete type for `ty` under the current bindings. */
static int
subst_type(Expander *x, const QdInst *inst, const QdType *ty, const QdType **out)
{
    QdModule *m = x->in->m;
    const QdType *elem = NULL;
    *out = ty;
    switch (ty->kind) {
    case QD_TY_PARAM:
        for (uint32_t i = 0; x->tmpl && i < x->tmpl->ntparams; i++) {
            if (strcmp(x->tmpl->tparams[i].name, ty->name) == 0 && x->type_args[i]) {
                *out = x->type_args[i];
                return 0;
            }
        }
        return qd_error(x->in->pc->ctx, qd_util_inst_loc(inst), QD_ERR_TYPE,
                        "`%s` is not a type parameter here", ty->name);
    case QD_TY_PTR:
        RETURN_IF_ERROR(subst_type(x, inst, ty->elem, &elem));
        *out = elem == ty->elem ? ty : qd_type_ptr(m, elem, ty->space);
        break;
    case QD_TY_NDARRAY:
        RETURN_IF_ERROR(subst_type(x, inst, ty->elem, &elem));
        *out = elem == ty->elem ? ty : qd_type_ndarray(m, elem, ty->ndim);
        break;
    case QD_TY_ARRAY: {
        RETURN_IF_ERROR(subst_type(x, inst, ty->elem, &elem));
        if (!ty->count_expr) {
            *out = elem == ty->elem ? ty : qd_type_array(m, elem, ty->count);
            break;
        }
        int64_t count;
        RETURN_IF_ERROR(eval(x, inst, ty->count_expr, &count));
        if (count < 1 || count > INT32_MAX) {
            return qd_error(x->in->pc->ctx, qd_util_inst_loc(inst), QD_ERR_COMPILATION,
                            "array count %lld is out of range", (long long)count);
        }
        *out = qd_type_array(m, elem, (uint32_t)count);
        break;
    }
    default:
        return 0; /* scalars */
    }
    return *out ? 0 : -1;
}

/* Makes a copied `const` concrete: its expression becomes a literal of its (substituted) type. */
static int
resolve_const(Expander *x, const QdInst *src, QdInst *inst)
{
    if (!src->imm.cst.expr) {
        return 0;
    }
    int64_t v;
    RETURN_IF_ERROR(eval(x, src, src->imm.cst.expr, &v));
    inst->imm.cst.expr = NULL;
    if (qd_type_is_float(inst->type)) {
        inst->imm.cst.f = inst->type->kind == QD_TY_F32 ? (double)(float)v : (double)v;
        return 0;
    }
    /* As for literals, a value the type cannot hold is an error, not a silent wrap. */
    uint64_t bits = qd_util_wrap_int(inst->type, (uint64_t)v);
    bool fits = qd_type_is_signed(inst->type) ? (int64_t)bits == v : bits == (uint64_t)v && v >= 0;
    if (!fits) {
        QdSbuf sb;
        qd_sbuf_init(&sb);
        qd_type_print(&sb, inst->type);
        qd_error(x->in->pc->ctx, qd_util_inst_loc(src), QD_ERR_COMPILATION,
                 "constant %lld does not fit in %s", (long long)v, sb.data ? sb.data : "?");
        qd_sbuf_free(&sb);
        return -1;
    }
    inst->imm.cst.u = bits;
    return 0;
}

/***** calls of templates *****/

/* Checks one evaluated type argument against the parameter's kind. */
static int
check_type_arg(Instantiator *in, const QdInst *call, const QdFunc *tmpl, const QdTParam *tp,
               const QdType *ty)
{
    bool ok = qd_type_is_scalar(ty);
    const char *want = "a scalar type";
    if (tp->kind == QD_TPARAM_FLOAT) {
        ok = qd_type_is_float(ty);
        want = "a float type";
    } else if (tp->kind == QD_TPARAM_INTEGRAL) {
        ok = qd_type_is_int(ty);
        want = "an integer type";
    }
    if (ok) {
        return 0;
    }
    QdSbuf sb;
    qd_sbuf_init(&sb);
    qd_type_print(&sb, ty);
    qd_error(in->pc->ctx, qd_util_inst_loc(call), QD_ERR_TYPE,
             "template @%s: argument %s for `%s: %s` is not %s", tmpl->name,
             sb.data ? sb.data : "?", tp->name, qd_tparam_kind_names[tp->kind], want);
    qd_sbuf_free(&sb);
    return -1;
}

/* The function a template's `func` parameter `name` is bound to in x, or NULL. */
static const char *
bound_func(const Expander *x, const char *name)
{
    for (uint32_t k = 0; x->tmpl && k < x->tmpl->ntparams; k++) {
        if (x->tmpl->tparams[k].kind == QD_TPARAM_FUNC && x->func_args[k] &&
            strcmp(x->tmpl->tparams[k].name, name) == 0) {
            return x->func_args[k];
        }
    }
    return NULL;
}

/* The concrete function callee `c` stands for under x's bindings: a func as it is, a `func`
 * parameter's binding, or the instance of a template for the evaluated arguments (created when
 * new). `is_arg`: c is a template's function argument, which must name a function; a call's
 * unknown callee is left to the verifier. `call` gives the location of errors. */
static int
resolve_callee(Expander *x, const QdInst *call, const QdCallee *c, bool is_arg,
               const char **out_name)
{
    Instantiator *in = x->in;
    QdCtx *ctx = in->pc->ctx;
    QdLoc loc = qd_util_inst_loc(call);
    uint32_t n = qd_callee_ntargs(c);
    const char *bound = bound_func(x, c->name);
    *out_name = c->name;
    if (bound) {
        if (n != 0) {
            return qd_error(ctx, loc, QD_ERR_TYPE, "function parameter %s takes no template "
                            "arguments", c->name);
        }
        *out_name = bound;
        return 0;
    }
    QdFunc *callee = qd_module_find_func(in->m, c->name);
    if (!callee || callee->kind == QD_FUNC_KERNEL) {
        if (n == 0 && !is_arg) {
            return 0; /* the verifier reports unknown funcs */
        }
        return qd_error(ctx, loc, QD_ERR_NAME, "unknown %s @%s", n ? "template" : "function",
                        c->name);
    }
    if (callee->kind != QD_FUNC_TEMPLATE) {
        if (n != 0) {
            return qd_error(ctx, loc, QD_ERR_TYPE, "@%s is not a template", c->name);
        }
        return 0;
    }
    if (n != callee->ntparams) {
        return qd_error(ctx, loc, QD_ERR_TYPE, "template @%s takes %u arguments, got %u",
                        c->name, callee->ntparams, n);
    }
    const QdType **types = QD_NEW_ARRAY(&in->pc->scratch, const QdType *, n ? n : 1);
    int64_t *ints = QD_NEW_ARRAY(&in->pc->scratch, int64_t, n ? n : 1);
    const char **funcs = QD_NEW_ARRAY(&in->pc->scratch, const char *, n ? n : 1);
    if (!types || !ints || !funcs) {
        return -1;
    }
    uint32_t ti = 0, ii = 0, fi = 0;
    for (uint32_t k = 0; k < n; k++) {
        const QdTParam *tp = &callee->tparams[k];
        QdTArgKind want = qd_tparam_arg_kind(tp->kind);
        QdTArgKind kind = c->args_order          ? (QdTArgKind)c->args_order[k]
                          : k < c->ntype_args    ? QD_TARG_TYPE
                                                 : QD_TARG_INT;
        types[k] = NULL;
        funcs[k] = NULL;
        ints[k] = 0;
        if (kind != want) {
            return qd_error(ctx, loc, QD_ERR_TYPE,
                            "template @%s: argument %u for `%s: %s` must be %s", c->name, k + 1,
                            tp->name, qd_tparam_kind_names[tp->kind],
                            qd_targ_kind_wanted[want]);
        }
        if (kind == QD_TARG_INT) {
            RETURN_IF_ERROR(eval(x, call, c->int_args[ii++], &ints[k]));
        } else if (kind == QD_TARG_FUNC) {
            RETURN_IF_ERROR(resolve_callee(x, call, &c->func_args[fi++], true, &funcs[k]));
        } else {
            RETURN_IF_ERROR(subst_type(x, call, c->type_args[ti++], &types[k]));
            RETURN_IF_ERROR(check_type_arg(in, call, callee, tp, types[k]));
        }
    }
    return instantiate(in, call, callee, types, ints, funcs, out_name);
}

/* Rewrites `inst` (a copy of, or the same as, `call`) to call the concrete function `call`
 * names: a template's instance or a `func` parameter's binding. Calls of funcs stay. */
static int
resolve_call(Expander *x, const QdInst *call, QdInst *inst)
{
    const QdCallee *c = &call->imm.call;
    const char *name;
    RETURN_IF_ERROR(resolve_callee(x, call, c, false, &name));
    if (name != c->name || qd_callee_ntargs(c) != 0) {
        memset(&inst->imm.call, 0, sizeof(inst->imm.call));
        inst->imm.call.name = name;
    }
    return 0;
}

/***** copying with substitution *****/

/* Binds one more unroll variable (innermost last, as qd_cexpr_eval searches from the end). */
static int
push_var(Expander *x, uint32_t var, int64_t value)
{
    if (x->env.nvars == x->vars_cap) {
        uint32_t cap = x->vars_cap ? x->vars_cap * 2 : 8;
        QdArena *a = &x->in->pc->scratch;
        x->vars = qd_arena_realloc(a, x->vars, sizeof(uint32_t) * x->vars_cap,
                                   sizeof(uint32_t) * cap);
        x->var_values = qd_arena_realloc(a, x->var_values, sizeof(int64_t) * x->vars_cap,
                                         sizeof(int64_t) * cap);
        if (!x->vars || !x->var_values) {
            return -1;
        }
        x->vars_cap = cap;
        x->env.vars = x->vars;
        x->env.var_values = x->var_values;
    }
    x->vars[x->env.nvars] = var;
    x->var_values[x->env.nvars++] = value;
    return 0;
}

/* Counts one more instruction created, failing past MAX_INSTS (nested unrolls multiply). */
static int
count_copy(Instantiator *in, const QdInst *src)
{
    if (++in->ncopied > MAX_INSTS) {
        return qd_error(in->pc->ctx, qd_util_inst_loc(src), QD_ERR_COMPILATION,
                        "instantiation creates more than %llu instructions",
                        (unsigned long long)MAX_INSTS);
    }
    return 0;
}

/* Expands `unroll %k = lo to hi { body }` at the cloner's insertion point: per k, a `const k`
 * standing for %k, then the body with names suffixed ".k". The unroll itself is not removed. */
static int
expand_unroll(Expander *x, const QdInst *u)
{
    QdCtx *ctx = x->in->pc->ctx;
    int64_t lo, hi;
    if (u->result >= x->cl.map_len) {
        return qd_error(ctx, qd_util_inst_loc(u), QD_ERR_INTERNAL, "unroll without a variable");
    }
    RETURN_IF_ERROR(eval(x, u, u->imm.unroll.lo, &lo));
    RETURN_IF_ERROR(eval(x, u, u->imm.unroll.hi, &hi));
    if (hi > lo && (uint64_t)hi - (uint64_t)lo > MAX_UNROLL) {
        return qd_error(ctx, qd_util_inst_loc(u), QD_ERR_COMPILATION,
                        "unroll of %llu iterations (at most %d)",
                        (unsigned long long)((uint64_t)hi - (uint64_t)lo), MAX_UNROLL);
    }
    if (hi > lo && (lo < INT32_MIN || hi - 1 > INT32_MAX)) {
        return qd_error(ctx, qd_util_inst_loc(u), QD_ERR_COMPILATION,
                        "unroll bounds %lld to %lld do not fit in i32", (long long)lo,
                        (long long)hi);
    }
    const char *outer_suffix = x->cl.suffix;
    /* An unroll among a kernel's (or a top_level function's) tasks expands into tasks. */
    bool kernel_level = x->cl.out == x->cl.dst->body &&
                        (x->cl.dst->kind == QD_FUNC_KERNEL || x->cl.dst->top_level);
    for (int64_t k = lo; k < hi; k++) {
        /* Names may not hold '-': copy -2 is suffixed ".n2". */
        char *suffix = qd_arena_printf(&x->in->pc->scratch, "%s.%s%lld", outer_suffix,
                                       k < 0 ? "n" : "", k < 0 ? -(long long)k : (long long)k);
        if (!suffix) {
            return -1;
        }
        x->cl.suffix = suffix;
        RETURN_IF_ERROR(count_copy(x->in, u));
        if (kernel_level) {
            /* Where tasks stand no value may: %k is only for compile-time expressions. */
            RETURN_IF_ERROR(push_var(x, u->result, k));
            int rc = expand_region(x, u->regions[0]);
            x->env.nvars--;
            RETURN_IF_ERROR(rc);
            continue;
        }
        /* %k.<k> = const k : i32, carrying the unroll's location, and its comments once. */
        QdInst *c = qd_inst_new(x->cl.dst, QD_OP_CONST, 0);
        const char *name;
        if (!c || qd_util_copy_name(&x->cl, x->cl.src->values[u->result].name, &name) < 0 ||
            qd_inst_set_result(x->cl.dst, c, qd_type_scalar(QD_TY_I32), name) == QD_NO_VALUE) {
            return -1;
        }
        c->imm.cst.i = (int32_t)k;
        c->loc = u->loc;
        c->text_line = u->text_line;
        if (k == lo) {
            c->comment = u->comment;
            c->trailing = u->trailing;
        }
        qd_util_emit(&x->cl, c);
        x->cl.map[u->result] = c->result;
        RETURN_IF_ERROR(push_var(x, u->result, k));
        int rc = expand_region(x, u->regions[0]);
        x->env.nvars--;
        RETURN_IF_ERROR(rc);
    }
    x->cl.suffix = outer_suffix;
    return 0;
}

/* Copies one instruction of the source body, with substitution, at the insertion point. */
static int
expand_inst(Expander *x, const QdInst *src)
{
    if (src->op == QD_OP_UNROLL) {
        return expand_unroll(x, src);
    }
    RETURN_IF_ERROR(count_copy(x->in, src));
    const QdType *type;
    RETURN_IF_ERROR(subst_type(x, src, src->type, &type));
    QdInst *inst = qd_util_clone_inst(&x->cl, src, type);
    if (!inst) {
        return -1;
    }
    if (src->op == QD_OP_CONST) {
        RETURN_IF_ERROR(resolve_const(x, src, inst));
    } else if (src->op == QD_OP_CALL) {
        RETURN_IF_ERROR(resolve_call(x, src, inst));
    }
    QdRegion *saved_out = x->cl.out;
    QdInst *saved_before = x->cl.before;
    int rc = 0;
    for (int i = 0; i < qd_op_info[src->op].nregions && rc == 0; i++) {
        x->cl.out = inst->regions[i];
        x->cl.before = NULL;
        x->cl.out->end_comment = src->regions[i]->end_comment;
        rc = expand_region(x, src->regions[i]);
    }
    x->cl.out = saved_out;
    x->cl.before = saved_before;
    return rc;
}

static int
expand_region(Expander *x, const QdRegion *src)
{
    for (const QdInst *inst = src->first; inst; inst = inst->next) {
        RETURN_IF_ERROR(expand_inst(x, inst));
    }
    return 0;
}

/***** instances *****/

/* "name<f32,16,@f>": the arguments in parameter order, no spaces. NULL when out of memory. */
static const char *
instance_name(Instantiator *in, const QdFunc *tmpl, const QdType **types, const int64_t *ints,
              const char **funcs)
{
    QdSbuf sb;
    qd_sbuf_init(&sb);
    qd_sbuf_printf(&sb, "%s<", tmpl->name);
    for (uint32_t k = 0; k < tmpl->ntparams; k++) {
        if (k > 0) {
            qd_sbuf_putc(&sb, ',');
        }
        if (tmpl->tparams[k].kind == QD_TPARAM_INT) {
            qd_sbuf_printf(&sb, "%lld", (long long)ints[k]);
        } else if (tmpl->tparams[k].kind == QD_TPARAM_FUNC) {
            qd_sbuf_printf(&sb, "@%s", funcs[k]);
        } else {
            qd_type_print(&sb, types[k]);
        }
    }
    qd_sbuf_putc(&sb, '>');
    const char *name = sb.failed ? NULL : qd_intern(in->m, sb.data);
    qd_sbuf_free(&sb);
    return name;
}

/* Finds or creates the instance of `tmpl` for the given arguments; *out_name is its name. */
static int
instantiate(Instantiator *in, const QdInst *call, QdFunc *tmpl, const QdType **type_args,
            const int64_t *int_args, const char **func_args, const char **out_name)
{
    const char *name = instance_name(in, tmpl, type_args, int_args, func_args);
    if (!name) {
        return -1;
    }
    *out_name = name;
    QdFunc *found = qd_module_find_func(in->m, name);
    if (found) {
        return 0;
    }
    if (in->depth >= MAX_DEPTH) {
        return qd_error(in->pc->ctx, qd_util_inst_loc(call), QD_ERR_COMPILATION,
                        "template instantiation nested more than %d deep (at @%s)", MAX_DEPTH,
                        name);
    }
    QdFunc *inst_f = qd_func_new(in->m, QD_FUNC_FUNC, name);
    if (!inst_f) {
        return -1;
    }
    inst_f->loc = tmpl->loc;
    inst_f->top_level = tmpl->top_level;
    inst_f->text_line = tmpl->text_line;

    Expander x;
    memset(&x, 0, sizeof(x));
    x.in = in;
    x.tmpl = tmpl;
    x.type_args = type_args;
    x.func_args = func_args;
    const char **int_names = QD_NEW_ARRAY(&in->pc->scratch, const char *, tmpl->ntparams + 1);
    if (!int_names || qd_util_cloner_init(&x.cl, in->pc, tmpl, inst_f, false, NULL) < 0) {
        return -1;
    }
    /* The env lists every parameter; type parameters get names no cexpr can spell. */
    for (uint32_t k = 0; k < tmpl->ntparams; k++) {
        int_names[k] = tmpl->tparams[k].kind == QD_TPARAM_INT ? tmpl->tparams[k].name : "";
    }
    x.env.names = int_names;
    x.env.values = int_args;
    x.env.count = tmpl->ntparams;

    /* Header: parameters (names kept) and result type, then the body. */
    for (uint32_t i = 0; i < tmpl->nparams; i++) {
        uint32_t p = tmpl->params[i];
        const QdType *ty;
        const char *pname;
        RETURN_IF_ERROR(subst_type(&x, call, tmpl->values[p].type, &ty));
        RETURN_IF_ERROR(qd_util_copy_name(&x.cl, tmpl->values[p].name, &pname));
        x.cl.map[p] = qd_func_add_param(inst_f, ty, pname);
        if (x.cl.map[p] == QD_NO_VALUE) {
            return -1;
        }
    }
    RETURN_IF_ERROR(subst_type(&x, call, tmpl->ret, &inst_f->ret));
    x.cl.out = inst_f->body;
    inst_f->body->end_comment = tmpl->body->end_comment;
    in->depth++;
    int rc = expand_region(&x, tmpl->body);
    in->depth--;
    return rc;
}

/***** kernels and funcs *****/

/* Rewrites calls of templates and expands unrolls in a region of a kernel or func, in place. */
static int
rewrite_region(Expander *x, QdRegion *r)
{
    for (QdInst *inst = r->first, *next; inst; inst = next) {
        next = inst->next;
        if (inst->op == QD_OP_UNROLL) {
            x->cl.out = r;
            x->cl.before = inst;
            RETURN_IF_ERROR(expand_unroll(x, inst));
            qd_inst_remove(inst);
            continue; /* the copies are complete */
        }
        if (inst->op == QD_OP_CALL) {
            RETURN_IF_ERROR(resolve_call(x, inst, inst));
        }
        for (int i = 0; i < qd_op_info[inst->op].nregions; i++) {
            RETURN_IF_ERROR(rewrite_region(x, inst->regions[i]));
        }
    }
    return 0;
}

int
qd_pass_instantiate(QdPassCtx *pc, QdModule *m)
{
    QdArenaMark mark = qd_arena_mark(&pc->scratch);
    Instantiator in = {pc, m, 0, 0};
    int rc = 0;
    /* Instances appended while this runs are complete when created: skip them. */
    uint32_t nfuncs = m->funcs.len;
    for (uint32_t i = 0; i < nfuncs && rc == 0; i++) {
        QdFunc *f = m->funcs.data[i];
        if (f->kind == QD_FUNC_TEMPLATE) {
            continue;
        }
        Expander x;
        memset(&x, 0, sizeof(x));
        x.in = &in;
        rc = qd_util_cloner_init(&x.cl, pc, f, f, true, NULL);
        if (rc == 0) {
            rc = rewrite_region(&x, f->body);
        }
    }
    if (rc == 0) {
        rc = qd_util_nomem(pc, m);
    } else if (pc->ctx->diag.kind == QD_ERR_NONE) {
        qd_util_nomem(pc, m);
    }
    qd_arena_reset(&pc->scratch, mark);
    return rc;
}
