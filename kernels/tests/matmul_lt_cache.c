/* kernels.matmul_lt_cache.cuda: the cuda backend's cuBLASLt plan cache
 * (kernels/cuda/matmul.cu, docs/cuda.md "matmul"). Two backends run the
 * same calls from the same inputs: one with GT_CUDA_LT_CACHE=off (every
 * call builds its own descriptors and asks the heuristic, as the backend
 * did before the cache), one with the cache. Every output must be bitwise
 * equal between the two: the cached plan picks the algorithm the uncached
 * path picks, and the per-call pointers (bias, aux) reach the GEMM even
 * though the descriptor is shared (two bias and two aux buffers
 * alternate). Calls: matmul_fwd without and with a bias (the BIAS
 * epilogue: a new plan for a shape already cached without it), with inp 32
 * bytes past an aligned allocation (another alignment: a new plan) and one
 * element past it (no algorithm there on the emulator: the answer is
 * cached too, and the staged call's plan), matmul_bwd (dinp, dweight,
 * dbias), and in bf16 matmul_gelu_fwd / matmul_dgelu_bwd (GELU_AUX_BIAS,
 * DGELU: the aux pointer per call). fp32 and bf16. Then two threads with a
 * backend each share one plan, each with its own bias (the plan's mutex).
 * On the CPU emulator also the counts of its cuBLASLt stand-in
 * (gt_emu_cublaslt_counts): the first call of a new plan asks the heuristic
 * once and creates five descriptors (1 matmul descriptor, 3 layouts, 1
 * preference: exactly, for a call that needs no staging); every repeat asks
 * nothing and creates nothing; the uncached backend asks on every call.
 * An unknown GT_CUDA_LT_CACHE value refuses to create the backend.
 * Exit 77: no GPU. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "gt_config.h"
#include "kernels/tests/testutil.h"

#include <pthread.h>

#if GT_HAVE_CUDA

#define REPS 6 /* calls of each case */

#if GT_CUDA_EMULATOR
/* ci/cuda_emu/cublaslt_emu.cc: heuristic queries, matmul descriptors,
 * layouts, preferences created, matmuls */
void gt_emu_cublaslt_counts(unsigned long long out[5]);
#define HAVE_COUNTS 1
#else
#define HAVE_COUNTS 0
#endif

static int g_fails;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            g_fails++;                                                                             \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                            \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
        }                                                                                          \
    } while (0)

/* queries and descriptors (all kinds) so far; zeros without the emulator */
static void counts(unsigned long long *queries, unsigned long long *descs) {
    *queries = *descs = 0;
#if HAVE_COUNTS
    unsigned long long c[5];
    gt_emu_cublaslt_counts(c);
    *queries = c[0];
    *descs = c[1] + c[2] + c[3];
#endif
}

static gt_backend *new_backend(const char *cache) {
    if (cache)
        setenv("GT_CUDA_LT_CACHE", cache, 1);
    else
        unsetenv("GT_CUDA_LT_CACHE");
    gt_backend *be = tu_backend_or_skip("cuda", 0);
    unsetenv("GT_CUDA_LT_CACHE");
    return be;
}

/* One tensor on both backends: n elements of dt `off` elements past an
 * aligned allocation, from the same seeded values. */
typedef struct pair {
    void *base[2], *d[2];
    size_t bytes;
} pair;

static gt_backend *g_be[2]; /* [0] uncached, [1] cached */

static pair mk(gt_dtype dt, size_t n, int off, uint64_t stream) {
    pair p;
    size_t es = gt_dtype_size(dt);
    p.bytes = n * es;
    float *h = tu_xmalloc(n * sizeof(float));
    gt_rng_fill_normal(h, n, 0.0f, 1.0f, TU_SEED, stream, 0);
    void *raw = tu_xmalloc(p.bytes);
    gt_convert(raw, dt, h, GT_DTYPE_FP32, n);
    for (int b = 0; b < 2; b++) {
        gt_status s = gt_backend_alloc(g_be[b], p.bytes + (size_t)off * es, &p.base[b]);
        if (s != GT_OK) tu_die("alloc", s);
        p.d[b] = (char *)p.base[b] + (size_t)off * es;
        s = g_be[b]->copy_to_device(g_be[b], p.d[b], raw, p.bytes);
        if (s != GT_OK) tu_die("copy_to_device", s);
    }
    free(h);
    free(raw);
    return p;
}

static void rm(pair *p) {
    for (int b = 0; b < 2; b++)
        gt_backend_dealloc(g_be[b], p->base[b]);
}

