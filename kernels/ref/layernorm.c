/* ref layernorm: out = (x - mean) * rstd * w + b per row, biased variance,
 * statistics in fp64 (stored fp32), and its backward (llm.c's formulation). */
#include <math.h>

#include "kernels/ref/ref.h"

gt_status gt_ref_layernorm_fwd(const gt_kctx *k, void *out_, float *mean, float *rstd,
                               const void *inp_, const void *weight_, const void *bias_, int N,
                               int C, float eps) {
    GT_REF_CHECK_DT(k);
    if (N < 0 || C <= 0) return GT_ERR(GT_ERR_INVALID, "layernorm_fwd: N=%d C=%d", N, C);
    float *out = out_;
    const float *inp = inp_, *w = weight_, *bias = bias_;
    for (int i = 0; i < N; i++) {
        const float *x = inp + (size_t)i * C; // (C)
        double m = 0.0;
        for (int c = 0; c < C; c++) m += x[c];
        m /= C;
        double var = 0.0;
        for (int c = 0; c < C; c++) var += ((double)x[c] - m) * ((double)x[c] - m);
        var /= C;
        double s = 1.0 / sqrt(var + (double)eps);
        for (int c = 0; c < C; c++)
            out[(size_t)i * C + c] = (float)(((double)x[c] - m) * s * w[c] + bias[c]);
        mean[i] = (float)m;
        rstd[i] = (float)s;
    }
    return GT_OK;
}

gt_status gt_ref_layernorm_bwd(const gt_kctx *k, void *dinp_, void *dweight_, void *dbias_,
                               const void *dout_, const void *inp_, const void *weight_,
                               const float *mean, const float *rstd, int N, int C) {
    GT_REF_CHECK_DT(k);
    if (N < 0 || C <= 0) return GT_ERR(GT_ERR_INVALID, "layernorm_bwd: N=%d C=%d", N, C);
    float *dinp = dinp_, *dw = dweight_, *db = dbias_;
    const float *dout = dout_, *inp = inp_, *w = weight_;
    for (int i = 0; i < N; i++) {
        const float *x = inp + (size_t)i * C, *dy = dout + (size_t)i * C;
        double m = mean[i], s = rstd[i];
        double dnorm_mean = 0.0, dnorm_norm_mean = 0.0;
        for (int c = 0; c < C; c++) {
            double norm = ((double)x[c] - m) * s;
            double dnorm = (double)w[c] * dy[c];
            dnorm_mean += dnorm;
            dnorm_norm_mean += dnorm * norm;
        }
        dnorm_mean /= C;
        dnorm_norm_mean /= C;
        for (int c = 0; c < C; c++) {
            double norm = ((double)x[c] - m) * s;
            double dnorm = (double)w[c] * dy[c];
            double g = (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s;
            float *d = dinp + (size_t)i * C + c;
            *d = (float)((double)*d + g);
        }
    }
    for (int c = 0; c < C; c++) {
        double aw = 0.0, ab = 0.0;
        for (int i = 0; i < N; i++) {
            double norm = ((double)inp[(size_t)i * C + c] - mean[i]) * (double)rstd[i];
            aw += norm * dout[(size_t)i * C + c];
            ab += dout[(size_t)i * C + c];
        }
        dw[c] = (float)((double)dw[c] + aw);
        db[c] = (float)((double)db[c] + ab);
    }
    return GT_OK;
}
