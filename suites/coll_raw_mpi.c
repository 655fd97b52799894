/* The collectives suite's raw MPI baseline (suites/coll_raw.h): each
 * collective as a user of MPI writes it, on the host buffers gt_comm's call
 * used. The only file of the suite that includes <mpi.h>; in a build
 * without MPI only the constructor's stub is left. */
#include "suites/coll_raw.h"

#include "gt_config.h"

#if GT_HAVE_MPI

#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct mpi_raw {
    gt_coll_raw base; /* first: the suite holds a gt_coll_raw * */
    MPI_Comm comm;
    MPI_Datatype type; /* MPI_DATATYPE_NULL: no baseline for the selected dtype/op */
    MPI_Op op;
    gt_dtype dt;
    gt_redop redop;
} mpi_raw;

static gt_status mpi_status(int rc, const char *what) {
    if (rc == MPI_SUCCESS) return GT_OK;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    return GT_ERR(GT_ERR_COMM, "raw %s: %s", what, msg);
}

/* MPI has no average: the raw baseline is what a user of MPI writes, SUM
 * then one division per element, so the ratio measures gauntlet only. */
static void raw_avg(const mpi_raw *m, const gt_coll_raw_call *c, void *buf, size_t elems) {
    if (m->redop != GT_REDOP_AVG) return;
    for (size_t i = 0; i < elems; i++) {
        switch (m->dt) {
        case GT_DTYPE_FP32: ((float *)buf)[i] /= (float)c->n; break;
        case GT_DTYPE_FP64: ((double *)buf)[i] /= (double)c->n; break;
        case GT_DTYPE_INT32: ((int32_t *)buf)[i] /= c->n; break;
        case GT_DTYPE_INT64: ((int64_t *)buf)[i] /= c->n; break;
        default: break; /* no raw bf16/fp16 reduction */
        }
    }
}

static gt_status allreduce(mpi_raw *m, const gt_coll_raw_call *c) {
    int rc = MPI_Allreduce(c->in_place ? MPI_IN_PLACE : c->send, c->recv, (int)c->count, m->type,
                           m->op, m->comm);
    raw_avg(m, c, c->recv, c->count);
    return mpi_status(rc, "MPI_Allreduce");
}

/* in place: the root reduces into recv, every other rank sends its recv */
static gt_status reduce(mpi_raw *m, const gt_coll_raw_call *c) {
    int rc;
    if (!c->in_place)
        rc = MPI_Reduce(c->send, c->recv, (int)c->count, m->type, m->op, c->root, m->comm);
    else if (c->rank == c->root)
        rc = MPI_Reduce(MPI_IN_PLACE, c->recv, (int)c->count, m->type, m->op, c->root, m->comm);
    else
        rc = MPI_Reduce(c->recv, NULL, (int)c->count, m->type, m->op, c->root, m->comm);
    if (c->rank == c->root) raw_avg(m, c, c->recv, c->count);
    return mpi_status(rc, "MPI_Reduce");
}

static gt_status broadcast(mpi_raw *m, const gt_coll_raw_call *c) {
    return mpi_status(MPI_Bcast(c->recv, (int)c->count, m->type, c->root, m->comm), "MPI_Bcast");
}

/* in place: this rank's block already sits at recv + rank * count */
static gt_status allgather(mpi_raw *m, const gt_coll_raw_call *c) {
    int n = (int)c->count;
    int rc = MPI_Allgather(c->in_place ? MPI_IN_PLACE : c->send, n, m->type, c->recv, n, m->type,
                           m->comm);
    return mpi_status(rc, "MPI_Allgather");
}

static gt_status reduce_scatter(mpi_raw *m, const gt_coll_raw_call *c) {
    int rc = MPI_Reduce_scatter_block(c->in_place ? MPI_IN_PLACE : c->send, c->recv,
                                      (int)c->count, m->type, m->op, m->comm);
    raw_avg(m, c, c->recv, c->count);
    return mpi_status(rc, "MPI_Reduce_scatter_block");
}

