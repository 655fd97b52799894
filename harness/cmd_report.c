/* gauntlet report: turn reports into something a person reads. For now one
 * view, the self-contained HTML page (reports/html.h, docs/html-report.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/cli.h"
#include "reports/html.h"

static void report_usage(FILE *f) {
    fprintf(f, "usage: gauntlet report REPORT.json [REPORT.json ...] --html OUT.html [options]\n"
               "       gauntlet report [REPORT.json ...] --history DB --html OUT.html\n"
               "\n"
               "Writes one self-contained HTML page (opens offline: no network, no external\n"
               "fonts or scripts) showing the reports side by side: runs, failed checks and\n"
               "errors, summary counts, the environment fingerprint with differences\n"
               "highlighted, collective bandwidth, training throughput, scaling and loss\n"
               "charts, and the kernels table with the change against the first report,\n"
               "coloured by gauntlet compare's verdict for it.\n"
               "\n"
               "  --html FILE   the page to write (replaced atomically); required\n"
               "  --title TEXT  the page's heading (default \"gauntlet report\")\n"
               "  --full        embed the reports unchanged (default: what the page draws,\n"
               "                each metric's value to 6 digits, without units, samples and\n"
               "                spreads: about a quarter of the size)\n"
               "  --history DB  also the run history (gauntlet history): per case and metric a\n"
               "                trend plot with the samples' spread and the change points, the\n"
               "                metrics compare gates first, those that changed first among them\n"
               "  --history-case C    only this case's plots (or SUITE/CASE)\n"
               "  --history-metric M  only this metric's plots\n"
               "\n"
               "exit codes: 0 written, 2 usage error or an input that is not a readable\n"
               "            gauntlet report (nothing is written then)\n");
}

int gt_cmd_report(int argc, char **argv) {
    gt_args a = {.argc = argc, .argv = argv, .i = 1, .cmd = "report"};
    const char *html = NULL, *title = NULL, *v = NULL;
    gt_html_history hist = {0};
    int err = 0, n = 0, full = 0;
    /* inputs are at most argc - 1; argv outlives this call, so borrow */
    const char **inputs = calloc((size_t)(argc > 1 ? argc : 1), sizeof *inputs);
    if (!inputs) return gt_usage_error("report", "no memory");
    while (a.i < argc && !err) {
        if (gt_flag(&a, "--help") || gt_flag(&a, "-h")) {
            report_usage(stdout);
            free(inputs);
            return GT_EXIT_OK;
        } else if (gt_opt(&a, "--html", &v, &err)) {
            html = v;
        } else if (gt_opt(&a, "--title", &v, &err)) {
            title = v;
        } else if (gt_opt(&a, "--history", &v, &err)) {
            hist.db = v;
        } else if (gt_opt(&a, "--history-case", &v, &err)) {
            hist.case_name = v;
        } else if (gt_opt(&a, "--history-metric", &v, &err)) {
            hist.metric = v;
        } else if (gt_flag(&a, "--full")) {
            full = 1;
        } else if (strcmp(argv[a.i], "--") == 0) {
            for (a.i++; a.i < argc; a.i++)
                inputs[n++] = argv[a.i];
        } else if (argv[a.i][0] == '-' && argv[a.i][1] != '\0') {
            gt_unknown_option("report", argv[a.i], report_usage);
            err = 1;
        } else {
            inputs[n++] = argv[a.i++];
        }
    }
    int rc = GT_EXIT_OK;
    if (err) {
        rc = GT_EXIT_USAGE;
    } else if ((hist.case_name || hist.metric) && !hist.db) {
        rc = gt_usage_error("report", "--history-case and --history-metric need --history DB");
    } else if (n == 0 && !hist.db) {
        rc = gt_usage_error("report", "no report given (usage: gauntlet report A.json "
                                      "[B.json ...] --html OUT.html)");
    } else if (!html || !html[0]) {
        rc = gt_usage_error("report", "--html OUT.html is required (the only view so far)");
    } else {
        gt_status s = gt_html_write_history(html, inputs, n, title, full, &hist);
        if (s != GT_OK)
            rc = gt_fail("report", s);
        else
            printf("report: %s (%d report%s%s%s)\n", html, n, n == 1 ? "" : "s",
                   hist.db ? ", history " : "", hist.db ? hist.db : "");
    }
    free(inputs);
    return rc;
}
