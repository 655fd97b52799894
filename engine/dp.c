/* Data parallelism (see dp.h). */
#include "engine/dp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/ops.h"
#include "engine/timer.h"

typedef struct bucket {
    size_t lo, hi;          /* element range of the gradient buffer (ZeRO-2: inside
                               one rank's shard, owner) */
    int owner;              /* ZeRO-2: the rank whose shard holds [lo, hi) */
    gt_comm_request *req;   /* in flight, or NULL */
    int started, done;      /* done: summed, and back in grads when staged */
} bucket;

struct gt_dp {
    gt_comm *comm;
    gt_backend *be;
    gt_dp_config cfg;
    int rank, size;
    size_t n, padded, shard;
    size_t es;          /* bytes per gradient element */
    int staged;         /* device memory, host communicator: through host mirrors */
    int dev_comm;       /* the communicator takes device memory (nccl) */
    void *grads;        /* current step's buffer (borrowed, backend memory) */
    void *gshard;       /* ZeRO-1/2 non-deterministic: the summed shard (backend) */
    void *hgrads;       /* staged: host mirror of grads (padded elements) */
    void *hshard;       /* staged ZeRO-1/2 non-deterministic: host copy of the summed shard */
    float *hparams;     /* staged ZeRO-1: host mirror of the fp32 params (padded) */
    double *dpart;      /* nccl ZeRO-1: device buffer of the norm partials */
    gt_dp_grad_src src; /* gradients in pieces (gt_dp_set_grad_source), or NULL */
    void *src_ctx;
    uint64_t blocked_ns; /* waits in the backward (a tree bucket, gt_dp_range_wait): exposed */
    int in_finish;
    bucket *buckets;
    int nbuckets;
    int finished;
    size_t bytes;
};

gt_dp_config gt_dp_defaults(void) {
    return (gt_dp_config){.bucket_bytes = (size_t)25 << 20, .zero = 0, .deterministic = 0,
                          .chunk = (size_t)1 << 16, .grad_dtype = GT_DTYPE_FP32};
}

static int is_pow2(int x) { return x > 0 && (x & (x - 1)) == 0; }

/* The one place that decides where the communicator's buffers live (dp.h):
 * directly in backend memory, or staged through host mirrors. */
static gt_status choose_placement(gt_dp *dp) {
    const char *cname = gt_comm_backend_name(dp->comm);
    int device = dp->be->device != GT_DEVICE_HOST;
    int nccl = strcmp(cname, "nccl") == 0;
    if (nccl && !device)
        return GT_ERR(GT_ERR_INVALID,
                      "data parallel: the nccl communicator needs device memory, but backend "
                      "'%s' keeps its memory on the host: use the mpi or self communicator",
                      dp->be->name);
    if (nccl && dp->cfg.deterministic)
        return GT_ERR(GT_ERR_INVALID,
                      "data parallel: --deterministic over nccl is not supported (the tree "
                      "all-reduce adds on the host); use the mpi communicator, which stages "
                      "the device gradients through host memory");
    dp->dev_comm = nccl;
    dp->staged = device && !nccl && dp->size > 1;
    return GT_OK;
}

