/* reports.read.host: the one report reader (reports/read.h).
 *   - reports as the writer leaves them when a run is killed (before its first
 *     case, after one) read and say they are incomplete; the HTML view takes
 *     them, compare takes them as NEW (which then must not ship) and refuses
 *     them as BASE; the finished run (complete) compares both ways; a killed
 *     run as NEW compares as the full run less what did not finish; the
 *     parsed view holds what was written;
 *   - every bad file below gets one verdict: gt_report_read, the HTML view
 *     (gt_html_check_report) and compare (as NEW and as BASE, and inside a
 *     directory of runs) refuse it with the same status and the same message,
 *     which names the file and the place. Before there was one reader, compare
 *     took a report without "run" that the HTML view refused, and the HTML view
 *     took results without a status, checks or metrics that compare refused or
 *     misread; neither looked at a check's or a metric's fields;
 *   - what the reader tolerates (unknown keys, a metric without unit or n, no
 *     params) all three take. */
#define _GNU_SOURCE
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/tests/check.h"
#include "reports/compare.h"
#include "reports/html.h"
#include "reports/read.h"
#include "reports/report.h"

static char g_dir[64];

static const char *at(const char *name) {
    static char buf[8][256];
    static int k = 0;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", g_dir, name);
    return buf[k];
}

static void put(const char *name, const char *text, size_t len) {
    FILE *f = fopen(at(name), "wb");
    if (!f || fwrite(text, 1, len, f) != len || fclose(f) != 0) {
        perror(name);
        exit(1);
    }
}

static char *slurp(const char *name, size_t *len) {
    FILE *f = fopen(at(name), "rb");
    if (!f) return NULL;
    char *buf = calloc(1, 1 << 20);
    *len = fread(buf, 1, (1 << 20) - 1, f);
    fclose(f);
    return buf;
}

/* A run of three cases as `gauntlet run` writes it (the file replaced after
 * each case), killed after `done` of them, or finished (done 3: the last
 * write says complete): a passing kernels case with samples (one of them
 * NaN), a passing one with a check it could not judge, and a case that
 * ended in an error. */
static void write_run(const char *name, int done) {
    char *argv[] = {"gauntlet", "run", "kernels"};
    gt_report *rep = NULL;
    CHECK_OK(gt_report_new(at(name), 3, argv, &rep));
    if (!rep) exit(1);
    gt_env env;
    memset(&env, 0, sizeof env);
    snprintf(env.host, sizeof env.host, "testhost");
    snprintf(env.git_revision, sizeof env.git_revision, "0123456789ab");
    gt_report_set_env(rep, &env, NULL);
    CHECK_OK(gt_report_write(rep)); /* before any work */
    for (int k = 0; k < done; k++) {
        if (k == 0) {
            gt_result *r = gt_report_add_result(rep, "kernels", "matmul", "1", "cpu");
            const double t[7] = {10, 11, NAN, 10.5, 10.2, 10.4, 10.1};
            gt_result_metric(r, "time_us", "us", 0, 10.3, t, 7);
            gt_result_metric(r, "gflops", "GFLOP/s", 1, NAN, NULL, 0);
            gt_result_metric_derived(r, "gflops", "time_us");
            gt_result_check(r, "conformance", 1, 0.25, 1.0, "max rel err 2.5e-7");
        } else if (k == 1) {
            gt_result *r = gt_report_add_result(rep, "collectives", "allreduce", "2", "mpi");
            gt_result_check_unevaluated(r, "busbw_vs_raw", 0.95, "nothing steady");
            gt_result_metric(r, "temperature_c", "C", 0, 60, NULL, 0);
            gt_result_metric_ungated(r, "temperature_c", "state");
        } else {
            gt_result *r = gt_report_add_result(rep, "train", "gpt2-tiny", "2", "cpu");
            gt_result_set_status(r, GT_RESULT_ERROR, "stuck: the watchdog ended the job");
        }
        CHECK_OK(gt_report_write(rep));
    }
    if (done == 3) {
        gt_report_finish(rep);
        CHECK_OK(gt_report_write(rep));
    }
    gt_report_free(rep);
}

