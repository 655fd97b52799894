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
#include "kernels/registry.h"
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
    /* training needs labels */
    gt_batch nl = {.n = B, .T = 1, .inputs = x};
    CHECK_STATUS(gt_model_forward_backward(m, &nl, 1.0f / B, NULL), GT_ERR_INVALID);
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

/* The parameter store (engine/params.h) of a dense model, as ZeRO-1 uses it: an
 * optimizer range [lo, hi) cutting through tensors updates exactly those
 * elements, with the full model's values and AdamW state; the refusals of
 * ranges, paddings and state outside the store; locate and find_nonfinite. */
static void flat_store(gt_backend *be) {
    int B = 4;
    gt_model *a = NULL, *z = NULL;
    CHECK_OK(gt_model_new(be, "mlp-tiny", B, 1, &a));
    CHECK_OK(gt_model_new(be, "mlp-tiny", B, 1, &z));
    if (!a || !z) return;
    size_t np = gt_model_num_params(a);
    CHECK_OK(gt_model_init_random(a, 3));
    CHECK_OK(gt_model_init_random(z, 3));
    /* the same seeded gradients in both */
    float *g = malloc(np * sizeof(float)), *pa = malloc(np * sizeof(float)),
          *pz = malloc(np * sizeof(float)), *p0 = malloc(np * sizeof(float));
    gt_rng_fill_normal(g, np, 0.0f, 1.0f, 99u, 0, 0);
    CHECK_OK(be->copy_to_device(be, gt_model_grads_buffer(a), g, np * sizeof(float)));
    CHECK_OK(be->copy_to_device(be, gt_model_grads_buffer(z), g, np * sizeof(float)));
    CHECK_OK(gt_model_get_params(z, p0));
    /* the gradient norm: every chunk counts (mlp-tiny fits in one) */
    double norm = -1, ss = 0;
    for (size_t i = 0; i < np; i++) ss += (double)g[i] * g[i];
    CHECK_OK(gt_model_grad_norm(a, &norm));
    CHECK(fabs(norm - sqrt(ss)) <= 1e-9 * sqrt(ss), "grad norm %.17g, want %.17g", norm, sqrt(ss));
    size_t nch = gt_model_num_params_padded(a) / gt_model_norm_chunk(a);
    double parts[8];
    CHECK(nch >= 1 && nch < 8, "%zu norm chunks", nch);
    CHECK_STATUS(gt_model_grad_sumsq_chunks(a, gt_model_grads_buffer(a), 0, nch + 1, parts),
                 GT_ERR_INVALID);
    /* [lo, hi): from inside the first tensor to inside the last */
    size_t n0 = gt_model_tensor_size(a, 0), nl = gt_model_tensor_size(a, gt_model_num_tensors(a) - 1);
    size_t lo = n0 / 2, hi = np - nl / 2;
    CHECK(gt_model_num_tensors(a) >= 3 && lo > 0 && hi < np, "mlp-tiny layout");
    gt_adamw_config cfg = gt_adamw_defaults();
    cfg.weight_decay = 0.1f;
    CHECK_OK(gt_model_update_range(a, &cfg, 1, 1e-2f, 1.0f, gt_model_grads_buffer(a), 0, np));
    CHECK_OK(gt_model_set_opt_range(z, lo, hi));
    const void *shard = (const char *)gt_model_grads_buffer(z) + lo * sizeof(float);
    CHECK_OK(gt_model_update_range(z, &cfg, 1, 1e-2f, 1.0f, shard, lo, hi));
    CHECK_OK(gt_model_get_params(a, pa));
    CHECK_OK(gt_model_get_params(z, pz));
    size_t bad_in = 0, bad_out = 0;
    for (size_t i = 0; i < np; i++) {
        if (i >= lo && i < hi) bad_in += pz[i] != pa[i];
        else bad_out += pz[i] != p0[i];
    }
    CHECK(bad_in == 0 && bad_out == 0,
          "update of [%zu, %zu) of %zu: %zu differ from the full update, %zu outside changed",
          lo, hi, np, bad_in, bad_out);
    float *ma = malloc(np * sizeof(float)), *va = malloc(np * sizeof(float));
    float *mz = malloc(np * sizeof(float)), *vz = malloc(np * sizeof(float));
    CHECK_OK(gt_model_get_opt_state(a, lo, hi, ma, va));
    CHECK_OK(gt_model_get_opt_state(z, lo, hi, mz, vz));
    CHECK(memcmp(ma, mz, (hi - lo) * sizeof(float)) == 0 &&
              memcmp(va, vz, (hi - lo) * sizeof(float)) == 0,
          "AdamW state of the range differs from the full model's");
    /* step 0 (AdamW counts from 1), outside the range, the padding, the parameters */
    CHECK_STATUS(gt_model_update_range(z, &cfg, 0, 1e-2f, 1.0f, shard, lo, hi), GT_ERR_INVALID);
    CHECK_STATUS(gt_model_update_range(z, &cfg, 1, 1e-2f, 1.0f, shard, lo - 1, hi), GT_ERR_INVALID);
    CHECK_STATUS(gt_model_update_range(z, &cfg, 1, 1e-2f, 1.0f, shard, lo, hi + 1), GT_ERR_INVALID);
    CHECK_STATUS(gt_model_get_opt_state(z, lo - 1, hi, mz, vz), GT_ERR_INVALID);
    /* an empty range is nothing to copy wherever it lies (a ZeRO-1 rank whose
     * shard is all padding saves [num_params, num_params)) */
    CHECK_OK(gt_model_get_opt_state(z, gt_model_num_params(z), gt_model_num_params(z), mz, vz));
    CHECK_OK(gt_model_set_opt_state(z, 0, 0, mz, vz));
    size_t chunk = gt_model_norm_chunk(a), padded = gt_model_num_params_padded(a);
    CHECK_STATUS(gt_model_pad(a, padded + 1), GT_ERR_INVALID);
    CHECK(padded >= chunk, "padded %zu, chunk %zu", padded, chunk);
    CHECK_OK(gt_model_pad(a, padded + chunk));
    CHECK(gt_model_num_params_padded(a) == padded + chunk, "padded after gt_model_pad");
    CHECK_OK(gt_model_set_opt_range(a, 0, padded + chunk));
    CHECK_STATUS(gt_model_get_opt_state(a, np - 1, np + 1, ma, va), GT_ERR_INVALID);
    CHECK_STATUS(gt_model_set_opt_state(a, np - 1, np + 1, ma, va), GT_ERR_INVALID);
    CHECK_STATUS(gt_model_pad(z, np - 1), GT_ERR_INVALID);
    CHECK_STATUS(gt_model_pad(z, 0), GT_ERR_INVALID); /* a multiple of the chunk, below */
    /* locate: the first element of tensor 1 is in tensor 1 */
    gt_model_loc loc;
    gt_model_locate(a, n0, &loc);
    CHECK(loc.tensor == 1 && loc.element == 0, "element %zu: tensor %d element %zu", n0,
          loc.tensor, loc.element);
    gt_model_locate(a, n0 - 1, &loc);
    CHECK(loc.tensor == 0 && loc.element == n0 - 1, "element %zu: tensor %d element %zu",
          n0 - 1, loc.tensor, loc.element);
    /* find_nonfinite: the first of two, in [lo, hi) */
    for (size_t i = 0; i < np; i++) g[i] = 1.0f;
    g[n0 + 3] = INFINITY;
    g[hi - 2] = NAN;
    void *dev = NULL;
    CHECK_OK(gt_backend_alloc(be, np * sizeof(float), &dev));
    if (dev) {
        CHECK_OK(be->copy_to_device(be, dev, g + lo, (hi - lo) * sizeof(float)));
        int found = 0;
        float v = 0;
        CHECK_OK(gt_model_find_nonfinite(a, dev, GT_DTYPE_FP32, lo, hi, &found, &loc, &v));
        CHECK(found && isinf(v) && loc.internal == n0 + 3 && loc.tensor == 1 && loc.element == 3,
              "first non-finite: found %d value %g at %zu (tensor %d element %zu)", found,
              (double)v, loc.internal, loc.tensor, loc.element);
        gt_backend_dealloc(be, dev);
    }
    free(g), free(pa), free(pz), free(p0), free(ma), free(va), free(mz), free(vz);
    gt_model_free(a);
    gt_model_free(z);

    /* weight decay: on the weight matrices only, never on the biases (zero
     * gradients: the decay is the whole update) */
    gt_model *d = NULL;
    CHECK_OK(gt_model_new(be, "mlp-tiny", B, 1, &d));
    if (!d) return;
    CHECK_OK(gt_model_zero_grad(d));
    float *before = malloc(np * sizeof(float)), *after = malloc(np * sizeof(float));
    for (size_t e = 0; e < np; e++) before[e] = 0.5f + 0.001f * (float)(e % 100);
    CHECK_OK(gt_model_set_params(d, before)); /* biases too: none is 0 */
    cfg.weight_decay = 0.5f;
    CHECK_OK(gt_model_update_range(d, &cfg, 1, 0.1f, 1.0f, gt_model_grads_buffer(d), 0, np));
    CHECK_OK(gt_model_get_params(d, after));
    size_t off = 0;
    for (int i = 0; i < gt_model_num_tensors(d); i++) {
        int64_t shape[4];
        int nd = gt_model_tensor_shape(d, i, shape);
        size_t n = gt_model_tensor_size(d, i), changed = 0, nonzero = 0;
        for (size_t e = off; e < off + n; e++) {
            changed += after[e] != before[e];
            nonzero += before[e] != 0;
        }
        if (nd >= 2)
            CHECK(changed == nonzero && nonzero > 0, "%s: weight decay changed %zu of %zu",
                  gt_model_tensor_name(d, i), changed, nonzero);
        else
            CHECK(changed == 0, "%s: a bias decayed (%zu values changed)",
                  gt_model_tensor_name(d, i), changed);
        off += n;
    }
    free(before);
    free(after);
    gt_model_free(d);
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
    flat_store(be);
    gt_model *m = NULL;
    CHECK_STATUS(gt_model_new(be, "resnet-huge", 1, 1, &m), GT_ERR_INVALID);
    CHECK(strstr(gt_last_error(), "resnet-small") && strstr(gt_last_error(), "gpt2-tiny") &&
              strstr(gt_last_error(), "mlp-tiny"),
          "the message should name every preset: %s", gt_last_error());
    CHECK(gt_model_family_of("resnet-small") && strcmp(gt_model_family_of("resnet-small"),
                                                       "convnet") == 0,
          "family of resnet-small");
    CHECK(gt_model_family_of("nope") == NULL, "family of an unknown name");
    /* a renamed preset: the old name builds it under the new one */
    CHECK(gt_model_preset_renamed("gpt2-small") &&
              strcmp(gt_model_preset_renamed("gpt2-small"), "gpt2-3m") == 0 &&
              gt_model_preset_renamed("gpt2-3m") == NULL,
          "gpt2-small renamed gpt2-3m");
    CHECK(!strstr(gt_model_preset_names(), "gpt2-small"), "the old name listed as a preset");
    CHECK_OK(gt_model_new(be, "gpt2-small", 1, 8, &m));
    CHECK(strcmp(gt_model_get_info(m)->name, "gpt2-3m") == 0 &&
              gt_model_num_params(m) > 3000000 && gt_model_num_params(m) < 3600000,
          "gpt2-small built as %s with %zu parameters", gt_model_get_info(m)->name,
          gt_model_num_params(m));
    gt_model_free(m);
    m = NULL;
    /* options by name: applied in order, validated by the family */
    gt_model_arch ar;
    CHECK_OK(gt_model_arch_of("gpt2-tiny", "layers=3,vocab=300", &ar));
    CHECK(ar.fields[3] == 3 && ar.fields[1] == 300 && ar.fields[2] == 300 && ar.classes == 300 &&
              ar.max_T == 64 && strcmp(ar.family, "gpt2") == 0,
          "gpt2-tiny layers=3,vocab=300: L%d V%d Vp%d", ar.fields[3], ar.fields[1], ar.fields[2]);
    CHECK_STATUS(gt_model_arch_of("gpt2-tiny", "depth=3", &ar), GT_ERR_INVALID);
    CHECK(strstr(gt_last_error(), "depth=3") && strstr(gt_last_error(), "padded_vocab"),
          "an unknown option names itself and the valid ones: %s", gt_last_error());
    CHECK_STATUS(gt_model_arch_of("gpt2-tiny", "heads=3", &ar), GT_ERR_INVALID);
    CHECK_STATUS(gt_model_arch_of("gpt2-tiny", "layers=x", &ar), GT_ERR_INVALID);
    CHECK_STATUS(gt_model_arch_of("mlp-tiny", "width=3", &ar), GT_ERR_INVALID);
    CHECK_OK(gt_model_arch_of("mlp-tiny", "", &ar));
    CHECK(ar.classes == 8 && ar.max_T == 1, "mlp-tiny: %d classes", ar.classes);
    char opts[GT_MODEL_OPTIONS_LEN] = "";
    CHECK_OK(gt_model_option_add(opts, "layers", 1));
    CHECK_OK(gt_model_option_add(opts, "heads", 4));
    CHECK(strcmp(opts, "layers=1,heads=4") == 0, "options '%s'", opts);
    CHECK_OK(gt_model_new_opts(be, "gpt2-tiny", opts, GT_DTYPE_FP32, GT_MODEL_RECOMPUTE_NONE, 2,
                               8, &m));
    CHECK(m && gt_model_num_params(m) < 100000, "gpt2-tiny with one layer");
    gt_model_free(m);
    m = NULL;
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
