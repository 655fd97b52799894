/* The health suite: is this machine fit to be measured? Compute and memory
 * peaks, the interconnect between ranks, and the GPU's clocks
 * (docs/suites.md, "health").
 *
 * Runs on any topology. Every rank calls run() and takes the same path:
 * the probes run on every rank at once (as a training job would load the
 * node), results are reduced to rank 0, and only rank 0 adds results. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/backend.h"
#include "engine/ops.h"
#include "engine/timer.h"
#include "kernels/registry.h"
#include "suites/probe.h"
#include "suites/suite.h"

#define HS_TRIAD_BYTES ((size_t)64 << 20)
#define HS_TRIAD_REPS 15
#define HS_PP_TAG 4242
#define HS_LAT_SAMPLES 30
#define HS_LAT_ITERS 100
#define HS_BW_BYTES ((size_t)4 << 20)
#define HS_BW_SAMPLES 10
#define HS_BW_ITERS 4

static int hs_selected(const char *filter, const char *name) {
    return !filter || !*filter || !strcmp(filter, name);
}

static gt_result *hs_result(const gt_suite_ctx *ctx, const char *name) {
    return ctx->rep ? gt_report_add_result(ctx->rep, "health", name, ctx->topology, ctx->backend)
                    : NULL;
}

static void hs_done(const gt_suite_ctx *ctx, gt_result *res, const char *name, const char *line) {
    if (!res) return;
    if (ctx->out) {
        fprintf(ctx->out, "health  %-18s %-5s %s\n", name,
                gt_result_status_name(gt_result_get_status(res)), line);
        fflush(ctx->out);
    }
    if (ctx->case_done) ctx->case_done(ctx->case_done_ctx, res);
}

static void hs_skip(const gt_suite_ctx *ctx, const char *name, const char *why) {
    gt_result *res = hs_result(ctx, name);
    if (!res) return;
    gt_result_set_status(res, GT_RESULT_SKIP, why);
    hs_done(ctx, res, name, why);
}

/* min and max over ranks of v (blocking collective) */
static gt_status hs_minmax(gt_comm *c, double v, double *mn, double *mx) {
    gt_status s = gt_comm_allreduce(c, &v, mn, 1, GT_DTYPE_FP64, GT_REDOP_MIN, NULL);
    if (s == GT_OK) s = gt_comm_allreduce(c, &v, mx, 1, GT_DTYPE_FP64, GT_REDOP_MAX, NULL);
    return s;
}

/* A peak (GFLOP/s, rank 0's value) with the spread over ranks; a failed
 * probe on any rank is an error of the case on rank 0. */
static gt_status hs_peak_case(const gt_suite_ctx *ctx, const char *name, gt_status probe,
                              double gflops, const char *what) {
    int bad = probe != GT_OK, anybad = 0;
    gt_status s = gt_comm_allreduce(ctx->comm, &bad, &anybad, 1, GT_DTYPE_INT32, GT_REDOP_MAX, NULL);
    if (s != GT_OK) return s;
    double mn = 0, mx = 0;
    if (!anybad && (s = hs_minmax(ctx->comm, gflops, &mn, &mx)) != GT_OK) return s;
    gt_result *res = hs_result(ctx, name);
    if (!res) return GT_OK;
    char line[256];
    if (anybad) {
        snprintf(line, sizeof line, "probe failed%s%s", bad ? ": " : " on another rank",
                 bad ? gt_last_error() : "");
        gt_result_set_status(res, GT_RESULT_ERROR, line);
    } else {
        gt_result_param_str(res, "probe", what);
        gt_result_metric(res, "gflops", "GFLOP/s", 1, gflops, NULL, 0);
        gt_result_metric(res, "gflops_min_rank", "GFLOP/s", 1, mn, NULL, 0);
        gt_result_metric(res, "rank_spread", "ratio", 0, mn > 0 ? mx / mn : 0.0, NULL, 0);
        gt_result_check(res, "positive", gflops > 0, gflops, 0.0, "measured GFLOP/s > 0");
        snprintf(line, sizeof line, "%.1f GFLOP/s (ranks: min %.1f, max %.1f)", gflops, mn, mx);
    }
    hs_done(ctx, res, name, line);
    return GT_OK;
}

