/* Conformance descriptors of the vision ops (kc.h): conv2d, batchnorm,
 * relu, avgpool, each forward beside its backward. Images are (N, C, H, W). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/conformance/kc.h"

/* ---- conv2d ----------------------------------------------------------------------- */

enum { CV_INP, CV_W, CV_B, CV_OUT, CV_DOUT, CV_DINP, CV_DW, CV_DB };
static const char *const cv_names[] = {"inp",  "weight", "bias",    "out",
                                       "dout", "dinp",   "dweight", "dbias"};

static gt_conv2d_shape conv_of(const gt_kshape *s) {
    gt_conv2d_shape cs = {.N = s->N,
                          .C = s->C,
                          .H = s->H,
                          .W = s->W,
                          .OC = s->OC,
                          .KH = s->KH,
                          .KW = s->KW,
                          .stride = s->stride,
                          .pad = s->pad};
    return cs;
}

static void cv_label(const gt_kshape *s, char *buf, size_t size) {
    char kk[32];
    if (s->KH == s->KW)
        snprintf(kk, sizeof kk, "%d", s->KH);
    else
        snprintf(kk, sizeof kk, "%dx%d", s->KH, s->KW);
    snprintf(buf, size, "N%d_C%d_H%d_W%d_OC%d_K%s_s%d_p%d%s", s->N, s->C, s->H, s->W, s->OC, kk,
             s->stride, s->pad, s->bias ? "" : "_nobias");
}

static int cv_valid(const gt_kshape *s) {
    gt_conv2d_shape cs = conv_of(s);
    return s->N > 0 && s->C > 0 && s->OC > 0 && gt_conv2d_out_h(&cs) > 0 &&
           gt_conv2d_out_w(&cs) > 0;
}

/* The same bound for conv2d, whose outputs are dot products too: the ref
 * convolution of the absolute values gives sum|a||b| per element, times
 * (K + 2) u with K the terms per element (C KH KW for out, plus the bias;
 * at most OC KH KW for dinp; N OH OW for dweight). which 0: out in *e0;
 * 1: dinp in *e0 and dweight in *e1, from one backward. */
static gt_status conv_bounds(gt_kcase *c, int which, double **e0, double **e1) {
    const gt_kshape *s = &c->sh;
    gt_conv2d_shape cs = conv_of(s);
    int OH = gt_conv2d_out_h(&cs), OW = gt_conv2d_out_w(&cs);
    size_t nin = (size_t)s->N * s->C * s->H * s->W, nw = (size_t)s->OC * s->C * s->KH * s->KW;
    size_t nout = (size_t)s->N * s->OC * OH * OW;
    gt_kctx kr = {c->ref, GT_DTYPE_FP32};
    gt_status st = GT_OK;
    *e0 = NULL;
    if (e1) *e1 = NULL;
    float *ai = malloc(nin * 4), *aw = malloc(nw * 4), *ab = malloc((size_t)s->OC * 4);
    float *ad = malloc(nout * 4), *r0 = calloc(which ? nin : nout, 4), *r1 = calloc(nw, 4);
    double *x0 = malloc((which ? nin : nout) * sizeof(double)), *x1 = malloc(nw * sizeof(double));
    if (!ai || !aw || !ab || !ad || !r0 || !r1 || !x0 || !x1) {
        st = GT_ERR(GT_ERR_OOM, "no host memory for the conv2d bound");
        goto done;
    }
    for (size_t i = 0; i < nin; i++)
        ai[i] = fabsf(c->a[CV_INP].h[i]);
    for (size_t i = 0; i < nw; i++)
        aw[i] = fabsf(c->a[CV_W].h[i]);
    for (int i = 0; i < s->OC; i++)
        ab[i] = fabsf(c->a[CV_B].h[i]);
    if (which == 0) {
        st = gt_ops_ref.conv2d_fwd(&kr, r0, ai, aw, s->bias ? ab : NULL, &cs);
        double K = (double)s->C * s->KH * s->KW + (s->bias ? 1 : 0);
        for (size_t i = 0; st == GT_OK && i < nout; i++)
            x0[i] = (K + 2) * KC_U32 * r0[i];
    } else {
        for (size_t i = 0; i < nout; i++)
            ad[i] = fabsf(c->a[CV_DOUT].h[i]);
        st = gt_ops_ref.conv2d_bwd(&kr, r0, r1, NULL, ad, ai, aw, &cs);
        double Ki = (double)s->OC * s->KH * s->KW, Kw = (double)s->N * OH * OW;
        for (size_t i = 0; st == GT_OK && i < nin; i++)
            x0[i] = (Ki + 2) * KC_U32 * r0[i];
        for (size_t i = 0; st == GT_OK && i < nw; i++)
            x1[i] = (Kw + 2) * KC_U32 * r1[i];
    }
done:
    if (st == GT_OK) {
        *e0 = x0;
        x0 = NULL;
        if (e1) {
            *e1 = x1;
            x1 = NULL;
        }
    }
    free(ai);
    free(aw);
    free(ab);
    free(ad);
    free(r0);
    free(r1);
    free(x0);
    free(x1);
    return st;
}

