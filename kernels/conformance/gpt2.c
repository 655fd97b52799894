/* Conformance descriptors of GPT-2's other ops (kc.h): encoder,
 * layernorm, attention, gelu, residual, classifier, each forward beside
 * its backward. The GEMMs are in matmul.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/conformance/kc.h"

/* ---- encoder: out = wte[inp] + wpe --------------------------------------------- */

enum { EN_INP, EN_WTE, EN_WPE, EN_OUT, EN_DOUT, EN_DWTE, EN_DWPE };
static const char *const en_names[] = {"inp", "wte", "wpe", "out", "dout", "dwte", "dwpe"};

static void en_label(const gt_kshape *s, char *buf, size_t size) {
    snprintf(buf, size, "B%d_T%d_C%d_V%d", s->B, s->T, s->C, s->V);
}

static int en_valid(const gt_kshape *s) {
    return s->B > 0 && s->T > 0 && s->C > 0 && s->V > 0;
}

static gt_status en_setup(gt_kcase *c) {
    const gt_kshape *s = &c->sh;
    gt_dtype dt = c->dt;
    size_t N = (size_t)s->B * s->T;
    gt_status st = kc_mk_ids(c, EN_INP, N, s->V, 1);
    if (st == GT_OK) st = kc_mk(c, EN_WTE, dt, (size_t)s->V * s->C, 1, 0.0f, 1.0f, 2);
    if (st == GT_OK) st = kc_mk(c, EN_WPE, dt, (size_t)s->T * s->C, 1, 0.0f, 1.0f, 3);
    if (st == GT_OK) st = kc_mk(c, EN_OUT, dt, N * s->C, 0, -1.0f, 1.0f, 4);
    if (c->op == GT_OP_ENCODER_BWD) {
        if (st == GT_OK) st = kc_mk(c, EN_DOUT, dt, N * s->C, 1, 0.0f, 1.0f, 5);
        if (st == GT_OK) st = kc_mk(c, EN_DWTE, dt, (size_t)s->V * s->C, 1, 0.0f, 1.0f, 6);
        if (st == GT_OK) st = kc_mk(c, EN_DWPE, dt, (size_t)s->T * s->C, 1, 0.0f, 1.0f, 7);
    }
    return st;
}

static gt_status en_fwd_call(gt_kcase *c, int side, int inplace) {
    (void)inplace;
    gt_kctx k = kc_ctx(c, side);
    const gt_kshape *s = &c->sh;
    return kc_table(c, side)->encoder_fwd(&k, kc_out(c, side, EN_OUT), kc_in(c, side, EN_INP),
                                          kc_in(c, side, EN_WTE), kc_in(c, side, EN_WPE), s->B,
                                          s->T, s->C);
}

static gt_status en_fwd_check(gt_kcase *c, gt_kcheck *ck, int *n) {
    return kc_check(c, ck, n, "out", EN_OUT, kc_tol(c), NULL);
}

/* one add per element */
static double en_fwd_flops(const gt_kshape *s) {
    return (double)s->B * s->T * s->C;
}

/* wte row, wpe row, out; ids */
static double en_fwd_bytes(const gt_kshape *s, double e) {
    double BT = (double)s->B * s->T;
    return e * (3.0 * BT * s->C) + 4.0 * BT;
}

/* distinct bytes: the wte rows the ids pick (at most V), wpe (its T rows serve every batch row), out; ids */
static double en_fwd_footprint(const gt_kshape *s, double e) {
    double BT = (double)s->B * s->T, rows = BT < s->V ? BT : s->V;
    return e * (rows * s->C + (double)s->T * s->C + BT * s->C) + 4.0 * BT;
}

static const kc_op encoder_fwd = {
    .op = GT_OP_ENCODER_FWD,
    KC_ARRAYS(en_names),
    .dims = "B T C V",
    .label = en_label,
    .valid = en_valid,
    .grid = KC_GRID(encoder),
    .setup = en_setup,
    .call = en_fwd_call,
    .check = en_fwd_check,
    .flops = en_fwd_flops,
    .bytes = en_fwd_bytes,
    .footprint = en_fwd_footprint,
};

static gt_status en_bwd_call(gt_kcase *c, int side, int inplace) {
    (void)inplace;
    gt_kctx k = kc_ctx(c, side);
    const gt_kshape *s = &c->sh;
    return kc_table(c, side)->encoder_bwd(&k, kc_out(c, side, EN_DWTE), kc_out(c, side, EN_DWPE),
                                          kc_in(c, side, EN_DOUT), kc_in(c, side, EN_INP), s->B,
                                          s->T, s->C);
}

