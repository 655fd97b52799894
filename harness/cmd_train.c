/* gauntlet train: the main job. */
#define _GNU_SOURCE /* setenv */
#include <math.h>
#include <stddef.h>
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

/* What the peak is made of (rank 0's): the buffers by kind (the activations
 * with the recompute mode that sized them) and the mode's formula. */
static void print_memory_parts(const gt_train_memory *mp, size_t peak,
                               gt_model_recompute recompute) {
    if (!mp->expected || !peak) return;
    size_t held = mp->params + mp->grads + mp->optim + mp->acts + mp->comm;
    printf("  memory by kind   parameters %.1f, gradients %.1f, optimizer %.1f, activations "
           "%.1f (recompute %s), communication %.1f MiB: %.1f%% of the peak; the mode's "
           "formula %.1f MiB\n",
           mp->params / 1048576.0, mp->grads / 1048576.0, mp->optim / 1048576.0,
           mp->acts / 1048576.0, gt_model_recompute_name(recompute), mp->comm / 1048576.0,
           100.0 * (double)held / (double)peak, mp->expected / 1048576.0);
}

/* Rank 0's bytes per step per collective kind beside its mode's formula. */
static void print_traffic(const gt_train_traffic *tr) {
    int said = 0;
    for (int k = 0; k < GT_COLL_COUNT; k++) {
        if (!tr->step || (!tr->bytes[k] && !tr->formula[k])) continue;
        if (!said++) printf("  traffic/step    ");
        else printf(",");
        printf(" %s %.3f MiB", gt_coll_name((gt_coll)k), tr->bytes[k] / 1048576.0);
        if (tr->has_formula) printf(" (formula %.3f)", tr->formula[k] / 1048576.0);
    }
    if (said) printf(" sent by rank 0 (step %d)\n", tr->step);
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

/* The pipeline's line: the grid, the stages' blocks, the schedule, the
 * bubble measured per stage beside its formula. */
static void print_pipeline(const gt_train_stats *st) {
    const gt_train_grid *g = &st->grid;
    if (g->pp < 2 || !st->bubble_stage) return;
    printf("  pipeline         dp=%d x pp=%d, blocks %s, %d micro-batches, %s; bubble %.3f "
           "(stages",
           g->dp, g->pp, st->pp_split, st->pp_micro_batches, st->pp_schedule,
           st->bubble_measured);
    for (int s = 0; s < g->pp; s++) printf(" %.3f", st->bubble_stage[s]);
    printf("), (P-1)/(M+P-1) = %.3f\n", st->bubble_theory);
}

/* Tensor parallelism's line: the grid, the parameters a rank holds, the
 * group's all-reduces per step beside the formula. */
static void print_tensor(const gt_train_stats *st) {
    const gt_train_grid *g = &st->grid;
    if (g->tp < 2 || !(st->tp_collectives > 0)) return;
    printf("  tensor parallel  dp=%d x tp=%d x pp=%d, %zu of %zu parameters a rank; %.0f "
           "all-reduces, %.0f bytes a step in the group (formula %.0f)\n",
           g->dp, g->tp, g->pp, st->params_per_rank, st->num_params, st->tp_collectives,
           st->tp_bytes, st->tp_bytes_formula);
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
        printf("  start-up         %.0f ms to the first step (%.2f median steps); the first "
               "step %.0f ms: %.2f median steps in all\n",
               st->startup_ms, st->startup_ms / st->ms_per_step, st->first_step_ms,
               (st->startup_ms + st->first_step_ms) / st->ms_per_step);
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
    print_traffic(&st->traffic);
    print_pipeline(st);
    print_tensor(st);
    printf("  peak memory      %.1f MiB in use, %.1f MiB reserved\n",
           st->mem.peak_in_use / 1048576.0, st->mem.peak_reserved / 1048576.0);
    print_memory_parts(&st->mem_parts, st->mem.peak_in_use, cfg->recompute);
    printf("  final params     fnv1a64 %016llx\n", (unsigned long long)st->params_digest);
    if (st->resumed_from[0])
        printf("  resumed from     %s, step %d, data position %lld\n", st->resumed_from,
               st->first_step, (long long)gt_train_data_position(cfg, st->first_step));
    if (st->resume_overrides[0]) printf("  resume changes   %s\n", st->resume_overrides);
    if (st->resume_unchecked[0]) printf("  resume warning   %s\n", st->resume_unchecked);
    printf("  checks           %s\n", rc == GT_EXIT_OK ? "all passed" : "FAILED");
}

/* ---- the options ---------------------------------------------------------------- */

/* What the command line sets: the training config and what is the
 * command's own (report, output, topologies). */
typedef struct train_opts {
    gt_train_config cfg;
    gt_comm_config comm;
    const char *model; /* --model (read before the table: train_preset) */
    const char *report_path, *history_db, *mllog_path;
    int quiet, seq_given, warmup_given, weak;
    double margin; /* --expect-loss-margin; < 0: none */
    int print_every;
    double report_every_s;
    int report_every_steps;
    gt_cli_topologies topos;
} train_opts;

/* An architecture override: `--layers N` becomes the model option layers=N
 * (options by name, models/model.h; the model checks the whole). */
static int set_arch(void *opts, const gt_args *a, const gt_cli_opt *o, const char *v) {
    train_opts *t = opts;
    int n = 0;
    if (!gt_parse_int(a, o->name, v, (long)o->lo, (long)o->hi, &n)) return 0;
    gt_status s = gt_model_option_add(t->cfg.model_options, (const char *)o->data, n);
    if (s != GT_OK) {
        fprintf(stderr, "gauntlet train: %s\n", gt_last_error());
        return 0;
    }
    return 1;
}

static int set_seq(void *opts, const gt_args *a, const gt_cli_opt *o, const char *v) {
    ((train_opts *)opts)->seq_given = 1;
    return gt_cli_store(opts, a, o, v);
}

static int set_warmup(void *opts, const gt_args *a, const gt_cli_opt *o, const char *v) {
    ((train_opts *)opts)->warmup_given = 1;
    return gt_cli_store(opts, a, o, v);
}

static int set_precision(void *opts, const gt_args *a, const gt_cli_opt *o, const char *v) {
    (void)a, (void)o;
    gt_dtype dt = GT_DTYPE_FP32;
    if (v && (gt_dtype_parse(v, &dt) != GT_OK ||
              (dt != GT_DTYPE_FP32 && dt != GT_DTYPE_BF16 && dt != GT_DTYPE_FP16)))
        return !gt_usage_error("train", "--precision '%s': use fp32, bf16 or fp16", v);
    ((train_opts *)opts)->cfg.precision = dt;
    return 1;
}

static int set_recompute(void *opts, const gt_args *a, const gt_cli_opt *o, const char *v) {
    (void)a, (void)o;
    if (v && gt_model_recompute_parse(v, &((train_opts *)opts)->cfg.recompute) != GT_OK)
        return !gt_usage_error("train", "--recompute '%s': use none or block", v);
    return 1;
}

static int set_data_order(void *opts, const gt_args *a, const gt_cli_opt *o, const char *v) {
    (void)a, (void)o;
    if (v && gt_data_order_parse(v, &((train_opts *)opts)->cfg.data_order) != GT_OK)
        return !gt_usage_error("train", "--data-order '%s': use sequential or shuffled", v);
    return 1;
}

static int set_resume_allow(void *opts, const gt_args *a, const gt_cli_opt *o, const char *v) {
    (void)a, (void)o;
    if (v && !resume_allow_ok(v)) return 0;
    ((train_opts *)opts)->cfg.resume_allow = v;
    return 1;
}

static int set_no_prefetch(void *opts, const gt_args *a, const gt_cli_opt *o, const char *v) {
    (void)a, (void)o, (void)v;
    ((train_opts *)opts)->cfg.prefetch = 0;
    return 1;
}

static int set_profile(void *opts, const gt_args *a, const gt_cli_opt *o, const char *v) {
    (void)a, (void)o;
    train_opts *t = opts;
    t->cfg.no_profile = v && strcmp(v, "off") == 0;
    t->cfg.profile_on = v && strcmp(v, "on") == 0;
    if (v && !t->cfg.no_profile && !t->cfg.profile_on)
        return !gt_usage_error("train", "--profile '%s': use on or off", v);
    return 1;
}

static int set_layout(void *opts, const gt_args *a, const gt_cli_opt *o, const char *v) {
    (void)a, (void)o;
    train_opts *t = opts;
    gt_status s = gt_train_grid_parse(v, &t->cfg.grid);
    if (s != GT_OK) return !gt_usage_error("train", "%s", gt_last_error());
    return 1;
}

static int set_schedule(void *opts, const gt_args *a, const gt_cli_opt *o, const char *v) {
    (void)a, (void)o;
    if (gt_train_pp_schedule_parse(v, &((train_opts *)opts)->cfg.schedule) != GT_OK)
        return !gt_usage_error("train", "--schedule '%s': use gpipe or 1f1b", v ? v : "");
    return 1;
}

#define OFF(field) offsetof(train_opts, field)
#define SECTION(text) {.name = text, .kind = GT_CLI_SECTION}
#define ARCH(flag, key, lo, hi, text)                                                       \
    {flag, NULL, "N", GT_CLI_INT, 0, lo, hi, set_arch, key, text}
static const gt_cli_opt train_table[] = {
    SECTION("model:"),
    {"--model", NULL, "NAME", GT_CLI_STRING, OFF(model), .help =
        "gpt2-tiny (default), gpt2-3m, gpt2-124m; mlp-tiny,\n"
        "mlp-tiny-relu, mlp-small, convnet-tiny, resnet-small\n"
        "train on their synthetic task (docs/models.md)"},
    ARCH("--layers", "layers", 1, 1024, "gpt2: transformer blocks instead of the preset's"),
    ARCH("--heads", "heads", 1, 1024, "gpt2: attention heads instead of the preset's"),
    ARCH("--channels", "channels", 1, 65536, "gpt2: channels instead of the preset's"),
    ARCH("--vocab", "vocab", 2, 1 << 24, "gpt2: vocabulary instead of the preset's"),
    ARCH("--padded-vocab", "padded_vocab", 2, 1 << 24,
         "gpt2: padded vocabulary instead of the preset's"),
    ARCH("--max-seq", "max_seq", 1, 1 << 20, "gpt2: max_seq_len instead of the preset's"),
    {"--init-from", NULL, "llmc:FILE", GT_CLI_STRING, OFF(cfg.init_from), .help =
        "start from an llm.c model file (fp32, version 3); without\n"
        "--model the file's config is used"},
    {"--save-final", NULL, "llmc:FILE", GT_CLI_STRING, OFF(cfg.save_final), .help =
        "gpt2: the final parameters as an llm.c model file (the\n"
        "one-rank layout whatever --layout; --init-from reads it)"},
    SECTION("training:"),
    {"--batch", NULL, "B", GT_CLI_INT, OFF(cfg.batch), 1, 1 << 20, .help =
        "global batch, sequences per step (default 8)"},
    {"--seq", NULL, "T", GT_CLI_INT, OFF(cfg.seq_len), 1, 1 << 20, set_seq, .help =
        "sequence length (default: 64, or the model's max_seq_len\n"
        "when that is shorter)"},
    {"--steps", NULL, "N", GT_CLI_INT, OFF(cfg.steps), 1, 100000000, .help =
        "optimizer steps (default 200)"},
    {"--lr", NULL, "X", GT_CLI_FLOAT, OFF(cfg.opt.lr), 0.0, 10.0, .help =
        "AdamW peak learning rate (default 1e-3)"},
    {"--warmup", NULL, "N", GT_CLI_INT, OFF(cfg.opt.warmup_steps), 0, 100000000, set_warmup,
        .help = "linear warm-up steps (default 10)"},
    {"--lr-min-frac", NULL, "X", GT_CLI_FLOAT, OFF(cfg.opt.lr_min_frac), 0.0, 1.0, .help =
        "the cosine decay's end, a fraction of --lr (default 0.1)"},
    {"--weight-decay", NULL, "X", GT_CLI_FLOAT, OFF(cfg.opt.weight_decay), 0.0, 10.0, .help =
        "AdamW weight decay (default 0)"},
    {"--grad-clip", NULL, "X", GT_CLI_FLOAT, OFF(cfg.opt.grad_clip), 0.0, 1e9, .help =
        "clip the global gradient norm to X (default 1.0)"},
    {"--beta1", NULL, "X", GT_CLI_FLOAT, OFF(cfg.opt.beta1), 0.0, 0.999999, .help =
        "AdamW beta1 (default 0.9)"},
    {"--beta2", NULL, "X", GT_CLI_FLOAT, OFF(cfg.opt.beta2), 0.0, 0.999999, .help =
        "AdamW beta2 (default 0.95)"},
    {"--eps", NULL, "X", GT_CLI_FLOAT, OFF(cfg.opt.eps), 1e-30, 1.0, .help =
        "AdamW epsilon (default 1e-8)"},
    {"--seed", NULL, "N", GT_CLI_U64, OFF(cfg.seed), .help =
        "initialisation and data order (default 1337)"},
    {"--eval-samples", NULL, "N", GT_CLI_INT, OFF(cfg.eval_samples), 0, 1 << 24, .help =
        "mlp / convnet: after training, the loss on N unseen\n"
        "samples in evaluation mode (BatchNorm's running\n"
        "statistics) against the Bayes predictor's (default 0)"},
    {"--eval-every", NULL, "K", GT_CLI_INT, OFF(cfg.eval_every), 1, 1 << 30, .help =
        "also after every K steps: the held-out loss curve"},
    {"--target-gap", NULL, "X", GT_CLI_DOUBLE, OFF(cfg.target_gap), 1e-9, 100.0, .help =
        "with --eval-every: steps and training time until the\n"
        "held-out loss is within X of the Bayes predictor's\n"
        "(time to target, as MLPerf times to a quality target)"},
    {"--precision", NULL, "P", .set = set_precision, .help =
        "fp32 (default), bf16 or fp16: storage of activations,\n"
        "weights (a compute copy) and gradients; master weights\n"
        "and AdamW state stay fp32. fp16 adds dynamic loss\n"
        "scaling (overflowing steps are skipped and counted).\n"
        "bf16/fp16 need a backend that stores them (ref, cuda)"},
    {"--recompute", NULL, "none|block", .set = set_recompute, .help =
        "what the forward keeps for the backward: none\n"
        "(default) every activation; block each block's input\n"
        "only, the block run again in the backward: the same\n"
        "weights bitwise, activations of one block instead of L,\n"
        "one more forward of the blocks (docs/distributed.md)"},
    SECTION("data:"),
    {"--data", NULL, "FILE", GT_CLI_STRING, OFF(cfg.data_path), .help =
        "token file (gauntlet or llm.c format); default: synthetic"},
    {"--data-order", NULL, "ORDER", .set = set_data_order, .help =
        "sequential (default) or shuffled"},
    {"--synth-tokens", NULL, "N", GT_CLI_I64, OFF(cfg.synth_tokens), 2, (double)((int64_t)1 << 34),
        .help = "synthetic source length (default: enough for every step)"},
    {"--synth-branch", NULL, "N", GT_CLI_INT, OFF(cfg.synth_branch), 1, 1 << 24, .help =
        "successors per state of the synthetic chain (default 4)"},
    SECTION("data parallel (launch with mpirun -np N or srun; --batch stays the global batch):"),
    {"--micro-batch", NULL, "M", GT_CLI_INT, OFF(cfg.micro_batch), 1, 1 << 20, .help =
        "sequences per forward/backward on a rank (default: all of\n"
        "the rank's share, batch / ranks)"},
    {"--micro-batches", NULL, "N", GT_CLI_INT, OFF(cfg.micro_batches), 1, 1 << 20, .help =
        "micro-batches per step on a replica: gradient accumulation,\n"
        "or the pipeline's M (the share split evenly; default: one\n"
        "sequence each with pp or --deterministic)"},
    {"--deterministic", NULL, NULL, GT_CLI_FLAG, OFF(cfg.deterministic), .help =
        "bitwise the same weights on 1, 2, 4 ... ranks: micro-batch\n"
        "gradients summed by one fixed binary tree (power-of-two\n"
        "ranks and micro-batches per rank)"},
    {"--zero", NULL, "0|1|2|3", GT_CLI_INT, OFF(cfg.zero), 0, 3, .help =
        "1: ZeRO-1, AdamW state sharded across ranks; 2: ZeRO-2,\n"
        "the summed gradients too (a reduce per bucket to its shard's\n"
        "rank, overlapped with the backward); 3: ZeRO-3 (FSDP),\n"
        "the weights gathered unit by unit before each block's forward\n"
        "and backward, the next unit's gather prefetched"},
    {"--layout", NULL, "dp=D,tp=T,pp=P", .set = set_layout, .help =
        "the rank grid: D data-parallel replicas of a pipeline of P\n"
        "stages, each stage a tensor-parallel group of T ranks\n"
        "(D x T x P = the ranks; gpt2, cpu/ref over mpi; tensor\n"
        "groups innermost, then stages: neighbouring ranks)\n"
        "(docs/distributed.md, \"Pipeline parallel\", \"Tensor\n"
        "parallelism\")"},
    {"--schedule", NULL, "1f1b|gpipe", .set = set_schedule, .help =
        "the pipeline's schedule (default 1f1b)"},
    {"--bucket-mb", NULL, "X", GT_CLI_DOUBLE, OFF(cfg.bucket_mb), 0.001, 65536.0, .help =
        "gradient all-reduce bucket size (default 25)"},
    {"--check-consistency", NULL, "N", GT_CLI_INT, OFF(cfg.check_every), 0, 1 << 30, .help =
        "compare a hash of the parameters across ranks every N\n"
        "steps (always once after initialisation)"},
    {"--topologies", NULL, "LIST", .off = OFF(topos), .set = gt_cli_set_topologies, .help =
        "train on sub-communicators of these sizes in turn (e.g.\n"
        "1,2,4; each <= the job's ranks) and report scaling\n"
        "efficiency against the first: strong (same global batch)"},
    {"--weak", NULL, NULL, GT_CLI_FLAG, OFF(weak), .help =
        "weak scaling instead: --batch is per rank"},
    {"--comm", NULL, "NAME", GT_CLI_STRING, OFF(comm.backend), .help =
        "auto (default: mpi when launched by mpirun/srun), self, mpi,\n"
        "nccl (cuda backend, one GPU per rank; MPI bootstraps it)"},
    {"--comm-timeout", NULL, "S", GT_CLI_DOUBLE, OFF(comm.timeout_s), 0.0, 1e7, .help =
        "watchdog deadline of every blocking collective (default 300)"},
    SECTION("execution:"),
    {"--backend", NULL, "NAME", GT_CLI_STRING, OFF(cfg.backend), .help =
        "cpu (default), ref, cuda"},
    {"--threads", NULL, "N", GT_CLI_INT, OFF(cfg.threads), 1, 4096, .help =
        "cpu threads (default: the cores / ranks on this node)"},
    {"--no-prefetch", NULL, NULL, .set = set_no_prefetch, .help =
        "load batches on the training thread"},
    {"--peak-gflops", NULL, "X", GT_CLI_DOUBLE, OFF(cfg.peak_gflops), 1e-3, 1e9, .help =
        "MFU reference instead of measuring SGEMM"},
    SECTION("checkpoints (docs/formats.md, \"Checkpoints\"):"),
    {"--checkpoint-dir", NULL, "DIR", GT_CLI_STRING, OFF(cfg.checkpoint_dir), .help =
        "where checkpoints go (created; checked writable first)"},
    {"--checkpoint-every", NULL, "K", GT_CLI_INT, OFF(cfg.checkpoint_every), 1, 1 << 30, .help =
        "a checkpoint after every K steps: DIR/ckpt_<step>.gtck, or\n"
        "with --zero 1, 2 or 3 a folder DIR/ckpt_<step>/ (one file per rank)"},
    {"--resume", NULL, "PATH", GT_CLI_STRING, OFF(cfg.resume), .help =
        "continue from a checkpoint file, a sharded folder, or DIR\n"
        "(its latest complete checkpoint): bitwise the run that was\n"
        "not interrupted; same settings, same --steps"},
    {"--resume-allow", NULL, "LIST", .set = set_resume_allow, .help =
        "fields that may differ from the checkpoint's run (e.g.\n"
        "data,steps; the refusal names the field): the changes\n"
        "are printed and recorded in the report"},
    {"--stop-after", NULL, "N", GT_CLI_INT, OFF(cfg.stop_after), 1, 100000000, .help =
        "end after step N as an interruption would (the schedule\n"
        "still spans --steps)"},
    SECTION("output:"),
    {"--report", NULL, "FILE", GT_CLI_STRING, OFF(report_path), .help =
        "write the JSON report there; until the run ends it says it\n"
        "is incomplete (summary.complete false)"},
    {"--report-every", NULL, "S", GT_CLI_DOUBLE, OFF(report_every_s), 0.0, 1e7, .help =
        "rewrite the report every S seconds of training with the\n"
        "series so far (default 10; 0: only at the end), between\n"
        "steps, outside their timing"},
    {"--report-every-steps", NULL, "N", GT_CLI_INT, OFF(report_every_steps), 0, 1 << 30, .help =
        "also after every N steps (default 0: off)"},
    {"--history", NULL, "DB", GT_CLI_STRING, OFF(history_db), .help =
        "record the report in this run history (SQLite, created when\n"
        "absent; gauntlet history DB lists it; needs --report)"},
    {"--mllog", NULL, "FILE", GT_CLI_STRING, OFF(mllog_path), .help =
        "MLPerf-style log lines (:::MLLOG {...}): init, run, blocks,\n"
        "evaluations (eval_accuracy: the held-out loss), submission"},
    {"--profile", NULL, "on|off", .set = set_profile, .help =
        "the per-op profile in the report (docs/profile.md); by\n"
        "default it stops itself when its overhead estimate\n"
        "exceeds 2% of the step, on keeps it, off leaves it out"},
    {"--trace", NULL, "FILE", GT_CLI_STRING, OFF(cfg.trace_path), .help =
        "the steps as Chrome trace event JSON (chrome://tracing,\n"
        "Perfetto); on several ranks one file per rank, FILE.rankN.json"},
    {"--inject-slowdown", NULL, "OP:F", GT_CLI_STRING, OFF(cfg.inject_slowdown), .help =
        "op OP takes F times as long in every step (gate tests)"},
    {"--print-every", NULL, "N", GT_CLI_INT, OFF(print_every), 0, 1 << 30, .help =
        "print every Nth step (default 1; 0: none)"},
    {"--expect-loss-margin", NULL, "X", GT_CLI_DOUBLE, OFF(margin), 0.0, 100.0, .help =
        "check: mean loss of the last 10 steps <= source entropy + X\n"
        "(synthetic data only)"},
    {"--quiet", NULL, NULL, GT_CLI_FLAG, OFF(quiet), .help = "only the summary"},
    {.name = NULL},
};

static const gt_cli train_cli = {
    .cmd = "train",
    .usage = "usage: gauntlet train [options]\n\n",
    .opts = train_table,
};

/* ---- the command ---------------------------------------------------------------- */

/* The preset first, so that overrides apply to it whatever their order;
 * --init-from without --model: the file's config is the base. GT_EXIT_OK
 * to go on. */
static int train_preset(int argc, char **argv, gt_train_config *cfg) {
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--model") == 0 && i + 1 < argc) {
            snprintf(cfg->model_name, sizeof cfg->model_name, "%s",
                     gt_cli_model_name("train", argv[i + 1]));
            gt_model_arch arch;
            gt_status s = gt_model_arch_of(argv[i + 1], NULL, &arch);
            if (s != GT_OK) return gt_fail("train", s);
        } else if (strncmp(argv[i], "--model=", 8) == 0) {
            snprintf(cfg->model_name, sizeof cfg->model_name, "%s",
                     gt_cli_model_name("train", argv[i] + 8));
            gt_model_arch arch;
            gt_status s = gt_model_arch_of(argv[i] + 8, NULL, &arch);
            if (s != GT_OK) return gt_fail("train", s);
        }
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
            gt_status s = gt_model_describe_file(init, cfg->model_name, cfg->model_options);
            if (s != GT_OK) return gt_fail("train", s);
        }
    }
    return GT_EXIT_OK;
}

