/* reports.predict.host: the scaling model (reports/predict.h) on reports
 * built from a known machine: collectives timed exactly as alpha = 2 us per
 * ring step and beta = 10 GB/s, a compute of 10 + 2 x b ms per step. The fit
 * must find alpha and beta again, and the predicted step must be the
 * equations of docs/predict.md worked by hand:
 *   - one 25 MiB bucket: exposed = the whole all-reduce after the backward;
 *   - small buckets: only the last bucket shows (the backward hides the rest);
 *   - ZeRO-1: reduce-scatter + all-gather of the padded buffer, exposed;
 *   - a network given on the command line replaces the measured one;
 *   - the check predicts the measured 2 ranks from the other rank counts only;
 *   - issue 35's run (2 cores, 1 and 2 ranks measured, collectives on 2 ranks
 *     only): every row has the cores the assumptions say, the measured steps
 *     sit beside the predicted ones, the check predicts 2 ranks from the
 *     1-rank compute and the 2-rank collectives and says it is not
 *     leave-one-out, the exposed communication is set against the measured;
 *   - reports without scaling or collectives results are refused by name. */
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/tests/check.h"
#include "reports/predict.h"
#include "reports/read.h"

#define ALPHA 2e-6 /* s per ring step */
#define BETA 10e9  /* bytes/s */
#define NPARAMS 1000000.0

static char g_buf[1 << 20];
static size_t g_len;

static void add(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    g_len += (size_t)vsnprintf(g_buf + g_len, sizeof g_buf - g_len, fmt, ap);
    va_end(ap);
}

/* compute of a step with b samples per rank, ms */
static double compute_ms(double b) {
    return 10 + 2 * b;
}
/* the ring all-reduce of m bytes on n ranks, s */
static double ar_s(double m, int n) {
    return ALPHA * 2 * (n - 1) + m * 2.0 * (n - 1) / n / BETA;
}

static void train_result(int first, const char *name, int ranks, int batch, double exposed_ms) {
    double b = (double)batch / ranks, step = compute_ms(b) + exposed_ms;
    add("%s{\"suite\": \"scaling\", \"case\": \"%s\", \"topology\": \"%d\", \"backend\": \"cpu\","
        " \"status\": \"pass\", \"params\": {\"model\": \"toy\", \"precision\": \"fp32\","
        " \"batch\": %d, \"seq\": 4, \"ranks\": %d, \"threads\": 1, \"num_params\": %.0f,"
        " \"zero\": 0, \"deterministic\": 0}, \"checks\": [], \"metrics\": {"
        "\"tokens_per_s\": {\"value\": %g, \"better\": \"higher\"},"
        "\"ms_per_step\": {\"value\": %.9g, \"better\": \"lower\", \"samples\": [%.9g, %.9g, "
        "%.9g]},"
        "\"exposed_comm_ms\": {\"value\": %.9g, \"better\": \"lower\", \"samples\": [%.9g, %.9g, "
        "%.9g]}}}",
        first ? "" : ",", name, ranks, batch, ranks, NPARAMS, batch * 4 / step * 1e3, step, step,
        step, step, exposed_ms, exposed_ms, exposed_ms, exposed_ms);
}

/* a tensor-parallel run of the same model (its "grid" param), far slower
 * than the data-parallel fit: the layout model's input, not the fit's */
static void grid_result(int ranks, int batch) {
    add(",{\"suite\": \"scaling\", \"case\": \"toy/layouts\", \"topology\": \"%d\","
        " \"backend\": \"cpu\", \"status\": \"pass\", \"params\": {\"model\": \"toy\","
        " \"precision\": \"fp32\", \"batch\": %d, \"seq\": 4, \"ranks\": %d, \"threads\": 1,"
        " \"num_params\": %.0f, \"zero\": 0, \"deterministic\": 0, \"grid\": \"dp=1,tp=%d,pp=1\"},"
        " \"checks\": [], \"metrics\": {\"ms_per_step\": {\"value\": 1000, \"better\": \"lower\","
        " \"samples\": [1000, 1000, 1000]}, \"exposed_comm_ms\": {\"value\": 0, \"better\":"
        " \"lower\", \"samples\": [0, 0, 0]}}}",
        ranks, batch, ranks, NPARAMS, ranks);
}
static int
    g_with_grid; /* make() adds two grid results (8 samples a rank) to the training results */

