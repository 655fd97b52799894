/* Activation recomputation (models/model.h, gt_model_recompute) at the
 * model level, on the backend named by argv[1] (the name is gpt2's, which
 * came first; mlp is checked here too):
 *   - gpt2 with GT_MODEL_RECOMPUTE_BLOCK gives bitwise the losses and the
 *     accumulated gradients of GT_MODEL_RECOMPUTE_NONE (three layers, so
 *     that blocks below the top one are recomputed; two forward_backwards
 *     of different shapes into the same gradients, then an evaluation
 *     forward); in fp32, and in bf16 where the backend stores it;
 *   - its activation bytes fall by (L-1) layers' worth of the block's inner
 *     activations: a layer's bytes measured as (L layers) - (L-1 layers)
 *     without recomputation, less the block output res3 that stays;
 *   - mlp the same (mlp-tiny with GELU, mlp-tiny-relu, mlp-small: four
 *     layers), its activation bytes (depth-1) x B x width values fewer;
 *   - convnet the same (convnet-tiny; resnet-small off ref, which is slow),
 *     the BatchNorm running statistics too (the recompute must not update
 *     them a second time), with fewer activation bytes;
 *   - an unknown mode's name, or value, is refused naming the valid ones.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/tests/check.h"
#include "models/model.h"
#include "models/tests/backend_or_skip.h"

enum { B = 4, T = 16, LAYERS = 3 }; /* B*T = 64: every buffer a multiple of 256 bytes */

static gt_model *make(gt_backend *be, gt_dtype dt, gt_model_recompute rc, int layers) {
    char opts[GT_MODEL_OPTIONS_LEN] = "";
    CHECK_OK(gt_model_option_add(opts, "layers", layers));
    gt_model *m = NULL;
    gt_status s = gt_model_new_opts(be, "gpt2-tiny", opts, dt, rc, B, T, &m);
    if (s == GT_ERR_UNSUPPORTED && dt != GT_DTYPE_FP32) { /* the backend does not store dt */
        printf("skip %s: %s\n", gt_dtype_name(dt), gt_last_error());
        return NULL;
    }
    CHECK(s == GT_OK, "gpt2-tiny layers=%d %s recompute %s: %s", layers, gt_dtype_name(dt),
          gt_model_recompute_name(rc), gt_last_error());
    if (m) CHECK(gt_model_get_recompute(m) == rc, "the model's mode");
    return m;
}

/* Losses of two forward_backwards (full batch, then 2 sequences of 12
 * tokens) and an evaluation forward, and the gradients, into out. */
static void train_once(gt_model *m, float loss[3], float *grads) {
    int32_t tok[B * T + 1];
    uint32_t x = 12345;
    for (int i = 0; i <= B * T; i++) {
        x = x * 1664525u + 1013904223u;
        tok[i] = (int32_t)(x >> 24); /* < 256, gpt2-tiny's vocabulary */
    }
    CHECK_OK(gt_model_init_random(m, 7));
    CHECK_OK(gt_model_zero_grad(m));
    gt_batch full = {.n = B, .T = T, .tokens = tok, .targets = tok + 1};
    gt_batch part = {.n = 2, .T = 12, .tokens = tok + 5, .targets = tok + 6};
    CHECK_OK(gt_model_forward_backward(m, &full, 1.0f / (B * T), &loss[0]));
    CHECK_OK(gt_model_forward_backward(m, &part, 1.0f / 24, &loss[1]));
    CHECK_OK(gt_model_forward(m, &part, &loss[2]));
    CHECK_OK(gt_model_get_grads(m, grads));
}

static void same_bits(gt_backend *be, gt_dtype dt) {
    gt_model *none = make(be, dt, GT_MODEL_RECOMPUTE_NONE, LAYERS);
    gt_model *block = make(be, dt, GT_MODEL_RECOMPUTE_BLOCK, LAYERS);
    if (!none || !block) {
        gt_model_free(none);
        gt_model_free(block);
        return;
    }
    size_t n = gt_model_num_params(none);
    float *ga = malloc(n * sizeof *ga), *gb = malloc(n * sizeof *gb);
    float la[3], lb[3];
    train_once(none, la, ga);
    train_once(block, lb, gb);
    size_t first = n;
    for (size_t i = 0; i < n && first == n; i++)
        if (memcmp(&ga[i], &gb[i], sizeof(float)) != 0) first = i;
    CHECK(memcmp(la, lb, sizeof la) == 0, "%s losses %.9g %.9g %.9g vs %.9g %.9g %.9g",
          gt_dtype_name(dt), la[0], la[1], la[2], lb[0], lb[1], lb[2]);
    CHECK(first == n, "%s gradient %zu of %zu: %.9g without recomputation, %.9g with",
          gt_dtype_name(dt), first, n, first < n ? ga[first] : 0.0, first < n ? gb[first] : 0.0);
    double norm = 0;
    for (size_t i = 0; i < n; i++) norm += (double)ga[i] * ga[i];
    CHECK(norm > 0, "the gradients are not all zero");
    if (first == n && memcmp(la, lb, sizeof la) == 0)
        printf("ok  %s: losses and %zu gradients bitwise equal with recompute block\n",
               gt_dtype_name(dt), n);
    free(ga);
    free(gb);
    gt_model_free(none);
    gt_model_free(block);
}

