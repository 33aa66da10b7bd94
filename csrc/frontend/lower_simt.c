/* frontend/lower_simt.c -- the SIMT builtins: qd.simt.block / subgroup / warp / grid.
 *
 * The host names them "simt.<module>.<function>" (the modules of quadrants/simt); their rows are
 * in simt.def, and lw_simt_call maps each to QIR's SIMT instructions (ir/ops.def):
 *   block.sync, sync_{all,any,count}_nonzero    block_sync, block_sync_{all,any,count}
 *   block.thread_idx, global_thread_idx         thread_idx, block_idx * block_dim + thread_idx
 *   block / subgroup.mem_fence, grid.mem_fence  fence_block, fence_device
 *   subgroup.shuffle{,_xor,_up,_down}           shuffle{,_xor,_up,_down} (index as i32)
 *   subgroup.broadcast(_first), invocation_id   shuffle (lane 0 for _first), lane_id
 *   subgroup.ballot / all_true / any_true       ballot (as u64), vote_all / vote_any (as i32)
 *   subgroup.all_equal(v)                       vote_all(v == shuffle(v, 0))
 *   subgroup.lanemask_*                         shifts of 1 << lane in u32
 *   subgroup.sync, warp.sync(mask)              subgroup_sync of the constant 0xffffffff (u32) /
 *                                               of mask converted to u32 (__syncwarp(mask))
 *   warp.*                                      the same instructions; the other masks are
 *                                               ignored (the GPU code uses the active mask)
 * Deprecated aliases (mem_sync, barrier, memory_barrier, memfence, ballot_full_subgroup) warn
 * with a DeprecationWarning at compile time. group_size / log2_group_size are compile-time ints.
 *
 * block.SharedArray(shape, dtype) is a `shared_alloc` of a flat array (shape's product of
 * elements, vector/matrix dtypes flattened); the Expr (EX_SHARED) keeps the shape and
 * simt_subscript turns x[i, j] into an `array_ptr` of the row-major flat index: an lvalue in
 * shared memory, atomic under augmented assignment. The subgroup and block collectives
 * (reductions, scans, sorting: collectives.def) are calls of the templates of
 * quadrants/templates/simt_subgroup.qir and simt_block.qir; the block's radix ranking is
 * @qd.func code over them (quadrants/simt/_block_collectives.py).
 */
#include "lower.h"

#include <math.h>
#include <string.h>

/* Lanes per subgroup of the target, and its log2. */
static uint32_t
subgroup_size(const Lowerer *lw)
{
    return lw->opt->subgroup_size ? lw->opt->subgroup_size : 32;
}

static int64_t
log2_subgroup_size(const Lowerer *lw)
{
    int64_t l = 0;
    while ((1u << l) < subgroup_size(lw)) {
        l++;
    }
    return l;
}

/* What a builtin lowers to. */
typedef enum SimtKind {
    SK_GEOMETRY,   /* a no-operand i32 value: op */
    SK_GLOBAL_TID, /* block_idx * block_dim + thread_idx */
    SK_BARRIER,    /* a no-operand, no-result instruction: op */
    SK_SYNC_MASK,  /* subgroup_sync of the full mask (ival 0) or of the mask argument (1) */
    SK_SYNC_PRED,  /* op(i32 predicate) -> i32 */
    SK_SHUFFLE,    /* op(value, index) */
    SK_SHUFFLE_M,  /* op(value, index) after a leading mask argument (warp.shfl_*) */
    SK_FIRST,      /* shuffle(value, 0) */
    SK_ELECT,      /* lane_id == 0 as i32 */
    SK_SUBGROUP_SIZE, /* a compile-time int: the subgroup size (ival 0) or its log2 (1) */
    SK_BALLOT,     /* ballot(pred): u64 (subgroup) */
    SK_BALLOT_N,   /* ballot_first_n(pred, n): u32 */
    SK_BALLOT32,   /* warp.ballot(pred) / active_mask(): u32 */
    SK_VOTE,       /* vote_all / vote_any(pred) as i32 */
    SK_VOTE_M,     /* the same after a mask argument (warp.*_nonzero) */
    SK_UNIQUE,     /* warp.unique(mask, pred): all or none */
    SK_MATCH_M,    /* warp.match_any(mask, value): the lanes of equal value */
    SK_ALL_EQUAL,  /* vote_all(v == shuffle(v, 0)) */
    SK_LANEMASK,   /* lanemask_{lt,le,eq,gt,ge}: ival 0..4 */
    SK_SHARED,     /* SharedArray(shape, dtype) */
    SK_IDENTITY,   /* _identity(v, kind): a constant of v's type (for the collectives): kind 0
                      zero, 1 one, 2 all ones, 3 the type's largest value (+inf), 4 its
                      smallest (-inf) */
    SK_UNSUPPORTED, /* a name of the API with no lowering: a compile error */
} SimtKind;

typedef struct SimtBuiltin {
    const char *name;       /* after "simt." */
    SimtKind kind;
    QdOp op;
    int64_t ival;
    const char *deprecated; /* the name to use instead, or NULL */
} SimtBuiltin;

