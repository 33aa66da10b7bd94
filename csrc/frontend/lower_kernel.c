/* frontend/lower_kernel.c -- lowering a kernel: tasks, scopes, slots, @qd.func inlining.
 *
 * Entry point of the frontend (qd_frontend_lower_kernel). It creates the QIR kernel, binds the
 * kernel's parameters, and lowers the body statement by statement. Instructions go to
 * `lw->cur`; at the kernel's top level there is no current region between tasks, and the first
 * instruction of a run of top-level statements opens a serial task (lw_ensure_region), while
 * lower_stmt.c opens a range_for task for each top-level `for`. Variables declared at the top
 * level are kernel temporaries (`tmp_alloc`), visible to every task; variables declared inside
 * a task are `alloca` slots placed at the start of the task, where LLVM promotes them.
 *
 * A @qd.func call is inlined here at the AST level: the callee's parameters are bound in a fresh
 * frame (its own globals, no access to the caller's locals), and its body is lowered in place.
 * A @qd.real_func is inlined the same way, except where it recurses (lower_realfunc.c).
 */
#include "lower.h"

#include <stdio.h>
#include <string.h>

#define MAX_INLINE_DEPTH 64

/***** errors and locations *****/

void
lw_set_loc(Lowerer *lw, const QdAst *node)
{
    if (node && node->line) {
        lw->loc.file = lw->frame ? lw->frame->file : NULL;
        lw->loc.line = node->line;
        lw->loc.col = node->col;
    }
}

static QdLoc
node_loc(Lowerer *lw, const QdAst *node)
{
    QdLoc loc = lw->loc;
    if (node && node->line) {
        loc.file = lw->frame ? lw->frame->file : NULL;
        loc.line = node->line;
        loc.col = node->col;
    }
    return loc;
}

int
lw_error(Lowerer *lw, const QdAst *node, QdErrKind kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    qd_verror(lw->ctx, node_loc(lw, node), kind, fmt, ap);
    va_end(ap);
    return -1;
}

int
lw_warn(Lowerer *lw, const QdAst *node, const char *category, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (!lw->host->warn) {
        return 0;
    }
    return lw->host->warn(lw->host->self, lw->ctx, category, node_loc(lw, node), msg);
}

/***** scopes *****/

void
lw_push_scope(Lowerer *lw)
{
    qd_vec_push(lw->arena, &lw->scopes, lw->vars.len);
}

void
lw_pop_scope(Lowerer *lw)
{
    if (lw->scopes.len) {
        lw->vars.len = qd_vec_pop(&lw->scopes);
    }
}

Var *
lw_lookup_local(Lowerer *lw, const char *name)
{
    uint32_t base = lw->frame ? lw->frame->vars_base : 0;
    for (uint32_t i = lw->vars.len; i-- > base;) {
        if (lw->vars.data[i].name == name) {
            return &lw->vars.data[i];
        }
    }
    return NULL;
}

int
lw_bind(Lowerer *lw, const char *name, const Expr *e, Var **out)
{
    Var v = {0};
    v.name = qd_intern(lw->m, name);
    v.e = *e;
    v.control_depth = lw->frame ? lw->frame->control_depth : 0;
    if (!v.name || qd_vec_push(lw->arena, &lw->vars, v) < 0) {
        return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
    }
    if (out) {
        *out = &qd_vec_last(&lw->vars);
    }
    return 0;
}

/***** emission *****/

int
lw_ensure_region(Lowerer *lw)
{
    if (lw->cur) {
        return 0;
    }
    QdInst *task = qd_inst_new(lw->f, QD_OP_TASK, 0);
    if (!task) {
        return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
    }
    task->imm.task.kind = QD_TASK_SERIAL;
    task->loc = lw->loc;
    qd_region_append(lw->f->body, task);
    lw->task = task;
    lw->cur = task->regions[0];
    return 0;
}

QdInst *
lw_emit(Lowerer *lw, QdOp op, uint32_t nargs)
{
    if (lw_ensure_region(lw) < 0) {
        return NULL;
    }
    QdInst *inst = qd_inst_new(lw->f, op, nargs);
    if (!inst) {
        qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
        return NULL;
    }
    inst->loc = lw->loc;
    qd_region_append(lw->cur, inst);
    return inst;
}

