/* gauntlet run [SUITE[/CASE]...] and gauntlet list: every selected suite on
 * every requested topology and backend, one report. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/comm.h"
#include "engine/env.h"
#include "engine/timer.h"
#include "gt_config.h"
#include "harness/cli.h"
#include "harness/launcher.h"
#include "harness/mllog.h"
#include "harness/signals.h"
#include "kernels/registry.h"
#include "reports/compare.h"
#include "reports/history.h"
#include "reports/report.h"
#include "suites/collectives.h"
#include "suites/cpu_share.h"
#include "suites/suite.h"

void gt_suite_collectives_configure(const gt_coll_config *cfg);

/* "8", "64K", "1M", "2G" (powers of 1024, as nccl-tests), optional "B"/"iB". */
static int parse_size(const gt_args *a, const char *name, const char *v, uint64_t *out) {
    if (!v) return 0;
    char *end = NULL;
    errno = 0;
    if (!isdigit((unsigned char)v[0])) goto bad;
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || end == v) goto bad;
    uint64_t mul = 1;
    switch (toupper((unsigned char)*end)) {
    case 'K': mul = 1ull << 10; end++; break;
    case 'M': mul = 1ull << 20; end++; break;
    case 'G': mul = 1ull << 30; end++; break;
    default: break;
    }
    if (mul > 1 && (*end == 'i' || *end == 'I')) end++;
    if (*end == 'B' || *end == 'b') end++;
    if (*end != '\0') goto bad;
    if (x == 0 || x > UINT64_MAX / mul) {
        fprintf(stderr, "gauntlet %s: %s %s is out of range (1 .. 2^64 bytes)\n", a->cmd, name,
                v);
        return 0;
    }
    *out = x * mul;
    return 1;
bad:
    fprintf(stderr, "gauntlet %s: %s expects a size such as 8, 64K, 1M or 2G, got '%s'\n",
            a->cmd, name, v);
    return 0;
}

typedef gt_status (*item_parser)(const char *name, int *out);
static gt_status parse_dtype_item(const char *s, int *out) {
    gt_dtype d;
    GT_TRY(gt_dtype_parse(s, &d));
    *out = (int)d;
    return GT_OK;
}
static gt_status parse_op_item(const char *s, int *out) {
    gt_redop o;
    GT_TRY(gt_redop_parse(s, &o));
    *out = (int)o;
    return GT_OK;
}
static gt_status parse_coll_item(const char *s, int *out) {
    gt_coll_test t;
    GT_TRY(gt_coll_test_parse(s, &t));
    *out = (int)t;
    return GT_OK;
}

/* Comma-separated names into a bit mask. */
static int parse_list(const char *name, const char *v, item_parser p, const char *choices,
                      unsigned *mask) {
    if (!v) return 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", v);
    unsigned m = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int bit;
        if (p(tok, &bit) != GT_OK) {
            fprintf(stderr, "gauntlet run: %s: unknown '%s' (choose from %s)\n", name, tok,
                    choices);
            return 0;
        }
        m |= 1u << bit;
    }
    if (!m) {
        fprintf(stderr, "gauntlet run: %s needs at least one of %s\n", name, choices);
        return 0;
    }
    *mask = m;
    return 1;
}

/* ---- the runner ------------------------------------------------------------- */

/* One suite x backend x topology of the plan, and what the estimate knows
 * of it: the cases it will add (gt_suite.count) */
typedef struct unit_plan {
    int suite;        /* index into the run's suites */
    int topo;         /* index into the topologies */
    int expect;       /* results it should add */
} unit_plan;

enum { MAX_UNITS = 32 * 4 * 16 };

typedef struct progress {
    gt_report *rep;
    const char *path; /* NULL off rank 0 */
    FILE *out;        /* NULL: quiet */
    double t0, last_write;
    int unit, units;  /* suite x backend x topology being run, of how many */
    int results;
    /* the estimate: cases left x their measured cost, per suite and topology
     * where it has run, else per suite; suites not run yet are named */
    unit_plan plan[MAX_UNITS];
    int expect_total;
    const gt_suite *const *suites; /* the run's, by plan index */
    int unit_cases;         /* results of the current unit so far */
    double last_case;       /* when the previous case (or the unit) ended */
    double spent[32][16];   /* seconds of cases, per suite and topology */
    int done[32][16];
    int write_failed;
    /* GPU telemetry (rank 0, units on a GPU): every result gets the reading
     * taken when its case started (the previous one's end) and at its end */
    int telemetry;
    size_t annotated;    /* results before this index have had their turn */
    gt_gpu_sample last;  /* the latest reading: the next case's start */
    int have_last;
} progress;

/* Starts telemetry for a unit: results from now on are this unit's. */
static void telemetry_begin(progress *p, int on_gpu) {
    p->telemetry = on_gpu && p->rep && p->path != NULL;
    p->annotated = gt_report_result_count(p->rep);
    p->have_last = p->telemetry && gt_env_gpu_sample(-1, &p->last);
}

/* Gives the results added since the last call the readings around their
 * case. Without NVML (or off a GPU) nothing is recorded. */
static void telemetry_mark(progress *p) {
    if (!p->telemetry) return;
    size_t n = gt_report_result_count(p->rep);
    if (n == p->annotated) return;
    gt_gpu_sample now;
    int have = gt_env_gpu_sample(-1, &now);
    for (size_t i = p->annotated; i < n && (have || p->have_last); i++)
        gt_result_telemetry(gt_report_result_at(p->rep, i), p->have_last ? &p->last : NULL,
                            have ? &now : NULL);
    p->annotated = n;
    if (have) p->last = now;
    p->have_last = have;
}

