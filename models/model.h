/* The generic model: what a training loop needs from any network on the
 * engine's op table, whatever its input. gpt2 (models/gpt2), mlp
 * (models/mlp) and convnet (models/convnet) are equal peers: each declares
 * its tensors in the engine's one parameter store (engine/params.h) and does
 * forward and backward; everything that only needs the store (host copies,
 * gradient norm, AdamW, ZeRO-1 ranges, padding, state tensors, locating an
 * element, accounting) is implemented once here, over m->params.
 * docs/models.md describes the models, their synthetic tasks and the losses
 * those tasks let a perfect model reach.
 *
 * What a model varies in (gt_model_vt): its forward and backward, its
 * initialisation, its FLOPs, its activations' bytes, and the integers that
 * identify its architecture. Besides:
 *   - the batch (gt_batch): token sequences, or dense fp32 inputs with one
 *     int32 label per sample;
 *   - the unit that throughput counts ("tokens", "images", "samples") and
 *     how many of them a sample holds;
 *   - non-parameter state (BatchNorm running statistics): tensors that are
 *     not trained, not in the gradient, but that a checkpoint must save and a
 *     resume restore for an evaluation to give the same bits;
 *   - a training / evaluation mode (BatchNorm: batch or running statistics).
 *
 * The store keeps fp32 master parameters and AdamW state, and gradients
 * (and, when the storage dtype gt_model_dtype is bf16 or fp16, a compute
 * copy of the weights) in that dtype, each in one contiguous buffer of
 * backend memory. The "internal layout" is the order in which gradients
 * become final during the backward (for bucketed all-reduce); the
 * "canonical order" is the order of the tensor list (gt_model_tensor_name),
 * used by get/set_params and files. For mlp and convnet the two are the
 * same; gpt2 keeps each layer's slices together (gpt2.h).
 */
#ifndef GT_MODEL_H
#define GT_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "engine/backend.h"
#include "engine/comm.h"
#include "engine/dtype.h"
#include "engine/optim.h"
#include "engine/params.h"
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
 * 0. An error stops the backward. */
typedef gt_params_hook gt_model_grad_hook;

/* Where an element of the internal layout lives (engine/params.h): tensor:
 * canonical index; layer: the gpt2 layer (-1 for tensors that are not per
 * layer, and for mlp and convnet, whose tensor names already say where they
 * are); element: within that (layer's) slice; flat: index in the canonical
 * order. */
typedef gt_params_loc gt_model_loc;

/* ---- creating ---------------------------------------------------------------- */

/* Builds the preset `name` on `be` (borrowed; must outlive the model) for at
 * most max_batch samples per forward and, for token models, at most T tokens
 * per sample (ignored by dense models). Presets: gpt2-tiny, gpt2-3m,
 * gpt2-124m (gpt2.h), mlp-tiny, mlp-tiny-relu, mlp-small (mlp.h),
 * convnet-tiny, resnet-small (convnet.h). GT_ERR_INVALID names them all
 * when `name` is unknown. An old name of a renamed preset
 * (gt_model_preset_renamed) builds the preset under its new name.
 * Parameters are uninitialised until gt_model_init_random or
 * gt_model_set_params. */
gt_status gt_model_new(gt_backend *be, const char *name, int max_batch, int T, gt_model **out);
/* The same with storage dtype dt (gt_model_new is fp32): fp32, bf16 or
 * fp16 for every family. A backend that cannot store dt refuses here with
 * GT_ERR_UNSUPPORTED naming the precision and the backend
 * (gt_ops_probe_dtype). */
gt_status gt_model_new_dt(gt_backend *be, const char *name, gt_dtype dt, int max_batch, int T,
                          gt_model **out);
/* Accepts NULL. */
void gt_model_free(gt_model *m);
/* ---- activation recomputation ----------------------------------------------------
 * What the forward keeps for the backward (docs/distributed.md, "Activation
 * recomputation"). BLOCK keeps each block's input and runs the block's
 * forward again in the backward: less activation memory, the same gradient
 * bits (the same kernels on the same inputs), one more forward of the
 * blocks. gpt2 (a transformer block), mlp (a hidden layer) and convnet (a
 * residual block) have it. */
