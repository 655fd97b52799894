/* Scaling prediction (predict.h, docs/predict.md). */
#include "reports/predict.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "engine/fileio.h"
#include "engine/stats.h"

/* The three scenarios: every input at the low end of its samples, at the
 * median, at the high end. */
enum { S_LO = 0, S_MID = 1, S_HI = 2, NS = 3 };
enum { C_AR = 0, C_RS = 1, C_AG = 2, NCOLL = 3 };
enum { L_INTRA = 0, L_INTER = 1, NLEVEL = 2 };
enum { SRC_NONE = 0, SRC_MEASURED, SRC_GIVEN, SRC_BORROWED, SRC_ASSUMED };

static const char *const g_coll_names[NCOLL] = {"allreduce", "reduce_scatter", "allgather"};
static const char *const g_level_names[NLEVEL] = {"intra_node", "inter_node"};
static const char *const g_src_names[] = {"none", "measured", "given", "borrowed", "assumed"};

enum { MAX_SIZES = 64, MAX_NOTES = 32, NOTE_LEN = 1024 };

/* One train / scaling result of the model. */
typedef struct tpoint {
    char case_name[96];
    const char *path;
    int ranks, nodes, rpn, threads, cores, weak, oversub;
    double batch, b, share;
    double c[NS];       /* compute ms per step: min, median, max over the steps */
    double step[NS];    /* measured ms_per_step: min, median, max */
    double exposed_mid; /* measured exposed_comm_ms, median */
} tpoint;

/* One collectives row: one size of one result. */
typedef struct cpoint {
    int coll, level, n, world;
    double bytes;
    double t[NS]; /* seconds */
} cpoint;

/* alpha-beta of one collective at one level, per scenario */
typedef struct link_fit {
    int src;
    double alpha[NS]; /* s */
    int nsizes;
    double size[MAX_SIZES];
    double beta[NS][MAX_SIZES]; /* bytes/s; INFINITY: latency only at that size */
    int ranks_seen[16], n_ranks_seen;
    size_t n_points;
} link_fit;

/* A measured training result of a row's rank count and batch per rank,
 * shown beside the prediction. */
typedef struct pmeas {
    int have;
    char case_name[96];
    double share; /* the cores a rank had (host backends) */
    int oversub;
    double step[NS];         /* measured ms_per_step: min, median, max */
    double exposed, compute; /* medians, ms */
    double tput;             /* from the median step, in the table's unit */
} pmeas;

/* One scaling (strong or weak) of one row. Throughput and efficiency are
 * computed from this row's step per scenario, the efficiency against the
 * 1-rank reference row's throughput in the same scenario. */
typedef struct pscale {
    int ok;                      /* predicted (strong: at least one sample per rank) */
    double global_batch, b;      /* samples per step in all, per rank */
    gt_predict_iv compute, exposed, other, step, tput, eff;
    double tput_s[NS];           /* per scenario */
    pmeas meas;
} pscale;

typedef struct prow {
    int ranks, nodes, rpn;
    double share; /* the cores of each rank: the same on every row */
    pscale strong, weak;
} prow;

typedef struct crow {
    char case_name[96];
    int ranks, nodes, rpn, oversub;
    double batch, share;
    gt_predict_iv step, exposed;
    double measured_step, measured_lo, measured_hi, measured_exposed;
    double error, bound;
    int within_bound, within_interval;
    int leave_one_out; /* 0: the links were fitted with this rank count's collectives */
    char fitted_compute[64], fitted_links[64]; /* the rank counts each fit used */
} crow;

/* the fitted model, all it needs to predict a step */
typedef struct model {
    double a[NS], k[NS]; /* work(b) = a + k b, in share-ms */
    int n_groups;
    double group_b[16];
    int compute_ranks[16], n_compute_ranks; /* the rank counts the compute fit used */
    link_fit link[NLEVEL][NCOLL];
    long long n_params;
    double grad_bytes_per; /* bytes per gradient element */
    double bucket_bytes;
    double backward_fraction;
    int zero, deterministic, device;
    int units; /* ZeRO-3: sharding units (gpt2: layers + 2), taken as equal */
    long long chunk;
} model;

struct gt_prediction {
    gt_predict_options opt;
    char case_name[96], model_name[64], precision[16], backend[32], unit[32];
    double units_per_sample;
    int cores, ranks_per_node, device;
    double cores_per_rank;
    double global_batch, batch_per_rank;
    model m;
    tpoint *tp;
    size_t n_tp;
    prow rows[GT_PREDICT_MAX_RANKS];
    int n_rows;
    prow ref; /* 1 rank with the rows' cores: what every efficiency is relative to */
    crow *check;
    int n_check;
    char notes[MAX_NOTES][NOTE_LEN];
    int n_notes;
    int given[NLEVEL]; /* alpha / beta from the command line */
    int coll_mpi;      /* the collectives were measured over MPI */
};

gt_predict_options gt_predict_defaults(void) {
    gt_predict_options o;
    memset(&o, 0, sizeof o);
    o.zero = -1;
    o.intra_alpha_us = o.intra_beta_gbps = o.inter_alpha_us = o.inter_beta_gbps = NAN;
    return o;
}

static void note(gt_prediction *p, const char *fmt, ...) {
    if (p->n_notes >= MAX_NOTES) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->notes[p->n_notes], NOTE_LEN, fmt, ap);
    va_end(ap);
    for (int i = 0; i < p->n_notes; i++) /* once */
        if (strcmp(p->notes[i], p->notes[p->n_notes]) == 0) return;
    p->n_notes++;
}

/* ---- reading ----------------------------------------------------------- */

static double vmin(const double *v, size_t n) {
    double m = INFINITY;
    for (size_t i = 0; i < n; i++)
        m = v[i] < m ? v[i] : m;
    return m;
}
static double vmax(const double *v, size_t n) {
    double m = -INFINITY;
    for (size_t i = 0; i < n; i++)
        m = v[i] > m ? v[i] : m;
    return m;
}

static const char *pstr(const gt_report_result *r, const char *k) {
    json_t *v = r->params ? json_object_get(r->params, k) : NULL;
    return json_is_string(v) ? json_string_value(v) : NULL;
}
static double pnum(const gt_report_result *r, const char *k, double dflt) {
    json_t *v = r->params ? json_object_get(r->params, k) : NULL;
    return json_is_number(v) ? json_number_value(v) : dflt;
}

/* nodes x ranks per node from the result's "layout" ("2x4"); without one
 * (a single node) 1 x ranks */
static void layout_of(const gt_report_result *r, int ranks, int *nodes, int *rpn) {
    json_t *l = json_object_get(r->json, "layout");
    int a = 0, b = 0;
    if (json_is_string(l) && sscanf(json_string_value(l), "%dx%d", &a, &b) == 2 && a > 0 && b > 0) {
        *nodes = a;
        *rpn = b;
        return;
    }
    *nodes = 1;
    *rpn = ranks > 0 ? ranks : 1;
}

static int doc_cores(gt_report_doc *d) {
    json_t *cpu = json_object_get(json_object_get(gt_report_doc_json(d), "env"), "cpu");
    json_t *l = json_object_get(cpu, "logical");
    return json_is_integer(l) && json_integer_value(l) > 0 ? (int)json_integer_value(l) : 0;
}

static int is_train_suite(const char *s) {
    return strcmp(s, "scaling") == 0 || strcmp(s, "train") == 0;
}

/* the "<unit>_per_s" throughput metric of a training result */
static const char *tput_metric(const gt_report_result *r) {
    for (size_t i = 0; i < r->n_metrics; i++) {
        const char *n = r->metrics[i].name;
        size_t l = strlen(n);
        if (l > 6 && strcmp(n + l - 6, "_per_s") == 0) return n;
    }
    return NULL;
}

/* Data-parallel (and ZeRO) runs only: a result with tensor or pipeline
 * parallelism (its "grid" param) splits the step's compute in other ways,
 * which the layout model reads (predict_layout.c); pooled here it would
 * bend the fit of the data-parallel step. */
static int usable_train(const gt_report_result *r) {
    return is_train_suite(r->suite) && r->status == GT_RESULT_PASS &&
           gt_report_result_metric(r, "ms_per_step") && pstr(r, "model") && !pstr(r, "grid");
}

/* The same model in the same configuration (what the compute fit may pool). */
static int same_family(const gt_report_result *a, const gt_report_result *b) {
    const char *keys[] = {"model", "precision"};
    for (int i = 0; i < 2; i++) {
        const char *x = pstr(a, keys[i]), *y = pstr(b, keys[i]);
        if (!x || !y || strcmp(x, y) != 0) return 0;
    }
    const char *nk[] = {"seq", "zero", "deterministic", "channels", "layers", "width", "depth"};
    for (int i = 0; i < 7; i++)
        if (pnum(a, nk[i], -1) != pnum(b, nk[i], -1)) return 0;
    /* recomputation adds compute to every step; reports before it had none */
    const char *ra = pstr(a, "recompute"), *rb = pstr(b, "recompute");
    if (strcmp(ra ? ra : "none", rb ? rb : "none") != 0) return 0;
    return strcmp(a->backend, b->backend) == 0;
}

static int ends_with(const char *s, const char *t) {
    size_t a = strlen(s), b = strlen(t);
    return a >= b && strcmp(s + a - b, t) == 0;
}

