/* The mpi backend: every operation is one (or, past MPI's int count, a few)
 * MPI calls on a private duplicate of MPI_COMM_WORLD, so that gauntlet's
 * messages never match a user's and errors come back (MPI_ERRORS_RETURN)
 * instead of killing the job. Non-blocking operations and all send/recv use
 * the non-blocking MPI-3 calls (MPI_Iallreduce, MPI_Isend, ...); blocking
 * collectives use the blocking ones (MPI_Allreduce, ...), because Open MPI's
 * non-blocking collectives (libnbc) run slower algorithms than its tuned
 * blocking ones (docs/performance.md, "Measurements behind code choices").
 *
 * MPI has no bf16 or fp16: they travel as 2-byte contiguous types reduced by
 * user-defined ops that combine each pair in fp32 and round back once (round
 * to nearest even, engine/dtype.h). AVG is MPI's SUM followed, on
 * completion, by an element-wise division by the number of ranks (for
 * bf16/fp16 in fp32, rounded once; for integers, C division: truncation).
 *
 * Only this file and engine/env.c include mpi.h. Built without MPI it keeps a
 * stub backend whose world() answers GT_ERR_UNSUPPORTED, so callers need no
 * #if. */
#define _POSIX_C_SOURCE 200809L /* nanosleep, S_ISSOCK */

#include "gt_config.h"

#include "engine/comm.h"

#if GT_HAVE_MPI

#include <limits.h>
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#if defined(MPICH_NUMVERSION) && defined(__GNUC__) && !defined(__clang__)
/* MPICH's mpi.h gives MPI_Waitall and MPI_Testall GCC access attributes on
 * their statuses; MPI_STATUSES_IGNORE ((MPI_Status *)1) then reads to GCC 12
 * as 20 bytes written into a region of size 0. */
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif

/* A blocking reduce-scatter of fewer bytes than this (all ranks' blocks)
 * calls MPI_Reduce_scatter with equal counts, from it on
 * MPI_Reduce_scatter_block: on Open MPI 4.1, 2 ranks over shared memory,
 * the vector form took 190 us at 1 MiB and 0.9 ms at 4 MiB against the
 * block form's 0.9 and 4.3 ms, about equal at 16 and 32 MiB, and 1.3-1.45x
 * slower at 64 MiB (docs/distributed.md, "Reduce-scatter"). */
#define GT_MPI_RS_VECTOR_BELOW ((size_t)32 << 20)

typedef struct mpi_comm {
    MPI_Comm comm;
    int rank;
    int size;
    int owns_init; /* this world called MPI_Init_thread: it finalizes */
    size_t chunk;  /* most elements per MPI call (INT_MAX; lowered by tests) */
    int yield;     /* blocking calls poll and yield the core (oversubscribed_yield) */
    int *counts;   /* size entries: a blocking reduce-scatter's recvcounts (mpi_call) */
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
} mpi_comm;

typedef struct mpi_handle {
    gt_coll coll;
    int avg;    /* divide buf by size on completion */
    void *buf;  /* AVG: the result */
    size_t count;
    gt_dtype dt;
    int n;      /* requests */
    void *tmp;  /* owned: a reduce root's own input (reduce_in_place_broken) */
    MPI_Request reqs[];
} mpi_handle;

/* Process-wide: the 2-byte types and their ops, made once after MPI_Init. */
static MPI_Datatype g_bf16 = MPI_DATATYPE_NULL, g_fp16 = MPI_DATATYPE_NULL;
static MPI_Op g_op16[3] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL}; /* sum, max, min */

static gt_status mpi_error(int rc, const char *what) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "code %d", rc);
    return GT_ERR(GT_ERR_COMM, "%s: %s", what, msg);
}

#define MPI_TRY(call, what)                                                            \
    do {                                                                               \
        int mpi_try_rc_ = (call);                                                      \
        if (mpi_try_rc_ != MPI_SUCCESS) return mpi_error(mpi_try_rc_, (what));         \
    } while (0)

/* ---- bf16 / fp16 reductions -------------------------------------------------- */

static float half_to_f(uint16_t h, int bf) { return bf ? gt_bf16_to_fp32(h) : gt_fp16_to_fp32(h); }
static uint16_t f_to_half(float x, int bf) { return bf ? gt_fp32_to_bf16(x) : gt_fp32_to_fp16(x); }

