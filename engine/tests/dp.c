/* engine.dp.self (self communicator) and engine.dp.mpi_np{2,4} (the same
 * program under mpirun: the communicator is "auto"): data parallelism with
 * fp32, bf16 and fp16 gradient buffers.
 *
 * For every gradient dtype, mode (buckets started from the backward's hook,
 * the deterministic tree, ZeRO-1, ZeRO-1 with the tree) and memory (host
 * memory of the ref backend, and a fake device backend whose memory holds
 * every byte XOR 0x5a, readable only through its copy functions, so that a
 * buffer handed to the host communicator without staging sums garbage):
 *   - small-integer gradients whose sums are exact in every dtype and order:
 *     every element of this rank's summed shard is checked;
 *   - the gradient norm equals the chunked fp64 sum of squares of the exact
 *     sums, bitwise;
 *   - ZeRO-1's parameter all-gather fills every rank's shard;
 *   - ZeRO-3's gradient buckets (cut at given units' starts too) give the
 *     same exact sums, and its unit gathers (two in flight at once) fill
 *     exactly the gathered units with their owners' weights, in every
 *     storage dtype, staged through host memory on the fake device;
 *   - the deterministic tree over 8 random leaves spread over the ranks
 *     (each rank reduces its own leaves first with residual_fwd in the
 *     gradient dtype) gives the bits of one tree over all 8 leaves, whatever
 *     the rank count;
 *   - staging copies happen with more than one rank, and none with one.
 * Plus the configuration errors. Exit: 0 pass, 1 a check failed. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backend.h"
#include "engine/comm.h"
#include "engine/dp.h"
#include "engine/rng.h"
#include "engine/tests/check.h"
#include "kernels/ops.h"
#include "kernels/registry.h"

static int g_rank, g_size;

#define RCHECK(cond, ...)                                                              \
    do {                                                                               \
        if (!(cond)) fprintf(stderr, "[rank %d] ", g_rank);                            \
        CHECK(cond, __VA_ARGS__);                                                      \
    } while (0)

static const gt_dtype k_gdt[] = {GT_DTYPE_FP32, GT_DTYPE_BF16, GT_DTYPE_FP16};

/* ---- the fake device: ref's ops, memory scrambled ------------------------------ */

static size_t g_to_host, g_to_dev; /* bytes through the fake device's copies */
static gt_ops g_fake_ops;

static void xor_copy(void *dst, const void *src, size_t bytes) {
    unsigned char *d = dst;
    const unsigned char *s = src;
    for (size_t i = 0; i < bytes; i++) d[i] = s[i] ^ 0x5a;
}
static gt_status fake_to_dev(gt_backend *be, void *dst, const void *src, size_t bytes) {
    (void)be;
    g_to_dev += bytes;
    xor_copy(dst, src, bytes);
    return GT_OK;
}
static gt_status fake_to_host(gt_backend *be, void *dst, const void *src, size_t bytes) {
    (void)be;
    g_to_host += bytes;
    xor_copy(dst, src, bytes);
    return GT_OK;
}
/* zeroes as the fake device stores them (scrambled, not counted as staging) */
static gt_status fake_memset_zero(gt_backend *be, void *dst, size_t bytes) {
    (void)be;
    memset(dst, 0x5a, bytes);
    return GT_OK;
}
/* sumsq reads the device through a host copy (not counted as staging) */
static gt_status fake_sumsq(const gt_kctx *k, const void *x, size_t n, double *out) {
    size_t bytes = n * gt_dtype_size(k->dt);
    void *h = malloc(bytes ? bytes : 1);
    if (!h) return GT_ERR(GT_ERR_OOM, "fake sumsq");
    xor_copy(h, x, bytes);
    gt_status s = gt_ops_ref.sumsq(k, h, n, out);
    free(h);
    return s;
}

