/* ir/ir_verify.c -- the IR verifier: structure, placement and dominance.
 *
 * qd_module_verify runs after the parser and after every pass in the tests (QD_VERIFY=1); it
 * stops at the first broken invariant and names the .qir line of the offending instruction.
 * This file walks each function's region tree in program order and checks:
 *   - placement: what a kernel body may hold, where tasks, tmp_alloc, parallel_for, SIMT
 *     instructions, break / continue, ret and kernel_ret may appear; terminators end regions;
 *   - dominance: an operand is a parameter or a value defined earlier in the same region or in
 *     an enclosing one; loop and unroll variables are visible only inside their body;
 *   - SSA: an id is defined once (by one instruction, or as one parameter);
 *   - links: every instruction and region points back at its owner;
 *   - types: well formed where used (arrays behind local/shared pointers, template parameters
 *     declared, nothing generic when codegen-ready); cexprs name visible unroll variables.
 * ir_verify_types.c checks each instruction's operand count, immediates and types (its QdSig),
 * ir_verify_call.c those of `call` and `ret`.
 *
 * Visibility is one byte per value id. A region remembers how many ids were made visible when
 * it started and hides the later ones when it ends, so the walk is linear in the size of the
 * function. The scratch arrays come from the heap, not the module arena: verifying must leave
 * the module untouched, and it runs after every pass.
 */
#include "verify_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What surrounds the instruction being checked. */
typedef struct Nest {
    bool in_task;    /* inside the body of a `task` */
    QdTaskKind task; /* kind of that task (valid when in_task) */
    uint32_t loops;  /* serial loops (for, loop) around it, counted from the nearest task or
                        parallel_for body: break needs one */
    bool in_pfor;    /* inside a parallel_for body: continue ends its iteration */
    bool kernel_level; /* the body of a kernel or top_level function (or an unroll there):
                          where tasks stand */
} Nest;

/***** errors *****/

/* Errors point at the line of the .qir text when there is one (column unknown), else at the
 * location the instruction carries (the user's Python source). */
static QdLoc
blame_loc(uint32_t text_line, QdLoc loc)
{
    if (text_line != 0) {
        QdLoc at = {NULL, text_line, 0};
        return at;
    }
    return loc;
}

/* The message names the instruction by its mnemonic (or the function by its name), because
 * the line alone is ambiguous in IR that passes built (text_line 0). */
int
verify_fail(Verifier *v, const QdInst *inst, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (inst != NULL) {
        const char *text = (unsigned)inst->op < QD_OP_COUNT_ ? qd_op_info[inst->op].text : "?";
        return qd_error(v->ctx, blame_loc(inst->text_line, inst->loc), QD_ERR_COMPILATION,
                        "verify: `%s`: %s", text, msg);
    }
    if (v->f != NULL) {
        return qd_error(v->ctx, blame_loc(v->f->text_line, v->f->loc), QD_ERR_COMPILATION,
                        "verify: @%s: %s", v->f->name, msg);
    }
    QdLoc unknown = {NULL, 0, 0};
    return qd_error(v->ctx, unknown, QD_ERR_COMPILATION, "verify: %s", msg);
}

const char *
verify_value_name(Verifier *v, int slot, uint32_t id)
{
    char *buf = v->namebuf[slot];
    size_t size = sizeof(v->namebuf[slot]);

    if (v->f != NULL && id < v->f->nvalues && v->f->values[id].name != NULL) {
        snprintf(buf, size, "%%%s", v->f->values[id].name);
    } else {
        snprintf(buf, size, "%%%u", id);
    }
    return buf;
}

/***** values and scopes *****/

/* Makes `id` defined and visible until the current region ends. `inst` defines it (NULL for
 * a parameter); its type must be the one the value table records. */