/* allreduce on n ranks; scope "" (the world), "intra_node/" or "inter_node/"
 * with the world's layout; alpha (s) and beta (bytes/s) of its links */
static void coll_scoped(int n, const char *scope, const char *layout, double alpha, double beta) {
    add(",{\"suite\": \"collectives\", \"case\": \"%sallreduce/fp32/sum\", \"topology\": \"%d\","
        "%s%s%s \"backend\": \"mpi\", \"status\": \"pass\", \"params\": {\"dtype\": \"fp32\","
        " \"in_place\": 1}, \"checks\": [], \"metrics\": {",
        scope, n, layout ? " \"layout\": \"" : "", layout ? layout : "", layout ? "\"," : "");
    for (double m = 8; m <= 1048576; m *= 2) {
        double us = (alpha * 2 * (n - 1) + m * 2.0 * (n - 1) / n / beta) * 1e6;
        add("%s\"time_%.0f\": {\"value\": %.9g, \"better\": \"lower\", \"samples\": [%.9g, %.9g]}",
            m == 8 ? "" : ",", m, us, us, us);
    }
    add("}}");
}

static void coll_result(int n) {
    add(",{\"suite\": \"collectives\", \"case\": \"allreduce/fp32/sum\", \"topology\": \"%d\","
        " \"backend\": \"mpi\", \"status\": \"pass\", \"params\": {\"dtype\": \"fp32\","
        " \"in_place\": 1}, \"checks\": [], \"metrics\": {",
        n);
    for (double m = 8; m <= 1048576; m *= 2) {
        double us = ar_s(m, n) * 1e6;
        add("%s\"time_%.0f\": {\"value\": %.9g, \"better\": \"lower\", \"samples\": [%.9g, %.9g]}",
            m == 8 ? "" : ",", m, us, us, us);
    }
    add("}}");
}

/* a report: scaling results (with_train), allreduce at 2 and 4 ranks (with_coll) */
static gt_report_doc *make(int with_train, int with_coll) {
    g_len = 0;
    add("{\"schema_version\": 1, \"run\": {\"id\": \"t\"}, \"env\": {\"cpu\": {\"logical\": 64}},"
        " \"results\": [");
    int first = 1;
    if (with_train) {
        /* the measured 2 ranks carry their real all-reduce and the losses' all-gather */
        double ex2 = ar_s(NPARAMS * 4, 2) * 1e3;
        train_result(1, "toy", 1, 16, 0);
        train_result(0, "toy", 2, 16, ex2);
        train_result(0, "toy/weak", 1, 8, 0);
        if (g_with_grid) { /* the most results of 8 samples a rank: they would set its median */
            grid_result(2, 16);
            grid_result(4, 32);
        }
        first = 0;
    }
    if (with_coll) {
        if (first)
            add("{\"suite\": \"health\", \"case\": \"x\", \"topology\": \"1\", \"backend\": "
                "\"cpu\", \"status\": \"pass\", \"checks\": [], \"metrics\": {}}");
        coll_result(2);
        coll_result(4);
    }
    add("]}");
    gt_report_doc *d = NULL;
    gt_status s = gt_report_read_text("toy.json", NULL, g_buf, g_len, &d);
    CHECK(s == GT_OK, "the test's report does not read: %s", gt_last_error());
    return d;
}

static json_t *predict(gt_report_doc *d, gt_predict_options *o) {
    gt_prediction *p = NULL;
    CHECK_OK(gt_predict_build(&d, 1, o, &p));
    if (!p) return NULL;
    char *t = gt_prediction_json_text(p);
    gt_prediction_free(p);
    json_t *j = t ? json_loads(t, 0, NULL) : NULL;
    free(t);
    CHECK(j != NULL, "the prediction's JSON does not parse");
    return j;
}