static gt_backend *new_backend(int fake_device) {
    gt_backend_config cfg = {.threads = 1, .device = -1};
    gt_backend *be = NULL;
    CHECK_OK(gt_backend_new("ref", &cfg, &be));
    if (be && fake_device) {
        g_fake_ops = gt_ops_ref;
        g_fake_ops.sumsq = fake_sumsq;
        be->ops = &g_fake_ops;
        be->device = GT_DEVICE_CUDA;
        be->copy_to_device = fake_to_dev;
        be->copy_to_host = fake_to_host;
        be->memset_zero = fake_memset_zero;
    }
    return be;
}

/* ---- values ------------------------------------------------------------------- */

static void set_el(void *buf, gt_dtype dt, size_t i, double v) {
    switch (dt) {
    case GT_DTYPE_BF16: ((uint16_t *)buf)[i] = gt_fp32_to_bf16((float)v); break;
    case GT_DTYPE_FP16: ((uint16_t *)buf)[i] = gt_fp32_to_fp16((float)v); break;
    default: ((float *)buf)[i] = (float)v; break;
    }
}
static double get_el(const void *buf, gt_dtype dt, size_t i) {
    switch (dt) {
    case GT_DTYPE_BF16: return gt_bf16_to_fp32(((const uint16_t *)buf)[i]);
    case GT_DTYPE_FP16: return gt_fp16_to_fp32(((const uint16_t *)buf)[i]);
    default: return ((const float *)buf)[i];
    }
}

/* Rank q's gradient at g: an integer in [-3, 3] (0 in the padding), so every
 * partial sum over <= 4 ranks is exact even in bf16. */
static double val(int q, size_t g, size_t n) {
    return g < n ? (double)((int)((g * 3 + (size_t)q * 5) % 7) - 3) : 0.0;
}
static double sum_val(size_t g, size_t n) {
    double s = 0;
    for (int q = 0; q < g_size; q++) s += val(q, g, n);
    return s;
}

static void *upload(gt_backend *be, const void *h, size_t bytes) {
    void *d = NULL;
    CHECK_OK(gt_backend_alloc(be, bytes, &d));
    if (d) CHECK_OK(be->copy_to_device(be, d, h, bytes));
    return d;
}

/* gt_dp_new, checked; on failure the backend is freed and NULL returned. */
static gt_dp *open_dp(gt_comm *comm, gt_backend *be, const gt_dp_config *cfg, size_t n) {
    gt_dp *dp = NULL;
    CHECK_OK(gt_dp_new(comm, be, cfg, n, &dp));
    if (!dp) gt_backend_free(be);
    return dp;
}

/* ---- exact sums, norm, gather ------------------------------------------------- */

/* The gradients in pieces (gt_dp_set_grad_source): each asked range must lie
 * inside one of the pieces cut at 0, 77, 1234 and 4100; the pieces are views
 * of one buffer here, so the sums are checked as for the one buffer. */
typedef struct pieces {
    char *base;
    size_t es, calls, outside;
} pieces;
static void *piece_src(void *ctx, size_t lo, size_t hi) {
    pieces *p = ctx;
    static const size_t starts[] = {0, 77, 1234, 4100, (size_t)-1};
    int i = 0;
    while (starts[i + 1] <= lo) i++;
    p->calls++;
    p->outside += hi > starts[i + 1];
    return p->base + lo * p->es;
}

/* hook_stop: the lowest frontier the backward's hook reports (0: all the way
 * down; 5: no hook call at all, gt_dp_finish starts every bucket); in_pieces:
 * ZeRO-2/3 read through a gradient source, gt_dp_begin given no buffer */
