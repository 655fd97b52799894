/* compare: the statistics against known values, and the gate's decisions on
 * hand-built reports (reports/compare.h). */
#define _GNU_SOURCE
#include "reports/compare.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int g_fails = 0;

#define EXPECT(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);                        \
            g_fails++;                                                                             \
        }                                                                                          \
    } while (0)

static void expect_near(double got, double want, double tol, const char *what) {
    if (!(fabs(got - want) <= tol)) {
        fprintf(stderr, "FAIL %s: got %.9g, want %.9g (tol %g)\n", what, got, want, tol);
        g_fails++;
    }
}

/* Known values: R's wilcox.test(a, b, exact = FALSE, correct = TRUE) and the
 * textbook formula by hand. */
static void test_mann_whitney(void) {
    double a[10], b[10], u;
    for (int i = 0; i < 10; i++)
        a[i] = b[i] = 1.0 + i;
    expect_near(gt_mann_whitney_p(a, 10, b, 10, &u), 1.0, 0, "identical samples: p = 1");
    expect_near(u, 50, 0, "identical samples: U = n1 n2 / 2");

    for (int i = 0; i < 10; i++)
        b[i] = 11.0 + i;
    double p = gt_mann_whitney_p(a, 10, b, 10, &u);
    EXPECT(p < 1e-3);
    expect_near(p, 1.826717911e-4, 1e-9, "shifted n=10 each");
    expect_near(u, 0, 0, "fully separated: U = 0");
    expect_near(gt_mann_whitney_p(b, 10, a, 10, &u), p, 1e-15, "two-sided: symmetric");
    expect_near(u, 100, 0, "U of the larger side = n1 n2");

    double c[5] = {1, 2, 3, 4, 5}, d[5] = {6, 7, 8, 9, 10}, e[5] = {3, 4, 5, 6, 7};
    expect_near(gt_mann_whitney_p(c, 5, d, 5, NULL), 0.01218578, 1e-7, "1..5 vs 6..10");
    /* three tied pairs: the tie correction shrinks the variance */
    expect_near(gt_mann_whitney_p(c, 5, e, 5, &u), 0.11384630, 1e-7, "ties");
    expect_near(u, 4.5, 0, "ties: average ranks");

    double z[6] = {0, 0, 0, 0, 0, 0};
    expect_near(gt_mann_whitney_p(z, 6, z, 5, NULL), 1.0, 0, "all equal: p = 1");
    expect_near(gt_mann_whitney_p(z, 0, z, 5, NULL), 1.0, 0, "empty side: p = 1");
}

