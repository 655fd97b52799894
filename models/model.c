/* The generic model: the preset registry, dispatch to what a model varies
 * in, every store job once over m->params (engine/params.h), and the dense
 * models' helpers (model_impl.h). */
#include "models/model.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/convnet/convnet.h"
#include "models/gpt2/gpt2.h"
#include "models/mlp/mlp.h"
#include "models/model_impl.h"

size_t gt_batch_predictions(const gt_batch *b) { return (size_t)b->n * (size_t)b->T; }

/* ---- registry ----------------------------------------------------------------- */

/* Every family's presets; each family's own preset function holds the
 * configurations (models.model_iface.cpu builds every name listed here). */
static const struct {
    const char *name, *family;
} g_presets[] = {
    {"gpt2-tiny", "gpt2"},       {"gpt2-3m", "gpt2"},          {"gpt2-124m", "gpt2"},
    {"mlp-tiny", "mlp"},         {"mlp-tiny-relu", "mlp"},     {"mlp-small", "mlp"},
    {"convnet-tiny", "convnet"}, {"resnet-small", "convnet"},
};

const char *gt_model_preset_names(void) {
    return "gpt2-tiny, gpt2-3m, gpt2-124m, mlp-tiny, mlp-tiny-relu, mlp-small, "
           "convnet-tiny, resnet-small";
}

/* Old names of presets that were renamed, kept working (model.h). The same
 * rename of result names in reports written before is reports/read.c's. */
static const struct {
    const char *old_name, *new_name;
} g_renamed[] = {
    /* 3.3M parameters (L4 C256): ML users read "gpt2-small" as GPT-2 small, 124M */
    {"gpt2-small", "gpt2-3m"},
};

const char *gt_model_preset_renamed(const char *name) {
    for (size_t i = 0; name && i < sizeof g_renamed / sizeof g_renamed[0]; i++)
        if (strcmp(name, g_renamed[i].old_name) == 0) return g_renamed[i].new_name;
    return NULL;
}

const char *gt_model_family_of(const char *name) {
    if (gt_model_preset_renamed(name)) name = gt_model_preset_renamed(name);
    for (size_t i = 0; name && i < sizeof g_presets / sizeof g_presets[0]; i++)
        if (strcmp(name, g_presets[i].name) == 0) return g_presets[i].family;
    return NULL;
}

gt_status gt_model_new(gt_backend *be, const char *name, int max_batch, int T,
                       gt_model **out) {
    return gt_model_new_dt(be, name, GT_DTYPE_FP32, max_batch, T, out);
}

gt_status gt_model_new_dt(gt_backend *be, const char *name, gt_dtype dt, int max_batch, int T,
                          gt_model **out) {
    return gt_model_new_opts(be, name, NULL, dt, GT_MODEL_RECOMPUTE_NONE, max_batch, T, out);
}

/* ---- activation recomputation ----------------------------------------------------- */

static const char *const g_recompute_names[GT_MODEL_RECOMPUTE_COUNT] = {"none", "block"};

const char *gt_model_recompute_name(gt_model_recompute r) {
    return (int)r >= 0 && r < GT_MODEL_RECOMPUTE_COUNT ? g_recompute_names[r] : "?";
}

gt_status gt_model_recompute_parse(const char *s, gt_model_recompute *out) {
    for (int i = 0; s && i < GT_MODEL_RECOMPUTE_COUNT; i++)
        if (strcmp(s, g_recompute_names[i]) == 0) {
            *out = (gt_model_recompute)i;
            return GT_OK;
        }
    return GT_ERR(GT_ERR_INVALID, "recompute mode '%s': use none (keep every activation) or "
                                  "block (keep each block's input, recompute the block in the "
                                  "backward)",
                  s ? s : "(null)");
}

/* ---- options by name ------------------------------------------------------------ */

