/* kernels.sgemm.cpu: the own blocked SGEMM (and the BLAS path when built)
 * against a naive fp64 product, all four transpose combinations, odd shapes,
 * beta 0 and 1, with and without bias, leading dimensions wider than the
 * matrix. Bound: |err| <= (K+2) u sum|a||b| + |beta c| + |bias| terms. */
#include <math.h>

#include "gt_config.h"
#include "kernels/cpu/sgemm.h"
#include "kernels/tests/testutil.h"

#define U32 (1.0 / 16777216.0)

static int one(int blas, int ta, int tb, int M, int N, int K, float beta, int with_bias) {
    int lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 5, ldc = N + 2;
    size_t na = (size_t)(ta ? K : M) * lda, nb = (size_t)(tb ? N : K) * ldb, nc = (size_t)M * ldc;
    float *A = tu_xmalloc(na * 4), *B = tu_xmalloc(nb * 4), *C = tu_xmalloc(nc * 4);
    float *bias = tu_xmalloc((size_t)(N ? N : 1) * 4), *C0 = tu_xmalloc(nc * 4);
    gt_rng_fill_normal(A, na, 0.0f, 1.0f, TU_SEED, 1, 0);
    gt_rng_fill_normal(B, nb, 0.0f, 1.0f, TU_SEED, 2, 0);
    gt_rng_fill_normal(C, nc, 0.0f, 1.0f, TU_SEED, 3, 0);
    gt_rng_fill_normal(bias, N, 0.0f, 1.0f, TU_SEED, 4, 0);
    if (beta == 0.0f) /* beta 0 must ignore C, even NaN */
        for (size_t i = 0; i < nc; i++) C[i] = NAN;
    memcpy(C0, C, nc * 4);
    gt_status s = blas ? gt_cpu_sgemm(ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc, with_bias ? bias : NULL)
                       : gt_cpu_sgemm_blocked(ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc,
                                              with_bias ? bias : NULL);
    double max_err = 0.0, max_ratio = 0.0;
    int ok = s == GT_OK;
    for (int i = 0; i < M && ok; i++) {
        for (int j = 0; j < N; j++) {
            double acc = 0.0, mag = 0.0;
            for (int p = 0; p < K; p++) {
                double a = ta ? A[(size_t)p * lda + i] : A[(size_t)i * lda + p];
                double b = tb ? B[(size_t)j * ldb + p] : B[(size_t)p * ldb + j];
                acc += a * b;
                mag += fabs(a * b);
            }
            if (beta != 0.0f) acc += (double)beta * C0[(size_t)i * ldc + j], mag += fabs(beta * C0[(size_t)i * ldc + j]);
            if (with_bias) acc += bias[j], mag += fabs(bias[j]);
            double got = C[(size_t)i * ldc + j];
            double err = fabs(got - acc), lim = (K + 3) * U32 * mag + 1e-30;
            if (err > max_err) max_err = err;
            if (err / lim > max_ratio) max_ratio = err / lim;
            if (!(err <= lim)) ok = 0;
        }
        /* The padding columns of C beyond N are never written. */
        for (int j = N; j < ldc; j++)
            if (memcmp(&C[(size_t)i * ldc + j], &C0[(size_t)i * ldc + j], 4) != 0) ok = 0;
    }
    printf("  %-8s ta%d tb%d M%-4d N%-4d K%-4d beta %g bias %d: max_err %.3e (%.2f of bound)%s\n",
           blas ? "gemm" : "blocked", ta, tb, M, N, K, beta, with_bias, max_err, max_ratio,
           ok ? "" : "  FAIL");
    free(A);
    free(B);
    free(C);
    free(C0);
    free(bias);
    return ok;
}

/* argv[1] (the variant tests of kernels/tests/CMakeLists.txt, which compile
 * kernels/cpu/sgemm.c into this program for another instruction set):
 * "avx2" or "portable", the register tile that must have been compiled;
 * the avx2 test needs a CPU with AVX2 and FMA (77 otherwise). */
