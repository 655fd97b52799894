/* Tensor parallelism for gpt2 (gpt2.h, "Tensor parallelism"; Megatron-LM's
 * layers): which slice of each tensor a rank holds, the slices to and from
 * the one-rank layout, the initialisation of a slice, the collectives inside
 * the group, the vocabulary-parallel embedding and cross-entropy.
 *
 * A tensor is split one of three ways (tp_split): not at all (replicated:
 * wpe, the LayerNorms, the row-parallel layers' biases), by rows (wte's
 * vocabulary rows; qkvw, qkvb in three groups q, k, v, each cut in tp
 * blocks, so a rank holds whole heads; fcw, fcb's hidden units), or by
 * columns (attprojw, fcprojw: the inputs of the row-parallel layers). */
#include "models/gpt2/gpt2_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/ops.h"
#include "engine/rng.h"

enum { SPLIT_NONE = 0, SPLIT_ROWS, SPLIT_COLS };

typedef struct tp_split {
    int kind;
    int groups;        /* SPLIT_ROWS: row groups, each cut in tp blocks (qkv: 3) */
    size_t rows, cols; /* one layer's slice of the whole tensor */
} tp_split;

static int is_layered(int i) { return i >= P_LN1W && i <= P_FCPROJB; }

/* Tensor i of the whole model (one layer's slice) and how it is split. */
static tp_split split_of(const gt_gpt2_config *c, int i) {
    size_t C = (size_t)c->channels;
    switch (i) {
    case P_WTE: return (tp_split){SPLIT_ROWS, 1, (size_t)c->padded_vocab_size, C};
    case P_WPE: return (tp_split){SPLIT_NONE, 1, (size_t)c->max_seq_len, C};
    case P_QKVW: return (tp_split){SPLIT_ROWS, 3, 3 * C, C};
    case P_QKVB: return (tp_split){SPLIT_ROWS, 3, 3 * C, 1};
    case P_ATTPROJW: return (tp_split){SPLIT_COLS, 1, C, C};
    case P_FCW: return (tp_split){SPLIT_ROWS, 1, 4 * C, C};
    case P_FCB: return (tp_split){SPLIT_ROWS, 1, 4 * C, 1};
    case P_FCPROJW: return (tp_split){SPLIT_COLS, 1, C, 4 * C};
    default: return (tp_split){SPLIT_NONE, 1, C, 1}; /* LayerNorms, attprojb, fcprojb */
    }
}

size_t gt_gpt2_full_params(const gt_gpt2_config *c) {
    size_t n = 0;
    for (int i = 0; i < GT_GPT2_NUM_TENSORS; i++) {
        tp_split sp = split_of(c, i);
        n += sp.rows * sp.cols * (size_t)(is_layered(i) ? c->num_layers : 1);
    }
    return n;
}

gt_status gt_gpt2_tp_dims(const gt_gpt2_config *c, int tp, gpt2_dims *d) {
    if (tp < 1 || c->num_heads % tp != 0)
        return GT_ERR(GT_ERR_INVALID,
                      "tensor parallelism over %d ranks splits the attention by heads: "
                      "the model's %d heads must be a multiple of %d (use --heads or another tp)",
                      tp, c->num_heads, tp);
    if (c->padded_vocab_size % tp != 0)
        return GT_ERR(GT_ERR_INVALID,
                      "tensor parallelism over %d ranks splits the vocabulary: the padded "
                      "vocabulary %d must be a multiple of %d (use --padded-vocab)",
                      tp, c->padded_vocab_size, tp);
    int C = c->channels;
    *d = (gpt2_dims){.qkv = 3 * C / tp, .att = C / tp, .heads = c->num_heads / tp,
                     .fc = 4 * C / tp, .vocab = c->padded_vocab_size / tp};
    return GT_OK;
}

