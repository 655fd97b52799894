/* The ConvNet against an independent fp64 implementation written here from
 * torch.nn.Conv2d / BatchNorm2d / ReLU / AdaptiveAvgPool2d(1) / Linear /
 * CrossEntropyLoss and torchvision's BasicBlock (not from the engine's
 * kernels), on an odd-sized configuration with an identity block and a
 * stride-2 projection block, non-square images:
 *   - the training-mode loss agrees;
 *   - EVERY gradient element agrees with central finite differences of the
 *     fp64 training-mode loss (BatchNorm with batch statistics);
 *   - the running statistics after two training forwards are the oracle's
 *     (momentum 0.1, unbiased variance);
 *   - evaluation mode normalises with those running statistics (the oracle's
 *     evaluation loss), differs from the training loss, and leaves the
 *     running statistics untouched.
 *
 * Usage: test_models_convnet_oracle_* BACKEND   (exit 77 when BACKEND is absent)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backend.h"
#include "engine/rng.h"
#include "engine/tests/check.h"
#include "models/convnet/convnet.h"
#include "models/tests/backend_or_skip.h"

/* ---- fp64 layers ------------------------------------------------------------------ */

typedef struct map {
    int N, C, H, W;
    double *v; /* (N, C, H, W) */
} map;

static map map_new(int N, int C, int H, int W) {
    map m = {N, C, H, W, calloc((size_t)N * C * H * W, sizeof(double))};
    return m;
}
#define AT(m, n, c, y, x) ((m).v[(((size_t)(n) * (m).C + (c)) * (m).H + (y)) * (m).W + (x)])

static map conv(const map *in, const double *w, int OC, int K, int stride) {
    int pad = K / 2;
    int OH = (in->H + 2 * pad - K) / stride + 1, OW = (in->W + 2 * pad - K) / stride + 1;
    map o = map_new(in->N, OC, OH, OW);
    for (int n = 0; n < in->N; n++)
        for (int oc = 0; oc < OC; oc++)
            for (int oy = 0; oy < OH; oy++)
                for (int ox = 0; ox < OW; ox++) {
                    double s = 0;
                    for (int c = 0; c < in->C; c++)
                        for (int ky = 0; ky < K; ky++)
                            for (int kx = 0; kx < K; kx++) {
                                int y = oy * stride - pad + ky, x = ox * stride - pad + kx;
                                if (y < 0 || y >= in->H || x < 0 || x >= in->W) continue;
                                s += w[((size_t)(oc * in->C + c) * K + ky) * K + kx] *
                                     AT(*in, n, c, y, x);
                            }
                    AT(o, n, oc, oy, ox) = s;
                }
    return o;
}

/* In place. training: batch statistics (biased variance), and rm/rv
 * updated with the unbiased one; else rm/rv normalise. */
static void bnorm(map *m, const double *w, const double *b, double *rm, double *rv,
                  int training) {
    double cnt = (double)m->N * m->H * m->W;
    for (int c = 0; c < m->C; c++) {
        double mean = 0, var = 0;
        if (training) {
            for (int n = 0; n < m->N; n++)
                for (int y = 0; y < m->H; y++)
                    for (int x = 0; x < m->W; x++) mean += AT(*m, n, c, y, x);
            mean /= cnt;
            for (int n = 0; n < m->N; n++)
                for (int y = 0; y < m->H; y++)
                    for (int x = 0; x < m->W; x++) {
                        double d = AT(*m, n, c, y, x) - mean;
                        var += d * d;
                    }
            double unbiased = cnt > 1 ? var / (cnt - 1) : rv[c];
            var /= cnt;
            rm[c] = 0.9 * rm[c] + 0.1 * mean;
            rv[c] = 0.9 * rv[c] + 0.1 * unbiased;
        } else {
            mean = rm[c];
            var = rv[c];
        }
        double r = 1.0 / sqrt(var + 1e-5);
        for (int n = 0; n < m->N; n++)
            for (int y = 0; y < m->H; y++)
                for (int x = 0; x < m->W; x++)
                    AT(*m, n, c, y, x) = (AT(*m, n, c, y, x) - mean) * r * w[c] + b[c];
    }
}

static void relu(map *m) {
    size_t n = (size_t)m->N * m->C * m->H * m->W;
    for (size_t i = 0; i < n; i++) m->v[i] = m->v[i] > 0 ? m->v[i] : 0;
}

