/* Synthetic classification tasks with known targets (tasks.h). */
#include "models/tasks.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/rng.h"

/* Philox streams; the values are arbitrary, fixed forever (changing one
 * changes every task's data). */
enum {
    S_X = 0x7461736b,     /* input values */
    S_NOISE = 0x6e6f6973, /* label noise: (2i) the coin, (2i+1) the redraw */
    S_CLASS = 0x636c6173, /* TEMPLATES: the clean class of sample i */
    S_POS = 0x706f7369,   /* TEMPLATES: (2i) row, (2i+1) column */
    S_TEACH = 0x74656163, /* TEACHER: weights */
    S_TPL = 0x74706c73,   /* TEMPLATES: template signs */
};

enum { MAX_TEMPLATE_TRIES = 100000, MARGIN_TRIES = 64 };

struct gt_task {
    gt_task_config cfg;
    size_t numel;
    double target;
    /* TEACHER: W1 (hidden, dim) rows of unit norm, W2 (K, hidden) */
    double *w1, *w2;
    /* TEMPLATES: (K, channels, s, s) of ±1 */
    int8_t *tpl;
    int max_cross;
    double amp, margin;
};

double gt_task_label_noise_entropy(int K, double eps) {
    double top = 1.0 - eps + eps / K, other = eps / K, h = 0.0;
    if (top > 0) h -= top * log(top);
    if (other > 0) h -= (K - 1) * other * log(other);
    return h;
}

static gt_status check_config(const gt_task_config *c) {
#define RANGE(field, lo, hi)                                                                   \
    if (c->field < (lo) || c->field > (hi))                                                    \
        return GT_ERR(GT_ERR_INVALID, "task config: " #field " = %d is out of range [%d, %d]",  \
                      (int)c->field, (lo), (hi));
    if (c->kind < 0 || c->kind >= GT_TASK_KIND_COUNT)
        return GT_ERR(GT_ERR_INVALID, "task config: unknown kind %d (0 teacher, 1 templates)",
                      (int)c->kind);
    RANGE(classes, 2, 1024);
    if (!(c->label_noise >= 0.0 && c->label_noise < 1.0))
        return GT_ERR(GT_ERR_INVALID, "task config: label_noise = %g must be in [0, 1)",
                      c->label_noise);
    if (c->kind == GT_TASK_TEACHER) {
        RANGE(dim, 1, 65536);
        RANGE(teacher_hidden, 1, 65536);
        if (!(c->margin >= 0.0 && c->margin < 1e6))
            return GT_ERR(GT_ERR_INVALID, "task config: margin = %g must be >= 0", c->margin);
    } else {
        RANGE(channels, 1, 4096);
        RANGE(height, 1, 4096);
        RANGE(width, 1, 4096);
        int side = c->height < c->width ? c->height : c->width;
        RANGE(tsize, 1, side);
    }
#undef RANGE
    return GT_OK;
}

/* Largest |cross-correlation| of templates a and b (C, s, s) over every
 * relative shift, the overlap only (what a filter at any position of an
 * image holding the other template at any position can see). */
static int cross_max(const int8_t *a, const int8_t *b, int C, int s) {
    int best = 0;
    for (int dy = -(s - 1); dy <= s - 1; dy++)
        for (int dx = -(s - 1); dx <= s - 1; dx++) {
            int sum = 0;
            for (int c = 0; c < C; c++)
                for (int y = 0; y < s; y++) {
                    int yb = y + dy;
                    if (yb < 0 || yb >= s) continue;
                    for (int x = 0; x < s; x++) {
                        int xb = x + dx;
                        if (xb < 0 || xb >= s) continue;
                        sum += a[(c * s + y) * s + x] * b[(c * s + yb) * s + xb];
                    }
                }
            if (abs(sum) > best) best = abs(sum);
        }
    return best;
}

static gt_status build_templates(gt_task *t) {
    const gt_task_config *c = &t->cfg;
    int C = c->channels, s = c->tsize, K = c->classes, n = C * s * s;
    t->tpl = malloc((size_t)K * n);
    if (!t->tpl) return GT_ERR(GT_ERR_OOM, "out of host memory for %d templates", K);
    /* greedy with redraws: template k is redrawn (attempt a) until its
     * correlation with every earlier one, at every shift, is at most n/3 */
    int bound = n / 3;
    t->max_cross = 0;
    for (int k = 0; k < K; k++) {
        int8_t *tk = t->tpl + (size_t)k * n;
        int ok = 0, worst = 0;
        for (int a = 0; a < MAX_TEMPLATE_TRIES && !ok; a++) {
            uint64_t base = ((uint64_t)k * MAX_TEMPLATE_TRIES + (uint64_t)a) * (uint64_t)n;
            for (int j = 0; j < n; j++)
                tk[j] = (gt_rng_u32(c->seed, S_TPL, base + (uint64_t)j) & 1u) ? 1 : -1;
            ok = 1;
            worst = 0;
            for (int q = 0; q < k && ok; q++) {
                int x = cross_max(tk, t->tpl + (size_t)q * n, C, s);
                if (x > bound) ok = 0;
                if (x > worst) worst = x;
            }
        }
        if (!ok)
            return GT_ERR(GT_ERR_INVALID,
                          "task config: found no %d templates of %dx%dx%d whose "
                          "cross-correlations stay <= %d: use fewer classes or a larger "
                          "template (tsize) or more channels",
                          K, C, s, s, bound);
        if (worst > t->max_cross) t->max_cross = worst;
    }
    /* true class score >= n - a n; any other class's <= max_cross + a n:
     * a = (1 - max_cross/n) / 4 leaves a margin of (n - max_cross) / 2 */
    t->amp = (1.0 - (double)t->max_cross / n) / 4.0;
    t->margin = (n - t->max_cross) / 2.0;
    return GT_OK;
}

