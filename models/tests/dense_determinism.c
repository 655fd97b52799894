/* Determinism of mlp and convnet training (the levels of docs/testing.md)
 * at the model interface, without the training loop of suites/trainer/loop.c:
 *   run_to_run    the same run twice: bitwise-equal losses, weights and
 *                 BatchNorm running statistics;
 *   threads       1 vs 2 cpu threads: the same bits;
 *   resume        stop after 7 steps, rebuild the model from what a
 *                 checkpoint holds (parameters, AdamW m and v, state
 *                 tensors), continue to 16: bitwise equal to the unbroken run
 *                 (and without the state tensors the convnet's differ, so
 *                 saving them is necessary);
 *   cross_backend cpu vs ref: every step's loss within 1e-4 relative.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine/tests/check.h"
#include "models/tests/dense_train.h"

static dense_cfg base(const char *model, const char *backend, int threads) {
    dense_cfg c = {.model = model, .backend = backend, .threads = threads, .batch = 8,
                   .steps = 16, .seed = 5};
    c.opt = gt_adamw_defaults();
    c.opt.lr = 1e-2f;
    c.opt.weight_decay = 0.1f;
    c.opt.warmup_steps = 3;
    c.opt.total_steps = c.steps;
    return c;
}

static int same_run(const dense_result *a, const dense_result *b, int from, int steps) {
    return memcmp(a->loss + from, b->loss + from, (size_t)(steps - from) * sizeof(double)) == 0 &&
           a->digest == b->digest;
}

static void run_model(const char *model) {
    dense_result a, b, t2, part, res, rf;
    dense_cfg c = base(model, "cpu", 1);
    CHECK_OK(dense_train(&c, &a));
    CHECK_OK(dense_train(&c, &b));
    CHECK(same_run(&a, &b, 0, c.steps), "%s run_to_run: runs differ (digest %016llx vs %016llx)",
          model, (unsigned long long)a.digest, (unsigned long long)b.digest);
    CHECK(a.loss[c.steps - 1] < a.loss[0], "%s: loss did not fall (%.4f -> %.4f)", model,
          a.loss[0], a.loss[c.steps - 1]);
    dense_cfg c2 = base(model, "cpu", 2);
    CHECK_OK(dense_train(&c2, &t2));
    CHECK(same_run(&a, &t2, 0, c.steps), "%s threads: 1 and 2 threads differ", model);

    /* resume */
    dense_cfg cp = c;
    cp.stop_after = 7;
    CHECK_OK(dense_train(&cp, &part));
    dense_cfg cr = c;
    cr.resume = &part.snap;
    CHECK_OK(dense_train(&cr, &res));
    CHECK(same_run(&a, &res, 7, c.steps), "%s resume: steps 8..16 or the final weights differ "
                                           "from the unbroken run",
          model);
    if (part.snap.ns > 0) {
        /* a checkpoint without the running statistics does not resume bitwise */
        dense_result nost;
        for (size_t i = 0; i < part.snap.ns; i++) part.snap.state[i] = 0.5f;
        CHECK_OK(dense_train(&cr, &nost));
        CHECK(nost.digest != a.digest, "%s: resuming with reset running statistics gave the "
                                       "same state: the state tensors are not checked",
              model);
        dense_result_release(&nost);
    }

    /* cross_backend */
    dense_cfg cf = base(model, "ref", 1);
    CHECK_OK(dense_train(&cf, &rf));
    double worst = 0;
    for (int i = 0; i < c.steps; i++) {
        double e = fabs(rf.loss[i] - a.loss[i]) / fabs(rf.loss[i]);
        worst = fmax(worst, e);
        CHECK(e <= 1e-4, "%s cross_backend: step %d loss cpu %.9g ref %.9g", model, i + 1,
              a.loss[i], rf.loss[i]);
    }
    printf("%-14s run_to_run, threads, resume bitwise (final loss %.6f, weights %016llx); "
           "cpu vs ref worst loss rel diff %.2g\n",
           model, a.loss[c.steps - 1], (unsigned long long)a.digest, worst);
    dense_result_release(&a), dense_result_release(&b), dense_result_release(&t2);
    dense_result_release(&part), dense_result_release(&res), dense_result_release(&rf);
}

int main(void) {
    run_model("mlp-tiny");
    run_model("mlp-tiny-relu");
    run_model("convnet-tiny");
    return check_done("models.dense_determinism");
}