static void test_killed_runs(void) {
    write_run("full.json", 3);
    write_run("k0.json", 0);
    write_run("k1.json", 1);
    static const char *const names[] = {"k0.json", "k1.json", "full.json"};
    for (int i = 0; i < 3; i++) {
        gt_report_doc *d = NULL;
        CHECK_OK(gt_report_read(at(names[i]), NULL, &d));
        CHECK(d && gt_report_doc_result_count(d) == (size_t)(i == 2 ? 3 : i), "%s: %zu results",
              names[i], d ? gt_report_doc_result_count(d) : 0);
        /* killed: incomplete, with the writer's default reason; finished: complete */
        const char *why = d ? gt_report_doc_incomplete(d) : NULL;
        if (i == 2) CHECK(d && !why, "%s: incomplete (%s)", names[i], why);
        else CHECK(why && strstr(why, "not finished"), "%s: reason '%s'", names[i], why);
        gt_report_doc_free(d);
        CHECK_OK(gt_html_check_report(at(names[i])));
        gt_compare *c = NULL;
        if (i == 2) {
            CHECK_OK(gt_compare_files(at(names[i]), at(names[i]), NULL, &c));
        } else {
            /* an incomplete BASE is refused, naming the file and the reason */
            CHECK_STATUS(gt_compare_files(at(names[i]), at(names[i]), NULL, &c), GT_ERR_INVALID);
            CHECK(c == NULL && strstr(gt_last_error(), "is incomplete") &&
                      strstr(gt_last_error(), names[i]) &&
                      strstr(gt_last_error(), "cannot be a baseline"),
                  "'%s'", gt_last_error());
        }
        gt_compare_free(c);
        const char *in[1] = {at(names[i])};
        CHECK_OK(gt_html_write(at("page.html"), in, 1, NULL, 0));
    }
    /* the killed run against the full one: the passing cases it never ran are
     * missing, the error is only in BASE */
    gt_compare *c = NULL;
    gt_compare_counts k;
    CHECK_OK(gt_compare_files(at("full.json"), at("k1.json"), NULL, &c));
    if (c) {
        gt_compare_get_counts(c, &k);
        CHECK(k.matched == 1 && k.missing == 1 && k.only_base == 1 && k.incomplete_new == 1 &&
                  !gt_compare_may_ship(c),
              "matched %d missing %d only_base %d incomplete %d", k.matched, k.missing,
              k.only_base, k.incomplete_new);
        gt_compare_free(c);
    }
    CHECK_OK(gt_compare_files(at("full.json"), at("k0.json"), NULL, &c));
    if (c) {
        gt_compare_get_counts(c, &k);
        CHECK(k.matched == 0 && k.missing == 2 && k.incomplete_new == 1,
              "matched %d missing %d incomplete %d", k.matched, k.missing, k.incomplete_new);
        gt_compare_free(c);
    }

    /* the parsed view of what the writer wrote */
    gt_report_doc *d = NULL;
    CHECK_OK(gt_report_read(at("full.json"), "BASE", &d));
    if (!d) return;
    CHECK(gt_report_doc_schema_version(d) == GT_REPORT_SCHEMA_VERSION, "schema");
    CHECK(strcmp(gt_report_doc_git_revision(d), "0123456789ab") == 0, "git revision");
    CHECK(strlen(gt_report_doc_run_id(d)) > 10, "run id '%s'", gt_report_doc_run_id(d));
    CHECK(strcmp(gt_report_doc_path(d), at("full.json")) == 0, "path");
    CHECK(gt_report_doc_result(d, 3) == NULL, "past the end");
    const gt_report_result *r = gt_report_doc_result(d, 0);
    CHECK(r && r->index == 0 && !strcmp(r->suite, "kernels") && !strcmp(r->case_name, "matmul") &&
              !strcmp(r->topology, "1") && !strcmp(r->backend, "cpu") &&
              r->status == GT_RESULT_PASS && r->message == NULL && r->n_checks == 1 &&
              r->n_metrics == 2 && r->params && r->json,
          "result 0");
    const gt_report_metric *t = r ? gt_report_result_metric(r, "time_us") : NULL;
    CHECK(t && !strcmp(t->unit, "us") && !t->higher_better && t->value == 10.3 &&
              t->n_samples == 6 && t->samples[1] == 11 && t->samples[2] == 10.5 && t->gated &&
              !t->derived_from && t->json,
          "time_us: the NaN sample (null) left out");
    const gt_report_metric *g = r ? gt_report_result_metric(r, "gflops") : NULL;
    CHECK(g && isnan(g->value) && g->n_samples == 0 && !g->samples && g->higher_better &&
              g->derived_from && !strcmp(g->derived_from, "time_us"),
          "gflops: value null, derived");
    CHECK(r && !gt_report_result_metric(r, "nope") && !gt_report_result_check(r, "nope"),
          "no such name");
    const gt_report_check *ck = r ? gt_report_result_check(r, "conformance") : NULL;
    CHECK(ck && ck->state == GT_CHECK_PASSED && ck->value == 0.25 && ck->limit == 1.0 &&
              ck->detail && strstr(ck->detail, "2.5e-7"),
          "conformance check");
    r = gt_report_doc_result(d, 1);
    ck = r ? gt_report_result_check(r, "busbw_vs_raw") : NULL;
    CHECK(ck && ck->state == GT_CHECK_UNEVALUATED && isnan(ck->value) && ck->limit == 0.95,
          "a check not judged");
    const gt_report_metric *s = r ? gt_report_result_metric(r, "temperature_c") : NULL;
    CHECK(s && !s->gated && s->kind && !strcmp(s->kind, "state"), "ungated");
    r = gt_report_doc_result(d, 2);
    CHECK(r && r->status == GT_RESULT_ERROR && r->message && strstr(r->message, "watchdog") &&
              r->n_checks == 0 && r->n_metrics == 0,
          "the watchdog's error result");
    gt_report_doc_free(d);

    /* the killed run's file cut short after it was written (a copy, a full
     * disk): JSON that ends early, said so */
    size_t len = 0;
    char *text = slurp("full.json", &len);
    CHECK(text && len > 100, "read back");
    if (text) put("cut.json", text, len / 2);
    free(text);
}

