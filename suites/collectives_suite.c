/* The collectives sweep (suites/collectives.c) as a gt_suite. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/job.h"
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
        /* each collective by the item that names it, or its class */
        gt_slowdown sl;
        GT_TRY(gt_slowdown_parse(ctx->inject_slowdown, &sl));
        for (int t = 0; t < GT_COLL_TEST_COUNT; t++) {
            const gt_slowdown_item *it = gt_slowdown_match(&sl, gt_coll_test_name((gt_coll_test)t),
                                                           GT_GROUP_BIT(GT_GROUP_COLLECTIVE));
            cfg->slow_factor[t] = it ? it->factor : 0.0;
        }
    }
    return GT_OK;
}

static int count(const gt_suite_ctx *ctx, int ranks) {
    (void)ranks;
    gt_coll_config cfg;
    return config_of(ctx, &cfg) == GT_OK ? gt_coll_count_results(&cfg) : 1;
}

/* Where the communicator spans nodes with more than one rank on a node:
 * the sweep again on the intra-node communicators (every node's at once;
 * rank 0's report gets its own node's) and on the inter-node one (the first
 * rank of each node), their cases named "intra_node/..." and
 * "inter_node/...". On one node, or one rank per node (where the world is
 * the inter-node communicator and an intra-node one has a single rank),
 * nothing more runs. Collective over comm. */
static gt_status run_node_scopes(gt_comm *comm, const gt_coll_config *cfg, gt_report *rep) {
    int n = gt_comm_size(comm), me = gt_comm_rank(comm), n_nodes = 0, most = 0;
    int *node_of = calloc((size_t)n, sizeof *node_of), *local_of = calloc((size_t)n, sizeof(int));
    gt_status s = node_of && local_of ? GT_OK : GT_ERR(GT_ERR_OOM, "collectives: node table");
    if (s == GT_OK) s = gt_comm_nodes(comm, node_of, local_of, &n_nodes);
    for (int r = 0; s == GT_OK && r < n; r++)
        most = local_of[r] + 1 > most ? local_of[r] + 1 : most;
    if (s == GT_OK && n_nodes > 1 && most > 1) {
        static const char *const scopes[] = {"intra_node", "inter_node"};
        for (int k = 0; k < 2 && s == GT_OK; k++) {
            gt_comm *sub = NULL;
            int color = k == 0 ? node_of[me] : local_of[me] == 0 ? 0 : -1;
            s = gt_comm_split(comm, color, me, &sub);
            if (s != GT_OK || !sub) continue;
            gt_coll_config c = *cfg;
            c.scope = scopes[k];
            /* the results keep the topology's layout (the job's shape they
             * ran in, as the harness set it); the param says the
             * sub-communicator's own: one node's ranks, or one rank of each */
            char layout[32];
            snprintf(layout, sizeof layout, "%dx%d", k == 0 ? 1 : gt_comm_size(sub),
                     k == 0 ? gt_comm_size(sub) : 1);
            c.scope_layout = layout;
            if (c.root >= gt_comm_size(sub)) c.root = 0;
            gt_coll_summary sum;
            s = gt_coll_run(sub, &c, rep, &sum);
            gt_comm_free(sub);
        }
    }
    free(node_of);
    free(local_of);
    return s;
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
    if (s == GT_OK) s = run_node_scopes(ctx->comm, &cfg, rep);
    gt_report_free(scratch);
    return s;
}

static void list(FILE *f) {
    for (int t = 0; t < GT_COLL_TEST_COUNT; t++)
        fprintf(f, "  %-28s busbw/algbw per size x dtype x op, #wrong = 0, overhead vs raw "
                   "MPI/NCCL\n",
                gt_coll_test_name((gt_coll_test)t));
}

/* A case filter names one collective (config_of). */
static void names(const gt_suite_ctx *ctx, void (*fn)(void *arg, const char *name), void *arg) {
    (void)ctx;
    for (int t = 0; t < GT_COLL_TEST_COUNT; t++) fn(arg, gt_coll_test_name((gt_coll_test)t));
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
    .names = names,
};
