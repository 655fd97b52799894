/* GPT-2 (the Hugging Face GPT2LMHeadModel architecture) on the engine's op
 * table: pre-LN blocks, LayerNorm eps 1e-5, tanh GELU, learned position
 * embedding, token embedding tied to the output head, attention scale
 * 1/sqrt(head_dim).
 *
 * Parameters, gradients and AdamW state each live in one contiguous buffer.
 * Outside the model (files, get/set_params) tensors are in llm.c's order:
 *   wte (Vp,C) wpe (maxT,C) ln1w (L,C) ln1b (L,C) qkvw (L,3C,C) qkvb (L,3C)
 *   attprojw (L,C,C) attprojb (L,C) ln2w (L,C) ln2b (L,C) fcw (L,4C,C)
 *   fcb (L,4C) fcprojw (L,C,4C) fcprojb (L,C) lnfw (C) lnfb (C)
 * Inside, each layer's tensors are kept together (see "data parallelism").
 * Rows V..Vp-1 of wte are padding: they are initialised to zero, never reach
 * the loss, and their gradient is zero.
 *
 * Precision: a model has a storage dtype dt (fp32, bf16 or fp16), fixed at
 * creation. The parameters proper are always fp32: they are the MASTER
 * weights that AdamW updates (with fp32 m and v) and that get/set_params,
 * checkpoints and the cross-rank hash see. With bf16 or fp16 the forward
 * and backward read a compute copy of the weights in dt, made with the
 * backend's cast op (round to nearest even) whenever the masters change:
 * set_params (so init_random and load_llmc), update_range (its range), and
 * gt_gpt2_sync_weights for callers that write the masters themselves (the
 * ZeRO-1 all-gather). Activations and gradients are stored in dt (llm.c's
 * choice: gradients accumulate in dt across micro-batches); the ops
 * accumulate in fp32 or wider inside; LayerNorm statistics, the attention
 * state and the losses stay fp32. In fp32 the compute copy IS the masters.
 *
 * The MLP (fc, GELU, fcproj) runs through matmul_gelu_fwd and
 * matmul_dgelu_bwd when the backend fills both slots (on cuda, GELU in the
 * GEMM epilogue: kernels/ops.h, docs/cuda.md), through matmul + gelu ops and
 * a (B,T,4C) scratch otherwise; the two agree within rounding (bitwise on
 * cpu, which composes the same kernels).
 */
#ifndef GT_GPT2_H
#define GT_GPT2_H

#include <stddef.h>
#include <stdint.h>

#include "engine/alloc.h"
#include "engine/backend.h"
#include "engine/dtype.h"
#include "engine/optim.h"
#include "engine/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gt_gpt2_config {
    int max_seq_len;       /* maxT: rows of wpe */
    int vocab_size;        /* V */
    int padded_vocab_size; /* Vp >= V */
    int num_layers;        /* L */
    int num_heads;         /* NH; C % NH == 0 */
    int channels;          /* C */
} gt_gpt2_config;

/* "gpt2-tiny" (L2 H2 C64 T64 V256), "gpt2-small" (L4 H4 C256 T256 V256),
 * "gpt2-124m" (L12 H12 C768 T1024 V50257 Vp50304). GT_ERR_INVALID names the
 * presets when `name` is unknown. */
gt_status gt_gpt2_preset(const char *name, gt_gpt2_config *out);
/* Checks every field and their relations; the message names the field. */
gt_status gt_gpt2_config_check(const gt_gpt2_config *c);

enum { GT_GPT2_NUM_TENSORS = 16 };

typedef struct gt_gpt2 gt_gpt2;

/* Allocates parameters, gradients and optimizer state on `be` (borrowed; must
 * outlive the model) for at most B sequences of at most T tokens per
 * forward. Parameters are uninitialised until gt_gpt2_init_random or
 * gt_gpt2_load_llmc. */
gt_status gt_gpt2_new(gt_backend *be, const gt_gpt2_config *cfg, int B, int T, gt_gpt2 **out);
/* The same with storage dtype dt (GT_DTYPE_FP32, _BF16 or _FP16; see
 * "Precision" above; gt_gpt2_new is dt = fp32). GT_ERR_INVALID for another
 * dtype; GT_ERR_UNSUPPORTED, naming the backend and dt, when the backend
 * cannot store dt (it is asked once here, on a 1x1 matmul) or has no cast op. */
gt_status gt_gpt2_new_dt(gt_backend *be, const gt_gpt2_config *cfg, gt_dtype dt, int B, int T,
                         gt_gpt2 **out);
