/* GPT-2 against an independent fp64 implementation written here from the
 * Hugging Face GPT2LMHeadModel definition (not from the engine's kernels):
 * the loss of a forward pass must agree, and the model's gradients must
 * agree with central finite differences of the fp64 loss.
 *
 * Usage: test_models_gpt2_oracle_* BACKEND   (exit 77 when BACKEND is absent)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backend.h"
#include "engine/ops.h"
#include "engine/rng.h"
#include "engine/tests/check.h"
#include "models/gpt2/gpt2.h"
#include "models/tests/backend_or_skip.h"


typedef struct oracle {
    int L, NH, C, V, Vp, maxT, B, T;
    const double *p[GT_GPT2_NUM_TENSORS];
} oracle;

static void layernorm(double *out, const double *x, const double *w, const double *b, int C) {
    double mean = 0, var = 0;
    for (int i = 0; i < C; i++) mean += x[i];
    mean /= C;
    for (int i = 0; i < C; i++) var += (x[i] - mean) * (x[i] - mean);
    var /= C;
    double rs = 1.0 / sqrt(var + 1e-5);
    for (int i = 0; i < C; i++) out[i] = (x[i] - mean) * rs * w[i] + b[i];
}

/* y(OC) = W(OC,IC) x(IC) + b */
static void linear(double *y, const double *x, const double *W, const double *b, int IC, int OC) {
    for (int o = 0; o < OC; o++) {
        double s = b ? b[o] : 0.0;
        for (int i = 0; i < IC; i++) s += W[(size_t)o * IC + i] * x[i];
        y[o] = s;
    }
}

static double gelu(double x) {
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
}

/* Mean cross-entropy of the whole batch, in fp64. */
static double oracle_loss(const oracle *o, const int32_t *inp, const int32_t *tgt) {
    int C = o->C, T = o->T, NH = o->NH, hs = C / NH;
    double *x = calloc((size_t)T * C, sizeof(double));
    double *h = calloc((size_t)T * C, sizeof(double));
    double *qkv = calloc((size_t)T * 3 * C, sizeof(double));
    double *y = calloc((size_t)T * C, sizeof(double));
    double *tmp = calloc((size_t)4 * C, sizeof(double));
    double *f = calloc((size_t)4 * C, sizeof(double));
    double *logits = calloc((size_t)o->V, sizeof(double));
    double *sc = calloc((size_t)T, sizeof(double));
    double total = 0;
    for (int b = 0; b < o->B; b++) {
        const int32_t *tok = inp + (size_t)b * T;
        for (int t = 0; t < T; t++)
            for (int c = 0; c < C; c++)
                x[t * C + c] = o->p[0][(size_t)tok[t] * C + c] + o->p[1][(size_t)t * C + c];
        for (int l = 0; l < o->L; l++) {
            const double *ln1w = o->p[2] + l * C, *ln1b = o->p[3] + l * C;
            const double *qkvw = o->p[4] + (size_t)l * 3 * C * C, *qkvb = o->p[5] + l * 3 * C;
            const double *apw = o->p[6] + (size_t)l * C * C, *apb = o->p[7] + l * C;
            const double *ln2w = o->p[8] + l * C, *ln2b = o->p[9] + l * C;
            const double *fcw = o->p[10] + (size_t)l * 4 * C * C, *fcb = o->p[11] + l * 4 * C;
            const double *fpw = o->p[12] + (size_t)l * 4 * C * C, *fpb = o->p[13] + l * C;
            for (int t = 0; t < T; t++) {
                layernorm(h + t * C, x + t * C, ln1w, ln1b, C);
                linear(qkv + (size_t)t * 3 * C, h + t * C, qkvw, qkvb, C, 3 * C);
            }
            for (int t = 0; t < T; t++) {
                for (int hd = 0; hd < NH; hd++) {
                    const double *q = qkv + (size_t)t * 3 * C + hd * hs;
                    double mx = -INFINITY;
                    for (int u = 0; u <= t; u++) {
                        const double *k = qkv + (size_t)u * 3 * C + C + hd * hs;
                        double s = 0;
                        for (int i = 0; i < hs; i++) s += q[i] * k[i];
                        sc[u] = s / sqrt((double)hs);
                        if (sc[u] > mx) mx = sc[u];
                    }
                    double z = 0;
                    for (int u = 0; u <= t; u++) z += (sc[u] = exp(sc[u] - mx));
                    for (int i = 0; i < hs; i++) {
                        double s = 0;
                        for (int u = 0; u <= t; u++)
                            s += sc[u] / z * qkv[(size_t)u * 3 * C + 2 * C + hd * hs + i];
                        y[t * C + hd * hs + i] = s;
                    }
                }
            }
            for (int t = 0; t < T; t++) {
                linear(tmp, y + t * C, apw, apb, C, C);
                for (int c = 0; c < C; c++) x[t * C + c] += tmp[c];
                layernorm(h + t * C, x + t * C, ln2w, ln2b, C);
                linear(f, h + t * C, fcw, fcb, C, 4 * C);
                for (int i = 0; i < 4 * C; i++) f[i] = gelu(f[i]);
                linear(tmp, f, fpw, fpb, 4 * C, C);
                for (int c = 0; c < C; c++) x[t * C + c] += tmp[c];
            }
        }
        for (int t = 0; t < T; t++) {
            layernorm(h + t * C, x + t * C, o->p[14], o->p[15], C);
            /* tied head over the real vocabulary only */
            linear(logits, h + t * C, o->p[0], NULL, C, o->V);
            double mx = -INFINITY, z = 0;
            for (int v = 0; v < o->V; v++) mx = logits[v] > mx ? logits[v] : mx;
            for (int v = 0; v < o->V; v++) z += exp(logits[v] - mx);
            total += mx + log(z) - logits[tgt[(size_t)b * T + t]];
        }
    }
    free(x), free(h), free(qkv), free(y), free(tmp), free(f), free(logits), free(sc);
    return total / ((double)o->B * T);
}

