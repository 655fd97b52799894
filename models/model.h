/* The generic model: what a training loop needs from any network on the
 * engine's op table, whatever its input. Implemented by gpt2
 * (models/gpt2/gpt2_model.c, an adapter over gt_gpt2), mlp (models/mlp) and
 * convnet (models/convnet). docs/models.md describes the models, their
 * synthetic tasks and the losses those tasks let a perfect model reach.
 *
 * The functions mirror the gt_gpt2_* functions suites/train.c calls, one for
 * one and with the same contracts (read gpt2.h for the long form), so that
 * porting the loop is a rename plus the batch struct:
 *
 *   gt_gpt2_forward_backward(m, in, tg, B, T, dloss, &l)
 *       -> gt_model_forward_backward(m, &batch, dloss, &l)
 *   gt_gpt2_flops_per_token(m, T) -> gt_model_flops_per_unit(m)
 *   gt_gpt2_locate / loc_format / find_nonfinite -> gt_model_* (gt_model_loc)
 *   GT_GPT2_NUM_TENSORS -> gt_model_num_tensors(m)
 *
 * What is new compared with gpt2:
 *   - the batch (gt_batch): token sequences, or dense fp32 inputs with one
 *     int32 label per sample;
 *   - the unit that throughput counts ("tokens", "images", "samples") and
 *     how many of them a sample holds;
 *   - non-parameter state (BatchNorm running statistics): tensors that are
 *     not trained, not in the gradient, but that a checkpoint must save and a
 *     resume restore for an evaluation to give the same bits;
 *   - a training / evaluation mode (BatchNorm: batch or running statistics).
 *
 * Every model keeps parameters, gradients and the AdamW state m, v in one
 * contiguous buffer each, in backend memory: fp32 master parameters and
 * AdamW state; gradients (and activations) in the model's storage dtype
 * (gt_model_dtype: fp32, bf16 or fp16, with a compute copy of the weights
 * in that dtype when it is not fp32; gpt2.h explains the scheme). The "internal layout" is
 * the order in which gradients become final during the backward (for
 * bucketed all-reduce); the "canonical order" is the order of the tensor
 * list (gt_model_tensor_name), used by get/set_params and files. For mlp and
 * convnet the two are the same; gpt2 permutes (gpt2.h).
 */
#ifndef GT_MODEL_H
#define GT_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "engine/backend.h"
#include "engine/dtype.h"
#include "engine/optim.h"
#include "engine/status.h"
#include "models/tasks.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gt_model_input {
    GT_MODEL_INPUT_TOKENS = 0, /* int32 token ids (n, T), targets (n, T) */
    GT_MODEL_INPUT_DENSE,      /* fp32 inputs (n, sample_numel), labels (n) */
    GT_MODEL_INPUT_COUNT
} gt_model_input;

/* One forward's worth of samples, in host memory (borrowed). A "prediction"
 * is one cross-entropy term: n*T of them for tokens, n for dense inputs;
 * mean losses are over predictions. */
typedef struct gt_batch {
    int n;                  /* samples: sequences or examples, >= 1 */
    int T;                  /* tokens per sequence; 1 for dense inputs */
    const int32_t *tokens;  /* TOKENS: (n, T) ids; DENSE: NULL */
    const float *inputs;    /* DENSE: (n, sample_numel) fp32 (images NCHW); TOKENS: NULL */
    const int32_t *targets; /* TOKENS: (n, T) next ids; DENSE: (n) labels in [0, classes);
                             * NULL: no loss */
} gt_batch;

/* Predictions in a batch: n * T. */
size_t gt_batch_predictions(const gt_batch *b);

/* What a model is, for the loop and for reports. */
typedef struct gt_model_info {
    char name[64];          /* the preset it was built from ("mlp-tiny"), or the family */
    const char *family;     /* "gpt2", "mlp", "convnet" */
    gt_model_input input;
    const char *unit;       /* what throughput counts: "tokens", "samples", "images" */
    int units_per_sample;   /* T for gpt2 (at the model's capacity), 1 otherwise */
    int sample_numel;       /* DENSE: fp32 values per sample (C*H*W, in_dim); TOKENS: 0 */
    int classes;            /* vocabulary V or label classes K */
    int max_batch;          /* samples per forward it was created for */
    int max_T;              /* tokens per sample it was created for (1 for DENSE) */
    int has_state;          /* 1 when there are state tensors (BatchNorm) */
} gt_model_info;

typedef struct gt_model gt_model;

/* Called during gt_model_forward_backward each time the gradients in
 * [frontier, num_params) of the internal layout became final, ending with
 * 0. An error stops the backward. (Same type as gt_gpt2_grad_hook.) */
