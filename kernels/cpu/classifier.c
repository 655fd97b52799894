/* cpu classifier: softmax cross-entropy over the first V of Vp columns, and
 * the fused forward + backward writing dlogits (possibly over the logits).
 *
 * Rows in parallel. The backward makes three passes over a row that stays in
 * L2 (50304 fp32 = 196 KiB): max; exp stored in dlogits with a lane-wise sum;
 * scale. Only the first touches DRAM for reading, the last for writing: one
 * read and one write of the logits overall, one exp per element.
 * Bound: memory bandwidth, 8 B per logit (4 for the forward). */
#include <math.h>

#include "kernels/cpu/cpu.h"

static gt_status check(int N, int V, int Vp) {
    if (N < 0 || V <= 0 || Vp < V)
        return GT_ERR(GT_ERR_INVALID, "classifier: N=%d V=%d Vp=%d (need V >= 1, Vp >= V)", N, V, Vp);
    return GT_OK;
}

static inline float row_max(const float *restrict x, int V) {
    float l[16];
    for (int j = 0; j < 16; j++) l[j] = -INFINITY;
    int c = 0;
    for (; c + 16 <= V; c += 16)
        for (int j = 0; j < 16; j++) l[j] = x[c + j] > l[j] ? x[c + j] : l[j];
    for (; c < V; c++) l[c & 15] = x[c] > l[c & 15] ? x[c] : l[c & 15];
    float m = l[0];
    for (int j = 1; j < 16; j++) m = l[j] > m ? l[j] : m;
    return m;
}

/* exp(x - mx) for the softmax: exactly 0 for a -Inf logit (a masked class,
 * engine/ops.h; the clamp that keeps gt_cpu_expf in its range would give
 * it e^-87), NaN for a NaN, and for a row of -Inf only (mx -Inf) 0, whose
 * sum of 0 makes the loss and dlogits NaN as ops.h says. A select: the
 * loops still vectorise. */
static inline float cls_exp(float x, float mx) {
    float e = gt_cpu_expf(gt_cpu_clampf(x - mx, -87.0f, 0.0f));
    return x == -INFINITY ? 0.0f : e;
}

static inline double lanes_sum(const float l[16]) {
    double s = 0.0;
    for (int j = 0; j < 16; j++) s += l[j];
    return s;
}

gt_status gt_cpu_classifier_fwd(const gt_kctx *k, float *losses, const void *logits_,
                                const int32_t *targets, int N, int V, int Vp) {
    GT_CPU_CHECK_DT(k);
    GT_TRY(check(N, V, Vp));
    const float *logits = logits_;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if ((size_t)N * V > 65536)
#endif
    for (int i = 0; i < N; i++) {
        const float *restrict x = logits + (size_t)i * Vp;
        float mx = row_max(x, V);
        float l[16] = {0};
        int c = 0;
        for (; c + 16 <= V; c += 16)
            for (int j = 0; j < 16; j++) l[j] += cls_exp(x[c + j], mx);
        for (; c < V; c++) l[c & 15] += cls_exp(x[c], mx);
        losses[i] = (float)((double)mx + log(lanes_sum(l)) - (double)x[targets[i]]);
    }
    return GT_OK;
}

gt_status gt_cpu_classifier_bwd(const gt_kctx *k, void *dlogits_, float *losses,
                                const void *logits_, const int32_t *targets, float dloss, int N,
                                int V, int Vp) {
    GT_CPU_CHECK_DT(k);
    GT_TRY(check(N, V, Vp));
    float *dlogits = dlogits_;
    const float *logits = logits_;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if ((size_t)N * V > 65536)
#endif
    for (int i = 0; i < N; i++) {
        /* No restrict: d may be x (the in-place path). */
        const float *x = logits + (size_t)i * Vp;
        float *d = dlogits + (size_t)i * Vp;
        int tg = targets[i];
        float xt = x[tg]; /* read before the row is overwritten */
        float mx = row_max(x, V);
        float l[16] = {0};
        int c = 0;
        for (; c + 16 <= V; c += 16)
            for (int j = 0; j < 16; j++) {
                float e = cls_exp(x[c + j], mx);
                d[c + j] = e;
                l[j] += e;
            }
        for (; c < V; c++) {
            float e = cls_exp(x[c], mx);
            d[c] = e;
            l[c & 15] += e;
        }
        double sum = lanes_sum(l);
        if (losses) losses[i] = (float)((double)mx + log(sum) - (double)xt);
        float sc = (float)((double)dloss / sum);
        for (int j = 0; j < V; j++) d[j] *= sc;
        d[tg] -= dloss;
        for (int j = V; j < Vp; j++) d[j] = 0.0f;
    }
    return GT_OK;
}
