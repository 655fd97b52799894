/* Helpers shared by the kernel tests: host arrays mirrored on a backend in
 * its storage dtype and on the ref backend in fp32, and the tolerance check
 * of contract 1 with max abs / max rel error reporting. Header-only: each
 * test is one executable. */
#ifndef GT_KERNELS_TESTUTIL_H
#define GT_KERNELS_TESTUTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backend.h"
#include "engine/dtype.h"
#include "engine/rng.h"
#include "kernels/ops.h"
#include "kernels/registry.h"

#define TU_SEED 20240611u

/* Whether element i of p (dtype dt, host memory) is a NaN; integer dtypes
 * never are. bf16/fp16 by their bits: exponent all ones, mantissa nonzero. */
static inline int tu_is_nan(const void *p, gt_dtype dt, size_t i) {
    switch (dt) {
    case GT_DTYPE_FP32:
        return isnan(((const float *)p)[i]);
    case GT_DTYPE_FP64:
        return isnan(((const double *)p)[i]);
    case GT_DTYPE_BF16:
        return (((const uint16_t *)p)[i] & 0x7fff) > 0x7f80;
    case GT_DTYPE_FP16:
        return (((const uint16_t *)p)[i] & 0x7fff) > 0x7c00;
    default:
        return 0;
    }
}

static inline void *tu_xmalloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "out of host memory (%zu bytes)\n", bytes);
        exit(2);
    }
    return p;
}

static inline void tu_die(const char *what, gt_status s) {
    fprintf(stderr, "%s: %s: %s\n", what, gt_status_name(s), gt_last_error());
    exit(2);
}

/* Backend `name` with `threads` threads; a backend this build or machine
 * lacks (no GPU) ends the test as skipped (exit 77), any other failure as
 * an error (exit 2). */
static inline gt_backend *tu_backend_or_skip(const char *name, int threads) {
    gt_backend_config cfg = {.threads = threads, .device = -1};
    gt_backend *be = NULL;
    gt_status s = gt_backend_new(name, &cfg, &be);
    if (s == GT_ERR_UNSUPPORTED) {
        printf("skipped: %s backend unavailable: %s\n", name, gt_last_error());
        exit(77);
    }
    if (s != GT_OK) {
        char what[64];
        snprintf(what, sizeof what, "gt_backend_new(%s)", name);
        tu_die(what, s);
    }
    return be;
}

/* An array of n values: h (host fp32, already rounded to dt), d (on the
 * backend under test, in dt), r (on ref, fp32). */
typedef struct tu_arr {
    size_t n;
    gt_dtype dt;
    float *h;
    void *d;
    void *r;
} tu_arr;

typedef struct tu_ctx {
    gt_backend *be;  /* under test */
    gt_backend *ref; /* oracle */
    gt_dtype dt;     /* storage dtype of the backend under test */
    int checks, fails, skips;
} tu_ctx;

static inline void tu_round(float *h, size_t n, gt_dtype dt) {
    if (dt == GT_DTYPE_FP32) return;
    void *tmp = tu_xmalloc(n * gt_dtype_size(dt));
    gt_convert(tmp, dt, h, GT_DTYPE_FP32, n);
    gt_convert(h, GT_DTYPE_FP32, tmp, dt, n);
    free(tmp);
}

static inline void *tu_upload(gt_backend *be, gt_dtype dt, const float *h, size_t n) {
    void *d = NULL;
    gt_status s = gt_backend_alloc(be, n * gt_dtype_size(dt), &d);
    if (s != GT_OK) tu_die("alloc", s);
    if (n == 0) return d;
    void *tmp = tu_xmalloc(n * gt_dtype_size(dt));
    gt_convert(tmp, dt, h, GT_DTYPE_FP32, n);
    s = be->copy_to_device(be, d, tmp, n * gt_dtype_size(dt));
    if (s != GT_OK) tu_die("copy_to_device", s);
    free(tmp);
    return d;
}

static inline void tu_download(gt_backend *be, gt_dtype dt, const void *d, size_t n, float *h) {
    if (n == 0) return;
    void *tmp = tu_xmalloc(n * gt_dtype_size(dt));
    gt_status s = be->copy_to_host(be, tmp, d, n * gt_dtype_size(dt));
    if (s != GT_OK) tu_die("copy_to_host", s);
    gt_convert(h, GT_DTYPE_FP32, tmp, dt, n);
    free(tmp);
}

/* dist: 0 uniform [a, b), 1 normal (mean a, std b). `dt` is the array's
 * storage on the backend under test (fp32 for state that is always fp32). */
static inline tu_arr tu_mk(tu_ctx *t, gt_dtype dt, size_t n, int dist, float a, float b, uint64_t stream) {
    tu_arr x = {.n = n, .dt = dt};
    x.h = tu_xmalloc(n * sizeof(float));
    if (dist == 0)
        gt_rng_fill_uniform(x.h, n, a, b, TU_SEED, stream, 0);
    else
        gt_rng_fill_normal(x.h, n, a, b, TU_SEED, stream, 0);
    tu_round(x.h, n, dt);
    x.d = tu_upload(t->be, dt, x.h, n);
    x.r = t->ref ? tu_upload(t->ref, GT_DTYPE_FP32, x.h, n) : NULL;
    return x;
}

