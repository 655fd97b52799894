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
    /* fault injection for the gate's detection experiment: a list of
     * NAME:FACTOR items (gt_slowdown_parse, below) makes each kernel op,
     * case of one (op/dtype/shape prefix), collective, or class family
     * named take its FACTOR times as long wherever it is timed */
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
    /* Every name a case filter may use to select cases with ctx (its effort
     * and backend; comm NULL): the full names and the shorter forms run()
     * accepts (a kernels op, op/dtype; a train model, a case's short name),
     * each given to fn, repeats allowed. `gauntlet run` refuses a selection
     * that is none of them before anything runs, naming the nearest.
     * NULL: not checked. */
    void (*names)(const gt_suite_ctx *ctx, void (*fn)(void *arg, const char *name), void *arg);
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

/* ---- class families -----------------------------------------------------------
 * The classes a result belongs to, beyond its own op or collective: a
 * driver or library change moves all of a class at once, so compare pools
 * the evidence of each (the op family it derives from the case name
 * itself). Recorded as the result's "groups" (docs/report-schema.md), never
 * as a param (params are its identity); --inject-slowdown takes a class's
 * name to slow all of it. Written once: X(ENUM, name).
 *   gemm        kernel ops whose cpu and cuda implementations are GEMMs
 *               (the kernels suite's op table says which: suites/kernels.c)
 *   memory      memory-bound kernel ops: judged against a memory level's
 *               bandwidth (working_set, peak_level), not the GEMM peak
 *   collective  every case of the collectives suite */
#define GT_GROUP_LIST(X)                                                                           \
    X(GEMM, gemm)                                                                                  \
    X(MEMORY, memory)                                                                              \
    X(COLLECTIVE, collective)

typedef enum gt_group {
#define GT_GROUP_ENUM_(ENUM, name) GT_GROUP_##ENUM,
    GT_GROUP_LIST(GT_GROUP_ENUM_)
#undef GT_GROUP_ENUM_
    GT_GROUP_COUNT
} gt_group;

/* A set of groups: bit GT_GROUP_BIT(g) per group g. */
#define GT_GROUP_BIT(g) (1u << (unsigned)(g))

/* "gemm", ...; NULL for a value out of range. */
const char *gt_group_name(gt_group g);
/* The group called name; GT_GROUP_COUNT when none is. */
gt_group gt_group_find(const char *name);
/* Records the groups of set (GT_GROUP_BIT) as res's "groups", in the list's
 * order (gt_result_group); an empty set records nothing. */
void gt_result_set_groups(gt_result *res, unsigned set);

/* ---- injected slowdowns ---------------------------------------------------------
 * ctx->inject_slowdown, the gate's power experiments: a comma-separated
 * list of NAME:FACTOR items (1 < FACTOR <= 100), NAME one of
 *   - a kernel op ("matmul_fwd") or a case prefix of one at a '/' boundary
 *     ("matmul_fwd/fp32", "matmul_fwd/fp32/N64_C768_OC768");
 *   - a collective ("allreduce");
 *   - a class family (gemm, memory, collective: every op or collective in
 *     it).
 * Each case slowed is slowed by one item, the most specific that names it:
 * a case prefix over its op (the longer prefix first), an op or collective
 * over a class, between classes the first listed. The suites record that
 * item's factor as the param injected_slowdown (compare leaves it out of
 * the identity). Training wraps one op (engine/profile.h): the first item
 * that names a whole op; cases, collectives and classes are not slowed
 * there. */
#define GT_SLOWDOWN_MAX 16

typedef struct gt_slowdown_item {
    char name[128];  /* NAME (a collective's in its canonical spelling) */
    char text[160];  /* the item as given ("gemm:1.1"), for messages */
    double factor;   /* 1 < factor <= 100 */
    int group;       /* NAME is a class family: its gt_group; else -1 */
} gt_slowdown_item;

typedef struct gt_slowdown {
    int n; /* items, in the order given */
    gt_slowdown_item item[GT_SLOWDOWN_MAX];
} gt_slowdown;

/* Parses spec into *out. GT_ERR_INVALID, naming the item and what is
 * accepted, when spec is empty or an item is malformed, has a factor out
 * of range, names nothing (neither an op, a case prefix of one, a
 * collective, nor a class), or names what an earlier item named; also
 * when there are more than GT_SLOWDOWN_MAX items. */
gt_status gt_slowdown_parse(const char *spec, gt_slowdown *out);

/* The item that slows what is called `name` in classes `groups`
 * (GT_GROUP_BIT): a kernels case ("matmul_fwd/fp32/N64_C768_OC768") or a
 * collective ("allreduce"), by the rule above; NULL when none does. */
const gt_slowdown_item *gt_slowdown_match(const gt_slowdown *sl, const char *name,
                                          unsigned groups);

/* Checks a whole inject_slowdown list (gt_slowdown_parse) and gives its
 * first item's NAME (at most len - 1 characters, else GT_ERR_INVALID) and
 * FACTOR: the one-item form the command line's checks and `gauntlet train`
 * (one op) use. */
gt_status gt_parse_slowdown(const char *spec, char *name, size_t len, double *factor);

#ifdef __cplusplus
}
#endif
#endif
