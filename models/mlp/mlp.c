/* MLP forward and backward on the op table (mlp.h has the layout). Reads
 * top to bottom, llm.c style, shapes at every call. */
#include "models/mlp/mlp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/rng.h"
#include "models/model_impl.h"

typedef struct mlp {
    gt_params f;          /* the store (m->params): tensors in forward order */
    gt_dense_stage stage; /* the inputs in the storage dtype */
    double flops;         /* per sample */
    size_t act_bytes;
    gt_mlp_config cfg;
    int B;             /* capacity */
    int w[65], b[65];  /* tensor indices; [depth] is the head */
    char *act_mem;     /* activations in the storage dtype f.k.dt, except: */
    void *in;          /* (B, in_dim) */
    void *z;           /* (zl, B, width) pre-activation: zl = depth, or 1 with block
                        * recomputation (layer l's z computed again from a of l-1) */
    void *a;           /* (depth, B, width) post-activation: every block's output */
    int recompute;     /* GT_MODEL_RECOMPUTE_BLOCK */
    void *logits;      /* (B, K); dlogits in place during backward */
    float *losses;     /* (B) fp32 */
    int32_t *targets;  /* (B) */
    void *d0, *d1;     /* (B, max(width, ...)) backward scratch */
    float *host_losses;
} mlp;

#define MLP(m) ((mlp *)(m)->impl)
/* element n of an activation buffer */
#define AT(base, n) gt_params_at(&p->f, (base), (n))

gt_status gt_mlp_preset(const char *name, gt_mlp_config *out) {
    static const struct {
        const char *name;
        gt_mlp_config c;
    } presets[] = {
        {"mlp-tiny", {16, 8, 2, 64, GT_MLP_GELU}},
        {"mlp-tiny-relu", {16, 8, 2, 64, GT_MLP_RELU}},
        {"mlp-small", {64, 16, 4, 512, GT_MLP_GELU}},
    };
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (name && strcmp(name, presets[i].name) == 0) {
            *out = presets[i].c;
            return GT_OK;
        }
    return GT_ERR(GT_ERR_INVALID, "unknown model '%s': the mlp presets are mlp-tiny, "
                                  "mlp-tiny-relu, mlp-small",
                  name ? name : "(null)");
}

gt_status gt_mlp_config_check(const gt_mlp_config *c) {
#define RANGE(field, lo, hi)                                                                   \
    if ((int)c->field < (lo) || (int)c->field > (hi))                                          \
        return GT_ERR(GT_ERR_INVALID, "mlp config: " #field " = %d is out of range [%d, %d]",   \
                      (int)c->field, (lo), (hi));
    RANGE(in_dim, 1, 65536);
    RANGE(classes, 2, 65536);
    RANGE(depth, 0, 64);
    RANGE(width, 1, 65536);
    RANGE(act, 0, GT_MLP_ACT_COUNT - 1);
#undef RANGE
    return GT_OK;
}

static const char *const g_fields[GT_MODEL_CONFIG_FIELDS] = {
    "in_dim", "classes", "depth", "width", "activation (0 gelu, 1 relu)", "unused"};

static void config_fields(const gt_model *m, int32_t out[GT_MODEL_CONFIG_FIELDS]) {
    const gt_mlp_config *c = &MLP(m)->cfg;
    out[0] = c->in_dim;
    out[1] = c->classes;
    out[2] = c->depth;
    out[3] = c->width;
    out[4] = (int32_t)c->act;
}
static const char *config_field_name(const gt_model *m, int i) {
    (void)m;
    return g_fields[i];
}

static void destroy(gt_model *m) {
    mlp *p = MLP(m);
    if (p) {
        gt_backend_dealloc(p->f.be, p->act_mem);
        gt_params_release(&p->f);
        gt_dense_stage_free(&p->stage);
        free(p->host_losses);
        free(p);
    }
    free(m);
}

