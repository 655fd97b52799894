/* compare: the CI gate (reports/compare.h, docs/ci-gating.md). */
#define _GNU_SOURCE
#include "reports/compare.h"
#include "reports/compare_impl.h"
#include "reports/gate_stats.h"

#include "engine/fileio.h"
#include "engine/stats.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <libgen.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reports/profile.h"
#include "reports/read.h"
#include "reports/report.h"

/* Params that are measured or derived, not chosen: two runs of the same case
 * on another stack legitimately differ in them, so they must not break the
 * match. Their changes are still shown as notes under the result. */
const char *const gt_compare_excluded_params[] = {
    "backend_detail",        /* the backend's description: library versions, threads */
    "backend_notes",         /* the backend's run-time choices (cuDNN algorithms) */
    "final_params_fnv1a64",  /* digest of the final weights: a numerics change shows here */
    "final_weights_fnv1a64", /* the same without the state tensors (mlp, convnet) */
    "num_params",            /* derived from the model config */
    "source_entropy",        /* measured on the synthetic source */
    "injected_delay_us",     /* run --inject-delay: the slowed case must meet its baseline */
    "injected_slowdown",     /* run --inject-slowdown: likewise */
    "mfu_reference",         /* how the MFU peak was had: measured SGEMM / device GEMM / option */
    /* how a training was had, not what was trained: a resumed run matches the
     * unbroken one (the params it trains with are in the identity) */
    "resume",
    "resumed_from",
    "resumed_from_step",
    "resumed_data_position",
    "resume_allow",
    "resume_overrides",
    "resume_unchecked",
    /* the train suite's recompute case wrote its other run's figures as params
     * until 2026-12-01 (metrics since): a baseline from then still matches */
    "activation_bytes_none",
    "ms_per_step_none",
    NULL,
};

static const char *const g_verdict_names[GT_VERDICT_COUNT] = {"same", "faster", "slower",
                                                              "ambiguous", "undecided"};

const char *gt_verdict_name(gt_verdict v) {
    return (v >= 0 && v < GT_VERDICT_COUNT) ? g_verdict_names[v] : "ambiguous";
}

gt_compare_options gt_compare_defaults(void) {
    return (gt_compare_options){.threshold = 0.05,
                                .alpha = 0.05,
                                .correction = GT_CORRECTION_HOLM,
                                .loss_rtol = 0.02,
                                .run_noise = GT_COMPARE_RUN_NOISE,
                                .single_run_noise = GT_COMPARE_SINGLE_RUN_NOISE,
                                .timing_floor_us = GT_COMPARE_TIMING_FLOOR_US,
                                .time_quantile = GT_COMPARE_TIME_QUANTILE,
                                .machine_state = 1};
}

/* 1 when list (comma-separated) is NULL or names `name`. */
static int in_list(const char *list, const char *name) {
    if (!list) return 1;
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0) return 1;
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

static int is_excluded(const char *key) {
    for (int i = 0; gt_compare_excluded_params[i]; i++)
        if (strcmp(key, gt_compare_excluded_params[i]) == 0) return 1;
    return 0;
}

/* ---- statistics ------------------------------------------------------------------ */

/* The level of n of a side's values (a run or a block): their median, or
 * the side's quantile for a time (side.q). */
static double loc(const side *sd, const double *v, size_t n) {
    return sd->q == 0.5 ? gt_median(v, n) : gt_quantile(v, n, sd->q);
}

/* The quantile a metric's level in a run or block is: opt's for a time
 * whose every run on both sides holds GT_COMPARE_QUANTILE_SAMPLES samples or
 * more (a low quantile of a few samples is one of its smallest), or whose
 * samples are GT_COMPARE_BLOCKS rounds a run (the collectives': each sample
 * is itself a timed block of calls) on a machine that was not loaded; else
 * the median. Why rounds: within one state a run's rounds come in two
 * speeds, so their median moves with the share that fell in the slower one
 * and their low quantile does not. Loaded, a round taken less its wait can
 * come out too fast, and a low quantile picks it (docs/ci-gating.md, "The
 * collectives' rounds"). */
static double time_q(const char *unit, const gt_compare_options *opt, const side *b,
                     const side *n, int loaded) {
    if (!(gt_cmp_us_per_unit(unit) > 0)) return 0.5;
    if (b->rounds == GT_COMPARE_BLOCKS && n->rounds == GT_COMPARE_BLOCKS)
        return loaded ? 0.5 : opt->time_quantile;
    const side *s2[2] = {b, n};
    for (int j = 0; j < 2; j++)
        for (int i = 0; i < s2[j]->runs; i++)
            if (s2[j]->cut[i + 1] - s2[j]->cut[i] < GT_COMPARE_QUANTILE_SAMPLES) return 0.5;
    return opt->time_quantile;
}

/* The values of one metric on one side: n values, in the order measured,
 * cut into `runs` runs (run i holds v[cut[i] .. cut[i + 1])). */

/* The fewest samples a block of n samples of this side may hold: 3 (a block's
 * median means something), or 1 where the metric says its n samples were
 * timed in GT_COMPARE_BLOCKS rounds (the collectives suite's, whose every
 * sample is itself a timed block of calls). */
static size_t block_least(const side *s, size_t n) {
    return s->rounds == GT_COMPARE_BLOCKS && n % GT_COMPARE_BLOCKS == 0 ? 1 : 3;
}

/* Replicates of a side, the units whose spread is the noise a level is
 * judged against: by_runs (either side has several runs) the median of each
 * run; else GT_COMPARE_BLOCKS blocks of the one run's consecutive samples
 * (at least 3 each, or 1 where the samples are in as many rounds), their
 * medians. level: the mean of the run medians, or
 * the one run's median. Returns the number of replicates (0 or 1: no
 * spread to be had). */
static int replicates(const side *sd, int by_runs, double *reps, double *level) {
    *level = NAN;
    if (sd->n == 0) return 0;
    int k = 0;
    if (by_runs) {
        double sum = 0;
        for (int i = 0; i < sd->runs; i++) {
            size_t lo = sd->cut[i], hi = sd->cut[i + 1];
            if (hi <= lo) continue;
            reps[k] = loc(sd, sd->v + lo, hi - lo);
            sum += reps[k++];
        }
        *level = sum / k;
        return k;
    }
    *level = loc(sd, sd->v, sd->n);
    size_t least = block_least(sd, sd->n);
    size_t b = sd->n / least < GT_COMPARE_BLOCKS ? sd->n / least : GT_COMPARE_BLOCKS;
    if (b < 2) return 0;
    for (size_t j = 0; j < b; j++) {
        size_t lo = j * sd->n / b, hi = (j + 1) * sd->n / b;
        reps[k++] = loc(sd, sd->v + lo, hi - lo);
    }
    return k;
}

/* Sum of squared deviations from the mean. */
static double sum_sq_dev(const double *x, int n) {
    double m = 0, ss = 0;
    for (int i = 0; i < n; i++) m += x[i];
    m /= n;
    for (int i = 0; i < n; i++) ss += (x[i] - m) * (x[i] - m);
    return ss;
}

/* A robust sum of squared deviations for the blocks of one run: (k - 1)
 * (1.4826 MAD)^2, MAD the median absolute deviation from the blocks' median.
 * One block of stalled steps (a loaded machine) moves the plain sum of
 * squares by its square; it moves the MAD by at most one rank. */
static double robust_ss(const double *x, int k) {
    if (k < 2) return 0;
    double d[GT_COMPARE_BLOCKS]; /* a run has at most that many blocks */
    double m = gt_median(x, (size_t)k);
    for (int i = 0; i < k; i++) d[i] = fabs(x[i] - m);
    double s = 1.4826 * gt_median(d, (size_t)k);
    return (k - 1) * s * s;
}





/* Whether run i of a side holds GT_COMPARE_BLOCKS equal blocks of at least
 * block_least samples (the kernels suite's rounds: docs/suites.md; the
 * collectives suite's). */
static int run_in_blocks(const side *s, int i) {
    size_t n = s->cut[i + 1] - s->cut[i];
    return n >= block_least(s, n) * GT_COMPARE_BLOCKS && n % GT_COMPARE_BLOCKS == 0;
}

/* The log ratio of each block of pair i's runs into d[0 .. GT_COMPARE_BLOCKS)
 * (NAN where a median is not positive). */
static void pair_blocks(const side *b, const side *n, int i, double *d) {
    size_t lb = b->cut[i], ln = n->cut[i];
    size_t kb = (b->cut[i + 1] - lb) / GT_COMPARE_BLOCKS, kn = (n->cut[i + 1] - ln) / GT_COMPARE_BLOCKS;
    for (int j = 0; j < GT_COMPARE_BLOCKS; j++) {
        double mb = loc(b, b->v + lb + j * kb, kb), mn = loc(n, n->v + ln + j * kn, kn);
        d[j] = mb > 0 && mn > 0 ? log(mn / mb) : NAN;
    }
}

/* The blocks' log ratios of every pair, pairs x GT_COMPARE_BLOCKS (malloc'ed),
 * when both sides have as many runs (at least 2) and every one is in blocks;
 * else NULL. */
static double *block_ratios(const side *b, const side *n) {
    int k = b->runs, r = GT_COMPARE_BLOCKS;
    /* a quantile's level is the run's: a round that another process took
     * whole would be a replicate of its own (docs/ci-gating.md); so are
     * samples moved to one machine state: a round's error of the move (a
     * state that changed within its block) is no replicate either */
    if (k < 2 || n->runs != k || b->q != 0.5 || b->state_moved) return NULL;
    for (int i = 0; i < k; i++)
        if (!run_in_blocks(b, i) || !run_in_blocks(n, i)) return NULL;
    double *d = malloc((size_t)k * r * sizeof *d);
    for (int i = 0; d && i < k; i++) pair_blocks(b, n, i, d + (size_t)i * r);
    return d;
}

/* Paired runs whose samples come in blocks (rounds spread over each run):
 * the blocks' log ratios, pairs x blocks, summarized nested
 * (gt_gs_summarize_nested: the blocks count as replicates when the pairs
 * differ no more than their blocks do). 0 when a run is not in blocks or a
 * ratio is not finite: the caller judges the runs' medians. */
static int paired_blocks(const side *b, const side *n, double floor_sd, gt_gs_summary *s,
                         int *pooled) {
    double *d = block_ratios(b, n);
    if (!d) return 0;
    int k = b->runs;
    int ok = gt_gs_summarize_nested(d, k, GT_COMPARE_BLOCKS, floor_sd, s, pooled) == k;
    free(d);
    return ok;
}

/* Paired runs (interleaved A/B: run i of BASE and run i of NEW ran side by
 * side): the log ratios of their medians, ln(new_i / base_i), are the
 * replicates (a machine's noise multiplies a time), so a drift that hits
 * both runs of a pair cancels. rel = exp(mean) - 1; se (on the log scale,
 * about a relative one) = sqrt((s^2 + run_noise^2) / pairs); Student's t on
 * pairs - 1 degrees of freedom. Runs in blocks (paired_blocks): the blocks'
 * log ratios instead, on up to pairs x blocks - 1 degrees of freedom. */
static assessment assess_paired(const side *b, const side *n, int higher_better, double us_per,
                                const gt_compare_options *o) {
    assessment a = {.method = GT_METHOD_PAIRED, .rel = NAN, .p = NAN, .se_rel = NAN};
    double sb = 0, sn = 0, sr = 0, sr2 = 0;
    int k = 0, nonpos = 0;
    for (int i = 0; i < b->runs; i++) {
        size_t lb = b->cut[i], hb = b->cut[i + 1], ln = n->cut[i], hn = n->cut[i + 1];
        if (hb <= lb || hn <= ln) continue;
        double mb = loc(b, b->v + lb, hb - lb), mn = loc(n, n->v + ln, hn - ln);
        sb += mb;
        sn += mn;
        if (!(mb > 0) || !(mn > 0)) {
            nonpos = 1;
            continue;
        }
        double r = log(mn / mb);
        sr += r;
        sr2 += r * r;
        k++;
    }
    int m = b->runs;
    a.base_med = sb / m;
    a.new_med = sn / m;
    if (us_per > 0 && fmax(fabs(a.base_med), fabs(a.new_med)) * us_per < o->timing_floor_us) {
        a.method = GT_METHOD_FLOOR;
        return a;
    }
    a.better = higher_better ? a.new_med > a.base_med : a.new_med < a.base_med;
    if (nonpos || k < 2) { /* no log ratio of a zero: judged as too few */
        a.method = GT_METHOD_SINGLE;
        a.rel = a.base_med != 0 ? (a.new_med - a.base_med) / fabs(a.base_med) : NAN;
        a.large = a.new_med != a.base_med && (isnan(a.rel) || fabs(a.rel) >= o->threshold);
        return a;
    }
    double mean = sr / k, var = (sr2 - k * mean * mean) / (k - 1);
    if (var < 0) var = 0;
    a.pairs = k;
    a.df = k - 1;
    a.se_rel = sqrt((var + o->run_noise * o->run_noise) / k);
    gt_gs_summary nest;
    if (k == m && paired_blocks(b, n, o->run_noise, &nest, &a.pooled)) {
        mean = nest.mean;
        a.blocks = GT_COMPARE_BLOCKS;
        a.df = nest.df;
        a.se_rel = nest.se;
    }
    a.rel = expm1(mean);
    a.better = higher_better ? mean > 0 : mean < 0;
    a.large = mean != 0 && fabs(a.rel) >= o->threshold;
    a.p = mean == 0 ? 1 : a.se_rel > 0 ? gt_gs_t_tail2(mean / a.se_rel, a.df) : 0;
    return a;
}

/* RUNS and BLOCKS: the noise of a difference and its p-value, the assumed
 * run-to-run floor taken as floor_frac of `level` (a metric's own BASE level,
 * or the whole's for a part of it); se_rel relative to that level. */
static void noise_test(assessment *a, double level) {
    double fl = a->floor_frac * level;
    a->se = sqrt((a->spread + fl * fl) * a->inv_runs);
    a->se_rel = level != 0 ? a->se / level : NAN;
    if (a->new_lvl == a->base_lvl)
        a->p = 1;
    else if (!(a->se > 0))
        a->p = 0; /* no noise at all and a difference */
    else
        a->p = gt_gs_t_tail2(fabs(a->new_lvl - a->base_lvl) / a->se, a->df);
}

/* The level of each side, their relative change and, where there is noise to
 * judge it against, its p-value (reports/compare.h has the model). us_per:
 * the unit's microseconds (0: not a time), for the timing floor. */
