/* gauntlet train: the main job. */
#define _GNU_SOURCE /* setenv */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/comm.h"
#include "engine/env.h"
#include "engine/ops.h"
#include "gt_config.h"
#include "harness/cli.h"
#include "harness/launcher.h"
#include "harness/signals.h"
#include "harness/mllog.h"
#include "reports/history.h"
#include "engine/timer.h"
#include "reports/report.h"
#include "models/model.h"
#include "suites/suite.h"
#include "suites/train_record.h"
#include "suites/trainer/train.h"

static void train_usage(FILE *f) {
    fprintf(
        f, "usage: gauntlet train [options]\n"
           "\n"
           "model:\n"
           "  --model NAME          gpt2-tiny (default), gpt2-small, gpt2-124m; mlp-tiny,\n"
           "                        mlp-tiny-relu, mlp-small, convnet-tiny, resnet-small\n"
           "                        train on their synthetic task (docs/models.md)\n"
           "  --layers N --heads N --channels N --vocab N --padded-vocab N --max-seq N\n"
           "                        override fields of the preset\n"
           "  --init-from llmc:FILE start from an llm.c model file (fp32, version 3); without\n"
           "                        --model the file's config is used\n"
           "training:\n"
           "  --batch B             global batch, sequences per step (default 8)\n"
           "  --seq T               sequence length (default: 64, or the model's max_seq_len\n"
           "                        when that is shorter)\n"
           "  --steps N             optimizer steps (default 200)\n"
           "  --lr X --warmup N --lr-min-frac X --weight-decay X --grad-clip X\n"
           "  --beta1 X --beta2 X --eps X\n"
           "                        AdamW (defaults lr 1e-3, warmup 10, min frac 0.1, wd 0,\n"
           "                        clip 1.0, betas 0.9 0.95, eps 1e-8)\n"
           "  --seed N              initialisation and data order (default 1337)\n"
           "  --eval-samples N      mlp / convnet: after training, the loss on N unseen\n"
           "                        samples in evaluation mode (BatchNorm's running\n"
           "                        statistics) against the Bayes predictor's (default 0)\n"
           "  --eval-every K        also after every K steps: the held-out loss curve\n"
           "  --target-gap X        with --eval-every: steps and training time until the\n"
           "                        held-out loss is within X of the Bayes predictor's\n"
           "                        (time to target, as MLPerf times to a quality target)\n"
           "  --precision P         fp32 (default), bf16 or fp16: storage of activations,\n"
           "                        weights (a compute copy) and gradients; master weights\n"
           "                        and AdamW state stay fp32. fp16 adds dynamic loss\n"
           "                        scaling (overflowing steps are skipped and counted).\n"
           "                        bf16/fp16 need a backend that stores them (ref, cuda)\n"
           "data:\n"
           "  --data FILE           token file (gauntlet or llm.c format); default: synthetic\n"
           "  --data-order ORDER    sequential (default) or shuffled\n"
           "  --synth-tokens N      synthetic source length (default: enough for every step)\n"
           "  --synth-branch N      successors per state of the synthetic chain (default 4)\n"
           "data parallel (launch with mpirun -np N or srun; --batch stays the global batch):\n"
           "  --micro-batch M       sequences per forward/backward on a rank (default: all of\n"
           "                        the rank's share, batch / ranks)\n"
           "  --deterministic       bitwise the same weights on 1, 2, 4 ... ranks: micro-batch\n"
           "                        gradients summed by one fixed binary tree (power-of-two\n"
           "                        ranks and micro-batches per rank)\n"
           "  --zero 0|1            1: ZeRO-1, AdamW state sharded across ranks\n"
           "  --bucket-mb X         gradient all-reduce bucket size (default 25)\n"
           "  --check-consistency N compare a hash of the parameters across ranks every N steps\n"
           "                        (always once after initialisation)\n"
           "  --topologies LIST     train on sub-communicators of these sizes in turn (e.g.\n"
        "                        1,2,4; each <= the job's ranks) and report scaling\n"
        "                        efficiency against the first: strong (same global batch)\n"
        "  --weak                weak scaling instead: --batch is per rank\n"
        "  --comm NAME           auto (default: mpi when launched by mpirun/srun), self, mpi,\n"
        "                        nccl (cuda backend, one GPU per rank; MPI bootstraps it)\n"
           "  --comm-timeout S      watchdog deadline of every blocking collective (default 300)\n"
           "execution:\n"
           "  --backend NAME        cpu (default), ref, cuda\n"
           "  --threads N           cpu threads (default: the cores / ranks on this node)\n"
           "  --no-prefetch         load batches on the training thread\n"
           "  --peak-gflops X       MFU reference instead of measuring SGEMM\n"
           "checkpoints (docs/formats.md, \"Checkpoints\"):\n"
           "  --checkpoint-dir DIR  where checkpoints go (created; checked writable first)\n"
           "  --checkpoint-every K  a checkpoint after every K steps: DIR/ckpt_<step>.gtck, or\n"
           "                        with --zero 1 a folder DIR/ckpt_<step>/ (one file per rank)\n"
           "  --resume PATH         continue from a checkpoint file, a sharded folder, or DIR\n"
           "                        (its latest complete checkpoint): bitwise the run that was\n"
           "                        not interrupted; same settings, same --steps\n"
           "  --resume-allow LIST   fields that may differ from the checkpoint's run (e.g.\n"
           "                        data,steps; the refusal names the field): the changes\n"
           "                        are printed and recorded in the report\n"
           "  --stop-after N        end after step N as an interruption would (the schedule\n"
           "                        still spans --steps)\n"
           "output:\n"
           "  --report FILE         write the JSON report there; until the run ends it says it\n"
           "                        is incomplete (summary.complete false)\n"
           "  --report-every S      rewrite the report every S seconds of training with the\n"
           "                        series so far (default 10; 0: only at the end), between\n"
           "                        steps, outside their timing\n"
           "  --report-every-steps N  also after every N steps (default 0: off)\n"
           "  --history DB          record the report in this run history (SQLite, created when\n"
           "                        absent; gauntlet history DB lists it; needs --report)\n"
           "  --mllog FILE          MLPerf-style log lines (:::MLLOG {...}): init, run, blocks,\n"
           "                        evaluations (eval_accuracy: the held-out loss), submission\n"
           "  --profile on|off      the per-op profile in the report (docs/profile.md); by\n"
           "                        default it stops itself when its overhead estimate\n"
           "                        exceeds 2%% of the step, on keeps it, off leaves it out\n"
           "  --trace FILE          the steps as Chrome trace event JSON (chrome://tracing,\n"
           "                        Perfetto); on several ranks one file per rank, FILE.rankN.json\n"
           "  --inject-slowdown OP:F  op OP takes F times as long in every step (gate tests)\n"
           "  --print-every N       print every Nth step (default 1; 0: none)\n"
           "  --expect-loss-margin X  check: mean loss of the last 10 steps <= source entropy + X\n"
           "                        (synthetic data only)\n"
           "  --quiet               only the summary\n");
}

