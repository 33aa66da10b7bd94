/* frontend/lower.h -- internal interface of the lowering files (lower_*.c).
 *
 * Lowering walks the kernel AST once, evaluating compile-time parts as it goes and emitting QIR
 * for the rest. Every expression evaluates to an Expr: either a compile-time value (a Python int,
 * float, bool, string or object handle; a field; a builtin; a tuple of Exprs) or a runtime one (a
 * typed QIR value, or an lvalue: a pointer to a scalar slot, field or ndarray element). Runtime
 * variables live in slots: `alloca` inside tasks, `tmp_alloc` for kernel-scope variables, which
 * every task of the kernel shares. Statements at the top level of the kernel (also inside
 * `if qd.static(...)`, static loops and inlined funcs) are split into tasks: each top-level `for`
 * becomes a `range_for` task, runs of other statements become `serial` tasks.
 */
#ifndef QD_FRONTEND_LOWER_H
#define QD_FRONTEND_LOWER_H

#include "frontend.h"

typedef enum ExprKind {
    EX_VOID,     /* no value (a call used as a statement) */
    EX_INT,      /* compile-time Python int: ival */
    EX_FLOAT,    /* compile-time Python float: fval */
    EX_BOOL,     /* compile-time Python bool: ival */
    EX_NONE,     /* Python None */
    EX_STR,      /* compile-time string: str */
    EX_PYOBJ,    /* any other compile-time Python value: h (see hv for what it is) */
    EX_TUPLE,    /* compile-time tuple or list of Exprs: items, nitems */
    EX_VALUE,    /* runtime scalar: id (value), ty */
    EX_LVALUE,   /* runtime scalar in memory: id (pointer value), ty (scalar), space */
    EX_FIELD,    /* a field: field */
    EX_NDARRAY,  /* an ndarray parameter: id (param value), ty (element), ndim */
    EX_SHAPE,    /* `arr.shape` of an ndarray parameter: id, ndim */
    EX_BUILTIN,  /* a kernel-scope builtin: str (name) */
    EX_FUNC,     /* a @qd.func: h; a struct method also has its bound `self` (an EX_STRUCT,
                    by reference) in items[0], nitems = 1 */
    EX_ITER,     /* an iterable for `for`: iter (range / ndrange / grouped descriptor) */
    EX_DICT,     /* compile-time dict: keys[i] (compile-time) -> items[i], nitems entries */
    EX_MATRIX,   /* qd.Vector / qd.Matrix: items[r * cols + c] row-major, nitems = rows * cols;
                    each item a scalar (VALUE, LVALUE, or compile-time INT/FLOAT/BOOL); ty = element
                    type; is_vector for 1-D (cols == 1) */
    EX_STRUCT,   /* a struct value (qd.types.struct / @qd.dataclass): keys[i] (STR member names) ->
                    items[i] (any Expr), nitems members; h = the struct type */
    EX_SHARED,   /* qd.simt.block.SharedArray: id (pointer to the flat array in shared memory),
                    ty (scalar element), items[i] (EX_INT extents), nitems (dimensions); rows,
                    cols, is_vector when each element is a vector/matrix (rows = 0: scalar) */
    EX_TILE,     /* a register tile (qd.simt.Tile16x16), a slice or column of an array for one,
                    or qd.outer(u, v): tile (see lower_tile.c); ty = element type */
} ExprKind;

typedef struct Expr Expr;
typedef struct IterSpec IterSpec;
typedef struct TileData TileData;

struct Expr {
    ExprKind kind;       /* what it is; the fields below are valid per kind (see ExprKind) */
    uint32_t id;         /* VALUE: value; LVALUE: pointer; NDARRAY, SHAPE: parameter */
    const QdType *ty;    /* VALUE, LVALUE, NDARRAY: scalar type */
    QdSpace space;       /* LVALUE: memory kind (local slots, global data) */
    bool is_global;      /* LVALUE: field, ndarray or kernel temporary (atomic `+=`) */
    int64_t ival;        /* INT, BOOL */
    double fval;         /* FLOAT */
    const char *str;     /* STR, BUILTIN */
    QdHandle h;          /* PYOBJ, FUNC, and the handle of INT/FLOAT/BOOL/STR when known */
    QdHostKind hkind;    /* PYOBJ: what the host said it is */
    QdField *field;      /* FIELD: the QIR field (physical shape) */
    const struct FieldView *view; /* FIELD: canonical shape, order and offsets */
    uint32_t ndim;       /* NDARRAY, SHAPE */
    const uint8_t *layout; /* NDARRAY, SHAPE: canonical axis at each physical position of a
                              permuted ndarray (QdKernelArg.layout), NULL for the identity */
    const Expr *grad;    /* NDARRAY: the gradient ndarray (`x.grad`) of a kernel argument made
                            with needs_grad=True, else NULL */
    Expr *items;         /* TUPLE: elements; DICT: values */
    Expr *keys;          /* DICT: keys */
    uint32_t nitems;     /* TUPLE, DICT: count */
    bool is_vector;      /* MATRIX: 1-D */
    bool is_coopvec;     /* MATRIX: a qd.nn.CoopVec (a vector with the operations of
                            lower_nn.c) */
    bool is_big;         /* INT: a Python int outside int64, held by the host: h; str is its
                            decimal text, fval its float value, ival INT64_MAX / INT64_MIN by its
                            sign, and big_u64 says it is in [2^63, 2^64) with ubits its bits */
    bool big_u64;
    uint64_t ubits;
    uint32_t rows, cols; /* MATRIX: shape (a vector of n: rows = n, cols = 1) */
    IterSpec *iter;      /* ITER */
    TileData *tile;      /* TILE: what it is (lower_tile.c) */
};

/* A runtime value Expr of value id and type ty. */
static inline Expr
lw_value(uint32_t id, const QdType *ty)
{
    Expr e = {0};
    e.kind = EX_VALUE;
    e.id = id;
    e.ty = ty;
    return e;
}

/* The scalar type's name ("i32"), "?" for none. */
static inline const char *
lw_type_name(const QdType *ty)
{
    return ty ? qd_type_scalar_name(ty->kind) : "?";
}

/* How a field is indexed: canonical axes, their physical order and index origins. */
typedef struct FieldView {
    uint32_t ndim;      /* dimensions */
    int64_t shape[16];  /* canonical extents */
    uint8_t order[16];  /* canonical axis at each physical position, outermost first */
    int64_t offset[16]; /* index origin per canonical axis */
} FieldView;

/* What a `for` iterates over. */
typedef enum IterKind {
    IT_RANGE,   /* range(begin, end): one dimension */
    IT_NDRANGE, /* qd.ndrange(...), struct-for over a field or ndarray */
} IterKind;

struct IterSpec {
    IterKind kind;       /* range or ndrange */
    uint32_t ndim;       /* dimensions */
    Expr begin[16];      /* per dimension: begin (compile-time int or runtime i32) */
    Expr end[16];        /* per dimension: end */
    bool grouped;        /* targets bind one vector of indices */
    uint32_t axes[16];   /* iteration order: axes[0] outermost (a permutation) */
};