/* What needs the options together; the architecture for the banner (a bad
 * one is refused by gt_train_run, naming the field). GT_EXIT_OK to go on. */
static int train_check(train_opts *o, gt_model_arch *arch) {
    gt_train_config *cfg = &o->cfg;
    (void)gt_model_arch_of(cfg->model_name, cfg->model_options, arch);
    int gpt2 = arch->family && strcmp(arch->family, "gpt2") == 0;
    if (!o->seq_given && gpt2) cfg->seq_len = arch->max_T < 64 ? arch->max_T : 64;
    if (cfg->checkpoint_every > 0 && !cfg->checkpoint_dir)
        return gt_usage_error("train", "--checkpoint-every needs --checkpoint-dir DIR");
    if (cfg->trace_path && cfg->no_profile)
        return gt_usage_error("train", "--trace draws the profile's timings: drop --profile off");
    if (cfg->trace_path && o->topos.n > 1)
        return gt_usage_error("train", "--trace with several --topologies: each would replace "
                                       "the last; trace one topology at a time");
    if (cfg->inject_slowdown) {
        char op[64];
        double f = 0;
        int known = 0;
        if (gt_parse_slowdown(cfg->inject_slowdown, op, sizeof op, &f) == GT_OK)
            for (int k = 0; k < GT_OP_COUNT; k++) known |= strcmp(gt_op_name((gt_op)k), op) == 0;
        if (!known)
            return gt_usage_error("train", "--inject-slowdown '%s': expected OP:FACTOR, OP an "
                                           "op of the op table (gauntlet list) and 1 < FACTOR "
                                           "<= 100, e.g. matmul_bwd:3",
                                  cfg->inject_slowdown);
    }
    if (cfg->checkpoint_dir && cfg->checkpoint_every == 0)
        return gt_usage_error("train", "--checkpoint-dir without --checkpoint-every K writes "
                                       "nothing: add --checkpoint-every");
    if ((cfg->checkpoint_dir || cfg->resume) && o->topos.n > 0)
        return gt_usage_error("train", "checkpoints and --resume are for one training run: "
                                       "drop --topologies");
    if (cfg->grid.pp > 1 && o->topos.n > 0)
        return gt_usage_error("train", "--layout with --topologies: a layout is for the job's "
                                       "ranks; train one layout at a time");
    if (o->history_db && !o->report_path)
        return gt_usage_error("train", "--history %s needs --report FILE: the report is what is "
                                       "recorded",
                              o->history_db);
    if (o->margin >= 0 && cfg->data_path)
        return gt_usage_error("train", "--expect-loss-margin needs the synthetic source (its "
                                       "entropy is known); drop --data or the margin");
    /* the cosine decay spans the run; the default warm-up shrinks to fit a
     * short run, an explicit one must fit */
    cfg->opt.total_steps = cfg->steps;
    if (cfg->opt.warmup_steps >= cfg->steps) {
        if (o->warmup_given)
            return gt_usage_error("train", "--warmup %d must be shorter than --steps %d",
                                  cfg->opt.warmup_steps, cfg->steps);
        cfg->opt.warmup_steps = cfg->steps - 1;
    }
    return GT_EXIT_OK;
}

