/* cpu attention: causal multi-head softmax(q k^T / sqrt(hs)) v, probabilities
 * saved in att (B,NH,T,T), and the backward.
 *
 * One (batch, head) pair per OpenMP work item: its K (and V in the backward)
 * is transposed once into a scratch (hs,T) so that a query row's scores are
 * an axpy over contiguous t2 (vectorised, each score summed over i in order);
 * outputs and dq/dk/dv are axpys over contiguous head dimensions. Gradients
 * for k and v gather in per-pair scratch across query rows t in order, then
 * are added once. Bound: ~4 B T^2 C FLOPs fwd, ~8 B T^2 C bwd (causal half);
 * for GPT-2 small shapes (T=64) these are small, L1-resident problems. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/cpu.h"

static gt_status check(int B, int T, int C, int NH) {
    if (B < 0 || T < 0 || C <= 0 || NH <= 0 || C % NH != 0)
        return GT_ERR(GT_ERR_INVALID, "attention: B=%d T=%d C=%d NH=%d (C %% NH must be 0)", B, T, C, NH);
    return GT_OK;
}

gt_status gt_cpu_attention_fwd(const gt_kctx *k, void *out_, float *att, const void *qkv_, int B,
                               int T, int C, int NH) {
    GT_CPU_CHECK_DT(k);
    GT_TRY(check(B, T, C, NH));
    if (B == 0 || T == 0) return GT_OK;
    float *out = out_;
    const float *qkv = qkv_;
    int hs = C / NH;
    float scale = (float)(1.0 / sqrt((double)hs));
    size_t C3 = (size_t)3 * C;
    int failed = 0;
#ifdef _OPENMP
#pragma omp parallel reduction(| : failed)
#endif
    {
        float *kT = malloc(sizeof(float) * ((size_t)hs * T + 2 * (size_t)T + hs));
        float *sc = kT ? kT + (size_t)hs * T : NULL; // (T) scores, then probabilities
        float *acc = kT ? sc + T : NULL;                // (hs)
        failed = !kT;
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (int bh = 0; bh < B * NH; bh++) {
            if (!kT) continue;
            int b = bh / NH, h = bh % NH;
            const float *base = qkv + (size_t)b * T * C3 + (size_t)h * hs;
            for (int t = 0; t < T; t++)
                for (int i = 0; i < hs; i++) kT[(size_t)i * T + t] = base[(size_t)t * C3 + C + i];
            for (int t = 0; t < T; t++) {
                const float *q = base + (size_t)t * C3; // (hs)
                int n = t + 1;
                for (int t2 = 0; t2 < n; t2++) sc[t2] = 0.0f;
                for (int i = 0; i < hs; i++) {
                    float qi = q[i];
                    const float *kr = kT + (size_t)i * T;
                    for (int t2 = 0; t2 < n; t2++) sc[t2] += qi * kr[t2];
                }
                float mx = -INFINITY;
                for (int t2 = 0; t2 < n; t2++) {
                    sc[t2] *= scale;
                    mx = sc[t2] > mx ? sc[t2] : mx;
                }
                float l[16] = {0};
                for (int t2 = 0; t2 < n; t2++) {
                    float e = gt_cpu_expf(gt_cpu_clampf(sc[t2] - mx, -87.0f, 0.0f));
                    sc[t2] = e;
                    l[t2 & 15] += e;
                }
                double sum = 0.0;
                for (int j = 0; j < 16; j++) sum += l[j];
                float inv = (float)(1.0 / sum);
                float *arow = att + ((size_t)bh * T + t) * T;
                for (int t2 = 0; t2 < n; t2++) arow[t2] = sc[t2] * inv;
                for (int t2 = n; t2 < T; t2++) arow[t2] = 0.0f;
                for (int i = 0; i < hs; i++) acc[i] = 0.0f;
                for (int t2 = 0; t2 < n; t2++) {
                    float p = arow[t2];
                    const float *v = base + (size_t)t2 * C3 + 2 * (size_t)C;
                    for (int i = 0; i < hs; i++) acc[i] += p * v[i];
                }
                memcpy(out + ((size_t)b * T + t) * C + (size_t)h * hs, acc, sizeof(float) * hs);
            }
        }
        free(kT);
    }
    if (failed) return GT_ERR(GT_ERR_OOM, "attention_fwd scratch (T=%d hs=%d)", T, hs);
    return GT_OK;
}

gt_status gt_cpu_attention_bwd(const gt_kctx *k, void *dqkv_, const void *dout_, const void *qkv_,
                               const void *out, const float *att, int B, int T, int C, int NH) {
    GT_CPU_CHECK_DT(k);
    GT_TRY(check(B, T, C, NH));
    /* out is part of the contract (cuda reads it); the probabilities are enough here */
    if (!out) return GT_ERR(GT_ERR_INVALID, "attention_bwd: out (the forward's output) is NULL");
    if (B == 0 || T == 0) return GT_OK;
    float *dqkv = dqkv_;
    const float *dout = dout_, *qkv = qkv_;
    int hs = C / NH;
    float scale = (float)(1.0 / sqrt((double)hs));
    size_t C3 = (size_t)3 * C;
    size_t th = (size_t)T * hs;
    int failed = 0;
