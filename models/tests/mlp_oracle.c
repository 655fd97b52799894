/* The MLP against an independent fp64 implementation written here from
 * torch.nn.Linear / GELU (tanh) / ReLU / CrossEntropyLoss (not from the
 * engine's kernels): the loss of a forward pass must agree, and EVERY
 * gradient element must agree with central finite differences of the fp64
 * loss. Both activations, an odd-sized configuration, and depth 0 (a
 * linear classifier).
 *
 * Usage: test_models_mlp_oracle_* BACKEND   (exit 77 when BACKEND is absent)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backend.h"
#include "engine/ops.h"
#include "engine/rng.h"
#include "engine/tests/check.h"
#include "models/mlp/mlp.h"
#include "models/tests/backend_or_skip.h"

static double gelu(double x) {
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
}

/* Mean cross-entropy over the batch; p in the documented order
 * fc0.w fc0.b ... head.w head.b. */
static double oracle_loss(const gt_mlp_config *c, const double *p, const float *x,
                          const int32_t *y, int B) {
    int W = c->width, D = c->in_dim, K = c->classes;
    double *h = malloc((size_t)(W > D ? W : D) * sizeof(double));
    double *z = malloc((size_t)(W > K ? W : K) * sizeof(double));
    double total = 0;
    for (int b = 0; b < B; b++) {
        for (int d = 0; d < D; d++) h[d] = x[(size_t)b * D + d];
        const double *q = p;
        int in = D;
        for (int l = 0; l <= c->depth; l++) {
            int out = l == c->depth ? K : W;
            const double *Wt = q, *bias = q + (size_t)out * in;
            for (int o = 0; o < out; o++) {
                double s = bias[o];
                for (int i = 0; i < in; i++) s += Wt[(size_t)o * in + i] * h[i];
                z[o] = s;
            }
            q = bias + out;
            if (l < c->depth)
                for (int o = 0; o < out; o++)
                    h[o] = c->act == GT_MLP_GELU ? gelu(z[o]) : (z[o] > 0 ? z[o] : 0);
            in = out;
        }
        double mx = -INFINITY, s = 0;
        for (int k = 0; k < K; k++) mx = z[k] > mx ? z[k] : mx;
        for (int k = 0; k < K; k++) s += exp(z[k] - mx);
        total += mx + log(s) - z[y[b]];
    }
    free(h);
    free(z);
    return total / B;
}

