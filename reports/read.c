/* Reading a report back: the one definition of a valid report
 * (reports/read.h, docs/report-schema.md). */
#define _GNU_SOURCE
#include "reports/read.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct gt_report_doc {
    char *path;
    json_t *root;
    int schema_version;
    gt_report_result *results;
    size_t n_results;
};

/* How every message names the file. */
typedef struct who {
    char text[1024];
} who;

static void who_init(who *w, const char *role, const char *path) {
    if (role && role[0])
        snprintf(w->text, sizeof w->text, "the %s report '%s'", role, path);
    else
        snprintf(w->text, sizeof w->text, "report '%s'", path);
}

static const char g_hint_report[] = "pass a file written by `gauntlet ... --report FILE`";

/* ---- validation: each check says where (a JSON path) and what is wrong ---------- */

typedef struct problem {
    char text[768];
} problem;

static int fail(problem *p, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static int fail(problem *p, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->text, sizeof p->text, fmt, ap);
    va_end(ap);
    return -1;
}

static int is_num_or_null(const json_t *v) { return json_is_number(v) || json_is_null(v); }
static double num_or_nan(const json_t *v) { return json_is_number(v) ? json_number_value(v) : NAN; }

/* An optional member: absent, or of the kind `ok` accepts. */
#define OPTIONAL(obj, key, ok) (!json_object_get((obj), (key)) || ok(json_object_get((obj), (key))))

static int read_metric(const char *at, const char *name, json_t *m, gt_report_metric *out,
                        problem *p) {
    if (!json_is_object(m)) return fail(p, "%s.metrics.%s is not an object", at, name);
    const char *better = json_string_value(json_object_get(m, "better"));
    if (!better || (strcmp(better, "higher") != 0 && strcmp(better, "lower") != 0))
        return fail(p, "%s.metrics.%s.better is %s%s%s, not \"higher\" or \"lower\"", at, name,
                    better ? "'" : "", better ? better : "missing", better ? "'" : "");
    if (!OPTIONAL(m, "unit", json_is_string))
        return fail(p, "%s.metrics.%s.unit is not a string", at, name);
    static const char *const nums[] = {"value", "min", "median", "max"};
    for (size_t k = 0; k < sizeof nums / sizeof nums[0]; k++)
        if (!OPTIONAL(m, nums[k], is_num_or_null))
            return fail(p, "%s.metrics.%s.%s is not a number or null", at, name, nums[k]);
    if (!OPTIONAL(m, "n", json_is_integer))
        return fail(p, "%s.metrics.%s.n is not an integer", at, name);
    json_t *rounds = json_object_get(m, "rounds");
    if (rounds && (!json_is_integer(rounds) || json_integer_value(rounds) < 1))
        return fail(p, "%s.metrics.%s.rounds is not a positive integer", at, name);
    static const char *const strs[] = {"derived_from", "part_of", "kind"};
    for (size_t k = 0; k < sizeof strs / sizeof strs[0]; k++)
        if (!OPTIONAL(m, strs[k], json_is_string))
            return fail(p, "%s.metrics.%s.%s is not a string", at, name, strs[k]);
    if (!OPTIONAL(m, "gate", json_is_boolean))
        return fail(p, "%s.metrics.%s.gate is not true or false", at, name);
    json_t *s = json_object_get(m, "samples");
    if (s && !json_is_array(s)) return fail(p, "%s.metrics.%s.samples is not an array", at, name);
    size_t i, finite = 0;
    json_t *v;
    json_array_foreach(s, i, v) {
        if (!is_num_or_null(v))
            return fail(p, "%s.metrics.%s.samples[%zu] is not a number or null", at, name, i);
        if (json_is_number(v) && isfinite(json_number_value(v))) finite++;
    }
    static const char *const beside[2] = {"state_ns", "cpu_wait"}; /* one a sample */
    for (int b = 0; b < 2; b++) {
        json_t *st = json_object_get(m, beside[b]);
        if (st && (!json_is_array(st) || json_array_size(st) != json_array_size(s)))
            return fail(p, "%s.metrics.%s.%s holds %zu entries for %zu samples (one a sample, "
                        "null where none)", at, name, beside[b], json_array_size(st),
                        json_array_size(s));
        json_array_foreach(st, i, v) {
            if (!is_num_or_null(v))
                return fail(p, "%s.metrics.%s.%s[%zu] is not a number or null", at, name,
                            beside[b], i);
        }
    }
    double *samples = NULL;
    if (finite > 0) {
        if (!(samples = malloc(finite * sizeof *samples))) return fail(p, "no memory");
        size_t k = 0;
        json_array_foreach(s, i, v) {
            if (json_is_number(v) && isfinite(json_number_value(v)))
                samples[k++] = json_number_value(v);
        }
    }
    const char *unit = json_string_value(json_object_get(m, "unit"));
    *out = (gt_report_metric){
        .name = name,
        .unit = unit ? unit : "",
        .higher_better = strcmp(better, "higher") == 0,
        .value = num_or_nan(json_object_get(m, "value")),
        .samples = samples,
        .n_samples = finite,
        .derived_from = json_string_value(json_object_get(m, "derived_from")),
        .part_of = json_string_value(json_object_get(m, "part_of")),
        .gated = !json_is_false(json_object_get(m, "gate")),
        .kind = json_string_value(json_object_get(m, "kind")),
        .json = m,
    };
    return 0;
}

