/* SGEMM for the cpu backend: C(M,N) = beta*C + op(A) op(B) [+ bias].
 *
 * Variants: cblas_sgemm (OpenBLAS) when the build has BLAS, and gauntlet's
 * own kernel, always built and tested. The own kernel is Goto-style: for
 * each NC-column panel and KC-deep slice of op(B), the threads pack the
 * panel once into NR-wide slivers (shared), then share the (MC-row block x
 * group of slivers) items of C among them; each packs its MC x KC block of
 * op(A) into MR-tall slivers (private, kept while its next item has the same
 * rows) and runs the MR x NR register tile, both operands read with unit
 * stride (a transposed B is packed through 8 x 8 register transposes with
 * AVX2): one A sliver (MR x KC) stays in L1 while the item's B slivers
 * stream from L2 (the other order, a B sliver as large as L1 held there,
 * measured slower). The tile is written with intrinsics for AVX-512
 * (8 x 32: 16 zmm accumulators) and AVX2 + FMA (6 x 16: 12 ymm), chosen at
 * compile time (-march=native); elsewhere an 8 x 16 tile of fmaf loops left
 * to the compiler (gcc vectorises that one across the tile with shuffles,
 * about a tenth of the intrinsics' speed; docs/performance.md has the
 * figures).
 * Bound: the FMA peak (gauntlet env's probe); OpenBLAS reaches more on
 * large shapes.
 *
 * Each C element is summed over k in increasing order: within a KC slice
 * from zero with fused multiply-adds, each slice's sum then added to C in
 * slice order, by exactly one thread at a time: bitwise identical for any
 * thread count and for every tile shape (MR, NR, MC, NC); only KC decides
 * the rounding. */
#include "kernels/cpu/sgemm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_config.h"

#ifdef _OPENMP
#include <omp.h>
#endif
#if GT_HAVE_BLAS
#include <cblas.h>
#endif
#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

/* The register tile, chosen once: SGEMM_ISA names the micro-kernel below. */
#if defined(__AVX512F__)
#define SGEMM_ISA 512
#define MR 8
#define NR 32
#define MC 64
#define TILE_DESC "8x32 tile, AVX-512"
#elif defined(__AVX2__) && defined(__FMA__)
#define SGEMM_ISA 256
#define MR 6
#define NR 16
#define MC 72
#define TILE_DESC "6x16 tile, AVX2"
#else
#define SGEMM_ISA 0
#define MR 8
#define NR 16
#define MC 64
#define TILE_DESC "8x16 tile, portable C"
#endif
/* MC: a multiple of MR (an A block, MC x KC, stays in L2); NC: a multiple
 * of NR (a B panel, KC x NC, stays in L2/L3); KC: the slice of k summed
 * from zero in registers (it decides the rounding: keep it). */
#define NC 512
#define KC 256

const char *gt_cpu_sgemm_tile(void) { return TILE_DESC; }

/* Ap[s][p][i] = op(A)(i0 + s*MR + i, p0 + p), zero beyond mc. */
static void pack_a(int ta, const float *A, int lda, int i0, int mc, int p0, int kc, float *Ap) {
    for (int s = 0; s < mc; s += MR) {
        int mr = mc - s < MR ? mc - s : MR;
        float *dst = Ap + (size_t)s * kc;
        if (ta) { /* op(A) rows are A's columns: MR neighbours per k */
            for (int p = 0; p < kc; p++) {
                const float *src = A + (size_t)(p0 + p) * lda + i0 + s;
                for (int i = 0; i < MR; i++) dst[(size_t)p * MR + i] = i < mr ? src[i] : 0.0f;
            }
            continue;
        }
        for (int i = 0; i < MR; i++) { /* one row of A at a time: read with unit stride */
            if (i < mr) {
                const float *src = A + (size_t)(i0 + s + i) * lda + p0;
                for (int p = 0; p < kc; p++) dst[(size_t)p * MR + i] = src[p];
            } else {
                for (int p = 0; p < kc; p++) dst[(size_t)p * MR + i] = 0.0f;
            }
        }
    }
}

