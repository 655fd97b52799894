/* ConvNet forward and backward on the op table (convnet.h has the layout).
 * Reads top to bottom, llm.c style, shapes at every call. */
#include "models/convnet/convnet.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/rng.h"
#include "models/model_impl.h"

static const float BN_EPS = 1e-5f, BN_MOMENTUM = 0.1f;

/* conv (no bias) -> BatchNorm, the unit every layer is made of */
typedef struct cbn {
    gt_conv2d_shape s;    /* N = capacity; set to the batch at each call */
    int OC, OH, OW;
    int w, bw, bb;        /* parameter tensors */
    int rm, rv;           /* state tensors */
    void *conv, *bn;      /* (N, OC, OH, OW) conv output, BN output */
    float *mean, *rstd;   /* (OC) batch statistics saved for the backward, fp32 */
    void *dconv, *dbn;    /* gradients of conv and bn outputs (dbn NULL: borrowed) */
} cbn;

typedef struct block {
    cbn c1, c2, pr;
    int proj;             /* 1: projection shortcut pr */
    int first;            /* first tensor of the block */
    void *out;            /* (N, OC, OH, OW) after the final ReLU */
    void *dout;           /* gradient of out */
    void *dsum;           /* gradient before the final ReLU */
    void *dr1;            /* gradient of relu(bn1) */
} block;

typedef struct convnet {
    gt_params f;          /* the store (m->params): tensors in forward order */
    gt_dense_stage stage; /* the inputs in the storage dtype */
    double flops;         /* per sample */
    size_t act_bytes;
    gt_convnet_config cfg;
    int B;
    cbn stem;
    void *stem_dout;      /* gradient of relu(stem bn) (in place in stem.bn) */
    block blk[GT_CONVNET_MAX_BLOCKS];
    int fcw, fcb;
    int Cl, HWl;          /* channels and pixels of the last feature map */
    /* activations and their gradients in the storage dtype f.k.dt */
    void *in;             /* (B, C, H, W) */
    void *pooled, *dpooled; /* (B, Cl) */
    void *logits;         /* (B, K) */
    float *losses;        /* (B) fp32 */
    int32_t *targets;     /* (B) */
    char *act_mem;
    size_t act_off, act_total;
    float *host_losses;
    double macs;
    /* block recomputation: every block's conv and BN outputs share one
     * block's worth (nmax values each), and the recompute's BatchNorm updates
     * throwaway running statistics (run_scratch, 2 x the widest block) */
    int recompute;
    void *shared[6];      /* c1.conv c1.bn c2.conv c2.bn pr.conv pr.bn */
    float *run_scratch;
    size_t run_floats;
} convnet;

#define NET(m) ((convnet *)(m)->impl)

gt_status gt_convnet_preset(const char *name, gt_convnet_config *out) {
    static const struct {
        const char *name;
        gt_convnet_config c;
    } presets[] = {
        {"convnet-tiny", {3, 8, 8, 4, 8, 2, {8, 16}, {1, 2}}},
        {"resnet-small", {3, 32, 32, 10, 16, 6, {16, 16, 32, 32, 64, 64}, {1, 1, 2, 1, 2, 1}}},
    };
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (name && strcmp(name, presets[i].name) == 0) {
            *out = presets[i].c;
            return GT_OK;
        }
    return GT_ERR(GT_ERR_INVALID,
                  "unknown model '%s': the convnet presets are convnet-tiny, resnet-small",
                  name ? name : "(null)");
}

gt_status gt_convnet_config_check(const gt_convnet_config *c) {
#define RANGE(what, v, lo, hi)                                                                 \
    if ((v) < (lo) || (v) > (hi))                                                              \
        return GT_ERR(GT_ERR_INVALID, "convnet config: %s = %d is out of range [%d, %d]",      \
                      what, (int)(v), (lo), (hi));
    RANGE("channels", c->channels, 1, 4096);
    RANGE("height", c->height, 1, 4096);
    RANGE("width", c->width, 1, 4096);
    RANGE("classes", c->classes, 2, 65536);
    RANGE("stem", c->stem, 1, 4096);
    RANGE("nblocks", c->nblocks, 0, GT_CONVNET_MAX_BLOCKS);
    int h = c->height, w = c->width;
    for (int b = 0; b < c->nblocks; b++) {
        char what[48];
        snprintf(what, sizeof what, "block_channels[%d]", b);
        RANGE(what, c->block_channels[b], 1, 4096);
        if (c->block_stride[b] != 1 && c->block_stride[b] != 2)
            return GT_ERR(GT_ERR_INVALID, "convnet config: block_stride[%d] = %d must be 1 or 2",
                          b, c->block_stride[b]);
        h = (h - 1) / c->block_stride[b] + 1;
        w = (w - 1) / c->block_stride[b] + 1;
    }
#undef RANGE
    (void)h;
    (void)w;
    return GT_OK;
}