/* The loop a `break` / `continue` at the current statement refers to (the innermost). */
typedef enum LoopKind {
    LOOP_NONE,     /* none: the top level of the kernel or of a func */
    LOOP_PARALLEL, /* the parallel loop of a range_for task: `continue` ends the iteration, and
                      `break` is an error (the iterations run in no particular order) */
    LOOP_SERIAL,   /* a runtime `for` or `while` run by one thread */
    LOOP_STATIC,   /* a `qd.static` loop: `break` / `continue` act at compile time */
} LoopKind;

/* A variable binding in a scope. */
typedef struct Var {
    const char *name;  /* interned */
    Expr e;            /* LVALUE for runtime variables; anything else for compile-time bindings */
    bool is_arg;       /* a kernel argument: assigning to it is an error */
    bool is_loop_var;  /* a loop target: assigning to it is an error */
    int control_depth; /* FuncFrame.control_depth where it was bound */
} Var;

/* Settings of the next top-level loop (qd.loop_config). */
typedef struct LoopConfig {
    bool set;           /* a loop_config is pending */
    uint32_t block_dim; /* 0 = default */
    uint32_t min_blocks_per_sm; /* 0 = no request */
    bool serialize;     /* run the loop on one thread */
    const char *name;   /* task name or NULL */
} LoopConfig;

/* State of one function being lowered (the kernel, or an inlined func). */
typedef struct FuncFrame {
    QdHandle scope;        /* Python function whose globals apply */
    const char *file;      /* its source file */
    uint32_t vars_base;    /* first Var index of this function */
    bool is_kernel;        /* the kernel itself (not an inlined func) */
    bool is_real;          /* a @qd.real_func */
    bool early_return;     /* a real_func returning from inside runtime if/for/while: its body is
                              a one-trip `loop`; `return` stores ret_slot, sets ret_flag and
                              breaks, and each loop of the body passes the break on */
    Expr ret_slot;         /* early_return, a scalar result: the returned value's variable */
    Expr ret_ann;          /* early_return, any other result: its annotation, */
    Expr ret_shape;        /* its shape (scalar leaves), */
    Expr *ret_slots;       /* and a variable per leaf; NULL otherwise */
    Expr ret_flag;         /* early_return: i32 variable, 1 once a return ran */
    bool returned;         /* a return was lowered: skip the rest of the body */
    int control_depth;     /* runtime if/for/while around the current statement */
    Expr ret;              /* value of that return (funcs) */
    const QdAst *ret_annotation; /* declared return type (funcs), or NULL */
    QdHandle ret_value;    /* kernel: the evaluated return annotation, 0 when unknown */
    struct FuncFrame *parent; /* caller */
    const QdAst *def;      /* the function's definition (the host caches one per function) */
} FuncFrame;

/* A recursive @qd.real_func lowered into a function of the module (lower_realfunc.c). */
typedef struct RealFunc {
    const QdAst *def;          /* its definition */
    QdFunc *f;                 /* the module's function */
    Expr *anns;                /* per parameter of def: its annotation */
    Expr *shapes;              /* per parameter passed by value: the shape of its value (one
                                  function parameter per scalar leaf) */
    Expr *protos;              /* per ndarray or template parameter: the argument it was lowered
                                  for (a template argument is a compile-time value of the
                                  instance, not a parameter of the function) */
    const QdType **nd_types;   /* per parameter: the function parameter's type where the
                                  argument is an ndarray (annotated so, or a template), else NULL */
    Expr ret_ann;              /* the return annotation */
    Expr ret_shape;            /* the result's shape; EX_VOID for none, EX_VALUE for a scalar
                                  (the call's result) */
    uint32_t nleaves;          /* scalar leaves of the result */
    const QdType **leaf_ty;    /* per leaf: its type */
    uint32_t *leaf_group;      /* per leaf: its result array */
    uint32_t *leaf_index;      /* per leaf: its element in that array */
    uint32_t nouts;            /* result arrays (non-scalar results): one per leaf type */
    const QdType **out_types;  /* per result array: the element type */
    uint32_t *out_counts;      /* per result array: the element count */
} RealFunc;
typedef QdVec(RealFunc) RealFuncs;

/* A runtime value handed to Python as a stand-in during static evaluation (lower_static.c). */
typedef struct StaticValue {
    Expr e;       /* the value; for an axis, the ndarray (EX_NDARRAY or EX_SHAPE) */
    int32_t axis; /* >= 0: extent `axis` of e's shape, read where the stand-in comes back */
} StaticValue;

typedef struct Lowerer {
    QdCtx *ctx;               /* errors */
    QdModule *m;              /* module receiving the kernel */
    QdFunc *f;                /* the kernel being built */
    const QdHost *host;       /* Python callbacks */
    const QdFrontendOptions *opt; /* code-affecting options */
    QdKernelInfo *info;       /* facts for the launcher */
    QdArena *arena;           /* scratch for lowering (the module's arena) */
    QdVec(Var) vars;          /* variable bindings, innermost last */
    QdVec(uint32_t) scopes;   /* start index in vars of each open block scope */
    FuncFrame *frame;         /* function being lowered */
    QdRegion *cur;            /* where instructions go (NULL at top level between tasks) */
    QdInst *task;             /* task being filled, or NULL */
    bool at_top;              /* statements are at the kernel's top level */
    LoopKind loop_kind;       /* innermost loop around the current statement (break/continue) */
    int loop_ifs;             /* runtime `if`s between that loop and the current statement */
    const QdAst *loop_if;     /* the condition of the innermost of them (named in errors) */
    bool in_parallel;         /* inside the parallel loop of a range_for task */
    LoopConfig loop_config;   /* pending qd.loop_config */
    uint32_t depth;           /* inlining depth (recursion guard) */
    bool terminated;          /* a break/continue ended the current block: skip the rest */
    QdInst *pfor;             /* parallel_for being filled (its body), or NULL */
    QdInst *rng_task;         /* task whose random state is rng_slot, or NULL */
    uint32_t rng_slot;        /* pointer to that task's u64 random state */
    int static_ctl;           /* 1 = break, 2 = continue requested inside a static loop */
    QdLoc loc;                /* location of the node being lowered */
    QdVec(StaticValue) statics; /* runtime values behind qd.static's stand-ins, by index */
    RealFuncs *real_funcs;    /* the recursive real_funcs lowered so far, shared by the kernel
                                 and the functions lowered for it */
    uint32_t real_nesting;    /* functions of recursive real_funcs being lowered around this one */
    uint32_t tile_lanes;      /* the most lanes a register tile of the kernel needs (N), 0: none;
                                 checked against the target once the kernel is lowered, so
                                 that misuses of the tile syntax are reported first */
    bool tile_column;         /* the kernel reads a column slice of an array */
    QdLoc tile_loc;           /* where the first of them is made */
} Lowerer;

