/* The set-up of a training run (train_impl.h): the options checked, the
 * ranks and the shapes of a step, then backend, model, data, layout,
 * gradient sync, schedule and the starting parameters; and gt_train_close,
 * which frees all of it. */
#include "suites/trainer/train.h"
#include "suites/trainer/train_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/ops.h"
#include "engine/timer.h"
#include "kernels/registry.h"
#include "suites/probe.h"
#include "suites/suite.h"

/* mlp and convnet read dense samples from their synthetic task
 * (models/tasks.h); gpt2 reads tokens. */
int gt_train_dense(const gt_train_config *cfg) {
    const char *f = gt_model_family_of(cfg->model_name);
    return f && strcmp(f, "gpt2") != 0;
}

static int is_pow2(int x) { return x > 0 && (x & (x - 1)) == 0; }

/* The options that need no communicator: every rank refuses them alike. */
static gt_status check_options(const gt_train_config *cfg) {
    if (cfg->steps < 1) return GT_ERR(GT_ERR_INVALID, "--steps must be >= 1, got %d", cfg->steps);
    if (cfg->batch < 1) return GT_ERR(GT_ERR_INVALID, "--batch must be >= 1, got %d", cfg->batch);
    int dense = gt_train_dense(cfg);
    if (cfg->eval_samples < 0 || (cfg->eval_samples > 0 && !dense))
        return GT_ERR(GT_ERR_INVALID,
                      "--eval-samples %d: a held-out evaluation is for the mlp and convnet "
                      "presets (their synthetic task has unseen samples); gpt2 reports its "
                      "training loss against the source's entropy",
                      cfg->eval_samples);
    if (cfg->eval_every < 0 || (cfg->eval_every > 0 && cfg->eval_samples <= 0))
        return GT_ERR(GT_ERR_INVALID,
                      "--eval-every %d needs --eval-samples N (how many held-out samples each "
                      "evaluation takes)",
                      cfg->eval_every);
    if (cfg->target_gap < 0 || (cfg->target_gap > 0 && cfg->eval_every <= 0))
        return GT_ERR(GT_ERR_INVALID,
                      "--target-gap %g needs --eval-every K: the target is looked for at the "
                      "periodic evaluations",
                      cfg->target_gap);
    if (cfg->save_final && strncmp(cfg->save_final, "llmc:", 5) != 0)
        return GT_ERR(GT_ERR_INVALID, "--save-final '%s': expected llmc:FILE (an llm.c model "
                                      "file)",
                      cfg->save_final);
    if (dense) {
        /* the synthetic task is the data: nothing else applies */
        if (cfg->data_path || cfg->init_from || cfg->save_final)
            return GT_ERR(GT_ERR_INVALID,
                          "%s trains on its synthetic task (docs/models.md): --data, "
                          "--init-from and --save-final are for gpt2",
                          cfg->model_name);
        if (cfg->data_order != GT_DATA_ORDER_SEQUENTIAL)
            return GT_ERR(GT_ERR_INVALID,
                          "%s: --data-order %s does not apply: its synthetic samples are "
                          "already independent draws; leave --data-order at sequential",
                          cfg->model_name, gt_data_order_name(cfg->data_order));
    } else {
        gt_model_arch arch;
        GT_TRY(gt_model_arch_of(cfg->model_name, cfg->model_options, &arch));
        if (cfg->seq_len < 1 || cfg->seq_len > arch.max_T)
            return GT_ERR(GT_ERR_INVALID,
                          "--seq %d is out of range: the model's max_seq_len is %d (raise it "
                          "with --max-seq or shorten --seq)",
                          cfg->seq_len, arch.max_T);
    }
    return gt_adamw_config_check(&cfg->opt);
}

/* Sequences per micro-batch: --micro-batches N splits the rank's share in
 * N; else --micro-batch; else, in deterministic mode (the micro-batch is
 * the leaf of the reduction tree, so it must not change with the rank
 * count) and in a pipeline (more micro-batches, a smaller bubble), one
 * sequence; else the whole share. */
