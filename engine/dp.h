/* Data parallelism over a communicator: gradient all-reduce in buckets that
 * start while the backward is still running, ZeRO-1 sharding of the
 * optimizer state, ZeRO-2 sharding of the summed gradients too (each bucket
 * reduced to the rank whose shard holds it, started during the backward as
 * the all-reduce is), the deterministic (tree) mode, and a gradient norm
 * whose bits do not depend on the rank count.
 *
 * ZeRO-2 here shards what the reduction leaves: a rank receives only its
 * shard's sums and the traffic is a reduce per bucket instead of an
 * all-reduce. The gradients are one flat buffer, or pieces the caller
 * frees once reduced (gt_dp_set_grad_source: a unit's buffer each, so that
 * a rank never holds the whole gradient buffer; docs/distributed.md). With
 * --deterministic, ZeRO-1 and ZeRO-2 sum through the same fixed tree as
 * plain data parallelism.
 *
 * Works on one flat gradient buffer of backend memory, stored in
 * cfg.grad_dtype (fp32, or bf16 / fp16 for mixed precision): the model
 * hands its gradient buffer and tells when a suffix of it is final
 * (gt_dp_grads_ready). Parameters (gt_dp_gather_params) are fp32 master
 * weights whatever the gradient dtype.
 *
 * Where the communicator's buffers live is decided once, in gt_dp_new, from
 * the backend's device and the communicator's name:
 *   host backend (ref, cpu), self or mpi: the buffers are used directly.
 *   device backend (cuda), self or mpi: STAGED: each bucket is copied to a
 *     host mirror (copy_to_host), all-reduced there and copied back
 *     (copy_to_device); likewise the tree, the reduce-scatter and the
 *     parameter all-gather. Correct, not fast: the copies are synchronous,
 *     so a bucket's copy waits for the backward queued before it and the
 *     overlap with the backward is mostly lost; the host mirror costs
 *     gt_dp_padded elements of host memory (plus the fp32 parameters with
 *     ZeRO-1), pageable, not pinned.
 *   device backend, "nccl": device pointers go straight to the
 *     communicator; only the gradient norm's per-chunk partials (fp64) go
 *     through a small device buffer. A host backend with "nccl" is
 *     GT_ERR_INVALID, and so is --deterministic with "nccl" (the tree adds
 *     on the host: use mpi, which stages).
 * With one rank nothing is communicated, so nothing is staged.
 *
 * 16-bit gradients: buckets, the reduce-scatter and the tree reduce in the
 * gradient dtype, each pairwise combination in fp32 rounded once to the
 * dtype (engine/comm.h). The sum of two bf16 (or two fp16) values computed
 * that way is the correctly rounded sum, which is also what every
 * backend's residual_fwd in that dtype gives, so a micro-batch tree built
 * with it inside a rank and the rank tree here form one fixed binary tree
 * of correctly rounded 16-bit sums: --deterministic keeps its
 * topology-independent bits.
 *
 * Gradients are expected pre-scaled by 1 / (global tokens), so that the SUM
 * over ranks is the gradient of the global mean loss.
 */
#ifndef GT_DP_H
#define GT_DP_H

#include <stddef.h>

#include "engine/backend.h"
#include "engine/comm.h"
#include "engine/dtype.h"
#include "engine/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gt_dp_config {
    size_t bucket_bytes; /* all-reduce bucket size (default 25 MiB) */
    int zero;            /* 0: every rank keeps the whole optimizer state; 1: ZeRO-1;
                            2: ZeRO-2 (the summed gradients sharded too); 3: ZeRO-3 (as 2
                            for the gradients; the weights gathered unit by unit with
                            gt_dp_gather_start, no gather after the update) */
    int deterministic;   /* 1: the cross-rank sum is gt_comm_allreduce_tree */
    size_t chunk;        /* gradient-norm chunk (elements); shards are whole chunks */
    gt_dtype grad_dtype; /* storage of the gradient buffer: GT_DTYPE_FP32 (default,
                            and what a zeroed config means), GT_DTYPE_BF16, GT_DTYPE_FP16 */
    const size_t *cuts;  /* ncuts offsets no bucket spans (ZeRO-3: the units' starts, so
                            that a unit's buckets start when its backward ends); borrowed,
                            read by gt_dp_new only. NULL / 0: none */
    int ncuts;
} gt_dp_config;

/* bucket_bytes 25 MiB, zero 0, deterministic 0, chunk 65536, grad_dtype fp32. */
gt_dp_config gt_dp_defaults(void);

typedef struct gt_dp gt_dp;

/* n_params: the real parameters (buckets cover [0, n_params)). The padded
 * length gt_dp_padded is a multiple of chunk * size, split into equal
 * shards. comm and be are borrowed and must outlive the gt_dp.
 * GT_ERR_INVALID: deterministic with a size that is not a power of two,
 * chunk 0, zero not 0..3, ncuts < 0 or cuts NULL with ncuts > 0, grad_dtype not fp32/bf16/fp16, or a
 * communicator that cannot take this backend's memory (see the top);
 * GT_ERR_OOM. */
gt_status gt_dp_new(gt_comm *comm, gt_backend *be, const gt_dp_config *cfg, size_t n_params,
                    gt_dp **out);
void gt_dp_free(gt_dp *dp);

