/* The run report: one JSON document per run (docs/report-schema.md).
 * This module is the only code that includes jansson.
 *
 * The report is built incrementally: open it at the start of a run, add a
 * result per case as it finishes, and call gt_report_write after each one.
 * Every write replaces the file atomically (temporary file in the same
 * directory, fsync, rename), so a run that dies leaves the last complete
 * report, never a torn one; a destination that cannot be written is an
 * error that leaves the previous file intact.
 *
 * A report is incomplete from its first write until gt_report_finish:
 * summary.complete false, summary.ok false and summary.incomplete.reason
 * saying why where it is known (docs/report-schema.md, "Incomplete
 * reports"), so that a run killed mid-way never reads as a passing one.
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

/* env.threads: the threads per rank the run uses (per_rank: --threads or
 * its default; 0: OpenMP's default, recorded as obtained), what an OpenMP region obtained with them
 * (gt_env_threads_obtained), and the variables that steer threads and
 * their placement (OMP_NUM_THREADS, OMP_PROC_BIND, OMP_PLACES,
 * OMP_WAIT_POLICY, GOMP_SPINCOUNT, OPENBLAS_NUM_THREADS; null when unset).
 * per_rank and obtained are part of the machine class compare judges speed
 * within (docs/ci-gating.md). */
void gt_report_threads(gt_report *r, int per_rank);

/* The node's CPU over the run so far, on rank 0's node (run.node_load): the
 * cores other processes kept busy (cpu_others_cores: every process but
 * this executable's, the job's ranks) and the cores left idle
 * (cpu_idle_cores), averaged over `seconds` from the run's start
 * (suites/cpu_share.h gt_node_cpu_between). Replaces the last. */
void gt_report_set_node_load(gt_report *r, double others, double idle, double seconds);

/* The rank-to-core binding: entry r is "host cpus" of world rank r. */
void gt_report_set_binding(gt_report *r, const char *const *per_rank, int n);

/* The layout of the topology the next results run on, nodes x ranks per
 * node ("2x1", gt_job_layout): every result added from now on carries it
 * as "layout" beside "topology" (the rank count). NULL or "": none. */
void gt_report_set_layout(gt_report *r, const char *layout);

/* The job (env.job, docs/report-schema.md): scheduler, id, node list, nodes,
 * ranks per node, layout, and each rank's host and GPU (reports/job.c).
 * Call after gt_report_set_env. */
struct gt_job;
void gt_report_set_job(gt_report *r, const struct gt_job *job);
/* The rank grid of a training job (after gt_report_set_job): env.job.grid
 * ("dp=2,tp=2,pp=1"), its placement in words, and each per_rank entry's
 * data-parallel replica "dp", tensor-parallel rank "tp" and pipeline
 * stage "pp" (rank = (dp * pp + stage) * tp + tp_rank). */
void gt_report_set_job_grid(gt_report *r, const char *grid, int tp, int pp);

/* Records: an array of objects under a result, or under a top-level
 * section of the report (reports/records.c), for what is per rank or per
 * link (the doctor's tables). A record belongs to its report. */
typedef struct gt_record gt_record;
/* Appends an empty object to res[array] (created when missing). NULL on OOM. */
gt_record *gt_result_record(gt_result *res, const char *array);
/* Appends an empty object to report[section][array]. NULL on OOM. */
gt_record *gt_report_record(gt_report *r, const char *section, const char *array);
/* An object member of a record (created when missing). */
gt_record *gt_record_object(gt_record *rec, const char *key);
void gt_record_str(gt_record *rec, const char *key, const char *value); /* NULL/"": null */
void gt_record_int(gt_record *rec, const char *key, long long value);
void gt_record_num(gt_record *rec, const char *key, double value); /* non-finite: null */
void gt_record_bool(gt_record *rec, const char *key, int value);
/* report[section][key] = value (the section created when missing). */
void gt_report_section_str(gt_report *r, const char *section, const char *key, const char *value);
void gt_report_section_num(gt_report *r, const char *section, const char *key, double value);
void gt_report_section_int(gt_report *r, const char *section, const char *key, long long value);
/* report[section][key] is an array (an empty one when it was not there). */
void gt_report_section_array(gt_report *r, const char *section, const char *key);

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

/* Adds `group` to the result's class families, the array "groups" (created
 * at the first; a name already there is not added again): the families
 * whose metrics compare pools (docs/report-schema.md; the suites name them,
 * suites/suite.h). Not a param: a result's identity does not change. */
void gt_result_group(gt_result *res, const char *group);

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

/* Marks metric `name` (added before) as timed in `rounds` rounds spread over
 * the run, its samples in round order and as many in each round ("rounds":
 * rounds in the report): compare may take each round's block of samples as
 * a replicate even when a round holds a single sample (one timed block of
 * calls, the collectives suite's). A name not added is ignored. */
void gt_result_metric_rounds(gt_result *res, const char *name, int rounds);

