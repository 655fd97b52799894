/* cpu matmul: out(N,OC) = inp(N,C) @ weight(OC,C)^T + bias, and backward
 * dinp = dout @ weight (overwritten), dweight += dout^T @ inp,
 * dbias += colsum(dout); and the same linear layer fused with GELU
 * (matmul_gelu_fwd: pre and gelu(pre); matmul_dgelu_bwd: dpre = (dout @
 * weight) * gelu'(pre)).
 *
 * Variants: the three GEMMs go through gt_cpu_sgemm (OpenBLAS or the own
 * blocked kernel); the bias rides in the GEMM's C (no extra pass); dbias is
 * a column-parallel sum. The GELU ops are the GEMM then one elementwise
 * pass of pointwise.c (gelu_fwd, gt_cpu_gelu_grad_mul), so they give the bits of the
 * unfused sequence: on a CPU the pass costs what it costs either way (the
 * saving is a GPU epilogue's). Bound: GEMM FLOP/s (2 N C OC per GEMM). */
#include <stdlib.h>

#include "kernels/cpu/cpu.h"
#include "kernels/cpu/sgemm.h"

gt_status gt_cpu_matmul_fwd(const gt_kctx *k, void *out, const void *inp, const void *weight,
                            const void *bias, int N, int C, int OC) {
    GT_CPU_CHECK_DT(k);
    if (N < 0 || C < 0 || OC < 0)
        return GT_ERR(GT_ERR_INVALID, "matmul_fwd: N=%d C=%d OC=%d", N, C, OC);
    return gt_cpu_sgemm(0, 1, N, OC, C, inp, C, weight, C, 0.0f, out, OC, bias);
}

/* dbias(OC) += sum over rows of dout(N,OC). Column blocks are independent,
 * and each column is summed in row order: no thread-count dependence. */
static void bias_grad(float *dbias, const float *dout, int N, int OC) {
    enum { CB = 64 };
    int nb = (OC + CB - 1) / CB;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (int blk = 0; blk < nb; blk++) {
        int o0 = blk * CB, w = OC - o0 < CB ? OC - o0 : CB;
        float acc[CB];
        for (int j = 0; j < w; j++)
            acc[j] = 0.0f;
        for (int i = 0; i < N; i++) {
            const float *row = dout + (size_t)i * OC + o0;
            for (int j = 0; j < w; j++)
                acc[j] += row[j];
        }
        for (int j = 0; j < w; j++)
            dbias[o0 + j] += acc[j];
    }
}

gt_status gt_cpu_matmul_bwd(const gt_kctx *k, void *dinp, void *dweight, void *dbias,
                            const void *dout, const void *inp, const void *weight, int N, int C,
                            int OC) {
    GT_CPU_CHECK_DT(k);
    if (N < 0 || C < 0 || OC < 0)
        return GT_ERR(GT_ERR_INVALID, "matmul_bwd: N=%d C=%d OC=%d", N, C, OC);
    if (dinp) /* (N,C) = (N,OC) @ (OC,C), beta 0: dinp's old values are never read */
        GT_TRY(gt_cpu_sgemm(0, 0, N, C, OC, dout, OC, weight, C, 0.0f, dinp, C, NULL));
    /* (OC,C) += (N,OC)^T @ (N,C) */
    GT_TRY(gt_cpu_sgemm(1, 0, OC, C, N, dout, OC, inp, C, 1.0f, dweight, C, NULL));
    if (dbias) bias_grad(dbias, dout, N, OC);
    return GT_OK;
}

gt_status gt_cpu_matmul_gelu_fwd(const gt_kctx *k, void *out_, void *pre_, const void *inp,
                                 const void *weight, const void *bias, int N, int C, int OC) {
    GT_CPU_CHECK_DT(k);
    if (N < 0 || C < 0 || OC < 0)
        return GT_ERR(GT_ERR_INVALID, "matmul_gelu_fwd: N=%d C=%d OC=%d", N, C, OC);
    GT_TRY(gt_cpu_sgemm(0, 1, N, OC, C, inp, C, weight, C, 0.0f, pre_, OC, bias));
    /* the pointwise op over the whole GEMM output: the unfused bits */
    return gt_cpu_gelu_fwd(k, out_, pre_, (size_t)N * OC);
}

gt_status gt_cpu_matmul_dgelu_bwd(const gt_kctx *k, void *dpre_, void *dweight, void *dbias,
                                  const void *dout, const void *inp, const void *weight,
                                  const void *pre_, int N, int C, int OC) {
    GT_CPU_CHECK_DT(k);
    if (N < 0 || C < 0 || OC < 0)
        return GT_ERR(GT_ERR_INVALID, "matmul_dgelu_bwd: N=%d C=%d OC=%d", N, C, OC);
    /* dpre(N,C) = (N,OC) @ (OC,C), then times gelu'(pre) in place */
    GT_TRY(gt_cpu_sgemm(0, 0, N, C, OC, dout, OC, weight, C, 0.0f, dpre_, C, NULL));
    gt_cpu_gelu_grad_mul(dpre_, pre_, (size_t)N * C);
    /* dweight and dbias exactly as matmul_bwd */
    return gt_cpu_matmul_bwd(k, NULL, dweight, dbias, dout, inp, weight, N, C, OC);
}