/* MPI calls these with inout = in (op) inout; each pair is combined in fp32
 * and rounded back once. Sum is commutative in IEEE fp32, so the order MPI
 * picks does not matter within one combination. */
static void op16_sum(void *in, void *inout, int *len, MPI_Datatype *dt) {
    const uint16_t *a = in;
    uint16_t *b = inout;
    int bf = *dt == g_bf16;
    for (int i = 0; i < *len; i++) b[i] = f_to_half(half_to_f(a[i], bf) + half_to_f(b[i], bf), bf);
}

static void op16_max(void *in, void *inout, int *len, MPI_Datatype *dt) {
    const uint16_t *a = in;
    uint16_t *b = inout;
    int bf = *dt == g_bf16;
    for (int i = 0; i < *len; i++)
        if (half_to_f(a[i], bf) > half_to_f(b[i], bf)) b[i] = a[i];
}

static void op16_min(void *in, void *inout, int *len, MPI_Datatype *dt) {
    const uint16_t *a = in;
    uint16_t *b = inout;
    int bf = *dt == g_bf16;
    for (int i = 0; i < *len; i++)
        if (half_to_f(a[i], bf) < half_to_f(b[i], bf)) b[i] = a[i];
}

static gt_status types_init(void) {
    if (g_bf16 != MPI_DATATYPE_NULL) return GT_OK;
    MPI_TRY(MPI_Type_contiguous(2, MPI_BYTE, &g_bf16), "MPI_Type_contiguous (bf16)");
    MPI_TRY(MPI_Type_commit(&g_bf16), "MPI_Type_commit (bf16)");
    MPI_TRY(MPI_Type_contiguous(2, MPI_BYTE, &g_fp16), "MPI_Type_contiguous (fp16)");
    MPI_TRY(MPI_Type_commit(&g_fp16), "MPI_Type_commit (fp16)");
    MPI_TRY(MPI_Op_create(op16_sum, 1, &g_op16[0]), "MPI_Op_create (sum16)");
    MPI_TRY(MPI_Op_create(op16_max, 1, &g_op16[1]), "MPI_Op_create (max16)");
    MPI_TRY(MPI_Op_create(op16_min, 1, &g_op16[2]), "MPI_Op_create (min16)");
    return GT_OK;
}

static void types_free(void) {
    for (int i = 0; i < 3; i++)
        if (g_op16[i] != MPI_OP_NULL) MPI_Op_free(&g_op16[i]);
    if (g_bf16 != MPI_DATATYPE_NULL) MPI_Type_free(&g_bf16);
    if (g_fp16 != MPI_DATATYPE_NULL) MPI_Type_free(&g_fp16);
}

static MPI_Datatype mpi_type(gt_dtype dt) {
    switch (dt) {
    case GT_DTYPE_FP32: return MPI_FLOAT;
    case GT_DTYPE_FP64: return MPI_DOUBLE;
    case GT_DTYPE_BF16: return g_bf16;
    case GT_DTYPE_FP16: return g_fp16;
    case GT_DTYPE_INT32: return MPI_INT32_T;
    case GT_DTYPE_INT64: return MPI_INT64_T;
    default: return MPI_DATATYPE_NULL;
    }
}

static MPI_Op mpi_op(gt_redop op, gt_dtype dt) {
    int half = dt == GT_DTYPE_BF16 || dt == GT_DTYPE_FP16;
    switch (op) {
    case GT_REDOP_MAX: return half ? g_op16[1] : MPI_MAX;
    case GT_REDOP_MIN: return half ? g_op16[2] : MPI_MIN;
    default: return half ? g_op16[0] : MPI_SUM; /* sum, and avg's sum */
    }
}

/* ---- world, split, destroy ----------------------------------------------------- */