/* The machine's state beside each of metric `name`'s n samples (added
 * before, n of them), in ns of a core-to-core round trip
 * (suites/coll_state.h; 0 or below: not measured, null in the report):
 * "state_ns" in the report, only when some sample has one. compare judges
 * the stacks in one state (reports/compare.c, state_adjust). */
void gt_result_metric_state(gt_result *res, const char *name, const double *ns, size_t n);

/* Beside each of metric `name`'s n samples (added before, n of them), the
 * share of its timed block that the job's most delayed rank spent runnable
 * but waiting for a CPU (the scheduler's run-queue delay over the block's
 * wall time: another process on its core; negative: not measured, null in
 * the report): "cpu_wait" in the report, only when some sample has one.
 * compare judges a time that waited as measured, not moved to one machine
 * state (reports/compare_state.h). */
void gt_result_metric_cpu_wait(gt_result *res, const char *name, const double *w, size_t n);

/* Sets member `key` of the result to `value`, taking ownership (replaces an
 * earlier one; NULL value: nothing). For the other reports/ modules that
 * build a section with jansson (the per-op profile, reports/profile.h). */
struct json_t;
void gt_result_set_json(gt_result *res, const char *key, struct json_t *value);

/* A series (e.g. the loss of every step), stored at full precision. */
void gt_result_series(gt_result *res, const char *name, const double *values, size_t n);

/* Allocator statistics of the case. */
void gt_result_alloc_stats(gt_result *res, const char *name, const gt_alloc_stats *st);
/* result.memory.NAME = {keys[i]: bytes[i]} (e.g. a rank's memory by kind). */
void gt_result_memory_table(gt_result *res, const char *name, int n, const char *const *keys,
                            const size_t *bytes);

/* result.traffic = {"definition": definition, "step": step,
 * "bytes_per_step": {keys[i]: bytes[i]}, "formula_bytes_per_step":
 * {keys[i]: formula[i]} (formula NULL: no such object)}: a training case's
 * bytes per step per collective kind beside its mode's formula. */
void gt_result_traffic(gt_result *res, const char *definition, int step, int n,
                       const char *const *keys, const double *bytes, const double *formula);

/* GPU telemetry of the case (docs/report-schema.md, "telemetry"): the
 * readings at its start and at its end, either may be NULL (not recorded).
 * Replaces an earlier call's. Both NULL: nothing is written. */
void gt_result_telemetry(gt_result *res, const gt_gpu_sample *start, const gt_gpu_sample *end);

/* Empties res for a fresh record of the same case (suite, case, topology
 * and backend stay; status pass; no params, checks, metrics or series):
 * a case rewritten as it goes replaces its state so far. */
void gt_result_reset(gt_result *res);

/* Removes key from res's section ("params", "metrics", ...; NULL: the
 * result itself). Absent: nothing happens. */
void gt_result_remove(gt_result *res, const char *section, const char *key);

/* Marks res as the state so far of a case that has not finished:
 * "partial": true, status error with message (how far it got), so that a
 * report left by a killed run counts it as not passed. */
void gt_result_set_partial(gt_result *res, const char *message);
/* 1 when res was marked by gt_result_set_partial (and not reset since). */
int gt_result_is_partial(const gt_result *res);

/* The results added so far, in order (for hooks that annotate the results a
 * suite added since they last looked). at: NULL past the end. */
size_t gt_report_result_count(const gt_report *r);
gt_result *gt_report_result_at(gt_report *r, size_t i);

/* Writes the report now (summary recomputed, end time = now). Until
 * gt_report_finish the file says it is incomplete. After
 * gt_report_write_interrupted it writes nothing and returns GT_OK. */
gt_status gt_report_write(gt_report *r);

/* The run has ended as planned (whatever its results): the next write says
 * summary.complete true, and summary.ok is the results' verdict. */
void gt_report_finish(gt_report *r);

/* The run will not finish; reason (copied; NULL: the default, "not
 * finished ...") is what the next write gives as summary.incomplete.reason.
 * Undoes gt_report_finish. */
void gt_report_set_incomplete(gt_report *r, const char *reason);

/* For a thread other than the one building the report (a signal's): the
 * file is written once more, from the text of the last gt_report_write
 * (never from the document under construction), marked incomplete with
 * reason unless the last write already gave a reason of its own (the first
 * cause known wins); then the report is sealed: later writes do nothing.
 * Nothing is done when the last write was of a finished report, or when
 * there was none; *written (may be NULL) says whether the file was written.
 * Safe to call while the building thread writes: the two never interleave.
 * The file is replaced atomically but not fsynced (the process is about to
 * end, not the machine). */
gt_status gt_report_write_interrupted(gt_report *r, const char *reason, int *written);

/* "suite/case (topology N, backend)", owned by the result. */
const char *gt_result_label(gt_result *res);
/* The result's message (why it was skipped, what went wrong), or NULL. */
const char *gt_result_message(const gt_result *res);

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