static gt_status en_bwd_check(gt_kcase *c, gt_kcheck *ck, int *n) {
    /* A token repeated r times is summed in fp32 with r roundings; the ref
     * rounds once. Bound: r u sum|terms|; with r <= B*T and |dout| ~
     * N(0,1) we allow (B*T) u * 4 sqrt(B*T) on top of atol. */
    const gt_kshape *s = &c->sh;
    double N = (double)s->B * s->T;
    gt_tolerance tb = kc_tol(c);
    tb.atol += N * KC_U32 * 4.0 * sqrt(N);
    gt_status st = kc_check(c, ck, n, "dwte", EN_DWTE, tb, NULL);
    if (st == GT_OK) st = kc_check(c, ck, n, "dwpe", EN_DWPE, tb, NULL);
    return st;
}

/* two accumulations */
static double en_bwd_flops(const gt_kshape *s) {
    return 2.0 * (double)s->B * s->T * s->C;
}

static double en_bwd_bytes(const gt_kshape *s, double e) {
    double BT = (double)s->B * s->T, C = s->C;
    return e * (BT * C + 2.0 * BT * C + 2.0 * s->T * C) + 4.0 * BT;
}

/* distinct bytes: dout, the dwte rows the ids pick, dwpe; ids */
static double en_bwd_footprint(const gt_kshape *s, double e) {
    double BT = (double)s->B * s->T, rows = BT < s->V ? BT : s->V;
    return e * (BT * s->C + rows * s->C + (double)s->T * s->C) + 4.0 * BT;
}

static const kc_op encoder_bwd = {
    .op = GT_OP_ENCODER_BWD,
    KC_ARRAYS(en_names),
    .dims = "B T C V",
    .label = en_label,
    .valid = en_valid,
    .grid = KC_GRID(encoder),
    .setup = en_setup,
    .call = en_bwd_call,
    .check = en_bwd_check,
    .flops = en_bwd_flops,
    .bytes = en_bwd_bytes,
    .footprint = en_bwd_footprint,
};

/* ---- layernorm over rows of C ------------------------------------------------------ */

enum { LN_INP, LN_W, LN_B, LN_OUT, LN_MEAN, LN_RSTD, LN_DOUT, LN_DINP, LN_DW, LN_DB };
static const char *const ln_names[] = {"inp",  "weight", "bias", "out",     "mean",
                                       "rstd", "dout",   "dinp", "dweight", "dbias"};

static void ln_label(const gt_kshape *s, char *buf, size_t size) {
    snprintf(buf, size, "N%d_C%d", s->N, s->C);
}

static int ln_valid(const gt_kshape *s) {
    return s->N > 0 && s->C > 0;
}

/* The backward takes the ref's statistics on both sides so that only the
 * backward is measured (they are fp32 outputs of the forward): computed on
 * a ref made here when none was given. */
static gt_status ln_ref_stats(gt_kcase *c) {
    const gt_kshape *s = &c->sh;
    size_t n = (size_t)s->N * s->C;
    gt_backend *be = c->be, *ref = c->ref, *r = NULL;
    gt_status st = kc_ref_get(c, &r);
    if (st != GT_OK) return st;
    float *hm = malloc(s->N * sizeof(float)), *hr = malloc(s->N * sizeof(float));
    float *rin = NULL, *ro = NULL;
    if (!hm || !hr || !(rin = malloc(n * 4)) || !(ro = malloc(n * 4))) {
        st = GT_ERR(GT_ERR_OOM, "no host memory");
    } else {
        /* ref memory is host memory: run it on the host copies */
        gt_kctx kr = {r, GT_DTYPE_FP32};
        memcpy(rin, c->a[LN_INP].h, n * 4);
        st = gt_ops_ref.layernorm_fwd(&kr, ro, hm, hr, rin, c->a[LN_W].h, c->a[LN_B].h, s->N, s->C,
                                      1e-5f);
        if (st == GT_OK) st = be->copy_to_device(be, c->a[LN_MEAN].d, hm, s->N * sizeof(float));
        if (st == GT_OK) st = be->copy_to_device(be, c->a[LN_RSTD].d, hr, s->N * sizeof(float));
        if (st == GT_OK && ref)
            st = ref->copy_to_device(ref, c->a[LN_MEAN].r, hm, s->N * sizeof(float));
        if (st == GT_OK && ref)
            st = ref->copy_to_device(ref, c->a[LN_RSTD].r, hr, s->N * sizeof(float));
    }
    free(hm);
    free(hr);
    free(rin);
    free(ro);
    kc_ref_put(c, r);
    return st;
}