/* --resume-allow: every item a field a checkpoint records (suites/trainer/train.h). */
static int resume_allow_ok(const char *list) {
    const char *names[64];
    int n = 0;
    while (n < 64 && gt_train_resume_field(n)) names[n] = gt_train_resume_field(n), n++;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *tk = strtok(buf, ","); tk; tk = strtok(NULL, ",")) {
        int known = 0;
        for (int i = 0; i < n; i++) known |= strcmp(tk, names[i]) == 0;
        if (known) continue;
        const char *near = gt_nearest(tk, names, n);
        fprintf(stderr, "gauntlet train: --resume-allow: '%s' is not a field a checkpoint "
                        "records%s%s%s; the fields are:", tk, near ? " (did you mean " : "",
                near ? near : "", near ? "?)" : "");
        for (int i = 0; i < n; i++) fprintf(stderr, "%s %s", i ? "," : "", names[i]);
        fprintf(stderr, " (the model's shape cannot change on resume)\n");
        return 0;
    }
    return 1;
}

typedef struct printer {
    int every;
    const char *unit; /* throughput unit: "tok" (gpt2), "samples", "images" */
    const gt_train_config *cfg;
    const gt_train_stats *st; /* the run's: says what a resumed run resumed from */
    int said_resume;
    /* the report rewritten as training goes (rank 0 with --report) */
    gt_report *rep;    /* NULL: no rewrites */
    gt_result *res;    /* this topology's result so far, NULL before the first rewrite */
    char topo[16];
    double every_s;    /* --report-every: seconds between rewrites, 0: none by time */
    int every_steps;   /* --report-every-steps: 0: none by steps */
    double last_write; /* gt_now_ns() seconds of the last write */
    int write_failed;
} printer;

/* Between two steps (the step's time is taken, the next one's not started):
 * the report with this topology's result so far, when one is due. */
static void rewrite_report(printer *p, int step) {
    if (!p->rep || p->write_failed) return;
    double now = gt_now_ns() * 1e-9;
    int due = (p->every_s > 0 && now - p->last_write >= p->every_s) ||
              (p->every_steps > 0 && step % p->every_steps == 0);
    if (!due) return;
    if (p->res) gt_result_reset(p->res);
    else p->res = gt_report_add_result(p->rep, "train", p->cfg->model_name, p->topo,
                                       p->cfg->backend);
    if (!p->res) return;
    gt_train_record_partial(p->cfg, p->st, p->res);
    if (gt_report_write(p->rep) != GT_OK) {
        /* said once; the write at the end says it again and sets the exit code */
        fprintf(stderr, "gauntlet train: rewriting the report: %s\n", gt_last_error());
        p->write_failed = 1;
    }
    p->last_write = gt_now_ns() * 1e-9;
}

/* What a resumed run continues from, before its first step: file, step, data
 * position, the changes --resume-allow let through, what was not checked. */
static void print_resume(FILE *f, const gt_train_config *cfg, const gt_train_stats *st) {
    if (!cfg || !st || !st->resumed_from[0]) return;
    int dense = strcmp(st->unit, "tokens") != 0 && st->unit[0];
    fprintf(f, "resumed from %s at step %d, data position %lld %s (%s order)\n",
            st->resumed_from, st->first_step,
            (long long)gt_train_data_position(cfg, st->first_step), dense ? st->unit : "tokens",
            gt_data_order_name(cfg->data_order));
    if (st->resume_overrides[0])
        fprintf(f, "resumed with changes allowed by --resume-allow: %s\n", st->resume_overrides);
    if (st->resume_unchecked[0]) fprintf(f, "warning: %s\n", st->resume_unchecked);
}

