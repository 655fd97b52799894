/* The mpi communicator on 1, 2 or 4 ranks (engine.comm.mpi_np{1,2,4}).
 *
 * Every collective x dtype x reduction, in place and out of place, with
 * small-integer inputs whose exact result is known whatever order MPI sums
 * in; wrong elements are counted. Then non-blocking + test/wait, a
 * send/recv ring, split into even/odd, chunked counts (GT_COMM_MPI_CHUNK),
 * the tree all-reduce (bitwise equal to a sequential tree over the
 * allgathered partials, and the same bits for 8 leaves spread over 1, 2 or
 * 4 ranks), and the watchdog on a receive no one sends.
 *
 * `--bench` instead times gt_comm_allreduce (with and without the watchdog)
 * and gt_comm_allreduce_tree against the library's MPI_Allreduce
 * (docs/distributed.md has the table and the command). */
#define _POSIX_C_SOURCE 200809L

#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/comm.h"
#include "engine/rng.h"
#include "engine/tests/check.h"
#include "engine/timer.h"

static int g_rank, g_size;

/* Failures carry the rank: four processes print into one log. */
#define RCHECK(cond, ...)                                                              \
    do {                                                                               \
        if (!(cond)) fprintf(stderr, "[rank %d] ", g_rank);                            \
        CHECK(cond, __VA_ARGS__);                                                      \
    } while (0)

static const gt_dtype k_dtypes[] = {GT_DTYPE_FP32, GT_DTYPE_FP64, GT_DTYPE_BF16,
                                    GT_DTYPE_FP16, GT_DTYPE_INT32, GT_DTYPE_INT64};
#define N_DTYPES (sizeof k_dtypes / sizeof k_dtypes[0])

static void set_el(void *buf, gt_dtype dt, size_t i, double v) {
    switch (dt) {
    case GT_DTYPE_FP32: ((float *)buf)[i] = (float)v; break;
    case GT_DTYPE_FP64: ((double *)buf)[i] = v; break;
    case GT_DTYPE_BF16: ((uint16_t *)buf)[i] = gt_fp32_to_bf16((float)v); break;
    case GT_DTYPE_FP16: ((uint16_t *)buf)[i] = gt_fp32_to_fp16((float)v); break;
    case GT_DTYPE_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case GT_DTYPE_INT64: ((int64_t *)buf)[i] = (int64_t)v; break;
    default: break;
    }
}

static double get_el(const void *buf, gt_dtype dt, size_t i) {
    switch (dt) {
    case GT_DTYPE_FP32: return ((const float *)buf)[i];
    case GT_DTYPE_FP64: return ((const double *)buf)[i];
    case GT_DTYPE_BF16: return gt_bf16_to_fp32(((const uint16_t *)buf)[i]);
    case GT_DTYPE_FP16: return gt_fp16_to_fp32(((const uint16_t *)buf)[i]);
    case GT_DTYPE_INT32: return ((const int32_t *)buf)[i];
    case GT_DTYPE_INT64: return (double)((const int64_t *)buf)[i];
    default: return 0;
    }
}

/* Rank q's value at global index g: integers in [-3, 3], so every partial
 * sum over <= 4 ranks is exact even in bf16, in any order. */
static double val(int q, size_t g) { return (double)((int)((g * 3 + (size_t)q * 5) % 7) - 3); }

/* The exact result of op over all ranks at g. */
static double expect(gt_redop op, gt_dtype dt, size_t g) {
    double s = 0, mx = -1e300, mn = 1e300;
    for (int q = 0; q < g_size; q++) {
        double v = val(q, g);
        s += v;
        mx = v > mx ? v : mx;
        mn = v < mn ? v : mn;
    }
    switch (op) {
    case GT_REDOP_SUM: return s;
    case GT_REDOP_AVG:
        /* integers: C division truncates; power-of-two sizes keep floats exact */
        if (dt == GT_DTYPE_INT32 || dt == GT_DTYPE_INT64) return (double)((long)s / g_size);
        return s / g_size;
    case GT_REDOP_MAX: return mx;
    default: return mn;
    }
}

static size_t count_wrong(const void *buf, gt_dtype dt, size_t n, size_t g0, gt_redop op) {
    size_t wrong = 0;
    for (size_t i = 0; i < n; i++)
        if (get_el(buf, dt, i) != expect(op, dt, g0 + i)) wrong++;
    return wrong;
}

