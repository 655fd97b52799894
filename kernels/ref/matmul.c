/* ref matmul: out(N,OC) = inp(N,C) @ weight(OC,C)^T + bias, and its backward,
 * one fp64 dot product per output element. */
#include "kernels/ref/ref.h"

gt_status gt_ref_matmul_fwd(const gt_kctx *k, void *out_, const void *inp_, const void *weight_,
                            const void *bias_, int N, int C, int OC) {
    GT_REF_CHECK_DT(k);
    if (N < 0 || C < 0 || OC < 0) return GT_ERR(GT_ERR_INVALID, "matmul_fwd: N=%d C=%d OC=%d", N, C, OC);
    float *out = out_;
    const float *inp = inp_, *w = weight_, *bias = bias_;
    for (int i = 0; i < N; i++) {
        for (int o = 0; o < OC; o++) {
            double acc = bias ? (double)bias[o] : 0.0;
            for (int c = 0; c < C; c++) acc += (double)inp[(size_t)i * C + c] * w[(size_t)o * C + c];
            out[(size_t)i * OC + o] = (float)acc;
        }
    }
    return GT_OK;
}

gt_status gt_ref_matmul_bwd(const gt_kctx *k, void *dinp_, void *dweight_, void *dbias_,
                            const void *dout_, const void *inp_, const void *weight_, int N, int C,
                            int OC) {
    GT_REF_CHECK_DT(k);
    if (N < 0 || C < 0 || OC < 0) return GT_ERR(GT_ERR_INVALID, "matmul_bwd: N=%d C=%d OC=%d", N, C, OC);
    float *dinp = dinp_, *dw = dweight_, *db = dbias_;
    const float *dout = dout_, *inp = inp_, *w = weight_;
    if (dinp) {
        for (int i = 0; i < N; i++) {
            for (int c = 0; c < C; c++) {
                double acc = 0.0;
                for (int o = 0; o < OC; o++) acc += (double)dout[(size_t)i * OC + o] * w[(size_t)o * C + c];
                float *d = dinp + (size_t)i * C + c;
                *d = (float)((double)*d + acc);
            }
        }
    }
    for (int o = 0; o < OC; o++) {
        for (int c = 0; c < C; c++) {
            double acc = 0.0;
            for (int i = 0; i < N; i++) acc += (double)dout[(size_t)i * OC + o] * inp[(size_t)i * C + c];
            float *d = dw + (size_t)o * C + c;
            *d = (float)((double)*d + acc);
        }
    }
    if (db) {
        for (int o = 0; o < OC; o++) {
            double acc = 0.0;
            for (int i = 0; i < N; i++) acc += dout[(size_t)i * OC + o];
            db[o] = (float)((double)db[o] + acc);
        }
    }
    return GT_OK;
}