static void act_bytes(gt_backend *be) {
    gt_model *full = make(be, GT_DTYPE_FP32, GT_MODEL_RECOMPUTE_NONE, LAYERS);
    gt_model *less = make(be, GT_DTYPE_FP32, GT_MODEL_RECOMPUTE_NONE, LAYERS - 1);
    gt_model *block = make(be, GT_DTYPE_FP32, GT_MODEL_RECOMPUTE_BLOCK, LAYERS);
    if (full && less && block) {
        size_t a_full = gt_model_act_bytes(full), a_less = gt_model_act_bytes(less);
        size_t a_block = gt_model_act_bytes(block);
        size_t C = 64, res3 = (size_t)B * T * C * sizeof(float);
        size_t layer = a_full - a_less; /* one layer's activations, res3 included */
        /* ln1, qkv, atty, res2, ln2, fch, fch_gelu, res3: 16C values per
         * token, 4 LayerNorm statistics, the attention state on top */
        CHECK(layer >= (size_t)B * T * (16 * C * sizeof(float) + 4 * sizeof(float)),
              "a layer's activations: %zu bytes", layer);
        size_t want = (size_t)(LAYERS - 1) * (layer - res3);
        CHECK(a_full - a_block == want,
              "recompute block saves %zu bytes of %zu; expected (L-1) x (%zu - %zu) = %zu",
              a_full - a_block, a_full, layer, res3, want);
        printf("ok  activations %zu -> %zu bytes (-%zu: %d layers' inner activations)\n", a_full,
               a_block, a_full - a_block, LAYERS - 1);
    }
    gt_model_free(full);
    gt_model_free(less);
    gt_model_free(block);
}

/* mlp or convnet preset `name` with recompute none and block: losses of
 * two forward_backwards (8 samples, then 5) and an evaluation forward, the
 * accumulated gradients and the state tensors (BatchNorm's running
 * statistics) bitwise equal; activation bytes fewer: for mlp by exactly
 * (L-1) x 8 x width values. */
