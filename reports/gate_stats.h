/* gate_stats: the statistics behind the CI gate (reports/compare.h), apart
 * from the report plumbing: Student's t and normal distributions, one- and
 * two-sample summaries of replicates with their p-values and intervals,
 * Holm's correction, alpha spending for sequential looks, and sample size
 * and power. Pure functions of their arguments: no allocation except
 * gt_gs_holm's scratch, no global state, thread-safe.
 *
 * Conventions:
 *   - p-values, alphas and probabilities are plain fractions in [0, 1];
 *   - "two-sided" means P(|X| >= |x|);
 *   - df is a count of degrees of freedom; df <= 0 everywhere means "no
 *     t distribution": the standard normal stands in (the limit df -> inf),
 *     which is what compare uses when the noise is assumed rather than
 *     estimated;
 *   - bad input (NAN, an argument outside the documented domain) gives NAN
 *     for a double result, never a crash and never errno; the functions
 *     returning counts say what they return instead.
 *
 * Accuracy (measured against mpmath at 40 digits): the t tail to ~1e-12
 * relative for df up to 1e4, also far in the tail; above that lgamma's
 * cancellation in the beta function's prefactor costs digits (~1e-10 at
 * df 1e5, ~4e-9 at df 1e8), still far below any noise the gate sees. The
 * t quantile to ~1e-13 relative (bisection to that width). The normal
 * quantile to ~3e-14 relative (~1e-16 absolute near p = 1/2) from 1e-300
 * to 1 - 1e-3: Acklam's ~1e-9 approximation plus one Halley step. */
#ifndef GT_REPORT_GATE_STATS_H
#define GT_REPORT_GATE_STATS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- distributions ---------------------------------------------------- */

/* The regularized incomplete beta function I_x(a, b) = B(x; a, b) / B(a, b),
 * for x in [0, 1] and a, b > 0 (I_0 = 0, I_1 = 1). NAN when x is outside
 * [0, 1], a or b is not > 0, or any argument is NAN. */
double gt_gs_incbeta(double x, double a, double b);

/* The two-sided tail of Student's t with df degrees of freedom,
 * P(|T_df| >= |t|), in [0, 1]; df <= 0: of the standard normal,
 * erfc(|t| / sqrt 2). t = +-INF gives 0; NAN t gives NAN. */
double gt_gs_t_tail2(double t, int df);

/* The inverse of gt_gs_t_tail2 in t: the t >= 0 with
 * gt_gs_t_tail2(t, df) == p, for p in (0, 1] (p = 1 gives 0); that is the
 * critical value t_{1-p/2, df} of a two-sided test at level p. df <= 0: the
 * normal's, -gt_gs_norm_quantile(p / 2). NAN for p outside (0, 1] or NAN. */
double gt_gs_t_quantile2(double p, int df);

/* The standard normal cdf Phi(z) = P(Z <= z), accurate in relative terms in
 * the lower tail (via erfc). NAN for NAN z; 0 and 1 at -INF and +INF. */
double gt_gs_norm_cdf(double z);

/* The inverse of gt_gs_norm_cdf: the z with Phi(z) == p, for p in (0, 1).
 * NAN for p outside (0, 1) (0 and 1 included: their quantiles are
 * infinite) or NAN. */
double gt_gs_norm_quantile(double p);

/* ---- summaries of replicates ------------------------------------------ */

/* One estimate and its noise, as the gate tests it: mean is the estimate
 * (the mean of the replicates, or a difference of means), se its standard
 * error on df degrees of freedom; sd the replicates' standard deviation
 * (pooled for two samples) and n the replicates behind it. Fields are in
 * the replicates' unit (for paired runs, the log ratio). A caller may fill
 * one by hand (e.g. a normal test: df 0 and a known se). */
typedef struct gt_gs_summary {
    int n, df;
    double mean, sd, se;
} gt_gs_summary;

