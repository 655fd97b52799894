/* Mixed precision for mlp and convnet through the training loop
 * (suites/trainer/loop.c): bf16 and fp16 storage of activations, compute weights
 * and gradients, fp32 masters, AdamW state and BatchNorm statistics.
 * Usage: test_models_dense_precision_* [BACKEND]   (default ref; exit 77
 * when BACKEND is absent). 4 runs with ref only.
 *
 *  1. mlp-tiny, mlp-tiny-relu and convnet-tiny in bf16 and fp16 train to
 *     the loss of the fp32 run: the mean loss of the last 10 of 40 steps
 *     within the train suite's limits (suites/train_suite.c has the
 *     measurements: mlp 0.02 bf16 / 0.005 fp16, convnet 0.03). The 16-bit
 *     weights must differ from fp32's (a run that silently trained in fp32
 *     passes the loss check), fp16 must not have skipped a step, bf16 has
 *     no scaler.
 *  2. fp16 with GT_FAULT_OVERFLOW=3 on convnet-tiny: step 3 is skipped, the
 *     scale backs off, the master weights after step 3 are bitwise those
 *     after step 2 (the running statistics moved: the forward ran).
 *  3. convnet-tiny in bf16 and fp16: 10 steps against 5 + checkpoint +
 *     resume give bitwise-equal losses and final weights (the compute copy
 *     is rebuilt from the restored masters; fp16 restores its scaler).
 *  4. bf16 on the cpu backend (fp32 only) is refused for mlp and convnet,
 *     naming the precision and the backend, before any step.
 */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv, mkdtemp */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/backend.h"
#include "engine/tests/check.h"
#include "models/tests/backend_or_skip.h"
#include "models/tests/train_run.h"
#include "suites/trainer/train.h"

/* The train suite's settings for the dense presets (dense_config). */
static gt_train_config base(const char *backend, const char *model, gt_dtype dt, int steps) {
    gt_train_config c = gt_train_defaults();
    c.backend = backend;
    snprintf(c.model_name, sizeof c.model_name, "%s", model);
    c.precision = dt;
    c.steps = steps;
    c.batch = strncmp(model, "mlp", 3) == 0 ? 64 : 32;
    c.opt.lr = 1e-2f;
    c.opt.beta2 = 0.999f;
    c.opt.warmup_steps = steps / 20 > 0 ? steps / 20 : 1;
    c.opt.total_steps = steps;
    c.threads = 1;
    c.prefetch = 0;
    c.peak_gflops = GT_TRAIN_NO_MFU; /* no peak probe */
    return c;
}

static void test_close_to_fp32(const char *backend, const char *model) {
    enum { STEPS = 40, TAIL = 10 };
    int conv = strncmp(model, "mlp", 3) != 0;
    double lim_b = conv ? 0.03 : 0.02, lim_h = conv ? 0.03 : 0.005;
    gt_train_stats s32, sb, sh;
    gt_train_config c = base(backend, model, GT_DTYPE_FP32, STEPS);
    gt_status a = mt_train_run(&c, &s32, "fp32, 40 steps");
    c.precision = GT_DTYPE_BF16;
    gt_status b = mt_train_run(&c, &sb, "bf16, 40 steps");
    c.precision = GT_DTYPE_FP16;
    gt_status h = mt_train_run(&c, &sh, "fp16, 40 steps");
    CHECK(a == GT_OK && b == GT_OK && h == GT_OK, "%s: the three runs: %d %d %d", model, a, b,
           h);
    if (a == GT_OK && b == GT_OK && h == GT_OK) {
        double t32 = gt_train_tail_loss(&s32, TAIL), tb = gt_train_tail_loss(&sb, TAIL),
               th = gt_train_tail_loss(&sh, TAIL);
        printf("%-14s mean loss of the last %d steps: fp32 %.6f bf16 %.6f (%+.2e) fp16 %.6f "
               "(%+.2e)\n",
               model, TAIL, t32, tb, tb - t32, th, th - t32);
        CHECK(t32 < s32.loss[0] - 0.2, "%s fp32 learned: %.4f from %.4f", model, t32,
               s32.loss[0]);
        CHECK(fabs(tb - t32) <= lim_b, "%s bf16 %.6f vs fp32 %.6f", model, tb, t32);
        CHECK(fabs(th - t32) <= lim_h, "%s fp16 %.6f vs fp32 %.6f", model, th, t32);
        CHECK(sb.params_digest != s32.params_digest, "%s bf16 weights are fp32's", model);
        CHECK(sh.params_digest != s32.params_digest, "%s fp16 weights are fp32's", model);
        CHECK(sh.skipped_steps == 0 && sh.final_loss_scale == 65536.0,
               "%s fp16 without overflow: skipped %lld scale %g", model,
               (long long)sh.skipped_steps, sh.final_loss_scale);
        CHECK(sb.final_loss_scale == 1.0 && sb.skipped_steps == 0, "%s bf16 has no scaler",
               model);
    }
    gt_train_stats_release(&s32);
    gt_train_stats_release(&sb);
    gt_train_stats_release(&sh);
}