static double path(json_t *j, const char *p) {
    /* "predictions.0.strong.step_ms.mid" */
    char buf[256];
    snprintf(buf, sizeof buf, "%s", p);
    json_t *cur = j;
    for (char *tok = strtok(buf, "."); tok && cur; tok = strtok(NULL, ".")) {
        if (json_is_array(cur))
            cur = json_array_get(cur, (size_t)atoi(tok));
        else
            cur = json_object_get(cur, tok);
    }
    return json_is_number(cur) ? json_number_value(cur) : NAN;
}

static void near(double got, double want, double rel, const char *what) {
    CHECK(fabs(got - want) <= rel * fabs(want), "%s: %.9g, want %.9g (within %g%%)", what, got,
          want, rel * 100);
}

static gt_predict_options opts8(void) {
    gt_predict_options o = gt_predict_defaults();
    o.n_ranks = 1;
    o.ranks[0] = 8;
    o.ranks_per_node = 8;
    o.cores_per_rank = 1;
    return o;
}

static const char *jstr(json_t *j, const char *p) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", p);
    json_t *cur = j;
    for (char *tok = strtok(buf, "."); tok && cur; tok = strtok(NULL, "."))
        cur =
            json_is_array(cur) ? json_array_get(cur, (size_t)atoi(tok)) : json_object_get(cur, tok);
    return json_is_string(cur) ? json_string_value(cur) : "";
}

/* the assumptions hold one that contains `what` */
static int assumed(json_t *j, const char *what) {
    json_t *a = json_object_get(j, "assumptions");
    for (size_t i = 0; i < json_array_size(a); i++)
        if (strstr(json_string_value(json_array_get(a, i)), what)) return 1;
    return 0;
}

/* The screen output of a prediction (malloc'd). */
static char *printed(gt_report_doc *d, const gt_predict_options *o) {
    gt_prediction *p = NULL;
    CHECK_OK(gt_predict_build(&d, 1, o, &p));
    FILE *f = tmpfile();
    if (!p || !f) {
        gt_prediction_free(p);
        if (f) fclose(f);
        return NULL;
    }
    gt_prediction_print(p, f);
    gt_prediction_free(p);
    long n = ftell(f);
    char *t = calloc((size_t)n + 1, 1);
    rewind(f);
    if (t && fread(t, 1, (size_t)n, f) != (size_t)n) t[0] = 0;
    fclose(f);
    return t;
}

/* Issue 35's run on a 2-core machine: 1 rank with 1 thread 129.7 ms per
 * step, 2 ranks 78.95 ms with 10.18 ms exposed communication (batch 16),
 * collectives on 2 ranks only; predicted for 1, 2, 4 ranks. */
