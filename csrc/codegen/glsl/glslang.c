/* codegen/glsl/glslang.c -- GLSL compute shaders to SPIR-V with glslang, in process.
 *
 * The last step of the Vulkan code generator: glsl_emit*.c write GLSL, this file hands it to
 * glslang's C interface (linked statically; setup.py finds the archives) and returns SPIR-V
 * words for runtime/vulkan's pipelines. Fixed settings: compute stage, client Vulkan 1.2,
 * target SPIR-V 1.5, glslang's default resource limits, Vulkan and SPIR-V rules; no SPIR-V
 * optimizer (the driver optimizes anyway, and the emitter's code is already simple).
 *
 * glslang's process-wide state is initialized once (pthread_once) and never finalized.
 * Compiles are serialized by a lock: glslang keeps per-process tables that older releases do
 * not guard, and one shader compiles in milliseconds.
 *
 * A failed compile is a QD_ERR_COMPILATION diag: glslang's log, then each source line the log
 * names ("ERROR: 0:12: ..."), numbered, so the emitter's bug can be read off the message.
 */
#include "glsl.h"

#include <glslang/Include/glslang_c_interface.h>
#include <glslang/Public/resource_limits_c.h>
#include <glslang/build_info.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Source lines quoted under the log, at most. */
#define MAX_QUOTED_LINES 8

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t compile_lock = PTHREAD_MUTEX_INITIALIZER;

static void
init_glslang(void)
{
    glslang_initialize_process();
}

#define QD_STR_(x) #x
#define QD_STR(x)  QD_STR_(x)

const char *
qd_glslang_version(void)
{
    return QD_STR(GLSLANG_VERSION_MAJOR) "." QD_STR(GLSLANG_VERSION_MINOR) "." QD_STR(
        GLSLANG_VERSION_PATCH) GLSLANG_VERSION_FLAVOR;
}

/* Appends line `line` (1-based) of `source` to sb as "  <n> | <text>\n"; nothing when the
 * source has fewer lines. */
static void
quote_line(QdSbuf *sb, const char *source, unsigned long line)
{
    const char *p = source;
    for (unsigned long i = 1; i < line && p != NULL; i++) {
        p = strchr(p, '\n');
        p = p ? p + 1 : NULL;
    }
    if (p == NULL || *p == '\0') {
        return;
    }
    const char *end = strchr(p, '\n');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    qd_sbuf_printf(sb, "%5lu | %.*s\n", line, (int)len, p);
}

/* The lines named by "ERROR: <string>:<line>:" entries of `log`, quoted in order of first
 * mention. */
static void
quote_error_lines(QdSbuf *sb, const char *log, const char *source)
{
    unsigned long seen[MAX_QUOTED_LINES];
    size_t nseen = 0;

    for (const char *p = strstr(log, "ERROR: "); p != NULL && nseen < MAX_QUOTED_LINES;
         p = strstr(p + 1, "ERROR: ")) {
        char *end = NULL;
        const char *q = p + strlen("ERROR: ");
        strtoul(q, &end, 10); /* the source string's index */
        if (end == q || *end != ':') {
            continue;
        }
        q = end + 1;
        unsigned long line = strtoul(q, &end, 10);
        if (end == q || *end != ':' || line == 0) {
            continue;
        }
        bool repeated = false;
        for (size_t i = 0; i < nseen; i++) {
            repeated |= seen[i] == line;
        }
        if (!repeated) {
            if (nseen == 0) {
                qd_sbuf_puts(sb, "in the GLSL source:\n");
            }
            seen[nseen++] = line;
            quote_line(sb, source, line);
        }
    }
}