gt_status gt_model_options_parse(const char *family, const char *options,
                                 const gt_model_option *keys, int n,
                                 void (*set)(void *ctx, int key, int value), void *ctx) {
    const char *p = options ? options : "";
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char pair[96];
        snprintf(pair, sizeof pair, "%.*s", (int)(len < sizeof pair ? len : sizeof pair - 1), p);
        char *eq = strchr(pair, '=');
        int k = -1;
        if (eq) {
            *eq = 0;
            for (int i = 0; i < n; i++)
                if (strcmp(pair, keys[i].key) == 0) k = i;
        }
        if (k < 0) {
            char valid[256] = "";
            for (int i = 0; i < n; i++)
                snprintf(valid + strlen(valid), sizeof valid - strlen(valid), "%s%s",
                         i ? ", " : "", keys[i].key);
            if (eq) *eq = '=';
            return GT_ERR(GT_ERR_INVALID, "%s: unknown model option '%s': the options are %s",
                          family, pair, n ? valid : "none");
        }
        char *tail = NULL;
        long v = strtol(eq + 1, &tail, 10);
        if (!eq[1] || *tail || v < keys[k].lo || v > keys[k].hi)
            return GT_ERR(GT_ERR_INVALID, "%s: model option %s = '%s' is not an integer in "
                                          "[%d, %d]",
                          family, keys[k].key, eq + 1, keys[k].lo, keys[k].hi);
        set(ctx, k, (int)v);
        p += len;
        if (*p == ',') p++;
    }
    return GT_OK;
}

gt_status gt_model_option_add(char *options, const char *key, long long value) {
    size_t used = strlen(options);
    int n = snprintf(options + used, GT_MODEL_OPTIONS_LEN - used, "%s%s=%lld", used ? "," : "",
                     key, value);
    if (n < 0 || (size_t)n >= GT_MODEL_OPTIONS_LEN - used) {
        options[used] = 0;
        return GT_ERR(GT_ERR_INVALID, "too many model options: %s=%lld does not fit after '%s'",
                      key, value, options);
    }
    return GT_OK;
}

/* The families without options refuse any. */
static void no_option(void *ctx, int key, int value) {
    (void)ctx, (void)key, (void)value;
}

gt_status gt_model_arch_of(const char *name, const char *options, gt_model_arch *out) {
    memset(out, 0, sizeof *out);
    if (gt_model_preset_renamed(name)) name = gt_model_preset_renamed(name);
    const char *fam = name && strcmp(name, "llmc") == 0 ? "gpt2" : gt_model_family_of(name);
    if (!fam)
        return GT_ERR(GT_ERR_INVALID, "unknown model '%s': the presets are %s",
                      name ? name : "(null)", gt_model_preset_names());
    out->family = fam;
    int32_t *f = out->fields;
    if (strcmp(fam, "gpt2") == 0) {
        gt_gpt2_config c; /* filled as far as it got, for messages */
        gt_status st = gt_gpt2_model_config(name, options, &c);
        int32_t g[6] = {c.max_seq_len, c.vocab_size, c.padded_vocab_size,
                        c.num_layers,  c.num_heads,  c.channels};
        memcpy(f, g, sizeof g);
        out->classes = c.vocab_size;
        out->max_T = c.max_seq_len;
        return st;
    }
    GT_TRY(gt_model_options_parse(fam, options, NULL, 0, no_option, NULL));
    out->max_T = 1;
    if (strcmp(fam, "mlp") == 0) {
        gt_mlp_config c;
        GT_TRY(gt_mlp_preset(name, &c));
        int32_t g[5] = {c.in_dim, c.classes, c.depth, c.width, (int32_t)c.act};
        memcpy(f, g, sizeof g);
        out->classes = c.classes;
        return GT_OK;
    }
    gt_convnet_config c;
    GT_TRY(gt_convnet_preset(name, &c));
    int32_t g[6] = {c.channels, c.height, c.width, c.classes, c.stem, c.nblocks};
    memcpy(f, g, sizeof g);
    out->classes = c.classes;
    return GT_OK;
}