static gt_status comm_setup(mpi_comm *m, MPI_Comm comm, size_t chunk) {
    m->comm = comm;
    m->chunk = chunk;
    MPI_TRY(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    MPI_TRY(MPI_Comm_rank(comm, &m->rank), "MPI_Comm_rank");
    MPI_TRY(MPI_Comm_size(comm, &m->size), "MPI_Comm_size");
    m->counts = calloc((size_t)m->size, sizeof *m->counts);
    if (!m->counts) return GT_ERR(GT_ERR_OOM, "mpi communicator: out of memory");
    int len = 0;
    MPI_Get_library_version(m->version, &len);
    /* Open MPI's string spans lines ("... , repo rev: ..., ..."): keep the first. */
    char *nl = strchr(m->version, '\n');
    if (nl) *nl = '\0';
    return GT_OK;
}

/* Whether blocking collectives should poll a non-blocking call and yield the
 * core between polls instead of waiting in the library: with MPICH (4.0's
 * ch4 spins in its progress loop and has no setting that yields) when some
 * node runs more ranks than it has cores. 4 ranks on 2 cores, one computing
 * between small all-reduces, 2000 rounds: 48 s spinning in MPI_Allreduce,
 * 5.9 s polling MPI_Iallreduce with sched_yield (Open MPI with
 * mpi_yield_when_idle, which its launcher gets: 0.9 s). GT_MPI_YIELD=1 / 0
 * forces it. The same answer on every rank (an all-reduce): a blocking
 * collective never matches a non-blocking one. */
static int oversubscribed_yield(MPI_Comm world) {
    const char *force = getenv("GT_MPI_YIELD");
    int mine = 0;
    if (force && *force) {
        mine = atoi(force) != 0;
    } else {
#if defined(MPICH_NUMVERSION)
        MPI_Comm node = MPI_COMM_NULL;
        int local = 1;
        if (MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) ==
            MPI_SUCCESS) {
            MPI_Comm_size(node, &local);
            MPI_Comm_free(&node);
        }
        /* the node's cores, not this rank's affinity: a rank bound to a core sees one */
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        mine = ncpu > 0 && local > ncpu;
#endif
    }
    int any = mine;
    MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, world);
    return any;
}

static gt_status mpi_world(void **impl, int *rank, int *size) {
    int inited = 0, finalized = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&finalized);
    if (finalized)
        return GT_ERR(GT_ERR_COMM, "MPI was already finalized: one MPI world per process");
    mpi_comm *m = calloc(1, sizeof *m);
    if (!m) return GT_ERR(GT_ERR_OOM, "mpi communicator: out of memory");
    if (!inited) {
        /* FUNNELED: only the thread that created the world calls MPI (the
         * data loader's prefetch thread never does). */
        int provided = 0;
        int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
        if (rc != MPI_SUCCESS) {
            free(m);
            return mpi_error(rc, "MPI_Init_thread");
        }
        m->owns_init = 1;
    }
    gt_status s = types_init();
    MPI_Comm dup = MPI_COMM_NULL;
    if (s == GT_OK) {
        int rc = MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        if (rc != MPI_SUCCESS) s = mpi_error(rc, "MPI_Comm_dup(MPI_COMM_WORLD)");
    }
    /* Tests lower the per-call count to exercise the chunking of counts
     * above INT_MAX without allocating gigabytes. */
    size_t chunk = INT_MAX;
    const char *env = getenv("GT_COMM_MPI_CHUNK");
    if (env && atol(env) > 0 && (unsigned long)atol(env) < (unsigned long)INT_MAX)
        chunk = (size_t)atol(env);
    if (s == GT_OK) s = comm_setup(m, dup, chunk);
    if (s == GT_OK) m->yield = oversubscribed_yield(dup);
    if (s != GT_OK) {
        if (dup != MPI_COMM_NULL) MPI_Comm_free(&dup);
        if (m->owns_init) {
            types_free();
            MPI_Finalize();
        }
        free(m->counts);
        free(m);
        return s;
    }
    *impl = m;
    *rank = m->rank;
    *size = m->size;
    return GT_OK;
}

static gt_status mpi_split(void *impl, int color, int key, void **new_impl, int *new_rank,
                           int *new_size) {
    mpi_comm *m = impl;
    *new_impl = NULL;
    MPI_Comm nc = MPI_COMM_NULL;
    MPI_TRY(MPI_Comm_split(m->comm, color < 0 ? MPI_UNDEFINED : color, key, &nc),
            "MPI_Comm_split");
    if (nc == MPI_COMM_NULL) return GT_OK;
    mpi_comm *n = calloc(1, sizeof *n);
    if (!n) {
        MPI_Comm_free(&nc);
        return GT_ERR(GT_ERR_OOM, "split: out of memory");
    }
    gt_status s = comm_setup(n, nc, m->chunk);
    if (s != GT_OK) {
        MPI_Comm_free(&nc);
        free(n->counts);
        free(n);
        return s;
    }
    n->yield = m->yield; /* the parent's ranks agreed on it */
    *new_impl = n;
    *new_rank = n->rank;
    *new_size = n->size;
    return GT_OK;
}

