/* compare's families and its correction (reports/compare.h has the rules,
 * docs/ci-gating.md the reasons): a driver or library change moves a whole
 * family of metrics (every shape of one op, every GEMM-backed op, every size
 * of one collective), so the family's members are pooled and tested as one
 * hypothesis beside each member's own; one weighted Holm procedure over both
 * keeps the chance of any false "slower" at alpha. */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reports/compare_impl.h"
#include "reports/gate_stats.h"
#include "engine/fileio.h"
#include "engine/stats.h"

/* ---- building the families ------------------------------------------------------------ */

/* Where m's side timed a neighbour in every run (cmp_metric.starved) while
 * the other side's every run timed the stack, or both sides' every run did:
 * the GT_HELD_STARVED_* its doubt is held by; 0: neither, or runs of both
 * kinds on a side (judged as measured, with its families). */
static int starved_hold(const cmp_metric *m) {
    int all_b = m->runs_b > 0 && m->starved[0] >= m->runs_b;
    int all_n = m->runs_n > 0 && m->starved[1] >= m->runs_n;
    if (all_b && all_n) return GT_HELD_STARVED_BOTH;
    if (all_n && m->starved[0] == 0) return GT_HELD_STARVED_NEW;
    if (all_b && m->starved[1] == 0) return GT_HELD_STARVED_BASE;
    return 0;
}

/* A metric that can join a family: tested, judged from replicates, a value
 * of its own (not a part of the step, not derived, not ungated). */
static int joinable(const cmp_metric *m) {
    if (!m->in_base || !m->in_new || m->derived_from || m->ungated || m->part_of) return 0;
    /* a side that timed only a neighbour would move its family by the
     * neighbour's delay: judged alone (hold_starved) */
    if (starved_hold(m)) return 0;
    if (m->method != GT_METHOD_RUNS && m->method != GT_METHOD_PAIRED &&
        m->method != GT_METHOD_BLOCKS)
        return 0;
    /* a side lifted to the timing floor joins with its measured runs, as a
     * pair's ratio does: the family pools what was measured, and carries
     * the doubt of a time that straddles the floor (on its own it is
     * judged from the floor) */
    return m->lb && m->ln && !isnan(m->rel);
}

/* time_us_1048576 -> time_us: the sizes of one collective are one family */
static char *metric_stem(const char *name) {
    char *s = strdup(name);
    if (!s) return NULL;
    char *u = strrchr(s, '_');
    if (u && u[1]) {
        const char *d = u + 1;
        while (*d >= '0' && *d <= '9') d++;
        if (!*d) *u = '\0';
    }
    return s;
}

static cmp_family *family_for(gt_compare *c, const char *name, int is_class, const cmp_result *r,
                              const cmp_metric *m) {
    char *stem = metric_stem(m->name);
    char *key = NULL;
    if (!stem || asprintf(&key, "%s\x1f%s\x1f%s\x1f%s\x1f%d", name, r->topology, r->backend,
                          stem, m->higher_better) < 0) {
        free(stem);
        return NULL;
    }
    for (size_t i = 0; i < c->nfam; i++)
        if (strcmp(c->fam[i].key, key) == 0) {
            free(stem);
            free(key);
            return &c->fam[i];
        }
    cmp_family *grown = realloc(c->fam, (c->nfam + 1) * sizeof *grown);
    char *nm = strdup(name);
    if (!grown || !nm) {
        if (grown) c->fam = grown;
        free(stem);
        free(key);
        free(nm);
        return NULL;
    }
    c->fam = grown;
    cmp_family *f = &c->fam[c->nfam++];
    *f = (cmp_family){.name = nm,
                      .key = key,
                      .topology = r->topology,
                      .backend = r->backend,
                      .stem = stem,
                      .is_class = is_class,
                      .higher_better = m->higher_better,
                      .method = m->method,
                      .rel = NAN,
                      .lo = NAN,
                      .hi = NAN,
                      .p = NAN,
                      .p_adj = NAN,
                      .detectable = NAN,
                      .verdict = GT_VERDICT_AMBIGUOUS};
    return f;
}

static int family_add(cmp_family *f, cmp_metric *m) {
    cmp_metric **g = realloc(f->mem, (f->n + 1) * sizeof *g);
    if (!g) return -1;
    f->mem = g;
    f->mem[f->n++] = m;
    return 0;
}

/* The op of a case: its first path component (matmul_fwd of
 * matmul_fwd/fp32/N64_C768_OC768, allreduce of allreduce/fp32/sum). */
static int add_to_families(gt_compare *c, const cmp_result *r, cmp_metric *m) {
    size_t ol = strcspn(r->case_name, "/");
    char name[256];
    snprintf(name, sizeof name, "%s/%.*s", r->suite, (int)(ol < 200 ? ol : 200), r->case_name);
    cmp_family *f = family_for(c, name, 0, r, m);
    if (!f || family_add(f, m)) return -1;
    size_t gi;
    json_t *g;
    json_array_foreach(json_object_get(r->nw, "groups"), gi, g) {
        if (!json_is_string(g)) continue;
        snprintf(name, sizeof name, "%s/[%s]", r->suite, json_string_value(g));
        if (!(f = family_for(c, name, 1, r, m)) || family_add(f, m)) return -1;
    }
    return 0;
}

static void family_free(cmp_family *f) {
    free(f->name);
    free(f->key);
    free(f->stem);
    free(f->mem);
}

static int same_members(const cmp_family *a, const cmp_family *b) {
    if (a->n != b->n) return 0;
    for (size_t i = 0; i < a->n; i++)
        if (a->mem[i] != b->mem[i]) return 0;
    return 1;
}

/* Only families of two or more members are hypotheses of their own (one
 * member is the metric itself), and a class whose members are one op's
 * says nothing that op's family does not. */
static void prune_families(gt_compare *c) {
    size_t k = 0;
    for (size_t i = 0; i < c->nfam; i++) {
        cmp_family *f = &c->fam[i];
        int keep = f->n >= 2;
        for (size_t j = 0; j < k && keep && f->is_class; j++) keep = !same_members(f, &c->fam[j]);
        if (keep)
            c->fam[k++] = *f;
        else
            family_free(f);
    }
    c->nfam = k;
    for (size_t i = 0; i < c->nfam; i++)
        for (size_t j = 0; j < c->fam[i].n; j++) c->fam[i].mem[j]->in_family = 1;
}

/* ---- one family's pooled test --------------------------------------------------------- */

/* Variance of the finite values of x (n - 1 denominator); NAN under 2. */
static double var_finite(const double *x, int n, double *mean) {
    double s = 0, ss = 0;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(x[i])) {
            s += x[i];
            k++;
        }
    if (mean) *mean = k ? s / k : NAN;
    if (k < 2) return NAN;
    double m = s / k;
    for (int i = 0; i < n; i++)
        if (isfinite(x[i])) ss += (x[i] - m) * (x[i] - m);
    return ss / (k - 1);
}

/* A member's weight: the inverse of its own spread (with the floor), so that
 * a sub-10-microsecond kernel that moves 30% between runs does not drown a
 * GEMM that moves 2%. */
static double weight(double var, double floor_sd) {
    if (!isfinite(var)) var = 0;
    return 1.0 / (var + floor_sd * floor_sd);
}

/* Pairs in blocks (every member's blk over all np pairs, all finite): per
 * pair and block, the weighted mean of the members' block log ratios,
 * summarized nested (gt_gs_summarize_nested). 0 when a member lacks blocks. */
