/* Synthetic classification tasks whose best achievable loss is known, for
 * the mlp and convnet models (docs/models.md derives the targets).
 *
 * Every sample is a pure function of (seed, sample index) through Philox
 * (engine/rng.h): sample i is the same whichever rank, shard, thread or batch
 * produces it, and the stream never ends (no sample repeats, so a model
 * cannot go below the target by memorising).
 *
 * Labels: the sample's clean class c(x), a deterministic function of the
 * input, is kept with probability 1 - eps; with probability eps the label is
 * redrawn uniformly over the K classes (it may land on c(x) again). Since
 * c(x) is a function of x, the best any model can do is predict
 * P(y | x) = (1 - eps + eps/K on c(x), eps/K elsewhere), and the
 * Bayes-optimal expected cross-entropy is the entropy of that distribution:
 *   H = -(1 - eps + eps/K) ln(1 - eps + eps/K) - (K-1) (eps/K) ln(eps/K).
 *
 * Kinds:
 *   GT_TASK_TEACHER  x ~ N(0, I_dim) conditioned on the teacher's margin;
 *                    c(x) = argmax of a fixed random teacher MLP
 *                    dim -> hidden (ReLU, centred) -> K. A draw whose two
 *                    largest teacher logits are closer than `margin` is
 *                    redrawn (up to 64 times, then kept): the classes are
 *                    separated by empty space, so a student can become
 *                    confident in few steps. The margin changes how fast
 *                    the target is reached, never the target: c(x) is a
 *                    function of x either way.
 *   GT_TASK_TEMPLATES images (channels, height, width): uniform noise in
 *                    [-a, a] plus the ±1 template (channels, s, s) of class c
 *                    added at a uniformly random position. The templates are
 *                    drawn so that their cross-correlations at every shift
 *                    are small and a is chosen so that the matched filter
 *                    argmax_c max_pos <t_c, x_pos> recovers c from x for EVERY
 *                    x (docs/models.md proves it): c(x) is a function of x.
 */
#ifndef GT_TASKS_H
#define GT_TASKS_H

#include <stddef.h>
#include <stdint.h>

#include "engine/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gt_task_kind {
    GT_TASK_TEACHER = 0,
    GT_TASK_TEMPLATES,
    GT_TASK_KIND_COUNT
} gt_task_kind;

typedef struct gt_task_config {
    gt_task_kind kind;
    int classes;        /* K, 2..1024 */
    double label_noise; /* eps in [0, 1) */
    uint64_t seed;
    /* TEACHER */
    int dim;            /* input dimension, 1..65536 */
    int teacher_hidden; /* teacher's hidden width, 1..65536 */
    double margin;      /* minimum gap of the teacher's two largest logits, >= 0 */
    /* TEMPLATES */
    int channels, height, width; /* image shape (NCHW per sample) */
    int tsize;          /* template side s, 1 <= s <= min(height, width) */
} gt_task_config;

typedef struct gt_task gt_task;

/* Builds the teacher or the templates. GT_ERR_INVALID names a bad field;
 * for TEMPLATES also when no set of K templates with small enough
 * cross-correlations is found (too many classes for the template size). */
gt_status gt_task_new(const gt_task_config *cfg, gt_task **out);
void gt_task_free(gt_task *t); /* accepts NULL */
const gt_task_config *gt_task_get_config(const gt_task *t);

/* fp32 values per sample: dim, or channels*height*width. */
size_t gt_task_sample_numel(const gt_task *t);

/* The Bayes-optimal expected cross-entropy (nats/sample): H above. */
double gt_task_target_loss(const gt_task *t);
/* The entropy H for any K >= 2 and eps in [0, 1). */
double gt_task_label_noise_entropy(int classes, double eps);

/* Samples first .. first+n-1: x (n, sample_numel) fp32 and labels (n) int32
 * (either may be NULL). */
void gt_task_fill(const gt_task *t, uint64_t first, int n, float *x, int32_t *labels);
/* The clean class c(x_i) of sample i (before label noise). */
int gt_task_clean_class(const gt_task *t, uint64_t i);
/* The Bayes classifier on an input: the teacher's argmax, or the matched
 * filter. Equal to gt_task_clean_class for every sample the task produces. */
int gt_task_classify(const gt_task *t, const float *x);

/* The summed cross-entropy of the Bayes-optimal predictor on n samples
 * x (n, sample_numel) with labels y: it puts 1 - eps + eps/K on
 * gt_task_classify(x) and eps/K on every other class, so each sample
 * costs -log(1 - eps + eps/K) or -log(eps/K). Its mean over many samples
 * is gt_task_target_loss; on the samples a model was evaluated on it is
 * the reference that removes most of the label noise's sampling noise. */
double gt_task_bayes_loss_sum(const gt_task *t, const float *x, const int32_t *y, int n);

/* TEACHER: the gap between the teacher's two largest logits at x (>= margin
 * for every sample produced, except a sample whose 64 draws all fell short);
 * 0 for TEMPLATES. */
double gt_task_teacher_gap(const gt_task *t, const float *x);

/* TEMPLATES: the noise amplitude a, the templates' largest cross-correlation
 * over every shift and pair (integer), and the guaranteed score margin of
 * the matched filter ((s*s*channels - that) / 2). 0 for TEACHER. */
double gt_task_noise_amplitude(const gt_task *t);
int gt_task_max_cross(const gt_task *t);
double gt_task_margin(const gt_task *t);

#ifdef __cplusplus
}
#endif
#endif
