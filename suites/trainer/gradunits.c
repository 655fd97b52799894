/* Gradients sharded in memory (train_impl.h, gt_train_grad_units): with
 * ZeRO-2 or ZeRO-3 on several ranks without --deterministic, and a model
 * declared in units, a rank never holds the whole gradient buffer. The
 * store frees it (gt_params_shard_grads) and gives each unit's gradients a
 * buffer of their own when the backward first writes them; the gradient
 * sync reads each bucket from its unit's buffer (gt_dp_set_grad_source: the
 * buckets are cut at the units' starts), and once every bucket of a unit
 * has been reduced to its owner the buffer is freed. What a rank holds is
 * then its summed shard and the units between their backward and the end
 * of their reduce. With --deterministic and one micro-batch a rank, each
 * bucket is summed by the fixed tree (blocking) as its unit's backward
 * ends: the tree adds element by element, so the bits are the whole
 * buffer's. With several micro-batches a rank (the micro-batch tree keeps
 * whole partial sums) and on one rank the buffer stays whole. */
#include "suites/trainer/train_impl.h"

#include <stdlib.h>

struct gt_train_grad_units {
    int n;
    size_t *cuts; /* [n] the units' starts: the gradient buckets' cuts */
};

int gt_train_grads_by_unit(const gt_trainer *t) {
    /* --deterministic: the micro-batch tree needs whole buffers; with one
     * micro-batch a rank there is none, and the rank tree sums bucket by bucket */
    int det_ok = !t->cfg->deterministic || t->k_local == 1;
    return t->layout && t->layout->zero >= 2 && det_ok && t->R > 1 && !t->pipe &&
           gt_model_num_units(t->model) >= 2;
}

gt_status gt_train_grad_units_cuts(gt_trainer *t, const size_t **cuts, int *n) {
    *cuts = NULL;
    *n = 0;
    if (!gt_train_grads_by_unit(t)) return GT_OK;
    gt_train_grad_units *g = calloc(1, sizeof *g);
    if (!g) return GT_ERR(GT_ERR_OOM, "out of host memory");
    t->gunits = g;
    g->n = gt_model_num_units(t->model);
    if (!(g->cuts = calloc((size_t)g->n, sizeof *g->cuts)))
        return GT_ERR(GT_ERR_OOM, "out of host memory for %d units' cuts", g->n);
    for (int i = 0; i < g->n; i++) {
        size_t hi;
        gt_model_unit_range(t->model, i, &g->cuts[i], &hi);
    }
    *cuts = g->cuts;
    *n = g->n;
    return GT_OK;
}

/* The gradient sync's source: element lo of the unit holding [lo, hi). */
static void *grad_src(void *ctx, size_t lo, size_t hi) {
    gt_trainer *t = ctx;
    gt_params *p = t->model->params;
    for (int u = 0; u < p->nunits; u++) {
        if (lo < p->unit_lo[u] || lo >= p->unit_lo[u + 1]) continue;
        GT_ASSERT(hi <= p->unit_lo[u + 1]); /* the buckets are cut at the units */
        char *g = gt_params_unit_grad(p, u);
        return g ? g + (lo - p->unit_lo[u]) * p->es : NULL;
    }
    GT_ASSERT(!"a gradient bucket outside every unit");
    return NULL;
}

gt_status gt_train_grad_units_open(gt_trainer *t) {
    if (!t->gunits) return GT_OK;
    GT_TRY(gt_params_shard_grads(t->model->params));
    return gt_dp_set_grad_source(t->dp, grad_src, t);
}

/* At most this many units final and still held (their reduce in flight):
 * a rate limit like FSDP's, without which a library that progresses a
 * non-blocking reduce only a step per call would let every unit's
 * gradients pile up before the first reduce completes. */
enum { GRAD_UNITS_IN_FLIGHT = 1 };

gt_status gt_train_grad_units_reduced(gt_trainer *t, size_t frontier) {
    if (!t->gunits) return GT_OK;
    gt_params *p = t->model->params;
    int inflight = 0;
    for (int u = p->nunits - 1; u >= 0; u--) { /* the backward's order: oldest first */
        size_t lo = p->unit_lo[u], hi = p->unit_lo[u + 1];
        if (lo < frontier || !gt_params_unit_grad_held(p, u)) continue;
        if (!gt_dp_range_reduced(t->dp, lo, hi) && ++inflight > GRAD_UNITS_IN_FLIGHT) {
            GT_TRY(gt_dp_range_wait(t->dp, lo, hi));
            inflight--;
        }
        if (gt_dp_range_reduced(t->dp, lo, hi)) gt_params_unit_grad_release(p, u);
    }
    return GT_OK;
}

size_t gt_train_grad_units_peak_bytes(const gt_trainer *t) {
    return t->gunits ? t->model->params->grad_peak : 0;
}

void gt_train_grad_units_close(gt_trainer *t) {
    if (!t->gunits) return;
    free(t->gunits->cuts);
    free(t->gunits);
    t->gunits = NULL;
}