static int test_paired_blocks(const gt_compare *c, cmp_family *f, const double *w, int np,
                              gt_gs_summary *s) {
    int r = GT_COMPARE_BLOCKS;
    for (size_t m = 0; m < f->n; m++) {
        const cmp_metric *x = f->mem[m];
        if (!x->blk || x->nblk != np) return 0;
        for (int i = 0; i < np * r; i++)
            if (!isfinite(x->blk[i])) return 0;
    }
    double *dbar = malloc((size_t)np * r * sizeof *dbar);
    if (!dbar) return 0;
    for (int i = 0; i < np * r; i++) {
        double sw = 0, sx = 0;
        for (size_t m = 0; m < f->n; m++) {
            sw += w[m];
            sx += w[m] * f->mem[m]->blk[i];
        }
        dbar[i] = sx / sw;
    }
    int ok = gt_gs_summarize_nested(dbar, np, r, c->opt.run_noise, s, &f->pooled) == np;
    free(dbar);
    return ok;
}

/* Interleaved pairs: per pair, the weighted mean of the members' log ratios;
 * the family's estimate is their mean, tested on pairs - 1 degrees of
 * freedom. A drift that hits one pair hits all its members: it stays in the
 * pair's mean and so in the spread it is judged against. Members whose runs
 * are in blocks: per pair and block (test_paired_blocks). */
static int test_paired(const gt_compare *c, cmp_family *f, gt_gs_summary *s) {
    int np = c->pairs;
    double *d = calloc((size_t)np * (f->n + 1), sizeof *d);
    if (!d) return -1;
    double *dbar = d + (size_t)np * f->n;
    double *w = malloc(f->n * sizeof *w);
    if (!w) {
        free(d);
        return -1;
    }
    for (size_t m = 0; m < f->n; m++) {
        const cmp_metric *x = f->mem[m];
        for (int i = 0; i < np; i++)
            d[m * np + i] = i < x->nlb && i < x->nln ? x->ln[i] - x->lb[i] : NAN;
        w[m] = weight(var_finite(d + m * np, np, NULL), c->opt.run_noise);
    }
    int k = 0;
    for (int i = 0; i < np; i++) {
        double sw = 0, sx = 0;
        for (size_t m = 0; m < f->n; m++)
            if (isfinite(d[m * np + i])) {
                sw += w[m];
                sx += w[m] * d[m * np + i];
            }
        if (sw > 0) dbar[k++] = sx / sw;
    }
    gt_gs_summarize(dbar, k, c->opt.run_noise, s);
    f->reps = k;
    if (k == np && test_paired_blocks(c, f, w, np, s)) f->blocks = GT_COMPARE_BLOCKS;
    free(w);
    free(d);
    return 0;
}

/* Runs on each side, not paired: per run, the weighted mean of the members'
 * logs (each centred on its BASE mean); the two sides' run means by a
 * two-sample t test. A run that was slow for everything moves its mean. */
static int test_runs(const gt_compare *c, cmp_family *f, gt_gs_summary *s) {
    int nb = 0, nn = 0;
    for (size_t m = 0; m < f->n; m++) {
        if (f->mem[m]->nlb > nb) nb = f->mem[m]->nlb;
        if (f->mem[m]->nln > nn) nn = f->mem[m]->nln;
    }
    double *fb = calloc((size_t)nb + nn, sizeof *fb), *w = malloc(f->n * sizeof *w),
           *ctr = malloc(f->n * sizeof *ctr);
    if (!fb || !w || !ctr) {
        free(fb);
        free(w);
        free(ctr);
        return -1;
    }
    double *fn = fb + nb;
    for (size_t m = 0; m < f->n; m++) {
        const cmp_metric *x = f->mem[m];
        double mb, mn;
        double vb = var_finite(x->lb, x->nlb, &mb), vn = var_finite(x->ln, x->nln, &mn);
        double v = isfinite(vb) && isfinite(vn) ? 0.5 * (vb + vn) : isfinite(vb) ? vb : vn;
        w[m] = weight(v, c->opt.run_noise);
        ctr[m] = mb;
    }
    int kb = 0, kn = 0;
    for (int side_ = 0; side_ < 2; side_++) {
        int runs = side_ ? nn : nb;
        for (int j = 0; j < runs; j++) {
            double sw = 0, sx = 0;
            for (size_t m = 0; m < f->n; m++) {
                const cmp_metric *x = f->mem[m];
                double v = side_ ? (j < x->nln ? x->ln[j] : NAN) : (j < x->nlb ? x->lb[j] : NAN);
                if (!isfinite(v) || !isfinite(ctr[m])) continue;
                sw += w[m];
                sx += w[m] * (v - ctr[m]);
            }
            if (sw <= 0) continue;
            if (side_)
                fn[kn++] = sx / sw;
            else
                fb[kb++] = sx / sw;
        }
    }
    gt_gs_summarize2(fb, kb, fn, kn, c->opt.run_noise, s);
    f->nb = kb;
    f->nn = kn;
    f->reps = kb + kn;
    free(fb);
    free(w);
    free(ctr);
    return 0;
}

/* One run a side: the members' level ratios, weighted by their blocks'
 * spread (in logs, so that a member that moved is not weighed down by its
 * larger times); how runs differ is assumed (single_run_noise) and is
 * shared by every member of a run, so pooling does not shrink it. Where
 * the members disagree beyond their blocks' noise (one shape 27x slower,
 * its sibling unchanged), the pooled ratio is a mean over members that
 * differ, and its interval carries that spread (a method-of-moments
 * between-member variance): without it such a family was "slower" in one
 * draw and "same" in the next, by which member weighed more. */
static void test_blocks(const gt_compare *c, cmp_family *f, gt_gs_summary *s) {
    double sw = 0, sx = 0, sv = 0, sw2 = 0, sy = 0, syy = 0, snoise = 0;
    double srn = c->opt.single_run_noise;
    for (size_t m = 0; m < f->n; m++) {
        const cmp_metric *x = f->mem[m];
        double vb = var_finite(x->lb, x->nlb, NULL), vn = var_finite(x->ln, x->nln, NULL);
        double v = (isfinite(vb) ? vb : 0) + (isfinite(vn) ? vn : 0); /* both sides' blocks */
        double w = weight(0.5 * v, srn), y = log(x->a.new_lvl / x->a.base_lvl);
        sw += w;
        sx += w * y;
        sv += w * w * v;
        sw2 += w * w;
        sy += y;
        syy += y * y;
        snoise += v;
    }
    double k = (double)f->n, tau2 = 0;
    if (f->n >= 2) tau2 = fmax(0, (syy - sy * sy / k) / (k - 1) - snoise / k);
    *s = (gt_gs_summary){.n = 2, .df = 0, .mean = sx / sw, .sd = NAN};
    s->se = sqrt(2 * srn * srn + (sv + tau2 * sw2) / (sw * sw));
    f->reps = 2;
    f->nb = f->nn = 1;
}

static int test_family(const gt_compare *c, cmp_family *f) {
    gt_gs_summary s = {0};
    if (f->method == GT_METHOD_PAIRED) {
        if (test_paired(c, f, &s)) return -1;
    } else if (f->method == GT_METHOD_RUNS) {
        if (test_runs(c, f, &s)) return -1;
    } else {
        test_blocks(c, f, &s);
    }
    f->est = s.mean;
    f->se = s.se;
    f->sd = s.sd;
    f->df = s.df;
    f->rel = expm1(s.mean);
    f->p = isfinite(s.se) ? gt_gs_p(&s) : NAN; /* two-sided */
    for (size_t m = 0; m < f->n; m++) {
        double r = f->mem[m]->rel;
        f->moved += fabs(r) >= c->opt.threshold && (r > 0) == (f->rel > 0);
    }
    return 0;
}

/* ---- one correction over families and metrics ----------------------------------------- */

typedef struct hyp {
    double p, w; /* two-sided p; weight */
    cmp_metric *m;
    cmp_family *f;
} hyp;

static int cmp_hyp(const void *a, const void *b) {
    const hyp *x = a, *y = b;
    double rx = x->p / x->w, ry = y->p / y->w;
    return (rx > ry) - (rx < ry);
}

