/* The memory suite: the backend's caching allocator (engine/alloc.h) under
 * the allocation patterns that fragment caching allocators, with its
 * statistics checked for their invariants (docs/suites.md, "memory").
 *
 * Cases run on a fresh backend each, so its allocator's statistics are the
 * case's alone. Only sizes and pointers are handled: the memory is never
 * touched, so device memory (cuda) needs no copies and host pages are never
 * committed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backend.h"
#include "engine/rng.h"
#include "engine/timer.h"
#include "kernels/registry.h"
#include "suites/suite.h"

#define MS_SEED 0x6d656d6f7279ull /* "memory" */

/* allocator_stress: a pass is MS_STEPS operations on MS_SLOTS slots. Each
 * step picks a slot at random: an empty one gets a new block, a full one is
 * freed, so lifetimes interleave at random. Every MS_PIN_EVERY steps one
 * of MS_PINS long-lived big blocks (16..64 MiB) is allocated and kept to
 * the end of the pass: the pattern that pins segments between short-lived
 * blocks and leaves holes that later requests do not fit. */
#define MS_SLOTS 48
#define MS_STEPS 3000
#define MS_PINS 4
#define MS_PIN_EVERY 500
#define MS_MIN_LOG2 8.0  /* 256 B */
#define MS_MAX_LOG2 26.0 /* 64 MiB */

typedef struct ms_pass {
    double frag_max;       /* max fragmentation seen after any step */
    double frag_final;     /* after the last step, before the cleanup frees */
    uint64_t violations;   /* steps where reserved < in_use */
    gt_alloc_stats end;    /* after everything was freed */
} ms_pass;

static size_t ms_size(uint64_t stream, uint64_t i, double lo, double hi) {
    double l = lo + (hi - lo) * gt_rng_uniform_f64(MS_SEED, stream, i);
    return (size_t)exp2(l);
}

/* One pass; identical (same seed) every time it is called. */
static gt_status ms_stress_pass(gt_backend *be, ms_pass *p) {
    void *slot[MS_SLOTS] = {0}, *pin[MS_PINS] = {0};
    int npin = 0;
    gt_status s = GT_OK;
    gt_alloc_stats st;
    memset(p, 0, sizeof *p);
    for (uint64_t i = 0; i < MS_STEPS && s == GT_OK; i++) {
        if (i % MS_PIN_EVERY == MS_PIN_EVERY / 2 && npin < MS_PINS)
            s = gt_backend_alloc(be, ms_size(2, i, 24.0, 26.0), &pin[npin++]);
        int k = (int)(gt_rng_u32(MS_SEED, 1, i) % MS_SLOTS);
        if (slot[k]) {
            gt_backend_dealloc(be, slot[k]);
            slot[k] = NULL;
        } else if (s == GT_OK) {
            s = gt_backend_alloc(be, ms_size(3, i, MS_MIN_LOG2, MS_MAX_LOG2), &slot[k]);
        }
        gt_allocator_stats(be->alloc, &st);
        if (st.reserved < st.in_use) p->violations++;
        if (st.fragmentation > p->frag_max) p->frag_max = st.fragmentation;
    }
    gt_allocator_stats(be->alloc, &st);
    p->frag_final = st.fragmentation;
    for (int k = 0; k < MS_SLOTS; k++) gt_backend_dealloc(be, slot[k]);
    for (int k = 0; k < npin; k++) gt_backend_dealloc(be, pin[k]);
    gt_allocator_stats(be->alloc, &p->end);
    return s;
}

static void ms_done(const gt_suite_ctx *ctx, gt_result *res, const char *name, const char *line) {
    if (ctx->out) {
        fprintf(ctx->out, "memory  %-20s %-5s %s\n", name,
                gt_result_status_name(gt_result_get_status(res)), line);
        fflush(ctx->out);
    }
    if (ctx->case_done) ctx->case_done(ctx->case_done_ctx, res);
}