static gt_status alltoall(mpi_raw *m, const gt_coll_raw_call *c) {
    int n = (int)c->count;
    return mpi_status(MPI_Alltoall(c->send, n, m->type, c->recv, n, m->type, m->comm),
                      "MPI_Alltoall");
}

/* the ring of the suite's sendrecv: to rank + 1, from rank - 1 */
static gt_status sendrecv(mpi_raw *m, const gt_coll_raw_call *c) {
    int n = (int)c->count, tag = GT_COLL_SENDRECV_TAG;
    int next = (c->rank + 1) % c->n, prev = (c->rank + c->n - 1) % c->n;
    int rc = MPI_Sendrecv(c->send, n, m->type, next, tag, c->recv, n, m->type, prev, tag, m->comm,
                          MPI_STATUS_IGNORE);
    return mpi_status(rc, "MPI_Sendrecv");
}

static gt_status (*const g_runs[GT_COLL_TEST_COUNT])(mpi_raw *, const gt_coll_raw_call *) = {
    [GT_COLL_TEST_ALLREDUCE] = allreduce,
    [GT_COLL_TEST_REDUCE] = reduce,
    [GT_COLL_TEST_BROADCAST] = broadcast,
    [GT_COLL_TEST_ALLGATHER] = allgather,
    [GT_COLL_TEST_REDUCE_SCATTER] = reduce_scatter,
    [GT_COLL_TEST_ALLTOALL] = alltoall,
    [GT_COLL_TEST_SENDRECV] = sendrecv,
};

static gt_status mpi_run(gt_coll_raw *r, const gt_coll_raw_call *c) {
    return g_runs[c->coll]((mpi_raw *)r, c);
}

static int mpi_select(gt_coll_raw *r, gt_dtype dt, gt_redop op, int reduces) {
    mpi_raw *m = (mpi_raw *)r;
    m->dt = dt;
    m->redop = op;
    m->op = op == GT_REDOP_MAX ? MPI_MAX : op == GT_REDOP_MIN ? MPI_MIN : MPI_SUM;
    switch (dt) {
    case GT_DTYPE_FP32: m->type = MPI_FLOAT; break;
    case GT_DTYPE_FP64: m->type = MPI_DOUBLE; break;
    case GT_DTYPE_INT32: m->type = MPI_INT32_T; break;
    case GT_DTYPE_INT64: m->type = MPI_INT64_T; break;
    /* MPI has no bf16/fp16: moving them is moving 2-byte words; reducing
     * them needs a user op, which is gauntlet's own code, not a baseline */
    default: m->type = reduces ? MPI_DATATYPE_NULL : MPI_UINT16_T; break;
    }
    return m->type != MPI_DATATYPE_NULL;
}

static void mpi_free(gt_coll_raw *r) { free(r); }

gt_status gt_coll_raw_mpi_new(void *native, gt_coll_raw **out) {
    *out = NULL;
    if (!native) return GT_ERR(GT_ERR_INVALID, "collectives: raw MPI without a communicator");
    mpi_raw *m = calloc(1, sizeof *m);
    if (!m) return GT_ERR(GT_ERR_OOM, "collectives: raw MPI baseline");
    m->comm = *(MPI_Comm *)native;
    m->type = MPI_DATATYPE_NULL;
    m->base.name = "mpi";
    m->base.max_count = 0x7fffffff; /* MPI counts are int */
    m->base.select = mpi_select;
    m->base.run = mpi_run;
    m->base.free = mpi_free;
    /* ranks on this node: more ranks than CPUs time-slice (the suite's
     * busbw_vs_raw check then does not judge) */
    m->base.local_ranks = 1;
    MPI_Comm local;
    if (MPI_Comm_split_type(m->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local) ==
        MPI_SUCCESS) {
        MPI_Comm_size(local, &m->base.local_ranks);
        MPI_Comm_free(&local);
    }
    *out = &m->base;
    return GT_OK;
}

#else /* no MPI: the constructor says so */

gt_status gt_coll_raw_mpi_new(void *native, gt_coll_raw **out) {
    (void)native;
    *out = NULL;
    return GT_ERR(GT_ERR_UNSUPPORTED, "collectives: no raw MPI baseline (built without MPI)");
}

#endif