typedef enum gt_model_recompute {
    GT_MODEL_RECOMPUTE_NONE = 0, /* keep every activation the backward reads */
    GT_MODEL_RECOMPUTE_BLOCK,    /* keep each block's input, recompute the block */
    GT_MODEL_RECOMPUTE_COUNT
} gt_model_recompute;
/* "none", "block"; "?" outside the enum. */
const char *gt_model_recompute_name(gt_model_recompute r);
/* The mode named s; GT_ERR_INVALID names the valid values. */
gt_status gt_model_recompute_parse(const char *s, gt_model_recompute *out);

/* ---- options by name ---------------------------------------------------------
 * A model is a preset and options: "key=value" integers separated by commas
 * ("layers=4,heads=4"), applied in order over the preset's architecture.
 * The family validates them: GT_ERR_INVALID names an unknown key and the
 * valid ones, or a value outside its range. gpt2 takes max_seq, vocab,
 * padded_vocab, layers, heads, channels (vocab moves padded_vocab with it
 * when the two were equal or padded_vocab would fall below it); mlp and
 * convnet take none. The name "llmc" is gpt2 with all six given as options
 * (the config of an llm.c model file, gt_model_describe_file). */
enum { GT_MODEL_OPTIONS_LEN = 256 };
/* gt_model_new_dt with options (NULL or "" for none) and a recomputation
 * mode (GT_ERR_INVALID outside the enum). */
gt_status gt_model_new_opts(gt_backend *be, const char *name, const char *options, gt_dtype dt,
                            gt_model_recompute recompute, int max_batch, int T,
                            gt_model **out);
/* Appends "key=value" to options (GT_MODEL_OPTIONS_LEN bytes, a C string);
 * GT_ERR_INVALID when it does not fit. */
gt_status gt_model_option_add(char *options, const char *key, long long value);
/* What a preset and options describe, without a backend: the family, the
 * architecture's integers as gt_model_config_fields gives them, the classes
 * (vocabulary V or labels K) and the longest sample in tokens (gpt2:
 * max_seq; 1 for dense models). Checks the options and the architecture
 * (the message names the field); what could be read is filled in even then. */
typedef struct gt_model_arch {
    const char *family;
    int32_t fields[6 /* GT_MODEL_CONFIG_FIELDS */];
    int classes;
    int max_T;
} gt_model_arch;
gt_status gt_model_arch_of(const char *name, const char *options, gt_model_arch *out);
/* The model a file describes: "llmc:FILE" (an llm.c model file) gives the
 * name "llmc" (64 bytes) and its six fields as options
 * (GT_MODEL_OPTIONS_LEN bytes). */
gt_status gt_model_describe_file(const char *source, char *name, char *options);
/* Starts the parameters from a file: "llmc:FILE" for gpt2 (its config must
 * equal the model's); GT_ERR_INVALID for another form or another family. */
gt_status gt_model_init_from(gt_model *m, const char *source);
/* Writes the whole model's parameters `full` (canonical order,
 * gt_model_tp_full_params fp32: a tensor-parallel rank passes the group's
 * gathered slices) where dest says: "llmc:FILE" for gpt2, the file
 * gt_model_init_from reads back. GT_ERR_INVALID for another form or
 * family. */
gt_status gt_model_save_to(const gt_model *m, const float *full, const char *dest);

/* "gpt2-tiny, gpt2-3m, ..., resnet-small": for messages and --help. */
const char *gt_model_preset_names(void);
/* The new name of a preset that was renamed, when `name` is its old name
 * ("gpt2-small": "gpt2-3m", a 3.3M-parameter model that the old name made
 * read as GPT-2 small's 124M); NULL for any other name. Every function here
 * takes the old name as the new one; the harness says so (deprecated) and
 * records the new name. */
const char *gt_model_preset_renamed(const char *name);
/* The family a preset name (or an old name) belongs to ("gpt2", "mlp",
 * "convnet"), NULL if none. */
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

/* ---- optimizer (engine/params.h has the chunked norm's contract) -------------- */

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
/* ZeRO-3's sharding units (engine/params.h): a model that declares them
 * brackets each unit's compute with the unit hook's NEED and DONE, in the
 * forward and again in the backward. gpt2: unit 0 the embeddings (wte,
 * wpe), units 1..L the blocks, unit L+1 the final LayerNorm; mlp: unit l
 * layer l, the head last; convnet: the stem, each residual block, the
 * head. */
