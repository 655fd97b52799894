/* ref classifier: softmax cross-entropy over the first V of Vp columns in
 * fp64, and the fused forward + backward (dlogits may alias logits). */
#include <math.h>

#include "kernels/ref/ref.h"

static gt_status check(int N, int V, int Vp) {
    if (N < 0 || V <= 0 || Vp < V)
        return GT_ERR(GT_ERR_INVALID, "classifier: N=%d V=%d Vp=%d (need V >= 1, Vp >= V)", N, V, Vp);
    return GT_OK;
}

/* logsumexp of row[:V] and its max, in fp64. */
static double row_lse(const float *row, int V, double *mx_out) {
    double mx = -INFINITY;
    for (int j = 0; j < V; j++)
        if (row[j] > mx) mx = row[j];
    double sum = 0.0;
    for (int j = 0; j < V; j++) sum += exp((double)row[j] - mx);
    *mx_out = mx;
    return mx + log(sum);
}

gt_status gt_ref_classifier_fwd(const gt_kctx *k, float *losses, const void *logits_,
                                const int32_t *targets, int N, int V, int Vp) {
    GT_REF_CHECK_DT(k);
    GT_TRY(check(N, V, Vp));
    const float *logits = logits_;
    for (int i = 0; i < N; i++) {
        const float *row = logits + (size_t)i * Vp;
        double mx;
        losses[i] = (float)(row_lse(row, V, &mx) - row[targets[i]]);
    }
    return GT_OK;
}

gt_status gt_ref_classifier_bwd(const gt_kctx *k, void *dlogits_, float *losses,
                                const void *logits_, const int32_t *targets, float dloss, int N,
                                int V, int Vp) {
    GT_REF_CHECK_DT(k);
    GT_TRY(check(N, V, Vp));
    float *dlogits = dlogits_;
    const float *logits = logits_;
    for (int i = 0; i < N; i++) {
        const float *row = logits + (size_t)i * Vp;
        float *drow = dlogits + (size_t)i * Vp; /* may be row itself */
        double mx;
        double lse = row_lse(row, V, &mx);
        int tg = targets[i];
        if (losses) losses[i] = (float)(lse - row[tg]);
        for (int j = 0; j < V; j++) {
            double p = exp((double)row[j] - lse);
            drow[j] = (float)((double)dloss * (p - (j == tg ? 1.0 : 0.0)));
        }
        for (int j = V; j < Vp; j++) drow[j] = 0.0f;
    }
    return GT_OK;
}