static void mpi_destroy(void *impl) {
    mpi_comm *m = impl;
    if (!m) return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    /* A split freed after its world finalized MPI has nothing left to free. */
    if (!finalized && m->comm != MPI_COMM_NULL) MPI_Comm_free(&m->comm);
    if (m->owns_init && !finalized) {
        types_free();
        MPI_Finalize();
    }
    free(m->counts);
    free(m);
}

/* ---- operations ------------------------------------------------------------------- */

static mpi_handle *handle_new(const gt_comm_op_desc *d, int n) {
    mpi_handle *h = calloc(1, sizeof *h + (size_t)n * sizeof(MPI_Request));
    if (!h) return NULL;
    h->coll = d->coll;
    h->dt = d->dt;
    h->n = n;
    for (int i = 0; i < n; i++) h->reqs[i] = MPI_REQUEST_NULL;
    return h;
}

static void handle_free(mpi_handle *h) {
    if (!h) return;
    free(h->tmp);
    free(h);
}

/* MPICH 4.0 and 4.1 (ch4) crash in MPI_Reduce when a root other than rank 0
 * passes MPI_IN_PLACE with 4 KiB or more (pmodels/mpich#6540, fixed by
 * #6543 in 4.2): there the root's input goes as a copy. Any MPICH-derived
 * library before 4.2 (Intel MPI, Cray MPICH define MPICH_NUMVERSION too) takes
 * the copy; Open MPI never does. */
static int reduce_in_place_broken(const mpi_comm *m, const gt_comm_op_desc *d) {
#if defined(MPICH_NUMVERSION) && MPICH_NUMVERSION < 40200000
    return d->coll == GT_COLL_REDUCE && d->root != 0 && m->rank == d->root && d->send &&
           d->send == d->recv;
#else
    (void)m;
    (void)d;
    return 0;
#endif
}

/* The root's input of a reduce_in_place_broken call: a copy of its buffer,
 * owned by the caller; NULL when out of memory. */
static void *reduce_input_copy(const gt_comm_op_desc *d) {
    size_t bytes = d->count * gt_dtype_size(d->dt);
    void *t = malloc(bytes ? bytes : 1);
    if (t) memcpy(t, d->recv, bytes);
    return t;
}

/* One MPI call for the element range [off, off + n) of d (for the
 * collectives that are not element-wise, the whole of d: off 0, n = count):
 * non-blocking into *req, or blocking when req is NULL. */
