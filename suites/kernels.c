/* The kernels suite: every op of the backend's table x dtype x a shape grid,
 * compared with the ref backend and timed (docs/suites.md, "kernels").
 *
 * One result per op x dtype x shape: case "<op>/<dtype>/<shape>". The
 * comparison, the per-op work (FLOPs, bytes) and the shape grid come from
 * kernels/conformance.h (the ops' descriptors in kernels/conformance/),
 * shared with the conformance test, so that the suite and the test can
 * never disagree on what "conforms" means.
 *
 * Timing: calls are grouped in batches long enough (>= 1 ms) that the
 * clock's resolution and the synchronisation do not matter; a sample is a
 * batch's time per call. Sampling stops once there are >= 10 samples and
 * >= 0.1 s of them and the samples' relative standard deviation is below
 * 0.5%, or at the effort's time cap (quick 0.2 s, default 1 s, full 3 s),
 * or at 5 caps with >= 3 samples for ops slower than a tenth of the cap.
 *
 * Rounds (host-timed backends): a case's samples are taken in KS_ROUNDS
 * blocks spread over the whole run, not in one go. Rounds 1 .. KS_ROUNDS-1
 * visit every selected case in order (set up, time one block of a
 * KS_ROUNDS-th of the cap, free); the last round is the case's own pass
 * (conformance, its last block, the result over all blocks). A machine
 * whose speed changes state for seconds at a time (a VM's vCPUs moving
 * between host cores: a case twice as slow for all its samples while the
 * next case is not, docs/performance.md "Noise of the kernels suite") then
 * shows that state in a fifth of a case's samples instead of all of them,
 * so runs of one build differ less and the gate needs fewer of them. The
 * samples stay in round order: compare's blocks of one run are its rounds.
 * Cases over KS_ROUND_MAX_BYTES (set-up costs more than the blocks) and
 * device-timed backends are timed in one go.
 *
 * On a backend with device timers (be->timer_start: cuda) the device's own
 * marks (CUDA events) time each batch instead of the host clock, and every
 * op is timed twice: hot (batches as above: inputs stay in L2 between
 * calls when they fit) and cold (one call per sample after be->flush_cache
 * evicts L2; the flush is queued before the start mark, so it is not in
 * the interval), each with the stop rule above. Host backends have no
 * cold figures: there is nothing comparable to flush.
 *
 * matmul_fwd on a backend that can ask its GEMM library for the library's
 * own best (be->gemm_library_best: cuda, every cuBLASLt algorithm the
 * heuristic offers for the same GEMM, timed) is also set against that:
 * library_best_us and fraction_of_library_best (its time over ours, hot),
 * and the check vs_library_best >= 0.90 where the comparison can be
 * trusted (see ks_library_best). */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/backend.h"
#include "engine/timer.h"
#include "kernels/conformance.h"
#include "kernels/registry.h"
#include "suites/cpu_share.h"
#include "suites/probe.h"
#include "suites/suite.h"

#define KS_MIN_SAMPLES 10
#define KS_MIN_SECONDS 0.1
#define KS_RSD_TARGET 0.005
#define KS_BATCH_SECONDS 1e-3
#define KS_MAX_SAMPLES 4096
#define KS_COLD_MAX_SAMPLES 200 /* single calls: enough for a median, keeps reports small */
#define KS_LIB_BEST_LIMIT 0.90  /* matmul_fwd's goal: 90% of the library's own best */
#define KS_LIB_BEST_MIN_US 100.0 /* shorter GEMMs: per-call host costs decide, not the kernel */
#define KS_ROUNDS 5                /* blocks of a case's samples spread over the run */
#define KS_ROUND_MIN_SAMPLES 3     /* per round: a block's median means something */
#define KS_ROUND_MAX_SAMPLES (KS_MAX_SAMPLES / KS_ROUNDS) /* every round fits */
#define KS_ROUND_MAX_BYTES ((double)(64 << 20)) /* larger cases: timed in one go */

/* ---- the shape grid --------------------------------------------------------------
 * The conformance tests' grid (kernels/conformance/grid.c): its QUICK rows
 * at every effort, DEFAULT from default effort, FULL at full; its rows for
 * the tests only (tier NONE: edges and odd offsets) never. */

/* Whether the suite at `effort` runs grid row r. */
static int ks_runs(const gt_kgrid_row *r, gt_effort effort) {
    gt_ktier upto = effort == GT_EFFORT_QUICK     ? GT_KTIER_QUICK
                    : effort == GT_EFFORT_DEFAULT ? GT_KTIER_DEFAULT
                                                  : GT_KTIER_FULL;
    return r->tier != GT_KTIER_NONE && r->tier <= upto;
}

/* ---- case selection ------------------------------------------------------------
 * ctx->case_filter selects the case of that exact name, or every case under
 * a prefix that ends at a '/' boundary: "gelu_fwd" runs every gelu_fwd
 * shape and dtype, "gelu_fwd/bf16" every bf16 one. */
static int ks_selected(const char *filter, const char *name) {
    if (!filter || !*filter) return 1;
    size_t n = strlen(filter);
    return !strncmp(filter, name, n) && (name[n] == '\0' || name[n] == '/');
}

/* ---- the ops' class families -------------------------------------------------
 * What the suite says of each op beyond its conformance descriptor
 * (kernels/conformance/): whether it is GEMM-backed, in group gemm
 * (suites/suite.h), which the results carry as "groups" and
 * --inject-slowdown gemm:F slows. GEMM-backed: every call is one or more
 * GEMMs on the cpu backend (gt_cpu_sgemm: OpenBLAS or the own blocked
 * SGEMM) and on cuda (cuBLASLt; conv2d: im2col + SGEMM on cpu, cuDNN's
 * convolutions on cuda). Not attention (cpu: axpy loops over one head's
 * transposed K and V; cuda: the own kernels, and cuDNN's fused flash
 * attention, one fused kernel, for 16-bit), nor the classifier (a softmax
 * cross-entropy over logits another op's GEMM made). Group memory needs no
 * flag: it is the descriptor's own classification, the ops judged against
 * a memory level (!gt_kcase_compute_bound: working_set, peak_level). */
