/* Mixed precision through the training loop (suites/trainer/loop.c), on the ref
 * backend, which stores bf16 and fp16 (the cpu backend is fp32 only).
 * Usage: test_models_gpt2_precision_* [BACKEND]   (default ref; exit 77 when
 * BACKEND is absent). On another backend (cuda) 1 and 2 run there; 3 and 4
 * are ref / cpu checks and run with ref only.
 *
 *  1. bf16 and fp16 train gpt2-tiny to the loss of the fp32 run. Limits:
 *     the mean loss of the last 8 of 24 steps within 0.02 nats (bf16) and
 *     0.005 nats (fp16) of fp32's. Measured (batch 4, lr 3e-3, seed 1337):
 *     |bf16 - fp32| ~2e-4 and |fp16 - fp32| ~3e-5 over 30 steps: rounding
 *     to 8 (11) significant bits per element averages out over a batch,
 *     and the ref ops accumulate in fp64. The limits are ~100x that, still
 *     far below what a broken compute copy does (weights that never leave
 *     their initial values stay near ln(256) = 5.5, over 0.5 nats away).
 *     The bf16 and fp16 weights must also differ from fp32's: a run that
 *     silently trained in fp32 would pass the loss check.
 *  2. fp16 with GT_FAULT_OVERFLOW=3: step 3 is skipped (skipped_steps 1,
 *     the scale backs off 65536 -> 32768, its loss stays finite) and the
 *     master weights after step 3 are bitwise those after step 2.
 *  3. non-finite values: a NaN gradient is an error in bf16 and an
 *     overflow the scaler skips in fp16 (torch's GradScaler does the
 *     same); a NaN loss is an error in fp16; an overflowing dloss is an
 *     error in fp32 (no scaler to absorb it).
 *  4. bf16 on the cpu backend is refused (GT_ERR_UNSUPPORTED) naming the
 *     precision and the backend, before any step.
 */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backend.h"
#include "suites/trainer/train.h"
#include "engine/tests/check.h"
#include "models/tests/backend_or_skip.h"
#include "models/tests/train_run.h"

static gt_train_config base(const char *backend, gt_dtype dt, int steps, int batch) {
    gt_train_config c = gt_train_defaults();
    c.backend = backend;
    c.precision = dt;
    c.steps = steps;
    c.batch = batch;
    c.opt.lr = 3e-3f;
    c.opt.warmup_steps = steps > 4 ? 2 : 1; /* shorter than the schedule */
    c.opt.total_steps = steps;
    c.threads = 1;
    c.prefetch = 0;
    c.peak_gflops = GT_TRAIN_NO_MFU; /* no peak probe */
    return c;
}

static void test_close_to_fp32(const char *backend) {
    enum { STEPS = 24, TAIL = 8 };
    gt_train_stats s32, s16b, s16h;
    gt_train_config c = base(backend, GT_DTYPE_FP32, STEPS, 4);
    gt_status a = mt_train_run(&c, &s32, "fp32, 24 steps");
    c.precision = GT_DTYPE_BF16;
    gt_status b = mt_train_run(&c, &s16b, "bf16, 24 steps");
    c.precision = GT_DTYPE_FP16;
    gt_status h = mt_train_run(&c, &s16h, "fp16, 24 steps");
    CHECK(a == GT_OK && b == GT_OK && h == GT_OK, "the three runs: %d %d %d", a, b, h);
    if (a == GT_OK && b == GT_OK && h == GT_OK) {
        double t32 = gt_train_tail_loss(&s32, TAIL), tb = gt_train_tail_loss(&s16b, TAIL),
               th = gt_train_tail_loss(&s16h, TAIL);
        printf("mean loss of the last %d steps: fp32 %.6f bf16 %.6f (%+.2e) fp16 %.6f (%+.2e)\n",
               TAIL, t32, tb, tb - t32, th, th - t32);
        CHECK(t32 < s32.loss[0] - 0.5, "fp32 learned: %.4f from %.4f", t32, s32.loss[0]);
        CHECK(fabs(tb - t32) <= 0.02, "bf16 %.6f vs fp32 %.6f", tb, t32);
        CHECK(fabs(th - t32) <= 0.005, "fp16 %.6f vs fp32 %.6f", th, t32);
        CHECK(s16b.params_digest != s32.params_digest, "bf16 weights are fp32's: not bf16");
        CHECK(s16h.params_digest != s32.params_digest, "fp16 weights are fp32's: not fp16");
        CHECK(s16h.skipped_steps == 0 && s16h.final_loss_scale == 65536.0,
               "fp16 without overflow: skipped %lld scale %g", (long long)s16h.skipped_steps,
               s16h.final_loss_scale);
        CHECK(s16b.final_loss_scale == 1.0 && s16b.skipped_steps == 0, "bf16 has no scaler");
    }
    gt_train_stats_release(&s32);
    gt_train_stats_release(&s16b);
    gt_train_stats_release(&s16h);
}

