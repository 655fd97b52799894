/* The CUDA emulator's stand-in for NCCL: exactly the functions the nccl
 * communicator (engine/comm_nccl.c) and the collectives suite's raw baseline
 * (suites/coll_raw_nccl.c) call, compiled into the emulator's library when
 * GT_CUDA_EMULATOR is on (docs/cuda-emulator.md). The real header (nccl.h)
 * gives the types and signatures.
 *
 * One rank per process: a communicator has nranks 1 (the emulator has one
 * device, and nothing here carries data between processes), so every
 * collective is a copy of the rank's own contribution (a reduction of one
 * value is that value), done at once: the emulator's streams are
 * synchronous. Send and receive to self must be posted inside one
 * ncclGroupStart/End, which pairs them in posting order; a receive left
 * without its send holds the stream for ever, as NCCL's kernel would wait.
 *
 * Strict where that finds bugs in the caller: a communicator used after
 * ncclCommAbort or ncclCommDestroy, or freed by one thread while another is
 * inside a call on it (NCCL frees the structure that call reads: a
 * use-after-free), stops the process with a message. Buffers must be device memory, the datatype and
 * reduction NCCL's, root and peer rank 0. Every refusal leaves a message
 * for ncclGetLastError.
 *
 * Fault injection, read at every call:
 *   GT_EMU_NCCL_HANG=1             operations never complete: their stream
 *                                  stays busy (cudaStreamQuery and the events
 *                                  recorded after them say not ready) until
 *                                  ncclCommAbort, which stops them as NCCL
 *                                  stops its kernels; the async error stays
 *                                  ncclSuccess (a peer that never arrives)
 *   GT_EMU_NCCL_ASYNC_DELAY_US=N   ncclCommGetAsyncError takes N us inside,
 *                                  reading the communicator before and after
 *                                  (a slow poll that another thread's abort
 *                                  can overlap) */
#include <nccl.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <atomic>
#include <mutex>
#include <set>
#include <vector>

/* emu.cc: a stream whose work does not complete while held */
void gt_emu_stream_hold(cudaStream_t s, bool held);

struct ncclComm {
    unsigned magic;
    std::atomic<int> busy;             /* threads inside a call on it */
    std::atomic<const char *> busy_in; /* the call, for the message */
    ncclResult_t async;
    std::set<cudaStream_t> held; /* streams GT_EMU_NCCL_HANG holds */
};

namespace {

const unsigned k_magic = 0x6e63636cu; /* "nccl" */
const unsigned k_id_magic = 0x67746e63u;

thread_local char last_msg[512];
thread_local int group_depth;

struct p2p {
    bool send;
    const void *sbuf;
    void *rbuf;
    size_t bytes;
    ncclComm *comm;
    cudaStream_t stream;
};
thread_local std::vector<p2p> group_p2p;

/* never destroyed: a watchdog's exit() may run static destructors while
 * another thread is still inside a call */
std::mutex live_mu;
std::set<const ncclComm *> &live = *new std::set<const ncclComm *>;

ncclResult_t fail(ncclResult_t r, const char *fn, const char *fmt, ...) {
    int n = snprintf(last_msg, sizeof last_msg, "%s: ", fn);
    if (n < 0 || (size_t)n >= sizeof last_msg) n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_msg + n, sizeof last_msg - (size_t)n, fmt, ap);
    va_end(ap);
    return r;
}

[[noreturn]] void fatal(const char *fmt, ...) {
    fprintf(stderr, "gauntlet nccl emulator: ");
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    fflush(stderr);
    abort();
}

long env_long(const char *name) {
    const char *v = getenv(name);
    return v && v[0] ? strtol(v, nullptr, 10) : 0;
}

bool is_live(const ncclComm *c) {
    std::lock_guard<std::mutex> g(live_mu);
    return c && live.count(c) != 0;
}

/* A call on comm: it must be alive (else the caller uses freed memory), and
 * it is counted as busy until the matching leave. */
void enter(ncclComm *c, const char *fn) {
    if (!c) return;
    if (!is_live(c))
        fatal("%s on a communicator that ncclCommAbort or ncclCommDestroy already freed "
              "(a use after free)",
              fn);
    c->busy_in.store(fn);
    c->busy.fetch_add(1);
}
void leave(ncclComm *c) {
    if (c) c->busy.fetch_sub(1);
}

