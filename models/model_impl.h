/* For model implementations only (models/), not for callers of model.h.
 *
 * gt_flat: the parameter store mlp and convnet share. Tensors are appended
 * in forward order, one after the other, so the canonical order IS the
 * internal layout and the backward finalises a suffix of it at a time (what
 * the grad hook and bucketed all-reduce need). It owns the fp32 master
 * params, AdamW m and v, the gradients and, for 16-bit storage, the
 * compute copy of the weights in the storage dtype k.dt (gpt2's scheme:
 * gpt2.h), all in backend memory, padded to whole norm chunks like gpt2's,
 * and the state buffer (BatchNorm running statistics, fp32), and
 * implements every gt_model_vt slot that only needs the layout
 * (GT_FLAT_VT_SLOTS). A model built on it puts a gt_flat FIRST in its impl
 * struct and fills in forward, forward_backward, init_random,
 * config_fields / config_field_name, destroy.
 */
#ifndef GT_MODEL_IMPL_H
#define GT_MODEL_IMPL_H

#include "engine/ops.h"
#include "models/model.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { GT_FLAT_MAX_TENSORS = 128, GT_FLAT_NAME_LEN = 32 };

typedef struct gt_flat_tensor {
    char name[GT_FLAT_NAME_LEN];
    int ndim;
    int64_t shape[4];
    size_t off, n; /* elements */
    int decay;     /* AdamW weight decay applies (weights, not biases or norms) */
} gt_flat_tensor;

typedef struct gt_flat {
    gt_backend *be;
    gt_kctx k;  /* k.dt: storage dtype of activations, compute weights, gradients */
    size_t es;  /* its size in bytes */
    int nt, ns;
    gt_flat_tensor t[GT_FLAT_MAX_TENSORS]; /* parameters */
    gt_flat_tensor s[GT_FLAT_MAX_TENSORS]; /* state */
    size_t num_params, num_alloc, norm_chunk, opt_lo, opt_hi, state_numel;
    float *params, *m, *v, *state; /* fp32 */
    void *grads;                   /* k.dt */
    void *wc;                      /* k.dt compute copy of params; NULL in fp32 */
    void *stage;                   /* host staging of a batch's inputs in k.dt */
    size_t stage_bytes;
    gt_model_grad_hook hook;
    void *hook_ctx;
    double flops_per_unit; /* set by the model */
    size_t act_bytes;      /* activations the model allocated, for memory_bytes */
} gt_flat;

/* Appends a parameter (or state) tensor of the given shape (ndim 1..4,
 * dims >= 1) before gt_flat_alloc; returns its index. Programmer errors
 * (too many tensors, bad shape) assert. */
int gt_flat_add(gt_flat *f, const char *name, int decay, int ndim, int64_t d0, int64_t d1,
                int64_t d2, int64_t d3);
int gt_flat_add_state(gt_flat *f, const char *name, int64_t n);
/* Allocates and zeroes every buffer on `be` (borrowed) for storage dtype
 * dt (fp32, bf16, fp16); a backend that cannot store dt refuses here
 * (gt_ops_probe_dtype). */
gt_status gt_flat_alloc(gt_flat *f, gt_backend *be, gt_dtype dt);
/* Frees the buffers; accepts a zeroed store. */
void gt_flat_release(gt_flat *f);

/* Element `n` of a k.dt buffer. */
static inline void *gt_flat_at(const gt_flat *f, const void *base, size_t n) {
    return (char *)base + n * f->es;
}
/* Tensor i's compute weights (k.dt) and gradient (k.dt). */
static inline void *gt_flat_param(gt_flat *f, int i) {
    return gt_flat_at(f, f->wc ? f->wc : (void *)f->params, f->t[i].off);
}
static inline void *gt_flat_grad(gt_flat *f, int i) { return gt_flat_at(f, f->grads, f->t[i].off); }
static inline float *gt_flat_state(gt_flat *f, int i) { return f->state + f->s[i].off; }
/* Tells the hook (when set) that tensors i.. are final. */
gt_status gt_flat_ready(gt_flat *f, int i);
/* "backend 'X' has no OP op: FAMILY cannot run on it" for each empty slot. */
gt_status gt_flat_require(const gt_flat *f, const char *family, const gt_op *ops, int n);
/* Checks a dense batch against the model's capacity and classes, names
 * the first bad label. */
gt_status gt_flat_check_batch(const gt_model *m, const gt_batch *b, int need_targets);
/* Copies a dense batch to the backend: inputs (n x in_per_sample fp32,
 * rounded on the host to k.dt) to in_dev and, when the batch has labels,
 * the labels to targets_dev. */
gt_status gt_flat_upload_batch(gt_flat *f, const gt_batch *b, size_t in_per_sample, void *in_dev,
                               int32_t *targets_dev);
/* The classification head's loss: losses_dev(n) (fp32) = softmax
 * cross-entropy of logits(n, K) (k.dt) against targets_dev, and *mean_loss
 * (when not NULL) their mean, summed in order on the host (host_scratch:
 * n floats). */
gt_status gt_flat_class_loss(gt_flat *f, float *losses_dev, float *host_scratch,
                             const void *logits, const int32_t *targets_dev, int n, int K,
                             float *mean_loss);
/* Copies the losses(n) fp32 from the backend and sums them in order. */
gt_status gt_flat_mean_loss(gt_flat *f, const float *losses_dev, float *host_scratch, int n,
                            float *mean_loss);