gt_status gt_model_describe_file(const char *source, char *name, char *options) {
    name[0] = options[0] = 0;
    if (!source || strncmp(source, "llmc:", 5) != 0)
        return GT_ERR(GT_ERR_INVALID, "'%s': expected llmc:FILE (an llm.c model file)",
                      source ? source : "(null)");
    gt_gpt2_config c;
    GT_TRY(gt_gpt2_read_llmc_config(source + 5, &c));
    snprintf(name, 64, "llmc");
    GT_TRY(gt_model_option_add(options, "max_seq", c.max_seq_len));
    GT_TRY(gt_model_option_add(options, "vocab", c.vocab_size));
    GT_TRY(gt_model_option_add(options, "padded_vocab", c.padded_vocab_size));
    GT_TRY(gt_model_option_add(options, "layers", c.num_layers));
    GT_TRY(gt_model_option_add(options, "heads", c.num_heads));
    return gt_model_option_add(options, "channels", c.channels);
}

gt_status gt_model_new_opts(gt_backend *be, const char *name, const char *options, gt_dtype dt,
                            gt_model_recompute recompute, int max_batch, int T,
                            gt_model **out) {
    *out = NULL;
    /* an old name builds the renamed preset and carries its new name */
    if (gt_model_preset_renamed(name)) name = gt_model_preset_renamed(name);
    gt_model_arch arch;
    GT_TRY(gt_model_arch_of(name, options, &arch));
    if ((int)recompute < 0 || recompute >= GT_MODEL_RECOMPUTE_COUNT)
        return GT_ERR(GT_ERR_INVALID, "recompute mode %d: expected none or block",
                      (int)recompute);
    if (strcmp(arch.family, "gpt2") == 0)
        return gt_gpt2_model_new(be, name, options, dt, recompute, max_batch, T, NULL, out);
    if (strcmp(arch.family, "mlp") == 0) {
        gt_mlp_config c;
        GT_TRY(gt_mlp_preset(name, &c));
        return gt_mlp_new(be, &c, dt, recompute, name, max_batch, out);
    }
    gt_convnet_config c;
    GT_TRY(gt_convnet_preset(name, &c));
    return gt_convnet_new(be, &c, dt, recompute, name, max_batch, out);
}

gt_status gt_model_save_to(const gt_model *m, const float *full, const char *dest) {
    if (!dest || strncmp(dest, "llmc:", 5) != 0)
        return GT_ERR(GT_ERR_INVALID, "--save-final '%s': expected llmc:FILE (an llm.c model "
                                      "file)",
                      dest ? dest : "(null)");
    if (!m->vt->save_to)
        return GT_ERR(GT_ERR_INVALID, "--save-final %s: llm.c model files hold gpt2, not %s",
                      dest, m->info.family);
    return m->vt->save_to(m, full, dest);
}

gt_status gt_model_init_from(gt_model *m, const char *source) {
    if (!source || strncmp(source, "llmc:", 5) != 0)
        return GT_ERR(GT_ERR_INVALID, "--init-from '%s': expected llmc:FILE (an llm.c model file)",
                      source ? source : "(null)");
    if (!m->vt->init_from)
        return GT_ERR(GT_ERR_INVALID, "%s reads no model files: --init-from is for gpt2",
                      m->info.name);
    return m->vt->init_from(m, source);
}

void gt_model_free(gt_model *m) {
    if (!m) return;
    m->vt->destroy(m);
}

const gt_model_info *gt_model_get_info(const gt_model *m) { return &m->info; }

void gt_model_config_fields(const gt_model *m, int32_t out[GT_MODEL_CONFIG_FIELDS]) {
    memset(out, 0, GT_MODEL_CONFIG_FIELDS * sizeof *out);
    m->vt->config_fields(m, out);
}
const char *gt_model_config_field_name(const gt_model *m, int i) {
    if (i < 0 || i >= GT_MODEL_CONFIG_FIELDS) return "?";
    return m->vt->config_field_name(m, i);
}