typedef struct ks_op {
    unsigned gemm : 1;
} ks_op;

static const ks_op ks_ops[GT_OP_COUNT] = {
    [GT_OP_MATMUL_FWD] = {.gemm = 1},      [GT_OP_MATMUL_BWD] = {.gemm = 1},
    [GT_OP_MATMUL_GELU_FWD] = {.gemm = 1}, [GT_OP_MATMUL_DGELU_BWD] = {.gemm = 1},
    [GT_OP_CONV2D_FWD] = {.gemm = 1},      [GT_OP_CONV2D_BWD] = {.gemm = 1},
};

/* The groups (GT_GROUP_BIT) of op, set up as case c. */
static unsigned ks_groups(gt_op op, const gt_kcase *c) {
    return (ks_ops[op].gemm ? GT_GROUP_BIT(GT_GROUP_GEMM) : 0u) |
           (gt_kcase_compute_bound(c) ? 0u : GT_GROUP_BIT(GT_GROUP_MEMORY));
}

/* "OP:US" of ctx->inject_delay. */
static gt_status ks_parse_delay(const char *spec, gt_op *op, long *us) {
    *op = GT_OP_COUNT;
    *us = 0;
    if (!spec || !*spec) return GT_OK;
    const char *colon = strchr(spec, ':');
    char *end = NULL;
    if (colon) {
        errno = 0;
        *us = strtol(colon + 1, &end, 10);
    }
    if (!colon || !end || *end || errno || *us < 0)
        return GT_ERR(GT_ERR_INVALID, "inject_delay '%s': expected OP:MICROSECONDS", spec);
    for (int o = 0; o < GT_OP_COUNT; o++) {
        const char *name = gt_op_name((gt_op)o);
        if (strlen(name) == (size_t)(colon - spec) && !strncmp(name, spec, (size_t)(colon - spec))) {
            *op = (gt_op)o;
            return GT_OK;
        }
    }
    return GT_ERR(GT_ERR_INVALID, "inject_delay '%s': no op of that name", spec);
}

