/* Minimal checking for the engine's unit tests: every failed CHECK prints
 * where and why, the test keeps going so one run shows all failures, and
 * check_done() turns the count into the exit code (0 pass, 1 fail). */
#ifndef GT_TESTS_CHECK_H
#define GT_TESTS_CHECK_H

#include <math.h>
#include <stdio.h>

#include "engine/status.h"

static int g_check_failures;

#define CHECK(cond, ...)                                                               \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            g_check_failures++;                                                        \
            fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond);   \
            fprintf(stderr, __VA_ARGS__);                                              \
            fputc('\n', stderr);                                                       \
        }                                                                              \
    } while (0)

/* A status that must be GT_OK; prints the library's last error otherwise. */
#define CHECK_OK(expr)                                                                 \
    do {                                                                               \
        gt_status check_s_ = (expr);                                                   \
        CHECK(check_s_ == GT_OK, "%s -> %s: %s", #expr, gt_status_name(check_s_),      \
              gt_last_error());                                                        \
    } while (0)

/* A status that must be `want`, with a non-empty message. */
#define CHECK_STATUS(expr, want)                                                       \
    do {                                                                               \
        gt_status check_s_ = (expr);                                                   \
        CHECK(check_s_ == (want), "%s -> %s, want %s (%s)", #expr,                     \
              gt_status_name(check_s_), gt_status_name(want), gt_last_error());        \
        if (check_s_ == (want) && check_s_ != GT_OK)                                   \
            CHECK(gt_last_error()[0] != '\0', "%s gave no message", #expr);            \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                          \
    do {                                                                               \
        double check_a_ = (a), check_b_ = (b);                                         \
        CHECK(fabs(check_a_ - check_b_) <= (tol), "%s = %.17g, %s = %.17g, tol %g", #a, \
              check_a_, #b, check_b_, (double)(tol));                                  \
    } while (0)

static int check_done(const char *name) {
    if (g_check_failures) {
        fprintf(stderr, "%s: %d check(s) failed\n", name, g_check_failures);
        return 1;
    }
    printf("%s: all checks passed\n", name);
    return 0;
}

#endif
