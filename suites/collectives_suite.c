/* The collectives sweep (suites/collectives.c) as a gt_suite. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/job.h"
#include "models/model.h"
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

/* ---- what the layouts send (docs/distributed.md, "The layout grid") --------------
 * One size each, the scaling suite's gpt2-3m/layouts at its global batch
 * (LAYOUT_B x LAYOUT_T tokens, pipelines in LAYOUT_M micro-batches):
 *   layout_tp    all-reduce of one micro-batch's activations B T C fp32 in
 *                the tensor group of `group` neighbouring ranks (tp=2,
 *                dp=1: the whole batch)
 *   layout_pp    the exchange between neighbouring stages (a ring of 2):
 *                one micro-batch's activations (B/M) T C fp32
 *   layout_zero3 ZeRO-3's gather of one block's parameters (12C^2 + 13C
 *                fp32) over every rank (dp=N)
 * Each is the sweep's row of that collective in fp32, its case named
 * "SCOPE/COLLECTIVE/fp32[/sum]" (param comm_scope), run on the group. */
enum { LAYOUT_B = 16, LAYOUT_T = 64, LAYOUT_M = 4 };
typedef struct layout_case {
    const char *scope;
    gt_coll_test coll;
    int group; /* neighbouring ranks per group; 0: the whole communicator */
} layout_case;
static const layout_case g_layout_cases[] = {
    {"layout_tp", GT_COLL_TEST_ALLREDUCE, 2},
    {"layout_pp", GT_COLL_TEST_SENDRECV, 2},
    {"layout_zero3", GT_COLL_TEST_ALLGATHER, 0},
};
enum { N_LAYOUT_CASES = sizeof g_layout_cases / sizeof g_layout_cases[0] };

/* The message of case k in bytes for gpt2-3m (0: its shape is unknown). */
static uint64_t layout_bytes(int k) {
    gt_model_arch a; /* gpt2's fields: max_seq vocab padded_vocab layers heads channels */
    if (gt_model_arch_of("gpt2-3m", NULL, &a) != GT_OK) return 0;
    uint64_t C = (uint64_t)a.fields[5], f = 4;
    if (k == 0) return (uint64_t)LAYOUT_B * LAYOUT_T * C * f;
    if (k == 1) return (uint64_t)LAYOUT_B / LAYOUT_M * LAYOUT_T * C * f;
    return (12 * C * C + 13 * C) * f;
}

/* The index of the layout case called `name` ("layout_tp" or its full
 * result name), or -1. */
static int layout_case_of(const char *name) {
    for (int k = 0; name && k < N_LAYOUT_CASES; k++) {
        size_t n = strlen(g_layout_cases[k].scope);
        if (strncmp(name, g_layout_cases[k].scope, n) == 0 && (!name[n] || name[n] == '/'))
            return k;
    }
    return -1;
}

/* The config of layout case k from the suite's (its rounds, reps, root). */
static gt_coll_config layout_config(const gt_coll_config *base, int k, char *layout, size_t len,
                                    int n) {
    const layout_case *lc = &g_layout_cases[k];
    gt_coll_config c = *base;
    c.colls = 1u << lc->coll;
    c.dtypes = 1u << GT_DTYPE_FP32;
    c.ops = 1u << GT_REDOP_SUM;
    c.full_matrix = 0;
    c.min_bytes = c.max_bytes = layout_bytes(k);
    c.scope = lc->scope;
    int g = lc->group && lc->group < n ? lc->group : n;
    snprintf(layout, len, "%s=%d", lc->group ? (k == 0 ? "tp" : "pp") : "dp", g);
    c.scope_layout = layout;
    c.root = 0;
    return c;
}

/* Layout case k on groups of its neighbouring ranks (every group at once;
 * rank 0's report gets its own group's), open for its rounds. */
typedef struct layout_run {
    gt_coll_config cfg;
    char layout[32];
    gt_comm *sub; /* the group's communicator; NULL: the whole one */
    gt_coll_session *s;
} layout_run;

/* Opens layout case k (collective over comm). */
static gt_status layout_open(gt_comm *comm, const gt_coll_config *base, int k, gt_report *rep,
                             layout_run *lr) {
    int n = gt_comm_size(comm), me = gt_comm_rank(comm), group = g_layout_cases[k].group;
    lr->cfg = layout_config(base, k, lr->layout, sizeof lr->layout, n);
    if (!lr->cfg.min_bytes) return GT_ERR(GT_ERR_INVALID, "collectives: no gpt2-3m shape");
    if (group && group < n) GT_TRY(gt_comm_split(comm, me / group, me, &lr->sub));
    return gt_coll_open(lr->sub ? lr->sub : comm, &lr->cfg, rep, &lr->s);
}

static gt_status layout_close(layout_run *lr, gt_status s) {
    gt_status c = gt_coll_close(lr->s, NULL);
    lr->s = NULL;
    gt_comm_free(lr->sub);
    lr->sub = NULL;
    return s != GT_OK ? s : c;
}

/* Whether the layout cases run with a whole sweep (no case named): when it
 * covers every collective up to 1 MiB at least (the quick sweep does; one
 * narrowed with -e, --colls or --dtypes leaves them to be named). */
