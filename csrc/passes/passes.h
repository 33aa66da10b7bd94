/* passes/passes.h -- the pass pipeline we own: few passes, one per file, text-in/text-out tested.
 *
 * LLVM's optimizer does the generic scalar work; these passes do what only we can: instantiate
 * our templates, inline, and clean up enough that the code generators see simple IR. Each pass
 * leaves the module valid for qd_module_verify (tests verify after every pass).
 */
#ifndef QD_PASSES_H
#define QD_PASSES_H

#include "../ir/ir.h"

/* What a pass gets besides the IR. */
typedef struct QdPassCtx {
    QdCtx *ctx;       /* where errors go */
    QdArena scratch;  /* scratch memory; a pass takes a mark on entry and resets it on exit */
    bool verify_each; /* run the verifier after every pass (tests, QD_VERIFY=1) */
} QdPassCtx;

/***** pipeline.c *****/

/* Runs a comma-separated list of pass names ("instantiate,inline,constfold") in that order.
 * -1 with a diag on an unknown name, a failing pass, or a verifier failure after a pass. */
int qd_run_passes(QdCtx *ctx, QdModule *m, const char *pass_list, bool verify_each);
/* Runs the pipeline every kernel goes through: each pass of passes.def once, in the table's
 * order. -1 with a diag as qd_run_passes. */
int qd_run_pipeline(QdCtx *ctx, QdModule *m, bool verify_each);
/* Names of the passes, in pipeline order, NULL-terminated. */
const char *const *qd_pass_names(void);

/***** one entry point per pass (passes.def) *****/
#define PASS_MODULE QdModule
#define PASS_FUNC QdFunc
#define QD_PASS(name, text, scope, descr) int qd_pass_##name(QdPassCtx *pc, scope *unit);
#include "passes.def"
#undef QD_PASS
#undef PASS_MODULE
#undef PASS_FUNC

#endif /* QD_PASSES_H */
