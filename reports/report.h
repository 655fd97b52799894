/* The run report: one JSON document per run (docs/report-schema.md).
 * This module is the only code that includes jansson.
 *
 * The report is built incrementally: open it at the start of a run, add a
 * result per case as it finishes, and call gt_report_write after each one.
 * Every write replaces the file atomically (temporary file in the same
 * directory, fsync, rename), so a run that dies leaves the last complete
 * report, never a torn one; a destination that cannot be written is an
 * error that leaves the previous file intact.
 */
#ifndef GT_REPORT_H
#define GT_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "engine/alloc.h"
#include "engine/env.h"
#include "engine/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GT_REPORT_SCHEMA_VERSION 1

typedef enum gt_result_status {
    GT_RESULT_PASS = 0,
    GT_RESULT_FAIL,
    GT_RESULT_SKIP,
    GT_RESULT_ERROR,
    GT_RESULT_STATUS_COUNT
} gt_result_status;

const char *gt_result_status_name(gt_result_status s); /* "pass", "fail", "skip", "error" */
/* The jansson version this build uses (for `gauntlet env`). */
const char *gt_report_jansson_version(void);

typedef struct gt_report gt_report;
typedef struct gt_result gt_result;

/* Starts a report for the command line argv (copied); path may be NULL
 * (nothing is written). */
gt_status gt_report_new(const char *path, int argc, char **argv, gt_report **out);
void gt_report_free(gt_report *r);

/* Records the environment fingerprint (and measured peaks when not NULL). */
void gt_report_set_env(gt_report *r, const gt_env *env, const gt_peaks *peaks);

/* The rank-to-core binding: entry r is "host cpus" of world rank r. */
void gt_report_set_binding(gt_report *r, const char *const *per_rank, int n);

/* A new result (owned by the report). status starts as pass; a failed check
 * turns it to fail. */
gt_result *gt_report_add_result(gt_report *r, const char *suite, const char *case_name,
                                const char *topology, const char *backend);
void gt_result_set_status(gt_result *res, gt_result_status s, const char *message);
gt_result_status gt_result_get_status(const gt_result *res);

/* Parameters that identify the case (compare matches on them). */
void gt_result_param_str(gt_result *res, const char *key, const char *value);
void gt_result_param_int(gt_result *res, const char *key, long long value);
void gt_result_param_num(gt_result *res, const char *key, double value);

/* A pass/fail check with the measured value and its limit; `passed` decides.
 * detail may be NULL. */
void gt_result_check(gt_result *res, const char *name, int passed, double value, double limit,
                     const char *detail);

/* A check that could not be evaluated in this run (e.g. no measurement was
 * steady enough to judge it): recorded with "passed": null and "evaluated":
 * false and why in detail, so that a reader can tell "not judged" from
 * "failed" and from "not part of this case". It changes no status, and
 * compare treats it as neither a failure nor a vanished check. */
void gt_result_check_unevaluated(gt_result *res, const char *name, double limit,
                                 const char *detail);

/* A metric: unit ("tokens/s"), direction (higher_better 1 or 0), the value
 * reported (usually the median) and the samples it came from (may be NULL/0).
 * min/median/max/n are derived from the samples. */
void gt_result_metric(gt_result *res, const char *name, const char *unit, int higher_better,
                      double value, const double *samples, size_t n);

/* Marks metric `name` (added before) as computed from the samples of metric
 * `from` of the same result (GFLOP/s from a time, tokens/s from ms/step):
 * compare shows its verdict but gates only `from`, so one measurement gives
 * one verdict ("derived_from" in the report). A name not added is ignored. */
void gt_result_metric_derived(gt_result *res, const char *name, const char *from);

/* Marks metric `name` (added before) as not a figure of speed or resources:
 * a numerical error or loss (judged by the result's checks, which a new
 * stack may move within their tolerance) or a momentary state (a clock, a
 * temperature). compare shows it with its verdict but never gates on it
 * ("gate": false and "kind": kind in the report, e.g. "numerics",
 * "state"). A name not added is ignored. */
void gt_result_metric_ungated(gt_result *res, const char *name, const char *kind);

/* Marks metric `name` (added before) as a part of metric `whole` of the same
 * result, in the same unit (the exposed communication of a step): compare
 * judges a change of the part by its size against the whole's level, so
 * that a part that doubles within a step that does not move is no
 * regression ("part_of" in the report). A name not added is ignored. */
void gt_result_metric_part_of(gt_result *res, const char *name, const char *whole);

/* Sets member `key` of the result to `value`, taking ownership (replaces an
 * earlier one; NULL value: nothing). For the other reports/ modules that
 * build a section with jansson (the per-op profile, reports/profile.h). */
struct json_t;
void gt_result_set_json(gt_result *res, const char *key, struct json_t *value);

/* A series (e.g. the loss of every step), stored at full precision. */
void gt_result_series(gt_result *res, const char *name, const double *values, size_t n);

/* Allocator statistics of the case. */
void gt_result_alloc_stats(gt_result *res, const char *name, const gt_alloc_stats *st);

/* GPU telemetry of the case (docs/report-schema.md, "telemetry"): the
 * readings at its start and at its end, either may be NULL (not recorded).
 * Replaces an earlier call's. Both NULL: nothing is written. */
void gt_result_telemetry(gt_result *res, const gt_gpu_sample *start, const gt_gpu_sample *end);

/* The results added so far, in order (for hooks that annotate the results a
 * suite added since they last looked). at: NULL past the end. */
size_t gt_report_result_count(const gt_report *r);
gt_result *gt_report_result_at(gt_report *r, size_t i);

/* Writes the report now (summary recomputed, end time = now). */
gt_status gt_report_write(gt_report *r);

/* "suite/case (topology N, backend)", owned by the result. */
const char *gt_result_label(gt_result *res);

/* A table per suite: results by status, then every failed or error result
 * with its first failed check or message. */
void gt_report_print_summary(gt_report *r, FILE *f);
/* The figures a person runs the suites for, a few lines each, from the
 * results so far: the machine's peaks (health), every scaling efficiency
 * (per case and topology), and for each collective on more than one rank
 * the busbw at its largest size against the raw library's (fp32, sum,
 * out of place). Sections without results are left out. */
void gt_report_print_highlights(gt_report *r, FILE *f);

/* Counts by status, for the exit code. */
void gt_report_counts(const gt_report *r, int counts[GT_RESULT_STATUS_COUNT]);

#ifdef __cplusplus
}
#endif
#endif