static const SimtBuiltin simt_builtins[] = {
#define QD_SIMT(name, KIND, OP, ival, deprecated, doc) {name, SK_##KIND, QD_OP_##OP, ival, deprecated},
#include "simt.def"
#undef QD_SIMT
};

static const QdType *
scalar(QdTypeKind kind)
{
    return qd_type_scalar(kind);
}

static int
nargs_error(Lowerer *lw, const QdAst *node, const char *name, uint32_t want, uint32_t got)
{
    return lw_error(lw, node, QD_ERR_SYNTAX, "qd.simt.%s() takes %u argument%s, %u given", name, want,
                    want == 1 ? "" : "s", got);
}

/* A runtime value of type ty from argument e (converted). */
static int
arg_as(Lowerer *lw, const QdAst *node, const Expr *e, const QdType *ty, uint32_t *id)
{
    Expr v;
    if (e->kind == EX_MATRIX || e->kind == EX_TUPLE || e->kind == EX_STRUCT) {
        return lw_error(lw, node, QD_ERR_TYPE, "SIMT operations take scalars");
    }
    RETURN_IF_ERROR(lw_convert(lw, node, e, ty, &v));
    if (!lw_is_runtime(&v)) {
        RETURN_IF_ERROR(lw_rvalue(lw, node, &v, &v));
    }
    *id = v.id;
    return 0;
}

/* The runtime scalar of argument e in its own type (literals get the default types). */
static int
arg_value(Lowerer *lw, const QdAst *node, const Expr *e, Expr *out)
{
    if (e->kind == EX_MATRIX || e->kind == EX_TUPLE || e->kind == EX_STRUCT) {
        return lw_error(lw, node, QD_ERR_TYPE, "SIMT operations take scalars");
    }
    return lw_rvalue(lw, node, e, out);
}

/* An integer predicate: u1 and other integers as i32 (nonzero = true). */
static int
predicate(Lowerer *lw, const QdAst *node, const Expr *e, uint32_t *id)
{
    Expr v;
    RETURN_IF_ERROR(arg_value(lw, node, e, &v));
    if (!qd_type_is_int(v.ty) && v.ty->kind != QD_TY_U1) {
        return lw_error(lw, node, QD_ERR_TYPE, "a SIMT predicate must be an integer, got %s",
                        qd_type_scalar_name(v.ty->kind));
    }
    if (v.ty->kind != QD_TY_I32) {
        RETURN_IF_ERROR(lw_convert(lw, node, &v, scalar(QD_TY_I32), &v));
    }
    *id = v.id;
    return 0;
}

static int
emitted(Lowerer *lw, uint32_t id, const QdType *ty, Expr *out)
{
    if (id == QD_NO_VALUE) {
        return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
    }
    *out = lw_value(id, ty);
    return 0;
}

/* a <op> b on two values of one type. */
static uint32_t
bin(Lowerer *lw, QdOp op, const QdType *ty, uint32_t a, uint32_t b)
{
    return lw_emit_value(lw, op, ty, a, b);
}

/* Element idx[0 .. n) of a SharedArray (EX_SHARED): the flat row-major index, then array_ptr;
 * an lvalue in shared memory (a vector/matrix of them for vector/matrix elements). `where` is
 * blamed for bad indices. */
static int
shared_element(Lowerer *lw, const QdAst *node, const QdAst *where, const Expr *base,
               const Expr *idx, uint32_t n, Expr *out)
{
    const QdType *i32 = scalar(QD_TY_I32);
    if (n != base->nitems) {
        return lw_error(lw, node, QD_ERR_SYNTAX, "SharedArray with %u dimensions is indexed with %u indices",
                        base->nitems, n);
    }
    uint32_t flat = QD_NO_VALUE;
    for (uint32_t i = 0; i < n; i++) {
        if (idx[i].kind == EX_INT && (idx[i].ival < 0 || idx[i].ival >= base->items[i].ival)) {
            return lw_error(lw, node, QD_ERR_INDEX, "index %lld is out of bounds for axis %u of size %lld",
                            (long long)idx[i].ival, i, (long long)base->items[i].ival);
        }
        uint32_t v;
        RETURN_IF_ERROR(lw_index_value(lw, where, &idx[i], &v));
        if (flat == QD_NO_VALUE) {
            flat = v;
        } else {
            uint32_t extent = lw_const_int(lw, i32, base->items[i].ival);
            flat = bin(lw, QD_OP_ADD, i32, bin(lw, QD_OP_MUL, i32, flat, extent), v);
        }
    }
    if (flat == QD_NO_VALUE) {
        flat = lw_const_int(lw, i32, 0);
    }
    uint32_t per = base->rows ? base->rows * base->cols : 1;
    if (per > 1) {
        flat = bin(lw, QD_OP_MUL, i32, flat, lw_const_int(lw, i32, per));
    }
    const QdType *pty = qd_type_ptr(lw->m, base->ty, QD_SPACE_SHARED);
    Expr slots[256];
    if (per > QD_ARRAY_LEN(slots)) {
        return lw_error(lw, node, QD_ERR_SYNTAX, "SharedArray elements are limited to 256 entries");
    }
    for (uint32_t k = 0; k < per; k++) {
        uint32_t at = k ? bin(lw, QD_OP_ADD, i32, flat, lw_const_int(lw, i32, k)) : flat;
        uint32_t p = lw_emit_value(lw, QD_OP_ARRAY_PTR, pty, base->id, at);
        if (p == QD_NO_VALUE) {
            return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
        }
        memset(&slots[k], 0, sizeof(slots[k]));
        slots[k].kind = EX_LVALUE;
        slots[k].id = p;
        slots[k].ty = base->ty;
        slots[k].space = QD_SPACE_SHARED;
        slots[k].is_global = true;
    }
    if (!base->rows) {
        *out = slots[0];
        return 0;
    }
    RETURN_IF_ERROR(lw_matrix_new(lw, base->rows, base->cols, base->is_vector, base->ty, out));
    memcpy(out->items, slots, sizeof(Expr) * per);
    return 0;
}

