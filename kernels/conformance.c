/* Conformance and timing cases of one op at one shape (kernels/conformance.h).
 *
 * Every op is three switch arms below: which arrays it needs (and from
 * which seeded stream: the same streams the conformance test always used),
 * how it is called (one call site for both backends: `side` picks the
 * backend under test or the ref), and how its outputs are compared, with
 * each per-op tolerance allowance and its reason next to it. */
#include "kernels/conformance.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/rng.h"
#include "kernels/registry.h"

#define KC_SEED 20240611u
/* Unit roundoff of fp32 arithmetic: every backend computes in fp32 at least. */
#define U32 (1.0 / 16777216.0)
#define KC_MAX_ARR 12

/* An array of n values: h (host fp32, already rounded to dt), d (on the
 * backend under test, in dt, sh.offset elements past its leading guard
 * band), r (on ref, fp32). ids: int32 token ids (dt GT_DTYPE_INT32).
 * base, lead, cnt: each side's allocation ([0] d, [1] r), the elements
 * before the array in it (guard band and offset) and the array's length
 * there (n, except the attention state on the backend under test). */
typedef struct kc_arr {
    size_t n;
    gt_dtype dt;
    int ids;
    float *h;
    int32_t *hid;
    void *d, *r;
    void *base[2];
    size_t lead[2], cnt[2];
} kc_arr;

struct gt_kcase {
    gt_backend *be, *ref;
    gt_dtype dt;
    gt_op op;
    gt_kshape sh;
    int narr;
    kc_arr a[KC_MAX_ARR];
    double sumsq[2];      /* sumsq results: [0] backend, [1] ref */
    char guard_what[128]; /* the failed guard check's name (gt_kcheck.what) */
};

/* ---- arrays ------------------------------------------------------------------ */

/* Guard bands: every array of a case, on both backends, sits inside its own
 * allocation between KC_GUARD bytes of sentinels before it (after them, the
 * shape's offset elements, sentinels too) and KC_GUARD bytes after its last
 * element. gt_kcase_check compares them bitwise after the op ran (and its
 * in-place variant): an op that writes one element past an array's end, or
 * before its start, fails there, naming the array. The caching allocator's
 * rounding (GT_ALLOC_ALIGN) would otherwise hide such a write in slack that
 * nobody reads. KC_GUARD is a multiple of that alignment, so the arrays
 * keep the alignment the offset gives them. */
#define KC_GUARD 256
#define KC_GUARD_STREAM 1000u /* + 2 * array + side: never a data stream */

/* Under AddressSanitizer the bands are poisoned too: engine/alloc.c poisons
 * only what no block asked for, and these lie inside the blocks, so without
 * it a kernel reading past its array would no longer stop at its source
 * line. Sanitized builds have no real GPU (CMakeLists.txt turns the cuda
 * backend off unless it is the CPU emulator): every backend's memory is
 * host memory there. */
#if defined(__SANITIZE_ADDRESS__)
#define KC_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KC_ASAN 1
#endif
#endif
#ifdef KC_ASAN
#include <sanitizer/asan_interface.h>
#define KC_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define KC_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define KC_POISON(p, n) ((void)(p), (void)(n))
#define KC_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* The dtype of array x on `side`. */
static gt_dtype side_dt(const kc_arr *x, int side) {
    return x->ids ? GT_DTYPE_INT32 : side ? GT_DTYPE_FP32 : x->dt;
}

/* Poisons (1) or unpoisons (0) array i's bands on `side`. */
static void guard_poison(kc_arr *x, int side, int on) {
    size_t es = gt_dtype_size(side_dt(x, side));
    char *b = x->base[side], *past = b + (x->lead[side] + x->cnt[side]) * es;
    if (on) {
        KC_POISON(b, x->lead[side] * es);
        KC_POISON(past, (size_t)KC_GUARD);
    } else {
        KC_UNPOISON(b, x->lead[side] * es);
        KC_UNPOISON(past, (size_t)KC_GUARD);
    }
}

/* count sentinels of dt for array i on `side`, in a fresh host buffer:
 * finite, negative and different per array, side and position, from
 * [-3e4, -1e3) (int32: [-2^20, -1], never a token id). Something an op
 * writes by accident (a zero, a result, a copy of another array's guard),
 * ReLU, and a value an op computes from a guard it read, all change them;
 * fp16 holds them. */
static gt_status guard_values(gt_dtype dt, size_t count, int i, int side, void **out) {
    uint64_t stream = KC_GUARD_STREAM + 2u * (unsigned)i + (unsigned)side;
    *out = malloc(count * gt_dtype_size(dt) + 1);
    float *f = malloc(count * sizeof(float) + 1);
    if (!*out || !f) {
        free(*out);
        free(f);
        *out = NULL;
        return GT_ERR(GT_ERR_OOM, "no host memory for %zu guard values", count);
    }
    if (dt == GT_DTYPE_INT32) {
        for (size_t j = 0; j < count; j++)
            ((int32_t *)*out)[j] = -1 - (int32_t)(gt_rng_u32(KC_SEED, stream, j) >> 12);
    } else {
        gt_rng_fill_uniform(f, count, -3e4f, -1e3f, KC_SEED, stream, 0);
        gt_convert(*out, dt, f, GT_DTYPE_FP32, count);
    }
    free(f);
    return GT_OK;
}

/* Allocates array i on `side` (0: the backend under test, at the case's
 * offset; 1: ref) for n elements between guard bands, and writes the
 * sentinels; x->d or x->r is the array. */
static gt_status kc_alloc(gt_kcase *c, int i, int side, size_t n) {
    kc_arr *x = &c->a[i];
    gt_backend *be = side ? c->ref : c->be;
    gt_dtype dt = side_dt(x, side);
    size_t es = gt_dtype_size(dt), tail = KC_GUARD / es;
    size_t lead = KC_GUARD / es + (side ? 0 : (size_t)c->sh.offset);
    void **p = side ? &x->r : &x->d;
    *p = NULL;
    GT_TRY(gt_backend_alloc(be, (lead + n + tail) * es, &x->base[side]));
    *p = (char *)x->base[side] + lead * es;
    x->lead[side] = lead;
    x->cnt[side] = n;
    void *g = NULL;
    GT_TRY(guard_values(dt, lead + tail, i, side, &g));
    gt_status s = be->copy_to_device(be, x->base[side], g, lead * es);
    if (s == GT_OK)
        s = be->copy_to_device(be, (char *)*p + n * es, (char *)g + lead * es, tail * es);
    free(g);
    guard_poison(x, side, 1);
    return s;
}

/* h (n fp32 values) to d on be in dt. */
static gt_status put(gt_backend *be, gt_dtype dt, void *d, const float *h, size_t n) {
    size_t bytes = n * gt_dtype_size(dt);
    if (bytes == 0) return GT_OK;
    void *tmp = malloc(bytes);
    if (!tmp) return GT_ERR(GT_ERR_OOM, "no host memory for %zu bytes", bytes);
    gt_convert(tmp, dt, h, GT_DTYPE_FP32, n);
    gt_status s = be->copy_to_device(be, d, tmp, bytes);
    free(tmp);
    return s;
}

static gt_status download(gt_backend *be, gt_dtype dt, const void *d, size_t n, float *h) {
    if (n == 0) return GT_OK;
    void *tmp = malloc(n * gt_dtype_size(dt));
    if (!tmp) return GT_ERR(GT_ERR_OOM, "no host memory for %zu bytes", n * gt_dtype_size(dt));
    gt_status s = be->copy_to_host(be, tmp, d, n * gt_dtype_size(dt));
    if (s == GT_OK) gt_convert(h, GT_DTYPE_FP32, tmp, dt, n);
    free(tmp);
    return s;
}

/* Rounds h (n values) to the storage dtype dt in place. */
static gt_status round_to(float *h, size_t n, gt_dtype dt) {
    if (dt == GT_DTYPE_FP32 || n == 0) return GT_OK;
    void *tmp = malloc(n * gt_dtype_size(dt));
    if (!tmp) return GT_ERR(GT_ERR_OOM, "no host memory");
    gt_convert(tmp, dt, h, GT_DTYPE_FP32, n);
    gt_convert(h, GT_DTYPE_FP32, tmp, dt, n);
    free(tmp);
    return GT_OK;
}

/* Array i of c: n values, dist 0 uniform [a, b), 1 normal (mean a, std b),
 * rounded to dt (the storage on the backend under test; fp32 for state
 * that is always fp32). */
static gt_status mk(gt_kcase *c, int i, gt_dtype dt, size_t n, int dist, float a, float b,
                    uint64_t stream) {
    kc_arr *x = &c->a[i];
    x->n = n;
    x->dt = dt;
    x->h = malloc(n ? n * sizeof(float) : 1);
    if (!x->h) return GT_ERR(GT_ERR_OOM, "no host memory for %zu floats", n);
    if (dist == 0)
        gt_rng_fill_uniform(x->h, n, a, b, KC_SEED, stream, 0);
    else
        gt_rng_fill_normal(x->h, n, a, b, KC_SEED, stream, 0);
    GT_TRY(round_to(x->h, n, dt));
    gt_status s = kc_alloc(c, i, 0, n);
    if (s == GT_OK) s = put(c->be, dt, x->d, x->h, n);
    if (s == GT_OK && c->ref) s = kc_alloc(c, i, 1, n);
    if (s == GT_OK && c->ref) s = put(c->ref, GT_DTYPE_FP32, x->r, x->h, n);
    return s;
}

/* n token ids in [0, range). */
static gt_status mk_ids(gt_kcase *c, int i, size_t n, int range, uint64_t stream) {
    kc_arr *x = &c->a[i];
    x->n = n;
    x->ids = 1;
    x->dt = GT_DTYPE_INT32;
    x->hid = malloc(n ? n * sizeof(int32_t) : 1);
    if (!x->hid) return GT_ERR(GT_ERR_OOM, "no host memory");
    for (size_t j = 0; j < n; j++)
        x->hid[j] = (int32_t)(gt_rng_u32(KC_SEED, stream, j) % (uint32_t)(range > 0 ? range : 1));
    size_t bytes = n * sizeof(int32_t);
    gt_status s = kc_alloc(c, i, 0, n);
    if (s == GT_OK && bytes) s = c->be->copy_to_device(c->be, x->d, x->hid, bytes);
    if (s == GT_OK && c->ref) s = kc_alloc(c, i, 1, n);
    if (s == GT_OK && c->ref && bytes) s = c->ref->copy_to_device(c->ref, x->r, x->hid, bytes);
    return s;
}

/* Uploads array i's host values again (after set-up changed them on the
 * host), to both sides. */
static gt_status refresh(gt_kcase *c, int i) {
    kc_arr *x = &c->a[i];
    gt_status s = put(c->be, x->dt, x->d, x->h, x->n);
    if (s == GT_OK && c->ref) s = put(c->ref, GT_DTYPE_FP32, x->r, x->h, x->n);
    return s;
}

/* Array i of an output the op must overwrite: every 7th value NaN (on both
 * sides), so that an op that reads it (accumulates, or scales it by a zero
 * beta) is caught. */