typedef gt_status (*gt_model_grad_hook)(void *ctx, size_t frontier);

/* Where an element of the internal layout lives. tensor: canonical index;
 * layer: the gpt2 layer (-1 for tensors that are not per layer, and for mlp
 * and convnet, whose tensor names already say where they are); element:
 * within that (layer's) slice; flat: index in the canonical order. */
typedef struct gt_model_loc {
    int tensor;
    int layer;
    size_t element;
    size_t flat;
    size_t internal; /* the index asked about */
} gt_model_loc;

/* ---- creating ---------------------------------------------------------------- */

/* Builds the preset `name` on `be` (borrowed; must outlive the model) for at
 * most max_batch samples per forward and, for token models, at most T tokens
 * per sample (ignored by dense models). Presets: gpt2-tiny, gpt2-small,
 * gpt2-124m (gpt2.h), mlp-tiny, mlp-tiny-relu, mlp-small (mlp.h),
 * convnet-tiny, resnet-small (convnet.h). GT_ERR_INVALID names them all
 * when `name` is unknown. Parameters are uninitialised until
 * gt_model_init_random or gt_model_set_params. */
gt_status gt_model_new(gt_backend *be, const char *name, int max_batch, int T, gt_model **out);
/* The same with storage dtype dt (gt_model_new is fp32): fp32, bf16 or
 * fp16 for every family. A backend that cannot store dt refuses here with
 * GT_ERR_UNSUPPORTED naming the precision and the backend
 * (gt_ops_probe_dtype). */
gt_status gt_model_new_dt(gt_backend *be, const char *name, gt_dtype dt, int max_batch, int T,
                          gt_model **out);
/* Accepts NULL. */
void gt_model_free(gt_model *m);
/* "gpt2-tiny, gpt2-small, ..., resnet-small": for messages and --help. */
const char *gt_model_preset_names(void);
/* The family a preset name belongs to ("gpt2", "mlp", "convnet"), NULL if none. */
const char *gt_model_family_of(const char *name);

const gt_model_info *gt_model_get_info(const gt_model *m);
/* Storage dtype of activations, compute weights and gradients. */
gt_dtype gt_model_dtype(const gt_model *m);

/* Up to GT_MODEL_CONFIG_FIELDS integers that identify the architecture, for
 * checkpoint metadata (gpt2: the six of gt_ckpt_model_field; mlp: in_dim,
 * classes, depth, width, activation; convnet: channels, height, width,
 * classes, stem width, blocks) and their names. Unused fields are 0. */
enum { GT_MODEL_CONFIG_FIELDS = 6 };
void gt_model_config_fields(const gt_model *m, int32_t out[GT_MODEL_CONFIG_FIELDS]);
const char *gt_model_config_field_name(const gt_model *m, int i);

/* ---- parameters ----------------------------------------------------------------- */

size_t gt_model_num_params(const gt_model *m);
int gt_model_num_tensors(const gt_model *m);
/* Name, element count and shape (returns ndim, 1..4) of parameter tensor
 * i < gt_model_num_tensors, canonical order. */
const char *gt_model_tensor_name(const gt_model *m, int i);
size_t gt_model_tensor_size(const gt_model *m, int i);
int gt_model_tensor_shape(const gt_model *m, int i, int64_t shape[4]);

/* The model family's initialisation, from Philox(seed, stream per tensor):
 * the same bits on any thread or rank count. Resets the state tensors
 * (running mean 0, running variance 1). */
gt_status gt_model_init_random(gt_model *m, uint64_t seed);

/* Host copies, canonical order, num_params fp32. */
gt_status gt_model_set_params(gt_model *m, const float *src);
gt_status gt_model_get_params(gt_model *m, float *dst);
gt_status gt_model_get_grads(gt_model *m, float *dst);

/* ---- forward and backward ---------------------------------------------------- */

/* Forward pass in the current mode (gt_model_set_training). With targets,
 * *mean_loss (may be NULL) receives the mean over the batch's predictions,
 * summed in a fixed order on the host. In training mode BatchNorm uses the
 * batch's statistics and updates the running ones (torch semantics). */
gt_status gt_model_forward(gt_model *m, const gt_batch *b, float *mean_loss);
/* Forward, loss and backward, always in training mode (whatever
 * set_training says: BatchNorm's backward is the batch-statistics one):
 * ACCUMULATES gradients of dloss * (sum of per-prediction losses); dloss =
 * 1 / (global predictions of the step). Calls the grad hook. */
gt_status gt_model_forward_backward(gt_model *m, const gt_batch *b, float dloss,
                                    float *mean_loss);
gt_status gt_model_zero_grad(gt_model *m);

/* 1: training mode (the default), 0: evaluation (BatchNorm normalises with
 * its running statistics and leaves them alone). Models without such layers
 * ignore it. */