static gt_status add_tpoint(gt_prediction *p, gt_report_doc *d, const gt_report_result *r) {
    const gt_report_metric *ms = gt_report_result_metric(r, "ms_per_step");
    const gt_report_metric *ex = gt_report_result_metric(r, "exposed_comm_ms");
    tpoint t;
    memset(&t, 0, sizeof t);
    snprintf(t.case_name, sizeof t.case_name, "%s", r->case_name);
    t.path = gt_report_doc_path(d);
    t.ranks = (int)pnum(r, "ranks", atoi(r->topology));
    if (t.ranks < 1) return GT_OK;
    layout_of(r, t.ranks, &t.nodes, &t.rpn);
    t.cores = doc_cores(d);
    t.threads = (int)pnum(r, "threads", 0);
    t.batch = pnum(r, "batch", NAN);
    if (!(t.batch > 0)) return GT_OK;
    t.b = t.batch / t.ranks;
    t.weak = ends_with(r->case_name, "/weak");
    if (p->device) {
        t.share = 1;
    } else {
        double per = t.cores > 0 ? (double)t.cores / t.rpn : 1.0;
        t.share = t.threads > 0 && t.threads < per ? t.threads : per;
        t.oversub = t.cores > 0 && t.rpn > t.cores;
    }
    /* per step: the step minus its exposed communication (the two series
     * are the same steps in the same order) */
    size_t n = ms->n_samples;
    double *c = malloc((n ? n : 1) * sizeof *c);
    if (!c) return GT_ERR(GT_ERR_OOM, "no memory");
    int aligned = ex && ex->n_samples == n;
    for (size_t i = 0; i < n; i++)
        c[i] = ms->samples[i] - (aligned ? ex->samples[i] : 0);
    if (n == 0) {
        double v = ms->value - (ex && isfinite(ex->value) ? ex->value : 0);
        t.c[S_LO] = t.c[S_MID] = t.c[S_HI] = v;
        t.step[S_LO] = t.step[S_MID] = t.step[S_HI] = ms->value;
    } else {
        t.c[S_LO] = vmin(c, n);
        t.c[S_MID] = gt_median(c, n);
        t.c[S_HI] = vmax(c, n);
        t.step[S_LO] = vmin(ms->samples, n);
        t.step[S_MID] = gt_median(ms->samples, n);
        t.step[S_HI] = vmax(ms->samples, n);
    }
    free(c);
    t.exposed_mid = ex && isfinite(ex->value) ? ex->value : 0;
    if (!isfinite(t.c[S_MID]) || t.c[S_MID] <= 0) return GT_OK;
    tpoint *np = realloc(p->tp, (p->n_tp + 1) * sizeof *np);
    if (!np) return GT_ERR(GT_ERR_OOM, "no memory");
    p->tp = np;
    p->tp[p->n_tp++] = t;
    return GT_OK;
}

/* "inter_node/allreduce/fp32/sum" -> level, collective; -1 when it is none
 * of the three */
static int parse_coll_case(const char *name, int *level, int *coll) {
    *level = -1;
    if (strncmp(name, "intra_node/", 11) == 0) {
        *level = L_INTRA;
        name += 11;
    } else if (strncmp(name, "inter_node/", 11) == 0) {
        *level = L_INTER;
        name += 11;
    }
    for (int c = 0; c < NCOLL; c++) {
        size_t l = strlen(g_coll_names[c]);
        if (strncmp(name, g_coll_names[c], l) == 0 && name[l] == '/') {
            *coll = c;
            return 0;
        }
    }
    return -1;
}

static gt_status add_cpoints(cpoint **cp, size_t *ncp, const gt_report_result *r,
                             int want_in_place) {
    int level, coll;
    if (strcmp(r->suite, "collectives") != 0 || r->status != GT_RESULT_PASS) return GT_OK;
    if (parse_coll_case(r->case_name, &level, &coll) != 0) return GT_OK;
    if (pnum(r, "in_place", want_in_place) != want_in_place) return GT_OK;
    if (pnum(r, "injected_slowdown", 1) > 1) return GT_OK; /* a test's fault, not the network */
    int n = atoi(r->topology);
    if (n < 2) return GT_OK; /* one rank moves nothing */
    int nodes, rpn;
    layout_of(r, n, &nodes, &rpn);
    if (level < 0) level = nodes > 1 ? L_INTER : L_INTRA;
    const char *dt = pstr(r, "dtype");
    double es = dt && (strcmp(dt, "bf16") == 0 || strcmp(dt, "fp16") == 0) ? 2
                : dt && strcmp(dt, "fp64") == 0                            ? 8
                                                                           : 4;
    for (size_t i = 0; i < r->n_metrics; i++) {
        const gt_report_metric *m = &r->metrics[i];
        unsigned long long sz;
        char tail;
        if (sscanf(m->name, "time_%llu%c", &sz, &tail) != 1 || !isfinite(m->value)) continue;
        /* the bytes that moved: a whole number of elements (per rank for the
         * block collectives), as the suite sizes its buffers */
        double per = es * (coll == C_AR ? 1 : n);
        double bytes = floor((double)sz / per) * per;
        if (bytes <= 0) continue;
        cpoint c = {.coll = coll, .level = level, .n = n, .world = nodes * rpn, .bytes = bytes};
        if (m->n_samples) {
            c.t[S_LO] = vmin(m->samples, m->n_samples) * 1e-6;
            c.t[S_MID] = gt_median(m->samples, m->n_samples) * 1e-6;
            c.t[S_HI] = vmax(m->samples, m->n_samples) * 1e-6;
        } else {
            c.t[S_LO] = c.t[S_MID] = c.t[S_HI] = m->value * 1e-6;
        }
        if (!(c.t[S_MID] > 0)) continue;
        cpoint *np = realloc(*cp, (*ncp + 1) * sizeof *np);
        if (!np) return GT_ERR(GT_ERR_OOM, "no memory");
        *cp = np;
        (*cp)[(*ncp)++] = c;
    }
    return GT_OK;
}

/* ---- the link model ------------------------------------------------------ */

/* ring: latency steps and the bus-bandwidth factor (nccl-tests') */
static double lat_steps(int coll, int n) {
    return coll == C_AR ? 2.0 * (n - 1) : n - 1.0;
}
static double bw_factor(int coll, int n) {
    return coll == C_AR ? 2.0 * (n - 1) / n : (double)(n - 1) / n;
}

static int cmp_d(const void *a, const void *b) {
    return gt_cmp_double(a, b);
}
static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Fits alpha and beta(size) of one collective at one level from the points,
 * leaving out those of a world of `exclude` ranks (0: none). */
static void fit_link(link_fit *f, const cpoint *cp, size_t ncp, int coll, int level, int exclude) {
    memset(f, 0, sizeof *f);
    double sizes[MAX_SIZES * 4];
    int ns = 0;
    for (size_t i = 0; i < ncp; i++) {
        const cpoint *c = &cp[i];
        if (c->coll != coll || c->level != level || (exclude && c->world == exclude)) continue;
        f->n_points++;
        int seen = 0;
        for (int j = 0; j < f->n_ranks_seen; j++)
            seen |= f->ranks_seen[j] == c->n;
        if (!seen && f->n_ranks_seen < 16) f->ranks_seen[f->n_ranks_seen++] = c->n;
        int dup = 0;
        for (int j = 0; j < ns; j++)
            dup |= sizes[j] == c->bytes;
        if (!dup && ns < MAX_SIZES * 4) sizes[ns++] = c->bytes;
    }
    if (!f->n_points) return;
    qsort(sizes, (size_t)ns, sizeof *sizes, cmp_d);
    if (ns > MAX_SIZES) ns = MAX_SIZES; /* the smallest 64 sizes: 8 B .. 64 PiB doubling */
    qsort(f->ranks_seen, (size_t)f->n_ranks_seen, sizeof(int), cmp_int);
    f->src = SRC_MEASURED;
    f->nsizes = ns;
    memcpy(f->size, sizes, (size_t)ns * sizeof *sizes);
    /* alpha: the sizes where latency is all there is (<= 4 KiB; at least
     * the three smallest), per point t / L(n), the median */
    int nlat = 0;
    while (nlat < ns && sizes[nlat] <= 4096)
        nlat++;
    if (nlat < 3) nlat = ns < 3 ? ns : 3;
    double *v = malloc((ncp ? ncp : 1) * sizeof *v);
    if (!v) {
        f->src = SRC_NONE;
        return;
    }
    for (int s = 0; s < NS; s++) {
        size_t k = 0;
        for (size_t i = 0; i < ncp; i++) {
            const cpoint *c = &cp[i];
            if (c->coll != coll || c->level != level || (exclude && c->world == exclude)) continue;
            if (c->bytes <= sizes[nlat - 1]) v[k++] = c->t[s] / lat_steps(coll, c->n);
        }
        f->alpha[s] = k ? gt_median(v, k) : 0;
        /* beta per size: what the time beyond the latency says, the median
         * over the rank counts measured at that size */
        for (int j = 0; j < ns; j++) {
            k = 0;
            for (size_t i = 0; i < ncp; i++) {
                const cpoint *c = &cp[i];
                if (c->coll != coll || c->level != level || (exclude && c->world == exclude) ||
                    c->bytes != sizes[j])
                    continue;
                double rest = c->t[s] - f->alpha[s] * lat_steps(coll, c->n);
                v[k++] = rest > 0 ? c->bytes * bw_factor(coll, c->n) / rest : INFINITY;
            }
            f->beta[s][j] = k ? gt_median(v, k) : INFINITY;
        }
    }
    free(v);
}

/* beta at size m: interpolated in log-log between the measured sizes whose
 * time exceeded the latency, the nearest one's beyond them */
static double beta_at(const link_fit *f, int s, double m) {
    int lo = -1, hi = -1;
    for (int j = 0; j < f->nsizes; j++) {
        if (!isfinite(f->beta[s][j])) continue;
        if (f->size[j] <= m) lo = j;
        if (f->size[j] >= m && hi < 0) hi = j;
    }
    if (lo < 0 && hi < 0) return INFINITY;
    if (lo < 0) return f->beta[s][hi];
    if (hi < 0 || hi == lo) return f->beta[s][lo];
    double x = (log(m) - log(f->size[lo])) / (log(f->size[hi]) - log(f->size[lo]));
    return exp(log(f->beta[s][lo]) + x * (log(f->beta[s][hi]) - log(f->beta[s][lo])));
}

/* one collective of m bytes over a ring of n ranks at one level */
static double ring_time(const link_fit *f, int s, int coll, double m, int n) {
    if (n <= 1 || m <= 0) return 0;
    double beta = beta_at(f, s, m);
    return f->alpha[s] * lat_steps(coll, n) + (isfinite(beta) ? m * bw_factor(coll, n) / beta : 0);
}

/* a collective of m bytes over nodes x rpn ranks: one level on one node or
 * one rank per node; two levels otherwise (reduce-scatter in the node, the
 * node's shard across nodes, all-gather in the node) */
static double coll_time(const model *M, int s, int coll, double m, int nodes, int rpn) {
    const link_fit *in = &M->link[L_INTRA][coll], *out = &M->link[L_INTER][coll];
    if (nodes <= 1) return ring_time(in, s, coll, m, rpn);
    if (rpn <= 1) return ring_time(out, s, coll, m, nodes);
    const link_fit *in_rs = &M->link[L_INTRA][C_RS], *in_ag = &M->link[L_INTRA][C_AG];
    switch (coll) {
    case C_AR:
        return ring_time(in_rs, s, C_RS, m, rpn) + ring_time(out, s, C_AR, m / rpn, nodes) +
               ring_time(in_ag, s, C_AG, m, rpn);
    case C_RS:
        return ring_time(in_rs, s, C_RS, m, rpn) + ring_time(out, s, C_RS, m / rpn, nodes);
    default:
        return ring_time(out, s, C_AG, m / rpn, nodes) + ring_time(in_ag, s, C_AG, m, rpn);
    }
}

