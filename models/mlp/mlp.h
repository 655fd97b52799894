/* A multilayer perceptron classifier on the op table: in_dim -> depth hidden
 * layers of `width` (Linear + GELU or ReLU) -> Linear to `classes` logits ->
 * softmax cross-entropy. Dense inputs (n, in_dim) fp32 and one int32 label
 * per sample (gt_batch, models/model.h); throughput counts "samples".
 *
 * Parameters, canonical order = internal layout (forward order):
 *   fc0.w (width, in_dim) fc0.b (width) ... fc{depth-1}.w (width, width)
 *   fc{depth-1}.b (width) head.w (classes, width) head.b (classes)
 * torch.nn.Linear semantics (y = x W^T + b) and initialisation: W and b
 * uniform in +-1/sqrt(fan_in), from Philox (seed, stream = tensor index,
 * index = element). Weight decay on the W's only. No state tensors.
 *
 * The matching synthetic task (gt_model_task): x ~ N(0, I_in_dim), labels
 * from a fixed random teacher MLP with 10% label noise (models/tasks.h).
 */
#ifndef GT_MLP_H
#define GT_MLP_H

#include "engine/backend.h"
#include "engine/status.h"
#include "models/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gt_mlp_act { GT_MLP_GELU = 0, GT_MLP_RELU, GT_MLP_ACT_COUNT } gt_mlp_act;

typedef struct gt_mlp_config {
    int in_dim;     /* input features, 1..65536 */
    int classes;    /* K, 2..65536 */
    int depth;      /* hidden layers, 0..64 (0: a linear classifier) */
    int width;      /* hidden width, 1..65536 */
    gt_mlp_act act; /* GELU (tanh approximation, engine/ops.h) or ReLU */
} gt_mlp_config;

/* "mlp-tiny" (in 16, K 8, depth 2, width 64, GELU), "mlp-tiny-relu" (the
 * same with ReLU), "mlp-small" (in 64, K 16, depth 4, width 512, GELU).
 * GT_ERR_INVALID names the presets when `name` is unknown. */
gt_status gt_mlp_preset(const char *name, gt_mlp_config *out);
/* Checks every field; the message names it. */
gt_status gt_mlp_config_check(const gt_mlp_config *c);

/* The model for at most max_batch samples per forward on `be` (borrowed),
 * activations, compute weights and gradients stored in dt (fp32, bf16,
 * fp16; fp32 master weights and AdamW state whatever dt is). `name` (may
 * be NULL: "mlp") is what reports call it.
 * recompute (models/model.h): with GT_MODEL_RECOMPUTE_BLOCK a block is a
 * hidden layer; every layer's output a is kept (the next layer's input,
 * and what ReLU's backward reads), its pre-activation z for one layer only:
 * a GELU backward computes z again from the layer's input, by the op the
 * forward used (the same bits), just before it reads it. (depth-1) x B x
 * width values fewer; (depth-1) matmuls more with GELU, nothing with ReLU. */
gt_status gt_mlp_new(gt_backend *be, const gt_mlp_config *cfg, gt_dtype dt,
                     gt_model_recompute recompute, const char *name, int max_batch,
                     gt_model **out);

#ifdef __cplusplus
}
#endif
#endif
