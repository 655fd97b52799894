/* The generic model: dispatch, the preset registry, and gt_flat, the
 * parameter store of mlp and convnet (model.h, model_impl.h). */
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
    {"gpt2-tiny", "gpt2"},       {"gpt2-small", "gpt2"},       {"gpt2-124m", "gpt2"},
    {"mlp-tiny", "mlp"},         {"mlp-tiny-relu", "mlp"},     {"mlp-small", "mlp"},
    {"convnet-tiny", "convnet"}, {"resnet-small", "convnet"},
};

const char *gt_model_preset_names(void) {
    return "gpt2-tiny, gpt2-small, gpt2-124m, mlp-tiny, mlp-tiny-relu, mlp-small, "
           "convnet-tiny, resnet-small";
}

const char *gt_model_family_of(const char *name) {
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
    *out = NULL;
    const char *fam = gt_model_family_of(name);
    if (!fam)
        return GT_ERR(GT_ERR_INVALID, "unknown model '%s': the presets are %s",
                      name ? name : "(null)", gt_model_preset_names());
    if (strcmp(fam, "gpt2") == 0) return gt_gpt2_model_new(be, name, dt, max_batch, T, out);
    if (strcmp(fam, "mlp") == 0) {
        gt_mlp_config c;
        GT_TRY(gt_mlp_preset(name, &c));
        return gt_mlp_new(be, &c, dt, name, max_batch, out);
    }
    gt_convnet_config c;
    GT_TRY(gt_convnet_preset(name, &c));
    return gt_convnet_new(be, &c, dt, name, max_batch, out);
}

void gt_model_free(gt_model *m) {
    if (!m) return;
    m->vt->destroy(m);
}

const gt_model_info *gt_model_get_info(const gt_model *m) { return &m->info; }
gt_dtype gt_model_dtype(const gt_model *m) { return m->vt->dtype(m); }

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

size_t gt_model_num_params(const gt_model *m) { return m->vt->num_params(m); }
int gt_model_num_tensors(const gt_model *m) { return m->vt->num_tensors(m); }
const char *gt_model_tensor_name(const gt_model *m, int i) {
    return i >= 0 && i < gt_model_num_tensors(m) ? m->vt->tensor_name(m, i) : "?";
}
size_t gt_model_tensor_size(const gt_model *m, int i) {
    return i >= 0 && i < gt_model_num_tensors(m) ? m->vt->tensor_size(m, i) : 0;
}
int gt_model_tensor_shape(const gt_model *m, int i, int64_t shape[4]) {
    memset(shape, 0, 4 * sizeof *shape);
    return i >= 0 && i < gt_model_num_tensors(m) ? m->vt->tensor_shape(m, i, shape) : 0;
}
gt_status gt_model_init_random(gt_model *m, uint64_t seed) { return m->vt->init_random(m, seed); }
gt_status gt_model_set_params(gt_model *m, const float *src) { return m->vt->set_params(m, src); }
gt_status gt_model_get_params(gt_model *m, float *dst) { return m->vt->get_params(m, dst); }
gt_status gt_model_get_grads(gt_model *m, float *dst) { return m->vt->get_grads(m, dst); }

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
gt_status gt_model_zero_grad(gt_model *m) { return m->vt->zero_grad(m); }
void gt_model_set_training(gt_model *m, int training) { m->training = training ? 1 : 0; }
int gt_model_training(const gt_model *m) { return m->training; }

