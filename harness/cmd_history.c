/* gauntlet history: the run history in SQLite (reports/history.h,
 * docs/history.md), and the --history DB option of run and train. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/cli.h"
#include "reports/history.h"

static void history_usage(FILE *f) {
    fprintf(
        f, "usage: gauntlet history DB [--since DATE] [--host H] [--backend B] [--last N]\n"
           "       gauntlet history DB --case C --metric M [filters] [--threshold X] [--alpha X]\n"
           "       gauntlet history DB --gate REPORT|DIR [--sequential FIRST:MAX] [--junit FILE]\n"
           "                  [--changed | --verbose]\n"
           "       gauntlet history add DB REPORT.json [REPORT.json ...]\n"
           "       gauntlet history DB --check\n"
           "\n"
           "DB is an SQLite file that gauntlet run/train --history DB (or history add) records\n"
           "each run into (created on first use). Without --case, lists the runs: id, start,\n"
           "git revision, host, GPU, driver, CUDA, NCCL, pass/fail/skip/error counts.\n"
           "\n"
           "  --case C        a case name, or SUITE/CASE: print the series of --metric over\n"
           "                  the runs (one per topology, backend and params) and its change\n"
           "                  points, each with the fingerprint fields that changed there\n"
           "  --metric M      the metric of --case (the message lists a case's metrics)\n"
           "  --since DATE    only runs started at or after DATE (YYYY-MM-DD or an ISO time, UTC)\n"
           "  --host H        only runs on host H\n"
           "  --backend B     only results (runs, when listing) of backend B\n"
           "  --last N        list only the last N runs\n"
           "  --threshold X   change points: the smallest change that counts (5%% default)\n"
           "  --alpha X       change points: the significance level of each test (0.05)\n"
           "  --gate REPORT   compare REPORT with the last good runs (every result passed or\n"
           "                  skipped; up to 5) of its class: same host kind (CPU, GPUs),\n"
           "                  topology (hwloc digest, rank counts) and backends; as gauntlet\n"
           "                  compare. A directory of reports (several runs of the new stack)\n"
           "                  is judged as one side: one run's own spread is not measured\n"
           "                  (docs/ci-gating.md: 3 runs gate much as a baseline directory)\n"
           "  --sequential FIRST:MAX  with --gate DIR: DIR's runs are one look of an adaptive\n"
           "                  design that looks after FIRST runs of the new stack and after\n"
           "                  each further one up to MAX, tested at that look's share of\n"
           "                  alpha (so a job may add a run while the gate is undecided)\n"
           "  --spending S    the design's spending of alpha: pocock (default) or obf\n"
           "  --junit FILE    with --gate: JUnit XML as gauntlet compare writes it\n"
           "  --changed, --verbose  with --gate: more of compare's output\n"
           "  --check         SQLite's integrity check, and that no run is half recorded\n"
           "\n"
           "exit codes: 0 done (--gate: REPORT may ship); 3 --gate: REPORT must not ship;\n"
           "4 --gate: undecided (its needed: line says how many more runs would decide);\n"
           "5 --gate: not comparable (another machine class); 2 usage error, a database that is\n"
           "missing, corrupt, of a newer schema or not\n"
           "gauntlet's (left untouched), or --gate with no good run of the class\n");
}

/* "5%" or 0.05 (as compare). */
static int parse_fraction(const gt_args *a, const char *flag, const char *v, double *out) {
    if (!v) return 0;
    char buf[64];
    snprintf(buf, sizeof buf, "%s", v);
    size_t n = strlen(buf);
    if (n && buf[n - 1] == '%') {
        buf[n - 1] = '\0';
        double pct;
        if (!gt_parse_double(a, flag, buf, 0, 1000, &pct)) return 0;
        *out = pct / 100.0;
        return 1;
    }
    return gt_parse_double(a, flag, buf, 0, 0.999999, out);
}

