/* gauntlet doctor: every rank probed at once, pairwise links in rounds, the
 * outliers named (suites/doctor.h, docs/doctor.md). */
#define _GNU_SOURCE
#include "suites/doctor.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if GT_HAVE_OPENMP
#include <omp.h>
#endif

#include "engine/env.h"
#include "engine/job.h"
#include "engine/ops.h"
#include "engine/stats.h"
#include "engine/timer.h"
#include "gt_config.h"
#include "kernels/registry.h"
#include "suites/probe.h"

enum { P_GEMM = 0, P_MEMORY, P_LINK_BW, P_LINK_LAT, P_GPU_CLOCK, P_COUNT };

static const struct {
    const char *name, *metric, *unit, *what;
    int higher;
} g_probe[P_COUNT] = {
    {"gemm", "gflops", "GFLOP/s", "GEMM rate", 1},
    {"memory", "gbps", "GB/s", "memory bandwidth", 1},
    {"link_bandwidth", "gbps", "GB/s", "link bandwidth (2-rank all-reduce)", 1},
    {"link_latency", "latency_us", "us", "link latency (8-byte ping-pong, one way)", 0},
    {"gpu_sm_clock", "sm_clock_mhz", "MHz", "GPU SM clock after the GEMM", 1},
};

/* NVML clocks-event reasons that mean the GPU is slowed against its will:
 * hw_slowdown, sw_thermal, hw_thermal, hw_power_brake */
#define BAD_THROTTLE 0xE8ull

static double now_s(void) { return (double)gt_now_ns() * 1e-9; }

static void sleep_s(double s) {
    if (!(s > 0)) return;
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* ---- fault injection ------------------------------------------------------------ */

/* "NAME:FACTOR[,NAME:FACTOR...]": the largest factor whose NAME is `host`
 * (by_rank 0) or the decimal `rank` (by_rank 1); 1 when none. */
static gt_status fault_factor(const char *spec, const char *var, int by_rank, const char *host,
                              int rank, double *factor) {
    if (!spec || !*spec) return GT_OK;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", spec);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *colon = strrchr(tok, ':'), *end = NULL;
        double f = 0;
        if (colon) {
            errno = 0;
            f = strtod(colon + 1, &end);
        }
        if (!colon || colon == tok || !end || end == colon + 1 || *end || errno ||
            !(f > 1 && f <= 100))
            return GT_ERR(GT_ERR_INVALID,
                          "%s '%s': expected %s:FACTOR with a factor above 1 and at most 100 "
                          "(e.g. %s), comma-separated for several",
                          var, tok, by_rank ? "RANK" : "HOST", by_rank ? "1:4" : "node2:4");
        *colon = '\0';
        if (by_rank) {
            char *e = NULL;
            long r = strtol(tok, &e, 10);
            if (!e || *e || r < 0 || r > (1L << 24))
                return GT_ERR(GT_ERR_INVALID, "%s: '%s' is not a rank number (0, 1, ...)", var,
                              tok);
            if (r == rank && f > *factor) *factor = f;
        } else if (host && strcmp(tok, host) == 0 && f > *factor) {
            *factor = f;
        }
    }
    return GT_OK;
}

gt_status gt_doctor_check_faults(const char *slow_hosts, const char *slow_ranks) {
    double f = 1;
    GT_TRY(fault_factor(slow_hosts, "GT_FAULT_SLOW_HOST", 0, NULL, -1, &f));
    return fault_factor(slow_ranks, "GT_FAULT_SLOW_RANK", 1, NULL, -1, &f);
}

/* ---- the probes of one rank ------------------------------------------------------ */

/* The compute and memory probes of one rank, a round at a time: every
 * rank runs round k at the same time (a barrier before each), and a rank
 * is judged by how it compares with the others in the same rounds
 * (judge_rounds), so load that comes and goes on a node moves one round,
 * not the verdict, while a slow node is slow in every round. */
#define GEMMS_PER_ROUND 3
typedef struct compute_probe {
    gt_backend *be;
    int n;                /* GEMM size */
    size_t m;             /* triad elements per array (host) */
    size_t mem_bytes;
    float *hm;
    double *ta, *tb, *tc; /* triad arrays (host) */
    void *a, *w, *c;      /* GEMM operands (backend) */
} compute_probe;

static void compute_free(compute_probe *p) {
    if (p->be) {
        gt_backend_dealloc(p->be, p->a);
        gt_backend_dealloc(p->be, p->w);
        gt_backend_dealloc(p->be, p->c);
    }
    free(p->hm);
    free(p->ta);
    free(p->tb);
    free(p->tc);
    memset(p, 0, sizeof *p);
}