static gt_status poison(gt_kcase *c, int i) {
    kc_arr *x = &c->a[i];
    for (size_t j = 0; j < x->n; j += 7) x->h[j] = NAN;
    return refresh(c, i);
}

void gt_kcase_free(gt_kcase *c) {
    if (!c) return;
    for (int i = 0; i < KC_MAX_ARR; i++) {
        gt_backend_dealloc(c->be, c->a[i].base[0]);
        if (c->ref) gt_backend_dealloc(c->ref, c->a[i].base[1]);
        free(c->a[i].h);
        free(c->a[i].hid);
    }
    free(c);
}

/* ---- labels ------------------------------------------------------------------ */

const char *gt_kshape_label(gt_op op, const gt_kshape *s, char *buf, size_t size) {
    switch (op) {
    case GT_OP_ENCODER_FWD:
    case GT_OP_ENCODER_BWD:
        snprintf(buf, size, "B%d_T%d_C%d_V%d", s->B, s->T, s->C, s->V);
        break;
    case GT_OP_LAYERNORM_FWD:
    case GT_OP_LAYERNORM_BWD: snprintf(buf, size, "N%d_C%d", s->N, s->C); break;
    case GT_OP_MATMUL_FWD:
    case GT_OP_MATMUL_BWD:
    case GT_OP_MATMUL_GELU_FWD:
    case GT_OP_MATMUL_DGELU_BWD:
        /* with a bias is what models use: the plain label; "_nobias" marks the other */
        snprintf(buf, size, "N%d_C%d_OC%d%s", s->N, s->C, s->OC, s->bias ? "" : "_nobias");
        break;
    case GT_OP_ATTENTION_FWD:
    case GT_OP_ATTENTION_BWD:
        snprintf(buf, size, "B%d_T%d_C%d_NH%d", s->B, s->T, s->C, s->NH);
        break;
    case GT_OP_CLASSIFIER_FWD:
    case GT_OP_CLASSIFIER_BWD: snprintf(buf, size, "N%d_V%d_Vp%d", s->N, s->V, s->Vp); break;
    case GT_OP_ADAMW: snprintf(buf, size, "n%zu_t%d", s->n, s->step); break;
    case GT_OP_CONV2D_FWD:
    case GT_OP_CONV2D_BWD: {
        char kk[32];
        if (s->KH == s->KW)
            snprintf(kk, sizeof kk, "%d", s->KH);
        else
            snprintf(kk, sizeof kk, "%dx%d", s->KH, s->KW);
        snprintf(buf, size, "N%d_C%d_H%d_W%d_OC%d_K%s_s%d_p%d%s", s->N, s->C, s->H, s->W, s->OC,
                 kk, s->stride, s->pad, s->bias ? "" : "_nobias");
        break;
    }
    case GT_OP_BATCHNORM_FWD:
    case GT_OP_BATCHNORM_BWD:
        /* the backward is training-mode only: no suffix */
        snprintf(buf, size, "N%d_C%d_H%d_W%d%s%s", s->N, s->C, s->H, s->W,
                 op == GT_OP_BATCHNORM_BWD ? "" : s->train ? "_train" : "_eval",
                 s->drift ? "_drift" : "");
        break;
    case GT_OP_AVGPOOL_FWD:
    case GT_OP_AVGPOOL_BWD: snprintf(buf, size, "N%d_C%d_H%d_W%d", s->N, s->C, s->H, s->W); break;
    default: snprintf(buf, size, "n%zu", s->n); break;
    }
    size_t len = strlen(buf);
    if (s->offset && len < size) snprintf(buf + len, size - len, "_off%d", s->offset);
    return buf;
}

/* ---- set-up ------------------------------------------------------------------ */

/* Array slots per op family (names of the op's parameters). */
enum { EN_INP, EN_WTE, EN_WPE, EN_OUT, EN_DOUT, EN_DWTE, EN_DWPE };
enum { LN_INP, LN_W, LN_B, LN_OUT, LN_MEAN, LN_RSTD, LN_DOUT, LN_DINP, LN_DW, LN_DB };
/* matmul_gelu_fwd: out MM_OUT, pre MM_PRE; matmul_dgelu_bwd: dpre MM_DINP,
 * the pre-activation input MM_PRE */
enum { MM_INP, MM_W, MM_B, MM_OUT, MM_DOUT, MM_DINP, MM_DW, MM_DB, MM_PRE };
enum { AT_QKV, AT_OUT, AT_ATT, AT_DOUT, AT_DQKV };
enum { PW_X, PW_Y, PW_OUT, PW_DINP, PW_A, PW_DA, PW_DB };
enum { CL_TG, CL_LOGITS, CL_LOSSES, CL_DL, CL_LOGITS2 };
enum { OP_G, OP_P, OP_M, OP_V };
enum { CV_INP, CV_W, CV_B, CV_OUT, CV_DOUT, CV_DINP, CV_DW, CV_DB };
enum { BN_INP, BN_W, BN_B, BN_OUT, BN_MEAN, BN_RSTD, BN_RM, BN_RV, BN_DOUT, BN_DINP, BN_DW, BN_DB };
enum { RL_X, RL_OUT, RL_A, RL_Y, RL_DOUT, RL_DINP };
enum { AP_INP, AP_OUT, AP_DOUT, AP_DINP };
enum { CA_SRC, CA_DST, CA_TMP, CA_LOW, CA_WIDE };

/* Array i's name in op's family (the slots above), for messages. */
static const char *arr_name(gt_op op, int i) {
    static const char *const en[] = {"inp", "wte", "wpe", "out", "dout", "dwte", "dwpe"};
    static const char *const ln[] = {"inp",  "weight", "bias", "out",     "mean",
                                     "rstd", "dout",   "dinp", "dweight", "dbias"};
    static const char *const mm[] = {"inp",  "weight", "bias",    "out",  "dout",
                                     "dinp", "dweight", "dbias", "pre"};
    static const char *const at[] = {"qkv", "out", "att", "dout", "dqkv"};
    static const char *const pw[] = {"x", "y", "out", "dinp", "inplace", "da", "db"};
    static const char *const cl[] = {"targets", "logits", "losses", "dlogits", "inplace"};
    static const char *const op_[] = {"grads", "params", "m", "v"};
    static const char *const cv[] = {"inp",  "weight", "bias",    "out",
                                     "dout", "dinp",   "dweight", "dbias"};
    static const char *const bn[] = {"inp",  "weight",       "bias",        "out",
                                     "mean", "rstd",         "running_mean", "running_var",
                                     "dout", "dinp",         "dweight",      "dbias"};
    static const char *const rl[] = {"x", "out", "inplace", "out", "dout", "dinp"};
    static const char *const ap[] = {"inp", "out", "dout", "dinp"};
    static const char *const ca[] = {"src", "out", "tmp", "low", "widen"};
#define KC_NAME(t) return i >= 0 && (size_t)i < sizeof t / sizeof t[0] ? t[i] : "?"
    switch (op) {
    case GT_OP_ENCODER_FWD:
    case GT_OP_ENCODER_BWD: KC_NAME(en);
    case GT_OP_LAYERNORM_FWD:
    case GT_OP_LAYERNORM_BWD: KC_NAME(ln);
    case GT_OP_MATMUL_DGELU_BWD:
        if (i == MM_DINP) return "dpre";
        KC_NAME(mm);
    case GT_OP_MATMUL_FWD:
    case GT_OP_MATMUL_BWD:
    case GT_OP_MATMUL_GELU_FWD: KC_NAME(mm);
    case GT_OP_ATTENTION_FWD:
    case GT_OP_ATTENTION_BWD: KC_NAME(at);
    case GT_OP_GELU_FWD:
    case GT_OP_GELU_BWD:
    case GT_OP_RESIDUAL_FWD:
    case GT_OP_RESIDUAL_BWD: KC_NAME(pw);
    case GT_OP_CLASSIFIER_FWD:
    case GT_OP_CLASSIFIER_BWD: KC_NAME(cl);
    case GT_OP_ADAMW:
    case GT_OP_SUMSQ: KC_NAME(op_);
    case GT_OP_CONV2D_FWD:
    case GT_OP_CONV2D_BWD: KC_NAME(cv);
    case GT_OP_BATCHNORM_FWD:
    case GT_OP_BATCHNORM_BWD: KC_NAME(bn);
    case GT_OP_RELU_FWD:
    case GT_OP_RELU_BWD: KC_NAME(rl);
    case GT_OP_AVGPOOL_FWD:
    case GT_OP_AVGPOOL_BWD: KC_NAME(ap);
    case GT_OP_CAST: KC_NAME(ca);
    default: return "?";
    }
#undef KC_NAME
}

static gt_conv2d_shape conv_of(const gt_kshape *s) {
    gt_conv2d_shape cs = {.N = s->N, .C = s->C, .H = s->H, .W = s->W, .OC = s->OC,
                          .KH = s->KH, .KW = s->KW, .stride = s->stride, .pad = s->pad};
    return cs;
}

static const void *P(gt_kcase *c, int side, int i) { return side ? c->a[i].r : c->a[i].d; }
static void *W(gt_kcase *c, int side, int i) { return side ? c->a[i].r : c->a[i].d; }

/* Calls the op (or, with `fwd`, the forward whose saved state a backward
 * reads) on side 0 (backend under test) or 1 (ref). `inplace` selects the
 * aliased variant that residual_fwd and classifier_bwd also check. */