gt_status gt_gpt2_tp_alloc(gt_gpt2 *m, int N) {
    if (m->be->device != GT_DEVICE_HOST)
        return GT_ERR(GT_ERR_UNSUPPORTED,
                      "tensor parallel gpt2 runs on the host backends (cpu, ref) for now: its "
                      "vocabulary-parallel loss has no %s kernel yet",
                      m->be->name);
    if (m->dt != GT_DTYPE_FP32)
        return GT_ERR(GT_ERR_UNSUPPORTED,
                      "tensor parallel gpt2 in %s is not done yet: use --precision fp32",
                      gt_dtype_name(m->dt));
    m->tok_local = malloc((size_t)N * sizeof *m->tok_local);
    m->own = malloc((size_t)N);
    m->ce = malloc(3 * (size_t)N * sizeof *m->ce);
    if (!m->tok_local || !m->own || !m->ce)
        return GT_ERR(GT_ERR_OOM, "out of host memory for the tensor-parallel buffers");
    return GT_OK;
}

int gt_gpt2_tp_size(const gt_gpt2 *m) { return m->tp; }

void gt_gpt2_tp_traffic(const gt_gpt2 *m, uint64_t *calls, uint64_t *bytes) {
    *calls = m->tp_calls;
    *bytes = m->tp_bytes;
}

/* ---- the slices -------------------------------------------------------------------- */

/* Calls fn for each contiguous run of rank r's slice of one layer of tensor
 * i: `local` elements into the rank's slice, `global` into the whole's. */
typedef void (*run_fn)(void *ctx, int i, size_t local, size_t global, size_t n);

static void tp_runs(const gt_gpt2 *m, int i, int r, run_fn fn, void *ctx) {
    tp_split sp = split_of(&m->cfg, i);
    size_t T = (size_t)m->tp;
    if (sp.kind == SPLIT_NONE) {
        fn(ctx, i, 0, 0, sp.rows * sp.cols);
    } else if (sp.kind == SPLIT_ROWS) {
        size_t per = sp.rows / sp.groups, rl = per / T;
        for (int g = 0; g < sp.groups; g++)
            fn(ctx, i, g * rl * sp.cols, (g * per + (size_t)r * rl) * sp.cols, rl * sp.cols);
    } else {
        size_t kl = sp.cols / T;
        for (size_t row = 0; row < sp.rows; row++)
            fn(ctx, i, row * kl, row * sp.cols + (size_t)r * kl, kl);
    }
}

/* Where layer l of tensor i starts in the canonical (llm.c) order: of the
 * whole model, and of a rank's slices. */
static size_t full_offset(const gt_gpt2 *m, int i, int l) {
    size_t off = 0;
    for (int j = 0; j < i; j++) {
        tp_split sp = split_of(&m->cfg, j);
        off += sp.rows * sp.cols * (size_t)(is_layered(j) ? m->cfg.num_layers : 1);
    }
    tp_split sp = split_of(&m->cfg, i);
    return off + (size_t)l * sp.rows * sp.cols;
}

static size_t local_offset(const gt_gpt2 *m, int i, int l) {
    size_t off = 0;
    for (int j = 0; j < i; j++) off += m->ps.t[j].n;
    return off + (size_t)l * (m->ps.t[i].n / (size_t)(is_layered(i) ? m->cfg.num_layers : 1));
}

typedef struct copy_ctx {
    float *dst;
    const float *src;
    size_t dbase, sbase;
    int to_full; /* 1: local -> full, 0: full -> local */
} copy_ctx;

static void copy_run(void *ctx, int i, size_t local, size_t global, size_t n) {
    copy_ctx *c = ctx;
    (void)i;
    if (c->to_full)
        memcpy(c->dst + c->dbase + global, c->src + c->sbase + local, n * sizeof(float));
    else
        memcpy(c->dst + c->dbase + local, c->src + c->sbase + global, n * sizeof(float));
}

/* Rank r's slices (its canonical order) from or into the whole model's. */
static void tp_copy(const gt_gpt2 *m, int r, const float *src, float *dst, int to_full) {
    for (int i = 0; i < GT_GPT2_NUM_TENSORS; i++) {
        int nl = is_layered(i) ? m->cfg.num_layers : 1;
        for (int l = 0; l < nl; l++) {
            size_t lo = local_offset(m, i, l), fo = full_offset(m, i, l);
            copy_ctx c = {.dst = dst, .src = src, .to_full = to_full,
                          .dbase = to_full ? fo : lo, .sbase = to_full ? lo : fo};
            tp_runs(m, i, r, copy_run, &c);
        }
    }
}