/* ---- the compute model --------------------------------------------------- */

/* work(b) = a + k b through the per-batch medians of the points (ranks
 * `exclude` left out; oversubscribed points only when nothing else is
 * there: they measure the scheduler as much as the work) */
static int fit_compute(model *M, const tpoint *tp, size_t n, int exclude, char *why,
                       size_t whylen) {
    int have_plain = 0;
    for (size_t i = 0; i < n; i++)
        have_plain |= tp[i].ranks != exclude && !tp[i].oversub;
    double gb[16];
    int ng = 0;
    for (size_t i = 0; i < n; i++) {
        if (tp[i].ranks == exclude || (have_plain && tp[i].oversub)) continue;
        int dup = 0;
        for (int j = 0; j < ng; j++)
            dup |= fabs(gb[j] - tp[i].b) < 1e-9;
        if (!dup && ng < 16) gb[ng++] = tp[i].b;
    }
    if (ng == 0) {
        snprintf(why, whylen, "no training result left to fit the compute from");
        return 0;
    }
    qsort(gb, (size_t)ng, sizeof *gb, cmp_d);
    M->n_compute_ranks = 0;
    for (size_t i = 0; i < n; i++) {
        if (tp[i].ranks == exclude || (have_plain && tp[i].oversub)) continue;
        int dup = 0;
        for (int j = 0; j < M->n_compute_ranks; j++)
            dup |= M->compute_ranks[j] == tp[i].ranks;
        if (!dup && M->n_compute_ranks < 16) M->compute_ranks[M->n_compute_ranks++] = tp[i].ranks;
    }
    qsort(M->compute_ranks, (size_t)M->n_compute_ranks, sizeof(int), cmp_int);
    M->n_groups = ng;
    memcpy(M->group_b, gb, (size_t)ng * sizeof *gb);
    double *v = malloc(n * sizeof *v);
    if (!v) {
        snprintf(why, whylen, "no memory");
        return 0;
    }
    for (int s = 0; s < NS; s++) {
        double gw[16];
        for (int j = 0; j < ng; j++) {
            size_t k = 0;
            for (size_t i = 0; i < n; i++)
                if (tp[i].ranks != exclude && !(have_plain && tp[i].oversub) &&
                    fabs(tp[i].b - gb[j]) < 1e-9)
                    v[k++] = tp[i].c[s] * tp[i].share;
            gw[j] = gt_median(v, k);
        }
        double a = 0, k = 0;
        if (ng == 1) {
            k = gw[0] / gb[0];
        } else {
            /* least squares in relative terms (weights 1/w^2) */
            double sw = 0, sb = 0, sy = 0, sbb = 0, sby = 0;
            for (int j = 0; j < ng; j++) {
                double w = 1.0 / (gw[j] * gw[j]);
                sw += w;
                sb += w * gb[j];
                sy += w * gw[j];
                sbb += w * gb[j] * gb[j];
                sby += w * gb[j] * gw[j];
            }
            double det = sw * sbb - sb * sb;
            k = det != 0 ? (sw * sby - sb * sy) / det : 0;
            a = (sy - k * sb) / sw;
            if (a < 0) { /* through the origin */
                a = 0;
                k = sby / sbb;
            }
            if (k < 0) { /* no growth with the batch: a constant */
                k = 0;
                a = sy / sw;
            }
        }
        M->a[s] = a;
        M->k[s] = k;
    }
    free(v);
    return 1;
}

/* ---- one step ------------------------------------------------------------ */

typedef struct step_parts {
    double compute, exposed, other, step; /* ms */
} step_parts;

/* engine/dp.c's buckets: from the end of the G-byte gradient buffer, every
 * bucket_bytes and (shard > 0: ZeRO-2) at every multiple of shard bytes,
 * each started as the backward passes it (the gradients taken to appear
 * evenly over the backward) and run one after another as collective coll
 * of its bytes (ZeRO-2's reduce to the shard's rank taken as a
 * reduce-scatter of the same bytes: over the buffer the two move the same).
 * The ms the last one ends after the backward. */
static double overlapped_buckets(const model *M, int s, double compute, double G, double shard,
                                 int coll, int nodes, int rpn) {
    double es = M->grad_bytes_per, tb = M->backward_fraction * compute;
    double per = floor(M->bucket_bytes / es) * es;
    if (per <= 0) per = es;
    double hi = G, end = 0;
    while (hi > 0) {
        double lo = hi > per ? hi - per : 0;
        if (shard > 0) {
            double edge = floor((hi - es) / shard) * shard;
            if (lo < edge) lo = edge;
        }
        double ready = tb * ((G - lo) / G);
        double start = ready > end ? ready : end;
        end = start + coll_time(M, s, coll, hi - lo, nodes, rpn) * 1e3;
        hi = lo;
    }
    return end > tb ? end - tb : 0;
}

/* ZeRO-3's weight gathers (suites/trainer/zero3.c): every unit gathered
 * before its forward and again before its backward, the next one's
 * prefetched while the current one computes. Units taken as equal (P / U
 * parameters of es bytes), each gather costed as an all-gather of the
 * unit's bytes; per pass the first gather is exposed whole and each later
 * one by what exceeds its predecessor's compute. The ms not hidden. */
static double zero3_gathers(const model *M, int s, double compute, int nodes, int rpn) {
    double U = M->units > 0 ? M->units : 1, es = M->grad_bytes_per;
    double g = coll_time(M, s, C_AG, (double)M->n_params * es / U, nodes, rpn) * 1e3;
    double pass[2] = {(1 - M->backward_fraction) * compute, M->backward_fraction * compute};
    double exposed = 0;
    for (int k = 0; k < 2; k++) {
        double hidden = pass[k] / U;
        exposed += g + (U - 1) * (g > hidden ? g - hidden : 0);
    }
    return exposed;
}

static step_parts predict_step(const model *M, int s, int ranks, int nodes, int rpn, double b,
                               double share) {
    step_parts r;
    r.compute = (M->a[s] + M->k[s] * b) / share;
    r.exposed = r.other = 0;
    if (ranks > 1) {
        double P = (double)M->n_params, es = M->grad_bytes_per;
        if (M->deterministic) {
            /* one fixed binary tree over the whole gradient, after the
             * backward: up and down, log2 n levels each */
            int lv = 0;
            while ((1 << lv) < ranks)
                lv++;
            const link_fit *f = &M->link[nodes > 1 ? L_INTER : L_INTRA][C_AR];
            double m = P * es, beta = beta_at(f, s, m);
            r.exposed = 2.0 * lv * (f->alpha[s] + (isfinite(beta) ? m / beta : 0)) * 1e3;
            if (M->zero == 3) r.exposed += zero3_gathers(M, s, r.compute, nodes, rpn);
        } else if (M->zero == 3) {
            /* ZeRO-2's buckets, no all-gather after the update, the weights
             * gathered unit by unit in the forward and the backward */
            double unit = (double)M->chunk * ranks;
            double padded = ceil(P / unit) * unit;
            r.exposed = overlapped_buckets(M, s, r.compute, P * es, padded * es / ranks, C_RS,
                                           nodes, rpn) +
                        zero3_gathers(M, s, r.compute, nodes, rpn);
            r.other += coll_time(M, s, C_AG, padded / (double)M->chunk * 8.0, nodes, rpn) * 1e3;
        } else if (M->zero == 2) {
            /* engine/dp.c: buckets cut at the shards' edges too, each reduced
             * to its shard's rank as the backward passes it; then the fp32
             * parameters all-gathered, not overlapped */
            double unit = (double)M->chunk * ranks;
            double padded = ceil(P / unit) * unit;
            r.exposed = overlapped_buckets(M, s, r.compute, P * es, padded * es / ranks, C_RS,
                                           nodes, rpn) +
                        coll_time(M, s, C_AG, padded * 4.0, nodes, rpn) * 1e3;
            r.other += coll_time(M, s, C_AG, padded / (double)M->chunk * 8.0, nodes, rpn) * 1e3;
        } else if (M->zero) {
            double unit = (double)M->chunk * ranks;
            double padded = ceil(P / unit) * unit;
            r.exposed = (coll_time(M, s, C_RS, padded * es, nodes, rpn) +
                         coll_time(M, s, C_AG, padded * 4.0, nodes, rpn)) *
                        1e3;
            /* the gradient norm's partial sums */
            r.other += coll_time(M, s, C_AG, padded / (double)M->chunk * 8.0, nodes, rpn) * 1e3;
        } else {
            r.exposed = overlapped_buckets(M, s, r.compute, P * es, 0, C_AR, nodes, rpn);
        }
        /* every step: the losses and non-finite flags of every rank (all-gather) */
        r.other += coll_time(M, s, C_AG, 8.0 * ranks, nodes, rpn) * 1e3;
    }
    r.step = r.compute + r.exposed + r.other;
    return r;
}

static gt_predict_iv iv3(const double v[NS]) {
    gt_predict_iv r = {v[S_MID], v[S_MID], v[S_MID]};
    for (int s = 0; s < NS; s++) {
        r.lo = v[s] < r.lo ? v[s] : r.lo;
        r.hi = v[s] > r.hi ? v[s] : r.hi;
    }
    return r;
}

/* ---- building --------------------------------------------------------------- */

static void set_given(link_fit *f, double alpha_us, double beta_gbps) {
    memset(f, 0, sizeof *f);
    f->src = SRC_GIVEN;
    f->nsizes = 1;
    f->size[0] = 1;
    for (int s = 0; s < NS; s++) {
        f->alpha[s] = alpha_us * 1e-6;
        f->beta[s][0] = beta_gbps * 1e9;
    }
}

/* Fills the links of the model (excluding a world of `exclude` ranks). */
static void fit_links(gt_prediction *p, model *M, const cpoint *cp, size_t ncp, int exclude) {
    for (int l = 0; l < NLEVEL; l++) {
        double ga = l == L_INTRA ? p->opt.intra_alpha_us : p->opt.inter_alpha_us;
        double gbw = l == L_INTRA ? p->opt.intra_beta_gbps : p->opt.inter_beta_gbps;
        for (int c = 0; c < NCOLL; c++) {
            if (p->given[l])
                set_given(&M->link[l][c], ga, gbw);
            else
                fit_link(&M->link[l][c], cp, ncp, c, l, exclude);
        }
        /* a collective not measured borrows the all-reduce's alpha and beta
         * (a ring all-reduce is a reduce-scatter and an all-gather) and the
         * reverse */
        for (int c = 0; c < NCOLL; c++) {
            if (M->link[l][c].src != SRC_NONE) continue;
            for (int o = 0; o < NCOLL; o++) {
                if (M->link[l][o].src != SRC_MEASURED) continue;
                M->link[l][c] = M->link[l][o];
                M->link[l][c].src = SRC_BORROWED;
                break;
            }
        }
    }
    /* no inter-node measurement and none given: the intra-node links */
    for (int c = 0; c < NCOLL; c++) {
        if (M->link[L_INTER][c].src != SRC_NONE) continue;
        M->link[L_INTER][c] = M->link[L_INTRA][c];
        if (M->link[L_INTER][c].src != SRC_NONE) M->link[L_INTER][c].src = SRC_ASSUMED;
    }
}

