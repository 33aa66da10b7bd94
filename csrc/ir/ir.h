/* ir/ir.h -- the QIR: types, values, instructions, structured regions, functions, modules.
 *
 * The IR every later stage works on. Shape:
 *   - a QdModule holds field declarations and functions (kernels, funcs, templates), all
 *     allocated in the module's arena;
 *   - a function has parameters and a body region; a region is a doubly linked list of
 *     instructions; control flow is structured: `if`, `for`, `parallel_for`, `loop`, `unroll`
 *     and `task` own nested regions, `break` / `continue` / `ret` end a region;
 *   - values are 32-bit ids into the function's value table (params, instruction results and
 *     loop induction variables); an id is defined exactly once (SSA); mutable state lives in
 *     `alloca` slots;
 *   - a kernel's body is a list of `task` instructions (plus `tmp_alloc` slots shared by them).
 * Textual form: ir_print.c and ir_parse.c, documented in docs/ir.md; they round-trip exactly.
 */
#ifndef QD_IR_H
#define QD_IR_H

#include "../base/base.h"

/***** types.c *****/

enum {
    TY_INT = 1,    /* integer (u1 included) */
    TY_SIGNED = 2, /* two's complement signed integer */
    TY_FLOAT = 4,  /* IEEE-style floating point */
};

typedef enum QdTypeKind {
#define QD_SCALAR(name, text, bits, flags) QD_TY_##name,
#include "types.def"
#undef QD_SCALAR
    QD_TY_PTR,     /* pointer: elem, space */
    QD_TY_ARRAY,   /* fixed array [count x elem]; only behind local/shared pointers */
    QD_TY_NDARRAY, /* ndarray argument: elem (scalar), ndim; data pointer + shape at run time */
    QD_TY_PARAM,   /* a template type parameter, by name; gone after instantiation */
    QD_TY_COUNT_   /* number of kinds */
} QdTypeKind;

/* Address spaces of pointers. */
typedef enum QdSpace {
    QD_SPACE_GLOBAL, /* device memory: fields, ndarrays, kernel temporaries */
    QD_SPACE_SHARED, /* per-block shared memory */
    QD_SPACE_LOCAL,  /* per-thread private memory (alloca) */
} QdSpace;

typedef struct QdCexpr QdCexpr;

/* A type. Scalars are static singletons (qd_type_scalar); composite types are created in a
 * module's arena and interned there when they contain no template parameters, so pointer
 * equality is type equality for concrete types. qd_type_equal works on every type. */
typedef struct QdType {
    QdTypeKind kind;       /* what it is */
    struct QdType *elem;   /* PTR: pointee; ARRAY: element; NDARRAY: element scalar */
    QdSpace space;         /* PTR only */
    uint32_t count;        /* ARRAY: number of elements (when count_expr is NULL) */
    QdCexpr *count_expr;   /* ARRAY in templates: count as an expression of parameters */
    uint32_t ndim;         /* NDARRAY: number of dimensions */
    const char *name;      /* PARAM: the parameter's name (interned) */
} QdType;

const QdType *qd_type_scalar(QdTypeKind kind);
#define qd_type_void() qd_type_scalar(QD_TY_VOID)
bool qd_type_is_scalar(const QdType *ty);
bool qd_type_is_int(const QdType *ty);
bool qd_type_is_signed(const QdType *ty);
bool qd_type_is_float(const QdType *ty);
/* Width in bits of a scalar type (1 for u1, 0 for void and non-scalars). */
uint32_t qd_type_bits(const QdType *ty);
/* Mnemonic of a scalar kind ("i32"). */
const char *qd_type_scalar_name(QdTypeKind kind);
/* Scalar kind from a mnemonic, or QD_TY_COUNT_ when the text is no scalar type. */
QdTypeKind qd_type_scalar_from_name(const char *s, size_t len);
bool qd_type_equal(const QdType *a, const QdType *b);
/* Whether the type mentions a template parameter (directly or in an array count). */
bool qd_type_is_generic(const QdType *ty);

/***** cexpr.c *****/