/* p's bytes on the two backends are equal */
static void same(const pair *p, const char *what, int call) {
    unsigned char *x = tu_xmalloc(p->bytes), *y = tu_xmalloc(p->bytes);
    gt_status s = g_be[0]->copy_to_host(g_be[0], x, p->d[0], p->bytes);
    if (s == GT_OK) s = g_be[1]->copy_to_host(g_be[1], y, p->d[1], p->bytes);
    if (s != GT_OK) tu_die("copy_to_host", s);
    size_t i = 0;
    while (i < p->bytes && x[i] == y[i])
        i++;
    CHECK(i == p->bytes, "%s, call %d: cached and uncached results differ at byte %zu of %zu", what,
          call, i, p->bytes);
    free(x);
    free(y);
}

enum { C_FWD, C_FWD_BIAS, C_FWD_AL32, C_FWD_OFF1, C_BWD, C_GELU, C_DGELU, C_CASES };
static const char *k_case[C_CASES] = {"matmul_fwd",       "matmul_fwd bias", "matmul_fwd inp+32B",
                                      "matmul_fwd inp+1", "matmul_bwd",      "matmul_gelu_fwd",
                                      "matmul_dgelu_bwd"};

/* One call of case c on backend b; `call` picks which of the alternating
 * bias / aux buffers it uses. */
static gt_status run(int b, int c, int call, gt_dtype dt, pair *t, int N, int C, int OC) {
    gt_kctx k = {g_be[b], dt};
    const gt_ops *o = g_be[b]->ops;
    int alt = call & 1;
    /* t: 0 inp, 1 weight, 2 out, 3 bias, 4 bias2, 5 inp+32B, 6 inp+1,
     * 7 dinp, 8 dweight, 9 dbias, 10 dout, 11 pre, 12 pre2, 13 gelu out */
#define D(i) t[i].d[b]
    switch (c) {
    case C_FWD:
        return o->matmul_fwd(&k, D(2), D(0), D(1), NULL, N, C, OC);
    case C_FWD_BIAS:
        return o->matmul_fwd(&k, D(2), D(0), D(1), alt ? D(4) : D(3), N, C, OC);
    case C_FWD_AL32:
        return o->matmul_fwd(&k, D(2), D(5), D(1), NULL, N, C, OC);
    case C_FWD_OFF1:
        return o->matmul_fwd(&k, D(2), D(6), D(1), NULL, N, C, OC);
    case C_BWD:
        return o->matmul_bwd(&k, D(7), D(8), D(9), D(10), D(0), D(1), N, C, OC);
    case C_GELU:
        return o->matmul_gelu_fwd(&k, D(13), alt ? D(12) : D(11), D(0), D(1), alt ? D(4) : D(3), N,
                                  C, OC);
    default: /* C_DGELU: pre (N,C) here: the aux matrix of dinp */
        return o->matmul_dgelu_bwd(&k, D(7), D(8), D(9), D(10), D(0), D(1), alt ? D(12) : D(11), N,
                                   C, OC);
    }
#undef D
}