void gt_gpt2_free(gt_gpt2 *m);
/* The storage dtype of activations, compute weights and gradients. */
gt_dtype gt_gpt2_dtype(const gt_gpt2 *m);

const gt_gpt2_config *gt_gpt2_get_config(const gt_gpt2 *m);
size_t gt_gpt2_num_params(const gt_gpt2 *m);
/* Name and element count of parameter tensor i < GT_GPT2_NUM_TENSORS. */
const char *gt_gpt2_tensor_name(int i);
size_t gt_gpt2_tensor_size(const gt_gpt2 *m, int i);

/* GPT-2 initialisation: weights N(0, 0.02); attprojw and fcprojw (the
 * residual output projections) N(0, 0.02/sqrt(2L)); biases 0; LayerNorm
 * weights 1. Values come from Philox (seed, stream = tensor index * 2^16 +
 * layer, index = element in the layer's slice): the same on any thread or
 * rank count. */
gt_status gt_gpt2_init_random(gt_gpt2 *m, uint64_t seed);

/* Reads llm.c's model file (magic 20240326, version 3: fp32, 256 int32
 * header: magic, version, maxT, V, L, NH, C, Vp). The file's config must
 * equal the model's (GT_ERR_MISMATCH names the field). */
gt_status gt_gpt2_load_llmc(gt_gpt2 *m, const char *path);
/* Reads just the config of an llm.c model file. */
gt_status gt_gpt2_read_llmc_config(const char *path, gt_gpt2_config *out);

/* Forward pass on host token arrays inputs (B,T), targets (B,T) (may be
 * NULL: no loss). B, T at most what the model was created for. When targets
 * are given, *mean_loss receives the mean over B*T tokens. */
gt_status gt_gpt2_forward(gt_gpt2 *m, const int32_t *inputs, const int32_t *targets, int B,
                          int T, float *mean_loss);

/* Forward, loss and backward in one call: ACCUMULATES parameter gradients of
 * dloss * sum of per-token losses (dloss = 1/(B*T) for the mean loss of this
 * batch; the caller passes 1/(global tokens) under data parallelism).
 * *mean_loss as in gt_gpt2_forward. */
gt_status gt_gpt2_forward_backward(gt_gpt2 *m, const int32_t *inputs, const int32_t *targets,
                                   int B, int T, float dloss, float *mean_loss);

gt_status gt_gpt2_zero_grad(gt_gpt2 *m);

/* Global L2 norm of the gradients: fp64 sums of squares of fixed chunks of
 * gt_gpt2_norm_chunk elements of the (padded) gradient buffer, added in
 * chunk order. The chunk size depends only on the parameter count (65536,
 * doubled until there are at most 256 chunks), so a norm assembled from
 * chunks computed on different ranks (ZeRO) has the same bits. The buffers
 * are always a whole number of chunks long. */
size_t gt_gpt2_norm_chunk(const gt_gpt2 *m);
gt_status gt_gpt2_grad_norm(gt_gpt2 *m, double *out);
/* partials[c - lo_chunk] = sum of squares of chunk c of `grads` (a buffer
 * laid out like the model's gradients, in its dtype), c in [lo_chunk, hi_chunk). */
gt_status gt_gpt2_grad_sumsq_chunks(gt_gpt2 *m, const void *grads, size_t lo_chunk,
                                    size_t hi_chunk, double *partials);

/* One AdamW step (1-based step t): lr from gt_lr_at(cfg, t-1), clipping by
 * the global norm, weight decay on wte, wpe and the four weight matrices
 * only. Returns the norm before clipping and the lr used when not NULL. */
gt_status gt_gpt2_update(gt_gpt2 *m, const gt_adamw_config *cfg, int t, double *grad_norm,
                         float *lr);

/* ---- data parallelism -------------------------------------------------------
 * The internal layout keeps each layer's parameters together:
 * [wte wpe][layer 0]...[layer L-1][lnfw lnfb], so when the backward of layer
 * l is done, the gradients from layer l's start to the end are final. */

/* Called during gt_gpt2_forward_backward each time the gradients in
 * [frontier, num_params) of the internal layout became final: after the
 * final LayerNorm, after each layer (going down), and 0 at the end. An error
 * status stops the backward. */
typedef gt_status (*gt_gpt2_grad_hook)(void *ctx, size_t frontier);
void gt_gpt2_set_grad_hook(gt_gpt2 *m, gt_gpt2_grad_hook hook, void *ctx);

/* The flat parameter and gradient buffers (backend memory, internal layout,
 * gt_gpt2_num_params_padded elements; the padding is zero): the fp32 master
 * weights, and the gradients in the model's dtype. Whoever writes the
 * masters directly calls gt_gpt2_sync_weights on what it wrote. */
