/* Dynamic loss scaling for fp16 training (torch.cuda.amp.GradScaler's
 * semantics).
 *
 * fp16 holds magnitudes from 6e-8 (subnormal) to 65504: small gradients
 * underflow to zero unless the loss, and so every gradient, is multiplied by
 * a large scale. The scale is found at run time:
 *   - the backward starts from dloss * scale; the optimizer unscales
 *     (AdamW's grad_scale includes 1 / scale) and clipping sees the
 *     unscaled norm;
 *   - a step whose gradients hold an Inf or a NaN (their global norm is not
 *     finite) is an overflow: the optimizer step is skipped, the scale is
 *     multiplied by `backoff` (0.5) and the run of good steps restarts;
 *   - after `growth_interval` (2000) consecutive finite steps the scale is
 *     multiplied by `growth` (2).
 * Initial scale 2^16. Unlike torch, the scale never goes below `min_scale`
 * (1): an overflow at the floor is not a scaling problem but a diverged run,
 * and gt_lossscale_update says so. Every value is a power of two times the
 * initial scale, so scaling and unscaling are exact.
 *
 * The state is three numbers (scale, good steps, skipped steps); a
 * checkpoint stores them so that a resumed run is bitwise the same.
 */
#ifndef GT_LOSSSCALE_H
#define GT_LOSSSCALE_H

#include <stdint.h>

#include "engine/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gt_lossscale_config {
    float init_scale;    /* 65536 */
    float growth;        /* 2.0, > 1 */
    float backoff;       /* 0.5, in (0, 1) */
    int growth_interval; /* 2000 consecutive finite steps, >= 1 */
    float min_scale;     /* 1.0, > 0 and <= init_scale */
} gt_lossscale_config;

gt_lossscale_config gt_lossscale_defaults(void);
/* GT_ERR_INVALID naming the field that is out of range. */
gt_status gt_lossscale_config_check(const gt_lossscale_config *c);

typedef struct gt_lossscale {
    gt_lossscale_config cfg;
    float scale;          /* the scale the next backward uses */
    int64_t good_steps;   /* consecutive finite steps since the last change */
    int64_t skipped;      /* steps skipped for overflow, in total */
} gt_lossscale;

/* Starts at cfg->init_scale (the config is checked). */
gt_status gt_lossscale_init(gt_lossscale *ls, const gt_lossscale_config *cfg);

/* After a step's gradients are known: finite = 0 when they overflowed.
 * *skip receives 1 when the optimizer step must be skipped (an overflow),
 * else 0; the scale then changes as above. An overflow with the scale
 * already at min_scale returns GT_ERR_INVALID (the state is left as it
 * was): the gradients are not finite even unscaled, training diverged. */
gt_status gt_lossscale_update(gt_lossscale *ls, int finite, int *skip);

/* Restores a saved state (a checkpoint's): GT_ERR_INVALID when the scale
 * is not finite, not positive or below min_scale, or a count is negative. */
gt_status gt_lossscale_restore(gt_lossscale *ls, double scale, double good_steps,
                               double skipped);

#ifdef __cplusplus
}
#endif
#endif