static gt_status init_random(gt_model *m, uint64_t seed) {
    gt_params *f = &MLP(m)->f;
    float *host = malloc(f->num_params * sizeof(float));
    if (!host) return GT_ERR(GT_ERR_OOM, "out of host memory initialising %zu parameters",
                             f->num_params);
    for (int i = 0; i < f->nt; i++) {
        /* torch.nn.Linear.reset_parameters: kaiming_uniform(a=sqrt(5)) on W
         * is U(+-1/sqrt(fan_in)), and b the same bound */
        int64_t fan_in = f->t[i].ndim == 2 ? f->t[i].shape[1] : f->t[i - 1].shape[1];
        float bound = 1.0f / sqrtf((float)fan_in);
        gt_rng_fill_uniform(host + f->t[i].off, f->t[i].n, -bound, bound, seed, (uint64_t)i, 0);
    }
    gt_status s = gt_params_set(f, host);
    free(host);
    return s;
}

static const gt_op g_ops_gelu[] = {GT_OP_MATMUL_FWD, GT_OP_MATMUL_BWD, GT_OP_GELU_FWD,
                                   GT_OP_GELU_BWD, GT_OP_CLASSIFIER_FWD, GT_OP_CLASSIFIER_BWD};
static const gt_op g_ops_relu[] = {GT_OP_MATMUL_FWD, GT_OP_MATMUL_BWD, GT_OP_RELU_FWD,
                                   GT_OP_RELU_BWD, GT_OP_CLASSIFIER_FWD, GT_OP_CLASSIFIER_BWD};
/* GELU layers through the fused linear + GELU ops when the backend has both
 * (on a GPU, GELU rides in the GEMM's epilogue), else the unfused pairs */
static const gt_op g_ops_gelu_fused[] = {GT_OP_MATMUL_FWD,      GT_OP_MATMUL_BWD,
                                         GT_OP_MATMUL_GELU_FWD, GT_OP_MATMUL_DGELU_BWD,
                                         GT_OP_CLASSIFIER_FWD,  GT_OP_CLASSIFIER_BWD};

static int fused_gelu(const mlp *p) {
    const gt_ops *o = p->f.be->ops;
    return p->cfg.act == GT_MLP_GELU && o->matmul_gelu_fwd && o->matmul_dgelu_bwd;
}

/* ---- forward ------------------------------------------------------------------------ */

/* Layer l's pre-activation z (N, W): its slot, or with block recomputation
 * the one-layer scratch; its input (N, D or W): the batch or a of layer l-1. */
static void *z_of(mlp *p, int l) {
    return AT(p->z, (size_t)(p->recompute ? 0 : l) * (size_t)p->B * (size_t)p->cfg.width);
}
static const void *x_of(mlp *p, int l) {
    return l > 0 ? AT(p->a, (size_t)(l - 1) * (size_t)p->B * (size_t)p->cfg.width) : p->in;
}

/* Hidden layer l: z = x W^T + b, a = act(z), for N samples. `z_only` (the
 * recompute in the backward): z alone, by the op the forward used, so with
 * the same bits; the fused op writes a too, the bits it already holds. */
static gt_status layer_forward(mlp *p, int l, int N, int z_only) {
    gt_params *f = &p->f;
    const gt_ops *o = f->be->ops;
    const gt_kctx *k = &f->k;
    int W = p->cfg.width, xin = l > 0 ? W : p->cfg.in_dim;
    size_t NW = (size_t)N * W;
    void *z = z_of(p, l);                                            // (N, W)
    void *a = AT(p->a, (size_t)l * (size_t)p->B * (size_t)W);         // (N, W)
    const void *w = gt_params_weight(f, p->w[l], 0), *b = gt_params_weight(f, p->b[l], 0);
    if (fused_gelu(p)) /* z and a = gelu(z) from one call */
        return o->matmul_gelu_fwd(k, a, z, x_of(p, l), w, b, N, xin, W);
    GT_TRY(o->matmul_fwd(k, z, x_of(p, l), w, b, N, xin, W));
    if (z_only) return GT_OK;
    if (p->cfg.act == GT_MLP_GELU) return o->gelu_fwd(k, a, z, NW);
    return o->relu_fwd(k, a, z, NW);
}

/* The forward up to the logits; the head's unit (L) is left needed for the
 * caller to release (the backward starts with it); `next`: the unit the
 * caller needs after the head (-1: none). */