static inline void tu_free(tu_ctx *t, tu_arr *x) {
    gt_backend_dealloc(t->be, x->d);
    if (t->ref) gt_backend_dealloc(t->ref, x->r);
    free(x->h);
    memset(x, 0, sizeof *x);
}

typedef struct tu_ids {
    int32_t *h;
    void *d, *r;
} tu_ids;

static inline void *tu_upload_raw(gt_backend *be, const void *h, size_t bytes) {
    void *d = NULL;
    gt_status s = gt_backend_alloc(be, bytes, &d);
    if (s != GT_OK) tu_die("alloc", s);
    if (bytes) {
        s = be->copy_to_device(be, d, h, bytes);
        if (s != GT_OK) tu_die("copy_to_device", s);
    }
    return d;
}

/* bytes of device memory d copied into a new host buffer (the caller frees). */
static inline void *tu_download_raw(gt_backend *be, const void *d, size_t bytes) {
    void *h = tu_xmalloc(bytes);
    gt_status s = be->copy_to_host(be, h, d, bytes);
    if (s != GT_OK) tu_die("copy_to_host", s);
    return h;
}

/* n token ids in [0, range). */
static inline tu_ids tu_mk_ids(tu_ctx *t, size_t n, int range, uint64_t stream) {
    tu_ids x;
    x.h = tu_xmalloc(n * sizeof(int32_t));
    for (size_t i = 0; i < n; i++) x.h[i] = (int32_t)(gt_rng_u32(TU_SEED, stream, i) % (uint32_t)range);
    x.d = tu_upload_raw(t->be, x.h, n * sizeof(int32_t));
    x.r = t->ref ? tu_upload_raw(t->ref, x.h, n * sizeof(int32_t)) : NULL;
    return x;
}

static inline void tu_free_ids(tu_ctx *t, tu_ids *x) {
    gt_backend_dealloc(t->be, x->d);
    if (t->ref) gt_backend_dealloc(t->ref, x->r);
    free(x->h);
}

/* Compares got with want element-wise: |g - w| <= atol + rtol |w| + extra[i]
 * (extra may be NULL: the per-element allowance of a reduction bound).
 * Prints max abs and max rel error; returns 1 on pass. */
static inline int tu_compare(tu_ctx *t, const char *op, const char *shape, const char *what,
                      const float *got, const float *want, size_t n, gt_tolerance tol,
                      const double *extra) {
    double max_abs = 0.0, max_rel = 0.0;
    size_t bad = 0, first_bad = 0;
    for (size_t i = 0; i < n; i++) {
        double g = got[i], w = want[i];
        double err = fabs(g - w);
        double lim = tol.atol + tol.rtol * fabs(w) + (extra ? extra[i] : 0.0);
        if (isnan(g) != isnan(w) || !(err <= lim || (isnan(g) && isnan(w)))) {
            if (!bad) first_bad = i;
            bad++;
        }
        if (err > max_abs) max_abs = err;
        if (w != 0.0 && err / fabs(w) > max_rel) max_rel = err / fabs(w);
    }
    t->checks++;
    printf("  %-15s %-26s %-8s max_abs %.3e max_rel %.3e (rtol %.2g atol %.2g)%s", op, shape,
           what, max_abs, max_rel, tol.rtol, tol.atol, bad ? "  FAIL" : "  ok");
    if (bad) {
        t->fails++;
        printf(" %zu bad, first [%zu] got %.9g want %.9g", bad, first_bad, got[first_bad],
               want[first_bad]);
    }
    printf("\n");
    return bad == 0;
}

/* Downloads x from both backends and compares. */
static inline int tu_check(tu_ctx *t, const char *op, const char *shape, const char *what, tu_arr *x,
                    gt_tolerance tol, const double *extra) {
    float *g = tu_xmalloc(x->n * sizeof(float)), *w = tu_xmalloc(x->n * sizeof(float));
    tu_download(t->be, x->dt, x->d, x->n, g);
    tu_download(t->ref, GT_DTYPE_FP32, x->r, x->n, w);
    int ok = tu_compare(t, op, shape, what, g, w, x->n, tol, extra);
    free(g);
    free(w);
    return ok;
}

/* classifier_fwd on a (1,1) row: does the backend store dt? (the probe of
 * the classifier tests' tu_main_each_dtype) */
static inline gt_status tu_probe_classifier(gt_backend *be, gt_dtype dt) {
    gt_kctx k = {be, dt};
    float zero = 0.0f;
    int32_t t0 = 0;
    void *p = tu_upload(be, dt, &zero, 1), *td = tu_upload_raw(be, &t0, sizeof t0);
    float *ld = NULL;
    gt_status s = gt_backend_alloc(be, sizeof(float), (void **)&ld);
    if (s != GT_OK) tu_die("alloc", s);
    s = be->ops->classifier_fwd(&k, ld, p, td, 1, 1, 1);
    gt_backend_dealloc(be, p);
    gt_backend_dealloc(be, td);
    gt_backend_dealloc(be, ld);
    return s;
}

#endif
