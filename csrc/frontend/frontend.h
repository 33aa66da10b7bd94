/* frontend/frontend.h -- the kernel AST, the host interface, and lowering a kernel to QIR.
 *
 * The Python layer captures a kernel's source and parsed `ast`; python/host.c converts that tree
 * into the C AST below (arena-allocated, no Python objects), and answers the frontend's questions
 * about Python values through QdHost: what a global name is bound to, what `qd.static(...)`
 * evaluates to, the AST of a called `@qd.func`. Python values are opaque QdHandles that the host
 * keeps alive for the duration of one compilation. The frontend resolves names, evaluates
 * compile-time expressions, infers and promotes types (spec/api.md section 0.4), inlines funcs,
 * unrolls static loops, splits the kernel into tasks, and emits QIR.
 */
#ifndef QD_FRONTEND_H
#define QD_FRONTEND_H

#include "../abi/abi.h"
#include "../ir/ir.h"

/***** the AST (converted by python/host.c) *****/

typedef enum QdAstKind {
#define QD_AST(name, pyname) QD_AST_##name,
#include "ast.def"
#undef QD_AST
    QD_AST_COUNT_ /* number of kinds */
} QdAstKind;

/* Operators of BinOp / AugAssign, UnaryOp, BoolOp and Compare. */
typedef enum QdAstOp {
    QD_BIN_ADD, QD_BIN_SUB, QD_BIN_MUL, QD_BIN_MATMUL, QD_BIN_DIV, QD_BIN_MOD, QD_BIN_POW,
    QD_BIN_LSHIFT, QD_BIN_RSHIFT, QD_BIN_BITOR, QD_BIN_BITXOR, QD_BIN_BITAND, QD_BIN_FLOORDIV,
    QD_UNARY_INVERT, QD_UNARY_NOT, QD_UNARY_PLUS, QD_UNARY_MINUS,
    QD_BOOL_AND, QD_BOOL_OR,
    QD_CMP_EQ, QD_CMP_NE, QD_CMP_LT, QD_CMP_LE, QD_CMP_GT, QD_CMP_GE, QD_CMP_IS, QD_CMP_IS_NOT,
    QD_CMP_IN, QD_CMP_NOT_IN,
} QdAstOp;

typedef enum QdAstConstKind {
    QD_CONST_NONE,     /* None */
    QD_CONST_BOOL,     /* True / False: ival 1 / 0 */
    QD_CONST_INT,      /* ival; is_big when it does not fit in int64 (sval: its decimal text) */
    QD_CONST_FLOAT,    /* fval */
    QD_CONST_STR,      /* sval (NUL-terminated, may contain no NUL) */
    QD_CONST_ELLIPSIS, /* ...: a statement that does nothing */
    QD_CONST_OTHER,    /* bytes, complex: unsupported in kernels */
} QdAstConstKind;

typedef struct QdAst QdAst;

typedef struct QdAstList {
    QdAst **items; /* the nodes */
    uint32_t len;  /* how many */
} QdAstList;

/* One node. Which children are meaningful depends on the kind: see ast.def. */
struct QdAst {
    QdAstKind kind;      /* what it is */
    uint32_t line;       /* 1-based line in the source file (not in the function) */
    uint32_t col;        /* 1-based column */
    uint32_t end_line;   /* end of the node's text, for carets */
    uint32_t end_col;    /* 1-based column one past the end */
    uint32_t pynode;     /* host handle of the Python node (static evaluation), 0 when none */
    const char *name;    /* NAME id, ATTRIBUTE attr, KEYWORD arg, ARG / FUNCTION_DEF name,
                            UNSUPPORTED Python class name */
    int op;              /* QdAstOp for BIN_OP / AUG_ASSIGN / UNARY_OP / BOOL_OP;
                            FORMATTED_VALUE conversion */
    QdAst *x, *y, *z;    /* single children */
    QdAstList a, b;      /* child lists */
    QdAstOp *ops;        /* COMPARE: b.len operators */
    struct {
        QdAstConstKind kind; /* CONSTANT: which value */
        int64_t ival;        /* INT, BOOL */
        bool is_big;         /* INT outside int64 */
        double fval;         /* FLOAT */
        const char *sval;    /* STR; INT is_big: the decimal text */
    } cst;
};

/***** the host interface (implemented by python/host.c) *****/

/* An opaque Python value kept alive by the host for one compilation; 0 = none. */
typedef uint32_t QdHandle;