gt_status gt_model_task(const gt_model *m, uint64_t seed, gt_task_config *out) {
    memset(out, 0, sizeof *out);
    if (m->info.input != GT_MODEL_INPUT_DENSE)
        return GT_ERR(GT_ERR_INVALID, "%s reads tokens: its data is a token stream, not a "
                                      "synthetic classification task",
                      m->info.name);
    int32_t f[GT_MODEL_CONFIG_FIELDS];
    gt_model_config_fields(m, f);
    out->classes = m->info.classes;
    out->label_noise = GT_MODEL_LABEL_NOISE;
    out->seed = seed;
    if (strcmp(m->info.family, "mlp") == 0) {
        out->kind = GT_TASK_TEACHER;
        out->dim = f[0];
        out->teacher_hidden = GT_MODEL_TEACHER_HIDDEN;
        out->margin = GT_MODEL_TEACHER_MARGIN;
    } else {
        out->kind = GT_TASK_TEMPLATES;
        out->channels = f[0];
        out->height = f[1];
        out->width = f[2];
        out->tsize = f[1] >= 32 && f[2] >= 32 ? 5 : 3;
        int side = f[1] < f[2] ? f[1] : f[2];
        if (out->tsize > side) out->tsize = side;
    }
    return GT_OK;
}

/* ---- dispatch ------------------------------------------------------------------- */

#define P(m) ((m)->params)

gt_dtype gt_model_dtype(const gt_model *m) { return P(m)->k.dt; }
size_t gt_model_num_params(const gt_model *m) { return P(m)->num_params; }
int gt_model_num_tensors(const gt_model *m) { return P(m)->nt; }
const char *gt_model_tensor_name(const gt_model *m, int i) {
    return i >= 0 && i < P(m)->nt ? P(m)->t[i].name : "?";
}
size_t gt_model_tensor_size(const gt_model *m, int i) {
    return i >= 0 && i < P(m)->nt ? P(m)->t[i].n : 0;
}
int gt_model_tensor_shape(const gt_model *m, int i, int64_t shape[4]) {
    memset(shape, 0, 4 * sizeof *shape);
    if (i < 0 || i >= P(m)->nt) return 0;
    memcpy(shape, P(m)->t[i].shape, 4 * sizeof *shape);
    return P(m)->t[i].ndim;
}
gt_status gt_model_init_random(gt_model *m, uint64_t seed) { return m->vt->init_random(m, seed); }
gt_status gt_model_set_params(gt_model *m, const float *src) { return gt_params_set(P(m), src); }
gt_status gt_model_get_params(gt_model *m, float *dst) { return gt_params_get(P(m), dst); }
gt_status gt_model_get_grads(gt_model *m, float *dst) { return gt_params_get_grads(P(m), dst); }

static gt_status check_batch_kind(const gt_model *m, const gt_batch *b) {
    if (!b || b->n < 1 || b->T < 1)
        return GT_ERR(GT_ERR_INVALID, "%s: a batch needs n >= 1 samples and T >= 1 (got n=%d "
                                      "T=%d)",
                      m->info.name, b ? b->n : 0, b ? b->T : 0);
    if (m->info.input == GT_MODEL_INPUT_TOKENS && (!b->tokens || b->inputs))
        return GT_ERR(GT_ERR_INVALID, "%s reads token ids: fill gt_batch.tokens, not .inputs",
                      m->info.name);
    if (m->info.input == GT_MODEL_INPUT_DENSE && (!b->inputs || b->tokens || b->T != 1))
        return GT_ERR(GT_ERR_INVALID, "%s reads fp32 inputs with one label per sample: fill "
                                      "gt_batch.inputs, leave .tokens NULL and T = 1",
                      m->info.name);
    return GT_OK;
}

gt_status gt_model_forward(gt_model *m, const gt_batch *b, float *mean_loss) {
    GT_TRY(check_batch_kind(m, b));
    return m->vt->forward(m, b, mean_loss);
}
gt_status gt_model_forward_backward(gt_model *m, const gt_batch *b, float dloss,
                                    float *mean_loss) {
    GT_TRY(check_batch_kind(m, b));
    if (!b->targets) return GT_ERR(GT_ERR_INVALID, "forward_backward needs targets");
    return m->vt->forward_backward(m, b, dloss, mean_loss);
}
gt_status gt_model_zero_grad(gt_model *m) { return gt_params_zero_grad(P(m)); }
void gt_model_set_training(gt_model *m, int training) { m->training = training ? 1 : 0; }
int gt_model_training(const gt_model *m) { return m->training; }

