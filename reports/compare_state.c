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

/* Cells: a group's samples in one mode, the median of their log times
 * (medians, because a block another process took, 3x in the near mode,
 * would otherwise bend a line through them), weighted by their count; the
 * groups are a side's runs, or the side itself. */
typedef struct cells {
    double *x, *y, *w; /* log(mode / ref), median log time, samples */
    int *run;          /* the group */
    int n, cap;
} cells;

typedef struct line {
    double b, var;   /* the slope and its variance (INFINITY: none) */
    double sxx, sxy; /* its moments about the groups' means */
} line;

/* The cells of samples [lo, hi) of d, in group g, appended to c. */
static void range_cells(const state_side *d, size_t lo, size_t hi, int g, double *tmp,
                        cells *c) {
    for (size_t i = lo; i < hi && c->n < c->cap; i++) {
        int seen = !(d->v[i] > 0);
        for (size_t q = lo; q < i && !seen; q++) seen = d->x[q] == d->x[i] && d->v[q] > 0;
        if (seen) continue;
        size_t k = 0;
        for (size_t q = i; q < hi; q++)
            if (d->x[q] == d->x[i] && d->v[q] > 0) tmp[k++] = log(d->v[q]);
        c->x[c->n] = d->x[i];
        c->y[c->n] = gt_median(tmp, k);
        c->w[c->n] = (double)k;
        c->run[c->n++] = g;
    }
}

static void add_cells(const state_side *d, int run0, double *tmp, cells *c) {
    for (int r = 0; r < d->runs; r++) range_cells(d, d->cut[r], d->cut[r + 1], run0 + r, tmp, c);
}

/* A weighted least-squares slope through (x[i], y[i]), each point about
 * its group's mean (grp[i] < groups; gw, gx, gy: room for the groups'
 * weights and means), and its variance from the residuals with points -
 * groups - 1 degrees of freedom. */
static line fit_line(const double *x, const double *y, const double *w, const int *grp, int n,
                     int groups, double *gw, double *gx, double *gy) {
    line l = {NAN, INFINITY, 0, 0};
    int used = 0;
    for (int g = 0; g < groups; g++) gw[g] = gx[g] = gy[g] = 0;
    for (int i = 0; i < n; i++) {
        gw[grp[i]] += w[i];
        gx[grp[i]] += w[i] * x[i];
        gy[grp[i]] += w[i] * y[i];
    }
    for (int g = 0; g < groups; g++) {
        used += gw[g] > 0;
        if (gw[g] > 0) gx[g] /= gw[g], gy[g] /= gw[g];
    }
    double sxx = 0, sxy = 0, rss = 0;
    for (int i = 0; i < n; i++) {
        sxx += w[i] * (x[i] - gx[grp[i]]) * (x[i] - gx[grp[i]]);
        sxy += w[i] * (x[i] - gx[grp[i]]) * (y[i] - gy[grp[i]]);
    }
    l.sxx = sxx;
    l.sxy = sxy;
    if (sxx < GT_STATE_LEAST_SXX) return l;
    l.b = sxy / sxx;
    for (int i = 0; i < n; i++) {
        double e = y[i] - gy[grp[i]] - l.b * (x[i] - gx[grp[i]]);
        rss += w[i] * e * e;
    }
    int df = n - used - 1;
    if (df >= 1) l.var = fmax(rss / df / sxx, 1e-12);
    return l;
}

/* A side's part of the modes' line: the moments of a least-squares line
 * through the median log time of each mode the side's samples are in,
 * weighted by their counts, about the side's own mean; *sxx the weighted
 * spread of the modes' log states (below GT_STATE_LEAST_SXX: no contrast
 * of its own). A side's runs alike, since every run of a side ran the same
 * stack. */
static void moments(const state_side *d, double *tmp, double *sxx, double *sxy) {
    double x[MAX_MODES + 1], y[MAX_MODES + 1], w[MAX_MODES + 1], gw, gx, gy;
    int side[MAX_MODES + 1];
    cells c = {x, y, w, side, 0, MAX_MODES + 1};
    range_cells(d, 0, d->n, 0, tmp, &c);
    line l = fit_line(x, y, w, side, c.n, 1, &gw, &gx, &gy);
    *sxx = l.sxx;
    *sxy = l.sxy;
}

/* Two more lines on cells of runs (c, runs of them, BASE's runs_b first):
 * within runs, each cell about its run's mean (what the state does while
 * everything else about the run stays), and across runs, each run's mean
 * about its side's (a run's level against its share of the states); each
 * with the variance of its slope from its own residuals (INFINITY without
 * a residual degree of freedom or a contrast of GT_STATE_LEAST_SXX). */
static int two_lines(const cells *c, int runs, int runs_b, line *within, line *across) {
    double *buf = malloc((size_t)(9 * runs) * sizeof *buf);
    int *side = malloc((size_t)runs * sizeof *side), ok = buf && side;
    if (ok) {
        double *gw = buf, *gx = buf + runs, *gy = buf + 2 * runs;
        double *sw = buf + 3 * runs, *sx = buf + 4 * runs, *sy = buf + 5 * runs;
        double *rw = buf + 6 * runs, *rx = buf + 7 * runs, *ry = buf + 8 * runs;
        *within = fit_line(c->x, c->y, c->w, c->run, c->n, runs, gw, gx, gy);
        int k = 0;
        for (int r = 0; r < runs; r++) { /* the runs as points, grouped by side */
            if (!(gw[r] > 0)) continue;
            rx[k] = gx[r], ry[k] = gy[r], rw[k] = gw[r];
            side[k++] = r >= runs_b;
        }
        *across = fit_line(rx, ry, rw, side, k, 2, sw, sx, sy);
    }
    free(buf);
    free(side);
    return ok;
}