static void test_verdicts(void) {
    gt_compare_options o = gt_compare_defaults();
    double base[10], slow[10], noisy[10], rel, p;
    gt_compare_method m;
    for (int i = 0; i < 10; i++) {
        base[i] = 100 + i;
        slow[i] = 0.7 * base[i];
        noisy[i] = (i % 2 ? 50 : 150) + i; /* median ~100, spread 50..159 */
    }
    /* higher is better: 30% less is slower */
    EXPECT(gt_compare_samples(base, 10, slow, 10, 1, &o, &m, NULL, NULL, &rel, &p) ==
           GT_VERDICT_SLOWER);
    EXPECT(m == GT_METHOD_U_TEST && p < 1e-3);
    expect_near(rel, -0.3, 1e-12, "relative change of the medians");
    EXPECT(gt_compare_samples(slow, 10, base, 10, 1, &o, NULL, NULL, NULL, NULL, NULL) ==
           GT_VERDICT_FASTER);
    /* lower is better (a time): 30% less is faster */
    EXPECT(gt_compare_samples(base, 10, slow, 10, 0, &o, NULL, NULL, NULL, NULL, NULL) ==
           GT_VERDICT_FASTER);
    EXPECT(gt_compare_samples(base, 10, base, 10, 1, &o, NULL, NULL, NULL, NULL, NULL) ==
           GT_VERDICT_SAME);
    /* a large shift inside the noise: not significant -> ambiguous */
    double shifted[10];
    for (int i = 0; i < 10; i++)
        shifted[i] = noisy[i] * 0.9;
    EXPECT(gt_compare_samples(noisy, 10, shifted, 10, 1, &o, NULL, NULL, NULL, NULL, &p) ==
           GT_VERDICT_AMBIGUOUS);
    EXPECT(p >= o.alpha);
    /* significant but below the threshold (1% with no overlap) -> ambiguous */
    double tiny[10];
    for (int i = 0; i < 10; i++)
        tiny[i] = 100 + 0.01 * i, shifted[i] = 99 + 0.01 * i;
    EXPECT(gt_compare_samples(tiny, 10, shifted, 10, 1, &o, NULL, NULL, NULL, NULL, NULL) ==
           GT_VERDICT_AMBIGUOUS);

    /* few samples: ranges. 4 vs 4 disjoint (chance 2/70) and 30% -> slower */
    EXPECT(gt_compare_samples(base, 4, slow, 4, 1, &o, &m, NULL, NULL, NULL, &p) ==
           GT_VERDICT_SLOWER);
    EXPECT(m == GT_METHOD_RANGES);
    expect_near(p, 2.0 / 70.0, 1e-12, "ranges: chance of disjoint 4 vs 4");
    /* 3 vs 3 disjoint happens 1 time in 10 by chance: not enough */
    EXPECT(gt_compare_samples(base, 3, slow, 3, 1, &o, NULL, NULL, NULL, NULL, &p) ==
           GT_VERDICT_AMBIGUOUS);
    expect_near(p, 0.1, 1e-12, "ranges: 3 vs 3");
    /* overlapping and within threshold -> same */
    double near[3] = {100.5, 101.5, 102.5};
    EXPECT(gt_compare_samples(base, 3, near, 3, 1, &o, NULL, NULL, NULL, NULL, NULL) ==
           GT_VERDICT_SAME);

    /* one value each: same within threshold, else ambiguous, never slower */
    double one = 100, two = 102, half = 50;
    EXPECT(gt_compare_samples(&one, 1, &two, 1, 1, &o, &m, NULL, NULL, NULL, NULL) ==
           GT_VERDICT_SAME);
    EXPECT(m == GT_METHOD_SINGLE);
    EXPECT(gt_compare_samples(&one, 1, &half, 1, 1, &o, NULL, NULL, NULL, NULL, NULL) ==
           GT_VERDICT_AMBIGUOUS);
    /* a zero baseline: equal zeros are the same */
    double zeros[5] = {0, 0, 0, 0, 0};
    EXPECT(gt_compare_samples(zeros, 5, zeros, 5, 1, &o, NULL, NULL, NULL, &rel, NULL) ==
           GT_VERDICT_SAME);
    expect_near(rel, 0, 0, "0 vs 0");
    EXPECT(gt_compare_samples(zeros, 0, zeros, 5, 1, &o, &m, NULL, NULL, NULL, NULL) ==
           GT_VERDICT_AMBIGUOUS);
    EXPECT(m == GT_METHOD_NONE);
}

/* ---- hand-built reports ----------------------------------------------------------- */

typedef struct spec {
    int schema;
    double gflops_factor; /* scales the kernel's gflops samples */
    int check_passed;
    int with_collective;
    const char *detail; /* backend_detail: a measured param, must not break matching */
} spec;

static void samples(FILE *f, double first, double step, double factor, int n) {
    fputc('[', f);
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%.17g", i ? ", " : "", (first + step * i) * factor);
    fputc(']', f);
}

