/* kernels.determinism.cpu: every cpu op run with 1 thread and with 2 threads
 * gives bitwise identical outputs, on shapes large enough to be split across
 * threads. Also checks the own blocked SGEMM and gt_cpu_sgemm (BLAS tiles
 * when built with BLAS) on the gpt2-124m B=4 T=64 GEMM shapes with 1, 2 and
 * 3 threads. The BLAS kernel in use is printed: CI runs this test under
 * several (OPENBLAS_CORETYPE, ci/blas_kernels.sh), and the result must not
 * depend on how that kernel would split its work among threads. */
#include "gt_config.h"
#include "kernels/cpu/sgemm.h"
#include "kernels/tests/testutil.h"
#if GT_HAVE_BLAS
#include <cblas.h>
#endif

#define NBUF 8
typedef struct run {
    float *out[NBUF];
    size_t n[NBUF];
    double d;
} run;

static void fill(float *x, size_t n, uint64_t stream, float std) {
    gt_rng_fill_normal(x, n, 0.0f, std, TU_SEED, stream, 0);
}

static float *cp(const float *x, size_t n) {
    float *y = tu_xmalloc(n * sizeof(float));
    memcpy(y, x, n * sizeof(float));
    return y;
}

/* Runs op `op` on fresh copies of seeded inputs; outputs go to r. */
static gt_status run_op(gt_backend *be, gt_op op, run *r) {
    gt_kctx k = {be, GT_DTYPE_FP32};
    const gt_ops *o = be->ops;
    memset(r, 0, sizeof *r);
    enum { B = 4, T = 64, C = 768, NH = 12, V = 4000, Vp = 4032, N = B * T };
    int32_t ids[N];
    for (int i = 0; i < N; i++) ids[i] = (int32_t)(gt_rng_u32(TU_SEED, 99, i) % 300);
    size_t nbig = (size_t)3 * C * C + 5; /* holds every operand; odd length */
    gt_status s = GT_OK;
    float *a = tu_xmalloc(nbig * 4), *b = tu_xmalloc(nbig * 4), *c = tu_xmalloc(nbig * 4);
    fill(a, nbig, 1, 1.0f);
    fill(b, nbig, 2, 1.0f);
    fill(c, nbig, 3, 0.05f);
    switch (op) {
    case GT_OP_ENCODER_FWD:
        r->n[0] = (size_t)N * C;
        r->out[0] = tu_xmalloc(r->n[0] * 4);
        s = o->encoder_fwd(&k, r->out[0], ids, a, b, B, T, C);
        break;
    case GT_OP_ENCODER_BWD:
        r->n[0] = 300 * C, r->out[0] = cp(a, r->n[0]);
        r->n[1] = (size_t)T * C, r->out[1] = cp(b, r->n[1]);
        s = o->encoder_bwd(&k, r->out[0], r->out[1], c, ids, B, T, C);
        break;
    case GT_OP_LAYERNORM_FWD:
        r->n[0] = (size_t)N * C, r->out[0] = tu_xmalloc(r->n[0] * 4);
        r->n[1] = N, r->out[1] = tu_xmalloc(N * 4);
        r->n[2] = N, r->out[2] = tu_xmalloc(N * 4);
        s = o->layernorm_fwd(&k, r->out[0], r->out[1], r->out[2], a, b, c, N, C, 1e-5f);
        break;
    case GT_OP_LAYERNORM_BWD: {
        float mean[N], rstd[N];
        for (int i = 0; i < N; i++) mean[i] = 0.01f * (float)i, rstd[i] = 1.0f + 0.001f * (float)i;
        r->n[0] = (size_t)N * C, r->out[0] = cp(a, r->n[0]);
        r->n[1] = C, r->out[1] = cp(b, C);
        r->n[2] = C, r->out[2] = cp(c, C);
        s = o->layernorm_bwd(&k, r->out[0], r->out[1], r->out[2], b, c, a, mean, rstd, N, C);
        break;
    }
    case GT_OP_MATMUL_FWD:
        r->n[0] = (size_t)N * 3 * C, r->out[0] = tu_xmalloc(r->n[0] * 4);
        s = o->matmul_fwd(&k, r->out[0], a, c, b, N, C, 3 * C);
        break;
    case GT_OP_MATMUL_BWD:
        r->n[0] = (size_t)N * C, r->out[0] = cp(a, r->n[0]);
        r->n[1] = (size_t)3 * C * C, r->out[1] = cp(b, r->n[1]);
        r->n[2] = 3 * C, r->out[2] = cp(c, r->n[2]);
        s = o->matmul_bwd(&k, r->out[0], r->out[1], r->out[2], b, a, c, N, C, 3 * C);
        break;
    case GT_OP_MATMUL_GELU_FWD: /* out, pre (N, 3C) */
        r->n[0] = (size_t)N * 3 * C, r->out[0] = tu_xmalloc(r->n[0] * 4);
        r->n[1] = (size_t)N * 3 * C, r->out[1] = tu_xmalloc(r->n[1] * 4);
        s = o->matmul_gelu_fwd(&k, r->out[0], r->out[1], a, c, b, N, C, 3 * C);
        break;
    case GT_OP_MATMUL_DGELU_BWD: /* dpre (N, C) overwritten; dweight, dbias accumulated */
        r->n[0] = (size_t)N * C, r->out[0] = cp(a, r->n[0]);
        r->n[1] = (size_t)3 * C * C, r->out[1] = cp(b, r->n[1]);
        r->n[2] = 3 * C, r->out[2] = cp(c, r->n[2]);
        s = o->matmul_dgelu_bwd(&k, r->out[0], r->out[1], r->out[2], b, a, c, b + 7, N, C, 3 * C);
        break;
    case GT_OP_ATTENTION_FWD:
        r->n[0] = (size_t)N * C, r->out[0] = tu_xmalloc(r->n[0] * 4);
        r->n[1] = gt_attention_state_floats(o, &k, B, T, C, NH);
        r->out[1] = tu_xmalloc(r->n[1] * 4);
        s = o->attention_fwd(&k, r->out[0], r->out[1], a, B, T, C, NH);
        break;
    case GT_OP_ATTENTION_BWD: {
        float *att = tu_xmalloc(gt_attention_state_floats(o, &k, B, T, C, NH) * 4);
        float *tmp = tu_xmalloc((size_t)N * C * 4);
        s = o->attention_fwd(&k, tmp, att, a, B, T, C, NH);
        r->n[0] = (size_t)N * 3 * C, r->out[0] = cp(c, r->n[0]);
        if (s == GT_OK) s = o->attention_bwd(&k, r->out[0], b, a, tmp, att, B, T, C, NH);
        free(att);
        free(tmp);
        break;
    }
    case GT_OP_GELU_FWD:
        r->n[0] = nbig, r->out[0] = tu_xmalloc(nbig * 4);
        s = o->gelu_fwd(&k, r->out[0], a, nbig);
        break;
    case GT_OP_GELU_BWD:
        r->n[0] = nbig, r->out[0] = cp(c, nbig);
        s = o->gelu_bwd(&k, r->out[0], a, b, nbig);
        break;
    case GT_OP_RESIDUAL_FWD:
        r->n[0] = nbig, r->out[0] = tu_xmalloc(nbig * 4);
        s = o->residual_fwd(&k, r->out[0], a, b, nbig);
        break;
    case GT_OP_RESIDUAL_BWD:
        r->n[0] = nbig, r->out[0] = cp(a, nbig);
        r->n[1] = nbig, r->out[1] = cp(b, nbig);
        s = o->residual_bwd(&k, r->out[0], r->out[1], c, nbig);
        break;
    case GT_OP_CLASSIFIER_FWD:
        r->n[0] = N, r->out[0] = tu_xmalloc(N * 4);
        s = o->classifier_fwd(&k, r->out[0], a, ids, N, V, Vp);
        break;
    case GT_OP_CLASSIFIER_BWD:
        r->n[0] = N, r->out[0] = tu_xmalloc(N * 4);
        r->n[1] = (size_t)N * Vp, r->out[1] = tu_xmalloc(r->n[1] * 4);
        s = o->classifier_bwd(&k, r->out[1], r->out[0], a, ids, 1.0f / N, N, V, Vp);
        break;
    case GT_OP_ADAMW:
        r->n[0] = nbig, r->out[0] = cp(c, nbig);
        r->n[1] = nbig, r->out[1] = cp(b, nbig);
        r->n[2] = nbig, r->out[2] = tu_xmalloc(nbig * 4);
        for (size_t i = 0; i < nbig; i++) r->out[2][i] = a[i] * a[i];
        s = o->adamw(&k, r->out[0], a, r->out[1], r->out[2], nbig, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, 3);
        break;
    case GT_OP_SUMSQ:
        s = o->sumsq(&k, a, nbig, &r->d);
        break;
    /* vision ops on a ResNet-ish stage, N8 C32 16x16: the im2col path (3x3,
     * stride 1 and 2) and the 1x1 path of conv2d; batchnorm with every
     * channel summed over 2048 values */
    case GT_OP_CONV2D_FWD:
    case GT_OP_CONV2D_BWD: {
        gt_conv2d_shape cs[3] = {
            {.N = 8, .C = 32, .H = 16, .W = 16, .OC = 64, .KH = 3, .KW = 3, .stride = 1, .pad = 1},
            {.N = 8, .C = 32, .H = 16, .W = 16, .OC = 64, .KH = 1, .KW = 1, .stride = 1, .pad = 0},
            {.N = 8, .C = 32, .H = 16, .W = 16, .OC = 64, .KH = 3, .KW = 3, .stride = 2, .pad = 1}};
        size_t nin = (size_t)8 * 32 * 16 * 16;
        for (int v = 0; v < 3 && s == GT_OK; v++) {
            size_t nout = (size_t)8 * 64 * gt_conv2d_out_h(&cs[v]) * gt_conv2d_out_w(&cs[v]);
            size_t nw = (size_t)64 * 32 * cs[v].KH * cs[v].KW;
            if (op == GT_OP_CONV2D_FWD) {
                r->n[v] = nout, r->out[v] = tu_xmalloc(nout * 4);
                s = o->conv2d_fwd(&k, r->out[v], a, c, b, &cs[v]);
            } else {
                r->n[2 * v] = nin, r->out[2 * v] = cp(a, nin);
                r->n[2 * v + 1] = nw, r->out[2 * v + 1] = cp(b, nw);
                float *db = v == 0 ? (r->n[6] = 64, r->out[6] = cp(c, 64)) : NULL;
                s = o->conv2d_bwd(&k, r->out[2 * v], r->out[2 * v + 1], db, b + nw, a + nin, c, &cs[v]);
            }
        }
        break;
    }
    case GT_OP_BATCHNORM_FWD:
        r->n[0] = (size_t)8 * 64 * 256, r->out[0] = tu_xmalloc(r->n[0] * 4);
        for (int i = 1; i <= 4; i++) r->n[i] = 64, r->out[i] = cp(b, 64);
        for (int i = 0; i < 64; i++) r->out[4][i] = 1.0f + fabsf(r->out[4][i]); /* a variance */
        s = o->batchnorm_fwd(&k, r->out[0], r->out[1], r->out[2], r->out[3], r->out[4], a, b, c,
                             8, 64, 256, 1e-5f, 0.1f, 1);
        /* BatchNorm1d (HW 1): channels in blocks; mean, rstd, running mean, var side by side */
        r->n[5] = (size_t)512 * 256, r->out[5] = tu_xmalloc(r->n[5] * 4);
        r->n[6] = 4 * 256, r->out[6] = cp(b, 4 * 256);
        for (int i = 3 * 256; i < 4 * 256; i++) r->out[6][i] = 1.0f + fabsf(r->out[6][i]);
        if (s == GT_OK)
            s = o->batchnorm_fwd(&k, r->out[5], r->out[6], r->out[6] + 256, r->out[6] + 512,
                                 r->out[6] + 768, a, b, c, 512, 256, 1, 1e-5f, 0.1f, 1);
        break;
    case GT_OP_BATCHNORM_BWD: {
        float mean[256], rstd[256];
        for (int i = 0; i < 256; i++) mean[i] = 0.1f * b[i], rstd[i] = 1.0f + 0.5f * fabsf(c[i]);
        r->n[0] = (size_t)8 * 64 * 256, r->out[0] = cp(b, r->n[0]);
        r->n[1] = 64, r->out[1] = cp(c, 64);
        r->n[2] = 64, r->out[2] = cp(c + 64, 64);
        s = o->batchnorm_bwd(&k, r->out[0], r->out[1], r->out[2], c, a, b, mean, rstd, 8, 64, 256);
        /* BatchNorm1d: N 512, C 256 (HW 1); dweight, dbias side by side */
        r->n[3] = (size_t)512 * 256, r->out[3] = cp(b, r->n[3]);
        r->n[4] = 512, r->out[4] = cp(c, 512);
        if (s == GT_OK)
            s = o->batchnorm_bwd(&k, r->out[3], r->out[4], r->out[4] + 256, c, a, b, mean, rstd,
                                 512, 256, 1);
        break;
    }
    case GT_OP_RELU_FWD:
        r->n[0] = nbig, r->out[0] = tu_xmalloc(nbig * 4);
        s = o->relu_fwd(&k, r->out[0], a, nbig);
        break;
    case GT_OP_RELU_BWD:
        r->n[0] = nbig, r->out[0] = cp(b, nbig);
        s = o->relu_bwd(&k, r->out[0], a, c, nbig);
        break;
    case GT_OP_AVGPOOL_FWD:
        r->n[0] = (size_t)8 * 512, r->out[0] = tu_xmalloc(r->n[0] * 4);
        s = o->avgpool_fwd(&k, r->out[0], a, 8, 512, 49);
        break;
    case GT_OP_AVGPOOL_BWD:
        r->n[0] = (size_t)8 * 512 * 49, r->out[0] = cp(b, r->n[0]);
        s = o->avgpool_bwd(&k, r->out[0], c, 8, 512, 49);
        break;
    default: break;
    }
    free(a);
    free(b);
    free(c);
    return s;
}