/* the collectives a configuration uses, for the message naming what is missing */
static const char *needed_colls(const model *M) {
    return M->zero ? "reduce_scatter and allgather" : "allreduce";
}

static gt_status check_links(gt_prediction *p, const model *M, int nodes) {
    int l = nodes > 1 ? L_INTER : L_INTRA;
    int c = M->zero ? C_RS : C_AR;
    if (M->link[l][c].src != SRC_NONE && M->link[L_INTRA][c].src != SRC_NONE) return GT_OK;
    return GT_ERR(GT_ERR_INVALID,
                  "no collectives result to fit the links from: the reports have no "
                  "multi-rank %s of the collectives suite (run `gauntlet run "
                  "collectives --topologies 1,2 --report coll.json` and pass it with --from, "
                  "or give --intra-alpha-us and --intra-beta-gbps for a network that was not "
                  "measured)",
                  needed_colls(M));
}

/* The measured result of the model at `ranks` ranks with b samples per
 * rank (the case `prefer` first, else any case of the same configuration),
 * for the table to show beside the prediction. */
static pmeas find_measured(const gt_prediction *p, int ranks, double b, const char *prefer) {
    pmeas m;
    memset(&m, 0, sizeof m);
    const tpoint *hit = NULL;
    for (size_t i = 0; i < p->n_tp; i++) {
        const tpoint *t = &p->tp[i];
        if (t->ranks != ranks || fabs(t->b - b) > 1e-9 * (b > 1 ? b : 1)) continue;
        if (!hit || (strcmp(t->case_name, prefer) == 0 && strcmp(hit->case_name, prefer) != 0))
            hit = t;
    }
    if (!hit) return m;
    m.have = 1;
    snprintf(m.case_name, sizeof m.case_name, "%s", hit->case_name);
    m.share = hit->share;
    m.oversub = hit->oversub;
    memcpy(m.step, hit->step, sizeof m.step);
    m.exposed = hit->exposed_mid;
    m.compute = hit->c[S_MID];
    m.tput = hit->batch * p->units_per_sample / (hit->step[S_MID] * 1e-3);
    return m;
}

/* One scaling of row r: b samples per rank, global_batch in all; strong
 * scaling is predicted only with at least one sample per rank. */
static void fill_scale(const gt_prediction *p, const prow *r, pscale *sc, double b,
                       double global_batch, int strong, const char *prefer) {
    memset(sc, 0, sizeof *sc);
    sc->b = b;
    sc->global_batch = global_batch;
    sc->ok = !strong || b >= 1.0;
    if (!sc->ok) return;
    double cs[NS], es[NS], os[NS], ss[NS];
    for (int s = 0; s < NS; s++) {
        step_parts x = predict_step(&p->m, s, r->ranks, r->nodes, r->rpn, b, r->share);
        cs[s] = x.compute;
        es[s] = x.exposed;
        os[s] = x.other;
        ss[s] = x.step;
        sc->tput_s[s] = global_batch * p->units_per_sample / (x.step * 1e-3);
    }
    sc->compute = iv3(cs);
    sc->exposed = iv3(es);
    sc->other = iv3(os);
    sc->step = iv3(ss);
    sc->tput = iv3(sc->tput_s);
    sc->meas = find_measured(p, r->ranks, b, prefer);
}

/* Efficiency = this row's throughput over ranks x the reference row's, in
 * each scenario: strong step(1) / (N step(N)), weak step(1) / step(N). */
static void set_efficiency(pscale *sc, const pscale *ref, int ranks) {
    if (!sc->ok || !ref->ok) return;
    double f[NS];
    for (int s = 0; s < NS; s++)
        f[s] = sc->tput_s[s] / (ranks * ref->tput_s[s]);
    sc->eff = iv3(f);
}

/* A row of the table: every rank, the 1-rank reference's included, has the
 * same cores (--cores-per-rank or its default), so that the rows compare
 * like with like and the assumptions say what every row used. */
static void fill_row(const gt_prediction *p, prow *r, int ranks) {
    char twin[112];
    snprintf(twin, sizeof twin, "%s/weak", p->case_name);
    r->ranks = ranks;
    r->rpn = ranks < p->ranks_per_node ? ranks : p->ranks_per_node;
    r->nodes = (ranks + r->rpn - 1) / r->rpn;
    r->share = p->device ? 1 : p->cores_per_rank;
    fill_scale(p, r, &r->strong, p->global_batch / ranks, p->global_batch, 1, p->case_name);
    fill_scale(p, r, &r->weak, p->batch_per_rank, ranks * p->batch_per_rank, 0, twin);
}

/* The reference row, then every asked row with its efficiencies. */
static void fill_rows(gt_prediction *p) {
    fill_row(p, &p->ref, 1);
    set_efficiency(&p->ref.strong, &p->ref.strong, 1);
    set_efficiency(&p->ref.weak, &p->ref.weak, 1);
    p->n_rows = p->opt.n_ranks;
    for (int i = 0; i < p->n_rows; i++) {
        prow *r = &p->rows[i];
        fill_row(p, r, p->opt.ranks[i]);
        set_efficiency(&r->strong, &p->ref.strong, r->ranks);
        set_efficiency(&r->weak, &p->ref.weak, r->ranks);
        if (!r->strong.ok)
            note(p,
                 "strong scaling needs at least one sample per rank: global batch %g < "
                 "%d ranks (--global-batch sets it)",
                 p->global_batch, r->ranks);
    }
}

static void join_ints(char *buf, size_t len, const int *v, int n) {
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < n && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%d", i ? "," : "", v[i]);
}

/* Fills check row r: measured point t predicted by model M (fitted
 * without t's compute; links at level l, collective c). */
static void fill_check_row(const gt_prediction *p, crow *r, const tpoint *t, const model *M,
                           int l, int c) {
    snprintf(r->case_name, sizeof r->case_name, "%s", t->case_name);
    r->ranks = t->ranks;
    r->nodes = t->nodes;
    r->rpn = t->rpn;
    r->oversub = t->oversub;
    r->batch = t->batch;
    r->share = t->share;
    double st[NS], ex[NS];
    for (int s = 0; s < NS; s++) {
        step_parts x = predict_step(M, s, t->ranks, t->nodes, t->rpn, t->b, t->share);
        st[s] = x.step;
        ex[s] = x.exposed;
    }
    r->step = iv3(st);
    r->exposed = iv3(ex);
    r->measured_step = t->step[S_MID];
    r->measured_lo = t->step[S_LO];
    r->measured_hi = t->step[S_HI];
    r->measured_exposed = t->exposed_mid;
    r->error = (r->step.mid - r->measured_step) / r->measured_step;
    r->bound = t->oversub && p->opt.max_error_over > 0 ? p->opt.max_error_over : p->opt.max_error;
    r->within_bound = !(r->bound > 0) || fabs(r->error) <= r->bound;
    r->within_interval = r->measured_step >= r->step.lo && r->measured_step <= r->step.hi;
    /* which rank counts the fits used */
    join_ints(r->fitted_compute, sizeof r->fitted_compute, M->compute_ranks, M->n_compute_ranks);
    const link_fit *lf = &M->link[l][c];
    if (lf->src == SRC_GIVEN)
        snprintf(r->fitted_links, sizeof r->fitted_links, "given");
    else
        join_ints(r->fitted_links, sizeof r->fitted_links, lf->ranks_seen, lf->n_ranks_seen);
}

/* The check of one measured multi-rank point: the compute fitted without
 * its rank count, the links too when another rank count's collectives are
 * there; otherwise from the collectives of its own rank count, and the row
 * says it is no leave-one-out check. 0: nothing to check (a note says why). */
static int check_point(gt_prediction *p, const tpoint *t, const cpoint *cp, size_t ncp) {
    model M = p->m;
    char why[160];
    if (!fit_compute(&M, p->tp, p->n_tp, t->ranks, why, sizeof why)) {
        note(p, "check of %d ranks: %s", t->ranks, why);
        return 0;
    }
    int l = t->nodes > 1 ? L_INTER : L_INTRA, c = M.zero ? C_RS : C_AR, loo = 1;
    fit_links(p, &M, cp, ncp, t->ranks);
    if (M.link[l][c].src == SRC_NONE) {
        fit_links(p, &M, cp, ncp, 0);
        loo = 0;
    }
    if (M.link[l][c].src == SRC_NONE) {
        note(p, "check of %d ranks: no collectives result to fit the links from", t->ranks);
        return 0;
    }
    if (!loo) {
        char from[64];
        join_ints(from, sizeof from, M.compute_ranks, M.n_compute_ranks);
        note(p,
             "check of %d ranks: not a leave-one-out check: the collectives were measured at "
             "%d ranks only, so its links are fitted from the collectives of the rank count "
             "it predicts; only the compute is left out (fitted from ranks %s). Measure "
             "collectives on another multi-rank topology (e.g. --topologies 1,2,4) for a "
             "leave-one-out check",
             t->ranks, t->ranks, from);
    }
    crow *r = &p->check[p->n_check++];
    fill_check_row(p, r, t, &M, l, c);
    r->leave_one_out = loo;
    return 1;
}

/* The check: each measured multi-rank point of the case predicted from the
 * others. */
static gt_status run_check(gt_prediction *p, const cpoint *cp, size_t ncp) {
    p->check = calloc(p->n_tp ? p->n_tp : 1, sizeof *p->check);
    if (!p->check) return GT_ERR(GT_ERR_OOM, "no memory");
    for (size_t i = 0; i < p->n_tp; i++) {
        const tpoint *t = &p->tp[i];
        /* the case asked about; the others of its model only feed the fit */
        if (t->ranks < 2 || strcmp(t->case_name, p->case_name) != 0) continue;
        check_point(p, t, cp, ncp);
    }
    return GT_OK;
}