static const char *const g_fields[GT_MODEL_CONFIG_FIELDS] = {"channels", "height", "width",
                                                             "classes",  "stem",   "nblocks"};

static void config_fields(const gt_model *m, int32_t out[GT_MODEL_CONFIG_FIELDS]) {
    const gt_convnet_config *c = &NET(m)->cfg;
    out[0] = c->channels;
    out[1] = c->height;
    out[2] = c->width;
    out[3] = c->classes;
    out[4] = c->stem;
    out[5] = c->nblocks;
}
static const char *config_field_name(const gt_model *m, int i) {
    (void)m;
    return g_fields[i];
}

static void destroy(gt_model *m) {
    convnet *p = NET(m);
    if (p) {
        gt_backend_dealloc(p->f.be, p->act_mem);
        gt_params_release(&p->f);
        gt_dense_stage_free(&p->stage);
        free(p->host_losses);
        free(p);
    }
    free(m);
}

/* ---- building ------------------------------------------------------------------- */

/* Declares the tensors of a conv+BN unit reading (IC, H, W) maps. */
static void cbn_declare(convnet *p, cbn *u, const char *conv_name, const char *bn_name, int IC,
                        int H, int W, int OC, int K, int stride) {
    char nm[GT_PARAMS_NAME_LEN];
    u->s = (gt_conv2d_shape){.N = p->B, .C = IC, .H = H, .W = W, .OC = OC, .KH = K, .KW = K,
                             .stride = stride, .pad = K / 2};
    u->OC = OC;
    u->OH = gt_conv2d_out_h(&u->s);
    u->OW = gt_conv2d_out_w(&u->s);
    snprintf(nm, sizeof nm, "%s.w", conv_name);
    u->w = gt_params_add(&p->f, nm, 1, 0, 4, OC, IC, K, K);
    snprintf(nm, sizeof nm, "%s.w", bn_name);
    u->bw = gt_params_add(&p->f, nm, 0, 0, 1, OC, 1, 1, 1);
    snprintf(nm, sizeof nm, "%s.b", bn_name);
    u->bb = gt_params_add(&p->f, nm, 0, 0, 1, OC, 1, 1, 1);
    snprintf(nm, sizeof nm, "%s.running_mean", bn_name);
    u->rm = gt_params_add_state(&p->f, nm, OC);
    snprintf(nm, sizeof nm, "%s.running_var", bn_name);
    u->rv = gt_params_add_state(&p->f, nm, OC);
    p->macs += (double)OC * u->OH * u->OW * IC * K * K;
}

/* The sharding units (ZeRO-3), in the canonical order: the stem (unit 0),
 * each residual block (1 + b), the classifier head (unit_head). */
static int unit_head(const convnet *p) { return 1 + p->cfg.nblocks; }

static void place_units(convnet *p) {
    int nb = p->cfg.nblocks;
    for (int u = 0; u <= nb + 1; u++) {
        int a = u == 0 ? 0 : u <= nb ? p->blk[u - 1].first : p->fcw;
        int b = u < nb ? p->blk[u].first : u == nb ? p->fcw : p->f.nt;
        gt_params_unit_begin(&p->f);
        for (int i = a; i < b; i++) gt_params_place(&p->f, i, 0);
    }
}

static size_t align_up(size_t n) { return (n + 255) & ~(size_t)255; }

/* Carves n elements of es bytes from the activation arena (first pass:
 * only counts). */