static void run(gt_backend *be, const gt_mlp_config *cfg, const char *what) {
    int B = 6;
    gt_model *m = NULL;
    gt_status s = gt_mlp_new(be, cfg, GT_DTYPE_FP32, GT_MODEL_RECOMPUTE_NONE, what, B, &m);
    CHECK_OK(s);
    if (s != GT_OK) return;
    CHECK_OK(gt_model_init_random(m, 3));
    size_t np = gt_model_num_params(m);
    /* the documented layout: names and sizes in forward order */
    size_t expect = 0;
    for (int l = 0; l <= cfg->depth; l++) {
        int in = l == 0 ? cfg->in_dim : cfg->width, out = l == cfg->depth ? cfg->classes : cfg->width;
        char wn[32], bn[32];
        if (l == cfg->depth) {
            snprintf(wn, sizeof wn, "head.w");
            snprintf(bn, sizeof bn, "head.b");
        } else {
            snprintf(wn, sizeof wn, "fc%d.w", l);
            snprintf(bn, sizeof bn, "fc%d.b", l);
        }
        CHECK(strcmp(gt_model_tensor_name(m, 2 * l), wn) == 0, "%s: tensor %d is '%s', want '%s'",
              what, 2 * l, gt_model_tensor_name(m, 2 * l), wn);
        CHECK(strcmp(gt_model_tensor_name(m, 2 * l + 1), bn) == 0, "%s: tensor %d is '%s'",
              what, 2 * l + 1, gt_model_tensor_name(m, 2 * l + 1));
        expect += (size_t)out * in + (size_t)out;
    }
    CHECK(np == expect, "%s: %zu parameters, the layout has %zu", what, np, expect);
    /* the initialisation stays in torch's bound 1/sqrt(fan_in) */
    float *pf = malloc(np * sizeof(float)), *gf = malloc(np * sizeof(float));
    double *pd = malloc(np * sizeof(double));
    CHECK_OK(gt_model_get_params(m, pf));
    double bound0 = 1.0 / sqrt((double)cfg->in_dim);
    for (size_t i = 0; i < (size_t)cfg->width * cfg->in_dim && cfg->depth > 0; i++)
        CHECK(fabs(pf[i]) <= bound0, "%s: fc0.w[%zu] = %g outside +-%g", what, i, pf[i], bound0);
    for (size_t i = 0; i < np; i++) pf[i] = 0.5f * gt_rng_normal(11, 0, i);
    CHECK_OK(gt_model_set_params(m, pf));
    for (size_t i = 0; i < np; i++) pd[i] = pf[i];
    float *x = malloc((size_t)B * cfg->in_dim * sizeof(float));
    int32_t y[6];
    for (int i = 0; i < B * cfg->in_dim; i++) x[i] = gt_rng_normal(5, 1, (uint64_t)i);
    for (int i = 0; i < B; i++) y[i] = (int32_t)(gt_rng_u32(5, 2, (uint64_t)i) % cfg->classes);
    gt_batch bt = {.n = B, .T = 1, .inputs = x, .targets = y};

    float loss = 0, loss2 = 0;
    CHECK_OK(gt_model_forward(m, &bt, &loss));
    double ref = oracle_loss(cfg, pd, x, y, B);
    printf("%s: loss model %.9g oracle %.12g rel err %.3g\n", what, loss, ref,
           fabs(loss - ref) / ref);
    CHECK(fabs(loss - ref) <= 2e-6 * fabs(ref), "%s: forward loss %.9g vs oracle %.12g", what,
          loss, ref);

    CHECK_OK(gt_model_zero_grad(m));
    CHECK_OK(gt_model_forward_backward(m, &bt, 1.0f / B, &loss2));
    CHECK_OK(gt_model_get_grads(m, gf));
    CHECK(loss2 == loss, "%s: forward_backward loss %.9g differs from forward %.9g", what, loss2,
          loss);
    double worst = 0;
    for (int ti = 0; ti < gt_model_num_tensors(m); ti++) {
        size_t off = 0;
        for (int j = 0; j < ti; j++) off += gt_model_tensor_size(m, j);
        size_t n = gt_model_tensor_size(m, ti);
        double gmax = 0;
        for (size_t j = 0; j < n; j++) gmax = fmax(gmax, fabs(gf[off + j]));
        for (size_t j = 0; j < n; j++) { /* every element */
            double *pp = pd + off + j, saved = *pp, h = 1e-5;
            *pp = saved + h;
            double lp = oracle_loss(cfg, pd, x, y, B);
            *pp = saved - h;
            double lm = oracle_loss(cfg, pd, x, y, B);
            *pp = saved;
            double num = (lp - lm) / (2 * h), got = gf[off + j];
            worst = fmax(worst, fabs(got - num) / (gmax > 0 ? gmax : 1.0));
            CHECK(fabs(got - num) <= 1e-7 + 1e-5 * gmax,
                  "%s: d loss / d %s[%zu]: model %.9g, finite difference %.9g (tensor max %.3g)",
                  what, gt_model_tensor_name(m, ti), j, got, num, gmax);
        }
    }
    printf("%s: %zu gradients, worst error %.3g of the tensor's largest gradient\n", what, np,
           worst);
    /* a second forward_backward accumulates: gradients double */
    float *g2 = malloc(np * sizeof(float));
    CHECK_OK(gt_model_forward_backward(m, &bt, 1.0f / B, NULL));
    CHECK_OK(gt_model_get_grads(m, g2));
    size_t bad = 0;
    for (size_t i = 0; i < np; i++) bad += fabsf(g2[i] - 2 * gf[i]) > 1e-6f * (fabsf(gf[i]) + 1e-3f);
    CHECK(bad == 0, "%s: %zu gradients are not twice the first after a second backward", what,
          bad);
    /* a label outside [0, K) is refused, naming it */
    int32_t bady[6];
    memcpy(bady, y, sizeof bady);
    bady[3] = cfg->classes;
    gt_batch bb = bt;
    bb.targets = bady;
    CHECK_STATUS(gt_model_forward(m, &bb, NULL), GT_ERR_INVALID);
    CHECK(strstr(gt_last_error(), "label") != NULL, "message: %s", gt_last_error());
    free(g2);
    free(x);
    free(pf);
    free(gf);
    free(pd);
    gt_model_free(m);
}

int main(int argc, char **argv) {
    const char *backend = argc > 1 ? argv[1] : "cpu";
    gt_backend *be = mt_backend_or_skip(backend, 0);
    gt_mlp_config gelu_cfg = {.in_dim = 7, .classes = 5, .depth = 2, .width = 9,
                              .act = GT_MLP_GELU};
    gt_mlp_config relu_cfg = gelu_cfg;
    relu_cfg.act = GT_MLP_RELU;
    relu_cfg.depth = 3;
    gt_mlp_config lin_cfg = {.in_dim = 4, .classes = 3, .depth = 0, .width = 1,
                             .act = GT_MLP_GELU};
    run(be, &gelu_cfg, "gelu depth 2");
    run(be, &relu_cfg, "relu depth 3");
    run(be, &lin_cfg, "linear (depth 0)");
    if (be->ops->matmul_gelu_fwd && be->ops->matmul_dgelu_bwd) {
        /* GELU layers went through the fused ops: the unfused sequence too,
         * on the same backend with those slots emptied */
        const gt_ops *ops = be->ops;
        gt_ops unfused = *ops;
        unfused.matmul_gelu_fwd = NULL;
        unfused.matmul_dgelu_bwd = NULL;
        be->ops = &unfused;
        run(be, &gelu_cfg, "gelu depth 2, unfused (fused slots emptied)");
        run(be, &lin_cfg, "linear (depth 0), unfused");
        be->ops = ops;
    }
    gt_backend_free(be);
    return check_done("models.mlp_oracle");
}