static int metric_tested(const cmp_metric *m) {
    return m->in_base && m->in_new && !isnan(m->p) && !m->derived_from && !m->ungated;
}

/* Weighted Holm (Holm 1979): hypotheses in order of p / w, each rejected
 * while p <= alpha w / (the weight not yet rejected); the first that is not
 * stops the procedure. Families share GT_COMPARE_FAMILY_SHARE of the weight,
 * the metrics the rest (all of it when there is no family). */
static int correct(gt_compare *c) {
    size_t nm = 0, nf = 0;
    for (size_t i = 0; i < c->nres; i++)
        for (size_t j = 0; j < c->res[i].nm; j++) nm += metric_tested(&c->res[i].m[j]);
    for (size_t i = 0; i < c->nfam; i++) nf += !isnan(c->fam[i].p);
    if (nm + nf == 0) return 0;
    hyp *h = malloc((nm + nf) * sizeof *h);
    if (!h) return -1;
    double share = nf ? GT_COMPARE_FAMILY_SHARE : 0;
    size_t k = 0;
    for (size_t i = 0; i < c->nres; i++)
        for (size_t j = 0; j < c->res[i].nm; j++) {
            cmp_metric *m = &c->res[i].m[j];
            if (metric_tested(m)) h[k++] = (hyp){m->p, (1 - share) / (double)nm, m, NULL};
        }
    for (size_t i = 0; i < c->nfam; i++)
        if (!isnan(c->fam[i].p)) h[k++] = (hyp){c->fam[i].p, share / (double)nf, NULL, &c->fam[i]};
    int holm = c->opt.correction == GT_CORRECTION_HOLM;
    qsort(h, k, sizeof *h, cmp_hyp);
    /* wleft: the weight of this hypothesis and those after it (Holm's
     * denominator at its step); a hypothesis after the stop is shown with
     * the level of the step that stopped: that is the level it lost at */
    double wleft = 0, run = 0, wstop = 0;
    for (size_t i = 0; i < k; i++) wleft += h[i].w;
    int stopped = 0;
    for (size_t i = 0; i < k; i++) {
        double adj = holm ? fmin(1, h[i].p * wleft / h[i].w) : fmin(1, h[i].p);
        if (adj > run) run = adj; /* adjusted p-values never decrease along the order */
        int rej = !stopped && h[i].p <= (holm ? c->alpha * h[i].w / wleft : c->alpha);
        if (!rej && holm && !stopped) {
            stopped = 1;
            wstop = wleft;
        }
        double lvl = !holm ? c->alpha : c->alpha * h[i].w / (stopped ? wstop : wleft);
        wleft -= h[i].w;
        if (h[i].m) {
            h[i].m->rejected = rej;
            h[i].m->level = lvl;
            h[i].m->p_adj = holm ? run : adj;
        } else {
            h[i].f->rejected = rej;
            h[i].f->level = lvl;
            h[i].f->p_adj = holm ? run : adj;
        }
    }
    free(h);
    return 0;
}

/* ---- verdicts ---------------------------------------------------------------------- */

/* How much worse NEW is than BASE by a relative change rel (> 0: worse). */
static double worse(double rel, int higher_better) { return higher_better ? -rel : rel; }

/* The smallest slowdown one run a side decides: the threshold, or the run
 * noise it assumes (single_run_noise) where that is larger. Below it, an
 * estimate not shown is within how two runs of one stack differ (idle
 * kernels and collectives: a family's up to +10%; a BLAS kernel swap's
 * GEMM families +30% and more, docs/ci-gating.md). */
double gt_cmp_one_run_large(const gt_compare *c) {
    return fmax(c->opt.threshold, c->opt.single_run_noise);
}

/* Is rel an estimated slowdown one run a side would hold (its large size)? */
static int large_slowdown(const gt_compare *c, double rel, int higher_better) {
    return worse(rel, higher_better) >= gt_cmp_one_run_large(c);
}

/* From the estimate, its interval at the tested level and the correction:
 * moved (shown to differ, by the threshold or more), same (the interval
 * lies inside +-threshold), undecided (slower by the threshold or more, not
 * shown; only where can_undecide), else ambiguous. */
static gt_verdict judge(double rel, double lo, double hi, int rejected, int higher_better,
                        double thr, int can_undecide) {
    double slow = worse(rel, higher_better);
    if (rejected && fabs(rel) >= thr) return slow > 0 ? GT_VERDICT_SLOWER : GT_VERDICT_FASTER;
    if (lo > -thr && hi < thr) return GT_VERDICT_SAME;
    if (can_undecide && slow >= thr) return GT_VERDICT_UNDECIDED;
    return GT_VERDICT_AMBIGUOUS;
}

/* The gate can be undecided only where its noise is measured: pairs or runs
 * on both sides. One run a side assumes the noise and decides only large
 * changes (stated in the output). */
static int can_undecide(const gt_compare *c, gt_compare_method m) {
    return !c->opt.checks_only && (m == GT_METHOD_PAIRED || m == GT_METHOD_RUNS);
}

/* A sequential design over NEW runs keeps its baseline: only NEW grows. */
static int new_side_grows(const gt_compare *c) {
    return !c->opt.paired && c->opt.seq_max > 0;
}

/* more pairs (PAIRED) or runs on each side (RUNS; NEW's runs alone in a
 * sequential design over them) that would make the interval at `level`
 * narrower than |est| if the spread stays as measured */
static int more_needed(const gt_compare *c, gt_compare_method method, double sd, int nb, int nn,
                       double est, double level) {
    double target = fabs(est);
    if (!(target > 0) || !isfinite(sd)) return -1;
    if (method == GT_METHOD_PAIRED) {
        int n = gt_gs_n_needed(sd, c->opt.run_noise, target, level, nb + 1, nb + 1000);
        return n <= 0 || n > nb + 1000 ? -1 : n - nb;
    }
    double var = sd * sd + c->opt.run_noise * c->opt.run_noise;
    int kb = new_side_grows(c) ? 0 : 1; /* BASE's runs added with each NEW one */
    for (int k = 1; k <= 1000; k++) {
        double se = sqrt(var * (1.0 / (nb + kb * k) + 1.0 / (nn + k)));
        if (gt_gs_t_quantile2(level, nb + nn + (1 + kb) * k - 2) * se < target) return k;
    }
    return -1;
}

/* A sequential design that has looks left. */
static int before_last_look(const gt_compare *c) {
    return c->opt.seq_max > 0 && c->look < c->opt.seq_max;
}

/* The level a hypothesis tested at `level` on this look would be tested at
 * on the sequential design's last look: the same share of that look's alpha
 * (reports/gate_stats.h, gt_gs_look_alpha). */
static double last_look_level(const gt_compare *c, double level) {
    const gt_compare_options *o = &c->opt;
    double last = gt_gs_look_alpha((gt_gs_spending)o->spending, o->alpha, o->seq_max,
                                   o->seq_first, o->seq_max);
    return c->alpha > 0 && last > 0 ? level * last / c->alpha : level;
}

/* Would `needed` more pairs, judged at the last look's level, fit in the
 * pairs the design has left? Before its last look a member's own doubt
 * asks for the next pair only then: where the spread measured so far says
 * that even the last look would leave it undecided, the looks between
 * would only spend time (its family carries it at the last look). */
static int budget_decides(const gt_compare *c, int needed) {
    return needed > 0 && needed <= c->opt.seq_max - c->look;
}

/* More pairs (runs a side) within the design's reach: as many again as
 * there are (a CI job that doubles its pairs), and anything before the last
 * look of a sequential design. */
static int reach(const gt_compare *c, int reps) {
    /* a sequential design before its last look adds pairs while anything is
     * slower by its estimate: the spread of 4 or 5 pairs is too uncertain to
     * give up on a change that its budget might still decide */
    if (before_last_look(c)) return 1000;
    return reps;
}

