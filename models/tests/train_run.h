/* Shared by the model tests that drive suites/train.c: one training run,
 * one line saying how it went. */
#ifndef GT_MODELS_TESTS_TRAIN_RUN_H
#define GT_MODELS_TESTS_TRAIN_RUN_H

#include <stdio.h>

#include "suites/train.h"

/* gt_train_run(c, st), then "MODEL WHAT ok: loss L after N steps, skipped
 * S, scale X, params DIGEST" (or the error). Returns the status. */
static inline gt_status mt_train_run(const gt_train_config *c, gt_train_stats *st,
                                     const char *what) {
    gt_status s = gt_train_run(c, st);
    printf("%-14s %-40s %s", c->model_name, what, s == GT_OK ? "ok" : gt_status_name(s));
    if (s == GT_OK && st->steps_done > 0)
        printf(": loss %.6f after %d steps, skipped %lld, scale %g, params %016llx",
               st->loss[st->steps_done - 1], st->first_step + st->steps_done,
               (long long)st->skipped_steps, st->final_loss_scale,
               (unsigned long long)st->params_digest);
    else if (s != GT_OK)
        printf(": %s", gt_last_error());
    printf("\n");
    return s;
}

#endif