static gt_status ln_setup(gt_kcase *c) {
    const gt_kshape *s = &c->sh;
    gt_dtype dt = c->dt, F = GT_DTYPE_FP32;
    size_t n = (size_t)s->N * s->C;
    gt_status st = kc_mk(c, LN_INP, dt, n, 1, 0.3f, 1.5f, 10);
    if (st == GT_OK) st = kc_mk(c, LN_W, dt, s->C, 1, 1.0f, 0.2f, 11);
    if (st == GT_OK) st = kc_mk(c, LN_B, dt, s->C, 1, 0.0f, 0.2f, 12);
    if (st == GT_OK) st = kc_mk(c, LN_OUT, dt, n, 0, -1.0f, 1.0f, 13);
    if (st == GT_OK) st = kc_mk(c, LN_MEAN, F, s->N, 0, -1.0f, 1.0f, 14);
    if (st == GT_OK) st = kc_mk(c, LN_RSTD, F, s->N, 0, -1.0f, 1.0f, 15);
    if (c->op == GT_OP_LAYERNORM_BWD) {
        if (st == GT_OK) st = kc_mk(c, LN_DOUT, dt, n, 1, 0.0f, 1.0f, 16);
        if (st == GT_OK) st = kc_mk(c, LN_DINP, dt, n, 1, 0.0f, 1.0f, 17);
        if (st == GT_OK) st = kc_mk(c, LN_DW, dt, s->C, 1, 0.0f, 1.0f, 18);
        if (st == GT_OK) st = kc_mk(c, LN_DB, dt, s->C, 1, 0.0f, 1.0f, 19);
        if (st == GT_OK) st = ln_ref_stats(c);
    }
    return st;
}

static gt_status ln_fwd_call(gt_kcase *c, int side, int inplace) {
    (void)inplace;
    gt_kctx k = kc_ctx(c, side);
    const gt_kshape *s = &c->sh;
    return kc_table(c, side)->layernorm_fwd(
        &k, kc_out(c, side, LN_OUT), kc_out(c, side, LN_MEAN), kc_out(c, side, LN_RSTD),
        kc_in(c, side, LN_INP), kc_in(c, side, LN_W), kc_in(c, side, LN_B), s->N, s->C, 1e-5f);
}

static gt_status ln_fwd_check(gt_kcase *c, gt_kcheck *ck, int *n) {
    /* out = norm * w + b: norm carries the rounding of mean and rstd (fp32)
     * times |x - mean| rstd, up to ~4 for normal inputs. */
    gt_status st = kc_check(c, ck, n, "out", LN_OUT, kc_scaled(kc_tol(c), 4.0, 1.0), NULL);
    if (st == GT_OK) st = kc_check(c, ck, n, "mean", LN_MEAN, kc_tf(), NULL);
    if (st == GT_OK) st = kc_check(c, ck, n, "rstd", LN_RSTD, kc_tf(), NULL);
    return st;
}

/* mean, var (2), norm (2), scale+shift (2), +1 */
static double ln_fwd_flops(const gt_kshape *s) {
    return 8.0 * s->N * (double)s->C;
}

static double ln_fwd_bytes(const gt_kshape *s, double e) {
    double N = s->N, C = s->C;
    return e * (2.0 * N * C + 2.0 * C) + 8.0 * N;
}

static const kc_op layernorm_fwd = {
    .op = GT_OP_LAYERNORM_FWD,
    KC_ARRAYS(ln_names),
    .dims = "N C",
    .label = ln_label,
    .valid = ln_valid,
    .grid = KC_GRID(layernorm),
    .setup = ln_setup,
    .call = ln_fwd_call,
    .check = ln_fwd_check,
    .flops = ln_fwd_flops,
    .bytes = ln_fwd_bytes,
};

static gt_status ln_bwd_call(gt_kcase *c, int side, int inplace) {
    (void)inplace;
    gt_kctx k = kc_ctx(c, side);
    const gt_kshape *s = &c->sh;
    return kc_table(c, side)->layernorm_bwd(
        &k, kc_out(c, side, LN_DINP), kc_out(c, side, LN_DW), kc_out(c, side, LN_DB),
        kc_in(c, side, LN_DOUT), kc_in(c, side, LN_INP), kc_in(c, side, LN_W),
        kc_in(c, side, LN_MEAN), kc_in(c, side, LN_RSTD), s->N, s->C);
}

static gt_status ln_bwd_check(gt_kcase *c, gt_kcheck *ck, int *n) {
    const gt_kshape *s = &c->sh;
    /* dinp: dnorm - mean(dnorm) - norm mean(dnorm norm) cancels; each term
     * is O(|dout| |w| |norm|) ~ 16 at 4 sigma: 16 u per ulp of the terms
     * times a few roundings. */
    gt_tolerance td = kc_tol(c);
    td.atol += 16.0 * 8.0 * KC_U32;
    gt_status st = kc_check(c, ck, n, "dinp", LN_DINP, td, NULL);
    /* dweight/dbias: sums over N rows in fp32, N u sum|terms| with
     * sum|terms| ~ N E|norm dout| (~0.8 N): allow N^2 u. */
    gt_tolerance tr = kc_tol(c);
    tr.atol += (double)s->N * s->N * KC_U32;
    if (st == GT_OK) st = kc_check(c, ck, n, "dweight", LN_DW, tr, NULL);
    if (st == GT_OK) st = kc_check(c, ck, n, "dbias", LN_DB, tr, NULL);
    return st;
}

static double ln_bwd_flops(const gt_kshape *s) {
    return 14.0 * s->N * (double)s->C;
}

