/* Two stacks judged in one machine state: reports/compare_state.h. */
#include "reports/compare_state.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/stats.h"

typedef struct state_side {
    double *v;
    const double *s;
    const size_t *cut;
    int runs;
    size_t n;
    double *x; /* log(mode / ref) of each sample (see modes) */
} state_side;

/* The states' modes: both sides' states sorted and split wherever one is
 * GT_STATE_SAME times the one before; a sample's state is its mode's
 * median, so that the probe's jitter within a mode (55-75 ns) moves nothing.
 * A mode of one sample (a probe another process interrupted: 1,279 ns
 * beside 330) is no mode: its sample counts as without a state. */
#define MAX_MODES 16
typedef struct modes {
    int n;
    double lo[MAX_MODES], hi[MAX_MODES], med[MAX_MODES];
} modes;

static int is_state(double s) { return s > 0 && isfinite(s); }

/* The modes of the k states in v (sorted here); 0 when there are more
 * than MAX_MODES (a probe too noisy to have states). */
static int find_modes(double *v, size_t k, modes *m) {
    qsort(v, k, sizeof *v, gt_cmp_double);
    m->n = 0;
    for (size_t i = 0, start = 0; i < k; i++) {
        if (i + 1 < k && v[i + 1] < v[i] * GT_STATE_SAME) continue;
        if (i > start) { /* two samples or more */
            if (m->n == MAX_MODES) return 0;
            m->lo[m->n] = v[start];
            m->hi[m->n] = v[i];
            m->med[m->n++] = gt_median(v + start, i + 1 - start);
        }
        start = i + 1;
    }
    return 1;
}

/* The median of the mode s is in; NAN where none. */
static double mode_of(const modes *m, double s) {
    for (int j = 0; is_state(s) && j < m->n; j++)
        if (s >= m->lo[j] && s <= m->hi[j]) return m->med[j];
    return NAN;
}

/* d->x: each sample's log(mode / ref); a sample without one takes its
 * run's median mode, and 0 (the reference) where its run has none. */
static void fill_x(state_side *d, const modes *m, double ref, double *tmp) {
    for (int r = 0; r < d->runs; r++) {
        size_t k = 0;
        for (size_t i = d->cut[r]; i < d->cut[r + 1]; i++) {
            d->x[i] = mode_of(m, d->s[i]);
            if (!isnan(d->x[i])) tmp[k++] = d->x[i];
        }
        double run = k ? gt_median(tmp, k) : ref;
        for (size_t i = d->cut[r]; i < d->cut[r + 1]; i++)
            d->x[i] = log((isnan(d->x[i]) ? run : d->x[i]) / ref);
    }
}

static double clamp_b(double b) { return b < 0 ? 0 : b > GT_STATE_MAX_B ? GT_STATE_MAX_B : b; }

/* A side's part of the slope: the moments of a least-squares line through
 * the median log time of each mode the side's samples are in, weighted by
 * their counts, about the side's own mean; *sxx the weighted spread of the
 * modes' log states (below GT_STATE_LEAST_SXX: no contrast of its own).
 * Medians, because a block another process took (3x in the near mode)
 * would otherwise bend the line; a side's runs alike, since every run of a
 * side ran the same stack. */
static void moments(const state_side *d, double *tmp, double *sxx, double *sxy_out) {
    double xs[MAX_MODES + 1], ys[MAX_MODES + 1], w[MAX_MODES + 1];
    int nx = 0;
    *sxx = 0;
    for (size_t i = 0; i < d->n && nx <= MAX_MODES; i++) {
        int seen = 0;
        for (int j = 0; j < nx; j++) seen |= xs[j] == d->x[i];
        if (seen || !(d->v[i] > 0)) continue;
        size_t k = 0;
        for (size_t q = i; q < d->n; q++)
            if (d->x[q] == d->x[i] && d->v[q] > 0) tmp[k++] = log(d->v[q]);
        xs[nx] = d->x[i];
        ys[nx] = gt_median(tmp, k);
        w[nx++] = (double)k;
    }
    double sw = 0, mx = 0, my = 0, sxy = 0;
    for (int j = 0; j < nx; j++) {
        sw += w[j];
        mx += w[j] * xs[j];
        my += w[j] * ys[j];
    }
    *sxy_out = 0;
    if (sw < 2) return;
    mx /= sw;
    my /= sw;
    for (int j = 0; j < nx; j++) {
        sxy += w[j] * (xs[j] - mx) * (ys[j] - my);
        *sxx += w[j] * (xs[j] - mx) * (xs[j] - mx);
    }
    *sxy_out = sxy;
}