static void write_report(const char *path, spec s) {
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(1);
    }
    fprintf(f,
            "{\"schema_version\": %d,\n"
            " \"run\": {\"id\": \"test\", \"git_revision\": \"abc\"},\n"
            " \"env\": {\"cpu\": {\"model\": \"Test CPU\"}, \"gpus\": [],\n"
            "         \"software\": {\"cuda\": \"%s\", \"build_type\": \"Release\"},\n"
            "         \"topology_digest\": \"fnv1a64:1\"},\n"
            " \"results\": [\n",
            s.schema, s.detail);
    fprintf(f,
            "  {\"suite\": \"kernels\", \"case\": \"matmul\", \"topology\": \"1\", "
            "\"backend\": \"cpu\", \"status\": \"%s\",\n"
            "   \"params\": {\"m\": 64, \"backend_detail\": \"%s\"},\n"
            "   \"checks\": [{\"name\": \"conformance\", \"passed\": %s, \"value\": 0, "
            "\"limit\": 1e-5}],\n"
            "   \"metrics\": {\"gflops\": {\"value\": 1, \"unit\": \"GFLOP/s\", \"better\": "
            "\"higher\", \"samples\": ",
            s.check_passed ? "pass" : "fail", s.detail, s.check_passed ? "true" : "false");
    samples(f, 100, 1, s.gflops_factor, 10);
    fprintf(f, "},\n     \"ms\": {\"value\": 5, \"unit\": \"ms\", \"better\": \"lower\", "
               "\"samples\": ");
    samples(f, 5, 0.1, 1, 10);
    fprintf(f, "},\n     \"flops\": {\"value\": 1e9, \"unit\": \"FLOP\", \"better\": "
               "\"higher\", \"n\": 1}}}");
    if (s.with_collective) {
        /* a name that needs escaping in XML */
        fprintf(f, ",\n  {\"suite\": \"collectives\", \"case\": \"allreduce<fp32>&sum\", "
                   "\"topology\": \"2\", \"backend\": \"mpi\", \"status\": \"pass\",\n"
                   "   \"params\": {\"in_place\": 0}, \"checks\": [], \"metrics\": {\"busbw\": "
                   "{\"value\": 1, \"unit\": \"GB/s\", \"better\": \"higher\", \"samples\": ");
        samples(f, 10, 0.1, 1, 6);
        fprintf(f, "}}}");
    }
    fprintf(f, "\n ]}\n");
    fclose(f);
}

static char g_dir[256];

static char *path_of(const char *name) {
    static char buf[8][320];
    static int k = 0;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", g_dir, name);
    return buf[k];
}

