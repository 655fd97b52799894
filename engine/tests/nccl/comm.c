/* The nccl communicator on 1 or 2 ranks, one GPU each (engine.comm.nccl_np{1,2}).
 *
 * Exit 77 (skipped) when this node has fewer visible GPUs than ranks.
 * Otherwise every collective x dtype x reduction runs on DEVICE buffers,
 * in place and out of place, with small-integer inputs whose exact result
 * is known whatever order NCCL sums in, and each element is compared after
 * copying back; avg must be the correctly rounded sum / n of engine/comm.h.
 * Then non-blocking + test/wait, a send/recv ring (receive posted first: the
 * grouped launch must not deadlock), barrier, split (reversed order and
 * one communicator per rank), host buffers (the host communicator inside:
 * mpi, or self without MPI), mixed host and device (GT_ERR_INVALID), the tree all-reduce on device memory
 * (GT_ERR_UNSUPPORTED), and the library's version string. */
#define _POSIX_C_SOURCE 200809L

#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/comm.h"
#include "engine/tests/check.h"
#include "kernels/registry.h"

static int g_rank, g_size;

#define RCHECK(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) fprintf(stderr, "[rank %d] ", g_rank);                                        \
        CHECK(cond, __VA_ARGS__);                                                                  \
    } while (0)

static const gt_dtype k_dtypes[] = {GT_DTYPE_FP32, GT_DTYPE_FP64,  GT_DTYPE_BF16,
                                    GT_DTYPE_FP16, GT_DTYPE_INT32, GT_DTYPE_INT64};
#define N_DTYPES (sizeof k_dtypes / sizeof k_dtypes[0])
#define COUNT 1000 /* elements per rank block: not a multiple of NCCL's chunk sizes */

static void set_el(void *buf, gt_dtype dt, size_t i, double v) {
    switch (dt) {
    case GT_DTYPE_FP32:
        ((float *)buf)[i] = (float)v;
        break;
    case GT_DTYPE_FP64:
        ((double *)buf)[i] = v;
        break;
    case GT_DTYPE_BF16:
        ((uint16_t *)buf)[i] = gt_fp32_to_bf16((float)v);
        break;
    case GT_DTYPE_FP16:
        ((uint16_t *)buf)[i] = gt_fp32_to_fp16((float)v);
        break;
    case GT_DTYPE_INT32:
        ((int32_t *)buf)[i] = (int32_t)v;
        break;
    default:
        ((int64_t *)buf)[i] = (int64_t)v;
        break;
    }
}

static double get_el(const void *buf, gt_dtype dt, size_t i) {
    switch (dt) {
    case GT_DTYPE_FP32:
        return ((const float *)buf)[i];
    case GT_DTYPE_FP64:
        return ((const double *)buf)[i];
    case GT_DTYPE_BF16:
        return gt_bf16_to_fp32(((const uint16_t *)buf)[i]);
    case GT_DTYPE_FP16:
        return gt_fp16_to_fp32(((const uint16_t *)buf)[i]);
    case GT_DTYPE_INT32:
        return ((const int32_t *)buf)[i];
    default:
        return (double)((const int64_t *)buf)[i];
    }
}

/* Rank r's element i: small integers, every partial sum exact in bf16. */
static double value(int r, size_t i) {
    return (double)(i % 7) + r + 1;
}

/* The contract's avg of an exact sum: one division in the dtype's
 * arithmetic (fp32 for bf16/fp16), rounded once; C division for integers. */
static double avg_of(double sum, gt_dtype dt) {
    float f = (float)sum / (float)g_size;
    switch (dt) {
    case GT_DTYPE_FP64:
        return sum / g_size;
    case GT_DTYPE_FP32:
        return f;
    case GT_DTYPE_BF16:
        return gt_bf16_to_fp32(gt_fp32_to_bf16(f));
    case GT_DTYPE_FP16:
        return gt_fp16_to_fp32(gt_fp32_to_fp16(f));
    case GT_DTYPE_INT32:
    case GT_DTYPE_INT64:
        return (double)((long long)sum / g_size);
    default:
        return 0;
    }
}

static double expect_red(size_t i, gt_dtype dt, gt_redop op) {
    double sum = 0;
    for (int r = 0; r < g_size; r++)
        sum += value(r, i);
    switch (op) {
    case GT_REDOP_SUM:
        return sum;
    case GT_REDOP_AVG:
        return avg_of(sum, dt);
    case GT_REDOP_MAX:
        return value(g_size - 1, i);
    default:
        return value(0, i);
    }
}