/* One sample x[0..n) (e.g. the log ratios of interleaved pairs): mean, sd
 * with the n - 1 denominator, se = sqrt((sd^2 + floor_sd^2) / n) and
 * df = n - 1. floor_sd is a noise floor in x's unit, added in quadrature so
 * that a few replicates that happen to agree cannot claim less noise than
 * the measurement has (0: none; its sign is irrelevant). n == 1: mean x[0],
 * df 0, sd and se NAN; n <= 0: mean NAN too, and out->n = 0. A NAN in x
 * propagates to mean, sd and se. x may be NULL only when n <= 0; out must
 * not be NULL. Returns out->n (n, or 0 when n < 0). */
int gt_gs_summarize(const double *x, int n, double floor_sd, gt_gs_summary *out);

/* Two independent samples a[0..na) and b[0..nb), the difference b - a with
 * pooled variance: mean = mean(b) - mean(a), sd = s_pooled (sum of both
 * samples' squared deviations over na + nb - 2), se = sqrt((s_pooled^2 +
 * floor_sd^2) (1/na + 1/nb)), df = na + nb - 2, n = na + nb. df == 0
 * (na = nb = 1): df 0, sd and se NAN. A side with no replicate (na or
 * nb <= 0): mean NAN too and df 0. Pointers as gt_gs_summarize. Returns
 * out->n (na + nb, negative counts taken as 0). */
int gt_gs_summarize2(const double *a, int na, const double *b, int nb, double floor_sd,
                     gt_gs_summary *out);

/* P(F <= f) for Fisher's F on (d1, d2) degrees of freedom: the
 * regularized incomplete beta at d1 f / (d1 f + d2). 0 for f <= 0; NAN for
 * d1 or d2 < 1 or f NAN. */
double gt_gs_f_cdf(double f, int d1, int d2);

/* The level of the preliminary F test of gt_gs_summarize_nested (Bancroft's
 * "sometimes pool" rule: pool the within-group mean square with the groups'
 * unless the F test at 0.25 says the groups differ beyond it). */
#define GT_GS_POOL_LEVEL 0.25

/* A balanced nested sample: k groups of r replicates each, d[g r + j]
 * (interleaved pairs, each cut into r blocks of its samples: the blocks'
 * log ratios). The estimate is the grand mean. The groups' mean square MSB
 * (k - 1 df) is what its standard error rests on in general; when F =
 * MSB / MSW, MSW the within-group mean square (k (r - 1) df), is below its
 * 1 - GT_GS_POOL_LEVEL quantile, the groups show no spread of their own
 * beyond their replicates', and every value counts: s^2 pooled over k r - 1
 * df. Then se^2 = s^2 / (k r) (else MSB / (k r)) plus floor_sd^2 / k, sd
 * the spread of a group's mean it stands for (sqrt(k se^2) without the
 * floor), n = k, df k r - 1 or k - 1. *pooled (may be NULL) says which.
 * r < 2 or a NAN in d: gt_gs_summarize of the group means. MSW == 0: not
 * pooled. Returns out->n. */
int gt_gs_summarize_nested(const double *d, int k, int r, double floor_sd, gt_gs_summary *out,
                           int *pooled);

/* The two-sided p-value of mean / se on df (gt_gs_t_tail2): 1 when
 * mean == 0 (no difference is no evidence, even with se == 0), 0 when
 * se == 0 and mean != 0. NAN when s is NULL, mean or se is NAN (n < 2), or
 * se < 0. */
double gt_gs_p(const gt_gs_summary *s);

/* The two-sided (1 - alpha) confidence interval of s->mean,
 * mean -+ gt_gs_t_quantile2(alpha, df) se, into *lo and *hi (either may be
 * NULL). se == 0 gives lo == hi == mean. Both NAN for alpha outside (0, 1),
 * s NULL, or what makes gt_gs_p NAN. */
void gt_gs_interval(const gt_gs_summary *s, double alpha, double *lo, double *hi);

/* ---- multiple testing ------------------------------------------------- */