/* ---- the network, parameters walked in the documented order --------------------------- */

typedef struct walker {
    const double *p;
    double *st; /* running mean, var per BN, in order */
} walker;

static const double *take(walker *w, size_t n) {
    const double *r = w->p;
    w->p += n;
    return r;
}

/* conv (no bias) -> BN */
static map conv_bn(walker *wk, const map *in, int OC, int K, int stride, int training) {
    const double *w = take(wk, (size_t)OC * in->C * K * K);
    map o = conv(in, w, OC, K, stride);
    const double *bw = take(wk, (size_t)OC), *bb = take(wk, (size_t)OC);
    double *rm = wk->st, *rv = wk->st + OC;
    wk->st += 2 * OC;
    bnorm(&o, bw, bb, rm, rv, training);
    return o;
}

/* Mean cross-entropy; `state` (running statistics, documented order) is
 * read, and in training mode updated. */
static double oracle_loss(const gt_convnet_config *c, const double *p, double *state,
                          const float *x, const int32_t *y, int N, int training) {
    walker wk = {p, state};
    map in = map_new(N, c->channels, c->height, c->width);
    for (size_t i = 0; i < (size_t)N * c->channels * c->height * c->width; i++) in.v[i] = x[i];
    map h = conv_bn(&wk, &in, c->stem, 3, 1, training);
    relu(&h);
    free(in.v);
    for (int b = 0; b < c->nblocks; b++) {
        int OC = c->block_channels[b], s = c->block_stride[b];
        map a = conv_bn(&wk, &h, OC, 3, s, training);
        relu(&a);
        map o = conv_bn(&wk, &a, OC, 3, 1, training);
        free(a.v);
        size_t n = (size_t)o.N * o.C * o.H * o.W;
        if (s != 1 || OC != h.C) {
            map sc = conv_bn(&wk, &h, OC, 1, s, training);
            for (size_t i = 0; i < n; i++) o.v[i] += sc.v[i];
            free(sc.v);
        } else {
            for (size_t i = 0; i < n; i++) o.v[i] += h.v[i];
        }
        relu(&o);
        free(h.v);
        h = o;
    }
    int K = c->classes;
    const double *fw = take(&wk, (size_t)K * h.C), *fb = take(&wk, (size_t)K);
    double total = 0;
    double *pooled = calloc((size_t)h.C, sizeof(double)), *z = calloc((size_t)K, sizeof(double));
    for (int n = 0; n < N; n++) {
        for (int ch = 0; ch < h.C; ch++) {
            double s = 0;
            for (int yy = 0; yy < h.H; yy++)
                for (int xx = 0; xx < h.W; xx++) s += AT(h, n, ch, yy, xx);
            pooled[ch] = s / (h.H * h.W);
        }
        double mx = -INFINITY, se = 0;
        for (int k = 0; k < K; k++) {
            double s = fb[k];
            for (int ch = 0; ch < h.C; ch++) s += fw[(size_t)k * h.C + ch] * pooled[ch];
            z[k] = s;
            mx = s > mx ? s : mx;
        }
        for (int k = 0; k < K; k++) se += exp(z[k] - mx);
        total += mx + log(se) - z[y[n]];
    }
    free(pooled);
    free(z);
    free(h.v);
    return total / N;
}

static const char *const g_expect_names[] = {
    "stem.conv.w",      "stem.bn.w",       "stem.bn.b",       "block0.conv1.w",
    "block0.bn1.w",     "block0.bn1.b",    "block0.conv2.w",  "block0.bn2.w",
    "block0.bn2.b",     "block1.conv1.w",  "block1.bn1.w",    "block1.bn1.b",
    "block1.conv2.w",   "block1.bn2.w",    "block1.bn2.b",    "block1.proj.w",
    "block1.projbn.w",  "block1.projbn.b", "fc.w",            "fc.b"};

