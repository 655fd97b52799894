/* Convergence of mlp and convnet presets on their synthetic tasks: after
 * STEPS steps the held-out loss (evaluation mode, 16384 fresh samples) must
 * lie within [-LOWER, +UPPER] of the Bayes-optimal predictor's loss on the
 * same samples, whose expectation is the task's target, the label-noise
 * entropy (models/tasks.h). Comparing on the same samples removes most of
 * the label noise's sampling noise from the gap. docs/testing.md has the
 * measurements behind each band.
 *
 * Usage: test_models_*_convergence MODEL STEPS BATCH LR UPPER LOWER
 * (GT_TEST_SEED=N overrides the seed 1337, for measuring the spread;
 * GT_TEST_EVAL_FIRST=I evaluates on samples I.. instead, for the noise). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "models/tests/dense_train.h"

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: %s MODEL STEPS BATCH LR UPPER LOWER\n", argv[0]);
        return 2;
    }
    dense_cfg c = {.model = argv[1], .backend = "cpu", .threads = 1, .steps = atoi(argv[2]),
                   .batch = atoi(argv[3]), .seed = 1337, .eval_samples = 16384};
    c.opt = gt_adamw_defaults();
    c.opt.lr = (float)atof(argv[4]);
    c.opt.beta2 = 0.999f;
    c.opt.warmup_steps = c.steps / 20;
    c.opt.total_steps = c.steps;
    double upper = atof(argv[5]), lower = atof(argv[6]);
    const char *seed = getenv("GT_TEST_SEED");
    if (seed) c.seed = strtoull(seed, NULL, 10);
    const char *ef = getenv("GT_TEST_EVAL_FIRST"); /* another held-out set, for the noise */
    if (ef) c.eval_first = strtoull(ef, NULL, 10);
    dense_result r;
    gt_status s = dense_train(&c, &r);
    if (s != GT_OK) {
        fprintf(stderr, "train: %s\n", gt_last_error());
        dense_result_release(&r);
        return 1;
    }
    int tail = c.steps < 50 ? c.steps : 50;
    double gap = r.eval_loss - r.eval_bayes;
    printf("%s seed %llu: target %.6f, first loss %.6f, last %d steps %.6f, held-out %.6f "
           "(Bayes predictor %.6f), gap %.4f (%.1f s)\n",
           c.model, (unsigned long long)c.seed, r.target, r.loss[0], tail,
           dense_mean(r.loss, c.steps - tail, c.steps), r.eval_loss, r.eval_bayes, gap,
           r.seconds);
    /* the Bayes predictor's loss on 16384 samples is the target within noise
     * (its standard error is about 1.2/sqrt(16384) = 0.01): a check on the
     * task itself */
    int ok = gap <= upper && gap >= -lower && fabs(r.eval_bayes - r.target) < 0.05;
    if (!ok)
        fprintf(stderr, "FAIL: held-out loss is %.4f nats from the Bayes predictor's, outside "
                        "[-%g, %g] (or the Bayes loss %.4f is not the target %.4f)\n",
                gap, lower, upper, r.eval_bayes, r.target);
    dense_result_release(&r);
    return ok ? 0 : 1;
}
