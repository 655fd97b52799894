/* ref classifier: softmax cross-entropy over the first V of Vp columns in
 * fp64, and the fused forward + backward (dlogits may alias logits).
 * Storage of logits and dlogits fp32, bf16 or fp16; losses are fp32.
 * Non-finite logits get what engine/ops.h defines by evaluating the
 * formula as written: exp(-Inf - max) is 0, a -Inf target's loss
 * max + log(sum) + Inf is +Inf, and a max of -Inf (all -Inf) or +Inf gives
 * exp(NaN), a NaN row. */
#include <math.h>

#include "kernels/ref/ref.h"

static gt_status check(int N, int V, int Vp) {
    if (N < 0 || V <= 0 || Vp < V)
        return GT_ERR(GT_ERR_INVALID, "classifier: N=%d V=%d Vp=%d (need V >= 1, Vp >= V)", N, V, Vp);
    return GT_OK;
}

/* logsumexp of the row starting at element `row` of logits, columns [0, V),
 * in fp64. */
static double row_lse(const void *logits, gt_dtype dt, size_t row, int V) {
    double mx = -INFINITY;
    for (int j = 0; j < V; j++) {
        double x = gt_ref_ld(logits, dt, row + j);
        if (x > mx) mx = x;
    }
    double sum = 0.0;
    for (int j = 0; j < V; j++) sum += exp(gt_ref_ld(logits, dt, row + j) - mx);
    return mx + log(sum);
}

gt_status gt_ref_classifier_fwd(const gt_kctx *k, float *losses, const void *logits,
                                const int32_t *targets, int N, int V, int Vp) {
    GT_REF_CHECK_DT_ANY(k);
    GT_TRY(check(N, V, Vp));
    gt_dtype dt = k->dt;
    for (int i = 0; i < N; i++) {
        size_t row = (size_t)i * Vp;
        losses[i] = (float)(row_lse(logits, dt, row, V) - gt_ref_ld(logits, dt, row + targets[i]));
    }
    return GT_OK;
}

gt_status gt_ref_classifier_bwd(const gt_kctx *k, void *dlogits, float *losses,
                                const void *logits, const int32_t *targets, float dloss, int N,
                                int V, int Vp) {
    GT_REF_CHECK_DT_ANY(k);
    GT_TRY(check(N, V, Vp));
    gt_dtype dt = k->dt;
    for (int i = 0; i < N; i++) {
        /* dlogits may be logits itself: element j is read before it is
         * written, and the loss is taken before any write */
        size_t row = (size_t)i * Vp;
        double lse = row_lse(logits, dt, row, V);
        int tg = targets[i];
        if (losses) losses[i] = (float)(lse - gt_ref_ld(logits, dt, row + tg));
        for (int j = 0; j < V; j++) {
            double p = exp(gt_ref_ld(logits, dt, row + j) - lse);
            gt_ref_st(dlogits, dt, row + j, (double)dloss * (p - (j == tg ? 1.0 : 0.0)));
        }
        for (int j = V; j < Vp; j++) gt_ref_st(dlogits, dt, row + j, 0.0);
    }
    return GT_OK;
}