/* The same verdict from the reader, the HTML view and compare (NEW, BASE).
 * want: the status; what: a part of the message. */
static void one_verdict(const char *name, gt_status want, const char *what) {
    const char *good = at("full.json"), *path = at(name);
    gt_report_doc *d = NULL;
    gt_status s = gt_report_read(path, NULL, &d);
    char msg[2048];
    snprintf(msg, sizeof msg, "%s", gt_last_error());
    CHECK(s == want, "%s: read -> %s, want %s (%s)", name, gt_status_name(s),
          gt_status_name(want), msg);
    int had = d != NULL;
    gt_report_doc_free(d);
    if (want == GT_OK) {
        CHECK(had, "%s: no handle", name);
        CHECK_OK(gt_html_check_report(path));
        gt_compare *c = NULL;
        CHECK_OK(gt_compare_files(good, path, NULL, &c));
        gt_compare_free(c);
        c = NULL;
        CHECK_OK(gt_compare_files(path, good, NULL, &c));
        gt_compare_free(c);
        return;
    }
    CHECK(!had, "%s: a handle on failure", name);
    CHECK(strstr(msg, what) != NULL, "%s: message '%s' lacks '%s'", name, msg, what);
    char quoted[320];
    snprintf(quoted, sizeof quoted, "report '%s'", path);
    CHECK(strncmp(msg, quoted, strlen(quoted)) == 0 || strstr(msg, quoted),
          "%s: message '%s' does not name the file", name, msg);

    s = gt_html_check_report(path);
    CHECK(s == want && strcmp(gt_last_error(), msg) == 0, "%s: html -> %s '%s', reader '%s'",
          name, gt_status_name(s), gt_last_error(), msg);

    static const char *const roles[2] = {"NEW", "BASE"};
    for (int i = 0; i < 2; i++) {
        gt_compare *c = NULL;
        s = i == 0 ? gt_compare_files(good, path, NULL, &c) : gt_compare_files(path, good, NULL, &c);
        char role[32];
        snprintf(role, sizeof role, "the %s report '", roles[i]);
        CHECK(s == want && c == NULL && strstr(gt_last_error(), msg) &&
                  strstr(gt_last_error(), role),
              "%s: compare as %s -> %s '%s', reader '%s'", name, roles[i], gt_status_name(s),
              gt_last_error(), msg);
        gt_compare_free(c);
    }
}