static gt_status forward_body(gt_model *m, const gt_batch *bt, int need_targets, int next) {
    mlp *p = MLP(m);
    gt_params *f = &p->f;
    const gt_mlp_config *c = &p->cfg;
    const gt_ops *o = f->be->ops;
    const gt_kctx *k = &f->k;
    int fused = fused_gelu(p);
    const gt_op *need = fused ? g_ops_gelu_fused : c->act == GT_MLP_GELU ? g_ops_gelu : g_ops_relu;
    GT_TRY(gt_dense_require(f, "mlp", need, 6));
    GT_TRY(gt_dense_check_batch(m, bt, need_targets));
    int N = bt->n, D = c->in_dim, W = c->width, K = c->classes, L = c->depth;
    GT_TRY(gt_dense_upload_batch(f, &p->stage, bt, (size_t)D, p->in, p->targets));
    for (int l = 0; l < L; l++) { /* unit l: layer l */
        GT_TRY(gt_params_need(f, l, l + 1));
        GT_TRY(layer_forward(p, l, N, 0));
        GT_TRY(gt_params_done(f, l));
    }
    GT_TRY(gt_params_need(f, L, next));
    GT_TRY(o->matmul_fwd(k, p->logits, x_of(p, L), gt_params_weight(f, p->w[L], 0),
                         gt_params_weight(f, p->b[L], 0), N, L > 0 ? W : D, K)); // (N, K)
    return GT_OK;
}

static gt_status forward(gt_model *m, const gt_batch *bt, float *mean_loss) {
    mlp *p = MLP(m);
    GT_TRY(forward_body(m, bt, 0, -1));
    GT_TRY(gt_params_done(&p->f, p->cfg.depth));
    if (!bt->targets) return GT_OK;
    return gt_dense_class_loss(&p->f, p->losses, p->host_losses, p->logits, p->targets, bt->n,
                              p->cfg.classes, mean_loss);
}

/* ---- backward ----------------------------------------------------------------------- */

