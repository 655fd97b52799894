/* cpu encoder: out(B,T,C) = wte[inp] + wpe[t] (rows in parallel), and the
 * backward scatter-add into dwte(V,C) / dwpe(maxT,C).
 * The backward is parallel over column blocks: each thread owns columns of
 * every row, walks the tokens in (b,t) order, so repeated tokens are summed
 * in the order the contract fixes and no two threads touch one float.
 * Bound: memory bandwidth (fwd 12 B/elem, bwd ~20 B/elem). */
#include "kernels/cpu/cpu.h"

#define CB 128 /* columns per work item in the backward */

gt_status gt_cpu_encoder_fwd(const gt_kctx *k, void *out_, const int32_t *inp, const void *wte_,
                             const void *wpe_, int B, int T, int C) {
    GT_CPU_CHECK_DT(k);
    if (B < 0 || T < 0 || C < 0) return GT_ERR(GT_ERR_INVALID, "encoder_fwd: B=%d T=%d C=%d", B, T, C);
    float *out = out_;
    const float *wte = wte_, *wpe = wpe_;
    int N = B * T;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if ((size_t)N * C > 65536)
#endif
    for (int bt = 0; bt < N; bt++) {
        float *restrict o = out + (size_t)bt * C;
        const float *restrict we = wte + (size_t)inp[bt] * C;
        const float *restrict pe = wpe + (size_t)(bt % T) * C;
        for (int c = 0; c < C; c++) o[c] = we[c] + pe[c];
    }
    return GT_OK;
}

gt_status gt_cpu_encoder_bwd(const gt_kctx *k, void *dwte_, void *dwpe_, const void *dout_,
                             const int32_t *inp, int B, int T, int C) {
    GT_CPU_CHECK_DT(k);
    if (B < 0 || T < 0 || C < 0) return GT_ERR(GT_ERR_INVALID, "encoder_bwd: B=%d T=%d C=%d", B, T, C);
    float *dwte = dwte_, *dwpe = dwpe_;
    const float *dout = dout_;
    int nb = (C + CB - 1) / CB;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if ((size_t)B * T * C > 65536)
#endif
    for (int blk = 0; blk < nb; blk++) {
        int c0 = blk * CB, w = C - c0 < CB ? C - c0 : CB;
        for (int b = 0; b < B; b++) {
            for (int t = 0; t < T; t++) {
                const float *restrict d = dout + ((size_t)b * T + t) * C + c0;
                float *restrict we = dwte + (size_t)inp[b * T + t] * C + c0;
                float *restrict pe = dwpe + (size_t)t * C + c0;
                for (int c = 0; c < w; c++) {
                    we[c] += d[c];
                    pe[c] += d[c];
                }
            }
        }
    }
    return GT_OK;
}
