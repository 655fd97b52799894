/* gate_stats: every function against values computed apart from it
 * (reports/gate_stats.h). Sources of the reference values:
 *   [table]  published Student t and normal tables (e.g. NIST/SEMATECH
 *            e-Handbook 1.3.6.7.1-2), as printed, 4-6 decimals;
 *   [exact]  closed forms, written out at each check;
 *   [mpmath] mpmath 1.3.0 at 40 digits: betainc(df/2, 1/2, 0,
 *            df/(df+t^2), regularized=True) for the t tail, findroot on it
 *            for quantiles, ncdf and findroot on it for the normal;
 *   [hand]   worked on paper from table values, steps in the comment. */
#include "reports/gate_stats.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>

static int g_fails = 0;

#define EXPECT(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);                        \
            g_fails++;                                                                             \
        }                                                                                          \
    } while (0)

/* |got - want| <= tol; a NAN got fails (the negated comparison) */
static void near(double got, double want, double tol, const char *what) {
    if (!(fabs(got - want) <= tol)) {
        fprintf(stderr, "FAIL %s: got %.17g, want %.17g (tol %g)\n", what, got, want, tol);
        g_fails++;
    }
}

/* relative: |got - want| <= rtol |want| */
static void near_rel(double got, double want, double rtol, const char *what) {
    if (!(fabs(got - want) <= rtol * fabs(want))) {
        fprintf(stderr, "FAIL %s: got %.17g, want %.17g (rel tol %g)\n", what, got, want, rtol);
        g_fails++;
    }
}

static void is_nan(double got, const char *what) {
    if (!isnan(got)) {
        fprintf(stderr, "FAIL %s: got %.17g, want NAN\n", what, got);
        g_fails++;
    }
}

static const double pi = 3.14159265358979323846;

static void test_incbeta(void) {
    /* [exact] I_x(2,3) = sum_{j=2..4} C(4,j) x^j (1-x)^(4-j); at 1/2: (6 + 4 + 1) / 16 */
    near(gt_gs_incbeta(0.5, 2, 3), 11.0 / 16, 1e-14, "I_0.5(2,3) = 11/16");
    /* [exact] I_x(1,1) = x, I_x(a,1) = x^a, I_x(1,b) = 1 - (1-x)^b */
    for (double x = 0.05; x < 1; x += 0.15) {
        near(gt_gs_incbeta(x, 1, 1), x, 1e-14, "I_x(1,1) = x");
        near_rel(gt_gs_incbeta(x, 2.5, 1), pow(x, 2.5), 1e-13, "I_x(2.5,1) = x^2.5");
        near_rel(gt_gs_incbeta(x, 7, 1), pow(x, 7), 1e-13, "I_x(7,1) = x^7");
        near(gt_gs_incbeta(x, 1, 3.5), 1 - pow(1 - x, 3.5), 1e-14, "I_x(1,3.5)");
        /* [exact] the reflection I_x(a,b) = 1 - I_{1-x}(b,a) */
        near(gt_gs_incbeta(x, 2.5, 4.5) + gt_gs_incbeta(1 - x, 4.5, 2.5), 1, 1e-14, "reflection");
    }
    /* [mpmath] betainc(2.5, 4.5, 0, 0.3, regularized=True) */
    near_rel(gt_gs_incbeta(0.3, 2.5, 4.5), 0.40653901668245927, 1e-13, "I_0.3(2.5,4.5)");
    EXPECT(gt_gs_incbeta(0, 2, 3) == 0);
    EXPECT(gt_gs_incbeta(1, 2, 3) == 1);
    is_nan(gt_gs_incbeta(NAN, 2, 3), "incbeta x NAN");
    is_nan(gt_gs_incbeta(-0.1, 2, 3), "incbeta x < 0");
    is_nan(gt_gs_incbeta(1.1, 2, 3), "incbeta x > 1");
    is_nan(gt_gs_incbeta(0.5, 0, 3), "incbeta a = 0");
    is_nan(gt_gs_incbeta(0.5, 2, -1), "incbeta b < 0");
    is_nan(gt_gs_incbeta(0.5, NAN, 3), "incbeta a NAN");
    is_nan(gt_gs_incbeta(0.5, 2, INFINITY), "incbeta b INF");
}