static int variant_ok(const char *want) {
    const char *tile = gt_cpu_sgemm_tile();
    printf("sgemm: own kernel's tile: %s\n", tile);
    if (!want) return 1;
    const char *mark = !strcmp(want, "avx2") ? "AVX2" : !strcmp(want, "portable") ? "portable" : NULL;
    if (!mark) {
        fprintf(stderr, "sgemm: unknown variant '%s' (avx2, portable)\n", want);
        exit(2);
    }
#if defined(__x86_64__) || defined(__i386__)
    if (!strcmp(want, "avx2") && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) {
        printf("sgemm: this CPU has no AVX2 + FMA: skipped\n");
        exit(77);
    }
#endif
    if (!strstr(tile, mark)) {
        fprintf(stderr, "sgemm: variant %s wanted, the kernel was compiled as '%s'\n", want, tile);
        return 0;
    }
    return 1;
}

int main(int argc, char **argv) {
    if (!variant_ok(argc > 1 ? argv[1] : NULL)) return 1;
    static const int shapes[][3] = {{1, 1, 1},    {3, 5, 7},     {1, 17, 300}, {17, 33, 65},
                                    {65, 17, 300}, {8, 16, 256}, {130, 257, 513}, {2, 3, 0},
                                    {0, 4, 4},    {71, 600, 31}, {3, 1100, 40}, {150, 70, 530},
                                    /* several BLAS tiles, the last ones shorter (2 x 2, 1 x 4) */
                                    {600, 530, 40}, {300, 1100, 30}};
    int fails = 0;
    /* the BLAS tile grid: a count every thread count shares well, tiles of at
     * least 256 x 256 where the dimension allows, the same on every call */
    static const int grids[][3] = {{256, 2304, 768}, {256, 50304, 768}, {50304, 768, 256},
                                   {256, 768, 50304}, {65, 129, 300},   {3072, 768, 256},
                                   {600, 530, 40},   {1, 1, 1},         {4096, 4096, 4096}};
    for (size_t i = 0; i < sizeof grids / sizeof grids[0]; i++) {
        int M = grids[i][0], N = grids[i][1], K = grids[i][2], mb, nb, mb2, nb2;
        gt_cpu_gemm_grid(M, N, K, &mb, &nb);
        gt_cpu_gemm_grid(M, N, K, &mb2, &nb2);
        int nt = mb * nb, allowed = 0;
        static const int counts[] = {1, 2, 4, 6, 8, 12, 24, 48};
        for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) allowed |= nt == counts[c];
        int ok = allowed && mb2 == mb && nb2 == nb && (mb == 1 || M / mb >= 256) &&
                 (nb == 1 || N / nb >= 256);
        printf("  grid     M%-5d N%-5d K%-5d: %d x %d tiles%s\n", M, N, K, mb, nb, ok ? "" : "  FAIL");
        fails += !ok;
    }
    const char *force = getenv("GT_CPU_GEMM");
    if (GT_HAVE_BLAS && force && strcmp(force, "blas") == 0 && !gt_cpu_sgemm_uses_blas()) {
        printf("FAIL: GT_CPU_GEMM=blas but gt_cpu_sgemm does not use BLAS (%s)\n",
               gt_cpu_sgemm_choice());
        return 1;
    }
    if (GT_HAVE_BLAS) printf("gt_cpu_sgemm: %s\n", gt_cpu_sgemm_choice());
    printf("sgemm: own blocked kernel%s vs fp64\n", GT_HAVE_BLAS ? " and the BLAS path" : "");
    for (int blas = 0; blas <= GT_HAVE_BLAS; blas++)
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
            for (int tt = 0; tt < 4; tt++) {
                int M = shapes[i][0], N = shapes[i][1], K = shapes[i][2];
                fails += !one(blas, tt & 1, tt >> 1, M, N, K, tt == 3 ? 1.0f : 0.0f, (int)(i + tt) % 2);
            }
    fails += !one(0, 0, 1, 33, 45, 70, 0.5f, 1);
    printf("sgemm: %d failed\n", fails);
    return fails ? 1 : 0;
}
