/* The synthetic classification tasks (models/tasks.h): the target loss is
 * the label-noise entropy, the clean class is recoverable from every input,
 * samples do not depend on how they are batched, and bad configurations are
 * refused with a message. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/tests/check.h"
#include "models/tasks.h"

/* Statistics of n samples: fraction labelled with the clean class, and the
 * Bayes predictor's mean loss. */
static void label_stats(const gt_task *t, int n, double *keep, double *bayes) {
    const gt_task_config *c = gt_task_get_config(t);
    size_t numel = gt_task_sample_numel(t);
    float *x = malloc(numel * sizeof(float));
    double eps = c->label_noise, K = c->classes;
    double hit = -log(1 - eps + eps / K), miss = -log(eps / K);
    int same = 0;
    double loss = 0;
    for (int i = 0; i < n; i++) {
        int32_t y;
        gt_task_fill(t, (uint64_t)i, 1, x, &y);
        int clean = gt_task_classify(t, x);
        same += y == clean;
        loss += y == clean ? hit : miss;
    }
    free(x);
    *keep = (double)same / n;
    *bayes = loss / n;
}

static void batching(const gt_task *t, const char *what) {
    size_t numel = gt_task_sample_numel(t);
    float *a = malloc(10 * numel * sizeof(float)), *b = malloc(4 * numel * sizeof(float));
    int32_t ya[10], yb[4];
    gt_task_fill(t, 100, 10, a, ya);
    gt_task_fill(t, 103, 4, b, yb);
    CHECK(memcmp(a + 3 * numel, b, 4 * numel * sizeof(float)) == 0 &&
              memcmp(ya + 3, yb, sizeof yb) == 0,
          "%s: samples 103..106 differ when produced in another batch", what);
    /* labels alone: the same labels */
    int32_t yc[10];
    gt_task_fill(t, 100, 10, NULL, yc);
    CHECK(memcmp(ya, yc, sizeof ya) == 0, "%s: labels without inputs differ", what);
    free(a);
    free(b);
}

int main(void) {
    /* the entropy in closed form */
    CHECK_NEAR(gt_task_label_noise_entropy(2, 0.0), 0.0, 1e-15);
    CHECK_NEAR(gt_task_label_noise_entropy(2, 0.5), -(0.75 * log(0.75) + 0.25 * log(0.25)),
               1e-15);
    /* eps -> 1: uniform labels, entropy ln K */
    CHECK_NEAR(gt_task_label_noise_entropy(10, 1.0 - 1e-12), log(10.0), 1e-9);

    int n = 20000;
    /* TEACHER */
    gt_task_config tc = {.kind = GT_TASK_TEACHER, .classes = 8, .label_noise = 0.1, .seed = 3,
                         .dim = 16, .teacher_hidden = 32, .margin = 0.5};
    gt_task *t = NULL;
    CHECK_OK(gt_task_new(&tc, &t));
    if (t) {
        double keep, bayes, target = gt_task_target_loss(t);
        double want = 1 - 0.1 + 0.1 / 8, sd = sqrt(want * (1 - want) / n);
        label_stats(t, n, &keep, &bayes);
        printf("teacher: labels kept %.4f (expect %.4f), Bayes loss %.4f, target %.4f\n", keep,
               want, bayes, target);
        CHECK(fabs(keep - want) < 5 * sd, "teacher: %.4f of labels are clean, expect %.4f", keep,
              want);
        /* per-sample loss sd is about 1.2 nats */
        CHECK(fabs(bayes - target) < 5 * 1.3 / sqrt(n), "teacher: Bayes loss %.4f vs target %.4f",
              bayes, target);
        /* every sample keeps the margin (a miss has probability ~1e-9 per sample) */
        float x[16];
        int short_gap = 0;
        for (int i = 0; i < 2000; i++) {
            gt_task_fill(t, (uint64_t)i, 1, x, NULL);
            short_gap += gt_task_teacher_gap(t, x) < 0.5;
            CHECK(gt_task_clean_class(t, (uint64_t)i) == gt_task_classify(t, x),
                  "teacher: clean class of sample %d", i);
        }
        CHECK(short_gap == 0, "teacher: %d of 2000 samples lie within the margin", short_gap);
        batching(t, "teacher");
    }
    gt_task_free(t);

    /* TEMPLATES */
    gt_task_config ic = {.kind = GT_TASK_TEMPLATES, .classes = 4, .label_noise = 0.1, .seed = 3,
                         .channels = 3, .height = 8, .width = 8, .tsize = 3};
    t = NULL;
    CHECK_OK(gt_task_new(&ic, &t));
    if (t) {
        printf("templates: max cross-correlation %d of 27, noise amplitude %.4f, margin %.2f\n",
               gt_task_max_cross(t), gt_task_noise_amplitude(t), gt_task_margin(t));
        CHECK(gt_task_max_cross(t) <= 27 / 3, "cross-correlation %d above the bound 9",
              gt_task_max_cross(t));
        CHECK(gt_task_margin(t) > 0 && gt_task_noise_amplitude(t) > 0, "no margin");
        /* the matched filter recovers the clean class of every sample */
        size_t numel = gt_task_sample_numel(t);
        float *x = malloc(numel * sizeof(float));
        int wrong = 0;
        for (int i = 0; i < n; i++) {
            gt_task_fill(t, (uint64_t)i, 1, x, NULL);
            wrong += gt_task_classify(t, x) != gt_task_clean_class(t, (uint64_t)i);
        }
        CHECK(wrong == 0, "templates: the matched filter misses %d of %d clean classes", wrong, n);
        free(x);
        double keep, bayes, target = gt_task_target_loss(t);
        double want = 1 - 0.1 + 0.1 / 4, sd = sqrt(want * (1 - want) / n);
        label_stats(t, n, &keep, &bayes);
        printf("templates: labels kept %.4f (expect %.4f), Bayes loss %.4f, target %.4f\n", keep,
               want, bayes, target);
        CHECK(fabs(keep - want) < 5 * sd, "templates: %.4f clean, expect %.4f", keep, want);
        CHECK(fabs(bayes - target) < 5 * 1.3 / sqrt(n), "templates: Bayes loss %.4f vs %.4f",
              bayes, target);
        batching(t, "templates");
    }
    gt_task_free(t);
    /* the larger images of resnet-small: 10 classes, 5x5 templates */
    gt_task_config rc = ic;
    rc.classes = 10;
    rc.height = rc.width = 32;
    rc.tsize = 5;
    t = NULL;
    CHECK_OK(gt_task_new(&rc, &t));
    gt_task_free(t);

    /* refusals */
    gt_task_config bad = tc;
    bad.classes = 1;
    CHECK_STATUS(gt_task_new(&bad, &t), GT_ERR_INVALID);
    bad = tc;
    bad.label_noise = 1.0;
    CHECK_STATUS(gt_task_new(&bad, &t), GT_ERR_INVALID);
    CHECK(strstr(gt_last_error(), "label_noise") != NULL, "message: %s", gt_last_error());
    bad = ic;
    bad.tsize = 9;
    CHECK_STATUS(gt_task_new(&bad, &t), GT_ERR_INVALID);
    CHECK(strstr(gt_last_error(), "tsize") != NULL, "message: %s", gt_last_error());
    bad = ic; /* 1x1x1 templates: any two correlate fully */
    bad.channels = 1;
    bad.tsize = 1;
    bad.classes = 3;
    CHECK_STATUS(gt_task_new(&bad, &t), GT_ERR_INVALID);
    CHECK(strstr(gt_last_error(), "fewer classes") != NULL, "message: %s", gt_last_error());
    return check_done("models.tasks");
}