static void *xmalloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "out of memory (%zu bytes)\n", bytes);
        abort();
    }
    return p;
}

/* ---- every collective x dtype x op ------------------------------------------------ */

static void test_reductions(gt_comm *c, size_t n) {
    int last = g_size - 1;
    for (size_t k = 0; k < N_DTYPES; k++) {
        gt_dtype dt = k_dtypes[k];
        size_t es = gt_dtype_size(dt);
        unsigned char *send = xmalloc(n * es * (size_t)g_size);
        unsigned char *recv = xmalloc(n * es * (size_t)g_size);
        for (int op = 0; op < GT_REDOP_COUNT; op++) {
            gt_redop o = (gt_redop)op;
            const char *dn = gt_dtype_name(dt), *on = gt_redop_name(o);
            for (int in_place = 0; in_place < 2; in_place++) {
                /* allreduce */
                for (size_t i = 0; i < n; i++) set_el(send, dt, i, val(g_rank, i));
                memset(recv, 0xCD, n * es);
                void *out = in_place ? (void *)send : (void *)recv;
                CHECK_OK(gt_comm_allreduce(c, send, out, n, dt, o, NULL));
                size_t w = count_wrong(out, dt, n, 0, o);
                RCHECK(w == 0, "allreduce %s %s in_place %d: %zu of %zu wrong", dn, on,
                       in_place, w, n);

                /* reduce to the last rank (not 0: the root must be honoured) */
                for (size_t i = 0; i < n; i++) set_el(send, dt, i, val(g_rank, i));
                memset(recv, 0xCD, n * es);
                out = in_place ? (void *)send : (void *)recv;
                CHECK_OK(gt_comm_reduce(c, send, out, n, dt, o, last, NULL));
                if (g_rank == last) {
                    w = count_wrong(out, dt, n, 0, o);
                    RCHECK(w == 0, "reduce %s %s in_place %d: %zu of %zu wrong", dn, on,
                           in_place, w, n);
                }

                /* reduce_scatter: block r of the global vector lands on rank r */
                for (size_t i = 0; i < n * (size_t)g_size; i++)
                    set_el(send, dt, i, val(g_rank, i));
                memset(recv, 0xCD, n * es);
                out = in_place ? (void *)send : (void *)recv;
                CHECK_OK(gt_comm_reduce_scatter(c, send, out, n, dt, o, NULL));
                w = count_wrong(out, dt, n, (size_t)g_rank * n, o);
                RCHECK(w == 0, "reduce_scatter %s %s in_place %d: %zu of %zu wrong", dn, on,
                       in_place, w, n);
            }
        }
        free(send);
        free(recv);
    }
}

static void test_data_movement(gt_comm *c, size_t n) {
    int root = 1 % g_size;
    for (size_t k = 0; k < N_DTYPES; k++) {
        gt_dtype dt = k_dtypes[k];
        size_t es = gt_dtype_size(dt), total = n * (size_t)g_size;
        const char *dn = gt_dtype_name(dt);
        unsigned char *send = xmalloc(total * es), *recv = xmalloc(total * es);
        size_t w = 0;

        /* broadcast from rank 1 */
        for (size_t i = 0; i < n; i++) set_el(send, dt, i, g_rank == root ? val(root, i) : -7);
        CHECK_OK(gt_comm_broadcast(c, send, n, dt, root, NULL));
        w = 0;
        for (size_t i = 0; i < n; i++) w += get_el(send, dt, i) != val(root, i);
        RCHECK(w == 0, "broadcast %s: %zu of %zu wrong", dn, w, n);

        /* allgather, three ways: apart, send == recv, send == my block */
        for (int mode = 0; mode < 3; mode++) {
            memset(recv, 0xCD, total * es);
            void *src = send;
            if (mode == 1) src = recv;
            if (mode == 2) src = recv + (size_t)g_rank * n * es;
            for (size_t i = 0; i < n; i++) set_el(mode ? recv : send, dt,
                                                  (mode ? (size_t)g_rank * n : 0) + i,
                                                  val(g_rank, i));
            CHECK_OK(gt_comm_allgather(c, src, recv, n, dt, NULL));
            w = 0;
            for (int q = 0; q < g_size; q++)
                for (size_t i = 0; i < n; i++) w += get_el(recv, dt, (size_t)q * n + i) != val(q, i);
            RCHECK(w == 0, "allgather %s mode %d: %zu of %zu wrong", dn, mode, w, total);
        }

        /* alltoall: element e of the block for rank j from rank q is q*16+j*4+e%4 */
        for (int j = 0; j < g_size; j++)
            for (size_t e = 0; e < n; e++)
                set_el(send, dt, (size_t)j * n + e, g_rank * 16 + j * 4 + (double)(e % 4));
        memset(recv, 0xCD, total * es);
        CHECK_OK(gt_comm_alltoall(c, send, recv, n, dt, NULL));
        w = 0;
        for (int q = 0; q < g_size; q++)
            for (size_t e = 0; e < n; e++)
                w += get_el(recv, dt, (size_t)q * n + e) != q * 16 + g_rank * 4 + (double)(e % 4);
        RCHECK(w == 0, "alltoall %s: %zu of %zu wrong", dn, w, total);
        free(send);
        free(recv);
    }
    CHECK_OK(gt_comm_barrier(c, NULL));
}

