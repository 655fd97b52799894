/* Data parallelism (see dp.h). */
#include "engine/dp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/timer.h"
#include "kernels/ops.h"

typedef struct bucket {
    size_t lo, hi;          /* element range of the gradient buffer */
    gt_comm_request *req;   /* in flight, or NULL */
    int started, done;
} bucket;

struct gt_dp {
    gt_comm *comm;
    gt_backend *be;
    gt_dp_config cfg;
    int rank, size;
    size_t n, padded, shard;
    float *grads;       /* current step's buffer (borrowed) */
    float *gshard;      /* ZeRO-1 non-deterministic: reduce-scatter output */
    bucket *buckets;
    int nbuckets;
    int finished;
    size_t bytes;
};

gt_dp_config gt_dp_defaults(void) {
    return (gt_dp_config){.bucket_bytes = (size_t)25 << 20, .zero = 0, .deterministic = 0,
                          .chunk = (size_t)1 << 16};
}

static int is_pow2(int x) { return x > 0 && (x & (x - 1)) == 0; }

gt_status gt_dp_new(gt_comm *comm, gt_backend *be, const gt_dp_config *cfg, size_t n_params,
                    gt_dp **out) {
    *out = NULL;
    int size = gt_comm_size(comm);
    if (cfg->deterministic && !is_pow2(size))
        return GT_ERR(GT_ERR_INVALID,
                      "--deterministic needs a power-of-two number of ranks (the sum is one "
                      "fixed binary tree); got %d",
                      size);
    if (cfg->chunk == 0 || cfg->zero < 0 || cfg->zero > 1)
        return GT_ERR(GT_ERR_INVALID, "data parallel: chunk must be > 0 and zero 0 or 1");
    gt_dp *dp = calloc(1, sizeof *dp);
    if (!dp) return GT_ERR(GT_ERR_OOM, "out of host memory");
    dp->comm = comm;
    dp->be = be;
    dp->cfg = *cfg;
    dp->rank = gt_comm_rank(comm);
    dp->size = size;
    dp->n = n_params;
    size_t unit = cfg->chunk * (size_t)size;
    dp->padded = (n_params + unit - 1) / unit * unit;
    if (dp->padded == 0) dp->padded = unit;
    dp->shard = dp->padded / (size_t)size;
    if (cfg->zero && !cfg->deterministic) {
        gt_status s = gt_backend_alloc(be, dp->shard * sizeof(float), (void **)&dp->gshard);
        if (s != GT_OK) {
            free(dp);
            return s;
        }
    }
    /* buckets from the end of the buffer, where the backward finishes first */
    size_t per = cfg->bucket_bytes / sizeof(float);
    if (per == 0) per = 1;
    dp->nbuckets = (int)((n_params + per - 1) / per);
    dp->buckets = calloc((size_t)(dp->nbuckets ? dp->nbuckets : 1), sizeof(bucket));
    if (!dp->buckets) {
        gt_dp_free(dp);
        return GT_ERR(GT_ERR_OOM, "out of host memory");
    }
    for (int b = 0; b < dp->nbuckets; b++) {
        size_t hi = n_params - (size_t)b * per;
        dp->buckets[b].hi = hi;
        dp->buckets[b].lo = hi > per ? hi - per : 0;
    }
    *out = dp;
    return GT_OK;
}

void gt_dp_free(gt_dp *dp) {
    if (!dp) return;
    gt_backend_dealloc(dp->be, dp->gshard);
    free(dp->buckets);
    free(dp);
}

size_t gt_dp_padded(const gt_dp *dp) { return dp->padded; }

void gt_dp_shard(const gt_dp *dp, size_t *lo, size_t *hi) {
    if (dp->cfg.zero) {
        *lo = (size_t)dp->rank * dp->shard;
        *hi = *lo + dp->shard;
    } else {
        *lo = 0;
        *hi = dp->padded;
    }
}

size_t gt_dp_bytes(const gt_dp *dp) { return dp->bytes; }

static int overlapped(const gt_dp *dp) {
    return !dp->cfg.deterministic && !dp->cfg.zero && dp->size > 1;
}

gt_status gt_dp_begin(gt_dp *dp, float *grads) {
    dp->grads = grads;
    dp->finished = 0;
    for (int b = 0; b < dp->nbuckets; b++) {
        if (dp->buckets[b].req)
            return GT_ERR(GT_ERR_INVALID, "data parallel: a bucket of the last step is still "
                                          "in flight (gt_dp_finish was not called)");
        dp->buckets[b].started = dp->buckets[b].done = 0;
    }
    return GT_OK;
}

