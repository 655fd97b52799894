/* The pipeline part (train_impl.h, docs/distributed.md "Pipeline parallel"):
 * each rank of a pipeline group is one stage of the model's blocks, holding
 * the whole parameter store but updating only its stage's range; the
 * data-parallel group of a stage reduces that range's gradients (gt_dp on
 * the slice); the gradient norm is assembled over the stages so that it
 * has one rank's bits; the tied head weights go from the first stage to
 * the last after every update. With --zero 1 the stage's data-parallel
 * group shards AdamW's state of the stage's range: ZeRO-1's layout
 * (layout.c) over the stage's slice. The schedules are in pipe_schedule.c. */
#include "suites/trainer/pipeline.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/stats.h"

void gt_pipe_blocks(int L, int P, int s, int *b0, int *b1) {
    int base = L / P, extra = L % P;
    *b0 = s * base + (s < extra ? s : extra);
    *b1 = *b0 + base + (s < extra ? 1 : 0);
}

/* What the pipeline does not do yet, refused before any work. */
static gt_status pipe_check(const gt_trainer *t) {
    const gt_train_config *cfg = t->cfg;
    int L = gt_model_num_blocks(t->model);
    if (L == 0)
        return GT_ERR(GT_ERR_UNSUPPORTED,
                      "--layout pp=%d: %s has no pipeline stages (only "
                      "gpt2 does): use pp=1",
                      t->P, cfg->model_name);
    if (L < t->P)
        return GT_ERR(GT_ERR_INVALID,
                      "--layout pp=%d needs at least %d blocks, the model has "
                      "%d: use fewer stages or --layers %d",
                      t->P, t->P, L, t->P);
    if (cfg->zero >= 2)
        return GT_ERR(GT_ERR_UNSUPPORTED,
                      "--zero %d with pp=%d is not done yet: ZeRO-1 works with pipeline "
                      "stages (each stage's data-parallel group shards AdamW's state of its "
                      "range): use --zero 1 or 0",
                      cfg->zero, t->P);
    if (t->be->device != GT_DEVICE_HOST || strcmp(gt_comm_backend_name(t->comm), "nccl") == 0)
        return GT_ERR(GT_ERR_UNSUPPORTED,
                      "pp=%d runs on host backends (cpu, ref) over mpi for "
                      "now; the %s backend over %s is not done yet",
                      t->P, t->be->name, gt_comm_backend_name(t->comm));
    if ((int64_t)t->k_local * 4 >= GT_PIPE_TAG_HEADSUM)
        return GT_ERR(GT_ERR_INVALID,
                      "%d micro-batches per step are more than the pipeline's "
                      "message tags allow (%d): use fewer",
                      t->k_local, GT_PIPE_TAG_HEADSUM / 4 - 1);
    return GT_OK;
}

/* Every stage's blocks and parameter range; this one's; the split for
 * the report ("0-1,2-3": blocks of stage 0, of stage 1, ...). */
static void pipe_ranges(gt_trainer *t, gt_train_pipe *p) {
    int L = gt_model_num_blocks(t->model);
    char *split = t->st->pp_split;
    size_t len = sizeof t->st->pp_split, used = 0;
    split[0] = 0;
    for (int s = 0; s < p->P; s++) {
        gt_model_stage st;
        gt_pipe_blocks(L, p->P, s, &st.b0, &st.b1);
        st.first = st.b0 == 0;
        st.last = st.b1 == L;
        gt_model_stage_range(t->model, &st, &p->lo[s], &p->hi[s]);
        if (s == p->stage) p->st = st;
        if (used < len)
            used += (size_t)snprintf(split + used, len - used, "%s%d-%d", s ? "," : "", st.b0,
                                     st.b1 - 1);
    }
    gt_model_tied_range(t->model, &p->tied_lo, &p->tied_hi);
}

