/* kernels.conformance.<backend>: every op of the table, forward and
 * backward, on the backend under test against the ref backend, over a grid
 * of shapes from tiny and odd to GPT-2 sized.
 *
 * usage: conformance <backend> <dtype>
 *
 * Inputs are built on the host in fp32 from seeded Philox streams, rounded
 * to the storage dtype, and given to both backends (ref always in fp32).
 * Gradients start from random values, not zero, so that "accumulates" is
 * checked too. Tolerance: contract 1, gt_dtype_tolerance(dt), with per-op
 * allowances below where fp32 summation order genuinely needs more.
 * Exit: 0 pass, 1 a check failed, 77 the backend is not available here. */
#include "kernels/tests/testutil.h"

/* Unit roundoff of fp32 arithmetic: every backend computes in fp32 at least. */
#define U32 (1.0 / 16777216.0)

static int slot_ok(tu_ctx *t, gt_op op, const char *shape) {
    if (gt_ops_slot(t->be->ops, op)) return 1;
    printf("  %-15s %-26s skipped (empty slot)\n", gt_op_name(op), shape);
    t->skips++;
    return 0;
}

/* Runs the op on both backends; 0 when it was skipped or failed to run. */
static int ran(tu_ctx *t, gt_op op, const char *shape, gt_status sb, gt_status sr) {
    if (sr != GT_OK) {
        printf("  %-15s %-26s FAIL: ref returned %s: %s\n", gt_op_name(op), shape,
               gt_status_name(sr), gt_last_error());
        t->fails++;
        return 0;
    }
    if (sb == GT_ERR_UNSUPPORTED) {
        printf("  %-15s %-26s skipped: %s\n", gt_op_name(op), shape, gt_last_error());
        t->skips++;
        return 0;
    }
    if (sb != GT_OK) {
        printf("  %-15s %-26s FAIL: returned %s: %s\n", gt_op_name(op), shape, gt_status_name(sb),
               gt_last_error());
        t->fails++;
        return 0;
    }
    return 1;
}

static gt_tolerance scaled(gt_tolerance tol, double rtol_mul, double atol_mul) {
    tol.rtol *= rtol_mul;
    tol.atol *= atol_mul;
    return tol;
}

/* ---- encoder ------------------------------------------------------------------ */
static void test_encoder(tu_ctx *t, int B, int T, int C, int V) {
    char sh[64];
    snprintf(sh, sizeof sh, "B%d T%d C%d V%d", B, T, C, V);
    gt_kctx kb = {t->be, t->dt}, kr = {t->ref, GT_DTYPE_FP32};
    size_t N = (size_t)B * T;
    tu_ids inp = tu_mk_ids(t, N, V, 1);
    tu_arr wte = tu_mk(t, t->dt, (size_t)V * C, 1, 0.0f, 1.0f, 2);
    tu_arr wpe = tu_mk(t, t->dt, (size_t)T * C, 1, 0.0f, 1.0f, 3);
    tu_arr out = tu_mk(t, t->dt, N * C, 0, -1.0f, 1.0f, 4);
    gt_tolerance tol = gt_dtype_tolerance(t->dt);
    if (slot_ok(t, GT_OP_ENCODER_FWD, sh) &&
        ran(t, GT_OP_ENCODER_FWD, sh, t->be->ops->encoder_fwd(&kb, out.d, inp.d, wte.d, wpe.d, B, T, C),
            gt_ops_ref.encoder_fwd(&kr, out.r, inp.r, wte.r, wpe.r, B, T, C)))
        tu_check(t, "encoder_fwd", sh, "out", &out, tol, NULL);
    if (slot_ok(t, GT_OP_ENCODER_BWD, sh)) {
        tu_arr dout = tu_mk(t, t->dt, N * C, 1, 0.0f, 1.0f, 5);
        tu_arr dwte = tu_mk(t, t->dt, (size_t)V * C, 1, 0.0f, 1.0f, 6);
        tu_arr dwpe = tu_mk(t, t->dt, (size_t)T * C, 1, 0.0f, 1.0f, 7);
        /* A token repeated r times is summed in fp32 with r roundings; the
         * ref rounds once. Bound: r u sum|terms|; with r <= B*T and
         * |dout| ~ N(0,1) we allow (B*T) u * 4 sqrt(B*T) on top of atol. */
        gt_tolerance tb = tol;
        tb.atol += (double)N * U32 * 4.0 * sqrt((double)N);
        if (ran(t, GT_OP_ENCODER_BWD, sh,
                t->be->ops->encoder_bwd(&kb, dwte.d, dwpe.d, dout.d, inp.d, B, T, C),
                gt_ops_ref.encoder_bwd(&kr, dwte.r, dwpe.r, dout.r, inp.r, B, T, C))) {
            tu_check(t, "encoder_bwd", sh, "dwte", &dwte, tb, NULL);
            tu_check(t, "encoder_bwd", sh, "dwpe", &dwpe, tb, NULL);
        }
        tu_free(t, &dout);
        tu_free(t, &dwte);
        tu_free(t, &dwpe);
    }
    tu_free_ids(t, &inp);
    tu_free(t, &wte);
    tu_free(t, &wpe);
    tu_free(t, &out);
}

