/* The collectives suite's raw NCCL baseline (suites/coll_raw.h): each
 * collective as a user of NCCL writes it, on the device buffers gt_comm's
 * call used, on a stream of its own that is drained after every call (what
 * a blocking gt_comm call does), so host time per operation measures the
 * same thing on both sides. It also owns those device buffers and their
 * copies to and from the host. The only file of the suite that includes
 * <nccl.h> or the CUDA runtime; in a build without NCCL only the
 * constructor's stub is left. */
#include "suites/coll_raw.h"

#include "gt_config.h"

#if GT_HAVE_NCCL

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdlib.h>

typedef struct nccl_raw {
    gt_coll_raw base; /* first: the suite holds a gt_coll_raw * */
    ncclComm_t comm;
    cudaStream_t stream;
    void *dsend, *drecv;
    ncclDataType_t type;
    ncclRedOp_t op;
} nccl_raw;

static gt_status cuda_status(cudaError_t e, const char *what) {
    if (e == cudaSuccess) return GT_OK;
    return GT_ERR(GT_ERR_DEVICE, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

/* A raw NCCL call, then the stream drained: what a blocking gt_comm call does. */
static gt_status nccl_done(nccl_raw *m, ncclResult_t r, const char *what) {
    if (r != ncclSuccess)
        return GT_ERR(GT_ERR_COMM, "raw %s: %s", what, ncclGetErrorString(r));
    return cuda_status(cudaStreamSynchronize(m->stream), "raw: cudaStreamSynchronize");
}

static void *at(const gt_coll_raw_call *c, void *buf, size_t elems) {
    return (char *)buf + elems * c->esize;
}

static const void *input(const gt_coll_raw_call *c) { return c->in_place ? c->recv : c->send; }

/* NCCL's own avg (ncclAvg) is the raw baseline: what a user of NCCL calls */
static gt_status allreduce(nccl_raw *m, const gt_coll_raw_call *c) {
    return nccl_done(m, ncclAllReduce(input(c), c->recv, c->count, m->type, m->op, m->comm,
                                      m->stream),
                     "ncclAllReduce");
}

/* in place (nccl-tests' convention): every rank passes recv as both buffers */
static gt_status reduce(nccl_raw *m, const gt_coll_raw_call *c) {
    return nccl_done(m, ncclReduce(input(c), c->recv, c->count, m->type, m->op, c->root, m->comm,
                                   m->stream),
                     "ncclReduce");
}

static gt_status broadcast(nccl_raw *m, const gt_coll_raw_call *c) {
    return nccl_done(m, ncclBroadcast(c->recv, c->recv, c->count, m->type, c->root, m->comm,
                                      m->stream),
                     "ncclBroadcast");
}

/* in place: send = recv + rank * count, nccl-tests' convention */
static gt_status allgather(nccl_raw *m, const gt_coll_raw_call *c) {
    const void *send = c->in_place ? at(c, c->recv, (size_t)c->rank * c->count) : c->send;
    return nccl_done(m, ncclAllGather(send, c->recv, c->count, m->type, m->comm, m->stream),
                     "ncclAllGather");
}

/* NCCL's in place leaves block r at recv + r * count; the raw baseline does
 * not move it to the start (its result is not checked, only timed). */
static gt_status reduce_scatter(nccl_raw *m, const gt_coll_raw_call *c) {
    void *out = c->in_place ? at(c, c->recv, (size_t)c->rank * c->count) : c->recv;
    return nccl_done(m, ncclReduceScatter(input(c), out, c->count, m->type, m->op, m->comm,
                                          m->stream),
                     "ncclReduceScatter");
}

/* NCCL has no all-to-all: grouped send/recv, as nccl-tests does it */
static gt_status alltoall(nccl_raw *m, const gt_coll_raw_call *c) {
    ncclResult_t r = ncclGroupStart();
    for (int j = 0; j < c->n && r == ncclSuccess; j++) {
        r = ncclSend(at(c, c->send, (size_t)j * c->count), c->count, m->type, j, m->comm,
                     m->stream);
        if (r == ncclSuccess)
            r = ncclRecv(at(c, c->recv, (size_t)j * c->count), c->count, m->type, j, m->comm,
                         m->stream);
    }
    ncclResult_t r2 = ncclGroupEnd();
    return nccl_done(m, r != ncclSuccess ? r : r2, "alltoall (ncclSend/ncclRecv group)");
}

/* the ring of the suite's sendrecv: to rank + 1, from rank - 1 */
static gt_status sendrecv(nccl_raw *m, const gt_coll_raw_call *c) {
    int next = (c->rank + 1) % c->n, prev = (c->rank + c->n - 1) % c->n;
    ncclResult_t r = ncclGroupStart();
    if (r == ncclSuccess) r = ncclSend(c->send, c->count, m->type, next, m->comm, m->stream);
    if (r == ncclSuccess) r = ncclRecv(c->recv, c->count, m->type, prev, m->comm, m->stream);
    ncclResult_t r2 = ncclGroupEnd();
    return nccl_done(m, r != ncclSuccess ? r : r2, "sendrecv (ncclSend/ncclRecv group)");
}

static gt_status (*const g_runs[GT_COLL_TEST_COUNT])(nccl_raw *, const gt_coll_raw_call *) = {
    [GT_COLL_TEST_ALLREDUCE] = allreduce,
    [GT_COLL_TEST_REDUCE] = reduce,
    [GT_COLL_TEST_BROADCAST] = broadcast,
    [GT_COLL_TEST_ALLGATHER] = allgather,
    [GT_COLL_TEST_REDUCE_SCATTER] = reduce_scatter,
    [GT_COLL_TEST_ALLTOALL] = alltoall,
    [GT_COLL_TEST_SENDRECV] = sendrecv,
};

static gt_status nccl_run(gt_coll_raw *r, const gt_coll_raw_call *c) {
    return g_runs[c->coll]((nccl_raw *)r, c);
}

/* NCCL has every dtype and op, avg included (ncclAvg) */
static int nccl_select(gt_coll_raw *r, gt_dtype dt, gt_redop op, int reduces) {
    static const ncclDataType_t types[GT_DTYPE_COUNT] = {
        [GT_DTYPE_FP32] = ncclFloat32, [GT_DTYPE_FP64] = ncclFloat64,
        [GT_DTYPE_BF16] = ncclBfloat16, [GT_DTYPE_FP16] = ncclFloat16,
        [GT_DTYPE_INT32] = ncclInt32,  [GT_DTYPE_INT64] = ncclInt64};
    nccl_raw *m = (nccl_raw *)r;
    (void)reduces;
    m->type = types[dt];
    m->op = op == GT_REDOP_AVG   ? ncclAvg
            : op == GT_REDOP_MAX ? ncclMax
            : op == GT_REDOP_MIN ? ncclMin
                                 : ncclSum;
    return 1;
}

/* The pair the collectives run on, and the baseline's stream. */
static gt_status nccl_buffers(gt_coll_raw *r, size_t cap, void **send, void **recv) {
    nccl_raw *m = (nccl_raw *)r;
    cudaError_t e = cudaMalloc(&m->dsend, cap);
    if (e == cudaSuccess) e = cudaMalloc(&m->drecv, cap);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return GT_ERR(GT_ERR_OOM, "collectives: two device buffers of %zu bytes: %s (lower -e)",
                      cap, cudaGetErrorString(e));
    }
    GT_TRY(cuda_status(cudaStreamCreateWithFlags(&m->stream, cudaStreamNonBlocking),
                       "collectives: cudaStreamCreateWithFlags"));
    *send = m->dsend;
    *recv = m->drecv;
    return GT_OK;
}

static gt_status nccl_copy(void *dst, const void *src, size_t bytes, int up) {
    return up ? cuda_status(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice),
                            "collectives: cudaMemcpy of the inputs")
              : cuda_status(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost),
                            "collectives: cudaMemcpy of the results");
}