/* x[index] of a SharedArray (EX_SHARED). */
static int
simt_subscript(Lowerer *lw, const QdAst *node, const Expr *base, const QdAst *index, Expr *out)
{
    int rc = lw_tile_subscript(lw, node, base, index, out); /* a[r0:r1, c0:c1] */
    if (rc != LW_DECLINED) {
        return rc;
    }
    Expr idx[16];
    uint32_t n = 0;
    RETURN_IF_ERROR(lw_collect_indices(lw, index, idx, &n));
    return shared_element(lw, node, index, base, idx, n, out);
}

int
lw_shared_element(Lowerer *lw, const QdAst *node, const Expr *base, const Expr *idx, uint32_t n,
                  Expr *out)
{
    return shared_element(lw, node, node, base, idx, n, out);
}

/* SharedArray(shape, dtype). */
static int
shared_array(Lowerer *lw, const QdAst *node, const MatrixCall *c, Expr *out)
{
    const Expr *shape = lw_matrix_arg(c, 0, "shape");
    const Expr *dtype = lw_matrix_arg(c, 1, "dtype");
    if (!shape || !dtype) {
        return lw_error(lw, node, QD_ERR_SYNTAX, "qd.simt.block.SharedArray(shape, dtype) needs a shape and a dtype");
    }
    if (!lw->in_parallel) {
        return lw_error(lw, node, QD_ERR_SYNTAX,
                        "qd.simt.block.SharedArray must be created inside the body of a parallel for loop");
    }
    memset(out, 0, sizeof(*out));
    out->kind = EX_SHARED;
    uint32_t ndim = shape->kind == EX_TUPLE ? shape->nitems : 1;
    const Expr *dims = shape->kind == EX_TUPLE ? shape->items : shape;
    if ((shape->kind != EX_TUPLE && shape->kind != EX_INT) || ndim == 0 || ndim > 16) {
        return lw_error(lw, node, QD_ERR_COMPILATION,
                        "qd.simt.block.SharedArray: shape must be an int or a tuple/list of ints");
    }
    out->items = QD_NEW_ARRAY(lw->arena, Expr, ndim);
    if (!out->items) {
        return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
    }
    out->nitems = ndim;
    uint64_t count = 1;
    for (uint32_t i = 0; i < ndim; i++) {
        if (dims[i].kind != EX_INT || dims[i].ival <= 0) {
            return lw_error(lw, node, QD_ERR_COMPILATION,
                            "qd.simt.block.SharedArray: shape must be an int or a tuple/list of positive ints");
        }
        out->items[i] = dims[i];
        count *= (uint64_t)dims[i].ival;
        if (count > (1u << 24)) {
            return lw_error(lw, node, QD_ERR_COMPILATION, "qd.simt.block.SharedArray is too large");
        }
    }
    if (dtype->kind == EX_PYOBJ && dtype->hkind == QD_HOST_MATRIX_TYPE) {
        uint32_t n, m;
        bool is_vector;
        const QdType *ty;
        RETURN_IF_ERROR(lw_matrix_type_info(lw, node, dtype->h, &n, &m, &is_vector, &ty));
        out->rows = n;
        out->cols = m;
        out->is_vector = is_vector;
        out->ty = ty;
        count *= (uint64_t)n * m;
    } else if (dtype->kind == EX_PYOBJ && dtype->hkind == QD_HOST_DTYPE && dtype->ty) {
        out->ty = dtype->ty;
        if (dtype->str) { /* Python int / float */
            out->ty = lw_literal_type(lw, &(Expr){.kind = strcmp(dtype->str, "float") == 0 ? EX_FLOAT : EX_INT});
        }
    } else {
        return lw_error(lw, node, QD_ERR_TYPE, "qd.simt.block.SharedArray: dtype must be a scalar, vector or matrix type");
    }
    const QdType *arr = qd_type_array(lw->m, out->ty, (uint32_t)count);
    const QdType *pty = arr ? qd_type_ptr(lw->m, arr, QD_SPACE_SHARED) : NULL;
    QdInst *inst = pty ? lw_emit(lw, QD_OP_SHARED_ALLOC, 0) : NULL;
    if (!inst || qd_inst_set_result(lw->f, inst, pty, NULL) == QD_NO_VALUE) {
        return qd_error(lw->ctx, lw->loc, QD_ERR_NOMEM, "out of memory");
    }
    out->id = inst->result;
    return 0;
}