size_t gt_dp_padded(const gt_dp *dp);
/* This rank's shard [lo, hi) of the padded buffer: the whole buffer unless
 * ZeRO-1, 2 or 3. */
void gt_dp_shard(const gt_dp *dp, size_t *lo, size_t *hi);

/* Starts a step on the gradient buffer grads: gt_dp_padded elements of
 * grad_dtype in backend memory (borrowed until gt_dp_finish returns). */
gt_status gt_dp_begin(gt_dp *dp, void *grads);
/* ZeRO-2/3 on several ranks: the gradients are not one buffer but pieces
 * (a unit's each, engine/params.h "sharded gradients"): src(ctx, lo, hi)
 * gives the address of element lo, valid for [lo, hi) (a bucket never
 * spans one of cfg.cuts: cut the buckets at the pieces' starts), or NULL
 * on failure (its error set). gt_dp_begin then takes grads NULL. With
 * --deterministic each bucket is summed in its piece by the fixed tree
 * (blocking, when gt_dp_grads_ready or gt_dp_finish starts it) and the
 * owner keeps its part in a shard of the gt_dp's: the same bits as the
 * whole buffer's tree. GT_ERR_INVALID in a mode that reads the whole
 * buffer (one rank, no ZeRO or ZeRO-1). */
typedef void *(*gt_dp_grad_src)(void *ctx, size_t lo, size_t hi);
gt_status gt_dp_set_grad_source(gt_dp *dp, gt_dp_grad_src src, void *ctx);
/* 1 when every bucket inside [lo, hi) has been reduced (its source may be
 * freed), 0 otherwise. */
int gt_dp_range_reduced(const gt_dp *dp, size_t lo, size_t hi);
/* Waits for the buckets inside [lo, hi) already started (to bound the
 * memory of the pieces in flight). */
gt_status gt_dp_range_wait(gt_dp *dp, size_t lo, size_t hi);

/* Gradients in [frontier, n_params) are final: buckets entirely inside
 * start now (non-deterministic mode without ZeRO or with ZeRO-2; otherwise
 * nothing happens until gt_dp_finish). Also lets outstanding requests
 * progress. */
gt_status gt_dp_grads_ready(gt_dp *dp, size_t frontier);
/* Completes the reduction. *shard_grads receives the summed gradients of
 * this rank's shard, in grad_dtype, backend memory (pointer to gt_dp_shard's
 * length: into grads, or a buffer of the gt_dp with ZeRO-1/2). Pass the
 * address of the caller's pointer, e.g. (void **)&gshard for a float *.
 * *exposed_s, when not NULL, receives the time spent here, and in the
 * backward's waits (a --deterministic tree bucket, gt_dp_range_wait), i.e.
 * communication the backward did not hide. */
gt_status gt_dp_finish(gt_dp *dp, void **shard_grads, double *exposed_s);

/* Global L2 norm of the summed gradients: sums of squares of fixed chunks
 * (ops->sumsq with k->dt = grad_dtype on `chunk` elements each), added in
 * chunk order on every rank. Call after gt_dp_finish. GT_ERR_UNSUPPORTED
 * when the backend's sumsq does not handle grad_dtype. */
gt_status gt_dp_grad_norm(gt_dp *dp, double *norm);

/* ZeRO-1/2/3: every rank's updated shard of params (fp32, backend memory,
 * gt_dp_padded elements) goes to every rank (in-place all-gather). No-op
 * otherwise. */
gt_status gt_dp_gather_params(gt_dp *dp, float *params);

/* ZeRO-3: buf (backend memory, dtype dt) holds elements [lo, hi) of the
 * padded layout (a unit's weights, buf[0] being element lo), this rank's
 * part of them already in place; the other ranks' parts arrive from the
 * ranks whose shards hold them: one non-blocking
 * broadcast from each shard's owner that the range overlaps (the shards
 * are contiguous, so a unit is split unevenly between the ranks it
 * spans: an all-gather with one contribution per owner, which MPI's
 * fixed-count all-gather cannot express), issued in the same order on
 * every rank; staged through the host mirror on a device backend over
 * mpi. Every rank calls it for the same ranges in the same order. buf is
 * borrowed until gt_dp_gather_wait, which completes and frees *out;
 * gt_dp_gather_test lets MPI progress it between kernels. One rank:
 * nothing moves. GT_ERR_INVALID unless zero is 3 or when [lo, hi) is not
 * inside the padded buffer. */
typedef struct gt_dp_gather gt_dp_gather;
gt_status gt_dp_gather_start(gt_dp *dp, void *buf, gt_dtype dt, size_t lo, size_t hi,
                             gt_dp_gather **out);
gt_status gt_dp_gather_test(gt_dp *dp, gt_dp_gather *g);
/* Accepts NULL. */
gt_status gt_dp_gather_wait(gt_dp *dp, gt_dp_gather *g);

/* Statistics: bytes all-reduced / reduce-scattered / gathered by this rank. */
size_t gt_dp_bytes(const gt_dp *dp);
/* Backend memory the gt_dp holds: the summed shard (ZeRO-1/2 without
 * --deterministic) and the norm partials' device buffer (nccl). */
size_t gt_dp_memory_bytes(const gt_dp *dp);

#ifdef __cplusplus
}
#endif
#endif