typedef enum QdHostKind {
    QD_HOST_NONE,          /* None */
    QD_HOST_BOOL,          /* ival 0/1 */
    QD_HOST_INT,           /* ival (is_big when outside int64) */
    QD_HOST_FLOAT,         /* fval */
    QD_HOST_STR,           /* str */
    QD_HOST_TUPLE,         /* len items (getitem) */
    QD_HOST_LIST,          /* len items (getitem) */
    QD_HOST_DTYPE,         /* a scalar type object (qd.f32, int, float, bool): dtype */
    QD_HOST_FIELD,         /* a qd.field: field_id, dtype, ndim, shape */
    QD_HOST_NDARRAY,       /* a qd.ndarray object (not allowed as a global) */
    QD_HOST_QD_FUNC,       /* a @qd.func function */
    QD_HOST_KERNEL,        /* a @qd.kernel */
    QD_HOST_BUILTIN,       /* a kernel-scope builtin (qd.sqrt, range, qd.static...): str = its name */
    QD_HOST_TEMPLATE_ANNOTATION, /* qd.template() / qd.Template */
    QD_HOST_NDARRAY_ANNOTATION,  /* qd.types.ndarray(...): dtype (QD_TY_COUNT_ = any), ndim (-1 = any) */
    QD_HOST_STRUCT_TYPE,   /* a struct class (@qd.dataclass, qd.types.struct) */
    QD_HOST_STRUCT,        /* an instance of a struct class */
    QD_HOST_STRUCT_FIELD,  /* a struct field (one field per member) */
    QD_HOST_MATRIX_TYPE,   /* qd.types.vector / matrix (n, m, ndim, dtype attributes) */
    QD_HOST_MATRIX,        /* a Python-scope qd.Matrix / qd.Vector value */
    QD_HOST_MATRIX_FIELD,  /* a vector/matrix field (one scalar field per element) */
    QD_HOST_CALLABLE,      /* any other Python callable (called at trace time) */
    QD_HOST_OBJECT,        /* anything else (modules, classes, instances) */
    QD_HOST_RUNTIME,       /* a stand-in made by make_runtime for a runtime value: ival = index */
    QD_HOST_RUNTIME_OP,    /* an operation on stand-ins: str = its name ("add", "neg", "lt"...),
                              attribute _operands = the tuple of operands */
} QdHostKind;

/* What a stand-in for a runtime value knows at compile time (make_runtime). */
typedef enum QdRuntimeKind {
    QD_RUNTIME_SCALAR,  /* a scalar: dtype */
    QD_RUNTIME_VECTOR,  /* a vector: n, dtype */
    QD_RUNTIME_MATRIX,  /* a matrix: n, m, dtype */
    QD_RUNTIME_NDARRAY, /* an ndarray: dtype, shape (a tuple of stand-ins of its extents) */
    QD_RUNTIME_STRUCT,  /* a struct or dataclass value: its members, by name */
    QD_RUNTIME_OTHER,   /* anything else (a shared array): no facts */
} QdRuntimeKind;

typedef struct QdRuntimeFacts {
    uint32_t index;     /* the frontend's number for the value; describe gives it back */
    QdRuntimeKind kind; /* what it is */
    QdTypeKind dtype;   /* element / scalar type; QD_TY_COUNT_ when unknown */
    uint32_t n, m;      /* VECTOR: n; MATRIX: n rows, m columns */
    QdHandle shape;     /* NDARRAY: tuple of stand-ins of the extents; 0 otherwise */
    uint32_t nmembers;  /* STRUCT: how many members */
    const char *const *member_names; /* STRUCT: their names */
    const QdHandle *member_values;   /* STRUCT: their values (stand-ins or Python values) */
    const char *name;   /* the variable it was read from (for messages), or NULL */
} QdRuntimeFacts;