/* One run of the command: its options, its job, its report. */
typedef struct train_job {
    train_opts o;
    gt_model_arch arch;
    gt_comm *comm;
    int rank, nranks;
    gt_report *rep;
    gt_env env;
    struct gt_history *hist;
    gt_mllog *ml;
    gt_mllog_train mlt;
    printer pr;
    int rc, collective;
    double t_first; /* step time of the first topology (1 rank for efficiencies) */
    int b_first, n_first;
} train_job;

/* The world communicator and the ranks the topologies need (relaunching
 * under mpirun when one process asked for more); threads per rank.
 * GT_EXIT_OK to go on; otherwise the communicator is freed. */
static int train_world(train_job *j, char **argv) {
    train_opts *o = &j->o;
    gt_status s = gt_comm_world(&o->comm, &j->comm);
    if (s != GT_OK) return gt_fail("train", s);
    int rank = j->rank = gt_comm_rank(j->comm), nranks = j->nranks = gt_comm_size(j->comm);
    o->cfg.comm = j->comm;
    if (o->topos.n == 0) o->topos.v[o->topos.n++] = nranks;
    int most = 1;
    for (int i = 0; i < o->topos.n; i++) most = o->topos.v[i] > most ? o->topos.v[i] : most;
    if (most > nranks && nranks == 1 && gt_launcher_available() && !getenv("GT_NO_RELAUNCH")) {
        /* as gauntlet run does: one process asked for more ranks */
        gt_comm_free(j->comm);
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
        gt_comm_free(j->comm);
        return GT_EXIT_USAGE;
    }
    if (rank != 0) {
        o->quiet = 1;
        o->report_path = NULL; /* rank 0 writes the report */
        o->history_db = o->mllog_path = NULL;
    }
    /* ranks on one node share its cores; oversubscribed OpenMP and OpenBLAS
     * threads cost far more than they give. With several topologies every
     * one gets the cores per rank of the largest: scaling efficiency then
     * compares N ranks with N times one rank. */
    if (o->cfg.threads == 0 && o->topos.n > 1)
        o->cfg.threads = gt_default_threads(most);
    else if (o->cfg.threads == 0 && nranks > 1)
        o->cfg.threads = gt_default_threads(nranks);
    if (o->quiet) j->pr.every = 0;
    return GT_EXIT_OK;
}