static gt_status compute_new(gt_backend *be, int n, size_t mem_bytes, compute_probe *p) {
    memset(p, 0, sizeof *p);
    p->be = be;
    p->n = n;
    p->mem_bytes = mem_bytes;
    size_t bytes = (size_t)n * n * sizeof(float);
    int host = be->device == GT_DEVICE_HOST;
    p->hm = malloc(bytes);
    if (host) {
        p->m = mem_bytes / sizeof(double);
        p->ta = malloc(p->m * sizeof(double));
        p->tb = malloc(p->m * sizeof(double));
        p->tc = malloc(p->m * sizeof(double));
    }
    gt_status s = p->hm && (!host || (p->ta && p->tb && p->tc))
                      ? GT_OK
                      : GT_ERR(GT_ERR_OOM, "doctor: probe memory (3 x %zu MiB)", mem_bytes >> 20);
    if (s == GT_OK && !be->ops->matmul_fwd)
        s = GT_ERR(GT_ERR_UNSUPPORTED, "doctor: backend %s has no matmul", be->name);
    if (s == GT_OK) {
        for (size_t i = 0; i < (size_t)n * n; i++)
            p->hm[i] = (float)((i * 7919) % 1000) * 1e-3f - 0.5f;
        s = gt_backend_alloc(be, bytes, &p->a);
    }
    if (s == GT_OK) s = gt_backend_alloc(be, bytes, &p->w);
    if (s == GT_OK) s = gt_backend_alloc(be, bytes, &p->c);
    if (s == GT_OK) s = be->copy_to_device(be, p->a, p->hm, bytes);
    if (s == GT_OK) s = be->copy_to_device(be, p->w, p->hm, bytes);
    if (s == GT_OK && host) {
        int nt = be->threads > 0 ? be->threads : 1;
        (void)nt;
        double *ta = p->ta, *tb = p->tb, *tc = p->tc;
        /* first touch by the threads that use the pages */
#if GT_HAVE_OPENMP
#pragma omp parallel for num_threads(nt) schedule(static)
#endif
        for (size_t i = 0; i < p->m; i++) {
            ta[i] = 0.0;
            tb[i] = 1.0;
            tc[i] = 2.0;
        }
    }
    if (s != GT_OK) compute_free(p);
    return s;
}

/* One round: the best of GEMMS_PER_ROUND GEMMs (GFLOP/s) and one pass of
 * the memory probe (GB/s: a STREAM triad on the host, counted as 3 x the
 * array bytes; a gt_probe_copy on a device). The slowed rank sleeps
 * (factor - 1) x each timed interval inside it. */
static gt_status compute_round(compute_probe *p, double factor, double *gflops, double *gbps) {
    gt_backend *be = p->be;
    gt_kctx k = {.be = be, .dt = GT_DTYPE_FP32};
    gt_status s = GT_OK;
    int n = p->n;
    *gflops = *gbps = 0;
    for (int j = 0; j < GEMMS_PER_ROUND && s == GT_OK; j++) {
        double t0 = now_s();
        s = be->ops->matmul_fwd(&k, p->c, p->a, p->w, NULL, n, n, n);
        if (s == GT_OK) s = be->synchronize(be);
        sleep_s((factor - 1) * (now_s() - t0));
        double t = now_s() - t0;
        if (s == GT_OK && t > 0) *gflops = fmax(*gflops, 2.0 * n * (double)n * n / t * 1e-9);
    }
    double t0 = now_s();
    if (s == GT_OK && be->device == GT_DEVICE_HOST) {
        int nt = be->threads > 0 ? be->threads : 1;
        (void)nt;
        double *ta = p->ta, *tb = p->tb, *tc = p->tc;
#if GT_HAVE_OPENMP
#pragma omp parallel for num_threads(nt) schedule(static)
#endif
        for (size_t i = 0; i < p->m; i++) ta[i] = tb[i] + 3.0 * tc[i];
        sleep_s((factor - 1) * (now_s() - t0));
        double t = now_s() - t0;
        *gbps = t > 0 ? 3.0 * (double)(p->m * sizeof(double)) / t * 1e-9 : 0;
        if (ta[p->m / 2] != 7.0) *gbps = -1; /* keeps the result alive */
    } else if (s == GT_OK) {
        double sample = 0, g = 0;
        s = gt_probe_copy(be, p->mem_bytes, 1, &sample, &g);
        sleep_s((factor - 1) * (now_s() - t0));
        *gbps = g / factor;
    }
    return s;
}

/* ---- links --------------------------------------------------------------------- */

static gt_status sync2(gt_comm *pair) {
    int32_t x = 0, y = 0;
    return gt_comm_allreduce(pair, &x, &y, 1, GT_DTYPE_INT32, GT_REDOP_SUM, NULL);
}

/* On a 2-rank communicator: one-way latency of an 8-byte ping-pong (best
 * block, us) and the bandwidth of an all-reduce of `bytes` (best block,
 * GB/s: busbw, which is algbw on two ranks). The slowed side sleeps
 * (factor - 1) x its block's time before the closing sync, so both sides
 * time the block factor times as long. */