struct in_call {
    ncclComm *c;
    in_call(ncclComm *comm, const char *fn) : c(comm) { enter(c, fn); }
    ~in_call() { leave(c); }
};

size_t type_size(ncclDataType_t t) {
    switch (t) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
        return 1;
    case ncclFloat16:
    case ncclBfloat16:
        return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
        return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
        return 8;
    default:
        return 0;
    }
}

bool device_memory(const void *p) {
    cudaPointerAttributes a;
    return p && cudaPointerGetAttributes(&a, p) == cudaSuccess &&
           (a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged);
}

/* The checks every operation shares; bytes gets the payload's size. */
ncclResult_t check_op(const char *fn, ncclComm *c, ncclDataType_t t, size_t count,
                      size_t *bytes) {
    if (!c) return fail(ncclInvalidArgument, fn, "comm is NULL");
    if ((int)t < 0 || (int)t >= ncclNumTypes || !type_size(t))
        return fail(ncclInvalidArgument, fn, "invalid datatype %d", (int)t);
    *bytes = count * type_size(t);
    return ncclSuccess;
}

ncclResult_t check_buf(const char *fn, const char *which, const void *p, size_t bytes) {
    if (bytes && !device_memory(p))
        return fail(ncclInvalidArgument, fn, "%s %p is not device memory", which, p);
    return ncclSuccess;
}

ncclResult_t check_root(const char *fn, const char *what, int r) {
    if (r != 0)
        return fail(ncclInvalidArgument, fn, "%s %d out of range for a communicator of 1 rank",
                    what, r);
    return ncclSuccess;
}

ncclResult_t check_redop(const char *fn, ncclRedOp_t op) {
    if ((int)op < 0 || (int)op >= ncclNumOps)
        return fail(ncclInvalidArgument, fn, "invalid reduction %d", (int)op);
    return ncclSuccess;
}

/* GT_EMU_NCCL_HANG: the operation is enqueued and never runs. */
bool hang(ncclComm *c, cudaStream_t s) {
    if (env_long("GT_EMU_NCCL_HANG") != 1) return false;
    c->held.insert(s);
    gt_emu_stream_hold(s, true);
    return true;
}

/* A collective of one rank: recv gets the rank's own bytes. */
ncclResult_t copy_op(const char *fn, const void *send, void *recv, size_t bytes, ncclComm *c,
                     cudaStream_t s) {
    ncclResult_t r = check_buf(fn, "sendbuff", send, bytes);
    if (r == ncclSuccess) r = check_buf(fn, "recvbuff", recv, bytes);
    if (r != ncclSuccess || hang(c, s)) return r;
    if (bytes && send != recv) memmove(recv, send, bytes);
    return ncclSuccess;
}

void release(ncclComm *c) {
    for (cudaStream_t s : c->held) gt_emu_stream_hold(s, false);
    c->held.clear();
}

/* Destroy and abort: nobody may be inside a call on it (that call would read
 * what is freed here). */
ncclResult_t comm_free(ncclComm *c, const char *fn) {
    if (!c) return ncclSuccess;
    if (!is_live(c))
        fatal("%s of a communicator already freed (a double free)", fn);
    if (c->busy.load() != 0)
        fatal("%s while another thread is inside %s on the same communicator: the communicator "
              "is freed under that call (a use after free when it reads it again)",
              fn, c->busy_in.load());
    {
        std::lock_guard<std::mutex> g(live_mu);
        live.erase(c);
    }
    release(c);
    c->magic = 0;
    delete c;
    return ncclSuccess;
}

ncclComm *comm_new() {
    ncclComm *c = new ncclComm();
    c->magic = k_magic;
    c->busy.store(0);
    c->busy_in.store("");
    c->async = ncclSuccess;
    std::lock_guard<std::mutex> g(live_mu);
    live.insert(c);
    return c;
}

} // namespace

