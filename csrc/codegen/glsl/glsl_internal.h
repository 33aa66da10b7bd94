/* codegen/glsl/glsl_internal.h -- what the files of the GLSL emitter share.
 *
 * One Emitter per qd_glsl_emit call. Kernel-wide facts (tmp slots, the field table, asserts)
 * live for the whole call; the per-task part (the text buffers, the types, helpers and
 * extensions the shader uses, the partial_* accumulators) is reset before each task.
 *
 * Files:
 *   glsl_emit.c        entry points, kernel layout (tmps, results, fields), feature checks,
 *                      regions and control flow, assembly of a shader's text
 *   glsl_emit_task.c   serial tasks, range_for tasks: prologue, grid-/block-stride loops,
 *                      partial_* accumulators and their flush
 *   glsl_emit_ops.c    value instructions: arithmetic, comparisons, casts, math, helpers
 *   glsl_math.c        double math helpers (exp, log, pow, ...), correctly rounded division
 *   glsl_math_trig.c   their trigonometric part
 *   glsl_emit_mem.c    parameters, addresses, loads, stores, kernel_ret, assert
 *   glsl_emit_atomic.c atomics (native or compare-and-swap loops), partial_* accumulators
 *   glsl_emit_simt.c   SIMT instructions, fences and shared memory
 *   glsl_types.c       GLSL types, literals, buffer reference declarations, extensions
 */
#ifndef QD_GLSL_INTERNAL_H
#define QD_GLSL_INTERNAL_H

#include "glsl.h"

/* Helper functions a shader defines only when it uses them (glsl_emit_ops.c writes them),
 * each per type (and for H_F2I per source and destination type). */
typedef enum GlslHelper {
    H_DIV,      /* integer a / b: 0 for b == 0, -a for b == -1 */
    H_REM,      /* integer C remainder, 0 for b == 0 or -1 */
    H_FLOORDIV, /* integer Python a // b */
    H_FLOORMOD, /* integer Python a % b */
    H_IPOW,     /* integer a ** b by squaring; 1 for b < 0 */
    H_FMIN,     /* float min, the non-NaN operand wins */
    H_FMAX,     /* float max, likewise */
    H_FPOW,     /* float a ** b with C pow's signs for negative bases */
    H_FREM,     /* float C fmod */
    H_ROUND,    /* round half away from zero */
    H_F2I,      /* saturating float -> integer cast, NaN -> 0 */
    H_F64_BITS, /* the bits of the double nearest a float, without float64 */
    H_CLOCK,    /* the 64-bit clock from halves read high, low, high (untorn) */
    /* double math (glsl_math.c), one definition each (marked for f64), in dependency order */
    H_M_MUL2,    /* qd_mul2_f64: a * b = hi + lo exactly (Dekker, without fma) */
    H_M_SCALE,   /* qd_scale_f64(x, n): x * 2^n in two steps; qd_pow2_f64(n) */
    H_M_DIV,     /* qd_div_f64: a / b refined to the correctly rounded quotient */
    H_M_SQRT,    /* qd_sqrt_f64: sqrt refined likewise */
    H_M_EXPCORE, /* qd_expcore_f64: e^(x + xl) = 2^k (1 + p) */
    H_M_EXP,     /* qd_exp_f64 */
    H_M_EXPM1,   /* qd_expm1_f64, for 0 <= x <= 50 */
    H_M_TANH,    /* qd_tanh_f64 */
    H_M_LOGDD,   /* qd_logdd_f64: log in double-double */
    H_M_LOG,     /* qd_log_f64 */
    H_M_POW,     /* qd_pow_f64: C pow */
    H_M_REDUCE,  /* qd_reduce_f64: x = n pi/2 + r (glsl_math_trig.c from here on) */
    H_M_SINK,    /* qd_sink_f64: sin on [-pi/4, pi/4] */
    H_M_COSK,    /* qd_cosk_f64: cos on [-pi/4, pi/4] */
    H_M_SIN,     /* qd_sin_f64 */
    H_M_COS,     /* qd_cos_f64 */
    H_M_TAN,     /* qd_tan_f64 */
    H_M_ATAN,    /* qd_atan_f64 */
    H_M_ATAN2,   /* qd_atan2_f64: C atan2 */
    H_M_ASIN,    /* qd_asin_f64 */
    H_M_ACOS,    /* qd_acos_f64 */
    H_M_FDIV32,  /* qd_fdiv_f32: correctly rounded float division (through double if any) */
    H_M_FSQRT32, /* qd_fsqrt_f32: correctly rounded float sqrt (likewise) */
    H_M_D2H,     /* qd_d2h_f64: double -> float16_t rounded once (through float rounded to odd) */
    H_COUNT
} GlslHelper;