static void move(state_side *d, double b) {
    for (size_t i = 0; i < d->n; i++)
        if (d->v[i] > 0) d->v[i] *= exp(-b * d->x[i]);
}

static gt_state_outcome fit_sides(state_side *b, state_side *n, double *tmp,
                                  gt_state_fit *fit) {
    size_t kb = 0, kn = 0;
    for (size_t i = 0; i < b->n; i++)
        if (is_state(b->s[i])) tmp[kb++] = b->s[i];
    for (size_t i = 0; i < n->n; i++)
        if (is_state(n->s[i])) tmp[kb + kn++] = n->s[i];
    /* most samples of each side carry a state, or none is judged by it */
    if (2 * kb < b->n || 2 * kn < n->n || kb == 0 || kn == 0) return GT_STATE_NONE;
    modes m;
    if (!find_modes(tmp, kb + kn, &m) || m.n == 0) return GT_STATE_NONE;
    fit->ref_ns = m.med[0];
    fit->hi_ns = m.med[m.n - 1];
    if (m.n == 1) return GT_STATE_ONE;
    fill_x(b, &m, fit->ref_ns, tmp);
    fill_x(n, &m, fit->ref_ns, tmp);
    double sxb, sxn, yb, yn;
    moments(b, tmp, &sxb, &yb);
    moments(n, tmp, &sxn, &yn);
    int okb = sxb >= GT_STATE_LEAST_SXX, okn = sxn >= GT_STATE_LEAST_SXX;
    if (!okb && !okn) return GT_STATE_CONFOUNDED;
    /* one slope for both, each side about its own mean: a side's slope of
     * its own moved it by its error alone (under load, single sizes of an
     * A/A 3x "slower": the sides' near states held hidden modes the probe
     * cannot see, so their own slopes were 0.9 and 0.2). A stack that
     * truly answers the state less is still far from the other side (the
     * transport change stays must-not-ship); its size is misjudged. */
    fit->b_borrowed = !okb || !okn;
    fit->b_base = fit->b_new = clamp_b((yb + yn) / (sxb + sxn));
    move(b, fit->b_base);
    move(n, fit->b_new);
    return GT_STATE_ADJUSTED;
}

gt_state_outcome gt_state_adjust(double *vb, const double *sb, const size_t *cb, int runs_b,
                                 double *vn, const double *sn, const size_t *cn, int runs_n,
                                 gt_state_fit *fit) {
    gt_state_fit none = {GT_STATE_NONE, NAN, NAN, NAN, NAN, 0};
    *fit = none;
    if (!vb || !vn || !sb || !sn || !cb || !cn || runs_b < 1 || runs_n < 1) return GT_STATE_NONE;
    state_side b = {vb, sb, cb, runs_b, cb[runs_b], NULL};
    state_side n = {vn, sn, cn, runs_n, cn[runs_n], NULL};
    double *tmp = malloc((b.n + n.n + 1) * sizeof *tmp);
    b.x = malloc((b.n + 1) * sizeof *b.x);
    n.x = malloc((n.n + 1) * sizeof *n.x);
    gt_state_outcome o = tmp && b.x && n.x ? fit_sides(&b, &n, tmp, fit) : GT_STATE_NONE;
    free(tmp);
    free(b.x);
    free(n.x);
    if (o != GT_STATE_ADJUSTED) fit->b_base = fit->b_new = NAN;
    fit->outcome = o;
    return o;
}

/* ---- samples that waited for a CPU ------------------------------------------------------ */

static int unmendable(double w) { return w >= 1; }
static int waited(double w) { return w >= GT_STATE_BUSY_WAIT; }

size_t gt_state_unload(double *v, double *s, double *w, size_t *cut, int runs,
                       size_t *unloaded) {
    size_t out = 0, to = 0;
    *unloaded = 0;
    for (int r = 0; r < runs; r++) {
        size_t lo = cut[r], hi = cut[r + 1], bad = 0, clean = 0;
        for (size_t i = lo; i < hi; i++) {
            bad += unmendable(w[i]);
            clean += !waited(w[i]); /* NAN: not measured, taken as it is */
        }
        int keep_all = bad == hi - lo, drop_waited = clean >= GT_STATE_CLEAN_LEAST;
        cut[r] = to;
        for (size_t i = lo; i < hi; i++) {
            if ((drop_waited && waited(w[i])) || (unmendable(w[i]) && !keep_all)) {
                out++;
                continue;
            }
            if (waited(w[i]) && w[i] < 1) {
                v[i] *= 1 - w[i];
                (*unloaded)++;
            }
            v[to] = v[i];
            s[to] = s[i];
            w[to++] = w[i];
        }
    }
    cut[runs] = to;
    return out;
}
