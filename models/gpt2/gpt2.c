/* GPT-2 forward and backward on the op table (see gpt2.h for the layout).
 * Each step reads top to bottom, llm.c style, with shapes at every call. */
#include "models/gpt2/gpt2.h"
#include "models/gpt2/gpt2_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/fileio.h"
#include "engine/ops.h"
#include "engine/rng.h"
#include "models/model.h"

static const char *const g_tensor_names[GT_GPT2_NUM_TENSORS] = {
    "wte", "wpe", "ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb",
    "ln2w", "ln2b", "fcw", "fcb", "fcprojw", "fcprojb", "lnfw", "lnfb",
};

const char *gt_gpt2_tensor_name(int i) {
    return (i >= 0 && i < GT_GPT2_NUM_TENSORS) ? g_tensor_names[i] : "?";
}

gt_status gt_gpt2_preset(const char *name, gt_gpt2_config *out) {
    static const struct {
        const char *name;
        gt_gpt2_config c;
    } presets[] = {
        {"gpt2-tiny", {64, 256, 256, 2, 2, 64}},
        {"gpt2-3m", {256, 256, 256, 4, 4, 256}},
        {"gpt2-124m", {1024, 50257, 50304, 12, 12, 768}},
    };
    if (gt_model_preset_renamed(name)) name = gt_model_preset_renamed(name);
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
        if (strcmp(name, presets[i].name) == 0) {
            *out = presets[i].c;
            return GT_OK;
        }
    }
    return GT_ERR(GT_ERR_INVALID, "unknown model '%s': the presets are gpt2-tiny, gpt2-3m, "
                                  "gpt2-124m",
                  name);
}

gt_status gt_gpt2_config_check(const gt_gpt2_config *c) {
#define CHECK_RANGE(field, lo, hi)                                                             \
    if (c->field < (lo) || c->field > (hi))                                                    \
        return GT_ERR(GT_ERR_INVALID, "model config: " #field " = %d is out of range [%d, %d]", \
                      c->field, (lo), (hi));
    CHECK_RANGE(max_seq_len, 1, 1 << 20);
    CHECK_RANGE(vocab_size, 2, 1 << 24);
    CHECK_RANGE(padded_vocab_size, c->vocab_size, 1 << 24);
    CHECK_RANGE(num_layers, 1, 1024);
    CHECK_RANGE(num_heads, 1, 1024);
    CHECK_RANGE(channels, 1, 1 << 16);
#undef CHECK_RANGE
    if (c->channels % c->num_heads != 0)
        return GT_ERR(GT_ERR_INVALID,
                      "model config: channels (%d) must be a multiple of num_heads (%d)",
                      c->channels, c->num_heads);
    return GT_OK;
}

const gt_gpt2_config *gt_gpt2_get_config(const gt_gpt2 *m) { return &m->cfg; }
size_t gt_gpt2_num_params(const gt_gpt2 *m) { return m->ps.num_params; }
size_t gt_gpt2_tensor_size(const gt_gpt2 *m, int i) {
    return i >= 0 && i < GT_GPT2_NUM_TENSORS ? m->ps.t[i].n : 0;
}
gt_params *gt_gpt2_params(gt_gpt2 *m) { return &m->ps; }

/* Bytes of each activation: `e` bytes per element of the storage dtype,
 * fp32 for the LayerNorm statistics, the attention state and the losses;
 * the per-layer ones for Lk layers (L, or 1 with block recomputation),
 * A_RES3 (every block's output, the next one's input) for all L. */
static void act_sizes(const gt_gpt2_config *c, const gpt2_dims *d, int B, int T, size_t e,
                      int Lk, int Lres, int tp, size_t s[A_COUNT]) {
    size_t C = (size_t)c->channels, L = (size_t)Lk;
    size_t QKV = (size_t)d->qkv, CA = (size_t)d->att, H = (size_t)d->fc;
    size_t BT = (size_t)B * (size_t)T, f = e, f32 = sizeof(float);
    s[A_ENCODED] = BT * C * f;
    s[A_LN1] = L * BT * C * f;
    s[A_LN1_MEAN] = L * BT * f32;
    s[A_LN1_RSTD] = L * BT * f32;
    s[A_QKV] = L * BT * QKV * f;
    s[A_ATTY] = L * BT * CA * f;
    s[A_ATT] = 0; /* asked of the backend: att_layer_floats, in gt_gpt2_new_dt */
    s[A_RES2] = L * BT * C * f;
    s[A_LN2] = L * BT * C * f;
    s[A_LN2_MEAN] = L * BT * f32;
    s[A_LN2_RSTD] = L * BT * f32;
    s[A_FCH] = L * BT * H * f;
    s[A_FCH_GELU] = L * BT * H * f;
    s[A_RES3] = (size_t)Lres * BT * C * f; /* L, or a pipeline stage's (gt_gpt2_set_stage) */
    s[A_LNF] = BT * C * f;
    s[A_LNF_MEAN] = BT * f32;
    s[A_LNF_RSTD] = BT * f32;
    s[A_LOGITS] = BT * (size_t)d->vocab * f;
    s[A_LOSSES] = BT * f32;
    s[A_TOKENS] = BT * sizeof(int32_t);
    s[A_TARGETS] = BT * sizeof(int32_t);
    s[A_DRES] = BT * C * f;
    s[A_DLN] = BT * C * f;
    s[A_DATTY] = BT * CA * f;
    s[A_DQKV] = BT * QKV * f;
    s[A_DFCH] = BT * H * f;
    s[A_DFCH_GELU] = BT * H * f; /* unfused backward only: gt_gpt2_new_dt zeroes it */
    s[A_TOKLOC] = tp > 1 ? BT * sizeof(int32_t) : 0;
    s[A_TPSCR] = tp > 1 ? (size_t)T * C * f : 0;
}


static int is_layered(int i) { return i >= P_LN1W && i <= P_FCPROJB; }

/* The size table in llm.c's order (the canonical one), weight decay on wte,
 * wpe and the four weight matrices only. The internal layout keeps each
 * layer's slices together, so the gradients of a layer are one contiguous
 * range once its backward is done (what bucketed all-reduce needs):
 * [wte wpe] [layer 0: ln1w .. fcprojb] ... [layer L-1] [lnfw lnfb]. */