static gt_status build_teacher(gt_task *t) {
    const gt_task_config *c = &t->cfg;
    int D = c->dim, H = c->teacher_hidden, K = c->classes;
    t->w1 = malloc((size_t)H * D * sizeof(double));
    t->w2 = malloc((size_t)K * H * sizeof(double));
    if (!t->w1 || !t->w2) return GT_ERR(GT_ERR_OOM, "out of host memory for the teacher");
    for (int h = 0; h < H; h++) {
        double *row = t->w1 + (size_t)h * D, nn = 0;
        for (int d = 0; d < D; d++) {
            row[d] = gt_rng_normal(c->seed, S_TEACH, (uint64_t)h * D + d);
            nn += row[d] * row[d];
        }
        /* unit rows: each pre-activation is N(0, 1) under x ~ N(0, I) */
        nn = nn > 0 ? 1.0 / sqrt(nn) : 1.0;
        for (int d = 0; d < D; d++) row[d] *= nn;
    }
    uint64_t off = (uint64_t)H * D;
    for (size_t i = 0; i < (size_t)K * H; i++)
        t->w2[i] = gt_rng_normal(c->seed, S_TEACH, off + i) / sqrt((double)H);
    return GT_OK;
}

gt_status gt_task_new(const gt_task_config *cfg, gt_task **out) {
    *out = NULL;
    GT_TRY(check_config(cfg));
    gt_task *t = calloc(1, sizeof *t);
    if (!t) return GT_ERR(GT_ERR_OOM, "out of host memory for a task");
    t->cfg = *cfg;
    t->target = gt_task_label_noise_entropy(cfg->classes, cfg->label_noise);
    gt_status s;
    if (cfg->kind == GT_TASK_TEACHER) {
        t->numel = (size_t)cfg->dim;
        s = build_teacher(t);
    } else {
        t->numel = (size_t)cfg->channels * cfg->height * cfg->width;
        s = build_templates(t);
    }
    if (s != GT_OK) {
        gt_task_free(t);
        return s;
    }
    *out = t;
    return GT_OK;
}

void gt_task_free(gt_task *t) {
    if (!t) return;
    free(t->w1);
    free(t->w2);
    free(t->tpl);
    free(t);
}

const gt_task_config *gt_task_get_config(const gt_task *t) { return &t->cfg; }
size_t gt_task_sample_numel(const gt_task *t) { return t->numel; }
double gt_task_target_loss(const gt_task *t) { return t->target; }
double gt_task_noise_amplitude(const gt_task *t) { return t->amp; }
int gt_task_max_cross(const gt_task *t) { return t->max_cross; }
double gt_task_margin(const gt_task *t) { return t->margin; }

/* E[relu(z)] for z ~ N(0, 1): the teacher's hidden units are centred so that
 * no class wins on the mean alone. */
static const double RELU_MEAN = 0.398942280401432677939946059934; /* 1/sqrt(2 pi) */

static int teacher_argmax_gap(const gt_task *t, const float *x, double *gap) {
    const gt_task_config *c = &t->cfg;
    int D = c->dim, H = c->teacher_hidden, K = c->classes;
    int best = 0;
    double best_v = -INFINITY, second = -INFINITY;
    double *h = malloc((size_t)H * sizeof(double));
    GT_ASSERT(h);
    for (int j = 0; j < H; j++) {
        double z = 0;
        for (int d = 0; d < D; d++) z += t->w1[(size_t)j * D + d] * x[d];
        h[j] = (z > 0 ? z : 0) - RELU_MEAN;
    }
    for (int k = 0; k < K; k++) {
        double v = 0;
        for (int j = 0; j < H; j++) v += t->w2[(size_t)k * H + j] * h[j];
        if (v > best_v) {
            second = best_v;
            best_v = v;
            best = k;
        } else if (v > second) {
            second = v;
        }
    }
    free(h);
    if (gap) *gap = best_v - second;
    return best;
}

static int teacher_argmax(const gt_task *t, const float *x) {
    return teacher_argmax_gap(t, x, NULL);
}

