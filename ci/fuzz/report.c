/* Fuzz target: the report reader behind `gauntlet compare` and `gauntlet
 * report --html` (reports/read.h, reports/compare.h, reports/html.h). The
 * input is written to a file, read by gt_report_read, and compared as NEW
 * against a fixed valid BASE (ci/fuzz/base_report.json, compiled in) and as
 * BASE against that report, then printed and written as JUnit, so that every
 * path from loading to output sees it; gt_html_check_report reads it too. An
 * error is a fine answer; a crash, a leak, undefined behaviour, or compare
 * and the HTML view disagreeing with the reader on whether it is a report are
 * not. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reports/compare.h"
#include "reports/html.h"
#include "reports/read.h"

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

/* 1 when compare took the pair. */
static int exercise(const char *base, const char *new_) {
    gt_compare_options opt = gt_compare_defaults();
    gt_compare *c = NULL;
    gt_error_clear();
    gt_status s = gt_compare_files(base, new_, &opt, &c);
    if (s != GT_OK) {
        if (c != NULL || gt_last_error()[0] == '\0') abort();
        return 0;
    }
    gt_compare_counts k;
    gt_compare_get_counts(c, &k);
    (void)gt_compare_may_ship(c);
    gt_compare_print(c, g_null, GT_DETAIL_ALL);
    if (gt_compare_write_junit(c, g_junit) != GT_OK) abort();
    gt_compare_free(c);
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    put(g_new, data, size);
    gt_report_doc *d = NULL;
    int valid = gt_report_read(g_new, NULL, &d) == GT_OK;
    if (valid != (d != NULL)) abort();
    gt_report_doc_free(d);
    /* one definition of valid: against a valid BASE, compare takes exactly
     * what the reader takes, either way round, and so does the HTML view */
    if (exercise(g_base, g_new) != valid) abort();
    if (exercise(g_new, g_base) != valid) abort();
    if ((gt_html_check_report(g_new) == GT_OK) != valid) abort();
    return 0;
}