static gt_status call(gt_kcase *c, int side, gt_op op, int inplace) {
    gt_kctx k = {side ? c->ref : c->be, side ? GT_DTYPE_FP32 : c->dt};
    const gt_ops *o = side ? &gt_ops_ref : c->be->ops;
    const gt_kshape *s = &c->sh;
    switch (op) {
    case GT_OP_ENCODER_FWD:
        return o->encoder_fwd(&k, W(c, side, EN_OUT), P(c, side, EN_INP), P(c, side, EN_WTE),
                              P(c, side, EN_WPE), s->B, s->T, s->C);
    case GT_OP_ENCODER_BWD:
        return o->encoder_bwd(&k, W(c, side, EN_DWTE), W(c, side, EN_DWPE), P(c, side, EN_DOUT),
                              P(c, side, EN_INP), s->B, s->T, s->C);
    case GT_OP_LAYERNORM_FWD:
        return o->layernorm_fwd(&k, W(c, side, LN_OUT), W(c, side, LN_MEAN), W(c, side, LN_RSTD),
                                P(c, side, LN_INP), P(c, side, LN_W), P(c, side, LN_B), s->N,
                                s->C, 1e-5f);
    case GT_OP_LAYERNORM_BWD:
        return o->layernorm_bwd(&k, W(c, side, LN_DINP), W(c, side, LN_DW), W(c, side, LN_DB),
                                P(c, side, LN_DOUT), P(c, side, LN_INP), P(c, side, LN_W),
                                P(c, side, LN_MEAN), P(c, side, LN_RSTD), s->N, s->C);
    case GT_OP_MATMUL_FWD:
        return o->matmul_fwd(&k, W(c, side, MM_OUT), P(c, side, MM_INP), P(c, side, MM_W),
                             s->bias ? P(c, side, MM_B) : NULL, s->N, s->C, s->OC);
    case GT_OP_MATMUL_BWD:
        return o->matmul_bwd(&k, W(c, side, MM_DINP), W(c, side, MM_DW),
                             s->bias ? W(c, side, MM_DB) : NULL, P(c, side, MM_DOUT),
                             P(c, side, MM_INP), P(c, side, MM_W), s->N, s->C, s->OC);
    case GT_OP_MATMUL_GELU_FWD:
        return o->matmul_gelu_fwd(&k, W(c, side, MM_OUT), W(c, side, MM_PRE), P(c, side, MM_INP),
                                  P(c, side, MM_W), s->bias ? P(c, side, MM_B) : NULL, s->N, s->C,
                                  s->OC);
    case GT_OP_MATMUL_DGELU_BWD:
        return o->matmul_dgelu_bwd(&k, W(c, side, MM_DINP), W(c, side, MM_DW),
                                   s->bias ? W(c, side, MM_DB) : NULL, P(c, side, MM_DOUT),
                                   P(c, side, MM_INP), P(c, side, MM_W), P(c, side, MM_PRE), s->N,
                                   s->C, s->OC);
    case GT_OP_ATTENTION_FWD:
        return o->attention_fwd(&k, W(c, side, AT_OUT), W(c, side, AT_ATT), P(c, side, AT_QKV),
                                s->B, s->T, s->C, s->NH);
    case GT_OP_ATTENTION_BWD:
        return o->attention_bwd(&k, W(c, side, AT_DQKV), P(c, side, AT_DOUT), P(c, side, AT_QKV),
                                P(c, side, AT_OUT), P(c, side, AT_ATT), s->B, s->T, s->C, s->NH);
    case GT_OP_GELU_FWD: return o->gelu_fwd(&k, W(c, side, PW_OUT), P(c, side, PW_X), s->n);
    case GT_OP_GELU_BWD:
        return o->gelu_bwd(&k, W(c, side, PW_DINP), P(c, side, PW_X), P(c, side, PW_Y), s->n);
    case GT_OP_RESIDUAL_FWD:
        if (inplace) /* out aliasing a: the form models use */
            return o->residual_fwd(&k, W(c, side, PW_A), P(c, side, PW_A), P(c, side, PW_Y), s->n);
        return o->residual_fwd(&k, W(c, side, PW_OUT), P(c, side, PW_X), P(c, side, PW_Y), s->n);
    case GT_OP_RESIDUAL_BWD:
        return o->residual_bwd(&k, W(c, side, PW_DA), W(c, side, PW_DB), P(c, side, PW_Y), s->n);
    case GT_OP_CLASSIFIER_FWD:
        return o->classifier_fwd(&k, W(c, side, CL_LOSSES), P(c, side, CL_LOGITS),
                                 P(c, side, CL_TG), s->N, s->V, s->Vp);
    case GT_OP_CLASSIFIER_BWD: {
        float dloss = 1.0f / (s->N > 0 ? s->N : 1);
        if (inplace) /* over the logits, losses NULL: the memory-saving path */
            return o->classifier_bwd(&k, W(c, side, CL_LOGITS2), NULL, P(c, side, CL_LOGITS2),
                                     P(c, side, CL_TG), dloss, s->N, s->V, s->Vp);
        return o->classifier_bwd(&k, W(c, side, CL_DL), W(c, side, CL_LOSSES),
                                 P(c, side, CL_LOGITS), P(c, side, CL_TG), dloss, s->N, s->V,
                                 s->Vp);
    }
    case GT_OP_ADAMW:
        return o->adamw(&k, W(c, side, OP_P), P(c, side, OP_G), W(c, side, OP_M),
                        W(c, side, OP_V), s->n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.5f, s->step);
    case GT_OP_SUMSQ: return o->sumsq(&k, P(c, side, OP_G), s->n, &c->sumsq[side]);
    case GT_OP_CONV2D_FWD: {
        gt_conv2d_shape cs = conv_of(s);
        return o->conv2d_fwd(&k, W(c, side, CV_OUT), P(c, side, CV_INP), P(c, side, CV_W),
                             s->bias ? P(c, side, CV_B) : NULL, &cs);
    }
    case GT_OP_CONV2D_BWD: {
        gt_conv2d_shape cs = conv_of(s);
        return o->conv2d_bwd(&k, W(c, side, CV_DINP), W(c, side, CV_DW),
                             s->bias ? W(c, side, CV_DB) : NULL, P(c, side, CV_DOUT),
                             P(c, side, CV_INP), P(c, side, CV_W), &cs);
    }
    case GT_OP_BATCHNORM_FWD: /* eval mode with mean, rstd NULL, as ops.h allows */
        return o->batchnorm_fwd(&k, W(c, side, BN_OUT), s->train ? W(c, side, BN_MEAN) : NULL,
                                s->train ? W(c, side, BN_RSTD) : NULL, W(c, side, BN_RM),
                                W(c, side, BN_RV), P(c, side, BN_INP), P(c, side, BN_W),
                                P(c, side, BN_B), s->N, s->C, s->H * s->W, 1e-5f, 0.1f, s->train);
    case GT_OP_BATCHNORM_BWD:
        return o->batchnorm_bwd(&k, W(c, side, BN_DINP), W(c, side, BN_DW), W(c, side, BN_DB),
                                P(c, side, BN_DOUT), P(c, side, BN_INP), P(c, side, BN_W),
                                P(c, side, BN_MEAN), P(c, side, BN_RSTD), s->N, s->C, s->H * s->W);
    case GT_OP_RELU_FWD:
        if (inplace) /* out aliasing inp: the form models use */
            return o->relu_fwd(&k, W(c, side, RL_A), P(c, side, RL_A), s->n);
        return o->relu_fwd(&k, W(c, side, RL_OUT), P(c, side, RL_X), s->n);
    case GT_OP_RELU_BWD:
        return o->relu_bwd(&k, W(c, side, RL_DINP), P(c, side, RL_Y), P(c, side, RL_DOUT), s->n);
    case GT_OP_AVGPOOL_FWD:
        return o->avgpool_fwd(&k, W(c, side, AP_OUT), P(c, side, AP_INP), s->N, s->C, s->H * s->W);
    case GT_OP_AVGPOOL_BWD:
        return o->avgpool_bwd(&k, W(c, side, AP_DINP), P(c, side, AP_DOUT), s->N, s->C,
                              s->H * s->W);
    case GT_OP_CAST: {
        gt_dtype F = GT_DTYPE_FP32;
        if (inplace) /* the widening direction: dt -> fp32 (ref: already fp32, a copy) */
            return o->cast(&k, W(c, side, CA_WIDE), F, P(c, side, CA_LOW), side ? F : c->dt, s->n);
        /* fp32 -> dt, the compute copy of master weights. The ref keeps fp32
         * arrays: it rounds into a scratch array (an fp32-sized buffer holds
         * n values of any dt here) and widens that back, exactly. */
        if (!side) return o->cast(&k, W(c, 0, CA_DST), c->dt, P(c, 0, CA_SRC), F, s->n);
        gt_status st = o->cast(&k, W(c, 1, CA_TMP), c->dt, P(c, 1, CA_SRC), F, s->n);
        return st != GT_OK ? st : o->cast(&k, W(c, 1, CA_DST), F, P(c, 1, CA_TMP), c->dt, s->n);
    }
    default: return GT_ERR(GT_ERR_INVALID, "unknown op %d", (int)op);
    }
}

static int positive_dims(gt_op op, const gt_kshape *s) {
    switch (op) {
    case GT_OP_ENCODER_FWD:
    case GT_OP_ENCODER_BWD: return s->B > 0 && s->T > 0 && s->C > 0 && s->V > 0;
    case GT_OP_LAYERNORM_FWD:
    case GT_OP_LAYERNORM_BWD: return s->N > 0 && s->C > 0;
    case GT_OP_MATMUL_FWD:
    case GT_OP_MATMUL_BWD:
    case GT_OP_MATMUL_GELU_FWD:
    case GT_OP_MATMUL_DGELU_BWD: return s->N > 0 && s->C > 0 && s->OC > 0;
    case GT_OP_ATTENTION_FWD:
    case GT_OP_ATTENTION_BWD:
        return s->B > 0 && s->T > 0 && s->C > 0 && s->NH > 0 && s->C % s->NH == 0;
    case GT_OP_CLASSIFIER_FWD:
    case GT_OP_CLASSIFIER_BWD: return s->N > 0 && s->V > 0 && s->Vp >= s->V;
    case GT_OP_ADAMW: return s->step >= 1;
    case GT_OP_CONV2D_FWD:
    case GT_OP_CONV2D_BWD: {
        gt_conv2d_shape cs = conv_of(s);
        return s->N > 0 && s->C > 0 && s->OC > 0 && gt_conv2d_out_h(&cs) > 0 &&
               gt_conv2d_out_w(&cs) > 0;
    }
    case GT_OP_BATCHNORM_FWD:
    case GT_OP_BATCHNORM_BWD:
    case GT_OP_AVGPOOL_FWD:
    case GT_OP_AVGPOOL_BWD: return s->N > 0 && s->C > 0 && s->H > 0 && s->W > 0;
    default: return 1;
    }
}

/* batchnorm_bwd's saved state: the ref's training-mode statistics of the
 * case's (rounded) input, on both sides, so that only the backward is
 * measured. Running statistics and output go to scratch. */
static gt_status bn_ref_stats(gt_kcase *c) {
    const gt_kshape *s = &c->sh;
    size_t n = (size_t)s->N * s->C * s->H * s->W, C = (size_t)s->C;
    gt_backend *r = c->ref;
    gt_status st = GT_OK;
    if (!r) {
        gt_backend_config cfg = {.threads = 1, .device = -1};
        GT_TRY(gt_backend_new("ref", &cfg, &r));
    }
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
            st = refresh(c, BN_MEAN);
        }
        if (st == GT_OK) st = refresh(c, BN_RSTD);
    }
    free(out);
    free(rs);
    if (r != c->ref) gt_backend_free(r);
    return st;
}

