/* A small ResNet-style network on the op table, NCHW (torchvision's
 * BasicBlock layout):
 *   stem: conv 3x3 (stride 1, pad 1, no bias) -> BatchNorm -> ReLU
 *   blocks: conv 3x3 (stride s, pad 1) -> BN -> ReLU -> conv 3x3 (pad 1) -> BN,
 *           + shortcut (identity; a 1x1 stride-s conv -> BN when the
 *           stride or the channel count changes), -> ReLU
 *   head: global average pooling -> Linear(classes) -> softmax cross-entropy
 * Dense inputs: images (n, channels, height, width) fp32 and one int32 label
 * per image (gt_batch, models/model.h); throughput counts "images".
 *
 * Parameters, canonical order = internal layout (forward order):
 *   stem.conv.w (S, C, 3, 3) stem.bn.w (S) stem.bn.b (S)
 *   block{b}.conv1.w block{b}.bn1.w block{b}.bn1.b block{b}.conv2.w
 *   block{b}.bn2.w block{b}.bn2.b [block{b}.proj.w (OC, IC, 1, 1)
 *   block{b}.projbn.w block{b}.projbn.b]   for b = 0 .. nblocks-1
 *   fc.w (classes, C_last) fc.b (classes)
 * State (BatchNorm running statistics, fp32): for every BN in the same
 * order, <bn>.running_mean (C) and <bn>.running_var (C).
 *
 * BatchNorm: eps 1e-5, momentum 0.1 (torch.nn.BatchNorm2d). Training mode
 * normalises with the statistics of the micro-batch a forward sees and
 * updates the running ones; evaluation mode (gt_model_set_training 0) uses
 * the running ones. Under data parallelism every rank normalises over its
 * own micro-batches (like torch DDP without SyncBatchNorm): docs/models.md
 * says what that means for the determinism checks.
 *
 * Initialisation (torchvision ResNet): conv weights N(0, sqrt(2 / (OC KH
 * KW))) (Kaiming normal, fan_out, ReLU), BN weight 1 and bias 0, the Linear
 * layer torch's default U(+-1/sqrt(fan_in)); Philox (seed, stream = tensor
 * index, index = element). Weight decay on conv weights and fc.w only.
 */
#ifndef GT_CONVNET_H
#define GT_CONVNET_H

#include "engine/backend.h"
#include "engine/status.h"
#include "models/model.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { GT_CONVNET_MAX_BLOCKS = 16 };

typedef struct gt_convnet_config {
    int channels, height, width; /* input images, 1..4096 each */
    int classes;                 /* K, 2..65536 */
    int stem;                    /* stem output channels */
    int nblocks;                 /* 0..GT_CONVNET_MAX_BLOCKS */
    int block_channels[GT_CONVNET_MAX_BLOCKS];
    int block_stride[GT_CONVNET_MAX_BLOCKS]; /* 1 or 2 */
} gt_convnet_config;

/* "convnet-tiny" (3x8x8 images, 4 classes, stem 8, blocks 8/s1, 16/s2),
 * "resnet-small" (3x32x32, 10 classes, stem 16, blocks 16, 16, 32/s2, 32,
 * 64/s2, 64: a ResNet-14 without the max-pool). GT_ERR_INVALID names the
 * presets when `name` is unknown. */
gt_status gt_convnet_preset(const char *name, gt_convnet_config *out);
/* Checks every field and that every feature map stays >= 1x1. */
gt_status gt_convnet_config_check(const gt_convnet_config *c);

/* The model for at most max_batch images per forward on `be` (borrowed),
 * activations, compute weights and gradients stored in dt (fp32, bf16,
 * fp16; fp32 master weights, AdamW state, BatchNorm statistics and
 * running statistics whatever dt is). `name` (may be NULL: "convnet") is
 * what reports call it.
 * recompute (models/model.h): with GT_MODEL_RECOMPUTE_BLOCK a block is a
 * residual block; its output is kept (the next block's input, and what the
 * final ReLU's backward reads) and its conv and BN outputs share one
 * block's worth of memory with every other block: the backward runs the
 * block's convolutions and BatchNorms again from its input first (batch
 * statistics, the same bits; the running statistics are not updated a
 * second time). The stem is not recomputed. */
gt_status gt_convnet_new(gt_backend *be, const gt_convnet_config *cfg, gt_dtype dt,
                         gt_model_recompute recompute, const char *name, int max_batch,
                         gt_model **out);

#ifdef __cplusplus
}
#endif
#endif