static void exact_case(gt_comm *comm, int fake, gt_dtype dt, int zero, int det, int hook_stop,
                       int in_pieces) {
    const size_t n = 5003, chunk = 64; /* 5003: the last bucket is partial (250 and 500 elements a bucket) */
    char what[96];
    snprintf(what, sizeof what, "%s %s%s%s%s%s", gt_dtype_name(dt), fake ? "device" : "host",
             zero == 3 ? " zero3" : zero == 2 ? " zero2" : zero ? " zero1" : "", det ? " det" : "",
             hook_stop ? " no hook" : "", in_pieces ? " in pieces" : "");
    gt_backend *be = new_backend(fake);
    if (!be) return;
    gt_dp_config cfg = gt_dp_defaults();
    cfg.grad_dtype = dt;
    cfg.zero = zero;
    cfg.deterministic = det;
    cfg.chunk = chunk;
    cfg.bucket_bytes = 1000; /* many buckets: 250 fp32 or 500 bf16/fp16 elements each */
    static const size_t cuts[] = {1234, 77, 4100}; /* ZeRO-3's units' starts (any order) */
    if (zero == 3 || in_pieces) {
        cfg.cuts = cuts;
        cfg.ncuts = 3;
    }
    gt_dp *dp = open_dp(comm, be, &cfg, n);
    if (!dp) return;
    size_t padded = gt_dp_padded(dp), es = gt_dtype_size(dt), lo, hi;
    gt_dp_shard(dp, &lo, &hi);
    RCHECK(padded >= n && padded % (chunk * (size_t)g_size) == 0, "%s: padded %zu", what, padded);
    RCHECK(zero ? hi - lo == padded / (size_t)g_size && lo == (size_t)g_rank * (hi - lo)
                : lo == 0 && hi == padded,
           "%s: shard [%zu, %zu)", what, lo, hi);
    void *h = malloc(padded * 8);
    for (size_t g = 0; g < padded; g++) set_el(h, dt, g, val(g_rank, g, n));
    void *grads = upload(be, h, padded * es);
    g_to_host = g_to_dev = 0;
    pieces pc = {.base = grads, .es = es};
    if (in_pieces) {
        CHECK_OK(gt_dp_set_grad_source(dp, piece_src, &pc));
        CHECK_OK(gt_dp_begin(dp, NULL));
    } else {
        CHECK_OK(gt_dp_begin(dp, grads));
    }
    /* the backward's hook: the frontier moves from the end to the start */
    for (int f = 4; f >= hook_stop; f--) CHECK_OK(gt_dp_grads_ready(dp, n * (size_t)f / 4));
    void *shard = NULL;
    double exposed = -1;
    CHECK_OK(gt_dp_finish(dp, &shard, &exposed));
    RCHECK(exposed >= 0, "%s: exposed time %g", what, exposed);
    RCHECK(!in_pieces || (pc.calls > 0 && pc.outside == 0 && gt_dp_range_reduced(dp, 0, n)),
           "%s: %zu reads of the pieces, %zu across a piece's end", what, pc.calls, pc.outside);
    size_t staged = g_to_host + g_to_dev;
    if (!fake || g_size == 1)
        RCHECK(staged == 0, "%s: %zu bytes staged", what, staged);
    else /* back in: the shard's sums (ZeRO-2: its real elements, [lo, hi) within n) */
        RCHECK(g_to_host >= n * es &&
                   g_to_dev >= (zero >= 2 ? (hi < n ? hi : n) - (lo < n ? lo : n)
                                          : (hi - lo < n ? hi - lo : n)) * es,
               "%s: staged %zu bytes out, %zu in", what, g_to_host, g_to_dev);
    RCHECK(g_size == 1 || gt_dp_bytes(dp) >= n * es,
           "%s: %zu bytes communicated", what, gt_dp_bytes(dp));
    /* this rank's summed shard */
    if (shard) {
        CHECK_OK(be->copy_to_host(be, h, shard, (hi - lo) * es));
        size_t bad = 0, first = 0;
        for (size_t i = 0; i < hi - lo && lo + i < n; i++)
            if (get_el(h, dt, i) != sum_val(lo + i, n) && !bad++) first = i;
        RCHECK(bad == 0, "%s: %zu wrong sums, first [%zu] = %g, want %g", what, bad, lo + first,
               get_el(h, dt, first), sum_val(lo + first, n));
    }
    /* the norm: chunked sums of squares in chunk order */
    double norm = -1, ss = 0;
    CHECK_OK(gt_dp_grad_norm(dp, &norm));
    for (size_t c = 0; c < padded / chunk; c++) {
        double part = 0;
        for (size_t g = c * chunk; g < (c + 1) * chunk; g++) part += sum_val(g, n) * sum_val(g, n);
        ss += part;
    }
    RCHECK(norm == sqrt(ss), "%s: norm %.17g, want %.17g", what, norm, sqrt(ss));
    /* ZeRO-1/2/3: everyone's shard of the fp32 params reaches everyone */
    float *p = malloc(padded * sizeof(float));
    for (size_t g = 0; g < padded; g++)
        p[g] = g >= lo && g < hi ? (float)(g % 1000) + 0.25f * (float)g_rank : -1.0f;
    void *dparams = upload(be, p, padded * sizeof(float));
    CHECK_OK(gt_dp_gather_params(dp, dparams));
    CHECK_OK(be->copy_to_host(be, p, dparams, padded * sizeof(float)));
    size_t bad = 0, shard_n = zero ? padded / (size_t)g_size : padded;
    for (size_t g = 0; g < padded; g++) {
        int owner = zero ? (int)(g / shard_n) : g_rank;
        bad += p[g] != (float)(g % 1000) + 0.25f * (float)owner;
    }
    RCHECK(bad == 0, "%s: %zu parameters wrong after the gather", what, bad);
    gt_backend_dealloc(be, dparams);
    gt_backend_dealloc(be, grads);
    free(p);
    free(h);
    gt_dp_free(dp);
    gt_backend_free(be);
}

