/* The training loop: one process, one backend (data parallelism joins with
 * the communicator). */
#include "suites/train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/backend.h"
#include "engine/dp.h"
#include "kernels/ops.h"
#include "engine/env.h"
#include "engine/timer.h"

gt_train_config gt_train_defaults(void) {
    gt_train_config c;
    memset(&c, 0, sizeof c);
    snprintf(c.model_name, sizeof c.model_name, "gpt2-tiny");
    gt_gpt2_preset("gpt2-tiny", &c.model);
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
    memset(s, 0, sizeof *s);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(const double *v, int n) {
    if (n <= 0) return NAN;
    double *t = malloc((size_t)n * sizeof *t);
    if (!t) return NAN;
    memcpy(t, v, (size_t)n * sizeof *t);
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    double m = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
    free(t);
    return m;
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
    if (cfg->data_path) {
        GT_TRY(gt_tokens_read(cfg->data_path, tok));
        for (int64_t i = 0; i < tok->n; i++)
            if (tok->tokens[i] >= cfg->model.vocab_size)
                return GT_ERR(GT_ERR_INVALID,
                              "'%s': token %d at position %lld is outside the model's "
                              "vocabulary of %d: pick a model with --vocab >= %d",
                              cfg->data_path, (int)tok->tokens[i], (long long)i,
                              cfg->model.vocab_size, tok->vocab);
        return GT_OK;
    }
    gt_synth_config sc = gt_synth_defaults();
    sc.vocab = cfg->model.vocab_size;
    sc.branch = cfg->synth_branch > 0 ? cfg->synth_branch : sc.branch;
    sc.seed = cfg->seed;
    /* every step sees tokens it has not seen: otherwise a model can learn
     * the sample by heart and go below the entropy rate */
    int64_t need = (int64_t)cfg->steps * cfg->batch * cfg->seq_len + 1;
    sc.n_tokens = cfg->synth_tokens > 0 ? cfg->synth_tokens : need;
    if (sc.n_tokens < cfg->seq_len + 1) sc.n_tokens = cfg->seq_len + 1;
    return gt_synth_generate(&sc, tok);
}

static uint64_t fnv1a(const void *data, size_t n) {
    const unsigned char *p = data;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* FNV-1a of every parameter tensor (llm.c order), compared across ranks:
 * a mismatch names the first tensor that differs and the ranks involved. */
static gt_status check_consistency(gt_gpt2 *model, gt_comm *comm, int step) {
    size_t n = gt_gpt2_num_params(model);
    float *host = malloc(n * sizeof(float));
    if (!host) return GT_ERR(GT_ERR_OOM, "out of host memory for the consistency check");
    gt_status s = gt_gpt2_get_params(model, host);
    int64_t mine[GT_GPT2_NUM_TENSORS];
    size_t off = 0;
    for (int i = 0; i < GT_GPT2_NUM_TENSORS; i++) {
        size_t len = gt_gpt2_tensor_size(model, i);
        mine[i] = (int64_t)fnv1a(host + off, len * sizeof(float));
        off += len;
    }
    free(host);
    if (s != GT_OK) return s;
    int R = gt_comm_size(comm);
    int64_t *all = malloc((size_t)R * GT_GPT2_NUM_TENSORS * sizeof(int64_t));
    if (!all) return GT_ERR(GT_ERR_OOM, "out of host memory for the consistency check");
    s = gt_comm_allgather(comm, mine, all, GT_GPT2_NUM_TENSORS, GT_DTYPE_INT64, NULL);
    for (int i = 0; i < GT_GPT2_NUM_TENSORS && s == GT_OK; i++)
        for (int r = 1; r < R; r++)
            if (all[(size_t)r * GT_GPT2_NUM_TENSORS + i] != all[i]) {
                s = GT_ERR(GT_ERR_MISMATCH,
                           "parameters differ across ranks %s%.0d: tensor '%s' on rank %d "
                           "(hash %016llx) vs rank 0 (hash %016llx)",
                           step ? "after step " : "at initialisation", step,
                           gt_gpt2_tensor_name(i),
                           gt_comm_world_rank(comm, r),
                           (unsigned long long)all[(size_t)r * GT_GPT2_NUM_TENSORS + i],
                           (unsigned long long)all[i]);
                break;
            }
    free(all);
    return s;
}

static int is_pow2(int x) { return x > 0 && (x & (x - 1)) == 0; }

/* Balanced binary tree over this rank's micro-batch gradients, kept as a
 * stack of partial sums (a binary counter): slot l holds the sum of 2^l
 * consecutive micro-batches. With a power-of-two count it is the same tree
 * as any other split of the same leaves over ranks. */
typedef struct grad_tree {
    float *slot[32];
    int used[32];
    int nslots;
    size_t n;
} grad_tree;

static gt_status tree_push(gt_backend *be, grad_tree *t, const float *g) {
    gt_kctx k = {.be = be, .dt = GT_DTYPE_FP32};
    size_t bytes = t->n * sizeof(float);
    int l = 0;
    const float *carry = g;
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

static gt_status dp_hook(void *ctx, size_t frontier) { return gt_dp_grads_ready(ctx, frontier); }

gt_status gt_train_run(const gt_train_config *cfg, gt_train_stats *st) {
    memset(st, 0, sizeof *st);
    st->entropy = -1;
    gt_comm *comm = cfg->comm;
    gt_comm *own_comm = NULL;
    int R = 1, rank = 0;
    if (cfg->steps < 1) return GT_ERR(GT_ERR_INVALID, "--steps must be >= 1, got %d", cfg->steps);
    if (cfg->batch < 1) return GT_ERR(GT_ERR_INVALID, "--batch must be >= 1, got %d", cfg->batch);
    if (cfg->seq_len < 1 || cfg->seq_len > cfg->model.max_seq_len)
        return GT_ERR(GT_ERR_INVALID,
                      "--seq %d is out of range: the model's max_seq_len is %d (raise it with "
                      "--max-seq or shorten --seq)",
                      cfg->seq_len, cfg->model.max_seq_len);
    GT_TRY(gt_gpt2_config_check(&cfg->model));
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
    int T = cfg->seq_len;
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
    if (s != GT_OK) {
        gt_comm_free(own_comm);
        return s;
    }
    int k_local = B / M;

    size_t n = (size_t)cfg->steps;
    st->loss = calloc(n, sizeof(double));
    st->lr = calloc(n, sizeof(double));
    st->grad_norm = calloc(n, sizeof(double));
    st->ms = calloc(n, sizeof(double));
    st->wait_ms = calloc(n, sizeof(double));
    st->comm_ms = calloc(n, sizeof(double));
    float *mb_loss = calloc((size_t)k_local, sizeof(float));
    float *all_loss = calloc((size_t)k_local * R, sizeof(float));
    if (!st->loss || !st->lr || !st->grad_norm || !st->ms || !st->wait_ms || !st->comm_ms ||
        !mb_loss || !all_loss) {
        free(mb_loss);
        free(all_loss);
        gt_comm_free(own_comm);
        return GT_ERR(GT_ERR_OOM, "no host memory for %d steps of statistics", cfg->steps);
    }

    gt_backend *be = NULL;
    gt_gpt2 *model = NULL;
    gt_loader *loader = NULL;
    gt_dp *dp = NULL;
    grad_tree tree;
    memset(&tree, 0, sizeof tree);
    gt_tokens tok;
    memset(&tok, 0, sizeof tok);

    gt_backend_config bc = {.threads = cfg->threads, .device = -1};
    if ((s = gt_backend_new(cfg->backend, &bc, &be)) != GT_OK) goto done;
    snprintf(st->backend_desc, sizeof st->backend_desc, "%s", be->describe(be));
    if ((s = load_data(cfg, &tok)) != GT_OK) goto done;
    st->entropy = tok.entropy;
    st->vocab = cfg->model.vocab_size;

    if ((s = gt_gpt2_new(be, &cfg->model, M, T, &model)) != GT_OK) goto done;
    gt_dp_config dc = gt_dp_defaults();
    dc.zero = cfg->zero;
    dc.deterministic = cfg->deterministic;
    dc.chunk = gt_gpt2_norm_chunk(model);
    if (cfg->bucket_mb > 0) dc.bucket_bytes = (size_t)(cfg->bucket_mb * 1048576.0);
    if ((s = gt_dp_new(comm, be, &dc, gt_gpt2_num_params(model), &dp)) != GT_OK) goto done;
    size_t lo, hi;
    gt_dp_shard(dp, &lo, &hi);
    if ((s = gt_gpt2_pad(model, gt_dp_padded(dp))) != GT_OK) goto done;
    if ((s = gt_gpt2_set_opt_range(model, lo, hi)) != GT_OK) goto done;
    if (cfg->init_from) {
        if (strncmp(cfg->init_from, "llmc:", 5) != 0) {
            s = GT_ERR(GT_ERR_INVALID,
                       "--init-from '%s': expected llmc:FILE (an llm.c model file)",
                       cfg->init_from);
            goto done;
        }
        if ((s = gt_gpt2_load_llmc(model, cfg->init_from + 5)) != GT_OK) goto done;
    } else if ((s = gt_gpt2_init_random(model, cfg->seed)) != GT_OK) {
        goto done;
    }
    {
        /* fault injection for the consistency check's test: rank N starts
         * with one parameter changed */
        const char *fault = getenv("GT_FAULT_PERTURB_RANK");
        if (fault && atoi(fault) == rank && R > 1) {
            float one = 1.0f;
            float *p = gt_gpt2_params_buffer(model);
            if ((s = be->copy_to_device(be, p + gt_gpt2_num_params(model) - 1, &one,
                                        sizeof one)) != GT_OK)
                goto done;
        }
    }
    if (R > 1 && (s = check_consistency(model, comm, 0)) != GT_OK) goto done;
    if (cfg->deterministic && k_local > 1) {
        tree.n = gt_gpt2_num_params_padded(model);
        while ((1 << tree.nslots) <= k_local) tree.nslots++;
        for (int l = 0; l < tree.nslots; l++)
            if ((s = gt_backend_alloc(be, tree.n * sizeof(float), (void **)&tree.slot[l])) !=
                GT_OK)
                goto done;
    }
    st->num_params = gt_gpt2_num_params(model);
    st->flops_per_token = gt_gpt2_flops_per_token(model, T);
    st->peak_gflops = cfg->peak_gflops;
    if (st->peak_gflops <= 0) {
        gt_peaks pk;
        if ((s = gt_env_measure_peaks(be, &pk)) != GT_OK) goto done;
        st->peak_gflops = pk.sgemm_gflops;
    }

    gt_loader_config lc = {.global_batch = cfg->batch,
                           .seq_len = T,
                           .rank = rank,
                           .nranks = R,
                           .order = cfg->data_order,
                           .seed = cfg->seed,
                           .start_step = 0,
                           .prefetch = cfg->prefetch};
    if ((s = gt_loader_new(&tok, &lc, &loader)) != GT_OK) goto done;

    float *grads = gt_gpt2_grads_buffer(model);
    float *params = gt_gpt2_params_buffer(model);
    /* each token's loss weighs 1 / (global tokens): the sum over ranks is the
     * gradient of the global mean */
    float dloss = 1.0f / (float)((double)cfg->batch * T);
    /* fault injection for the watchdog's test: "RANK:STEP" stops that rank
     * (it sleeps) at the start of that step, as a hung or dead peer would */
    int stall_rank = -1, stall_step = -1;
    const char *stall = getenv("GT_FAULT_STALL");
    if (stall && sscanf(stall, "%d:%d", &stall_rank, &stall_step) != 2) stall_rank = -1;
    for (int step = 0; step < cfg->steps; step++) {
        if (rank == stall_rank && step + 1 == stall_step)
            for (;;) sleep(1000);
        uint64_t t0 = gt_now_ns(), wait = 0;
        const int32_t *inputs, *targets;
        if ((s = gt_loader_next(loader, &inputs, &targets, &wait)) != GT_OK) goto done;
        if ((s = gt_dp_begin(dp, grads)) != GT_OK) goto done;
        if ((s = gt_gpt2_zero_grad(model)) != GT_OK) goto done;
        for (int j = 0; j < k_local; j++) {
            const int32_t *in = inputs + (size_t)j * M * T, *tg = targets + (size_t)j * M * T;
            int last = j == k_local - 1;
            if (cfg->deterministic && j > 0 && (s = gt_gpt2_zero_grad(model)) != GT_OK)
                goto done;
            gt_gpt2_set_grad_hook(model, last && !cfg->deterministic ? dp_hook : NULL, dp);
            if ((s = gt_gpt2_forward_backward(model, in, tg, M, T, dloss, &mb_loss[j])) != GT_OK)
                goto done;
            if (cfg->deterministic && k_local > 1 &&
                (s = tree_push(be, &tree, grads)) != GT_OK)
                goto done;
        }
        gt_gpt2_set_grad_hook(model, NULL, NULL);
        if (cfg->deterministic && k_local > 1) {
            int top = tree.nslots - 1;
            s = be->copy_device(be, grads, tree.slot[top], tree.n * sizeof(float));
            tree.used[top] = 0;
            if (s != GT_OK) goto done;
        }
        float *gshard = NULL;
        double exposed = 0;
        if ((s = gt_dp_finish(dp, &gshard, &exposed)) != GT_OK) goto done;
        /* the global mean loss, summed in global micro-batch order */
        if ((s = gt_comm_allgather(comm, mb_loss, all_loss, (size_t)k_local, GT_DTYPE_FP32,
                                   NULL)) != GT_OK)
            goto done;
        double lsum = 0;
        for (int j = 0; j < k_local * R; j++) lsum += all_loss[j];
        double loss = lsum / (k_local * R);
        if (!isfinite(loss)) {
            s = GT_ERR(GT_ERR_INVALID, "loss is %g at step %d: training diverged", loss,
                       step + 1);
            goto done;
        }
        double norm = 0;
        if ((s = gt_dp_grad_norm(dp, &norm)) != GT_OK) goto done;
        if (!isfinite(norm)) {
            s = GT_ERR(GT_ERR_INVALID, "gradient norm is %g at step %d: training diverged "
                                       "(lower --lr or enable --grad-clip)",
                       norm, step + 1);
            goto done;
        }
        float lr = gt_lr_at(&cfg->opt, step);
        float scale = gt_clip_scale(&cfg->opt, norm);
        size_t uhi = hi < st->num_params ? hi : st->num_params;
        if (lo < uhi &&
            (s = gt_gpt2_update_range(model, &cfg->opt, step + 1, lr, scale, gshard, lo, uhi)) !=
                GT_OK)
            goto done;
        if ((s = gt_dp_gather_params(dp, params)) != GT_OK) goto done;
        if ((s = be->synchronize(be)) != GT_OK) goto done;
        if (R > 1 && cfg->check_every > 0 && (step + 1) % cfg->check_every == 0 &&
            (s = check_consistency(model, comm, step + 1)) != GT_OK)
            goto done;
        double ms = (double)(gt_now_ns() - t0) * 1e-6;
        st->loss[step] = loss;
        st->lr[step] = lr;
        st->grad_norm[step] = norm;
        st->ms[step] = ms;
        st->wait_ms[step] = (double)wait * 1e-6;
        st->comm_ms[step] = exposed * 1e3;
        st->steps_done = step + 1;
        double tps = (double)cfg->batch * T / (ms * 1e-3);
        double mfu = tps * st->flops_per_token / (st->peak_gflops * 1e9 * R);
        if (cfg->on_step && rank == 0)
            cfg->on_step(cfg->on_step_ctx, step + 1, cfg->steps, (float)loss, lr, norm, ms, tps,
                         mfu);
    }
    /* the first step pays for first-touch page faults and cache warm-up */
    int skip = st->steps_done > 1 ? 1 : 0;
    st->ms_per_step = median(st->ms + skip, st->steps_done - skip);
    st->tokens_per_s = (double)cfg->batch * T / (st->ms_per_step * 1e-3);
    st->exposed_comm_ms = median(st->comm_ms + skip, st->steps_done - skip);
    st->mfu = st->tokens_per_s * st->flops_per_token / (st->peak_gflops * 1e9 * R);
    {
        size_t bytes = st->num_params * sizeof(float);
        float *host = malloc(bytes);
        if (!host) {
            s = GT_ERR(GT_ERR_OOM, "no host memory for the final parameters");
            goto done;
        }
        if ((s = gt_gpt2_get_params(model, host)) == GT_OK) st->params_digest = fnv1a(host, bytes);
        free(host);
    }
done:
    if (be) gt_allocator_stats(be->alloc, &st->mem);
    if (dp) st->comm_bytes = gt_dp_bytes(dp);
    for (int l = 0; l < tree.nslots; l++) gt_backend_dealloc(be, tree.slot[l]);
    gt_dp_free(dp);
    gt_loader_free(loader);
    gt_gpt2_free(model);
    gt_tokens_release(&tok);
    gt_backend_free(be);
    gt_comm_free(own_comm);
    free(mb_loss);
    free(all_loss);
    return s;
}

void gt_train_record(const gt_train_config *cfg, const gt_train_stats *st, gt_result *res) {
    const gt_gpt2_config *m = &cfg->model;
    gt_result_param_str(res, "model", cfg->model_name);
    gt_result_param_int(res, "layers", m->num_layers);
    gt_result_param_int(res, "heads", m->num_heads);
    gt_result_param_int(res, "channels", m->channels);
    gt_result_param_int(res, "vocab", m->vocab_size);
    gt_result_param_int(res, "padded_vocab", m->padded_vocab_size);
    gt_result_param_int(res, "max_seq", m->max_seq_len);
    gt_result_param_int(res, "batch", cfg->batch);
    gt_result_param_int(res, "seq", cfg->seq_len);
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
    gt_result_param_str(res, "precision", "fp32");
    if (cfg->init_from) gt_result_param_str(res, "init_from", cfg->init_from);
    gt_result_param_str(res, "backend_detail", st->backend_desc);
    gt_result_param_int(res, "num_params", (long long)st->num_params);
    if (st->entropy >= 0) gt_result_param_num(res, "source_entropy", st->entropy);
    char digest[32];
    snprintf(digest, sizeof digest, "%016llx", (unsigned long long)st->params_digest);
    gt_result_param_str(res, "final_params_fnv1a64", digest);

    int n = st->steps_done;
    int skip = n > 1 ? 1 : 0;
    double *tps = malloc((size_t)(n > 0 ? n : 1) * sizeof *tps);
    if (tps) {
        for (int i = skip; i < n; i++)
            tps[i - skip] = (double)cfg->batch * cfg->seq_len / (st->ms[i] * 1e-3);
        gt_result_metric(res, "tokens_per_s", "tokens/s", 1, st->tokens_per_s, tps,
                         (size_t)(n - skip));
        free(tps);
    }
    gt_result_metric(res, "ms_per_step", "ms", 0, st->ms_per_step, st->ms + skip,
                     (size_t)(n - skip));
    gt_result_metric(res, "mfu", "fraction", 1, st->mfu, NULL, 0);
    gt_result_metric(res, "peak_sgemm", "GFLOP/s", 1, st->peak_gflops, NULL, 0);
    gt_result_metric(res, "data_wait_ms", "ms", 0, median(st->wait_ms + skip, n - skip),
                     st->wait_ms + skip, (size_t)(n - skip));
    if (st->comm_ms)
        gt_result_metric(res, "exposed_comm_ms", "ms", 0, st->exposed_comm_ms,
                         st->comm_ms + skip, (size_t)(n - skip));
    gt_result_param_int(res, "ranks", st->nranks);
    gt_result_param_int(res, "micro_batch", cfg->micro_batch);
    gt_result_param_int(res, "deterministic", cfg->deterministic);
    gt_result_param_int(res, "zero", cfg->zero);
    gt_result_metric(res, "final_loss", "nats/token", 0, n ? st->loss[n - 1] : NAN, NULL, 0);
    gt_result_metric(res, "peak_memory", "bytes", 0, (double)st->mem.peak_in_use, NULL, 0);
    gt_result_series(res, "loss", st->loss, (size_t)n);
    gt_result_series(res, "lr", st->lr, (size_t)n);
    gt_result_series(res, "grad_norm", st->grad_norm, (size_t)n);
    gt_result_series(res, "ms", st->ms, (size_t)n);
    gt_result_alloc_stats(res, "backend", &st->mem);
    int finite = n > 0;
    for (int i = 0; i < n; i++) finite &= isfinite(st->loss[i]) && isfinite(st->grad_norm[i]);
    gt_result_check(res, "finite_loss", finite, n ? st->loss[n - 1] : NAN, NAN,
                    "every step's loss and gradient norm is finite");
}