#if defined(__AVX2__)
/* out[r * ldo + c] = in[c * ldi + r] for an 8 x 8 block: the rows of op(B)
 * that a transposed B stores as columns, moved through 8 registers. */
static inline void transpose8x8(const float *in, size_t ldi, float *out, size_t ldo) {
    __m256 r[8], t[8], u[8];
    for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(in + i * ldi);
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);     /* r0[0] r1[0] r0[1] r1[1] | [4], [5] */
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]); /* r0[2] r1[2] r0[3] r1[3] | [6], [7] */
    }
    for (int i = 0; i < 8; i += 4)
        for (int h = 0; h < 2; h++) {
            u[i + 2 * h] = _mm256_shuffle_ps(t[i + h], t[i + 2 + h], _MM_SHUFFLE(1, 0, 1, 0));
            u[i + 2 * h + 1] = _mm256_shuffle_ps(t[i + h], t[i + 2 + h], _MM_SHUFFLE(3, 2, 3, 2));
        }
    /* u[0..3]: columns 0..3 (and 4..7 in the high lanes) of rows 0..3; u[4..7]: of rows 4..7 */
    for (int c = 0; c < 4; c++) {
        _mm256_storeu_ps(out + c * ldo, _mm256_permute2f128_ps(u[c], u[4 + c], 0x20));
        _mm256_storeu_ps(out + (4 + c) * ldo, _mm256_permute2f128_ps(u[c], u[4 + c], 0x31));
    }
}
#endif

/* The sliver of the B panel at column s (a multiple of NR) of nc:
 * Bp[s/NR][p][j] = op(B)(p0 + p, j0 + s + j), zero beyond nc. */
static void pack_b_sliver(int tb, const float *B, int ldb, int p0, int kc, int j0, int nc, int s,
                          float *Bp) {
    int nr = nc - s < NR ? nc - s : NR;
    float *dst = Bp + (size_t)s * kc;
    if (!tb) {
        for (int p = 0; p < kc; p++) {
            const float *src = B + (size_t)(p0 + p) * ldb + j0 + s;
            if (nr == NR) {
                memcpy(dst + (size_t)p * NR, src, NR * sizeof(float));
            } else {
                for (int j = 0; j < NR; j++) dst[(size_t)p * NR + j] = j < nr ? src[j] : 0.0f;
            }
        }
        return;
    }
    int p8 = 0; /* k rows done by the 8 x 8 transposes */
#if defined(__AVX2__)
    if (nr == NR) { /* NR rows of B: 8 x 8 blocks through registers */
        p8 = kc / 8 * 8;
        for (int jb = 0; jb < NR; jb += 8) {
            const float *src = B + (size_t)(j0 + s + jb) * ldb + p0;
            for (int p = 0; p < p8; p += 8)
                transpose8x8(src + p, (size_t)ldb, dst + (size_t)p * NR + jb, NR);
        }
    }
#endif
    for (int j = 0; j < NR; j++) { /* op(B) columns are B's rows: unit stride in k */
        if (j < nr) {
            const float *src = B + (size_t)(j0 + s + j) * ldb + p0;
            for (int p = p8; p < kc; p++) dst[(size_t)p * NR + j] = src[p];
        } else {
            for (int p = p8; p < kc; p++) dst[(size_t)p * NR + j] = 0.0f;
        }
    }
}

/* ct(MR,NR) = a-sliver(MR,kc) @ b-sliver(kc,NR), each element from zero
 * with one fused multiply-add per k in increasing k (all variants alike). */