static void print_step(void *ctx, int step, int steps, float loss, float lr, double norm, double ms,
                       double tps, double mfu) {
    printer *p = ctx;
    if (!p->said_resume) {
        p->said_resume = 1;
        print_resume(stdout, p->cfg, p->st);
    }
    rewrite_report(p, step);
    if (p->every <= 0 || (step % p->every != 0 && step != 1 && step != steps)) return;
    /* a non-finite norm reaches here only from an fp16 step the loss scaler skipped */
    char nb[16];
    if (isfinite(norm)) snprintf(nb, sizeof nb, "%7.4f", norm);
    else snprintf(nb, sizeof nb, "skipped");
    printf(
        "step %5d/%d | loss %.6f | lr %.3e | norm %7s | %8.1f ms | %9.0f %s/s | MFU %5.1f%%\n",
        step, steps, loss, lr, nb, ms, tps, p->unit ? p->unit : "tok", 100.0 * mfu);
    fflush(stdout);
}

static void print_summary(const gt_train_config *cfg, const gt_train_stats *st, int nranks,
                          int rc, double tail) {
    printf("\nsummary: %s on %s\n", cfg->model_name, st->backend_desc);
    printf("  parameters       %zu\n", st->num_params);
    printf("  precision        %s", gt_dtype_name(cfg->precision));
    if (cfg->precision == GT_DTYPE_FP16)
        printf(" (loss scale %g at the end, %lld step(s) skipped for overflow)",
               st->final_loss_scale, (long long)st->skipped_steps);
    printf("\n");
    printf("  final loss       %.6f (mean of last 10 steps %.6f)\n",
           st->loss[st->steps_done - 1], tail);
    int tokens = strcmp(st->unit, "tokens") == 0 || !st->unit[0];
    if (st->entropy >= 0 && tokens)
        printf("  source entropy   %.6f nats/token (gap %.4f)\n", st->entropy,
               tail - st->entropy);
    else if (st->entropy >= 0)
        printf("  target loss      %.6f nats/sample, the task's Bayes-optimal loss (gap %.4f)\n",
               st->entropy, tail - st->entropy);
    if (st->eval_samples > 0)
        printf("  held-out loss    %.6f over %d unseen samples, evaluation mode (the Bayes "
               "predictor's %.6f: gap %.4f)\n",
               st->eval_loss, st->eval_samples, st->eval_bayes, st->eval_loss - st->eval_bayes);
    if (cfg->target_gap > 0 && st->steps_to_target > 0)
        printf("  time to target   step %d, %.3f s of training (held-out gap <= %g)\n",
               st->steps_to_target, st->time_to_target_s, cfg->target_gap);
    else if (cfg->target_gap > 0)
        printf("  time to target   not reached: no evaluation within %g of the Bayes loss\n",
               cfg->target_gap);
    printf("  step time        %.2f ms (median)\n", st->ms_per_step);
    if (st->ms_per_step > 0)
        printf("  start-up         %.0f ms to the first step (%.2f median steps)\n",
               st->startup_ms, st->startup_ms / st->ms_per_step);
    printf("  throughput       %.0f %s/s over %d rank(s)\n", st->tokens_per_s,
           tokens ? "tokens" : st->unit, nranks);
    if (st->peak_gflops > 0)
        printf("  MFU              %.1f%% of %.1f GFLOP/s per rank (%s)\n", 100.0 * st->mfu,
               st->peak_gflops, st->peak_how);
    if (st->datasheet_gflops > 0)
        printf("  MFU (datasheet)  %.1f%% of the GPU's dense %.0f GFLOP/s\n",
               100.0 * st->mfu_datasheet, st->datasheet_gflops);
    if (nranks > 1)
        printf("  communication    %.2f ms/step not hidden by the backward (median), %.1f "
               "MiB/step reduced and gathered by rank 0\n",
               st->exposed_comm_ms, st->comm_bytes / 1048576.0 / (st->steps_done ? st->steps_done : 1));
    printf("  peak memory      %.1f MiB in use, %.1f MiB reserved\n",
           st->mem.peak_in_use / 1048576.0, st->mem.peak_reserved / 1048576.0);
    printf("  final params     fnv1a64 %016llx\n", (unsigned long long)st->params_digest);
    if (st->resumed_from[0])
        printf("  resumed from     %s, step %d, data position %lld\n", st->resumed_from,
               st->first_step, (long long)gt_train_data_position(cfg, st->first_step));
    if (st->resume_overrides[0]) printf("  resume changes   %s\n", st->resume_overrides);
    if (st->resume_unchecked[0]) printf("  resume warning   %s\n", st->resume_unchecked);
    printf("  checks           %s\n", rc == GT_EXIT_OK ? "all passed" : "FAILED");
}

/* An architecture override: `FLAG N` becomes the model option key=N
 * (options by name, models/model.h; the model checks the whole). */
static int model_option(gt_args *a, const char *flag, const char *key, int lo, int hi,
                        char *options, int *err) {
    const char *v = NULL;
    if (!gt_opt(a, flag, &v, err)) return 0;
    int n = 0;
    if (*err || !gt_parse_int(a, flag, v, lo, hi, &n)) {
        *err = 1;
        return 1;
    }
    gt_status s = gt_model_option_add(options, key, n);
    if (s != GT_OK) {
        fprintf(stderr, "gauntlet train: %s\n", gt_last_error());
        *err = 1;
    }
    return 1;
}

