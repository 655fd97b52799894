/* ref vision ops: ReLU, global average pooling and batch normalisation
 * (torch.nn.BatchNorm2d semantics, training and eval), forward and backward,
 * every sum in fp64 (stored fp32).
 *
 * Batchnorm in training mode normalises with the batch's biased variance
 * and moves the running variance towards the UNBIASED one, count/(count-1)
 * times larger, like torch. With a count of 1 the unbiased variance does
 * not exist: the running variance is then left as it is (the running mean
 * still moves), where torch would refuse the call. */
#include <math.h>

#include "kernels/ref/ref.h"

gt_status gt_ref_relu_fwd(const gt_kctx *k, void *out_, const void *inp_, size_t n) {
    GT_REF_CHECK_DT(k);
    float *out = out_;
    const float *inp = inp_;
    /* x < 0 ? 0 : x, not x > 0 ? x : 0: a NaN passes through (as in torch)
     * instead of being hidden as 0. out may alias inp. */
    for (size_t i = 0; i < n; i++) out[i] = inp[i] < 0.0f ? 0.0f : inp[i];
    return GT_OK;
}

gt_status gt_ref_relu_bwd(const gt_kctx *k, void *dinp_, const void *out_, const void *dout_,
                          size_t n) {
    GT_REF_CHECK_DT(k);
    float *dinp = dinp_;
    const float *out = out_, *dout = dout_;
    for (size_t i = 0; i < n; i++)
        if (out[i] > 0.0f) dinp[i] = (float)((double)dinp[i] + dout[i]);
    return GT_OK;
}

gt_status gt_ref_avgpool_fwd(const gt_kctx *k, void *out_, const void *inp_, int N, int C,
                             int HW) {
    GT_REF_CHECK_DT(k);
    if (N < 0 || C < 1 || HW < 1)
        return GT_ERR(GT_ERR_INVALID, "avgpool_fwd: N=%d C=%d HW=%d (need N >= 0, C >= 1, HW >= 1)",
                      N, C, HW);
    float *out = out_;       // (N, C)
    const float *inp = inp_; // (N, C, HW)
    for (size_t r = 0; r < (size_t)N * C; r++) {
        double acc = 0.0;
        for (int p = 0; p < HW; p++) acc += inp[r * HW + p];
        out[r] = (float)(acc / HW);
    }
    return GT_OK;
}

gt_status gt_ref_avgpool_bwd(const gt_kctx *k, void *dinp_, const void *dout_, int N, int C,
                             int HW) {
    GT_REF_CHECK_DT(k);
    if (N < 0 || C < 1 || HW < 1)
        return GT_ERR(GT_ERR_INVALID, "avgpool_bwd: N=%d C=%d HW=%d (need N >= 0, C >= 1, HW >= 1)",
                      N, C, HW);
    float *dinp = dinp_;       // (N, C, HW)
    const float *dout = dout_; // (N, C)
    for (size_t r = 0; r < (size_t)N * C; r++) {
        double g = (double)dout[r] / HW;
        for (int p = 0; p < HW; p++) dinp[r * HW + p] = (float)((double)dinp[r * HW + p] + g);
    }
    return GT_OK;
}

static gt_status bn_check(const char *op, int N, int C, int HW) {
    if (N < 1 || C < 1 || HW < 1)
        return GT_ERR(GT_ERR_INVALID, "%s: N=%d C=%d HW=%d (each must be >= 1)", op, N, C, HW);
    return GT_OK;
}