void gt_model_set_training(gt_model *m, int training);
int gt_model_training(const gt_model *m);

/* ---- optimizer (see gpt2.h for the chunked norm's contract) ------------------ */

size_t gt_model_norm_chunk(const gt_model *m);
gt_status gt_model_grad_norm(gt_model *m, double *out);
/* grads: laid out like the gradients, in the model's dtype. */
gt_status gt_model_grad_sumsq_chunks(gt_model *m, const void *grads, size_t lo_chunk,
                                     size_t hi_chunk, double *partials);
/* One AdamW step t >= 1 (lr from gt_lr_at(cfg, t-1), clipping by the global
 * norm; weight decay on weight matrices, convolution kernels and embeddings
 * only, never on biases or normalisation parameters). */
gt_status gt_model_update(gt_model *m, const gt_adamw_config *cfg, int t, double *grad_norm,
                          float *lr);

/* ---- data parallelism -------------------------------------------------------- */

void gt_model_set_grad_hook(gt_model *m, gt_model_grad_hook hook, void *ctx);
/* Flat buffers (backend memory, internal layout, num_params_padded
 * elements): fp32 master parameters; gradients in the model's dtype.
 * Whoever writes the masters directly (the ZeRO-1 all-gather) calls
 * gt_model_sync_weights on what it wrote (nothing to do in fp32). */
float *gt_model_params_buffer(gt_model *m);
void *gt_model_grads_buffer(gt_model *m);
gt_status gt_model_sync_weights(gt_model *m, size_t lo, size_t hi);
size_t gt_model_num_params_padded(const gt_model *m);
gt_status gt_model_pad(gt_model *m, size_t n_alloc);
gt_status gt_model_set_opt_range(gt_model *m, size_t lo, size_t hi);
/* grads[0 .. hi-lo): the shard, in the model's dtype. */
gt_status gt_model_update_range(gt_model *m, const gt_adamw_config *cfg, int t, float lr,
                                float grad_scale, const void *grads, size_t lo, size_t hi);
gt_status gt_model_get_opt_state(gt_model *m, size_t lo, size_t hi, float *m_dst,
                                 float *v_dst);
gt_status gt_model_set_opt_state(gt_model *m, size_t lo, size_t hi, const float *m_src,
                                 const float *v_src);

/* ---- non-parameter state (BatchNorm running statistics) ----------------------
 * fp32 tensors updated by training-mode forwards, not by the optimizer. A
 * checkpoint saves them and a resume restores them; under data parallelism
 * each rank's copy follows its own micro-batches (docs/models.md says what
 * the loop does with them). Models without state have 0 tensors and 0
 * elements; the buffer is then NULL. */
int gt_model_num_state_tensors(const gt_model *m);
const char *gt_model_state_name(const gt_model *m, int i);
size_t gt_model_state_size(const gt_model *m, int i);
int gt_model_state_shape(const gt_model *m, int i, int64_t shape[4]);
size_t gt_model_state_numel(const gt_model *m);
/* All state tensors, concatenated in order: host copies / backend buffer. */
gt_status gt_model_get_state(gt_model *m, float *dst);
gt_status gt_model_set_state(gt_model *m, const float *src);
float *gt_model_state_buffer(gt_model *m);

/* ---- diagnostics and accounting ---------------------------------------------- */

void gt_model_locate(const gt_model *m, size_t internal, gt_model_loc *out);
/* "block1.conv2.w, element 17", "qkvw layer 3, element 17" */
void gt_model_loc_format(const gt_model *m, const gt_model_loc *loc, char *out, size_t n);
/* First NaN or infinity of buf (backend memory of dtype dt holding the
 * internal range [lo, hi)), searched in canonical order; *found 0 when all
 * are finite. (mlp and convnet: dt is fp32 or the model's dtype.) */
gt_status gt_model_find_nonfinite(gt_model *m, const void *buf, gt_dtype dt, size_t lo,
                                  size_t hi, int *found, gt_model_loc *loc, float *value);

/* Model FLOPs of one training step (forward + backward) per unit of
 * info.unit, at the model's capacity T for token models: gpt2 as
 * gt_gpt2_flops_per_token; mlp and convnet 6 x the multiply-adds of their
 * matmuls and convolutions per sample (2 forward, 4 backward), the
 * convention MFU figures use. */
double gt_model_flops_per_unit(const gt_model *m);

/* Bytes of backend memory the model holds (params, grads, state, activations). */
size_t gt_model_memory_bytes(const gt_model *m);

