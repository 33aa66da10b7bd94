/* passes/constfold.c -- the `constfold` pass: evaluate instructions whose operands are constants.
 *
 * Runs on each kernel and func after inlining. One walk in program order, which sees definitions
 * before uses, so chains fold in one go:
 *   - an instruction flagged QD_FOLDS in ops.def whose operands are all literal `const`s becomes
 *     a `const` itself, in place (same result id, so no use needs rewriting);
 *   - `select` with a constant condition (or equal operands) and the integer identities x + 0,
 *     x - 0, x * 1 are replaced by an operand (uses are rewritten as the walk reaches them);
 *   - `if` with a constant condition is replaced by the taken region; if that region ends in a
 *     terminator, what followed the `if` in its region is unreachable and is dropped.
 * The constants that fed a fold are left for `dce`.
 *
 * Semantics follow ops.def: integers wrap to their type's width; division and remainder by zero
 * (integer or float), shifts by a negative amount or past the width, and float-to-integer casts
 * out of range are left alone. Floats are computed in double and rounded to f32 after every
 * primitive step, as an f32 machine would; f16 and bf16 are not folded.
 */
#include "util.h"

#include <math.h>
#include <string.h>

/* State of the pass on one function. */
typedef struct Folder {
    QdPassCtx *pc;     /* errors and scratch */
    QdFunc *f;         /* function being folded */
    uint32_t *repl;    /* value id -> value replacing it, QD_NO_VALUE = none */
} Folder;

/* A folded value: integer bits in the representation of QdConst, or a double. */
typedef union Scalar {
    uint64_t u; /* integers: canonical bits (qd_util_wrap_int) */
    double f;   /* floats */
} Scalar;

/***** reading constants *****/

/* The literal constant defining value id, or NULL. */
static const QdInst *
const_def(const Folder *fo, uint32_t id)
{
    if (id >= fo->f->nvalues) {
        return NULL;
    }
    const QdInst *def = fo->f->values[id].def;
    if (def && def->op == QD_OP_CONST && !def->imm.cst.expr) {
        return def;
    }
    return NULL;
}

/* Only the types we compute exactly: integers, f32 and f64 (not f16 / bf16). */
static bool
foldable_type(const QdType *ty)
{
    return qd_type_is_int(ty) || ty->kind == QD_TY_F32 || ty->kind == QD_TY_F64;
}

static Scalar
const_value(const QdInst *c)
{
    Scalar s;
    if (qd_type_is_float(c->type)) {
        s.f = c->imm.cst.f;
    } else {
        s.u = qd_util_wrap_int(c->type, c->imm.cst.u);
    }
    return s;
}

/* Rounds to the precision of the float type (f32 or f64). */
static double
round_to(const QdType *ty, double x)
{
    return ty->kind == QD_TY_F32 ? (double)(float)x : x;
}

/***** integers *****/

static uint64_t
int_pow(uint64_t base, uint64_t exp)
{
    uint64_t r = 1;
    while (exp) {
        if (exp & 1) {
            r *= base;
        }
        base *= base;
        exp >>= 1;
    }
    return r;
}