/* Extensions (and with them device features) a shader uses; one bit each. */
enum {
    X_INT8 = 1u << 0,          /* GL_EXT_shader_explicit_arithmetic_types_int8 */
    X_INT16 = 1u << 1,         /* ..._int16 */
    X_FLOAT16 = 1u << 2,       /* ..._float16 */
    X_STORAGE8 = 1u << 3,      /* GL_EXT_shader_8bit_storage */
    X_STORAGE16 = 1u << 4,     /* GL_EXT_shader_16bit_storage */
    X_ATOMIC_INT64 = 1u << 5,  /* GL_EXT_shader_atomic_int64 */
    X_ATOMIC_FLOAT = 1u << 6,  /* GL_EXT_shader_atomic_float */
    X_ATOMIC_FLOAT2 = 1u << 7, /* GL_EXT_shader_atomic_float2 */
    X_SG_BASIC = 1u << 8,      /* GL_KHR_shader_subgroup_basic */
    X_SG_ARITH = 1u << 9,      /* GL_KHR_shader_subgroup_arithmetic */
    X_SG_BALLOT = 1u << 10,    /* GL_KHR_shader_subgroup_ballot */
    X_SG_SHUFFLE = 1u << 11,   /* GL_KHR_shader_subgroup_shuffle */
    X_SG_RELATIVE = 1u << 12,  /* GL_KHR_shader_subgroup_shuffle_relative */
    X_SG_VOTE = 1u << 13,      /* GL_KHR_shader_subgroup_vote */
    X_CLOCK = 1u << 14,        /* GL_ARB_shader_clock */
};

/* Where a pointer value points, as the emitter represents it (GlslValue.name holds the rest). */
typedef enum GlslPtrKind {
    PTR_NONE,    /* not a pointer */
    PTR_GLOBAL,  /* a uint64_t device address held in the variable `name` */
    PTR_LVALUE,  /* local or shared memory: `name` is an lvalue (`v12`, `v7[v9][v3]`) */
} GlslPtrKind;

/* What the emitter knows of one QIR value. */
typedef struct GlslValue {
    const char *name;  /* GLSL expression: a variable, or an lvalue for PTR_LVALUE; NULL until
                          the value is defined (parameters and tmp slots: until first use) */
    GlslPtrKind ptr;   /* kind of pointer */
    bool is_bits;      /* PTR_LVALUE into a shared array kept as uint bits (float atomics
                          without device support) */
} GlslValue;

/* An assert of the kernel: its message and the kind letters of its values. */
typedef struct GlslAssert {
    const char *format; /* message (printf format when it has values) */
    char *kinds;        /* 'i', 'u' or 'f' per value */
} GlslAssert;

