/* Conformance descriptors of the GEMM ops (kc.h): matmul_fwd, matmul_bwd
 * and the fused linear + GELU pair matmul_gelu_fwd, matmul_dgelu_bwd.
 *
 * Their outputs are dot products, checked element by element against the
 * Higham bound of a length-K fp32 dot product (abs_bound), which the GELU
 * pair carries through GELU and its derivative (gelu_bound). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/conformance/kc.h"

/* Array slots. matmul_gelu_fwd: out MM_OUT, pre MM_PRE; matmul_dgelu_bwd:
 * dpre MM_DINP, the pre-activation input MM_PRE. */
enum { MM_INP, MM_W, MM_B, MM_OUT, MM_DOUT, MM_DINP, MM_DW, MM_DB, MM_PRE };
static const char *const mm_names[] = {"inp",  "weight",  "bias",  "out", "dout",
                                       "dinp", "dweight", "dbias", "pre"};
static const char *const dgelu_names[] = {"inp",  "weight",  "bias",  "out", "dout",
                                          "dpre", "dweight", "dbias", "pre"};

/* with a bias is what models use: the plain label; "_nobias" marks the other */
static void mm_label(const gt_kshape *s, char *buf, size_t size) {
    snprintf(buf, size, "N%d_C%d_OC%d%s", s->N, s->C, s->OC, s->bias ? "" : "_nobias");
}

static int mm_valid(const gt_kshape *s) {
    return s->N > 0 && s->C > 0 && s->OC > 0;
}

/* ---- bounds ---- */

/* The bound of a length-K fp32 dot product: |err| <= K u sum|a||b|
 * (Higham, Accuracy and Stability, 3.1). sum|a||b| is the ref product of
 * the absolute values, computed per output element. which: 0 out, 1 dinp,
 * 2 dweight. */
static double *abs_bound(gt_kcase *c, int which) {
    const gt_kshape *s = &c->sh;
    int N = s->N, C = s->C, OC = s->OC;
    gt_kctx kr = {c->ref, GT_DTYPE_FP32};
    const float *inp = c->a[MM_INP].h, *w = c->a[MM_W].h;
    const float *dout = which ? c->a[MM_DOUT].h : NULL, *bias = s->bias ? c->a[MM_B].h : NULL;
    size_t nin = (size_t)N * C, nw = (size_t)OC * C, nout = (size_t)N * OC;
    size_t nres = which == 0 ? nout : which == 1 ? nin : nw;
    int K = which == 0 ? C : which == 1 ? OC : N;
    float *ai = malloc(nin * 4), *aw = malloc(nw * 4), *ad = malloc(nout * 4);
    float *ab = malloc((size_t)OC * 4), *res = calloc(nres, 4);
    float *d_in = calloc(nin, 4), *d_w = calloc(nw, 4);
    double *extra = malloc(nres * sizeof(double));
    if (!ai || !aw || !ad || !ab || !res || !d_in || !d_w || !extra) {
        free(extra);
        extra = NULL;
        goto done;
    }
    for (size_t i = 0; i < nin; i++)
        ai[i] = fabsf(inp[i]);
    for (size_t i = 0; i < nw; i++)
        aw[i] = fabsf(w[i]);
    for (size_t i = 0; i < nout; i++)
        ad[i] = dout ? fabsf(dout[i]) : 0.0f;
    for (int i = 0; i < OC; i++)
        ab[i] = bias ? fabsf(bias[i]) : 0.0f;
    if (which == 0)
        gt_ops_ref.matmul_fwd(&kr, res, ai, aw, bias ? ab : NULL, N, C, OC);
    else if (which == 1)
        gt_ops_ref.matmul_bwd(&kr, res, d_w, NULL, ad, ai, aw, N, C, OC);
    else
        gt_ops_ref.matmul_bwd(&kr, d_in, res, NULL, ad, ai, aw, N, C, OC);
    for (size_t i = 0; i < nres; i++)
        extra[i] = (K + 2) * KC_U32 * res[i];
done:
    free(ai);
    free(aw);
    free(ad);
    free(ab);
    free(res);
    free(d_in);
    free(d_w);
    return extra;
}