static void test_overflow_skip(const char *backend) {
    gt_train_stats two, three;
    int ran = mt_overflow_runs(base(backend, GT_DTYPE_FP16, 6, 2), &two, &three);
    CHECK(ran, "both runs succeeded");
    if (ran) {
        CHECK(three.steps_done == 3 && three.skipped_steps == 1, "skipped %lld of %d",
               (long long)three.skipped_steps, three.steps_done);
        CHECK(three.skipped[2] == 1 && three.skipped[0] == 0 && three.skipped[1] == 0,
               "step 3 is the skipped one");
        CHECK(three.loss_scale[2] == 65536.0 && three.final_loss_scale == 32768.0,
               "scale of step 3 %g, after it %g", three.loss_scale[2], three.final_loss_scale);
        CHECK(isfinite(three.loss[2]), "the loss of the skipped step is finite: %g",
               three.loss[2]);
        CHECK(three.params_digest == two.params_digest,
               "master weights changed in the skipped step: %016llx after 3 vs %016llx after 2",
               (unsigned long long)three.params_digest, (unsigned long long)two.params_digest);
    }
    gt_train_stats_release(&two);
    gt_train_stats_release(&three);
}

/* One step-1 fault; returns the status and leaves the message. */
static gt_status fault_run(const char *backend, gt_dtype dt, const char *var, const char *value,
                           gt_train_stats *st, const char *what) {
    gt_train_config c = base(backend, dt, 2, 2);
    c.stop_after = 1;
    setenv(var, value, 1);
    gt_status s = mt_train_run(&c, st, what);
    unsetenv(var);
    return s;
}

static void test_nonfinite(void) {
    gt_train_stats st;
    gt_status s = fault_run("ref", GT_DTYPE_BF16, "GT_FAULT_NAN", "0:1", &st,
                            "bf16, NaN gradient");
    CHECK(s == GT_ERR_INVALID && strstr(gt_last_error(), "non-finite gradient norm"),
           "bf16 NaN gradient must stop: %s", gt_last_error());
    gt_train_stats_release(&st);

    s = fault_run("ref", GT_DTYPE_FP16, "GT_FAULT_NAN", "0:1", &st, "fp16, NaN gradient");
    CHECK(s == GT_OK && st.skipped_steps == 1 && st.final_loss_scale == 32768.0,
           "fp16 NaN gradient is an overflow: %d, skipped %lld", s,
           (long long)st.skipped_steps);
    gt_train_stats_release(&st);

    s = fault_run("ref", GT_DTYPE_FP16, "GT_FAULT_NAN", "0:1:loss", &st, "fp16, NaN loss");
    CHECK(s == GT_ERR_INVALID && strstr(gt_last_error(), "non-finite loss"),
           "fp16 NaN loss must stop: %s", gt_last_error());
    gt_train_stats_release(&st);

    s = fault_run("cpu", GT_DTYPE_FP32, "GT_FAULT_OVERFLOW", "1", &st, "fp32, infinite dloss");
    CHECK(s == GT_ERR_INVALID && strstr(gt_last_error(), "non-finite gradient norm"),
           "fp32 overflow must stop: %s", gt_last_error());
    gt_train_stats_release(&st);
}

static void test_refusal(void) {
    gt_train_config c = base("cpu", GT_DTYPE_BF16, 2, 2);
    gt_train_stats st;
    gt_status s = mt_train_run(&c, &st, "bf16 on cpu");
    CHECK(s == GT_ERR_UNSUPPORTED && strstr(gt_last_error(), "--precision bf16") &&
               strstr(gt_last_error(), "'cpu'"),
           "cpu bf16: %s", gt_last_error());
    CHECK(st.steps_done == 0, "refused before any step, did %d", st.steps_done);
    gt_train_stats_release(&st);
    c.precision = GT_DTYPE_INT32;
    s = mt_train_run(&c, &st, "int32 precision");
    CHECK(s == GT_ERR_INVALID && strstr(gt_last_error(), "fp32, bf16 or fp16"),
           "int32: %s", gt_last_error());
    gt_train_stats_release(&st);
}

int main(int argc, char **argv) {
    const char *backend = argc > 1 ? argv[1] : "ref";
    gt_backend *be = mt_backend_or_skip(backend, 1);
    gt_backend_free(be);
    if (strcmp(backend, "ref") == 0) {
        test_refusal();
        test_nonfinite();
    }
    test_overflow_skip(backend);
    test_close_to_fp32(backend);
    char name[64];
    snprintf(name, sizeof name, "models.gpt2_precision.%s", backend);
    return check_done(name);
}
