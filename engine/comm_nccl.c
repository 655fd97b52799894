/* The nccl backend: gt_comm on NCCL, one rank per GPU, for DEVICE buffers.
 *
 * Bootstrap: the world is a host world first, held inside this one: an mpi
 * world (engine/comm_mpi.c's backend) when MPI is built in, whose rank 0
 * makes NCCL's unique id and MPI_Bcast gives it to every rank before
 * ncclCommInitRank. Without MPI it is the self communicator: a world of
 * one process, which makes its own id (a GPU machine without MPI still runs
 * NCCL on its one rank); a launch of several processes is then refused,
 * since nothing could carry the id. Without NCCL there is no nccl world
 * (the stub below says so).
 *
 * The GPU: each rank takes the CUDA device local to it, the rule of the
 * cuda backend (kernels/cuda/backend_cuda.cu): the launcher's local rank
 * (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, MV2_COMM_WORLD_LOCAL_RANK,
 * SLURM_LOCALID, LOCAL_RANK) modulo the visible devices; without one, the
 * rank among the MPI ranks of its node (0 without MPI). Two ranks of a node on one GPU is
 * refused before NCCL is called (NCCL would fail or hang): every rank
 * learns of any rank's failure, so none is left waiting in NCCL's init.
 *
 * Buffers: device memory (cudaMalloc, managed) goes to NCCL on the
 * communicator's own stream. Host memory goes to the host communicator held
 * inside (mpi, or self), so the harness and the suites keep exchanging their small host
 * values (flags, timings, digests) on an nccl world without knowing it. An
 * operation whose buffers mix the two is GT_ERR_INVALID; every rank must
 * pass the same kind of memory to a given operation. Ordering with the
 * caller's GPU work: before an operation is enqueued, the communicator's
 * (non-blocking) stream waits for an event recorded on the legacy default
 * stream, which completes only when everything issued so far on the legacy
 * stream and on every blocking stream of the device has (the cuda backend's
 * stream is one: cudaStreamCreate without flags). So gradients the backend
 * has just queued are complete before NCCL reads them, without the host
 * waiting. Work on the caller's non-blocking streams is not covered:
 * synchronise those first.
 *
 * Completion: a blocking call enqueues on the stream and polls
 * cudaStreamQuery (and ncclCommGetAsyncError, so that a peer's failure is
 * an error, not a hang) until the stream drains; comm.c's watchdog thread
 * keeps the deadline and on expiry calls abort() below: ncclCommAbort,
 * then the host communicator's abort (MPI_Abort). A non-blocking call enqueues and records a CUDA
 * event; test is cudaEventQuery. NCCL cannot cancel an enqueued operation: a wait that times out
 * aborts the NCCL communicator (the comm is then unusable).
 *
 * The watchdog's abort runs on its own thread while the owning thread may
 * be polling the same communicator (ncclCommGetAsyncError) or enqueuing on
 * it; ncclCommAbort frees it, so the two must not overlap (NCCL's
 * communicators are not thread-safe). Every NCCL call on m->comm is made
 * with m->mu held, and `aborted` (atomic) is set before any abort: the
 * owner checks it under the lock before each call and never touches
 * m->comm once it is set. The watchdog waits for the lock (the owner holds
 * it only for one call: a poll, or an enqueue) for at most a second; if the
 * owner is stuck inside NCCL that long, the watchdog leaves the
 * communicator alone rather than free it under that call, and the host
 * communicator's abort ends the job (the GPU is released with the
 * process). The owner's pending wait then ends with GT_ERR_TIMEOUT, never
 * with a call on a freed communicator.
 *
 * Point-to-point: NCCL has no tags and a lone ncclRecv blocks its stream
 * until the matching send runs, so a ring of "post receive, then send"
 * would deadlock if each were launched alone. Send and receive are
 * therefore queued when started and launched together in one
 * ncclGroupStart/End when anything else needs the stream (any test or
 * wait, any collective, a split, the end). Messages between two ranks match
 * in the order they were posted; the tag is only checked for range.
 *
 * Reductions: sum, max and min are NCCL's (bf16/fp16 combine in fp32 per
 * pair and round once, like the mpi backend). avg is ncclSum followed by a
 * correctly rounded division per element on the same stream, not ncclAvg:
 * NCCL's multiplies every contribution by 1/n first and rounds differently
 * for n not a power of 2. The division is a CUDA kernel of the cuda backend
 * (kernels/cuda/comm_avg.cu) that the kernels' registry gives the engine
 * (gt_comm_set_divide, engine/comm.h): the engine never links kernels.
 */
#define _POSIX_C_SOURCE 200809L

#include "gt_config.h"

#include "engine/comm.h"

#if GT_HAVE_NCCL

#include <cuda_runtime_api.h>
#if GT_HAVE_MPI
#include <mpi.h>
#endif
#include <nccl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/env.h"
#include "engine/timer.h"