static gt_status cv_setup(gt_kcase *c) {
    const gt_kshape *s = &c->sh;
    gt_dtype dt = c->dt;
    gt_conv2d_shape cs = conv_of(s);
    size_t nin = (size_t)s->N * s->C * s->H * s->W;
    size_t nw = (size_t)s->OC * s->C * s->KH * s->KW;
    size_t nout = (size_t)s->N * s->OC * gt_conv2d_out_h(&cs) * gt_conv2d_out_w(&cs);
    /* weights ~ 1/sqrt(fan-in) (He-like): outputs O(1) at any C, K */
    gt_status st = kc_mk(c, CV_INP, dt, nin, 1, 0.0f, 1.0f, 70);
    if (st == GT_OK)
        st = kc_mk(c, CV_W, dt, nw, 1, 0.0f, (float)(1.0 / sqrt((double)s->C * s->KH * s->KW)), 71);
    if (st == GT_OK) st = kc_mk(c, CV_B, dt, s->OC, 1, 0.0f, 0.5f, 72);
    if (st == GT_OK) st = kc_mk(c, CV_OUT, dt, nout, 0, -1.0f, 1.0f, 73);
    if (c->op == GT_OP_CONV2D_BWD) {
        if (st == GT_OK) st = kc_mk(c, CV_DOUT, dt, nout, 1, 0.0f, 1.0f, 74);
        if (st == GT_OK) st = kc_mk(c, CV_DINP, dt, nin, 1, 0.0f, 1.0f, 75);
        if (st == GT_OK) st = kc_mk(c, CV_DW, dt, nw, 1, 0.0f, 1.0f, 76);
        if (st == GT_OK) st = kc_mk(c, CV_DB, dt, s->OC, 1, 0.0f, 1.0f, 77);
    }
    return st;
}

static gt_status cv_fwd_call(gt_kcase *c, int side, int inplace) {
    (void)inplace;
    gt_kctx k = kc_ctx(c, side);
    gt_conv2d_shape cs = conv_of(&c->sh);
    return kc_table(c, side)->conv2d_fwd(&k, kc_out(c, side, CV_OUT), kc_in(c, side, CV_INP),
                                         kc_in(c, side, CV_W),
                                         c->sh.bias ? kc_in(c, side, CV_B) : NULL, &cs);
}

static gt_status cv_fwd_check(gt_kcase *c, gt_kcheck *ck, int *n) {
    double *ex = NULL;
    gt_status st = conv_bounds(c, 0, &ex, NULL);
    if (st == GT_OK) st = kc_check(c, ck, n, "out", CV_OUT, kc_tol(c), ex);
    free(ex);
    return st;
}

/* 2 N OC OH OW C KH KW per direct convolution (+ the bias); the backward
 * is two of them (dinp, dweight) plus the dbias sum */
static double cv_conv_flops(const gt_kshape *s, double *nout) {
    gt_conv2d_shape cs = conv_of(s);
    *nout = (double)s->N * s->OC * gt_conv2d_out_h(&cs) * gt_conv2d_out_w(&cs);
    return 2.0 * *nout * s->C * s->KH * s->KW;
}

static double cv_fwd_flops(const gt_kshape *s) {
    double nout, conv = cv_conv_flops(s, &nout);
    return conv + (s->bias ? nout : 0.0);
}

static double cv_fwd_bytes(const gt_kshape *s, double e) {
    gt_conv2d_shape cs = conv_of(s);
    double N = s->N, C = s->C, OC = s->OC;
    double nin = N * C * s->H * s->W, nw = OC * C * s->KH * s->KW;
    double nout = N * OC * gt_conv2d_out_h(&cs) * gt_conv2d_out_w(&cs);
    return e * (nin + nw + nout + (s->bias ? OC : 0.0));
}

static const kc_op conv2d_fwd = {
    .op = GT_OP_CONV2D_FWD,
    KC_ARRAYS(cv_names),
    .dims = "N C H W OC KH KW stride pad bias",
    .label = cv_label,
    .valid = cv_valid,
    .grid = KC_GRID(conv2d),
    .setup = cv_setup,
    .call = cv_fwd_call,
    .check = cv_fwd_check,
    .flops = cv_fwd_flops,
    .bytes = cv_fwd_bytes,
    .compute_bound = 1,
};

