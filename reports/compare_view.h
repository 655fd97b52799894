/* What gt_compare decided, metric by metric, for views other than compare's
 * own text (the HTML page colours its change cells by these verdicts:
 * reports/html_verdicts.c). The rules are compare's (reports/compare.h);
 * nothing here judges anything again. */
#ifndef GT_COMPARE_VIEW_H
#define GT_COMPARE_VIEW_H

#include <stddef.h>

#include "reports/compare.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One metric of a result present in both reports. Strings are borrowed
 * from the gt_compare and live as long as it. */
typedef struct gt_compare_metric_view {
    size_t new_index;   /* the NEW result's place in its (first) report's results[] */
    const char *metric; /* its name */
    gt_verdict verdict; /* the metric's own verdict, after the correction */
    double rel;         /* (new - base) / |base| of the levels judged; NAN when none */
    /* 1 when this verdict can stop NEW from shipping: tested (not derived
     * from another metric, not marked "gate": false, not a time below the
     * timing floor on both sides, with a value on both sides) */
    int gated;
    /* why it does not gate (gated 0): "below the timing floor", "derived"
     * (computed from derived_from, which gets the verdict that counts), the
     * kind of an ungated metric ("numerics", "reference", "state"), "no
     * value", "not comparable" (BASE and NEW of different machine classes),
     * "checks only" (--checks-only); NULL when gated */
    const char *why;
    const char *derived_from; /* the metric it is computed from, or NULL */
    /* slower by its estimate but too noisy to decide within the design's
     * reach (the verdict is ambiguous then) */
    int beyond_reach;
    /* the family it was also judged in whose verdict is not same (else the
     * first of its families), and that family's verdict; NULL when in none */
    const char *family;
    gt_verdict family_verdict;
} gt_compare_metric_view;

/* Calls fn for every metric that both sides of c hold, in compare's order
 * (results as NEW's report lists them). */
typedef void (*gt_compare_metric_fn)(void *ctx, const gt_compare_metric_view *m);
void gt_compare_each_metric(const gt_compare *c, gt_compare_metric_fn fn, void *ctx);

/* 1 when BASE and NEW ran on different machine classes and speed was not
 * judged (compare's NOT COMPARABLE: no --across-machines); the checks,
 * statuses and missing results are judged all the same. */
int gt_compare_not_comparable(const gt_compare *c);

/* Calls fn for each field of the machine class (docs/ci-gating.md, "Machine
 * class": cpu.model, threads.per_rank, topology_digest, ...) whose value
 * differs between BASE and NEW, in compare's order, with the two values as
 * compare prints them ("(absent)" where a side lacks the field). Strings are
 * borrowed from c. */
typedef void (*gt_compare_field_fn)(void *ctx, const char *key, const char *base,
                                    const char *new_);
void gt_compare_each_machine_diff(const gt_compare *c, gt_compare_field_fn fn, void *ctx);

/* Microseconds per unit of a time ("ns", "us", "ms", "s"), 0 when the unit
 * is not a time: the units the timing floor (GT_COMPARE_TIMING_FLOOR_US)
 * applies to. */
double gt_compare_us_per_unit(const char *unit);

#ifdef __cplusplus
}
#endif
#endif
