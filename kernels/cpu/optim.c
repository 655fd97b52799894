/* cpu AdamW and sum of squares.
 *
 * AdamW: one fused pass (read params, grads, m, v; write params, m, v:
 * 28 B/elem) - memory bound, so nothing but the update happens in it; the
 * bias corrections are folded into two scalars outside the loop.
 * sumsq: fp64, in fixed chunks whose boundaries depend only on n, partials
 * added in chunk order: the same bits on any thread count. Bound: 4 B/elem. */
#include <math.h>

#include "kernels/cpu/cpu.h"

#define BLOCK 8192

/* One block of the update; a separate function so that the restrict
 * qualifiers hold for the whole loop. Vectorising it also needs
 * -fno-math-errno (CMakeLists.txt), or sqrtf stays a scalar call. */
static void adamw_block(float *restrict p, const float *restrict g, float *restrict m,
                        float *restrict v, size_t n, float lr, float beta1, float beta2,
                        float eps, float wd, float gscale, float ic1, float ic2) {
    const float ob1 = 1.0f - beta1, ob2 = 1.0f - beta2;
    for (size_t i = 0; i < n; i++) {
        float gi = g[i] * gscale;
        float mi = beta1 * m[i] + ob1 * gi;
        float vi = beta2 * v[i] + ob2 * (gi * gi);
        float upd = (mi * ic1) / (sqrtf(vi * ic2) + eps) + wd * p[i];
        m[i] = mi;
        v[i] = vi;
        p[i] -= lr * upd;
    }
}

gt_status gt_cpu_adamw(const gt_kctx *k, float *params, const void *grads_, float *m, float *v,
                       size_t n, float lr, float beta1, float beta2, float eps,
                       float weight_decay, float grad_scale, int t) {
    GT_CPU_CHECK_DT(k);
    if (t < 1) return GT_ERR(GT_ERR_INVALID, "adamw: step t=%d, must be >= 1", t);
    const float *grads = grads_;
    float ic1 = (float)(1.0 / (1.0 - pow((double)beta1, t)));
    float ic2 = (float)(1.0 / (1.0 - pow((double)beta2, t)));
    size_t nb = (n + BLOCK - 1) / BLOCK;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (n > 65536)
#endif
    for (size_t blk = 0; blk < nb; blk++) {
        size_t lo = blk * BLOCK, end = lo + BLOCK < n ? lo + BLOCK : n;
        adamw_block(params + lo, grads + lo, m + lo, v + lo, end - lo, lr, beta1, beta2, eps,
                    weight_decay, grad_scale, ic1, ic2);
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