/* ---- layernorm ------------------------------------------------------------------ */
static void test_layernorm(tu_ctx *t, int N, int C) {
    char sh[64];
    snprintf(sh, sizeof sh, "N%d C%d", N, C);
    gt_kctx kb = {t->be, t->dt}, kr = {t->ref, GT_DTYPE_FP32};
    size_t n = (size_t)N * C;
    tu_arr inp = tu_mk(t, t->dt, n, 1, 0.3f, 1.5f, 10);
    tu_arr w = tu_mk(t, t->dt, C, 1, 1.0f, 0.2f, 11);
    tu_arr b = tu_mk(t, t->dt, C, 1, 0.0f, 0.2f, 12);
    tu_arr out = tu_mk(t, t->dt, n, 0, -1.0f, 1.0f, 13);
    tu_arr mean = tu_mk(t, GT_DTYPE_FP32, N, 0, -1.0f, 1.0f, 14);
    tu_arr rstd = tu_mk(t, GT_DTYPE_FP32, N, 0, -1.0f, 1.0f, 15);
    gt_tolerance tol = gt_dtype_tolerance(t->dt);
    int fwd_ok = 0;
    if (slot_ok(t, GT_OP_LAYERNORM_FWD, sh) &&
        ran(t, GT_OP_LAYERNORM_FWD, sh,
            t->be->ops->layernorm_fwd(&kb, out.d, mean.d, rstd.d, inp.d, w.d, b.d, N, C, 1e-5f),
            gt_ops_ref.layernorm_fwd(&kr, out.r, mean.r, rstd.r, inp.r, w.r, b.r, N, C, 1e-5f))) {
        /* out = norm * w + b: norm carries the rounding of mean and rstd
         * (fp32) times |x - mean| rstd, up to ~4 for normal inputs. */
        tu_check(t, "layernorm_fwd", sh, "out", &out, scaled(tol, 4.0, 1.0), NULL);
        tu_check(t, "layernorm_fwd", sh, "mean", &mean, gt_dtype_tolerance(GT_DTYPE_FP32), NULL);
        tu_check(t, "layernorm_fwd", sh, "rstd", &rstd, gt_dtype_tolerance(GT_DTYPE_FP32), NULL);
        fwd_ok = 1;
    }
    if (fwd_ok && slot_ok(t, GT_OP_LAYERNORM_BWD, sh)) {
        /* The backward takes the ref's statistics on both sides so that only
         * the backward is measured (they are fp32 outputs of the forward). */
        float *hm = tu_xmalloc(N * sizeof(float)), *hr = tu_xmalloc(N * sizeof(float));
        tu_download(t->ref, GT_DTYPE_FP32, mean.r, N, hm);
        tu_download(t->ref, GT_DTYPE_FP32, rstd.r, N, hr);
        t->be->copy_to_device(t->be, mean.d, hm, N * sizeof(float));
        t->be->copy_to_device(t->be, rstd.d, hr, N * sizeof(float));
        free(hm);
        free(hr);
        tu_arr dout = tu_mk(t, t->dt, n, 1, 0.0f, 1.0f, 16);
        tu_arr dinp = tu_mk(t, t->dt, n, 1, 0.0f, 1.0f, 17);
        tu_arr dw = tu_mk(t, t->dt, C, 1, 0.0f, 1.0f, 18);
        tu_arr db = tu_mk(t, t->dt, C, 1, 0.0f, 1.0f, 19);
        if (ran(t, GT_OP_LAYERNORM_BWD, sh,
                t->be->ops->layernorm_bwd(&kb, dinp.d, dw.d, db.d, dout.d, inp.d, w.d, mean.d,
                                          rstd.d, N, C),
                gt_ops_ref.layernorm_bwd(&kr, dinp.r, dw.r, db.r, dout.r, inp.r, w.r, mean.r,
                                         rstd.r, N, C))) {
            /* dinp: dnorm - mean(dnorm) - norm mean(dnorm norm) cancels; each
             * term is O(|dout| |w| |norm|) ~ 16 at 4 sigma: 16 u per ulp of
             * the terms times a few roundings. */
            gt_tolerance td = tol;
            td.atol += 16.0 * 8.0 * U32;
            tu_check(t, "layernorm_bwd", sh, "dinp", &dinp, td, NULL);
            /* dweight/dbias: sums over N rows in fp32, N u sum|terms| with
             * sum|terms| ~ N E|norm dout| (~0.8 N): allow N^2 u. */
            gt_tolerance tr = tol;
            tr.atol += (double)N * N * U32;
            tu_check(t, "layernorm_bwd", sh, "dweight", &dw, tr, NULL);
            tu_check(t, "layernorm_bwd", sh, "dbias", &db, tr, NULL);
        }
        tu_free(t, &dout);
        tu_free(t, &dinp);
        tu_free(t, &dw);
        tu_free(t, &db);
    }
    tu_free(t, &inp);
    tu_free(t, &w);
    tu_free(t, &b);
    tu_free(t, &out);
    tu_free(t, &mean);
    tu_free(t, &rstd);
}

