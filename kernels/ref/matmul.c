/* ref matmul: out(N,OC) = inp(N,C) @ weight(OC,C)^T + bias, and its backward,
 * one fp64 dot product per output element. Storage fp32, bf16 or fp16. */
#include "kernels/ref/ref.h"

gt_status gt_ref_matmul_fwd(const gt_kctx *k, void *out, const void *inp, const void *w,
                            const void *bias, int N, int C, int OC) {
    GT_REF_CHECK_DT_ANY(k);
    if (N < 0 || C < 0 || OC < 0) return GT_ERR(GT_ERR_INVALID, "matmul_fwd: N=%d C=%d OC=%d", N, C, OC);
    gt_dtype dt = k->dt;
    for (int i = 0; i < N; i++) {
        for (int o = 0; o < OC; o++) {
            double acc = bias ? gt_ref_ld(bias, dt, o) : 0.0;
            for (int c = 0; c < C; c++)
                acc += gt_ref_ld(inp, dt, (size_t)i * C + c) * gt_ref_ld(w, dt, (size_t)o * C + c);
            gt_ref_st(out, dt, (size_t)i * OC + o, acc);
        }
    }
    return GT_OK;
}

gt_status gt_ref_matmul_bwd(const gt_kctx *k, void *dinp, void *dw, void *db,
                            const void *dout, const void *inp, const void *w, int N, int C,
                            int OC) {
    GT_REF_CHECK_DT_ANY(k);
    if (N < 0 || C < 0 || OC < 0) return GT_ERR(GT_ERR_INVALID, "matmul_bwd: N=%d C=%d OC=%d", N, C, OC);
    gt_dtype dt = k->dt;
    if (dinp) {
        for (int i = 0; i < N; i++) {
            for (int c = 0; c < C; c++) {
                double acc = 0.0;
                for (int o = 0; o < OC; o++)
                    acc += gt_ref_ld(dout, dt, (size_t)i * OC + o) * gt_ref_ld(w, dt, (size_t)o * C + c);
                size_t d = (size_t)i * C + c;
                gt_ref_st(dinp, dt, d, gt_ref_ld(dinp, dt, d) + acc);
            }
        }
    }
    for (int o = 0; o < OC; o++) {
        for (int c = 0; c < C; c++) {
            double acc = 0.0;
            for (int i = 0; i < N; i++)
                acc += gt_ref_ld(dout, dt, (size_t)i * OC + o) * gt_ref_ld(inp, dt, (size_t)i * C + c);
            size_t d = (size_t)o * C + c;
            gt_ref_st(dw, dt, d, gt_ref_ld(dw, dt, d) + acc);
        }
    }
    if (db) {
        for (int o = 0; o < OC; o++) {
            double acc = 0.0;
            for (int i = 0; i < N; i++) acc += gt_ref_ld(dout, dt, (size_t)i * OC + o);
            gt_ref_st(db, dt, o, gt_ref_ld(db, dt, o) + acc);
        }
    }
    return GT_OK;
}
