/* Reading a report: the one definition of a valid gauntlet report
 * (docs/report-schema.md), used by compare, the HTML view and whatever else
 * reads reports back (run history, prediction).
 *
 * A report is valid when it is a JSON object with
 *   - `schema_version`: an integer from 1 to GT_REPORT_SCHEMA_VERSION;
 *   - `run` and `env`: objects (`run.id`, `run.git_revision`, `run.start`,
 *     `run.end`: strings when present); `summary`: an object when present
 *     (`summary.complete` a boolean, `summary.incomplete` an object with a
 *     string `reason`, when present);
 *   - `results`: an array (empty is valid: a run that died before its first
 *     case finished), each result an object with
 *       - `suite`, `case`, `topology`, `backend`: strings;
 *       - `status`: "pass", "fail", "skip" or "error"; `message`: a string
 *         when present;
 *       - `params`: an object when present; `series`: an object of arrays of
 *         numbers (null for a non-finite value) when present;
 *       - `checks`: an array of objects, each with a string `name` and
 *         `passed` true or false, or null with `evaluated` false (a check
 *         the run could not judge); `value` and `limit` numbers or null,
 *         `detail` a string, when present;
 *       - `metrics`: an object of objects, each with `better` "higher" or
 *         "lower"; when present `unit` a string, `value`, `min`, `median`,
 *         `max` numbers or null, `samples` an array of numbers or nulls,
 *         `n` an integer, `derived_from`, `part_of`, `kind` strings, `gate`
 *         a boolean.
 * Anything else (unknown keys at any level, `memory`, `telemetry`) is
 * tolerated and left to the callers that use it.
 *
 * A run that dies leaves the last complete report (the writer replaces the
 * file whole after every case, reports/report.h): that file is valid and
 * holds the results that finished. A file cut short after it was written (a
 * copy, a full disk) is not JSON, and the message says that it ends early.
 */
#ifndef GT_REPORT_READ_H
#define GT_REPORT_READ_H

#include <stddef.h>

#include "engine/status.h"
#include "reports/report.h"

#ifdef __cplusplus
extern "C" {
#endif

/* jansson's document type; include <jansson.h> to use the raw JSON. */
struct json_t;

typedef enum gt_check_state {
    GT_CHECK_FAILED = 0,
    GT_CHECK_PASSED = 1,
    GT_CHECK_UNEVALUATED = 2, /* "passed": null, "evaluated": false */
} gt_check_state;

/* Every pointer below is owned by the report handle and lives as long as it. */
typedef struct gt_report_check {
    const char *name;
    gt_check_state state;
    double value, limit; /* NAN when null or absent */
    const char *detail;  /* NULL when absent */
} gt_report_check;

typedef struct gt_report_metric {
    const char *name;
    const char *unit;          /* "" when absent */
    int higher_better;         /* "better": "higher" */
    double value;              /* NAN when null or absent */
    const double *samples;     /* the finite samples in their order (nulls left out) */
    size_t n_samples;          /* 0 (samples NULL) when there are none */
    const char *derived_from;  /* NULL when absent */
    const char *part_of;       /* NULL when absent */
    int gated;                 /* 0 when "gate": false */
    const char *kind;          /* "numerics", "state", ...; NULL when absent */
    struct json_t *json;       /* the metric's object */
} gt_report_metric;

typedef struct gt_report_result {
    size_t index; /* its place in results[] */
    const char *suite, *case_name, *topology, *backend;
    gt_result_status status;
    const char *message; /* NULL when absent */
    const gt_report_check *checks;
    size_t n_checks;
    const gt_report_metric *metrics; /* in the report's order */
    size_t n_metrics;
    struct json_t *params; /* the params object; NULL when absent */
    struct json_t *json;   /* the result's object */
} gt_report_result;

typedef struct gt_report_doc gt_report_doc;

/* Result names renamed since reports were first written: a case named
 * old_name, or old_name/..., and params.model old_name read as new_name
 * (the model preset "gpt2-small" is "gpt2-3m" since: models/model.h,
 * gt_model_preset_renamed), so that an old report's results pair with a new
 * one's in compare, the history and the HTML page (docs/models.md,
 * "Renamed"). NULL-terminated. */
typedef struct gt_report_rename {
    const char *old_name, *new_name;
} gt_report_rename;
extern const gt_report_rename gt_report_renames[];

/* Reads and checks the report at path (results under an old name read
 * under the new one: gt_report_renames). role names the file in messages
 * ("BASE": "the BASE report 'p' ..."; NULL: "report 'p' ..."). On success
 * *out is a new handle (gt_report_doc_free). Errors (*out NULL; the last
 * error names the file, the place in it, the problem and what to do):
 * GT_ERR_IO the file cannot be read or is a directory; GT_ERR_INVALID it is
 * not JSON, or not a valid report as the comment at the top says; GT_ERR_OOM. */
gt_status gt_report_read(const char *path, const char *role, gt_report_doc **out);

/* Whether a directory entry is a report of a directory of runs: its name
 * ends in ".json" and is not hidden (compare's and history --gate's sides;
 * a scandir filter). */
struct dirent;
int gt_report_json_entry(const struct dirent *e);

/* The same for a report held in memory (len bytes of text, no terminator
 * needed); name stands for the path in messages. */
gt_status gt_report_read_text(const char *name, const char *role, const char *text, size_t len,
                              gt_report_doc **out);

void gt_report_doc_free(gt_report_doc *d);

/* The path (or name) it was read from. */
const char *gt_report_doc_path(const gt_report_doc *d);
int gt_report_doc_schema_version(const gt_report_doc *d);
/* run.id and run.git_revision; "" when absent. */
const char *gt_report_doc_run_id(const gt_report_doc *d);
const char *gt_report_doc_git_revision(const gt_report_doc *d);

/* NULL when the report is complete (summary.complete true, or absent: the
 * reports of gauntlet before it wrote the field); else why it is not
 * (summary.incomplete.reason, or "no reason recorded"), owned by d. */
const char *gt_report_doc_incomplete(const gt_report_doc *d);

size_t gt_report_doc_result_count(const gt_report_doc *d);
/* The i-th result; NULL past the end. */
const gt_report_result *gt_report_doc_result(const gt_report_doc *d, size_t i);

/* A result's check or metric by name; NULL when it has none. */
const gt_report_check *gt_report_result_check(const gt_report_result *r, const char *name);
const gt_report_metric *gt_report_result_metric(const gt_report_result *r, const char *name);

/* The whole document, owned by the handle. The strings above point into it:
 * a caller may change it (the HTML view leaves the samples out of its page,
 * which the handle copied) but must not then use a field whose JSON it
 * removed. */
struct json_t *gt_report_doc_json(const gt_report_doc *d);

#ifdef __cplusplus
}
#endif
#endif
