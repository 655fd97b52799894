/* The run summary's highlights (reports.highlights.host): the note that
 * names a library tuning problem, on hand-built collectives results. A
 * reduce-scatter whose raw library call moves data 10x slower than the same
 * library's all-reduce at 1 MiB is named with both figures; an all-gather 2x
 * slower is not (within GT_TUNING_FACTOR); a gap only below 64 KiB is not;
 * an in-place result is not compared; a scope (intra_node/) is compared
 * with its own all-reduce only; without an all-reduce nothing is said. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/tests/check.h"
#include "reports/report.h"

static gt_result *coll(gt_report *rep, const char *case_name, int in_place, double raw_1m,
                       double raw_32k) {
    gt_result *res = gt_report_add_result(rep, "collectives", case_name, "2", "cpu");
    gt_result_param_str(res, "dtype", "fp32");
    gt_result_param_str(res, "op", strstr(case_name, "allgather") ? "none" : "sum");
    gt_result_param_int(res, "in_place", in_place);
    gt_result_metric(res, "busbw_1048576", "GB/s", 1, raw_1m, NULL, 0);
    gt_result_metric(res, "raw_busbw_1048576", "GB/s", 1, raw_1m, NULL, 0);
    gt_result_metric(res, "raw_busbw_32768", "GB/s", 1, raw_32k, NULL, 0);
    return res;
}

static char *highlights(gt_report *rep) {
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    CHECK(f != NULL, "open_memstream");
    if (!f) exit(1);
    gt_report_print_highlights(rep, f);
    fclose(f);
    return buf;
}

int main(void) {
    char *argv[] = {"gauntlet", "run", "collectives"};
    gt_report *rep = NULL;
    CHECK_OK(gt_report_new(NULL, 3, argv, &rep));
    coll(rep, "allreduce/fp32/sum", 0, 6.4, 2.0);
    coll(rep, "reduce_scatter/fp32/sum", 0, 0.64, 1.9);
    coll(rep, "reduce_scatter/fp32/sum", 1, 0.01, 0.01); /* in place: not compared */
    coll(rep, "allgather/fp32", 0, 3.2, 0.1);             /* 2x at 1 MiB; 20x only at 32 KiB */
    coll(rep, "intra_node/allreduce/fp32/sum", 0, 1.0, 1.0);
    coll(rep, "intra_node/reduce_scatter/fp32/sum", 0, 0.9, 0.9); /* slow against the world's */
    coll(rep, "inter_node/reduce_scatter/fp32/sum", 0, 0.01, 0.01); /* no all-reduce there */
    char *out = highlights(rep);
    printf("%s", out);
    CHECK(strstr(out, "note: the library's reduce_scatter/fp32/sum on 2 rank(s) at 1024 KiB: "
                      "0.64 GB/s busbw, 10x below its own allreduce (6.40 GB/s)") != NULL,
          "the slow reduce-scatter named with both figures");
    CHECK(strstr(out, "tuning problem of the library") != NULL, "called a tuning problem");
    CHECK(strstr(out, "allgather/fp32 on") == NULL, "an all-gather 2x slower (20x at 32 KiB) named");
    CHECK(strstr(out, "intra_node/reduce_scatter/fp32/sum on") == NULL,
          "a scope's reduce-scatter judged against another scope's all-reduce");
    CHECK(strstr(out, "inter_node/reduce_scatter/fp32/sum on") == NULL,
          "a reduce-scatter without an all-reduce of its scope named");
    int notes = 0;
    for (const char *q = out; (q = strstr(q, "note:")) != NULL; q++) notes++;
    CHECK(notes == 1, "%d notes, not exactly one", notes);
    free(out);
    gt_report_free(rep);
    return check_done("highlights");
}
