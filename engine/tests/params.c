/* The parameter store (engine/params.h) with a layout that is not the
 * canonical order: a per-layer tensor whose two slices are placed apart, as
 * gpt2 places its layers. Offsets, the canonical <-> internal copies,
 * locate / loc_format, find_nonfinite's canonical order, the runs of equal
 * weight decay, padding and the optimizer range; sharding units (ZeRO-3),
 * the masters and the gradients sharded. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backend.h"
#include "engine/dtype.h"
#include "engine/params.h"
#include "engine/tests/check.h"
#include "kernels/registry.h"

/* a (2,3) decay; b (2,4) per layer, 2 slices, no decay; c (5) decay.
 * Internal: a, b layer 0, c, b layer 1. */
/* The three tensors a, b, c placed a, b's first slice, c, b's second;
 * `marks` unit starts before a and again before c (0: no units). */
static void declare_marked(gt_params *p, int marks) {
    memset(p, 0, sizeof *p);
    CHECK(gt_params_add(p, "a", 1, 0, 2, 2, 3, 0, 0) == 0, "index of a");
    CHECK(gt_params_add(p, "b", 0, 2, 2, 2, 4, 0, 0) == 1, "index of b");
    CHECK(gt_params_add(p, "c", 1, 0, 1, 5, 0, 0, 0) == 2, "index of c");
    if (marks) gt_params_unit_begin(p);
    gt_params_place(p, 0, 0);
    gt_params_place(p, 1, 0);
    for (int i = 0; i < marks; i++) gt_params_unit_begin(p);
    gt_params_place(p, 2, 0);
    gt_params_place(p, 1, 1);
}

static void declare(gt_params *p) { declare_marked(p, 0); }