/* ---- non-blocking, ring, split, chunks ----------------------------------------------- */

static void test_nonblocking(gt_comm *c) {
    enum { N = 4099 };
    float *a = xmalloc(N * sizeof *a), *b = xmalloc(N * sizeof *b);
    double *d = xmalloc(N * sizeof *d);
    for (size_t i = 0; i < N; i++) {
        a[i] = (float)val(g_rank, i);
        d[i] = g_rank == 0 ? (double)i : -1;
    }
    gt_comm_request *r1 = NULL, *r2 = NULL;
    /* Two operations in flight at once, completed in the opposite order. */
    CHECK_OK(gt_comm_allreduce(c, a, b, N, GT_DTYPE_FP32, GT_REDOP_SUM, &r1));
    CHECK_OK(gt_comm_broadcast(c, d, N, GT_DTYPE_FP64, 0, &r2));
    CHECK_OK(gt_comm_wait(c, r2));
    int done = 0;
    uint64_t t0 = gt_now_ns();
    while (!done && gt_now_ns() - t0 < 30000000000ull) CHECK_OK(gt_comm_test(c, r1, &done));
    RCHECK(done, "non-blocking allreduce did not complete by test");
    RCHECK(count_wrong(b, GT_DTYPE_FP32, N, 0, GT_REDOP_SUM) == 0, "non-blocking allreduce");
    size_t w = 0;
    for (size_t i = 0; i < N; i++) w += d[i] != (double)i;
    RCHECK(w == 0, "non-blocking broadcast: %zu wrong", w);

    gt_comm_request *rb = NULL;
    CHECK_OK(gt_comm_barrier(c, &rb));
    CHECK_OK(gt_comm_wait(c, rb));
    free(a);
    free(b);
    free(d);
}

/* gt_comm_barrier_idle: the last rank arrives 300 ms late; the others wait
 * for it asleep: they use a small part of a core (CPU time, which a loaded
 * machine does not inflate), and still see the barrier complete. */
static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void test_barrier_idle(gt_comm *c) {
    CHECK_OK(gt_comm_barrier(c, NULL));
    double w0 = gt_now_ns() * 1e-9, c0 = cpu_s();
    if (g_rank == g_size - 1) {
        struct timespec ts = {0, 300000000};
        nanosleep(&ts, NULL);
    }
    CHECK_OK(gt_comm_barrier_idle(c));
    double wall = gt_now_ns() * 1e-9 - w0, cpu = cpu_s() - c0;
    if (g_size > 1 && g_rank != g_size - 1) {
        RCHECK(wall >= 0.25, "barrier_idle returned after %.3f s, before the late rank", wall);
        RCHECK(cpu < 0.1 * wall, "barrier_idle used %.3f s of CPU in %.3f s of waiting", cpu,
               wall);
    }
}