static gt_status forward_backward(gt_model *m, const gt_batch *bt, float dloss,
                                  float *mean_loss) {
    mlp *p = MLP(m);
    gt_params *f = &p->f;
    const gt_mlp_config *c = &p->cfg;
    const gt_ops *o = f->be->ops;
    const gt_kctx *k = &f->k;
    gt_backend *be = f->be;
    gt_params_backward_end(f); /* a backward an error cut short */
    GT_TRY(forward_body(m, bt, 1, c->depth - 1));
    int N = bt->n, D = c->in_dim, W = c->width, K = c->classes, L = c->depth;
    size_t NW = (size_t)N * W, BW = (size_t)p->B * W;
    /* losses and dlogits in one pass; dlogits overwrite the logits */
    GT_TRY(o->classifier_bwd(k, p->logits, p->losses, p->logits, p->targets, dloss, N, K, K));
    if (mean_loss) GT_TRY(gt_dense_mean_loss(f, p->losses, p->host_losses, N, mean_loss));
    GT_TRY(gt_params_backward_begin(f)); /* the head's gradient buffer */

    const void *top = x_of(p, L);
    /* block recomputation: the z a GELU backward reads is computed again from
     * the layer's input just before; the top layer's is still there from
     * the forward (ReLU's backward reads a, never z) */
    int again = p->recompute && c->act == GT_MLP_GELU;
    if (fused_gelu(p)) {
        /* each call gives the next layer down its dz directly:
         * dz_{l-1} (N, W) = (dz_l @ w_l) * gelu'(z_{l-1}), overwritten */
        void *dz = p->d0, *dnext = p->d1;
        if (L > 0)
            GT_TRY(o->matmul_dgelu_bwd(k, dz, gt_params_grad(f, p->w[L], 0), gt_params_grad(f, p->b[L], 0),
                                       p->logits, top, gt_params_weight(f, p->w[L], 0),
                                       z_of(p, L - 1), N, W, K));
        else
            GT_TRY(o->matmul_bwd(k, NULL, gt_params_grad(f, p->w[L], 0), gt_params_grad(f, p->b[L], 0),
                                 p->logits, top, gt_params_weight(f, p->w[L], 0), N, D, K));
        GT_TRY(gt_params_done(f, L));
        GT_TRY(gt_params_ready(f, p->w[L], 0));
        for (int l = L - 1; l >= 0; l--) {
            const void *x = x_of(p, l); // (N, W or D)
            GT_TRY(gt_params_need(f, l, l - 1));
            /* the recompute reads layer l-1's weights: its unit is needed
             * here already, and released after its own backward */
            if (l > 0 && again) GT_TRY(gt_params_need(f, l - 1, -1));
            if (l > 0 && again) GT_TRY(layer_forward(p, l - 1, N, 1));
            if (l > 0)
                GT_TRY(o->matmul_dgelu_bwd(k, dnext, gt_params_grad(f, p->w[l], 0),
                                           gt_params_grad(f, p->b[l], 0), dz, x,
                                           gt_params_weight(f, p->w[l], 0), z_of(p, l - 1), N,
                                           W, W));
            else /* the input needs no gradient */
                GT_TRY(o->matmul_bwd(k, NULL, gt_params_grad(f, p->w[l], 0), gt_params_grad(f, p->b[l], 0),
                                     dz, x, gt_params_weight(f, p->w[l], 0), N, D, W));
            GT_TRY(gt_params_done(f, l));
            GT_TRY(gt_params_ready(f, p->w[l], 0));
            void *t = dz;
            dz = dnext;
            dnext = t;
        }
        if (L == 0) GT_TRY(gt_params_ready(f, 0, 0));
        gt_params_backward_end(f);
        return GT_OK;
    }

    /* head: da (N, W) = dlogits @ head.w (overwritten); gradients of head.w, head.b */
    void *da = p->d0, *dz = p->d1;
    GT_TRY(o->matmul_bwd(k, L > 0 ? da : NULL, gt_params_grad(f, p->w[L], 0),
                         gt_params_grad(f, p->b[L], 0), p->logits, top, gt_params_weight(f, p->w[L], 0), N,
                         L > 0 ? W : D, K));
    GT_TRY(gt_params_done(f, L));
    GT_TRY(gt_params_ready(f, p->w[L], 0));
    for (int l = L - 1; l >= 0; l--) {
        void *z = z_of(p, l), *a = AT(p->a, (size_t)l * BW); // (N, W)
        const void *x = x_of(p, l);                          // (N, W or D)
        GT_TRY(gt_params_need(f, l, l - 1));
        if (again && l < L - 1) GT_TRY(layer_forward(p, l, N, 1));
        GT_TRY(be->memset_zero(be, dz, NW * f->es));
        if (c->act == GT_MLP_GELU) GT_TRY(o->gelu_bwd(k, dz, z, da, NW));
        else GT_TRY(o->relu_bwd(k, dz, a, da, NW));
        /* da now receives d(a_{l-1}), overwritten; the input needs no gradient */
        GT_TRY(o->matmul_bwd(k, l > 0 ? da : NULL, gt_params_grad(f, p->w[l], 0),
                             gt_params_grad(f, p->b[l], 0), dz, x, gt_params_weight(f, p->w[l], 0), N,
                             l > 0 ? W : D, W));
        GT_TRY(gt_params_done(f, l));
        GT_TRY(gt_params_ready(f, p->w[l], 0));
    }
    if (L == 0) GT_TRY(gt_params_ready(f, 0, 0));
    gt_params_backward_end(f);
    return GT_OK;
}

static double flops_per_unit(const gt_model *m) { return MLP(m)->flops; }
static size_t act_bytes(const gt_model *m) { return MLP(m)->act_bytes; }

static const gt_model_vt g_vt = {
    .destroy = destroy,
    .config_fields = config_fields,
    .config_field_name = config_field_name,
    .init_random = init_random,
    .forward = forward,
    .forward_backward = forward_backward,
    .flops_per_unit = flops_per_unit,
    .act_bytes = act_bytes,
};

static size_t align_up(size_t n) { return (n + 255) & ~(size_t)255; }