static void issue35(void) {
    g_len = 0;
    add("{\"schema_version\": 1, \"run\": {\"id\": \"t\"}, \"env\": {\"cpu\": {\"logical\": 2}},"
        " \"results\": [");
    add("{\"suite\": \"scaling\", \"case\": \"toy\", \"topology\": \"1\", \"backend\": \"cpu\","
        " \"status\": \"pass\", \"params\": {\"model\": \"toy\", \"precision\": \"fp32\","
        " \"batch\": 16, \"seq\": 4, \"ranks\": 1, \"threads\": 1, \"num_params\": %.0f,"
        " \"zero\": 0, \"deterministic\": 0}, \"checks\": [], \"metrics\": {"
        "\"tokens_per_s\": {\"value\": 493, \"better\": \"higher\"},"
        "\"ms_per_step\": {\"value\": 129.7, \"better\": \"lower\", \"samples\": [129.7, 129.7, "
        "129.7]}}}",
        NPARAMS);
    add(",{\"suite\": \"scaling\", \"case\": \"toy\", \"topology\": \"2\", \"backend\": \"cpu\","
        " \"status\": \"pass\", \"params\": {\"model\": \"toy\", \"precision\": \"fp32\","
        " \"batch\": 16, \"seq\": 4, \"ranks\": 2, \"threads\": 1, \"num_params\": %.0f,"
        " \"zero\": 0, \"deterministic\": 0}, \"checks\": [], \"metrics\": {"
        "\"tokens_per_s\": {\"value\": 810, \"better\": \"higher\"},"
        "\"ms_per_step\": {\"value\": 78.95, \"better\": \"lower\", \"samples\": [78.95, 78.95, "
        "78.95]},"
        "\"exposed_comm_ms\": {\"value\": 10.18, \"better\": \"lower\", \"samples\": [10.18, "
        "10.18, 10.18]}}}",
        NPARAMS);
    coll_result(2);
    add("]}");
    gt_report_doc *d = NULL;
    CHECK_OK(gt_report_read_text("issue35.json", NULL, g_buf, g_len, &d));
    if (!d) return;
    gt_predict_options o = gt_predict_defaults();
    o.n_ranks = 3;
    o.ranks[0] = 1;
    o.ranks[1] = 2;
    o.ranks[2] = 4;
    o.check = 1;
    json_t *j = predict(d, &o);
    /* every row: the cores the assumptions say (1: two cores, two ranks per node) */
    CHECK(path(j, "cores_per_rank") == 1, "cores per rank %g, want 1", path(j, "cores_per_rank"));
    CHECK(assumed(j, "predicted ranks get 1 core(s) each"), "the assumptions lack the cores");
    for (int i = 0; i < 3; i++) {
        char k[64];
        snprintf(k, sizeof k, "predictions.%d.cores_per_rank", i);
        CHECK(path(j, k) == 1, "row %d: %g cores per rank, the assumptions say 1", i, path(j, k));
    }
    /* so the 1-rank row predicts what 1 rank with 1 core measured */
    near(path(j, "predictions.0.strong.step_ms.mid"), 129.7, 1e-4, "the 1-rank row");
    near(path(j, "predictions.0.strong.measured.step_ms"), 129.7, 1e-6, "measured beside 1 rank");
    near(path(j, "predictions.1.strong.measured.step_ms"), 78.95, 1e-6, "measured beside 2 ranks");
    near(path(j, "predictions.1.strong.measured.exposed_comm_ms"), 10.18, 1e-6,
         "measured exposed beside 2 ranks");
    CHECK(isnan(path(j, "predictions.2.strong.measured.step_ms")), "4 ranks were not measured");
    /* weak: 16 per rank; efficiency from the row's own step and tokens/s */
    double w1 = path(j, "predictions.0.weak.step_ms.mid"),
           w2 = path(j, "predictions.1.weak.step_ms.mid");
    near(path(j, "predictions.1.weak.efficiency.mid"), w1 / w2, 1e-5, "weak efficiency = steps");
    near(path(j, "predictions.1.weak.efficiency.mid"),
         path(j, "predictions.1.weak.throughput.mid") /
             (2 * path(j, "predictions.0.weak.throughput.mid")),
         1e-5, "weak efficiency = tokens/s");
    /* --check with 1 and 2 ranks measured: the 2-rank step from the 1-rank
     * compute and the 2-rank collectives, said not to be leave-one-out */
    json_t *ck = json_object_get(j, "check");
    CHECK(json_array_size(ck) == 1, "check rows: %zu, want the 2-rank one", json_array_size(ck));
    CHECK(strcmp(jstr(j, "check.0.compute_fitted_from_ranks"), "1") == 0 &&
              strcmp(jstr(j, "check.0.links_fitted_from_ranks"), "2") == 0,
          "the check's fits: c:%s l:%s, want c:1 l:2", jstr(j, "check.0.compute_fitted_from_ranks"),
          jstr(j, "check.0.links_fitted_from_ranks"));
    CHECK(json_is_false(json_object_get(json_array_get(ck, 0), "leave_one_out")),
          "a check from the 2-rank collectives is called leave-one-out");
    near(path(j, "check.0.measured_step_ms"), 78.95, 1e-6, "the check's measured step");
    /* the model's exposed communication beside the measured one, and why */
    CHECK(assumed(j, "exposed communication at 2 ranks") && assumed(j, "measured 10.2 ms"),
          "the measured exposed communication is not compared with the model's");
    CHECK(assumed(j, "slowest rank"), "the gap in exposed communication is not explained");
    json_decref(j);
    char *t = printed(d, &o);
    CHECK(t && strstr(t, "This is not a leave-one-out check"),
          "the screen does not say that the "
          "check is not leave-one-out:\n%s",
          t ? t : "");
    CHECK(t && strstr(t, "predicted against measured"), "the screen lacks the measured rows");
    CHECK(t && !strstr(t, "nothing to check"), "the screen says nothing to check");
    free(t);
    gt_report_doc_free(d);
}

