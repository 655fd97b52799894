/* reports.predict.rows: a property of every predicted table, over generated
 * inputs (deterministic seed): reports with random machines (cores),
 * training results (rank counts, batches, threads, step and exposed
 * communication samples, weak twins), collectives (rank counts, latency,
 * bandwidth, sizes, which collectives) and random options (rank lists with
 * and without 1, cores per rank, ranks per node, batches, buckets, ZeRO-1,
 * given networks, --check). On every row of every prediction:
 *   - each rank has the cores the prediction says (the top-level
 *     cores_per_rank), the 1-rank reference and a 1-rank row included;
 *   - throughput = samples per step x units / step time;
 *   - efficiency = throughput / (ranks x the 1-rank reference's throughput),
 *     which is step(1) / (N step(N)) strong and step(1) / step(N) weak;
 *   - step = compute + exposed + other communication, lo <= mid <= hi;
 *   - a 1-rank row is the reference row (efficiency 1);
 *   - a measured figure shown beside a row is the median step of a generated
 *     result with that rank count and batch per rank;
 *   - a check row is leave-one-out exactly when its links were fitted
 *     without its own rank count.
 * The JSON carries 6 significant digits, hence the relative tolerance. */
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/tests/check.h"
#include "reports/predict.h"
#include "reports/read.h"

#define N_CASES 400
#define TOL 2e-5

static char g_buf[1 << 20];
static size_t g_len;

static void add(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    g_len += (size_t)vsnprintf(g_buf + g_len, sizeof g_buf - g_len, fmt, ap);
    va_end(ap);
}