static void test_t_tail(void) {
    /* [table] two-sided p of t = 2.0 at df 10: 0.07339; [mpmath] 0.073388034770740366 */
    near(gt_gs_t_tail2(2.0, 10), 0.07339, 5e-6, "P(|T_10| >= 2), table");
    near_rel(gt_gs_t_tail2(2.0, 10), 0.073388034770740366, 1e-12, "P(|T_10| >= 2), mpmath");
    near_rel(gt_gs_t_tail2(-2.0, 10), 0.073388034770740366, 1e-12, "the tail is two-sided");
    /* [mpmath] t = 3 at df 200; t = 50 at df 3 (far tail, relative accuracy) */
    near_rel(gt_gs_t_tail2(3, 200), 0.0030430471139059028, 1e-11, "P(|T_200| >= 3)");
    near_rel(gt_gs_t_tail2(50, 3), 1.7617152041271974e-5, 1e-11, "P(|T_3| >= 50)");
    for (double t = 0.25; t < 2000; t *= 3) {
        /* [exact] df 1 (Cauchy): P(|T| >= t) = (2/pi) atan(1/t) */
        near_rel(gt_gs_t_tail2(t, 1), 2 / pi * atan(1 / t), 1e-12, "df 1: (2/pi) atan(1/t)");
        /* [exact] df 2: 1 - t / sqrt(2 + t^2), written without cancellation */
        double r = sqrt(2 + t * t);
        near_rel(gt_gs_t_tail2(t, 2), 2 / (r * (r + t)), 1e-12, "df 2: 1 - t/sqrt(2+t^2)");
    }
    /* [table] the normal: P(|Z| >= 1.959964) = 0.05, P(|Z| >= 2.575829) = 0.01 */
    near(gt_gs_t_tail2(1.959964, 0), 0.05, 1e-7, "normal tail at 1.959964");
    near(gt_gs_t_tail2(2.575829, -3), 0.01, 1e-7, "normal tail at 2.575829 (df < 0)");
    /* [mpmath] a large df is near the normal, and still right */
    near_rel(gt_gs_t_tail2(1.959963984540054, 1000000), 0.050000277295221666, 1e-8,
             "P(|T_1e6| >= 1.959964)");
    EXPECT(gt_gs_t_tail2(0, 5) == 1);
    EXPECT(gt_gs_t_tail2(0, 0) == 1);
    EXPECT(gt_gs_t_tail2(INFINITY, 5) == 0);
    EXPECT(gt_gs_t_tail2(-INFINITY, 0) == 0);
    is_nan(gt_gs_t_tail2(NAN, 5), "t tail of NAN");
    is_nan(gt_gs_t_tail2(NAN, 0), "normal tail of NAN");
}

static void test_t_quantile(void) {
    /* [table] t_{1-p/2, df}, 4 decimals as printed */
    static const struct {
        double p;
        int df;
        double t, t_mpmath;
    } tab[] = {
        {0.05, 1, 12.7062, 12.706204736174704}, {0.05, 4, 2.7764, 2.7764451051977943},
        {0.01, 4, 4.6041, 4.6040948713499932},  {0.001, 4, 8.6103, 8.610301581379275},
        {0.05, 30, 2.0423, 2.0422724563012383}, {0.05, 10, 2.2281, 2.2281388519862747},
    };
    char what[96];
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        double got = gt_gs_t_quantile2(tab[i].p, tab[i].df);
        snprintf(what, sizeof what, "t quantile p %g df %d, table", tab[i].p, tab[i].df);
        near(got, tab[i].t, 5e-5, what);
        snprintf(what, sizeof what, "t quantile p %g df %d, mpmath", tab[i].p, tab[i].df);
        near_rel(got, tab[i].t_mpmath, 1e-11, what);
        snprintf(what, sizeof what, "tail of the quantile p %g df %d", tab[i].p, tab[i].df);
        near_rel(gt_gs_t_tail2(got, tab[i].df), tab[i].p, 1e-10, what);
    }
    /* [exact] df 1: the t with (2/pi) atan(1/t) = p is 1 / tan(pi p / 2); far in the tail */
    near_rel(gt_gs_t_quantile2(1e-15, 1), 1 / tan(pi * 1e-15 / 2), 1e-9, "t quantile p 1e-15 df 1");
    /* [table] df <= 0: the normal's 1.959964 and 3.290527 */
    near(gt_gs_t_quantile2(0.05, 0), 1.959964, 1e-6, "normal critical value at 0.05");
    near(gt_gs_t_quantile2(0.001, -1), 3.290527, 1e-6, "normal critical value at 0.001");
    EXPECT(gt_gs_t_quantile2(1, 5) == 0);
    EXPECT(gt_gs_t_quantile2(1, 0) == 0);
    is_nan(gt_gs_t_quantile2(0, 5), "t quantile p = 0");
    is_nan(gt_gs_t_quantile2(-0.1, 5), "t quantile p < 0");
    is_nan(gt_gs_t_quantile2(1.5, 5), "t quantile p > 1");
    is_nan(gt_gs_t_quantile2(NAN, 5), "t quantile p NAN");
    is_nan(gt_gs_t_quantile2(0, 0), "normal quantile p = 0");
}