gt_status gt_ref_batchnorm_fwd(const gt_kctx *k, void *out_, float *mean, float *rstd,
                               float *running_mean, float *running_var, const void *inp_,
                               const void *weight_, const void *bias_, int N, int C, int HW,
                               float eps, float momentum, int training) {
    GT_REF_CHECK_DT(k);
    GT_TRY(bn_check("batchnorm_fwd", N, C, HW));
    if (training && (!mean || !rstd || !running_mean || !running_var))
        return GT_ERR(GT_ERR_INVALID, "batchnorm_fwd: training needs mean, rstd, running_mean "
                      "and running_var (one is NULL)");
    if (!training && (!running_mean || !running_var))
        return GT_ERR(GT_ERR_INVALID, "batchnorm_fwd: eval mode needs running_mean and "
                      "running_var (one is NULL)");
    float *out = out_;                             // (N, C, HW)
    const float *inp = inp_;                       // (N, C, HW)
    const float *w = weight_, *bias = bias_;       // (C)
    double cnt = (double)N * HW;
    for (int c = 0; c < C; c++) {
        double m, s;
        if (training) {
            m = 0.0;
            for (int n = 0; n < N; n++)
                for (int p = 0; p < HW; p++) m += inp[((size_t)n * C + c) * HW + p];
            m /= cnt;
            double var = 0.0;
            for (int n = 0; n < N; n++)
                for (int p = 0; p < HW; p++) {
                    double d = (double)inp[((size_t)n * C + c) * HW + p] - m;
                    var += d * d;
                }
            var /= cnt; /* biased: what normalises */
            s = 1.0 / sqrt(var + (double)eps);
            mean[c] = (float)m;
            rstd[c] = (float)s;
            double mom = momentum;
            running_mean[c] = (float)((1.0 - mom) * running_mean[c] + mom * m);
            if (cnt > 1.0)
                running_var[c] = (float)((1.0 - mom) * running_var[c] + mom * var * cnt / (cnt - 1.0));
        } else {
            m = running_mean[c];
            s = 1.0 / sqrt((double)running_var[c] + (double)eps);
        }
        for (int n = 0; n < N; n++)
            for (int p = 0; p < HW; p++) {
                size_t i = ((size_t)n * C + c) * HW + p;
                out[i] = (float)(((double)inp[i] - m) * s * w[c] + bias[c]);
            }
    }
    return GT_OK;
}

gt_status gt_ref_batchnorm_bwd(const gt_kctx *k, void *dinp_, void *dweight_, void *dbias_,
                               const void *dout_, const void *inp_, const void *weight_,
                               const float *mean, const float *rstd, int N, int C, int HW) {
    GT_REF_CHECK_DT(k);
    GT_TRY(bn_check("batchnorm_bwd", N, C, HW));
    float *dinp = dinp_, *dw = dweight_, *db = dbias_; // (N,C,HW), (C), (C)
    const float *dout = dout_, *inp = inp_, *w = weight_;
    double cnt = (double)N * HW;
    for (int c = 0; c < C; c++) {
        double m = mean[c], s = rstd[c];
        /* dL/dnorm = w dy; dL/dx = s (dnorm - mean(dnorm) - norm mean(dnorm norm)) */
        double sum_dy = 0.0, sum_dy_norm = 0.0;
        for (int n = 0; n < N; n++)
            for (int p = 0; p < HW; p++) {
                size_t i = ((size_t)n * C + c) * HW + p;
                double norm = ((double)inp[i] - m) * s;
                sum_dy += dout[i];
                sum_dy_norm += (double)dout[i] * norm;
            }
        double dnorm_mean = (double)w[c] * sum_dy / cnt;
        double dnorm_norm_mean = (double)w[c] * sum_dy_norm / cnt;
        for (int n = 0; n < N; n++)
            for (int p = 0; p < HW; p++) {
                size_t i = ((size_t)n * C + c) * HW + p;
                double norm = ((double)inp[i] - m) * s;
                double g = ((double)w[c] * dout[i] - dnorm_mean - norm * dnorm_norm_mean) * s;
                dinp[i] = (float)((double)dinp[i] + g);
            }
        dw[c] = (float)((double)dw[c] + sum_dy_norm);
        db[c] = (float)((double)db[c] + sum_dy);
    }
    return GT_OK;
}