static void test_ring(gt_comm *c) {
    enum { N = 100000 }; /* past the eager limit: a rendezvous ring must not deadlock */
    int next = (g_rank + 1) % g_size, prev = (g_rank + g_size - 1) % g_size;
    int64_t *out = xmalloc(N * sizeof *out), *in = xmalloc(N * sizeof *in);
    for (size_t i = 0; i < N; i++) out[i] = (int64_t)g_rank * 1000000 + (int64_t)i;
    gt_comm_request *rr = NULL;
    CHECK_OK(gt_comm_recv(c, in, N, GT_DTYPE_INT64, prev, 11, &rr));
    CHECK_OK(gt_comm_send(c, out, N, GT_DTYPE_INT64, next, 11, NULL));
    CHECK_OK(gt_comm_wait(c, rr));
    size_t w = 0;
    for (size_t i = 0; i < N; i++) w += in[i] != (int64_t)prev * 1000000 + (int64_t)i;
    RCHECK(w == 0, "ring from rank %d: %zu of %d wrong", prev, w, N);
    free(out);
    free(in);
}

static void test_split(gt_comm *c) {
    gt_comm *s = NULL;
    int color = g_rank % 2;
    /* key = -rank: the new order is reversed, so key (not old rank) must rule */
    CHECK_OK(gt_comm_split(c, color, -g_rank, &s));
    if (!s) return;
    int members = 0, my_new = 0;
    for (int q = g_size - 1; q >= 0; q--) {
        if (q % 2 != color) continue;
        if (q == g_rank) my_new = members;
        members++;
    }
    RCHECK(gt_comm_size(s) == members && gt_comm_rank(s) == my_new,
           "split color %d: size %d rank %d, want %d %d", color, gt_comm_size(s),
           gt_comm_rank(s), members, my_new);
    for (int r = 0; r < gt_comm_size(s); r++) {
        int want = -1, m = 0;
        for (int q = g_size - 1; q >= 0; q--) {
            if (q % 2 != color) continue;
            if (m++ == r) want = q;
        }
        RCHECK(gt_comm_world_rank(s, r) == want, "split: world rank of %d is %d, want %d", r,
               gt_comm_world_rank(s, r), want);
    }
    int64_t x = g_rank, sum = 0, want = 0;
    for (int q = color; q < g_size; q += 2) want += q;
    CHECK_OK(gt_comm_allreduce(s, &x, &sum, 1, GT_DTYPE_INT64, GT_REDOP_SUM, NULL));
    RCHECK(sum == want, "allreduce on color %d: %lld, want %lld", color, (long long)sum,
           (long long)want);
    gt_comm_stats st;
    gt_comm_get_stats(s, &st);
    RCHECK(st.ops == 1 && st.bytes == 8, "split stats: %llu ops %llu bytes",
           (unsigned long long)st.ops, (unsigned long long)st.bytes);
    gt_comm_free(s);

    s = (gt_comm *)1;
    CHECK_OK(gt_comm_split(c, g_rank == 0 ? -1 : 0, 0, &s));
    RCHECK((g_rank == 0) == (s == NULL), "color -1 gives no communicator");
    if (s && g_size == 4) {
        float f = 1;
        /* three ranks: the fixed tree needs a power of two */
        CHECK_STATUS(gt_comm_allreduce_tree(s, &f, 1, GT_DTYPE_FP32), GT_ERR_INVALID);
    }
    gt_comm_free(s);
}

/* Counts above the per-call limit go as several MPI calls: exercised with a
 * limit of 7 elements instead of INT_MAX. */
static void test_chunks(void) {
    setenv("GT_COMM_MPI_CHUNK", "7", 1);
    gt_comm *c = NULL;
    gt_comm_config cfg = {.backend = "mpi", .timeout_s = 60};
    CHECK_OK(gt_comm_world(&cfg, &c));
    unsetenv("GT_COMM_MPI_CHUNK");
    if (!c) return;
    test_reductions(c, 30);
    size_t n = 50;
    int root = g_size - 1;
    float *b = xmalloc(n * sizeof *b);
    for (size_t i = 0; i < n; i++) b[i] = g_rank == root ? (float)i : -1.0f;
    CHECK_OK(gt_comm_broadcast(c, b, n, GT_DTYPE_FP32, root, NULL));
    size_t w = 0;
    for (size_t i = 0; i < n; i++) w += b[i] != (float)i;
    RCHECK(w == 0, "chunked broadcast: %zu wrong", w);
    free(b);
    test_ring(c);
    gt_comm_free(c);
}

/* ---- tree all-reduce --------------------------------------------------------------------- */