/* Compile-time integer expressions of templates: array counts, unroll bounds, constants. */
/* Operator codes of compile-time expressions beyond the one-character ones (+ - * / %). */
#define QD_CEXPR_SHL 'L' /* a << b */
#define QD_CEXPR_EQ 'E'  /* a == b: 1 or 0 */

typedef enum QdCexprKind {
    QD_CEXPR_INT,   /* literal: value */
    QD_CEXPR_PARAM, /* template integer parameter: name */
    QD_CEXPR_VAR,   /* unroll variable: value id */
    QD_CEXPR_BINOP, /* lhs op rhs, op one of + - * / % (C semantics on int64), QD_CEXPR_SHL
                     * (<<) or QD_CEXPR_EQ (==, 1 or 0) */
} QdCexprKind;

struct QdCexpr {
    QdCexprKind kind;   /* which of the fields below are meaningful */
    int64_t value;      /* INT: the literal */
    const char *name;   /* PARAM: interned parameter name */
    uint32_t var;       /* VAR: value id of the unroll variable */
    char op;            /* BINOP: '+', '-', '*', '/' or '%' */
    QdCexpr *lhs, *rhs; /* BINOP: operands */
};

/* Environment for evaluating cexprs: parameter and unroll-variable bindings. */
typedef struct QdCexprEnv {
    const char **names;   /* integer template parameter names (interned) */
    const int64_t *values; /* their values */
    uint32_t count;       /* number of parameters */
    const uint32_t *vars; /* unroll variable ids in scope */
    const int64_t *var_values; /* their current values */
    uint32_t nvars;       /* number of unroll variables in scope */
} QdCexprEnv;

/* Evaluates e; -1 with a diag when a name is unbound or a division by zero happens. */
int qd_cexpr_eval(QdCtx *ctx, QdLoc loc, const QdCexpr *e, const QdCexprEnv *env, int64_t *out);
bool qd_cexpr_equal(const QdCexpr *a, const QdCexpr *b);
/* Constructors; the nodes live in the module's arena. NULL when out of memory. */
struct QdModule;
QdCexpr *qd_cexpr_int(struct QdModule *m, int64_t v);
QdCexpr *qd_cexpr_param(struct QdModule *m, const char *name);
QdCexpr *qd_cexpr_var(struct QdModule *m, uint32_t var);
QdCexpr *qd_cexpr_binop(struct QdModule *m, char op, QdCexpr *lhs, QdCexpr *rhs);
/* Binding strength of binary operator op, 1 (==, the loosest) to QD_CEXPR_TIGHTEST (* / %);
 * 0 when op is no operator of compile-time expressions. All levels are left-associative. */
#define QD_CEXPR_TIGHTEST 4
int qd_cexpr_prec(char op);

/***** ops.def *****/

typedef enum QdOp {
#define QD_OP(name, text, nargs, sig, imm, nregions, flags) QD_OP_##name,
#include "ops.def"
#undef QD_OP
    QD_OP_COUNT_ /* number of opcodes */
} QdOp;