/* An estimate beyond the threshold that the test could not show stays
 * UNDECIDED, however many pairs would decide it: "may ship" is said only of
 * what was shown to be no slower than the threshold or was not slower by its
 * estimate. Marked beyond reach (said as "too noisy to decide here") when more
 * than the design's reach would be needed, so that the reader knows to look for
 * a quieter machine rather than a few more pairs. */
static void mark_reach(const gt_compare *c, gt_verdict v, int needed, int reps, int *beyond) {
    *beyond = v == GT_VERDICT_UNDECIDED && !(needed > 0 && needed <= reach(c, reps));
}

/* One run a side's (method BLOCKS) ambiguous estimate, slower by its large
 * size or more (`slower`: large_slowdown), where it gates (`gates`: a
 * family, a metric in none): its run noise assumed, it is never said to
 * ship (hold_loaded on a loaded machine, hold_one_run after it, on any
 * machine). */
static int one_run_slowdown(gt_compare_method m, int gates, int slower, gt_verdict v) {
    return m == GT_METHOD_BLOCKS && gates && slower && v == GT_VERDICT_AMBIGUOUS;
}

/* On a loaded machine, runs not paired, with fewer than
 * GT_COMPARE_LOADED_RUNS runs on a side: a slowdown shown stays UNDECIDED
 * (held), and so does an ambiguous estimate where it gates (`gates`: a
 * family, a metric in none): between runs any (within the threshold, an
 * interval that is not); one run a side, which assumes its run noise so
 * that everything it gates is ambiguous there, one slower by its large
 * size or more (`slower`: "may ship" is never said of it). A neighbour can move
 * a whole run of one side either way, so one or two runs decide nothing
 * there. Not where the level moved GT_COMPARE_LOADED_DECIDE_US a call or
 * more (`shift_us`): more than a neighbour's delays were seen to add.
 * Returns the runs still needed, NEW's alone in a design over NEW runs (-1:
 * BASE lacks runs); 0: not held. */
static int hold_loaded(const gt_compare *c, gt_compare_method m, int nb, int nn, int gates,
                       int slower, double shift_us, gt_verdict *v) {
    int doubt = *v == GT_VERDICT_SLOWER ||
                (gates && m == GT_METHOD_RUNS && *v == GT_VERDICT_AMBIGUOUS) ||
                one_run_slowdown(m, gates, slower, *v);
    if (!doubt || m == GT_METHOD_PAIRED || !gt_cmp_loaded_by_other(c) || c->opt.checks_only ||
        shift_us >= GT_COMPARE_LOADED_DECIDE_US)
        return 0;
    int least = GT_COMPARE_LOADED_RUNS;
    int short_b = nb < least ? least - nb : 0, short_n = nn < least ? least - nn : 0;
    if (!short_b && !short_n) return 0;
    *v = GT_VERDICT_UNDECIDED;
    if (new_side_grows(c)) return short_n ? short_n : -1;
    return short_b > short_n ? short_b : short_n;
}

/* Is m a time whose samples carry no record of their waits for a CPU (a
 * training step: shift_us_of)? */
static int unrecorded_time(const cmp_metric *m) {
    return gt_cmp_us_per_unit(m->unit) > 0 && !m->waits_known;
}

/* Is every member of f such a time? */
static int family_unrecorded(const cmp_family *f) {
    for (size_t i = 0; i < f->n; i++)
        if (!unrecorded_time(f->mem[i])) return 0;
    return f->n > 0;
}

/* Did a run of either side of m see another process take a core (its
 * result's node record: cmp_metric.neighbour)? */
static int neighbour_seen(const cmp_metric *m) {
    return m->neighbour[0] || m->neighbour[1];
}

static int family_neighbour_seen(const cmp_family *f) {
    for (size_t i = 0; i < f->n; i++)
        if (neighbour_seen(f->mem[i])) return 1;
    return 0;
}

/* A doubt a neighbour may have made: slower shown or undecided, or where it
 * gates ambiguous and slower (`worse_by`) by the threshold (one run a side:
 * by its large size, gt_cmp_one_run_large). */
static int slow_doubt(const gt_compare *c, gt_compare_method m, int gates, double worse_by,
                      gt_verdict v) {
    double size = m == GT_METHOD_BLOCKS ? gt_cmp_one_run_large(c) : c->opt.threshold;
    return v == GT_VERDICT_SLOWER || v == GT_VERDICT_UNDECIDED ||
           (gates && worse_by >= size && v == GT_VERDICT_AMBIGUOUS);
}

/* A time with no record of its waits for a CPU (`unrecorded`), on a loaded
 * machine or in a run whose node record saw another process take a core
 * (`seen`), runs not paired: a slowdown shown, or estimated (`worse_by`) by
 * the threshold (one run a side: by its large size) where it gates, stays
 * UNDECIDED however many runs a side holds. Nothing
 * takes the neighbour's share off its level, and one side's runs can all
 * have had the neighbour while the other's had none (a baseline kept on a
 * quiet machine, candidate runs beside a busy process: every training step
 * +18% to +2,000%, shown from 5 runs against 3; docs/ci-gating.md). A run
 * on a quiet machine decides it; more runs here do not. Returns its
 * GT_HELD_UNRECORDED (a loaded machine) or GT_HELD_NEIGHBOUR, 0: not held. */
static int hold_unrecorded(const gt_compare *c, gt_compare_method m, int unrecorded, int seen,
                           int gates, double worse_by, gt_verdict *v) {
    int loaded = gt_cmp_loaded_by_other(c);
    if (!unrecorded || !slow_doubt(c, m, gates, worse_by, *v) || m == GT_METHOD_PAIRED ||
        !(loaded || seen) || c->opt.checks_only)
        return 0;
    *v = GT_VERDICT_UNDECIDED;
    return loaded ? GT_HELD_UNRECORDED : GT_HELD_NEIGHBOUR;
}

/* Is a metric of this unit a speed (a time, or a rate per second), which a
 * neighbour moves? Bytes, steps and fractions it does not. */
static int speed_unit(const char *unit) {
    size_t n = unit ? strlen(unit) : 0;
    return gt_cmp_us_per_unit(unit) > 0 || (n > 2 && strcmp(unit + n - 2, "/s") == 0);
}

static int family_speed(const cmp_family *f) {
    return f->n > 0 && speed_unit(f->mem[0]->unit);
}

/* The slowdown an interval [lo, hi] of rel shows at least, as a factor
 * (NEW's time over BASE's; a rate's BASE over NEW): its end nearest no
 * change. NAN where there is no interval. */
static double least_slowdown(double lo, double hi, int higher_better) {
    if (!higher_better) return 1.0 + lo;
    return 1.0 + hi > 0 ? 1.0 / (1.0 + hi) : INFINITY;
}

/* A speed (`speed`) of runs not paired whose NEW runs ran on a loaded
 * machine far more often than BASE's (c->lopsided 2: a baseline kept on a
 * quiet machine, candidate runs beside a busy process), slower shown, or
 * by the threshold (one run a side: by its large size) where it gates,
 * stays UNDECIDED however many runs: taking each block's wait off leaves
 * what the neighbour slowed without making it wait (a core's other
 * hardware thread, the caches, memory bandwidth: the GEMM and convolution
 * families +6-9% there, conv2d_bwd shown slower). NEW's runs on a quiet
 * machine decide it, or BASE's beside the same load; more runs here do not.
 * Slower NEW beside a loaded BASE (lopsided 1) is judged: the load slowed
 * the other side; so is a slowdown shown beyond what a neighbour makes
 * (`least_factor`, least_slowdown, above GT_STATE_NEIGHBOUR_MAX).
 * Returns GT_HELD_LOPSIDED, 0: not held. */