uint32_t
lw_emit_value(Lowerer *lw, QdOp op, const QdType *ty, uint32_t a, uint32_t b)
{
    int nargs = qd_op_info[op].nargs;
    QdInst *inst = lw_emit(lw, op, nargs < 0 ? 0 : (uint32_t)nargs);
    if (!inst) {
        return QD_NO_VALUE;
    }
    if (nargs >= 1) {
        inst->args[0] = a;
    }
    if (nargs >= 2) {
        inst->args[1] = b;
    }
    return qd_inst_set_result(lw->f, inst, ty, NULL);
}

int
lw_nomem(Lowerer *lw)
{
    return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
}

int
lw_new_slot(Lowerer *lw, const QdType *ty, Expr *out)
{
    bool kernel_scope = lw->at_top;
    QdInst *inst = qd_inst_new(lw->f, kernel_scope ? QD_OP_TMP_ALLOC : QD_OP_ALLOCA, 0);
    const QdType *pty =
        qd_type_ptr(lw->m, ty, kernel_scope ? QD_SPACE_GLOBAL : QD_SPACE_LOCAL);
    if (!inst || !pty || qd_inst_set_result(lw->f, inst, pty, NULL) == QD_NO_VALUE) {
        return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
    }
    inst->loc = lw->loc;
    if (kernel_scope) {
        /* Kernel temporaries live in the kernel body, before the task being filled. */
        qd_region_insert_before(lw->f->body, lw->task && lw->cur ? lw->task : NULL, inst);
    } else {
        /* Allocas go to the start of the task, where LLVM promotes them to registers. */
        RETURN_IF_ERROR(lw_ensure_region(lw));
        QdRegion *r = lw->task ? lw->task->regions[0] : lw->f->body; /* a function: its body */
        qd_region_insert_before(r, r->first, inst);
    }
    memset(out, 0, sizeof(*out));
    out->kind = EX_LVALUE;
    out->id = inst->result;
    out->ty = ty;
    out->space = kernel_scope ? QD_SPACE_GLOBAL : QD_SPACE_LOCAL;
    out->is_global = kernel_scope;
    return 0;
}

/***** statements lists and funcs *****/

/* Converts a compile-time scalar to a constant of type ty (C conversion semantics), range
 * checked like any literal; the result is still compile-time, with e->ty = ty. */
int
lw_typed_constant(Lowerer *lw, const QdAst *node, Expr *e, const QdType *ty)
{
    if (qd_type_is_float(ty)) {
        RETURN_IF_ERROR(lw_check_literal(lw, node, e)); /* a Python int is default_ip first */
        double v = e->kind == EX_FLOAT || e->is_big ? e->fval : (double)e->ival;
        if (e->kind == EX_FLOAT && !e->ty) {
            v = lw_python_float(lw, v); /* a Python float is a default_fp value first */
        }
        e->kind = EX_FLOAT;
        e->fval = ty->kind == QD_TY_F32 ? (double)(float)v : v;
    } else {
        if (e->kind == EX_FLOAT) {
            e->kind = EX_INT;
            e->ival = ty->kind == QD_TY_U1 ? e->fval != 0 : (int64_t)e->fval;
        }
        /* The literal is a default_ip value first, then converted (wrapping) like a cast. */
        RETURN_IF_ERROR(lw_check_literal(lw, node, e));
        uint32_t bits = qd_type_bits(ty);
        if (ty->kind == QD_TY_U1) {
            e->kind = EX_BOOL;
            e->ival = e->ival != 0;
        } else if (bits < 64) {
            uint64_t u = (uint64_t)e->ival & (((uint64_t)1 << bits) - 1);
            if (qd_type_is_signed(ty) && (u >> (bits - 1))) {
                u |= ~(((uint64_t)1 << bits) - 1);
            }
            e->kind = EX_INT;
            e->ival = (int64_t)u;
        }
    }
    e->ty = ty;
    e->h = 0;
    return 0;
}

int
lw_stmts(Lowerer *lw, const QdAstList *body)
{
    for (uint32_t i = 0; i < body->len; i++) {
        if (lw->frame->returned || lw->terminated) {
            break; /* what follows a return, break or continue never runs */
        }
        RETURN_IF_ERROR(lw_stmt(lw, body->items[i]));
    }
    return 0;
}