size_t gt_model_norm_chunk(const gt_model *m) { return m->vt->norm_chunk(m); }
gt_status gt_model_grad_norm(gt_model *m, double *out) { return m->vt->grad_norm(m, out); }
gt_status gt_model_grad_sumsq_chunks(gt_model *m, const void *grads, size_t lo_chunk,
                                     size_t hi_chunk, double *partials) {
    return m->vt->grad_sumsq_chunks(m, grads, lo_chunk, hi_chunk, partials);
}
gt_status gt_model_update(gt_model *m, const gt_adamw_config *cfg, int t, double *grad_norm,
                          float *lr) {
    return m->vt->update(m, cfg, t, grad_norm, lr);
}
void gt_model_set_grad_hook(gt_model *m, gt_model_grad_hook hook, void *ctx) {
    m->vt->set_grad_hook(m, hook, ctx);
}
float *gt_model_params_buffer(gt_model *m) { return m->vt->params_buffer(m); }
void *gt_model_grads_buffer(gt_model *m) { return m->vt->grads_buffer(m); }
gt_status gt_model_sync_weights(gt_model *m, size_t lo, size_t hi) {
    return m->vt->sync_weights(m, lo, hi);
}
size_t gt_model_num_params_padded(const gt_model *m) { return m->vt->num_params_padded(m); }
gt_status gt_model_pad(gt_model *m, size_t n_alloc) { return m->vt->pad(m, n_alloc); }
gt_status gt_model_set_opt_range(gt_model *m, size_t lo, size_t hi) {
    return m->vt->set_opt_range(m, lo, hi);
}
gt_status gt_model_update_range(gt_model *m, const gt_adamw_config *cfg, int t, float lr,
                                float grad_scale, const void *grads, size_t lo, size_t hi) {
    return m->vt->update_range(m, cfg, t, lr, grad_scale, grads, lo, hi);
}
gt_status gt_model_get_opt_state(gt_model *m, size_t lo, size_t hi, float *m_dst,
                                 float *v_dst) {
    return m->vt->get_opt_state(m, lo, hi, m_dst, v_dst);
}
gt_status gt_model_set_opt_state(gt_model *m, size_t lo, size_t hi, const float *m_src,
                                 const float *v_src) {
    return m->vt->set_opt_state(m, lo, hi, m_src, v_src);
}

int gt_model_num_state_tensors(const gt_model *m) {
    return m->vt->num_state_tensors ? m->vt->num_state_tensors(m) : 0;
}
const char *gt_model_state_name(const gt_model *m, int i) {
    return i >= 0 && i < gt_model_num_state_tensors(m) ? m->vt->state_name(m, i) : "?";
}
size_t gt_model_state_size(const gt_model *m, int i) {
    return i >= 0 && i < gt_model_num_state_tensors(m) ? m->vt->state_size(m, i) : 0;
}
int gt_model_state_shape(const gt_model *m, int i, int64_t shape[4]) {
    memset(shape, 0, 4 * sizeof *shape);
    return i >= 0 && i < gt_model_num_state_tensors(m) ? m->vt->state_shape(m, i, shape) : 0;
}
size_t gt_model_state_numel(const gt_model *m) {
    size_t n = 0;
    for (int i = 0; i < gt_model_num_state_tensors(m); i++) n += gt_model_state_size(m, i);
    return n;
}
gt_status gt_model_get_state(gt_model *m, float *dst) {
    return m->vt->get_state ? m->vt->get_state(m, dst) : GT_OK;
}
gt_status gt_model_set_state(gt_model *m, const float *src) {
    return m->vt->set_state ? m->vt->set_state(m, src) : GT_OK;
}
float *gt_model_state_buffer(gt_model *m) {
    return m->vt->state_buffer ? m->vt->state_buffer(m) : NULL;
}

void gt_model_locate(const gt_model *m, size_t internal, gt_model_loc *out) {
    m->vt->locate(m, internal, out);
}
void gt_model_loc_format(const gt_model *m, const gt_model_loc *loc, char *out, size_t n) {
    m->vt->loc_format(m, loc, out, n);
}
gt_status gt_model_find_nonfinite(gt_model *m, const void *buf, gt_dtype dt, size_t lo,
                                  size_t hi, int *found, gt_model_loc *loc, float *value) {
    return m->vt->find_nonfinite(m, buf, dt, lo, hi, found, loc, value);
}
double gt_model_flops_per_unit(const gt_model *m) { return m->vt->flops_per_unit(m); }
size_t gt_model_memory_bytes(const gt_model *m) { return m->vt->memory_bytes(m); }

/* ---- gt_flat ---------------------------------------------------------------------- */

#define FLAT(m) ((gt_flat *)(m)->impl)

static int add_to(gt_flat_tensor *arr, int *count, size_t *total, const char *name, int decay,
                  int ndim, const int64_t *dims) {
    GT_ASSERT(*count < GT_FLAT_MAX_TENSORS);
    GT_ASSERT(ndim >= 1 && ndim <= 4);
    gt_flat_tensor *t = &arr[*count];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->ndim = ndim;
    t->decay = decay;
    size_t n = 1;
    for (int d = 0; d < ndim; d++) {
        GT_ASSERT(dims[d] >= 1);
        t->shape[d] = dims[d];
        n *= (size_t)dims[d];
    }
    t->off = *total;
    t->n = n;
    *total += n;
    return (*count)++;
}