#define KC_GELU_K 0.7978845608028654 /* sqrt(2/pi) */
static double gelu_grad(double x) {
    double th = tanh(KC_GELU_K * (x + 0.044715 * x * x * x));
    return 0.5 * (1.0 + th) +
           0.5 * x * (1.0 - th * th) * KC_GELU_K * (1.0 + 3.0 * 0.044715 * x * x);
}

/* matmul_bwd's and matmul_dgelu_bwd's weight gradients: dweight against
 * e2 (abs_bound of the GEMM, plus the accumulated old value as one more
 * term), dbias (when the case has one) as an N-term fp32 column sum of
 * N(0,1) values. */
static gt_status check_dweight_dbias(gt_kcase *c, gt_kcheck *ck, int *n, gt_tolerance tol,
                                     double *e2, int bias, int N) {
    for (size_t i = 0; i < c->a[MM_DW].n; i++)
        e2[i] += 2 * KC_U32 * fabs(c->a[MM_DW].h[i]);
    GT_TRY(kc_check(c, ck, n, "dweight", MM_DW, tol, e2));
    if (!bias) return GT_OK;
    gt_tolerance tr = tol;
    tr.atol += (double)N * KC_U32 * 4.0 * N;
    return kc_check(c, ck, n, "dbias", MM_DB, tr, NULL);
}

/* Per-element allowances of the fused GELU matmuls, on top of the dtype's
 * tolerance (4x rtol, as gelu_fwd/bwd: the rounded argument of exp/tanh).
 * u: the storage's unit roundoff; ut: the relative error allowed in tanh:
 * 16 u32 in fp32 (tanhf/expf meet it with room), u for 16-bit storage,
 * where a backend may evaluate tanh only as precisely as the storage (a
 * GEMM epilogue such as cuBLASLt's GELU may use a hardware approximation:
 * ~2^-11 in fp32, coarser in bf16/fp16), which the output's rounding would
 * hide except in GELU's negative tail, where out and gelu' are small but
 * 0.5 |p| times tanh's error is not. This also means a 16-bit check cannot
 * tell the erf GELU from the tanh one (they differ by < 5e-4): fp32 can.
 * which 0, matmul_gelu_fwd's out, p the pre-activation (the ref's):
 *   |gelu'(p)| (the GEMM's bound on p + u |p|: gelu may be taken of the
 *   rounded p) + ut |p| (0.5 |p| times tanh's error, twice).
 * which 1, matmul_dgelu_bwd's dpre, g = dout @ weight (the ref's), p the
 *   pre input: |gelu'(p)| (the GEMM's bound on g + u |g|: g may be rounded
 *   to the storage before the product) + ut |g| (0.5 + |p| k (1 + 3 c p^2))
 *   (d gelu' / d tanh times tanh's error). */