/* Operand and result typing rules (the sig column of ops.def); ir_verify.c checks them. */
typedef enum QdSig {
    SIG_NONE,       /* no operands, no result */
    SIG_CONST,      /* no operands; scalar result given by the instruction */
    SIG_ARITH,      /* (T, T) -> T, T numeric */
    SIG_INT2,       /* (T, T) -> T, T integer */
    SIG_FLOAT2,     /* (T, T) -> T, T float */
    SIG_SHIFT,      /* (T, U) -> T, T and U integers */
    SIG_UNARY,      /* T -> T, T numeric */
    SIG_INT1,       /* T -> T, T integer */
    SIG_FLOAT1,     /* T -> T, T float */
    SIG_BITCOUNT,   /* T -> i32, T integer */
    SIG_CMP,        /* (T, T) -> u1, T scalar */
    SIG_SELECT,     /* (C, T, T) -> T, C integer */
    SIG_CAST,       /* scalar -> scalar */
    SIG_BITCAST,    /* scalar -> scalar of the same width */
    SIG_ALLOC,      /* () -> ptr in the op's address space */
    SIG_FIELD_PTR,  /* (i32|i64 ...) -> ptr<elem of the field, global>, one index per field dim */
    SIG_FIELD_ARRAY, /* () -> ndarray<elem of the field, field dims> */
    SIG_ELEM_PTR,   /* (ndarray<T, n>, i32|i64 x n) -> ptr<T, global> */
    SIG_ARRAY_PTR,  /* (ptr<[N x T], s>, integer) -> ptr<T, s> */
    SIG_SHAPE,      /* ndarray -> i32; immediate axis < ndim */
    SIG_LOAD,       /* ptr<T> -> T, T scalar */
    SIG_STORE,      /* (ptr<T>, T) -> nothing */
    SIG_ATOMIC,     /* (ptr<T, global|shared>, T) -> T */
    SIG_ATOMIC_INT, /* as SIG_ATOMIC with T integer */
    SIG_CAS,        /* (ptr<T, global|shared>, T, T) -> T, T integer */
    SIG_PARTIAL,    /* ptr<T, global> -> ptr<T, local>, T scalar */
    SIG_PARTIAL_INT, /* as SIG_PARTIAL with T integer */
    SIG_IF,         /* integer condition; two regions */
    SIG_FOR,        /* (T, T), T integer; defines the induction variable of type T */
    SIG_CALL,       /* arguments match the callee's parameters; result its return type */
    SIG_RET,        /* zero operands, or one of the function's return type */
    SIG_KERNEL_RET, /* scalar operand; immediate result index */
    SIG_I32,        /* () -> i32 */
    SIG_I64,        /* () -> i64 */
    SIG_PTR_TO_INT, /* ptr<T> -> u64 */
    SIG_SYNC_PRED,  /* integer -> i32 */
    SIG_SYNC_MASK,  /* u32 lane mask -> nothing */
    SIG_SHUFFLE,    /* (T, i32) -> T, T scalar */
    SIG_BALLOT,     /* integer -> u32 */
    SIG_MATCH,      /* integer of 32 or 64 bits -> u32 */
    SIG_VOTE,       /* integer -> u1 */
    SIG_PRINT,      /* scalars -> nothing; immediate format string */
    SIG_ASSERT,     /* integer -> nothing; immediate message */
    SIG_NN_MATVEC,  /* (ptr<[M x T], local>, ptr<[K x T], local>, ndarray<W, 1|2>[, ndarray<B, 1>])
                     * -> nothing; T, W, B float; M and K from the immediate */
    SIG_MMA,        /* (ptr<[4 x f32], local>, ptr<[8 x f16], local>, ptr<[4 x f16], local> |
                     * ptr<f16, global>) -> nothing */
} QdSig;

/* What QdInst.imm holds (the imm column of ops.def). */
typedef enum QdImmKind {
    IMM_NONE,   /* nothing */
    IMM_CONST,  /* imm.cst */
    IMM_INT,    /* imm.i: an axis or index */
    IMM_FIELD,  /* imm.field */
    IMM_CALLEE, /* imm.call */
    IMM_UNROLL, /* imm.unroll */
    IMM_TASK,   /* imm.task */
    IMM_STRING, /* imm.str */
    IMM_MATVEC, /* imm.matvec */
} QdImmKind;

enum {
    QD_PURE = 1 << 0,
    QD_COMMUTES = 1 << 1,
    QD_FOLDS = 1 << 2,
    QD_READS = 1 << 3,
    QD_WRITES = 1 << 4,
    QD_TERM = 1 << 5,
    QD_LOOP = 1 << 6,
    QD_SIMT = 1 << 7,
    QD_CONVERGENT = 1 << 8,
};

/* Static facts about an opcode, expanded from ops.def. */
typedef struct QdOpInfo {
    const char *text; /* mnemonic */
    int nargs;        /* operand count, -1 when variable */
    QdSig sig;        /* typing rule */
    QdImmKind imm;    /* immediate kind */
    int nregions;     /* nested regions */
    unsigned flags;   /* QD_PURE ... */
} QdOpInfo;

