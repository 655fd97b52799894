/* What a report records of a training run (train_record.h). */
#include "suites/train_record.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine/comm.h"
#include "engine/stats.h"
#include "models/convnet/convnet.h"
#include "models/mlp/mlp.h"
#include "reports/profile.h"
#include "suites/cpu_share.h"
#include "suites/trainer/train_impl.h"


/* The architecture of an mlp / convnet preset, as report parameters. */
static void dense_params(const char *name, gt_result *res) {
    gt_mlp_config mc;
    gt_convnet_config cc;
    const char *fam = gt_model_family_of(name);
    if (fam && strcmp(fam, "mlp") == 0 && gt_mlp_preset(name, &mc) == GT_OK) {
        gt_result_param_int(res, "in_dim", mc.in_dim);
        gt_result_param_int(res, "classes", mc.classes);
        gt_result_param_int(res, "depth", mc.depth);
        gt_result_param_int(res, "width", mc.width);
        gt_result_param_str(res, "activation", mc.act == GT_MLP_RELU ? "relu" : "gelu");
    } else if (fam && gt_convnet_preset(name, &cc) == GT_OK) {
        gt_result_param_int(res, "channels", cc.channels);
        gt_result_param_int(res, "height", cc.height);
        gt_result_param_int(res, "width", cc.width);
        gt_result_param_int(res, "classes", cc.classes);
        gt_result_param_int(res, "stem", cc.stem);
        gt_result_param_int(res, "blocks", cc.nblocks);
    }
}

/* Tensor parallelism: the parameters a rank holds, and the all-reduces
 * inside a tensor group per step (count, bytes per rank) beside the
 * bytes by the formula (docs/distributed.md, "Tensor parallelism"). */
static void tp_record(const gt_train_stats *st, gt_result *res) {
    gt_result_param_int(res, "params_per_rank", (long long)st->params_per_rank);
    if (!(st->tp_collectives > 0)) return; /* the run did not finish a step */
    gt_result_metric(res, "tp_collectives", "count", 0, st->tp_collectives, NULL, 0);
    gt_result_metric_ungated(res, "tp_collectives", "reference");
    gt_result_metric(res, "tp_allreduce_bytes", "bytes", 0, st->tp_bytes, NULL, 0);
    gt_result_metric_ungated(res, "tp_allreduce_bytes", "reference");
    gt_result_metric(res, "tp_allreduce_bytes_formula", "bytes", 0, st->tp_bytes_formula,
                     NULL, 0);
    gt_result_metric_ungated(res, "tp_allreduce_bytes_formula", "reference");
}

/* With pipeline stages or tensor groups: the rank grid (dp x tp x pp),
 * where each rank sits (rank = (replica * pp + stage) * tp + tp_rank);
 * with stages the split of the blocks, the micro-batches, the schedule
 * and the bubble beside its formula. Plain data parallelism records none
 * of it: its results keep the identity params (compare's matching) they
 * always had. */
