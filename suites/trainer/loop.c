/* The training loop: one process, one backend (data parallelism joins with
 * the communicator). Checkpoint save and load are in checkpoint.c, what a
 * report records of a run in suites/train_record.c. */
#include "suites/trainer/train.h"
#include "suites/trainer/train_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <errno.h>
#include <sys/stat.h>

#include "engine/backend.h"
#include "engine/checkpoint.h"
#include "engine/dp.h"
#include "engine/ops.h"
#include "engine/profile.h"
#include "kernels/registry.h"
#include "engine/env.h"
#include "engine/stats.h"
#include "engine/timer.h"
#include "models/convnet/convnet.h"
#include "models/mlp/mlp.h"
#include "models/model.h"
#include "models/tasks.h"
#include "suites/probe.h"
#include "suites/suite.h"


/* mlp and convnet read dense samples from their synthetic task
 * (models/tasks.h); gpt2 reads tokens. */
int gt_train_dense(const gt_train_config *cfg) {
    const char *f = gt_model_family_of(cfg->model_name);
    return f && strcmp(f, "gpt2") != 0;
}

gt_train_config gt_train_defaults(void) {
    gt_train_config c;
    memset(&c, 0, sizeof c);
    snprintf(c.model_name, sizeof c.model_name, "gpt2-tiny");
    c.batch = 8;
    c.seq_len = 64;
    c.steps = 200;
    c.opt = gt_adamw_defaults();
    c.opt.lr = 1e-3f;
    c.opt.warmup_steps = 10;
    c.seed = 1337;
    c.data_order = GT_DATA_ORDER_SEQUENTIAL;
    c.synth_branch = 4;
    c.backend = "cpu";
    c.precision = GT_DTYPE_FP32;
    c.loss_scale = gt_lossscale_defaults();
    c.prefetch = 1;
    return c;
}

void gt_train_stats_release(gt_train_stats *s) {
    if (!s) return;
    free(s->loss);
    free(s->lr);
    free(s->grad_norm);
    free(s->ms);
    free(s->wait_ms);
    free(s->comm_ms);
    free(s->loss_scale);
    free(s->skipped);
    free(s->eval_curve);
    free(s->eval_at);
    gt_profile_free(s->profile);
    memset(s, 0, sizeof *s);
}

double gt_train_tail_loss(const gt_train_stats *st, int k) {
    int n = st->steps_done;
    if (k > n) k = n;
    if (k <= 0) return NAN;
    double s = 0;
    for (int i = n - k; i < n; i++) s += st->loss[i];
    return s / k;
}