int gt_cmd_train(int argc, char **argv) {
    gt_train_config cfg = gt_train_defaults();
    gt_args a = {.argc = argc, .argv = argv, .i = 1, .cmd = "train"};
    const char *report_path = NULL, *v = NULL, *history_db = NULL, *mllog_path = NULL;
    int err = 0, quiet = 0, seq_given = 0, warmup_given = 0;
    double margin = -1;
    printer pr = {.every = 1, .every_s = 10};
    gt_comm_config comm_cfg = gt_comm_defaults();
    int topos[16], ntopos = 0, weak = 0;
    /* the preset first, so overrides apply to it whatever the order */
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "--model") == 0) {
            snprintf(cfg.model_name, sizeof cfg.model_name, "%s", argv[i + 1]);
            gt_model_arch arch;
            gt_status s = gt_model_arch_of(argv[i + 1], NULL, &arch);
            if (s != GT_OK) return gt_fail("train", s);
        } else if (strncmp(argv[i], "--model=", 8) == 0) {
            snprintf(cfg.model_name, sizeof cfg.model_name, "%s", argv[i] + 8);
            gt_model_arch arch;
            gt_status s = gt_model_arch_of(argv[i] + 8, NULL, &arch);
            if (s != GT_OK) return gt_fail("train", s);
        }
    /* --init-from without --model: the file's config is the base */
    int model_given = 0;
    for (int i = 1; i < argc; i++)
        model_given |= strcmp(argv[i], "--model") == 0 || strncmp(argv[i], "--model=", 8) == 0;
    for (int i = 1; i < argc && !model_given; i++) {
        const char *init = NULL;
        if (strcmp(argv[i], "--init-from") == 0 && i + 1 < argc)
            init = argv[i + 1];
        else if (strncmp(argv[i], "--init-from=", 12) == 0)
            init = argv[i] + 12;
        if (init && strncmp(init, "llmc:", 5) == 0) {
            gt_status s = gt_model_describe_file(init, cfg.model_name, cfg.model_options);
            if (s != GT_OK) return gt_fail("train", s);
        }
    }
    while (a.i < argc && !err) {
        if (gt_flag(&a, "--help") || gt_flag(&a, "-h")) {
            train_usage(stdout);
            return GT_EXIT_OK;
        } else if (gt_opt(&a, "--model", &v, &err)) {
        } else if (model_option(&a, "--layers", "layers", 1, 1024, cfg.model_options, &err) ||
                   model_option(&a, "--heads", "heads", 1, 1024, cfg.model_options, &err) ||
                   model_option(&a, "--channels", "channels", 1, 65536, cfg.model_options, &err) ||
                   model_option(&a, "--vocab", "vocab", 2, 1 << 24, cfg.model_options, &err) ||
                   model_option(&a, "--padded-vocab", "padded_vocab", 2, 1 << 24,
                                cfg.model_options, &err) ||
                   model_option(&a, "--max-seq", "max_seq", 1, 1 << 20, cfg.model_options,
                                &err)) {
        } else if (gt_opt(&a, "--init-from", &v, &err)) {
            cfg.init_from = v;
        } else if (gt_opt(&a, "--batch", &v, &err)) {
            err |= !gt_parse_int(&a, "--batch", v, 1, 1 << 20, &cfg.batch);
        } else if (gt_opt(&a, "--seq", &v, &err)) {
            err |= !gt_parse_int(&a, "--seq", v, 1, 1 << 20, &cfg.seq_len);
            seq_given = 1;
        } else if (gt_opt(&a, "--steps", &v, &err)) {
            err |= !gt_parse_int(&a, "--steps", v, 1, 100000000, &cfg.steps);
        } else if (gt_opt(&a, "--lr", &v, &err)) {
            err |= !gt_parse_float(&a, "--lr", v, 0.0, 10.0, &cfg.opt.lr);
        } else if (gt_opt(&a, "--warmup", &v, &err)) {
            err |= !gt_parse_int(&a, "--warmup", v, 0, 100000000, &cfg.opt.warmup_steps);
            warmup_given = 1;
        } else if (gt_opt(&a, "--lr-min-frac", &v, &err)) {
            err |= !gt_parse_float(&a, "--lr-min-frac", v, 0.0, 1.0, &cfg.opt.lr_min_frac);
        } else if (gt_opt(&a, "--weight-decay", &v, &err)) {
            err |= !gt_parse_float(&a, "--weight-decay", v, 0.0, 10.0, &cfg.opt.weight_decay);
        } else if (gt_opt(&a, "--grad-clip", &v, &err)) {
            err |= !gt_parse_float(&a, "--grad-clip", v, 0.0, 1e9, &cfg.opt.grad_clip);
        } else if (gt_opt(&a, "--beta1", &v, &err)) {
            err |= !gt_parse_float(&a, "--beta1", v, 0.0, 0.999999, &cfg.opt.beta1);
        } else if (gt_opt(&a, "--beta2", &v, &err)) {
            err |= !gt_parse_float(&a, "--beta2", v, 0.0, 0.999999, &cfg.opt.beta2);
        } else if (gt_opt(&a, "--eps", &v, &err)) {
            err |= !gt_parse_float(&a, "--eps", v, 1e-30, 1.0, &cfg.opt.eps);
        } else if (gt_opt(&a, "--seed", &v, &err)) {
            err |= !gt_parse_u64(&a, "--seed", v, &cfg.seed);
        } else if (gt_opt(&a, "--precision", &v, &err)) {
            gt_dtype dt = GT_DTYPE_FP32;
            if (v && (gt_dtype_parse(v, &dt) != GT_OK ||
                      (dt != GT_DTYPE_FP32 && dt != GT_DTYPE_BF16 && dt != GT_DTYPE_FP16)))
                return gt_usage_error("train", "--precision '%s': use fp32, bf16 or fp16", v);
            cfg.precision = dt;
        } else if (gt_opt(&a, "--data", &v, &err)) {
            cfg.data_path = v;
        } else if (gt_opt(&a, "--data-order", &v, &err)) {
            if (v && gt_data_order_parse(v, &cfg.data_order) != GT_OK)
                return gt_usage_error("train", "--data-order '%s': use sequential or shuffled", v);
        } else if (gt_opt(&a, "--synth-tokens", &v, &err)) {
            err |= !gt_parse_i64(&a, "--synth-tokens", v, 2, (int64_t)1 << 34, &cfg.synth_tokens);
        } else if (gt_opt(&a, "--synth-branch", &v, &err)) {
            err |= !gt_parse_int(&a, "--synth-branch", v, 1, 1 << 24, &cfg.synth_branch);
        } else if (gt_opt(&a, "--backend", &v, &err)) {
            cfg.backend = v;
        } else if (gt_opt(&a, "--threads", &v, &err)) {
            err |= !gt_parse_int(&a, "--threads", v, 1, 4096, &cfg.threads);
        } else if (gt_opt(&a, "--micro-batch", &v, &err)) {
            err |= !gt_parse_int(&a, "--micro-batch", v, 1, 1 << 20, &cfg.micro_batch);
        } else if (gt_opt(&a, "--topologies", &v, &err)) {
            ntopos = 0;
            char buf[256];
            snprintf(buf, sizeof buf, "%s", v ? v : "");
            for (char *tk = strtok(buf, ","); tk && !err; tk = strtok(NULL, ",")) {
                if (ntopos == 16) {
                    err = 1;
                    fprintf(stderr, "gauntlet train: --topologies: at most 16\n");
                } else {
                    err |= !gt_parse_int(&a, "--topologies", tk, 1, 1 << 20, &topos[ntopos++]);
                }
            }
            if (!err && ntopos == 0) err = !!gt_usage_error("train", "--topologies is empty");
        } else if (gt_flag(&a, "--weak")) {
            weak = 1;
        } else if (gt_flag(&a, "--deterministic")) {
            cfg.deterministic = 1;
        } else if (gt_opt(&a, "--zero", &v, &err)) {
            err |= !gt_parse_int(&a, "--zero", v, 0, 1, &cfg.zero);
        } else if (gt_opt(&a, "--bucket-mb", &v, &err)) {
            err |= !gt_parse_double(&a, "--bucket-mb", v, 0.001, 65536.0, &cfg.bucket_mb);
        } else if (gt_opt(&a, "--check-consistency", &v, &err)) {
            err |= !gt_parse_int(&a, "--check-consistency", v, 0, 1 << 30, &cfg.check_every);
        } else if (gt_opt(&a, "--checkpoint-dir", &v, &err)) {
            cfg.checkpoint_dir = v;
        } else if (gt_opt(&a, "--checkpoint-every", &v, &err)) {
            err |= !gt_parse_int(&a, "--checkpoint-every", v, 1, 1 << 30, &cfg.checkpoint_every);
        } else if (gt_opt(&a, "--resume", &v, &err)) {
            cfg.resume = v;
        } else if (gt_opt(&a, "--resume-allow", &v, &err)) {
            if (v && !resume_allow_ok(v)) return GT_EXIT_USAGE;
            cfg.resume_allow = v;
        } else if (gt_opt(&a, "--eval-samples", &v, &err)) {
            err |= !gt_parse_int(&a, "--eval-samples", v, 0, 1 << 24, &cfg.eval_samples);
        } else if (gt_opt(&a, "--eval-every", &v, &err)) {
            err |= !gt_parse_int(&a, "--eval-every", v, 1, 1 << 30, &cfg.eval_every);
        } else if (gt_opt(&a, "--target-gap", &v, &err)) {
            err |= !gt_parse_double(&a, "--target-gap", v, 1e-9, 100.0, &cfg.target_gap);
        } else if (gt_opt(&a, "--stop-after", &v, &err)) {
            err |= !gt_parse_int(&a, "--stop-after", v, 1, 100000000, &cfg.stop_after);
        } else if (gt_opt(&a, "--comm", &v, &err)) {
            comm_cfg.backend = v;
        } else if (gt_opt(&a, "--comm-timeout", &v, &err)) {
            err |= !gt_parse_double(&a, "--comm-timeout", v, 0.0, 1e7, &comm_cfg.timeout_s);
        } else if (gt_flag(&a, "--no-prefetch")) {
            cfg.prefetch = 0;
        } else if (gt_opt(&a, "--peak-gflops", &v, &err)) {
            err |= !gt_parse_double(&a, "--peak-gflops", v, 1e-3, 1e9, &cfg.peak_gflops);
        } else if (gt_opt(&a, "--profile", &v, &err)) {
            if (v && strcmp(v, "on") != 0 && strcmp(v, "off") != 0)
                err |= !!gt_usage_error("train", "--profile '%s': use on or off", v);
            cfg.no_profile = v && strcmp(v, "off") == 0;
            cfg.profile_on = v && strcmp(v, "on") == 0;
        } else if (gt_opt(&a, "--trace", &v, &err)) {
            cfg.trace_path = v;
        } else if (gt_opt(&a, "--inject-slowdown", &v, &err)) {
            cfg.inject_slowdown = v;
        } else if (gt_opt(&a, "--report", &v, &err)) {
            report_path = v;
        } else if (gt_opt(&a, "--report-every", &v, &err)) {
            err |= !gt_parse_double(&a, "--report-every", v, 0.0, 1e7, &pr.every_s);
        } else if (gt_opt(&a, "--report-every-steps", &v, &err)) {
            err |= !gt_parse_int(&a, "--report-every-steps", v, 0, 1 << 30, &pr.every_steps);
        } else if (gt_opt(&a, "--history", &v, &err)) {
            history_db = v;
        } else if (gt_opt(&a, "--mllog", &v, &err)) {
            mllog_path = v;
        } else if (gt_opt(&a, "--print-every", &v, &err)) {
            err |= !gt_parse_int(&a, "--print-every", v, 0, 1 << 30, &pr.every);
        } else if (gt_opt(&a, "--expect-loss-margin", &v, &err)) {
            err |= !gt_parse_double(&a, "--expect-loss-margin", v, 0.0, 100.0, &margin);
        } else if (gt_flag(&a, "--quiet")) {
            quiet = 1;
        } else {
            return gt_unknown_option("train", argv[a.i], train_usage);
        }
    }
    if (err) return GT_EXIT_USAGE;
    /* the architecture; a bad one is refused by gt_train_run, naming the field */
    gt_model_arch arch;
    (void)gt_model_arch_of(cfg.model_name, cfg.model_options, &arch);
    int gpt2 = arch.family && strcmp(arch.family, "gpt2") == 0;
    if (!seq_given && gpt2) cfg.seq_len = arch.max_T < 64 ? arch.max_T : 64;
    if (cfg.checkpoint_every > 0 && !cfg.checkpoint_dir)
        return gt_usage_error("train", "--checkpoint-every needs --checkpoint-dir DIR");
    if (cfg.trace_path && cfg.no_profile)
        return gt_usage_error("train", "--trace draws the profile's timings: drop --profile off");
    if (cfg.trace_path && ntopos > 1)
        return gt_usage_error("train", "--trace with several --topologies: each would replace "
                                       "the last; trace one topology at a time");
    if (cfg.inject_slowdown) {
        char op[64];
        double f = 0;
        int known = 0;
        if (gt_parse_slowdown(cfg.inject_slowdown, op, sizeof op, &f) == GT_OK)
            for (int o = 0; o < GT_OP_COUNT; o++) known |= strcmp(gt_op_name((gt_op)o), op) == 0;
        if (!known)
            return gt_usage_error("train", "--inject-slowdown '%s': expected OP:FACTOR, OP an "
                                           "op of the op table (gauntlet list) and 1 < FACTOR "
                                           "<= 100, e.g. matmul_bwd:3",
                                  cfg.inject_slowdown);
    }
    if (cfg.checkpoint_dir && cfg.checkpoint_every == 0)
        return gt_usage_error("train", "--checkpoint-dir without --checkpoint-every K writes "
                                       "nothing: add --checkpoint-every");
    if ((cfg.checkpoint_dir || cfg.resume) && ntopos > 0)
        return gt_usage_error("train", "checkpoints and --resume are for one training run: "
                                       "drop --topologies");
    if (history_db && !report_path)
        return gt_usage_error("train", "--history %s needs --report FILE: the report is what is "
                                       "recorded",
                              history_db);
    if (margin >= 0 && cfg.data_path)
        return gt_usage_error("train", "--expect-loss-margin needs the synthetic source (its "
                                       "entropy is known); drop --data or the margin");
    cfg.on_step = print_step;
    cfg.on_step_ctx = &pr;
    /* the cosine decay spans the run; the default warm-up shrinks to fit a
     * short run, an explicit one must fit */
    cfg.opt.total_steps = cfg.steps;
    if (cfg.opt.warmup_steps >= cfg.steps) {
        if (warmup_given)
            return gt_usage_error("train", "--warmup %d must be shorter than --steps %d",
                                  cfg.opt.warmup_steps, cfg.steps);
        cfg.opt.warmup_steps = cfg.steps - 1;
    }

    gt_comm *comm = NULL;
    gt_status s = gt_comm_world(&comm_cfg, &comm);
    if (s != GT_OK) return gt_fail("train", s);
    int rank = gt_comm_rank(comm), nranks = gt_comm_size(comm);
    cfg.comm = comm;
    if (ntopos == 0) topos[ntopos++] = nranks;
    int most = 1;
    for (int i = 0; i < ntopos; i++) most = topos[i] > most ? topos[i] : most;
    if (most > nranks && nranks == 1 && gt_launcher_available() && !getenv("GT_NO_RELAUNCH")) {
        /* as gauntlet run does: one process asked for more ranks */
        gt_comm_free(comm);
        setenv("GT_NO_RELAUNCH", "1", 1);
        printf("gauntlet train: --topologies needs %d ranks: relaunching under %s -n %d\n", most,
               gt_launcher_name(), most);
        gt_launcher_relaunch(most, argv - 1);
        fprintf(stderr, "gauntlet train: could not start %s for %d ranks: launch with "
                        "%s -n %d%s or srun -n %d\n",
                gt_launcher_name(), most, gt_launcher_name(), most, gt_launcher_root_hint(), most);
        return GT_EXIT_USAGE;
    }
    if (most > nranks) {
        if (rank == 0)
            fprintf(stderr,
                    "gauntlet train: --topologies asks for %d ranks but the job has %d%s: "
                    "launch with %s -n %d%s or srun -n %d\n",
                    most, nranks, GT_HAVE_MPI ? "" : " (this build has no MPI)",
                    gt_launcher_name(), most, gt_launcher_root_hint(), most);
        gt_comm_free(comm);
        return GT_EXIT_USAGE;
    }
    if (rank != 0) {
        quiet = 1;
        report_path = NULL; /* rank 0 writes the report */
        history_db = mllog_path = NULL;
    }
    /* ranks on one node share its cores; oversubscribed OpenMP and OpenBLAS
     * threads cost far more than they give. With several topologies every
     * one gets the cores per rank of the largest: scaling efficiency then
     * compares N ranks with N times one rank. */
    if (cfg.threads == 0 && ntopos > 1) {
        int biggest = 1;
        for (int i = 0; i < ntopos; i++) biggest = topos[i] > biggest ? topos[i] : biggest;
        cfg.threads = gt_default_threads(biggest);
    } else if (cfg.threads == 0 && nranks > 1) {
        cfg.threads = gt_default_threads(nranks);
    }
    if (quiet) pr.every = 0;

    gt_report *rep = NULL;
    s = gt_report_new(report_path, argc + 1, argv - 1, &rep);
    if (s != GT_OK) {
        gt_comm_free(comm);
        return gt_fail("train", s);
    }
    /* SIGTERM / SIGINT: the report marked incomplete with the signal (signals.h) */
    gt_signals_report(rep);
    gt_env env;
    memset(&env, 0, sizeof env);
    if (rank == 0) {
        gt_env_collect(&env);
        gt_report_set_env(rep, &env, NULL);
    }
    gt_report_threads(rank == 0 ? rep : NULL, cfg.threads);
    gt_report_binding(rank == 0 ? rep : NULL, comm);
    gt_report_job(rank == 0 ? rep : NULL, comm);
    /* fail early on an unwritable destination, a bad history database or
     * mllog file, before any training */
    struct gt_history *hist = NULL;
    gt_mllog *ml = NULL;
    int early = GT_EXIT_OK;
    if (!gt_history_begin("train", history_db, report_path, &hist)) early = GT_EXIT_USAGE;
    else if (mllog_path && gt_mllog_open(mllog_path, &ml) != GT_OK)
        early = gt_fail("train", GT_ERR_IO);
    else if (report_path && (s = gt_report_write(rep)) != GT_OK)
        early = gt_fail("train", s);
    if (early != GT_EXIT_OK) {
        gt_history_close(hist);
        gt_mllog_close(ml);
        gt_env_release(&env);
        gt_signals_report(NULL);
        gt_report_free(rep);
        gt_comm_free(comm);
        return early;
    }
    gt_mllog_train mlt;
    {
        char platform[600];
        snprintf(platform, sizeof platform, "%s, %s", env.host, env.cpu_model);
        gt_mllog_train_begin(&mlt, ml, &cfg, nranks, platform);
    }
    if (ml) {
        cfg.on_eval = gt_mllog_train_eval;
        cfg.on_eval_ctx = &mlt;
    }
    const char *fam = gt_model_family_of(cfg.model_name);
    if (fam && strcmp(fam, "mlp") == 0) pr.unit = "samples";
    if (fam && strcmp(fam, "convnet") == 0) pr.unit = "images";
    if (!quiet && fam && strcmp(fam, "gpt2") != 0)
        printf("gauntlet train: %s on its synthetic task, batch %d, %d steps, backend %s, %d "
               "rank(s) over %s%s%s\n",
               cfg.model_name, cfg.batch, cfg.steps, cfg.backend, nranks,
               gt_comm_backend_name(comm), cfg.deterministic ? ", deterministic" : "",
               cfg.zero ? ", ZeRO-1" : "");
    else if (!quiet)
        printf("gauntlet train: %s (L%d H%d C%d V%d Vp%d maxT%d), batch %d x seq %d, %d steps, "
               "backend %s, %d rank(s) over %s%s%s\n",
               cfg.model_name, arch.fields[3], arch.fields[4], arch.fields[5], arch.fields[1],
               arch.fields[2], arch.fields[0], cfg.batch, cfg.seq_len, cfg.steps, cfg.backend,
               nranks, gt_comm_backend_name(comm), cfg.deterministic ? ", deterministic" : "",
               cfg.zero ? ", ZeRO-1" : "");

    int rc = GT_EXIT_OK, collective = 0;
    double t_first = 0; /* step time of the first topology (1 rank for efficiencies) */
    int b_first = cfg.batch, n_first = topos[0];
    for (int ti = 0; ti < ntopos && s == GT_OK; ti++) {
        int N = topos[ti];
        gt_comm *sub = NULL;
        if (ntopos > 1 || N != nranks) {
            /* ranks [0, N) train this topology; the others wait at the barrier */
            s = gt_comm_split(comm, rank < N ? 0 : -1, rank, &sub);
            if (s != GT_OK) break;
        } else {
            sub = comm;
        }
        gt_train_config tc = cfg;
        tc.comm = sub;
        /* the first topology's start-up counts from the process start
         * (libraries, arguments, environment); a later one from its own */
        tc.origin_ns = ti == 0 ? gt_process_start_ns() : 0;
        if (weak) tc.batch = cfg.batch * N;
        gt_train_stats st;
        memset(&st, 0, sizeof st);
        {
            char topo[16];
            snprintf(topo, sizeof topo, "%d", N);
            gt_watchdog_report(rank == 0 ? rep : NULL, "train", cfg.model_name, topo,
                               cfg.backend);
            gt_report_topology_layout(rank == 0 ? rep : NULL, N);
        }
        pr.cfg = &tc;
        pr.st = &st;
        pr.said_resume = quiet; /* --quiet: the summary says it */
        pr.rep = report_path && rank == 0 ? rep : NULL;
        pr.res = NULL;
        snprintf(pr.topo, sizeof pr.topo, "%d", N);
        pr.last_write = gt_now_ns() * 1e-9;
        if (sub) {
            if (!quiet && ntopos > 1)
                printf("\n== topology %d rank(s), global batch %d, %d thread(s) per rank ==\n",
                       N, tc.batch, tc.threads);
            gt_mllog_train_block(&mlt, tc.batch, 0, tc.steps);
            s = gt_train_run(&tc, &st);
            gt_mllog_train_block_end(&mlt, st.first_step + st.steps_done);
        }
        if (rank == 0) {
            char topo[16];
            snprintf(topo, sizeof topo, "%d", N);
            /* the result so far (rewritten during the run) becomes the final one */
            gt_result *res = pr.res;
            if (res) gt_result_reset(res);
            else res = gt_report_add_result(rep, "train", cfg.model_name, topo, cfg.backend);
            pr.res = NULL;
            gt_train_record(&tc, &st, res);
            if (s != GT_OK) {
                /* GT_ERR_INVALID is the same on every rank: rank 0 says it */
                gt_result_set_status(res,
                                     s == GT_ERR_UNSUPPORTED ? GT_RESULT_SKIP : GT_RESULT_ERROR,
                                     gt_last_error());
            } else {
                double tail = gt_train_tail_loss(&st, 10);
                if (margin >= 0) {
                    char detail[160];
                    snprintf(detail, sizeof detail,
                             "mean loss of the last 10 steps <= source entropy %.6f + margin "
                             "%.4f",
                             st.entropy, margin);
                    gt_result_check(res, "converged", tail <= st.entropy + margin, tail,
                                    st.entropy + margin, detail);
                }
                if (ti == 0) {
                    t_first = st.ms_per_step;
                    b_first = tc.batch;
                } else if (t_first > 0) {
                    /* strong: same global batch, T(1) / (N T(N)); weak: same
                     * batch per rank, T(1) / T(N); relative to the first topology */
                    double eff = weak ? t_first / st.ms_per_step
                                      : t_first * n_first / ((double)N * st.ms_per_step) *
                                            ((double)tc.batch / b_first);
                    gt_result_metric(res, weak ? "weak_scaling_efficiency"
                                               : "strong_scaling_efficiency",
                                     "fraction", 1, eff, NULL, 0);
                    printf("  %s scaling efficiency vs %d rank(s): %.1f%%\n",
                               weak ? "weak" : "strong", n_first, 100.0 * eff);
                }
                if (gt_result_get_status(res) != GT_RESULT_PASS) rc = GT_EXIT_CHECK;
                print_summary(&tc, &st, N, rc, tail); /* rank 0, also with --quiet */
            }
            if (s == GT_ERR_COMM || s == GT_ERR_TIMEOUT) {
                /* the job broke (a peer, the network): what was planned did not run */
                char why[1200];
                snprintf(why, sizeof why, "the job broke on %d rank(s): %s", N, gt_last_error());
                gt_report_set_incomplete(rep, why);
            } else if (ti == ntopos - 1 || s != GT_OK) {
                /* every topology ran, or an error that ends the run as planned
                 * (recorded as the case's error): the run is over */
                gt_report_finish(rep);
            }
            if (report_path) {
                gt_status ws = gt_report_write(rep);
                if (ws != GT_OK) {
                    fprintf(stderr, "gauntlet train: %s\n", gt_last_error());
                    rc = GT_EXIT_USAGE;
                } else {
                    printf("  report           %s\n", report_path);
                }
            }
        }
        /* an error every rank agreed on (or GT_ERR_INVALID, raised by every
         * rank alike) is said once, by rank 0, and needs no abort */
        if (s != GT_OK && st.collective_error) collective = 1;
        if (s != GT_OK && (rank == 0 || (s != GT_ERR_INVALID && !collective)))
            fprintf(stderr, "gauntlet train: %s [%s]\n", gt_last_error(), gt_status_name(s));
        if (s != GT_OK) rc = GT_EXIT_USAGE;
        gt_train_stats_release(&st);
        if (sub != comm) gt_comm_free(sub);
        if (s == GT_OK && ntopos > 1) s = gt_comm_barrier_idle(comm);
    }
    gt_mllog_train_end(&mlt, rc == GT_EXIT_OK && s == GT_OK);
    gt_mllog_close(ml);
    if (hist) {
        rc = gt_history_finish("train", hist, history_db, report_path, rc);
        gt_history_close(hist);
    }
    gt_env_release(&env);
    gt_signals_report(NULL);
    gt_report_free(rep);
    if (s != GT_OK && s != GT_ERR_INVALID && !collective && nranks > 1) {
        /* a stuck or failed peer (GT_ERR_INVALID is raised by every rank
         * alike, before any work): end the whole job now instead of hanging
         * in the next collective; the report of what finished is written */
        fflush(NULL);
        gt_comm_abort(comm, rc);
    }
    gt_comm_free(comm);
    return rc;
}