static void *carve_es(convnet *p, size_t n, size_t es) {
    size_t bytes = align_up(n * es);
    void *r = p->act_mem ? p->act_mem + p->act_off : NULL;
    p->act_off += bytes;
    return r;
}
/* n activations in the storage dtype */
static void *carve(convnet *p, size_t n) { return carve_es(p, n, p->f.es); }
static float *carve_f32(convnet *p, size_t n) { return carve_es(p, n, sizeof(float)); }

/* A conv+BN unit's buffers; shared (block recomputation): its conv and BN
 * outputs are those two shared buffers instead of its own. */
static void cbn_carve(convnet *p, cbn *u, int with_dbn, void *const *shared) {
    size_t n = (size_t)p->B * u->OC * u->OH * u->OW;
    u->conv = shared ? shared[0] : carve(p, n);
    u->bn = shared ? shared[1] : carve(p, n);
    u->mean = carve_f32(p, (size_t)u->OC);
    u->rstd = carve_f32(p, (size_t)u->OC);
    u->dconv = carve(p, n);
    u->dbn = with_dbn ? carve(p, n) : NULL;
}

static void carve_all(convnet *p) {
    const gt_convnet_config *c = &p->cfg;
    p->act_off = 0;
    p->in = carve(p, (size_t)p->B * c->channels * c->height * c->width);
    cbn_carve(p, &p->stem, 1, NULL);
    p->stem_dout = carve(p, (size_t)p->B * p->stem.OC * p->stem.OH * p->stem.OW);
    if (p->recompute) {
        /* every output of a block's units has the block's output shape */
        size_t nmax = 0, cmax = 0;
        for (int b = 0; b < c->nblocks; b++) {
            const cbn *u = &p->blk[b].c2;
            size_t n = (size_t)p->B * u->OC * u->OH * u->OW;
            nmax = n > nmax ? n : nmax;
            cmax = (size_t)u->OC > cmax ? (size_t)u->OC : cmax;
        }
        for (int i = 0; i < 6; i++) p->shared[i] = carve(p, nmax);
        p->run_floats = 2 * cmax;
        p->run_scratch = carve_f32(p, p->run_floats);
    }
    void *const *sh = p->recompute ? p->shared : NULL;
    for (int b = 0; b < c->nblocks; b++) {
        block *k = &p->blk[b];
        size_t n = (size_t)p->B * k->c2.OC * k->c2.OH * k->c2.OW;
        cbn_carve(p, &k->c1, 1, sh);
        cbn_carve(p, &k->c2, 0, sh ? sh + 2 : NULL);
        if (k->proj) cbn_carve(p, &k->pr, 0, sh ? sh + 4 : NULL);
        k->out = carve(p, n);
        k->dout = carve(p, n);
        k->dsum = carve(p, n);
        k->dr1 = carve(p, (size_t)p->B * k->c1.OC * k->c1.OH * k->c1.OW);
    }
    p->pooled = carve(p, (size_t)p->B * p->Cl);
    p->dpooled = carve(p, (size_t)p->B * p->Cl);
    p->logits = carve(p, (size_t)p->B * c->classes);
    p->losses = carve_f32(p, (size_t)p->B);
    p->targets = carve_es(p, (size_t)p->B, sizeof(int32_t));
    p->act_total = p->act_off;
}

static gt_status init_random(gt_model *m, uint64_t seed) {
    convnet *p = NET(m);
    gt_params *f = &p->f;
    float *host = malloc(f->num_params * sizeof(float));
    float *st = malloc((f->state_numel ? f->state_numel : 1) * sizeof(float));
    if (!host || !st) {
        free(host);
        free(st);
        return GT_ERR(GT_ERR_OOM, "out of host memory initialising %zu parameters",
                      f->num_params);
    }
    for (int i = 0; i < f->nt; i++) {
        const gt_params_tensor *t = &f->t[i];
        float *d = host + t->off;
        if (t->ndim == 4) { /* conv: Kaiming normal, fan_out, ReLU gain */
            double fan_out = (double)t->shape[0] * t->shape[2] * t->shape[3];
            gt_rng_fill_normal(d, t->n, 0.0f, (float)sqrt(2.0 / fan_out), seed, (uint64_t)i, 0);
        } else if (i == p->fcw || i == p->fcb) { /* torch.nn.Linear */
            float bound = 1.0f / sqrtf((float)p->Cl);
            gt_rng_fill_uniform(d, t->n, -bound, bound, seed, (uint64_t)i, 0);
        } else { /* BN weight 1, bias 0: names end in .w / .b */
            float v = t->name[strlen(t->name) - 1] == 'w' ? 1.0f : 0.0f;
            for (size_t j = 0; j < t->n; j++) d[j] = v;
        }
    }
    for (int i = 0; i < f->ns; i++) { /* running mean 0, running var 1 */
        float v = (i % 2) ? 1.0f : 0.0f;
        for (size_t j = 0; j < f->s[i].n; j++) st[f->s[i].off + j] = v;
    }
    gt_status s = gt_params_set(f, host);
    if (s == GT_OK) s = gt_params_set_state(f, st);
    free(host);
    free(st);
    return s;
}