static int read_check(const char *at, size_t j, json_t *c, gt_report_check *out, problem *p) {
    if (!json_is_object(c)) return fail(p, "%s.checks[%zu] is not an object", at, j);
    const char *name = json_string_value(json_object_get(c, "name"));
    if (!name) return fail(p, "%s.checks[%zu] has no string 'name'", at, j);
    json_t *passed = json_object_get(c, "passed"), *evaluated = json_object_get(c, "evaluated");
    if (!OPTIONAL(c, "evaluated", json_is_boolean))
        return fail(p, "%s.checks[%zu] (%s).evaluated is not true or false", at, j, name);
    int unevaluated = json_is_null(passed) && json_is_false(evaluated);
    if (!json_is_boolean(passed) && !unevaluated)
        return fail(p,
                    "%s.checks[%zu] (%s).passed is %s: a check passed (true), failed (false), "
                    "or could not be judged (null with \"evaluated\": false)",
                    at, j, name, !passed ? "missing" : json_is_null(passed) ? "null" : "not a boolean");
    if (!OPTIONAL(c, "value", is_num_or_null) || !OPTIONAL(c, "limit", is_num_or_null))
        return fail(p, "%s.checks[%zu] (%s): value or limit is not a number or null", at, j, name);
    if (!OPTIONAL(c, "detail", json_is_string))
        return fail(p, "%s.checks[%zu] (%s).detail is not a string", at, j, name);
    *out = (gt_report_check){
        .name = name,
        .state = unevaluated ? GT_CHECK_UNEVALUATED
                             : json_is_true(passed) ? GT_CHECK_PASSED : GT_CHECK_FAILED,
        .value = num_or_nan(json_object_get(c, "value")),
        .limit = num_or_nan(json_object_get(c, "limit")),
        .detail = json_string_value(json_object_get(c, "detail")),
    };
    return 0;
}

static void free_result(gt_report_result *r) {
    for (size_t k = 0; k < r->n_metrics; k++) free((void *)r->metrics[k].samples);
    free((void *)r->metrics);
    free((void *)r->checks);
}

const gt_report_rename gt_report_renames[] = {
    {"gpt2-small", "gpt2-3m"},
    {NULL, NULL},
};

/* The new name of s when it is an old name or begins with one and '/'
 * (buf holds it), else NULL. */
static const char *renamed(const char *s, char *buf, size_t n) {
    for (const gt_report_rename *r = gt_report_renames; s && r->old_name; r++) {
        size_t k = strlen(r->old_name);
        if (strncmp(s, r->old_name, k) == 0 && (s[k] == '\0' || s[k] == '/')) {
            snprintf(buf, n, "%s%s", r->new_name, s + k);
            return buf;
        }
    }
    return NULL;
}

/* An old report's results under their new names, as a new one has them. */
static void rename_results(json_t *results) {
    size_t i;
    json_t *r;
    char buf[512];
    json_array_foreach(results, i, r) {
        const char *c = json_string_value(json_object_get(r, "case"));
        if (renamed(c, buf, sizeof buf)) json_object_set_new(r, "case", json_string(buf));
        json_t *params = json_object_get(r, "params");
        const char *m = json_string_value(json_object_get(params, "model"));
        if (m && renamed(m, buf, sizeof buf) && !strchr(m, '/'))
            json_object_set_new(params, "model", json_string(buf));
    }
}