static int
define_value(Verifier *v, const QdInst *inst, uint32_t id, uint8_t extra_bits)
{
    QdFunc *f = v->f;

    if (id >= f->nvalues) {
        return verify_fail(v, inst, "defines %%%u, which is not a value of @%s", id, f->name);
    }
    if (v->state[id] & VAL_DEFINED) {
        return verify_fail(v, inst, "%s is defined more than once", verify_value_name(v, 0, id));
    }
    if (inst != NULL &&
        !(inst->type && f->values[id].type && qd_type_equal(inst->type, f->values[id].type))) {
        return verify_fail(v, inst, "type %s of %s differs from its value table entry %s",
                           verify_type_name(v, 0, inst->type), verify_value_name(v, 0, id),
                           verify_type_name(v, 1, f->values[id].type));
    }
    v->state[id] = (uint8_t)(VAL_DEFINED | VAL_VISIBLE | extra_bits);
    v->scope[v->nscope++] = id;
    return 0;
}

/* Hides the values defined since `mark` (the end of a region). */
static void
pop_scope(Verifier *v, uint32_t mark)
{
    while (v->nscope > mark) {
        uint32_t id = v->scope[--v->nscope];
        v->state[id] &= (uint8_t)~VAL_VISIBLE;
    }
}

/* An operand must be a value of the function whose definition dominates the use. */
static int
check_use(Verifier *v, const QdInst *inst, uint32_t id)
{
    QdFunc *f = v->f;

    if (id >= f->nvalues) {
        return verify_fail(v, inst, "operand %%%u is not a value of @%s", id, f->name);
    }
    if (!(v->state[id] & VAL_VISIBLE)) {
        if (v->state[id] & VAL_DEFINED) {
            return verify_fail(v, inst, "use of %s outside the region of its definition",
                               verify_value_name(v, 0, id));
        }
        return verify_fail(v, inst, "use of %s before its definition", verify_value_name(v, 0, id));
    }
    if (f->values[id].type == NULL) {
        return verify_fail(v, inst, "operand %s has no type", verify_value_name(v, 0, id));
    }
    return 0;
}

/***** types and compile-time expressions *****/

/* The template parameter `name` of the function being checked, or NULL. */
const QdTParam *
verify_find_tparam(const Verifier *v, const char *name)
{
    const QdFunc *f = v->f;

    if (f == NULL || f->kind != QD_FUNC_TEMPLATE || name == NULL) {
        return NULL;
    }
    for (uint32_t k = 0; k < f->ntparams; k++) {
        if (f->tparams[k].name == name || strcmp(f->tparams[k].name, name) == 0) {
            return &f->tparams[k];
        }
    }
    return NULL;
}

/* Types print through the printer, so messages spell them as the .qir text does. */
const char *
verify_type_name(Verifier *v, int slot, const QdType *ty)
{
    char *buf = v->tybuf[slot];
    size_t size = sizeof(v->tybuf[slot]);
    QdSbuf sb;

    if (ty == NULL) {
        snprintf(buf, size, "<no type>");
        return buf;
    }
    qd_sbuf_init(&sb);
    qd_type_print(&sb, ty);
    snprintf(buf, size, "%s", sb.data != NULL && !sb.failed ? sb.data : "?");
    qd_sbuf_free(&sb);
    return buf;
}

/* An unroll variable means something only inside the body of the unroll that binds it:
 * instantiation replaces it there, copy by copy, with a constant. An ordinary value (a loop
 * variable, say) is no compile-time integer, hence the VAL_UNROLL bit. */