static void ks_sleep_us(long us) {
    struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* The fault injected into the slowed op's calls (none: zeros). */
typedef struct ks_fault {
    long delay_us; /* inject_delay: a sleep of this many us after each call */
    double factor; /* inject_slowdown: each call made this many times as long (> 1) */
    gt_backend *be;
} ks_fault;

/* One timed call: the op, and the injected fault when this is the slowed op
 * (what the gate's own tests and its detection experiment must see as
 * "slower"). The sleep is on the host after the launch: on an asynchronous
 * device it still lengthens every call by at least itself once it exceeds
 * the kernel's time. A slowdown factor waits for the call to finish
 * (device: synchronize) and then spins for (factor - 1) times its duration,
 * so the op costs factor times as much wherever it is timed. */
static gt_status ks_call(gt_kcase *c, const ks_fault *f) {
    if (f->factor > 1) {
        uint64_t t0 = gt_now_ns();
        gt_status s = gt_kcase_run(c);
        if (s == GT_OK && f->be->device != GT_DEVICE_HOST) s = f->be->synchronize(f->be);
        uint64_t spin = (uint64_t)((double)(gt_now_ns() - t0) * (f->factor - 1.0));
        uint64_t until = gt_now_ns() + spin;
        while (gt_now_ns() < until) {
        }
        return s;
    }
    gt_status s = gt_kcase_run(c);
    if (f->delay_us > 0) ks_sleep_us(f->delay_us);
    return s;
}

/* Times one batch of `iters` calls on the host clock: *sec. */
static gt_status ks_batch(gt_kcase *c, gt_backend *be, long iters, const ks_fault *fault,
                          double *sec) {
    gt_status s;
    uint64_t t0 = gt_now_ns();
    for (long i = 0; i < iters; i++)
        if ((s = ks_call(c, fault)) != GT_OK) return s;
    if ((s = be->synchronize(be)) != GT_OK) return s;
    *sec = (double)(gt_now_ns() - t0) * 1e-9;
    return GT_OK;
}

/* A timed batch (a sample) and *wait, the share of it the process's threads
 * were runnable but waiting for a CPU (another process had the core: a
 * two-thread GEMM whose second thread waits a scheduler slice takes 8 ms for
 * 0.1 ms of work; -1 where the system cannot say), recorded beside the
 * samples as "cpu_wait", which compare takes off ("A loaded window" and
 * "The kernels' waits" in docs/ci-gating.md). */
static gt_status ks_sample(gt_kcase *c, gt_backend *be, long iters, const ks_fault *fault,
                           double *sec, double *wait) {
    double w0 = 0, w1 = 0;
    int sched = gt_cpu_wait_now(&w0);
    gt_status s = ks_batch(c, be, iters, fault, sec);
    int known = s == GT_OK && sched && gt_cpu_wait_now(&w1) && *sec > 0;
    *wait = known ? fmax(0, w1 - w0) / *sec : -1;
    return s;
}

/* Calibrates a batch: grows it until one takes KS_BATCH_SECONDS (the first
 * call alone may be slow: cold caches, lazy initialisation). */
static gt_status ks_calibrate(gt_kcase *c, gt_backend *be, const ks_fault *fault, long *iters_out) {
    long iters = 1;
    gt_status s;
    for (;;) {
        /* the shorter of two tries: one preempted try (a loaded machine) would
         * take a batch of a few calls for a millisecond's worth */
        double sec = INFINITY;
        for (int t = 0; t < 2; t++) {
            double d;
            if ((s = ks_batch(c, be, iters, fault, &d)) != GT_OK) return s;
            if (d < sec) sec = d;
            if (sec < 0.5 * KS_BATCH_SECONDS) break; /* clearly short: grow */
        }
        if (sec >= KS_BATCH_SECONDS || iters >= 1000000) break;
        long grow = sec > 0 ? (long)ceil(1.2 * KS_BATCH_SECONDS / sec * iters) : 10 * iters;
        iters = grow > 2 * iters ? grow : 2 * iters;
        if (iters > 1000000) iters = 1000000;
    }
    *iters_out = iters;
    return GT_OK;
}

/* Samples in microseconds per call (see the top for the stop rule). */
static gt_status ks_time(gt_kcase *c, gt_backend *be, double cap_s, const ks_fault *fault, double *us,
                         double *wait, size_t *n) {
    *n = 0;
    long iters;
    gt_status s = ks_calibrate(c, be, fault, &iters);
    if (s != GT_OK) return s;
    double spent = 0.0;
    while (*n < KS_MAX_SAMPLES) {
        double sec;
        if ((s = ks_sample(c, be, iters, fault, &sec, &wait[*n])) != GT_OK) return s;
        spent += sec;
        us[(*n)++] = sec / (double)iters * 1e6;
        if (*n >= KS_MIN_SAMPLES &&
            ((spent >= KS_MIN_SECONDS && gt_probe_rsd(us, *n) < KS_RSD_TARGET) || spent >= cap_s))
            break;
        if (*n >= 3 && spent >= 5.0 * cap_s) break; /* ops slower than cap/10 per call */
    }
    return GT_OK;
}

/* One round's block of samples appended to us[*n ..]: batches of `iters`
 * calls. The first round (*per 0) takes KS_ROUND_MIN_SAMPLES and cap_s /
 * KS_ROUNDS of them, or one sample and 5 times that (ops slower than the
 * block's share), and sets *per to its count; later rounds take *per
 * samples whatever they take, so that a slow round weighs as much as
 * a fast one and compare's equal blocks of the samples are the rounds. No
 * early stop on a small spread. */
static gt_status ks_block(gt_kcase *c, gt_backend *be, long iters, double cap_s,
                          const ks_fault *fault, size_t *per, double *us, double *wait,
                          size_t *n) {
    double share = cap_s / KS_ROUNDS, spent = 0.0;
    size_t k = 0;
    gt_status s;
    while (k < (*per ? *per : KS_ROUND_MAX_SAMPLES)) {
        double sec;
        if ((s = ks_sample(c, be, iters, fault, &sec, &wait[*n])) != GT_OK) return s;
        spent += sec;
        us[(*n)++] = sec / (double)iters * 1e6;
        k++;
        /* the first round sets the count; later ones take it whatever the time
         * (a loaded machine makes them slower, never shorter: equal blocks) */
        if (*per == 0 && ((k >= KS_ROUND_MIN_SAMPLES && spent >= share) || spent >= 5.0 * share))
            break;
    }
    if (*per == 0) *per = k;
    return GT_OK;
}

/* One batch of `iters` calls between the backend's device timer marks;
 * *sec: the device time between the marks. */
static gt_status ks_batch_dev(gt_kcase *c, gt_backend *be, long iters, const ks_fault *fault,
                              double *sec) {
    void *tok = NULL;
    double t = 0.0;
    gt_status s = be->timer_start(be, &tok);
    for (long i = 0; s == GT_OK && i < iters; i++) s = ks_call(c, fault);
    if (tok) {
        gt_status s2 = be->timer_stop(be, tok, &t);
        if (s == GT_OK) s = s2;
    }
    *sec = t;
    return s;
}

/* The stop rule of the top; spent: wall seconds of sampling so far. */
static int ks_enough(const double *us, size_t n, double spent, double cap_s) {
    if (n >= KS_MIN_SAMPLES &&
        ((spent >= KS_MIN_SECONDS && gt_probe_rsd(us, n) < KS_RSD_TARGET) || spent >= cap_s))
        return 1;
    return n >= 3 && spent >= 5.0 * cap_s; /* ops slower than cap/10 per call */
}

/* Hot samples on a device-timed backend, us per call: batches grown to
 * KS_BATCH_SECONDS of device time, each timed between device marks. The
 * calls of a batch are queued back to back, so an op shorter than its
 * launch is measured at the launch rate (the device idles between calls):
 * that is what such an op costs in a training step too. */
static gt_status ks_time_dev_hot(gt_kcase *c, gt_backend *be, double cap_s, const ks_fault *fault,
                                 double *us, size_t *n) {
    *n = 0;
    gt_status s;
    long iters = 1;
    for (;;) {
        double sec = 0.0;
        if ((s = ks_batch_dev(c, be, iters, fault, &sec)) != GT_OK) return s;
        if (sec >= KS_BATCH_SECONDS || iters >= 1000000) break;
        long grow = sec > 0 ? (long)ceil(1.2 * KS_BATCH_SECONDS / sec * iters) : 10 * iters;
        iters = grow > 2 * iters ? grow : 2 * iters;
        if (iters > 1000000) iters = 1000000;
    }
    uint64_t t0 = gt_now_ns();
    while (*n < KS_MAX_SAMPLES) {
        double sec = 0.0;
        if ((s = ks_batch_dev(c, be, iters, fault, &sec)) != GT_OK) return s;
        us[(*n)++] = sec / (double)iters * 1e6;
        if (ks_enough(us, *n, (double)(gt_now_ns() - t0) * 1e-9, cap_s)) break;
    }
    return GT_OK;
}

/* Cold samples, us per call (at most KS_COLD_MAX_SAMPLES): flush the
 * device's cache, then one call between device marks. The flush is queued
 * before the start mark (not timed) and keeps the device busy while the
 * call is queued, so the host's launch latency stays out of the interval
 * unless queuing the call takes longer than the flush (about 40 us on an
 * H100). Event resolution is about 0.5 us: single calls of a few us are
 * coarse, the median over many samples is not. */
static gt_status ks_time_dev_cold(gt_kcase *c, gt_backend *be, double cap_s, const ks_fault *fault,
                                  double *us, size_t *n) {
    *n = 0;
    gt_status s;
    uint64_t t0 = gt_now_ns();
    while (*n < KS_COLD_MAX_SAMPLES) {
        double sec = 0.0;
        if ((s = be->flush_cache(be)) != GT_OK) return s;
        if ((s = ks_batch_dev(c, be, 1, fault, &sec)) != GT_OK) return s;
        us[(*n)++] = sec * 1e6;
        if (ks_enough(us, *n, (double)(gt_now_ns() - t0) * 1e-9, cap_s)) break;
    }
    return GT_OK;
}

static void ks_params(gt_result *res, gt_op op, gt_dtype dt, const gt_kshape *s, const char *lb) {
    gt_result_param_str(res, "op", gt_op_name(op));
    gt_result_param_str(res, "dtype", gt_dtype_name(dt));
    gt_result_param_str(res, "shape", lb);
    /* the dimensions the op reads (B T C V, N C OC bias, ...: its descriptor's) */
    const char *names[GT_KDIMS_MAX];
    long long values[GT_KDIMS_MAX];
    int nd = gt_kshape_dims(op, s, names, values);
    for (int i = 0; i < nd; i++) gt_result_param_int(res, names[i], values[i]);
    /* Elements past an aligned allocation where the case's tensors start
     * (the "_offN" label): only when nonzero, so aligned cases keep the
     * params they always had and old reports compare param for param. */
    if (s->offset) gt_result_param_int(res, "offset", s->offset);
}

typedef struct ks_run {
    const gt_suite_ctx *ctx;
    gt_backend *be, *ref;
    int have_levels; /* 1 measured, -1 failed (memory-bound ops: no fractions), 0 not yet */
    gt_probe_level lv[GT_PROBE_MAX_LEVELS];
    int nlv;
    double gemm_peak[GT_DTYPE_COUNT]; /* compute peak per dtype, GFLOP/s; 0: none */
    int gemm_tried[GT_DTYPE_COUNT];
    gt_op delay_op;
    long delay_us;
    gt_slowdown slow; /* inject_slowdown: the items (n 0: none) */
    double cap_s;
    double *us, *cold, *tmp;
    double *wait; /* us's waits for a CPU (host-timed), in us's allocation */
    int done;
    /* rounds (see the top): one store per case of the grid, in visiting order */
    struct ks_store {
        long iters; /* the batch, calibrated in the first round */
        size_t per; /* samples a round, set by the first round */
        size_t n;   /* samples of the rounds so far, in us (KS_MAX_SAMPLES) */
        double *us;
        double *wait; /* the samples' waits for a CPU, in us's allocation */
        int alone;  /* timed in one go: too large, or a round failed */
    } *store;
    size_t nstore, at; /* stores; the case being visited */
} ks_run;

/* The peak an op is judged against (0: none), measured on first need and
 * announced once. Compute-bound ops: the GEMM peak of the case's dtype (the
 * SGEMM probe on host backends); *level -1. Memory-bound ops: the memory
 * level their working set `ws` (the distinct bytes one call touches,
 * gt_kcase_footprint) fits in,
 * by gt_probe_level_pick, index in *level; `cold` timings (the device's
 * cache flushed before each call) always against main memory, the last. */
static double ks_peak(ks_run *r, int compute_bound, gt_dtype dt, double ws, int cold, int *level) {
    FILE *out = r->ctx->out;
    *level = -1;
    if (compute_bound) {
        if ((int)dt < 0 || dt >= GT_DTYPE_COUNT) return 0.0;
        if (!r->gemm_tried[dt]) {
            const char *how = "";
            r->gemm_tried[dt] = 1;
            gt_status s = gt_probe_gemm_peak(r->be, dt, &r->gemm_peak[dt], &how);
            if (out && s == GT_OK)
                fprintf(out, "kernels: compute peak %s %.1f GFLOP/s (%s)\n", gt_dtype_name(dt),
                        r->gemm_peak[dt], how);
            else if (out)
                fprintf(out, "kernels: no %s compute peak: %s: %s\n", gt_dtype_name(dt),
                        gt_status_name(s), gt_last_error());
            if (s != GT_OK) r->gemm_peak[dt] = 0.0;
        }
        return r->gemm_peak[dt];
    }
    if (!r->have_levels) {
        gt_status s = gt_probe_levels_get(r->be, r->lv, &r->nlv);
        r->have_levels = s == GT_OK && r->nlv > 0 ? 1 : -1;
        for (int i = 0; out && r->have_levels > 0 && i < r->nlv; i++) {
            double b = r->lv[i].bytes;
            char cap[48];
            if (b > 0)
                snprintf(cap, sizeof cap, "working sets up to %.3g %s",
                         b >= 1048576.0 ? b / 1048576.0 : b / 1024.0,
                         b >= 1048576.0 ? "MiB" : "KiB");
            else
                snprintf(cap, sizeof cap, "larger working sets");
            fprintf(out, "kernels: memory peak %.1f GB/s for %s (%s)\n", r->lv[i].gbps, cap,
                    r->lv[i].how);
        }
        if (out && r->have_levels < 0)
            fprintf(out, "kernels: no memory peaks, no fraction_of_peak for memory-bound ops: %s\n",
                    s != GT_OK ? gt_last_error() : "no levels");
    }
    if (r->have_levels < 0) return 0.0;
    double peak = 0.0;
    *level = cold ? gt_probe_level_pick(r->lv + r->nlv - 1, 1, ws, &peak) + r->nlv - 1
                  : gt_probe_level_pick(r->lv, r->nlv, ws, &peak);
    return peak;
}

/* Records time_us<sfx>, gflops<sfx>, gbps<sfx> with their samples from
 * us[0..n) (and, wait not NULL, each one's wait for a CPU: "cpu_wait"), and
 * when peak > 0 the peak they are judged against: peak<sfx>,
 * fraction_of_peak<sfx>, for memory-bound ops peak_level<sfx> (the cache
 * level, 0 main memory; `level` indexes r->lv). A rate above the probe's
 * peak means the probe fell short of what the machine can do: the peak is
 * then this case's own rate (fraction 1) and peak_exceeded<sfx> records
 * rate / probe peak (docs/suites.md, "Peaks"). Returns the median time and
 * in *gf_med, *gb_med the rates at that time (the median of the rates is
 * the rate of the median time). */
static double ks_metrics(ks_run *r, gt_result *res, const char *sfx, double flops, double bytes,
                         int compute_bound, double peak, int level, const double *us,
                         const double *wait, size_t n, double *gf_med, double *gb_med) {
    double *gf = r->tmp, *gb = r->tmp + KS_MAX_SAMPLES, *sorted = r->tmp + 2 * KS_MAX_SAMPLES;
    for (size_t i = 0; i < n; i++) {
        gf[i] = flops / (us[i] * 1e-6) * 1e-9;
        gb[i] = bytes / (us[i] * 1e-6) * 1e-9;
    }
    memcpy(sorted, us, n * sizeof(double));
    double t_med = gt_probe_median(sorted, n);
    *gf_med = flops / (t_med * 1e-6) * 1e-9;
    *gb_med = bytes / (t_med * 1e-6) * 1e-9;
    char name[48];
    snprintf(name, sizeof name, "time_us%s", sfx);
    gt_result_metric(res, name, "us", 0, t_med, us, n);
    if (wait) gt_result_metric_cpu_wait(res, name, wait, n);
    /* the rates are the time seen another way: shown, gated through the time */
    char from[48];
    snprintf(from, sizeof from, "time_us%s", sfx);
    snprintf(name, sizeof name, "gflops%s", sfx);
    gt_result_metric(res, name, "GFLOP/s", 1, *gf_med, gf, n);
    gt_result_metric_derived(res, name, from);
    snprintf(name, sizeof name, "gbps%s", sfx);
    gt_result_metric(res, name, "GB/s", 1, *gb_med, gb, n);
    gt_result_metric_derived(res, name, from);
    if (peak > 0) {
        double rate = compute_bound ? *gf_med : *gb_med;
        if (rate > peak) {
            snprintf(name, sizeof name, "peak_exceeded%s", sfx);
            gt_result_metric(res, name, "ratio", 0, rate / peak, NULL, 0);
            gt_result_metric_derived(res, name, from);
            peak = rate;
        }
        snprintf(name, sizeof name, "peak%s", sfx);
        gt_result_metric(res, name, compute_bound ? "GFLOP/s" : "GB/s", 1, peak, NULL, 0);
        /* the machine's reference, measured once a run: the ops' times gate */
        gt_result_metric_ungated(res, name, "reference");
        if (!compute_bound && level >= 0 && level < r->nlv) {
            snprintf(name, sizeof name, "peak_level%s", sfx);
            gt_result_metric(res, name, "level", 0, r->lv[level].level, NULL, 0);
            gt_result_metric_ungated(res, name, "reference");
        }
        snprintf(name, sizeof name, "fraction_of_peak%s", sfx);
        gt_result_metric(res, name, "fraction", 1, rate / peak, NULL, 0);
        gt_result_metric_derived(res, name, from);
    }
    return t_med;
}

static void ks_finish(ks_run *r, gt_result *res, const char *name, const char *line) {
    if (r->ctx->out)
        fprintf(r->ctx->out, "kernels %-44s %-5s %s\n", name,
                gt_result_status_name(gt_result_get_status(res)), line);
    if (r->ctx->out) fflush(r->ctx->out);
    if (r->ctx->case_done) r->ctx->case_done(r->ctx->case_done_ctx, res);
    r->done++;
}

/* Length of the backend's notes now (0 for a backend without notes). */
static size_t ks_notes_len(gt_backend *be) {
    const char *n = be->notes ? be->notes(be) : NULL;
    return n ? strlen(n) : 0;
}

/* The notes the backend added since length `from` (notes only grow: each
 * line once), i.e. the run-time choices it made for this case (the cuDNN
 * algorithms of a conv2d, the attention path), as the param
 * backend_notes. Compare leaves it out of a result's identity and shows
 * its changes as notes (a new cuDNN picking another algorithm). A choice
 * an earlier case already noted is not repeated here. */
static void ks_notes_param(gt_result *res, gt_backend *be, size_t from) {
    const char *n = be->notes ? be->notes(be) : NULL;
    if (!n || strlen(n) <= from) return;
    n += from;
    if (*n == '\n') n++;
    if (*n) gt_result_param_str(res, "backend_notes", n);
}

/* matmul_fwd against its GEMM library's own best (see the top): records
 * library_best_us, fraction_of_library_best (= library_best_us / t_us, our
 * hot median; 1 is as fast as the library's fastest algorithm) and the
 * param library_best (what was searched), and appends to `line`. The check
 * vs_library_best >= KS_LIB_BEST_LIMIT only where it can be trusted: the
 * library's best takes at least KS_LIB_BEST_MIN_US per call (below it a
 * few microseconds of host work per call, descriptors and the heuristic
 * query, decide the ratio), and on a GPU (the CPU emulator's timings mean
 * nothing). A search that fails is a note in the line, not an error: the
 * op itself was measured. */
static void ks_library_best(gt_result *res, gt_kcase *c, double t_us, char *line, size_t len) {
    double best_s = 0.0;
    char what[256];
    size_t used = strlen(line);
    gt_status s = gt_kcase_library_best(c, &best_s, what, sizeof what);
    if (s != GT_OK || best_s <= 0.0 || t_us <= 0.0) {
        if (used < len)
            snprintf(line + used, len - used, "  library best: %s",
                     s != GT_OK ? gt_last_error() : "no time");
        gt_error_clear();
        return;
    }
    double best_us = best_s * 1e6, frac = best_us / t_us;
    gt_result_metric(res, "library_best_us", "us", 0, best_us, NULL, 0);
    gt_result_metric(res, "fraction_of_library_best", "fraction", 1, frac, NULL, 0);
    gt_result_param_str(res, "library_best", what);
    int trusted = best_us >= KS_LIB_BEST_MIN_US && !GT_CUDA_EMULATOR;
    if (trusted) {
        char detail[320];
        snprintf(detail, sizeof detail, "library best %.2f us / ours %.2f us (hot medians); %s",
                 best_us, t_us, what);
        gt_result_check(res, "vs_library_best", frac >= KS_LIB_BEST_LIMIT, frac, KS_LIB_BEST_LIMIT,
                        detail);
    }
    if (used < len)
        snprintf(line + used, len - used, "  library best %.2f us: %.0f%%%s", best_us, 100.0 * frac,
                 trusted ? "" : " (not checked)");
}

/* One op x dtype x shape: conformance, then speed. Returns non-OK only for
 * out of memory (the run cannot go on). */
/* The injected fault of a case (--inject-delay, --inject-slowdown); *slow:
 * the slowdown's item that applies, or NULL. */
static ks_fault ks_fault_of(const ks_run *r, gt_op op, const char *name, unsigned groups,
                            const gt_slowdown_item **slow) {
    *slow = gt_slowdown_match(&r->slow, name, groups);
    ks_fault f = {op == r->delay_op ? r->delay_us : 0, *slow ? (*slow)->factor : 0, r->be};
    return f;
}

/* Whether a case's speed is measured: never for the oracle, not for huge
 * shapes in a quick run. */
static int ks_timed(const ks_run *r, const gt_kgrid_row *ks) {
    return strcmp(r->be->name, "ref") != 0 && !(ks->huge && r->ctx->effort == GT_EFFORT_QUICK);
}

/* One early round of a case (see the top): set up, one block into its
 * store, free. Whatever fails here only makes the case timed in one go;
 * its own pass reports the failure. */
static void ks_round(ks_run *r, gt_op op, gt_dtype dt, const gt_kgrid_row *ks,
                     struct ks_store *st) {
    char lb[96], name[160];
    gt_kshape_label(op, &ks->sh, lb, sizeof lb);
    snprintf(name, sizeof name, "%s/%s/%s", gt_op_name(op), gt_dtype_name(dt), lb);
    if (st->alone || !ks_selected(r->ctx->case_filter, name) || !ks_timed(r, ks) ||
        !gt_ops_slot(r->be->ops, op))
        return;
    gt_kcase *c = NULL;
    if (gt_kcase_new(r->be, r->ref, dt, op, &ks->sh, &c) != GT_OK ||
        gt_kcase_footprint(c) > KS_ROUND_MAX_BYTES) {
        st->alone = 1;
        gt_kcase_free(c);
        return;
    }
    const gt_slowdown_item *slow;
    ks_fault fault = ks_fault_of(r, op, name, ks_groups(op, c), &slow);
    if (!st->us && (st->us = malloc(2 * KS_MAX_SAMPLES * sizeof(double))))
        st->wait = st->us + KS_MAX_SAMPLES;
    gt_status s = st->us ? GT_OK : GT_ERR_OOM;
    if (s == GT_OK && st->iters == 0) s = ks_calibrate(c, r->be, &fault, &st->iters);
    if (s == GT_OK)
        s = ks_block(c, r->be, st->iters, r->cap_s, &fault, &st->per, st->us, st->wait, &st->n);
    if (s != GT_OK) st->alone = 1;
    gt_kcase_free(c);
}

/* Host-timed samples of a case's own pass: its last round's block after the
 * earlier ones (st with samples), else all in one go. */
static gt_status ks_time_host(ks_run *r, gt_kcase *c, const ks_fault *fault,
                              struct ks_store *st, size_t *n, int *rounds) {
    *rounds = 1;
    if (!st || st->alone || st->n == 0)
        return ks_time(c, r->be, r->cap_s, fault, r->us, r->wait, n);
    gt_status s =
        ks_block(c, r->be, st->iters, r->cap_s, fault, &st->per, st->us, st->wait, &st->n);
    if (s != GT_OK) return s;
    memcpy(r->us, st->us, st->n * sizeof(double));
    memcpy(r->wait, st->wait, st->n * sizeof(double));
    *n = st->n;
    *rounds = KS_ROUNDS;
    return GT_OK;
}

static gt_status ks_case(ks_run *r, gt_op op, gt_dtype dt, const gt_kgrid_row *ks,
                         struct ks_store *st) {
    const gt_suite_ctx *ctx = r->ctx;
    char lb[96], name[160], line[448] = "";
    gt_kshape_label(op, &ks->sh, lb, sizeof lb);
    snprintf(name, sizeof name, "%s/%s/%s", gt_op_name(op), gt_dtype_name(dt), lb);
    if (!ks_selected(ctx->case_filter, name)) return GT_OK;
    gt_result *res = gt_report_add_result(ctx->rep, "kernels", name, ctx->topology, ctx->backend);
    ks_params(res, op, dt, &ks->sh, lb);

    if (!gt_ops_slot(r->be->ops, op)) {
        snprintf(line, sizeof line, "empty slot: %s has no %s", r->be->name, gt_op_name(op));
        gt_result_set_status(res, GT_RESULT_SKIP, line);
        ks_finish(r, res, name, line);
        return GT_OK;
    }
    gt_kcase *c = NULL;
    gt_kcheck ck[GT_KCHECK_MAX];
    int nck = 0;
    size_t notes0 = ks_notes_len(r->be);
    gt_status s = gt_kcase_new(r->be, r->ref, dt, op, &ks->sh, &c);
    /* the case's class families: known once it is set up (gt_kcase_compute_bound) */
    unsigned groups = s == GT_OK ? ks_groups(op, c) : 0u;
    gt_result_set_groups(res, groups);
    if (s == GT_OK) s = gt_kcase_check(c, ck, &nck);
    if (s != GT_OK) {
        snprintf(line, sizeof line, "%s: %s", gt_status_name(s), gt_last_error());
        gt_result_set_status(res, s == GT_ERR_UNSUPPORTED ? GT_RESULT_SKIP : GT_RESULT_ERROR, line);
        ks_notes_param(res, r->be, notes0);
        ks_finish(r, res, name, line);
        gt_kcase_free(c);
        return s == GT_ERR_OOM ? s : GT_OK;
    }

    /* Conformance: the worst output decides; detail names each output. */
    double max_abs = 0.0, max_rel = 0.0, worst = 0.0;
    size_t bad = 0;
    char detail[512] = "";
    size_t dl = 0;
    for (int i = 0; i < nck; i++) {
        if (ck[i].max_abs > max_abs) max_abs = ck[i].max_abs;
        if (ck[i].max_rel > max_rel) max_rel = ck[i].max_rel;
        if (ck[i].worst > worst || isnan(ck[i].worst)) worst = ck[i].worst;
        bad += ck[i].bad;
        if (dl < sizeof detail)
            dl += (size_t)snprintf(detail + dl, sizeof detail - dl,
                                   "%s%s: %zu/%zu outside (rtol %.2g atol %.2g), max_abs %.3g",
                                   i ? "; " : "", ck[i].what, ck[i].bad, ck[i].n, ck[i].tol.rtol,
                                   ck[i].tol.atol, ck[i].max_abs);
    }
    gt_result_metric(res, "max_abs_err", "abs", 0, max_abs, NULL, 0);
    gt_result_metric(res, "max_rel_err", "rel", 0, max_rel, NULL, 0);
    gt_result_metric_ungated(res, "max_abs_err", "numerics");
    gt_result_metric_ungated(res, "max_rel_err", "numerics");
    gt_result_check(res, "conformance", bad == 0, worst, 1.0, detail);
    int off = snprintf(line, sizeof line, "err/allowed %.3g", worst);

    /* Speed: never for the oracle; not for huge shapes in a quick run.
     * Device-timed backends: hot and cold (see the top). */
    int timed = ks_timed(r, ks);
    int dev = r->be->timer_start && r->be->timer_stop && r->be->flush_cache;
    const gt_slowdown_item *slow = NULL; /* the injected slowdown's item that applies */
    if (timed) {
        size_t n = 0, nc = 0;
        int rounds = 1;
        ks_fault fault = ks_fault_of(r, op, name, groups, &slow);
        long delay = fault.delay_us;
        s = dev ? ks_time_dev_hot(c, r->be, r->cap_s, &fault, r->us, &n)
                : ks_time_host(r, c, &fault, st, &n, &rounds);
        if (s == GT_OK && dev) s = ks_time_dev_cold(c, r->be, r->cap_s, &fault, r->cold, &nc);
        if (s != GT_OK) {
            snprintf(line, sizeof line, "timing: %s: %s", gt_status_name(s), gt_last_error());
            gt_result_set_status(res, GT_RESULT_ERROR, line);
        } else {
            double flops = gt_kcase_flops(c), bytes = gt_kcase_bytes(c);
            double ws = gt_kcase_footprint(c);
            int cb = gt_kcase_compute_bound(c), lvl = -1;
            /* the level of the distinct bytes the op touches, its working set */
            double peak = ks_peak(r, cb, dt, ws, 0, &lvl), gf_med, gb_med;
            double t_med = ks_metrics(r, res, "", flops, bytes, cb, peak, lvl, r->us,
                                      dev ? NULL : r->wait, n, &gf_med, &gb_med);
            gt_result_param_str(res, "bound", cb ? "compute" : "memory");
            if (!cb && peak > 0) {
                /* what picked peak_level: a property of the shape, not a measurement */
                gt_result_metric(res, "working_set", "B", 0, ws, NULL, 0);
                gt_result_metric_ungated(res, "working_set", "reference");
            }
            if (delay) gt_result_param_int(res, "injected_delay_us", delay);
            /* the factor of the item that slowed it; which item: the progress line */
            if (fault.factor > 1) gt_result_param_num(res, "injected_slowdown", fault.factor);
            if (dev) {
                double gfc, gbc;
                int lvc = -1;
                double pc = ks_peak(r, cb, dt, ws, 1, &lvc);
                double tc = ks_metrics(r, res, "_cold", flops, bytes, cb, pc, lvc, r->cold, NULL,
                                       nc, &gfc, &gbc);
                snprintf(line + off, sizeof line - (size_t)off,
                         "  hot %9.2f us %7.3f TFLOP/s %8.1f GB/s  cold %9.2f us %8.1f GB/s"
                         "  (%zu+%zu samples, rsd %.2f%%)",
                         t_med, gf_med * 1e-3, gb_med, tc, gbc, n, nc,
                         100.0 * gt_probe_rsd(r->us, n));
                if (op == GT_OP_MATMUL_FWD && r->be->gemm_library_best)
                    ks_library_best(res, c, t_med, line, sizeof line);
            } else {
                snprintf(line + off, sizeof line - (size_t)off,
                         "  %10.2f us  %8.2f GFLOP/s  %8.2f GB/s  (%zu samples in %d round%s, "
                         "rsd %.2f%%)",
                         t_med, gf_med, gb_med, n, rounds, rounds > 1 ? "s" : "",
                         100.0 * gt_probe_rsd(r->us, n));
            }
        }
    }
    if (slow && s == GT_OK) {
        size_t used = strlen(line);
        if (used < sizeof line)
            snprintf(line + used, sizeof line - used, "  slowed by %s", slow->text);
    }
    ks_notes_param(res, r->be, notes0);
    gt_kcase_free(c);
    ks_finish(r, res, name, line);
    return GT_OK;
}

/* Every case of the grid in order, KS_ROUNDS - 1 early rounds first (see
 * the top) where the backend is timed on the host; pass > 0 the early
 * rounds, pass 0 the cases' own pass. */
static gt_status ks_visit(ks_run *r, int pass) {
    /* fp32 everywhere; bf16 and fp16 where the backend's storage can be 16-bit (cuda). */
    gt_dtype dts[3] = {GT_DTYPE_FP32, GT_DTYPE_BF16, GT_DTYPE_FP16};
    int ndt = r->be->device == GT_DEVICE_CUDA ? 3 : 1;
    gt_status s = GT_OK;
    r->at = 0;
    for (int d = 0; d < ndt && s == GT_OK; d++)
        for (int o = 0; o < GT_OP_COUNT && s == GT_OK; o++) {
            const gt_kgrid_row *g;
            for (size_t i = 0; s == GT_OK && (g = gt_kgrid_row_at((gt_op)o, i)); i++) {
                if (!ks_runs(g, r->ctx->effort)) continue;
                struct ks_store *st = r->at < r->nstore ? &r->store[r->at] : NULL;
                r->at++;
                if (pass == 0)
                    s = ks_case(r, (gt_op)o, dts[d], g, st);
                else if (st)
                    ks_round(r, (gt_op)o, dts[d], g, st);
            }
        }
    return s;
}

static gt_status ks_visit_all(ks_run *r) {
    int dev = r->be->timer_start && r->be->timer_stop && r->be->flush_cache;
    if (!dev && strcmp(r->be->name, "ref") != 0) {
        ks_visit(r, -1); /* counts the cases (no stores yet: nothing runs) */
        r->store = calloc(r->at, sizeof *r->store);
        r->nstore = r->store ? r->at : 0;
        for (int k = 1; k < KS_ROUNDS && r->nstore; k++) ks_visit(r, k);
    }
    return ks_visit(r, 0);
}

static gt_status ks_run_suite(const gt_suite_ctx *ctx) {
    /* One rank by max_ranks; a rank without the report does nothing. */
    if (!ctx->rep) return GT_OK;
    ks_run r = {.ctx = ctx};
    gt_status s = ks_parse_delay(ctx->inject_delay, &r.delay_op, &r.delay_us);
    if (s != GT_OK) return s;
    if (ctx->inject_slowdown && (s = gt_slowdown_parse(ctx->inject_slowdown, &r.slow)) != GT_OK)
        return s;
    r.cap_s = ctx->effort == GT_EFFORT_QUICK ? 0.2 : ctx->effort == GT_EFFORT_FULL ? 3.0 : 1.0;
    gt_backend_config cfg = {.threads = ctx->threads, .device = -1};
    s = gt_backend_new(ctx->backend, &cfg, &r.be);
    if (s != GT_OK) {
        /* No such backend here: one skipped (or errored) result says why. */
        gt_result *res = gt_report_add_result(ctx->rep, "kernels", "backend", ctx->topology,
                                              ctx->backend);
        char msg[300];
        snprintf(msg, sizeof msg, "backend %s: %s", ctx->backend, gt_last_error());
        gt_result_set_status(res, s == GT_ERR_UNSUPPORTED ? GT_RESULT_SKIP : GT_RESULT_ERROR, msg);
        ks_finish(&r, res, "backend", msg);
        return GT_OK;
    }
    gt_backend_config rcfg = {.threads = 1, .device = -1};
    if ((s = gt_backend_new("ref", &rcfg, &r.ref)) != GT_OK) {
        gt_backend_free(r.be);
        return s;
    }
    r.us = malloc(2 * KS_MAX_SAMPLES * sizeof(double));
    r.wait = r.us ? r.us + KS_MAX_SAMPLES : NULL;
    r.cold = malloc(KS_MAX_SAMPLES * sizeof(double));
    r.tmp = malloc(3 * KS_MAX_SAMPLES * sizeof(double));
    if (!r.us || !r.cold || !r.tmp) s = GT_ERR(GT_ERR_OOM, "no host memory");
    if (ctx->out && s == GT_OK)
        fprintf(ctx->out, "kernels: %s vs ref, effort %d, time cap %.1f s per case%s%s\n",
                r.be->describe(r.be), (int)ctx->effort, r.cap_s,
                r.delay_us ? ", injected delay " : "", r.delay_us ? ctx->inject_delay : "");
    if (ctx->out && s == GT_OK && r.slow.n)
        fprintf(ctx->out, "kernels: injected slowdown %s\n", ctx->inject_slowdown);
    if (s == GT_OK) s = ks_visit_all(&r);
    for (size_t i = 0; i < r.nstore; i++) free(r.store[i].us);
    free(r.store);
    free(r.us);
    free(r.cold);
    free(r.tmp);
    gt_backend_free(r.ref);
    gt_backend_free(r.be);
    return s;
}

static void ks_list(FILE *f) {
    for (int o = 0; o < GT_OP_COUNT; o++)
        fprintf(f, "  %s/<dtype>/<shape>  conformance vs ref (max abs/rel error), time (cuda: "
                   "hot and cold), GFLOP/s, GB/s, fraction of peak\n",
                gt_op_name((gt_op)o));
}

static int ks_count(const gt_suite_ctx *ctx, int ranks) {
    (void)ranks;
    if (ctx->case_filter) return 1;
    int n = 0, ndt = strcmp(ctx->backend, "cuda") == 0 ? 3 : 1; /* as ks_run_suite */
    for (int o = 0; o < GT_OP_COUNT; o++) {
        const gt_kgrid_row *g;
        for (size_t i = 0; (g = gt_kgrid_row_at((gt_op)o, i)); i++) n += ks_runs(g, ctx->effort);
    }
    return n * ndt;
}

/* Full names, op/dtype and op (ks_selected's prefixes) of every case ctx runs. */
static void ks_names(const gt_suite_ctx *ctx, void (*fn)(void *arg, const char *name), void *arg) {
    static const gt_dtype dts[3] = {GT_DTYPE_FP32, GT_DTYPE_BF16, GT_DTYPE_FP16};
    int ndt = strcmp(ctx->backend, "cuda") == 0 ? 3 : 1; /* as ks_visit */
    for (int d = 0; d < ndt; d++)
        for (int o = 0; o < GT_OP_COUNT; o++) {
            char name[160], lb[96];
            fn(arg, gt_op_name((gt_op)o));
            snprintf(name, sizeof name, "%s/%s", gt_op_name((gt_op)o), gt_dtype_name(dts[d]));
            fn(arg, name);
            const gt_kgrid_row *g;
            for (size_t i = 0; (g = gt_kgrid_row_at((gt_op)o, i)); i++) {
                if (!ks_runs(g, ctx->effort)) continue;
                gt_kshape_label((gt_op)o, &g->sh, lb, sizeof lb);
                snprintf(name, sizeof name, "%s/%s/%s", gt_op_name((gt_op)o),
                         gt_dtype_name(dts[d]), lb);
                fn(arg, name);
            }
        }
}

const gt_suite gt_suite_kernels = {
    .name = "kernels",
    .description = "every op x dtype x shape: conformance vs the ref backend and speed",
    .list = ks_list,
    .min_ranks = 1,
    .max_ranks = 1,
    .run = ks_run_suite,
    .count = ks_count,
    .names = ks_names,
};