/* ---- ZeRO-3: units of weights gathered from their owners --------------------------- */

/* The weight at g as its owner holds it: exact in every dtype. */
static double wval(size_t g) { return (double)((int)(g % 97) - 48) * 0.5; }

/* Units [0, 777), [777, 2000), [2000, 2001) of the padded layout, each in
 * a buffer of its own in dt holding this rank's part (-100 elsewhere, a
 * value wval never takes): gathered with two in flight at once (the
 * prefetch), tested in between, waited out of order; every element must
 * then be its owner's on every rank. */
static void gather_case(gt_comm *comm, int fake, gt_dtype dt) {
    const size_t n = 5003;
    char what[64];
    snprintf(what, sizeof what, "zero3 gather %s %s", gt_dtype_name(dt), fake ? "device" : "host");
    gt_backend *be = new_backend(fake);
    if (!be) return;
    gt_dp_config cfg = gt_dp_defaults();
    cfg.zero = 3;
    cfg.chunk = 64;
    cfg.grad_dtype = dt;
    gt_dp *dp = open_dp(comm, be, &cfg, n);
    if (!dp) return;
    size_t padded = gt_dp_padded(dp), es = gt_dtype_size(dt), lo, hi;
    gt_dp_shard(dp, &lo, &hi);
    void *h = malloc(padded * es);
    for (size_t g = 0; g < padded; g++) set_el(h, dt, g, g >= lo && g < hi ? wval(g) : -100.0);
    size_t units[4] = {0, 777, 2000, 2001}, b0 = gt_dp_bytes(dp);
    void *w[3];
    for (int u = 0; u < 3; u++)
        w[u] = upload(be, (char *)h + units[u] * es, (units[u + 1] - units[u]) * es);
    gt_dp_gather *g[3] = {NULL, NULL, NULL};
    g_to_host = g_to_dev = 0;
    CHECK_OK(gt_dp_gather_start(dp, w[0], dt, units[0], units[1], &g[0]));
    CHECK_OK(gt_dp_gather_start(dp, w[1], dt, units[1], units[2], &g[1]));
    if (g[0]) CHECK_OK(gt_dp_gather_test(dp, g[0]));
    CHECK_OK(gt_dp_gather_wait(dp, g[1]));
    CHECK_OK(gt_dp_gather_start(dp, w[2], dt, units[2], units[3], &g[2]));
    CHECK_OK(gt_dp_gather_wait(dp, g[0]));
    CHECK_OK(gt_dp_gather_wait(dp, g[2]));
    size_t moved = gt_dp_bytes(dp) - b0;
    RCHECK(moved == (g_size > 1 ? units[3] * es : 0), "%s: %zu bytes counted", what, moved);
    /* staged: this rank's part of the gathered units out, the rest in */
    size_t own = (hi < units[3] ? hi : units[3]) - (lo < units[3] ? lo : units[3]);
    int staged = fake && g_size > 1;
    RCHECK(g_to_host == (staged ? own * es : 0) &&
               g_to_dev == (staged ? (units[3] - own) * es : 0),
           "%s: staged %zu out, %zu in", what, g_to_host, g_to_dev);
    for (int u = 0; u < 3; u++)
        CHECK_OK(be->copy_to_host(be, (char *)h + units[u] * es, w[u],
                                  (units[u + 1] - units[u]) * es));
    size_t bad = 0, first = 0;
    for (size_t x = 0; x < units[3]; x++)
        if (get_el(h, dt, x) != wval(x) && !bad++) first = x;
    RCHECK(bad == 0, "%s: %zu wrong weights, first [%zu] = %g", what, bad, first,
           get_el(h, dt, first));
    for (int u = 0; u < 3; u++) gt_backend_dealloc(be, w[u]);
    free(h);
    gt_dp_free(dp);
    gt_backend_free(be);
}