int main(int argc, char **argv) {
    const char *backend = argc > 1 ? argv[1] : "cpu";
    gt_backend *be = mt_backend_or_skip(backend, 0);
    /* odd sizes on purpose: 2 channels, 6x5 images, an identity block and a
     * stride-2 projection block (6x5 -> 3x3) */
    gt_convnet_config cfg = {.channels = 2, .height = 6, .width = 5, .classes = 3, .stem = 3,
                             .nblocks = 2, .block_channels = {3, 4}, .block_stride = {1, 2}};
    int N = 4;
    gt_model *m = NULL;
    if (gt_convnet_new(be, &cfg, GT_DTYPE_FP32, GT_MODEL_RECOMPUTE_NONE, "oracle", N, &m) != GT_OK ||
        gt_model_init_random(m, 7) != GT_OK) {
        fprintf(stderr, "model: %s\n", gt_last_error());
        return 1;
    }
    int nt = gt_model_num_tensors(m);
    CHECK(nt == (int)(sizeof g_expect_names / sizeof g_expect_names[0]), "%d tensors", nt);
    for (int i = 0; i < nt && i < 20; i++)
        CHECK(strcmp(gt_model_tensor_name(m, i), g_expect_names[i]) == 0,
              "tensor %d is '%s', the documented layout says '%s'", i,
              gt_model_tensor_name(m, i), g_expect_names[i]);
    size_t np = gt_model_num_params(m), ns = gt_model_state_numel(m);
    CHECK(gt_model_num_state_tensors(m) == 2 * 6, "%d state tensors, want 12 (6 BN)",
          gt_model_num_state_tensors(m));
    float *st0 = malloc(ns * sizeof(float));
    CHECK_OK(gt_model_get_state(m, st0));
    /* init: running mean 0, var 1; BN weight 1, bias 0 */
    size_t zeros = 0, ones = 0;
    for (size_t i = 0; i < ns; i++) zeros += st0[i] == 0.0f, ones += st0[i] == 1.0f;
    CHECK(zeros == ns / 2 && ones == ns / 2, "initial running stats: %zu zeros %zu ones of %zu",
          zeros, ones, ns);

    float *pf = malloc(np * sizeof(float)), *gf = malloc(np * sizeof(float));
    double *pd = malloc(np * sizeof(double));
    /* every parameter random (BN weights around 1), so that a swapped weight
     * and bias or a wrong tensor shows */
    size_t off = 0;
    for (int i = 0; i < nt; i++) {
        size_t n = gt_model_tensor_size(m, i);
        int is_bnw = strstr(gt_model_tensor_name(m, i), "bn") &&
                     gt_model_tensor_name(m, i)[strlen(gt_model_tensor_name(m, i)) - 1] == 'w';
        for (size_t j = 0; j < n; j++)
            pf[off + j] = (is_bnw ? 1.0f : 0.0f) + 0.5f * gt_rng_normal(11, (uint64_t)i, j);
        off += n;
    }
    CHECK_OK(gt_model_set_params(m, pf));
    for (size_t i = 0; i < np; i++) pd[i] = pf[i];
    size_t numel = (size_t)cfg.channels * cfg.height * cfg.width;
    float *x = malloc(N * numel * sizeof(float));
    int32_t y[4];
    for (size_t i = 0; i < N * numel; i++) x[i] = gt_rng_normal(5, 1, i);
    for (int i = 0; i < N; i++) y[i] = (int32_t)(gt_rng_u32(5, 2, (uint64_t)i) % cfg.classes);
    gt_batch bt = {.n = N, .T = 1, .inputs = x, .targets = y};

    /* 1. training-mode forward */
    double *sd = malloc(ns * sizeof(double)), *scratch = malloc(ns * sizeof(double));
    for (size_t i = 0; i < ns; i++) sd[i] = st0[i];
    float loss = 0, loss2 = 0;
    CHECK_OK(gt_model_forward(m, &bt, &loss));
    double ref = oracle_loss(&cfg, pd, sd, x, y, N, 1);
    printf("train loss: model %.9g oracle %.12g rel err %.3g\n", loss, ref,
           fabs(loss - ref) / ref);
    CHECK(fabs(loss - ref) <= 5e-6 * fabs(ref), "forward loss %.9g vs oracle %.12g", loss, ref);

    /* 2. every gradient against central differences (statistics of the batch) */
    CHECK_OK(gt_model_zero_grad(m));
    CHECK_OK(gt_model_forward_backward(m, &bt, 1.0f / N, &loss2));
    (void)oracle_loss(&cfg, pd, sd, x, y, N, 1); /* the second running-stat update */
    CHECK_OK(gt_model_get_grads(m, gf));
    CHECK(loss2 == loss, "forward_backward loss %.9g differs from forward %.9g", loss2, loss);
    double worst = 0;
    off = 0;
    for (int ti = 0; ti < nt; ti++) {
        size_t n = gt_model_tensor_size(m, ti);
        double gmax = 0;
        for (size_t j = 0; j < n; j++) gmax = fmax(gmax, fabs(gf[off + j]));
        for (size_t j = 0; j < n; j++) {
            double *pp = pd + off + j, saved = *pp, h = 1e-5;
            memcpy(scratch, sd, ns * sizeof(double));
            *pp = saved + h;
            double lp = oracle_loss(&cfg, pd, scratch, x, y, N, 1);
            memcpy(scratch, sd, ns * sizeof(double));
            *pp = saved - h;
            double lm = oracle_loss(&cfg, pd, scratch, x, y, N, 1);
            *pp = saved;
            double num = (lp - lm) / (2 * h), got = gf[off + j];
            worst = fmax(worst, fabs(got - num) / (gmax > 0 ? gmax : 1.0));
            CHECK(fabs(got - num) <= 1e-7 + 1e-4 * gmax,
                  "d loss / d %s[%zu]: model %.9g, finite difference %.9g (tensor max %.3g)",
                  gt_model_tensor_name(m, ti), j, got, num, gmax);
        }
        off += n;
    }
    printf("gradients: %zu checked, worst error %.3g of the tensor's largest gradient\n", np,
           worst);

    /* 3. running statistics after two training forwards */
    float *st = malloc(ns * sizeof(float));
    CHECK_OK(gt_model_get_state(m, st));
    double worst_st = 0;
    for (size_t i = 0, t = 0, end = gt_model_state_size(m, 0); i < ns; i++) {
        while (i >= end) end += gt_model_state_size(m, (int)++t);
        double e = fabs(st[i] - sd[i]) / (fabs(sd[i]) + 1e-3);
        worst_st = fmax(worst_st, e);
        CHECK(fabs(st[i] - sd[i]) <= 1e-5 * (fabs(sd[i]) + 1e-2),
              "running statistic %zu (%s): model %.9g oracle %.12g", i,
              gt_model_state_name(m, (int)t), st[i], sd[i]);
    }
    printf("running statistics: worst relative error %.3g\n", worst_st);

    /* 4. evaluation mode: running statistics, which it leaves alone */
    gt_model_set_training(m, 0);
    CHECK(gt_model_training(m) == 0, "evaluation mode did not stick");
    float eval_loss = 0;
    CHECK_OK(gt_model_forward(m, &bt, &eval_loss));
    double eval_ref = oracle_loss(&cfg, pd, sd, x, y, N, 0);
    printf("eval loss: model %.9g oracle %.12g (train %.9g)\n", eval_loss, eval_ref, loss);
    CHECK(fabs(eval_loss - eval_ref) <= 5e-6 * fabs(eval_ref), "eval loss %.9g vs oracle %.12g",
          eval_loss, eval_ref);
    CHECK(fabs(eval_loss - loss) > 1e-3, "eval loss %.9g equals the training loss %.9g: the "
          "running statistics are not in use", eval_loss, loss);
    float *st2 = malloc(ns * sizeof(float));
    CHECK_OK(gt_model_get_state(m, st2));
    CHECK(memcmp(st, st2, ns * sizeof(float)) == 0, "an evaluation forward changed the running "
                                                    "statistics");
    /* set_state round trip: evaluation with the initial statistics is the
     * oracle's with them */
    CHECK_OK(gt_model_set_state(m, st0));
    for (size_t i = 0; i < ns; i++) sd[i] = st0[i];
    CHECK_OK(gt_model_forward(m, &bt, &eval_loss));
    eval_ref = oracle_loss(&cfg, pd, sd, x, y, N, 0);
    CHECK(fabs(eval_loss - eval_ref) <= 5e-6 * fabs(eval_ref),
          "eval loss after set_state %.9g vs oracle %.12g", eval_loss, eval_ref);
    gt_model_set_training(m, 1);

    free(st), free(st2), free(st0), free(sd), free(scratch);
    free(pf), free(gf), free(pd), free(x);
    gt_model_free(m);
    gt_backend_free(be);
    return check_done("models.convnet_oracle");
}
