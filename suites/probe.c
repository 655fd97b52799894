/* Machine probes (suites/probe.h). */
#include "suites/probe.h"

#include "engine/stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

gt_status gt_probe_copy(gt_backend *be, size_t bytes, int reps, double *samples, double *gbps) {
    void *src = NULL, *dst = NULL;
    double *s = malloc((size_t)reps * sizeof *s);
    gt_status st = s ? GT_OK : GT_ERR(GT_ERR_OOM, "no host memory");
    if (st == GT_OK) st = gt_backend_alloc(be, bytes, &src);
    if (st == GT_OK) st = gt_backend_alloc(be, bytes, &dst);
    if (st == GT_OK) st = be->memset_zero(be, src, bytes);
    for (int r = -1; st == GT_OK && r < reps; r++) {
        uint64_t t0 = gt_now_ns();
        st = be->copy_device(be, dst, src, bytes);
        if (st == GT_OK) st = be->synchronize(be);
        double sec = (double)(gt_now_ns() - t0) * 1e-9;
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

/* A handful of backends per process at most (ref, cpu, cuda; thread counts). */
#define PROBE_CACHE 8
static struct {
    char name[16];
    int threads;
    gt_probe_peaks p;
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
        p.mem_how = "device copy, 256 MiB";
        s = gt_probe_copy(be, (size_t)256 << 20, 5, NULL, &p.mem_gbps);
    }
    if (s != GT_OK) return s;
    if (probe_cached < PROBE_CACHE) {
        snprintf(probe_cache[probe_cached].name, sizeof probe_cache[0].name, "%s", be->name);
        probe_cache[probe_cached].threads = be->threads;
        probe_cache[probe_cached].p = p;
        probe_cached++;
    }
    *out = p;
    return GT_OK;
}
