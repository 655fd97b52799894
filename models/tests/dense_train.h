/* A minimal training loop over the generic model interface for the mlp and
 * convnet tests: the model and its task alone, without suites/trainer/loop.c's
 * data parallelism, checkpoints and reports (models.dense_cli.cpu covers
 * those), so that a failure here points at the model. One process, one
 * backend, AdamW through
 * gt_model_update, samples from the model's synthetic task (gt_model_task):
 * step t (0-based) trains on samples [t*B, (t+1)*B), so every step sees
 * fresh data.
 *
 * Resume: with stop_after = k the run ends after step k and hands back
 * everything a checkpoint must hold (parameters, AdamW m and v, the state
 * tensors); `resume` continues from such a snapshot. */
#ifndef GT_MODELS_TESTS_DENSE_TRAIN_H
#define GT_MODELS_TESTS_DENSE_TRAIN_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backend.h"
#include "engine/optim.h"
#include "engine/stats.h"
#include "engine/timer.h"
#include "kernels/registry.h"
#include "models/model.h"
#include "models/tasks.h"

typedef struct dense_snapshot {
    int step; /* steps done */
    size_t np, ns;
    float *params, *m, *v, *state;
} dense_snapshot;

static inline void dense_snapshot_release(dense_snapshot *s) {
    free(s->params), free(s->m), free(s->v), free(s->state);
    memset(s, 0, sizeof *s);
}

typedef struct dense_cfg {
    const char *model;   /* preset */
    const char *backend; /* "cpu", "ref" */
    int threads;
    int batch, steps;
    gt_adamw_config opt;
    uint64_t seed;       /* initialisation and task */
    int stop_after;      /* 0: run to steps */
    const dense_snapshot *resume;
    int eval_samples;    /* > 0: held-out evaluation loss at the end (evaluation mode) */
    uint64_t eval_first; /* first held-out sample; 0: DENSE_EVAL_FIRST */
} dense_cfg;

typedef struct dense_result {
    double *loss;        /* (steps) training loss of each step (steps not run: NAN) */
    double target;       /* the task's Bayes-optimal loss */
    double eval_loss;    /* mean over eval_samples held-out samples, NAN if none */
    double eval_bayes;   /* the Bayes-optimal predictor's mean loss on the same samples */
    uint64_t digest;     /* FNV-1a of the final parameters, then the state */
    double seconds;
    dense_snapshot snap; /* with stop_after */
} dense_result;

static inline void dense_result_release(dense_result *r) {
    free(r->loss);
    dense_snapshot_release(&r->snap);
}

/* Held-out samples start far beyond anything training reaches. */
#define DENSE_EVAL_FIRST ((uint64_t)1 << 40)

static inline double dense_now(void) { return (double)gt_now_ns() * 1e-9; }

