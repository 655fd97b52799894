/* Dynamic loss scaling (see lossscale.h). */
#include "engine/lossscale.h"

#include <math.h>

gt_lossscale_config gt_lossscale_defaults(void) {
    return (gt_lossscale_config){.init_scale = 65536.0f,
                                 .growth = 2.0f,
                                 .backoff = 0.5f,
                                 .growth_interval = 2000,
                                 .min_scale = 1.0f};
}

gt_status gt_lossscale_config_check(const gt_lossscale_config *c) {
    if (!(c->init_scale > 0.0f) || !isfinite(c->init_scale))
        return GT_ERR(GT_ERR_INVALID, "loss scale: init_scale %g must be finite and > 0",
                      (double)c->init_scale);
    if (!(c->growth > 1.0f) || !isfinite(c->growth))
        return GT_ERR(GT_ERR_INVALID, "loss scale: growth %g must be finite and > 1",
                      (double)c->growth);
    if (!(c->backoff > 0.0f && c->backoff < 1.0f))
        return GT_ERR(GT_ERR_INVALID, "loss scale: backoff %g must be in (0, 1)",
                      (double)c->backoff);
    if (c->growth_interval < 1)
        return GT_ERR(GT_ERR_INVALID, "loss scale: growth_interval %d must be >= 1",
                      c->growth_interval);
    if (!(c->min_scale > 0.0f && c->min_scale <= c->init_scale))
        return GT_ERR(GT_ERR_INVALID, "loss scale: min_scale %g must be > 0 and <= init_scale %g",
                      (double)c->min_scale, (double)c->init_scale);
    return GT_OK;
}

gt_status gt_lossscale_init(gt_lossscale *ls, const gt_lossscale_config *cfg) {
    GT_TRY(gt_lossscale_config_check(cfg));
    ls->cfg = *cfg;
    ls->scale = cfg->init_scale;
    ls->good_steps = 0;
    ls->skipped = 0;
    return GT_OK;
}

gt_status gt_lossscale_update(gt_lossscale *ls, int finite, int *skip) {
    *skip = 0;
    if (finite) {
        if (++ls->good_steps >= ls->cfg.growth_interval) {
            float grown = ls->scale * ls->cfg.growth;
            /* torch keeps the scale when growing would overflow fp32 */
            if (isfinite(grown)) ls->scale = grown;
            ls->good_steps = 0;
        }
        return GT_OK;
    }
    if (ls->scale <= ls->cfg.min_scale)
        return GT_ERR(GT_ERR_INVALID,
                      "gradients overflow even at the minimum loss scale %g: they are not "
                      "finite unscaled, training diverged (lower --lr, enable --grad-clip, or "
                      "train in bf16 or fp32)",
                      (double)ls->cfg.min_scale);
    float s = ls->scale * ls->cfg.backoff;
    ls->scale = s < ls->cfg.min_scale ? ls->cfg.min_scale : s;
    ls->good_steps = 0;
    ls->skipped++;
    *skip = 1;
    return GT_OK;
}

gt_status gt_lossscale_restore(gt_lossscale *ls, double scale, double good_steps,
                               double skipped) {
    if (!isfinite(scale) || !(scale >= ls->cfg.min_scale) || scale > 3.0e38)
        return GT_ERR(GT_ERR_INVALID, "loss scale %g is not a usable scale (finite, >= %g)",
                      scale, (double)ls->cfg.min_scale);
    if (!(good_steps >= 0) || !(skipped >= 0) || good_steps != floor(good_steps) ||
        skipped != floor(skipped))
        return GT_ERR(GT_ERR_INVALID,
                      "loss scaler counts %g (good steps), %g (skipped) must be whole numbers "
                      ">= 0",
                      good_steps, skipped);
    ls->scale = (float)scale;
    ls->good_steps = (int64_t)good_steps;
    ls->skipped = (int64_t)skipped;
    return GT_OK;
}