/* The report (written once now: an unwritable destination fails before any
 * training), the environment, the history database and the mllog file.
 * GT_EXIT_OK to go on; otherwise all of it and the communicator are freed. */
static int train_report_open(train_job *j, int argc, char **argv) {
    train_opts *o = &j->o;
    int rank = j->rank;
    gt_status s = gt_report_new(o->report_path, argc + 1, argv - 1, &j->rep);
    if (s != GT_OK) {
        gt_comm_free(j->comm);
        return gt_fail("train", s);
    }
    /* SIGTERM / SIGINT: the report marked incomplete with the signal (signals.h) */
    gt_signals_report(j->rep);
    if (rank == 0) {
        /* a self communicator here means one process that launches nobody */
        int no_mpi = strcmp(gt_comm_backend_name(j->comm), "self") == 0;
        gt_env_collect_job(&j->env, no_mpi ? GT_ENV_NO_MPI : 0);
        gt_report_set_env(j->rep, &j->env, NULL);
    }
    gt_report_threads(rank == 0 ? j->rep : NULL, o->cfg.threads);
    gt_report_binding(rank == 0 ? j->rep : NULL, j->comm);
    gt_report_job(rank == 0 ? j->rep : NULL, j->comm);
    const gt_train_grid *g = &o->cfg.grid;
    gt_train_grid rg;
    if (rank == 0 && (g->pp > 1 || g->tp > 1) &&
        gt_train_grid_sizes(g, j->nranks, &rg) == GT_OK) {
        /* the grid the trainer will check (and refuse when dp does not fit) */
        char grid[64];
        gt_train_grid_format(&rg, grid, sizeof grid);
        gt_report_set_job_grid(j->rep, grid, rg.tp, rg.pp);
    }
    gt_error_clear();
    int early = GT_EXIT_OK;
    if (!gt_history_begin("train", o->history_db, o->report_path, &j->hist))
        early = GT_EXIT_USAGE;
    else if (o->mllog_path && gt_mllog_open(o->mllog_path, &j->ml) != GT_OK)
        early = gt_fail("train", GT_ERR_IO);
    else if (o->report_path && (s = gt_report_write(j->rep)) != GT_OK)
        early = gt_fail("train", s);
    if (early != GT_EXIT_OK) {
        gt_history_close(j->hist);
        gt_mllog_close(j->ml);
        gt_env_release(&j->env);
        gt_signals_report(NULL);
        gt_report_free(j->rep);
        gt_comm_free(j->comm);
    }
    return early;
}