/* Finds the argument for parameter `param` (index i) among positional and keyword arguments. */
const Expr *
lw_find_arg(const QdAst *call, const QdAst *param, uint32_t i, const Expr *args, uint32_t npos,
            uint32_t nargs)
{
    if (i < npos) {
        return &args[i];
    }
    for (uint32_t k = npos; k < nargs; k++) {
        const QdAst *kw = call->b.items[k - npos];
        if (kw->name && strcmp(kw->name, param->name) == 0) {
            return &args[k];
        }
    }
    return NULL;
}

static int call_func(Lowerer *lw, const QdAst *call, const Expr *fn, const Expr *args,
                     uint32_t nargs, uint32_t nbound, Expr *out);

int
lw_call_func(Lowerer *lw, const QdAst *call, const Expr *fn, const Expr *args, uint32_t nargs,
             Expr *out)
{
    return call_func(lw, call, fn, args, nargs, 0, out);
}

int
lw_call_func_bound(Lowerer *lw, const QdAst *call, const Expr *fn, const Expr *args,
                   uint32_t nargs, Expr *out)
{
    return call_func(lw, call, fn, args, nargs, 1, out);
}

/* A func declared @qd.func(requires_top_level=True) (its body is a sequence of top-level loops,
 * each a grid-wide phase) may only be called where statements are at the kernel's top level. */
static int
check_top_level(Lowerer *lw, const QdAst *call, const Expr *fn, const QdAst *def)
{
    QdHandle flag;
    int rc = lw->host->getattr(lw->host->self, lw->ctx, fn->h, "_qd_requires_top_level", &flag);
    if (rc != 0) {
        return rc > 0 ? 0 : rc;
    }
    bool required = false;
    RETURN_IF_ERROR(lw->host->truth(lw->host->self, lw->ctx, flag, &required));
    return required ? lw_require_top_level(lw, call, def->name) : 0;
}

int
lw_require_top_level(Lowerer *lw, const QdAst *call, const char *name)
{
    if (lw->at_top) {
        return 0;
    }
    return lw_error(lw, call, QD_ERR_SYNTAX,
                    "`%s` is decorated with requires_top_level=True and must be called at the top "
                    "level of a @qd.kernel (or directly inside a `while qd.graph.do_while(...)` "
                    "body). It cannot be nested inside a runtime for / if / while: that demotes its "
                    "phase loops out of top-level position, collapsing the per-phase grid-wide "
                    "barriers and corrupting the result.",
                    name);
}

/* Whether func `fn` is a @qd.real_func. */
static int
is_real_func(Lowerer *lw, const Expr *fn, bool *out)
{
    *out = false;
    QdHandle flag;
    int rc = lw->host->getattr(lw->host->self, lw->ctx, fn->h, "_qd_real_func", &flag);
    if (rc != 0) {
        return rc > 0 ? 0 : rc;
    }
    return lw->host->truth(lw->host->self, lw->ctx, flag, out);
}

/* A `qd.ref(T)` parameter (annotation `ann`, a RefType): the argument must be a variable -- a
 * scalar in memory (a local, or an element of a field or ndarray) of type T, or a vector/matrix
 * variable -- and the parameter is bound to it, so that the callee's assignments change it.
 * *is_ref tells whether `ann` is such an annotation. */
static int
ref_param(Lowerer *lw, const QdAst *call, const QdAst *param, const Expr *ann, const Expr *value,
          bool *is_ref)
{
    QdHandle tp;
    int rc = lw->host->getattr(lw->host->self, lw->ctx, ann->h, "_qd_ref_tp", &tp);
    if (rc != 0) {
        return rc > 0 ? 0 : rc;
    }
    *is_ref = true;
    bool is_var = value->kind == EX_LVALUE;
    if (value->kind == EX_MATRIX) {
        is_var = value->nitems > 0;
        for (uint32_t k = 0; k < value->nitems; k++) {
            is_var &= value->items[k].kind == EX_LVALUE;
        }
    }
    if (!is_var) {
        return lw_error(lw, call, QD_ERR_SYNTAX,
                        "argument '%s' of a qd.ref parameter must be a variable (a local, or an "
                        "element of a field or ndarray), not a value",
                        param->name);
    }
    Expr t;
    RETURN_IF_ERROR(lw_from_handle(lw, param, tp, &t));
    bool is_scalar_ref = t.kind == EX_PYOBJ && t.hkind == QD_HOST_DTYPE;
    if (is_scalar_ref && (value->kind != EX_LVALUE || t.ty->kind != value->ty->kind)) {
        const char *want = qd_type_scalar_name(t.ty->kind);
        const char *got =
            value->kind == EX_LVALUE ? qd_type_scalar_name(value->ty->kind) : "a vector/matrix";
        return lw_error(lw, call, QD_ERR_TYPE,
                        "argument '%s' of parameter qd.ref(%s) must be a %s variable, got %s",
                        param->name, want, want, got);
    }
    return 0;
}

