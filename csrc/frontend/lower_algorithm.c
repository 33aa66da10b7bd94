/* frontend/lower_algorithm.c -- qd.algorithms calls: top_level templates of the library.
 *
 * Each op of algorithms.def is a fixed sequence of tasks written once in QIR
 * (quadrants/templates/alg_*.qir). A call stands where a top-level statement of the kernel
 * could (directly in the body, in a `qd.static` loop or if there, or in a func called there):
 * the task boundaries of the expansion are the grid-wide barriers between its phases. The
 * call lowers to
 *   - the live count n, stored into a kernel temporary by a serial task (the tasks of the op
 *     read it on the device, so a new count needs no recompile);
 *   - a `field_array` for every field argument (the templates take 1-D ndarrays);
 *   - `call @alg_<op><T, ...>(arrays..., %n)` in the kernel body, which `instantiate` and
 *     `inline` replace by the template's tasks.
 * The arguments are checked here, at the user's call: the depth log256_max_n (1 to 4), the
 * dtype (each op's set), each buffer's rank and element type, and that a scan's output is
 * not its input. The template is the block form on targets with 32-lane subgroups (CUDA, the
 * CPU with cpu_simt, Vulkan devices with 32 lanes) and the staircase of tiles walked by one
 * thread elsewhere.
 */
#include "lower.h"

#include <string.h>

/* What an op takes. */
typedef enum AlgArgs {
    AA_REDUCE, /* (arr, out, scratch, n, dtype, log256_max_n) */
    AA_SCAN,   /* the same, out another buffer than arr */
    AA_SELECT, /* (arr, flags, out, num_out, scratch, n, log256_max_n) */
    AA_RBK,    /* (keys_in, values_in, keys_out, values_out, num_runs, scratch, n, value_dtype,
                  log256_max_n) */
    AA_SORT,   /* (keys, tmp_keys, values, tmp_values, scratch, n, key_dtype, has_values,
                  end_bit, log256_max_n), n a 0-d i32 array */
} AlgArgs;

/* The identity of an op's operator. */
typedef enum AlgIdentity {
    AI_ZERO,     /* 0 */
    AI_TYPE_MAX, /* the type's largest value, +inf */
    AI_TYPE_MIN, /* its smallest, -inf */
} AlgIdentity;

typedef struct Algorithm {
    const char *name;
    AlgArgs args;
    const char *gpu, *cpu; /* templates */
    const char *op;        /* the operator template */
    AlgIdentity identity;
} Algorithm;

