/* gpt2 behind the generic model interface (models/model.h): the store is
 * gt_gpt2's (gt_gpt2_params); the slots call gt_gpt2's public API (gpt2.h),
 * nothing else. Token batches; throughput counts "tokens"; no state tensors. */
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

static gt_status init_random(gt_model *m, uint64_t seed) {
    return gt_gpt2_init_random(G(m), seed);
}
static gt_status forward(gt_model *m, const gt_batch *b, float *mean_loss) {
    return gt_gpt2_forward(G(m), b->tokens, b->targets, b->n, b->T, mean_loss);
}
static gt_status forward_backward(gt_model *m, const gt_batch *b, float dloss,
                                  float *mean_loss) {
    return gt_gpt2_forward_backward(G(m), b->tokens, b->targets, b->n, b->T, dloss, mean_loss);
}
static gt_status init_from(gt_model *m, const char *source) {
    return gt_gpt2_load_llmc(G(m), source + 5); /* "llmc:" checked by gt_model_init_from */
}
static gt_status save_to(const gt_model *m, const float *full, const char *dest) {
    return gt_gpt2_write_llmc(gt_gpt2_get_config(G(m)), full, dest + 5); /* "llmc:" checked */
}
static double flops_per_unit(const gt_model *m) {
    return gt_gpt2_flops_per_token(G(m), ((gpt2_adapter *)m->impl)->T);
}
static size_t act_bytes(const gt_model *m) { return gt_gpt2_act_bytes(G(m)); }

/* Pipeline stages (model.h): gt_gpt2's, blocks being layers. */
static int st_blocks(const gt_model *m) { return gt_gpt2_get_config(G(m))->num_layers; }
static gt_status st_prepare(gt_model *m, const gt_model_stage *st, int n) {
    return gt_gpt2_set_stage(G(m), st->b0, st->b1, n);
}
static gt_status st_forward(gt_model *m, const gt_model_stage *st, int slot, const gt_batch *b,
                            float dloss, float *mean_loss) {
    return gt_gpt2_stage_forward(G(m), slot, st->b0, st->b1, b->tokens, b->targets, b->n, b->T,
                                 dloss, mean_loss);
}
static gt_status st_backward(gt_model *m, const gt_model_stage *st, int slot) {
    return gt_gpt2_stage_backward(G(m), slot, st->b0, st->b1);
}
static gt_status st_head_grad(gt_model *m, int slot) {
    return gt_gpt2_stage_head_grad(G(m), slot);
}
static void *st_buffer(gt_model *m, const gt_model_stage *st, int slot, gt_model_stage_buf which,
                       size_t *count) {
    static const gt_gpt2_stage_buf map[GT_MODEL_STAGE_BUF_COUNT] = {
        GT_GPT2_STAGE_IN,  GT_GPT2_STAGE_OUT,     GT_GPT2_STAGE_DOUT,
        GT_GPT2_STAGE_DIN, GT_GPT2_STAGE_DLOGITS, GT_GPT2_STAGE_LNF,
    };
    if ((int)which < 0 || which >= GT_MODEL_STAGE_BUF_COUNT) return NULL;
    return gt_gpt2_stage_buffer(G(m), slot, st->b0, st->b1, map[which], count);
}
static void st_range(const gt_model *m, const gt_model_stage *st, size_t *lo, size_t *hi) {
    gt_gpt2_stage_range(G(m), st->b0, st->b1, lo, hi);
}
static void st_tied(const gt_model *m, size_t *lo, size_t *hi) {
    gt_gpt2_tied_range(G(m), lo, hi);
}
static const gt_model_stage_vt g_stages = {
    .num_blocks = st_blocks, .prepare = st_prepare, .forward = st_forward,
    .backward = st_backward, .head_grad = st_head_grad, .buffer = st_buffer,
    .range = st_range,       .tied = st_tied,
};

/* Tensor parallelism (model.h): gt_gpt2's. */
static int tp_size(const gt_model *m) { return gt_gpt2_tp_size(G(m)); }
static size_t tp_full(const gt_model *m) {
    return gt_gpt2_full_params(gt_gpt2_get_config(G(m)));
}
static void tp_gather(const gt_model *m, const float *locals, float *full) {
    gt_gpt2_tp_gather(G(m), locals, full);
}
static gt_status tp_sumsq(gt_model *m, const void *grads, size_t lo, size_t hi, double *out) {
    return gt_gpt2_tp_replicated_sumsq(G(m), grads, lo, hi, out);
}
static void tp_traffic(const gt_model *m, uint64_t *calls, uint64_t *bytes) {
    gt_gpt2_tp_traffic(G(m), calls, bytes);
}
static const gt_model_tp_vt g_tp = {
    .size = tp_size, .full_params = tp_full, .gather = tp_gather,
    .replicated_sumsq = tp_sumsq, .traffic = tp_traffic,
};

static const gt_model_vt g_vt = {
    .destroy = destroy,
    .config_fields = config_fields,
    .config_field_name = config_field_name,
    .init_random = init_random,
    .forward = forward,
    .forward_backward = forward_backward,
    .init_from = init_from,
    .save_to = save_to,
    .flops_per_unit = flops_per_unit,
    .act_bytes = act_bytes,
    .stages = &g_stages,
    .tp = &g_tp,
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
    m->params = gt_gpt2_params(g);
    m->training = 1;
    m->recompute = gt_gpt2_recompute(g);
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

/* Options by name (model.h), in gt_ckpt_model_field's order. */
static const gt_model_option g_options[] = {
    {"max_seq", 1, 1 << 20}, {"vocab", 2, 1 << 24}, {"padded_vocab", 2, 1 << 24},
    {"layers", 1, 1024},     {"heads", 1, 1024},    {"channels", 1, 65536},
};

static void set_option(void *ctx, int key, int v) {
    gt_gpt2_config *c = ctx;
    switch (key) {
    case 0: c->max_seq_len = v; break;
    case 1: /* the padding follows a vocabulary it equalled, or would fall below */
        if (c->padded_vocab_size == c->vocab_size || c->padded_vocab_size < v)
            c->padded_vocab_size = v;
        c->vocab_size = v;
        break;
    case 2: c->padded_vocab_size = v; break;
    case 3: c->num_layers = v; break;
    case 4: c->num_heads = v; break;
    default: c->channels = v; break;
    }
}

gt_status gt_gpt2_model_config(const char *name, const char *options, gt_gpt2_config *out) {
    memset(out, 0, sizeof *out);
    /* "llmc": every field comes from the options (an llm.c file's config) */
    if (!name || strcmp(name, "llmc") != 0) GT_TRY(gt_gpt2_preset(name ? name : "(null)", out));
    GT_TRY(gt_model_options_parse("gpt2", options, g_options,
                                  (int)(sizeof g_options / sizeof g_options[0]), set_option,
                                  out));
    return gt_gpt2_config_check(out);
}

gt_status gt_gpt2_model_new(gt_backend *be, const char *name, const char *options, gt_dtype dt,
                            gt_model_recompute recompute, int max_batch, int T,
                            const gt_model_tp *tp, gt_model **out) {
    *out = NULL;
    gt_gpt2_config cfg;
    GT_TRY(gt_gpt2_model_config(name, options, &cfg));
    gt_gpt2 *g = NULL;
    gt_gpt2_tp gtp = {.size = tp ? tp->size : 1, .rank = tp ? tp->rank : 0,
                      .comm = tp ? tp->comm : NULL};
    GT_TRY(gt_gpt2_new_tp(be, &cfg, dt, recompute, &gtp, max_batch, T, &g));
    return gt_gpt2_model_wrap(g, max_batch, T, name, out);
}