/* Host (staged) and device (nccl) scratch buffers this configuration needs. */
static gt_status alloc_buffers(gt_dp *dp) {
    const gt_dp_config *cfg = &dp->cfg;
    if (cfg->zero && !cfg->deterministic && dp->size > 1) { /* one rank: its grads are the sums */
        GT_TRY(gt_backend_alloc(dp->be, dp->shard * dp->es, &dp->gshard));
        /* ZeRO-2's buckets cover the real parameters only: the padding of
         * the last shard stays zero, as the reduce-scatter's sum of it is */
        if (cfg->zero >= 2) GT_TRY(dp->be->memset_zero(dp->be, dp->gshard, dp->shard * dp->es));
    }
    if (dp->staged) {
        if (!(dp->hgrads = malloc(dp->padded * dp->es)))
            return GT_ERR(GT_ERR_OOM, "data parallel: no host memory for the staging copy of "
                                      "the gradients (%zu bytes)", dp->padded * dp->es);
        if (cfg->zero && !cfg->deterministic && !(dp->hshard = malloc(dp->shard * dp->es)))
            return GT_ERR(GT_ERR_OOM, "data parallel: no host memory for the staged shard "
                                      "(%zu bytes)", dp->shard * dp->es);
        if (cfg->zero && !(dp->hparams = malloc(dp->padded * sizeof(float))))
            return GT_ERR(GT_ERR_OOM, "data parallel: no host memory for the staging copy of "
                                      "the parameters (%zu bytes)", dp->padded * sizeof(float));
    }
    if (dp->dev_comm && cfg->zero && dp->size > 1)
        GT_TRY(gt_backend_alloc(dp->be, dp->padded / cfg->chunk * sizeof(double),
                                (void **)&dp->dpart));
    return GT_OK;
}

/* The largest of cfg->cuts below hi, 0 when none. */
static size_t cut_below(const gt_dp_config *cfg, size_t hi) {
    size_t best = 0;
    for (int i = 0; i < cfg->ncuts; i++)
        if (cfg->cuts[i] < hi && cfg->cuts[i] > best) best = cfg->cuts[i];
    return best;
}

/* Buckets from the end of the buffer, where the backward finishes first;
 * the same bytes per bucket whatever the dtype, never across one of
 * cfg->cuts. ZeRO-2/3 also cut them at the shards' edges, so that each
 * bucket's sum goes to one rank. */
static gt_status make_buckets(gt_dp *dp, const gt_dp_config *cfg) {
    size_t per = dp->cfg.bucket_bytes / dp->es, n = dp->n;
    if (per == 0) per = 1;
    int cut = dp->cfg.zero >= 2;
    int nb = 0;
    for (int pass = 0; pass < 2; pass++) {
        nb = 0;
        for (size_t hi = n; hi > 0; nb++) {
            size_t lo = hi > per ? hi - per : 0;
            size_t edge = (hi - 1) / dp->shard * dp->shard; /* the shard holding hi - 1 */
            if (cut && lo < edge) lo = edge;
            size_t c = cut_below(cfg, hi);
            if (lo < c) lo = c;
            if (pass == 1) dp->buckets[nb] = (bucket){.lo = lo, .hi = hi,
                                                      .owner = (int)(edge / dp->shard)};
            hi = lo;
        }
        if (pass == 0 && !(dp->buckets = calloc((size_t)(nb ? nb : 1), sizeof(bucket))))
            return GT_ERR(GT_ERR_OOM, "out of host memory");
    }
    dp->nbuckets = nb;
    return GT_OK;
}

gt_status gt_dp_new(gt_comm *comm, gt_backend *be, const gt_dp_config *cfg, size_t n_params,
                    gt_dp **out) {
    *out = NULL;
    int size = gt_comm_size(comm);
    if (cfg->deterministic && !is_pow2(size))
        return GT_ERR(GT_ERR_INVALID,
                      "--deterministic needs a power-of-two number of ranks (the sum is one "
                      "fixed binary tree); got %d",
                      size);
    if (cfg->chunk == 0 || cfg->zero < 0 || cfg->zero > 3)
        return GT_ERR(GT_ERR_INVALID, "data parallel: chunk must be > 0 and zero 0, 1, 2 or 3");
    if (cfg->ncuts < 0 || (cfg->ncuts > 0 && !cfg->cuts))
        return GT_ERR(GT_ERR_INVALID, "data parallel: %d bucket cuts without their offsets",
                      cfg->ncuts);
    if (cfg->grad_dtype != GT_DTYPE_FP32 && cfg->grad_dtype != GT_DTYPE_BF16 &&
        cfg->grad_dtype != GT_DTYPE_FP16)
        return GT_ERR(GT_ERR_INVALID,
                      "data parallel: gradient dtype %s; use fp32, bf16 or fp16",
                      gt_dtype_name(cfg->grad_dtype));
    gt_dp *dp = calloc(1, sizeof *dp);
    if (!dp) return GT_ERR(GT_ERR_OOM, "out of host memory");
    dp->comm = comm;
    dp->be = be;
    dp->cfg = *cfg;
    dp->cfg.cuts = NULL; /* used by make_buckets only, while cfg is still the caller's */
    dp->cfg.ncuts = 0;
    dp->rank = gt_comm_rank(comm);
    dp->size = size;
    dp->n = n_params;
    dp->es = gt_dtype_size(cfg->grad_dtype);
    size_t unit = cfg->chunk * (size_t)size;
    dp->padded = (n_params + unit - 1) / unit * unit;
    if (dp->padded == 0) dp->padded = unit;
    dp->shard = dp->padded / (size_t)size;
    gt_status s = choose_placement(dp);
    if (s == GT_OK) s = alloc_buffers(dp);
    if (s == GT_OK) s = make_buckets(dp, cfg);
    if (s != GT_OK) {
        gt_dp_free(dp);
        return s;
    }
    *out = dp;
    return GT_OK;
}