/* The slope from the two lines, each weighted by the inverse of its
 * variance (a random-effects fit: where the runs' levels vary little they
 * sharpen what the rounds say, where they vary much they weigh little);
 * the one within runs alone (*alone) where the two differ by more than
 * GT_STATE_DISAGREE times their joint error (the runs' levels moved with
 * something that their share of the states happened to follow); NAN where
 * neither has a variance. */
static double combine(line w, line a, int *alone) {
    *alone = 0;
    if (isinf(w.var)) return isinf(a.var) ? NAN : a.b;
    if (isinf(a.var)) return w.b;
    if (fabs(w.b - a.b) > GT_STATE_DISAGREE * sqrt(w.var + a.var)) {
        *alone = 1;
        return w.b;
    }
    return (w.b / w.var + a.b / a.var) / (1 / w.var + 1 / a.var);
}

/* Each side's own line within its runs (cells c, BASE's first nb): 1 where
 * the two differ by more than GT_STATE_DISAGREE times their joint error -
 * the stack changed how the time answers the state, and no line on cells
 * of both sides describes either. */
static int sides_apart(const cells *c, int nb, int runs, double *g) {
    line lb = fit_line(c->x, c->y, c->w, c->run, nb, runs, g, g + runs, g + 2 * runs);
    line ln = fit_line(c->x + nb, c->y + nb, c->w + nb, c->run + nb, c->n - nb, runs, g,
                       g + runs, g + 2 * runs);
    return !isinf(lb.var) && !isinf(ln.var) &&
           fabs(lb.b - ln.b) > GT_STATE_DISAGREE * sqrt(lb.var + ln.var);
}

/* The slope on cells of runs (BASE's first nb), or NAN: then the line
 * through the modes' medians. */
static double cells_slope(const cells *c, int nb, int runs, int runs_b, int *alone) {
    double *g = malloc(3 * (size_t)runs * sizeof *g);
    line w, a;
    double slope = NAN;
    if (g && !sides_apart(c, nb, runs, g) && two_lines(c, runs, runs_b, &w, &a))
        slope = combine(w, a, alone);
    free(g);
    return slope;
}

static double runs_slope(const state_side *b, const state_side *n, double *tmp, int *alone) {
    size_t total = b->n + n->n;
    cells c = {malloc(total * sizeof(double)), malloc(total * sizeof(double)),
               malloc(total * sizeof(double)), malloc(total * sizeof(int)), 0, (int)total};
    double slope = NAN;
    *alone = 0;
    if (c.x && c.y && c.w && c.run) {
        add_cells(b, 0, tmp, &c);
        int nb = c.n;
        add_cells(n, b->runs, tmp, &c);
        slope = cells_slope(&c, nb, b->runs + n->runs, b->runs, alone);
    }
    free(c.x);
    free(c.y);
    free(c.w);
    free(c.run);
    return slope;
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
    double slope = runs_slope(b, n, tmp, &fit->within_runs);
    fit->b_base = fit->b_new = clamp_b(isnan(slope) ? (yb + yn) / (sxb + sxn) : slope);
    move(b, fit->b_base);
    move(n, fit->b_new);
    return GT_STATE_ADJUSTED;
}

gt_state_outcome gt_state_adjust(double *vb, const double *sb, const size_t *cb, int runs_b,
                                 double *vn, const double *sn, const size_t *cn, int runs_n,
                                 gt_state_fit *fit) {
    gt_state_fit none = {GT_STATE_NONE, NAN, NAN, NAN, NAN, 0, 0};
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
static int heavy(double w) { return w >= GT_STATE_MEND_MAX; } /* NAN: not measured, light */

int gt_state_starved(const double *w, const size_t *cut, int runs) {
    int starved = 0;
    for (int r = 0; r < runs; r++) {
        size_t light = 0;
        for (size_t i = cut[r]; i < cut[r + 1]; i++)
            light += !heavy(w[i]);
        starved += cut[r + 1] - cut[r] >= GT_STATE_CLEAN_LEAST && light < GT_STATE_STARVED_LIGHT;
    }
    return starved;
}

size_t gt_state_unload(double *v, double *s, double *w, size_t *cut, int runs,
                       size_t *unloaded) {
    size_t out = 0, to = 0;
    *unloaded = 0;
    for (int r = 0; r < runs; r++) {
        size_t lo = cut[r], hi = cut[r + 1], bad = 0, clean = 0, light = 0;
        for (size_t i = lo; i < hi; i++) {
            bad += unmendable(w[i]);
            clean += !waited(w[i]); /* NAN: not measured, taken as it is */
            light += !heavy(w[i]);
        }
        int keep_all = bad == hi - lo, drop_waited = clean >= GT_STATE_CLEAN_LEAST;
        /* a run of many batches keeps those that waited less than
         * GT_STATE_MEND_MAX, where it has any (then keep_all is 0: the
         * unmendable ones go too) */
        int drop_heavy = hi - lo >= GT_STATE_CLEAN_LEAST && light > 0;
        cut[r] = to;
        for (size_t i = lo; i < hi; i++) {
            if ((drop_waited && waited(w[i])) || (unmendable(w[i]) && !keep_all) ||
                (drop_heavy && heavy(w[i]))) {
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