static void grid_record(const gt_train_stats *st, gt_result *res) {
    const gt_train_grid *g = &st->grid;
    if (g->dp < 1 || (g->pp < 2 && g->tp < 2)) return; /* refused early, or plain dp */
    char grid[64];
    gt_train_grid_format(g, grid, sizeof grid);
    gt_result_param_str(res, "grid", grid);
    for (int r = 0; r < g->dp * g->pp * g->tp; r++) {
        gt_record *rec = gt_result_record(res, "rank_grid");
        if (!rec) break;
        gt_train_grid at;
        gt_train_grid_coords(g, r, &at);
        gt_record_int(rec, "rank", r);
        gt_record_int(rec, "dp", at.dp);
        gt_record_int(rec, "tp", at.tp);
        gt_record_int(rec, "pp", at.pp);
    }
    if (g->tp > 1) tp_record(st, res);
    if (g->pp < 2) return;
    gt_result_param_str(res, "pp_split", st->pp_split);
    gt_result_param_int(res, "micro_batches", st->pp_micro_batches);
    gt_result_param_str(res, "schedule", st->pp_schedule);
    if (st->pp_send_formula > 0) {
        /* sizes by the layout, not measurements: no noise to judge */
        gt_result_metric(res, "pp_send_bytes", "bytes", 0, st->pp_send_bytes, NULL, 0);
        gt_result_metric_ungated(res, "pp_send_bytes", "reference");
        gt_result_metric(res, "pp_send_bytes_formula", "bytes", 0, st->pp_send_formula, NULL, 0);
        gt_result_metric_ungated(res, "pp_send_bytes_formula", "reference");
    }
    gt_result_metric(res, "pipeline_bubble_theory", "fraction", 0, st->bubble_theory, NULL, 0);
    gt_result_metric_ungated(res, "pipeline_bubble_theory", "reference");
    if (!st->bubble_stage || !(st->bubble_measured > 0)) return; /* the run did not finish */
    gt_result_metric(res, "pipeline_bubble", "fraction", 0, st->bubble_measured,
                     st->bubble_stage, (size_t)g->pp);
    for (int s = 0; s < g->pp; s++) {
        gt_record *rec = gt_result_record(res, "pipeline_stages");
        if (!rec) break;
        gt_record_int(rec, "stage", s);
        gt_record_num(rec, "bubble", st->bubble_stage[s]);
    }
}

/* result.traffic: the kinds the step used or its formula names. */
static void record_traffic(const gt_train_stats *st, gt_result *res) {
    const gt_train_traffic *tr = &st->traffic;
    if (!tr->step) return;
    const char *keys[GT_COLL_COUNT];
    double b[GT_COLL_COUNT], f[GT_COLL_COUNT];
    int n = 0;
    for (int k = 0; k < GT_COLL_COUNT; k++) {
        if (!tr->bytes[k] && !tr->formula[k]) continue;
        keys[n] = gt_coll_name((gt_coll)k);
        b[n] = tr->bytes[k];
        f[n++] = tr->formula[k];
    }
    gt_result_traffic(res,
                      "payload bytes of this rank's send buffers per step (engine/comm.h's "
                      "count) in the gradient sync and the optimizer step",
                      tr->step, n, keys, b, tr->has_formula ? f : NULL);
}

/* The held-out curve and the target's steps and time, when asked for. */
static void record_eval(const gt_train_config *cfg, const gt_train_stats *st, gt_result *res) {
    if (st->n_evals > 0) {
        double *at = malloc((size_t)st->n_evals * sizeof *at);
        for (int j = 0; at && j < st->n_evals; j++) at[j] = st->eval_at[j];
        gt_result_series(res, "eval_loss", st->eval_curve, (size_t)st->n_evals);
        if (at) gt_result_series(res, "eval_step", at, (size_t)st->n_evals);
        free(at);
        gt_result_param_int(res, "eval_every", cfg->eval_every);
    }
    if (cfg->target_gap > 0) {
        gt_result_param_num(res, "target_gap", cfg->target_gap);
        if (st->steps_to_target > 0) {
            gt_result_metric(res, "steps_to_target", "steps", 0, st->steps_to_target, NULL, 0);
            gt_result_metric(res, "time_to_target", "s", 0, st->time_to_target_s, NULL, 0);
        }
    }
}

/* What a rank holds by kind beside its formula (memory.by_kind), and its
 * traffic per step beside its formula. */
static void record_rank_costs(const gt_train_stats *st, gt_result *res) {
    if (st->mem_parts.expected) {
        const gt_train_memory *mp = &st->mem_parts;
        static const char *const keys[] = {"parameters_bytes",    "gradients_bytes",
                                           "optimizer_bytes",     "activations_bytes",
                                           "communication_bytes", "formula_bytes"};
        const size_t v[] = {mp->params, mp->grads, mp->optim, mp->acts, mp->comm, mp->expected};
        gt_result_memory_table(res, "by_kind", 6, keys, v);
    }
    record_traffic(st, res);
}

