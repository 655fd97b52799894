/* Machine probes shared by the kernels and health suites: the peaks that
 * kernel figures are judged against (fraction_of_peak), measured once per
 * process per backend, and the statistics of timing samples.
 *
 * Not part of the suite interface: include only from suites/. */
#ifndef GT_SUITES_PROBE_H
#define GT_SUITES_PROBE_H

#include <stddef.h>

#include "engine/backend.h"
#include "engine/env.h"
#include "engine/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* STREAM triad a[i] = b[i] + s c[i] on host memory with OpenMP (`threads`
 * threads, 0: the OpenMP default) over three arrays of `bytes` each (choose
 * well beyond the last-level cache). Fills samples[reps] in GB/s (3 x bytes
 * per pass, STREAM's count: no write-allocate) and returns the median in
 * *gbps. GT_ERR_OOM when the arrays cannot be had. */
gt_status gt_probe_triad(size_t bytes, int threads, int reps, double *samples, double *gbps);

/* Device-to-device copy of `bytes` through be->copy_device (read + write:
 * 2 x bytes per copy), median of `reps` in *gbps, samples optional. */
gt_status gt_probe_copy(gt_backend *be, size_t bytes, int reps, double *samples, double *gbps);

/* The peaks of `be`, measured the first time they are asked for in this
 * process (keyed by backend name and thread count) and remembered:
 * gt_env_measure_peaks, and the memory bandwidth of the backend's memory
 * (triad with be->threads threads for host backends, copy_device
 * otherwise). */
typedef struct gt_probe_peaks {
    gt_peaks peaks;
    double mem_gbps;
    const char *mem_how; /* "host triad, 3 x 64 MiB" / "device copy, 256 MiB" (static) */
} gt_probe_peaks;
gt_status gt_probe_peaks_get(gt_backend *be, gt_probe_peaks *out);

/* Median of x[0..n) (x is sorted in place); 0 for n == 0. */
double gt_probe_median(double *x, size_t n);
/* Sample standard deviation / mean; 0 for n < 2 or mean 0. */
double gt_probe_rsd(const double *x, size_t n);

#ifdef __cplusplus
}
#endif
#endif