/* the check: the measured 2 ranks from the 1-rank results and the 4-rank
 * collectives only; the model is exact here, so is the prediction */
static void check_leave_one_out(void) {
    gt_report_doc *d = make(1, 1);
    gt_predict_options o = opts8();
    o.check = 1;
    o.max_error = 0.01;
    json_t *j = predict(d, &o);
    json_t *ck = json_object_get(j, "check");
    CHECK(json_array_size(ck) == 1, "check rows: %zu, want 1 (toy on 2 ranks)",
          json_array_size(ck));
    if (json_array_size(ck) == 1) {
        json_t *r = json_array_get(ck, 0);
        CHECK(json_integer_value(json_object_get(r, "ranks")) == 2,
              "check of the wrong rank count");
        CHECK(strcmp(json_string_value(json_object_get(r, "compute_fitted_from_ranks")), "1") == 0,
              "the check's compute fit: %s, want 1",
              json_string_value(json_object_get(r, "compute_fitted_from_ranks")));
        CHECK(strcmp(json_string_value(json_object_get(r, "links_fitted_from_ranks")), "4") == 0,
              "the check's link fit: %s, want 4",
              json_string_value(json_object_get(r, "links_fitted_from_ranks")));
        CHECK(fabs(json_number_value(json_object_get(r, "error"))) < 0.01,
              "check error %g on an exact model", json_number_value(json_object_get(r, "error")));
        CHECK(json_is_true(json_object_get(r, "within_bound")), "within_bound false");
    }
    json_decref(j);
    gt_report_doc_free(d);
}

/* what is missing is named, with the suite to run */
static void refusals(void) {
    gt_prediction *p = NULL;
    gt_predict_options o = opts8();
    gt_report_doc *d = make(1, 0);
    CHECK_STATUS(gt_predict_build(&d, 1, &o, &p), GT_ERR_INVALID);
    CHECK(strstr(gt_last_error(), "collectives") && strstr(gt_last_error(), "allreduce"),
          "no collectives: %s", gt_last_error());
    /* ... unless the network is given */
    o.intra_alpha_us = 1;
    o.intra_beta_gbps = 100;
    CHECK_OK(gt_predict_build(&d, 1, &o, &p));
    gt_prediction_free(p);
    p = NULL;
    gt_report_doc_free(d);
    o = opts8();
    d = make(0, 1);
    CHECK_STATUS(gt_predict_build(&d, 1, &o, &p), GT_ERR_INVALID);
    CHECK(strstr(gt_last_error(), "scaling"), "no scaling: %s", gt_last_error());
    o.case_name = "nope";
    CHECK_STATUS(gt_predict_build(&d, 1, &o, &p), GT_ERR_INVALID);
    gt_report_doc_free(d);
    d = make(1, 1);
    CHECK_STATUS(gt_predict_build(&d, 1, &o, &p), GT_ERR_INVALID);
    CHECK(strstr(gt_last_error(), "'toy'") && strstr(gt_last_error(), "'toy/weak'"),
          "an unknown --case does not list the cases: %s", gt_last_error());
    /* alpha without beta */
    o = opts8();
    o.inter_alpha_us = 3;
    CHECK_STATUS(gt_predict_build(&d, 1, &o, &p), GT_ERR_INVALID);
    gt_report_doc_free(d);
}