void gt_dp_free(gt_dp *dp) {
    if (!dp) return;
    gt_backend_dealloc(dp->be, dp->gshard);
    gt_backend_dealloc(dp->be, dp->dpart);
    free(dp->hgrads);
    free(dp->hshard);
    free(dp->hparams);
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

size_t gt_dp_memory_bytes(const gt_dp *dp) {
    return (dp->gshard ? dp->shard * dp->es : 0) +
           (dp->dpart ? dp->padded / dp->cfg.chunk * sizeof(double) : 0);
}

/* Buckets start during the backward: all-reduced (replicated) or reduced
 * to their shard's rank (ZeRO-2/3); with --deterministic and the gradients
 * in pieces, summed by the tree. */
static int overlapped(const gt_dp *dp) {
    if (dp->cfg.deterministic) return dp->src != NULL; /* the tree, bucket by bucket */
    return dp->cfg.zero != 1 && dp->size > 1;
}

/* Element i of a buffer of the gradient dtype. */
static void *at(const gt_dp *dp, void *base, size_t i) { return (char *)base + i * dp->es; }

/* Element lo of the gradients, valid for [lo, lo + count): in the one
 * buffer, or in the piece the source gives. */
static void *grad_at(gt_dp *dp, size_t lo, size_t count) {
    return dp->src ? dp->src(dp->src_ctx, lo, lo + count) : at(dp, dp->grads, lo);
}

gt_status gt_dp_set_grad_source(gt_dp *dp, gt_dp_grad_src src, void *ctx) {
    if (src && (dp->cfg.zero < 2 || dp->size == 1))
        return GT_ERR(GT_ERR_INVALID, "data parallel: gradients in pieces need ZeRO-2/3 on "
                                      "several ranks (zero %d, %d rank(s))",
                      dp->cfg.zero, dp->size);
    if (src && dp->cfg.deterministic && !dp->gshard) {
        /* the tree sums each bucket in its piece; the owner keeps its part */
        GT_TRY(gt_backend_alloc(dp->be, dp->shard * dp->es, &dp->gshard));
        GT_TRY(dp->be->memset_zero(dp->be, dp->gshard, dp->shard * dp->es));
    }
    dp->src = src;
    dp->src_ctx = ctx;
    return GT_OK;
}

int gt_dp_range_reduced(const gt_dp *dp, size_t lo, size_t hi) {
    for (int b = 0; b < dp->nbuckets; b++) {
        const bucket *bk = &dp->buckets[b];
        if (bk->lo >= lo && bk->hi <= hi && !bk->done) return 0;
    }
    return 1;
}

/* Staging: elements [lo, lo + count) of grads to / from the host mirror. */
static gt_status stage_out(gt_dp *dp, size_t lo, size_t count) {
    void *g = grad_at(dp, lo, count);
    if (!g) return GT_ERR_OOM;
    return dp->be->copy_to_host(dp->be, at(dp, dp->hgrads, lo), g, count * dp->es);
}
static gt_status stage_in(gt_dp *dp, size_t lo, size_t count) {
    return dp->be->copy_to_device(dp->be, at(dp, dp->grads, lo), at(dp, dp->hgrads, lo),
                                  count * dp->es);
}

/* The buffer the communicator reduces: the host mirror when staged. */
static void *comm_grads(gt_dp *dp) { return dp->staged ? dp->hgrads : dp->grads; }

gt_status gt_dp_begin(gt_dp *dp, void *grads) {
    if (!grads && !dp->src)
        return GT_ERR(GT_ERR_INVALID, "data parallel: no gradient buffer and no source");
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

/* ZeRO-2: where the owner keeps bucket bk's sums: its place in the shard
 * (the host copy when staged); NULL on the other ranks. */
static void *shard_slot(gt_dp *dp, const bucket *bk, int staged) {
    if (bk->owner != dp->rank) return NULL;
    return at(dp, staged ? dp->hshard : dp->gshard, bk->lo - (size_t)dp->rank * dp->shard);
}

/* --deterministic with the gradients in pieces: the fixed tree over the
 * bucket, in its piece (staged: in the host mirror), blocking; the owner
 * keeps its sums in the shard. The tree adds element by element, so a
 * bucket's sums have the bits of the whole buffer's. */
static gt_status tree_bucket(gt_dp *dp, bucket *bk) {
    size_t count = bk->hi - bk->lo;
    void *p = grad_at(dp, bk->lo, count);
    if (!p) return GT_ERR_OOM; /* the source's error is set */
    void *h = dp->staged ? at(dp, dp->hgrads, bk->lo) : p;
    if (dp->staged) GT_TRY(dp->be->copy_to_host(dp->be, h, p, count * dp->es));
    GT_TRY(gt_comm_allreduce_tree(dp->comm, h, count, dp->cfg.grad_dtype));
    bk->done = 1;
    if (bk->owner != dp->rank) return GT_OK;
    void *dst = shard_slot(dp, bk, 0);
    if (dp->staged) return dp->be->copy_to_device(dp->be, dst, h, count * dp->es);
    return dp->be->copy_device(dp->be, dst, h, count * dp->es);
}

/* Time the backward waited outside gt_dp_finish (which times itself). */
static void blocked_since(gt_dp *dp, uint64_t t0) {
    if (!dp->in_finish) dp->blocked_ns += gt_now_ns() - t0;
}

static gt_status start_bucket(gt_dp *dp, bucket *bk) {
    size_t count = bk->hi - bk->lo;
    bk->started = 1;
    dp->bytes += count * dp->es;
    if (dp->cfg.deterministic) {
        uint64_t t0 = gt_now_ns();
        gt_status s = tree_bucket(dp, bk);
        blocked_since(dp, t0);
        return s;
    }
    if (dp->staged) GT_TRY(stage_out(dp, bk->lo, count));
    void *p = dp->staged ? at(dp, dp->hgrads, bk->lo) : grad_at(dp, bk->lo, count);
    if (!p) return GT_ERR_OOM; /* the source's error is set */
    if (dp->cfg.zero >= 2)
        return gt_comm_reduce(dp->comm, p, shard_slot(dp, bk, dp->staged), count,
                              dp->cfg.grad_dtype, GT_REDOP_SUM, bk->owner, &bk->req);
    return gt_comm_allreduce(dp->comm, p, p, count, dp->cfg.grad_dtype, GT_REDOP_SUM, &bk->req);
}

/* A bucket's reduction completed: its sums go back to the device when
 * staged (ZeRO-2: the owner's, into its shard). */
static gt_status bucket_done(gt_dp *dp, bucket *bk) {
    bk->req = NULL;
    bk->done = 1;
    size_t count = bk->hi - bk->lo;
    if (!dp->staged) return GT_OK;
    if (dp->cfg.zero < 2) return stage_in(dp, bk->lo, count);
    if (bk->owner != dp->rank) return GT_OK;
    return dp->be->copy_to_device(dp->be, shard_slot(dp, bk, 0), shard_slot(dp, bk, 1),
                                  count * dp->es);
}

gt_status gt_dp_range_wait(gt_dp *dp, size_t lo, size_t hi) {
    for (int b = 0; b < dp->nbuckets; b++) {
        bucket *bk = &dp->buckets[b];
        if (bk->lo < lo || bk->hi > hi || !bk->req) continue;
        uint64_t t0 = gt_now_ns();
        gt_status s = gt_comm_wait(dp->comm, bk->req);
        blocked_since(dp, t0);
        bk->req = NULL;
        GT_TRY(s);
        GT_TRY(bucket_done(dp, bk));
    }
    return GT_OK;
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
            if (done) GT_TRY(bucket_done(dp, bk));
        }
    }
    return GT_OK;
}

