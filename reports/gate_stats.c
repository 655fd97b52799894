/* gate_stats: the gate's statistics (gate_stats.h). */
#include "reports/gate_stats.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* The continued fraction needs O(sqrt(max(a, b))) terms near its switch
 * point: 300 was enough for the df of a few runs, not for df in the
 * millions (a = df / 2). Convergence ends the loop long before this. */
#define GS_CF_MAX_TERMS 100000

/* strict C11 (no M_PI): sqrt(2 pi) */
static const double gs_sqrt_2pi = 2.5066282746310002;

static int prob_open(double p) { return p > 0 && p < 1; } /* false for NAN */

/* I_x(a, b) by its continued fraction (modified Lentz), evaluated on the
 * side where it converges fast: x < (a + 1) / (a + b + 2), else through
 * I_x(a, b) = 1 - I_{1-x}(b, a). */
static double incbeta_cf(double x, double a, double b) {
    if (x <= 0) return 0;
    if (x >= 1) return 1;
    if (x > (a + 1) / (a + b + 2)) return 1 - incbeta_cf(1 - x, b, a);
    double ln_front = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x);
    const double tiny = 1e-300; /* keeps Lentz's ratios off zero */
    double c = 1, d = 1 - (a + b) * x / (a + 1);
    if (fabs(d) < tiny) d = tiny;
    d = 1 / d;
    double f = d;
    for (int m = 1; m <= GS_CF_MAX_TERMS; m++) {
        for (int odd = 0; odd < 2; odd++) {
            double num = odd ? -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
                             : m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m));
            d = 1 + num * d;
            if (fabs(d) < tiny) d = tiny;
            c = 1 + num / c;
            if (fabs(c) < tiny) c = tiny;
            d = 1 / d;
            double step = c * d;
            f *= step;
            if (odd && fabs(step - 1) < 1e-15) return exp(ln_front) * f / a;
        }
    }
    return exp(ln_front) * f / a;
}

double gt_gs_incbeta(double x, double a, double b) {
    /* the negated forms are true for NAN as well */
    if (!(x >= 0 && x <= 1) || !(a > 0) || !(b > 0) || isinf(a) || isinf(b)) return NAN;
    return incbeta_cf(x, a, b);
}

double gt_gs_t_tail2(double t, int df) {
    if (isnan(t)) return NAN;
    t = fabs(t);
    if (df <= 0) return erfc(t / sqrt(2.0));
    /* P(|T| >= t) = I_{df/(df+t^2)}(df/2, 1/2); t^2 overflowing to INF
     * gives x = 0 and the tail 0, its limit */
    return incbeta_cf(df / (df + t * t), 0.5 * df, 0.5);
}

double gt_gs_norm_cdf(double z) {
    if (isnan(z)) return NAN;
    /* erfc keeps relative accuracy far into the lower tail, where
     * 1 - 0.5 erfc(z / sqrt 2) would round to 0 */
    return 0.5 * erfc(-z / sqrt(2.0));
}

/* Acklam's rational approximation (relative error < 1.15e-9) for
 * p <= 0.5, then one Halley step on Phi(x) - p, which brings it to about
 * machine precision: the step's error is cubic in the starting error. */