/* ---- matmul ------------------------------------------------------------------ */

/* The bound of a length-K fp32 dot product: |err| <= K u sum|a||b|
 * (Higham, Accuracy and Stability, 3.1). sum|a||b| is the ref product of the
 * absolute values, computed here per output element. */
static double *abs_bound(tu_ctx *t, int which, const float *inp, const float *w, const float *dout,
                         const float *bias, int N, int C, int OC) {
    gt_kctx kr = {t->ref, GT_DTYPE_FP32};
    size_t nin = (size_t)N * C, nw = (size_t)OC * C, nout = (size_t)N * OC;
    float *ai = tu_xmalloc(nin * 4), *aw = tu_xmalloc(nw * 4), *ad = tu_xmalloc(nout * 4);
    float *ab = tu_xmalloc((size_t)OC * 4);
    for (size_t i = 0; i < nin; i++) ai[i] = fabsf(inp[i]);
    for (size_t i = 0; i < nw; i++) aw[i] = fabsf(w[i]);
    for (size_t i = 0; i < nout; i++) ad[i] = dout ? fabsf(dout[i]) : 0.0f;
    for (int i = 0; i < OC; i++) ab[i] = bias ? fabsf(bias[i]) : 0.0f;
    size_t nres = which == 0 ? nout : which == 1 ? nin : nw;
    int K = which == 0 ? C : which == 1 ? OC : N;
    float *res = calloc(nres ? nres : 1, 4);
    float *d_in = calloc(nin ? nin : 1, 4), *d_w = calloc(nw ? nw : 1, 4);
    if (which == 0)
        gt_ops_ref.matmul_fwd(&kr, res, ai, aw, bias ? ab : NULL, N, C, OC);
    else if (which == 1)
        gt_ops_ref.matmul_bwd(&kr, res, d_w, NULL, ad, ai, aw, N, C, OC);
    else
        gt_ops_ref.matmul_bwd(&kr, d_in, res, NULL, ad, ai, aw, N, C, OC);
    free(d_in);
    free(d_w);
    double *extra = tu_xmalloc(nres * sizeof(double));
    for (size_t i = 0; i < nres; i++) extra[i] = (K + 2) * U32 * res[i];
    free(ai);
    free(aw);
    free(ad);
    free(ab);
    free(res);
    return extra;
}