/* splitmix64: the same inputs on every run */
static uint64_t g_rng = 0x35c0ffee2026ull;
static uint64_t next_u64(void) {
    uint64_t z = (g_rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double urand(void) { return (double)(next_u64() >> 11) * 0x1.0p-53; }
static int irand(int lo, int hi) { return lo + (int)(next_u64() % (uint64_t)(hi - lo + 1)); }
static double lrand(double lo, double hi) { return lo * pow(hi / lo, urand()); }
static int pick(const int *v, int n) { return v[irand(0, n - 1)]; }

/* what was generated, to check the measured figures against */
typedef struct gen_train {
    int ranks;
    double b, median;
} gen_train;
static gen_train g_train[8];
static int g_ntrain;

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* one training result: samples of ms_per_step and, aligned, exposed_comm_ms */
static void gen_train_result(const char *name, int ranks, int b, int threads, int tokens,
                             int seq, double nparams, int zero, const char *prec) {
    int n = irand(1, 7);
    double step[8], ex[8], sorted[8], base = lrand(1, 2000), exf = urand() * 0.3;
    for (int i = 0; i < n; i++) {
        step[i] = base * (1 + 0.2 * urand());
        ex[i] = ranks > 1 ? step[i] * exf * urand() : 0;
        sorted[i] = step[i];
    }
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_double);
    double med = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    add("%s{\"suite\": \"scaling\", \"case\": \"%s\", \"topology\": \"%d\", \"backend\": \"cpu\","
        " \"status\": \"pass\", \"params\": {\"model\": \"toy\", \"precision\": \"%s\","
        " \"batch\": %d, \"seq\": %d, \"ranks\": %d, \"threads\": %d, \"num_params\": %.0f,"
        " \"zero\": %d, \"deterministic\": 0}, \"checks\": [], \"metrics\": {"
        "\"%s_per_s\": {\"value\": 1, \"better\": \"higher\"}, \"ms_per_step\": {\"value\": %.17g,"
        " \"better\": \"lower\", \"samples\": [",
        g_ntrain ? "," : "", name, ranks, prec, ranks * b, seq, ranks,
        threads, nparams, zero, tokens ? "tokens" : "samples", med);
    for (int i = 0; i < n; i++)
        add("%s%.17g", i ? ", " : "", step[i]);
    add("]}, \"exposed_comm_ms\": {\"value\": %.17g, \"better\": \"lower\", \"samples\": [",
        ex[0]);
    for (int i = 0; i < n; i++)
        add("%s%.17g", i ? ", " : "", ex[i]);
    add("]}}}");
    g_train[g_ntrain++] = (gen_train){ranks, (double)b, med};
}

/* one collective at n ranks: times from alpha (s per ring step) and beta
 * (bytes/s) with noise, sizes 8 B up to 2^top */
static void gen_coll(const char *coll, int n, int in_place, int top) {
    double alpha = lrand(1e-7, 1e-4), beta = lrand(1e8, 1e11);
    int ar = strcmp(coll, "allreduce") == 0;
    double L = ar ? 2.0 * (n - 1) : n - 1.0, F = ar ? 2.0 * (n - 1) / n : (n - 1.0) / n;
    add(",{\"suite\": \"collectives\", \"case\": \"%s/fp32/sum\", \"topology\": \"%d\","
        " \"backend\": \"mpi\", \"status\": \"pass\", \"params\": {\"dtype\": \"fp32\","
        " \"in_place\": %d}, \"checks\": [], \"metrics\": {",
        coll, n, in_place);
    for (int e = 3; e <= top; e++) {
        double m = ldexp(1, e) * (ar ? 1 : n), us = (alpha * L + m * F / beta) * 1e6;
        add("%s\"time_%.0f\": {\"value\": %.9g, \"better\": \"lower\", \"samples\": [%.9g, %.9g]}",
            e == 3 ? "" : ",", m, us, us * (1 + 0.3 * urand()), us);
    }
    add("}}");
}

/* a random report (throughput in tokens of seq per sample, or in samples);
 * *coll_count: the rank counts with collectives */
static gt_report_doc *gen_report(int *coll_count) {
    static const int cores_v[] = {1, 2, 4, 8, 16, 64};
    static const int ranks_v[] = {1, 2, 3, 4, 8};
    static const int b_v[] = {1, 2, 4, 8, 16, 32};
    g_len = 0;
    g_ntrain = 0;
    int cores = pick(cores_v, 6), seq = irand(1, 512), tokens = irand(0, 1);
    double nparams = floor(lrand(1e4, 1e9));
    int zero = irand(0, 3) == 0;
    const char *prec = irand(0, 1) ? "fp32" : "bf16";
    add("{\"schema_version\": 1, \"run\": {\"id\": \"g\"}, \"env\": {\"cpu\": {\"logical\": %d}},"
        " \"results\": [",
        cores);
    int nt = irand(1, 5);
    for (int i = 0; i < nt; i++) {
        const char *name = i == 0 || irand(0, 2) ? "toy" : "toy/weak";
        gen_train_result(name, pick(ranks_v, 5), pick(b_v, 6), irand(1, 4), tokens, seq, nparams,
                         zero, prec);
    }
    static const int cn_v[] = {2, 4, 8};
    *coll_count = irand(0, 3);
    for (int i = 0; i < *coll_count; i++) {
        int n = pick(cn_v, 3), top = irand(6, 24);
        gen_coll("allreduce", n, 1, top);
        if (irand(0, 1)) gen_coll("reduce_scatter", n, 0, top);
        if (irand(0, 1)) gen_coll("allgather", n, 1, top);
    }
    add("]}");
    gt_report_doc *d = NULL;
    gt_status s = gt_report_read_text("gen.json", NULL, g_buf, g_len, &d);
    CHECK(s == GT_OK, "a generated report does not read: %s", gt_last_error());
    return d;
}

static gt_predict_options gen_options(int coll_count) {
    static const int r_v[] = {1, 2, 3, 4, 5, 8, 16, 64, 100, 512, 4096, 100000};
    gt_predict_options o = gt_predict_defaults();
    o.n_ranks = irand(1, 8);
    for (int i = 0; i < o.n_ranks; i++)
        o.ranks[i] = pick(r_v, 12);
    if (irand(0, 2) == 0) o.cores_per_rank = lrand(0.5, 8);
    if (irand(0, 2) == 0) o.ranks_per_node = irand(1, 16);
    if (irand(0, 4) == 0) o.global_batch = floor(lrand(1, 1e5));
    if (irand(0, 4) == 0) o.batch_per_rank = irand(0, 1) ? floor(lrand(1, 64)) : lrand(0.25, 64);
    if (irand(0, 2) == 0) o.bucket_mb = lrand(0.01, 100);
    if (irand(0, 4) == 0) o.backward_fraction = lrand(0.1, 1);
    if (coll_count == 0 || irand(0, 4) == 0) {
        o.intra_alpha_us = lrand(0.1, 50);
        o.intra_beta_gbps = lrand(0.1, 100);
    }
    if (irand(0, 4) == 0) {
        o.inter_alpha_us = lrand(0.5, 100);
        o.inter_beta_gbps = lrand(0.1, 50);
    }
    o.check = irand(0, 1);
    return o;
}

/* ---- the properties -------------------------------------------------------- */

static json_t *get(json_t *o, const char *k) { return json_object_get(o, k); }
static double num(json_t *o, const char *k) {
    json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}
static int same(double a, double b) {
    return isfinite(a) && isfinite(b) && fabs(a - b) <= TOL * fmax(fabs(a), fabs(b));
}

static int g_case; /* which generated case, for the messages */

static void check_iv(json_t *sc, const char *k, int ranks, const char *kind) {
    json_t *v = get(sc, k);
    double lo = num(v, "lo"), mid = num(v, "mid"), hi = num(v, "hi");
    CHECK(lo <= mid * (1 + TOL) && mid <= hi * (1 + TOL), "case %d, %d ranks, %s %s: %g [%g, %g]",
          g_case, ranks, kind, k, mid, lo, hi);
}

/* a measured figure names a generated result of that rank count and batch */
static void check_measured(json_t *sc, int ranks, const char *kind) {
    json_t *m = get(sc, "measured");
    if (!m) return;
    double b = num(sc, "batch_per_rank"), step = num(m, "step_ms");
    int found = 0;
    for (int i = 0; i < g_ntrain; i++)
        found |= g_train[i].ranks == ranks && same(g_train[i].b, b) && same(g_train[i].median, step);
    CHECK(found, "case %d, %d ranks, %s: measured %g ms at %g per rank was not generated", g_case,
          ranks, kind, step, b);
}

/* one scaling of one row against the reference's same scaling */
static void check_scale(json_t *row, json_t *ref, const char *kind, double units) {
    int ranks = (int)num(row, "ranks");
    json_t *sc = get(row, kind), *rs = get(ref, kind);
    if (!get(sc, "step_ms")) {
        CHECK(strcmp(kind, "strong") == 0 && num(sc, "batch_per_rank") < 1,
              "case %d, %d ranks, %s: not predicted at %g per rank", g_case, ranks, kind,
              num(sc, "batch_per_rank"));
        return;
    }
    double step = num(get(sc, "step_ms"), "mid"), tput = num(get(sc, "throughput"), "mid");
    double eff = num(get(sc, "efficiency"), "mid");
    double rstep = num(get(rs, "step_ms"), "mid"), rtput = num(get(rs, "throughput"), "mid");
    double samples = strcmp(kind, "strong") == 0 ? num(sc, "global_batch")
                                                 : ranks * num(sc, "batch_per_rank");
    CHECK(same(tput, samples * units / (step * 1e-3)),
          "case %d, %d ranks, %s: throughput %.9g, but %g samples x %g / %.9g ms = %.9g", g_case,
          ranks, kind, tput, samples, units, step, samples * units / (step * 1e-3));
    CHECK(same(eff, tput / (ranks * rtput)),
          "case %d, %d ranks, %s: efficiency %.9g, but throughput %.9g / (%d x the 1-rank %.9g) "
          "= %.9g",
          g_case, ranks, kind, eff, tput, ranks, rtput, tput / (ranks * rtput));
    double by_step = strcmp(kind, "strong") == 0 ? rstep / (ranks * step) : rstep / step;
    CHECK(same(eff, by_step), "case %d, %d ranks, %s: efficiency %.9g, step times say %.9g", g_case,
          ranks, kind, eff, by_step);
    double parts = num(get(sc, "compute_ms"), "mid") + num(get(sc, "exposed_comm_ms"), "mid") +
                   num(get(sc, "other_comm_ms"), "mid");
    CHECK(same(step, parts), "case %d, %d ranks, %s: step %.9g, its parts %.9g", g_case, ranks,
          kind, step, parts);
    check_iv(sc, "step_ms", ranks, kind);
    check_iv(sc, "throughput", ranks, kind);
    check_iv(sc, "efficiency", ranks, kind);
    if (ranks == 1)
        CHECK(same(step, rstep) && same(eff, 1.0),
              "case %d, the 1-rank %s row: %.9g ms, efficiency %.9g; the reference %.9g ms", g_case,
              kind, step, eff, rstep);
    check_measured(sc, ranks, kind);
}

/* the 1-rank row of the table, if asked for */
static json_t *one_rank_row(json_t *j) {
    json_t *rows = get(j, "predictions");
    for (size_t i = 0; i < json_array_size(rows); i++)
        if (num(json_array_get(rows, i), "ranks") == 1) return json_array_get(rows, i);
    return NULL;
}

static void check_rows(json_t *j) {
    json_t *ref = get(j, "reference");
    CHECK(ref && num(ref, "ranks") == 1, "case %d: no 1-rank reference row", g_case);
    if (!ref) ref = one_rank_row(j); /* the rows must still agree with the 1-rank row */
    if (!ref) return;
    double cores = num(j, "cores_per_rank"), units = num(j, "units_per_sample");
    CHECK(num(ref, "cores_per_rank") == cores, "case %d: the reference has %g cores, the table %g",
          g_case, num(ref, "cores_per_rank"), cores);
    json_t *rows = get(j, "predictions");
    for (size_t i = 0; i < json_array_size(rows); i++) {
        json_t *r = json_array_get(rows, i);
        CHECK(num(r, "cores_per_rank") == cores, "case %d, %g ranks: %g cores per rank, the "
              "assumptions %g", g_case, num(r, "ranks"), num(r, "cores_per_rank"), cores);
        check_scale(r, ref, "strong", units);
        check_scale(r, ref, "weak", units);
    }
}

/* "1,2,4" holds n */
static int list_has(const char *list, int n) {
    char buf[64];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *t = strtok(buf, ","); t; t = strtok(NULL, ","))
        if (atoi(t) == n) return 1;
    return 0;
}