int gt_flat_add(gt_flat *f, const char *name, int decay, int ndim, int64_t d0, int64_t d1,
                int64_t d2, int64_t d3) {
    int64_t dims[4] = {d0, d1, d2, d3};
    return add_to(f->t, &f->nt, &f->num_params, name, decay, ndim, dims);
}

int gt_flat_add_state(gt_flat *f, const char *name, int64_t n) {
    return add_to(f->s, &f->ns, &f->state_numel, name, 0, 1, &n);
}

gt_status gt_flat_alloc(gt_flat *f, gt_backend *be, gt_dtype dt) {
    f->be = be;
    f->k.be = be;
    f->k.dt = dt;
    if (dt != GT_DTYPE_FP32 && dt != GT_DTYPE_BF16 && dt != GT_DTYPE_FP16)
        return GT_ERR(GT_ERR_INVALID, "storage dtype %s: use fp32, bf16 or fp16",
                      gt_dtype_name(dt));
    f->es = gt_dtype_size(dt);
    /* gpt2's rule: 65536, doubled until there are at most 256 chunks */
    f->norm_chunk = (size_t)1 << 16;
    while (f->norm_chunk * 256 < f->num_params) f->norm_chunk *= 2;
    f->num_alloc = (f->num_params + f->norm_chunk - 1) / f->norm_chunk * f->norm_chunk;
    f->opt_lo = 0;
    f->opt_hi = f->num_params;
    /* fp32 masters and AdamW state; gradients and the compute copy in dt */
    void **bufs[5] = {(void **)&f->params, (void **)&f->m, (void **)&f->v, &f->grads, &f->wc};
    int nbufs = dt == GT_DTYPE_FP32 ? 4 : 5;
    for (int i = 0; i < nbufs; i++) {
        size_t bytes = f->num_alloc * (i < 3 ? sizeof(float) : f->es);
        GT_TRY(gt_backend_alloc(be, bytes, bufs[i]));
        GT_TRY(be->memset_zero(be, *bufs[i], bytes));
    }
    if (f->state_numel) {
        GT_TRY(gt_backend_alloc(be, f->state_numel * sizeof(float), (void **)&f->state));
        GT_TRY(be->memset_zero(be, f->state, f->state_numel * sizeof(float)));
    }
    return gt_ops_probe_dtype(be, dt);
}

void gt_flat_release(gt_flat *f) {
    if (!f || !f->be) return;
    gt_backend_dealloc(f->be, f->params);
    gt_backend_dealloc(f->be, f->grads);
    gt_backend_dealloc(f->be, f->m);
    gt_backend_dealloc(f->be, f->v);
    gt_backend_dealloc(f->be, f->state);
    gt_backend_dealloc(f->be, f->wc);
    free(f->stage);
    f->params = f->m = f->v = f->state = NULL;
    f->grads = f->wc = f->stage = NULL;
    f->stage_bytes = 0;
}

gt_status gt_flat_ready(gt_flat *f, int i) {
    if (!f->hook) return GT_OK;
    return f->hook(f->hook_ctx, i < f->nt ? f->t[i].off : f->num_params);
}

gt_status gt_flat_require(const gt_flat *f, const char *family, const gt_op *ops, int n) {
    for (int i = 0; i < n; i++)
        if (!gt_ops_slot(f->be->ops, ops[i]))
            return GT_ERR(GT_ERR_UNSUPPORTED, "backend '%s' has no %s op: %s cannot run on it",
                          f->be->name, gt_op_name(ops[i]), family);
    return GT_OK;
}