static int read_result(size_t i, json_t *r, gt_report_result *out, problem *p) {
    if (!json_is_object(r)) return fail(p, "results[%zu] is not an object", i);
    static const char *const need[] = {"suite", "case", "topology", "backend", "status"};
    for (size_t k = 0; k < sizeof need / sizeof need[0]; k++)
        if (!json_is_string(json_object_get(r, need[k])))
            return fail(p, "results[%zu] has no string '%s'", i, need[k]);
    /* "results[3] (kernels/matmul)": where, for a person */
    char at[320];
    snprintf(at, sizeof at, "results[%zu] (%s/%s)", i,
             json_string_value(json_object_get(r, "suite")),
             json_string_value(json_object_get(r, "case")));
    const char *st = json_string_value(json_object_get(r, "status"));
    int status = -1;
    for (int s = 0; s < GT_RESULT_STATUS_COUNT; s++)
        if (strcmp(st, gt_result_status_name((gt_result_status)s)) == 0) status = s;
    if (status < 0)
        return fail(p, "%s.status is '%s', not pass, fail, skip or error", at, st);
    if (!OPTIONAL(r, "message", json_is_string))
        return fail(p, "%s.message is not a string", at);
    if (!OPTIONAL(r, "params", json_is_object)) return fail(p, "%s.params is not an object", at);
    json_t *series = json_object_get(r, "series");
    if (series && !json_is_object(series)) return fail(p, "%s.series is not an object", at);
    const char *key;
    json_t *v;
    json_object_foreach(series, key, v) {
        if (!json_is_array(v)) return fail(p, "%s.series.%s is not an array", at, key);
        size_t j;
        json_t *x;
        json_array_foreach(v, j, x) {
            if (!is_num_or_null(x))
                return fail(p, "%s.series.%s[%zu] is not a number or null", at, key, j);
        }
    }
    json_t *checks = json_object_get(r, "checks"), *metrics = json_object_get(r, "metrics");
    if (!json_is_array(checks))
        return fail(p, "%s.checks is %s", at, checks ? "not an array" : "missing (an array)");
    if (!json_is_object(metrics))
        return fail(p, "%s.metrics is %s", at, metrics ? "not an object" : "missing (an object)");

    *out = (gt_report_result){
        .index = i,
        .suite = json_string_value(json_object_get(r, "suite")),
        .case_name = json_string_value(json_object_get(r, "case")),
        .topology = json_string_value(json_object_get(r, "topology")),
        .backend = json_string_value(json_object_get(r, "backend")),
        .status = (gt_result_status)status,
        .message = json_string_value(json_object_get(r, "message")),
        .params = json_object_get(r, "params"),
        .json = r,
    };
    size_t nc = json_array_size(checks), nm = json_object_size(metrics);
    gt_report_check *ck = calloc(nc ? nc : 1, sizeof *ck);
    gt_report_metric *ms = calloc(nm ? nm : 1, sizeof *ms);
    out->checks = ck;
    out->metrics = ms;
    if (!ck || !ms) return fail(p, "no memory");
    size_t j;
    json_t *c;
    json_array_foreach(checks, j, c) {
        if (read_check(at, j, c, &ck[j], p)) return -1;
        out->n_checks++;
    }
    json_object_foreach(metrics, key, v) {
        if (read_metric(at, key, v, &ms[out->n_metrics], p)) return -1;
        out->n_metrics++;
    }
    return 0;
}

void gt_report_doc_free(gt_report_doc *d) {
    if (!d) return;
    for (size_t i = 0; i < d->n_results; i++) free_result(&d->results[i]);
    free(d->results);
    json_decref(d->root);
    free(d->path);
    free(d);
}

/* The top level: what makes a JSON document a gauntlet report at all. NULL
 * when it is one, else why not (for "... is not a gauntlet report: WHY"). */
static const char *not_a_report(json_t *root) {
    if (!json_is_object(root)) return "the top level is not an object";
    if (!json_is_integer(json_object_get(root, "schema_version")))
        return "it has no integer \"schema_version\"";
    if (!json_is_object(json_object_get(root, "run"))) return "it has no \"run\" object";
    if (!json_is_object(json_object_get(root, "env"))) return "it has no \"env\" object";
    if (!json_is_array(json_object_get(root, "results"))) return "it has no \"results\" array";
    return NULL;
}

