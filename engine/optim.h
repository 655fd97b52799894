/* Optimizer configuration and learning-rate schedule. The AdamW update
 * itself is an op (engine/ops.h: adamw) so each backend runs it where the
 * parameters live.
 */
#ifndef GT_OPTIM_H
#define GT_OPTIM_H

#include "engine/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gt_adamw_config {
    float lr;           /* peak learning rate */
    float beta1;        /* 0.9 */
    float beta2;        /* 0.95 (GPT-2 practice; torch default 0.999) */
    float eps;          /* 1e-8 */
    float weight_decay; /* decoupled; applied to matrices and embeddings only. default 0 */
    float grad_clip;    /* clip the global L2 norm to this; <= 0: no clipping */
    int warmup_steps;   /* linear warm-up length */
    int total_steps;    /* cosine decay ends here; 0: no decay (lr stays at peak) */
    float lr_min_frac;  /* lr at the end of decay, as a fraction of lr (0.0..1.0) */
} gt_adamw_config;

/* Defaults above, lr 3e-4, warmup 0, total_steps 0 (no decay), min frac 0.1,
 * clip 1.0. */
gt_adamw_config gt_adamw_defaults(void);

/* Checks ranges; GT_ERR_INVALID naming the field. total_steps must be 0 or
 * greater than warmup_steps. */
gt_status gt_adamw_config_check(const gt_adamw_config *c);

/* Learning rate for 0-based `step`:
 *   step <  warmup: lr * (step + 1) / warmup
 *   otherwise: cosine from lr down to lr*lr_min_frac over
 *              [warmup, total_steps), then flat at lr*lr_min_frac;
 *   total_steps == 0: lr after warm-up. Computed in fp64, rounded once.
 * Negative steps count as step 0. */
float gt_lr_at(const gt_adamw_config *c, int step);

/* Scale that clipping applies to every gradient given the global norm:
 * min(1, clip / (norm + 1e-6)) when clip > 0, else 1. A NaN norm gives NaN
 * (when clip > 0) so that a poisoned step shows instead of going unclipped. */
float gt_clip_scale(const gt_adamw_config *c, double grad_norm);

/* One optimiser step's scalars from the global gradient norm of 1-based
 * step t: *lr = gt_lr_at(c, t - 1), *clip = gt_clip_scale(c, grad_norm).
 * GT_ERR_INVALID ("training diverged") when the norm is not finite. */
gt_status gt_adamw_step_scalars(const gt_adamw_config *c, int t, double grad_norm, float *lr,
                                float *clip);

#ifdef __cplusplus
}
#endif
#endif