static int mpi_call(mpi_comm *m, const gt_comm_op_desc *d, size_t off, int n, MPI_Request *req) {
    size_t es = gt_dtype_size(d->dt);
    MPI_Datatype t = mpi_type(d->dt);
    const char *s = d->send ? (const char *)d->send + off * es : NULL;
    char *r = d->recv ? (char *)d->recv + off * es : NULL;
    int in_place = d->send == d->recv && d->send != NULL;
    /* MPI_IN_PLACE is only legal on a reduce's root: elsewhere the caller's
     * one buffer is the send buffer (Open MPI let it pass; MPICH 4.0
     * crashed in MPI_Reduce) */
    if (d->coll == GT_COLL_REDUCE && m->rank != d->root) in_place = 0;
    const void *sb = in_place ? MPI_IN_PLACE : s;
    MPI_Op op = mpi_op(d->op, d->dt);
    switch (d->coll) {
    case GT_COLL_ALLREDUCE:
        return req ? MPI_Iallreduce(sb, r, n, t, op, m->comm, req)
                   : MPI_Allreduce(sb, r, n, t, op, m->comm);
    case GT_COLL_REDUCE:
        /* recv may be NULL off the root, where MPI ignores it */
        return req ? MPI_Ireduce(sb, r, n, t, op, d->root, m->comm, req)
                   : MPI_Reduce(sb, r, n, t, op, d->root, m->comm);
    case GT_COLL_BROADCAST:
        return req ? MPI_Ibcast(r, n, t, d->root, m->comm, req)
                   : MPI_Bcast(r, n, t, d->root, m->comm);
    case GT_COLL_ALLGATHER:
        return req ? MPI_Iallgather(sb, n, t, r, n, t, m->comm, req)
                   : MPI_Allgather(sb, n, t, r, n, t, m->comm);
    case GT_COLL_REDUCE_SCATTER:
        /* blocking, below GT_MPI_RS_VECTOR_BELOW bytes in all: MPI_Reduce_scatter
         * with equal counts, the same operation as MPI_Reduce_scatter_block,
         * for which Open MPI 4.1 runs an algorithm 4-5x slower from 1 to 4 MiB
         * (docs/distributed.md, "Reduce-scatter"). A non-blocking call keeps
         * the block form: its counts would have to live until it completes. */
        if (!req && (size_t)n * es * (size_t)m->size < GT_MPI_RS_VECTOR_BELOW) {
            for (int i = 0; i < m->size; i++) m->counts[i] = n;
            return MPI_Reduce_scatter(sb, r, m->counts, t, op, m->comm);
        }
        return req ? MPI_Ireduce_scatter_block(sb, r, n, t, op, m->comm, req)
                   : MPI_Reduce_scatter_block(sb, r, n, t, op, m->comm);
    case GT_COLL_ALLTOALL:
        return req ? MPI_Ialltoall(s, n, t, r, n, t, m->comm, req)
                   : MPI_Alltoall(s, n, t, r, n, t, m->comm);
    case GT_COLL_BARRIER: return req ? MPI_Ibarrier(m->comm, req) : MPI_Barrier(m->comm);
    /* comm.c never asks for a blocking send/recv (they must stay cancellable). */
    case GT_COLL_SEND: return req ? MPI_Isend(s, n, t, d->root, d->tag, m->comm, req) : MPI_ERR_OP;
    case GT_COLL_RECV: return req ? MPI_Irecv(r, n, t, d->root, d->tag, m->comm, req) : MPI_ERR_OP;
    default: return MPI_ERR_OP;
    }
}

static int is_chunkable(gt_coll k) {
    return k == GT_COLL_ALLREDUCE || k == GT_COLL_REDUCE || k == GT_COLL_BROADCAST ||
           k == GT_COLL_SEND || k == GT_COLL_RECV;
}

/* Calls for d: element-wise operations past m->chunk elements split into
 * ranges, each its own call (MPI orders them: collectives in call order,
 * messages non-overtaking); the others refuse a block above INT_MAX. */
static gt_status plan_calls(const mpi_comm *m, const gt_comm_op_desc *d, size_t *nchunks) {
    const char *name = gt_coll_name(d->coll);
    *nchunks = 1;
    if (is_chunkable(d->coll) && d->count > m->chunk)
        *nchunks = (d->count + m->chunk - 1) / m->chunk;
    if (!is_chunkable(d->coll) && d->count > (size_t)INT_MAX)
        return GT_ERR(GT_ERR_INVALID,
                      "%s: count %zu exceeds MPI's int count limit (%d) per rank block; "
                      "split the call",
                      name, d->count, INT_MAX);
    if (*nchunks > (size_t)INT_MAX / 2) return GT_ERR(GT_ERR_INVALID, "%s: count too large", name);
    return GT_OK;
}

/* Elements of call i of n for d. */
static int chunk_len(const mpi_comm *m, const gt_comm_op_desc *d, size_t i, size_t n) {
    if (n == 1) return (int)d->count;
    size_t off = i * m->chunk;
    return (int)(d->count - off < m->chunk ? d->count - off : m->chunk);
}

/* AVG divides on completion, where this rank holds a result. */
static int needs_avg(const mpi_comm *m, const gt_comm_op_desc *d) {
    return d->op == GT_REDOP_AVG &&
           (d->coll == GT_COLL_ALLREDUCE || d->coll == GT_COLL_REDUCE_SCATTER ||
            (d->coll == GT_COLL_REDUCE && m->rank == d->root));
}