gt_status gt_mlp_new(gt_backend *be, const gt_mlp_config *cfg, gt_dtype dt,
                     gt_model_recompute recompute, const char *name, int max_batch,
                     gt_model **out) {
    *out = NULL;
    GT_TRY(gt_mlp_config_check(cfg));
    if ((int)recompute < 0 || recompute >= GT_MODEL_RECOMPUTE_COUNT)
        return GT_ERR(GT_ERR_INVALID, "recompute mode %d: expected none or block",
                      (int)recompute);
    if (max_batch < 1)
        return GT_ERR(GT_ERR_INVALID, "mlp: the batch (%d) must be >= 1", max_batch);
    gt_model *m = calloc(1, sizeof *m);
    mlp *p = calloc(1, sizeof *p);
    if (!m || !p) {
        free(m);
        free(p);
        return GT_ERR(GT_ERR_OOM, "out of host memory for the model struct");
    }
    m->vt = &g_vt;
    m->impl = p;
    m->params = &p->f;
    m->training = 1;
    m->recompute = recompute;
    p->recompute = recompute == GT_MODEL_RECOMPUTE_BLOCK;
    p->cfg = *cfg;
    p->B = max_batch;
    int D = cfg->in_dim, W = cfg->width, K = cfg->classes, L = cfg->depth;
    gt_model_info *in = &m->info;
    snprintf(in->name, sizeof in->name, "%s", name ? name : "mlp");
    in->family = "mlp";
    in->input = GT_MODEL_INPUT_DENSE;
    in->unit = "samples";
    in->units_per_sample = 1;
    in->sample_numel = D;
    in->classes = K;
    in->max_batch = max_batch;
    in->max_T = 1;
    char nm[GT_PARAMS_NAME_LEN];
    double macs = 0;
    for (int l = 0; l <= L; l++) {
        int fin = l == 0 ? D : W, fout = l == L ? K : W;
        if (l == L) snprintf(nm, sizeof nm, "head.w");
        else snprintf(nm, sizeof nm, "fc%d.w", l);
        p->w[l] = gt_params_add(&p->f, nm, 1, 0, 2, fout, fin, 1, 1);
        if (l == L) snprintf(nm, sizeof nm, "head.b");
        else snprintf(nm, sizeof nm, "fc%d.b", l);
        p->b[l] = gt_params_add(&p->f, nm, 0, 0, 1, fout, 1, 1, 1);
        macs += (double)fin * fout;
    }
    p->flops = 6.0 * macs;
    /* the sharding units (ZeRO-3): each layer, the head the last; placed in
     * the canonical order */
    for (int l = 0; l <= L; l++) {
        gt_params_unit_begin(&p->f);
        gt_params_place(&p->f, p->w[l], 0);
        gt_params_place(&p->f, p->b[l], 0);
    }
    gt_status s = gt_params_alloc(&p->f, be, dt);
    if (s == GT_OK) s = gt_ops_probe_dtype(be, dt);
    size_t B = (size_t)max_batch, f4 = sizeof(float), e = gt_dtype_size(dt);
    size_t zl = p->recompute && L > 0 ? 1 : (size_t)L; /* layers of z held */
    size_t sizes[8] = {B * D * e, zl * B * W * e, (size_t)L * B * W * e,
                       B * K * e, B * f4, B * sizeof(int32_t), B * W * e, B * W * e};
    size_t total = 0;
    for (int i = 0; i < 8; i++) total += align_up(sizes[i] ? sizes[i] : 1);
    if (s == GT_OK) s = gt_backend_alloc(be, total, (void **)&p->act_mem);
    if (s == GT_OK) {
        void **dst[8] = {(void **)&p->in, (void **)&p->z, (void **)&p->a, (void **)&p->logits,
                         (void **)&p->losses, (void **)&p->targets, (void **)&p->d0,
                         (void **)&p->d1};
        size_t off = 0;
        for (int i = 0; i < 8; i++) {
            *dst[i] = p->act_mem + off;
            off += align_up(sizes[i] ? sizes[i] : 1);
        }
        p->act_bytes = total;
        p->host_losses = malloc(B * f4);
        if (!p->host_losses) s = GT_ERR(GT_ERR_OOM, "out of host memory for the loss buffer");
    }
    if (s != GT_OK) {
        destroy(m);
        return s;
    }
    *out = m;
    return GT_OK;
}