static void nccl_free(gt_coll_raw *r) {
    nccl_raw *m = (nccl_raw *)r;
    if (m->dsend) cudaFree(m->dsend);
    if (m->drecv) cudaFree(m->drecv);
    if (m->stream) cudaStreamDestroy(m->stream);
    free(m);
}

gt_status gt_coll_raw_nccl_new(void *native, gt_coll_raw **out) {
    *out = NULL;
    if (!native) return GT_ERR(GT_ERR_INVALID, "collectives: raw NCCL without a communicator");
    nccl_raw *m = calloc(1, sizeof *m);
    if (!m) return GT_ERR(GT_ERR_OOM, "collectives: raw NCCL baseline");
    m->comm = *(ncclComm_t *)native;
    m->base.name = "nccl";
    m->base.device = 1;
    m->base.max_count = (size_t)-1;
    m->base.local_ranks = 1;
    m->base.select = nccl_select;
    m->base.run = nccl_run;
    m->base.buffers = nccl_buffers;
    m->base.copy = nccl_copy;
    m->base.free = nccl_free;
    *out = &m->base;
    return GT_OK;
}

#else /* no NCCL: the constructor says so */

gt_status gt_coll_raw_nccl_new(void *native, gt_coll_raw **out) {
    (void)native;
    *out = NULL;
    return GT_ERR(GT_ERR_UNSUPPORTED, "collectives: no raw NCCL baseline (built without NCCL)");
}

#endif
