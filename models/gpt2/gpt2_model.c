/* gpt2 behind the generic model interface (models/model.h): every slot calls
 * gt_gpt2's public API (gpt2.h), nothing else. Token batches; throughput
 * counts "tokens"; no state tensors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/checkpoint.h"
#include "models/gpt2/gpt2.h"
#include "models/gpt2/gpt2_model.h"
#include "models/model_impl.h"

typedef struct gpt2_adapter {
    gt_gpt2 *g;
    int T; /* capacity, for flops per token */
} gpt2_adapter;

#define G(m) (((gpt2_adapter *)(m)->impl)->g)

static void destroy(gt_model *m) {
    gpt2_adapter *a = m->impl;
    if (a) gt_gpt2_free(a->g);
    free(a);
    free(m);
}

static void config_fields(const gt_model *m, int32_t out[GT_MODEL_CONFIG_FIELDS]) {
    const gt_gpt2_config *c = gt_gpt2_get_config(G(m));
    int32_t f[6] = {c->max_seq_len, c->vocab_size, c->padded_vocab_size,
                    c->num_layers,  c->num_heads,  c->channels};
    memcpy(out, f, sizeof f);
}
static const char *config_field_name(const gt_model *m, int i) {
    (void)m;
    return gt_ckpt_model_field(i);
}

static size_t num_params(const gt_model *m) { return gt_gpt2_num_params(G(m)); }
static int num_tensors(const gt_model *m) {
    (void)m;
    return GT_GPT2_NUM_TENSORS;
}
static const char *tensor_name(const gt_model *m, int i) {
    (void)m;
    return gt_gpt2_tensor_name(i);
}
static size_t tensor_size(const gt_model *m, int i) { return gt_gpt2_tensor_size(G(m), i); }
static int tensor_shape(const gt_model *m, int i, int64_t shape[4]) {
    return gt_gpt2_tensor_shape(G(m), i, shape);
}
static gt_status init_random(gt_model *m, uint64_t seed) {
    return gt_gpt2_init_random(G(m), seed);
}
static gt_status set_params(gt_model *m, const float *src) { return gt_gpt2_set_params(G(m), src); }
static gt_status get_params(gt_model *m, float *dst) { return gt_gpt2_get_params(G(m), dst); }
static gt_status get_grads(gt_model *m, float *dst) { return gt_gpt2_get_grads(G(m), dst); }
static gt_status forward(gt_model *m, const gt_batch *b, float *mean_loss) {
    return gt_gpt2_forward(G(m), b->tokens, b->targets, b->n, b->T, mean_loss);
}
static gt_status forward_backward(gt_model *m, const gt_batch *b, float dloss,
                                  float *mean_loss) {
    return gt_gpt2_forward_backward(G(m), b->tokens, b->targets, b->n, b->T, dloss, mean_loss);
}
static gt_status zero_grad(gt_model *m) { return gt_gpt2_zero_grad(G(m)); }
static size_t norm_chunk(const gt_model *m) { return gt_gpt2_norm_chunk(G(m)); }
static gt_status grad_norm(gt_model *m, double *out) { return gt_gpt2_grad_norm(G(m), out); }
static gt_status grad_sumsq_chunks(gt_model *m, const void *grads, size_t lo, size_t hi,
                                   double *partials) {
    return gt_gpt2_grad_sumsq_chunks(G(m), grads, lo, hi, partials);
}
static gt_status update(gt_model *m, const gt_adamw_config *cfg, int t, double *norm,
                        float *lr) {
    return gt_gpt2_update(G(m), cfg, t, norm, lr);
}
static void set_grad_hook(gt_model *m, gt_model_grad_hook hook, void *ctx) {
    gt_gpt2_set_grad_hook(G(m), hook, ctx);
}
static float *params_buffer(gt_model *m) { return gt_gpt2_params_buffer(G(m)); }
static void *grads_buffer(gt_model *m) { return gt_gpt2_grads_buffer(G(m)); }
static gt_status sync_weights(gt_model *m, size_t lo, size_t hi) {
    return gt_gpt2_sync_weights(G(m), lo, hi);
}
static gt_dtype dtype(const gt_model *m) { return gt_gpt2_dtype(G(m)); }
static size_t num_params_padded(const gt_model *m) { return gt_gpt2_num_params_padded(G(m)); }
static gt_status pad(gt_model *m, size_t n) { return gt_gpt2_pad(G(m), n); }
static gt_status set_opt_range(gt_model *m, size_t lo, size_t hi) {
    return gt_gpt2_set_opt_range(G(m), lo, hi);
}
static gt_status update_range(gt_model *m, const gt_adamw_config *cfg, int t, float lr,
                              float scale, const void *grads, size_t lo, size_t hi) {
    return gt_gpt2_update_range(G(m), cfg, t, lr, scale, grads, lo, hi);
}
static gt_status get_opt_state(gt_model *m, size_t lo, size_t hi, float *md, float *vd) {
    return gt_gpt2_get_opt_state(G(m), lo, hi, md, vd);
}
static gt_status set_opt_state(gt_model *m, size_t lo, size_t hi, const float *ms,
                               const float *vs) {
    return gt_gpt2_set_opt_state(G(m), lo, hi, ms, vs);
}