static void declare(gt_gpt2 *m) {
    const gt_gpt2_config *c = &m->cfg;
    gt_params *p = &m->ps;
    int64_t C = c->channels, L = c->num_layers;
    /* tensor parallel: this rank's slices (gpt2.h), the whole model without */
    int64_t QKV = m->d.qkv, CA = m->d.att, H = m->d.fc;
    int l = (int)L;
    gt_params_add(p, "wte", 1, 0, 2, m->d.vocab, C, 0, 0);            // (Vp/tp, C)
    gt_params_add(p, "wpe", 1, 0, 2, c->max_seq_len, C, 0, 0);       // (maxT, C)
    gt_params_add(p, "ln1w", 0, l, 2, L, C, 0, 0);                   // (L, C)
    gt_params_add(p, "ln1b", 0, l, 2, L, C, 0, 0);                   // (L, C)
    gt_params_add(p, "qkvw", 1, l, 3, L, QKV, C, 0);                 // (L, 3C/tp, C)
    gt_params_add(p, "qkvb", 0, l, 2, L, QKV, 0, 0);                 // (L, 3C/tp)
    gt_params_add(p, "attprojw", 1, l, 3, L, C, CA, 0);              // (L, C, C/tp)
    gt_params_add(p, "attprojb", 0, l, 2, L, C, 0, 0);               // (L, C)
    gt_params_add(p, "ln2w", 0, l, 2, L, C, 0, 0);                   // (L, C)
    gt_params_add(p, "ln2b", 0, l, 2, L, C, 0, 0);                   // (L, C)
    gt_params_add(p, "fcw", 1, l, 3, L, H, C, 0);                    // (L, 4C/tp, C)
    gt_params_add(p, "fcb", 0, l, 2, L, H, 0, 0);                    // (L, 4C/tp)
    gt_params_add(p, "fcprojw", 1, l, 3, L, C, H, 0);                // (L, C, 4C/tp)
    gt_params_add(p, "fcprojb", 0, l, 2, L, C, 0, 0);                // (L, C)
    gt_params_add(p, "lnfw", 0, 0, 1, C, 0, 0, 0);                   // (C)
    gt_params_add(p, "lnfb", 0, 0, 1, C, 0, 0, 0);                   // (C)
    /* the sharding units (ZeRO-3): the embeddings, each block, the final
     * LayerNorm (unit_of) */
    gt_params_unit_begin(p);
    gt_params_place(p, P_WTE, 0);
    gt_params_place(p, P_WPE, 0);
    for (int j = 0; j < l; j++) {
        gt_params_unit_begin(p);
        for (int i = P_LN1W; i <= P_FCPROJB; i++) gt_params_place(p, i, j);
    }
    gt_params_unit_begin(p);
    gt_params_place(p, P_LNFW, 0);
    gt_params_place(p, P_LNFB, 0);
}

/* The sharding units of declare(): the embeddings (wte, wpe; wte is also
 * the output head), block l, the final LayerNorm. */
enum { U_EMB = 0 };
static int unit_block(int l) { return 1 + l; }
static int unit_lnf(const gt_gpt2 *m) { return 1 + m->cfg.num_layers; }

/* Elements of one layer's slice of tensor i (of the tensor when not per layer). */
static size_t per_layer(const gt_gpt2 *m, int i) {
    return m->ps.t[i].n / (size_t)(is_layered(i) ? m->cfg.num_layers : 1);
}


static size_t align_up(size_t n) { return (n + 255) & ~(size_t)255; }

/* One layer's attention state for a (B,T) forward: what the backend's
 * attention_fwd asks for (B*NH*T*T floats of probabilities on ref and cpu,
 * B*NH*T of row logsumexp on cuda's cuDNN path), rounded up to 64 floats
 * so that every layer's slice stays 256-byte aligned. */
static size_t att_layer_floats(const gt_gpt2 *m, int B, int T) {
    size_t n = gt_attention_state_floats(m->be->ops, &m->ps.k, B, T, m->d.att, m->d.heads);
    return (n + 63) / 64 * 64;
}

gt_status gt_gpt2_new(gt_backend *be, const gt_gpt2_config *cfg, int B, int T, gt_gpt2 **out) {
    return gt_gpt2_new_dt(be, cfg, GT_DTYPE_FP32, B, T, out);
}

gt_status gt_gpt2_new_dt(gt_backend *be, const gt_gpt2_config *cfg, gt_dtype dt, int B, int T,
                         gt_gpt2 **out) {
    return gt_gpt2_new_recompute(be, cfg, dt, GT_MODEL_RECOMPUTE_NONE, B, T, out);
}

gt_status gt_gpt2_new_recompute(gt_backend *be, const gt_gpt2_config *cfg, gt_dtype dt,
                                gt_model_recompute recompute, int B, int T, gt_gpt2 **out) {
    return gt_gpt2_new_tp(be, cfg, dt, recompute, NULL, B, T, out);
}

gt_status gt_gpt2_new_tp(gt_backend *be, const gt_gpt2_config *cfg, gt_dtype dt,
                         gt_model_recompute recompute, const gt_gpt2_tp *tp, int B, int T,
                         gt_gpt2 **out) {
    *out = NULL;
    GT_TRY(gt_gpt2_config_check(cfg));
    int ntp = tp && tp->size > 1 ? tp->size : 1;
    gpt2_dims d;
    GT_TRY(gt_gpt2_tp_dims(cfg, ntp, &d));
    if (ntp > 1 && (!tp->comm || gt_comm_size(tp->comm) != ntp || tp->rank < 0 ||
                    tp->rank >= ntp || gt_comm_rank(tp->comm) != tp->rank))
        return GT_ERR(GT_ERR_INVALID, "tensor parallel gpt2 of %d ranks (rank %d): the group's "
                                      "communicator must hold the %d ranks, this one as rank %d",
                      ntp, tp->rank, ntp, tp->rank);
    if (dt != GT_DTYPE_FP32 && dt != GT_DTYPE_BF16 && dt != GT_DTYPE_FP16)
        return GT_ERR(GT_ERR_INVALID, "gpt2 storage dtype %s: expected fp32, bf16 or fp16",
                      gt_dtype_name(dt));
    if (B < 1 || T < 1)
        return GT_ERR(GT_ERR_INVALID, "batch (%d) and sequence length (%d) must be >= 1", B, T);
    if ((int)recompute < 0 || recompute >= GT_MODEL_RECOMPUTE_COUNT)
        return GT_ERR(GT_ERR_INVALID, "recompute mode %d: expected none or block", (int)recompute);
    if (T > cfg->max_seq_len)
        return GT_ERR(GT_ERR_INVALID,
                      "sequence length %d is longer than the model's max_seq_len %d: "
                      "pass a --seq of at most %d",
                      T, cfg->max_seq_len, cfg->max_seq_len);
    gt_gpt2 *m = calloc(1, sizeof *m);
    if (!m) return GT_ERR(GT_ERR_OOM, "out of host memory for the model struct");
    m->cfg = *cfg;
    m->be = be;
    m->dt = dt;
    m->es = gt_dtype_size(dt);
    m->B = B;
    m->T = T;
    m->recompute = recompute;
    m->Lk = recompute == GT_MODEL_RECOMPUTE_BLOCK ? 1 : cfg->num_layers;
    m->d = d;
    m->tp = ntp;
    m->tp_rank = ntp > 1 ? tp->rank : 0;
    m->tp_comm = ntp > 1 ? tp->comm : NULL;
    gt_status s = GT_OK;
    declare(m);
    if ((s = gt_params_alloc(&m->ps, be, dt)) != GT_OK) goto fail;
    if (ntp > 1 && (s = gt_gpt2_tp_alloc(m, B * T)) != GT_OK) goto fail;
    act_sizes(cfg, &m->d, B, T, m->es, m->Lk, cfg->num_layers, m->tp, m->act_sizes);
    /* the MLP through the fused ops when the backend has both (the GPU's
     * GEMM epilogues): dfch is then written by matmul_dgelu_bwd directly,
     * and the unfused sequence's dfch_gelu scratch is not needed */
    m->fused_mlp = be->ops->matmul_gelu_fwd && be->ops->matmul_dgelu_bwd;
    if (m->fused_mlp) m->act_sizes[A_DFCH_GELU] = 0;
    m->act_sizes[A_ATT] = (size_t)m->Lk * att_layer_floats(m, B, T) * sizeof(float);
    size_t total = 0;
    for (int i = 0; i < A_COUNT; i++) total += align_up(m->act_sizes[i]);
    if ((s = gt_backend_alloc(be, total, (void **)&m->act_mem)) != GT_OK) goto fail;
    size_t off = 0;
    for (int i = 0; i < A_COUNT; i++) {
        m->act[i] = m->act_mem + off;
        off += align_up(m->act_sizes[i]);
    }
    m->host_losses = malloc((size_t)B * T * sizeof(float));
    if (!m->host_losses) {
        s = GT_ERR(GT_ERR_OOM, "out of host memory for the loss buffer");
        goto fail;
    }
    if ((s = gt_ops_probe_dtype(m->be, m->dt)) != GT_OK) goto fail;
    *out = m;
    return GT_OK;
fail:
    gt_gpt2_free(m);
    return s;
}

