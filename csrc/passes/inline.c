/* passes/inline.c -- the `inline` pass: every call in kernels and funcs becomes the callee's body,
 * except calls that recurse.
 *
 * Runs after `instantiate` (which leaves calls of concrete funcs only) and before the function
 * passes. Functions are processed callee-first: before a call is replaced, the callee's own calls
 * are inlined, so each body is flattened once and copies never contain calls. A call that
 * reaches a function already being inlined is recursion, which is an error.
 *
 * At a call site the callee's parameters stand for the call's operands, and the callee's values
 * are copied with the suffix ".i<N>" (N counts the inlined call sites of the caller, from 0), so
 * names stay readable and unique. The result of the call becomes the operand of the callee's
 * `ret`, which must be the last instruction of its body: regions yield no values, so a `ret`
 * nested in control flow would need a result slot and flags, which we do not build (such funcs
 * are rejected). Templates are left alone; funcs stay in the module after inlining.
 *
 * Recursion stays a call: a call that reaches a function being flattened is left as it is, and
 * a function that still contains a call once flattened is recursive (it reaches itself), so
 * calls of it are left too. Code generation compiles such functions as functions.
 */
#include "util.h"

#include <string.h>

typedef enum FuncState {
    NOT_VISITED, /* calls not inlined yet */
    IN_PROGRESS, /* being inlined: a call reaching it is recursion */
    FLAT,        /* no calls left */
    RECURSIVE,   /* flattened, but it reaches itself: calls of it stay calls */
} FuncState;

/* State of the whole pass. */
typedef struct Inliner {
    QdPassCtx *pc;     /* errors and scratch */
    QdModule *m;       /* module being rewritten */
    FuncState *state;  /* per function index of m->funcs */
} Inliner;

/* State for one caller. */
typedef struct Caller {
    QdFunc *f;        /* the function whose calls are being replaced */
    QdNameSet names;  /* names used in f, shared by all its call sites */
    uint32_t *result; /* call result id -> value replacing it (QD_NO_VALUE = none) */
    uint32_t nresult; /* entries in result (f->nvalues before inlining) */
    uint32_t nsites;  /* call sites inlined so far */
    bool has_calls;   /* a call (recursion) was left in f */
} Caller;

static int flatten(Inliner *in, uint32_t index);

static uint32_t
func_index(const QdModule *m, const char *name)
{
    for (uint32_t i = 0; i < m->funcs.len; i++) {
        if (strcmp(m->funcs.data[i]->name, name) == 0) {
            return i;
        }
    }
    return UINT32_MAX;
}

/* Number of `ret` instructions in a region tree. */
static uint32_t
count_rets(const QdRegion *r)
{
    uint32_t n = 0;
    for (const QdInst *inst = r->first; inst; inst = inst->next) {
        n += inst->op == QD_OP_RET;
        for (int i = 0; i < qd_op_info[inst->op].nregions; i++) {
            n += count_rets(inst->regions[i]);
        }
    }
    return n;
}

/* Operand of the caller after earlier call sites were replaced. */
static uint32_t
current_value(const Caller *c, uint32_t id)
{
    if (id < c->nresult && c->result[id] != QD_NO_VALUE) {
        return c->result[id];
    }
    return id;
}

/* The call's own comments move to the first instruction that replaces it. */
static int
keep_comments(Inliner *in, const QdInst *call, QdInst *first)
{
    if (call->comment) {
        first->comment = first->comment ? qd_arena_printf(&in->m->arena, "%s\n%s", call->comment,
                                                          first->comment)
                                        : call->comment;
        if (!first->comment) {
            return -1;
        }
    }
    if (call->trailing && !first->trailing) {
        first->trailing = call->trailing;
    }
    return 0;
}