static void layout(gt_backend *be) {
    gt_params p;
    declare(&p);
    CHECK_OK(gt_params_alloc(&p, be, GT_DTYPE_FP32));
    if (!p.params) return;
    CHECK(p.num_params == 19 && p.norm_chunk == 65536 && p.num_alloc == 65536,
          "19 parameters in one chunk: %zu, chunk %zu, alloc %zu", p.num_params, p.norm_chunk,
          p.num_alloc);
    CHECK(gt_params_offset(&p, 0, 0) == 0 && gt_params_offset(&p, 1, 0) == 6 &&
              gt_params_offset(&p, 2, 0) == 10 && gt_params_offset(&p, 1, 1) == 15,
          "offsets %zu %zu %zu %zu", gt_params_offset(&p, 0, 0), gt_params_offset(&p, 1, 0),
          gt_params_offset(&p, 2, 0), gt_params_offset(&p, 1, 1));
    CHECK(p.nruns == 4, "runs of equal decay: %d, want 4", p.nruns);
    float canon[19], back[19], internal[19];
    for (int i = 0; i < 19; i++) canon[i] = (float)i;
    CHECK_OK(gt_params_set(&p, canon));
    CHECK_OK(gt_params_get(&p, back));
    CHECK(memcmp(canon, back, sizeof canon) == 0, "set then get is not the identity");
    CHECK_OK(be->copy_to_host(be, internal, p.params, sizeof internal));
    /* b layer 0 is canonical 6..9, c 14..18, b layer 1 10..13 */
    CHECK(internal[6] == 6 && internal[10] == 14 && internal[15] == 10 && internal[18] == 13,
          "internal layout: %g %g %g %g", (double)internal[6], (double)internal[10],
          (double)internal[15], (double)internal[18]);
    gt_params_loc loc;
    gt_params_locate(&p, 16, &loc);
    CHECK(loc.tensor == 1 && loc.layer == 1 && loc.element == 1 && loc.flat == 11,
          "internal 16: tensor %d layer %d element %zu flat %zu", loc.tensor, loc.layer,
          loc.element, loc.flat);
    char s[64];
    gt_params_loc_format(&p, &loc, s, sizeof s);
    CHECK(strcmp(s, "b layer 1, element 1") == 0, "format: %s", s);
    gt_params_locate(&p, 12, &loc);
    CHECK(loc.tensor == 2 && loc.layer == -1 && loc.element == 2, "internal 12 is c[2]");
    gt_params_locate(&p, 30, &loc);
    gt_params_loc_format(&p, &loc, s, sizeof s);
    CHECK(loc.tensor == -1 && strcmp(s, "padding element 30") == 0, "padding: %s", s);
    /* a NaN in b layer 1 (internal 16) comes before an Inf in c (internal 11):
     * b is before c in canonical order */
    for (int i = 0; i < 19; i++) internal[i] = 1.0f;
    internal[11] = INFINITY;
    internal[16] = NAN;
    void *dev = NULL;
    CHECK_OK(gt_backend_alloc(be, sizeof internal, &dev));
    if (dev) {
        CHECK_OK(be->copy_to_device(be, dev, internal, sizeof internal));
        int found = 0;
        float v = 0;
        CHECK_OK(gt_params_find_nonfinite(&p, dev, GT_DTYPE_FP32, 0, 19, &found, &loc, &v));
        CHECK(found && isnan(v) && loc.internal == 16, "first non-finite at %zu (%g)",
              loc.internal, (double)v);
        /* only [0, 12) searched: the Inf */
        CHECK_OK(gt_params_find_nonfinite(&p, dev, GT_DTYPE_FP32, 0, 12, &found, &loc, &v));
        CHECK(found && isinf(v) && loc.internal == 11, "in [0, 12): %zu", loc.internal);
        gt_backend_dealloc(be, dev);
    }
    /* weight decay only on a and c: zero gradients, the decay is the update */
    CHECK_OK(gt_params_zero_grad(&p));
    gt_adamw_config cfg = gt_adamw_defaults();
    cfg.weight_decay = 0.5f;
    for (int i = 0; i < 19; i++) canon[i] = 1.0f;
    CHECK_OK(gt_params_set(&p, canon));
    CHECK_OK(gt_params_update_range(&p, &cfg, 1, 0.1f, 1.0f, p.grads, 0, 19));
    CHECK_OK(gt_params_get(&p, back));
    int wrong = 0;
    for (int i = 0; i < 19; i++) wrong += (i >= 6 && i < 14) ? back[i] != 1.0f : back[i] == 1.0f;
    CHECK(wrong == 0, "%d values decayed where they should not, or not where they should", wrong);
    /* padding, the optimizer range and its refusals */
    CHECK_STATUS(gt_params_pad(&p, 65537), GT_ERR_INVALID);
    CHECK_OK(gt_params_pad(&p, 2 * 65536));
    CHECK_OK(gt_params_get(&p, back));
    CHECK(back[0] != 1.0f && back[6] == 1.0f, "padding keeps the parameters");
    CHECK_OK(gt_params_set_opt_range(&p, 4, 12));
    float m[8], v[8];
    CHECK_OK(gt_params_get_opt_state(&p, 4, 12, m, v));
    CHECK(m[0] == 0 && v[7] == 0, "a new range starts at zero");
    CHECK_STATUS(gt_params_get_opt_state(&p, 3, 12, m, v), GT_ERR_INVALID);
    CHECK_STATUS(gt_params_update_range(&p, &cfg, 1, 0.1f, 1.0f, p.grads, 0, 19),
                 GT_ERR_INVALID);
    gt_params_release(&p);
}

/* bf16: the compute copy follows the masters, rounded; gradients in bf16. */
static void compute_copy(gt_backend *be) {
    gt_params p;
    declare(&p);
    CHECK_OK(gt_params_alloc(&p, be, GT_DTYPE_BF16));
    if (!p.params) return;
    CHECK(p.wc != NULL && p.es == 2, "a bf16 store keeps a compute copy");
    float canon[19], w[19];
    for (int i = 0; i < 19; i++) canon[i] = 1.0f + (float)i / 1024.0f;
    CHECK_OK(gt_params_set(&p, canon));
    uint16_t raw[19];
    CHECK_OK(be->copy_to_host(be, raw, p.wc, sizeof raw));
    gt_convert(w, GT_DTYPE_FP32, raw, GT_DTYPE_BF16, 19);
    /* internal 15 is b layer 1 element 0, canonical 10 */
    uint16_t want;
    gt_convert(&want, GT_DTYPE_BF16, &canon[10], GT_DTYPE_FP32, 1);
    CHECK(raw[15] == want, "compute copy of internal 15: %04x, want %04x", raw[15], want);
    CHECK(w[0] == 1.0f, "compute copy of internal 0: %g", (double)w[0]);
    gt_params_release(&p);
}

