/* For model implementations only (models/), not for callers of model.h.
 *
 * A model keeps its tensors in a gt_params store (engine/params.h) inside
 * its impl and points m->params at it; model.c implements every store job
 * over it. Here: what the dense models (mlp, convnet) share besides, the
 * host staging of a batch, its checks and the classification head's loss.
 */
#ifndef GT_MODEL_IMPL_H
#define GT_MODEL_IMPL_H

#include "engine/ops.h"
#include "models/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Host staging of a dense batch's inputs in the storage dtype. */
typedef struct gt_dense_stage {
    void *buf;
    size_t bytes;
} gt_dense_stage;

/* "backend 'X' has no OP op: FAMILY cannot run on it" for each empty slot. */
gt_status gt_dense_require(const gt_params *p, const char *family, const gt_op *ops, int n);
/* Checks a dense batch against the model's capacity and classes, names
 * the first bad label. */
gt_status gt_dense_check_batch(const gt_model *m, const gt_batch *b, int need_targets);
/* Copies a dense batch to the backend: inputs (n x in_per_sample fp32,
 * rounded on the host to k.dt through st) to in_dev and, when the batch has
 * labels, the labels to targets_dev. */
gt_status gt_dense_upload_batch(gt_params *p, gt_dense_stage *st, const gt_batch *b,
                                size_t in_per_sample, void *in_dev, int32_t *targets_dev);
/* Frees the staging buffer. */
void gt_dense_stage_free(gt_dense_stage *st);
/* The classification head's loss: losses_dev(n) (fp32) = softmax
 * cross-entropy of logits(n, K) (k.dt) against targets_dev, and *mean_loss
 * (when not NULL) their mean, summed in order on the host (host_scratch:
 * n floats). */
gt_status gt_dense_class_loss(gt_params *p, float *losses_dev, float *host_scratch,
                              const void *logits, const int32_t *targets_dev, int n, int K,
                              float *mean_loss);
/* Copies the losses(n) fp32 from the backend and sums them in order. */
gt_status gt_dense_mean_loss(gt_params *p, const float *losses_dev, float *host_scratch, int n,
                             float *mean_loss);

/* One integer option a family takes (options by name, model.h). */
typedef struct gt_model_option {
    const char *key;
    int lo, hi;
} gt_model_option;
/* Parses "key=value,..." (NULL or "": none) in order against keys[n] and
 * calls set(ctx, index of the key, value) for each pair. GT_ERR_INVALID
 * names the family, the bad pair and the valid keys. */
gt_status gt_model_options_parse(const char *family, const char *options,
                                 const gt_model_option *keys, int n,
                                 void (*set)(void *ctx, int key, int value), void *ctx);

/* gpt2 behind gt_model_new (models/gpt2/gpt2_model.c): the preset's (or
 * "llmc"'s) architecture with the options applied, checked ... */
struct gt_gpt2_config;
gt_status gt_gpt2_model_config(const char *name, const char *options,
                               struct gt_gpt2_config *out);
/* ... and its gt_gpt2 for max_batch sequences of T tokens, wrapped. */
gt_status gt_gpt2_model_new(gt_backend *be, const char *name, const char *options, gt_dtype dt,
                            gt_model_recompute recompute, int max_batch, int T,
                            const gt_model_tp *tp, gt_model **out);

#ifdef __cplusplus
}
#endif
#endif