static void test_matmul(tu_ctx *t, int N, int C, int OC, int with_bias) {
    char sh[64];
    snprintf(sh, sizeof sh, "N%d C%d OC%d%s", N, C, OC, with_bias ? " bias" : "");
    gt_kctx kb = {t->be, t->dt}, kr = {t->ref, GT_DTYPE_FP32};
    tu_arr inp = tu_mk(t, t->dt, (size_t)N * C, 1, 0.0f, 1.0f, 20);
    tu_arr w = tu_mk(t, t->dt, (size_t)OC * C, 1, 0.0f, 0.05f, 21);
    tu_arr b = tu_mk(t, t->dt, OC, 1, 0.0f, 0.5f, 22);
    tu_arr out = tu_mk(t, t->dt, (size_t)N * OC, 0, -1.0f, 1.0f, 23);
    gt_tolerance tol = gt_dtype_tolerance(t->dt);
    if (slot_ok(t, GT_OP_MATMUL_FWD, sh) &&
        ran(t, GT_OP_MATMUL_FWD, sh,
            t->be->ops->matmul_fwd(&kb, out.d, inp.d, w.d, with_bias ? b.d : NULL, N, C, OC),
            gt_ops_ref.matmul_fwd(&kr, out.r, inp.r, w.r, with_bias ? b.r : NULL, N, C, OC))) {
        double *ex = abs_bound(t, 0, inp.h, w.h, NULL, with_bias ? b.h : NULL, N, C, OC);
        tu_check(t, "matmul_fwd", sh, "out", &out, tol, ex);
        free(ex);
    }
    if (slot_ok(t, GT_OP_MATMUL_BWD, sh)) {
        tu_arr dout = tu_mk(t, t->dt, (size_t)N * OC, 1, 0.0f, 1.0f, 24);
        tu_arr dinp = tu_mk(t, t->dt, (size_t)N * C, 1, 0.0f, 1.0f, 25);
        tu_arr dw = tu_mk(t, t->dt, (size_t)OC * C, 1, 0.0f, 1.0f, 26);
        tu_arr db = tu_mk(t, t->dt, OC, 1, 0.0f, 1.0f, 27);
        if (ran(t, GT_OP_MATMUL_BWD, sh,
                t->be->ops->matmul_bwd(&kb, dinp.d, dw.d, with_bias ? db.d : NULL, dout.d, inp.d,
                                       w.d, N, C, OC),
                gt_ops_ref.matmul_bwd(&kr, dinp.r, dw.r, with_bias ? db.r : NULL, dout.r, inp.r,
                                      w.r, N, C, OC))) {
            /* The accumulated old value is one more term of each sum. */
            double *e1 = abs_bound(t, 1, inp.h, w.h, dout.h, NULL, N, C, OC);
            double *e2 = abs_bound(t, 2, inp.h, w.h, dout.h, NULL, N, C, OC);
            for (size_t i = 0; i < dinp.n; i++) e1[i] += 2 * U32 * fabs(dinp.h[i]);
            for (size_t i = 0; i < dw.n; i++) e2[i] += 2 * U32 * fabs(dw.h[i]);
            tu_check(t, "matmul_bwd", sh, "dinp", &dinp, tol, e1);
            tu_check(t, "matmul_bwd", sh, "dweight", &dw, tol, e2);
            free(e1);
            free(e2);
            if (with_bias) {
                gt_tolerance tr = tol; /* N-term fp32 column sum of N(0,1) */
                tr.atol += (double)N * U32 * 4.0 * N;
                tu_check(t, "matmul_bwd", sh, "dbias", &db, tr, NULL);
            }
        }
        tu_free(t, &dout);
        tu_free(t, &dinp);
        tu_free(t, &dw);
        tu_free(t, &db);
    }
    tu_free(t, &inp);
    tu_free(t, &w);
    tu_free(t, &b);
    tu_free(t, &out);
}

