/* Communicators: the one interface every distributed part of gauntlet uses
 * (data parallelism, the collectives suite, consistency checks).
 *
 * Backends: "self" (one process, no MPI, always built), "mpi" (built with
 * MPI) and "nccl" (built with CUDA, NCCL and MPI: engine/comm_nccl.c says
 * how it starts, picks its GPU and completes operations). A backend is
 * a table of non-blocking primitives, plus optionally the library's own
 * blocking collectives (gt_comm_backend below); this layer adds what every
 * backend shares: blocking forms, sequence numbers, the watchdog deadline,
 * statistics, and the deterministic tree all-reduce.
 *
 * Buffers: host memory for self and mpi. nccl: device memory (cudaMalloc or
 * managed) runs on NCCL, on the communicator's own stream, which first
 * waits (on the GPU, not the host) for the work issued so far on the legacy
 * default stream and on every blocking stream, the cuda backend's included;
 * work on a caller's non-blocking stream must be synchronised first. Host
 * memory runs on the MPI communicator the nccl one was bootstrapped with,
 * so small host exchanges (flags, timings) keep working; both kinds in one
 * operation is GT_ERR_INVALID, and every rank must pass the same kind.
 * nccl send/recv have no tags: messages between two ranks match in the
 * order they were posted (the tag is only range-checked), and a receive's
 * count must equal the send's (NCCL's rule).
 * count is in elements of dtype. In-place: pass the same pointer as send
 * and recv.
 * Supported dtypes: fp32, fp64, bf16, fp16, int32, int64. bf16 and fp16
 * reductions accumulate in fp32 per pairwise combination (MPI has no such
 * types: a user-defined op does it) and round back once per combination.
 * GT_REDOP_AVG = sum, then each element divided by the number of ranks (a
 * division, not a multiplication by the reciprocal: correctly rounded; for
 * bf16/fp16 in fp32, rounded once; for integers C division, truncating).
 *
 * Errors: GT_ERR_INVALID (bad argument: dtype, root, count), GT_ERR_COMM (the
 * library failed: message has the MPI or NCCL error string), GT_ERR_DEVICE
 * (nccl: a CUDA call failed), GT_ERR_TIMEOUT (the watchdog: message names
 * the operation, its sequence number, its size and the peers it waited for
 * as far as this rank can tell).
 *
 * The watchdog, and what a timeout does (timeout_s of the config):
 * - a blocking collective (req NULL: allreduce, reduce, broadcast,
 *   allgather, reduce_scatter, alltoall, barrier) that has not returned by
 *   its deadline ENDS THE JOB: the watchdog thread prints
 *   "gauntlet: watchdog: rank R: <message>" to stderr, calls the handler of
 *   gt_comm_set_timeout_handler, then aborts every process (MPI_Abort with
 *   code 3, after ncclCommAbort for nccl; exit for self). A library's blocking collective cannot be
 *   cancelled or left, so there is no status to return. Such calls run the
 *   library's blocking collective (MPI_Allreduce, ...: faster than the
 *   non-blocking ones) with a watchdog thread keeping the deadline.
 * - blocking send/recv, and gt_comm_wait, return GT_ERR_TIMEOUT (see
 *   gt_comm_wait for what stays usable).
 */
#ifndef GT_COMM_H
#define GT_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "engine/dtype.h"
#include "engine/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gt_redop {
    GT_REDOP_SUM = 0,
    GT_REDOP_AVG,
    GT_REDOP_MAX,
    GT_REDOP_MIN,
    GT_REDOP_COUNT
} gt_redop;

const char *gt_redop_name(gt_redop op); /* "sum", "avg", "max", "min" */
gt_status gt_redop_parse(const char *s, gt_redop *out);

typedef enum gt_coll {
    GT_COLL_ALLREDUCE = 0,
    GT_COLL_REDUCE,
    GT_COLL_BROADCAST,
    GT_COLL_ALLGATHER,
    GT_COLL_REDUCE_SCATTER,
    GT_COLL_ALLTOALL,
    GT_COLL_SEND,
    GT_COLL_RECV,
    GT_COLL_BARRIER,
    GT_COLL_COUNT
} gt_coll;

const char *gt_coll_name(gt_coll c); /* "allreduce", ... */

typedef struct gt_comm gt_comm;
typedef struct gt_comm_request gt_comm_request;

typedef struct gt_comm_config {
    const char *backend; /* "auto" (mpi when launched by mpirun/srun and built in, else
                            self), "self", "mpi", "nccl" (never chosen by auto: one rank
                            per GPU; GT_ERR_UNSUPPORTED without a visible GPU, or when
                            NCCL or MPI is not built in) */
    double timeout_s;    /* watchdog deadline of every blocking operation; <= 0: none.
                            default 300 */
} gt_comm_config;