static void test_normal(void) {
    /* [table] 1.959964, 2.575829, 3.290527, -1.644854, to 1e-6; [mpmath] to 1e-9 and better */
    static const struct {
        double p, z_table, z_mpmath;
    } tab[] = {
        {0.975, 1.959964, 1.9599639845400542},
        {0.995, 2.575829, 2.5758293035489008},
        {0.9995, 3.290527, 3.2905267314918948},
        {0.05, -1.644854, -1.6448536269514727},
    };
    char what[96];
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        double z = gt_gs_norm_quantile(tab[i].p);
        snprintf(what, sizeof what, "normal quantile of %g, table", tab[i].p);
        near(z, tab[i].z_table, 1e-6, what);
        snprintf(what, sizeof what, "normal quantile of %g, mpmath", tab[i].p);
        near(z, tab[i].z_mpmath, 1e-9, what);
        near_rel(z, tab[i].z_mpmath, 1e-14, what);
    }
    /* [mpmath] deep in the tail, where Acklam's tail branch and the erfc-based step matter */
    near_rel(gt_gs_norm_quantile(1e-300), -37.047096299361199, 1e-13, "normal quantile of 1e-300");
    /* round trips over every branch of the approximation (tails, centre, both sides) */
    const double ps[] = {1e-200, 1e-20, 1e-5, 0.01, 0.02425, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99, 0.999999};
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
        snprintf(what, sizeof what, "Phi(Phi^-1(%g))", ps[i]);
        near_rel(gt_gs_norm_cdf(gt_gs_norm_quantile(ps[i])), ps[i], 1e-13, what);
        /* Phi^-1(1 - p) = -Phi^-1(p), with a pair both sides represent exactly */
        double up = 1 - ps[i];
        if (up < 1) {
            snprintf(what, sizeof what, "symmetry at %g", ps[i]);
            near_rel(gt_gs_norm_quantile(up), -gt_gs_norm_quantile(1 - up), 1e-15, what);
        }
    }
    /* [table] Phi(1) = 0.841345, Phi(-3) = 0.001350 */
    near(gt_gs_norm_cdf(1), 0.841345, 1e-6, "Phi(1)");
    near(gt_gs_norm_cdf(-3), 0.001350, 1e-6, "Phi(-3)");
    EXPECT(gt_gs_norm_cdf(0) == 0.5);
    EXPECT(gt_gs_norm_quantile(0.5) == 0);
    EXPECT(gt_gs_norm_cdf(-INFINITY) == 0);
    EXPECT(gt_gs_norm_cdf(INFINITY) == 1);
    is_nan(gt_gs_norm_cdf(NAN), "Phi(NAN)");
    is_nan(gt_gs_norm_quantile(0), "normal quantile of 0");
    is_nan(gt_gs_norm_quantile(1), "normal quantile of 1");
    is_nan(gt_gs_norm_quantile(-0.5), "normal quantile of -0.5");
    is_nan(gt_gs_norm_quantile(NAN), "normal quantile of NAN");
}

