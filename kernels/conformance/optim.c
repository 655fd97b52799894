/* Conformance descriptors of the optimizer's and the mixed-precision
 * store's ops (kc.h): adamw, sumsq (the gradient norm's sum of squares),
 * cast (the compute copy of fp32 master weights, and back). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels/conformance/kc.h"

static int any_valid(const gt_kshape *s) {
    (void)s;
    return 1;
}

static void n_label(const gt_kshape *s, char *buf, size_t size) {
    snprintf(buf, size, "n%zu", s->n);
}

enum { OP_G, OP_P, OP_M, OP_V };
static const char *const op_names[] = {"grads", "params", "m", "v"};

/* ---- adamw: one step over n parameters (fp32 masters and state) ------------------------ */

static void adamw_label(const gt_kshape *s, char *buf, size_t size) {
    snprintf(buf, size, "n%zu_t%d", s->n, s->step);
}

static int adamw_valid(const gt_kshape *s) {
    return s->step >= 1;
}

static gt_status adamw_setup(gt_kcase *c) {
    size_t n = c->sh.n;
    gt_dtype F = GT_DTYPE_FP32;
    gt_status st = kc_mk(c, OP_G, c->dt, n, 1, 0.0f, 1.0f, 60);
    if (st == GT_OK) st = kc_mk(c, OP_P, F, n, 1, 0.0f, 0.1f, 61);
    if (st == GT_OK) st = kc_mk(c, OP_M, F, n, 1, 0.0f, 0.1f, 62);
    if (st == GT_OK) st = kc_mk(c, OP_V, F, n, 0, 0.0f, 0.02f, 63);
    return st;
}

static gt_status adamw_call(gt_kcase *c, int side, int inplace) {
    (void)inplace;
    gt_kctx k = kc_ctx(c, side);
    const gt_kshape *s = &c->sh;
    return kc_table(c, side)->adamw(&k, kc_out(c, side, OP_P), kc_in(c, side, OP_G),
                                    kc_out(c, side, OP_M), kc_out(c, side, OP_V), s->n, 1e-3f, 0.9f,
                                    0.95f, 1e-8f, 0.1f, 0.5f, s->step);
}

static gt_status adamw_check(gt_kcase *c, gt_kcheck *ck, int *n) {
    gt_tolerance tf = kc_tf();
    gt_status st = kc_check(c, ck, n, "params", OP_P, tf, NULL);
    /* v: g^2 and the blend round a few times; m likewise. */
    if (st == GT_OK) st = kc_check(c, ck, n, "m", OP_M, kc_scaled(tf, 2.0, 1.0), NULL);
    if (st == GT_OK) st = kc_check(c, ck, n, "v", OP_V, kc_scaled(tf, 2.0, 1.0), NULL);
    return st;
}

static double adamw_flops(const gt_kshape *s) {
    return 15.0 * (double)s->n;
}
/* grads; params, m, v read and written */
static double adamw_bytes(const gt_kshape *s, double e) {
    return e * (double)s->n + 24.0 * (double)s->n;
}

/* distinct bytes: grads; params, m, v (updated in place) */
static double adamw_footprint(const gt_kshape *s, double e) {
    return e * (double)s->n + 12.0 * (double)s->n;
}

static const kc_op adamw = {
    .op = GT_OP_ADAMW,
    KC_ARRAYS(op_names),
    .dims = "n step",
    .label = adamw_label,
    .valid = adamw_valid,
    .grid = KC_GRID(optim),
    .setup = adamw_setup,
    .call = adamw_call,
    .check = adamw_check,
    .flops = adamw_flops,
    .bytes = adamw_bytes,
    .footprint = adamw_footprint,
};

/* ---- sumsq: sum of squares of n gradients, in fp64 ----------------------------------- */

static gt_status sumsq_setup(gt_kcase *c) {
    return kc_mk(c, OP_G, c->dt, c->sh.n, 1, 0.0f, 1.0f, 60);
}

static gt_status sumsq_call(gt_kcase *c, int side, int inplace) {
    (void)inplace;
    gt_kctx k = kc_ctx(c, side);
    return kc_table(c, side)->sumsq(&k, kc_in(c, side, OP_G), c->sh.n, &c->scalar[side]);
}

/* fp64 accumulation in any fixed order: n 2^-53 relative. */
static gt_status sumsq_check(gt_kcase *c, gt_kcheck *ck, int *n) {
    gt_kcheck *k = &ck[(*n)++];
    double got = c->scalar[0], want = c->scalar[1], err = fabs(got - want);
    double lim = 1e-12 + 1e-9 * fabs(want);
    memset(k, 0, sizeof *k);
    k->what = "out";
    k->tol.rtol = 1e-9;
    k->tol.atol = 1e-12;
    k->n = 1;
    k->max_abs = err;
    k->max_rel = want != 0.0 ? err / fabs(want) : 0.0;
    k->worst = isnan(err) ? INFINITY : err / lim;
    if (!(err <= lim)) {
        k->bad = 1;
        k->got_first = got;
        k->want_first = want;
    }
    return GT_OK;
}

