/* base/assert.c -- what happens when an internal invariant breaks.
 *
 * In debug and test builds (QD_DEBUG) a failed QD_ASSERT prints where it failed and aborts, so the
 * bug is found at its origin. In release builds the failure is printed and execution continues;
 * the code after each assert must leave the operation failing cleanly (it reports an internal
 * error), because aborting inside a user's Python process is not acceptable.
 */
#include "base.h"

#include <stdio.h>
#include <stdlib.h>

void
qd_assert_fail(const char *cond, const char *msg, const char *file, int line, const char *func)
{
    fprintf(stderr, "quadrants: internal error: %s:%d: %s: assertion `%s` failed%s%s\n", file, line,
            func, cond, msg && *msg ? ": " : "", msg ? msg : "");
#ifdef QD_DEBUG
    abort();
#endif
}
