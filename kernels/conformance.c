/* The generic conformance driver (kernels/conformance.h): allocation
 * between guard bands, seeded inputs, the run on the backend under test and
 * on the ref, the comparison (max abs/rel error, the worst error over its
 * bound), the guard checks, the shape grid and label. What is particular
 * to an op (its arrays, call, check with its tolerance allowances and their
 * reasons, flops and bytes) is its descriptor, one per op, in
 * kernels/conformance/<family>.c (kc.h). */
#include "kernels/conformance/kc.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/rng.h"
#include "kernels/registry.h"

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

gt_status kc_download(gt_backend *be, gt_dtype dt, const void *d, size_t n, float *h) {
    if (n == 0) return GT_OK;
    void *tmp = malloc(n * gt_dtype_size(dt));
    if (!tmp) return GT_ERR(GT_ERR_OOM, "no host memory for %zu bytes", n * gt_dtype_size(dt));
    gt_status s = be->copy_to_host(be, tmp, d, n * gt_dtype_size(dt));
    if (s == GT_OK) gt_convert(h, GT_DTYPE_FP32, tmp, dt, n);
    free(tmp);
    return s;
}

/* Rounds h (n values) to the storage dtype dt in place. */
gt_status kc_round_to(float *h, size_t n, gt_dtype dt) {
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
gt_status kc_mk(gt_kcase *c, int i, gt_dtype dt, size_t n, int dist, float a, float b,
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
    GT_TRY(kc_round_to(x->h, n, dt));
    gt_status s = kc_alloc(c, i, 0, n);
    if (s == GT_OK) s = put(c->be, dt, x->d, x->h, n);
    if (s == GT_OK && c->ref) s = kc_alloc(c, i, 1, n);
    if (s == GT_OK && c->ref) s = put(c->ref, GT_DTYPE_FP32, x->r, x->h, n);
    return s;
}

/* n token ids in [0, range). */
gt_status kc_mk_ids(gt_kcase *c, int i, size_t n, int range, uint64_t stream) {
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
gt_status kc_refresh(gt_kcase *c, int i) {
    kc_arr *x = &c->a[i];
    gt_status s = put(c->be, x->dt, x->d, x->h, x->n);
    if (s == GT_OK && c->ref) s = put(c->ref, GT_DTYPE_FP32, x->r, x->h, x->n);
    return s;
}

/* Array i of an output the op must overwrite: every 7th value NaN (on both
 * sides), so that an op that reads it (accumulates, or scales it by a zero
 * beta) is caught. */
gt_status kc_poison(gt_kcase *c, int i) {
    kc_arr *x = &c->a[i];
    for (size_t j = 0; j < x->n; j += 7) x->h[j] = NAN;
    return kc_refresh(c, i);
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


/* ---- descriptors ---------------------------------------------------------------- */

static const kc_op *const *const kc_families[] = {kc_gpt2_ops, kc_matmul_ops, kc_vision_ops,
                                                  kc_optim_ops};

/* op's descriptor, or NULL. */
static const kc_op *kc_desc(gt_op op) {
    for (size_t f = 0; f < sizeof kc_families / sizeof kc_families[0]; f++)
        for (const kc_op *const *d = kc_families[f]; *d; d++)
            if ((*d)->op == op) return *d;
    return NULL;
}

/* Array i's name in the case's op, for messages. */
static const char *arr_name(const kc_op *d, int i) {
    return i >= 0 && i < d->narrays && d->arrays[i] ? d->arrays[i] : "?";
}

const gt_ops *kc_table(const gt_kcase *c, int side) { return side ? &gt_ops_ref : c->be->ops; }

gt_status kc_realloc_dev(gt_kcase *c, int i, size_t n) {
    gt_backend_dealloc(c->be, c->a[i].base[0]);
    c->a[i].base[0] = c->a[i].d = NULL;
    return kc_alloc(c, i, 0, n);
}

gt_status kc_ref_get(gt_kcase *c, gt_backend **r) {
    *r = c->ref;
    if (*r) return GT_OK;
    gt_backend_config cfg = {.threads = 1, .device = -1};
    return gt_backend_new("ref", &cfg, r);
}

void kc_ref_put(gt_kcase *c, gt_backend *r) {
    if (r != c->ref) gt_backend_free(r);
}

/* ---- the shape grid and labels ------------------------------------------------------ */

const gt_kgrid_row *gt_kgrid_row_at(gt_op op, size_t i) {
    const kc_op *d = kc_desc(op);
    if (!d) return NULL;
    for (size_t j = 0; j < d->grid->n; j++)
        if (!d->applies || d->applies(&d->grid->rows[j].sh)) {
            if (i == 0) return &d->grid->rows[j];
            i--;
        }
    return NULL;
}

const char *gt_kshape_label(gt_op op, const gt_kshape *s, char *buf, size_t size) {
    const kc_op *d = kc_desc(op);
    if (d)
        d->label(s, buf, size);
    else
        snprintf(buf, size, "n%zu", s->n);
    size_t len = strlen(buf);
    if (s->offset && len < size) snprintf(buf + len, size - len, "_off%d", s->offset);
    return buf;
}

int gt_kshape_dims(gt_op op, const gt_kshape *sh, const char *names[GT_KDIMS_MAX],
                   long long values[GT_KDIMS_MAX]) {
    static const struct {
        const char *name;
        size_t off;
        int is_size;
    } fields[] = {
#define KC_FIELD(f) {#f, offsetof(gt_kshape, f), 0}
        KC_FIELD(B),  KC_FIELD(T),  KC_FIELD(C),      KC_FIELD(OC),  KC_FIELD(NH),
        KC_FIELD(V),  KC_FIELD(Vp), KC_FIELD(N),      {"n", offsetof(gt_kshape, n), 1},
        KC_FIELD(bias), KC_FIELD(step), KC_FIELD(H),  KC_FIELD(W),   KC_FIELD(KH),
        KC_FIELD(KW), KC_FIELD(stride), KC_FIELD(pad), KC_FIELD(train), KC_FIELD(drift),
#undef KC_FIELD
    };
    const kc_op *d = kc_desc(op);
    int n = 0;
    for (const char *p = d ? d->dims : ""; *p && n < GT_KDIMS_MAX;) {
        size_t len = strcspn(p, " ");
        for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++)
            if (strlen(fields[f].name) == len && !strncmp(fields[f].name, p, len)) {
                const char *at = (const char *)sh + fields[f].off;
                names[n] = fields[f].name;
                values[n++] = fields[f].is_size ? (long long)*(const size_t *)at
                                                : (long long)*(const int *)at;
                break;
            }
        p += len;
        while (*p == ' ') p++;
    }
    return n;
}

/* ---- the case ------------------------------------------------------------------- */

gt_status gt_kcase_new(gt_backend *be, gt_backend *ref, gt_dtype dt, gt_op op,
                       const gt_kshape *sh, gt_kcase **out) {
    *out = NULL;
    if ((unsigned)op >= GT_OP_COUNT) return GT_ERR(GT_ERR_INVALID, "op %d out of range", (int)op);
    const kc_op *d = kc_desc(op);
    if (!d) return GT_ERR(GT_ERR_INVALID, "%s: no conformance descriptor", gt_op_name(op));
    if (!gt_ops_slot(be->ops, op))
        return GT_ERR(GT_ERR_UNSUPPORTED, "%s: empty slot on backend %s", gt_op_name(op),
                      be->name);
    if (!d->valid(sh) || sh->offset < 0) {
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
    c->desc = d;
    c->sh = *sh;
    gt_status st = d->setup(c);
    if (st != GT_OK) {
        gt_kcase_free(c);
        return st;
    }
    *out = c;
    return GT_OK;
}

/* ---- comparison ---------------------------------------------------------------- */

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
    if (s == GT_OK) s = kc_download(c->be, x->dt, x->d, x->n, g);
    if (s == GT_OK) s = kc_download(c->ref, GT_DTYPE_FP32, x->r, x->n, w);
    if (s == GT_OK) compare(k, what, g, w, x->n, tol, extra);
    free(g);
    free(w);
    return s;
}

gt_status kc_check(gt_kcase *c, gt_kcheck *ck, int *n, const char *what, int i,
                   gt_tolerance tol, const double *extra) {
    return check_arr(c, &ck[(*n)++], what, i, tol, extra);
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
                                           p ? "past" : "before", arr_name(c->desc, i));
            k->n += cnt;
            free(got);
            free(want);
        }
    *bad = k->bad != 0;
    return st;
}

