/* passes/pipeline.c -- runs passes by name, in the order the caller lists them.
 *
 * The table below is expanded from passes.def, so a pass exists in exactly one list. A module
 * pass runs once on the module; a function pass runs on every kernel and func (templates are
 * declarations: they are only read, through instantiation). The list is checked as a whole
 * before anything runs, so a typo costs nothing. With verify_each the verifier runs after every
 * pass (the tests always ask for it), the way a checker runs between passes in small compilers,
 * and a failure names the pass that broke the IR.
 *
 * Used by the compile driver (qd_run_pipeline: every pass of passes.def, in its order), by qdopt
 * and by the test hooks (qd_run_passes: the passes they list).
 */
#include "passes.h"

#include <stdio.h>
#include <string.h>

/* Runs a module pass once. */
static int
run_on_PASS_MODULE(QdPassCtx *pc, QdModule *m, int (*pass)(QdPassCtx *, QdModule *))
{
    return pass(pc, m);
}

/* Runs a function pass on every kernel and func, in module order. */
static int
run_on_PASS_FUNC(QdPassCtx *pc, QdModule *m, int (*pass)(QdPassCtx *, QdFunc *))
{
    for (uint32_t i = 0; i < m->funcs.len; i++) {
        QdFunc *f = m->funcs.data[i];
        if (f->kind != QD_FUNC_TEMPLATE) {
            RETURN_IF_ERROR(pass(pc, f));
        }
    }
    return 0;
}

/* One adapter per pass, so that all of them fit one table. */
#define QD_PASS(name, text, scope, descr)                                                          \
    static int run_##name(QdPassCtx *pc, QdModule *m)                                             \
    {                                                                                              \
        return run_on_##scope(pc, m, qd_pass_##name);                                              \
    }
#include "passes.def"
#undef QD_PASS

/* A pass as the pipeline sees it: every pass, whatever its scope, runs on a module. */
typedef struct PassInfo {
    const char *name;                        /* name in pass lists */
    int (*run)(QdPassCtx *pc, QdModule *m);  /* runs the pass on the whole module */
} PassInfo;

static const PassInfo pass_table[] = {
#define QD_PASS(name, text, scope, descr) {text, run_##name},
#include "passes.def"
#undef QD_PASS
};

#define NPASSES QD_ARRAY_LEN(pass_table)

/* The names again as a plain NULL-terminated list, for qd_pass_names (usage texts, tests). */
static const char *const pass_names[NPASSES + 1] = {
#define QD_PASS(name, text, scope, descr) text,
#include "passes.def"
#undef QD_PASS
    NULL,
};

const char *const *
qd_pass_names(void)
{
    return pass_names;
}

/* The pass called s[0..len), or NULL. */
static const PassInfo *
find_pass(const char *s, size_t len)
{
    for (size_t i = 0; i < NPASSES; i++) {
        if (strlen(pass_table[i].name) == len && memcmp(pass_table[i].name, s, len) == 0) {
            return &pass_table[i];
        }
    }
    return NULL;
}

/* The error lists the known passes, which is what a user who mistyped one needs to see. */
static int
unknown_pass(QdCtx *ctx, const char *s, size_t len)
{
    char known[512] = "";
    size_t used = 0;
    for (size_t i = 0; i < NPASSES; i++) {
        int n = snprintf(known + used, sizeof(known) - used, "%s%s", i ? ", " : "",
                         pass_table[i].name);
        if (n < 0 || (size_t)n >= sizeof(known) - used) {
            break;
        }
        used += (size_t)n;
    }
    QdLoc none = {NULL, 0, 0};
    return qd_error(ctx, none, QD_ERR_COMPILATION, "unknown pass '%.*s' (known: %s)", (int)len,
                    s, known);
}

/* Splits the list on commas (spaces around names are ignored, empty entries skipped) into at
 * most `cap` passes. */
static int
parse_list(QdCtx *ctx, const char *list, const PassInfo **out, size_t cap, size_t *count)
{
    *count = 0;
    const char *s = list ? list : "";
    while (*s) {
        while (*s == ' ' || *s == ',') {
            s++;
        }
        const char *end = s;
        while (*end && *end != ',') {
            end++;
        }
        size_t len = (size_t)(end - s);
        while (len > 0 && s[len - 1] == ' ') {
            len--;
        }
        if (len == 0) {
            s = end;
            continue;
        }
        const PassInfo *pass = find_pass(s, len);
        if (!pass) {
            return unknown_pass(ctx, s, len);
        }
        if (*count == cap) {
            QdLoc none = {NULL, 0, 0};
            return qd_error(ctx, none, QD_ERR_COMPILATION, "more than %zu passes in one list",
                            cap);
        }
        out[(*count)++] = pass;
        s = end;
    }
    return 0;
}

/* Puts "after pass 'x': " in front of the verifier's message (truncating its end if need be). */
static void
blame_pass(QdCtx *ctx, const char *pass)
{
    char prefix[128];
    char *message = ctx->diag.message;
    snprintf(prefix, sizeof(prefix), "after pass '%s': ", pass);
    size_t plen = strlen(prefix);
    size_t mlen = strlen(message);
    if (plen + mlen >= QD_DIAG_MSG_MAX) {
        mlen = QD_DIAG_MSG_MAX - 1 - plen;
    }
    memmove(message + plen, message, mlen);
    memcpy(message, prefix, plen);
    message[plen + mlen] = '\0';
}

/* Runs passes[0..npasses) in order. One scratch arena serves the whole list: each pass marks it
 * on entry and resets it on exit, so its memory is reused from pass to pass and freed at the
 * end. */
static int
run_list(QdCtx *ctx, QdModule *m, const PassInfo *const *passes, size_t npasses,
         bool verify_each)
{
    QdPassCtx pc = {ctx, {0}, verify_each};
    qd_arena_init(&pc.scratch);
    int rc = 0;
    for (size_t i = 0; i < npasses && rc == 0; i++) {
        rc = passes[i]->run(&pc, m);
        if (rc == 0 && verify_each) {
            rc = qd_module_verify(ctx, m, QD_VERIFY_DEFAULT);
            if (rc < 0) {
                blame_pass(ctx, passes[i]->name);
            }
        }
    }
    qd_arena_free(&pc.scratch);
    return rc;
}

int
qd_run_passes(QdCtx *ctx, QdModule *m, const char *pass_list, bool verify_each)
{
    const PassInfo *passes[64];
    size_t npasses;
    RETURN_IF_ERROR(parse_list(ctx, pass_list, passes, QD_ARRAY_LEN(passes), &npasses));
    return run_list(ctx, m, passes, npasses, verify_each);
}

int
qd_run_pipeline(QdCtx *ctx, QdModule *m, bool verify_each)
{
    const PassInfo *passes[NPASSES];
    for (size_t i = 0; i < NPASSES; i++) {
        passes[i] = &pass_table[i];
    }
    return run_list(ctx, m, passes, NPASSES, verify_each);
}