/* The communicator for bootstrap and host buffers (see the top). */
#if GT_HAVE_MPI
static const gt_comm_backend *const host_be = &gt_comm_mpi_backend;
#else
static const gt_comm_backend *const host_be = &gt_comm_self_backend;
#endif

typedef struct nccl_handle nccl_handle;

enum { LIVE = 0, ABORTED_HERE, ABORTED_BY_JOB };

typedef struct nccl_comm {
    ncclComm_t comm;    /* valid while aborted == LIVE; NULL once aborted here */
    pthread_mutex_t mu; /* held around every NCCL call on comm (see the top) */
    atomic_int aborted; /* LIVE, or who aborted it */
    cudaStream_t stream;
    int device;
    int rank, size;
    int32_t *scratch;   /* device: the barrier's one element */
    cudaEvent_t ready;  /* recorded on the legacy stream: the caller's work so far */
    void *host;         /* host_be's impl: bootstrap and host buffers */
    nccl_handle *queue; /* send/recv started, not yet launched: oldest first */
    nccl_handle **queue_tail;
    char version[64];
} nccl_comm;

enum { H_DONE = 0, H_HOST, H_NCCL };

struct nccl_handle {
    int kind;
    void *host_handle; /* H_HOST */
    cudaEvent_t ev;    /* H_NCCL: recorded after the operation */
    int queued;        /* H_NCCL send/recv not yet launched */
    int failed;        /* the group launch of a queued send/recv failed */
    gt_comm_op_desc d; /* queued: what to launch */
    nccl_handle *next; /* queue */
};

/* ---- errors ------------------------------------------------------------------ */

/* With m: called with m->mu held. */
static gt_status nccl_error(nccl_comm *m, ncclResult_t r, const char *what) {
    const char *last =
        m && m->comm && atomic_load(&m->aborted) == LIVE ? ncclGetLastError(m->comm) : NULL;
    return GT_ERR(GT_ERR_COMM, "%s failed: %s%s%s", what, ncclGetErrorString(r),
                  last && last[0] ? ": " : "", last && last[0] ? last : "");
}

static gt_status cuda_error(cudaError_t e, const char *what) {
    return GT_ERR(GT_ERR_DEVICE, "%s failed: %s (%s)", what, cudaGetErrorString(e),
                  cudaGetErrorName(e));
}