static int find_case(gt_report_doc *const *docs, size_t n, const char *want, gt_report_doc **dd,
                     const gt_report_result **rr) {
    /* the wanted case; else gpt2-3m; else the first usable result */
    const char *tries[2] = {want, want ? NULL : "gpt2-3m"};
    for (int t = 0; t < 2; t++) {
        if (!tries[t]) continue;
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < gt_report_doc_result_count(docs[i]); j++) {
                const gt_report_result *r = gt_report_doc_result(docs[i], j);
                if (usable_train(r) && strcmp(r->case_name, tries[t]) == 0) {
                    *dd = docs[i];
                    *rr = r;
                    return 1;
                }
            }
    }
    if (want) return 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < gt_report_doc_result_count(docs[i]); j++) {
            const gt_report_result *r = gt_report_doc_result(docs[i], j);
            if (usable_train(r)) {
                *dd = docs[i];
                *rr = r;
                return 1;
            }
        }
    return 0;
}

/* the usable case names, for the message when --case names none */
static void list_cases(gt_report_doc *const *docs, size_t n, char *buf, size_t len) {
    size_t at = 0;
    buf[0] = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < gt_report_doc_result_count(docs[i]); j++) {
            const gt_report_result *r = gt_report_doc_result(docs[i], j);
            if (!usable_train(r)) continue;
            char item[112];
            snprintf(item, sizeof item, "'%s'", r->case_name);
            if (strstr(buf, item)) continue;
            if (at + strlen(item) + 3 >= len) return;
            at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? ", " : "", item);
        }
}

static gt_status validate_options(const gt_predict_options *opt) {
    if (!opt || opt->n_ranks < 0 || opt->n_ranks > GT_PREDICT_MAX_RANKS)
        return GT_ERR(GT_ERR_INVALID, "between 0 and %d rank counts", GT_PREDICT_MAX_RANKS);
    for (int l = 0; l < NLEVEL; l++) {
        double a = l ? opt->inter_alpha_us : opt->intra_alpha_us;
        double b = l ? opt->inter_beta_gbps : opt->intra_beta_gbps;
        if (isnan(a) != isnan(b))
            return GT_ERR(GT_ERR_INVALID,
                          "--%s-alpha-us and --%s-beta-gbps go together (a network "
                          "that was not measured needs both its latency and its bandwidth)",
                          l ? "inter" : "intra", l ? "inter" : "intra");
        if (!isnan(a) && (!(a >= 0) || !(b > 0)))
            return GT_ERR(GT_ERR_INVALID, "alpha must be >= 0 us and beta > 0 GB/s");
    }
    return GT_OK;
}

/* The case to scale and every result of its model in the same
 * configuration; *cr: the case's result that names the configuration. */
static gt_status read_case(gt_prediction *p, gt_report_doc *const *docs, size_t n,
                           const char *want, const gt_report_result **cr) {
    gt_report_doc *cd = NULL;
    if (!find_case(docs, n, want, &cd, cr)) {
        char names[1024];
        list_cases(docs, n, names, sizeof names);
        if (want && names[0])
            return GT_ERR(GT_ERR_INVALID,
                          "no passed train or scaling result '%s' with ms_per_step in "
                          "the reports; --case takes one of: %s",
                          want, names);
        return GT_ERR(GT_ERR_INVALID,
                      "the reports hold no passed train or scaling result with "
                      "ms_per_step (the compute time to scale): run `gauntlet run "
                      "scaling/gpt2-3m scaling/gpt2-3m/weak --topologies 1,2 --report "
                      "scaling.json` (or `gauntlet train --report`) and pass it with --from");
    }
    const gt_report_result *c = *cr;
    snprintf(p->case_name, sizeof p->case_name, "%s", c->case_name);
    snprintf(p->model_name, sizeof p->model_name, "%s", pstr(c, "model"));
    snprintf(p->precision, sizeof p->precision, "%s",
             pstr(c, "precision") ? pstr(c, "precision") : "fp32");
    snprintf(p->backend, sizeof p->backend, "%s", c->backend);
    p->device = strcmp(c->backend, "cuda") == 0;
    p->cores = doc_cores(cd);
    const char *tm = tput_metric(c);
    snprintf(p->unit, sizeof p->unit, "%s", tm ? tm : "samples_per_s");
    p->units_per_sample = strncmp(p->unit, "tokens", 6) == 0 ? pnum(c, "seq", 1) : 1;
    gt_status s = GT_OK;
    for (size_t i = 0; i < n && s == GT_OK; i++)
        for (size_t j = 0; j < gt_report_doc_result_count(docs[i]) && s == GT_OK; j++) {
            const gt_report_result *r = gt_report_doc_result(docs[i], j);
            if (usable_train(r) && same_family(r, c)) s = add_tpoint(p, docs[i], r);
        }
    if (s != GT_OK) return s;
    if (!p->n_tp)
        return GT_ERR(GT_ERR_INVALID,
                      "case '%s' has no step time to scale (its results "
                      "lack ms_per_step samples or batch): rerun its suite",
                      p->case_name);
    return GT_OK;
}

/* The data-parallel configuration of the model, from the case's result
 * and the options. */
static gt_status set_model(gt_prediction *p, const gt_report_result *cr,
                           const gt_predict_options *opt) {
    model *M = &p->m;
    M->n_params = (long long)pnum(cr, "num_params", 0);
    if (M->n_params <= 0)
        return GT_ERR(GT_ERR_INVALID,
                      "result '%s' has no num_params (a report of an "
                      "older gauntlet): rerun the scaling suite",
                      p->case_name);
    M->grad_bytes_per = strcmp(p->precision, "fp32") == 0 ? 4 : 2;
    M->bucket_bytes = (opt->bucket_mb > 0 ? opt->bucket_mb : pnum(cr, "bucket_mb", 25)) * 1048576.0;
    M->backward_fraction = opt->backward_fraction > 0 ? opt->backward_fraction : 2.0 / 3.0;
    M->zero = opt->zero >= 0 ? opt->zero : (int)pnum(cr, "zero", 0);
    if (M->zero < 0 || M->zero > 3)
        return GT_ERR(GT_ERR_INVALID,
                      "result '%s' trained with zero %d: predict models ZeRO 0 to 3 only",
                      p->case_name, M->zero);
    /* gpt2's units: the embeddings, each block, the final LayerNorm */
    M->units = pnum(cr, "layers", 0) > 0 ? (int)pnum(cr, "layers", 0) + 2 : 1;
    M->deterministic = (int)pnum(cr, "deterministic", 0);
    M->device = p->device;
    M->chunk = 65536;
    return GT_OK;
}

/* Strong scaling keeps the case's global batch, weak the per-rank batch of
 * its weak twin ("gpt2-3m/weak"), else of its smallest topology. */
static void set_batches(gt_prediction *p, const gt_predict_options *opt) {
    const tpoint *first = NULL, *weak = NULL;
    char twin[112];
    snprintf(twin, sizeof twin, "%s/weak", p->case_name);
    for (size_t i = 0; i < p->n_tp; i++) {
        const tpoint *t = &p->tp[i];
        if (strcmp(t->case_name, p->case_name) == 0 && (!first || t->ranks < first->ranks))
            first = t;
        if (strcmp(t->case_name, twin) == 0) weak = t;
    }
    if (!first) first = &p->tp[0]; /* the case's own result had no usable step */
    p->global_batch = opt->global_batch > 0 ? opt->global_batch : first->batch;
    p->batch_per_rank = opt->batch_per_rank > 0 ? opt->batch_per_rank : weak ? weak->b : first->b;
}

/* Ranks per node, and the cores of a predicted rank (host backends): the
 * same for every row. */
static void set_cores(gt_prediction *p, const gt_predict_options *opt) {
    int rpn = 0;
    for (size_t i = 0; i < p->n_tp; i++) {
        const tpoint *t = &p->tp[i];
        if (!t->oversub && t->rpn > rpn) rpn = t->rpn;
    }
    p->ranks_per_node = opt->ranks_per_node > 0 ? opt->ranks_per_node : rpn > 0 ? rpn : 1;
    if (p->device) return;
    if (opt->cores_per_rank > 0) {
        p->cores_per_rank = opt->cores_per_rank;
    } else if (p->cores > 0) {
        /* gauntlet's default threads: this node's cores over its ranks */
        int th = p->cores / p->ranks_per_node > 0 ? p->cores / p->ranks_per_node : 1;
        double per = (double)p->cores / p->ranks_per_node;
        p->cores_per_rank = th < per ? th : per;
    } else {
        p->cores_per_rank = 1;
        note(p, "the reports do not say how many cores the machine has: each rank is "
                "taken to have one (--cores-per-rank to set)");
    }
}

/* Collectives: in place for the all-reduce and the all-gather, as dp.c
 * calls them; the reduce-scatter out of place. */
static gt_status read_collectives(gt_prediction *p, gt_report_doc *const *docs, size_t n,
                                  cpoint **cp, size_t *ncp) {
    gt_status s = GT_OK;
    for (size_t i = 0; i < n && s == GT_OK; i++)
        for (size_t j = 0; j < gt_report_doc_result_count(docs[i]) && s == GT_OK; j++) {
            const gt_report_result *r = gt_report_doc_result(docs[i], j);
            int level, coll;
            if (strcmp(r->suite, "collectives") != 0 ||
                parse_coll_case(r->case_name, &level, &coll) != 0)
                continue;
            size_t before = *ncp;
            s = add_cpoints(cp, ncp, r, coll == C_RS ? 0 : 1);
            if (*ncp > before && strcmp(r->backend, "mpi") == 0) p->coll_mpi = 1;
        }
    return s;
}

/* The links every predicted rank count needs; *max_nodes: the most nodes a
 * row spans. */
static gt_status check_rows_links(gt_prediction *p, int *max_nodes) {
    *max_nodes = 1;
    for (int i = 0; i < p->opt.n_ranks; i++) {
        int r = p->opt.ranks[i], q = r < p->ranks_per_node ? r : p->ranks_per_node;
        int nodes = (r + q - 1) / q;
        *max_nodes = nodes > *max_nodes ? nodes : *max_nodes;
        if (r < 2) continue;
        GT_TRY(check_links(p, &p->m, nodes));
    }
    return GT_OK;
}