/* ---- forward ------------------------------------------------------------------------ */

static const gt_op g_ops[] = {GT_OP_CONV2D_FWD,     GT_OP_CONV2D_BWD,    GT_OP_BATCHNORM_FWD,
                              GT_OP_BATCHNORM_BWD,  GT_OP_RELU_FWD,      GT_OP_RELU_BWD,
                              GT_OP_AVGPOOL_FWD,    GT_OP_AVGPOOL_BWD,   GT_OP_MATMUL_FWD,
                              GT_OP_MATMUL_BWD,     GT_OP_RESIDUAL_FWD,  GT_OP_CLASSIFIER_FWD,
                              GT_OP_CLASSIFIER_BWD};

/* bn(conv(x)) over N images, training or evaluation statistics; `again`
 * (the recompute in the backward): the running statistics it updates are
 * throwaway ones, so the real ones move once per forward, as without it. */
static gt_status cbn_fwd(convnet *p, cbn *u, const void *x, int N, int training, int again) {
    gt_params *f = &p->f;
    const gt_ops *o = f->be->ops;
    gt_conv2d_shape s = u->s;
    s.N = N;
    GT_TRY(o->conv2d_fwd(&f->k, u->conv, x, gt_params_weight(f, u->w, 0), NULL, &s)); // (N,OC,OH,OW)
    float *rm = again ? p->run_scratch : gt_params_state(f, u->rm);
    float *rv = again ? p->run_scratch + u->OC : gt_params_state(f, u->rv);
    return o->batchnorm_fwd(&f->k, u->bn, u->mean, u->rstd, rm, rv, u->conv,
                            gt_params_weight(f, u->bw, 0), gt_params_weight(f, u->bb, 0), N,
                            u->OC, u->OH * u->OW, BN_EPS, BN_MOMENTUM, training);
}

/* Residual block b from its input x up to bn2 and the shortcut's BN: what
 * its backward reads besides its output. Shared by the forward and, with
 * `again`, the recompute before the block's backward (the same ops on the
 * same input: the same bits). */
static gt_status block_forward(convnet *p, int b, const void *x, int N, int training,
                               int again) {
    block *bl = &p->blk[b];
    size_t n1 = (size_t)N * bl->c1.OC * bl->c1.OH * bl->c1.OW;
    GT_TRY(cbn_fwd(p, &bl->c1, x, N, training, again));                    // (N,OC,OH,OW)
    GT_TRY(p->f.be->ops->relu_fwd(&p->f.k, bl->c1.bn, bl->c1.bn, n1));     // r1, in place
    GT_TRY(cbn_fwd(p, &bl->c2, bl->c1.bn, N, training, again));            // (N,OC,OH,OW)
    if (bl->proj) GT_TRY(cbn_fwd(p, &bl->pr, x, N, training, again));
    return GT_OK;
}

/* From dbn (gradient of the BN output): parameter gradients, and dx +=
 * (dx NULL: the input needs none). */