#define R0 "\"schema_version\": 1, \"run\": {\"id\": \"t\"}, \"env\": {}"
/* a result of suite s, case a, with FIELDS after its identity */
#define RES(fields)                                                                          \
    "{\"suite\": \"s\", \"case\": \"a\", \"topology\": \"1\", \"backend\": \"cpu\", " fields "}"
#define DOC(results) "{" R0 ", \"results\": [" results "]}"
#define OK_FIELDS "\"status\": \"pass\", \"checks\": [], \"metrics\": {}"

typedef struct bad_file {
    const char *name, *text, *what;
    gt_status want;
} bad_file;

static const bad_file g_files[] = {
    /* compare took these, the HTML view refused them */
    {"no_run.json", "{\"schema_version\": 1, \"env\": {}, \"results\": []}",
     "is not a gauntlet report: it has no \"run\" object", GT_ERR_INVALID},
    /* the HTML view took these, compare refused them */
    {"no_status.json", DOC(RES("\"checks\": [], \"metrics\": {}")),
     "results[0] has no string 'status'", GT_ERR_INVALID},
    {"topology_number.json",
     DOC("{\"suite\": \"s\", \"case\": \"a\", \"topology\": 1, \"backend\": \"cpu\", " OK_FIELDS
         "}"),
     "results[0] has no string 'topology'", GT_ERR_INVALID},
    /* both took these; compare misread them (a status it did not know was an
     * error to it, a missing "better" higher, a string sample skipped) */
    {"no_env.json", "{\"schema_version\": 1, \"run\": {}, \"results\": []}",
     "it has no \"env\" object", GT_ERR_INVALID},
    {"bad_status.json", DOC(RES("\"status\": \"passed\", \"checks\": [], \"metrics\": {}")),
     "results[0] (s/a).status is 'passed', not pass, fail, skip or error", GT_ERR_INVALID},
    {"checks_object.json", DOC(RES("\"status\": \"pass\", \"checks\": {}, \"metrics\": {}")),
     "results[0] (s/a).checks is not an array", GT_ERR_INVALID},
    {"no_checks.json", DOC(RES("\"status\": \"pass\", \"metrics\": {}")),
     "results[0] (s/a).checks is missing", GT_ERR_INVALID},
    {"metrics_array.json", DOC(RES("\"status\": \"pass\", \"checks\": [], \"metrics\": []")),
     "results[0] (s/a).metrics is not an object", GT_ERR_INVALID},
    {"check_no_name.json",
     DOC(RES("\"status\": \"pass\", \"checks\": [{\"passed\": true}], \"metrics\": {}")),
     "results[0] (s/a).checks[0] has no string 'name'", GT_ERR_INVALID},
    {"check_passed_string.json",
     DOC(RES("\"status\": \"pass\", \"checks\": [{\"name\": \"c\", \"passed\": \"yes\"}], "
             "\"metrics\": {}")),
     "checks[0] (c).passed is not a boolean", GT_ERR_INVALID},
    {"check_null.json",
     DOC(RES("\"status\": \"pass\", \"checks\": [{\"name\": \"c\", \"passed\": null}], "
             "\"metrics\": {}")),
     "checks[0] (c).passed is null", GT_ERR_INVALID},
    {"metric_no_better.json",
     DOC(RES("\"status\": \"pass\", \"checks\": [], "
             "\"metrics\": {\"t\": {\"unit\": \"ms\", \"samples\": [1, 2]}}")),
     "results[0] (s/a).metrics.t.better is missing, not \"higher\" or \"lower\"", GT_ERR_INVALID},
    {"metric_bad_better.json",
     DOC(RES("\"status\": \"pass\", \"checks\": [], "
             "\"metrics\": {\"t\": {\"better\": \"faster\"}}")),
     "metrics.t.better is 'faster'", GT_ERR_INVALID},
    {"sample_string.json",
     DOC(RES("\"status\": \"pass\", \"checks\": [], "
             "\"metrics\": {\"t\": {\"better\": \"lower\", \"samples\": [1, \"2\"]}}")),
     "metrics.t.samples[1] is not a number or null", GT_ERR_INVALID},
    {"state_short.json",
     DOC(RES("\"status\": \"pass\", \"checks\": [], \"metrics\": {\"t\": {\"better\": "
             "\"lower\", \"samples\": [1, 2], \"state_ns\": [60]}}")),
     "metrics.t.state_ns holds 1 entries for 2 samples (one a sample, null where none)",
     GT_ERR_INVALID},
    {"cpu_wait_text.json",
     DOC(RES("\"status\": \"pass\", \"checks\": [], \"metrics\": {\"t\": {\"better\": "
             "\"lower\", \"samples\": [1, 2], \"cpu_wait\": [0.1, \"x\"]}}")),
     "metrics.t.cpu_wait[1] is not a number or null", GT_ERR_INVALID},
    {"series_string.json", DOC(RES(OK_FIELDS ", \"series\": {\"loss\": [4.0, \"x\"]}")),
     "results[0] (s/a).series.loss[1] is not a number or null", GT_ERR_INVALID},
    {"result_number.json", DOC("1"), "results[0] is not an object", GT_ERR_INVALID},
    {"run_id_number.json",
     "{\"schema_version\": 1, \"run\": {\"id\": 5}, \"env\": {}, "
     "\"results\": []}",
     "run.id is not a string", GT_ERR_INVALID},
    {"node_load_text.json",
     "{\"schema_version\": 1, \"run\": {\"node_load\": {\"cpu_others_cores\": \"x\"}}, "
     "\"env\": {}, \"results\": []}",
     "run.node_load.cpu_others_cores is not a number", GT_ERR_INVALID},
    /* the incomplete marker (docs/report-schema.md, "Incomplete reports") */
    {"complete_string.json", "{" R0 ", \"summary\": {\"complete\": \"no\"}, \"results\": []}",
     "summary.complete is not true or false", GT_ERR_INVALID},
    {"reason_number.json",
     "{" R0 ", \"summary\": {\"complete\": false, \"incomplete\": {\"reason\": 5}}, "
     "\"results\": []}",
     "summary.incomplete.reason is not a string", GT_ERR_INVALID},
    /* both refused these, with different messages */
    {"array.json", "[1, 2, 3]", "is not a gauntlet report: the top level is not an object",
     GT_ERR_INVALID},
    {"empty.json", "", "is not JSON: the file is empty", GT_ERR_INVALID},
    {"open.json", "{\"schema_version\": 1, \"results\": [", "is not JSON: it ends early",
     GT_ERR_INVALID},
    {"garbage.json", "{\"schema_version\": 1,, \"results\": []}", "is not JSON: ", GT_ERR_INVALID},
    {"v0.json", "{\"schema_version\": 0, \"run\": {}, \"env\": {}, \"results\": []}",
     "has schema_version 0; versions start at 1", GT_ERR_INVALID},
    {"v99.json", "{\"schema_version\": 99, \"run\": {}, \"env\": {}, \"results\": []}",
     "has schema_version 99, newer than this gauntlet reads", GT_ERR_INVALID},
    /* tolerated by all three: unknown keys anywhere, a metric with only its
     * direction, no params, an empty run, a check that was not judged */
    {"unknown_keys.json",
     "{" R0 ", \"future\": {\"x\": [1]}, \"summary\": {\"total\": 1}, \"results\": [" RES(
         "\"status\": \"skip\", \"message\": \"not here\", \"new_field\": 3, "
         "\"checks\": [{\"name\": \"c\", \"passed\": null, \"evaluated\": false, \"why\": 1}], "
         "\"metrics\": {\"t\": {\"better\": \"lower\", \"colour\": \"red\"}}, "
         "\"telemetry\": {\"anything\": true}") "]}",
     NULL, GT_OK},
    {"no_results.json", DOC(""), NULL, GT_OK},
};