/* Two-operand integer ops on canonical values of type ty (shift amounts of type tb). */
static bool
fold_int2(QdOp op, const QdType *ty, const QdType *tb, uint64_t a, uint64_t b, uint64_t *out)
{
    bool is_signed = qd_type_is_signed(ty);
    int64_t sa = (int64_t)a, sb = (int64_t)b;
    uint32_t width = qd_type_bits(ty);
    bool divides = op == QD_OP_DIV || op == QD_OP_REM || op == QD_OP_FLOORDIV ||
                   op == QD_OP_FLOORMOD;
    if (divides && b == 0) {
        return false;
    }
    /* x / -1 and x % -1 are computed without the INT64_MIN / -1 trap. */
    if (divides && is_signed && sb == -1) {
        *out = (op == QD_OP_DIV || op == QD_OP_FLOORDIV) ? 0 - a : 0;
        return true;
    }
    switch (op) {
    case QD_OP_ADD:
        *out = a + b;
        return true;
    case QD_OP_SUB:
        *out = a - b;
        return true;
    case QD_OP_MUL:
        *out = a * b;
        return true;
    case QD_OP_DIV:
        *out = is_signed ? (uint64_t)(sa / sb) : a / b;
        return true;
    case QD_OP_REM:
        *out = is_signed ? (uint64_t)(sa % sb) : a % b;
        return true;
    case QD_OP_FLOORDIV: {
        if (!is_signed) {
            *out = a / b;
            return true;
        }
        int64_t q = sa / sb;
        if (sa % sb != 0 && (sa < 0) != (sb < 0)) {
            q--;
        }
        *out = (uint64_t)q;
        return true;
    }
    case QD_OP_FLOORMOD: {
        if (!is_signed) {
            *out = a % b;
            return true;
        }
        int64_t r = sa % sb;
        if (r != 0 && (r < 0) != (sb < 0)) {
            r += sb;
        }
        *out = (uint64_t)r;
        return true;
    }
    case QD_OP_MIN:
        *out = (is_signed ? sa < sb : a < b) ? a : b;
        return true;
    case QD_OP_MAX:
        *out = (is_signed ? sa > sb : a > b) ? a : b;
        return true;
    case QD_OP_POW:
        if (is_signed && sb < 0) {
            return false; /* a fraction: not an integer result */
        }
        *out = int_pow(a, b);
        return true;
    case QD_OP_AND:
        *out = a & b;
        return true;
    case QD_OP_OR:
        *out = a | b;
        return true;
    case QD_OP_XOR:
        *out = a ^ b;
        return true;
    case QD_OP_SHL:
    case QD_OP_SHR:
    case QD_OP_LSHR: {
        if ((qd_type_is_signed(tb) && sb < 0) || b >= width) {
            return false;
        }
        uint64_t mask = width >= 64 ? UINT64_MAX : (UINT64_C(1) << width) - 1;
        if (op == QD_OP_SHL) {
            *out = a << b;
        } else if (op == QD_OP_SHR && is_signed) {
            *out = sa < 0 ? ~(~a >> b) : a >> b;
        } else {
            *out = (a & mask) >> b;
        }
        return true;
    }
    default:
        return false;
    }
}

static bool
fold_int_compare(QdOp op, const QdType *ty, uint64_t a, uint64_t b)
{
    bool is_signed = qd_type_is_signed(ty);
    bool lt = is_signed ? (int64_t)a < (int64_t)b : a < b;
    bool gt = is_signed ? (int64_t)a > (int64_t)b : a > b;
    switch (op) {
    case QD_OP_EQ:
        return a == b;
    case QD_OP_NE:
        return a != b;
    case QD_OP_LT:
        return lt;
    case QD_OP_LE:
        return !gt;
    case QD_OP_GT:
        return gt;
    default: /* GE */
        return !lt;
    }
}

static bool
fold_int1(QdOp op, const QdType *ty, uint64_t a, uint64_t *out)
{
    uint32_t width = qd_type_bits(ty);
    uint64_t bits = width >= 64 ? a : a & ((UINT64_C(1) << width) - 1);
    switch (op) {
    case QD_OP_NEG:
        *out = 0 - a;
        return true;
    case QD_OP_ABS:
        *out = qd_type_is_signed(ty) && (int64_t)a < 0 ? 0 - a : a;
        return true;
    case QD_OP_NOT:
        *out = ~a;
        return true;
    case QD_OP_POPCNT:
        *out = (uint64_t)__builtin_popcountll(bits);
        return true;
    case QD_OP_CLZ:
        *out = bits ? (uint64_t)(__builtin_clzll(bits) - (64 - (int)width)) : width;
        return true;
    default:
        return false;
    }
}

/***** floats *****/

