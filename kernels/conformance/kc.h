/* The conformance cases' insides, shared by the generic driver
 * (kernels/conformance.c) and the op descriptors, one file per family
 * (kernels/conformance/{gpt2,matmul,vision,optim}.c); not a public header.
 *
 * One descriptor (kc_op) says everything about one op, as ggml's
 * test-backend-ops keeps one test_case per op: its arrays (setup: sizes
 * from the shape, seeded streams, initial values), how it is called on
 * either backend (call), how its outputs are compared with the ref's
 * (check: the tolerances and each per-op allowance with its reason), its
 * work per call (flops, bytes), its shape label and the dimensions it
 * reads. The driver does the rest once: allocation between guard bands,
 * seeding, running on both backends, comparing, guard checks, reporting
 * max abs/rel error. */
#ifndef GT_KERNELS_CONFORMANCE_KC_H
#define GT_KERNELS_CONFORMANCE_KC_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/conformance.h"

#define KC_SEED 20240611u
/* Unit roundoff of fp32 arithmetic: every backend computes in fp32 at least. */
#define KC_U32 (1.0 / 16777216.0)
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

typedef struct kc_op kc_op;

struct gt_kcase {
    gt_backend *be, *ref;
    gt_dtype dt;
    gt_op op;
    const kc_op *desc;
    gt_kshape sh;
    kc_arr a[KC_MAX_ARR];
    double scalar[2];     /* an op's scalar result (sumsq): [0] backend, [1] ref */
    char guard_what[128]; /* the failed guard check's name (gt_kcheck.what) */
};

/* One op's descriptor. Array slots are indices into gt_kcase.a, named by
 * `arrays` (for the guard checks' messages). side 0 is the backend under
 * test (storage dtype c->dt), side 1 the ref (fp32). */
struct kc_op {
    gt_op op;
    const char *const *arrays; /* KC_MAX_ARR at most */
    int narrays;
    /* the dimensions it reads, in the order the kernels suite records them
     * as params ("B T C V"; names of gt_kshape's fields) */
    const char *dims;
    /* the shape's label without the "_off<offset>" suffix (conformance.h) */
    void (*label)(const gt_kshape *s, char *buf, size_t size);
    /* whether the shape is one the op can run (positive dimensions ...) */
    int (*valid)(const gt_kshape *s);
    /* NULL: the op runs at every row of its grid; else at the rows this
     * accepts (batchnorm_fwd alone runs the eval-mode rows) */
    int (*applies)(const gt_kshape *s);
    const struct kc_grid *grid; /* its family's shapes (grid.c) */
    /* builds the arrays (kc_mk, kc_mk_ids, ...) and any saved state */
    gt_status (*setup)(gt_kcase *c);
    /* one call on `side`; inplace: the aliased variant the check also runs */
    gt_status (*call)(gt_kcase *c, int side, int inplace);
    /* after the driver ran the op once on both sides: appends its checks
     * (kc_check) to ck[*n ..) */
    gt_status (*check)(gt_kcase *c, gt_kcheck *ck, int *n);
    /* work per call (definitions at gt_kcase_flops in conformance.c);
     * e: the storage dtype's size in bytes */
    double (*flops)(const gt_kshape *s);
    double (*bytes)(const gt_kshape *s, double e);
    /* distinct bytes one call touches, its working set (a tensor read and
     * written in place counts once); NULL: the same as bytes */
    double (*footprint)(const gt_kshape *s, double e);
    int compute_bound; /* judged against the GEMM peak, not memory bandwidth */
    /* matmul_fwd: the GEMM library's own best on the case's arrays */
    gt_status (*library_best)(gt_kcase *c, double *best_s, char *what, size_t what_len);
};

/* .arrays and .narrays of a descriptor from a static array of names */
#define KC_ARRAYS(names) .arrays = (names), .narrays = (int)(sizeof(names) / sizeof((names)[0]))

/* The families' descriptors (NULL-terminated lists). */
extern const kc_op *const kc_gpt2_ops[];
extern const kc_op *const kc_matmul_ops[];
extern const kc_op *const kc_vision_ops[];
extern const kc_op *const kc_optim_ops[];

