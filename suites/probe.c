/* Machine probes (suites/probe.h). */
#include "suites/probe.h"

#include "engine/stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/timer.h"
#include "gt_config.h"
#include "kernels/ops.h"

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

/* A handful of backends per process at most (ref, cpu, cuda; thread counts). */
#define PROBE_CACHE 8
static struct {
    char name[16];
    int threads;
    gt_probe_peaks p;
    double gemm[GT_DTYPE_COUNT]; /* gt_probe_gemm_peak, device backends; 0: not yet */
} probe_cache[PROBE_CACHE];
static int probe_cached;

gt_status gt_probe_peaks_get(gt_backend *be, gt_probe_peaks *out) {
    for (int i = 0; i < probe_cached; i++)
        if (!strcmp(probe_cache[i].name, be->name) && probe_cache[i].threads == be->threads) {
            *out = probe_cache[i].p;
            return GT_OK;
        }
    gt_probe_peaks p;
    memset(&p, 0, sizeof p);
    gt_status s = gt_env_measure_peaks(be, &p.peaks);
    if (s != GT_OK) return s;
    if (be->device == GT_DEVICE_HOST) {
        p.mem_how = "host triad, 3 x 64 MiB";
        s = gt_probe_triad((size_t)64 << 20, be->threads, 5, NULL, &p.mem_gbps);
    } else {
        p.mem_how = be->timer_start ? "device copy, " GT_PROBE_COPY_DESC
                                      ", 4 per sample between device timer marks"
                                    : "device copy, " GT_PROBE_COPY_DESC ", host clock";
        s = gt_probe_copy(be, GT_PROBE_COPY_BYTES, 5, NULL, &p.mem_gbps);
        gt_allocator_trim(be->alloc); /* the 2 copy buffers need not stay reserved */
    }
    if (s != GT_OK) return s;
    if (probe_cached < PROBE_CACHE) {
        snprintf(probe_cache[probe_cached].name, sizeof probe_cache[0].name, "%s", be->name);
        probe_cache[probe_cached].threads = be->threads;
        probe_cache[probe_cached].p = p;
        memset(probe_cache[probe_cached].gemm, 0, sizeof probe_cache[0].gemm);
        probe_cached++;
    }
    *out = p;
    return GT_OK;
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
        *gflops = p.peaks.sgemm_gflops;
        if (how) *how = "SGEMM n=2048 through matmul_fwd, host clock, median of 5";
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
    double tf16; /* bf16 / fp16 tensor core */
    double tf32; /* fp32 FMA (CUDA cores) */
} datasheet_gpu;

static const datasheet_gpu g_datasheet[] = {
    {"H100", "PCIe", 756.5, 51.2},
    {"H100", "NVL", 835.5, 60.0},
    {"H100", NULL, 989.4, 66.9}, /* SXM5 ("NVIDIA H100 80GB HBM3") */
    {"GH200", NULL, 989.4, 66.9},
    {"H200", NULL, 989.4, 66.9},
    {"H800", NULL, 989.4, 66.9},
    {"A100", NULL, 312.0, 19.5},
    {"A800", NULL, 312.0, 19.5},
    {"L40S", NULL, 362.05, 91.6},
    {"A10", NULL, 125.0, 31.2},
};

double gt_probe_datasheet_gflops(gt_backend *be, gt_dtype dt) {
    if (!be || be->device != GT_DEVICE_CUDA || !be->describe) return 0.0;
    const char *desc = be->describe(be); /* "cuda: NVIDIA H100 80GB HBM3, sm_90, ..." */
    if (!desc) return 0.0;
    char name[160];
    const char *p = strstr(desc, "cuda: ");
    p = p ? p + 6 : desc;
    size_t n = strcspn(p, ",");
    if (n >= sizeof name) n = sizeof name - 1;
    memcpy(name, p, n);
    name[n] = '\0';
    for (size_t i = 0; i < sizeof g_datasheet / sizeof g_datasheet[0]; i++) {
        const datasheet_gpu *g = &g_datasheet[i];
        if (!strstr(name, g->key1) || (g->key2 && !strstr(name, g->key2))) continue;
        if (dt == GT_DTYPE_BF16 || dt == GT_DTYPE_FP16) return g->tf16 * 1e3;
        if (dt == GT_DTYPE_FP32) return g->tf32 * 1e3;
        return 0.0;
    }
    return 0.0;
}