static gt_status cv_bwd_call(gt_kcase *c, int side, int inplace) {
    (void)inplace;
    gt_kctx k = kc_ctx(c, side);
    gt_conv2d_shape cs = conv_of(&c->sh);
    return kc_table(c, side)->conv2d_bwd(&k, kc_out(c, side, CV_DINP), kc_out(c, side, CV_DW),
                                         c->sh.bias ? kc_out(c, side, CV_DB) : NULL,
                                         kc_in(c, side, CV_DOUT), kc_in(c, side, CV_INP),
                                         kc_in(c, side, CV_W), &cs);
}

static gt_status cv_bwd_check(gt_kcase *c, gt_kcheck *ck, int *n) {
    const gt_kshape *s = &c->sh;
    gt_tolerance tol = kc_tol(c);
    double *e1 = NULL, *e2 = NULL;
    gt_status st = conv_bounds(c, 1, &e1, &e2);
    if (st == GT_OK) {
        /* The accumulated old value is one more term of each sum. */
        for (size_t i = 0; i < c->a[CV_DINP].n; i++)
            e1[i] += 2 * KC_U32 * fabs(c->a[CV_DINP].h[i]);
        for (size_t i = 0; i < c->a[CV_DW].n; i++)
            e2[i] += 2 * KC_U32 * fabs(c->a[CV_DW].h[i]);
        st = kc_check(c, ck, n, "dinp", CV_DINP, tol, e1);
    }
    if (st == GT_OK) st = kc_check(c, ck, n, "dweight", CV_DW, tol, e2);
    if (st == GT_OK && s->bias) {
        /* N OH OW-term fp32 sums of N(0,1): ~u per partial sum of size up
         * to that count, 4 cnt u at most in practice. */
        gt_conv2d_shape cs = conv_of(s);
        double cnt = (double)s->N * gt_conv2d_out_h(&cs) * gt_conv2d_out_w(&cs);
        gt_tolerance tr = tol;
        tr.atol += 4.0 * cnt * KC_U32;
        st = kc_check(c, ck, n, "dbias", CV_DB, tr, NULL);
    }
    free(e1);
    free(e2);
    return st;
}

static double cv_bwd_flops(const gt_kshape *s) {
    double nout, conv = cv_conv_flops(s, &nout);
    return 2.0 * conv + (s->bias ? nout : 0.0);
}

/* dout, inp, weight read; dinp, dweight (and dbias) read and written */
static double cv_bwd_bytes(const gt_kshape *s, double e) {
    gt_conv2d_shape cs = conv_of(s);
    double N = s->N, C = s->C, OC = s->OC;
    double nin = N * C * s->H * s->W, nw = OC * C * s->KH * s->KW;
    double nout = N * OC * gt_conv2d_out_h(&cs) * gt_conv2d_out_w(&cs);
    return e * (nout + nin + nw + 2.0 * nin + 2.0 * nw + (s->bias ? 2.0 * OC : 0.0));
}

static const kc_op conv2d_bwd = {
    .op = GT_OP_CONV2D_BWD,
    KC_ARRAYS(cv_names),
    .dims = "N C H W OC KH KW stride pad bias",
    .label = cv_label,
    .valid = cv_valid,
    .grid = KC_GRID(conv2d),
    .setup = cv_setup,
    .call = cv_bwd_call,
    .check = cv_bwd_check,
    .flops = cv_bwd_flops,
    .bytes = cv_bwd_bytes,
    .compute_bound = 1,
};

/* ---- batchnorm over channels (statistics over N and HW) --------------------------------- */

enum { BN_INP, BN_W, BN_B, BN_OUT, BN_MEAN, BN_RSTD, BN_RM, BN_RV, BN_DOUT, BN_DINP, BN_DW, BN_DB };
static const char *const bn_names[] = {"inp",  "weight", "bias",         "out",
                                       "mean", "rstd",   "running_mean", "running_var",
                                       "dout", "dinp",   "dweight",      "dbias"};

static int img_valid(const gt_kshape *s) {
    return s->N > 0 && s->C > 0 && s->H > 0 && s->W > 0;
}

static void bn_fwd_label(const gt_kshape *s, char *buf, size_t size) {
    snprintf(buf, size, "N%d_C%d_H%d_W%d%s%s", s->N, s->C, s->H, s->W,
             s->train ? "_train" : "_eval", s->drift ? "_drift" : "");
}

/* the backward is training-mode only: no suffix */
static void bn_bwd_label(const gt_kshape *s, char *buf, size_t size) {
    snprintf(buf, size, "N%d_C%d_H%d_W%d%s", s->N, s->C, s->H, s->W, s->drift ? "_drift" : "");
}