static gt_status probe_link(gt_comm *pair, size_t bytes, int reps, int lat_iters, int bw_iters,
                            double factor, double *lat_us, double *gbps) {
    int me = gt_comm_rank(pair);
    double ping[2] = {0, 0};
    size_t count = bytes / sizeof(float);
    float *a = malloc(count * sizeof *a), *b = malloc(count * sizeof *b);
    gt_status s = a && b ? GT_OK : GT_ERR(GT_ERR_OOM, "doctor: link buffers");
    for (size_t i = 0; s == GT_OK && i < count; i++) a[i] = (float)(i % 7);
    *lat_us = INFINITY;
    *gbps = 0;
    for (int r = 0; s == GT_OK && r < reps; r++) {
        s = sync2(pair);
        double t0 = now_s();
        for (int i = 0; s == GT_OK && i < lat_iters; i++) {
            if (me == 0) {
                s = gt_comm_send(pair, ping, 1, GT_DTYPE_FP64, 1, 7, NULL);
                if (s == GT_OK) s = gt_comm_recv(pair, ping + 1, 1, GT_DTYPE_FP64, 1, 7, NULL);
            } else {
                s = gt_comm_recv(pair, ping + 1, 1, GT_DTYPE_FP64, 0, 7, NULL);
                if (s == GT_OK) s = gt_comm_send(pair, ping, 1, GT_DTYPE_FP64, 0, 7, NULL);
            }
        }
        sleep_s((factor - 1) * (now_s() - t0));
        if (s == GT_OK) s = sync2(pair);
        double t = now_s() - t0;
        if (s == GT_OK) *lat_us = fmin(*lat_us, t / (2.0 * lat_iters) * 1e6);
    }
    for (int r = 0; s == GT_OK && r < reps; r++) {
        s = sync2(pair);
        double t0 = now_s();
        for (int i = 0; s == GT_OK && i < bw_iters; i++)
            s = gt_comm_allreduce(pair, a, b, count, GT_DTYPE_FP32, GT_REDOP_SUM, NULL);
        sleep_s((factor - 1) * (now_s() - t0));
        if (s == GT_OK) s = sync2(pair);
        double t = now_s() - t0;
        if (s == GT_OK && t > 0) *gbps = fmax(*gbps, (double)count * sizeof(float) * bw_iters / t * 1e-9);
    }
    free(a);
    free(b);
    return s;
}

/* Round-robin tournament (circle method) over u units: in round k (0 <=
 * k < rounds), unit x meets *opp (-1: a bye). rounds = u - 1 for even u,
 * u for odd (one unit rests each round). */
static int tournament_rounds(int u) { return u < 2 ? 0 : (u % 2 ? u : u - 1); }
static int tournament_opponent(int u, int round, int x) {
    int m = u + (u & 1);
    /* position of each unit: unit 0 fixed at 0, the others rotate */
    int pos = x == 0 ? 0 : 1 + ((x - 1 + round) % (m - 1));
    int opp_pos = m - 1 - pos;
    int y;
    if (opp_pos == 0) y = 0;
    else y = 1 + (((opp_pos - 1 - round) % (m - 1)) + (m - 1)) % (m - 1);
    return y < u && y != x ? y : -1;
}

/* ---- judging -------------------------------------------------------------------- */

/* The reference of a probe over the valid figures (> 0): their median with
 * three or more, the better one with two (a slow node is what is looked
 * for; the mean of two would call both half-bad), none with fewer. */
static double reference_of(const double *v, int n, int higher, int *valid) {
    double *x = malloc((size_t)(n > 0 ? n : 1) * sizeof *x);
    int k = 0;
    for (int i = 0; x && i < n; i++)
        if (v[i] > 0 && isfinite(v[i])) x[k++] = v[i];
    *valid = k;
    double ref = -1;
    if (k >= 3) {
        ref = gt_median(x, (size_t)k);
    } else if (k == 2) {
        ref = higher ? fmax(x[0], x[1]) : fmin(x[0], x[1]);
    }
    free(x);
    return ref;
}

static double ratio_of(double v, double ref, int higher) {
    if (!(v > 0) || !(ref > 0)) return 0;
    return higher ? ref / v : v / ref;
}

/* Figures of n ranks x R rounds (x[r * R + k], higher is better; <= 0:
 * none). For each rank: value[r] its median over rounds, ratio[r] the
 * median over rounds of (round k's reference / its figure), the reference
 * of a round being reference_of that round's figures. A rank that is slow
 * in most rounds has a ratio near its slowdown; one that lost a few rounds
 * to other work keeps a ratio near 1. */
static void judge_rounds(const double *x, int n, int R, double *value, double *ratio) {
    double *col = malloc((size_t)(n > R ? n : R) * sizeof *col);
    double *mine = malloc((size_t)R * sizeof *mine), *rr = malloc((size_t)R * sizeof *rr);
    double *ref = malloc((size_t)R * sizeof *ref);
    for (int r = 0; r < n; r++) value[r] = ratio[r] = 0;
    if (!col || !mine || !rr || !ref) goto done;
    for (int k = 0; k < R; k++) {
        int valid = 0;
        for (int r = 0; r < n; r++) col[r] = x[(size_t)r * R + k];
        ref[k] = reference_of(col, n, 1, &valid);
    }
    for (int r = 0; r < n; r++) {
        int a = 0, b = 0;
        for (int k = 0; k < R; k++) {
            double v = x[(size_t)r * R + k];
            if (!(v > 0)) continue;
            mine[a++] = v;
            if (ref[k] > 0) rr[b++] = ref[k] / v;
        }
        value[r] = a ? gt_median(mine, (size_t)a) : -1;
        ratio[r] = b ? gt_median(rr, (size_t)b) : 0;
    }
done:
    free(col);
    free(mine);
    free(rr);
    free(ref);
}

typedef struct doctor_state {
    const gt_doctor_config *cfg;
    const gt_job *job;
    gt_report *rep;
    const char *topology, *backend;
    int outliers;
    FILE *out;
} doctor_state;

static const char *gpu_of(const gt_job *job, int r) {
    const gt_gpu_identity *g = &job->rank[r].gpu;
    return g->index < 0 ? "" : g->uuid[0] ? g->uuid : g->pci_bus_id;
}

