/* Two stacks judged in one machine state: reports/compare_state.h. */
#include "reports/compare_state.h"

#include <math.h>
#include <stdlib.h>

#include "engine/stats.h"

typedef struct state_side {
    double *v;
    const double *s;
    const size_t *cut;
    int runs;
    size_t n;
} state_side;

/* The side's positive states into out (out has room for n); returns how many. */
static size_t states_of(const state_side *d, double *out) {
    size_t k = 0;
    for (size_t i = 0; i < d->n; i++)
        if (d->s[i] > 0 && isfinite(d->s[i])) out[k++] = d->s[i];
    return k;
}

/* log(state / ref) of sample i; a sample without a state takes its run's
 * median state (m, NAN when the run has none: then 0, the reference). */
static double xlog(const state_side *d, size_t i, double ref, double run_med) {
    double s = d->s[i] > 0 && isfinite(d->s[i]) ? d->s[i] : run_med;
    return s > 0 && isfinite(s) ? log(s / ref) : 0;
}

static double run_median_state(const state_side *d, int r, double *tmp) {
    size_t k = 0;
    for (size_t i = d->cut[r]; i < d->cut[r + 1]; i++)
        if (d->s[i] > 0 && isfinite(d->s[i])) tmp[k++] = d->s[i];
    return k ? gt_median(tmp, k) : NAN;
}

/* The side's slope about its mean; *sxx its spread of log states (below
 * GT_STATE_LEAST_SXX: the slope is not to be used). Every run of a side ran
 * the same stack, so runs in different states are contrasts as good as the
 * samples of one run in two. */
static double slope(const state_side *d, double ref, double *tmp, double *sxx) {
    double sxy = 0, mx = 0, my = 0;
    size_t k = 0;
    *sxx = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int r = 0; r < d->runs; r++) {
            double med = run_median_state(d, r, tmp);
            for (size_t i = d->cut[r]; i < d->cut[r + 1]; i++) {
                if (!(d->v[i] > 0)) continue;
                double x = xlog(d, i, ref, med), y = log(d->v[i]);
                if (pass == 0) {
                    mx += x;
                    my += y;
                    k++;
                } else {
                    sxy += (x - mx) * (y - my);
                    *sxx += (x - mx) * (x - mx);
                }
            }
            if (pass == 0 && r == d->runs - 1 && k) {
                mx /= (double)k;
                my /= (double)k;
            }
        }
    if (k < 2) *sxx = 0;
    double b = *sxx > 0 ? sxy / *sxx : 0;
    return b < 0 ? 0 : b > GT_STATE_MAX_B ? GT_STATE_MAX_B : b;
}

static void move(state_side *d, double ref, double b, double *tmp) {
    for (int r = 0; r < d->runs; r++) {
        double med = run_median_state(d, r, tmp);
        for (size_t i = d->cut[r]; i < d->cut[r + 1]; i++)
            if (d->v[i] > 0) d->v[i] *= exp(-b * xlog(d, i, ref, med));
    }
}

static gt_state_outcome fit_sides(state_side *b, state_side *n, double *tmp,
                                  gt_state_fit *fit) {
    size_t kb = states_of(b, tmp), kn = states_of(n, tmp + kb);
    /* most samples of each side carry a state, or none is judged by it */
    if (2 * kb < b->n || 2 * kn < n->n || kb == 0 || kn == 0) return GT_STATE_NONE;
    fit->ref_ns = fit->lo_ns = gt_quantile(tmp, kb + kn, 0.1);
    fit->hi_ns = gt_quantile(tmp, kb + kn, 0.9);
    if (!(fit->ref_ns > 0) || fit->hi_ns / fit->ref_ns < GT_STATE_SAME) return GT_STATE_ONE;
    double sxb, sxn;
    double bb = slope(b, fit->ref_ns, tmp, &sxb), bn = slope(n, fit->ref_ns, tmp, &sxn);
    int okb = sxb >= GT_STATE_LEAST_SXX, okn = sxn >= GT_STATE_LEAST_SXX;
    if (!okb && !okn) return GT_STATE_CONFOUNDED;
    fit->b_borrowed = !okb || !okn;
    fit->b_base = okb ? bb : bn;
    fit->b_new = okn ? bn : bb;
    move(b, fit->ref_ns, fit->b_base, tmp);
    move(n, fit->ref_ns, fit->b_new, tmp);
    return GT_STATE_ADJUSTED;
}

gt_state_outcome gt_state_adjust(double *vb, const double *sb, const size_t *cb, int runs_b,
                                 double *vn, const double *sn, const size_t *cn, int runs_n,
                                 gt_state_fit *fit) {
    gt_state_fit none = {GT_STATE_NONE, NAN, NAN, NAN, NAN, NAN, 0};
    *fit = none;
    if (!vb || !vn || !sb || !sn || !cb || !cn || runs_b < 1 || runs_n < 1) return GT_STATE_NONE;
    state_side b = {vb, sb, cb, runs_b, cb[runs_b]}, n = {vn, sn, cn, runs_n, cn[runs_n]};
    double *tmp = malloc((b.n + n.n + 1) * sizeof *tmp);
    if (!tmp) return GT_STATE_NONE;
    gt_state_outcome o = fit_sides(&b, &n, tmp, fit);
    free(tmp);
    if (o != GT_STATE_ADJUSTED) fit->b_base = fit->b_new = NAN;
    fit->outcome = o;
    return o;
}
