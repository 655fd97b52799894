/* compare: the CI gate. Reads two reports (docs/report-schema.md), BASE (the
 * stored baseline) and NEW (the candidate stack), matches their results,
 * gives every metric present in both a noise-aware verdict and decides
 * whether NEW may ship. docs/ci-gating.md explains the rules for users; this
 * header is the specification.
 *
 * Matching: a result is identified by suite, case, topology, backend and its
 * params, except the params listed in gt_compare_excluded_params (values
 * that are measured, not chosen: a weights digest, the backend's
 * description, ...). When one report holds several results with the same
 * identity, the k-th of BASE matches the k-th of NEW.
 *
 * Verdict of a metric (direction from its "better": higher|lower; "slower"
 * means worse in that direction, whatever the unit), with the relative
 * change of the medians rel = (new - base) / |base|, the threshold t and a
 * p-value p:
 *   - both sides >= GT_COMPARE_MIN_SAMPLES samples: p from a two-sided
 *     Mann-Whitney U test (normal approximation, tie and continuity
 *     corrections). p < alpha and |rel| >= t: faster/slower; p >= alpha and
 *     |rel| < t: same; otherwise ambiguous (a large change hidden in noise,
 *     or a real shift smaller than t).
 *   - fewer samples on a side (and more than one on some side): the
 *     [min, max] ranges. Disjoint, |rel| >= t and p < alpha, where p =
 *     2 / C(nb + nn, nb) is the chance that ranges separate with no real
 *     change (3 vs 3: 0.1, so never enough): faster/slower. Overlapping and
 *     |rel| < t: same. Otherwise ambiguous.
 *   - one value on each side: same when |rel| < t, else ambiguous. One
 *     sample never makes a regression; conformance is judged by checks[],
 *     never by metrics.
 * gt_compare_files corrects the p-values for the number of metrics (Holm)
 * unless the options say GT_CORRECTION_NONE; gt_compare_samples judges one
 * metric alone.
 *
 * A metric whose report says "derived_from": M (a rate computed from the
 * samples of time M of the same result) gets its verdict printed but is not
 * tested or counted: M is, when both reports have it (else it is gated
 * itself), so one measurement gives one verdict.
 * NEW must not ship when any metric is slower (unless checks_only), any check fails in NEW (or a
 * check that BASE had is absent), a result's status is fail or error in
 * NEW, or a result that passed in BASE is absent or skipped in NEW.
 */
#ifndef GT_COMPARE_H
#define GT_COMPARE_H

#include <stddef.h>
#include <stdio.h>

#include "engine/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Below this many samples on either side the U test is not used: its normal
 * approximation is rough under 5, and with 4 vs 4 even fully separated
 * samples cannot reach p < 0.05. */
#define GT_COMPARE_MIN_SAMPLES 5

typedef enum gt_verdict {
    GT_VERDICT_SAME = 0,
    GT_VERDICT_FASTER,    /* better in the metric's direction */
    GT_VERDICT_SLOWER,    /* worse in the metric's direction: a regression */
    GT_VERDICT_AMBIGUOUS, /* neither shown to differ nor shown to be the same */
    GT_VERDICT_COUNT
} gt_verdict;

/* "same", "faster", "slower", "ambiguous". */
const char *gt_verdict_name(gt_verdict v);

typedef enum gt_compare_correction {
    GT_CORRECTION_HOLM = 0, /* alpha bounds the chance of any false verdict (default) */
    GT_CORRECTION_NONE,     /* alpha applies to each metric on its own */
} gt_compare_correction;

typedef struct gt_compare_options {
    double threshold; /* smallest relative change of the medians that matters (0.05) */
    double alpha;     /* significance level (0.05), for the whole report with HOLM */
    gt_compare_correction correction;
    double loss_rtol; /* loss curves (series "loss") of a matched result may differ by at
                         most this relative amount at any step (0.02) */
    int checks_only;  /* 1: metrics get their verdicts, shown, but none decides the gate:
                         only checks, result statuses and missing results do (a machine
                         too noisy to gate speed) */
} gt_compare_options;

gt_compare_options gt_compare_defaults(void);

/* NULL-terminated list of the params left out of a result's identity. */
extern const char *const gt_compare_excluded_params[];

/* Two-sided p-value of the Mann-Whitney U test of samples a[na] and b[nb]
 * (normal approximation with tie and continuity corrections). Non-finite
 * values must be removed by the caller. 1 when either side is empty or every
 * value is equal. When u_out is not NULL it receives U of a. */
double gt_mann_whitney_p(const double *a, size_t na, const double *b, size_t nb, double *u_out);

/* How a verdict was reached. */
typedef enum gt_compare_method {
    GT_METHOD_U_TEST = 0, /* Mann-Whitney U */
    GT_METHOD_RANGES,     /* [min, max] ranges */
    GT_METHOD_SINGLE,     /* one value each side */
    GT_METHOD_NONE,       /* a side has no finite value */
} gt_compare_method;

/* The verdict of one metric from its samples (finite values; n >= 1 each
 * side, or the verdict is ambiguous with method NONE). higher_better gives
 * the direction. Fills the medians, rel (NAN when base median is 0 and new is
 * not: reported as a large change) and p (NAN when no test ran) when the
 * pointers are not NULL. */
gt_verdict gt_compare_samples(const double *base, size_t nb, const double *new_, size_t nn,
                              int higher_better, const gt_compare_options *opt,
                              gt_compare_method *method, double *base_median, double *new_median,
                              double *rel, double *p);

typedef struct gt_compare gt_compare;

/* Loads both reports and compares them. Errors (nothing is returned, the
 * last error says what is wrong with which file and what to do):
 * GT_ERR_IO the file cannot be read; GT_ERR_INVALID not JSON, not a gauntlet
 * report, or a schema_version newer than GT_REPORT_SCHEMA_VERSION. */
gt_status gt_compare_files(const char *base_path, const char *new_path,
                           const gt_compare_options *opt, gt_compare **out);
void gt_compare_free(gt_compare *c);

typedef struct gt_compare_counts {
    int same, faster, slower, ambiguous; /* metric verdicts */
    int metrics_one_side;                /* metrics in only one report (informational) */
    int derived;                         /* metrics computed from another of their result
                                            ("derived_from"): shown, not counted above */
    int failed_checks;                   /* checks failing in NEW, or in BASE and absent in NEW */
    int failed_results;                  /* status error, or fail without a failed check, in NEW */
    int missing;                         /* passed in BASE; absent or skipped in NEW */
    int only_base;                       /* in BASE only, not passing there (informational) */
    int only_new;                        /* in NEW only (informational) */
    int matched;                         /* results in both */
    int fingerprint_diffs;
} gt_compare_counts;

void gt_compare_get_counts(const gt_compare *c, gt_compare_counts *out);

/* 1 when nothing above stops NEW from shipping. */
int gt_compare_may_ship(const gt_compare *c);

/* Prints the fingerprint differences, the table (quiet: only rows that are
 * not "same"), the list of regressions and failures naming each case, and
 * the summary line ("compare: ...: NEW may ship" / "NEW MUST NOT SHIP"). */
void gt_compare_print(const gt_compare *c, FILE *f, int quiet);

/* Writes JUnit XML: a testsuite per suite; per result a testcase "status"
 * (failure: failed check, error, missing) and a testcase per metric
 * (failure: slower). Written to a temporary file next to path, then renamed:
 * a reader never sees half a file. GT_ERR_IO when it cannot be written. */
gt_status gt_compare_write_junit(const gt_compare *c, const char *path);

#ifdef __cplusplus
}
#endif
#endif
