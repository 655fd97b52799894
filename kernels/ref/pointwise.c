/* ref pointwise ops: GELU (tanh approximation) and residual add, in fp64.
 * Storage fp32, bf16 or fp16. */
#include <math.h>

#include "kernels/ref/ref.h"

gt_status gt_ref_gelu_fwd(const gt_kctx *k, void *out, const void *inp, size_t n) {
    GT_REF_CHECK_DT_ANY(k);
    gt_dtype dt = k->dt;
    for (size_t i = 0; i < n; i++) {
        gt_ref_st(out, dt, i, gt_ref_gelu(gt_ref_ld(inp, dt, i)));
    }
    return GT_OK;
}

gt_status gt_ref_gelu_bwd(const gt_kctx *k, void *dinp, const void *inp, const void *dout,
                          size_t n) {
    GT_REF_CHECK_DT_ANY(k);
    gt_dtype dt = k->dt;
    for (size_t i = 0; i < n; i++) {
        double g = gt_ref_gelu_grad(gt_ref_ld(inp, dt, i));
        gt_ref_st(dinp, dt, i, gt_ref_ld(dinp, dt, i) + g * gt_ref_ld(dout, dt, i));
    }
    return GT_OK;
}

gt_status gt_ref_residual_fwd(const gt_kctx *k, void *out, const void *a, const void *b,
                              size_t n) {
    GT_REF_CHECK_DT_ANY(k);
    gt_dtype dt = k->dt;
    /* element by element, each loaded before its store: out may alias a or b */
    for (size_t i = 0; i < n; i++) gt_ref_st(out, dt, i, gt_ref_ld(a, dt, i) + gt_ref_ld(b, dt, i));
    return GT_OK;
}

gt_status gt_ref_residual_bwd(const gt_kctx *k, void *da, void *db, const void *dout, size_t n) {
    GT_REF_CHECK_DT_ANY(k);
    gt_dtype dt = k->dt;
    for (size_t i = 0; i < n; i++) {
        double g = gt_ref_ld(dout, dt, i);
        gt_ref_st(da, dt, i, gt_ref_ld(da, dt, i) + g);
        gt_ref_st(db, dt, i, gt_ref_ld(db, dt, i) + g);
    }
    return GT_OK;
}