static int hold_lopsided(const gt_compare *c, gt_compare_method m, int speed, int gates,
                         double worse_by, double least_factor, gt_verdict *v) {
    if (c->lopsided != 2 || !speed || m == GT_METHOD_PAIRED || c->opt.checks_only) return 0;
    if (least_factor > GT_STATE_NEIGHBOUR_MAX) return 0;
    if (!slow_doubt(c, m, gates, worse_by, *v)) return 0;
    *v = GT_VERDICT_UNDECIDED;
    return GT_HELD_LOPSIDED;
}

/* One run a side: its ambiguous slowdown (one_run_slowdown) stays
 * UNDECIDED (held): the side's run-to-run spread is assumed
 * (single_run_noise), so every such interval holds no change (a BLAS kernel
 * swap: the GEMM families +25-45% [-30%, +150%]; an unchanged stack's within
 * +-10%). Asked after hold_loaded, so on a loaded machine it holds what that
 * rule let out: members that moved GT_COMPARE_LOADED_DECIDE_US a call or more
 * (calls of 60 ms, 10% slower) are no more shown than on a quiet machine.
 * Returns the runs a side still needed (GT_COMPARE_LOADED_RUNS measure their
 * spread), 0 when not held. */
static int hold_one_run(const gt_compare *c, gt_compare_method m, int gates, int slower,
                        gt_verdict *v) {
    if (!one_run_slowdown(m, gates, slower, *v) || c->opt.checks_only) return 0;
    *v = GT_VERDICT_UNDECIDED;
    return GT_COMPARE_LOADED_RUNS - 1;
}

/* A metric one of whose sides timed a neighbour in every run while the
 * other timed the stack in every run, or both sides the neighbour in every
 * run (starved_hold: fewer than GT_STATE_STARVED_LIGHT batches of a run
 * waited under half their time for a CPU), judged slower or undecided, or
 * slower by the threshold by its estimate,
 * stays UNDECIDED (held): its level there is the neighbour's (a kernel of
 * two threads, one of them preempted: 200 us a call -> 10,000), whatever
 * the rules for a loaded machine let through. Faster is left as judged.
 * Returns its GT_HELD_STARVED_* (1 more run of that side would decide), 0:
 * not held. */
static int hold_starved(const gt_compare *c, const cmp_metric *m, int slower, gt_verdict *v) {
    int doubt = *v == GT_VERDICT_SLOWER || *v == GT_VERDICT_UNDECIDED ||
                (*v == GT_VERDICT_AMBIGUOUS && slower);
    int held = starved_hold(m);
    if (!doubt || !held || c->opt.checks_only) return 0;
    *v = GT_VERDICT_UNDECIDED;
    return held;
}

/* How far a member's level moved, in microseconds a call. NAN: not a time,
 * or a time whose samples carry no record of their wait for a CPU: only the
 * record can show that a neighbour did not add the shift (a training step of
 * 0.34 ms took 16.7 ms a step beside a busy process: its threads preempted at
 * each barrier), so on a loaded machine such a time is held however far it
 * moved. */
static double shift_us_of(const cmp_metric *m) {
    if (!m->waits_known) return NAN;
    return fabs(m->a.new_lvl - m->a.base_lvl) * gt_cmp_us_per_unit(m->unit);
}

/* A family's typical member shift: the median of its members' (a slowdown
 * of the stack moves most of them; the neighbour's delay, a few). */
static double family_shift_us(const cmp_family *f) {
    double *x = malloc(f->n * sizeof *x);
    if (!x) return NAN;
    size_t k = 0;
    for (size_t i = 0; i < f->n; i++) {
        double s = shift_us_of(f->mem[i]);
        if (isfinite(s)) x[k++] = s;
    }
    double med = k ? gt_median(x, k) : NAN;
    free(x);
    return med;
}

/* A family shown slower on a side of one run by one member alone (the
 * others within the threshold) stays UNDECIDED: one case can sit in a
 * slower state for a whole run (docs/ci-gating.md, "Adaptive candidate
 * runs"), which a side of one run cannot show; a stack's change moves more
 * of its family. Returns the runs that would decide (1), 0 when not held. */
static int hold_lone_member(const gt_compare *c, cmp_family *f) {
    if (f->verdict != GT_VERDICT_SLOWER || f->method != GT_METHOD_RUNS || f->moved >= 2 ||
        (f->nb != 1 && f->nn != 1) || c->opt.checks_only)
        return 0;
    f->verdict = GT_VERDICT_UNDECIDED;
    return 1;
}

/* The rules that hold a family's verdict UNDECIDED, in hold_metric's order,
 * and a side of one run's lone member. Returns 1 when one held it (f->held,
 * f->needed set). */
static int hold_family(const gt_compare *c, cmp_family *f) {
    /* the members' shifts matter only where a loaded machine may hold it */
    double shift = gt_cmp_loaded_by_other(c) ? family_shift_us(f) : NAN;
    int slower = large_slowdown(c, f->rel, f->higher_better);
    int held = hold_unrecorded(c, f->method, family_unrecorded(f), family_neighbour_seen(f), 1,
                               worse(f->rel, f->higher_better), &f->verdict);
    if (!held)
        held = hold_lopsided(c, f->method, family_speed(f), 1, worse(f->rel, f->higher_better),
                             least_slowdown(f->lo, f->hi, f->higher_better), &f->verdict);
    if (held) {
        f->held = held;
        f->needed = 0;
    } else if ((held = hold_loaded(c, f->method, f->nb, f->nn, 1, slower, shift, &f->verdict))) {
        f->held = GT_HELD_LOADED;
        f->needed = held;
        f->beyond_reach = held < 0;
    } else if ((held = hold_one_run(c, f->method, 1, slower, &f->verdict)) != 0) {
        f->held = GT_HELD_ONE_RUN;
        f->needed = held;
    } else if ((held = hold_lone_member(c, f)) != 0) {
        f->held = GT_HELD_ONE_MEMBER;
        f->needed = held;
    }
    return f->held != 0;
}

static void decide_family(const gt_compare *c, cmp_family *f) {
    if (isnan(f->p)) return;
    double t = gt_gs_t_quantile2(f->level, f->df);
    f->lo = expm1(f->est - t * f->se);
    f->hi = expm1(f->est + t * f->se);
    f->detectable = fmax(expm1(t * f->se), c->opt.threshold);
    f->verdict = judge(f->rel, f->lo, f->hi, f->rejected, f->higher_better, c->opt.threshold,
                       can_undecide(c, f->method));
    if (!hold_family(c, f) && f->verdict == GT_VERDICT_UNDECIDED) {
        /* the replicates' own spread: more_needed adds the floor itself */
        double sd = f->sd;
        int n = f->method == GT_METHOD_PAIRED ? f->reps : f->nb;
        f->needed = more_needed(c, f->method, sd, n, f->nn, f->est, f->level);
        int reps = f->method == GT_METHOD_PAIRED ? f->reps : (f->nb > f->nn ? f->nb : f->nn);
        mark_reach(c, f->verdict, f->needed, reps, &f->beyond_reach);
    }
}

/* Does either side hold one run of m (its run-to-run spread there not
 * measured)? One run a side; runs against one run. */
static int one_run_side(const assessment *a, const cmp_metric *m) {
    return a->method == GT_METHOD_BLOCKS ||
           (a->method == GT_METHOD_RUNS && (m->runs_b == 1 || m->runs_n == 1));
}

/* An UNDECIDED metric: the pairs (runs) that would decide it, and whether
 * they are beyond the design's reach. Before a sequential design's last
 * look a member (`undecide` there) whose doubt even the last look would
 * not settle is judged again without it: its family carries it now, as it
 * would there. */