/* ---- the deterministic tree over leaves ------------------------------------------- */

#define LEAVES 8

/* Leaf l: seeded normal values rounded to dt (host, dt storage). */
static void leaf(void *out, gt_dtype dt, size_t n, int l) {
    float *f = malloc(n * sizeof(float));
    gt_rng_fill_normal(f, n, 0.0f, 1.0f, 424242u, (uint64_t)l, 0);
    gt_convert(out, dt, f, GT_DTYPE_FP32, n);
    free(f);
}

/* Balanced tree over leaves [a, b) (a power-of-two count), left operand
 * first, each node residual_fwd of the ref backend in dt. */
static void leaf_tree(gt_backend *ref, gt_dtype dt, size_t n, int a, int b, void *out) {
    if (b - a == 1) {
        leaf(out, dt, n, a);
        return;
    }
    void *right = malloc(n * gt_dtype_size(dt));
    int m = (a + b) / 2;
    leaf_tree(ref, dt, n, a, m, out);
    leaf_tree(ref, dt, n, m, b, right);
    gt_kctx k = {.be = ref, .dt = dt};
    CHECK_OK(ref->ops->residual_fwd(&k, out, out, right, n));
    free(right);
}

static void tree_case(gt_comm *comm, int fake, gt_dtype dt, int zero) {
    if (LEAVES % g_size) return;
    const size_t n = 3001;
    gt_backend *ref = new_backend(0), *be = new_backend(fake);
    if (!ref || !be) return;
    gt_dp_config cfg = gt_dp_defaults();
    cfg.grad_dtype = dt;
    cfg.deterministic = 1;
    cfg.zero = zero;
    cfg.chunk = 32;
    gt_dp *dp = NULL;
    CHECK_OK(gt_dp_new(comm, be, &cfg, n, &dp));
    if (dp) {
        size_t es = gt_dtype_size(dt), padded = gt_dp_padded(dp), lo, hi;
        gt_dp_shard(dp, &lo, &hi);
        int per = LEAVES / g_size;
        void *h = calloc(padded, es), *want = malloc(n * es);
        leaf_tree(ref, dt, n, g_rank * per, (g_rank + 1) * per, h);
        leaf_tree(ref, dt, n, 0, LEAVES, want);
        void *grads = upload(be, h, padded * es);
        void *shard = NULL;
        CHECK_OK(gt_dp_begin(dp, grads));
        CHECK_OK(gt_dp_finish(dp, &shard, NULL));
        if (shard) {
            CHECK_OK(be->copy_to_host(be, h, shard, (hi - lo) * es));
            size_t m = hi < n ? hi - lo : (lo < n ? n - lo : 0);
            RCHECK(memcmp(h, (char *)want + lo * es, m * es) == 0,
                   "%s %s%s: the tree over %d leaves on %d ranks differs from one tree",
                   gt_dtype_name(dt), fake ? "device" : "host", zero ? " zero" : "", LEAVES,
                   g_size);
        }
        gt_backend_dealloc(be, grads);
        free(h);
        free(want);
        gt_dp_free(dp);
    }
    gt_backend_free(be);
    gt_backend_free(ref);
}