/* Seconds per case of unit u: measured on its suite and topology, else on
 * its suite at another topology; < 0 when its suite has not run a case yet
 * (cases of another suite say nothing of it: a kernels case takes 0.1 s, a
 * train case 5 s). */
static double case_cost(const progress *p, int u) {
    int su = p->plan[u].suite, t = p->plan[u].topo, n = 0;
    if (p->done[su][t]) return p->spent[su][t] / p->done[su][t];
    double sum = 0;
    for (int k = 0; k < 16; k++) sum += p->spent[su][k], n += p->done[su][k];
    return n ? sum / n : -1;
}

/* Seconds left for the cases still expected of suites that have run some;
 * the suites not timed yet are named in `untimed` ("" when none). */
static double time_left(const progress *p, const gt_suite *const *suites, char *untimed,
                        size_t n) {
    double left = 0;
    int named[32] = {0};
    untimed[0] = 0;
    for (int u = p->unit; u < p->units; u++) {
        int k = p->plan[u].expect - (u == p->unit ? p->unit_cases : 0);
        double c = case_cost(p, u);
        if (k <= 0) continue;
        if (c >= 0) {
            left += k * c;
        } else if (!named[p->plan[u].suite]++) {
            size_t l = strlen(untimed);
            snprintf(untimed + l, n - l, "%s%s", l ? ", " : "", suites[p->plan[u].suite]->name);
        }
    }
    return left;
}

/* After each result: rewrite the report (a crash keeps what finished; at
 * most every 0.5 s, each write is an fsync) and say where the run is. */
/* The node's CPU at the run's start (rank 0): run.node_load, what other
 * processes took of the node since, is set before each write of the
 * report (compare tells a neighbour from the stack's own threads by it). */
static gt_node_cpu g_node_start;

static gt_status write_report(gt_report *rep) {
    gt_node_cpu now;
    gt_node_cpu_now(&now);
    double others, idle;
    if (gt_node_cpu_between(&g_node_start, &now, &others, &idle))
        gt_report_set_node_load(rep, others, idle, now.wall_s - g_node_start.wall_s);
    return gt_report_write(rep);
}

static void case_done(void *ctx, gt_result *res) {
    progress *p = ctx;
    double now = gt_now_ns() * 1e-9;
    if (res) {
        p->results++;
        p->unit_cases++;
        if (p->unit < p->units) {
            int su = p->plan[p->unit].suite, t = p->plan[p->unit].topo;
            p->spent[su][t] += now - p->last_case;
            p->done[su][t]++;
        }
        p->last_case = now;
    }
    telemetry_mark(p);
    if (p->path && !p->write_failed && now - p->last_write >= 0.5) {
        p->last_write = now;
        if (write_report(p->rep) != GT_OK) {
            fprintf(stderr, "gauntlet run: %s\n", gt_last_error());
            p->write_failed = 1;
        }
    }
    if (p->out && res) {
        char untimed[256], eta[320];
        double el = now - p->t0, left = time_left(p, p->suites, untimed, sizeof untimed);
        int total = p->expect_total > p->results ? p->expect_total : p->results;
        if (untimed[0])
            snprintf(eta, sizeof eta, "~%.0f s left + %s, not timed yet", left, untimed);
        else
            snprintf(eta, sizeof eta, "~%.0f s left", left);
        gt_result_status st = gt_result_get_status(res);
        const char *why = st == GT_RESULT_SKIP ? gt_result_message(res) : NULL;
        fprintf(p->out, "  %-5s %s  [%d/%d, %.0f s, %s]%s%s\n", gt_result_status_name(st),
                gt_result_label(res), p->results, total, el, eta, why ? "\n        skipped: " : "",
                why ? why : "");
        fflush(p->out);
    }
}

int gt_cmd_list(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: gauntlet list\nPrints every suite, its cases and what each checks; "
                   "run them with gauntlet run SUITE[/CASE].\n");
            return GT_EXIT_OK;
        }
        /* an ignored argument would look like a filter that matched everything */
        return gt_usage_error("list", "unexpected argument '%s' (gauntlet list takes none)",
                              argv[i]);
    }
    for (const gt_suite *const *s = gt_suites(); *s; s++) {
        printf("%s: %s (topologies %d..%s)\n", (*s)->name, (*s)->description, (*s)->min_ranks,
               (*s)->max_ranks ? "1" : "any");
        if ((*s)->list) (*s)->list(stdout);
    }
    return GT_EXIT_OK;
}

/* ---- a case selection checked before anything runs ----------------------------- */

typedef struct name_list {
    char **v;
    int n, cap;
} name_list;

static void name_add(void *arg, const char *name) {
    name_list *l = arg;
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->v[i], name)) return;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        char **v = realloc(l->v, (size_t)cap * sizeof *v);
        if (!v) return;
        l->v = v;
        l->cap = cap;
    }
    if ((l->v[l->n] = strdup(name))) l->n++;
}

static void names_free(name_list *l) {
    for (int i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v);
}

static int slashes(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '/';
    return n;
}

/* Whether `want` is one of the names the suite selects with at `effort` on
 * `backend` (a trailing '/' as without it). */
static int suite_has(const gt_suite *su, const char *backend, gt_effort effort, const char *want,
                     name_list *l) {
    gt_suite_ctx ctx = {.backend = backend, .effort = effort};
    su->names(&ctx, name_add, l);
    size_t n = strlen(want);
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->v[i], want) || (n > 1 && want[n - 1] == '/' &&
                                       !strncmp(l->v[i], want, n - 1) && !l->v[i][n - 1]))
            return 1;
    return 0;
}