gt_status gt_train_pipe_open(gt_trainer *t, size_t *n) {
    gt_status s = pipe_check(t);
    if (s != GT_OK) {
        t->st->collective_error = 1; /* every rank refuses alike: rank 0 says it */
        return s;
    }
    gt_train_pipe *p = calloc(1, sizeof *p);
    if (!p) return GT_ERR(GT_ERR_OOM, "out of host memory for the pipeline");
    t->pipe = p;
    p->comm = t->pp_comm;
    p->P = t->P;
    p->stage = t->stage;
    p->M = t->k_local;
    p->lo = calloc((size_t)p->P, sizeof *p->lo);
    p->hi = calloc((size_t)p->P, sizeof *p->hi);
    p->bubble = calloc((size_t)t->cfg->steps, sizeof *p->bubble);
    t->st->bubble_stage = calloc((size_t)p->P, sizeof *t->st->bubble_stage);
    if (!p->lo || !p->hi || !p->bubble || !t->st->bubble_stage)
        return GT_ERR(GT_ERR_OOM, "out of host memory for the pipeline");
    pipe_ranges(t, p);
    /* GPipe keeps every micro-batch's activations until its backward;
     * 1F1B at most P - stage of them */
    int inflight = p->P - p->stage;
    p->nslots = t->cfg->schedule == GT_TRAIN_PP_GPIPE || inflight > p->M ? p->M : inflight;
    p->pending = calloc((size_t)p->nslots * GT_PIPE_SENDS, sizeof *p->pending);
    if (!p->pending) return GT_ERR(GT_ERR_OOM, "out of host memory for the pipeline");
    GT_TRY(gt_model_stage_prepare(t->model, &p->st, p->nslots));
    t->st->act_bytes = gt_model_act_bytes(t->model); /* the stage's blocks, every slot */
    size_t chunk = gt_model_norm_chunk(t->model), es = gt_dtype_size(t->cfg->precision);
    GT_TRY(gt_backend_alloc(t->be, chunk * es, &p->chunk_buf));
    p->exact_head = t->cfg->deterministic;
    if (!p->exact_head && p->st.first)
        GT_TRY(gt_backend_alloc(t->be, (p->tied_hi - p->tied_lo) * es, &p->head_grad));
    t->sync_off = p->lo[p->stage];
    *n = p->hi[p->stage] - p->lo[p->stage];
    t->st->pp_micro_batches = p->M;
    snprintf(t->st->pp_schedule, sizeof t->st->pp_schedule, "%s",
             gt_train_pp_schedule_name(t->cfg->schedule));
    t->st->bubble_theory = (double)(p->P - 1) / (double)(p->M + p->P - 1);
    return GT_OK;
}

void gt_train_pipe_close(gt_trainer *t) {
    gt_train_pipe *p = t->pipe;
    if (!p) return;
    /* sends still in flight after an error mid-step: their peers are gone or
     * failing and may never receive them, so they are not waited for (the
     * watchdog's deadline would hold the error back); one that has completed
     * is freed, the others are left to the job's end (the harness aborts it) */
    for (int i = 0; p->pending && i < p->nslots * GT_PIPE_SENDS; i++) {
        int done = 0;
        if (p->pending[i]) (void)gt_comm_test(p->comm, p->pending[i], &done);
    }
    gt_backend_dealloc(t->be, p->chunk_buf);
    gt_backend_dealloc(t->be, p->head_grad);
    free(p->pending);
    free(p->bubble);
    free(p->lo);
    free(p->hi);
    free(p);
    t->pipe = NULL;
}

void gt_pipe_stage_blocks(const gt_trainer *t, int *b0, int *b1) {
    *b0 = t->pipe->st.b0;
    *b1 = t->pipe->st.b1;
}

/* ---- the layout of a pipeline stage -------------------------------------------- */

/* The model padded for the gradient sync's slice (the same length on
 * every stage, so that every stage has the same norm chunks) and the
 * stage's range as the optimizer's. */