/* dout, inp, dinp rw; w, dw/db rw */
static double ln_bwd_bytes(const gt_kshape *s, double e) {
    double N = s->N, C = s->C;
    return e * (4.0 * N * C + 5.0 * C) + 8.0 * N;
}

/* distinct bytes: dout, inp, dinp (accumulated in place); weight, dweight, dbias; mean, rstd */
static double ln_bwd_footprint(const gt_kshape *s, double e) {
    double N = s->N, C = s->C;
    return e * (3.0 * N * C + 3.0 * C) + 8.0 * N;
}

static const kc_op layernorm_bwd = {
    .op = GT_OP_LAYERNORM_BWD,
    KC_ARRAYS(ln_names),
    .dims = "N C",
    .label = ln_label,
    .valid = ln_valid,
    .grid = KC_GRID(layernorm),
    .setup = ln_setup,
    .call = ln_bwd_call,
    .check = ln_bwd_check,
    .flops = ln_bwd_flops,
    .bytes = ln_bwd_bytes,
    .footprint = ln_bwd_footprint,
};

/* ---- causal self-attention over qkv (B, T, 3C) --------------------------------------- */

enum { AT_QKV, AT_OUT, AT_ATT, AT_DOUT, AT_DQKV };
static const char *const at_names[] = {"qkv", "out", "att", "dout", "dqkv"};

static void at_label(const gt_kshape *s, char *buf, size_t size) {
    snprintf(buf, size, "B%d_T%d_C%d_NH%d", s->B, s->T, s->C, s->NH);
}

static int at_valid(const gt_kshape *s) {
    return s->B > 0 && s->T > 0 && s->C > 0 && s->NH > 0 && s->C % s->NH == 0;
}

static gt_status at_fwd_call(gt_kcase *c, int side, int inplace) {
    (void)inplace;
    gt_kctx k = kc_ctx(c, side);
    const gt_kshape *s = &c->sh;
    return kc_table(c, side)->attention_fwd(&k, kc_out(c, side, AT_OUT), kc_out(c, side, AT_ATT),
                                            kc_in(c, side, AT_QKV), s->B, s->T, s->C, s->NH);
}

static gt_status at_setup(gt_kcase *c) {
    const gt_kshape *s = &c->sh;
    gt_backend *be = c->be;
    gt_dtype dt = c->dt;
    size_t nqkv = (size_t)s->B * s->T * 3 * s->C, nout = (size_t)s->B * s->T * s->C;
    size_t natt = (size_t)s->B * s->NH * s->T * s->T;
    gt_status st = kc_mk(c, AT_QKV, dt, nqkv, 1, 0.0f, 1.0f, 30);
    if (st == GT_OK) st = kc_mk(c, AT_OUT, dt, nout, 0, -1.0f, 1.0f, 31);
    if (st == GT_OK) st = kc_mk(c, AT_ATT, GT_DTYPE_FP32, natt, 0, -1.0f, 1.0f, 32);
    /* The ref side keeps its (B,NH,T,T) probabilities; the backend's side
     * gets exactly the state its attention_state_floats asks for, so that a
     * backend writing more than it promised shows. */
    if (st == GT_OK) {
        gt_kctx kb = {be, dt};
        size_t nb = gt_attention_state_floats(be->ops, &kb, s->B, s->T, s->C, s->NH);
        if (nb != natt) st = kc_realloc_dev(c, AT_ATT, nb);
    }
    if (c->op == GT_OP_ATTENTION_BWD) {
        if (st == GT_OK) st = kc_mk(c, AT_DOUT, dt, nout, 1, 0.0f, 1.0f, 33);
        if (st == GT_OK) st = kc_mk(c, AT_DQKV, dt, nqkv, 1, 0.0f, 1.0f, 34);
        /* Each backend's backward reads its own forward's saved state. */
        if (st == GT_OK && !be->ops->attention_fwd)
            st = GT_ERR(GT_ERR_UNSUPPORTED,
                        "attention_bwd needs attention_fwd's saved state: empty slot on %s",
                        be->name);
        if (st == GT_OK) st = at_fwd_call(c, 0, 0);
        if (st == GT_OK && c->ref) {
            st = at_fwd_call(c, 1, 0);
            if (st != GT_OK) st = GT_ERR(GT_ERR_INVALID, "ref attention_fwd: %s", gt_last_error());
        }
    }
    return st;
}

/* Scores are length-hs dot products (hs u sum|q||k| ~ hs u hs), whose
 * error passes through exp into every probability and so into out: allow
 * 8x rtol and hs-scaled atol. */
