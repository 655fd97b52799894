/* cpu layernorm: forward per row (statistics in fp64 lanes, two passes over
 * a row that sits in L1), backward per row for dinp, then dweight/dbias in a
 * column-parallel pass summing rows in order (no thread-count dependence).
 * Bound: memory bandwidth (fwd ~8 B/elem, bwd ~20 B/elem). */
#include <math.h>

#include "kernels/cpu/cpu.h"

/* Sum of x[0..n) in fp64 with 8 lanes in a fixed order. */
static inline double sum_f64(const float *x, int n) {
    double l[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int c = 0;
    for (; c + 8 <= n; c += 8)
        for (int j = 0; j < 8; j++) l[j] += x[c + j];
    for (; c < n; c++) l[c & 7] += x[c];
    return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

/* Sum of (x - m)^2 in fp64 lanes. */
static inline double ssd_f64(const float *x, int n, double m) {
    double l[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int c = 0;
    for (; c + 8 <= n; c += 8)
        for (int j = 0; j < 8; j++) {
            double d = x[c + j] - m;
            l[j] += d * d;
        }
    for (; c < n; c++) {
        double d = x[c] - m;
        l[c & 7] += d * d;
    }
    return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

gt_status gt_cpu_layernorm_fwd(const gt_kctx *k, void *out_, float *mean, float *rstd,
                               const void *inp_, const void *weight_, const void *bias_, int N,
                               int C, float eps) {
    GT_CPU_CHECK_DT(k);
    if (N < 0 || C <= 0) return GT_ERR(GT_ERR_INVALID, "layernorm_fwd: N=%d C=%d", N, C);
    float *out = out_;
    const float *inp = inp_, *w = weight_, *bias = bias_;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if ((size_t)N * C > 32768)
#endif
    for (int i = 0; i < N; i++) {
        const float *restrict x = inp + (size_t)i * C;
        float *restrict o = out + (size_t)i * C;
        double m = sum_f64(x, C) / C;
        double var = ssd_f64(x, C, m) / C;
        float s = (float)(1.0 / sqrt(var + (double)eps));
        float mf = (float)m;
        for (int c = 0; c < C; c++) o[c] = (x[c] - mf) * s * w[c] + bias[c];
        mean[i] = mf;
        rstd[i] = s;
    }
    return GT_OK;
}

gt_status gt_cpu_layernorm_bwd(const gt_kctx *k, void *dinp_, void *dweight_, void *dbias_,
                               const void *dout_, const void *inp_, const void *weight_,
                               const float *mean, const float *rstd, int N, int C) {
    GT_CPU_CHECK_DT(k);
    if (N < 0 || C <= 0) return GT_ERR(GT_ERR_INVALID, "layernorm_bwd: N=%d C=%d", N, C);
    float *dinp = dinp_, *dw = dweight_, *db = dbias_;
    const float *dout = dout_, *inp = inp_, *w = weight_;
    enum { CB = 128 };
    int nb = (C + CB - 1) / CB;
#ifdef _OPENMP
#pragma omp parallel if ((size_t)N * C > 32768)
#endif
    {
#ifdef _OPENMP
#pragma omp for schedule(static) nowait
#endif
        for (int i = 0; i < N; i++) {
            const float *restrict x = inp + (size_t)i * C;
            const float *restrict dy = dout + (size_t)i * C;
            float *restrict dx = dinp + (size_t)i * C;
            float m = mean[i], s = rstd[i];
            double l1[8] = {0}, l2[8] = {0};
            int c = 0;
            for (; c + 8 <= C; c += 8)
                for (int j = 0; j < 8; j++) {
                    float dn = w[c + j] * dy[c + j];
                    l1[j] += dn;
                    l2[j] += dn * ((x[c + j] - m) * s);
                }
            for (; c < C; c++) {
                float dn = w[c] * dy[c];
                l1[c & 7] += dn;
                l2[c & 7] += dn * ((x[c] - m) * s);
            }
            float dm = (float)((((l1[0] + l1[1]) + (l1[2] + l1[3])) + ((l1[4] + l1[5]) + (l1[6] + l1[7]))) / C);
            float dnm = (float)((((l2[0] + l2[1]) + (l2[2] + l2[3])) + ((l2[4] + l2[5]) + (l2[6] + l2[7]))) / C);
            for (int c2 = 0; c2 < C; c2++) {
                float norm = (x[c2] - m) * s;
                dx[c2] += (w[c2] * dy[c2] - dm - norm * dnm) * s;
            }
        }
        /* dweight/dbias read only dout, inp, mean, rstd: no barrier needed. */
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (int blk = 0; blk < nb; blk++) {
            int c0 = blk * CB, wd = C - c0 < CB ? C - c0 : CB;
            float aw[CB], ab[CB];
            for (int c = 0; c < wd; c++) aw[c] = ab[c] = 0.0f;
            for (int i = 0; i < N; i++) {
                const float *restrict x = inp + (size_t)i * C + c0;
                const float *restrict dy = dout + (size_t)i * C + c0;
                float m = mean[i], s = rstd[i];
                for (int c = 0; c < wd; c++) {
                    aw[c] += (x[c] - m) * s * dy[c];
                    ab[c] += dy[c];
                }
            }
            for (int c = 0; c < wd; c++) {
                dw[c0 + c] += aw[c];
                db[c0 + c] += ab[c];
            }
        }
    }
    return GT_OK;
}