static void test_summaries(void) {
    gt_gs_summary s;
    /* [exact] 1..5: mean 3, squared deviations 4+1+0+1+4 = 10, sd^2 = 10/4 = 2.5,
     * se = sqrt(2.5 / 5); with the floor 1: sqrt(3.5 / 5) */
    const double x[5] = {1, 2, 3, 4, 5};
    EXPECT(gt_gs_summarize(x, 5, 0, &s) == 5);
    EXPECT(s.n == 5 && s.df == 4);
    near(s.mean, 3, 1e-15, "mean of 1..5");
    near(s.sd, sqrt(2.5), 1e-15, "sd of 1..5");
    near(s.se, sqrt(0.5), 1e-15, "se of 1..5");
    /* [mpmath] P(|T_4| >= 3 / sqrt 0.5) */
    near_rel(gt_gs_p(&s), 0.01323559956368269, 1e-12, "p of 1..5");
    double lo, hi;
    /* [table] mean -+ t_{0.975,4} se = 3 -+ 2.7764 sqrt 0.5 */
    gt_gs_interval(&s, 0.05, &lo, &hi);
    near(lo, 3 - 2.7764 * sqrt(0.5), 1e-4, "interval lo of 1..5");
    near(hi, 3 + 2.7764 * sqrt(0.5), 1e-4, "interval hi of 1..5");
    gt_gs_interval(&s, 0.05, NULL, &hi); /* either end may be left out */
    near(hi, 3 + 2.7764 * sqrt(0.5), 1e-4, "interval hi alone");
    EXPECT(gt_gs_summarize(x, 5, 1, &s) == 5);
    near(s.sd, sqrt(2.5), 1e-15, "the floor leaves sd");
    near(s.se, sqrt(3.5 / 5), 1e-15, "the floor joins se in quadrature");
    /* the spread survives a large offset (times in ns): two passes */
    const double big[5] = {1e9 + 1, 1e9 + 2, 1e9 + 3, 1e9 + 4, 1e9 + 5};
    gt_gs_summarize(big, 5, 0, &s);
    near(s.sd, sqrt(2.5), 1e-6, "sd of 1e9 + 1..5");

    /* n = 1: a mean and no noise */
    EXPECT(gt_gs_summarize(x + 2, 1, 0.5, &s) == 1);
    EXPECT(s.n == 1 && s.df == 0 && s.mean == 3);
    is_nan(s.sd, "sd of one replicate");
    is_nan(s.se, "se of one replicate");
    is_nan(gt_gs_p(&s), "p of one replicate");
    gt_gs_interval(&s, 0.05, &lo, &hi);
    is_nan(lo, "interval lo of one replicate");
    is_nan(hi, "interval hi of one replicate");
    /* n <= 0 and NAN */
    EXPECT(gt_gs_summarize(NULL, 0, 0, &s) == 0 && s.n == 0 && s.df == 0);
    is_nan(s.mean, "mean of nothing");
    EXPECT(gt_gs_summarize(NULL, -3, 0, &s) == 0 && s.n == 0);
    const double with_nan[3] = {1, NAN, 3};
    gt_gs_summarize(with_nan, 3, 0, &s);
    is_nan(s.mean, "mean with a NAN");
    is_nan(s.se, "se with a NAN");
    is_nan(gt_gs_p(&s), "p with a NAN");

    /* [exact] two samples {1,2,3} and {4,5,6,7}: means 2 and 5.5, squared
     * deviations 2 and 5, s^2 = 7/5, se = sqrt(1.4 (1/3 + 1/4)), df 5 */
    const double a[3] = {1, 2, 3}, b[4] = {4, 5, 6, 7};
    EXPECT(gt_gs_summarize2(a, 3, b, 4, 0, &s) == 7);
    EXPECT(s.n == 7 && s.df == 5);
    near(s.mean, 3.5, 1e-15, "b - a");
    near(s.sd, sqrt(1.4), 1e-15, "pooled sd");
    near(s.se, sqrt(1.4 * (1.0 / 3 + 1.0 / 4)), 1e-15, "two-sample se");
    /* [mpmath] P(|T_5| >= 3.5 / se) */
    near_rel(gt_gs_p(&s), 0.011724811003954638, 1e-12, "two-sample p");
    gt_gs_summarize2(a, 3, b, 4, 2, &s);
    near(s.se, sqrt((1.4 + 4) * (1.0 / 3 + 1.0 / 4)), 1e-15, "two-sample se with the floor");
    /* one replicate a side: a difference, no noise */
    EXPECT(gt_gs_summarize2(a, 1, b, 1, 0, &s) == 2 && s.df == 0);
    near(s.mean, 3, 0, "b[0] - a[0]");
    is_nan(s.se, "se of 1 + 1 replicates");
    is_nan(gt_gs_p(&s), "p of 1 + 1 replicates");
    /* an empty side: no difference */
    EXPECT(gt_gs_summarize2(a, 0, b, 4, 0, &s) == 4 && s.df == 0);
    is_nan(s.mean, "difference with an empty side");
    is_nan(s.se, "se with an empty side");

    /* p and the interval on summaries filled by hand */
    gt_gs_summary h = {.n = 11, .df = 10, .mean = 2, .sd = 1, .se = 1};
    near(gt_gs_p(&h), 0.07339, 5e-6, "p of mean 2, se 1, df 10 (table)");
    h.mean = -2;
    near(gt_gs_p(&h), 0.07339, 5e-6, "p is two-sided");
    h = (gt_gs_summary){.n = 0, .df = 0, .mean = 1.959964, .sd = NAN, .se = 1};
    near(gt_gs_p(&h), 0.05, 1e-7, "df 0: the normal test");
    gt_gs_interval(&h, 0.05, &lo, &hi);
    near(hi - lo, 2 * 1.959964, 2e-6, "df 0: the normal interval");
    h = (gt_gs_summary){.n = 5, .df = 4, .mean = 0, .sd = 0, .se = 0};
    EXPECT(gt_gs_p(&h) == 1); /* no difference, no evidence */
    h.mean = 0.1;
    EXPECT(gt_gs_p(&h) == 0); /* a difference without noise */
    gt_gs_interval(&h, 0.05, &lo, &hi);
    EXPECT(lo == 0.1 && hi == 0.1);
    h.se = 1;
    h.mean = 0;
    EXPECT(gt_gs_p(&h) == 1);
    h.se = -1;
    is_nan(gt_gs_p(&h), "p with se < 0");
    is_nan(gt_gs_p(NULL), "p of NULL");
    h.se = 1;
    for (int i = 0; i < 4; i++) {
        const double bad[4] = {0, 1, -0.5, NAN};
        gt_gs_interval(&h, bad[i], &lo, &hi);
        is_nan(lo, "interval lo at a bad alpha");
        is_nan(hi, "interval hi at a bad alpha");
    }
}