static int check_top(json_t *root, problem *p) {
    json_t *run = json_object_get(root, "run");
    static const char *const strs[] = {"id", "git_revision", "start", "end"};
    for (size_t k = 0; k < sizeof strs / sizeof strs[0]; k++)
        if (!OPTIONAL(run, strs[k], json_is_string))
            return fail(p, "run.%s is not a string", strs[k]);
    if (!OPTIONAL(run, "node_load", json_is_object))
        return fail(p, "run.node_load is not an object");
    static const char *const node[] = {"cpu_others_cores", "cpu_idle_cores", "seconds"};
    for (size_t k = 0; k < sizeof node / sizeof node[0]; k++)
        if (!OPTIONAL(json_object_get(run, "node_load"), node[k], json_is_number))
            return fail(p, "run.node_load.%s is not a number", node[k]);
    if (!OPTIONAL(root, "summary", json_is_object)) return fail(p, "summary is not an object");
    json_t *sum = json_object_get(root, "summary");
    if (!OPTIONAL(sum, "complete", json_is_boolean))
        return fail(p, "summary.complete is not true or false");
    if (!OPTIONAL(sum, "incomplete", json_is_object))
        return fail(p, "summary.incomplete is not an object");
    if (!OPTIONAL(json_object_get(sum, "incomplete"), "reason", json_is_string))
        return fail(p, "summary.incomplete.reason is not a string");
    return 0;
}

gt_status gt_report_read_text(const char *name, const char *role, const char *text, size_t len,
                              gt_report_doc **out) {
    *out = NULL;
    who w;
    who_init(&w, role, name);
    if (len == 0)
        return GT_ERR(GT_ERR_INVALID, "%s is not JSON: the file is empty; %s", w.text,
                      g_hint_report);
    json_error_t je;
    json_t *root = json_loadb(text, len, 0, &je);
    if (!root) {
        /* gauntlet replaces a report whole (reports/report.h): JSON that stops
         * before its end was cut after it was written */
        if (strstr(je.text, "end of file") || (je.position >= 0 && (size_t)je.position >= len))
            return GT_ERR(GT_ERR_INVALID,
                          "%s is not JSON: it ends early (%s, line %d, column %d): the file was "
                          "cut short after gauntlet wrote it (a copy or a full disk; gauntlet "
                          "replaces a report whole); copy it again or run again",
                          w.text, je.text, je.line, je.column);
        return GT_ERR(GT_ERR_INVALID, "%s is not JSON: %s (line %d, column %d); %s", w.text,
                      je.text, je.line, je.column, g_hint_report);
    }
    const char *why = not_a_report(root);
    if (why) {
        json_decref(root);
        return GT_ERR(GT_ERR_INVALID, "%s is not a gauntlet report: %s; %s", w.text, why,
                      g_hint_report);
    }
    json_int_t v = json_integer_value(json_object_get(root, "schema_version"));
    if (v > GT_REPORT_SCHEMA_VERSION) {
        json_decref(root);
        return GT_ERR(GT_ERR_INVALID,
                      "%s has schema_version %lld, newer than this gauntlet reads (%d): read it "
                      "with the gauntlet that wrote it, or a newer build",
                      w.text, (long long)v, GT_REPORT_SCHEMA_VERSION);
    }
    if (v < 1) {
        json_decref(root);
        return GT_ERR(GT_ERR_INVALID,
                      "%s has schema_version %lld; versions start at 1: the file is not a "
                      "gauntlet report; %s",
                      w.text, (long long)v, g_hint_report);
    }
    gt_report_doc *d = calloc(1, sizeof *d);
    json_t *results = json_object_get(root, "results");
    size_t n = json_array_size(results);
    if (!d || !(d->results = calloc(n ? n : 1, sizeof *d->results)) || !(d->path = strdup(name))) {
        if (d) free(d->results);
        free(d);
        json_decref(root);
        return GT_ERR(GT_ERR_OOM, "no memory to read %s", w.text);
    }
    d->root = root;
    d->schema_version = (int)v;
    rename_results(results);
    problem p = {{0}};
    int bad = check_top(root, &p);
    for (size_t i = 0; i < n && !bad; i++) {
        bad = read_result(i, json_array_get(results, i), &d->results[i], &p);
        d->n_results = i + 1; /* what read_result allocated is freed with the rest */
    }
    if (bad) {
        gt_report_doc_free(d);
        if (strcmp(p.text, "no memory") == 0)
            return GT_ERR(GT_ERR_OOM, "no memory to read %s", w.text);
        return GT_ERR(GT_ERR_INVALID,
                      "%s: %s; the file was edited or is not a gauntlet report: correct that "
                      "field or write the report again with `gauntlet ... --report FILE`",
                      w.text, p.text);
    }
    *out = d;
    return GT_OK;
}