static gt_status gelu_bound(gt_kcase *c, int which, double **out) {
    const gt_kshape *s = &c->sh;
    size_t n = which == 0 ? (size_t)s->N * s->OC : (size_t)s->N * s->C;
    double u = kc_unit_roundoff(c->dt), ut = c->dt == GT_DTYPE_FP32 ? 16.0 * KC_U32 : u;
    gt_status st = GT_OK;
    *out = NULL;
    double *ex = abs_bound(c, which);
    float *p = malloc(n * sizeof(float)), *g = NULL, *dw = NULL;
    if (!ex || !p) {
        st = GT_ERR(GT_ERR_OOM, "no host memory for the GELU matmul bound");
        goto done;
    }
    if (which == 0) {
        st = kc_download(c->ref, GT_DTYPE_FP32, c->a[MM_PRE].r, n, p);
        for (size_t i = 0; st == GT_OK && i < n; i++)
            ex[i] = fabs(gelu_grad(p[i])) * (ex[i] + u * fabs(p[i])) + ut * fabs(p[i]);
    } else {
        /* g on the host copies (ref memory is host memory) */
        gt_kctx kr = {c->ref, GT_DTYPE_FP32};
        g = malloc(n * sizeof(float));
        dw = calloc((size_t)s->OC * s->C, sizeof(float));
        if (!g || !dw) {
            st = GT_ERR(GT_ERR_OOM, "no host memory for the GELU matmul bound");
            goto done;
        }
        st = gt_ops_ref.matmul_bwd(&kr, g, dw, NULL, c->a[MM_DOUT].h, c->a[MM_INP].h, c->a[MM_W].h,
                                   s->N, s->C, s->OC);
        for (size_t i = 0; st == GT_OK && i < n; i++) {
            double x = c->a[MM_PRE].h[i], ag = fabs(g[i]);
            double dtanh = 0.5 + fabs(x) * KC_GELU_K * (1.0 + 3.0 * 0.044715 * x * x);
            ex[i] = fabs(gelu_grad(x)) * (ex[i] + u * ag) + ut * ag * dtanh;
        }
    }
done:
    if (st == GT_OK) {
        *out = ex;
        ex = NULL;
    }
    free(ex);
    free(p);
    free(g);
    free(dw);
    return st;
}

/* ---- matmul_fwd, matmul_bwd ---- */

static gt_status mm_setup(gt_kcase *c) {
    const gt_kshape *s = &c->sh;
    gt_dtype dt = c->dt;
    gt_status st = kc_mk(c, MM_INP, dt, (size_t)s->N * s->C, 1, 0.0f, 1.0f, 20);
    if (st == GT_OK) st = kc_mk(c, MM_W, dt, (size_t)s->OC * s->C, 1, 0.0f, 0.05f, 21);
    if (st == GT_OK) st = kc_mk(c, MM_B, dt, s->OC, 1, 0.0f, 0.5f, 22);
    if (st == GT_OK) st = kc_mk(c, MM_OUT, dt, (size_t)s->N * s->OC, 0, -1.0f, 1.0f, 23);
    if (c->op == GT_OP_MATMUL_BWD) {
        if (st == GT_OK) st = kc_mk(c, MM_DOUT, dt, (size_t)s->N * s->OC, 1, 0.0f, 1.0f, 24);
        /* overwritten: garbage in, NaN included, which must not leak out */
        if (st == GT_OK) st = kc_mk(c, MM_DINP, dt, (size_t)s->N * s->C, 0, -5.0f, 5.0f, 25);
        if (st == GT_OK) st = kc_poison(c, MM_DINP);
        if (st == GT_OK) st = kc_mk(c, MM_DW, dt, (size_t)s->OC * s->C, 1, 0.0f, 1.0f, 26);
        if (st == GT_OK) st = kc_mk(c, MM_DB, dt, s->OC, 1, 0.0f, 1.0f, 27);
    }
    return st;
}

static gt_status mm_fwd_call(gt_kcase *c, int side, int inplace) {
    (void)inplace;
    gt_kctx k = kc_ctx(c, side);
    const gt_kshape *s = &c->sh;
    return kc_table(c, side)->matmul_fwd(&k, kc_out(c, side, MM_OUT), kc_in(c, side, MM_INP),
                                         kc_in(c, side, MM_W),
                                         s->bias ? kc_in(c, side, MM_B) : NULL, s->N, s->C, s->OC);
}

static gt_status mm_fwd_check(gt_kcase *c, gt_kcheck *ck, int *n) {
    double *ex = abs_bound(c, 0);
    gt_status st = ex ? kc_check(c, ck, n, "out", MM_OUT, kc_tol(c), ex)
                      : GT_ERR(GT_ERR_OOM, "no host memory for the matmul bound");
    free(ex);
    return st;
}