static void run_free(run *r) {
    for (int i = 0; i < NBUF; i++) free(r->out[i]);
}

static gt_backend *mk(int threads) {
    gt_backend_config cfg = {.threads = threads, .device = -1};
    gt_backend *be = NULL;
    gt_status s = gt_backend_new("cpu", &cfg, &be);
    if (s != GT_OK) tu_die("gt_backend_new(cpu)", s);
    return be;
}

/* GEMM C(M,N) = A(M,K) B(N,K)^T with 1, 2 and 3 threads (an odd count:
 * tiles do not divide evenly among them). ta = 1: C(M,N) = A(K,M)^T B: the
 * dweight GEMM shape. */
static int gemm_same(const char *what, int blas, int ta, int M, int N, int K) {
    float *A = tu_xmalloc((size_t)M * K * 4), *B = tu_xmalloc((size_t)N * K * 4);
    float *C1 = tu_xmalloc((size_t)M * N * 4), *C2 = tu_xmalloc((size_t)M * N * 4);
    float *C3 = tu_xmalloc((size_t)M * N * 4);
    fill(A, (size_t)M * K, 7, 1.0f);
    fill(B, (size_t)N * K, 8, 0.05f);
    float *Cs[3] = {C1, C2, C3};
    for (int th = 1; th <= 3; th++) {
        gt_backend *be = mk(th);
        if (blas)
            gt_cpu_sgemm(ta, !ta, M, N, K, A, ta ? M : K, B, ta ? N : K, 0.0f, Cs[th - 1], N, NULL);
        else
            gt_cpu_sgemm_blocked(ta, !ta, M, N, K, A, ta ? M : K, B, ta ? N : K, 0.0f, Cs[th - 1], N,
                                 NULL);
        gt_backend_free(be);
    }
    int same = memcmp(C1, C2, (size_t)M * N * 4) == 0 && memcmp(C1, C3, (size_t)M * N * 4) == 0;
    printf("  %-28s %s M%d N%d K%d: %s\n", what, ta ? "A^T B " : "A B^T ", M, N, K, same ? "bitwise identical" : "DIFFERENT");
    free(A);
    free(B);
    free(C1);
    free(C2);
    free(C3);
    return same;
}