gt_comm_config gt_comm_defaults(void);

/* The world communicator. With mpi this calls MPI_Init_thread
 * (MPI_THREAD_FUNNELED) unless MPI is already initialised; freeing the world
 * communicator calls MPI_Finalize when it initialised MPI. */
gt_status gt_comm_world(const gt_comm_config *cfg, gt_comm **out);
/* Frees a communicator (world or split). Accepts NULL. */
void gt_comm_free(gt_comm *c);

int gt_comm_rank(const gt_comm *c);
int gt_comm_size(const gt_comm *c);
const char *gt_comm_backend_name(const gt_comm *c); /* "self", "mpi", "nccl" */
/* Rank in the world communicator of rank r of c (for messages). */
int gt_comm_world_rank(const gt_comm *c, int r);

/* Names what c is ("the tensor-parallel group of replica 0, stage 1"; NULL
 * or "": nothing) for the watchdog's messages about its operations, which
 * add it after the world ranks. At most 95 characters are kept. */
void gt_comm_set_name(gt_comm *c, const char *name);
/* Sets c's watchdog deadline (seconds, <= 0: none) for the operations started
 * after it; communicators split from c later inherit it. For a probe that
 * must learn of a stalled peer sooner than the job's timeout (gauntlet
 * doctor --layout); the job's own communicator keeps its deadline. */
void gt_comm_set_timeout(gt_comm *c, double timeout_s);

/* Ranks with the same color form a new communicator, ordered by key (then by
 * old rank). color < 0: this rank gets *out = NULL. Collective over c. */
gt_status gt_comm_split(gt_comm *c, int color, int key, gt_comm **out);

/* ---- operations ---------------------------------------------------------------
 * Every operation is blocking when req is NULL (with the watchdog: a
 * blocking collective that times out ends the job, see the top), and
 * non-blocking otherwise: *req receives a request that gt_comm_wait or a
 * successful gt_comm_test completes and frees. Buffers must stay valid and
 * untouched until then. Every rank must call a given collective in the same
 * form: a blocking call runs the library's blocking collective, which MPI
 * never matches with another rank's non-blocking one (MPI-3 5.12). */

/* recv[i] = op over ranks of send[i], on every rank. */
gt_status gt_comm_allreduce(gt_comm *c, const void *send, void *recv, size_t count,
                            gt_dtype dt, gt_redop op, gt_comm_request **req);
/* Like allreduce, result only on root (recv may be NULL elsewhere). */
gt_status gt_comm_reduce(gt_comm *c, const void *send, void *recv, size_t count, gt_dtype dt,
                         gt_redop op, int root, gt_comm_request **req);
gt_status gt_comm_broadcast(gt_comm *c, void *buf, size_t count, gt_dtype dt, int root,
                            gt_comm_request **req);
/* recv (size * count) = the send blocks (count each) of every rank in rank
 * order. In place: send == recv + rank * count (MPI_IN_PLACE semantics:
 * pass send == recv to mean this rank's block is already in place). */
gt_status gt_comm_allgather(gt_comm *c, const void *send, void *recv, size_t count,
                            gt_dtype dt, gt_comm_request **req);
/* recv (count) on rank r = op over ranks of block r (count elements) of send
 * (size * count). In place: send == recv means recv holds size * count on
 * entry and block r is left at its start. */
gt_status gt_comm_reduce_scatter(gt_comm *c, const void *send, void *recv, size_t count,
                                 gt_dtype dt, gt_redop op, gt_comm_request **req);
/* Block j (count elements) of send goes to rank j; recv block i comes from
 * rank i. Not in place. */
gt_status gt_comm_alltoall(gt_comm *c, const void *send, void *recv, size_t count,
                           gt_dtype dt, gt_comm_request **req);
/* Point-to-point: tags 0..GT_COMM_TAG_MAX (MPI guarantees at least 32767
 * tags; the one above GT_COMM_TAG_MAX is the tree all-reduce's own). A
 * receive buffer must be at least as large as the message. */
#define GT_COMM_TAG_MAX 32766
gt_status gt_comm_send(gt_comm *c, const void *buf, size_t count, gt_dtype dt, int peer,
                       int tag, gt_comm_request **req);
gt_status gt_comm_recv(gt_comm *c, void *buf, size_t count, gt_dtype dt, int peer, int tag,
                       gt_comm_request **req);
gt_status gt_comm_barrier(gt_comm *c, gt_comm_request **req);

/* Completes a request (watchdog applies) and frees it. The watchdog's
 * deadline runs from the start of the wait. On GT_ERR_TIMEOUT the request is
 * freed as well: a receive is cancelled, any other operation is abandoned
 * and the communicator must not be used again (gt_comm_abort, or free it). */