void gt_gpt2_tp_gather(const gt_gpt2 *m, const float *locals, float *full) {
    size_t np = m->ps.num_params;
    for (int r = 0; r < m->tp; r++) tp_copy(m, r, locals + (size_t)r * np, full, 1);
}

gt_status gt_gpt2_tp_set_full(gt_gpt2 *m, const float *full) {
    float *local = malloc(m->ps.num_params * sizeof(float));
    if (!local) return GT_ERR(GT_ERR_OOM, "out of host memory for a rank's slices");
    tp_copy(m, m->tp_rank, full, local, 0);
    gt_status s = gt_params_set(&m->ps, local);
    free(local);
    return s;
}

/* gt_gpt2_init_random's values at the slice's places: the same (seed,
 * stream, index) as one rank draws there. */
typedef struct init_ctx {
    const gt_gpt2 *m;
    float *dst;
    size_t base;
    uint64_t seed, stream;
} init_ctx;

static void init_run(void *ctx, int i, size_t local, size_t global, size_t n) {
    init_ctx *c = ctx;
    const gt_gpt2_config *cfg = &c->m->cfg;
    float *d = c->dst + c->base + local;
    float proj_std = 0.02f / sqrtf(2.0f * (float)cfg->num_layers);
    switch (i) {
    case P_LN1W: case P_LN2W: case P_LNFW:
        for (size_t j = 0; j < n; j++) d[j] = 1.0f;
        break;
    case P_QKVB: case P_ATTPROJB: case P_FCB: case P_FCPROJB:
    case P_LN1B: case P_LN2B: case P_LNFB:
        memset(d, 0, n * sizeof(float));
        break;
    case P_ATTPROJW: case P_FCPROJW:
        gt_rng_fill_normal(d, n, 0.0f, proj_std, c->seed, c->stream, global);
        break;
    case P_WTE: { /* real rows only; padding rows stay exactly zero */
        size_t real = (size_t)cfg->vocab_size * cfg->channels;
        size_t drawn = global >= real ? 0 : (real - global < n ? real - global : n);
        gt_rng_fill_normal(d, drawn, 0.0f, 0.02f, c->seed, c->stream, global);
        memset(d + drawn, 0, (n - drawn) * sizeof(float));
        break;
    }
    default:
        gt_rng_fill_normal(d, n, 0.0f, 0.02f, c->seed, c->stream, global);
    }
}

gt_status gt_gpt2_tp_init_random(gt_gpt2 *m, uint64_t seed) {
    float *local = malloc(m->ps.num_params * sizeof(float));
    if (!local) return GT_ERR(GT_ERR_OOM, "out of host memory for a rank's slices");
    for (int i = 0; i < GT_GPT2_NUM_TENSORS; i++) {
        int nl = is_layered(i) ? m->cfg.num_layers : 1;
        for (int l = 0; l < nl; l++) {
            init_ctx c = {.m = m, .dst = local, .base = local_offset(m, i, l), .seed = seed,
                          .stream = ((uint64_t)i << 16) | (uint64_t)l};
            tp_runs(m, i, m->tp_rank, init_run, &c);
        }
    }
    gt_status s = gt_params_set(&m->ps, local);
    free(local);
    return s;
}

gt_status gt_gpt2_tp_replicated_sumsq(gt_gpt2 *m, const void *grads, size_t lo, size_t hi,
                                      double *out) {
    *out = 0.0;
    if (!m->be->ops->sumsq)
        return GT_ERR(GT_ERR_UNSUPPORTED, "backend '%s' has no sumsq op", m->be->name);
    for (int i = 0; i < GT_GPT2_NUM_TENSORS; i++) {
        if (split_of(&m->cfg, i).kind != SPLIT_NONE) continue;
        int nl = is_layered(i) ? m->cfg.num_layers : 1;
        size_t per = m->ps.t[i].n / (size_t)nl;
        for (int l = 0; l < nl; l++) {
            size_t a = gt_params_offset(&m->ps, i, l), b = a + per;
            if (a < lo) a = lo;
            if (b > hi) b = hi;
            if (a >= b) continue;
            double part = 0.0;
            GT_TRY(m->be->ops->sumsq(&m->ps.k, (const char *)grads + a * m->es, b - a, &part));
            *out += part;
        }
    }
    return GT_OK;
}