/* ---- the synthetic task of a dense model ----------------------------------------
 * The task the train suite feeds a dense model (docs/models.md): mlp:
 * GT_TASK_TEACHER with dim = in_dim, a teacher of GT_MODEL_TEACHER_HIDDEN
 * hidden units and margin GT_MODEL_TEACHER_MARGIN;
 * convnet: GT_TASK_TEMPLATES of the model's image shape, template side 3
 * (5 when both sides are >= 32 pixels); K = the model's classes, label noise
 * 0.1, the given seed. GT_ERR_INVALID for token models (their data is the
 * token stream, engine/data.h). */
enum { GT_MODEL_TEACHER_HIDDEN = 32 };
#define GT_MODEL_LABEL_NOISE 0.1
#define GT_MODEL_TEACHER_MARGIN 0.5
gt_status gt_model_task(const gt_model *m, uint64_t seed, gt_task_config *out);

/* ---- implementing a model ---------------------------------------------------
 * A model is a table of functions over its own `impl`; gt_model_* check the
 * arguments that every model shares and dispatch. Slots mirror the public
 * functions above (same arguments, `m` first). */
typedef struct gt_model_vt {
    void (*destroy)(gt_model *m);
    void (*config_fields)(const gt_model *m, int32_t out[GT_MODEL_CONFIG_FIELDS]);
    const char *(*config_field_name)(const gt_model *m, int i);
    size_t (*num_params)(const gt_model *m);
    int (*num_tensors)(const gt_model *m);
    const char *(*tensor_name)(const gt_model *m, int i);
    size_t (*tensor_size)(const gt_model *m, int i);
    int (*tensor_shape)(const gt_model *m, int i, int64_t shape[4]);
    gt_status (*init_random)(gt_model *m, uint64_t seed);
    gt_status (*set_params)(gt_model *m, const float *src);
    gt_status (*get_params)(gt_model *m, float *dst);
    gt_status (*get_grads)(gt_model *m, float *dst);
    gt_status (*forward)(gt_model *m, const gt_batch *b, float *mean_loss);
    gt_status (*forward_backward)(gt_model *m, const gt_batch *b, float dloss,
                                  float *mean_loss);
    gt_status (*zero_grad)(gt_model *m);
    size_t (*norm_chunk)(const gt_model *m);
    gt_status (*grad_norm)(gt_model *m, double *out);
    gt_status (*grad_sumsq_chunks)(gt_model *m, const void *grads, size_t lo_chunk,
                                   size_t hi_chunk, double *partials);
    gt_status (*update)(gt_model *m, const gt_adamw_config *cfg, int t, double *grad_norm,
                        float *lr);
    void (*set_grad_hook)(gt_model *m, gt_model_grad_hook hook, void *ctx);
    float *(*params_buffer)(gt_model *m);
    void *(*grads_buffer)(gt_model *m);
    gt_status (*sync_weights)(gt_model *m, size_t lo, size_t hi);
    gt_dtype (*dtype)(const gt_model *m);
    size_t (*num_params_padded)(const gt_model *m);
    gt_status (*pad)(gt_model *m, size_t n_alloc);
    gt_status (*set_opt_range)(gt_model *m, size_t lo, size_t hi);
    gt_status (*update_range)(gt_model *m, const gt_adamw_config *cfg, int t, float lr,
                              float grad_scale, const void *grads, size_t lo, size_t hi);
    gt_status (*get_opt_state)(gt_model *m, size_t lo, size_t hi, float *m_dst, float *v_dst);
    gt_status (*set_opt_state)(gt_model *m, size_t lo, size_t hi, const float *m_src,
                               const float *v_src);
    /* state: all NULL for models without any */
    int (*num_state_tensors)(const gt_model *m);
    const char *(*state_name)(const gt_model *m, int i);
    size_t (*state_size)(const gt_model *m, int i);
    int (*state_shape)(const gt_model *m, int i, int64_t shape[4]);
    gt_status (*get_state)(gt_model *m, float *dst);
    gt_status (*set_state)(gt_model *m, const float *src);
    float *(*state_buffer)(gt_model *m);
    void (*locate)(const gt_model *m, size_t internal, gt_model_loc *out);
    void (*loc_format)(const gt_model *m, const gt_model_loc *loc, char *out, size_t n);
    gt_status (*find_nonfinite)(gt_model *m, const void *buf, gt_dtype dt, size_t lo,
                                size_t hi, int *found, gt_model_loc *loc, float *value);
    double (*flops_per_unit)(const gt_model *m);
    size_t (*memory_bytes)(const gt_model *m);
} gt_model_vt;

struct gt_model {
    const gt_model_vt *vt;
    void *impl;         /* owned by the model; freed by vt->destroy */
    gt_model_info info;
    int training;       /* gt_model_set_training */
};

#ifdef __cplusplus
}
#endif
#endif