/* Balanced binary tree over v[0..n), left operand first: the shape the
 * header promises ((v0 + v1) + (v2 + v3)) for any power of two. */
static void tree_sum_f32(float *const *v, int n, size_t m, float *out) {
    if (n == 1) {
        memcpy(out, v[0], m * sizeof *out);
        return;
    }
    float *l = xmalloc(m * sizeof *l), *r = xmalloc(m * sizeof *r);
    tree_sum_f32(v, n / 2, m, l);
    tree_sum_f32(v + n / 2, n / 2, m, r);
    for (size_t i = 0; i < m; i++) out[i] = l[i] + r[i];
    free(l);
    free(r);
}

static void tree_sum_f64(double *const *v, int n, size_t m, double *out) {
    if (n == 1) {
        memcpy(out, v[0], m * sizeof *out);
        return;
    }
    double *l = xmalloc(m * sizeof *l), *r = xmalloc(m * sizeof *r);
    tree_sum_f64(v, n / 2, m, l);
    tree_sum_f64(v + n / 2, n / 2, m, r);
    for (size_t i = 0; i < m; i++) out[i] = l[i] + r[i];
    free(l);
    free(r);
}

/* Values over many magnitudes, both signs: most sums round, so a different
 * order gives different bits. */
static double leaf_value(int leaf, size_t i) {
    double u = gt_rng_uniform_f64(1234, (uint64_t)leaf, i);
    double e = gt_rng_uniform_f64(1234, 100 + (uint64_t)leaf, i);
    return (u - 0.5) * __builtin_pow(2.0, (int)(e * 40) - 20);
}