size_t gt_model_norm_chunk(const gt_model *m) { return P(m)->norm_chunk; }
gt_status gt_model_grad_norm(gt_model *m, double *out) { return gt_params_grad_norm(P(m), out); }
gt_status gt_model_grad_sumsq_chunks(gt_model *m, const void *grads, size_t lo_chunk,
                                     size_t hi_chunk, double *partials) {
    return gt_params_grad_sumsq_chunks(P(m), grads, lo_chunk, hi_chunk, partials);
}
gt_status gt_model_update(gt_model *m, const gt_adamw_config *cfg, int t, double *grad_norm,
                          float *lr) {
    return gt_params_update(P(m), cfg, t, grad_norm, lr);
}
void gt_model_set_grad_hook(gt_model *m, gt_model_grad_hook hook, void *ctx) {
    gt_params_set_hook(P(m), hook, ctx);
}
void gt_model_set_unit_hook(gt_model *m, gt_params_unit_hook hook, void *ctx) {
    gt_params_set_unit_hook(P(m), hook, ctx);
}
int gt_model_num_units(const gt_model *m) { return gt_params_num_units(P(m)); }
void gt_model_unit_range(const gt_model *m, int u, size_t *lo, size_t *hi) {
    gt_params_unit_range(P(m), u, lo, hi);
}
float *gt_model_params_buffer(gt_model *m) { return P(m)->params; }
void *gt_model_grads_buffer(gt_model *m) { return P(m)->grads; }
gt_status gt_model_sync_weights(gt_model *m, size_t lo, size_t hi) {
    return gt_params_sync_weights(P(m), lo, hi);
}
size_t gt_model_num_params_padded(const gt_model *m) { return P(m)->num_alloc; }
gt_status gt_model_pad(gt_model *m, size_t n_alloc) { return gt_params_pad(P(m), n_alloc); }
gt_status gt_model_set_opt_range(gt_model *m, size_t lo, size_t hi) {
    return gt_params_set_opt_range(P(m), lo, hi);
}
gt_status gt_model_update_range(gt_model *m, const gt_adamw_config *cfg, int t, float lr,
                                float grad_scale, const void *grads, size_t lo, size_t hi) {
    return gt_params_update_range(P(m), cfg, t, lr, grad_scale, grads, lo, hi);
}
gt_status gt_model_get_opt_state(gt_model *m, size_t lo, size_t hi, float *m_dst,
                                 float *v_dst) {
    return gt_params_get_opt_state(P(m), lo, hi, m_dst, v_dst);
}
gt_status gt_model_set_opt_state(gt_model *m, size_t lo, size_t hi, const float *m_src,
                                 const float *v_src) {
    return gt_params_set_opt_state(P(m), lo, hi, m_src, v_src);
}

int gt_model_num_state_tensors(const gt_model *m) { return P(m)->ns; }
const char *gt_model_state_name(const gt_model *m, int i) {
    return i >= 0 && i < P(m)->ns ? P(m)->s[i].name : "?";
}
size_t gt_model_state_size(const gt_model *m, int i) {
    return i >= 0 && i < P(m)->ns ? P(m)->s[i].n : 0;
}
int gt_model_state_shape(const gt_model *m, int i, int64_t shape[4]) {
    memset(shape, 0, 4 * sizeof *shape);
    if (i < 0 || i >= P(m)->ns) return 0;
    memcpy(shape, P(m)->s[i].shape, 4 * sizeof *shape);
    return 1;
}
size_t gt_model_state_numel(const gt_model *m) { return P(m)->state_numel; }
gt_status gt_model_get_state(gt_model *m, float *dst) { return gt_params_get_state(P(m), dst); }
gt_status gt_model_set_state(gt_model *m, const float *src) {
    return gt_params_set_state(P(m), src);
}
float *gt_model_state_buffer(gt_model *m) { return P(m)->state; }