static void *dev_alloc(size_t bytes) {
    void *p = NULL;
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
        fprintf(stderr, "[rank %d] cudaMalloc(%zu) failed\n", g_rank, bytes);
        exit(1);
    }
    cudaMemset(p, 0xA5, bytes); /* poison: never an input's value */
    return p;
}

static void put(void *dev, const void *host, size_t bytes) {
    RCHECK(cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice) == cudaSuccess, "H2D copy");
}
static void get(void *host, const void *dev, size_t bytes) {
    RCHECK(cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost) == cudaSuccess, "D2H copy");
}

/* Wrong elements of host[0..n) against want(base + i). */
static long wrong_red(const void *host, gt_dtype dt, gt_redop op, size_t base, size_t n) {
    long w = 0;
    for (size_t i = 0; i < n; i++)
        w += get_el(host, dt, i) != expect_red(base + i, dt, op);
    return w;
}

static void test_reductions(gt_comm *c) {
    size_t all = (size_t)COUNT * g_size;
    for (size_t k = 0; k < N_DTYPES; k++) {
        gt_dtype dt = k_dtypes[k];
        size_t es = gt_dtype_size(dt);
        void *h = malloc(all * es), *hr = malloc(all * es);
        void *ds = dev_alloc(all * es), *dr = dev_alloc(all * es);
        for (int op = 0; op < GT_REDOP_COUNT; op++) {
            const char *tn = gt_dtype_name(dt), *on = gt_redop_name((gt_redop)op);
            for (size_t i = 0; i < all; i++)
                set_el(h, dt, i, value(g_rank, i));
            for (int ip = 0; ip < 2; ip++) {
                /* allreduce */
                put(ds, h, COUNT * es);
                cudaMemset(dr, 0xA5, all * es);
                if (ip) put(dr, h, COUNT * es);
                CHECK_OK(gt_comm_allreduce(c, ip ? dr : ds, dr, COUNT, dt, (gt_redop)op, NULL));
                get(hr, dr, COUNT * es);
                long w = wrong_red(hr, dt, (gt_redop)op, 0, COUNT);
                RCHECK(w == 0, "allreduce %s %s in_place %d: %ld wrong", tn, on, ip, w);

                /* reduce to the last rank */
                int root = g_size - 1;
                cudaMemset(dr, 0xA5, all * es);
                if (ip) put(dr, h, COUNT * es);
                CHECK_OK(gt_comm_reduce(c, ip ? dr : ds, dr, COUNT, dt, (gt_redop)op, root, NULL));
                if (g_rank == root) {
                    get(hr, dr, COUNT * es);
                    w = wrong_red(hr, dt, (gt_redop)op, 0, COUNT);
                    RCHECK(w == 0, "reduce %s %s in_place %d: %ld wrong", tn, on, ip, w);
                }

                /* reduce_scatter: block r of every rank's all-element input */
                put(ds, h, all * es);
                cudaMemset(dr, 0xA5, all * es);
                if (ip) put(dr, h, all * es);
                CHECK_OK(
                    gt_comm_reduce_scatter(c, ip ? dr : ds, dr, COUNT, dt, (gt_redop)op, NULL));
                get(hr, dr, COUNT * es);
                w = wrong_red(hr, dt, (gt_redop)op, (size_t)g_rank * COUNT, COUNT);
                RCHECK(w == 0, "reduce_scatter %s %s in_place %d: %ld wrong", tn, on, ip, w);
            }
        }
        /* data movement: broadcast, allgather (both in-place spellings), alltoall */
        for (size_t i = 0; i < all; i++)
            set_el(h, dt, i, value(g_rank, i));
        int root = g_size - 1;
        if (g_rank == root)
            put(dr, h, COUNT * es);
        else
            cudaMemset(dr, 0xA5, COUNT * es);
        CHECK_OK(gt_comm_broadcast(c, dr, COUNT, dt, root, NULL));
        get(hr, dr, COUNT * es);
        long w = 0;
        for (size_t i = 0; i < COUNT; i++)
            w += get_el(hr, dt, i) != value(root, i);
        RCHECK(w == 0, "broadcast %s: %ld wrong", gt_dtype_name(dt), w);

        for (int ip = 0; ip < 3; ip++) {
            char *mine = (char *)dr + (size_t)g_rank * COUNT * es;
            cudaMemset(dr, 0xA5, all * es);
            if (ip)
                put(mine, h, COUNT * es);
            else
                put(ds, h, COUNT * es);
            const void *send = ip == 0 ? ds : ip == 1 ? (void *)mine : dr;
            CHECK_OK(gt_comm_allgather(c, send, dr, COUNT, dt, NULL));
            get(hr, dr, all * es);
            w = 0;
            for (int r = 0; r < g_size; r++)
                for (size_t i = 0; i < COUNT; i++)
                    w += get_el(hr, dt, (size_t)r * COUNT + i) != value(r, i);
            RCHECK(w == 0, "allgather %s form %d: %ld wrong", gt_dtype_name(dt), ip, w);
        }

        /* alltoall: block j of rank r holds value(r, j * COUNT + i) */
        put(ds, h, all * es);
        cudaMemset(dr, 0xA5, all * es);
        CHECK_OK(gt_comm_alltoall(c, ds, dr, COUNT, dt, NULL));
        get(hr, dr, all * es);
        w = 0;
        for (int r = 0; r < g_size; r++)
            for (size_t i = 0; i < COUNT; i++)
                w += get_el(hr, dt, (size_t)r * COUNT + i) != value(r, (size_t)g_rank * COUNT + i);
        RCHECK(w == 0, "alltoall %s: %ld wrong", gt_dtype_name(dt), w);

        cudaFree(ds);
        cudaFree(dr);
        free(h);
        free(hr);
    }
}