/* Whatever the hook did not start (no hook, or the last buckets), then every
 * bucket waited for. */
static gt_status finish_buckets(gt_dp *dp) {
    for (int b = 0; b < dp->nbuckets; b++)
        if (!dp->buckets[b].started) GT_TRY(start_bucket(dp, &dp->buckets[b]));
    for (int b = 0; b < dp->nbuckets; b++) {
        bucket *bk = &dp->buckets[b];
        if (bk->req) {
            gt_status s = gt_comm_wait(dp->comm, bk->req);
            bk->req = NULL;
            if (s != GT_OK) return s;
        }
        if (!bk->done) GT_TRY(bucket_done(dp, bk));
    }
    return GT_OK;
}

/* gt_dp_finish's reduction, by mode. */
static gt_status finish_reduce(gt_dp *dp, void **shard_grads) {
    size_t lo, hi;
    gt_dtype dt = dp->cfg.grad_dtype;
    gt_dp_shard(dp, &lo, &hi);
    if (dp->size == 1) {
        *shard_grads = at(dp, dp->grads, lo);
    } else if (dp->cfg.deterministic && dp->src) {
        GT_TRY(finish_buckets(dp));
        *shard_grads = dp->gshard;
    } else if (dp->cfg.deterministic) {
        dp->bytes += dp->n * dp->es;
        if (dp->staged) GT_TRY(stage_out(dp, 0, dp->n));
        GT_TRY(gt_comm_allreduce_tree(dp->comm, comm_grads(dp), dp->n, dt));
        if (dp->staged) GT_TRY(stage_in(dp, 0, dp->n));
        *shard_grads = at(dp, dp->grads, lo);
    } else if (dp->cfg.zero >= 2) {
        GT_TRY(finish_buckets(dp));
        *shard_grads = dp->gshard;
    } else if (dp->cfg.zero) {
        dp->bytes += dp->padded * dp->es;
        if (dp->staged) {
            GT_TRY(stage_out(dp, 0, dp->padded));
            GT_TRY(gt_comm_reduce_scatter(dp->comm, dp->hgrads, dp->hshard, dp->shard, dt,
                                          GT_REDOP_SUM, NULL));
            GT_TRY(dp->be->copy_to_device(dp->be, dp->gshard, dp->hshard, dp->shard * dp->es));
        } else {
            GT_TRY(gt_comm_reduce_scatter(dp->comm, dp->grads, dp->gshard, dp->shard, dt,
                                          GT_REDOP_SUM, NULL));
        }
        *shard_grads = dp->gshard;
    } else {
        GT_TRY(finish_buckets(dp));
        *shard_grads = dp->grads;
    }
    return GT_OK;
}