/* What the host says about a value. Strings stay valid for the compilation. */
typedef struct QdHostValue {
    QdHostKind kind;    /* what it is */
    int64_t ival;       /* BOOL, INT (is_big: INT64_MAX / INT64_MIN by the sign) */
    bool is_big;        /* INT outside int64; then str is its decimal text, fval float(value),
                           and big_u64 says it is in [2^63, 2^64) with ubits its bits */
    bool big_u64;
    uint64_t ubits;
    double fval;        /* FLOAT */
    const char *str;    /* STR; BUILTIN name ("sqrt", "range", "static", "ndrange", ...) */
    uint32_t len;       /* TUPLE, LIST */
    QdTypeKind dtype;   /* DTYPE, FIELD, NDARRAY_ANNOTATION element type */
    int32_t ndim;       /* FIELD; NDARRAY_ANNOTATION (-1 = any) */
    uint32_t field_id;  /* FIELD: the runtime's id; the QIR field is named "f<id>" */
    int64_t shape[16];  /* FIELD: canonical extents */
    uint8_t order[16];  /* FIELD: canonical axis stored at each physical position, outermost
                           first (the identity unless the field was made with `order=`) */
    int64_t offset[16]; /* FIELD: index origin of each canonical axis (`offset=`, usually 0) */
} QdHostValue;

/* Callbacks the frontend uses. Each returns 0 on success and -1 with ctx->diag set on failure;
 * `lookup` and `getattr` return 1 when the name does not exist (no diag). `scope` is the handle of
 * the Python function whose globals and closure apply (the kernel, or an inlined func). */
typedef struct QdHost {
    void *self; /* the host's state */
    int (*lookup)(void *self, QdCtx *ctx, QdHandle scope, const char *name, QdHandle *out);
    int (*describe)(void *self, QdCtx *ctx, QdHandle h, QdHostValue *out);
    int (*getattr)(void *self, QdCtx *ctx, QdHandle h, const char *name, QdHandle *out);
    int (*getitem)(void *self, QdCtx *ctx, QdHandle h, uint32_t index, QdHandle *out);
    /* Evaluates the Python expression node `pynode` in the globals of `scope`, with the given
     * compile-time locals bound. Exceptions become QuadrantsCompilationError diags. */
    int (*eval)(void *self, QdCtx *ctx, QdHandle scope, uint32_t pynode, const char *const *names,
                const QdHandle *values, uint32_t n, QdHandle *out);
    /* Calls a Python callable at trace time with compile-time arguments. */
    int (*call)(void *self, QdCtx *ctx, QdHandle fn, const QdHandle *args, uint32_t n,
                QdHandle *out);
    /* The items of any Python iterable as a new tuple (`tuple(obj)`), for static loops. */
    int (*to_tuple)(void *self, QdCtx *ctx, QdHandle h, QdHandle *out);
    /* Python truthiness (`bool(obj)`), for `if qd.static(...)`. */
    int (*truth)(void *self, QdCtx *ctx, QdHandle h, bool *out);
    /* The AST of a @qd.func (converted once per function and cached), allocated in `arena`. */
    int (*func_ast)(void *self, QdCtx *ctx, QdHandle fn, QdArena *arena, QdAst **out);
    /* Handles for values the frontend creates. */
    int (*make_int)(void *self, QdCtx *ctx, int64_t v, QdHandle *out);
    /* A Python int from its decimal text (literals outside int64). */
    int (*parse_int)(void *self, QdCtx *ctx, const char *text, QdHandle *out);
    /* Python arithmetic on Python numbers (ints of any size): `op` is a binary operator ("+", "-",
     * "*", "/", "//", "%", "**", "<<", ">>", "&", "|", "^"), a comparison ("==", "!=", "<", "<=",
     * ">", ">=") or, with b = 0, a unary one ("neg", "~", "abs"). Exceptions become diags. */
    int (*number_op)(void *self, QdCtx *ctx, const char *op, QdHandle a, QdHandle b, QdHandle *out);
    int (*make_float)(void *self, QdCtx *ctx, double v, QdHandle *out);
    int (*make_tuple)(void *self, QdCtx *ctx, const QdHandle *items, uint32_t n, QdHandle *out);
    /* A str handle; s NULL gives None. */
    int (*make_str)(void *self, QdCtx *ctx, const char *s, QdHandle *out);
    /* A stand-in for a runtime value inside static evaluation: it answers compile-time questions
     * (a vector's n, an element dtype) and describes as QD_HOST_RUNTIME with facts->index. */
    int (*make_runtime)(void *self, QdCtx *ctx, const QdRuntimeFacts *facts, QdHandle *out);
    /* Prints at trace time (qd.static_print). */
    int (*print)(void *self, QdCtx *ctx, const char *text);
    /* Emits a Python warning (category "QuadrantsCastWarning", "SyntaxWarning", "UserWarning"). */
    int (*warn)(void *self, QdCtx *ctx, const char *category, QdLoc loc, const char *message);
} QdHost;

