/* Fuzz target: the report reader behind `gauntlet compare` and `gauntlet
 * report --html` (reports/compare.h, reports/html.h). The input is written
 * to a file and compared as NEW against a fixed valid BASE
 * (ci/fuzz/base_report.json, compiled in) and as BASE against that report,
 * then printed and written as JUnit, so that every path from loading to
 * output sees it; gt_html_check_report reads it too. An error is a fine
 * answer; a crash, a leak or undefined behaviour is not. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reports/compare.h"
#include "reports/html.h"

#include "ci/fuzz/base_report.inc" /* g_base_report: base_report.json as a string */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char g_dir[64], g_base[128], g_new[128], g_junit[128];
static FILE *g_null;

static void put(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
        perror(path);
        abort();
    }
}

static void cleanup(void) {
    unlink(g_base);
    unlink(g_new);
    unlink(g_junit);
    rmdir(g_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    /* tmpfs when there is one: the JUnit writer fsyncs, which on a disk
     * would cost more than everything else together. */
    const char *root = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(g_dir, sizeof g_dir, "%s/gt-fuzz-report-XXXXXX", root);
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        abort();
    }
    snprintf(g_base, sizeof g_base, "%s/base.json", g_dir);
    snprintf(g_new, sizeof g_new, "%s/new.json", g_dir);
    snprintf(g_junit, sizeof g_junit, "%s/junit.xml", g_dir);
    put(g_base, g_base_report, strlen(g_base_report));
    g_null = fopen("/dev/null", "w");
    if (!g_null) abort();
    atexit(cleanup);
    return 0;
}

static void exercise(const char *base, const char *new_) {
    gt_compare_options opt = gt_compare_defaults();
    gt_compare *c = NULL;
    gt_error_clear();
    gt_status s = gt_compare_files(base, new_, &opt, &c);
    if (s != GT_OK) {
        if (c != NULL || gt_last_error()[0] == '\0') abort();
        return;
    }
    gt_compare_counts k;
    gt_compare_get_counts(c, &k);
    (void)gt_compare_may_ship(c);
    gt_compare_print(c, g_null, GT_DETAIL_ALL);
    if (gt_compare_write_junit(c, g_junit) != GT_OK) abort();
    gt_compare_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    put(g_new, data, size);
    exercise(g_base, g_new);
    exercise(g_new, g_base);
    (void)gt_html_check_report(g_new);
    return 0;
}
