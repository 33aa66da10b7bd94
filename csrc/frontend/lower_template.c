/* frontend/lower_template.c -- calls from a kernel into the IR template library.
 *
 * Routines written once in QIR (the .qir files of quadrants/templates: per-thread linear algebra
 * and the subgroup collectives) are compiled into the extension as one text (setup.py writes
 * build/gen/qd_templates.inc).
 * The first call that needs them parses the whole library into the module being lowered
 * (qd_module_parse_into); from there the ordinary pipeline takes over: `instantiate` makes a
 * concrete function per distinct template argument list actually called, `inline` puts its
 * body at the call, `unroll` regions with constant bounds are expanded and constfold/dce leave
 * straight-line scalar code; templates nobody called are dropped. The library is parsed per
 * kernel that uses it (about 1000 lines, parsed and printed in 0.6 ms on a 2-core x86-64
 * machine).
 *
 * The templates take their matrices as pointers to local arrays `ptr<[N x T], local>`. A call
 * allocates the arrays at the start of the task (as variable slots are, so LLVM promotes every
 * element to a register once the indices are constants), stores the operands' elements,
 * calls, and reads the results back element by element into scalar Exprs.
 */
#include "lower.h"

#include <string.h>

static const char template_library[] =
#include "qd_templates.inc"
    ;

/* Makes the template library part of the module being built (once per module). */
static int
library_ready(Lowerer *lw, const char *name)
{
    if (qd_module_find_func(lw->m, name) != NULL) {
        return 0;
    }
    RETURN_IF_ERROR(qd_module_parse_into(lw->ctx, lw->m, template_library,
                                         sizeof(template_library) - 1, "quadrants/templates"));
    if (qd_module_find_func(lw->m, name) == NULL) {
        return qd_error(lw->ctx, lw->loc, QD_ERR_INTERNAL, "no template @%s in the library", name);
    }
    return 0;
}

int
lw_local_array(Lowerer *lw, const QdType *ty, uint32_t n, uint32_t *out)
{
    RETURN_IF_ERROR(lw_ensure_region(lw));
    const QdType *arr = qd_type_array(lw->m, ty, n ? n : 1);
    const QdType *pty = arr ? qd_type_ptr(lw->m, arr, QD_SPACE_LOCAL) : NULL;
    QdInst *inst = qd_inst_new(lw->f, QD_OP_ALLOCA, 0);
    if (!pty || !inst || qd_inst_set_result(lw->f, inst, pty, NULL) == QD_NO_VALUE) {
        return lw_nomem(lw);
    }
    inst->loc = lw->loc;
    QdRegion *r = lw->task ? lw->task->regions[0] : lw->f->body; /* a function: its body */
    qd_region_insert_before(r, r->first, inst);
    *out = inst->result;
    return 0;
}

uint32_t
lw_array_element_ptr(Lowerer *lw, uint32_t array, const QdType *ty, uint32_t k)
{
    const QdType *pty = qd_type_ptr(lw->m, ty, QD_SPACE_LOCAL);
    uint32_t index = lw_const_int(lw, qd_type_scalar(QD_TY_I32), k);
    if (!pty || index == QD_NO_VALUE) {
        return QD_NO_VALUE;
    }
    return lw_emit_value(lw, QD_OP_ARRAY_PTR, pty, array, index);
}

int
lw_array_store(Lowerer *lw, uint32_t array, const QdType *ty, uint32_t k, uint32_t value)
{
    uint32_t ptr = lw_array_element_ptr(lw, array, ty, k);
    QdInst *store = ptr == QD_NO_VALUE ? NULL : lw_emit(lw, QD_OP_STORE, 2);
    if (!store) {
        return -1;
    }
    store->args[0] = ptr;
    store->args[1] = value;
    return 0;
}

/* The runtime value of scalar e converted to ty. */
static int
scalar_value(Lowerer *lw, const QdAst *node, const Expr *e, const QdType *ty, uint32_t *out)
{
    Expr v;
    if (lw_is_compile_time_scalar(e)) {
        double f = e->kind == EX_FLOAT ? e->fval : (double)e->ival;
        *out = qd_type_is_float(ty) ? lw_const_float(lw, ty, f) : lw_const_int(lw, ty, (int64_t)f);
        return *out == QD_NO_VALUE ? -1 : 0;
    }
    RETURN_IF_ERROR(lw_rvalue(lw, node, e, &v));
    RETURN_IF_ERROR(lw_convert(lw, node, &v, ty, &v));
    RETURN_IF_ERROR(lw_rvalue(lw, node, &v, &v));
    *out = v.id;
    return 0;
}

int
lw_array_of(Lowerer *lw, const QdAst *node, const Expr *items, uint32_t n, const QdType *ty,
            uint32_t *out)
{
    RETURN_IF_ERROR(lw_local_array(lw, ty, n, out));
    for (uint32_t k = 0; k < n; k++) {
        uint32_t value, ptr;
        RETURN_IF_ERROR(scalar_value(lw, node, &items[k], ty, &value));
        if ((ptr = lw_array_element_ptr(lw, *out, ty, k)) == QD_NO_VALUE) {
            return -1;
        }
        QdInst *store = lw_emit(lw, QD_OP_STORE, 2);
        if (!store) {
            return -1;
        }
        store->args[0] = ptr;
        store->args[1] = value;
    }
    return 0;
}