/* what the prediction assumed, in words */
static void note_assumptions(gt_prediction *p, int max_nodes) {
    const model *M = &p->m;
    const gt_predict_options *opt = &p->opt;
    if (M->n_groups == 1)
        note(p,
             "compute: one batch size per rank measured (%g): a rank's compute taken as "
             "proportional to its batch",
             M->group_b[0]);
    if (!p->device)
        note(p,
             "compute: host backend: a rank's work is its step time times the cores it "
             "had (min(threads, cores / ranks on the node)); predicted ranks get %g "
             "core(s) each on every row, the 1-rank reference included, %d rank(s) per node",
             p->cores_per_rank, p->ranks_per_node);
    for (int c = 0; c < NCOLL; c++)
        if (M->link[L_INTRA][c].src == SRC_BORROWED)
            note(p, "links: %s not measured: it borrows the fit of another collective",
                 g_coll_names[c]);
    if (max_nodes > 1 && M->link[L_INTER][M->zero ? C_RS : C_AR].src == SRC_ASSUMED)
        note(p, "links: inter-node not measured and not given: taken to be as fast as the "
                "measured intra-node links (--inter-alpha-us / --inter-beta-gbps set it)");
    for (int l = 0; l < NLEVEL; l++)
        if (p->given[l])
            note(p,
                 "links: %s alpha %g us and beta %g GB/s given on the command line, not "
                 "measured: a network that was not measured",
                 g_level_names[l], l ? opt->inter_alpha_us : opt->intra_alpha_us,
                 l ? opt->inter_beta_gbps : opt->intra_beta_gbps);
    if (M->zero == 3)
        note(p,
             "ZeRO-3: ZeRO-2's %.0f MiB buckets (also cut at the shards' edges, each reduced "
             "to its shard's rank as the backward passes it), no all-gather after the update; "
             "the weights gathered in %d equal units before each unit's forward and again "
             "before its backward, each gather an all-gather of the unit's bytes prefetched "
             "during the previous unit's compute (one micro-batch per rank)",
             M->bucket_bytes / 1048576.0, M->units);
    else if (M->zero == 2)
        note(p,
             "ZeRO-2: %.0f MiB buckets, also cut at the shards' edges, each reduced to its "
             "shard's rank as the backward (%.0f%% of the compute) passes it, a bucket's "
             "reduce taken to cost a reduce-scatter of its bytes; then the fp32 parameters "
             "all-gathered, not overlapped",
             M->bucket_bytes / 1048576.0, M->backward_fraction * 100);
    else if (M->zero)
        note(p, "ZeRO-1: reduce-scatter of the gradients and all-gather of the fp32 "
                "parameters after the backward, not overlapped; the optimizer's share of the "
                "compute is not divided among the ranks");
    else if (M->deterministic)
        note(p, "--deterministic: the whole gradient summed along a binary tree after the "
                "backward, not overlapped");
    else
        note(p,
             "overlap: %.0f MiB buckets all-reduced one after another as the backward "
             "(%.0f%% of the compute, gradients appearing evenly) passes them",
             M->bucket_bytes / 1048576.0, M->backward_fraction * 100);
}

/* The largest message the model sends in one collective, bytes. */
static double largest_message(const model *M) {
    double G = (double)M->n_params * M->grad_bytes_per;
    return M->zero == 1 || M->deterministic || M->bucket_bytes > G ? G : M->bucket_bytes;
}

/* Why the measured exposed communication can exceed the model's, for the
 * assumptions; what applies to these reports only. */
static void note_exposed_why(gt_prediction *p) {
    const model *M = &p->m;
    const link_fit *f = &M->link[L_INTRA][M->zero ? C_RS : C_AR];
    double msg = largest_message(M), top = f->nsizes ? f->size[f->nsizes - 1] : 0;
    int sized = (f->src == SRC_MEASURED || f->src == SRC_BORROWED) && msg > top;
    int nb = p->coll_mpi && !M->zero && !M->deterministic;
    char size_why[320] = "", upto[32];
    double e = pow(2, ceil(log2(msg))); /* the sweep's sizes are powers of two */
    if (e >= 1048576)
        snprintf(upto, sizeof upto, "%.0fM", e / 1048576);
    else
        snprintf(upto, sizeof upto, "%.0fK", e >= 1024 ? e / 1024 : 1);
    if (sized)
        snprintf(size_why, sizeof size_why,
                 "; (3) the %.3g MB message is above the largest %s measured (%.0f B) and "
                 "is given that size's bandwidth, which a message in cache reaches and a "
                 "larger one may not (`gauntlet run collectives -e %s` measures up to it)",
                 msg / 1e6, g_coll_names[M->zero ? C_RS : C_AR], top, upto);
    note(p,
         "exposed communication, what the model leaves out: (1) the measured time is what a "
         "rank spends in gt_dp_finish (engine/dp.c) after its backward, and holds the wait "
         "for the slowest rank's backward; the model's ranks end it together%s%s",
         nb ? "; (2) the buckets are non-blocking all-reduces (MPI_Iallreduce, Open MPI's "
              "libnbc algorithms) while the collectives suite times the blocking "
              "MPI_Allreduce, 1.8-2.2x faster on 2 ranks of the development VM "
              "(docs/distributed.md)"
            : "",
         size_why);
}

/* The model's exposed communication beside the measured one (the training
 * results' exposed_comm_ms) for every multi-rank rank count of the case,
 * and, when the measurement exceeds the model, what the model leaves out. */
static void note_exposed(gt_prediction *p) {
    int said[16], n_said = 0, short_of = 0;
    for (size_t i = 0; i < p->n_tp && n_said < 16; i++) {
        const tpoint *t = &p->tp[i];
        if (t->ranks < 2 || strcmp(t->case_name, p->case_name) != 0) continue;
        int dup = 0;
        for (int j = 0; j < n_said; j++)
            dup |= said[j] == t->ranks;
        if (dup) continue;
        said[n_said++] = t->ranks;
        step_parts x = predict_step(&p->m, S_MID, t->ranks, t->nodes, t->rpn, t->b, t->share);
        note(p,
             "exposed communication at %d ranks (%s, %g per rank): model %.3g ms, measured "
             "%.3g ms (exposed_comm_ms, median)%s",
             t->ranks, t->case_name, t->b, x.exposed, t->exposed_mid,
             t->oversub ? "; oversubscribed" : "");
        short_of |= t->exposed_mid > 1.25 * x.exposed + 0.5;
    }
    if (short_of) note_exposed_why(p);
}

gt_status gt_predict_build(gt_report_doc *const *docs, size_t n, const gt_predict_options *opt,
                           gt_prediction **out) {
    *out = NULL;
    gt_status s = validate_options(opt);
    if (s != GT_OK) return s;
    gt_prediction *p = calloc(1, sizeof *p);
    if (!p) return GT_ERR(GT_ERR_OOM, "no memory");
    p->opt = *opt;
    p->opt.case_name = NULL; /* borrowed: the case's name is copied */
    p->given[L_INTRA] = !isnan(opt->intra_alpha_us);
    p->given[L_INTER] = !isnan(opt->inter_alpha_us);
    cpoint *cp = NULL;
    size_t ncp = 0;
    const gt_report_result *cr = NULL;
    char why[160];
    int max_nodes = 1;
    if ((s = read_case(p, docs, n, opt->case_name, &cr)) != GT_OK ||
        (s = set_model(p, cr, opt)) != GT_OK)
        goto fail;
    set_batches(p, opt);
    set_cores(p, opt);
    if ((s = read_collectives(p, docs, n, &cp, &ncp)) != GT_OK) goto fail;
    if (!fit_compute(&p->m, p->tp, p->n_tp, 0, why, sizeof why)) {
        s = GT_ERR(GT_ERR_INVALID, "%s", why);
        goto fail;
    }
    fit_links(p, &p->m, cp, ncp, 0);
    if ((s = check_rows_links(p, &max_nodes)) != GT_OK) goto fail;
    note_assumptions(p, max_nodes);
    fill_rows(p);
    if (opt->check && (s = run_check(p, cp, ncp)) != GT_OK) goto fail;
    if (opt->check && p->n_check == 0)
        note(p,
             "check: nothing to check: the reports hold no multi-rank result of case "
             "'%s' whose compute could be fitted from the other rank counts (measure it "
             "on topologies 1,2 or more)",
             p->case_name);
    note_exposed(p);
    free(cp);
    *out = p;
    return GT_OK;
fail:
    free(cp);
    gt_prediction_free(p);
    return s;
}

void gt_prediction_free(gt_prediction *p) {
    if (!p) return;
    free(p->tp);
    free(p->check);
    free(p);
}

void gt_prediction_check_counts(const gt_prediction *p, int *checked, int *failed) {
    *checked = p->n_check;
    *failed = 0;
    for (int i = 0; i < p->n_check; i++)
        *failed += !p->check[i].within_bound;
}

/* ---- output ------------------------------------------------------------------ */

static void fmt_iv(char *b, size_t n, gt_predict_iv v, int prec) {
    snprintf(b, n, "%.*g [%.*g, %.*g]", prec, v.mid, prec, v.lo, prec, v.hi);
}

static void print_link(FILE *f, const char *level, const char *coll, const link_fit *l) {
    if (l->src == SRC_NONE) return;
    fprintf(f, "  %-10s %-14s %-8s alpha %.3g us [%.3g, %.3g]", level, coll, g_src_names[l->src],
            l->alpha[S_MID] * 1e6, l->alpha[S_LO] * 1e6, l->alpha[S_HI] * 1e6);
    /* beta at the largest size measured: the bandwidth the gradients see */
    double m = l->nsizes ? l->size[l->nsizes - 1] : 1;
    double b[NS];
    for (int s = 0; s < NS; s++)
        b[s] = beta_at(l, s, m) * 1e-9;
    gt_predict_iv bi = iv3(b);
    if (isfinite(bi.mid)) fprintf(f, ", beta %.3g GB/s [%.3g, %.3g]", bi.mid, bi.lo, bi.hi);
    if (l->src == SRC_MEASURED || l->src == SRC_BORROWED) {
        fprintf(f, " at %.0f B; from ranks ", m);
        for (int i = 0; i < l->n_ranks_seen; i++)
            fprintf(f, "%s%d", i ? "," : "", l->ranks_seen[i]);
    }
    fputc('\n', f);
}