void gt_gpt2_free(gt_gpt2 *m) {
    if (!m) return;
    gt_params_release(&m->ps);
    gt_backend_dealloc(m->be, m->act_mem);
    gt_backend_dealloc(m->be, m->att_spill);
    free(m->host_losses);
    free(m->tok_local);
    free(m->own);
    free(m->ce);
    for (int i = 1; i < m->nslots; i++) gt_backend_dealloc(m->be, m->slot_mem[i]);
    free(m);
}

gt_dtype gt_gpt2_dtype(const gt_gpt2 *m) { return m->dt; }
gt_model_recompute gt_gpt2_recompute(const gt_gpt2 *m) { return m->recompute; }

size_t gt_gpt2_act_bytes(const gt_gpt2 *m) {
    size_t total = 0;
    for (int i = 0; i < A_COUNT; i++) total += align_up(m->act_sizes[i]);
    int slots = m->nslots > 1 ? m->nslots : 1;
    return total * (size_t)slots + m->att_spill_bytes;
}


gt_status gt_gpt2_init_random(gt_gpt2 *m, uint64_t seed) {
    if (m->tp > 1) return gt_gpt2_tp_init_random(m, seed); /* the slices of the same values */
    const gt_gpt2_config *c = &m->cfg;
    int L = c->num_layers;
    /* each (tensor, layer) block drawn straight into its place of the
     * internal layout (the values depend on (seed, tensor, layer, index)
     * only): into the master weights themselves on a host backend, else
     * into a host buffer copied over once */
    int direct = m->be->device == GT_DEVICE_HOST;
    size_t np = m->ps.num_params;
    float *host = direct ? m->ps.params : malloc(np * sizeof(float));
    if (!host) return GT_ERR(GT_ERR_OOM, "out of host memory initialising %zu parameters", np);
    float proj_std = 0.02f / sqrtf(2.0f * (float)L);
    for (int i = 0; i < GT_GPT2_NUM_TENSORS; i++) {
        /* per-layer tensors are initialised layer by layer so that a stream
         * identifies (tensor, layer) and the index restarts at 0 */
        int nl = is_layered(i) ? L : 1;
        size_t per = per_layer(m, i);
        for (int l = 0; l < nl; l++) {
            float *d = host + gt_params_offset(&m->ps, i, l);
            uint64_t stream = ((uint64_t)i << 16) | (uint64_t)l;
            switch (i) {
            case P_LN1W: case P_LN2W: case P_LNFW:
                for (size_t j = 0; j < per; j++) d[j] = 1.0f;
                break;
            case P_QKVB: case P_ATTPROJB: case P_FCB: case P_FCPROJB:
            case P_LN1B: case P_LN2B: case P_LNFB:
                memset(d, 0, per * sizeof(float));
                break;
            case P_ATTPROJW: case P_FCPROJW:
                gt_rng_fill_normal(d, per, 0.0f, proj_std, seed, stream, 0);
                break;
            case P_WTE:
                /* real rows only; padding rows stay exactly zero */
                gt_rng_fill_normal(d, (size_t)c->vocab_size * c->channels, 0.0f, 0.02f, seed,
                                   stream, 0);
                memset(d + (size_t)c->vocab_size * c->channels, 0,
                       (size_t)(c->padded_vocab_size - c->vocab_size) * c->channels *
                           sizeof(float));
                break;
            default:
                gt_rng_fill_normal(d, per, 0.0f, 0.02f, seed, stream, 0);
            }
        }
    }
    gt_status s = GT_OK;
    if (!direct) {
        s = m->be->copy_to_device(m->be, m->ps.params, host, np * sizeof(float));
        free(host);
    }
    if (s == GT_OK) s = gt_params_sync_weights(&m->ps, 0, np);
    return s;
}

gt_status gt_gpt2_read_llmc_config(const char *path, gt_gpt2_config *out) {
    FILE *f = fopen(path, "rb");
    if (!f) return GT_ERR(GT_ERR_IO, "cannot open llm.c model file '%s'", path);
    int32_t h[256];
    size_t got = fread(h, sizeof(int32_t), 256, f);
    fclose(f);
    if (got != 256)
        return GT_ERR(GT_ERR_IO, "'%s': truncated llm.c header (%zu of 256 int32)", path, got);
    if (h[0] != 20240326)
        return GT_ERR(GT_ERR_INVALID, "'%s': bad magic %d, an llm.c model file has 20240326",
                      path, (int)h[0]);
    if (h[1] != 3)
        return GT_ERR(GT_ERR_UNSUPPORTED,
                      "'%s': llm.c model version %d; only version 3 (fp32, padded vocab) is "
                      "read: export the fp32 checkpoint",
                      path, (int)h[1]);
    out->max_seq_len = h[2];
    out->vocab_size = h[3];
    out->num_layers = h[4];
    out->num_heads = h[5];
    out->channels = h[6];
    out->padded_vocab_size = h[7];
    gt_status s = gt_gpt2_config_check(out);
    if (s != GT_OK) return gt_error_wrap(s, "'%s'", path);
    return GT_OK;
}

gt_status gt_gpt2_write_llmc(const gt_gpt2_config *c, const float *params, const char *path) {
    int32_t h[256] = {20240326, 3, c->max_seq_len, c->vocab_size, c->num_layers,
                      c->num_heads, c->channels, c->padded_vocab_size};
    size_t np = gt_gpt2_full_params(c);
    gt_atomic_file af;
    GT_TRY(gt_atomic_open(path, "llm.c model file", "choose a writable path", &af));
    if (fwrite(h, sizeof h, 1, af.f) != 1 || fwrite(params, sizeof(float), np, af.f) != np) {
        gt_atomic_discard(&af);
        return GT_ERR(GT_ERR_IO, "cannot write llm.c model file '%s' (disk full?)", path);
    }
    return gt_atomic_commit(&af);
}

gt_status gt_gpt2_load_llmc(gt_gpt2 *m, const char *path) {
    gt_gpt2_config fc;
    GT_TRY(gt_gpt2_read_llmc_config(path, &fc));
    const gt_gpt2_config *c = &m->cfg;
#define SAME(field)                                                                            \
    if (fc.field != c->field)                                                                  \
        return GT_ERR(GT_ERR_MISMATCH, "'%s': " #field " is %d in the file but %d in the model", \
                      path, fc.field, c->field);
    SAME(max_seq_len);
    SAME(vocab_size);
    SAME(padded_vocab_size);
    SAME(num_layers);
    SAME(num_heads);
    SAME(channels);
#undef SAME
    FILE *f = fopen(path, "rb");
    if (!f) return GT_ERR(GT_ERR_IO, "cannot open llm.c model file '%s'", path);
    size_t np = gt_gpt2_full_params(c); /* the file's: the whole model */
    float *host = malloc(np * sizeof(float));
    if (!host) {
        fclose(f);
        return GT_ERR(GT_ERR_OOM, "out of host memory reading '%s'", path);
    }
    gt_status s = GT_OK;
    if (fseek(f, 256 * sizeof(int32_t), SEEK_SET) != 0) {
        s = GT_ERR(GT_ERR_IO, "'%s': cannot seek past the header", path);
    } else {
        size_t got = fread(host, sizeof(float), np, f);
        if (got != np)
            s = GT_ERR(GT_ERR_IO, "'%s': truncated: %zu of %zu parameters", path, got, np);
    }
    fclose(f);
    if (s == GT_OK) s = m->tp > 1 ? gt_gpt2_tp_set_full(m, host) : gt_gpt2_set_params(m, host);
    free(host);
    return s;
}