gt_status gt_report_read(const char *path, const char *role, gt_report_doc **out) {
    *out = NULL;
    who w;
    who_init(&w, role, path);
    struct stat st;
    if (stat(path, &st) != 0)
        return GT_ERR(GT_ERR_IO, "cannot read %s: %s", w.text, strerror(errno));
    if (S_ISDIR(st.st_mode))
        return GT_ERR(GT_ERR_IO,
                      "cannot read %s: it is a directory; pass the JSON file written by "
                      "`gauntlet ... --report FILE`",
                      w.text);
    FILE *f = fopen(path, "rb");
    if (!f) return GT_ERR(GT_ERR_IO, "cannot read %s: %s", w.text, strerror(errno));
    size_t cap = st.st_size > 0 ? (size_t)st.st_size + 1 : 4096, n = 0;
    char *buf = malloc(cap);
    if (!buf) {
        fclose(f);
        return GT_ERR(GT_ERR_OOM, "no memory to read %s (%zu bytes)", w.text, cap);
    }
    for (;;) {
        if (n == cap) { /* the file grew, or st_size was 0 (a pipe, /proc) */
            char *b = realloc(buf, cap * 2);
            if (!b) {
                free(buf);
                fclose(f);
                return GT_ERR(GT_ERR_OOM, "no memory to read %s", w.text);
            }
            buf = b;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    int err = ferror(f) ? errno : 0;
    fclose(f);
    if (err) {
        free(buf);
        return GT_ERR(GT_ERR_IO, "cannot read %s: %s", w.text, strerror(err));
    }
    gt_status s = gt_report_read_text(path, role, buf, n, out);
    free(buf);
    return s;
}

const char *gt_report_doc_path(const gt_report_doc *d) { return d->path; }
int gt_report_doc_schema_version(const gt_report_doc *d) { return d->schema_version; }

static const char *run_string(const gt_report_doc *d, const char *key) {
    const char *s = json_string_value(json_object_get(json_object_get(d->root, "run"), key));
    return s ? s : "";
}
const char *gt_report_doc_run_id(const gt_report_doc *d) { return run_string(d, "id"); }
const char *gt_report_doc_git_revision(const gt_report_doc *d) {
    return run_string(d, "git_revision");
}

const char *gt_report_doc_incomplete(const gt_report_doc *d) {
    json_t *sum = json_object_get(d->root, "summary");
    if (!json_is_false(json_object_get(sum, "complete"))) return NULL;
    const char *why =
        json_string_value(json_object_get(json_object_get(sum, "incomplete"), "reason"));
    return why && why[0] ? why : "no reason recorded";
}

size_t gt_report_doc_result_count(const gt_report_doc *d) { return d->n_results; }

const gt_report_result *gt_report_doc_result(const gt_report_doc *d, size_t i) {
    return i < d->n_results ? &d->results[i] : NULL;
}

const gt_report_check *gt_report_result_check(const gt_report_result *r, const char *name) {
    for (size_t i = 0; i < r->n_checks; i++)
        if (strcmp(r->checks[i].name, name) == 0) return &r->checks[i];
    return NULL;
}

const gt_report_metric *gt_report_result_metric(const gt_report_result *r, const char *name) {
    for (size_t i = 0; i < r->n_metrics; i++)
        if (strcmp(r->metrics[i].name, name) == 0) return &r->metrics[i];
    return NULL;
}

struct json_t *gt_report_doc_json(const gt_report_doc *d) { return d->root; }

int gt_report_json_entry(const struct dirent *e) {
    size_t n = strlen(e->d_name);
    return n > 5 && e->d_name[0] != '.' && strcmp(e->d_name + n - 5, ".json") == 0;
}