/* lanemask_{lt,le,eq,gt,ge}(lane) in u32. */
static int
lanemask(Lowerer *lw, const QdAst *node, int which, const Expr *lane, Expr *out)
{
    const QdType *u32 = scalar(QD_TY_U32);
    uint32_t l;
    RETURN_IF_ERROR(arg_as(lw, node, lane, u32, &l));
    uint32_t eq = bin(lw, QD_OP_SHL, u32, lw_const_int(lw, u32, 1), l);
    uint32_t lt = bin(lw, QD_OP_SUB, u32, eq, lw_const_int(lw, u32, 1));
    uint32_t ones = lw_const_int(lw, u32, 0xffffffffll);
    uint32_t r = which == 0   ? lt
                 : which == 1 ? bin(lw, QD_OP_OR, u32, lt, eq)
                 : which == 2 ? eq
                 : which == 3 ? bin(lw, QD_OP_XOR, u32, bin(lw, QD_OP_OR, u32, lt, eq), ones)
                              : bin(lw, QD_OP_XOR, u32, lt, ones);
    return emitted(lw, r, u32, out);
}

/* The identity constant of kind k (see SK_IDENTITY) in the type of v. */
static int
identity(Lowerer *lw, const QdAst *node, const Expr *v, const Expr *k, Expr *out)
{
    Expr val;
    RETURN_IF_ERROR(arg_value(lw, node, v, &val));
    const QdType *ty = val.ty;
    if (k->kind != EX_INT || k->ival < 0 || k->ival > 4) {
        return lw_error(lw, node, QD_ERR_INTERNAL, "_identity: bad kind");
    }
    uint32_t id;
    if (qd_type_is_float(ty)) {
        static const double values[] = {0.0, 1.0, 0.0, INFINITY, -INFINITY};
        if (k->ival == 2) {
            return lw_error(lw, node, QD_ERR_TYPE, "bitwise scans need integers, got %s",
                            qd_type_scalar_name(ty->kind));
        }
        id = lw_const_float(lw, ty, values[k->ival]);
    } else {
        unsigned bits = ty->kind == QD_TY_U1 ? 1 : qd_type_bits(ty);
        bool is_signed = qd_type_is_signed(ty);
        uint64_t ones = bits >= 64 ? ~0ull : ((1ull << bits) - 1);
        int64_t v64;
        switch (k->ival) {
        case 0:
            v64 = 0;
            break;
        case 1:
            v64 = 1;
            break;
        case 2:
            v64 = is_signed ? -1 : (int64_t)ones;
            break;
        case 3:
            v64 = is_signed ? (int64_t)(ones >> 1) : (int64_t)ones;
            break;
        default:
            v64 = is_signed ? -(int64_t)(ones >> 1) - 1 : 0;
            break;
        }
        id = lw_const_int(lw, ty, v64);
    }
    return emitted(lw, id, ty, out);
}

/***** collectives: calls of quadrants/templates/simt_{subgroup,block}.qir (collectives.def) *****/

/* What a collective takes (collectives.def's ARGS). */
typedef enum CollectiveArgs {
    CA_V,       /* subgroup: a value */
    CA_V_HEAD,  /* subgroup: a value and a segment-head flag */
    CA_KV,      /* subgroup: a key and a value */
    CA_V_OP,    /* subgroup: a value and the operator, a @qd.func */
    CA_B,       /* block: value, block_dim, dtype */
    CA_B_OP,    /* block: value, block_dim, op, dtype */
    CA_B_OP_ID, /* block: value, block_dim, op, identity, dtype */
} CollectiveArgs;

typedef struct Collective {
    const char *name;    /* "<module>.<function>", without "_tiled" */
    CollectiveArgs args;
    const char *tmpl;    /* the template called */
    const char *op;      /* the operator's template, or NULL */
    int identity;        /* the identity kind of the first lane or thread (exclusive scans), or -1 */
} Collective;

static const Collective collectives[] = {
#define QD_COLLECTIVE(name, ARGS, tmpl, op, identity, doc) {name, CA_##ARGS, tmpl, op, identity},
#include "collectives.def"
#undef QD_COLLECTIVE
};

/* The collective `name` ("subgroup.reduce_add", "subgroup.reduce_add_tiled", "block.reduce")
 * or NULL; *tiled for a subgroup collective's _tiled form. */