gt_status gt_flat_check_batch(const gt_model *m, const gt_batch *b, int need_targets) {
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

gt_status gt_flat_upload_batch(gt_flat *f, const gt_batch *b, size_t in_per_sample, void *in_dev,
                               int32_t *targets_dev) {
    size_t n = (size_t)b->n * in_per_sample;
    const void *src = b->inputs;
    if (f->k.dt != GT_DTYPE_FP32) { /* rounded on the host, once per element */
        if (f->stage_bytes < n * f->es) {
            void *nb = realloc(f->stage, n * f->es);
            if (!nb)
                return GT_ERR(GT_ERR_OOM, "out of host memory staging %zu inputs in %s", n,
                              gt_dtype_name(f->k.dt));
            f->stage = nb;
            f->stage_bytes = n * f->es;
        }
        gt_convert(f->stage, f->k.dt, b->inputs, GT_DTYPE_FP32, n);
        src = f->stage;
    }
    GT_TRY(f->be->copy_to_device(f->be, in_dev, src, n * f->es));
    if (b->targets)
        GT_TRY(f->be->copy_to_device(f->be, targets_dev, b->targets,
                                     (size_t)b->n * sizeof(int32_t)));
    return GT_OK;
}

gt_status gt_flat_class_loss(gt_flat *f, float *losses_dev, float *host_scratch,
                             const void *logits, const int32_t *targets_dev, int n, int K,
                             float *mean_loss) {
    GT_TRY(f->be->ops->classifier_fwd(&f->k, losses_dev, logits, targets_dev, n, K, K));
    return mean_loss ? gt_flat_mean_loss(f, losses_dev, host_scratch, n, mean_loss) : GT_OK;
}

gt_status gt_flat_mean_loss(gt_flat *f, const float *losses_dev, float *host, int n,
                            float *mean_loss) {
    GT_TRY(f->be->copy_to_host(f->be, host, losses_dev, (size_t)n * sizeof(float)));
    double sum = 0.0; /* fixed order: the host sums */
    for (int i = 0; i < n; i++) sum += host[i];
    *mean_loss = (float)(sum / n);
    return GT_OK;
}

size_t gt_flat_num_params(const gt_model *m) { return FLAT(m)->num_params; }
int gt_flat_num_tensors(const gt_model *m) { return FLAT(m)->nt; }
const char *gt_flat_tensor_name(const gt_model *m, int i) { return FLAT(m)->t[i].name; }
size_t gt_flat_tensor_size(const gt_model *m, int i) { return FLAT(m)->t[i].n; }
int gt_flat_tensor_shape(const gt_model *m, int i, int64_t shape[4]) {
    const gt_flat_tensor *t = &FLAT(m)->t[i];
    memcpy(shape, t->shape, 4 * sizeof *shape);
    return t->ndim;
}

gt_status gt_flat_set_params(gt_model *m, const float *src) {
    gt_flat *f = FLAT(m);
    GT_TRY(f->be->copy_to_device(f->be, f->params, src, f->num_params * sizeof(float)));
    return gt_flat_sync_weights(m, 0, f->num_params);
}
gt_status gt_flat_get_params(gt_model *m, float *dst) {
    gt_flat *f = FLAT(m);
    return f->be->copy_to_host(f->be, dst, f->params, f->num_params * sizeof(float));
}
/* n elements of the k.dt buffer `dev` to dst in fp32. */
static gt_status copy_out_fp32(gt_flat *f, float *dst, const void *dev, size_t n) {
    if (f->k.dt == GT_DTYPE_FP32) return f->be->copy_to_host(f->be, dst, dev, n * sizeof(float));
    void *raw = malloc(n * f->es);
    if (!raw) return GT_ERR(GT_ERR_OOM, "out of host memory copying %zu values", n);
    gt_status s = f->be->copy_to_host(f->be, raw, dev, n * f->es);
    if (s == GT_OK) gt_convert(dst, GT_DTYPE_FP32, raw, f->k.dt, n);
    free(raw);
    return s;
}
gt_status gt_flat_get_grads(gt_model *m, float *dst) {
    gt_flat *f = FLAT(m);
    return copy_out_fp32(f, dst, f->grads, f->num_params);
}
gt_status gt_flat_zero_grad(gt_model *m) {
    gt_flat *f = FLAT(m);
    return f->be->memset_zero(f->be, f->grads, f->num_alloc * f->es);
}
size_t gt_flat_norm_chunk(const gt_model *m) { return FLAT(m)->norm_chunk; }

gt_status gt_flat_grad_sumsq_chunks(gt_model *m, const void *gbuf, size_t lo_chunk,
                                    size_t hi_chunk, double *partials) {
    gt_flat *f = FLAT(m);
    if (!f->be->ops->sumsq)
        return GT_ERR(GT_ERR_UNSUPPORTED, "backend '%s' has no sumsq op", f->be->name);
    for (size_t c = lo_chunk; c < hi_chunk; c++) {
        size_t off = c * f->norm_chunk;
        if (off + f->norm_chunk > f->num_alloc)
            return GT_ERR(GT_ERR_INVALID, "norm chunk %zu ends past the %zu padded parameters: "
                                          "pad to a multiple of the norm chunk first",
                          c, f->num_alloc);
        GT_TRY(f->be->ops->sumsq(&f->k, gt_flat_at(f, gbuf, off), f->norm_chunk,
                                 &partials[c - lo_chunk]));
    }
    return GT_OK;
}

gt_status gt_flat_grad_norm(gt_model *m, double *out) {
    gt_flat *f = FLAT(m);
    size_t nchunks = f->num_alloc / f->norm_chunk;
    double *part = malloc(nchunks * sizeof(double));
    if (!part) return GT_ERR(GT_ERR_OOM, "out of host memory");
    gt_status s = gt_flat_grad_sumsq_chunks(m, f->grads, 0, nchunks, part);
    double ss = 0.0;
    for (size_t c = 0; c < nchunks; c++) ss += part[c];
    free(part);
    *out = sqrt(ss);
    return s;
}

gt_status gt_flat_update_range(gt_model *m, const gt_adamw_config *cfg, int t, float lr,
                               float grad_scale, const void *gbuf, size_t lo, size_t hi) {
    gt_flat *f = FLAT(m);
    if (t < 1) return GT_ERR(GT_ERR_INVALID, "optimizer step must be >= 1, got %d", t);
    if (lo < f->opt_lo || hi > f->opt_hi)
        return GT_ERR(GT_ERR_INVALID, "update of [%zu, %zu) outside the optimizer state's "
                                      "range [%zu, %zu)",
                      lo, hi, f->opt_lo, f->opt_hi);
    if (!f->be->ops->adamw)
        return GT_ERR(GT_ERR_UNSUPPORTED, "backend '%s' has no adamw op", f->be->name);
    /* one call per run of equal weight decay, like gpt2 */
    int i = 0;
    while (i < f->nt) {
        int j = i;
        while (j + 1 < f->nt && f->t[j + 1].decay == f->t[i].decay) j++;
        size_t a = f->t[i].off, b = f->t[j].off + f->t[j].n;
        if (a < lo) a = lo;
        if (b > hi) b = hi;
        if (a < b) {
            float wd = f->t[i].decay ? cfg->weight_decay : 0.0f;
            GT_TRY(f->be->ops->adamw(&f->k, f->params + a, gt_flat_at(f, gbuf, a - lo),
                                     f->m + (a - f->opt_lo), f->v + (a - f->opt_lo), b - a, lr,
                                     cfg->beta1, cfg->beta2, cfg->eps, wd, grad_scale, t));
        }
        i = j + 1;
    }
    return gt_flat_sync_weights(m, lo, hi);
}

gt_status gt_flat_update(gt_model *m, const gt_adamw_config *cfg, int t, double *grad_norm,
                         float *lr_out) {
    gt_flat *f = FLAT(m);
    double norm = 0.0;
    GT_TRY(gt_flat_grad_norm(m, &norm));
    float lr, clip;
    GT_TRY(gt_adamw_step_scalars(cfg, t, norm, &lr, &clip));
    GT_TRY(gt_flat_update_range(m, cfg, t, lr, clip, f->grads, 0, f->num_params));
    if (grad_norm) *grad_norm = norm;
    if (lr_out) *lr_out = lr;
    return GT_OK;
}

void gt_flat_set_grad_hook(gt_model *m, gt_model_grad_hook hook, void *ctx) {
    FLAT(m)->hook = hook;
    FLAT(m)->hook_ctx = ctx;
}
float *gt_flat_params_buffer(gt_model *m) { return FLAT(m)->params; }
void *gt_flat_grads_buffer(gt_model *m) { return FLAT(m)->grads; }
/* The compute copy of masters [lo, hi), rounded to k.dt (in fp32 the
 * compute weights ARE the masters). */
gt_status gt_flat_sync_weights(gt_model *m, size_t lo, size_t hi) {
    gt_flat *f = FLAT(m);
    if (lo > hi || hi > f->num_alloc)
        return GT_ERR(GT_ERR_INVALID, "weight range [%zu, %zu) is outside [0, %zu)", lo, hi,
                      f->num_alloc);
    if (!f->wc || lo == hi) return GT_OK;
    if (!f->be->ops->cast)
        return GT_ERR(GT_ERR_UNSUPPORTED, "backend '%s' has no cast op", f->be->name);
    return f->be->ops->cast(&f->k, gt_flat_at(f, f->wc, lo), f->k.dt, f->params + lo,
                            GT_DTYPE_FP32, hi - lo);
}
gt_dtype gt_flat_dtype(const gt_model *m) { return FLAT(m)->k.dt; }
size_t gt_flat_num_params_padded(const gt_model *m) { return FLAT(m)->num_alloc; }

/* A zeroed buffer of n elements of es bytes in place of *buf, keeping the
 * first `keep`. */
static gt_status regrow(gt_flat *f, void *bufp, size_t es, size_t n, size_t keep) {
    void **buf = bufp;
    void *nb = NULL;
    GT_TRY(gt_backend_alloc(f->be, n * es, &nb));
    gt_status s = f->be->memset_zero(f->be, nb, n * es);
    if (s == GT_OK && keep) s = f->be->copy_device(f->be, nb, *buf, keep * es);
    if (s != GT_OK) {
        gt_backend_dealloc(f->be, nb);
        return s;
    }
    gt_backend_dealloc(f->be, *buf);
    *buf = nb;
    return GT_OK;
}

gt_status gt_flat_pad(gt_model *m, size_t n_alloc) {
    gt_flat *f = FLAT(m);
    if (n_alloc < f->num_params)
        return GT_ERR(GT_ERR_INVALID, "padding %zu is below the %zu parameters", n_alloc,
                      f->num_params);
    if (n_alloc == f->num_alloc) return GT_OK;
    if (n_alloc % f->norm_chunk != 0)
        return GT_ERR(GT_ERR_INVALID, "padding %zu is not a multiple of the norm chunk %zu",
                      n_alloc, f->norm_chunk);
    size_t keep = f->num_alloc < n_alloc ? f->num_alloc : n_alloc;
    GT_TRY(regrow(f, &f->params, sizeof(float), n_alloc, keep));
    GT_TRY(regrow(f, &f->grads, f->es, n_alloc, keep));
    if (f->wc) GT_TRY(regrow(f, &f->wc, f->es, n_alloc, keep));
    f->num_alloc = n_alloc;
    return GT_OK;
}

gt_status gt_flat_set_opt_range(gt_model *m, size_t lo, size_t hi) {
    gt_flat *f = FLAT(m);
    if (lo > hi || hi > f->num_alloc)
        return GT_ERR(GT_ERR_INVALID, "optimizer range [%zu, %zu) is outside [0, %zu)", lo, hi,
                      f->num_alloc);
    size_t n = hi - lo ? hi - lo : 1;
    GT_TRY(regrow(f, &f->m, sizeof(float), n, 0));
    GT_TRY(regrow(f, &f->v, sizeof(float), n, 0));
    f->opt_lo = lo;
    f->opt_hi = hi;
    return GT_OK;
}

static gt_status opt_state_check(const gt_flat *f, size_t lo, size_t hi) {
    if (lo > hi || lo < f->opt_lo || hi > f->opt_hi || hi > f->num_params)
        return GT_ERR(GT_ERR_INVALID,
                      "optimizer state [%zu, %zu) is outside the range this model holds "
                      "[%zu, %zu) or its %zu parameters",
                      lo, hi, f->opt_lo, f->opt_hi, f->num_params);
    return GT_OK;
}

gt_status gt_flat_get_opt_state(gt_model *m, size_t lo, size_t hi, float *m_dst,
                                float *v_dst) {
    gt_flat *f = FLAT(m);
    GT_TRY(opt_state_check(f, lo, hi));
    if (hi == lo) return GT_OK;
    size_t bytes = (hi - lo) * sizeof(float);
    GT_TRY(f->be->copy_to_host(f->be, m_dst, f->m + (lo - f->opt_lo), bytes));
    return f->be->copy_to_host(f->be, v_dst, f->v + (lo - f->opt_lo), bytes);
}

gt_status gt_flat_set_opt_state(gt_model *m, size_t lo, size_t hi, const float *m_src,
                                const float *v_src) {
    gt_flat *f = FLAT(m);
    GT_TRY(opt_state_check(f, lo, hi));
    if (hi == lo) return GT_OK;
    size_t bytes = (hi - lo) * sizeof(float);
    GT_TRY(f->be->copy_to_device(f->be, f->m + (lo - f->opt_lo), m_src, bytes));
    return f->be->copy_to_device(f->be, f->v + (lo - f->opt_lo), v_src, bytes);
}

int gt_flat_num_state_tensors(const gt_model *m) { return FLAT(m)->ns; }
const char *gt_flat_state_name(const gt_model *m, int i) { return FLAT(m)->s[i].name; }
size_t gt_flat_state_size(const gt_model *m, int i) { return FLAT(m)->s[i].n; }
int gt_flat_state_shape(const gt_model *m, int i, int64_t shape[4]) {
    memcpy(shape, FLAT(m)->s[i].shape, 4 * sizeof *shape);
    return 1;
}
gt_status gt_flat_get_state(gt_model *m, float *dst) {
    gt_flat *f = FLAT(m);
    if (!f->state_numel) return GT_OK;
    return f->be->copy_to_host(f->be, dst, f->state, f->state_numel * sizeof(float));
}
gt_status gt_flat_set_state(gt_model *m, const float *src) {
    gt_flat *f = FLAT(m);
    if (!f->state_numel) return GT_OK;
    return f->be->copy_to_device(f->be, f->state, src, f->state_numel * sizeof(float));
}
float *gt_flat_state_buffer(gt_model *m) { return FLAT(m)->state; }

void gt_flat_locate(const gt_model *m, size_t x, gt_model_loc *out) {
    const gt_flat *f = FLAT(m);
    memset(out, 0, sizeof *out);
    out->layer = -1;
    out->internal = x;
    out->flat = x;
    out->tensor = -1;
    out->element = x;
    for (int i = 0; i < f->nt; i++)
        if (x >= f->t[i].off && x < f->t[i].off + f->t[i].n) {
            out->tensor = i;
            out->element = x - f->t[i].off;
            return;
        }
}

void gt_flat_loc_format(const gt_model *m, const gt_model_loc *loc, char *out, size_t n) {
    if (loc->tensor < 0) snprintf(out, n, "padding element %zu", loc->element);
    else snprintf(out, n, "%s, element %zu", FLAT(m)->t[loc->tensor].name, loc->element);
}

gt_status gt_flat_find_nonfinite(gt_model *m, const void *buf, gt_dtype dt, size_t lo,
                                 size_t hi, int *found, gt_model_loc *loc, float *value) {
    gt_flat *f = FLAT(m);
    *found = 0;
    if (dt != GT_DTYPE_FP32 && dt != f->k.dt)
        return GT_ERR(GT_ERR_INVALID, "%s keeps its buffers in fp32 and %s, asked to search %s",
                      m->info.name, gt_dtype_name(f->k.dt), gt_dtype_name(dt));
    if (hi > f->num_params) hi = f->num_params;
    if (lo >= hi) return GT_OK;
    float *host = malloc((hi - lo) * sizeof(float));
    if (!host) return GT_ERR(GT_ERR_OOM, "out of host memory searching for non-finite values");
    gt_status s;
    if (dt == GT_DTYPE_FP32) {
        s = f->be->copy_to_host(f->be, host, buf, (hi - lo) * sizeof(float));
    } else { /* dt == k.dt; widening is exact: NaN stays NaN, Inf stays Inf */
        s = copy_out_fp32(f, host, buf, hi - lo);
    }
    /* the internal layout is the canonical order: the first one is the first */
    for (size_t x = lo; s == GT_OK && x < hi; x++)
        if (!isfinite(host[x - lo])) {
            *found = 1;
            *value = host[x - lo];
            gt_flat_locate(m, x, loc);
            break;
        }
    free(host);
    return s;
}

double gt_flat_flops_per_unit(const gt_model *m) { return FLAT(m)->flops_per_unit; }

size_t gt_flat_memory_bytes(const gt_model *m) {
    const gt_flat *f = FLAT(m);
    return f->num_alloc * (sizeof(float) + f->es * (f->wc ? 2 : 1)) +
           2 * (f->opt_hi - f->opt_lo) * sizeof(float) + f->state_numel * sizeof(float) +
           f->act_bytes;
}
