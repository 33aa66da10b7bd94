/* tests/unit/test_diag.c -- errors as values: qd_error, the QdDiag it fills, and its formatting.
 *
 * qd_error must return -1 (call sites read `return qd_error(...)`), keep only the first error
 * while counting all of them, and copy its text so the diag outlives the caller's buffers.
 * qd_diag_format prints "file:line:col: message" and drops the parts that are unknown. Messages
 * and file names longer than the fixed buffers are truncated, always NUL-terminated.
 */
#include "unit.h"

#include <stdarg.h>
#include <string.h>

/* Goes through qd_verror the way a module-specific reporting helper would. */
static int
report(QdCtx *ctx, QdLoc loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = qd_verror(ctx, loc, QD_ERR_SYNTAX, fmt, ap);
    va_end(ap);
    return rc;
}

/* A stand-in for a core function that fails: the idiom the diag API is built for. */
static int
check_positive(QdCtx *ctx, int value)
{
    if (value <= 0) {
        QdLoc loc = {"kernel.py", 4, 9};
        return qd_error(ctx, loc, QD_ERR_TYPE, "expected a positive value, got %d", value);
    }
    return 0;
}

void
test_diag_error_returns_minus_one(void)
{
    QdCtx ctx;
    qd_ctx_init(&ctx);
    CHECK(ctx.diag.kind == QD_ERR_NONE);
    CHECK_EQ(ctx.nerrors, 0);
    CHECK_STR(ctx.diag.message, "");

    CHECK(check_positive(&ctx, 3) == 0);
    CHECK(ctx.diag.kind == QD_ERR_NONE);
    CHECK(check_positive(&ctx, -2) == -1);
    CHECK(ctx.diag.kind == QD_ERR_TYPE);
    CHECK_STR(ctx.diag.message, "expected a positive value, got -2");
    CHECK_STR(ctx.diag.file, "kernel.py");
    CHECK_EQ(ctx.diag.line, 4);
    CHECK_EQ(ctx.diag.col, 9);
    CHECK_EQ(ctx.nerrors, 1);

    QdLoc nowhere = {NULL, 0, 0};
    CHECK(report(&ctx, nowhere, "%s", "later") == -1);
    CHECK(qd_error(&ctx, nowhere, QD_ERR_NOMEM, "out of memory") == -1);
}

void
test_diag_first_error_wins(void)
{
    QdCtx ctx;
    qd_ctx_init(&ctx);
    char file[] = "first.py";
    QdLoc first = {file, 1, 2};
    QdLoc second = {"second.py", 30, 40};
    CHECK(report(&ctx, first, "first %s", "problem") == -1);
    /* The diag owns a copy of the file name. */
    file[0] = 'X';
    CHECK(qd_error(&ctx, second, QD_ERR_NAME, "second problem") == -1);
    CHECK(qd_error(&ctx, second, QD_ERR_INTERNAL, "third problem") == -1);
    CHECK(ctx.diag.kind == QD_ERR_SYNTAX);
    CHECK_STR(ctx.diag.message, "first problem");
    CHECK_STR(ctx.diag.file, "first.py");
    CHECK_EQ(ctx.diag.line, 1);
    CHECK_EQ(ctx.diag.col, 2);
    CHECK_EQ(ctx.nerrors, 3);

    /* After a clear, the next error is recorded afresh. */
    qd_diag_clear(&ctx);
    CHECK(ctx.diag.kind == QD_ERR_NONE);
    CHECK_EQ(ctx.nerrors, 0);
    CHECK_STR(ctx.diag.message, "");
    CHECK_STR(ctx.diag.file, "");
    CHECK_EQ(ctx.diag.line, 0);
    CHECK(qd_error(&ctx, second, QD_ERR_NAME, "name `%s` is not defined", "foo") == -1);
    CHECK(ctx.diag.kind == QD_ERR_NAME);
    CHECK_STR(ctx.diag.message, "name `foo` is not defined");
    CHECK_STR(ctx.diag.file, "second.py");
    CHECK_EQ(ctx.nerrors, 1);
}

