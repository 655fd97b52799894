/* The held-out evaluation of a dense model (train_impl.h): rank 0, samples
 * from GT_TRAIN_EVAL_FIRST on (never trained on), evaluation mode; after
 * every --eval-every steps (the curve and the time to target) and after
 * training. Outside the steps' timing. */
#include "suites/trainer/train_impl.h"

#include <math.h>

/* n samples in forwards of at most M (x, y: host room for M), evaluation
 * mode, training mode again afterwards. Means summed in order. */
static gt_status held_out_eval(gt_model *model, const gt_task *task, int n, int M, float *x,
                               int32_t *y, gt_train_stats *st) {
    double sum = 0.0, bayes = 0.0;
    gt_status s = GT_OK;
    gt_model_set_training(model, 0);
    for (int done_n = 0; done_n < n && s == GT_OK;) {
        int k = n - done_n < M ? n - done_n : M;
        gt_task_fill(task, GT_TRAIN_EVAL_FIRST + (uint64_t)done_n, k, x, y);
        gt_batch b = {.n = k, .T = 1, .inputs = x, .targets = y};
        float loss = 0.0f;
        s = gt_model_forward(model, &b, &loss);
        sum += (double)loss * k;
        bayes += gt_task_bayes_loss_sum(task, x, y, k);
        done_n += k;
    }
    gt_model_set_training(model, 1);
    if (s != GT_OK) return gt_error_wrap(s, "held-out evaluation of %d samples", n);
    st->eval_loss = sum / n;
    st->eval_bayes = bayes / n;
    st->eval_samples = n;
    return GT_OK;
}

/* Who evaluates: rank 0; with ZeRO-3 every rank, as each forward gathers
 * the weights from all of them (rank 0's figures are the ones recorded). */
static int evaluates(const gt_trainer *t) { return t->rank == 0 || t->units; }

/* One evaluation after `done` steps, between the on_eval calls (rank 0's). */
static gt_status evaluate(gt_trainer *t, int done) {
    const gt_train_config *cfg = t->cfg;
    int cb = cfg->on_eval && t->rank == 0;
    if (cb) cfg->on_eval(cfg->on_eval_ctx, done, 0, NAN);
    GT_TRY(held_out_eval(t->model, t->task, cfg->eval_samples, t->M, t->dense_x, t->dense_y,
                         t->st));
    if (cb) cfg->on_eval(cfg->on_eval_ctx, done, 1, t->st->eval_loss);
    return GT_OK;
}

gt_status gt_train_eval_periodic(gt_trainer *t, const gt_train_step *s) {
    const gt_train_config *cfg = t->cfg;
    gt_train_stats *st = t->st;
    int done = s->step + 1;
    if (!t->dense || cfg->eval_every <= 0 || done % cfg->eval_every != 0 || !evaluates(t))
        return GT_OK;
    GT_TRY(evaluate(t, done));
    st->eval_curve[st->n_evals] = st->eval_loss;
    st->eval_at[st->n_evals++] = done;
    if (cfg->target_gap > 0 && st->steps_to_target < 0 &&
        st->eval_loss - st->eval_bayes <= cfg->target_gap) {
        st->steps_to_target = done;
        double ms = 0.0;
        for (int j = 0; j <= s->i; j++) ms += st->ms[j];
        st->time_to_target_s = ms * 1e-3;
    }
    return GT_OK;
}

gt_status gt_train_eval_final(gt_trainer *t) {
    if (!t->dense || t->cfg->eval_samples <= 0 || !evaluates(t)) return GT_OK;
    return evaluate(t, t->st->first_step + t->st->steps_done);
}