static void micro_kernel(int kc, const float *restrict a, const float *restrict b,
                         float *restrict ct) {
#if SGEMM_ISA == 512
    __m512 c0[MR], c1[MR];
    for (int i = 0; i < MR; i++) c0[i] = c1[i] = _mm512_setzero_ps();
    for (int p = 0; p < kc; p++) {
        __m512 b0 = _mm512_load_ps(b + (size_t)p * NR), b1 = _mm512_load_ps(b + (size_t)p * NR + 16);
        for (int i = 0; i < MR; i++) {
            __m512 ai = _mm512_set1_ps(a[(size_t)p * MR + i]);
            c0[i] = _mm512_fmadd_ps(ai, b0, c0[i]);
            c1[i] = _mm512_fmadd_ps(ai, b1, c1[i]);
        }
    }
    for (int i = 0; i < MR; i++) {
        _mm512_store_ps(ct + i * NR, c0[i]);
        _mm512_store_ps(ct + i * NR + 16, c1[i]);
    }
#elif SGEMM_ISA == 256
    __m256 c0[MR], c1[MR];
    for (int i = 0; i < MR; i++) c0[i] = c1[i] = _mm256_setzero_ps();
    for (int p = 0; p < kc; p++) {
        __m256 b0 = _mm256_load_ps(b + (size_t)p * NR), b1 = _mm256_load_ps(b + (size_t)p * NR + 8);
        for (int i = 0; i < MR; i++) {
            __m256 ai = _mm256_broadcast_ss(a + (size_t)p * MR + i);
            c0[i] = _mm256_fmadd_ps(ai, b0, c0[i]);
            c1[i] = _mm256_fmadd_ps(ai, b1, c1[i]);
        }
    }
    for (int i = 0; i < MR; i++) {
        _mm256_store_ps(ct + i * NR, c0[i]);
        _mm256_store_ps(ct + i * NR + 8, c1[i]);
    }
#else
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
#endif
}

/* aligned_alloc of 64-byte aligned floats: C11 wants the size a multiple of
 * the alignment (ASan enforces it; an AVX2 A block is 72 x kc floats). */
static float *alloc_floats(size_t n) {
    size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
    return aligned_alloc(64, bytes ? bytes : 64);
}

/* C's rows [i0, i0+mc) x the panel's slivers [s0, s1) for the slice at p0
 * (kc == 0: K == 0, beta and bias only): the tiles, then the write-back
 * (the first slice applies beta and the bias, later ones add). */
static void macro_kernel(const float *Ap, const float *Bp, int kc, int p0, int i0, int mc, int j0,
                         int nc, int s0, int s1, float beta, float *C, int ldc,
                         const float *bias) {
    _Alignas(64) float ct[MR * NR];
    for (int is = 0; is < mc; is += MR) {
        int mr = mc - is < MR ? mc - is : MR;
        for (int js = s0; js < s1; js += NR) {
            int nr = nc - js < NR ? nc - js : NR;
            if (kc > 0)
                micro_kernel(kc, Ap + (size_t)is * kc, Bp + (size_t)js * kc, ct);
            else
                memset(ct, 0, sizeof ct);
            for (int i = 0; i < mr; i++) {
                float *crow = C + (size_t)(i0 + is + i) * ldc + j0 + js;
                const float *tr = ct + i * NR;
                if (p0 > 0) {
                    for (int j = 0; j < nr; j++) crow[j] = crow[j] + tr[j];
                } else {
                    const float *brow = bias ? bias + j0 + js : NULL;
                    for (int j = 0; j < nr; j++) {
                        float base = beta == 0.0f ? 0.0f : beta * crow[j];
                        if (brow) base += brow[j];
                        crow[j] = base + tr[j];
                    }
                }
            }
        }
    }
}