static gt_status ms_backend(const gt_suite_ctx *ctx, gt_result *res, gt_backend **be) {
    gt_backend_config cfg = {.threads = ctx->threads, .device = -1};
    gt_status s = gt_backend_new(ctx->backend, &cfg, be);
    if (s != GT_OK) {
        char msg[300];
        snprintf(msg, sizeof msg, "backend %s: %s", ctx->backend, gt_last_error());
        gt_result_set_status(res, s == GT_ERR_UNSUPPORTED ? GT_RESULT_SKIP : GT_RESULT_ERROR, msg);
    }
    return s;
}

static double ratio(double a, double b) { return b > 0 ? a / b : 0.0; }

static void ms_case_stress(const gt_suite_ctx *ctx) {
    const char *name = "allocator_stress";
    gt_result *res = gt_report_add_result(ctx->rep, "memory", name, ctx->topology, ctx->backend);
    gt_result_param_int(res, "slots", MS_SLOTS);
    gt_result_param_int(res, "steps", MS_STEPS);
    gt_result_param_int(res, "pinned_blocks", MS_PINS);
    gt_result_param_str(res, "sizes", "log-uniform 256 B .. 64 MiB");
    gt_backend *be = NULL;
    char line[256] = "";
    if (ms_backend(ctx, res, &be) != GT_OK) {
        ms_done(ctx, res, name, "backend unavailable");
        return;
    }
    ms_pass p1, p2;
    uint64_t t0 = gt_now_ns();
    gt_status s = ms_stress_pass(be, &p1);
    gt_alloc_stats after1 = p1.end;
    if (s == GT_OK) s = ms_stress_pass(be, &p2);
    double secs = (double)(gt_now_ns() - t0) * 1e-9;
    if (s != GT_OK) {
        snprintf(line, sizeof line, "%s: %s", gt_status_name(s), gt_last_error());
        gt_result_set_status(res, GT_RESULT_ERROR, line);
        ms_done(ctx, res, name, line);
        gt_backend_free(be);
        return;
    }
    /* Figures of the first pass: the second is the steady-state probe. */
    gt_result_metric(res, "reserved_bytes", "bytes", 0, (double)after1.reserved, NULL, 0);
    gt_result_metric(res, "peak_in_use", "bytes", 0, (double)after1.peak_in_use, NULL, 0);
    gt_result_metric(res, "peak_reserved", "bytes", 0, (double)after1.peak_reserved, NULL, 0);
    gt_result_metric(res, "fragmentation_max", "fraction", 0, p1.frag_max, NULL, 0);
    gt_result_metric(res, "fragmentation_final", "fraction", 0, p1.frag_final, NULL, 0);
    gt_result_metric(res, "raw_allocs", "count", 0, (double)after1.n_raw_allocs, NULL, 0);
    gt_result_metric(res, "cache_hit_rate", "fraction", 1,
                     ratio((double)after1.n_cache_hits, (double)after1.n_requests), NULL, 0);
    gt_result_metric(res, "reserved_over_in_use", "ratio", 0,
                     ratio((double)after1.peak_reserved, (double)after1.peak_in_use), NULL, 0);
    gt_result_metric(res, "seconds", "s", 0, secs, NULL, 0);
    gt_result_alloc_stats(res, "allocator", &p2.end);
    gt_result_check(res, "in_use_zero_at_end", p1.end.in_use == 0 && p2.end.in_use == 0,
                    (double)(p1.end.in_use + p2.end.in_use), 0.0,
                    "bytes still in use after every block was freed (both passes)");
    gt_result_check(res, "reserved_ge_in_use", p1.violations + p2.violations == 0,
                    (double)(p1.violations + p2.violations), 0.0,
                    "steps where reserved < in_use");
    uint64_t raw2 = p2.end.n_raw_allocs - after1.n_raw_allocs;
    gt_result_check(res, "steady_state", raw2 == 0, (double)raw2, 0.0,
                    "raw allocations in a second identical pass");
    snprintf(line, sizeof line,
             "peak in use %.1f MiB, peak reserved %.1f MiB, frag max %.2f, %llu raw allocs, "
             "hit rate %.3f, pass 2: %llu raw",
             after1.peak_in_use / 1048576.0, after1.peak_reserved / 1048576.0, p1.frag_max,
             (unsigned long long)after1.n_raw_allocs,
             ratio((double)after1.n_cache_hits, (double)after1.n_requests),
             (unsigned long long)raw2);
    ms_done(ctx, res, name, line);
    gt_backend_free(be);
}