/* ---- forward --------------------------------------------------------------------- */


static gt_status check_tokens(const gt_gpt2 *m, const int32_t *tok, int n, const char *what) {
    for (int i = 0; i < n; i++) {
        if (tok[i] < 0 || tok[i] >= m->cfg.vocab_size)
            return GT_ERR(GT_ERR_INVALID,
                          "%s token %d at position %d is outside the vocabulary [0, %d): "
                          "the data does not match the model's vocab_size",
                          what, (int)tok[i], i, m->cfg.vocab_size);
    }
    return GT_OK;
}

static gt_status require(const void *slot, const gt_backend *be, const char *op) {
    if (!slot)
        return GT_ERR(GT_ERR_UNSUPPORTED, "backend '%s' has no %s op: gpt2 cannot run on it",
                      be->name, op);
    return GT_OK;
}

/* The ops gpt2 calls (cast only to keep a compute copy in bf16 / fp16). */
static gt_status require_kernels(const gt_gpt2 *m) {
    static const gt_op used[] = {
        GT_OP_ENCODER_FWD,   GT_OP_ENCODER_BWD,    GT_OP_LAYERNORM_FWD, GT_OP_LAYERNORM_BWD,
        GT_OP_MATMUL_FWD,    GT_OP_MATMUL_BWD,     GT_OP_ATTENTION_FWD, GT_OP_ATTENTION_BWD,
        GT_OP_RESIDUAL_FWD,  GT_OP_CLASSIFIER_FWD, GT_OP_CLASSIFIER_BWD, GT_OP_ADAMW,
        GT_OP_SUMSQ,
    };
    /* the MLP: the fused ops, or the unfused sequence's GELU ops */
    static const gt_op fused[] = {GT_OP_MATMUL_GELU_FWD, GT_OP_MATMUL_DGELU_BWD};
    static const gt_op unfused[] = {GT_OP_GELU_FWD, GT_OP_GELU_BWD};
    const gt_ops *o = m->be->ops;
    for (size_t i = 0; i < sizeof used / sizeof used[0]; i++)
        GT_TRY(require(gt_ops_slot(o, used[i]), m->be, gt_op_name(used[i])));
    for (size_t i = 0; i < 2; i++) {
        gt_op op = m->fused_mlp ? fused[i] : unfused[i];
        GT_TRY(require(gt_ops_slot(o, op), m->be, gt_op_name(op)));
    }
    if (m->dt != GT_DTYPE_FP32) GT_TRY(require(o->cast, m->be, "cast"));
    return GT_OK;
}

/* The kernels, and a model that holds every block's activations: one cut
 * to a pipeline stage's runs only as that stage (gt_gpt2_stage_forward). */
static gt_status require_ops(const gt_gpt2 *m) {
    if (m->stage_hi)
        return GT_ERR(GT_ERR_INVALID, "this gpt2 holds the activations of blocks [%d, %d) only "
                                      "(a pipeline stage): run it with gt_gpt2_stage_forward",
                      m->stage_lo, m->stage_hi);
    return require_kernels(m);
}

/* One block's activations for a (B,T) forward: layer l's slices, or with
 * block recomputation the one-layer scratch that every block's forward and
 * recompute share (slot 0); the block's input and output are always layer
 * l's own. */
typedef struct block_acts {
    void *residual;           // (B,T,C) the block's input: encoded, or res3 of layer l-1
    void *ln1;                // (B,T,C)
    float *ln1_mean;          // (B,T)
    float *ln1_rstd;          // (B,T)
    void *qkv;                // (B,T,3C)
    void *atty;               // (B,T,C)
    float *att;               // backend's attention state
    void *res2;               // (B,T,C) residual after attention
    void *ln2;                // (B,T,C)
    float *ln2_mean;          // (B,T)
    float *ln2_rstd;          // (B,T)
    void *fch;                // (B,T,4C)
    void *fch_gelu;           // (B,T,4C)
    void *res3;               // (B,T,C) the block's output
} block_acts;

static block_acts block_acts_of(gt_gpt2 *m, int l) {
    size_t N = (size_t)m->last_B * (size_t)m->last_T, NC = N * (size_t)m->cfg.channels;
    /* the slot of the recomputed activations; a pipeline stage's from its first block */
    size_t s = m->Lk == 1 ? 0 : (size_t)(l - m->stage_lo);
    size_t r = (size_t)(l - m->res_base); /* block l's output in A_RES3 */
    block_acts a = {
        .residual = l == 0 ? ACT(A_ENCODED, 0) : ACT(A_RES3, (r - 1) * NC),
        .ln1 = ACT(A_LN1, s * NC),
        .ln1_mean = F32(A_LN1_MEAN) + s * N,
        .ln1_rstd = F32(A_LN1_RSTD) + s * N,
        .qkv = ACT(A_QKV, s * N * (size_t)m->d.qkv),
        .atty = ACT(A_ATTY, s * N * (size_t)m->d.att),
        .att = m->att + s * m->att_stride,
        .res2 = ACT(A_RES2, s * NC),
        .ln2 = ACT(A_LN2, s * NC),
        .ln2_mean = F32(A_LN2_MEAN) + s * N,
        .ln2_rstd = F32(A_LN2_RSTD) + s * N,
        .fch = ACT(A_FCH, s * N * (size_t)m->d.fc),
        .fch_gelu = ACT(A_FCH_GELU, s * N * (size_t)m->d.fc),
        .res3 = ACT(A_RES3, r * NC),
    };
    return a;
}

/* Block l's forward from a->residual up to gelu(fch); with `output`, on to
 * the block's output res3 = res2 + fcproj. The recompute in the backward
 * stops before that: res3 is the next block's input, already used, and the
 * same kernels on the same inputs give the same bits as the forward did. */