/* The mllog run and the line that says what trains where. */
static void train_banner(train_job *j) {
    gt_train_config *cfg = &j->o.cfg;
    const gt_model_arch *arch = &j->arch;
    char platform[600];
    snprintf(platform, sizeof platform, "%s, %s", j->env.host, j->env.cpu_model);
    gt_mllog_train_begin(&j->mlt, j->ml, cfg, j->nranks, platform);
    if (j->ml) {
        cfg->on_eval = gt_mllog_train_eval;
        cfg->on_eval_ctx = &j->mlt;
    }
    const char *fam = gt_model_family_of(cfg->model_name);
    if (fam && strcmp(fam, "mlp") == 0) j->pr.unit = "samples";
    if (fam && strcmp(fam, "convnet") == 0) j->pr.unit = "images";
    if (j->o.quiet) return;
    static const char *const zeros[] = {"", ", ZeRO-1", ", ZeRO-2", ", ZeRO-3"};
    const char *zero = cfg->zero >= 0 && cfg->zero <= 3 ? zeros[cfg->zero] : "";
    if (cfg->grid.pp > 1)
        printf("gauntlet train: layout dp=%d x pp=%d (pipeline stages on neighbouring ranks), "
               "schedule %s\n",
               j->nranks / cfg->grid.pp, cfg->grid.pp, gt_train_pp_schedule_name(cfg->schedule));
    if (fam && strcmp(fam, "gpt2") != 0)
        printf("gauntlet train: %s on its synthetic task, batch %d, %d steps, backend %s, %d "
               "rank(s) over %s%s%s\n",
               cfg->model_name, cfg->batch, cfg->steps, cfg->backend, j->nranks,
               gt_comm_backend_name(j->comm), cfg->deterministic ? ", deterministic" : "", zero);
    else
        printf("gauntlet train: %s (L%d H%d C%d V%d Vp%d maxT%d), batch %d x seq %d, %d steps, "
               "backend %s, %d rank(s) over %s%s%s%s\n",
               cfg->model_name, arch->fields[3], arch->fields[4], arch->fields[5],
               arch->fields[1], arch->fields[2], arch->fields[0], cfg->batch, cfg->seq_len,
               cfg->steps, cfg->backend, j->nranks, gt_comm_backend_name(j->comm),
               cfg->deterministic ? ", deterministic" : "", zero,
               cfg->recompute == GT_MODEL_RECOMPUTE_BLOCK ? ", recompute block" : "");
}