float *gt_gpt2_params_buffer(gt_gpt2 *m);
void *gt_gpt2_grads_buffer(gt_gpt2 *m);
/* Refreshes the compute copy of internal range [lo, hi) from the masters
 * (the cast op); nothing to do in fp32. */
gt_status gt_gpt2_sync_weights(gt_gpt2 *m, size_t lo, size_t hi);
size_t gt_gpt2_num_params_padded(const gt_gpt2 *m);
/* Grows params and grads to n_alloc elements (zero padding; a multiple of
 * gt_gpt2_norm_chunk), e.g. to split them into equal shards. Keeps both. */
gt_status gt_gpt2_pad(gt_gpt2 *m, size_t n_alloc);
/* AdamW state (m, v) is kept for [lo, hi) only, zeroed (ZeRO-1 shards). */
gt_status gt_gpt2_set_opt_range(gt_gpt2 *m, size_t lo, size_t hi);
/* AdamW on parameters [lo, hi) (internal layout, within the state's range),
 * with gradients grads[0 .. hi-lo) (the shard, in the model's dtype),
 * learning rate lr and grad_scale (the clipping scale, divided by the loss
 * scale in fp16); weight decay per tensor as in gt_gpt2_update. Then the
 * compute copy of [lo, hi) is refreshed. */
gt_status gt_gpt2_update_range(gt_gpt2 *m, const gt_adamw_config *cfg, int t, float lr,
                               float grad_scale, const void *grads, size_t lo, size_t hi);

/* Replaces all parameters from a host array of num_params fp32 (llm.c order). */
gt_status gt_gpt2_set_params(gt_gpt2 *m, const float *src);

/* Host copies in llm.c's order: master parameters / gradients (num_params
 * fp32; gradients stored in bf16 or fp16 are converted exactly). */
gt_status gt_gpt2_get_params(gt_gpt2 *m, float *dst);
gt_status gt_gpt2_get_grads(gt_gpt2 *m, float *dst);

/* ---- checkpoints and diagnostics ------------------------------------------- */

/* Shape of parameter tensor i in llm.c's order (e.g. qkvw: L, 3C, C);
 * returns the number of dimensions (1..3). */
int gt_gpt2_tensor_shape(const gt_gpt2 *m, int i, int64_t shape[4]);
/* Host copies of the AdamW state m and v for the internal-layout range
 * [lo, hi), which must lie inside the state's range (gt_gpt2_set_opt_range)
 * and [0, num_params). */
gt_status gt_gpt2_get_opt_state(gt_gpt2 *m, size_t lo, size_t hi, float *m_dst, float *v_dst);
gt_status gt_gpt2_set_opt_state(gt_gpt2 *m, size_t lo, size_t hi, const float *m_src,
                                const float *v_src);

/* Where an element of the internal layout lives: tensor (llm.c index),
 * layer (-1 for wte, wpe, lnfw, lnfb), element within that layer's slice,
 * and its flat index in llm.c's order. */
typedef struct gt_gpt2_loc {
    int tensor;
    int layer;
    size_t element;
    size_t flat;
    size_t internal; /* the index asked about */
} gt_gpt2_loc;
void gt_gpt2_locate(const gt_gpt2 *m, size_t internal, gt_gpt2_loc *out);
/* "qkvw layer 3, element 17" */
void gt_gpt2_loc_format(const gt_gpt2_loc *loc, char *out, size_t n);
/* Searches buf (backend memory of dtype dt laid out like the internal range
 * [lo, hi), buf[0] being element lo) for a NaN or an infinity, in llm.c's
 * order (tensor by tensor, layer by layer): *found 0 when all are finite,
 * else 1 with the first one's location in *loc and value in *value. */
gt_status gt_gpt2_find_nonfinite(gt_gpt2 *m, const void *buf, gt_dtype dt, size_t lo,
                                 size_t hi, int *found, gt_gpt2_loc *loc, float *value);

/* Model FLOPs per token for one training step (forward + backward):
 * 6 * num_params + 6 * L * C * T (causal attention scores and values:
 * 2 matmuls of T*C per token and layer, x3 for backward, halved by the
 * mask). The convention llm.c and nanoGPT's MFU use. */
double gt_gpt2_flops_per_token(const gt_gpt2 *m, int T);

/* Bytes of backend memory the model holds (master params, compute copy,
 * grads, AdamW state, activations). */
size_t gt_gpt2_memory_bytes(const gt_gpt2 *m);

#ifdef __cplusplus
}
#endif
#endif
