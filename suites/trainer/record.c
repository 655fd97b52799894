/* What a run returns (train.h, gt_train_stats; train_impl.h): room for the
 * per-step series, one step's figures as it ends, the medians and MFU at the
 * end, the final parameter digests. What a report records of them is
 * suites/train_record.c's. */
#include "suites/trainer/train.h"
#include "suites/trainer/train_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/stats.h"

gt_status gt_train_stats_open(gt_trainer *t) {
    gt_train_stats *st = t->st;
    size_t n = (size_t)t->cfg->steps;
    st->loss = calloc(n, sizeof(double));
    st->lr = calloc(n, sizeof(double));
    st->grad_norm = calloc(n, sizeof(double));
    st->ms = calloc(n, sizeof(double));
    st->wait_ms = calloc(n, sizeof(double));
    st->comm_ms = calloc(n, sizeof(double));
    st->loss_scale = calloc(n, sizeof(double));
    st->skipped = calloc(n, 1);
    st->final_loss_scale = 1.0;
    if (t->cfg->eval_every > 0) {
        size_t ne = n / (size_t)t->cfg->eval_every + 1;
        st->eval_curve = calloc(ne, sizeof(double));
        st->eval_at = calloc(ne, sizeof(int));
        if (!st->eval_curve || !st->eval_at)
            return GT_ERR(GT_ERR_OOM, "no host memory for %zu evaluations", ne);
    }
    /* per rank: its micro-batch losses, then 1 when its gradient norm is not finite */
    t->mb_loss = calloc((size_t)t->k_local + 1, sizeof(float));
    t->all_loss = calloc(((size_t)t->k_local + 1) * t->R, sizeof(float));
    if (!st->loss || !st->lr || !st->grad_norm || !st->ms || !st->wait_ms || !st->comm_ms ||
        !st->loss_scale || !st->skipped || !t->mb_loss || !t->all_loss)
        return GT_ERR(GT_ERR_OOM, "no host memory for %d steps of statistics", t->cfg->steps);
    return GT_OK;
}

void gt_train_record_step(gt_trainer *t, const gt_train_step *s, uint64_t t1) {
    const gt_train_config *cfg = t->cfg;
    gt_train_stats *st = t->st;
    int i = s->i;
    double ms = (double)(t1 - s->t0) * 1e-6;
    st->loss[i] = s->loss;
    st->lr[i] = s->lr;
    st->grad_norm[i] = s->norm;
    st->ms[i] = ms;
    st->wait_ms[i] = (double)s->wait * 1e-6;
    st->comm_ms[i] = s->exposed * 1e3;
    st->loss_scale[i] = s->scale;
    st->skipped[i] = (unsigned char)s->skip;
    st->steps_done = i + 1;
    gt_train_traffic_record(t, s);
    if (t->fp16) {
        st->skipped_steps = t->ls.skipped;
        st->final_loss_scale = t->ls.scale;
    }
    double tps = (double)cfg->batch * t->T / (ms * 1e-3);
    double mfu = st->peak_gflops > 0
                     ? tps * st->flops_per_token / (st->peak_gflops * 1e9 * t->nworld)
                     : 0.0;
    if (cfg->on_step && t->rank == 0)
        cfg->on_step(cfg->on_step_ctx, s->step + 1, cfg->steps, (float)s->loss, s->lr, s->norm,
                     ms, tps, mfu);
}

void gt_train_summarize(gt_trainer *t) {
    gt_train_stats *st = t->st;
    int R = t->nworld; /* every rank of the grid computes */
    /* the first step pays for first-touch page faults and cache warm-up */
    int skip = st->steps_done > 1 ? 1 : 0;
    st->first_step_ms = st->steps_done > 0 ? st->ms[0] : 0;
    st->ms_per_step = gt_median(st->ms + skip, (size_t)(st->steps_done - skip));
    st->tokens_per_s = (double)t->cfg->batch * t->T / (st->ms_per_step * 1e-3);
    st->exposed_comm_ms = gt_median(st->comm_ms + skip, (size_t)(st->steps_done - skip));
    if (st->peak_gflops > 0)
        st->mfu = st->tokens_per_s * st->flops_per_token / (st->peak_gflops * 1e9 * R);
    if (st->datasheet_gflops > 0)
        st->mfu_datasheet =
            st->tokens_per_s * st->flops_per_token / (st->datasheet_gflops * 1e9 * R);
}

/* The sum of the k largest units from unit `from` on (elements): ZeRO-3's
 * gathered units at their most are two (a unit and the next one's
 * prefetch). */
static double largest_units(const gt_model *m, int k, int from) {
    double top[3] = {0, 0, 0};
    for (int u = from; u < gt_model_num_units(m); u++) {
        size_t lo, hi;
        gt_model_unit_range(m, u, &lo, &hi);
        double n = (double)(hi - lo);
        for (int j = 0; j < 3; j++)
            if (n > top[j]) {
                double x = top[j];
                top[j] = n;
                n = x;
            }
    }
    double sum = 0;
    for (int j = 0; j < k && j < 3; j++) sum += top[j];
    return sum;
}

/* The gradients a rank holds: the whole buffer (and the deterministic
 * tree's slots), or sharded by unit its summed shard and the units between
 * their backward and the end of their reduce (gradunits.c): the one
 * computing and the one before it still being reduced (the two largest
 * after the first; with --deterministic one: its tree is blocking), and
 * the first (gpt2's embeddings: the tied head writes
 * their gradient first, the encoder last); with several micro-batches every
 * unit (they accumulate until the last backward). */
