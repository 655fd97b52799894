/* engine.lossscale.host: GradScaler semantics of the dynamic loss scale:
 * initial 2^16, x0.5 and a skipped step on overflow, x2 after
 * growth_interval finite steps (the count restarting after an overflow),
 * the floor, restore, and config errors naming the field. */
#include <string.h>

#include "check.h"
#include "engine/lossscale.h"

static void test_defaults(void) {
    gt_lossscale_config c = gt_lossscale_defaults();
    CHECK(c.init_scale == 65536.0f && c.growth == 2.0f && c.backoff == 0.5f &&
              c.growth_interval == 2000 && c.min_scale == 1.0f,
          "defaults: %g %g %g %d %g", (double)c.init_scale, (double)c.growth,
          (double)c.backoff, c.growth_interval, (double)c.min_scale);
    gt_lossscale ls;
    CHECK_OK(gt_lossscale_init(&ls, &c));
    CHECK(ls.scale == 65536.0f && ls.good_steps == 0 && ls.skipped == 0, "initial state");
}

static void test_growth_and_backoff(void) {
    gt_lossscale_config c = gt_lossscale_defaults();
    c.growth_interval = 3;
    gt_lossscale ls;
    CHECK_OK(gt_lossscale_init(&ls, &c));
    int skip = -1;
    /* two finite steps: no change yet */
    for (int i = 0; i < 2; i++) {
        CHECK_OK(gt_lossscale_update(&ls, 1, &skip));
        CHECK(skip == 0, "finite step %d not skipped", i);
    }
    CHECK(ls.scale == 65536.0f && ls.good_steps == 2, "scale %g after 2 of 3 good steps",
          (double)ls.scale);
    /* an overflow halves the scale, counts a skip and restarts the run */
    CHECK_OK(gt_lossscale_update(&ls, 0, &skip));
    CHECK(skip == 1 && ls.scale == 32768.0f && ls.good_steps == 0 && ls.skipped == 1,
          "overflow: skip %d scale %g good %lld skipped %lld", skip, (double)ls.scale,
          (long long)ls.good_steps, (long long)ls.skipped);
    /* the 3rd consecutive finite step after it doubles the scale */
    for (int i = 0; i < 3; i++) CHECK_OK(gt_lossscale_update(&ls, 1, &skip));
    CHECK(ls.scale == 65536.0f && ls.good_steps == 0 && ls.skipped == 1,
          "growth after 3 good steps: scale %g good %lld", (double)ls.scale,
          (long long)ls.good_steps);
}

static void test_floor(void) {
    gt_lossscale_config c = gt_lossscale_defaults();
    c.init_scale = 4.0f;
    c.min_scale = 1.0f;
    gt_lossscale ls;
    CHECK_OK(gt_lossscale_init(&ls, &c));
    int skip = 0;
    CHECK_OK(gt_lossscale_update(&ls, 0, &skip)); /* 4 -> 2 */
    CHECK_OK(gt_lossscale_update(&ls, 0, &skip)); /* 2 -> 1 */
    CHECK(ls.scale == 1.0f && ls.skipped == 2, "at the floor: scale %g", (double)ls.scale);
    /* an overflow at the floor is a divergence, and leaves the state alone */
    CHECK_STATUS(gt_lossscale_update(&ls, 0, &skip), GT_ERR_INVALID);
    CHECK(strstr(gt_last_error(), "minimum loss scale") != NULL, "message: %s", gt_last_error());
    CHECK(ls.scale == 1.0f && ls.skipped == 2, "state kept: scale %g skipped %lld",
          (double)ls.scale, (long long)ls.skipped);
    /* backing off below the floor stops at the floor */
    c.init_scale = 3.0f;
    CHECK_OK(gt_lossscale_init(&ls, &c));
    CHECK_OK(gt_lossscale_update(&ls, 0, &skip)); /* 3 -> 1.5 */
    CHECK_OK(gt_lossscale_update(&ls, 0, &skip)); /* 1.5 -> 1 (not 0.75) */
    CHECK(ls.scale == 1.0f, "clamped to the floor: %g", (double)ls.scale);
}

/* growing past the largest float keeps the scale (as torch's GradScaler) and
 * restarts the count */
static void test_growth_ceiling(void) {
    gt_lossscale_config c = gt_lossscale_defaults();
    c.init_scale = 0x1p127f;
    c.growth_interval = 1;
    gt_lossscale ls;
    CHECK_OK(gt_lossscale_init(&ls, &c));
    int skip = -1;
    CHECK_OK(gt_lossscale_update(&ls, 1, &skip));
    CHECK(skip == 0 && ls.scale == 0x1p127f && ls.good_steps == 0,
          "growth that would overflow: scale %g good %lld", (double)ls.scale,
          (long long)ls.good_steps);
}

static void test_restore(void) {
    gt_lossscale_config c = gt_lossscale_defaults();
    gt_lossscale ls;
    CHECK_OK(gt_lossscale_init(&ls, &c));
    CHECK_OK(gt_lossscale_restore(&ls, 8192.0, 17.0, 3.0));
    CHECK(ls.scale == 8192.0f && ls.good_steps == 17 && ls.skipped == 3, "restored");
    CHECK_STATUS(gt_lossscale_restore(&ls, 0.5, 0, 0), GT_ERR_INVALID);
    CHECK_STATUS(gt_lossscale_restore(&ls, NAN, 0, 0), GT_ERR_INVALID);
    CHECK_STATUS(gt_lossscale_restore(&ls, 1024.0, -1, 0), GT_ERR_INVALID);
    CHECK_STATUS(gt_lossscale_restore(&ls, 1024.0, 0, 2.5), GT_ERR_INVALID);
    CHECK_STATUS(gt_lossscale_restore(&ls, 1024.0, 2.5, 0), GT_ERR_INVALID);
    CHECK(ls.scale == 8192.0f, "a refused restore keeps the state");
}

#define BAD_FIELD(field, value)                                                        \
    do {                                                                               \
        gt_lossscale_config c = gt_lossscale_defaults();                               \
        c.field = value;                                                               \
        CHECK_STATUS(gt_lossscale_config_check(&c), GT_ERR_INVALID);                   \
        CHECK(strstr(gt_last_error(), #field) != NULL, "message names %s: %s", #field,  \
              gt_last_error());                                                        \
    } while (0)

static void test_config(void) {
    gt_lossscale_config c = gt_lossscale_defaults();
    CHECK_OK(gt_lossscale_config_check(&c));
    BAD_FIELD(init_scale, 0.0f);
    BAD_FIELD(init_scale, INFINITY);
    BAD_FIELD(growth, 1.0f);
    BAD_FIELD(backoff, 1.0f);
    BAD_FIELD(backoff, 0.0f);
    BAD_FIELD(growth_interval, 0);
    BAD_FIELD(min_scale, 0.0f);
    BAD_FIELD(min_scale, 1e6f);
}

int main(void) {
    test_defaults();
    test_growth_and_backoff();
    test_floor();
    test_growth_ceiling();
    test_restore();
    test_config();
    return check_done("engine.lossscale.host");
}