#ifdef _OPENMP
#pragma omp parallel reduction(| : failed)
#endif
    {
        float *vT = malloc(sizeof(float) * (3 * th + T + hs));
        float *dk = vT ? vT + th : NULL;     // (T,hs)
        float *dv = vT ? dk + th : NULL;     // (T,hs)
        float *datt = vT ? dv + th : NULL;   // (T)
        float *dq = vT ? datt + T : NULL;    // (hs)
        failed = !vT;
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
        for (int bh = 0; bh < B * NH; bh++) {
            if (!vT) continue;
            int b = bh / NH, h = bh % NH;
            const float *base = qkv + (size_t)b * T * C3 + (size_t)h * hs;
            float *dbase = dqkv + (size_t)b * T * C3 + (size_t)h * hs;
            for (int t = 0; t < T; t++)
                for (int i = 0; i < hs; i++) vT[(size_t)i * T + t] = base[(size_t)t * C3 + 2 * C + i];
            memset(dk, 0, sizeof(float) * 2 * th);
            for (int t = 0; t < T; t++) {
                const float *arow = att + ((size_t)bh * T + t) * T;
                const float *dy = dout + ((size_t)b * T + t) * C + (size_t)h * hs; // (hs)
                const float *q = base + (size_t)t * C3;
                int n = t + 1;
                for (int t2 = 0; t2 < n; t2++) datt[t2] = 0.0f;
                for (int i = 0; i < hs; i++) {
                    float di = dy[i];
                    const float *vr = vT + (size_t)i * T;
                    for (int t2 = 0; t2 < n; t2++) datt[t2] += di * vr[t2];
                }
                float l[16] = {0};
                for (int t2 = 0; t2 < n; t2++) l[t2 & 15] += arow[t2] * datt[t2];
                double dot = 0.0;
                for (int j = 0; j < 16; j++) dot += l[j];
                float dotf = (float)dot;
                for (int i = 0; i < hs; i++) dq[i] = 0.0f;
                for (int t2 = 0; t2 < n; t2++) {
                    float a = arow[t2];
                    float dpre = a * (datt[t2] - dotf) * scale;
                    const float *kr = base + (size_t)t2 * C3 + C;
                    float *dkr = dk + (size_t)t2 * hs, *dvr = dv + (size_t)t2 * hs;
                    for (int i = 0; i < hs; i++) {
                        dq[i] += dpre * kr[i];
                        dkr[i] += dpre * q[i];
                        dvr[i] += a * dy[i];
                    }
                }
                float *dqr = dbase + (size_t)t * C3;
                for (int i = 0; i < hs; i++) dqr[i] += dq[i];
            }
            for (int t = 0; t < T; t++) {
                float *dkr = dbase + (size_t)t * C3 + C, *dvr = dkr + C;
                for (int i = 0; i < hs; i++) {
                    dkr[i] += dk[(size_t)t * hs + i];
                    dvr[i] += dv[(size_t)t * hs + i];
                }
            }
        }
        free(vT);
    }
    if (failed) return GT_ERR(GT_ERR_OOM, "attention_bwd scratch (T=%d hs=%d)", T, hs);
    return GT_OK;
}
