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

/* The compute peaks of `be` (cpu: FMA loop on every thread, SGEMM n=2048
 * through ops->matmul_fwd, median of 5; device backends: the SGEMM only).
 * Takes a few seconds. */
gt_status gt_probe_measure_peaks(gt_backend *be, gt_peaks *out);

/* The SGEMM probe alone (out->sgemm_*, out->seconds; fma_gflops 0): one
 * warm-up and `reps` timed GEMMs (1 <= reps <= 5), their median. A training
 * run takes its MFU reference from 3, before its first step. */
gt_status gt_probe_measure_sgemm(gt_backend *be, int reps, gt_peaks *out);

/* The peaks of `be`, measured the first time they are asked for in this
 * process (keyed by backend name and thread count) and remembered:
 * gt_probe_measure_peaks, and the memory bandwidth of the backend's memory
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
/* each of the host memory triad's three arrays */
#define GT_PROBE_MEM_TRIAD_BYTES ((size_t)64 << 20)
typedef struct gt_probe_peaks {
    gt_peaks peaks;
    double mem_gbps;      /* median of the samples */
    double mem_best_gbps; /* best sample: the main-memory level of gt_probe_levels_get */
    const char *mem_how; /* "host triad, 3 x 64 MiB" / "device copy, 512 MiB, ..." (static) */
} gt_probe_peaks;
gt_status gt_probe_peaks_get(gt_backend *be, gt_probe_peaks *out);
/* The same, measured in this process whatever GT_PROBE_CACHE holds (the
 * health suite, whose results are these measurements); remembered as
 * gt_probe_peaks_get's are, and written to the cache only when it had none. */
gt_status gt_probe_peaks_fresh(gt_backend *be, gt_probe_peaks *out);

/* ---- Probe cache ------------------------------------------------------------
 * GT_PROBE_CACHE=FILE keeps a host backend's peaks (gt_probe_peaks_get) and
 * memory levels (gt_probe_levels_get) in FILE, keyed by the backend, its
 * threads, the online CPUs and the CPU model: the first process measures and
 * writes them, later ones read them instead of spending a second or two on
 * the probes (the tests set it: CMakeLists.txt, GT_TEST_ENV); a set once
 * written is never replaced (delete the file to measure again). What the
 * cache gave says so ("from GT_PROBE_CACHE" in the figures' how). Device
 * backends never use it. A load returns 1 when a complete set was read. */
int gt_probe_cache_load_peaks(const gt_backend *be, gt_probe_peaks *out);
void gt_probe_cache_store_peaks(const gt_backend *be, const gt_probe_peaks *p);

/* ---- the memory hierarchy ------------------------------------------------------
 * A kernel whose operands stay in a cache between calls moves its bytes at
 * that cache's speed, not main memory's: its fraction of peak is judged
 * against the level its working set fits in (docs/suites.md, "Peaks"). */
#define GT_PROBE_MAX_LEVELS 5
typedef struct gt_probe_level {
    int level;    /* 1, 2, 3: that cache; 0: main memory (beyond the last cache) */
    double bytes; /* capacity for one op's working set on the backend: a cache's size x
                     the instances of it the backend's threads use; 0: unbounded */
    double gbps;  /* the level's own figure: best sample of its probe */
    char how[128]; /* "L2: 3 x 64 KiB, 2 threads (2 x 2 MiB), best of 15 of triad, ...: read" */
} gt_probe_level;

/* The level a working set of `ws_bytes` is judged against: the index of
 * the first level (lv[] in growing capacity) whose capacity holds it, the
 * last when none does or when ws_bytes is not positive or finite. A
 * level with bytes 0 holds everything. *gbps (optional) gets that level's
 * peak: the best figure of it and of every level after it (a working set
 * that fits a cache can always go at least as fast as one that does not,
 * so a noisy probe never gives a smaller level a lower bound). -1 (and
 * *gbps 0) when n <= 0. */
int gt_probe_level_pick(const gt_probe_level *lv, int n, double ws_bytes, double *gbps);

/* One data (or unified) cache of the host as cpu0 sees it. */
typedef struct gt_probe_cache {
    int level;     /* 1, 2, 3 */
    size_t bytes;  /* size of one instance */
    int shared_by; /* cpus that share one instance (1: private) */
} gt_probe_cache;

/* The host's data caches, innermost first, at most `max`: from
 * `sysfs_dir` (NULL: /sys/devices/system/cpu/cpu0/cache; its index*
 * folders' level, type, size, shared_cpu_list), else from
 * sysconf(_SC_LEVEL1_DCACHE_SIZE ..) with L1 and L2 taken as private and L3
 * as shared by every online cpu (sysconf only when sysfs_dir is NULL).
 * Returns how many were found (0: neither told). */
int gt_probe_host_caches(const char *sysfs_dir, gt_probe_cache *out, int max);

/* The cache levels of a host backend with `threads` threads on `ncpu`
 * online cpus: lv[i].level and lv[i].bytes = size x the instances the
 * threads use (ceil(threads / shared_by), at most ceil(ncpu / shared_by));
 * probe_bytes[i]: the bytes of the three triad arrays that probe level i,
 * at the small end of the level (half its capacity, at most 2 x the
 * previous level's) where it is fastest, since its figure must bound every
 * working set in it. Levels that would not grow the capacity are dropped.
 * Returns the levels filled (at most max); no main-memory level. */
int gt_probe_host_plan(const gt_probe_cache *c, int nc, int threads, int ncpu, gt_probe_level *lv,
                       size_t *probe_bytes, int max);

/* The memory levels of `be` with their figures, measured on first need
 * per process and backend (name, threads) and remembered; *n levels
 * in lv[GT_PROBE_MAX_LEVELS], the last main memory (bytes 0):
 *   host backends: each cache of gt_probe_host_caches / gt_probe_host_plan
 *     with a triad of its probe size on the backend's threads (every pass
 *     inside one parallel region, so no fork/join per pass; about 8 MiB
 *     moved per sample; best of 15 after a warm-up: a few ms in all), then
 *     main memory: the best sample of gt_probe_peaks_get's triad;
 *   device backends (cuda): L2 with the capacity of the GPU's L2 by name
 *     (gt_probe_datasheet_l2_bytes; unknown: 0, i.e. it holds every working
 *     set), its figure a gt_probe_copy of a quarter of it (2 MiB when
 *     unknown) whose buffers stay in L2 (best of 5), then main memory: the
 *     best sample of gt_probe_peaks_get's copy. */
gt_status gt_probe_levels_get(gt_backend *be, gt_probe_level *lv, int *n);
/* The probe cache's levels (see "Probe cache" above). */
int gt_probe_cache_load_levels(const gt_backend *be, gt_probe_level *lv, int *n);
void gt_probe_cache_store_levels(const gt_backend *be, const gt_probe_level *lv, int n);

/* The compute peak that an op of storage dtype `dt` is judged against, in
 * GFLOP/s, measured once per process per backend (name, threads) and dtype:
 *   host backends (no device timers): the SGEMM probe of
 *     gt_probe_measure_peaks (n = 2048, fp32), for fp32 only;
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

/* The L2 size in bytes of the GPU named `gpu_name` ("NVIDIA H100 80GB
 * HBM3"), from the same datasheet table; 0 when it is not there. */
double gt_probe_datasheet_l2_bytes(const char *gpu_name);

/* Median of x[0..n) (x is sorted in place); 0 for n == 0. */
double gt_probe_median(double *x, size_t n);
/* Sample standard deviation / mean; 0 for n < 2 or mean 0. */
double gt_probe_rsd(const double *x, size_t n);

#ifdef __cplusplus
}
#endif
#endif