static double sumsq_flops(const gt_kshape *s) {
    return 2.0 * (double)s->n;
}
static double sumsq_bytes(const gt_kshape *s, double e) {
    return e * (double)s->n;
}

static const kc_op sumsq = {
    .op = GT_OP_SUMSQ,
    KC_ARRAYS(op_names),
    .dims = "n",
    .label = n_label,
    .valid = any_valid,
    .grid = KC_GRID(optim),
    .setup = sumsq_setup,
    .call = sumsq_call,
    .check = sumsq_check,
    .flops = sumsq_flops,
    .bytes = sumsq_bytes,
};

/* ---- cast: fp32 -> dt (rounding to nearest even), and dt -> fp32 ------------------------- */

enum { CA_SRC, CA_DST, CA_TMP, CA_LOW, CA_WIDE };
static const char *const ca_names[] = {"src", "out", "tmp", "low", "widen"};

static gt_status cast_setup(gt_kcase *c) {
    size_t n = c->sh.n;
    gt_dtype dt = c->dt, F = GT_DTYPE_FP32;
    /* N(0, 100): values that round in bf16 and fp16, over exponents from
     * tiny (near 0) to ~2^9; kernels.cast.* covers the special values */
    gt_status st = kc_mk(c, CA_SRC, F, n, 1, 0.0f, 100.0f, 120);
    if (st == GT_OK)
        st = kc_mk(c, CA_DST, dt, n, 0, -1.0f, 1.0f, 121); /* overwritten: garbage in */
    if (st == GT_OK) st = kc_mk(c, CA_TMP, F, n, 0, -1.0f, 1.0f, 122);
    if (st == GT_OK) st = kc_mk(c, CA_LOW, dt, n, 1, 0.0f, 100.0f, 123);
    if (st == GT_OK) st = kc_mk(c, CA_WIDE, F, n, 0, -1.0f, 1.0f, 124);
    return st;
}

static gt_status cast_call(gt_kcase *c, int side, int inplace) {
    gt_kctx k = kc_ctx(c, side);
    const gt_ops *o = kc_table(c, side);
    gt_dtype F = GT_DTYPE_FP32;
    size_t n = c->sh.n;
    if (inplace) /* the widening direction: dt -> fp32 (ref: already fp32, a copy) */
        return o->cast(&k, kc_out(c, side, CA_WIDE), F, kc_in(c, side, CA_LOW), side ? F : c->dt,
                       n);
    /* fp32 -> dt, the compute copy of master weights. The ref keeps fp32
     * arrays: it rounds into a scratch array (an fp32-sized buffer holds n
     * values of any dt here) and widens that back, exactly. */
    if (!side) return o->cast(&k, kc_out(c, 0, CA_DST), c->dt, kc_in(c, 0, CA_SRC), F, n);
    gt_status st = o->cast(&k, kc_out(c, 1, CA_TMP), c->dt, kc_in(c, 1, CA_SRC), F, n);
    return st != GT_OK ? st : o->cast(&k, kc_out(c, 1, CA_DST), F, kc_in(c, 1, CA_TMP), c->dt, n);
}

/* exact: rounding to nearest even has one answer, widening is exact */
static gt_status cast_check(gt_kcase *c, gt_kcheck *ck, int *n) {
    gt_tolerance t0 = {0};
    gt_status st = kc_check(c, ck, n, "out", CA_DST, t0, NULL);
    if (st == GT_OK) st = kc_run_both(c, 1);
    if (st == GT_OK) st = kc_check(c, ck, n, "widen", CA_WIDE, t0, NULL);
    return st;
}

/* one conversion per value */
static double cast_flops(const gt_kshape *s) {
    return (double)s->n;
}
/* fp32 read, dt written */
static double cast_bytes(const gt_kshape *s, double e) {
    return (4.0 + e) * (double)s->n;
}

static const kc_op cast = {
    .op = GT_OP_CAST,
    KC_ARRAYS(ca_names),
    .dims = "n",
    .label = n_label,
    .valid = any_valid,
    .grid = KC_GRID(pointwise),
    .setup = cast_setup,
    .call = cast_call,
    .check = cast_check,
    .flops = cast_flops,
    .bytes = cast_bytes,
};

const kc_op *const kc_optim_ops[] = {&adamw, &sumsq, &cast, NULL};
