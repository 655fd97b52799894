/* Machine probes (suites/probe.h). */
#define _POSIX_C_SOURCE 200809L
#include "suites/probe.h"

#include "engine/stats.h"

#include <math.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/ops.h"
#include "engine/timer.h"
#include "gt_config.h"

#if GT_HAVE_OPENMP
#include <omp.h>
#endif

double gt_probe_median(double *x, size_t n) {
    if (!n) return 0.0;
    qsort(x, n, sizeof *x, gt_cmp_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

double gt_probe_rsd(const double *x, size_t n) {
    if (n < 2) return 0.0;
    double mean = 0.0, ss = 0.0;
    for (size_t i = 0; i < n; i++) mean += x[i];
    mean /= (double)n;
    for (size_t i = 0; i < n; i++) ss += (x[i] - mean) * (x[i] - mean);
    return mean != 0.0 ? sqrt(ss / (double)(n - 1)) / fabs(mean) : 0.0;
}

gt_status gt_probe_triad(size_t bytes, int threads, int reps, double *samples, double *gbps) {
    size_t n = bytes / sizeof(double);
    double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
    double *s = samples ? samples : malloc((size_t)reps * sizeof *s);
    if (!a || !b || !c || !s) {
        free(a);
        free(b);
        free(c);
        if (!samples) free(s);
        return GT_ERR(GT_ERR_OOM, "triad: no host memory for 3 x %zu bytes", bytes);
    }
#if GT_HAVE_OPENMP
    int nt = threads > 0 ? threads : omp_get_max_threads();
#else
    (void)threads;
#endif
    /* First touch by the threads that use the pages (NUMA placement). */
#if GT_HAVE_OPENMP
#pragma omp parallel for num_threads(nt) schedule(static)
#endif
    for (size_t i = 0; i < n; i++) {
        a[i] = 0.0;
        b[i] = 1.0;
        c[i] = 2.0;
    }
    for (int r = -1; r < reps; r++) { /* r = -1: warm-up */
        uint64_t t0 = gt_now_ns();
#if GT_HAVE_OPENMP
#pragma omp parallel for num_threads(nt) schedule(static)
#endif
        for (size_t i = 0; i < n; i++) a[i] = b[i] + 3.0 * c[i];
        double sec = (double)(gt_now_ns() - t0) * 1e-9;
        if (r >= 0) s[r] = 3.0 * (double)(n * sizeof(double)) / sec * 1e-9;
    }
    /* keep the result alive */
    if (a[n / 2] != 7.0) s[0] = -1.0;
    double *tmp = malloc((size_t)reps * sizeof *tmp);
    if (tmp) {
        memcpy(tmp, s, (size_t)reps * sizeof *tmp);
        *gbps = gt_probe_median(tmp, (size_t)reps);
        free(tmp);
    }
    free(a);
    free(b);
    free(c);
    if (!samples) free(s);
    return tmp ? GT_OK : GT_ERR(GT_ERR_OOM, "no host memory");
}

/* One device-timed sample of gt_probe_copy: GT_PROBE_COPY_BATCH copies
 * between the backend's timer marks; seconds per copy in *sec. */
static gt_status probe_copy_batch(gt_backend *be, void *dst, const void *src, size_t bytes,
                                  double *sec) {
    gt_kctx k = {.be = be, .dt = GT_DTYPE_FP32};
    void *tok = NULL;
    gt_status st = be->timer_start(be, &tok);
    for (int i = 0; st == GT_OK && i < GT_PROBE_COPY_BATCH; i++)
        st = be->ops->cast ? be->ops->cast(&k, dst, GT_DTYPE_FP32, src, GT_DTYPE_FP32, bytes / 4)
                           : be->copy_device(be, dst, src, bytes);
    double t = 0.0;
    if (tok) {
        gt_status st2 = be->timer_stop(be, tok, &t);
        if (st == GT_OK) st = st2;
    }
    *sec = t / GT_PROBE_COPY_BATCH;
    return st;
}

gt_status gt_probe_copy(gt_backend *be, size_t bytes, int reps, double *samples, double *gbps) {
    void *src = NULL, *dst = NULL;
    bytes &= ~(size_t)3; /* whole fp32 elements for the cast op */
    double *s = malloc((size_t)reps * sizeof *s);
    gt_status st = s ? GT_OK : GT_ERR(GT_ERR_OOM, "no host memory");
    if (st == GT_OK) st = gt_backend_alloc(be, bytes, &src);
    if (st == GT_OK) st = gt_backend_alloc(be, bytes, &dst);
    if (st == GT_OK) st = be->memset_zero(be, src, bytes);
    for (int r = -1; st == GT_OK && r < reps; r++) {
        double sec = 0.0;
        if (be->timer_start) {
            st = probe_copy_batch(be, dst, src, bytes, &sec);
        } else {
            uint64_t t0 = gt_now_ns();
            st = be->copy_device(be, dst, src, bytes);
            if (st == GT_OK) st = be->synchronize(be);
            sec = (double)(gt_now_ns() - t0) * 1e-9;
        }
        if (r >= 0) s[r] = 2.0 * (double)bytes / sec * 1e-9;
    }
    if (st == GT_OK) {
        if (samples) memcpy(samples, s, (size_t)reps * sizeof *s);
        *gbps = gt_probe_median(s, (size_t)reps);
    }
    gt_backend_dealloc(be, src);
    gt_backend_dealloc(be, dst);
    free(s);
    return st;
}

/* n x n x n GEMM through matmul_fwd in dt, timed with the backend's timer
 * marks (see probe.h). The operands repeat one slab of PROBE_SLAB rows of
 * the SGEMM probe's pattern (values in [-0.5, 0.5), no zeros-only fast
 * path and no denormals), uploaded slab by slab. */
#define PROBE_SLAB 64
#define PROBE_STR_(x) #x
#define PROBE_STR(x) PROBE_STR_(x)
static gt_status probe_gemm(gt_backend *be, gt_dtype dt, double *gflops) {
    const int n = GT_PROBE_GEMM_N;
    size_t es = gt_dtype_size(dt), slab = (size_t)PROBE_SLAB * n;
    size_t bytes = (size_t)n * n * es;
    float *h = malloc(slab * sizeof *h);
    void *hd = malloc(slab * es);
    void *a = NULL, *w = NULL, *c = NULL;
    gt_status s = (h && hd) ? GT_OK : GT_ERR(GT_ERR_OOM, "GEMM probe: no host memory");
    if (s == GT_OK) {
        for (size_t i = 0; i < slab; i++) h[i] = (float)((i * 7919) % 1000) * 1e-3f - 0.5f;
        gt_convert(hd, dt, h, GT_DTYPE_FP32, slab);
    }
    if (s == GT_OK) s = gt_backend_alloc(be, bytes, &a);
    if (s == GT_OK) s = gt_backend_alloc(be, bytes, &w);
    if (s == GT_OK) s = gt_backend_alloc(be, bytes, &c);
    for (size_t off = 0; s == GT_OK && off < bytes; off += slab * es) {
        s = be->copy_to_device(be, (char *)a + off, hd, slab * es);
        if (s == GT_OK) s = be->copy_to_device(be, (char *)w + off, hd, slab * es);
    }
    gt_kctx k = {.be = be, .dt = dt};
    double sec[GT_PROBE_GEMM_REPS];
    for (int r = -2; s == GT_OK && r < GT_PROBE_GEMM_REPS; r++) {
        void *tok = NULL;
        double t = 0.0;
        s = be->timer_start(be, &tok);
        if (s == GT_OK) s = be->ops->matmul_fwd(&k, c, a, w, NULL, n, n, n);
        if (tok) {
            gt_status s2 = be->timer_stop(be, tok, &t);
            if (s == GT_OK) s = s2;
        }
        if (r >= 0) sec[r] = t;
    }
    if (s == GT_OK)
        *gflops = 2.0 * n * (double)n * n / gt_probe_median(sec, GT_PROBE_GEMM_REPS) * 1e-9;
    gt_backend_dealloc(be, a);
    gt_backend_dealloc(be, w);
    gt_backend_dealloc(be, c);
    gt_allocator_trim(be->alloc); /* 3 n^2 elements need not stay reserved */
    free(h);
    free(hd);
    return s;
}

/* ---- the compute peaks ------------------------------------------------------- */

/* 256 independent accumulators: 16 AVX-512 (or 32 AVX2) registers' worth of
 * chains, enough to hide the FMA latency (4 cycles) on 2 FMA ports. The
 * compiler turns the inner loop into vfmadd with -O3 -march=native. */
#define FMA_LANES 256
static double fma_kernel(long iters, float seed) {
    float acc[FMA_LANES];
    for (int j = 0; j < FMA_LANES; j++) acc[j] = seed + (float)j * 1e-3f;
    const float a = 0.999999f, b = 1e-7f;
    for (long i = 0; i < iters; i++)
        for (int j = 0; j < FMA_LANES; j++) acc[j] = fmaf(acc[j], a, b);
    double s = 0;
    for (int j = 0; j < FMA_LANES; j++) s += acc[j];
    return s;
}

/* The SGEMM probe's n: about a GFLOP per thread (2 n^3 >= 2^30 x threads,
 * in steps of 256, 1024 to 4096), so the figure is the rate the threads
 * reach at full occupancy and the probe takes tens of milliseconds per
 * GEMM, not hundreds (n = 2048 on 2 threads cost 0.5 s of every train's
 * start-up for the same rate within 5%, docs/performance.md). Half that in a
 * sanitized build (every access checked; its figure is the sanitizers'
 * either way) and 256 on the CPU emulator's device, whose GEMM is a loop on
 * one core and whose figure means nothing (docs/cuda-emulator.md). */
static int probe_sgemm_n(const gt_backend *be) {
    if (GT_CUDA_EMULATOR && be->device != GT_DEVICE_HOST) return 256;
    int threads = 1;
#if GT_HAVE_OPENMP
    threads = omp_get_max_threads();
#endif
    int n = 1024;
    while (n < 4096 && 2.0 * n * n * (double)n < 1073741824.0 * threads) n += 256;
    return GT_SANITIZED ? n / 2 : n;
}

gt_status gt_probe_measure_sgemm(gt_backend *be, int reps, gt_peaks *out) {
    memset(out, 0, sizeof *out);
    uint64_t t_start = gt_now_ns();
    gt_status s = GT_OK;
    if (reps < 1 || reps > 5)
        return GT_ERR(GT_ERR_INVALID, "SGEMM probe: %d repetitions (1 to 5)", reps);
    /* SGEMM through the path training uses, n from the threads (probe_sgemm_n) */
    const int n = probe_sgemm_n(be);
    out->sgemm_n = n;
    if (!be->ops->matmul_fwd) return GT_ERR(GT_ERR_UNSUPPORTED, "backend '%s' has no matmul",
                                            be->name);
    size_t bytes = (size_t)n * n * sizeof(float);
    float *host = malloc(bytes);
    void *a = NULL, *w = NULL, *c = NULL;
    if (!host) return GT_ERR(GT_ERR_OOM, "no host memory for the SGEMM probe");
    for (size_t i = 0; i < (size_t)n * n; i++) host[i] = (float)((i * 7919) % 1000) * 1e-3f - 0.5f;
    if ((s = gt_backend_alloc(be, bytes, &a)) != GT_OK ||
        (s = gt_backend_alloc(be, bytes, &w)) != GT_OK ||
        (s = gt_backend_alloc(be, bytes, &c)) != GT_OK)
        goto done;
    if ((s = be->copy_to_device(be, a, host, bytes)) != GT_OK ||
        (s = be->copy_to_device(be, w, host, bytes)) != GT_OK)
        goto done;
    gt_kctx k = {.be = be, .dt = GT_DTYPE_FP32};
    double secs[5];
    for (int rep = -1; rep < reps; rep++) {
        uint64_t t0 = gt_now_ns();
        if ((s = be->ops->matmul_fwd(&k, c, a, w, NULL, n, n, n)) != GT_OK) goto done;
        if ((s = be->synchronize(be)) != GT_OK) goto done;
        if (rep >= 0) secs[rep] = (double)(gt_now_ns() - t0) * 1e-9;
    }
    double fastest = secs[0];
    for (int i = 1; i < reps; i++)
        if (secs[i] < fastest) fastest = secs[i];
    out->sgemm_best_gflops = 2.0 * n * (double)n * n / fastest * 1e-9;
    out->sgemm_gflops = 2.0 * n * (double)n * n / gt_median(secs, (size_t)reps) * 1e-9;
done:
    gt_backend_dealloc(be, a);
    gt_backend_dealloc(be, w);
    gt_backend_dealloc(be, c);
    free(host);
    out->seconds = (double)(gt_now_ns() - t_start) * 1e-9;
    return s;
}

gt_status gt_probe_measure_peaks(gt_backend *be, gt_peaks *out) {
    memset(out, 0, sizeof *out);
    uint64_t t_start = gt_now_ns();
    if (be->device == GT_DEVICE_HOST) {
        /* a tenth in sanitized builds, as gt_probe_measure_sgemm's n */
        const long iters = GT_SANITIZED ? 300 * 1000 : 3 * 1000 * 1000;
        double best = 0, sink = 0;
        for (int rep = 0; rep < 3; rep++) {
            uint64_t t0 = gt_now_ns();
            int nthreads = 1;
#if GT_HAVE_OPENMP
#pragma omp parallel reduction(+ : sink)
            {
#pragma omp single
                nthreads = omp_get_num_threads();
                sink += fma_kernel(iters, (float)omp_get_thread_num());
            }
#else
            sink += fma_kernel(iters, 0.0f);
#endif
            double sec = (double)(gt_now_ns() - t0) * 1e-9;
            double gf = 2.0 * FMA_LANES * (double)iters * nthreads / sec * 1e-9;
            if (gf > best) best = gf;
        }
        /* keep the result alive so the loop is not removed */
        if (sink == 42.0) fprintf(stderr, " ");
        out->fma_gflops = best;
    }

    double fma = out->fma_gflops;
    gt_status s = gt_probe_measure_sgemm(be, 5, out);
    out->fma_gflops = fma;
    out->seconds = (double)(gt_now_ns() - t_start) * 1e-9;
    return s;
}

/* A handful of backends per process at most (ref, cpu, cuda; thread counts). */
#define PROBE_CACHE 8
static struct {
    char name[16];
    int threads;
    gt_probe_peaks p;
    double gemm[GT_DTYPE_COUNT]; /* gt_probe_gemm_peak, device backends; 0: not yet */
    int measured;                /* 0: read from GT_PROBE_CACHE's file */
} probe_cache[PROBE_CACHE];
static int probe_cached;

/* Into this process's cache (a measured set replaces one read from the file). */
static gt_status remember_peaks(const gt_backend *be, const gt_probe_peaks *p, int measured,
                                gt_probe_peaks *out) {
    int i = 0;
    while (i < probe_cached &&
           (strcmp(probe_cache[i].name, be->name) || probe_cache[i].threads != be->threads))
        i++;
    if (i < PROBE_CACHE) {
        snprintf(probe_cache[i].name, sizeof probe_cache[0].name, "%s", be->name);
        probe_cache[i].threads = be->threads;
        probe_cache[i].p = *p;
        probe_cache[i].measured = measured;
        memset(probe_cache[i].gemm, 0, sizeof probe_cache[0].gemm);
        if (i == probe_cached) probe_cached++;
    }
    *out = *p;
    return GT_OK;
}

static gt_status peaks_of(gt_backend *be, int fresh, gt_probe_peaks *out);

gt_status gt_probe_peaks_get(gt_backend *be, gt_probe_peaks *out) {
    return peaks_of(be, 0, out);
}

gt_status gt_probe_peaks_fresh(gt_backend *be, gt_probe_peaks *out) {
    return peaks_of(be, 1, out);
}

/* Remembered in this process (and in GT_PROBE_CACHE's file) by backend
 * name and threads; `fresh`: measured unless this process measured them. */
static gt_status peaks_of(gt_backend *be, int fresh, gt_probe_peaks *out) {
    for (int i = 0; i < probe_cached; i++)
        if (!strcmp(probe_cache[i].name, be->name) && probe_cache[i].threads == be->threads &&
            (!fresh || probe_cache[i].measured)) {
            *out = probe_cache[i].p;
            return GT_OK;
        }
    gt_probe_peaks p;
    memset(&p, 0, sizeof p);
    int cached = gt_probe_cache_load_peaks(be, &p);
    if (cached && !fresh) return remember_peaks(be, &p, 0, out);
    memset(&p, 0, sizeof p);
    gt_status s = gt_probe_measure_peaks(be, &p.peaks);
    if (s != GT_OK) return s;
    double samples[5];
    if (be->device == GT_DEVICE_HOST) {
        p.mem_how = "host triad, 3 x 64 MiB";
        s = gt_probe_triad(GT_PROBE_MEM_TRIAD_BYTES, be->threads, 5, samples, &p.mem_gbps);
    } else {
        p.mem_how = be->timer_start ? "device copy, " GT_PROBE_COPY_DESC
                                      ", 4 per sample between device timer marks"
                                    : "device copy, " GT_PROBE_COPY_DESC ", host clock";
        s = gt_probe_copy(be, GT_PROBE_COPY_BYTES, 5, samples, &p.mem_gbps);
        gt_allocator_trim(be->alloc); /* the 2 copy buffers need not stay reserved */
    }
    if (s != GT_OK) return s;
    for (int i = 0; i < 5; i++)
        if (samples[i] > p.mem_best_gbps) p.mem_best_gbps = samples[i];
    /* the cache is filled, never replaced: a fresh measurement (health's) may
     * be taken beside other work, the cache's first one on purpose alone */
    if (!cached) gt_probe_cache_store_peaks(be, &p);
    return remember_peaks(be, &p, 1, out);
}

gt_status gt_probe_gemm_peak(gt_backend *be, gt_dtype dt, double *gflops, const char **how) {
    *gflops = 0.0;
    if (how) *how = "";
    gt_probe_peaks p;
    GT_TRY(gt_probe_peaks_get(be, &p));
    if (!be->timer_start) {
        if (dt != GT_DTYPE_FP32)
            return GT_ERR(GT_ERR_UNSUPPORTED,
                          "%s: the compute peak of a host backend is the fp32 SGEMM probe; "
                          "there is none for %s",
                          be->name, gt_dtype_name(dt));
        /* the fastest sample, as the memory levels take theirs: a peak bounds what
         * the machine did, and a median of 5 was beaten by small GEMMs (1.1x) */
        *gflops = p.peaks.sgemm_best_gflops > 0 ? p.peaks.sgemm_best_gflops
                                                : p.peaks.sgemm_gflops;
        if (how) {
            static char host_how[80]; /* the size the probe used (1024 when sanitized) */
            snprintf(host_how, sizeof host_how,
                     "SGEMM n=%d through matmul_fwd, host clock, best of 5", p.peaks.sgemm_n);
            *how = host_how;
        }
        return GT_OK;
    }
    if ((int)dt < 0 || dt >= GT_DTYPE_COUNT)
        return GT_ERR(GT_ERR_INVALID, "gemm peak: dtype %d out of range", (int)dt);
    if (!be->ops->matmul_fwd)
        return GT_ERR(GT_ERR_UNSUPPORTED, "backend '%s' has no matmul: no GEMM peak", be->name);
    int i = 0;
    while (i < probe_cached &&
           (strcmp(probe_cache[i].name, be->name) || probe_cache[i].threads != be->threads))
        i++;
    double g = i < probe_cached ? probe_cache[i].gemm[dt] : 0.0;
    if (g <= 0.0) {
        GT_TRY(probe_gemm(be, dt, &g));
        if (i < probe_cached) probe_cache[i].gemm[dt] = g;
    }
    *gflops = g;
    if (how)
        *how = "GEMM n=" PROBE_STR(GT_PROBE_GEMM_N) " through matmul_fwd in the op's dtype, "
               "device timer marks, median of " PROBE_STR(GT_PROBE_GEMM_REPS);
    return GT_OK;
}

/* ---- datasheet peaks ------------------------------------------------------------ */
/* Dense TFLOP/s from NVIDIA's product pages (boost clock, no sparsity). The
 * first entry whose every key occurs in the GPU name wins, so the more
 * specific names come first. */
typedef struct datasheet_gpu {
    const char *key1, *key2;
    double tf16;   /* bf16 / fp16 tensor core */
    double tf32;   /* fp32 FMA (CUDA cores) */
    double l2_mib; /* L2 cache, MiB as NVIDIA counts MB (the whole chip's, both partitions) */
} datasheet_gpu;

static const datasheet_gpu g_datasheet[] = {
    {"H100", "PCIe", 756.5, 51.2, 50},
    {"H100", "NVL", 835.5, 60.0, 50},
    {"H100", NULL, 989.4, 66.9, 50}, /* SXM5 ("NVIDIA H100 80GB HBM3") */
    {"GH200", NULL, 989.4, 66.9, 50},
    {"H200", NULL, 989.4, 66.9, 50},
    {"H800", NULL, 989.4, 66.9, 50},
    {"A100", NULL, 312.0, 19.5, 40},
    {"A800", NULL, 312.0, 19.5, 40},
    {"L40S", NULL, 362.05, 91.6, 96},
    {"A10", NULL, 125.0, 31.2, 6},
};

static const datasheet_gpu *datasheet_find(const char *name) {
    for (size_t i = 0; i < sizeof g_datasheet / sizeof g_datasheet[0]; i++) {
        const datasheet_gpu *g = &g_datasheet[i];
        if (strstr(name, g->key1) && (!g->key2 || strstr(name, g->key2))) return g;
    }
    return NULL;
}

/* The GPU name of a cuda backend's description ("cuda: NVIDIA H100 80GB
 * HBM3, sm_90, ...") into name[len]; 0 when there is none. */
static int datasheet_name(gt_backend *be, char *name, size_t len) {
    if (!be || be->device != GT_DEVICE_CUDA || !be->describe) return 0;
    const char *desc = be->describe(be);
    if (!desc) return 0;
    const char *p = strstr(desc, "cuda: ");
    p = p ? p + 6 : desc;
    size_t n = strcspn(p, ",");
    if (n >= len) n = len - 1;
    memcpy(name, p, n);
    name[n] = '\0';
    return 1;
}

double gt_probe_datasheet_gflops(gt_backend *be, gt_dtype dt) {
    char name[160];
    if (!datasheet_name(be, name, sizeof name)) return 0.0;
    const datasheet_gpu *g = datasheet_find(name);
    if (!g) return 0.0;
    if (dt == GT_DTYPE_BF16 || dt == GT_DTYPE_FP16) return g->tf16 * 1e3;
    if (dt == GT_DTYPE_FP32) return g->tf32 * 1e3;
    return 0.0;
}

double gt_probe_datasheet_l2_bytes(const char *gpu_name) {
    const datasheet_gpu *g = gpu_name ? datasheet_find(gpu_name) : NULL;
    return g ? g->l2_mib * 1048576.0 : 0.0;
}

/* ---- the memory hierarchy --------------------------------------------------------- */

int gt_probe_level_pick(const gt_probe_level *lv, int n, double ws_bytes, double *gbps) {
    if (gbps) *gbps = 0.0;
    if (n <= 0) return -1;
    int i = 0;
    if (!(ws_bytes > 0.0) || !isfinite(ws_bytes))
        i = n - 1;
    else
        while (i < n - 1 && lv[i].bytes > 0.0 && ws_bytes > lv[i].bytes) i++;
    if (gbps) {
        double best = 0.0;
        for (int j = i; j < n; j++)
            if (lv[j].gbps > best) best = lv[j].gbps;
        *gbps = best;
    }
    return i;
}

/* "0-3,8,10-11" -> 7; 0 for an empty or unreadable list. */
static int cpu_list_count(const char *s) {
    int n = 0;
    while (*s) {
        char *end;
        long a = strtol(s, &end, 10);
        if (end == s) break;
        long b = a;
        if (*end == '-') {
            s = end + 1;
            b = strtol(s, &end, 10);
            if (end == s) break;
        }
        if (b >= a) n += (int)(b - a + 1);
        s = end;
        if (*s == ',') s++;
        else break;
    }
    return n;
}

/* First line of dir/name into buf; 0 on failure. */
static int read_line(const char *dir, const char *name, char *buf, size_t len) {
    char path[640];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    if (ok) buf[strcspn(buf, "\n")] = '\0';
    return ok;
}

static int cmp_cache(const void *a, const void *b) {
    const gt_probe_cache *x = a, *y = b;
    return (x->level > y->level) - (x->level < y->level);
}

int gt_probe_host_caches(const char *sysfs_dir, gt_probe_cache *out, int max) {
    const char *dir = sysfs_dir ? sysfs_dir : "/sys/devices/system/cpu/cpu0/cache";
    int n = 0;
    for (int idx = 0; idx < 16 && n < max; idx++) {
        char sub[560], buf[256]; /* sysfs paths are short */
        snprintf(sub, sizeof sub, "%s/index%d", dir, idx);
        if (!read_line(sub, "level", buf, sizeof buf)) continue;
        int level = atoi(buf);
        if (!read_line(sub, "type", buf, sizeof buf) || !strcmp(buf, "Instruction")) continue;
        if (!read_line(sub, "size", buf, sizeof buf)) continue;
        char *end;
        double size = strtod(buf, &end);
        if (*end == 'K' || *end == 'k') size *= 1024.0;
        else if (*end == 'M' || *end == 'm') size *= 1048576.0;
        else if (*end == 'G' || *end == 'g') size *= 1073741824.0;
        if (level < 1 || size <= 0.0) continue;
        int shared = read_line(sub, "shared_cpu_list", buf, sizeof buf) ? cpu_list_count(buf) : 0;
        out[n].level = level;
        out[n].bytes = (size_t)size;
        out[n].shared_by = shared > 0 ? shared : 1;
        n++;
    }
#ifdef _SC_LEVEL1_DCACHE_SIZE
    if (n == 0 && !sysfs_dir) {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        const long sz[3] = {sysconf(_SC_LEVEL1_DCACHE_SIZE), sysconf(_SC_LEVEL2_CACHE_SIZE),
                            sysconf(_SC_LEVEL3_CACHE_SIZE)};
        for (int l = 0; l < 3 && n < max; l++)
            if (sz[l] > 0) {
                out[n].level = l + 1;
                out[n].bytes = (size_t)sz[l];
                out[n].shared_by = l == 2 && ncpu > 0 ? (int)ncpu : 1;
                n++;
            }
    }
#endif
    qsort(out, (size_t)n, sizeof *out, cmp_cache);
    return n;
}

/* "48 KiB", "2 MiB", "260 MiB" */
static void fmt_bytes(char *buf, size_t len, double b) {
    if (b >= 1048576.0)
        snprintf(buf, len, "%.3g MiB", b / 1048576.0);
    else
        snprintf(buf, len, "%.3g KiB", b / 1024.0);
}

int gt_probe_host_plan(const gt_probe_cache *c, int nc, int threads, int ncpu,
                       gt_probe_level *lv, size_t *probe_bytes, int max) {
    int n = 0;
    double prev = 0.0;
    if (threads < 1) threads = 1;
    if (ncpu < 1) ncpu = threads;
    for (int i = 0; i < nc && n < max; i++) {
        int sh = c[i].shared_by > 0 ? c[i].shared_by : 1;
        int inst = (threads + sh - 1) / sh, most = (ncpu + sh - 1) / sh;
        if (inst > most) inst = most;
        double cap = (double)c[i].bytes * inst;
        if (cap <= prev) continue; /* no room a smaller level lacks */
        double pb = cap / 2;
        if (prev > 0.0 && pb > 2.0 * prev) pb = 2.0 * prev;
        if (pb <= prev) pb = (prev + cap) / 2;
        /* whole 64-byte lines per array and thread */
        size_t unit = (size_t)3 * 64 * (size_t)threads;
        size_t b = (size_t)pb / unit * unit;
        if (b < unit) b = unit;
        memset(&lv[n], 0, sizeof lv[n]);
        lv[n].level = c[i].level;
        lv[n].bytes = cap;
        probe_bytes[n] = b;
        char s1[32], s2[32];
        fmt_bytes(s1, sizeof s1, (double)b / 3);
        fmt_bytes(s2, sizeof s2, (double)c[i].bytes);
        snprintf(lv[n].how, sizeof lv[n].how, "L%d: 3 x %s, %d thread%s (%d x %s)",
                 c[i].level, s1, threads, threads == 1 ? "" : "s", inst, s2);
        prev = cap;
        n++;
    }
    return n;
}

/* The access patterns a level is probed with. An op's bytes count every
 * read and every write once (gt_kcase_bytes), and the caches reward some
 * mixes more than others: a store to a line not yet in the cache first reads
 * it (write-allocate), which STREAM's triad pays and does not count, while an
 * in-place update (a gradient accumulation, an optimizer step) writes lines it
 * has just read and pays nothing extra; reads alone go faster still on some
 * levels. A level's figure is the best of the four, so that no op's pattern
 * beats its level's peak by being a different pattern. */
enum { PROBE_TRIAD, PROBE_UPDATE, PROBE_SCALE, PROBE_READ, PROBE_PATTERNS };
static const char *const probe_pattern_name[PROBE_PATTERNS] = {"triad", "update", "scale",
                                                               "read"};
/* bytes counted per element of one array and pass, in units of one double */
static const double probe_pattern_count[PROBE_PATTERNS] = {3.0, 5.0, 6.0, 3.0};

static void triad_range(double *restrict a, const double *restrict b, const double *restrict c,
                        size_t n, double s) {
    for (size_t i = 0; i < n; i++) a[i] = b[i] + s * c[i];
}

/* a += s b; c += b: b read, a and c read and written in place (5 counted) */
static void update_range(double *restrict a, const double *restrict b, double *restrict c,
                         size_t n, double s) {
    for (size_t i = 0; i < n; i++) {
        a[i] += s * b[i];
        c[i] += b[i];
    }
}

/* a, b and c each read and written in place (6 counted: adamw's params, m
 * and v are updated so) */
static void scale_range(double *restrict a, double *restrict b, double *restrict c, size_t n) {
    for (size_t i = 0; i < n; i++) {
        a[i] = 0.5 * a[i] + 1.0;
        b[i] = 0.5 * b[i] + 1.0;
        c[i] = 0.5 * c[i] + 1.0;
    }
}

/* the sum of a, b and c over 8 independent partial sums (vectorisable
 * without reassociating one chain) */
static double read_range(const double *restrict a, const double *restrict b,
                         const double *restrict c, size_t n) {
    double acc[8] = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) acc[k] += a[i + k] + b[i + k] + c[i + k];
    for (; i < n; i++) acc[0] += a[i] + b[i] + c[i];
    double t = 0;
    for (int k = 0; k < 8; k++) t += acc[k];
    return t;
}

/* Every thread of a region waits here until all `nt` have arrived, spinning
 * (yielding now and then, for a machine with fewer cores than threads), so
 * that the timed work starts together: a thread that slept between regions
 * (OMP_WAIT_POLICY=passive, as the tests run) wakes tens of microseconds
 * late, longer than an L1 sample lasts. */
static void probe_gate(atomic_int *arrived, int nt) {
    atomic_fetch_add(arrived, 1);
    for (unsigned spin = 1; atomic_load(arrived) < nt; spin++)
        if (spin % 1024 == 0) sched_yield();
}

/* This thread's part of n doubles: whole 64-byte lines, the same split in
 * every region of the same thread count (first touch and timed passes);
 * returns the region's thread count. */
static int probe_part(size_t n, size_t *lo, size_t *hi) {
    int t = 0, tn = 1;
#if GT_HAVE_OPENMP
    t = omp_get_thread_num();
    tn = omp_get_num_threads();
#endif
    size_t lines = (n + 7) / 8;
    *lo = lines * (size_t)t / (size_t)tn * 8;
    *hi = lines * (size_t)(t + 1) / (size_t)tn * 8;
    if (*hi > n) *hi = n;
    if (*lo > *hi) *lo = *hi;
    return tn;
}

/* One access pattern on a cache level (or main memory): three arrays of n
 * doubles split evenly over `nt` threads (whole cache lines each; the same
 * split as their first touch), every pass of a sample inside one parallel
 * region with no barrier between passes (each thread only ever touches its
 * own part), about 8 MiB moved per sample (short samples: on a shared
 * machine some catch every thread on a core; at least one pass); timed from
 * the first thread's start to the last one's end, all started together
 * (probe_gate); best of `reps` samples after a warm-up one, in GB/s counted
 * as the ops count (probe_pattern_count). */
#define PROBE_CACHE_MOVED ((double)(8 << 20))
static double probe_pattern(double *a, double *b, double *c, size_t n, int nt, int reps,
                            int pattern) {
    double counted = probe_pattern_count[pattern] * (double)(n * sizeof(double));
    long passes = (long)ceil(PROBE_CACHE_MOVED / counted);
    if (passes < 1) passes = 1;
    double sink = 0.0, best = 0.0;
    (void)nt;
    for (int r = -1; r < reps; r++) { /* r = -1: warm-up */
        atomic_int arrived;
        atomic_init(&arrived, 0);
        _Atomic uint64_t first = UINT64_MAX, last = 0;
#if GT_HAVE_OPENMP
#pragma omp parallel num_threads(nt) reduction(+ : sink)
#endif
        {
            size_t lo, hi;
            int tn = probe_part(n, &lo, &hi);
            probe_gate(&arrived, tn);
            uint64_t t0 = gt_now_ns();
            for (long p = 0; p < passes; p++) {
                if (pattern == PROBE_TRIAD)
                    triad_range(a + lo, b + lo, c + lo, hi - lo, (double)(p & 3));
                else if (pattern == PROBE_UPDATE)
                    update_range(a + lo, b + lo, c + lo, hi - lo, (double)(p & 3));
                else if (pattern == PROBE_SCALE)
                    scale_range(a + lo, b + lo, c + lo, hi - lo);
                else
                    sink += read_range(a + lo, b + lo, c + lo, hi - lo);
            }
            uint64_t t1 = gt_now_ns();
            if (hi > lo) sink += a[lo] + c[hi - 1];
            uint64_t f = atomic_load(&first), l = atomic_load(&last);
            while (t0 < f && !atomic_compare_exchange_weak(&first, &f, t0)) {}
            while (t1 > l && !atomic_compare_exchange_weak(&last, &l, t1)) {}
        }
        if (r < 0) continue;
        uint64_t t0 = atomic_load(&first), t1 = atomic_load(&last);
        double sec = t1 > t0 ? (double)(t1 - t0) * 1e-9 : 0.0;
        double gbps = sec > 0 ? counted * (double)passes / sec * 1e-9 : 0.0;
        if (gbps > best) best = gbps;
    }
    /* keep the results alive: every value summed is finite */
    return isfinite(sink) ? best : -1.0;
}

/* The best of the access patterns (probe_pattern) from `from` on, on
 * three arrays of bytes / 3 first touched by the threads that use them,
 * into *best, and the pattern that gave it into *which. */
static gt_status probe_level_bw(size_t bytes, int threads, int reps, int from, double *best,
                                const char **which) {
    size_t n = bytes / 3 / sizeof(double);
    int nt = 1;
#if GT_HAVE_OPENMP
    nt = threads > 0 ? threads : omp_get_max_threads();
#else
    (void)threads;
#endif
    if (n < 8) n = 8;
    size_t alloc = (n * sizeof(double) + 63) / 64 * 64;
    double *a = aligned_alloc(64, alloc), *b = aligned_alloc(64, alloc),
           *c = aligned_alloc(64, alloc);
    if (!a || !b || !c) {
        free(a);
        free(b);
        free(c);
        return GT_ERR(GT_ERR_OOM, "memory probe: no host memory for 3 x %zu bytes", alloc);
    }
#if GT_HAVE_OPENMP
#pragma omp parallel num_threads(nt)
#endif
    {
        size_t lo, hi;
        probe_part(n, &lo, &hi);
        for (size_t i = lo; i < hi; i++) {
            a[i] = 0.0;
            b[i] = 1.0;
            c[i] = 2.0;
        }
    }
    *best = 0.0;
    *which = probe_pattern_name[from];
    for (int p = from; p < PROBE_PATTERNS; p++) {
        double g = probe_pattern(a, b, c, n, nt, reps, p);
        if (g > *best) {
            *best = g;
            *which = probe_pattern_name[p];
        }
    }
    free(a);
    free(b);
    free(c);
    return GT_OK;
}

#define PROBE_LEVEL_REPS 15
static struct {
    char name[16];
    int threads;
    int n;
    gt_probe_level lv[GT_PROBE_MAX_LEVELS];
} level_cache[PROBE_CACHE];
static int level_cached;

static double best_of(const double *x, int n) {
    double b = 0.0;
    for (int i = 0; i < n; i++)
        if (x[i] > b) b = x[i];
    return b;
}

/* The levels of a device backend (see probe.h). */
static gt_status device_levels(gt_backend *be, gt_probe_level *lv, int *n) {
    char name[160] = "";
    double l2 = datasheet_name(be, name, sizeof name) ? gt_probe_datasheet_l2_bytes(name) : 0.0;
    size_t bytes = l2 > 0.0 ? (size_t)(l2 / 4) : (size_t)2 << 20;
    double s[5], med = 0.0;
    GT_TRY(gt_probe_copy(be, bytes, 5, s, &med));
    gt_allocator_trim(be->alloc);
    char b1[32], b2[32];
    fmt_bytes(b1, sizeof b1, (double)(bytes & ~(size_t)3));
    fmt_bytes(b2, sizeof b2, l2);
    lv[0].level = 2;
    lv[0].bytes = l2;
    lv[0].gbps = best_of(s, 5);
    if (l2 > 0.0)
        snprintf(lv[0].how, sizeof lv[0].how, "L2: device copy %s, hot, best of 5 (L2 %s, %s)",
                 b1, b2, name);
    else
        snprintf(lv[0].how, sizeof lv[0].how,
                 "L2: device copy %s, hot, best of 5 (L2 size unknown: holds every working set)",
                 b1);
    *n = 1;
    return GT_OK;
}

/* The levels of gt_probe_levels_get, measured: l[GT_PROBE_MAX_LEVELS] zeroed. */
static gt_status measure_levels(gt_backend *be, gt_probe_level *l, int *nk) {
    gt_probe_peaks pk;
    GT_TRY(gt_probe_peaks_get(be, &pk));
    int k = 0;
    int threads = be->threads > 0 ? be->threads : 1;
    double mem_gbps = 0.0; /* host: the other patterns on the memory triad's sizes */
    const char *mem_which = "";
    if (be->device == GT_DEVICE_HOST) {
        gt_probe_cache c[GT_PROBE_MAX_LEVELS - 1];
        size_t pb[GT_PROBE_MAX_LEVELS - 1];
        int nc = gt_probe_host_caches(NULL, c, GT_PROBE_MAX_LEVELS - 1);
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        k = gt_probe_host_plan(c, nc, threads, ncpu > 0 ? (int)ncpu : threads, l, pb,
                               GT_PROBE_MAX_LEVELS - 1);
        for (int i = 0; i < k; i++) {
            const char *which = "";
            GT_TRY(probe_level_bw(pb[i], threads, PROBE_LEVEL_REPS, PROBE_TRIAD, &l[i].gbps,
                                  &which));
            size_t used = strlen(l[i].how);
            snprintf(l[i].how + used, sizeof l[i].how - used,
                     ", best of %d of triad, update, scale, read: %s", PROBE_LEVEL_REPS, which);
        }
        /* main memory: the triad is measured (gt_probe_peaks_get), the rest here */
        GT_TRY(probe_level_bw((size_t)3 * (GT_PROBE_MEM_TRIAD_BYTES), threads, 5, PROBE_UPDATE,
                              &mem_gbps, &mem_which));
    } else {
        GT_TRY(device_levels(be, l, &k));
    }
    l[k].level = 0;
    l[k].bytes = 0.0;
    l[k].gbps = pk.mem_best_gbps;
    snprintf(l[k].how, sizeof l[k].how, "memory: %s, best of 5", pk.mem_how);
    if (mem_gbps > l[k].gbps) {
        l[k].gbps = mem_gbps;
        snprintf(l[k].how, sizeof l[k].how,
                 "memory: 3 x %d MiB, %d thread%s, best of 5 of triad, update, scale, read: %s",
                 (int)((GT_PROBE_MEM_TRIAD_BYTES) >> 20), threads, threads == 1 ? "" : "s",
                 mem_which);
    }
    k++;
    *nk = k;
    return GT_OK;
}

gt_status gt_probe_levels_get(gt_backend *be, gt_probe_level *lv, int *n) {
    *n = 0;
    for (int i = 0; i < level_cached; i++)
        if (!strcmp(level_cache[i].name, be->name) && level_cache[i].threads == be->threads) {
            memcpy(lv, level_cache[i].lv, sizeof level_cache[i].lv);
            *n = level_cache[i].n;
            return GT_OK;
        }
    gt_probe_level l[GT_PROBE_MAX_LEVELS];
    memset(l, 0, sizeof l);
    int k = 0;
    if (!gt_probe_cache_load_levels(be, l, &k)) {
        GT_TRY(measure_levels(be, l, &k));
        gt_probe_cache_store_levels(be, l, k);
    }
    if (level_cached < PROBE_CACHE) {
        snprintf(level_cache[level_cached].name, sizeof level_cache[0].name, "%s", be->name);
        level_cache[level_cached].threads = be->threads;
        level_cache[level_cached].n = k;
        memcpy(level_cache[level_cached].lv, l, sizeof l);
        level_cached++;
    }
    memcpy(lv, l, sizeof l);
    *n = k;
    return GT_OK;
}