/* the grid's train-0 rows are batchnorm_fwd's eval mode: not the backward's */
static int bn_bwd_applies(const gt_kshape *s) {
    return s->train;
}

/* batchnorm_bwd's dinp = s (w dy - mean(w dy) - norm mean(w dy norm)) + old:
 * three terms of size |w dy s|, |mean(w dy) s|, |norm mean(w dy norm) s|
 * that cancel (exactly, at a count of 1), each rounded a few times in fp32
 * (8 u of each), the two means sums of cnt terms (4 sqrt(cnt) u more), plus
 * the old value's rounding (2 u). rstd reaches 1/sqrt(eps) where a channel
 * is constant, so the bound scales with it rather than a fixed atol. */
static double *bn_bwd_bound(gt_kcase *c) {
    const gt_kshape *s = &c->sh;
    int N = s->N, C = s->C, HW = s->H * s->W;
    double cnt = (double)N * HW;
    const float *x = c->a[BN_INP].h, *w = c->a[BN_W].h, *dy = c->a[BN_DOUT].h;
    const float *mean = c->a[BN_MEAN].h, *rstd = c->a[BN_RSTD].h, *old = c->a[BN_DINP].h;
    double *extra = malloc((size_t)N * C * HW * sizeof(double));
    if (!extra) return NULL;
    for (int ch = 0; ch < C; ch++) {
        double m1 = 0.0, m2 = 0.0, sc = rstd[ch];
        for (int n = 0; n < N; n++)
            for (int p = 0; p < HW; p++) {
                size_t i = ((size_t)n * C + ch) * HW + p;
                m1 += (double)w[ch] * dy[i];
                m2 += (double)w[ch] * dy[i] * ((x[i] - (double)mean[ch]) * sc);
            }
        m1 = fabs(m1 / cnt * sc);
        m2 = fabs(m2 / cnt * sc);
        for (int n = 0; n < N; n++)
            for (int p = 0; p < HW; p++) {
                size_t i = ((size_t)n * C + ch) * HW + p;
                double norm = fabs((x[i] - (double)mean[ch]) * sc);
                double t1 = fabs((double)w[ch] * dy[i] * sc), t23 = m1 + norm * m2;
                extra[i] = 8.0 * KC_U32 * (t1 + t23) + 4.0 * sqrt(cnt) * KC_U32 * t23 +
                           2.0 * KC_U32 * fabs(old[i]);
            }
    }
    return extra;
}

/* batchnorm_bwd's saved state: the ref's training-mode statistics of the
 * case's (rounded) input, on both sides, so that only the backward is
 * measured. Running statistics and output go to scratch. */
static gt_status bn_ref_stats(gt_kcase *c) {
    const gt_kshape *s = &c->sh;
    size_t n = (size_t)s->N * s->C * s->H * s->W, C = (size_t)s->C;
    gt_backend *r = NULL;
    gt_status st = kc_ref_get(c, &r);
    if (st != GT_OK) return st;
    float *out = malloc(n * sizeof(float)), *rs = calloc(4 * C, sizeof(float));
    if (!out || !rs) {
        st = GT_ERR(GT_ERR_OOM, "no host memory for the batchnorm statistics (%zu floats)", n);
    } else {
        /* ref memory is host memory: run it on the host copies */
        gt_kctx kr = {r, GT_DTYPE_FP32};
        float *m = rs, *rstd = rs + C, *rm = rs + 2 * C, *rv = rs + 3 * C;
        st = gt_ops_ref.batchnorm_fwd(&kr, out, m, rstd, rm, rv, c->a[BN_INP].h, c->a[BN_W].h,
                                      c->a[BN_B].h, s->N, s->C, s->H * s->W, 1e-5f, 0.1f, 1);
        if (st == GT_OK) {
            memcpy(c->a[BN_MEAN].h, m, C * sizeof(float));
            memcpy(c->a[BN_RSTD].h, rstd, C * sizeof(float));
            st = kc_refresh(c, BN_MEAN);
        }
        if (st == GT_OK) st = kc_refresh(c, BN_RSTD);
    }
    free(out);
    free(rs);
    kc_ref_put(c, r);
    return st;
}