/* Holm's step-down adjusted p-values of p[0..n) into p_adj[0..n), in p's
 * order: with the m tested p-values sorted ascending, p_(i) adjusted is
 * max over j <= i of min(1, (m - j + 1) p_(j)); monotone in p and capped at
 * 1. Rejecting where p_adj <= alpha controls the family-wise error at alpha
 * whatever the dependence between the tests. A p that is NAN or outside
 * [0, 1] is no test: its p_adj is NAN and it is not counted in m. p_adj may
 * alias p. Ties get equal adjusted values. Returns m, the number of tests;
 * SIZE_MAX when its scratch (n times 16 bytes) could not be allocated, and
 * then p_adj is unchanged. p and p_adj may be NULL only when n == 0. */
size_t gt_gs_holm(const double *p, size_t n, double *p_adj);

/* ---- sequential looks ------------------------------------------------- */

/* The alpha-spending functions of Lan and DeMets: the part of alpha spent by
 * information fraction t (for replicates, t = n / n_max). */
typedef enum gt_gs_spending {
    GT_GS_SPEND_POCOCK = 0,     /* alpha ln(1 + (e - 1) t): spends early */
    GT_GS_SPEND_OBRIEN_FLEMING, /* 2 - 2 Phi(z_{1-alpha/2} / sqrt t): keeps alpha for the end */
    GT_GS_SPEND_COUNT
} gt_gs_spending;

/* The alpha spent by information fraction t for the overall level alpha:
 * increasing in t, 0 at t <= 0 and alpha at t >= 1. NAN for a kind outside
 * [0, GT_GS_SPEND_COUNT), alpha outside (0, 1), or NAN t. */
double gt_gs_spend(gt_gs_spending kind, double alpha, double t);

/* The level to test look n at, with one look per added replicate at the
 * replicate counts n_first, n_first + 1, ..., n_max: spend(t_n) -
 * spend(t_{n-1}) with t_n = n / n_max and t_{n_first - 1} taken as 0, so
 * that the looks' levels sum to alpha. 0 for n outside [n_first, n_max].
 * Testing each look at its level controls the overall alpha by Bonferroni
 * over the looks, whatever their correlation (conservative: the looks of a
 * growing sample are strongly correlated). NAN for a bad kind or alpha (as
 * gt_gs_spend), n_first < 1 or n_max < n_first. */
double gt_gs_look_alpha(gt_gs_spending kind, double alpha, int n, int n_first, int n_max);

/* ---- planning --------------------------------------------------------- */

/* Sample size: the smallest n in [max(n_min, 2), n_cap] whose one-sample
 * t interval at level alpha with n replicates of standard deviation sd (and
 * the floor, as gt_gs_summarize) has the half-width
 * gt_gs_t_quantile2(alpha, n - 1) sqrt((sd^2 + floor_sd^2) / n) < target
 * (in sd's unit); n_cap + 1 when none does (or the range is empty). 0 for
 * bad input: sd or floor_sd NAN or infinite, target NAN or <= 0, alpha
 * outside (0, 1), n_cap == INT_MAX. */
int gt_gs_n_needed(double sd, double floor_sd, double target, double alpha, int n_min, int n_cap);

/* The power of the two-sided one-sample t test at level alpha to detect a
 * true mean `effect` (sd's unit) with n replicates of standard deviation sd
 * (and the floor, as gt_gs_summarize), by the normal approximation of the
 * noncentral t: with se = sqrt((sd^2 + floor_sd^2) / n), d = |effect| / se
 * and c = gt_gs_t_quantile2(alpha, n - 1), Phi(d - c) + Phi(-d - c). se == 0
 * (no noise at all): 1 when effect != 0, 0 when effect == 0 (as gt_gs_p).
 * NAN for n < 2, alpha outside (0, 1), or a NAN or infinite sd, floor_sd or
 * effect. */
double gt_gs_power(double sd, double floor_sd, double effect, double alpha, int n);

#ifdef __cplusplus
}
#endif
#endif