void gt_model_locate(const gt_model *m, size_t internal, gt_model_loc *out) {
    gt_params_locate(P(m), internal, out);
}
void gt_model_loc_format(const gt_model *m, const gt_model_loc *loc, char *out, size_t n) {
    gt_params_loc_format(P(m), loc, out, n);
}
gt_status gt_model_find_nonfinite(gt_model *m, const void *buf, gt_dtype dt, size_t lo,
                                  size_t hi, int *found, gt_model_loc *loc, float *value) {
    return gt_params_find_nonfinite(P(m), buf, dt, lo, hi, found, loc, value);
}
double gt_model_flops_per_unit(const gt_model *m) { return m->vt->flops_per_unit(m); }
size_t gt_model_memory_bytes(const gt_model *m) {
    return gt_params_bytes(P(m)) + m->vt->act_bytes(m);
}
size_t gt_model_act_bytes(const gt_model *m) { return m->vt->act_bytes(m); }
gt_model_recompute gt_model_get_recompute(const gt_model *m) { return m->recompute; }

/* ---- pipeline stages ---------------------------------------------------------------- */

static gt_status no_stages(const gt_model *m) {
    return GT_ERR(GT_ERR_UNSUPPORTED, "%s has no pipeline stages (only gpt2 does): use pp=1",
                  m->info.family);
}

gt_status gt_model_new_tp(gt_backend *be, const char *name, const char *options, gt_dtype dt,
                          gt_model_recompute recompute, int max_batch, int T,
                          const gt_model_tp *tp, gt_model **out) {
    *out = NULL;
    if (!tp || tp->size <= 1)
        return gt_model_new_opts(be, name, options, dt, recompute, max_batch, T, out);
    if (gt_model_preset_renamed(name)) name = gt_model_preset_renamed(name);
    gt_model_arch arch;
    GT_TRY(gt_model_arch_of(name, options, &arch));
    if (strcmp(arch.family, "gpt2") != 0)
        return GT_ERR(GT_ERR_UNSUPPORTED,
                      "tensor parallelism (tp=%d) splits gpt2's layers; %s has no "
                      "tensor-parallel layers: use tp=1",
                      tp->size, name);
    return gt_gpt2_model_new(be, name, options, dt, recompute, max_batch, T, tp, out);
}

int gt_model_tp_size(const gt_model *m) { return m->vt->tp ? m->vt->tp->size(m) : 1; }
size_t gt_model_tp_full_params(const gt_model *m) {
    return m->vt->tp ? m->vt->tp->full_params(m) : gt_model_num_params(m);
}
gt_status gt_model_tp_gather(const gt_model *m, const float *locals, float *full) {
    if (!m->vt->tp) {
        memcpy(full, locals, gt_model_num_params(m) * sizeof(float));
        return GT_OK;
    }
    m->vt->tp->gather(m, locals, full);
    return GT_OK;
}
gt_status gt_model_tp_replicated_sumsq(gt_model *m, const void *grads, size_t lo, size_t hi,
                                       double *out) {
    *out = 0.0;
    return m->vt->tp ? m->vt->tp->replicated_sumsq(m, grads, lo, hi, out) : GT_OK;
}
void gt_model_tp_traffic(const gt_model *m, uint64_t *calls, uint64_t *bytes) {
    *calls = *bytes = 0;
    if (m->vt->tp) m->vt->tp->traffic(m, calls, bytes);
}

int gt_model_num_blocks(const gt_model *m) {
    return m->vt->stages ? m->vt->stages->num_blocks(m) : 0;
}
gt_status gt_model_stage_prepare(gt_model *m, const gt_model_stage *st, int n) {
    return m->vt->stages ? m->vt->stages->prepare(m, st, n) : no_stages(m);
}
gt_status gt_model_stage_forward(gt_model *m, const gt_model_stage *st, int slot,
                                 const gt_batch *b, float dloss, float *mean_loss) {
    if (!m->vt->stages) return no_stages(m);
    GT_TRY(check_batch_kind(m, b));
    return m->vt->stages->forward(m, st, slot, b, dloss, mean_loss);
}
gt_status gt_model_stage_backward(gt_model *m, const gt_model_stage *st, int slot) {
    return m->vt->stages ? m->vt->stages->backward(m, st, slot) : no_stages(m);
}
gt_status gt_model_stage_head_grad(gt_model *m, int slot) {
    return m->vt->stages ? m->vt->stages->head_grad(m, slot) : no_stages(m);
}
void *gt_model_stage_buffer(gt_model *m, const gt_model_stage *st, int slot,
                            gt_model_stage_buf which, size_t *count) {
    *count = 0;
    return m->vt->stages ? m->vt->stages->buffer(m, st, slot, which, count) : NULL;
}
void gt_model_stage_range(const gt_model *m, const gt_model_stage *st, size_t *lo, size_t *hi) {
    *lo = *hi = 0;
    if (m->vt->stages) m->vt->stages->range(m, st, lo, hi);
}
void gt_model_tied_range(const gt_model *m, size_t *lo, size_t *hi) {
    *lo = *hi = 0;
    if (m->vt->stages) m->vt->stages->tied(m, lo, hi);
}