static void test_nonblocking_and_p2p(gt_comm *c) {
    size_t bytes = COUNT * sizeof(float);
    float *h = malloc(bytes), *hr = malloc(bytes);
    void *ds = dev_alloc(bytes), *dr = dev_alloc(bytes);
    for (size_t i = 0; i < COUNT; i++)
        h[i] = (float)value(g_rank, i);
    put(ds, h, bytes);

    /* non-blocking allreduce, completed by test then wait */
    gt_comm_request *rq = NULL;
    CHECK_OK(gt_comm_allreduce(c, ds, dr, COUNT, GT_DTYPE_FP32, GT_REDOP_SUM, &rq));
    int done = 0;
    for (int k = 0; k < 1000 && !done; k++)
        CHECK_OK(gt_comm_test(c, rq, &done));
    if (!done) CHECK_OK(gt_comm_wait(c, rq));
    get(hr, dr, bytes);
    RCHECK(wrong_red(hr, GT_DTYPE_FP32, GT_REDOP_SUM, 0, COUNT) == 0, "iallreduce wrong");

    /* ring: post the receive first, then the blocking send */
    int next = (g_rank + 1) % g_size, prev = (g_rank + g_size - 1) % g_size;
    cudaMemset(dr, 0xA5, bytes);
    rq = NULL;
    CHECK_OK(gt_comm_recv(c, dr, COUNT, GT_DTYPE_FP32, prev, 5, &rq));
    CHECK_OK(gt_comm_send(c, ds, COUNT, GT_DTYPE_FP32, next, 5, NULL));
    CHECK_OK(gt_comm_wait(c, rq));
    get(hr, dr, bytes);
    long w = 0;
    for (size_t i = 0; i < COUNT; i++)
        w += hr[i] != (float)value(prev, i);
    RCHECK(w == 0, "ring send/recv: %ld wrong", w);

    /* non-blocking barrier, then a blocking one */
    rq = NULL;
    CHECK_OK(gt_comm_barrier(c, &rq));
    CHECK_OK(gt_comm_wait(c, rq));
    CHECK_OK(gt_comm_barrier(c, NULL));

    /* host buffers: the host communicator inside (mpi, or self) */
    double hv[2] = {1.0 + g_rank, 2.0};
    CHECK_OK(gt_comm_allreduce(c, hv, hv, 2, GT_DTYPE_FP64, GT_REDOP_SUM, NULL));
    RCHECK(hv[0] == g_size * (g_size + 1) / 2.0 && hv[1] == 2.0 * g_size, "host allreduce: %g %g",
           hv[0], hv[1]);

    /* mixed host and device in one call: refused on every rank alike */
    CHECK_STATUS(gt_comm_allreduce(c, h, dr, COUNT, GT_DTYPE_FP32, GT_REDOP_SUM, NULL),
                 GT_ERR_INVALID);
    /* the tree adds on the host: a device buffer is refused */
    if ((g_size & (g_size - 1)) == 0)
        CHECK_STATUS(gt_comm_allreduce_tree(c, dr, COUNT, GT_DTYPE_FP32), GT_ERR_UNSUPPORTED);

    cudaFree(ds);
    cudaFree(dr);
    free(h);
    free(hr);
}

