/* ref attention: causal multi-head softmax(q k^T / sqrt(hs)) v in fp64, the
 * probabilities saved in att (B,NH,T,T) (zero above the diagonal), and the
 * backward through them (it takes the forward's out but does not need it).
 * Storage of qkv, out and their gradients fp32, bf16 or fp16; att is fp32
 * in every case. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/ref/ref.h"

gt_status gt_ref_attention_fwd(const gt_kctx *k, void *out, float *att, const void *qkv, int B,
                               int T, int C, int NH) {
    GT_REF_CHECK_DT_ANY(k);
    if (B < 0 || T < 0 || C <= 0 || NH <= 0 || C % NH != 0)
        return GT_ERR(GT_ERR_INVALID, "attention_fwd: B=%d T=%d C=%d NH=%d (C %% NH must be 0)", B, T, C, NH);
    gt_dtype dt = k->dt;
    int hs = C / NH;
    double scale = 1.0 / sqrt((double)hs);
    double *p = malloc(sizeof(double) * (T > 0 ? T : 1));
    if (!p) return GT_ERR(GT_ERR_OOM, "attention_fwd scratch (%d doubles)", T);
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < NH; h++) {
            for (int t = 0; t < T; t++) {
                size_t q = ((size_t)b * T + t) * 3 * C + (size_t)h * hs; // (hs)
                double mx = -INFINITY;
                for (int t2 = 0; t2 <= t; t2++) {
                    size_t kk = ((size_t)b * T + t2) * 3 * C + C + (size_t)h * hs;
                    double dot = 0.0;
                    for (int i = 0; i < hs; i++) dot += gt_ref_ld(qkv, dt, q + i) * gt_ref_ld(qkv, dt, kk + i);
                    p[t2] = dot * scale;
                    if (p[t2] > mx) mx = p[t2];
                }
                double sum = 0.0;
                for (int t2 = 0; t2 <= t; t2++) {
                    p[t2] = exp(p[t2] - mx);
                    sum += p[t2];
                }
                float *arow = att + (((size_t)b * NH + h) * T + t) * T; // (T)
                for (int t2 = 0; t2 < T; t2++) arow[t2] = t2 <= t ? (float)(p[t2] / sum) : 0.0f;
                size_t o = ((size_t)b * T + t) * C + (size_t)h * hs;
                for (int i = 0; i < hs; i++) {
                    double acc = 0.0;
                    for (int t2 = 0; t2 <= t; t2++) {
                        size_t v = ((size_t)b * T + t2) * 3 * C + 2 * C + (size_t)h * hs;
                        acc += p[t2] / sum * gt_ref_ld(qkv, dt, v + i);
                    }
                    gt_ref_st(out, dt, o + i, acc);
                }
            }
        }
    }
    free(p);
    return GT_OK;
}

gt_status gt_ref_attention_bwd(const gt_kctx *k, void *dqkv, const void *dout, const void *qkv,
                               const void *out, const float *att, int B, int T, int C, int NH) {
    GT_REF_CHECK_DT_ANY(k);
    if (B < 0 || T < 0 || C <= 0 || NH <= 0 || C % NH != 0)
        return GT_ERR(GT_ERR_INVALID, "attention_bwd: B=%d T=%d C=%d NH=%d (C %% NH must be 0)", B, T, C, NH);
    /* out is part of the contract (other backends read it); the
     * probabilities in att are all this backward needs */
    if (!out) return GT_ERR(GT_ERR_INVALID, "attention_bwd: out (the forward's output) is NULL");
    gt_dtype dt = k->dt;
    int hs = C / NH;
    double scale = 1.0 / sqrt((double)hs);
    size_t n = (size_t)B * T * 3 * C;
    /* Gradients gather in fp64 and are added to dqkv once at the end. */
    double *acc = calloc(n ? n : 1, sizeof(double));
    double *datt = malloc(sizeof(double) * (T > 0 ? T : 1));
    if (!acc || !datt) {
        free(acc);
        free(datt);
        return GT_ERR(GT_ERR_OOM, "attention_bwd scratch (%zu doubles)", n);
    }
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < NH; h++) {
            for (int t = 0; t < T; t++) {
                const float *arow = att + (((size_t)b * NH + h) * T + t) * T;
                size_t dy = ((size_t)b * T + t) * C + (size_t)h * hs; // dout (hs)
                size_t qoff = ((size_t)b * T + t) * 3 * C + (size_t)h * hs;
                double dot_ad = 0.0;
                for (int t2 = 0; t2 <= t; t2++) {
                    size_t voff = ((size_t)b * T + t2) * 3 * C + 2 * (size_t)C + (size_t)h * hs;
                    double d = 0.0;
                    for (int i = 0; i < hs; i++) {
                        double g = gt_ref_ld(dout, dt, dy + i);
                        d += gt_ref_ld(qkv, dt, voff + i) * g;
                        acc[voff + i] += (double)arow[t2] * g;
                    }
                    datt[t2] = d;
                    dot_ad += (double)arow[t2] * d;
                }
                for (int t2 = 0; t2 <= t; t2++) {
                    double dpre = (double)arow[t2] * (datt[t2] - dot_ad) * scale;
                    size_t koff = ((size_t)b * T + t2) * 3 * C + (size_t)C + (size_t)h * hs;
                    for (int i = 0; i < hs; i++) {
                        acc[qoff + i] += dpre * gt_ref_ld(qkv, dt, koff + i);
                        acc[koff + i] += dpre * gt_ref_ld(qkv, dt, qoff + i);
                    }
                }
            }
        }
    }
    for (size_t i = 0; i < n; i++) gt_ref_st(dqkv, dt, i, gt_ref_ld(dqkv, dt, i) + acc[i]);
    free(acc);
    free(datt);
    return GT_OK;
}
