/* ref encoder: token + position embedding and its scatter-add backward.
 * out(B,T,C) = wte[inp[b,t]] + wpe[t]; the backward sums every occurrence of
 * a token in fp64 and adds it to dwte once. Storage fp32, bf16 or fp16. */
#include "kernels/ref/ref.h"

gt_status gt_ref_encoder_fwd(const gt_kctx *k, void *out, const int32_t *inp, const void *wte,
                             const void *wpe, int B, int T, int C) {
    GT_REF_CHECK_DT_ANY(k);
    if (B < 0 || T < 0 || C < 0) return GT_ERR(GT_ERR_INVALID, "encoder_fwd: B=%d T=%d C=%d", B, T, C);
    gt_dtype dt = k->dt;
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            size_t bt = (size_t)b * T + t;
            size_t we = (size_t)inp[bt] * C; // wte row (C)
            size_t pe = (size_t)t * C;       // wpe row (C)
            for (int c = 0; c < C; c++)
                gt_ref_st(out, dt, bt * C + c, gt_ref_ld(wte, dt, we + c) + gt_ref_ld(wpe, dt, pe + c));
        }
    }
    return GT_OK;
}

gt_status gt_ref_encoder_bwd(const gt_kctx *k, void *dwte, void *dwpe, const void *dout,
                             const int32_t *inp, int B, int T, int C) {
    GT_REF_CHECK_DT_ANY(k);
    if (B < 0 || T < 0 || C < 0) return GT_ERR(GT_ERR_INVALID, "encoder_bwd: B=%d T=%d C=%d", B, T, C);
    gt_dtype dt = k->dt;
    int N = B * T;
    for (int i = 0; i < N; i++) {
        int seen = 0;
        for (int j = 0; j < i && !seen; j++) seen = inp[j] == inp[i];
        if (seen) continue; /* this token's row was done at its first occurrence */
        for (int c = 0; c < C; c++) {
            double acc = 0.0;
            for (int j = i; j < N; j++)
                if (inp[j] == inp[i]) acc += gt_ref_ld(dout, dt, (size_t)j * C + c);
            size_t d = (size_t)inp[i] * C + c;
            gt_ref_st(dwte, dt, d, gt_ref_ld(dwte, dt, d) + acc);
        }
    }
    for (int t = 0; t < T; t++) {
        for (int c = 0; c < C; c++) {
            double acc = 0.0;
            for (int b = 0; b < B; b++) acc += gt_ref_ld(dout, dt, ((size_t)b * T + t) * C + c);
            size_t d = (size_t)t * C + c;
            gt_ref_st(dwpe, dt, d, gt_ref_ld(dwpe, dt, d) + acc);
        }
    }
    return GT_OK;
}