static gt_status micro_size(const gt_trainer *t, int *M) {
    const gt_train_config *cfg = t->cfg;
    int B = t->B, n = cfg->micro_batches;
    if (n > 0 && B % n != 0)
        return GT_ERR(GT_ERR_INVALID,
                      "--micro-batches %d does not divide the %d sequences of each replica "
                      "(global batch %d over %d data-parallel ranks): use a divisor of %d",
                      n, B, cfg->batch, t->R, B);
    if (n > 0 && cfg->micro_batch > 0 && cfg->micro_batch * n != B)
        return GT_ERR(GT_ERR_INVALID,
                      "--micro-batches %d of --micro-batch %d sequences is not the %d "
                      "sequences of each replica: give one of the two",
                      n, cfg->micro_batch, B);
    if (n > 0) *M = B / n;
    else if (cfg->micro_batch > 0) *M = cfg->micro_batch;
    else *M = cfg->deterministic || t->P > 1 ? 1 : B;
    return GT_OK;
}

/* The communicator (one of its own without one) and the shapes of a step
 * on it: every shape error before any work, identically on every rank. */
static gt_status open_ranks(gt_trainer *t) {
    const gt_train_config *cfg = t->cfg;
    t->comm = cfg->comm;
    if (!t->comm) {
        gt_comm_config cc = gt_comm_defaults();
        cc.backend = "self";
        GT_TRY(gt_comm_world(&cc, &t->own_comm));
        t->comm = t->own_comm;
    }
    /* pipeline stages: from here on t->comm is this stage's data-parallel group */
    GT_TRY(gt_train_grid_open(t));
    int R = t->R = gt_comm_size(t->comm);
    t->rank = gt_comm_rank(t->comm);
    t->st->nranks = t->nworld;
    int B = t->B = cfg->batch / R;
    t->T = t->dense ? 1 : cfg->seq_len; /* predictions per sample */
    gt_status s = GT_OK;
    int M = 1;
    if (cfg->batch % R != 0)
        s = GT_ERR(GT_ERR_INVALID,
                   "the global batch of %d sequences does not split across %d %sranks: use a "
                   "--batch that is a multiple of %d",
                   cfg->batch, R, t->P > 1 ? "data-parallel " : "", R);
    else
        s = micro_size(t, &M);
    t->M = M;
    if (s != GT_OK) {
        /* said */
    } else if (B % M != 0) {
        s = GT_ERR(GT_ERR_INVALID,
                   "--micro-batch %d does not divide the %d sequences of each rank (global "
                   "batch %d over %d ranks)",
                   M, B, cfg->batch, R);
    } else if (cfg->deterministic && !is_pow2(B / M)) {
        s = GT_ERR(GT_ERR_INVALID,
                   "--deterministic needs a power-of-two number of micro-batches per rank; "
                   "got %d (%d sequences per rank, micro-batch %d)",
                   B / M, B, M);
    } else if (cfg->deterministic && !is_pow2(R)) {
        s = GT_ERR(GT_ERR_INVALID,
                   "--deterministic needs a power-of-two number of ranks, got %d", R);
    }
    if (s == GT_OK && cfg->checkpoint_every > 0 && !cfg->checkpoint_dir)
        s = GT_ERR(GT_ERR_INVALID, "--checkpoint-every needs a --checkpoint-dir to write into");
    if (s == GT_OK && cfg->resume && cfg->init_from)
        s = GT_ERR(GT_ERR_INVALID, "--resume and --init-from both set the parameters: pick one");
    if (s == GT_OK && cfg->precision != GT_DTYPE_FP32 && cfg->precision != GT_DTYPE_BF16 &&
        cfg->precision != GT_DTYPE_FP16)
        s = GT_ERR(GT_ERR_INVALID, "--precision %s: use fp32, bf16 or fp16",
                   gt_dtype_name(cfg->precision));
    t->fp16 = cfg->precision == GT_DTYPE_FP16;
    if (s == GT_OK && t->fp16) s = gt_lossscale_init(&t->ls, &cfg->loss_scale);
    GT_TRY(s);
    /* pipeline stages, tensor ranks: each rank's part of the checkpoints */
    GT_TRY(gt_train_ckpt_parts(t));
    /* an unwritable destination fails now, not after hours of training */
    if (cfg->checkpoint_dir)
        GT_TRY(gt_train_agree(cfg->comm ? cfg->comm : t->comm,
                              gt_ckpt_dir_prepare(t->ck->checkpoint_dir),
                              &t->st->collective_error));
    t->k_local = B / M;
    return GT_OK;
}