gt_status gt_dp_finish(gt_dp *dp, void **shard_grads, double *exposed_s) {
    uint64_t t0 = gt_now_ns();
    dp->in_finish = 1;
    gt_status s = finish_reduce(dp, shard_grads);
    dp->in_finish = 0;
    GT_TRY(s);
    dp->finished = 1;
    /* and what the backward waited for (a tree bucket, the pieces' rate limit) */
    uint64_t ns = gt_now_ns() - t0 + dp->blocked_ns;
    dp->blocked_ns = 0;
    if (exposed_s) *exposed_s = (double)ns * 1e-9;
    return GT_OK;
}

/* part[r * per_rank, (r + 1) * per_rank) from rank r, on every rank (host
 * memory; through the device buffer for a communicator of device memory). */
static gt_status gather_partials(gt_dp *dp, double *part, size_t per_rank) {
    double *mine = part + (size_t)dp->rank * per_rank;
    if (!dp->dev_comm)
        return gt_comm_allgather(dp->comm, mine, part, per_rank, GT_DTYPE_FP64, NULL);
    size_t all = per_rank * (size_t)dp->size;
    double *dmine = dp->dpart + (size_t)dp->rank * per_rank;
    GT_TRY(dp->be->copy_to_device(dp->be, dmine, mine, per_rank * sizeof(double)));
    GT_TRY(gt_comm_allgather(dp->comm, dmine, dp->dpart, per_rank, GT_DTYPE_FP64, NULL));
    return dp->be->copy_to_host(dp->be, part, dp->dpart, all * sizeof(double));
}