int main(void) {
#ifndef _OPENMP
    printf("skipped: built without OpenMP, the cpu backend runs one thread\n");
    return 77;
#endif
    int fails = 0;
    printf("determinism: cpu ops, 1 thread vs 2 threads\n");
#if GT_HAVE_BLAS
    printf("BLAS: %s, kernel %s (OPENBLAS_CORETYPE=%s); gt_cpu_sgemm: %s (%s)\n", GT_BLAS_DESC,
           openblas_get_corename(),
           getenv("OPENBLAS_CORETYPE") ? getenv("OPENBLAS_CORETYPE") : "unset",
           gt_cpu_sgemm_uses_blas() ? "BLAS tiles" : "own SGEMM", gt_cpu_sgemm_choice());
#else
    printf("BLAS: none, gauntlet's own SGEMM (%s)\n", gt_cpu_sgemm_tile());
#endif
    for (int op = 0; op < GT_OP_COUNT; op++) {
        run r1, r2;
        gt_backend *b1 = mk(1);
        gt_status s1 = run_op(b1, (gt_op)op, &r1);
        gt_backend_free(b1);
        gt_backend *b2 = mk(2);
        gt_status s2 = run_op(b2, (gt_op)op, &r2);
        gt_backend_free(b2);
        if (s1 != GT_OK || s2 != GT_OK) {
            printf("  %-15s FAIL: status %s / %s: %s\n", gt_op_name((gt_op)op), gt_status_name(s1),
                   gt_status_name(s2), gt_last_error());
            fails++;
            continue;
        }
        int same = memcmp(&r1.d, &r2.d, sizeof r1.d) == 0;
        size_t total = 0;
        for (int i = 0; i < NBUF; i++) {
            if (!r1.out[i]) continue;
            total += r1.n[i];
            same = same && memcmp(r1.out[i], r2.out[i], r1.n[i] * 4) == 0;
        }
        printf("  %-15s %zu values%s: %s\n", gt_op_name((gt_op)op), total,
               op == GT_OP_SUMSQ ? " (+ fp64 sum)" : "", same ? "bitwise identical" : "DIFFERENT  FAIL");
        fails += !same;
        run_free(&r1);
        run_free(&r2);
    }
    /* GEMM shapes of gpt2-124m at B=4 T=64 (N = 256 rows): forward A B^T,
     * and the dweight GEMMs A^T B with K = 256. The own kernel skips the
     * lm_head shape: it is slow there and the tiling is shape-generic. */
    static const int shapes[][4] = {{0, 256, 2304, 768}, {0, 256, 768, 3072}, {0, 256, 50304, 768},
                                    {1, 2304, 768, 256}, {1, 768, 3072, 256},  {1, 50304, 768, 256},
                                    {0, 65, 129, 300},   {1, 129, 65, 300}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const int *sh = shapes[i];
        if (sh[2] != 50304 && sh[1] != 50304)
            fails += !gemm_same("own blocked sgemm", 0, sh[0], sh[1], sh[2], sh[3]);
#if GT_HAVE_BLAS
        fails += !gemm_same("gt_cpu_sgemm", 1, sh[0], sh[1], sh[2], sh[3]);
#endif
    }
    printf("determinism: %s\n", fails ? "FAILED" : "all bitwise identical");
    return fails ? 1 : 0;
}
