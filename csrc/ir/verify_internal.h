/* ir/verify_internal.h -- state shared by the three files of the IR verifier.
 *
 * ir_verify.c walks the module: placement rules (what may sit where), dominance and single
 * definition of values, region nesting, and the well-formedness of types and compile-time
 * expressions. ir_verify_types.c holds the per-instruction typing rules, one case per QdSig of
 * ops.def; ir_verify_call.c the rules of `call` and `ret`.
 * Nothing outside these two files includes this header.
 */
#ifndef QD_VERIFY_INTERNAL_H
#define QD_VERIFY_INTERNAL_H

#include "ir.h"

/* Bits of Verifier.state, one byte per value id of the function being checked. */
enum {
    VAL_DEFINED = 1, /* a parameter or an instruction has defined it (at most once) */
    VAL_VISIBLE = 2, /* its definition dominates the instruction being checked */
    VAL_UNROLL = 4,  /* it is the variable of an enclosing `unroll` (usable in cexprs) */
};

/* What a check asks of a scalar type. */
typedef enum TyClass {
    TC_SCALAR, /* any scalar but void */
    TC_INT,    /* an integer type, u1 included */
    TC_FLOAT,  /* a floating-point type */
} TyClass;

/* The verifier's state for one module; fields from `f` on are per function. */
typedef struct Verifier {
    QdCtx *ctx;          /* where the first error goes */
    QdModule *m;         /* module being checked */
    unsigned flags;      /* QD_VERIFY_* */
    QdFunc *f;           /* function being checked, NULL while checking fields */
    uint8_t *state;      /* VAL_* bits per value id of f (scratch, from the module arena) */
    uint32_t *scope;     /* ids made visible, in definition order; regions pop back to a mark */
    uint32_t nscope;     /* number of entries in scope */
    char tybuf[3][160];  /* printed types for messages (three can appear in one message) */
    char namebuf[2][96]; /* printed value names for messages */
} Verifier;

/* ir_verify.c */

/* Reports an error about `inst` (or, with inst NULL, about the function being checked) and
 * returns -1. The message reads "verify: `mnemonic`: ..." and points at the .qir line. */
int verify_fail(Verifier *v, const QdInst *inst, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "%name" (or "%id" for unnamed values) of value `id`, in one of two message slots. */
const char *verify_value_name(Verifier *v, int slot, uint32_t id);
/* The type, in one of three message slots ("<no type>" when missing). */
const char *verify_type_name(Verifier *v, int slot, const QdType *ty);
/* The template parameter `name` of the function being checked, or NULL. */
const QdTParam *verify_find_tparam(const Verifier *v, const char *name);
/* Checks that a type is well formed where it is used: arrays only behind local or shared
 * pointers, template parameters declared by the enclosing template, nothing generic in a
 * codegen-ready module. `inst` is the instruction to blame, or NULL for the function. */
int verify_type(Verifier *v, const QdInst *inst, const QdType *ty);
/* As verify_type, for the type of a value: also rejects void and bare arrays. */
int verify_value_type(Verifier *v, const QdInst *inst, const QdType *ty);
/* Checks a compile-time expression: parameters are integer template parameters, variables are
 * visible unroll variables. */
int verify_cexpr(Verifier *v, const QdInst *inst, const QdCexpr *e);

/* ir_verify_types.c */

/* Immediate, operand count, result presence and typing rule of one instruction. Operands are
 * already known to be visible values with a type. */
int verify_inst_types(Verifier *v, QdInst *inst);
/* Type of operand k of inst, or NULL when there is no such operand. */
const QdType *verify_arg_type(const Verifier *v, const QdInst *inst, uint32_t k);
/* 0 when ty is in the class; else reports "<what> must be <class>, got <ty>". */
int verify_need_class(Verifier *v, const QdInst *inst, const char *what, const QdType *ty,
                      TyClass cls);
/* 0 when a and b are equal types; else reports "<what> differ (a, b)". */
int verify_need_equal(Verifier *v, const QdInst *inst, const char *what, const QdType *a,
                      const QdType *b);

/* ir_verify_call.c */

/* SIG_CALL: the callee exists and is no kernel; template and value arguments and the result
 * match its signature. */
int verify_call(Verifier *v, const QdInst *inst);
/* SIG_RET: a value exactly when the function has a result type, of that type. */
int verify_ret(Verifier *v, const QdInst *inst);

#endif /* QD_VERIFY_INTERNAL_H */