gt_status gt_kcase_new(gt_backend *be, gt_backend *ref, gt_dtype dt, gt_op op,
                       const gt_kshape *sh, gt_kcase **out) {
    *out = NULL;
    if ((unsigned)op >= GT_OP_COUNT) return GT_ERR(GT_ERR_INVALID, "op %d out of range", (int)op);
    if (!gt_ops_slot(be->ops, op))
        return GT_ERR(GT_ERR_UNSUPPORTED, "%s: empty slot on backend %s", gt_op_name(op),
                      be->name);
    if (!positive_dims(op, sh) || sh->offset < 0) {
        char lb[96];
        return GT_ERR(GT_ERR_INVALID, "%s: bad shape %s", gt_op_name(op),
                      gt_kshape_label(op, sh, lb, sizeof lb));
    }
    gt_kcase *c = calloc(1, sizeof *c);
    if (!c) return GT_ERR(GT_ERR_OOM, "no host memory");
    c->be = be;
    c->ref = ref;
    c->dt = dt;
    c->op = op;
    c->sh = *sh;
    const gt_kshape *s = sh;
    gt_dtype F = GT_DTYPE_FP32;
    gt_status st = GT_OK;
#define MK(...)                                                                            \
    do {                                                                                   \
        if (st == GT_OK) st = mk(c, __VA_ARGS__);                                          \
    } while (0)
    switch (op) {
    case GT_OP_ENCODER_FWD:
    case GT_OP_ENCODER_BWD: {
        size_t N = (size_t)s->B * s->T;
        st = mk_ids(c, EN_INP, N, s->V, 1);
        MK(EN_WTE, dt, (size_t)s->V * s->C, 1, 0.0f, 1.0f, 2);
        MK(EN_WPE, dt, (size_t)s->T * s->C, 1, 0.0f, 1.0f, 3);
        MK(EN_OUT, dt, N * s->C, 0, -1.0f, 1.0f, 4);
        if (op == GT_OP_ENCODER_BWD) {
            MK(EN_DOUT, dt, N * s->C, 1, 0.0f, 1.0f, 5);
            MK(EN_DWTE, dt, (size_t)s->V * s->C, 1, 0.0f, 1.0f, 6);
            MK(EN_DWPE, dt, (size_t)s->T * s->C, 1, 0.0f, 1.0f, 7);
        }
        break;
    }
    case GT_OP_LAYERNORM_FWD:
    case GT_OP_LAYERNORM_BWD: {
        size_t n = (size_t)s->N * s->C;
        MK(LN_INP, dt, n, 1, 0.3f, 1.5f, 10);
        MK(LN_W, dt, s->C, 1, 1.0f, 0.2f, 11);
        MK(LN_B, dt, s->C, 1, 0.0f, 0.2f, 12);
        MK(LN_OUT, dt, n, 0, -1.0f, 1.0f, 13);
        MK(LN_MEAN, F, s->N, 0, -1.0f, 1.0f, 14);
        MK(LN_RSTD, F, s->N, 0, -1.0f, 1.0f, 15);
        if (op == GT_OP_LAYERNORM_BWD) {
            MK(LN_DOUT, dt, n, 1, 0.0f, 1.0f, 16);
            MK(LN_DINP, dt, n, 1, 0.0f, 1.0f, 17);
            MK(LN_DW, dt, s->C, 1, 0.0f, 1.0f, 18);
            MK(LN_DB, dt, s->C, 1, 0.0f, 1.0f, 19);
            /* The backward takes the ref's statistics on both sides so that
             * only the backward is measured (they are fp32 outputs of the
             * forward): computed on a ref made here when none was given. */
            gt_backend *r = ref;
            if (st == GT_OK && !r) {
                gt_backend_config cfg = {.threads = 1, .device = -1};
                st = gt_backend_new("ref", &cfg, &r);
            }
            if (st == GT_OK) {
                float *hm = malloc(s->N * sizeof(float)), *hr = malloc(s->N * sizeof(float));
                float *rin = NULL, *rw = NULL, *rb = NULL, *ro = NULL;
                if (!hm || !hr || !(rin = malloc(n * 4)) || !(ro = malloc(n * 4))) {
                    st = GT_ERR(GT_ERR_OOM, "no host memory");
                } else {
                    /* ref memory is host memory: run it on the host copies */
                    gt_kctx kr = {r, F};
                    rw = c->a[LN_W].h;
                    rb = c->a[LN_B].h;
                    memcpy(rin, c->a[LN_INP].h, n * 4);
                    st = gt_ops_ref.layernorm_fwd(&kr, ro, hm, hr, rin, rw, rb, s->N, s->C, 1e-5f);
                    if (st == GT_OK)
                        st = be->copy_to_device(be, c->a[LN_MEAN].d, hm, s->N * sizeof(float));
                    if (st == GT_OK)
                        st = be->copy_to_device(be, c->a[LN_RSTD].d, hr, s->N * sizeof(float));
                    if (st == GT_OK && ref)
                        st = ref->copy_to_device(ref, c->a[LN_MEAN].r, hm, s->N * sizeof(float));
                    if (st == GT_OK && ref)
                        st = ref->copy_to_device(ref, c->a[LN_RSTD].r, hr, s->N * sizeof(float));
                }
                free(hm);
                free(hr);
                free(rin);
                free(ro);
            }
            if (r != ref) gt_backend_free(r);
        }
        break;
    }
    case GT_OP_MATMUL_FWD:
    case GT_OP_MATMUL_BWD:
        MK(MM_INP, dt, (size_t)s->N * s->C, 1, 0.0f, 1.0f, 20);
        MK(MM_W, dt, (size_t)s->OC * s->C, 1, 0.0f, 0.05f, 21);
        MK(MM_B, dt, s->OC, 1, 0.0f, 0.5f, 22);
        MK(MM_OUT, dt, (size_t)s->N * s->OC, 0, -1.0f, 1.0f, 23);
        if (op == GT_OP_MATMUL_BWD) {
            MK(MM_DOUT, dt, (size_t)s->N * s->OC, 1, 0.0f, 1.0f, 24);
            /* overwritten: garbage in, NaN included, which must not leak out */
            MK(MM_DINP, dt, (size_t)s->N * s->C, 0, -5.0f, 5.0f, 25);
            if (st == GT_OK) st = poison(c, MM_DINP);
            MK(MM_DW, dt, (size_t)s->OC * s->C, 1, 0.0f, 1.0f, 26);
            MK(MM_DB, dt, s->OC, 1, 0.0f, 1.0f, 27);
        }
        break;
    case GT_OP_MATMUL_GELU_FWD:
    case GT_OP_MATMUL_DGELU_BWD: {
        /* Pre-activations ~ N(0, 2): GELU's negative tail (where 1 + tanh
         * cancels) and its curved middle, not only its linear part. The
         * forward's pre comes from weights scaled by 1/sqrt(C); the
         * backward's is an input. Outputs start as garbage with NaN. */
        size_t nin = (size_t)s->N * s->C, nw = (size_t)s->OC * s->C, nout = (size_t)s->N * s->OC;
        MK(MM_INP, dt, nin, 1, 0.0f, 1.0f, 130);
        MK(MM_B, dt, s->OC, 1, 0.0f, 0.5f, 132);
        if (op == GT_OP_MATMUL_GELU_FWD) {
            MK(MM_W, dt, nw, 1, 0.0f, (float)(2.0 / sqrt((double)s->C)), 131);
            MK(MM_OUT, dt, nout, 0, -5.0f, 5.0f, 133);
            if (st == GT_OK) st = poison(c, MM_OUT);
            MK(MM_PRE, dt, nout, 0, -5.0f, 5.0f, 134);
            if (st == GT_OK) st = poison(c, MM_PRE);
        } else {
            MK(MM_W, dt, nw, 1, 0.0f, (float)(1.0 / sqrt((double)s->OC)), 131);
            MK(MM_DOUT, dt, nout, 1, 0.0f, 1.0f, 135);
            MK(MM_PRE, dt, nin, 1, 0.0f, 2.0f, 136);
            MK(MM_DINP, dt, nin, 0, -5.0f, 5.0f, 137);
            if (st == GT_OK) st = poison(c, MM_DINP);
            MK(MM_DW, dt, nw, 1, 0.0f, 1.0f, 138);
            MK(MM_DB, dt, s->OC, 1, 0.0f, 1.0f, 139);
        }
        break;
    }
    case GT_OP_ATTENTION_FWD:
    case GT_OP_ATTENTION_BWD: {
        size_t nqkv = (size_t)s->B * s->T * 3 * s->C, nout = (size_t)s->B * s->T * s->C;
        size_t natt = (size_t)s->B * s->NH * s->T * s->T;
        MK(AT_QKV, dt, nqkv, 1, 0.0f, 1.0f, 30);
        MK(AT_OUT, dt, nout, 0, -1.0f, 1.0f, 31);
        MK(AT_ATT, F, natt, 0, -1.0f, 1.0f, 32);
        /* The ref side keeps its (B,NH,T,T) probabilities; the backend's
         * side gets exactly the state its attention_state_floats asks for,
         * so that a backend writing more than it promised shows. */
        if (st == GT_OK) {
            gt_kctx kb = {be, dt};
            size_t nb = gt_attention_state_floats(be->ops, &kb, s->B, s->T, s->C, s->NH);
            if (nb != natt) {
                gt_backend_dealloc(be, c->a[AT_ATT].base[0]);
                c->a[AT_ATT].base[0] = c->a[AT_ATT].d = NULL;
                st = kc_alloc(c, AT_ATT, 0, nb);
            }
        }
        if (op == GT_OP_ATTENTION_BWD) {
            MK(AT_DOUT, dt, nout, 1, 0.0f, 1.0f, 33);
            MK(AT_DQKV, dt, nqkv, 1, 0.0f, 1.0f, 34);
            /* Each backend's backward reads its own forward's saved state. */
            if (st == GT_OK && !be->ops->attention_fwd)
                st = GT_ERR(GT_ERR_UNSUPPORTED,
                            "attention_bwd needs attention_fwd's saved state: empty slot on %s",
                            be->name);
            if (st == GT_OK) st = call(c, 0, GT_OP_ATTENTION_FWD, 0);
            if (st == GT_OK && ref) {
                st = call(c, 1, GT_OP_ATTENTION_FWD, 0);
                if (st != GT_OK) st = GT_ERR(GT_ERR_INVALID, "ref attention_fwd: %s", gt_last_error());
            }
        }
        break;
    }
    case GT_OP_GELU_FWD:
    case GT_OP_GELU_BWD:
    case GT_OP_RESIDUAL_FWD:
    case GT_OP_RESIDUAL_BWD:
        MK(PW_X, dt, s->n, 1, 0.0f, 3.0f, 40);
        MK(PW_Y, dt, s->n, 1, 0.0f, 1.0f, 41);
        MK(PW_OUT, dt, s->n, 0, -1.0f, 1.0f, 42);
        if (op == GT_OP_GELU_BWD) MK(PW_DINP, dt, s->n, 1, 0.0f, 1.0f, 43);
        if (op == GT_OP_RESIDUAL_FWD) MK(PW_A, dt, s->n, 1, 0.0f, 1.0f, 44);
        if (op == GT_OP_RESIDUAL_BWD) {
            MK(PW_DA, dt, s->n, 1, 0.0f, 1.0f, 45);
            MK(PW_DB, dt, s->n, 1, 0.0f, 1.0f, 46);
        }
        break;
    case GT_OP_CLASSIFIER_FWD:
    case GT_OP_CLASSIFIER_BWD: {
        size_t n = (size_t)s->N * s->Vp;
        st = mk_ids(c, CL_TG, s->N, s->V, 50);
        MK(CL_LOGITS, dt, n, 1, 0.0f, 2.0f, 51);
        MK(CL_LOSSES, F, s->N, 0, -1.0f, 1.0f, 52);
        if (op == GT_OP_CLASSIFIER_BWD) {
            MK(CL_DL, dt, n, 0, -5.0f, 5.0f, 53); /* overwritten: garbage in */
            MK(CL_LOGITS2, dt, n, 1, 0.0f, 2.0f, 51); /* the in-place check's own copy */
        }
        break;
    }
    case GT_OP_ADAMW:
    case GT_OP_SUMSQ:
        MK(OP_G, dt, s->n, 1, 0.0f, 1.0f, 60);
        if (op == GT_OP_ADAMW) {
            MK(OP_P, F, s->n, 1, 0.0f, 0.1f, 61);
            MK(OP_M, F, s->n, 1, 0.0f, 0.1f, 62);
            MK(OP_V, F, s->n, 0, 0.0f, 0.02f, 63);
        }
        break;
    case GT_OP_CONV2D_FWD:
    case GT_OP_CONV2D_BWD: {
        gt_conv2d_shape cs = conv_of(s);
        size_t nin = (size_t)s->N * s->C * s->H * s->W;
        size_t nw = (size_t)s->OC * s->C * s->KH * s->KW;
        size_t nout = (size_t)s->N * s->OC * gt_conv2d_out_h(&cs) * gt_conv2d_out_w(&cs);
        /* weights ~ 1/sqrt(fan-in) (He-like): outputs O(1) at any C, K */
        MK(CV_INP, dt, nin, 1, 0.0f, 1.0f, 70);
        MK(CV_W, dt, nw, 1, 0.0f, (float)(1.0 / sqrt((double)s->C * s->KH * s->KW)), 71);
        MK(CV_B, dt, s->OC, 1, 0.0f, 0.5f, 72);
        MK(CV_OUT, dt, nout, 0, -1.0f, 1.0f, 73);
        if (op == GT_OP_CONV2D_BWD) {
            MK(CV_DOUT, dt, nout, 1, 0.0f, 1.0f, 74);
            MK(CV_DINP, dt, nin, 1, 0.0f, 1.0f, 75);
            MK(CV_DW, dt, nw, 1, 0.0f, 1.0f, 76);
            MK(CV_DB, dt, s->OC, 1, 0.0f, 1.0f, 77);
        }
        break;
    }
    case GT_OP_BATCHNORM_FWD:
    case GT_OP_BATCHNORM_BWD: {
        size_t n = (size_t)s->N * s->C * s->H * s->W, HW = (size_t)s->H * s->W;
        MK(BN_INP, dt, n, 1, 0.3f, 1.5f, 80);
        if (st == GT_OK && s->drift) {
            /* + 8 + 8 k / (N HW) at the channel's k-th value (sample-major,
             * the order the statistics reduce in): chunks of a channel
             * have means up to 8 apart, the batch's variance is mostly
             * between them. Rounded to dt again. */
            float *h = c->a[BN_INP].h;
            double cnt = (double)s->N * HW;
            for (size_t j = 0; j < n; j++) {
                size_t k = j / ((size_t)s->C * HW) * HW + j % HW;
                h[j] += (float)(8.0 + 8.0 * (double)k / cnt);
            }
            st = round_to(h, n, dt);
            if (st == GT_OK) st = refresh(c, BN_INP);
        }
        MK(BN_W, dt, s->C, 1, 1.0f, 0.2f, 81);
        MK(BN_B, dt, s->C, 1, 0.0f, 0.2f, 82);
        MK(BN_MEAN, F, s->C, 0, -1.0f, 1.0f, 84);
        MK(BN_RSTD, F, s->C, 0, -1.0f, 1.0f, 85);
        if (op == GT_OP_BATCHNORM_FWD) {
            MK(BN_OUT, dt, n, 0, -1.0f, 1.0f, 83);
            MK(BN_RM, F, s->C, 1, 0.3f, 0.5f, 86);
            MK(BN_RV, F, s->C, 0, 0.5f, 3.0f, 87); /* a variance: positive */
        } else {
            MK(BN_DOUT, dt, n, 1, 0.0f, 1.0f, 88);
            MK(BN_DINP, dt, n, 1, 0.0f, 1.0f, 89);
            MK(BN_DW, dt, s->C, 1, 0.0f, 1.0f, 90);
            MK(BN_DB, dt, s->C, 1, 0.0f, 1.0f, 91);
            if (st == GT_OK) st = bn_ref_stats(c);
        }
        break;
    }
    case GT_OP_RELU_FWD:
    case GT_OP_RELU_BWD:
        if (op == GT_OP_RELU_FWD) {
            MK(RL_X, dt, s->n, 1, 0.0f, 1.0f, 100);
            MK(RL_OUT, dt, s->n, 0, -1.0f, 1.0f, 101);
            MK(RL_A, dt, s->n, 1, 0.0f, 1.0f, 102);
        } else {
            /* out is a forward's output: about half exact zeros */
            MK(RL_Y, dt, s->n, 1, 0.0f, 1.0f, 103);
            if (st == GT_OK) {
                for (size_t i = 0; i < s->n; i++)
                    if (c->a[RL_Y].h[i] < 0.0f) c->a[RL_Y].h[i] = 0.0f;
                st = refresh(c, RL_Y);
            }
            MK(RL_DOUT, dt, s->n, 1, 0.0f, 1.0f, 104);
            MK(RL_DINP, dt, s->n, 1, 0.0f, 1.0f, 105);
        }
        break;
    case GT_OP_AVGPOOL_FWD:
    case GT_OP_AVGPOOL_BWD: {
        size_t nr = (size_t)s->N * s->C, n = nr * s->H * s->W;
        if (op == GT_OP_AVGPOOL_FWD) {
            MK(AP_INP, dt, n, 1, 0.3f, 1.0f, 110);
            MK(AP_OUT, dt, nr, 0, -1.0f, 1.0f, 111);
        } else {
            MK(AP_DOUT, dt, nr, 1, 0.0f, 1.0f, 112);
            MK(AP_DINP, dt, n, 1, 0.0f, 1.0f, 113);
        }
        break;
    }
    case GT_OP_CAST:
        /* N(0, 100): values that round in bf16 and fp16, over exponents from
         * tiny (near 0) to ~2^9; kernels.cast.* covers the special values */
        MK(CA_SRC, F, s->n, 1, 0.0f, 100.0f, 120);
        MK(CA_DST, dt, s->n, 0, -1.0f, 1.0f, 121); /* overwritten: garbage in */
        MK(CA_TMP, F, s->n, 0, -1.0f, 1.0f, 122);
        MK(CA_LOW, dt, s->n, 1, 0.0f, 100.0f, 123);
        MK(CA_WIDE, F, s->n, 0, -1.0f, 1.0f, 124);
        break;
    default: st = GT_ERR(GT_ERR_INVALID, "unknown op"); break;
    }
#undef MK
    if (st != GT_OK) {
        gt_kcase_free(c);
        return st;
    }
    *out = c;
    return GT_OK;
}