static bool
fold_float2(QdOp op, const QdType *ty, double a, double b, double *out)
{
    bool divides = op == QD_OP_DIV || op == QD_OP_REM || op == QD_OP_FLOORDIV ||
                   op == QD_OP_FLOORMOD;
    if (divides && b == 0) {
        return false;
    }
    switch (op) {
    case QD_OP_ADD:
        *out = a + b;
        return true;
    case QD_OP_SUB:
        *out = a - b;
        return true;
    case QD_OP_MUL:
        *out = a * b;
        return true;
    case QD_OP_DIV:
        *out = a / b;
        return true;
    case QD_OP_REM:
        *out = fmod(a, b);
        return true;
    case QD_OP_FLOORDIV:
        *out = floor(round_to(ty, a / b));
        return true;
    case QD_OP_FLOORMOD: {
        double q = floor(round_to(ty, a / b));
        *out = a - round_to(ty, q * b);
        return true;
    }
    case QD_OP_MIN:
        *out = fmin(a, b);
        return true;
    case QD_OP_MAX:
        *out = fmax(a, b);
        return true;
    case QD_OP_POW:
        *out = pow(a, b);
        return true;
    case QD_OP_ATAN2:
        *out = atan2(a, b);
        return true;
    default:
        return false;
    }
}

/* The libm function computing each one-operand float op (NEG and RSQRT are done inline). */
static double (*const float1_fn[QD_OP_COUNT_])(double) = {
    [QD_OP_ABS] = fabs,   [QD_OP_SQRT] = sqrt, [QD_OP_EXP] = exp,     [QD_OP_LOG] = log,
    [QD_OP_SIN] = sin,    [QD_OP_COS] = cos,   [QD_OP_TAN] = tan,     [QD_OP_TANH] = tanh,
    [QD_OP_ASIN] = asin,  [QD_OP_ACOS] = acos, [QD_OP_ATAN] = atan,   [QD_OP_FLOOR] = floor,
    [QD_OP_CEIL] = ceil,  [QD_OP_ROUND] = round,
};

static bool
fold_float1(QdOp op, double a, double *out)
{
    if (op == QD_OP_NEG) {
        *out = -a;
    } else if (op == QD_OP_RSQRT) {
        *out = 1.0 / sqrt(a);
    } else if (float1_fn[op]) {
        *out = float1_fn[op](a);
    } else {
        return false;
    }
    return true;
}

static bool
fold_float_compare(QdOp op, double a, double b)
{
    switch (op) {
    case QD_OP_EQ:
        return a == b;
    case QD_OP_NE:
        return a != b;
    case QD_OP_LT:
        return a < b;
    case QD_OP_LE:
        return a <= b;
    case QD_OP_GT:
        return a > b;
    default: /* GE */
        return a >= b;
    }
}

/***** conversions *****/

/* `cast` (ops.def): false when the result is undefined (a float out of the integer's range). */
static bool
fold_cast(const QdType *from, const QdType *to, Scalar a, Scalar *out)
{
    bool from_signed = qd_type_is_signed(from);
    if (qd_type_is_int(from) && qd_type_is_int(to)) {
        out->u = a.u; /* canonical for `from`: extended by its signedness; wrapped later */
    } else if (qd_type_is_int(from) && to->kind == QD_TY_F32) {
        out->f = from_signed ? (double)(float)(int64_t)a.u : (double)(float)a.u;
    } else if (qd_type_is_int(from)) {
        out->f = from_signed ? (double)(int64_t)a.u : (double)a.u;
    } else if (qd_type_is_int(to)) {
        double t = trunc(a.f);
        uint32_t width = qd_type_bits(to);
        if (!isfinite(t)) {
            return false;
        }
        if (qd_type_is_signed(to)) {
            if (t < -ldexp(1.0, (int)width - 1) || t >= ldexp(1.0, (int)width - 1)) {
                return false;
            }
            out->u = (uint64_t)(int64_t)t;
        } else {
            if (t < 0 || t >= ldexp(1.0, (int)width)) {
                return false;
            }
            out->u = (uint64_t)t;
        }
    } else {
        out->f = round_to(to, a.f);
    }
    return true;
}

/* `bitcast` between types of one width. A NaN result is not folded: its payload would not
 * survive printing (`nan`). */
