/* The training loop (train.h): gt_train_run composes the parts of
 * train_impl.h, and train_step is one optimizer step, read top to bottom.
 * Set-up in setup.c, checkpoints in checkpoint.c, what a report records of
 * a run in suites/train_record.c. */
#include "suites/trainer/train.h"
#include "suites/trainer/train_impl.h"

#include <stdio.h>
#include <string.h>

#include "engine/timer.h"
#include "suites/cpu_share.h"

gt_train_config gt_train_defaults(void) {
    gt_train_config c;
    memset(&c, 0, sizeof c);
    snprintf(c.model_name, sizeof c.model_name, "gpt2-tiny");
    c.batch = 8;
    c.seq_len = 64;
    c.steps = 200;
    c.opt = gt_adamw_defaults();
    c.opt.lr = 1e-3f;
    c.opt.warmup_steps = 10;
    c.seed = 1337;
    c.data_order = GT_DATA_ORDER_SEQUENTIAL;
    c.synth_branch = 4;
    c.backend = "cpu";
    c.precision = GT_DTYPE_FP32;
    c.loss_scale = gt_lossscale_defaults();
    c.prefetch = 1;
    return c;
}

int64_t gt_train_data_position(const gt_train_config *cfg, int64_t step) {
    return step * cfg->batch * (gt_train_dense(cfg) ? 1 : cfg->seq_len);
}

/* The step's clock and profile start, and this rank's share of the global
 * batch: mlp / convnet samples made on the spot (sample i is the same
 * whoever makes it), gpt2 tokens from the loader. */
static gt_status step_begin(gt_trainer *t, gt_train_step *s) {
    s->t0 = gt_now_ns();
    if (t->prof) gt_profile_step_begin(t->prof, s->i, s->t0);
    if (s->i == 0) {
        uint64_t o = t->cfg->origin_ns;
        uint64_t origin = o && o < s->t0 ? o : t->run_start;
        t->st->startup_ms = (double)(s->t0 - origin) * 1e-6;
    }
    if (t->dense) {
        uint64_t w0 = gt_now_ns();
        gt_task_fill(t->task, (uint64_t)s->step * t->cfg->batch + (uint64_t)t->rank * t->B,
                     t->B, t->dense_x, t->dense_y);
        s->wait = gt_now_ns() - w0;
        gt_profile_region_add(t->prof, GT_PROF_DATA_WAIT, w0, w0 + s->wait, 0);
        return GT_OK;
    }
    GT_TRY(gt_loader_next(t->loader, &s->inputs, &s->targets, &s->wait));
    uint64_t w1 = gt_now_ns();
    gt_profile_region_add(t->prof, GT_PROF_DATA_WAIT, w1 - s->wait, w1, 0);
    return GT_OK;
}

/* The device done with the step, the ranks' parameters compared when due,
 * the step's time and figures. */
static gt_status step_end(gt_trainer *t, gt_train_step *s) {
    int every = t->cfg->check_every;
    GT_TRY(t->be->synchronize(t->be));
    if (t->R > 1 && every > 0 && (s->step + 1) % every == 0) {
        GT_TRY(gt_train_params_whole(t));
        GT_TRY(gt_train_check_consistency(t->model, t->comm, s->step + 1));
        GT_TRY(gt_train_params_sharded(t));
    }
    uint64_t t1 = gt_now_ns();
    /* after the step's synchronisation: the device marks have passed */
    if (t->prof) GT_TRY(gt_profile_step_end(t->prof, t1));
    gt_train_record_step(t, s, t1);
    return GT_OK;
}

/* One optimizer step (global step `step`, from 0). */
static gt_status train_step(gt_trainer *t, int step) {
    gt_train_step s = {.step = step, .i = step - (int)t->start};
    gt_train_fault_stall(t, step);
    GT_TRY(step_begin(t, &s));                /* clock, this rank's batch */
    GT_TRY(gt_train_sync_begin(t));           /* reduction armed on the gradients */
    /* fp16: the scaled loss keeps small gradients above fp16's underflow */
    s.scale = t->fp16 ? t->ls.scale : 1.0f;
    s.dloss = gt_train_fault_overflow(t, step, t->dloss * s.scale);
    GT_TRY(t->schedule(t, &s));               /* micro-batches: forward, backward */
    GT_TRY(gt_train_sync_finish(t, &s));      /* this rank's shard of summed gradients */
    GT_TRY(gt_train_fault_nan(t, &s));
    GT_TRY(gt_train_sync_norm(t, &s));        /* global gradient norm */
    GT_TRY(gt_train_step_health(t, &s));      /* global loss; finite? fp16 skip? */
    GT_TRY(gt_train_optimizer_step(t, &s));   /* AdamW, parameters current everywhere */
    GT_TRY(step_end(t, &s));                  /* timing, statistics */
    /* after the step's timing: neither an evaluation nor a checkpoint is
     * training time */
    GT_TRY(gt_train_eval_periodic(t, &s));
    int every = t->cfg->checkpoint_every;
    if (every <= 0 || (step + 1) % every != 0) return GT_OK;
    /* ZeRO-3: every rank writes its shard of the masters; pipeline stages, tensor
     * ranks: every part's data-parallel group its part, and the job agrees on how
     * it went */
    gt_status sv = gt_train_save_checkpoint(t->ck, t->model, t->comm, t->lo, t->hi, step + 1,
                                            t->st->backend_desc, &t->rid,
                                            t->fp16 ? &t->ls : NULL, &t->st->collective_error);
    if (t->TP <= 1 && t->P <= 1) return sv;
    return gt_train_agree(t->cfg->comm, sv, &t->st->collective_error);
}

gt_status gt_train_run(const gt_train_config *cfg, gt_train_stats *st) {
    gt_trainer t;
    gt_node_load_mark(); /* the node's CPU from here: what others took (train_record.c) */
    unsigned long hangs = gt_comm_hang_count();
    gt_status s = gt_train_open(&t, cfg, st);
    st->hangs_before = hangs;
    for (int step = (int)t.start; s == GT_OK && step < t.end; step++) s = train_step(&t, step);
    if (s == GT_OK) {
        gt_train_summarize(&t);
        s = gt_train_eval_final(&t);
    }
    if (s == GT_OK) s = gt_train_params_whole(&t);
    if (s == GT_OK) s = gt_train_digests(&t);
    if (s == GT_OK) s = gt_train_params_sharded(&t); /* what a rank holds, for the record */
    gt_train_close(&t);
    return s;
}
