/* ref matmul: out(N,OC) = inp(N,C) @ weight(OC,C)^T + bias, its backward
 * (dinp overwritten, dweight and dbias accumulated), and the same linear
 * layer fused with GELU (matmul_gelu_fwd, matmul_dgelu_bwd). One fp64 dot
 * product per output element, rounded once on store. Storage fp32, bf16 or
 * fp16. */
#include "kernels/ref/ref.h"

/* sum_c inp[i,c] w[o,c] (+ bias[o]) in fp64. */
static double dot_row(const void *inp, const void *w, const void *bias, gt_dtype dt, int i, int o,
                      int C) {
    double acc = bias ? gt_ref_ld(bias, dt, o) : 0.0;
    for (int c = 0; c < C; c++)
        acc += gt_ref_ld(inp, dt, (size_t)i * C + c) * gt_ref_ld(w, dt, (size_t)o * C + c);
    return acc;
}

/* sum_o dout[i,o] w[o,c] in fp64: element (i,c) of dout @ weight. */
static double dot_col(const void *dout, const void *w, gt_dtype dt, int i, int c, int C, int OC) {
    double acc = 0.0;
    for (int o = 0; o < OC; o++)
        acc += gt_ref_ld(dout, dt, (size_t)i * OC + o) * gt_ref_ld(w, dt, (size_t)o * C + c);
    return acc;
}

/* dweight(OC,C) += dout^T @ inp; dbias(OC) += column sums of dout (db may be NULL). */
static void weight_grads(void *dw, void *db, const void *dout, const void *inp, gt_dtype dt, int N,
                         int C, int OC) {
    for (int o = 0; o < OC; o++) {
        for (int c = 0; c < C; c++) {
            double acc = 0.0;
            for (int i = 0; i < N; i++)
                acc +=
                    gt_ref_ld(dout, dt, (size_t)i * OC + o) * gt_ref_ld(inp, dt, (size_t)i * C + c);
            size_t d = (size_t)o * C + c;
            gt_ref_st(dw, dt, d, gt_ref_ld(dw, dt, d) + acc);
        }
    }
    if (db) {
        for (int o = 0; o < OC; o++) {
            double acc = 0.0;
            for (int i = 0; i < N; i++)
                acc += gt_ref_ld(dout, dt, (size_t)i * OC + o);
            gt_ref_st(db, dt, o, gt_ref_ld(db, dt, o) + acc);
        }
    }
}

gt_status gt_ref_matmul_fwd(const gt_kctx *k, void *out, const void *inp, const void *w,
                            const void *bias, int N, int C, int OC) {
    GT_REF_CHECK_DT_ANY(k);
    if (N < 0 || C < 0 || OC < 0)
        return GT_ERR(GT_ERR_INVALID, "matmul_fwd: N=%d C=%d OC=%d", N, C, OC);
    gt_dtype dt = k->dt;
    for (int i = 0; i < N; i++)
        for (int o = 0; o < OC; o++)
            gt_ref_st(out, dt, (size_t)i * OC + o, dot_row(inp, w, bias, dt, i, o, C));
    return GT_OK;
}

gt_status gt_ref_matmul_bwd(const gt_kctx *k, void *dinp, void *dw, void *db, const void *dout,
                            const void *inp, const void *w, int N, int C, int OC) {
    GT_REF_CHECK_DT_ANY(k);
    if (N < 0 || C < 0 || OC < 0)
        return GT_ERR(GT_ERR_INVALID, "matmul_bwd: N=%d C=%d OC=%d", N, C, OC);
    gt_dtype dt = k->dt;
    if (dinp) /* overwritten: the old values are never read */
        for (int i = 0; i < N; i++)
            for (int c = 0; c < C; c++)
                gt_ref_st(dinp, dt, (size_t)i * C + c, dot_col(dout, w, dt, i, c, C, OC));
    weight_grads(dw, db, dout, inp, dt, N, C, OC);
    return GT_OK;
}

gt_status gt_ref_matmul_gelu_fwd(const gt_kctx *k, void *out, void *pre, const void *inp,
                                 const void *w, const void *bias, int N, int C, int OC) {
    GT_REF_CHECK_DT_ANY(k);
    if (N < 0 || C < 0 || OC < 0)
        return GT_ERR(GT_ERR_INVALID, "matmul_gelu_fwd: N=%d C=%d OC=%d", N, C, OC);
    gt_dtype dt = k->dt;
    for (int i = 0; i < N; i++)
        for (int o = 0; o < OC; o++) {
            /* GELU of the exact pre-activation: one rounding per output */
            double p = dot_row(inp, w, bias, dt, i, o, C);
            size_t d = (size_t)i * OC + o;
            gt_ref_st(pre, dt, d, p);
            gt_ref_st(out, dt, d, gt_ref_gelu(p));
        }
    return GT_OK;
}

gt_status gt_ref_matmul_dgelu_bwd(const gt_kctx *k, void *dpre, void *dw, void *db,
                                  const void *dout, const void *inp, const void *w, const void *pre,
                                  int N, int C, int OC) {
    GT_REF_CHECK_DT_ANY(k);
    if (N < 0 || C < 0 || OC < 0)
        return GT_ERR(GT_ERR_INVALID, "matmul_dgelu_bwd: N=%d C=%d OC=%d", N, C, OC);
    gt_dtype dt = k->dt;
    for (int i = 0; i < N; i++)
        for (int c = 0; c < C; c++) {
            size_t d = (size_t)i * C + c;
            double g = dot_col(dout, w, dt, i, c, C, OC);
            gt_ref_st(dpre, dt, d, g * gt_ref_gelu_grad(gt_ref_ld(pre, dt, d)));
        }
    weight_grads(dw, db, dout, inp, dt, N, C, OC);
    return GT_OK;
}