/* ---- attention ---------------------------------------------------------------- */
static void test_attention(tu_ctx *t, int B, int T, int C, int NH) {
    char sh[64];
    snprintf(sh, sizeof sh, "B%d T%d C%d NH%d", B, T, C, NH);
    gt_kctx kb = {t->be, t->dt}, kr = {t->ref, GT_DTYPE_FP32};
    size_t nqkv = (size_t)B * T * 3 * C, nout = (size_t)B * T * C, natt = (size_t)B * NH * T * T;
    tu_arr qkv = tu_mk(t, t->dt, nqkv, 1, 0.0f, 1.0f, 30);
    tu_arr out = tu_mk(t, t->dt, nout, 0, -1.0f, 1.0f, 31);
    tu_arr att = tu_mk(t, GT_DTYPE_FP32, natt, 0, -1.0f, 1.0f, 32);
    /* Scores are length-hs dot products (hs u sum|q||k| ~ hs u hs), whose
     * error passes through exp into every probability and so into out:
     * allow 8x rtol and hs-scaled atol. */
    int hs = C / NH;
    gt_tolerance tol = gt_dtype_tolerance(t->dt);
    gt_tolerance ta = scaled(tol, 8.0, 1.0);
    ta.atol += (double)hs * U32 * 8.0;
    int fwd_ok = 0;
    if (slot_ok(t, GT_OP_ATTENTION_FWD, sh) &&
        ran(t, GT_OP_ATTENTION_FWD, sh,
            t->be->ops->attention_fwd(&kb, out.d, att.d, qkv.d, B, T, C, NH),
            gt_ops_ref.attention_fwd(&kr, out.r, att.r, qkv.r, B, T, C, NH))) {
        tu_check(t, "attention_fwd", sh, "out", &out, ta, NULL);
        fwd_ok = 1;
    }
    if (fwd_ok && slot_ok(t, GT_OP_ATTENTION_BWD, sh)) {
        /* Each backend's backward reads its own forward's saved state. */
        tu_arr dout = tu_mk(t, t->dt, nout, 1, 0.0f, 1.0f, 33);
        tu_arr dqkv = tu_mk(t, t->dt, nqkv, 1, 0.0f, 1.0f, 34);
        if (ran(t, GT_OP_ATTENTION_BWD, sh,
                t->be->ops->attention_bwd(&kb, dqkv.d, dout.d, qkv.d, att.d, B, T, C, NH),
                gt_ops_ref.attention_bwd(&kr, dqkv.r, dout.r, qkv.r, att.r, B, T, C, NH))) {
            /* dk, dv sum over up to T query rows: add T u * hs. */
            gt_tolerance tb = ta;
            tb.atol += (double)T * hs * U32 * 4.0;
            tu_check(t, "attention_bwd", sh, "dqkv", &dqkv, tb, NULL);
        }
        tu_free(t, &dout);
        tu_free(t, &dqkv);
    }
    tu_free(t, &qkv);
    tu_free(t, &out);
    tu_free(t, &att);
}

