/* ref pointwise ops: GELU (tanh approximation) and residual add, in fp64. */
#include <math.h>

#include "kernels/ref/ref.h"

#define GELU_K 0.7978845608028654 /* sqrt(2/pi) */

gt_status gt_ref_gelu_fwd(const gt_kctx *k, void *out_, const void *inp_, size_t n) {
    GT_REF_CHECK_DT(k);
    float *out = out_;
    const float *inp = inp_;
    for (size_t i = 0; i < n; i++) {
        double x = inp[i];
        out[i] = (float)(0.5 * x * (1.0 + tanh(GELU_K * (x + 0.044715 * x * x * x))));
    }
    return GT_OK;
}

gt_status gt_ref_gelu_bwd(const gt_kctx *k, void *dinp_, const void *inp_, const void *dout_,
                          size_t n) {
    GT_REF_CHECK_DT(k);
    float *dinp = dinp_;
    const float *inp = inp_, *dout = dout_;
    for (size_t i = 0; i < n; i++) {
        double x = inp[i];
        double u = GELU_K * (x + 0.044715 * x * x * x);
        double th = tanh(u);
        double sech2 = 1.0 - th * th;
        double g = 0.5 * (1.0 + th) + 0.5 * x * sech2 * GELU_K * (1.0 + 3.0 * 0.044715 * x * x);
        dinp[i] = (float)((double)dinp[i] + g * dout[i]);
    }
    return GT_OK;
}

gt_status gt_ref_residual_fwd(const gt_kctx *k, void *out_, const void *a_, const void *b_,
                              size_t n) {
    GT_REF_CHECK_DT(k);
    float *out = out_;
    const float *a = a_, *b = b_;
    for (size_t i = 0; i < n; i++) out[i] = (float)((double)a[i] + b[i]);
    return GT_OK;
}

gt_status gt_ref_residual_bwd(const gt_kctx *k, void *da_, void *db_, const void *dout_, size_t n) {
    GT_REF_CHECK_DT(k);
    float *da = da_, *db = db_;
    const float *dout = dout_;
    for (size_t i = 0; i < n; i++) {
        da[i] = (float)((double)da[i] + dout[i]);
        db[i] = (float)((double)db[i] + dout[i]);
    }
    return GT_OK;
}