gt_status gt_cpu_sgemm_blocked(int ta, int tb, int M, int N, int K, const float *A, int lda,
                               const float *B, int ldb, float beta, float *C, int ldc,
                               const float *bias) {
    if (M < 0 || N < 0 || K < 0)
        return GT_ERR(GT_ERR_INVALID, "sgemm: M=%d N=%d K=%d", M, N, K);
    if (M == 0 || N == 0) return GT_OK;
    int kc_max = K < KC ? K : KC, nc_max = N < NC ? N : NC;
    size_t nc_pad = ((size_t)nc_max + NR - 1) / NR * NR;
    /* the shared B panel (KC x NC at most; unused when K == 0) */
    float *Bp = alloc_floats((size_t)kc_max * nc_pad);
    if (!Bp)
        return GT_ERR(GT_ERR_OOM, "sgemm: B panel (%zu bytes)",
                      sizeof(float) * (size_t)kc_max * nc_pad);
    int mt = (M + MC - 1) / MC;
    int failed = 0;
#ifdef _OPENMP
    /* Under a million multiply-adds (tens of microseconds on one core) the
     * threads would mostly wait for each other to wake: one thread, the same
     * bits (the sums do not depend on the thread count). */
    int parallel = (double)M * N * (K > 0 ? K : 1) >= (double)(1 << 20);
#pragma omp parallel reduction(| : failed) if (parallel)
#endif
    {
        int nthreads = 1;
#ifdef _OPENMP
        nthreads = omp_get_num_threads();
#endif
        float *Ap = alloc_floats((size_t)MC * kc_max);
        failed = !Ap;
        /* Every thread meets every worksharing loop, even one without its
         * A buffer (it skips its items): the call then reports OOM. */
        for (int j0 = 0; j0 < N; j0 += NC) {
            int nc = N - j0 < NC ? N - j0 : NC;
            int slivers = (nc + NR - 1) / NR;
            /* items: (row block, group of slivers), row-block major; enough
             * of them for every thread when there are few row blocks */
            int groups = mt >= 2 * nthreads ? 1 : (2 * nthreads + mt - 1) / mt;
            if (groups > slivers) groups = slivers;
            int per = (slivers + groups - 1) / groups;
            groups = (slivers + per - 1) / per;
            /* K == 0 still has to apply beta and bias: one empty pass. */
            for (int p0 = 0; p0 < K || (p0 == 0 && K == 0); p0 += KC) {
                int kc = K - p0 < KC ? K - p0 : KC;
                if (kc > 0) {
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
                    for (int sv = 0; sv < slivers; sv++)
                        pack_b_sliver(tb, B, ldb, p0, kc, j0, nc, sv * NR, Bp);
                }
                int packed = -1; /* the row block this thread's Ap holds */
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
                for (int item = 0; item < mt * groups; item++) {
                    if (!Ap) continue;
                    int ib = item / groups, g = item % groups;
                    int i0 = ib * MC, mc = M - i0 < MC ? M - i0 : MC;
                    if (kc > 0 && packed != ib) {
                        pack_a(ta, A, lda, i0, mc, p0, kc, Ap);
                        packed = ib;
                    }
                    int s0 = g * per * NR, s1 = (g + 1) * per * NR;
                    if (s1 > nc) s1 = nc;
                    macro_kernel(Ap, Bp, kc, p0, i0, mc, j0, nc, s0, s1, beta, C, ldc, bias);
                }
            }
        }
        free(Ap);
    }
    free(Bp);
    if (failed) return GT_ERR(GT_ERR_OOM, "sgemm: packing buffer (%zu bytes per thread)",
                              sizeof(float) * MC * KC);
    return GT_OK;
}

#if GT_HAVE_BLAS
/* OpenBLAS cores without AVX kernels: what a DYNAMIC_ARCH OpenBLAS falls back
 * to on a CPU it does not know (0.3.21 runs Prescott, SSE3, on Intel's
 * family 6 model 207: a GEMM at a fifth of the own AVX-512 kernel's rate). */
static int pre_avx_core(const char *core) {
    static const char *const old[] = {"Prescott", "Core2",   "Penryn",   "Dunnington",
                                      "Nehalem",  "Atom",    "Opteron",  "Opteron(SSE3)",
                                      "Barcelona", "Bobcat", "Katmai",   "Coppermine",
                                      "Northwood", "Banias", "Athlon",   "Generic",
                                      "Unknown"};
    for (size_t i = 0; i < sizeof old / sizeof old[0]; i++)
        if (strcmp(core, old[i]) == 0) return 1;
    return 0;
}
#endif