static uint64_t fnv1a(const void *p, size_t bytes) {
    const unsigned char *b = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < bytes; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static void test_tree(gt_comm *c) {
    enum { M = 3001, LEAVES = 8 };
    /* (a) against the sequential tree over the allgathered rank partials */
    float *mine = xmalloc(M * sizeof *mine), *all = xmalloc((size_t)g_size * M * sizeof *all);
    float *ref = xmalloc(M * sizeof *ref);
    for (size_t i = 0; i < M; i++) mine[i] = (float)leaf_value(g_rank + 50, i);
    CHECK_OK(gt_comm_allgather(c, mine, all, M, GT_DTYPE_FP32, NULL));
    float *parts[4];
    for (int q = 0; q < g_size; q++) parts[q] = all + (size_t)q * M;
    tree_sum_f32(parts, g_size, M, ref);
    CHECK_OK(gt_comm_allreduce_tree(c, mine, M, GT_DTYPE_FP32));
    RCHECK(memcmp(mine, ref, M * sizeof *ref) == 0, "tree fp32 differs from the sequential tree");
    free(mine);
    free(all);
    free(ref);

    /* (b) 8 leaves over 1, 2 or 4 ranks: rank r tree-sums its contiguous
     * share first; the result is the 8-leaf tree's bits on any rank count. */
    int per = LEAVES / g_size;
    double *leaves[LEAVES];
    float *leaves32[LEAVES];
    for (int l = 0; l < LEAVES; l++) {
        leaves[l] = xmalloc(M * sizeof(double));
        leaves32[l] = xmalloc(M * sizeof(float));
        for (size_t i = 0; i < M; i++) {
            leaves[l][i] = leaf_value(l, i);
            leaves32[l][i] = (float)leaves[l][i];
        }
    }
    double *want64 = xmalloc(M * sizeof(double)), *got64 = xmalloc(M * sizeof(double));
    float *want32 = xmalloc(M * sizeof(float)), *got32 = xmalloc(M * sizeof(float));
    tree_sum_f64(leaves, LEAVES, M, want64);
    tree_sum_f32(leaves32, LEAVES, M, want32);
    tree_sum_f64(leaves + g_rank * per, per, M, got64);
    tree_sum_f32(leaves32 + g_rank * per, per, M, got32);
    CHECK_OK(gt_comm_allreduce_tree(c, got64, M, GT_DTYPE_FP64));
    CHECK_OK(gt_comm_allreduce_tree(c, got32, M, GT_DTYPE_FP32));
    RCHECK(memcmp(got64, want64, M * sizeof(double)) == 0, "tree fp64 on %d ranks differs", g_size);
    RCHECK(memcmp(got32, want32, M * sizeof(float)) == 0, "tree fp32 on %d ranks differs", g_size);
    /* A plain left-to-right sum rounds differently: proof that the inputs
     * are sensitive to order, so the equality above means something. */
    size_t differ = 0;
    for (size_t i = 0; i < M; i++) {
        double s = 0;
        for (int l = 0; l < LEAVES; l++) s += leaves[l][i];
        differ += s != want64[i];
    }
    RCHECK(differ > 0, "inputs do not depend on summation order");
    if (g_rank == 0)
        printf("tree of 8 leaves on %d ranks: fp64 bits %016llx, fp32 bits %016llx "
               "(%zu of %d elements differ from a left-to-right sum)\n",
               g_size, (unsigned long long)fnv1a(got64, M * sizeof(double)),
               (unsigned long long)fnv1a(got32, M * sizeof(float)), differ, M);
    for (int l = 0; l < LEAVES; l++) {
        free(leaves[l]);
        free(leaves32[l]);
    }
    free(want64);
    free(got64);
    free(want32);
    free(got32);
}

/* ---- watchdog ---------------------------------------------------------------------------- */

static void test_watchdog(gt_comm *world) {
    gt_comm *c = NULL;
    gt_comm_config cfg = {.backend = "mpi", .timeout_s = 0.5};
    CHECK_OK(gt_comm_world(&cfg, &c));
    if (!c) return;
    int peer = 1 % g_size;
    int32_t buf[4] = {0}, msg[4] = {7, 8, 9, 10};
    if (g_rank == 0) {
        uint64_t t0 = gt_now_ns();
        CHECK_STATUS(gt_comm_recv(c, buf, 4, GT_DTYPE_INT32, peer, 99, NULL), GT_ERR_TIMEOUT);
        double dt = (double)(gt_now_ns() - t0) * 1e-9;
        char want[32];
        snprintf(want, sizeof want, "rank %d", peer);
        const char *m = gt_last_error();
        RCHECK(dt >= 0.45 && dt < 1.5, "watchdog fired after %.3f s, want ~0.5", dt);
        RCHECK(strstr(m, "recv #1") && strstr(m, want) && strstr(m, "waiting for"),
               "watchdog message: %s", m);
        printf("watchdog after %.3f s: %s\n", dt, m);
    }
    /* Everyone waits for rank 0's timeout before the late message is sent:
     * it must land in the next receive, not the cancelled one. */
    CHECK_OK(gt_comm_barrier(world, NULL));
    gt_comm_request *rr = NULL;
    if (g_rank == 0) CHECK_OK(gt_comm_recv(c, buf, 4, GT_DTYPE_INT32, peer, 99, &rr));
    if (g_rank == peer) CHECK_OK(gt_comm_send(c, msg, 4, GT_DTYPE_INT32, 0, 99, NULL));
    if (rr) {
        CHECK_OK(gt_comm_wait(c, rr));
        RCHECK(buf[0] == 7 && buf[3] == 10, "receive after the timeout got %d", buf[0]);
    }
    CHECK_OK(gt_comm_barrier(c, NULL));
    gt_comm_free(c);
    if (g_size < 2) return;

    /* A collective cannot be cancelled: rank 0's wait on a non-blocking one
     * times out, the communicator refuses more work, and the late partners
     * still complete theirs (rank 0's abandoned request progresses inside
     * its later MPI calls). A blocking collective that times out ends the
     * job instead: engine/tests/mpi/watchdog.sh. */
    CHECK_OK(gt_comm_world(&cfg, &c));
    if (!c) return;
    float x = 1, y = 0;
    if (g_rank == 0) {
        gt_comm_request *ra = NULL;
        CHECK_OK(gt_comm_allreduce(c, &x, &y, 1, GT_DTYPE_FP32, GT_REDOP_SUM, &ra));
        if (ra) CHECK_STATUS(gt_comm_wait(c, ra), GT_ERR_TIMEOUT);
        const char *m = gt_last_error();
        RCHECK(strstr(m, "allreduce #1 (4 B fp32)") && strstr(m, "all other ranks") &&
                   strstr(m, "abandoned"),
               "watchdog message: %s", m);
        printf("watchdog on a collective: %s\n", m);
        CHECK_STATUS(gt_comm_barrier(c, NULL), GT_ERR_COMM);
    }
    CHECK_OK(gt_comm_barrier(world, NULL));
    if (g_rank != 0) {
        /* Non-blocking too: MPI never matches a blocking collective with a
         * non-blocking one (MPI-3 5.12), so every rank must use one form. */
        gt_comm_request *ra = NULL;
        CHECK_OK(gt_comm_allreduce(c, &x, &y, 1, GT_DTYPE_FP32, GT_REDOP_SUM, &ra));
        if (ra) CHECK_OK(gt_comm_wait(c, ra));
        RCHECK(y == (float)g_size, "late allreduce: %g", y);
    }
    CHECK_OK(gt_comm_barrier(world, NULL));
    gt_comm_free(c);

    /* The watchdog thread's deadline is per call: 12 blocking barriers,
     * each held ~60 ms by the last rank, span 1.4 times the 0.5 s timeout
     * and none may fire (a stale deadline would abort the job). */
    CHECK_OK(gt_comm_world(&cfg, &c));
    if (!c) return;
    for (int i = 0; i < 12; i++) {
        if (g_rank == g_size - 1) {
            struct timespec ts = {0, 60000000};
            nanosleep(&ts, NULL);
        }
        CHECK_OK(gt_comm_barrier(c, NULL));
    }
    gt_comm_free(c);
    /* timeout 0: no deadline, the blocking call runs without arming. */
    gt_comm_config none = {.backend = "mpi", .timeout_s = 0};
    CHECK_OK(gt_comm_world(&none, &c));
    if (!c) return;
    x = 1;
    CHECK_OK(gt_comm_allreduce(c, &x, &y, 1, GT_DTYPE_FP32, GT_REDOP_SUM, NULL));
    RCHECK(y == (float)g_size, "allreduce without a deadline: %g", y);
    gt_comm_free(c);
}

/* ---- bench --------------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median over iterations of the slowest rank's time. which: 0 MPI_Allreduce,
 * 1 gt_comm_allreduce, 2 gt_comm_allreduce_tree, 3 gt_comm_allreduce on
 * `bare` (timeout 0: no watchdog to arm, so 1 - 3 is the arming's cost),
 * 4 the non-blocking form + gt_comm_wait (MPI_Iallreduce polled against the
 * deadline: what a blocking gt_comm_allreduce did before it used
 * MPI_Allreduce). */
static gt_comm *g_bare;

static double time_op(gt_comm *c, int which, float *buf, const float *init, size_t n, int iters) {
    MPI_Comm mc = *(MPI_Comm *)gt_comm_native_handle(c);
    double *t = xmalloc((size_t)iters * sizeof *t);
    for (int it = -2; it < iters; it++) { /* two warm-up rounds */
        memcpy(buf, init, n * sizeof *buf);
        MPI_Barrier(mc);
        uint64_t t0 = gt_now_ns();
        if (which == 0) MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, mc);
        if (which == 1) gt_comm_allreduce(c, buf, buf, n, GT_DTYPE_FP32, GT_REDOP_SUM, NULL);
        if (which == 2) gt_comm_allreduce_tree(c, buf, n, GT_DTYPE_FP32);
        if (which == 3) gt_comm_allreduce(g_bare, buf, buf, n, GT_DTYPE_FP32, GT_REDOP_SUM, NULL);
        if (which == 4) {
            gt_comm_request *r = NULL;
            if (gt_comm_allreduce(c, buf, buf, n, GT_DTYPE_FP32, GT_REDOP_SUM, &r) == GT_OK)
                gt_comm_wait(c, r);
        }
        double dt = (double)(gt_now_ns() - t0) * 1e-9, mx = 0;
        MPI_Allreduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, mc);
        if (it >= 0) t[it] = mx;
    }
    qsort(t, (size_t)iters, sizeof *t, cmp_double);
    double med = t[iters / 2];
    free(t);
    return med;
}