gt_status gt_comm_wait(gt_comm *c, gt_comm_request *req);
/* The same for a rank that has nothing to do until the request completes
 * while its peers work for seconds (the harness's barrier after a unit that
 * ran on fewer ranks): it sleeps between polls, from 50 us doubling to
 * 10 ms, instead of spinning and yielding, so it takes no core from the
 * ranks being measured; it may notice completion up to 10 ms late. */
gt_status gt_comm_wait_idle(gt_comm *c, gt_comm_request *req);
/* A barrier waited for with gt_comm_wait_idle; GT_ERR_TIMEOUT (not the
 * end of the job) when the watchdog's deadline passes. */
gt_status gt_comm_barrier_idle(gt_comm *c);
/* *done = 1 and the request is freed when complete; else 0 and nothing changes. */
gt_status gt_comm_test(gt_comm *c, gt_comm_request *req, int *done);

/* Deterministic sum (blocking): the result's bits depend only on the
 * global order of contributions, not on how many ranks hold them. Rank r's
 * buf holds the sum of its contiguous share of a global list of leaves,
 * already reduced by the caller with the same balanced binary tree; here
 * the rank partials are combined by the tree ((r0 + r1) + (r2 + r3)) + ...,
 * left operand first, so the whole is one fixed binary tree over the leaves.
 * Requires a power-of-two size (GT_ERR_INVALID otherwise). fp32, fp64,
 * bf16 and fp16 (each pairwise sum of two 16-bit values in fp32, rounded
 * once: the correctly rounded sum, the same bits as a backend's residual_fwd
 * in that dtype gives for the caller's tree of leaves). Host memory only: the partials are added on the host
 * (GT_ERR_UNSUPPORTED for an nccl communicator's device buffer). In place on buf; every rank ends with the same bits. Cost: log2(n)
 * rounds of full-size send/recv to combine, then a broadcast. */
gt_status gt_comm_allreduce_tree(gt_comm *c, void *buf, size_t count, gt_dtype dt);

/* Aborts every process of the job (MPI_Abort with `code`; for self, _Exit
 * after flushing stdio: no exit handlers run, from whichever thread).
 * For the harness after a watchdog timeout: the only call that ends the
 * process. */
void gt_comm_abort(gt_comm *c, int code);

/* Called once, on the watchdog's thread, when a blocking collective passed
 * its deadline, just before the job is aborted: message is the watchdog's
 * text (operation, sequence number, size, ranks waited for; borrowed, valid
 * during the call). The calling thread is stuck inside the library, so the
 * handler must not call gt_comm_* or MPI; writing files and stderr is fine
 * (the harness writes its report of what finished). Keep it short: the job
 * is aborted when it returns. */
typedef void (*gt_comm_timeout_handler)(const char *message, void *ctx);
/* Process-wide; NULL removes it. ctx is borrowed and must outlive every
 * communicator's blocking calls. */
void gt_comm_set_timeout_handler(gt_comm_timeout_handler fn, void *ctx);

/* Statistics since creation. A send buffer's payload bytes are counted as
 * the call hands it to the library: count x dtype size for allreduce,
 * reduce (every rank, root included), allgather (this rank's block),
 * alltoall and reduce_scatter (every block: size x count), send; broadcast
 * on the root only; receive and barrier 0. gt_comm_allreduce_tree counts
 * as the sends and the broadcast it is made of. */
typedef struct gt_comm_stats {
    uint64_t ops;          /* operations started */
    uint64_t bytes;        /* payload bytes of this rank's send buffers */
    double wait_s;         /* time spent inside gt_comm_wait and blocking calls */
    uint64_t coll_ops[GT_COLL_COUNT];   /* the same two by operation kind */
    uint64_t coll_bytes[GT_COLL_COUNT];
} gt_comm_stats;
void gt_comm_get_stats(const gt_comm *c, gt_comm_stats *out);

/* The last operation of this process that did not complete within the
 * communicator's timeout (or was waiting when the launcher said a process
 * failed): what the watchdog's message says, as fields, for the report's
 * stall record (docs/reliability.md). */
typedef struct gt_comm_hang {
    char operation[24];          /* "allreduce", "recv", "barrier", ... */
    unsigned long long seq;      /* its number on the communicator */
    double bytes;                /* its buffer's bytes (reduce-scatter: every block) */
    char dtype[16];
    char group[96];              /* the communicator's name (gt_comm_set_name), "" none */
    char world_ranks[232];       /* "world ranks 0-1" */
    int group_size, world_rank;  /* the communicator's ranks; this process's world rank */
    int peer, peer_world_rank;   /* the rank waited for (send, recv, broadcast's root); -1: all */
    int tag;                     /* send / recv; -1 otherwise */
    double waited_s, timeout_s;
    int notice;                  /* 1: the launcher's failure notice, not the deadline */
} gt_comm_hang;
/* 1 and *out (when not NULL) filled when an operation has hung; 0 otherwise. */
int gt_comm_last_hang(gt_comm_hang *out);
/* How many hangs this process has recorded (a run compares it before and after). */
unsigned long gt_comm_hang_count(void);

