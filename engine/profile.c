/* The per-op profile (engine/profile.h): a wrapping op table, per-step
 * accumulators, the figures and the Chrome trace. */
#define _POSIX_C_SOURCE 200809L
#include "engine/profile.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/alloc.h"
#include "engine/dtype.h"
#include "engine/stats.h"
#include "engine/timer.h"

static const char *const g_region_names[GT_PROF_REGION_COUNT] = {
#define GT_PROF_REGION_NAME_(ENUM, name) [GT_PROF_##ENUM] = #name,
    GT_PROF_REGION_LIST(GT_PROF_REGION_NAME_)
#undef GT_PROF_REGION_NAME_
};

/* One op call of a profiled step, for the device readback and the trace. */
typedef struct prof_event {
    int part;          /* op, region or -1 for the step */
    uint64_t t0, t1;   /* host clock */
    int ma, mb;        /* device marks (index into the pool), -1 none */
    double flops, bytes;
} prof_event;

struct gt_profile {
    gt_backend *be;
    const gt_ops *inner; /* the backend's own table */
    gt_ops ops;          /* the wrapping table */
    gt_profile_config cfg;
    int attached, device;
    /* the current step */
    int step_i, armed, mem_step, slow_on, in_step;
    uint64_t step_t0;
    double acc_ns[GT_PROF_PARTS];
    double incl_ns[GT_PROF_REGION_COUNT]; /* regions, ops inside included */
    double calls[GT_PROF_PARTS];
    double flops[GT_PROF_PARTS], bytes[GT_PROF_PARTS];
    int open_region; /* -1 none */
    uint64_t region_t0;
    double region_ops_ns; /* host time of op calls inside the open region */
    prof_event *ev;
    size_t nev, cap_ev;
    void **marks; /* device marks, reused step after step */
    size_t nmarks, used_marks;
    int step_mark; /* the step's first mark, -1 none */
    /* figures */
    double *samples;   /* GT_PROF_PARTS x max_steps */
    double *step_ms, *without_ms;
    int nprof, nwithout;
    double *all_ms;       /* every step's time, in order (this run's index) */
    signed char *all_on;  /* 1 profiled, 0 without the profiler, -1 not reached */
    double sum_step_ms, sum_parts_ms[GT_PROF_PARTS];
    double tot_calls[GT_PROF_PARTS], tot_flops[GT_PROF_PARTS], tot_bytes[GT_PROF_PARTS];
    double *incl_samples; /* GT_PROF_REGION_COUNT x max_steps */
    size_t mem_peak[GT_OP_COUNT], mem_scratch[GT_OP_COUNT];
    int mem_known[GT_OP_COUNT];
    double call_cost_us, max_overlap_ms;
    int stopped; /* the estimate exceeded the limit: no more profiled steps */
    char stop_reason[160];
    /* trace */
    FILE *trace;
    char trace_path[4096];
    int trace_events;
};

gt_profile_config gt_profile_defaults(void) {
    gt_profile_config c;
    memset(&c, 0, sizeof c);
    c.max_steps = 1;
    c.nranks = 1;
    c.overhead_every = 3;
    c.slow_op = GT_OP_COUNT;
    return c;
}

const char *gt_profile_part_name(int part) {
    if (part < 0 || part >= GT_PROF_PARTS) return NULL;
    if (part < GT_OP_COUNT) return gt_op_name((gt_op)part);
    if (part < GT_PROF_PART_REST) return g_region_names[part - GT_OP_COUNT];
    return "rest";
}

int gt_profile_part_optional(int part) {
    return part < GT_OP_COUNT || part == GT_PROF_PART_REGION(GT_PROF_PARAM_GATHER);
}

const char *gt_profile_part_kind(int part) {
    if (part < GT_OP_COUNT) return "op";
    return part < GT_PROF_PART_REST ? "region" : "rest";
}

/* ---- the calls -------------------------------------------------------------------------- */

typedef struct prof_call {
    int on;
    gt_op op;
    uint64_t t0;
    int ma;
    size_t in_use0;
} prof_call;

static int mark_get(gt_profile *p) {
    if (p->used_marks == p->nmarks) {
        size_t cap = p->nmarks ? 2 * p->nmarks : 256;
        void **m = realloc(p->marks, cap * sizeof *m);
        if (!m) return -1;
        p->marks = m;
        for (size_t i = p->nmarks; i < cap; i++) {
            m[i] = NULL;
            if (p->be->mark_new(p->be, &m[i]) != GT_OK) {
                p->nmarks = i;
                return -1;
            }
        }
        p->nmarks = cap;
    }
    int i = (int)p->used_marks++;
    return p->be->mark_record(p->be, p->marks[i]) == GT_OK ? i : -1;
}