static gt_status at_tolerance(gt_kcase *c, int arr, gt_tolerance *ta) {
    const gt_kshape *s = &c->sh;
    int hs = s->C / s->NH;
    *ta = kc_scaled(kc_tol(c), 8.0, 1.0);
    ta->atol += (double)hs * KC_U32 * 8.0;
    if (c->dt == GT_DTYPE_BF16 || c->dt == GT_DTYPE_FP16) {
        /* Flash attention (cuda's cuDNN path, docs/cuda.md) rounds the
         * probabilities and dS to the storage type before its second
         * matmuls: an error of u sum_j p_j |v_j| per output, up to a few u
         * of the array's largest value, which rtol cannot absorb near zero.
         * Allow 16 u max|want| (u = 2^-8 bf16, 2^-11 fp16). */
        kc_arr *x = &c->a[arr];
        float *w = malloc(x->n ? x->n * sizeof(float) : 1);
        gt_status st = w ? kc_download(c->ref, GT_DTYPE_FP32, x->r, x->n, w)
                         : GT_ERR(GT_ERR_OOM, "no host memory for the attention bound");
        double mx = 0.0;
        for (size_t i = 0; st == GT_OK && i < x->n; i++)
            if (fabs(w[i]) > mx) mx = fabs(w[i]);
        free(w);
        if (st != GT_OK) return st;
        ta->atol += 16.0 * (c->dt == GT_DTYPE_BF16 ? 1.0 / 256.0 : 1.0 / 2048.0) * mx;
    }
    return GT_OK;
}

static gt_status at_fwd_check(gt_kcase *c, gt_kcheck *ck, int *n) {
    gt_tolerance ta;
    GT_TRY(at_tolerance(c, AT_OUT, &ta));
    return kc_check(c, ck, n, "out", AT_OUT, ta, NULL);
}

/* causal: q k^T and att v over T(T+1)/2 pairs per head, 2 flops each per
 * head dimension: 2 * 2 * B NH T(T+1)/2 hs = 2 B T(T+1) C, plus ~5 per
 * score for the softmax */
static double at_fwd_flops(const gt_kshape *s) {
    double BT = (double)s->B * s->T;
    return 2.0 * BT * (s->T + 1) * s->C + 5.0 * s->B * s->NH * s->T * (s->T + 1) / 2.0;
}

static double at_fwd_bytes(const gt_kshape *s, double e) {
    double BT = (double)s->B * s->T;
    return e * 4.0 * BT * s->C + 4.0 * s->B * s->NH * (double)s->T * s->T;
}

static const kc_op attention_fwd = {
    .op = GT_OP_ATTENTION_FWD,
    KC_ARRAYS(at_names),
    .dims = "B T C NH",
    .label = at_label,
    .valid = at_valid,
    .grid = KC_GRID(attention),
    .setup = at_setup,
    .call = at_fwd_call,
    .check = at_fwd_check,
    .flops = at_fwd_flops,
    .bytes = at_fwd_bytes,
};

static gt_status at_bwd_call(gt_kcase *c, int side, int inplace) {
    (void)inplace;
    gt_kctx k = kc_ctx(c, side);
    const gt_kshape *s = &c->sh;
    return kc_table(c, side)->attention_bwd(&k, kc_out(c, side, AT_DQKV), kc_in(c, side, AT_DOUT),
                                            kc_in(c, side, AT_QKV), kc_in(c, side, AT_OUT),
                                            kc_in(c, side, AT_ATT), s->B, s->T, s->C, s->NH);
}

static gt_status at_bwd_check(gt_kcase *c, gt_kcheck *ck, int *n) {
    const gt_kshape *s = &c->sh;
    gt_tolerance ta;
    GT_TRY(at_tolerance(c, AT_DQKV, &ta));
    /* dk, dv sum over up to T query rows: add T u * hs. */
    ta.atol += (double)s->T * (s->C / s->NH) * KC_U32 * 4.0;
    return kc_check(c, ck, n, "dqkv", AT_DQKV, ta, NULL);
}

static double at_bwd_flops(const gt_kshape *s) {
    double BT = (double)s->B * s->T;
    return 2.0 * (2.0 * BT * (s->T + 1) * s->C) + 5.0 * s->B * s->NH * s->T * (s->T + 1) / 2.0;
}

static double at_bwd_bytes(const gt_kshape *s, double e) {
    double BT = (double)s->B * s->T, C = s->C;
    return e * (BT * C + 3.0 * BT * C + 6.0 * BT * C) + 4.0 * s->B * s->NH * (double)s->T * s->T;
}

/* distinct bytes: dout, qkv, dqkv (accumulated in place), the saved scores */
static double at_bwd_footprint(const gt_kshape *s, double e) {
    double BT = (double)s->B * s->T, C = s->C;
    return e * (BT * C + 3.0 * BT * C + 3.0 * BT * C) + 4.0 * s->B * s->NH * (double)s->T * s->T;
}

static const kc_op attention_bwd = {
    .op = GT_OP_ATTENTION_BWD,
    KC_ARRAYS(at_names),
    .dims = "B T C NH",
    .label = at_label,
    .valid = at_valid,
    .grid = KC_GRID(attention),
    .setup = at_setup,
    .call = at_bwd_call,
    .check = at_bwd_check,
    .flops = at_bwd_flops,
    .bytes = at_bwd_bytes,
    .footprint = at_bwd_footprint,
};

