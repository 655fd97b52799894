/* ref vision ops: ReLU, global average pooling and batch normalisation
 * (torch.nn.BatchNorm2d semantics, training and eval), forward and backward,
 * every sum in fp64. Storage fp32, bf16 or fp16 (each element loaded to
 * fp64, rounded once on store); BatchNorm's mean, rstd and running
 * statistics are fp32 in every case.
 *
 * Batchnorm in training mode normalises with the batch's biased variance
 * and moves the running variance towards the UNBIASED one, count/(count-1)
 * times larger, like torch. With a count of 1 the unbiased variance does
 * not exist: the running variance is then left as it is (the running mean
 * still moves), where torch would refuse the call. */
#include <math.h>

#include "kernels/ref/ref.h"

gt_status gt_ref_relu_fwd(const gt_kctx *k, void *out, const void *inp, size_t n) {
    GT_REF_CHECK_DT_ANY(k);
    gt_dtype dt = k->dt;
    size_t es = gt_dtype_size(dt);
    /* x < 0 ? 0 : x, not x > 0 ? x : 0: a NaN passes through (as in torch)
     * instead of being hidden as 0. A select, so what passes is the stored
     * element itself, copied (every bit, NaN payloads included: no
     * rounding to apply). out may alias inp: element i only reads and
     * writes element i. */
    for (size_t i = 0; i < n; i++) {
        if (gt_ref_ld(inp, dt, i) < 0.0)
            gt_ref_st(out, dt, i, 0.0);
        else
            memmove((char *)out + i * es, (const char *)inp + i * es, es);
    }
    return GT_OK;
}

gt_status gt_ref_relu_bwd(const gt_kctx *k, void *dinp, const void *out, const void *dout,
                          size_t n) {
    GT_REF_CHECK_DT_ANY(k);
    gt_dtype dt = k->dt;
    for (size_t i = 0; i < n; i++)
        if (gt_ref_ld(out, dt, i) > 0.0)
            gt_ref_st(dinp, dt, i, gt_ref_ld(dinp, dt, i) + gt_ref_ld(dout, dt, i));
    return GT_OK;
}

gt_status gt_ref_avgpool_fwd(const gt_kctx *k, void *out, const void *inp, int N, int C,
                             int HW) {
    GT_REF_CHECK_DT_ANY(k);
    if (N < 0 || C < 1 || HW < 1)
        return GT_ERR(GT_ERR_INVALID, "avgpool_fwd: N=%d C=%d HW=%d (need N >= 0, C >= 1, HW >= 1)",
                      N, C, HW);
    gt_dtype dt = k->dt; // out (N, C), inp (N, C, HW)
    for (size_t r = 0; r < (size_t)N * C; r++) {
        double acc = 0.0;
        for (int p = 0; p < HW; p++) acc += gt_ref_ld(inp, dt, r * HW + p);
        gt_ref_st(out, dt, r, acc / HW);
    }
    return GT_OK;
}

gt_status gt_ref_avgpool_bwd(const gt_kctx *k, void *dinp, const void *dout, int N, int C,
                             int HW) {
    GT_REF_CHECK_DT_ANY(k);
    if (N < 0 || C < 1 || HW < 1)
        return GT_ERR(GT_ERR_INVALID, "avgpool_bwd: N=%d C=%d HW=%d (need N >= 0, C >= 1, HW >= 1)",
                      N, C, HW);
    gt_dtype dt = k->dt; // dinp (N, C, HW), dout (N, C)
    for (size_t r = 0; r < (size_t)N * C; r++) {
        double g = gt_ref_ld(dout, dt, r) / HW;
        for (int p = 0; p < HW; p++) {
            size_t i = r * HW + p;
            gt_ref_st(dinp, dt, i, gt_ref_ld(dinp, dt, i) + g);
        }
    }
    return GT_OK;
}

static gt_status bn_check(const char *op, int N, int C, int HW) {
    if (N < 1 || C < 1 || HW < 1)
        return GT_ERR(GT_ERR_INVALID, "%s: N=%d C=%d HW=%d (each must be >= 1)", op, N, C, HW);
    return GT_OK;
}