/* Records one error at loc in a fresh context and formats it into out. */
static void
format_at(QdLoc loc, char *out, size_t out_size)
{
    QdCtx ctx;
    qd_ctx_init(&ctx);
    qd_error(&ctx, loc, QD_ERR_TYPE, "bad operand");
    qd_diag_format(&ctx.diag, out, out_size);
}

void
test_diag_format_locations(void)
{
    char out[256];
    QdLoc full = {"k.py", 12, 7};
    format_at(full, out, sizeof(out));
    CHECK_STR(out, "k.py:12:7: bad operand");

    QdLoc no_col = {"k.py", 12, 0};
    format_at(no_col, out, sizeof(out));
    CHECK_STR(out, "k.py:12: bad operand");

    QdLoc line_only = {NULL, 12, 0};
    format_at(line_only, out, sizeof(out));
    CHECK_STR(out, "line 12: bad operand");

    QdLoc nowhere = {NULL, 0, 0};
    format_at(nowhere, out, sizeof(out));
    CHECK_STR(out, "bad operand");

    /* Whatever is printed for a file without a line, the message is there. */
    QdLoc file_only = {"k.py", 0, 0};
    format_at(file_only, out, sizeof(out));
    CHECK(strstr(out, "bad operand") != NULL);

    /* A diag that never recorded an error formats as the empty string. */
    QdCtx ctx;
    qd_ctx_init(&ctx);
    memset(out, 'x', sizeof(out));
    qd_diag_format(&ctx.diag, out, sizeof(out));
    CHECK_STR(out, "");
}

void
test_diag_long_message_truncates(void)
{
    static char long_text[3 * QD_DIAG_MSG_MAX];
    static char long_file[2 * QD_DIAG_FILE_MAX];
    static char out[QD_DIAG_MSG_MAX + QD_DIAG_FILE_MAX + 64];
    memset(long_text, 'm', sizeof(long_text) - 1);
    long_text[sizeof(long_text) - 1] = '\0';
    memset(long_file, 'f', sizeof(long_file) - 1);
    long_file[sizeof(long_file) - 1] = '\0';

    QdCtx ctx;
    qd_ctx_init(&ctx);
    QdLoc loc = {long_file, 5, 6};
    CHECK(qd_error(&ctx, loc, QD_ERR_COMPILATION, "%s", long_text) == -1);
    CHECK_EQ(strlen(ctx.diag.message), QD_DIAG_MSG_MAX - 1);
    CHECK_EQ(strlen(ctx.diag.file), QD_DIAG_FILE_MAX - 1);
    CHECK(ctx.diag.message[0] == 'm' && ctx.diag.file[0] == 'f');

    /* Room for everything: file, ":5:6: " and the truncated message. */
    qd_diag_format(&ctx.diag, out, sizeof(out));
    CHECK_EQ(strlen(out), (QD_DIAG_FILE_MAX - 1) + strlen(":5:6: ") + (QD_DIAG_MSG_MAX - 1));
    CHECK(strstr(out, ":5:6: mmm") != NULL);

    /* A small output buffer is filled and terminated, never overrun. */
    char small[17];
    memset(small, '#', sizeof(small));
    qd_diag_format(&ctx.diag, small, 16);
    CHECK_EQ(strlen(small), 15);
    CHECK(small[16] == '#');

    char one[2] = {'#', '#'};
    qd_diag_format(&ctx.diag, one, 1);
    CHECK(one[0] == '\0' && one[1] == '#');
}

void
test_diag_kind_names(void)
{
    CHECK_STR(qd_err_kind_name(QD_ERR_NONE), "NONE");
    CHECK_STR(qd_err_kind_name(QD_ERR_SYNTAX), "SYNTAX");
    CHECK_STR(qd_err_kind_name(QD_ERR_TYPE), "TYPE");
    CHECK_STR(qd_err_kind_name(QD_ERR_RUNTIME_TYPE), "RUNTIME_TYPE");
    CHECK_STR(qd_err_kind_name(QD_ERR_NOMEM), "NOMEM");
    CHECK_STR(qd_err_kind_name(QD_ERR_COUNT_), "?");
}