typedef struct Emitter {
    QdCtx *ctx;
    QdModule *m;
    QdFunc *kernel;
    const QdGlslOptions *opts;
    const uint32_t *arg_offsets; /* qd_arg_layout's offset of each parameter */
    uint32_t args_size;          /* bytes of packed arguments */
    QdArena arena;               /* the call's scratch memory */

    GlslValue *values;     /* per value id */
    uint32_t *tmp_offsets; /* per tmp_alloc value id: its offset in the tmps */
    uint32_t tmps_size;    /* bytes of tmp slots */
    QdField **fields;      /* the field table: the fields the kernel reads, in module order */
    uint32_t nfields;
    QdVec(GlslAssert) asserts; /* in id order */
    QdVec(GlslAssert) prints;  /* the prints' formats and kinds, in id order */
    bool has_asserts;          /* the kernel has an assert: every task checks the flag */

    /* the task being emitted */
    QdSbuf body;          /* main's body */
    QdSbuf hoist;         /* main's first statements: parameter reads, local declarations */
    QdSbuf globals;       /* shared variables */
    int indent;           /* nesting depth of body lines */
    unsigned ext;         /* X_* bits */
    bool refs[QD_TY_COUNT_];  /* QdRef_<type> declared */
    bool vrefs[QD_TY_COUNT_]; /* QdVolatileRef_<type> declared */
    bool helpers[H_COUNT][QD_TY_COUNT_][QD_TY_COUNT_]; /* helper, type (, second type) used */
    bool coherent;        /* the task has fences or volatile loads: buffer refs are coherent */
    bool sync_counter;    /* the shader declares the block_sync_* counter */
    uint32_t block_dim;   /* local_size_x */
    bool is_range;        /* a range_for task */
    uint32_t *nd_hoisted; /* per parameter: bit 31 data, bit k extent k, already read */
    bool *field_hoisted;  /* per field table index */
    bool tail_hoisted[4]; /* results, tmps, runtime state, print buffer */
    QdVec(const QdInst *) partials; /* the task's partial_* accumulators */
    uint32_t ntemps;      /* counter for fresh temporaries */
} Emitter;

/***** glsl_emit.c *****/