/* A model on `be` against the oracle: the loss, and the gradients against
 * central differences. Returns 0 when the model could run (failed CHECKs
 * are counted, not returned), its loss and gradients (np floats, the
 * caller frees them) through the out-parameters. */
static int check_model(gt_backend *be, const char *variant, float *loss_out, float **grads_out,
                       size_t *np_out) {
    printf("%s:\n", variant);
    /* odd sizes on purpose: V < Vp padding, T < maxT, hs = 6 */
    gt_gpt2_config cfg = {.max_seq_len = 11, .vocab_size = 37, .padded_vocab_size = 40,
                          .num_layers = 2, .num_heads = 3, .channels = 18};
    int B = 2, T = 9;
    gt_gpt2 *m = NULL;
    if (gt_gpt2_new(be, &cfg, B, T, &m) != GT_OK || gt_gpt2_init_random(m, 7) != GT_OK) {
        fprintf(stderr, "model: %s\n", gt_last_error());
        return 1;
    }
    size_t np = gt_gpt2_num_params(m);
    float *pf = malloc(np * sizeof(float)), *gf = malloc(np * sizeof(float));
    double *pd = malloc(np * sizeof(double));
    /* GPT-2's init has zero biases and unit LayerNorm weights, which would
     * hide a swapped weight/bias: randomise every parameter instead */
    for (size_t i = 0; i < np; i++) pf[i] = 0.3f * gt_rng_normal(11, 0, i);
    size_t wte_real = (size_t)cfg.vocab_size * cfg.channels;
    for (size_t i = wte_real; i < (size_t)cfg.padded_vocab_size * cfg.channels; i++)
        pf[i] = 100.0f; /* padding rows: must not matter */
    if (gt_gpt2_set_params(m, pf) != GT_OK) {
        fprintf(stderr, "set params: %s\n", gt_last_error());
        return 1;
    }
    for (size_t i = 0; i < np; i++) pd[i] = pf[i];
    int32_t inp[2 * 9], tgt[2 * 9];
    for (int i = 0; i < B * T; i++) {
        inp[i] = (int32_t)(gt_rng_u32(3, 1, (uint64_t)i) % (uint32_t)cfg.vocab_size);
        tgt[i] = (int32_t)(gt_rng_u32(3, 2, (uint64_t)i) % (uint32_t)cfg.vocab_size);
    }
    oracle o = {.L = cfg.num_layers, .NH = cfg.num_heads, .C = cfg.channels,
                .V = cfg.vocab_size, .Vp = cfg.padded_vocab_size, .maxT = cfg.max_seq_len,
                .B = B, .T = T};
    size_t off = 0;
    for (int i = 0; i < GT_GPT2_NUM_TENSORS; i++) {
        o.p[i] = pd + off;
        off += gt_gpt2_tensor_size(m, i);
    }

    /* forward */
    float loss = 0;
    if (gt_gpt2_forward(m, inp, tgt, B, T, &loss) != GT_OK) {
        fprintf(stderr, "forward: %s\n", gt_last_error());
        return 1;
    }
    double ref = oracle_loss(&o, inp, tgt);
    printf("loss: model %.9g oracle %.12g rel err %.3g\n", loss, ref, fabs(loss - ref) / ref);
    CHECK(fabs(loss - ref) <= 2e-6 * fabs(ref), "forward loss %.9g vs oracle %.12g", loss, ref);

    /* backward: d(mean loss)/d(param) against central differences in fp64 */
    float loss2 = 0;
    if (gt_gpt2_zero_grad(m) != GT_OK ||
        gt_gpt2_forward_backward(m, inp, tgt, B, T, 1.0f / (B * T), &loss2) != GT_OK ||
        gt_gpt2_get_grads(m, gf) != GT_OK) {
        fprintf(stderr, "backward: %s\n", gt_last_error());
        return 1;
    }
    CHECK(loss2 == loss, "forward_backward loss %.9g differs from forward %.9g", loss2, loss);
    off = 0;
    double worst = 0;
    for (int ti = 0; ti < GT_GPT2_NUM_TENSORS; ti++) {
        size_t n = gt_gpt2_tensor_size(m, ti);
        size_t lim = ti == 0 ? wte_real : n;
        double gmax = 0;
        for (size_t j = 0; j < lim; j++) gmax = fmax(gmax, fabs(gf[off + j]));
        for (int k = 0; k < 4; k++) {
            size_t j = gt_rng_u32(5, (uint64_t)ti, (uint64_t)k) % lim;
            double *pp = pd + off + j, saved = *pp, h = 1e-5;
            *pp = saved + h;
            double lp = oracle_loss(&o, inp, tgt);
            *pp = saved - h;
            double lm = oracle_loss(&o, inp, tgt);
            *pp = saved;
            double num = (lp - lm) / (2 * h), got = gf[off + j];
            /* fp32 model vs fp64 truth: relative to the tensor's largest gradient */
            double err = fabs(got - num) / (gmax > 0 ? gmax : 1.0);
            worst = fmax(worst, err);
            CHECK(fabs(got - num) <= 1e-7 + 1e-4 * gmax,
                   "d loss / d %s[%zu]: model %.9g, finite difference %.9g (tensor max %.3g)",
                   gt_gpt2_tensor_name(ti), j, got, num, gmax);
        }
        if (ti == 0) /* padding rows of wte get exactly zero gradient */
            for (size_t j = wte_real; j < n; j++)
                CHECK(gf[off + j] == 0.0f, "wte padding gradient [%zu] = %g", j, gf[off + j]);
        off += n;
    }
    printf("gradients: worst error %.3g of the tensor's largest gradient\n", worst);
    gt_gpt2_free(m);
    free(pf), free(pd);
    *loss_out = loss;
    *grads_out = gf;
    *np_out = np;
    return 0;
}