/* Refuses SUITE/CASE when no case of the suite answers to CASE at this
 * effort on any of the backends: names the nearest one, or says that it
 * runs at a higher effort. GT_EXIT_OK or GT_EXIT_USAGE. */
static int check_case(const gt_suite *su, const char *want, const char *const *backends, int nb,
                      gt_effort effort) {
    if (!want || !su->names) return GT_EXIT_OK;
    name_list l = {0}, full = {0};
    int ok = 0, at_full = 0;
    for (int b = 0; b < nb && !ok; b++) ok = suite_has(su, backends[b], effort, want, &l);
    for (int b = 0; b < nb && !ok && !at_full; b++)
        at_full = suite_has(su, backends[b], GT_EFFORT_FULL, want, &full);
    if (!ok && at_full)
        fprintf(stderr, "gauntlet run: %s/%s runs at a higher effort only: add --full (or "
                        "leave out --quick)\n", su->name, want);
    else if (!ok) {
        /* the nearest of the names as deep as the one asked for (a case for a
         * case, an op for an op), else of them all */
        int depth = slashes(want), k = 0;
        const char **same = malloc((size_t)(l.n ? l.n : 1) * sizeof *same);
        for (int i = 0; same && i < l.n; i++)
            if (slashes(l.v[i]) == depth) same[k++] = l.v[i];
        const char *near = same && k ? gt_nearest(want, same, k) : NULL;
        if (!near) near = gt_nearest(want, (const char *const *)l.v, l.n);
        free(same);
        fprintf(stderr, "gauntlet run: suite %s has no case '%s'%s%s%s (gauntlet list names "
                        "them; nothing was run)\n",
                su->name, want, near ? ": did you mean " : "", near ? near : "", near ? "?" : "");
    }
    names_free(&l);
    names_free(&full);
    return ok ? GT_EXIT_OK : GT_EXIT_USAGE;
}

/* ---- the options ---------------------------------------------------------------- */

typedef struct run_opts {
    gt_coll_config coll;
    gt_comm_config comm;
    const char *report_path, *baseline, *backend, *inject, *slowdown, *history_db, *mllog_path;
    int quiet, verbose, max_given, threads;
    gt_effort effort;
    double threshold; /* percent */
    gt_cli_topologies topos;
    const char *sel[32]; /* SUITE or SUITE/CASE, in order */
    int nsel;
} run_opts;

static int run_word(void *opts, const gt_args *a, const char *w) {
    (void)a;
    run_opts *o = opts;
    if (o->nsel == 32) return !gt_usage_error("run", "at most 32 suites or cases");
    o->sel[o->nsel++] = gt_cli_case_name("run", w);
    return 1;
}

static int set_effort(void *opts, const gt_args *a, const gt_cli_opt *o, const char *v) {
    (void)a, (void)v;
    ((run_opts *)opts)->effort = strcmp(o->name, "--quick") == 0 ? GT_EFFORT_QUICK : GT_EFFORT_FULL;
    return 1;
}

static int set_threshold(void *opts, const gt_args *a, const gt_cli_opt *o, const char *v) {
    char buf[64];
    snprintf(buf, sizeof buf, "%s", v ? v : "");
    size_t l = strlen(buf);
    if (l && buf[l - 1] == '%') buf[l - 1] = '\0';
    return gt_parse_double(a, o->name, buf, 0.0, 1000.0, &((run_opts *)opts)->threshold);
}

static int set_inject_delay(void *opts, const gt_args *a, const gt_cli_opt *o, const char *v) {
    (void)a, (void)o;
    ((run_opts *)opts)->inject = v;
    if (v && !strchr(v, ':'))
        return !gt_usage_error("run", "--inject-delay '%s': expected OP:MICROSECONDS, "
                                      "e.g. layernorm_fwd:2000",
                               v);
    return 1;
}

static int set_slowdown(void *opts, const gt_args *a, const gt_cli_opt *o, const char *v) {
    (void)a, (void)o;
    char name[64];
    double f;
    ((run_opts *)opts)->slowdown = v;
    /* the parser's message names the bad item and lists the forms */
    if (v && gt_parse_slowdown(v, name, sizeof name, &f) != GT_OK)
        return !gt_usage_error("run", "--inject-slowdown '%s': expected "
                                      "NAME:FACTOR[,NAME:FACTOR...]: %s",
                               v, gt_last_error());
    return 1;
}

static int set_minbytes(void *opts, const gt_args *a, const gt_cli_opt *o, const char *v) {
    return parse_size(a, o->name, v, &((run_opts *)opts)->coll.min_bytes);
}

static int set_maxbytes(void *opts, const gt_args *a, const gt_cli_opt *o, const char *v) {
    ((run_opts *)opts)->max_given = 1;
    return parse_size(a, o->name, v, &((run_opts *)opts)->coll.max_bytes);
}

/* --colls, --dtypes, --ops: a list of names into a bit mask (data: list_spec). */
typedef struct list_spec {
    item_parser parse;
    const char *choices;
    size_t mask; /* offsetof(run_opts, the mask) */
    int full_matrix; /* naming dtypes or ops asks for every combination */
} list_spec;

static int set_list(void *opts, const gt_args *a, const gt_cli_opt *o, const char *v) {
    (void)a;
    const list_spec *l = o->data;
    run_opts *r = opts;
    int ok = parse_list(o->name, v, l->parse, l->choices, (unsigned *)((char *)opts + l->mask));
    if (l->full_matrix) r->coll.full_matrix = 1;
    return ok;
}

static int set_comm(void *opts, const gt_args *a, const gt_cli_opt *o, const char *v) {
    (void)a, (void)o;
    if (v && strcmp(v, "auto") && strcmp(v, "self") && strcmp(v, "mpi") && strcmp(v, "nccl"))
        return !gt_usage_error("run", "--comm '%s': use auto, self, mpi or nccl", v);
    ((run_opts *)opts)->comm.backend = v;
    return 1;
}