static void print_inputs(const gt_prediction *p, FILE *f) {
    const model *M = &p->m;
    fprintf(f, "prediction for %s (%s, %s, %s, %lld parameters; %s)\n", p->case_name, p->model_name,
            p->precision, p->backend, M->n_params,
            M->zero == 3       ? "ZeRO-3"
            : M->zero == 2     ? "ZeRO-2"
            : M->zero          ? "ZeRO-1"
            : M->deterministic ? "deterministic"
                               : "bucketed all-reduce");
    fprintf(f, "inputs (median [low, high] of the measured samples):\n");
    fprintf(f,
            "  compute per rank: work(b) = %.4g + %.4g x b %s [%.4g + %.4g b, %.4g + %.4g b]"
            " from batch per rank ",
            M->a[S_MID], M->k[S_MID], p->device ? "ms" : "core-ms", M->a[S_LO], M->k[S_LO],
            M->a[S_HI], M->k[S_HI]);
    for (int i = 0; i < M->n_groups; i++)
        fprintf(f, "%s%g", i ? "," : "", M->group_b[i]);
    fprintf(f, " (%zu results)\n", p->n_tp);
    for (int l = 0; l < NLEVEL; l++)
        for (int k = 0; k < NCOLL; k++) {
            if (l == L_INTER && M->link[l][k].src == SRC_ASSUMED) continue;
            print_link(f, g_level_names[l], g_coll_names[k], &M->link[l][k]);
        }
    fprintf(f, "assumptions:\n");
    for (int i = 0; i < p->n_notes; i++)
        fprintf(f, "  - %s\n", p->notes[i]);
}

/* 1 when the rows include 1 rank (else the reference row is printed too) */
static int rows_have_one(const gt_prediction *p) {
    for (int i = 0; i < p->n_rows; i++)
        if (p->rows[i].ranks == 1) return 1;
    return 0;
}

static void print_scale_row(const gt_prediction *p, FILE *f, const prow *r, int weak, int ref) {
    const pscale *sc = weak ? &r->weak : &r->strong;
    char rk[24], cores[32], step[96], meas[32], tput[32], eff[64];
    snprintf(rk, sizeof rk, "%d%s", r->ranks, ref ? "*" : "");
    if (p->device)
        snprintf(cores, sizeof cores, "gpu");
    else
        snprintf(cores, sizeof cores, "%g", r->share);
    snprintf(meas, sizeof meas, "-");
    if (sc->meas.have) snprintf(meas, sizeof meas, "%.4g", sc->meas.step[S_MID]);
    if (sc->ok) {
        fmt_iv(step, sizeof step, sc->step, 4);
        snprintf(tput, sizeof tput, "%.4g", sc->tput.mid);
        snprintf(eff, sizeof eff, "%.1f%% [%.0f, %.0f]", sc->eff.mid * 100, sc->eff.lo * 100,
                 sc->eff.hi * 100);
    } else {
        snprintf(step, sizeof step, "n/a (batch < ranks)");
        snprintf(tput, sizeof tput, "-");
        snprintf(eff, sizeof eff, "-");
    }
    fprintf(f, "  %6s %5d %5s  %-34s %-11s %-12s %s\n", rk, r->nodes, cores, step, meas, tput, eff);
}

/* The strong or the weak table: one row per rank count, the 1-rank
 * reference first when the rows lack it. */
static void print_scale_table(const gt_prediction *p, FILE *f, int weak) {
    if (weak)
        fprintf(f, "\nweak scaling: %g sample(s) per rank", p->batch_per_rank);
    else
        fprintf(f, "\nstrong scaling: global batch %g", p->global_batch);
    fprintf(f, " (efficiency = %s / (ranks x the 1-rank row's %s))\n", p->unit, p->unit);
    char head[32];
    snprintf(head, sizeof head, "%s step ms [lo, hi]", weak ? "weak" : "strong");
    fprintf(f, "  %6s %5s %5s  %-34s %-11s %-12s %s\n", "ranks", "nodes",
            p->device ? "rank" : "cores", head, "measured ms", p->unit, "efficiency");
    int one = rows_have_one(p);
    if (!one) print_scale_row(p, f, &p->ref, weak, 1);
    for (int i = 0; i < p->n_rows; i++)
        print_scale_row(p, f, &p->rows[i], weak, 0);
    if (!one)
        fprintf(f, "  (* the 1-rank reference: not asked for, every efficiency is relative "
                   "to it)\n");
}

/* The measured rows: the prediction beside what was measured, part by part. */
static void print_measured(const gt_prediction *p, FILE *f) {
    int any = 0;
    for (int i = 0; i < p->n_rows; i++)
        any |= p->rows[i].strong.meas.have || p->rows[i].weak.meas.have;
    if (!any) return;
    fprintf(f,
            "\npredicted against measured (the rank counts and batches per rank that were "
            "measured; ms per step, medians):\n");
    fprintf(f, "  %-7s %5s %-20s %-11s %-26s %-24s %s\n", "scaling", "ranks", "measured case",
            "cores p/m", "step pred / meas (diff)", "exposed comm pred / meas",
            "compute pred / meas");
    for (int i = 0; i < p->n_rows; i++)
        for (int w = 0; w < 2; w++) {
            const prow *r = &p->rows[i];
            const pscale *sc = w ? &r->weak : &r->strong;
            const pmeas *m = &sc->meas;
            if (!m->have || !sc->ok) continue;
            char cores[64], step[96], ex[64], comp[64];
            if (p->device)
                snprintf(cores, sizeof cores, "gpu");
            else
                snprintf(cores, sizeof cores, "%g / %g", r->share, m->share);
            snprintf(step, sizeof step, "%.4g / %.4g (%+.1f%%)", sc->step.mid, m->step[S_MID],
                     (sc->step.mid - m->step[S_MID]) / m->step[S_MID] * 100);
            snprintf(ex, sizeof ex, "%.3g / %.3g", sc->exposed.mid, m->exposed);
            snprintf(comp, sizeof comp, "%.4g / %.4g", sc->compute.mid, m->compute);
            fprintf(f, "  %-7s %5d %-20s %-11s %-26s %-24s %s%s\n", w ? "weak" : "strong",
                    r->ranks, m->case_name, cores, step, ex, comp,
                    !p->device && m->share != r->share ? "  (measured with other cores)" : "");
        }
}

static void print_check(const gt_prediction *p, FILE *f) {
    char a[64], b[64];
    fprintf(f,
            "\ncheck: each measured topology of %s predicted from the others' results "
            "(compute and collectives of that rank count left out; c: the rank counts "
            "the compute was fitted from, l: the links)\n",
            p->case_name);
    fprintf(f, "  %-18s %5s %-16s %-26s %-10s %8s %-8s %-16s\n", "case", "ranks",
            "fit from ranks", "predicted ms [lo, hi]", "measured", "error", "bound",
            "exposed pred/meas");
    int not_loo = 0;
    for (int i = 0; i < p->n_check; i++) {
        const crow *r = &p->check[i];
        char fit[160];
        snprintf(fit, sizeof fit, "c:%s l:%s", r->fitted_compute, r->fitted_links);
        fmt_iv(a, sizeof a, r->step, 4);
        snprintf(b, sizeof b, "%.0f%%", r->bound * 100);
        fprintf(f, "  %-18s %5d %-16s %-26s %-10.4g %+7.1f%% %-8s %.3g/%.3g%s%s%s\n", r->case_name,
                r->ranks, fit, a, r->measured_step, r->error * 100, r->bound > 0 ? b : "-",
                r->exposed.mid, r->measured_exposed, r->oversub ? "  oversubscribed" : "",
                r->leave_one_out ? "" : "  not leave-one-out",
                r->within_bound ? "" : "  OUTSIDE THE BOUND");
        not_loo += !r->leave_one_out;
    }
    if (not_loo)
        fprintf(f,
                "  (not leave-one-out: no collectives were measured at another multi-rank "
                "count, so the links come from the collectives of the rank count predicted; "
                "only the compute is left out. This is not a leave-one-out check)\n");
    int checked, failed;
    gt_prediction_check_counts(p, &checked, &failed);
    fprintf(f, "check: %d prediction(s), %d outside the bound%s\n", checked, failed,
            not_loo ? ", not all leave-one-out" : "");
}

void gt_prediction_print(const gt_prediction *p, FILE *f) {
    print_inputs(p, f);
    if (p->n_rows) {
        print_scale_table(p, f, 0);
        print_scale_table(p, f, 1);
        fprintf(f, "  (step = compute + exposed communication + other collectives; "
                   "--json has each part)\n");
        print_measured(p, f);
    }
    if (p->opt.check) print_check(p, f);
}

static json_t *jiv(gt_predict_iv v) {
    return json_pack("{s:f,s:f,s:f}", "mid", isfinite(v.mid) ? v.mid : 0.0, "lo",
                     isfinite(v.lo) ? v.lo : 0.0, "hi", isfinite(v.hi) ? v.hi : 0.0);
}

static json_t *jlink(const link_fit *l) {
    json_t *o = json_object();
    json_object_set_new(o, "source", json_string(g_src_names[l->src]));
    if (l->src == SRC_NONE) return o;
    double al[NS], bl[NS];
    double m = l->nsizes ? l->size[l->nsizes - 1] : 1;
    for (int s = 0; s < NS; s++) {
        al[s] = l->alpha[s] * 1e6;
        bl[s] = beta_at(l, s, m) * 1e-9;
    }
    json_object_set_new(o, "alpha_us", jiv(iv3(al)));
    if (isfinite(bl[S_MID])) json_object_set_new(o, "beta_gbps", jiv(iv3(bl)));
    json_object_set_new(o, "beta_at_bytes", json_real(m));
    json_t *sz = json_array();
    for (int j = 0; j < l->nsizes; j++) {
        double bb[NS];
        for (int s = 0; s < NS; s++)
            bb[s] = l->beta[s][j] * 1e-9;
        if (!isfinite(bb[S_MID])) continue;
        json_t *e = jiv(iv3(bb));
        json_object_set_new(e, "bytes", json_real(l->size[j]));
        json_array_append_new(sz, e);
    }
    json_object_set_new(o, "beta_gbps_per_size", sz);
    json_t *rk = json_array();
    for (int i = 0; i < l->n_ranks_seen; i++)
        json_array_append_new(rk, json_integer(l->ranks_seen[i]));
    json_object_set_new(o, "ranks", rk);
    return o;
}

static json_t *jmeas(const gt_prediction *p, const pmeas *m) {
    json_t *e = json_object();
    json_object_set_new(e, "case", json_string(m->case_name));
    json_object_set_new(e, "step_ms", json_real(m->step[S_MID]));
    json_object_set_new(e, "step_ms_range", json_pack("[f,f]", m->step[S_LO], m->step[S_HI]));
    json_object_set_new(e, "exposed_comm_ms", json_real(m->exposed));
    json_object_set_new(e, "compute_ms", json_real(m->compute));
    json_object_set_new(e, "throughput", json_real(m->tput));
    if (!p->device) json_object_set_new(e, "cores_per_rank", json_real(m->share));
    json_object_set_new(e, "oversubscribed", json_boolean(m->oversub));
    return e;
}