/* a tensor- or pipeline-parallel result beside the data-parallel ones
 * leaves the compute fit as it was */
static void grid_results_left_out(void) {
    g_with_grid = 1;
    gt_report_doc *d = make(1, 1);
    g_with_grid = 0;
    if (!d) return;
    gt_predict_options o = opts8();
    json_t *j = predict(d, &o);
    near(path(j, "inputs.compute.fixed"), 10, 0.01,
         "compute with a grid result beside: fixed part");
    near(path(j, "inputs.compute.per_sample"), 2, 0.01,
         "compute with a grid result beside: per sample");
    json_decref(j);
    gt_report_doc_free(d);
}

int main(void) {
    grid_results_left_out();
    gt_report_doc *d = make(1, 1);
    if (!d) return check_done("reports.predict");
    double G = NPARAMS * 4;
    /* the losses' all-gather of 8 B per rank, on the all-reduce's alpha-beta */
    double other8 = (ALPHA * 7 + 64.0 * 7 / 8 / BETA) * 1e3;

    /* the fit, and one 25 MiB bucket: the whole all-reduce is exposed */
    gt_predict_options o = opts8();
    json_t *j = predict(d, &o);
    near(path(j, "inputs.links.intra_node.allreduce.alpha_us.mid"), 2.0, 0.02, "alpha");
    near(path(j, "inputs.links.intra_node.allreduce.beta_gbps.mid"), 10.0, 0.002, "beta");
    near(path(j, "inputs.compute.fixed"), 10, 0.01, "compute: fixed part");
    near(path(j, "inputs.compute.per_sample"), 2, 0.01, "compute: per sample");
    double ex = ar_s(G, 8) * 1e3;
    near(path(j, "predictions.0.strong.compute_ms.mid"), compute_ms(2), 0.005, "compute at 8");
    near(path(j, "predictions.0.strong.exposed_comm_ms.mid"), ex, 0.005, "one bucket");
    near(path(j, "predictions.0.strong.other_comm_ms.mid"), other8, 0.02, "losses' all-gather");
    near(path(j, "predictions.0.strong.step_ms.mid"), compute_ms(2) + ex + other8, 0.005, "step");
    /* strong efficiency: one rank with the whole batch over 8 x the step */
    near(path(j, "predictions.0.strong.efficiency.mid"),
         compute_ms(16) / (8 * (compute_ms(2) + ex + other8)), 0.005, "strong efficiency");
    /* weak: the twin's 8 per rank */
    near(path(j, "predictions.0.weak.compute_ms.mid"), compute_ms(8), 0.005, "weak compute");
    near(path(j, "predictions.0.weak.throughput.mid"),
         8 * 8 * 4 /
             ((compute_ms(8) + path(j, "predictions.0.weak.exposed_comm_ms.mid") +
               path(j, "predictions.0.weak.other_comm_ms.mid")) *
              1e-3),
         0.001, "weak tokens/s");
    json_decref(j);

    /* 0.5 MiB buckets: each all-reduce (~0.1 ms) ends long before the backward
     * passes the next one; only the last (the buffer's first 329,984 bytes,
     * ready when the backward ends) shows */
    o = opts8();
    o.bucket_mb = 0.5;
    j = predict(d, &o);
    double last = G - 7 * 524288.0;
    near(path(j, "predictions.0.strong.exposed_comm_ms.mid"), ar_s(last, 8) * 1e3, 0.01,
         "the last bucket");
    json_decref(j);
    /* a backward too short to hide anything: every bucket after it */
    o = opts8();
    o.bucket_mb = 0.5;
    o.backward_fraction = 0.01;
    j = predict(d, &o);
    double all = 7 * ar_s(524288, 8) + ar_s(last, 8);
    /* the first bucket is ready after 524288 / G of the backward */
    double tb = 0.01 * compute_ms(2);
    near(path(j, "predictions.0.strong.exposed_comm_ms.mid"), tb * 524288.0 / G + all * 1e3 - tb,
         0.01, "every bucket after a short backward");
    json_decref(j);

    /* ZeRO-1: reduce-scatter of the padded gradients, all-gather of the fp32
     * parameters (both on the all-reduce's fit: neither was measured) */
    o = opts8();
    o.zero = 1;
    j = predict(d, &o);
    double padded = 2 * 65536.0 * 8 * 4; /* 1e6 elements -> 2 chunks of 8 x 65536 */
    double rs = ALPHA * 7 + padded * 7 / 8 / BETA;
    near(path(j, "predictions.0.strong.exposed_comm_ms.mid"), 2 * rs * 1e3, 0.01, "ZeRO-1");
    json_decref(j);

    /* a network that was not measured */
    o = opts8();
    o.intra_alpha_us = 1;
    o.intra_beta_gbps = 100;
    j = predict(d, &o);
    near(path(j, "predictions.0.strong.exposed_comm_ms.mid"), (1e-6 * 14 + G * 1.75 / 100e9) * 1e3,
         0.001, "given alpha and beta");
    json_t *src = json_object_get(
        json_object_get(
            json_object_get(json_object_get(json_object_get(j, "inputs"), "links"), "intra_node"),
            "allreduce"),
        "source");
    CHECK(json_is_string(src) && strcmp(json_string_value(src), "given") == 0,
          "a given network is not marked given");
    json_decref(j);
    /* two nodes of 4 with an inter-node network 10x slower: slower than one node */
    o = opts8();
    o.ranks_per_node = 4;
    o.inter_alpha_us = 20;
    o.inter_beta_gbps = 1;
    j = predict(d, &o);
    double two = path(j, "predictions.0.strong.exposed_comm_ms.mid");
    /* reduce-scatter in the node, all-reduce of the quarter across 2 nodes, all-gather */
    double want = (ALPHA * 3 + G * 0.75 / BETA) * 2 + (20e-6 * 2 + G / 4 * 1.0 / 1e9);
    near(two, want * 1e3, 0.01, "two levels");
    json_decref(j);

    /* inter-node measured: the collectives suite's "inter_node/..." cases (2
     * nodes of 2: alpha 20 us, beta 1 GB/s) beside "intra_node/..." ones;
     * two nodes of 4 must match the two-level equation with the measured
     * inter-node link, marked measured */
    gt_report_doc_free(d);
    g_len = 0;
    add("{\"schema_version\": 1, \"run\": {\"id\": \"t\"}, \"env\": {\"cpu\": {\"logical\": 64}},"
        " \"results\": [");
    train_result(1, "toy", 1, 16, 0);
    train_result(0, "toy/weak", 1, 8, 0);
    coll_scoped(2, "intra_node/", "2x2", ALPHA, BETA);
    coll_scoped(2, "inter_node/", "2x2", 20e-6, 1e9);
    add("]}");
    CHECK_OK(gt_report_read_text("nodes.json", NULL, g_buf, g_len, &d));
    o = opts8();
    o.ranks_per_node = 4;
    j = predict(d, &o);
    near(path(j, "inputs.links.inter_node.allreduce.alpha_us.mid"), 20, 0.02, "inter alpha");
    near(path(j, "inputs.links.inter_node.allreduce.beta_gbps.mid"), 1, 0.002, "inter beta");
    near(path(j, "predictions.0.strong.exposed_comm_ms.mid"), want * 1e3, 0.01,
         "two levels, inter-node measured");
    src = json_object_get(
        json_object_get(
            json_object_get(json_object_get(json_object_get(j, "inputs"), "links"), "inter_node"),
            "allreduce"),
        "source");
    CHECK(json_is_string(src) && strcmp(json_string_value(src), "measured") == 0,
          "the inter-node link is not marked measured");
    json_decref(j);
    gt_report_doc_free(d);
    check_leave_one_out();
    issue35();
    refusals();
    return check_done("reports.predict");
}