static void metric_undecided(const gt_compare *c, cmp_metric *m, int rejected, int undecide) {
    const assessment *a = &m->a;
    double sd = a->method == GT_METHOD_PAIRED
                    ? sqrt(fmax(0, a->se_rel * a->se_rel * m->runs_b -
                                       c->opt.run_noise * c->opt.run_noise))
                    : sqrt(a->spread) / fabs(a->base_lvl);
    double est = a->method == GT_METHOD_PAIRED ? log1p(a->rel) : a->rel;
    if (undecide && m->in_family &&
        !budget_decides(c, more_needed(c, a->method, sd, m->runs_b, m->runs_n, est,
                                       last_look_level(c, m->level)))) {
        m->verdict =
            judge(a->rel, m->lo, m->hi, rejected, m->higher_better, c->opt.threshold, 0);
        m->needed = 0;
        return;
    }
    m->needed = more_needed(c, a->method, sd, m->runs_b, m->runs_n, est, m->level);
    int reps = a->method == GT_METHOD_PAIRED ? m->runs_b
                                             : (m->runs_b > m->runs_n ? m->runs_b : m->runs_n);
    mark_reach(c, m->verdict, m->needed, reps, &m->beyond_reach);
}

/* How far a metric moved either way, as a factor (1: not at all). */
static double change_factor(double rel) {
    return rel > -1 ? fmax(1 + rel, 1 / (1 + rel)) : INFINITY;
}

/* A side of one run: a member shown slower beyond GT_COMPARE_ALONE_FACTOR
 * while none of its families moved, by less than GT_COMPARE_ALONE_DECIDE,
 * is UNDECIDED: one case of a run can sit that far off for the whole run,
 * and more runs show whether it stays. Returns GT_HELD_ONE_MEMBER, 0: not
 * held. */
static int hold_alone(const gt_compare *c, const cmp_metric *m, gt_verdict *v) {
    if (!one_run_side(&m->a, m) || !m->in_family || m->family_moved || *v != GT_VERDICT_SLOWER ||
        !(change_factor(m->a.rel) < GT_COMPARE_ALONE_DECIDE) || c->opt.checks_only)
        return 0;
    *v = GT_VERDICT_UNDECIDED;
    return GT_HELD_ONE_MEMBER;
}

/* The rules that hold a metric's verdict UNDECIDED whatever its interval
 * says, in order: a member alone on a side of one run, a side that timed
 * only the neighbour, a time with no wait record on a loaded machine, a
 * speed whose NEW runs ran beside a neighbour and BASE's did not, a loaded
 * machine with few runs, one run a side's large estimate. Returns 1 when one held it (m->held, m->needed
 * set). */
static int hold_metric(const gt_compare *c, cmp_metric *m, double shift_us) {
    const assessment *a = &m->a;
    int slower = large_slowdown(c, a->rel, m->higher_better);
    int threshold_slower = worse(a->rel, m->higher_better) >= c->opt.threshold;
    int held = hold_alone(c, m, &m->verdict);
    if (held) {
        m->held = held;
        m->needed = GT_COMPARE_LOADED_RUNS - 1;
    } else if ((held = hold_starved(c, m, threshold_slower, &m->verdict))) {
        m->held = held;
        m->needed = 1;
    } else if ((held =
                    hold_unrecorded(c, a->method, unrecorded_time(m), neighbour_seen(m),
                                    !m->in_family, worse(a->rel, m->higher_better), &m->verdict)) ||
               (held =
                    hold_lopsided(c, a->method, speed_unit(m->unit), !m->in_family,
                                  worse(a->rel, m->higher_better),
                                  least_slowdown(m->lo, m->hi, m->higher_better), &m->verdict))) {
        m->held = held;
        m->needed = 0;
    } else if ((held = hold_loaded(c, a->method, m->runs_b, m->runs_n, !m->in_family, slower,
                                   shift_us, &m->verdict))) {
        m->held = GT_HELD_LOADED;
        m->needed = held;
        m->beyond_reach = held < 0;
    } else if ((held = hold_one_run(c, a->method, !m->in_family, slower, &m->verdict))) {
        m->held = GT_HELD_ONE_RUN;
        m->needed = held;
    }
    return held != 0;
}

/* A metric's interval: on the log scale for pairs (its se is a log one),
 * linear for runs and blocks (se relative to BASE's level). */
static void decide_metric(const gt_compare *c, cmp_metric *m) {
    if (!metric_tested(m)) return;
    const assessment *a = &m->a;
    double t = gt_gs_t_quantile2(m->level, a->df);
    if (isnan(a->rel) || isnan(a->se_rel)) {
        m->verdict = a->large ? GT_VERDICT_AMBIGUOUS : GT_VERDICT_SAME;
        return;
    }
    if (a->method == GT_METHOD_PAIRED) {
        double mean = log1p(a->rel);
        m->lo = expm1(mean - t * a->se_rel);
        m->hi = expm1(mean + t * a->se_rel);
    } else {
        m->lo = a->rel - t * a->se_rel;
        m->hi = a->rel + t * a->se_rel;
    }
    m->detectable = fmax(t * a->se_rel, c->opt.threshold);
    /* a member's own doubt is carried by its family's test, except before a
     * sequential design's last look, where it asks for the next pair: a
     * change of one member (an op with one gated shape) moves its class too
     * little for the class to show it. Not in a design over NEW runs: a
     * member's interval between a few runs a side at its share of Holm's
     * alpha is far wider than any change worth a look (+-100% and more on
     * the collectives), so its doubt would ask for every look. */
    int undecide = can_undecide(c, a->method) &&
                   (!m->in_family || (before_last_look(c) && c->opt.paired));
    /* A side of one run (one run a side, or a baseline directory against
     * one candidate run: history --gate): a member moves only with one of
     * its families (a gatekeeper: the family is tested first). One case of
     * a run can sit in a state twice as slow for the whole run
     * (docs/ci-gating.md), and a side of one run cannot show it: the other
     * side's spread between runs stands for its own; a change of the stack
     * moves its op or its class, one case's state does not. Fewer
     * rejections than Holm's alone: alpha holds. Beyond the factor too
     * where the sides ran in different machine states all along: the state
     * alone can move a collective by more (docs/ci-gating.md, "The
     * collectives' rounds"). On a loaded machine (another process's load,
     * not the stack's own), however many runs, unless paired (a pair's two
     * runs share the load, and a loaded pool's power rests on its
     * members), where its level moved by less than a neighbour's delays
     * add (GT_COMPARE_LOADED_SHIFT_US): a neighbour can slow all of one
     * member's rounds in a run, unseen by the wait probe (docs/ci-gating.md,
     * "Adaptive candidate runs"). */
    int rejected = m->rejected;
    double factor = change_factor(a->rel);
    int lone_run = one_run_side(a, m) &&
                   (factor < GT_COMPARE_ALONE_FACTOR || m->state.outcome == GT_STATE_CONFOUNDED);
    double shift_us = shift_us_of(m);
    int loaded = gt_cmp_loaded_by_other(c) && a->method != GT_METHOD_PAIRED &&
                 !(shift_us >= GT_COMPARE_LOADED_SHIFT_US);
    if (m->in_family && !m->family_moved && rejected && (lone_run || loaded)) {
        rejected = 0;
        m->alone = fabs(a->rel) >= c->opt.threshold;
    }
    m->verdict = judge(a->rel, m->lo, m->hi, rejected, m->higher_better, c->opt.threshold,
                       undecide);
    if (!hold_metric(c, m, shift_us) && m->verdict == GT_VERDICT_UNDECIDED)
        metric_undecided(c, m, rejected, undecide);
}

int gt_cmp_families(gt_compare *c) {
    for (size_t i = 0; i < c->nres; i++) {
        cmp_result *r = &c->res[i];
        if (!r->base || !r->nw) continue;
        for (size_t j = 0; j < r->nm; j++)
            if (joinable(&r->m[j]) && add_to_families(c, r, &r->m[j])) return -1;
    }
    prune_families(c);
    for (size_t i = 0; i < c->nfam; i++)
        if (test_family(c, &c->fam[i])) return -1;
    if (correct(c)) return -1;
    for (size_t i = 0; i < c->nfam; i++) {
        cmp_family *f = &c->fam[i];
        decide_family(c, f);
        if (f->verdict == GT_VERDICT_SLOWER || f->verdict == GT_VERDICT_FASTER)
            for (size_t j = 0; j < f->n; j++) f->mem[j]->family_moved = 1;
    }
    for (size_t i = 0; i < c->nres; i++)
        for (size_t j = 0; j < c->res[i].nm; j++) decide_metric(c, &c->res[i].m[j]);
    return 0;
}

