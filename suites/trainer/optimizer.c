/* The optimizer step (train_impl.h): AdamW on this rank's range of the fp32
 * masters, then the layout makes every rank's parameters current. */
#include "suites/trainer/train_impl.h"

gt_status gt_train_optimizer_step(gt_trainer *t, gt_train_step *s) {
    const gt_train_config *cfg = t->cfg;
    /* the lr schedule advances on a skipped step (torch: scheduler.step()
     * runs, optimizer.step() does not); AdamW's t counts real updates */
    s->lr = gt_lr_at(&cfg->opt, s->step);
    s->norm /= s->scale; /* clipping and the report see the unscaled norm */
    size_t bytes0 = gt_dp_bytes(t->dp); /* ZeRO-1: the parameters' all-gather */
    gt_profile_region_begin(t->prof, GT_PROF_OPTIMIZER);
    gt_train_traffic_mark(t, 0);
    if (!s->skip) {
        int updates = s->step + 1 - (int)t->ls.skipped;
        float gscale = gt_clip_scale(&cfg->opt, s->norm) / s->scale;
        if (t->lo < t->uhi)
            GT_TRY(gt_model_update_range(t->model, &cfg->opt, updates, s->lr, gscale, s->gshard,
                                         t->lo, t->uhi));
        GT_TRY(t->layout->params_updated(t));
    }
    gt_profile_region_end(t->prof, GT_PROF_OPTIMIZER, (double)(gt_dp_bytes(t->dp) - bytes0));
    gt_train_traffic_take(t); /* ZeRO-1/2's all-gather of the parameters */
    return GT_OK;
}