/* ---- gelu, residual ------------------------------------------------------------- */
static void test_pointwise(tu_ctx *t, size_t n) {
    char sh[64];
    snprintf(sh, sizeof sh, "n%zu", n);
    gt_kctx kb = {t->be, t->dt}, kr = {t->ref, GT_DTYPE_FP32};
    gt_tolerance tol = gt_dtype_tolerance(t->dt);
    tu_arr x = tu_mk(t, t->dt, n, 1, 0.0f, 3.0f, 40);
    tu_arr y = tu_mk(t, t->dt, n, 1, 0.0f, 1.0f, 41);
    tu_arr out = tu_mk(t, t->dt, n, 0, -1.0f, 1.0f, 42);
    /* GELU: the argument 2u of exp is rounded in fp32, an error of
     * |2u| ulp relative in exp(-2u), i.e. up to ~8 ulp for |x| < 4 where
     * it is not absorbed by atol: 4x rtol. */
    if (slot_ok(t, GT_OP_GELU_FWD, sh) &&
        ran(t, GT_OP_GELU_FWD, sh, t->be->ops->gelu_fwd(&kb, out.d, x.d, n),
            gt_ops_ref.gelu_fwd(&kr, out.r, x.r, n)))
        tu_check(t, "gelu_fwd", sh, "out", &out, scaled(tol, 4.0, 1.0), NULL);
    if (slot_ok(t, GT_OP_GELU_BWD, sh)) {
        tu_arr dinp = tu_mk(t, t->dt, n, 1, 0.0f, 1.0f, 43);
        if (ran(t, GT_OP_GELU_BWD, sh, t->be->ops->gelu_bwd(&kb, dinp.d, x.d, y.d, n),
                gt_ops_ref.gelu_bwd(&kr, dinp.r, x.r, y.r, n)))
            tu_check(t, "gelu_bwd", sh, "dinp", &dinp, scaled(tol, 4.0, 1.0), NULL);
        tu_free(t, &dinp);
    }
    if (slot_ok(t, GT_OP_RESIDUAL_FWD, sh) &&
        ran(t, GT_OP_RESIDUAL_FWD, sh, t->be->ops->residual_fwd(&kb, out.d, x.d, y.d, n),
            gt_ops_ref.residual_fwd(&kr, out.r, x.r, y.r, n)))
        tu_check(t, "residual_fwd", sh, "out", &out, tol, NULL);
    /* out aliasing a: the in-place form models use. */
    if (slot_ok(t, GT_OP_RESIDUAL_FWD, sh)) {
        tu_arr a = tu_mk(t, t->dt, n, 1, 0.0f, 1.0f, 44);
        if (ran(t, GT_OP_RESIDUAL_FWD, sh, t->be->ops->residual_fwd(&kb, a.d, a.d, y.d, n),
                gt_ops_ref.residual_fwd(&kr, a.r, a.r, y.r, n)))
            tu_check(t, "residual_fwd", sh, "inplace", &a, tol, NULL);
        tu_free(t, &a);
    }
    if (slot_ok(t, GT_OP_RESIDUAL_BWD, sh)) {
        tu_arr da = tu_mk(t, t->dt, n, 1, 0.0f, 1.0f, 45);
        tu_arr db = tu_mk(t, t->dt, n, 1, 0.0f, 1.0f, 46);
        if (ran(t, GT_OP_RESIDUAL_BWD, sh, t->be->ops->residual_bwd(&kb, da.d, db.d, y.d, n),
                gt_ops_ref.residual_bwd(&kr, da.r, db.r, y.r, n))) {
            tu_check(t, "residual_bwd", sh, "da", &da, tol, NULL);
            tu_check(t, "residual_bwd", sh, "db", &db, tol, NULL);
        }
        tu_free(t, &da);
        tu_free(t, &db);
    }
    tu_free(t, &x);
    tu_free(t, &y);
    tu_free(t, &out);
}