static gt_status block_forward(gt_gpt2 *m, int l, const block_acts *a, int output) {
    const gt_ops *o = m->be->ops;
    const gt_kctx *k = &m->ps.k;
    int B = m->last_B, T = m->last_T, C = m->cfg.channels;
    int QKV = m->d.qkv, CA = m->d.att, NH = m->d.heads, H = m->d.fc; /* tp: the slices' */
    int N = B * T;
    size_t NC = (size_t)N * C;
    /* row-parallel layers (attproj, fcproj): rank 0 of a tensor group adds the bias
     * to its partial sum, the group's all-reduce the rest */
    int bias = m->tp_rank == 0;
    void *ln1w = PW(m, P_LN1W, l);         // (C)
    void *ln1b = PW(m, P_LN1B, l);         // (C)
    void *qkvw = PW(m, P_QKVW, l);         // (3C/tp,C)
    void *qkvb = PW(m, P_QKVB, l);         // (3C/tp)
    void *attprojw = PW(m, P_ATTPROJW, l); // (C,C/tp)
    void *attprojb = bias ? PW(m, P_ATTPROJB, l) : NULL; // (C)
    void *ln2w = PW(m, P_LN2W, l);         // (C)
    void *ln2b = PW(m, P_LN2B, l);         // (C)
    void *fcw = PW(m, P_FCW, l);           // (4C/tp,C)
    void *fcb = PW(m, P_FCB, l);           // (4C/tp)
    /* the attention output projection and the MLP output reuse the
     * residual buffers as scratch: res2 = residual + attproj */
    GT_TRY(o->layernorm_fwd(k, a->ln1, a->ln1_mean, a->ln1_rstd, a->residual, ln1w, ln1b, N, C,
                            1e-5f));
    GT_TRY(o->matmul_fwd(k, a->qkv, a->ln1, qkvw, qkvb, N, C, QKV));    // column-parallel
    GT_TRY(o->attention_fwd(k, a->atty, a->att, a->qkv, B, T, CA, NH)); // this rank's heads
    GT_TRY(o->matmul_fwd(k, a->res2, a->atty, attprojw, attprojb, N, CA, C)); // attproj
    GT_TRY(gt_gpt2_tp_sum(m, a->res2, NC)); /* row-parallel: Megatron's g */
    GT_TRY(o->residual_fwd(k, a->res2, a->residual, a->res2, NC));
    GT_TRY(o->layernorm_fwd(k, a->ln2, a->ln2_mean, a->ln2_rstd, a->res2, ln2w, ln2b, N, C,
                            1e-5f));
    if (m->fused_mlp) { /* fch and gelu(fch) from one GEMM */
        GT_TRY(o->matmul_gelu_fwd(k, a->fch_gelu, a->fch, a->ln2, fcw, fcb, N, C, H));
    } else {
        GT_TRY(o->matmul_fwd(k, a->fch, a->ln2, fcw, fcb, N, C, H));
        GT_TRY(o->gelu_fwd(k, a->fch_gelu, a->fch, (size_t)N * H));
    }
    if (!output) return GT_OK;
    void *fcprojw = PW(m, P_FCPROJW, l); // (C,4C/tp)
    void *fcprojb = bias ? PW(m, P_FCPROJB, l) : NULL; // (C)
    GT_TRY(o->matmul_fwd(k, a->res3, a->fch_gelu, fcprojw, fcprojb, N, H, C)); // fcproj
    GT_TRY(gt_gpt2_tp_sum(m, a->res3, NC)); /* row-parallel: Megatron's g */
    return o->residual_fwd(k, a->res3, a->res2, a->res3, NC);
}

/* The embedding (B,T,C) = wte[tok] + wpe[t] of the tokens in A_TOKENS;
 * tensor parallel, the vocabulary-parallel lookup (gpt2_tp.c). */
static gt_status encoder_forward(gt_gpt2 *m, const int32_t *inputs, int B, int T) {
    if (m->tp > 1) return gt_gpt2_tp_encoder_fwd(m, inputs, B, T);
    return m->be->ops->encoder_fwd(&m->ps.k, ACT(A_ENCODED, 0), m->act[A_TOKENS],
                                   PW(m, P_WTE, 0), PW(m, P_WPE, 0), B, T, m->cfg.channels);
}

/* Its backward from A_DRES: dwte (the slice's rows) and dwpe accumulate. */
static gt_status encoder_backward(gt_gpt2 *m, int B, int T) {
    if (m->tp > 1) return gt_gpt2_tp_encoder_bwd(m, B, T);
    return m->be->ops->encoder_bwd(&m->ps.k, PG(m, P_WTE, 0), PG(m, P_WPE, 0), ACT(A_DRES, 0),
                                   m->act[A_TOKENS], B, T, m->cfg.channels);
}

/* Losses (B,T) and dlogits (scaled by dloss) in place of the logits:
 * tensor parallel, the vocabulary-parallel cross-entropy (gpt2_tp.c). */
static gt_status loss_backward(gt_gpt2 *m, int N, float dloss) {
    if (m->tp > 1) return gt_gpt2_tp_classifier(m, N, dloss, 1);
    return m->be->ops->classifier_bwd(&m->ps.k, ACT(A_LOGITS, 0), F32(A_LOSSES),
                                      ACT(A_LOGITS, 0), m->act[A_TARGETS], dloss, N,
                                      m->cfg.vocab_size, m->cfg.padded_vocab_size);
}

/* The tied head's backward: dwte (the slice's rows) += dlogits^T lnf, and
 * d(lnf) into A_DLN, summed over a tensor group (each rank's vocabulary
 * slice gives a part: Megatron's f in the backward). */
static gt_status head_backward(gt_gpt2 *m, int N) {
    int C = m->cfg.channels;
    GT_TRY(m->be->ops->matmul_bwd(&m->ps.k, ACT(A_DLN, 0), PG(m, P_WTE, 0), NULL,
                                  ACT(A_LOGITS, 0), ACT(A_LNF, 0), PW(m, P_WTE, 0), N, C,
                                  m->d.vocab));
    return gt_gpt2_tp_sum(m, ACT(A_DLN, 0), (size_t)N * C);
}

/* The forward up to the logits. The head's units (the final LayerNorm and
 * the tied embedding) are left needed (gt_params_need) for the caller to
 * release: the backward starts with them; `next` is the unit the caller
 * needs after the head (-1: none). */
static gt_status forward_body(gt_gpt2 *m, const int32_t *inputs, const int32_t *targets, int B,
                              int T, int next) {
    const gt_gpt2_config *c = &m->cfg;
    const gt_ops *o = m->be->ops;
    const gt_kctx *k = &m->ps.k;
    gt_backend *be = m->be;
    GT_TRY(require_ops(m));
    if (B < 1 || T < 1 || B > m->B || T > m->T)
        return GT_ERR(GT_ERR_INVALID,
                      "forward with B=%d T=%d, but the model was created for at most B=%d T=%d",
                      B, T, m->B, m->T);
    GT_TRY(check_tokens(m, inputs, B * T, "input"));
    if (targets) GT_TRY(check_tokens(m, targets, B * T, "target"));
    m->last_B = B;
    m->last_T = T;
    /* The attention state of this shape. A_ATT was sized for the capacity
     * shape; a smaller one normally needs less, but may take another path
     * (cuda: cuDNN for one T, the own kernels for another) that needs more:
     * then a separate buffer, kept for later forwards. */
    m->att_stride = att_layer_floats(m, B, T);
    size_t att_bytes = (size_t)m->Lk * m->att_stride * sizeof(float);
    m->att = F32(A_ATT);
    if (att_bytes > m->act_sizes[A_ATT]) {
        if (att_bytes > m->att_spill_bytes) {
            gt_backend_dealloc(be, m->att_spill);
            m->att_spill = NULL;
            m->att_spill_bytes = 0;
            GT_TRY(gt_backend_alloc(be, att_bytes, (void **)&m->att_spill));
            m->att_spill_bytes = att_bytes;
        }
        m->att = m->att_spill;
    }
    int C = c->channels, L = c->num_layers, Vp = m->d.vocab;
    int N = B * T;
    size_t NC = (size_t)N * C;
    GT_TRY(be->copy_to_device(be, m->act[A_TOKENS], inputs, (size_t)N * sizeof(int32_t)));
    if (targets)
        GT_TRY(be->copy_to_device(be, m->act[A_TARGETS], targets, (size_t)N * sizeof(int32_t)));

    /* weights: the compute copy (the fp32 masters themselves in fp32),
     * each unit's needed around its compute (ZeRO-3 gathers it) */
    gt_params *ps = &m->ps;
    GT_TRY(gt_params_need(ps, U_EMB, unit_block(0)));
    GT_TRY(encoder_forward(m, inputs, B, T)); // (B,T,C)
    GT_TRY(gt_params_done(ps, U_EMB));
    for (int l = 0; l < L; l++) {
        block_acts a = block_acts_of(m, l);
        GT_TRY(gt_params_need(ps, unit_block(l), l + 1 < L ? unit_block(l + 1) : unit_lnf(m)));
        GT_TRY(block_forward(m, l, &a, 1));
        GT_TRY(gt_params_done(ps, unit_block(l)));
    }
    GT_TRY(gt_params_need(ps, unit_lnf(m), U_EMB));
    GT_TRY(gt_params_need(ps, U_EMB, next));
    void *last = ACT(A_RES3, (size_t)(L - 1) * NC); // (B,T,C)
    GT_TRY(o->layernorm_fwd(k, ACT(A_LNF, 0), F32(A_LNF_MEAN), F32(A_LNF_RSTD), last,
                            PW(m, P_LNFW, 0), PW(m, P_LNFB, 0), N, C, 1e-5f));
    /* the output head is the token embedding (tied weights), no bias; tensor
     * parallel: this rank's vocabulary slice of the logits */
    GT_TRY(o->matmul_fwd(k, ACT(A_LOGITS, 0), ACT(A_LNF, 0), PW(m, P_WTE, 0), NULL, N, C, Vp));
    return GT_OK;
}