/* The shape grid's families (grid.c): a list of rows each. */
typedef struct kc_grid {
    const gt_kgrid_row *rows;
    size_t n;
} kc_grid;
#define KC_GRID(name) (&kc_grid_##name)
#define KC_GRID_DECL(name) extern const kc_grid kc_grid_##name
KC_GRID_DECL(encoder);
KC_GRID_DECL(layernorm);
KC_GRID_DECL(matmul);
KC_GRID_DECL(matmul_gelu);
KC_GRID_DECL(attention);
KC_GRID_DECL(pointwise);
KC_GRID_DECL(classifier);
KC_GRID_DECL(optim);
KC_GRID_DECL(conv2d);
KC_GRID_DECL(image);

/* ---- for the descriptors (conformance.c) ---- */

/* Array i: n values, dist 0 uniform [a, b), 1 normal (mean a, std b) from
 * Philox stream `stream`, rounded to dt (the storage on the backend under
 * test; fp32 for state that is always fp32), on both sides. */
gt_status kc_mk(gt_kcase *c, int i, gt_dtype dt, size_t n, int dist, float a, float b,
                uint64_t stream);
/* Array i: n token ids in [0, range). */
gt_status kc_mk_ids(gt_kcase *c, int i, size_t n, int range, uint64_t stream);
/* Uploads array i's host values again (after set-up changed them), to both sides. */
gt_status kc_refresh(gt_kcase *c, int i);
/* An output the op must overwrite: every 7th value NaN on both sides, so
 * that an op that reads it (accumulates, or scales it by a zero beta) is
 * caught. */
gt_status kc_poison(gt_kcase *c, int i);
/* Reallocates array i on the backend under test for n elements (between
 * fresh guard bands), leaving the ref's as it is. */
gt_status kc_realloc_dev(gt_kcase *c, int i, size_t n);
/* Rounds h (n values) to dt in place. */
gt_status kc_round_to(float *h, size_t n, gt_dtype dt);
/* n values of d (dt, on be) to h (fp32). */
gt_status kc_download(gt_backend *be, gt_dtype dt, const void *d, size_t n, float *h);

/* Array i on `side` as an argument. */
static inline const void *kc_in(gt_kcase *c, int side, int i) {
    return side ? c->a[i].r : c->a[i].d;
}
static inline void *kc_out(gt_kcase *c, int side, int i) {
    return side ? c->a[i].r : c->a[i].d;
}
/* The kernel context and op table of `side`. */
static inline gt_kctx kc_ctx(const gt_kcase *c, int side) {
    gt_kctx k = {side ? c->ref : c->be, side ? GT_DTYPE_FP32 : c->dt};
    return k;
}
const gt_ops *kc_table(const gt_kcase *c, int side);

/* Runs the op (variant inplace) on both sides; GT_ERR_UNSUPPORTED passes
 * through from the backend, a ref failure is an error of its own. */
gt_status kc_run_both(gt_kcase *c, int inplace);

/* Appends the comparison of array i (downloaded from both sides) as check
 * `what`: |g - w| <= tol.atol + tol.rtol |w| + extra[j] (extra: a
 * per-element allowance, or NULL). */
gt_status kc_check(gt_kcase *c, gt_kcheck *ck, int *n, const char *what, int i, gt_tolerance tol,
                   const double *extra);
/* The case's dtype tolerance (contract 1) and fp32's (always-fp32 state). */
static inline gt_tolerance kc_tol(const gt_kcase *c) {
    return gt_dtype_tolerance(c->dt);
}
static inline gt_tolerance kc_tf(void) {
    return gt_dtype_tolerance(GT_DTYPE_FP32);
}
static inline gt_tolerance kc_scaled(gt_tolerance tol, double rtol_mul, double atol_mul) {
    tol.rtol *= rtol_mul;
    tol.atol *= atol_mul;
    return tol;
}
/* Unit roundoff of the storage dtype. */
static inline double kc_unit_roundoff(gt_dtype dt) {
    return dt == GT_DTYPE_BF16 ? 1.0 / 256.0 : dt == GT_DTYPE_FP16 ? 1.0 / 2048.0 : KC_U32;
}

/* A ref backend for saved state computed at set-up: c->ref, or a new one
 * when the case has none (timing only); kc_ref_put gives it back. */
gt_status kc_ref_get(gt_kcase *c, gt_backend **r);
void kc_ref_put(gt_kcase *c, gt_backend *r);

#endif