static gt_status bn_setup(gt_kcase *c) {
    const gt_kshape *s = &c->sh;
    gt_dtype dt = c->dt, F = GT_DTYPE_FP32;
    size_t n = (size_t)s->N * s->C * s->H * s->W, HW = (size_t)s->H * s->W;
    gt_status st = kc_mk(c, BN_INP, dt, n, 1, 0.3f, 1.5f, 80);
    if (st == GT_OK && s->drift) {
        /* + 8 + 8 k / (N HW) at the channel's k-th value (sample-major, the
         * order the statistics reduce in): chunks of a channel have means
         * up to 8 apart, the batch's variance is mostly between them.
         * Rounded to dt again. */
        float *h = c->a[BN_INP].h;
        double cnt = (double)s->N * HW;
        for (size_t j = 0; j < n; j++) {
            size_t k = j / ((size_t)s->C * HW) * HW + j % HW;
            h[j] += (float)(8.0 + 8.0 * (double)k / cnt);
        }
        st = kc_round_to(h, n, dt);
        if (st == GT_OK) st = kc_refresh(c, BN_INP);
    }
    if (st == GT_OK) st = kc_mk(c, BN_W, dt, s->C, 1, 1.0f, 0.2f, 81);
    if (st == GT_OK) st = kc_mk(c, BN_B, dt, s->C, 1, 0.0f, 0.2f, 82);
    if (st == GT_OK) st = kc_mk(c, BN_MEAN, F, s->C, 0, -1.0f, 1.0f, 84);
    if (st == GT_OK) st = kc_mk(c, BN_RSTD, F, s->C, 0, -1.0f, 1.0f, 85);
    if (c->op == GT_OP_BATCHNORM_FWD) {
        if (st == GT_OK) st = kc_mk(c, BN_OUT, dt, n, 0, -1.0f, 1.0f, 83);
        if (st == GT_OK) st = kc_mk(c, BN_RM, F, s->C, 1, 0.3f, 0.5f, 86);
        if (st == GT_OK)
            st = kc_mk(c, BN_RV, F, s->C, 0, 0.5f, 3.0f, 87); /* a variance: positive */
    } else {
        if (st == GT_OK) st = kc_mk(c, BN_DOUT, dt, n, 1, 0.0f, 1.0f, 88);
        if (st == GT_OK) st = kc_mk(c, BN_DINP, dt, n, 1, 0.0f, 1.0f, 89);
        if (st == GT_OK) st = kc_mk(c, BN_DW, dt, s->C, 1, 0.0f, 1.0f, 90);
        if (st == GT_OK) st = kc_mk(c, BN_DB, dt, s->C, 1, 0.0f, 1.0f, 91);
        if (st == GT_OK) st = bn_ref_stats(c);
    }
    return st;
}

/* eval mode with mean, rstd NULL, as ops.h allows */
static gt_status bn_fwd_call(gt_kcase *c, int side, int inplace) {
    (void)inplace;
    gt_kctx k = kc_ctx(c, side);
    const gt_kshape *s = &c->sh;
    return kc_table(c, side)->batchnorm_fwd(
        &k, kc_out(c, side, BN_OUT), s->train ? kc_out(c, side, BN_MEAN) : NULL,
        s->train ? kc_out(c, side, BN_RSTD) : NULL, kc_out(c, side, BN_RM), kc_out(c, side, BN_RV),
        kc_in(c, side, BN_INP), kc_in(c, side, BN_W), kc_in(c, side, BN_B), s->N, s->C, s->H * s->W,
        1e-5f, 0.1f, s->train);
}

static gt_status bn_fwd_check(gt_kcase *c, gt_kcheck *ck, int *n) {
    /* out as layernorm's (norm carries mean's and rstd's fp32 rounding
     * times |x - mean| rstd, up to ~4). The statistics are sums of
     * cnt = N HW terms: a fixed-order fp32 sum of them errs by ~sqrt(cnt)
     * u relative in practice (fp64 on ref and cpu): allow 4 sqrt(cnt) u,
     * which the running statistics inherit. */
    const gt_kshape *s = &c->sh;
    double cnt = (double)s->N * s->H * s->W;
    gt_tolerance ts = kc_tf();
    ts.rtol += 4.0 * sqrt(cnt) * KC_U32;
    ts.atol += 4.0 * sqrt(cnt) * KC_U32;
    gt_status st = kc_check(c, ck, n, "out", BN_OUT, kc_scaled(kc_tol(c), 4.0, 1.0), NULL);
    if (st == GT_OK && s->train) st = kc_check(c, ck, n, "mean", BN_MEAN, ts, NULL);
    if (st == GT_OK && s->train) st = kc_check(c, ck, n, "rstd", BN_RSTD, ts, NULL);
    /* eval mode must leave them as they were: compared all the same */
    if (st == GT_OK) st = kc_check(c, ck, n, "running_mean", BN_RM, ts, NULL);
    if (st == GT_OK) st = kc_check(c, ck, n, "running_var", BN_RV, ts, NULL);
    return st;
}

/* training: mean, var (2), norm (2), scale+shift (2), +1 */
static double bn_fwd_flops(const gt_kshape *s) {
    return (s->train ? 8.0 : 4.0) * s->N * (double)s->C * s->H * s->W;
}