/* The generic slots, for mlp and convnet. */
size_t gt_flat_num_params(const gt_model *m);
int gt_flat_num_tensors(const gt_model *m);
const char *gt_flat_tensor_name(const gt_model *m, int i);
size_t gt_flat_tensor_size(const gt_model *m, int i);
int gt_flat_tensor_shape(const gt_model *m, int i, int64_t shape[4]);
gt_status gt_flat_set_params(gt_model *m, const float *src);
gt_status gt_flat_get_params(gt_model *m, float *dst);
gt_status gt_flat_get_grads(gt_model *m, float *dst);
gt_status gt_flat_zero_grad(gt_model *m);
size_t gt_flat_norm_chunk(const gt_model *m);
gt_status gt_flat_grad_norm(gt_model *m, double *out);
gt_status gt_flat_grad_sumsq_chunks(gt_model *m, const void *grads, size_t lo_chunk,
                                    size_t hi_chunk, double *partials);
gt_status gt_flat_update(gt_model *m, const gt_adamw_config *cfg, int t, double *grad_norm,
                         float *lr);
void gt_flat_set_grad_hook(gt_model *m, gt_model_grad_hook hook, void *ctx);
float *gt_flat_params_buffer(gt_model *m);
void *gt_flat_grads_buffer(gt_model *m);
gt_status gt_flat_sync_weights(gt_model *m, size_t lo, size_t hi);
gt_dtype gt_flat_dtype(const gt_model *m);
size_t gt_flat_num_params_padded(const gt_model *m);
gt_status gt_flat_pad(gt_model *m, size_t n_alloc);
gt_status gt_flat_set_opt_range(gt_model *m, size_t lo, size_t hi);
gt_status gt_flat_update_range(gt_model *m, const gt_adamw_config *cfg, int t, float lr,
                               float grad_scale, const void *grads, size_t lo, size_t hi);
gt_status gt_flat_get_opt_state(gt_model *m, size_t lo, size_t hi, float *m_dst,
                                float *v_dst);
gt_status gt_flat_set_opt_state(gt_model *m, size_t lo, size_t hi, const float *m_src,
                                const float *v_src);
int gt_flat_num_state_tensors(const gt_model *m);
const char *gt_flat_state_name(const gt_model *m, int i);
size_t gt_flat_state_size(const gt_model *m, int i);
int gt_flat_state_shape(const gt_model *m, int i, int64_t shape[4]);
gt_status gt_flat_get_state(gt_model *m, float *dst);
gt_status gt_flat_set_state(gt_model *m, const float *src);
float *gt_flat_state_buffer(gt_model *m);
void gt_flat_locate(const gt_model *m, size_t internal, gt_model_loc *out);
void gt_flat_loc_format(const gt_model *m, const gt_model_loc *loc, char *out, size_t n);
gt_status gt_flat_find_nonfinite(gt_model *m, const void *buf, gt_dtype dt, size_t lo,
                                 size_t hi, int *found, gt_model_loc *loc, float *value);
double gt_flat_flops_per_unit(const gt_model *m);
size_t gt_flat_memory_bytes(const gt_model *m);

#define GT_FLAT_VT_SLOTS                                                                       \
    .num_params = gt_flat_num_params, .num_tensors = gt_flat_num_tensors,                      \
    .tensor_name = gt_flat_tensor_name, .tensor_size = gt_flat_tensor_size,                    \
    .tensor_shape = gt_flat_tensor_shape, .set_params = gt_flat_set_params,                    \
    .get_params = gt_flat_get_params, .get_grads = gt_flat_get_grads,                          \
    .zero_grad = gt_flat_zero_grad, .norm_chunk = gt_flat_norm_chunk,                          \
    .grad_norm = gt_flat_grad_norm, .grad_sumsq_chunks = gt_flat_grad_sumsq_chunks,            \
    .update = gt_flat_update, .set_grad_hook = gt_flat_set_grad_hook,                          \
    .params_buffer = gt_flat_params_buffer, .grads_buffer = gt_flat_grads_buffer,              \
    .sync_weights = gt_flat_sync_weights, .dtype = gt_flat_dtype,                              \
    .num_params_padded = gt_flat_num_params_padded, .pad = gt_flat_pad,                        \
    .set_opt_range = gt_flat_set_opt_range, .update_range = gt_flat_update_range,              \
    .get_opt_state = gt_flat_get_opt_state, .set_opt_state = gt_flat_set_opt_state,            \
    .num_state_tensors = gt_flat_num_state_tensors, .state_name = gt_flat_state_name,          \
    .state_size = gt_flat_state_size, .state_shape = gt_flat_state_shape,                      \
    .get_state = gt_flat_get_state, .set_state = gt_flat_set_state,                            \
    .state_buffer = gt_flat_state_buffer, .locate = gt_flat_locate,                            \
    .loc_format = gt_flat_loc_format, .find_nonfinite = gt_flat_find_nonfinite,                \
    .flops_per_unit = gt_flat_flops_per_unit, .memory_bytes = gt_flat_memory_bytes

/* gpt2 behind gt_model_new (models/gpt2/gpt2_model.c): the preset's
 * gt_gpt2 for max_batch sequences of T tokens, wrapped. */
gt_status gt_gpt2_model_new(gt_backend *be, const char *preset, gt_dtype dt, int max_batch,
                            int T, gt_model **out);

#ifdef __cplusplus
}
#endif
#endif