/***** lowering (lower_*.c) *****/

/* QdArgKind (scalar, ndarray, template) is the table abi/args.def. */

/* One kernel parameter of the specialization being compiled. */
typedef struct QdKernelArg {
    const char *name;  /* parameter name */
    QdArgKind kind;    /* how it is passed */
    QdTypeKind dtype;  /* SCALAR, NDARRAY: element type */
    uint32_t ndim;     /* NDARRAY: every axis, the element's included */
    /* NDARRAY: the trailing axes that form one vector/matrix element (0 for scalar elements) and
     * their extents. The code is compiled for these extents: every launch checks them. */
    uint32_t elem_ndim;
    uint32_t elem_shape[2];
    /* NDARRAY with a physical layout (qd.tensor(..., layout=)): has_layout, and the canonical
     * axis stored at each physical position, outermost first. The memory passed at launch has
     * the physical shape; kernels index it with canonical indices. Scalar elements only. */
    bool has_layout;
    uint8_t layout[16];
    QdHandle value;    /* TEMPLATE: the argument's value */
} QdKernelArg;

/* Options that change the code (part of every cache key). */
typedef struct QdFrontendOptions {
    QdTypeKind default_fp;   /* float literals and `float` (f32) */
    QdTypeKind default_ip;   /* int literals and `int` (i32) */
    bool debug;              /* kernel asserts are checked */
    bool bounds_check;       /* field / ndarray indices are checked (debug or check_out_of_bound) */
    bool short_circuit;      /* `and` / `or` short-circuit */
    uint32_t unrolling_limit; /* warn past this many static iterations (0 = never) */
    const char *simt_unsupported_arch; /* non-NULL: the arch cannot run qd.simt calls (the CPU
                                          without cpu_simt); each is rejected where it is made */
    uint32_t subgroup_size;  /* lanes per subgroup of the target (a power of two; 0 = 32): the
                                value of qd.simt.subgroup.group_size() and the width of the
                                collectives */
    bool tensor_cores;       /* the target runs mma.sync m16n8k16 (CUDA sm_80 and later, and its
                                emulation under cpu_simt): qd.nn products of f16 vectors by f16
                                matrices are marked for nn_lower's tensor-core path */
    bool lacks_atomic_int64; /* the target has no 64-bit atomics on global memory (a Vulkan
                                device without shaderBufferInt64Atomics): the GPU scan keeps a
                                4-byte element's tile states in three arrays, not u64 words */
    uint32_t max_shared_bytes; /* shared memory one block of the target may use (0: the 48 KiB
                                  of a CUDA block's static shared memory): qd.algorithms size
                                  their tiles to it */
} QdFrontendOptions;

/* What the launcher needs to know about a lowered kernel besides its QIR. */
typedef struct QdKernelInfo {
    uint32_t nreturns;          /* number of return values */
    QdTypeKind returns[QD_MAX_RESULTS]; /* their types */
    bool has_print;             /* sync after every launch */
    int32_t rng_param;          /* index of the hidden u64 seed parameter, -1 when the kernel
                                   draws no random numbers; the launcher passes a fresh seed
                                   (from random_seed and a launch counter) every launch */
} QdKernelInfo;

/* Lowers kernel `def` (scope = its Python function) for one argument signature into a new QIR
 * kernel named `name` in `m` (plus the field declarations it uses). `ret_annotation` is the
 * evaluated return annotation (Python evaluates annotations where the function is defined, so
 * names they use need not be in its closure), 0 to evaluate the AST's. NULL with a diag. */
QdFunc *qd_frontend_lower_kernel(QdCtx *ctx, QdModule *m, const QdHost *host, QdHandle scope,
                                 const QdAst *def, const char *name, const QdKernelArg *args,
                                 uint32_t nargs, QdHandle ret_annotation,
                                 const QdFrontendOptions *opt, QdKernelInfo *info);

/* The flags of builtins.def rows: BI_ELEMENTWISE, BI_EXPORTED, ... (the Python layer exports
 * them with the table) */
enum {
#define QD_BUILTIN_FLAG(NAME, text) BI_BIT_##NAME,
#include "builtins.def"
#undef QD_BUILTIN_FLAG
};
enum {
#define QD_BUILTIN_FLAG(NAME, text) BI_##NAME = 1 << BI_BIT_##NAME,
#include "builtins.def"
#undef QD_BUILTIN_FLAG
};

#endif /* QD_FRONTEND_H */