QdLoc qd_glsl_loc(const QdInst *inst);
/* Appends one line of main's body at the current indentation. */
void qd_glsl_line(Emitter *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A string in the call's arena (NULL when out of memory; the caller reports it). */
char *qd_glsl_str(Emitter *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The GLSL expression of value id (parameters and tmp slots are read on first use). */
const char *qd_glsl_value(Emitter *e, uint32_t id);
/* Defines the result of inst as `T v<id> = expr;`. */
int qd_glsl_define(Emitter *e, const QdInst *inst, const char *expr);
/* Error helpers. */
int qd_glsl_nomem(Emitter *e, const QdInst *inst);
int qd_glsl_unsupported(Emitter *e, const QdInst *inst, const char *what, const char *why);
int qd_glsl_emit_region(Emitter *e, const QdRegion *r);
int qd_glsl_emit_inst(Emitter *e, const QdInst *inst);

/***** glsl_emit_task.c *****/

int qd_glsl_emit_task(Emitter *e, const QdInst *task, uint32_t index, QdGlslTask *out);
/* Whether region r holds barriers, subgroup operations or shared memory. */
bool qd_glsl_has_block_ops(const QdRegion *r);

/***** glsl_emit_ops.c *****/

/* The expression of `a OP b` on type ty (arithmetic, bitwise, shifts with b of type ty). */
const char *qd_glsl_binary(Emitter *e, QdOp op, const QdType *ty, const char *a, const char *b);
/* The expression converting v of type `from` to type `to` (cast semantics of ops.def). */
const char *qd_glsl_cast(Emitter *e, const QdType *from, const QdType *to, const char *v);
/* Whether v (of type ty) is nonzero, as a bool expression. */
const char *qd_glsl_truth(Emitter *e, const QdType *ty, const char *v);
/* `qd_clock_i64()`: the cycle counter, through its helper. */
const char *qd_glsl_clock(Emitter *e);
int qd_glsl_emit_op(Emitter *e, const QdInst *inst);
/* Writes the definitions of the helpers the shader uses. */
void qd_glsl_write_helpers(Emitter *e, QdSbuf *out);

/***** glsl_math.c *****/

/* Marks math helper h (H_M_*) and those it calls; returns its name ("qd_exp_f64"). */
const char *qd_glsl_math(Emitter *e, GlslHelper h);
void qd_glsl_write_math(Emitter *e, QdSbuf *out, GlslHelper h);
/* A call of double math helper h on a (and b) of float kind k: f32 and f16 converted to
 * double and back (only where the device has float64). */
const char *qd_glsl_math_call(Emitter *e, GlslHelper h, QdTypeKind k, const char *a,
                              const char *b);
/* Correctly rounded a / b and sqrt(a) of float kind k (f16: the native operation). */
const char *qd_glsl_fdiv(Emitter *e, QdTypeKind k, const char *a, const char *b);
const char *qd_glsl_sqrt(Emitter *e, QdTypeKind k, const char *a);

/***** glsl_math_trig.c *****/

/* The text of trigonometric helper h (H_M_REDUCE ... H_M_ACOS). */
const char *qd_glsl_trig_text(GlslHelper h);

/***** glsl_emit_mem.c *****/

int qd_glsl_emit_mem(Emitter *e, const QdInst *inst);
int qd_glsl_emit_assert(Emitter *e, const QdInst *inst);
/* Writes helper H_F64_BITS, named `name`. */
void qd_glsl_write_f64_bits(QdSbuf *out, const char *name);
/* Reads of the parameter buffer's tail (hoisted): "qd_results", "qd_tmps", "qd_rt". */
const char *qd_glsl_tail(Emitter *e, int which);
/* print "fmt", values: one record in the print buffer (abi.h: QD_VK_PRINT_BYTES). */
int qd_glsl_emit_print(Emitter *e, const QdInst *inst);

/***** glsl_emit_atomic.c *****/

int qd_glsl_emit_atomic(Emitter *e, const QdInst *inst);
int qd_glsl_emit_partial(Emitter *e, const QdInst *inst);
/* The functions turning float kind k into its bits and back (uint / uint64_t). */
const char *qd_glsl_from_bits_fn(QdTypeKind k);
const char *qd_glsl_to_bits_fn(QdTypeKind k);
/* An atomic read-modify-write `op` of value expression v (type ty) on pointer value ptr;
 * result: the variable to receive the old value, or NULL. */
int qd_glsl_atomic(Emitter *e, const QdInst *at, QdOp op, const QdType *ty, uint32_t ptr,
                   const char *v, const char *v2, const char *result);
/* Marks the task's shared variables that float atomics reach as kept in uint bits. */
void qd_glsl_mark_bits_storage(Emitter *e, const QdRegion *r);

/***** glsl_emit_simt.c *****/

int qd_glsl_emit_simt(Emitter *e, const QdInst *inst);

/***** glsl_types.c *****/

/* The GLSL register type of a scalar kind ("float", "int64_t", "bool"). */
const char *qd_glsl_type(Emitter *e, QdTypeKind kind);
/* The GLSL declaration suffix of a (nested) array type ("[4][3]") and its scalar element. */
const QdType *qd_glsl_array_dims(const QdType *ty, char *dims, size_t size);
/* Bytes of a scalar in memory (u1: 1); arrays: the product. */
uint32_t qd_glsl_size(const QdType *ty);
/* A literal of kind k: integer value i or u, float value f. */
const char *qd_glsl_literal(Emitter *e, QdTypeKind k, const QdConst *c);
const char *qd_glsl_int_literal(Emitter *e, QdTypeKind k, int64_t v);
/* `QdRef_<t>(addr).v` (declaring the reference type), the lvalue of a scalar in memory. */
const char *qd_glsl_ref(Emitter *e, QdTypeKind k, const char *addr, bool is_volatile);
/* Loads and stores of a global scalar with the register <-> memory conversions (u1 bytes). */
const char *qd_glsl_load_global(Emitter *e, QdTypeKind k, const char *addr, bool is_volatile);
void qd_glsl_store_global(Emitter *e, QdTypeKind k, const char *addr, const char *v);
/* The preamble of a shader: version, extensions, buffer reference types, push constants. */
void qd_glsl_write_preamble(Emitter *e, QdSbuf *out);
/* The unsigned type of the same width as k (u1: bool), the signed one. */
QdTypeKind qd_glsl_unsigned_of(QdTypeKind k);
QdTypeKind qd_glsl_signed_of(QdTypeKind k);

#endif /* QD_GLSL_INTERNAL_H */
