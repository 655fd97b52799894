/* ref AdamW (torch.optim.AdamW semantics) and the fp64 sum of squares, both
 * computed in fp64 element by element in index order. The gradients (and
 * sumsq's input) are stored in k->dt: fp32, bf16 or fp16; params, m and v
 * are fp32 (master weights). */
#include <math.h>

#include "kernels/ref/ref.h"

gt_status gt_ref_adamw(const gt_kctx *k, float *params, const void *grads, float *m, float *v,
                       size_t n, float lr, float beta1, float beta2, float eps,
                       float weight_decay, float grad_scale, int t) {
    GT_REF_CHECK_DT_ANY(k);
    if (t < 1) return GT_ERR(GT_ERR_INVALID, "adamw: step t=%d, must be >= 1", t);
    gt_dtype dt = k->dt;
    double b1 = beta1, b2 = beta2;
    double c1 = 1.0 - pow(b1, t), c2 = 1.0 - pow(b2, t);
    for (size_t i = 0; i < n; i++) {
        double g = gt_ref_ld(grads, dt, i) * grad_scale;
        double mi = b1 * m[i] + (1.0 - b1) * g;
        double vi = b2 * v[i] + (1.0 - b2) * g * g;
        double p = params[i];
        p -= (double)lr * ((mi / c1) / (sqrt(vi / c2) + (double)eps) + (double)weight_decay * p);
        m[i] = (float)mi;
        v[i] = (float)vi;
        params[i] = (float)p;
    }
    return GT_OK;
}

gt_status gt_ref_sumsq(const gt_kctx *k, const void *x, size_t n, double *out_host) {
    GT_REF_CHECK_DT_ANY(k);
    gt_dtype dt = k->dt;
    double acc = 0.0;
    for (size_t i = 0; i < n; i++) {
        double e = gt_ref_ld(x, dt, i);
        acc += e * e;
    }
    *out_host = acc;
    return GT_OK;
}