/* ---- comparison ---------------------------------------------------------------- */

static gt_tolerance scaled(gt_tolerance tol, double rtol_mul, double atol_mul) {
    tol.rtol *= rtol_mul;
    tol.atol *= atol_mul;
    return tol;
}

/* |g - w| <= atol + rtol |w| + extra[i] (extra may be NULL: the per-element
 * allowance of a reduction bound). */
static void compare(gt_kcheck *k, const char *what, const float *got, const float *want, size_t n,
                    gt_tolerance tol, const double *extra) {
    memset(k, 0, sizeof *k);
    k->what = what;
    k->tol = tol;
    k->n = n;
    for (size_t i = 0; i < n; i++) {
        double g = got[i], w = want[i];
        double err = fabs(g - w);
        double lim = tol.atol + tol.rtol * fabs(w) + (extra ? extra[i] : 0.0);
        int both_nan = isnan(g) && isnan(w);
        if (!both_nan && (isnan(g) != isnan(w) || !(err <= lim))) {
            if (!k->bad) {
                k->first_bad = i;
                k->got_first = g;
                k->want_first = w;
            }
            k->bad++;
        }
        if (!both_nan) {
            double ratio = isnan(err) ? INFINITY : err / lim;
            if (ratio > k->worst) k->worst = ratio;
        }
        if (err > k->max_abs) k->max_abs = err;
        if (w != 0.0 && err / fabs(w) > k->max_rel) k->max_rel = err / fabs(w);
    }
}

/* Downloads array i from both backends and compares. */
static gt_status check_arr(gt_kcase *c, gt_kcheck *k, const char *what, int i, gt_tolerance tol,
                           const double *extra) {
    kc_arr *x = &c->a[i];
    float *g = malloc(x->n ? x->n * 4 : 1), *w = malloc(x->n ? x->n * 4 : 1);
    gt_status s = (g && w) ? GT_OK : GT_ERR(GT_ERR_OOM, "no host memory");
    if (s == GT_OK) s = download(c->be, x->dt, x->d, x->n, g);
    if (s == GT_OK) s = download(c->ref, GT_DTYPE_FP32, x->r, x->n, w);
    if (s == GT_OK) compare(k, what, g, w, x->n, tol, extra);
    free(g);
    free(w);
    return s;
}

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
    for (size_t i = 0; i < nin; i++) ai[i] = fabsf(inp[i]);
    for (size_t i = 0; i < nw; i++) aw[i] = fabsf(w[i]);
    for (size_t i = 0; i < nout; i++) ad[i] = dout ? fabsf(dout[i]) : 0.0f;
    for (int i = 0; i < OC; i++) ab[i] = bias ? fabsf(bias[i]) : 0.0f;
    if (which == 0)
        gt_ops_ref.matmul_fwd(&kr, res, ai, aw, bias ? ab : NULL, N, C, OC);
    else if (which == 1)
        gt_ops_ref.matmul_bwd(&kr, res, d_w, NULL, ad, ai, aw, N, C, OC);
    else
        gt_ops_ref.matmul_bwd(&kr, d_in, res, NULL, ad, ai, aw, N, C, OC);
    for (size_t i = 0; i < nres; i++) extra[i] = (K + 2) * U32 * res[i];
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

