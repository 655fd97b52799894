/* GPT-2 (the Hugging Face GPT2LMHeadModel architecture) on the engine's op
 * table: pre-LN blocks, LayerNorm eps 1e-5, tanh GELU, learned position
 * embedding, token embedding tied to the output head, attention scale
 * 1/sqrt(head_dim).
 *
 * Parameters, gradients and AdamW state live in the engine's parameter store
 * (engine/params.h), one contiguous buffer each; gpt2 declares its size
 * table there. Outside the model (files, get/set_params) tensors are in
 * llm.c's order (the store's canonical order):
 *   wte (Vp,C) wpe (maxT,C) ln1w (L,C) ln1b (L,C) qkvw (L,3C,C) qkvb (L,3C)
 *   attprojw (L,C,C) attprojb (L,C) ln2w (L,C) ln2b (L,C) fcw (L,4C,C)
 *   fcb (L,4C) fcprojw (L,C,4C) fcprojb (L,C) lnfw (C) lnfb (C)
 * Inside, each layer's slices are kept together: [wte wpe][layer 0]...
 * [layer L-1][lnfw lnfb], so when the backward of layer l is done, the
 * gradients from layer l's start to the end are final (the grad hook and
 * bucketed all-reduce; the store runs the optimizer, the chunked gradient
 * norm, ZeRO-1 ranges and padding).
 * Rows V..Vp-1 of wte are padding: they are initialised to zero, never reach
 * the loss, and their gradient is zero.
 *
 * Precision: a model has a storage dtype dt (fp32, bf16 or fp16), fixed at
 * creation. The parameters proper are always fp32: they are the MASTER
 * weights that AdamW updates (with fp32 m and v) and that get/set_params,
 * checkpoints and the cross-rank hash see. With bf16 or fp16 the forward
 * and backward read a compute copy of the weights in dt, made with the
 * backend's cast op (round to nearest even) whenever the masters change
 * (the store's set, update_range and sync_weights). Activations and gradients are stored in dt (llm.c's
 * choice: gradients accumulate in dt across micro-batches); the ops
 * accumulate in fp32 or wider inside; LayerNorm statistics, the attention
 * state and the losses stay fp32. In fp32 the compute copy IS the masters.
 *
 * The MLP (fc, GELU, fcproj) runs through matmul_gelu_fwd and
 * matmul_dgelu_bwd when the backend fills both slots (on cuda, GELU in the
 * GEMM epilogue: engine/ops.h, docs/cuda.md), through matmul + gelu ops and
 * a (B,T,4C) scratch otherwise; the two agree within rounding (bitwise on
 * cpu, which composes the same kernels).
 *
 * Activation recomputation (gt_gpt2_new_recompute; docs/distributed.md,
 * "Activation recomputation"): with GT_MODEL_RECOMPUTE_BLOCK the forward
 * keeps, per layer, only each block's input (the embedding output and every
 * block's output res3) and holds the block's inner activations (LayerNorm
 * outputs and statistics, qkv, the attention output and state, res2, fch,
 * gelu(fch)) for one layer at a time; the backward runs each block's forward
 * again from its input, up to gelu(fch), just before that block's backward
 * (the top block's are still there from the forward). The same kernels on
 * the same inputs give the same bits: gradients, and so trained weights,
 * are bitwise those of GT_MODEL_RECOMPUTE_NONE. The cost: (L-1) blocks'
 * forward without fcproj, 2 x 8C^2 FLOPs per token and block plus the
 * attention (gpt2-124m: 14% over the step's 6 x num_params per token);
 * gt_gpt2_flops_per_token, the MFU convention, does not count them.
 */
#ifndef GT_GPT2_H
#define GT_GPT2_H

#include <stddef.h>
#include <stdint.h>

#include "engine/alloc.h"
#include "engine/backend.h"
#include "engine/comm.h"
#include "engine/dtype.h"
#include "engine/optim.h"
#include "engine/params.h"
#include "engine/status.h"
#include "models/model.h"

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

