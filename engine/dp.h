/* Data parallelism over a communicator: gradient all-reduce in buckets that
 * start while the backward is still running, ZeRO-1 sharding of the
 * optimizer state, the deterministic (tree) mode, and a gradient norm whose
 * bits do not depend on the rank count.
 *
 * Works on flat fp32 buffers of backend memory (host memory for the self and
 * mpi communicators): the model hands its gradient buffer and tells when a
 * suffix of it is final (gt_dp_grads_ready).
 *
 * Gradients are expected pre-scaled by 1 / (global tokens), so that the SUM
 * over ranks is the gradient of the global mean loss.
 */
#ifndef GT_DP_H
#define GT_DP_H

#include <stddef.h>

#include "engine/backend.h"
#include "engine/comm.h"
#include "engine/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gt_dp_config {
    size_t bucket_bytes; /* all-reduce bucket size (default 25 MiB) */
    int zero;            /* 0: every rank keeps the whole optimizer state; 1: ZeRO-1 */
    int deterministic;   /* 1: the cross-rank sum is gt_comm_allreduce_tree */
    size_t chunk;        /* gradient-norm chunk (elements); shards are whole chunks */
} gt_dp_config;

gt_dp_config gt_dp_defaults(void);

typedef struct gt_dp gt_dp;

/* n_params: the real parameters (buckets cover [0, n_params)). The padded
 * length gt_dp_padded is a multiple of chunk * size, split into equal
 * shards. deterministic requires a power-of-two size (GT_ERR_INVALID). */
gt_status gt_dp_new(gt_comm *comm, gt_backend *be, const gt_dp_config *cfg, size_t n_params,
                    gt_dp **out);
void gt_dp_free(gt_dp *dp);

size_t gt_dp_padded(const gt_dp *dp);
/* This rank's shard [lo, hi) of the padded buffer: the whole buffer unless
 * ZeRO-1. */
void gt_dp_shard(const gt_dp *dp, size_t *lo, size_t *hi);

/* Starts a step on the gradient buffer grads (gt_dp_padded elements). */
gt_status gt_dp_begin(gt_dp *dp, float *grads);
/* Gradients in [frontier, n_params) are final: buckets entirely inside
 * start now (non-deterministic mode without ZeRO; otherwise nothing
 * happens until gt_dp_finish). Also lets outstanding requests progress. */
gt_status gt_dp_grads_ready(gt_dp *dp, size_t frontier);
/* Completes the reduction. *shard_grads receives the summed gradients of
 * this rank's shard (pointer to gt_dp_shard's length: into grads, or a
 * scratch buffer with ZeRO-1). *exposed_s, when not NULL, receives the time
 * spent here, i.e. communication the backward did not hide. */
gt_status gt_dp_finish(gt_dp *dp, float **shard_grads, double *exposed_s);

/* Global L2 norm of the summed gradients: sums of squares of fixed chunks
 * (ops->sumsq on `chunk` elements each), added in chunk order on every rank.
 * Call after gt_dp_finish. */
gt_status gt_dp_grad_norm(gt_dp *dp, double *norm);

/* ZeRO-1: every rank's updated shard of params goes to every rank (in-place
 * all-gather). No-op otherwise. */
gt_status gt_dp_gather_params(gt_dp *dp, float *params);

/* Statistics: bytes all-reduced / reduce-scattered / gathered by this rank. */
size_t gt_dp_bytes(const gt_dp *dp);

#ifdef __cplusplus
}
#endif
#endif