/* Sharding units: a (and b layer 0) one unit, c and b layer 1 another,
 * a repeated mark starting no empty unit; the hook sees every NEED and
 * DONE, and an error of the hook reaches the caller. No marks: one unit. */
static int g_events[8], g_nev;
static gt_status unit_hook(void *ctx, gt_params_unit_event ev, int unit, int next) {
    (void)ctx;
    if (g_nev < 8) g_events[g_nev++] = (int)ev * 100 + unit * 10 + (next + 1);
    return unit == 1 && ev == GT_PARAMS_UNIT_DONE ? GT_ERR(GT_ERR_COMM, "hook") : GT_OK;
}

static void units(gt_backend *be) {
    gt_params p;
    declare_marked(&p, 2); /* the second unit's start marked twice: one unit */
    CHECK_OK(gt_params_alloc(&p, be, GT_DTYPE_FP32));
    size_t lo, hi;
    CHECK(gt_params_num_units(&p) == 2, "units: %d, want 2", gt_params_num_units(&p));
    gt_params_unit_range(&p, 0, &lo, &hi);
    CHECK(lo == 0 && hi == 10, "unit 0 [%zu, %zu), want [0, 10)", lo, hi);
    gt_params_unit_range(&p, 1, &lo, &hi);
    CHECK(lo == 10 && hi == 19, "unit 1 [%zu, %zu), want [10, 19)", lo, hi);
    CHECK_OK(gt_params_need(&p, 0, 1)); /* no hook: nothing */
    gt_params_set_unit_hook(&p, unit_hook, NULL);
    CHECK_OK(gt_params_need(&p, 1, -1));
    CHECK_OK(gt_params_done(&p, 0));
    CHECK_STATUS(gt_params_done(&p, 1), GT_ERR_COMM);
    CHECK(g_nev == 3 && g_events[0] == 10 && g_events[1] == 100 && g_events[2] == 110,
          "hook events %d: %d %d %d", g_nev, g_events[0], g_events[1], g_events[2]);
    gt_params_release(&p);
    declare(&p);
    CHECK_OK(gt_params_alloc(&p, be, GT_DTYPE_FP32));
    gt_params_unit_range(&p, 0, &lo, &hi);
    CHECK(gt_params_num_units(&p) == 1 && lo == 0 && hi == 19, "unmarked: %d unit(s), [%zu, %zu)",
          gt_params_num_units(&p), lo, hi);
    gt_params_release(&p);
}

/* Gradients sharded by unit: no whole buffer; a unit's buffer appears,
 * zeroed, at the first gt_params_grad of one of its tensors (unit 1: c and
 * b's second slice, 9 elements), zero_grad zeroes the buffers held, the
 * release frees it (the peak stays); what reads the whole buffer is
 * refused, and so is a model of one unit. */