static void test_holm(void) {
    /* [exact] Wikipedia, "Holm-Bonferroni method", example: p = 0.01 0.04
     * 0.03 0.005, m = 4; sorted 0.005 0.01 0.03 0.04 times 4 3 2 1 = 0.02
     * 0.03 0.06 0.04, running max 0.02 0.03 0.06 0.06; R's
     * p.adjust(c(.01,.04,.03,.005), "holm") gives 0.03 0.06 0.06 0.02 */
    const double p[4] = {0.01, 0.04, 0.03, 0.005}, want[4] = {0.03, 0.06, 0.06, 0.02};
    double adj[6];
    EXPECT(gt_gs_holm(p, 4, adj) == 4);
    for (int i = 0; i < 4; i++) near(adj[i], want[i], 1e-15, "Holm, textbook example");
    /* in place */
    double q[4] = {0.01, 0.04, 0.03, 0.005};
    EXPECT(gt_gs_holm(q, 4, q) == 4);
    for (int i = 0; i < 4; i++) near(q[i], want[i], 1e-15, "Holm in place");
    /* NAN and out-of-range p are no tests: m stays 4, the rest as above */
    double r[6] = {0.01, NAN, 0.04, 0.03, 0.005, 2.0};
    EXPECT(gt_gs_holm(r, 6, r) == 4);
    near(r[0], 0.03, 1e-15, "Holm around NAN [0]");
    is_nan(r[1], "Holm keeps NAN");
    near(r[2], 0.06, 1e-15, "Holm around NAN [2]");
    near(r[3], 0.06, 1e-15, "Holm around NAN [3]");
    near(r[4], 0.02, 1e-15, "Holm around NAN [4]");
    is_nan(r[5], "Holm: p > 1 is no test");
    /* [exact] capped at 1: 2 x 0.5 = 1, then max(1, 0.6) */
    const double c[2] = {0.6, 0.5};
    EXPECT(gt_gs_holm(c, 2, adj) == 2);
    EXPECT(adj[0] == 1 && adj[1] == 1);
    /* [exact] ties share a value: 3 x 0.02, max(0.06, 2 x 0.02), max(0.06, 0.9) */
    const double t[3] = {0.02, 0.9, 0.02};
    gt_gs_holm(t, 3, adj);
    near(adj[0], 0.06, 1e-15, "Holm tie [0]");
    near(adj[2], 0.06, 1e-15, "Holm tie [2]");
    near(adj[1], 0.9, 1e-15, "Holm largest");
    EXPECT(gt_gs_holm(NULL, 0, NULL) == 0);
    const double all_nan[2] = {NAN, NAN};
    EXPECT(gt_gs_holm(all_nan, 2, adj) == 0);
    is_nan(adj[0], "Holm, all NAN");
}