static gt_status cbn_bwd(convnet *p, cbn *u, void *dx, const void *dbn, const void *x, int N) {
    gt_params *f = &p->f;
    const gt_ops *o = f->be->ops;
    gt_backend *be = f->be;
    size_t n = (size_t)N * u->OC * u->OH * u->OW;
    gt_conv2d_shape s = u->s;
    s.N = N;
    GT_TRY(be->memset_zero(be, u->dconv, n * f->es));
    GT_TRY(o->batchnorm_bwd(&f->k, u->dconv, gt_params_grad(f, u->bw, 0), gt_params_grad(f, u->bb, 0), dbn,
                            u->conv, gt_params_weight(f, u->bw, 0), u->mean, u->rstd, N, u->OC,
                            u->OH * u->OW));
    return o->conv2d_bwd(&f->k, dx, gt_params_grad(f, u->w, 0), NULL, u->dconv, x,
                         gt_params_weight(f, u->w, 0), &s);
}

/* The forward up to the logits; the head's unit is left needed for the
 * caller to release (the backward starts with it); `next`: the unit the
 * caller needs after the head (-1: none). */
static gt_status forward_body(gt_model *m, const gt_batch *bt, int need_targets, int training,
                              int next) {
    convnet *p = NET(m);
    gt_params *f = &p->f;
    const gt_convnet_config *c = &p->cfg;
    const gt_ops *o = f->be->ops;
    const gt_kctx *k = &f->k;
    GT_TRY(gt_dense_require(f, "convnet", g_ops, (int)(sizeof g_ops / sizeof g_ops[0])));
    GT_TRY(gt_dense_check_batch(m, bt, need_targets));
    int N = bt->n, K = c->classes;
    GT_TRY(gt_dense_upload_batch(f, &p->stage, bt, (size_t)c->channels * c->height * c->width, p->in,
                                p->targets));
    /* stem: relu(bn(conv(x))), the ReLU in place */
    cbn *st = &p->stem;
    size_t ns = (size_t)N * st->OC * st->OH * st->OW;
    GT_TRY(gt_params_need(f, 0, 1));
    GT_TRY(cbn_fwd(p, st, p->in, N, training, 0));             // (N,S,H,W)
    GT_TRY(gt_params_done(f, 0));
    GT_TRY(o->relu_fwd(k, st->bn, st->bn, ns));
    const void *x = st->bn;
    for (int b = 0; b < c->nblocks; b++) {
        block *bl = &p->blk[b];
        size_t n2 = (size_t)N * bl->c2.OC * bl->c2.OH * bl->c2.OW;
        GT_TRY(gt_params_need(f, 1 + b, 2 + b));
        GT_TRY(block_forward(p, b, x, N, training, 0));
        GT_TRY(gt_params_done(f, 1 + b));
        const void *sc = bl->proj ? bl->pr.bn : x; // projection or identity shortcut
        GT_TRY(o->residual_fwd(k, bl->out, bl->c2.bn, sc, n2));
        GT_TRY(o->relu_fwd(k, bl->out, bl->out, n2));
        x = bl->out;
    }
    GT_TRY(o->avgpool_fwd(k, p->pooled, x, N, p->Cl, p->HWl));           // (N,Cl)
    GT_TRY(gt_params_need(f, unit_head(p), next));
    GT_TRY(o->matmul_fwd(k, p->logits, p->pooled, gt_params_weight(f, p->fcw, 0),
                         gt_params_weight(f, p->fcb, 0), N, p->Cl, K));       // (N,K)
    return GT_OK;
}

static gt_status forward(gt_model *m, const gt_batch *bt, float *mean_loss) {
    convnet *p = NET(m);
    GT_TRY(forward_body(m, bt, 0, m->training, -1));
    GT_TRY(gt_params_done(&p->f, unit_head(p)));
    if (!bt->targets) return GT_OK;
    return gt_dense_class_loss(&p->f, p->losses, p->host_losses, p->logits, p->targets, bt->n,
                              p->cfg.classes, mean_loss);
}

/* ---- backward ----------------------------------------------------------------------- */