static void errors(gt_comm *comm) {
    gt_backend *be = new_backend(0);
    if (!be) return;
    gt_dp *dp = NULL;
    gt_dp_config cfg = gt_dp_defaults();
    CHECK(cfg.grad_dtype == GT_DTYPE_FP32, "default gradient dtype %s",
          gt_dtype_name(cfg.grad_dtype));
    cfg.grad_dtype = GT_DTYPE_INT32;
    CHECK_STATUS(gt_dp_new(comm, be, &cfg, 100, &dp), GT_ERR_INVALID);
    cfg.grad_dtype = GT_DTYPE_FP64;
    CHECK_STATUS(gt_dp_new(comm, be, &cfg, 100, &dp), GT_ERR_INVALID);
    CHECK(dp == NULL, "no gt_dp on error");
    cfg = gt_dp_defaults();
    cfg.chunk = 0;
    CHECK_STATUS(gt_dp_new(comm, be, &cfg, 100, &dp), GT_ERR_INVALID);
    cfg = gt_dp_defaults();
    cfg.zero = 4; /* ZeRO stages 0 to 3 only */
    CHECK_STATUS(gt_dp_new(comm, be, &cfg, 100, &dp), GT_ERR_INVALID);
    cfg = gt_dp_defaults();
    cfg.ncuts = 2; /* cuts without their offsets */
    CHECK_STATUS(gt_dp_new(comm, be, &cfg, 100, &dp), GT_ERR_INVALID);
    /* a unit's gather is ZeRO-3's, and inside the padded buffer */
    for (int zero = 2; zero <= 3; zero++) {
        cfg = gt_dp_defaults();
        cfg.zero = zero;
        CHECK_OK(gt_dp_new(comm, be, &cfg, 100, &dp));
        if (!dp) continue;
        gt_dp_gather *g = NULL;
        float w[1];
        if (zero == 2) CHECK_STATUS(gt_dp_gather_start(dp, w, GT_DTYPE_FP32, 0, 1, &g), GT_ERR_INVALID);
        else CHECK_STATUS(gt_dp_gather_start(dp, w, GT_DTYPE_FP32, 0, gt_dp_padded(dp) + 1, &g),
                          GT_ERR_INVALID);
        CHECK(g == NULL, "no gather on error");
        CHECK_OK(gt_dp_gather_wait(dp, NULL));
        gt_dp_free(dp);
        dp = NULL;
    }
    cfg.zero = -1;
    CHECK_STATUS(gt_dp_new(comm, be, &cfg, 100, &dp), GT_ERR_INVALID);
    /* the fixed tree needs a power-of-two rank count: 3 of 4 ranks are refused */
    gt_comm *three = NULL;
    CHECK_OK(gt_comm_split(comm, g_size == 4 && g_rank == 0 ? -1 : 0, g_rank, &three));
    if (three && gt_comm_size(three) == 3) {
        cfg = gt_dp_defaults();
        cfg.deterministic = 1;
        CHECK_STATUS(gt_dp_new(three, be, &cfg, 100, &dp), GT_ERR_INVALID);
        CHECK(dp == NULL, "no gt_dp on 3 ranks");
    }
    gt_comm_free(three);
    /* a new step while a bucket of the last one is in flight (more than one
     * rank: the hook starts it). Rank 0 starts its bucket while the others
     * wait for its message before starting theirs, so rank 0's all-reduce
     * cannot have completed when it asks; gt_dp_finish then completes it */
    cfg = gt_dp_defaults();
    CHECK_OK(gt_dp_new(comm, be, &cfg, 100, &dp));
    if (dp) {
        void *gbuf = NULL;
        int32_t token = 1;
        CHECK_OK(gt_backend_alloc(be, gt_dp_padded(dp) * sizeof(float), &gbuf));
        if (gbuf) CHECK_OK(be->memset_zero(be, gbuf, gt_dp_padded(dp) * sizeof(float)));
        CHECK_OK(gt_dp_begin(dp, gbuf));
        if (g_rank == 0) {
            CHECK_OK(gt_dp_grads_ready(dp, 0));
            if (g_size > 1) CHECK_STATUS(gt_dp_begin(dp, gbuf), GT_ERR_INVALID);
            for (int r = 1; r < g_size; r++)
                CHECK_OK(gt_comm_send(comm, &token, 1, GT_DTYPE_INT32, r, 7, NULL));
        } else {
            CHECK_OK(gt_comm_recv(comm, &token, 1, GT_DTYPE_INT32, 0, 7, NULL));
            CHECK_OK(gt_dp_grads_ready(dp, 0));
        }
        void *shard = NULL;
        CHECK_OK(gt_dp_finish(dp, &shard, NULL));
        gt_backend_dealloc(be, gbuf);
        gt_dp_free(dp);
        dp = NULL;
    }
    /* gradients in pieces: only where the sync reduces bucket by bucket to
     * owners (ZeRO-2/3, several ranks); no buffer and no source is refused */
    for (int zero = 1; zero <= 2; zero++)
        for (int det = 0; det < 2; det++) {
            cfg = gt_dp_defaults();
            cfg.zero = zero;
            cfg.deterministic = det;
            CHECK_OK(gt_dp_new(comm, be, &cfg, 100, &dp));
            if (!dp) continue;
            int ok = zero == 2 && g_size > 1;
            CHECK_STATUS(gt_dp_set_grad_source(dp, piece_src, NULL), ok ? GT_OK : GT_ERR_INVALID);
            if (!ok) CHECK_STATUS(gt_dp_begin(dp, NULL), GT_ERR_INVALID);
            gt_dp_free(dp);
            dp = NULL;
        }
    /* the norm before the reduction finished */
    cfg = gt_dp_defaults();
    cfg.grad_dtype = GT_DTYPE_BF16;
    CHECK_OK(gt_dp_new(comm, be, &cfg, 100, &dp));
    if (dp) {
        double norm;
        CHECK_STATUS(gt_dp_grad_norm(dp, &norm), GT_ERR_INVALID);
        gt_dp_free(dp);
    }
    gt_backend_free(be);
}