static void check_check_rows(json_t *j) {
    json_t *ck = get(j, "check");
    for (size_t i = 0; i < json_array_size(ck); i++) {
        json_t *r = json_array_get(ck, i);
        int ranks = (int)num(r, "ranks");
        const char *links = json_string_value(get(r, "links_fitted_from_ranks"));
        const char *comp = json_string_value(get(r, "compute_fitted_from_ranks"));
        int loo = json_is_true(get(r, "leave_one_out"));
        CHECK(links && comp && !list_has(comp, ranks),
              "case %d, check of %d ranks: compute fitted from %s", g_case, ranks,
              comp ? comp : "?");
        if (links && strcmp(links, "given") != 0)
            CHECK(loo == !list_has(links, ranks),
                  "case %d, check of %d ranks: links from %s, leave_one_out %d", g_case, ranks,
                  links, loo);
    }
}

int main(void) {
    int built = 0, with_check = 0, with_measured = 0, refused = 0;
    for (g_case = 0; g_case < N_CASES; g_case++) {
        int nc = 0;
        gt_report_doc *d = gen_report(&nc);
        if (!d) continue;
        gt_predict_options o = gen_options(nc);
        gt_prediction *p = NULL;
        gt_status s = gt_predict_build(&d, 1, &o, &p);
        if (s != GT_OK) {
            /* only a link the rows need and nobody measured (e.g. ZeRO-1
             * across nodes with nothing given) may be refused, by name */
            CHECK(s == GT_ERR_INVALID && strstr(gt_last_error(), "collectives"),
                  "case %d refused: %s", g_case, gt_last_error());
            refused++;
            gt_report_doc_free(d);
            continue;
        }
        char *t = gt_prediction_json_text(p);
        json_t *j = t ? json_loads(t, 0, NULL) : NULL;
        CHECK(j != NULL, "case %d: the JSON does not parse", g_case);
        if (j) {
            built++;
            with_check += json_array_size(get(j, "check")) > 0;
            with_measured += strstr(t, "\"measured\"") != NULL;
            check_rows(j);
            check_check_rows(j);
        }
        json_decref(j);
        free(t);
        gt_prediction_free(p);
        gt_report_doc_free(d);
    }
    printf("reports.predict.rows: %d predictions (%d with check rows, %d with measured rows), "
           "%d refused\n",
           built, with_check, with_measured, refused);
    /* the generator must reach what the properties are about */
    CHECK(built >= N_CASES * 3 / 4, "only %d of %d generated inputs predicted", built, N_CASES);
    CHECK(with_check >= 20 && with_measured >= 50, "too few check (%d) or measured (%d) rows",
          with_check, with_measured);
    return check_done("reports.predict.rows");
}