static void run_dtype(gt_dtype dt) {
    /* OC and C multiples of 8 (the GELU epilogues' aux ld) */
    const int N = 40, C = 24, OC = 32;
    const char *dn = gt_dtype_name(dt);
    size_t es = gt_dtype_size(dt);
    int off32 = (int)(32 / es);
    pair t[14];
    uint64_t st = dt == GT_DTYPE_FP32 ? 100 : 200;
    t[0] = mk(dt, (size_t)N * C, 0, st + 0);
    t[1] = mk(dt, (size_t)OC * C, 0, st + 1);
    t[2] = mk(dt, (size_t)N * OC, 0, st + 2);
    t[3] = mk(dt, (size_t)OC, 0, st + 3);
    t[4] = mk(dt, (size_t)OC, 0, st + 4);
    t[5] = mk(dt, (size_t)N * C, off32, st + 5);
    t[6] = mk(dt, (size_t)N * C, 1, st + 6);
    t[7] = mk(dt, (size_t)N * C, 0, st + 7);
    t[8] = mk(dt, (size_t)OC * C, 0, st + 8);
    t[9] = mk(dt, (size_t)OC, 0, st + 9);
    t[10] = mk(dt, (size_t)N * OC, 0, st + 10);
    /* pre: (N,OC) for the forward, (N,C) read by the backward: N*OC covers both */
    t[11] = mk(dt, (size_t)N * OC, 0, st + 11);
    t[12] = mk(dt, (size_t)N * OC, 0, st + 12);
    t[13] = mk(dt, (size_t)N * OC, 0, st + 13);
    int ncases = dt == GT_DTYPE_FP32 ? C_BWD + 1 : C_CASES;
    for (int c = 0; c < ncases; c++) {
        char what[96];
        snprintf(what, sizeof what, "%s %s N%d C%d OC%d", k_case[c], dn, N, C, OC);
        unsigned long long tq[3] = {0}, td[3] = {0}; /* cached call 0, cached 1.., uncached */
        for (int b = 1; b >= 0; b--) { /* the cached backend first: its plans are new */
            for (int call = 0; call < REPS; call++) {
                unsigned long long q0, d0, q1, d1;
                counts(&q0, &d0);
                gt_status s = run(b, c, call, dt, t, N, C, OC);
                counts(&q1, &d1);
                if (s != GT_OK) tu_die(what, s);
                if (!HAVE_COUNTS) continue;
                unsigned long long q = q1 - q0, d = d1 - d0;
                int slot = b == 0 ? 2 : call == 0 ? 0 : 1;
                tq[slot] += q;
                td[slot] += d;
                /* matmul_bwd: two GEMMs (dinp, dweight); dgelu_bwd too */
                int gemms = c == C_BWD || c == C_DGELU ? 2 : 1;
                if (b == 0) {
                    CHECK(q >= (unsigned long long)gemms,
                          "%s, uncached call %d: %llu heuristic queries, want >= %d", what, call, q,
                          gemms);
                } else if (call > 0) {
                    CHECK(q == 0 && d == 0,
                          "%s, cached call %d: %llu heuristic queries and %llu descriptors "
                          "created, want 0 (the plan of call 0)",
                          what, call, q, d);
                } else if (c != C_FWD_OFF1 && c != C_BWD && c != C_DGELU) {
                    /* a new key, no staging: one plan */
                    CHECK(q == 1 && d == 5,
                          "%s, cached call 0: %llu heuristic queries and %llu descriptors "
                          "created, want 1 and 5 (a new plan)",
                          what, q, d);
                } else {
                    CHECK(q >= 1, "%s, cached call 0: %llu heuristic queries, want >= 1", what, q);
                }
            }
        }
        if (HAVE_COUNTS)
            printf("%s: cached: call 1 %llu heuristic queries, %llu descriptors; calls 2-%d %llu, "
                   "%llu; uncached: %llu, %llu\n",
                   what, tq[0], td[0], REPS, tq[1], td[1], tq[2], td[2]);
        /* every output the case writes, after the same sequence on both */
        if (c <= C_FWD_OFF1) same(&t[2], what, REPS);
        if (c == C_BWD || c == C_DGELU) {
            same(&t[7], what, REPS);
            same(&t[8], what, REPS);
            same(&t[9], what, REPS);
        }
        if (c == C_GELU) {
            same(&t[13], what, REPS);
            same(&t[11], what, REPS);
            same(&t[12], what, REPS);
        }
    }
    /* the alternating bias really reached the GEMM: the last call used the
     * second bias, so out differs from a call with the first */
    for (int b = 0; b < 2; b++) {
        gt_status s = run(b, C_FWD_BIAS, 0, dt, t, N, C, OC);
        if (s != GT_OK) tu_die("matmul_fwd bias", s);
    }
    same(&t[2], "matmul_fwd bias (first bias again)", REPS + 1);
    for (int i = 0; i < 14; i++)
        rm(&t[i]);
}

/* the bias pointer is not frozen into the cached descriptor: two calls
 * that differ only in the bias buffer give different results, each equal
 * to the uncached backend's (checked above); here that they differ */
static void bias_changes(gt_dtype dt) {
    const int N = 8, C = 16, OC = 16;
    pair in = mk(dt, (size_t)N * C, 0, 300), w = mk(dt, (size_t)OC * C, 0, 301);
    pair b1 = mk(dt, OC, 0, 302), b2 = mk(dt, OC, 0, 303);
    pair o1 = mk(dt, (size_t)N * OC, 0, 304), o2 = mk(dt, (size_t)N * OC, 0, 305);
    gt_kctx k = {g_be[1], dt};
    gt_status s = g_be[1]->ops->matmul_fwd(&k, o1.d[1], in.d[1], w.d[1], b1.d[1], N, C, OC);
    if (s == GT_OK) s = g_be[1]->ops->matmul_fwd(&k, o2.d[1], in.d[1], w.d[1], b2.d[1], N, C, OC);
    if (s != GT_OK) tu_die("matmul_fwd", s);
    unsigned char *x = tu_xmalloc(o1.bytes), *y = tu_xmalloc(o2.bytes);
    s = g_be[1]->copy_to_host(g_be[1], x, o1.d[1], o1.bytes);
    if (s == GT_OK) s = g_be[1]->copy_to_host(g_be[1], y, o2.d[1], o2.bytes);
    if (s != GT_OK) tu_die("copy_to_host", s);
    CHECK(memcmp(x, y, o1.bytes) != 0,
          "matmul_fwd %s: two different biases gave the same output (the cached descriptor "
          "kept the first bias pointer?)",
          gt_dtype_name(dt));
    free(x);
    free(y);
    pair *all[] = {&in, &w, &b1, &b2, &o1, &o2};
    for (int i = 0; i < 6; i++)
        rm(all[i]);
}