/* ---- gelu and residual: elementwise over n ------------------------------------------- */

enum { PW_X, PW_Y, PW_OUT, PW_DINP, PW_A, PW_DA, PW_DB };
static const char *const pw_names[] = {"x", "y", "out", "dinp", "inplace", "da", "db"};

static void pw_label(const gt_kshape *s, char *buf, size_t size) {
    snprintf(buf, size, "n%zu", s->n);
}

static int pw_valid(const gt_kshape *s) {
    (void)s;
    return 1;
}

static gt_status pw_setup(gt_kcase *c) {
    size_t n = c->sh.n;
    gt_dtype dt = c->dt;
    gt_status st = kc_mk(c, PW_X, dt, n, 1, 0.0f, 3.0f, 40);
    if (st == GT_OK) st = kc_mk(c, PW_Y, dt, n, 1, 0.0f, 1.0f, 41);
    if (st == GT_OK) st = kc_mk(c, PW_OUT, dt, n, 0, -1.0f, 1.0f, 42);
    if (st == GT_OK && c->op == GT_OP_GELU_BWD) st = kc_mk(c, PW_DINP, dt, n, 1, 0.0f, 1.0f, 43);
    if (st == GT_OK && c->op == GT_OP_RESIDUAL_FWD) st = kc_mk(c, PW_A, dt, n, 1, 0.0f, 1.0f, 44);
    if (c->op == GT_OP_RESIDUAL_BWD) {
        if (st == GT_OK) st = kc_mk(c, PW_DA, dt, n, 1, 0.0f, 1.0f, 45);
        if (st == GT_OK) st = kc_mk(c, PW_DB, dt, n, 1, 0.0f, 1.0f, 46);
    }
    return st;
}

static gt_status gelu_fwd_call(gt_kcase *c, int side, int inplace) {
    (void)inplace;
    gt_kctx k = kc_ctx(c, side);
    return kc_table(c, side)->gelu_fwd(&k, kc_out(c, side, PW_OUT), kc_in(c, side, PW_X), c->sh.n);
}

/* GELU: the argument 2u of exp is rounded in fp32, an error of |2u| ulp
 * relative in exp(-2u), i.e. up to ~8 ulp for |x| < 4 where it is not
 * absorbed by atol: 4x rtol. */
static gt_status gelu_fwd_check(gt_kcase *c, gt_kcheck *ck, int *n) {
    return kc_check(c, ck, n, "out", PW_OUT, kc_scaled(kc_tol(c), 4.0, 1.0), NULL);
}

static double gelu_fwd_flops(const gt_kshape *s) {
    return 8.0 * (double)s->n;
}
static double gelu_fwd_bytes(const gt_kshape *s, double e) {
    return e * 2.0 * (double)s->n;
}

static const kc_op gelu_fwd = {
    .op = GT_OP_GELU_FWD,
    KC_ARRAYS(pw_names),
    .dims = "n",
    .label = pw_label,
    .valid = pw_valid,
    .grid = KC_GRID(pointwise),
    .setup = pw_setup,
    .call = gelu_fwd_call,
    .check = gelu_fwd_check,
    .flops = gelu_fwd_flops,
    .bytes = gelu_fwd_bytes,
};

static gt_status gelu_bwd_call(gt_kcase *c, int side, int inplace) {
    (void)inplace;
    gt_kctx k = kc_ctx(c, side);
    return kc_table(c, side)->gelu_bwd(&k, kc_out(c, side, PW_DINP), kc_in(c, side, PW_X),
                                       kc_in(c, side, PW_Y), c->sh.n);
}

/* as gelu_fwd's */
static gt_status gelu_bwd_check(gt_kcase *c, gt_kcheck *ck, int *n) {
    return kc_check(c, ck, n, "dinp", PW_DINP, kc_scaled(kc_tol(c), 4.0, 1.0), NULL);
}

static double gelu_bwd_flops(const gt_kshape *s) {
    return 16.0 * (double)s->n;
}
static double gelu_bwd_bytes(const gt_kshape *s, double e) {
    return e * 4.0 * (double)s->n;
}

/* distinct bytes: inp, dout, dinp (accumulated in place) */
static double gelu_bwd_footprint(const gt_kshape *s, double e) {
    return e * 3.0 * (double)s->n;
}

static const kc_op gelu_bwd = {
    .op = GT_OP_GELU_BWD,
    KC_ARRAYS(pw_names),
    .dims = "n",
    .label = pw_label,
    .valid = pw_valid,
    .grid = KC_GRID(pointwise),
    .setup = pw_setup,
    .call = gelu_bwd_call,
    .check = gelu_bwd_check,
    .flops = gelu_bwd_flops,
    .bytes = gelu_bwd_bytes,
    .footprint = gelu_bwd_footprint,
};