#define OFF(field) offsetof(run_opts, field)
static const list_spec colls_list = {parse_coll_item,
                                     "allreduce,reduce,broadcast,allgather,reduce_scatter,"
                                     "alltoall,sendrecv",
                                     OFF(coll.colls), 0};
static const list_spec dtypes_list = {parse_dtype_item, "fp32,fp64,bf16,fp16,int32,int64",
                                      OFF(coll.dtypes), 1};
static const list_spec ops_list = {parse_op_item, "sum,avg,max,min", OFF(coll.ops), 1};

static const gt_cli_opt run_table[] = {
    {"--backend", NULL, "NAME", GT_CLI_STRING, OFF(backend), .help =
        "cpu (default), ref, cuda, or all (every backend available)"},
    {"--topologies", NULL, "LIST", .off = OFF(topos), .set = gt_cli_set_topologies, .help =
        "rank counts, e.g. 1,2,4 (default: 1, 2, 4 ... up to the\n"
        "job's ranks). Without MPI and asking for more than 1, gauntlet\n"
        "relaunches itself under the build's MPI launcher"},
    {"--quick", NULL, NULL, .set = set_effort, .help = "effort: quick (CI, make run)"},
    {"--full", NULL, NULL, .set = set_effort, .help =
        "effort: full (the default effort is between the two)"},
    {"--threads", NULL, "N", GT_CLI_INT, OFF(threads), 1, 4096, .help =
        "cpu threads per rank (default: cores / largest topology)"},
    {"--report", NULL, "FILE", GT_CLI_STRING, OFF(report_path), .help =
        "the JSON report (rank 0), rewritten atomically per case"},
    {"--baseline", NULL, "FILE", GT_CLI_STRING, OFF(baseline), .help =
        "compare with this report at the end (gauntlet compare);\n"
        "exit 3 on a regression"},
    {"--threshold", NULL, "X%", .set = set_threshold, .help =
        "compare's minimum effect size (default 5%)"},
    {"--history", NULL, "DB", GT_CLI_STRING, OFF(history_db), .help =
        "record the report in this run history (SQLite, created when\n"
        "absent; gauntlet history DB lists it; needs --report)"},
    {"--mllog", NULL, "FILE", GT_CLI_STRING, OFF(mllog_path), .help =
        "MLPerf-style log lines (:::MLLOG {...}) of the run there"},
    {"--comm", NULL, "NAME", .set = set_comm, .help =
        "communicator: auto (mpi when launched by mpirun/srun, else\n"
        "self), self, mpi, or nccl (one GPU per rank; collectives on\n"
        "device buffers against raw NCCL)"},
    {"--comm-timeout", NULL, "S", GT_CLI_DOUBLE, OFF(comm.timeout_s), 0.0, 1e7, .help =
        "watchdog per collective in seconds (default 300)"},
    {"--inject-delay", NULL, "OP:US", .set = set_inject_delay, .help =
        "slow kernel OP by US microseconds per call (tests the gate)"},
    {"--inject-slowdown", NULL, "NAME:F[,NAME:F...]", .set = set_slowdown, .help =
        "each NAME takes its F times as long\n"
        "wherever it is timed (the gate's detection experiment):\n"
        "a kernel op, a case prefix of one (op/dtype/shape), a\n"
        "collective, or a class: gemm, memory, collective\n"
        "(docs/suites.md); in training the first whole op only\n"
        "(docs/profile.md)"},
    {"--quiet", NULL, NULL, GT_CLI_FLAG, OFF(quiet), .help =
        "no per-case lines, only the summary"},
    {"--verbose", NULL, NULL, GT_CLI_FLAG, OFF(verbose), .help =
        "also the raw collectives tables (every size of every\n"
        "combination, nccl-tests' layout)"},
    {.name = "collectives options (nccl-tests'; sizes take K, M, G suffixes):",
     .kind = GT_CLI_SECTION},
    {"-b", "--minbytes", "SIZE", .set = set_minbytes, .help = "first size (default 8 B)"},
    {"-e", "--maxbytes", "SIZE", .set = set_maxbytes, .help =
        "last size (default 64 MiB; --quick stops at 1 MiB)"},
    {"-f", "--stepfactor", "N", GT_CLI_INT, OFF(coll.step_factor), 2, 1 << 20, .help =
        "multiply the size by N each step (default 2)"},
    {"--colls", NULL, "LIST", .set = set_list, .data = &colls_list, .help =
        "collectives to run (default all: allreduce, reduce,\n"
        "broadcast, allgather, reduce_scatter, alltoall, sendrecv)"},
    {"--dtypes", NULL, "LIST", .set = set_list, .data = &dtypes_list, .help =
        "data types (fp32, fp64, bf16, fp16, int32, int64); naming\n"
        "them or --ops runs every dtype x op at every size"},
    {"--ops", NULL, "LIST", .set = set_list, .data = &ops_list, .help =
        "reduction ops (sum, avg, max, min); see --dtypes"},
    {"--iters", NULL, "N", GT_CLI_INT, OFF(coll.iters), 1, 1000000, .help =
        "timed iterations per block (default: adaptive)"},
    {"--warmup", NULL, "N", GT_CLI_INT, OFF(coll.warmup), 0, 1000000, .help =
        "warm-up iterations (default: adaptive)"},
    {"--reps", NULL, "N", GT_CLI_INT, OFF(coll.reps), 1, 32, .help =
        "timed blocks of the primary combination (default 5)"},
    {"--rounds", NULL, "N", GT_CLI_INT, OFF(coll.rounds), 1, 32, .help =
        "passes over the sweep, each timing every row's share of\n"
        "its blocks (default 5; 1: each row timed in one go)"},
    {"--root", NULL, "R", GT_CLI_INT, OFF(coll.root), 0, 1 << 30, .help =
        "root of reduce and broadcast (default 0)"},
    {.name = NULL},
};