int
verify_cexpr(Verifier *v, const QdInst *inst, const QdCexpr *e)
{
    if (e == NULL) {
        return verify_fail(v, inst, "missing compile-time expression");
    }
    switch (e->kind) {
    case QD_CEXPR_INT:
        return 0;
    case QD_CEXPR_PARAM: {
        const QdTParam *tp = verify_find_tparam(v, e->name);
        if (tp == NULL || tp->kind != QD_TPARAM_INT) {
            return verify_fail(v, inst, "%s is not an integer template parameter",
                               e->name != NULL ? e->name : "<null>");
        }
        return 0;
    }
    case QD_CEXPR_VAR:
        if (v->state == NULL || e->var >= v->f->nvalues ||
            (v->state[e->var] & (VAL_VISIBLE | VAL_UNROLL)) != (VAL_VISIBLE | VAL_UNROLL)) {
            return verify_fail(v, inst, "%s is not the variable of an enclosing `unroll`",
                               verify_value_name(v, 0, e->var));
        }
        return 0;
    case QD_CEXPR_BINOP:
        if (qd_cexpr_prec(e->op) == 0) {
            return verify_fail(v, inst, "bad operator in a compile-time expression");
        }
        RETURN_IF_ERROR(verify_cexpr(v, inst, e->lhs));
        return verify_cexpr(v, inst, e->rhs);
    }
    return verify_fail(v, inst, "bad compile-time expression");
}

/* Recursive over pointee and element types; composite types are small, so no memo. */
int
verify_type(Verifier *v, const QdInst *inst, const QdType *ty)
{
    if (ty == NULL) {
        return verify_fail(v, inst, "missing type");
    }
    if ((unsigned)ty->kind >= QD_TY_COUNT_) {
        return verify_fail(v, inst, "invalid type");
    }
    if ((v->flags & QD_VERIFY_CONCRETE) && qd_type_is_generic(ty)) {
        return verify_fail(v, inst, "generic type %s left in a codegen-ready module",
                           verify_type_name(v, 0, ty));
    }
    const QdType *elem = ty->elem;
    switch (ty->kind) {
    case QD_TY_PTR:
    case QD_TY_ARRAY:
        if (ty->kind == QD_TY_PTR && (unsigned)ty->space > QD_SPACE_LOCAL) {
            return verify_fail(v, inst, "invalid address space");
        }
        if (elem == NULL || elem->kind == QD_TY_VOID || elem->kind == QD_TY_PTR ||
            elem->kind == QD_TY_NDARRAY) {
            return verify_fail(v, inst, "invalid element type in %s", verify_type_name(v, 0, ty));
        }
        if (ty->kind == QD_TY_PTR && ty->space == QD_SPACE_GLOBAL && elem->kind == QD_TY_ARRAY) {
            return verify_fail(v, inst, "arrays live only behind local or shared pointers, got %s",
                               verify_type_name(v, 0, ty));
        }
        if (ty->kind == QD_TY_ARRAY && ty->count_expr != NULL) {
            RETURN_IF_ERROR(verify_cexpr(v, inst, ty->count_expr));
        }
        return verify_type(v, inst, elem);
    case QD_TY_NDARRAY:
        if (elem == NULL ||
            (elem->kind != QD_TY_PARAM && (!qd_type_is_scalar(elem) || elem->kind == QD_TY_VOID))) {
            return verify_fail(v, inst, "an ndarray's element type must be a scalar");
        }
        return verify_type(v, inst, elem);
    case QD_TY_PARAM: {
        const QdTParam *tp = verify_find_tparam(v, ty->name);
        if (v->f == NULL || v->f->kind != QD_FUNC_TEMPLATE) {
            return verify_fail(v, inst, "generic type %s outside a template",
                               verify_type_name(v, 0, ty));
        }
        if (tp == NULL || !qd_tparam_is_type(tp->kind)) {
            return verify_fail(v, inst, "%s is not a type parameter of @%s",
                               verify_type_name(v, 0, ty), v->f->name);
        }
        return 0;
    }
    default:
        return 0;
    }
}

int
verify_value_type(Verifier *v, const QdInst *inst, const QdType *ty)
{
    RETURN_IF_ERROR(verify_type(v, inst, ty));
    if (ty->kind == QD_TY_VOID || ty->kind == QD_TY_ARRAY) {
        return verify_fail(v, inst, "a value cannot have type %s", verify_type_name(v, 0, ty));
    }
    return 0;
}

/***** placement *****/