/* Two threads, each with its own cached backend, its own bias and output,
 * run the same key's GEMM (one shared plan) at once, THREAD_CALLS times;
 * every call's output must be the bits that thread's first call gave
 * alone. The bias pointer is the per-call attribute of the shared matmul
 * descriptor: set by one thread between the other's setting it and its
 * cublasLtMatmul, the other's GEMM would add the wrong bias (the plan's
 * mutex prevents that: without it, on the emulator, whose cuBLASLt
 * stand-in computes in the calling thread and reads the bias pointer
 * during the GEMM, most of the 300 calls got the other thread's bias). */
#define THREAD_CALLS 150
typedef struct worker {
    gt_backend *be;
    void *inp, *w, *bias, *out;
    unsigned char *want, *got;
    size_t bytes;
    int N, C, OC, bad, first_bad;
    gt_status s;
} worker;

static void *worker_run(void *arg) {
    worker *x = arg;
    gt_kctx k = {x->be, GT_DTYPE_FP32};
    for (int i = 0; i < THREAD_CALLS && x->s == GT_OK; i++) {
        x->s = x->be->ops->matmul_fwd(&k, x->out, x->inp, x->w, x->bias, x->N, x->C, x->OC);
        if (x->s == GT_OK) x->s = x->be->copy_to_host(x->be, x->got, x->out, x->bytes);
        if (x->s == GT_OK && memcmp(x->got, x->want, x->bytes) != 0 && x->bad++ == 0)
            x->first_bad = i;
    }
    return NULL;
}

static void threads_share_plan(void) {
    const int N = 64, C = 64, OC = 64;
    worker ws[2];
    memset(ws, 0, sizeof ws);
    for (int t = 0; t < 2; t++) {
        worker *x = &ws[t];
        x->be = t == 0 ? g_be[1] : new_backend(NULL);
        x->N = N;
        x->C = C;
        x->OC = OC;
        x->bytes = (size_t)N * OC * sizeof(float);
        float *h = tu_xmalloc((size_t)N * C * sizeof(float));
        gt_rng_fill_normal(h, (size_t)N * C, 0.0f, 1.0f, TU_SEED, 400, 0);
        x->inp = tu_upload(x->be, GT_DTYPE_FP32, h, (size_t)N * C);
        gt_rng_fill_normal(h, (size_t)OC * C, 0.0f, 1.0f, TU_SEED, 401, 0);
        x->w = tu_upload(x->be, GT_DTYPE_FP32, h, (size_t)OC * C);
        /* each thread's own bias: far apart, so a swapped one shows */
        gt_rng_fill_normal(h, (size_t)OC, t ? 100.0f : -100.0f, 1.0f, TU_SEED, 402 + t, 0);
        x->bias = tu_upload(x->be, GT_DTYPE_FP32, h, (size_t)OC);
        free(h);
        gt_status s = gt_backend_alloc(x->be, x->bytes, &x->out);
        if (s != GT_OK) tu_die("alloc", s);
        x->want = tu_xmalloc(x->bytes);
        x->got = tu_xmalloc(x->bytes);
        gt_kctx k = {x->be, GT_DTYPE_FP32};
        s = x->be->ops->matmul_fwd(&k, x->out, x->inp, x->w, x->bias, N, C, OC);
        if (s == GT_OK) s = x->be->copy_to_host(x->be, x->want, x->out, x->bytes);
        if (s != GT_OK) tu_die("matmul_fwd (alone)", s);
    }
    pthread_t th[2];
    for (int t = 0; t < 2; t++)
        if (pthread_create(&th[t], NULL, worker_run, &ws[t]) != 0) {
            fprintf(stderr, "pthread_create failed\n");
            exit(2);
        }
    for (int t = 0; t < 2; t++)
        pthread_join(th[t], NULL);
    for (int t = 0; t < 2; t++) {
        worker *x = &ws[t];
        if (x->s != GT_OK) tu_die("matmul_fwd (two threads)", x->s);
        CHECK(x->bad == 0,
              "matmul_fwd fp32 bias N%d C%d OC%d, two threads sharing a plan: thread %d got "
              "other bits than alone in %d of %d calls (first: call %d): another thread's bias?",
              N, C, OC, t, x->bad, THREAD_CALLS, x->first_bad);
    }
    printf("matmul_fwd fp32 bias N%d C%d OC%d: two threads, %d calls each on one plan: %d and %d "
           "calls with other bits than alone\n",
           N, C, OC, THREAD_CALLS, ws[0].bad, ws[1].bad);
    for (int t = 0; t < 2; t++) {
        worker *x = &ws[t];
        void *d[] = {x->inp, x->w, x->bias, x->out};
        for (int i = 0; i < 4; i++)
            gt_backend_dealloc(x->be, d[i]);
        free(x->want);
        free(x->got);
    }
    gt_backend_free(ws[1].be);
}