static const Collective *
find_collective(const char *name, bool *tiled)
{
    static const char suffix[] = "_tiled";
    size_t len = strlen(name), ls = sizeof(suffix) - 1;
    for (int pass = 0; pass < 2; pass++) {
        size_t base = len;
        *tiled = pass == 1;
        if (*tiled) {
            if (len <= ls || strcmp(name + len - ls, suffix) != 0) {
                return NULL;
            }
            base = len - ls;
        }
        for (size_t i = 0; i < QD_ARRAY_LEN(collectives); i++) {
            const Collective *col = &collectives[i];
            bool is_block = col->args >= CA_B;
            if (strlen(col->name) == base && strncmp(col->name, name, base) == 0 &&
                !(*tiled && is_block)) {
                return col;
            }
        }
    }
    return NULL;
}

/* A runtime scalar of its own type, or an error naming the collective. */
static int
collective_value(Lowerer *lw, const QdAst *node, const char *name, const Expr *e, Expr *out)
{
    RETURN_IF_ERROR(arg_value(lw, node, e, out));
    if (!qd_type_is_scalar(out->ty) || out->ty->kind == QD_TY_U1) {
        return lw_error(lw, node, QD_ERR_TYPE, "qd.simt.%s takes numbers", name);
    }
    return 0;
}

/* A block collective's value converted to its dtype argument, and its block_dim. */
static int
block_args(Lowerer *lw, const QdAst *node, const char *name, const MatrixCall *c, Expr *v,
           int64_t *block_dim)
{
    const Expr *bd = &c->pos[1];
    if (bd->kind != EX_INT || bd->ival <= 0 || bd->ival % subgroup_size(lw) != 0 ||
        bd->ival > 1024) {
        return lw_error(lw, node, QD_ERR_COMPILATION,
                        "qd.simt.%s: block_dim must be a positive multiple of the subgroup size %d "
                        "(at most 1024) known at compile time",
                        name, subgroup_size(lw));
    }
    *block_dim = bd->ival;
    const QdType *ty;
    RETURN_IF_ERROR(lw_matrix_dtype_arg(lw, node, &c->pos[c->npos - 1], &ty));
    if (!ty || !qd_type_is_scalar(ty) || ty->kind == QD_TY_U1) {
        return lw_error(lw, node, QD_ERR_TYPE, "qd.simt.%s: dtype must be a numeric type", name);
    }
    uint32_t id;
    RETURN_IF_ERROR(arg_as(lw, node, &c->pos[0], ty, &id));
    *v = lw_value(id, ty);
    return 0;
}