static void event_push(gt_profile *p, const prof_event *e) {
    if (p->nev == p->cap_ev) {
        size_t cap = p->cap_ev ? 2 * p->cap_ev : 512;
        prof_event *n = realloc(p->ev, cap * sizeof *n);
        if (!n) return; /* the figures lose this call's device time: rare, and said nowhere */
        p->ev = n;
        p->cap_ev = cap;
    }
    p->ev[p->nev++] = *e;
}

static void spin_ns(uint64_t ns) {
    uint64_t until = gt_now_ns() + ns;
    while (gt_now_ns() < until) {
    }
}

static void prof_enter(gt_profile *p, gt_op op, prof_call *c) {
    c->on = p->armed || (p->slow_on && p->in_step && op == p->cfg.slow_op);
    c->op = op;
    c->ma = -1;
    c->in_use0 = 0;
    c->t0 = 0;
    if (!c->on) return;
    gt_backend *be = p->be;
    if (p->armed && be->range_push) be->range_push(be, gt_op_name(op));
    int slow = p->slow_on && p->in_step && op == p->cfg.slow_op;
    if (slow && p->device) (void)be->synchronize(be);
    if (p->armed && p->mem_step) c->in_use0 = gt_allocator_window_begin(be->alloc);
    if (p->armed && p->device) c->ma = mark_get(p);
    c->t0 = gt_now_ns();
}

static void prof_leave(gt_profile *p, prof_call *c, double flops, double bytes) {
    if (!c->on) return;
    gt_backend *be = p->be;
    if (p->slow_on && p->in_step && c->op == p->cfg.slow_op) {
        /* the op made slow_factor times as long wherever it is timed: its own time,
         * then (factor - 1) times that spent spinning (device: after it finished) */
        if (p->device) (void)be->synchronize(be);
        spin_ns((uint64_t)((double)(gt_now_ns() - c->t0) * (p->cfg.slow_factor - 1.0)));
    }
    if (!p->armed) return;
    int mb = p->device && c->ma >= 0 ? mark_get(p) : -1;
    uint64_t t1 = gt_now_ns();
    if (be->range_pop) be->range_pop(be);
    int part = (int)c->op;
    double host = (double)(t1 - c->t0);
    if (!p->device) p->acc_ns[part] += host;
    p->calls[part] += 1;
    p->flops[part] += flops;
    p->bytes[part] += bytes;
    if (p->open_region >= 0) p->region_ops_ns += host;
    if (p->mem_step) {
        size_t peak = gt_allocator_window_peak(be->alloc);
        size_t rise = peak > c->in_use0 ? peak - c->in_use0 : 0;
        if (peak > p->mem_peak[part]) p->mem_peak[part] = peak;
        if (rise > p->mem_scratch[part]) p->mem_scratch[part] = rise;
        p->mem_known[part] = 1;
    }
    if (p->device || p->trace) {
        prof_event e = {part, c->t0, t1, c->ma, mb, flops, bytes};
        event_push(p, &e);
    }
}

static size_t es(const gt_kctx *k) { return gt_dtype_size(k->dt); }