/* Past the table's 1024 keys (matmul.cu's LT_PLANS) a call builds a
 * private plan and frees it: new keys (N = 1, 2, ...) each called twice;
 * once the table is full, the second call of a new key asks the heuristic
 * again, and so does every later key. Results equal the uncached
 * backend's. Emulator only (the counts); last, since it fills the
 * process's table. */
#define FULL_KEYS 1100
static void table_full(void) {
#if HAVE_COUNTS
    const int C = 8, OC = 8;
    pair in = mk(GT_DTYPE_FP32, (size_t)FULL_KEYS * C, 0, 500);
    pair w = mk(GT_DTYPE_FP32, (size_t)OC * C, 0, 501);
    pair out = mk(GT_DTYPE_FP32, (size_t)FULL_KEYS * OC, 0, 502);
    int first_private = -1, cached_after = 0;
    for (int N = 1; N <= FULL_KEYS; N++) {
        unsigned long long q[3], d;
        for (int b = 1; b >= 0; b--) {
            gt_kctx k = {g_be[b], GT_DTYPE_FP32};
            for (int call = 0; call < 2; call++) {
                if (b == 1) counts(&q[call], &d);
                gt_status s =
                    g_be[b]->ops->matmul_fwd(&k, out.d[b], in.d[b], w.d[b], NULL, N, C, OC);
                if (s != GT_OK) tu_die("matmul_fwd (table full)", s);
                if (b == 1 && call == 1) counts(&q[2], &d);
            }
        }
        int private_plan = q[2] - q[1] == 1;
        if (private_plan && first_private < 0) first_private = N;
        if (!private_plan && first_private >= 0) cached_after++;
    }
    same(&out, "matmul_fwd fp32 (table full)", 2);
    CHECK(first_private > 0 && first_private <= 1024 && cached_after == 0,
          "plan table: the first key with a private plan %d (want 1..1024), %d cached keys after "
          "it (want 0)",
          first_private, cached_after);
    printf("plan table: full at the %d-th new key of %d here; later keys ask on every call\n",
           first_private, FULL_KEYS);
    rm(&in);
    rm(&w);
    rm(&out);
#endif
}

#endif /* GT_HAVE_CUDA */

int main(void) {
#if !GT_HAVE_CUDA
    printf("skipped: built without the cuda backend\n");
    return 77;
#else
    /* an unknown value is refused, as GT_CUDA_LT_EPILOGUES's */
    setenv("GT_CUDA_LT_CACHE", "sometimes", 1);
    gt_backend_config cfg = {.threads = 0, .device = -1};
    gt_backend *bad = NULL;
    gt_status s = gt_backend_new("cuda", &cfg, &bad);
    unsetenv("GT_CUDA_LT_CACHE");
    if (s == GT_ERR_UNSUPPORTED) {
        printf("skipped: cuda backend unavailable: %s\n", gt_last_error());
        return 77;
    }
    CHECK(s == GT_ERR_INVALID && !bad, "GT_CUDA_LT_CACHE=sometimes: %s, want GT_ERR_INVALID",
          gt_status_name(s));
    if (bad) gt_backend_free(bad);
    gt_error_clear();

    g_be[0] = new_backend("off");
    g_be[1] = new_backend(NULL);
    if (!HAVE_COUNTS)
        printf("not the emulator: the call counts are not checked, only cached == uncached\n");
    run_dtype(GT_DTYPE_FP32);
    run_dtype(GT_DTYPE_BF16);
    bias_changes(GT_DTYPE_BF16);
    threads_share_plan();
    table_full();
    gt_backend_free(g_be[1]);
    gt_backend_free(g_be[0]);
    if (g_fails) {
        printf("%d check(s) failed\n", g_fails);
        return 1;
    }
    printf("ok\n");
    return 0;
#endif
}