static gt_status hs_bandwidth(const gt_suite_ctx *ctx, int threads) {
    const char *name = "memory_bandwidth";
    double samples[HS_TRIAD_REPS], gbps = 0.0;
    gt_status probe = gt_probe_triad(HS_TRIAD_BYTES, threads, HS_TRIAD_REPS, samples, &gbps);
    int bad = probe != GT_OK, anybad = 0;
    gt_status s = gt_comm_allreduce(ctx->comm, &bad, &anybad, 1, GT_DTYPE_INT32, GT_REDOP_MAX, NULL);
    if (s != GT_OK) return s;
    /* the node's total: ranks share the memory system */
    double sum = 0.0;
    if (!anybad && (s = gt_comm_allreduce(ctx->comm, &gbps, &sum, 1, GT_DTYPE_FP64, GT_REDOP_SUM,
                                          NULL)) != GT_OK)
        return s;
    gt_result *res = hs_result(ctx, name);
    if (!res) return GT_OK;
    char line[256];
    if (anybad) {
        snprintf(line, sizeof line, "triad failed%s", bad ? "" : " on another rank");
        gt_result_set_status(res, GT_RESULT_ERROR, line);
    } else {
        gt_result_param_str(res, "probe", "STREAM triad a = b + s c, fp64, OpenMP");
        gt_result_param_int(res, "array_bytes", (long long)HS_TRIAD_BYTES);
        gt_result_metric(res, "gbps", "GB/s", 1, gbps, samples, HS_TRIAD_REPS);
        gt_result_metric(res, "gbps_all_ranks", "GB/s", 1, sum, NULL, 0);
        gt_result_check(res, "positive", gbps > 0, gbps, 0.0, "measured GB/s > 0");
        snprintf(line, sizeof line, "%.2f GB/s per rank (median of %d), %.2f GB/s all ranks",
                 gbps, HS_TRIAD_REPS, sum);
    }
    hs_done(ctx, res, name, line);
    return GT_OK;
}

/* Ping-pong between rank 0 and rank size-1 (the farthest pair in the
 * usual placement); the other ranks only wait at the barriers. A sample is
 * `iters` round trips; one-way time = round trip / 2. */
/* count: fp32 elements per message */
static gt_status hs_pingpong(const gt_suite_ctx *ctx, size_t count, int nsamples, int iters,
                             double *samples) {
    gt_comm *c = ctx->comm;
    int rank = gt_comm_rank(c), last = gt_comm_size(c) - 1;
    float *buf = calloc(count ? count : 1, sizeof(float));
    if (!buf) return GT_ERR(GT_ERR_OOM, "no host memory");
    gt_status s = gt_comm_barrier(c, NULL);
    for (int k = -1; k < nsamples && s == GT_OK; k++) { /* k = -1: warm-up */
        uint64_t t0 = gt_now_ns();
        for (int i = 0; i < iters && s == GT_OK; i++) {
            if (rank == 0) {
                s = gt_comm_send(c, buf, count, GT_DTYPE_FP32, last, HS_PP_TAG, NULL);
                if (s == GT_OK) s = gt_comm_recv(c, buf, count, GT_DTYPE_FP32, last, HS_PP_TAG, NULL);
            } else if (rank == last) {
                s = gt_comm_recv(c, buf, count, GT_DTYPE_FP32, 0, HS_PP_TAG, NULL);
                if (s == GT_OK) s = gt_comm_send(c, buf, count, GT_DTYPE_FP32, 0, HS_PP_TAG, NULL);
            }
        }
        double one_way = (double)(gt_now_ns() - t0) * 1e-9 / iters / 2.0;
        if (k >= 0) samples[k] = one_way;
    }
    free(buf);
    if (s == GT_OK) s = gt_comm_barrier(c, NULL);
    return s;
}

