/* Traffic per step (train_impl.h): the bytes this rank handed its
 * data-parallel communicator per operation kind (gt_comm_stats: a send
 * buffer's payload, engine/comm.h) over the step's gradient sync (the
 * schedule with its bucket reduces and ZeRO-3's gathers, the wait after it)
 * and its optimizer step (ZeRO-1/2's all-gather of the parameters), beside
 * what the mode's formula says they are (docs/distributed.md, "Traffic per
 * step"). The gradient norm's and the loss's small exchanges are outside
 * that window, and so are evaluations and the cross-rank hash. */
#include "suites/trainer/train_impl.h"

#include <string.h>

#include "suites/trainer/pipeline.h"

void gt_train_traffic_mark(gt_trainer *t, int step_start) {
    if (step_start) memset(t->traffic_step, 0, sizeof t->traffic_step);
    gt_comm_get_stats(t->comm, &t->traffic_mark);
}

void gt_train_traffic_take(gt_trainer *t) {
    gt_comm_stats now;
    gt_comm_get_stats(t->comm, &now);
    for (int k = 0; k < GT_COLL_COUNT; k++)
        t->traffic_step[k] += now.coll_bytes[k] - t->traffic_mark.coll_bytes[k];
    t->traffic_mark = now;
}

/* ZeRO-3's gathers: per micro-batch every unit twice (its forward and its
 * backward), the last one once (the head: its backward follows its forward
 * at once); of each this rank sends the part its shard holds (one
 * broadcast per owner, engine/dp.h). */
static double zero3_gathers(const gt_trainer *t, double es) {
    size_t lo, hi, own_lo = t->lo, own_hi = t->hi;
    int n = gt_model_num_units(t->model);
    double bytes = 0;
    for (int u = 0; u < n; u++) {
        gt_model_unit_range(t->model, u, &lo, &hi);
        size_t a = lo > own_lo ? lo : own_lo, b = hi < own_hi ? hi : own_hi;
        if (a < b) bytes += (u == n - 1 ? 1 : 2) * (double)(b - a) * es;
    }
    return bytes * t->k_local;
}

/* The formula per kind: n parameters, padded to p, es bytes per gradient:
 *   replicated     allreduce n es (the buckets cover the real parameters)
 *   ZeRO-1         reduce_scatter p es (every block), allgather 4 p / R
 *   ZeRO-2, -3     reduce n es (each bucket to its owner)
 *   ZeRO-1, -2     allgather 4 p / R (this rank's fp32 shard of the masters)
 *   ZeRO-3         broadcast: the gathers above
 *   --deterministic: the fixed tree instead of the reduction, send n es
 *                  (rank 0: broadcast n es)
 * One rank: nothing. A pipeline stage's data-parallel group reduces the
 * stage's parameter range alone: n is that range, p it padded to the
 * group's shards (ZeRO-1: reduce-scatter and all-gather over the range). */
int gt_train_traffic_formula(const gt_trainer *t, double f[GT_COLL_COUNT]) {
    memset(f, 0, GT_COLL_COUNT * sizeof *f);
    if (!t->dp || !t->layout) return 0;
    if (t->R == 1) return 1;
    double es = (double)gt_dtype_size(t->cfg->precision);
    double n = (double)gt_model_num_params(t->model), p = (double)gt_dp_padded(t->dp);
    if (t->pipe) n = (double)(t->pipe->hi[t->pipe->stage] - t->pipe->lo[t->pipe->stage]);
    int zero = t->layout->zero;
    if (t->cfg->deterministic) f[t->rank == 0 ? GT_COLL_BROADCAST : GT_COLL_SEND] = n * es;
    else if (zero == 0) f[GT_COLL_ALLREDUCE] = n * es;
    else if (zero == 1) f[GT_COLL_REDUCE_SCATTER] = p * es;
    else f[GT_COLL_REDUCE] = n * es;
    if (zero == 1 || zero == 2) f[GT_COLL_ALLGATHER] = 4.0 * p / t->R;
    if (zero == 3) f[GT_COLL_BROADCAST] += zero3_gathers(t, es);
    return 1;
}

/* A pipeline stage's sends a step (the table of docs/distributed.md,
 * "Pipeline parallel"), for k micro-batches of b sequences of T tokens:
 * the output activation forward (not the last stage) and the input's
 * gradient backward (not the first), b T C each in the activation dtype;
 * with --deterministic the last stage's dlogits and final LayerNorm output
 * b T (Vp/TP + C) a micro-batch, else its summed gradient of the tied wte
 * (Vp/TP) C once; the first stage's updated wte (Vp/TP) C fp32 after the
 * optimizer step. 0 when the model's shape is unknown. */
static double pp_formula(const gt_trainer *t) {
    gt_model_arch a; /* gpt2's fields: max_seq vocab padded_vocab layers heads channels */
    if (gt_model_arch_of(t->cfg->model_name, t->cfg->model_options, &a) != GT_OK) return 0;
    const gt_train_pipe *p = t->pipe;
    double C = a.fields[5], V = (double)a.fields[2] / t->TP, k = t->k_local;
    double bt = (double)t->M * t->T, es = (double)gt_dtype_size(gt_model_dtype(t->model));
    double gs = (double)gt_dtype_size(t->cfg->precision);
    double f = k * bt * C * es * ((p->stage < p->P - 1) + (p->stage > 0));
    if (p->stage == p->P - 1) f += p->exact_head ? k * bt * (V + C) * es : V * C * gs;
    if (p->stage == 0) f += V * C * 4.0;
    return f;
}

/* The pipeline group's sends since the last step recorded (a skipped
 * fp16 step sends no updated wte: only the mark moves). */
static void pp_take(gt_trainer *t, int skip) {
    if (!t->pipe || !t->pp_comm) return;
    gt_comm_stats now;
    gt_comm_get_stats(t->pp_comm, &now);
    if (t->pp_marked && !skip) {
        t->st->pp_send_bytes =
            (double)(now.coll_bytes[GT_COLL_SEND] - t->pp_mark.coll_bytes[GT_COLL_SEND]);
        t->st->pp_send_formula = pp_formula(t);
    }
    t->pp_mark = now;
    t->pp_marked = 1;
}

void gt_train_traffic_record(gt_trainer *t, const gt_train_step *s) {
    gt_train_traffic *tr = &t->st->traffic;
    pp_take(t, s->skip);
    if (s->skip) return; /* fp16 overflow: no update, no all-gather */
    for (int k = 0; k < GT_COLL_COUNT; k++) tr->bytes[k] = (double)t->traffic_step[k];
    tr->step = s->step + 1;
    tr->has_formula = gt_train_traffic_formula(t, tr->formula);
}
