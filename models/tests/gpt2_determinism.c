/* Determinism of training on the cpu backend: the same seed gives
 * bitwise-identical losses and final weights run to run, and with 1 or 2
 * threads (the cpu kernels may not reduce in a thread-dependent order). */
#include <stdio.h>
#include <string.h>

#include "suites/trainer/train.h"

static int failures;

static int run(int threads, gt_data_order order, gt_train_stats *st) {
    gt_train_config c = gt_train_defaults();
    /* big enough that every op is split across threads */
    snprintf(c.model_options, sizeof c.model_options, "channels=96,heads=3");
    c.batch = 6;
    c.seq_len = 33;
    c.steps = 12;
    c.threads = threads;
    c.data_order = order;
    c.peak_gflops = GT_TRAIN_NO_MFU; /* no peak probe: not needed here */
    c.opt.weight_decay = 0.1f;
    c.opt.total_steps = c.steps;
    gt_status s = gt_train_run(&c, st);
    if (s != GT_OK) {
        fprintf(stderr, "train (threads %d): %s\n", threads, gt_last_error());
        failures++;
        return 0;
    }
    return 1;
}

static void same(const gt_train_stats *a, const gt_train_stats *b, const char *what) {
    if (a->steps_done != b->steps_done) {
        fprintf(stderr, "FAIL %s: %d vs %d steps\n", what, a->steps_done, b->steps_done);
        failures++;
        return;
    }
    for (int i = 0; i < a->steps_done; i++)
        if (memcmp(&a->loss[i], &b->loss[i], sizeof(double)) != 0 ||
            memcmp(&a->grad_norm[i], &b->grad_norm[i], sizeof(double)) != 0) {
            fprintf(stderr, "FAIL %s: step %d loss %.17g vs %.17g, norm %.17g vs %.17g\n", what,
                    i + 1, a->loss[i], b->loss[i], a->grad_norm[i], b->grad_norm[i]);
            failures++;
            return;
        }
    if (a->params_digest != b->params_digest) {
        fprintf(stderr, "FAIL %s: final weights differ (%016llx vs %016llx)\n", what,
                (unsigned long long)a->params_digest, (unsigned long long)b->params_digest);
        failures++;
        return;
    }
    printf("ok  %-40s final loss %.9g weights %016llx\n", what, a->loss[a->steps_done - 1],
           (unsigned long long)a->params_digest);
}

int main(void) {
    for (int o = 0; o < 2; o++) {
        gt_data_order order = o ? GT_DATA_ORDER_SHUFFLED : GT_DATA_ORDER_SEQUENTIAL;
        gt_train_stats t1a, t1b, t2a, t2b;
        if (!run(1, order, &t1a) || !run(1, order, &t1b) || !run(2, order, &t2a) ||
            !run(2, order, &t2b))
            return 1;
        char what[96];
        snprintf(what, sizeof what, "run_to_run, 1 thread, %s", gt_data_order_name(order));
        same(&t1a, &t1b, what);
        snprintf(what, sizeof what, "run_to_run, 2 threads, %s", gt_data_order_name(order));
        same(&t2a, &t2b, what);
        snprintf(what, sizeof what, "1 vs 2 threads, %s", gt_data_order_name(order));
        same(&t1a, &t2a, what);
        /* the check must be able to fail: training changed the weights */
        if (t1a.loss[0] == t1a.loss[t1a.steps_done - 1]) {
            fprintf(stderr, "FAIL: the loss did not move: nothing was trained\n");
            failures++;
        }
        gt_train_stats_release(&t1a);
        gt_train_stats_release(&t1b);
        gt_train_stats_release(&t2a);
        gt_train_stats_release(&t2b);
    }
    return failures ? 1 : 0;
}