gt_status kc_run_both(gt_kcase *c, int inplace) {
    gt_status sr = c->desc->call(c, 1, inplace);
    if (sr != GT_OK) return GT_ERR(sr == GT_ERR_UNSUPPORTED ? GT_ERR_INVALID : sr,
                                   "ref %s failed: %s", gt_op_name(c->op), gt_last_error());
    gt_status sb = c->desc->call(c, 0, inplace);
    if (sb == GT_OK) sb = c->be->synchronize(c->be);
    return sb;
}


gt_status gt_kcase_check(gt_kcase *c, gt_kcheck ck[GT_KCHECK_MAX], int *n) {
    *n = 0;
    if (!c->ref) return GT_ERR(GT_ERR_INVALID, "gt_kcase_check: case built without a ref backend");
    gt_status st = kc_run_both(c, 0);
    if (st != GT_OK) return st;
    st = c->desc->check(c, ck, n);
    /* last, whether any run wrote outside an array */
    int bad = 0;
    if (st == GT_OK && *n < GT_KCHECK_MAX) {
        st = check_guards(c, &ck[*n], &bad);
        if (bad) (*n)++;
    }
    return st;
}

gt_status gt_kcase_run(gt_kcase *c) { return c->desc->call(c, 0, 0); }

gt_status gt_kcase_library_best(gt_kcase *c, double *best_s, char *what, size_t what_len) {
    *best_s = 0.0;
    if (what_len) what[0] = '\0';
    if (!c->desc->library_best || !c->be->gemm_library_best)
        return GT_ERR(GT_ERR_UNSUPPORTED,
                      "no library best for %s on backend %s (matmul_fwd on a backend with a GEMM "
                      "library only)",
                      gt_op_name(c->op), c->be->name);
    return c->desc->library_best(c, best_s, what, what_len);
}

/* ---- work per call ------------------------------------------------------------------
 * FLOPs count the arithmetic of the textbook algorithm (a multiply-add is
 * 2); transcendental functions count 1. Bytes are what a kernel must read
 * and write at least once: inputs read, outputs written, accumulated
 * gradients read and written (2x), in the storage dtype (fp32 for the
 * always-fp32 state). Each descriptor defines its op's; the definitions
 * live with the ops so that every backend is judged on the same work. */

double gt_kcase_flops(const gt_kcase *c) { return c->desc->flops(&c->sh); }

double gt_kcase_bytes(const gt_kcase *c) {
    return c->desc->bytes(&c->sh, (double)gt_dtype_size(c->dt));
}

double gt_kcase_footprint(const gt_kcase *c) {
    double b = gt_kcase_bytes(c);
    if (!c->desc->footprint) return b;
    double f = c->desc->footprint(&c->sh, (double)gt_dtype_size(c->dt));
    return f < b ? f : b;
}

int gt_kcase_compute_bound(const gt_kcase *c) { return c->desc->compute_bound; }