/* "gpt2-tiny" (L2 H2 C64 T64 V256, 0.1M parameters), "gpt2-3m" (L4 H4 C256
 * T256 V256, 3.3M; "gpt2-small" before, an old name it still answers to:
 * models/model.h gt_model_preset_renamed), "gpt2-124m" (L12 H12 C768 T1024
 * V50257 Vp50304, GPT-2 small). GT_ERR_INVALID names the presets when `name`
 * is unknown. */
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
/* The same with activation recomputation (see above; gt_gpt2_new_dt is
 * GT_MODEL_RECOMPUTE_NONE). GT_ERR_INVALID for a mode outside the enum. */
gt_status gt_gpt2_new_recompute(gt_backend *be, const gt_gpt2_config *cfg, gt_dtype dt,
                                gt_model_recompute recompute, int B, int T, gt_gpt2 **out);
void gt_gpt2_free(gt_gpt2 *m);
/* The storage dtype of activations, compute weights and gradients. */
gt_dtype gt_gpt2_dtype(const gt_gpt2 *m);
/* The recomputation mode it was created with. */
gt_model_recompute gt_gpt2_recompute(const gt_gpt2 *m);

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
/* Writes `params` (the whole model's, gt_gpt2_full_params fp32 in llm.c's
 * order) as an llm.c model file (version 3) that gt_gpt2_load_llmc reads
 * back; atomically (engine/fileio.h). GT_ERR_IO names the path. */
gt_status gt_gpt2_write_llmc(const gt_gpt2_config *c, const float *params, const char *path);
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

/* The model's parameter store (engine/params.h: optimizer, gradient norm,
 * ZeRO-1 ranges, padding, grad hook, locating an element). Called during
 * gt_gpt2_forward_backward, its hook sees the frontier after the final
 * LayerNorm, after each layer (going down), and 0 at the end. */
gt_params *gt_gpt2_params(gt_gpt2 *m);
typedef gt_params_hook gt_gpt2_grad_hook;
typedef gt_params_loc gt_gpt2_loc;

/* Replaces all parameters from a host array of num_params fp32 (llm.c order). */
gt_status gt_gpt2_set_params(gt_gpt2 *m, const float *src);
/* Host copies in llm.c's order: master parameters / gradients (num_params
 * fp32; gradients stored in bf16 or fp16 are converted exactly). */
gt_status gt_gpt2_get_params(gt_gpt2 *m, float *dst);
gt_status gt_gpt2_get_grads(gt_gpt2 *m, float *dst);
/* Where element `internal` of the internal layout lives: tensor (llm.c
 * index), layer (-1 for wte, wpe, lnfw, lnfb), element within that layer's
 * slice, and its flat index in llm.c's order. */
void gt_gpt2_locate(const gt_gpt2 *m, size_t internal, gt_gpt2_loc *out);

/* ---- Pipeline stages -----------------------------------------------------------
 * A stage runs blocks [l0, l1) of the model on micro-batches of the
 * model's capacity (B, T): the first stage (l0 == 0) also the embedding,
 * the last (l1 == L) also the final LayerNorm, the tied head and the loss.
 * Every stage holds the whole store; the trainer updates only the stage's
 * range (gt_gpt2_stage_range) and keeps the rest as it is. The head is
 * tied to wte, which the first stage owns: the last stage's head reads its
 * copy of wte (the trainer sends it after each update) and accumulates the
 * head's part of dwte in its own copy of dwte, which the trainer may add
 * to the first stage's; or the first stage computes that part itself from
 * the last stage's dlogits and final LayerNorm output
 * (gt_gpt2_stage_head_grad), with the same call as one rank, which keeps
 * every gradient one rank's bits.
 * A model cut to a stage (gt_gpt2_set_stage) holds the per-layer
 * activations of its own blocks only, and one arena of them per
 * micro-batch in flight (a slot); it then runs only as that stage
 * (gt_gpt2_forward and _forward_backward refuse). The same kernels in the
 * same order per micro-batch as gt_gpt2_forward_backward, without the grad
 * hook. With block recomputation a stage keeps one block's activations per
 * slot and runs its other blocks again in the backward (the same bits). */