static gt_status start_bucket(gt_dp *dp, bucket *bk) {
    float *p = dp->grads + bk->lo;
    size_t count = bk->hi - bk->lo;
    bk->started = 1;
    dp->bytes += count * sizeof(float);
    return gt_comm_allreduce(dp->comm, p, p, count, GT_DTYPE_FP32, GT_REDOP_SUM, &bk->req);
}

gt_status gt_dp_grads_ready(gt_dp *dp, size_t frontier) {
    if (!overlapped(dp)) return GT_OK;
    for (int b = 0; b < dp->nbuckets; b++) {
        bucket *bk = &dp->buckets[b];
        if (!bk->started && bk->lo >= frontier) GT_TRY(start_bucket(dp, bk));
        /* MPI progresses non-blocking collectives only inside MPI calls:
         * testing between layers is what moves the data while we compute */
        if (bk->req) {
            int done = 0;
            GT_TRY(gt_comm_test(dp->comm, bk->req, &done));
            if (done) {
                bk->req = NULL;
                bk->done = 1;
            }
        }
    }
    return GT_OK;
}

gt_status gt_dp_finish(gt_dp *dp, float **shard_grads, double *exposed_s) {
    uint64_t t0 = gt_now_ns();
    size_t lo, hi;
    gt_dp_shard(dp, &lo, &hi);
    if (dp->size == 1) {
        *shard_grads = dp->grads + lo;
    } else if (dp->cfg.deterministic) {
        dp->bytes += dp->n * sizeof(float);
        GT_TRY(gt_comm_allreduce_tree(dp->comm, dp->grads, dp->n, GT_DTYPE_FP32));
        *shard_grads = dp->grads + lo;
    } else if (dp->cfg.zero) {
        dp->bytes += dp->padded * sizeof(float);
        GT_TRY(gt_comm_reduce_scatter(dp->comm, dp->grads, dp->gshard, dp->shard,
                                      GT_DTYPE_FP32, GT_REDOP_SUM, NULL));
        *shard_grads = dp->gshard;
    } else {
        /* whatever the hook did not start (no hook, or the last buckets) */
        for (int b = 0; b < dp->nbuckets; b++)
            if (!dp->buckets[b].started) GT_TRY(start_bucket(dp, &dp->buckets[b]));
        for (int b = 0; b < dp->nbuckets; b++) {
            bucket *bk = &dp->buckets[b];
            if (bk->req) {
                gt_status s = gt_comm_wait(dp->comm, bk->req);
                bk->req = NULL;
                if (s != GT_OK) return s;
            }
            bk->done = 1;
        }
        *shard_grads = dp->grads;
    }
    dp->finished = 1;
    if (exposed_s) *exposed_s = (double)(gt_now_ns() - t0) * 1e-9;
    return GT_OK;
}

gt_status gt_dp_grad_norm(gt_dp *dp, double *norm) {
    if (!dp->finished)
        return GT_ERR(GT_ERR_INVALID, "data parallel: gradient norm before gt_dp_finish");
    size_t chunk = dp->cfg.chunk, nchunks = dp->padded / chunk;
    size_t per_rank = dp->shard / chunk;
    double *part = calloc(nchunks, sizeof(double));
    if (!part) return GT_ERR(GT_ERR_OOM, "out of host memory");
    gt_kctx k = {.be = dp->be, .dt = GT_DTYPE_FP32};
    gt_status s = GT_OK;
    if (dp->cfg.zero && dp->size > 1) {
        /* this rank's chunks from its shard, everyone's through allgather */
        const float *g = dp->cfg.deterministic ? dp->grads + (size_t)dp->rank * dp->shard
                                               : dp->gshard;
        double *mine = part + (size_t)dp->rank * per_rank;
        for (size_t c = 0; c < per_rank && s == GT_OK; c++)
            s = dp->be->ops->sumsq(&k, g + c * chunk, chunk, &mine[c]);
        if (s == GT_OK)
            s = gt_comm_allgather(dp->comm, mine, part, per_rank, GT_DTYPE_FP64, NULL);
    } else {
        for (size_t c = 0; c < nchunks && s == GT_OK; c++)
            s = dp->be->ops->sumsq(&k, dp->grads + c * chunk, chunk, &part[c]);
    }
    double ss = 0.0;
    for (size_t c = 0; c < nchunks; c++) ss += part[c];
    free(part);
    *norm = sqrt(ss);
    return s;
}

gt_status gt_dp_gather_params(gt_dp *dp, float *params) {
    if (!dp->cfg.zero || dp->size == 1) return GT_OK;
    dp->bytes += dp->padded * sizeof(float);
    return gt_comm_allgather(dp->comm, params + (size_t)dp->rank * dp->shard, params, dp->shard,
                             GT_DTYPE_FP32, NULL);
}