static double mm_fwd_flops(const gt_kshape *s) {
    double N = s->N, C = s->C, OC = s->OC;
    return 2.0 * N * C * OC + (s->bias ? N * OC : 0.0);
}

static double mm_fwd_bytes(const gt_kshape *s, double e) {
    double N = s->N, C = s->C, OC = s->OC;
    return e * (N * C + OC * C + N * OC + (s->bias ? OC : 0.0));
}

static gt_status mm_library_best(gt_kcase *c, double *best_s, char *what, size_t what_len) {
    const gt_kshape *s = &c->sh;
    return c->be->gemm_library_best(c->be, c->dt, kc_out(c, 0, MM_OUT), kc_in(c, 0, MM_INP),
                                    kc_in(c, 0, MM_W), s->bias ? kc_in(c, 0, MM_B) : NULL, s->N,
                                    s->C, s->OC, best_s, what, what_len);
}

static const kc_op matmul_fwd = {
    .op = GT_OP_MATMUL_FWD,
    KC_ARRAYS(mm_names),
    .dims = "N C OC bias",
    .label = mm_label,
    .valid = mm_valid,
    .grid = KC_GRID(matmul),
    .setup = mm_setup,
    .call = mm_fwd_call,
    .check = mm_fwd_check,
    .flops = mm_fwd_flops,
    .bytes = mm_fwd_bytes,
    .compute_bound = 1,
    .library_best = mm_library_best,
};

static gt_status mm_bwd_call(gt_kcase *c, int side, int inplace) {
    (void)inplace;
    gt_kctx k = kc_ctx(c, side);
    const gt_kshape *s = &c->sh;
    return kc_table(c, side)->matmul_bwd(&k, kc_out(c, side, MM_DINP), kc_out(c, side, MM_DW),
                                         s->bias ? kc_out(c, side, MM_DB) : NULL,
                                         kc_in(c, side, MM_DOUT), kc_in(c, side, MM_INP),
                                         kc_in(c, side, MM_W), s->N, s->C, s->OC);
}

static gt_status mm_bwd_check(gt_kcase *c, gt_kcheck *ck, int *n) {
    /* dweight's accumulated old value is one more term of each sum. */
    const gt_kshape *s = &c->sh;
    gt_tolerance tol = kc_tol(c);
    gt_status st;
    double *e1 = abs_bound(c, 1), *e2 = abs_bound(c, 2);
    if (!e1 || !e2) {
        st = GT_ERR(GT_ERR_OOM, "no host memory for the matmul bound");
    } else {
        /* (dinp is overwritten: its old value is not a term) */
        st = kc_check(c, ck, n, "dinp", MM_DINP, tol, e1);
        if (st == GT_OK) st = check_dweight_dbias(c, ck, n, tol, e2, s->bias, s->N);
    }
    free(e1);
    free(e2);
    return st;
}

static double mm_bwd_flops(const gt_kshape *s) {
    double N = s->N, C = s->C, OC = s->OC;
    return 4.0 * N * C * OC + (s->bias ? N * OC : 0.0);
}

/* dinp written (overwritten), dweight/dbias read and written */
static double mm_bwd_bytes(const gt_kshape *s, double e) {
    double N = s->N, C = s->C, OC = s->OC;
    return e * (N * OC + N * C + OC * C + N * C + 2.0 * OC * C + (s->bias ? 2.0 * OC : 0.0));
}

static const kc_op matmul_bwd = {
    .op = GT_OP_MATMUL_BWD,
    KC_ARRAYS(mm_names),
    .dims = "N C OC bias",
    .label = mm_label,
    .valid = mm_valid,
    .grid = KC_GRID(matmul),
    .setup = mm_setup,
    .call = mm_bwd_call,
    .check = mm_bwd_check,
    .flops = mm_bwd_flops,
    .bytes = mm_bwd_bytes,
    .compute_bound = 1,
};