static gt_status residual_fwd_call(gt_kcase *c, int side, int inplace) {
    gt_kctx k = kc_ctx(c, side);
    const gt_ops *o = kc_table(c, side);
    if (inplace) /* out aliasing a: the form models use */
        return o->residual_fwd(&k, kc_out(c, side, PW_A), kc_in(c, side, PW_A),
                               kc_in(c, side, PW_Y), c->sh.n);
    return o->residual_fwd(&k, kc_out(c, side, PW_OUT), kc_in(c, side, PW_X), kc_in(c, side, PW_Y),
                           c->sh.n);
}

/* exact but for the one rounding of the sum; then the in-place form */
static gt_status residual_fwd_check(gt_kcase *c, gt_kcheck *ck, int *n) {
    gt_status st = kc_check(c, ck, n, "out", PW_OUT, kc_tol(c), NULL);
    if (st == GT_OK) st = kc_run_both(c, 1);
    if (st == GT_OK) st = kc_check(c, ck, n, "inplace", PW_A, kc_tol(c), NULL);
    return st;
}

static double residual_fwd_flops(const gt_kshape *s) {
    return (double)s->n;
}
static double residual_fwd_bytes(const gt_kshape *s, double e) {
    return e * 3.0 * (double)s->n;
}

static const kc_op residual_fwd = {
    .op = GT_OP_RESIDUAL_FWD,
    KC_ARRAYS(pw_names),
    .dims = "n",
    .label = pw_label,
    .valid = pw_valid,
    .grid = KC_GRID(pointwise),
    .setup = pw_setup,
    .call = residual_fwd_call,
    .check = residual_fwd_check,
    .flops = residual_fwd_flops,
    .bytes = residual_fwd_bytes,
};

static gt_status residual_bwd_call(gt_kcase *c, int side, int inplace) {
    (void)inplace;
    gt_kctx k = kc_ctx(c, side);
    return kc_table(c, side)->residual_bwd(&k, kc_out(c, side, PW_DA), kc_out(c, side, PW_DB),
                                           kc_in(c, side, PW_Y), c->sh.n);
}

static gt_status residual_bwd_check(gt_kcase *c, gt_kcheck *ck, int *n) {
    gt_status st = kc_check(c, ck, n, "da", PW_DA, kc_tol(c), NULL);
    if (st == GT_OK) st = kc_check(c, ck, n, "db", PW_DB, kc_tol(c), NULL);
    return st;
}

static double residual_bwd_flops(const gt_kshape *s) {
    return 2.0 * (double)s->n;
}
static double residual_bwd_bytes(const gt_kshape *s, double e) {
    return e * 5.0 * (double)s->n;
}

/* distinct bytes: dout, da and db (accumulated in place) */
static double residual_bwd_footprint(const gt_kshape *s, double e) {
    return e * 3.0 * (double)s->n;
}

static const kc_op residual_bwd = {
    .op = GT_OP_RESIDUAL_BWD,
    KC_ARRAYS(pw_names),
    .dims = "n",
    .label = pw_label,
    .valid = pw_valid,
    .grid = KC_GRID(pointwise),
    .setup = pw_setup,
    .call = residual_bwd_call,
    .check = residual_bwd_check,
    .flops = residual_bwd_flops,
    .bytes = residual_bwd_bytes,
    .footprint = residual_bwd_footprint,
};

/* ---- classifier: softmax cross-entropy over rows of V (padded to Vp) ------------------- */

enum { CL_TG, CL_LOGITS, CL_LOSSES, CL_DL, CL_LOGITS2 };
static const char *const cl_names[] = {"targets", "logits", "losses", "dlogits", "inplace"};

static void cl_label(const gt_kshape *s, char *buf, size_t size) {
    snprintf(buf, size, "N%d_V%d_Vp%d", s->N, s->V, s->Vp);
}

static int cl_valid(const gt_kshape *s) {
    return s->N > 0 && s->V > 0 && s->Vp >= s->V;
}

static gt_status cl_setup(gt_kcase *c) {
    const gt_kshape *s = &c->sh;
    gt_dtype dt = c->dt;
    size_t n = (size_t)s->N * s->Vp;
    gt_status st = kc_mk_ids(c, CL_TG, s->N, s->V, 50);
    if (st == GT_OK) st = kc_mk(c, CL_LOGITS, dt, n, 1, 0.0f, 2.0f, 51);
    if (st == GT_OK) st = kc_mk(c, CL_LOSSES, GT_DTYPE_FP32, s->N, 0, -1.0f, 1.0f, 52);
    if (c->op == GT_OP_CLASSIFIER_BWD) {
        /* dlogits is overwritten: garbage in */
        if (st == GT_OK) st = kc_mk(c, CL_DL, dt, n, 0, -5.0f, 5.0f, 53);
        /* the in-place check's own copy of the logits */
        if (st == GT_OK) st = kc_mk(c, CL_LOGITS2, dt, n, 1, 0.0f, 2.0f, 51);
    }
    return st;
}