/* Inlines a call; the first `nbound` entries of args are bound arguments (self) that precede
 * the call's positional arguments. */
/* Whether target (of an assignment, a for loop, `with ... as`, `:=`) binds `name`. */
static bool
target_binds(const QdAst *t, const char *name)
{
    if (t == NULL) {
        return false;
    }
    if (t->kind == QD_AST_NAME) {
        return t->name != NULL && strcmp(t->name, name) == 0;
    }
    if (t->kind == QD_AST_STARRED) {
        return target_binds(t->x, name);
    }
    if (t->kind == QD_AST_TUPLE || t->kind == QD_AST_LIST) {
        for (uint32_t i = 0; i < t->a.len; i++) {
            if (target_binds(t->a.items[i], name)) {
                return true;
            }
        }
    }
    return false;
}

/* Whether `arg` (a call argument or keyword) is the plain name `name`. */
static bool
is_name_arg(const QdAst *arg, const char *name)
{
    if (arg != NULL && arg->kind == QD_AST_KEYWORD) {
        arg = arg->x;
    }
    return arg != NULL && arg->kind == QD_AST_NAME && arg->name != NULL &&
           strcmp(arg->name, name) == 0;
}

/* Whether a call may write an argument that is a plain name: every call but Python's builtins
 * of scalars (`range(n)`, `min(a, b)`, ...) and `qd.<name>(...)` builtins other than the
 * atomics. A func's qd.template() or qd.ref parameter is the caller's variable, so any other
 * callee counts as writing. */
static bool
call_may_write(const QdAst *call)
{
    static const char *const pure[] = {"range", "len", "int", "float", "bool", "abs", "min", "max",
                                       "print", "isinstance"};
    const QdAst *f = call->x;
    if (f != NULL && f->kind == QD_AST_NAME && f->name != NULL) {
        for (size_t i = 0; i < sizeof(pure) / sizeof(pure[0]); i++) {
            if (strcmp(f->name, pure[i]) == 0) {
                return false;
            }
        }
        return true;
    }
    if (f == NULL || f->kind != QD_AST_ATTRIBUTE || f->name == NULL) {
        return true;
    }
    const QdAst *root = f->x;
    while (root != NULL && root->kind == QD_AST_ATTRIBUTE) {
        root = root->x;
    }
    bool is_qd = root != NULL && root->kind == QD_AST_NAME && root->name != NULL &&
                 strcmp(root->name, "qd") == 0;
    return !is_qd || strncmp(f->name, "atomic_", 7) == 0;
}

/* Whether any statement or expression under node may assign the plain name `name`: an
 * assignment, or the name passed as it is to a call that may write it (call_may_write). */
static bool
assigns_name(const QdAst *node, const char *name)
{
    if (node == NULL) {
        return false;
    }
    switch (node->kind) {
    case QD_AST_CALL:
        for (uint32_t i = 0; i < node->a.len && call_may_write(node); i++) {
            if (is_name_arg(node->a.items[i], name)) {
                return true;
            }
        }
        for (uint32_t i = 0; i < node->b.len && call_may_write(node); i++) {
            if (is_name_arg(node->b.items[i], name)) {
                return true;
            }
        }
        break;
    case QD_AST_ASSIGN:
        for (uint32_t i = 0; i < node->a.len; i++) {
            if (target_binds(node->a.items[i], name)) {
                return true;
            }
        }
        break;
    case QD_AST_AUG_ASSIGN:
    case QD_AST_ANN_ASSIGN:
    case QD_AST_FOR:
    case QD_AST_NAMED_EXPR:
    case QD_AST_COMPREHENSION:
        if (target_binds(node->x, name)) {
            return true;
        }
        break;
    case QD_AST_WITH_ITEM:
        if (target_binds(node->y, name)) {
            return true;
        }
        break;
    default:
        break;
    }
    const QdAst *kids[3] = {node->x, node->y, node->z};
    for (uint32_t k = 0; k < 3; k++) {
        if (assigns_name(kids[k], name)) {
            return true;
        }
    }
    const QdAstList *lists[2] = {&node->a, &node->b};
    for (uint32_t k = 0; k < 2; k++) {
        for (uint32_t i = 0; i < lists[k]->len; i++) {
            if (assigns_name(lists[k]->items[i], name)) {
                return true;
            }
        }
    }
    return false;
}

