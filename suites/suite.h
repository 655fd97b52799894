/* What `gauntlet run` drives: a suite is a named list of cases; the harness
 * runs every selected case on every requested topology and backend.
 *
 * A suite never exits and never writes the report file: it adds results
 * (reports/report.h) to ctx->rep on rank 0 of its communicator and calls
 * ctx->case_done after each one, which rewrites the report atomically and
 * prints progress. Every rank of ctx->comm calls run() (collective), and
 * every rank must take the same decisions (skip, error) in the same order.
 */
#ifndef GT_SUITE_H
#define GT_SUITE_H

#include <stdio.h>

#include "engine/comm.h"
#include "engine/status.h"
#include "reports/report.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gt_effort {
    GT_EFFORT_QUICK = 0, /* --quick: CI and `make run`: minutes on 2 cores */
    GT_EFFORT_DEFAULT,
    GT_EFFORT_FULL,      /* --full: every size and dtype */
} gt_effort;

typedef struct gt_suite_ctx {
    gt_comm *comm;          /* this topology's communicator (size = topology) */
    const char *backend;    /* "cpu", "ref", "cuda" */
    int threads;            /* cpu threads per rank (0: default) */
    gt_effort effort;
    const char *case_filter;/* NULL: every case; else run only the case of that name */
    gt_report *rep;         /* rank 0 of comm: add results here; NULL on other ranks */
    const char *topology;   /* "1", "2", ... for gt_report_add_result */
    FILE *out;              /* rank 0's progress stream; NULL: quiet */
    /* fault injection for the gate's own test: "OP:MICROSECONDS" slows that
     * kernel op (kernels suite) by sleeping that long per call */
    const char *inject_delay;
    /* fault injection for the gate's detection experiment: "NAME:FACTOR"
     * makes kernel op NAME, or one case of it (op/dtype/shape; kernels
     * suite), or collective NAME (collectives suite) take FACTOR times as
     * long wherever it is timed */
    const char *inject_slowdown;
    /* Called by the suite after each result it added (rank 0; may be NULL). */
    void (*case_done)(void *ctx, gt_result *res);
    void *case_done_ctx;
} gt_suite_ctx;

typedef struct gt_suite {
    const char *name;        /* "kernels" */
    const char *description; /* one line for `gauntlet list` */
    /* Lists the cases, one line each: "  name  what it checks". */
    void (*list)(FILE *f);
    /* Smallest and largest topology the suite runs on (0: no upper bound). */
    int min_ranks, max_ranks;
    /* Runs the selected cases. A failed check is a result with status fail,
     * not an error: run() returns non-OK only when it could not go on
     * (GT_ERR_COMM, GT_ERR_TIMEOUT, out of memory). */
    gt_status (*run)(const gt_suite_ctx *ctx);
    /* How many results run() would add with ctx (whose comm is NULL here) on
     * `ranks` ranks, for the progress estimate: cheap, runs nothing; an
     * estimate, not a promise (a named case counts 1). NULL: unknown. */
    int (*count)(const gt_suite_ctx *ctx, int ranks);
} gt_suite;

/* Every suite, in the order `gauntlet run` with no names runs them. */
extern const gt_suite gt_suite_kernels;
extern const gt_suite gt_suite_collectives;
extern const gt_suite gt_suite_train;
extern const gt_suite gt_suite_scaling;
extern const gt_suite gt_suite_memory;
extern const gt_suite gt_suite_health;

/* NULL-terminated list of the suites above. */
const gt_suite *const *gt_suites(void);
const gt_suite *gt_suite_find(const char *name);

/* Parses an inject_slowdown spec "NAME:FACTOR" (1 < FACTOR <= 100) into
 * name (at most len - 1 characters) and *factor. GT_ERR_INVALID, saying
 * what was wrong, when it is malformed or NAME is neither a kernel op (or a
 * case of one, op/dtype/shape) nor a collective. */
gt_status gt_parse_slowdown(const char *spec, char *name, size_t len, double *factor);

#ifdef __cplusplus
}
#endif
#endif