extern const QdOpInfo qd_op_info[QD_OP_COUNT_];
#define qd_op_has(op, flag) ((qd_op_info[(op)].flags & (flag)) != 0)
/* The plain opcode computing an atomic's new value from the old one (atomic_add -> add), or
 * QD_OP_COUNT_ when it has none (xchg, cas). */
QdOp qd_op_atomic_plain(QdOp op);
/* The atomic a partial_* op ends with (partial_add -> atomic_add), or QD_OP_COUNT_ for other ops. */
QdOp qd_op_partial_atomic(QdOp op);
/* The partial_* op aggregating an atomic (atomic_add -> partial_add), or QD_OP_COUNT_ when the
 * atomic has none. */
QdOp qd_op_atomic_partial(QdOp op);

/***** ir.c *****/

#define QD_NO_VALUE UINT32_MAX

typedef struct QdInst QdInst;
typedef struct QdRegion QdRegion;
typedef struct QdFunc QdFunc;
typedef struct QdModule QdModule;

/* The largest extent of one field axis the textual IR accepts (a field's element count is
 * limited by memory, not by the 32-bit index range: indices past 2^31 are i64). */
#define QD_FIELD_EXTENT_MAX ((uint64_t)1 << 48)

/* A module-level field declaration: `field @name : T [d0, d1]`. */

typedef struct QdField {
    const char *name;  /* interned, without '@' */
    const QdType *elem; /* scalar element type */
    uint32_t ndim;     /* number of dimensions (0 for a 0-d field) */
    int64_t *shape;    /* ndim extents */
    QdLoc loc;         /* where it was declared */
    const char *comment; /* leading comment lines, or NULL */
    uint32_t text_line; /* line in the .qir text it was parsed from, 0 if built */
} QdField;

/* A compile-time constant (IMM_CONST). */
typedef struct QdConst {
    union {
        int64_t i;  /* integer types: the value, sign-extended for signed types */
        uint64_t u; /* unsigned types: the value */
        double f;   /* float types */
    };
    QdCexpr *expr;  /* in templates: the value as an expression, else NULL */
} QdConst;

/* Callee of a call (IMM_CALLEE). */
/* What a template argument is (QdCallee.args_order). */
typedef enum QdTArgKind {
    QD_TARG_TYPE, /* a type: `f32`, `T` */
    QD_TARG_INT,  /* an integer expression: `16`, `N * 2` */
    QD_TARG_FUNC, /* a function: `@name` or a template's instance `@name<args>` */
} QdTArgKind;

typedef struct QdCallee {
    const char *name;          /* function name, interned, without '@' */
    const QdType **type_args;  /* template type arguments */
    uint32_t ntype_args;       /* ... their number */
    QdCexpr **int_args;        /* template integer arguments */
    uint32_t nint_args;        /* ... their number */
    struct QdCallee *func_args; /* template function arguments */
    uint32_t nfunc_args;       /* ... their number */
    /* Template arguments are written in the callee's parameter order; args_order[k] says what
     * argument k is (a QdTArgKind), so the printer can reproduce it. */
    uint8_t *args_order;       /* ntype_args + nint_args + nfunc_args entries */
} QdCallee;

/* What each QdTArgKind is, for messages: "a type", "an integer", "a function". */
extern const char *const qd_targ_kind_wanted[3];

/* The number of template arguments of a callee. */
#define qd_callee_ntargs(c) ((c)->ntype_args + (c)->nint_args + (c)->nfunc_args)

typedef enum QdTaskKind {
    QD_TASK_SERIAL,    /* runs once, on one thread */
    QD_TASK_RANGE_FOR, /* prologue + one parallel_for across the grid */
} QdTaskKind;

