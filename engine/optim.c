/* AdamW configuration and the learning-rate schedule (engine/optim.h).
 * The schedule is computed in fp64 and rounded once, so that every backend
 * and every rank sees the same fp32 learning rate for a step. */
#include "engine/optim.h"

#include <math.h>

gt_adamw_config gt_adamw_defaults(void) {
    return (gt_adamw_config){
        .lr = 3e-4f,
        .beta1 = 0.9f,
        .beta2 = 0.95f,
        .eps = 1e-8f,
        .weight_decay = 0.0f,
        .grad_clip = 1.0f,
        .warmup_steps = 0,
        .total_steps = 0,
        .lr_min_frac = 0.1f,
    };
}

gt_status gt_adamw_config_check(const gt_adamw_config *c) {
    if (!c) return GT_ERR(GT_ERR_INVALID, "adamw config is NULL");
    if (!(c->lr > 0.0f) || !isfinite(c->lr))
        return GT_ERR(GT_ERR_INVALID, "adamw: lr is %g, must be a finite number > 0", c->lr);
    if (!(c->beta1 >= 0.0f && c->beta1 < 1.0f))
        return GT_ERR(GT_ERR_INVALID, "adamw: beta1 is %g, must be in [0, 1)", c->beta1);
    if (!(c->beta2 >= 0.0f && c->beta2 < 1.0f))
        return GT_ERR(GT_ERR_INVALID, "adamw: beta2 is %g, must be in [0, 1)", c->beta2);
    if (!(c->eps > 0.0f) || !isfinite(c->eps))
        return GT_ERR(GT_ERR_INVALID, "adamw: eps is %g, must be a finite number > 0", c->eps);
    if (!(c->weight_decay >= 0.0f) || !isfinite(c->weight_decay))
        return GT_ERR(GT_ERR_INVALID, "adamw: weight_decay is %g, must be finite and >= 0",
                      c->weight_decay);
    if (isnan(c->grad_clip))
        return GT_ERR(GT_ERR_INVALID, "adamw: grad_clip is NaN; use a value <= 0 for no clipping");
    if (c->warmup_steps < 0)
        return GT_ERR(GT_ERR_INVALID, "adamw: warmup_steps is %d, must be >= 0", c->warmup_steps);
    if (c->total_steps < 0)
        return GT_ERR(GT_ERR_INVALID, "adamw: total_steps is %d, must be >= 0 (0: no decay)",
                      c->total_steps);
    if (c->total_steps > 0 && c->total_steps <= c->warmup_steps)
        return GT_ERR(GT_ERR_INVALID,
                      "adamw: total_steps (%d) must be greater than warmup_steps (%d), or 0 for "
                      "no decay",
                      c->total_steps, c->warmup_steps);
    if (!(c->lr_min_frac >= 0.0f && c->lr_min_frac <= 1.0f))
        return GT_ERR(GT_ERR_INVALID, "adamw: lr_min_frac is %g, must be in [0, 1]",
                      c->lr_min_frac);
    return GT_OK;
}

float gt_lr_at(const gt_adamw_config *c, int step) {
    if (step < 0) step = 0;
    double lr = c->lr;
    if (step < c->warmup_steps) return (float)(lr * (double)(step + 1) / (double)c->warmup_steps);
    if (c->total_steps <= 0) return (float)lr;
    double lr_min = lr * (double)c->lr_min_frac;
    if (step >= c->total_steps || c->total_steps <= c->warmup_steps) return (float)lr_min;
    double progress =
        (double)(step - c->warmup_steps) / (double)(c->total_steps - c->warmup_steps);
    double coef = 0.5 * (1.0 + cos(3.14159265358979323846 * progress));
    return (float)(lr_min + (lr - lr_min) * coef);
}

float gt_clip_scale(const gt_adamw_config *c, double grad_norm) {
    if (!(c->grad_clip > 0.0f)) return 1.0f;
    /* A NaN norm must not be mistaken for "small enough": return NaN so the
     * update poisons the weights visibly instead of applying an unclipped
     * step. */
    if (isnan(grad_norm)) return NAN;
    double s = (double)c->grad_clip / (grad_norm + 1e-6);
    return s < 1.0 ? (float)s : 1.0f;
}

gt_status gt_adamw_step_scalars(const gt_adamw_config *c, int t, double grad_norm, float *lr,
                                float *clip) {
    if (!isfinite(grad_norm))
        return GT_ERR(GT_ERR_INVALID, "gradient norm is %g at step %d: training diverged "
                                      "(lower --lr or enable --grad-clip)",
                      grad_norm, t);
    *lr = gt_lr_at(c, t - 1);
    *clip = gt_clip_scale(c, grad_norm);
    return GT_OK;
}
