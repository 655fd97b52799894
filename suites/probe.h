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
#include "gt_config.h"

#ifdef __cplusplus
extern "C" {
#endif

/* STREAM triad a[i] = b[i] + s c[i] on host memory with OpenMP (`threads`
 * threads, 0: the OpenMP default) over three arrays of `bytes` each (choose
 * well beyond the last-level cache). Fills samples[reps] in GB/s (3 x bytes
 * per pass, STREAM's count: no write-allocate) and returns the median in
 * *gbps. GT_ERR_OOM when the arrays cannot be had. */
gt_status gt_probe_triad(size_t bytes, int threads, int reps, double *samples, double *gbps);

/* Device-to-device copy of `bytes` (read + write: 2 x bytes per copy),
 * median of `reps` samples in *gbps, samples optional. With device timers
 * (be->timer_start: cuda) a sample is GT_PROBE_COPY_BATCH copies queued
 * through the backend's cast op between equal dtypes (an asynchronous
 * device copy, cudaMemcpyAsync on cuda) between the backend's timer marks,
 * so neither the host nor a synchronisation is in the interval; a backend
 * without a cast op falls back to copy_device inside the marks (then the
 * wait for each copy adds its wake-up latency). Without device timers:
 * copy_device and the host clock. One unsampled warm-up first. */
#define GT_PROBE_COPY_BATCH 4
gt_status gt_probe_copy(gt_backend *be, size_t bytes, int reps, double *samples, double *gbps);

/* The peaks of `be`, measured the first time they are asked for in this
 * process (keyed by backend name and thread count) and remembered:
 * gt_env_measure_peaks, and the memory bandwidth of the backend's memory
 * (triad with be->threads threads for host backends, gt_probe_copy of
 * GT_PROBE_COPY_BYTES otherwise, whose buffers are then given back to the
 * device with gt_allocator_trim, which also releases every other cached
 * free block of the backend's allocator). */
#if GT_CUDA_EMULATOR
/* the emulated device's memory is host memory: 64 MiB tells as much */
#define GT_PROBE_COPY_BYTES ((size_t)64 << 20)
#define GT_PROBE_COPY_DESC "64 MiB"
#else
#define GT_PROBE_COPY_BYTES ((size_t)512 << 20)
#define GT_PROBE_COPY_DESC "512 MiB"
#endif
typedef struct gt_probe_peaks {
    gt_peaks peaks;
    double mem_gbps;
    const char *mem_how; /* "host triad, 3 x 64 MiB" / "device copy, 512 MiB, ..." (static) */
} gt_probe_peaks;
gt_status gt_probe_peaks_get(gt_backend *be, gt_probe_peaks *out);

/* The compute peak that an op of storage dtype `dt` is judged against, in
 * GFLOP/s, measured once per process per backend (name, threads) and dtype:
 *   host backends (no device timers): the SGEMM probe of
 *     gt_env_measure_peaks (n = 2048, fp32), for fp32 only;
 *   device backends: one n x n x n GEMM (n = GT_PROBE_GEMM_N) through
 *     be->ops->matmul_fwd in `dt` (the path the ops and training use: the
 *     bf16 peak for bf16 ops, true fp32 for fp32), timed with the backend's
 *     timer marks, median of GT_PROBE_GEMM_REPS after 2 warm-up calls;
 *     the memory (3 n^2 elements) is given back to the device afterwards
 *     (gt_allocator_trim, as above).
 * *how (optional) gets a static description. GT_ERR_UNSUPPORTED when the
 * backend has no matmul_fwd or declines dt (host backends: any dtype but
 * fp32); GT_ERR_OOM when the matrices do not fit. */
#if GT_CUDA_EMULATOR
/* the emulated device's GEMM is a loop on one CPU core: 8192^3 would take
 * hours (docs/cuda-emulator.md; its figures mean nothing anyway) */
#define GT_PROBE_GEMM_N 256
#else
#define GT_PROBE_GEMM_N 8192
#endif
#define GT_PROBE_GEMM_REPS 5
gt_status gt_probe_gemm_peak(gt_backend *be, gt_dtype dt, double *gflops, const char **how);

/* The dense (no sparsity) datasheet peak in GFLOP/s of the GPU behind a
 * cuda backend for matmuls in `dt` (bf16/fp16: tensor cores; fp32: the
 * CUDA-core FMA rate, as our fp32 GEMMs use no TF32), from the GPU name in
 * be->describe(). 0 when the backend is not cuda or the GPU is not in the
 * table (H100 SXM/PCIe/NVL, H200, GH200, A100, L40S, A10). For MFU as
 * papers quote it, next to the measured-GEMM reference. */
double gt_probe_datasheet_gflops(gt_backend *be, gt_dtype dt);

/* Median of x[0..n) (x is sorted in place); 0 for n == 0. */
double gt_probe_median(double *x, size_t n);
/* Sample standard deviation / mean; 0 for n < 2 or mean 0. */
double gt_probe_rsd(const double *x, size_t n);

#ifdef __cplusplus
}
#endif
#endif