/* Whether a runtime scalar argument can be read where it lives instead of copied into a fresh
 * variable: it is one of the caller's variables (not an element of a field or an ndarray, which
 * the callee may change), of the parameter's type, no other argument is the same variable, and
 * the callee never assigns the parameter nor passes it as it is to a call. At the top level of a kernel a copy is a serial task
 * of its own, between the tasks of the loops around the call. */
static bool
binds_in_place(Lowerer *lw, const QdAst *def, const QdAst *param, const Expr *bound,
               uint32_t nparams, uint32_t i, const QdType *ann)
{
    const Expr *v = &bound[i];
    if (v->kind != EX_LVALUE || (ann && ann != v->ty)) {
        return false;
    }
    bool is_variable = false;
    for (uint32_t k = 0; k < lw->vars.len && !is_variable; k++) {
        const Expr *e = &lw->vars.data[k].e;
        is_variable = e->kind == EX_LVALUE && e->id == v->id;
    }
    for (uint32_t j = 0; j < nparams && is_variable; j++) {
        if (j != i && bound[j].kind == EX_LVALUE && bound[j].id == v->id) {
            return false;
        }
    }
    if (!is_variable) {
        return false;
    }
    for (uint32_t k = 0; k < def->b.len; k++) {
        if (assigns_name(def->b.items[k], param->name)) {
            return false;
        }
    }
    return true;
}