/* qd.simt.<module>.<collective>(...): its arguments into a call of its template. */
static int
collective(Lowerer *lw, const QdAst *node, const char *name, const Collective *col, bool tiled,
           const MatrixCall *c, Expr *out)
{
    static const uint32_t nargs_of[] = {
        [CA_V] = 1, [CA_V_HEAD] = 2, [CA_KV] = 2, [CA_V_OP] = 2,
        [CA_B] = 3, [CA_B_OP] = 4,   [CA_B_OP_ID] = 5,
    };
    uint32_t want = nargs_of[col->args] + (tiled ? 1 : 0);
    if (c->npos != want || c->nkw) {
        return nargs_error(lw, node, name, want, c->npos + c->nkw);
    }
    if (!lw->in_parallel) {
        return lw_error(lw, node, QD_ERR_SYNTAX,
                        "qd.simt.%s can only be used inside the body of a parallel for loop", name);
    }
    bool is_block = col->args >= CA_B;
    int64_t log2_sg = log2_subgroup_size(lw);
    int64_t size = log2_sg; /* log2_size of a subgroup collective, block_dim of a block one */
    if (tiled) {
        const Expr *l = &c->pos[want - 1];
        if (l->kind != EX_INT || l->ival < 0 || l->ival > log2_sg) {
            return lw_error(lw, node, QD_ERR_COMPILATION,
                            "qd.simt.%s: log2_size must be a compile-time int in [0, %lld] (the "
                            "subgroups of this target have %u lanes)",
                            name, (long long)log2_sg, subgroup_size(lw));
        }
        size = l->ival;
    }
    const QdType *i32 = scalar(QD_TY_I32);
    Expr v, second;
    if (is_block) {
        RETURN_IF_ERROR(block_args(lw, node, name, c, &v, &size));
    } else {
        RETURN_IF_ERROR(collective_value(lw, node, name, &c->pos[0], &v));
    }
    /* <T, OP, L> of a subgroup collective, <T, OP, B, S> of a block one (S: log2 of the
     * subgroup size), <K, V, L> of the sort */
    LwTemplateArg targs[4] = {{.type = v.ty}, {.value = 0}, {.value = size}, {.value = log2_sg}};
    uint32_t ntargs = is_block ? 4 : 3;
    uint32_t args[2] = {v.id, QD_NO_VALUE}, nargs = 1;
    if (col->args == CA_KV) {
        /* the pair sorted in place in two one-element local arrays */
        uint32_t keys, vals, result;
        RETURN_IF_ERROR(collective_value(lw, node, name, &c->pos[1], &second));
        RETURN_IF_ERROR(lw_local_array(lw, v.ty, 1, &keys));
        RETURN_IF_ERROR(lw_local_array(lw, second.ty, 1, &vals));
        RETURN_IF_ERROR(lw_array_store(lw, keys, v.ty, 0, v.id));
        RETURN_IF_ERROR(lw_array_store(lw, vals, second.ty, 0, second.id));
        targs[1] = (LwTemplateArg){.type = second.ty};
        args[0] = keys;
        args[1] = vals;
        RETURN_IF_ERROR(lw_call_template(lw, col->tmpl, targs, 3, args, 2, NULL, &result));
        Expr *items = QD_NEW_ARRAY(lw->arena, Expr, 2);
        if (!items) {
            return lw_nomem(lw);
        }
        RETURN_IF_ERROR(lw_array_items(lw, keys, v.ty, 0, 1, &items[0]));
        RETURN_IF_ERROR(lw_array_items(lw, vals, second.ty, 0, 1, &items[1]));
        memset(out, 0, sizeof(*out));
        out->kind = EX_TUPLE;
        out->items = items;
        out->nitems = 2;
        return 0;
    }
    if (col->op == NULL) {
        const char *fname;
        const Expr *op = &c->pos[is_block ? 2 : 1];
        RETURN_IF_ERROR(lw_func_as_function(lw, node, op, v.ty, 2, &fname));
        targs[1] = (LwTemplateArg){.func = fname};
    } else {
        bool bitwise = strcmp(col->op, "sg_and") == 0 || strcmp(col->op, "sg_or") == 0 ||
                       strcmp(col->op, "sg_xor") == 0;
        if (bitwise && !qd_type_is_int(v.ty)) {
            return lw_error(lw, node, QD_ERR_TYPE, "qd.simt.%s takes integers, got %s", name,
                            qd_type_scalar_name(v.ty->kind));
        }
        targs[1] = (LwTemplateArg){.func = col->op, .func_type = v.ty};
    }
    if (col->args == CA_V_HEAD) {
        /* the flag as 0 / 1 */
        Expr zero = {.kind = EX_INT, .ival = 0}, ne;
        RETURN_IF_ERROR(collective_value(lw, node, name, &c->pos[1], &second));
        RETURN_IF_ERROR(lw_compare(lw, node, QD_CMP_NE, &second, &zero, &ne));
        RETURN_IF_ERROR(arg_as(lw, node, &ne, i32, &args[nargs++]));
    } else if (col->args == CA_B_OP_ID) {
        RETURN_IF_ERROR(arg_as(lw, node, &c->pos[3], v.ty, &args[nargs++]));
    }
    if (col->identity >= 0) {
        Expr kind = {.kind = EX_INT, .ival = col->identity}, ident;
        RETURN_IF_ERROR(identity(lw, node, &v, &kind, &ident));
        args[nargs++] = ident.id;
    }
    uint32_t result;
    RETURN_IF_ERROR(lw_call_template(lw, col->tmpl, targs, ntargs, args, nargs, v.ty, &result));
    *out = lw_value(result, v.ty);
    return 0;
}

static int
deprecated(Lowerer *lw, const QdAst *node, const SimtBuiltin *b)
{
    return lw_warn(lw, node, "DeprecationWarning", "qd.simt.%s is deprecated; use %s instead", b->name,
                   b->deprecated);
}