/* Where an instruction may appear, given the region holding it and what surrounds it. */
static int
check_placement(Verifier *v, const QdInst *inst, const Nest *nest)
{
    QdOp op = inst->op;
    const QdInst *owner = inst->parent->owner;
    bool in_kernel = v->f->kind == QD_FUNC_KERNEL;
    bool at_top = nest->kernel_level;

    if (op == QD_OP_TASK || op == QD_OP_TMP_ALLOC || op == QD_OP_FIELD_ARRAY) {
        if (!at_top) {
            return verify_fail(v, inst, "only allowed directly in a kernel body (or a top_level "
                                        "function's)");
        }
    } else if (at_top && op != QD_OP_CALL && op != QD_OP_UNROLL &&
               !(op == QD_OP_RET && !in_kernel)) {
        return verify_fail(v, inst, "a kernel body holds only `task`, `tmp_alloc` and "
                                    "`field_array` instructions and calls of top_level functions");
    }
    if (op == QD_OP_CALL) {
        /* A function parameter of a template (`call @F`) names no function of the module. */
        const QdFunc *callee = qd_module_find_func(v->m, inst->imm.call.name);
        if (callee && callee->top_level && !at_top) {
            return verify_fail(v, inst, "@%s is top_level: it is called only where a kernel's "
                                        "tasks stand", callee->name);
        }
        if (callee && !callee->top_level && at_top) {
            return verify_fail(v, inst, "only top_level functions are called in a kernel body, "
                                        "not @%s", callee->name);
        }
    }
    if (qd_op_has(op, QD_TERM) && inst->next != NULL) {
        return verify_fail(v, inst, "must be the last instruction of its region");
    }
    if (op == QD_OP_BREAK && nest->loops == 0) {
        return verify_fail(v, inst, "outside of a `for` or `loop` body");
    }
    if (op == QD_OP_CONTINUE && nest->loops == 0 && !nest->in_pfor) {
        return verify_fail(v, inst, "outside of a `for`, `loop` or `parallel_for` body");
    }
    if (op == QD_OP_RET && in_kernel) {
        return verify_fail(v, inst, "not allowed in a kernel (results go through `kernel_ret`)");
    }
    if (op == QD_OP_KERNEL_RET && !in_kernel) {
        return verify_fail(v, inst, "only allowed in a kernel");
    }
    /* SIMT instructions need a grid of threads: a serial task runs on one. Funcs and
     * templates are inlined into range_for tasks, so they may hold them. shared_alloc is SIMT. */
    if ((qd_op_has(op, QD_SIMT) || op == QD_OP_PARALLEL_FOR) && nest->in_task &&
        nest->task == QD_TASK_SERIAL) {
        return verify_fail(v, inst, "not allowed in a serial task");
    }
    if (op == QD_OP_PARALLEL_FOR &&
        (owner == NULL || owner->op != QD_OP_TASK || inst->next != NULL)) {
        return verify_fail(v, inst, "only allowed as the last instruction of a range_for task");
    }
    if (qd_op_partial_atomic(op) != QD_OP_COUNT_ &&
        (owner == NULL || owner->op != QD_OP_TASK ||
         owner->imm.task.kind != QD_TASK_RANGE_FOR)) {
        return verify_fail(v, inst, "only allowed in the prologue of a range_for task");
    }
    if (op == QD_OP_TASK && inst->imm.task.kind == QD_TASK_RANGE_FOR) {
        const QdRegion *body = inst->regions[0];
        if (body == NULL || body->last == NULL || body->last->op != QD_OP_PARALLEL_FOR) {
            return verify_fail(v, inst, "a range_for task must end with a `parallel_for`");
        }
    }
    return 0;
}

/***** the walk *****/

static int verify_inst(Verifier *v, QdInst *inst, const Nest *nest);

/* Checks the instructions of region `r` owned by `owner` (NULL: the function body). `var`, when
 * not QD_NO_VALUE, is the loop or unroll variable the region binds. */
