/* gauntlet compare BASE NEW: the CI gate (reports/compare.h, docs/ci-gating.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/cli.h"
#include "reports/compare.h"
#include "reports/gate_stats.h"

static void compare_usage(FILE *f) {
    fprintf(f,
            "usage: gauntlet compare BASE NEW [options]\n"
            "\n"
            "Compares NEW (candidate stack) with BASE (the baseline): every metric, and every\n"
            "family of metrics (an op over its shapes, a class of ops, a collective over its\n"
            "sizes, pooled), gets a verdict (same, faster, slower, undecided, ambiguous)\n"
            "against its run-to-run noise, and\n"
            "every check and result status of NEW must pass. BASE and NEW are each a report\n"
            "(JSON written by --report) or a directory of reports: several runs of one stack,\n"
            "whose spread is then the noise (docs/ci-gating.md).\n"
            "\n"
            "  --threshold X   smallest change of the medians that counts: 5%% (default) or\n"
            "                  0.05\n"
            "  --loss-rtol X   loss curves (series loss) may differ by this relative amount\n"
            "                  at any step (default 0.02); beyond it: a failed check\n"
            "  --alpha X       significance level (default 0.05) for the whole report: p-values\n"
            "                  are corrected for the number of metrics (Holm)\n"
            "  --per-metric-alpha  no correction: alpha applies to each metric alone (with\n"
            "                  thousands of metrics, expect false verdicts)\n"
            "  --across-machines  judge speed even when BASE and NEW ran on different machine\n"
            "                  classes (CPU or GPU model and count, topology, threads per\n"
            "                  rank, ranks and nodes); without it such a compare is NOT\n"
            "                  COMPARABLE (exit 5) and only checks and statuses gate\n"
            "  --checks-only   speed does not gate: metrics get their verdicts and are shown,\n"
            "                  but only checks, result statuses and missing results decide\n"
            "                  (a machine too noisy to gate speed)\n"
            "  --run-noise X   several runs a side: the least run-to-run spread, whatever\n"
            "                  theirs is: 2%% (default) or 0.02\n"
            "  --single-run-noise X  one run a side: the run-to-run spread assumed (their\n"
            "                  samples do not show it): 15%% (default); also the smallest\n"
            "                  slowdown one run a side decides, where above the threshold\n"
            "  --timing-floor US  times below US microseconds are shown, not gated (default 5)\n"
            "  --time-quantile Q  a time's level in a run or round: the Q-quantile of its\n"
            "                  samples, 0.01 to 0.99 or median (default %.2g: what the\n"
            "                  code costs when nothing else got in its way; median for the\n"
            "                  typical call); a run of 15 samples or more, or of the\n"
            "                  collectives' 5 rounds on a machine that was not loaded\n"
            "  --machine-state adjust|off  times that carry the machine's state beside\n"
            "                  their samples (the collectives' core-to-core round trip) are\n"
            "                  judged in one state, with the sides' response to it\n"
            "                  measured within their runs; and a timed block that\n"
            "                  waited for a CPU another process held left out (its run\n"
            "                  has 15 that did not wait) or taken less the wait (adjust,\n"
            "                  default), or as measured\n"
            "  --paired        BASE and NEW are directories of as many runs, run i of each\n"
            "                  made side by side (interleaved A/B, ci/jobs/ab.sh): judge the\n"
            "                  ratios of the pairs\n"
            "  --sequential FIRST:MAX  an adaptive design that looks after FIRST pairs\n"
            "                  (--paired) or NEW runs (BASE a directory of runs) and after\n"
            "                  each further one up to MAX; this compare is the look its\n"
            "                  pairs or NEW runs make, tested at that look's share of alpha,\n"
            "                  so looking again after each one keeps alpha\n"
            "  --spending S    how the sequential design spends alpha over its looks: pocock\n"
            "                  (default) or obf (O'Brien-Fleming)\n"
            "  --suite S[,S]   compare only these suites' results\n"
            "  --metric M[,M]  give verdicts only to these metrics (checks still gate)\n"
            "  --junit FILE    also write JUnit XML there (a testsuite per suite)\n"
            "  --changed       also list every result with a metric that is not same\n"
            "  --verbose       list every result and metric (the default output is a line per\n"
            "                  suite and the results that decide the verdict)\n"
            "  --quiet         the default output (kept for scripts)\n"
            "\n"
            "exit codes: 0 NEW may ship; 3 NEW must not ship (a family or metric slower, a\n"
            "check failed, a result failed or errored, a result that passed in BASE is missing\n"
            "or skipped); 4 undecided (a family, or a metric in no family, is slower than the\n"
            "threshold by its estimate but not shown to be: the output says how many more\n"
            "pairs or runs would decide); 5 not comparable (different machine classes and no\n"
            "--across-machines; nothing else failed); 2 usage error or a file that is not a\n"
            "readable gauntlet report\n",
            GT_COMPARE_TIME_QUANTILE);
}

/* "5%" is a percentage, "0.05" a fraction; a bare "5" is refused rather than
 * read as 500%. */