/* Offloaded task attributes (IMM_TASK). */
typedef struct QdTask {
    QdTaskKind kind;     /* serial or range_for */
    const char *name;    /* name for kernels and profiles (interned), or NULL */
    uint32_t block_dim;  /* threads per block; 0 = the backend's default */
    uint32_t min_blocks; /* GPU: blocks an SM must be able to hold at once (registers are
                          * budgeted for it, as CUDA's __launch_bounds__); 0 = no request */
} QdTask;

/* Bounds of an unroll (IMM_UNROLL): var runs over [lo, hi). */
typedef struct QdUnroll {
    QdCexpr *lo; /* first value */
    QdCexpr *hi; /* one past the last value */
} QdUnroll;

/* Storage orders of a matrix that nn_matvec reads (QdMatvec.layout); the text is the name. */
typedef enum QdMatLayout {
    QD_MAT_ROW_MAJOR, /* "row_major": A(r, c) at offset + r * stride + c */
    QD_MAT_COL_MAJOR, /* "col_major": A(r, c) at offset + c * stride + r */
    QD_MAT_MMA,       /* "mma_fragments": 16 x 16 tiles in the order of mma.m16n8k16's B
                       * fragments (for y = A x): tile (r / 16, c / 16) at offset + (r / 16 *
                       * stride / 16 + c / 16) * 256, in it lane (r % 8) * 4 + c % 8 / 2's 8
                       * elements, element c % 2 + 2 (c % 16 / 8) + 4 (r % 16 / 8) of them;
                       * stride = the columns padded to a multiple of 16 */
    QD_MAT_LAYOUT_COUNT_
} QdMatLayout;

/* Names of the layouts in the textual IR, indexed by QdMatLayout. */
extern const char *const qd_mat_layout_names[QD_MAT_LAYOUT_COUNT_];

/* The compile-time description of a matrix-vector product (IMM_MATVEC). */
typedef struct QdMatvec {
    uint32_t rows, cols;  /* shape of the stored matrix A */
    QdMatLayout layout;   /* storage order of A */
    bool transpose;       /* y = A^T x instead of A x */
    bool has_bias;        /* a fourth operand: the bias ndarray */
    int64_t offset;       /* element index of A(0, 0) in the weight ndarray (1-D) */
    int64_t stride;       /* elements between rows (row-major) or columns (column-major) */
    int64_t bias_offset;  /* element index of b[0] in the bias ndarray */
    bool tensor_cores;    /* f16 x and A on a target with mma.sync m16n8k16: nn_lower gives the
                           * product a tensor-core path for warps that reach it together */
} QdMatvec;

/* Lengths of the input and the output vector of a product. */
#define qd_matvec_in_len(mv) ((mv)->transpose ? (mv)->rows : (mv)->cols)
#define qd_matvec_out_len(mv) ((mv)->transpose ? (mv)->cols : (mv)->rows)

/* An instruction. Fixed header, operand array, immediate, nested regions. */
struct QdInst {
    QdOp op;             /* opcode */
    uint32_t result;     /* value defined: the result, or the induction variable of
                            for / parallel_for / unroll; QD_NO_VALUE when none */
    const QdType *type;  /* type of `result` (void when none) */
    uint32_t nargs;      /* number of operands */
    uint32_t *args;      /* operand value ids */
    union {
        QdConst cst;     /* IMM_CONST */
        int64_t i;       /* IMM_INT */
        QdField *field;  /* IMM_FIELD */
        QdCallee call;   /* IMM_CALLEE */
        QdUnroll unroll; /* IMM_UNROLL */
        QdTask task;     /* IMM_TASK */
        const char *str; /* IMM_STRING: the decoded string, arena-owned */
        QdMatvec matvec; /* IMM_MATVEC */
    } imm;
    QdRegion *regions[2]; /* nested regions (IF: then, else; loops, unroll, task: body) */
    QdLoc loc;           /* user source location (Python file or .qir), may be unknown */
    uint32_t text_line;  /* line of the .qir text it was parsed from, 0 if built */
    const char *comment; /* leading comment lines ("# ..." each, '\n'-joined) or NULL */
    const char *trailing; /* comment at the end of the instruction's line, or NULL */
    QdInst *prev, *next; /* neighbours in the region */
    QdRegion *parent;    /* region holding this instruction */
};