static gt_status hs_mpi(const gt_suite_ctx *ctx) {
    int size = gt_comm_size(ctx->comm);
    int want_lat = hs_selected(ctx->case_filter, "mpi_latency");
    int want_bw = hs_selected(ctx->case_filter, "mpi_bandwidth");
    if (size < 2) {
        if (want_lat) hs_skip(ctx, "mpi_latency", "needs 2 or more ranks");
        if (want_bw) hs_skip(ctx, "mpi_bandwidth", "needs 2 or more ranks");
        return GT_OK;
    }
    char line[256];
    gt_status s;
    if (want_lat) {
        /* 8 bytes: 2 fp32 elements */
        double t[HS_LAT_SAMPLES], us[HS_LAT_SAMPLES];
        if ((s = hs_pingpong(ctx, 8 / 4, HS_LAT_SAMPLES, HS_LAT_ITERS, t)) != GT_OK) return s;
        gt_result *res = hs_result(ctx, "mpi_latency");
        if (res) {
            for (int i = 0; i < HS_LAT_SAMPLES; i++) us[i] = t[i] * 1e6;
            double tmp[HS_LAT_SAMPLES];
            memcpy(tmp, us, sizeof us);
            double med = gt_probe_median(tmp, HS_LAT_SAMPLES);
            gt_result_param_int(res, "bytes", 8);
            gt_result_param_int(res, "peer", size - 1);
            gt_result_param_str(res, "comm", gt_comm_backend_name(ctx->comm));
            gt_result_metric(res, "latency_us", "us", 0, med, us, HS_LAT_SAMPLES);
            gt_result_check(res, "positive", med > 0, med, 0.0, "one-way latency > 0");
            snprintf(line, sizeof line, "8 B one-way %.2f us (rank 0 <-> %d)", med, size - 1);
            hs_done(ctx, res, "mpi_latency", line);
        }
    }
    if (want_bw) {
        double t[HS_BW_SAMPLES], gb[HS_BW_SAMPLES];
        if ((s = hs_pingpong(ctx, HS_BW_BYTES / 4, HS_BW_SAMPLES, HS_BW_ITERS, t)) != GT_OK)
            return s;
        gt_result *res = hs_result(ctx, "mpi_bandwidth");
        if (res) {
            for (int i = 0; i < HS_BW_SAMPLES; i++) gb[i] = (double)HS_BW_BYTES / t[i] * 1e-9;
            double tmp[HS_BW_SAMPLES];
            memcpy(tmp, gb, sizeof gb);
            double med = gt_probe_median(tmp, HS_BW_SAMPLES);
            gt_result_param_int(res, "bytes", (long long)HS_BW_BYTES);
            gt_result_param_int(res, "peer", size - 1);
            gt_result_param_str(res, "comm", gt_comm_backend_name(ctx->comm));
            gt_result_metric(res, "gbps", "GB/s", 1, med, gb, HS_BW_SAMPLES);
            gt_result_check(res, "positive", med > 0, med, 0.0, "bandwidth > 0");
            snprintf(line, sizeof line, "4 MiB one-way %.2f GB/s (rank 0 <-> %d)", med, size - 1);
            hs_done(ctx, res, "mpi_bandwidth", line);
        }
    }
    return GT_OK;
}

/* GPU clocks under load, read through nvidia-smi while a queue of SGEMMs
 * runs (ops return once queued), so that idle down-clocking is not
 * mistaken for throttling; only rank 0 queries (its own GPU). The suites
 * stay free of CUDA headers: the driver's tool is the stable interface. */