/* step_reuse: a GPT-2-like training step's tensors (B4 T64 C768, 12
 * layers): parameters and gradients once, then every step the forward's
 * activations in layer order, the backward's temporaries freed as soon as
 * used, and the activations freed in reverse. The same sizes every step:
 * after the first step the cache must serve everything. */
#define MS_STEP_COUNT 8
#define MS_LAYERS 12

static gt_status ms_model_step(gt_backend *be) {
    const size_t N = 256, C = 768, V = 50304, f = 4; /* fp32 */
    const size_t act[] = {N * C, 2 * N, N * 3 * C, 12 * 64 * 64 * 4,
                          N * C, N * C, N * C, N * 4 * C, N * 4 * C, N * C};
    enum { NACT = sizeof act / sizeof act[0] };
    void *acts[MS_LAYERS][NACT] = {{0}};
    void *logits = NULL, *tmp = NULL;
    gt_status s = GT_OK;
    for (int l = 0; l < MS_LAYERS && s == GT_OK; l++)
        for (int a = 0; a < NACT && s == GT_OK; a++) s = gt_backend_alloc(be, act[a] * f, &acts[l][a]);
    if (s == GT_OK) s = gt_backend_alloc(be, N * V * f, &logits);
    for (int l = MS_LAYERS - 1; l >= 0 && s == GT_OK; l--) {
        /* a backward temporary per layer, freed at once */
        s = gt_backend_alloc(be, N * 4 * C * f, &tmp);
        gt_backend_dealloc(be, tmp);
        for (int a = NACT - 1; a >= 0; a--) {
            gt_backend_dealloc(be, acts[l][a]);
            acts[l][a] = NULL;
        }
    }
    gt_backend_dealloc(be, logits);
    for (int l = 0; l < MS_LAYERS; l++)
        for (int a = 0; a < NACT; a++) gt_backend_dealloc(be, acts[l][a]);
    return s;
}