static gt_status mpi_start(void *impl, const gt_comm_op_desc *d, void **handle) {
    mpi_comm *m = impl;
    const char *name = gt_coll_name(d->coll);
    size_t nchunks = 1;
    GT_TRY(plan_calls(m, d, &nchunks));
    mpi_handle *h = handle_new(d, (int)nchunks);
    if (!h) return GT_ERR(GT_ERR_OOM, "%s: out of memory for the request", name);
    gt_comm_op_desc copy;
    if (reduce_in_place_broken(m, d)) {
        h->tmp = reduce_input_copy(d);
        if (!h->tmp) {
            handle_free(h);
            return GT_ERR(GT_ERR_OOM, "%s: out of memory for the root's input", name);
        }
        copy = *d;
        copy.send = h->tmp;
        d = &copy;
    }

    int rc = MPI_SUCCESS;
    for (size_t i = 0; i < nchunks && rc == MPI_SUCCESS; i++)
        rc = mpi_call(m, d, i * m->chunk, chunk_len(m, d, i, nchunks), &h->reqs[i]);
    if (rc != MPI_SUCCESS) {
        /* Chunks already started cannot be taken back: completing them keeps
         * the ranks' call order intact for a caller that goes on. */
        MPI_Waitall(h->n, h->reqs, MPI_STATUSES_IGNORE);
        handle_free(h);
        char what[64];
        snprintf(what, sizeof what, "MPI %s", name);
        return mpi_error(rc, what);
    }
    if (needs_avg(m, d)) {
        h->avg = 1;
        h->buf = d->recv;
        h->count = d->count;
    }
    *handle = h;
    return GT_OK;
}

/* AVG's second half: sum / size, one correctly rounded division per element. */
static void divide_by(void *buf, size_t n, gt_dtype dt, int size) {
    switch (dt) {
    case GT_DTYPE_FP32: {
        float *x = buf;
        for (size_t i = 0; i < n; i++) x[i] = x[i] / (float)size;
        break;
    }
    case GT_DTYPE_FP64: {
        double *x = buf;
        for (size_t i = 0; i < n; i++) x[i] = x[i] / (double)size;
        break;
    }
    case GT_DTYPE_BF16:
    case GT_DTYPE_FP16: {
        uint16_t *x = buf;
        int bf = dt == GT_DTYPE_BF16;
        for (size_t i = 0; i < n; i++) x[i] = f_to_half(half_to_f(x[i], bf) / (float)size, bf);
        break;
    }
    case GT_DTYPE_INT32: {
        int32_t *x = buf;
        for (size_t i = 0; i < n; i++) x[i] = x[i] / size;
        break;
    }
    case GT_DTYPE_INT64: {
        int64_t *x = buf;
        for (size_t i = 0; i < n; i++) x[i] = x[i] / size;
        break;
    }
    default: break;
    }
}

/* The blocking form (comm.c keeps the deadline with its watchdog thread). */
static gt_status mpi_blocking(void *impl, const gt_comm_op_desc *d) {
    mpi_comm *m = impl;
    size_t nchunks = 1;
    GT_TRY(plan_calls(m, d, &nchunks));
    gt_comm_op_desc copy;
    void *tmp = NULL;
    if (reduce_in_place_broken(m, d)) {
        tmp = reduce_input_copy(d);
        if (!tmp)
            return GT_ERR(GT_ERR_OOM, "%s: out of memory for the root's input",
                          gt_coll_name(d->coll));
        copy = *d;
        copy.send = tmp;
        d = &copy;
    }
    for (size_t i = 0; i < nchunks; i++) {
        int rc;
        if (m->yield) {
            /* oversubscribed_yield: the core goes to a rank with work */
            MPI_Request q = MPI_REQUEST_NULL;
            rc = mpi_call(m, d, i * m->chunk, chunk_len(m, d, i, nchunks), &q);
            for (int done = 0; rc == MPI_SUCCESS;) {
                rc = MPI_Test(&q, &done, MPI_STATUS_IGNORE);
                if (done) break;
                sched_yield();
            }
        } else {
            rc = mpi_call(m, d, i * m->chunk, chunk_len(m, d, i, nchunks), NULL);
        }
        if (rc != MPI_SUCCESS) {
            free(tmp);
            char what[64];
            snprintf(what, sizeof what, "MPI %s", gt_coll_name(d->coll));
            return mpi_error(rc, what);
        }
    }
    free(tmp);
    if (needs_avg(m, d)) divide_by(d->recv, d->count, d->dt, m->size);
    return GT_OK;
}

