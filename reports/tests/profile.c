/* The per-op profile in reports: compare names the ops behind a slower step
 * (reports/profile.h) on hand-built reports, where the verdicts do not depend
 * on timing noise; two reports with the same parts give no regression. */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reports/compare.h"
#include "reports/profile.h"
#include "engine/tests/check.h"


/* n samples around level, +-3% in a fixed pattern */
static json_t *samples(double level, int n) {
    json_t *a = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(a, json_real(level * (1 + 0.03 * ((i * 7 % 5) - 2) / 2.0)));
    return a;
}

static json_t *part(const char *name, const char *kind, double ms, int n) {
    json_t *p = json_object();
    json_object_set_new(p, "name", json_string(name));
    json_object_set_new(p, "kind", json_string(kind));
    json_object_set_new(p, "ms", json_real(ms));
    json_object_set_new(p, "samples_ms", samples(ms, n));
    return p;
}

/* A train result: ms_per_step with its samples, and a profile of four parts
 * whose matmul_bwd takes `mm` ms and attention_fwd `att` ms. */
static json_t *result(double mm, double att, int n, int with_profile) {
    double step = mm + att + 2.0 + 0.5;
    json_t *r = json_pack("{s:s, s:s, s:s, s:s, s:s, s:{s:s}, s:[]}", "suite", "train", "case",
                          "gpt2-tiny", "topology", "1", "backend", "cpu", "status", "pass",
                          "params", "model", "gpt2-tiny", "checks");
    json_t *m = json_object();
    json_t *ms = json_object();
    json_object_set_new(ms, "value", json_real(step));
    json_object_set_new(ms, "unit", json_string("ms"));
    json_object_set_new(ms, "better", json_string("lower"));
    json_object_set_new(ms, "samples", samples(step, n));
    json_object_set_new(ms, "n", json_integer(n));
    json_object_set_new(m, "ms_per_step", ms);
    json_object_set_new(r, "metrics", m);
    if (with_profile) {
        json_t *parts = json_array();
        json_array_append_new(parts, part("matmul_bwd", "op", mm, n));
        json_array_append_new(parts, part("attention_fwd", "op", att, n));
        json_array_append_new(parts, part("adamw", "op", 2.0, n));
        json_array_append_new(parts, part("rest", "rest", 0.5, n));
        json_t *pr = json_object();
        json_object_set_new(pr, "parts", parts);
        json_object_set_new(r, "profile", pr);
    }
    return r;
}

static void write_report(const char *path, json_t *res) {
    json_t *doc = json_pack("{s:i, s:{s:s, s:s, s:s, s:s}, s:{s:s}, s:[o]}", "schema_version", 1,
                            "run", "id", path, "start", "2026-01-01T00:00:00Z", "end",
                            "2026-01-01T00:00:01Z", "git_revision", "0", "env", "host", "h",
                            "results", res);
    if (json_dump_file(doc, path, JSON_INDENT(1)) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
    json_decref(doc);
}

static char *compare_text(const char *b, const char *n, int *ship) {
    gt_compare_options o = gt_compare_defaults();
    gt_compare *c = NULL;
    if (gt_compare_files(b, n, &o, &c) != GT_OK) return NULL;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    gt_compare_print(c, f, GT_DETAIL_CHANGED);
    fclose(f);
    *ship = gt_compare_may_ship(c);
    gt_compare_free(c);
    return buf;
}

int main(void) {
    const int n = 40;
    /* the line alone: matmul_bwd grew most and is named first, slower; attention same */
    json_t *b = result(10.0, 4.0, n, 1), *s = result(20.0, 4.0, n, 1);
    char *line = gt_profile_compare_line(b, s, 0.6, "slower", NULL, 4);
    CHECK(line != NULL, "no line for two profiled results");
    if (line) {
        printf("line: %s\n", line);
        CHECK(strncmp(line, "step +60.0% slower: matmul_bwd +100% slower", 43) == 0,
              "the slowed op is not named first as slower: %s", line);
        CHECK(strstr(line, "attention_fwd +0% same"), "attention_fwd not same: %s", line);
        CHECK(strstr(line, "rest"), "the rest is not listed: %s", line);
    }
    free(line);
    line = gt_profile_compare_line(b, s, 0.6, "slower", NULL, 1);
    CHECK(line && strstr(line, ", 3 more parts") && !strstr(line, "attention_fwd"),
          "max_parts 1: %s", line ? line : "(null)");
    free(line);
    json_t *np = result(20.0, 4.0, n, 0);
    CHECK(gt_profile_compare_line(b, np, 0.6, "slower", NULL, 4) == NULL,
          "a line without NEW's profile");
    json_decref(np);

    /* the gate end to end: the slower step's result names the op; the same
     * reports twice ship, with no op line */
    char dir[] = "/tmp/gt_profile_test_XXXXXX";
    if (!mkdtemp(dir)) return 1;
    char pb[256], pn[256], pa[256];
    snprintf(pb, sizeof pb, "%s/base.json", dir);
    snprintf(pn, sizeof pn, "%s/new.json", dir);
    snprintf(pa, sizeof pa, "%s/again.json", dir);
    write_report(pb, b);
    write_report(pn, s);
    write_report(pa, result(10.0, 4.0, n, 1));
    int ship = 1;
    char *out = compare_text(pb, pn, &ship);
    CHECK(out != NULL, "compare failed");
    if (out) {
        CHECK(!ship, "a step 60%% slower ships");
        CHECK(strstr(out, "ops: step +60.6% slower: matmul_bwd +100% slower"),
              "compare does not name matmul_bwd:\n%s", out);
        CHECK(strstr(out, "SLOWER   train/gpt2-tiny"), "no SLOWER line:\n%s", out);
    }
    free(out);
    out = compare_text(pb, pa, &ship);
    CHECK(out != NULL, "compare failed");
    if (out) {
        CHECK(ship, "the same report twice does not ship:\n%s", out);
        CHECK(!strstr(out, "ops:"), "an op line without a slower step:\n%s", out);
    }
    free(out);
    unlink(pb);
    unlink(pn);
    unlink(pa);
    rmdir(dir);
    return check_done("profile");
}