/* A collective or send of this rank that hung (the watchdog's message as
 * fields): which group, which operation, which peer it waited for. */
static void record_stall(const gt_train_stats *st, gt_result *res) {
    gt_comm_hang h;
    if (gt_comm_hang_count() == st->hangs_before || !gt_comm_last_hang(&h)) return;
    gt_record *r = gt_result_record(res, "stall");
    if (!r) return;
    gt_record_str(r, "operation", h.operation);
    gt_record_int(r, "seq", (long long)h.seq);
    gt_record_num(r, "bytes", h.bytes);
    gt_record_str(r, "dtype", h.dtype);
    gt_record_str(r, "group", h.group[0] ? h.group : "the job's communicator");
    gt_record_str(r, "group_world_ranks", h.world_ranks);
    gt_record_int(r, "group_size", h.group_size);
    gt_record_int(r, "rank", h.world_rank);
    if (h.peer >= 0) {
        gt_record_int(r, "waiting_for_rank", h.peer_world_rank);
        gt_record_int(r, "waiting_for_group_rank", h.peer);
        const gt_train_grid *g = &st->grid;
        if (g->dp >= 1 && (g->pp > 1 || g->tp > 1) && h.peer_world_rank < g->dp * g->tp * g->pp) {
            /* the peer's place in the grid: the stalled stage or tensor rank */
            gt_train_grid at;
            gt_train_grid_coords(g, h.peer_world_rank, &at);
            gt_record *w = gt_record_object(r, "waiting_for");
            gt_record_int(w, "dp", at.dp);
            gt_record_int(w, "tp", at.tp);
            gt_record_int(w, "pp", at.pp);
        }
    } else {
        gt_record_str(r, "waiting_for_rank", NULL);
    }
    if (h.tag >= 0) gt_record_int(r, "tag", h.tag);
    gt_record_num(r, "waited_s", h.waited_s);
    gt_record_num(r, "timeout_s", h.timeout_s);
    gt_record_bool(r, "failure_notice", h.notice);
}

/* What other processes took of the node's CPU while the run's steps ran,
 * over at least the last GT_TRAIN_LOAD_WINDOW_S (suites/cpu_share.h): the
 * steps carry no record of their own waits for a CPU, so compare holds a
 * slower step time where another process kept a core busy on a node with
 * none idle (docs/ci-gating.md). Not gated: the machine's state. */
#define GT_TRAIN_LOAD_WINDOW_S 1.0
static void record_node_load(gt_result *res) {
    double others, idle;
    if (!gt_node_load_since(GT_TRAIN_LOAD_WINDOW_S, &others, &idle)) return;
    gt_result_metric(res, "cpu_others_cores", "cores", 0, others, NULL, 0);
    gt_result_metric_ungated(res, "cpu_others_cores", "state");
    gt_result_metric(res, "cpu_idle_cores", "cores", 1, idle, NULL, 0);
    gt_result_metric_ungated(res, "cpu_idle_cores", "state");
}