static gt_status mean_loss_of(gt_gpt2 *m, int N, float *mean_loss) {
    GT_TRY(m->be->copy_to_host(m->be, m->host_losses, F32(A_LOSSES), (size_t)N * sizeof(float)));
    double sum = 0.0; /* fixed order: the host sums */
    for (int i = 0; i < N; i++) sum += m->host_losses[i];
    *mean_loss = (float)(sum / N);
    return GT_OK;
}

gt_status gt_gpt2_forward(gt_gpt2 *m, const int32_t *inputs, const int32_t *targets, int B,
                          int T, float *mean_loss) {
    GT_TRY(forward_body(m, inputs, targets, B, T, -1));
    GT_TRY(gt_params_done(&m->ps, unit_lnf(m)));
    GT_TRY(gt_params_done(&m->ps, U_EMB));
    if (!targets) return GT_OK;
    const gt_gpt2_config *c = &m->cfg;
    if (m->tp > 1) GT_TRY(gt_gpt2_tp_classifier(m, B * T, 0.0f, 0));
    else
        GT_TRY(m->be->ops->classifier_fwd(&m->ps.k, F32(A_LOSSES), ACT(A_LOGITS, 0),
                                          m->act[A_TARGETS], B * T, c->vocab_size,
                                          c->padded_vocab_size));
    if (mean_loss) GT_TRY(mean_loss_of(m, B * T, mean_loss));
    return GT_OK;
}

/* ---- backward -------------------------------------------------------------------- */

/* Block l's backward: A_DRES holds d(res3) on entry and d(residual), the
 * gradient of the block's input, on return; the layer's parameter
 * gradients accumulate. */
static gt_status block_backward(gt_gpt2 *m, int l, const block_acts *a) {
    const gt_ops *o = m->be->ops;
    const gt_kctx *k = &m->ps.k;
    gt_backend *be = m->be;
    int B = m->last_B, T = m->last_T, C = m->cfg.channels;
    int QKV = m->d.qkv, CA = m->d.att, NH = m->d.heads, H = m->d.fc; /* tp: the slices' */
    int N = B * T;
    size_t NC = (size_t)N * C, es = m->es;
    void *dres = ACT(A_DRES, 0), *dln = ACT(A_DLN, 0);            // (B,T,C)
    void *datty = ACT(A_DATTY, 0), *dqkv = ACT(A_DQKV, 0);        // (B,T,C/tp), (B,T,3C/tp)
    void *dfch = ACT(A_DFCH, 0), *dfch_gelu = ACT(A_DFCH_GELU, 0); // (B,T,4C/tp)
    void *ln1w = PW(m, P_LN1W, l), *dln1w = PG(m, P_LN1W, l);
    void *dln1b = PG(m, P_LN1B, l);
    void *qkvw = PW(m, P_QKVW, l), *dqkvw = PG(m, P_QKVW, l);
    void *dqkvb = PG(m, P_QKVB, l);
    void *attprojw = PW(m, P_ATTPROJW, l);
    void *dattprojw = PG(m, P_ATTPROJW, l);
    void *dattprojb = PG(m, P_ATTPROJB, l);
    void *ln2w = PW(m, P_LN2W, l), *dln2w = PG(m, P_LN2W, l);
    void *dln2b = PG(m, P_LN2B, l);
    void *fcw = PW(m, P_FCW, l), *dfcw = PG(m, P_FCW, l);
    void *dfcb = PG(m, P_FCB, l);
    void *fcprojw = PW(m, P_FCPROJW, l);
    void *dfcprojw = PG(m, P_FCPROJW, l);
    void *dfcprojb = PG(m, P_FCPROJB, l);

    /* dres holds d(res3). res3 = res2 + fcproj: both get dres, so dres
     * is used directly as d(fcproj) and keeps accumulating as d(res2). */
    /* dfch = (dres @ fcprojw) * gelu'(fch), overwritten (matmul_bwd and
     * matmul_dgelu_bwd overwrite their input gradient: no memsets) */
    if (m->fused_mlp) {
        GT_TRY(o->matmul_dgelu_bwd(k, dfch, dfcprojw, dfcprojb, dres, a->fch_gelu, fcprojw,
                                   a->fch, N, H, C));
    } else {
        GT_TRY(o->matmul_bwd(k, dfch_gelu, dfcprojw, dfcprojb, dres, a->fch_gelu, fcprojw, N,
                             H, C));
        GT_TRY(be->memset_zero(be, dfch, (size_t)N * H * es));
        GT_TRY(o->gelu_bwd(k, dfch, a->fch, dfch_gelu, (size_t)N * H));
    }
    GT_TRY(o->matmul_bwd(k, dln, dfcw, dfcb, dfch, a->ln2, fcw, N, C, H));
    GT_TRY(gt_gpt2_tp_sum(m, dln, NC)); /* column-parallel input: Megatron's f backward */
    GT_TRY(o->layernorm_bwd(k, dres, dln2w, dln2b, dln, a->res2, ln2w, a->ln2_mean, a->ln2_rstd,
                            N, C));
    /* dres now holds d(res2); res2 = residual + attproj, same trick */
    GT_TRY(o->matmul_bwd(k, datty, dattprojw, dattprojb, dres, a->atty, attprojw, N, CA, C));
    GT_TRY(be->memset_zero(be, dqkv, (size_t)N * QKV * es));
    GT_TRY(o->attention_bwd(k, dqkv, datty, a->qkv, a->atty, a->att, B, T, CA, NH));
    GT_TRY(o->matmul_bwd(k, dln, dqkvw, dqkvb, dqkv, a->ln1, qkvw, N, C, QKV));
    GT_TRY(gt_gpt2_tp_sum(m, dln, NC)); /* column-parallel input: Megatron's f backward */
    /* dres now holds d(residual), the gradient of this block's input */
    return o->layernorm_bwd(k, dres, dln1w, dln1b, dln, a->residual, ln1w, a->ln1_mean,
                            a->ln1_rstd, N, C);
}

