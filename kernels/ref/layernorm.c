/* ref layernorm: out = (x - mean) * rstd * w + b per row, biased variance,
 * statistics in fp64 (stored fp32), and its backward (llm.c's formulation).
 * Storage fp32, bf16 or fp16; mean and rstd are fp32 in every case. */
#include <math.h>

#include "kernels/ref/ref.h"

gt_status gt_ref_layernorm_fwd(const gt_kctx *k, void *out, float *mean, float *rstd,
                               const void *inp, const void *w, const void *bias, int N,
                               int C, float eps) {
    GT_REF_CHECK_DT_ANY(k);
    if (N < 0 || C <= 0) return GT_ERR(GT_ERR_INVALID, "layernorm_fwd: N=%d C=%d", N, C);
    gt_dtype dt = k->dt;
    for (int i = 0; i < N; i++) {
        size_t x = (size_t)i * C; // row (C)
        double m = 0.0;
        for (int c = 0; c < C; c++) m += gt_ref_ld(inp, dt, x + c);
        m /= C;
        double var = 0.0;
        for (int c = 0; c < C; c++) {
            double d = gt_ref_ld(inp, dt, x + c) - m;
            var += d * d;
        }
        var /= C;
        double s = 1.0 / sqrt(var + (double)eps);
        for (int c = 0; c < C; c++)
            gt_ref_st(out, dt, x + c,
                      (gt_ref_ld(inp, dt, x + c) - m) * s * gt_ref_ld(w, dt, c) +
                          gt_ref_ld(bias, dt, c));
        mean[i] = (float)m;
        rstd[i] = (float)s;
    }
    return GT_OK;
}

gt_status gt_ref_layernorm_bwd(const gt_kctx *k, void *dinp, void *dw, void *db,
                               const void *dout, const void *inp, const void *w,
                               const float *mean, const float *rstd, int N, int C) {
    GT_REF_CHECK_DT_ANY(k);
    if (N < 0 || C <= 0) return GT_ERR(GT_ERR_INVALID, "layernorm_bwd: N=%d C=%d", N, C);
    gt_dtype dt = k->dt;
    for (int i = 0; i < N; i++) {
        size_t x = (size_t)i * C; // row of inp, dout, dinp (C)
        double m = mean[i], s = rstd[i];
        double dnorm_mean = 0.0, dnorm_norm_mean = 0.0;
        for (int c = 0; c < C; c++) {
            double norm = (gt_ref_ld(inp, dt, x + c) - m) * s;
            double dnorm = gt_ref_ld(w, dt, c) * gt_ref_ld(dout, dt, x + c);
            dnorm_mean += dnorm;
            dnorm_norm_mean += dnorm * norm;
        }
        dnorm_mean /= C;
        dnorm_norm_mean /= C;
        for (int c = 0; c < C; c++) {
            double norm = (gt_ref_ld(inp, dt, x + c) - m) * s;
            double dnorm = gt_ref_ld(w, dt, c) * gt_ref_ld(dout, dt, x + c);
            double g = (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s;
            gt_ref_st(dinp, dt, x + c, gt_ref_ld(dinp, dt, x + c) + g);
        }
    }
    for (int c = 0; c < C; c++) {
        double aw = 0.0, ab = 0.0;
        for (int i = 0; i < N; i++) {
            size_t e = (size_t)i * C + c;
            double norm = (gt_ref_ld(inp, dt, e) - mean[i]) * (double)rstd[i];
            aw += norm * gt_ref_ld(dout, dt, e);
            ab += gt_ref_ld(dout, dt, e);
        }
        gt_ref_st(dw, dt, c, gt_ref_ld(dw, dt, c) + aw);
        gt_ref_st(db, dt, c, gt_ref_ld(db, dt, c) + ab);
    }
    return GT_OK;
}