/* Unit roundoff of the storage dtype. */
static double unit_roundoff(gt_dtype dt) {
    return dt == GT_DTYPE_BF16 ? 1.0 / 256.0 : dt == GT_DTYPE_FP16 ? 1.0 / 2048.0 : U32;
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
    for (size_t i = 0; i < c->a[MM_DW].n; i++) e2[i] += 2 * U32 * fabs(c->a[MM_DW].h[i]);
    GT_TRY(check_arr(c, &ck[(*n)++], "dweight", MM_DW, tol, e2));
    if (!bias) return GT_OK;
    gt_tolerance tr = tol;
    tr.atol += (double)N * U32 * 4.0 * N;
    return check_arr(c, &ck[(*n)++], "dbias", MM_DB, tr, NULL);
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
    double u = unit_roundoff(c->dt), ut = c->dt == GT_DTYPE_FP32 ? 16.0 * U32 : u;
    gt_status st = GT_OK;
    *out = NULL;
    double *ex = abs_bound(c, which);
    float *p = malloc(n * sizeof(float)), *g = NULL, *dw = NULL;
    if (!ex || !p) {
        st = GT_ERR(GT_ERR_OOM, "no host memory for the GELU matmul bound");
        goto done;
    }
    if (which == 0) {
        st = download(c->ref, GT_DTYPE_FP32, c->a[MM_PRE].r, n, p);
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
        st = gt_ops_ref.matmul_bwd(&kr, g, dw, NULL, c->a[MM_DOUT].h, c->a[MM_INP].h,
                                   c->a[MM_W].h, s->N, s->C, s->OC);
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
    for (size_t i = 0; i < nin; i++) ai[i] = fabsf(c->a[CV_INP].h[i]);
    for (size_t i = 0; i < nw; i++) aw[i] = fabsf(c->a[CV_W].h[i]);
    for (int i = 0; i < s->OC; i++) ab[i] = fabsf(c->a[CV_B].h[i]);
    if (which == 0) {
        st = gt_ops_ref.conv2d_fwd(&kr, r0, ai, aw, s->bias ? ab : NULL, &cs);
        double K = (double)s->C * s->KH * s->KW + (s->bias ? 1 : 0);
        for (size_t i = 0; st == GT_OK && i < nout; i++) x0[i] = (K + 2) * U32 * r0[i];
    } else {
        for (size_t i = 0; i < nout; i++) ad[i] = fabsf(c->a[CV_DOUT].h[i]);
        st = gt_ops_ref.conv2d_bwd(&kr, r0, r1, NULL, ad, ai, aw, &cs);
        double Ki = (double)s->OC * s->KH * s->KW, Kw = (double)s->N * OH * OW;
        for (size_t i = 0; st == GT_OK && i < nin; i++) x0[i] = (Ki + 2) * U32 * r0[i];
        for (size_t i = 0; st == GT_OK && i < nw; i++) x1[i] = (Kw + 2) * U32 * r1[i];
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
                extra[i] = 8.0 * U32 * (t1 + t23) + 4.0 * sqrt(cnt) * U32 * t23 +
                           2.0 * U32 * fabs(old[i]);
            }
    }
    return extra;
}

/* Every array's guard bands on both sides against their sentinels,
 * bitwise. *k is filled only when one changed: a failing check whose name
 * lists each damaged band, "guard past out", "guard before dinp", "ref
 * past out" (the oracle's side), ...; first_bad, got and want are the first
 * changed sentinel's (past: its index, n or more; before: how many elements
 * before the start); n counts every sentinel compared. *bad: whether one
 * changed. */
static gt_status check_guards(gt_kcase *c, gt_kcheck *k, int *bad) {
    *bad = 0;
    memset(k, 0, sizeof *k);
    size_t wl = (size_t)snprintf(c->guard_what, sizeof c->guard_what, "guard");
    gt_status st = GT_OK;
    for (int i = 0; i < KC_MAX_ARR && st == GT_OK; i++)
        for (int side = 0; side < 2 && st == GT_OK; side++) {
            kc_arr *x = &c->a[i];
            if (!x->base[side]) continue;
            gt_backend *be = side ? c->ref : c->be;
            gt_dtype dt = side_dt(x, side);
            size_t es = gt_dtype_size(dt), lead = x->lead[side], tail = KC_GUARD / es;
            size_t cnt = lead + tail;
            unsigned char *got = malloc(cnt * es), *want = NULL;
            void *wv = NULL;
            if (!got) return GT_ERR(GT_ERR_OOM, "no host memory for the guard bands");
            st = guard_values(dt, cnt, i, side, &wv);
            want = wv;
            guard_poison(x, side, 0);
            if (st == GT_OK) st = be->copy_to_host(be, got, x->base[side], lead * es);
            if (st == GT_OK)
                st = be->copy_to_host(be, got + lead * es,
                                      (const char *)x->base[side] + (lead + x->cnt[side]) * es,
                                      tail * es);
            guard_poison(x, side, 1);
            int damaged[2] = {0, 0}; /* before, past */
            for (size_t j = 0; st == GT_OK && j < cnt; j++) {
                if (memcmp(got + j * es, want + j * es, es) == 0) continue;
                if (!k->bad) {
                    float g = 0.0f, w = 0.0f;
                    if (dt == GT_DTYPE_INT32) {
                        int32_t gi, wi;
                        memcpy(&gi, got + j * es, sizeof gi);
                        memcpy(&wi, want + j * es, sizeof wi);
                        g = (float)gi;
                        w = (float)wi;
                    } else {
                        gt_convert(&g, GT_DTYPE_FP32, got + j * es, dt, 1);
                        gt_convert(&w, GT_DTYPE_FP32, want + j * es, dt, 1);
                    }
                    k->what = c->guard_what;
                    k->first_bad = j < lead ? lead - j : x->cnt[side] + (j - lead);
                    k->got_first = g;
                    k->want_first = w;
                    k->max_abs = isnan(g) ? INFINITY : fabs((double)g - w);
                    k->worst = INFINITY;
                }
                damaged[j >= lead] = 1;
                k->bad++;
            }
            for (int p = 0; p < 2; p++)
                if (damaged[p] && wl < sizeof c->guard_what)
                    wl += (size_t)snprintf(c->guard_what + wl, sizeof c->guard_what - wl,
                                           "%s %s%s %s", wl > 5 ? "," : "", side ? "ref " : "",
                                           p ? "past" : "before", arr_name(c->op, i));
            k->n += cnt;
            free(got);
            free(want);
        }
    *bad = k->bad != 0;
    return st;
}

/* Runs `op` (variant inplace) on both sides; GT_ERR_UNSUPPORTED passes
 * through from the backend, a ref failure is an error of its own. */
static gt_status run_both(gt_kcase *c, int inplace) {
    gt_status sr = call(c, 1, c->op, inplace);
    if (sr != GT_OK) return GT_ERR(sr == GT_ERR_UNSUPPORTED ? GT_ERR_INVALID : sr,
                                   "ref %s failed: %s", gt_op_name(c->op), gt_last_error());
    gt_status sb = call(c, 0, c->op, inplace);
    if (sb == GT_OK) sb = c->be->synchronize(c->be);
    return sb;
}