static void test_overflow_skip(const char *backend) {
    gt_train_stats two, three;
    int ran = mt_overflow_runs(base(backend, "convnet-tiny", GT_DTYPE_FP16, 6), &two, &three);
    CHECK(ran, "both runs succeeded");
    if (ran) {
        CHECK(three.steps_done == 3 && three.skipped_steps == 1 && three.skipped[2] == 1,
               "step 3 skipped: skipped %lld of %d", (long long)three.skipped_steps,
               three.steps_done);
        CHECK(three.final_loss_scale == 32768.0, "scale after the skip %g",
               three.final_loss_scale);
        /* the weights alone: the skipped step's forward still moved the
         * BatchNorm running statistics, as under torch's GradScaler */
        CHECK(three.weights_digest == two.weights_digest,
               "master weights changed in the skipped step: %016llx after 3 vs %016llx after 2",
               (unsigned long long)three.weights_digest, (unsigned long long)two.weights_digest);
        CHECK(three.params_digest != two.params_digest,
               "the running statistics did not move in the skipped step's forward");
    }
    gt_train_stats_release(&two);
    gt_train_stats_release(&three);
}

static void test_resume(const char *backend, gt_dtype dt) {
    enum { N = 10, AT = 5 };
    char dir[] = "/tmp/gt_dense_precision_XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp failed");
        return;
    }
    gt_train_stats full, part, rest;
    memset(&part, 0, sizeof part);
    memset(&rest, 0, sizeof rest);
    gt_train_config c = base(backend, "convnet-tiny", dt, N);
    gt_status a = mt_train_run(&c, &full, "10 steps");
    gt_train_config p = c;
    p.checkpoint_dir = dir;
    p.checkpoint_every = AT;
    p.stop_after = AT;
    gt_status b = a == GT_OK ? mt_train_run(&p, &part, "5 steps + checkpoint") : a;
    gt_train_config r = c;
    r.resume = dir;
    gt_status d = b == GT_OK ? mt_train_run(&r, &rest, "resumed at 5") : b;
    CHECK(d == GT_OK, "%s resume runs: %d %d %d", gt_dtype_name(dt), a, b, d);
    if (d == GT_OK) {
        int differ = rest.first_step != AT || rest.steps_done != N - AT;
        for (int i = 0; !differ && i < N - AT; i++)
            differ += memcmp(&full.loss[AT + i], &rest.loss[i], sizeof(double)) != 0;
        CHECK(differ == 0, "%s: resumed losses differ from the unbroken run's",
               gt_dtype_name(dt));
        CHECK(full.params_digest == rest.params_digest,
               "%s: final weights %016llx resumed vs %016llx unbroken", gt_dtype_name(dt),
               (unsigned long long)rest.params_digest, (unsigned long long)full.params_digest);
    }
    gt_train_stats_release(&full);
    gt_train_stats_release(&part);
    gt_train_stats_release(&rest);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "warning: could not remove %s\n", dir);
}

static void test_refusal(void) {
    static const char *const models[] = {"mlp-tiny", "convnet-tiny"};
    for (int i = 0; i < 2; i++) {
        gt_train_config c = base("cpu", models[i], GT_DTYPE_BF16, 2);
        gt_train_stats st;
        gt_status s = mt_train_run(&c, &st, "bf16 on cpu");
        CHECK(s == GT_ERR_UNSUPPORTED && strstr(gt_last_error(), "--precision bf16") &&
                   strstr(gt_last_error(), "'cpu'"),
               "%s cpu bf16: %s", models[i], gt_last_error());
        CHECK(st.steps_done == 0, "refused before any step, did %d", st.steps_done);
        gt_train_stats_release(&st);
    }
}

int main(int argc, char **argv) {
    const char *backend = argc > 1 ? argv[1] : "ref";
    gt_backend *be = mt_backend_or_skip(backend, 1);
    gt_backend_free(be);
    if (strcmp(backend, "ref") == 0) test_refusal();
    test_close_to_fp32(backend, "mlp-tiny");
    test_close_to_fp32(backend, "mlp-tiny-relu");
    test_close_to_fp32(backend, "convnet-tiny");
    test_overflow_skip(backend);
    test_resume(backend, GT_DTYPE_BF16);
    test_resume(backend, GT_DTYPE_FP16);
    char name[64];
    snprintf(name, sizeof name, "models.dense_precision.%s", backend);
    return check_done(name);
}