static inline gt_status dense_train(const dense_cfg *c, dense_result *r) {
    memset(r, 0, sizeof *r);
    r->eval_loss = NAN;
    r->loss = malloc((size_t)c->steps * sizeof(double));
    if (!r->loss) return GT_ERR(GT_ERR_OOM, "no host memory");
    for (int i = 0; i < c->steps; i++) r->loss[i] = NAN;
    gt_backend *be = NULL;
    gt_model *m = NULL;
    gt_task *task = NULL;
    float *x = NULL;
    int32_t *y = NULL;
    gt_backend_config bc = {.threads = c->threads, .device = -1};
    gt_status s = gt_backend_new(c->backend, &bc, &be);
    if (s == GT_OK) s = gt_model_new(be, c->model, c->batch, 1, &m);
    gt_task_config tc;
    if (s == GT_OK) s = gt_model_task(m, c->seed, &tc);
    if (s == GT_OK) s = gt_task_new(&tc, &task);
    if (s != GT_OK) goto done;
    r->target = gt_task_target_loss(task);
    size_t numel = gt_task_sample_numel(task), np = gt_model_num_params(m),
           ns = gt_model_state_numel(m);
    x = malloc((size_t)c->batch * numel * sizeof(float));
    y = malloc((size_t)c->batch * sizeof(int32_t));
    if (!x || !y) {
        s = GT_ERR(GT_ERR_OOM, "no host memory");
        goto done;
    }
    int start = 0;
    if (c->resume) {
        start = c->resume->step;
        if ((s = gt_model_set_params(m, c->resume->params)) != GT_OK ||
            (s = gt_model_set_opt_state(m, 0, np, c->resume->m, c->resume->v)) != GT_OK ||
            (s = gt_model_set_state(m, c->resume->state)) != GT_OK)
            goto done;
    } else if ((s = gt_model_init_random(m, c->seed)) != GT_OK) {
        goto done;
    }
    int end = c->stop_after > 0 ? c->stop_after : c->steps;
    double t0 = dense_now();
    for (int step = start; step < end; step++) {
        gt_task_fill(task, (uint64_t)step * c->batch, c->batch, x, y);
        gt_batch b = {.n = c->batch, .T = 1, .inputs = x, .targets = y};
        float loss = 0;
        if ((s = gt_model_zero_grad(m)) != GT_OK ||
            (s = gt_model_forward_backward(m, &b, 1.0f / c->batch, &loss)) != GT_OK ||
            (s = gt_model_update(m, &c->opt, step + 1, NULL, NULL)) != GT_OK)
            goto done;
        r->loss[step] = loss;
    }
    r->seconds = dense_now() - t0;
    float *host = malloc((np + ns + 1) * sizeof(float));
    if (!host) {
        s = GT_ERR(GT_ERR_OOM, "no host memory");
        goto done;
    }
    if ((s = gt_model_get_params(m, host)) == GT_OK &&
        (s = gt_model_get_state(m, host + np)) == GT_OK)
        r->digest = gt_fnv1a64(GT_FNV1A64_INIT, host, (np + ns) * sizeof(float));
    free(host);
    if (s != GT_OK) goto done;
    if (c->stop_after > 0) {
        dense_snapshot *sn = &r->snap;
        sn->step = end;
        sn->np = np;
        sn->ns = ns;
        sn->params = malloc(np * sizeof(float));
        sn->m = malloc(np * sizeof(float));
        sn->v = malloc(np * sizeof(float));
        sn->state = malloc((ns + 1) * sizeof(float));
        if (!sn->params || !sn->m || !sn->v || !sn->state) {
            s = GT_ERR(GT_ERR_OOM, "no host memory");
            goto done;
        }
        if ((s = gt_model_get_params(m, sn->params)) != GT_OK ||
            (s = gt_model_get_opt_state(m, 0, np, sn->m, sn->v)) != GT_OK ||
            (s = gt_model_get_state(m, sn->state)) != GT_OK)
            goto done;
    }
    if (c->eval_samples > 0) {
        /* evaluation mode: BatchNorm's running statistics */
        gt_model_set_training(m, 0);
        double sum = 0, bayes = 0;
        int done_n = 0;
        while (done_n < c->eval_samples) {
            int n = c->eval_samples - done_n < c->batch ? c->eval_samples - done_n : c->batch;
            uint64_t first =
                (c->eval_first ? c->eval_first : DENSE_EVAL_FIRST) + (uint64_t)done_n;
            gt_task_fill(task, first, n, x, y);
            gt_batch b = {.n = n, .T = 1, .inputs = x, .targets = y};
            float loss = 0;
            if ((s = gt_model_forward(m, &b, &loss)) != GT_OK) goto done;
            sum += (double)loss * n;
            bayes += gt_task_bayes_loss_sum(task, x, y, n);
            done_n += n;
        }
        r->eval_loss = sum / c->eval_samples;
        r->eval_bayes = bayes / c->eval_samples;
        gt_model_set_training(m, 1);
    }
done:
    free(x);
    free(y);
    gt_task_free(task);
    gt_model_free(m);
    gt_backend_free(be);
    return s;
}

/* Mean of losses [from, to). */
static inline double dense_mean(const double *l, int from, int to) {
    double s = 0;
    for (int i = from; i < to; i++) s += l[i];
    return s / (to - from);
}

#endif