/* The profile of a run (NULL: off): the backend's op table wrapped, a trace,
 * an injected slowdown of one op. */
static gt_status profile_start(const gt_train_config *cfg, gt_backend *be, int rank, int R,
                               gt_profile **out) {
    *out = NULL;
    gt_profile_config pc = gt_profile_defaults();
    pc.max_steps = cfg->steps;
    pc.rank = rank;
    pc.nranks = R;
    pc.trace_path = cfg->trace_path;
    pc.keep_over_limit = cfg->profile_on;
    if (cfg->inject_slowdown) {
        /* the wrapper slows one op: the list's first item that names a whole
         * op (a case, a collective or a class is not slowed in training) */
        gt_slowdown sl;
        GT_TRY(gt_slowdown_parse(cfg->inject_slowdown, &sl));
        for (int i = 0; i < sl.n && pc.slow_factor <= 1; i++)
            for (int o = 0; o < GT_OP_COUNT; o++)
                if (strcmp(gt_op_name((gt_op)o), sl.item[i].name) == 0) {
                    pc.slow_op = (gt_op)o;
                    pc.slow_factor = sl.item[i].factor;
                }
    }
    /* a trace or an injected slowdown needs the wrapper: the profile comes with it */
    if (cfg->no_profile && !cfg->trace_path && pc.slow_factor <= 1) return GT_OK;
    return gt_profile_new(be, &pc, out);
}

/* The backend, and before the model the profile: every op the model calls
 * goes through the profile's table. */
static gt_status open_backend(gt_trainer *t) {
    gt_backend_config bc = {.threads = t->cfg->threads, .device = -1};
    GT_TRY(gt_backend_new(t->cfg->backend, &bc, &t->be));
    snprintf(t->st->backend_desc, sizeof t->st->backend_desc, "%s", t->be->describe(t->be));
    int wrank = t->cfg->comm ? gt_comm_rank(t->cfg->comm) : 0; /* the job's rank */
    GT_TRY(profile_start(t->cfg, t->be, wrank, t->nworld, &t->st->profile));
    t->prof = t->st->profile;
    return GT_OK;
}

static gt_status load_tokens(const gt_train_config *cfg, gt_tokens *tok) {
    gt_model_arch arch;
    GT_TRY(gt_model_arch_of(cfg->model_name, cfg->model_options, &arch));
    int vocab = arch.classes;
    if (cfg->data_path) {
        GT_TRY(gt_tokens_read(cfg->data_path, tok));
        for (int64_t i = 0; i < tok->n; i++)
            if (tok->tokens[i] >= vocab)
                return GT_ERR(GT_ERR_INVALID,
                              "'%s': token %d at position %lld is outside the model's "
                              "vocabulary of %d: pick a model with --vocab >= %d",
                              cfg->data_path, (int)tok->tokens[i], (long long)i,
                              vocab, tok->vocab);
        return GT_OK;
    }
    gt_synth_config sc = gt_synth_defaults();
    sc.vocab = vocab;
    sc.branch = cfg->synth_branch > 0 ? cfg->synth_branch : sc.branch;
    sc.seed = cfg->seed;
    /* every step sees tokens it has not seen: otherwise a model can learn
     * the sample by heart and go below the entropy rate */
    int64_t need = (int64_t)cfg->steps * cfg->batch * cfg->seq_len + 1;
    sc.n_tokens = cfg->synth_tokens > 0 ? cfg->synth_tokens : need;
    if (sc.n_tokens < cfg->seq_len + 1) sc.n_tokens = cfg->seq_len + 1;
    return gt_synth_generate(&sc, tok);
}

/* The model and what it trains on: mlp / convnet their synthetic task
 * (samples made on the spot), gpt2 a token stream (an llm.c file's
 * weights loaded before the model is wrapped). */