/* ---- dense models' helpers ---------------------------------------------------------- */

gt_status gt_dense_require(const gt_params *p, const char *family, const gt_op *ops, int n) {
    for (int i = 0; i < n; i++)
        if (!gt_ops_slot(p->be->ops, ops[i]))
            return GT_ERR(GT_ERR_UNSUPPORTED, "backend '%s' has no %s op: %s cannot run on it",
                          p->be->name, gt_op_name(ops[i]), family);
    return GT_OK;
}

gt_status gt_dense_check_batch(const gt_model *m, const gt_batch *b, int need_targets) {
    if (b->n > m->info.max_batch)
        return GT_ERR(GT_ERR_INVALID,
                      "%s: a batch of %d samples, but the model was created for at most %d",
                      m->info.name, b->n, m->info.max_batch);
    if (need_targets && !b->targets)
        return GT_ERR(GT_ERR_INVALID, "%s: the batch has no labels", m->info.name);
    if (b->targets)
        for (int i = 0; i < b->n; i++)
            if (b->targets[i] < 0 || b->targets[i] >= m->info.classes)
                return GT_ERR(GT_ERR_INVALID,
                              "%s: label %d of sample %d is outside [0, %d): the data does "
                              "not match the model's number of classes",
                              m->info.name, (int)b->targets[i], i, m->info.classes);
    return GT_OK;
}

gt_status gt_dense_upload_batch(gt_params *p, gt_dense_stage *st, const gt_batch *b,
                                size_t in_per_sample, void *in_dev, int32_t *targets_dev) {
    size_t n = (size_t)b->n * in_per_sample;
    const void *src = b->inputs;
    if (p->k.dt != GT_DTYPE_FP32) { /* rounded on the host, once per element */
        if (st->bytes < n * p->es) {
            void *nb = realloc(st->buf, n * p->es);
            if (!nb)
                return GT_ERR(GT_ERR_OOM, "out of host memory staging %zu inputs in %s", n,
                              gt_dtype_name(p->k.dt));
            st->buf = nb;
            st->bytes = n * p->es;
        }
        gt_convert(st->buf, p->k.dt, b->inputs, GT_DTYPE_FP32, n);
        src = st->buf;
    }
    GT_TRY(p->be->copy_to_device(p->be, in_dev, src, n * p->es));
    if (b->targets)
        GT_TRY(p->be->copy_to_device(p->be, targets_dev, b->targets,
                                     (size_t)b->n * sizeof(int32_t)));
    return GT_OK;
}

void gt_dense_stage_free(gt_dense_stage *st) {
    free(st->buf);
    st->buf = NULL;
    st->bytes = 0;
}

gt_status gt_dense_class_loss(gt_params *p, float *losses_dev, float *host_scratch,
                              const void *logits, const int32_t *targets_dev, int n, int K,
                              float *mean_loss) {
    GT_TRY(p->be->ops->classifier_fwd(&p->k, losses_dev, logits, targets_dev, n, K, K));
    return mean_loss ? gt_dense_mean_loss(p, losses_dev, host_scratch, n, mean_loss) : GT_OK;
}

gt_status gt_dense_mean_loss(gt_params *p, const float *losses_dev, float *host, int n,
                             float *mean_loss) {
    GT_TRY(p->be->copy_to_host(p->be, host, losses_dev, (size_t)n * sizeof(float)));
    double sum = 0.0; /* fixed order: the host sums */
    for (int i = 0; i < n; i++) sum += host[i];
    *mean_loss = (float)(sum / n);
    return GT_OK;
}