gt_status gt_kcase_check(gt_kcase *c, gt_kcheck ck[GT_KCHECK_MAX], int *n) {
    *n = 0;
    if (!c->ref) return GT_ERR(GT_ERR_INVALID, "gt_kcase_check: case built without a ref backend");
    const gt_kshape *s = &c->sh;
    gt_tolerance tol = gt_dtype_tolerance(c->dt);
    gt_tolerance tf = gt_dtype_tolerance(GT_DTYPE_FP32);
    gt_status st = run_both(c, 0);
    if (st != GT_OK) return st;
    switch (c->op) {
    case GT_OP_ENCODER_FWD: st = check_arr(c, &ck[(*n)++], "out", EN_OUT, tol, NULL); break;
    case GT_OP_ENCODER_BWD: {
        /* A token repeated r times is summed in fp32 with r roundings; the
         * ref rounds once. Bound: r u sum|terms|; with r <= B*T and
         * |dout| ~ N(0,1) we allow (B*T) u * 4 sqrt(B*T) on top of atol. */
        double N = (double)s->B * s->T;
        gt_tolerance tb = tol;
        tb.atol += N * U32 * 4.0 * sqrt(N);
        st = check_arr(c, &ck[(*n)++], "dwte", EN_DWTE, tb, NULL);
        if (st == GT_OK) st = check_arr(c, &ck[(*n)++], "dwpe", EN_DWPE, tb, NULL);
        break;
    }
    case GT_OP_LAYERNORM_FWD:
        /* out = norm * w + b: norm carries the rounding of mean and rstd
         * (fp32) times |x - mean| rstd, up to ~4 for normal inputs. */
        st = check_arr(c, &ck[(*n)++], "out", LN_OUT, scaled(tol, 4.0, 1.0), NULL);
        if (st == GT_OK) st = check_arr(c, &ck[(*n)++], "mean", LN_MEAN, tf, NULL);
        if (st == GT_OK) st = check_arr(c, &ck[(*n)++], "rstd", LN_RSTD, tf, NULL);
        break;
    case GT_OP_LAYERNORM_BWD: {
        /* dinp: dnorm - mean(dnorm) - norm mean(dnorm norm) cancels; each
         * term is O(|dout| |w| |norm|) ~ 16 at 4 sigma: 16 u per ulp of the
         * terms times a few roundings. */
        gt_tolerance td = tol;
        td.atol += 16.0 * 8.0 * U32;
        st = check_arr(c, &ck[(*n)++], "dinp", LN_DINP, td, NULL);
        /* dweight/dbias: sums over N rows in fp32, N u sum|terms| with
         * sum|terms| ~ N E|norm dout| (~0.8 N): allow N^2 u. */
        gt_tolerance tr = tol;
        tr.atol += (double)s->N * s->N * U32;
        if (st == GT_OK) st = check_arr(c, &ck[(*n)++], "dweight", LN_DW, tr, NULL);
        if (st == GT_OK) st = check_arr(c, &ck[(*n)++], "dbias", LN_DB, tr, NULL);
        break;
    }
    case GT_OP_MATMUL_FWD: {
        double *ex = abs_bound(c, 0);
        st = ex ? check_arr(c, &ck[(*n)++], "out", MM_OUT, tol, ex)
                : GT_ERR(GT_ERR_OOM, "no host memory for the matmul bound");
        free(ex);
        break;
    }
    case GT_OP_MATMUL_BWD: {
        /* dweight's accumulated old value is one more term of each sum. */
        double *e1 = abs_bound(c, 1), *e2 = abs_bound(c, 2);
        if (!e1 || !e2) {
            st = GT_ERR(GT_ERR_OOM, "no host memory for the matmul bound");
        } else {
            /* (dinp is overwritten: its old value is not a term) */
            st = check_arr(c, &ck[(*n)++], "dinp", MM_DINP, tol, e1);
            if (st == GT_OK) st = check_dweight_dbias(c, ck, n, tol, e2, s->bias, s->N);
        }
        free(e1);
        free(e2);
        break;
    }
    case GT_OP_MATMUL_GELU_FWD: {
        /* pre as matmul_fwd's out; out: gelu_bound */
        double *e0 = abs_bound(c, 0), *e1 = NULL;
        st = e0 ? check_arr(c, &ck[(*n)++], "pre", MM_PRE, tol, e0)
                : GT_ERR(GT_ERR_OOM, "no host memory for the matmul bound");
        if (st == GT_OK) st = gelu_bound(c, 0, &e1);
        if (st == GT_OK) st = check_arr(c, &ck[(*n)++], "out", MM_OUT, scaled(tol, 4.0, 1.0), e1);
        free(e0);
        free(e1);
        break;
    }
    case GT_OP_MATMUL_DGELU_BWD: {
        /* dpre (overwritten): gelu_bound; dweight, dbias as matmul_bwd's */
        double *e1 = NULL, *e2 = abs_bound(c, 2);
        st = e2 ? gelu_bound(c, 1, &e1) : GT_ERR(GT_ERR_OOM, "no host memory for the matmul bound");
        if (st == GT_OK)
            st = check_arr(c, &ck[(*n)++], "dpre", MM_DINP, scaled(tol, 4.0, 1.0), e1);
        if (st == GT_OK) st = check_dweight_dbias(c, ck, n, tol, e2, s->bias, s->N);
        free(e1);
        free(e2);
        break;
    }
    case GT_OP_ATTENTION_FWD:
    case GT_OP_ATTENTION_BWD: {
        /* Scores are length-hs dot products (hs u sum|q||k| ~ hs u hs), whose
         * error passes through exp into every probability and so into out:
         * allow 8x rtol and hs-scaled atol. */
        int hs = s->C / s->NH;
        gt_tolerance ta = scaled(tol, 8.0, 1.0);
        ta.atol += (double)hs * U32 * 8.0;
        if (c->dt == GT_DTYPE_BF16 || c->dt == GT_DTYPE_FP16) {
            /* Flash attention (cuda's cuDNN path, docs/cuda.md) rounds the
             * probabilities and dS to the storage type before its second
             * matmuls: an error of u sum_j p_j |v_j| per output, up to a
             * few u of the array's largest value, which rtol cannot absorb
             * near zero. Allow 16 u max|want| (u = 2^-8 bf16, 2^-11 fp16). */
            int ai = c->op == GT_OP_ATTENTION_FWD ? AT_OUT : AT_DQKV;
            float *w = malloc(c->a[ai].n ? c->a[ai].n * sizeof(float) : 1);
            st = w ? download(c->ref, GT_DTYPE_FP32, c->a[ai].r, c->a[ai].n, w)
                   : GT_ERR(GT_ERR_OOM, "no host memory for the attention bound");
            double mx = 0.0;
            for (size_t i = 0; st == GT_OK && i < c->a[ai].n; i++)
                if (fabs(w[i]) > mx) mx = fabs(w[i]);
            free(w);
            if (st != GT_OK) break;
            ta.atol += 16.0 * (c->dt == GT_DTYPE_BF16 ? 1.0 / 256.0 : 1.0 / 2048.0) * mx;
        }
        if (c->op == GT_OP_ATTENTION_FWD) {
            st = check_arr(c, &ck[(*n)++], "out", AT_OUT, ta, NULL);
        } else {
            /* dk, dv sum over up to T query rows: add T u * hs. */
            ta.atol += (double)s->T * hs * U32 * 4.0;
            st = check_arr(c, &ck[(*n)++], "dqkv", AT_DQKV, ta, NULL);
        }
        break;
    }
    case GT_OP_GELU_FWD:
        /* GELU: the argument 2u of exp is rounded in fp32, an error of |2u|
         * ulp relative in exp(-2u), i.e. up to ~8 ulp for |x| < 4 where it
         * is not absorbed by atol: 4x rtol. */
        st = check_arr(c, &ck[(*n)++], "out", PW_OUT, scaled(tol, 4.0, 1.0), NULL);
        break;
    case GT_OP_GELU_BWD:
        st = check_arr(c, &ck[(*n)++], "dinp", PW_DINP, scaled(tol, 4.0, 1.0), NULL);
        break;
    case GT_OP_RESIDUAL_FWD:
        st = check_arr(c, &ck[(*n)++], "out", PW_OUT, tol, NULL);
        if (st == GT_OK) st = run_both(c, 1);
        if (st == GT_OK) st = check_arr(c, &ck[(*n)++], "inplace", PW_A, tol, NULL);
        break;
    case GT_OP_RESIDUAL_BWD:
        st = check_arr(c, &ck[(*n)++], "da", PW_DA, tol, NULL);
        if (st == GT_OK) st = check_arr(c, &ck[(*n)++], "db", PW_DB, tol, NULL);
        break;
    case GT_OP_CLASSIFIER_FWD:
    case GT_OP_CLASSIFIER_BWD: {
        /* Losses are lse - x_t with lse ~ log V + max: the fp32 sum of V
         * exponentials (V u relative at worst, sqrt(V) u typically) moves
         * the loss by that relative amount absolutely; allow sqrt(V) u on top. */
        gt_tolerance tl = tf;
        tl.atol += sqrt((double)s->V) * U32 * 8.0;
        if (c->dt != GT_DTYPE_FP32) tl = tol;
        /* Probabilities carry exp's few-ulp error plus the fp32 rounding of
         * x - max (|x - max| ulp relative, up to ~16 for N(0,2) logits). */
        gt_tolerance tp = scaled(tol, 8.0, 1.0);
        if (c->op == GT_OP_CLASSIFIER_FWD) {
            st = check_arr(c, &ck[(*n)++], "losses", CL_LOSSES, tl, NULL);
        } else {
            st = check_arr(c, &ck[(*n)++], "dlogits", CL_DL, tp, NULL);
            if (st == GT_OK) st = check_arr(c, &ck[(*n)++], "losses", CL_LOSSES, tl, NULL);
            if (st == GT_OK) st = run_both(c, 1);
            if (st == GT_OK) st = check_arr(c, &ck[(*n)++], "inplace", CL_LOGITS2, tp, NULL);
        }
        break;
    }
    case GT_OP_ADAMW:
        st = check_arr(c, &ck[(*n)++], "params", OP_P, tf, NULL);
        /* v: g^2 and the blend round a few times; m likewise. */
        if (st == GT_OK) st = check_arr(c, &ck[(*n)++], "m", OP_M, scaled(tf, 2.0, 1.0), NULL);
        if (st == GT_OK) st = check_arr(c, &ck[(*n)++], "v", OP_V, scaled(tf, 2.0, 1.0), NULL);
        break;
    case GT_OP_SUMSQ: {
        /* fp64 accumulation in any fixed order: n 2^-53 relative. */
        gt_kcheck *k = &ck[(*n)++];
        double got = c->sumsq[0], want = c->sumsq[1], err = fabs(got - want);
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
        break;
    }
    case GT_OP_CONV2D_FWD: {
        double *ex = NULL;
        st = conv_bounds(c, 0, &ex, NULL);
        if (st == GT_OK) st = check_arr(c, &ck[(*n)++], "out", CV_OUT, tol, ex);
        free(ex);
        break;
    }
    case GT_OP_CONV2D_BWD: {
        double *e1 = NULL, *e2 = NULL;
        st = conv_bounds(c, 1, &e1, &e2);
        if (st == GT_OK) {
            /* The accumulated old value is one more term of each sum. */
            for (size_t i = 0; i < c->a[CV_DINP].n; i++) e1[i] += 2 * U32 * fabs(c->a[CV_DINP].h[i]);
            for (size_t i = 0; i < c->a[CV_DW].n; i++) e2[i] += 2 * U32 * fabs(c->a[CV_DW].h[i]);
            st = check_arr(c, &ck[(*n)++], "dinp", CV_DINP, tol, e1);
        }
        if (st == GT_OK) st = check_arr(c, &ck[(*n)++], "dweight", CV_DW, tol, e2);
        if (st == GT_OK && s->bias) {
            /* N OH OW-term fp32 sums of N(0,1): ~u per partial sum of size
             * up to that count, 4 cnt u at most in practice. */
            gt_conv2d_shape cs = conv_of(s);
            double cnt = (double)s->N * gt_conv2d_out_h(&cs) * gt_conv2d_out_w(&cs);
            gt_tolerance tr = tol;
            tr.atol += 4.0 * cnt * U32;
            st = check_arr(c, &ck[(*n)++], "dbias", CV_DB, tr, NULL);
        }
        free(e1);
        free(e2);
        break;
    }
    case GT_OP_BATCHNORM_FWD: {
        /* out as layernorm's (norm carries mean's and rstd's fp32 rounding
         * times |x - mean| rstd, up to ~4). The statistics are sums of
         * cnt = N HW terms: a fixed-order fp32 sum of them errs by ~sqrt(cnt)
         * u relative in practice (fp64 on ref and cpu): allow 4 sqrt(cnt) u,
         * which the running statistics inherit. */
        double cnt = (double)s->N * s->H * s->W;
        gt_tolerance ts = tf;
        ts.rtol += 4.0 * sqrt(cnt) * U32;
        ts.atol += 4.0 * sqrt(cnt) * U32;
        st = check_arr(c, &ck[(*n)++], "out", BN_OUT, scaled(tol, 4.0, 1.0), NULL);
        if (st == GT_OK && s->train) st = check_arr(c, &ck[(*n)++], "mean", BN_MEAN, ts, NULL);
        if (st == GT_OK && s->train) st = check_arr(c, &ck[(*n)++], "rstd", BN_RSTD, ts, NULL);
        /* eval mode must leave them as they were: compared all the same */
        if (st == GT_OK) st = check_arr(c, &ck[(*n)++], "running_mean", BN_RM, ts, NULL);
        if (st == GT_OK) st = check_arr(c, &ck[(*n)++], "running_var", BN_RV, ts, NULL);
        break;
    }
    case GT_OP_BATCHNORM_BWD: {
        /* dinp: per-element bound from its three terms (bn_bwd_bound).
         * dweight/dbias: cnt-term sums of O(1) terms, 4 cnt u as conv2d's
         * dbias. */
        double cnt = (double)s->N * s->H * s->W;
        double *ex = bn_bwd_bound(c);
        st = ex ? check_arr(c, &ck[(*n)++], "dinp", BN_DINP, tol, ex)
                : GT_ERR(GT_ERR_OOM, "no host memory for the batchnorm bound");
        free(ex);
        gt_tolerance tr = tol;
        tr.atol += 4.0 * cnt * U32;
        if (st == GT_OK) st = check_arr(c, &ck[(*n)++], "dweight", BN_DW, tr, NULL);
        if (st == GT_OK) st = check_arr(c, &ck[(*n)++], "dbias", BN_DB, tr, NULL);
        break;
    }
    case GT_OP_RELU_FWD:
        /* exact: a select */
        st = check_arr(c, &ck[(*n)++], "out", RL_OUT, tol, NULL);
        if (st == GT_OK) st = run_both(c, 1);
        if (st == GT_OK) st = check_arr(c, &ck[(*n)++], "inplace", RL_A, tol, NULL);
        break;
    case GT_OP_RELU_BWD: st = check_arr(c, &ck[(*n)++], "dinp", RL_DINP, tol, NULL); break;
    case GT_OP_AVGPOOL_FWD: {
        /* mean of HW terms: an fp32 sum errs by <= (HW - 1) u sum|x|, i.e.
         * ~HW u mean|x| after the division (mean|x| ~ 1 here) */
        gt_tolerance ta = tol;
        ta.atol += (double)s->H * s->W * U32;
        st = check_arr(c, &ck[(*n)++], "out", AP_OUT, ta, NULL);
        break;
    }
    case GT_OP_AVGPOOL_BWD:
        /* dout / HW rounded, then added: two roundings where the ref has one */
        st = check_arr(c, &ck[(*n)++], "dinp", AP_DINP, scaled(tol, 2.0, 1.0), NULL);
        break;
    case GT_OP_CAST: {
        /* exact: rounding to nearest even has one answer, widening is exact */
        gt_tolerance t0 = {0};
        st = check_arr(c, &ck[(*n)++], "out", CA_DST, t0, NULL);
        if (st == GT_OK) st = run_both(c, 1);
        if (st == GT_OK) st = check_arr(c, &ck[(*n)++], "widen", CA_WIDE, t0, NULL);
        break;
    }
    default: break;
    }
    /* last, whether any run wrote outside an array */
    int bad = 0;
    if (st == GT_OK && *n < GT_KCHECK_MAX) {
        st = check_guards(c, &ck[*n], &bad);
        if (bad) (*n)++;
    }
    return st;
}