static int g_use_blas = -1;
static char g_gemm_why[192];

static int valid_choice(const char *force) {
    return !force || !force[0] || strcmp(force, "own") == 0 || strcmp(force, "blas") == 0;
}

/* The decision, once: force is "own", "blas" or NULL (automatic). */
static void decide(const char *force) {
    if (g_use_blas >= 0) return;
#if GT_HAVE_BLAS
    const char *core = openblas_get_corename();
    if (force && strcmp(force, "own") == 0) {
        g_use_blas = 0;
        snprintf(g_gemm_why, sizeof g_gemm_why, "GT_CPU_GEMM=own");
    } else if (force && strcmp(force, "blas") == 0) {
        g_use_blas = 1;
        snprintf(g_gemm_why, sizeof g_gemm_why, "GT_CPU_GEMM=blas");
    } else if (!getenv("OPENBLAS_CORETYPE") && SGEMM_ISA >= 256 && pre_avx_core(core)) {
        /* the library guessed an old core for this CPU; a core the user forced
         * (OPENBLAS_CORETYPE) is what they want measured */
        g_use_blas = 0;
        snprintf(g_gemm_why, sizeof g_gemm_why,
                 "OpenBLAS picked %s (no AVX) for this CPU; OPENBLAS_CORETYPE or "
                 "GT_CPU_GEMM=blas keeps OpenBLAS",
                 core);
    } else {
        g_use_blas = 1;
        snprintf(g_gemm_why, sizeof g_gemm_why, "OpenBLAS %s kernels", core);
    }
#else
    (void)force;
    g_use_blas = 0;
    snprintf(g_gemm_why, sizeof g_gemm_why, "built without BLAS");
#endif
}

gt_status gt_cpu_sgemm_select(void) {
    const char *force = getenv("GT_CPU_GEMM");
    if (!valid_choice(force))
        return GT_ERR(GT_ERR_INVALID,
                      "GT_CPU_GEMM=%s: use 'own' (gauntlet's SGEMM), 'blas' (the BLAS, one "
                      "call per tile) or leave it unset (BLAS unless it runs pre-AVX kernels)",
                      force);
    decide(force && force[0] ? force : NULL);
    return GT_OK;
}

/* Called before the backend's constructor decided (tests calling the SGEMM
 * directly): a GT_CPU_GEMM the constructor would refuse counts as unset. */
static void decide_now(void) {
    const char *force = getenv("GT_CPU_GEMM");
    decide(valid_choice(force) && force && force[0] ? force : NULL);
}

int gt_cpu_sgemm_uses_blas(void) {
    decide_now();
    return g_use_blas;
}

const char *gt_cpu_sgemm_choice(void) {
    decide_now();
    return g_gemm_why;
}

/* Tile counts the BLAS grid may take: each divides evenly among many thread
 * counts (48: 1, 2, 3, 4, 6, 8, 12, 16, 24, 48), so the same grid keeps most
 * machines' threads equally busy without depending on their number. */
static const int grid_counts[] = {1, 2, 4, 6, 8, 12, 24, 48};
/* A tile is at least TILE_EDGE_MIN rows and columns (or the whole
 * dimension): each tile packs its own panels of A and B, 1/(2 tm) + 1/(2 tn)
 * floats per flop. On the gpt2-124m shapes (docs/performance.md) edges of
 * 128 cost 18% on one thread and 7% on two against OpenBLAS's own split,
 * 256 about 7% on one thread and par on two. The price: a GEMM smaller than
 * 512 x 512 in C has at most a few tiles however many cores there are. */
#define TILE_EDGE_MIN 256
/* and at least TILE_FLOPS_MIN flops, so that a call's fixed cost (buffer
 * lookup, the kernel's edge cases) stays small against its work */
#define TILE_FLOPS_MIN 4.0e6