/* ---- collectives inside the group ------------------------------------------------------ */

static int is_pow2(int x) { return x > 0 && (x & (x - 1)) == 0; }

/* The sum of buf over the group, in place, the same bits on every rank
 * (the replicated tensors' gradients must stay equal): the fixed binary
 * tree of gt_comm_allreduce_tree for a power-of-two group, else the
 * library's all-reduce (every rank the same bits in practice, not by the
 * standard). */
static gt_status group_sum(gt_gpt2 *m, void *buf, size_t count, gt_dtype dt) {
    m->tp_calls++;
    m->tp_bytes += count * gt_dtype_size(dt);
    if (is_pow2(m->tp)) return gt_comm_allreduce_tree(m->tp_comm, buf, count, dt);
    return gt_comm_allreduce(m->tp_comm, buf, buf, count, dt, GT_REDOP_SUM, NULL);
}

gt_status gt_gpt2_tp_sum(gt_gpt2 *m, void *buf, size_t count) {
    if (m->tp <= 1) return GT_OK;
    return group_sum(m, buf, count, m->dt);
}

/* ---- the vocabulary-parallel embedding ---------------------------------------------- */

/* tok_local: the tokens as rows of this rank's wte slice (0 where another
 * rank holds them), own: 1 where this rank does. */
static void local_tokens(gt_gpt2 *m, const int32_t *tok, int N) {
    int lo = m->tp_rank * m->d.vocab, hi = lo + m->d.vocab;
    for (int i = 0; i < N; i++) {
        int in = tok[i] >= lo && tok[i] < hi;
        m->own[i] = (unsigned char)in;
        m->tok_local[i] = in ? tok[i] - lo : 0;
    }
}

/* Rows i of x (N,C) where this rank does not hold token i set to zero. */
static gt_status zero_foreign_rows(gt_gpt2 *m, void *x, int N) {
    size_t row = (size_t)m->cfg.channels * m->es;
    for (int i = 0; i < N;) {
        if (m->own[i]) {
            i++;
            continue;
        }
        int j = i;
        while (j < N && !m->own[j]) j++;
        GT_TRY(m->be->memset_zero(m->be, (char *)x + (size_t)i * row, (size_t)(j - i) * row));
        i = j;
    }
    return GT_OK;
}

gt_status gt_gpt2_tp_encoder_fwd(gt_gpt2 *m, const int32_t *inputs, int B, int T) {
    int N = B * T, C = m->cfg.channels;
    local_tokens(m, inputs, N);
    GT_TRY(m->be->copy_to_device(m->be, m->act[A_TOKLOC], m->tok_local, (size_t)N * sizeof(int32_t)));
    GT_TRY(m->be->ops->encoder_fwd(&m->ps.k, ACT(A_ENCODED, 0), m->act[A_TOKLOC], PW(m, P_WTE, 0),
                                   PW(m, P_WPE, 0), B, T, C)); // (B,T,C)
    /* one rank's row is wte[tok] + wpe[t], every other rank's 0: the sum
     * is exact, one rank's bits */
    GT_TRY(zero_foreign_rows(m, ACT(A_ENCODED, 0), N));
    return gt_gpt2_tp_sum(m, ACT(A_ENCODED, 0), (size_t)N * C);
}