static int history_add(int argc, char **argv) {
    if (argc < 3)
        return gt_usage_error("history", "add needs a database and reports: gauntlet history add "
                                         "DB REPORT.json [REPORT.json ...]");
    const char *db = argv[1];
    gt_history *h = NULL;
    gt_status s = gt_history_open(db, 1, &h);
    if (s != GT_OK) return gt_fail("history", s);
    int rc = GT_EXIT_OK;
    for (int i = 2; i < argc; i++) {
        int64_t id = 0;
        int added = 0;
        s = gt_history_add_file(h, argv[i], &id, &added);
        if (s != GT_OK) {
            /* the others are still recorded: each report is its own transaction */
            gt_fail("history", s);
            rc = GT_EXIT_USAGE;
            continue;
        }
        printf("history: %s %s as run %lld in %s\n", argv[i],
               added ? "recorded" : "was already recorded", (long long)id, db);
    }
    gt_history_close(h);
    return rc;
}

int gt_cmd_history(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "add") == 0) return history_add(argc - 1, argv + 1);
    gt_args a = {.argc = argc, .argv = argv, .i = 1, .cmd = "history"};
    gt_history_filter f = {0};
    gt_compare_options opt = gt_compare_defaults();
    const char *db = NULL, *case_name = NULL, *metric = NULL, *gate = NULL, *junit = NULL;
    const char *v = NULL;
    int err = 0, check = 0, last = 0, spending = 0;
    gt_compare_detail detail = GT_DETAIL_SUMMARY;
    while (a.i < argc && !err) {
        if (gt_flag(&a, "--help") || gt_flag(&a, "-h")) {
            history_usage(stdout);
            return GT_EXIT_OK;
        } else if (gt_opt(&a, "--case", &v, &err)) {
            case_name = v;
        } else if (gt_opt(&a, "--metric", &v, &err)) {
            metric = v;
        } else if (gt_opt(&a, "--since", &v, &err)) {
            f.since = v;
        } else if (gt_opt(&a, "--host", &v, &err)) {
            f.host = v;
        } else if (gt_opt(&a, "--backend", &v, &err)) {
            f.backend = v;
        } else if (gt_opt(&a, "--last", &v, &err)) {
            err |= !gt_parse_int(&a, "--last", v, 1, 1 << 30, &last);
        } else if (gt_opt(&a, "--threshold", &v, &err)) {
            err |= !parse_fraction(&a, "--threshold", v, &opt.threshold);
        } else if (gt_opt(&a, "--alpha", &v, &err)) {
            err |= !gt_parse_double(&a, "--alpha", v, 1e-12, 0.5, &opt.alpha);
        } else if (gt_opt(&a, "--gate", &v, &err)) {
            gate = v;
        } else if (gt_opt(&a, "--sequential", &v, &err)) {
            err |= !gt_parse_sequential("history", v, &opt);
        } else if (gt_opt(&a, "--spending", &v, &err)) {
            err |= !gt_parse_spending("history", v, &opt);
            spending = 1;
        } else if (gt_opt(&a, "--junit", &v, &err)) {
            junit = v;
        } else if (gt_flag(&a, "--changed")) {
            detail = GT_DETAIL_CHANGED;
        } else if (gt_flag(&a, "--verbose")) {
            detail = GT_DETAIL_ALL;
        } else if (gt_flag(&a, "--check")) {
            check = 1;
        } else if (argv[a.i][0] == '-' && argv[a.i][1] != '\0') {
            return gt_unknown_option("history", argv[a.i], history_usage);
        } else if (!db) {
            db = argv[a.i++];
        } else {
            return gt_usage_error("history",
                                  "unexpected argument '%s' (gauntlet history DB takes one "
                                  "database; to record reports: gauntlet history add DB "
                                  "REPORT.json ...)",
                                  argv[a.i]);
        }
    }
    if (err) return GT_EXIT_USAGE;
    if (!db)
        return gt_usage_error("history", "no database given: gauntlet history DB [--case C "
                                         "--metric M] (gauntlet history --help)");
    if (metric && !case_name)
        return gt_usage_error("history",
                              "--metric %s needs --case C: the series is one case's "
                              "metric",
                              metric);
    if (case_name && !metric)
        return gt_usage_error("history",
                              "--case %s needs --metric M (run it with --metric "
                              "anything to see the case's metrics)",
                              case_name);
    if ((gate != NULL) + (case_name != NULL) + check > 1)
        return gt_usage_error("history", "--gate, --case and --check are separate uses: give "
                                         "one");
    if (junit && !gate) return gt_usage_error("history", "--junit needs --gate REPORT");
    if ((opt.seq_max > 0 || spending) && !gate)
        return gt_usage_error("history", "--sequential and --spending need --gate DIR: they "
                                         "judge the candidate runs as one look of a design");
    if (spending && opt.seq_max <= 0)
        return gt_usage_error("history", "--spending needs --sequential FIRST:MAX");
    gt_status s = gt_history_filter_check(&f);
    if (s != GT_OK) return gt_fail("history", s);
    gt_history *h = NULL;
    s = gt_history_open(db, 0, &h);
    if (s != GT_OK) return gt_fail("history", s);
    int rc = GT_EXIT_OK;
    if (check) {
        int64_t runs = 0;
        s = gt_history_check(h, &runs);
        if (s != GT_OK)
            rc = gt_fail("history", s);
        else
            printf("history: %s is consistent: %lld run(s), each complete\n", db, (long long)runs);
    } else if (gate) {
        gt_compare *c = NULL;
        int64_t base = 0;
        int nbase = 0;
        s = gt_history_gate(h, gate, &opt, &c, &base, &nbase);
        if (s != GT_OK) {
            rc = gt_fail("history", s);
        } else if (nbase > 1) {
            printf("history: gate %s against the last %d good runs of its class in %s (the "
                   "newest: run %lld)\n",
                   gate, nbase, db, (long long)base);
        } else {
            printf("history: gate %s against run %lld of %s, the last good run of its class "
                   "(one run: checks and large changes only)\n",
                   gate, (long long)base, db);
        }
        if (s == GT_OK) {
            gt_compare_print(c, stdout, detail);
            fflush(stdout);
            rc = gt_compare_exit_code(c);
            if (junit && (s = gt_compare_write_junit(c, junit)) != GT_OK)
                rc = gt_fail("history", s);
            gt_compare_free(c);
        }
    } else if (case_name) {
        gt_history_series *ser = NULL;
        size_t n = 0;
        s = gt_history_series_get(h, &f, case_name, metric, &opt, &ser, &n);
        if (s != GT_OK) {
            rc = gt_fail("history", s);
        } else {
            gt_history_print_series(ser, n, stdout);
            gt_history_series_free(ser, n);
        }
    } else {
        size_t n = 0;
        s = gt_history_print_runs(h, &f, (size_t)last, stdout, &n);
        if (s != GT_OK)
            rc = gt_fail("history", s);
        else if (n == 0)
            printf("history: no run in %s%s\n", db,
                   f.since || f.host || f.backend ? " matches the filters" : "");
    }
    gt_history_close(h);
    return rc;
}

int gt_history_begin(const char *cmd, const char *db, const char *report_path,
                     struct gt_history **h) {
    *h = NULL;
    if (!db) return 1;
    if (!report_path) {
        gt_usage_error(cmd, "--history %s needs --report FILE: the report is what is recorded", db);
        return 0;
    }
    gt_status s = gt_history_open(db, 1, h);
    if (s != GT_OK) {
        fprintf(stderr, "gauntlet %s: --history: %s\n", cmd, gt_last_error());
        return 0;
    }
    return 1;
}

int gt_history_finish(const char *cmd, struct gt_history *h, const char *db,
                      const char *report_path, int rc) {
    if (!h) return rc;
    int64_t id = 0;
    int added = 0;
    gt_status s = gt_history_add_file(h, report_path, &id, &added);
    if (s != GT_OK) {
        fprintf(stderr, "gauntlet %s: --history: %s\n", cmd, gt_last_error());
        return rc == GT_EXIT_OK ? GT_EXIT_USAGE : rc;
    }
    printf("history: run %lld %s in %s (gauntlet history %s)\n", (long long)id,
           added ? "recorded" : "was already recorded", db, db);
    return rc;
}
