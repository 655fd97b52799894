/* The raw library baselines of the collectives suite (suites/collectives.c):
 * each collective as a user of the library writes it, on the same buffers
 * and ranks as gt_comm's call, timed beside it.
 *
 * One file per library, coll_raw_mpi.c and coll_raw_nccl.c, is the only
 * file of the suite that includes the library's headers or looks at
 * GT_HAVE_MPI / GT_HAVE_NCCL. In a build without the library its
 * constructor still exists and returns GT_ERR_UNSUPPORTED, so the suite
 * itself needs no #if. Internal to suites/. */
#ifndef GT_SUITES_COLL_RAW_H
#define GT_SUITES_COLL_RAW_H

#include <stddef.h>

#include "engine/comm.h"
#include "engine/dtype.h"
#include "engine/status.h"
#include "suites/collectives.h"

/* The tag of the suite's sendrecv, through gt_comm and raw alike. */
#define GT_COLL_SENDRECV_TAG 7

/* One call: the arguments of the gt_comm call it is timed beside. Each
 * library keeps its own in-place conventions (nccl-tests'), written in its
 * file next to the call. */
typedef struct gt_coll_raw_call {
    gt_coll_test coll;
    void *send;     /* out of place only */
    void *recv;
    size_t count;   /* the count argument of the gt_comm call */
    size_t esize;   /* bytes of one element */
    int in_place;
    int rank, n, root;
} gt_coll_raw_call;

/* A baseline: what the suite asks of either library. */
typedef struct gt_coll_raw gt_coll_raw;
struct gt_coll_raw {
    const char *name;  /* the results' "raw" param: "mpi" or "nccl" */
    int device;        /* the buffers are device memory: buffers and copy below */
    size_t max_count;  /* a row with a larger count has no baseline (MPI's counts are int) */
    int local_ranks;   /* ranks on this node; 1 where the library cannot tell */
    /* The dtype and op of the calls that follow (op only where the
     * collective reduces). Returns 0 where the library has no baseline for
     * them (MPI has no bf16/fp16 reduction). */
    int (*select)(gt_coll_raw *r, gt_dtype dt, gt_redop op, int reduces);
    /* One call of c->coll, blocking: it returns when the result is in place. */
    gt_status (*run)(gt_coll_raw *r, const gt_coll_raw_call *c);
    /* device only: two device buffers of cap bytes, owned by r */
    gt_status (*buffers)(gt_coll_raw *r, size_t cap, void **send, void **recv);
    /* device only: `bytes` from host to device (up) or from device to host */
    gt_status (*copy)(void *dst, const void *src, size_t bytes, int up);
    /* frees r and the buffers it owns */
    void (*free)(gt_coll_raw *r);
};

/* The MPI baseline on the communicator gt_comm_native_handle gave for an
 * "mpi" communicator (an MPI_Comm *, borrowed). Host buffers. Collective:
 * every rank of the communicator calls it. GT_ERR_UNSUPPORTED in a build
 * without MPI, GT_ERR_OOM. */
gt_status gt_coll_raw_mpi_new(void *native, gt_coll_raw **out);

/* The NCCL baseline on the communicator gt_comm_native_handle gave for an
 * "nccl" communicator (an ncclComm_t *, borrowed). Device buffers, and a
 * stream of its own on which each call is followed by
 * cudaStreamSynchronize. GT_ERR_UNSUPPORTED in a build without NCCL,
 * GT_ERR_OOM. */
gt_status gt_coll_raw_nccl_new(void *native, gt_coll_raw **out);

#endif