static const gt_cli run_cli = {
    .cmd = "run",
    .usage =
        "usage: gauntlet run [SUITE[/CASE] ...] [options]   (gauntlet list: suites and cases)\n"
        "       mpirun -np N gauntlet run ...               (topologies up to N ranks)\n"
        "\n"
        "Runs each selected suite (default: all) on each topology and backend, rewrites\n"
        "the report after every case, prints progress and a summary.\n"
        "\n",
    .epilogue =
        "\n"
        "exit codes: 0 all checks passed, 1 a check failed, 2 usage or environment error,\n"
        "            3 --baseline found a regression\n",
    .opts = run_table,
    .word = run_word,
};

/* ---- the command ---------------------------------------------------------------- */

/* One run of the command: its options, its plan, its job and report. */
typedef struct run_job {
    run_opts o;
    const gt_suite *suites[32];
    const char *cases[32]; /* per suite: the CASE asked for, NULL: all */
    int nsuites;
    const char *backends[4];
    int nbackends;
    gt_comm *comm;
    int rank, n;
    const char *path; /* the report's, rank 0; NULL elsewhere */
    gt_report *rep;
    gt_env env;
    int have_env;
    struct gt_history *hist;
    gt_mllog *ml;
    progress pr;
    int rc;
} run_job;

/* What needs the options together. GT_EXIT_OK to go on. */
static int run_check(run_opts *o) {
    if (o->baseline && !o->report_path)
        return gt_usage_error("run",
                              "--baseline %s needs --report FILE: the new report is "
                              "compared with it",
                              o->baseline);
    if (o->history_db && !o->report_path)
        return gt_usage_error("run", "--history %s needs --report FILE: the report is what is "
                                     "recorded",
                              o->history_db);
    if (o->effort == GT_EFFORT_QUICK && !o->max_given) o->coll.max_bytes = GT_COLL_MATRIX_MAX_BYTES;
    if (o->coll.max_bytes < o->coll.min_bytes)
        return gt_usage_error("run", "-e %llu is below -b %llu",
                              (unsigned long long)o->coll.max_bytes,
                              (unsigned long long)o->coll.min_bytes);
    return GT_EXIT_OK;
}

/* What to run: SUITE or SUITE/CASE, every suite when none is named; on
 * which backends; every CASE checked before anything runs. */
static int run_select(run_job *j) {
    const run_opts *o = &j->o;
    if (o->nsel == 0)
        for (const gt_suite *const *s = gt_suites(); *s; s++) {
            j->suites[j->nsuites] = *s;
            j->cases[j->nsuites++] = NULL;
        }
    for (int i = 0; i < o->nsel; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s", o->sel[i]);
        char *slash = strchr(name, '/');
        if (slash) *slash = '\0';
        const gt_suite *s = gt_suite_find(name);
        if (!s) {
            const char *names[32];
            int k = 0;
            for (const gt_suite *const *x = gt_suites(); *x && k < 32; x++) names[k++] = (*x)->name;
            const char *near = gt_nearest(name, names, k);
            if (near)
                fprintf(stderr, "gauntlet run: no suite '%s': did you mean %s? (gauntlet list "
                                "names them)\n",
                        name, near);
            else
                fprintf(stderr, "gauntlet run: no suite '%s' (gauntlet list names them)\n",
                        name);
            return GT_EXIT_USAGE;
        }
        j->suites[j->nsuites] = s;
        j->cases[j->nsuites++] = slash ? o->sel[i] + (slash - name) + 1 : NULL;
    }
    if (strcmp(o->backend, "all") == 0) {
        static const char *const all[] = {"cpu", "cuda"};
        for (int i = 0; i < 2; i++) {
            gt_backend *be = NULL;
            gt_backend_config bc = {.threads = 1, .device = -1};
            if (gt_backend_new(all[i], &bc, &be) == GT_OK) j->backends[j->nbackends++] = all[i];
            gt_backend_free(be);
        }
    } else if (!strcmp(o->backend, "cpu") || !strcmp(o->backend, "ref") ||
               !strcmp(o->backend, "cuda")) {
        j->backends[j->nbackends++] = o->backend;
    } else {
        return gt_usage_error("run", "--backend '%s': use cpu, ref, cuda or all", o->backend);
    }
    for (int i = 0; i < j->nsuites; i++)
        if (check_case(j->suites[i], j->cases[i], j->backends, j->nbackends, o->effort) !=
            GT_EXIT_OK)
            return GT_EXIT_USAGE;
    return GT_EXIT_OK;
}

/* The world communicator and the topologies (relaunching under mpirun when
 * one process asked for more ranks); threads per rank. GT_EXIT_OK to go
 * on; otherwise the communicator is freed. */
