/* The generic model interface (models/model.h):
 *   - gpt2 through gt_model_new is gt_gpt2 itself: the same loss bits, the
 *     same gradients, tensors, FLOPs, find_nonfinite location;
 *   - the grad hook of mlp and convnet reports frontiers that only go down,
 *     end at 0, and each time the gradients above the frontier are final
 *     (they no longer change until the backward ends);
 *   - info, config fields, unit names;
 *   - refusals: unknown preset (naming them all), fp16 for a dense model, a
 *     dense batch for gpt2 and a token batch for a dense model, too large a
 *     batch, a mlp / convnet task for gpt2.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backend.h"
#include "engine/rng.h"
#include "engine/tests/check.h"
#include "models/gpt2/gpt2.h"
#include "models/model.h"

static void gpt2_same(gt_backend *be) {
    int B = 2, T = 16;
    gt_gpt2_config cfg;
    CHECK_OK(gt_gpt2_preset("gpt2-tiny", &cfg));
    gt_gpt2 *g = NULL;
    gt_model *m = NULL;
    CHECK_OK(gt_gpt2_new(be, &cfg, B, T, &g));
    CHECK_OK(gt_model_new(be, "gpt2-tiny", B, T, &m));
    if (!g || !m) return;
    CHECK_OK(gt_gpt2_init_random(g, 9));
    CHECK_OK(gt_model_init_random(m, 9));
    const gt_model_info *in = gt_model_get_info(m);
    CHECK(strcmp(in->family, "gpt2") == 0 && strcmp(in->unit, "tokens") == 0 &&
              in->units_per_sample == T && in->classes == cfg.vocab_size &&
              in->input == GT_MODEL_INPUT_TOKENS && !in->has_state,
          "gpt2 info: %s %s %d %d", in->family, in->unit, in->units_per_sample, in->classes);
    CHECK(gt_model_dtype(m) == GT_DTYPE_FP32, "gpt2 dtype");
    CHECK(gt_model_num_tensors(m) == GT_GPT2_NUM_TENSORS, "tensors");
    for (int i = 0; i < GT_GPT2_NUM_TENSORS; i++)
        CHECK(strcmp(gt_model_tensor_name(m, i), gt_gpt2_tensor_name(i)) == 0 &&
                  gt_model_tensor_size(m, i) == gt_gpt2_tensor_size(g, i),
              "tensor %d", i);
    CHECK(gt_model_flops_per_unit(m) == gt_gpt2_flops_per_token(g, T), "flops per token");
    CHECK(gt_model_num_state_tensors(m) == 0 && gt_model_state_numel(m) == 0 &&
              gt_model_state_buffer(m) == NULL,
          "gpt2 has no state");
    int32_t f[GT_MODEL_CONFIG_FIELDS];
    gt_model_config_fields(m, f);
    CHECK(f[0] == cfg.max_seq_len && f[5] == cfg.channels, "config fields");
    int32_t tok[32], tgt[32];
    for (int i = 0; i < B * T; i++) {
        tok[i] = (int32_t)(gt_rng_u32(1, 0, (uint64_t)i) % 256);
        tgt[i] = (int32_t)(gt_rng_u32(1, 1, (uint64_t)i) % 256);
    }
    float la = 0, lb = 0;
    gt_batch b = {.n = B, .T = T, .tokens = tok, .targets = tgt};
    CHECK_OK(gt_gpt2_zero_grad(g));
    CHECK_OK(gt_gpt2_forward_backward(g, tok, tgt, B, T, 1.0f / (B * T), &la));
    CHECK_OK(gt_model_zero_grad(m));
    CHECK_OK(gt_model_forward_backward(m, &b, 1.0f / (B * T), &lb));
    CHECK(memcmp(&la, &lb, sizeof la) == 0, "gpt2 loss %.9g through the interface %.9g", la, lb);
    size_t np = gt_model_num_params(m);
    float *ga = malloc(np * sizeof(float)), *gb = malloc(np * sizeof(float));
    CHECK_OK(gt_gpt2_get_grads(g, ga));
    CHECK_OK(gt_model_get_grads(m, gb));
    CHECK(memcmp(ga, gb, np * sizeof(float)) == 0, "gpt2 gradients differ through the interface");
    /* a NaN planted in the gradients is found and named like gpt2 does */
    float nan = NAN;
    size_t x = np / 2;
    CHECK_OK(be->copy_to_device(be, (float *)gt_model_grads_buffer(m) + x, &nan, sizeof nan));
    int found = 0;
    float v = 0;
    gt_model_loc loc;
    CHECK_OK(gt_model_find_nonfinite(m, gt_model_grads_buffer(m), gt_model_dtype(m), 0, np,
                                     &found, &loc, &v));
    char name[96];
    gt_model_loc_format(m, &loc, name, sizeof name);
    gt_gpt2_loc gl;
    gt_gpt2_locate(g, x, &gl);
    CHECK(found && loc.internal == x && loc.flat == gl.flat && loc.tensor == gl.tensor,
          "NaN at %zu: found %d at %zu (%s)", x, found, loc.internal, name);
    printf("gpt2 through the interface: same loss %.9g and gradients; NaN found at %s\n", lb,
           name);
    /* a dense batch is refused */
    float dense[4] = {0};
    gt_batch bad = {.n = 1, .T = 1, .inputs = dense, .targets = tgt};
    CHECK_STATUS(gt_model_forward(m, &bad, NULL), GT_ERR_INVALID);
    gt_task_config tc;
    CHECK_STATUS(gt_model_task(m, 1, &tc), GT_ERR_INVALID);
    free(ga);
    free(gb);
    gt_gpt2_free(g);
    gt_model_free(m);
}