/* Records the QD_ERR_COMPILATION diag of a failed stage: what, glslang's log, the lines. */
static int
compile_error(QdCtx *ctx, const char *what, const char *stage, const char *log, const char *source)
{
    QdSbuf sb;
    qd_sbuf_init(&sb);
    qd_sbuf_printf(&sb, "glslang could not %s the GLSL of %s:\n", stage, what);
    qd_sbuf_puts(&sb, log && log[0] ? log : "(no log)\n");
    if (sb.len > 0 && sb.data[sb.len - 1] != '\n') {
        qd_sbuf_putc(&sb, '\n');
    }
    if (log != NULL) {
        quote_error_lines(&sb, log, source);
    }
    while (sb.len > 0 && sb.data[sb.len - 1] == '\n') {
        sb.data[--sb.len] = '\0';
    }
    int rc = qd_error(ctx, (QdLoc){0}, QD_ERR_COMPILATION, "%s",
                      sb.failed ? "glslang failed (and the message ran out of memory)" : sb.data);
    qd_sbuf_free(&sb);
    return rc;
}

int
qd_glsl_to_spirv(QdCtx *ctx, const char *source, const char *what, uint32_t **words, size_t *nwords)
{
    glslang_shader_t *shader = NULL;
    glslang_program_t *program = NULL;
    int rc = -1;

    *words = NULL;
    *nwords = 0;
    pthread_once(&init_once, init_glslang);
    const glslang_input_t input = {
        .language = GLSLANG_SOURCE_GLSL,
        .stage = GLSLANG_STAGE_COMPUTE,
        .client = GLSLANG_CLIENT_VULKAN,
        .client_version = GLSLANG_TARGET_VULKAN_1_2,
        .target_language = GLSLANG_TARGET_SPV,
        .target_language_version = GLSLANG_TARGET_SPV_1_5,
        .code = source,
        .default_version = 460,
        .default_profile = GLSLANG_NO_PROFILE,
        .force_default_version_and_profile = false,
        .forward_compatible = false,
        .messages =
            GLSLANG_MSG_DEFAULT_BIT | GLSLANG_MSG_SPV_RULES_BIT | GLSLANG_MSG_VULKAN_RULES_BIT,
        .resource = glslang_default_resource(),
    };

    pthread_mutex_lock(&compile_lock);
    shader = glslang_shader_create(&input);
    if (shader == NULL) {
        qd_error(ctx, (QdLoc){0}, QD_ERR_NOMEM, "glslang: out of memory");
        goto done;
    }
    if (!glslang_shader_preprocess(shader, &input)) {
        compile_error(ctx, what, "preprocess", glslang_shader_get_info_log(shader), source);
        goto done;
    }
    if (!glslang_shader_parse(shader, &input)) {
        compile_error(ctx, what, "compile", glslang_shader_get_info_log(shader), source);
        goto done;
    }
    program = glslang_program_create();
    if (program == NULL) {
        qd_error(ctx, (QdLoc){0}, QD_ERR_NOMEM, "glslang: out of memory");
        goto done;
    }
    glslang_program_add_shader(program, shader);
    if (!glslang_program_link(program, input.messages)) {
        compile_error(ctx, what, "link", glslang_program_get_info_log(program), source);
        goto done;
    }
    glslang_program_SPIRV_generate(program, GLSLANG_STAGE_COMPUTE);
    const char *messages = glslang_program_SPIRV_get_messages(program);
    size_t n = glslang_program_SPIRV_get_size(program);
    if (n == 0) {
        compile_error(ctx, what, "generate SPIR-V for", messages, source);
        goto done;
    }
    *words = malloc(n * sizeof(uint32_t));
    if (*words == NULL) {
        qd_error(ctx, (QdLoc){0}, QD_ERR_NOMEM, "out of memory for %zu words of SPIR-V", n);
        goto done;
    }
    glslang_program_SPIRV_get(program, *words);
    *nwords = n;
    rc = 0;
done:
    if (program != NULL) {
        glslang_program_delete(program);
    }
    if (shader != NULL) {
        glslang_shader_delete(shader);
    }
    pthread_mutex_unlock(&compile_lock);
    return rc;
}