void gt_train_record(const gt_train_config *cfg, const gt_train_stats *st, gt_result *res) {
    record_stall(st, res);
    record_node_load(res);
    int dense = gt_train_dense(cfg);
    gt_result_param_str(res, "model", cfg->model_name);
    if (dense) {
        dense_params(cfg->model_name, res);
    } else {
        gt_model_arch a; /* gpt2's fields: max_seq vocab padded_vocab layers heads channels */
        if (gt_model_arch_of(cfg->model_name, cfg->model_options, &a) == GT_OK) {
            gt_result_param_int(res, "layers", a.fields[3]);
            gt_result_param_int(res, "heads", a.fields[4]);
            gt_result_param_int(res, "channels", a.fields[5]);
            gt_result_param_int(res, "vocab", a.fields[1]);
            gt_result_param_int(res, "padded_vocab", a.fields[2]);
            gt_result_param_int(res, "max_seq", a.fields[0]);
        }
    }
    gt_result_param_int(res, "batch", cfg->batch);
    if (!dense) gt_result_param_int(res, "seq", cfg->seq_len);
    gt_result_param_int(res, "steps", cfg->steps);
    gt_result_param_num(res, "lr", cfg->opt.lr);
    gt_result_param_int(res, "warmup", cfg->opt.warmup_steps);
    gt_result_param_num(res, "lr_min_frac", cfg->opt.lr_min_frac);
    gt_result_param_num(res, "weight_decay", cfg->opt.weight_decay);
    gt_result_param_num(res, "grad_clip", cfg->opt.grad_clip);
    gt_result_param_num(res, "beta1", cfg->opt.beta1);
    gt_result_param_num(res, "beta2", cfg->opt.beta2);
    gt_result_param_num(res, "eps", cfg->opt.eps);
    gt_result_param_int(res, "seed", (long long)cfg->seed);
    gt_result_param_str(res, "data", cfg->data_path ? cfg->data_path : "synthetic");
    gt_result_param_str(res, "data_order", gt_data_order_name(cfg->data_order));
    gt_result_param_int(res, "threads", cfg->threads);
    gt_result_param_str(res, "precision", gt_dtype_name(cfg->precision));
    if (cfg->init_from) gt_result_param_str(res, "init_from", cfg->init_from);
    gt_result_param_str(res, "backend_detail", st->backend_desc);
    gt_result_param_int(res, "num_params", (long long)st->num_params);
    if (st->entropy >= 0)
        gt_result_param_num(res, dense ? "target_loss" : "source_entropy", st->entropy);
    char digest[32];
    snprintf(digest, sizeof digest, "%016llx", (unsigned long long)st->params_digest);
    gt_result_param_str(res, "final_params_fnv1a64", digest);
    if (st->weights_digest != st->params_digest) { /* models with state tensors */
        snprintf(digest, sizeof digest, "%016llx", (unsigned long long)st->weights_digest);
        gt_result_param_str(res, "final_weights_fnv1a64", digest);
    }
    grid_record(st, res);

    int n = st->steps_done;
    int skip = n > 1 ? 1 : 0;
    double *tps = malloc((size_t)(n > 0 ? n : 1) * sizeof *tps);
    if (tps) {
        int T = dense ? 1 : cfg->seq_len;
        for (int i = skip; i < n; i++) tps[i - skip] = (double)cfg->batch * T / (st->ms[i] * 1e-3);
        /* tokens_per_s, samples_per_s, images_per_s */
        const char *unit = st->unit[0] ? st->unit : dense ? "samples" : "tokens";
        char mname[32], munit[32];
        snprintf(mname, sizeof mname, "%s_per_s", unit);
        snprintf(munit, sizeof munit, "%s/s", unit);
        gt_result_metric(res, mname, munit, 1, st->tokens_per_s, tps, (size_t)(n - skip));
        /* the step times seen another way: one measurement, one verdict */
        gt_result_metric_derived(res, mname, "ms_per_step");
        free(tps);
    }
    gt_result_metric(res, "ms_per_step", "ms", 0, st->ms_per_step, st->ms + skip,
                     (size_t)(n - skip));
    /* one value per run: judged against the run-to-run spread, not samples */
    gt_result_metric(res, "startup_ms", "ms", 0, st->startup_ms, NULL, 0);
    /* the step that pays for first touches: what a user waits for beyond
     * startup_ms before the run is at speed */
    if (st->steps_done > 0) gt_result_metric(res, "first_step_ms", "ms", 0, st->first_step_ms, NULL, 0);
    if (st->peak_gflops > 0) { /* not for correctness runs (GT_TRAIN_NO_MFU) */
        gt_result_metric(res, "mfu", "fraction", 1, st->mfu, NULL, 0);
        gt_result_metric_derived(res, "mfu", "ms_per_step"); /* and peak_sgemm, gated itself */
        gt_result_metric(res, "peak_sgemm", "GFLOP/s", 1, st->peak_gflops, NULL, 0);
        gt_result_metric_ungated(res, "peak_sgemm", "reference");
        gt_result_param_str(res, "mfu_reference", st->peak_how);
    }
    if (st->datasheet_gflops > 0) {
        gt_result_metric(res, "mfu_datasheet", "fraction", 1, st->mfu_datasheet, NULL, 0);
        gt_result_metric_derived(res, "mfu_datasheet", "ms_per_step");
        gt_result_metric(res, "peak_datasheet", "GFLOP/s", 1, st->datasheet_gflops, NULL, 0);
    }
    gt_result_metric(res, "data_wait_ms", "ms", 0, gt_median(st->wait_ms + skip, (size_t)(n - skip)),
                     st->wait_ms + skip, (size_t)(n - skip));
    gt_result_metric_part_of(res, "data_wait_ms", "ms_per_step");
    if (st->comm_ms) {
        gt_result_metric(res, "exposed_comm_ms", "ms", 0, st->exposed_comm_ms,
                         st->comm_ms + skip, (size_t)(n - skip));
        gt_result_metric_part_of(res, "exposed_comm_ms", "ms_per_step");
    }
    gt_result_param_int(res, "ranks", st->nranks);
    gt_result_param_int(res, "micro_batch", cfg->micro_batch);
    gt_result_param_int(res, "deterministic", cfg->deterministic);
    gt_result_param_int(res, "zero", cfg->zero);
    gt_result_param_str(res, "recompute", gt_model_recompute_name(cfg->recompute));
    if (cfg->resume) {
        gt_result_param_str(res, "resume", cfg->resume);
        if (st->resumed_from[0]) gt_result_param_str(res, "resumed_from", st->resumed_from);
        gt_result_param_int(res, "resumed_from_step", st->first_step);
        gt_result_param_int(res, "resumed_data_position",
                            (long long)gt_train_data_position(cfg, st->first_step));
        if (cfg->resume_allow) gt_result_param_str(res, "resume_allow", cfg->resume_allow);
        if (st->resume_overrides[0])
            gt_result_param_str(res, "resume_overrides", st->resume_overrides);
        if (st->resume_unchecked[0])
            gt_result_param_str(res, "resume_unchecked", st->resume_unchecked);
    }
    if (cfg->checkpoint_every > 0) gt_result_param_int(res, "checkpoint_every", cfg->checkpoint_every);
    if (cfg->stop_after > 0) gt_result_param_int(res, "stop_after", cfg->stop_after);
    gt_result_metric(res, "final_loss", dense ? "nats/sample" : "nats/token", 0,
                     n ? st->loss[n - 1] : NAN, NULL, 0);
    gt_result_metric_ungated(res, "final_loss", "numerics");
    gt_result_metric(res, "peak_memory", "bytes", 0, (double)st->mem.peak_in_use, NULL, 0);
    /* a size, not a measurement: no noise to judge, one value per run */
    if (st->act_bytes > 0)
        gt_result_metric(res, "activation_bytes", "bytes", 0, (double)st->act_bytes, NULL, 0);
    if (st->eval_samples > 0) {
        gt_result_metric(res, "eval_loss", "nats/sample", 0, st->eval_loss, NULL, 0);
        gt_result_metric_ungated(res, "eval_loss", "numerics");
        gt_result_param_num(res, "eval_bayes_loss", st->eval_bayes);
        gt_result_param_int(res, "eval_samples", st->eval_samples);
    }
    record_eval(cfg, st, res);
    gt_result_series(res, "loss", st->loss, (size_t)n);
    gt_result_series(res, "lr", st->lr, (size_t)n);
    gt_result_series(res, "grad_norm", st->grad_norm, (size_t)n);
    gt_result_series(res, "ms", st->ms, (size_t)n);
    if (cfg->precision == GT_DTYPE_FP16) {
        /* overflows the loss scaler handled: counted, not failed */
        gt_result_metric(res, "skipped_steps", "steps", 0, (double)st->skipped_steps, NULL, 0);
        gt_result_metric(res, "loss_scale", "factor", 1, st->final_loss_scale, NULL, 0);
        if (st->loss_scale) gt_result_series(res, "loss_scale", st->loss_scale, (size_t)n);
    }
    gt_result_alloc_stats(res, "backend", &st->mem);
    record_rank_costs(st, res);
    /* the per-op profile (docs/profile.md); a slowed op is a fault, said as such */
    gt_result_profile(res, st->profile);
    if (st->profile) {
        gt_profile_info pi;
        gt_profile_get_info(st->profile, &pi);
        /* the op is named in profile.injected_slowdown */
        if (pi.slowed[0]) gt_result_param_num(res, "injected_slowdown", pi.slow_factor);
    }
    /* no step ran (a skipped or failed case): its status says why, and a
     * failed check would make a skip look like a failure to `compare` */
    if (n == 0) return;
    int finite = 1;
    for (int i = 0; i < n; i++)
        finite &= isfinite(st->loss[i]) &&
                  (isfinite(st->grad_norm[i]) || (st->skipped && st->skipped[i]));
    gt_result_check(res, "finite_loss", finite, n ? st->loss[n - 1] : NAN, NAN,
                    cfg->precision == GT_DTYPE_FP16
                        ? "every step's loss is finite, and its gradient norm unless the "
                          "loss scaler skipped the step (fp16 overflow)"
                        : "every step's loss and gradient norm is finite");
}