static void from_gpt2(const gt_gpt2_loc *g, gt_model_loc *out) {
    out->tensor = g->tensor;
    out->layer = g->layer;
    out->element = g->element;
    out->flat = g->flat;
    out->internal = g->internal;
}
static void to_gpt2(const gt_model_loc *l, gt_gpt2_loc *out) {
    out->tensor = l->tensor;
    out->layer = l->layer;
    out->element = l->element;
    out->flat = l->flat;
    out->internal = l->internal;
}
static void locate(const gt_model *m, size_t x, gt_model_loc *out) {
    gt_gpt2_loc g;
    gt_gpt2_locate(G(m), x, &g);
    from_gpt2(&g, out);
}
static void loc_format(const gt_model *m, const gt_model_loc *loc, char *out, size_t n) {
    (void)m;
    gt_gpt2_loc g;
    to_gpt2(loc, &g);
    gt_gpt2_loc_format(&g, out, n);
}
static gt_status find_nonfinite(gt_model *m, const void *buf, gt_dtype dt, size_t lo, size_t hi,
                                int *found, gt_model_loc *loc, float *value) {
    gt_gpt2_loc g;
    memset(&g, 0, sizeof g);
    gt_status s = gt_gpt2_find_nonfinite(G(m), buf, dt, lo, hi, found, &g, value);
    if (s == GT_OK && *found) from_gpt2(&g, loc);
    return s;
}
static double flops_per_unit(const gt_model *m) {
    return gt_gpt2_flops_per_token(G(m), ((gpt2_adapter *)m->impl)->T);
}
static size_t memory_bytes(const gt_model *m) { return gt_gpt2_memory_bytes(G(m)); }

static const gt_model_vt g_vt = {
    .destroy = destroy,
    .config_fields = config_fields,
    .config_field_name = config_field_name,
    .num_params = num_params,
    .num_tensors = num_tensors,
    .tensor_name = tensor_name,
    .tensor_size = tensor_size,
    .tensor_shape = tensor_shape,
    .init_random = init_random,
    .set_params = set_params,
    .get_params = get_params,
    .get_grads = get_grads,
    .forward = forward,
    .forward_backward = forward_backward,
    .zero_grad = zero_grad,
    .norm_chunk = norm_chunk,
    .grad_norm = grad_norm,
    .grad_sumsq_chunks = grad_sumsq_chunks,
    .update = update,
    .set_grad_hook = set_grad_hook,
    .params_buffer = params_buffer,
    .grads_buffer = grads_buffer,
    .sync_weights = sync_weights,
    .dtype = dtype,
    .num_params_padded = num_params_padded,
    .pad = pad,
    .set_opt_range = set_opt_range,
    .update_range = update_range,
    .get_opt_state = get_opt_state,
    .set_opt_state = set_opt_state,
    /* no state tensors: the state slots stay NULL */
    .locate = locate,
    .loc_format = loc_format,
    .find_nonfinite = find_nonfinite,
    .flops_per_unit = flops_per_unit,
    .memory_bytes = memory_bytes,
};

gt_status gt_gpt2_model_wrap(gt_gpt2 *g, int B, int T, const char *name, gt_model **out) {
    *out = NULL;
    gt_model *m = calloc(1, sizeof *m);
    gpt2_adapter *a = calloc(1, sizeof *a);
    if (!m || !a) {
        free(m);
        free(a);
        gt_gpt2_free(g);
        return GT_ERR(GT_ERR_OOM, "out of host memory for the model struct");
    }
    a->g = g;
    a->T = T;
    m->vt = &g_vt;
    m->impl = a;
    m->training = 1;
    const gt_gpt2_config *cfg = gt_gpt2_get_config(g);
    gt_model_info *in = &m->info;
    snprintf(in->name, sizeof in->name, "%s", name ? name : "gpt2");
    in->family = "gpt2";
    in->input = GT_MODEL_INPUT_TOKENS;
    in->unit = "tokens";
    in->units_per_sample = T;
    in->sample_numel = 0;
    in->classes = cfg->vocab_size;
    in->max_batch = B;
    in->max_T = T;
    *out = m;
    return GT_OK;
}

gt_status gt_gpt2_model_new(gt_backend *be, const char *preset, gt_dtype dt, int max_batch,
                            int T, gt_model **out) {
    *out = NULL;
    gt_gpt2_config cfg;
    GT_TRY(gt_gpt2_preset(preset, &cfg));
    gt_gpt2 *g = NULL;
    GT_TRY(gt_gpt2_new_dt(be, &cfg, dt, max_batch, T, &g));
    return gt_gpt2_model_wrap(g, max_batch, T, preset, out);
}