static double grads_formula(const gt_trainer *t, double P, double es, int tree_slots) {
    if (!t->gunits) return es * P * (1 + tree_slots);
    size_t lo0, hi0;
    gt_model_unit_range(t->model, 0, &lo0, &hi0);
    /* --deterministic: the tree sums a unit before the next one computes */
    int computing = t->cfg->deterministic ? 1 : 2;
    double units = t->k_local > 1 ? (double)gt_model_num_params(t->model)
                                  : (double)(hi0 - lo0) + largest_units(t->model, computing, 1);
    return es * P / t->R + es * units;
}

/* The formula of docs/distributed.md, "Memory per rank", for P parameters
 * (padded: whole norm chunks, and with ZeRO whole shards) stored in es bytes
 * (the gradients and the compute copy; fp32 masters and AdamW state), R
 * ranks and the mode: what a rank must hold. */
static size_t memory_formula(const gt_trainer *t, size_t acts, int tree_slots) {
    double P = (double)gt_model_num_params_padded(t->model);
    double es = (double)gt_dtype_size(t->cfg->precision), R = t->R;
    int zero = t->layout ? t->layout->zero : 0, det = t->cfg->deterministic;
    /* the fp32 masters and the compute copy; ZeRO-3: the masters' shard and
     * the gathered units instead */
    double params = zero == 3 ? 4.0 * P / R + es * largest_units(t->model, 2, 0)
                              : 4.0 * P + (es < 4 ? es * P : 0);
    params += 4.0 * (double)gt_model_state_numel(t->model);
    double grads = grads_formula(t, P, es, tree_slots);
    /* a pipeline stage keeps AdamW's state of its own range (ZeRO-1: this
     * rank's shard of it) */
    double optim = t->pipe ? 8.0 * (double)(t->hi - t->lo) : 8.0 * P / (zero ? R : 1);
    /* the summed shard: a gradient shard when the gradients are sharded by
     * unit; a pipeline stage's group shards the stage's slice */
    double slice = t->pipe && t->dp ? (double)gt_dp_padded(t->dp) : P;
    double comm = zero && !det && R > 1 && !t->gunits ? es * slice / R : 0;
    return (size_t)(params + grads + optim + comm) + acts;
}

void gt_train_account_memory(gt_trainer *t) {
    gt_train_memory *mp = &t->st->mem_parts;
    memset(mp, 0, sizeof *mp);
    if (!t->model) return;
    gt_params_memory(t->model->params, &mp->params, &mp->grads, &mp->optim);
    mp->params += gt_train_units_peak_bytes(t); /* ZeRO-3's gathered units, at their most */
    mp->acts = gt_model_act_bytes(t->model);
    mp->grads += (size_t)t->tree.nslots * t->tree.n * gt_dtype_size(t->tree.dt);
    mp->comm = t->dp ? gt_dp_memory_bytes(t->dp) : 0;
    if (t->gunits) { /* the summed shard is this rank's gradient shard */
        mp->grads += mp->comm;
        mp->comm = 0;
    }
    mp->expected = memory_formula(t, mp->acts, t->tree.nslots);
}

/* The parameters, then the state tensors (BatchNorm running statistics). */
gt_status gt_train_digests(gt_trainer *t) {
    gt_train_stats *st = t->st;
    if (t->pipe) GT_TRY(gt_train_pipe_whole(t)); /* every stage's range, and the bubble */
    size_t nst = gt_model_state_numel(t->model), np = 0;
    float *host = NULL;
    /* tensor parallel: the slices gathered into the one-rank layout */
    GT_TRY(gt_train_full_params(t, nst, &host, &np));
    size_t bytes = np * sizeof(float);
    gt_status s = GT_OK;
    if (t->cfg->save_final) { /* rank 0's file; every rank learns how it went */
        if (t->wrank == 0) s = gt_model_save_to(t->model, host, t->cfg->save_final);
        gt_comm *all = t->cfg->comm ? t->cfg->comm : t->comm;
        s = gt_train_agree(all, s, &st->collective_error);
    }
    if (s == GT_OK) st->weights_digest = gt_fnv1a64(GT_FNV1A64_INIT, host, bytes);
    if (s == GT_OK && (s = gt_model_get_state(t->model, host + np)) == GT_OK)
        /* FNV-1a runs byte by byte: the parameters' hash goes on over the
         * state instead of hashing the parameters again */
        st->params_digest = gt_fnv1a64(st->weights_digest, host + np, nst * sizeof(float));
    free(host);
    return s;
}

void gt_train_stats_release(gt_train_stats *s) {
    if (!s) return;
    free(s->loss);
    free(s->lr);
    free(s->grad_norm);
    free(s->ms);
    free(s->wait_ms);
    free(s->comm_ms);
    free(s->loss_scale);
    free(s->skipped);
    free(s->eval_curve);
    free(s->eval_at);
    free(s->bubble_stage);
    gt_profile_free(s->profile);
    memset(s, 0, sizeof *s);
}

double gt_train_tail_loss(const gt_train_stats *st, int k) {
    int n = st->steps_done;
    if (k > n) k = n;
    if (k <= 0) return NAN;
    double s = 0;
    for (int i = n - k; i < n; i++) s += st->loss[i];
    return s / k;
}
