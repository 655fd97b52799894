/* engine.optim.host: AdamW defaults, config checking with messages naming
 * the field, the warm-up + cosine schedule at known points, and clipping. */
#include <string.h>

#include "check.h"
#include "engine/optim.h"

#define BAD_FIELD(field, value)                                                        \
    do {                                                                               \
        gt_adamw_config c = gt_adamw_defaults();                                       \
        c.field = value;                                                               \
        CHECK_STATUS(gt_adamw_config_check(&c), GT_ERR_INVALID);                       \
        CHECK(strstr(gt_last_error(), #field) != NULL, "message names %s: %s", #field,  \
              gt_last_error());                                                        \
    } while (0)

static void test_config(void) {
    gt_adamw_config c = gt_adamw_defaults();
    CHECK(c.lr == 3e-4f && c.beta1 == 0.9f && c.beta2 == 0.95f && c.eps == 1e-8f &&
              c.weight_decay == 0.0f && c.grad_clip == 1.0f && c.warmup_steps == 0 &&
              c.lr_min_frac == 0.1f,
          "defaults");
    CHECK_OK(gt_adamw_config_check(&c));
    BAD_FIELD(lr, 0.0f);
    BAD_FIELD(lr, NAN);
    BAD_FIELD(beta1, 1.0f);
    BAD_FIELD(beta2, -0.1f);
    BAD_FIELD(eps, 0.0f);
    BAD_FIELD(weight_decay, -1.0f);
    BAD_FIELD(grad_clip, NAN);
    BAD_FIELD(warmup_steps, -1);
    BAD_FIELD(total_steps, -5);
    BAD_FIELD(lr_min_frac, 1.5f);
    c = gt_adamw_defaults();
    c.warmup_steps = 10;
    c.total_steps = 10;
    CHECK_STATUS(gt_adamw_config_check(&c), GT_ERR_INVALID);
    CHECK(strstr(gt_last_error(), "warmup_steps"), "names both fields: %s", gt_last_error());
    c.total_steps = 11;
    CHECK_OK(gt_adamw_config_check(&c));
    CHECK_STATUS(gt_adamw_config_check(NULL), GT_ERR_INVALID);
}

static void test_schedule(void) {
    gt_adamw_config c = gt_adamw_defaults();
    c.lr = 1e-3f;
    c.warmup_steps = 10;
    c.total_steps = 110;
    c.lr_min_frac = 0.1f;
    const double lr = 1e-3f, lo = lr * 0.1f;
    CHECK_NEAR(gt_lr_at(&c, 0), lr * 0.1, 1e-9);
    CHECK_NEAR(gt_lr_at(&c, 4), lr * 0.5, 1e-9);
    CHECK_NEAR(gt_lr_at(&c, 9), lr, 1e-9);
    CHECK_NEAR(gt_lr_at(&c, 10), lr, 1e-9);                  /* cosine starts at the peak */
    CHECK_NEAR(gt_lr_at(&c, 35), lo + (lr - lo) * 0.5 * (1 + sqrt(0.5)), 1e-9); /* 1/4 */
    CHECK_NEAR(gt_lr_at(&c, 60), lo + (lr - lo) * 0.5, 1e-9);                   /* 1/2 */
    CHECK_NEAR(gt_lr_at(&c, 85), lo + (lr - lo) * 0.5 * (1 - sqrt(0.5)), 1e-9); /* 3/4 */
    CHECK_NEAR(gt_lr_at(&c, 110), lo, 1e-9);
    CHECK_NEAR(gt_lr_at(&c, 100000), lo, 1e-9);
    CHECK_NEAR(gt_lr_at(&c, -3), lr * 0.1, 1e-9);
    float prev = gt_lr_at(&c, 10);
    int mono = 1;
    for (int s = 11; s <= 110; s++) {
        float v = gt_lr_at(&c, s);
        mono &= v <= prev;
        prev = v;
    }
    CHECK(mono, "cosine decay never increases");
    c.total_steps = 0;
    CHECK_NEAR(gt_lr_at(&c, 5), lr * 0.6, 1e-9);
    CHECK_NEAR(gt_lr_at(&c, 5000), lr, 1e-9);
    c.warmup_steps = 0;
    CHECK(gt_lr_at(&c, 0) == 1e-3f, "no warm-up: peak from step 0");
}

static void test_clip(void) {
    gt_adamw_config c = gt_adamw_defaults();
    CHECK(gt_clip_scale(&c, 0.5) == 1.0f, "below the limit: no scaling");
    CHECK_NEAR(gt_clip_scale(&c, 4.0), 1.0 / (4.0 + 1e-6), 1e-7);
    CHECK(isnan(gt_clip_scale(&c, NAN)), "NaN norm gives NaN");
    CHECK(gt_clip_scale(&c, INFINITY) == 0.0f, "Inf norm scales to 0");
    c.grad_clip = 0.0f;
    CHECK(gt_clip_scale(&c, 1e9) == 1.0f, "clip <= 0: off");
}

int main(void) {
    test_config();
    test_schedule();
    test_clip();
    return check_done("engine.optim.host");
}