/* Replaces `call` (in caller c) by a copy of the body of g, which has no calls left. */
static int
inline_call(Inliner *in, Caller *c, QdInst *call, QdFunc *g)
{
    QdCtx *ctx = in->pc->ctx;
    QdLoc loc = qd_util_inst_loc(call);
    uint32_t nrets = count_rets(g->body);
    const QdInst *last = g->body->last;
    bool trailing_ret = last && last->op == QD_OP_RET;
    if (nrets > 1 || (nrets == 1 && !trailing_ret)) {
        return qd_error(ctx, loc, QD_ERR_COMPILATION,
                        "inline: @%s returns from inside control flow; not supported", g->name);
    }
    if (call->nargs != g->nparams) {
        return qd_error(ctx, loc, QD_ERR_COMPILATION, "inline: @%s takes %u arguments, got %u",
                        g->name, g->nparams, call->nargs);
    }
    if (call->result != QD_NO_VALUE && !(trailing_ret && last->nargs == 1)) {
        return qd_error(ctx, loc, QD_ERR_COMPILATION, "inline: @%s returns no value", g->name);
    }

    QdCloner cl;
    RETURN_IF_ERROR(qd_util_cloner_init(&cl, in->pc, g, c->f, false, &c->names));
    cl.suffix = qd_arena_printf(&in->pc->scratch, ".i%u", c->nsites++);
    cl.out = call->parent;
    cl.before = call;
    if (!cl.suffix) {
        return -1;
    }
    for (uint32_t i = 0; i < g->nparams; i++) {
        cl.map[g->params[i]] = current_value(c, call->args[i]);
    }
    QdInst *prev = call->prev;
    for (const QdInst *inst = g->body->first; inst; inst = inst->next) {
        if (inst == last && trailing_ret) {
            break;
        }
        RETURN_IF_ERROR(qd_util_clone_deep(&cl, inst));
    }
    QdInst *first = prev ? prev->next : call->parent->first;
    if (first != call) {
        RETURN_IF_ERROR(keep_comments(in, call, first));
    }
    c->names = cl.names;
    if (call->result != QD_NO_VALUE) {
        uint32_t v = last->args[0];
        c->result[call->result] = v < cl.map_len && cl.map[v] != QD_NO_VALUE ? cl.map[v] : v;
    }
    qd_inst_remove(call);
    return 0;
}

/* Inlines every call in region r of caller c, callees first. */
static int
inline_region(Inliner *in, Caller *c, QdRegion *r)
{
    QdCtx *ctx = in->pc->ctx;
    for (QdInst *inst = r->first, *next; inst; inst = next) {
        next = inst->next;
        for (int i = 0; i < qd_op_info[inst->op].nregions; i++) {
            RETURN_IF_ERROR(inline_region(in, c, inst->regions[i]));
        }
        if (inst->op != QD_OP_CALL) {
            continue;
        }
        const char *name = inst->imm.call.name;
        uint32_t gi = func_index(in->m, name);
        if (gi == UINT32_MAX) {
            return qd_error(ctx, qd_util_inst_loc(inst), QD_ERR_NAME,
                            "inline: call of unknown function @%s", name);
        }
        QdFunc *g = in->m->funcs.data[gi];
        if (g->kind != QD_FUNC_FUNC) {
            return qd_error(ctx, qd_util_inst_loc(inst), QD_ERR_COMPILATION,
                            g->kind == QD_FUNC_TEMPLATE
                                ? "call of template @%s: run `instantiate` first"
                                : "call of kernel @%s: only funcs can be called",
                            name);
        }
        if (in->state[gi] == NOT_VISITED) {
            RETURN_IF_ERROR(flatten(in, gi));
        }
        if (in->state[gi] == IN_PROGRESS || in->state[gi] == RECURSIVE) {
            c->has_calls = true; /* recursion: the call stays */
            continue;
        }
        RETURN_IF_ERROR(inline_call(in, c, inst, g));
    }
    return 0;
}

/* Inlines every call of function `index`, after flattening its callees. */
static int
flatten(Inliner *in, uint32_t index)
{
    QdFunc *f = in->m->funcs.data[index];
    Caller c;
    memset(&c, 0, sizeof(c));
    c.f = f;
    c.nresult = f->nvalues;
    c.result = QD_NEW_ARRAY(&in->pc->scratch, uint32_t, c.nresult ? c.nresult : 1);
    if (!c.result || qd_util_names_init(&c.names, &in->pc->scratch, f) < 0) {
        return -1;
    }
    for (uint32_t i = 0; i < c.nresult; i++) {
        c.result[i] = QD_NO_VALUE;
    }
    in->state[index] = IN_PROGRESS;
    RETURN_IF_ERROR(inline_region(in, &c, f->body));
    /* Uses of call results now read the values the inlined bodies returned. */
    qd_util_replace_uses(f->body, c.result, c.nresult);
    in->state[index] = c.has_calls ? RECURSIVE : FLAT;
    return 0;
}

int
qd_pass_inline(QdPassCtx *pc, QdModule *m)
{
    QdArenaMark mark = qd_arena_mark(&pc->scratch);
    Inliner in = {pc, m, NULL};
    int rc = -1;
    in.state = QD_NEW_ARRAY(&pc->scratch, FuncState, m->funcs.len ? m->funcs.len : 1);
    if (in.state) {
        rc = 0;
        for (uint32_t i = 0; i < m->funcs.len && rc == 0; i++) {
            if (m->funcs.data[i]->kind != QD_FUNC_TEMPLATE && in.state[i] == NOT_VISITED) {
                rc = flatten(&in, i);
            }
        }
    }
    if (rc == 0 || pc->ctx->diag.kind == QD_ERR_NONE) {
        int nomem = qd_util_nomem(pc, m);
        rc = rc == 0 ? nomem : -1;
    }
    qd_arena_reset(&pc->scratch, mark);
    return rc;
}