static gt_status open_model(gt_trainer *t) {
    const gt_train_config *cfg = t->cfg;
    gt_train_stats *st = t->st;
    if (t->dense) {
        /* a backend that cannot store the precision refuses here, naming both */
        GT_TRY(gt_train_tp_new_model(t)); /* refuses tp > 1 */
        gt_task_config tc;
        GT_TRY(gt_model_task(t->model, cfg->seed, &tc));
        GT_TRY(gt_task_new(&tc, &t->task));
        /* the entropy of the label noise: the loss of a perfect model */
        st->entropy = gt_task_target_loss(t->task);
        st->vocab = gt_model_get_info(t->model)->classes;
        t->numel = gt_task_sample_numel(t->task);
        t->dense_x = malloc((size_t)t->B * t->numel * sizeof(float));
        t->dense_y = malloc((size_t)t->B * sizeof(int32_t));
        if (!t->dense_x || !t->dense_y)
            return GT_ERR(GT_ERR_OOM, "no host memory for a batch of %d samples", t->B);
    } else {
        GT_TRY(load_tokens(cfg, &t->tok));
        st->entropy = t->tok.entropy;
        /* a backend that cannot store the precision refuses here, naming both */
        GT_TRY(gt_train_tp_new_model(t)); /* tensor parallel: this rank's slices */
        st->vocab = gt_model_get_info(t->model)->classes;
        if (cfg->init_from && !cfg->resume) GT_TRY(gt_model_init_from(t->model, cfg->init_from));
    }
    snprintf(st->unit, sizeof st->unit, "%s", gt_model_get_info(t->model)->unit);
    st->act_bytes = gt_model_act_bytes(t->model);
    return gt_train_identify_data(cfg, &t->tok, t->M, &t->rid);
}

/* The starting parameters: a checkpoint, an llm.c file (loaded with the
 * model) or the seed; then the same on every rank. */
static gt_status init_params(gt_trainer *t) {
    const gt_train_config *cfg = t->cfg;
    gt_train_stats *st = t->st;
    if (cfg->resume) {
        /* the job's communicator: a tensor group's ranks read different parts */
        GT_TRY(gt_train_agree(cfg->comm ? cfg->comm : t->comm,
                              gt_train_load_checkpoint(t->ck, t->model, t->comm, &t->rid, st, t->lo,
                                                       t->hi, t->fp16 ? &t->ls : NULL,
                                                       &t->start),
                              &st->collective_error));
        GT_TRY(gt_train_ckpt_parts_agree(t)); /* the parts of one step */
        st->first_step = (int)t->start;
        if (t->fp16) {
            st->skipped_steps = t->ls.skipped;
            st->final_loss_scale = t->ls.scale;
        }
    } else if (!cfg->init_from) {
        GT_TRY(gt_model_init_random(t->model, cfg->seed));
    }
    GT_TRY(gt_train_fault_perturb(t));
    if (t->R > 1) GT_TRY(gt_train_check_consistency(t->model, t->comm, 0));
    return GT_OK;
}

/* The MFU reference: given, none, or measured on this backend. */
static gt_status measure_peak(gt_trainer *t) {
    const gt_train_config *cfg = t->cfg;
    gt_train_stats *st = t->st;
    st->num_params = gt_model_tp_full_params(t->model); /* the whole model's */
    st->params_per_rank = gt_model_num_params(t->model); /* tensor parallel: the slices */
    st->flops_per_token = gt_model_flops_per_unit(t->model); /* per token / sample / image */
    st->peak_gflops = cfg->peak_gflops;
    snprintf(st->peak_how, sizeof st->peak_how, "--peak-gflops");
    if (cfg->peak_gflops < 0) {
        st->peak_gflops = 0; /* GT_TRAIN_NO_MFU: mfu stays 0 and is not reported */
        snprintf(st->peak_how, sizeof st->peak_how, "none");
    } else if (st->peak_gflops == 0 && t->be->timer_start) {
        /* a device backend: a large GEMM in the training dtype, timed on the device
         * (the bf16 tensor-core rate for bf16 training, true fp32 for fp32) */
        const char *how = NULL;
        GT_TRY(gt_probe_gemm_peak(t->be, cfg->precision, &st->peak_gflops, &how));
        snprintf(st->peak_how, sizeof st->peak_how, "measured %s GEMM %d^3 (device timers)",
                 gt_dtype_name(cfg->precision), GT_PROBE_GEMM_N);
    } else if (st->peak_gflops == 0) {
        /* the probe cache's SGEMM where GT_PROBE_CACHE has one (suites/probe.h) */
        gt_probe_peaks pc;
        gt_peaks pk;
        int cached = gt_probe_cache_load_peaks(t->be, &pc);
        if (cached)
            pk = pc.peaks;
        else
            GT_TRY(gt_probe_measure_sgemm(t->be, 5, &pk));
        st->peak_gflops = pk.sgemm_gflops;
        snprintf(st->peak_how, sizeof st->peak_how, "%s SGEMM n=%d",
                 cached ? "GT_PROBE_CACHE's" : "measured", pk.sgemm_n);
    }
    st->datasheet_gflops =
        cfg->peak_gflops < 0 ? 0 : gt_probe_datasheet_gflops(t->be, cfg->precision);
    return GT_OK;
}