/* One outlier: the report's doctor.outliers[], the console. */
static void name_outlier(doctor_state *st, int p, int r, int peer, double v, double ref,
                         double ratio, double limit, const char *detail) {
    const gt_job *job = st->job;
    st->outliers++;
    if (st->rep) {
        gt_record *o = gt_report_record(st->rep, "doctor", "outliers");
        gt_record_str(o, "probe", g_probe[p].name);
        gt_record_str(o, "scope", peer >= 0 ? "link" : "rank");
        gt_record_int(o, "rank", r);
        gt_record_str(o, "host", job->rank[r].host);
        gt_record_int(o, "node", job->rank[r].node);
        gt_record_str(o, "gpu", gpu_of(job, r));
        gt_record_str(o, "gpu_name", job->rank[r].gpu.name);
        gt_record_str(o, "gpu_pci_bus_id", job->rank[r].gpu.pci_bus_id);
        if (peer >= 0) {
            gt_record_int(o, "peer_rank", peer);
            gt_record_str(o, "peer_host", job->rank[peer].host);
        }
        if (v >= 0) gt_record_num(o, "value", v);
        gt_record_str(o, "unit", v >= 0 ? g_probe[p].unit : "");
        if (ref > 0) gt_record_num(o, "reference", ref);
        if (ratio > 0) gt_record_num(o, "ratio", ratio);
        if (limit > 0) gt_record_num(o, "limit", limit);
        gt_record_str(o, "detail", detail);
    }
    if (st->out) fprintf(st->out, "  OUTLIER %s\n", detail);
}

static double limit_of(const gt_doctor_config *c, int p) {
    if (p == P_LINK_LAT) return c->latency_limit > 0 ? c->latency_limit : GT_DOCTOR_LATENCY_LIMIT;
    if (p == P_LINK_BW) return c->link_limit > 0 ? c->link_limit : GT_DOCTOR_LINK_LIMIT;
    if (p == P_GPU_CLOCK) return c->clock_limit > 0 ? c->clock_limit : GT_DOCTOR_CLOCK_LIMIT;
    return c->limit > 0 ? c->limit : GT_DOCTOR_LIMIT;
}

/* Judges probe p's per-rank figures v[n] (<= 0: none): a result, its
 * records and every outlier. judged[r] set for the ranks named. */
static gt_result *judge_ranks(doctor_state *st, int p, const double *v, int n, int judge,
                              const char *how, int *named, const double *ratio_in) {
    int valid = 0, higher = g_probe[p].higher;
    double ref = reference_of(v, n, higher, &valid), limit = limit_of(st->cfg, p);
    if (valid == 0) return NULL;
    gt_result *res =
        st->rep ? gt_report_add_result(st->rep, "doctor", g_probe[p].name, st->topology,
                                       st->backend)
                : NULL;
    double *samples = malloc((size_t)n * sizeof *samples);
    int k = 0;
    for (int r = 0; samples && r < n; r++)
        if (v[r] > 0) samples[k++] = v[r];
    if (res) {
        gt_result_param_str(res, "probe", g_probe[p].what);
        gt_result_param_str(res, "how", how);
        gt_result_param_num(res, "limit", limit);
        gt_result_param_str(res, "reference",
                            valid >= 3 ? "median over ranks" : valid == 2 ? "the better of two ranks" : "none: one rank");
        gt_result_metric(res, g_probe[p].metric, g_probe[p].unit, higher,
                         samples && k ? gt_median(samples, (size_t)k) : 0, samples, (size_t)k);
        gt_result_metric_ungated(res, g_probe[p].metric, "reference");
    }
    free(samples);
    char worst_detail[1024] = "";
    double worst = 0;
    int count = 0;
    if (st->out)
        fprintf(st->out, "%-15s %-8s reference %10.2f (%s)\n", g_probe[p].name, g_probe[p].unit,
                ref, valid >= 3 ? "median" : valid == 2 ? "better of 2" : "one rank: not judged");
    for (int r = 0; r < n; r++) {
        double ratio = ratio_in ? ratio_in[r] : ratio_of(v[r], ref, higher);
        int out = judge && ref > 0 && ratio > limit;
        if (st->out && n <= 32 && v[r] > 0)
            fprintf(st->out, "    rank %-4d %-20s %10.2f  %.2fx%s\n", r, st->job->rank[r].host,
                    v[r], ratio, out ? "  <- outlier" : "");
        if (res) {
            gt_record *rec = gt_result_record(res, "ranks");
            gt_record_int(rec, "rank", r);
            gt_record_str(rec, "host", st->job->rank[r].host);
            gt_record_str(rec, "gpu", gpu_of(st->job, r));
            if (v[r] > 0) gt_record_num(rec, "value", v[r]);
            else gt_record_str(rec, "value", NULL);
            if (ratio > 0) gt_record_num(rec, "ratio", ratio);
            gt_record_bool(rec, "outlier", out);
        }
        worst = fmax(worst, ratio);
        if (!out) continue;
        count++;
        if (named) named[r] = 1;
        char detail[512];
        snprintf(detail, sizeof detail,
                 "host %s, rank %d%s%s: %s %.3g %s, %.2fx %s the job's %s %.3g (limit %.2fx)",
                 st->job->rank[r].host, r, gpu_of(st->job, r)[0] ? ", GPU " : "",
                 gpu_of(st->job, r), g_probe[p].what, v[r], g_probe[p].unit, ratio,
                 higher ? "below" : "above", valid >= 3 ? "median" : "better rank", ref, limit);
        name_outlier(st, p, r, -1, v[r], ref, ratio, limit, detail);
        size_t l = strlen(worst_detail);
        snprintf(worst_detail + l, sizeof worst_detail - l, "%s%s", l ? "; " : "", detail);
    }
    if (res) {
        if (!judge || ref <= 0)
            gt_result_check_unevaluated(res, "no_outlier", limit,
                                        valid < 2 ? "one rank: nothing to compare with"
                                        : p == P_GPU_CLOCK
                                            ? "recorded, not judged: the GEMM ran on the host"
                                            : "two nodes (or ranks) share their one link: "
                                              "nothing to tell them apart");
        else
            gt_result_check(res, "no_outlier", count == 0, worst, limit,
                            count ? worst_detail
                                  : "every rank within the limit of the job's reference");
    }
    return res;
}