static int
call_func(Lowerer *lw, const QdAst *call, const Expr *fn, const Expr *args, uint32_t nargs,
          uint32_t nbound, Expr *out)
{
    if (lw->depth >= MAX_INLINE_DEPTH) {
        return lw_error(lw, call, QD_ERR_SYNTAX,
                        "@qd.func calls nested too deeply (recursion is not supported)");
    }
    QdAst *def = NULL;
    RETURN_IF_ERROR(lw->host->func_ast(lw->host->self, lw->ctx, fn->h, lw->arena, &def));
    uint32_t npos = nargs - call->b.len; /* starred arguments may have expanded (nbound included) */
    FuncFrame frame = {0};
    frame.scope = fn->h;
    frame.file = def->cst.sval;
    frame.vars_base = lw->vars.len;
    frame.parent = lw->frame;
    frame.ret_annotation = def->x;
    frame.ret.kind = EX_VOID;
    RETURN_IF_ERROR(check_top_level(lw, call, fn, def));
    RETURN_IF_ERROR(is_real_func(lw, fn, &frame.is_real));
    frame.def = def;
    /* Arguments are evaluated in the caller; parameters are bound in the callee's frame. */
    uint32_t nparams = def->a.len;
    if (npos > nparams) {
        return lw_error(lw, call, QD_ERR_SYNTAX,
                        "Too many arguments. %s() takes %u positional arguments but %u were given.",
                        def->name, nparams, npos);
    }
    if (frame.is_real && lw_is_recursive_call(lw, def)) {
        return lw_real_call(lw, call, fn, def, args, nargs, npos, out);
    }
    Expr *bound = QD_NEW_ARRAY(lw->arena, Expr, nparams ? nparams : 1);
    if (!bound) {
        return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
    }
    for (uint32_t k = npos; k < nargs; k++) {
        const QdAst *kw = call->b.items[k - npos];
        uint32_t i = 0;
        while (i < nparams && !(kw->name && strcmp(kw->name, def->a.items[i]->name) == 0)) {
            i++;
        }
        if (i == nparams) {
            return lw_error(lw, kw, QD_ERR_SYNTAX, "Unexpected argument '%s'.", kw->name ? kw->name : "**");
        }
        if (i < npos) {
            return lw_error(lw, kw, QD_ERR_SYNTAX, "Multiple values for argument '%s'.", kw->name);
        }
    }
    FuncFrame *caller = lw->frame;
    lw->frame = &frame;
    lw->depth++;
    LoopScope loops = lw_loop_enter(lw, LOOP_NONE);
    lw_push_scope(lw);
    int rc = 0;
    for (uint32_t i = 0; i < nparams && rc == 0; i++) {
        const QdAst *param = def->a.items[i];
        const Expr *arg = lw_find_arg(call, param, i, args, npos, nargs);
        Expr value;
        if (arg) {
            value = *arg;
        } else if (param->y) {
            rc = lw_expr(lw, param->y, &value);
            if (rc < 0) {
                break;
            }
        } else {
            lw->frame = caller;
            rc = lw_error(lw, call, QD_ERR_SYNTAX, "Missing argument '%s'.", param->name);
            lw->frame = &frame;
            break;
        }
        bound[i] = value;
    }
    /* Scalars, vectors and structs cross the boundary by value: each gets a fresh variable,
     * converted to the annotation when there is one. Everything else (fields, ndarrays), and any
     * argument of a `qd.template()` parameter, by reference: the callee's assignments to a template
     * parameter change the caller's variable, as in the reference. */
    for (uint32_t i = 0; i < nparams && rc == 0; i++) {
        const QdAst *param = def->a.items[i];
        Expr value = bound[i];
        const QdType *ann = NULL;
        bool is_template = false;
        bool is_ref = false;
        if (param->x) {
            Expr a;
            rc = lw_param_annotation(lw, param, &a);
            if (rc < 0) {
                break;
            }
            if (a.kind == EX_PYOBJ && a.hkind == QD_HOST_DTYPE) {
                ann = a.ty;
            }
            is_template = a.kind == EX_PYOBJ && a.hkind == QD_HOST_TEMPLATE_ANNOTATION;
            if (a.kind == EX_PYOBJ && a.hkind == QD_HOST_OBJECT) {
                rc = ref_param(lw, call, param, &a, &value, &is_ref);
                if (rc < 0) {
                    break;
                }
                is_template |= is_ref;
            }
            if (a.kind == EX_PYOBJ && a.hkind == QD_HOST_MATRIX_TYPE && value.kind == EX_MATRIX) {
                MatrixCall mc = {&value, 1, NULL, NULL, 0}; /* converted to the annotated type */
                rc = lw_matrix_type_call(lw, param, &a, &mc, &value);
                if (rc < 0) {
                    break;
                }
            }
        }
        if (is_template) {
            /* bound as it is */
        } else if (value.kind == EX_TILE) {
            rc = lw_tile_new_var(lw, param, &value, &value); /* a tile is copied */
        } else if ((value.kind == EX_STRUCT && i >= nbound) || value.kind == EX_MATRIX) {
            /* A struct is copied, except the bound `self` of a method. */
            rc = lw_struct_new_var(lw, param, &value, &value);
        } else if (!frame.is_real && binds_in_place(lw, def, param, bound, nparams, i, ann)) {
            /* the caller's variable, read in place */
        } else if (lw_is_runtime(&value) && value.kind != EX_NDARRAY) {
            Expr rv, slot;
            rc = lw_rvalue(lw, param, &value, &rv);
            if (rc == 0 && ann) {
                rc = lw_convert(lw, param, &rv, ann, &rv);
            }
            if (rc == 0) {
                rc = lw_new_slot(lw, rv.ty, &slot);
            }
            if (rc == 0) {
                rc = lw_store(lw, param, &slot, &rv);
            }
            value = slot;
        } else if (ann && lw_is_compile_time_scalar(&value)) {
            /* A constant stays a constant (materialized where it is used, which may be a later
             * task), converted now and typed by the annotation. */
            rc = lw_typed_constant(lw, param, &value, ann);
        }
        Var *var = NULL;
        if (rc == 0) {
            rc = lw_bind(lw, param->name, &value, &var);
        }
        if (rc == 0 && frame.is_real && !is_ref) {
            var->is_arg = true; /* a real_func's parameters (but qd.ref ones) are immutable */
        }
    }
    if (rc == 0 && frame.is_real && lw_returns_early(def)) {
        rc = lw_early_return_body(lw, def, &frame);
    } else if (rc == 0) {
        rc = lw_stmts(lw, &def->b);
    }
    lw_pop_scope(lw);
    lw_loop_leave(lw, &loops);
    lw->depth--;
    lw->frame = caller;
    if (rc < 0) {
        return -1;
    }
    bool returns_none = def->x && def->x->kind == QD_AST_CONSTANT && def->x->cst.kind == QD_CONST_NONE;
    if (def->x && !returns_none && !frame.returned && !frame.early_return) {
        return lw_error(lw, call, QD_ERR_SYNTAX,
                        "Function has a return type but does not have a return statement");
    }
    *out = frame.ret;
    return 0;
}