static int run_world(run_job *j, char **argv) {
    run_opts *o = &j->o;
    gt_status s = gt_comm_world(&o->comm, &j->comm);
    if (s != GT_OK) return gt_fail("run", s);
    int rank = j->rank = gt_comm_rank(j->comm), n = j->n = gt_comm_size(j->comm);
    gt_cli_topologies *tp = &o->topos;
    if (tp->n == 0) {
        for (int t = 1; t < n; t *= 2) tp->v[tp->n++] = t;
        tp->v[tp->n++] = n;
    }
    int biggest = 1;
    for (int i = 0; i < tp->n; i++) biggest = tp->v[i] > biggest ? tp->v[i] : biggest;
    if (biggest > n) {
        if (n == 1 && gt_launcher_available() && !getenv("GT_NO_RELAUNCH")) {
            gt_comm_free(j->comm);
            /* the full argv: gt_cmd_run got argv + 1 */
            setenv("GT_NO_RELAUNCH", "1", 1);
            gt_launcher_relaunch(biggest, argv - 1);
            fprintf(stderr, "gauntlet run: could not start %s for %d ranks\n", gt_launcher_name(),
                    biggest);
            return GT_EXIT_USAGE;
        }
        if (rank == 0)
            fprintf(stderr,
                    "gauntlet run: --topologies asks for %d ranks but the job has %d%s: launch "
                    "with %s -n %d\n",
                    biggest, n, GT_HAVE_MPI ? "" : " (this build has no MPI)", gt_launcher_name(),
                    biggest);
        gt_comm_free(j->comm);
        return GT_EXIT_USAGE;
    }
    if (o->coll.root >= n) {
        gt_comm_free(j->comm);
        return gt_usage_error("run", "--root %d: there are only %d ranks", o->coll.root, n);
    }
    /* the same cores per rank on every topology: efficiencies compare like with like */
    if (o->threads == 0) o->threads = gt_default_threads(biggest);
    gt_suite_collectives_configure(&o->coll);
    return GT_EXIT_OK;
}

/* The report, the environment, and before any work an unusable baseline,
 * history database, mllog file or destination, agreed by every rank.
 * GT_EXIT_OK to go on; otherwise all of it and the communicator are freed. */
static int run_report_open(run_job *j, int argc, char **argv) {
    const run_opts *o = &j->o;
    int rank = j->rank;
    j->path = rank == 0 ? o->report_path : NULL;
    gt_status s = gt_report_new(j->path, argc + 1, argv - 1, &j->rep);
    if (s != GT_OK) {
        gt_comm_free(j->comm);
        return gt_fail("run", s);
    }
    /* SIGTERM / SIGINT: the report marked incomplete with the signal (signals.h) */
    gt_signals_report(j->rep);
    if (rank == 0) {
        gt_node_cpu_now(&g_node_start);
        gt_env_collect(&j->env);
        gt_report_set_env(j->rep, &j->env, NULL);
        j->have_env = 1;
    }
    gt_report_threads(rank == 0 ? j->rep : NULL, o->threads);
    gt_report_binding(rank == 0 ? j->rep : NULL, j->comm);
    gt_report_job(rank == 0 ? j->rep : NULL, j->comm);
    int32_t bad = 0;
    if (j->path && o->baseline) {
        /* an unreadable baseline must not cost a whole run before it is
         * noticed: read it now (compared with itself: same parser, same checks) */
        gt_compare *probe = NULL;
        gt_compare_options co = gt_compare_defaults();
        if (gt_compare_files(o->baseline, o->baseline, &co, &probe) != GT_OK) {
            fprintf(stderr, "gauntlet run: --baseline: %s\n", gt_last_error());
            bad = 1;
        }
        gt_compare_free(probe);
    }
    /* the history database and the mllog file, before any work */
    if (j->path && !bad && !gt_history_begin("run", o->history_db, j->path, &j->hist)) bad = 1;
    if (rank == 0 && o->mllog_path && !bad && gt_mllog_open(o->mllog_path, &j->ml) != GT_OK) {
        fprintf(stderr, "gauntlet run: %s\n", gt_last_error());
        bad = 1;
    }
    /* then the destination (which replaces a previous report: only once the
     * baseline is known to be usable) */
    if (j->path && !bad && gt_report_write(j->rep) != GT_OK) {
        fprintf(stderr, "gauntlet run: %s\n", gt_last_error());
        bad = 1;
    }
    s = gt_comm_allreduce(j->comm, &bad, &bad, 1, GT_DTYPE_INT32, GT_REDOP_MAX, NULL);
    if (s == GT_OK && !bad) return GT_EXIT_OK;
    int rc = s != GT_OK ? gt_fail("run", s) : GT_EXIT_USAGE;
    gt_history_close(j->hist);
    gt_mllog_close(j->ml);
    if (j->have_env) gt_env_release(&j->env);
    gt_signals_report(NULL);
    gt_report_free(j->rep);
    gt_comm_free(j->comm);
    return rc;
}

/* The plan, in the order run_unit runs it (the progress estimate), the
 * line that says it, and the mllog run's start. */
static void run_plan(run_job *j) {
    const run_opts *o = &j->o;
    progress *pr = &j->pr;
    pr->rep = j->rep;
    pr->path = j->path;
    pr->out = j->rank == 0 && !o->quiet ? stdout : NULL;
    pr->t0 = gt_now_ns() * 1e-9;
    pr->suites = j->suites;
    for (int i = 0; i < j->nsuites; i++)
        for (int b = 0; b < j->nbackends; b++)
            for (int t = 0; t < o->topos.n && pr->units < MAX_UNITS; t++) {
                const gt_suite *su = j->suites[i];
                int N = o->topos.v[t];
                if (N < su->min_ranks || (su->max_ranks && N > su->max_ranks)) continue;
                gt_suite_ctx c = {.backend = j->backends[b], .threads = o->threads,
                                  .effort = o->effort, .case_filter = j->cases[i]};
                unit_plan *u = &pr->plan[pr->units++];
                u->suite = i;
                u->topo = t;
                u->expect = su->count ? su->count(&c, N) : 1;
                pr->expect_total += u->expect;
            }
    if (j->rank == 0)
        printf("gauntlet run: %d suite(s) x %d topolog%s x %d backend(s) on %d rank(s) over %s, "
               "%s effort, %d thread(s) per rank\n",
               j->nsuites, o->topos.n, o->topos.n == 1 ? "y" : "ies", j->nbackends, j->n,
               gt_comm_backend_name(j->comm),
               o->effort == GT_EFFORT_QUICK  ? "quick"
               : o->effort == GT_EFFORT_FULL ? "full"
                                             : "default",
               o->threads);
    if (j->ml) {
        char platform[600];
        snprintf(platform, sizeof platform, "%s, %s", j->env.host, j->env.cpu_model);
        gt_mllog_event_at(j->ml, __FILE__, __LINE__, GT_MLLOG_START, "init_start", NULL, NULL,
                          gt_mllog_process_start_ms());
        gt_mllog_submission(j->ml, "gauntlet-run", platform);
        gt_mllog_event(j->ml, GT_MLLOG_POINT, "cache_clear", "false", NULL);
        gt_mllog_event(j->ml, GT_MLLOG_END, "init_stop", NULL, NULL);
        gt_mllog_event(j->ml, GT_MLLOG_START, "run_start", NULL, NULL);
    }
}