gt_status gt_kcase_run(gt_kcase *c) { return call(c, 0, c->op, 0); }

gt_status gt_kcase_library_best(gt_kcase *c, double *best_s, char *what, size_t what_len) {
    *best_s = 0.0;
    if (what_len) what[0] = '\0';
    if (c->op != GT_OP_MATMUL_FWD || !c->be->gemm_library_best)
        return GT_ERR(GT_ERR_UNSUPPORTED,
                      "no library best for %s on backend %s (matmul_fwd on a backend with a GEMM "
                      "library only)",
                      gt_op_name(c->op), c->be->name);
    const gt_kshape *s = &c->sh;
    return c->be->gemm_library_best(c->be, c->dt, W(c, 0, MM_OUT), P(c, 0, MM_INP), P(c, 0, MM_W),
                                    s->bias ? P(c, 0, MM_B) : NULL, s->N, s->C, s->OC, best_s, what,
                                    what_len);
}

/* ---- work per call ------------------------------------------------------------------
 * FLOPs count the arithmetic of the textbook algorithm (a multiply-add is
 * 2); transcendental functions count 1. Bytes are what a kernel must read
 * and write at least once: inputs read, outputs written, accumulated
 * gradients read and written (2x), in the storage dtype (fp32 for the
 * always-fp32 state). Defined once here so that every backend is judged
 * on the same work. */

double gt_kcase_flops(const gt_kcase *c) {
    const gt_kshape *s = &c->sh;
    double N = (double)s->N, C = s->C, OC = s->OC, n = (double)s->n;
    double BT = (double)s->B * s->T;
    switch (c->op) {
    case GT_OP_ENCODER_FWD: return BT * C;              /* one add per element */
    case GT_OP_ENCODER_BWD: return 2.0 * BT * C;        /* two accumulations */
    case GT_OP_LAYERNORM_FWD: return 8.0 * N * C;       /* mean, var (2), norm (2), scale+shift (2), +1 */
    case GT_OP_LAYERNORM_BWD: return 14.0 * N * C;
    case GT_OP_MATMUL_FWD: return 2.0 * N * C * OC + (s->bias ? N * OC : 0.0);
    case GT_OP_MATMUL_BWD: return 4.0 * N * C * OC + (s->bias ? N * OC : 0.0);
    /* + GELU (8 per element, as gelu_fwd) / GELU' (16, as gelu_bwd) and its product */
    case GT_OP_MATMUL_GELU_FWD: return 2.0 * N * C * OC + (s->bias ? N * OC : 0.0) + 8.0 * N * OC;
    case GT_OP_MATMUL_DGELU_BWD:
        return 4.0 * N * C * OC + (s->bias ? N * OC : 0.0) + 17.0 * N * C;
    case GT_OP_ATTENTION_FWD:
        /* causal: q k^T and att v over T(T+1)/2 pairs per head, 2 flops
         * each per head dimension: 2 * 2 * B NH T(T+1)/2 hs = 2 B T(T+1) C,
         * plus ~5 per score for the softmax */
        return 2.0 * BT * (s->T + 1) * C + 5.0 * s->B * s->NH * s->T * (s->T + 1) / 2.0;
    case GT_OP_ATTENTION_BWD: return 2.0 * (2.0 * BT * (s->T + 1) * C) +
                                     5.0 * s->B * s->NH * s->T * (s->T + 1) / 2.0;
    case GT_OP_GELU_FWD: return 8.0 * n;
    case GT_OP_GELU_BWD: return 16.0 * n;
    case GT_OP_RESIDUAL_FWD: return n;
    case GT_OP_RESIDUAL_BWD: return 2.0 * n;
    case GT_OP_CLASSIFIER_FWD: return 3.0 * N * s->V;   /* max, exp, sum */
    case GT_OP_CLASSIFIER_BWD: return 5.0 * N * s->V;   /* + normalise, subtract */
    case GT_OP_ADAMW: return 15.0 * n;
    case GT_OP_SUMSQ: return 2.0 * n;
    case GT_OP_CONV2D_FWD:
    case GT_OP_CONV2D_BWD: {
        /* 2 N OC OH OW C KH KW per direct convolution (+ the bias); the
         * backward is two of them (dinp, dweight) plus the dbias sum */
        gt_conv2d_shape cs = conv_of(s);
        double nout = N * OC * gt_conv2d_out_h(&cs) * gt_conv2d_out_w(&cs);
        double conv = 2.0 * nout * C * s->KH * s->KW;
        if (c->op == GT_OP_CONV2D_FWD) return conv + (s->bias ? nout : 0.0);
        return 2.0 * conv + (s->bias ? nout : 0.0);
    }
    case GT_OP_BATCHNORM_FWD: /* training: mean, var (2), norm (2), scale+shift (2), +1 */
        return (s->train ? 8.0 : 4.0) * N * C * s->H * s->W;
    case GT_OP_BATCHNORM_BWD: return 12.0 * N * C * s->H * s->W; /* 2 sums, norm twice, dinp */
    case GT_OP_RELU_FWD: return n;
    case GT_OP_RELU_BWD: return n;
    case GT_OP_AVGPOOL_FWD: return N * C * s->H * s->W + N * C; /* adds, then a divide per row */
    case GT_OP_AVGPOOL_BWD: return N * C * s->H * s->W;
    case GT_OP_CAST: return n; /* one conversion per value */
    default: return 0.0;
    }
}

double gt_kcase_bytes(const gt_kcase *c) {
    const gt_kshape *s = &c->sh;
    double e = (double)gt_dtype_size(c->dt);
    double N = (double)s->N, C = s->C, OC = s->OC, n = (double)s->n;
    double BT = (double)s->B * s->T;
    switch (c->op) {
    case GT_OP_ENCODER_FWD: return e * (3.0 * BT * C) + 4.0 * BT; /* wte row, wpe row, out; ids */
    case GT_OP_ENCODER_BWD: return e * (BT * C + 2.0 * BT * C + 2.0 * s->T * C) + 4.0 * BT;
    case GT_OP_LAYERNORM_FWD: return e * (2.0 * N * C + 2.0 * C) + 8.0 * N;
    case GT_OP_LAYERNORM_BWD: return e * (4.0 * N * C + 5.0 * C) + 8.0 * N; /* dout, inp, dinp rw; w, dw/db rw */
    case GT_OP_MATMUL_FWD: return e * (N * C + OC * C + N * OC + (s->bias ? OC : 0.0));
    case GT_OP_MATMUL_BWD: /* dinp written (overwritten), dweight/dbias read and written */
        return e * (N * OC + N * C + OC * C + N * C + 2.0 * OC * C + (s->bias ? 2.0 * OC : 0.0));
    case GT_OP_MATMUL_GELU_FWD: /* inp, weight, bias read; pre and out written */
        return e * (N * C + OC * C + 2.0 * N * OC + (s->bias ? OC : 0.0));
    case GT_OP_MATMUL_DGELU_BWD: /* dout, inp, weight, pre read; dpre written; dweight rw */
        return e * (N * OC + N * C + OC * C + N * C + N * C + 2.0 * OC * C +
                    (s->bias ? 2.0 * OC : 0.0));
    case GT_OP_ATTENTION_FWD: return e * 4.0 * BT * C + 4.0 * s->B * s->NH * (double)s->T * s->T;
    case GT_OP_ATTENTION_BWD: return e * (BT * C + 3.0 * BT * C + 6.0 * BT * C) +
                                     4.0 * s->B * s->NH * (double)s->T * s->T;
    case GT_OP_GELU_FWD: return e * 2.0 * n;
    case GT_OP_GELU_BWD: return e * 4.0 * n;
    case GT_OP_RESIDUAL_FWD: return e * 3.0 * n;
    case GT_OP_RESIDUAL_BWD: return e * 5.0 * n;
    case GT_OP_CLASSIFIER_FWD: return e * N * s->Vp + 8.0 * N;
    case GT_OP_CLASSIFIER_BWD: return e * 2.0 * N * s->Vp + 8.0 * N;
    case GT_OP_ADAMW: return e * n + 24.0 * n; /* grads; params, m, v read and written */
    case GT_OP_SUMSQ: return e * n;
    case GT_OP_CONV2D_FWD:
    case GT_OP_CONV2D_BWD: {
        gt_conv2d_shape cs = conv_of(s);
        double nin = N * C * s->H * s->W, nw = OC * C * s->KH * s->KW;
        double nout = N * OC * gt_conv2d_out_h(&cs) * gt_conv2d_out_w(&cs);
        if (c->op == GT_OP_CONV2D_FWD) return e * (nin + nw + nout + (s->bias ? OC : 0.0));
        /* dout, inp, weight read; dinp, dweight (and dbias) read and written */
        return e * (nout + nin + nw + 2.0 * nin + 2.0 * nw + (s->bias ? 2.0 * OC : 0.0));
    }
    case GT_OP_BATCHNORM_FWD: {
        double nhw = N * C * s->H * s->W;
        /* training: mean, rstd written, running ones read and written; eval:
         * the running ones read */
        return e * (2.0 * nhw + 2.0 * C) + (s->train ? 24.0 * C : 8.0 * C);
    }
    case GT_OP_BATCHNORM_BWD: /* dout, inp, dinp rw; w, dw/db rw; mean, rstd */
        return e * (4.0 * N * C * s->H * s->W + 5.0 * C) + 8.0 * C;
    case GT_OP_RELU_FWD: return e * 2.0 * n;
    case GT_OP_RELU_BWD: return e * 4.0 * n; /* out, dout read, dinp rw */
    case GT_OP_AVGPOOL_FWD: return e * (N * C * s->H * s->W + N * C);
    case GT_OP_AVGPOOL_BWD: return e * (N * C + 2.0 * N * C * s->H * s->W);
    case GT_OP_CAST: return (4.0 + e) * n; /* fp32 read, dt written */
    default: return 0.0;
    }
}

int gt_kcase_compute_bound(const gt_kcase *c) {
    return c->op == GT_OP_MATMUL_FWD || c->op == GT_OP_MATMUL_BWD ||
           c->op == GT_OP_MATMUL_GELU_FWD || c->op == GT_OP_MATMUL_DGELU_BWD ||
           c->op == GT_OP_CONV2D_FWD || c->op == GT_OP_CONV2D_BWD;
}