static int
verify_region(Verifier *v, QdRegion *r, QdInst *owner, const Nest *nest, uint32_t var,
              uint8_t var_bits)
{
    uint32_t mark = v->nscope;
    int rc = 0;

    if (r == NULL) {
        return verify_fail(v, owner, "missing region");
    }
    if (r->owner != owner) {
        return verify_fail(v, owner, "region is not linked to its owner");
    }
    if (var != QD_NO_VALUE) {
        rc = define_value(v, owner, var, var_bits);
    }
    for (QdInst *inst = r->first; rc == 0 && inst != NULL; inst = inst->next) {
        if (inst->parent != r) {
            rc = verify_fail(v, inst, "instruction is not linked to its region");
        } else {
            rc = verify_inst(v, inst, nest);
        }
    }
    pop_scope(v, mark);
    return rc;
}

/* One instruction: where it is, its operands, its typing rule, its result, then its regions. */
static int
verify_inst(Verifier *v, QdInst *inst, const Nest *nest)
{
    if ((unsigned)inst->op >= QD_OP_COUNT_) {
        return verify_fail(v, inst, "unknown opcode %d", (int)inst->op);
    }
    const QdOpInfo *info = &qd_op_info[inst->op];
    /* for / parallel_for / unroll define their variable inside the body, not after it. */
    bool binds_var = info->sig == SIG_FOR || info->imm == IMM_UNROLL;

    RETURN_IF_ERROR(check_placement(v, inst, nest));
    for (uint32_t k = 0; k < inst->nargs; k++) {
        RETURN_IF_ERROR(check_use(v, inst, inst->args[k]));
    }
    RETURN_IF_ERROR(verify_inst_types(v, inst));
    if (!binds_var && inst->result != QD_NO_VALUE) {
        RETURN_IF_ERROR(define_value(v, inst, inst->result, 0));
    }
    if (info->nregions == 0) {
        return 0;
    }

    Nest inner = *nest;
    inner.kernel_level = nest->kernel_level && inst->op == QD_OP_UNROLL;
    if (inst->op == QD_OP_TASK) {
        inner.in_task = true;
        inner.task = inst->imm.task.kind;
        inner.loops = 0;
        inner.in_pfor = false;
    } else if (inst->op == QD_OP_PARALLEL_FOR) {
        inner.loops = 0; /* break never leaves a parallel loop; continue ends an iteration */
        inner.in_pfor = true;
    } else if (qd_op_has(inst->op, QD_LOOP)) {
        inner.loops++;
    }
    for (int k = 0; k < info->nregions; k++) {
        uint32_t var = k == 0 && binds_var ? inst->result : QD_NO_VALUE;
        uint8_t bits = info->imm == IMM_UNROLL ? VAL_UNROLL : 0;
        RETURN_IF_ERROR(verify_region(v, inst->regions[k], inst, &inner, var, bits));
    }
    return 0;
}

/***** functions and fields *****/

/* The header of a function: kind, template parameters, result type. */
static int
verify_func_header(Verifier *v, QdFunc *f)
{
    if (qd_module_find_func(v->m, f->name) != f) {
        return verify_fail(v, NULL, "declared more than once");
    }
    if (f->kind != QD_FUNC_TEMPLATE && f->ntparams != 0) {
        return verify_fail(v, NULL, "only templates take template parameters");
    }
    for (uint32_t i = 0; i < f->ntparams; i++) {
        for (uint32_t j = 0; j < i; j++) {
            if (strcmp(f->tparams[i].name, f->tparams[j].name) == 0) {
                return verify_fail(v, NULL, "template parameter %s declared twice",
                                   f->tparams[i].name);
            }
        }
    }
    if (f->ret == NULL) {
        return verify_fail(v, NULL, "missing result type");
    }
    if (f->top_level && (f->kind == QD_FUNC_KERNEL || f->ret->kind != QD_TY_VOID)) {
        return verify_fail(v, NULL, "a top_level function is a func or template returning "
                                    "nothing");
    }
    if (f->kind == QD_FUNC_KERNEL && f->ret->kind != QD_TY_VOID) {
        return verify_fail(v, NULL, "a kernel returns nothing (results go through `kernel_ret`)");
    }
    if (f->body == NULL) {
        return verify_fail(v, NULL, "missing body");
    }
    return 0;
}

