/* tools/qdopt.c -- the IR driver without Python: read a .qir file, run passes, print the result.
 *
 *   qdopt [-p pass,pass,...] [--verify] [--concrete] [file.qir | -]
 *
 * Reads the file (standard input for `-` or no file), parses it, verifies it when --verify is
 * given (and then also after every pass), runs the listed passes in order, checks with
 * --concrete that the result is ready for code generation (no templates left in use, no unroll,
 * no generic types), and prints the module to standard output. With no passes it reformats the
 * file. Errors go to standard error as `file:line:col: error: message` and the exit status is 1;
 * usage errors exit with 2. Like the parser it drives, it never crashes on bad input.
 *
 * This is the C-only twin of the pytest hooks (_testing.run_passes): golden tests can be run
 * and debugged with it alone.
 */
#include "../base/base.h"
#include "../ir/ir.h"
#include "../passes/passes.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the command line asked for. */
typedef struct Options {
    const char *passes; /* comma-separated pass list, or NULL */
    bool verify;        /* verify the input and after every pass */
    bool concrete;      /* verify the result as codegen-ready */
    const char *path;   /* input file, "-" for standard input */
} Options;

static void
usage(FILE *out)
{
    fprintf(out, "usage: qdopt [-p pass,pass,...] [--verify] [--concrete] [file.qir | -]\n"
                 "passes:");
    for (const char *const *name = qd_pass_names(); *name; name++) {
        fprintf(out, " %s", *name);
    }
    fputc('\n', out);
}

/* Fills opts from argv; 0, or the exit status to leave with (help: 0 via *done). */
static int
parse_args(int argc, char **argv, Options *opts, bool *done)
{
    *done = false;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "-p") == 0 || strcmp(arg, "--passes") == 0) {
            if (i + 1 == argc) {
                fprintf(stderr, "qdopt: %s needs a pass list\n", arg);
                return 2;
            }
            opts->passes = argv[++i];
        } else if (strncmp(arg, "--passes=", 9) == 0) {
            opts->passes = arg + 9;
        } else if (strncmp(arg, "-p", 2) == 0) {
            opts->passes = arg + 2;
        } else if (strcmp(arg, "--verify") == 0) {
            opts->verify = true;
        } else if (strcmp(arg, "--concrete") == 0) {
            opts->concrete = true;
        } else if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            usage(stdout);
            *done = true;
            return 0;
        } else if (arg[0] == '-' && arg[1] != '\0') {
            fprintf(stderr, "qdopt: unknown option %s\n", arg);
            usage(stderr);
            return 2;
        } else if (opts->path) {
            fprintf(stderr, "qdopt: more than one input file\n");
            return 2;
        } else {
            opts->path = arg;
        }
    }
    if (!opts->path) {
        opts->path = "-";
    }
    return 0;
}

/* Reads a whole stream into a NUL-terminated heap buffer; NULL on failure. */
static char *
read_all(FILE *in, size_t *len)
{
    size_t cap = 1 << 16, used = 0;
    char *buf = malloc(cap);
    while (buf) {
        used += fread(buf + used, 1, cap - used - 1, in);
        if (ferror(in)) {
            break;
        }
        if (feof(in)) {
            buf[used] = '\0';
            *len = used;
            return buf;
        }
        char *grown = cap > SIZE_MAX / 2 ? NULL : realloc(buf, cap * 2);
        if (!grown) {
            break;
        }
        buf = grown;
        cap *= 2;
    }
    free(buf);
    return NULL;
}

/* Prints the recorded error as `file:line:col: error: message`, naming the input file when the
 * error carries no file of its own (pass errors point at a line of the input). */
static void
report(const QdCtx *ctx, const char *filename)
{
    QdDiag where = ctx->diag; /* the location only: the message goes after "error: " */
    char prefix[QD_DIAG_FILE_MAX + 64];
    where.message[0] = '\0';
    if (!where.file[0]) {
        snprintf(where.file, sizeof(where.file), "%.*s", QD_DIAG_FILE_MAX - 1, filename);
    }
    if (where.line) {
        qd_diag_format(&where, prefix, sizeof(prefix));
    } else {
        snprintf(prefix, sizeof(prefix), "%s: ", where.file);
    }
    fprintf(stderr, "%serror: %s\n", prefix, ctx->diag.message);
}

int
main(int argc, char **argv)
{
    Options opts = {0};
    bool done;
    int status = parse_args(argc, argv, &opts, &done);
    if (status || done) {
        return status;
    }
    bool from_stdin = strcmp(opts.path, "-") == 0;
    const char *filename = from_stdin ? "<stdin>" : opts.path;
    FILE *in = from_stdin ? stdin : fopen(opts.path, "rb");
    if (!in) {
        fprintf(stderr, "%s: error: cannot open: %s\n", filename, strerror(errno));
        return 1;
    }
    size_t len = 0;
    char *text = read_all(in, &len);
    if (!from_stdin) {
        fclose(in);
    }
    if (!text) {
        fprintf(stderr, "%s: error: cannot read the file\n", filename);
        return 1;
    }

    QdCtx ctx;
    qd_ctx_init(&ctx);
    char *printed = NULL;
    QdModule *m = qd_module_parse(&ctx, text, len, filename);
    status = 1;
    if (!m) {
        goto done;
    }
    if (opts.verify && qd_module_verify(&ctx, m, QD_VERIFY_DEFAULT) < 0) {
        goto done;
    }
    if (qd_run_passes(&ctx, m, opts.passes, opts.verify) < 0) {
        goto done;
    }
    if (opts.concrete && qd_module_verify(&ctx, m, QD_VERIFY_CONCRETE) < 0) {
        goto done;
    }
    printed = qd_module_print(m);
    if (!printed) {
        QdLoc none = {NULL, 0, 0};
        qd_error(&ctx, none, QD_ERR_NOMEM, "out of memory while printing");
        goto done;
    }
    fputs(printed, stdout);
    status = fflush(stdout) == 0 ? 0 : 1;

done:
    if (status && ctx.diag.kind != QD_ERR_NONE) {
        report(&ctx, filename);
    }
    free(printed);
    qd_module_free(m);
    free(text);
    return status;
}
