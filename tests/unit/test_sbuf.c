/* tests/unit/test_sbuf.c -- QdSbuf: the heap string builder the printers write into.
 *
 * Checks that puts/putn/printf/putc append in order and keep the text NUL-terminated after every
 * call, that pad_to aligns to a column counted from the last newline (and never truncates), that
 * take hands the text over and leaves an empty builder (an empty builder gives ""), and that long
 * text grows the buffer without losing any of it.
 */
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
test_sbuf_puts_printf_putc(void)
{
    QdSbuf sb;
    qd_sbuf_init(&sb);
    qd_sbuf_puts(&sb, "%0 = ");
    CHECK_STR(sb.data, "%0 = ");
    qd_sbuf_printf(&sb, "add %%%d, %%%u", 1, 2u);
    CHECK_STR(sb.data, "%0 = add %1, %2");
    qd_sbuf_putc(&sb, ' ');
    qd_sbuf_putc(&sb, ':');
    qd_sbuf_putn(&sb, " f32 trailing", 4);
    CHECK_STR(sb.data, "%0 = add %1, %2 : f32");
    CHECK_EQ(sb.len, strlen("%0 = add %1, %2 : f32"));
    /* Empty appends change nothing. */
    qd_sbuf_puts(&sb, "");
    qd_sbuf_printf(&sb, "%s", "");
    CHECK_EQ(sb.len, strlen("%0 = add %1, %2 : f32"));
    CHECK(!sb.failed);
    qd_sbuf_free(&sb);
    CHECK(sb.data == NULL);
    CHECK_EQ(sb.len, 0);
}

void
test_sbuf_pad_to(void)
{
    QdSbuf sb;
    qd_sbuf_init(&sb);
    /* On an empty builder, padding starts at column 0. */
    qd_sbuf_pad_to(&sb, 4);
    CHECK_STR(sb.data, "    ");
    qd_sbuf_puts(&sb, "ab");
    qd_sbuf_pad_to(&sb, 10);
    qd_sbuf_putc(&sb, '|');
    CHECK_STR(sb.data, "    ab    |");
    /* Already past the column: nothing is added and nothing is cut. */
    qd_sbuf_pad_to(&sb, 3);
    CHECK_STR(sb.data, "    ab    |");
    /* Columns count from the last newline. */
    qd_sbuf_puts(&sb, "\nxyz");
    qd_sbuf_pad_to(&sb, 6);
    qd_sbuf_putc(&sb, '#');
    CHECK_STR(sb.data, "    ab    |\nxyz   #");
    qd_sbuf_putc(&sb, '\n');
    qd_sbuf_pad_to(&sb, 2);
    CHECK_STR(sb.data, "    ab    |\nxyz   #\n  ");
    qd_sbuf_pad_to(&sb, 0);
    CHECK_STR(sb.data, "    ab    |\nxyz   #\n  ");
    qd_sbuf_free(&sb);
}

void
test_sbuf_take(void)
{
    QdSbuf sb;
    qd_sbuf_init(&sb);
    qd_sbuf_printf(&sb, "kernel @%s", "k");
    char *text = qd_sbuf_take(&sb);
    CHECK_STR(text, "kernel @k");
    /* The builder is left empty and usable; the taken text is the caller's. */
    CHECK(sb.data == NULL);
    CHECK_EQ(sb.len, 0);
    qd_sbuf_puts(&sb, "again");
    CHECK_STR(sb.data, "again");
    CHECK_STR(text, "kernel @k");
    free(text);
    qd_sbuf_free(&sb);

    /* Taking from a builder that never held text gives "", not NULL. */
    qd_sbuf_init(&sb);
    char *empty = qd_sbuf_take(&sb);
    CHECK_STR(empty, "");
    CHECK(sb.data == NULL);
    free(empty);
    /* Twice in a row, too. */
    empty = qd_sbuf_take(&sb);
    CHECK_STR(empty, "");
    free(empty);
    qd_sbuf_free(&sb);
}

void
test_sbuf_growth(void)
{
    enum { LINES = 5000 };
    QdSbuf sb;
    qd_sbuf_init(&sb);
    for (int i = 0; i < LINES; i++) {
        qd_sbuf_printf(&sb, "%%%d = const %d : i32\n", i, i * 3);
    }
    /* A single append bigger than the buffer so far. */
    static char block[100000];
    memset(block, 'z', sizeof(block) - 1);
    block[sizeof(block) - 1] = '\0';
    size_t before = sb.len;
    qd_sbuf_puts(&sb, block);
    CHECK_EQ(sb.len, before + sizeof(block) - 1);
    CHECK(!sb.failed);
    CHECK(sb.cap > sb.len);
    CHECK(sb.data[sb.len] == '\0');
    CHECK_EQ(strlen(sb.data), sb.len);

    /* Walk the lines back: every one of them is intact and in order. */
    char *text = qd_sbuf_take(&sb);
    if (!CHECK(text != NULL)) {
        return;
    }
    char *line = text;
    int good = 0;
    for (int i = 0; i < LINES; i++) {
        char want[64];
        int n = snprintf(want, sizeof(want), "%%%d = const %d : i32\n", i, i * 3);
        if (strncmp(line, want, (size_t)n) != 0) {
            break;
        }
        good++;
        line += n;
    }
    CHECK_EQ(good, LINES);
    if (good == LINES) {
        CHECK(line[0] == 'z' && strlen(line) == sizeof(block) - 1);
    }
    free(text);
}