/* Suite i on backend b, topology t (N ranks): ranks [0, N) run it on their
 * sub-communicator, the others wait at the barrier. A suite's own error is
 * recorded; a communicator failure is returned. *ran: the suite ran here. */
static gt_status run_unit(run_job *j, int i, int b, int t, int *ran) {
    const run_opts *o = &j->o;
    progress *pr = &j->pr;
    int N = o->topos.v[t], rank = j->rank;
    const gt_suite *su = j->suites[i];
    const char *backend = j->backends[b], *want = j->cases[i];
    if (N < su->min_ranks || (su->max_ranks && N > su->max_ranks)) return GT_OK;
    gt_comm *sub = NULL;
    GT_TRY(gt_comm_split(j->comm, rank < N ? 0 : -1, rank, &sub));
    char topo[16];
    snprintf(topo, sizeof topo, "%d", N);
    if (pr->out)
        fprintf(pr->out, "== %s%s%s on %s rank(s), backend %s\n", su->name, want ? "/" : "",
                want ? want : "", topo, backend);
    gt_watchdog_report(j->path ? j->rep : NULL, su->name, want ? want : "running", topo, backend);
    pr->unit_cases = 0;
    pr->last_case = gt_now_ns() * 1e-9;
    char md[256], sb[64], bb[32];
    snprintf(md, sizeof md,
             "\"samples_count\": %zu, \"suite\": %s, \"topology\": %d, \"backend\": %s",
             gt_report_result_count(j->rep), gt_mllog_str(sb, sizeof sb, su->name), N,
             gt_mllog_str(bb, sizeof bb, backend));
    gt_mllog_event(j->ml, GT_MLLOG_START, "block_start", NULL, md);
    /* on a GPU: the cuda backend, or any suite on an nccl communicator */
    gt_report_topology_layout(rank == 0 ? j->rep : NULL, N);
    telemetry_begin(pr, rank == 0 && (!strcmp(backend, "cuda") ||
                                      !strcmp(gt_comm_backend_name(j->comm), "nccl")));
    gt_status s = GT_OK;
    if (sub) {
        gt_suite_ctx ctx = {.comm = sub,
                            .backend = backend,
                            .threads = o->threads,
                            .effort = o->effort,
                            .case_filter = want,
                            .rep = rank == 0 ? j->rep : NULL,
                            .topology = topo,
                            /* the suites' own lines repeat case_done's; the
                             * collectives tables are --verbose */
                            .out = pr->out && o->verbose && su == &gt_suite_collectives ? pr->out
                                                                                         : NULL,
                            .inject_delay = o->inject,
                            .inject_slowdown = o->slowdown,
                            .case_done = case_done,
                            .case_done_ctx = pr};
        s = su->run(&ctx);
        *ran = 1;
        if (s != GT_OK) {
            fprintf(stderr, "gauntlet run: %s: %s [%s]\n", su->name, gt_last_error(),
                    gt_status_name(s));
            if (rank == 0) {
                gt_result *res =
                    gt_report_add_result(j->rep, su->name, want ? want : "suite", topo, backend);
                if (res) gt_result_set_status(res, GT_RESULT_ERROR, gt_last_error());
            }
            j->rc = GT_EXIT_USAGE;
            /* a bad case name is the same everywhere: go on; a communicator
             * failure is not */
            if (s == GT_ERR_INVALID || s == GT_ERR_UNSUPPORTED) s = GT_OK;
        }
        gt_comm_free(sub);
    }
    /* results a suite added without case_done, and the error result above */
    telemetry_mark(pr);
    snprintf(md, sizeof md,
             "\"samples_count\": %zu, \"suite\": %s, \"topology\": %d, \"backend\": %s",
             gt_report_result_count(j->rep), sb, N, bb);
    gt_mllog_event(j->ml, GT_MLLOG_END, "block_stop", NULL, md);
    pr->telemetry = 0;
    pr->unit++;
    if (s == GT_OK) s = gt_comm_barrier_idle(j->comm);
    return s;
}

/* Suite i on every backend and topology. A suite skips the cases it does
 * not know: a misspelt case would otherwise pass with nothing run (rank 0
 * holds the results). */