extern "C" {

ncclResult_t ncclGetVersion(int *version) {
    if (!version) return fail(ncclInvalidArgument, "ncclGetVersion", "version is NULL");
    *version = NCCL_VERSION_CODE;
    return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t r) {
    switch (r) {
    case ncclSuccess:
        return "no error";
    case ncclUnhandledCudaError:
        return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError:
        return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError:
        return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument:
        return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
        return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError:
        return "remote process exited or there was a network error";
    case ncclInProgress:
        return "NCCL operation in progress";
    default:
        return "unknown result code";
    }
}

/* NCCL's comm argument here is not read (documented as unused in 2.16). */
const char *ncclGetLastError(ncclComm_t comm) {
    (void)comm;
    return last_msg;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
    if (!id) return fail(ncclInvalidArgument, "ncclGetUniqueId", "uniqueId is NULL");
    memset(id, 0, sizeof *id);
    memcpy(id->internal, &k_id_magic, sizeof k_id_magic);
    return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
    const char *fn = "ncclCommInitRank";
    if (!comm) return fail(ncclInvalidArgument, fn, "comm is NULL");
    *comm = nullptr;
    unsigned m = 0;
    memcpy(&m, id.internal, sizeof m);
    if (m != k_id_magic)
        return fail(ncclInvalidArgument, fn, "the unique id was not made by ncclGetUniqueId");
    if (nranks != 1)
        return fail(ncclInvalidUsage, fn,
                    "nranks %d: the emulator's NCCL stand-in has one rank per communicator "
                    "(one emulated device, no transport between processes)",
                    nranks);
    if (rank != 0) return fail(ncclInvalidArgument, fn, "rank %d of 1", rank);
    *comm = comm_new();
    return ncclSuccess;
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                           ncclConfig_t *config) {
    (void)key;
    (void)config;
    in_call ic(comm, "ncclCommSplit");
    if (!comm || !newcomm) return fail(ncclInvalidArgument, "ncclCommSplit", "NULL argument");
    *newcomm = color == NCCL_SPLIT_NOCOLOR ? nullptr : comm_new();
    return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank) {
    in_call ic(comm, "ncclCommUserRank");
    if (!comm || !rank) return fail(ncclInvalidArgument, "ncclCommUserRank", "NULL argument");
    *rank = 0;
    return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int *count) {
    in_call ic(comm, "ncclCommCount");
    if (!comm || !count) return fail(ncclInvalidArgument, "ncclCommCount", "NULL argument");
    *count = 1;
    return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError) {
    in_call ic(comm, "ncclCommGetAsyncError");
    if (!comm || !asyncError)
        return fail(ncclInvalidArgument, "ncclCommGetAsyncError", "NULL argument");
    /* read before and after the wait, as NCCL reads the communicator's state */
    volatile unsigned before = comm->magic;
    long us = env_long("GT_EMU_NCCL_ASYNC_DELAY_US");
    if (us > 0) {
        struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
        nanosleep(&ts, nullptr);
    }
    volatile unsigned after = comm->magic;
    if (before != k_magic || after != k_magic)
        fatal("ncclCommGetAsyncError: the communicator was freed during the call");
    *asyncError = comm->async;
    return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) { return comm_free(comm, "ncclCommDestroy"); }

/* Stops what the communicator left running (its streams drain), then frees it. */
ncclResult_t ncclCommAbort(ncclComm_t comm) { return comm_free(comm, "ncclCommAbort"); }

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream) {
    const char *fn = "ncclAllReduce";
    in_call ic(comm, fn);
    size_t bytes = 0;
    ncclResult_t r = check_op(fn, comm, datatype, count, &bytes);
    if (r == ncclSuccess) r = check_redop(fn, op);
    if (r != ncclSuccess) return r;
    return copy_op(fn, sendbuff, recvbuff, bytes, comm, stream);
}

ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count,
                        ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                        cudaStream_t stream) {
    const char *fn = "ncclReduce";
    in_call ic(comm, fn);
    size_t bytes = 0;
    ncclResult_t r = check_op(fn, comm, datatype, count, &bytes);
    if (r == ncclSuccess) r = check_root(fn, "root", root);
    if (r == ncclSuccess) r = check_redop(fn, op);
    if (r != ncclSuccess) return r;
    return copy_op(fn, sendbuff, recvbuff, bytes, comm, stream);
}

ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream) {
    const char *fn = "ncclBroadcast";
    in_call ic(comm, fn);
    size_t bytes = 0;
    ncclResult_t r = check_op(fn, comm, datatype, count, &bytes);
    if (r == ncclSuccess) r = check_root(fn, "root", root);
    if (r != ncclSuccess) return r;
    return copy_op(fn, sendbuff, recvbuff, bytes, comm, stream);
}

ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
    const char *fn = "ncclAllGather";
    in_call ic(comm, fn);
    size_t bytes = 0;
    ncclResult_t r = check_op(fn, comm, datatype, sendcount, &bytes);
    if (r != ncclSuccess) return r;
    return copy_op(fn, sendbuff, recvbuff, bytes, comm, stream);
}

ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream) {
    const char *fn = "ncclReduceScatter";
    in_call ic(comm, fn);
    size_t bytes = 0;
    ncclResult_t r = check_op(fn, comm, datatype, recvcount, &bytes);
    if (r == ncclSuccess) r = check_redop(fn, op);
    if (r != ncclSuccess) return r;
    return copy_op(fn, sendbuff, recvbuff, bytes, comm, stream);
}