void gt_cmp_families_free(gt_compare *c) {
    for (size_t i = 0; i < c->nfam; i++) family_free(&c->fam[i]);
    free(c->fam);
    c->fam = NULL;
    c->nfam = 0;
}

/* ---- what the gate says ------------------------------------------------------------ */

int gt_cmp_metric_undecided(const gt_compare *c, const cmp_metric *m) {
    return !c->opt.checks_only && m->verdict == GT_VERDICT_UNDECIDED && metric_tested(m);
}

/* Only hypotheses that can gate are ever undecided (can_undecide), and the
 * counts hold them. */
int gt_cmp_undecided(const gt_compare *c) {
    return c->counts.undecided + c->counts.families_undecided > 0;
}

static const char *unit_of_reps(const gt_compare *c) {
    if (c->opt.paired) return "pairs";
    return new_side_grows(c) ? "NEW runs" : "runs on each side";
}

/* What the undecided need (gt_cmp_print_needed): how many are undecided
 * (count), held by a rule (held), held until a quiet machine runs them
 * (quiet), BASE short of runs (short_base), one over 1000 (over), and the
 * most runs one needs (most, who, what; the quiet ones left out). */
typedef struct {
    int count, held, quiet, short_base, over, most;
    const char *who, *what;
} needs;

static void need_one(needs *n, int held, int needed, const char *who, const char *what) {
    n->count++;
    n->held += held != 0;
    if (held == GT_HELD_UNRECORDED || held == GT_HELD_NEIGHBOUR || held == GT_HELD_LOPSIDED) {
        n->quiet++;
        return;
    }
    n->short_base |= held && needed < 0;
    if (needed < 0) n->over = 1;
    if (needed > n->most || !n->who) {
        n->most = needed > n->most ? needed : n->most;
        n->who = who;
        n->what = what;
    }
}

static needs gather_needs(const gt_compare *c) {
    needs n = {.what = ""};
    for (size_t i = 0; i < c->nfam; i++) {
        const cmp_family *x = &c->fam[i];
        if (x->verdict == GT_VERDICT_UNDECIDED) need_one(&n, x->held, x->needed, x->name, x->stem);
    }
    for (size_t i = 0; i < c->nres; i++)
        for (size_t j = 0; j < c->res[i].nm; j++) {
            const cmp_metric *m = &c->res[i].m[j];
            if (gt_cmp_metric_undecided(c, m))
                need_one(&n, m->held, m->needed, c->res[i].label, m->name);
        }
    return n;
}

/* Why the undecided wait for a quiet machine, for the needed line. */
static const char *quiet_why(const gt_compare *c) {
    if (c->lopsided == 2)
        return "NEW's runs ran beside another process and BASE's did not, or times with no "
               "record of their waits for a CPU";
    return "times with no record of their waits for a CPU";
}

void gt_cmp_print_needed(const gt_compare *c, FILE *f) {
    if (!gt_cmp_undecided(c)) return;
    needs n = gather_needs(c);
    if (n.quiet == n.count) {
        fprintf(f,
                "needed: a run on a quiet machine for the %d undecided (%s, which no number "
                "of runs beside the load decides)\n",
                n.count, quiet_why(c));
        return;
    }
    char also[96] = "";
    if (n.quiet)
        snprintf(also, sizeof also, "; %d more need a quiet machine (%s)", n.quiet,
                 c->lopsided == 2 ? "NEW's runs beside a neighbour" : "no wait record");
    int count = n.count - n.quiet;
    if (n.short_base)
        fprintf(f,
                "needed: %d or more baseline runs on a loaded machine (BASE holds fewer), "
                "then NEW's runs, for the %d undecided%s\n",
                GT_COMPARE_LOADED_RUNS, count, also);
    else if (n.over)
        fprintf(f,
                "needed: more than 1000 %s for at least one of the %d undecided (its spread is "
                "too wide for its estimate): %s%s or raise --threshold%s\n",
                unit_of_reps(c), count,
                new_side_grows(c) ? "keep more baseline runs (their share of the spread stays), "
                                  : "",
                gt_cmp_loaded_by_other(c) ? "run both sides on a machine left to the job (a "
                                            "neighbour widens the spread)"
                                          : "reduce the noise",
                also);
    else
        fprintf(f,
                "needed: about %d more %s would decide all %d undecided (%s; the most: %s %s)%s\n",
                n.most, unit_of_reps(c), count,
                n.held - n.quiet == count ? "held by the rules for few runs, each line says which"
                                          : "from their measured spread, if the estimates hold",
                n.who ? n.who : "?", n.what, also);
}

static const char *verdict_word(gt_verdict v) {
    switch (v) {
    case GT_VERDICT_SLOWER:
        return "SLOWER";
    case GT_VERDICT_UNDECIDED:
        return "UNDECIDED";
    default:
        return gt_verdict_name(v);
    }
}

static const char *members_word(const cmp_family *x) {
    if (x->is_class) return "members";
    /* a collective's family spans its sizes, dtypes and ops: members */
    if (strncmp(x->name, "collectives/", 12) == 0) return "members";
    if (strncmp(x->name, "kernels/", 8) == 0) return "shapes";
    return "cases";
}

void gt_cmp_print_held(const gt_compare *c, int held, int needed, FILE *f) {
    if (held >= GT_HELD_STARVED_BASE && held <= GT_HELD_STARVED_BOTH)
        fprintf(f,
                "; every timed batch %s ran waited most of its time for a CPU (another "
                "process), so its level there is the neighbour's, not the stack's: a run "
                "on a machine left to it would measure it",
                held == GT_HELD_STARVED_BOTH  ? "BASE and NEW"
                : held == GT_HELD_STARVED_NEW ? "NEW"
                                              : "BASE");
    else if (held == GT_HELD_UNRECORDED)
        fprintf(f,
                "; a time with no record of its waits for a CPU, on a loaded machine (%.1f%% "
                "of BASE's and %.1f%% of NEW's timed blocks waited): no number of runs here "
                "takes the neighbour's share off, a run on a quiet machine decides it",
                100 * c->busy_share[0], 100 * c->busy_share[1]);
    else if (held == GT_HELD_NEIGHBOUR)
        fprintf(f, "; a time with no record of its waits for a CPU, and while a run of it ran "
                   "other processes kept a core busy with none idle (its cpu_others_cores, "
                   "cpu_idle_cores): no number of runs here takes the neighbour's share off, a "
                   "run on a quiet machine decides it");
    else if (held == GT_HELD_LOPSIDED)
        fprintf(f,
                "; NEW's runs ran on a loaded machine (%d of %d) and BASE's did not (%d of "
                "%d): a neighbour slows what it does not make wait, so no number of runs here "
                "decides it, NEW's runs on a quiet machine do",
                c->runs_loaded[1], c->runs_judged[1], c->runs_loaded[0], c->runs_judged[0]);
    else if (held == GT_HELD_ONE_MEMBER)
        fprintf(f, "; slower by one member alone, on a side of one run (one case can sit in a "
                   "slower state for a whole run): %d more %s would decide",
                needed, unit_of_reps(c));
    else if (held == GT_HELD_ONE_RUN)
        fprintf(f,
                "; one run a side assumes how runs differ (%.3g%%), so it does not decide a "
                "slowdown it cannot show: %d more %s would measure it",
                100 * c->opt.single_run_noise, needed, unit_of_reps(c));
    else if (needed > 0)
        fprintf(f, "; on a loaded machine fewer than %d runs a side do not decide: %d more %s "
                   "would",
                GT_COMPARE_LOADED_RUNS, needed, unit_of_reps(c));
    else
        fprintf(f, "; on a loaded machine fewer than %d runs a side do not decide: keep %d or "
                   "more baseline runs",
                GT_COMPARE_LOADED_RUNS, GT_COMPARE_LOADED_RUNS);
}