static double norm_quantile_lower(double p) {
    static const double a[6] = {-3.969683028665376e+01, 2.209460984245205e+02,
                                -2.759285104469687e+02, 1.383577518672690e+02,
                                -3.066479806614716e+01, 2.506628277459239e+00};
    static const double b[5] = {-5.447609879822406e+01, 1.615858368580409e+02,
                                -1.556989798598866e+02, 6.680131188771972e+01,
                                -1.328068155288572e+01};
    static const double c[6] = {-7.784894002430293e-03, -3.223964580411365e-01,
                                -2.400758277161838e+00, -2.549732539343734e+00,
                                4.374664141464968e+00,  2.938163982698783e+00};
    static const double d[4] = {7.784695709041462e-03, 3.224671290700398e-01,
                                2.445134137142996e+00, 3.754408661907416e+00};
    double x;
    if (p < 0.02425) {
        double q = sqrt(-2 * log(p));
        x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
            ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
    } else {
        double q = p - 0.5, r = q * q;
        x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
            (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
    }
    /* e / phi(x); phi underflows for p near DBL_MIN's subnormals, where the
     * step is skipped rather than turned into INF or NAN */
    double e = gt_gs_norm_cdf(x) - p;
    double u = e * gs_sqrt_2pi * exp(0.5 * x * x);
    if (isfinite(u)) x -= u / (1 + 0.5 * x * u);
    return x;
}

double gt_gs_norm_quantile(double p) {
    if (!prob_open(p)) return NAN;
    /* 1 - p is exact for p > 0.5 (Sterbenz), and the lower tail is where
     * erfc, hence the Halley step, is accurate */
    return p > 0.5 ? -norm_quantile_lower(1 - p) : norm_quantile_lower(p);
}

double gt_gs_t_quantile2(double p, int df) {
    if (!(p > 0 && p <= 1)) return NAN;
    if (p == 1) return 0;
    if (df <= 0) return -gt_gs_norm_quantile(0.5 * p);
    /* the tail falls from 1 at t = 0 to 0: bracket, then bisect. The
     * doubling ends by t ~ 1e154 at the latest, where t^2 overflows and the
     * tail is 0 <= p. */
    double lo = 0, hi = 1;
    for (int i = 0; i < 2100 && gt_gs_t_tail2(hi, df) > p; i++) {
        lo = hi;
        hi *= 2;
    }
    for (int i = 0; i < 300 && hi - lo > 1e-13 * hi; i++) {
        double mid = 0.5 * (lo + hi);
        if (gt_gs_t_tail2(mid, df) > p)
            lo = mid;
        else
            hi = mid;
    }
    return 0.5 * (lo + hi);
}

/* Mean and sum of squared deviations of x[0..n), n >= 1: two passes, so
 * that replicates far from zero (e.g. times in ns) keep their spread. */
static void mean_ss(const double *x, int n, double *mean, double *ss) {
    double s = 0;
    for (int i = 0; i < n; i++) s += x[i];
    double m = s / n, q = 0;
    for (int i = 0; i < n; i++) q += (x[i] - m) * (x[i] - m);
    *mean = m;
    *ss = q;
}

int gt_gs_summarize(const double *x, int n, double floor_sd, gt_gs_summary *out) {
    if (n < 0) n = 0;
    *out = (gt_gs_summary){.n = n, .df = 0, .mean = NAN, .sd = NAN, .se = NAN};
    if (n == 0) return 0;
    double mean, ss;
    mean_ss(x, n, &mean, &ss);
    out->mean = mean;
    if (n < 2) return n;
    out->df = n - 1;
    out->sd = sqrt(ss / (n - 1));
    out->se = sqrt((ss / (n - 1) + floor_sd * floor_sd) / n);
    return n;
}

int gt_gs_summarize2(const double *a, int na, const double *b, int nb, double floor_sd,
                     gt_gs_summary *out) {
    if (na < 0) na = 0;
    if (nb < 0) nb = 0;
    *out = (gt_gs_summary){.n = na + nb, .df = 0, .mean = NAN, .sd = NAN, .se = NAN};
    if (na == 0 || nb == 0) return out->n;
    double ma, sa, mb, sb;
    mean_ss(a, na, &ma, &sa);
    mean_ss(b, nb, &mb, &sb);
    out->mean = mb - ma;
    int df = na + nb - 2;
    if (df == 0) return out->n;
    double var = (sa + sb) / df;
    out->df = df;
    out->sd = sqrt(var);
    out->se = sqrt((var + floor_sd * floor_sd) * (1.0 / na + 1.0 / nb));
    return out->n;
}

double gt_gs_p(const gt_gs_summary *s) {
    if (!s || isnan(s->mean) || !(s->se >= 0)) return NAN;
    if (s->mean == 0) return 1;
    if (s->se == 0) return 0;
    return gt_gs_t_tail2(s->mean / s->se, s->df);
}

void gt_gs_interval(const gt_gs_summary *s, double alpha, double *lo, double *hi) {
    double l = NAN, h = NAN;
    if (s && prob_open(alpha) && !isnan(s->mean) && s->se >= 0) {
        double w = s->se == 0 ? 0 : gt_gs_t_quantile2(alpha, s->df) * s->se;
        l = s->mean - w;
        h = s->mean + w;
    }
    if (lo) *lo = l;
    if (hi) *hi = h;
}

typedef struct holm_item {
    double p;
    size_t i;
} holm_item;

/* ascending p; ties by position, so that the order (not the result, which
 * ties share) does not depend on qsort's */
static int holm_cmp(const void *x, const void *y) {
    const holm_item *a = x, *b = y;
    if (a->p != b->p) return a->p < b->p ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

size_t gt_gs_holm(const double *p, size_t n, double *p_adj) {
    if (n == 0) return 0;
    holm_item *v = malloc(n * sizeof *v);
    if (!v) return SIZE_MAX;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (p[i] >= 0 && p[i] <= 1) v[m++] = (holm_item){p[i], i};
    qsort(v, m, sizeof *v, holm_cmp);
    /* every p is read into v before the first write, so p_adj may be p */
    for (size_t i = 0; i < n; i++)
        if (!(p[i] >= 0 && p[i] <= 1)) p_adj[i] = NAN;
    double run = 0; /* the running maximum keeps the adjusted values monotone */
    for (size_t k = 0; k < m; k++) {
        double adj = (double)(m - k) * v[k].p;
        if (adj > 1) adj = 1;
        if (adj > run) run = adj;
        p_adj[v[k].i] = run;
    }
    free(v);
    return m;
}

double gt_gs_spend(gt_gs_spending kind, double alpha, double t) {
    if ((int)kind < 0 || kind >= GT_GS_SPEND_COUNT || !prob_open(alpha) || isnan(t)) return NAN;
    if (t <= 0) return 0;
    if (t >= 1) return alpha; /* exactly, so that the looks sum to alpha */
    switch (kind) {
    case GT_GS_SPEND_POCOCK:
        return alpha * log1p(expm1(1.0) * t);
    case GT_GS_SPEND_OBRIEN_FLEMING:
        /* 2 - 2 Phi(y) = erfc(y / sqrt 2), accurate where it is tiny (small t) */
        return erfc(-gt_gs_norm_quantile(0.5 * alpha) / sqrt(2 * t));
    default:
        return NAN;
    }
}

double gt_gs_look_alpha(gt_gs_spending kind, double alpha, int n, int n_first, int n_max) {
    if ((int)kind < 0 || kind >= GT_GS_SPEND_COUNT || !prob_open(alpha) || n_first < 1 ||
        n_max < n_first)
        return NAN;
    if (n < n_first || n > n_max) return 0;
    double t_prev = n == n_first ? 0 : (double)(n - 1) / n_max;
    return gt_gs_spend(kind, alpha, (double)n / n_max) - gt_gs_spend(kind, alpha, t_prev);
}

/* The half-width of the (1 - alpha) interval of a mean of n replicates of
 * variance var. */
static double half_width(double var, double alpha, int n) {
    return gt_gs_t_quantile2(alpha, n - 1) * sqrt(var / n);
}

int gt_gs_n_needed(double sd, double floor_sd, double target, double alpha, int n_min, int n_cap) {
    if (!isfinite(sd) || !isfinite(floor_sd) || !(target > 0) || !prob_open(alpha) ||
        n_cap == INT_MAX)
        return 0;
    double var = sd * sd + floor_sd * floor_sd;
    int lo = n_min > 2 ? n_min : 2, hi = n_cap;
    if (lo > hi || !(half_width(var, alpha, hi) < target)) return n_cap + 1;
    if (half_width(var, alpha, lo) < target) return lo;
    /* the half-width falls with n (t_{alpha,n-1} and 1/sqrt n both do): bisect
     * with half_width(lo) >= target > half_width(hi) */
    while (hi - lo > 1) {
        int mid = lo + (hi - lo) / 2;
        if (half_width(var, alpha, mid) < target)
            hi = mid;
        else
            lo = mid;
    }
    return hi;
}

double gt_gs_power(double sd, double floor_sd, double effect, double alpha, int n) {
    if (n < 2 || !prob_open(alpha) || !isfinite(sd) || !isfinite(floor_sd) || !isfinite(effect))
        return NAN;
    double se = sqrt((sd * sd + floor_sd * floor_sd) / n);
    if (se == 0) return effect != 0 ? 1 : 0;
    double d = fabs(effect) / se, c = gt_gs_t_quantile2(alpha, n - 1);
    return gt_gs_norm_cdf(d - c) + gt_gs_norm_cdf(-d - c);
}

double gt_gs_f_cdf(double f, int d1, int d2) {
    if (isnan(f) || d1 < 1 || d2 < 1) return NAN;
    if (f <= 0) return 0;
    double x = (double)d1 * f / ((double)d1 * f + (double)d2);
    return gt_gs_incbeta(x, 0.5 * d1, 0.5 * d2);
}

/* The group means of d (k groups of r) into m; 0 when a value is not finite. */
static int group_means(const double *d, int k, int r, double *m) {
    for (int g = 0; g < k; g++) {
        double s = 0;
        for (int j = 0; j < r; j++) {
            if (!isfinite(d[g * r + j])) return 0;
            s += d[g * r + j];
        }
        m[g] = s / r;
    }
    return 1;
}

int gt_gs_summarize_nested(const double *d, int k, int r, double floor_sd, gt_gs_summary *out,
                           int *pooled) {
    if (pooled) *pooled = 0;
    if (k < 0) k = 0;
    double *m = malloc((size_t)(k ? k : 1) * sizeof *m);
    if (!m) return gt_gs_summarize(NULL, 0, floor_sd, out);
    if (r < 2 || k < 2 || !group_means(d, k, r, m)) {
        int n = r >= 1 && k > 0 && group_means(d, k, r, m) ? k : 0;
        gt_gs_summarize(m, n, floor_sd, out);
        free(m);
        return out->n;
    }
    gt_gs_summarize(m, k, floor_sd, out); /* the groups alone: mean, df k - 1 */
    double grand = out->mean, ssb = 0, ssw = 0;
    for (int g = 0; g < k; g++) {
        ssb += r * (m[g] - grand) * (m[g] - grand);
        for (int j = 0; j < r; j++) ssw += (d[g * r + j] - m[g]) * (d[g * r + j] - m[g]);
    }
    free(m);
    int dfb = k - 1, dfw = k * (r - 1);
    double msb = ssb / dfb, msw = ssw / dfw, kr = (double)k * r;
    int pool = msw > 0 && gt_gs_f_cdf(msb / msw, dfb, dfw) <= 1.0 - GT_GS_POOL_LEVEL;
    double var_mean = pool ? (ssb + ssw) / (kr - 1) / kr : msb / kr;
    out->df = pool ? (int)kr - 1 : dfb;
    out->sd = sqrt(var_mean * k);
    out->se = sqrt(var_mean + floor_sd * floor_sd / k);
    if (pooled) *pooled = pool;
    return out->n;
}