static json_t *jscale(const gt_prediction *p, const pscale *sc) {
    json_t *e = json_object();
    json_object_set_new(e, "global_batch", json_real(sc->global_batch));
    json_object_set_new(e, "batch_per_rank", json_real(sc->b));
    if (!sc->ok) {
        json_object_set_new(e, "not_predicted", json_string("global batch < ranks"));
        return e;
    }
    json_object_set_new(e, "step_ms", jiv(sc->step));
    json_object_set_new(e, "compute_ms", jiv(sc->compute));
    json_object_set_new(e, "exposed_comm_ms", jiv(sc->exposed));
    json_object_set_new(e, "other_comm_ms", jiv(sc->other));
    json_object_set_new(e, "throughput", jiv(sc->tput));
    json_object_set_new(e, "efficiency", jiv(sc->eff));
    if (sc->meas.have) json_object_set_new(e, "measured", jmeas(p, &sc->meas));
    return e;
}

static json_t *jrow(const gt_prediction *p, const prow *r) {
    json_t *e = json_object();
    json_object_set_new(e, "ranks", json_integer(r->ranks));
    json_object_set_new(e, "nodes", json_integer(r->nodes));
    json_object_set_new(e, "ranks_per_node", json_integer(r->rpn));
    if (!p->device) json_object_set_new(e, "cores_per_rank", json_real(r->share));
    json_object_set_new(e, "strong", jscale(p, &r->strong));
    json_object_set_new(e, "weak", jscale(p, &r->weak));
    return e;
}

static json_t *jcheck(const crow *r) {
    json_t *e = json_object();
    json_object_set_new(e, "case", json_string(r->case_name));
    json_object_set_new(e, "ranks", json_integer(r->ranks));
    json_object_set_new(e, "nodes", json_integer(r->nodes));
    json_object_set_new(e, "global_batch", json_real(r->batch));
    json_object_set_new(e, "compute_fitted_from_ranks", json_string(r->fitted_compute));
    json_object_set_new(e, "links_fitted_from_ranks", json_string(r->fitted_links));
    json_object_set_new(e, "leave_one_out", json_boolean(r->leave_one_out));
    json_object_set_new(e, "oversubscribed", json_boolean(r->oversub));
    json_object_set_new(e, "predicted_step_ms", jiv(r->step));
    json_object_set_new(e, "measured_step_ms", json_real(r->measured_step));
    json_object_set_new(e, "measured_step_ms_range",
                        json_pack("[f,f]", r->measured_lo, r->measured_hi));
    json_object_set_new(e, "predicted_exposed_comm_ms", jiv(r->exposed));
    json_object_set_new(e, "measured_exposed_comm_ms", json_real(r->measured_exposed));
    json_object_set_new(e, "error", json_real(r->error));
    if (r->bound > 0) json_object_set_new(e, "bound", json_real(r->bound));
    json_object_set_new(e, "within_bound", json_boolean(r->within_bound));
    json_object_set_new(e, "measured_within_interval", json_boolean(r->within_interval));
    return e;
}

static json_t *prediction_json(const gt_prediction *p) {
    const model *M = &p->m;
    json_t *o = json_object();
    json_object_set_new(o, "predict_version", json_integer(2));
    json_object_set_new(o, "case", json_string(p->case_name));
    json_object_set_new(o, "model", json_string(p->model_name));
    json_object_set_new(o, "precision", json_string(p->precision));
    json_object_set_new(o, "backend", json_string(p->backend));
    json_object_set_new(o, "unit", json_string(p->unit));
    json_object_set_new(o, "units_per_sample", json_real(p->units_per_sample));
    json_object_set_new(o, "num_params", json_integer(M->n_params));
    json_object_set_new(o, "mode",
                        json_string(M->zero == 3       ? "zero3"
                                    : M->zero == 2     ? "zero2"
                                    : M->zero          ? "zero1"
                                    : M->deterministic ? "deterministic"
                                                       : "bucketed"));
    json_object_set_new(o, "global_batch", json_real(p->global_batch));
    json_object_set_new(o, "batch_per_rank", json_real(p->batch_per_rank));
    json_object_set_new(o, "ranks_per_node", json_integer(p->ranks_per_node));
    if (!p->device) json_object_set_new(o, "cores_per_rank", json_real(p->cores_per_rank));
    json_object_set_new(o, "bucket_bytes", json_real(M->bucket_bytes));
    json_object_set_new(o, "backward_fraction", json_real(M->backward_fraction));
    json_t *in = json_object();
    json_t *comp = json_object();
    /* work(b) = fixed + per_sample x b, at the median samples; the fits at
     * the low and high ends of the samples are pairs (not bounds one by one) */
    json_object_set_new(comp, "unit", json_string(p->device ? "ms" : "core-ms"));
    json_object_set_new(comp, "fixed", json_real(M->a[S_MID]));
    json_object_set_new(comp, "per_sample", json_real(M->k[S_MID]));
    static const char *const sn[NS] = {"low", "median", "high"};
    json_t *sc = json_object();
    for (int s = 0; s < NS; s++)
        json_object_set_new(sc, sn[s],
                            json_pack("{s:f,s:f}", "fixed", M->a[s], "per_sample", M->k[s]));
    json_object_set_new(comp, "scenarios", sc);
    json_t *pts = json_array();
    for (size_t i = 0; i < p->n_tp; i++) {
        const tpoint *t = &p->tp[i];
        json_t *e = json_object();
        json_object_set_new(e, "case", json_string(t->case_name));
        json_object_set_new(e, "ranks", json_integer(t->ranks));
        json_object_set_new(e, "batch_per_rank", json_real(t->b));
        json_object_set_new(e, "share", json_real(t->share));
        json_object_set_new(e, "oversubscribed", json_boolean(t->oversub));
        gt_predict_iv c = {t->c[S_LO], t->c[S_MID], t->c[S_HI]};
        json_object_set_new(e, "compute_ms", jiv(c));
        json_array_append_new(pts, e);
    }
    json_object_set_new(comp, "points", pts);
    json_object_set_new(in, "compute", comp);
    json_t *links = json_object();
    for (int l = 0; l < NLEVEL; l++) {
        json_t *lv = json_object();
        for (int c = 0; c < NCOLL; c++)
            json_object_set_new(lv, g_coll_names[c], jlink(&M->link[l][c]));
        json_object_set_new(links, g_level_names[l], lv);
    }
    json_object_set_new(in, "links", links);
    json_object_set_new(o, "inputs", in);
    json_t *notes = json_array();
    for (int i = 0; i < p->n_notes; i++)
        json_array_append_new(notes, json_string(p->notes[i]));
    json_object_set_new(o, "assumptions", notes);
    json_object_set_new(o, "efficiency",
                        json_string("throughput / (ranks x the reference's throughput): the "
                                    "1-rank row with the same cores per rank"));
    json_object_set_new(o, "reference", jrow(p, &p->ref));
    json_t *rows = json_array();
    for (int i = 0; i < p->n_rows; i++)
        json_array_append_new(rows, jrow(p, &p->rows[i]));
    json_object_set_new(o, "predictions", rows);
    if (p->opt.check) {
        json_t *ck = json_array();
        for (int i = 0; i < p->n_check; i++)
            json_array_append_new(ck, jcheck(&p->check[i]));
        json_object_set_new(o, "check", ck);
    }
    return o;
}

char *gt_prediction_json_text(const gt_prediction *p) {
    json_t *o = prediction_json(p);
    if (!o) return NULL;
    char *t = json_dumps(o, JSON_INDENT(1) | JSON_REAL_PRECISION(6));
    json_decref(o);
    return t;
}

gt_status gt_prediction_write_json(const gt_prediction *p, const char *path) {
    char *t = gt_prediction_json_text(p);
    if (!t) return GT_ERR(GT_ERR_OOM, "no memory for the JSON");
    gt_atomic_file af;
    gt_status s = gt_atomic_open(path, "prediction", "choose a writable --json path", &af);
    if (s == GT_OK) {
        fputs(t, af.f);
        fputc('\n', af.f);
        s = gt_atomic_commit(&af);
    }
    free(t);
    return s;
}

/* ---- the links alone, for the layout model (predict_layout.c) ---------- */

struct gt_predict_links {
    gt_prediction p; /* only opt, given and the model's links are used */
};

gt_status gt_predict_links_new(gt_report_doc *const *docs, size_t n, const gt_predict_options *opt,
                               gt_predict_links **out) {
    *out = NULL;
    gt_predict_links *l = calloc(1, sizeof *l);
    if (!l) return GT_ERR(GT_ERR_OOM, "no memory");
    l->p.opt = *opt;
    l->p.opt.case_name = NULL;
    l->p.given[L_INTRA] = !isnan(opt->intra_alpha_us);
    l->p.given[L_INTER] = !isnan(opt->inter_alpha_us);
    cpoint *cp = NULL;
    size_t ncp = 0;
    gt_status s = read_collectives(&l->p, docs, n, &cp, &ncp);
    if (s == GT_OK) fit_links(&l->p, &l->p.m, cp, ncp, 0);
    free(cp);
    if (s == GT_OK && l->p.m.link[L_INTRA][C_AR].src == SRC_NONE)
        s = GT_ERR(GT_ERR_INVALID,
                   "the reports hold no multi-rank collectives result to fit the links to: "
                   "run `mpirun -np 2 gauntlet run collectives/allreduce collectives/allgather "
                   "collectives/reduce_scatter --quick --report c.json` and add c.json to "
                   "--from, or give a network that was not measured (--alpha-us A "
                   "--beta-gbps B)");
    if (s != GT_OK) {
        free(l);
        return s;
    }
    *out = l;
    return GT_OK;
}

void gt_predict_links_free(gt_predict_links *l) {
    free(l);
}

double gt_predict_links_time(const gt_predict_links *l, int inter, gt_predict_coll coll,
                             double bytes, int n) {
    int c = coll == GT_PREDICT_ALLREDUCE ? C_AR : coll == GT_PREDICT_REDUCE_SCATTER ? C_RS : C_AG;
    const link_fit *f = &l->p.m.link[inter ? L_INTER : L_INTRA][c];
    if (coll == GT_PREDICT_SEND) {
        /* one message to a neighbour: a two-rank ring's all-gather step */
        if (bytes <= 0) return 0;
        double beta = beta_at(f, S_MID, bytes);
        return f->alpha[S_MID] + (isfinite(beta) ? bytes / beta : 0);
    }
    return ring_time(f, S_MID, c, bytes, n);
}

const char *gt_predict_links_source(const gt_predict_links *l, int inter) {
    return g_src_names[l->p.m.link[inter ? L_INTER : L_INTRA][C_AR].src];
}