int
lw_array_items(Lowerer *lw, uint32_t array, const QdType *ty, uint32_t first, uint32_t n,
               Expr *items)
{
    for (uint32_t k = 0; k < n; k++) {
        uint32_t ptr = lw_array_element_ptr(lw, array, ty, first + k);
        uint32_t value = ptr == QD_NO_VALUE ? QD_NO_VALUE
                                            : lw_emit_value(lw, QD_OP_LOAD, ty, ptr, 0);
        if (value == QD_NO_VALUE) {
            return -1;
        }
        memset(&items[k], 0, sizeof(Expr));
        items[k].kind = EX_VALUE;
        items[k].id = value;
        items[k].ty = ty;
    }
    return 0;
}

/* Fills callee `name<targs>` (a function argument given with func_targs, recursively). */
static int
fill_callee(Lowerer *lw, QdCallee *callee, const char *name, const LwTemplateArg *targs,
            uint32_t ntargs, uint32_t depth)
{
    memset(callee, 0, sizeof(*callee));
    callee->name = qd_intern(lw->m, name);
    if (!callee->name) {
        return lw_nomem(lw);
    }
    if (ntargs == 0) {
        return 0;
    }
    callee->type_args = QD_NEW_ARRAY(lw->arena, const QdType *, ntargs);
    callee->int_args = QD_NEW_ARRAY(lw->arena, QdCexpr *, ntargs);
    callee->func_args = QD_NEW_ARRAY(lw->arena, QdCallee, ntargs);
    callee->args_order = QD_NEW_ARRAY(lw->arena, uint8_t, ntargs);
    if (!callee->type_args || !callee->int_args || !callee->func_args || !callee->args_order ||
        depth > 8) {
        return lw_nomem(lw);
    }
    for (uint32_t k = 0; k < ntargs; k++) {
        const LwTemplateArg *t = &targs[k];
        if (t->func != NULL) {
            callee->args_order[k] = QD_TARG_FUNC;
            QdCallee *fa = &callee->func_args[callee->nfunc_args++];
            /* `@f<func_type>`, or `@f<func_targs...>` */
            LwTemplateArg one = {t->func_type, 0, NULL, NULL, NULL, 0};
            const LwTemplateArg *inner = t->func_targs ? t->func_targs : &one;
            uint32_t ninner = t->func_targs ? t->nfunc_targs : t->func_type ? 1 : 0;
            RETURN_IF_ERROR(fill_callee(lw, fa, t->func, inner, ninner, depth + 1));
        } else if (t->type != NULL) {
            callee->args_order[k] = QD_TARG_TYPE;
            callee->type_args[callee->ntype_args++] = t->type;
        } else {
            callee->args_order[k] = QD_TARG_INT;
            if (!(callee->int_args[callee->nint_args++] = qd_cexpr_int(lw->m, t->value))) {
                return lw_nomem(lw);
            }
        }
    }
    return 0;
}

/* Fills call's arguments and callee `name<targs>`. */
static int
fill_call(Lowerer *lw, QdInst *call, const char *name, const LwTemplateArg *targs,
          uint32_t ntargs, const uint32_t *args, uint32_t nargs)
{
    memcpy(call->args, args, nargs * sizeof(uint32_t));
    return fill_callee(lw, &call->imm.call, name, targs, ntargs, 0);
}

int
lw_call_template(Lowerer *lw, const char *name, const LwTemplateArg *targs, uint32_t ntargs,
                 const uint32_t *args, uint32_t nargs, const QdType *ret, uint32_t *result)
{
    RETURN_IF_ERROR(library_ready(lw, name));
    QdInst *call = lw_emit(lw, QD_OP_CALL, nargs);
    if (!call) {
        return -1;
    }
    RETURN_IF_ERROR(fill_call(lw, call, name, targs, ntargs, args, nargs));
    if (ret != NULL && ret->kind != QD_TY_VOID) {
        if (qd_inst_set_result(lw->f, call, ret, NULL) == QD_NO_VALUE) {
            return lw_nomem(lw);
        }
        *result = call->result;
    }
    return 0;
}

int
lw_call_top_level_template(Lowerer *lw, const char *name, const LwTemplateArg *targs,
                           uint32_t ntargs, const uint32_t *args, uint32_t nargs)
{
    RETURN_IF_ERROR(library_ready(lw, name));
    lw->cur = NULL; /* after the serial task being filled, if any */
    lw->task = NULL;
    QdInst *call = qd_inst_new(lw->f, QD_OP_CALL, nargs);
    if (!call) {
        return lw_nomem(lw);
    }
    call->loc = lw->loc;
    qd_region_append(lw->f->body, call);
    return fill_call(lw, call, name, targs, ntargs, args, nargs);
}