int main(int argc, char **argv) {
    const char *backend = argc > 1 ? argv[1] : "cpu";
    gt_backend *be = mt_backend_or_skip(backend, 0);
    const gt_ops *ops = be->ops;
    int fused = ops->matmul_gelu_fwd && ops->matmul_dgelu_bwd;
    float loss = 0, loss_u = 0, *g = NULL, *g_u = NULL;
    size_t np = 0;
    if (check_model(be, fused ? "MLP through matmul_gelu_fwd / matmul_dgelu_bwd" : "unfused MLP",
                    &loss, &g, &np))
        return 1;
    if (fused) {
        /* The same backend with the fused slots emptied: gpt2 must take the
         * unfused sequence (matmul + gelu ops, the dfch_gelu scratch), pass
         * the oracle too, and agree with the fused run. */
        gt_ops unfused = *ops;
        unfused.matmul_gelu_fwd = NULL;
        unfused.matmul_dgelu_bwd = NULL;
        be->ops = &unfused;
        int rc = check_model(be, "unfused MLP (fused slots emptied)", &loss_u, &g_u, &np);
        be->ops = ops;
        if (rc) return 1;
        double gmax = 0, dmax = 0;
        size_t same = 0;
        for (size_t i = 0; i < np; i++) {
            gmax = fmax(gmax, fabs(g[i]));
            dmax = fmax(dmax, fabs((double)g[i] - g_u[i]));
            same += g[i] == g_u[i];
        }
        printf("fused vs unfused: loss %.9g vs %.9g, max gradient difference %.3g (%.3g of the "
               "largest), %zu of %zu gradients bitwise equal\n",
               loss, loss_u, dmax, gmax > 0 ? dmax / gmax : 0.0, same, np);
        CHECK(fabs((double)loss - loss_u) <= 1e-6 * fabs(loss), "fused loss %.9g, unfused %.9g",
              loss, loss_u);
        CHECK(dmax <= 1e-5 * gmax, "fused and unfused gradients differ by %.3g (largest %.3g)",
              dmax, gmax);
    }
    free(g);
    free(g_u);
    gt_backend_free(be);
    return check_done("models.gpt2_oracle");
}