void gt_cpu_gemm_grid(int M, int N, int K, int *mb, int *nb) {
    int best_m = 1, best_n = 1;
    int max_m = M / TILE_EDGE_MIN > 1 ? M / TILE_EDGE_MIN : 1;
    int max_n = N / TILE_EDGE_MIN > 1 ? N / TILE_EDGE_MIN : 1;
    double flops = 2.0 * M * N * (K > 0 ? K : 1);
    for (size_t i = 0; i < sizeof grid_counts / sizeof grid_counts[0]; i++) {
        int nt = grid_counts[i];
        if (flops / nt < TILE_FLOPS_MIN) break;
        /* of the factorisations nt = m x n that fit, the one that packs the
         * least: m N + n M floats per k (each row block reads B once, each
         * column block A once) */
        double cost = -1.0;
        int fm = 0, fn = 0;
        for (int m = 1; m <= nt; m++) {
            if (nt % m || m > max_m || nt / m > max_n) continue;
            double c = (double)m * N + (double)(nt / m) * M;
            if (cost < 0.0 || c < cost) cost = c, fm = m, fn = nt / m;
        }
        if (fm) best_m = fm, best_n = fn;
    }
    *mb = best_m;
    *nb = best_n;
}

#if GT_HAVE_BLAS
/* OpenBLAS runs each tile on the calling thread: its own threads would split
 * a tile's work in a way gauntlet does not control. */
static void blas_single_threaded(void) {
    if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
}
#endif

gt_status gt_cpu_sgemm(int ta, int tb, int M, int N, int K, const float *A, int lda,
                       const float *B, int ldb, float beta, float *C, int ldc, const float *bias) {
#if GT_HAVE_BLAS
    if (!gt_cpu_sgemm_uses_blas())
        return gt_cpu_sgemm_blocked(ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc, bias);
    if (M < 0 || N < 0 || K < 0)
        return GT_ERR(GT_ERR_INVALID, "sgemm: M=%d N=%d K=%d", M, N, K);
    if (M == 0 || N == 0) return GT_OK;
    blas_single_threaded();
    int mb, nb;
    gt_cpu_gemm_grid(M, N, K, &mb, &nb);
    /* equal tiles (the last ones up to a row or column shorter) */
    int tm = (M + mb - 1) / mb, tn = (N + nb - 1) / nb;
    mb = (M + tm - 1) / tm;
    nb = (N + tn - 1) / tn;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) if (mb * nb > 1)
#endif
    for (int t = 0; t < mb * nb; t++) {
        int i0 = t / nb * tm, j0 = t % nb * tn;
        int m = M - i0 < tm ? M - i0 : tm, n = N - j0 < tn ? N - j0 : tn;
        float *c = C + (size_t)i0 * ldc + j0;
        float b = beta;
        if (bias) {
            /* The bias goes into C first so the GEMM adds onto it (beta =
             * 1): one write pass instead of a read-modify-write afterwards. */
            for (int i = 0; i < m; i++) {
                float *crow = c + (size_t)i * ldc;
                if (beta == 0.0f)
                    for (int j = 0; j < n; j++) crow[j] = bias[j0 + j];
                else
                    for (int j = 0; j < n; j++) crow[j] = beta * crow[j] + bias[j0 + j];
            }
            b = 1.0f;
        }
        const float *a = ta ? A + i0 : A + (size_t)i0 * lda;
        const float *bm = tb ? B + (size_t)j0 * ldb : B + j0;
        if (K == 0) { /* BLAS may skip beta when K == 0; C = beta C [+ bias] by hand */
            if (!bias)
                for (int i = 0; i < m; i++)
                    for (int j = 0; j < n; j++)
                        c[(size_t)i * ldc + j] = b == 0.0f ? 0.0f : b * c[(size_t)i * ldc + j];
            continue;
        }
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                    m, n, K, 1.0f, a, lda, bm, ldb, b, c, ldc);
    }
    return GT_OK;
#else
    return gt_cpu_sgemm_blocked(ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc, bias);
#endif
}