gt_status gt_dp_grad_norm(gt_dp *dp, double *norm) {
    if (!dp->finished)
        return GT_ERR(GT_ERR_INVALID, "data parallel: gradient norm before gt_dp_finish");
    if (!dp->be->ops->sumsq)
        return GT_ERR(GT_ERR_UNSUPPORTED, "data parallel: backend '%s' has no sumsq op for "
                                          "the gradient norm", dp->be->name);
    size_t chunk = dp->cfg.chunk, nchunks = dp->padded / chunk;
    size_t per_rank = dp->shard / chunk;
    double *part = calloc(nchunks, sizeof(double));
    if (!part) return GT_ERR(GT_ERR_OOM, "out of host memory");
    gt_kctx k = {.be = dp->be, .dt = dp->cfg.grad_dtype};
    gt_status s = GT_OK;
    if (dp->cfg.zero && dp->size > 1) {
        /* this rank's chunks from its shard, everyone's through allgather */
        void *g = dp->cfg.deterministic && !dp->src
                      ? at(dp, dp->grads, (size_t)dp->rank * dp->shard)
                      : dp->gshard;
        double *mine = part + (size_t)dp->rank * per_rank;
        for (size_t c = 0; c < per_rank && s == GT_OK; c++)
            s = dp->be->ops->sumsq(&k, at(dp, g, c * chunk), chunk, &mine[c]);
        if (s == GT_OK) s = gather_partials(dp, part, per_rank);
    } else {
        for (size_t c = 0; c < nchunks && s == GT_OK; c++)
            s = dp->be->ops->sumsq(&k, at(dp, dp->grads, c * chunk), chunk, &part[c]);
    }
    double ss = 0.0;
    for (size_t c = 0; c < nchunks; c++) ss += part[c];
    free(part);
    *norm = sqrt(ss);
    if (s != GT_OK)
        return gt_error_wrap(s, "data parallel: gradient norm (%s gradients)",
                             gt_dtype_name(dp->cfg.grad_dtype));
    return GT_OK;
}

gt_status gt_dp_gather_params(gt_dp *dp, float *params) {
    if (!dp->cfg.zero || dp->size == 1) return GT_OK;
    dp->bytes += dp->padded * sizeof(float);
    size_t off = (size_t)dp->rank * dp->shard;
    if (!dp->staged)
        return gt_comm_allgather(dp->comm, params + off, params, dp->shard, GT_DTYPE_FP32,
                                 NULL);
    GT_TRY(dp->be->copy_to_host(dp->be, dp->hparams + off, params + off,
                                dp->shard * sizeof(float)));
    GT_TRY(gt_comm_allgather(dp->comm, dp->hparams + off, dp->hparams, dp->shard,
                             GT_DTYPE_FP32, NULL));
    return dp->be->copy_to_device(dp->be, params, dp->hparams, dp->padded * sizeof(float));
}