void gt_model_set_unit_hook(gt_model *m, gt_params_unit_hook hook, void *ctx);
int gt_model_num_units(const gt_model *m);
void gt_model_unit_range(const gt_model *m, int u, size_t *lo, size_t *hi);
/* Flat buffers (backend memory, internal layout, num_params_padded
 * elements): fp32 master parameters (with ZeRO-3's sharded masters only
 * the range gt_params_masters_range gives); gradients in the model's dtype.
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
/* Of those, the activations and the forward/backward scratch (what
 * recomputation shrinks). */
size_t gt_model_act_bytes(const gt_model *m);
/* The recomputation mode the model was created with. */
gt_model_recompute gt_model_get_recompute(const gt_model *m);

/* ---- pipeline stages ---------------------------------------------------------------
 * A model with blocks can run a contiguous part of them as one pipeline
 * stage (gpt2: models/gpt2/gpt2.h, "Pipeline stages", says what the first
 * and last stages add and how the tied head's gradient keeps one rank's
 * bits). mlp and convnet have none: gt_model_num_blocks is 0 and the rest
 * GT_ERR_UNSUPPORTED. Micro-batches have the model's capacity (max_batch
 * samples of max_T tokens); each one in flight has an activation slot. */
typedef struct gt_model_stage {
    int b0, b1; /* blocks [b0, b1) */
    int first;  /* b0 == 0: the input embedding too */
    int last;   /* b1 == blocks: the head and the loss too */
} gt_model_stage;
typedef enum gt_model_stage_buf {
    GT_MODEL_STAGE_IN = 0, /* the stage's input activation (not the first stage) */
    GT_MODEL_STAGE_OUT,    /* its output activation (not the last) */
    GT_MODEL_STAGE_DOUT,   /* the output's gradient, written before the backward */
    GT_MODEL_STAGE_DIN,    /* the input's gradient after the backward */
    GT_MODEL_STAGE_DLOGITS, /* the last stage's loss gradient at the tied head */
    GT_MODEL_STAGE_HEAD_IN, /* the last stage's head input (final LayerNorm output) */
    GT_MODEL_STAGE_BUF_COUNT
} gt_model_stage_buf;
/* Blocks a stage can hold; 0: no pipeline stages. */
int gt_model_num_blocks(const gt_model *m);
/* The model cut to stage st: the activations of its blocks only, in n
 * slots (micro-batches in flight). Once, before the stage's first forward;
 * the model then runs only as that stage. */
gt_status gt_model_stage_prepare(gt_model *m, const gt_model_stage *st, int n);
/* The stage's forward on slot `slot` (the first stage reads b->tokens, the
 * last b->targets and returns its *mean_loss and the loss gradient, scaled
 * by dloss); its backward; the first stage's share of the tied head's
 * gradient from GT_MODEL_STAGE_DLOGITS and _HEAD_IN of the slot. */
gt_status gt_model_stage_forward(gt_model *m, const gt_model_stage *st, int slot,
                                 const gt_batch *b, float dloss, float *mean_loss);
gt_status gt_model_stage_backward(gt_model *m, const gt_model_stage *st, int slot);
gt_status gt_model_stage_head_grad(gt_model *m, int slot);
/* The slot's buffer (backend memory, gt_model_dtype) and its elements; NULL
 * where the stage has none. */
void *gt_model_stage_buffer(gt_model *m, const gt_model_stage *st, int slot,
                            gt_model_stage_buf which, size_t *count);
/* The stage's parameters, [lo, hi) of the internal layout, and the tied
 * weights the first stage owns and the last stage reads ([0, 0) when
 * none). */
void gt_model_stage_range(const gt_model *m, const gt_model_stage *st, size_t *lo, size_t *hi);
void gt_model_tied_range(const gt_model *m, size_t *lo, size_t *hi);

/* ---- tensor parallelism -----------------------------------------------------------
 * A model whose layers split over a group of ranks (gpt2: Megatron-LM's
 * tensor parallelism, models/gpt2/gpt2.h "Tensor parallelism"): each rank
 * holds slices of the split tensors and the whole of the replicated ones;
 * its store, get/set_params and num_params are its own slices. Every rank
 * of the group runs every forward and backward together (collectives
 * inside). mlp and convnet have none: GT_ERR_UNSUPPORTED. */
typedef struct gt_model_tp {
    int size, rank; /* the group's ranks and this one's place */
    gt_comm *comm;  /* borrowed: the group; must outlive the model */
} gt_model_tp;
/* gt_model_new_opts for a rank of a tensor-parallel group (tp NULL or
 * size 1: gt_model_new_opts). */