static assessment assess(const side *b, const side *n, int higher_better, double us_per,
                         const gt_compare_options *o) {
    assessment a = {.method = GT_METHOD_NONE, .rel = NAN, .p = NAN, .se_rel = NAN, .se = NAN};
    if (b->n == 0 || n->n == 0) {
        a.base_med = b->n ? loc(b, b->v, b->n) : NAN;
        a.new_med = n->n ? loc(n, n->v, n->n) : NAN;
        return a;
    }
    size_t cap = (b->n > (size_t)b->runs ? b->n : (size_t)b->runs) +
                 (n->n > (size_t)n->runs ? n->n : (size_t)n->runs);
    double *reps = malloc(cap * sizeof *reps);
    if (!reps) return a; /* ambiguous: never a false regression */
    int by_runs = b->runs >= 2 || n->runs >= 2;
    if (o->paired && by_runs && b->runs == n->runs && b->n && n->n) {
        free(reps);
        return assess_paired(b, n, higher_better, us_per, o);
    }
    int kb = replicates(b, by_runs, reps, &a.base_med);
    int kn = replicates(n, by_runs, reps + kb, &a.new_med);
    double mb = a.base_med, mn = a.new_med;
    double floor_units = us_per > 0 ? o->timing_floor_us / us_per : 0;
    if (floor_units > 0 && fmax(fabs(mb), fabs(mn)) >= floor_units) {
        mb = fmax(mb, floor_units);
        mn = fmax(mn, floor_units);
    }
    a.base_lvl = mb;
    a.new_lvl = mn;
    if (mb == mn)
        a.rel = 0;
    else if (mb != 0)
        a.rel = (mn - mb) / fabs(mb);
    /* else base 0, new not: no relative change exists; it counts as large */
    a.large = mn != mb && (isnan(a.rel) || fabs(a.rel) >= o->threshold);
    a.better = higher_better ? mn > mb : mn < mb;
    int df = (kb > 1 ? kb - 1 : 0) + (kn > 1 ? kn - 1 : 0);
    /* runs: their plain variance (each run was a whole replication); blocks:
     * the robust spread, since a run's blocks share one machine and one
     * stall among 5 blocks is common, not information */
    double (*ss_of)(const double *, int) = by_runs ? sum_sq_dev : robust_ss;
    double ss = (kb > 1 ? ss_of(reps, kb) : 0) + (kn > 1 ? ss_of(reps + kb, kn) : 0);
    free(reps);
    if (floor_units > 0 && fmax(fabs(mb), fabs(mn)) < floor_units) {
        a.method = GT_METHOD_FLOOR; /* call overhead and timer, not work */
        return a;
    }
    if (df == 0) {
        a.method = GT_METHOD_SINGLE;
        return a;
    }
    /* Several runs: their medians' spread is measured (t test on its degrees
     * of freedom) and run_noise is only a floor. One run a side: the blocks
     * show the run's own noise but not how runs differ, which is assumed:
     * single_run_noise, taken as known (normal). */
    int runs = by_runs;
    a.method = runs ? GT_METHOD_RUNS : GT_METHOD_BLOCKS;
    a.df = runs ? df : 0;
    a.floor_frac = runs ? o->run_noise : o->single_run_noise;
    a.spread = ss / df;
    a.inv_runs = 1.0 / b->runs + 1.0 / n->runs;
    noise_test(&a, fabs(mb));
    return a;
}

static gt_verdict decide(const assessment *a, double p, double alpha) {
    gt_verdict moved = a->better ? GT_VERDICT_FASTER : GT_VERDICT_SLOWER;
    switch (a->method) {
    case GT_METHOD_RUNS:
    case GT_METHOD_BLOCKS:
    case GT_METHOD_PAIRED:
        if (p < alpha && a->large) return moved;
        if (!a->large) return GT_VERDICT_SAME;
        return GT_VERDICT_AMBIGUOUS;
    case GT_METHOD_SINGLE:
        /* no spread on either side: no noise estimate, so never a regression */
        return a->large ? GT_VERDICT_AMBIGUOUS : GT_VERDICT_SAME;
    case GT_METHOD_FLOOR:
        return GT_VERDICT_SAME; /* reported, never gated (counted apart) */
    default:
        return GT_VERDICT_AMBIGUOUS;
    }
}



gt_verdict gt_compare_samples(const double *base, size_t nb, const double *new_, size_t nn,
                              int higher_better, const gt_compare_options *opt,
                              gt_compare_method *method, double *base_median, double *new_median,
                              double *rel, double *p) {
    gt_compare_options o = opt ? *opt : gt_compare_defaults();
    size_t cb[2] = {0, nb}, cn[2] = {0, nn};
    side sb = {base, nb, cb, 1, 0, 0.5, 0}, sn = {new_, nn, cn, 1, 0, 0.5, 0};
    assessment a = assess(&sb, &sn, higher_better, 0, &o);
    if (method) *method = a.method;
    if (base_median) *base_median = a.base_med;
    if (new_median) *new_median = a.new_med;
    if (rel) *rel = a.rel;
    if (p) *p = a.p;
    return decide(&a, a.p, o.alpha);
}

gt_verdict gt_compare_runs(const double *base, const size_t *base_cut, int base_runs,
                           const double *new_, const size_t *new_cut, int new_runs,
                           int higher_better, const char *unit, const gt_compare_options *opt,
                           gt_compare_method *method, double *base_level, double *new_level,
                           double *rel, double *p) {
    gt_compare_options o = opt ? *opt : gt_compare_defaults();
    o.paired = 0;
    side sb = {base, base_runs > 0 ? base_cut[base_runs] : 0, base_cut, base_runs, 0, 0.5, 0};
    side sn = {new_, new_runs > 0 ? new_cut[new_runs] : 0, new_cut, new_runs, 0, 0.5, 0};
    sb.q = sn.q = time_q(unit, &o, &sb, &sn, 0);
    assessment a = assess(&sb, &sn, higher_better, gt_cmp_us_per_unit(unit), &o);
    if (method) *method = a.method;
    if (base_level) *base_level = a.base_med;
    if (new_level) *new_level = a.new_med;
    if (rel) *rel = a.rel;
    if (p) *p = a.p;
    return decide(&a, a.p, o.alpha);
}

/* ---- the comparison --------------------------------------------------------------- */