static bool
fold_bitcast(const QdType *from, const QdType *to, Scalar a, Scalar *out)
{
    uint64_t bits = a.u;
    if (from->kind == QD_TY_F32) {
        float x = (float)a.f;
        uint32_t b32;
        memcpy(&b32, &x, sizeof(b32));
        bits = b32;
    } else if (from->kind == QD_TY_F64) {
        memcpy(&bits, &a.f, sizeof(bits));
    }
    if (to->kind == QD_TY_F32) {
        uint32_t b32 = (uint32_t)bits;
        float x;
        memcpy(&x, &b32, sizeof(x));
        out->f = x;
    } else if (to->kind == QD_TY_F64) {
        memcpy(&out->f, &bits, sizeof(bits));
    } else {
        out->u = bits;
        return true;
    }
    return !isnan(out->f);
}

/***** the walk *****/

/* Whether the operand types are those the opcode's rule expects, so that unverified input can
 * never be folded as something it is not. */
static bool
operands_fit(const QdInst *inst, const QdInst *const *c)
{
    QdSig sig = qd_op_info[inst->op].sig;
    if (sig == SIG_CAST || sig == SIG_BITCAST || sig == SIG_BITCOUNT) {
        return sig != SIG_BITCOUNT || qd_type_is_int(c[0]->type);
    }
    if (sig == SIG_CMP) {
        return c[0]->type == c[1]->type;
    }
    if (c[0]->type != inst->type) {
        return false;
    }
    if (inst->nargs == 1) {
        return true;
    }
    return sig == SIG_SHIFT ? qd_type_is_int(c[1]->type) : c[1]->type == inst->type;
}

/* Evaluates inst when all its operands are literal constants; false when it does not fold. */
static bool
evaluate(const Folder *fo, const QdInst *inst, Scalar *out)
{
    QdOp op = inst->op;
    const QdType *rt = inst->type;
    if (!qd_op_has(op, QD_FOLDS) || op == QD_OP_SELECT || inst->nargs < 1 || inst->nargs > 2 ||
        inst->result == QD_NO_VALUE || !foldable_type(rt)) {
        return false;
    }
    const QdInst *c[2] = {NULL, NULL};
    for (uint32_t i = 0; i < inst->nargs; i++) {
        c[i] = const_def(fo, inst->args[i]);
        if (!c[i] || !foldable_type(c[i]->type)) {
            return false;
        }
    }
    if (!operands_fit(inst, c)) {
        return false;
    }
    const QdType *ta = c[0]->type;
    Scalar a = const_value(c[0]);
    Scalar b = inst->nargs == 2 ? const_value(c[1]) : a;
    switch (qd_op_info[op].sig) {
    case SIG_CMP:
        out->u = qd_type_is_float(ta) ? fold_float_compare(op, a.f, b.f)
                                      : fold_int_compare(op, ta, a.u, b.u);
        return true;
    case SIG_CAST:
        return fold_cast(ta, rt, a, out);
    case SIG_BITCAST:
        return qd_type_bits(ta) == qd_type_bits(rt) && fold_bitcast(ta, rt, a, out);
    default:
        break;
    }
    if (qd_type_is_float(rt)) {
        bool ok = inst->nargs == 2 ? fold_float2(op, rt, a.f, b.f, &out->f)
                                   : fold_float1(op, a.f, &out->f);
        out->f = round_to(rt, out->f);
        return ok;
    }
    if (inst->nargs == 2) {
        return fold_int2(op, rt, c[1]->type, a.u, b.u, &out->u);
    }
    return fold_int1(op, ta, a.u, &out->u);
}

/* Turns inst into `const v`, keeping its result id and type. */
static void
make_const(QdInst *inst, Scalar v)
{
    inst->op = QD_OP_CONST;
    inst->nargs = 0;
    inst->args = NULL;
    memset(&inst->imm, 0, sizeof(inst->imm));
    if (qd_type_is_float(inst->type)) {
        inst->imm.cst.f = v.f;
    } else {
        inst->imm.cst.u = qd_util_wrap_int(inst->type, v.u);
    }
}

/* Integer literal test for identities. */
static bool
is_int_const(const Folder *fo, uint32_t id, uint64_t value)
{
    const QdInst *c = const_def(fo, id);
    return c && qd_type_is_int(c->type) && const_value(c).u == value;
}