static gt_status pipe_place(gt_trainer *t) {
    gt_train_pipe *p = t->pipe;
    size_t chunk = gt_model_norm_chunk(t->model);
    int64_t need = (int64_t)(t->sync_off + gt_dp_padded(t->dp));
    GT_TRY(gt_comm_allreduce(p->comm, &need, &need, 1, GT_DTYPE_INT64, GT_REDOP_MAX, NULL));
    size_t n = ((size_t)need + chunk - 1) / chunk * chunk;
    if (n < gt_model_num_params_padded(t->model)) n = gt_model_num_params_padded(t->model);
    GT_TRY(gt_model_pad(t->model, n));
    size_t slo = p->lo[p->stage], shi = p->hi[p->stage];
    t->lo = slo;
    t->hi = shi;
    if (t->layout->zero) { /* ZeRO-1: this rank's shard of the slice, inside the stage's range */
        size_t a, b;
        gt_dp_shard(t->dp, &a, &b);
        t->lo = slo + a < shi ? slo + a : shi;
        t->hi = slo + b < shi ? slo + b : shi;
    }
    /* the norm: the last stage's chunks run on over the padding (zeros) */
    p->hi[p->P - 1] = n;
    return gt_model_set_opt_range(t->model, t->lo, t->hi);
}

/* The first stage updated the tied head weights: the last stage's copy
 * (fp32 masters and the compute copy) follows. */
static gt_status pipe_updated(gt_trainer *t) {
    gt_train_pipe *p = t->pipe;
    size_t n = p->tied_hi - p->tied_lo;
    float *w = gt_model_params_buffer(t->model) + p->tied_lo;
    if (n == 0) return GT_OK;
    if (p->st.first)
        return gt_comm_send(p->comm, w, n, GT_DTYPE_FP32, p->P - 1, GT_PIPE_TAG_TIED, NULL);
    if (!p->st.last) return GT_OK;
    GT_TRY(gt_comm_recv(p->comm, w, n, GT_DTYPE_FP32, 0, GT_PIPE_TAG_TIED, NULL));
    return gt_model_sync_weights(t->model, p->tied_lo, p->tied_hi);
}

/* ZeRO-1: the stage's data-parallel group all-gathers the slice's shards
 * (ZeRO-1's own step, over t->sync_off), then the tied weights move on. */
static gt_status pipe_zero1_updated(gt_trainer *t) {
    GT_TRY(gt_train_layout_for(1)->params_updated(t));
    return pipe_updated(t);
}

static const gt_train_layout g_pipe_layouts[] = {
    {.name = "pipeline", .zero = 0, .place = pipe_place, .params_updated = pipe_updated},
    {.name = "pipeline zero1", .zero = 1, .place = pipe_place,
     .params_updated = pipe_zero1_updated},
};

const gt_train_layout *gt_train_pipe_layout(int zero) {
    return zero == 1 ? &g_pipe_layouts[1] : &g_pipe_layouts[0];
}

/* ---- the global gradient norm ------------------------------------------------------- */

/* Stage that holds the start of chunk c. */
static int chunk_owner(const gt_train_pipe *p, size_t c0) {
    for (int s = p->P - 1; s > 0; s--)
        if (c0 >= p->lo[s]) return s;
    return 0;
}

/* A chunk split between stages, whole: every stage writes its part into a
 * zeroed chunk and the pipeline group sums them (x + 0 is exact); the
 * chunk's first stage takes its sum of squares. */
static gt_status split_chunk(gt_trainer *t, size_t c0, size_t chunk, double *part) {
    gt_train_pipe *p = t->pipe;
    size_t es = gt_dtype_size(t->cfg->precision);
    size_t lo = p->lo[p->stage], hi = p->hi[p->stage];
    size_t a = c0 > lo ? c0 : lo, b = c0 + chunk < hi ? c0 + chunk : hi;
    GT_TRY(t->be->memset_zero(t->be, p->chunk_buf, chunk * es));
    const char *g = gt_model_grads_buffer(t->model);
    if (a < b)
        GT_TRY(t->be->copy_device(t->be, (char *)p->chunk_buf + (a - c0) * es, g + a * es,
                                  (b - a) * es));
    GT_TRY(gt_comm_allreduce(p->comm, p->chunk_buf, p->chunk_buf, chunk, t->cfg->precision,
                             GT_REDOP_SUM, NULL));
    if (chunk_owner(p, c0) != p->stage) return GT_OK;
    gt_kctx k = {.be = t->be, .dt = t->cfg->precision};
    return t->be->ops->sumsq(&k, p->chunk_buf, chunk, part);
}