static int parse_fraction(const gt_args *a, const char *flag, const char *v, double *out) {
    if (!v) return 0;
    size_t n = strlen(v);
    if (n > 0 && v[n - 1] == '%') {
        char num[64];
        if (n - 1 >= sizeof num) n = sizeof num;
        memcpy(num, v, n - 1);
        num[n - 1] = '\0';
        double pct;
        if (!gt_parse_double(a, flag, num, 0, 1000, &pct)) return 0;
        *out = pct / 100.0;
        return 1;
    }
    double x;
    if (!gt_parse_double(a, flag, v, 0, 10, &x)) return 0;
    if (x >= 1) {
        fprintf(stderr,
                "gauntlet compare: %s %s is a fraction of 1 or more; write a "
                "percentage as %s%%\n",
                flag, v, v);
        return 0;
    }
    *out = x;
    return 1;
}

int gt_cmd_compare(int argc, char **argv) {
    gt_args a = {.argc = argc, .argv = argv, .i = 1, .cmd = "compare"};
    gt_compare_options opt = gt_compare_defaults();
    const char *paths[2] = {NULL, NULL}, *junit = NULL, *v = NULL;
    int npaths = 0, err = 0;
    gt_compare_detail detail = GT_DETAIL_SUMMARY;
    while (a.i < argc && !err) {
        if (gt_flag(&a, "--help") || gt_flag(&a, "-h")) {
            compare_usage(stdout);
            return GT_EXIT_OK;
        } else if (gt_opt(&a, "--threshold", &v, &err)) {
            err |= !parse_fraction(&a, "--threshold", v, &opt.threshold);
        } else if (gt_opt(&a, "--run-noise", &v, &err)) {
            err |= !parse_fraction(&a, "--run-noise", v, &opt.run_noise);
        } else if (gt_opt(&a, "--single-run-noise", &v, &err)) {
            err |= !parse_fraction(&a, "--single-run-noise", v, &opt.single_run_noise);
        } else if (gt_opt(&a, "--time-quantile", &v, &err)) {
            if (v && strcmp(v, "median") == 0)
                opt.time_quantile = 0.5;
            else
                err |= !gt_parse_double(&a, "--time-quantile", v, 0.01, 0.99, &opt.time_quantile);
        } else if (gt_opt(&a, "--machine-state", &v, &err)) {
            if (v && (strcmp(v, "adjust") == 0 || strcmp(v, "off") == 0)) {
                opt.machine_state = strcmp(v, "adjust") == 0;
            } else if (v) {
                fprintf(stderr, "gauntlet compare: --machine-state %s: use adjust or off\n", v);
                err = 1;
            }
        } else if (gt_opt(&a, "--timing-floor", &v, &err)) {
            err |= !gt_parse_double(&a, "--timing-floor", v, 0.0, 1e9, &opt.timing_floor_us);
        } else if (gt_opt(&a, "--loss-rtol", &v, &err)) {
            err |= !gt_parse_double(&a, "--loss-rtol", v, 0.0, 1e6, &opt.loss_rtol);
        } else if (gt_opt(&a, "--alpha", &v, &err)) {
            err |= !gt_parse_double(&a, "--alpha", v, 1e-12, 0.5, &opt.alpha);
        } else if (gt_flag(&a, "--paired")) {
            opt.paired = 1;
        } else if (gt_opt(&a, "--sequential", &v, &err)) {
            err |= !gt_parse_sequential("compare", v, &opt);
        } else if (gt_opt(&a, "--spending", &v, &err)) {
            err |= !gt_parse_spending("compare", v, &opt);
        } else if (gt_opt(&a, "--suite", &v, &err)) {
            opt.suites = v;
        } else if (gt_opt(&a, "--metric", &v, &err)) {
            opt.metrics = v;
        } else if (gt_opt(&a, "--junit", &v, &err)) {
            junit = v;
        } else if (gt_flag(&a, "--checks-only")) {
            opt.checks_only = 1;
        } else if (gt_flag(&a, "--across-machines")) {
            opt.across_machines = 1;
        } else if (gt_flag(&a, "--per-metric-alpha")) {
            opt.correction = GT_CORRECTION_NONE;
        } else if (gt_flag(&a, "--quiet")) {
            detail = GT_DETAIL_SUMMARY;
        } else if (gt_flag(&a, "--changed")) {
            detail = GT_DETAIL_CHANGED;
        } else if (gt_flag(&a, "--verbose")) {
            detail = GT_DETAIL_ALL;
        } else if (argv[a.i][0] == '-' && argv[a.i][1] != '\0') {
            return gt_unknown_option("compare", argv[a.i], compare_usage);
        } else if (npaths < 2) {
            paths[npaths++] = argv[a.i++];
        } else {
            return gt_usage_error("compare",
                                  "more than two reports given ('%s'); usage: "
                                  "gauntlet compare BASE NEW (a directory holds "
                                  "several runs of one side)",
                                  argv[a.i]);
        }
    }
    if (err) return GT_EXIT_USAGE;
    if (npaths != 2)
        return gt_usage_error("compare", "needs two reports: gauntlet compare BASE.json "
                                         "NEW.json [--threshold 5%%] [--junit FILE]");
    gt_compare *c = NULL;
    gt_status s = gt_compare_files(paths[0], paths[1], &opt, &c);
    if (s != GT_OK) return gt_fail("compare", s);
    gt_compare_print(c, stdout, detail);
    fflush(stdout);
    int rc = gt_compare_exit_code(c);
    if (junit) {
        s = gt_compare_write_junit(c, junit);
        if (s != GT_OK) {
            /* the verdict stands in the log; a gate must not pass because its
             * artifact could not be written, so a failure to write is 2 */
            gt_compare_free(c);
            return gt_fail("compare", s);
        }
    }
    gt_compare_free(c);
    return rc;
}
