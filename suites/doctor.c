/* gauntlet doctor: every rank probed at once, pairwise links in rounds, the
 * outliers named (suites/doctor.h, docs/doctor.md). */
#define _GNU_SOURCE
#include "suites/doctor.h"
#include "suites/doctor_impl.h"

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
#include "suites/cpu_share.h"
#include "suites/probe.h"

enum { P_GEMM = 0, P_MEMORY, P_CPU, P_LINK_BW, P_LINK_LAT, P_GPU_CLOCK, P_COUNT };
enum { N_ROUND_PROBES = 3 }; /* GEMM, memory, CPU share: judged round by round */

static const struct {
    const char *name, *metric, *unit, *what;
    int higher;
} g_probe[P_COUNT] = {
    {"gemm", "gflops", "GFLOP/s", "GEMM rate", 1},
    {"memory", "gbps", "GB/s", "memory bandwidth", 1},
    {"cpu_share", "share", "fraction", "CPU share (time on a CPU / time runnable)", 1},
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

gt_status gt_doctor_fault_factor(const char *spec, const char *var, int by_rank,
                                 const char *host, int rank, double *factor) {
    return fault_factor(spec, var, by_rank, host, rank, factor);
}

gt_status gt_doctor_check_stall(const char *spec) {
    if (!spec || !*spec) return GT_OK;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", spec);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *e = NULL;
        long r = strtol(tok, &e, 10);
        if (e == tok || *e || r < 0 || r > (1L << 24))
            return GT_ERR(GT_ERR_INVALID,
                          "GT_FAULT_STALL_RANK: '%s' is not a rank number (0, 1, ...), "
                          "comma-separated for several", tok);
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

/* What one rank's rounds received from its CPUs: the run-queue figures
 * summed over the rounds only (not the barriers between them), the node's
 * steal and the cgroup's throttling over the same intervals. */
typedef struct cpu_totals {
    double run_s, wait_s, wall_s, node_ticks, steal_ticks, throttled_n, throttled_s, quota;
} cpu_totals;

static void cpu_add(cpu_totals *t, const gt_cpu_sample *a, const gt_cpu_sample *b) {
    t->wall_s += b->wall_s - a->wall_s;
    if (a->has_sched && b->has_sched) {
        t->run_s += fmax(0, b->run_s - a->run_s);
        t->wait_s += fmax(0, b->wait_s - a->wait_s);
    }
    if (a->has_steal && b->has_steal) {
        t->node_ticks += b->node_ticks - a->node_ticks;
        t->steal_ticks += b->steal_ticks - a->steal_ticks;
    }
    if (a->has_cgroup && b->has_cgroup) {
        t->throttled_n += fmax(0, b->nr_throttled - a->nr_throttled);
        t->throttled_s += fmax(0, b->throttled_s - a->throttled_s);
    }
    t->quota = b->quota_cores;
}

/* The node's steal over the totals: 0..1 */
static double cpu_steal(const cpu_totals *t) {
    return t->node_ticks > 0 ? t->steal_ticks / t->node_ticks : 0;
}

/* One round: GEMMs until min_s has passed (at least two; GFLOP/s of them
 * all), then triad passes until min_s has passed (GB/s: a STREAM triad on
 * the host, counted as 3 x the array bytes; a gt_probe_copy on a device),
 * and the CPU share of the whole round. Whole intervals, not the best
 * call: a neighbour on the rank's core takes its share of every interval
 * longer than the scheduler's slices, where a short call can fit between
 * them. The slowed rank sleeps (factor - 1) x each timed interval inside it. */
static gt_status compute_round(compute_probe *p, double factor, double min_s, double *gflops,
                               double *gbps, double *share, cpu_totals *acc) {
    gt_backend *be = p->be;
    gt_kctx k = {.be = be, .dt = GT_DTYPE_FP32};
    gt_status s = GT_OK;
    int n = p->n, calls = 0;
    *gflops = *gbps = 0;
    *share = -1;
    gt_cpu_sample c0, c1;
    gt_cpu_sample_now(&c0);
    double t0 = now_s(), t = 0;
    while (s == GT_OK && (calls < 2 || t < min_s)) {
        double ti = now_s();
        s = be->ops->matmul_fwd(&k, p->c, p->a, p->w, NULL, n, n, n);
        if (s == GT_OK) s = be->synchronize(be);
        sleep_s((factor - 1) * (now_s() - ti));
        calls++;
        t = now_s() - t0;
    }
    if (s == GT_OK && t > 0) *gflops = calls * 2.0 * n * (double)n * n / t * 1e-9;
    t0 = now_s();
    t = 0;
    calls = 0;
    if (s == GT_OK && be->device == GT_DEVICE_HOST) {
        int nt = be->threads > 0 ? be->threads : 1;
        (void)nt;
        double *ta = p->ta, *tb = p->tb, *tc = p->tc;
        while (calls < 1 || t < min_s) {
            double ti = now_s();
#if GT_HAVE_OPENMP
#pragma omp parallel for num_threads(nt) schedule(static)
#endif
            for (size_t i = 0; i < p->m; i++) ta[i] = tb[i] + 3.0 * tc[i];
            sleep_s((factor - 1) * (now_s() - ti));
            calls++;
            t = now_s() - t0;
        }
        *gbps = t > 0 ? calls * 3.0 * (double)(p->m * sizeof(double)) / t * 1e-9 : 0;
        if (ta[p->m / 2] != 7.0) *gbps = -1; /* keeps the result alive */
    } else if (s == GT_OK) {
        double sample = 0, g = 0;
        s = gt_probe_copy(be, p->mem_bytes, 1, &sample, &g);
        sleep_s((factor - 1) * (now_s() - t0));
        *gbps = g / factor;
    }
    gt_cpu_sample_now(&c1);
    *share = gt_cpu_share_of(&c0, &c1);
    cpu_add(acc, &c0, &c1);
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
static gt_status probe_link(gt_comm *pair, const float *a, float *b, size_t count, int reps,
                            int lat_iters, int bw_iters, double factor, double *lat_us,
                            double *gbps) {
    int me = gt_comm_rank(pair);
    double ping[2] = {0, 0};
    gt_status s = GT_OK;
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
                         double ratio, double limit, const char *detail, const char *cause) {
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
        if (cause) gt_record_str(o, "cause", cause);
    }
    if (st->out) fprintf(st->out, "  OUTLIER %s\n", detail);
}

static double limit_of(const gt_doctor_config *c, int p) {
    if (p == P_LINK_LAT) return c->latency_limit > 0 ? c->latency_limit : GT_DOCTOR_LATENCY_LIMIT;
    if (p == P_LINK_BW) return c->link_limit > 0 ? c->link_limit : GT_DOCTOR_LINK_LIMIT;
    if (p == P_GPU_CLOCK) return c->clock_limit > 0 ? c->clock_limit : GT_DOCTOR_CLOCK_LIMIT;
    if (p == P_CPU) return c->cpu_limit > 0 ? c->cpu_limit : GT_DOCTOR_CPU_LIMIT;
    return c->limit > 0 ? c->limit : GT_DOCTOR_LIMIT;
}

/* Judges probe p's per-rank figures v[n] (<= 0: none): a result, its
 * records and every outlier. named[r] set for the ranks named; ratio_in:
 * the ratios when judged round by round (NULL: against the reference);
 * why[r]: what a named rank's detail adds, and its record's cause (NULL or
 * NULL entries: nothing). */
static gt_result *judge_ranks(doctor_state *st, int p, const double *v, int n, int judge,
                              const char *how, int *named, const double *ratio_in,
                              const char *const *why) {
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
    char worst_detail[2048] = "";
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
        char detail[768];
        const char *cause = why && why[r] && why[r][0] ? why[r] : NULL;
        snprintf(detail, sizeof detail,
                 "host %s, rank %d%s%s: %s %.3g %s, %.2fx %s the job's %s %.3g (limit %.2fx)%s%s",
                 st->job->rank[r].host, r, gpu_of(st->job, r)[0] ? ", GPU " : "",
                 gpu_of(st->job, r), g_probe[p].what, v[r], g_probe[p].unit, ratio,
                 higher ? "below" : "above", valid >= 3 ? "median" : "better rank", ref, limit,
                 cause ? ": " : "", cause ? cause : "");
        name_outlier(st, p, r, -1, v[r], ref, ratio, limit, detail, cause);
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

/* ---- one look: every probe once ------------------------------------------------ */

typedef struct rank_row {
    double v[P_COUNT];
    /* what the compute rounds received from the CPUs (cpu_totals) */
    cpu_totals cpu;      /* what the compute rounds received from the CPUs */
    uint64_t throttle;   /* NVML reasons after the GEMM */
    int32_t has_throttle, pad;
    char throttle_names[96];
} rank_row;
_Static_assert(sizeof(rank_row) % 8 == 0, "rank_row is sent as fp64");

/* The sizes of the probes and the job's shape; the same on every rank. */
typedef struct doctor_plan {
    int n, me, dev, gemm_n, reps, rounds_c, lat_iters, bw_iters, units, rounds;
    size_t mem_bytes, link_bytes, lw; /* lw: a rank's link table, 3 per round */
    double min_s;                     /* each round's GEMM and memory intervals */
    double factor;                    /* this rank's injected slowdown */
} doctor_plan;

static void plan_of(const gt_doctor_config *cfg, const gt_job *job, int n, int me, int dev,
                    doctor_plan *pl) {
    memset(pl, 0, sizeof *pl);
    pl->n = n;
    pl->me = me;
    pl->dev = dev;
    pl->gemm_n = cfg->quick ? (dev ? 2048 : 384) : (dev ? 8192 : 1024);
    /* blocks per link: the best one is the link's figure. Two ranks that
     * share cores with other work need many short blocks for one in which
     * both ran throughout (4 ranks on 2 busy cores: 7 blocks left a
     * healthy link 2-4x below the others now and then) */
    pl->reps = cfg->quick ? 25 : 15;
    pl->rounds_c = cfg->quick ? 11 : 40;
    pl->min_s = cfg->quick ? 0.02 : 0.1;
    pl->mem_bytes = (size_t)(cfg->quick ? 32 : 64) << 20;
    if (dev && !cfg->quick) pl->mem_bytes = (size_t)512 << 20;
    if (!dev && !cfg->quick) {
        /* main memory, not the last cache: each array at least 2/3 of the
         * largest cache (so the three exceed it twice). A probe that fits a
         * cache shared with other work measured 2-5x apart on two ranks of
         * one idle-looking VM (a 260 MiB L3) */
        gt_probe_cache caches[8];
        int nc = gt_probe_host_caches(NULL, caches, 8);
        size_t llc = 0;
        for (int i = 0; i < nc; i++) llc = caches[i].bytes > llc ? caches[i].bytes : llc;
        if (llc / 3 * 2 > pl->mem_bytes) pl->mem_bytes = llc / 3 * 2;
    }
    pl->link_bytes = (size_t)(cfg->quick ? 1 : 16) << 20;
    pl->lat_iters = cfg->quick ? 50 : 200;
    pl->bw_iters = cfg->quick ? 4 : 8;
    pl->units = job->n_nodes > 1 ? job->n_nodes : n;
    pl->rounds = tournament_rounds(pl->units);
    pl->lw = (size_t)(pl->rounds ? pl->rounds : 1) * 3;
    pl->factor = 1;
    fault_factor(cfg->slow_hosts, "GT_FAULT_SLOW_HOST", 0, job->rank[me].host, me, &pl->factor);
    fault_factor(cfg->slow_ranks, "GT_FAULT_SLOW_RANK", 1, NULL, me, &pl->factor);
}

/* Every rank's figures of one look, gathered: the same on every rank. */
typedef struct doctor_look {
    rank_row *rows;               /* n */
    double *links;                /* n x lw: partner, bandwidth, latency per round */
    double *tab[N_ROUND_PROBES];  /* n x rounds_c: GEMM, memory, CPU share per round */
} doctor_look;

static void look_free(doctor_look *l) {
    free(l->rows);
    free(l->links);
    for (int p = 0; p < N_ROUND_PROBES; p++) free(l->tab[p]);
    memset(l, 0, sizeof *l);
}

/* 1. every rank at once, round by round: GEMM, memory and the CPU share of
 * each round (mine[p][k]); the totals in row. ps: whether this rank could
 * set its probes up; every rank takes part in every barrier even when it
 * could not, and all learn of it afterwards. */
static gt_status look_compute(gt_comm *comm, compute_probe *cp, gt_status ps,
                              const doctor_plan *pl, double *mine[N_ROUND_PROBES],
                              rank_row *row) {
    cpu_totals acc;
    memset(&acc, 0, sizeof acc);
    gt_status s = GT_OK;
    for (int k = 0; k < pl->rounds_c; k++) {
        for (int p = 0; p < N_ROUND_PROBES; p++) mine[p][k] = -1;
        s = gt_comm_barrier(comm, NULL);
        if (s != GT_OK) return s;
        if (ps == GT_OK)
            ps = compute_round(cp, pl->factor, pl->min_s, &mine[P_GEMM][k], &mine[P_MEMORY][k],
                               &mine[P_CPU][k], &acc);
    }
    int32_t failed = ps != GT_OK, anyf = 0;
    s = gt_comm_allreduce(comm, &failed, &anyf, 1, GT_DTYPE_INT32, GT_REDOP_MAX, NULL);
    if (s == GT_OK && ps != GT_OK) return ps;
    if (s == GT_OK && anyf) return GT_ERR(GT_ERR_INVALID, "doctor: another rank could not run the probes");
    /* stolen time is neither run nor wait to the guest's scheduler: the
     * share is what the threads got of the time the node's CPUs were its own */
    double steal = cpu_steal(&acc);
    for (int k = 0; k < pl->rounds_c; k++)
        if (mine[P_CPU][k] > 0) mine[P_CPU][k] *= 1 - steal;
    row->cpu = acc;
    return s;
}

/* 2. links: rounds of disjoint pairs of nodes (of ranks on one node); the
 * j-th rank of one node meets the j-th of the other. mylinks: partner,
 * bandwidth, latency per round (-1: none). */
static gt_status look_links(gt_comm *comm, const doctor_plan *pl, const gt_job *job,
                            double *mylinks) {
    int me = pl->me;
    size_t count = pl->link_bytes / sizeof(float);
    /* one pair of buffers, written before the first round, for every round:
     * a buffer allocated per round came from the heap in one round and from
     * fresh pages in another, and the shared-memory transport's single copy
     * ran 3x slower on the latter (every pair of rounds 1.. against round 0) */
    float *a = malloc(count * sizeof *a), *b = malloc(count * sizeof *b);
    gt_status s = a && b ? GT_OK : GT_ERR(GT_ERR_OOM, "doctor: link buffers");
    for (size_t i = 0; s == GT_OK && i < count; i++) {
        a[i] = (float)(i % 7);
        b[i] = 0;
    }
    for (int k = 0; s == GT_OK && k < pl->rounds; k++) {
        int mine = job->n_nodes > 1 ? job->rank[me].node : me;
        int opp = tournament_opponent(pl->units, k, mine), peer = -1;
        if (opp >= 0 && job->n_nodes > 1) {
            for (int r = 0; r < pl->n; r++)
                if (job->rank[r].node == opp &&
                    job->rank[r].local_index == job->rank[me].local_index)
                    peer = r;
        } else if (opp >= 0) {
            peer = opp;
        }
        double lat = -1, bw = -1;
        gt_comm *pair = NULL;
        s = gt_comm_split(comm, peer >= 0 ? (me < peer ? me : peer) : -1, me, &pair);
        if (s == GT_OK && pair)
            s = probe_link(pair, a, b, count, pl->reps, pl->lat_iters, pl->bw_iters, pl->factor,
                           &lat, &bw);
        gt_comm_free(pair);
        mylinks[3 * k] = peer;
        mylinks[3 * k + 1] = bw;
        mylinks[3 * k + 2] = lat;
        /* a pair that is done (or had a bye) waits asleep, not spinning in
         * the next split: on shared cores a spinning waiter takes the core
         * from a pair still measuring (4 ranks on 2 cores: a healthy link
         * timed 2-10x slow when its round's other pair had finished) */
        if (s == GT_OK) s = gt_comm_barrier_idle(comm);
    }
    free(a);
    free(b);
    return s;
}

/* Every probe once on every rank, gathered into *look. */
static gt_status doctor_look_once(gt_comm *comm, compute_probe *cp, gt_status ps,
                                  const doctor_plan *pl, const gt_job *job, doctor_look *look) {
    size_t n = (size_t)pl->n, R = (size_t)pl->rounds_c;
    rank_row row;
    memset(&row, 0, sizeof row);
    for (int p = 0; p < P_COUNT; p++) row.v[p] = -1;
    memset(look, 0, sizeof *look);
    double *mine[N_ROUND_PROBES] = {0}, *mylinks = calloc(pl->lw, sizeof *mylinks);
    look->rows = calloc(n, sizeof *look->rows);
    look->links = calloc(pl->lw * n, sizeof *look->links);
    int ok = mylinks && look->rows && look->links;
    for (int p = 0; p < N_ROUND_PROBES; p++) {
        mine[p] = calloc(R, sizeof **mine);
        look->tab[p] = calloc(n * R, sizeof **look->tab);
        ok = ok && mine[p] && look->tab[p];
    }
    gt_status s = ok ? look_compute(comm, cp, ps, pl, mine, &row) : GT_ERR(GT_ERR_OOM, "doctor: tables");
    gt_gpu_sample gs;
    if (s == GT_OK && gt_env_gpu_sample(-1, &gs)) {
        if (gs.sm_clock_mhz > 0) row.v[P_GPU_CLOCK] = gs.sm_clock_mhz;
        row.has_throttle = gs.has_throttle;
        row.throttle = gs.throttle_reasons;
        snprintf(row.throttle_names, sizeof row.throttle_names, "%.95s", gs.throttle_names);
    }
    if (s == GT_OK) s = gt_comm_barrier(comm, NULL);
    if (s == GT_OK) s = look_links(comm, pl, job, mylinks);
    if (s == GT_OK)
        s = gt_comm_allgather(comm, &row, look->rows, sizeof row / 8, GT_DTYPE_FP64, NULL);
    if (s == GT_OK) s = gt_comm_allgather(comm, mylinks, look->links, pl->lw, GT_DTYPE_FP64, NULL);
    for (int p = 0; s == GT_OK && p < N_ROUND_PROBES; p++)
        s = gt_comm_allgather(comm, mine[p], look->tab[p], R, GT_DTYPE_FP64, NULL);
    for (int p = 0; p < N_ROUND_PROBES; p++) free(mine[p]);
    free(mylinks);
    if (s != GT_OK) look_free(look);
    return s;
}

/* ---- judging a look, or the better of two ------------------------------------ */

/* Per rank, each round-judged probe's figure and ratio (judge_rounds). */
typedef struct doctor_view {
    double *value[N_ROUND_PROBES], *ratio[N_ROUND_PROBES];
} doctor_view;

static void view_free(doctor_view *v) {
    for (int p = 0; p < N_ROUND_PROBES; p++) {
        free(v->value[p]);
        free(v->ratio[p]);
    }
}

static gt_status view_of(const doctor_look *l, const doctor_plan *pl, doctor_view *v) {
    memset(v, 0, sizeof *v);
    for (int p = 0; p < N_ROUND_PROBES; p++) {
        v->value[p] = calloc((size_t)pl->n, sizeof *v->value[p]);
        v->ratio[p] = calloc((size_t)pl->n, sizeof *v->ratio[p]);
        if (!v->value[p] || !v->ratio[p]) {
            view_free(v);
            return GT_ERR(GT_ERR_OOM, "doctor: judging");
        }
        judge_rounds(l->tab[p], pl->n, pl->rounds_c, v->value[p], v->ratio[p]);
    }
    return GT_OK;
}

static double better(double a, double b, int higher) {
    if (!(a > 0) || !isfinite(a)) return b;
    if (!(b > 0) || !isfinite(b)) return a;
    return higher ? fmax(a, b) : fmin(a, b);
}

/* The better of two looks, into (va, a): per rank and round-judged probe the
 * look with the smaller ratio (with its CPU totals for the CPU share);
 * each link's better figure; the higher GPU clock; a throttle only when
 * both looks saw it. */
static void merge_looks(const doctor_plan *pl, doctor_view *va, doctor_look *a,
                        const doctor_view *vb, const doctor_look *b) {
    for (int p = 0; p < N_ROUND_PROBES; p++)
        for (int r = 0; r < pl->n; r++) {
            double ra = va->ratio[p][r], rb = vb->ratio[p][r];
            if (!(rb > 0) || (ra > 0 && ra <= rb)) continue;
            va->ratio[p][r] = rb;
            va->value[p][r] = vb->value[p][r];
            if (p == P_CPU) a->rows[r].cpu = b->rows[r].cpu;
        }
    for (size_t i = 0; i < pl->lw * (size_t)pl->n; i += 3) {
        a->links[i + 1] = better(a->links[i + 1], b->links[i + 1], 1);
        a->links[i + 2] = better(a->links[i + 2], b->links[i + 2], 0);
    }
    for (int r = 0; r < pl->n; r++) {
        a->rows[r].v[P_GPU_CLOCK] = better(a->rows[r].v[P_GPU_CLOCK], b->rows[r].v[P_GPU_CLOCK], 1);
        a->rows[r].throttle &= b->rows[r].throttle;
        a->rows[r].has_throttle = a->rows[r].has_throttle && b->rows[r].has_throttle;
    }
}

/* Why a rank had less CPU than it asked for, from its row: the cgroup's
 * quota, the hypervisor, or other processes on its cores. */
static void cpu_cause(const rank_row *row, char *out, size_t n) {
    const cpu_totals *c = &row->cpu;
    double steal = cpu_steal(c);
    size_t used = 0;
    out[0] = '\0';
    if (c->throttled_n > 0)
        used += (size_t)snprintf(out + used, n - used,
                                 "throttled by its cgroup's CPU quota (%.2g core(s)): %.0f "
                                 "period(s), %.2f s held back",
                                 c->quota, c->throttled_n, c->throttled_s);
    if (steal >= 0.05 && used < n)
        used += (size_t)snprintf(out + used, n - used,
                                 "%sthe hypervisor took %.0f%% of its node's CPU time (steal)",
                                 used ? "; " : "", steal * 100);
    if (c->throttled_n <= 0 && c->wait_s > 0 && used < n)
        snprintf(out + used, n - used,
                 "%sother work shares its cores: its threads waited %.2f s for a CPU and ran "
                 "%.2f s over %.2f s of probes",
                 used ? "; " : "", c->wait_s, c->run_s, c->wall_s);
}

/* GEMM, memory and CPU share: each rank against the others in the same
 * rounds. A rank slow in GEMM or memory whose CPU share is low as well is
 * told so: the share is the cause to look at. */
static void judge_compute(doctor_state *st, const doctor_plan *pl, const doctor_view *v,
                          const doctor_look *l, int looks) {
    int n = pl->n;
    char(*why)[400] = calloc((size_t)n, sizeof *why);
    const char **whyp = calloc((size_t)n, sizeof *whyp);
    if (!why || !whyp) goto done;
    double cpu_limit = limit_of(st->cfg, P_CPU);
    for (int r = 0; r < n; r++) {
        cpu_cause(&l->rows[r], why[r], sizeof why[r]);
        whyp[r] = why[r];
    }
    for (int p = 0; p < N_ROUND_PROBES; p++) {
        char how[256];
        const char *of = looks > 1 ? "; the better of two looks" : "";
        if (p == P_GEMM)
            snprintf(how, sizeof how,
                     "fp32 %d^3 through %s matmul_fwd for at least %.0f ms per round, %d rounds "
                     "on every rank at once; a rank's figure and ratio: medians over rounds%s",
                     pl->gemm_n, st->backend, pl->min_s * 1e3, pl->rounds_c, of);
        else if (p == P_MEMORY)
            snprintf(how, sizeof how,
                     "%s %zu MiB for at least %.0f ms per round, %d rounds on every rank at "
                     "once; a rank's figure and ratio: medians over rounds%s",
                     pl->dev ? "device copy of" : "host triad, 3 x", pl->mem_bytes >> 20,
                     pl->min_s * 1e3, pl->rounds_c, of);
        else
            snprintf(how, sizeof how,
                     "over each compute round, the threads' time on a CPU / (on a CPU + "
                     "waiting for one) (/proc/self/task/*/schedstat) x (1 - the node's steal); "
                     "medians over rounds%s",
                     of);
        /* a slow GEMM or memory figure names the CPU share beside it when
         * that is low too; the share's own line says why it is low */
        const char *const *w = whyp;
        char(*slow)[400] = NULL;
        if (p != P_CPU) {
            slow = calloc((size_t)n, sizeof *slow);
            for (int r = 0; slow && r < n; r++)
                if (v->ratio[P_CPU][r] > cpu_limit)
                    snprintf(slow[r], sizeof slow[r],
                             "its CPU share was %.2f, %.2fx below the job's (see cpu_share)",
                             v->value[P_CPU][r], v->ratio[P_CPU][r]);
            w = NULL;
            if (slow) {
                for (int r = 0; r < n; r++) whyp[r] = slow[r];
                w = whyp;
            }
        }
        judge_ranks(st, p, v->value[p], n, 1, how, NULL, v->ratio[p], w);
        free(slow);
        for (int r = 0; r < n; r++) whyp[r] = why[r];
    }
done:
    free(why);
    free(whyp);
}

/* A rank's link figure: the middle of its links, the better one of an even
 * count (of 2: the better): one slow partner, or one round the machines
 * were busy, does not move it; a rank whose own link is slow is slow in
 * every round. col: 1 bandwidth, 2 latency. */
static void link_figures(const doctor_plan *pl, const double *links, int col, int higher,
                         double *v) {
    double *xs = calloc((size_t)(pl->rounds ? pl->rounds : 1), sizeof *xs);
    for (int r = 0; r < pl->n; r++) {
        int L = 0;
        for (int k = 0; xs && k < pl->rounds; k++) {
            double x = links[(size_t)r * pl->lw + 3 * k + col];
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
    }
    free(xs);
}

/* Each link once (from its lower rank): x_out[i], its ranks and round. */
typedef struct link_ref {
    double ref;          /* the median of all links (3 or more), else -1 */
    double *round_best;  /* per round: its best link */
    int *round_links;    /* per round: how many links it had */
    int count;
} link_ref;

static void link_ref_of(const doctor_plan *pl, const double *links, int col, int higher,
                        link_ref *lr) {
    int n = pl->n, R = pl->rounds;
    memset(lr, 0, sizeof *lr);
    double *all = calloc((size_t)n * R + 1, sizeof *all);
    lr->round_best = calloc((size_t)R, sizeof *lr->round_best);
    lr->round_links = calloc((size_t)R, sizeof *lr->round_links);
    for (int r = 0; r < n; r++)
        for (int k = 0; k < R; k++) {
            int q = (int)links[(size_t)r * pl->lw + 3 * k];
            double x = links[(size_t)r * pl->lw + 3 * k + col];
            if (q <= r || !(x > 0) || !isfinite(x)) continue;
            if (all) all[lr->count++] = x;
            /* the links of one round run at the same time and share what
             * else the machines were doing then */
            if (lr->round_best && lr->round_links)
                lr->round_best[k] = lr->round_links[k]++ == 0 ? x
                                    : higher                 ? fmax(lr->round_best[k], x)
                                                             : fmin(lr->round_best[k], x);
        }
    lr->ref = lr->count >= 3 && all ? gt_median(all, (size_t)lr->count) : -1;
    free(all);
}

/* Single links: named only when worse than the job's links and than the
 * best link of its own round, neither end named already. */
static void judge_single_links(doctor_state *st, const doctor_plan *pl, const double *links,
                               int p, const int *named, gt_result *res) {
    int higher = g_probe[p].higher, col = p == P_LINK_BW ? 1 : 2;
    const gt_job *job = st->job;
    link_ref lr;
    link_ref_of(pl, links, col, higher, &lr);
    double limit = limit_of(st->cfg, p) * GT_DOCTOR_SINGLE_LINK_FACTOR, worst = 0;
    int bad_links = 0;
    char link_detail[1024] = "";
    for (int r = 0; r < pl->n; r++)
        for (int k = 0; k < pl->rounds; k++) {
            int q = (int)links[(size_t)r * pl->lw + 3 * k];
            double x = links[(size_t)r * pl->lw + 3 * k + col];
            if (q <= r || !(x > 0) || !isfinite(x)) continue;
            double ratio = ratio_of(x, lr.ref, higher);
            double in_round = lr.round_best && lr.round_links && lr.round_links[k] >= 2
                                  ? ratio_of(x, lr.round_best[k], higher)
                                  : 0;
            int bad = lr.ref > 0 && ratio > limit && in_round > limit && !named[r] && !named[q];
            if (res) {
                gt_record *rec = gt_result_record(res, "links");
                gt_record_int(rec, "round", k);
                gt_record_int(rec, "rank_a", r);
                gt_record_str(rec, "host_a", job->rank[r].host);
                gt_record_int(rec, "rank_b", q);
                gt_record_str(rec, "host_b", job->rank[q].host);
                gt_record_num(rec, "value", x);
                if (ratio > 0) gt_record_num(rec, "ratio", ratio);
                gt_record_bool(rec, "outlier", bad);
            }
            if (!bad) continue;
            char detail[512];
            snprintf(detail, sizeof detail,
                     "link host %s (rank %d) <-> host %s (rank %d): %s %.3g %s, %.2fx %s the "
                     "median of the job's %d links %.3g and %.2fx against the best link of its "
                     "round (limit %.2fx)",
                     job->rank[r].host, r, job->rank[q].host, q, g_probe[p].what, x,
                     g_probe[p].unit, ratio, higher ? "below" : "above", lr.count, lr.ref,
                     in_round, limit);
            name_outlier(st, p, r, q, x, lr.ref, ratio, limit, detail, NULL);
            bad_links++;
            worst = fmax(worst, ratio);
            size_t l = strlen(link_detail);
            snprintf(link_detail + l, sizeof link_detail - l, "%s%s", l ? "; " : "", detail);
        }
    if (res && lr.ref > 0)
        gt_result_check(res, "no_outlier_link", bad_links == 0, worst, limit,
                        bad_links ? link_detail
                                  : "no single link beyond the limit against the job's links "
                                    "and its round's best");
    free(lr.round_best);
    free(lr.round_links);
}

/* Links: each rank's middle link against the job's, then each link alone. */
static void judge_links(doctor_state *st, const doctor_plan *pl, const doctor_look *l,
                        int looks) {
    int n = pl->n;
    double *v = calloc((size_t)n, sizeof *v);
    int *named = calloc((size_t)n, sizeof *named);
    for (int p = P_LINK_BW; v && named && pl->rounds > 0 && p <= P_LINK_LAT; p++) {
        link_figures(pl, l->links, p == P_LINK_BW ? 1 : 2, g_probe[p].higher, v);
        memset(named, 0, (size_t)n * sizeof *named);
        char how[200];
        snprintf(how, sizeof how,
                 "%s, %d round(s) of pairs of %s, best of %d blocks; a rank: the middle of its "
                 "links%s",
                 p == P_LINK_BW ? "2-rank fp32 all-reduce" : "8-byte ping-pong", pl->rounds,
                 st->job->n_nodes > 1 ? "nodes" : "ranks", pl->reps,
                 looks > 1 ? "; each link the better of two looks" : "");
        /* two units share their one link: nothing to tell them apart */
        gt_result *res = judge_ranks(st, p, v, n, pl->units >= 3, how, named, NULL, NULL);
        judge_single_links(st, pl, l->links, p, named, res);
    }
    free(v);
    free(named);
}

/* The GPU: the clock judged where the GEMM ran on it; reasons that mean a
 * slowed GPU always. */
static void judge_gpu(doctor_state *st, const doctor_plan *pl, doctor_look *l) {
    int n = pl->n;
    double *v = calloc((size_t)n, sizeof *v);
    if (!v) return;
    for (int r = 0; r < n; r++) v[r] = l->rows[r].v[P_GPU_CLOCK];
    char how[128];
    snprintf(how, sizeof how, "NVML SM clock right after the GEMM probe%s",
             pl->dev ? "" : " (cpu GEMM: the GPU was idle, not judged)");
    gt_result *gpu_res = judge_ranks(st, P_GPU_CLOCK, v, n, pl->dev, how, NULL, NULL, NULL);
    free(v);
    int throttled = 0;
    char throttle_detail[1024] = "";
    for (int r = 0; r < n; r++) {
        rank_row *row = &l->rows[r];
        if (!row->has_throttle || !(row->throttle & BAD_THROTTLE)) continue;
        row->throttle_names[sizeof row->throttle_names - 1] = '\0';
        char detail[512];
        snprintf(detail, sizeof detail, "host %s, rank %d, GPU %s: throttled (%s, NVML reasons 0x%llx)",
                 st->job->rank[r].host, r, gpu_of(st->job, r), row->throttle_names,
                 (unsigned long long)row->throttle);
        name_outlier(st, P_GPU_CLOCK, r, -1, -1, -1, -1, -1, detail, NULL);
        throttled++;
        size_t len = strlen(throttle_detail);
        snprintf(throttle_detail + len, sizeof throttle_detail - len, "%s%s", len ? "; " : "",
                 detail);
    }
    if (gpu_res)
        gt_result_check(gpu_res, "not_throttled", throttled == 0, throttled, 0,
                        throttled ? throttle_detail
                                  : "no GPU throttled by hw_slowdown, sw_thermal, hw_thermal or "
                                    "hw_power_brake");
}

/* Every judgement over a view and its look; the number named. Silent with
 * st->rep and st->out NULL (the first look's count). */
static int judge_all(doctor_state *st, const doctor_plan *pl, const doctor_view *v,
                     doctor_look *l, int looks) {
    st->outliers = 0;
    judge_compute(st, pl, v, l, looks);
    judge_links(st, pl, l, looks);
    judge_gpu(st, pl, l);
    return st->outliers;
}

static void doctor_section(gt_report *rep, const gt_doctor_config *cfg, const gt_job *job,
                           const doctor_plan *pl, int looks, int outliers) {
    gt_report_section_str(rep, "doctor", "verdict", outliers ? "outliers" : "ok");
    gt_report_section_str(rep, "doctor", "pairs_of", job->n_nodes > 1 ? "nodes" : "ranks");
    gt_report_section_int(rep, "doctor", "link_rounds", pl->rounds);
    gt_report_section_int(rep, "doctor", "compute_rounds", pl->rounds_c);
    gt_report_section_int(rep, "doctor", "looks", looks);
    gt_report_section_num(rep, "doctor", "limit", limit_of(cfg, P_GEMM));
    gt_report_section_num(rep, "doctor", "link_limit", limit_of(cfg, P_LINK_BW));
    gt_report_section_num(rep, "doctor", "latency_limit", limit_of(cfg, P_LINK_LAT));
    gt_report_section_num(rep, "doctor", "single_link_factor", GT_DOCTOR_SINGLE_LINK_FACTOR);
    gt_report_section_num(rep, "doctor", "clock_limit", limit_of(cfg, P_GPU_CLOCK));
    gt_report_section_num(rep, "doctor", "cpu_limit", limit_of(cfg, P_CPU));
    gt_report_section_int(rep, "doctor", "outlier_count", outliers);
    gt_report_section_array(rep, "doctor", "outliers"); /* [] when none */
}

/* ---- the run -------------------------------------------------------------------- */

/* The first look, and a second when the first names anything: the view
 * judged is the better of the two. *looks: how many were taken. */
static gt_status doctor_measure(gt_comm *comm, const gt_doctor_config *cfg, const gt_job *job,
                                gt_backend *be, const doctor_plan *pl, doctor_look *look,
                                doctor_view *view, int *looks) {
    compute_probe cp;
    gt_status ps = compute_new(be, pl->gemm_n, pl->mem_bytes, &cp);
    gt_status s = doctor_look_once(comm, &cp, ps, pl, job, look);
    if (s == GT_OK) s = view_of(look, pl, view);
    *looks = 1;
    doctor_state quiet = {.cfg = cfg, .job = job, .topology = "", .backend = cfg->backend};
    if (s == GT_OK && !cfg->one_look && judge_all(&quiet, pl, view, look, 1) > 0) {
        if (cfg->out && pl->me == 0)
            fprintf(cfg->out, "first look: %d outlier(s); looking again: each figure below "
                              "is the better of two looks\n", quiet.outliers);
        doctor_look second;
        doctor_view v2;
        s = doctor_look_once(comm, &cp, ps, pl, job, &second);
        if (s == GT_OK && (s = view_of(&second, pl, &v2)) == GT_OK) {
            merge_looks(pl, view, look, &v2, &second);
            view_free(&v2);
            *looks = 2;
        }
        look_free(&second);
    }
    if (ps == GT_OK) compute_free(&cp);
    return s;
}

gt_status gt_doctor_run(gt_comm *comm, const gt_doctor_config *cfg, gt_report *rep,
                        int *outliers) {
    *outliers = 0;
    int n = gt_comm_size(comm), me = gt_comm_rank(comm);
    gt_job job;
    memset(&job, 0, sizeof job);
    GT_TRY(gt_doctor_check_faults(cfg->slow_hosts, cfg->slow_ranks));
    GT_TRY(gt_doctor_check_stall(cfg->stall_ranks));
    if (cfg->layout_only && !cfg->layout)
        return GT_ERR(GT_ERR_INVALID, "doctor: layout_only without a layout");
    GT_TRY(gt_job_gather(comm, &job));

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
    doctor_plan pl;
    plan_of(cfg, &job, n, me, be->device != GT_DEVICE_HOST, &pl);
    FILE *out = me == 0 ? cfg->out : NULL;
    if (out)
        fprintf(out,
                "gauntlet doctor: %d rank(s) on %d node(s) (%s), backend %s, %s probes%s%s%s\n",
                n, job.n_nodes, job.layout, cfg->backend, cfg->quick ? "quick" : "full",
                cfg->layout ? ", layout " : "", cfg->layout ? cfg->layout : "",
                cfg->slow_hosts || cfg->slow_ranks || cfg->stall_ranks ? ", FAULT INJECTED" : "");
    doctor_look look;
    doctor_view view;
    memset(&look, 0, sizeof look);
    memset(&view, 0, sizeof view);
    int looks = 1, named = 0;
    char topo[16];
    snprintf(topo, sizeof topo, "%d", n);
    doctor_state st = {.cfg = cfg, .job = &job, .rep = rep, .topology = topo,
                       .backend = cfg->backend, .out = out};
    if (!cfg->layout_only) {
        s = doctor_measure(comm, cfg, &job, be, &pl, &look, &view, &looks);
        if (s == GT_OK) *outliers = judge_all(&st, &pl, &view, &look, looks);
    } else {
        pl.rounds = pl.rounds_c = looks = 0;
    }
    gt_backend_free(be);
    /* the layout's groups, after the ranks and links (docs/doctor.md, "Layouts") */
    if (s == GT_OK && cfg->layout) {
        s = gt_doctor_layout_run(comm, cfg, &job, rep, topo, out, &named);
        *outliers += named;
    }
    if (s == GT_OK) {
        if (rep) doctor_section(rep, cfg, &job, &pl, looks, *outliers);
        if (out)
            fprintf(out, "verdict: %s\n",
                    *outliers ? "OUTLIERS named above"
                              : cfg->layout_only ? "no outlier: every group within the limits"
                                                 : "no outlier: every rank within the limits");
    }
    view_free(&view);
    look_free(&look);
    gt_job_free(&job);
    return s;
}
