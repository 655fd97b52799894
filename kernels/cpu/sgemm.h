/* SGEMM entry points of the cpu backend, exported for tests and benchmarks.
 *
 * Row-major: C(M,N) = beta * C + op(A)(M,K) @ op(B)(K,N) [+ bias(N) per row]
 *   ta == 0: A is (M,K), A[m*lda + k];  ta == 1: A is (K,M), A[k*lda + m]
 *   tb == 0: B is (K,N), B[k*ldb + n];  tb == 1: B is (N,K), B[n*ldb + k]
 * beta is 0 (C is overwritten, may hold NaN) or any other value (scaled).
 * bias may be NULL. Each C element is summed in one fixed order whatever the
 * thread count. */
#ifndef GT_KERNELS_CPU_SGEMM_H
#define GT_KERNELS_CPU_SGEMM_H

#include "engine/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* gauntlet's own cache-blocked, register-tiled kernel (OpenMP over tiles). */
gt_status gt_cpu_sgemm_blocked(int ta, int tb, int M, int N, int K, const float *A, int lda,
                               const float *B, int ldb, float beta, float *C, int ldc,
                               const float *bias);
/* What the cpu ops call. Built with BLAS: C is cut into the grid of
 * gt_cpu_gemm_grid, a function of (M, N, K) only, and each tile is one
 * cblas_sgemm over the whole K on one thread (OpenBLAS's own threads are
 * set to 1), the tiles shared among the OpenMP threads: every C element
 * comes from the same call, hence the same operations, whatever the thread
 * count, and whatever kernel the BLAS picked (OPENBLAS_CORETYPE, version)
 * it is that kernel's single-threaded result. The bias is added by
 * prefilling C. Without BLAS: gt_cpu_sgemm_blocked. */
gt_status gt_cpu_sgemm(int ta, int tb, int M, int N, int K, const float *A, int lda,
                       const float *B, int ldb, float beta, float *C, int ldc, const float *bias);
/* The tile grid of a BLAS GEMM of C(M,N) with depth K: *mb row blocks x
 * *nb column blocks of equal size (the last ones shorter). Depends on the
 * shape only, never on the thread count. */
void gt_cpu_gemm_grid(int M, int N, int K, int *mb, int *nb);
/* The own kernel's register tile and instruction set, e.g. "8x32 tile,
 * AVX-512" (static). */
const char *gt_cpu_sgemm_tile(void);
/* Decides once per process whether gt_cpu_sgemm goes through BLAS: yes when
 * built with it, unless GT_CPU_GEMM=own, or OpenBLAS guessed a core without
 * AVX kernels for this CPU (OPENBLAS_CORETYPE unset) while the own kernel
 * was compiled for AVX2 or AVX-512; GT_CPU_GEMM=blas keeps BLAS.
 * GT_ERR_INVALID for any other GT_CPU_GEMM value. Called by the cpu
 * backend's constructor (not thread-safe before that). */
gt_status gt_cpu_sgemm_select(void);
/* 1 when gt_cpu_sgemm goes through BLAS. */
int gt_cpu_sgemm_uses_blas(void);
/* Why: "OpenBLAS SkylakeX kernels", "GT_CPU_GEMM=own", ... (static). */
const char *gt_cpu_sgemm_choice(void);

#ifdef __cplusplus
}
#endif
#endif
