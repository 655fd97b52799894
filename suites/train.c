/* The training loop: one process, one backend (data parallelism joins with
 * the communicator). */
#include "suites/train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backend.h"
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

gt_status gt_train_run(const gt_train_config *cfg, gt_train_stats *st) {
    memset(st, 0, sizeof *st);
    st->entropy = -1;
    if (cfg->steps < 1) return GT_ERR(GT_ERR_INVALID, "--steps must be >= 1, got %d", cfg->steps);
    if (cfg->batch < 1) return GT_ERR(GT_ERR_INVALID, "--batch must be >= 1, got %d", cfg->batch);
    if (cfg->seq_len < 1 || cfg->seq_len > cfg->model.max_seq_len)
        return GT_ERR(GT_ERR_INVALID,
                      "--seq %d is out of range: the model's max_seq_len is %d (raise it with "
                      "--max-seq or shorten --seq)",
                      cfg->seq_len, cfg->model.max_seq_len);
    GT_TRY(gt_gpt2_config_check(&cfg->model));
    GT_TRY(gt_adamw_config_check(&cfg->opt));

    size_t n = (size_t)cfg->steps;
    st->loss = calloc(n, sizeof(double));
    st->lr = calloc(n, sizeof(double));
    st->grad_norm = calloc(n, sizeof(double));
    st->ms = calloc(n, sizeof(double));
    st->wait_ms = calloc(n, sizeof(double));
    if (!st->loss || !st->lr || !st->grad_norm || !st->ms || !st->wait_ms)
        return GT_ERR(GT_ERR_OOM, "no host memory for %d steps of statistics", cfg->steps);

    gt_backend *be = NULL;
    gt_gpt2 *model = NULL;
    gt_loader *loader = NULL;
    gt_tokens tok;
    memset(&tok, 0, sizeof tok);
    gt_status s = GT_OK;

    gt_backend_config bc = {.threads = cfg->threads, .device = -1};
    if ((s = gt_backend_new(cfg->backend, &bc, &be)) != GT_OK) goto done;
    snprintf(st->backend_desc, sizeof st->backend_desc, "%s", be->describe(be));
    if ((s = load_data(cfg, &tok)) != GT_OK) goto done;
    st->entropy = tok.entropy;
    st->vocab = cfg->model.vocab_size;

    if ((s = gt_gpt2_new(be, &cfg->model, cfg->batch, cfg->seq_len, &model)) != GT_OK) goto done;
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
    st->num_params = gt_gpt2_num_params(model);
    st->flops_per_token = gt_gpt2_flops_per_token(model, cfg->seq_len);
    st->peak_gflops = cfg->peak_gflops;
    if (st->peak_gflops <= 0) {
        gt_peaks pk;
        if ((s = gt_env_measure_peaks(be, &pk)) != GT_OK) goto done;
        st->peak_gflops = pk.sgemm_gflops;
    }

    gt_loader_config lc = {.global_batch = cfg->batch,
                           .seq_len = cfg->seq_len,
                           .rank = 0,
                           .nranks = 1,
                           .order = cfg->data_order,
                           .seed = cfg->seed,
                           .start_step = 0,
                           .prefetch = cfg->prefetch};
    if ((s = gt_loader_new(&tok, &lc, &loader)) != GT_OK) goto done;

    int B = cfg->batch, T = cfg->seq_len;
    float dloss = 1.0f / (float)(B * T);
    for (int step = 0; step < cfg->steps; step++) {
        uint64_t t0 = gt_now_ns(), wait = 0;
        const int32_t *inputs, *targets;
        if ((s = gt_loader_next(loader, &inputs, &targets, &wait)) != GT_OK) goto done;
        float loss = 0, lr = 0;
        double norm = 0;
        if ((s = gt_gpt2_zero_grad(model)) != GT_OK) goto done;
        if ((s = gt_gpt2_forward_backward(model, inputs, targets, B, T, dloss, &loss)) != GT_OK)
            goto done;
        if (!isfinite(loss)) {
            s = GT_ERR(GT_ERR_INVALID, "loss is %g at step %d: training diverged", loss,
                       step + 1);
            goto done;
        }
        if ((s = gt_gpt2_update(model, &cfg->opt, step + 1, &norm, &lr)) != GT_OK) goto done;
        if ((s = be->synchronize(be)) != GT_OK) goto done;
        double ms = (double)(gt_now_ns() - t0) * 1e-6;
        st->loss[step] = loss;
        st->lr[step] = lr;
        st->grad_norm[step] = norm;
        st->ms[step] = ms;
        st->wait_ms[step] = (double)wait * 1e-6;
        st->steps_done = step + 1;
        double tps = (double)B * T / (ms * 1e-3);
        double mfu = tps * st->flops_per_token / (st->peak_gflops * 1e9);
        if (cfg->on_step) cfg->on_step(cfg->on_step_ctx, step + 1, cfg->steps, loss, lr, norm, ms,
                                       tps, mfu);
    }
    /* the first step pays for first-touch page faults and cache warm-up */
    int skip = st->steps_done > 1 ? 1 : 0;
    st->ms_per_step = median(st->ms + skip, st->steps_done - skip);
    st->tokens_per_s = (double)B * T / (st->ms_per_step * 1e-3);
    st->mfu = st->tokens_per_s * st->flops_per_token / (st->peak_gflops * 1e9);
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
    gt_loader_free(loader);
    gt_gpt2_free(model);
    gt_tokens_release(&tok);
    gt_backend_free(be);
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