void gt_train_record_partial(const gt_train_config *cfg, const gt_train_stats *st,
                             gt_result *res) {
    /* the figures the loop computes after its last step, from the steps so
     * far (the arrays are shared, read only) */
    gt_train_stats p = *st;
    int n = p.steps_done, skip = n > 1 ? 1 : 0;
    if (n > 0) {
        int T = gt_train_dense(cfg) ? 1 : cfg->seq_len;
        int R = p.nranks > 0 ? p.nranks : 1;
        p.ms_per_step = gt_median(p.ms + skip, (size_t)(n - skip));
        p.tokens_per_s = p.ms_per_step > 0 ? (double)cfg->batch * T / (p.ms_per_step * 1e-3) : 0;
        if (p.comm_ms) p.exposed_comm_ms = gt_median(p.comm_ms + skip, (size_t)(n - skip));
        if (p.peak_gflops > 0)
            p.mfu = p.tokens_per_s * p.flops_per_token / (p.peak_gflops * 1e9 * R);
        if (p.datasheet_gflops > 0)
            p.mfu_datasheet = p.tokens_per_s * p.flops_per_token / (p.datasheet_gflops * 1e9 * R);
    }
    p.eval_samples = 0; /* the held-out loss after training: not yet */
    gt_train_record(cfg, &p, res);
    gt_result_remove(res, "params", "final_params_fnv1a64");
    gt_result_remove(res, "params", "final_weights_fnv1a64");
    gt_result_remove(res, "metrics", "peak_memory");
    gt_result_remove(res, NULL, "memory");
    gt_result_param_int(res, "steps_done", (long long)st->first_step + n);
    int end = cfg->stop_after > 0 && cfg->stop_after < cfg->steps ? cfg->stop_after : cfg->steps;
    char msg[160];
    snprintf(msg, sizeof msg,
             "unfinished: %d of %d steps done when the report was last written (the run was "
             "still going, or was killed)",
             st->first_step + n, end);
    gt_result_set_partial(res, msg);
}