gt_status gt_gpt2_forward_backward(gt_gpt2 *m, const int32_t *inputs, const int32_t *targets,
                                   int B, int T, float dloss, float *mean_loss) {
    if (!targets) return GT_ERR(GT_ERR_INVALID, "forward_backward needs targets");
    gt_params_backward_end(&m->ps); /* a backward an error cut short */
    GT_TRY(forward_body(m, inputs, targets, B, T, unit_block(m->cfg.num_layers - 1)));
    const gt_gpt2_config *c = &m->cfg;
    const gt_ops *o = m->be->ops;
    const gt_kctx *k = &m->ps.k;
    gt_backend *be = m->be;
    int C = c->channels, L = c->num_layers;
    int N = B * T;
    size_t NC = (size_t)N * C, es = m->es;

    /* losses and dlogits in one pass; dlogits overwrite the logits */
    GT_TRY(loss_backward(m, N, dloss));
    if (mean_loss) GT_TRY(mean_loss_of(m, N, mean_loss));

    void *dres = ACT(A_DRES, 0); // (B,T,C)
    void *dln = ACT(A_DLN, 0);   // (B,T,C)
    GT_TRY(gt_params_backward_begin(&m->ps)); /* the head's and lnf's gradient buffers */
    GT_TRY(head_backward(m, N));
    void *last = ACT(A_RES3, (size_t)(L - 1) * NC);
    GT_TRY(be->memset_zero(be, dres, NC * es));
    GT_TRY(o->layernorm_bwd(k, dres, PG(m, P_LNFW, 0), PG(m, P_LNFB, 0), dln, last,
                            PW(m, P_LNFW, 0), F32(A_LNF_MEAN), F32(A_LNF_RSTD), N, C));
    GT_TRY(gt_params_done(&m->ps, unit_lnf(m)));
    GT_TRY(gt_params_done(&m->ps, U_EMB));
    GT_TRY(gt_params_ready(&m->ps, P_LNFW, 0));

    for (int l = L - 1; l >= 0; l--) {
        block_acts a = block_acts_of(m, l);
        GT_TRY(gt_params_need(&m->ps, unit_block(l), l > 0 ? unit_block(l - 1) : -1));
        /* block recomputation: the scratch holds the top block's activations
         * from the forward (nothing since wrote them); every other block is
         * run again from its input, up to gelu(fch) */
        if (m->Lk == 1 && l < L - 1) GT_TRY(block_forward(m, l, &a, 0));
        GT_TRY(block_backward(m, l, &a));
        GT_TRY(gt_params_done(&m->ps, unit_block(l)));
        GT_TRY(gt_params_ready(&m->ps, P_LN1W, l));
    }
    /* the encoder's backward reads no weights: the embeddings are not needed again */
    GT_TRY(encoder_backward(m, B, T));
    GT_TRY(gt_params_ready(&m->ps, P_WTE, 0));
    gt_params_backward_end(&m->ps);
    return GT_OK;
}

/* ---- pipeline stages (gpt2.h, "Pipeline stages") ------------------------------------ */

/* Points the activations at slot i's arena (slot 0: the model's own). */
static void point_slot(gt_gpt2 *m, int i) {
    char *base = i == 0 ? m->act_mem : m->slot_mem[i];
    size_t off = 0;
    for (int a = 0; a < A_COUNT; a++) {
        m->act[a] = base + off;
        off += align_up(m->act_sizes[a]);
    }
    m->cur_slot = i;
}

/* Block l's output in the current slot (A_RES3, from res_base on). */
static void *res3_of(gt_gpt2 *m, int l) {
    size_t NC = (size_t)m->B * m->T * (size_t)m->cfg.channels;
    return ACT(A_RES3, (size_t)(l - m->res_base) * NC);
}

/* The arenas gone: the model's own (slot 0) and the slots'. */
static void free_arenas(gt_gpt2 *m) {
    gt_backend_dealloc(m->be, m->act_mem);
    m->act_mem = NULL;
    for (int i = 1; i < m->nslots; i++) {
        gt_backend_dealloc(m->be, m->slot_mem[i]);
        m->slot_mem[i] = NULL;
    }
    m->nslots = 0;
}

gt_status gt_gpt2_set_stage(gt_gpt2 *m, int l0, int l1, int n) {
    int L = m->cfg.num_layers;
    if (l0 < 0 || l1 > L || l0 >= l1 || n < 1 || n > GT_GPT2_MAX_SLOTS)
        return GT_ERR(GT_ERR_INVALID, "stage of blocks [%d, %d) with %d slots: expected blocks "
                                      "within [0, %d) and 1 .. %d slots",
                      l0, l1, n, L, GT_GPT2_MAX_SLOTS);
    /* the per-layer activations of the stage's blocks (with block
     * recomputation one block's scratch per slot), its input's and outputs'
     * residual stream; the rest as before */
    int nl = l1 - l0, Lk = m->recompute == GT_MODEL_RECOMPUTE_BLOCK ? 1 : nl;
    act_sizes(&m->cfg, &m->d, m->B, m->T, m->es, Lk, nl + (l0 > 0), m->tp, m->act_sizes);
    if (m->fused_mlp) m->act_sizes[A_DFCH_GELU] = 0;
    m->act_sizes[A_ATT] = (size_t)Lk * att_layer_floats(m, m->B, m->T) * sizeof(float);
    m->Lk = Lk;
    m->stage_lo = l0;
    m->stage_hi = l1;
    m->res_base = l0 > 0 ? l0 - 1 : 0;
    free_arenas(m);
    size_t total = 0;
    for (int i = 0; i < A_COUNT; i++) total += align_up(m->act_sizes[i]);
    GT_TRY(gt_backend_alloc(m->be, total, (void **)&m->act_mem));
    m->nslots = 1;
    for (int i = 1; i < n; i++, m->nslots++)
        GT_TRY(gt_backend_alloc(m->be, total, (void **)&m->slot_mem[i]));
    point_slot(m, 0);
    return GT_OK;
}

/* A stage's call on slot `slot` for a (B,T) micro-batch: the slot's
 * activations, the shape, the attention state inside the slot. */
static gt_status stage_begin(gt_gpt2 *m, int slot, int l0, int l1, int B, int T) {
    int n = m->nslots > 1 ? m->nslots : 1;
    if (!m->stage_hi || l0 != m->stage_lo || l1 != m->stage_hi || slot < 0 || slot >= n)
        return GT_ERR(GT_ERR_INVALID, "stage of blocks [%d, %d) on slot %d: the model holds "
                                      "blocks [%d, %d) with %d slots (gt_gpt2_set_stage)",
                      l0, l1, slot, m->stage_lo, m->stage_hi, n);
    if (B != m->B || T != m->T)
        return GT_ERR(GT_ERR_INVALID, "a stage runs micro-batches of the model's capacity "
                                      "B=%d T=%d, got B=%d T=%d",
                      m->B, m->T, B, T);
    GT_TRY(require_kernels(m));
    point_slot(m, slot);
    m->last_B = B;
    m->last_T = T;
    m->att_stride = att_layer_floats(m, B, T);
    m->att = F32(A_ATT);
    return GT_OK;
}

/* The last stage's head: final LayerNorm, logits, the losses and dlogits
 * (in place of the logits), as gt_gpt2_forward_backward does. */
static gt_status stage_head_forward(gt_gpt2 *m, const int32_t *targets, float dloss,
                                    float *mean_loss) {
    const gt_gpt2_config *c = &m->cfg;
    const gt_ops *o = m->be->ops;
    const gt_kctx *k = &m->ps.k;
    int B = m->last_B, T = m->last_T, C = c->channels, L = c->num_layers;
    int Vp = m->d.vocab, N = B * T;
    if (!targets) return GT_ERR(GT_ERR_INVALID, "the last stage needs the targets");
    GT_TRY(check_tokens(m, targets, N, "target"));
    GT_TRY(m->be->copy_to_device(m->be, m->act[A_TARGETS], targets, (size_t)N * sizeof(int32_t)));
    void *last = res3_of(m, L - 1); // (B,T,C)
    GT_TRY(o->layernorm_fwd(k, ACT(A_LNF, 0), F32(A_LNF_MEAN), F32(A_LNF_RSTD), last,
                            PW(m, P_LNFW, 0), PW(m, P_LNFB, 0), N, C, 1e-5f));
    GT_TRY(o->matmul_fwd(k, ACT(A_LOGITS, 0), ACT(A_LNF, 0), PW(m, P_WTE, 0), NULL, N, C, Vp));
    GT_TRY(loss_backward(m, N, dloss));
    return mean_loss ? mean_loss_of(m, N, mean_loss) : GT_OK;
}