static int bench(gt_comm *c) {
    static const size_t bytes[] = {8, 1024, 1 << 20, 16 << 20, 64 << 20};
    static const int iters[] = {2001, 1001, 51, 15, 9};
    gt_comm_config bare = {.backend = "mpi", .timeout_s = 0};
    if (gt_comm_world(&bare, &g_bare) != GT_OK) {
        fprintf(stderr, "bench: %s\n", gt_last_error());
        return 1;
    }
    if (g_rank == 0) {
        printf("%d ranks, %s\n", g_size, gt_comm_library_version(c));
        printf("| size | MPI_Allreduce | gt_comm_allreduce | gt / native | no watchdog "
               "| Iallreduce + wait | I+wait / native | gt_comm_allreduce_tree "
               "| tree / native |\n");
        printf("|---|---|---|---|---|---|---|---|---|\n");
    }
    for (size_t k = 0; k < sizeof bytes / sizeof bytes[0]; k++) {
        size_t n = bytes[k] / sizeof(float);
        float *buf = xmalloc(n * sizeof *buf), *init = xmalloc(n * sizeof *init);
        for (size_t i = 0; i < n; i++) init[i] = (float)val(g_rank, i);
        double tn = time_op(c, 0, buf, init, n, iters[k]);
        double tg = time_op(c, 1, buf, init, n, iters[k]);
        double tt = time_op(c, 2, buf, init, n, iters[k]);
        double tb = time_op(c, 3, buf, init, n, iters[k]);
        double ti = time_op(c, 4, buf, init, n, iters[k]);
        if (g_rank == 0) {
            char sz[32];
            if (bytes[k] >= (1u << 20))
                snprintf(sz, sizeof sz, "%zu MiB", bytes[k] >> 20);
            else if (bytes[k] >= 1024)
                snprintf(sz, sizeof sz, "%zu KiB", bytes[k] >> 10);
            else
                snprintf(sz, sizeof sz, "%zu B", bytes[k]);
            printf("| %s | %.2f us | %.2f us | %.2fx | %.2f us | %.2f us | %.2fx | %.2f us "
                   "| %.2fx |\n",
                   sz, tn * 1e6, tg * 1e6, tg / tn, tb * 1e6, ti * 1e6, ti / tn, tt * 1e6,
                   tt / tn);
            fflush(stdout);
        }
        free(buf);
        free(init);
    }
    gt_comm_free(g_bare);
    return 0;
}