/* The library communicator behind c (MPI_Comm* for mpi, ncclComm_t* for
 * nccl, NULL for self), so the collectives suite can time the raw library
 * on the same ranks. */
void *gt_comm_native_handle(gt_comm *c);

/* Library version string for reports ("Open MPI v4.1.4 ...", "NCCL 2.28.9"
 * or "self"). */
const char *gt_comm_library_version(const gt_comm *c);

/* The device half of GT_REDOP_AVG on device buffers (nccl): x[i] = x[i] /
 * ranks for n elements of dtype (a gt_dtype) at buf in device memory,
 * queued on stream (a cudaStream_t), correctly rounded as above. Returns
 * the launch's cudaError_t (0: queued). The engine has no device code: the
 * kernel is the cuda backend's (kernels/cuda/comm_avg.cu), given here by
 * the kernels' registry (gt_kernels_init, kernels/registry.h) before a
 * communicator needs it. Process-wide; set it before the communicators'
 * first avg, from one thread. Without it an nccl avg on device buffers is
 * GT_ERR_UNSUPPORTED. */
typedef int (*gt_comm_divide_fn)(void *buf, size_t n, int dtype, int ranks, void *stream);
void gt_comm_set_divide(gt_comm_divide_fn fn);
gt_comm_divide_fn gt_comm_divide(void); /* NULL until set */

/* ---- backend interface (for comm backends only) -------------------------------
 * comm.c validates arguments, counts, times and names every operation; a
 * backend only moves bytes. A backend sees validated descriptors: dtype and
 * op in range, root/peer in [0, size), buffers non-NULL where count > 0,
 * in-place already decided (send == recv, or for allgather send == recv +
 * rank * count also normalised to send == recv). */

typedef struct gt_comm_op_desc {
    gt_coll coll;
    const void *send;
    void *recv;
    size_t count;
    gt_dtype dt;
    gt_redop op;
    int root; /* reduce / broadcast root, send/recv peer */
    int tag;
} gt_comm_op_desc;

typedef struct gt_comm_backend {
    const char *name;
    /* Creates the world communicator's state. GT_ERR_UNSUPPORTED when the
     * backend is not built in (the stub keeps callers free of #if). */
    gt_status (*world)(void **impl, int *rank, int *size);
    /* Starts the operation; *handle is backend state polled by test. */
    gt_status (*start)(void *impl, const gt_comm_op_desc *d, void **handle);
    /* *done = 1 when complete (the backend then releases handle). On an
     * error the backend releases handle too. */
    gt_status (*test)(void *impl, void *handle, int *done);
    /* Optional (NULL: start + test polling). Runs a collective to completion
     * with the library's blocking call; comm.c calls it only for blocking
     * collectives (never send/recv: those must stay cancellable, and never
     * for req != NULL) and keeps the deadline with its watchdog thread,
     * which aborts the job through abort() when the call does not return. */
    gt_status (*blocking)(void *impl, const gt_comm_op_desc *d);
    /* Called by the watchdog when the deadline passed: cancels the operation
     * where the library can (a receive) and releases handle. Returns 1 when
     * cancelled cleanly, 0 when the operation was abandoned (the
     * communicator is then unusable: collectives cannot be cancelled). */
    int (*cancel)(void *impl, void *handle);
    gt_status (*split)(void *impl, int color, int key, void **new_impl, int *new_rank,
                       int *new_size);
    void *(*native)(void *impl);           /* gt_comm_native_handle */
    const char *(*version)(void *impl);    /* gt_comm_library_version */
    /* Ends every process of the job. Also called from the watchdog's own
     * thread (the one call made off the thread that owns the communicator). */
    void (*abort)(void *impl, int code);
    void (*destroy)(void *impl);
    /* Optional (NULL: never). 1 when p is device memory, which comm.c's own
     * host-side code (the tree all-reduce's additions) cannot touch. */
    int (*device_memory)(void *impl, const void *p);
} gt_comm_backend;

extern const gt_comm_backend gt_comm_self_backend; /* engine/comm_self.c */
extern const gt_comm_backend gt_comm_mpi_backend;  /* engine/comm_mpi.c (stub without MPI) */
/* engine/comm_nccl.c (stub without NCCL; one process only without MPI) */
extern const gt_comm_backend gt_comm_nccl_backend;

#ifdef __cplusplus
}
#endif
#endif