/***** the kernel *****/

/* The Expr of one kernel argument: a QIR parameter (scalars, ndarrays) or a compile-time value. */
static int
arg_expr(Lowerer *lw, const QdAst *param, const QdKernelArg *arg, Expr *e)
{
    memset(e, 0, sizeof(*e));
    switch (arg->kind) {
    case QD_ARG_SCALAR: {
        const QdType *ty = qd_type_scalar(arg->dtype);
        e->kind = EX_VALUE;
        e->ty = ty;
        e->id = qd_func_add_param(lw->f, ty, arg->name);
        break;
    }
    case QD_ARG_NDARRAY: {
        const QdType *ty = qd_type_ndarray(lw->m, qd_type_scalar(arg->dtype), arg->ndim);
        e->kind = EX_NDARRAY;
        e->ty = qd_type_scalar(arg->dtype);
        /* The descriptor's element axes: the array's last elem_ndim axes form one vector or
         * matrix element, which indexing yields whole. */
        if (arg->elem_ndim > arg->ndim || arg->elem_ndim > 2) {
            return lw_error(lw, param, QD_ERR_INTERNAL, "ndarray argument %s with %u element axes",
                            arg->name, arg->elem_ndim);
        }
        e->ndim = arg->ndim - arg->elem_ndim;
        if (arg->elem_ndim > 0) {
            e->is_vector = arg->elem_ndim == 1;
            e->rows = arg->elem_shape[0];
            e->cols = arg->elem_ndim == 2 ? arg->elem_shape[1] : 1;
        }
        e->id = ty ? qd_func_add_param(lw->f, ty, arg->name) : QD_NO_VALUE;
        if (arg->has_layout && arg->ndim > 0) {
            uint8_t *layout = qd_arena_alloc(lw->arena, arg->ndim);
            if (!layout) {
                return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
            }
            memcpy(layout, arg->layout, arg->ndim);
            e->layout = layout;
        }
        break;
    }
    case QD_ARG_TEMPLATE:
        return lw_from_handle(lw, param, arg->value, e);
    }
    if (e->id == QD_NO_VALUE) {
        return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
    }
    return 0;
}

/* Places `value` at `path` ("b.c") inside the member dict `root` (a dataclass argument arrives
 * flattened, one argument per leaf member, named "param.member.member"). */
static int
insert_member(Lowerer *lw, Expr *root, const char *path, const Expr *value)
{
    const char *dot = strchr(path, '.');
    size_t len = dot ? (size_t)(dot - path) : strlen(path);
    Expr *slot = NULL;
    for (uint32_t i = 0; i < root->nitems; i++) {
        if (strlen(root->keys[i].str) == len && strncmp(root->keys[i].str, path, len) == 0) {
            slot = &root->items[i];
        }
    }
    if (!slot) {
        uint32_t n = root->nitems + 1;
        Expr *keys = qd_arena_realloc(lw->arena, root->keys, sizeof(Expr) * root->nitems, sizeof(Expr) * n);
        Expr *items = qd_arena_realloc(lw->arena, root->items, sizeof(Expr) * root->nitems, sizeof(Expr) * n);
        if (!keys || !items) {
            return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
        }
        root->keys = keys;
        root->items = items;
        memset(&keys[n - 1], 0, sizeof(Expr));
        keys[n - 1].kind = EX_STR;
        keys[n - 1].str = qd_arena_strndup(lw->arena, path, len);
        slot = &items[n - 1];
        memset(slot, 0, sizeof(*slot));
        slot->kind = EX_DICT;
        root->nitems = n;
    }
    if (!dot) {
        *slot = *value;
        return 0;
    }
    return insert_member(lw, slot, dot + 1, value);
}