static int layout_wanted(const gt_coll_config *cfg) {
    unsigned all = (1u << GT_COLL_TEST_COUNT) - 1;
    return (cfg->colls & all) == all && (cfg->dtypes & (1u << GT_DTYPE_FP32)) &&
           (cfg->ops & (1u << GT_REDOP_SUM)) && cfg->max_bytes >= ((uint64_t)1 << 20);
}

/* The config run() uses (gt_suite_collectives_configure, the effort, a case). */
static gt_status config_of(const gt_suite_ctx *ctx, gt_coll_config *cfg) {
    *cfg = g_cfg_set ? g_cfg : gt_coll_defaults();
    if (!g_cfg_set && ctx->effort == GT_EFFORT_QUICK) cfg->max_bytes = (uint64_t)1 << 20;
    if (ctx->case_filter && layout_case_of(ctx->case_filter) >= 0) {
        cfg->colls = 0; /* a layout case alone (run) */
    } else if (ctx->case_filter) {
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
    gt_coll_config cfg;
    if (config_of(ctx, &cfg) != GT_OK) return 1;
    int n = gt_coll_count_results(&cfg);
    for (int k = 0; k < N_LAYOUT_CASES; k++) {
        if (ctx->case_filter ? layout_case_of(ctx->case_filter) != k : !layout_wanted(&cfg))
            continue;
        char layout[32];
        gt_coll_config c = layout_config(&cfg, k, layout, sizeof layout, ranks);
        n += gt_coll_count_results(&c);
    }
    return n;
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

/* The layout cases this run times (a named one, or all three with a whole
 * sweep; on nccl only when named: its groups, ncclCommSplit, are not yet
 * tested), opened into lr; *n_open how many. */
static gt_status layouts_open(const gt_suite_ctx *ctx, const gt_coll_config *cfg,
                              gt_report *rep, layout_run *lr, int *n_open) {
    *n_open = 0;
    int nccl = strcmp(gt_comm_backend_name(ctx->comm), "nccl") == 0;
    for (int k = 0; k < N_LAYOUT_CASES; k++) {
        if (ctx->case_filter ? layout_case_of(ctx->case_filter) != k
                             : !layout_wanted(cfg) || nccl)
            continue;
        GT_TRY(layout_open(ctx->comm, cfg, k, rep, &lr[(*n_open)++]));
    }
    return GT_OK;
}

/* The whole sweep and the layout cases, round by round: each round of the
 * sweep, then each layout case's (their blocks spread over the run as the
 * sweep's are: docs/ci-gating.md "The machine's state"); then the node
 * scopes. */
static gt_status run_sessions(const gt_suite_ctx *ctx, const gt_coll_config *cfg,
                              gt_report *rep) {
    layout_run lr[N_LAYOUT_CASES];
    memset(lr, 0, sizeof lr);
    int nl = 0;
    gt_coll_session *whole = NULL;
    gt_status s = cfg->colls ? gt_coll_open(ctx->comm, cfg, rep, &whole) : GT_OK;
    if (s == GT_OK) s = layouts_open(ctx, cfg, rep, lr, &nl);
    for (int r = 0; r < cfg->rounds && s == GT_OK; r++) {
        if (whole) s = gt_coll_round(whole);
        for (int k = 0; k < nl && s == GT_OK; k++) s = gt_coll_round(lr[k].s);
    }
    gt_status c = gt_coll_close(whole, NULL);
    s = s != GT_OK ? s : c;
    for (int k = 0; k < N_LAYOUT_CASES; k++)
        if (lr[k].s || lr[k].sub) s = layout_close(&lr[k], s);
    if (s == GT_OK && cfg->colls) s = run_node_scopes(ctx->comm, cfg, rep);
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
    gt_status s = run_sessions(ctx, &cfg, rep);
    gt_report_free(scratch);
    return s;
}

static void list(FILE *f) {
    for (int t = 0; t < GT_COLL_TEST_COUNT; t++)
        fprintf(f, "  %-28s busbw/algbw per size x dtype x op, #wrong = 0, overhead vs raw "
                   "MPI/NCCL\n",
                gt_coll_test_name((gt_coll_test)t));
    static const char *const what[N_LAYOUT_CASES] = {
        "gpt2-3m's tensor-group all-reduce: B T C fp32 activations on 2 neighbouring ranks",
        "gpt2-3m's pipeline exchange: one micro-batch's activations between 2 neighbours",
        "gpt2-3m's ZeRO-3 gather of one block's parameters over every rank"};
    for (int k = 0; k < N_LAYOUT_CASES; k++)
        fprintf(f, "  %-28s %s (%llu bytes)\n", g_layout_cases[k].scope, what[k],
                (unsigned long long)layout_bytes(k));
}

/* A case filter names one collective (config_of) or one layout case. */
static void names(const gt_suite_ctx *ctx, void (*fn)(void *arg, const char *name), void *arg) {
    (void)ctx;
    for (int t = 0; t < GT_COLL_TEST_COUNT; t++) fn(arg, gt_coll_test_name((gt_coll_test)t));
    for (int k = 0; k < N_LAYOUT_CASES; k++)
        fn(arg, g_layout_cases[k].scope);
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