/* Result type, parameters, then the body. Parameters are visible everywhere in the function. */
static int
verify_func_body(Verifier *v, QdFunc *f)
{
    Nest top = {false, QD_TASK_SERIAL, 0, false, f->kind == QD_FUNC_KERNEL || f->top_level};

    if (f->ret->kind != QD_TY_VOID) {
        RETURN_IF_ERROR(verify_value_type(v, NULL, f->ret));
    }
    for (uint32_t k = 0; k < f->nparams; k++) {
        uint32_t id = f->params[k];
        if (id >= f->nvalues) {
            return verify_fail(v, NULL, "parameter %u is not a value of the function", k);
        }
        RETURN_IF_ERROR(verify_value_type(v, NULL, f->values[id].type));
        RETURN_IF_ERROR(define_value(v, NULL, id, 0));
    }
    return verify_region(v, f->body, NULL, &top, QD_NO_VALUE, 0);
}

/* One function: its header, then (with per-value scratch state) its parameters and body. The
 * scratch is released on every path, error or not. */
static int
verify_func(Verifier *v, QdFunc *f)
{
    int rc;

    v->f = f;
    RETURN_IF_ERROR(verify_func_header(v, f));
    v->state = calloc((size_t)f->nvalues + 1, sizeof(*v->state));
    v->scope = calloc((size_t)f->nvalues + 1, sizeof(*v->scope));
    v->nscope = 0;
    if (v->state == NULL || v->scope == NULL) {
        rc = qd_error(v->ctx, f->loc, QD_ERR_NOMEM, "out of memory while verifying @%s", f->name);
    } else {
        rc = verify_func_body(v, f);
    }
    free(v->state);
    free(v->scope);
    v->state = NULL;
    v->scope = NULL;
    return rc;
}

/* A field: a declared-once name, a concrete scalar element type and positive extents. */
static int
verify_field(Verifier *v, const QdField *field)
{
    QdLoc loc = blame_loc(field->text_line, field->loc);
    const QdType *elem = field->elem;

    if (qd_module_find_field(v->m, field->name) != field) {
        return qd_error(v->ctx, loc, QD_ERR_COMPILATION,
                        "verify: @%s: field declared more than once", field->name);
    }
    if (elem == NULL || !qd_type_is_scalar(elem) || elem->kind == QD_TY_VOID) {
        return qd_error(v->ctx, loc, QD_ERR_COMPILATION,
                        "verify: @%s: a field's element type must be a concrete scalar",
                        field->name);
    }
    if (field->ndim != 0 && field->shape == NULL) {
        return qd_error(v->ctx, loc, QD_ERR_COMPILATION, "verify: @%s: missing shape", field->name);
    }
    for (uint32_t k = 0; k < field->ndim; k++) {
        if (field->shape[k] <= 0) {
            return qd_error(v->ctx, loc, QD_ERR_COMPILATION,
                            "verify: @%s: extent %u must be positive", field->name, k);
        }
    }
    return 0;
}

/* Fields first (instructions refer to them), then functions in module order; the first
 * failure stops the walk, so the diag names the earliest broken invariant. */
int
qd_module_verify(QdCtx *ctx, QdModule *m, unsigned flags)
{
    Verifier v;

    memset(&v, 0, sizeof(v));
    v.ctx = ctx;
    v.m = m;
    v.flags = flags;
    for (uint32_t i = 0; i < m->fields.len; i++) {
        RETURN_IF_ERROR(verify_field(&v, m->fields.data[i]));
    }
    for (uint32_t i = 0; i < m->funcs.len; i++) {
        QdFunc *f = m->funcs.data[i];
        /* Codegen ignores templates: they are declarations, only their instances run. */
        if (f->kind == QD_FUNC_TEMPLATE && (flags & QD_VERIFY_CONCRETE)) {
            continue;
        }
        RETURN_IF_ERROR(verify_func(&v, f));
    }
    return 0;
}