/***** lower_ops.c: operations by value kind *****/

/* What an operation does on an Expr of one kind, in the manner of CPython's type slots: each
 * kind with behaviour of its own has one `const ExprOps`, defined in that kind's file, and
 * lw_expr_ops() finds it. The generic lowering (lower_expr.c, lower_subscript.c, lower_cond.c,
 * lower_stmt.c, lower_loop.c) asks the table once per operation instead of testing kinds. A NULL
 * slot means the kind has nothing special there: the generic rules apply. A slot may also return LW_DECLINED, as a Python
 * operator returns NotImplemented: the operation goes on to the other operand (binary
 * operators) or to the generic rules. Otherwise a slot returns 0, or -1 with a diag. */
#define LW_DECLINED 1

typedef struct ExprOps {
    const char *name; /* the kind, for reading the table */
    /* `base.name` (node: the ATTRIBUTE node) */
    int (*attribute)(Lowerer *lw, const QdAst *node, const Expr *base, Expr *out);
    /* `base.name = value` (target: the ATTRIBUTE node) */
    int (*store_attribute)(Lowerer *lw, const QdAst *target, const Expr *base, const Expr *value);
    /* `base[index]` */
    int (*subscript)(Lowerer *lw, const QdAst *node, const Expr *base, const QdAst *index, Expr *out);
    /* `base[index] = value`, or with `aug` (the AUG_ASSIGN node) `base[index] <op>= value` */
    int (*store_subscript)(Lowerer *lw, const QdAst *node, const Expr *base, const QdAst *index,
                           const Expr *value, const QdAst *aug);
    /* `target = value` into a target of this kind that an index selected (`f[i] = v`) */
    int (*store)(Lowerer *lw, const QdAst *node, const Expr *target, const Expr *value);
    /* `target <op>= value` of AUG_ASSIGN node `node` */
    int (*aug_assign)(Lowerer *lw, const QdAst *node, const Expr *target, const Expr *value);
    /* `name = value` where the value or the variable v (NULL when new) is of this kind; the
     * value's slot is asked first, then the variable's */
    int (*assign_name)(Lowerer *lw, const QdAst *target, Var *v, const Expr *value);
    /* The value as an assignment reads it before storing anything (`a, b = b, a`) */
    int (*snapshot)(Lowerer *lw, const QdAst *node, const Expr *e, Expr *out);
    /* The items `a, b, ... = value` assigns */
    int (*unpack)(Lowerer *lw, const QdAst *target, const Expr *value, Expr *out);
    /* `a <op> b` (QD_BIN_*), asked of a's kind, then of b's */
    int (*binary)(Lowerer *lw, const QdAst *node, int op, const Expr *a, const Expr *b, Expr *out);
    /* `a <op> b` (QD_CMP_*), asked of a's kind, then of b's */
    int (*compare)(Lowerer *lw, const QdAst *node, int op, const Expr *a, const Expr *b, Expr *out);
    /* `<op> a` (QD_UNARY_*) */
    int (*unary)(Lowerer *lw, const QdAst *node, int op, const Expr *a, Expr *out);
    /* `a and b` (is_and) / `a or b` with an operand of this kind: element-wise */
    int (*logical)(Lowerer *lw, const QdAst *node, bool is_and, const Expr *a, const Expr *b,
                   Expr *out);
    /* The iteration space of a kernel `for` over a value of this kind */
    int (*iterate)(Lowerer *lw, const QdAst *node, const Expr *e, IterSpec *it);
} ExprOps;

/* The operations of e's kind (for EX_PYOBJ, of the host kind); never NULL. */
const ExprOps *lw_expr_ops(const Expr *e);

/* The tables, each in its kind's file. */
extern const ExprOps lw_matrix_ops;       /* lower_matrix.c: EX_MATRIX */
extern const ExprOps lw_struct_ops;       /* lower_struct.c: EX_STRUCT */
extern const ExprOps lw_struct_field_ops; /* lower_struct.c: EX_PYOBJ QD_HOST_STRUCT_FIELD */
extern const ExprOps lw_matrix_field_ops; /* lower_matrix_field.c: EX_PYOBJ QD_HOST_MATRIX_FIELD */
extern const ExprOps lw_field_ops;        /* lower_field.c: EX_FIELD */
extern const ExprOps lw_ndarray_ops;      /* lower_field.c: EX_NDARRAY */
extern const ExprOps lw_shape_ops;        /* lower_field.c: EX_SHAPE */
extern const ExprOps lw_shared_ops;       /* lower_simt.c: EX_SHARED */
extern const ExprOps lw_tile_ops;         /* lower_tile.c: EX_TILE */
extern const ExprOps lw_tuple_ops;        /* lower_container.c: EX_TUPLE */
extern const ExprOps lw_dict_ops;         /* lower_container.c: EX_DICT (buffer views too) */
extern const ExprOps lw_iter_ops;         /* lower_loop.c: EX_ITER */
extern const ExprOps lw_host_ops;         /* lower_host.c: any other EX_PYOBJ */
extern const ExprOps lw_coopvec_ops;      /* lower_nn.c: EX_MATRIX with is_coopvec */


/***** lower_kernel.c *****/