int
lw_simt_call(Lowerer *lw, const QdAst *node, const char *name, const MatrixCall *c, Expr *out)
{
    const SimtBuiltin *b = NULL;
    for (size_t i = 0; i < QD_ARRAY_LEN(simt_builtins); i++) {
        if (strcmp(simt_builtins[i].name, name) == 0) {
            b = &simt_builtins[i];
            break;
        }
    }
    bool tiled = false;
    const Collective *col = b ? NULL : find_collective(name, &tiled);
    if (!col && (!b || b->kind == SK_UNSUPPORTED)) {
        return lw_error(lw, node, QD_ERR_SYNTAX, "qd.simt.%s is not supported in kernels yet", name);
    }
    if (lw->opt->simt_unsupported_arch && (col || b->kind != SK_SUBGROUP_SIZE)) {
        return lw_error(lw, node, QD_ERR_SYNTAX,
                        "qd.simt.%s is not supported for arch %s; use a GPU arch, or "
                        "qd.init(arch=qd.cpu, cpu_simt=True) to emulate it",
                        name, lw->opt->simt_unsupported_arch);
    }
    if (col) {
        return collective(lw, node, name, col, tiled, c, out);
    }
    if (b->deprecated) {
        RETURN_IF_ERROR(deprecated(lw, node, b));
    }
    static const uint32_t want[] = {
        [SK_GEOMETRY] = 0, [SK_GLOBAL_TID] = 0, [SK_BARRIER] = 0, [SK_SYNC_PRED] = 1,
        [SK_SHUFFLE] = 2,  [SK_SHUFFLE_M] = 3,  [SK_FIRST] = 1,   [SK_ELECT] = 0,
        [SK_SUBGROUP_SIZE] = 0, [SK_BALLOT] = 1,     [SK_BALLOT_N] = 2, [SK_BALLOT32] = 1,
        [SK_VOTE] = 1,     [SK_VOTE_M] = 2,     [SK_UNIQUE] = 2,  [SK_ALL_EQUAL] = 1,
        [SK_LANEMASK] = 1, [SK_SHARED] = 2,    [SK_IDENTITY] = 2, [SK_UNSUPPORTED] = 0,
        [SK_MATCH_M] = 2,  [SK_SYNC_MASK] = 0,
    };
    uint32_t nwant = want[b->kind];
    if (b->kind == SK_SYNC_MASK && b->ival == 1) {
        nwant = 1; /* warp.sync(mask) */
    } else if (b->kind == SK_BALLOT32 && b->ival == 1) {
        nwant = 0; /* active_mask() */
    }
    if (b->kind != SK_SHARED && (c->npos != nwant || c->nkw)) {
        return nargs_error(lw, node, name, nwant, c->npos + c->nkw);
    }
    if (b->kind == SK_SUBGROUP_SIZE) {
        memset(out, 0, sizeof(*out));
        out->kind = EX_INT;
        out->ival = b->ival ? log2_subgroup_size(lw) : subgroup_size(lw);
        return 0;
    }
    if (b->kind == SK_SHARED) {
        return shared_array(lw, node, c, out);
    }
    if (b->kind == SK_IDENTITY) {
        return identity(lw, node, &c->pos[0], &c->pos[1], out);
    }
    if (!lw->in_parallel) {
        return lw_error(lw, node, QD_ERR_SYNTAX,
                        "qd.simt.%s can only be used inside the body of a parallel for loop", name);
    }
    const QdType *i32 = scalar(QD_TY_I32), *u32 = scalar(QD_TY_U32), *u1 = scalar(QD_TY_U1);
    const Expr *a = c->pos;
    uint32_t p, v;
    Expr val;
    memset(out, 0, sizeof(*out));
    switch (b->kind) {
    case SK_GEOMETRY:
        return emitted(lw, lw_emit_value(lw, b->op, i32, QD_NO_VALUE, QD_NO_VALUE), i32, out);
    case SK_GLOBAL_TID: {
        uint32_t bi = lw_emit_value(lw, QD_OP_BLOCK_IDX, i32, QD_NO_VALUE, QD_NO_VALUE);
        uint32_t bd = lw_emit_value(lw, QD_OP_BLOCK_DIM, i32, QD_NO_VALUE, QD_NO_VALUE);
        uint32_t ti = lw_emit_value(lw, QD_OP_THREAD_IDX, i32, QD_NO_VALUE, QD_NO_VALUE);
        return emitted(lw, bin(lw, QD_OP_ADD, i32, bin(lw, QD_OP_MUL, i32, bi, bd), ti), i32, out);
    }
    case SK_BARRIER:
        out->kind = EX_VOID;
        return lw_emit(lw, b->op, 0) ? 0 : -1;
    case SK_SYNC_MASK: {
        /* __syncwarp(mask): subgroup.sync() waits for all 32 lanes, so that lanes that diverged
         * reconverge; a barrier over only the active lanes would not. */
        QdInst *inst;
        if (b->ival == 1) {
            RETURN_IF_ERROR(arg_as(lw, node, &a[0], u32, &v));
        } else {
            v = lw_const_int(lw, u32, 0xffffffffll);
        }
        if (v == QD_NO_VALUE || (inst = lw_emit(lw, b->op, 1)) == NULL) {
            return -1;
        }
        inst->args[0] = v;
        out->kind = EX_VOID;
        return 0;
    }
    case SK_SYNC_PRED:
        RETURN_IF_ERROR(predicate(lw, node, &a[0], &p));
        return emitted(lw, lw_emit_value(lw, b->op, i32, p, QD_NO_VALUE), i32, out);
    case SK_SHUFFLE_M:
        a++; /* the mask: the GPU code shuffles among the active lanes */
        /* fall through */
    case SK_SHUFFLE:
        RETURN_IF_ERROR(arg_value(lw, node, &a[0], &val));
        if (b->kind == SK_SHUFFLE_M) {
            const QdType *want_ty = strstr(name, "_f32") ? scalar(QD_TY_F32) : i32;
            RETURN_IF_ERROR(lw_convert(lw, node, &val, want_ty, &val));
        }
        RETURN_IF_ERROR(arg_as(lw, node, &a[1], i32, &v));
        return emitted(lw, lw_emit_value(lw, b->op, val.ty, val.id, v), val.ty, out);
    case SK_FIRST:
        RETURN_IF_ERROR(arg_value(lw, node, &a[0], &val));
        return emitted(lw, lw_emit_value(lw, b->op, val.ty, val.id, lw_const_int(lw, i32, 0)), val.ty,
                       out);
    case SK_ELECT: {
        uint32_t l = lw_emit_value(lw, QD_OP_LANE_ID, i32, QD_NO_VALUE, QD_NO_VALUE);
        Expr lane = lw_value(l, i32), zero = {.kind = EX_INT, .ival = 0};
        RETURN_IF_ERROR(lw_compare(lw, node, QD_CMP_EQ, &lane, &zero, out));
        return lw_convert(lw, node, out, i32, out);
    }
    case SK_BALLOT:
    case SK_BALLOT32:
    case SK_BALLOT_N: {
        if (b->kind == SK_BALLOT32 && b->ival == 1) {
            p = lw_const_int(lw, i32, 1);
        } else {
            RETURN_IF_ERROR(predicate(lw, node, &a[0], &p));
        }
        uint32_t r = lw_emit_value(lw, QD_OP_BALLOT, u32, p, QD_NO_VALUE);
        RETURN_IF_ERROR(emitted(lw, r, u32, out));
        if (b->kind == SK_BALLOT) {
            return lw_convert(lw, node, out, scalar(QD_TY_U64), out);
        }
        if (b->kind == SK_BALLOT_N) {
            if (a[1].kind != EX_INT || a[1].ival < 0 || a[1].ival > 32) {
                return lw_error(lw, node, QD_ERR_COMPILATION,
                                "qd.simt.subgroup.ballot_first_n: n must be a compile-time int in [0, 32]");
            }
            uint64_t mask = a[1].ival == 32 ? 0xffffffffull : ((1ull << a[1].ival) - 1);
            return emitted(lw, bin(lw, QD_OP_AND, u32, r, lw_const_int(lw, u32, (int64_t)mask)), u32, out);
        }
        return 0;
    }
    case SK_MATCH_M: /* the mask: the GPU code matches among the active lanes */
        RETURN_IF_ERROR(arg_value(lw, node, &a[1], &val));
        if (!qd_type_is_int(val.ty)) {
            return lw_error(lw, node, QD_ERR_TYPE, "qd.simt.%s takes an integer value, got %s", name,
                            qd_type_scalar_name(val.ty->kind));
        }
        if (qd_type_bits(val.ty) < 32) {
            RETURN_IF_ERROR(lw_convert(lw, node, &val, i32, &val));
        }
        return emitted(lw, lw_emit_value(lw, b->op, u32, val.id, QD_NO_VALUE), u32, out);
    case SK_VOTE_M:
        a++;
        /* fall through */
    case SK_VOTE:
        RETURN_IF_ERROR(predicate(lw, node, &a[0], &p));
        RETURN_IF_ERROR(emitted(lw, lw_emit_value(lw, b->op, u1, p, QD_NO_VALUE), u1, out));
        return lw_convert(lw, node, out, i32, out);
    case SK_UNIQUE: {
        RETURN_IF_ERROR(predicate(lw, node, &a[1], &p));
        uint32_t all = lw_emit_value(lw, QD_OP_VOTE_ALL, u1, p, QD_NO_VALUE);
        uint32_t any = lw_emit_value(lw, QD_OP_VOTE_ANY, u1, p, QD_NO_VALUE);
        uint32_t none = bin(lw, QD_OP_XOR, u1, any, lw_const_int(lw, u1, 1));
        RETURN_IF_ERROR(emitted(lw, bin(lw, QD_OP_OR, u1, all, none), u1, out));
        return lw_convert(lw, node, out, i32, out);
    }
    case SK_ALL_EQUAL: {
        RETURN_IF_ERROR(arg_value(lw, node, &a[0], &val));
        uint32_t first = lw_emit_value(lw, QD_OP_SHUFFLE, val.ty, val.id, lw_const_int(lw, i32, 0));
        Expr f = lw_value(first, val.ty), eq;
        RETURN_IF_ERROR(lw_compare(lw, node, QD_CMP_EQ, &val, &f, &eq));
        RETURN_IF_ERROR(predicate(lw, node, &eq, &p));
        RETURN_IF_ERROR(emitted(lw, lw_emit_value(lw, QD_OP_VOTE_ALL, u1, p, QD_NO_VALUE), u1, out));
        return lw_convert(lw, node, out, i32, out);
    }
    case SK_LANEMASK:
        return lanemask(lw, node, (int)b->ival, &a[0], out);
    default:
        break;
    }
    return lw_error(lw, node, QD_ERR_INTERNAL, "qd.simt.%s: unhandled", name);
}

/* `a.shape` of a SharedArray: a compile-time tuple of its extents. */
static int
shared_attribute(Lowerer *lw, const QdAst *node, const Expr *base, Expr *out)
{
    (void)lw;
    if (strcmp(node->name, "shape") != 0) {
        return LW_DECLINED;
    }
    memset(out, 0, sizeof(*out));
    out->kind = EX_TUPLE;
    out->nitems = base->nitems;
    out->items = base->items;
    return 0;
}

const ExprOps lw_shared_ops = {
    .name = "shared array",
    .attribute = shared_attribute,
    .subscript = simt_subscript,
    .store_subscript = lw_tile_store_subscript,
};

/* qd.global_thread_idx(): the builtins.def row of block.global_thread_idx. */
int
lw_builtin_global_thread_idx(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out)
{
    (void)op;
    MatrixCall mc = {c->pos, c->npos, c->kw, c->kwv, c->nkw};
    return lw_simt_call(lw, c->node, "block.global_thread_idx", &mc, out);
}