/* Rank 0 after topology ti (N ranks) trained: its result (the one rewritten
 * during the run becomes the final one), the convergence check, scaling
 * efficiency against the first topology, the summary, the report. */
static void train_record(train_job *j, int ti, int N, const gt_train_config *tc,
                         gt_train_stats *st, gt_status s) {
    const train_opts *o = &j->o;
    char topo[16];
    snprintf(topo, sizeof topo, "%d", N);
    gt_result *res = j->pr.res;
    if (res) gt_result_reset(res);
    else res = gt_report_add_result(j->rep, "train", o->cfg.model_name, topo, o->cfg.backend);
    j->pr.res = NULL;
    gt_train_record(tc, st, res);
    if (s != GT_OK) {
        /* GT_ERR_INVALID is the same on every rank: rank 0 says it */
        gt_result_set_status(res, s == GT_ERR_UNSUPPORTED ? GT_RESULT_SKIP : GT_RESULT_ERROR,
                             gt_last_error());
    } else {
        double tail = gt_train_tail_loss(st, 10);
        if (o->margin >= 0) {
            char detail[160];
            snprintf(detail, sizeof detail,
                     "mean loss of the last 10 steps <= source entropy %.6f + margin %.4f",
                     st->entropy, o->margin);
            gt_result_check(res, "converged", tail <= st->entropy + o->margin, tail,
                            st->entropy + o->margin, detail);
        }
        if (ti == 0) {
            j->t_first = st->ms_per_step;
            j->b_first = tc->batch;
        } else if (j->t_first > 0) {
            /* strong: same global batch, T(1) / (N T(N)); weak: same batch per
             * rank, T(1) / T(N); relative to the first topology */
            double eff = o->weak ? j->t_first / st->ms_per_step
                                 : j->t_first * j->n_first / ((double)N * st->ms_per_step) *
                                       ((double)tc->batch / j->b_first);
            gt_result_metric(res, o->weak ? "weak_scaling_efficiency"
                                          : "strong_scaling_efficiency",
                             "fraction", 1, eff, NULL, 0);
            printf("  %s scaling efficiency vs %d rank(s): %.1f%%\n", o->weak ? "weak" : "strong",
                   j->n_first, 100.0 * eff);
        }
        if (gt_result_get_status(res) != GT_RESULT_PASS) j->rc = GT_EXIT_CHECK;
        print_summary(tc, st, N, j->rc, tail); /* rank 0, also with --quiet */
    }
    if (s == GT_ERR_COMM || s == GT_ERR_TIMEOUT) {
        /* the job broke (a peer, the network): what was planned did not run */
        char why[1200];
        snprintf(why, sizeof why, "the job broke on %d rank(s): %s", N, gt_last_error());
        gt_report_set_incomplete(j->rep, why);
    } else if (ti == o->topos.n - 1 || s != GT_OK) {
        /* every topology ran, or an error that ends the run as planned
         * (recorded as the case's error): the run is over */
        gt_report_finish(j->rep);
    }
    if (o->report_path) {
        gt_status ws = gt_report_write(j->rep);
        if (ws != GT_OK) {
            fprintf(stderr, "gauntlet train: %s\n", gt_last_error());
            j->rc = GT_EXIT_USAGE;
        } else {
            printf("  report           %s\n", o->report_path);
        }
    }
}