static gt_status mpi_test(void *impl, void *handle, int *done) {
    mpi_comm *m = impl;
    mpi_handle *h = handle;
    int flag = 0;
    int rc = MPI_Testall(h->n, h->reqs, &flag, MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS) {
        char what[64];
        snprintf(what, sizeof what, "MPI %s (test)", gt_coll_name(h->coll));
        handle_free(h);
        *done = 1;
        return mpi_error(rc, what);
    }
    *done = flag;
    if (!flag) return GT_OK;
    if (h->avg) divide_by(h->buf, h->count, h->dt, m->size);
    handle_free(h);
    return GT_OK;
}

static int mpi_cancel(void *impl, void *handle) {
    (void)impl;
    mpi_handle *h = handle;
    if (h->coll != GT_COLL_RECV) {
        /* Nonblocking collectives cannot be cancelled or freed (MPI-3
         * 5.12), and Open MPI does not cancel sends: the requests stay
         * behind, the communicator is marked broken by the caller; h->tmp
         * stays with them (a request may still read it). */
        free(h);
        return 0;
    }
    for (int i = 0; i < h->n; i++)
        if (h->reqs[i] != MPI_REQUEST_NULL) MPI_Cancel(&h->reqs[i]);
    /* A cancelled receive completes locally, so this wait cannot hang. */
    MPI_Waitall(h->n, h->reqs, MPI_STATUSES_IGNORE);
    handle_free(h);
    return 1;
}

static void *mpi_native(void *impl) { return &((mpi_comm *)impl)->comm; }

static const char *mpi_version(void *impl) { return ((mpi_comm *)impl)->version; }

/* MPI_COMM_WORLD, not the communicator's own: "every process of the job"
 * even for a split, and no handle that the owning thread might be freeing
 * when the watchdog thread calls this. */
/* Bytes written to fd that its reader has not taken yet: a pipe's content
 * (FIONREAD answers for either end) or a socket's unsent queue (TIOCOUTQ);
 * 0 for anything else (a terminal, a file: nothing waits there). */
static int stdio_pending(int fd) {
    struct stat st;
    if (fstat(fd, &st) != 0) return 0;
    int n = 0;
    if (S_ISFIFO(st.st_mode) && ioctl(fd, FIONREAD, &n) == 0) return n;
    if (S_ISSOCK(st.st_mode) && ioctl(fd, TIOCOUTQ, &n) == 0) return n;
    return 0;
}

/* Waits (at most max_ms) until the launcher has read what this process wrote
 * to stdout and stderr. MPICH's Hydra handles MPI_Abort by killing the job
 * and may do so before its proxy has read the pipes: the watchdog's message,
 * written just before, was lost that way (seen in CI). */
static void wait_stdio_read(int max_ms) {
    struct timespec tick = {0, 5 * 1000 * 1000};
    for (int waited = 0; waited < max_ms; waited += 5) {
        if (stdio_pending(STDOUT_FILENO) == 0 && stdio_pending(STDERR_FILENO) == 0) return;
        nanosleep(&tick, NULL);
    }
}

static void mpi_abort(void *impl, int code) {
    (void)impl;
    fflush(NULL);
    wait_stdio_read(2000);
    MPI_Abort(MPI_COMM_WORLD, code);
}

const gt_comm_backend gt_comm_mpi_backend = {
    .name = "mpi",
    .world = mpi_world,
    .start = mpi_start,
    .blocking = mpi_blocking,
    .test = mpi_test,
    .cancel = mpi_cancel,
    .split = mpi_split,
    .native = mpi_native,
    .version = mpi_version,
    .abort = mpi_abort,
    .destroy = mpi_destroy,
};

#else /* !GT_HAVE_MPI */

static gt_status mpi_world(void **impl, int *rank, int *size) {
    (void)impl;
    (void)rank;
    (void)size;
    return GT_ERR(GT_ERR_UNSUPPORTED,
                  "communicator backend 'mpi' is not built in (configured with "
                  "-DGT_WITH_MPI=OFF or MPI was not found): use 'self', or rebuild with MPI");
}

/* Only world() is ever called: without a world there is nothing to operate on. */
const gt_comm_backend gt_comm_mpi_backend = {
    .name = "mpi",
    .world = mpi_world,
};

#endif