static gt_status run_suite(run_job *j, int i) {
    int before[GT_RESULT_STATUS_COUNT], after[GT_RESULT_STATUS_COUNT], ran = 0, added = 0;
    gt_status s = GT_OK;
    gt_report_counts(j->rep, before);
    for (int b = 0; b < j->nbackends && s == GT_OK; b++)
        for (int t = 0; t < j->o.topos.n && s == GT_OK; t++) s = run_unit(j, i, b, t, &ran);
    gt_report_counts(j->rep, after);
    for (int k = 0; k < GT_RESULT_STATUS_COUNT; k++) added += after[k] - before[k];
    if (j->rank == 0 && j->cases[i] && ran && added == 0) {
        fprintf(stderr, "gauntlet run: suite %s has no case '%s' (gauntlet list names them)\n",
                j->suites[i]->name, j->cases[i]);
        j->rc = GT_EXIT_USAGE;
    }
    return s;
}

/* The report's end (complete, or stopped by a communicator failure), the
 * exit code from the results, the summary, the mllog run's end. */
static void run_finish(run_job *j, gt_status s) {
    if (s == GT_OK) {
        gt_report_finish(j->rep);
    } else {
        char why[1200];
        snprintf(why, sizeof why, "stopped early: %s", gt_last_error());
        gt_report_set_incomplete(j->rep, why);
    }
    if (j->path && write_report(j->rep) != GT_OK) {
        fprintf(stderr, "gauntlet run: %s\n", gt_last_error());
        j->rc = GT_EXIT_USAGE;
    }
    if (s != GT_OK && j->n > 1) {
        /* peers may be blocked in an operation this rank left: only an abort
         * ends them; the report already holds what finished */
        fflush(NULL);
        gt_comm_abort(j->comm, GT_EXIT_USAGE);
    }
    int counts[GT_RESULT_STATUS_COUNT];
    gt_report_counts(j->rep, counts);
    if (j->rc == GT_EXIT_OK) {
        if (counts[GT_RESULT_ERROR]) j->rc = GT_EXIT_USAGE;
        else if (counts[GT_RESULT_FAIL]) j->rc = GT_EXIT_CHECK;
    }
    if (j->rank == 0) {
        printf("\nsummary (%.0f s):\n", gt_now_ns() * 1e-9 - j->pr.t0);
        gt_report_print_highlights(j->rep, stdout);
        gt_report_print_summary(j->rep, stdout);
        printf("total: %d results: %d pass, %d fail, %d skip, %d error\n",
               counts[GT_RESULT_PASS] + counts[GT_RESULT_FAIL] + counts[GT_RESULT_SKIP] +
                   counts[GT_RESULT_ERROR],
               counts[GT_RESULT_PASS], counts[GT_RESULT_FAIL], counts[GT_RESULT_SKIP],
               counts[GT_RESULT_ERROR]);
        if (j->path) printf("report: %s\n", j->path);
        printf("checks: %s\n", j->rc == GT_EXIT_OK ? "all passed" : "FAILED");
    }
    if (j->ml) {
        char md[160];
        snprintf(md, sizeof md, "\"status\": \"%s\", \"pass\": %d, \"fail\": %d, \"error\": %d",
                 j->rc == GT_EXIT_OK ? "success" : "aborted", counts[GT_RESULT_PASS],
                 counts[GT_RESULT_FAIL], counts[GT_RESULT_ERROR]);
        gt_mllog_event(j->ml, GT_MLLOG_END, "run_stop", NULL, md);
        gt_mllog_close(j->ml);
    }
}

/* --baseline: the new report compared with it (rank 0); its verdict is the
 * exit code when NEW may not ship. */
static void run_compare(run_job *j) {
    const run_opts *o = &j->o;
    if (!o->baseline || j->rank != 0 || !j->path || j->rc == GT_EXIT_USAGE) return;
    gt_compare_options co = gt_compare_defaults();
    co.threshold = o->threshold / 100.0;
    gt_compare *cmp = NULL;
    gt_status cs = gt_compare_files(o->baseline, j->path, &co, &cmp);
    if (cs != GT_OK) {
        fprintf(stderr, "gauntlet run: --baseline: %s\n", gt_last_error());
        j->rc = GT_EXIT_USAGE;
    } else {
        printf("\ncompare with the baseline %s:\n", o->baseline);
        gt_compare_print(cmp, stdout, o->quiet ? GT_DETAIL_SUMMARY : GT_DETAIL_CHANGED);
        if (gt_compare_decide(cmp) != GT_DECISION_SHIP) j->rc = gt_compare_exit_code(cmp);
    }
    gt_compare_free(cmp);
}

int gt_cmd_run(int argc, char **argv) {
    /* large (the progress plan): not on the stack */
    run_job *j = calloc(1, sizeof *j);
    if (!j) return gt_usage_error("run", "out of memory");
    run_opts *o = &j->o;
    o->coll = gt_coll_defaults();
    o->comm = gt_comm_defaults();
    o->backend = "cpu";
    o->effort = GT_EFFORT_DEFAULT;
    o->threshold = 5.0;
    int rc = GT_EXIT_OK;
    if (gt_cli_parse(&run_cli, argc, argv, o, &rc) && (rc = run_check(o)) == GT_EXIT_OK &&
        (rc = run_select(j)) == GT_EXIT_OK && (rc = run_world(j, argv)) == GT_EXIT_OK &&
        (rc = run_report_open(j, argc, argv)) == GT_EXIT_OK) {
        run_plan(j);
        gt_status s = GT_OK;
        for (int i = 0; i < j->nsuites && s == GT_OK; i++) s = run_suite(j, i);
        run_finish(j, s);
        run_compare(j);
        if (j->hist) {
            j->rc = gt_history_finish("run", j->hist, o->history_db, j->path, j->rc);
            gt_history_close(j->hist);
        }
        if (j->have_env) gt_env_release(&j->env);
        gt_signals_report(NULL);
        gt_report_free(j->rep);
        gt_comm_free(j->comm);
        rc = j->rc;
    }
    free(j);
    return rc;
}