static void hs_gpu_clocks(const gt_suite_ctx *ctx, gt_backend *be) {
    const char *name = "gpu_clocks";
    gt_result *res = hs_result(ctx, name);
    if (!res) return;
    char line[512] = "";
    const int n = 4096;
    size_t bytes = (size_t)n * n * sizeof(float);
    void *a = NULL, *w = NULL, *c = NULL;
    int queued = 0;
    if (be->ops->matmul_fwd && gt_backend_alloc(be, bytes, &a) == GT_OK &&
        gt_backend_alloc(be, bytes, &w) == GT_OK && gt_backend_alloc(be, bytes, &c) == GT_OK &&
        be->memset_zero(be, a, bytes) == GT_OK && be->memset_zero(be, w, bytes) == GT_OK) {
        gt_kctx k = {be, GT_DTYPE_FP32};
        /* warm the clocks up, then queue ~1 s or more of work */
        be->ops->matmul_fwd(&k, c, a, w, NULL, n, n, n);
        be->synchronize(be);
        uint64_t t0 = gt_now_ns();
        be->ops->matmul_fwd(&k, c, a, w, NULL, n, n, n);
        be->synchronize(be);
        double one = (double)(gt_now_ns() - t0) * 1e-9;
        int reps = one > 0 ? (int)(1.5 / one) + 1 : 100;
        if (reps > 2000) reps = 2000;
        for (int i = 0; i < reps; i++) be->ops->matmul_fwd(&k, c, a, w, NULL, n, n, n);
        queued = 1;
        struct timespec ts = {0, 300 * 1000 * 1000}; /* let the clocks settle under load */
        nanosleep(&ts, NULL);
    }
    /* The backend's device is the first visible one: nvidia-smi ignores
     * CUDA_VISIBLE_DEVICES, so name that device (index or UUID) to it. */
    char dev[64] = "0";
    const char *vis = getenv("CUDA_VISIBLE_DEVICES");
    if (vis && *vis) {
        size_t l = strcspn(vis, ",");
        if (l > 0 && l < sizeof dev && strspn(vis, "0123456789abcdefABCDEFGIMPU-:") >= l) {
            memcpy(dev, vis, l);
            dev[l] = '\0';
        }
    }
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "nvidia-smi -i %s --query-gpu=clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,"
             "temperature.gpu,power.draw,clocks_throttle_reasons.hw_slowdown,"
             "clocks_throttle_reasons.sw_thermal_slowdown --format=csv,noheader,nounits "
             "2>/dev/null",
             dev);
    FILE *p = popen(cmd, "r");
    char buf[512] = "";
    int got = p && fgets(buf, sizeof buf, p) != NULL;
    int rc = p ? pclose(p) : -1;
    if (queued) be->synchronize(be);
    gt_backend_dealloc(be, a);
    gt_backend_dealloc(be, w);
    gt_backend_dealloc(be, c);
    double sm = 0, smax = 0, mem = 0, mmax = 0, temp = 0, pw = 0;
    char hw[32] = "", th[32] = "";
    int nf = got && rc == 0 ? sscanf(buf, "%lf, %lf, %lf, %lf, %lf, %lf, %31[^,], %31s", &sm, &smax,
                                     &mem, &mmax, &temp, &pw, hw, th)
                            : 0;
    if (nf < 4) {
        snprintf(line, sizeof line, "nvidia-smi gave no clocks (%s)",
                 got ? buf : "not found or failed");
        line[strcspn(line, "\n")] = '\0';
        gt_result_set_status(res, GT_RESULT_SKIP, line);
        hs_done(ctx, res, name, line);
        return;
    }
    gt_result_param_str(res, "load", queued ? "4096^3 SGEMM queue" : "none (no matmul)");
    gt_result_metric(res, "sm_clock_mhz", "MHz", 1, sm, NULL, 0);
    gt_result_metric(res, "sm_clock_max_mhz", "MHz", 1, smax, NULL, 0);
    gt_result_metric(res, "mem_clock_mhz", "MHz", 1, mem, NULL, 0);
    gt_result_metric(res, "mem_clock_max_mhz", "MHz", 1, mmax, NULL, 0);
    gt_result_metric(res, "sm_clock_ratio", "fraction", 1, smax > 0 ? sm / smax : 0.0, NULL, 0);
    if (nf >= 5) gt_result_metric(res, "temperature_c", "C", 0, temp, NULL, 0);
    if (nf >= 6) gt_result_metric(res, "power_w", "W", 0, pw, NULL, 0);
    static const char *const state[] = {"sm_clock_mhz", "sm_clock_max_mhz", "mem_clock_mhz",
                                        "mem_clock_max_mhz", "temperature_c", "power_w"};
    for (size_t i = 0; i < sizeof state / sizeof state[0]; i++)
        gt_result_metric_ungated(res, state[i], "state");
    if (nf >= 8) {
        /* "Active" means the clocks are held down by the hardware or by
         * heat: figures measured now would not be the machine's own. */
        int slowed = strstr(hw, "Active") && !strstr(hw, "Not") ? 1 : 0;
        slowed |= strstr(th, "Active") && !strstr(th, "Not") ? 2 : 0;
        gt_result_check(res, "no_hw_or_thermal_slowdown", slowed == 0, (double)slowed, 0.0,
                        "clock throttle reasons hw_slowdown (1) / sw_thermal_slowdown (2)");
    }
    gt_result_check(res, "clocks_reported", sm > 0 && smax > 0, sm, 0.0, "SM clock > 0 MHz");
    snprintf(line, sizeof line, "SM %.0f/%.0f MHz, mem %.0f/%.0f MHz, %.0f C, %.0f W under load",
             sm, smax, mem, mmax, temp, pw);
    hs_done(ctx, res, name, line);
}

