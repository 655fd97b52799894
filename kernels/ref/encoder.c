/* ref encoder: token + position embedding and its scatter-add backward.
 * out(B,T,C) = wte[inp[b,t]] + wpe[t]; the backward sums every occurrence of
 * a token in fp64 and adds it to dwte once. */
#include "kernels/ref/ref.h"

gt_status gt_ref_encoder_fwd(const gt_kctx *k, void *out_, const int32_t *inp, const void *wte_,
                             const void *wpe_, int B, int T, int C) {
    GT_REF_CHECK_DT(k);
    if (B < 0 || T < 0 || C < 0) return GT_ERR(GT_ERR_INVALID, "encoder_fwd: B=%d T=%d C=%d", B, T, C);
    float *out = out_;
    const float *wte = wte_, *wpe = wpe_;
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            size_t bt = (size_t)b * T + t;
            const float *we = wte + (size_t)inp[bt] * C; // (C)
            const float *pe = wpe + (size_t)t * C;       // (C)
            for (int c = 0; c < C; c++) out[bt * C + c] = (float)((double)we[c] + (double)pe[c]);
        }
    }
    return GT_OK;
}

gt_status gt_ref_encoder_bwd(const gt_kctx *k, void *dwte_, void *dwpe_, const void *dout_,
                             const int32_t *inp, int B, int T, int C) {
    GT_REF_CHECK_DT(k);
    if (B < 0 || T < 0 || C < 0) return GT_ERR(GT_ERR_INVALID, "encoder_bwd: B=%d T=%d C=%d", B, T, C);
    float *dwte = dwte_, *dwpe = dwpe_;
    const float *dout = dout_;
    int N = B * T;
    for (int i = 0; i < N; i++) {
        int seen = 0;
        for (int j = 0; j < i && !seen; j++) seen = inp[j] == inp[i];
        if (seen) continue; /* this token's row was done at its first occurrence */
        for (int c = 0; c < C; c++) {
            double acc = 0.0;
            for (int j = i; j < N; j++)
                if (inp[j] == inp[i]) acc += dout[(size_t)j * C + c];
            float *d = dwte + (size_t)inp[i] * C + c;
            *d = (float)((double)*d + acc);
        }
    }
    for (int t = 0; t < T; t++) {
        for (int c = 0; c < C; c++) {
            double acc = 0.0;
            for (int b = 0; b < B; b++) acc += dout[((size_t)b * T + t) * C + c];
            float *d = dwpe + (size_t)t * C + c;
            *d = (float)((double)*d + acc);
        }
    }
    return GT_OK;
}
