/* The collectives sweep (suites/collectives.c) as a gt_suite. */
#include <stdlib.h>
#include <string.h>

#include "suites/collectives.h"
#include "suites/suite.h"

static gt_coll_config g_cfg;
static int g_cfg_set;

void gt_suite_collectives_configure(const gt_coll_config *cfg) {
    g_cfg = *cfg;
    g_cfg_set = 1;
}

typedef struct relay {
    const gt_suite_ctx *ctx;
    gt_report *rep;
    size_t seen;
} relay;

/* After each combination: the harness sees each result it added (one per
 * placement), as for any other suite's case */
static void on_result(void *p) {
    relay *r = p;
    if (!r->ctx->case_done || !r->ctx->rep) return;
    size_t n = gt_report_result_count(r->rep);
    if (n == r->seen) r->ctx->case_done(r->ctx->case_done_ctx, NULL);
    for (; r->seen < n; r->seen++)
        r->ctx->case_done(r->ctx->case_done_ctx, gt_report_result_at(r->rep, r->seen));
}

/* The config run() uses (gt_suite_collectives_configure, the effort, a case). */
static gt_status config_of(const gt_suite_ctx *ctx, gt_coll_config *cfg) {
    *cfg = g_cfg_set ? g_cfg : gt_coll_defaults();
    if (!g_cfg_set && ctx->effort == GT_EFFORT_QUICK) cfg->max_bytes = (uint64_t)1 << 20;
    if (ctx->case_filter) {
        gt_coll_test t;
        if (gt_coll_test_parse(ctx->case_filter, &t) != GT_OK)
            return GT_ERR(GT_ERR_INVALID, "collectives has no case '%s' (gauntlet list)",
                          ctx->case_filter);
        cfg->colls = 1u << t;
    }
    if (ctx->inject_slowdown) {
        char name[64];
        gt_coll_test t;
        GT_TRY(gt_parse_slowdown(ctx->inject_slowdown, name, sizeof name, &cfg->slow_factor));
        if (gt_coll_test_parse(name, &t) == GT_OK) cfg->slow_coll = (int)t;
    }
    return GT_OK;
}

static int count(const gt_suite_ctx *ctx, int ranks) {
    (void)ranks;
    gt_coll_config cfg;
    return config_of(ctx, &cfg) == GT_OK ? gt_coll_count_results(&cfg) : 1;
}

static gt_status run(const gt_suite_ctx *ctx) {
    gt_coll_config cfg;
    GT_TRY(config_of(ctx, &cfg));
    cfg.out = ctx->out;
    /* gt_coll_run adds the same results on every rank; only rank 0's report
     * is the run's, the others get a scratch one */
    gt_report *rep = ctx->rep;
    gt_report *scratch = NULL;
    if (!rep) {
        GT_TRY(gt_report_new(NULL, 0, NULL, &scratch));
        rep = scratch;
    }
    relay r = {.ctx = ctx, .rep = rep, .seen = gt_report_result_count(rep)};
    cfg.on_result = on_result;
    cfg.on_result_ctx = &r;
    gt_coll_summary sum;
    gt_status s = gt_coll_run(ctx->comm, &cfg, rep, &sum);
    gt_report_free(scratch);
    return s;
}

static void list(FILE *f) {
    for (int t = 0; t < GT_COLL_TEST_COUNT; t++)
        fprintf(f, "  %-28s busbw/algbw per size x dtype x op, #wrong = 0, overhead vs raw "
                   "MPI/NCCL\n",
                gt_coll_test_name((gt_coll_test)t));
}

const gt_suite gt_suite_collectives = {
    .name = "collectives",
    .description = "nccl-tests' sweep through the communicator, exact results, raw MPI (or "
                   "NCCL) baseline",
    .list = list,
    .min_ranks = 1,
    .max_ranks = 0,
    .run = run,
    .count = count,
};
