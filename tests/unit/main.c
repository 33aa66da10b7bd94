/* tests/unit/main.c -- runs every C unit test of the base layer.
 *
 * The static table below is expanded from QD_UNIT_TESTS (unit.h), so adding a test means adding
 * its function and one line to that list. Each test runs in turn; every failing check prints one
 * line "file:line: test_name: ..." to stdout. The run ends with the line `N passed, M failed`,
 * counting test functions (not checks), and exits 1 when any test failed, so `make check` and CI
 * can use the exit status. An optional argument runs only the tests whose name contains it.
 */
#include "unit.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

typedef struct UnitTest {
    const char *name;  /* name without the test_ prefix */
    void (*run)(void); /* the test function */
} UnitTest;

static const UnitTest unit_tests[] = {
#define QD_UNIT_ENTRY(name) {#name, test_##name},
    QD_UNIT_TESTS(QD_UNIT_ENTRY)
#undef QD_UNIT_ENTRY
};

static const char *current_test = ""; /* name of the running test, for failure lines */
static unsigned current_failures = 0; /* failed checks in the running test */

bool
qd_unit_check(bool ok, const char *expr, const char *file, int line)
{
    if (!ok) {
        printf("%s:%d: %s: check `%s` failed\n", file, line, current_test, expr);
        current_failures++;
    }
    return ok;
}

bool
qd_unit_check_str(const char *got, const char *want, const char *expr, const char *file, int line)
{
    bool ok = got && want ? strcmp(got, want) == 0 : got == want;
    if (!ok) {
        printf("%s:%d: %s: check `%s` failed: got %s%s%s, want %s%s%s\n", file, line, current_test,
               expr, got ? "\"" : "", got ? got : "NULL", got ? "\"" : "", want ? "\"" : "",
               want ? want : "NULL", want ? "\"" : "");
        current_failures++;
    }
    return ok;
}

bool
qd_unit_check_u64(uint64_t got, uint64_t want, const char *expr, const char *file, int line)
{
    bool ok = got == want;
    if (!ok) {
        printf("%s:%d: %s: check `%s` failed: got %" PRIu64 ", want %" PRIu64 "\n", file, line,
               current_test, expr, got, want);
        current_failures++;
    }
    return ok;
}

int
main(int argc, char **argv)
{
    const char *filter = argc > 1 ? argv[1] : NULL;
    unsigned passed = 0;
    unsigned failed = 0;
    for (size_t i = 0; i < QD_ARRAY_LEN(unit_tests); i++) {
        if (filter && !strstr(unit_tests[i].name, filter)) {
            continue;
        }
        current_test = unit_tests[i].name;
        current_failures = 0;
        unit_tests[i].run();
        if (current_failures) {
            failed++;
        } else {
            passed++;
        }
    }
    printf("%u passed, %u failed\n", passed, failed);
    return failed ? 1 : 0;
}