/* training: mean, rstd written, running ones read and written; eval: the
 * running ones read */
static double bn_fwd_bytes(const gt_kshape *s, double e) {
    double C = s->C, nhw = s->N * C * s->H * s->W;
    return e * (2.0 * nhw + 2.0 * C) + (s->train ? 24.0 * C : 8.0 * C);
}

static const kc_op batchnorm_fwd = {
    .op = GT_OP_BATCHNORM_FWD,
    KC_ARRAYS(bn_names),
    .dims = "N C H W train",
    .label = bn_fwd_label,
    .valid = img_valid,
    .grid = KC_GRID(image),
    .setup = bn_setup,
    .call = bn_fwd_call,
    .check = bn_fwd_check,
    .flops = bn_fwd_flops,
    .bytes = bn_fwd_bytes,
};

static gt_status bn_bwd_call(gt_kcase *c, int side, int inplace) {
    (void)inplace;
    gt_kctx k = kc_ctx(c, side);
    const gt_kshape *s = &c->sh;
    return kc_table(c, side)->batchnorm_bwd(
        &k, kc_out(c, side, BN_DINP), kc_out(c, side, BN_DW), kc_out(c, side, BN_DB),
        kc_in(c, side, BN_DOUT), kc_in(c, side, BN_INP), kc_in(c, side, BN_W),
        kc_in(c, side, BN_MEAN), kc_in(c, side, BN_RSTD), s->N, s->C, s->H * s->W);
}

static gt_status bn_bwd_check(gt_kcase *c, gt_kcheck *ck, int *n) {
    /* dinp: per-element bound from its three terms (bn_bwd_bound).
     * dweight/dbias: cnt-term sums of O(1) terms, 4 cnt u as conv2d's
     * dbias. */
    const gt_kshape *s = &c->sh;
    double cnt = (double)s->N * s->H * s->W;
    double *ex = bn_bwd_bound(c);
    gt_status st = ex ? kc_check(c, ck, n, "dinp", BN_DINP, kc_tol(c), ex)
                      : GT_ERR(GT_ERR_OOM, "no host memory for the batchnorm bound");
    free(ex);
    gt_tolerance tr = kc_tol(c);
    tr.atol += 4.0 * cnt * KC_U32;
    if (st == GT_OK) st = kc_check(c, ck, n, "dweight", BN_DW, tr, NULL);
    if (st == GT_OK) st = kc_check(c, ck, n, "dbias", BN_DB, tr, NULL);
    return st;
}

/* 2 sums, norm twice, dinp */
static double bn_bwd_flops(const gt_kshape *s) {
    return 12.0 * s->N * (double)s->C * s->H * s->W;
}

/* dout, inp, dinp rw; w, dw/db rw; mean, rstd */
static double bn_bwd_bytes(const gt_kshape *s, double e) {
    double C = s->C;
    return e * (4.0 * s->N * C * s->H * s->W + 5.0 * C) + 8.0 * C;
}

/* distinct bytes: dout, inp, dinp (accumulated in place); w, dw, db; mean, rstd */
static double bn_bwd_footprint(const gt_kshape *s, double e) {
    double C = s->C;
    return e * (3.0 * s->N * C * s->H * s->W + 3.0 * C) + 8.0 * C;
}

static const kc_op batchnorm_bwd = {
    .op = GT_OP_BATCHNORM_BWD,
    KC_ARRAYS(bn_names),
    .dims = "N C H W",
    .label = bn_bwd_label,
    .valid = img_valid,
    .applies = bn_bwd_applies,
    .grid = KC_GRID(image),
    .setup = bn_setup,
    .call = bn_bwd_call,
    .check = bn_bwd_check,
    .flops = bn_bwd_flops,
    .bytes = bn_bwd_bytes,
    .footprint = bn_bwd_footprint,
};

/* ---- relu: elementwise over n ---------------------------------------------------------- */

enum { RL_X, RL_OUT, RL_A, RL_Y, RL_DOUT, RL_DINP };
static const char *const rl_names[] = {"x", "out", "inplace", "out", "dout", "dinp"};

static void rl_label(const gt_kshape *s, char *buf, size_t size) {
    snprintf(buf, size, "n%zu", s->n);
}

static int rl_valid(const gt_kshape *s) {
    (void)s;
    return 1;
}

static gt_status rl_fwd_setup(gt_kcase *c) {
    size_t n = c->sh.n;
    gt_status st = kc_mk(c, RL_X, c->dt, n, 1, 0.0f, 1.0f, 100);
    if (st == GT_OK) st = kc_mk(c, RL_OUT, c->dt, n, 0, -1.0f, 1.0f, 101);
    if (st == GT_OK) st = kc_mk(c, RL_A, c->dt, n, 1, 0.0f, 1.0f, 102);
    return st;
}