typedef struct hook_log {
    gt_model *m;
    size_t last;
    int calls, bad;
    float *snap;
    size_t snap_from;
} hook_log;

static gt_status hook(void *ctx, size_t frontier) {
    hook_log *h = ctx;
    if (frontier > h->last) h->bad++;
    h->last = frontier;
    h->calls++;
    /* remember the gradients from the first frontier on: they must not change later */
    if (h->calls == 1) {
        size_t np = gt_model_num_params(h->m);
        h->snap_from = frontier;
        h->snap = malloc(np * sizeof(float));
        GT_TRY(gt_model_get_grads(h->m, h->snap));
    }
    return GT_OK;
}

static void dense_iface(gt_backend *be, const char *name, const char *unit, int has_state) {
    int B = 4;
    gt_model *m = NULL;
    CHECK_OK(gt_model_new(be, name, B, 1, &m));
    if (!m) return;
    const gt_model_info *in = gt_model_get_info(m);
    CHECK(strcmp(in->unit, unit) == 0 && in->input == GT_MODEL_INPUT_DENSE &&
              in->has_state == has_state && strcmp(in->name, name) == 0,
          "%s info: unit %s has_state %d", name, in->unit, in->has_state);
    CHECK((gt_model_state_numel(m) > 0) == has_state, "%s state", name);
    CHECK(gt_model_flops_per_unit(m) > 6.0 * 0.5 * gt_model_num_params(m),
          "%s: %g FLOPs per sample for %zu parameters", name, gt_model_flops_per_unit(m),
          gt_model_num_params(m));
    CHECK_OK(gt_model_init_random(m, 1));
    gt_task_config tc;
    gt_task *t = NULL;
    CHECK_OK(gt_model_task(m, 1, &tc));
    CHECK_OK(gt_task_new(&tc, &t));
    if (!t) return;
    CHECK((int)gt_task_sample_numel(t) == in->sample_numel, "%s: the task's samples have %zu "
          "values, the model reads %d", name, gt_task_sample_numel(t), in->sample_numel);
    float *x = malloc((size_t)B * in->sample_numel * sizeof(float));
    int32_t y[4];
    gt_task_fill(t, 0, B, x, y);
    gt_batch b = {.n = B, .T = 1, .inputs = x, .targets = y};
    hook_log h = {.m = m, .last = (size_t)-1};
    gt_model_set_grad_hook(m, hook, &h);
    CHECK_OK(gt_model_zero_grad(m));
    CHECK_OK(gt_model_forward_backward(m, &b, 1.0f / B, NULL));
    gt_model_set_grad_hook(m, NULL, NULL);
    size_t np = gt_model_num_params(m);
    CHECK(h.calls >= 2 && h.bad == 0 && h.last == 0, "%s hook: %d calls, %d going up, last %zu",
          name, h.calls, h.bad, h.last);
    if (h.snap) {
        float *g = malloc(np * sizeof(float));
        CHECK_OK(gt_model_get_grads(m, g));
        CHECK(memcmp(g + h.snap_from, h.snap + h.snap_from, (np - h.snap_from) * sizeof(float)) ==
                  0,
              "%s: gradients above the first frontier %zu changed after the hook", name,
              h.snap_from);
        free(g);
        free(h.snap);
    }
    /* a token batch, too large a batch, fp16 */
    int32_t tok[4] = {0};
    gt_batch tb = {.n = B, .T = 1, .tokens = tok, .targets = y};
    CHECK_STATUS(gt_model_forward(m, &tb, NULL), GT_ERR_INVALID);
    float *big = calloc((size_t)(B + 1) * in->sample_numel, sizeof(float));
    int32_t by[5] = {0};
    gt_batch bb = {.n = B + 1, .T = 1, .inputs = big, .targets = by};
    CHECK_STATUS(gt_model_forward(m, &bb, NULL), GT_ERR_INVALID);
    CHECK(strstr(gt_last_error(), "at most") != NULL, "message: %s", gt_last_error());
    gt_model *m16 = NULL;
    CHECK_STATUS(gt_model_new_dt(be, name, GT_DTYPE_FP16, B, 1, &m16), GT_ERR_UNSUPPORTED);
    free(big);
    free(x);
    gt_task_free(t);
    gt_model_free(m);
    printf("%s: hook frontiers fall to 0 in %d calls; info and refusals ok\n", name, h.calls);
}