static void test_spending(void) {
    /* [mpmath] OBF(0.5) = 2 - 2 Phi(1.959964 / sqrt 0.5) = 0.005574596680784411 (brief: 0.005574) */
    double obf = gt_gs_spend(GT_GS_SPEND_OBRIEN_FLEMING, 0.05, 0.5);
    near(obf, 0.005574, 1e-6, "OBF(0.5), 4 figures");
    near_rel(obf, 0.005574596680784411, 1e-11, "OBF(0.5), mpmath");
    /* [exact] Pocock(0.5) = 0.05 ln(1 + (e - 1) / 2) = 0.05 ln 1.8591409 = 0.031005725 */
    double poc = gt_gs_spend(GT_GS_SPEND_POCOCK, 0.05, 0.5);
    near(poc, 0.03100, 1e-5, "Pocock(0.5), 4 figures");
    near_rel(poc, 0.031005725347913876, 1e-13, "Pocock(0.5), mpmath");
    for (int k = 0; k < GT_GS_SPEND_COUNT; k++) {
        EXPECT(gt_gs_spend(k, 0.05, 1) == 0.05);
        EXPECT(gt_gs_spend(k, 0.05, 3) == 0.05);
        EXPECT(gt_gs_spend(k, 0.05, 0) == 0);
        EXPECT(gt_gs_spend(k, 0.05, -1) == 0);
        double prev = 0;
        for (int i = 1; i <= 100; i++) {
            double s = gt_gs_spend(k, 0.05, i / 100.0);
            if (!(s >= prev && s <= 0.05)) {
                fprintf(stderr, "FAIL spend kind %d not increasing in [0, alpha] at t %g: %g\n", k,
                        i / 100.0, s);
                g_fails++;
            }
            prev = s;
        }
        is_nan(gt_gs_spend(k, 0.05, NAN), "spend at t NAN");
        is_nan(gt_gs_spend(k, 0, 0.5), "spend at alpha 0");
        is_nan(gt_gs_spend(k, 1, 0.5), "spend at alpha 1");
        /* the looks' levels: each >= 0, together alpha */
        double sum = 0;
        for (int n = 3; n <= 10; n++) {
            double a = gt_gs_look_alpha(k, 0.05, n, 3, 10);
            EXPECT(a >= 0);
            sum += a;
        }
        near(sum, 0.05, 1e-15, "the looks' levels sum to alpha");
        EXPECT(gt_gs_look_alpha(k, 0.05, 2, 3, 10) == 0);
        EXPECT(gt_gs_look_alpha(k, 0.05, 11, 3, 10) == 0);
        EXPECT(gt_gs_look_alpha(k, 0.05, 4, 4, 4) == 0.05); /* one look: all of alpha */
        is_nan(gt_gs_look_alpha(k, 0.05, 3, 0, 10), "look alpha, n_first 0");
        is_nan(gt_gs_look_alpha(k, 0.05, 3, 5, 4), "look alpha, n_max < n_first");
        is_nan(gt_gs_look_alpha(k, NAN, 3, 3, 10), "look alpha, alpha NAN");
    }
    /* the first look at n_first 5 of 10 spends spend(0.5); the second spend(0.6) - spend(0.5) */
    near(gt_gs_look_alpha(GT_GS_SPEND_POCOCK, 0.05, 5, 5, 10), poc, 1e-15, "first look, Pocock");
    near(gt_gs_look_alpha(GT_GS_SPEND_OBRIEN_FLEMING, 0.05, 6, 5, 10),
         gt_gs_spend(GT_GS_SPEND_OBRIEN_FLEMING, 0.05, 0.6) - obf, 1e-15, "second look, OBF");
    is_nan(gt_gs_spend(GT_GS_SPEND_COUNT, 0.05, 0.5), "spend, kind COUNT");
    is_nan(gt_gs_spend((gt_gs_spending)-1, 0.05, 0.5), "spend, kind -1");
    is_nan(gt_gs_look_alpha(GT_GS_SPEND_COUNT, 0.05, 3, 3, 10), "look alpha, kind COUNT");
}