static gt_status rl_fwd_call(gt_kcase *c, int side, int inplace) {
    gt_kctx k = kc_ctx(c, side);
    const gt_ops *o = kc_table(c, side);
    if (inplace) /* out aliasing inp: the form models use */
        return o->relu_fwd(&k, kc_out(c, side, RL_A), kc_in(c, side, RL_A), c->sh.n);
    return o->relu_fwd(&k, kc_out(c, side, RL_OUT), kc_in(c, side, RL_X), c->sh.n);
}

/* exact: a select; then the in-place form */
static gt_status rl_fwd_check(gt_kcase *c, gt_kcheck *ck, int *n) {
    gt_status st = kc_check(c, ck, n, "out", RL_OUT, kc_tol(c), NULL);
    if (st == GT_OK) st = kc_run_both(c, 1);
    if (st == GT_OK) st = kc_check(c, ck, n, "inplace", RL_A, kc_tol(c), NULL);
    return st;
}

static double rl_fwd_flops(const gt_kshape *s) {
    return (double)s->n;
}
static double rl_fwd_bytes(const gt_kshape *s, double e) {
    return e * 2.0 * (double)s->n;
}

static const kc_op relu_fwd = {
    .op = GT_OP_RELU_FWD,
    KC_ARRAYS(rl_names),
    .dims = "n",
    .label = rl_label,
    .valid = rl_valid,
    .grid = KC_GRID(pointwise),
    .setup = rl_fwd_setup,
    .call = rl_fwd_call,
    .check = rl_fwd_check,
    .flops = rl_fwd_flops,
    .bytes = rl_fwd_bytes,
};

static gt_status rl_bwd_setup(gt_kcase *c) {
    size_t n = c->sh.n;
    /* out is a forward's output: about half exact zeros */
    gt_status st = kc_mk(c, RL_Y, c->dt, n, 1, 0.0f, 1.0f, 103);
    if (st == GT_OK) {
        for (size_t i = 0; i < n; i++)
            if (c->a[RL_Y].h[i] < 0.0f) c->a[RL_Y].h[i] = 0.0f;
        st = kc_refresh(c, RL_Y);
    }
    if (st == GT_OK) st = kc_mk(c, RL_DOUT, c->dt, n, 1, 0.0f, 1.0f, 104);
    if (st == GT_OK) st = kc_mk(c, RL_DINP, c->dt, n, 1, 0.0f, 1.0f, 105);
    return st;
}

static gt_status rl_bwd_call(gt_kcase *c, int side, int inplace) {
    (void)inplace;
    gt_kctx k = kc_ctx(c, side);
    return kc_table(c, side)->relu_bwd(&k, kc_out(c, side, RL_DINP), kc_in(c, side, RL_Y),
                                       kc_in(c, side, RL_DOUT), c->sh.n);
}

static gt_status rl_bwd_check(gt_kcase *c, gt_kcheck *ck, int *n) {
    return kc_check(c, ck, n, "dinp", RL_DINP, kc_tol(c), NULL);
}

static double rl_bwd_flops(const gt_kshape *s) {
    return (double)s->n;
}
/* out, dout read, dinp rw */
static double rl_bwd_bytes(const gt_kshape *s, double e) {
    return e * 4.0 * (double)s->n;
}

/* distinct bytes: out, dout, dinp (accumulated in place) */
static double rl_bwd_footprint(const gt_kshape *s, double e) {
    return e * 3.0 * (double)s->n;
}

static const kc_op relu_bwd = {
    .op = GT_OP_RELU_BWD,
    KC_ARRAYS(rl_names),
    .dims = "n",
    .label = rl_label,
    .valid = rl_valid,
    .grid = KC_GRID(pointwise),
    .setup = rl_bwd_setup,
    .call = rl_bwd_call,
    .check = rl_bwd_check,
    .flops = rl_bwd_flops,
    .bytes = rl_bwd_bytes,
    .footprint = rl_bwd_footprint,
};

/* ---- avgpool: the mean of each (n, c) map ---------------------------------------------- */

enum { AP_INP, AP_OUT, AP_DOUT, AP_DINP };
static const char *const ap_names[] = {"inp", "out", "dout", "dinp"};

static void ap_label(const gt_kshape *s, char *buf, size_t size) {
    snprintf(buf, size, "N%d_C%d_H%d_W%d", s->N, s->C, s->H, s->W);
}

/* the grid's eval-mode (train 0) and drifting-mean rows are batchnorm's */
static int ap_applies(const gt_kshape *s) {
    return s->train && !s->drift;
}

