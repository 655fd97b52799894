/* Fault injection for the tests (train_impl.h, docs/reliability.md): each
 * GT_FAULT_* variable is read once, at the set-up, and acts at one place
 * of the step. */
#include "suites/trainer/train_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void gt_train_faults_read(gt_train_faults *f) {
    /* the watchdog's test: "RANK:STEP" stops that rank (it sleeps) at the
     * start of that step, as a hung or dead peer would */
    f->stall_rank = f->stall_step = -1;
    const char *stall = getenv("GT_FAULT_STALL");
    if (stall && sscanf(stall, "%d:%d", &f->stall_rank, &f->stall_step) != 2) f->stall_rank = -1;
    /* the non-finite test: "RANK:STEP" makes that rank write a NaN into one
     * gradient of its shard before the norm; "RANK:STEP:loss" makes that
     * rank's loss NaN instead, as a forward that overflowed would (not a
     * loss-scaling matter, even in fp16) */
    f->nan_rank = f->nan_step = -1;
    f->nan_loss = 0;
    const char *nanf = getenv("GT_FAULT_NAN");
    if (nanf) {
        char what[8] = "";
        int got = sscanf(nanf, "%d:%d:%7s", &f->nan_rank, &f->nan_step, what);
        if (got < 2) f->nan_rank = -1;
        f->nan_loss = got == 3 && strcmp(what, "loss") == 0;
    }
    /* the loss scaler's test: "STEP" makes rank 0 start that step's
     * backward from an infinite dloss, so its gradients overflow */
    const char *ovf = getenv("GT_FAULT_OVERFLOW");
    f->overflow_step = ovf ? atoi(ovf) : -1;
}

void gt_train_fault_stall(const gt_trainer *t, int step) {
    if (t->wrank == t->faults.stall_rank && step + 1 == t->faults.stall_step)
        for (;;) sleep(1000);
}

float gt_train_fault_overflow(const gt_trainer *t, int step, float dloss) {
    if (t->rank != 0 || step + 1 != t->faults.overflow_step) return dloss;
    fprintf(stderr, "gauntlet: GT_FAULT_OVERFLOW: rank 0 starts the backward of step %d "
                    "from an infinite dloss\n", step + 1);
    return INFINITY;
}

/* After the reduction, before the norm. */
gt_status gt_train_fault_nan(gt_trainer *t, gt_train_step *s) {
    const gt_train_faults *f = &t->faults;
    if (t->wrank != f->nan_rank || s->step + 1 != f->nan_step) return GT_OK;
    if (f->nan_loss) {
        fprintf(stderr, "gauntlet: GT_FAULT_NAN: rank %d makes its loss NaN at step %d\n",
                t->wrank, s->step + 1);
        t->mb_loss[0] = NAN;
        return GT_OK;
    }
    if (t->lo >= t->uhi) return GT_OK;
    size_t x = t->lo + (t->uhi - t->lo) / 2;
    gt_dtype dt = t->cfg->precision;
    uint16_t bad16 = dt == GT_DTYPE_BF16 ? gt_fp32_to_bf16(NAN) : gt_fp32_to_fp16(NAN);
    float bad = NAN;
    gt_model_loc loc;
    char name[96];
    gt_model_locate(t->model, x, &loc);
    gt_model_loc_format(t->model, &loc, name, sizeof name);
    fprintf(stderr, "gauntlet: GT_FAULT_NAN: rank %d writes NaN into the gradient of %s "
                    "at step %d\n", t->wrank, name, s->step + 1);
    size_t es = gt_dtype_size(dt);
    return t->be->copy_to_device(t->be, (char *)s->gshard + (x - t->lo) * es,
                                 es == sizeof bad ? (const void *)&bad : &bad16, es);
}

/* The consistency check's test: rank N starts with one parameter changed. */
gt_status gt_train_fault_perturb(gt_trainer *t) {
    const char *fault = getenv("GT_FAULT_PERTURB_RANK");
    if (!fault || atoi(fault) != t->rank || t->R == 1) return GT_OK;
    float one = 1.0f;
    float *p = gt_model_params_buffer(t->model);
    size_t last = gt_model_num_params(t->model) - 1;
    GT_TRY(t->be->copy_to_device(t->be, p + last, &one, sizeof one));
    return gt_model_sync_weights(t->model, last, last + 1);
}