/* the definition of gt_gs_n_needed by a linear scan */
static int n_needed_scan(double sd, double fl, double target, double alpha, int n_min, int n_cap) {
    for (int n = n_min < 2 ? 2 : n_min; n <= n_cap; n++)
        if (gt_gs_t_quantile2(alpha, n - 1) * sqrt((sd * sd + fl * fl) / n) < target) return n;
    return n_cap + 1;
}

static void test_planning(void) {
    /* [hand] sd 1, alpha 0.05, target 1: half-widths t_{0.975,n-1} / sqrt n
     * from the table: n 5: 2.7764 / 2.2361 = 1.2417; n 6: 2.5706 / 2.4495 =
     * 1.0494; n 7: 2.4469 / 2.6458 = 0.9248 < 1, so n = 7 */
    EXPECT(gt_gs_n_needed(1, 0, 1, 0.05, 2, 100) == 7);
    EXPECT(gt_gs_n_needed(0.6, 0.8, 1, 0.05, 2, 100) == 7); /* 0.36 + 0.64 = 1 */
    EXPECT(gt_gs_n_needed(1, 0, 1, 0.05, -5, 100) == 7);    /* n_min raised to 2 */
    EXPECT(gt_gs_n_needed(1, 0, 1, 0.05, 2, 6) == 7);       /* none: n_cap + 1 */
    EXPECT(gt_gs_n_needed(1, 0, 1, 0.05, 8, 100) == 8);     /* n_min already enough */
    EXPECT(gt_gs_n_needed(1, 0, 1, 0.05, 9, 8) == 9);       /* empty range */
    EXPECT(gt_gs_n_needed(0, 0, 1e-9, 0.05, 1, 100) == 2);  /* no noise at all */
    /* the bisection agrees with the definition scanned */
    const double targets[] = {2, 0.5, 0.1, 0.05};
    for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
        int got = gt_gs_n_needed(1, 0.1, targets[i], 0.01, 3, 200000);
        int want = n_needed_scan(1, 0.1, targets[i], 0.01, 3, 200000);
        if (got != want) {
            fprintf(stderr, "FAIL n_needed target %g: got %d, want %d\n", targets[i], got, want);
            g_fails++;
        }
    }
    EXPECT(gt_gs_n_needed(1, 0, 0, 0.05, 2, 100) == 0);
    EXPECT(gt_gs_n_needed(1, 0, -1, 0.05, 2, 100) == 0);
    EXPECT(gt_gs_n_needed(NAN, 0, 1, 0.05, 2, 100) == 0);
    EXPECT(gt_gs_n_needed(1, INFINITY, 1, 0.05, 2, 100) == 0);
    EXPECT(gt_gs_n_needed(1, 0, NAN, 0.05, 2, 100) == 0);
    EXPECT(gt_gs_n_needed(1, 0, 1, 1, 2, 100) == 0);
    EXPECT(gt_gs_n_needed(1, 0, 1, 0.05, 2, INT_MAX) == 0);

    /* [hand] sd 1, n 10, effect 1, alpha 0.05: se = 1/sqrt 10, d = 3.16228,
     * c = t_{0.975,9} = 2.2622 (table), d - c = 0.90008; Phi(0.90) = 0.81594
     * (table) + 0.00008 phi(0.90) (0.26609) = 0.81596; Phi(-d - c) =
     * Phi(-5.42) ~ 3e-8. [mpmath] 0.8159719645566249 */
    double pw = gt_gs_power(1, 0, 1, 0.05, 10);
    near(pw, 0.81596, 5e-5, "power, by hand");
    near_rel(pw, 0.8159719645566249, 1e-10, "power, mpmath");
    near(gt_gs_power(1, 0, -1, 0.05, 10), pw, 0, "power is two-sided");
    near(gt_gs_power(0.6, 0.8, 1, 0.05, 10), pw, 1e-15, "power with the floor");
    EXPECT(gt_gs_power(1, 0, 1, 0.05, 20) > pw); /* more replicates, more power */
    EXPECT(gt_gs_power(1, 0, 1, 0.01, 10) < pw); /* a stricter level, less */
    EXPECT(gt_gs_power(0, 0, 1, 0.05, 3) == 1);
    EXPECT(gt_gs_power(0, 0, 0, 0.05, 3) == 0);
    is_nan(gt_gs_power(1, 0, 1, 0.05, 1), "power of one replicate");
    is_nan(gt_gs_power(1, 0, 1, 0, 10), "power at alpha 0");
    is_nan(gt_gs_power(NAN, 0, 1, 0.05, 10), "power, sd NAN");
    is_nan(gt_gs_power(1, 0, NAN, 0.05, 10), "power, effect NAN");
}

