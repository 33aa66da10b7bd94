/* base/diag.c -- recording errors as values.
 *
 * qd_error formats a message into ctx->diag and returns -1, so a failing function reads
 * `return qd_error(ctx, loc, QD_ERR_TYPE, "...")`. Only the first error is kept (later ones are
 * counted): it is the one the user sees, and it is usually the cause of the rest. The python layer
 * turns the diag into the exception class errors.def names for its kind.
 */
#include "base.h"

#include <stdio.h>
#include <string.h>

static const char *const err_kind_names[] = {
    "NONE",
#define QD_ERR(kind, pyname, pybase) #kind,
#include "errors.def"
#undef QD_ERR
};

void
qd_ctx_init(QdCtx *ctx)
{
    /* Field by field, not a memset of the 4.6 KB of text buffers: launches make a context per
     * call, and qd_verror writes every field when an error is recorded. */
    ctx->diag.kind = QD_ERR_NONE;
    ctx->diag.message[0] = '\0';
    ctx->diag.file[0] = '\0';
    ctx->diag.line = 0;
    ctx->diag.col = 0;
    ctx->nerrors = 0;
}

void
qd_diag_clear(QdCtx *ctx)
{
    ctx->diag.kind = QD_ERR_NONE;
    ctx->diag.message[0] = '\0';
    ctx->diag.file[0] = '\0';
    ctx->diag.line = ctx->diag.col = 0;
    ctx->nerrors = 0;
}

int
qd_verror(QdCtx *ctx, QdLoc loc, QdErrKind kind, const char *fmt, va_list ap)
{
    ctx->nerrors++;
    if (ctx->diag.kind != QD_ERR_NONE) {
        return -1;
    }
    ctx->diag.kind = kind;
    vsnprintf(ctx->diag.message, sizeof(ctx->diag.message), fmt, ap);
    snprintf(ctx->diag.file, sizeof(ctx->diag.file), "%s", loc.file ? loc.file : "");
    ctx->diag.line = loc.line;
    ctx->diag.col = loc.col;
    return -1;
}

int
qd_error(QdCtx *ctx, QdLoc loc, QdErrKind kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    qd_verror(ctx, loc, kind, fmt, ap);
    va_end(ap);
    return -1;
}

void
qd_diag_format(const QdDiag *diag, char *out, size_t out_size)
{
    if (diag->file[0] && diag->line && diag->col) {
        snprintf(out, out_size, "%s:%u:%u: %s", diag->file, diag->line, diag->col, diag->message);
    } else if (diag->file[0] && diag->line) {
        snprintf(out, out_size, "%s:%u: %s", diag->file, diag->line, diag->message);
    } else if (diag->file[0]) {
        snprintf(out, out_size, "%s: %s", diag->file, diag->message);
    } else if (diag->line && diag->col) {
        snprintf(out, out_size, "line %u:%u: %s", diag->line, diag->col, diag->message);
    } else if (diag->line) {
        snprintf(out, out_size, "line %u: %s", diag->line, diag->message);
    } else {
        snprintf(out, out_size, "%s", diag->message);
    }
}

const char *
qd_err_kind_name(QdErrKind kind)
{
    if ((unsigned)kind >= QD_ARRAY_LEN(err_kind_names)) {
        return "?";
    }
    return err_kind_names[kind];
}