/* Instruction emission at the current insertion point (opening a serial task at top level). */
QdInst *lw_emit(Lowerer *lw, QdOp op, uint32_t nargs);
/* Emits an instruction and gives it a result of type ty; returns the value id. */
uint32_t lw_emit_value(Lowerer *lw, QdOp op, const QdType *ty, uint32_t a, uint32_t b);
int lw_ensure_region(Lowerer *lw);
/* Declares a runtime variable slot of scalar type ty (alloca in a task, tmp_alloc at top level). */
int lw_new_slot(Lowerer *lw, const QdType *ty, Expr *out);
/* The out-of-memory diag at the current location; returns -1. */
int lw_nomem(Lowerer *lw);
int lw_error(Lowerer *lw, const QdAst *node, QdErrKind kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void lw_set_loc(Lowerer *lw, const QdAst *node);
int lw_warn(Lowerer *lw, const QdAst *node, const char *category, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Scopes. */
void lw_push_scope(Lowerer *lw);
void lw_pop_scope(Lowerer *lw);
Var *lw_lookup_local(Lowerer *lw, const char *name);
int lw_bind(Lowerer *lw, const char *name, const Expr *e, Var **out);

/* Python's repr of a float (the shortest text that reads back as the same double). */
void lw_put_float_repr(QdSbuf *sb, double v);

/* The error for a call of `name`, a requires_top_level func or an op of qd.algorithms, below the
 * kernel's top level (inside a runtime for / if / while); 0 at the top level. */
int lw_require_top_level(Lowerer *lw, const QdAst *call, const char *name);
/* Lowers a statement list / a @qd.func call. */
int lw_stmts(Lowerer *lw, const QdAstList *body);
int lw_call_func(Lowerer *lw, const QdAst *call, const Expr *fn, const Expr *args, uint32_t nargs,
                 Expr *out);
/* As lw_call_func, with args[0] the bound `self` ahead of the call's own arguments. */
int lw_call_func_bound(Lowerer *lw, const QdAst *call, const Expr *fn, const Expr *args,
                       uint32_t nargs, Expr *out);
/* A compile-time scalar converted to a constant of type ty (still compile-time, e->ty = ty). */
int lw_typed_constant(Lowerer *lw, const QdAst *node, Expr *e, const QdType *ty);
/* The argument for parameter `param` (index i) among the call's positional (the first npos of
 * args) and keyword arguments; NULL when not given. */
const Expr *lw_find_arg(const QdAst *call, const QdAst *param, uint32_t i, const Expr *args,
                        uint32_t npos, uint32_t nargs);

/***** lower_realfunc.c *****/

/* Whether real_func `def` returns from inside runtime if/for/while. */
bool lw_returns_early(const QdAst *def);
/* The body of such a real_func, lowered in `frame` (FuncFrame.early_return); frame->ret is the
 * returned value after it. */
int lw_early_return_body(Lowerer *lw, const QdAst *def, FuncFrame *frame);
/* `return` inside such a body: stores the value, marks the return and breaks. */
int lw_early_return(Lowerer *lw, const QdAst *node);
/* Whether real_func `def` is being lowered: a call of it now is recursion. */
bool lw_is_recursive_call(const Lowerer *lw, const QdAst *def);
/* A recursive call of real_func `def` (fn): a `call` of the module's function for it. */
/* A function of the module, named *out_name, computing the @qd.func `fn` of nparams
 * parameters of type ty, its result converted to ty (an operator handed to a template). */
int lw_func_as_function(Lowerer *lw, const QdAst *node, const Expr *fn, const QdType *ty,
                        uint32_t nparams, const char **out_name);
int lw_real_call(Lowerer *lw, const QdAst *call, const Expr *fn, const QdAst *def, const Expr *args,
                 uint32_t nargs, uint32_t npos, Expr *out);

/***** lower_expr.c *****/

int lw_expr(Lowerer *lw, const QdAst *node, Expr *out);
/* The runtime scalar of an Expr (loads lvalues, types literals); error when not a scalar. */
int lw_rvalue(Lowerer *lw, const QdAst *node, const Expr *e, Expr *out);
/* `dtype(x)` of a compile-time scalar x: a constant of ty, range-checked as an explicitly typed
 * literal (QuadrantsTypeError "Integer literal ... exceeded the range of specified dtype"). */
int lw_explicit_literal(Lowerer *lw, const QdAst *node, const Expr *x, const QdType *ty, Expr *out);
/* Converts a runtime or literal scalar to type ty (a `cast`, or a typed constant); a Python int
 * must fit default_ip first, as every untyped integer literal that becomes a value. */
double lw_python_float(const Lowerer *lw, double v);
int lw_convert(Lowerer *lw, const QdAst *node, const Expr *e, const QdType *ty, Expr *out);
/* Value *id converted to type ty (by the source's signedness), in place. */
int lw_convert_id(Lowerer *lw, const QdAst *node, uint32_t *id, const QdType *ty);
/* A typed constant. */
uint32_t lw_const_int(Lowerer *lw, const QdType *ty, int64_t v);
uint32_t lw_const_float(Lowerer *lw, const QdType *ty, double v);
/* Type of a literal of the given kind under the options (default_ip / default_fp / u1). */
const QdType *lw_literal_type(Lowerer *lw, const Expr *e);
/* spec 0.4 promoted_type. */
const QdType *lw_promote(const QdType *a, const QdType *b);
/* An integer literal meeting a runtime value must fit default_ip (spec 0.4); -1 with a diag. */
int lw_check_literal(Lowerer *lw, const QdAst *node, const Expr *e);
bool lw_is_runtime(const Expr *e);
bool lw_is_compile_time_scalar(const Expr *e);
/* A compile-time scalar with Python semantics (no type): operations on two of them fold in
 * Python arithmetic. A typed constant (a constant bound to an annotated func parameter) has its
 * type's semantics instead -- integers wrap -- like the runtime value the reference makes. */
bool lw_is_python_scalar(const Expr *e);
int lw_binary(Lowerer *lw, const QdAst *node, int op, const Expr *a, const Expr *b, Expr *out);
/* a <op> b for one comparison operator (QD_CMP_*); element-wise on matrices. */
int lw_compare(Lowerer *lw, const QdAst *node, int op, const Expr *a, const Expr *b, Expr *out);
/* <op> a for a unary operator (QD_UNARY_*) of an evaluated operand. */
int lw_unary(Lowerer *lw, const QdAst *node, int op, const Expr *a, Expr *out);
int lw_store(Lowerer *lw, const QdAst *node, const Expr *target, const Expr *value);
int lw_truth(Lowerer *lw, const QdAst *node, const Expr *e, uint32_t *cond);
/* Attribute `node->name` of the evaluated base of ATTRIBUTE node `node`. */
int lw_attribute(Lowerer *lw, const QdAst *node, const Expr *base, Expr *out);
const QdType *lw_dtype_of(Lowerer *lw, const Expr *e);

/***** lower_subscript.c: indices and elements *****/

/* `base[index]`: the kind's ExprOps.subscript. */
int lw_subscript(Lowerer *lw, const QdAst *node, const Expr *base, const QdAst *index, Expr *out);
/* The extent of canonical axis `axis` of ndarray e (an i32 `shape` instruction), or QD_NO_VALUE. */
uint32_t lw_ndarray_extent(Lowerer *lw, const Expr *e, uint32_t axis);
/* base[idx...] of a field or ndarray as an lvalue; `where` (the index expression) is blamed for
 * bad indices. */
int lw_subscript_indices(Lowerer *lw, const QdAst *node, const QdAst *where, const Expr *base,
                         Expr *idx, uint32_t n, Expr *out);
/* The extents of ndarray shape `shape` (EX_SHAPE) as a tuple of i32 values read at the current
 * insertion point: `n, m = arr.shape`, `qd.ndrange(*arr.shape)`. */
int lw_shape_tuple(Lowerer *lw, const Expr *shape, Expr *out);
/* Extent d of the shape of `shape` (EX_SHAPE or EX_NDARRAY): an i32 read at the insertion point. */
int lw_shape_axis(Lowerer *lw, const Expr *shape, uint32_t d, Expr *out);
/* The "this value cannot be indexed in a kernel" error. */
int lw_not_indexable(Lowerer *lw, const QdAst *node);
/* The indices of x[index] (tuples expand), and one index as an i32 value. */
int lw_collect_indices(Lowerer *lw, const QdAst *index, Expr *out, uint32_t *n);
int lw_index_value(Lowerer *lw, const QdAst *node, const Expr *e, uint32_t *id);

/***** lower_host.c: compile-time Python objects *****/

/* Compile-time value of an Expr as a host handle (for qd.static evaluation). */
int lw_to_handle(Lowerer *lw, const QdAst *node, const Expr *e, QdHandle *out);
/* Expr for a host handle (describes it). */
int lw_from_handle(Lowerer *lw, const QdAst *node, QdHandle h, Expr *out);
/* Attribute `node->name` of the Python object h, asked of Python. */
int lw_host_getattr(Lowerer *lw, const QdAst *node, QdHandle h, Expr *out);

/***** lower_cond.c: and / or / x if c else y *****/

int lw_boolop(Lowerer *lw, const QdAst *node, Expr *out);
int lw_ifexp(Lowerer *lw, const QdAst *node, Expr *out);

/***** lower_container.c: tuple, list and dict literals, comprehensions *****/

int lw_sequence_literal(Lowerer *lw, const QdAst *node, Expr *out);
int lw_dict_literal(Lowerer *lw, const QdAst *node, Expr *out);
int lw_listcomp(Lowerer *lw, const QdAst *node, Expr *out);

/***** lower_consteval.c *****/

/* a <op> b for two compile-time Python numbers (QD_BIN_*), with Python semantics. */
int lw_fold_binary(Lowerer *lw, const QdAst *node, int op, const Expr *a, const Expr *b, Expr *out);
/* The Python spelling of binary operator op ("+", "//", ...). */
const char *lw_binop_symbol(int op);
/* Python operator `op` on compile-time numbers a and b (b NULL: unary "neg", "~", "abs"), carried
 * out by the host in Python arithmetic: for ints outside int64 (Expr.is_big) and results that
 * leave it. The operator names are QdHost.number_op's. */
int lw_python_number_op(Lowerer *lw, const QdAst *node, const char *op, const Expr *a, const Expr *b,
                        Expr *out);

/***** lower_call.c: call dispatch *****/

int lw_call(Lowerer *lw, const QdAst *node, Expr *out);
/* Binds `self` (copied, by reference) as the first argument of @qd.func `func` (EX_FUNC): a
 * struct's method, or a field method's kernel form. lw_call passes it first. */
int lw_bind_self(Lowerer *lw, const Expr *self, Expr *func);

/***** lower_builtins.c: the kernel-scope builtins *****/

/* The evaluated arguments of a call. */
typedef struct CallArgs {
    const QdAst *node;  /* the CALL node */
    Expr *pos;          /* positional argument values */
    uint32_t npos;      /* how many */
    const QdAst **kw;   /* keyword nodes (name, x = value) */
    Expr *kwv;          /* keyword values */
    uint32_t nkw;       /* how many */
} CallArgs;

/* The lowering of a builtin (builtins.def): op is the row's opcode. */
typedef int (*BuiltinFn)(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out);
#define QD_BUILTIN(name, fn, op, flags) int fn(Lowerer *lw, const CallArgs *c, QdOp op, Expr *out);
#include "builtins.def"
#undef QD_BUILTIN
/* The BI_* flags of builtin `name`; 0 when the table has no such name. */
unsigned lw_builtin_flags(const char *name);
/* Whether builtin `name` applies element by element to vector/matrix arguments. */
bool lw_builtin_is_elementwise(const char *name);
/* Calls builtin `name` of the table with arguments c; the "not supported" error when the table
 * has no such name. */
int lw_builtin(Lowerer *lw, const char *name, const CallArgs *c, Expr *out);
/* The "f() takes n arguments" error unless lo <= positional arguments <= hi. */
int lw_expect_args(Lowerer *lw, const CallArgs *c, const char *name, uint32_t lo, uint32_t hi);
/* The dtype named by an argument (qd.f32, float, int, bool), or NULL. */
const QdType *lw_dtype_arg(const Expr *e);
/* The value of keyword argument `name`, or NULL. */
const Expr *lw_call_keyword(const CallArgs *c, const char *name);
/* min / max (QD_OP_MIN, QD_OP_MAX) of two scalars (lower_math.c). */
int lw_minmax(Lowerer *lw, const QdAst *node, QdOp op, const Expr *a, const Expr *b, Expr *out);
/* Calls builtin `name` with matrix-call arguments (element-wise vector/matrix calls). */
struct MatrixCall;
int lw_call_builtin(Lowerer *lw, const QdAst *node, const char *name, const struct MatrixCall *c,
                    Expr *out);

/***** lower_print.c: print and assert formats *****/

typedef QdVec(uint32_t) QdIdVec;
/* Appends an assert message (string, f-string or "format" % values) to fmt as a print format,
 * with the runtime values it formats in args. */
int lw_format_message(Lowerer *lw, const QdAst *msg, QdSbuf *fmt, QdIdVec *args);
/* Debug check: `assert ok` failing the launch with "file:line: message"; with values, message is
 * a print format for them. Nothing in the prologue of a range_for task. */
int lw_debug_assert(Lowerer *lw, const QdAst *node, uint32_t ok, const char *message,
                    const uint32_t *vals, uint32_t nvals);

/***** lower_static.c *****/

/* Evaluates `qd.static(arg)`-style compile-time expressions through the host. */
int lw_static_eval(Lowerer *lw, const QdAst *node, Expr *out);
/* The runtime value behind stand-in number `index` (a QD_HOST_RUNTIME handle coming back). */
int lw_static_value(Lowerer *lw, const QdAst *node, int64_t index, Expr *out);
/* Carries out operation `name` on stand-ins (a QD_HOST_RUNTIME_OP handle h coming back). */
int lw_static_op(Lowerer *lw, const QdAst *node, QdHandle h, const char *name, Expr *out);

/***** lower_simt.c *****/

/* A qd.simt.* builtin (`name` without the "simt." prefix). */
int lw_simt_call(Lowerer *lw, const QdAst *node, const char *name, const struct MatrixCall *c,
                 Expr *out);
/* base[idx...] of SharedArray `base` (EX_SHARED of scalars) as an lvalue in shared memory. */
int lw_shared_element(Lowerer *lw, const QdAst *node, const Expr *base, const Expr *idx, uint32_t n,
                      Expr *out);

/***** lower_tile.c, lower_tile_slice.c: register tiles *****/

/* What an EX_TILE Expr is (its `tile`). */
typedef enum TilePart {
    TILE_REGS,   /* a tile: array, n; Expr.ty the element type */
    TILE_SLICE,  /* a 2-D slice of an array: base, batch, r0, r1, c0, c1 */
    TILE_COLUMN, /* a column of an array, read: value (a slot), name (the variable) */
    TILE_OUTER,  /* qd.outer(u, v): u, v */
} TilePart;

struct TileData {
    TilePart part;    /* what it is */
    uint32_t n;       /* REGS: rows (= columns = lanes) */
    uint32_t array;   /* REGS: ptr<[n x ty], local> */
    bool is_fresh;    /* REGS: made by zeros() / eye(), no variable holds it yet */
    Expr base;        /* SLICE: the array (EX_FIELD, EX_NDARRAY, EX_SHARED) */
    bool has_batch;   /* SLICE: a 3-D array, `batch` its first index */
    Expr batch;       /* SLICE: the batch index */
    Expr r0, r1;      /* SLICE, COLUMN: the rows */
    Expr c0, c1;      /* SLICE: the columns */
    Expr value;       /* COLUMN: this lane's element (an lvalue: its slot) */
    const char *name; /* COLUMN: the variable bound to it, for errors (NULL: none yet) */
    Expr u, v;        /* OUTER: the two column vectors */
};

/* A new EX_TILE Expr of the given part and element type (its other data zero). */
int lw_tile_data_new(Lowerer *lw, TilePart part, const QdType *ty, Expr *out);
/* Element k of tile t's array as an lvalue. */
int lw_tile_register_slot(Lowerer *lw, const Expr *t, uint32_t k, Expr *out);
/* Notes that the kernel needs subgroups of n lanes (0: a column slice) from node on. */
void lw_tile_need_lanes(Lowerer *lw, const QdAst *node, uint32_t n);
/* t[:] = the slice s. */
int lw_tile_load(Lowerer *lw, const QdAst *node, const Expr *t, const TileData *s);

/* Tile<N>x<N>.zeros / eye, qd.outer and the tile methods (`name` without "simt."; fn the
 * builtin, carrying a method's tile in items[0]). */
int lw_tile_call(Lowerer *lw, const QdAst *node, const Expr *fn, const char *name,
                 const struct MatrixCall *c, Expr *out);
/* base[index] where it is tile slice syntax (a field, ndarray or SharedArray indexed with 2 or 3
 * indices, one a slice): a slice for a tile load, or a column read; else LW_DECLINED. */
int lw_tile_subscript(Lowerer *lw, const QdAst *node, const Expr *base, const QdAst *index,
                      Expr *out);
/* The store_subscript of fields, ndarrays and SharedArrays: `base[index] = value` with value a
 * tile is the store of a tile; anything else is LW_DECLINED (the element's own store). */
int lw_tile_store_subscript(Lowerer *lw, const QdAst *target, const Expr *base, const QdAst *index,
                            const Expr *value, const QdAst *aug);
/* A tile passed to a func: a copy (other tile Exprs as they are). */
int lw_tile_new_var(Lowerer *lw, const QdAst *node, const Expr *value, Expr *out);
/* The error of using a tile Expr where a scalar is wanted (a column slice: its own message). */
int lw_tile_misuse(Lowerer *lw, const QdAst *node, const Expr *e);
/* After lowering: whether the target runs the kernel's tiles (a GPU, or the CPU's emulation,
 * with subgroups of N lanes or more); -1 with a diag when not. */
int lw_tile_check_target(Lowerer *lw);

/***** lower_struct.c *****/

/* Calling struct type `type` (EX_PYOBJ) with npos positional and nkw keyword arguments (the
 * keyword names are the call's keyword nodes): missing members are zero, members converted. */
int lw_struct_construct(Lowerer *lw, const QdAst *call, const Expr *type, const Expr *args,
                        uint32_t npos, uint32_t nkw, Expr *out);
/* A Python struct instance (compile-time): typed constant members. */
int lw_struct_from_instance(Lowerer *lw, const QdAst *node, QdHandle h, Expr *out);
/* A copy of a struct value in fresh slots (a new variable, a func parameter). */
int lw_struct_new_var(Lowerer *lw, const QdAst *node, const Expr *value, Expr *out);
/* The struct with every lvalue member loaded (a snapshot for assignment and returns). */
int lw_struct_load(Lowerer *lw, const QdAst *node, const Expr *value, Expr *out);
/* `name = value` where the value or the variable v (NULL when new) is a struct. */
int lw_struct_assign_name(Lowerer *lw, const QdAst *target, Var *v, const Expr *value);
/* Evaluates node->x of SUBSCRIPT node `node` into *base and returns 0; when it is `obj.r` with r
 * an unpacked vector member of struct obj, *out is the selected member and it returns 1. */
int lw_subscript_base(Lowerer *lw, const QdAst *node, Expr *base, Expr *out);
/* The scalar field that gives the index space of `e`: the first leaf of a struct field or a
 * vector/matrix field (all of whose leaves have its shape), else e itself. */
int lw_shape_leaf(Lowerer *lw, const QdAst *node, const Expr *e, Expr *out);
/* The zero value of struct type `type` (typed constant members, zero vectors and matrices). */
int lw_struct_zero(Lowerer *lw, const QdAst *node, QdHandle type, Expr *out);
/* Struct value `value` converted member by member to struct type `type`. */
int lw_struct_cast(Lowerer *lw, const QdAst *node, QdHandle type, const Expr *value, Expr *out);
/* A flattened struct kernel argument (EX_DICT of "member" -> argument) as a struct value. */
int lw_struct_from_dict(Lowerer *lw, const QdAst *node, QdHandle type, const Expr *dict, Expr *out);
/* `return value` of a kernel annotated with struct type `ann`: one result per scalar member. */
/* Kernel results of `value` returned as struct type ann, one per scalar leaf, from result index
 * *next on (advanced). A value that is not a struct with ann's members (names and types) is the
 * reference's "Return (type=...) cannot be converted into required type ..." error. */
int lw_struct_kernel_return(Lowerer *lw, const QdAst *node, const Expr *ann, const Expr *value,
                            uint32_t *next);
/* Emits kernel result *next (advanced) = v converted to ty; more than QD_MAX_RESULTS raise. */
int lw_kernel_result(Lowerer *lw, const QdAst *node, const Expr *v, const QdType *ty,
                     uint32_t *next);
/* The "Return (type=<what value is>) cannot be converted into required type <ann>" error. */
int lw_return_type_error(Lowerer *lw, const QdAst *node, const Expr *ann, const Expr *value);

/***** lower_matrix.c, lower_matrix_access.c, lower_matrix_linalg.c *****/

/* The arguments of a call, for the matrix constructors and methods. */
typedef struct MatrixCall {
    const Expr *pos;        /* positional argument values */
    uint32_t npos;          /* how many */
    const QdAst *const *kw; /* keyword nodes (name) */
    const Expr *kwv;        /* keyword values */
    uint32_t nkw;           /* how many */
} MatrixCall;

/* Shared helpers of the lower_matrix*.c files. */
int lw_matrix_dot(Lowerer *lw, const QdAst *node, const Expr *a, uint32_t sa, const Expr *b, uint32_t sb,
                  uint32_t n, Expr *out);                    /* sum of a[k*sa] * b[k*sb] */
const Expr *lw_matrix_arg(const MatrixCall *c, uint32_t i, const char *name); /* or NULL */
const char *lw_matrix_shape_str(Lowerer *lw, const Expr *e); /* "(n, m)" / "(n,)" */
int lw_matrix_loaded(Lowerer *lw, const QdAst *node, const Expr **e, Expr *tmp); /* items loaded */
int lw_matrix_dtype_arg(Lowerer *lw, const QdAst *node, const Expr *e, const QdType **ty);
int lw_matrix_scalar(Lowerer *lw, const QdAst *node, const Expr *e, Expr *out); /* loaded once */
/* A new rows x cols matrix Expr of element type ty with uninitialised items. */
int lw_matrix_new(Lowerer *lw, uint32_t rows, uint32_t cols, bool is_vector, const QdType *ty, Expr *out);
/* A scalar as an element of type ty (compile-time values stay typed constants). */
int lw_matrix_item(Lowerer *lw, const QdAst *node, const Expr *e, const QdType *ty, Expr *out);
/* A matrix of the given scalars, converted to ty (NULL: their promoted type). */
int lw_matrix_from_scalars(Lowerer *lw, const QdAst *node, const Expr *items, uint32_t rows,
                           uint32_t cols, bool is_vector, const QdType *ty, Expr *out);
/* Builtins "Matrix", "Vector", "Matrix.zero/one/identity/unit/diag/rows/cols". */
int lw_matrix_builtin(Lowerer *lw, const QdAst *node, const char *name, const MatrixCall *c, Expr *out);
/* n, m, vector-ness and dtype (NULL when unset) of a vector/matrix type or value handle. */
int lw_matrix_type_info(Lowerer *lw, const QdAst *node, QdHandle type, uint32_t *n, uint32_t *m,
                        bool *is_vector, const QdType **ty);
/* Calling a type object: vec3f(1, 2, 3), vec4f(v.xyz, 1), mat2f(0). */
int lw_matrix_type_call(Lowerer *lw, const QdAst *node, const Expr *type, const MatrixCall *c, Expr *out);
/* The same for the branches of a conditional value where one is a tuple or a matrix: tuples
 * become vectors and a scalar facing a matrix is broadcast first; LW_DECLINED when neither is. */
int lw_matrix_merge_branches(Lowerer *lw, const QdAst *node, QdInst *ifi, Expr *vals, Expr *out);
/* Whether e is a vector; whether it is a matrix whose every element is an lvalue. */
bool lw_matrix_is_vector(const Expr *e);
bool lw_matrix_of_lvalues(const Expr *e);
/* A Python-scope Matrix captured at compile time. */
int lw_matrix_from_instance(Lowerer *lw, const QdAst *node, QdHandle h, Expr *out);
/* *e itself, or for a list/tuple literal the vector (list of lists: matrix) it spells, made in
 * *tmp: an operand of a matrix operator or element-wise call. */
int lw_matrix_operand(Lowerer *lw, const QdAst *node, const Expr **e, Expr *tmp);
/* Operators with at least one matrix operand (scalars broadcast; lists are lw_matrix_operand's). */
int lw_matrix_binary(Lowerer *lw, const QdAst *node, int op, const Expr *a, const Expr *b, Expr *out);
/* `a and b` (is_and) / `a or b` with a vector/matrix (or list) operand: element-wise logical,
 * 0 or 1 in the operands' promoted type, on integral elements; a scalar broadcasts. */
int lw_matrix_logical(Lowerer *lw, const QdAst *node, bool is_and, const Expr *a, const Expr *b,
                      Expr *out);
int lw_matrix_transpose(Lowerer *lw, const QdAst *node, const Expr *a, Expr *out);
bool lw_matrix_is_method(const char *name);
/* A builtin call where an argument may be a vector/matrix: constructors, methods, element-wise
 * math and atomics, any/all, len, qd.zero/one. Returns 1 when it is none of those. */
int lw_matrix_call(Lowerer *lw, const QdAst *node, const Expr *fn, const MatrixCall *c, Expr *out);
/* Element-wise store of a matrix, list or scalar (broadcast) into a matrix of lvalues. */
int lw_matrix_store(Lowerer *lw, const QdAst *node, const Expr *target, const Expr *value);
/* Indexing, slicing, swizzles. */
int lw_matrix_subscript(Lowerer *lw, const QdAst *node, const Expr *base, const QdAst *index, Expr *out);
/* `base[index] = value`, or with `aug` (an AUG_ASSIGN node) `base[index] <op>= value`. */
int lw_matrix_store_subscript(Lowerer *lw, const QdAst *node, const Expr *base, const QdAst *index,
                              const Expr *value, const QdAst *aug);
int lw_matrix_attribute(Lowerer *lw, const QdAst *node, const Expr *base, Expr *out);
int lw_matrix_store_attribute(Lowerer *lw, const QdAst *target, const Expr *base, const Expr *value);
int lw_matrix_as_tuple(Lowerer *lw, const Expr *m, Expr *out);
/* items[start:stop:step] of a compile-time sequence of len items, for SLICE node `slice`. */
int lw_slice_items(Lowerer *lw, const QdAst *node, const QdAst *slice, const Expr *items,
                   uint32_t len, Expr *out);
/* determinant() / inverse() of square matrix m (lower_matrix_linalg.c). */
int lw_matrix_linalg_method(Lowerer *lw, const QdAst *node, const char *name, const Expr *m, Expr *out);
/* qd.nn (lower_nn.c): cooperative vectors (EX_MATRIX vectors with is_coopvec) and matrix
 * views (a dict of members with the marker __qd_matrix_view). */
bool lw_is_coopvec(const Expr *e);
bool lw_is_matrix_view(const Expr *e);
/* A call of qd.nn.<name> (CoopVec, matvec, exp2, log2, fma, step, cast, dot). */
int lw_nn_call(Lowerer *lw, const QdAst *node, const char *name, const CallArgs *c, Expr *out);
/* A qd builtin called with a CoopVec argument (max, min, tanh, abs, cast, len; others are
 * errors); LW_DECLINED when no argument is a CoopVec. */
int lw_nn_builtin(Lowerer *lw, const char *name, const CallArgs *c, Expr *out);
/* A new CoopVec of n elements of type ty, its items to fill (lower_nn.c). */
int lw_coopvec_new(Lowerer *lw, uint32_t n, const QdType *ty, Expr *out);
/* y = op(A) x (+ b) (lower_nn_matvec.c): A a matrix view, x a CoopVec, b a vector view or NULL;
 * op(A) = A^T when transpose differs from A's own transpose flag. */
int lw_nn_matvec(Lowerer *lw, const QdAst *node, const Expr *a, const Expr *x, const Expr *b,
                 bool transpose, Expr *out);
/* `A.T`, `A.shape` and the members of a matrix view. */
int lw_matrix_view_attribute(Lowerer *lw, const QdAst *node, const Expr *base, const char *attr,
                             Expr *out);

/* qd.BufferView arguments (lower_buffer_view.c): a dict of members arr, offset, size and a
 * marker. */
bool lw_is_buffer_view(const Expr *e);
int lw_buffer_view_subscript(Lowerer *lw, const QdAst *node, const Expr *base, const QdAst *index,
                             Expr *out);
int lw_buffer_view_attribute(Lowerer *lw, const QdAst *node, const Expr *base, const char *attr,
                             Expr *out);
/* view.subview(offset, size) with `nargs` positional `args`. */
int lw_buffer_view_subview(Lowerer *lw, const QdAst *node, const Expr *view, const Expr *args,
                           uint32_t nargs, Expr *out);

/* Vector/matrix fields and ndarray elements (lower_matrix_field.c). */
/* The matrix of element pointers of vector/matrix ndarray `base` at the element whose
 * ELEM_PTR operands (the ndarray, then one index per outer axis, in physical order) are
 * outer_args. */
int lw_ndarray_element(Lowerer *lw, const Expr *base, const uint32_t *outer_args, uint32_t nouter,
                       Expr *out);
int lw_matrix_field_subscript(Lowerer *lw, const QdAst *node, const Expr *base, const QdAst *index,
                              Expr *out);
int lw_matrix_field_leaf(Lowerer *lw, const QdAst *node, const Expr *base, Expr *out);
/* `return value` of a kernel annotated with a vector/matrix type: one result per element. */
int lw_matrix_kernel_return(Lowerer *lw, const QdAst *node, const Expr *ann, const Expr *value,
                            uint32_t *next);
/* A kernel parameter annotated with a vector/matrix type or an ndarray of them. */
/* The annotation of kernel parameter `param`, as Python evaluated it where the kernel was
 * defined (so local names work), else evaluated in the kernel's scope. */
int lw_param_annotation(Lowerer *lw, const QdAst *param, Expr *out);
int lw_matrix_param(Lowerer *lw, const QdAst *param, const Expr *ann, Expr *e);

/***** lower_template.c: calls into the IR template library *****/

/* A template argument: a type (type set), a function (func set: `@func`, `@func<func_type>`
 * when func_type is set, or `@func<func_targs...>` when func_targs is), or else the integer
 * value. */
typedef struct LwTemplateArg {
    const QdType *type;
    int64_t value;
    const char *func;
    const QdType *func_type;
    const struct LwTemplateArg *func_targs;
    uint32_t nfunc_targs;
} LwTemplateArg;

/* A local array of n elements of scalar type ty (an alloca at the start of the task, or of the
 * function being lowered). */
int lw_local_array(Lowerer *lw, const QdType *ty, uint32_t n, uint32_t *out);
/* The pointer to element k of local array `array` of element type ty, or QD_NO_VALUE. */
uint32_t lw_array_element_ptr(Lowerer *lw, uint32_t array, const QdType *ty, uint32_t k);
/* A local array holding the scalars items[0 .. n) converted to ty. */
int lw_array_of(Lowerer *lw, const QdAst *node, const Expr *items, uint32_t n, const QdType *ty,
                uint32_t *out);
/* Stores the runtime scalar `value` (of type ty) into element k of local array `array`. */
int lw_array_store(Lowerer *lw, uint32_t array, const QdType *ty, uint32_t k, uint32_t value);
/* Loads elements first .. first + n of local array `array` into scalar Exprs. */
int lw_array_items(Lowerer *lw, uint32_t array, const QdType *ty, uint32_t first, uint32_t n,
                   Expr *items);
/* Emits `call @name<targs>(args)`, parsing the library into the module first if needed;
 * *result gets the result value when ret is not void. */
int lw_call_template(Lowerer *lw, const char *name, const LwTemplateArg *targs, uint32_t ntargs,
                     const uint32_t *args, uint32_t nargs, const QdType *ret, uint32_t *result);
/* Emits `call @name<targs>(args)` of a top_level template in the kernel body, after the serial
 * task being filled (which it closes): inlining puts the template's tasks there. */
int lw_call_top_level_template(Lowerer *lw, const char *name, const LwTemplateArg *targs,
                               uint32_t ntargs, const uint32_t *args, uint32_t nargs);

/***** lower_algorithm.c: qd.algorithms *****/

/* qd.algorithms.<name>(...) of algorithms.def: checked, and lowered to a call of its top_level
 * template. */
int lw_algorithm_call(Lowerer *lw, const QdAst *node, const Expr *fn, const char *name,
                      const CallArgs *c, Expr *out);

/***** lower_linalg.c: qd.svd, qd.solve, ... and Matrix.determinant/inverse *****/

int lw_linalg_determinant(Lowerer *lw, const QdAst *node, const Expr *m, Expr *out);
int lw_linalg_inverse(Lowerer *lw, const QdAst *node, const Expr *m, Expr *out);

/***** lower_stmt.c *****/

int lw_stmt(Lowerer *lw, const QdAst *node);
/* Whether `node` is a call of the builtin `qd.static`. */
bool lw_is_static_call(Lowerer *lw, const QdAst *node);
/* The truth of compile-time condition `cond` (a `qd.static(...)` call), as Python sees it. */
int lw_static_truth(Lowerer *lw, const QdAst *cond, bool *truth);
/* Lowers a block in a new scope; a break/continue inside ends only this block. */
int lw_block(Lowerer *lw, const QdAstList *body);
/* Assigns value to an assignment target (name, tuple, attribute, subscript); `is_static` binds
 * names as compile-time aliases. */
int lw_assign_target(Lowerer *lw, const QdAst *target, const Expr *value, bool is_static);
/* `target <op>= value` of AUG_ASSIGN node `node` (atomic on global data); a matrix target goes to
 * lw_matrix_aug_assign. */
int lw_aug_assign(Lowerer *lw, const QdAst *node, const Expr *target, const Expr *value);
/* The value as an assignment reads it before storing anything: lvalues loaded (`a, b = b, a`). */
int lw_snapshot(Lowerer *lw, const QdAst *node, const Expr *e, Expr *out);

/***** lower_loop.c *****/

/* The break/continue context around a statement, saved when a loop (or a func body) opens. */
typedef struct LoopScope {
    LoopKind kind;
    int ifs;
    const QdAst *cond;
} LoopScope;
/* Opens the body of a loop of the given kind (LOOP_NONE: a func body); returns the outer context. */
LoopScope lw_loop_enter(Lowerer *lw, LoopKind kind);
/* Closes it: the outer context again. */
void lw_loop_leave(Lowerer *lw, const LoopScope *saved);

/* Opens a range_for task at the kernel's top level, after the serial task being filled, with
 * cfg's block_dim, min_blocks_per_sm and name (NULL: the defaults); its prologue follows. */
int lw_open_loop_task(Lowerer *lw, const LoopConfig *cfg);
/* Emits the open range_for task's parallel_for over [lo, hi) (type ty) and enters its body:
 * *ivar is the counter, *scope the context lw_parallel_leave restores. */
int lw_parallel_enter(Lowerer *lw, uint32_t lo, uint32_t hi, const QdType *ty, uint32_t *ivar,
                      LoopScope *scope);
/* Leaves the body: back at the kernel's top level, the task complete. */
void lw_parallel_leave(Lowerer *lw, const LoopScope *scope);

int lw_while(Lowerer *lw, const QdAst *node);
int lw_for(Lowerer *lw, const QdAst *node);
int lw_jump(Lowerer *lw, const QdAst *node, bool is_break);

#endif /* QD_FRONTEND_LOWER_H */
