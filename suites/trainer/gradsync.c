/* Gradient synchronisation (train_impl.h): the sum over ranks of every
 * rank's gradients, in buckets that start their all-reduce while the
 * backward is still running (engine/dp.h), reduced to what the layout keeps
 * on each rank; the global gradient norm. */
#include "suites/trainer/train_impl.h"

/* The backward's hook: buckets of final gradients start their all-reduce
 * (the profile's allreduce_issued). */
static gt_status on_grads_ready(void *ctx, size_t frontier) {
    gt_trainer *t = ctx;
    size_t b0 = gt_dp_bytes(t->dp);
    gt_profile_region_begin(t->prof, GT_PROF_ALLREDUCE_ISSUED);
    gt_status s = gt_dp_grads_ready(t->dp, frontier);
    if (s == GT_OK) s = gt_train_grad_units_reduced(t, frontier); /* reduced units freed */
    gt_profile_region_end(t->prof, GT_PROF_ALLREDUCE_ISSUED, (double)(gt_dp_bytes(t->dp) - b0));
    return s;
}

gt_status gt_train_sync_open(gt_trainer *t) {
    const gt_train_config *cfg = t->cfg;
    /* pipeline stages: the stage's slice of the gradients, over its
     * data-parallel group */
    size_t n = gt_model_num_params(t->model);
    if (t->P > 1) GT_TRY(gt_train_pipe_open(t, &n));
    t->layout = t->pipe ? gt_train_pipe_layout(cfg->zero) : gt_train_layout_for(cfg->zero);
    if (!t->layout)
        return GT_ERR(GT_ERR_INVALID, "--zero %d: the layouts are 0 (replicated), 1 (ZeRO-1), "
                                      "2 (ZeRO-2) and 3 (ZeRO-3)",
                      cfg->zero);
    gt_dp_config dc = gt_dp_defaults();
    dc.zero = t->layout->zero;
    dc.deterministic = cfg->deterministic;
    dc.chunk = gt_model_norm_chunk(t->model);
    dc.grad_dtype = cfg->precision;
    if (cfg->bucket_mb > 0) dc.bucket_bytes = (size_t)(cfg->bucket_mb * 1048576.0);
    /* ZeRO-3, and the gradients sharded by unit: buckets end at units */
    const size_t *gcuts;
    int ngcuts;
    GT_TRY(gt_train_units_cuts(t, &dc.cuts, &dc.ncuts));
    GT_TRY(gt_train_grad_units_cuts(t, &gcuts, &ngcuts));
    if (!dc.ncuts) {
        dc.cuts = gcuts;
        dc.ncuts = ngcuts;
    }
    return gt_dp_new(t->comm, t->be, &dc, n, &t->dp);
}

gt_status gt_train_sync_begin(gt_trainer *t) {
    (void)gt_train_units_take_exposed(t); /* an evaluation's gathers are no step's */
    gt_train_traffic_mark(t, 1);
    char *g = gt_model_grads_buffer(t->model);
    if (t->gunits) return gt_dp_begin(t->dp, NULL); /* each unit's buffer (gradunits.c) */
    return gt_dp_begin(t->dp, g + t->sync_off * gt_dtype_size(t->cfg->precision));
}

void gt_train_sync_overlap(gt_trainer *t, int on) {
    gt_model_set_grad_hook(t->model, on ? on_grads_ready : NULL, on ? t : NULL);
}

/* What the backward did not hide is the profile's allreduce_exposed. */
gt_status gt_train_sync_finish(gt_trainer *t, gt_train_step *s) {
    size_t bytes0 = gt_dp_bytes(t->dp);
    gt_profile_region_begin(t->prof, GT_PROF_ALLREDUCE_EXPOSED);
    gt_status st = gt_dp_finish(t->dp, &s->gshard, &s->exposed);
    if (st == GT_OK) st = gt_train_grad_units_reduced(t, 0); /* all reduced: all freed */
    gt_profile_region_end(t->prof, GT_PROF_ALLREDUCE_EXPOSED,
                          (double)(gt_dp_bytes(t->dp) - bytes0));
    s->exposed += gt_train_units_take_exposed(t); /* ZeRO-3: the gathers not hidden */
    gt_train_traffic_take(t); /* the schedule's reduces and gathers */
    return st;
}

gt_status gt_train_sync_norm(gt_trainer *t, gt_train_step *s) {
    if (t->pipe) GT_TRY(gt_train_pipe_norm(t, s)); /* over the stages */
    else GT_TRY(gt_dp_grad_norm(t->dp, &s->norm));
    return gt_train_tp_norm(t, s); /* over a tensor group's slices */
}