static void test_one_verdict(void) {
    for (size_t i = 0; i < sizeof g_files / sizeof g_files[0]; i++) {
        put(g_files[i].name, g_files[i].text, strlen(g_files[i].text));
        one_verdict(g_files[i].name, g_files[i].want, g_files[i].what);
    }
    /* the killed run's report cut in half */
    one_verdict("cut.json", GT_ERR_INVALID, "is not JSON: it ends early");
    /* unreadable: the reader and the HTML view agree; compare says which side */
    gt_report_doc *d = NULL;
    CHECK_STATUS(gt_report_read(at("missing.json"), NULL, &d), GT_ERR_IO);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", gt_last_error());
    CHECK(strstr(msg, "cannot read report '") && strstr(msg, "missing.json"), "'%s'", msg);
    CHECK(gt_html_check_report(at("missing.json")) == GT_ERR_IO && !strcmp(gt_last_error(), msg),
          "html: '%s'", gt_last_error());
    gt_compare *c = NULL;
    CHECK_STATUS(gt_compare_files(at("full.json"), at("missing.json"), NULL, &c), GT_ERR_IO);
    CHECK(strstr(gt_last_error(), "cannot read the NEW report '"), "'%s'", gt_last_error());
    CHECK_STATUS(gt_report_read(g_dir, NULL, &d), GT_ERR_IO);
    CHECK(strstr(gt_last_error(), "it is a directory"), "'%s'", gt_last_error());
    CHECK(gt_html_check_report(g_dir) == GT_ERR_IO, "html takes a directory");

    /* compare's directory of runs reads every run with the same reader: one
     * bad run refuses the side, named as the reader names it */
    char dir[128];
    snprintf(dir, sizeof dir, "%s/runs", g_dir);
    mkdir(dir, 0700);
    size_t len = 0;
    char *text = slurp("full.json", &len);
    if (text) put("runs/run0.json", text, len);
    free(text);
    const char *bad = g_files[1].text; /* no_status */
    put("runs/run1.json", bad, strlen(bad));
    CHECK_STATUS(gt_report_read(at("runs/run1.json"), "BASE", &d), GT_ERR_INVALID);
    snprintf(msg, sizeof msg, "%s", gt_last_error());
    CHECK_STATUS(gt_compare_files(dir, at("full.json"), NULL, &c), GT_ERR_INVALID);
    CHECK(c == NULL && strcmp(gt_last_error(), msg) == 0 && strstr(msg, "run1.json"),
          "directory: '%s', reader '%s'", gt_last_error(), msg);
    unlink(at("runs/run1.json"));
    CHECK_OK(gt_compare_files(dir, at("full.json"), NULL, &c));
    gt_compare_free(c);
}