static char *xprintf(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
static char *xprintf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return NULL;
    char *s = malloc((size_t)n + 1);
    if (!s) return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

static const char *str_or(json_t *j, const char *fallback) {
    const char *s = json_string_value(j);
    return s ? s : fallback;
}

static char *json_text(json_t *j) {
    if (!j) return strdup("(absent)");
    if (json_is_string(j)) return strdup(json_string_value(j));
    char *s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
    return s ? s : strdup("?");
}

/* A value its run chose not to read ("not read: ...": env.software.cublas on a
 * host without a CUDA device, report-schema.md): unknown, not a value. */
static int fp_unread(json_t *j) {
    const char *s = json_string_value(j);
    return s && strncmp(s, "not read", 8) == 0;
}

static int fp_add(gt_compare *c, const char *key, json_t *a, json_t *b) {
    if ((!a && !b) || (a && b && json_equal(a, b))) return 0;
    /* both recorded, one unread: nothing says they differ */
    if (a && b && (fp_unread(a) || fp_unread(b))) return 0;
    for (size_t i = 0; i < c->nfp; i++) /* listed already (the class is listed first) */
        if (!strncmp(c->fp[i].key, "env.", 4) && !strcmp(c->fp[i].key + 4, key)) return 0;
    fp_diff *n = realloc(c->fp, (c->nfp + 1) * sizeof *n);
    if (!n) return -1;
    c->fp = n;
    c->fp[c->nfp++] = (fp_diff){xprintf("env.%s", key), json_text(a), json_text(b), 0};
    return 0;
}

/* A part of the machine class (gt_compare.h): a difference where both sides
 * record it is marked; one side without it is listed, not marked. */
static void fp_add_class(gt_compare *c, const char *key, json_t *a, json_t *b) {
    size_t before = c->nfp;
    fp_add(c, key, a, b);
    if (c->nfp > before && a && b && !json_is_null(a) && !json_is_null(b))
        c->fp[c->nfp - 1].machine = 1;
}

/* The GPUs as their class sees them: names in order (a count and models). */
static json_t *gpu_models(json_t *gpus) {
    json_t *out = json_array();
    size_t i;
    json_t *g;
    json_array_foreach(gpus, i, g) {
        json_t *name = json_object_get(g, "name");
        json_array_append(out, name ? name : json_null());
    }
    return out;
}

/* The machine class parts of the two envs (gt_compare.h), first. */
static void fingerprint_class(gt_compare *c, json_t *eb, json_t *en) {
    static const char *const cpu[] = {"model", "sockets", "physical", "logical"};
    for (size_t i = 0; i < sizeof cpu / sizeof cpu[0]; i++) {
        char key[64];
        snprintf(key, sizeof key, "cpu.%s", cpu[i]);
        fp_add_class(c, key, json_object_get(json_object_get(eb, "cpu"), cpu[i]),
                     json_object_get(json_object_get(en, "cpu"), cpu[i]));
    }
    fp_add_class(c, "topology_digest", json_object_get(eb, "topology_digest"),
                 json_object_get(en, "topology_digest"));
    json_t *gb = json_object_get(eb, "gpus"), *gn = json_object_get(en, "gpus");
    if (gb && gn) {
        json_t *mb = gpu_models(gb), *mn = gpu_models(gn);
        fp_add_class(c, "gpus.models", mb, mn);
        json_decref(mb);
        json_decref(mn);
    }
    static const char *const thr[] = {"per_rank", "obtained"};
    for (size_t i = 0; i < sizeof thr / sizeof thr[0]; i++) {
        char key[64];
        snprintf(key, sizeof key, "threads.%s", thr[i]);
        fp_add_class(c, key, json_object_get(json_object_get(eb, "threads"), thr[i]),
                     json_object_get(json_object_get(en, "threads"), thr[i]));
    }
    static const char *const job[] = {"ranks", "n_nodes", "ranks_per_node"};
    for (size_t i = 0; i < sizeof job / sizeof job[0]; i++) {
        char key[64];
        snprintf(key, sizeof key, "job.%s", job[i]);
        fp_add_class(c, key, json_object_get(json_object_get(eb, "job"), job[i]),
                     json_object_get(json_object_get(en, "job"), job[i]));
    }
}

/* Each member of the object `name` of the two envs that differs, as
 * env.name.member (a member only one side has included). */
static void fp_add_members(gt_compare *c, const char *name, json_t *eb, json_t *en) {
    json_t *ob = json_object_get(eb, name), *on = json_object_get(en, name);
    const char *k;
    json_t *v;
    char key[160];
    json_object_foreach(ob, k, v) {
        snprintf(key, sizeof key, "%s.%s", name, k);
        fp_add(c, key, v, json_object_get(on, k));
    }
    json_object_foreach(on, k, v) {
        if (json_object_get(ob, k)) continue;
        snprintf(key, sizeof key, "%s.%s", name, k);
        fp_add(c, key, NULL, v);
    }
}

/* The fingerprint parts that explain a change between stacks, in the order
 * a person reads them: library versions first. */
static void fingerprint(gt_compare *c) {
    json_t *eb = json_object_get(c->base_doc, "env"), *en = json_object_get(c->new_doc, "env");
    fingerprint_class(c, eb, en);
    for (size_t i = 0; i < c->nfp; i++)
        if (c->fp[i].machine && !c->opt.across_machines) c->not_comparable = 1;
    /* speed is shown, never gated, between machine classes (as --checks-only) */
    if (c->not_comparable) c->opt.checks_only = 1;
    fp_add_members(c, "software", eb, en);
    /* the BLAS kernel and what steers it: they change a GEMM's rounding */
    fp_add_members(c, "blas", eb, en);
    /* threads per rank and what steers them (OMP_*, binding): in the class above too */
    fp_add_members(c, "threads", eb, en);
    /* the MPI library, the transport variables and the components it chose:
     * a TCP transport instead of shared memory explains a slower collective */
    fp_add_members(c, "transport", eb, en);
    /* where it ran: a different host of the same class is comparable, but named */
    fp_add(c, "host", json_object_get(eb, "host"), json_object_get(en, "host"));
    /* the GPUs without their momentary state (clocks now, temperature,
     * power): what the hardware is, not how warm it was */
    json_t *gb = json_deep_copy(json_object_get(eb, "gpus"));
    json_t *gn = json_deep_copy(json_object_get(en, "gpus"));
    size_t gi;
    json_t *gv;
    json_array_foreach(gb, gi, gv) json_object_del(gv, "state");
    json_array_foreach(gn, gi, gv) json_object_del(gv, "state");
    fp_add(c, "gpus", gb, gn);
    json_decref(gb);
    json_decref(gn);
    fp_add(c, "os", json_object_get(eb, "os"), json_object_get(en, "os"));
    /* the job's shape (env.job.identity names its members), never its id or
     * hosts; only where both reports know the job (older ones do not) */
    json_t *jb = json_object_get(eb, "job"), *jn = json_object_get(en, "job");
    size_t ji;
    json_t *jk;
    if (jb && jn)
        json_array_foreach(json_object_get(jb, "identity"), ji, jk) {
            const char *k = json_string_value(jk);
            char key[96];
            if (!k) continue;
            snprintf(key, sizeof key, "job.%s", k);
            fp_add(c, key, json_object_get(jb, k), json_object_get(jn, k));
        }
}

/* suite, case, topology, backend and the identity params (sorted), with
 * separators that cannot occur in JSON text. */
static char *identity(json_t *r) {
    json_t *id = json_object();
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(r, "params"), k, v) {
        if (!is_excluded(k)) json_object_set(id, k, v);
    }
    char *params = json_dumps(id, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
    json_decref(id);
    char *key =
        xprintf("%s\x1f%s\x1f%s\x1f%s\x1f%s", str_or(json_object_get(r, "suite"), ""),
                str_or(json_object_get(r, "case"), ""), str_or(json_object_get(r, "topology"), ""),
                str_or(json_object_get(r, "backend"), ""), params ? params : "");
    free(params);
    return key;
}

char *gt_compare_identity(const gt_report_result *r) { return r ? identity(r->json) : NULL; }

static int cmp_keyed(const void *a, const void *b) {
    const keyed *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    if (c) return c;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* Keys of every result of a report; the k-th repeat of a key gets "#k". */
static char **report_keys(json_t *doc, size_t *n_out, int **reps_out) {
    json_t *results = json_object_get(doc, "results");
    size_t n = json_array_size(results);
    *n_out = n;
    char **keys = calloc(n ? n : 1, sizeof *keys);
    keyed *sorted = calloc(n ? n : 1, sizeof *sorted);
    int *reps = calloc(n ? n : 1, sizeof *reps);
    *reps_out = reps;
    if (!keys || !sorted || !reps) {
        free(keys);
        free(sorted);
        free(reps);
        *reps_out = NULL;
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        keys[i] = identity(json_array_get(results, i));
        sorted[i] = (keyed){keys[i] ? keys[i] : "", i};
    }
    qsort(sorted, n, sizeof *sorted, cmp_keyed);
    for (size_t i = 0; i < n; i++)
        reps[sorted[i].idx] = i > 0 && strcmp(sorted[i].key, sorted[i - 1].key) == 0
                                  ? reps[sorted[i - 1].idx] + 1
                                  : 1;
    /* renamed only now: sorted[] points into keys[] */
    for (size_t i = 0; i < n; i++) {
        if (reps[i] < 2 || !keys[i]) continue;
        char *k = xprintf("%s#%d", keys[i], reps[i]);
        free(keys[i]);
        keys[i] = k;
    }
    free(sorted);
    return keys;
}

/* A metric's samples into *out (malloc'ed), and beside each the machine's
 * state it was taken in into *state (NAN where none: the metric's
 * "state_ns") and the share of its block its slowest rank waited for a CPU
 * into *wait (NAN where none: "cpu_wait"), both malloc'ed
 * (reports/compare_state.h). */
static size_t metric_values(json_t *m, double **out, double **state, double **wait) {
    *out = *state = *wait = NULL;
    json_t *s = json_object_get(m, "samples"), *beside[2] = {json_object_get(m, "state_ns"),
                                                               json_object_get(m, "cpu_wait")};
    size_t n = json_array_size(s), k = 0;
    double *v = malloc((n ? n : 1) * sizeof *v), *w[2] = {malloc((n ? n : 1) * sizeof *v),
                                                          malloc((n ? n : 1) * sizeof *v)};
    if (!v || !w[0] || !w[1]) {
        free(v);
        free(w[0]);
        free(w[1]);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        double x = json_number_value(json_array_get(s, i));
        if (!json_is_number(json_array_get(s, i)) || !isfinite(x)) continue;
        for (int b = 0; b < 2; b++) {
            json_t *bi = json_array_size(beside[b]) == n ? json_array_get(beside[b], i) : NULL;
            w[b][k] = json_is_number(bi) ? json_number_value(bi) : NAN;
        }
        v[k++] = x;
    }
    if (k == 0) {
        json_t *val = json_object_get(m, "value");
        if (json_is_number(val) && isfinite(json_number_value(val))) {
            w[0][k] = w[1][k] = NAN;
            v[k++] = json_number_value(val);
        }
    }
    *out = v;
    *state = w[0];
    *wait = w[1];
    return k;
}

/* The metric a derived one is computed from, when that one is in both
 * reports' result (so it is judged itself); else NULL: the derived metric is
 * then gated on its own, never left unjudged. */
static const char *derived_source(json_t *any, const cmp_result *r) {
    const char *from = json_string_value(json_object_get(any, "derived_from"));
    if (!from || !r->base || !r->nw) return NULL;
    if (!json_object_get(json_object_get(r->base, "metrics"), from) ||
        !json_object_get(json_object_get(r->nw, "metrics"), from))
        return NULL;
    return from;
}

/* A metric either report marks "gate": false (a numerical error, a loss, a
 * momentary state): its kind, shown instead of a gating verdict; else NULL. */
static const char *ungated_kind(const char *name, json_t *mb, json_t *mn) {
    json_t *sides[2] = {mn, mb};
    for (int i = 0; i < 2; i++)
        if (sides[i] && json_is_false(json_object_get(sides[i], "gate")))
            return str_or(json_object_get(sides[i], "kind"), "not gated");
    /* reports written before the mark: the same metrics by name */
    static const char *const numerics[] = {"max_abs_err", "max_rel_err", "final_loss",
                                           "eval_loss"};
    static const char *const reference[] = {"peak", "peak_cold", "peak_sgemm", "peak_level",
                                            "peak_level_cold"};
    for (size_t i = 0; i < sizeof numerics / sizeof numerics[0]; i++)
        if (strcmp(name, numerics[i]) == 0) return "numerics";
    for (size_t i = 0; i < sizeof reference / sizeof reference[0]; i++)
        if (strcmp(name, reference[i]) == 0) return "reference";
    /* a collective's raw-library baseline and gauntlet's ratio to it */
    if (strncmp(name, "raw_busbw_", 10) == 0 || strncmp(name, "overhead_ratio_", 15) == 0)
        return "reference";
    return NULL;
}

/* The whole a metric is a part of ("part_of": W in either report; reports
 * before the mark: exposed_comm_ms and data_wait_ms of ms_per_step), or NULL. */
static const char *part_whole(const char *name, json_t *mb, json_t *mn) {
    json_t *sides[2] = {mn, mb};
    for (int i = 0; i < 2; i++) {
        const char *w = sides[i] ? json_string_value(json_object_get(sides[i], "part_of")) : NULL;
        if (w) return w;
    }
    if (strcmp(name, "exposed_comm_ms") == 0 || strcmp(name, "data_wait_ms") == 0)
        return "ms_per_step";
    return NULL;
}

/* Parts of a whole (the exposed communication of a step, its wait for
 * data) are judged by their effect on the whole: their own level may double
 * between identical runs while the step does not move (docs/ci-gating.md). The change, the noise and so the detectable change become
 * fractions of the whole's BASE level: the replicates' own spread, plus the
 * assumed run-to-run noise of the whole (a step that moves by 15% between
 * runs can move its parts by that much of the step). The threshold then asks
 * "did the step get this much slower through this part?". Applied only where
 * the whole is in both reports with the same unit and a positive level. */
static void judge_parts(const gt_compare *c, cmp_result *r) {
    if (!r->base || !r->nw) return;
    json_t *mb = json_object_get(r->base, "metrics"), *mn = json_object_get(r->nw, "metrics");
    for (size_t j = 0; j < r->nm; j++) {
        cmp_metric *m = &r->m[j];
        if (!m->in_base || !m->in_new || m->derived_from || m->ungated) continue;
        const char *w = part_whole(m->name, json_object_get(mb, m->name),
                                   json_object_get(mn, m->name));
        if (!w || strcmp(w, m->name) == 0) continue;
        const cmp_metric *whole = NULL;
        for (size_t i = 0; i < r->nm; i++)
            if (strcmp(r->m[i].name, w) == 0) whole = &r->m[i];
        if (!whole || !whole->in_base || !whole->in_new || strcmp(whole->unit, m->unit) != 0 ||
            !(whole->base_med > 0) || !isfinite(m->base_med) || !isfinite(m->new_med))
            continue;
        double W = whole->base_med;
        assessment *a = &m->a;
        m->part_of = whole->name;
        int lvls = a->method == GT_METHOD_RUNS || a->method == GT_METHOD_BLOCKS;
        double lb = lvls ? a->base_lvl : a->base_med, ln = lvls ? a->new_lvl : a->new_med;
        a->rel = (ln - lb) / W;
        a->large = ln != lb && fabs(a->rel) >= c->opt.threshold;
        if (a->method == GT_METHOD_PAIRED && !isnan(a->se_rel)) {
            /* a log ratio's se is about a relative one, of the part's level;
             * the floor, as a fraction of the whole, is added again */
            double own = a->se_rel * fabs(a->base_med) / W;
            int k = a->pairs;
            a->se_rel = sqrt(own * own + c->opt.run_noise * c->opt.run_noise / k);
            a->p = a->rel == 0 ? 1 : gt_gs_t_tail2(a->rel / a->se_rel, a->df);
        } else if ((a->method == GT_METHOD_RUNS || a->method == GT_METHOD_BLOCKS) &&
                   !isnan(a->se)) {
            /* the noise a run assumes is the whole's: a step that moves by
             * 15% between runs moves its parts by as much of the step */
            noise_test(a, W);
        }
        m->p = m->p_adj = a->p;
        m->rel = a->rel;
        m->verdict = decide(a, m->p, c->opt.alpha);
    }
}

/* The result of `key` in a further run, or NULL. */
static json_t *extra_result(const extra_run *x, const char *key) {
    size_t lo = 0, hi = x->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (strcmp(x->sorted[mid].key, key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < x->n && strcmp(x->sorted[lo].key, key) == 0)
        return json_array_get(json_object_get(x->doc, "results"), x->sorted[lo].idx);
    return NULL;
}

/* One side of a metric as gather() read it: values, states and waits (NAN:
 * none), cut into runs (sd.cut is cut); run k came from report run_of[k]
 * (runs that lack the metric are skipped). */
typedef struct gathered {
    double *v, *s, *w;
    size_t *cut;
    int *run_of;
    side sd;
} gathered;

static void gathered_free(gathered *g) {
    free(g->v);
    free(g->s);
    free(g->w);
    free(g->cut);
    free(g->run_of);
}

/* The runs of a side (0 BASE, 1 NEW) set aside: the pairs' (c->aside) or
 * the side's own (c->skip); NULL: none. */
static const unsigned char *aside_of(const gt_compare *c, int side) {
    return c->aside ? c->aside : c->skip[side];
}

/* The values of metric `name` over the runs of a side: the first run's
 * metric m, then each further run's result of `key`, into g (its arrays
 * malloc'ed); -1 when out of memory. */
static int gather(json_t *m, const extra_run *xs, size_t nx, const char *key, const char *name,
                  const unsigned char *aside, gathered *g) {
    *g = (gathered){0};
    g->cut = malloc((nx + 2) * sizeof *g->cut);
    g->run_of = malloc((nx + 1) * sizeof *g->run_of);
    if (!g->cut || !g->run_of) return -1;
    size_t total = 0;
    int runs = 0, rounds = -1;
    g->cut[0] = 0;
    for (size_t i = 0; i <= nx; i++) {
        json_t *mi = m;
        if (i > 0) {
            json_t *r = key ? extra_result(&xs[i - 1], key) : NULL;
            mi = r ? json_object_get(json_object_get(r, "metrics"), name) : NULL;
        }
        if (!mi || (aside && aside[i])) continue;
        json_t *rj = json_object_get(mi, "rounds");
        int ri = json_is_integer(rj) ? (int)json_integer_value(rj) : 0;
        rounds = rounds < 0 || rounds == ri ? ri : 0;
        double *got[3] = {NULL, NULL, NULL}, **to[3] = {&g->v, &g->s, &g->w};
        size_t k = metric_values(mi, &got[0], &got[1], &got[2]);
        int ok = got[0] != NULL;
        for (int a = 0; a < 3 && ok; a++) {
            double *grown = realloc(*to[a], (total + k + 1) * sizeof *grown);
            if (grown) *to[a] = grown;
            ok = grown != NULL;
            if (ok && k) memcpy(*to[a] + total, got[a], k * sizeof *got[a]);
        }
        for (int a = 0; a < 3; a++) free(got[a]);
        if (!ok) return -1;
        total += k;
        g->run_of[runs] = (int)i;
        g->cut[++runs] = total;
    }
    g->sd = (side){g->v, total, g->cut, runs, rounds > 0 ? rounds : 0, 0.5, 0};
    return 0;
}

/* The log of the median of each run of a side, indexed by report (NAN
 * where a run lacks the metric or its median is not positive): run j of
 * BASE beside run j of NEW for the family tests. From the values gather()
 * read, so that no report is parsed twice. */
static double *run_logs(const side *sd, const int *run_of, size_t nx, int *n) {
    double *out = malloc((nx + 1) * sizeof *out);
    *n = 0;
    if (!out) return NULL;
    for (size_t i = 0; i <= nx; i++) out[i] = NAN;
    for (int k = 0; k < sd->runs; k++) {
        size_t lo = sd->cut[k], hi = sd->cut[k + 1];
        double med = hi > lo ? loc(sd, sd->v + lo, hi - lo) : NAN;
        out[run_of[k]] = med > 0 ? log(med) : NAN;
    }
    *n = (int)nx + 1;
    return out;
}

/* One run a side: the log of each block's median (as replicates() cuts it). */
static double *block_logs(const side *sd, int *n) {
    double reps[GT_COMPARE_BLOCKS + 1], lvl;
    *n = replicates(sd, 0, reps, &lvl);
    double *out = *n > 0 ? malloc((size_t)*n * sizeof *out) : NULL;
    if (!out) {
        *n = 0;
        return NULL;
    }
    for (int i = 0; i < *n; i++) out[i] = reps[i] > 0 ? log(reps[i]) : NAN;
    return out;
}

/* PAIRED: the blocks' log ratios of every pair (cmp_metric's blk), when
 * every run of both sides is in blocks and pair i is report i of each side. */
static double *pair_block_logs(const gt_compare *c, const side *sb, const int *rb, const side *sn,
                               const int *rn, int *npairs) {
    *npairs = 0;
    int k = sb->runs;
    if ((size_t)k != c->nxb + 1) return NULL;
    for (int i = 0; i < k; i++) /* pair i is report i of each side */
        if (rb[i] != i || rn[i] != i) return NULL;
    double *d = block_ratios(sb, sn);
    if (d) *npairs = k;
    return d;
}

/* The replicates a family test pools (cmp_metric's lb, ln, blk). */
static void family_logs(const gt_compare *c, cmp_metric *m, const side *sb, const int *rb,
                        const side *sn, const int *rn) {
    if (m->method == GT_METHOD_RUNS || m->method == GT_METHOD_PAIRED) {
        m->lb = run_logs(sb, rb, c->nxb, &m->nlb);
        m->ln = run_logs(sn, rn, c->nxn, &m->nln);
        if (m->method == GT_METHOD_PAIRED && m->a.blocks)
            m->blk = pair_block_logs(c, sb, rb, sn, rn, &m->nblk);
    } else if (m->method == GT_METHOD_BLOCKS) {
        m->lb = block_logs(sb, &m->nlb);
        m->ln = block_logs(sn, &m->nln);
    }
}

/* Do some of a side's n samples carry their wait for a CPU? */
static int has_waits(const double *w, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (isfinite(w[i])) return 1;
    return 0;
}

/* A time's samples less what another process took (compare_state.h):
 * waited samples left out or taken less their wait, then moved to one
 * machine state where it moved. */
static void unload_time(const gt_compare *c, cmp_metric *m, gathered *g) {
    m->waits_known =
        has_waits(g[0].w, g[0].cut[g[0].sd.runs]) && has_waits(g[1].w, g[1].cut[g[1].sd.runs]);
    /* a side's runs that timed a neighbour, not the stack: not the side
     * whose own threads wait (busy_own), but the other one's even then */
    for (int i = 0; i < 2; i++)
        m->starved[i] = c->busy_own == i + 1 ? 0 : gt_state_starved(g[i].w, g[i].cut, g[i].sd.runs);
    if (!c->busy_own)
        for (int i = 0; i < 2; i++)
            m->busy_out[i] = gt_state_unload(g[i].v, g[i].s, g[i].w, g[i].cut, g[i].sd.runs,
                                             &m->unloaded[i]);
    for (int i = 0; i < 2; i++) g[i].sd.n = g[i].cut[g[i].sd.runs];
    g[0].sd.state_moved = g[1].sd.state_moved =
        !c->loaded && !c->busy_own &&
        gt_state_adjust(g[0].v, g[0].s, g[0].cut, g[0].sd.runs, g[1].v, g[1].s, g[1].cut,
                        g[1].sd.runs, &m->state) == GT_STATE_ADJUSTED;
}

/* The runs of one side of result r (its first run's result `res`, then the
 * further runs) whose node had a neighbour: other processes kept
 * GT_STATE_NEIGHBOUR_CORES or more busy with under GT_STATE_IDLE_CORES idle
 * (the result's cpu_others_cores and cpu_idle_cores; runs without them
 * count as none). -1 when out of memory. */
static int neighbour_runs(const gt_compare *c, const cmp_result *r, json_t *res, int side) {
    json_t *ms = json_object_get(res, "metrics");
    json_t *mo = json_object_get(ms, "cpu_others_cores"),
           *mi = json_object_get(ms, "cpu_idle_cores");
    if (!mo || !mi) return 0;
    const extra_run *xs = side ? c->xn : c->xb;
    size_t nx = side ? c->nxn : c->nxb;
    gathered go, gi;
    int rc = gather(mo, xs, nx, r->key, "cpu_others_cores", aside_of(c, side), &go) ||
             gather(mi, xs, nx, r->key, "cpu_idle_cores", aside_of(c, side), &gi);
    int n = 0;
    for (int k = 0; !rc && k < go.sd.runs && k < gi.sd.runs; k++) {
        if (go.run_of[k] != gi.run_of[k] || go.cut[k + 1] == go.cut[k]) continue;
        double others = go.v[go.cut[k]], idle = gi.v[gi.cut[k]];
        n += others >= GT_STATE_NEIGHBOUR_CORES && idle < GT_STATE_IDLE_CORES;
    }
    gathered_free(&go);
    gathered_free(&gi);
    return rc ? -1 : n;
}

/* Both sides of a metric: judged. */
static void judge_metric(const gt_compare *c, cmp_metric *m, gathered *g) {
    const gt_compare_options *opt = &c->opt;
    side *sb = &g[0].sd, *sn = &g[1].sd;
    sb->q = sn->q = time_q(m->unit, opt, sb, sn, c->loaded);
    m->a = assess(sb, sn, m->higher_better, gt_cmp_us_per_unit(m->unit), opt);
    m->method = m->a.method;
    m->base_med = m->a.base_med;
    m->new_med = m->a.new_med;
    m->rel = m->a.rel;
    m->p = m->p_adj = m->a.p;
    m->verdict = decide(&m->a, m->p, opt->alpha);
    m->runs_b = sb->runs;
    m->runs_n = sn->runs;
    m->nb = sb->n;
    m->nn = sn->n;
    m->lo = m->hi = NAN;
    family_logs(c, m, sb, g[0].run_of, sn, g[1].run_of);
}

static int add_metric(const gt_compare *c, cmp_result *r, const char *name, json_t *mb,
                      json_t *mn) {
    const gt_compare_options *opt = &c->opt;
    cmp_metric *n = realloc(r->m, (r->nm + 1) * sizeof *n);
    if (!n) return -1;
    r->m = n;
    cmp_metric *m = &r->m[r->nm++];
    json_t *any = mn ? mn : mb;
    *m = (cmp_metric){.name = name,
                      .unit = str_or(json_object_get(any, "unit"), ""),
                      .derived_from = derived_source(any, r),
                      .ungated = ungated_kind(name, mb, mn),
                      .in_base = mb != NULL,
                      .in_new = mn != NULL,
                      .higher_better =
                          strcmp(str_or(json_object_get(any, "better"), "higher"), "lower") != 0,
                      .verdict = GT_VERDICT_AMBIGUOUS,
                      .method = GT_METHOD_NONE,
                      .base_med = NAN,
                      .new_med = NAN,
                      .rel = NAN,
                      .p = NAN,
                      .p_adj = NAN,
                      .detectable = NAN};
    gathered g[2] = {{0}, {0}};
    side *sb = &g[0].sd, *sn = &g[1].sd;
    int rc = 0;
    if ((mb && gather(mb, c->xb, c->nxb, r->key, name, aside_of(c, 0), &g[0])) ||
        (mn && gather(mn, c->xn, c->nxn, r->key, name, aside_of(c, 1), &g[1]))) {
        rc = -1;
    } else if (mb && mn) {
        if (opt->machine_state && gt_cmp_us_per_unit(m->unit) > 0 && sb->runs && sn->runs) {
            unload_time(c, m, g);
            if (!m->waits_known) memcpy(m->neighbour, r->neighbour, sizeof m->neighbour);
        }
        judge_metric(c, m, g);
    } else {
        sb->q = sn->q = time_q(m->unit, opt, sb, sn, c->loaded);
        m->base_med = sb->n ? loc(sb, sb->v, sb->n) : NAN;
        m->new_med = sn->n ? loc(sn, sn->v, sn->n) : NAN;
        m->nb = sb->n;
        m->nn = sn->n;
    }
    gathered_free(&g[0]);
    gathered_free(&g[1]);
    return rc;
}

/* A check's state in one report: -1 absent, 0 failed, 1 passed, 2 recorded
 * but not evaluated ("evaluated": false: that run could not judge it). */
static int check_state(json_t *ck) {
    if (!ck) return -1;
    if (json_is_false(json_object_get(ck, "evaluated"))) return 2;
    return json_is_true(json_object_get(ck, "passed"));
}

static int add_check(cmp_result *r, json_t *cb, json_t *cn) {
    cmp_check *n = realloc(r->ck, (r->nck + 1) * sizeof *n);
    if (!n) return -1;
    r->ck = n;
    json_t *any = cn ? cn : cb;
    r->ck[r->nck++] = (cmp_check){
        .name = str_or(json_object_get(any, "name"), "?"),
        .detail = json_string_value(json_object_get(any, "detail")),
        .base_state = check_state(cb),
        .new_state = check_state(cn),
        .value = json_is_number(json_object_get(any, "value"))
                     ? json_number_value(json_object_get(any, "value"))
                     : NAN,
        .limit = json_is_number(json_object_get(any, "limit"))
                     ? json_number_value(json_object_get(any, "limit"))
                     : NAN,
    };
    return 0;
}

static json_t *find_check(json_t *checks, const char *name) {
    size_t i;
    json_t *c;
    json_array_foreach(checks, i, c) {
        if (strcmp(str_or(json_object_get(c, "name"), ""), name) == 0) return c;
    }
    return NULL;
}

static void append_note(cmp_result *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void append_note(cmp_result *r, const char *fmt, ...) {
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    char *n = xprintf("%s%s\n", r->notes ? r->notes : "", line);
    if (!n) return;
    free(r->notes);
    r->notes = n;
}

static int compare_result(gt_compare *c, cmp_result *r) {
    gt_compare_counts *k = &c->counts;
    const gt_report_result *any = r->rn ? r->rn : r->rb;
    r->suite = any->suite;
    r->case_name = any->case_name;
    r->topology = any->topology;
    r->backend = any->backend;
    r->base_status = r->rb ? gt_result_status_name(r->rb->status) : NULL;
    r->new_status = r->rn ? gt_result_status_name(r->rn->status) : NULL;
    r->new_message = r->rn ? r->rn->message : NULL;
    int base_pass = r->base_status && strcmp(r->base_status, "pass") == 0;
    if (!r->nw) {
        /* a case that disappeared must not ship silently */
        if (base_pass) {
            r->missing = 1;
            k->missing++;
        } else {
            k->only_base++;
        }
        return 0;
    }
    if (!r->base)
        k->only_new++;
    else
        k->matched++;
    int new_skip = strcmp(r->new_status, "skip") == 0;
    int new_error = strcmp(r->new_status, "error") == 0;
    if (base_pass && new_skip) {
        r->missing = 1; /* coverage lost: e.g. a library the op needs is gone */
        k->missing++;
    }
    /* checks: every check of NEW, then BASE's that NEW lacks */
    json_t *cb = r->base ? json_object_get(r->base, "checks") : NULL;
    json_t *cn = json_object_get(r->nw, "checks");
    size_t i;
    json_t *ch;
    json_array_foreach(cn, i, ch) {
        if (add_check(r, find_check(cb, str_or(json_object_get(ch, "name"), "")), ch)) return -1;
        const cmp_check *x = &r->ck[r->nck - 1];
        if (!x->new_state) r->failed_checks++;
        /* not judged in this run (nothing steady enough to judge it by):
         * neither a failure nor a vanished check, but said */
        if (x->new_state == 2)
            append_note(r, "check %s not evaluated in NEW%s%s", x->name, x->detail ? ": " : "",
                        x->detail ? x->detail : "");
    }
    json_array_foreach(cb, i, ch) {
        if (find_check(cn, str_or(json_object_get(ch, "name"), ""))) continue;
        if (add_check(r, ch, NULL)) return -1;
        /* a check that vanished counts as failed, unless the whole result
         * already fails for not running (error, skip) */
        if (r->ck[r->nck - 1].base_state == 1 && !new_skip && !new_error) r->failed_checks++;
    }
    k->failed_checks += r->failed_checks;
    if (new_error || (strcmp(r->new_status, "fail") == 0 && r->failed_checks == 0)) {
        r->failed = 1;
        k->failed_results++;
    }
    /* the node's record of each side's runs, for its times with no wait record */
    for (int i = 0; r->base && i < 2; i++)
        if ((r->neighbour[i] = neighbour_runs(c, r, i ? r->nw : r->base, i)) < 0) return -1;
    /* metrics: BASE's order, then NEW's additions */
    json_t *mb = r->base ? json_object_get(r->base, "metrics") : NULL;
    json_t *mn = json_object_get(r->nw, "metrics");
    const char *name;
    json_t *m;
    /* reports before busbw was left out on one rank carry it there: a no-op
     * "bandwidth" (0, or 10,000 GB/s for broadcast) that must gate nothing */
    int no_bus = strcmp(str_or(json_object_get(r->nw, "suite"), ""), "collectives") == 0 &&
                 strcmp(str_or(json_object_get(r->nw, "topology"), ""), "1") == 0;
    json_object_foreach(mb, name, m) {
        if ((no_bus && strstr(name, "busbw_")) || !in_list(c->opt.metrics, name)) continue;
        if (add_metric(c, r, name, m, json_object_get(mn, name))) return -1;
    }
    json_object_foreach(mn, name, m) {
        if (json_object_get(mb, name) || (no_bus && strstr(name, "busbw_")) ||
            !in_list(c->opt.metrics, name))
            continue;
        if (add_metric(c, r, name, NULL, m)) return -1;
    }
    judge_parts(c, r);
    /* the loss curve against BASE's: the same run on another stack must
     * train the same way; bitwise equality is reported, a deviation beyond
     * loss_rtol at any step is a failed check */
    json_t *lb = r->base ? json_object_get(json_object_get(r->base, "series"), "loss") : NULL;
    json_t *ln = json_object_get(json_object_get(r->nw, "series"), "loss");
    size_t nl = json_array_size(lb);
    if (nl > 0 && nl == json_array_size(ln)) {
        double worst = 0;
        size_t at = 0;
        for (size_t s_ = 0; s_ < nl; s_++) {
            double x = json_number_value(json_array_get(lb, s_));
            double y = json_number_value(json_array_get(ln, s_));
            double d = x == y ? 0.0 : fabs(x - y) / fmax(fabs(x), 1e-30);
            if (!(d <= worst)) {
                worst = d;
                at = s_;
            }
        }
        if (worst == 0) {
            append_note(r, "loss curve: bitwise identical to BASE over %zu steps", nl);
        } else {
            append_note(r, "loss curve: largest relative difference %.3g at step %zu (limit %g)",
                        worst, at + 1, c->opt.loss_rtol);
            if (!(worst <= c->opt.loss_rtol)) {
                cmp_check *n = realloc(r->ck, (r->nck + 1) * sizeof *n);
                if (!n) return -1;
                r->ck = n;
                r->ck[r->nck++] = (cmp_check){.name = "loss_curve",
                                              .detail = "per-step loss within loss_rtol of BASE",
                                              .base_state = 1,
                                              .new_state = 0,
                                              .value = worst,
                                              .limit = c->opt.loss_rtol};
                r->failed_checks++;
                k->failed_checks++;
            }
        }
    } else if (nl > 0 && json_array_size(ln) > 0) {
        append_note(r, "loss curve: %zu steps in BASE, %zu in NEW: not compared", nl,
                    json_array_size(ln));
    }
    /* measured params that changed: not failures, but worth seeing (a new
     * weights digest means the numerics changed) */
    if (r->base) {
        json_t *pb = json_object_get(r->base, "params"), *pn = json_object_get(r->nw, "params");
        for (int e = 0; gt_compare_excluded_params[e]; e++) {
            json_t *a = json_object_get(pb, gt_compare_excluded_params[e]);
            json_t *b = json_object_get(pn, gt_compare_excluded_params[e]);
            if ((!a && !b) || (a && b && json_equal(a, b))) continue;
            char *ta = json_text(a), *tb = json_text(b);
            append_note(r, "%s: %s -> %s", gt_compare_excluded_params[e], ta ? ta : "?",
                        tb ? tb : "?");
            free(ta);
            free(tb);
        }
    }
    return 0;
}

static void count_busy(gt_compare_counts *k, const cmp_metric *m) {
    for (int i = 0; i < 2; i++) {
        k->busy_dropped[i] += (int)m->busy_out[i];
        k->busy_unloaded[i] += (int)m->unloaded[i];
    }
    k->busy_times += m->busy_out[0] + m->busy_out[1] + m->unloaded[0] + m->unloaded[1] > 0;
}

static void count_state(gt_compare_counts *k, const gt_state_fit *f) {
    if (f->outcome == GT_STATE_CONFOUNDED) k->state_confounded++;
    if (f->outcome != GT_STATE_ADJUSTED) return;
    if (!k->state_adjusted++ || f->ref_ns < k->state_ref_ns) k->state_ref_ns = f->ref_ns;
    k->state_within += f->within_runs;
    if (f->hi_ns > k->state_hi_ns) k->state_hi_ns = f->hi_ns;
}

static void count_verdicts(gt_compare *c) {
    gt_compare_counts *k = &c->counts;
    for (size_t i = 0; i < c->nres; i++)
        for (size_t j = 0; j < c->res[i].nm; j++) {
            const cmp_metric *x = &c->res[i].m[j];
            if (!x->in_base || !x->in_new) {
                k->metrics_one_side++;
                continue;
            }
            count_busy(k, x);
            if (x->derived_from) {
                k->derived++;
                continue;
            }
            if (x->method == GT_METHOD_FLOOR) {
                k->below_floor++;
                continue;
            }
            if (x->ungated) {
                k->ungated++;
                continue;
            }
            count_state(k, &x->state);
            switch (x->verdict) {
            case GT_VERDICT_SAME:
                k->same++;
                break;
            case GT_VERDICT_FASTER:
                k->faster++;
                break;
            case GT_VERDICT_SLOWER:
                k->slower++;
                break;
            case GT_VERDICT_UNDECIDED:
                k->undecided++;
                k->beyond_reach += x->beyond_reach;
                break;
            default:
                k->ambiguous++;
                break;
            }
        }
    for (size_t i = 0; i < c->nfam; i++) {
        k->families++;
        k->families_slower += c->fam[i].verdict == GT_VERDICT_SLOWER;
        k->families_undecided += c->fam[i].verdict == GT_VERDICT_UNDECIDED;
        k->families_faster += c->fam[i].verdict == GT_VERDICT_FASTER;
        k->beyond_reach += c->fam[i].beyond_reach;
    }
}

static json_t *params_of(const cmp_result *r) {
    return json_object_get(r->nw ? r->nw : r->base, "params");
}

static char *place_of(const cmp_result *r) {
    return xprintf("%s\x1f%s\x1f%s\x1f%s", r->suite, r->case_name, r->topology, r->backend);
}

typedef struct placed {
    char *place;
    size_t idx;
} placed;

static int cmp_placed(const void *a, const void *b) {
    const placed *x = a, *y = b;
    int c = strcmp(x->place ? x->place : "", y->place ? y->place : "");
    return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

/* "suite/case [topology T, backend B, p=v ...]": the params shown are those
 * that tell this result from others with the same suite, case, topology and
 * backend (in_place=1 for collectives), so a name is unique but short.
 * Results are grouped by place first: comparing within groups keeps this
 * fast on reports with thousands of results. */
static void make_labels(gt_compare *c) {
    placed *pl = calloc(c->nres ? c->nres : 1, sizeof *pl);
    if (!pl) return;
    for (size_t i = 0; i < c->nres; i++)
        pl[i] = (placed){place_of(&c->res[i]), i};
    qsort(pl, c->nres, sizeof *pl, cmp_placed);
    for (size_t g0 = 0, g1; g0 < c->nres; g0 = g1) {
        for (g1 = g0 + 1; g1 < c->nres &&
                          cmp_placed(&(placed){pl[g0].place, 0}, &(placed){pl[g1].place, 0}) == 0;
             g1++) {
        }
        for (size_t a = g0; a < g1; a++) {
            cmp_result *r = &c->res[pl[a].idx];
            char extra[512] = "";
            size_t len = 0;
            const char *k;
            json_t *v;
            json_object_foreach(params_of(r), k, v) {
                if (is_excluded(k)) continue;
                int differs = 0;
                for (size_t b = g0; b < g1 && !differs; b++) {
                    if (b == a) continue;
                    json_t *o = json_object_get(params_of(&c->res[pl[b].idx]), k);
                    differs = !o || !json_equal(o, v);
                }
                if (!differs) continue;
                char *t = json_text(v);
                int w = snprintf(extra + len, sizeof extra - len, ", %s=%s", k, t ? t : "?");
                free(t);
                if (w > 0)
                    len = len + (size_t)w < sizeof extra ? len + (size_t)w : sizeof extra - 1;
            }
            /* the k-th result with the same identity (matched k-th to k-th) */
            char num[24] = "";
            if (r->repeat > 1) snprintf(num, sizeof num, " #%d", r->repeat);
            r->label = xprintf("%s/%s [topology %s, backend %s%s]%s", r->suite, r->case_name,
                               r->topology, r->backend, extra, num);
            if (!r->label) r->label = strdup("?");
        }
    }
    for (size_t i = 0; i < c->nres; i++)
        free(pl[i].place);
    free(pl);
}

static void free_extra(extra_run *x) {
    for (size_t i = 0; x->keys && i < x->n; i++) free(x->keys[i]);
    free(x->keys);
    free(x->sorted);
    free(x->path);
    gt_report_doc_free(x->rd);
}

/* A report's timed blocks that say how long they waited for a CPU
 * ("cpu_wait"): *all of them, *busy those that waited GT_STATE_BUSY_WAIT. */
static void busy_blocks(json_t *doc, double *busy, double *all) {
    size_t i, j;
    json_t *r, *w;
    json_array_foreach(json_object_get(doc, "results"), i, r) {
        const char *name;
        json_t *m;
        json_object_foreach(json_object_get(r, "metrics"), name, m) {
            json_array_foreach(json_object_get(m, "cpu_wait"), j, w) {
                if (!json_is_number(w)) continue;
                *all += 1;
                *busy += json_number_value(w) >= GT_STATE_BUSY_WAIT;
            }
        }
    }
}

static json_t *run_doc(const gt_compare *c, int new_side, size_t i) {
    if (new_side) return i ? c->xn[i - 1].doc : c->new_doc;
    return i ? c->xb[i - 1].doc : c->base_doc;
}

/* Was a run on a loaded machine: w[0] of its w[1] timed blocks waited for a
 * CPU, GT_STATE_LOADED of them or more? */
static int run_loaded(const double *w) { return w[1] > 0 && w[0] / w[1] >= GT_STATE_LOADED; }

/* Interleaved pairs in a loaded window (another process came and went): a
 * pair with a run on a loaded machine is set aside (c->aside) where
 * GT_COMPARE_CLEAN_PAIRS pairs or more ran without, and no fewer than were
 * set aside (a window passes; a stack whose own threads wait does so in
 * most of its runs, and is then judged by machine_load's rule), and the
 * others decide: loaded, a collective's blocks move with the load by more
 * than a change to be caught (docs/ci-gating.md, "A loaded window"). wb,
 * wn: each run's waited and timed blocks (machine_load). -1 when out of
 * memory. */
static int set_aside_pairs(gt_compare *c, const double *wb, const double *wn) {
    if (!c->opt.paired || c->nxb != c->nxn) return 0;
    size_t n = c->nxb + 1;
    unsigned char *aside = calloc(n, 1);
    if (!aside) return -1;
    int loaded = 0, runs[2] = {0, 0};
    for (size_t i = 0; i < n; i++) {
        int b = run_loaded(wb + 2 * i), w = run_loaded(wn + 2 * i);
        aside[i] = b || w;
        loaded += aside[i];
        runs[0] += b;
        runs[1] += w;
    }
    int clean = (int)n - loaded;
    if (!loaded || clean < GT_COMPARE_CLEAN_PAIRS || clean < loaded) {
        free(aside);
        return 0;
    }
    c->aside = aside;
    c->counts.pairs_aside = loaded;
    c->counts.runs_aside[0] = runs[0];
    c->counts.runs_aside[1] = runs[1];
    return 0;
}

/* Did the report's own record of its node (run.node_load, a job on one
 * node) see other processes keep less than GT_STATE_QUIET_NODE of a core
 * busy over the run? Its blocks' waits were then the stack's own threads. */
static int node_quiet(json_t *doc) {
    json_t *rec = json_object_get(json_object_get(doc, "run"), "node_load");
    json_t *job = json_object_get(json_object_get(doc, "env"), "job");
    json_t *nodes = json_object_get(job, "n_nodes"), *o = json_object_get(rec, "cpu_others_cores");
    if (json_is_integer(nodes) && json_integer_value(nodes) != 1) return 0;
    return json_is_number(o) && json_number_value(o) < GT_STATE_QUIET_NODE;
}

/* Was run i of a side (w: its waited and timed blocks) beside a neighbour:
 * on a loaded machine, and its node record, where it has one, saw another
 * process? */
static int run_beside(const gt_compare *c, int side, size_t i, const double *w) {
    return run_loaded(w) && !node_quiet(run_doc(c, side, i));
}

/* A side's runs beside a neighbour (beside[0..n)) set aside (c->skip[side])
 * where GT_COMPARE_CLEAN_PAIRS of its runs or more ran without, and no
 * fewer than are set aside (as set_aside_pairs; a stack whose own threads
 * wait does so in most of its runs). -1 when out of memory. */
static int set_aside_side(gt_compare *c, const unsigned char *beside, size_t n, int side) {
    int loaded = 0;
    for (size_t i = 0; i < n; i++)
        loaded += beside[i];
    int clean = (int)n - loaded;
    if (!loaded || clean < GT_COMPARE_CLEAN_PAIRS || clean < loaded) return 0;
    unsigned char *skip = malloc(n);
    if (!skip) return -1;
    memcpy(skip, beside, n);
    c->skip[side] = skip;
    c->counts.runs_aside[side] = loaded;
    return 0;
}

static double share_of(const unsigned char *flags, size_t n) {
    int k = 0;
    for (size_t i = 0; i < n; i++)
        k += flags[i];
    return n ? (double)k / (double)n : 0;
}

/* Runs not paired in a loaded window: where the shares of the sides' runs
 * beside a neighbour (beside: BASE's nb, then NEW's nn) differ by
 * GT_STATE_UNEVEN or more, each side's are set aside where it can
 * (set_aside_side): a neighbour slows the blocks it does not make wait too,
 * so uneven loaded runs move one side's level more than the other's
 * (lopsided_load judges what stays uneven). Sides loaded alike keep every
 * run, each block less its wait. -1 when out of memory. */
static int set_aside_runs(gt_compare *c, const unsigned char *beside, size_t nb, size_t nn) {
    if (c->opt.paired || !nb || !nn) return 0;
    if (fabs(share_of(beside + nb, nn) - share_of(beside, nb)) < GT_STATE_UNEVEN) return 0;
    return set_aside_side(c, beside, nb, 0) || set_aside_side(c, beside + nb, nn, 1) ? -1 : 0;
}

/* Runs not paired, the load another process put on the machine (not the
 * stack's own: busy_own): 1 when BASE's runs were on a loaded machine
 * GT_STATE_LOPSIDED more often than NEW's, 2 for NEW's, else 0 (a pair's
 * two runs share the load; set_aside_pairs sets loaded pairs aside). */
static int lopsided_load(const gt_compare *c) {
    if (c->opt.paired || c->busy_own || !c->runs_judged[0] || !c->runs_judged[1]) return 0;
    double b = (double)c->runs_loaded[0] / c->runs_judged[0];
    double n = (double)c->runs_loaded[1] / c->runs_judged[1];
    if (n - b >= GT_STATE_LOPSIDED) return 2;
    return b - n >= GT_STATE_LOPSIDED ? 1 : 0;
}

/* How often each side's timed blocks waited for a CPU over its runs (those
 * not set aside, c->busy_share): one side far more often than the other is
 * the stack's own threads (c->busy_own 1 BASE, 2 NEW: nothing is taken off
 * or moved); either side often is a loaded machine (c->loaded: times are
 * taken less their waits but not moved to one state). Each report is read
 * once, per run. -1 when out of memory. */
static int machine_load(gt_compare *c) {
    c->busy_own = c->loaded = c->lopsided = 0;
    c->runs_loaded[0] = c->runs_loaded[1] = c->runs_judged[0] = c->runs_judged[1] = 0;
    if (!c->opt.machine_state) return 0; /* --machine-state off: every time as measured */
    size_t nb = c->nxb + 1, nn = c->nxn + 1;
    double *wb = calloc(2 * (nb + nn), sizeof *wb), *wn = wb ? wb + 2 * nb : NULL;
    unsigned char *beside = malloc(nb + nn);
    if (!wb || !beside) {
        free(wb);
        free(beside);
        return -1;
    }
    for (size_t i = 0; i < nb + nn; i++) {
        int side = i >= nb;
        size_t run = side ? i - nb : i;
        busy_blocks(run_doc(c, side, run), &wb[2 * i], &wb[2 * i + 1]);
        beside[i] = (unsigned char)run_beside(c, side, run, &wb[2 * i]);
    }
    if (set_aside_pairs(c, wb, wn) || set_aside_runs(c, beside, nb, nn)) {
        free(wb);
        free(beside);
        return -1;
    }
    double sum[2][2] = {{0, 0}, {0, 0}}; /* BASE's, NEW's: waited, timed */
    for (size_t i = 0; i < nb + nn; i++) {
        size_t run = i < nb ? i : i - nb;
        const unsigned char *aside = aside_of(c, i >= nb);
        if (aside && aside[run]) continue;
        sum[i >= nb][0] += wb[2 * i];
        sum[i >= nb][1] += wb[2 * i + 1];
        c->runs_loaded[i >= nb] += beside[i];
        c->runs_judged[i >= nb]++;
    }
    free(wb);
    free(beside);
    double bb = sum[0][0], ab = sum[0][1], bn = sum[1][0], an = sum[1][1];
    double fb = ab > 0 ? bb / ab : 0, fn = an > 0 ? bn / an : 0;
    c->busy_share[0] = fb;
    c->busy_share[1] = fn;
    if (fn >= GT_STATE_BUSY_OWN_SHARE && fn >= GT_STATE_BUSY_OWN_X * (fb + 0.01)) c->busy_own = 2;
    if (fb >= GT_STATE_BUSY_OWN_SHARE && fb >= GT_STATE_BUSY_OWN_X * (fn + 0.01)) c->busy_own = 1;
    c->loaded = fmax(fb, fn) >= GT_STATE_LOADED;
    c->lopsided = lopsided_load(c);
    return 0;
}

int gt_cmp_loaded_by_other(const gt_compare *c) { return c->loaded && !c->busy_own; }

/* One side: a report, or a directory of reports (several runs of one stack,
 * a baseline kept together), the first in name order being the one whose
 * environment and results are listed. Every file is read by gt_report_read
 * (reports/read.h): one bad run refuses the side, naming that file. */
static gt_status load_side(const char *which, const char *path, gt_report_doc **first,
                           extra_run **xs, size_t *nx) {
    *first = NULL;
    *xs = NULL;
    *nx = 0;
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) return gt_report_read(path, which, first);
    struct dirent **ents = NULL;
    int n = scandir(path, &ents, gt_report_json_entry, alphasort);
    if (n < 0)
        return GT_ERR(GT_ERR_IO, "cannot list the %s directory '%s': %s", which, path,
                      strerror(errno));
    gt_status s = GT_OK;
    if (n == 0)
        s = GT_ERR(GT_ERR_IO,
                   "the %s directory '%s' holds no .json report; pass a report written by "
                   "--report, or a directory of them (several runs of one stack)",
                   which, path);
    if (n > 1 && !(*xs = calloc((size_t)n - 1, sizeof **xs)))
        s = GT_ERR(GT_ERR_OOM, "no memory for compare");
    for (int i = 0; i < n && s == GT_OK; i++) {
        char *file = xprintf("%s/%s", path, ents[i]->d_name);
        gt_report_doc *rd = NULL;
        s = file ? gt_report_read(file, which, &rd) : GT_ERR(GT_ERR_OOM, "no memory for compare");
        if (s == GT_OK && i == 0) {
            *first = rd;
            free(file);
        } else if (s == GT_OK) {
            extra_run *x = &(*xs)[(*nx)++];
            x->rd = rd;
            x->doc = gt_report_doc_json(rd);
            x->path = file;
            int *reps = NULL;
            x->keys = report_keys(x->doc, &x->n, &reps);
            free(reps);
            x->sorted = calloc(x->n ? x->n : 1, sizeof *x->sorted);
            if (!x->keys || !x->sorted) {
                s = GT_ERR(GT_ERR_OOM, "no memory for compare");
                break;
            }
            for (size_t k = 0; k < x->n; k++) x->sorted[k] = (keyed){x->keys[k] ? x->keys[k] : "", k};
            qsort(x->sorted, x->n, sizeof *x->sorted, cmp_keyed);
        } else {
            free(file);
        }
    }
    for (int i = 0; i < n; i++) free(ents[i]);
    free(ents);
    if (s != GT_OK) {
        gt_report_doc_free(*first);
        *first = NULL;
        for (size_t i = 0; i < *nx; i++) free_extra(&(*xs)[i]);
        free(*xs);
        *xs = NULL;
        *nx = 0;
    }
    return s;
}

/* Each name of a selection list must occur in one of the reports (a typo
 * would otherwise select nothing, and nothing never fails a gate). metric:
 * look among the results' metrics, else among the suites. */
static gt_status check_selection(const gt_compare *c, const char *list, int metric) {
    if (!list) return GT_OK;
    if (!*list)
        return GT_ERR(GT_ERR_INVALID, "--%s: an empty list selects nothing",
                      metric ? "metric" : "suite");
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        int found = 0;
        json_t *docs[2] = {c->base_doc, c->new_doc};
        for (int d = 0; d < 2 && !found; d++) {
            size_t i;
            json_t *r;
            json_array_foreach(json_object_get(docs[d], "results"), i, r) {
                const char *k;
                json_t *v;
                if (!metric) {
                    const char *su = str_or(json_object_get(r, "suite"), "");
                    found = strlen(su) == len && strncmp(su, p, len) == 0;
                } else {
                    json_object_foreach(json_object_get(r, "metrics"), k, v) {
                        if (strlen(k) == len && strncmp(k, p, len) == 0) found = 1;
                    }
                }
                if (found) break;
            }
        }
        if (!found)
            return GT_ERR(GT_ERR_INVALID,
                          "--%s: no result of either report has %s '%.*s'; check the name "
                          "(gauntlet compare --verbose lists them)",
                          metric ? "metric" : "suite", metric ? "a metric" : "the suite",
                          (int)len, p);
        if (!e) break;
        p = e + 1;
    }
    return GT_OK;
}

/* An incomplete report (summary.complete false: the run was killed, or is
 * still going) holds what finished before it ended, not the run: as BASE it
 * would make every case it never reached "missing" and hide a regression in
 * them, so it is refused (GT_ERR_INVALID); as NEW it must not ship. */
static gt_status check_complete(gt_compare *c) {
    for (size_t i = 0; i <= c->nxb; i++) {
        const gt_report_doc *d = i == 0 ? c->base_rd : c->xb[i - 1].rd;
        const char *why = gt_report_doc_incomplete(d);
        if (why)
            return GT_ERR(GT_ERR_INVALID,
                          "the BASE report '%s' is incomplete (summary.complete false: %s): a "
                          "run that did not finish cannot be a baseline; use the report of a "
                          "finished run, or run the baseline again",
                          gt_report_doc_path(d), why);
    }
    for (size_t i = 0; i <= c->nxn; i++) {
        const gt_report_doc *d = i == 0 ? c->new_rd : c->xn[i - 1].rd;
        const char *why = gt_report_doc_incomplete(d);
        if (!why) continue;
        c->counts.incomplete_new++;
        if (!c->new_incomplete) {
            c->new_incomplete = xprintf("'%s': %s", gt_report_doc_path(d), why);
            if (!c->new_incomplete) return GT_ERR(GT_ERR_OOM, "no memory for compare");
        }
    }
    return GT_OK;
}

static void profile_lines(gt_compare *c);

/* The alpha this compare tests at: the option's, or in a sequential design
 * the share its look may spend (reports/gate_stats.h, gt_gs_look_alpha). The
 * look counts pairs (--paired) or NEW's runs (a baseline that stays while
 * the candidate side grows). */
static gt_status sequential_look(gt_compare *c) {
    const gt_compare_options *o = &c->opt;
    c->alpha = o->alpha;
    c->pairs = o->paired ? (int)c->nxb + 1 : 0;
    c->look = o->paired ? c->pairs : (int)c->nxn + 1;
    if (o->seq_max <= 0) return GT_OK;
    const char *unit = o->paired ? "pairs" : "NEW runs";
    int least = o->paired ? 2 : 1;
    if (o->seq_first < least || o->seq_first > o->seq_max)
        return GT_ERR(GT_ERR_INVALID,
                      "--sequential %d:%d: the first look needs %d %s or more and at most the "
                      "budget (FIRST:MAX, e.g. %s)",
                      o->seq_first, o->seq_max, least, unit, o->paired ? "5:12" : "1:3");
    if (c->look < o->seq_first || c->look > o->seq_max)
        return GT_ERR(GT_ERR_INVALID,
                      "--sequential %d:%d: %s %d %s, outside the design's looks (%d to %d); run "
                      "the %s the design looks at, or change FIRST:MAX",
                      o->seq_first, o->seq_max, o->paired ? "the sides hold" : "NEW holds",
                      c->look, o->paired ? "pairs" : "runs", o->seq_first, o->seq_max, unit);
    c->alpha = gt_gs_look_alpha((gt_gs_spending)o->spending, o->alpha, c->look, o->seq_first,
                                o->seq_max);
    return GT_OK;
}

gt_status gt_compare_files(const char *base_path, const char *new_path,
                           const gt_compare_options *opt, gt_compare **out) {
    *out = NULL;
    gt_compare *c = calloc(1, sizeof *c);
    if (!c) return GT_ERR(GT_ERR_OOM, "no memory for compare");
    c->opt = opt ? *opt : gt_compare_defaults();
    c->base_path = strdup(base_path);
    c->new_path = strdup(new_path);
    gt_status s = load_side("BASE", base_path, &c->base_rd, &c->xb, &c->nxb);
    if (s == GT_OK) s = load_side("NEW", new_path, &c->new_rd, &c->xn, &c->nxn);
    if (s == GT_OK) s = check_complete(c);
    if (s != GT_OK) {
        gt_compare_free(c);
        return s;
    }
    c->base_doc = gt_report_doc_json(c->base_rd);
    c->new_doc = gt_report_doc_json(c->new_rd);
    if (c->opt.paired && (c->nxb == 0 || c->nxb != c->nxn)) {
        s = GT_ERR(GT_ERR_INVALID,
                   "--paired needs BASE and NEW to be directories of as many reports (run i "
                   "of each made side by side); here BASE has %zu and NEW %zu",
                   c->nxb + 1, c->nxn + 1);
        gt_compare_free(c);
        return s;
    }
    if ((s = sequential_look(c)) != GT_OK || (s = check_selection(c, c->opt.suites, 0)) != GT_OK ||
        (s = check_selection(c, c->opt.metrics, 1)) != GT_OK) {
        gt_compare_free(c);
        return s;
    }
    fingerprint(c);
    c->counts.fingerprint_diffs = (int)c->nfp;
    for (size_t i = 0; i < c->nfp; i++) c->counts.machine_diffs += c->fp[i].machine;

    size_t nb = 0, nn = 0;
    int *rpb = NULL, *rpn = NULL;
    char **kb = report_keys(c->base_doc, &nb, &rpb), **kn = report_keys(c->new_doc, &nn, &rpn);
    keyed *sorted = calloc(nn ? nn : 1, sizeof *sorted);
    char *used = calloc(nn ? nn : 1, 1);
    c->res = calloc(nb + nn ? nb + nn : 1, sizeof *c->res);
    if (!kb || !kn || !sorted || !used || !c->res) {
        s = GT_ERR(GT_ERR_OOM, "no memory for compare");
        goto done;
    }
    for (size_t i = 0; i < nn; i++)
        sorted[i] = (keyed){kn[i] ? kn[i] : "", i};
    qsort(sorted, nn, sizeof *sorted, cmp_keyed);
    json_t *rb = json_object_get(c->base_doc, "results"),
           *rn = json_object_get(c->new_doc, "results");
    for (size_t i = 0; i < nb; i++) {
        if (!in_list(c->opt.suites, str_or(json_object_get(json_array_get(rb, i), "suite"), "")))
            continue;
        cmp_result *r = &c->res[c->nres++];
        r->base = json_array_get(rb, i);
        r->rb = gt_report_doc_result(c->base_rd, i);
        r->key = kb[i];
        r->repeat = rpb[i];
        kb[i] = NULL;
        /* lower bound of the key among NEW's sorted keys */
        size_t lo = 0, hi = nn;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (strcmp(sorted[mid].key, r->key ? r->key : "") < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < nn && strcmp(sorted[lo].key, r->key ? r->key : "") == 0) {
            r->nw = json_array_get(rn, sorted[lo].idx);
            r->rn = gt_report_doc_result(c->new_rd, sorted[lo].idx);
            used[sorted[lo].idx] = 1;
        }
    }
    for (size_t i = 0; i < nn; i++) {
        if (used[i] ||
            !in_list(c->opt.suites, str_or(json_object_get(json_array_get(rn, i), "suite"), "")))
            continue;
        cmp_result *r = &c->res[c->nres++];
        r->nw = json_array_get(rn, i);
        r->rn = gt_report_doc_result(c->new_rd, i);
        r->key = kn[i];
        r->repeat = rpn[i];
        kn[i] = NULL;
    }
    if (machine_load(c)) {
        s = GT_ERR(GT_ERR_OOM, "no memory for compare");
        goto done;
    }
    for (size_t i = 0; i < c->nres; i++)
        if (compare_result(c, &c->res[i])) {
            s = GT_ERR(GT_ERR_OOM, "no memory for compare");
            goto done;
        }
    if (gt_cmp_families(c)) {
        s = GT_ERR(GT_ERR_OOM, "no memory for compare");
        goto done;
    }
    count_verdicts(c);
    make_labels(c);
    profile_lines(c);
done:
    for (size_t i = 0; kb && i < nb; i++)
        free(kb[i]);
    for (size_t i = 0; kn && i < nn; i++)
        free(kn[i]);
    free(kb);
    free(kn);
    free(rpb);
    free(rpn);
    free(sorted);
    free(used);
    if (s != GT_OK) {
        gt_compare_free(c);
        return s;
    }
    *out = c;
    return GT_OK;
}

void gt_compare_free(gt_compare *c) {
    if (!c) return;
    gt_cmp_families_free(c);
    free(c->aside);
    free(c->skip[0]);
    free(c->skip[1]);
    free(c->new_incomplete);
    for (size_t i = 0; i < c->nfp; i++) {
        free(c->fp[i].key);
        free(c->fp[i].base);
        free(c->fp[i].nw);
    }
    free(c->fp);
    for (size_t i = 0; i < c->nres; i++) {
        free(c->res[i].key);
        free(c->res[i].label);
        for (size_t j = 0; j < c->res[i].nm; j++) {
            free(c->res[i].m[j].lb);
            free(c->res[i].m[j].blk);
            free(c->res[i].m[j].ln);
        }
        free(c->res[i].m);
        free(c->res[i].ck);
        free(c->res[i].notes);
        free(c->res[i].profile_line);
    }
    free(c->res);
    gt_report_doc_free(c->base_rd);
    gt_report_doc_free(c->new_rd);
    for (size_t i = 0; i < c->nxb; i++) free_extra(&c->xb[i]);
    for (size_t i = 0; i < c->nxn; i++) free_extra(&c->xn[i]);
    free(c->xb);
    free(c->xn);
    free(c->base_path);
    free(c->new_path);
    free(c);
}

void gt_compare_get_counts(const gt_compare *c, gt_compare_counts *out) {
    *out = c->counts;
}

gt_compare_decision gt_compare_decide(const gt_compare *c) {
    const gt_compare_counts *k = &c->counts;
    int slower = k->slower + k->families_slower;
    if ((slower && !c->opt.checks_only) || k->failed_checks || k->failed_results || k->missing ||
        k->incomplete_new)
        return GT_DECISION_MUST_NOT;
    if (c->not_comparable) return GT_DECISION_NOT_COMPARABLE;
    return gt_cmp_undecided(c) ? GT_DECISION_UNDECIDED : GT_DECISION_SHIP;
}

int gt_compare_may_ship(const gt_compare *c) { return gt_compare_decide(c) == GT_DECISION_SHIP; }

/* ---- text output -------------------------------------------------------------------- */

/* The fingerprint differences that are (machine 1) or are not parts of the
 * machine class, three lines each. */
static void print_fp_diffs(const gt_compare *c, FILE *f, int machine) {
    for (size_t i = 0; i < c->nfp; i++)
        if (c->fp[i].machine == machine)
            fprintf(f, "  %s\n      BASE %s\n      NEW  %s\n", c->fp[i].key, c->fp[i].base,
                    c->fp[i].nw);
}

/* The machine class differences first (they decide whether speed is
 * compared), then the rest of the fingerprint. */
static void print_fingerprint(const gt_compare *c, FILE *f) {
    const gt_compare_counts *k = &c->counts;
    if (k->machine_diffs)
        fprintf(f,
                "\nmachine class differences: %s\n",
                c->opt.across_machines
                    ? "speed judged anyway (--across-machines): a slower figure may be the "
                      "machine, not the stack"
                    : "NOT COMPARABLE: speed is shown, not gated (the checks, statuses and "
                      "missing results still are); run both on one machine class, or "
                      "--across-machines");
    print_fp_diffs(c, f, 1);
    int rest = k->fingerprint_diffs - k->machine_diffs;
    fprintf(f, "\nfingerprint differences (explain a change; not failures by themselves):%s\n",
            rest ? "" : " none");
    print_fp_diffs(c, f, 0);
}

static void fmt_num(char *buf, size_t len, double v) {
    if (isnan(v))
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.5g", v);
}

static void fmt_change(char *buf, size_t len, const cmp_metric *m) {
    if (!m->in_base || !m->in_new || m->method == GT_METHOD_NONE)
        snprintf(buf, len, "-");
    else if (isnan(m->rel))
        snprintf(buf, len, "from 0");
    else
        snprintf(buf, len, "%+.1f%%", 100.0 * m->rel);
}

static void fmt_p(char *buf, size_t len, const cmp_metric *m) {
    switch (m->method) {
    case GT_METHOD_RUNS:
    case GT_METHOD_BLOCKS:
    case GT_METHOD_PAIRED:
        if (m->derived_from || m->ungated)
            snprintf(buf, len, "-");
        else
            snprintf(buf, len, m->p_adj < 1e-3 ? "%.1e" : "%.3f", m->p_adj);
        break;
    default:
        snprintf(buf, len, "-");
        break;
    }
}

static const char *method_name(gt_compare_method m) {
    switch (m) {
    case GT_METHOD_RUNS:
        return "runs";
    case GT_METHOD_PAIRED:
        return "pairs";
    case GT_METHOD_BLOCKS:
        return "blocks";
    case GT_METHOD_SINGLE:
        return "few";
    case GT_METHOD_FLOOR:
        return "floor";
    default:
        return "-";
    }
}

/* A metric that fails the gate: slower in a pair, not derived from another
 * (that one is judged), unless only checks gate. */
static int gated_slower(const gt_compare *c, const cmp_metric *m) {
    return m->in_base && m->in_new && m->verdict == GT_VERDICT_SLOWER && !m->derived_from &&
           !m->ungated && !c->opt.checks_only;
}

static const char *metric_verdict_text(const cmp_metric *m) {
    if (!m->in_new) return "only in BASE";
    if (!m->in_base) return "only in NEW";
    if (m->method == GT_METHOD_NONE) return "ambiguous (no value)";
    if (m->method == GT_METHOD_FLOOR) return "not gated (below the timing floor)";
    if (m->ungated) {
        /* shown, not gated: the verdict in lower case and why */
        static char ubuf[96];
        snprintf(ubuf, sizeof ubuf, "%s (%s, not gated)", gt_verdict_name(m->verdict),
                 m->ungated);
        return ubuf;
    }
    if (m->derived_from) {
        /* shown, not gated: a lower-case word and the metric that decides */
        static char buf[96];
        snprintf(buf, sizeof buf, "%s (via %s)", gt_verdict_name(m->verdict), m->derived_from);
        return buf;
    }
    if (m->part_of) {
        static char pbuf[96];
        snprintf(pbuf, sizeof pbuf, "%s (change as a part of %s)",
                 m->verdict == GT_VERDICT_SLOWER ? "SLOWER" : gt_verdict_name(m->verdict),
                 m->part_of);
        return pbuf;
    }
    if (m->beyond_reach) return "UNDECIDED (too noisy to decide here)";
    if (m->verdict == GT_VERDICT_UNDECIDED) return "UNDECIDED";
    return m->verdict == GT_VERDICT_SLOWER ? "SLOWER" : gt_verdict_name(m->verdict);
}

static int result_is_quiet(const cmp_result *r) {
    if (r->missing || r->failed || r->failed_checks || !r->base || !r->nw) return 0;
    for (size_t j = 0; j < r->nm; j++)
        if (!r->m[j].in_base || !r->m[j].in_new || r->m[j].verdict != GT_VERDICT_SAME) return 0;
    return 1;
}

static void print_check_problems(const cmp_result *r, FILE *f, const char *indent) {
    for (size_t j = 0; j < r->nck; j++) {
        const cmp_check *k = &r->ck[j];
        if (k->new_state == 0) {
            fprintf(f, "%scheck %s FAILED in NEW (value %.6g, limit %.6g%s%s)%s\n", indent, k->name,
                    k->value, k->limit, k->detail ? ": " : "", k->detail ? k->detail : "",
                    k->base_state == 1 ? "; it passed in BASE" : "");
        } else if (k->new_state == -1 && k->base_state == 1 && !r->missing && !r->failed) {
            fprintf(f, "%scheck %s passed in BASE and is absent from NEW\n", indent, k->name);
        }
    }
}

static void fmt_detect(char *buf, size_t len, const cmp_metric *m) {
    if (isnan(m->detectable))
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.1f%%", 100.0 * m->detectable);
}

static void print_result(const gt_compare *c, const cmp_result *r, FILE *f, int quiet) {
    fprintf(f, "\n%s  %s -> %s\n", r->label, r->base_status ? r->base_status : "(absent)",
            r->new_status ? r->new_status : "(absent)");
    if (r->missing)
        fprintf(f, "    FAILED: passed in BASE, %s in NEW\n", r->nw ? "skipped" : "absent");
    if (r->failed)
        fprintf(f, "    FAILED: status %s in NEW%s%s\n", r->new_status, r->new_message ? ": " : "",
                r->new_message ? r->new_message : "");
    print_check_problems(r, f, "    ");
    if (r->nm) {
        int header = 0;
        for (size_t j = 0; j < r->nm; j++) {
            const cmp_metric *m = &r->m[j];
            if (quiet && m->in_base && m->in_new && m->verdict == GT_VERDICT_SAME) continue;
            if (!header) {
                fprintf(f, "    %-24s %12s %12s %-6s %8s %-6s %8s %7s %9s  %s\n", "metric",
                        "base", "new", "unit", "change", "test", "p-value", "detects",
                        "samples", "verdict");
                header = 1;
            }
            char b[32], n[32], ch[32], p[32], cnt[32], det[32];
            fmt_num(b, sizeof b, m->base_med);
            fmt_num(n, sizeof n, m->new_med);
            fmt_change(ch, sizeof ch, m);
            fmt_p(p, sizeof p, m);
            fmt_detect(det, sizeof det, m);
            snprintf(cnt, sizeof cnt, "%zu/%zu", m->nb, m->nn);
            fprintf(f, "    %-24s %12s %12s %-6s %8s %-6s %8s %7s %9s  %s\n", m->name, b, n,
                    m->unit, ch, method_name(m->method), p, det, cnt, metric_verdict_text(m));
        }
    }
    if (r->profile_line) fprintf(f, "    ops: %s\n", r->profile_line);
    if (r->notes && !quiet) {
        const char *line = r->notes;
        while (*line) {
            const char *end = strchr(line, '\n');
            int len = end ? (int)(end - line) : (int)strlen(line);
            fprintf(f, "    note: %.*s\n", len, line);
            line += len + (end ? 1 : 0);
        }
    }
    (void)c;
}

/* A train or scaling result whose step got slower names the parts of the step
 * whose time grew most, each with its own verdict from its per-step samples
 * (the first run of each side): a diagnosis, never gated. */
static void profile_lines(gt_compare *c) {
    for (size_t i = 0; i < c->nres; i++) {
        cmp_result *r = &c->res[i];
        const char *suite = str_or(json_object_get(r->nw, "suite"), "");
        if (!r->base || !r->nw || (strcmp(suite, "train") != 0 && strcmp(suite, "scaling") != 0))
            continue;
        for (size_t j = 0; j < r->nm && !r->profile_line; j++)
            if (strcmp(r->m[j].name, "ms_per_step") == 0 && r->m[j].verdict == GT_VERDICT_SLOWER)
                r->profile_line =
                    gt_profile_compare_line(r->base, r->nw, r->m[j].rel, "slower", &c->opt, 4);
    }
}

/* What the machine's state did to the verdict (reports/compare_state.h). */
static void print_state_line(const gt_compare *c, FILE *f) {
    const gt_compare_counts *k = &c->counts;
    if (k->state_adjusted)
        fprintf(f,
                "machine state: %d times judged in one state, a core-to-core round trip of "
                "%.0f ns (their runs saw up to %.0f ns; the times' response to it measured "
                "on the sides' own samples: docs/ci-gating.md \"The machine's state\")\n",
                k->state_adjusted, k->state_ref_ns, k->state_hi_ns);
    if (k->state_within)
        fprintf(f,
                "machine state: %d of them measured within runs alone (their runs' levels "
                "moved with something else that their share of the states followed)\n",
                k->state_within);
    if (k->busy_times)
        fprintf(f,
                "machine load: %d timed blocks of BASE and %d of NEW waited for a CPU (another "
                "process on a rank's core), in %d times: %d and %d left out (their runs had "
                "%d or more that did not wait, or they waited longer than they took), the "
                "others taken less the time they waited (docs/ci-gating.md \"A loaded "
                "window\")\n",
                k->busy_unloaded[0] + k->busy_dropped[0], k->busy_unloaded[1] + k->busy_dropped[1],
                k->busy_times, k->busy_dropped[0], k->busy_dropped[1], GT_STATE_CLEAN_LEAST);
    if (k->pairs_aside)
        fprintf(f,
                "machine load: %d of %d pairs set aside, a run of each on a loaded machine (%d "
                "of BASE's runs and %d of NEW's: their timed blocks waited for a CPU %.0f%% of "
                "the time or more, a loaded window); times judged on the other %d pairs "
                "(docs/ci-gating.md \"A loaded window\")\n",
                k->pairs_aside, c->pairs, k->runs_aside[0], k->runs_aside[1],
                100 * GT_STATE_LOADED, c->pairs - k->pairs_aside);
    if (!k->pairs_aside && k->runs_aside[0] + k->runs_aside[1])
        fprintf(
            f,
            "machine load: %d of BASE's runs and %d of NEW's set aside, on a loaded machine "
            "(their timed blocks waited for a CPU %.0f%% of the time or more, a loaded "
            "window, with %d or more of that side's runs and no fewer without): times judged on "
            "the others (docs/ci-gating.md \"A loaded window\")\n",
            k->runs_aside[0], k->runs_aside[1], 100 * GT_STATE_LOADED, GT_COMPARE_CLEAN_PAIRS);
    if (c->lopsided == 2)
        fprintf(f,
                "machine load: %d of NEW's %d runs ran on a loaded machine and %d of BASE's %d: "
                "different load states, and a neighbour slows what it does not make wait too, "
                "so NEW's slower speeds stay undecided until its runs on a quiet machine decide "
                "them\n",
                c->runs_loaded[1], c->runs_judged[1], c->runs_loaded[0], c->runs_judged[0]);
    if (c->lopsided == 1)
        fprintf(f,
                "machine load: %d of BASE's %d runs ran on a loaded machine and %d of NEW's %d: "
                "different load states; NEW's slower speeds are judged (the load slowed BASE), "
                "its faster ones may be the load's\n",
                c->runs_loaded[0], c->runs_judged[0], c->runs_loaded[1], c->runs_judged[1]);
    if (c->loaded && !c->busy_own)
        fprintf(f,
                "machine load: %.1f%% of BASE's and %.1f%% of NEW's timed blocks waited for a "
                "CPU (%.0f%% or more: a loaded machine, whose times move with the load more "
                "than with the cores' state): none moved to one state, each judged less its "
                "wait; a gate on a loaded machine is often undecided\n",
                100 * c->busy_share[0], 100 * c->busy_share[1], 100 * GT_STATE_LOADED);
    if (c->busy_own)
        fprintf(f,
                "machine load: %s's timed blocks waited for a CPU far more often than %s's "
                "(at least %.0f%% of them and %.0fx as often): the stack's own threads, not "
                "a neighbour; every block judged as measured\n",
                c->busy_own == 2 ? "NEW" : "BASE", c->busy_own == 2 ? "BASE" : "NEW",
                100 * GT_STATE_BUSY_OWN_SHARE, GT_STATE_BUSY_OWN_X);
    if (k->state_confounded)
        fprintf(f,
                "machine state: %d times whose sides ran in different states with no run "
                "in two: judged as measured (the stack and the state cannot be told apart; "
                "more pairs, or a machine that holds one state)\n",
                k->state_confounded);
}

static void print_summary_line(const gt_compare *c, FILE *f) {
    const gt_compare_counts *k = &c->counts;
    fprintf(f, "compare: %d slower, %d failed check%s, %d same, %d ambiguous, %d faster", k->slower,
            k->failed_checks, k->failed_checks == 1 ? "" : "s", k->same, k->ambiguous, k->faster);
    if (k->failed_results)
        fprintf(f, ", %d failed or errored result%s", k->failed_results,
                k->failed_results == 1 ? "" : "s");
    if (k->missing) fprintf(f, ", %d missing in NEW", k->missing);
    if (k->incomplete_new)
        fprintf(f, ", NEW incomplete (%d report%s)", k->incomplete_new,
                k->incomplete_new == 1 ? "" : "s");
    if (k->only_new) fprintf(f, ", %d only in NEW", k->only_new);
    if (k->derived) fprintf(f, ", %d derived (shown, judged through their source)", k->derived);
    if (k->below_floor) fprintf(f, ", %d below the timing floor", k->below_floor);
    if (k->ungated) fprintf(f, ", %d not gated (numerics, state, reference)", k->ungated);
    if (k->undecided) fprintf(f, ", %d undecided", k->undecided);
    if (k->beyond_reach)
        fprintf(f, ", %d of the undecided too noisy to decide in twice the pairs here",
                k->beyond_reach);
    if (k->families)
        fprintf(f, "; families: %d slower, %d undecided, %d faster of %d", k->families_slower,
                k->families_undecided, k->families_faster, k->families);
    static const char *const words[] = {
        "NEW may ship", "NEW MUST NOT SHIP",
        "UNDECIDED: NEW may not ship yet (more pairs decide: see needed)",
        "NOT COMPARABLE: BASE and NEW ran on different machine classes (see machine class)"};
    const char *why = c->not_comparable ? " (speed shown, not gated; --across-machines gates it)"
                      : c->opt.checks_only ? " (--checks-only: speed verdicts shown, not gated)"
                                           : "";
    if (c->opt.across_machines && c->counts.machine_diffs)
        why = " (--across-machines: speed judged between different machine classes)";
    fprintf(f, ": %s%s\n", words[gt_compare_decide(c)], why);
}


/* A result that decides the verdict: NEW may not ship because of it. */
static int result_decides(const gt_compare *c, const cmp_result *r) {
    int any = r->missing || r->failed || r->failed_checks;
    for (size_t j = 0; j < r->nm && !any; j++)
        any = gated_slower(c, &r->m[j]) || gt_cmp_metric_undecided(c, &r->m[j]);
    return any;
}

/* A result that failed outright (a check, its status, missing): its table
 * is shown by default; slower metrics are listed one line each instead. */
static int result_fails(const cmp_result *r) {
    return r->missing || r->failed || r->failed_checks;
}

static void print_slower_line(const gt_compare *c, const cmp_result *r, const cmp_metric *m,
                              FILE *f) {
    char ch[32], p[32], det[32];
    fmt_change(ch, sizeof ch, m);
    fmt_p(p, sizeof p, m);
    fmt_detect(det, sizeof det, m);
    int lifted = (m->method == GT_METHOD_RUNS || m->method == GT_METHOD_BLOCKS) &&
                 (m->a.base_lvl != m->a.base_med || m->a.new_lvl != m->a.new_med);
    int undecided = m->verdict == GT_VERDICT_UNDECIDED;
    fprintf(f, "  %s%s %s: %.5g -> %.5g %s (%s%s%s", undecided ? "UNDECIDED " : "SLOWER   ",
            r->label, m->name, m->base_med, m->new_med, m->unit, ch, m->part_of ? " of " : "",
            m->part_of ? m->part_of : "");
    fprintf(f, "; %s p %s; detects %s", method_name(m->method), p, det);
    if (!isnan(m->lo) && !m->part_of)
        fprintf(f, "; interval [%+.1f%%, %+.1f%%]", 100 * m->lo, 100 * m->hi);
    if (lifted) fprintf(f, "; a side below the timing floor judged at the floor");
    if (m->held)
        gt_cmp_print_held(c, m->held, m->needed, f);
    else if (undecided && m->needed > 0)
        fprintf(f, "; about %d more would decide", m->needed);
    fprintf(f, ")\n");
    if (r->profile_line && strcmp(m->name, "ms_per_step") == 0)
        fprintf(f, "             ops: %s\n", r->profile_line);
}

static int cmp_dbl(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A line per suite: results, the verdicts of its gated metrics, and how
 * large a change they can detect (median, 90th percentile, largest). */
static void print_suites(const gt_compare *c, FILE *f) {
    fprintf(f, "\nper suite (a metric is \"same\" within its detectable change):\n");
    /* the detectable changes of one suite, at most every metric's */
    size_t total = 0;
    for (size_t i = 0; i < c->nres; i++) total += c->res[i].nm;
    double *det = malloc((total ? total : 1) * sizeof *det);
    for (size_t i = 0; i < c->nres; i++) {
        const char *suite = c->res[i].suite;
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++) seen = strcmp(c->res[j].suite, suite) == 0;
        if (seen) continue;
        int results = 0, v[GT_VERDICT_COUNT] = {0}, floor_ = 0, derived = 0, ungated = 0, nd = 0;
        const char *worst_label = NULL, *worst_metric = NULL;
        double worst = -1;
        for (size_t j = i; j < c->nres; j++) {
            const cmp_result *r = &c->res[j];
            if (strcmp(r->suite, suite) != 0) continue;
            results++;
            for (size_t q = 0; q < r->nm; q++) {
                const cmp_metric *m = &r->m[q];
                if (!m->in_base || !m->in_new) continue;
                if (m->derived_from) {
                    derived++;
                    continue;
                }
                if (m->method == GT_METHOD_FLOOR) {
                    floor_++;
                    continue;
                }
                if (m->ungated) {
                    ungated++;
                    continue;
                }
                v[m->verdict]++;
                if (isnan(m->detectable)) continue;
                if (det) det[nd++] = m->detectable;
                if (m->detectable > worst) {
                    worst = m->detectable;
                    worst_label = r->label;
                    worst_metric = m->name;
                }
            }
        }
        fprintf(f, "  %-12s %d result%s: %d slower, %d faster, %d ambiguous, %d same", suite,
                results, results == 1 ? "" : "s", v[GT_VERDICT_SLOWER], v[GT_VERDICT_FASTER],
                v[GT_VERDICT_AMBIGUOUS], v[GT_VERDICT_SAME]);
        if (floor_) fprintf(f, "; %d below the %.3g us floor", floor_, c->opt.timing_floor_us);
        if (derived) fprintf(f, "; %d derived", derived);
        if (ungated) fprintf(f, "; %d not gated (numerics, state, reference)", ungated);
        fprintf(f, "\n");
        if (nd > 0 && det) {
            qsort(det, (size_t)nd, sizeof *det, cmp_dbl);
            fprintf(f,
                    "  %-12s detects changes of %.1f%% (median of %d tested), %.1f%% (90%%), "
                    "%.1f%% at most (%s %s)\n",
                    "", 100.0 * det[(nd - 1) / 2], nd, 100.0 * det[(size_t)ceil(0.9 * (nd - 1))],
                    100.0 * worst, worst_label ? worst_label : "?",
                    worst_metric ? worst_metric : "?");
        }
    }
    free(det);
}

/* The measured params that changed (a weights digest: the numerics moved)
 * and the loss curves that differ, counted over the results: the summary's
 * pointer to what --verbose lists result by result. */
static void print_note_counts(const gt_compare *c, FILE *f) {
    int any = 0;
    for (int e = 0; gt_compare_excluded_params[e]; e++) {
        size_t len = strlen(gt_compare_excluded_params[e]);
        int n = 0;
        for (size_t i = 0; i < c->nres; i++) {
            const char *line = c->res[i].notes;
            while (line && *line) {
                if (strncmp(line, gt_compare_excluded_params[e], len) == 0 && line[len] == ':') {
                    n++;
                    break;
                }
                line = strchr(line, '\n');
                line = line ? line + 1 : NULL;
            }
        }
        if (!n) continue;
        fprintf(f, "%s %s changed in %d result%s", any ? ";" : "\nnotes (--verbose lists them):",
                gt_compare_excluded_params[e], n, n == 1 ? "" : "s");
        any = 1;
    }
    int curves = 0;
    for (size_t i = 0; i < c->nres; i++)
        curves += c->res[i].notes && strstr(c->res[i].notes, "loss curve: largest relative") != NULL;
    if (curves)
        fprintf(f, "%s loss curve not bitwise equal to BASE's in %d result%s",
                any ? ";" : "\nnotes (--verbose lists them):", curves, curves == 1 ? "" : "s");
    if (any || curves) fprintf(f, "\n");
}

/* The members that moved while none of their families did (gt_cmp_families'
 * gatekeeper: a side of one run, or a loaded machine), the largest named. */
static void print_alone(const gt_compare *c, FILE *f) {
    int n = 0, states = 0;
    const cmp_metric *top = NULL;
    const char *label = NULL;
    for (size_t i = 0; i < c->nres; i++)
        for (size_t j = 0; j < c->res[i].nm; j++) {
            const cmp_metric *m = &c->res[i].m[j];
            if (!m->alone) continue;
            n++;
            states += m->state.outcome == GT_STATE_CONFOUNDED;
            if (!top || fabs(m->rel) > fabs(top->rel)) {
                top = m;
                label = c->res[i].label;
            }
        }
    if (!n) return;
    fprintf(f, "               %d metric(s) moved alone, none of their families with them (the "
               "largest: %s %s %+.1f%%): ",
            n, label, top->name, 100 * top->rel);
    if (gt_cmp_loaded_by_other(c))
        fprintf(f, "not gated on a loaded machine, where a neighbour can hold a rank's core "
                   "through one case's calls for a whole run; their families decide, and a "
                   "quiet machine decides a single case\n");
    else
        fprintf(f,
                "not gated below %.3gx%s, since one case can sit in a slower state for a whole "
                "run and a side of one run cannot show it; several runs a side or interleaved "
                "pairs decide a single case\n",
                GT_COMPARE_ALONE_FACTOR,
                states ? " (nor beyond it where the sides ran in different machine states all "
                         "along)"
                       : "");
}

/* r's metrics in the list of regressions: the slower ones (slower 1), or
 * the undecided (0). The list takes every slower one first, so that a
 * screenful names what failed the gate before what is still undecided;
 * families said it first: fewer members then. */
static void list_members(const gt_compare *c, const cmp_result *r, FILE *f,
                         gt_compare_detail detail, int slower, size_t *listed, size_t *unlisted) {
    size_t cap = c->counts.families_slower + c->counts.families_undecided
                     ? GT_COMPARE_SHOWN_MEMBERS
                     : GT_COMPARE_SHOWN;
    for (size_t j = 0; j < r->nm; j++) {
        const cmp_metric *m = &r->m[j];
        if (slower ? !gated_slower(c, m) : !gt_cmp_metric_undecided(c, m)) continue;
        if (detail != GT_DETAIL_ALL && *listed >= cap) {
            ++*unlisted;
            continue;
        }
        ++*listed;
        print_slower_line(c, r, m, f);
    }
}

void gt_compare_print(const gt_compare *c, FILE *f, gt_compare_detail detail) {
    const char *sb =
        str_or(json_object_get(json_object_get(c->base_doc, "run"), "git_revision"), "?");
    const char *sn =
        str_or(json_object_get(json_object_get(c->new_doc, "run"), "git_revision"), "?");
    fprintf(f, "BASE %s (run %s, git %s", c->base_path,
            str_or(json_object_get(json_object_get(c->base_doc, "run"), "id"), "?"), sb);
    if (c->nxb) fprintf(f, "; %zu runs", c->nxb + 1);
    fprintf(f, ")\nNEW  %s (run %s, git %s", c->new_path,
            str_or(json_object_get(json_object_get(c->new_doc, "run"), "id"), "?"), sn);
    if (c->nxn) fprintf(f, "; %zu runs", c->nxn + 1);
    fprintf(f, ")\n");
    fprintf(f, "rules: threshold %.3g%%, ", 100.0 * c->opt.threshold);
    gt_cmp_print_rules(c, f);
    fprintf(f, "; runs are the replicates%s; times under %.3g us not gated\n",
            c->nxb || c->nxn ? "" : " (one run a side: its samples in blocks)",
            c->opt.timing_floor_us);
    if (!c->nxb && !c->nxn) {
        double large = 100 * gt_cmp_one_run_large(c);
        if (gt_cmp_loaded_by_other(c))
            fprintf(f,
                    "one run a side on a loaded machine: checks and slowdowns of %.3g ms a "
                    "call or more only (a neighbour can slow a whole run: a smaller slowdown "
                    "shown, and one estimated at %.3g%% or more but not shown, is undecided; "
                    "a smaller estimate is not gated); %d runs a side or interleaved pairs "
                    "decide it\n",
                    GT_COMPARE_LOADED_DECIDE_US / 1000, large, GT_COMPARE_LOADED_RUNS);
        else
            fprintf(f,
                    "one run a side: checks and large changes only (it assumes runs differ "
                    "by %.3g%%: a slowdown estimated at %.3g%% or more but not shown is "
                    "undecided, a smaller estimate is not gated); %d runs a side or "
                    "interleaved pairs decide changes of %.3g%%\n",
                    100 * c->opt.single_run_noise, large, GT_COMPARE_LOADED_RUNS,
                    100 * c->opt.threshold);
    }
    print_alone(c, f);
    if (c->opt.paired && c->nxb && c->nxb == c->nxn) {
        fprintf(f,
                "noise: paired runs (run i of BASE beside run i of NEW): the spread of their "
                "ratios (t test), at least %.3g%%\n",
                100.0 * c->opt.run_noise);
        int inb = 0, pooled = 0;
        for (size_t i = 0; i < c->nres; i++)
            for (size_t j = 0; j < c->res[i].nm; j++) {
                inb += c->res[i].m[j].a.blocks > 0;
                pooled += c->res[i].m[j].a.pooled;
            }
        if (inb)
            fprintf(f,
                    "       %d metrics timed in %d rounds a run: their rounds' ratios are the "
                    "replicates where pairs differ no more than rounds do (F test at %.2g; %d "
                    "of them)\n",
                    inb, GT_COMPARE_BLOCKS, GT_GS_POOL_LEVEL, pooled);
    }
    else if (c->nxb || c->nxn)
        fprintf(f, "noise: the spread of the run medians (t test), at least %.3g%%\n",
                100.0 * c->opt.run_noise);
    else
        fprintf(f,
                "noise: one run a side does not show how runs differ: %.3g%% assumed beyond the "
                "blocks' spread (a directory of runs as BASE measures it)\n",
                100.0 * c->opt.single_run_noise);

    print_fingerprint(c, f);

    const gt_compare_counts *k = &c->counts;
    int gone = 0, gone_pass = 0;
    for (size_t i = 0; i < c->nres; i++) {
        gone += !c->res[i].nw;
        gone_pass += !c->res[i].nw && c->res[i].missing;
    }
    fprintf(f,
            "\nresults: %d matched, %d only in BASE (%d of them passed there), %d only in "
            "NEW\n",
            k->matched, gone, gone_pass, k->only_new);
    print_suites(c, f);
    gt_cmp_print_families(c, f, detail == GT_DETAIL_ALL ? 0 : GT_COMPARE_SHOWN);
    if (detail != GT_DETAIL_ALL) print_note_counts(c, f);
    size_t shown = 0, hidden = 0;
    for (size_t i = 0; i < c->nres; i++) {
        const cmp_result *r = &c->res[i];
        if (detail == GT_DETAIL_SUMMARY && !result_fails(r)) continue;
        if (detail == GT_DETAIL_CHANGED && result_is_quiet(r)) continue;
        if (detail == GT_DETAIL_SUMMARY && shown >= GT_COMPARE_SHOWN) {
            hidden++;
            continue;
        }
        print_result(c, r, f, detail != GT_DETAIL_ALL);
        shown++;
    }
    if (hidden) fprintf(f, "\n... and %zu more failed results (--verbose)\n", hidden);
    if (detail == GT_DETAIL_SUMMARY)
        fprintf(f, "\n(--verbose: every family, result and metric; --changed: those not "
                   "\"same\"; --junit and the HTML page hold them all)\n");

    /* the list a reader of a CI log needs: what to fix, named */
    int header = 0;
    size_t listed = 0, unlisted = 0;
    if (gt_cmp_family_regressions(c, NULL)) {
        fprintf(f, "\nregressions and failures:\n");
        header = 1;
        gt_cmp_family_regressions(c, f);
    }
    for (size_t i = 0; i < c->nres; i++) {
        const cmp_result *r = &c->res[i];
        if (!result_decides(c, r)) continue;
        if (!header) fprintf(f, "\nregressions and failures:\n");
        header = 1;
        if (r->missing)
            fprintf(f, "  MISSING  %s: passed in BASE, %s in NEW\n", r->label,
                    r->nw ? "skipped" : "absent");
        if (r->failed)
            fprintf(f, "  FAILED   %s: status %s%s%s\n", r->label, r->new_status,
                    r->new_message ? ": " : "", r->new_message ? r->new_message : "");
        if (r->failed_checks) {
            fprintf(f, "  FAILED   %s:\n", r->label);
            print_check_problems(r, f, "             ");
        }
        list_members(c, r, f, detail, 1, &listed, &unlisted);
    }
    for (size_t i = 0; i < c->nres; i++)
        if (result_decides(c, &c->res[i]))
            list_members(c, &c->res[i], f, detail, 0, &listed, &unlisted);
    if (unlisted)
        fprintf(f, "  ... and %zu more slower or undecided metrics (--verbose, --junit)\n",
                unlisted);
    if (c->new_incomplete)
        fprintf(f,
                "\nINCOMPLETE NEW report %s\n  a run that did not finish must not ship: its "
                "results stop where it ended (run it to the end)\n",
                c->new_incomplete);
    fprintf(f, "\n");
    print_state_line(c, f);
    gt_cmp_print_needed(c, f);
    print_summary_line(c, f);
}

/* ---- JUnit XML ---------------------------------------------------------------------- */

/* outcome of a result's "status" testcase: 0 pass, 1 failure, 2 skipped */
static int status_outcome(const cmp_result *r) {
    if (r->missing || r->failed || r->failed_checks) return 1;
    if (r->nw && strcmp(r->new_status, "skip") == 0) return 2;
    if (!r->nw) return 2; /* gone, but it was not passing in BASE */
    return 0;
}

/* A metric's line in its result's testcase: the same figures as the text
 * table. */
static void junit_metric_line(const cmp_metric *m, FILE *f) {
    char b[32], n[32], ch[32], p[32], det[32];
    fmt_num(b, sizeof b, m->base_med);
    fmt_num(n, sizeof n, m->new_med);
    fmt_change(ch, sizeof ch, m);
    fmt_p(p, sizeof p, m);
    fmt_detect(det, sizeof det, m);
    char text[512];
    snprintf(text, sizeof text,
             "%s: base %s, new %s %s, change %s, %s p %s, detects %s, samples %zu/%zu: %s\n",
             m->name, b, n, m->unit, ch, method_name(m->method), p, det, m->nb, m->nn,
             metric_verdict_text(m));
    gt_xml_escape(f, text);
}

/* What fails a result's testcase: 1 its status, a check or its absence; 2 a
 * gated metric slower; 3 one undecided; 0 nothing. */
static int junit_outcome(const gt_compare *c, const cmp_result *r) {
    if (status_outcome(r) == 1) return 1;
    int und = 0;
    for (size_t j = 0; j < r->nm; j++) {
        if (gated_slower(c, &r->m[j])) return 2;
        und |= gt_cmp_metric_undecided(c, &r->m[j]);
    }
    return und ? 3 : 0;
}

/* The failure element of a result's testcase (outcome o of junit_outcome). */
static void junit_failure(const gt_compare *c, const cmp_result *r, int o, FILE *f) {
    static const char *const type[] = {"", "status", "slower", "undecided"};
    const char *t = o == 1 ? (r->missing ? "missing" : r->failed_checks ? "check" : "status")
                           : type[o];
    fprintf(f, "      <failure type=\"%s\" message=\"", t);
    if (o == 1)
        gt_xml_escape(f, r->missing ? (r->nw ? "passed in BASE, skipped in NEW"
                                             : "passed in BASE, absent from NEW")
                         : r->failed_checks ? "a check failed in NEW"
                                            : "status error or fail in NEW");
    else
        for (size_t j = 0, k = 0; j < r->nm; j++)
            if (o == 2 ? gated_slower(c, &r->m[j]) : gt_cmp_metric_undecided(c, &r->m[j])) {
                char ch[32];
                fmt_change(ch, sizeof ch, &r->m[j]);
                fprintf(f, "%s%s ", k++ ? ", " : o == 2 ? "slower: " : "undecided: ",
                        r->m[j].name);
                gt_xml_escape(f, ch);
            }
    fputs("\">", f);
    char *buf = NULL;
    size_t len = 0;
    FILE *m = o == 1 ? open_memstream(&buf, &len) : NULL;
    if (m) { /* the same words as the text report */
        if (r->failed)
            fprintf(m, "status %s%s%s\n", r->new_status, r->new_message ? ": " : "",
                    r->new_message ? r->new_message : "");
        print_check_problems(r, m, "");
        fclose(m);
        gt_xml_escape(f, buf);
        free(buf);
    }
    fputs("</failure>\n", f);
}

/* One testcase per result: its status, checks and every metric's verdict
 * inside (the metrics that are not "same" a line each, the rest counted),
 * failed by the worst of them. */
static void junit_result_case(const gt_compare *c, const cmp_result *r, FILE *f) {
    fputs("    <testcase classname=\"", f);
    gt_xml_escape(f, r->suite);
    fputs("\" name=\"", f);
    gt_xml_escape(f, r->label);
    fputs("\">\n", f);
    int o = junit_outcome(c, r);
    if (o)
        junit_failure(c, r, o, f);
    else if (status_outcome(r) == 2) {
        fputs("      <skipped message=\"", f);
        gt_xml_escape(f, r->nw ? (r->new_message ? r->new_message : "skipped in NEW")
                         : "absent from NEW (not passing in BASE)");
        fputs("\"/>\n", f);
    }
    size_t same = 0;
    fputs("      <system-out>", f);
    if (!r->base) fputs("only in NEW\n", f);
    for (size_t j = 0; j < r->nm; j++) {
        if (r->m[j].verdict == GT_VERDICT_SAME) {
            same++;
            continue;
        }
        junit_metric_line(&r->m[j], f);
    }
    if (same) fprintf(f, "%zu metric%s same\n", same, same == 1 ? "" : "s");
    fputs("</system-out>\n", f);
    fputs("    </testcase>\n", f);
}

/* A fingerprint difference as JUnit text: "BASE x | NEW y", after `key_sep`
 * and the key. */
static void junit_fp(FILE *f, const fp_diff *d, const char *key_sep, const char *mid) {
    fputs(key_sep, f);
    gt_xml_escape(f, d->key);
    fputs(mid, f);
    fputs("BASE ", f);
    gt_xml_escape(f, d->base);
    fputs(" | NEW ", f);
    gt_xml_escape(f, d->nw);
}

/* The machine class as a testcase of its own: failed (not-comparable) when
 * the classes differ and speed was therefore not gated. */
static void junit_machine(const gt_compare *c, FILE *f) {
    int fail = c->not_comparable;
    fprintf(f,
            "  <testsuite name=\"machine\" tests=\"1\" failures=\"%d\" errors=\"0\" "
            "skipped=\"0\">\n    <testcase classname=\"machine\" name=\"class\">\n",
            fail);
    fputs(fail ? "      <failure type=\"not-comparable\" message=\"BASE and NEW ran on "
                 "different machine classes: speed not gated\">"
               : "      <system-out>",
          f);
    for (size_t i = 0; i < c->nfp; i++)
        if (c->fp[i].machine) {
            junit_fp(f, &c->fp[i], "", ": ");
            fputs("\n", f);
        }
    fputs(fail ? "</failure>\n" : "</system-out>\n", f);
    fputs("    </testcase>\n  </testsuite>\n", f);
}

static void junit_properties(const gt_compare *c, FILE *f) {
    fputs("    <properties>\n", f);
    fputs("      <property name=\"base\" value=\"", f);
    gt_xml_escape(f, c->base_path);
    fputs("\"/>\n      <property name=\"new\" value=\"", f);
    gt_xml_escape(f, c->new_path);
    fputs("\"/>\n", f);
    for (size_t d = 0; d < c->nfp; d++) {
        junit_fp(f, &c->fp[d], "      <property name=\"fingerprint ", "\" value=\"");
        fputs("\"/>\n", f);
    }
    fputs("    </properties>\n", f);
}

/* One testsuite per suite in order of first appearance, a testcase per
 * result; the families; the machine class; an incomplete NEW. */
static void junit_write(const gt_compare *c, FILE *f) {
    int tests = (int)c->nres + (int)c->nfam + 1, failures = c->not_comparable;
    for (size_t i = 0; i < c->nres; i++) failures += junit_outcome(c, &c->res[i]) != 0;
    failures += gt_cmp_family_regressions(c, NULL);
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
    if (c->new_incomplete) {
        tests++;
        failures++;
    }
    fprintf(f, "<testsuites name=\"gauntlet compare\" tests=\"%d\" failures=\"%d\" errors=\"0\">\n",
            tests, failures);
    for (size_t i = 0; i < c->nres; i++) {
        const char *suite = c->res[i].suite;
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++) seen = strcmp(c->res[j].suite, suite) == 0;
        if (seen) continue;
        int st = 0, sf = 0, ss = 0;
        for (size_t j = i; j < c->nres; j++) {
            const cmp_result *r = &c->res[j];
            if (strcmp(r->suite, suite) != 0) continue;
            int o = junit_outcome(c, r);
            st++;
            sf += o != 0;
            ss += !o && status_outcome(r) == 2;
        }
        fputs("  <testsuite name=\"", f);
        gt_xml_escape(f, suite);
        fprintf(f, "\" tests=\"%d\" failures=\"%d\" errors=\"0\" skipped=\"%d\">\n", st, sf, ss);
        junit_properties(c, f);
        for (size_t j = i; j < c->nres; j++)
            if (strcmp(c->res[j].suite, suite) == 0) junit_result_case(c, &c->res[j], f);
        fputs("  </testsuite>\n", f);
    }
    gt_cmp_junit_families(c, f);
    junit_machine(c, f);
    if (c->new_incomplete) {
        /* the run itself did not finish: a failure of its own */
        fputs("  <testsuite name=\"report\" tests=\"1\" failures=\"1\" errors=\"0\" "
              "skipped=\"0\">\n    <testcase classname=\"report\" name=\"complete\">\n"
              "      <failure message=\"NEW report incomplete\">",
              f);
        gt_xml_escape(f, c->new_incomplete);
        fputs("</failure>\n    </testcase>\n  </testsuite>\n", f);
    }
    fputs("</testsuites>\n", f);
}

gt_status gt_compare_write_junit(const gt_compare *c, const char *path) {
    gt_atomic_file af;
    GT_TRY(gt_atomic_open(path, "JUnit file", "choose a writable --junit path", &af));
    junit_write(c, af.f);
    return gt_atomic_commit(&af);
}