static char *printed(const gt_compare *c) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    gt_compare_print(c, f, 0);
    fclose(f);
    return buf;
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    char *buf = calloc(1, 1 << 20);
    size_t n = fread(buf, 1, (1 << 20) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void test_gate(void) {
    spec good = {.schema = 1,
                 .gflops_factor = 1,
                 .check_passed = 1,
                 .with_collective = 1,
                 .detail = "cpu: 2 threads"};
    write_report(path_of("base.json"), good);
    gt_compare *c = NULL;
    gt_compare_counts k;

    /* the same report against itself: everything same, may ship */
    EXPECT(gt_compare_files(path_of("base.json"), path_of("base.json"), NULL, &c) == GT_OK);
    gt_compare_get_counts(c, &k);
    EXPECT(gt_compare_may_ship(c));
    EXPECT(k.same == 4 && k.slower == 0 && k.ambiguous == 0 && k.faster == 0);
    EXPECT(k.matched == 2 && k.missing == 0 && k.fingerprint_diffs == 0);
    char *out = printed(c);
    EXPECT(strstr(out, "NEW may ship") != NULL);
    free(out);
    gt_compare_free(c);

    /* a measured param (backend_detail) differs: still matched; a fingerprint
     * difference is listed but does not fail */
    spec other = good;
    other.detail = "cpu: 4 threads";
    write_report(path_of("detail.json"), other);
    EXPECT(gt_compare_files(path_of("base.json"), path_of("detail.json"), NULL, &c) == GT_OK);
    gt_compare_get_counts(c, &k);
    EXPECT(k.matched == 2 && k.only_new == 0 && k.fingerprint_diffs == 1);
    EXPECT(gt_compare_may_ship(c));
    out = printed(c);
    EXPECT(strstr(out, "env.software.cuda") != NULL);
    EXPECT(strstr(out, "backend_detail: cpu: 2 threads -> cpu: 4 threads") != NULL);
    free(out);
    gt_compare_free(c);

    /* gflops 30% lower in NEW: slower, named, must not ship */
    spec slow = good;
    slow.gflops_factor = 0.7;
    write_report(path_of("slow.json"), slow);
    EXPECT(gt_compare_files(path_of("base.json"), path_of("slow.json"), NULL, &c) == GT_OK);
    gt_compare_get_counts(c, &k);
    EXPECT(!gt_compare_may_ship(c));
    EXPECT(k.slower == 1 && k.same == 3);
    out = printed(c);
    EXPECT(strstr(out, "SLOWER   kernels/matmul [topology 1, backend cpu] gflops") != NULL);
    EXPECT(strstr(out, "NEW MUST NOT SHIP") != NULL);
    free(out);
    EXPECT(gt_compare_write_junit(c, path_of("junit.xml")) == GT_OK);
    char *x = slurp(path_of("junit.xml"));
    EXPECT(x && strstr(x, "<testsuite name=\"kernels\"") && strstr(x, "<failure type=\"slower\""));
    EXPECT(x && strstr(x, "allreduce&lt;fp32&gt;&amp;sum") && !strstr(x, "<fp32>"));
    EXPECT(x && strstr(x, "</testsuites>"));
    free(x);
    gt_compare_free(c);

    /* and the reverse is faster, which ships */
    EXPECT(gt_compare_files(path_of("slow.json"), path_of("base.json"), NULL, &c) == GT_OK);
    gt_compare_get_counts(c, &k);
    EXPECT(k.faster == 1 && gt_compare_may_ship(c));
    gt_compare_free(c);

    /* a failed check in NEW */
    spec failed = good;
    failed.check_passed = 0;
    write_report(path_of("failed.json"), failed);
    EXPECT(gt_compare_files(path_of("base.json"), path_of("failed.json"), NULL, &c) == GT_OK);
    gt_compare_get_counts(c, &k);
    EXPECT(!gt_compare_may_ship(c) && k.failed_checks == 1);
    out = printed(c);
    EXPECT(strstr(out, "check conformance FAILED in NEW") != NULL);
    free(out);
    gt_compare_free(c);

    /* a result that passed in BASE is missing from NEW */
    spec fewer = good;
    fewer.with_collective = 0;
    write_report(path_of("fewer.json"), fewer);
    EXPECT(gt_compare_files(path_of("base.json"), path_of("fewer.json"), NULL, &c) == GT_OK);
    gt_compare_get_counts(c, &k);
    EXPECT(!gt_compare_may_ship(c) && k.missing == 1);
    out = printed(c);
    EXPECT(strstr(out, "MISSING  collectives/allreduce<fp32>&sum") != NULL);
    free(out);
    gt_compare_free(c);
    /* ... while a result only in NEW is informational */
    EXPECT(gt_compare_files(path_of("fewer.json"), path_of("base.json"), NULL, &c) == GT_OK);
    gt_compare_get_counts(c, &k);
    EXPECT(gt_compare_may_ship(c) && k.only_new == 1);
    gt_compare_free(c);

    /* unusable input: a newer schema, not JSON, not a report, no file */
    spec newer = good;
    newer.schema = 99;
    write_report(path_of("newer.json"), newer);
    EXPECT(gt_compare_files(path_of("base.json"), path_of("newer.json"), NULL, &c) ==
           GT_ERR_INVALID);
    EXPECT(c == NULL);
    EXPECT(strstr(gt_last_error(), "schema_version 99, newer than this gauntlet") != NULL);
    FILE *f = fopen(path_of("bad.json"), "w");
    fputs("{\"schema_version\": 1, \"results\": [", f);
    fclose(f);
    EXPECT(gt_compare_files(path_of("bad.json"), path_of("base.json"), NULL, &c) == GT_ERR_INVALID);
    EXPECT(strstr(gt_last_error(), "BASE report") && strstr(gt_last_error(), "is not JSON"));
    f = fopen(path_of("other.json"), "w");
    fputs("{\"hello\": 1}", f);
    fclose(f);
    EXPECT(gt_compare_files(path_of("base.json"), path_of("other.json"), NULL, &c) ==
           GT_ERR_INVALID);
    EXPECT(strstr(gt_last_error(), "not a gauntlet report") != NULL);
    EXPECT(gt_compare_files(path_of("nope.json"), path_of("base.json"), NULL, &c) == GT_ERR_IO);
    EXPECT(gt_compare_write_junit != NULL);
}

int main(void) {
    snprintf(g_dir, sizeof g_dir, "/tmp/gt_compare_test.XXXXXX");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_mann_whitney();
    test_verdicts();
    test_gate();
    if (g_fails == 0) {
        const char *names[] = {"base.json",  "detail.json", "slow.json", "junit.xml", "failed.json",
                               "fewer.json", "newer.json",  "bad.json",  "other.json"};
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            unlink(path_of(names[i]));
        rmdir(g_dir);
        printf("compare: all tests passed\n");
    } else {
        printf("compare: %d failures (files kept in %s)\n", g_fails, g_dir);
    }
    return g_fails ? 1 : 0;
}
