/* Run history: every report of a machine's runs kept in one SQLite database,
 * the series of a metric over those runs, its change points, and the gate
 * against the last good run of the same kind of machine. docs/history.md is
 * the user's description (the schema, the commands, the statistics); this
 * header is the specification.
 *
 * The database (schema version GT_HISTORY_SCHEMA_VERSION, PRAGMA user_version,
 * application_id GT_HISTORY_APP_ID) holds per run the whole report (its JSON
 * text), the columns a listing shows, the flattened environment fingerprint
 * (one row per field) and per result its metrics with their samples. Reports
 * are read with gt_report_read (reports/read.h); results are identified as
 * compare identifies them (gt_compare_identity); change points are decided
 * by compare's statistics (gt_compare_runs).
 *
 * Safety: the database runs in WAL mode with a busy timeout
 * (GT_HISTORY_BUSY_MS), so several writers (runs of one nightly job on
 * several nodes) wait for each other instead of failing; each report is
 * added in one transaction, so a writer that dies (kill -9, a full disk)
 * leaves the database as it was before that report. A file that is not an
 * SQLite database, a database of another program, a corrupt one, or one of a
 * newer schema is refused with a message and never written to.
 *
 * Built without SQLite (GT_WITH_SQLITE=OFF, or libsqlite3 absent) every
 * function returns GT_ERR_UNSUPPORTED with a message that says how to get it.
 */
#ifndef GT_HISTORY_H
#define GT_HISTORY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "engine/status.h"
#include "reports/compare.h"
#include "reports/read.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GT_HISTORY_SCHEMA_VERSION 1
#define GT_HISTORY_APP_ID 0x47544831 /* "GTH1" */
/* How long a writer waits for another one's transaction (milliseconds). */
#define GT_HISTORY_BUSY_MS 60000
/* Change points: runs on each side of a candidate (at most). */
#define GT_HISTORY_WINDOW 8

typedef struct gt_history gt_history;

/* 1 when this build has SQLite (the history works). */
int gt_history_available(void);

/* Opens the database at path. create = 1 creates it (and its schema) when the
 * file is absent or empty; create = 0 refuses an absent file (GT_ERR_IO,
 * "no history database ..."). Errors (nothing is written to the file):
 * GT_ERR_IO cannot be opened or created; GT_ERR_INVALID not an SQLite
 * database, another program's database, corrupt, or a schema newer than this
 * build's; GT_ERR_UNSUPPORTED built without SQLite. */
gt_status gt_history_open(const char *path, int create, gt_history **out);
void gt_history_close(gt_history *h);

/* Records a report (read with gt_report_read) in one transaction. source: the
 * file it came from (kept for the listing; may be NULL). *id: the history's
 * run id (1, 2, ...). *added = 0 when a run with the same run.id is already
 * recorded (nothing is written; *id is that run's). Errors: GT_ERR_IO the
 * database could not be written (busy past GT_HISTORY_BUSY_MS, disk full),
 * GT_ERR_INVALID corrupt, GT_ERR_OOM. */
gt_status gt_history_add(gt_history *h, const gt_report_doc *d, const char *source, int64_t *id,
                         int *added);
/* gt_history_add of the report at path (its errors, and gt_report_read's). */
gt_status gt_history_add_file(gt_history *h, const char *path, int64_t *id, int *added);

/* Which runs a listing or a series takes. NULL fields: no condition. */
typedef struct gt_history_filter {
    const char *since;   /* runs that started at or after this ISO time or date
                            ("2026-11-01", "2026-11-01T08:00:00Z") */
    const char *host;    /* env.host */
    const char *backend; /* results of this backend (listing: runs with one) */
} gt_history_filter;

/* Checks a filter's values (a date that is not one). GT_ERR_INVALID. */
gt_status gt_history_filter_check(const gt_history_filter *f);

/* Prints the runs (id, start time, git revision, host, GPU, driver, CUDA,
 * NCCL, pass/fail/skip/error counts), oldest first; the last `limit` (0:
 * all). Returns the number printed in *n (may be NULL). */
gt_status gt_history_print_runs(gt_history *h, const gt_history_filter *f, size_t limit, FILE *out,
                                size_t *n);

typedef struct gt_history_point {
    int64_t run;     /* the history's run id */
    char *start;     /* the run's start time */
    double level;    /* the median of the samples (the value when there are none) */
    double lo, hi;   /* the samples' smallest and largest (level when none) */
    double *samples; /* the finite samples; at least one value (the level) */
    size_t n_samples;
} gt_history_point;

typedef struct gt_history_change {
    size_t at;            /* index of the first point after the change */
    gt_verdict verdict;   /* faster or slower (the metric's direction) */
    double before, after; /* levels of the runs before and after (mean of run medians) */
    double rel, p;
    int runs_before, runs_after; /* the runs each side the test used */
    char *changed;               /* the fingerprint fields that differ from the run before,
                                    "field: old -> new" joined by "; "; "" when none */
} gt_history_change;