/* ---- matmul_gelu_fwd, matmul_dgelu_bwd ---- */

/* Pre-activations ~ N(0, 2): GELU's negative tail (where 1 + tanh cancels)
 * and its curved middle, not only its linear part. The forward's pre comes
 * from weights scaled by 1/sqrt(C); the backward's is an input. Outputs
 * start as garbage with NaN. */
static gt_status mg_setup(gt_kcase *c) {
    const gt_kshape *s = &c->sh;
    gt_dtype dt = c->dt;
    size_t nin = (size_t)s->N * s->C, nw = (size_t)s->OC * s->C, nout = (size_t)s->N * s->OC;
    gt_status st = kc_mk(c, MM_INP, dt, nin, 1, 0.0f, 1.0f, 130);
    if (st == GT_OK) st = kc_mk(c, MM_B, dt, s->OC, 1, 0.0f, 0.5f, 132);
    if (c->op == GT_OP_MATMUL_GELU_FWD) {
        if (st == GT_OK)
            st = kc_mk(c, MM_W, dt, nw, 1, 0.0f, (float)(2.0 / sqrt((double)s->C)), 131);
        if (st == GT_OK) st = kc_mk(c, MM_OUT, dt, nout, 0, -5.0f, 5.0f, 133);
        if (st == GT_OK) st = kc_poison(c, MM_OUT);
        if (st == GT_OK) st = kc_mk(c, MM_PRE, dt, nout, 0, -5.0f, 5.0f, 134);
        if (st == GT_OK) st = kc_poison(c, MM_PRE);
    } else {
        if (st == GT_OK)
            st = kc_mk(c, MM_W, dt, nw, 1, 0.0f, (float)(1.0 / sqrt((double)s->OC)), 131);
        if (st == GT_OK) st = kc_mk(c, MM_DOUT, dt, nout, 1, 0.0f, 1.0f, 135);
        if (st == GT_OK) st = kc_mk(c, MM_PRE, dt, nin, 1, 0.0f, 2.0f, 136);
        if (st == GT_OK) st = kc_mk(c, MM_DINP, dt, nin, 0, -5.0f, 5.0f, 137);
        if (st == GT_OK) st = kc_poison(c, MM_DINP);
        if (st == GT_OK) st = kc_mk(c, MM_DW, dt, nw, 1, 0.0f, 1.0f, 138);
        if (st == GT_OK) st = kc_mk(c, MM_DB, dt, s->OC, 1, 0.0f, 1.0f, 139);
    }
    return st;
}

static gt_status mg_fwd_call(gt_kcase *c, int side, int inplace) {
    (void)inplace;
    gt_kctx k = kc_ctx(c, side);
    const gt_kshape *s = &c->sh;
    return kc_table(c, side)->matmul_gelu_fwd(
        &k, kc_out(c, side, MM_OUT), kc_out(c, side, MM_PRE), kc_in(c, side, MM_INP),
        kc_in(c, side, MM_W), s->bias ? kc_in(c, side, MM_B) : NULL, s->N, s->C, s->OC);
}

/* pre as matmul_fwd's out; out: gelu_bound */
static gt_status mg_fwd_check(gt_kcase *c, gt_kcheck *ck, int *n) {
    gt_tolerance tol = kc_tol(c);
    double *e0 = abs_bound(c, 0), *e1 = NULL;
    gt_status st = e0 ? kc_check(c, ck, n, "pre", MM_PRE, tol, e0)
                      : GT_ERR(GT_ERR_OOM, "no host memory for the matmul bound");
    if (st == GT_OK) st = gelu_bound(c, 0, &e1);
    if (st == GT_OK) st = kc_check(c, ck, n, "out", MM_OUT, kc_scaled(tol, 4.0, 1.0), e1);
    free(e0);
    free(e1);
    return st;
}