/* the text API: a report held in memory, named in messages as given */
static void test_text(void) {
    static const char doc[] = DOC(RES(OK_FIELDS));
    gt_report_doc *d = NULL;
    CHECK_OK(gt_report_read_text("db row 7", NULL, doc, sizeof doc - 1, &d));
    CHECK(d && gt_report_doc_result_count(d) == 1 && !strcmp(gt_report_doc_path(d), "db row 7"),
          "in memory");
    gt_report_doc_free(d);
    /* len, not a terminator, ends the text */
    CHECK_STATUS(gt_report_read_text("db row 8", "stored", doc, 20, &d), GT_ERR_INVALID);
    CHECK(strstr(gt_last_error(), "the stored report 'db row 8' is not JSON: it ends early"),
          "'%s'", gt_last_error());
    gt_report_doc_free(NULL);
}

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw) {
    (void)st;
    (void)ftw;
    return type == FTW_DP ? rmdir(path) : unlink(path);
}

int main(void) {
    snprintf(g_dir, sizeof g_dir, "/tmp/gt_read_test.XXXXXX");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_killed_runs();
    test_one_verdict();
    test_text();
    if (g_check_failures == 0)
        nftw(g_dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
    else
        fprintf(stderr, "files kept in %s\n", g_dir);
    return check_done("reports.read");
}