static gt_status load_data(const gt_train_config *cfg, gt_tokens *tok) {
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

/* FNV-1a of every parameter tensor (canonical order), compared across
 * ranks: a mismatch names the first tensor that differs and the ranks
 * involved. */
static gt_status check_consistency(gt_model *model, gt_comm *comm, int step) {
    size_t n = gt_model_num_params(model);
    int NT = gt_model_num_tensors(model);
    int R = gt_comm_size(comm);
    float *host = malloc(n * sizeof(float));
    int64_t *mine = malloc((size_t)NT * sizeof(int64_t));
    int64_t *all = malloc((size_t)R * NT * sizeof(int64_t));
    gt_status s = GT_OK;
    if (!host || !mine || !all)
        s = GT_ERR(GT_ERR_OOM, "out of host memory for the consistency check");
    if (s == GT_OK) s = gt_model_get_params(model, host);
    size_t off = 0;
    for (int i = 0; i < NT && s == GT_OK; i++) {
        size_t len = gt_model_tensor_size(model, i);
        mine[i] = (int64_t)gt_fnv1a64(GT_FNV1A64_INIT, host + off, len * sizeof(float));
        off += len;
    }
    if (s == GT_OK) s = gt_comm_allgather(comm, mine, all, (size_t)NT, GT_DTYPE_INT64, NULL);
    for (int i = 0; i < NT && s == GT_OK; i++)
        for (int r = 1; r < R; r++)
            if (all[(size_t)r * NT + i] != all[i]) {
                s = GT_ERR(GT_ERR_MISMATCH,
                           "parameters differ across ranks %s%.0d: tensor '%s' on rank %d "
                           "(hash %016llx) vs rank 0 (hash %016llx)",
                           step ? "after step " : "at initialisation", step,
                           gt_model_tensor_name(model, i), gt_comm_world_rank(comm, r),
                           (unsigned long long)all[(size_t)r * NT + i],
                           (unsigned long long)all[i]);
                break;
            }
    free(host);
    free(mine);
    free(all);
    return s;
}


/* ---- errors every rank agrees on ----------------------------------------------
 * A check that can fail on one rank only (a file, a non-finite value) must
 * not let the other ranks walk into the next collective and hang there:
 * every rank learns the first failing rank's status and message, and all
 * return the same error together. */
enum { AGREE_WORDS = 256 };

gt_status gt_train_agree(gt_comm *comm, gt_status s, int *collective) {
    int R = gt_comm_size(comm), me = gt_comm_rank(comm);
    if (R == 1) return s;
    int32_t mine[1 + AGREE_WORDS];
    memset(mine, 0, sizeof mine);
    mine[0] = (int32_t)s;
    if (s != GT_OK) snprintf((char *)(mine + 1), AGREE_WORDS * 4, "%s", gt_last_error());
    int32_t *all = malloc((size_t)R * sizeof mine);
    if (!all) return GT_ERR(GT_ERR_OOM, "out of host memory agreeing on an error");
    gt_status cs = gt_comm_allgather(comm, mine, all, 1 + AGREE_WORDS, GT_DTYPE_INT32, NULL);
    if (cs != GT_OK) {
        free(all);
        return cs;
    }
    gt_status out = GT_OK;
    for (int r = 0; r < R; r++) {
        int32_t *e = all + (size_t)r * (1 + AGREE_WORDS);
        if (e[0] == GT_OK) continue;
        out = (gt_status)e[0];
        if (r != me) {
            char msg[AGREE_WORDS * 4];
            memcpy(msg, e + 1, sizeof msg);
            msg[sizeof msg - 1] = 0;
            gt_error_clear();
            gt_error_wrap(out, "%s", msg); /* rank r's words, with its rank and place */
        } else if (s == GT_OK) {
            out = s;
        }
        break;
    }
    /* this rank's own error stays its own when it failed first */
    if (out != GT_OK && s != GT_OK) {
        for (int r = 0; r < R; r++)
            if (all[(size_t)r * (1 + AGREE_WORDS)] != GT_OK) {
                if (r == me) out = s;
                break;
            }
    }
    free(all);
    if (out != GT_OK && collective) *collective = 1;
    return out;
}

/* ---- non-finite values ---------------------------------------------------------------
 * Called on every rank when some rank saw a non-finite loss or gradient norm
 * at `step` (1-based): finds the first non-finite value in llm.c's order,
 * the gradients of each rank's shard first, then the parameters, and
 * returns the same error on every rank. (An fp16 gradient overflow with a
 * finite loss does not come here: the loss scaler skips the step.) */
static gt_status nonfinite_error(gt_model *model, gt_comm *comm, const void *gshard, size_t lo,
                                 size_t hi, int step, int bad_rank, int at_loss, double value) {
    int R = gt_comm_size(comm);
    int found = 0, kind = 2;
    gt_model_loc loc;
    float v = 0;
    memset(&loc, 0, sizeof loc);
    gt_status s = gt_model_find_nonfinite(model, gshard, gt_model_dtype(model), lo, hi, &found,
                                          &loc, &v);
    if (s == GT_OK && found) kind = 0;
    if (s == GT_OK && !found) {
        s = gt_model_find_nonfinite(model, gt_model_params_buffer(model), GT_DTYPE_FP32, 0,
                                    gt_model_num_params(model), &found, &loc, &v);
        if (s == GT_OK && found) kind = 1;
    }
    if (s != GT_OK) return s;
    /* kind, llm.c flat index: the smallest (kind, index) over ranks is first */
    int32_t bits;
    memcpy(&bits, &v, sizeof bits);
    int64_t mine[4] = {kind, (int64_t)loc.flat, (int64_t)loc.internal, bits};
    int64_t *all = malloc((size_t)R * sizeof mine);
    if (!all) return GT_ERR(GT_ERR_OOM, "out of host memory");
    if ((s = gt_comm_allgather(comm, mine, all, 4, GT_DTYPE_INT64, NULL)) != GT_OK) {
        free(all);
        return s;
    }
    int best = 0;
    for (int r = 1; r < R; r++)
        if (all[4 * r] < all[4 * best] ||
            (all[4 * r] == all[4 * best] && all[4 * r + 1] < all[4 * best + 1]))
            best = r;
    char where[320] = "";
    if (all[4 * best] < 2) {
        gt_model_loc l2;
        size_t x = (size_t)all[4 * best + 2];
        gt_model_locate(model, x, &l2);
        int32_t b32 = (int32_t)all[4 * best + 3];
        float fv;
        memcpy(&fv, &b32, sizeof fv);
        char name[96];
        gt_model_loc_format(model, &l2, name, sizeof name);
        snprintf(where, sizeof where, "the first non-finite value is the %s of %s (%s flat "
                 "index %zu) = %g, held by rank %d",
                 all[4 * best] == 0 ? "gradient" : "parameter", name,
                 strcmp(gt_model_get_info(model)->family, "gpt2") == 0 ? "llm.c" : "canonical",
                 l2.flat, (double)fv, best);
    } else {
        snprintf(where, sizeof where,
                 "no gradient or parameter holds a non-finite value (the loss overflowed)");
    }
    /* a norm assembled from every rank's chunks is non-finite everywhere:
     * the rank to name is the one holding the value */
    if (!at_loss && all[4 * best] < 2) bad_rank = best;
    free(all);
    return GT_ERR(GT_ERR_INVALID,
                  "non-finite %s (%g) at step %d on rank %d: %s. Training diverged or a fault "
                  "corrupted it: lower --lr, enable --grad-clip, check the data, or resume "
                  "from the last checkpoint",
                  at_loss ? "loss" : "gradient norm", value, step, bad_rank, where);
}

static int is_pow2(int x) { return x > 0 && (x & (x - 1)) == 0; }

/* Balanced binary tree over this rank's micro-batch gradients, kept as a
 * stack of partial sums (a binary counter): slot l holds the sum of 2^l
 * consecutive micro-batches. With a power-of-two count it is the same tree
 * as any other split of the same leaves over ranks. */
typedef struct grad_tree {
    void *slot[32];
    int used[32];
    int nslots;
    size_t n;
    gt_dtype dt; /* the gradients' */
} grad_tree;

static gt_status tree_push(gt_backend *be, grad_tree *t, const void *g) {
    gt_kctx k = {.be = be, .dt = t->dt};
    size_t bytes = t->n * gt_dtype_size(t->dt);
    int l = 0;
    const void *carry = g;
    while (l < t->nslots && t->used[l]) {
        /* left operand: the earlier micro-batches */
        GT_TRY(be->ops->residual_fwd(&k, t->slot[l], t->slot[l], carry, t->n));
        t->used[l] = 0;
        carry = t->slot[l];
        l++;
    }
    if (l >= t->nslots) return GT_ERR(GT_ERR_INVALID, "micro-batch tree overflow");
    if (carry != t->slot[l]) GT_TRY(be->copy_device(be, t->slot[l], carry, bytes));
    t->used[l] = 1;
    return GT_OK;
}

/* The backward's hook: buckets of final gradients start their all-reduce
 * (the profile's allreduce_issued). */
typedef struct dp_hook_ctx {
    gt_dp *dp;
    gt_profile *prof;
} dp_hook_ctx;

static gt_status dp_hook(void *ctx, size_t frontier) {
    dp_hook_ctx *h = ctx;
    size_t b0 = gt_dp_bytes(h->dp);
    gt_profile_region_begin(h->prof, GT_PROF_ALLREDUCE_ISSUED);
    gt_status s = gt_dp_grads_ready(h->dp, frontier);
    gt_profile_region_end(h->prof, GT_PROF_ALLREDUCE_ISSUED, (double)(gt_dp_bytes(h->dp) - b0));
    return s;
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

/* The held-out evaluation of a dense model (rank 0): n samples from
 * GT_TRAIN_EVAL_FIRST in forwards of at most M (x, y: host room for M),
 * evaluation mode, training mode again afterwards. Means summed in order. */
static gt_status held_out_eval(gt_model *model, const gt_task *task, int n, int M, float *x,
                               int32_t *y, gt_train_stats *st) {
    double sum = 0.0, bayes = 0.0;
    gt_status s = GT_OK;
    gt_model_set_training(model, 0);
    for (int done_n = 0; done_n < n && s == GT_OK;) {
        int k = n - done_n < M ? n - done_n : M;
        gt_task_fill(task, GT_TRAIN_EVAL_FIRST + (uint64_t)done_n, k, x, y);
        gt_batch b = {.n = k, .T = 1, .inputs = x, .targets = y};
        float loss = 0.0f;
        s = gt_model_forward(model, &b, &loss);
        sum += (double)loss * k;
        bayes += gt_task_bayes_loss_sum(task, x, y, k);
        done_n += k;
    }
    gt_model_set_training(model, 1);
    if (s != GT_OK) return gt_error_wrap(s, "held-out evaluation of %d samples", n);
    st->eval_loss = sum / n;
    st->eval_bayes = bayes / n;
    st->eval_samples = n;
    return GT_OK;
}

gt_status gt_train_run(const gt_train_config *cfg, gt_train_stats *st) {
    uint64_t run_start = gt_now_ns();
    memset(st, 0, sizeof *st);
    st->entropy = -1;
    st->eval_loss = st->eval_bayes = NAN;
    st->steps_to_target = -1;
    gt_comm *comm = cfg->comm;
    gt_comm *own_comm = NULL;
    int R = 1, rank = 0;
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
    if (dense) {
        /* the synthetic task is the data: nothing else applies */
        if (cfg->data_path || cfg->init_from)
            return GT_ERR(GT_ERR_INVALID,
                          "%s trains on its synthetic task (docs/models.md): --data and "
                          "--init-from are for gpt2",
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
    GT_TRY(gt_adamw_config_check(&cfg->opt));
    if (!comm) {
        gt_comm_config cc = gt_comm_defaults();
        cc.backend = "self";
        GT_TRY(gt_comm_world(&cc, &own_comm));
        comm = own_comm;
    }
    R = gt_comm_size(comm);
    rank = gt_comm_rank(comm);
    st->nranks = R;
    gt_status s = GT_OK;
    /* every shape error before any work, identically on every rank */
    /* deterministic: the micro-batch is the leaf of the reduction tree, so it
     * must not change with the rank count; 1 sequence unless told */
    int B = cfg->batch / R;
    int M = cfg->micro_batch > 0 ? cfg->micro_batch : cfg->deterministic ? 1 : B;
    int T = dense ? 1 : cfg->seq_len; /* predictions per sample */
    if (cfg->batch % R != 0) {
        s = GT_ERR(GT_ERR_INVALID,
                   "the global batch of %d sequences does not split across %d ranks: use a "
                   "--batch that is a multiple of %d",
                   cfg->batch, R, R);
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
    int fp16 = cfg->precision == GT_DTYPE_FP16;
    gt_lossscale ls;
    memset(&ls, 0, sizeof ls);
    if (s == GT_OK && fp16) s = gt_lossscale_init(&ls, &cfg->loss_scale);
    if (s != GT_OK) {
        gt_comm_free(own_comm);
        return s;
    }
    /* an unwritable destination fails now, not after hours of training */
    if (cfg->checkpoint_dir) {
        s = gt_train_agree(comm, gt_ckpt_dir_prepare(cfg->checkpoint_dir), &st->collective_error);
        if (s != GT_OK) {
            gt_comm_free(own_comm);
            return s;
        }
    }
    int k_local = B / M;

    size_t n = (size_t)cfg->steps;
    st->loss = calloc(n, sizeof(double));
    st->lr = calloc(n, sizeof(double));
    st->grad_norm = calloc(n, sizeof(double));
    st->ms = calloc(n, sizeof(double));
    st->wait_ms = calloc(n, sizeof(double));
    st->comm_ms = calloc(n, sizeof(double));
    st->loss_scale = calloc(n, sizeof(double));
    st->skipped = calloc(n, 1);
    st->final_loss_scale = 1.0;
    if (cfg->eval_every > 0) {
        size_t ne = n / (size_t)cfg->eval_every + 1;
        st->eval_curve = calloc(ne, sizeof(double));
        st->eval_at = calloc(ne, sizeof(int));
        if (!st->eval_curve || !st->eval_at) {
            gt_comm_free(own_comm);
            return GT_ERR(GT_ERR_OOM, "no host memory for %zu evaluations", ne);
        }
    }
    /* per rank: its micro-batch losses, then 1 when its gradient norm is not finite */
    float *mb_loss = calloc((size_t)k_local + 1, sizeof(float));
    float *all_loss = calloc(((size_t)k_local + 1) * R, sizeof(float));
    if (!st->loss || !st->lr || !st->grad_norm || !st->ms || !st->wait_ms || !st->comm_ms ||
        !st->loss_scale || !st->skipped || !mb_loss || !all_loss) {
        free(mb_loss);
        free(all_loss);
        gt_comm_free(own_comm);
        return GT_ERR(GT_ERR_OOM, "no host memory for %d steps of statistics", cfg->steps);
    }

    gt_backend *be = NULL;
    gt_model *model = NULL;
    gt_loader *loader = NULL;
    gt_task *task = NULL;
    float *dense_x = NULL;   /* (B, sample_numel) this rank's samples of a step */
    int32_t *dense_y = NULL; /* (B) their labels */
    size_t numel = 0;
    gt_dp *dp = NULL;
    grad_tree tree;
    memset(&tree, 0, sizeof tree);
    gt_tokens tok;
    memset(&tok, 0, sizeof tok);

    gt_backend_config bc = {.threads = cfg->threads, .device = -1};
    if ((s = gt_backend_new(cfg->backend, &bc, &be)) != GT_OK) goto done;
    snprintf(st->backend_desc, sizeof st->backend_desc, "%s", be->describe(be));
    /* before the model: every op it calls goes through the profile's table */
    if ((s = profile_start(cfg, be, rank, R, &st->profile)) != GT_OK) goto done;
    gt_profile *prof = st->profile;
    dp_hook_ctx hook = {NULL, prof};
    if (dense) {
        /* a backend that cannot store the precision refuses here, naming both */
        if ((s = gt_model_new_opts(be, cfg->model_name, cfg->model_options, cfg->precision, M,
                                   1, &model)) != GT_OK)
            goto done;
        gt_task_config tc;
        if ((s = gt_model_task(model, cfg->seed, &tc)) != GT_OK ||
            (s = gt_task_new(&tc, &task)) != GT_OK)
            goto done;
        /* the entropy of the label noise: the loss of a perfect model */
        st->entropy = gt_task_target_loss(task);
        st->vocab = gt_model_get_info(model)->classes;
        numel = gt_task_sample_numel(task);
        dense_x = malloc((size_t)B * numel * sizeof(float));
        dense_y = malloc((size_t)B * sizeof(int32_t));
        if (!dense_x || !dense_y) {
            s = GT_ERR(GT_ERR_OOM, "no host memory for a batch of %d samples", B);
            goto done;
        }
    } else {
        if ((s = load_data(cfg, &tok)) != GT_OK) goto done;
        st->entropy = tok.entropy;
        /* a backend that cannot store the precision refuses here, naming both */
        if ((s = gt_model_new_opts(be, cfg->model_name, cfg->model_options, cfg->precision, M,
                                   T, &model)) != GT_OK)
            goto done;
        st->vocab = gt_model_get_info(model)->classes;
        if (cfg->init_from && !cfg->resume &&
            (s = gt_model_init_from(model, cfg->init_from)) != GT_OK)
            goto done;
    }
    snprintf(st->unit, sizeof st->unit, "%s", gt_model_get_info(model)->unit);
    gt_train_run_id rid;
    if ((s = gt_train_identify_data(cfg, &tok, M, &rid)) != GT_OK) goto done;
    gt_dp_config dc = gt_dp_defaults();
    dc.zero = cfg->zero;
    dc.deterministic = cfg->deterministic;
    dc.chunk = gt_model_norm_chunk(model);
    dc.grad_dtype = cfg->precision;
    if (cfg->bucket_mb > 0) dc.bucket_bytes = (size_t)(cfg->bucket_mb * 1048576.0);
    if ((s = gt_dp_new(comm, be, &dc, gt_model_num_params(model), &dp)) != GT_OK) goto done;
    hook.dp = dp;
    size_t lo, hi;
    gt_dp_shard(dp, &lo, &hi);
    if ((s = gt_model_pad(model, gt_dp_padded(dp))) != GT_OK) goto done;
    if ((s = gt_model_set_opt_range(model, lo, hi)) != GT_OK) goto done;
    int64_t start = 0;
    if (cfg->resume) {
        s = gt_train_agree(comm,
                  gt_train_load_checkpoint(cfg, model, comm, &rid, st, lo, hi, fp16 ? &ls : NULL, &start),
                  &st->collective_error);
        if (s != GT_OK) goto done;
        st->first_step = (int)start;
        if (fp16) {
            st->skipped_steps = ls.skipped;
            st->final_loss_scale = ls.scale;
        }
    } else if (cfg->init_from) {
        /* loaded into the gpt2 before it was wrapped (above) */
    } else if ((s = gt_model_init_random(model, cfg->seed)) != GT_OK) {
        goto done;
    }
    {
        /* fault injection for the consistency check's test: rank N starts
         * with one parameter changed */
        const char *fault = getenv("GT_FAULT_PERTURB_RANK");
        if (fault && atoi(fault) == rank && R > 1) {
            float one = 1.0f;
            float *p = gt_model_params_buffer(model);
            size_t last = gt_model_num_params(model) - 1;
            if ((s = be->copy_to_device(be, p + last, &one, sizeof one)) != GT_OK ||
                (s = gt_model_sync_weights(model, last, last + 1)) != GT_OK)
                goto done;
        }
    }
    if (R > 1 && (s = check_consistency(model, comm, 0)) != GT_OK) goto done;
    if (cfg->deterministic && k_local > 1) {
        tree.n = gt_model_num_params_padded(model);
        tree.dt = cfg->precision;
        while ((1 << tree.nslots) <= k_local) tree.nslots++;
        for (int l = 0; l < tree.nslots; l++)
            if ((s = gt_backend_alloc(be, tree.n * gt_dtype_size(tree.dt), &tree.slot[l])) !=
                GT_OK)
                goto done;
    }
    st->num_params = gt_model_num_params(model);
    st->flops_per_token = gt_model_flops_per_unit(model); /* per token / sample / image */
    st->peak_gflops = cfg->peak_gflops;
    snprintf(st->peak_how, sizeof st->peak_how, "--peak-gflops");
    if (cfg->peak_gflops < 0) {
        st->peak_gflops = 0; /* GT_TRAIN_NO_MFU: mfu stays 0 and is not reported */
        snprintf(st->peak_how, sizeof st->peak_how, "none");
    } else if (st->peak_gflops == 0 && be->timer_start) {
        /* a device backend: a large GEMM in the training dtype, timed on the device
         * (the bf16 tensor-core rate for bf16 training, true fp32 for fp32) */
        const char *how = NULL;
        if ((s = gt_probe_gemm_peak(be, cfg->precision, &st->peak_gflops, &how)) != GT_OK) goto done;
        snprintf(st->peak_how, sizeof st->peak_how, "measured %s GEMM %d^3 (device timers)",
                 gt_dtype_name(cfg->precision), GT_PROBE_GEMM_N);
    } else if (st->peak_gflops == 0) {
        gt_peaks pk;
        if ((s = gt_probe_measure_sgemm(be, 3, &pk)) != GT_OK) goto done;
        st->peak_gflops = pk.sgemm_gflops;
        snprintf(st->peak_how, sizeof st->peak_how, "measured SGEMM n=%d", pk.sgemm_n);
    }
    st->datasheet_gflops =
        cfg->peak_gflops < 0 ? 0 : gt_probe_datasheet_gflops(be, cfg->precision);

    gt_loader_config lc = {.global_batch = cfg->batch,
                           .seq_len = T,
                           .rank = rank,
                           .nranks = R,
                           .order = cfg->data_order,
                           .seed = cfg->seed,
                           .start_step = start,
                           .prefetch = cfg->prefetch};
    if (!dense && (s = gt_loader_new(&tok, &lc, &loader)) != GT_OK) goto done;

    void *grads = gt_model_grads_buffer(model);
    float *params = gt_model_params_buffer(model);
    /* each token's loss weighs 1 / (global tokens): the sum over ranks is the
     * gradient of the global mean */
    float dloss = 1.0f / (float)((double)cfg->batch * T);
    /* fault injection for the watchdog's test: "RANK:STEP" stops that rank
     * (it sleeps) at the start of that step, as a hung or dead peer would */
    int stall_rank = -1, stall_step = -1;
    const char *stall = getenv("GT_FAULT_STALL");
    if (stall && sscanf(stall, "%d:%d", &stall_rank, &stall_step) != 2) stall_rank = -1;
    /* fault injection for the non-finite test: "RANK:STEP" makes that rank
     * write a NaN into one gradient of its shard before the norm;
     * "RANK:STEP:loss" makes that rank's loss NaN instead, as a forward that
     * overflowed would (not a loss-scaling matter, even in fp16) */
    int nan_rank = -1, nan_step = -1, nan_loss = 0;
    const char *nanf = getenv("GT_FAULT_NAN");
    if (nanf) {
        char what[8] = "";
        int got = sscanf(nanf, "%d:%d:%7s", &nan_rank, &nan_step, what);
        if (got < 2) nan_rank = -1;
        nan_loss = got == 3 && strcmp(what, "loss") == 0;
    }
    /* fault injection for the loss scaler's test: "STEP" makes rank 0 start
     * that step's backward from an infinite dloss, so its gradients overflow */
    const char *ovf = getenv("GT_FAULT_OVERFLOW");
    int overflow_step = ovf ? atoi(ovf) : -1;
    int end = cfg->stop_after > 0 && cfg->stop_after < cfg->steps ? cfg->stop_after : cfg->steps;
    size_t uhi = hi < gt_model_num_params(model) ? hi : gt_model_num_params(model);
    for (int step = (int)start; step < end; step++) {
        int i = step - (int)start; /* this run's statistics */
        if (rank == stall_rank && step + 1 == stall_step)
            for (;;) sleep(1000);
        uint64_t t0 = gt_now_ns(), wait = 0;
        if (prof) gt_profile_step_begin(prof, i, t0);
        if (i == 0) {
            uint64_t origin = cfg->origin_ns && cfg->origin_ns < t0 ? cfg->origin_ns : run_start;
            st->startup_ms = (double)(t0 - origin) * 1e-6;
        }
        const int32_t *inputs = NULL, *targets = NULL;
        if (dense) {
            /* this rank's samples of the global batch, made on the spot:
             * sample i is the same whoever makes it */
            uint64_t w0 = gt_now_ns();
            gt_task_fill(task, (uint64_t)step * cfg->batch + (uint64_t)rank * B, B, dense_x,
                         dense_y);
            wait = gt_now_ns() - w0;
            gt_profile_region_add(prof, GT_PROF_DATA_WAIT, w0, w0 + wait, 0);
        } else {
            if ((s = gt_loader_next(loader, &inputs, &targets, &wait)) != GT_OK) goto done;
            uint64_t w1 = gt_now_ns();
            gt_profile_region_add(prof, GT_PROF_DATA_WAIT, w1 - wait, w1, 0);
        }
        if ((s = gt_dp_begin(dp, grads)) != GT_OK) goto done;
        if ((s = gt_model_zero_grad(model)) != GT_OK) goto done;
        /* fp16: the scaled loss keeps small gradients above fp16's underflow */
        float scale = fp16 ? ls.scale : 1.0f;
        float dloss_step = dloss * scale;
        if (rank == 0 && step + 1 == overflow_step) {
            fprintf(stderr, "gauntlet: GT_FAULT_OVERFLOW: rank 0 starts the backward of step %d "
                            "from an infinite dloss\n", step + 1);
            dloss_step = INFINITY;
        }
        for (int j = 0; j < k_local; j++) {
            gt_batch mb = {.n = M, .T = T};
            if (dense) {
                mb.inputs = dense_x + (size_t)j * M * numel;
                mb.targets = dense_y + (size_t)j * M;
            } else {
                mb.tokens = inputs + (size_t)j * M * T;
                mb.targets = targets + (size_t)j * M * T;
            }
            int last = j == k_local - 1;
            if (cfg->deterministic && j > 0 && (s = gt_model_zero_grad(model)) != GT_OK)
                goto done;
            gt_model_set_grad_hook(model, last && !cfg->deterministic ? dp_hook : NULL, &hook);
            if ((s = gt_model_forward_backward(model, &mb, dloss_step, &mb_loss[j])) != GT_OK)
                goto done;
            if (cfg->deterministic && k_local > 1 &&
                (s = tree_push(be, &tree, grads)) != GT_OK)
                goto done;
        }
        gt_model_set_grad_hook(model, NULL, NULL);
        if (cfg->deterministic && k_local > 1) {
            int top = tree.nslots - 1;
            s = be->copy_device(be, grads, tree.slot[top], tree.n * gt_dtype_size(tree.dt));
            tree.used[top] = 0;
            if (s != GT_OK) goto done;
        }
        void *gshard = NULL;
        double exposed = 0;
        size_t bytes0 = gt_dp_bytes(dp);
        gt_profile_region_begin(prof, GT_PROF_ALLREDUCE_EXPOSED);
        s = gt_dp_finish(dp, &gshard, &exposed);
        gt_profile_region_end(prof, GT_PROF_ALLREDUCE_EXPOSED, (double)(gt_dp_bytes(dp) - bytes0));
        if (s != GT_OK) goto done;
        if (rank == nan_rank && step + 1 == nan_step && nan_loss) {
            fprintf(stderr, "gauntlet: GT_FAULT_NAN: rank %d makes its loss NaN at step %d\n",
                    rank, step + 1);
            mb_loss[0] = NAN;
        } else if (rank == nan_rank && step + 1 == nan_step && lo < uhi) {
            size_t x = lo + (uhi - lo) / 2;
            uint16_t bad16 = cfg->precision == GT_DTYPE_BF16 ? gt_fp32_to_bf16(NAN)
                                                             : gt_fp32_to_fp16(NAN);
            float bad = NAN;
            gt_model_loc loc;
            char name[96];
            gt_model_locate(model, x, &loc);
            gt_model_loc_format(model, &loc, name, sizeof name);
            fprintf(stderr, "gauntlet: GT_FAULT_NAN: rank %d writes NaN into the gradient of %s "
                            "at step %d\n", rank, name, step + 1);
            size_t es = gt_dtype_size(cfg->precision);
            if ((s = be->copy_to_device(be, (char *)gshard + (x - lo) * es,
                                        es == sizeof bad ? (const void *)&bad : &bad16, es)) !=
                GT_OK)
                goto done;
        }
        double norm = 0;
        if ((s = gt_dp_grad_norm(dp, &norm)) != GT_OK) goto done;
        /* the global mean loss, summed in global micro-batch order, and which
         * ranks saw a non-finite norm (without ZeRO each rank computes its own
         * from its copy of the sums: one corrupted copy shows only there) */
        mb_loss[k_local] = isfinite(norm) ? 0.0f : 1.0f;
        if ((s = gt_comm_allgather(comm, mb_loss, all_loss, (size_t)k_local + 1, GT_DTYPE_FP32,
                                   NULL)) != GT_OK)
            goto done;
        double lsum = 0;
        int bad_rank = -1, at_loss = 0;
        for (int r = 0; r < R; r++)
            for (int j = 0; j < k_local; j++) {
                float v = all_loss[(size_t)r * (k_local + 1) + j];
                lsum += v;
                if (!isfinite(v) && bad_rank < 0) {
                    bad_rank = r;
                    at_loss = 1;
                }
            }
        double loss = lsum / (k_local * R);
        for (int r = 0; r < R && bad_rank < 0; r++)
            if (all_loss[(size_t)r * (k_local + 1) + k_local] != 0.0f) bad_rank = r;
        /* fp16: a finite loss with non-finite gradients is an overflow that
         * the scaler handles; every rank sees the same flags, so every rank
         * skips together. A non-finite loss is never a scaling matter. */
        int skip = 0;
        if (fp16 && isfinite(loss) && !at_loss) {
            if ((s = gt_lossscale_update(&ls, bad_rank < 0, &skip)) != GT_OK) {
                s = gt_error_wrap(s, "step %d", step + 1);
                st->collective_error = R > 1;
                goto done;
            }
            if (skip) {
                fprintf(stderr,
                        "gauntlet: step %d: fp16 gradients overflowed at loss scale %g: step "
                        "skipped, scale now %g\n",
                        step + 1, (double)scale, (double)ls.scale);
                bad_rank = -1;
            }
        }
        if (!isfinite(loss) || bad_rank >= 0) {
            if (bad_rank < 0) {
                bad_rank = 0;
                at_loss = 1;
            }
            s = nonfinite_error(model, comm, gshard, lo, hi, step + 1, bad_rank, at_loss,
                                at_loss ? loss : NAN);
            st->collective_error = R > 1;
            goto done;
        }
        /* the lr schedule advances on a skipped step (torch: scheduler.step()
         * runs, optimizer.step() does not); AdamW's t counts real updates */
        float lr = gt_lr_at(&cfg->opt, step);
        norm /= scale; /* clipping and the report see the unscaled norm */
        bytes0 = gt_dp_bytes(dp); /* ZeRO-1: the parameters' all-gather */
        gt_profile_region_begin(prof, GT_PROF_OPTIMIZER);
        if (!skip) {
            int t = step + 1 - (int)ls.skipped;
            float gscale = gt_clip_scale(&cfg->opt, norm) / scale;
            if (lo < uhi && (s = gt_model_update_range(model, &cfg->opt, t, lr, gscale, gshard, lo,
                                                      uhi)) != GT_OK)
                goto done;
            if ((s = gt_dp_gather_params(dp, params)) != GT_OK) goto done;
            /* ZeRO-1: the other ranks' shards arrived as fp32 masters */
            if (cfg->zero && R > 1 && ((s = gt_model_sync_weights(model, 0, lo)) != GT_OK ||
                                       (s = gt_model_sync_weights(model, hi, gt_dp_padded(dp))) !=
                                           GT_OK))
                goto done;
        }
        gt_profile_region_end(prof, GT_PROF_OPTIMIZER, (double)(gt_dp_bytes(dp) - bytes0));
        if ((s = be->synchronize(be)) != GT_OK) goto done;
        if (R > 1 && cfg->check_every > 0 && (step + 1) % cfg->check_every == 0 &&
            (s = check_consistency(model, comm, step + 1)) != GT_OK)
            goto done;
        uint64_t t1 = gt_now_ns();
        double ms = (double)(t1 - t0) * 1e-6;
        /* after the step's synchronisation: the device marks have passed */
        if (prof && (s = gt_profile_step_end(prof, t1)) != GT_OK) goto done;
        st->loss[i] = loss;
        st->lr[i] = lr;
        st->grad_norm[i] = norm;
        st->ms[i] = ms;
        st->wait_ms[i] = (double)wait * 1e-6;
        st->comm_ms[i] = exposed * 1e3;
        st->loss_scale[i] = scale;
        st->skipped[i] = (unsigned char)skip;
        st->steps_done = i + 1;
        if (fp16) {
            st->skipped_steps = ls.skipped;
            st->final_loss_scale = ls.scale;
        }
        double tps = (double)cfg->batch * T / (ms * 1e-3);
        double mfu = st->peak_gflops > 0
                         ? tps * st->flops_per_token / (st->peak_gflops * 1e9 * R)
                         : 0.0;
        if (cfg->on_step && rank == 0)
            cfg->on_step(cfg->on_step_ctx, step + 1, cfg->steps, (float)loss, lr, norm, ms, tps,
                         mfu);
        /* after the step's timing: neither an evaluation nor a checkpoint is
         * training time */
        if (dense && cfg->eval_every > 0 && (step + 1) % cfg->eval_every == 0 && rank == 0) {
            if (cfg->on_eval) cfg->on_eval(cfg->on_eval_ctx, step + 1, 0, NAN);
            if ((s = held_out_eval(model, task, cfg->eval_samples, M, dense_x, dense_y, st)) !=
                GT_OK)
                goto done;
            if (cfg->on_eval) cfg->on_eval(cfg->on_eval_ctx, step + 1, 1, st->eval_loss);
            st->eval_curve[st->n_evals] = st->eval_loss;
            st->eval_at[st->n_evals++] = step + 1;
            if (cfg->target_gap > 0 && st->steps_to_target < 0 &&
                st->eval_loss - st->eval_bayes <= cfg->target_gap) {
                st->steps_to_target = step + 1;
                double t = 0.0;
                for (int j = 0; j <= i; j++) t += st->ms[j];
                st->time_to_target_s = t * 1e-3;
            }
        }
        if (cfg->checkpoint_every > 0 && (step + 1) % cfg->checkpoint_every == 0 &&
            (s = gt_train_save_checkpoint(cfg, model, comm, lo, hi, step + 1, st->backend_desc, &rid,
                                 fp16 ? &ls : NULL, &st->collective_error)) != GT_OK)
            goto done;
    }
    /* the first step pays for first-touch page faults and cache warm-up */
    int skip = st->steps_done > 1 ? 1 : 0;
    st->ms_per_step = gt_median(st->ms + skip, (size_t)(st->steps_done - skip));
    st->tokens_per_s = (double)cfg->batch * T / (st->ms_per_step * 1e-3);
    st->exposed_comm_ms = gt_median(st->comm_ms + skip, (size_t)(st->steps_done - skip));
    if (st->peak_gflops > 0)
        st->mfu = st->tokens_per_s * st->flops_per_token / (st->peak_gflops * 1e9 * R);
    if (st->datasheet_gflops > 0)
        st->mfu_datasheet = st->tokens_per_s * st->flops_per_token / (st->datasheet_gflops * 1e9 * R);
    if (dense && cfg->eval_samples > 0 && rank == 0) {
        if (cfg->on_eval) cfg->on_eval(cfg->on_eval_ctx, st->first_step + st->steps_done, 0, NAN);
        if ((s = held_out_eval(model, task, cfg->eval_samples, M, dense_x, dense_y, st)) != GT_OK)
            goto done;
        if (cfg->on_eval) cfg->on_eval(cfg->on_eval_ctx, st->first_step + st->steps_done, 1, st->eval_loss);
    }
    {
        /* the parameters, then the state tensors (BatchNorm running statistics) */
        size_t nst = gt_model_state_numel(model);
        size_t bytes = st->num_params * sizeof(float);
        float *host = malloc(bytes + nst * sizeof(float));
        if (!host) {
            s = GT_ERR(GT_ERR_OOM, "no host memory for the final parameters");
            goto done;
        }
        if ((s = gt_model_get_params(model, host)) == GT_OK)
            st->weights_digest = gt_fnv1a64(GT_FNV1A64_INIT, host, bytes);
        if (s == GT_OK &&
            (s = gt_model_get_state(model, host + st->num_params)) == GT_OK)
            /* FNV-1a runs byte by byte: the parameters' hash goes on over the
             * state instead of hashing the parameters again */
            st->params_digest =
                gt_fnv1a64(st->weights_digest, host + st->num_params, nst * sizeof(float));
        free(host);
    }
done:
    if (be) gt_allocator_stats(be->alloc, &st->mem);
    if (dp) st->comm_bytes = gt_dp_bytes(dp);
    for (int l = 0; l < tree.nslots; l++) gt_backend_dealloc(be, tree.slot[l]);
    gt_profile_detach(st->profile); /* the backend's own table back; the figures stay */
    gt_dp_free(dp);
    gt_loader_free(loader);
    gt_model_free(model);
    gt_task_free(task);
    free(dense_x);
    free(dense_y);
    gt_tokens_release(&tok);
    gt_backend_free(be);
    gt_comm_free(own_comm);
    free(mb_loss);
    free(all_loss);
    return s;
}

int64_t gt_train_data_position(const gt_train_config *cfg, int64_t step) {
    return step * cfg->batch * (gt_train_dense(cfg) ? 1 : cfg->seq_len);
}
