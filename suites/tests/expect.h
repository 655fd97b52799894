/* EXPECT(cond, fmt, ...) for the suites' tests: a failed condition is
 * counted in g_fails and printed with its place, the test goes on. */
#ifndef GT_SUITES_TESTS_EXPECT_H
#define GT_SUITES_TESTS_EXPECT_H
#include <stdio.h>

static int g_fails;

#define EXPECT(cond, ...)                                                                  \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            g_fails++;                                                                     \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                           \
            fprintf(stderr, __VA_ARGS__);                                                  \
            fprintf(stderr, "\n");                                                         \
        }                                                                                  \
    } while (0)

#endif