/* ---- classifier ------------------------------------------------------------------ */
static void test_classifier(tu_ctx *t, int N, int V, int Vp) {
    char sh[64];
    snprintf(sh, sizeof sh, "N%d V%d Vp%d", N, V, Vp);
    gt_kctx kb = {t->be, t->dt}, kr = {t->ref, GT_DTYPE_FP32};
    size_t n = (size_t)N * Vp;
    tu_ids tg = tu_mk_ids(t, N, V, 50);
    tu_arr logits = tu_mk(t, t->dt, n, 1, 0.0f, 2.0f, 51);
    tu_arr losses = tu_mk(t, GT_DTYPE_FP32, N, 0, -1.0f, 1.0f, 52);
    float dloss = 1.0f / (N > 0 ? N : 1);
    /* Losses are lse - x_t with lse ~ log V + max: the fp32 sum of V
     * exponentials (V u relative at worst, sqrt(V) u typically) moves the
     * loss by that relative amount absolutely; allow sqrt(V) u on top. */
    gt_tolerance tl = gt_dtype_tolerance(GT_DTYPE_FP32);
    tl.atol += sqrt((double)V) * U32 * 8.0;
    if (t->dt != GT_DTYPE_FP32) tl = gt_dtype_tolerance(t->dt);
    /* Probabilities carry exp's few-ulp error plus the fp32 rounding of
     * x - max (|x - max| ulp relative, up to ~16 for N(0,2) logits). */
    gt_tolerance tp = scaled(gt_dtype_tolerance(t->dt), 8.0, 1.0);
    if (slot_ok(t, GT_OP_CLASSIFIER_FWD, sh) &&
        ran(t, GT_OP_CLASSIFIER_FWD, sh,
            t->be->ops->classifier_fwd(&kb, losses.d, logits.d, tg.d, N, V, Vp),
            gt_ops_ref.classifier_fwd(&kr, losses.r, logits.r, tg.r, N, V, Vp)))
        tu_check(t, "classifier_fwd", sh, "losses", &losses, tl, NULL);
    if (slot_ok(t, GT_OP_CLASSIFIER_BWD, sh)) {
        tu_arr dl = tu_mk(t, t->dt, n, 0, -5.0f, 5.0f, 53); /* overwritten: garbage in */
        if (ran(t, GT_OP_CLASSIFIER_BWD, sh,
                t->be->ops->classifier_bwd(&kb, dl.d, losses.d, logits.d, tg.d, dloss, N, V, Vp),
                gt_ops_ref.classifier_bwd(&kr, dl.r, losses.r, logits.r, tg.r, dloss, N, V, Vp))) {
            tu_check(t, "classifier_bwd", sh, "dlogits", &dl, tp, NULL);
            tu_check(t, "classifier_bwd", sh, "losses", &losses, tl, NULL);
        }
        /* In place over the logits, losses NULL. */
        if (ran(t, GT_OP_CLASSIFIER_BWD, sh,
                t->be->ops->classifier_bwd(&kb, logits.d, NULL, logits.d, tg.d, dloss, N, V, Vp),
                gt_ops_ref.classifier_bwd(&kr, logits.r, NULL, logits.r, tg.r, dloss, N, V, Vp)))
            tu_check(t, "classifier_bwd", sh, "inplace", &logits, tp, NULL);
        tu_free(t, &dl);
    }
    tu_free_ids(t, &tg);
    tu_free(t, &logits);
    tu_free(t, &losses);
}

/* ---- adamw, sumsq ------------------------------------------------------------------ */
static void test_optim(tu_ctx *t, size_t n, int step) {
    char sh[64];
    snprintf(sh, sizeof sh, "n%zu t%d", n, step);
    gt_kctx kb = {t->be, t->dt}, kr = {t->ref, GT_DTYPE_FP32};
    tu_arr g = tu_mk(t, t->dt, n, 1, 0.0f, 1.0f, 60);
    if (slot_ok(t, GT_OP_ADAMW, sh)) {
        tu_arr p = tu_mk(t, GT_DTYPE_FP32, n, 1, 0.0f, 0.1f, 61);
        tu_arr m = tu_mk(t, GT_DTYPE_FP32, n, 1, 0.0f, 0.1f, 62);
        tu_arr v = tu_mk(t, GT_DTYPE_FP32, n, 0, 0.0f, 0.02f, 63);
        if (ran(t, GT_OP_ADAMW, sh,
                t->be->ops->adamw(&kb, p.d, g.d, m.d, v.d, n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.5f, step),
                gt_ops_ref.adamw(&kr, p.r, g.r, m.r, v.r, n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.5f, step))) {
            gt_tolerance tf = gt_dtype_tolerance(GT_DTYPE_FP32);
            /* v: g^2 and the blend round a few times; m likewise. */
            tu_check(t, "adamw", sh, "params", &p, tf, NULL);
            tu_check(t, "adamw", sh, "m", &m, scaled(tf, 2.0, 1.0), NULL);
            tu_check(t, "adamw", sh, "v", &v, scaled(tf, 2.0, 1.0), NULL);
        }
        tu_free(t, &p);
        tu_free(t, &m);
        tu_free(t, &v);
    }
    if (slot_ok(t, GT_OP_SUMSQ, sh)) {
        double got = 0.0, want = 0.0;
        if (ran(t, GT_OP_SUMSQ, sh, t->be->ops->sumsq(&kb, g.d, n, &got),
                gt_ops_ref.sumsq(&kr, g.r, n, &want))) {
            /* fp64 accumulation in any fixed order: n * 2^-53 relative. */
            /* fp64 accumulation in any fixed order: n 2^-53 relative. */
            double err = fabs(got - want);
            int ok = err <= 1e-12 + 1e-9 * fabs(want);
            t->checks++;
            printf("  %-15s %-26s %-8s max_abs %.3e max_rel %.3e (rtol 1e-09 atol 1e-12)%s\n",
                   "sumsq", sh, "out", err, want != 0.0 ? err / fabs(want) : 0.0,
                   ok ? "  ok" : "  FAIL");
            if (!ok) t->fails++;
        }
    }
    tu_free(t, &g);
}