static gt_status ap_fwd_setup(gt_kcase *c) {
    const gt_kshape *s = &c->sh;
    size_t nr = (size_t)s->N * s->C, n = nr * s->H * s->W;
    gt_status st = kc_mk(c, AP_INP, c->dt, n, 1, 0.3f, 1.0f, 110);
    if (st == GT_OK) st = kc_mk(c, AP_OUT, c->dt, nr, 0, -1.0f, 1.0f, 111);
    return st;
}

static gt_status ap_fwd_call(gt_kcase *c, int side, int inplace) {
    (void)inplace;
    gt_kctx k = kc_ctx(c, side);
    const gt_kshape *s = &c->sh;
    return kc_table(c, side)->avgpool_fwd(&k, kc_out(c, side, AP_OUT), kc_in(c, side, AP_INP), s->N,
                                          s->C, s->H * s->W);
}

static gt_status ap_fwd_check(gt_kcase *c, gt_kcheck *ck, int *n) {
    /* mean of HW terms: an fp32 sum errs by <= (HW - 1) u sum|x|, i.e.
     * ~HW u mean|x| after the division (mean|x| ~ 1 here) */
    gt_tolerance ta = kc_tol(c);
    ta.atol += (double)c->sh.H * c->sh.W * KC_U32;
    return kc_check(c, ck, n, "out", AP_OUT, ta, NULL);
}

/* adds, then a divide per row */
static double ap_fwd_flops(const gt_kshape *s) {
    double N = s->N, C = s->C;
    return N * C * s->H * s->W + N * C;
}

static double ap_fwd_bytes(const gt_kshape *s, double e) {
    double N = s->N, C = s->C;
    return e * (N * C * s->H * s->W + N * C);
}

static const kc_op avgpool_fwd = {
    .op = GT_OP_AVGPOOL_FWD,
    KC_ARRAYS(ap_names),
    .dims = "N C H W",
    .label = ap_label,
    .valid = img_valid,
    .applies = ap_applies,
    .grid = KC_GRID(image),
    .setup = ap_fwd_setup,
    .call = ap_fwd_call,
    .check = ap_fwd_check,
    .flops = ap_fwd_flops,
    .bytes = ap_fwd_bytes,
};

static gt_status ap_bwd_setup(gt_kcase *c) {
    const gt_kshape *s = &c->sh;
    size_t nr = (size_t)s->N * s->C, n = nr * s->H * s->W;
    gt_status st = kc_mk(c, AP_DOUT, c->dt, nr, 1, 0.0f, 1.0f, 112);
    if (st == GT_OK) st = kc_mk(c, AP_DINP, c->dt, n, 1, 0.0f, 1.0f, 113);
    return st;
}

static gt_status ap_bwd_call(gt_kcase *c, int side, int inplace) {
    (void)inplace;
    gt_kctx k = kc_ctx(c, side);
    const gt_kshape *s = &c->sh;
    return kc_table(c, side)->avgpool_bwd(&k, kc_out(c, side, AP_DINP), kc_in(c, side, AP_DOUT),
                                          s->N, s->C, s->H * s->W);
}

/* dout / HW rounded, then added: two roundings where the ref has one */
static gt_status ap_bwd_check(gt_kcase *c, gt_kcheck *ck, int *n) {
    return kc_check(c, ck, n, "dinp", AP_DINP, kc_scaled(kc_tol(c), 2.0, 1.0), NULL);
}

static double ap_bwd_flops(const gt_kshape *s) {
    return (double)s->N * s->C * s->H * s->W;
}

static double ap_bwd_bytes(const gt_kshape *s, double e) {
    double N = s->N, C = s->C;
    return e * (N * C + 2.0 * N * C * s->H * s->W);
}

/* distinct bytes: dout, dinp (accumulated in place) */
static double ap_bwd_footprint(const gt_kshape *s, double e) {
    double N = s->N, C = s->C;
    return e * (N * C + N * C * s->H * s->W);
}

static const kc_op avgpool_bwd = {
    .op = GT_OP_AVGPOOL_BWD,
    KC_ARRAYS(ap_names),
    .dims = "N C H W",
    .label = ap_label,
    .valid = img_valid,
    .applies = ap_applies,
    .grid = KC_GRID(image),
    .setup = ap_bwd_setup,
    .call = ap_bwd_call,
    .check = ap_bwd_check,
    .flops = ap_bwd_flops,
    .bytes = ap_bwd_bytes,
    .footprint = ap_bwd_footprint,
};

const kc_op *const kc_vision_ops[] = {&conv2d_fwd,    &conv2d_bwd,  &batchnorm_fwd,
                                      &batchnorm_bwd, &relu_fwd,    &relu_bwd,
                                      &avgpool_fwd,   &avgpool_bwd, NULL};