/* + GELU (8 per element, as gelu_fwd) and its product */
static double mg_fwd_flops(const gt_kshape *s) {
    double N = s->N, C = s->C, OC = s->OC;
    return 2.0 * N * C * OC + (s->bias ? N * OC : 0.0) + 8.0 * N * OC;
}

/* inp, weight, bias read; pre and out written */
static double mg_fwd_bytes(const gt_kshape *s, double e) {
    double N = s->N, C = s->C, OC = s->OC;
    return e * (N * C + OC * C + 2.0 * N * OC + (s->bias ? OC : 0.0));
}

static const kc_op matmul_gelu_fwd = {
    .op = GT_OP_MATMUL_GELU_FWD,
    KC_ARRAYS(mm_names),
    .dims = "N C OC bias",
    .label = mm_label,
    .valid = mm_valid,
    .grid = KC_GRID(matmul_gelu),
    .setup = mg_setup,
    .call = mg_fwd_call,
    .check = mg_fwd_check,
    .flops = mg_fwd_flops,
    .bytes = mg_fwd_bytes,
    .compute_bound = 1,
};

static gt_status mg_bwd_call(gt_kcase *c, int side, int inplace) {
    (void)inplace;
    gt_kctx k = kc_ctx(c, side);
    const gt_kshape *s = &c->sh;
    return kc_table(c, side)->matmul_dgelu_bwd(
        &k, kc_out(c, side, MM_DINP), kc_out(c, side, MM_DW),
        s->bias ? kc_out(c, side, MM_DB) : NULL, kc_in(c, side, MM_DOUT), kc_in(c, side, MM_INP),
        kc_in(c, side, MM_W), kc_in(c, side, MM_PRE), s->N, s->C, s->OC);
}

/* dpre (overwritten): gelu_bound; dweight, dbias as matmul_bwd's */
static gt_status mg_bwd_check(gt_kcase *c, gt_kcheck *ck, int *n) {
    const gt_kshape *s = &c->sh;
    gt_tolerance tol = kc_tol(c);
    double *e1 = NULL, *e2 = abs_bound(c, 2);
    gt_status st =
        e2 ? gelu_bound(c, 1, &e1) : GT_ERR(GT_ERR_OOM, "no host memory for the matmul bound");
    if (st == GT_OK) st = kc_check(c, ck, n, "dpre", MM_DINP, kc_scaled(tol, 4.0, 1.0), e1);
    if (st == GT_OK) st = check_dweight_dbias(c, ck, n, tol, e2, s->bias, s->N);
    free(e1);
    free(e2);
    return st;
}

/* + GELU' (16, as gelu_bwd) and its product */
static double mg_bwd_flops(const gt_kshape *s) {
    double N = s->N, C = s->C, OC = s->OC;
    return 4.0 * N * C * OC + (s->bias ? N * OC : 0.0) + 17.0 * N * C;
}

/* dout, inp, weight, pre read; dpre written; dweight rw */
static double mg_bwd_bytes(const gt_kshape *s, double e) {
    double N = s->N, C = s->C, OC = s->OC;
    return e *
           (N * OC + N * C + OC * C + N * C + N * C + 2.0 * OC * C + (s->bias ? 2.0 * OC : 0.0));
}

static const kc_op matmul_dgelu_bwd = {
    .op = GT_OP_MATMUL_DGELU_BWD,
    KC_ARRAYS(dgelu_names),
    .dims = "N C OC bias",
    .label = mm_label,
    .valid = mm_valid,
    .grid = KC_GRID(matmul_gelu),
    .setup = mg_setup,
    .call = mg_bwd_call,
    .check = mg_bwd_check,
    .flops = mg_bwd_flops,
    .bytes = mg_bwd_bytes,
    .compute_bound = 1,
};

const kc_op *const kc_matmul_ops[] = {&matmul_fwd, &matmul_bwd, &matmul_gelu_fwd, &matmul_dgelu_bwd,
                                      NULL};