gt_status gt_gpt2_stage_forward(gt_gpt2 *m, int slot, int l0, int l1, const int32_t *inputs,
                                const int32_t *targets, int B, int T, float dloss,
                                float *mean_loss) {
    GT_TRY(stage_begin(m, slot, l0, l1, B, T));
    if (l0 == 0) {
        int N = B * T;
        if (!inputs) return GT_ERR(GT_ERR_INVALID, "the first stage needs the input tokens");
        GT_TRY(check_tokens(m, inputs, N, "input"));
        GT_TRY(m->be->copy_to_device(m->be, m->act[A_TOKENS], inputs, (size_t)N * sizeof(int32_t)));
        GT_TRY(encoder_forward(m, inputs, B, T)); // (B,T,C)
    }
    for (int l = l0; l < l1; l++) {
        block_acts a = block_acts_of(m, l);
        GT_TRY(block_forward(m, l, &a, 1));
    }
    if (l1 < m->cfg.num_layers) return GT_OK;
    return stage_head_forward(m, targets, dloss, mean_loss);
}

/* The last stage's head backward: d(lnf) from dlogits (the tied head's
 * weight gradient accumulates in this stage's copy of dwte, which the
 * first stage owns: gpt2.h says what the trainer does with it), then
 * d(last block's output) into A_DRES. */
static gt_status stage_head_backward(gt_gpt2 *m) {
    const gt_ops *o = m->be->ops;
    const gt_kctx *k = &m->ps.k;
    int C = m->cfg.channels, L = m->cfg.num_layers;
    int N = m->last_B * m->last_T;
    size_t NC = (size_t)N * C;
    void *dres = ACT(A_DRES, 0), *dln = ACT(A_DLN, 0); // (B,T,C)
    GT_TRY(head_backward(m, N));
    GT_TRY(m->be->memset_zero(m->be, dres, NC * m->es));
    return o->layernorm_bwd(k, dres, PG(m, P_LNFW, 0), PG(m, P_LNFB, 0), dln,
                            res3_of(m, L - 1), PW(m, P_LNFW, 0),
                            F32(A_LNF_MEAN), F32(A_LNF_RSTD), N, C);
}

gt_status gt_gpt2_stage_backward(gt_gpt2 *m, int slot, int l0, int l1) {
    GT_TRY(stage_begin(m, slot, l0, l1, m->B, m->T));
    if (l1 == m->cfg.num_layers) GT_TRY(stage_head_backward(m));
    for (int l = l1 - 1; l >= l0; l--) {
        block_acts a = block_acts_of(m, l);
        /* block recomputation, as gt_gpt2_forward_backward: the slot's scratch
         * holds the stage's top block from its forward (each slot has its own
         * arena: no other micro-batch wrote it since); the others run again */
        if (m->recompute == GT_MODEL_RECOMPUTE_BLOCK && l < l1 - 1)
            GT_TRY(block_forward(m, l, &a, 0));
        GT_TRY(block_backward(m, l, &a));
    }
    if (l0 > 0) return GT_OK;
    return encoder_backward(m, m->B, m->T);
}

gt_status gt_gpt2_stage_head_grad(gt_gpt2 *m, int slot) {
    if (m->stage_lo != 0)
        return GT_ERR(GT_ERR_INVALID, "the tied head's gradient is the first stage's; this "
                                      "model holds blocks [%d, %d)",
                      m->stage_lo, m->stage_hi);
    GT_TRY(stage_begin(m, slot, m->stage_lo, m->stage_hi, m->B, m->T));
    int C = m->cfg.channels, Vp = m->d.vocab, N = m->B * m->T;
    /* dwte(Vp,C) += dlogits^T @ lnf: the same call on the same operands as
     * one rank's head backward, so the same bits */
    return m->be->ops->matmul_bwd(&m->ps.k, NULL, PG(m, P_WTE, 0), NULL, ACT(A_LOGITS, 0),
                                  ACT(A_LNF, 0), PW(m, P_WTE, 0), N, C, Vp);
}

void *gt_gpt2_stage_buffer(gt_gpt2 *m, int slot, int l0, int l1, gt_gpt2_stage_buf which,
                           size_t *count) {
    size_t N = (size_t)m->B * m->T, C = (size_t)m->cfg.channels, NC = N * C;
    if (slot < 0 || slot >= (m->nslots > 1 ? m->nslots : 1)) return NULL;
    int keep = m->cur_slot;
    point_slot(m, slot);
    void *p = NULL;
    *count = NC;
    switch (which) {
    case GT_GPT2_STAGE_IN: p = l0 > 0 ? res3_of(m, l0 - 1) : NULL; break;
    case GT_GPT2_STAGE_OUT: p = res3_of(m, l1 - 1); break;
    case GT_GPT2_STAGE_DOUT: /* fallthrough: the residual gradient, in and out */
    case GT_GPT2_STAGE_DIN: p = ACT(A_DRES, 0); break;
    case GT_GPT2_STAGE_DLOGITS:
        p = ACT(A_LOGITS, 0);
        *count = N * (size_t)m->d.vocab;
        break;
    case GT_GPT2_STAGE_LNF: p = ACT(A_LNF, 0); break;
    default: *count = 0; break;
    }
    point_slot(m, keep);
    return p;
}

void gt_gpt2_stage_range(const gt_gpt2 *m, int l0, int l1, size_t *lo, size_t *hi) {
    *lo = l0 == 0 ? 0 : gt_params_offset(&m->ps, P_LN1W, l0);
    *hi = l1 == m->cfg.num_layers ? m->ps.num_params : gt_params_offset(&m->ps, P_LN1W, l1);
}

void gt_gpt2_tied_range(const gt_gpt2 *m, size_t *lo, size_t *hi) {
    *lo = gt_params_offset(&m->ps, P_WTE, 0);
    *hi = *lo + m->ps.t[P_WTE].n;
}

gt_status gt_gpt2_zero_grad(gt_gpt2 *m) { return gt_params_zero_grad(&m->ps); }
gt_status gt_gpt2_set_params(gt_gpt2 *m, const float *src) { return gt_params_set(&m->ps, src); }
gt_status gt_gpt2_get_params(gt_gpt2 *m, float *dst) { return gt_params_get(&m->ps, dst); }
gt_status gt_gpt2_get_grads(gt_gpt2 *m, float *dst) { return gt_params_get_grads(&m->ps, dst); }
void gt_gpt2_locate(const gt_gpt2 *m, size_t internal, gt_gpt2_loc *out) {
    gt_params_locate(&m->ps, internal, out);
}

double gt_gpt2_flops_per_token(const gt_gpt2 *m, int T) {
    const gt_gpt2_config *c = &m->cfg;
    /* the whole model's (tensor parallel: every rank's slices together) */
    return 6.0 * (double)gt_gpt2_full_params(c) + 6.0 * c->num_layers * (double)c->channels * T;
}