int main(int argc, char **argv) {
    const char *bname = argc > 1 ? argv[1] : "cpu";
    const char *dname = argc > 2 ? argv[2] : "fp32";
    tu_ctx t = {0};
    if (gt_dtype_parse(dname, &t.dt) != GT_OK) {
        fprintf(stderr, "unknown dtype '%s'\n", dname);
        return 2;
    }
    gt_backend_config cfg = {.threads = 0, .device = -1};
    gt_status s = gt_backend_new(bname, &cfg, &t.be);
    if (s == GT_ERR_UNSUPPORTED) {
        printf("skipped: backend %s unavailable: %s\n", bname, gt_last_error());
        return 77;
    }
    if (s != GT_OK) tu_die("gt_backend_new", s);
    if ((s = gt_backend_new("ref", &cfg, &t.ref)) != GT_OK) tu_die("gt_backend_new(ref)", s);
    printf("conformance: %s (%s) vs ref, storage %s\n", bname, t.be->describe(t.be),
           gt_dtype_name(t.dt));

    static const int enc[][4] = {{1, 1, 1, 1}, {2, 3, 7, 5}, {3, 17, 65, 11}, {4, 64, 768, 50}};
    for (size_t i = 0; i < sizeof enc / sizeof enc[0]; i++)
        test_encoder(&t, enc[i][0], enc[i][1], enc[i][2], enc[i][3]);
    static const int ln[][2] = {{1, 1}, {3, 7}, {17, 64}, {65, 65}, {256, 768}};
    for (size_t i = 0; i < sizeof ln / sizeof ln[0]; i++) test_layernorm(&t, ln[i][0], ln[i][1]);
    static const int mm[][4] = {{1, 1, 1, 1},     {3, 7, 17, 1},    {17, 64, 65, 0},
                                {65, 33, 7, 1},   {7, 300, 129, 1}, {64, 768, 768, 1},
                                {256, 128, 320, 0}};
    for (size_t i = 0; i < sizeof mm / sizeof mm[0]; i++)
        test_matmul(&t, mm[i][0], mm[i][1], mm[i][2], mm[i][3]);
    static const int at[][4] = {{1, 1, 4, 1},    {2, 7, 12, 3},   {1, 17, 32, 4},
                                {2, 64, 128, 2}, {1, 65, 256, 4}, {3, 3, 3, 3}};
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++)
        test_attention(&t, at[i][0], at[i][1], at[i][2], at[i][3]);
    static const size_t pw[] = {1, 7, 65, 100003};
    for (size_t i = 0; i < sizeof pw / sizeof pw[0]; i++) test_pointwise(&t, pw[i]);
    static const int cl[][3] = {{1, 1, 1}, {3, 7, 16}, {17, 65, 65}, {8, 1000, 1024}, {4, 50257, 50304}};
    for (size_t i = 0; i < sizeof cl / sizeof cl[0]; i++)
        test_classifier(&t, cl[i][0], cl[i][1], cl[i][2]);
    static const size_t op[] = {0, 1, 17, 100003, 1000003};
    for (size_t i = 0; i < sizeof op / sizeof op[0]; i++) test_optim(&t, op[i], i % 2 ? 1 : 10);

    printf("conformance %s %s: %d checks, %d failed, %d skipped\n", bname, gt_dtype_name(t.dt),
           t.checks, t.fails, t.skips);
    gt_backend_free(t.ref);
    gt_backend_free(t.be);
    return t.fails ? 1 : 0;
}