static void sharded_grads(gt_backend *be, gt_dtype dt) {
    gt_params p;
    declare_marked(&p, 1);
    CHECK_OK(gt_params_alloc(&p, be, dt));
    size_t es = gt_dtype_size(dt);
    CHECK_OK(gt_params_shard_grads(&p));
    CHECK(p.grads == NULL && p.grad_held == 0, "%s: a whole buffer after sharding the gradients",
          gt_dtype_name(dt));
    char *gc = gt_params_grad(&p, 2, 0), *gb1 = gt_params_grad(&p, 1, 1);
    CHECK(gc && gb1 && gt_params_unit_grad_held(&p, 1) && !gt_params_unit_grad_held(&p, 0) &&
              p.grad_held == 9 * es && gb1 == gc + 5 * es,
          "%s: unit 1's buffer: held %zu bytes", gt_dtype_name(dt), p.grad_held);
    unsigned char h[9 * 4], zero[9 * 4] = {0};
    CHECK_OK(be->copy_to_host(be, h, gc, 9 * es));
    CHECK(memcmp(h, zero, 9 * es) == 0, "%s: a new unit buffer is not zero", gt_dtype_name(dt));
    memset(h, 0x3c, sizeof h);
    CHECK_OK(be->copy_to_device(be, gc, h, 9 * es));
    CHECK(gt_params_grad(&p, 1, 1) == gb1, "the same buffer on the next ask");
    CHECK_OK(gt_params_zero_grad(&p));
    CHECK_OK(be->copy_to_host(be, h, gc, 9 * es));
    CHECK(memcmp(h, zero, 9 * es) == 0, "%s: zero_grad left a unit buffer", gt_dtype_name(dt));
    float host[19];
    double norm;
    CHECK_STATUS(gt_params_get_grads(&p, host), GT_ERR_INVALID);
    CHECK_STATUS(gt_params_grad_norm(&p, &norm), GT_ERR_INVALID);
    gt_params_unit_grad_release(&p, 1);
    gt_params_unit_grad_release(&p, 0); /* none held: nothing */
    CHECK(p.grad_held == 0 && p.grad_peak == 9 * es && !gt_params_unit_grad_held(&p, 1),
          "%s: after the release held %zu, peak %zu", gt_dtype_name(dt), p.grad_held,
          p.grad_peak);
    size_t pb, gb, ob;
    gt_params_memory(&p, &pb, &gb, &ob);
    CHECK(gb == 9 * es, "%s: gradients by kind %zu, want the peak", gt_dtype_name(dt), gb);
    (void)gt_params_grad(&p, 0, 0); /* held at the release: freed with the store */
    gt_params_release(&p);
    declare(&p);
    CHECK_OK(gt_params_alloc(&p, be, dt));
    CHECK_STATUS(gt_params_shard_grads(&p), GT_ERR_INVALID);
    gt_params_release(&p);
}

/* With sharded gradients a unit's buffer is made when its backward begins:
 * gt_params_backward_begin makes those of the units needed and not done
 * (the forward left unit 1 for the backward's start), a gt_params_need
 * inside the backward makes its unit's, none outside it. */
static void backward_opens(gt_backend *be) {
    gt_params p;
    declare_marked(&p, 1);
    CHECK_OK(gt_params_alloc(&p, be, GT_DTYPE_FP32));
    CHECK_OK(gt_params_shard_grads(&p));
    CHECK_OK(gt_params_need(&p, 0, 1)); /* the forward: unit 0, done, then unit 1 kept */
    CHECK_OK(gt_params_done(&p, 0));
    CHECK_OK(gt_params_need(&p, 1, -1));
    CHECK(!gt_params_unit_grad_held(&p, 0) && !gt_params_unit_grad_held(&p, 1),
          "a gradient buffer made in the forward");
    CHECK_OK(gt_params_backward_begin(&p));
    CHECK(gt_params_unit_grad_held(&p, 1) && !gt_params_unit_grad_held(&p, 0),
          "the backward's start: unit 1 (needed, not done) %d, unit 0 (done) %d",
          gt_params_unit_grad_held(&p, 1), gt_params_unit_grad_held(&p, 0));
    CHECK_OK(gt_params_done(&p, 1));
    CHECK_OK(gt_params_need(&p, 0, -1));
    CHECK(gt_params_unit_grad_held(&p, 0), "a need in the backward made no buffer");
    CHECK_OK(gt_params_done(&p, 0));
    gt_params_backward_end(&p);
    gt_params_unit_grad_release(&p, 0);
    CHECK_OK(gt_params_need(&p, 0, -1));
    CHECK(!gt_params_unit_grad_held(&p, 0), "a need after the backward made a buffer");
    gt_params_release(&p);
}

/* Sharded masters: the store keeps [6, 16) of the masters; reading them
 * whole is refused until they are made whole (the rest filled by the
 * callback, as the all-gather would); a unit's own part is written to its
 * buffer in the storage dtype; a weight is read from the unit's buffer. */
static gt_status fill_rest(void *ctx, float *whole) {
    const float *canon_internal = ctx; /* internal order, 19 values */
    for (size_t x = 0; x < 19; x++)
        if (x < 6 || x >= 16) whole[x] = canon_internal[x];
    return GT_OK;
}

