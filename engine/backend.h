/* The backend interface: a table of functions that every backend fills
 * (ref, cpu, cuda), plus its op table (engine/ops.h).
 *
 * A backend owns one caching allocator (engine/alloc.h) for its memory;
 * "device memory" below means memory of that backend (host memory for ref
 * and cpu). The backends themselves live in kernels/ and are created by
 * name there (gt_backend_new, kernels/registry.h); a backend that is not
 * compiled in, or has no device here, returns GT_ERR_UNSUPPORTED with a
 * message saying why, never a link error.
 */
#ifndef GT_BACKEND_H
#define GT_BACKEND_H

#include <stddef.h>

#include "engine/alloc.h"
#include "engine/dtype.h"
#include "engine/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gt_device_kind {
    GT_DEVICE_HOST = 0,
    GT_DEVICE_CUDA,
    GT_DEVICE_KIND_COUNT
} gt_device_kind;

typedef struct gt_ops gt_ops;
typedef struct gt_backend gt_backend;

typedef struct gt_backend_config {
    int threads; /* cpu: OpenMP threads (0: OMP default / all cores) */
    int device;  /* cuda: device ordinal (-1: the one local to this rank) */
} gt_backend_config;

struct gt_backend {
    const char *name;       /* "ref", "cpu", "cuda" */
    gt_device_kind device;  /* where its memory lives */
    int threads;            /* threads in use (cpu), 1 for ref */
    const gt_ops *ops;      /* never NULL; empty slots mean unsupported */
    gt_allocator *alloc;    /* owned */

    /* Copies between host and backend memory, and within the backend.
     * Synchronous with respect to the host. */
    gt_status (*copy_to_device)(gt_backend *be, void *dst, const void *src_host, size_t bytes);
    gt_status (*copy_to_host)(gt_backend *be, void *dst_host, const void *src, size_t bytes);
    gt_status (*copy_device)(gt_backend *be, void *dst, const void *src, size_t bytes);
    gt_status (*memset_zero)(gt_backend *be, void *dst, size_t bytes);
    /* Waits for all queued work. */
    gt_status (*synchronize)(gt_backend *be);
    /* One-line description for reports ("cpu: 2 threads, OpenBLAS 0.3.21"). */
    const char *(*describe)(gt_backend *be);
    /* Device-side timing, for backends whose ops run asynchronously (cuda;
     * NULL on host backends, where the host clock is the truth).
     * timer_start queues a start mark on the backend's stream and returns a
     * token; timer_stop queues the end mark, waits for it and returns the
     * seconds between the marks (device time, CUDA events) and frees the
     * token. */
    gt_status (*timer_start)(gt_backend *be, void **token);
    gt_status (*timer_stop)(gt_backend *be, void *token, double *seconds);
    /* Evicts the device's last-level cache (writes a buffer larger than L2)
     * so the next op runs cold; NULL where not applicable. Queued like an
     * op. */
    gt_status (*flush_cache)(gt_backend *be);
    /* Choices the backend made at run time, one per line ("conv2d_fwd
     * N8 C16 H32 W32 OC32 K3 s1 p1: cudnn IMPLICIT_PRECOMP_GEMM", "attention:
     * cudnn sdpa"), for reports; NULL or "" when there are none. The string
     * stays valid until the next op on the backend. */
    const char *(*notes)(gt_backend *be);
    /* Optional (NULL: no GEMM library to ask). The GEMM library's own best
     * time for the GEMM of ops->matmul_fwd(dt, out, inp, weight, bias, N,
     * C, OC): every algorithm the library offers for the same problem
     * (types, layouts, the bias epilogue, the pointers' alignment) timed on
     * the device, each as a median per call; *best_s gets the fastest, and
     * what (what_len bytes) says what was searched (cuda: "cuBLASLt bf16
     * m=.. n=.. k=.. epilogue BIAS: 12 algorithms timed, the fastest the
     * heuristic's #3"). Writes out. The kernels suite sets matmul_fwd
     * against it (fraction_of_library_best). */
    gt_status (*gemm_library_best)(gt_backend *be, gt_dtype dt, void *out, const void *inp,
                                   const void *weight, const void *bias, int N, int C, int OC,
                                   double *best_s, char *what, size_t what_len);
    /* Profiling marks (engine/profile.h), optional (NULL on host backends,
     * whose ops are timed with the host clock). mark_new makes a reusable
     * mark (a CUDA event); mark_record queues it on the backend's stream
     * and returns at once (no synchronisation); mark_elapsed gives the
     * seconds between two marks recorded earlier, both already passed
     * (call it after a synchronize); mark_free frees one (NULL ignored). */
    gt_status (*mark_new)(gt_backend *be, void **mark);
    gt_status (*mark_record)(gt_backend *be, void *mark);
    gt_status (*mark_elapsed)(gt_backend *be, void *a, void *b, double *seconds);
    void (*mark_free)(gt_backend *be, void *mark);
    /* Named ranges for an external profiler (cuda: NVTX push and pop, so that
     * nsys shows gauntlet's op names); optional, NULL where there is none. */
    void (*range_push)(gt_backend *be, const char *name);
    void (*range_pop)(gt_backend *be);
    /* Frees impl (not alloc, not the struct). */
    void (*destroy)(gt_backend *be);
    void *impl;
    /* The profiler wrapping ops (engine/profile.h), NULL when none; owned by
     * whoever made it (gt_profile_new sets it, gt_profile_free clears it). */
    struct gt_profile *profile;
};

/* Frees a backend made by gt_backend_new (kernels/registry.h). Accepts
 * NULL. */
void gt_backend_free(gt_backend *be);

/* Allocation through the backend's caching allocator. */
gt_status gt_backend_alloc(gt_backend *be, size_t bytes, void **out);
/* As gt_backend_alloc, the block zeroed: by the backend's memset_zero unless
 * the allocator knows it was never written since the system gave it zeroed
 * (host memory from mmap: its pages are then not touched here). */
gt_status gt_backend_alloc_zeroed(gt_backend *be, size_t bytes, void **out);
void gt_backend_dealloc(gt_backend *be, void *p);

/* Shared by backends whose memory is host memory (ref, cpu). */
gt_status gt_host_backend_init(gt_backend *be, const char *name, const gt_ops *ops);

#ifdef __cplusplus
}
#endif
#endif