int main(void) {
    gt_comm_config cc = gt_comm_defaults();
    cc.timeout_s = 120;
    gt_comm *comm = NULL;
    CHECK_OK(gt_comm_world(&cc, &comm));
    if (!comm) return check_done("engine.dp");
    g_rank = gt_comm_rank(comm);
    g_size = gt_comm_size(comm);
    if (g_rank == 0)
        printf("engine.dp: %s communicator, %d rank%s\n", gt_comm_backend_name(comm), g_size,
               g_size == 1 ? "" : "s");
    errors(comm);
    for (size_t d = 0; d < sizeof k_gdt / sizeof k_gdt[0]; d++) {
        for (int fake = 0; fake < 2; fake++) {
            for (int zero = 0; zero <= 3; zero++)
                for (int det = 0; det < 2; det++) exact_case(comm, fake, k_gdt[d], zero, det, 0, 0);
            exact_case(comm, fake, k_gdt[d], 0, 0, 5, 0);
            exact_case(comm, fake, k_gdt[d], 2, 0, 5, 0);
            exact_case(comm, fake, k_gdt[d], 3, 0, 5, 0);
            for (int zero = 2; zero <= 3 && g_size > 1; zero++) /* the gradients in pieces */
                for (int det = 0; det < 2; det++)
                    for (int stop = 0; stop <= 5; stop += 5)
                        exact_case(comm, fake, k_gdt[d], zero, det, stop, 1);
            gather_case(comm, fake, k_gdt[d]);
            tree_case(comm, fake, k_gdt[d], 0);
            tree_case(comm, fake, k_gdt[d], 1);
        }
    }
    /* every rank's verdict, so that one rank's failure fails the job */
    int32_t mine = g_check_failures, total = 0;
    CHECK_OK(gt_comm_allreduce(comm, &mine, &total, 1, GT_DTYPE_INT32, GT_REDOP_SUM, NULL));
    if (total && !g_check_failures) g_check_failures = 1;
    gt_comm_free(comm);
    return g_rank == 0 || g_check_failures ? check_done("engine.dp") : 0;
}