static gt_status hs_run(const gt_suite_ctx *ctx) {
    gt_backend_config cfg = {.threads = ctx->threads, .device = -1};
    gt_backend *be = NULL;
    gt_status bs = gt_backend_new(ctx->backend, &cfg, &be);
    /* Same decision on every rank: the backend exists everywhere or the
     * backend cases are skipped everywhere. */
    int bad = bs != GT_OK, anybad = 0;
    gt_status s = gt_comm_allreduce(ctx->comm, &bad, &anybad, 1, GT_DTYPE_INT32, GT_REDOP_MAX, NULL);
    if (s != GT_OK) {
        gt_backend_free(be);
        return s;
    }
    char why[300];
    snprintf(why, sizeof why, "backend %s unavailable%s%s", ctx->backend, bad ? ": " : " on a rank",
             bad ? gt_last_error() : "");
    int want_fma = hs_selected(ctx->case_filter, "fma_peak");
    int want_sgemm = hs_selected(ctx->case_filter, "sgemm_peak");
    if (want_fma || want_sgemm) {
        if (anybad) {
            if (want_fma) hs_skip(ctx, "fma_peak", why);
            if (want_sgemm) hs_skip(ctx, "sgemm_peak", why);
        } else {
            gt_probe_peaks pk;
            memset(&pk, 0, sizeof pk);
            gt_status ps = gt_probe_peaks_fresh(be, &pk);
            if (want_fma) {
                /* the FMA loop exists for host backends only */
                if (be->device != GT_DEVICE_HOST) {
                    hs_skip(ctx, "fma_peak", "FMA probe runs on host backends only; see sgemm_peak");
                } else if ((s = hs_peak_case(ctx, "fma_peak", ps, pk.peaks.fma_gflops,
                                             "FP32 FMA loop on every thread")) != GT_OK) {
                    gt_backend_free(be);
                    return s;
                }
            }
            if (want_sgemm) {
                char what[96];
                snprintf(what, sizeof what, "SGEMM n=%d through ops->matmul_fwd, median of 5",
                         pk.peaks.sgemm_n);
                if ((s = hs_peak_case(ctx, "sgemm_peak", ps, pk.peaks.sgemm_gflops, what)) != GT_OK) {
                    gt_backend_free(be);
                    return s;
                }
            }
        }
    }
    if (hs_selected(ctx->case_filter, "memory_bandwidth") &&
        (s = hs_bandwidth(ctx, be ? be->threads : ctx->threads)) != GT_OK) {
        gt_backend_free(be);
        return s;
    }
    if ((s = hs_mpi(ctx)) != GT_OK) {
        gt_backend_free(be);
        return s;
    }
    if (hs_selected(ctx->case_filter, "gpu_clocks")) {
        if (strcmp(ctx->backend, "cuda") != 0)
            hs_skip(ctx, "gpu_clocks", "only with the cuda backend");
        else if (anybad)
            hs_skip(ctx, "gpu_clocks", why);
        else
            hs_gpu_clocks(ctx, be);
    }
    gt_backend_free(be);
    return GT_OK;
}

static void hs_list(FILE *f) {
    fprintf(f, "  fma_peak          FP32 FMA GFLOP/s on every thread (host backends)\n");
    fprintf(f, "  sgemm_peak        SGEMM GFLOP/s through the backend's matmul (the MFU reference)\n");
    fprintf(f, "  memory_bandwidth  STREAM triad GB/s on host memory, median with samples\n");
    fprintf(f, "  mpi_latency       8 B ping-pong rank 0 <-> last rank, one-way us (>= 2 ranks)\n");
    fprintf(f, "  mpi_bandwidth     4 MiB ping-pong rank 0 <-> last rank, GB/s (>= 2 ranks)\n");
    fprintf(f, "  gpu_clocks        SM/memory clocks under load, throttle reasons (cuda)\n");
}

/* every case of hs_run adds a result, a skip where it cannot run */
static int hs_count(const gt_suite_ctx *ctx, int ranks) {
    (void)ranks;
    return ctx->case_filter ? 1 : 6;
}

static void hs_names(const gt_suite_ctx *ctx, void (*fn)(void *arg, const char *name), void *arg) {
    (void)ctx;
    static const char *const n[] = {"fma_peak",    "sgemm_peak",    "memory_bandwidth",
                                    "mpi_latency", "mpi_bandwidth", "gpu_clocks"};
    for (size_t i = 0; i < sizeof n / sizeof n[0]; i++) fn(arg, n[i]);
}

const gt_suite gt_suite_health = {
    .name = "health",
    .description = "machine fitness: FMA/SGEMM peaks, memory bandwidth, interconnect, GPU clocks",
    .list = hs_list,
    .min_ranks = 1,
    .max_ranks = 0,
    .run = hs_run,
    .count = hs_count,
    .names = hs_names,
};
