/* suites.thread_state.host: the kernels suite's two-thread state probe
 * (suites/thread_state.h): on two CPUs or more every probe gives a round
 * trip (positive, under a millisecond) and the helpers stop when freed; a
 * process allowed one CPU gets no probe (NULL, and a NULL probe is 0). The
 * figures (and a probe's cost with its wake-ups) are printed, not judged:
 * they are the machine's. */
#define _GNU_SOURCE
#include "suites/thread_state.h"

#include <sched.h>
#include <stdio.h>
#include <time.h>

static int g_fails;
#define EXPECT(c)                                                          \
    do {                                                                   \
        if (!(c)) {                                                        \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #c);   \
            g_fails++;                                                     \
        }                                                                  \
    } while (0)

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(void) {
    cpu_set_t all;
    if (sched_getaffinity(0, sizeof all, &all) != 0 || CPU_COUNT(&all) < 2) {
        printf("skip: this process may run on fewer than two CPUs\n");
        EXPECT(gt_thread_state_new() == NULL);
        return g_fails ? 1 : 77;
    }
    gt_thread_state *s = gt_thread_state_new();
    EXPECT(s != NULL);
    double lo = 1e30, hi = 0, t0 = now_s();
    int n = 200, got = 0;
    for (int i = 0; s && i < n; i++) {
        double ns = gt_thread_state_probe(s);
        got += ns > 0;
        if (ns > 0 && ns < lo) lo = ns;
        if (ns > hi) hi = ns;
    }
    double each_us = (now_s() - t0) / n * 1e6;
    /* a helper may be late once on a busy machine (20 ms): most must answer */
    EXPECT(got >= n * 9 / 10);
    EXPECT(hi < 1e6);
    printf("thread_state: %d of %d probes, round trip %.0f-%.0f ns, %.1f us a probe\n", got, n,
           lo, hi, each_us);
    gt_thread_state_free(s);
    EXPECT(gt_thread_state_probe(NULL) == 0);

    /* one CPU allowed: no pair */
    cpu_set_t one;
    CPU_ZERO(&one);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &all)) {
            CPU_SET(c, &one);
            break;
        }
    if (sched_setaffinity(0, sizeof one, &one) == 0) {
        EXPECT(gt_thread_state_new() == NULL);
        sched_setaffinity(0, sizeof all, &all);
    }
    if (g_fails) printf("thread_state: %d failures\n", g_fails);
    else printf("thread_state: all tests passed\n");
    return g_fails ? 1 : 0;
}