static void print_family(const gt_compare *c, const cmp_family *x, FILE *f) {
    char reps[64];
    if (x->method == GT_METHOD_PAIRED)
        snprintf(reps, sizeof reps, "%d pairs", x->reps);
    else if (x->method == GT_METHOD_RUNS)
        snprintf(reps, sizeof reps, "%d+%d runs", x->nb, x->nn);
    else
        snprintf(reps, sizeof reps, "one run a side");
    fprintf(f, "  %-9s %s %s [topology %s, backend %s]: %zu %s x %s: %+.1f%% [%+.1f%%, %+.1f%%], "
               "%d of %zu moved",
            verdict_word(x->verdict), x->name, x->stem, x->topology, x->backend, x->n,
            members_word(x), reps, 100 * x->rel, 100 * x->lo, 100 * x->hi, x->moved, x->n);
    if (x->held)
        gt_cmp_print_held(c, x->held, x->needed, f);
    else if (x->beyond_reach && x->needed > 0)
        fprintf(f, "; too noisy for %.3g%% here: about %d more %s would decide", 100 * c->opt.threshold,
                x->needed, unit_of_reps(c));
    else if (x->beyond_reach)
        fprintf(f, "; too noisy for %.3g%% here: over 1000 more %s", 100 * c->opt.threshold,
                unit_of_reps(c));
    else if (x->verdict == GT_VERDICT_UNDECIDED)
        fprintf(f, "; about %d more %s would decide", x->needed, unit_of_reps(c));
    fprintf(f, "\n");
}

void gt_cmp_print_families(const gt_compare *c, FILE *f, size_t cap) {
    if (!c->nfam) return;
    int v[GT_VERDICT_COUNT] = {0};
    for (size_t i = 0; i < c->nfam; i++) v[c->fam[i].verdict]++;
    fprintf(f,
            "\nfamilies (a family's members pooled: an op over its shapes, a class of ops, a "
            "collective over its sizes):\n  %zu families: %d slower, %d undecided, %d faster, %d "
            "ambiguous, %d same (interval inside +-%.3g%%)\n",
            c->nfam, v[GT_VERDICT_SLOWER], v[GT_VERDICT_UNDECIDED], v[GT_VERDICT_FASTER],
            v[GT_VERDICT_AMBIGUOUS], v[GT_VERDICT_SAME], 100 * c->opt.threshold);
    /* what blocks first, then what moved, then the doubtful; with a cap (the
     * default output) the slower and undecided ones are left to the list of
     * regressions at the end, where a CI log shows them, and not said twice */
    static const gt_verdict order[] = {GT_VERDICT_SLOWER, GT_VERDICT_UNDECIDED, GT_VERDICT_FASTER,
                                       GT_VERDICT_AMBIGUOUS};
    size_t shown = 0, hidden = 0;
    if (cap && gt_cmp_family_regressions(c, NULL))
        fprintf(f, "  (the slower and undecided ones lead the list of regressions below)\n");
    for (size_t o = cap && !c->opt.checks_only ? 2 : 0; o < sizeof order / sizeof order[0]; o++)
        for (size_t i = 0; i < c->nfam; i++) {
            if (c->fam[i].verdict != order[o]) continue;
            /* by default the doubtful ones only where a change may hide */
            if (cap && order[o] == GT_VERDICT_AMBIGUOUS) continue;
            if (cap && shown >= cap) {
                hidden++;
                continue;
            }
            print_family(c, &c->fam[i], f);
            shown++;
        }
    if (hidden) fprintf(f, "  ... and %zu more of them (--verbose lists every family)\n", hidden);
}

int gt_cmp_family_regressions(const gt_compare *c, FILE *f) {
    if (c->opt.checks_only) return 0;
    int n = 0;
    for (size_t i = 0; i < c->nfam; i++) {
        const cmp_family *x = &c->fam[i];
        if (x->verdict != GT_VERDICT_SLOWER && x->verdict != GT_VERDICT_UNDECIDED) continue;
        n++;
        if (f) print_family(c, x, f);
    }
    return n;
}

void gt_cmp_print_rules(const gt_compare *c, FILE *f) {
    if (c->opt.correction == GT_CORRECTION_HOLM && c->nfam)
        fprintf(f, "alpha %.3g over all families and metrics (weighted Holm: the families "
                   "%.0f%% of the weight)",
                c->alpha, 100 * GT_COMPARE_FAMILY_SHARE);
    else if (c->opt.correction == GT_CORRECTION_HOLM)
        fprintf(f, "alpha %.3g over all metrics (Holm)", c->alpha);
    else
        fprintf(f, "alpha %.3g for each family and metric (no correction)", c->alpha);
    if (c->opt.seq_max > 0)
        fprintf(f, "; sequential look at %d %s of %d..%d (%s spending of alpha %.3g)", c->look,
                c->opt.paired ? "pairs" : "NEW runs", c->opt.seq_first, c->opt.seq_max,
                c->opt.spending == GT_GS_SPEND_OBRIEN_FLEMING ? "O'Brien-Fleming" : "Pocock",
                c->opt.alpha);
}


void gt_cmp_junit_families(const gt_compare *c, FILE *f) {
    if (!c->nfam) return;
    int fails = 0;
    for (size_t i = 0; i < c->nfam; i++)
        fails += c->fam[i].verdict == GT_VERDICT_SLOWER ||
                 c->fam[i].verdict == GT_VERDICT_UNDECIDED;
    if (c->opt.checks_only) fails = 0;
    fprintf(f, "  <testsuite name=\"families\" tests=\"%zu\" failures=\"%d\">\n", c->nfam, fails);
    for (size_t i = 0; i < c->nfam; i++) {
        const cmp_family *x = &c->fam[i];
        fprintf(f, "    <testcase classname=\"families.");
        gt_xml_escape(f, x->name);
        fprintf(f, "\" name=\"");
        gt_xml_escape(f, x->stem);
        fprintf(f, " [topology ");
        gt_xml_escape(f, x->topology);
        fprintf(f, ", backend ");
        gt_xml_escape(f, x->backend);
        fprintf(f, "]\"");
        int fail = !c->opt.checks_only && (x->verdict == GT_VERDICT_SLOWER ||
                                           x->verdict == GT_VERDICT_UNDECIDED);
        if (!fail) {
            fprintf(f, "/>\n");
            continue;
        }
        fprintf(f, ">\n      <failure type=\"%s\" message=\"%s: %+.1f%% [%+.1f%%, %+.1f%%] over %zu "
                   "members",
                x->verdict == GT_VERDICT_SLOWER ? "slower" : "undecided",
                x->verdict == GT_VERDICT_SLOWER ? "slower" : "undecided", 100 * x->rel,
                100 * x->lo, 100 * x->hi, x->n);
        if (x->verdict == GT_VERDICT_UNDECIDED && x->needed > 0)
            fprintf(f, "; about %d more %s would decide", x->needed, unit_of_reps(c));
        fprintf(f, "\"/>\n    </testcase>\n");
    }
    fprintf(f, "  </testsuite>\n");
}

double gt_cmp_us_per_unit(const char *unit) {
    if (!unit) return 0;
    if (strcmp(unit, "ns") == 0) return 1e-3;
    if (strcmp(unit, "us") == 0) return 1;
    if (strcmp(unit, "ms") == 0) return 1e3;
    if (strcmp(unit, "s") == 0) return 1e6;
    return 0;
}
