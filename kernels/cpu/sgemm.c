/* SGEMM for the cpu backend: C(M,N) = beta*C + op(A) op(B) [+ bias].
 *
 * Variants: cblas_sgemm (OpenBLAS) when the build has BLAS, and gauntlet's
 * own kernel, always built and tested: Goto-style blocking (KC x NC panels of
 * B and MC x KC blocks of A packed into MR/NR slivers so the micro-kernel
 * streams both with unit stride), an MR x NR = 8 x 16 register tile written
 * as plain fmaf loops that gcc -O3 -march=native turns into FMA vectors,
 * OpenMP over (MC, NC) tiles of C. Bound: the FMA peak of the cores
 * (2 x 16 fp32 FMA lanes per cycle per core with AVX-512, 2 x 8 with AVX2);
 * the own kernel is expected to reach a good fraction, not OpenBLAS.
 *
 * Each C element is summed over k in increasing order (KC blocks in order),
 * by exactly one thread: bitwise identical for any thread count. */
#include "kernels/cpu/sgemm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gt_config.h"

#ifdef _OPENMP
#include <omp.h>
#endif
#if GT_HAVE_BLAS
#include <cblas.h>
#endif

#define MR 8
#define NR 16
#define MC 64  /* multiple of MR: an A block (MC x KC) stays in L2 */
#define NC 512 /* multiple of NR: a B panel (KC x NC) stays in L2/L3 */
#define KC 256 /* a B sliver (KC x NR) stays in L1 */

/* Ap[s][p][i] = op(A)(i0 + s*MR + i, p0 + p), zero beyond mc. */
static void pack_a(int ta, const float *A, int lda, int i0, int mc, int p0, int kc, float *Ap) {
    for (int s = 0; s < mc; s += MR) {
        int mr = mc - s < MR ? mc - s : MR;
        float *dst = Ap + (size_t)s * kc;
        for (int p = 0; p < kc; p++) {
            for (int i = 0; i < MR; i++) {
                float val = 0.0f;
                if (i < mr) {
                    size_t r = (size_t)(i0 + s + i), c = (size_t)(p0 + p);
                    val = ta ? A[c * lda + r] : A[r * lda + c];
                }
                dst[(size_t)p * MR + i] = val;
            }
        }
    }
}

/* Bp[s][p][j] = op(B)(p0 + p, j0 + s*NR + j), zero beyond nc. */
static void pack_b(int tb, const float *B, int ldb, int p0, int kc, int j0, int nc, float *Bp) {
    for (int s = 0; s < nc; s += NR) {
        int nr = nc - s < NR ? nc - s : NR;
        float *dst = Bp + (size_t)s * kc;
        for (int p = 0; p < kc; p++) {
            size_t r = (size_t)(p0 + p);
            if (!tb && nr == NR) {
                memcpy(dst + (size_t)p * NR, B + r * ldb + j0 + s, NR * sizeof(float));
                continue;
            }
            for (int j = 0; j < NR; j++) {
                float val = 0.0f;
                if (j < nr) {
                    size_t c = (size_t)(j0 + s + j);
                    val = tb ? B[c * ldb + r] : B[r * ldb + c];
                }
                dst[(size_t)p * NR + j] = val;
            }
        }
    }
}

/* ct(MR,NR) = a-sliver(MR,kc) @ b-sliver(kc,NR). */
static void micro_kernel(int kc, const float *restrict a, const float *restrict b,
                         float *restrict ct) {
    float acc[MR][NR];
    for (int i = 0; i < MR; i++)
        for (int j = 0; j < NR; j++) acc[i][j] = 0.0f;
    for (int p = 0; p < kc; p++) {
        const float *bp = b + (size_t)p * NR;
        for (int i = 0; i < MR; i++) {
            float ai = a[(size_t)p * MR + i];
            for (int j = 0; j < NR; j++) acc[i][j] = fmaf(ai, bp[j], acc[i][j]);
        }
    }
    memcpy(ct, acc, sizeof acc);
}