/* F's distribution and the nested summary of blocks within pairs */
static void test_nested(void) {
    /* [mpmath] betainc(d1/2, d2/2, 0, d1 f / (d1 f + d2), regularized=True) */
    near_rel(gt_gs_f_cdf(1.0, 4, 20), 0.56931844562707808, 1e-10, "F cdf 1 on (4, 20)");
    near_rel(gt_gs_f_cdf(2.0, 11, 48), 0.95066163296671243, 1e-10, "F cdf 2 on (11, 48)");
    near_rel(gt_gs_f_cdf(1.5, 1, 4), 0.71213586527330934, 1e-10, "F cdf 1.5 on (1, 4)");
    EXPECT(gt_gs_f_cdf(0, 3, 3) == 0);
    is_nan(gt_gs_f_cdf(1, 0, 3), "F cdf on 0 df");

    gt_gs_summary s;
    int pooled = -1;
    /* [exact] groups {1,2,3} and {2,3,4}: means 2 and 3, grand 2.5; SSB = 3 (0.25 + 0.25)
     * = 1.5 on 1 df, SSW = 2 + 2 = 4 on 4 df: F = 1.5, below its 75% quantile
     * (P(F <= 1.5) = 0.712 above): pooled, s^2 = 5.5 / 5 = 1.1 on 5 df, se^2 = 1.1 / 6 */
    const double a[6] = {1, 2, 3, 2, 3, 4};
    EXPECT(gt_gs_summarize_nested(a, 2, 3, 0, &s, &pooled) == 2);
    EXPECT(pooled == 1 && s.n == 2 && s.df == 5);
    near(s.mean, 2.5, 1e-15, "nested mean");
    near(s.se, sqrt(1.1 / 6), 1e-15, "nested pooled se");
    near(s.sd, sqrt(1.1 / 6 * 2), 1e-15, "nested pooled sd of a group mean");
    /* [mpmath] P(|T_5| >= 2.5 / sqrt(1.1 / 6)) */
    near_rel(gt_gs_p(&s), 0.0020847929454857408, 1e-9, "nested pooled p");
    /* with a floor of 1 on a group: se^2 + 1 / 2 */
    gt_gs_summarize_nested(a, 2, 3, 1, &s, NULL);
    near(s.se, sqrt(1.1 / 6 + 0.5), 1e-15, "nested floor");
    /* [exact] groups {1, 1.1, 0.9} and {5, 5.1, 4.9}: MSB = 24, MSW = 0.01: the groups
     * differ, not pooled: se^2 = MSB / 6 = 4 on 1 df, the groups' own t test */
    const double b[6] = {1, 1.1, 0.9, 5, 5.1, 4.9};
    gt_gs_summarize_nested(b, 2, 3, 0, &s, &pooled);
    EXPECT(pooled == 0 && s.df == 1);
    near(s.se, 2, 1e-12, "nested unpooled se");
    near(s.sd, sqrt(8), 1e-12, "nested unpooled sd = the group means' sd");
    /* one block a group, or a NAN: the group means alone */
    gt_gs_summarize_nested(b, 6, 1, 0, &s, &pooled);
    EXPECT(pooled == 0 && s.n == 6 && s.df == 5);
    const double c[6] = {1, NAN, 3, 2, 3, 4};
    gt_gs_summarize_nested(c, 2, 3, 0, &s, &pooled);
    EXPECT(pooled == 0 && s.n == 0);
}

int main(void) {
    test_nested();
    test_incbeta();
    test_t_tail();
    test_t_quantile();
    test_normal();
    test_summaries();
    test_holm();
    test_spending();
    test_planning();
    if (g_fails) {
        fprintf(stderr, "%d check(s) failed\n", g_fails);
        return 1;
    }
    printf("gate_stats: all checks passed\n");
    return 0;
}