gt_status gt_gpt2_tp_encoder_bwd(gt_gpt2 *m, int B, int T) {
    int N = B * T, C = m->cfg.channels;
    gt_backend *be = m->be;
    const gt_kctx *k = &m->ps.k;
    size_t NC = (size_t)N * C;
    /* the slot's tokens (a pipeline runs other micro-batches in between) */
    GT_TRY(be->copy_to_host(be, m->tok_local, m->act[A_TOKENS], (size_t)N * sizeof(int32_t)));
    local_tokens(m, m->tok_local, N);
    GT_TRY(be->copy_to_device(be, m->act[A_TOKLOC], m->tok_local, (size_t)N * sizeof(int32_t)));
    void *dres = ACT(A_DRES, 0), *dmask = ACT(A_DLN, 0), *scratch = ACT(A_TPSCR, 0);
    /* dwte of the slice's rows from d(out) with the other ranks' tokens'
     * rows zeroed (they add 0 to row 0); the dwpe half goes to scratch */
    GT_TRY(be->copy_device(be, dmask, dres, NC * m->es));
    GT_TRY(zero_foreign_rows(m, dmask, N));
    GT_TRY(be->ops->encoder_bwd(k, PG(m, P_WTE, 0), scratch, dmask, m->act[A_TOKLOC], B, T, C));
    /* dwpe from every token, as one rank sums it; the dwte half (all
     * tokens 0: one row) to scratch */
    memset(m->tok_local, 0, (size_t)N * sizeof(int32_t));
    GT_TRY(be->copy_to_device(be, m->act[A_TOKLOC], m->tok_local, (size_t)N * sizeof(int32_t)));
    return be->ops->encoder_bwd(k, scratch, PG(m, P_WPE, 0), dres, m->act[A_TOKLOC], B, T, C);
}

/* ---- the vocabulary-parallel cross-entropy --------------------------------------- */

/* Per row: the max of this rank's real logits into mx, then the group's. */
static gt_status ce_max(gt_gpt2 *m, const float *x, int N, int nv, double *mx) {
    int Vl = m->d.vocab;
    for (int i = 0; i < N; i++) {
        double v = -INFINITY;
        for (int j = 0; j < nv; j++)
            if (x[(size_t)i * Vl + j] > v) v = x[(size_t)i * Vl + j];
        mx[i] = v;
    }
    m->tp_calls++;
    m->tp_bytes += (size_t)N * sizeof(double);
    return gt_comm_allreduce(m->tp_comm, mx, mx, (size_t)N, GT_DTYPE_FP64, GT_REDOP_MAX, NULL);
}

gt_status gt_gpt2_tp_classifier(gt_gpt2 *m, int N, float dloss, int backward) {
    int Vl = m->d.vocab, lo = m->tp_rank * Vl;
    int nv = m->cfg.vocab_size - lo; /* this slice's real columns (the rest is padding) */
    nv = nv < 0 ? 0 : nv > Vl ? Vl : nv;
    float *x = m->act[A_LOGITS], *losses = F32(A_LOSSES); /* host backends only */
    const int32_t *tg = m->act[A_TARGETS];
    double *mx = m->ce, *se = m->ce + N, *zt = m->ce + 2 * (size_t)N;
    GT_TRY(ce_max(m, x, N, nv, mx));
    /* sum of exp(x - max) and the target's logit (0 from the ranks without
     * it), summed over the group: never the whole logits */
    for (int i = 0; i < N; i++) {
        const float *r = x + (size_t)i * Vl;
        double s = 0.0;
        for (int j = 0; j < nv; j++) s += exp((double)r[j] - mx[i]);
        se[i] = s;
        int t = tg[i] - lo;
        zt[i] = t >= 0 && t < nv ? (double)r[t] : 0.0;
    }
    GT_TRY(group_sum(m, se, 2 * (size_t)N, GT_DTYPE_FP64));
    for (int i = 0; i < N; i++) losses[i] = (float)(log(se[i]) + mx[i] - zt[i]);
    if (!backward) return GT_OK;
    for (int i = 0; i < N; i++) { /* dlogits in place: (softmax - onehot) * dloss */
        float *r = x + (size_t)i * Vl;
        int t = tg[i] - lo;
        for (int j = 0; j < nv; j++) {
            double p = exp((double)r[j] - mx[i]) / se[i];
            r[j] = (float)((p - (j == t ? 1.0 : 0.0)) * dloss);
        }
        for (int j = nv; j < Vl; j++) r[j] = 0.0f;
    }
    return GT_OK;
}