static int matched_filter(const gt_task *t, const float *x) {
    const gt_task_config *c = &t->cfg;
    int C = c->channels, Hh = c->height, W = c->width, s = c->tsize, n = C * s * s;
    int best = 0;
    double best_v = -INFINITY;
    for (int k = 0; k < c->classes; k++) {
        const int8_t *tk = t->tpl + (size_t)k * n;
        for (int py = 0; py + s <= Hh; py++)
            for (int px = 0; px + s <= W; px++) {
                double v = 0;
                for (int ch = 0; ch < C; ch++)
                    for (int y = 0; y < s; y++)
                        for (int xx = 0; xx < s; xx++)
                            v += tk[(ch * s + y) * s + xx] *
                                 (double)x[((size_t)ch * Hh + py + y) * W + px + xx];
                if (v > best_v) {
                    best_v = v;
                    best = k;
                }
            }
    }
    return best;
}

double gt_task_teacher_gap(const gt_task *t, const float *x) {
    if (t->cfg.kind != GT_TASK_TEACHER) return 0.0;
    double gap = 0;
    (void)teacher_argmax_gap(t, x, &gap);
    return gap;
}

int gt_task_classify(const gt_task *t, const float *x) {
    return t->cfg.kind == GT_TASK_TEACHER ? teacher_argmax(t, x) : matched_filter(t, x);
}

double gt_task_bayes_loss_sum(const gt_task *t, const float *x, const int32_t *y, int n) {
    double eps = t->cfg.label_noise, K = t->cfg.classes;
    double l_hit = -log(1.0 - eps + eps / K), l_miss = -log(eps / K);
    double sum = 0.0;
    for (int i = 0; i < n; i++)
        sum += gt_task_classify(t, x + (size_t)i * t->numel) == y[i] ? l_hit : l_miss;
    return sum;
}

int gt_task_clean_class(const gt_task *t, uint64_t i) {
    if (t->cfg.kind == GT_TASK_TEMPLATES)
        return (int)(gt_rng_u32(t->cfg.seed, S_CLASS, i) % (uint32_t)t->cfg.classes);
    float *x = malloc(t->numel * sizeof(float));
    GT_ASSERT(x);
    gt_task_fill(t, i, 1, x, NULL);
    int c = teacher_argmax(t, x);
    free(x);
    return c;
}

static void fill_one(const gt_task *t, uint64_t i, float *x) {
    const gt_task_config *c = &t->cfg;
    uint64_t base = i * (uint64_t)t->numel;
    if (c->kind == GT_TASK_TEACHER) {
        /* attempt a of sample i reads its own stretch of the stream */
        for (int a = 0; a < MARGIN_TRIES; a++) {
            uint64_t at = (i * MARGIN_TRIES + (uint64_t)a) * (uint64_t)t->numel;
            for (size_t j = 0; j < t->numel; j++) x[j] = gt_rng_normal(c->seed, S_X, at + j);
            double gap = 0;
            if (c->margin <= 0) return;
            (void)teacher_argmax_gap(t, x, &gap);
            if (gap >= c->margin) return;
        }
        return;
    }
    float a = (float)t->amp;
    for (size_t j = 0; j < t->numel; j++)
        x[j] = a * (2.0f * gt_rng_uniform(c->seed, S_X, base + j) - 1.0f);
    int C = c->channels, H = c->height, W = c->width, s = c->tsize, n = C * s * s;
    int k = (int)(gt_rng_u32(c->seed, S_CLASS, i) % (uint32_t)c->classes);
    int py = (int)(gt_rng_u32(c->seed, S_POS, 2 * i) % (uint32_t)(H - s + 1));
    int px = (int)(gt_rng_u32(c->seed, S_POS, 2 * i + 1) % (uint32_t)(W - s + 1));
    const int8_t *tk = t->tpl + (size_t)k * n;
    for (int ch = 0; ch < C; ch++)
        for (int y = 0; y < s; y++)
            for (int xx = 0; xx < s; xx++)
                x[((size_t)ch * H + py + y) * W + px + xx] += (float)tk[(ch * s + y) * s + xx];
}

void gt_task_fill(const gt_task *t, uint64_t first, int n, float *x, int32_t *labels) {
    const gt_task_config *c = &t->cfg;
    float *tmp = x ? NULL : malloc(t->numel * sizeof(float));
    GT_ASSERT(x || tmp);
    for (int b = 0; b < n; b++) {
        uint64_t i = first + (uint64_t)b;
        float *xi = x ? x + (size_t)b * t->numel : tmp;
        int clean;
        if (c->kind == GT_TASK_TEACHER) {
            fill_one(t, i, xi);
            clean = teacher_argmax(t, xi);
        } else {
            if (x) fill_one(t, i, xi);
            clean = (int)(gt_rng_u32(c->seed, S_CLASS, i) % (uint32_t)c->classes);
        }
        if (!labels) continue;
        int y = clean;
        if (gt_rng_uniform_f64(c->seed, S_NOISE, 2 * i) < c->label_noise)
            y = (int)(gt_rng_u32(c->seed, S_NOISE, 2 * i + 1) % (uint32_t)c->classes);
        labels[b] = y;
    }
    free(tmp);
}