/* A region: an ordered list of instructions, owned by an instruction or a function. */
struct QdRegion {
    QdInst *first, *last; /* instruction list */
    QdInst *owner;        /* instruction that owns it, NULL for a function body */
    QdFunc *func;         /* function it belongs to */
    const char *end_comment; /* comment lines before the closing brace, or NULL */
};

/* Per-value facts, indexed by value id. */
typedef struct QdValue {
    const QdType *type; /* type of the value */
    const char *name;   /* textual name without '%' (interned), NULL = print as a number */
    QdInst *def;        /* defining instruction; NULL for parameters */
    int32_t param;      /* parameter index, or -1 */
} QdValue;

typedef enum QdFuncKind {
    QD_FUNC_KERNEL,   /* entry point: body is a list of tasks */
    QD_FUNC_FUNC,     /* callable function */
    QD_FUNC_TEMPLATE, /* function with type / integer parameters; instantiated before use */
} QdFuncKind;

typedef enum QdTParamKind {
    QD_TPARAM_TYPE,     /* any scalar type */
    QD_TPARAM_FLOAT,    /* a floating-point type */
    QD_TPARAM_INTEGRAL, /* an integer type */
    QD_TPARAM_INT,      /* a compile-time integer value */
    QD_TPARAM_FUNC,     /* a function of the module (`call @F(...)` in the body calls it) */
    QD_TPARAM_COUNT_
} QdTParamKind;

/* The kinds' names in the text: "type", "float", "integral", "int", "func". */
extern const char *const qd_tparam_kind_names[QD_TPARAM_COUNT_];
/* Whether a parameter of kind k stands for a type. */
#define qd_tparam_is_type(k) \
    ((k) == QD_TPARAM_TYPE || (k) == QD_TPARAM_FLOAT || (k) == QD_TPARAM_INTEGRAL)
/* What a template argument for a parameter of kind k is. */
#define qd_tparam_arg_kind(k) \
    ((k) == QD_TPARAM_INT ? QD_TARG_INT : (k) == QD_TPARAM_FUNC ? QD_TARG_FUNC : QD_TARG_TYPE)

/* A template parameter: `T: float`, `N: int`. */
typedef struct QdTParam {
    const char *name;  /* interned */
    QdTParamKind kind; /* what may be bound to it */
} QdTParam;

struct QdFunc {
    QdFuncKind kind;     /* kernel, func or template */
    const char *name;    /* interned, without '@' */
    QdModule *module;    /* owner */
    QdTParam *tparams;   /* template parameters (templates only) */
    uint32_t ntparams;   /* ... their number */
    uint32_t *params;    /* parameter value ids */
    uint32_t nparams;    /* ... their number */
    const QdType *ret;   /* result type (void when none; kernels: void) */
    bool top_level;      /* a func or template written `top_level`: its body is a sequence of
                            tasks like a kernel's, and it is called only where a kernel's tasks
                            stand, where `inline` puts its tasks */
    QdRegion *body;      /* the body */
    QdValue *values;     /* value table, indexed by id */
    uint32_t nvalues;    /* number of values */
    uint32_t values_cap; /* allocated entries */
    QdLoc loc;           /* where it was declared */
    const char *comment; /* leading comment lines, or NULL */
    uint32_t text_line;  /* line of the header in the .qir text, 0 if built */
};

struct QdModule {
    QdArena arena;       /* everything of the module lives here */
    QdStrtab strtab;     /* interned names */
    QdVec(QdField *) fields;   /* field declarations, in order */
    QdVec(QdFunc *) funcs;     /* functions, in order */
    QdVec(QdType *) types;     /* interned composite types */
    const char *end_comment;   /* comment lines after the last declaration, or NULL */
};

/* Creates an empty module, or NULL when out of memory. */
QdModule *qd_module_new(void);
void qd_module_free(QdModule *m);
const char *qd_intern(QdModule *m, const char *s);