static void test_split(gt_comm *c) {
    /* one communicator, ranks reversed by key */
    gt_comm *rev = NULL;
    CHECK_OK(gt_comm_split(c, 0, g_size - 1 - g_rank, &rev));
    RCHECK(rev && gt_comm_rank(rev) == g_size - 1 - g_rank && gt_comm_size(rev) == g_size,
           "reversed split: rank %d size %d", rev ? gt_comm_rank(rev) : -1,
           rev ? gt_comm_size(rev) : -1);
    if (rev) {
        RCHECK(strcmp(gt_comm_backend_name(rev), "nccl") == 0, "split backend %s",
               gt_comm_backend_name(rev));
        int32_t *d = dev_alloc(sizeof(int32_t) * g_size), h[8] = {0};
        int32_t mine = g_rank;
        put((char *)d + sizeof(int32_t) * (size_t)gt_comm_rank(rev), &mine, sizeof mine);
        CHECK_OK(gt_comm_allgather(rev, (char *)d + sizeof(int32_t) * (size_t)gt_comm_rank(rev), d,
                                   1, GT_DTYPE_INT32, NULL));
        get(h, d, sizeof(int32_t) * (size_t)g_size);
        for (int r = 0; r < g_size; r++)
            RCHECK(h[r] == g_size - 1 - r, "reversed split: block %d holds world rank %d", r, h[r]);
        cudaFree(d);
    }
    gt_comm_free(rev);

    /* one communicator per rank, and a rank that is in none */
    gt_comm *alone = NULL;
    CHECK_OK(gt_comm_split(c, g_rank, 0, &alone));
    RCHECK(alone && gt_comm_size(alone) == 1, "split by rank: size %d",
           alone ? gt_comm_size(alone) : -1);
    gt_comm_free(alone);
    gt_comm *none = (gt_comm *)&none;
    CHECK_OK(gt_comm_split(c, g_rank == 0 ? -1 : 1, 0, &none));
    RCHECK((g_rank == 0) == (none == NULL), "color -1 gives NULL");
    gt_comm_free(none);
}

int main(void) {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        printf("engine.comm.nccl: skipped: no CUDA device visible\n");
        return 77;
    }
    const char *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    if (local && atoi(local) > count) {
        printf("engine.comm.nccl: skipped: %s ranks on this node, %d GPU(s)\n", local, count);
        return 77;
    }
    gt_kernels_init(); /* the cuda backend's avg division kernel */
    gt_comm_config cfg = gt_comm_defaults();
    cfg.backend = "nccl";
    cfg.timeout_s = 120;
    gt_comm *c = NULL;
    gt_status s = gt_comm_world(&cfg, &c);
    if (s != GT_OK) {
        fprintf(stderr, "gt_comm_world(nccl): %s\n", gt_last_error());
        return 1;
    }
    g_rank = gt_comm_rank(c);
    g_size = gt_comm_size(c);
    RCHECK(strcmp(gt_comm_backend_name(c), "nccl") == 0, "backend %s", gt_comm_backend_name(c));
    RCHECK(strncmp(gt_comm_library_version(c), "NCCL 2.", 7) == 0, "version '%s'",
           gt_comm_library_version(c));
    RCHECK(gt_comm_native_handle(c) != NULL, "no native handle");
    test_reductions(c);
    test_nonblocking_and_p2p(c);
    test_split(c);
    gt_comm_stats st;
    gt_comm_get_stats(c, &st);
    RCHECK(st.ops > 100 && st.bytes > 0, "stats: %llu ops, %llu bytes", (unsigned long long)st.ops,
           (unsigned long long)st.bytes);
    if (g_rank == 0) printf("nccl %s on %d rank(s)\n", gt_comm_library_version(c), g_size);
    gt_comm_free(c);
    return check_done("engine.comm.nccl");
}