enum { GT_GPT2_MAX_SLOTS = 64 };
/* Cuts the activations to blocks [l0, l1) (the stage's input and output
 * residual stream included) in n arenas (slots 0 .. n-1; gt_gpt2_act_bytes
 * counts them all); the embedding's and the head's buffers stay.
 * GT_ERR_INVALID for blocks outside [0, L) or n outside
 * 1..GT_GPT2_MAX_SLOTS; GT_ERR_OOM. Call once, before the stage's first forward. */
gt_status gt_gpt2_set_stage(gt_gpt2 *m, int l0, int l1, int n);
/* Forward of blocks [l0, l1) (the stage's: GT_ERR_INVALID otherwise) on
 * slot `slot`: l0 == 0 from `inputs` (B,T)
 * (host), otherwise from the slot's GT_GPT2_STAGE_IN buffer; l1 == L on to
 * the losses against `targets` (host) and dlogits (scaled by dloss, as
 * gt_gpt2_forward_backward), *mean_loss as there. */
gt_status gt_gpt2_stage_forward(gt_gpt2 *m, int slot, int l0, int l1, const int32_t *inputs,
                                const int32_t *targets, int B, int T, float dloss,
                                float *mean_loss);
/* Backward of blocks [l1-1 .. l0] on the slot's activations: l1 == L from
 * its dlogits, otherwise from GT_GPT2_STAGE_DOUT; leaves d(input) in
 * GT_GPT2_STAGE_DIN (l0 > 0) or ends with the encoder's backward (l0 == 0).
 * Parameter gradients accumulate. */
gt_status gt_gpt2_stage_backward(gt_gpt2 *m, int slot, int l0, int l1);
/* First stage: dwte += the head's part, from the slot's GT_GPT2_STAGE_DLOGITS
 * and GT_GPT2_STAGE_LNF (received from the last stage). Call before the
 * slot's gt_gpt2_stage_backward: one rank adds the head's part first. */
gt_status gt_gpt2_stage_head_grad(gt_gpt2 *m, int slot);
typedef enum gt_gpt2_stage_buf {
    GT_GPT2_STAGE_IN = 0,  /* (B,T,C) the stage's input (l0 > 0): block l0-1's output */
    GT_GPT2_STAGE_OUT,     /* (B,T,C) the stage's output: block l1-1's */
    GT_GPT2_STAGE_DOUT,    /* (B,T,C) d(output), written before the backward (l1 < L) */
    GT_GPT2_STAGE_DIN,     /* (B,T,C) d(input) after the backward (the same buffer) */
    GT_GPT2_STAGE_DLOGITS, /* (B,T,Vp) dlogits after the last stage's forward */
    GT_GPT2_STAGE_LNF,     /* (B,T,C) the final LayerNorm's output */
    GT_GPT2_STAGE_BUF_COUNT
} gt_gpt2_stage_buf;
/* Backend memory of the slot's buffer, in the model's dtype; *count its
 * elements at capacity. NULL for an invalid slot or IN of the first stage. */
void *gt_gpt2_stage_buffer(gt_gpt2 *m, int slot, int l0, int l1, gt_gpt2_stage_buf which,
                           size_t *count);
/* The internal range [lo, hi) of the parameters of blocks [l0, l1), with
 * wte and wpe when l0 == 0 and lnfw, lnfb when l1 == L. */
void gt_gpt2_stage_range(const gt_gpt2 *m, int l0, int l1, size_t *lo, size_t *hi);
/* The internal range of wte: the first stage's, read by the last stage's head. */
void gt_gpt2_tied_range(const gt_gpt2 *m, size_t *lo, size_t *hi);