int main(int argc, char **argv) {
    gt_comm *c = NULL;
    gt_comm_config cfg = {.backend = "mpi", .timeout_s = 60};
    gt_status s = gt_comm_world(&cfg, &c);
    if (s != GT_OK) {
        fprintf(stderr, "mpi world: %s\n", gt_last_error());
        return 1;
    }
    g_rank = gt_comm_rank(c);
    g_size = gt_comm_size(c);
    if (argc > 1 && strcmp(argv[1], "--bench") == 0) {
        bench(c);
        gt_comm_free(c);
        return 0;
    }
    RCHECK(strcmp(gt_comm_backend_name(c), "mpi") == 0, "backend %s", gt_comm_backend_name(c));
    RCHECK(strstr(gt_comm_library_version(c), "MPI") != NULL, "version '%s'",
           gt_comm_library_version(c));
    int native_size = 0;
    MPI_Comm_size(*(MPI_Comm *)gt_comm_native_handle(c), &native_size);
    RCHECK(native_size == g_size, "native handle size %d", native_size);
    RCHECK(gt_comm_world_rank(c, g_rank) == g_rank, "world rank");

    test_reductions(c, 1031);
    test_reductions(c, 1); /* one element: the smallest message */
    test_data_movement(c, 517);
    test_nonblocking(c);
    test_barrier_idle(c);
    test_ring(c);
    test_split(c);
    test_chunks();
    test_tree(c);
    test_watchdog(c);

    gt_comm_stats st;
    gt_comm_get_stats(c, &st);
    RCHECK(st.ops > 100 && st.bytes > 0 && st.wait_s > 0, "stats: %llu ops %llu bytes %.3f s",
           (unsigned long long)st.ops, (unsigned long long)st.bytes, st.wait_s);

    /* One verdict for the job: a failure on any rank fails every rank. */
    int mine = g_check_failures, any = 0;
    MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_SUM, *(MPI_Comm *)gt_comm_native_handle(c));
    gt_comm_free(c);
    if (any && !mine) {
        fprintf(stderr, "[rank %d] other ranks failed %d check(s)\n", g_rank, any);
        return 1;
    }
    char name[64];
    snprintf(name, sizeof name, "engine.comm.mpi_np%d rank %d", g_size, g_rank);
    return check_done(name);
}