/* ---- the run -------------------------------------------------------------------- */

typedef struct rank_row {
    double v[P_COUNT];
    uint64_t throttle;   /* NVML reasons after the GEMM */
    int32_t has_throttle, pad;
    char throttle_names[96];
} rank_row;
_Static_assert(sizeof(rank_row) % 8 == 0, "rank_row is sent as fp64");

gt_status gt_doctor_run(gt_comm *comm, const gt_doctor_config *cfg, gt_report *rep,
                        int *outliers) {
    *outliers = 0;
    int n = gt_comm_size(comm), me = gt_comm_rank(comm);
    gt_job job;
    memset(&job, 0, sizeof job);
    GT_TRY(gt_doctor_check_faults(cfg->slow_hosts, cfg->slow_ranks));
    GT_TRY(gt_job_gather(comm, &job));
    double factor = 1;
    fault_factor(cfg->slow_hosts, "GT_FAULT_SLOW_HOST", 0, job.rank[me].host, me, &factor);
    fault_factor(cfg->slow_ranks, "GT_FAULT_SLOW_RANK", 1, NULL, me, &factor);

    gt_backend *be = NULL;
    gt_backend_config bc = {.threads = cfg->threads, .device = -1};
    gt_status s = gt_backend_new(cfg->backend, &bc, &be);
    /* the same decision on every rank: a backend one rank lacks stops all */
    int32_t bad = s != GT_OK, any = 0;
    gt_status cs = gt_comm_allreduce(comm, &bad, &any, 1, GT_DTYPE_INT32, GT_REDOP_MAX, NULL);
    if (cs != GT_OK || any) {
        gt_backend_free(be);
        gt_job_free(&job);
        return cs != GT_OK ? cs
               : s != GT_OK ? s
                            : GT_ERR(GT_ERR_UNSUPPORTED, "doctor: backend %s failed on a rank",
                                     cfg->backend);
    }
    int dev = be->device != GT_DEVICE_HOST;
    int gemm_n = cfg->quick ? (dev ? 2048 : 384) : (dev ? 8192 : 1024);
    /* blocks per link: the best one is the link's figure. Two ranks that
     * share cores with other work need many short blocks for one in which
     * both ran throughout (4 ranks on 2 busy cores: 7 blocks left a
     * healthy link 2-4x below the others now and then) */
    int reps = cfg->quick ? 25 : 15;
    int rounds_c = cfg->quick ? 11 : 40;   /* compute rounds */
    size_t mem_bytes = (size_t)(cfg->quick ? 32 : 64) << 20;
    if (dev && !cfg->quick) mem_bytes = (size_t)512 << 20;
    if (!dev && !cfg->quick) {
        /* main memory, not the last cache: each array at least 2/3 of the
         * largest cache (so the three exceed it twice). A probe that fits a
         * cache shared with other work measured 2-5x apart on two ranks of
         * one idle-looking VM (a 260 MiB L3) */
        gt_probe_cache caches[8];
        int nc = gt_probe_host_caches(NULL, caches, 8);
        size_t llc = 0;
        for (int i = 0; i < nc; i++) llc = caches[i].bytes > llc ? caches[i].bytes : llc;
        if (llc / 3 * 2 > mem_bytes) mem_bytes = llc / 3 * 2;
    }
    size_t link_bytes = (size_t)(cfg->quick ? 1 : 16) << 20;
    int lat_iters = cfg->quick ? 50 : 200, bw_iters = cfg->quick ? 4 : 8;

    rank_row row;
    memset(&row, 0, sizeof row);
    for (int p = 0; p < P_COUNT; p++) row.v[p] = -1;
    FILE *out = me == 0 ? cfg->out : NULL;
    if (out)
        fprintf(out,
                "gauntlet doctor: %d rank(s) on %d node(s) (%s), backend %s, %s probes%s\n", n,
                job.n_nodes, job.layout, cfg->backend, cfg->quick ? "quick" : "full",
                cfg->slow_hosts || cfg->slow_ranks ? ", FAULT INJECTED" : "");

    /* 1. every rank at once, round by round: GEMM and memory; then the GPU */
    compute_probe cp;
    double *gr = calloc((size_t)rounds_c, sizeof *gr), *mr = calloc((size_t)rounds_c, sizeof *mr);
    s = gr && mr ? compute_new(be, gemm_n, mem_bytes, &cp) : GT_ERR(GT_ERR_OOM, "doctor: rounds");
    /* every rank must take part in every barrier: a rank that failed goes
     * on with empty rounds, and the failure is counted afterwards */
    gt_status ps = s;
    for (int k = 0; k < rounds_c; k++) {
        gt_status bs = gt_comm_barrier(comm, NULL);
        if (bs != GT_OK) {
            s = bs;
            break;
        }
        if (ps == GT_OK) ps = compute_round(&cp, factor, &gr[k], &mr[k]);
    }
    if (s == GT_OK && ps == GT_OK) compute_free(&cp);
    if (s == GT_OK) {
        /* every rank learns whether one could not probe, and stops with it */
        int32_t failed = ps != GT_OK, anyf = 0;
        s = gt_comm_allreduce(comm, &failed, &anyf, 1, GT_DTYPE_INT32, GT_REDOP_MAX, NULL);
        if (s == GT_OK && ps != GT_OK) s = ps;
        else if (s == GT_OK && anyf)
            s = GT_ERR(GT_ERR_INVALID, "doctor: another rank could not run the probes");
    }
    gt_gpu_sample gs;
    if (s == GT_OK && gt_env_gpu_sample(-1, &gs)) {
        if (gs.sm_clock_mhz > 0) row.v[P_GPU_CLOCK] = gs.sm_clock_mhz;
        row.has_throttle = gs.has_throttle;
        row.throttle = gs.throttle_reasons;
        snprintf(row.throttle_names, sizeof row.throttle_names, "%.95s", gs.throttle_names);
    }
    if (s == GT_OK) s = gt_comm_barrier(comm, NULL);
    gt_backend_free(be);
    be = NULL;

    /* 2. links: rounds of disjoint pairs of nodes (of ranks on one node);
     * the j-th rank of one node meets the j-th of the other */
    int units = job.n_nodes > 1 ? job.n_nodes : n;
    int rounds = tournament_rounds(units);
    double *lat = calloc((size_t)(rounds ? rounds : 1), sizeof *lat);
    double *bw = calloc((size_t)(rounds ? rounds : 1), sizeof *bw);
    double *partner = calloc((size_t)(rounds ? rounds : 1), sizeof *partner);
    if (!lat || !bw || !partner) s = GT_ERR(GT_ERR_OOM, "doctor: link table");
    for (int k = 0; s == GT_OK && k < rounds; k++) {
        int mine = job.n_nodes > 1 ? job.rank[me].node : me;
        int opp = tournament_opponent(units, k, mine), peer = -1;
        if (opp >= 0 && job.n_nodes > 1) {
            for (int r = 0; r < n; r++)
                if (job.rank[r].node == opp && job.rank[r].local_index == job.rank[me].local_index)
                    peer = r;
        } else if (opp >= 0) {
            peer = opp;
        }
        partner[k] = peer;
        lat[k] = bw[k] = -1;
        gt_comm *pair = NULL;
        s = gt_comm_split(comm, peer >= 0 ? (me < peer ? me : peer) : -1, me, &pair);
        if (s == GT_OK && pair)
            s = probe_link(pair, link_bytes, reps, lat_iters, bw_iters, factor, &lat[k], &bw[k]);
        gt_comm_free(pair);
        /* a pair that is done (or had a bye) waits asleep, not spinning in
         * the next split: on shared cores a spinning waiter takes the core
         * from a pair still measuring (4 ranks on 2 cores: a healthy link
         * timed 2-10x slow when its round's other pair had finished) */
        if (s == GT_OK) s = gt_comm_barrier_idle(comm);
    }

    /* 3. everything to every rank; every rank judges the same figures */
    rank_row *rows = calloc((size_t)n, sizeof *rows);
    size_t lw = (size_t)(rounds ? rounds : 1) * 3;
    double *mylinks = calloc(lw, sizeof *mylinks), *links = calloc(lw * (size_t)n, sizeof *links);
    if (s == GT_OK && (!rows || !mylinks || !links)) s = GT_ERR(GT_ERR_OOM, "doctor: tables");
    if (s == GT_OK)
        s = gt_comm_allgather(comm, &row, rows, sizeof row / 8, GT_DTYPE_FP64, NULL);
    for (int k = 0; s == GT_OK && k < rounds; k++) {
        mylinks[3 * k] = partner[k];
        mylinks[3 * k + 1] = bw[k];
        mylinks[3 * k + 2] = lat[k];
    }
    if (s == GT_OK) s = gt_comm_allgather(comm, mylinks, links, lw, GT_DTYPE_FP64, NULL);
    double *allg = calloc((size_t)n * rounds_c, sizeof *allg);
    double *allm = calloc((size_t)n * rounds_c, sizeof *allm);
    if (s == GT_OK && (!allg || !allm)) s = GT_ERR(GT_ERR_OOM, "doctor: round tables");
    if (s == GT_OK) s = gt_comm_allgather(comm, gr, allg, (size_t)rounds_c, GT_DTYPE_FP64, NULL);
    if (s == GT_OK) s = gt_comm_allgather(comm, mr, allm, (size_t)rounds_c, GT_DTYPE_FP64, NULL);
    if (s == GT_OK) {
        char topo[16];
        snprintf(topo, sizeof topo, "%d", n);
        doctor_state st = {.cfg = cfg, .job = &job, .rep = rep, .topology = topo,
                           .backend = cfg->backend, .out = out};
        gt_result *gpu_res = NULL;
        double *v = calloc((size_t)n, sizeof *v);
        int *named = calloc((size_t)n, sizeof *named);
        char how[160];
        if (!v || !named) s = GT_ERR(GT_ERR_OOM, "doctor: judging");
        /* compute and memory: each rank against the others in the same rounds */
        double *ratio = calloc((size_t)n, sizeof *ratio);
        if (!ratio) s = GT_ERR(GT_ERR_OOM, "doctor: judging");
        for (int p = P_GEMM; s == GT_OK && p <= P_MEMORY; p++) {
            judge_rounds(p == P_GEMM ? allg : allm, n, rounds_c, v, ratio);
            if (p == P_GEMM)
                snprintf(how, sizeof how,
                         "fp32 %d^3 through %s matmul_fwd, best of %d per round, %d rounds "
                         "on every rank at once; a rank's figure and ratio: medians over rounds",
                         gemm_n, cfg->backend, GEMMS_PER_ROUND, rounds_c);
            else
                snprintf(how, sizeof how,
                         "%s %zu MiB, one pass per round, %d rounds on every rank at once; a "
                         "rank's figure and ratio: medians over rounds",
                         dev ? "device copy of" : "host triad, 3 x", mem_bytes >> 20, rounds_c);
            judge_ranks(&st, p, v, n, 1, how, NULL, ratio);
        }
        free(ratio);
        /* links: each rank's best link; then each link against all links */
        for (int p = P_LINK_BW; s == GT_OK && rounds > 0 && p <= P_LINK_LAT; p++) {
            int higher = g_probe[p].higher, col = p == P_LINK_BW ? 1 : 2;
            /* a rank's link figure: the middle of its links, the better one
             * of an even count (of 2: the better): one slow partner, or one
             * round the machines were busy, does not move it; a rank whose
             * own link is slow is slow in every round */
            double *xs = calloc((size_t)rounds, sizeof *xs);
            for (int r = 0; xs && r < n; r++) {
                int L = 0;
                for (int k = 0; k < rounds; k++) {
                    double x = links[(size_t)r * lw + 3 * k + col];
                    if (x > 0 && isfinite(x)) xs[L++] = higher ? -x : x;
                }
                /* ascending: the better first */
                for (int i = 1; i < L; i++)
                    for (int j = i; j > 0 && xs[j] < xs[j - 1]; j--) {
                        double t = xs[j];
                        xs[j] = xs[j - 1];
                        xs[j - 1] = t;
                    }
                v[r] = L ? fabs(xs[(L - 1) / 2]) : -1;
                named[r] = 0;
            }
            free(xs);
            snprintf(how, sizeof how,
                     "%s, %d round(s) of pairs of %s, best of %d blocks; a rank: the middle "
                     "of its links",
                     p == P_LINK_BW ? "2-rank fp32 all-reduce" : "8-byte ping-pong", rounds,
                     job.n_nodes > 1 ? "nodes" : "ranks", reps);
            /* two units share their one link: nothing to tell them apart */
            gt_result *res = judge_ranks(&st, p, v, n, units >= 3, how, named, NULL);
            /* every link once (from its lower rank), against the median of all */
            int nl = 0;
            double *all = calloc((size_t)n * rounds + 1, sizeof *all);
            for (int r = 0; all && r < n; r++)
                for (int k = 0; k < rounds; k++) {
                    int q = (int)links[(size_t)r * lw + 3 * k];
                    double x = links[(size_t)r * lw + 3 * k + col];
                    if (q > r && x > 0 && isfinite(x)) all[nl++] = x;
                }
            double ref = nl >= 3 ? gt_median(all, (size_t)nl) : -1;
            double limit = limit_of(cfg, p) * GT_DOCTOR_SINGLE_LINK_FACTOR;
            free(all);
            /* the best link of each round, and how many links it had: the
             * links of one round run at the same time and share what else
             * the machines were doing then */
            double *round_best = calloc((size_t)rounds, sizeof *round_best);
            int *round_links = calloc((size_t)rounds, sizeof *round_links);
            for (int r = 0; round_best && round_links && r < n; r++)
                for (int k = 0; k < rounds; k++) {
                    int q = (int)links[(size_t)r * lw + 3 * k];
                    double x = links[(size_t)r * lw + 3 * k + col];
                    if (q <= r || !(x > 0) || !isfinite(x)) continue;
                    round_best[k] = round_links[k]++ == 0 ? x
                                    : higher             ? fmax(round_best[k], x)
                                                         : fmin(round_best[k], x);
                }
            int bad_links = 0;
            double worst_link = 0;
            char link_detail[1024] = "";
            for (int r = 0; r < n; r++)
                for (int k = 0; k < rounds; k++) {
                    int q = (int)links[(size_t)r * lw + 3 * k];
                    double x = links[(size_t)r * lw + 3 * k + col];
                    if (q <= r || !(x > 0) || !isfinite(x)) continue;
                    double ratio = ratio_of(x, ref, higher);
                    /* named only when worse than the job's links and than the
                     * best link of its own round, neither end named already */
                    double in_round = round_best && round_links && round_links[k] >= 2
                                          ? ratio_of(x, round_best[k], higher)
                                          : 0;
                    int bad_link = ref > 0 && ratio > limit && in_round > limit && !named[r] &&
                                   !named[q];
                    if (res) {
                        gt_record *rec = gt_result_record(res, "links");
                        gt_record_int(rec, "round", k);
                        gt_record_int(rec, "rank_a", r);
                        gt_record_str(rec, "host_a", job.rank[r].host);
                        gt_record_int(rec, "rank_b", q);
                        gt_record_str(rec, "host_b", job.rank[q].host);
                        gt_record_num(rec, "value", x);
                        if (ratio > 0) gt_record_num(rec, "ratio", ratio);
                        gt_record_bool(rec, "outlier", bad_link);
                    }
                    if (!bad_link) continue;
                    char detail[512];
                    snprintf(detail, sizeof detail,
                             "link host %s (rank %d) <-> host %s (rank %d): %s %.3g %s, %.2fx "
                             "%s the median of the job's %d links %.3g and %.2fx against the best link "
                             "of its round (limit %.2fx)",
                             job.rank[r].host, r, job.rank[q].host, q, g_probe[p].what, x,
                             g_probe[p].unit, ratio, higher ? "below" : "above", nl, ref, in_round,
                             limit);
                    name_outlier(&st, p, r, q, x, ref, ratio, limit, detail);
                    bad_links++;
                    worst_link = fmax(worst_link, ratio);
                    size_t l = strlen(link_detail);
                    snprintf(link_detail + l, sizeof link_detail - l, "%s%s", l ? "; " : "",
                             detail);
                }
            if (res && ref > 0)
                gt_result_check(res, "no_outlier_link", bad_links == 0, worst_link, limit,
                                bad_links ? link_detail
                                          : "no single link beyond the limit against the job's "
                                            "links and its round's best");
            free(round_best);
            free(round_links);
        }
        /* the GPU: the clock judged where the GEMM ran on it; reasons that
         * mean a slowed GPU always */
        for (int r = 0; s == GT_OK && r < n; r++) v[r] = rows[r].v[P_GPU_CLOCK];
        if (s == GT_OK) {
            snprintf(how, sizeof how, "NVML SM clock right after the GEMM probe%s",
                     dev ? "" : " (cpu GEMM: the GPU was idle, not judged)");
            gpu_res = judge_ranks(&st, P_GPU_CLOCK, v, n, dev, how, NULL, NULL);
        }
        int throttled = 0;
        char throttle_detail[1024] = "";
        for (int r = 0; s == GT_OK && r < n; r++) {
            if (!rows[r].has_throttle || !(rows[r].throttle & BAD_THROTTLE)) continue;
            rows[r].throttle_names[sizeof rows[r].throttle_names - 1] = '\0';
            char detail[512];
            snprintf(detail, sizeof detail,
                     "host %s, rank %d, GPU %s: throttled (%s, NVML reasons 0x%llx)",
                     job.rank[r].host, r, gpu_of(&job, r), rows[r].throttle_names,
                     (unsigned long long)rows[r].throttle);
            name_outlier(&st, P_GPU_CLOCK, r, -1, -1, -1, -1, -1, detail);
            throttled++;
            size_t l = strlen(throttle_detail);
            snprintf(throttle_detail + l, sizeof throttle_detail - l, "%s%s", l ? "; " : "",
                     detail);
        }
        if (gpu_res)
            gt_result_check(gpu_res, "not_throttled", throttled == 0, throttled, 0,
                            throttled ? throttle_detail
                                      : "no GPU throttled by hw_slowdown, sw_thermal, "
                                        "hw_thermal or hw_power_brake");
        if (rep) {
            gt_report_section_str(rep, "doctor", "verdict", st.outliers ? "outliers" : "ok");
            gt_report_section_str(rep, "doctor", "pairs_of", job.n_nodes > 1 ? "nodes" : "ranks");
            gt_report_section_int(rep, "doctor", "link_rounds", rounds);
            gt_report_section_int(rep, "doctor", "compute_rounds", rounds_c);
            gt_report_section_num(rep, "doctor", "limit", limit_of(cfg, P_GEMM));
            gt_report_section_num(rep, "doctor", "link_limit", limit_of(cfg, P_LINK_BW));
            gt_report_section_num(rep, "doctor", "latency_limit", limit_of(cfg, P_LINK_LAT));
            gt_report_section_num(rep, "doctor", "single_link_factor", GT_DOCTOR_SINGLE_LINK_FACTOR);
            gt_report_section_num(rep, "doctor", "clock_limit", limit_of(cfg, P_GPU_CLOCK));
            gt_report_section_int(rep, "doctor", "outlier_count", st.outliers);
            gt_report_section_array(rep, "doctor", "outliers"); /* [] when none */
        }
        if (out)
            fprintf(out, "verdict: %s\n",
                    st.outliers ? "OUTLIERS named above" : "no outlier: every rank within the limits");
        *outliers = st.outliers;
        free(v);
        free(named);
    }
    free(rows);
    free(allg);
    free(allm);
    free(gr);
    free(mr);
    free(mylinks);
    free(links);
    free(lat);
    free(bw);
    free(partner);
    gt_job_free(&job);
    return s;
}