gt_status gt_model_new_tp(gt_backend *be, const char *name, const char *options, gt_dtype dt,
                          gt_model_recompute recompute, int max_batch, int T,
                          const gt_model_tp *tp, gt_model **out);
/* Ranks of its group (1: none). */
int gt_model_tp_size(const gt_model *m);
/* Parameters of the whole model (the one-rank layout). */
size_t gt_model_tp_full_params(const gt_model *m);
/* The whole model's parameters (canonical order, full_params fp32) from
 * the group's get_params arrays in rank order. */
gt_status gt_model_tp_gather(const gt_model *m, const float *locals, float *full);
/* Sum of squares of the replicated tensors' gradients within [lo, hi) of
 * grads (internal layout, model dtype): held alike by every rank of the
 * group, counted once in the global norm. 0 without a group. */
gt_status gt_model_tp_replicated_sumsq(gt_model *m, const void *grads, size_t lo, size_t hi,
                                       double *out);
/* Collectives inside the group so far and their bytes, per rank. */
void gt_model_tp_traffic(const gt_model *m, uint64_t *calls, uint64_t *bytes);

typedef struct gt_model_tp_vt {
    int (*size)(const gt_model *m);
    size_t (*full_params)(const gt_model *m);
    void (*gather)(const gt_model *m, const float *locals, float *full);
    gt_status (*replicated_sumsq)(gt_model *m, const void *grads, size_t lo, size_t hi,
                                  double *out);
    void (*traffic)(const gt_model *m, uint64_t *calls, uint64_t *bytes);
} gt_model_tp_vt;

typedef struct gt_model_stage_vt {
    int (*num_blocks)(const gt_model *m);
    gt_status (*prepare)(gt_model *m, const gt_model_stage *st, int n);
    gt_status (*forward)(gt_model *m, const gt_model_stage *st, int slot, const gt_batch *b,
                         float dloss, float *mean_loss);
    gt_status (*backward)(gt_model *m, const gt_model_stage *st, int slot);
    gt_status (*head_grad)(gt_model *m, int slot);
    void *(*buffer)(gt_model *m, const gt_model_stage *st, int slot, gt_model_stage_buf which,
                    size_t *count);
    void (*range)(const gt_model *m, const gt_model_stage *st, size_t *lo, size_t *hi);
    void (*tied)(const gt_model *m, size_t *lo, size_t *hi);
} gt_model_stage_vt;

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
 * A model fills a gt_model: its info, its store (declared with
 * gt_params_add and allocated with gt_params_alloc, owned by impl) and a
 * table of what it varies in. gt_model_* check the arguments that every
 * model shares and dispatch; models/model_impl.h has helpers for dense
 * models. */
typedef struct gt_model_vt {
    /* frees impl (and its store) and m */
    void (*destroy)(gt_model *m);
    /* fills up to GT_MODEL_CONFIG_FIELDS (zeroed before) */
    void (*config_fields)(const gt_model *m, int32_t out[GT_MODEL_CONFIG_FIELDS]);
    const char *(*config_field_name)(const gt_model *m, int i);
    gt_status (*init_random)(gt_model *m, uint64_t seed);
    gt_status (*forward)(gt_model *m, const gt_batch *b, float *mean_loss);
    /* calls gt_params_ready as gradients become final, ending with slice 0 of tensor 0 */
    gt_status (*forward_backward)(gt_model *m, const gt_batch *b, float dloss,
                                  float *mean_loss);
    /* "llmc:FILE" ...; NULL: the family reads no files */
    gt_status (*init_from)(gt_model *m, const char *source);
    /* "llmc:FILE" from the whole model's parameters; NULL: none */
    gt_status (*save_to)(const gt_model *m, const float *full, const char *dest);
    double (*flops_per_unit)(const gt_model *m);
    /* bytes of backend memory besides the store (activations, scratch) */
    size_t (*act_bytes)(const gt_model *m);
    /* pipeline stages (gt_model_stage_vt above); NULL: none */
    const struct gt_model_stage_vt *stages;
    /* tensor parallelism (gt_model_tp_vt above); NULL: none */
    const struct gt_model_tp_vt *tp;
} gt_model_vt;

struct gt_model {
    const gt_model_vt *vt;
    void *impl;        /* owned by the model; freed by vt->destroy */
    gt_params *params; /* the model's store, inside impl */
    gt_model_info info;
    int training;      /* gt_model_set_training */
    gt_model_recompute recompute; /* set by the family that implements it */
};

#ifdef __cplusplus
}
#endif
#endif