static int
bind_kernel_params(Lowerer *lw, const QdAst *def, const QdKernelArg *args, uint32_t nargs)
{
    uint32_t next = 0;
    for (uint32_t p = 0; p < def->a.len; p++) {
        const QdAst *param = def->a.items[p];
        size_t plen = strlen(param->name);
        Expr e = {0};
        if (next < nargs && strcmp(args[next].name, param->name) == 0) {
            RETURN_IF_ERROR(arg_expr(lw, param, &args[next++], &e));
            if (e.kind == EX_NDARRAY && next < nargs && args[next].kind == QD_ARG_NDARRAY &&
                strncmp(args[next].name, param->name, plen) == 0 &&
                strcmp(args[next].name + plen, ".grad") == 0) {
                /* the gradient of an ndarray argument made with needs_grad=True */
                Expr *grad = QD_NEW(lw->arena, Expr);
                if (!grad) {
                    return lw_nomem(lw);
                }
                RETURN_IF_ERROR(arg_expr(lw, param, &args[next++], grad));
                e.grad = grad;
            }
        } else {
            /* A flattened dataclass: the members, in order, as attributes of one value. */
            e.kind = EX_DICT;
            while (next < nargs && strncmp(args[next].name, param->name, plen) == 0 &&
                   args[next].name[plen] == '.') {
                Expr member;
                RETURN_IF_ERROR(arg_expr(lw, param, &args[next], &member));
                RETURN_IF_ERROR(insert_member(lw, &e, args[next].name + plen + 1, &member));
                next++;
            }
        }
        if (e.kind == EX_DICT && param->x && !lw_is_buffer_view(&e)) {
            Expr ann;
            RETURN_IF_ERROR(lw_param_annotation(lw, param, &ann));
            RETURN_IF_ERROR(lw_matrix_param(lw, param, &ann, &e)); /* vectors passed by value */
            if (e.kind == EX_DICT && ann.kind == EX_PYOBJ && ann.hkind == QD_HOST_STRUCT_TYPE) {
                /* A struct argument (flattened like a dataclass): rebuilt as a struct value. */
                RETURN_IF_ERROR(lw_struct_from_dict(lw, param, ann.h, &e, &e));
            }
        }
        Var *v;
        RETURN_IF_ERROR(lw_bind(lw, param->name, &e, &v));
        v->is_arg = true;
    }
    if (next != nargs) {
        return lw_error(lw, def, QD_ERR_INTERNAL, "kernel has %u parameters, signature has %u arguments",
                        def->a.len, nargs);
    }
    return 0;
}

QdFunc *
qd_frontend_lower_kernel(QdCtx *ctx, QdModule *m, const QdHost *host, QdHandle scope,
                         const QdAst *def, const char *name, const QdKernelArg *args,
                         uint32_t nargs, QdHandle ret_annotation, const QdFrontendOptions *opt,
                         QdKernelInfo *info)
{
    Lowerer lower = {0};
    Lowerer *lw = &lower;
    lw->ctx = ctx;
    lw->m = m;
    lw->host = host;
    lw->opt = opt;
    lw->info = info;
    lw->arena = &m->arena;
    lw->at_top = true;
    RealFuncs real_funcs = {0};
    lw->real_funcs = &real_funcs;
    memset(info, 0, sizeof(*info));
    info->rng_param = -1;
    FuncFrame frame = {0};
    frame.scope = scope;
    frame.file = def->cst.sval;
    frame.is_kernel = true;
    frame.ret_annotation = def->x;
    frame.ret_value = ret_annotation;
    lw->frame = &frame;
    lw_set_loc(lw, def);
    lw->f = qd_func_new(m, QD_FUNC_KERNEL, name);
    if (!lw->f) {
        qd_error(ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
        return NULL;
    }
    lw->f->loc = lw->loc;
    lw_push_scope(lw);
    if (bind_kernel_params(lw, def, args, nargs) < 0 || lw_stmts(lw, &def->b) < 0) {
        if (ctx->diag.line == 0 && lw->loc.line) {
            /* Errors from Python callbacks carry no position: use the node being lowered. */
            snprintf(ctx->diag.file, sizeof(ctx->diag.file), "%s", lw->loc.file ? lw->loc.file : "");
            ctx->diag.line = lw->loc.line;
            ctx->diag.col = lw->loc.col;
        }
        return NULL;
    }
    bool returns_none = def->x && def->x->kind == QD_AST_CONSTANT && def->x->cst.kind == QD_CONST_NONE;
    if (def->x && !returns_none && !frame.returned) {
        lw_error(lw, def, QD_ERR_SYNTAX, "Kernel has a return type but does not have a return statement");
        return NULL;
    }
    if (lw_tile_check_target(lw) < 0) {
        return NULL;
    }
    lw_pop_scope(lw);
    return lw->f;
}