/* Topology ti: ranks [0, N) train on their sub-communicator (the others
 * wait at the barrier), rank 0 records it. */
static gt_status train_topology(train_job *j, int ti) {
    const train_opts *o = &j->o;
    int N = o->topos.v[ti], rank = j->rank;
    gt_comm *sub = j->comm;
    if (o->topos.n > 1 || N != j->nranks)
        GT_TRY(gt_comm_split(j->comm, rank < N ? 0 : -1, rank, &sub));
    gt_train_config tc = o->cfg;
    tc.comm = sub;
    /* the first topology's start-up counts from the process start
     * (libraries, arguments, environment); a later one from its own */
    tc.origin_ns = ti == 0 ? gt_process_start_ns() : 0;
    if (o->weak) tc.batch = o->cfg.batch * N;
    gt_train_stats st;
    memset(&st, 0, sizeof st);
    printer *pr = &j->pr;
    snprintf(pr->topo, sizeof pr->topo, "%d", N);
    gt_watchdog_report(rank == 0 ? j->rep : NULL, "train", o->cfg.model_name, pr->topo,
                       o->cfg.backend);
    gt_report_topology_layout(rank == 0 ? j->rep : NULL, N);
    pr->cfg = &tc;
    pr->st = &st;
    pr->said_resume = o->quiet; /* --quiet: the summary says it */
    pr->rep = o->report_path && rank == 0 ? j->rep : NULL;
    pr->res = NULL;
    pr->last_write = gt_now_ns() * 1e-9;
    gt_status s = GT_OK;
    if (sub) {
        if (!o->quiet && o->topos.n > 1)
            printf("\n== topology %d rank(s), global batch %d, %d thread(s) per rank ==\n", N,
                   tc.batch, tc.threads);
        gt_mllog_train_block(&j->mlt, tc.batch, 0, tc.steps);
        s = gt_train_run(&tc, &st);
        gt_mllog_train_block_end(&j->mlt, st.first_step + st.steps_done);
    }
    if (rank == 0) train_record(j, ti, N, &tc, &st, s);
    /* an error every rank agreed on (or GT_ERR_INVALID, raised by every
     * rank alike) is said once, by rank 0, and needs no abort */
    if (s != GT_OK && st.collective_error) j->collective = 1;
    if (s != GT_OK && (rank == 0 || (s != GT_ERR_INVALID && !j->collective)))
        fprintf(stderr, "gauntlet train: %s [%s]\n", gt_last_error(), gt_status_name(s));
    if (s != GT_OK) j->rc = GT_EXIT_USAGE;
    gt_train_stats_release(&st);
    if (sub != j->comm) gt_comm_free(sub);
    if (s == GT_OK && o->topos.n > 1) s = gt_comm_barrier_idle(j->comm);
    return s;
}