/* The operand inst always equals (select on a constant, x + 0, ...), or QD_NO_VALUE. */
static uint32_t
simplify(const Folder *fo, const QdInst *inst)
{
    const uint32_t *a = inst->args;
    if (inst->op == QD_OP_SELECT && inst->nargs == 3 && inst->result != QD_NO_VALUE) {
        const QdInst *c = const_def(fo, a[0]);
        if (a[1] == a[2]) {
            return a[1];
        }
        if (c && qd_type_is_int(c->type)) {
            return const_value(c).u != 0 ? a[1] : a[2];
        }
        return QD_NO_VALUE;
    }
    if (inst->nargs != 2 || inst->result == QD_NO_VALUE || !qd_type_is_int(inst->type)) {
        return QD_NO_VALUE;
    }
    switch (inst->op) {
    case QD_OP_ADD:
        return is_int_const(fo, a[1], 0) ? a[0] : is_int_const(fo, a[0], 0) ? a[1] : QD_NO_VALUE;
    case QD_OP_SUB:
        return is_int_const(fo, a[1], 0) ? a[0] : QD_NO_VALUE;
    case QD_OP_MUL:
        return is_int_const(fo, a[1], 1) ? a[0] : is_int_const(fo, a[0], 1) ? a[1] : QD_NO_VALUE;
    default:
        return QD_NO_VALUE;
    }
}

/* Replaces `if` by its taken region; returns the instruction the walk goes on with. */
static QdInst *
splice_if(Folder *fo, QdInst *if_inst, bool taken)
{
    QdRegion *r = if_inst->parent;
    QdRegion *from = if_inst->regions[taken ? 0 : 1];
    QdInst *resume = from->first ? from->first : if_inst->next;
    if (from->first && if_inst->comment) {
        QdInst *first = from->first;
        first->comment = first->comment ? qd_arena_printf(&fo->f->module->arena, "%s\n%s",
                                                          if_inst->comment, first->comment)
                                        : if_inst->comment;
    }
    while (from->first) {
        QdInst *inst = from->first;
        qd_inst_remove(inst);
        qd_region_insert_before(r, if_inst, inst);
    }
    /* After a spliced terminator, the rest of the region can never run. */
    if (if_inst->prev && qd_op_has(if_inst->prev->op, QD_TERM)) {
        while (if_inst->next) {
            qd_inst_remove(if_inst->next);
        }
    }
    qd_inst_remove(if_inst);
    return resume;
}

static void
fold_region(Folder *fo, QdRegion *r)
{
    QdInst *inst = r->first;
    while (inst) {
        for (uint32_t i = 0; i < inst->nargs; i++) {
            uint32_t id = inst->args[i];
            if (id < fo->f->nvalues && fo->repl[id] != QD_NO_VALUE) {
                inst->args[i] = fo->repl[id];
            }
        }
        bool is_if = inst->op == QD_OP_IF && inst->nargs == 1;
        const QdInst *cond = is_if ? const_def(fo, inst->args[0]) : NULL;
        if (cond && qd_type_is_int(cond->type)) {
            inst = splice_if(fo, inst, const_value(cond).u != 0);
            continue;
        }
        for (int i = 0; i < qd_op_info[inst->op].nregions; i++) {
            fold_region(fo, inst->regions[i]);
        }
        QdInst *next = inst->next;
        uint32_t same = simplify(fo, inst);
        Scalar v = {0}; /* set by evaluate() when it returns true */
        if (same != QD_NO_VALUE) {
            fo->repl[inst->result] = same;
            qd_inst_remove(inst);
        } else if (evaluate(fo, inst, &v)) {
            make_const(inst, v);
        }
        inst = next;
    }
}

int
qd_pass_constfold(QdPassCtx *pc, QdFunc *f)
{
    QdArenaMark mark = qd_arena_mark(&pc->scratch);
    Folder fo = {pc, f, QD_NEW_ARRAY(&pc->scratch, uint32_t, f->nvalues ? f->nvalues : 1)};
    if (fo.repl) {
        for (uint32_t id = 0; id < f->nvalues; id++) {
            fo.repl[id] = QD_NO_VALUE;
        }
        fold_region(&fo, f->body);
    }
    int rc = qd_util_nomem(pc, f->module);
    qd_arena_reset(&pc->scratch, mark);
    return rc;
}