static gt_status forward_backward(gt_model *m, const gt_batch *bt, float dloss,
                                  float *mean_loss) {
    convnet *p = NET(m);
    gt_params *f = &p->f;
    const gt_convnet_config *c = &p->cfg;
    const gt_ops *o = f->be->ops;
    const gt_kctx *k = &f->k;
    gt_backend *be = f->be;
    gt_params_backward_end(f); /* a backward an error cut short */
    GT_TRY(forward_body(m, bt, 1, 1, c->nblocks)); /* then the last block's unit */
    int N = bt->n, K = c->classes;
    GT_TRY(o->classifier_bwd(k, p->logits, p->losses, p->logits, p->targets, dloss, N, K, K));
    if (mean_loss) GT_TRY(gt_dense_mean_loss(f, p->losses, p->host_losses, N, mean_loss));
    GT_TRY(gt_params_backward_begin(f)); /* the head's gradient buffer */

    /* head: dpooled (N,Cl), then the last feature map's gradient */
    void *dlast = c->nblocks > 0 ? p->blk[c->nblocks - 1].dout : p->stem_dout;
    size_t es = f->es;
    size_t nl = (size_t)N * p->Cl * p->HWl;
    GT_TRY(o->matmul_bwd(k, p->dpooled /* overwritten */, gt_params_grad(f, p->fcw, 0),
                         gt_params_grad(f, p->fcb, 0), p->logits, p->pooled, gt_params_weight(f, p->fcw, 0),
                         N, p->Cl, K));
    GT_TRY(gt_params_done(f, unit_head(p)));
    GT_TRY(gt_params_ready(f, p->fcw, 0));
    GT_TRY(be->memset_zero(be, dlast, nl * es));
    GT_TRY(o->avgpool_bwd(k, dlast, p->dpooled, N, p->Cl, p->HWl));

    for (int b = c->nblocks - 1; b >= 0; b--) {
        block *bl = &p->blk[b];
        const void *x = b > 0 ? p->blk[b - 1].out : p->stem.bn;   // block input
        void *dx = b > 0 ? p->blk[b - 1].dout : p->stem_dout;     // its gradient
        size_t nin = (size_t)N * bl->c1.s.C * bl->c1.s.H * bl->c1.s.W;
        size_t n1 = (size_t)N * bl->c1.OC * bl->c1.OH * bl->c1.OW;
        size_t n2 = (size_t)N * bl->c2.OC * bl->c2.OH * bl->c2.OW;
        /* block recomputation: the conv and BN outputs again (the top block's
         * are still there from the forward) */
        GT_TRY(gt_params_need(f, 1 + b, b)); /* then the block below's, or the stem's */
        if (p->recompute && b < c->nblocks - 1) GT_TRY(block_forward(p, b, x, N, 1, 1));
        /* out = relu(bn2 + shortcut): dsum goes to both branches */
        GT_TRY(be->memset_zero(be, bl->dsum, n2 * es));
        GT_TRY(o->relu_bwd(k, bl->dsum, bl->out, bl->dout, n2));
        GT_TRY(be->memset_zero(be, bl->dr1, n1 * es));
        GT_TRY(cbn_bwd(p, &bl->c2, bl->dr1, bl->dsum, bl->c1.bn, N));
        GT_TRY(be->memset_zero(be, bl->c1.dbn, n1 * es));
        GT_TRY(o->relu_bwd(k, bl->c1.dbn, bl->c1.bn, bl->dr1, n1));
        GT_TRY(be->memset_zero(be, dx, nin * es));
        GT_TRY(cbn_bwd(p, &bl->c1, dx, bl->c1.dbn, x, N));
        if (bl->proj) GT_TRY(cbn_bwd(p, &bl->pr, dx, bl->dsum, x, N));
        else GT_TRY(o->residual_fwd(k, dx, dx, bl->dsum, nin)); /* dx += dsum */
        GT_TRY(gt_params_done(f, 1 + b));
        GT_TRY(gt_params_ready(f, bl->first, 0));
    }
    /* stem: relu in place over its BN output; the input needs no gradient */
    cbn *st = &p->stem;
    size_t ns = (size_t)N * st->OC * st->OH * st->OW;
    GT_TRY(be->memset_zero(be, st->dbn, ns * es));
    GT_TRY(o->relu_bwd(k, st->dbn, st->bn, p->stem_dout, ns));
    GT_TRY(gt_params_need(f, 0, -1));
    GT_TRY(cbn_bwd(p, st, NULL, st->dbn, p->in, N));
    GT_TRY(gt_params_done(f, 0));
    GT_TRY(gt_params_ready(f, 0, 0));
    gt_params_backward_end(f);
    return GT_OK;
}