/* Losses are lse - x_t with lse ~ log V + max: the fp32 sum of V
 * exponentials (V u relative at worst, sqrt(V) u typically) moves the loss
 * by that relative amount absolutely; allow sqrt(V) u on top. */
static gt_tolerance cl_loss_tol(const gt_kcase *c) {
    gt_tolerance tl = kc_tf();
    tl.atol += sqrt((double)c->sh.V) * KC_U32 * 8.0;
    if (c->dt != GT_DTYPE_FP32) tl = kc_tol(c);
    return tl;
}

static gt_status cl_fwd_call(gt_kcase *c, int side, int inplace) {
    (void)inplace;
    gt_kctx k = kc_ctx(c, side);
    const gt_kshape *s = &c->sh;
    return kc_table(c, side)->classifier_fwd(&k, kc_out(c, side, CL_LOSSES),
                                             kc_in(c, side, CL_LOGITS), kc_in(c, side, CL_TG), s->N,
                                             s->V, s->Vp);
}

static gt_status cl_fwd_check(gt_kcase *c, gt_kcheck *ck, int *n) {
    return kc_check(c, ck, n, "losses", CL_LOSSES, cl_loss_tol(c), NULL);
}

/* max, exp, sum */
static double cl_fwd_flops(const gt_kshape *s) {
    return 3.0 * s->N * (double)s->V;
}
static double cl_fwd_bytes(const gt_kshape *s, double e) {
    return e * s->N * (double)s->Vp + 8.0 * s->N;
}

static const kc_op classifier_fwd = {
    .op = GT_OP_CLASSIFIER_FWD,
    KC_ARRAYS(cl_names),
    .dims = "N V Vp",
    .label = cl_label,
    .valid = cl_valid,
    .grid = KC_GRID(classifier),
    .setup = cl_setup,
    .call = cl_fwd_call,
    .check = cl_fwd_check,
    .flops = cl_fwd_flops,
    .bytes = cl_fwd_bytes,
};

static gt_status cl_bwd_call(gt_kcase *c, int side, int inplace) {
    gt_kctx k = kc_ctx(c, side);
    const gt_ops *o = kc_table(c, side);
    const gt_kshape *s = &c->sh;
    float dloss = 1.0f / (s->N > 0 ? s->N : 1);
    if (inplace) /* over the logits, losses NULL: the memory-saving path */
        return o->classifier_bwd(&k, kc_out(c, side, CL_LOGITS2), NULL, kc_in(c, side, CL_LOGITS2),
                                 kc_in(c, side, CL_TG), dloss, s->N, s->V, s->Vp);
    return o->classifier_bwd(&k, kc_out(c, side, CL_DL), kc_out(c, side, CL_LOSSES),
                             kc_in(c, side, CL_LOGITS), kc_in(c, side, CL_TG), dloss, s->N, s->V,
                             s->Vp);
}

static gt_status cl_bwd_check(gt_kcase *c, gt_kcheck *ck, int *n) {
    /* Probabilities carry exp's few-ulp error plus the fp32 rounding of
     * x - max (|x - max| ulp relative, up to ~16 for N(0,2) logits). */
    gt_tolerance tp = kc_scaled(kc_tol(c), 8.0, 1.0);
    gt_status st = kc_check(c, ck, n, "dlogits", CL_DL, tp, NULL);
    if (st == GT_OK) st = kc_check(c, ck, n, "losses", CL_LOSSES, cl_loss_tol(c), NULL);
    if (st == GT_OK) st = kc_run_both(c, 1);
    if (st == GT_OK) st = kc_check(c, ck, n, "inplace", CL_LOGITS2, tp, NULL);
    return st;
}

/* + normalise, subtract */
static double cl_bwd_flops(const gt_kshape *s) {
    return 5.0 * s->N * (double)s->V;
}
static double cl_bwd_bytes(const gt_kshape *s, double e) {
    return e * 2.0 * s->N * (double)s->Vp + 8.0 * s->N;
}

static const kc_op classifier_bwd = {
    .op = GT_OP_CLASSIFIER_BWD,
    KC_ARRAYS(cl_names),
    .dims = "N V Vp",
    .label = cl_label,
    .valid = cl_valid,
    .grid = KC_GRID(classifier),
    .setup = cl_setup,
    .call = cl_bwd_call,
    .check = cl_bwd_check,
    .flops = cl_bwd_flops,
    .bytes = cl_bwd_bytes,
};

const kc_op *const kc_gpt2_ops[] = {
    &encoder_fwd, &encoder_bwd, &layernorm_fwd, &layernorm_bwd, &attention_fwd,  &attention_bwd,
    &gelu_fwd,    &gelu_bwd,    &residual_fwd,  &residual_bwd,  &classifier_fwd, &classifier_bwd,
    NULL};