static const Algorithm algorithms[] = {
#define QD_ALGORITHM(name, ARGS, gpu, cpu, op, identity, signature, doc)                           \
    {name, AA_##ARGS, gpu, cpu, op, AI_##identity},
#include "algorithms.def"
#undef QD_ALGORITHM
};

#define MAX_LOG256_MAX_N 4

/* log256_max_n: a compile-time int in [1, 4]. */
static int
depth_arg(Lowerer *lw, const QdAst *node, const Expr *e, int64_t *out)
{
    if (e->kind != EX_INT) {
        return lw_error(lw, node, QD_ERR_TYPE, "log256_max_n must be a compile-time int");
    }
    if (e->ival > MAX_LOG256_MAX_N) {
        return lw_error(lw, node, QD_ERR_COMPILATION,
                        "ValueError: log256_max_n=%lld exceeds the maximum of %d: tensors are "
                        "indexed by signed 32-bit integers and 256 ** %d == 2**32 already covers "
                        "every valid length",
                        (long long)e->ival, MAX_LOG256_MAX_N, MAX_LOG256_MAX_N);
    }
    if (e->ival < 1) {
        return lw_error(lw, node, QD_ERR_COMPILATION,
                        "ValueError: log256_max_n must be at least 1, got %lld",
                        (long long)e->ival);
    }
    *out = e->ival;
    return 0;
}

/* The element dtype of a reduce or scan: a 32- or 64-bit integer or float. */
static int
scalar_dtype_arg(Lowerer *lw, const QdAst *node, const char *op, const Expr *e,
                 const QdType **out)
{
    const QdType *ty = e->kind == EX_PYOBJ && e->hkind == QD_HOST_DTYPE && !e->str ? e->ty : NULL;
    if (!ty) {
        return lw_error(lw, node, QD_ERR_TYPE, "%s: dtype must be a Quadrants scalar type", op);
    }
    switch (ty->kind) {
    case QD_TY_I32: case QD_TY_U32: case QD_TY_F32:
    case QD_TY_I64: case QD_TY_U64: case QD_TY_F64:
        *out = ty;
        return 0;
    default:
        return lw_error(lw, node, QD_ERR_COMPILATION,
                        "NotImplementedError: %s: dtype %s is not supported (supported: i32, u32, "
                        "f32, i64, u64, f64)",
                        op, lw_type_name(ty));
    }
}

/* A 1-D buffer argument of element type `want` (NULL: any) as the value the template takes: an
 * ndarray parameter, or a field_array of a field. `what` names it in errors. */
static int
buffer_arg_rank(Lowerer *lw, const QdAst *node, const char *op, const char *what, const Expr *e,
                const QdType *want, uint32_t rank, uint32_t *out)
{
    const QdType *elem = NULL;
    uint32_t ndim = 0;
    bool shifted = false;
    if (e->kind == EX_NDARRAY) {
        /* The parameter's own rank: an ndarray of vectors or matrices has their axes too. */
        const QdType *nt = qd_value_type(lw->f, e->id);
        elem = e->ty;
        ndim = nt && nt->kind == QD_TY_NDARRAY ? nt->ndim : UINT32_MAX;
    } else if (e->kind == EX_FIELD) {
        elem = e->field->elem;
        ndim = e->field->ndim;
        shifted = e->view && e->view->ndim == 1 && e->view->offset[0] != 0;
    } else {
        return lw_error(lw, node, QD_ERR_TYPE,
                        "%s: %s must be a %s field, ndarray or tensor of scalars", op, what,
                        rank == 0 ? "0-d" : "1-D");
    }
    if (ndim != rank || shifted) {
        return lw_error(lw, node, QD_ERR_TYPE, "%s: %s must be a %u-D %s of scalars indexed from 0",
                        op, what, rank, e->kind == EX_FIELD ? "field" : "ndarray");
    }
    if (want && elem->kind != want->kind) {
        return lw_error(lw, node, QD_ERR_TYPE, "%s: %s holds %s, expected %s", op, what,
                        lw_type_name(elem), lw_type_name(want));
    }
    if (e->kind == EX_NDARRAY) {
        *out = e->id;
        return 0;
    }
    QdInst *inst = qd_inst_new(lw->f, QD_OP_FIELD_ARRAY, 0);
    const QdType *ty = qd_type_ndarray(lw->m, elem, rank);
    if (!inst || !ty || qd_inst_set_result(lw->f, inst, ty, NULL) == QD_NO_VALUE) {
        return lw_nomem(lw);
    }
    inst->imm.field = e->field;
    inst->loc = lw->loc;
    qd_region_append(lw->f->body, inst);
    *out = inst->result;
    return 0;
}

static int
buffer_arg(Lowerer *lw, const QdAst *node, const char *op, const char *what, const Expr *e,
           const QdType *want, uint32_t *out)
{
    return buffer_arg_rank(lw, node, op, what, e, want, 1, out);
}

/* The scratch buffer: 1-D, of an integer type of dtype's width (u32 for 4-byte dtypes, u64 for
 * 8-byte ones), which the partials are bit-cast to; *raw is its element type. */
static int
scratch_arg(Lowerer *lw, const QdAst *node, const char *op, const Expr *e, const QdType *ty,
            uint32_t *out, const QdType **raw)
{
    RETURN_IF_ERROR(buffer_arg(lw, node, op, "scratch", e, NULL, out));
    const QdType *elem = e->kind == EX_NDARRAY ? e->ty : e->field->elem;
    if (!qd_type_is_int(elem) || qd_type_bits(elem) != qd_type_bits(ty)) {
        return lw_error(lw, node, QD_ERR_TYPE, "%s: scratch holds %s; with dtype %s it must hold "
                        "%s", op, lw_type_name(elem), lw_type_name(ty),
                        qd_type_bits(ty) == 64 ? "u64" : "u32");
    }
    *raw = elem;
    return 0;
}

/* The bits of an operator's identity for type ty, as a signed integer of ty's width. */
static int64_t
identity_bits(AlgIdentity id, const QdType *ty)
{
    switch (id) {
    case AI_ZERO:
        return 0;
    case AI_TYPE_MAX:
        switch (ty->kind) {
        case QD_TY_F32: return 0x7f800000;                    /* +inf */
        case QD_TY_F64: return 0x7ff0000000000000;            /* +inf */
        case QD_TY_I32: return INT32_MAX;
        case QD_TY_I64: return INT64_MAX;
        default: return -1;                                   /* all ones: UINTn_MAX */
        }
    case AI_TYPE_MIN:
        switch (ty->kind) {
        case QD_TY_F32: return (int32_t)0xff800000u;          /* -inf */
        case QD_TY_F64: return (int64_t)0xfff0000000000000u;  /* -inf */
        case QD_TY_I32: return INT32_MIN;
        case QD_TY_I64: return INT64_MIN;
        default: return 0;
        }
    }
    return 0;
}

/* Whether the op runs as blocks of threads: on targets with 32-lane subgroups. */
static bool
block_form(const Lowerer *lw)
{
    uint32_t sg = lw->opt->subgroup_size ? lw->opt->subgroup_size : 32;
    return lw->opt->simt_unsupported_arch == NULL && sg == 32;
}

static const Algorithm *
find_algorithm(const char *name)
{
    for (size_t i = 0; i < QD_ARRAY_LEN(algorithms); i++) {
        if (strcmp(algorithms[i].name, name) == 0) {
            return &algorithms[i];
        }
    }
    return NULL;
}

/* An i32 into a kernel temporary (a serial task stores it), which the op's tasks read. */
static int
i32_slot(Lowerer *lw, const QdAst *node, const Expr *n, uint32_t *out)
{
    const QdType *i32 = qd_type_scalar(QD_TY_I32);
    Expr v, slot;
    RETURN_IF_ERROR(lw_convert(lw, node, n, i32, &v));
    RETURN_IF_ERROR(lw_rvalue(lw, node, &v, &v));
    RETURN_IF_ERROR(lw_new_slot(lw, i32, &slot));
    RETURN_IF_ERROR(lw_store(lw, node, &slot, &v));
    *out = slot.id;
    return 0;
}

/* The element type of a 1-D buffer argument (checked by buffer_arg when it is lowered). */
static const QdType *
elem_of(const Expr *e)
{
    return e->kind == EX_NDARRAY ? e->ty : e->kind == EX_FIELD ? e->field->elem : NULL;
}

/* Shared memory one block of the target may use. */
static uint32_t
shared_budget(const Lowerer *lw)
{
    return lw->opt->max_shared_bytes ? lw->opt->max_shared_bytes : 48 * 1024;
}

/* Elements per thread of the GPU scan's tiles (alg_scan_lookback's PER): 32 of 4 bytes, 16 of
 * 8 (tiles of 32 KiB), halved until the tile's staging array of 264 * PER elements fits the
 * target's shared memory beside the scan's few words of its own. */
static int64_t
scan_per_thread(const Lowerer *lw, uint32_t bytes)
{
    int64_t per = bytes == 8 ? 16 : 32;
    while (per > 1 && 264u * (uint32_t)per * bytes + 256u > shared_budget(lw)) {
        per /= 2;
    }
    return per;
}

/* The GPU sort's tiles (alg_sort_pass_blocks): keys per thread and whether 4-byte keys without
 * values rank straight into the staged tile (DIRECT, which takes 8 KiB more for the subgroups'
 * lane masks). The largest of 28 and 24 keys (DIRECT), then 16 and 8 that fits the target's
 * shared memory beside the fixed arrays (the subgroups' digit counts, the tile's digit offsets
 * and the block scans: under 11.5 KiB). 0 when even 8 does not fit: the plain form then. */
static int64_t
sort_keys_per_thread(const Lowerer *lw, uint32_t kbytes, uint32_t vbytes, int64_t *direct)
{
    const uint32_t fixed = 11776, budget = shared_budget(lw);
    static const int64_t direct_kpt[] = {28, 24};
    static const int64_t kpt[] = {16, 8};
    *direct = 0;
    if (kbytes == 4 && vbytes == 0) {
        for (size_t i = 0; i < sizeof(direct_kpt) / sizeof(direct_kpt[0]); i++) {
            if (fixed + 8192u + 256u * (uint32_t)direct_kpt[i] * kbytes <= budget) {
                *direct = 1;
                return direct_kpt[i];
            }
        }
    }
    for (size_t i = 0; i < sizeof(kpt) / sizeof(kpt[0]); i++) {
        /* a key and its value take at most 8 bytes, or 16 keys per thread are too many */
        if (kpt[i] == 16 && kbytes + vbytes > 8) {
            continue;
        }
        if (fixed + 256u * (uint32_t)kpt[i] * (kbytes + vbytes) <= budget) {
            return kpt[i];
        }
    }
    return 0;
}

/* sort(keys, tmp_keys, values, tmp_values, scratch, n, key_dtype, has_values, end_bit, D). */
static int
sort_call(Lowerer *lw, const QdAst *node, const Algorithm *alg, const Expr *fn, const Expr *a)
{
    /* From this many keys on, the counts live beside the status words (1 << 29: the flag and
     * parity bits leave 29 bits; the tests lower it through the function's _qd_packed_limit to
     * take that path with few keys). */
    int64_t packed_limit = (int64_t)1 << 29;
    QdHandle h;
    int rc = fn && fn->h ? lw->host->getattr(lw->host->self, lw->ctx, fn->h, "_qd_packed_limit",
                                             &h)
                         : 1;
    if (rc < 0) {
        return -1;
    }
    if (rc == 0) {
        Expr v;
        RETURN_IF_ERROR(lw_from_handle(lw, node, h, &v));
        if (v.kind == EX_INT && v.ival >= 0 && v.ival <= packed_limit) {
            packed_limit = v.ival;
        }
    }
    int64_t depth = 0;
    RETURN_IF_ERROR(depth_arg(lw, node, &a[9], &depth));
    const QdType *kt = a[6].kind == EX_PYOBJ && a[6].hkind == QD_HOST_DTYPE && !a[6].str
                           ? a[6].ty : NULL;
    if (!kt) {
        return lw_error(lw, node, QD_ERR_TYPE, "sort: key_dtype must be a Quadrants scalar type");
    }
    switch (kt->kind) {
    case QD_TY_I32: case QD_TY_U32: case QD_TY_F32:
    case QD_TY_I64: case QD_TY_U64: case QD_TY_F64:
        break;
    default:
        return lw_error(lw, node, QD_ERR_COMPILATION,
                        "NotImplementedError: sort: key dtype %s is not supported (supported: u32, "
                        "i32, f32, u64, i64, f64)", lw_type_name(kt));
    }
    uint32_t bits = qd_type_bits(kt);
    if (a[8].kind != EX_INT) {
        return lw_error(lw, node, QD_ERR_TYPE, "sort: end_bit must be a compile-time int");
    }
    int64_t end_bit = a[8].ival;
    if (end_bit <= 0 || end_bit % 16 != 0 || end_bit > bits) {
        return lw_error(lw, node, QD_ERR_COMPILATION,
                        "ValueError: sort: end_bit=%lld must be a positive multiple of 16 (an even "
                        "number of 8-bit digit passes, so that the result lands in keys) and at "
                        "most the key width %u", (long long)end_bit, bits);
    }
    if (a[7].kind != EX_BOOL && a[7].kind != EX_INT) {
        return lw_error(lw, node, QD_ERR_TYPE, "sort: has_values must be a compile-time bool");
    }
    bool has_values = a[7].ival != 0;
    const QdType *vt = elem_of(&a[2]);
    if (has_values && (!vt || !qd_type_is_scalar(vt) ||
                       (qd_type_bits(vt) != 32 && qd_type_bits(vt) != 64) ||
                       vt->kind == QD_TY_U1)) {
        return lw_error(lw, node, QD_ERR_TYPE, "sort: values must hold a 32- or 64-bit scalar "
                        "type (u32, i32, f32, u64, i64, f64)");
    }
    uint32_t args[6];
    RETURN_IF_ERROR(buffer_arg(lw, node, "sort", "keys", &a[0], kt, &args[0]));
    RETURN_IF_ERROR(buffer_arg(lw, node, "sort", "tmp_keys", &a[1], kt, &args[1]));
    RETURN_IF_ERROR(buffer_arg(lw, node, "sort", "values", &a[2], NULL, &args[2]));
    RETURN_IF_ERROR(buffer_arg(lw, node, "sort", "tmp_values", &a[3], vt, &args[3]));
    RETURN_IF_ERROR(buffer_arg(lw, node, "sort", "scratch", &a[4], qd_type_scalar(QD_TY_U32),
                               &args[4]));
    RETURN_IF_ERROR(buffer_arg_rank(lw, node, "sort", "n", &a[5], qd_type_scalar(QD_TY_I32), 0,
                                    &args[5]));
    uint32_t vbytes = has_values ? qd_type_bits(vt) / 8 : 0;
    /* a device whose shared memory holds no tile of the block form runs the plain one */
    int64_t direct = 0, keys_per_thread = sort_keys_per_thread(lw, bits / 8, vbytes, &direct);
    bool blocks = block_form(lw) && keys_per_thread > 0;
    int kind = kt->kind == QD_TY_F32 || kt->kind == QD_TY_F64   ? 2
               : kt->kind == QD_TY_I32 || kt->kind == QD_TY_I64 ? 1
                                                                : 0;
    LwTemplateArg targs[10];
    memset(targs, 0, sizeof(targs));
    targs[0].type = kt;
    targs[1].type = qd_type_scalar(bits == 64 ? QD_TY_U64 : QD_TY_U32);
    targs[2].type = vt;
    targs[3].value = kind;
    targs[4].value = bits;
    targs[5].value = has_values;
    targs[6].value = end_bit / 8;           /* passes */
    targs[7].value = keys_per_thread ? keys_per_thread : 8; /* of a tile */
    targs[8].value = packed_limit;
    targs[9].value = direct;
    return lw_call_top_level_template(lw, blocks ? alg->gpu : alg->cpu, targs, 10, args, 6);
}

/* The PK argument of alg_scan_lookback for elements of type ty: whether a tile's state is one
 * u64 word (a 4-byte element and its flags, published by a 64-bit atomic exchange), rather than
 * three arrays and fences (8-byte elements, or a target without 64-bit atomics). */
static int64_t
packed_scan_states(const Lowerer *lw, const QdType *ty)
{
    return qd_type_bits(ty) == 32 && !lw->opt->lacks_atomic_int64;
}

/* The template arguments of the u32 exclusive add-scan of the target (block form or staircase
 * of depth D) from a source of element type src (u32 or i32), written into t[0 .. 10); returns
 * the template's name and sets *n. */
static const char *
u32_scan(const Lowerer *lw, int64_t depth, const QdType *src, LwTemplateArg *t,
         LwTemplateArg *op, uint32_t *n)
{
    const QdType *u32 = qd_type_scalar(QD_TY_U32);
    memset(t, 0, sizeof(LwTemplateArg) * 10);
    memset(op, 0, sizeof(*op));
    op->func = "sg_add";
    op->func_type = u32;
    t[0].type = t[2].type = t[3].type = u32;
    t[1].type = src;
    t[4].type = qd_type_scalar(QD_TY_I32);
    t[5] = *op;
    t[6].value = 0;
    if (block_form(lw)) {
        t[7].value = 5;
        t[8].value = scan_per_thread(lw, 4);
        t[9].value = packed_scan_states(lw, u32);
        *n = 10;
        return "alg_scan_lookback";
    }
    t[7].value = depth;
    *n = 8;
    return "alg_scan_tiles";
}

/* Binds a variable of the name `name` to e and returns a NAME node that reads it (the copy of
 * select indexes the user's containers through their own subscript rules). */
static QdAst *
name_of(Lowerer *lw, const QdAst *node, const char *name, const Expr *e)
{
    QdAst *n = QD_NEW(lw->arena, QdAst);
    const char *interned = qd_intern(lw->m, name);
    if (!n || !interned || lw_bind(lw, interned, e, NULL) < 0) {
        return NULL;
    }
    memset(n, 0, sizeof(*n));
    n->kind = QD_AST_NAME;
    n->name = interned;
    n->line = node->line;
    n->col = node->col;
    n->end_line = node->end_line;
    n->end_col = node->end_col;
    return n;
}

/* A scalar of a 1-D field or ndarray at index i, as a value. */
static int
element(Lowerer *lw, const QdAst *node, const Expr *buf, const Expr *i, Expr *out)
{
    Expr lv;
    RETURN_IF_ERROR(lw_subscript_indices(lw, node, node, buf, (Expr *)i, 1, &lv));
    return lw_rvalue(lw, node, &lv, out);
}

/* `base[index] = value` as an assignment statement stores it: through the container's own
 * store_subscript, or into the element the subscript selects (a struct or vector field's). */
static int
store_element(Lowerer *lw, const QdAst *node, const Expr *base, const QdAst *index,
              const Expr *value)
{
    const ExprOps *ops = lw_expr_ops(base);
    int rc = ops->store_subscript ? ops->store_subscript(lw, node, base, index, value, NULL)
                                  : LW_DECLINED;
    if (rc != LW_DECLINED) {
        return rc;
    }
    Expr lv;
    RETURN_IF_ERROR(lw_subscript(lw, node, base, index, &lv));
    const ExprOps *elem = lw_expr_ops(&lv);
    if (elem->store) {
        return elem->store(lw, node, &lv, value);
    }
    return lw_store(lw, node, &lv, value);
}

/* select's copy: a loop over i < n (the count in slot np) with out[scratch[i]] = arr[i] where
 * flags[i] == 1. Written with the frontend's own subscripts and assignment, so that elements of
 * any type (vectors, matrices, structs) are copied as an assignment in a kernel copies them. */
static int
select_copy(Lowerer *lw, const QdAst *node, const Expr *arr, const Expr *flags, const Expr *out,
            const Expr *scratch, uint32_t np)
{
    const QdType *i32 = qd_type_scalar(QD_TY_I32);
    RETURN_IF_ERROR(lw_open_loop_task(lw, NULL)); /* the user's loop_config is for their loop */
    uint32_t zero = lw_const_int(lw, i32, 0);
    uint32_t n = lw_emit_value(lw, QD_OP_LOAD, i32, np, 0);
    uint32_t ivar;
    LoopScope scope;
    RETURN_IF_ERROR(lw_parallel_enter(lw, zero, n, i32, &ivar, &scope));
    lw_push_scope(lw);
    Expr i = lw_value(ivar, i32), flag, one = {0}, cond;
    one.kind = EX_INT;
    one.ival = 1;
    int rc = element(lw, node, flags, &i, &flag);
    if (rc == 0) {
        rc = lw_compare(lw, node, QD_CMP_EQ, &flag, &one, &cond);
    }
    uint32_t c = QD_NO_VALUE;
    if (rc == 0) {
        rc = lw_truth(lw, node, &cond, &c);
    }
    QdInst *ifi = rc == 0 ? lw_emit(lw, QD_OP_IF, 1) : NULL;
    if (rc == 0 && !ifi) {
        rc = -1;
    }
    if (rc == 0) {
        ifi->args[0] = c;
        lw->cur = ifi->regions[0];
        Expr pos, j, src;
        rc = element(lw, node, scratch, &i, &pos);
        if (rc == 0) {
            rc = lw_convert(lw, node, &pos, i32, &j);
        }
        QdAst *iname = rc == 0 ? name_of(lw, node, "__qd_select_i", &i) : NULL;
        QdAst *jname = iname ? name_of(lw, node, "__qd_select_j", &j) : NULL;
        if (rc == 0 && !jname) {
            rc = lw_nomem(lw);
        }
        if (rc == 0) {
            rc = lw_subscript(lw, node, arr, iname, &src);
        }
        if (rc == 0) {
            rc = store_element(lw, node, out, jname, &src);
        }
    }
    lw_pop_scope(lw);
    lw_parallel_leave(lw, &scope);
    return rc;
}

/* select(arr, flags, out, num_out, scratch, n, log256_max_n): the flags scanned into write
 * positions in scratch[0:n] (the scan's tile states after them), the copy, and the count. */
static int
select_call(Lowerer *lw, const QdAst *node, const Algorithm *alg, const Expr *a)
{
    int64_t depth = 0;
    RETURN_IF_ERROR(depth_arg(lw, node, &a[6], &depth));
    if ((a[0].kind == EX_FIELD && a[2].kind == EX_FIELD && a[0].field == a[2].field) ||
        (a[0].kind == EX_NDARRAY && a[2].kind == EX_NDARRAY && a[0].id == a[2].id) ||
        (a[0].kind == EX_PYOBJ && a[2].kind == EX_PYOBJ && a[0].h == a[2].h)) {
        return lw_error(lw, node, QD_ERR_COMPILATION,
                        "ValueError: select: the output must be a different buffer from the input");
    }
    const QdType *i32 = qd_type_scalar(QD_TY_I32), *u32 = qd_type_scalar(QD_TY_U32);
    uint32_t np, flags, num_out, scratch;
    RETURN_IF_ERROR(i32_slot(lw, node, &a[5], &np));
    lw->cur = NULL; /* the op's tasks follow the serial task that stored the count */
    lw->task = NULL;
    const char *op = alg->name;
    RETURN_IF_ERROR(buffer_arg(lw, node, op, "flags", &a[1], i32, &flags));
    RETURN_IF_ERROR(buffer_arg(lw, node, op, "num_out", &a[3], i32, &num_out));
    RETURN_IF_ERROR(buffer_arg(lw, node, op, "scratch", &a[4], u32, &scratch));
    LwTemplateArg scan[10], add;
    uint32_t nscan;
    const char *scan_name = u32_scan(lw, depth, i32, scan, &add, &nscan);
    uint32_t scan_args[5] = {flags, scratch, scratch, np, np};
    RETURN_IF_ERROR(lw_call_top_level_template(lw, scan_name, scan, nscan, scan_args, 5));
    RETURN_IF_ERROR(select_copy(lw, node, &a[0], &a[1], &a[2], &a[4], np));
    uint32_t count_args[4] = {flags, num_out, scratch, np};
    return lw_call_top_level_template(lw, alg->gpu, NULL, 0, count_args, 4);
}

/* reduce_by_key_add(keys_in, values_in, keys_out, values_out, num_runs, scratch, n,
 * value_dtype, log256_max_n). */
static int
reduce_by_key_call(Lowerer *lw, const QdAst *node, const Algorithm *alg, const Expr *a)
{
    int64_t depth = 0;
    RETURN_IF_ERROR(depth_arg(lw, node, &a[8], &depth));
    const QdType *vt = a[7].kind == EX_PYOBJ && a[7].hkind == QD_HOST_DTYPE && !a[7].str
                           ? a[7].ty : NULL;
    if (!vt) {
        return lw_error(lw, node, QD_ERR_TYPE,
                        "reduce_by_key_add: value_dtype must be a Quadrants scalar type");
    }
    if (vt->kind != QD_TY_I32 && vt->kind != QD_TY_U32 && vt->kind != QD_TY_F32) {
        return lw_error(lw, node, QD_ERR_COMPILATION,
                        "NotImplementedError: reduce_by_key_add: value dtype %s is not supported "
                        "(supported: i32, u32, f32)", lw_type_name(vt));
    }
    const QdType *kt = elem_of(&a[0]);
    uint32_t args[7];
    RETURN_IF_ERROR(i32_slot(lw, node, &a[6], &args[6]));
    lw->cur = NULL; /* the op's tasks follow the serial task that stored the count */
    lw->task = NULL;
    const char *op = alg->name;
    RETURN_IF_ERROR(buffer_arg(lw, node, op, "keys_in", &a[0], NULL, &args[0]));
    RETURN_IF_ERROR(buffer_arg(lw, node, op, "values_in", &a[1], vt, &args[1]));
    RETURN_IF_ERROR(buffer_arg(lw, node, op, "keys_out", &a[2], kt, &args[2]));
    RETURN_IF_ERROR(buffer_arg(lw, node, op, "values_out", &a[3], vt, &args[3]));
    RETURN_IF_ERROR(buffer_arg(lw, node, op, "num_runs", &a[4], qd_type_scalar(QD_TY_I32),
                               &args[4]));
    RETURN_IF_ERROR(buffer_arg(lw, node, op, "scratch", &a[5], qd_type_scalar(QD_TY_U32),
                               &args[5]));
    LwTemplateArg scan[10], add;
    uint32_t nscan;
    const char *scan_name = u32_scan(lw, depth, qd_type_scalar(QD_TY_U32), scan, &add, &nscan);
    LwTemplateArg targs[3];
    memset(targs, 0, sizeof(targs));
    targs[0].type = kt;
    targs[1].type = vt;
    targs[2].func = scan_name;
    targs[2].func_targs = scan;
    targs[2].nfunc_targs = nscan;
    return lw_call_top_level_template(lw, alg->gpu, targs, 3, args, 7);
}

int
lw_algorithm_call(Lowerer *lw, const QdAst *node, const Expr *fn, const char *name,
                  const CallArgs *c, Expr *out)
{
    const Algorithm *alg = find_algorithm(name);
    memset(out, 0, sizeof(*out));
    out->kind = EX_VOID;
    if (!alg) {
        return lw_error(lw, node, QD_ERR_SYNTAX, "qd.algorithms.%s is not supported in kernels",
                        name);
    }
    RETURN_IF_ERROR(lw_require_top_level(lw, node, name));
    if (alg->args == AA_SELECT) {
        if (c->npos != 7 || c->nkw != 0) {
            return lw_error(lw, node, QD_ERR_TYPE, "select() takes 7 arguments, %u given",
                            c->npos + c->nkw);
        }
        return select_call(lw, node, alg, c->pos);
    }
    if (alg->args == AA_RBK) {
        if (c->npos != 9 || c->nkw != 0) {
            return lw_error(lw, node, QD_ERR_TYPE,
                            "reduce_by_key_add() takes 9 arguments, %u given", c->npos + c->nkw);
        }
        return reduce_by_key_call(lw, node, alg, c->pos);
    }
    if (alg->args == AA_SORT) {
        if (c->npos != 10 || c->nkw != 0) {
            return lw_error(lw, node, QD_ERR_TYPE, "sort() takes 10 arguments, %u given",
                            c->npos + c->nkw);
        }
        lw->cur = NULL; /* no serial task: every phase reads the count itself */
        lw->task = NULL;
        return sort_call(lw, node, alg, fn, c->pos);
    }
    /* (arr, out, scratch, n, dtype, log256_max_n) */
    if (c->npos != 6 || c->nkw != 0) {
        return lw_error(lw, node, QD_ERR_TYPE, "%s() takes 6 arguments, %u given", name,
                        c->npos + c->nkw);
    }
    const Expr *a = c->pos;
    int64_t depth = 0;
    const QdType *ty = NULL;
    RETURN_IF_ERROR(depth_arg(lw, node, &a[5], &depth));
    RETURN_IF_ERROR(scalar_dtype_arg(lw, node, name, &a[4], &ty));
    if (alg->args == AA_SCAN &&
        ((a[0].kind == EX_FIELD && a[1].kind == EX_FIELD && a[0].field == a[1].field) ||
         (a[0].kind == EX_NDARRAY && a[1].kind == EX_NDARRAY && a[0].id == a[1].id))) {
        return lw_error(lw, node, QD_ERR_COMPILATION,
                        "ValueError: %s: the output must be a different buffer from the input",
                        name);
    }
    const QdType *sint = qd_type_scalar(qd_type_bits(ty) == 64 ? QD_TY_I64 : QD_TY_I32);
    const QdType *raw = NULL;
    Expr zero = {0};
    zero.kind = EX_INT;
    uint32_t args[5];
    RETURN_IF_ERROR(i32_slot(lw, node, &a[3], &args[3]));
    if (alg->args == AA_SCAN) {
        /* the scan's tile states start at 0 */
        RETURN_IF_ERROR(i32_slot(lw, node, &zero, &args[4]));
    }
    lw->cur = NULL; /* the op's tasks follow the serial task that stored the counts */
    lw->task = NULL;
    RETURN_IF_ERROR(buffer_arg(lw, node, name, "arr", &a[0], ty, &args[0]));
    RETURN_IF_ERROR(buffer_arg(lw, node, name, "out", &a[1], ty, &args[1]));
    RETURN_IF_ERROR(scratch_arg(lw, node, name, &a[2], ty, &args[2], &raw));
    bool blocks = block_form(lw);
    LwTemplateArg targs[10];
    uint32_t nt = 0;
    memset(targs, 0, sizeof(targs));
    targs[nt++].type = ty;
    if (alg->args != AA_REDUCE) {
        targs[nt++].type = ty; /* the element types of arr and out */
        targs[nt++].type = ty;
    }
    targs[nt++].type = raw;
    targs[nt++].type = sint;
    targs[nt].func = alg->op;
    targs[nt++].func_type = ty;
    targs[nt++].value = identity_bits(alg->identity, ty);
    if (!blocks) {
        targs[nt++].value = depth;
    } else {
        targs[nt++].value = 5; /* log2 of the 32 lanes the block form is written for */
        if (alg->args == AA_SCAN) {
            targs[nt++].value = scan_per_thread(lw, qd_type_bits(ty) / 8);
            targs[nt++].value = packed_scan_states(lw, ty);
        }
    }
    return lw_call_top_level_template(lw, blocks ? alg->gpu : alg->cpu, targs, nt, args,
                                      alg->args == AA_REDUCE ? 4 : 5);
}
