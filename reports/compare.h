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
 * Each side is one report or a directory of reports: several runs of one
 * stack (a baseline kept together). The first report in name order gives
 * the environment and the list of results; the results of the others are
 * matched to it by identity.
 *
 * Verdict of a metric (direction from its "better": higher|lower; "slower"
 * means worse in that direction, whatever the unit). The run, not the
 * sample, is the unit of replication: the samples of one run share the
 * machine's state and are not independent. Per side:
 *   - level: the mean of the run medians (one run: its median);
 *   - replicates: the run medians when the side has several runs, else the
 *     medians of GT_COMPARE_BLOCKS blocks of consecutive samples (at least
 *     3 samples each; a block stands in for a run, so its spread is taken
 *     as a run's).
 * rel = (new - base) / |base|. The noise, s^2 the replicates' variance
 * pooled over both sides (df its degrees of freedom):
 *   - a side with several runs (method RUNS): var = s^2 + (run_noise
 *     base)^2, se = sqrt(var (1/runs_base + 1/runs_new)), p the two-sided
 *     tail of Student's t with df at |new - base| / se;
 *   - one run each side (method BLOCKS): the blocks show a run's own noise
 *     but not how runs differ, which is assumed; s is robust here, 1.4826
 *     times the median absolute deviation of each side's block medians
 *     (pooled as k - 1 times its square), so that one block of stalled
 *     steps does not widen the noise of a whole run: var = s^2 +
 *     (single_run_noise base)^2, se = sqrt(2 var), p the normal tail.
 *   - paired (options.paired, both sides as many runs, run i of each run
 *     side by side: interleaved A/B): the log ratios ln(new_i / base_i)
 *     are the replicates; rel = exp(their mean) - 1, se = sqrt((s^2 +
 *     run_noise^2) / pairs) on the log scale, Student's t on pairs - 1
 *     degrees of freedom. When every run of both sides holds its samples in
 *     GT_COMPARE_BLOCKS equal blocks (the kernels suite's rounds), the
 *     blocks' log ratios, pairs x blocks, are summarized nested
 *     (gt_gs_summarize_nested: pooled over pairs x blocks - 1 df when the
 *     pairs differ no more than their blocks by an F test at 0.25).
 * The A/A experiment of docs/ci-gating.md sets both defaults.
 *
 * Families (gt_compare_files; docs/ci-gating.md "Families"): the tested
 * metrics that stand on their own (not derived, not ungated, not a part of
 * another, judged from replicates, no side lifted to the timing floor) are
 * grouped by suite and op (the case's first path component), topology,
 * backend, direction and metric stem (the name without a trailing
 * "_<digits>": a collective's sizes), and again by each class a result
 * names in its "groups" (kernels: gemm, memory; collectives: collective). A
 * group of two or more is a family, a hypothesis of its own: its members'
 * log ratios are pooled with weights 1 / (their own spread^2 +
 * run_noise^2): PAIRED, per pair, then Student's t over the pairs (pairs -
 * 1 df, run_noise as the least spread); RUNS, per run (each member centred
 * on its BASE mean), then a two-sample t; BLOCKS, the level ratios, with
 * single_run_noise shared by all members (pooling does not shrink it).
 *
 * The correction: one weighted Holm procedure over the families
 * (GT_COMPARE_FAMILY_SHARE of the weight, evenly) and the tested metrics
 * (the rest; all of it when there is no family), on two-sided p-values, at
 * alpha (or the sequential look's share of it): alpha bounds the chance
 * that an unchanged stack gets any slower or faster verdict, family or
 * metric. Each hypothesis is then judged with its two-sided interval at the
 * level it was tested at (1 - level):
 *   - rejected and |rel| >= threshold: faster or slower;
 *   - the interval inside (-threshold, +threshold): same;
 *   - slower by the threshold or more by its estimate, not rejected, and
 *     the noise measured (RUNS or PAIRED; not checks_only): undecided, for
 *     a family and for a metric in no family (a member's doubt is its
 *     family's), with the pairs (runs a side) that would make the interval
 *     exclude no change if the spread held (needed); never "may ship".
 *     When that is beyond reach (more than as many again as there are, at
 *     the last look of a sequential design) it is still undecided, counted
 *     as beyond_reach and said to be too noisy to decide here;
 *   - one run a side (BLOCKS), its run noise assumed: it decides only large
 *     changes, slowdowns of the threshold or of single_run_noise, whichever
 *     is larger (its output says so). A family or a metric in no family
 *     slower by that much by its estimate, not rejected, is undecided too
 *     (held: GT_COMPARE_LOADED_RUNS runs a side measure how runs differ),
 *     never "may ship"; a smaller estimate is within how two runs of one
 *     stack differ (an idle machine's families up to +10%) and not gated;
 *   - a metric one of whose sides timed a neighbour in every run (every
 *     batch waited most of its time for a CPU: compare_state.h) is judged
 *     alone, out of its families, and undecided where it is slower (held);
 *   - otherwise ambiguous. Where either side holds one
 *     run (one run a side; a baseline directory against one candidate run,
 *     as history --gate with one report), a member of a family moves only
 *     with one of its families (the family its gatekeeper) or beyond
 *     GT_COMPARE_ALONE_FACTOR; else it is ambiguous, counted "alone".
 *   - no replicates on either side (too few samples): same when |rel| < t,
 *     else ambiguous; such a metric never makes a regression.
 *   - a time (unit ns, us, ms, s) whose level is below timing_floor_us on
 *     both sides: reported, never gated (call overhead and the timer's
 *     resolution, not work); counted as below_floor. Below the floor on
 *     one side only (runs, blocks): that side's level is taken as the floor
 *     itself ("at most the floor" is all such a figure says), so 2.6 ->
 *     5.1 us is no change while 2.6 -> 50 us is a regression of 900%.
 * A metric that a report marks "gate": false (its "kind": numerics for an
 * error or a loss, which the checks judge; state for a clock or a
 * temperature) is shown with its verdict, never tested or gated (counted as
 * ungated).
 * Every tested metric and family gets its detectable change: t(level) se,
 * never below the threshold.
 * gt_compare_samples and gt_compare_runs judge one metric alone, with the
 * rules before families (p < alpha and |rel| >= threshold: moved; |rel| <
 * threshold: same; else ambiguous): the run history's change points.
 *
 * A metric whose report says "derived_from": M (a rate computed from the
 * samples of time M of the same result) gets its verdict printed but is not
 * tested or counted: M is, when both reports have it (else it is gated
 * itself), so one measurement gives one verdict.
 * NEW must not ship when any family or metric is slower (unless checks_only),
 * any check fails in NEW (or a check that BASE had is absent), a result's
 * status is fail or error in NEW, or a result that passed in BASE is absent
 * or skipped in NEW; otherwise it is undecided while a family or a metric
 * in no family is undecided (gt_compare_decide).
 */
#ifndef GT_COMPARE_H
#define GT_COMPARE_H

#include <stddef.h>
#include <stdio.h>

#include "engine/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Blocks a single run's samples are cut into (fewer when there are under
 * 3 samples per block). */
#define GT_COMPARE_BLOCKS 5
/* Run-to-run noise as a fraction of the base level: the floor added to the
 * measured spread of several runs, and what is assumed where both sides are
 * single runs (docs/ci-gating.md: the A/A experiment sets it). */
#define GT_COMPARE_RUN_NOISE 0.02
#define GT_COMPARE_SINGLE_RUN_NOISE 0.15
/* One run a side: a member that moved while none of its families did is
 * gated only beyond this factor (either way): A/A pairs on a 2-core VM
 * showed single cases 1.8-2.5x slower for a whole run (docs/ci-gating.md). */
#define GT_COMPARE_ALONE_FACTOR 3.0
/* ... and up to this factor such a member slower is UNDECIDED, not gated
 * either way: on an AMD Zen 5 VM one size of one collective sat 4-7.5x
 * slower for a whole A/A run (broadcast bf16 262144 B: 13-35 us in 15
 * runs, 105 us in one), and one run a side failed 2 of 10 A/A draws of
 * collectives on it (docs/ci-gating.md, "An AMD Zen 5 VM"). More runs
 * decide it; beyond this factor it is gated. */
#define GT_COMPARE_ALONE_DECIDE 10.0
/* Runs a side on a loaded machine (another process's load) before a
 * slowdown shown between runs fails the gate; with fewer it is UNDECIDED: a
 * neighbour can slow a whole family for one run, unseen by the wait probe
 * (docs/ci-gating.md, "Adaptive candidate runs"). Also the runs a side that
 * one run a side's held slowdown asks for, on any machine: they measure how
 * runs differ, which one run a side assumes (docs/ci-gating.md, "One run a
 * side holds a slowdown it cannot show"). */
#define GT_COMPARE_LOADED_RUNS 3
/* On a loaded machine a member of a family that did not move is not gated
 * alone where its level moved by less than this (in time): the neighbour's
 * delays add to each call (a collective of 5-10 us held at 40-70 us for a
 * whole run); a case slower by milliseconds is the stack's. */
#define GT_COMPARE_LOADED_SHIFT_US 250.0
/* On a loaded machine a slowdown of this much a call or more (in time) is
 * decided however few runs a side: the neighbour's delays seen added up to
 * 2 ms a call for a whole run (a collective of 1 ms at 2.9 ms, one of 4 us
 * at 2 ms: docs/ci-gating.md, "One run a side on a loaded machine") where
 * the run had batches that did not wait; a run whose every batch waited is
 * held apart (a kernel of two threads, one preempted: 10 ms a call). */
#define GT_COMPARE_LOADED_DECIDE_US 5000.0
/* Interleaved pairs in a loaded window: a pair with a run whose timed
 * blocks waited for a CPU GT_STATE_LOADED of the time or more (another
 * process on the machine) is set aside where at least this many pairs, and
 * no fewer than are set aside, ran without; the others decide
 * (docs/ci-gating.md, "A loaded window"). */
#define GT_COMPARE_CLEAN_PAIRS 3
/* Default timing floor in microseconds: host kernel calls cost 0.3-3 us
 * before any work (the kernels suite's n=1 cases), CUDA events resolve
 * about 0.5 us. */
#define GT_COMPARE_TIMING_FLOOR_US 5.0
/* A time's level in a run (or a block of one run a side): the 0.1-quantile
 * of its samples, where every run holds GT_COMPARE_QUANTILE_SAMPLES or more,
 * or where they are the collectives' GT_COMPARE_BLOCKS rounds a run on a
 * machine that was not loaded; else, and for every other metric, the median
 * (docs/ci-gating.md, "A time's level: a low quantile of the run" and "The
 * collectives' rounds"). */
#define GT_COMPARE_TIME_QUANTILE 0.1
#define GT_COMPARE_QUANTILE_SAMPLES 15
/* The share of alpha's weight that the family tests get in the one
 * correction over families and metrics (the metrics share the rest). A
 * systematic change shows in a family first: most of the weight there. */
#define GT_COMPARE_FAMILY_SHARE 0.75

typedef enum gt_verdict {
    GT_VERDICT_SAME = 0,
    GT_VERDICT_FASTER,    /* better in the metric's direction */
    GT_VERDICT_SLOWER,    /* worse in the metric's direction: a regression */
    GT_VERDICT_AMBIGUOUS, /* neither shown to differ nor shown to be the same */
    GT_VERDICT_UNDECIDED, /* slower by the threshold or more by its estimate, not shown:
                             more pairs or runs would decide; NEW may not ship yet */
    GT_VERDICT_COUNT
} gt_verdict;

/* "same", "faster", "slower", "ambiguous", "undecided". */
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
    int across_machines; /* 1: compare speed even when the machine classes differ
                            (labelled so); 0: NOT COMPARABLE then (see gt_compare_decide) */
    int checks_only;  /* 1: metrics get their verdicts, shown, but none decides the gate:
                         only checks, result statuses and missing results do (a machine
                         too noisy to gate speed) */
    double run_noise; /* several runs: floor of their measured spread (fraction of the base
                         level; GT_COMPARE_RUN_NOISE) */
    double single_run_noise; /* one run each side: the run-to-run spread assumed beyond
                                the blocks' (GT_COMPARE_SINGLE_RUN_NOISE) */
    double timing_floor_us; /* times below this are not gated (GT_COMPARE_TIMING_FLOOR_US) */
    double time_quantile;   /* a time's level in a run or block: this quantile of its samples
                               (0.5: the median; GT_COMPARE_TIME_QUANTILE) */
    int machine_state;      /* 1: times whose samples carry the machine's state are judged
                               in one state (reports/compare_state.h); 0: as measured */
    int paired;             /* both sides directories of as many runs: run i of each ran
                               side by side (interleaved A/B); judge their ratios */
    const char *suites;     /* comma-separated suites to compare (NULL: all); the others'
                               results are left out entirely */
    const char *metrics;    /* comma-separated metric names that get verdicts (NULL: all);
                               the others are left out (checks and statuses still gate) */
    int seq_first, seq_max; /* a sequential design (seq_max > 0): looks after seq_first,
                               seq_first + 1, ..., seq_max pairs (paired) or NEW runs
                               (unpaired: a baseline directory or history against a
                               growing NEW side); this compare is the look its count
                               makes, tested at that look's share of alpha
                               (gt_gs_look_alpha) */
    int spending;           /* gt_gs_spending of the sequential design (Pocock: 0) */
} gt_compare_options;

gt_compare_options gt_compare_defaults(void);

/* NULL-terminated list of the params left out of a result's identity. */
extern const char *const gt_compare_excluded_params[];

/* How a verdict was reached. */
typedef enum gt_compare_method {
    GT_METHOD_RUNS = 0, /* replicates: run medians (a side with several runs) */
    GT_METHOD_PAIRED,   /* replicates: ratios of paired runs (interleaved A/B) */
    GT_METHOD_BLOCKS,   /* replicates: block medians of single runs */
    GT_METHOD_SINGLE,   /* no replicates: never a regression */
    GT_METHOD_FLOOR,    /* a time below the timing floor: not gated */
    GT_METHOD_NONE,     /* a side has no finite value */
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

/* The same for a metric measured in several runs each side (the run-history
 * change points, reports/history.h): run i of BASE holds base[base_cut[i]
 * .. base_cut[i + 1]) (base_cut has base_runs + 1 entries, base_cut[0] = 0),
 * likewise NEW. With two or more runs on either side the replicates are the
 * run medians (method RUNS), with one run each the blocks of its samples
 * (BLOCKS), exactly as gt_compare_files judges one metric; unit (NULL: none)
 * decides the timing floor. No correction for several tests: opt->alpha
 * applies to this one. The levels are the means of the run medians. */
gt_verdict gt_compare_runs(const double *base, const size_t *base_cut, int base_runs,
                           const double *new_, const size_t *new_cut, int new_runs,
                           int higher_better, const char *unit, const gt_compare_options *opt,
                           gt_compare_method *method, double *base_level, double *new_level,
                           double *rel, double *p);

struct gt_report_result;
/* A result's identity, the key compare matches results by (suite, case,
 * topology, backend and the params not in gt_compare_excluded_params; the
 * fields joined by 0x1f). A new string (free it), NULL when out of memory. */
char *gt_compare_identity(const struct gt_report_result *r);

typedef struct gt_compare gt_compare;

/* Loads both sides (a report or a directory of reports each) and compares
 * them. Every report is read by gt_report_read (reports/read.h), with
 * "BASE" or "NEW" naming it. Errors (nothing is returned, the last error
 * says what is wrong with which file, where, and what to do):
 * GT_ERR_IO a file cannot be read, or a directory holds no .json report;
 * GT_ERR_INVALID not JSON or not a valid report (reports/read.h: a
 * schema_version newer than GT_REPORT_SCHEMA_VERSION among others), a
 * selection (suites, metrics) that names nothing in either report, or an
 * incomplete BASE report (summary.complete false: its run did not finish;
 * the message names the file and its reason). An incomplete NEW report is
 * compared, and NEW must not ship (counts.incomplete_new). */
gt_status gt_compare_files(const char *base_path, const char *new_path,
                           const gt_compare_options *opt, gt_compare **out);
void gt_compare_free(gt_compare *c);

typedef struct gt_compare_counts {
    int same, faster, slower, ambiguous; /* metric verdicts */
    int undecided;                       /* metrics in no family that are undecided */
    int families;                        /* families tested (two members or more) */
    int families_slower, families_undecided, families_faster;
    int beyond_reach;                    /* of the undecided families and metrics, those too
                                            noisy to decide within the design's reach */
    int metrics_one_side;                /* metrics in only one report (informational) */
    int derived;                         /* metrics computed from another of their result
                                            ("derived_from"): shown, not counted above */
    int below_floor;                     /* times below the timing floor: shown, not
                                            counted above */
    int ungated;                         /* metrics a report marks "gate": false
                                            (numerics, state): shown, not counted above */
    int failed_checks;                   /* checks failing in NEW, or in BASE and absent in NEW */
    int failed_results;                  /* status error, or fail without a failed check, in NEW */
    int missing;                         /* passed in BASE; absent or skipped in NEW */
    int only_base;                       /* in BASE only, not passing there (informational) */
    int only_new;                        /* in NEW only (informational) */
    int matched;                         /* results in both */
    int incomplete_new;                  /* NEW reports whose run did not finish
                                            (summary.complete false): NEW must not ship */
    int fingerprint_diffs;
    int machine_diffs; /* of them, parts of the machine class (gt_compare_decide) */
    int state_adjusted;   /* gated times judged in one machine state (compare_state.h) */
    int state_confounded; /* gated times whose sides ran in different states, no run in two */
    int state_within;     /* of the adjusted, those whose slope is the one within runs */
    int busy_unloaded[2]; /* timed blocks of BASE, NEW that waited for a CPU: less the wait */
    int busy_dropped[2];  /* ... and those left out (they waited longer than they took) */
    int busy_times;       /* times with such blocks */
    int pairs_aside;      /* interleaved pairs set aside: a run of each on a loaded machine */
    int runs_aside[2];    /* ... of them, BASE's and NEW's runs that were loaded */
    double state_ref_ns, state_hi_ns; /* the adjusted ones' reference state (least) and
                                         the farthest state seen (0.9-quantile, most) */
} gt_compare_counts;

void gt_compare_get_counts(const gt_compare *c, gt_compare_counts *out);

/* 1 when nothing above stops NEW from shipping and nothing that gates is
 * undecided. */
int gt_compare_may_ship(const gt_compare *c);

typedef enum gt_compare_decision {
    GT_DECISION_SHIP = 0,    /* NEW may ship */
    GT_DECISION_MUST_NOT,    /* a regression, a failure, a missing result, an incomplete NEW */
    GT_DECISION_UNDECIDED,   /* none of those, but a family or a metric in no family is
                                undecided: more pairs or runs would decide */
    GT_DECISION_NOT_COMPARABLE, /* no failed check, result or missing one, but BASE and
                                   NEW ran on different machine classes (CPU or GPU model
                                   and count, topology, threads, ranks): speed not judged */
} gt_compare_decision;

/* The machine class of a report, what speed may be compared within: the
 * env's cpu.model, cpu.sockets, cpu.physical, cpu.logical, topology_digest,
 * the GPUs' names and count, threads.per_rank and threads.obtained, and the
 * job's ranks, nodes and ranks per node. A part only one side records
 * (older reports have no threads) does not count. gt_compare_files marks
 * the differing ones among the fingerprint differences (printed first, as
 * "machine class"). */

/* The gate's decision; MUST_NOT outranks NOT_COMPARABLE and UNDECIDED. */
gt_compare_decision gt_compare_decide(const gt_compare *c);

/* How much gt_compare_print shows. */
typedef enum gt_compare_detail {
    GT_DETAIL_SUMMARY = 0, /* a line per suite and the results that decide the verdict */
    GT_DETAIL_CHANGED,     /* and every result with a metric that is not "same" */
    GT_DETAIL_ALL,         /* every result and metric */
} gt_compare_detail;

/* Prints the fingerprint differences, a summary per suite (results, verdict
 * counts, the detectable changes), the results the detail asks for, the
 * list of regressions and failures naming each case, and the summary line
 * ("compare: ...: NEW may ship" / "NEW MUST NOT SHIP"). */
void gt_compare_print(const gt_compare *c, FILE *f, gt_compare_detail detail);

/* Writes JUnit XML: a testsuite per suite; per result a testcase "status"
 * (failure: failed check, error, missing) and a testcase per metric
 * (failure: slower). Written to a temporary file next to path, then renamed:
 * a reader never sees half a file. GT_ERR_IO when it cannot be written. */
gt_status gt_compare_write_junit(const gt_compare *c, const char *path);

#ifdef __cplusplus
}
#endif
#endif
