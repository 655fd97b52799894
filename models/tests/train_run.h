/* Shared by the model tests that drive suites/trainer/loop.c: one training run,
 * one line saying how it went. */
#ifndef GT_MODELS_TESTS_TRAIN_RUN_H
#define GT_MODELS_TESTS_TRAIN_RUN_H

#include <stdio.h>
#include <stdlib.h>

#include "suites/trainer/train.h"

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

/* The fp16 loss scaler's overflow skip: c (fp16) stopped after 2 steps
 * into *two, then with GT_FAULT_OVERFLOW=3 stopped after 3 into *three,
 * so that step 3 is the one to skip. Returns 1 when both runs succeeded
 * (the caller checks and releases both stats either way). setenv and
 * unsetenv: the including test defines _POSIX_C_SOURCE. */
static inline int mt_overflow_runs(gt_train_config c, gt_train_stats *two,
                                   gt_train_stats *three) {
    c.stop_after = 2;
    gt_status a = mt_train_run(&c, two, "fp16, stop after 2");
    setenv("GT_FAULT_OVERFLOW", "3", 1);
    c.stop_after = 3;
    gt_status b = mt_train_run(&c, three, "fp16, GT_FAULT_OVERFLOW=3, stop after 3");
    unsetenv("GT_FAULT_OVERFLOW");
    return a == GT_OK && b == GT_OK;
}

#endif