/* Interned concrete composite types (generic ones are created fresh). NULL when out of memory. */
const QdType *qd_type_ptr(QdModule *m, const QdType *elem, QdSpace space);
const QdType *qd_type_array(QdModule *m, const QdType *elem, uint32_t count);
const QdType *qd_type_array_expr(QdModule *m, const QdType *elem, QdCexpr *count);
const QdType *qd_type_ndarray(QdModule *m, const QdType *elem, uint32_t ndim);
const QdType *qd_type_param(QdModule *m, const char *name);

QdField *qd_field_new(QdModule *m, const char *name, const QdType *elem, uint32_t ndim,
                      const int64_t *shape);
/* Whether the field has 2^31 elements or more: its linear index needs 64 bits (fewer elements
 * are indexed in 32 bits, which keeps GPU index registers narrow). */
bool qd_field_is_wide(const QdField *field);
QdField *qd_module_find_field(QdModule *m, const char *name);
/* A new function appended to the module, with an empty body. */
QdFunc *qd_func_new(QdModule *m, QdFuncKind kind, const char *name);
QdFunc *qd_module_find_func(QdModule *m, const char *name);

/* A new value of the given type; returns its id, or QD_NO_VALUE when out of memory. */
uint32_t qd_value_new(QdFunc *f, const QdType *type, const char *name);
uint32_t qd_func_add_param(QdFunc *f, const QdType *type, const char *name);
#define qd_value_type(f, id) ((f)->values[(id)].type)

QdRegion *qd_region_new(QdFunc *f, QdInst *owner);
/* A detached instruction with room for nargs operands and the op's regions (empty). */
QdInst *qd_inst_new(QdFunc *f, QdOp op, uint32_t nargs);
/* Gives the instruction a fresh result value of the given type. */
uint32_t qd_inst_set_result(QdFunc *f, QdInst *inst, const QdType *type, const char *name);
void qd_region_append(QdRegion *r, QdInst *inst);
void qd_region_insert_before(QdRegion *r, QdInst *before, QdInst *inst);
void qd_inst_remove(QdInst *inst);
bool qd_region_is_empty(const QdRegion *r);

/* Walks every instruction of a region tree in program order (pre-order). The callback returns
 * 0 to go on, -1 to stop (the walk then returns -1). */
/* Whether region r (and the regions nested in it) holds an instruction whose op has any of the
 * op flags `flags` (QD_LOOP, QD_SIMT | QD_CONVERGENT, ...). */
bool qd_region_has_op(const QdRegion *r, unsigned flags);
typedef int (*QdInstVisitor)(QdInst *inst, void *data);
int qd_region_walk(QdRegion *r, QdInstVisitor fn, void *data);

/***** ir_print.c *****/

/* Prints the module in the textual form; returns a heap string (free()) or NULL on OOM. */
char *qd_module_print(const QdModule *m);
/* Prints one function. */
char *qd_func_print(const QdFunc *f);
/* Appends the text of a type to sb. */
void qd_type_print(QdSbuf *sb, const QdType *ty);

/***** ir_parse.c *****/

/* Parses textual IR. `filename` names the text in error messages. Returns a new module, or NULL
 * with ctx->diag describing the first error at its line and column. Never crashes on bad input. */
QdModule *qd_module_parse(QdCtx *ctx, const char *text, size_t len, const char *filename);
/* Parses the declarations of the text into an existing module (a library of templates added to
 * a module being built). 0, or -1 with a diag; on failure m may hold part of the text. */
int qd_module_parse_into(QdCtx *ctx, QdModule *m, const char *text, size_t len,
                         const char *filename);

/***** ir_verify.c *****/

typedef enum QdVerifyFlags {
    QD_VERIFY_DEFAULT = 0,
    /* Codegen-ready: no templates, no unroll, no calls to templates, no generic types. */
    QD_VERIFY_CONCRETE = 1,
} QdVerifyFlags;

/* Checks the module's invariants; -1 with a diag naming the offending instruction's line. */
int qd_module_verify(QdCtx *ctx, QdModule *m, unsigned flags);

#endif /* QD_IR_H */