/* ---- Tensor parallelism ------------------------------------------------------------
 * Megatron-LM's layers (docs/distributed.md, "Tensor parallelism"): a
 * group of tp ranks runs every micro-batch together, each holding a slice
 * of the split tensors and the whole of the others:
 *   qkvw, qkvb   column-parallel by heads: rows of q, k and v of heads
 *                [r*NH/tp, (r+1)*NH/tp) (local (3C/tp, C)); the attention
 *                runs on the rank's heads only
 *   attprojw     row-parallel: columns [r*C/tp, ...) (local (C, C/tp));
 *                the partial outputs all-reduced (Megatron's g), the
 *                bias added by rank 0 of the group
 *   fcw, fcb     column-parallel: hidden units [r*4C/tp, ...)
 *   fcprojw      row-parallel: columns [r*4C/tp, ...), all-reduced (g)
 *   wte          vocabulary-parallel: rows [r*Vp/tp, ...). The embedding
 *                gives zero rows for tokens of another rank's slice, then
 *                an all-reduce (exact: one rank's bits); the tied head
 *                gives the slice's logits, and the cross-entropy
 *                all-reduces the rows' max and sum of exponentials (and
 *                the target's logit), never the whole logits
 *   the rest     replicated (wpe, LayerNorms, attprojb, fcprojb): the same
 *                input gradients on every rank give the same gradients
 * In the backward the input gradient of each column-parallel layer (qkv,
 * fc, the head) is all-reduced (Megatron's f). The sums go through
 * gt_comm_allreduce_tree for a power-of-two group (every rank the same
 * bits). Per micro-batch of N = B*T tokens: 4L + 2 all-reduces of N*C
 * elements, one of N doubles (max) and one of 2N doubles (sums).
 * Host backends (cpu, ref) and fp32 only for now (the loss runs on the
 * host): gt_gpt2_new_tp refuses the rest. Parameters, get/set_params and
 * the size table are the rank's slices, in llm.c's order. */
typedef struct gt_gpt2_tp {
    int size;     /* ranks in the group; <= 1: no tensor parallelism */
    int rank;     /* this rank's place in it */
    gt_comm *comm; /* the group (borrowed; must outlive the model) */
} gt_gpt2_tp;
/* gt_gpt2_new_recompute for a rank of a tensor-parallel group (tp NULL:
 * none). GT_ERR_INVALID when the heads or the padded vocabulary do not
 * split over tp->size (the message says which), or the group does not
 * match; GT_ERR_UNSUPPORTED off the host backends or outside fp32. */
gt_status gt_gpt2_new_tp(gt_backend *be, const gt_gpt2_config *cfg, gt_dtype dt,
                         gt_model_recompute recompute, const gt_gpt2_tp *tp, int B, int T,
                         gt_gpt2 **out);
/* Ranks of its tensor group (1: none). */
int gt_gpt2_tp_size(const gt_gpt2 *m);
/* Parameters of the whole model (every rank's slices together). */
size_t gt_gpt2_full_params(const gt_gpt2_config *c);
/* The rank's slices from the whole model's parameters (llm.c's order). */
gt_status gt_gpt2_tp_set_full(gt_gpt2 *m, const float *full);
/* The whole model's parameters (llm.c's order) from every rank's slices:
 * locals holds the group's get_params arrays in rank order. */
void gt_gpt2_tp_gather(const gt_gpt2 *m, const float *locals, float *full);
/* Sum of squares of the replicated tensors' gradients in grads (the
 * internal layout, model dtype) within [lo, hi): what every rank of the
 * group holds alike, counted once in a global norm. */
gt_status gt_gpt2_tp_replicated_sumsq(gt_gpt2 *m, const void *grads, size_t lo, size_t hi,
                                      double *out);
/* Collectives inside the group so far and their bytes (per rank). */
void gt_gpt2_tp_traffic(const gt_gpt2 *m, uint64_t *calls, uint64_t *bytes);

/* Model FLOPs per token for one training step (forward + backward):
 * 6 * num_params + 6 * L * C * T (causal attention scores and values:
 * 2 matmuls of T*C per token and layer, x3 for backward, halved by the
 * mask). The convention llm.c and nanoGPT's MFU use. */
double gt_gpt2_flops_per_token(const gt_gpt2 *m, int T);

/* Bytes of backend memory the activations hold (the store: gt_params_bytes):
 * with block recomputation (L-1) layers' worth of the block's inner
 * activations fewer (each buffer rounded up to 256 bytes). */
size_t gt_gpt2_act_bytes(const gt_gpt2 *m);

#ifdef __cplusplus
}
#endif
#endif