typedef struct gt_history_series {
    char *suite, *case_name, *topology, *backend;
    char *params; /* the identity params (compact JSON), "{}" when none */
    char *metric, *unit;
    char *host_kind; /* the runs' machine class (gt_history_class's host kind: CPU model
                        and count, GPUs, threads per rank): a series never mixes two */
    int higher_better;
    gt_history_point *pts; /* oldest first */
    size_t n;
    gt_history_change *cps;
    size_t ncp;
} gt_history_series;

/* The series of metric `metric` of the results of case `case_name` (its
 * name, or SUITE/CASE) in the runs the filter takes, one series per result
 * identity (topology, backend, params) and machine class (the runs' host
 * kind: runs with 1 and 2 threads per rank make two series, the older class
 * first), each with its change points.
 * case_name NULL: every case, metric NULL: every metric (the HTML view).
 * opt: compare's options for the change points (NULL: its defaults).
 * GT_ERR_INVALID when nothing matches: the message names the cases or the
 * metrics there are. */
gt_status gt_history_series_get(gt_history *h, const gt_history_filter *f, const char *case_name,
                                const char *metric, const gt_compare_options *opt,
                                gt_history_series **out, size_t *n);
void gt_history_series_free(gt_history_series *s, size_t n);

/* The change points of values measured in runs: pts[0..n) oldest first.
 * Left to right, a candidate k is tested (gt_compare_runs) with the runs
 * since the last change point (at most GT_HISTORY_WINDOW) before it against
 * the runs from k (at most GT_HISTORY_WINDOW) after; where the verdict is
 * faster or slower, the candidate with the smallest p among k and the next
 * GT_HISTORY_WINDOW - 1 that also move is the change point, and the search
 * goes on from it. Fills cps (malloc'd; `changed` NULL) and *ncp. */
gt_status gt_history_change_points(const gt_history_point *pts, size_t n, int higher_better,
                                   const char *unit, const gt_compare_options *opt,
                                   gt_history_change **cps, size_t *ncp);

/* 1 when series i of ser[0..n) has a twin in another machine class (same
 * case, metric and identity): its class is then shown beside its name. */
int gt_history_series_class_shown(const gt_history_series *ser, size_t n, size_t i);

/* Prints each series (a line per run: id, time, level, spread, samples) with
 * its change points marked and their changed fingerprint fields. */
void gt_history_print_series(const gt_history_series *s, size_t n, FILE *out);

/* The fingerprint class of a report: host kind (CPU model and cores, GPUs),
 * topology (hwloc digest and the result topologies), backends. */
typedef struct gt_history_class {
    char host_kind[256], topology[192], backends[64];
} gt_history_class;
void gt_history_class_of(const gt_report_doc *d, gt_history_class *c);

/* Good runs the history gate takes as its baseline directory. */
#define GT_HISTORY_GATE_RUNS 5

/* The gate: compares the report at new_path (or the directory of reports
 * there: several runs of the new stack, the first one's class) with the last
 * good runs (every result pass or skip, at least one pass) of its
 * fingerprint class, at most GT_HISTORY_GATE_RUNS of them, excluding runs
 * with a candidate's run.id, by
 * gt_compare_files: several runs are a baseline directory (their spread is
 * the measured noise, families and undecided apply), one run is one run a
 * side. *base_id: the newest of them (its environment is the one compared);
 * *base_runs: how many. GT_ERR_INVALID when the history has no good run of
 * the class (the message names the class and the classes there are). */
gt_status gt_history_gate(gt_history *h, const char *new_path, const gt_compare_options *opt,
                          gt_compare **out, int64_t *base_id, int *base_runs);

/* Checks the database: SQLite's integrity check, and that every run holds
 * as many results as its report had (no report half recorded). GT_OK or
 * GT_ERR_INVALID naming the problem. *runs: the runs it holds. */
gt_status gt_history_check(gt_history *h, int64_t *runs);

/* The report recorded as the history's run `run` (its id, 1, 2, ...), read
 * back with gt_report_read_text. *out: a new handle (gt_report_doc_free).
 * GT_ERR_INVALID no such run; GT_ERR_IO the database could not be read;
 * GT_ERR_UNSUPPORTED built without SQLite; the reader's errors. */
gt_status gt_history_run_report(gt_history *h, int64_t run, gt_report_doc **out);

/* Whether a flattened fingerprint field (a key of the env table: "env.cpu.model",
 * "env.variables.OMPI_MCA_orte_hnp_uri", "git_revision") identifies the stack a run
 * measured: library versions (env.software, env.blas), the CPU's model and counts,
 * the GPUs (without uuid and index), the hwloc topology digest, the OS, threads
 * per rank and their settings (env.threads, and for older reports the OMP_,
 * GOMP_, KMP_, OPENBLAS_, MKL_ and BLIS_ variables), the binding (env.affinity),
 * the MPI transport settings (env.transport), the job's shape (env.job) and
 * gauntlet's own revision. Not: the host name, the memory total, and the other
 * variables a launcher sets (dozens of OMPI_* that differ on every run). */
int gt_history_stack_field(const char *key);

/* A change point's `changed` text ("field: old -> new" joined by "; ") with
 * only the fields gt_history_stack_field takes, in the same form. *hidden:
 * how many fields were left out (may be NULL). A new string (free), NULL
 * when out of memory. */
char *gt_history_stack_changes(const char *changed, int *hidden);

#ifdef __cplusplus
}
#endif
#endif