gt_status gt_cpu_sgemm_blocked(int ta, int tb, int M, int N, int K, const float *A, int lda,
                               const float *B, int ldb, float beta, float *C, int ldc,
                               const float *bias) {
    if (M < 0 || N < 0 || K < 0)
        return GT_ERR(GT_ERR_INVALID, "sgemm: M=%d N=%d K=%d", M, N, K);
    if (M == 0 || N == 0) return GT_OK;
    int mt = (M + MC - 1) / MC, nt = (N + NC - 1) / NC;
    int failed = 0;
#ifdef _OPENMP
#pragma omp parallel reduction(| : failed)
#endif
    {
        float *Ap = aligned_alloc(64, sizeof(float) * MC * KC);
        float *Bp = aligned_alloc(64, sizeof(float) * KC * NC);
        failed = !Ap || !Bp;
        {
            /* Every thread meets the worksharing loop, even one whose buffers
             * failed (it skips its tiles): the call then reports OOM. */
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
            for (int tile = 0; tile < mt * nt; tile++) {
                if (!Ap || !Bp) continue;
                int i0 = (tile / nt) * MC, j0 = (tile % nt) * NC;
                int mc = M - i0 < MC ? M - i0 : MC, nc = N - j0 < NC ? N - j0 : NC;
                float ct[MR * NR];
                /* K == 0 still has to apply beta and bias: one empty pass. */
                for (int p0 = 0; p0 < K || (p0 == 0 && K == 0); p0 += KC) {
                    int kc = K - p0 < KC ? K - p0 : KC;
                    if (kc > 0) {
                        pack_a(ta, A, lda, i0, mc, p0, kc, Ap);
                        pack_b(tb, B, ldb, p0, kc, j0, nc, Bp);
                    }
                    for (int js = 0; js < nc; js += NR) {
                        int nr = nc - js < NR ? nc - js : NR;
                        for (int is = 0; is < mc; is += MR) {
                            int mr = mc - is < MR ? mc - is : MR;
                            if (kc > 0)
                                micro_kernel(kc, Ap + (size_t)is * kc, Bp + (size_t)js * kc, ct);
                            else
                                memset(ct, 0, sizeof ct);
                            for (int i = 0; i < mr; i++) {
                                float *crow = C + (size_t)(i0 + is + i) * ldc + j0 + js;
                                const float *brow = bias ? bias + j0 + js : NULL;
                                for (int j = 0; j < nr; j++) {
                                    float base;
                                    if (p0 > 0) {
                                        base = crow[j];
                                    } else {
                                        base = beta == 0.0f ? 0.0f : beta * crow[j];
                                        if (brow) base += brow[j];
                                    }
                                    crow[j] = base + ct[i * NR + j];
                                }
                            }
                        }
                    }
                    if (K == 0) break;
                }
            }
        }
        free(Ap);
        free(Bp);
    }
    if (failed) return GT_ERR(GT_ERR_OOM, "sgemm: packing buffers (%zu bytes per thread)",
                              sizeof(float) * (MC * KC + KC * NC));
    return GT_OK;
}

int gt_cpu_sgemm_uses_blas(void) { return GT_HAVE_BLAS; }

gt_status gt_cpu_sgemm(int ta, int tb, int M, int N, int K, const float *A, int lda,
                       const float *B, int ldb, float beta, float *C, int ldc, const float *bias) {
#if GT_HAVE_BLAS
    if (M < 0 || N < 0 || K < 0)
        return GT_ERR(GT_ERR_INVALID, "sgemm: M=%d N=%d K=%d", M, N, K);
    if (M == 0 || N == 0) return GT_OK;
    if (bias) {
        /* The bias goes into C first so the GEMM adds onto it (beta = 1):
         * one write pass instead of a read-modify-write pass afterwards. */
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
        for (int i = 0; i < M; i++) {
            float *crow = C + (size_t)i * ldc;
            if (beta == 0.0f)
                for (int j = 0; j < N; j++) crow[j] = bias[j];
            else
                for (int j = 0; j < N; j++) crow[j] = beta * crow[j] + bias[j];
        }
        beta = 1.0f;
    }
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M,
                N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
    return GT_OK;
#else
    return gt_cpu_sgemm_blocked(ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc, bias);
#endif
}
