/* cpu vision ops: global average pooling and batch normalisation
 * (training and eval), forward and backward (ReLU is with the other
 * pointwise ops, in pointwise.c).
 *
 * Variants: avgpool one (n, c) row per work item; batchnorm one channel per
 * work item (a block of BN_CB channels when HW is small, BatchNorm1d's HW 1
 * above all), so the
 * statistics and the dweight/dbias sums of a channel are each summed by
 * one thread in a fixed order (in fp64), whatever the thread count.
 * Eval-mode batchnorm is elementwise and goes over (n, c) rows.
 * Bound: memory bandwidth (avgpool_fwd 4 B/elem, avgpool_bwd 8, batchnorm_fwd training 12 (two reads, one write),
 * batchnorm_bwd 24 (dout and inp twice, dinp read and written)).
 *
 * Batchnorm semantics are the ref's (kernels/ref/vision.c): torch's, and
 * with a count N*HW of 1 the running variance is left unchanged. */
#include <math.h>

#include "kernels/cpu/cpu.h"

#define PAR_MIN 65536 /* below this a parallel region costs more than it saves */

/* Sum of x[0..n) in fp64 with 8 lanes in a fixed order. */
static inline double sum_f64(const float *x, int n) {
    double l[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int c = 0;
    for (; c + 8 <= n; c += 8)
        for (int j = 0; j < 8; j++) l[j] += x[c + j];
    for (; c < n; c++) l[c & 7] += x[c];
    return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

gt_status gt_cpu_avgpool_fwd(const gt_kctx *k, void *out_, const void *inp_, int N, int C,
                             int HW) {
    GT_CPU_CHECK_DT(k);
    if (N < 0 || C < 1 || HW < 1)
        return GT_ERR(GT_ERR_INVALID, "avgpool_fwd: N=%d C=%d HW=%d (need N >= 0, C >= 1, HW >= 1)",
                      N, C, HW);
    float *restrict out = out_;       // (N, C)
    const float *restrict inp = inp_; // (N, C, HW)
    long rows = (long)N * C;
    double inv = 1.0 / HW; /* a divide per row would cost more than the row at small HW */
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if ((size_t)rows * HW > PAR_MIN)
#endif
    for (long r = 0; r < rows; r++) {
        const float *x = inp + (size_t)r * HW;
        double acc = 0.0;
        if (HW < 8) /* BatchNorm1d-like rows: lanes would cost more than the sum */
            for (int p = 0; p < HW; p++) acc += x[p];
        else
            acc = sum_f64(x, HW);
        out[r] = (float)(acc * inv);
    }
    return GT_OK;
}

gt_status gt_cpu_avgpool_bwd(const gt_kctx *k, void *dinp_, const void *dout_, int N, int C,
                             int HW) {
    GT_CPU_CHECK_DT(k);
    if (N < 0 || C < 1 || HW < 1)
        return GT_ERR(GT_ERR_INVALID, "avgpool_bwd: N=%d C=%d HW=%d (need N >= 0, C >= 1, HW >= 1)",
                      N, C, HW);
    float *restrict dinp = dinp_;       // (N, C, HW)
    const float *restrict dout = dout_; // (N, C)
    long rows = (long)N * C;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if ((size_t)rows * HW > PAR_MIN)
#endif
    for (long r = 0; r < rows; r++) {
        float g = dout[r] / (float)HW;
        float *restrict d = dinp + (size_t)r * HW;
        for (int p = 0; p < HW; p++) d[p] += g;
    }
    return GT_OK;
}

/* Batchnorm's work item: one channel when its rows (HW values) are long
 * enough for 8 fp64 lanes, else BN_CB channels whose rows lie side by side
 * (BatchNorm1d: HW 1, where one channel per item would stride through
 * memory C floats at a time). Either way each channel is summed by one
 * thread in (n, p) order, and the choice depends on the shape only. */
#define BN_SMALL_HW 16
#define BN_CB 32

/* Sum of x[0..n), fp64, 8 lanes from 8 values on. */
static inline double row_sum(const float *x, int n) {
    if (n < 8) {
        double acc = 0.0;
        for (int p = 0; p < n; p++) acc += x[p];
        return acc;
    }
    return sum_f64(x, n);
}

/* Sum of (x - m)^2, likewise. */
static inline double row_ssd(const float *x, int n, double m) {
    if (n < 8) {
        double acc = 0.0;
        for (int p = 0; p < n; p++) acc += (x[p] - m) * (x[p] - m);
        return acc;
    }
    double l[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int p = 0;
    for (; p + 8 <= n; p += 8)
        for (int j = 0; j < 8; j++) {
            double d = x[p + j] - m;
            l[j] += d * d;
        }
    for (; p < n; p++) {
        double d = x[p] - m;
        l[p & 7] += d * d;
    }
    return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

/* *sdy += sum dy, *sdyn += sum dy (x - m) s over a row of n, fp64 lanes. */
static inline void row_dsums(const float *dy, const float *x, int n, float m, float s,
                             double *sdy, double *sdyn) {
    if (n < 8) {
        for (int p = 0; p < n; p++) {
            *sdy += dy[p];
            *sdyn += (double)dy[p] * ((x[p] - m) * s);
        }
        return;
    }
    double l1[8] = {0, 0, 0, 0, 0, 0, 0, 0}, l2[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int p = 0;
    for (; p + 8 <= n; p += 8)
        for (int j = 0; j < 8; j++) {
            l1[j] += dy[p + j];
            l2[j] += (double)dy[p + j] * ((x[p + j] - m) * s);
        }
    for (; p < n; p++) {
        l1[p & 7] += dy[p];
        l2[p & 7] += (double)dy[p] * ((x[p] - m) * s);
    }
    *sdy += ((l1[0] + l1[1]) + (l1[2] + l1[3])) + ((l1[4] + l1[5]) + (l1[6] + l1[7]));
    *sdyn += ((l2[0] + l2[1]) + (l2[2] + l2[3])) + ((l2[4] + l2[5]) + (l2[6] + l2[7]));
}

static gt_status bn_check(const char *op, int N, int C, int HW) {
    if (N < 1 || C < 1 || HW < 1)
        return GT_ERR(GT_ERR_INVALID, "%s: N=%d C=%d HW=%d (each must be >= 1)", op, N, C, HW);
    return GT_OK;
}

gt_status gt_cpu_batchnorm_fwd(const gt_kctx *k, void *out_, float *mean, float *rstd,
                               float *running_mean, float *running_var, const void *inp_,
                               const void *weight_, const void *bias_, int N, int C, int HW,
                               float eps, float momentum, int training) {
    GT_CPU_CHECK_DT(k);
    GT_TRY(bn_check("batchnorm_fwd", N, C, HW));
    if (training && (!mean || !rstd || !running_mean || !running_var))
        return GT_ERR(GT_ERR_INVALID, "batchnorm_fwd: training needs mean, rstd, running_mean "
                      "and running_var (one is NULL)");
    if (!training && (!running_mean || !running_var))
        return GT_ERR(GT_ERR_INVALID, "batchnorm_fwd: eval mode needs running_mean and "
                      "running_var (one is NULL)");
    float *out = out_;                       // (N, C, HW)
    const float *inp = inp_;                 // (N, C, HW)
    const float *w = weight_, *bias = bias_; // (C)
    if (!training) {
        long rows = (long)N * C;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if ((size_t)N * C * HW > PAR_MIN)
#endif
        for (long r = 0; r < rows; r++) {
            int c = (int)(r % C);
            float s = (float)(1.0 / sqrt((double)running_var[c] + (double)eps));
            float a = s * w[c], b = bias[c], m = running_mean[c];
            const float *restrict x = inp + (size_t)r * HW;
            float *restrict o = out + (size_t)r * HW;
            for (int p = 0; p < HW; p++) o[p] = (x[p] - m) * a + b;
        }
        return GT_OK;
    }
    double cnt = (double)N * HW;
    int cb = HW >= BN_SMALL_HW ? 1 : BN_CB, nb = (C + cb - 1) / cb;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if ((size_t)N * C * HW > PAR_MIN)
#endif
    for (int blk = 0; blk < nb; blk++) {
        int c0 = blk * cb, nc = C - c0 < cb ? C - c0 : cb;
        double m[BN_CB], var[BN_CB];
        float a[BN_CB], mf[BN_CB];
        for (int j = 0; j < nc; j++) m[j] = var[j] = 0.0;
        /* HW 1 spelled out: the loops over j then vectorise */
        for (int n = 0; n < N; n++) {
            const float *x = inp + ((size_t)n * C + c0) * HW;
            if (HW == 1)
                for (int j = 0; j < nc; j++) m[j] += x[j];
            else
                for (int j = 0; j < nc; j++) m[j] += row_sum(x + (size_t)j * HW, HW);
        }
        for (int j = 0; j < nc; j++) m[j] /= cnt;
        for (int n = 0; n < N; n++) {
            const float *x = inp + ((size_t)n * C + c0) * HW;
            if (HW == 1)
                for (int j = 0; j < nc; j++) var[j] += (x[j] - m[j]) * (x[j] - m[j]);
            else
                for (int j = 0; j < nc; j++) var[j] += row_ssd(x + (size_t)j * HW, HW, m[j]);
        }
        for (int j = 0; j < nc; j++) {
            int c = c0 + j;
            double v = var[j] / cnt, mom = momentum;
            float sj = (float)(1.0 / sqrt(v + (double)eps));
            mf[j] = (float)m[j];
            mean[c] = mf[j];
            rstd[c] = sj;
            running_mean[c] = (float)((1.0 - mom) * running_mean[c] + mom * m[j]);
            if (cnt > 1.0)
                running_var[c] = (float)((1.0 - mom) * running_var[c] + mom * v * cnt / (cnt - 1.0));
            a[j] = sj * w[c];
        }
        for (int n = 0; n < N; n++) {
            const float *restrict x = inp + ((size_t)n * C + c0) * HW;
            float *restrict o = out + ((size_t)n * C + c0) * HW;
            if (HW == 1) {
                for (int j = 0; j < nc; j++) o[j] = (x[j] - mf[j]) * a[j] + bias[c0 + j];
                continue;
            }
            for (int j = 0; j < nc; j++) {
                float aj = a[j], bj = bias[c0 + j], mj = mf[j];
                for (int p = 0; p < HW; p++) o[(size_t)j * HW + p] = (x[(size_t)j * HW + p] - mj) * aj + bj;
            }
        }
    }
    return GT_OK;
}

gt_status gt_cpu_batchnorm_bwd(const gt_kctx *k, void *dinp_, void *dweight_, void *dbias_,
                               const void *dout_, const void *inp_, const void *weight_,
                               const float *mean, const float *rstd, int N, int C, int HW) {
    GT_CPU_CHECK_DT(k);
    GT_TRY(bn_check("batchnorm_bwd", N, C, HW));
    float *dinp = dinp_, *dw = dweight_, *db = dbias_; // (N,C,HW), (C), (C)
    const float *dout = dout_, *inp = inp_, *w = weight_;
    double cnt = (double)N * HW;
    int cb = HW >= BN_SMALL_HW ? 1 : BN_CB, nb = (C + cb - 1) / cb;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if ((size_t)N * C * HW > PAR_MIN)
#endif
    for (int blk = 0; blk < nb; blk++) {
        int c0 = blk * cb, nc = C - c0 < cb ? C - c0 : cb;
        double sdy[BN_CB], sdyn[BN_CB];
        for (int j = 0; j < nc; j++) sdy[j] = sdyn[j] = 0.0;
        for (int n = 0; n < N; n++) {
            size_t o = ((size_t)n * C + c0) * HW;
            if (HW == 1) { /* spelled out: the loop over j then vectorises */
                for (int j = 0; j < nc; j++) {
                    sdy[j] += dout[o + j];
                    sdyn[j] += (double)dout[o + j] * ((inp[o + j] - mean[c0 + j]) * rstd[c0 + j]);
                }
                continue;
            }
            for (int j = 0; j < nc; j++)
                row_dsums(dout + o + (size_t)j * HW, inp + o + (size_t)j * HW, HW, mean[c0 + j],
                          rstd[c0 + j], &sdy[j], &sdyn[j]);
        }
        /* dx = s (w dy - mean(w dy) - norm mean(w dy norm)) = dy a - (b + norm e) */
        float a[BN_CB], b[BN_CB], e[BN_CB];
        for (int j = 0; j < nc; j++) {
            int c = c0 + j;
            a[j] = w[c] * rstd[c];
            b[j] = (float)(w[c] * sdy[j] / cnt) * rstd[c];
            e[j] = (float)(w[c] * sdyn[j] / cnt) * rstd[c];
        }
        for (int n = 0; n < N; n++) {
            if (HW == 1) {
                size_t o = (size_t)n * C + c0;
                for (int j = 0; j < nc; j++)
                    dinp[o + j] += dout[o + j] * a[j] -
                                   (b[j] + (inp[o + j] - mean[c0 + j]) * rstd[c0 + j] * e[j]);
                continue;
            }
            for (int j = 0; j < nc; j++) {
                int c = c0 + j;
                float m = mean[c], s = rstd[c], aj = a[j], bj = b[j], ej = e[j];
                size_t o = ((size_t)n * C + c) * HW;
                const float *restrict x = inp + o;
                const float *restrict dy = dout + o;
                float *restrict dx = dinp + o;
                for (int p = 0; p < HW; p++) dx[p] += dy[p] * aj - (bj + (x[p] - m) * s * ej);
            }
        }
        for (int j = 0; j < nc; j++) {
            dw[c0 + j] += (float)sdyn[j];
            db[c0 + j] += (float)sdy[j];
        }
    }
    return GT_OK;
}