int main(void) {
    gt_backend *be = NULL;
    gt_backend_config bc = {.threads = 1, .device = -1};
    if (gt_backend_new("cpu", &bc, &be) != GT_OK) {
        fprintf(stderr, "cpu backend: %s\n", gt_last_error());
        return 1;
    }
    gpt2_same(be);
    dense_iface(be, "mlp-tiny", "samples", 0);
    dense_iface(be, "convnet-tiny", "images", 1);
    gt_model *m = NULL;
    CHECK_STATUS(gt_model_new(be, "resnet-huge", 1, 1, &m), GT_ERR_INVALID);
    CHECK(strstr(gt_last_error(), "resnet-small") && strstr(gt_last_error(), "gpt2-tiny") &&
              strstr(gt_last_error(), "mlp-tiny"),
          "the message should name every preset: %s", gt_last_error());
    CHECK(gt_model_family_of("resnet-small") && strcmp(gt_model_family_of("resnet-small"),
                                                       "convnet") == 0,
          "family of resnet-small");
    CHECK(gt_model_family_of("nope") == NULL, "family of an unknown name");
    /* every preset builds (small batch) */
    const char *all[] = {"mlp-tiny", "mlp-tiny-relu", "mlp-small", "convnet-tiny",
                         "resnet-small"};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        CHECK_OK(gt_model_new(be, all[i], 2, 1, &m));
        if (m) printf("%-14s %8zu parameters, %10.0f training FLOPs per unit (%s)\n", all[i],
                      gt_model_num_params(m), gt_model_flops_per_unit(m),
                      gt_model_get_info(m)->unit);
        gt_model_free(m);
        m = NULL;
    }
    gt_backend_free(be);
    return check_done("models.model_iface");
}