/* ---- ZeRO-3: a unit's weights gathered from their owners ------------------------- */

typedef struct gather_piece {
    size_t lo, hi; /* inside one rank's shard */
    int owner;
    gt_comm_request *req;
} gather_piece;

struct gt_dp_gather {
    void *buf;     /* backend memory: elements [lo, hi) of the weights */
    size_t lo;
    gt_dtype dt;
    size_t es;
    int npieces;
    gather_piece piece[]; /* at most one per rank */
};

static void *at_es(void *base, size_t i, size_t es) { return (char *)base + i * es; }

gt_status gt_dp_gather_start(gt_dp *dp, void *buf, gt_dtype dt, size_t lo, size_t hi,
                             gt_dp_gather **out) {
    *out = NULL;
    if (dp->cfg.zero != 3)
        return GT_ERR(GT_ERR_INVALID, "data parallel: a unit's gather is ZeRO-3's (zero is %d)",
                      dp->cfg.zero);
    if (lo > hi || hi > dp->padded)
        return GT_ERR(GT_ERR_INVALID, "data parallel: gather of [%zu, %zu) outside the %zu "
                                      "padded parameters", lo, hi, dp->padded);
    gt_dp_gather *g = calloc(1, sizeof *g + (size_t)dp->size * sizeof(gather_piece));
    if (!g) return GT_ERR(GT_ERR_OOM, "out of host memory");
    g->buf = buf;
    g->lo = lo;
    g->dt = dt;
    g->es = gt_dtype_size(dt);
    *out = g;
    if (dp->size == 1) return GT_OK; /* everything is this rank's */
    /* one broadcast per shard the range overlaps, from its owner, in the
     * same order on every rank: staged, at the piece's place in the host
     * mirror; else at its place in buf */
    for (size_t a = lo; a < hi;) {
        int owner = (int)(a / dp->shard);
        size_t b = (size_t)(owner + 1) * dp->shard;
        if (b > hi) b = hi;
        gather_piece *pc = &g->piece[g->npieces++];
        *pc = (gather_piece){.lo = a, .hi = b, .owner = owner};
        void *cp = dp->staged ? at_es(dp->hparams, a, g->es) : at_es(buf, a - lo, g->es);
        if (dp->staged && owner == dp->rank)
            GT_TRY(dp->be->copy_to_host(dp->be, cp, at_es(buf, a - lo, g->es), (b - a) * g->es));
        GT_TRY(gt_comm_broadcast(dp->comm, cp, b - a, dt, owner, &pc->req));
        a = b;
    }
    dp->bytes += (hi - lo) * g->es;
    return GT_OK;
}

gt_status gt_dp_gather_test(gt_dp *dp, gt_dp_gather *g) {
    for (int i = 0; i < g->npieces; i++) {
        int done = 0;
        if (g->piece[i].req) GT_TRY(gt_comm_test(dp->comm, g->piece[i].req, &done));
        if (done) g->piece[i].req = NULL;
    }
    return GT_OK;
}

gt_status gt_dp_gather_wait(gt_dp *dp, gt_dp_gather *g) {
    if (!g) return GT_OK;
    gt_status s = GT_OK;
    for (int i = 0; i < g->npieces; i++) {
        gather_piece *pc = &g->piece[i];
        if (pc->req) {
            gt_status w = gt_comm_wait(dp->comm, pc->req);
            pc->req = NULL;
            if (s == GT_OK) s = w;
        }
        if (s == GT_OK && dp->staged && pc->owner != dp->rank)
            s = dp->be->copy_to_device(dp->be, at_es(g->buf, pc->lo - g->lo, g->es),
                                       at_es(dp->hparams, pc->lo, g->es),
                                       (pc->hi - pc->lo) * g->es);
    }
    free(g);
    return s;
}