static void sharded(gt_backend *be, gt_dtype dt) {
    gt_params p;
    declare_marked(&p, 1);
    CHECK_OK(gt_params_alloc(&p, be, dt));
    float canon[19], internal[19], back[19];
    for (int i = 0; i < 19; i++) canon[i] = 0.5f * (float)i;
    CHECK_OK(gt_params_set(&p, canon));
    gt_params_to_internal(&p, internal, canon);
    CHECK_OK(gt_params_shard_masters(&p, 6, 16));
    size_t lo, hi;
    gt_params_masters_range(&p, &lo, &hi);
    CHECK(lo == 6 && hi == 16 && p.wc == NULL, "sharded range [%zu, %zu)", lo, hi);
    CHECK_STATUS(gt_params_get(&p, back), GT_ERR_INVALID);
    CHECK_STATUS(gt_params_shard_masters(&p, 0, 19), GT_ERR_INVALID);
    /* unit 1 is [10, 19): this rank's part [10, 16) */
    uint16_t u16[9];
    float u32[9];
    void *buf = dt == GT_DTYPE_FP32 ? (void *)u32 : (void *)u16;
    memset(u32, 0, sizeof u32);
    memset(u16, 0, sizeof u16);
    CHECK_OK(gt_params_unit_fill_own(&p, 1, buf, &lo, &hi));
    CHECK(lo == 10 && hi == 16, "own part of unit 1 [%zu, %zu)", lo, hi);
    float w5 = dt == GT_DTYPE_FP32 ? u32[5] : gt_bf16_to_fp32(u16[5]);
    CHECK(w5 == internal[15] && (dt == GT_DTYPE_FP32 ? u32[6] : u16[6]) == 0,
          "%s unit buffer [5] = %g, want %g", gt_dtype_name(dt), (double)w5,
          (double)internal[15]);
    gt_params_unit_bind(&p, 1, buf);
    CHECK(gt_params_weight(&p, 1, 1) == gt_params_at(&p, buf, 5), "b layer 1 read from the unit");
    gt_params_unit_bind(&p, 1, NULL);
    float got[10];
    CHECK_OK(gt_params_get_masters(&p, 6, 16, got));
    CHECK(memcmp(got, internal + 6, sizeof got) == 0, "the shard's masters are not [6, 16)");
    CHECK_STATUS(gt_params_get_masters(&p, 5, 7, got), GT_ERR_INVALID);
    CHECK_OK(gt_params_get_masters(&p, 19, 19, got)); /* empty: anywhere */
    CHECK_OK(gt_params_masters_whole(&p, fill_rest, internal));
    CHECK_OK(gt_params_get(&p, back));
    CHECK(memcmp(back, canon, sizeof canon) == 0, "the whole masters are not the parameters");
    CHECK_OK(gt_params_masters_reshard(&p));
    CHECK_STATUS(gt_params_get(&p, back), GT_ERR_INVALID);
    size_t pb, gb, ob;
    gt_params_memory(&p, &pb, &gb, &ob);
    CHECK(pb == 10 * sizeof(float), "sharded masters hold %zu bytes, want 40", pb);
    gt_params_release(&p);
}

int main(void) {
    gt_backend *be = NULL;
    gt_backend_config bc = {.threads = 1, .device = -1};
    if (gt_backend_new("ref", &bc, &be) != GT_OK) {
        fprintf(stderr, "ref backend: %s\n", gt_last_error());
        return 1;
    }
    layout(be);
    compute_copy(be);
    units(be);
    sharded(be, GT_DTYPE_FP32);
    sharded(be, GT_DTYPE_BF16);
    sharded_grads(be, GT_DTYPE_FP32);
    sharded_grads(be, GT_DTYPE_BF16);
    backward_opens(be);
    gt_params s;
    memset(&s, 0, sizeof s);
    gt_params_add(&s, "x", 0, 0, 1, 4, 0, 0, 0);
    CHECK_STATUS(gt_params_alloc(&s, be, GT_DTYPE_INT32), GT_ERR_INVALID);
    gt_params_release(&s);
    gt_backend_free(be);
    return check_done("engine.params");
}