/* ZeRO-1 without --deterministic: the summed gradients are in each rank's
 * shard only (the reduce-scatter's), so the stage's sum of squares is its
 * data-parallel group's norm of the slice (whose padding past the stage's
 * range holds gradients this stage never writes: zeros), added over the
 * stages; not one rank's bits, as the reduction's order is not either. */
static gt_status sharded_norm(gt_trainer *t, gt_train_step *s) {
    double n, ss;
    GT_TRY(gt_dp_grad_norm(t->dp, &n));
    ss = n * n;
    GT_TRY(gt_comm_allreduce(t->pipe->comm, &ss, &ss, 1, GT_DTYPE_FP64, GT_REDOP_SUM, NULL));
    s->norm = sqrt(ss);
    return GT_OK;
}

/* As gt_dp_grad_norm on one rank: the sums of squares of fixed chunks,
 * added in chunk order; each chunk's from the stage holding its start
 * (whole or assembled), the others' 0, summed over the stages exactly.
 * The stage's summed gradients are whole in the buffer (the all-reduce,
 * or --deterministic's tree, also with ZeRO-1) unless sharded_norm. */
gt_status gt_train_pipe_norm(gt_trainer *t, gt_train_step *s) {
    gt_train_pipe *p = t->pipe;
    if (t->layout->zero && t->R > 1 && !t->cfg->deterministic) return sharded_norm(t, s);
    if (!t->be->ops->sumsq)
        return GT_ERR(GT_ERR_UNSUPPORTED, "backend '%s' has no sumsq op for the gradient norm",
                      t->be->name);
    size_t chunk = gt_model_norm_chunk(t->model);
    size_t nchunks = gt_model_num_params_padded(t->model) / chunk;
    double *part = calloc(nchunks, sizeof *part);
    if (!part) return GT_ERR(GT_ERR_OOM, "out of host memory for the gradient norm");
    gt_kctx k = {.be = t->be, .dt = t->cfg->precision};
    const char *g = gt_model_grads_buffer(t->model);
    size_t es = gt_dtype_size(t->cfg->precision);
    size_t lo = p->lo[p->stage], hi = p->hi[p->stage];
    gt_status st = GT_OK;
    for (size_t c = 0; c < nchunks && st == GT_OK; c++) {
        size_t c0 = c * chunk;
        int o = chunk_owner(p, c0);
        if (c0 + chunk > p->hi[o]) /* split between stages */
            st = split_chunk(t, c0, chunk, &part[c]);
        else if (c0 >= lo && c0 + chunk <= hi)
            st = t->be->ops->sumsq(&k, g + c0 * es, chunk, &part[c]);
    }
    if (st == GT_OK)
        st = gt_comm_allreduce(p->comm, part, part, nchunks, GT_DTYPE_FP64, GT_REDOP_SUM, NULL);
    double ss = 0.0;
    for (size_t c = 0; c < nchunks; c++)
        ss += part[c];
    free(part);
    s->norm = sqrt(ss);
    return st;
}

/* ---- the end of a run ----------------------------------------------------------------- */

/* Every stage's parameters to every stage (the digests read them all), and
 * the bubble: this rank's median over steps after the first, every stage's
 * gathered, their mean. */
gt_status gt_train_pipe_whole(gt_trainer *t) {
    gt_train_pipe *p = t->pipe;
    float *w = gt_model_params_buffer(t->model);
    size_t np = gt_model_num_params(t->model);
    for (int s = 0; s < p->P; s++) {
        size_t hi = p->hi[s] < np ? p->hi[s] : np;
        GT_TRY(gt_comm_broadcast(p->comm, w + p->lo[s], hi - p->lo[s], GT_DTYPE_FP32, s, NULL));
    }
    GT_TRY(gt_model_sync_weights(t->model, 0, np));
    int n = t->st->steps_done, first = n > 1 ? 1 : 0;
    double mine = n > 0 ? gt_median(p->bubble + first, (size_t)(n - first)) : 0.0;
    GT_TRY(gt_comm_allgather(p->comm, &mine, t->st->bubble_stage, 1, GT_DTYPE_FP64, NULL));
    double sum = 0;
    for (int s = 0; s < p->P; s++)
        sum += t->st->bubble_stage[s];
    t->st->bubble_measured = sum / p->P;
    return GT_OK;
}