static void ms_case_step_reuse(const gt_suite_ctx *ctx) {
    const char *name = "step_reuse";
    gt_result *res = gt_report_add_result(ctx->rep, "memory", name, ctx->topology, ctx->backend);
    gt_result_param_int(res, "steps", MS_STEP_COUNT);
    gt_result_param_str(res, "model", "gpt2-124m-like B4 T64, fp32");
    gt_backend *be = NULL;
    char line[256] = "";
    if (ms_backend(ctx, res, &be) != GT_OK) {
        ms_done(ctx, res, name, "backend unavailable");
        return;
    }
    /* parameters, gradients and AdamW state of 124M parameters, held throughout */
    void *params[4] = {0};
    gt_status s = GT_OK;
    for (int i = 0; i < 4 && s == GT_OK; i++) s = gt_backend_alloc(be, (size_t)124475904 * 4, &params[i]);
    uint64_t raw[MS_STEP_COUNT] = {0};
    gt_alloc_stats st;
    gt_allocator_stats(be->alloc, &st);
    uint64_t raw0 = st.n_raw_allocs, prev = raw0;
    for (int k = 0; k < MS_STEP_COUNT && s == GT_OK; k++) {
        s = ms_model_step(be);
        gt_allocator_stats(be->alloc, &st);
        raw[k] = st.n_raw_allocs - prev;
        prev = st.n_raw_allocs;
    }
    for (int i = 0; i < 4; i++) gt_backend_dealloc(be, params[i]);
    if (s != GT_OK) {
        snprintf(line, sizeof line, "%s: %s", gt_status_name(s), gt_last_error());
        gt_result_set_status(res, GT_RESULT_ERROR, line);
        ms_done(ctx, res, name, line);
        gt_backend_free(be);
        return;
    }
    gt_allocator_stats(be->alloc, &st);
    uint64_t later = 0;
    double series[MS_STEP_COUNT];
    for (int k = 0; k < MS_STEP_COUNT; k++) {
        series[k] = (double)raw[k];
        if (k) later += raw[k];
    }
    gt_result_series(res, "raw_allocs_per_step", series, MS_STEP_COUNT);
    gt_result_metric(res, "raw_allocs_first_step", "count", 0, (double)raw[0], NULL, 0);
    gt_result_metric(res, "raw_allocs_later_steps", "count", 0, (double)later, NULL, 0);
    gt_result_metric(res, "peak_in_use", "bytes", 0, (double)st.peak_in_use, NULL, 0);
    gt_result_metric(res, "peak_reserved", "bytes", 0, (double)st.peak_reserved, NULL, 0);
    gt_result_metric(res, "reserved_over_in_use", "ratio", 0,
                     ratio((double)st.peak_reserved, (double)st.peak_in_use), NULL, 0);
    gt_result_metric(res, "cache_hit_rate", "fraction", 1,
                     ratio((double)st.n_cache_hits, (double)st.n_requests), NULL, 0);
    gt_result_alloc_stats(res, "allocator", &st);
    gt_result_check(res, "no_raw_allocs_after_first_step", later == 0, (double)later, 0.0,
                    "raw allocations in steps 2..n");
    gt_result_check(res, "in_use_zero_at_end", st.in_use == 0, (double)st.in_use, 0.0,
                    "bytes in use after everything was freed");
    snprintf(line, sizeof line, "raw allocs: step 1 %llu, later %llu; peak reserved/in use %.3f",
             (unsigned long long)raw[0], (unsigned long long)later,
             ratio((double)st.peak_reserved, (double)st.peak_in_use));
    ms_done(ctx, res, name, line);
    gt_backend_free(be);
}

static int ms_selected(const char *filter, const char *name) {
    return !filter || !*filter || !strcmp(filter, name);
}

static gt_status ms_run(const gt_suite_ctx *ctx) {
    if (!ctx->rep) return GT_OK; /* one rank (max_ranks 1) */
    if (ms_selected(ctx->case_filter, "allocator_stress")) ms_case_stress(ctx);
    if (ms_selected(ctx->case_filter, "step_reuse")) ms_case_step_reuse(ctx);
    return GT_OK;
}

static void ms_list(FILE *f) {
    fprintf(f, "  allocator_stress  random sizes 256 B..64 MiB, interleaved lifetimes, pinned "
               "big blocks: fragmentation, overhead, stats invariants, steady state\n");
    fprintf(f, "  step_reuse        a training step's tensors repeated: no raw allocation after "
               "the first step\n");
}

static int ms_count(const gt_suite_ctx *ctx, int ranks) {
    (void)ranks;
    return ctx->case_filter ? 1 : 2; /* as ms_run */
}

static void ms_names(const gt_suite_ctx *ctx, void (*fn)(void *arg, const char *name), void *arg) {
    (void)ctx;
    fn(arg, "allocator_stress");
    fn(arg, "step_reuse");
}

const gt_suite gt_suite_memory = {
    .name = "memory",
    .description = "caching allocator: fragmentation, overhead, statistics invariants, reuse",
    .list = ms_list,
    .min_ranks = 1,
    .max_ranks = 1,
    .run = ms_run,
    .count = ms_count,
    .names = ms_names,
};