static ncclResult_t post_p2p(const char *fn, bool send, const void *sbuf, void *rbuf,
                             size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                             cudaStream_t stream) {
    in_call ic(comm, fn);
    size_t bytes = 0;
    ncclResult_t r = check_op(fn, comm, datatype, count, &bytes);
    if (r == ncclSuccess) r = check_root(fn, "peer", peer);
    if (r == ncclSuccess) r = check_buf(fn, send ? "sendbuff" : "recvbuff", send ? sbuf : rbuf, bytes);
    if (r != ncclSuccess) return r;
    if (group_depth == 0)
        return fail(ncclInvalidUsage, fn,
                    "a %s to self outside ncclGroupStart/End would wait for ever for its %s",
                    send ? "send" : "receive", send ? "receive" : "send");
    group_p2p.push_back(p2p{send, sbuf, rbuf, bytes, comm, stream});
    return ncclSuccess;
}

ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
    return post_p2p("ncclSend", true, sendbuff, nullptr, count, datatype, peer, comm, stream);
}

ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
    return post_p2p("ncclRecv", false, nullptr, recvbuff, count, datatype, peer, comm, stream);
}

ncclResult_t ncclGroupStart(void) {
    group_depth++;
    return ncclSuccess;
}

/* The outermost end launches the group's sends and receives: the k-th send
 * of a communicator meets its k-th receive. */
ncclResult_t ncclGroupEnd(void) {
    const char *fn = "ncclGroupEnd";
    if (group_depth == 0) return fail(ncclInvalidUsage, fn, "no matching ncclGroupStart");
    if (--group_depth > 0) return ncclSuccess;
    std::vector<p2p> ops;
    ops.swap(group_p2p);
    ncclResult_t r = ncclSuccess;
    std::vector<bool> used(ops.size(), false);
    for (size_t i = 0; i < ops.size(); i++) {
        if (used[i] || !ops[i].send) continue;
        size_t j = 0;
        for (; j < ops.size(); j++)
            if (!used[j] && !ops[j].send && ops[j].comm == ops[i].comm) break;
        if (j == ops.size()) continue; /* a send without its receive: waits below */
        used[i] = used[j] = true;
        if (ops[i].bytes != ops[j].bytes) {
            r = fail(ncclInvalidUsage, fn, "a send of %zu bytes meets a receive of %zu bytes",
                     ops[i].bytes, ops[j].bytes);
            continue;
        }
        if (!is_live(ops[i].comm))
            fatal("%s: a communicator freed inside the group", fn);
        if (hang(ops[i].comm, ops[i].stream) | hang(ops[j].comm, ops[j].stream)) continue;
        if (ops[i].bytes) memmove(ops[j].rbuf, ops[i].sbuf, ops[i].bytes);
    }
    for (size_t i = 0; i < ops.size(); i++) {
        if (used[i]) continue;
        if (!is_live(ops[i].comm)) fatal("%s: a communicator freed inside the group", fn);
        fprintf(stderr,
                "gauntlet nccl emulator: an %s to self with no matching %s in its group: its "
                "stream waits for ever, as NCCL's would\n",
                ops[i].send ? "ncclSend" : "ncclRecv", ops[i].send ? "ncclRecv" : "ncclSend");
        ops[i].comm->held.insert(ops[i].stream);
        gt_emu_stream_hold(ops[i].stream, true);
    }
    return r;
}

} // extern "C"