static void dense_same(gt_backend *be, const char *name, gt_dtype dt) {
    enum { NB = 8 };
    gt_model *none = NULL, *block = NULL;
    gt_status s = gt_model_new_opts(be, name, NULL, dt, GT_MODEL_RECOMPUTE_NONE, NB, 1, &none);
    if (s == GT_ERR_UNSUPPORTED && dt != GT_DTYPE_FP32) {
        printf("skip %s %s: %s\n", name, gt_dtype_name(dt), gt_last_error());
        return;
    }
    CHECK_OK(s);
    CHECK_OK(gt_model_new_opts(be, name, NULL, dt, GT_MODEL_RECOMPUTE_BLOCK, NB, 1, &block));
    if (!none || !block) {
        gt_model_free(none);
        gt_model_free(block);
        return;
    }
    const gt_model_info *in = gt_model_get_info(none);
    int D = in->sample_numel, K = in->classes;
    float *x = malloc((size_t)NB * D * sizeof *x);
    int32_t y[NB];
    uint32_t r = 777;
    for (int i = 0; i < NB * D; i++) {
        r = r * 1664525u + 1013904223u;
        x[i] = (float)(r >> 8) / 16777216.0f - 0.5f;
    }
    for (int i = 0; i < NB; i++) y[i] = (i * 5 + 3) % K;
    gt_batch full = {.n = NB, .T = 1, .inputs = x, .targets = y};
    gt_batch part = {.n = 5, .T = 1, .inputs = x + D, .targets = y + 1};
    size_t n = gt_model_num_params(none);
    size_t ns = gt_model_state_numel(none);
    float *g[2] = {malloc(n * sizeof(float)), malloc(n * sizeof(float))};
    float *st[2] = {malloc((ns + 1) * sizeof(float)), malloc((ns + 1) * sizeof(float))};
    float loss[2][3];
    gt_model *ms[2] = {none, block};
    for (int k = 0; k < 2; k++) {
        CHECK_OK(gt_model_init_random(ms[k], 5));
        CHECK_OK(gt_model_zero_grad(ms[k]));
        CHECK_OK(gt_model_forward_backward(ms[k], &full, 1.0f / NB, &loss[k][0]));
        CHECK_OK(gt_model_forward_backward(ms[k], &part, 1.0f / 5, &loss[k][1]));
        CHECK_OK(gt_model_forward(ms[k], &part, &loss[k][2]));
        CHECK_OK(gt_model_get_grads(ms[k], g[k]));
        if (ns) CHECK_OK(gt_model_get_state(ms[k], st[k]));
    }
    int same = memcmp(loss[0], loss[1], sizeof loss[0]) == 0 &&
               memcmp(g[0], g[1], n * sizeof(float)) == 0 &&
               memcmp(st[0], st[1], ns * sizeof(float)) == 0;
    CHECK(same, "%s %s: losses %.9g %.9g vs %.9g %.9g, or gradients or state differ", name,
          gt_dtype_name(dt), loss[0][0], loss[0][1], loss[1][0], loss[1][1]);
    size_t want = 0, got = gt_model_act_bytes(none) - gt_model_act_bytes(block);
    if (strcmp(in->family, "mlp") == 0) {
        int32_t f[GT_MODEL_CONFIG_FIELDS];
        gt_model_config_fields(none, f); /* in_dim, classes, depth, width, activation */
        want = (size_t)(f[2] - 1) * NB * (size_t)f[3] * gt_dtype_size(dt);
        CHECK(got == want, "%s: recompute block saves %zu activation bytes, expected (L-1) x B "
                           "x W = %zu",
              name, got, want);
    } else {
        CHECK(gt_model_act_bytes(block) < gt_model_act_bytes(none),
              "%s: %zu activation bytes with recompute block, %zu without", name,
              gt_model_act_bytes(block), gt_model_act_bytes(none));
        want = got;
    }
    if (same && got == want)
        printf("ok  %s %s: bitwise equal with recompute block, %zu activation bytes fewer\n",
               name, gt_dtype_name(dt), got);
    free(x);
    free(g[0]);
    free(g[1]);
    free(st[0]);
    free(st[1]);
    gt_model_free(none);
    gt_model_free(block);
}

static void refusals(gt_backend *be) {
    gt_model *m = NULL;
    CHECK_STATUS(gt_model_new_opts(be, "convnet-tiny", NULL, GT_DTYPE_FP32,
                                   (gt_model_recompute)7, 2, 1, &m),
                 GT_ERR_INVALID);
    CHECK(strstr(gt_last_error(), "none or block"), "message '%s'", gt_last_error());
    CHECK(m == NULL, "no model on a refusal");
    gt_model_recompute rc = GT_MODEL_RECOMPUTE_NONE;
    CHECK_STATUS(gt_model_recompute_parse("blocks", &rc), GT_ERR_INVALID);
    CHECK(strstr(gt_last_error(), "'blocks'") && strstr(gt_last_error(), "none") &&
              strstr(gt_last_error(), "block"),
          "message '%s'", gt_last_error());
    CHECK_OK(gt_model_recompute_parse("block", &rc));
    CHECK(rc == GT_MODEL_RECOMPUTE_BLOCK, "parse block");
    CHECK(strcmp(gt_model_recompute_name(GT_MODEL_RECOMPUTE_NONE), "none") == 0, "name");
}

int main(int argc, char **argv) {
    const char *name = argc > 1 ? argv[1] : "cpu";
    gt_backend *be = mt_backend_or_skip(name, 0);
    same_bits(be, GT_DTYPE_FP32);
    same_bits(be, GT_DTYPE_BF16);
    act_bytes(be);
    const char *dense[] = {"mlp-tiny", "mlp-tiny-relu", "mlp-small", "convnet-tiny",
                           "resnet-small"};
    for (int i = 0; i < 5; i++) {
        if (strcmp(dense[i], "resnet-small") == 0 && strcmp(name, "ref") == 0) continue;
        dense_same(be, dense[i], GT_DTYPE_FP32);
        dense_same(be, dense[i], GT_DTYPE_BF16);
    }
    refusals(be);
    gt_backend_free(be);
    return check_done("models.gpt2_recompute");
}