/* gpt2: the loader from the step the run starts at (its prefetch thread
 * starts here). */
static gt_status open_loader(gt_trainer *t) {
    const gt_train_config *cfg = t->cfg;
    gt_loader_config lc = {.global_batch = cfg->batch,
                           .seq_len = t->T,
                           .rank = t->rank,
                           .nranks = t->R,
                           .order = cfg->data_order,
                           .seed = cfg->seed,
                           .start_step = t->start,
                           .prefetch = cfg->prefetch};
    if (t->dense) return GT_OK;
    return gt_loader_new(&t->tok, &lc, &t->loader);
}

gt_status gt_train_open(gt_trainer *t, const gt_train_config *cfg, gt_train_stats *st) {
    memset(t, 0, sizeof *t);
    t->run_start = gt_now_ns();
    t->cfg = cfg;
    t->st = st;
    memset(st, 0, sizeof *st);
    st->entropy = -1;
    st->eval_loss = st->eval_bayes = NAN;
    st->steps_to_target = -1;
    t->R = 1;
    GT_TRY(check_options(cfg));
    t->dense = gt_train_dense(cfg);
    GT_TRY(open_ranks(t));
    GT_TRY(gt_train_stats_open(t));
    GT_TRY(open_backend(t));
    GT_TRY(open_model(t));
    GT_TRY(gt_train_sync_open(t));
    GT_TRY(t->layout->place(t));
    GT_TRY(init_params(t));
    GT_TRY(gt_train_units_open(t));
    GT_TRY(gt_train_grad_units_open(t));
    GT_TRY(gt_train_schedule_open(t));
    GT_TRY(measure_peak(t));
    GT_TRY(open_loader(t));
    /* each token's loss weighs 1 / (global tokens): the sum over ranks is the
     * gradient of the global mean */
    t->dloss = 1.0f / (float)((double)cfg->batch * t->T);
    gt_train_faults_read(&t->faults);
    t->end = cfg->stop_after > 0 && cfg->stop_after < cfg->steps ? cfg->stop_after : cfg->steps;
    size_t np = gt_model_num_params(t->model);
    t->uhi = t->hi < np ? t->hi : np;
    return GT_OK;
}

void gt_train_close(gt_trainer *t) {
    gt_train_stats *st = t->st;
    if (t->be) gt_allocator_stats(t->be->alloc, &st->mem);
    if (st) gt_train_account_memory(t);
    if (st) gt_train_tp_record(t);
    if (t->dp) st->comm_bytes = gt_dp_bytes(t->dp);
    gt_train_schedule_close(t);
    gt_train_units_close(t);
    gt_train_grad_units_close(t);
    gt_train_pipe_close(t);
    if (st) gt_profile_detach(st->profile); /* the backend's own table back; the figures stay */
    gt_dp_free(t->dp);
    gt_loader_free(t->loader);
    gt_model_free(t->model);
    gt_task_free(t->task);
    free(t->dense_x);
    free(t->dense_y);
    gt_tokens_release(&t->tok);
    gt_backend_free(t->be);
    gt_train_grid_close(t);
    gt_comm_free(t->own_comm);
    free(t->mb_loss);
    free(t->all_loss);
    memset(t, 0, sizeof *t);
}