static double flops_per_unit(const gt_model *m) { return NET(m)->flops; }
static size_t act_bytes(const gt_model *m) { return NET(m)->act_bytes; }

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

gt_status gt_convnet_new(gt_backend *be, const gt_convnet_config *cfg, gt_dtype dt,
                         gt_model_recompute recompute, const char *name, int max_batch,
                         gt_model **out) {
    *out = NULL;
    GT_TRY(gt_convnet_config_check(cfg));
    if ((int)recompute < 0 || recompute >= GT_MODEL_RECOMPUTE_COUNT)
        return GT_ERR(GT_ERR_INVALID, "recompute mode %d: expected none or block",
                      (int)recompute);
    if (max_batch < 1)
        return GT_ERR(GT_ERR_INVALID, "convnet: the batch (%d) must be >= 1", max_batch);
    gt_model *m = calloc(1, sizeof *m);
    convnet *p = calloc(1, sizeof *p);
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
    gt_model_info *in = &m->info;
    snprintf(in->name, sizeof in->name, "%s", name ? name : "convnet");
    in->family = "convnet";
    in->input = GT_MODEL_INPUT_DENSE;
    in->unit = "images";
    in->units_per_sample = 1;
    in->sample_numel = cfg->channels * cfg->height * cfg->width;
    in->classes = cfg->classes;
    in->max_batch = max_batch;
    in->max_T = 1;
    in->has_state = 1;

    /* tensors in forward order */
    cbn_declare(p, &p->stem, "stem.conv", "stem.bn", cfg->channels, cfg->height, cfg->width,
                cfg->stem, 3, 1);
    int C = cfg->stem, H = p->stem.OH, W = p->stem.OW;
    for (int b = 0; b < cfg->nblocks; b++) {
        block *bl = &p->blk[b];
        char cn[32], bn[32];
        int OC = cfg->block_channels[b], s = cfg->block_stride[b];
        bl->first = p->f.nt;
        snprintf(cn, sizeof cn, "block%d.conv1", b);
        snprintf(bn, sizeof bn, "block%d.bn1", b);
        cbn_declare(p, &bl->c1, cn, bn, C, H, W, OC, 3, s);
        snprintf(cn, sizeof cn, "block%d.conv2", b);
        snprintf(bn, sizeof bn, "block%d.bn2", b);
        cbn_declare(p, &bl->c2, cn, bn, OC, bl->c1.OH, bl->c1.OW, OC, 3, 1);
        bl->proj = s != 1 || OC != C;
        if (bl->proj) {
            snprintf(cn, sizeof cn, "block%d.proj", b);
            snprintf(bn, sizeof bn, "block%d.projbn", b);
            cbn_declare(p, &bl->pr, cn, bn, C, H, W, OC, 1, s);
        }
        C = OC;
        H = bl->c1.OH;
        W = bl->c1.OW;
    }
    p->Cl = C;
    p->HWl = H * W;
    p->fcw = gt_params_add(&p->f, "fc.w", 1, 0, 2, cfg->classes, C, 1, 1);
    p->fcb = gt_params_add(&p->f, "fc.b", 0, 0, 1, cfg->classes, 1, 1, 1);
    p->macs += (double)cfg->classes * C;
    p->flops = 6.0 * p->macs;
    place_units(p);

    gt_status s = gt_params_alloc(&p->f, be, dt);
    if (s == GT_OK) s = gt_ops_probe_dtype(be, dt);
    if (s == GT_OK) {
        carve_all(p); /* sizes only */
        s = gt_backend_alloc(be, p->act_total, (void **)&p->act_mem);
    }
    if (s == GT_OK) {
        carve_all(p);
        p->act_bytes = p->act_total;
        if (p->run_scratch) /* finite throwaway statistics from the start */
            s = be->memset_zero(be, p->run_scratch, p->run_floats * sizeof(float));
        p->host_losses = malloc((size_t)max_batch * sizeof(float));
        if (!p->host_losses) s = GT_ERR(GT_ERR_OOM, "out of host memory for the loss buffer");
    }
    if (s != GT_OK) {
        destroy(m);
        return s;
    }
    *out = m;
    return GT_OK;
}
