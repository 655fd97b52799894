/* cpu AdamW and sum of squares.
 *
 * AdamW: one fused pass (read params, grads, m, v; write params, m, v:
 * 28 B/elem) - memory bound, so nothing but the update happens in it; the
 * bias corrections are folded into two scalars outside the loop.
 * sumsq: fp64, in fixed chunks whose boundaries depend only on n, partials
 * added in chunk order: the same bits on any thread count. Bound: 4 B/elem. */
#if defined(__GNUC__) && !defined(__clang__)
/* sqrtf of a non-negative value never sets errno; without this gcc keeps a
 * scalar errno path and will not vectorise the update. IEEE results are
 * unchanged (this is not -ffast-math). */
#pragma GCC optimize("no-math-errno")
#endif

#include <math.h>

#include "kernels/cpu/cpu.h"

#define BLOCK 8192

gt_status gt_cpu_adamw(const gt_kctx *k, float *params, const void *grads_, float *m, float *v,
                       size_t n, float lr, float beta1, float beta2, float eps,
                       float weight_decay, float grad_scale, int t) {
    GT_CPU_CHECK_DT(k);
    if (t < 1) return GT_ERR(GT_ERR_INVALID, "adamw: step t=%d, must be >= 1", t);
    const float *grads = grads_;
    float ic1 = (float)(1.0 / (1.0 - pow((double)beta1, t)));
    float ic2 = (float)(1.0 / (1.0 - pow((double)beta2, t)));
    float ob1 = 1.0f - beta1, ob2 = 1.0f - beta2;
    size_t nb = (n + BLOCK - 1) / BLOCK;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (n > 65536)
#endif
    for (size_t blk = 0; blk < nb; blk++) {
        size_t end = (blk + 1) * BLOCK < n ? (blk + 1) * BLOCK : n;
        float *restrict p = params;
        float *restrict mm = m;
        float *restrict vv = v;
        const float *restrict gg = grads;
        for (size_t i = blk * BLOCK; i < end; i++) {
            float g = gg[i] * grad_scale;
            float mi = beta1 * mm[i] + ob1 * g;
            float vi = beta2 * vv[i] + ob2 * (g * g);
            float upd = (mi * ic1) / (sqrtf(vi * ic2) + eps) + weight_decay * p[i];
            mm[i] = mi;
            vv[i] = vi;
            p[i] -= lr * upd;
        }
    }
    return GT_OK;
}

gt_status gt_cpu_sumsq(const gt_kctx *k, const void *x_, size_t n, double *out_host) {
    GT_CPU_CHECK_DT(k);
    enum { MAXCHUNKS = 256, MINCHUNK = 16384 };
    const float *x = x_;
    size_t nc = (n + MINCHUNK - 1) / MINCHUNK;
    if (nc > MAXCHUNKS) nc = MAXCHUNKS;
    if (nc == 0) nc = 1;
    size_t chunk = (n + nc - 1) / nc;
    double part[MAXCHUNKS];
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (n > 65536)
#endif
    for (size_t ci = 0; ci < nc; ci++) {
        size_t lo = ci * chunk, hi = lo + chunk < n ? lo + chunk : n;
        double l[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        size_t i = lo;
        for (; i + 8 <= hi; i += 8)
            for (int j = 0; j < 8; j++) l[j] += (double)x[i + j] * x[i + j];
        for (; i < hi; i++) l[0] += (double)x[i] * x[i];
        part[ci] = ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
    }
    double s = 0.0;
    for (size_t ci = 0; ci < nc; ci++) s += part[ci];
    *out_host = s;
    return GT_OK;
}