#define GT_NCCL_TRY(m, call)                                                                       \
    do {                                                                                           \
        ncclResult_t gt_nccl_r_ = (call);                                                          \
        if (gt_nccl_r_ != ncclSuccess) return nccl_error((m), gt_nccl_r_, #call);                  \
    } while (0)

/* ---- the communicator's lock (see the top) ------------------------------------------ */

/* The error of an operation on a communicator that was aborted. */
static gt_status aborted_error(nccl_comm *m, const char *what) {
    if (atomic_load(&m->aborted) == ABORTED_BY_JOB)
        return GT_ERR(GT_ERR_TIMEOUT,
                      "%s: the nccl communicator was aborted while the operation waited (the "
                      "watchdog's deadline passed, --comm-timeout, or the job is being "
                      "aborted): the job is ending",
                      what);
    return GT_ERR(GT_ERR_COMM,
                  "%s on an nccl communicator that was aborted after an earlier failure or "
                  "timeout: free it",
                  what);
}

/* The owner's side: 1 with m->mu held when the communicator is live, else
 * 0 (not held). */
static int lock_live(nccl_comm *m) {
    pthread_mutex_lock(&m->mu);
    if (atomic_load(&m->aborted) == LIVE) return 1;
    pthread_mutex_unlock(&m->mu);
    return 0;
}

/* lock_live, with the error of an aborted communicator */
static gt_status comm_lock(nccl_comm *m, const char *what) {
    return lock_live(m) ? GT_OK : aborted_error(m, what);
}

static void comm_unlock(nccl_comm *m) { pthread_mutex_unlock(&m->mu); }

/* The owner's abort after a failure or a cancelled operation, m->mu held
 * and the communicator live: NCCL's kernels stop, the comm is freed. */
static void abort_locked(nccl_comm *m) {
    int live = LIVE;
    atomic_compare_exchange_strong(&m->aborted, &live, ABORTED_HERE);
    ncclCommAbort(m->comm);
    m->comm = NULL;
}

/* ---- where buffers live ---------------------------------------------------------- */

enum { MEM_NONE = 0, MEM_HOST = 1, MEM_DEVICE = 2 };

static int mem_kind(const void *p) {
    if (!p) return MEM_NONE;
    struct cudaPointerAttributes a;
    cudaError_t e = cudaPointerGetAttributes(&a, p);
    if (e != cudaSuccess) {
        cudaGetLastError(); /* not a sticky error: clear it */
        return MEM_HOST;
    }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged ? MEM_DEVICE
                                                                             : MEM_HOST;
}

/* MEM_DEVICE (NCCL), MEM_HOST (the host communicator) or MEM_NONE (no buffer:
 * barrier, count 0). */
static gt_status route_of(const gt_comm_op_desc *d, int *route) {
    int a = mem_kind(d->send), b = mem_kind(d->recv);
    if (a && b && a != b)
        return GT_ERR(GT_ERR_INVALID,
                      "%s: send is %s memory and recv is %s memory: the nccl communicator "
                      "takes both in device memory (NCCL) or both in host memory",
                      gt_coll_name(d->coll), a == MEM_DEVICE ? "device" : "host",
                      b == MEM_DEVICE ? "device" : "host");
    *route = a ? a : b;
    return GT_OK;
}

static int nccl_device_memory(void *impl, const void *p) {
    (void)impl;
    return mem_kind(p) == MEM_DEVICE;
}

/* ---- launching ---------------------------------------------------------------------- */

static ncclDataType_t nccl_type(gt_dtype dt) {
    switch (dt) {
    case GT_DTYPE_FP64:
        return ncclFloat64;
    case GT_DTYPE_BF16:
        return ncclBfloat16;
    case GT_DTYPE_FP16:
        return ncclFloat16;
    case GT_DTYPE_INT32:
        return ncclInt32;
    case GT_DTYPE_INT64:
        return ncclInt64;
    default:
        return ncclFloat32;
    }
}

static ncclRedOp_t nccl_op(gt_redop op) {
    switch (op) {
    case GT_REDOP_MAX:
        return ncclMax;
    case GT_REDOP_MIN:
        return ncclMin;
    default:
        return ncclSum; /* sum, and avg's sum */
    }
}

static gt_status divide(nccl_comm *m, void *buf, size_t n, gt_dtype dt) {
    gt_comm_divide_fn fn = gt_comm_divide();
    if (!fn)
        return GT_ERR(GT_ERR_UNSUPPORTED,
                      "avg on device buffers: no division kernel was given to the "
                      "communicators (gt_comm_set_divide; gt_kernels_init gives the cuda "
                      "backend's)");
    int e = fn(buf, n, (int)dt, m->size, (void *)m->stream);
    if (e != 0) return cuda_error((cudaError_t)e, "avg: the division kernel");
    return GT_OK;
}

/* Makes m->stream wait for the device work issued so far on the legacy
 * default stream and every blocking stream (see the top). Asynchronous. */
static gt_status after_callers_work(nccl_comm *m) {
    GT_CUDA_TRY(cudaEventRecord(m->ready, cudaStreamLegacy));
    GT_CUDA_TRY(cudaStreamWaitEvent(m->stream, m->ready, 0));
    return GT_OK;
}

/* Enqueues a collective (not send/recv) on m->stream; m->mu held. */
static gt_status enqueue(nccl_comm *m, const gt_comm_op_desc *d) {
    ncclDataType_t t = nccl_type(d->dt);
    ncclRedOp_t op = nccl_op(d->op);
    size_t es = gt_dtype_size(d->dt), n = d->count;
    int avg = d->op == GT_REDOP_AVG;
    char *recv = d->recv;
    const char *send = d->send;
    switch (d->coll) {
    case GT_COLL_ALLREDUCE:
        GT_NCCL_TRY(m, ncclAllReduce(send, recv, n, t, op, m->comm, m->stream));
        if (avg) GT_TRY(divide(m, recv, n, d->dt));
        return GT_OK;
    case GT_COLL_REDUCE:
        /* recv is NULL off the root (NCCL only writes it on the root) */
        GT_NCCL_TRY(
            m, ncclReduce(send, recv ? recv : (void *)send, n, t, op, d->root, m->comm, m->stream));
        if (avg && m->rank == d->root) GT_TRY(divide(m, recv, n, d->dt));
        return GT_OK;
    case GT_COLL_BROADCAST:
        GT_NCCL_TRY(m, ncclBroadcast(recv, recv, n, t, d->root, m->comm, m->stream));
        return GT_OK;
    case GT_COLL_ALLGATHER:
        /* NCCL's in place: send == recv + rank * count (comm.c normalised
         * both spellings to send == recv) */
        if (send == recv) send = recv + (size_t)m->rank * n * es;
        GT_NCCL_TRY(m, ncclAllGather(send, recv, n, t, m->comm, m->stream));
        return GT_OK;
    case GT_COLL_REDUCE_SCATTER:
        if (send == recv) {
            /* NCCL's in place leaves block r at recv + r * count; gt_comm's
             * contract is the start of recv (disjoint for r > 0) */
            char *mine = recv + (size_t)m->rank * n * es;
            GT_NCCL_TRY(m, ncclReduceScatter(send, mine, n, t, op, m->comm, m->stream));
            if (m->rank > 0 && n > 0)
                GT_CUDA_TRY(
                    cudaMemcpyAsync(recv, mine, n * es, cudaMemcpyDeviceToDevice, m->stream));
        } else {
            GT_NCCL_TRY(m, ncclReduceScatter(send, recv, n, t, op, m->comm, m->stream));
        }
        if (avg) GT_TRY(divide(m, recv, n, d->dt));
        return GT_OK;
    case GT_COLL_ALLTOALL:
        GT_NCCL_TRY(m, ncclGroupStart());
        for (int j = 0; j < m->size; j++) {
            ncclResult_t r = ncclSend(send + (size_t)j * n * es, n, t, j, m->comm, m->stream);
            if (r == ncclSuccess)
                r = ncclRecv(recv + (size_t)j * n * es, n, t, j, m->comm, m->stream);
            if (r != ncclSuccess) {
                ncclGroupEnd();
                return nccl_error(m, r, "alltoall: ncclSend/ncclRecv");
            }
        }
        GT_NCCL_TRY(m, ncclGroupEnd());
        return GT_OK;
    case GT_COLL_BARRIER:
        /* NCCL has no barrier: an all-reduce of one element every rank must join */
        GT_NCCL_TRY(
            m, ncclAllReduce(m->scratch, m->scratch, 1, ncclInt32, ncclSum, m->comm, m->stream));
        return GT_OK;
    default:
        return GT_ERR(GT_ERR_INVALID, "%s: not a collective", gt_coll_name(d->coll));
    }
}

/* Enqueues a collective (not send/recv) on m->stream, after the caller's work. */
static gt_status launch(nccl_comm *m, const gt_comm_op_desc *d) {
    GT_TRY(after_callers_work(m));
    GT_TRY(comm_lock(m, gt_coll_name(d->coll)));
    gt_status s = enqueue(m, d);
    comm_unlock(m);
    return s;
}

/* Launches the queued send/recv as one group, then records each one's event. */
static gt_status flush(nccl_comm *m) {
    if (!m->queue) return GT_OK;
    gt_status s = after_callers_work(m);
    if (s == GT_OK) s = comm_lock(m, "send/recv");
    if (s != GT_OK) {
        for (nccl_handle *h = m->queue; h; h = h->next) {
            h->queued = 0;
            h->failed = 1;
        }
        m->queue = NULL;
        m->queue_tail = &m->queue;
        return s;
    }
    ncclResult_t r = ncclGroupStart();
    for (nccl_handle *h = m->queue; h && r == ncclSuccess; h = h->next) {
        const gt_comm_op_desc *d = &h->d;
        if (d->coll == GT_COLL_SEND)
            r = ncclSend(d->send, d->count, nccl_type(d->dt), d->root, m->comm, m->stream);
        else
            r = ncclRecv(d->recv, d->count, nccl_type(d->dt), d->root, m->comm, m->stream);
    }
    ncclResult_t r2 = ncclGroupEnd();
    if (r == ncclSuccess) r = r2;
    cudaError_t e = cudaSuccess;
    for (nccl_handle *h = m->queue; h; h = h->next) {
        h->queued = 0;
        if (r == ncclSuccess && e == cudaSuccess) e = cudaEventRecord(h->ev, m->stream);
        h->failed = r != ncclSuccess || e != cudaSuccess;
    }
    m->queue = NULL;
    m->queue_tail = &m->queue;
    s = r != ncclSuccess   ? nccl_error(m, r, "send/recv group (ncclGroupEnd)")
        : e != cudaSuccess ? cuda_error(e, "cudaEventRecord after send/recv")
                           : GT_OK;
    comm_unlock(m);
    return s;
}

static gt_status check_alive(nccl_comm *m, const gt_comm_op_desc *d) {
    if (atomic_load(&m->aborted) != LIVE) return aborted_error(m, gt_coll_name(d->coll));
    return GT_OK;
}

/* A failure NCCL found in the background (a peer died, a network error). */
static gt_status async_error(nccl_comm *m, const char *what) {
    GT_TRY(comm_lock(m, what)); /* aborted meanwhile: that is the error */
    gt_status s = GT_OK;
    ncclResult_t ar = ncclSuccess;
    if (ncclCommGetAsyncError(m->comm, &ar) == ncclSuccess && ar != ncclSuccess &&
        ar != ncclInProgress) {
        s = nccl_error(m, ar, what);
        /* its operations will never complete: release the GPU and the peers */
        abort_locked(m);
    }
    comm_unlock(m);
    return s;
}

/* Polls until the stream is drained: spin, then yield, then after a second
 * sleep 100 us between queries (comm.c's polling rhythm). */
static gt_status stream_wait(nccl_comm *m, const char *what) {
    uint64_t t0 = gt_now_ns();
    for (unsigned polls = 0;; polls++) {
        cudaError_t e = cudaStreamQuery(m->stream);
        /* an abort drains the stream too: what ran did not complete */
        if (atomic_load(&m->aborted) != LIVE) return aborted_error(m, what);
        if (e == cudaSuccess) return GT_OK;
        if (e != cudaErrorNotReady) return cuda_error(e, what);
        if ((polls & 255u) == 255u) {
            GT_TRY(async_error(m, what));
            if (gt_now_ns() - t0 > 1000000000ull) {
                struct timespec ts = {0, 100000};
                nanosleep(&ts, NULL);
                continue;
            }
        }
        if (polls > 1024) sched_yield();
    }
}

/* ---- the backend's operations ---------------------------------------------------- */

static gt_status handle_new(nccl_handle **out) {
    nccl_handle *h = calloc(1, sizeof *h);
    if (!h) return GT_ERR(GT_ERR_OOM, "nccl: out of memory for a request");
    *out = h;
    return GT_OK;
}

static void handle_free(nccl_handle *h) {
    if (h && h->kind == H_NCCL && h->ev) cudaEventDestroy(h->ev);
    free(h);
}

/* A collective of no elements moves nothing on any rank, whatever memory
 * (or NULL) each rank passes: it completes at once, on every route alike. */
static int is_empty(const gt_comm_op_desc *d) {
    return d->count == 0 && d->coll != GT_COLL_BARRIER && d->coll != GT_COLL_SEND &&
           d->coll != GT_COLL_RECV;
}

static gt_status nccl_start(void *impl, const gt_comm_op_desc *d, void **handle) {
    nccl_comm *m = impl;
    int route = 0;
    GT_TRY(route_of(d, &route));
    nccl_handle *h = NULL;
    GT_TRY(handle_new(&h));
    if (is_empty(d)) {
        h->kind = H_DONE;
        *handle = h;
        return GT_OK;
    }
    if (route == MEM_HOST) {
        h->kind = H_HOST;
        gt_status s = host_be->start(m->host, d, &h->host_handle);
        if (s != GT_OK) {
            free(h);
            return s;
        }
        *handle = h;
        return GT_OK;
    }
    gt_status s = check_alive(m, d);
    if (s == GT_OK) {
        h->kind = H_NCCL;
        cudaError_t e = cudaEventCreateWithFlags(&h->ev, cudaEventDisableTiming);
        if (e != cudaSuccess) {
            h->ev = NULL;
            s = cuda_error(e, "cudaEventCreateWithFlags");
        }
    }
    if (s == GT_OK && cudaSetDevice(m->device) != cudaSuccess)
        s = GT_ERR(GT_ERR_DEVICE, "cudaSetDevice(%d) failed", m->device);
    if (s == GT_OK && (d->coll == GT_COLL_SEND || d->coll == GT_COLL_RECV)) {
        h->queued = 1;
        h->d = *d;
        *m->queue_tail = h;
        m->queue_tail = &h->next;
        *handle = h;
        return GT_OK;
    }
    if (s == GT_OK) s = flush(m);
    if (s == GT_OK) s = launch(m, d);
    if (s == GT_OK) {
        cudaError_t e = cudaEventRecord(h->ev, m->stream);
        if (e != cudaSuccess) s = cuda_error(e, "cudaEventRecord");
    }
    if (s != GT_OK) {
        handle_free(h);
        return s;
    }
    *handle = h;
    return GT_OK;
}

static gt_status nccl_test(void *impl, void *handle, int *done) {
    nccl_comm *m = impl;
    nccl_handle *h = handle;
    *done = 0;
    gt_status s = GT_OK;
    switch (h->kind) {
    case H_DONE:
        break;
    case H_HOST:
        s = host_be->test(m->host, h->host_handle, done);
        /* the host backend released its handle when done or failed */
        if (s != GT_OK || *done) break;
        return GT_OK;
    default:
        if (h->queued) s = flush(m);
        if (s == GT_OK && h->failed)
            s = GT_ERR(GT_ERR_COMM, "%s: its send/recv group failed to launch",
                       gt_coll_name(h->d.coll));
        if (s == GT_OK) {
            cudaError_t e = cudaEventQuery(h->ev);
            if (atomic_load(&m->aborted) != LIVE) {
                s = aborted_error(m, "nccl operation");
            } else if (e == cudaErrorNotReady) {
                s = async_error(m, "nccl operation");
                if (s == GT_OK) return GT_OK;
            } else if (e != cudaSuccess) {
                s = cuda_error(e, "cudaEventQuery");
            }
        }
        break;
    }
    *done = 1;
    handle_free(h);
    return s;
}

/* The host backend's blocking form where it has none (self: every
 * collective completes inside start). comm.c never asks for a blocking
 * send/recv, which could wait for ever here. */
static gt_status blocking_by_test(nccl_comm *m, const gt_comm_op_desc *d) {
    void *h = NULL;
    GT_TRY(host_be->start(m->host, d, &h));
    for (int done = 0; !done;) {
        GT_TRY(host_be->test(m->host, h, &done));
        if (!done) sched_yield();
    }
    return GT_OK;
}

static gt_status nccl_blocking(void *impl, const gt_comm_op_desc *d) {
    nccl_comm *m = impl;
    int route = 0;
    GT_TRY(route_of(d, &route));
    if (is_empty(d)) return GT_OK;
    if (route == MEM_HOST)
        return host_be->blocking ? host_be->blocking(m->host, d) : blocking_by_test(m, d);
    GT_TRY(check_alive(m, d));
    if (cudaSetDevice(m->device) != cudaSuccess)
        return GT_ERR(GT_ERR_DEVICE, "cudaSetDevice(%d) failed", m->device);
    GT_TRY(flush(m));
    GT_TRY(launch(m, d));
    return stream_wait(m, gt_coll_name(d->coll));
}

/* NCCL cannot take back an enqueued operation: a send/recv still in the
 * queue is dropped cleanly; anything launched is abandoned and the NCCL
 * communicator aborted, so that its kernels stop holding the GPU. */
static int nccl_cancel(void *impl, void *handle) {
    nccl_comm *m = impl;
    nccl_handle *h = handle;
    if (h->kind == H_HOST) {
        int ok = host_be->cancel(m->host, h->host_handle);
        free(h);
        return ok;
    }
    if (h->kind == H_NCCL && h->queued) {
        for (nccl_handle **p = &m->queue; *p; p = &(*p)->next) {
            if (*p != h) continue;
            *p = h->next;
            if (!*p) m->queue_tail = p;
            break;
        }
        handle_free(h);
        return 1;
    }
    int clean = h->kind == H_DONE;
    handle_free(h);
    if (!clean && lock_live(m)) {
        abort_locked(m);
        comm_unlock(m);
    }
    return clean;
}

/* ---- world, split, destroy -------------------------------------------------------- */

/* Picks and selects this rank's GPU; on failure `why` says what is wrong.
 * Collective over the host world `host` (finds the ranks of this node). */
static void select_device(void *host, int *dev, char *why, size_t len) {
    *dev = -1;
    why[0] = '\0';
    int node_rank = 0;
#if GT_HAVE_MPI
    MPI_Comm mc = *(MPI_Comm *)host_be->native(host);
    MPI_Comm node = MPI_COMM_NULL;
    int node_size = 1;
    if (MPI_Comm_split_type(mc, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        MPI_Comm_rank(node, &node_rank);
        MPI_Comm_size(node, &node_size);
    }
#else
    (void)host;
#endif
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count <= 0) {
        snprintf(why, len,
                 "no CUDA device is visible to this process (cudaGetDeviceCount: %s): NCCL "
                 "runs one rank per GPU; run on a machine with GPUs, or use --comm %s",
                 e != cudaSuccess ? cudaGetErrorString(e) : "0 devices", host_be->name);
        cudaGetLastError();
    } else {
        int local = gt_env_local_rank();
        *dev = (local >= 0 ? local : node_rank) % count;
        e = cudaSetDevice(*dev);
        if (e == cudaSuccess) e = cudaFree(NULL); /* create the context now */
        if (e != cudaSuccess) {
            snprintf(why, len, "cannot use CUDA device %d of %d: %s", *dev, count,
                     cudaGetErrorString(e));
            cudaGetLastError();
        }
    }
#if GT_HAVE_MPI
    /* one GPU per rank: compare the UUIDs of the ranks of this node (a
     * per-rank CUDA_VISIBLE_DEVICES makes every rank's device 0, yet distinct) */
    unsigned char mine[17] = {0};
    struct cudaDeviceProp prop;
    if (!why[0] && cudaGetDeviceProperties(&prop, *dev) == cudaSuccess) {
        memcpy(mine, prop.uuid.bytes, 16);
        mine[16] = 1;
    }
    if (node != MPI_COMM_NULL && node_size > 1) {
        unsigned char *all = calloc((size_t)node_size, sizeof mine);
        if (all &&
            MPI_Allgather(mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE,
                          node) == MPI_SUCCESS &&
            mine[16]) {
            for (int j = 0; j < node_size && !why[0]; j++) {
                const unsigned char *u = all + (size_t)j * sizeof mine;
                if (j != node_rank && u[16] && memcmp(u, mine, 16) == 0)
                    snprintf(why, len,
                             "ranks %d and %d of this node would share CUDA device %d "
                             "(%d visible): NCCL needs one GPU per rank; launch at most as "
                             "many ranks per node as GPUs",
                             j < node_rank ? j : node_rank, j < node_rank ? node_rank : j, *dev,
                             count);
            }
        }
        free(all);
    }
    if (node != MPI_COMM_NULL) MPI_Comm_free(&node);
#endif
}

static void version_string(char *buf, size_t len) {
    int v = 0;
    if (ncclGetVersion(&v) == ncclSuccess && v >= 20900)
        snprintf(buf, len, "NCCL %d.%d.%d", v / 10000, (v / 100) % 100, v % 100);
    else if (v > 0)
        snprintf(buf, len, "NCCL %d.%d.%d", v / 1000, (v % 1000) / 100, v % 100);
    else
        snprintf(buf, len, "NCCL (version unknown)");
}

/* The per-communicator CUDA state around an initialised NCCL comm. */
static gt_status comm_setup(nccl_comm *m, ncclComm_t comm, int device, void *host) {
    pthread_mutex_init(&m->mu, NULL);
    atomic_init(&m->aborted, LIVE);
    m->comm = comm;
    m->device = device;
    m->host = host;
    m->queue_tail = &m->queue;
    GT_NCCL_TRY(m, ncclCommUserRank(comm, &m->rank));
    GT_NCCL_TRY(m, ncclCommCount(comm, &m->size));
    GT_CUDA_TRY(cudaStreamCreateWithFlags(&m->stream, cudaStreamNonBlocking));
    GT_CUDA_TRY(cudaEventCreateWithFlags(&m->ready, cudaEventDisableTiming));
    GT_CUDA_TRY(cudaMalloc((void **)&m->scratch, sizeof *m->scratch));
    GT_CUDA_TRY(cudaMemset(m->scratch, 0, sizeof *m->scratch));
    version_string(m->version, sizeof m->version);
    return GT_OK;
}

static void comm_release(nccl_comm *m) {
    if (!m) return;
    cudaSetDevice(m->device);
    if (atomic_load(&m->aborted) == LIVE) {
        /* what the user left queued or running completes before the end */
        int drained = flush(m) == GT_OK && m->stream && stream_wait(m, "free") == GT_OK;
        if (lock_live(m)) {
            if (drained) {
                ncclCommDestroy(m->comm);
                m->comm = NULL;
                atomic_store(&m->aborted, ABORTED_HERE);
            } else {
                abort_locked(m);
            }
            comm_unlock(m);
        }
    }
    if (m->stream) cudaStreamDestroy(m->stream);
    if (m->ready) cudaEventDestroy(m->ready);
    if (m->scratch) cudaFree(m->scratch);
    if (m->host) host_be->destroy(m->host);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

static gt_status nccl_world(void **impl, int *rank, int *size) {
#if !GT_HAVE_MPI
    long procs = gt_env_launch_size();
    if (procs > 1)
        return GT_ERR(GT_ERR_UNSUPPORTED,
                      "communicator backend 'nccl' on %ld launched processes needs MPI to start "
                      "(NCCL's unique id is broadcast with MPI) and this build has no MPI "
                      "(-DGT_WITH_MPI=OFF or MPI was not found): rebuild with MPI, or run one "
                      "process",
                      procs);
#endif
    void *host = NULL;
    int r = 0, n = 1;
    GT_TRY(host_be->world(&host, &r, &n));
    int dev = -1;
    char why[320];
    select_device(host, &dev, why, sizeof why);
    /* every rank learns whether any failed, so none waits in NCCL's init */
    int bad = why[0] != 0, any = bad;
#if GT_HAVE_MPI
    MPI_Comm mc = *(MPI_Comm *)host_be->native(host);
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, mc);
#endif
    if (any) {
        host_be->destroy(host);
        if (!bad)
            snprintf(why, sizeof why,
                     "another rank could not select its GPU (its message says why)");
        return GT_ERR(GT_ERR_UNSUPPORTED, "communicator backend 'nccl' on rank %d: %s", r, why);
    }
    struct {
        int ok;
        ncclUniqueId id;
    } boot;
    memset(&boot, 0, sizeof boot);
    ncclResult_t rc = ncclSuccess;
    if (r == 0) {
        rc = ncclGetUniqueId(&boot.id);
        boot.ok = rc == ncclSuccess;
    }
#if GT_HAVE_MPI
    MPI_Bcast(&boot, (int)sizeof boot, MPI_BYTE, 0, mc);
#endif
    ncclComm_t comm = NULL;
    gt_status s = GT_OK;
    if (!boot.ok)
        s = r == 0 ? nccl_error(NULL, rc, "ncclGetUniqueId")
                   : GT_ERR(GT_ERR_COMM, "rank 0 could not create NCCL's unique id");
    if (s == GT_OK) {
        rc = ncclCommInitRank(&comm, n, boot.id, r);
        if (rc != ncclSuccess) s = nccl_error(NULL, rc, "ncclCommInitRank");
    }
    nccl_comm *m = NULL;
    if (s == GT_OK && !(m = calloc(1, sizeof *m))) s = GT_ERR(GT_ERR_OOM, "nccl: out of memory");
    if (s == GT_OK) s = comm_setup(m, comm, dev, host);
    if (s != GT_OK) {
        if (m) {
            comm_release(m); /* releases comm and host too */
        } else {
            if (comm) ncclCommDestroy(comm);
            host_be->destroy(host);
        }
        return gt_error_wrap(s, "creating the nccl communicator (rank %d of %d, CUDA device %d)", r,
                             n, dev);
    }
    *impl = m;
    *rank = m->rank;
    *size = m->size;
    return GT_OK;
}

static gt_status nccl_split(void *impl, int color, int key, void **new_impl, int *new_rank,
                            int *new_size) {
    nccl_comm *m = impl;
    *new_impl = NULL;
    if (atomic_load(&m->aborted) != LIVE)
        return GT_ERR(GT_ERR_COMM, "split of an nccl communicator that was aborted: free it");
    cudaSetDevice(m->device);
    GT_TRY(flush(m));
    void *host = NULL;
    int mr = 0, ms = 0;
    GT_TRY(host_be->split(m->host, color, key, &host, &mr, &ms));
    ncclComm_t nc = NULL;
    gt_status ls = comm_lock(m, "split");
    if (ls != GT_OK) {
        if (host) host_be->destroy(host);
        return ls;
    }
    ncclResult_t rc =
        ncclCommSplit(m->comm, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &nc, NULL);
    if (rc != ncclSuccess) ls = nccl_error(m, rc, "ncclCommSplit");
    comm_unlock(m);
    if (rc != ncclSuccess) {
        if (host) host_be->destroy(host);
        return ls;
    }
    if (!host || !nc) {
        if (nc) ncclCommDestroy(nc);
        if (host) host_be->destroy(host);
        if (!host != !nc)
            return GT_ERR(GT_ERR_COMM,
                          "split (color %d): the host communicator (%s) and NCCL disagree on "
                          "membership",
                          color, host_be->name);
        return GT_OK;
    }
    nccl_comm *n = calloc(1, sizeof *n);
    if (!n) {
        ncclCommDestroy(nc);
        host_be->destroy(host);
        return GT_ERR(GT_ERR_OOM, "split: out of memory");
    }
    gt_status s = comm_setup(n, nc, m->device, host);
    /* both order by key, then old rank: a mismatch would mix up host and device traffic */
    if (s == GT_OK && (n->rank != mr || n->size != ms))
        s = GT_ERR(GT_ERR_COMM, "split (color %d): NCCL made rank %d of %d, %s rank %d of %d",
                   color, n->rank, n->size, host_be->name, mr, ms);
    if (s != GT_OK) {
        comm_release(n);
        return s;
    }
    *new_impl = n;
    *new_rank = n->rank;
    *new_size = n->size;
    return GT_OK;
}

static void nccl_destroy(void *impl) {
    comm_release(impl);
}

/* ncclComm_t * (for the collectives suite's raw baseline). */
static void *nccl_native(void *impl) {
    return &((nccl_comm *)impl)->comm;
}

static const char *nccl_version(void *impl) {
    return ((nccl_comm *)impl)->version;
}

/* From the watchdog's thread too: NCCL's kernels are stopped first (so the
 * GPU is released even if MPI_Abort leaves a process behind), then the host
 * communicator ends every process of the job. The owning thread may be
 * inside an NCCL call on the communicator (a poll, an enqueue): `aborted`
 * first, so that it makes no new call, then the lock, so that the comm is
 * not freed under the call it is in. An owner stuck in NCCL for a second
 * keeps its communicator: ending the job releases the GPU. */
static void nccl_abort(void *impl, int code) {
    nccl_comm *m = impl;
    int live = LIVE;
    if (atomic_compare_exchange_strong(&m->aborted, &live, ABORTED_BY_JOB)) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 1;
        if (pthread_mutex_timedlock(&m->mu, &until) == 0) {
            if (m->comm) ncclCommAbort(m->comm);
            m->comm = NULL;
            pthread_mutex_unlock(&m->mu);
        } else {
            fprintf(stderr,
                    "gauntlet: nccl: rank %d: the communicator's thread has been inside an NCCL "
                    "call for over 1 s: the NCCL communicator is left to the end of the job, "
                    "not aborted under that call\n",
                    m->rank);
        }
    }
    host_be->abort(m->host, code);
}

const gt_comm_backend gt_comm_nccl_backend = {
    .name = "nccl",
    .world = nccl_world,
    .start = nccl_start,
    .blocking = nccl_blocking,
    .test = nccl_test,
    .cancel = nccl_cancel,
    .split = nccl_split,
    .native = nccl_native,
    .version = nccl_version,
    .abort = nccl_abort,
    .destroy = nccl_destroy,
    .device_memory = nccl_device_memory,
};

#else /* no NCCL */

static gt_status nccl_world(void **impl, int *rank, int *size) {
    (void)impl;
    (void)rank;
    (void)size;
    return GT_ERR(GT_ERR_UNSUPPORTED,
                  "communicator backend 'nccl' is not built in (it needs the CUDA toolkit and "
                  "NCCL at configure time: configured with -DGT_WITH_CUDA=OFF, or nccl.h / "
                  "libnccl were not found; set NCCL_HOME): use 'mpi' or 'self', or rebuild "
                  "with NCCL");
}

/* Only world() is ever called: without a world there is nothing to operate on. */
const gt_comm_backend gt_comm_nccl_backend = {
    .name = "nccl",
    .world = nccl_world,
};

#endif