#define PROF(OP, FLOPS, BYTES, CALL)                                                               \
    gt_profile *p = k->be->profile;                                                                \
    GT_ASSERT(p);                                                                                  \
    prof_call c;                                                                                   \
    prof_enter(p, GT_OP_##OP, &c);                                                                 \
    gt_status st_ = p->inner->CALL;                                                                \
    prof_leave(p, &c, (double)(FLOPS), (double)(BYTES));                                           \
    return st_

/* FLOPs are counted for the GEMMs, attention (dense: the causal half is not
 * discounted) and convolutions, as 2 per multiply-add; bytes are the least
 * traffic, every operand read or written once (read-modify-write twice). */

static gt_status w_encoder_fwd(const gt_kctx *k, void *out, const int32_t *inp, const void *wte,
                               const void *wpe, int B, int T, int C) {
    PROF(ENCODER_FWD, 0, 3.0 * B * T * C * es(k) + 4.0 * B * T,
         encoder_fwd(k, out, inp, wte, wpe, B, T, C));
}
static gt_status w_encoder_bwd(const gt_kctx *k, void *dwte, void *dwpe, const void *dout,
                               const int32_t *inp, int B, int T, int C) {
    PROF(ENCODER_BWD, 0, 5.0 * B * T * C * es(k) + 4.0 * B * T,
         encoder_bwd(k, dwte, dwpe, dout, inp, B, T, C));
}
static gt_status w_layernorm_fwd(const gt_kctx *k, void *out, float *mean, float *rstd,
                                 const void *inp, const void *weight, const void *bias, int N,
                                 int C, float eps) {
    PROF(LAYERNORM_FWD, 0, (2.0 * N * C + 2.0 * C) * es(k) + 8.0 * N,
         layernorm_fwd(k, out, mean, rstd, inp, weight, bias, N, C, eps));
}
static gt_status w_layernorm_bwd(const gt_kctx *k, void *dinp, void *dweight, void *dbias,
                                 const void *dout, const void *inp, const void *weight,
                                 const float *mean, const float *rstd, int N, int C) {
    PROF(LAYERNORM_BWD, 0, (4.0 * N * C + 5.0 * C) * es(k) + 8.0 * N,
         layernorm_bwd(k, dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C));
}
static gt_status w_matmul_fwd(const gt_kctx *k, void *out, const void *inp, const void *weight,
                              const void *bias, int N, int C, int OC) {
    PROF(MATMUL_FWD, 2.0 * N * C * OC,
         ((double)N * C + (double)OC * C + (double)N * OC + (bias ? OC : 0)) * es(k),
         matmul_fwd(k, out, inp, weight, bias, N, C, OC));
}
static gt_status w_matmul_bwd(const gt_kctx *k, void *dinp, void *dweight, void *dbias,
                              const void *dout, const void *inp, const void *weight, int N, int C,
                              int OC) {
    PROF(MATMUL_BWD, 2.0 * N * C * OC * (dinp ? 2 : 1),
         ((double)N * OC + (double)N * C + 2.0 * OC * C + (dinp ? (double)OC * C + N * C : 0) +
          (dbias ? 2.0 * OC : 0)) *
             es(k),
         matmul_bwd(k, dinp, dweight, dbias, dout, inp, weight, N, C, OC));
}
static gt_status w_attention_fwd(const gt_kctx *k, void *out, float *att, const void *qkv, int B,
                                 int T, int C, int NH) {
    PROF(ATTENTION_FWD, 4.0 * B * T * T * C, 4.0 * B * T * C * es(k),
         attention_fwd(k, out, att, qkv, B, T, C, NH));
}
static gt_status w_attention_bwd(const gt_kctx *k, void *dqkv, const void *dout, const void *qkv,
                                 const void *out, const float *att, int B, int T, int C, int NH) {
    PROF(ATTENTION_BWD, 8.0 * B * T * T * C, 11.0 * B * T * C * es(k),
         attention_bwd(k, dqkv, dout, qkv, out, att, B, T, C, NH));
}
static gt_status w_gelu_fwd(const gt_kctx *k, void *out, const void *inp, size_t n) {
    PROF(GELU_FWD, 0, 2.0 * n * es(k), gelu_fwd(k, out, inp, n));
}
static gt_status w_gelu_bwd(const gt_kctx *k, void *dinp, const void *inp, const void *dout,
                            size_t n) {
    PROF(GELU_BWD, 0, 4.0 * n * es(k), gelu_bwd(k, dinp, inp, dout, n));
}
static gt_status w_residual_fwd(const gt_kctx *k, void *out, const void *a, const void *b,
                                size_t n) {
    PROF(RESIDUAL_FWD, 0, 3.0 * n * es(k), residual_fwd(k, out, a, b, n));
}
static gt_status w_residual_bwd(const gt_kctx *k, void *da, void *db, const void *dout,
                                size_t n) {
    PROF(RESIDUAL_BWD, 0, 5.0 * n * es(k), residual_bwd(k, da, db, dout, n));
}
static gt_status w_classifier_fwd(const gt_kctx *k, float *losses, const void *logits,
                                  const int32_t *targets, int N, int V, int Vp) {
    PROF(CLASSIFIER_FWD, 0, (double)N * Vp * es(k) + 8.0 * N,
         classifier_fwd(k, losses, logits, targets, N, V, Vp));
}
static gt_status w_classifier_bwd(const gt_kctx *k, void *dlogits, float *losses,
                                  const void *logits, const int32_t *targets, float dloss, int N,
                                  int V, int Vp) {
    PROF(CLASSIFIER_BWD, 0, 2.0 * N * Vp * es(k) + 8.0 * N,
         classifier_bwd(k, dlogits, losses, logits, targets, dloss, N, V, Vp));
}
static gt_status w_adamw(const gt_kctx *k, float *params, const void *grads, float *m, float *v,
                         size_t n, float lr, float beta1, float beta2, float eps,
                         float weight_decay, float grad_scale, int t) {
    PROF(ADAMW, 0, (24.0 + es(k)) * n,
         adamw(k, params, grads, m, v, n, lr, beta1, beta2, eps, weight_decay, grad_scale, t));
}
static gt_status w_sumsq(const gt_kctx *k, const void *x, size_t n, double *out_host) {
    PROF(SUMSQ, 0, (double)n * es(k), sumsq(k, x, n, out_host));
}
static double conv_flops(const gt_conv2d_shape *s) {
    return 2.0 * s->N * s->OC * gt_conv2d_out_h(s) * gt_conv2d_out_w(s) * s->C * s->KH * s->KW;
}
static double conv_bytes(const gt_conv2d_shape *s) {
    return (double)s->N * s->C * s->H * s->W + (double)s->OC * s->C * s->KH * s->KW +
           (double)s->N * s->OC * gt_conv2d_out_h(s) * gt_conv2d_out_w(s);
}
static gt_status w_conv2d_fwd(const gt_kctx *k, void *out, const void *inp, const void *weight,
                              const void *bias, const gt_conv2d_shape *s) {
    PROF(CONV2D_FWD, conv_flops(s), conv_bytes(s) * es(k),
         conv2d_fwd(k, out, inp, weight, bias, s));
}
static gt_status w_conv2d_bwd(const gt_kctx *k, void *dinp, void *dweight, void *dbias,
                              const void *dout, const void *inp, const void *weight,
                              const gt_conv2d_shape *s) {
    PROF(CONV2D_BWD, conv_flops(s) * (dinp ? 2 : 1), conv_bytes(s) * (dinp ? 2 : 1.5) * es(k),
         conv2d_bwd(k, dinp, dweight, dbias, dout, inp, weight, s));
}
static gt_status w_batchnorm_fwd(const gt_kctx *k, void *out, float *mean, float *rstd,
                                 float *running_mean, float *running_var, const void *inp,
                                 const void *weight, const void *bias, int N, int C, int HW,
                                 float eps, float momentum, int training) {
    PROF(BATCHNORM_FWD, 0, 2.0 * N * C * HW * es(k),
         batchnorm_fwd(k, out, mean, rstd, running_mean, running_var, inp, weight, bias, N, C, HW,
                       eps, momentum, training));
}
static gt_status w_batchnorm_bwd(const gt_kctx *k, void *dinp, void *dweight, void *dbias,
                                 const void *dout, const void *inp, const void *weight,
                                 const float *mean, const float *rstd, int N, int C, int HW) {
    PROF(BATCHNORM_BWD, 0, 4.0 * N * C * HW * es(k),
         batchnorm_bwd(k, dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C, HW));
}
static gt_status w_relu_fwd(const gt_kctx *k, void *out, const void *inp, size_t n) {
    PROF(RELU_FWD, 0, 2.0 * n * es(k), relu_fwd(k, out, inp, n));
}
static gt_status w_relu_bwd(const gt_kctx *k, void *dinp, const void *out, const void *dout,
                            size_t n) {
    PROF(RELU_BWD, 0, 4.0 * n * es(k), relu_bwd(k, dinp, out, dout, n));
}
static gt_status w_avgpool_fwd(const gt_kctx *k, void *out, const void *inp, int N, int C,
                               int HW) {
    PROF(AVGPOOL_FWD, 0, ((double)N * C * HW + (double)N * C) * es(k),
         avgpool_fwd(k, out, inp, N, C, HW));
}
static gt_status w_avgpool_bwd(const gt_kctx *k, void *dinp, const void *dout, int N, int C,
                               int HW) {
    PROF(AVGPOOL_BWD, 0, (2.0 * N * C * HW + (double)N * C) * es(k),
         avgpool_bwd(k, dinp, dout, N, C, HW));
}
static gt_status w_cast(const gt_kctx *k, void *dst, gt_dtype dst_dt, const void *src,
                        gt_dtype src_dt, size_t n) {
    PROF(CAST, 0, (double)n * (gt_dtype_size(dst_dt) + gt_dtype_size(src_dt)),
         cast(k, dst, dst_dt, src, src_dt, n));
}
static gt_status w_matmul_gelu_fwd(const gt_kctx *k, void *out, void *pre, const void *inp,
                                   const void *weight, const void *bias, int N, int C, int OC) {
    PROF(MATMUL_GELU_FWD, 2.0 * N * C * OC,
         ((double)N * C + (double)OC * C + 2.0 * N * OC + (bias ? OC : 0)) * es(k),
         matmul_gelu_fwd(k, out, pre, inp, weight, bias, N, C, OC));
}
static gt_status w_matmul_dgelu_bwd(const gt_kctx *k, void *dpre, void *dweight, void *dbias,
                                    const void *dout, const void *inp, const void *weight,
                                    const void *pre, int N, int C, int OC) {
    PROF(MATMUL_DGELU_BWD, 4.0 * N * C * OC,
         ((double)N * OC + 3.0 * N * C + 3.0 * OC * C + (dbias ? 2.0 * OC : 0)) * es(k),
         matmul_dgelu_bwd(k, dpre, dweight, dbias, dout, inp, weight, pre, N, C, OC));
}

/* Every op of GT_OP_LIST has its wrapper: a list entry without one fails to
 * compile here (w_<name> undeclared). */
static const gt_ops g_wrap = {
#define GT_PROF_WRAP_(ENUM, name) .name = w_##name,
    GT_OP_LIST(GT_PROF_WRAP_)
#undef GT_PROF_WRAP_
};

/* ---- lifetime --------------------------------------------------------------------------- */

static void trace_open(gt_profile *p) {
    const char *path = p->cfg.trace_path;
    if (p->cfg.nranks > 1) {
        size_t n = strlen(path);
        int json = n > 5 && strcmp(path + n - 5, ".json") == 0;
        snprintf(p->trace_path, sizeof p->trace_path, "%.*s.rank%d%s",
                 (int)(json ? n - 5 : n), path, p->cfg.rank, json ? ".json" : "");
    } else {
        snprintf(p->trace_path, sizeof p->trace_path, "%s", path);
    }
    p->trace = fopen(p->trace_path, "w");
    if (!p->trace) return;
    /* Chrome's JSON array format: a file cut short (a killed run) still loads */
    int pid = p->cfg.rank;
    fprintf(p->trace,
            "[\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
            "\"args\":{\"name\":\"rank %d (%s)\"}},\n"
            "{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
            "\"args\":{\"sort_index\":%d}},\n"
            "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
            "\"args\":{\"name\":\"steps\"}},\n"
            "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":1,"
            "\"args\":{\"name\":\"%s\"}},\n"
            "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":2,"
            "\"args\":{\"name\":\"data and communication\"}}",
            pid, p->cfg.rank, p->be->name, pid, p->cfg.rank, pid, pid,
            p->device ? "ops (device stream, events)" : "ops", pid);
}

/* The instrumentation's own cost per call: an armed enter/leave around no
 * call, timed over many (device marks included: their host cost). */
static void calibrate(gt_profile *p) {
    int armed = p->armed, slow = p->slow_on, mem = p->mem_step;
    FILE *trace = p->trace;
    p->armed = 1;
    p->slow_on = 0;
    p->mem_step = 0;
    p->trace = NULL;
    enum { N = 2000 };
    uint64_t t0 = gt_now_ns();
    for (int i = 0; i < N; i++) {
        prof_call c;
        prof_enter(p, GT_OP_RESIDUAL_FWD, &c);
        prof_leave(p, &c, 0, 0);
        if (p->used_marks + 2 > p->nmarks) p->used_marks = 0;
        p->nev = 0;
    }
    uint64_t t1 = gt_now_ns();
    if (p->device) (void)p->be->synchronize(p->be);
    p->call_cost_us = (double)(t1 - t0) * 1e-3 / N;
    memset(p->acc_ns, 0, sizeof p->acc_ns);
    memset(p->calls, 0, sizeof p->calls);
    memset(p->flops, 0, sizeof p->flops);
    memset(p->bytes, 0, sizeof p->bytes);
    p->used_marks = 0;
    p->nev = 0;
    p->armed = armed;
    p->slow_on = slow;
    p->mem_step = mem;
    p->trace = trace;
}

gt_status gt_profile_new(gt_backend *be, const gt_profile_config *cfg, gt_profile **out) {
    *out = NULL;
    if (!be || !cfg || cfg->max_steps < 1)
        return GT_ERR(GT_ERR_INVALID, "gt_profile_new: NULL backend or config, or no steps");
    if (be->profile)
        return GT_ERR(GT_ERR_INVALID, "backend '%s' is already profiled", be->name);
    gt_profile *p = calloc(1, sizeof *p);
    if (!p) return GT_ERR(GT_ERR_OOM, "no host memory for the profile");
    p->cfg = *cfg;
    p->be = be;
    p->inner = be->ops;
    p->device = be->mark_new && be->mark_record && be->mark_elapsed;
    p->open_region = -1;
    p->step_mark = -1;
    size_t n = (size_t)cfg->max_steps;
    p->samples = calloc(n * GT_PROF_PARTS, sizeof *p->samples);
    p->incl_samples = calloc(n * GT_PROF_REGION_COUNT, sizeof *p->incl_samples);
    p->step_ms = calloc(n, sizeof *p->step_ms);
    p->without_ms = calloc(n, sizeof *p->without_ms);
    p->all_ms = calloc(n, sizeof *p->all_ms);
    p->all_on = malloc(n);
    if (p->all_on) memset(p->all_on, -1, n);
    if (!p->samples || !p->incl_samples || !p->step_ms || !p->without_ms || !p->all_ms ||
        !p->all_on) {
        gt_profile_free(p);
        return GT_ERR(GT_ERR_OOM, "no host memory for a profile of %d steps", cfg->max_steps);
    }
    /* the wrapping table keeps the backend's empty slots empty */
    p->ops = g_wrap;
    p->ops.attention_state_floats = p->inner->attention_state_floats;
#define GT_PROF_CLEAR_(ENUM, name)                                                                 \
    if (!p->inner->name) p->ops.name = NULL;
    GT_OP_LIST(GT_PROF_CLEAR_)
#undef GT_PROF_CLEAR_
    p->slow_on = cfg->slow_factor > 1 && (int)cfg->slow_op >= 0 && cfg->slow_op < GT_OP_COUNT;
    if (cfg->trace_path) {
        trace_open(p);
        if (!p->trace) {
            gt_status s = GT_ERR(GT_ERR_IO,
                                 "--trace: cannot create '%s' (%s): give a path in a writable "
                                 "directory",
                                 p->trace_path, strerror(errno));
            gt_profile_free(p);
            return s;
        }
    }
    be->profile = p;
    be->ops = &p->ops;
    p->attached = 1;
    calibrate(p);
    *out = p;
    return GT_OK;
}

void gt_profile_detach(gt_profile *p) {
    if (!p || !p->attached) return;
    if (p->trace) {
        fprintf(p->trace, "\n]\n");
        fclose(p->trace);
        p->trace = NULL;
    }
    for (size_t i = 0; i < p->nmarks; i++)
        if (p->marks[i] && p->be->mark_free) p->be->mark_free(p->be, p->marks[i]);
    free(p->marks);
    p->marks = NULL;
    p->nmarks = p->used_marks = 0;
    p->be->ops = p->inner;
    p->be->profile = NULL;
    p->attached = 0;
}

void gt_profile_free(gt_profile *p) {
    if (!p) return;
    gt_profile_detach(p);
    if (p->trace) fclose(p->trace);
    free(p->ev);
    free(p->samples);
    free(p->incl_samples);
    free(p->step_ms);
    free(p->without_ms);
    free(p->all_ms);
    free(p->all_on);
    free(p);
}

/* ---- steps ------------------------------------------------------------------------------ */

gt_status gt_profile_step_begin(gt_profile *p, int i, uint64_t t0_ns) {
    if (!p->attached) return GT_OK;
    p->step_i = i;
    p->step_t0 = t0_ns;
    p->armed = !p->stopped &&
               !(p->cfg.overhead_every > 0 && i > 0 && i % p->cfg.overhead_every == 0);
    p->mem_step = i == 0;
    p->in_step = 1;
    /* a step without the profiler runs on the backend's own table, unless an op
     * is slowed: the fault lives in the wrapper */
    p->be->ops = p->armed || p->slow_on ? &p->ops : p->inner;
    memset(p->acc_ns, 0, sizeof p->acc_ns);
    memset(p->incl_ns, 0, sizeof p->incl_ns);
    memset(p->calls, 0, sizeof p->calls);
    memset(p->flops, 0, sizeof p->flops);
    memset(p->bytes, 0, sizeof p->bytes);
    p->open_region = -1;
    p->nev = 0;
    p->used_marks = 0;
    p->step_mark = p->armed && p->device ? mark_get(p) : -1;
    return GT_OK;
}

static void region_record(gt_profile *p, gt_prof_region r, uint64_t t0, uint64_t t1,
                          double ops_ns, double bytes) {
    int part = GT_PROF_PART_REGION(r);
    double incl = t1 > t0 ? (double)(t1 - t0) : 0;
    p->incl_ns[r] += incl;
    p->acc_ns[part] += incl > ops_ns ? incl - ops_ns : 0;
    p->calls[part] += 1;
    p->bytes[part] += bytes;
    if (p->trace) {
        prof_event e = {part, t0, t1, -1, -1, 0, bytes};
        event_push(p, &e);
    }
}

void gt_profile_region_begin(gt_profile *p, gt_prof_region r) {
    if (!p || !p->attached || !p->armed || p->open_region >= 0) return;
    p->open_region = (int)r;
    p->region_ops_ns = 0;
    p->region_t0 = gt_now_ns();
}

void gt_profile_region_end(gt_profile *p, gt_prof_region r, double bytes) {
    if (!p || !p->attached || !p->armed || p->open_region != (int)r) return;
    region_record(p, r, p->region_t0, gt_now_ns(), p->region_ops_ns, bytes);
    p->open_region = -1;
}

void gt_profile_region_add(gt_profile *p, gt_prof_region r, uint64_t t0_ns, uint64_t t1_ns,
                           double bytes) {
    if (!p || !p->attached || !p->armed) return;
    region_record(p, r, t0_ns, t1_ns, 0, bytes);
}

static void trace_write_step(gt_profile *p, uint64_t t1, const double *dev_start_us) {
    FILE *f = p->trace;
    int pid = p->cfg.rank;
    fprintf(f,
            ",\n{\"name\":\"step %d\",\"cat\":\"step\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,"
            "\"pid\":%d,\"tid\":0,\"args\":{\"step\":%d}}",
            p->step_i + 1, (double)p->step_t0 * 1e-3, (double)(t1 - p->step_t0) * 1e-3, pid,
            p->step_i + 1);
    for (size_t j = 0; j < p->nev; j++) {
        const prof_event *e = &p->ev[j];
        const char *name = gt_profile_part_name(e->part);
        double ts = (double)e->t0 * 1e-3, dur = (double)(e->t1 - e->t0) * 1e-3;
        if (e->part < GT_OP_COUNT) {
            if (p->device) {
                if (!dev_start_us || e->ma < 0 || e->mb < 0) continue;
                ts = dev_start_us[2 * j];
                dur = dev_start_us[2 * j + 1];
            }
            fprintf(f,
                    ",\n{\"name\":\"%s\",\"cat\":\"op\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,"
                    "\"pid\":%d,\"tid\":1,\"args\":{\"step\":%d",
                    name, ts, dur, pid, p->step_i + 1);
            if (e->flops > 0) fprintf(f, ",\"flops\":%.17g", e->flops);
            if (e->bytes > 0) fprintf(f, ",\"bytes\":%.17g", e->bytes);
            fprintf(f, "}}");
        } else {
            int r = e->part - GT_OP_COUNT;
            int tid = r == GT_PROF_OPTIMIZER ? 0 : 2;
            const char *cat = r == GT_PROF_DATA_WAIT ? "data" : r == GT_PROF_OPTIMIZER ? "optimizer"
                                                                                      : "comm";
            fprintf(f,
                    ",\n{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,"
                    "\"pid\":%d,\"tid\":%d,\"args\":{\"step\":%d",
                    name, cat, ts, dur, pid, tid, p->step_i + 1);
            if (r == GT_PROF_ALLREDUCE_ISSUED || r == GT_PROF_ALLREDUCE_EXPOSED ||
                e->bytes > 0)
                fprintf(f, ",\"bytes\":%.17g", e->bytes);
            fprintf(f, "}}");
        }
        p->trace_events++;
    }
    fflush(f);
}

gt_status gt_profile_step_end(gt_profile *p, uint64_t t1_ns) {
    if (!p->attached) return GT_OK;
    double step_ms = (double)(t1_ns - p->step_t0) * 1e-6;
    p->in_step = 0;
    if (p->step_i >= 0 && p->step_i < p->cfg.max_steps) {
        p->all_ms[p->step_i] = step_ms;
        p->all_on[p->step_i] = (signed char)p->armed;
    }
    if (!p->armed) {
        if (p->nwithout < p->cfg.max_steps && !p->stopped) p->without_ms[p->nwithout++] = step_ms;
        if (p->trace) {
            fprintf(p->trace,
                    ",\n{\"name\":\"step %d\",\"cat\":\"step\",\"ph\":\"X\",\"ts\":%.3f,"
                    "\"dur\":%.3f,\"pid\":%d,\"tid\":0,\"args\":{\"step\":%d,"
                    "\"profiled\":false}}",
                    p->step_i + 1, (double)p->step_t0 * 1e-3, step_ms * 1e3, p->cfg.rank,
                    p->step_i + 1);
            fflush(p->trace);
        }
        return GT_OK;
    }
    if (p->open_region >= 0) p->open_region = -1; /* an error path left it open */
    double *dev = NULL;
    gt_status s = GT_OK;
    if (p->device) {
        /* the step's synchronisation has passed every mark: read them back */
        dev = p->trace ? malloc((2 * p->nev + 1) * sizeof *dev) : NULL;
        double host0 = (double)p->step_t0 * 1e-3;
        for (size_t j = 0; j < p->nev && s == GT_OK; j++) {
            prof_event *e = &p->ev[j];
            if (e->part >= GT_OP_COUNT || e->ma < 0 || e->mb < 0) continue;
            double sec = 0, from = 0;
            s = p->be->mark_elapsed(p->be, p->marks[e->ma], p->marks[e->mb], &sec);
            if (s == GT_OK && dev && p->step_mark >= 0)
                s = p->be->mark_elapsed(p->be, p->marks[p->step_mark], p->marks[e->ma], &from);
            if (s != GT_OK) break;
            p->acc_ns[e->part] += sec * 1e9;
            if (dev) {
                dev[2 * j] = host0 + from * 1e6;
                dev[2 * j + 1] = sec * 1e6;
            }
        }
        if (s != GT_OK) {
            free(dev);
            return gt_error_wrap(s, "reading the profile's device marks of step %d",
                                 p->step_i + 1);
        }
    }
    if (p->trace) trace_write_step(p, t1_ns, dev);
    free(dev);
    if (p->step_i == 0) return GT_OK; /* warm-up: memory only, as ms_per_step skips it */
    double step_ns = (double)(t1_ns - p->step_t0);
    double parts = 0;
    for (int k = 0; k < GT_PROF_PART_REST; k++) parts += p->acc_ns[k];
    double over = parts - step_ns;
    if (over * 1e-6 > p->max_overlap_ms) p->max_overlap_ms = over * 1e-6;
    p->acc_ns[GT_PROF_PART_REST] = over > 0 ? 0 : -over;
    p->calls[GT_PROF_PART_REST] = 1;
    size_t n = (size_t)p->cfg.max_steps, i = (size_t)p->nprof;
    if (i >= n) return GT_OK;
    for (int k = 0; k < GT_PROF_PARTS; k++) {
        p->samples[(size_t)k * n + i] = p->acc_ns[k] * 1e-6;
        p->tot_calls[k] += p->calls[k];
        p->tot_flops[k] += p->flops[k];
        p->tot_bytes[k] += p->bytes[k];
    }
    for (int r = 0; r < GT_PROF_REGION_COUNT; r++)
        p->incl_samples[(size_t)r * n + i] = p->incl_ns[r] * 1e-6;
    for (int k = 0; k < GT_PROF_PARTS; k++) p->sum_parts_ms[k] += p->acc_ns[k] * 1e-6;
    p->sum_step_ms += step_ms;
    p->step_ms[i] = step_ms;
    p->nprof++;
    /* over the limit after two profiled steps: off for the rest of the run, unless told */
    double calls = 0;
    for (int k = 0; k < GT_OP_COUNT; k++) calls += p->calls[k];
    /* against the fastest profiled step so far: a step the machine preempted is
     * long and would make the same calls look cheap */
    double fastest = step_ms;
    for (int j = 0; j < p->nprof; j++)
        if (p->step_ms[j] > 0 && p->step_ms[j] < fastest) fastest = p->step_ms[j];
    double est = p->call_cost_us * 1e-3 * calls / fastest;
    if (p->nprof >= 2 && !p->cfg.keep_over_limit && est > GT_PROFILE_OVERHEAD_LIMIT) {
        p->stopped = 1;
        snprintf(p->stop_reason, sizeof p->stop_reason,
                 "stopped after step %d: overhead estimate %.2f%% of the step exceeds %.0f%% "
                 "(--profile on keeps it)",
                 p->step_i + 1, 100.0 * est, 100.0 * GT_PROFILE_OVERHEAD_LIMIT);
    }
    return GT_OK;
}

/* ---- figures ---------------------------------------------------------------------------- */

gt_status gt_profile_part_get(const gt_profile *p, int part, gt_profile_part *out) {
    memset(out, 0, sizeof *out);
    if (!p || part < 0 || part >= GT_PROF_PARTS)
        return GT_ERR(GT_ERR_INVALID, "profile part %d out of range", part);
    size_t n = (size_t)p->cfg.max_steps;
    double steps = p->nprof > 0 ? p->nprof : 1;
    out->name = gt_profile_part_name(part);
    out->kind = gt_profile_part_kind(part);
    out->calls_per_step = p->tot_calls[part] / steps;
    out->samples_ms = p->samples + (size_t)part * n;
    out->n_samples = (size_t)p->nprof;
    out->flops_per_step = p->tot_flops[part] / steps;
    out->bytes_per_step = p->tot_bytes[part] / steps;
    if (part >= GT_OP_COUNT && part < GT_PROF_PART_REST)
        out->inclusive_ms =
            gt_median(p->incl_samples + (size_t)(part - GT_OP_COUNT) * n, (size_t)p->nprof);
    if (part < GT_OP_COUNT) {
        out->mem_known = p->mem_known[part];
        out->peak_bytes = p->mem_peak[part];
        out->scratch_bytes = p->mem_scratch[part];
    }
    return GT_OK;
}

void gt_profile_get_info(const gt_profile *p, gt_profile_info *out) {
    memset(out, 0, sizeof *out);
    if (!p) return;
    out->clock = p->device ? "device events" : "host clock";
    out->steps_profiled = p->nprof;
    out->step_ms = p->step_ms;
    out->steps_without = p->nwithout;
    out->without_ms = p->without_ms;
    /* each step without the profiler against the mean of its two neighbours, which
     * had it: a machine whose load drifts moves both alike */
    out->overhead_ms = NAN;
    double *d = malloc((size_t)p->cfg.max_steps * sizeof *d);
    size_t nd = 0;
    for (int i = 2; d && i + 1 < p->cfg.max_steps; i++)
        if (p->all_on[i] == 0 && p->all_on[i - 1] == 1 && p->all_on[i + 1] == 1)
            d[nd++] = 0.5 * (p->all_ms[i - 1] + p->all_ms[i + 1]) - p->all_ms[i];
    if (nd >= 2) out->overhead_ms = gt_median(d, nd);
    out->overhead_pairs = (int)nd;
    free(d);
    double parts = 0;
    for (int k = 0; k < GT_PROF_PARTS; k++) parts += p->sum_parts_ms[k];
    out->step_mean_ms = p->nprof ? p->sum_step_ms / p->nprof : NAN;
    out->parts_mean_ms = p->nprof ? parts / p->nprof : NAN;
    out->call_cost_us = p->call_cost_us;
    double calls = 0;
    for (int k = 0; k < GT_OP_COUNT; k++) calls += p->tot_calls[k];
    out->calls_per_step = p->nprof > 0 ? calls / p->nprof : 0;
    out->estimate_ms = out->call_cost_us * out->calls_per_step * 1e-3;
    out->max_overlap_ms = p->max_overlap_ms;
    out->trace_files = p->trace_path[0] != '\0';
    snprintf(out->trace_path, sizeof out->trace_path, "%s", p->trace_path);
    snprintf(out->stopped, sizeof out->stopped, "%s", p->stop_reason);
    if (p->slow_on) {
        snprintf(out->slowed, sizeof out->slowed, "%s", gt_op_name(p->cfg.slow_op));
        out->slow_factor = p->cfg.slow_factor;
    }
}