int gt_cmd_train(int argc, char **argv) {
    train_job j;
    memset(&j, 0, sizeof j);
    train_opts *o = &j.o;
    o->cfg = gt_train_defaults();
    o->comm = gt_comm_defaults();
    o->margin = -1;
    o->print_every = 1;
    o->report_every_s = 10;
    int rc = train_preset(argc, argv, &o->cfg);
    if (rc != GT_EXIT_OK) return rc;
    if (!gt_cli_parse(&train_cli, argc, argv, o, &rc)) return rc;
    if ((rc = train_check(o, &j.arch)) != GT_EXIT_OK) return rc;
    j.pr = (printer){.every = o->print_every, .every_s = o->report_every_s,
                     .every_steps = o->report_every_steps};
    o->cfg.on_step = print_step;
    o->cfg.on_step_ctx = &j.pr;
    if ((rc = train_world(&j, argv)) != GT_EXIT_OK) return rc;
    if ((rc = train_report_open(&j, argc, argv)) != GT_EXIT_OK) return rc;
    train_banner(&j);
    j.rc = GT_EXIT_OK;
    j.b_first = o->cfg.batch;
    j.n_first = o->topos.v[0];
    gt_status s = GT_OK;
    for (int ti = 0; ti < o->topos.n && s == GT_OK; ti++) s = train_topology(&j, ti);
    rc = j.rc;
    gt_mllog_train_end(&j.mlt, rc == GT_EXIT_OK && s == GT_OK);
    gt_mllog_close(j.ml);
    if (j.hist) {
        rc = gt_history_finish("train", j.hist, o->history_db, o->report_path, rc);
        gt_history_close(j.hist);
    }
    gt_env_release(&j.env);
    gt_signals_report(NULL);
    gt_report_free(j.rep);
    if (s != GT_OK && s != GT_ERR_INVALID && !j.collective && j.nranks > 1) {
        /* a stuck or failed peer (GT_ERR_INVALID is raised by every rank
         * alike, before any work): end the whole job now instead of hanging
         * in the next collective; the report of what finished is written */
        fflush(NULL);
        gt_comm_abort(j.comm, rc);
    }
    gt_comm_free(j.comm);
    return rc;
}