gt_status gt_ref_batchnorm_fwd(const gt_kctx *k, void *out, float *mean, float *rstd,
                               float *running_mean, float *running_var, const void *inp,
                               const void *w, const void *bias, int N, int C, int HW,
                               float eps, float momentum, int training) {
    GT_REF_CHECK_DT_ANY(k);
    GT_TRY(bn_check("batchnorm_fwd", N, C, HW));
    if (training && (!mean || !rstd || !running_mean || !running_var))
        return GT_ERR(GT_ERR_INVALID, "batchnorm_fwd: training needs mean, rstd, running_mean "
                      "and running_var (one is NULL)");
    if (!training && (!running_mean || !running_var))
        return GT_ERR(GT_ERR_INVALID, "batchnorm_fwd: eval mode needs running_mean and "
                      "running_var (one is NULL)");
    gt_dtype dt = k->dt; // out, inp (N, C, HW); w, bias (C); the statistics (C) fp32
    double cnt = (double)N * HW;
    for (int c = 0; c < C; c++) {
        double m, s;
        if (training) {
            m = 0.0;
            for (int n = 0; n < N; n++)
                for (int p = 0; p < HW; p++) m += gt_ref_ld(inp, dt, ((size_t)n * C + c) * HW + p);
            m /= cnt;
            double var = 0.0;
            for (int n = 0; n < N; n++)
                for (int p = 0; p < HW; p++) {
                    double d = gt_ref_ld(inp, dt, ((size_t)n * C + c) * HW + p) - m;
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
        double wc = gt_ref_ld(w, dt, c), bc = gt_ref_ld(bias, dt, c);
        for (int n = 0; n < N; n++)
            for (int p = 0; p < HW; p++) {
                size_t i = ((size_t)n * C + c) * HW + p;
                gt_ref_st(out, dt, i, (gt_ref_ld(inp, dt, i) - m) * s * wc + bc);
            }
    }
    return GT_OK;
}

gt_status gt_ref_batchnorm_bwd(const gt_kctx *k, void *dinp, void *dw, void *db,
                               const void *dout, const void *inp, const void *w,
                               const float *mean, const float *rstd, int N, int C, int HW) {
    GT_REF_CHECK_DT_ANY(k);
    GT_TRY(bn_check("batchnorm_bwd", N, C, HW));
    gt_dtype dt = k->dt; // dinp, dout, inp (N, C, HW); dw, db, w (C); mean, rstd (C) fp32
    double cnt = (double)N * HW;
    for (int c = 0; c < C; c++) {
        double m = mean[c], s = rstd[c], wc = gt_ref_ld(w, dt, c);
        /* dL/dnorm = w dy; dL/dx = s (dnorm - mean(dnorm) - norm mean(dnorm norm)) */
        double sum_dy = 0.0, sum_dy_norm = 0.0;
        for (int n = 0; n < N; n++)
            for (int p = 0; p < HW; p++) {
                size_t i = ((size_t)n * C + c) * HW + p;
                double norm = (gt_ref_ld(inp, dt, i) - m) * s;
                double dy = gt_ref_ld(dout, dt, i);
                sum_dy += dy;
                sum_dy_norm += dy * norm;
            }
        double dnorm_mean = wc * sum_dy / cnt;
        double dnorm_norm_mean = wc * sum_dy_norm / cnt;
        for (int n = 0; n < N; n++)
            for (int p = 0; p < HW; p++) {
                size_t i = ((size_t)n * C + c) * HW + p;
                double norm = (gt_ref_ld(inp, dt, i) - m) * s;
                double g = (wc * gt_ref_ld(dout, dt, i) - dnorm_mean - norm * dnorm_norm_mean) * s;
                gt_ref_st(dinp, dt, i, gt_ref_ld(dinp, dt, i) + g);
            }
        gt_ref_st(dw, dt, c, gt_ref_ld(dw, dt, c) + sum_dy_norm);
        gt_ref_st(db, dt, c, gt_ref_ld(db, dt, c) + sum_dy);
    }
    return GT_OK;
}
